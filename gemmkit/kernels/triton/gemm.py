"""Dense GEMM, portable pointer path: y = epilogue(x @ w.T), every gemmkit GEMM op's Triton kernel.

    gemm_a16w16            bf16/fp16 x, w; fp32 accumulate              SCALE = "none"
    gemm_a8w8              int8 (int32 acc) or fp8 x, w; per-token x_scale (M,) and
                           per-channel w_scale (N,) applied in the epilogue    SCALE = "rowcol"
    gemm_a8w8_blockscale   fp8 x, w; x_scale (M, ceil(K/SBK)), w_scale (ceil(N/SBN), ceil(K/SBK))
                           applied per K step in the mainloop (_mainloop.py)   SCALE = "block"

Runs on every target (Hopper, gfx942, gfx950) and in the Triton interpreter.
On AMD, Triton 3.6 emits plain global_load for these loads (no buffer or
direct-to-LDS loads; see docs/ISA.md).

Tile layout (one program = one BLOCK_M x BLOCK_N tile of y, K walked in BLOCK_K steps):

              K ------------------------------------->
         +----------------------------+
  x      | BLOCK_M x BLOCK_K  -> ...  |  rows offs_m (wrapped mod M: no load mask on M)
 (M, K)  +----------------------------+
         +----------------------------+
  w      | BLOCK_N x BLOCK_K  -> ...  |  rows offs_n (wrapped mod N), used as w_tile.T
 (N, K)  +----------------------------+
                       |
                       v   acc[BLOCK_M, BLOCK_N] = pointer_mainloop(rows, K steps)  (_mainloop.py)
                       v   epilogue: scales, + bias, activation, cast              (_epilogue.py)
                 y[offs_m, offs_n]  (masked store at M, N edges)

Schedule: work ids go through `split_tile` (split-K, then `tile_coords`: XCD
remap + grouped order, _schedule.py). PERSISTENT launches min(work, CUs)
programs that loop over work ids with stride = grid; otherwise one program per
work id.

Split-K (SPLIT_K > 1, small-M decode): work id = split * tiles + tile; split s
runs the K steps `split_k_range` gives it and stores its fp32 partial tile to
part[s] (scaled already: the scales are linear in the sum; no bias or
activation); `_splitk_reduce.py` then adds part[0], part[1], ... in that fixed
order and runs bias and activation, so results are bitwise reproducible:

      split 0: K steps [0, k0)  --> part[0] --+
      split 1: K steps [k0, k1) --> part[1] --+--> y = epilogue(part[0] + part[1] + ...)
      ...

Pipelining: Triton's software pipeliner keeps `num_stages` K-steps of x and w
in flight (cp.async on NVIDIA, LDS double-buffering on AMD).

Constraints:
  - x (M, K) and w (N, K) of one dtype (bf16, fp16, int8, fp8); any strides
    (stride 1 on K is specialised by Triton and is the fast case); y any strides.
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16 (tl.dot's minimum; int8/fp8 want BLOCK_K >= 32).
  - K tail masked unless EVEN_K (K % BLOCK_K == 0); M and N edges wrap on
    load and mask on store.
  - Offsets: rows of x, w, y (and the split-K slab) int64; column offsets, K steps and block-scale
    columns int32 unless INT64_OFFSETS, which the host sets when any tensor of the call spans
    2**31 elements or more (_offsets.py, ops/_common.int64_offsets). M, N, K < 2**31.
  - M, N, K >= 1 (the ops handle empty shapes and K == 0 without a launch).
  - SPLIT_K > 1 needs part: a contiguous fp32 (SPLIT_K, M, N) buffer; y is then untouched.
  - SCALE == "block": BLOCK_K divides SCALE_BK (see _mainloop.py).
"""
import triton
import triton.language as tl

from ._epilogue import apply_scales, epilogue, store_tile
from ._mainloop import pointer_mainloop
from ._schedule import split_tile


