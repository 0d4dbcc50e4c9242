"""The README's main command on a machine without a GPU: `gemmkit bench` says so, runs the
interpreter check and the static compile summary, and exits 0."""
import os
import subprocess
import sys

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the no-GPU behaviour of `gemmkit bench`")
def test_bench_without_gpu():
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "GEMMKIT_INTERPRET_ARCH")}
    r = subprocess.run([sys.executable, "-m", "gemmkit", "bench"], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "No GPU found" in r.stdout
    assert "interpreter check: ok" in r.stdout
    assert "static compile: ok" in r.stdout
    for arch in ("sm_90", "gfx942", "gfx950"):
        assert f"\n{arch}" in r.stdout
