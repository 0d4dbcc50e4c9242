"""Gated GEMM (the SwiGLU / GeGLU first half): h = act(x @ Wg.T) * (x @ Wu.T), one pass over x.

    w_gate_up (2I, K), nn.Linear layout, gate rows first:  rows [0, I) = Wg, rows [I, 2I) = Wu
    h[m, n] = act(sum_k x[m, k] Wg[n, k]) * (sum_k x[m, k] Wu[n, k])        h (M, I)

One program computes one BLOCK_M x BLOCK_N tile of h: the gate and the up
projection of the *same* I columns n0 .. n0 + BLOCK_N, so the nonlinear
product happens in registers and no (M, 2I) intermediate is ever written.

Pointer kernel (every target, interpreter). Per K step one x tile and two w tiles,
gate rows n0 .. n0 + BN and up rows I + n0 .. I + n0 + BN, into two accumulators
(`mma_step` of _mainloop.py for each, so the MMA step is the dense kernels'):

    x [BM x BK]  rows offs_m (wrapped mod M) --------+----> acc_g [BM, BN] += x @ Wg_tile.T
    w [BN x BK]  rows n0 + j        (gate, wrapped) -+
    w [BN x BK]  rows I + n0 + j    (up)   ----------+----> acc_u [BM, BN] += x @ Wu_tile.T
                                     epilogue: h = act(acc_g) * acc_u (fp32; _epilogue.activation),
                                               cast, masked store (_epilogue.store_tile)

    (One (BM, 2BN) accumulator through the shared `pointer_mainloop` with gate and up rows
    interleaved, split in the epilogue by reshape + tl.split, computes the same but compiled
    worse: 255 vs 174 registers per thread at 128 x 128 x 64 / 8 warps on sm_90, 154 vs 107
    VGPRs at 64 x 128 x 64 on gfx942 (static compiles, docs/kernels/ffn_gated.md).)

TMA kernel (sm_90). Two w boxes per K step, gate rows at n0 and up rows at I + n0,
into two wgmma accumulators that share the x tile:

    x_desc [BM, BK]  (off_m, k) ------+----> wgmma --> acc_g [BM, BN]
    w_desc [BN, BK]  (n0, k)      ----+
    w_desc [BN, BK]  (I + n0, k)  ---------> wgmma --> acc_u [BM, BN]    (num_stages K steps in flight)
                                      epilogue: h = act(acc_g) * acc_u --TMA store--> h_desc [BM, BN]

    (A gate box at the last N tile may run past row I into the up rows, and an up box past
    row 2I reads TMA's zero fill: both only feed columns >= I, which the store clips.)

Schedule: `tile_coords` (XCD remap, grouped order) over cdiv(M, BM) x cdiv(I, BN) tiles,
persistent or not, exactly as gemm.py / gemm_tma.py (the pointer kernel through `split_tile`, as gemm.py).

Split-K (SPLIT_K > 1, small M): act(g) * u is not linear, so the splits cannot finish
the tile. Split s stores its raw fp32 gate and up partial sums side by side,
part[s, :, 0:I] = g_s and part[s, :, I:2I] = u_s, and `gated_splitk_reduce_kernel`
adds part[0], part[1], ... in that fixed order (bitwise reproducible) and only then
applies h = act(g) * u:

      split 0: K steps [0, k0)  --> part[0] = [g_0 | u_0] --+
      split 1: K steps [k0, k1) --> part[1] = [g_1 | u_1] --+--> g = sum g_s, u = sum u_s --> act(g) * u
      ...

Constraints:
  - x (M, K) and w_gate_up (2I, K) of one dtype (bf16 / fp16); any strides (unit stride on K is
    the fast case); h (M, I) any strides (pointer) or TMA-aligned (TMA).
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16; BLOCK_N counts h columns: the pointer
    tile reads 2*BLOCK_N w rows, the TMA kernel two BLOCK_N boxes (<= 256 rows each).
  - Two BLOCK_M x BLOCK_N fp32 accumulators live per program (twice the registers of the
    dense GEMM at the same BLOCK_N).
  - K tail masked unless EVEN_K (pointer); TMA zero-fills it. M and I edges wrap on load and
    mask on store (pointer).
  - Offsets: rows int64; column offsets and K steps int32 unless INT64_OFFSETS (_offsets.py; the host
    sets it when a span reaches 2**31 elements; the TMA kernel's pointer stores are workspace rows and
    unit-stride columns, so it takes none). M, I, K < 2**31.
  - ACTIVATION one of "silu", "gelu", "gelu_tanh", "relu" (the shared _epilogue.activation).
  - SPLIT_K > 1 needs part: a contiguous fp32 (SPLIT_K, M, 2I) buffer; h is then written by
    the reduce kernel.
"""
import triton
import triton.language as tl

