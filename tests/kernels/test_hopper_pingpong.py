"""The Gluon ping-pong kernel: on the CPU its plan (pure Python) and a static compile for sm_90; on the
H200 (gpu-marked, the last section) the kernel itself.

Gluon does not run in Triton's interpreter, so on the CPU the kernel is compiled for sm_90 and its
SASS checked against the promises its file declares (HGMMA, TMA loads and store, no spills,
shared memory within the plan, 12 warps). Static compiles need Triton's JIT objects, which
an interpreter process (TRITON_INTERPRET=1, set by conftest.py on CPU machines) lacks: they
run in a subprocess without it.

The GPU tests (`pytest -m gpu tests/kernels/test_hopper_pingpong.py`) call the kernel through its
launcher (gemmkit.kernels.gluon.hopper_pingpong.launch) so they cover the kernel whatever the op's
tables pick. Reference: float64 on the CPU (gemmkit.reference); outputs poisoned with NaN first, so
an unwritten element fails. Bounds: tests/_util.within_bound (half an ulp of the output dtype per
element, x2). Small persistent grids (target.with_cus(n)) give each CTA many tiles, odd and even
counts, so both consumers and every hand-off of the turn barriers run.
"""
import dataclasses
import json
import os
import subprocess
import sys

import pytest
import torch

from _util import broken_promises, compile_sm90_cases
from _util import check_a16w16 as check
from _util import (assert_gluon_or_fallback, assert_sanitizer_clean, check_served_tail_split, dense_sanitize_script,
                   gpu_target, launch_dense, poisoned, randn, sanitize, within_bound)
from gemmkit import arch, configs
from gemmkit.configs.model import tail as config_tail
from gemmkit.isa.promises import evaluate
from gemmkit.kernels.gluon import hopper_coop as hc
from gemmkit.kernels.gluon import hopper_host as hh
from gemmkit.kernels.gluon import hopper_pingpong as hp
from gemmkit.kernels.gluon import hopper_plan as hplan
from gemmkit.kernels.triton.dense import triton_tile
from gemmkit.reference import gemm_a16w16_ref

H200 = arch.get("sm_90")
BASE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
        "num_stages": 5}


def test_plan_of_the_default_tile():
    p = hp.derive(BASE, H200)
    assert (p.BM, p.BN, p.BK, p.stages) == (128, 128, 64, 5)
    assert p.stage_bytes == (128 + 128) * 64 * 2 == 32768
    assert p.epilogue_bytes == 2 * 128 * 128 * 2
    assert p.smem_bytes == 5 * 32768 + 65536 + 1024 <= H200.shared_mem_bytes
    # 12 warps (4 + 4 + 1 padded to warpgroups): 168 registers at entry, 240 per consumer, 24 for loads,
    # and the split uses the whole file: 2 * 128 * 240 + 128 * 24 <= 384 * 168 <= 65536.
    assert (p.warps, p.regs_at_entry, p.mma_regs, p.load_regs, p.acc_regs) == (12, 168, 240, 24, 128)
    assert 2 * 128 * p.mma_regs + 128 * p.load_regs <= 32 * p.warps * p.regs_at_entry <= 65536
    assert (p.swizzle_a, p.swizzle_b, p.swizzle_c) == (128, 128, 128)


def test_output_tiles_and_stages():
    p = hp.derive(BASE, H200, out_bytes=4)  # 5 stages do not fit beside two 64 KiB fp32 tiles: one shared tile
    assert (p.c_tiles, p.stages, p.epilogue_bytes) == (1, 5, 65536)
    assert hp.derive({**BASE, "num_stages": 3}, H200).stages == 3  # num_stages is an upper bound
    p = hp.derive({**BASE, "num_stages": 6}, H200)  # 6 stages: only beside one shared bf16 tile
    assert (p.c_tiles, p.stages, p.smem_bytes) == (1, 6, 6 * 32768 + 32768 + 1024)
    p = hp.derive({**BASE, "num_stages": 8}, H200)  # upper bound: as many as fit (6)
    assert (p.c_tiles, p.stages) == (1, 6)
    assert hp.derive(BASE, H200).c_tiles == 2
    p = hp.derive({**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256}, H200)
    assert (p.stages, p.acc_regs) == (4, 128)  # (64 + 256) * 64 * 2 = 40 KiB a stage beside 64 KiB
    assert hp.derive({**BASE, "BLOCK_SIZE_N": 64, "num_stages": 8}, H200).swizzle_c == 128


def test_plan_of_the_split_tile():
    """64 x 192 = accumulators of 128 + 64 columns: w loaded as 3 boxes of 64 rows, each consumer staging one
    64 x 64 output sub-tile (always two staging tiles: 8 KiB each), 96 accumulator registers."""
    p = hp.derive({**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6}, H200)
    assert (p.BM, p.BN, p.BN_TAIL, p.w_box, p.acc_regs, p.c_tiles) == (64, 192, 64, 64, 96, 2)
    assert p.stage_bytes == (64 + 192) * 64 * 2 == 32768 and p.epilogue_bytes == 2 * 64 * 64 * 2
    assert (p.stages, p.smem_bytes) == (6, 6 * 32768 + 16384 + 1024)
    assert hp.y_box(p) == (64, 64) and hp.y_box(hp.derive(BASE, H200)) == (128, 128)
    assert (hp.derive(BASE, H200).BN_TAIL, hp.derive(BASE, H200).w_box) == (0, 128)
    with pytest.raises(ValueError, match="accumulator"):  # 128 x 192: 192 registers a thread
        hp.derive({**BASE, "BLOCK_SIZE_N": 192}, H200)
    with pytest.raises(ValueError, match="BLOCK_SIZE_N"):  # the fp8 kernels' check: powers of two only
        hplan.check_config({**BASE, "BLOCK_SIZE_N": 192}, "gluon", "k", "")


