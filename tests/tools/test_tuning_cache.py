"""The tuning cache (configs/usercache.py) on the CPU: modes, the store file, which calls it serves.

Tuning itself times candidates on a GPU (tests/ops/test_tuning_gpu.py); here the store is written by
usercache.record, as the tuner writes it, and read back by the ops' calls in the interpreter (device
'interpreter'): an entry's config must be what the call runs (its kernel launched, its result right), and only
where the mode, the shape and the call allow it.
"""
import json

import pytest
import torch

import gemmkit
from gemmkit import callplan, configs
from gemmkit.configs import usercache
from gemmkit.ops import _common as C

from _util import randn

CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("GEMMKIT_TUNE", raising=False)
    monkeypatch.delenv("GEMMKIT_TUNE_BUDGET_S", raising=False)
    usercache.forget()
    callplan.clear()
    yield tmp_path
    gemmkit.set_tuning(None)
    usercache.forget()
    callplan.clear()


def served(op, M, N, K):
    return configs.serve(op, C.target_for(CPU), M, N, K)


def pointer_config(op, M, N, K):
    """The tables' config for the shape with TMA off: another kernel (gemm_kernel), so a launch count tells
    which config a call ran."""
    cfg, _ = served(op, M, N, K)
    return {k: v for k, v in cfg.items() if k not in ("backend", "swap_ab")} | {"tma": False}


def kernels_of(launches, fn):
    before = dict(launches)
    fn()
    return {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}


def test_modes_and_budget(monkeypatch):
    assert usercache.mode() == "off" and usercache.budget_s() == usercache.DEFAULT_BUDGET_S
    monkeypatch.setenv("GEMMKIT_TUNE", "Cached")
    assert usercache.mode() == "cached"
    monkeypatch.setenv("GEMMKIT_TUNE_BUDGET_S", "12.5")
    assert usercache.budget_s() == 12.5
    gemmkit.set_tuning("on", budget_s=3)
    assert usercache.mode() == "on" and usercache.budget_s() == 3.0
    gemmkit.set_tuning(None)
    assert usercache.mode() == "cached"
    for raw, m in (("1", "on"), ("TRUE", "on"), ("0", "off"), ("false", "off"), ("", "off"), (" On ", "on")):
        monkeypatch.setenv("GEMMKIT_TUNE", raw)
        assert usercache.mode() == m
    monkeypatch.setenv("GEMMKIT_TUNE", "yes")
    with pytest.raises(configs.ConfigError, match=r"GEMMKIT_TUNE: expected one of off, cached, on \(or 1 / 0\), "
                                                  "got 'yes'"):
        usercache.mode()
    monkeypatch.setenv("GEMMKIT_TUNE_BUDGET_S", "0")
    with pytest.raises(configs.ConfigError, match="GEMMKIT_TUNE_BUDGET_S: expected a positive number"):
        usercache.budget_s()
    with pytest.raises(ValueError, match="mode: expected one of off, cached, on or None, got 'always'"):
        gemmkit.set_tuning("always")
    with pytest.raises(ValueError, match="budget_s: expected a positive number"):
        gemmkit.set_tuning("on", budget_s=-1)


@pytest.mark.parametrize("M,bucket", [(1, 1), (2, 2), (3, 4), (17, 32), (64, 64), (65, 128), (4095, 4096),
                                      (4097, 8192)])
def test_m_bucket(M, bucket):
    assert usercache.m_bucket(M) == bucket


def test_store_round_trip(store):
    cfg = pointer_config("a16w16", 17, 48, 64)
    path = usercache.record("a16w16", "bf16", "sm_90", "NVIDIA H200", 17, 48, 64, cfg, ms=0.01, served_ms=0.02)
    assert path.parent == store / "tuned" / "sm_90" and path.name.startswith("NVIDIA_H200-triton")
    raw = json.loads(path.read_text())
    assert raw["format"] == 1 and raw["device"] == "NVIDIA H200" and raw["arch"] == "sm_90"
    assert set(raw["entries"]) == {"a16w16 bf16 M=32 N=48 K=64"}
    usercache.record("a16w16", "bf16", "sm_90", "NVIDIA H200", 20, 48, 128, None, ms=0.01, served_ms=0.01)
    usercache.forget()  # another process: read from the file
    got, source = usercache.lookup("a16w16", "bf16", "sm_90", "NVIDIA H200", 32, 48, 64)
    assert got == configs.validate_config(cfg) and str(path) in source
    assert usercache.lookup("a16w16", "bf16", "sm_90", "NVIDIA H200", 17, 48, 128) is usercache.KEEP
    for other in (("a16w16", "fp16", "sm_90", "NVIDIA H200", 17, 48, 64),  # another dtype
                  ("a16w16", "bf16", "sm_90", "NVIDIA H100 80GB HBM3", 17, 48, 64),  # another device
                  ("a16w16", "bf16", "sm_90", "NVIDIA H200", 33, 48, 64),  # another M bucket
                  ("a8w8", "bf16", "sm_90", "NVIDIA H200", 17, 48, 64)):  # another op
        assert usercache.lookup(*other) is None