from ._epilogue import activation, store_tile
from ._mainloop import mma_step
from ._offsets import wide
from ._schedule import split_k_range, split_tile, tile_coords
from .gemm import AMD_POINTER_PROMISES, CP_ASYNC, NO_LOCAL_MEMORY, TILE_PROMISES

# Checked by `gemmkit isa` / CI on every shipped config (expressions over gemmkit.isa.resources,
# `cfg` and `target`; see gemm.py).
PROMISES = TILE_PROMISES + (
    {"promise": "wgmma (HGMMA) for tiles of >= 64 rows", "arch": "sm_90", "when": "cfg['BLOCK_SIZE_M'] >= 64",
     "check": "counts['HGMMA'] > 0"},
    {"promise": "mma.sync (HMMA) for 16/32-row tiles", "arch": "sm_90", "when": "cfg['BLOCK_SIZE_M'] < 64",
     "check": "counts['HMMA'] > 0"},
    CP_ASYNC,
    NO_LOCAL_MEMORY,
) + AMD_POINTER_PROMISES

TMA_PROMISES = TILE_PROMISES + (
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the h tile", "when": "cfg['NUM_KSPLIT'] == 1", "check": "counts['UTMASTG'] > 0"},
    {"promise": "wgmma (HGMMA) for tiles of >= 64 rows", "when": "cfg['BLOCK_SIZE_M'] >= 64",
     "check": "counts['HGMMA'] > 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
)

REDUCE_PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"},
)


@triton.jit
def _store_gated(acc_g, acc_u, y_ptr, part_ptr, split, offs_m, offs_n, M, I, stride_ym, stride_yn,
                 ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr, INT64_OFFSETS: tl.constexpr = False):
    """The finished tile: h = act(g) * u into y, or (split-K) the raw partials into part[split]."""
    if SPLIT_K == 1:
        store_tile(y_ptr, activation(acc_g, ACTIVATION) * acc_u, offs_m, offs_n, M, I, stride_ym, stride_yn,
                   INT64_OFFSETS)
    else:  # part[split] = [g | u], (M, 2I) fp32; the reduce applies the nonlinearity after the sum
        base = part_ptr + split.to(tl.int64) * M * (2 * I)
        store_tile(base, acc_g, offs_m, offs_n, M, I, 2 * I, 1)
        store_tile(base + I, acc_u, offs_m, offs_n, M, I, 2 * I, 1)


@triton.jit
def _gated_tile(work_id, x_ptr, w_ptr, y_ptr, part_ptr, M, I, K,
                stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr, INT64_OFFSETS: tl.constexpr,
                W_KN: tl.constexpr):
    split, offs_m, offs_n, k_first, k_steps = split_tile(work_id, M, I, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M,
                                                         NUM_XCDS, SPLIT_K)
    # Row indices wrapped, not masked (see gemm.py): x rows, gate rows n, up rows I + n.
    rows_x = offs_m % M
    rows_g = offs_n % I
    offs_k = wide(k_first * BLOCK_K + tl.arange(0, BLOCK_K), INT64_OFFSETS)
    x_ptrs = x_ptr + rows_x[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    if W_KN:  # w's tiles as (BLOCK_K, BLOCK_N): a swizzled LDS buffer on gfx942 (_mainloop.py)
        g_ptrs = w_ptr + rows_g[None, :].to(tl.int64) * stride_wn + offs_k[:, None] * stride_wk
        u_ptrs = w_ptr + (rows_g + I)[None, :].to(tl.int64) * stride_wn + offs_k[:, None] * stride_wk
    else:
        g_ptrs = w_ptr + rows_g[:, None].to(tl.int64) * stride_wn + offs_k[None, :] * stride_wk
        u_ptrs = w_ptr + (rows_g + I)[:, None].to(tl.int64) * stride_wn + offs_k[None, :] * stride_wk
    acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, k_steps):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b_g = tl.load(g_ptrs)
            b_u = tl.load(u_ptrs)
        else:
            k_mask = tl.arange(0, BLOCK_K)[None, :] < K - (k_first + k) * BLOCK_K
            a = tl.load(x_ptrs, mask=k_mask, other=0.0)
            if W_KN:
                w_mask = tl.arange(0, BLOCK_K)[:, None] < K - (k_first + k) * BLOCK_K
            else:
                w_mask = k_mask
            b_g = tl.load(g_ptrs, mask=w_mask, other=0.0)
            b_u = tl.load(u_ptrs, mask=w_mask, other=0.0)
        acc_g = mma_step(acc_g, a, b_g, 0, a, a, a, a, 0, 0, "none", 1, 0, False, W_KN)
        acc_u = mma_step(acc_u, a, b_u, 0, a, a, a, a, 0, 0, "none", 1, 0, False, W_KN)
        x_ptrs += wide(BLOCK_K, INT64_OFFSETS) * stride_xk
        g_ptrs += wide(BLOCK_K, INT64_OFFSETS) * stride_wk
        u_ptrs += wide(BLOCK_K, INT64_OFFSETS) * stride_wk
    _store_gated(acc_g, acc_u, y_ptr, part_ptr, split, offs_m, offs_n, M, I, stride_ym, stride_yn,
                 ACTIVATION, SPLIT_K, INT64_OFFSETS)