def test_ring_stages_cap_at_a_ctas_k_steps():
    """A launch's ring depth: the plan's stages, or the K steps one CTA runs where fewer (each work item at most
    cdiv(K, BK) steps, cdiv(items, CTAs) items a CTA), never under 2; CAP_STAGES off: the plan's."""
    assert hh.ring_stages(8, 64, 64, 120, 120) == 2  # one step: 2, not 1
    assert hh.ring_stages(8, 256, 64, 120, 120) == 4
    assert hh.ring_stages(8, 257, 64, 120, 120) == 5  # a partial step counts
    assert hh.ring_stages(8, 256, 64, 240, 132) == 8  # two items a CTA: 8 steps
    assert hh.ring_stages(6, 4096, 64, 1, 1) == 6  # never above the plan's
    try:
        hh.CAP_STAGES = False
        assert hh.ring_stages(8, 64, 64, 120, 120) == 8
    finally:
        hh.CAP_STAGES = True


_PROLOGUE_BARRIERS = r"""
import json, re, sys
from gemmkit import arch
from gemmkit.isa import compile_static
from gemmkit.kernels.gluon import hopper_coop as hc, hopper_pingpong as hp
t = arch.ARCHS["sm_90"]
out = []
for mod, cfg in ((hp, hp.PRESETS[0]), (hc, hc.PRESETS[0])):
    kernel, sig, ce, div, opts, plan = mod.static_spec(dict(cfg), t)[:6]
    for late in (False, True):
        ptx = compile_static(kernel, sig, {**ce, "LATE_INIT": late}, t, opts, div).asm["ptx"]
        prologue = ptx[:ptx.index("setmaxnreg.dec")]  # the kernel's warps, before the partitions start
        out.append([mod.KERNEL_NAME, ce["STAGES"], late, len(re.findall(r"\bbar\.sync\b", prologue)),
                    len(re.findall(r"mbarrier\.init", prologue)), len(re.findall(r"mbarrier\.init", ptx))])
print(json.dumps(out))
"""


