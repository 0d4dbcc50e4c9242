"""benchmarks/tp.py --smoke: the tensor-parallel benchmark end to end on 2 CPU ranks (torchrun, gloo, interpreter),
so the script a 2-GPU run starts is known to work before device time is spent on it."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.interpreter
def test_tp_smoke_writes_every_mode(tmp_path):
    out = tmp_path / "tp.json"
    env = {**os.environ, "PYTHONPATH": ROOT, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           os.path.join(ROOT, "benchmarks", "tp.py"), "--smoke", "--M", "16", "--dtypes", "bf16,fp8",
                           "--iters", "1", "--json", str(out)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["device"].startswith("2 x cpu") and result["git_sha"]
    rows = result["rows"]
    assert len(rows) == 2 * (3 * 4 + 2 * 3)  # dtypes x (blocks x modes + the blocks that reduce x decomposition)
    assert {r["mode"] for r in rows if r["label"].endswith("qkv")} == {"one_gpu", "torch_seq", "sequential",
                                                                        "overlapped"}
    for r in rows:
        assert "error" not in r, r
        assert set(r) >= {"label", "M", "dtype", "mode", "ms", "one_gpu_ms", "scaling"}, r
        if r["mode"] in ("sequential", "overlapped"):
            assert r["rel_err"] < (0.02 if r["dtype"] == "bf16" else 0.1), r  # against one GPU's output
