"""gemmkit/bench/ops.py's vendor inputs: the layouts the vendor's call takes (its call needs a GPU: the CPU checks
the shapes and strides torch._scaled_mm validates)."""
import pytest

from gemmkit.bench import ops as bench_ops


@pytest.mark.parametrize("K", [2880, 4095, 4096, 7168, 512])
def test_blockwise_vendor_weight_scales_are_cublas_128x128_layout(K):
    """torch._scaled_mm's 128 x 128 weight scales: size (ceil(K/128), N/128) exactly, outer stride a multiple of 4
    (16 bytes). With the padding's rows in the view K = 2880 (23 blocks) was refused at every N; with this view
    torch 2.11 takes it at N = 128 (GPT-OSS's router) and still refuses it at larger N (docs/PERF.md)."""
    N = 640
    x, w, xs, ws, ws_vendor, pad_m = bench_ops.get("a8w8_blockscale").make_inputs(64, N, K, "fp8", "cpu")
    kb, nb = -(-K // 128), N // 128
    assert tuple(ws_vendor.shape) == (kb, nb)
    assert ws_vendor.stride(0) == 1 and ws_vendor.stride(1) % 4 == 0 and ws_vendor.stride(1) >= kb
    assert (ws_vendor == ws.t()).all()
    assert tuple(xs.shape) == (64, kb) and xs.stride() == (1, 64)
