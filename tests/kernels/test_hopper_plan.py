"""The plan builder of the Hopper Gluon kernels (kernels/gluon/hopper_plan.py), on the CPU (pure Python).

What it must get right for every kernel's `derive` (hopper_pingpong, hopper_coop, hopper_fp8_plan): the shared
memory comes from the target (a smaller target shrinks or refuses what sm_90 takes; no target is sm_90's entry
of gemmkit.arch.ARCHS), the ring fit and the staging choice, the register split, the swizzles, and refusals
whose message names the config key.
"""
import dataclasses

import pytest

from gemmkit import arch
from gemmkit.kernels.gluon import hopper_coop as hc
from gemmkit.kernels.gluon import hopper_fp8_plan as fp
from gemmkit.kernels.gluon import hopper_pingpong as hp
from gemmkit.kernels.gluon import hopper_plan as hplan

SM90 = arch.ARCHS["sm_90"]
PP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 5}
COOP = {**PP, "BLOCK_SIZE_N": 256, "num_warps": 8, "num_stages": 4}
FP8 = {**PP, "num_stages": 3}


def small(kib: int):
    return dataclasses.replace(SM90, shared_mem_bytes=kib * 1024)


def test_shared_memory_is_the_targets():
    assert hplan.shared_mem(None) == SM90.shared_mem_bytes == 232448
    assert hplan.shared_mem(small(100)) == 102400
    for derive, cfg in ((hp.derive, PP), (hc.derive, COOP), (fp.derive, FP8)):
        assert derive(cfg, None) == derive(cfg, SM90)


def test_target_none_reads_the_sm90_entry(monkeypatch):
    """No target: whatever ARCHS says sm_90 has (not a number copied into the plan code)."""
    before = hp.derive(PP, None)
    monkeypatch.setitem(arch.ARCHS, "sm_90", small(120))
    assert hplan.shared_mem(None) == 120 * 1024
    after = hp.derive(PP, None)
    assert after.stages < before.stages and after.smem_bytes <= 120 * 1024
    assert hc.derive(COOP, None).smem_bytes <= 120 * 1024 and fp.derive(FP8, None).smem_bytes <= 120 * 1024


@pytest.mark.parametrize("derive,cfg", [(hp.derive, PP), (hc.derive, COOP), (fp.derive, FP8)])
def test_a_smaller_target_shrinks_then_refuses(derive, cfg):
    full = derive(cfg, SM90)
    assert full.smem_bytes <= SM90.shared_mem_bytes
    shrunk = derive(cfg, small(120))
    assert shrunk.smem_bytes <= 120 * 1024 and shrunk.stages >= 2
    assert (shrunk.stages, shrunk.epilogue_bytes) != (full.stages, full.epilogue_bytes)
    with pytest.raises(ValueError, match="needs 2"):
        derive(cfg, small(40))


def test_pingpong_staging_choice_on_a_smaller_target():
    """Two output tiles while num_stages fit beside them, else one shared tile and as many stages as fit."""
    p = hp.derive(PP, SM90)  # 5 x 32 KiB + 2 x 32 KiB + 1 KiB fits 227 KiB
    assert (p.stages, p.c_tiles, p.epilogue_bytes) == (5, 2, 65536)
    p = hp.derive({**PP, "num_stages": 3}, small(160))  # 3 x 32 + 64 + 1 = 161 KiB > 160: one shared tile
    assert (p.stages, p.c_tiles, p.smem_bytes) == (3, 1, 3 * 32768 + 32768 + 1024)
    p = hp.derive({**PP, "num_stages": 3}, small(161))  # exactly fits with two tiles
    assert (p.stages, p.c_tiles) == (3, 2)


def test_budget_ring_fit_and_staging():
    b = hplan.budget(None, (128, 128, 64), stage_bytes=32768, num_stages=8, staging=[("two", 65536), ("one", 32768)],
                     out_bytes=2)
    # 8 stages fit beside neither: the last option, and as many stages as fit beside it
    assert b.staging == "one" and b.stages == (232448 - 32768 - 1024) // 32768 == 6
    assert b.smem_bytes == 6 * 32768 + 32768 + 1024 and b.epilogue_bytes == 32768
    b = hplan.budget(small(100), (1, 1, 1), stage_bytes=10000, num_stages=3, staging=[("a", 50000), ("b", 1)],
                     out_bytes=2, rings=2, want=2)
    # two rings: a slot of each is 20000 bytes; want 2 -> "a" (102400 - 50000 - 1024) // 20000 = 2
    assert (b.staging, b.stages, b.smem_bytes) == ("a", 2, 2 * 2 * 10000 + 50000 + 1024)
    with pytest.raises(ValueError, match=r"leaves room for 1 stage\(s\) per ring .* each ring needs 2"):
        hplan.budget(small(100), (1, 1, 1), stage_bytes=30000, num_stages=3, staging=[("a", 1)], out_bytes=2,
                     rings=2, each_ring=True)
    with pytest.raises(ValueError, match=r"config: 64 x 32 x 16 leaves room for 0 ring stage\(s\) beside the "
                                         r"1000-byte output tile \(4-byte output\); the ring needs 2"):
        hplan.budget(small(2), (64, 32, 16), stage_bytes=5000, num_stages=3, staging=[(1, 1000)], out_bytes=4,
                     staging_name="output tile")