# What the compiled code must show, checked by `gemmkit isa` and CI on every shipped
# config (expressions over the metrics of gemmkit.isa.resources, `cfg` and `target`).
# TILE_PROMISES: every tiled GEMM kernel of this tier's; each kernel adds its own.
TILE_PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "shared memory within the op's bound (smem_bytes)", "check": "lds_bytes <= smem_bound"},
    {"promise": "matrix work per K step = tile arithmetic", "check": "mma_k_steps >= 1 and mma_k_steps % 1 == 0"},
)
# The pointer kernels' (gemm.py, gemm_gated.py, gemm_split_cat.py) beside their MMA instructions.
CP_ASYNC = {"promise": "cp.async pipelining (LDGSTS)", "arch": "sm_90", "when": "cfg['num_stages'] >= 2",
            "check": "counts['LDGSTS'] > 0"}
NO_LOCAL_MEMORY = {"promise": "no local-memory traffic", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"}
AMD_POINTER_PROMISES = (
    {"promise": "MFMA present", "arch": "amd", "check": "counts['v_mfma'] > 0"},
    {"promise": "waves_per_eu honoured", "arch": "amd", "when": "cfg.get('waves_per_eu', 0) > 0",
     "check": "occupancy >= cfg['waves_per_eu']"},
    {"promise": "dot operands read from swizzled LDS buffers (W_KN, _mainloop.py)", "arch": "amd",
     "check": "counts['lds_unswizzled'] == 0"},
)
PROMISES = TILE_PROMISES + (
    {"promise": "wgmma (HGMMA / QGMMA fp8 / IGMMA int8) for tiles of >= 64 rows", "arch": "sm_90",
     "when": "cfg['BLOCK_SIZE_M'] >= 64", "check": "counts['HGMMA'] + counts['QGMMA'] + counts['IGMMA'] > 0"},
    {"promise": "mma.sync (HMMA / IMMA) for 16/32-row tiles", "arch": "sm_90", "when": "cfg['BLOCK_SIZE_M'] < 64",
     "check": "counts['HMMA'] + counts['IMMA'] + counts['QGMMA'] > 0"},
    CP_ASYNC,
    NO_LOCAL_MEMORY,
) + AMD_POINTER_PROMISES


@triton.jit
def _gemm_tile(work_id, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, part_ptr, M, N, K,
               stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
               stride_xsm, stride_xsk, stride_wsn, stride_wsk,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
               HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr,
               SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
               ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr, INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    split, offs_m, offs_n, k_first, k_steps = split_tile(work_id, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M,
                                                         NUM_XCDS, SPLIT_K)
    # Wrap the row indices instead of masking them: edge tiles re-read valid
    # rows, whose results the masked store then discards. (No contiguity
    # hints on these: a wrapped range is not contiguous, and with a
    # column-major x the hint would license out-of-bounds vector loads.)
    rows_x = offs_m % M
    rows_w = offs_n % N
    acc = pointer_mainloop(x_ptr, w_ptr, xs_ptr, wsc_ptr, rows_x, rows_w, rows_x < M, rows_w < N, k_first, k_steps, K,
                           stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                           BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K,
                           INT64_OFFSETS, W_KN)

    if SPLIT_K == 1:
        out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
        store_tile(y_ptr, out, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS)
    else:  # scaled fp32 partial sum; _splitk_reduce.py adds the splits in order, then bias and activation
        part = apply_scales(acc, xs_ptr, wsc_ptr, offs_m, offs_n, M, N, SCALE)
        store_tile(part_ptr + split.to(tl.int64) * M * N, part, offs_m, offs_n, M, N, N, 1)


@triton.jit
def gemm_kernel(x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, part_ptr, M, N, K,
                stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, PERSISTENT: tl.constexpr,
                SPLIT_K: tl.constexpr, SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr, INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    if PERSISTENT:
        num_work = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N) * SPLIT_K
        for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0)):
            _gemm_tile(work_id, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, part_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                       stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                       BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION, SPLIT_K,
                       SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K, INT64_OFFSETS, W_KN)
    else:
        _gemm_tile(tl.program_id(0), x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, part_ptr, M, N, K,
                   stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                   stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                   BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION, SPLIT_K,
                   SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K, INT64_OFFSETS, W_KN)