def test_late_ring_set_up_leaves_the_prologue_one_barrier():
    """LATE_INIT (hopper_parts.ring_init): before the partitions start the kernel's warps set up only the ready,
    turn and c_free mbarriers (the ping-pong: one barrier, between the two turn inits; the coop: none), where the
    whole ring costs a barrier a stage (Triton 3.6 orders two inits of one mbarrier array); the ring's 2 x STAGES
    inits move to the load warp, none lost."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", _PROLOGUE_BARRIERS], env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    by = {(name, late): (stages, bars, pro_inits, inits) for name, stages, late, bars, pro_inits, inits in rows}
    for name in (hp.KERNEL_NAME, hc.KERNEL_NAME):
        stages, bars_early, pro_early, inits_early = by[(name, False)]
        _, bars_late, pro_late, inits_late = by[(name, True)]
        assert stages >= 3, stages
        assert bars_early >= stages - 1, (name, bars_early)  # a barrier between stages
        assert bars_late <= 1, (name, bars_late)
        assert pro_early - pro_late == 2 * stages - 1, (name, pro_early, pro_late)  # + the ready mbarrier
        assert inits_late == inits_early + 1, (name, inits_early, inits_late)


@pytest.mark.parametrize("bn, tail, pieces", [(48, 16, 3), (80, 16, 5), (96, 32, 3), (144, 16, 9), (160, 32, 5),
                                              (192, 64, 1)])
def test_plan_of_the_split_tiles_a_plus_b(bn, tail, pieces):
    """BN = A + B (two powers of two, A = 2, 4 or 8 B): w boxes of B rows (A / B + 1 a stage); per consumer
    A / B + 1 BM x B staging sub-tiles where the 6 stages asked for fit beside them (64 x 192: 6 x 32 KiB + 2 x
    24 KiB > 227 KiB), else one (and the same 6 stages); the Triton fallback runs A columns; the cooperative kernel
    builds them too."""
    assert configs.split_tail(bn) == tail and configs.split_tail(bn - tail) == 0
    p = hp.derive({**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "num_stages": 6}, H200)
    assert (p.BN, p.BN_TAIL, p.w_box, p.acc_regs, p.c_tiles) == (bn, tail, tail, 64 * bn // 128, 2)
    assert (p.c_pieces, p.stages) == (pieces, 6) and hp.y_box(p) == (64, tail)
    assert p.epilogue_bytes == 2 * pieces * 64 * tail * 2 <= H200.shared_mem_bytes - 6 * p.stage_bytes - 1024
    assert hp.dense_constexprs(p, has_bias=False, activation="none")["C_PIECES"] == pieces
    try:
        hplan.SPLIT_PIECES = False  # one sub-tile, each store waiting for the one before
        one = hp.derive({**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "num_stages": 6}, H200)
    finally:
        hplan.SPLIT_PIECES = True
    assert (one.c_pieces, one.epilogue_bytes) == (1, 2 * 64 * tail * 2)
    assert configs.validate_config({**BASE, "BLOCK_SIZE_N": bn, "backend": "gluon"})["BLOCK_SIZE_N"] == bn
    assert triton_tile({**BASE, "BLOCK_SIZE_N": bn, "backend": "gluon"})["BLOCK_SIZE_N"] == bn - tail
    coop = {**BASE, "BLOCK_SIZE_N": bn, "num_warps": 8, "num_stages": 4}
    assert hc.derive(coop, H200).BN_TAIL == tail


def test_split_tile_compiles_for_each_ratio():
    """A = 2, 4 and 8 B (96, 160, 144): HGMMA, A / B + 2 TMA loads a stage (x, A / B w boxes, the tail box),
    A / B + 1 sub-tile stores, no spills."""
    cases = [dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "num_stages": 6}, path="gluon-bf16")
             for bn in (160, 144)]
    for case, res in zip(cases, compile_sm90_cases(hp, cases)):
        assert not broken_promises(res), case["config"]
        bn = case["config"]["BLOCK_SIZE_N"]
        ratio = (bn - configs.split_tail(bn)) // configs.split_tail(bn)
        m = res["metrics"]
        assert m["counts"]["UTMALDG"] >= ratio + 2 and m["counts"]["UTMASTG"] >= ratio + 1, m["counts"]


@pytest.mark.parametrize("change,match", [
    ({"BLOCK_SIZE_M": 256}, "BLOCK_SIZE_M"),
    ({"BLOCK_SIZE_N": 512}, "BLOCK_SIZE_N"),
    ({"BLOCK_SIZE_K": 256}, "BLOCK_SIZE_K"),
    ({"BLOCK_SIZE_N": 256}, "accumulator"),  # 128 x 256: 256 registers a thread
    ({"num_warps": 8}, "num_warps"),
    ({"waves_per_eu": 2}, "do not apply"),
    ({"BLOCK_SIZE_K": 128, "num_stages": 1}, "ring needs 2"),
])
def test_plan_rejects_what_cannot_run(change, match):
    with pytest.raises(ValueError, match=match):
        hp.derive({**BASE, **change}, H200)


def test_plan_rejects_a_ring_that_does_not_fit():
    small = dataclasses.replace(H200, shared_mem_bytes=100 * 1024)  # 64 KiB stages: one fits beside a 32 KiB tile
    with pytest.raises(ValueError, match="ring needs 2"):
        hp.derive({**BASE, "BLOCK_SIZE_K": 128}, small)


def test_table_keys_are_accepted():
    p = hp.derive({**BASE, "backend": "gluon", "persistent": True, "tma": True, "NUM_KSPLIT": 1}, H200)
    assert p.stages == 5


def test_backend_key_in_tables():
    """"backend" is a config key: 'triton' or 'gluon' (on AMD: the CDNA ping-pong, kernels/gluon/cdna_host.py)."""
    from gemmkit import configs

    assert configs.validate_config({**BASE, "backend": "gluon"}, backend="cuda")["backend"] == "gluon"
    configs.validate_config({**BASE, "backend": "triton"}, backend="hip")
    assert configs.validate_config({**BASE, "backend": "gluon"}, backend="hip")["backend"] == "gluon"
    with pytest.raises(configs.ConfigError, match="'backend' = 'cutlass'"):
        configs.validate_config({**BASE, "backend": "cutlass"})


def test_tuner_offers_gluon_candidates_on_sm90_only():
    """The tuner searches the Gluon backend for a16w16 on sm_90 at M >= 256 and (the transposed tile) M <= 64,
    keeps only configs its plan accepts, and offers none elsewhere (the 8-bit ops get the FP8 kernel's instead)."""
    from gemmkit.tune import prune, search_space

    gl_all = [c for c in search_space(1024, 8192, 8192, H200, "a16w16") if c.get("backend") == "gluon"]
    g = [c for c in gl_all if not hp.is_coop(c)]  # num_warps 8: the cooperative kernel (tests/kernels/test_hopper_coop.py)
    assert g and all(c["num_warps"] == 4 and c["NUM_KSPLIT"] == 1 for c in g)
    assert all(c["num_warps"] in (4, 8) for c in gl_all)
    kept = [c for c in prune(g, 1024, 8192, 8192, H200) if c.get("backend") == "gluon"]
    assert kept and all(hp.derive(c, H200) for c in kept)
    # M <= 64: the transposed tile only (gluon_swap_space), token tiles up to the first that holds M
    small = [c for c in search_space(64, 8192, 8192, H200, "a16w16") if c.get("backend") == "gluon"]
    assert small and all(c.get("swap_ab") and c["num_warps"] == 4 for c in small)
    assert {c["BLOCK_SIZE_M"] for c in small} == {16, 32, 64}
    assert {c["BLOCK_SIZE_M"] for c in search_space(1, 8192, 8192, H200, "a16w16") if c.get("swap_ab")} == {16}
    kept = prune(small, 64, 8192, 8192, H200)
    assert kept and all(hp.derive(c, H200).swap for c in kept)
    assert not [c for c in search_space(128, 8192, 8192, H200, "a16w16") if c.get("backend") == "gluon"]
    assert not [c for c in search_space(1024, 8192, 8192, arch.get("gfx942"), "a16w16") if c.get("backend")]
    assert not [c for c in search_space(16, 8192, 8192, arch.get("gfx942"), "a16w16") if c.get("backend")]
    # a8w8's Gluon candidates are the FP8 kernel's (BLOCK_SIZE_K 128: tests/tools/test_tune.py), none of this kernel's
    fp8 = [c for c in search_space(1024, 8192, 8192, H200, "a8w8") if c.get("backend")]
    assert fp8 and all(c["BLOCK_SIZE_K"] == 128 for c in fp8)


def test_isa_cases_are_sm90_only():
    assert list(hp.isa_cases(["gfx942", "gfx950"])) == []
    cases = list(hp.isa_cases(["sm_90"]))
    assert {c["path"] for c in cases} >= {"gluon-bf16", "gluon-fp32"}
    assert all(c["kernel"] == hp.KERNEL_NAME and c["arch"] == "sm_90" for c in cases)
    spec = hp.isa_spec(cases[0])
    assert set(spec) == {"kernel", "signature", "constexprs", "divisible", "options", "promises", "block",
                         "smem_bound"}
    assert spec["signature"]["x_desc"].startswith("tensordesc<bf16[") and "NVMMASharedLayout" in \
        spec["signature"]["x_desc"]


def test_promises_can_fail():
    row = {"num_warps": 12, "vgpr": 168, "spill_bytes": 16, "lds_bytes": 100, "smem_bound": 99,
           "counts": {"HGMMA": 0, "HMMA": 4, "UTMALDG": 2, "UTMASTG": 0, "LDL": 0, "STL": 3}}
    bad = {c["promise"] for c in evaluate(hp.PROMISES, row, BASE, H200) if not c["ok"]}
    assert {"no spills", "no local-memory traffic", "wgmma (HGMMA) in both consumers",
            "TMA store (UTMASTG) of the output tile", "shared memory within the plan's bound (smem_bytes)"} == bad


def test_static_compile_sm90_keeps_promises():
    """Three configs (128 x 128 bf16 out with bias + gelu, 64 x 256 fp32 out, the 64 x 192 split tile) compile
    for sm_90 with HGMMA, TMA loads and stores, no spills, and shared memory within the plan."""
    cases = [dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16"),
             dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "num_stages": 4}, path="gluon-fp32"),
             dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6}, path="gluon-bf16")]
    for case, res in zip(cases, compile_sm90_cases(hp, cases)):
        broken = broken_promises(res)
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        assert len(res["promises"]) == len(hp.PROMISES)
        m = res["metrics"]
        assert m["counts"]["HGMMA"] > 0 and m["counts"]["UTMALDG"] > 0 and m["spill_bytes"] == 0


