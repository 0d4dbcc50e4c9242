"""Dense GEMM on weight rows TMA cannot address, for few tokens: y = epilogue(x @ w.T), w read where it lies.

Where K * element bytes is not a multiple of 16, w's rows start off 16-byte boundaries and neither TMA nor a
vectorised pointer load can read them as rows (kernels/triton/pad.py). At many tokens a copy of w to padded rows
pays for itself; at a few, the copy (one more read and write of w) is most of the call. This kernel reads w once,
in 16-byte vectors, from where it lies:

  The rows of one residue class r = n mod VEC (VEC = 16 // element bytes) all start s_r = (r * stride_wn) mod VEC
  elements past a 16-byte boundary (n * stride_wn mod VEC depends on n mod VEC only). One program takes BLOCK_N
  rows of one class and reads each from the boundary s_r elements before its start: column j of chunk c is
  k = c * BLOCK_K + j - s_r in every row of the program, so one x tile (shifted by s_r) serves them all, and the
  tile goes through tl.dot like any other.

    w (N, K) row-major, rows r, r + VEC, r + 2 VEC, ... of one class (BLOCK_N of them a program)
      flat: ..prev row|<- s_r ->|row n: K elements .......................|next row..
                      ^ 16-byte boundary: chunk 0 starts here (C = cdiv(K + s_r, BLOCK_K) chunks a row)
      chunks 1 .. C-2: whole 16-byte vectors, no mask (they start and end inside the row)
      chunks 0 and C-1: masked to 0 <= k < K (the previous row's tail; the row's end, and w's for the last row)
    x tile: x[m, c * BLOCK_K + j - s_r], masked to 0 <= k < K (a few rows: scalar loads)
    acc[BLOCK_M, BLOCK_N] = sum over chunks (mma_step) -> epilogue (scales, bias, activation) -> y[m, n]
                                                             (y's columns n of one program are VEC apart)
  8-bit operands (gemm_a8w8's fp8 / int8 with K % 16 != 0): VEC = 16 classes, 512-element chunks; x_scale[m] *
  w_scale[n] (SCALE "rowcol") in the epilogue (on each split's partial sum: the scales are linear in it), int32
  accumulation for int8.

Work ids: (split, M tile, row block, class), the class fastest (neighbouring programs read neighbouring rows).
Split-K (SPLIT_K > 1): split s takes the chunks `split_k_range` gives it and stores its fp32 partial tile to
part[s]; `_splitk_reduce.py` adds the splits in order, then bias and activation (bitwise reproducible). The gated
GEMM takes the partials (`partials`: the unsplit product into part[0] too) and reduces them with its own kernel,
which applies act(g) * u (kernels/triton/gated.launch_rows).

Targets: sm_90, where TMA cannot address such rows (ops/dispatch._rows_kernel), and gfx942 / gfx950, where the
pointer kernel reads rows whose stride is not a multiple of 16 elements element by element (ops/dispatch._vector_rows:
w's chunks here compile to global_load_dwordx4 there, `gemmkit isa`; not timed on an AMD GPU).

Constraints:
  - w unit stride along K and a 16-byte aligned base (the host checks: dispatch runs the copy otherwise);
    x any strides; y any strides; bias contiguous (N,).
  - x and w of one dtype: 16-bit (bf16 / fp16) without scales, or 8-bit (fp8 / int8) with per-token x per-channel
    scales (SCALE "rowcol": contiguous fp32 (M,) and (N,)); no block scales (a chunk starts s_r columns before a
    128-column scale block: block-scaled calls with such K take the copy, ops/dispatch.py).
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16, BLOCK_K a multiple of VEC; M, N, K >= 1, < 2**31;
    int64 row offsets (N * stride_wn may pass 2**31), int32 columns.
  - SPLIT_K > 1 needs part: a contiguous fp32 (SPLIT_K, M, N) buffer; y is then untouched.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ... import launcher as L
from .. import _host as H
from ._epilogue import apply_scales, epilogue, store_tile
from ._mainloop import mma_step
from ._schedule import split_k_range

PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "no local-memory traffic", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"},
    # the point of the kernel: w's chunks arrive in 16-byte cp.async copies (a 2-byte one per element otherwise)
    {"promise": "w read in 16-byte cp.async copies", "arch": "sm_90", "check": "counts['LDGSTS128'] > 0"},
    # on AMD (ops/dispatch._vector_rows) the same, 16-byte loads (x's shifted rows, the masked chunks: by element),
    # into registers or (gfx950, Triton >= 3.8) straight into LDS
    {"promise": "w read in 16-byte loads", "arch": "amd",
     "check": "counts['global_load_dwordx4'] + counts['global_load_lds_dwordx4'] > 0"},
)

WARPS, STAGES = 4, 4
BLOCK_N = 32  # weight rows a program (of one residue class)
CHUNK_BYTES = 512  # bytes of a row one K step reads (BLOCK_K elements)
PROGRAMS_PER_SM = 2  # the K split's goal
# The most tokens it takes: at 32 the copy and the TMA kernel won (A/B). On sm_90 the op serves M = 1 here and
# M = 2-16 where gemm_rows_tma declines the call (ops/dispatch.ROWS_TMA_MIN_M: that kernel ran faster from M = 2)
MAX_M = 16


@triton.jit
def _masked_chunk(acc, c, s, K, x_rows, w_ptr, w_rows, mask_x, mask_w, stride_xk,
                  BLOCK_K: tl.constexpr, SCALE: tl.constexpr, PROMOTE_K: tl.constexpr):
    """acc + chunk c's product, its columns masked to 0 <= k < K (no byte of another row, nor past w, is read)."""
    cols = tl.arange(0, BLOCK_K)
    k = c * BLOCK_K + cols - s  # K < 2**31: int32 columns; the row offsets (w_rows, x_rows) are int64
    inside = ((k >= 0) & (k < K))[None, :]
    a = tl.load(x_rows + k[None, :] * stride_xk, mask=inside, other=0.0)
    b = tl.load(w_ptr + w_rows[:, None] + (k + s)[None, :], mask=inside, other=0.0)
    return mma_step(acc, a, b, 0, x_rows, x_rows, mask_x, mask_w, 0, 0, SCALE, 1, PROMOTE_K)


