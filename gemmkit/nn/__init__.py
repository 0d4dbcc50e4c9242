"""gemmkit.nn: torch.nn layers on gemmkit's GEMMs, and `convert` to put them into a model in place.

    from gemmkit import nn as gnn
    layer = gnn.Fp8Linear.from_linear(linear)            # or gnn.from_linear(linear, "fp8")
    report = gnn.convert(model, "bf16", fuse_mlp=True)   # every nn.Linear (+ gated MLPs) in place; print(report)

Schemes (gemmkit/nn/linear.py): "bf16" / "fp16" (Linear: an nn.Linear subclass on gemm_a16w16 with a backward
through gemmkit's GEMMs), "fp8" (Fp8Linear: per-token dynamic activations x per-channel weights, gemm_a8w8),
"fp8_block" (Fp8BlockLinear: 1x128 x 128x128 block scales, DeepSeek-V3's layout, gemm_a8w8_blockscale), "int8"
(Int8Linear), "mxfp4" (MXFP4Linear, gemm_afp4wfp4; emulated on Hopper, and its repr says so). The quantized layers
are inference-only and keep their quantized weights and scales as buffers (state_dict round-trips them). Fused
modules (gemmkit/nn/fused.py): GatedMLP (ffn_gated), QuantGatedMLP (fp8 / fp8_block / int8: the activation fused
into the down projection's quantization) and MLA's kv_b split / cat (gemm_split_cat). Tensor parallel
(gemmkit/nn/parallel.py, over torch.distributed): ColumnParallelLinear, RowParallelLinear, ParallelGatedMLP, their
collectives overlapped with the GEMMs chunk by chunk. The layers sit above gemmkit.ops: they call the public ops and
quantizers only.
"""
from .convert import ConvertReport, convert
from .fused import GatedMLP, QuantGatedMLP
from .parallel import ColumnParallelLinear, ParallelGatedMLP, RowParallelLinear
from .linear import (SCHEMES, Fp8BlockLinear, Fp8Linear, Int8Linear, Linear, MXFP4Linear, dequantize_weight,
                     from_linear, linear_ref, why_not)

__all__ = ["Linear", "Fp8Linear", "Fp8BlockLinear", "Int8Linear", "MXFP4Linear", "GatedMLP", "QuantGatedMLP",
           "SCHEMES", "convert", "ConvertReport", "from_linear", "why_not", "linear_ref", "dequantize_weight",
           "ColumnParallelLinear", "RowParallelLinear", "ParallelGatedMLP"]
