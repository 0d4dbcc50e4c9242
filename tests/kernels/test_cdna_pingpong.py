"""The CDNA ping-pong Gluon kernel, without an AMD GPU: its index math run over whole tiles in
NumPy against a plain matmul, its schedule tied to the checked one, and its compiled AMDGCN for
gfx950 and gfx942 read for the promises its file declares."""
import numpy as np
import pytest

from gemmkit import arch
from gemmkit.kernels.gluon import cdna_layout as L
from gemmkit.schedule import check, get
from gemmkit.schedule import library
from gemmkit.schedule.model import Barrier, WaitVm

TARGETS = ["gfx950", "gfx942"]


def test_tile_follows_the_target():
    c950, c942 = (L.tile_config(arch.ARCHS[a]) for a in TARGETS)
    assert (c950.BK, c950.lds_bytes, c950.mfma) == (64, 128 * 1024, (16, 16, 32))
    assert (c942.BK, c942.lds_bytes, c942.mfma) == (32, 64 * 1024, (16, 16, 16))
    for a in TARGETS:
        assert L.tile_config(arch.ARCHS[a]).lds_bytes <= arch.ARCHS[a].shared_mem_bytes
    with pytest.raises(ValueError, match="gfx942/gfx950"):
        L.tile_config(arch.ARCHS["sm_90"])


@pytest.mark.parametrize("a", TARGETS)
def test_swizzle_removes_read_bank_conflicts(a):
    cfg = L.tile_config(arch.ARCHS[a])
    assert L.read_bank_slots(cfg, swizzled=True) == 16  # 16 lanes, 16 distinct 16-byte bank slots
    assert L.read_bank_slots(cfg, swizzled=False) < 16  # the unswizzled tile conflicts


def _lds_image(cfg, tile):
    """Global tile (BM x BK) -> one LDS buffer, wave by wave, instruction by instruction, as the
    direct-to-LDS loads write it; checks every instruction writes one contiguous LDS range."""
    lds = np.full(cfg.BM * cfg.BK, np.nan)
    rows_per_instr = L.load_threads(cfg)[0]
    for w in range(L.NUM_WARPS):
        rows = L.load_rows(cfg, w, cfg.BM)
        for i in range(0, len(rows), rows_per_instr):
            r = np.array(rows[i:i + rows_per_instr])[:, None]
            c = np.arange(cfg.BK)[None, :]
            off = L.lds_offset(cfg, r, c).ravel()
            assert off.max() - off.min() + 1 == off.size  # coalesced: one contiguous chunk
            assert np.isnan(lds[off]).all()  # nothing written twice
            lds[off] = tile[r, c].ravel()
    assert not np.isnan(lds).any()  # every element landed
    return lds


@pytest.mark.parametrize("a", TARGETS)
def test_whole_tile_through_the_index_math(a):
    """One K tile of A and B through the LDS images and the MFMA fragments of every wave, lane and
    MFMA, accumulated into the waves' pieces of C: equals A @ B.T."""
    cfg = L.tile_config(arch.ARCHS[a])
    rng = np.random.default_rng(0)
    A = rng.standard_normal((cfg.BM, cfg.BK))
    B = rng.standard_normal((cfg.BN, cfg.BK))
    lds_a, lds_b = _lds_image(cfg, A), _lds_image(cfg, B)
    m, n, k = cfg.mfma
    C = np.full((cfg.BM, cfg.BN), np.nan)
    for w in range(L.NUM_WARPS):
        r0, c0 = L.wave_tile(w)
        assert (w // 4) == (r0 // 128)  # warp_id_m is the wave group and owns rows 128*g..
        for mi in range(cfg.BM // L.WARPS_M // m):
            for ni in range(cfg.BN // L.WARPS_N // n):
                acc = np.zeros((m, n))
                for kk in range(cfg.BK // k):
                    fa, fb = np.full((m, k), np.nan), np.full((n, k), np.nan)
                    for lane in range(L.WAVE):
                        row, ks = L.mfma_a_fragment(cfg, lane)
                        ks = np.array(ks)
                        fa[row, ks] = lds_a[L.lds_offset(cfg, r0 + mi * m + row, kk * k + ks)]
                        fb[row, ks] = lds_b[L.lds_offset(cfg, c0 + ni * n + row, kk * k + ks)]
                    assert not np.isnan(fa).any() and not np.isnan(fb).any()  # the lanes cover the operand
                    acc += fa @ fb.T
                for lane in range(L.WAVE):
                    for i, j in L.mfma_c_fragment(cfg, lane):
                        C[r0 + mi * m + i, c0 + ni * n + j] = acc[i, j]
    assert not np.isnan(C).any()
    np.testing.assert_allclose(C, A @ B.T, rtol=1e-12, atol=1e-12)
    assert L.mfma_per_wave_per_k_tile(cfg) == 64


def test_the_kernel_runs_the_checked_schedule():
    from gemmkit.kernels.gluon import cdna_pingpong as K

    assert check(get(K.SCHEDULE, 6)).ok
    prologue, body, epilogue = library.pingpong_phases("all")
    steps = prologue + body(0, last=False) + body(0, last=True) + epilogue
    ops = K.kernel_ops()
    assert K.barriers_in_code(ops) == sum(isinstance(s, Barrier) for s in steps)
    assert ops["PROLOGUE"][-1] == (K.GROUP_BARRIER, 1) and ops["EPILOGUE"] == ((K.GROUP_BARRIER, 0),)
    assert [op[0] for op in ops["BODY"]].count(K.COMPUTE) == 2
    with pytest.raises(ValueError, match="wait_group"):
        K._ops([WaitVm(n=6)])


@pytest.fixture(scope="module")
def isa_rows():
    from gemmkit.isa.report import collect

    rows = collect("cdna_pingpong")
    return rows


@pytest.mark.parametrize("a", TARGETS)
def test_compiled_code_keeps_its_promises(isa_rows, a):
    """The kernel as written, and (gfx950) its A16W16 Gluon bucket: edge tiles, a K tail, bias + gelu."""
    rows = [r for r in isa_rows if r["arch"] == a]
    assert len(rows) == (2 if a == "gfx950" else 1)
    for r in rows:
        _keeps_promises(r, a)


def _keeps_promises(r, a):
    assert r["ok"], r.get("error")
    broken = [f"{c['promise']}: {c['detail']}" for c in r["promises"] if not c["ok"]]
    assert not broken
    cfg = L.tile_config(arch.ARCHS[a])
    assert r["spill_bytes"] == 0 and r["lds_bytes"] == cfg.lds_bytes
    assert r["counts"]["v_mfma"] == 4 * 64  # 2 K tiles in the loop body + 2 in the last body
    assert r["counts"]["s_barrier"] == 11
    assert r["counts"]["buffer_load_lds"] == r["config"]["lds_loads"] > 0
