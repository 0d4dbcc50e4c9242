"""Batched GEMM, portable pointer path: y[b] = epilogue(x[b] @ w[b].T) for b in [0, B), one launch.

    batched_gemm_a16w16   bf16/fp16 x, w; fp32 accumulate                       SCALE = "none"
    batched_gemm_a8w8     int8 (int32 acc) or fp8 x, w; per-token x_scale[b] (M,) and
                          per-channel w_scale[b] (N,) applied in the epilogue   SCALE = "rowcol"

What is batched here and nothing else: the work-id -> (batch, tile) map
(`batched_tile_coords`) and the batch offsets of the base pointers. The K loop
(`pointer_mainloop`), the epilogue (`epilogue`, `store_tile`) and the schedule
pieces (`remap_xcd`, `grouped_tile`) are the dense GEMM's (gemm.py).

Work space: B x tiles, batch-major, one work id per output tile of one batch entry:

   work id:  0 .. T-1          T .. 2T-1        ...   (B-1)T .. BT-1       T = tiles per batch entry
             batch 0           batch 1                batch B-1
             +--+--+--+        +--+--+--+             +--+--+--+
             |  |  |  |        |  |  |  |             |  |  |  |    inside one batch entry: the dense
             +--+--+--+        +--+--+--+             +--+--+--+    grouped order (GROUP_SIZE_M rows
             |  |  |  |        |  |  |  |             |  |  |  |    of tiles, column by column)
             +--+--+--+        +--+--+--+             +--+--+--+

   The XCD remap (AMD) runs on the whole B x T id space first, so the ids one XCD runs are
   a contiguous range: whole batch entries (or long runs of one), which share that XCD's L2.

Per work id (one program per id, or PERSISTENT: min(work, CUs) programs striding over ids):

   b, pid_m, pid_n = batched_tile_coords(id)
   x_b = x + b * stride_xb       w_b = w + b * stride_wb       y_b = y + b * stride_yb
   bias_b = bias + b * stride_bb (0 for a shared (N,) bias)    scales: + b * stride_{x,w}sb
        |
        v   acc = pointer_mainloop(x_b rows offs_m % M, w_b rows offs_n % N, all K steps)   (_mainloop.py)
        v   epilogue: scales, + bias, activation, cast; masked store into y_b             (_epilogue.py)

Constraints:
  - x (B, M, K), w (B, N, K), y (B, M, N), any strides (a batch stride of 0 broadcasts an
    operand); stride 1 on K is the fast case. Batch and row offsets are int64; column offsets and K
    steps int32 unless INT64_OFFSETS (_offsets.py; the host sets it when a span reaches 2**31
    elements). B, M, N, K < 2**31.
  - bias: B * N elements with unit stride on N, batch stride stride_bb (0: one (N,) bias for all).
  - SCALE == "rowcol": x_scale (B, M) and w_scale (B, N) fp32, unit stride on M / N.
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16 (int8/fp8: BLOCK_K >= 32).
  - No split-K (the batch already gives the grid its parallelism); B * tiles < 2**31.
"""
import triton
import triton.language as tl

from ._epilogue import epilogue, store_tile
from ._mainloop import pointer_mainloop
from ._schedule import batched_tile_coords


# Checked by `gemmkit isa` on every shipped config: the dense pointer kernel's promises, unchanged
# (the same mainloop and epilogue; only the base pointers move per batch entry).
from .gemm import PROMISES  # noqa: F401


@triton.jit
def _batched_tile(work_id, num_work, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, M, N, K,
                  stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
                  stride_yb, stride_ym, stride_yn, stride_xsb, stride_wsb, stride_bb,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                  HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SCALE: tl.constexpr,
                  ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr, INT64_OFFSETS: tl.constexpr,
                  W_KN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    b, pid_m, pid_n = batched_tile_coords(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
    b = b.to(tl.int64)
    x_ptr += b * stride_xb
    w_ptr += b * stride_wb
    y_ptr += b * stride_yb
    xs_ptr += b * stride_xsb
    wsc_ptr += b * stride_wsb
    bias_ptr += b * stride_bb

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rows_x = offs_m % M  # wrapped edge rows, as in gemm.py (the masked store drops them)
    rows_w = offs_n % N
    acc = pointer_mainloop(x_ptr, w_ptr, xs_ptr, wsc_ptr, rows_x, rows_w, rows_x < M, rows_w < N,
                           0, tl.cdiv(K, BLOCK_K), K, stride_xm, stride_xk, stride_wn, stride_wk, 0, 0, 0, 0,
                           BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, SCALE, 1, 1, ACC_INT, PROMOTE_K, INT64_OFFSETS, W_KN)
    out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
    store_tile(y_ptr, out, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS)


@triton.jit
def batched_gemm_kernel(x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, B, M, N, K,
                        stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
                        stride_yb, stride_ym, stride_yn, stride_xsb, stride_wsb, stride_bb,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                        HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, PERSISTENT: tl.constexpr,
                        SCALE: tl.constexpr, ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr,
                        INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    num_work = B * tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    if PERSISTENT:
        for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0)):
            _batched_tile(work_id, num_work, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, M, N, K,
                          stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
                          stride_yb, stride_ym, stride_yn, stride_xsb, stride_wsb, stride_bb,
                          BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION,
                          SCALE, ACC_INT, PROMOTE_K, INT64_OFFSETS, W_KN)
    else:
        _batched_tile(tl.program_id(0), num_work, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, M, N, K,
                      stride_xb, stride_xm, stride_xk, stride_wb, stride_wn, stride_wk,
                      stride_yb, stride_ym, stride_yn, stride_xsb, stride_wsb, stride_bb,
                      BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, HAS_BIAS, ACTIVATION,
                      SCALE, ACC_INT, PROMOTE_K, INT64_OFFSETS, W_KN)
