"""Helpers shared by the tests: fresh inputs, poisoned outputs, tolerances."""
import torch

# Norm-wise bound on ||out - ref|| / ||ref|| against the float64 reference.
# The inputs are exact in float64, accumulation is fp32 (error ~K * 2**-24,
# negligible at test sizes), so the error is the final rounding to out_dtype:
# at most one half-ulp per element, i.e. 2**-9 (bf16), 2**-12 (fp16), 2**-25
# (fp32) relative. The bounds allow 2x that plus fp32 accumulation slack.
TOL = {torch.bfloat16: 2**-8, torch.float16: 2**-10, torch.float32: 2e-6}


def randn(*shape, dtype, device="cpu", seed=None):
    g = torch.Generator(device="cpu")
    g.manual_seed(torch.seed() if seed is None else seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


def poisoned(shape, dtype, device="cpu"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)

# Half the smallest subnormal of each output dtype: a result below it rounds to zero,
# which no relative bound covers (a single silu(-20) ~ -4e-8 is 0 in fp16).
UNDERFLOW = {torch.bfloat16: 2.0**-134, torch.float16: 2.0**-25, torch.float32: 2.0**-150}


def within_bound(out, ref, out_dtype):
    """(ok, message): ||out - ref|| <= TOL * ||ref|| + UNDERFLOW * sqrt(numel), in float64; NaN never passes."""
    o, r = out.detach().to("cpu", torch.float64), ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        return False, "non-finite output (an element never written?)"
    diff, norm = (o - r).norm().item(), r.norm().item()
    bound = TOL[out_dtype] * norm + UNDERFLOW[out_dtype] * r.numel() ** 0.5
    return diff <= bound, f"||out - ref|| = {diff:.3g} > {bound:.3g} (||ref|| = {norm:.3g}, rel {diff / max(norm, 1e-300):.3g})"


def q8(*shape, dtype, device="cpu"):
    """Fresh random 8-bit operands spread over the format (int8: every value; fp8: normal numbers
    and subnormals), for the 8-bit GEMM tests."""
    if dtype == torch.int8:
        g = torch.Generator().manual_seed(torch.seed())
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8).to(device)
    return (randn(*shape, dtype=torch.float32) * 8).to(device=device, dtype=dtype)


def scales(*shape, device="cpu"):
    """Fresh positive fp32 scales of a size that keeps 8-bit products in range."""
    return ((randn(*shape, dtype=torch.float32).abs() + 0.25) / 64).to(device)