def test_tail_plan():
    """The tail split (`tail_plan`, configs/model/tail.py): the last round's tiles as K splits, only on the unsplit,
    power-of-two, unswapped tile, from K = TAIL_MIN_K (None: the rule; True: wherever it can; False: never)."""
    plan = hp.derive(BASE, H200)
    # 1412 x 6144: 12 x 48 = 576 tiles of 128 x 128 on 132 SMs, 4 rounds + 48: the 48 run as 2 splits each
    assert hp.tail_plan(plan, 1412, 6144, 25984, 132) == (48, 2)
    assert hp.tail_plan(plan, 1412, 6144, config_tail.TAIL_MIN_K - 64, 132) == (0, 1)  # K under the floor
    assert hp.tail_plan(plan, 790, 4800, 2048, 132) == (2, 8)
    # 7168 tiles: 54 rounds + 40 tiles; 3 splits would save 2 / 3 of one round in 55, under TAIL_MIN_SAVING
    assert hp.tail_plan(plan, 4096, 28672, 4096, 132) == (0, 1)
    assert hp.tail_plan(plan, 4096, 28672, 4096, 132, tail=True) == (40, 3)
    assert hp.tail_plan(plan, 1412, 6144, 1024, 132, tail=True) == (48, 2)
    assert hp.tail_plan(plan, 1412, 6144, 25984, 132, tail=False) == (0, 1)
    assert hp.tail_plan(plan, 1024, 2048, 8192, 132) == (0, 1)  # 128 tiles: one round, nothing to split
    assert hp.tail_plan(plan, 129, 1000, 1040, 7, tail=True) == (2, 3)  # 16 tiles on 7 CTAs
    split_k = hp.derive({**BASE, "NUM_KSPLIT": 3}, H200)
    assert hp.tail_plan(split_k, 1412, 6144, 25984, 132) == (0, 1)
    split_tile = hp.derive({**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6}, H200)
    assert hp.tail_plan(split_tile, 1412, 6144, 25984, 132) == (0, 1)
    swap = hp.derive({**BASE, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "swap_ab": True}, H200)
    assert hp.tail_plan(swap, 1412, 6144, 25984, 132) == (0, 1)
    saved = config_tail.TAIL_SPLIT
    try:
        config_tail.TAIL_SPLIT = False
        assert hp.tail_plan(plan, 1412, 6144, 25984, 132) == (0, 1)
    finally:
        config_tail.TAIL_SPLIT = saved


def test_static_compile_of_the_tail_variant():
    """The tail split's variant (TAIL: a K split's fp32 partial stored from the accumulator beside the staged
    epilogue) keeps the promises: no spills, two staging tiles (5 stages) and one (6)."""
    cases = [dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16-tail"),
             dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "num_stages": 6}, path="gluon-fp32-tail")]
    assert {c["path"] for c in hp.isa_cases(["sm_90"]) if c["path"].endswith("-tail")} == {"gluon-bf16-tail",
                                                                                          "gluon-fp32-tail"}
    for case, res in zip(cases, compile_sm90_cases(hp, cases)):
        broken = broken_promises(res)
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        assert res["metrics"]["spill_bytes"] == 0


def test_plan_of_split_k():
    """NUM_KSPLIT > 1 (the dense kernels): fp32 partial tiles are staged whatever the output dtype (128 x 128:
    64 KiB, so 5 stages leave one shared tile); the kernel gets SPLIT_K and leaves bias / activation to the
    reduce; `split_count` keeps every K range non-empty."""
    p = hp.derive({**BASE, "NUM_KSPLIT": 3}, H200, 2, 2)
    assert p.split_k == 3 and p.epilogue_bytes == 128 * 128 * 4 and p.c_tiles == 1
    assert hp.derive({**BASE, "NUM_KSPLIT": 3}, H200, 2, 2) == hp.derive({**BASE, "NUM_KSPLIT": 3}, H200, 2, 4)
    ce = hp.kernel_constexprs(p, has_bias=True, activation="gelu")
    assert (ce["SPLIT_K"], ce["HAS_BIAS"], ce["ACTIVATION"]) == (True, False, "none")
    ce = hp.kernel_constexprs(hp.derive(BASE, H200), has_bias=True, activation="gelu")
    assert (ce["SPLIT_K"], ce["HAS_BIAS"], ce["ACTIVATION"]) == (False, True, "gelu")
    # K steps 112 (7168 / 64): 3 ranges of 38 (the last runs 2 steps into the zero fill); 5 steps, 4 asked: 3 x 2
    assert [hh.split_count(k, 64, s) for k, s in ((7168, 3), (320, 4), (64, 8), (7168, 2))] == [3, 3, 1, 2]
    assert hh.staged_dtype({**BASE, "NUM_KSPLIT": 2}, "bf16") == "fp32" and hh.staged_dtype(BASE, "bf16") == "bf16"