@triton.jit
def gemm_gated_kernel(x_ptr, w_ptr, y_ptr, part_ptr, M, I, K,
                      stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                      ACTIVATION: tl.constexpr, PERSISTENT: tl.constexpr, SPLIT_K: tl.constexpr,
                      INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    if PERSISTENT:
        num_work = tl.cdiv(M, BLOCK_M) * tl.cdiv(I, BLOCK_N) * SPLIT_K
        for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0)):
            _gated_tile(work_id, x_ptr, w_ptr, y_ptr, part_ptr, M, I, K,
                        stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, ACTIVATION, SPLIT_K,
                        INT64_OFFSETS, W_KN)
    else:
        _gated_tile(tl.program_id(0), x_ptr, w_ptr, y_ptr, part_ptr, M, I, K,
                    stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, ACTIVATION, SPLIT_K,
                    INT64_OFFSETS, W_KN)


@triton.jit
def gemm_gated_tma_kernel(x_desc, w_desc, y_desc, part_ptr, M, I, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr,
                          ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(I, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for work_id in tl.range(tl.program_id(0), num_tiles * SPLIT_K, tl.num_programs(0), flatten=True):
        split = work_id // num_tiles
        pid_m, pid_n = tile_coords(work_id % num_tiles, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
        k_first, k_steps = split_k_range(split, k_tiles, SPLIT_K)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc_g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        acc_u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_steps):
            k = (k_first + ki) * BLOCK_K
            a = x_desc.load([off_m, k])
            b_g = w_desc.load([off_n, k])
            b_u = w_desc.load([I + off_n, k])
            acc_g = mma_step(acc_g, a, b_g, k, a, a, a, a, 0, 0, "none", 1, 0)
            acc_u = mma_step(acc_u, a, b_u, k, a, a, a, a, 0, 0, "none", 1, 0)
        if SPLIT_K == 1:
            y_desc.store([off_m, off_n], (activation(acc_g, ACTIVATION) * acc_u).to(y_desc.dtype))
        else:
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_n = off_n + tl.arange(0, BLOCK_N)
            _store_gated(acc_g, acc_u, part_ptr, part_ptr, split, offs_m, offs_n, M, I, 0, 0, ACTIVATION, SPLIT_K)


@triton.jit
def gated_splitk_reduce_kernel(ws_ptr, y_ptr, M, I, split_stride, stride_ym, stride_yn,
                               SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               ACTIVATION: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    """h = act(sum_s g_s) * (sum_s u_s) from ws (SPLIT_K, M, 2I) fp32 = [g | u] per split, added
    in the fixed order s = 0, 1, ... (the gated twin of _splitk_reduce.py)."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < I)
    ptrs = ws_ptr + offs_m[:, None].to(tl.int64) * (2 * I) + offs_n[None, :]
    g = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    u = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        g += tl.load(ptrs + s * split_stride.to(tl.int64), mask=mask, other=0.0)
        u += tl.load(ptrs + s * split_stride.to(tl.int64) + I, mask=mask, other=0.0)
    store_tile(y_ptr, activation(g, ACTIVATION) * u, offs_m, offs_n, M, I, stride_ym, stride_yn, INT64_OFFSETS)