def test_broken_store_is_ignored_with_a_warning(store):
    """A file that is not a store, or an entry this gemmkit cannot run (another version sharing the directory),
    never fails a call: ignored with a warning (`gemmkit tune --cache` names it: test_cli_...), replaced on record."""
    path = usercache.store_path("sm_90", "interpreter")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.warns(RuntimeWarning, match="not a gemmkit tuning cache"):
        assert usercache.lookup("a16w16", "bf16", "sm_90", "interpreter", 17, 48, 64) is None
    cfg = pointer_config("a16w16", 17, 48, 64)
    usercache.record("a16w16", "bf16", "sm_90", "interpreter", 17, 48, 64, cfg)
    assert json.loads(path.read_text())["format"] == 1  # replaced by a store
    raw = json.loads(path.read_text())
    raw["entries"]["a16w16 bf16 M=64 N=48 K=64"] = {"config": {"BLOCK_SIZE_M": 48}}  # not a power of two
    path.write_text(json.dumps(raw))
    usercache.forget()
    with pytest.warns(RuntimeWarning, match="1 entry this gemmkit cannot run ignored"):
        assert usercache.lookup("a16w16", "bf16", "sm_90", "interpreter", 64, 48, 64) is None
    assert usercache.lookup("a16w16", "bf16", "sm_90", "interpreter", 17, 48, 64)[0] == configs.validate_config(cfg)
    with pytest.raises(configs.ConfigError, match="BLOCK_SIZE_M"):  # a config that cannot run is never written
        usercache.record("a16w16", "bf16", "sm_90", "interpreter", 64, 48, 64, {**cfg, "BLOCK_SIZE_M": 48})


def test_unwritable_store_keeps_the_entry_in_the_process(store, monkeypatch):
    blocker = store / "file"
    blocker.write_text("")
    monkeypatch.setenv("GEMMKIT_CACHE_DIR", str(blocker))  # its "tuned" folder cannot be made
    cfg = pointer_config("a16w16", 17, 48, 64)
    with pytest.warns(RuntimeWarning, match="not written"):
        usercache.record("a16w16", "bf16", "sm_90", "interpreter", 17, 48, 64, cfg)
    assert usercache.lookup("a16w16", "bf16", "sm_90", "interpreter", 17, 48, 64)[0] == configs.validate_config(cfg)


def test_decide():
    """The tuner's decision on measured rows (the tables' config first): a winner only beyond MIN_GAIN; nothing
    where no comparison was made."""
    from gemmkit.tune.online import MIN_GAIN, decide

    a, b, c = ({"BLOCK_SIZE_M": m} for m in (64, 128, 256))
    assert decide([(a, {"ms": 1.0}), (b, {"ms": 0.9}), (c, {"error": "x"})]) == (b, {"ms": 0.9, "served_ms": 1.0,
                                                                                      "timed": 2})
    assert decide([(a, {"ms": 1.0}), (b, {"ms": 1.0 - MIN_GAIN / 2})])[0] is None  # within the margin: kept
    assert decide([(a, {"ms": 1.0}), (b, {"ms": 1.2})])[0] is None
    with pytest.raises(ValueError, match="the tables' config did not run: boom"):
        decide([(a, {"error": "boom"}), (b, {"ms": 0.5})])
    with pytest.raises(ValueError, match="no candidate beside the tables' config ran"):
        decide([(a, {"ms": 1.0}), (b, {"error": "wrong result"})])