@triton.jit
def gemm_rows_kernel(x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, part_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wn, stride_ym, stride_yn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, VEC: tl.constexpr,
                     HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr,
                     SCALE: tl.constexpr, ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr):
    work = tl.program_id(0)
    r = work % VEC  # the class: rows n = r + VEC * i
    work //= VEC
    class_rows = tl.cdiv(N, VEC)  # rows of class 0 (the others have as many or one fewer)
    blocks = tl.cdiv(class_rows, BLOCK_N)
    block = work % blocks
    work //= blocks
    m_tiles = tl.cdiv(M, BLOCK_M)
    pid_m = work % m_tiles
    split = work // m_tiles
    if r < N:  # N < VEC leaves classes without rows
        s = (r * stride_wn) % VEC  # elements from the 16-byte boundary before each row's start
        chunks = tl.cdiv(K + s, BLOCK_K)
        c_first, c_steps = split_k_range(split, chunks, SPLIT_K)

        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = r + VEC * (block * BLOCK_N + tl.arange(0, BLOCK_N))
        rows_x = offs_m % M
        rows_w = tl.where(offs_n < N, offs_n, r)  # past N: re-read row r (same class, in bounds); store masks them
        # each row's chunk 0 starts on a 16-byte boundary: s elements before the row
        w_rows = tl.multiple_of(rows_w.to(tl.int64) * stride_wn - s, VEC)
        x_rows = x_ptr + rows_x.to(tl.int64)[:, None] * stride_xm
        cols = tl.arange(0, BLOCK_K)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
        c_end = c_first + c_steps
        # chunks 1 .. C-2 end inside every row and start after its first element: whole vectors, no mask
        for c in range(tl.maximum(c_first, 1), tl.minimum(c_end, chunks - 1)):
            k = c * BLOCK_K + cols - s
            a = tl.load(x_rows + k[None, :] * stride_xk)
            b = tl.load(w_ptr + w_rows[:, None] + (c * BLOCK_K + cols)[None, :])
            acc = mma_step(acc, a, b, 0, x_rows, x_rows, rows_x < M, rows_w < N, 0, 0, SCALE, 1, PROMOTE_K)
        # chunk 0 (its first s columns are the previous row's tail) and chunk C-1 (its last columns pass the
        # row, and w's end for the last row): masked to 0 <= k < K, where this split holds them
        if (c_steps > 0) & (c_first == 0):
            acc = _masked_chunk(acc, 0, s, K, x_rows, w_ptr, w_rows, rows_x < M, rows_w < N, stride_xk,
                                BLOCK_K, SCALE, PROMOTE_K)
        if (c_steps > 0) & (c_end == chunks) & (chunks > 1):
            acc = _masked_chunk(acc, chunks - 1, s, K, x_rows, w_ptr, w_rows, rows_x < M, rows_w < N,
                                stride_xk, BLOCK_K, SCALE, PROMOTE_K)

        if SPLIT_K == 1:
            out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
            store_tile(y_ptr, out, offs_m, offs_n, M, N, stride_ym, stride_yn, True)
        else:  # scaled fp32 partial sum; _splitk_reduce.py adds the splits in order, then bias and activation
            part = apply_scales(acc, xs_ptr, wsc_ptr, offs_m, offs_n, M, N, SCALE)
            store_tile(part_ptr + split.to(tl.int64) * M * N, part, offs_m, offs_n, M, N, N, 1, True)


