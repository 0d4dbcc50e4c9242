"""Dense GEMM on weight rows TMA cannot address, by TMA: y = epilogue(scales * (x @ w.T)), w read where it lies.

Where K * element bytes is not a multiple of 16, w's rows start off 16-byte boundaries and no TMA descriptor over
(N, K) is legal (its row stride must be a 16-byte multiple). The other ways: a copy of w to padded rows
(kernels/triton/pad.py), one more read and write of the weights, most of the call at M = 2-256; gemm_rows.py's
16-byte pointer loads (a few tokens; slower than this kernel from M = 2). This kernel reads w once, by TMA, from
where it lies:

  Rows n = VEC j + r (VEC = 16 // element bytes: 8 for bf16, 16 for fp8 / int8; r = n mod VEC) are row r of "octet"
  j (VEC rows; named for the 16-bit case): an octet's VEC rows lie one after another, P elements apart (P: w's row
  stride), and octets start VEC P elements apart, a 16-byte multiple.
  So one descriptor over w's storage as (N / VEC octets, (VEC - 1) P + K elements), strides (VEC P, 1), is legal.
  A box's first column must also sit on 16 bytes, so row r is read from a_r = r P - s_r, the boundary s_r =
  (r P) mod VEC elements before its start (as gemm_rows.py, the few-token kernel of the same classes, reads it by
  pointer). A program takes BLOCK_J rows of one class r (octets j0 ..), one box [BLOCK_J, BLOCK_K] a K step.

    w storage, octet j:  |row VEC j: K|..|row VEC j + 1: K|..| ... |row VEC j + VEC - 1: K|   (.. : P - K unused)
                          ^ 16-byte aligned (j VEC P elements in)
    descriptor (N / VEC, (VEC - 1) P + K), strides (VEC P, 1); chunk c of class r: box at (j0, a_r + c BLOCK_K),
      its column i = element c BLOCK_K + i - s_r of each row; C_r = cdiv(K + s_r, BLOCK_K) chunks
    x: the host's shifted copies (pad.shift_rows): class r's rows r RP + m hold x[m, i - s_r] (zeros outside
      0 .. K - 1), so the x box at (r RP + m0, c BLOCK_K) lines up with w's chunk c; RP: M to whole BLOCK_M tiles,
      rows M .. RP - 1 unwritten (each feeds only its own output row, which the stores drop)
    chunks 1 .. C_r - 2: TMA boxes straight into wgmma (every column inside the row)
    chunks 0 and C_r - 1: w's columns outside the row (the previous row's tail, the next row's head) zeroed in
      registers first (x is zero there, but 0 x inf would not be)
    acc = x_tile @ w_tile.T  ([BLOCK_M, BLOCK_J]), or w_tile @ x_tile.T at SWAP (a few tokens: the weight rows fill
      wgmma's 64-row side, the tokens its N); past SWAP_MAX_M tokens 64 / 128 x 128, or 128 x WIDE_J on a long w
      CLASS_MAJOR (past Y_ORDER_MAX_M tokens; GATED) -> fp32 part[split, m, r N / VEC + j0 + i]: a program's
      columns together
        -> rows_reduce_kernel: [BLOCK_M, VEC, BLOCK_J] blocks (`reduce_block`: REDUCE_PROGRAMS an SM) summed over
           the splits, permuted in registers to [BLOCK_M, BLOCK_J VEC] (column VEC j + r) -> bias, activation -> y,
           stored in order
        -> GATED (w's rows [gate | up], kernels/triton/gated.launch_rows): u's octet j sits I / VEC octets after
           g's in the same class run; both summed and permuted -> act(g) * u -> h (M, I)
      else (a few tokens; `partials`: the caller's reduce) -> y[m, VEC (j0 + i) + r] or part[split] in y's
        order: columns VEC apart, one 32-byte sector an element
    8-bit operands (gemm_a8w8's fp8 / int8, SCALE "rowcol"): the same with 16 classes and 128-element box rows,
      int32 sums for int8, fp8's promoted every box (PROMOTE_K); x_scale[m] * w_scale[n] on each partial before it
      is stored (linear in it: the reduces are unchanged) or in the y-order epilogue

Work ids: (split, octet block, class, M tile), the M tile fastest (the M tiles of a weight block read its boxes
together: with the M tile slowest each M tile streamed all of w from DRAM again, H100 256 x 28672 x 8191: 2.1 TB/s
of DRAM traffic, 523 us), then the class (neighbouring programs read neighbouring rows).
Split-K (SPLIT_K > 1): split s takes the chunks `split_k_range` gives it; rows_reduce_kernel (class-major) or
`_splitk_reduce.py` adds the partials in order, then bias and activation (bitwise reproducible).

Constraints:
  - sm_90 (TMA, wgmma). x and w of one dtype: 16-bit without scales, or 8-bit (fp8 / int8) with per-token x
    per-channel scales (contiguous fp32 (M,) and (N,)); block-scaled calls take the copy (ops/dispatch.py). No
    128 x WIDE_J tile at 8 bits (fp8's spills: its promotion's second accumulator). The gated form: 16-bit.
  - w unit stride along K, 16-byte aligned base, N % VEC == 0 (whole octets: the descriptor's last octet must not
    pass w's end), K >= BLOCK_K; the host checks (`unsupported`); ops/dispatch.py runs the copy otherwise.
  - x: pad.shift_rows' copies (VEC RP, KS), KS = `shifted_k` (every class's chunks), RP a multiple of BLOCK_M.
  - y any strides, bias contiguous (N,); CLASS_MAJOR or SPLIT_K > 1 needs part: a contiguous fp32 (SPLIT_K, M, N)
    buffer. GATED: class-major, no bias, I = N / 2 a multiple of VEC (`gated_takes`).
  - BLOCK_M, BLOCK_J powers of two >= 16 (BLOCK_J >= 64 at SWAP: wgmma's rows; <= 256: a TMA box's rows),
    BLOCK_K = `block_k` (BOX_BYTES = 128-byte box rows); the 128 x 256 tile spills (~350 bytes, Triton 3.6) where
    Triton cannot see N / VEC a multiple of 16 (N % 128 != 0; `gemmkit isa` compiles the common N % 128 == 0: none);
    TMA coordinates int32: N / VEC and (VEC - 1) P + K < 2**31; int64 row offsets in the stores.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ... import launcher as L
from .. import _host as H
from ._epilogue import activation, apply_scales, epilogue, store_tile
from ._schedule import split_k_range

PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
    # the point of the kernel: w's boxes arrive by TMA where they lie, into wgmma
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "wgmma (HGMMA 16-bit / QGMMA fp8 / IGMMA int8)",
     "check": "counts['HGMMA'] + counts['QGMMA'] + counts['IGMMA'] > 0"},
)

BOX_BYTES = 128  # a box row: BLOCK_K = 64 16-bit or 128 8-bit elements (`block_k`)
SWAP_MAX_M = 64  # at most this many tokens: the swapped tile (weight rows on wgmma's 64-row side)
PROGRAMS_PER_SM = 1  # the K split's goal: at 2 every shape timed ran slower (H100, results/h100/rows_tma.json:
# the fp32 partials are written 8 columns apart, one 32-byte sector an element; 64 x 4096 x 4095 46.6 -> 37.4 us)
MIN_STEPS = 4  # K steps a split keeps at least
STAGES = 4
# The partials class-major (a program's columns together, rows_reduce_kernel puts them in order) at any split, in
# place of y's and the partials' stores 8 columns apart (one 32-byte sector an element): H100, same process
# (results/h100/rows_tma.json, rows_tma_short_k.json, 32 shapes), faster on all but M = 1 (-4%): 64 x 4096 x 4095
# 37.3 -> 26.0 us, 256 x 28672 x 8191 462 -> 338, 100 x 8192 x 3071 67.7 -> 40.8. False: y's order, for a caller
# with its own reduce (`partials`).
CLASS_MAJOR = True
# At most Y_ORDER_MAX_M tokens (gemm_rows' few, which this kernel serves from ops/dispatch.ROWS_TMA_MIN_M) the
# partials stay in y's order: there a program stores a few rows, and the reduce's one round of latency is the larger
# cost. H200, same process (results/h200/ab/rows_reduce_block.json, the reduce as `reduce_block` sizes it): class-major
# 2-6% slower at M = 2 (2 x 4096 x 4095 16.4 -> 17.5 us) and on 14336-row weights at M = 8, 2-4% faster on the other
# M = 8 rows, 4-14% at M = 16 (16 x 1536 x 7001 17.5 -> 16.0, 16 x 7168 x 1535 16.3 -> 14.4). Past it class-major
# (before the reduce was sized, 17 x 4096 x 4095 23.8 -> 23.1, 32 x 4096 x 4095 28.3 -> 23.5 us: results/h100/
# rows_tma.json). The gated launch is class-major at any M (its reduce).
Y_ORDER_MAX_M = 8
# Past SWAP_MAX_M tokens, 128 x 256 tiles where they still make WIDE_PROGRAMS of the SMs' programs: each program
# reads x's and w's rows once for twice the columns (L2 to SM traffic (1 / BM + 1 / BJ) a product: 128 x 128 had the
# L2 75% busy at 1.9 TB/s of DRAM, H100 200 x 12288 x 6143). H100, results/h100/rows_tma_unswapped.json (22 shapes,
# 8 held out, the rule right on all): 256 x 28672 x 8191 341 -> 290 us, 96 x 28672 x 8191 259 -> 231, 200 x 12288 x
# 6143 133 -> 127 (96 programs); slower with fewer (128 x 14336 x 4095, 56 programs: 74 -> 88; 256 x 5000 x 7001, 48:
# 92 -> 96).
WIDE_J, WIDE_PROGRAMS = 256, 0.7
REDUCE_M, REDUCE_J, REDUCE_WARPS = 16, 32, 4  # rows_reduce_kernel's largest block: 16 rows x 32 octets (256 columns)
# The reduce's block shrinks (`reduce_block`) until its programs reach REDUCE_PROGRAMS an SM, down to REDUCE_MIN_J
# octets (8 fp32 of a class run: one 32-byte sector) and one row; its loop over the splits unrolled (every split's load
# in flight at once). H200, same process (results/h200/ab/rows_reduce_block.json, 27 shapes, class-major partials):
# the fixed 16 x 32 block left 16 x 4096 with 16 programs, each a load round a split; unrolled 56 x 1536 x 7001 (6
# splits) 25.2 -> 20.5 us, sized too 19.1; 17 x 4096 x 4095 19.9 -> 18.7, 48 x 2048 x 12285 37.9 -> 32.7; where the
# 16 x 32 block already made 2 programs an SM (M >= 128 on a long w) within 0.3%. 1 or 2 programs an SM alike.
REDUCE_MIN_J, REDUCE_PROGRAMS = 8, 2


@triton.jit
def _chunk(acc, x_desc, w_desc, xr, j0, a_r, c, s, K, EDGE: tl.constexpr, BLOCK_K: tl.constexpr, SWAP: tl.constexpr,
           PROMOTE_K: tl.constexpr):
    """acc + chunk c's product; EDGE: w's columns outside the row zeroed first. PROMOTE_K: fp8's wgmma sums promoted
    to fp32 every PROMOTE_K products (kernels/triton/_mainloop.py; 0 otherwise)."""
    a = x_desc.load([xr, c * BLOCK_K])
    b = w_desc.load([j0, a_r + c * BLOCK_K])
    if EDGE:
        k = c * BLOCK_K + tl.arange(0, BLOCK_K) - s
        b = tl.where(((k >= 0) & (k < K))[None, :], b, tl.zeros_like(b))
    if SWAP:
        acc = tl.dot(b, a.T, acc, max_num_imprecise_acc=PROMOTE_K, out_dtype=acc.dtype)
    else:
        acc = tl.dot(a, b.T, acc, max_num_imprecise_acc=PROMOTE_K, out_dtype=acc.dtype)
    return acc


@triton.jit
def gemm_rows_tma_kernel(x_desc, w_desc, xs_ptr, ws_ptr, bias_ptr, y_ptr, part_ptr, M, N, NJ, K, RP, pitch_w,
                         stride_ym, stride_yn,
                         BLOCK_M: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_K: tl.constexpr, VEC: tl.constexpr,
                         SWAP: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                         SPLIT_K: tl.constexpr, CLASS_MAJOR: tl.constexpr, SCALE: tl.constexpr,
                         ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr):
    work = tl.program_id(0)
    m_tiles = tl.cdiv(M, BLOCK_M)
    pid_m = work % m_tiles  # fastest: the M tiles of one weight block run together and share its boxes in the L2
    work //= m_tiles
    r = work % VEC  # the class: rows n = VEC j + r
    work //= VEC
    blocks = tl.cdiv(NJ, BLOCK_J)  # NJ = N / VEC octets (an argument: its divisibility reaches the stores)
    block = work % blocks
    split = work // blocks
    s = (r * pitch_w) % VEC  # elements from the 16-byte boundary before each row of the class to its start
    a_r = r * pitch_w - s  # (int32: the host checks (VEC - 1) P + K < 2**31)
    chunks = tl.cdiv(K + s, BLOCK_K)
    c_first, c_count = split_k_range(split, chunks, SPLIT_K)
    c_end = c_first + c_count
    m0 = pid_m * BLOCK_M
    xr = r * RP + m0  # class r's shifted copy of x
    j0 = block * BLOCK_J
    ACC: tl.constexpr = tl.int32 if ACC_INT else tl.float32
    if SWAP:
        acc = tl.zeros((BLOCK_J, BLOCK_M), dtype=ACC)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_J), dtype=ACC)
    # chunks 1 .. C - 2: inside every row
    for c in range(tl.maximum(c_first, 1), tl.minimum(c_end, chunks - 1)):
        acc = _chunk(acc, x_desc, w_desc, xr, j0, a_r, c, s, K, False, BLOCK_K, SWAP, PROMOTE_K)
    # chunk 0 and C - 1 (C >= 2: K >= BLOCK_K), where this split holds them
    if (c_count > 0) & (c_first == 0):
        acc = _chunk(acc, x_desc, w_desc, xr, j0, a_r, 0, s, K, True, BLOCK_K, SWAP, PROMOTE_K)
    if (c_count > 0) & (c_end == chunks):
        acc = _chunk(acc, x_desc, w_desc, xr, j0, a_r, chunks - 1, s, K, True, BLOCK_K, SWAP, PROMOTE_K)
    if SWAP:
        acc = acc.T
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n = r + VEC * (j0 + tl.arange(0, BLOCK_J))
    if CLASS_MAJOR:  # fp32 partials (scaled: linear in them), class r's columns together (coalesced);
        # rows_reduce_kernel puts them in order
        offs_j = j0 + tl.arange(0, BLOCK_J)
        part = apply_scales(acc, xs_ptr, ws_ptr, offs_m, offs_n, M, N, SCALE)
        store_tile(part_ptr + split.to(tl.int64) * M * N, part, offs_m, r * NJ + offs_j, M, N, N, 1, True,
                   own=(offs_j < NJ)[None, :])
    elif SPLIT_K == 1:
        out = epilogue(acc, xs_ptr, ws_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
        store_tile(y_ptr, out, offs_m, offs_n, M, N, stride_ym, stride_yn, True)
    else:  # scaled fp32 partial sum; _splitk_reduce.py adds the splits in order, then bias and activation
        part = apply_scales(acc, xs_ptr, ws_ptr, offs_m, offs_n, M, N, SCALE)
        store_tile(part_ptr + split.to(tl.int64) * M * N, part, offs_m, offs_n, M, N, N, 1, True)


@triton.jit
def rows_reduce_kernel(part_ptr, bias_ptr, y_ptr, M, N, NJ, stride_ym, stride_yn, SPLIT_K: tl.constexpr,
                       VEC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_J: tl.constexpr, HAS_BIAS: tl.constexpr,
                       ACTIVATION: tl.constexpr, GATED: tl.constexpr = False):
    """y = act(sum of the class-major partials + bias): a [BLOCK_M, VEC, BLOCK_J] block (VEC runs of BLOCK_J
    columns, one a class, read in order) summed over the splits, turned to [BLOCK_M, BLOCK_J VEC] (column VEC j + r)
    in registers, stored in order. GATED: w's N rows are [gate | up] (N / 2 = I, I % VEC == 0, no bias): y (M, I) =
    act(g) * u, u's octet j is g's octet I / VEC + j, in the same class."""
    pid_m = tl.program_id(0)
    pid_j = tl.program_id(1)
    NY = N // 2 if GATED else N  # y's columns
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_j = pid_j * BLOCK_J + tl.arange(0, BLOCK_J)
    offs_r = tl.arange(0, VEC)
    NJY = NJ // 2 if GATED else NJ  # y's octets (NJ = N / VEC: a class's run of the partials' row)
    cols = (offs_r[None, :, None] * NJ + offs_j[None, None, :])
    mask = (offs_m < M)[:, None, None] & (offs_j < NJY)[None, None, :] & (offs_r < VEC)[None, :, None]
    acc = tl.zeros((BLOCK_M, VEC, BLOCK_J), dtype=tl.float32)
    up = tl.zeros((BLOCK_M, VEC, BLOCK_J), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):  # in split order: bitwise reproducible; unrolled, every split's load in flight
        rows = offs_m.to(tl.int64) + s * M  # row s M + m of the (SPLIT_K M, N) partials
        acc += tl.load(part_ptr + rows[:, None, None] * N + cols, mask=mask, other=0.0)
        if GATED:
            up += tl.load(part_ptr + rows[:, None, None] * N + cols + NJY, mask=mask, other=0.0)
    acc = tl.reshape(tl.permute(acc, (0, 2, 1)), (BLOCK_M, BLOCK_J * VEC))
    offs_n = pid_j * BLOCK_J * VEC + tl.arange(0, BLOCK_J * VEC)
    if GATED:
        out = activation(acc, ACTIVATION) * tl.reshape(tl.permute(up, (0, 2, 1)), (BLOCK_M, BLOCK_J * VEC))
    else:
        out = epilogue(acc, y_ptr, y_ptr, bias_ptr, offs_m, offs_n, M, N, "none", HAS_BIAS, ACTIVATION)
    store_tile(y_ptr, out, offs_m, offs_n, M, NY, stride_ym, stride_yn, True)


def vec(element_size: int) -> int:
    """Rows in an octet: elements in 16 bytes (the descriptor's row stride VEC P elements is then 16-byte whole)."""
    return H.TMA_ALIGN // element_size


def block_k(element_size: int) -> int:
    """A K step: one BOX_BYTES box row of elements."""
    return BOX_BYTES // element_size


def tile(M: int, N: int, K: int, element_size: int, num_cus: int) -> dict:
    """The launch of a call: at M <= SWAP_MAX_M the swapped tile (64 weight rows x the tokens, 16-64), else 64 or 128
    tokens x 128 weight rows, or (16-bit) 128 x WIDE_J where that tile's programs reach WIDE_PROGRAMS of the SMs; K
    split until the programs reach PROGRAMS_PER_SM an SM, each split keeping at least MIN_STEPS chunks of a box row
    (`block_k`)."""
    swap = M <= SWAP_MAX_M
    v = vec(element_size)
    bm = max(16, triton.next_power_of_2(M)) if swap else (64 if M <= 128 else 128)
    bj = 64 if swap else 128
    # (16-bit only: fp8's 128 x WIDE_J spills, 40 bytes under Triton 3.6: the promotion's second accumulator)
    wide = element_size == 2 and not swap and v * H.cdiv(N // v, WIDE_J) * H.cdiv(M, 128) >= WIDE_PROGRAMS * num_cus
    if wide:
        bm, bj = 128, WIDE_J
    programs = v * H.cdiv(N // v, bj) * H.cdiv(M, bm)
    bk = block_k(element_size)
    chunks = H.cdiv(K, bk)
    split = max(1, min(H.cdiv(PROGRAMS_PER_SM * num_cus, programs), chunks // MIN_STEPS))
    return dict(BLOCK_M=bm, BLOCK_J=bj, BLOCK_K=bk, SPLIT_K=split, SWAP=swap, num_warps=4 if bm <= 64 else 8,
                num_stages=STAGES, CLASS_MAJOR=CLASS_MAJOR and M > Y_ORDER_MAX_M)


def shifted_k(K: int, element_size: int) -> int:
    """Columns of x's shifted copies: every class's chunks (K + s_r <= K + VEC - 1), in whole chunks."""
    bk = block_k(element_size)
    return H.cdiv(K + vec(element_size) - 1, bk) * bk


def unsupported(x2, w, target, scaling=None) -> str | None:
    """Why this kernel cannot take the call (None: it can); `scaling` a dense.Scaling (None: no scales)."""
    v = vec(w.element_size())
    N, K = w.shape
    mode = "none" if scaling is None else scaling.mode
    if target.arch != "sm_90":
        return "not sm_90 (TMA)"
    if x2.dtype != w.dtype or mode != ("none" if w.element_size() == 2 else "rowcol"):
        return f"{x2.dtype} x {w.dtype} with {mode} scales (16-bit without scales, 8-bit with rowcol scales)"
    if w.stride(1) != 1:
        return "w's rows are not contiguous along K"
    if w.data_ptr() % H.TMA_ALIGN:
        return "w's base is not 16-byte aligned"
    if N % v:
        return f"N % {v} != 0 (whole octets of rows)"
    if K < block_k(w.element_size()):
        return f"K < {block_k(w.element_size())}"
    if (v - 1) * w.stride(0) + K >= 2 ** 31 or N // v >= 2 ** 31:
        return "TMA coordinates past int32"
    return None


def launch(x2, w, bias, y, activation, target, compile_only=False, t: dict | None = None, gated: bool = False,
           scaling=None):
    """y = act(scales * (x2 @ w.T) + bias) (x2 (M, K) any strides, w (N, K), y (M, N) 2-D views; 16-bit operands
    without scales, or 8-bit ones with `scaling` a dense.Scaling "rowcol"): x's shifted copies (pad.shift_rows), the
    kernel, then rows_reduce_kernel over its class-major partials (CLASS_MAJOR), else the split-K reduce where the
    tile splits K. `gated`: w's rows [gate | up], y (M, N / 2) = act(g) * u, no bias (the class-major partials,
    I = N / 2 whole octets: `gated_takes`; 16-bit). `t`: a tile other than `tile`'s (the A/B)."""
    from . import dense as G

    M, (N, K) = y.shape[0], w.shape
    t = t or tile(M, N, K, w.element_size(), target.num_cus)
    if gated:  # its reduce sums class-major partials, at any M
        t = dict(t, CLASS_MAJOR=True)
    split, cm = t["SPLIT_K"], t.get("CLASS_MAJOR", False)
    if gated and not (cm and bias is None and gated_takes(N // 2, w.element_size())):
        raise ValueError(f"gemm_rows_tma: the gated reduce needs class-major partials, no bias and I = {N // 2} "
                         f"a multiple of {vec(w.element_size())}")
    part = torch.empty((split, M, N), dtype=torch.float32, device=x2.device) if split > 1 or cm else y
    launch_tile(x2, w, bias, y, part, activation, target, t, compile_only, scaling)
    if cm:
        v = vec(w.element_size())
        bm, bj = reduce_block(M, y.shape[1] // v, target.num_cus)
        L.launcher(rows_reduce_kernel, (H.cdiv(M, bm), H.cdiv(y.shape[1] // v, bj)), compile_only)(
            part, bias if bias is not None else y, y, M, N, N // v, y.stride(0), y.stride(1), SPLIT_K=split, VEC=v,
            BLOCK_M=bm, BLOCK_J=bj, HAS_BIAS=bias is not None, ACTIVATION=activation, GATED=gated,
            num_warps=REDUCE_WARPS)
    elif split > 1:
        G.launch_reduce(part, M * N, split, bias, y, activation, target, compile_only)


def reduce_block(M: int, octets: int, num_cus: int) -> tuple[int, int]:
    """rows_reduce_kernel's (BLOCK_M, BLOCK_J) for y's M rows and `octets` (its columns / VEC): at most REDUCE_M x
    REDUCE_J, BLOCK_J halved (down to REDUCE_MIN_J), then BLOCK_M, until the programs reach REDUCE_PROGRAMS an SM:
    the reduce is a few microseconds of latency, and a few large programs (16 x 4096: 16 of them) wait on it serially.
    """
    bm, bj = min(REDUCE_M, triton.next_power_of_2(M)), REDUCE_J
    goal = REDUCE_PROGRAMS * num_cus
    while bj > REDUCE_MIN_J and H.cdiv(M, bm) * H.cdiv(octets, bj) < goal:
        bj //= 2
    while bm > 1 and H.cdiv(M, bm) * H.cdiv(octets, bj) < goal:
        bm //= 2
    return bm, bj


def gated_takes(I: int, element_size: int) -> bool:
    """Whether `launch(gated=True)` takes a gated w of 2 I rows: its class-major partials (CLASS_MAJOR) put u's
    octet j in g's class at octet I / VEC + j only where I is whole octets."""
    return CLASS_MAJOR and I % vec(element_size) == 0


def partials(x2, w, target, compile_only=False) -> torch.Tensor:
    """x2 @ w.T as fp32 partial sums (SPLIT_K, M, N) of `tile`'s K split, not yet added (SPLIT_K 1: the product):
    for a caller with its own reduce (the gated GEMM's, which applies its activation to the sum:
    kernels/triton/gated.launch_rows)."""
    M, K = x2.shape
    N = w.shape[0]
    t = dict(tile(M, N, K, w.element_size(), target.num_cus), CLASS_MAJOR=False)  # (the caller's reduce: in order)
    part = torch.empty((t["SPLIT_K"], M, N), dtype=torch.float32, device=x2.device)
    launch_tile(x2, w, None, part[0], part, "none", target, t, compile_only)
    return part


def launch_tile(x2, w, bias, y, part, activation, target, t: dict, compile_only=False, scaling=None):
    """x's shifted copies and the kernel with tile `t`: y = act(scales * (x2 @ w.T) + bias) where t splits no K and
    keeps y's order, else the scaled fp32 partials in `part` (SPLIT_K, M, N)."""
    from .pad import shift_rows

    M, (N, K) = y.shape[0], w.shape  # (y: N columns, or the gated N / 2)
    es = w.element_size()
    v = vec(es)
    P = w.stride(0)
    RP = H.cdiv(M, t["BLOCK_M"]) * t["BLOCK_M"]
    xs = shift_rows(x2, P, RP, shifted_k(K, es), compile_only)
    span = w.as_strided(((N - 1) * P + K,), (1,))  # w's first to last element: every box lies within it
    w_desc = L.tma_view_descriptor(span, (N // v, (v - 1) * P + K), (v * P, 1), [t["BLOCK_J"], t["BLOCK_K"]])
    x_desc = L.tma_descriptor(xs, [t["BLOCK_M"], t["BLOCK_K"]])
    scale = "none" if scaling is None else scaling.mode
    xsc, wsc = (scaling.x_scale, scaling.w_scale) if scale == "rowcol" else (y, y)  # never read at SCALE "none"
    grid = (v * H.cdiv(N // v, t["BLOCK_J"]) * H.cdiv(M, t["BLOCK_M"]) * t["SPLIT_K"],)
    L.launcher(gemm_rows_tma_kernel, grid, compile_only)(
        x_desc, w_desc, xsc, wsc, bias if bias is not None else y, y, part, M, N, N // v, K, RP, P, y.stride(0),
        y.stride(1), **constexprs(t, v, bias is not None, activation, x2.dtype, scale), num_warps=t["num_warps"],
        num_stages=t["num_stages"])


def constexprs(t: dict, v: int, has_bias: bool, activation: str, in_dtype=torch.bfloat16, scale: str = "none") -> dict:
    return dict(BLOCK_M=t["BLOCK_M"], BLOCK_J=t["BLOCK_J"], BLOCK_K=t["BLOCK_K"], VEC=v, SWAP=t["SWAP"],
                HAS_BIAS=has_bias, ACTIVATION=activation, SPLIT_K=t["SPLIT_K"], CLASS_MAJOR=t.get("CLASS_MAJOR", False),
                SCALE=scale, ACC_INT=in_dtype == torch.int8,
                # fp8: the wgmma sums promoted to fp32 every box (128 products: kernels/triton/_mainloop.py)
                PROMOTE_K=min(t["BLOCK_K"], 128) if in_dtype in H.FP8_DTYPES else 0)


def static_spec(dtype: str = "bf16", M: int = 16, split_k: int = 2, activation: str = "none", N: int = 4096):
    """(kernel, signature, constexprs, divisible, options) as `launch` compiles it for a `dtype` call (bf16 / fp16
    without scales, fp8e4nv / i8 with rowcol scales and a bf16 y) of M tokens (`tile`'s: swapped at M <= SWAP_MAX_M,
    else unswapped; 128 x WIDE_J on a wide w) on an N x 4095 w, y 16-byte aligned (`gemmkit isa`)."""
    eight = dtype in ("fp8e4nv", "i8")
    es = 1 if eight else 2
    in_dtype = {"fp8e4nv": torch.float8_e4m3fn, "i8": torch.int8}.get(dtype, torch.bfloat16)
    v = vec(es)
    t = tile(M, N, 4095, es, 132)
    t.update(SPLIT_K=split_k)
    ce = dict(constexprs(t, v, False, activation, in_dtype, "rowcol" if eight else "none"), stride_yn=1)
    y, scale = ("bf16", "fp32") if eight else (dtype, dtype)  # (the contiguous y Triton specialises: stride_yn)
    sig = {"x_desc": f"tensordesc<{dtype}[{t['BLOCK_M']}, {t['BLOCK_K']}]>",
           "w_desc": f"tensordesc<{dtype}[{t['BLOCK_J']}, {t['BLOCK_K']}]>", "xs_ptr": f"*{scale}",
           "ws_ptr": f"*{scale}", "bias_ptr": f"*{y}", "y_ptr": f"*{y}", "part_ptr": "*fp32", "M": "i32", "N": "i32",
           "NJ": "i32", "K": "i32", "RP": "i32", "pitch_w": "i32", "stride_ym": "i32", "stride_yn": "constexpr"}
    sig.update({k: "constexpr" for k in ce if k not in sig})
    # N = 4096 / 28672: N / VEC a multiple of 16
    divisible = ["xs_ptr", "ws_ptr", "bias_ptr", "y_ptr", "part_ptr", "N", "NJ", "stride_ym"]
    return gemm_rows_tma_kernel, sig, ce, divisible, {"num_warps": t["num_warps"], "num_stages": t["num_stages"]}


REDUCE_PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
)


def reduce_static_spec(dtype: str = "bf16", split_k: int = 3, activation: str = "none", gated: bool = False,
                       block: tuple[int, int] = (REDUCE_M, REDUCE_J), element_size: int = 2):
    """(kernel, signature, constexprs, divisible, options) of rows_reduce_kernel as `launch` compiles it (`gemmkit
    isa`): fp32 partials, a `dtype` y 16-byte aligned, no bias, a (BLOCK_M, BLOCK_J) `block` of `reduce_block`'s;
    `gated`: act(g) * u; `element_size`: the operands' (VEC classes: 8 for 16-bit, 16 for 8-bit)."""
    ce = dict(SPLIT_K=split_k, VEC=vec(element_size), BLOCK_M=block[0], BLOCK_J=block[1], HAS_BIAS=False,
              ACTIVATION=activation, GATED=gated, stride_yn=1)
    sig = {"part_ptr": "*fp32", "bias_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "M": "i32", "N": "i32", "NJ": "i32",
           "stride_ym": "i32", "stride_yn": "constexpr"}
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return rows_reduce_kernel, sig, ce, ["part_ptr", "bias_ptr", "y_ptr", "N", "NJ", "stride_ym"], \
        {"num_warps": REDUCE_WARPS}


def isa_spec(case: dict) -> dict | None:
    """The `gemmkit isa` spec of a case of the kernels of unaligned K (path "rows": gemm_rows.py, "rows_tma": this
    kernel, "rows_reduce": its reduce, "shift": x's shifted copies, "pad": the operand copy; bucket the operand dtype:
    bf16 / fp16, or fp8e4nv / fp8e4b8 / i8 with rowcol scales and a bf16 y); None for another path. gemm_a16w16's and
    gemm_a8w8's."""
    from . import gemm_rows, pad

    cfg, dtype = case["config"], case["bucket"]
    es = 1 if dtype in ("fp8e4nv", "fp8e4b8", "i8") else 2
    if case["path"] == "rows":
        spec, promises = gemm_rows.static_spec(dtype, cfg["BLOCK_M"], cfg["SPLIT_K"]), gemm_rows.PROMISES
    elif case["path"] == "rows_tma":
        spec, promises = static_spec(dtype, cfg["M"], cfg["SPLIT_K"], N=cfg["N"]), PROMISES
    elif case["path"] == "rows_reduce":
        spec = reduce_static_spec(dtype if es == 2 else "bf16", cfg["SPLIT_K"], element_size=es,
                                  block=(cfg["BLOCK_M"], cfg["BLOCK_N"] // vec(es)))
        promises = REDUCE_PROMISES
    elif case["path"] == "shift":
        spec, promises = pad.shift_static_spec(dtype), pad.PROMISES
    elif case["path"] == "pad":
        spec, promises = pad.static_spec(dtype), pad.PROMISES
    else:
        return None
    kernel, sig, ce, div, opts = spec
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=promises,
                block=None, smem_bound=0)
