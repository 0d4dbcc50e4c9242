"""`gemmkit isa`: every kernel x shipped config compiles for its target (sm_90, gfx942, gfx950) on
the CPU and keeps the promises its kernel file declares. A broken promise fails with the kernel,
config, target and the numbers that missed. Compiles run cold here (a fresh cache directory)."""
import json

import pytest

from _util import ROOT
from gemmkit import arch
from gemmkit.isa import amd_occupancy
from gemmkit.isa.promises import evaluate
from gemmkit.isa.report import OPS, analyze, collect, static_cases

CASES = [c for op in OPS for c in static_cases(op)]
IDS = [f"{c['arch']}-{c['kernel']}-{c['table']}:{c['bucket']}" + (f"-{c['dtype']}" if "dtype" in c else "")
       for c in CASES]
REQUIRED = {"kernel", "op", "config", "arch", "vgpr", "agpr", "sgpr", "spill_bytes", "lds_bytes", "occupancy",
            "counts", "promises", "promises_ok"}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    # one cold compile of every case (~5 minutes on 2 cores): the README's `pytest -n auto --dist loadfile` keeps this
    # file on one worker, so it runs once
    mp = pytest.MonkeyPatch()
    mp.setenv("GEMMKIT_CACHE_DIR", str(tmp_path_factory.mktemp("isa_cache")))
    try:
        rows = collect("all")
    finally:
        mp.undo()
    assert len(rows) == len(CASES)
    return rows


def test_every_target_and_kernel_present():
    assert {c["arch"] for c in CASES} == {"sm_90", "gfx942", "gfx950"}
    assert {"gemm_kernel", "gemm_tma_kernel", "splitk_reduce_kernel"} <= {c["kernel"] for c in CASES}
    assert {"a16w16", "a8w8", "a8w8_blockscale", "quant", "peer_sum"} <= {c["op"] for c in CASES}
    # fp8 cases compile the target's E4M3 flavour (e4m3fnuz on gfx942: the interpreter cannot run it)
    assert {(c["arch"], c["dtype"]) for c in CASES if c["op"] == "a8w8"} >= {
        ("gfx942", "fp8"), ("gfx950", "fp8"), ("sm_90", "fp8"), ("sm_90", "int8")}


# Kernels with no `gemmkit isa` case, and why (every other `*_kernel` under gemmkit/kernels must have one)
NO_ISA_CASE: dict = {}


def test_every_kernel_has_a_case_or_a_reason():
    """A new kernel file's `*_kernel` gets a static case (its promises checked on every CI run) or a line above."""
    import re
    from pathlib import Path

    defined = {m for f in Path(ROOT, "gemmkit", "kernels").rglob("*.py")
               for m in re.findall(r"^def (\w+_kernel)\(", f.read_text(), re.M)}
    missing = defined - {c["kernel"] for c in CASES} - set(NO_ISA_CASE)
    assert not missing, f"kernels with no `gemmkit isa` case: {sorted(missing)}"
    assert set(NO_ISA_CASE) <= defined, f"stale NO_ISA_CASE entries: {sorted(set(NO_ISA_CASE) - defined)}"


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_compiles_and_keeps_promises(rows, i):
    r = rows[i]
    where = f"{r['kernel']} {r['table']}:{r['bucket']} {json.dumps(r['config'], sort_keys=True)} on {r['arch']}"
    assert r["ok"], f"{where}: {r.get('error')}"
    assert REQUIRED <= set(r), f"{where}: missing {REQUIRED - set(r)}"
    broken = [f"{c['promise']}: {c['check']} ({c['detail']})" for c in r["promises"] if not c["ok"]]
    assert not broken, f"{where}: " + "; ".join(broken)
    assert r["promises"], f"{where}: no promise applies"


def test_a_broken_promise_is_reported():
    promises = ({"promise": "no spills", "check": "spill_bytes == 0"},
                {"promise": "MFMA present", "arch": "amd", "check": "counts['v_mfma'] > 0"},
                {"promise": "gated", "when": "cfg['num_warps'] == 8", "check": "False"},
                {"promise": "typo", "check": "counts['NOPE'] > 0"})
    out = evaluate(promises, {"spill_bytes": 24, "counts": {"v_mfma": 0}}, {"num_warps": 4}, arch.get("gfx950"))
    assert [(c["promise"], c["ok"]) for c in out] == [("no spills", False), ("MFMA present", False), ("typo", False)]
    assert "spill_bytes=24" in out[0]["detail"] and "KeyError" in out[2]["detail"]
    assert evaluate(promises[1:2], {"counts": {}}, {}, arch.get("sm_90")) == []  # arch filter


_CACHE_PROBE = """
import json, sys
from pathlib import Path
from gemmkit.isa.report import analyze, static_cases
case = next(c for c in static_cases("a16w16", ["gfx950"]) if c["kernel"] == "splitk_reduce_kernel")
first = analyze(case)
files = list((Path(sys.argv[1]) / "isa").glob("*.json"))
mtime = files[0].stat().st_mtime_ns
second = analyze(case)
print(json.dumps([first["ok"], len(files), second["vgpr"] == first["vgpr"], files[0].stat().st_mtime_ns == mtime]))
"""


def test_report_cache(tmp_path):
    """A second analysis of the same case is served from the cache (compiles need a
    non-interpreter process, hence the subprocess)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TRITON_INTERPRET="0", GEMMKIT_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", _CACHE_PROBE, str(tmp_path)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [True, 1, True, True]


def test_amd_occupancy():
    t = arch.get("gfx942")
    assert amd_occupancy(128, 0, 4, t) == 4  # 512 // 128
    assert amd_occupancy(130, 0, 4, t) == 3  # rounded to 136: 512 // 136
    assert amd_occupancy(64, 40960, 4, t) == 1  # LDS: one 40 KiB workgroup of 4 waves per 64 KiB CU
    assert amd_occupancy(64, 65536, 8, t) == 2
    assert amd_occupancy(32, 16384, 8, arch.get("gfx950")) == 8  # capped at 8 waves


def test_docs_isa_md_is_current(rows, tmp_path):
    """docs/ISA.md is what `gemmkit isa --markdown docs/ISA.md` writes today."""
    from pathlib import Path

    from gemmkit.isa.report import write_markdown

    write_markdown(rows, tmp_path / "ISA.md")
    current = (Path(ROOT) / "docs" / "ISA.md").read_text()
    assert (tmp_path / "ISA.md").read_text() == current, \
        "docs/ISA.md is stale: regenerate with `gemmkit isa --markdown docs/ISA.md`"
