"""Float64 torch references, shared by tests and benchmarks."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def activation_ref(v: torch.Tensor, activation: str | None) -> torch.Tensor:
    if activation in (None, "none"):
        return v
    if activation == "relu":
        return torch.relu(v)
    if activation == "gelu":
        return F.gelu(v)
    if activation == "gelu_tanh":
        return F.gelu(v, approximate="tanh")
    if activation == "silu":
        return F.silu(v)
    raise ValueError(f"activation: unknown {activation!r}")


def gemm_a16w16_ref(x, w, bias=None, activation=None) -> torch.Tensor:
    """act(x @ w.T + bias) in float64 on the CPU, shape (..., N)."""
    x64 = x.detach().to("cpu", torch.float64)
    y = x64.reshape(-1, x.shape[-1]) @ w.detach().to("cpu", torch.float64).T
    if bias is not None:
        y = y + bias.detach().to("cpu", torch.float64)
    return activation_ref(y, activation).reshape(tuple(x.shape[:-1]) + (w.shape[0],))


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf when out has a NaN/Inf (an unwritten or broken element)."""
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        return float("inf")
    denom = r.norm().item()
    num = (o - r).norm().item()
    return num / denom if denom > 0 else num
