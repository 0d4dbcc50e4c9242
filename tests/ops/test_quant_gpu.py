"""gemmkit.quant on the H200 (`pytest -m gpu tests/ops/test_quant_gpu.py`): the compiled quantizer
kernels against their torch references (bitwise, on the same device), and quantize -> GEMM end
to end against float64 on the dequantized operands. The interpreter covers the same kernels on
the CPU (tests/ops/test_quant.py); this is where the compiled code (PTX cvt.rn.satfinite) runs."""
import pytest
import torch

import gemmkit
import gemmkit.quant as Q
from gemmkit.reference import expand_block_scales

from _util import within_bound

pytestmark = pytest.mark.gpu
DEV = "cuda"
E4M3 = torch.float8_e4m3fn


def spread(M, K, dtype):
    mag = 10.0 ** (torch.rand(M, 1, device=DEV) * 6 - 3)
    return (torch.randn(M, K, device=DEV) * mag).to(dtype)


def assert_bitwise(a, b, what):
    a8, b8 = a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)
    bad = (a8 != b8).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} bytes differ, first at {bad[0].tolist()}"


QUANTIZERS = {
    "fp8_per_token": (lambda x: Q.quantize_fp8_per_token(x, E4M3), lambda x: Q.quantize_fp8_per_token_ref(x, E4M3)),
    "fp8_per_channel": (lambda x: Q.quantize_fp8_per_channel(x, E4M3),
                        lambda x: Q.quantize_fp8_per_channel_ref(x, E4M3)),
    "int8_per_token": (Q.quantize_int8_per_token, Q.quantize_int8_per_token_ref),
    "fp8_block_1x128": (lambda x: Q.quantize_fp8_blockwise(x, (1, 128), E4M3),
                        lambda x: Q.quantize_fp8_blockwise_ref(x, (1, 128), E4M3)),
    "fp8_block_128x128": (lambda x: Q.quantize_fp8_blockwise(x, (128, 128), E4M3),
                          lambda x: Q.quantize_fp8_blockwise_ref(x, (128, 128), E4M3)),
    "mxfp4": (Q.quantize_mxfp4, Q.quantize_mxfp4_ref),
}


@pytest.mark.parametrize("shape", [(1, 64), (17, 4096), (300, 7168), (4097, 512)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("name", QUANTIZERS)
def test_bitwise_vs_reference(name, dtype, shape):
    M, K = shape
    x = spread(M, K, dtype)
    x[0, 0] = 1e6 if dtype == torch.float32 else x[0, 0]  # a saturating-size value in one row
    q, s = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x)
    assert_bitwise(s, sr, "scale")
    assert_bitwise(q, qr, "q")


def test_zero_rows_and_blocks():
    x = spread(256, 512, torch.bfloat16)
    x[5] = 0
    x[128:, 128:256] = 0
    for name, (quant, ref) in QUANTIZERS.items():
        q, s = quant(x)
        qr, sr = ref(x)
        assert_bitwise(s, sr, f"{name} scale")
        assert_bitwise(q, qr, f"{name} q")
        assert torch.isfinite(s.float()).all()


# (row slice, column slice) of q that a NaN at x[4, 150] poisons, per quantizer (mxfp4: packed bytes of its group).
NAN_REGION = {"fp8_block_1x128": (slice(4, 5), slice(128, 256)), "fp8_block_128x128": (slice(0, 128), slice(128, 256)),
              "mxfp4": (slice(4, 5), slice(64, 80))}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("name", QUANTIZERS)
def test_nan_poisons_only_its_row_or_block(name, dtype):
    """A NaN: its row / block gets a NaN scale (mxfp4: byte 255) and q = 0 (bit pattern 0), with the GPUs' min / max,
    which drop NaN (a NaN reaching the clamp would come out as -QMAX: fp8 -448, int8 -127); every other element
    bitwise equal to the reference."""
    x = spread(200, 384, dtype)
    x[4, 150] = float("nan")
    q, s = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x)
    assert_bitwise(s, sr, "scale")
    assert_bitwise(q, qr, "q")
    region = NAN_REGION.get(name, (slice(4, 5), slice(None)))
    assert (q[region].contiguous().view(torch.uint8) == 0).all(), f"{name}: q of the NaN's row / block is not 0"
    s_flat = s.flatten()
    bad = (s_flat == 255) if name == "mxfp4" else torch.isnan(s_flat)
    assert int(bad.sum()) == 1, f"{name}: {int(bad.sum())} NaN scales (expected the NaN's own one)"


@pytest.mark.parametrize("M,N,K", [(1, 4096, 4096), (257, 1000, 2048), (4096, 4096, 7168)])
def test_quantize_then_gemm(M, N, K):
    """quantize_fp8_per_token / per_channel -> gemm_a8w8 and quantize_fp8_blockwise -> the
    block-scale GEMM: the result equals float64 on the dequantized operands (the GEMM's job),
    and lands near x @ w.T (the quantization's error)."""
    x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    exact = x.double() @ w.double().T
    qx, sx = Q.quantize_fp8_per_token(x)
    qw, sw = Q.quantize_fp8_per_channel(w)
    y = gemmkit.gemm_a8w8(qx, qw, sx, sw, out_dtype=torch.float32)
    deq = (qx.double() * sx.double()) @ (qw.double() * sw.double().view(-1, 1)).T
    assert ((y.double() - deq).norm() / deq.norm()).item() < 2**-12
    assert ((y.double() - exact).norm() / exact.norm()).item() < 2**-4
    bx, bsx = Q.quantize_fp8_blockwise(x, (1, 128))
    bw, bsw = Q.quantize_fp8_blockwise(w, (128, 128))
    y = gemmkit.gemm_a8w8_blockscale(bx, bw, bsx, bsw, out_dtype=torch.float32)
    deq = (bx.double() * expand_block_scales(bsx, (1, 128), bx.shape).double()) @ \
        (bw.double() * expand_block_scales(bsw, (128, 128), bw.shape).double()).T
    assert ((y.double() - deq).norm() / deq.norm()).item() < 2**-12
    assert ((y.double() - exact).norm() / exact.norm()).item() < 2**-4


