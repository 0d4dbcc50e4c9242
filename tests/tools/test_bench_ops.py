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


def test_write_stamped(tmp_path, monkeypatch):
    """The benchmark scripts' result file: the stamp (device, versions, date, git sha), the method and the rows."""
    import json

    import torch

    from gemmkit.bench import write_stamped

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setenv("GEMMKIT_GIT_SHA", "abc1234")
    path = tmp_path / "r.json"
    out = write_stamped(str(path), "CUDA graphs", [{"M": 1}])
    assert json.loads(path.read_text()) == out
    assert (out["device"], out["git_sha"], out["method"], out["rows"]) == ("NVIDIA H200", "abc1234", "CUDA graphs",
                                                                           [{"M": 1}])
    assert out["torch"] == torch.__version__ and out["date"] and out["triton"] and "cuda" in out
    assert write_stamped(None, "m", [])["rows"] == []  # no path: nothing written
    from gemmkit.bench import stamp  # what the benchmark scripts open their files with

    assert stamp() == {k: out[k] for k in ("device", "torch", "triton", "cuda", "date", "git_sha")}