def test_split_k_is_the_dense_bf16_kernels_only():
    """The fp8 kernels' check and the batched kernels refuse NUM_KSPLIT > 1 with a clear error."""
    from gemmkit.kernels.gluon import hopper_pingpong_batched as hb

    with pytest.raises(ValueError, match="NUM_KSPLIT"):
        hplan.check_config({**BASE, "NUM_KSPLIT": 2}, "gluon fp8", "the gluon fp8 kernel", "")
    for cfg in ({**BASE, "NUM_KSPLIT": 2}, {**BASE, "num_warps": 8, "NUM_KSPLIT": 2}):
        with pytest.raises(ValueError, match="NUM_KSPLIT"):
            hb.kernel_plan(cfg, H200, 2, 2, has_bias=False, activation="none")


def test_fit_split_k_is_an_upper_bound():
    """NUM_KSPLIT lowered to one wave of SMs and to the splits that start below K; 1 where nothing is left to
    split (then the plain kernel runs: no workspace, no reduce)."""
    cfg = {**BASE, "NUM_KSPLIT": 8}
    assert hh.fit_split_k(cfg, 256, 1024, 7168, H200)["NUM_KSPLIT"] == 8  # 16 tiles: 8 fit 132 SMs
    assert hh.fit_split_k(cfg, 512, 1024, 7168, H200)["NUM_KSPLIT"] == 4  # 32 tiles
    assert hh.fit_split_k(cfg, 4096, 1024, 7168, H200)["NUM_KSPLIT"] == 1  # 256 tiles
    assert hh.fit_split_k(cfg, 256, 1024, 320, H200)["NUM_KSPLIT"] == 5  # 5 K steps: 5 ranges of 1
    assert hh.fit_split_k({**cfg, "NUM_KSPLIT": 4}, 256, 1024, 320, H200)["NUM_KSPLIT"] == 3  # 2 + 2 + 1
    assert hh.fit_split_k(cfg, 256, 1024, 64, H200)["NUM_KSPLIT"] == 1  # one K step
    assert hh.fit_split_k(BASE, 1, 1, 1, H200) is BASE
    assert hh.one_wave_splits(12, 132) == 11 and hh.one_wave_splits(200, 132) == 0


def test_split_k_needs_n_multiple_of_4_else_triton():
    """The fp32 workspace rows must be 16-byte TMA rows: N % 4 != 0 takes the Triton tier (not an assert)."""
    import torch

    from gemmkit.ops import dispatch as D

    def meta(shape, stride=None):  # a GPU call's tensors (ops/dispatch.py: meta tensors are not the interpreter)
        return torch.empty_strided(shape, stride or (shape[1], 1), dtype=torch.bfloat16, device="meta")

    x, w = meta((256, 7168)), meta((98, 7168))
    y = meta((256, 98), (104, 1))  # a padded out: TMA-compatible, N = 98
    cfg = {**BASE, "backend": "gluon"}
    choice = D.dense({**cfg, "NUM_KSPLIT": 4}, H200, x, w, y)
    assert choice.kernel != D.GLUON_BF16 and "N % 4" in dict(choice.passed_over)[D.GLUON_BF16]
    assert D.dense(cfg, H200, x, w, y).kernel == D.GLUON_BF16  # no split: the Gluon kernel takes it


SWAP = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
        "num_stages": 8, "swap_ab": True}


def test_plan_of_the_transposed_tile():
    """swap_ab: the config names y's 16 x 64 tile; the kernel's tile is its transpose (64 weight rows as the wgmma's
    M, 16 tokens as its N), the y box and staging tile 16 x 64, the kernel told SWAP."""
    p = hp.derive(SWAP, H200)
    assert (p.BM, p.BN, p.BK, p.swap, p.w_box, p.acc_regs) == (64, 16, 128, True, 16, 8)
    assert hp.y_box(p) == (16, 64) and p.swizzle_c == 128  # the staging tile's rows: 64 bf16 = 128 B
    assert p.stage_bytes == (64 + 16) * 128 * 2 and p.stages == 8
    assert hp.kernel_constexprs(p, has_bias=True, activation="gelu")["SWAP"] is True
    assert hp.kernel_constexprs(hp.derive(BASE, H200), has_bias=True, activation="gelu")["SWAP"] is False
    assert not hp.derive(BASE, H200).swap


@pytest.mark.parametrize("change,match", [
    ({"backend": "triton"}, "backend"),
    ({"num_warps": 8}, "num_warps 8 .the cooperative kernel's transposed tile. needs BLOCK_SIZE_N 128"),
    ({"BLOCK_SIZE_N": 256}, "BLOCK_SIZE_N 64 or 128"),
    ({"NUM_KSPLIT": 2}, "NUM_KSPLIT 1"),
])
def test_swap_ab_config_rules(change, match):
    """The config loader names what a swap_ab config lacks; the Gluon kernels without a transposed tile refuse it."""
    from gemmkit import configs

    configs.validate_config({**SWAP, "backend": "gluon"}, backend="cuda")
    with pytest.raises(configs.ConfigError, match=match):
        configs.validate_config({**SWAP, "backend": "gluon", **change}, backend="cuda")
    with pytest.raises(configs.ConfigError, match="not supported on hip"):
        configs.validate_config({**SWAP, "backend": "gluon"}, backend="hip")


