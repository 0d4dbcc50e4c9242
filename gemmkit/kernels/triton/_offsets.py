"""Element offsets of the Triton kernels: int32 arithmetic unless a call's tensors span 2**31 elements.

A pointer kernel addresses an element as base + row * stride_row + col * stride_col:

    x_ptr + rows[:, None].to(int64) * stride_xm + offs_k[None, :] * stride_xk
            |________________________________|    |_________________________|
                       int64, always               int32; int64 when INT64_OFFSETS
                                                   (offs_k = wide(offs_k, INT64_OFFSETS))

Row offsets are int64 in every kernel. The other terms, a column index times its stride (offs_k * stride_xk,
offs_n * stride_yn), a K step's pointer increment (BLOCK_K * stride_xk) and a scale block's
column (kb * stride_xsk), are int32 products: they wrap once an operand's span along that dim
reaches 2**31 elements, e.g. a transposed weight W.t() of a W with >= 2**31 elements (stride_wk =
N), a column-major x, an output view with a large column stride. Triton promotes an int
argument >= 2**31 to int64 by itself, but not a product of two int32 values.

The host decides per call (ops/_common.int64_offsets): INT64_OFFSETS is True when any tensor
the kernel addresses by pointer (x, w, y, scales, bias, workspaces) has a largest element offset,
sum over dims of (size - 1) * |stride|, of 2**31 or more. It is a constexpr of every Triton
kernel, so the common case compiles to exactly the int32 code, and a large call compiles once
more with every such term widened by `wide`:

    INT64_OFFSETS False:  wide(i) = i                (int32 offsets, the code the tables were tuned on)
    INT64_OFFSETS True:   wide(i) = int64(i)         (the product with a stride is then int64)

Constraints:
  - every dimension (M, N, K, batch) < 2**31: indices, tile ids and TMA coordinates stay int32;
    only their products with strides widen.
  - `i` may be a tensor, a scalar or a constexpr (a block size); strides may be constexpr 1
    (Triton's specialisation of a unit stride) or int64 arguments (values >= 2**31).
"""
import triton
import triton.language as tl


@triton.jit
def wide(i, INT64_OFFSETS: tl.constexpr):
    """`i` as the left factor of an offset: int64 when INT64_OFFSETS, else unchanged (int32 code)."""
    if INT64_OFFSETS:
        i = tl.cast(i, tl.int64)
    return i