@pytest.mark.interpreter
@pytest.mark.parametrize("mode", ["off", "cached", "on"])
def test_a16w16_call_runs_the_entry(mode, launches, monkeypatch):
    M, N, K = 17, 48, 64
    x, w = randn(M, K, dtype=torch.bfloat16), randn(N, K, dtype=torch.bfloat16)
    want = (x.double() @ w.double().T).to(torch.bfloat16)
    assert not configs.tuned(served("a16w16", M, N, K)[1])  # no shape file: the cache may serve it
    assert kernels_of(launches, lambda: gemmkit.gemm_a16w16(x, w)) == {"gemm_tma_kernel": 1}
    usercache.record("a16w16", "bf16", "sm_90", "interpreter", M, N, K, pointer_config("a16w16", M, N, K))
    monkeypatch.setenv("GEMMKIT_TUNE", mode)
    callplan.clear()
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16)
    ran = kernels_of(launches, lambda: gemmkit.gemm_a16w16(x, w, out=out))
    assert ran == ({"gemm_tma_kernel": 1} if mode == "off" else {"gemm_kernel": 1})
    assert (out.double() - want.double()).abs().max() <= 2**-7 * want.double().abs().max()
    # a config= argument is the caller's choice, whatever the cache holds
    cfg = served("a16w16", M, N, K)[0]
    assert kernels_of(launches, lambda: gemmkit.gemm_a16w16(x, w, config=cfg)) == {"gemm_tma_kernel": 1}
    # fp16 calls have entries of their own
    x16, w16 = x.half(), w.half()
    assert kernels_of(launches, lambda: gemmkit.gemm_a16w16(x16, w16)) == {"gemm_tma_kernel": 1}


@pytest.mark.interpreter
def test_keep_entry_serves_the_tables_config(launches, monkeypatch):
    M, N, K = 17, 48, 64
    x, w = randn(M, K, dtype=torch.bfloat16), randn(N, K, dtype=torch.bfloat16)
    usercache.record("a16w16", "bf16", "sm_90", "interpreter", M, N, K, None, ms=1.0, served_ms=1.0)
    gemmkit.set_tuning("cached")
    target = C.target_for(CPU)
    cfg, source = C.resolve_config("a16w16", "", target, M, N, K, tune_as=("a16w16", "bf16", CPU))
    assert cfg == served("a16w16", M, N, K)[0]
    assert source.endswith("kept by the tuning cache (a16w16 bf16 M=32 N=48 K=64)")
    assert kernels_of(launches, lambda: gemmkit.gemm_a16w16(x, w)) == {"gemm_tma_kernel": 1}


@pytest.mark.interpreter
def test_shape_files_keep_their_config(launches):
    """A shape a table was measured for (a shape file) never takes the cache's entry."""
    target = C.target_for(CPU)
    N, K = 1024, 1024  # sm_90/A16W16-N=1024-K=1024.json: M_GEQ_1024 (smaller M fall through to the default table)
    gemmkit.set_tuning("cached")
    for M, from_file in ((1024, True), (16, False)):
        cfg, source = served("a16w16", M, N, K)
        assert configs.tuned(source) == from_file
        entry = pointer_config("a16w16", M, N, K)
        usercache.record("a16w16", "bf16", "sm_90", "interpreter", M, N, K, entry)
        got = C.resolve_config("a16w16", "", target, M, N, K, tune_as=("a16w16", "bf16", CPU))
        assert got == ((cfg, source) if from_file else (configs.validate_config(entry), got[1]))