def test_register_split():
    # 12 warps (4 + 4 + 1 padded): 65536 / 384 = 170 -> 168 at entry; (168 * 384 - 24 * 128) / 256 = 240
    assert hplan.register_split(1) == (12, 168, 240)
    assert hplan.register_split(2) == (12, 168, 240)  # the FP8 ping-pong's two load warps share a warpgroup
    # 5 load warps need two warpgroups: 16 warps, 128 at entry, (128 * 512 - 3072) / 256 = 244 -> 240
    assert hplan.register_split(5) == (16, 128, 240)
    for p in (hp.derive(PP), hc.derive(COOP), fp.derive(FP8), fp.derive({**FP8, "num_warps": 8, "num_stages": 6})):
        assert (p.warps, p.regs_at_entry, p.mma_regs, p.load_regs) == (12, 168, 240, 24)


def test_accumulator_registers():
    assert hplan.acc_regs(128, 128) == 128 and hplan.acc_regs(64, 192) == 96
    assert hp.derive(PP).acc_regs == 128 and hc.derive(COOP).acc_regs == 128
    assert (fp.derive(FP8).acc_regs, fp.derive(FP8).partial_regs) == (128, 64)
    with pytest.raises(ValueError, match=r"BLOCK_SIZE_M x BLOCK_SIZE_N = 128 x 256 needs 256 accumulator registers "
                                         r"per thread; the gluon backend allows 128"):
        hp.derive({**PP, "BLOCK_SIZE_N": 256})
    with pytest.raises(ValueError, match=r"128 x 256 \(pingpong\) needs 256 \+ 128 accumulator"):
        fp.derive({**FP8, "BLOCK_SIZE_N": 256})


def test_swizzle():
    assert [hplan.swizzle(b) for b in (256, 128, 192, 64, 96, 32, 16, 8)] == [128, 128, 64, 64, 32, 32, 0, 0]
    p = hp.derive({**PP, "BLOCK_SIZE_K": 32, "BLOCK_SIZE_N": 16, "num_stages": 2}, out_bytes=4)
    assert (p.swizzle_a, p.swizzle_b, p.swizzle_c) == (64, 64, 64)


@pytest.mark.parametrize("change,key", [
    ({"BLOCK_SIZE_K": None}, "'BLOCK_SIZE_K'"),
    ({"GROUP_SIZE_M": None}, "'GROUP_SIZE_M'"),
    ({"BLOCK_SIZE_M": 32}, "'BLOCK_SIZE_M' = 32"),
    ({"BLOCK_SIZE_N": 48}, "'BLOCK_SIZE_N' = 48"),
    ({"num_warps": 2}, "'num_warps' = 2"),
    ({"GROUP_SIZE_M": 0}, "'GROUP_SIZE_M' = 0"),
    ({"NUM_KSPLIT": 2}, "'NUM_KSPLIT' = 2"),
    ({"swap_ab": True}, "'swap_ab'"),
    ({"waves_per_eu": 1}, "waves_per_eu"),
])
def test_check_config_names_the_key(change, key):
    cfg = {k: v for k, v in {**PP, **change}.items() if v is not None}
    with pytest.raises(ValueError, match=key):
        hplan.check_config(cfg, "gluon fp8", "the gluon fp8 kernel", "")
    with pytest.raises(ValueError, match="'BLOCK_SIZE_K' = 256"):
        hplan.check_block_k(256)
    hplan.check_block_k(128)


def test_plan_classes():
    """One plan type per kernel layout, named for it, sharing HopperPlan's fields; frozen."""
    types = {type(hp.derive(PP)), type(hc.derive(COOP)), type(fp.derive(FP8))}
    assert types == {hplan.PingPongPlan, hplan.CoopPlan, hplan.Fp8Plan}
    assert all(issubclass(t, hplan.HopperPlan) for t in types)
    common = {f.name for f in dataclasses.fields(hplan.HopperPlan)}
    assert {"stages", "smem_bytes", "mma_regs", "swizzle_c"} <= common
    with pytest.raises(dataclasses.FrozenInstanceError):
        hp.derive(PP).stages = 3
    assert hp.is_coop(COOP) and not hp.is_coop(PP) and hplan.is_coop is hp.is_coop


