"""Float64 torch references, shared by tests and benchmarks."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def activation_ref(v: torch.Tensor, activation: str | None) -> torch.Tensor:
    """The activations of torch.nn.functional, written without cancellation.

    F.gelu computes x/2 * (1 + erf(x/sqrt 2)) and the tanh form x/2 * (1 + tanh(u)):
    in the negative tail 1 + erf / 1 + tanh cancel, so even in float64 the result
    loses its digits (F.gelu(-10., approximate="tanh") is exactly 0; the true value
    is about -1.6e-37). Here the same functions use erfc(-x/sqrt 2) and
    1 + tanh(u) = 2 sigmoid(2u), exact identities, so the reference stays accurate
    to float64 rounding everywhere.
    """
    if activation in (None, "none"):
        return v
    if activation == "relu":
        return torch.relu(v)
    if activation == "gelu":
        return 0.5 * v * torch.special.erfc(-v * 0.7071067811865476)
    if activation == "gelu_tanh":
        u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
        return v * torch.sigmoid(2.0 * u)
    if activation == "silu":
        return F.silu(v)
    raise ValueError(f"activation: unknown {activation!r}")


def gemm_a16w16_ref(x, w, bias=None, activation=None) -> torch.Tensor:
    """act(x @ w.T + bias) in float64 on the CPU, shape (..., N)."""
    x64 = x.detach().to("cpu", torch.float64)
    y = x64.reshape(x.shape[:-1].numel(), x.shape[-1]) @ w.detach().to("cpu", torch.float64).T
    if bias is not None:
        y = y + bias.detach().to("cpu", torch.float64)
    return activation_ref(y, activation).reshape(tuple(x.shape[:-1]) + (w.shape[0],))


def gemm_a8w8_ref(x, w, x_scale, w_scale, bias=None) -> torch.Tensor:
    """(x @ w.T) * x_scale * w_scale + bias in float64 on the CPU (8-bit values are exact in float64)."""
    M, N = x.shape[0], w.shape[0]
    y = _f64(x) @ _f64(w).T
    y = y * _f64(x_scale).reshape(M, 1) * _f64(w_scale).reshape(1, N)
    return y + _f64(bias) if bias is not None else y


def expand_block_scales(scale, block_shape, shape) -> torch.Tensor:
    """Per-element scales of a (rows, cols) tensor from per-block ones (one per block_shape block;
    ragged edge blocks allowed). Same device and dtype as `scale`: the one home of this expansion
    (float64 references here, fp32 checks on the GPU, gemmkit.quant's references)."""
    br, bc = block_shape
    return scale.repeat_interleave(br, 0)[:shape[0]].repeat_interleave(bc, 1)[:, :shape[1]]


def dequantize_blockwise_ref(q, scale, block_shape) -> torch.Tensor:
    """q * scale broadcast over (rows, cols) blocks of block_shape, float64 (ragged edge blocks allowed)."""
    return _f64(q) * expand_block_scales(_f64(scale), block_shape, q.shape)


def gemm_a8w8_blockscale_ref(x, w, x_scale, w_scale, block_shape=(128, 128)) -> torch.Tensor:
    """x @ w.T with x dequantized by (1, bk) blocks and w by (bn, bk) blocks, float64 on the CPU."""
    bn, bk = block_shape
    return dequantize_blockwise_ref(x, x_scale, (1, bk)) @ dequantize_blockwise_ref(w, w_scale, (bn, bk)).T


def _f64(t):
    return t.detach().to("cpu", torch.float64)


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf when out has a NaN/Inf (an unwritten or broken element)."""
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        return float("inf")
    denom = r.norm().item()
    num = (o - r).norm().item()
    return num / denom if denom > 0 else num
