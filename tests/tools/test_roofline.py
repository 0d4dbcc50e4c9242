"""gemmkit bench --roofline (gemmkit/bench/roofline.py): the floor's arithmetic, and its two measuring kernels run in
the interpreter (the timing itself needs a GPU: the CPU checks what it can)."""
import pytest
import torch

from gemmkit import launcher
from gemmkit.bench import roofline as R

PEAKS = R.Peaks(dense_tflops=800.0, dense_source="vendor", read_gbps=4000.0, min_ms=0.004)


@pytest.mark.parametrize("flops, nbytes, want", [
    (2 * 8192**3, 3 * 8192**2 * 2, 2 * 8192**3 / 800e9),  # compute-bound: flops at the dense peak
    (2 * 1 * 8192 * 8192, 8192 * 8192 * 2, 8192 * 8192 * 2 / 4000e6),  # decode: the weight bytes at the read rate
    (2 * 16 * 64 * 64, 2 * (16 * 64 + 64 * 64), 0.004),  # tiny: one kernel's time
])
def test_floor_is_the_binding_limit(flops, nbytes, want):
    assert R.floor_ms(flops, nbytes, PEAKS) == pytest.approx(want)
    assert PEAKS.floor_ms(flops, nbytes) == R.floor_ms(flops, nbytes, PEAKS)


@pytest.mark.interpreter
@pytest.mark.parametrize("n, chunk, block", [(10_000, 4096, 512), (8192, 8192, 1024), (1, 4096, 1024)])
def test_stream_read_reads_every_element_once(n, chunk, block):
    src = torch.randn(n).to(torch.bfloat16)
    out = torch.full((-(-n // chunk),), float("nan"))
    launcher.launch(R.stream_read, (out.numel(),), src, out, n, CHUNK=chunk, BLOCK=block)
    want = src.float().view(-1)
    for p in range(out.numel()):
        assert out[p].item() == pytest.approx(want[p * chunk:(p + 1) * chunk].double().sum().item(), rel=1e-5,
                                              abs=1e-3)
    flag = torch.zeros(1)
    launcher.launch(R.one_store, (1,), flag)
    assert flag.item() == 1.0
