"""Epilogue: what happens to an accumulator tile before it is stored. Written once.

    acc (BLOCK_M x BLOCK_N, fp32; int32 for int8 GEMMs)
      -> * x_scale[offs_m] * w_scale[offs_n]   (SCALE == "rowcol": per-token x per-channel, fp32)
      -> + bias[offs_n]            (HAS_BIAS; bias read once per tile, masked at N)
      -> activation                (ACTIVATION: "none" | "relu" | "gelu" | "gelu_tanh" | "silu")
      -> cast to the output dtype, store (pointer store here; TMA store in the TMA kernel)

All arithmetic stays in fp32 until the cast. The activations are torch's:
  relu(x)      = max(x, 0)
  gelu(x)      = x/2 * (1 + erf(x / sqrt 2))                      (F.gelu)
  gelu_tanh(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  (F.gelu(approximate="tanh"))
  silu(x)      = x * sigmoid(x)
written so that no step cancels (each result has a small *relative* error,
also in the negative tails where the value is tiny):
  gelu:      1 + erf(z) = erfc(-z), with erfc from a rational-exponential fit
             of fractional error < 1.2e-7 for all z (Chebyshev fit, as in
             Numerical Recipes' erfcc); for z >= 0, 2 - erfc(z).
             (x/2 * (1 + tl.erf(z)) loses all digits below x ~ -4 in fp32.)
  gelu_tanh: 1 + tanh(u) = 2 sigmoid(2u), so gelu_tanh(x) = x * sigmoid(2u).

Constraints:
  - ACTIVATION is a constexpr string from ACTIVATIONS; anything else is a compile error.
  - bias is a contiguous (N,) vector (any float dtype; added in fp32).
  - SCALE == "rowcol": x_scale a contiguous (M,) and w_scale a contiguous (N,) fp32 vector.
  - store_tile: row offsets int64; column offsets (offs_n * stride_yn) int32 unless INT64_OFFSETS
    (_offsets.py; the host sets it when a span reaches 2**31 elements).
"""
import triton
import triton.language as tl

from ._offsets import wide

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _erfc_abs(a):
    """erfc(a) for a >= 0, fractional error < 1.2e-7."""
    t = 1.0 / (1.0 + 0.5 * a)
    p = 0.17087277
    p = p * t - 0.82215223
    p = p * t + 1.48851587
    p = p * t - 1.13520398
    p = p * t + 0.27886807
    p = p * t - 0.18628806
    p = p * t + 0.09678418
    p = p * t + 0.37409196
    p = p * t + 1.00002368
    p = p * t - 1.26551223
    return t * tl.exp(p - a * a)


@triton.jit
def activation(x, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu":
        z = x * 0.7071067811865476
        e = _erfc_abs(tl.abs(z))  # erfc(|z|)
        x = 0.5 * x * tl.where(z < 0, e, 2.0 - e)  # 1 + erf(z)
    elif ACTIVATION == "gelu_tanh":
        u = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        x = x * _sigmoid(2.0 * u)
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
def apply_scales(acc, xs_ptr, wsc_ptr, offs_m, offs_n, M, N, SCALE: tl.constexpr):
    """fp32 acc, times x_scale[m] * w_scale[n] when SCALE == "rowcol". Linear in acc, so a split-K
    partial sum may be scaled before the splits are added."""
    acc = acc.to(tl.float32)
    if SCALE == "rowcol":
        xs = tl.load(xs_ptr + offs_m, mask=offs_m < M, other=0.0)
        ws = tl.load(wsc_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc = acc * xs[:, None] * ws[None, :]
    return acc


@triton.jit
def epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N,
             SCALE: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr):
    """The whole epilogue of a finished tile: scales (SCALE == "rowcol"), bias, activation; fp32 out."""
    acc = apply_scales(acc, xs_ptr, wsc_ptr, offs_m, offs_n, M, N, SCALE)
    return bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)


@triton.jit
def store_tile(y_ptr, acc, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS: tl.constexpr = False,
               own=None):
    """Masked pointer store of an epilogue-processed tile, cast to y's element type; `own` (a mask of the tile's
    shape, or None): store only where it is set too."""
    ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + wide(offs_n, INT64_OFFSETS)[None, :] * stride_yn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if own is not None:
        mask = mask & own
    tl.store(ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)
