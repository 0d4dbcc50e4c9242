"""The dense GEMM mainloop: one K step (`mma_step`, shared by the pointer and TMA kernels; or its two halves,
`block_scales` and `scaled_step`, where a K loop loads the next step's block scales during this one) and
the pointer kernels' whole K loop over a tile (`pointer_mainloop`, shared by every pointer
kernel: gemm.py and the variants that only change which rows they read or where they store).

    a (BLOCK_M x BLOCK_K), b (BLOCK_N x BLOCK_K)  -- loaded by the caller (pointers or TMA);
                                                     B_KN: b is (BLOCK_K x BLOCK_N), b.T below reads b
         |
         v
    SCALE == "none" / "rowcol":  acc = a @ b.T + acc          (one accumulator for the whole K;
                                                               "rowcol" scales it in the epilogue)
    SCALE == "block":            acc += (a @ b.T) * xs[m, kb] * ws[n // SCALE_BN, kb]
                                 kb = (K offset of this step) // SCALE_BK: the scales change
                                 every SCALE_BK of K, so each step's product is scaled before
                                 it joins the fp32 accumulator (DeepSeek-V3 block scaling)

Accumulator dtype: fp32, or int32 for int8 operands (exact integer sums).

W tile orientation (W_KN, AMD): the pointer mainloop reads w's tile either as rows of w (BLOCK_N x BLOCK_K, then
b.T in the dot) or straight as its transpose (BLOCK_K x BLOCK_N: the same bytes, K still the contiguous axis). Triton
3.6 on gfx942 gives the first form's LDS buffer no swizzle (`swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1}>`,
read through a `tt.trans`): the 16 lanes of an MFMA operand read rows n = 0..15 at one K offset, 128 bytes apart at
BLOCK_K = 128 fp8 (64 bf16), all in the same two of the 32 four-byte LDS banks, a 16-way conflict on every B read.
The second form gets A's swizzle (vec 8 fp8 / 4 bf16, maxPhase 16, order [0, 1]). gfx950 swizzles both forms alike
(the same instructions either way under 3.6; 3.8 allocates the second form more LDS there), and sm_90 keeps its
measured code: both keep the first form. The host sets W_KN on gfx942 (dense.W_KN_ARCHS); `gemmkit isa` checks that
no dot operand of an AMD pointer kernel sits in an unswizzled buffer.

FP8 precision (sm_90): Hopper's fp8 wgmma adds its products into an
accumulator with fewer mantissa bits than fp32, and Triton's sm_90 default
(max_num_imprecise_acc = 2**30) keeps accumulating there for the whole K loop,
which loses ~3 decimal digits at K = 8192. `PROMOTE_K` is the number of K
elements the wgmma may accumulate before Triton adds the partial sum into a
true fp32 accumulator: the op sets it to min(BLOCK_K, 128), so every K block
of at most 128 is promoted (DeepGEMM promotes at the same granularity). It is
ignored for 16-bit and int8 operands and off sm_90.

Constraints:
  - mma_step's tile K divides SCALE_BK (SCALE == "block"): one call never straddles two scale blocks (the TMA
    kernel's K step of a multiple of SCALE_BK calls it once a scale block: dense.step_boxes).
  - Scale rows are read with the caller's row indices (wrapped mod M / N in the
    pointer kernel, masked in the TMA kernel), so edge tiles never read out of bounds; `block_scales` clamps the
    scale column to the last one (`kb_last`), so a load a step ahead of the last step stays in bounds too.
  - Row offsets are int64; column offsets (offs_k * stride_xk, kb * stride_xsk) and the K step's
    pointer increment are int32 unless INT64_OFFSETS (_offsets.py; the host sets it when a span
    reaches 2**31 elements).
"""
import triton
import triton.language as tl

from ._offsets import wide