def test_swap_ab_is_the_dense_kernels_only():
    """The batched and fp8 kernels have no transposed tile; the cooperative kernel takes only split widths of tokens
    (test_hopper_coop.py), the ping-pong powers of two."""
    from gemmkit.kernels.gluon import hopper_coop as hc
    from gemmkit.kernels.gluon import hopper_fp8_plan as fp
    from gemmkit.kernels.gluon import hopper_pingpong_batched as hb

    with pytest.raises(ValueError, match="swap_ab"):
        hb.kernel_plan(SWAP, H200, 2, 2, has_bias=False, activation="none")
    with pytest.raises(ValueError, match="'BLOCK_SIZE_M' = 128 with 'swap_ab'.*split width"):
        hc.derive({**SWAP, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "num_warps": 8}, H200)
    with pytest.raises(ValueError, match="swap_ab"):
        fp.derive({**SWAP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128}, H200, 2)
    with pytest.raises(ValueError, match="split-K"):
        hp.derive({**SWAP, "NUM_KSPLIT": 2}, H200)
    # errors name the config's keys (y's tile), not the kernel's transposed ones
    with pytest.raises(ValueError, match="'BLOCK_SIZE_N' = 32 with 'swap_ab'; the weight rows"):
        hp.derive({**SWAP, "BLOCK_SIZE_N": 32}, H200)
    with pytest.raises(ValueError, match="'BLOCK_SIZE_M' = 512 with 'swap_ab'"):
        hp.derive({**SWAP, "BLOCK_SIZE_M": 512}, H200)
    with pytest.raises(ValueError, match="256 x 128 with 'swap_ab' needs 256 accumulator"):
        hp.derive({**SWAP, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128}, H200)


def test_static_compile_of_the_transposed_tile():
    """bias + gelu, bf16 and fp32 out, and on a w transposed in memory (X_KM: its (K, N) storage's BK x BM boxes,
    wgmma's MN-major A): HGMMA, TMA loads and the transposed TMA store, no spills; X_KM issues the same wgmma and
    stores, and fewer TMA loads (its 128-byte rows of 64 weight rows are one message, the K-major box's 256-byte rows of
    128 K columns two)."""
    cases = [dict(kernel=hp.KERNEL_NAME, op="a16w16", arch="sm_90", table="-", bucket="t", config=SWAP, path=p)
             for p in ("gluon-bf16", "gluon-fp32", "gluon-bf16-w_kn")]
    results = compile_sm90_cases(hp, cases)
    for case, res in zip(cases, results):
        broken = broken_promises(res)
        assert not broken, f"{case['path']}: " + "; ".join(broken)
        assert res["metrics"]["counts"]["UTMASTG"] > 0 and res["metrics"]["spill_bytes"] == 0
    counts, kn = results[0]["metrics"]["counts"], results[2]["metrics"]["counts"]
    assert (kn["HGMMA"], kn["UTMASTG"]) == (counts["HGMMA"], counts["UTMASTG"])
    assert kn["UTMALDG"] < counts["UTMALDG"]
    with pytest.raises(ValueError, match="only the swap-AB tile"):
        hp.kernel_constexprs(hp.derive(CFG_128, H200), has_bias=False, activation="none", w_kn=True)


# ----------------------------------------------------------------------------- on the GPU (gpu-marked: `pytest -m gpu`)

DEV = "cuda"

CFG_128 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 5}
CFG_64 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 4, "num_warps": 4,
          "num_stages": 4}
CFG_192 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 6}  # a split tile: accumulators of 128 + 64 columns, 3 sub-tile stores per tile
CFG_96 = {**CFG_192, "BLOCK_SIZE_N": 96}  # a split tile: 64 + 32 columns (shipped for N = 576)
CFGS = {"128x128x64": CFG_128, "64x256x64": CFG_64, "64x192x64": CFG_192, "64x96x64": CFG_96}


def _hp():
    from gemmkit.kernels.gluon import hopper_pingpong

    return hopper_pingpong


def run(x, w, bias=None, act="none", out_dtype=None, cfg=CFG_128, cus=None):
    return launch_dense(_hp(), x, w, bias, act, out_dtype, cfg, cus)


