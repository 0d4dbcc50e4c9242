"""A16W16 GEMM, portable pointer path: y = act(x @ w.T + bias), bf16/fp16 in, fp32 accumulate.

Runs on every target (Hopper, gfx942, gfx950) and in the Triton interpreter.
On AMD Triton lowers the masked loads to buffer loads where it can.

Tile layout (one program = one BLOCK_M x BLOCK_N tile of y, K walked in BLOCK_K steps):

              K ------------------------------------->
         +----------------------------+
  x      | BLOCK_M x BLOCK_K  -> ...  |  rows offs_m (wrapped mod M: no load mask on M)
 (M, K)  +----------------------------+
         +----------------------------+
  w      | BLOCK_N x BLOCK_K  -> ...  |  rows offs_n (wrapped mod N), used as w_tile.T
 (N, K)  +----------------------------+
                       |
                       v   acc[BLOCK_M, BLOCK_N] += x_tile @ w_tile.T   (fp32)
                       v   epilogue: + bias, activation, cast   (_epilogue.py)
                 y[offs_m, offs_n]  (masked store at M, N edges)

Schedule: tile ids go through `tile_coords` (XCD remap + grouped order,
_schedule.py). PERSISTENT launches min(tiles, CUs) programs that loop over
tile ids with stride = grid; otherwise one program per tile.

Pipelining: Triton's software pipeliner keeps `num_stages` K-steps of x and w
in flight (cp.async on NVIDIA, LDS double-buffering on AMD).

Constraints:
  - x (M, K) and w (N, K) of one dtype (bf16 or fp16); any strides (stride 1 on
    K is specialised by Triton and is the fast case); y any strides.
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16 (tl.dot's minimum).
  - K tail masked unless EVEN_K (K % BLOCK_K == 0); M and N edges wrap on
    load and mask on store. Row offsets into x, w, y are int64 (no overflow
    for tensors above 2**31 elements).
  - M, N, K >= 1 (the op handles empty shapes and K == 0 without a launch).
"""
import triton
import triton.language as tl

from ._epilogue import bias_activation, store_tile
from ._schedule import tile_coords


@triton.jit
def _a16w16_tile(tile_id, x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                 stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                 HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # Wrap the row indices instead of masking them: edge tiles re-read valid
    # rows, whose results the masked store then discards. (No contiguity
    # hints on these: a wrapped range is not contiguous, and with a
    # column-major x the hint would license out-of-bounds vector loads.)
    rows_x = offs_m % M
    rows_w = offs_n % N
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows_x[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + rows_w[:, None].to(tl.int64) * stride_wn + offs_k[None, :] * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(x_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(w_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        acc = tl.dot(a, b.T, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    acc = bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)
    store_tile(y_ptr, acc, offs_m, offs_n, M, N, stride_ym, stride_yn)


@triton.jit
def gemm_a16w16_kernel(x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                       HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, PERSISTENT: tl.constexpr):
    if PERSISTENT:
        num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):
            _a16w16_tile(tile_id, x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                         stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                         BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION)
    else:
        _a16w16_tile(tl.program_id(0), x_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
                     stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                     BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION)