GATED = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
         "num_stages": 4, "gated": True}


def test_gated_plan():
    """The ping-pong's gated tile ("Gated" in hopper_pingpong.py): two w boxes of BN rows a stage (the gate's and the
    up's), two BM x BN accumulators, two staging tiles, no tail split; GATED in its constexprs (False in the dense
    kernel's: a constexpr every launch passes, Triton 3.9 compiles no defaulted one)."""
    target = arch.get("sm_90")
    p = hp.derive(GATED, target)
    assert (p.BM, p.BN, p.w_box, p.gated, p.acc_regs, p.c_tiles) == (64, 128, 128, True, 128, 2)
    assert p.stage_bytes == (64 + 2 * 128) * 64 * 2
    assert hp.tail_plan(p, 4096, 14336, 8192, target.num_cus, True) == (0, 1)
    assert hp.kernel_constexprs(p, has_bias=False, activation="silu")["GATED"] is True
    dense = hp.derive({k: v for k, v in GATED.items() if k != "gated"}, target)
    assert not dense.gated and hp.kernel_constexprs(dense, has_bias=False, activation="silu")["GATED"] is False


@pytest.mark.parametrize("change, match", [
    ({"NUM_KSPLIT": 2}, "unsplit"),
    ({"swap_ab": True}, "unswapped"),
    ({"BLOCK_SIZE_N": 192}, "BLOCK_SIZE_N"),  # a split width: the gated tile's A = B
    ({"BLOCK_SIZE_M": 128}, "two accumulators"),  # 256 accumulator registers a thread
])
def test_gated_plan_refuses(change, match):
    with pytest.raises(ValueError, match=match):
        hp.derive({**GATED, **change}, arch.get("sm_90"))



def test_gated_coop_plan():
    """The cooperative kernel's gated tile: 128 x 128 of h, a gate and an up accumulator of 64 x 128 a consumer (128
    registers), one staging tile a consumer, the gate's and the up's boxes beside x's 128 rows a stage."""
    target = arch.get("sm_90")
    p = hc.derive({**GATED, "num_warps": 8, "BLOCK_SIZE_M": 128}, target)
    assert (p.BM, p.BN, p.BM_C, p.w_box, p.epi_split, p.gated, p.acc_regs) == (128, 128, 64, 128, 1, True, 128)
    assert p.stage_bytes == (128 + 2 * 128) * 64 * 2 and hc.y_box(p) == (64, 128)
    assert hc.kernel_constexprs(p, has_bias=False, activation="silu")["GATED"] is True
    with pytest.raises(ValueError, match="two accumulators"):  # 128 x 256: 256 registers a consumer thread
        hc.derive({**GATED, "num_warps": 8, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256}, target)
    with pytest.raises(ValueError, match="unsplit"):
        hc.derive({**GATED, "num_warps": 8, "BLOCK_SIZE_M": 128, "NUM_KSPLIT": 2}, target)


@pytest.mark.parametrize("module", [hp, hc], ids=["pingpong", "coop"])
def test_gated_tile_is_compiled_by_gemmkit_isa(module):
    cases = [c for c in module.isa_cases(["sm_90"]) if c["path"].endswith("-gated")]
    assert {c["path"] for c in cases} == {"gluon-bf16-gated", "gluon-fp32-gated"}
    assert len(cases) == 2 * len(module.GATED_PRESETS)
    spec = module.isa_spec(cases[0])
    assert spec["constexprs"]["GATED"] is True and spec["constexprs"]["HAS_BIAS"] is False


def test_gated_operand_checks():
    """The gated launches' checks (hopper_host.check_gated_operands, on CPU tensors: the shapes and the activation
    only): w must hold 2 x I rows for h (M, I), and the gate takes an activation."""
    import torch

    from gemmkit.kernels.gluon import hopper_host as hh

    target = arch.get("sm_90")
    x, w = torch.empty(8, 64, dtype=torch.bfloat16), torch.empty(128, 64, dtype=torch.bfloat16)
    hh.check_gated_operands(x, w, torch.empty(8, 64, dtype=torch.bfloat16), "silu", target, "gated")
    with pytest.raises(ValueError, match="2 x I rows"):
        hh.check_gated_operands(x, w, torch.empty(8, 48, dtype=torch.bfloat16), "silu", target, "gated")
    with pytest.raises(ValueError, match="activation"):
        hh.check_gated_operands(x, w, torch.empty(8, 64, dtype=torch.bfloat16), "none", target, "gated")