@pytest.mark.interpreter
@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_fp8_calls_run_the_entry(op, launches):
    from _util import q8, scales

    M, N, K = 17, 256, 256
    x, w = q8(M, K, dtype=torch.float8_e4m3fn), q8(N, K, dtype=torch.float8_e4m3fn)
    if op == "a8w8":
        xs, ws = scales(M, 1), scales(1, N)
        call = lambda: gemmkit.gemm_a8w8(x, w, xs, ws)  # noqa: E731
    else:
        xs, ws = scales(M, K // 128), scales(N // 128, K // 128)
        call = lambda: gemmkit.gemm_a8w8_blockscale(x, w, xs, ws)  # noqa: E731
    want = call()
    usercache.record(op, "fp8", "sm_90", "interpreter", M, N, K, pointer_config(op, M, N, K))
    gemmkit.set_tuning("cached")
    got = None

    def run():
        nonlocal got
        got = call()

    assert kernels_of(launches, run) == {"gemm_kernel": 1}
    assert torch.equal(got, want)  # one K order either way: the same fp32 sums


@pytest.mark.interpreter
def test_on_does_not_tune_on_the_cpu(store, launches):
    """The interpreter's time says nothing of a GPU's: a CPU call under "on" runs the tables' config and stores
    nothing."""
    gemmkit.set_tuning("on", budget_s=1)
    assert not C.may_tune(CPU)
    x, w = randn(5, 64, dtype=torch.bfloat16), randn(48, 64, dtype=torch.bfloat16)
    assert kernels_of(launches, lambda: gemmkit.gemm_a16w16(x, w)) == {"gemm_tma_kernel": 1}
    assert not (store / "tuned").exists()


@pytest.mark.interpreter
def test_suspended_work_is_no_part_of_the_plan(launches):
    """What the tuner runs inside a recorded call (callplan.suspended) is no part of its plan: not replayed, not
    counted by a replay."""
    x, w = randn(17, 64, dtype=torch.bfloat16), randn(48, 64, dtype=torch.bfloat16)
    x2, w2 = randn(9, 32, dtype=torch.bfloat16), randn(16, 32, dtype=torch.bfloat16)
    y = torch.empty(17, 48, dtype=torch.bfloat16)
    key = callplan.key("test", (x, w, y), ())
    ran = {}

    def body():
        with callplan.record(key, (x, w, y)):
            gemmkit.gemm_a16w16(x, w, config=served("a16w16", 17, 48, 64)[0], out=y)
            with callplan.suspended():
                gemmkit.gemm_a16w16(x2, w2, config=pointer_config("a16w16", 9, 16, 32))
                torch.zeros(3).fill_(1.0)  # a torch op a replay would skip, were it the call's
                ran["inner"] = True

    assert kernels_of(launches, body) == {"gemm_tma_kernel": 1, "gemm_kernel": 1} and ran  # both ran
    plan = callplan.lookup(key)
    assert callplan.repeatable(plan) and len(plan.steps) == 1 and dict(plan.counts) == {"gemm_tma_kernel": 1}
    y2 = torch.full_like(y, float("nan"))
    assert kernels_of(launches, lambda: plan.replay((x, w, y2))) == {"gemm_tma_kernel": 1}
    assert torch.equal(y2, y)


def test_cli_lists_and_clears_the_cache(store, capsys):
    from gemmkit.cli import main as cli_main

    def cli(*argv):
        rc = cli_main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    rc, out, _ = cli("tune", "--cache")
    assert rc == 0 and out.startswith("no tuning cache under")
    cfg = {**pointer_config("a16w16", 17, 48, 64), "NUM_KSPLIT": 2}
    usercache.record("a16w16", "bf16", "sm_90", "NVIDIA H200", 200, 3000, 2000, cfg, ms=0.1, served_ms=0.125,
                     timed=14)
    usercache.record("a8w8", "fp8", "sm_90", "NVIDIA H200", 20, 3000, 2000, None, ms=0.1, served_ms=0.1, timed=9)
    rc, out, _ = cli("tune", "--cache")
    lines = out.splitlines()
    assert rc == 0 and lines[0].endswith("NVIDIA_H200-triton" + __import__("triton").__version__ + ".json: 2 entries")
    c = cfg
    assert lines[1].startswith(f"  a16w16 bf16 M=256 N=3000 K=2000: {c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x"
                               f"{c['BLOCK_SIZE_K']}/{c['num_warps']}/{c['num_stages']}/s2 triton, 1.25x the tables' "
                               "config (14 configs timed, ")
    assert lines[2].startswith("  a8w8 fp8 M=32 N=3000 K=2000: the tables' config kept (9 configs timed, ")
    rc, out, _ = cli("tune", "--clear-cache")
    assert rc == 0 and out.startswith("removed 1 tuning cache file(s)")
    assert not list((store / "tuned").glob("*/*.json"))
    (store / "tuned" / "sm_90" / "x.json").write_text("[]")
    rc, _, err = cli("tune", "--cache")
    assert rc == 2 and "x.json: not a gemmkit tuning cache" in err
