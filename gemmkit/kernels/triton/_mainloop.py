"""One K step of the dense GEMM mainloop, shared by the pointer and TMA kernels. Written once.

    a (BLOCK_M x BLOCK_K), b (BLOCK_N x BLOCK_K)  -- loaded by the caller (pointers or TMA)
         |
         v
    SCALE == "none" / "rowcol":  acc = a @ b.T + acc          (one accumulator for the whole K;
                                                               "rowcol" scales it in the epilogue)
    SCALE == "block":            acc += (a @ b.T) * xs[m, kb] * ws[n // SCALE_BN, kb]
                                 kb = (K offset of this step) // SCALE_BK: the scales change
                                 every SCALE_BK of K, so each step's product is scaled before
                                 it joins the fp32 accumulator (DeepSeek-V3 block scaling)

Accumulator dtype: fp32, or int32 for int8 operands (exact integer sums).

FP8 precision (sm_90): Hopper's fp8 wgmma adds its products into an
accumulator with fewer mantissa bits than fp32, and Triton's sm_90 default
(max_num_imprecise_acc = 2**30) keeps accumulating there for the whole K loop,
which loses ~3 decimal digits at K = 8192. `PROMOTE_K` is the number of K
elements the wgmma may accumulate before Triton adds the partial sum into a
true fp32 accumulator: the op sets it to min(BLOCK_K, 128), so every K block
of at most 128 is promoted (DeepGEMM promotes at the same granularity). It is
ignored for 16-bit and int8 operands and off sm_90.

Constraints:
  - BLOCK_K divides SCALE_BK (SCALE == "block"): a K step never straddles two scale blocks.
  - Scale rows are read with the caller's row indices (wrapped mod M / N in the
    pointer kernel, masked in the TMA kernel), so edge tiles never read out of bounds.
"""
import triton
import triton.language as tl


@triton.jit
def scale_rows(xs_ptr, wsc_ptr, rows_x, rows_w, stride_xsm, stride_wsn, SCALE_BN: tl.constexpr):
    """Per-tile row pointers into the block scales (computed once, before the K loop):
    x_scale row of each tile row, w_scale row (n // SCALE_BN) of each tile column."""
    return (xs_ptr + rows_x.to(tl.int64) * stride_xsm,
            wsc_ptr + (rows_w // SCALE_BN).to(tl.int64) * stride_wsn)


@triton.jit
def mma_step(acc, a, b, k_offset, xs_rows, ws_rows, mask_x, mask_w, stride_xsk, stride_wsk,
             SCALE: tl.constexpr, SCALE_BK: tl.constexpr, PROMOTE_K: tl.constexpr):
    """acc after one K step at K offset `k_offset` (see the module docstring). `xs_rows` /
    `ws_rows`: scale_rows() of the tile; `mask_x` / `mask_w`: which tile rows / columns exist."""
    if SCALE == "block":
        part = tl.dot(a, b.T, max_num_imprecise_acc=PROMOTE_K)
        kb = k_offset // SCALE_BK
        xs = tl.load(xs_rows + kb * stride_xsk, mask=mask_x, other=0.0)
        ws = tl.load(ws_rows + kb * stride_wsk, mask=mask_w, other=0.0)
        acc += part * xs[:, None] * ws[None, :]
    else:
        acc = tl.dot(a, b.T, acc, max_num_imprecise_acc=PROMOTE_K, out_dtype=acc.dtype)
    return acc
