"""gemmkit.quant on the H200 (`pytest -m gpu tests/ops/test_quant_gpu.py`): the compiled quantizer
kernels against their torch references (bitwise, on the same device), and quantize -> GEMM end
to end against float64 on the dequantized operands. The interpreter covers the same kernels on
the CPU (tests/ops/test_quant.py); this is where the compiled code (PTX cvt.rn.satfinite) runs."""
import pytest
import torch

import gemmkit
import gemmkit.quant as Q
from gemmkit.reference import expand_block_scales

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