SHAPES = [(1, 264, 64), (17, 1000, 520), (4095, 1032, 776), (256, 512, 4096), (64, 8, 16), (129, 136, 72),
          (2048, 2048, 2048)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, dtype, cfg):
    """Odd M (1, 17, 4095), N and K not multiples of the tile (TMA fills and clips), K < BLOCK_K."""
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV)
    check(run(x, w, cfg=CFGS[cfg]), x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("cfg", ["128x128x64", "64x192x64"])
def test_bias_activation_out_dtype(act, out_dtype, cfg):
    dtype = torch.bfloat16
    M, N, K = 300, 1024, 520
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 8
    b = randn(N, dtype=dtype, device=DEV)
    y = run(x, w, b, act, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


@pytest.mark.gpu
@pytest.mark.parametrize("cus", [1, 2, 3, 7])
@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA (1 CTA: 35 tiles, consumer 0 takes 18, consumer 1 17), bias + gelu."""
    dtype = torch.float16
    M, N, K = 5 * 128 - 3, 7 * 128 + 8, 200
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 4
    b = randn(N, dtype=dtype, device=DEV)
    check(run(x, w, b, "gelu", cfg=CFGS[cfg], cus=cus), x, w, b, "gelu")


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x64", "64x192x64"])
def test_deterministic(cfg):
    """Each output element is one consumer's K-ordered sum, or (a tail split, `tail_plan`) the in-order sum of its
    K splits' partials: bitwise identical run to run on one grid. Unsplit, any grid; the tail split's partials
    depend on the grid (how many tiles the last round holds), so across grids only the reference's bound."""
    dtype = torch.bfloat16
    x, w = randn(1000, 3000, dtype=dtype, device=DEV), randn(2056, 3000, dtype=dtype, device=DEV)
    first = run(x, w, cfg=CFGS[cfg])
    check(first, x, w)
    for _ in range(2):
        assert torch.equal(run(x, w, cfg=CFGS[cfg]), first)
    unsplit = None
    for cus in (None, 5, 1):
        y = poisoned((1000, 2056), dtype, DEV)
        _hp().launch(x, w, None, y, "none", CFGS[cfg], gpu_target(cus), tail=False)
        torch.cuda.synchronize()
        unsplit = y if unsplit is None else unsplit
        assert torch.equal(y, unsplit)
        check(run(x, w, cfg=CFGS[cfg], cus=cus), x, w)


# (M, N, K, CTAs): 128 x 128 tiles with a partial last round (the tail split, forced on: tail=True)
TAIL_CASES = [(1000, 3000, 3072, 132),  # 192 tiles on 132 SMs: 60 tail tiles, 2 splits of 24 steps
              (4095, 1032, 776, 132),  # 288 tiles: 24 tail tiles, 5 splits of 3 / 2 steps; the last row and
              #                          column of tiles shifted back, among the tail tiles
              (129, 1000, 1040, 7),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of 6 / 6 / 5 steps (K % 64 = 16)
              (300, 1032, 1040, 5),  # 27 tiles on 5 CTAs: 2 tail tiles, 2 splits
              (640, 1024, 200, 3),  # 40 tiles on 3 CTAs: 1 tail tile, 3 splits of one / two steps
              (300, 1000, 1040, 4)]  # 24 tiles on 4 CTAs: no partial round (a control: no reduce)


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [5, 6], ids=["c2", "c1"])  # two staging tiles / one, handed over by c_free
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES])
def test_tail_split(M, N, K, cus, stages, launches):
    """The last round's tiles as K splits (`tail_plan`), bias + gelu on both paths (the kernel's epilogue for the
    whole tiles, the tail reduce's for the split ones), every element against float64; the reduce launched
    exactly where the plan splits."""
    dtype = torch.bfloat16
    cfg = {**CFG_128, "num_stages": stages}
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 4
    b = randn(N, dtype=dtype, device=DEV)
    t = gpu_target(cus)
    tail, splits = hp.tail_plan(hp.derive(cfg, t), M, N, K, t.num_cus, True)
    assert (tail > 0) == ((M, N, K) != (300, 1000, 1040)), (tail, splits)
    before = launches["tail_reduce_kernel"]
    y = poisoned((M, N), dtype, DEV)
    _hp().launch(x, w, b, y, "gelu", cfg, t, tail=True)
    torch.cuda.synchronize()
    assert launches["tail_reduce_kernel"] == before + (tail > 0)
    check(y, x, w, b, "gelu")


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_tail_split_out_dtypes(out_dtype, launches):
    """fp16 operands, fp32 / fp16 out, no bias: 192 tiles, 60 of them split 2 ways (K short enough for fp32 out's
    bound of one rounding an output)."""
    dtype = torch.float16
    M, N, K = 1000, 3000, 520
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 8
    y = poisoned((M, N), out_dtype, DEV)
    before = launches["tail_reduce_kernel"]
    _hp().launch(x, w, None, y, "none", CFG_128, gpu_target(), tail=True)
    torch.cuda.synchronize()
    assert launches["tail_reduce_kernel"] == before + 1
    check(y, x, w)


@pytest.mark.gpu
def test_tail_split_served_and_in_cuda_graphs(launches):
    """The op's own call where the rule splits the last round (K >= TAIL_MIN_K; 7 x 38 = 266 tiles of the served
    128 x 128 ping-pong, 2 rounds + 2 tiles, split 8 ways): the reduce runs, the result checked, and the same under
    CUDA-graph replay; deterministic."""
    M, N, K = 790, 4800, 2048
    cfg, _why = configs.serve("a16w16", gpu_target(), M, N, K)
    assert cfg.get("backend") == "gluon" and (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (128, 128), cfg
    check_served_tail_split(M, N, K, launches)


@pytest.mark.gpu
def test_large_square_against_cublas():
    """8192^3 (the timed shape): fp32 accumulation agrees with torch.matmul's within bf16 rounding."""
    dtype = torch.bfloat16
    x, w = torch.randn(8192, 8192, device=DEV, dtype=dtype), torch.randn(8192, 8192, device=DEV, dtype=dtype)
    y = run(x, w)
    ref = x.float() @ w.float().T
    rel = ((y.float() - ref).norm() / ref.norm()).item()
    assert rel <= 2**-8, rel


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x64", "64x192x64"])
@pytest.mark.parametrize("M,N,K", [(1000, 4096, 1024), (256, 576, 7168), (129, 104, 64)])
def test_op_backend_gluon(M, N, K, cfg):
    """gemm_a16w16 with a "backend": "gluon" config runs this kernel (LAUNCHES) and is correct (on a Triton release
    whose budget passes the kernel over for bias + gelu, kernels/_budgets.py: the Triton tier)."""
    import gemmkit
    from gemmkit.ops import _common as C

    dtype = torch.bfloat16
    x, w, bias = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV), \
        randn(N, dtype=dtype, device=DEV)
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((M, N), dtype, DEV),
                            config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert_gluon_or_fallback(C.LAUNCHES, before, "hopper_pingpong_kernel", CFGS[cfg], True, "gelu")
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, bias, "gelu"), dtype)
    assert ok, msg


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x64", "64x192x64"])
def test_op_backend_gluon_falls_back_to_triton(cfg):
    """An output whose rows are not 16-byte multiples (no TMA store; no copy of x and w can help): the same config
    runs on the Triton tier, still correct (a split tile: its power-of-two part, 64 x 128). Split-K runs on Gluon
    (tests/kernels/test_gluon_split_k.py). K % 8 != 0 as well: the Triton kernel reads x and w as given."""
    import gemmkit
    from gemmkit.ops import _common as C

    dtype = torch.float16
    for (M, N, K), extra in [((300, 392, 1001), {}), ((16, 512, 4100), {"NUM_KSPLIT": 4})]:
        x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV)
        before = dict(C.LAUNCHES)
        out = poisoned((M, N + 1), dtype, DEV)[:, :N]  # rows of 2 (N + 1) bytes
        y = gemmkit.gemm_a16w16(x, w, out=out, config={**CFGS[cfg], "backend": "gluon", **extra})
        torch.cuda.synchronize()
        assert C.LAUNCHES["hopper_pingpong_kernel"] == before.get("hopper_pingpong_kernel", 0)
        assert C.LAUNCHES["gemm_kernel"] == before.get("gemm_kernel", 0) + 1
        ok, msg = within_bound(y, gemm_a16w16_ref(x, w, None, None), dtype)
        assert ok, msg