@triton.jit
def scale_rows(xs_ptr, wsc_ptr, rows_x, rows_w, stride_xsm, stride_wsn, SCALE_BN: tl.constexpr):
    """Per-tile row pointers into the block scales (computed once, before the K loop):
    x_scale row of each tile row, w_scale row (n // SCALE_BN) of each tile column."""
    return (xs_ptr + rows_x.to(tl.int64) * stride_xsm,
            wsc_ptr + (rows_w // SCALE_BN).to(tl.int64) * stride_wsn)


@triton.jit
def block_scales(k_offset, xs_rows, ws_rows, mask_x, mask_w, stride_xsk, stride_wsk, kb_last,
                 SCALE_BK: tl.constexpr, INT64_OFFSETS: tl.constexpr = False):
    """(x scales of the tile rows, w scales of the tile columns) of the scale block holding K offset `k_offset`,
    that block clamped to `kb_last` (a prefetch of the step after the last reads the last block's, unused)."""
    kb = wide(tl.minimum(k_offset // SCALE_BK, kb_last), INT64_OFFSETS)
    xs = tl.load(xs_rows + kb * stride_xsk, mask=mask_x, other=0.0)
    ws = tl.load(ws_rows + kb * stride_wsk, mask=mask_w, other=0.0)
    return xs, ws


@triton.jit
def scaled_step(acc, a, b, xs, ws, SCALE: tl.constexpr, PROMOTE_K: tl.constexpr, B_KN: tl.constexpr = False):
    """acc after one K step whose block scales (SCALE == "block") are already loaded (`block_scales`); xs / ws are
    unused otherwise. B_KN: b is already (BLOCK_K, BLOCK_N)."""
    if not B_KN:
        b = b.T
    if SCALE == "block":
        acc += tl.dot(a, b, max_num_imprecise_acc=PROMOTE_K) * xs[:, None] * ws[None, :]
    else:
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=PROMOTE_K, out_dtype=acc.dtype)
    return acc


@triton.jit
def mma_step(acc, a, b, k_offset, xs_rows, ws_rows, mask_x, mask_w, stride_xsk, stride_wsk,
             SCALE: tl.constexpr, SCALE_BK: tl.constexpr, PROMOTE_K: tl.constexpr,
             INT64_OFFSETS: tl.constexpr = False, B_KN: tl.constexpr = False):
    """acc after one K step at K offset `k_offset` (see the module docstring), its block scales loaded here, after
    the dot is issued. `xs_rows` / `ws_rows`: scale_rows() of the tile; `mask_x` / `mask_w`: which tile rows /
    columns exist; B_KN: b is already (BLOCK_K, BLOCK_N)."""
    if SCALE == "block":
        if not B_KN:
            b = b.T
        part = tl.dot(a, b, max_num_imprecise_acc=PROMOTE_K)
        xs, ws = block_scales(k_offset, xs_rows, ws_rows, mask_x, mask_w, stride_xsk, stride_wsk,
                              k_offset // SCALE_BK, SCALE_BK, INT64_OFFSETS)
        acc += part * xs[:, None] * ws[None, :]
    else:
        acc = scaled_step(acc, a, b, 1.0, 1.0, SCALE, PROMOTE_K, B_KN)
    return acc


@triton.jit
def pointer_mainloop(x_ptr, w_ptr, xs_ptr, wsc_ptr, rows_x, rows_w, mask_x, mask_w, k_first, k_steps, K,
                     stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                     SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                     ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr, INT64_OFFSETS: tl.constexpr,
                     W_KN: tl.constexpr = False):
    """acc[BLOCK_M, BLOCK_N] = sum over K steps [k_first, k_first + k_steps) of x[rows_x] @ w[rows_w].T.

    rows_x (BLOCK_M,) / rows_w (BLOCK_N,): row indices into x and w, all in bounds (callers wrap
    edge rows, e.g. offs_m % M, or map tile columns to any rows they like: the gated GEMM reads
    gate and up rows into one tile); mask_x / mask_w say which of them are real rows (for the
    block scales). K tail masked unless EVEN_K. Row offsets are int64, the others as INT64_OFFSETS says.
    W_KN: w's tile is read as (BLOCK_K, BLOCK_N) (the module docstring says why)."""
    offs_k = wide(k_first * BLOCK_K + tl.arange(0, BLOCK_K), INT64_OFFSETS)
    x_ptrs = x_ptr + rows_x[:, None].to(tl.int64) * stride_xm + offs_k[None, :] * stride_xk
    if W_KN:
        w_ptrs = w_ptr + rows_w[None, :].to(tl.int64) * stride_wn + offs_k[:, None] * stride_wk
    else:
        w_ptrs = w_ptr + rows_w[:, None].to(tl.int64) * stride_wn + offs_k[None, :] * stride_wk
    xs_rows, ws_rows = scale_rows(xs_ptr, wsc_ptr, rows_x, rows_w, stride_xsm, stride_wsn, SCALE_BN)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
    for k in range(0, k_steps):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_left = K - (k_first + k) * BLOCK_K
            a = tl.load(x_ptrs, mask=tl.arange(0, BLOCK_K)[None, :] < k_left, other=0.0)
            if W_KN:
                b = tl.load(w_ptrs, mask=tl.arange(0, BLOCK_K)[:, None] < k_left, other=0.0)
            else:
                b = tl.load(w_ptrs, mask=tl.arange(0, BLOCK_K)[None, :] < k_left, other=0.0)
        acc = mma_step(acc, a, b, (k_first + k) * BLOCK_K, xs_rows, ws_rows, mask_x, mask_w,
                       stride_xsk, stride_wsk, SCALE, SCALE_BK, PROMOTE_K, INT64_OFFSETS, W_KN)
        x_ptrs += wide(BLOCK_K, INT64_OFFSETS) * stride_xk
        w_ptrs += wide(BLOCK_K, INT64_OFFSETS) * stride_wk
    return acc