def vec(element_size: int) -> int:
    """Elements in 16 bytes: the residue classes of rows, and the vector a load moves."""
    return H.TMA_ALIGN // element_size


def tile(M: int, N: int, K: int, element_size: int, num_cus: int) -> dict:
    """(BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K) of a call: the tokens in one M tile (up to MAX_M), 32 rows a program,
    512-byte row chunks; K split until the programs reach two an SM (the weight stream needs many loads in flight:
    one program holds STAGES chunks), each split keeping at least 4 chunks."""
    bm = min(MAX_M, max(16, triton.next_power_of_2(M)))
    bn = BLOCK_N
    bk = CHUNK_BYTES // element_size
    v = vec(element_size)
    programs = v * H.cdiv(H.cdiv(N, v), bn) * H.cdiv(M, bm)
    chunks = H.cdiv(K + v - 1, bk)
    split = max(1, min(H.cdiv(PROGRAMS_PER_SM * num_cus, programs), chunks // 4))
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT_K=split)


def unsupported(x2, w, scaling=None) -> str | None:
    """Why this kernel cannot take the call (None: it can); `scaling` a dense.Scaling (None: no scales)."""
    mode = "none" if scaling is None else scaling.mode
    if w.stride(1) != 1:
        return "w's rows are not contiguous along K"
    if w.data_ptr() % H.TMA_ALIGN:
        return "w's base is not 16-byte aligned"
    if x2.shape[0] > MAX_M:
        return f"M = {x2.shape[0]} > {MAX_M}"
    if x2.dtype != w.dtype or mode != ("none" if w.element_size() == 2 else "rowcol"):
        return f"{x2.dtype} x {w.dtype} with {mode} scales (16-bit without scales, 8-bit with rowcol scales)"
    return None


def launch(x2, w, bias, y, activation, target, compile_only=False, scaling=None):
    """y = act(scales * (x2 @ w.T) + bias) (x2 (M, K), w (N, K), y (M, N) 2-D views; `scaling` a dense.Scaling, None
    or "none" for 16-bit operands, "rowcol" for 8-bit ones), then the split-K reduce where the tile splits K."""
    from . import dense as G

    M, K = x2.shape
    N = w.shape[0]
    t = tile(M, N, K, w.element_size(), target.num_cus)
    split = t["SPLIT_K"]
    part = torch.empty((split, M, N), dtype=torch.float32, device=x2.device) if split > 1 else y
    launch_tile(x2, w, bias, y, part, activation, t, compile_only, scaling)
    if split > 1:
        G.launch_reduce(part, M * N, split, bias, y, activation, target, compile_only)


def partials(x2, w, target, compile_only=False) -> torch.Tensor:
    """x2 @ w.T as fp32 partial sums (SPLIT_K, M, N) of `tile`'s K split, not yet added (SPLIT_K 1: the product):
    for a caller with its own reduce (the gated GEMM's, which applies its activation to the sum:
    kernels/triton/gated.launch_rows)."""
    M, K = x2.shape
    N = w.shape[0]
    t = tile(M, N, K, w.element_size(), target.num_cus)
    part = torch.empty((t["SPLIT_K"], M, N), dtype=torch.float32, device=x2.device)
    launch_tile(x2, w, None, part[0], part, "none", t, compile_only)
    return part


def launch_tile(x2, w, bias, y, part, activation, t: dict, compile_only=False, scaling=None):
    """gemm_rows_kernel with tile `t`: y = act(scales * (x2 @ w.T) + bias) where t splits no K, else the scaled fp32
    partials in `part` (SPLIT_K, M, N)."""
    M, K = x2.shape
    N = w.shape[0]
    v = vec(w.element_size())
    scale = "none" if scaling is None else scaling.mode
    xs, wsc = (scaling.x_scale, scaling.w_scale) if scale == "rowcol" else (y, y)  # never read at SCALE "none"
    grid = (v * H.cdiv(H.cdiv(N, v), t["BLOCK_N"]) * H.cdiv(M, t["BLOCK_M"]) * t["SPLIT_K"],)
    L.launcher(gemm_rows_kernel, grid, compile_only)(
        x2, w, xs, wsc, bias if bias is not None else y, y, part, M, N, K, x2.stride(0), x2.stride(1), w.stride(0),
        y.stride(0), y.stride(1), **constexprs(t, v, bias is not None, activation, x2.dtype, scale),
        num_warps=WARPS, num_stages=STAGES)


def constexprs(t: dict, v: int, has_bias: bool, activation: str, in_dtype=torch.bfloat16, scale: str = "none") -> dict:
    return dict(BLOCK_M=t["BLOCK_M"], BLOCK_N=t["BLOCK_N"], BLOCK_K=t["BLOCK_K"], VEC=v, HAS_BIAS=has_bias,
                ACTIVATION=activation, SPLIT_K=t["SPLIT_K"], SCALE=scale, ACC_INT=in_dtype == torch.int8,
                # fp8 on sm_90: the partial sums promoted to fp32 every 128 K (kernels/triton/_mainloop.py)
                PROMOTE_K=min(t["BLOCK_K"], 128) if in_dtype in H.FP8_DTYPES else 0)


def static_spec(dtype: str = "bf16", block_m: int = 16, split_k: int = 2, activation: str = "none"):
    """(kernel, signature, constexprs, divisible, options) as `launch` compiles it for a `dtype` call (bf16 / fp16
    without scales, fp8e4nv / fp8e4b8 / i8 with rowcol scales; M up to block_m) with w's base and y 16-byte aligned,
    x's rows contiguous (`gemmkit isa`)."""
    eight = dtype in ("fp8e4nv", "fp8e4b8", "i8")
    v = vec(1 if eight else 2)
    in_dtype = {"fp8e4nv": torch.float8_e4m3fn, "fp8e4b8": torch.float8_e4m3fnuz, "i8": torch.int8}.get(
        dtype, torch.bfloat16)
    t = dict(BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_K=CHUNK_BYTES // (1 if eight else 2), SPLIT_K=split_k)
    ce = dict(constexprs(t, v, False, activation, in_dtype, "rowcol" if eight else "none"), stride_xk=1,
              stride_yn=1)  # the contiguous case Triton specialises
    y = "bf16" if eight else dtype
    scale = "fp32" if eight else dtype
    sig = {"x_ptr": f"*{dtype}", "w_ptr": f"*{dtype}", "xs_ptr": f"*{scale}", "wsc_ptr": f"*{scale}",
           "bias_ptr": f"*{y}", "y_ptr": f"*{y}", "part_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_xm": "i32", "stride_xk": "constexpr", "stride_wn": "i32", "stride_ym": "i32",
           "stride_yn": "constexpr"}
    sig.update({k: "constexpr" for k in ce if k not in sig})
    # the bases 16-byte aligned, y's rows too; x's and w's rows not (K * element bytes % 16 != 0: why this runs)
    divisible = [k for k, t_ in sig.items() if t_.startswith("*")] + ["stride_ym"]
    return gemm_rows_kernel, sig, ce, divisible, {"num_warps": WARPS, "num_stages": STAGES}
