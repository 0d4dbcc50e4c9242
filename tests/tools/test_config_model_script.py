"""benchmarks/config_model.py's CPU parts: which model families are held out (no table or rule fitted on them), the
rows it times, and the roofline it reports each row against."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import config_model as CM  # noqa: E402

from gemmkit import arch  # noqa: E402
from gemmkit.bench import ops as bench_ops  # noqa: E402


def test_held_out_families_are_marked_and_not_in_any_shape_table():
    held = CM.held_out_models()
    assert {"gpt-oss-120b", "mistral-large-2", "qwen3-32b", "gemma2-27b", "phi4-14b"} <= set(held)
    # no shape file was measured for a held-out layer (a table tuned on it would make the row not held out)
    root = os.path.join(os.path.dirname(bench_ops.__file__), "..", "configs")
    names = {f for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)) for f in os.listdir(os.path.join(root, d))}
    tuned = {f"A16W16-N={n}-K={k}.json" for layers in held.values() for n, k in layers.values()} & names
    assert not tuned, f"shape files exist for held-out layers: {sorted(tuned)}"


def test_rows_cover_every_layer_at_every_m():
    args = CM.parse(["-m", "128,4096"])
    rows = CM.shapes(args)
    layers = sum(len(v) for v in CM.held_out_models().values())
    assert len(rows) == 2 * layers + len(CM.ODD)
    assert len(CM.shapes(CM.parse(["-m", "128", "--no-odd"]))) == layers


@pytest.mark.parametrize("op_name, dtype", [("a16w16", "bf16"), ("a8w8", "fp8")])
def test_roofline_is_the_longer_of_compute_and_memory(op_name, dtype):
    h200 = arch.ARCHS["sm_90"]
    op = bench_ops.get(op_name)
    M, N, K = 8192, 8192, 8192  # compute-bound: 2 M N K / peak
    assert CM.roofline_us(h200, M, N, K, dtype, op) == pytest.approx(2 * M * N * K / (h200.peak_tflops[dtype] * 1e6))
    M = 1  # memory-bound: the weight's bytes / bandwidth
    flops, nbytes = op.work(M, N, K, dtype)
    assert CM.roofline_us(h200, M, N, K, dtype, op) == pytest.approx(nbytes / (h200.hbm_gbps * 1e3))
