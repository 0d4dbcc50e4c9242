"""Every shipped config compiles for its target on the CPU (sm_90, gfx942, gfx950), and the
compiled code shows what the design promises: no spills, shared memory within the
target's limit and within our estimate (smem_bytes), matrix instructions present.
All cases compile once (in a fresh process: see gemmkit.isa.report.collect)."""
import pytest

from gemmkit import arch
from gemmkit.isa.report import collect, static_cases

CASES = list(static_cases("a16w16"))
IDS = [f"{a}-{b}-{p}" for a, _f, b, _c, p in CASES]


@pytest.fixture(scope="module")
def rows():
    rows = collect("a16w16")
    assert len(rows) == len(CASES)
    return rows


def test_every_target_has_cases():
    assert {a for a, *_ in CASES} == {"sm_90", "gfx942", "gfx950"}
    assert any(p == "tma" for *_, p in CASES)


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_compiles_without_spills_within_shared_memory(rows, i):
    r = rows[i]
    assert r["ok"], r.get("error")
    assert r["spill_bytes"] == 0, f"{r['arch']} {r['bucket']} {r['path']}: {r['spill_bytes']} spill bytes"
    assert r["shared_bytes"] <= arch.ARCHS[r["arch"]].shared_mem_bytes
    assert r["shared_bytes"] <= r["smem_bound"], "smem_bytes() is not an upper bound: op-time checks would be wrong"


@pytest.mark.parametrize("i", range(len(CASES)), ids=IDS)
def test_matrix_instructions(rows, i):
    r = rows[i]
    assert r["ok"], r.get("error")
    if r["arch"] == "sm_90":
        if r["config"]["BLOCK_SIZE_M"] >= 64:
            assert r["hgmma"] > 0, "Hopper tiles of >= 64 rows should use wgmma (HGMMA)"
        else:
            assert r["hgmma"] + r["hmma"] > 0
        if r["path"] == "tma":
            assert r["utmaldg"] > 0, "TMA path without UTMALDG"
        else:
            assert r["ldgsts"] > 0, "pointer path should pipeline with cp.async (LDGSTS)"
    else:
        assert r["mfma"] > 0