@pytest.mark.gpu
def test_unsupported_inputs_raise():
    hp = _hp()
    t = gpu_target()
    x = torch.randn(64, 100, device=DEV, dtype=torch.bfloat16)  # K % 8 != 0: row stride not 16-byte aligned
    w = torch.randn(64, 100, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="TMA"):
        hp.launch(x, w, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none", CFG_128, t)
    x32 = torch.randn(64, 64, device=DEV)
    with pytest.raises(ValueError, match="bf16/fp16"):
        hp.launch(x32, x32, None, torch.empty(64, 64, device=DEV), "none", CFG_128, t)
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="BLOCK_SIZE_M"):
        hp.launch(x, x, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none",
                  {**CFG_128, "BLOCK_SIZE_M": 256}, t)


# two output tiles / one shared output tile (c_free hand-off) / a split tile (two accumulators, 3 stores)
_SANITIZE_CFGS = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 4,
                   "num_stages": stages} for bm, bn, stages in ((128, 128, 3), (128, 128, 6), (64, 192, 6))]
_SANITIZE_CASES = {"one-cta": [(1, (129, 520, 64)), (1, (520, 520, 520)), (1, (300, 392, 200))],
                   "many-ctas": [(2, (300, 392, 200)), (3, (520, 264, 136)), (2, (128, 256, 64))],
                   # the tail split forced on (`tail_plan`): the last round's splits' partial stores and the reduce
                   "tail": [(5, (300, 1032, 1040)), (5, (129, 1000, 1040)), (2, (520, 520, 520))]}


def _sanitize(tool, cases):
    cfgs = _SANITIZE_CFGS[:2] if cases == "tail" else _SANITIZE_CFGS  # (a split tile has no tail split)
    return sanitize(tool, dense_sanitize_script("hopper_pingpong", cfgs, _SANITIZE_CASES[cases],
                                                ", tail=True" if cases == "tail" else ""))


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
@pytest.mark.parametrize("cases", ["one-cta", "many-ctas", "tail"])
def test_compute_sanitizer(tool, cases):
    """No illegal barrier use (synccheck) and no bad accesses (memcheck), 1-3 persistent CTAs with
    several hand-offs each, with two output tiles, with one shared tile and with a split tile (64 x 192); and
    (tail) 2-5 CTAs whose last round is split along K."""
    out = _sanitize(tool, cases)
    assert_sanitizer_clean(out)


@pytest.mark.gpu
@pytest.mark.parametrize("cases", ["one-cta", "many-ctas"])
def test_racecheck_hazards_only_in_the_ws_dispatch(cases):
    """racecheck (CUDA 13.0, H200) reports no hazard on the kernel's own shared memory: the ring, the
    output tiles, the mbarriers. It does report, nondeterministically (1-16 per launch, with one CTA
    and with several), hazards between one read and two writes that Triton 3.6's warp-specialize
    lowering generates: the dispatch loop of the worker warps reading their per-warp partition-state
    byte, and the default partition writing that byte at the region's entry and exit (source lines:
    the kernel's `def` and its `gl.warp_specialize` call), accesses separated by `bar.sync 1` in
    program order. A warp_specialize kernel with empty partitions showed none (2026-11-22). Not
    understood (docs/kernels/hopper_pingpong.md, "Sanitizers"); this test fails on any hazard at
    another source line."""
    import inspect
    import re

    from gemmkit.kernels.gluon import hopper_pingpong as hp

    src, first = inspect.getsourcelines(hp.hopper_pingpong_kernel.fn)
    # the def and its warp_specialize call (one since the partitions take bundles: hopper_bundles.py)
    allowed = {first + i for i, line in enumerate(src) if line.lstrip().startswith(("def ", "gl.warp_specialize("))}
    assert len(allowed) == 2
    out = _sanitize("racecheck", cases)
    assert "RACECHECK SUMMARY" in out, out[-4000:]
    # every access of every hazard, in whichever file (the ring, the staging tiles and the stores live in
    # hopper_parts.py): only the dispatch's two lines may appear, and every hazard displayed is one counted here
    reports = out.count("Race reported between")
    shown = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed", out)
    assert shown and int(shown.group(1)) == reports, (reports, shown and shown.group(0), out[-4000:])
    sites = set(re.findall(r"access at \S+ in (\S+\.py):(\d+)", out))
    stray = sorted(site for site in sites if site[0] != "hopper_pingpong.py" or int(site[1]) not in allowed)
    assert not stray, f"hazards at {stray}:\n{out[-4000:]}"
