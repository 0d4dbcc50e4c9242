"""Tuning on a shape's first call (GEMMKIT_TUNE=on; tune/online.py) on the GPU (`pytest -m gpu`).

Shapes no shape file serves. The first call tunes within its budget (plus its candidates' compiles), stores one
entry under the call's M bucket, and returns the right result (NaN-poisoned `out=`, every element against the
float64 reference); later calls and another process serve the entry without tuning; a call inside a CUDA graph
capture tunes nothing.
"""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import gemmkit
from gemmkit import callplan, configs
from gemmkit.configs import usercache
from gemmkit.ops import _common as C

from _util import ROOT, check_8bit, check_a16w16, q8, scales

pytestmark = pytest.mark.gpu
DEV = torch.device("cuda")
BUDGET_S = 10
COMPILE_ALLOWANCE_S = 120  # about 20 candidates compiled on the machine's cores before the budget's timing


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMKIT_CACHE_DIR", str(tmp_path))
    usercache.forget()
    gemmkit.set_tuning("on", budget_s=BUDGET_S)
    yield tmp_path
    gemmkit.set_tuning(None)
    usercache.forget()
    callplan.clear()


def entries():
    path = usercache.store_path(C.target_for(DEV).arch, C.device_name(DEV))
    return json.loads(path.read_text())["entries"] if path.exists() else {}


def untuned(op, M, N, K):
    assert not configs.tuned(configs.serve(op, C.target_for(DEV), M, N, K)[1]), "pick a shape without a shape file"


def test_a16w16_first_call_tunes_then_serves():
    M, N, K = 200, 3000, 2000
    untuned("a16w16", M, N, K)
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    t0 = time.monotonic()
    gemmkit.gemm_a16w16(x, w, out=out)
    torch.cuda.synchronize()
    first = time.monotonic() - t0
    check_a16w16(out, x, w)
    e = entries()
    assert list(e) == ["a16w16 bf16 M=256 N=3000 K=2000"]
    entry = e["a16w16 bf16 M=256 N=3000 K=2000"]
    assert entry["timed"] >= 2 and entry["served_ms"] > 0 and entry["ms"] <= entry["served_ms"]  # a comparison made
    assert first <= BUDGET_S + COMPILE_ALLOWANCE_S
    # the call runs what the store holds: the entry's config, or the tables' where it was kept
    cfg, source = C.resolve_config("a16w16", "", C.target_for(DEV), M, N, K, tune_as=("a16w16", "bf16", DEV))
    if entry["config"] is None:
        assert "kept by the tuning cache" in source
    else:
        assert cfg == configs.validate_config(entry["config"]) and "tuning cache" in source
    # later calls (and other M of the bucket) tune nothing: the store is not written again
    path = usercache.store_path(C.target_for(DEV).arch, C.device_name(DEV))
    stamp = path.stat().st_mtime_ns
    for m in (M, 129, 256):
        xm = x[:m] if m <= M else torch.randn(m, K, device=DEV, dtype=torch.bfloat16)
        y = torch.full((m, N), float("nan"), device=DEV, dtype=torch.bfloat16)
        gemmkit.gemm_a16w16(xm, w, out=y)
        check_a16w16(y, xm, w)
    assert len(entries()) == 1 and path.stat().st_mtime_ns == stamp
    # another process reads the entry under GEMMKIT_TUNE=cached
    code = ("import torch, gemmkit; from gemmkit.ops import _common as C; d = torch.device('cuda'); "
            f"print(C.resolve_config('a16w16', '', C.target_for(d), {M}, {N}, {K}, tune_as=('a16w16', 'bf16', d))[1])")
    env = dict(os.environ, GEMMKIT_TUNE="cached", PYTHONPATH=str(ROOT))
    got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert ("kept by the tuning cache" if entry["config"] is None else "tuning cache") in got.stdout


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_fp8_first_call_tunes(op):
    M, N, K = 48, 2560, 3072
    untuned(op, M, N, K)
    x, w = q8(M, K, dtype=torch.float8_e4m3fn, device="cuda"), q8(N, K, dtype=torch.float8_e4m3fn, device="cuda")
    if op == "a8w8":
        xs, ws = scales(M, 1, device="cuda"), scales(1, N, device="cuda")
        call = lambda out: gemmkit.gemm_a8w8(x, w, xs, ws, out=out)  # noqa: E731
    else:
        xs, ws = scales(M, K // 128, device="cuda"), scales(N // 128, K // 128, device="cuda")
        call = lambda out: gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out)  # noqa: E731
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    call(out)
    check_8bit(out, x, w, xs, ws, block=None if op == "a8w8" else (128, 128))
    assert list(entries()) == [f"{op} fp8 M=64 N={N} K={K}"]


def test_graph_capture_tunes_nothing():
    M, N, K = 96, 2880, 1440
    untuned("a16w16", M, N, K)
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    gemmkit.set_tuning("off")
    gemmkit.gemm_a16w16(x, w)  # compiled outside the capture
    gemmkit.set_tuning("on", budget_s=BUDGET_S)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemmkit.gemm_a16w16(x, w, out=out)
    graph.replay()
    torch.cuda.synchronize()
    check_a16w16(out, x, w)
    assert entries() == {}
