"""Epilogue: what happens to an fp32 accumulator tile before it is stored. Written once.

    acc (BLOCK_M x BLOCK_N, fp32)
      -> + bias[offs_n]            (HAS_BIAS; bias read once per tile, masked at N)
      -> activation                (ACTIVATION: "none" | "relu" | "gelu" | "gelu_tanh" | "silu")
      -> cast to the output dtype, store (pointer store here; TMA store in the TMA kernel)

All arithmetic stays in fp32 until the cast. The activations match torch:
  relu(x)      = max(x, 0)
  gelu(x)      = x/2 * (1 + erf(x / sqrt 2))                      (F.gelu)
  gelu_tanh(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  (F.gelu(approximate="tanh"))
  silu(x)      = x * sigmoid(x)
tanh is written as 2*sigmoid(2u) - 1, which saturates cleanly to +-1 for large |u|.

Constraints:
  - ACTIVATION is a constexpr string from ACTIVATIONS; anything else is a compile error.
  - bias is a contiguous (N,) vector; its dtype is the op's input dtype.
"""
import triton
import triton.language as tl

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def activation(x, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu":
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    elif ACTIVATION == "gelu_tanh":
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        x = 0.5 * x * (1.0 + (2.0 * _sigmoid(2.0 * u) - 1.0))
    elif ACTIVATION == "silu":
        x = x * _sigmoid(x)
    else:
        tl.static_assert(ACTIVATION == "none", "unknown ACTIVATION")
    return x


@triton.jit
def bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    """acc + bias (broadcast over rows), then the activation; fp32 in, fp32 out."""
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc = acc + bias.to(tl.float32)[None, :]
    return activation(acc, ACTIVATION)


@triton.jit
def store_tile(y_ptr, acc, offs_m, offs_n, M, N, stride_ym, stride_yn):
    """Masked pointer store of an epilogue-processed tile, cast to y's element type."""
    ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :] * stride_yn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