GATED = {"fp8_per_token": (lambda h, a: Q.quantize_fp8_per_token_gated(h, a, E4M3), None),
         "int8_per_token": (lambda h, a: Q.quantize_int8_per_token_gated(h, a), None),
         "fp8_blockwise": (lambda h, a: Q.quantize_fp8_blockwise_gated(h, a, (1, 128), E4M3), (1, 128))}


@pytest.mark.parametrize("shape", [(1, 14336), (64, 7168), (300, 1000), (4097, 512)])
@pytest.mark.parametrize("act", Q.GATED_ACTIVATIONS)
@pytest.mark.parametrize("form", GATED)
def test_gated_forms_vs_reference(form, act, shape):
    """The compiled gated forms (act(gate) * up of h = [gate | up], quantized in one pass) against the reference
    (the product in float64 from h's values): scales within 2e-5 (the GPU's exp is approximate: 4e-7 failed), each
    element within the format's rounding (tests/ops/test_quant_gated.py has the same bound in the interpreter)."""
    from gemmkit.reference import activation_ref

    M, I = shape
    h = spread(M, 2 * I, torch.bfloat16)
    call, block = GATED[form]
    q, s = call(h, act)
    qr, sr = Q.quantize_gated_ref(h, act, form, E4M3)
    assert torch.allclose(s, sr, rtol=2e-5, atol=0)  # the amax element's product, through the GPU's approximate exp
    hd = h.double()
    v = activation_ref(hd[:, :I], act) * hd[:, I:]
    deq = Q.dequantize_ref(q, s, block).double()
    scale = Q.dequantize_ref(torch.ones_like(q, dtype=torch.float32), s, block).double()
    rel = 0.0 if form == "int8_per_token" else 2.0**-4
    # + 1e-4 |v|: the GPU's exp (ex2.approx) inside gelu's erfc / silu's sigmoid moves v by up to ~1e-5 relative
    # where the argument is large (erfc(a) = t exp(p - a^2)), which moves an element sitting on a rounding boundary
    # to the other side (3-4 of 48 gelu cases failed at 1e-6 and 1e-5); a wrong step is still far outside
    bound = rel * v.abs() + (0.5 if form == "int8_per_token" else 2.0**-9) * scale + 1e-4 * v.abs() + 1e-30
    excess = (deq - v).abs() - bound
    r, c = divmod(int(excess.argmax()), I)
    assert (excess <= 0).all(), (f"{form} {act}: {int((excess > 0).sum())} elements over the bound, worst v "
                                 f"{v[r, c].item():.6g} deq {deq[r, c].item():.6g} scale {scale[r, c].item():.6g} "
                                 f"gate {h[r, c].item():.6g} up {h[r, I + c].item():.6g}")


@pytest.mark.parametrize("scheme", ["fp8", "fp8_block"])
def test_quant_gated_mlp_on_the_gpu(scheme):
    """gemmkit.nn.QuantGatedMLP (Llama-3-8B's MLP shape), each stage against float64: h = gate_up(x) from x as the
    reference quantizer rounds it (norm-wise, the fp8 GEMMs' bound), y from h's gated quantization (checked against
    its reference in test_gated_forms_vs_reference), and y within the fp8 rounding of the unfused converted MLP."""
    from gemmkit import nn as gnn
    from gemmkit.nn.linear import _quantized_input

    K, I = 4096, 14336
    mlp = torch.nn.Module()
    mlp.gate_proj, mlp.up_proj = (torch.nn.Linear(K, I, bias=False, device=DEV, dtype=torch.bfloat16) for _ in "gu")
    mlp.down_proj = torch.nn.Linear(I, K, bias=False, device=DEV, dtype=torch.bfloat16)
    mlp.act_fn = torch.nn.SiLU()
    mlp.forward = lambda t: mlp.down_proj(mlp.act_fn(mlp.gate_proj(t)) * mlp.up_proj(t))
    fused = gnn.QuantGatedMLP.from_mlp(mlp, scheme)
    x = torch.randn(2, 333, K, device=DEV, dtype=torch.bfloat16)
    with torch.no_grad():
        y = fused(x)
        h = fused.gate_up._gemm(x.reshape(-1, K), torch.bfloat16, None)
        xd = _quantized_input(fused.gate_up, x.reshape(-1, K)).double()
        h_ref = xd @ gnn.dequantize_weight(fused.gate_up).double().T
        ok, msg = within_bound(h, h_ref, torch.bfloat16)
        assert ok, f"gate_up: {msg}"
        xq, xs = fused.down.quantize_gated(h, "silu")
        block = (1, 128) if scheme == "fp8_block" else None
        want = Q.dequantize_ref(xq, xs, block).double() @ gnn.dequantize_weight(fused.down).double().T
        rel = ((y.reshape(-1, K).double() - want).norm() / want.norm()).item()
        assert rel < 2.0**-8, rel
        ref = mlp(x).double()
        assert ((y.double() - ref).norm() / ref.norm()).item() < 0.08
