"""The Gluon cooperative kernel (kernels/gluon/hopper_coop.py): on the CPU its plan (pure Python), its
wiring (config validation, the op's dispatch, the tuner's space) and a static compile for sm_90; on
the H200 (gpu-marked, the last section) the kernel itself.

Gluon does not run in the interpreter: on the CPU the kernel is compiled for sm_90 in a subprocess
without TRITON_INTERPRET and its SASS checked against PROMISES (HGMMA, TMA loads and stores, no
spills, shared memory within the plan, 12 warps).

The GPU tests (`pytest -m gpu tests/kernels/test_hopper_coop.py`) call it through its launcher
(gemmkit.kernels.gluon.hopper_coop.launch) and through gemm_a16w16 with a "backend": "gluon" config.
Reference: float64 on the CPU (gemmkit.reference); outputs poisoned with NaN first, so an unwritten
element fails (tests/_util.within_bound: every element finite, norm-wise bound of half an ulp of the
output dtype, x2). Small persistent grids (target.with_cus(n)) give each CTA many tiles, so the ring
wraps across tiles while the consumers run epilogues.
"""
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
from gemmkit.kernels.gluon import hopper_pingpong as hp
from gemmkit.reference import gemm_a16w16_ref

H200 = arch.get("sm_90")
BASE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
        "num_stages": 4}


def test_plan_of_the_128x256_tile():
    p = hc.derive(BASE, H200)
    assert (p.BM, p.BN, p.BK, p.BM_C, p.stages) == (128, 256, 64, 64, 4)
    assert p.stage_bytes == (128 + 256) * 64 * 2 == 49152
    # 4 stages (192 KiB) leave 35 KiB: two 64 x 128 bf16 sub-tile buffers (16 KiB each), not two 64 x 256 ones
    assert (p.epi_split, p.epi_n, p.epilogue_bytes) == (2, 128, 2 * 64 * 128 * 2)
    assert p.smem_bytes == 4 * 49152 + 32768 + 1024 <= H200.shared_mem_bytes
    # the ping-pong's register split; the accumulator is one ping-pong 128 x 128 tile's
    assert (p.warps, p.regs_at_entry, p.mma_regs, p.load_regs, p.acc_regs) == (12, 168, 240, 24, 128)
    assert (p.swizzle_a, p.swizzle_b, p.swizzle_c) == (128, 128, 128)


def test_epilogue_split_follows_the_stages():
    p = hc.derive({**BASE, "num_stages": 3}, H200)  # 3 stages: whole 64 x 256 tiles fit beside them
    assert (p.stages, p.epi_split, p.epi_n, p.smem_bytes) == (3, 1, 256, 3 * 49152 + 65536 + 1024)
    p = hc.derive(BASE, H200, out_bytes=4)  # fp32 out, 4 stages: 64 x 64 fp32 sub-tiles
    assert (p.stages, p.epi_split, p.epi_n) == (4, 4, 64)
    p = hc.derive({**BASE, "num_stages": 8}, H200)  # upper bound: the most that fit beside 4 sub-tiles
    assert (p.stages, p.epi_split) == (4, 4)
    p = hc.derive({**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128}, H200)
    assert (p.BM_C, p.acc_regs, p.stages, p.epi_split, p.epi_n) == (128, 128, 4, 2, 64)
    p = hc.derive({**BASE, "BLOCK_SIZE_N": 128}, H200)
    assert (p.acc_regs, p.stages, p.epi_split) == (64, 4, 1)


def test_plan_of_the_split_tiles():
    """192 = 128 + 64 columns (96 = 64 + 32): two accumulators, w loaded as 3 boxes of BN / 3 rows into two
    rings, the output stored as 3 sub-tiles of BN / 3 columns: one staging sub-tile per consumer where the stages
    asked for do not fit beside 3 (128 x 192 x 64, 5 stages: 5 x 40 KiB + 2 x 8 KiB), 3 where they do (4 stages)."""
    p = hc.derive({**BASE, "BLOCK_SIZE_N": 192, "num_stages": 5}, H200)
    assert (p.BN, p.BN_TAIL, p.w_box, p.acc_regs) == (192, 64, 64, 96)
    assert p.stage_bytes == (128 + 192) * 64 * 2 == 40960
    assert (p.stages, p.epi_split, p.epi_n, p.c_pieces, p.epilogue_bytes) == (5, 3, 64, 1, 2 * 64 * 64 * 2)
    assert p.smem_bytes == 5 * 40960 + 16384 + 1024 <= H200.shared_mem_bytes
    p = hc.derive({**BASE, "BLOCK_SIZE_N": 192, "num_stages": 4}, H200)
    assert (p.stages, p.epi_split, p.c_pieces, p.epilogue_bytes) == (4, 3, 3, 2 * 3 * 64 * 64 * 2)
    p = hc.derive({**BASE, "BLOCK_SIZE_N": 192, "num_stages": 5}, H200, out_bytes=4)  # fp32 staging: 4 stages
    assert (p.stages, p.epi_split, p.epi_n, p.c_pieces) == (4, 3, 64, 1)
    p = hc.derive({**BASE, "BLOCK_SIZE_N": 96, "num_stages": 6}, H200)
    assert (p.BN, p.BN_TAIL, p.w_box, p.acc_regs, p.stages, p.epi_n, p.c_pieces) == (96, 32, 32, 48, 6, 32, 3)
    assert hc.derive(BASE, H200).BN_TAIL == 0 and hc.derive(BASE, H200).w_box == 256


@pytest.mark.parametrize("bm, bn, tail", [(128, 48, 16), (128, 80, 16), (128, 144, 16), (128, 160, 32),
                                          (256, 48, 16), (256, 80, 16), (256, 96, 32)])
def test_plan_of_the_split_tiles_a_plus_b(bm, bn, tail):
    """BN = A + B with A = 2, 4 or 8 B: w boxes of B rows, the output in A / B + 1 sub-tiles of B columns per
    consumer; at 256 rows (128 a consumer) only the widths within 128 accumulator registers."""
    p = hc.derive({**BASE, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "num_stages": 6}, H200)
    assert (p.BN, p.BN_TAIL, p.w_box, p.epi_split, p.epi_n) == (bn, tail, tail, bn // tail, tail)
    assert p.acc_regs == bm // 2 * bn // 128 and p.c_pieces in (1, bn // tail)
    assert p.epilogue_bytes == 2 * p.c_pieces * (bm // 2) * tail * 2
    assert p.smem_bytes <= H200.shared_mem_bytes


@pytest.mark.parametrize("bn", [144, 160, 192])
def test_split_tiles_past_the_accumulator_budget_at_256_rows(bn):
    with pytest.raises(ValueError, match="accumulator"):
        hc.derive({**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": bn}, H200)


def test_split_tiles_are_the_dense_gluon_kernels_only():
    from gemmkit import configs
    from gemmkit.kernels.gluon import hopper_pingpong_batched as hb
    from gemmkit.kernels.triton import dense as G

    cfg = {**BASE, "BLOCK_SIZE_N": 192, "backend": "gluon"}
    assert configs.validate_config(cfg, backend="cuda")["BLOCK_SIZE_N"] == 192
    assert configs.validate_config({**cfg, "num_warps": 4, "BLOCK_SIZE_M": 64}, backend="cuda")  # the ping-pong's
    for bad in ({**cfg, "backend": "triton"}, {k: v for k, v in cfg.items() if k != "backend"}):
        with pytest.raises(configs.ConfigError, match="split tile"):
            configs.validate_config(bad, backend="cuda")
    with pytest.raises(configs.ConfigError, match="BLOCK_SIZE_N"):
        configs.validate_config({**cfg, "BLOCK_SIZE_N": 176}, backend="cuda")  # 128 + 32 + 16: three widths
    for c in (cfg, {**cfg, "num_warps": 4, "BLOCK_SIZE_M": 64}):
        with pytest.raises(ValueError, match="batched kernels take powers of two"):
            hb.kernel_plan(c, H200, 2, 2, has_bias=False, activation="none")
    # the batched op refuses them on every path (its Triton tier included: here, the interpreter)
    import torch

    import gemmkit
    x = torch.randn(2, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="batched GEMMs take powers of two"):
        gemmkit.batched_gemm_a16w16(x, x, config=cfg)
    from gemmkit.configs import SPLIT_N
    from gemmkit.tune import op_space
    space = op_space("batched_a16w16")(512, 8192, 8192, H200)
    assert space and not [c for c in space if c["BLOCK_SIZE_N"] in SPLIT_N]
    # the Triton tier (the op's fallback) runs the power-of-two part; its feasibility is that tile's
    assert G.triton_tile(cfg)["BLOCK_SIZE_N"] == 128 and G.triton_tile({**cfg, "BLOCK_SIZE_N": 96})["BLOCK_SIZE_N"] == 64
    assert G.triton_tile(BASE) is BASE
    G.check_feasible({**cfg, "num_stages": 4}, H200)  # (128 + 128) x 64 x 2 x 4 stages: fits
    with pytest.raises(ValueError, match="BLOCK_SIZE_M/N/K = 128/128/64"):
        G.check_feasible({**cfg, "num_stages": 8}, H200)


SWAP = {"BLOCK_SIZE_M": 144, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
        "num_stages": 6, "swap_ab": True}


def test_swap_ab_plan_and_its_config():
    """The cooperative swap-AB tile ("Swap-AB" in hopper_coop.py): the config names y's tile (144 tokens x 128 weight
    rows); the plan is its transpose, 128 weight rows (64 a consumer) x a split width of tokens (128 + 16), each
    16-token piece staged transposed (16 x 64); the Triton fallback runs the power-of-two part unswapped."""
    from gemmkit.kernels.gluon import hopper_host as hh
    from gemmkit.kernels.triton import dense as G
    from gemmkit.ops import dispatch

    cfg = configs.validate_config({**SWAP, "backend": "gluon"}, backend="cuda")
    plan = hc.derive(cfg, H200)
    assert (plan.BM, plan.BN, plan.BM_C, plan.BN_TAIL, plan.w_box, plan.swap) == (128, 144, 64, 16, 16, True)
    assert plan.acc_regs == 72 and hc.y_box(plan) == (16, 64) and hc.y_box(hc.derive(BASE, H200)) == (64, 128)
    assert hh.token_boxes(plan, 138, plan.w_box) == (128, 16, 1)  # the token boxes as they are, the last past M
    assert hc.kernel_constexprs(plan, has_bias=True, activation="none")["SWAP"] is True
    assert hc.kernel_constexprs(hc.derive(BASE, H200), has_bias=True, activation="none")["SWAP"] is False
    assert hc.tail_of(plan, cfg, 138, 30848, 7552, H200) == (0, 1)
    assert G.triton_tile(cfg)["BLOCK_SIZE_M"] == 128 and G.triton_tile({**cfg, "BLOCK_SIZE_M": 80})["BLOCK_SIZE_M"] == 64
    assert dispatch.pad_m(dispatch.GLUON_COOP, cfg, 138, 30848, 7552, 2, 2) == 0
    for w, tail in ((48, 16), (80, 16), (96, 32), (160, 32), (192, 64)):
        p = hc.derive({**cfg, "BLOCK_SIZE_M": w, "num_stages": 5}, H200)
        assert (p.BN, p.BN_TAIL, p.swap) == (w, tail, True)
    # 256 weight rows (128 a consumer) up to 160 tokens: 160 accumulators a consumer thread (SWAP_TALL_ACC_REGS)
    tall = configs.validate_config({**cfg, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_M": 160, "num_stages": 4}, backend="cuda")
    p = hc.derive(tall, H200)
    assert (p.BM, p.BN, p.BM_C, p.BN_TAIL, p.acc_regs, p.swap) == (256, 160, 128, 32, 160, True)
    assert hc.y_box(p) == (32, 128)
    with pytest.raises(ValueError, match="accumulator"):  # 192 tokens: 192 registers (8 B spilled with a gelu)
        hc.derive({**tall, "BLOCK_SIZE_M": 192}, H200)
    with pytest.raises(ValueError, match="accumulator"):  # the limit is the swapped tall tile's alone
        hc.derive({**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 160}, H200)


@pytest.mark.parametrize("change,match", [
    ({"BLOCK_SIZE_N": 64}, "BLOCK_SIZE_N"),  # 128 or 256 weight rows: two consumers of 64 or 128
    ({"BLOCK_SIZE_N": 512}, "BLOCK_SIZE_N"),
    ({"BLOCK_SIZE_M": 128}, "BLOCK_SIZE_M"),  # tokens in a split width (powers of two: the ping-pong's swap)
    ({"NUM_KSPLIT": 2}, "NUM_KSPLIT"),
    ({"backend": "triton"}, "backend"),
])
def test_swap_ab_config_rejects(change, match):
    with pytest.raises(configs.ConfigError, match=match):
        configs.validate_config({**SWAP, "backend": "gluon", **change}, backend="cuda")
    with pytest.raises(configs.ConfigError, match="split width of tokens"):  # 144 rows unswapped: no kernel has them
        configs.validate_config({**SWAP, "backend": "gluon", "swap_ab": False}, backend="cuda")


def test_static_compile_of_the_swap_ab_tile():
    """144 tokens x 128 weight rows (nine 16-token pieces a consumer, each transposed into its staging and stored)
    compiles for sm_90 with its promises: HGMMA, TMA loads (the weights' box and nine token boxes a stage) and stores,
    no spills."""
    cases = [dict(kernel=hc.KERNEL_NAME, op="hopper_coop", arch="sm_90", table="-", bucket="t", config=SWAP,
                  path="gluon-bf16")]
    for case, res in zip(cases, compile_sm90_cases(hc, cases)):
        broken = broken_promises(res)
        assert not broken, "; ".join(broken)
        m = res["metrics"]
        assert m["spill_bytes"] == 0 and m["counts"]["UTMALDG"] >= 10 and m["counts"]["UTMASTG"] >= 9, m["counts"]


@pytest.mark.parametrize("change,match", [
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 192}, "accumulator"),  # 128 x 192 per consumer: 192 registers
    ({"BLOCK_SIZE_M": 64}, "BLOCK_SIZE_M"),
    ({"num_warps": 4}, "num_warps"),
    ({"BLOCK_SIZE_N": 512}, "BLOCK_SIZE_N"),
    ({"BLOCK_SIZE_K": 256}, "BLOCK_SIZE_K"),
    ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256}, "accumulator"),  # 128 x 256 per consumer: 256 registers
    ({"waves_per_eu": 2}, "do not apply"),
    ({"BLOCK_SIZE_K": 128, "num_stages": 1}, "ring needs 2"),
])
def test_plan_rejects_what_cannot_run(change, match):
    with pytest.raises(ValueError, match=match):
        hc.derive({**BASE, **change}, H200)


def test_table_keys_and_backend():
    from gemmkit import configs

    assert hc.derive({**BASE, "backend": "gluon", "persistent": True, "tma": True}, H200).stages == 4
    assert hp.is_coop(BASE) and not hp.is_coop({**BASE, "num_warps": 4})  # num_warps picks the layout
    assert configs.validate_config({**BASE, "backend": "gluon"}, backend="cuda")["backend"] == "gluon"
    # AMD tables may name "gluon" too: the CDNA ping-pong (ops/dispatch.py), or the Triton tier with the reason
    assert configs.validate_config({**BASE, "backend": "gluon"}, backend="hip")["backend"] == "gluon"


@pytest.mark.parametrize("bn", [256, 192])
def test_op_dispatch_falls_back_where_gluon_cannot_run(bn):
    """On the CPU (interpreter) a cooperative gluon config runs the Triton tier with the same 8-warp tile
    (a split tile: its power-of-two part, kernels/triton/dense.py triton_tile)."""
    import torch

    import gemmkit
    from gemmkit.ops import _common as C

    x, w = torch.randn(40, 64, dtype=torch.bfloat16), torch.randn(200, 64, dtype=torch.bfloat16)
    before = C.LAUNCHES[hc.KERNEL_NAME]
    y = gemmkit.gemm_a16w16(x, w, config={**BASE, "BLOCK_SIZE_N": bn, "num_stages": 2, "backend": "gluon"})
    assert C.LAUNCHES[hc.KERNEL_NAME] == before
    assert ((y.float() - x.float() @ w.float().T).norm() / (x.float() @ w.float().T).norm()) < 2**-8


@pytest.mark.parametrize("rows", [128, 256])
def test_op_swap_ab_falls_back_on_the_cpu(rows):
    """The swap-AB config through gemm_a16w16 in the interpreter: the Triton tier's 128 x 128 tile (128 x 256 for 256
    weight rows), unswapped, every element right (float64 reference, the output poisoned), bias and activation per
    weight row."""
    import torch

    import gemmkit
    from gemmkit.ops import _common as C

    x, w = torch.randn(139, 64, dtype=torch.bfloat16), torch.randn(136, 64, dtype=torch.bfloat16)
    b = torch.randn(136, dtype=torch.bfloat16)
    before = C.LAUNCHES[hc.KERNEL_NAME]
    out = poisoned((139, 136), torch.bfloat16, "cpu")
    cfg = {**SWAP, "BLOCK_SIZE_N": rows, "num_stages": 2, "backend": "gluon"}
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", out=out, config=cfg)
    assert C.LAUNCHES[hc.KERNEL_NAME] == before
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg


def test_tuner_offers_coop_large_tiles_at_large_m_only():
    from gemmkit.tune import prune, search_space

    coop = lambda c: c.get("backend") == "gluon" and hp.is_coop(c)  # noqa: E731
    big = [c for c in search_space(1024, 8192, 8192, H200, "a16w16") if coop(c)]
    assert big and all(c["num_warps"] == 8 for c in big)
    kept = [c for c in prune(big, 1024, 8192, 8192, H200) if coop(c)]
    assert kept and all(hc.derive(c, H200) for c in kept)
    # below M = 1024 the cooperative kernel is offered its split tile (128 x 192) and 128 x 128 only
    assert {(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"]) for c in search_space(512, 8192, 8192, H200, "a16w16")
            if coop(c)} == {(128, 192), (128, 128)}
    assert {(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"]) for c in big} == {(128, 192), (128, 256), (256, 128), (128, 128)}
    assert [c for c in search_space(512, 8192, 8192, H200, "a16w16") if c.get("backend") == "gluon" and not coop(c)]


def test_isa_cases_are_sm90_only_and_pingpong_ignores_coop():
    assert list(hc.isa_cases(["gfx942", "gfx950"])) == []
    cases = list(hc.isa_cases(["sm_90"]))
    assert {c["path"] for c in cases} >= {"gluon-bf16", "gluon-fp32"}
    assert all(c["kernel"] == hc.KERNEL_NAME for c in cases)
    assert all(not hp.is_coop(c["config"]) for c in hp.isa_cases(["sm_90"]))
    from gemmkit.isa.report import PROVIDERS

    assert PROVIDERS["hopper_coop"] == "gemmkit.kernels.gluon.hopper_coop"


def test_static_compile_sm90_keeps_promises():
    """128 x 256 x 64 with 4 stages (bf16 out through 2 sub-tiles, bias + gelu), 256 x 128 x 64
    (fp32 out through 4 sub-tiles) and the 128 x 192 split tile (bf16 out, 3 sub-tiles) compile for
    sm_90 with HGMMA, TMA loads and stores, no spills."""
    cases = [dict(kernel=hc.KERNEL_NAME, op="hopper_coop", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16"),
             dict(kernel=hc.KERNEL_NAME, op="hopper_coop", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128}, path="gluon-fp32"),
             dict(kernel=hc.KERNEL_NAME, op="hopper_coop", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_N": 192, "num_stages": 5}, path="gluon-bf16")]
    # the split tiles A = 4 B and 8 B (160 = 128 + 32, 144 = 128 + 16), and 80 = 64 + 16 at 256 rows
    cases += [dict(kernel=hc.KERNEL_NAME, op="hopper_coop", arch="sm_90", table="-", bucket="t",
                   config={**BASE, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "num_stages": 6}, path="gluon-bf16")
              for bm, bn in ((128, 160), (128, 144), (256, 80))]
    for case, res in zip(cases, compile_sm90_cases(hc, cases)):
        broken = broken_promises(res)
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        m = res["metrics"]
        assert m["counts"]["HGMMA"] > 0 and m["counts"]["UTMASTG"] > 0 and m["spill_bytes"] == 0
        bn = case["config"]["BLOCK_SIZE_N"]
        tail = configs.split_tail(bn)
        if tail:  # x, A / B w boxes and the tail box a stage; A / B + 1 sub-tile stores a consumer
            assert m["counts"]["UTMALDG"] >= bn // tail + 1 and m["counts"]["UTMASTG"] >= bn // tail, m["counts"]


def test_promises_are_the_pingpongs():
    row = {"num_warps": 12, "vgpr": 168, "spill_bytes": 0, "lds_bytes": 100, "smem_bound": 200,
           "counts": {"HGMMA": 8, "HMMA": 0, "UTMALDG": 2, "UTMASTG": 4, "LDL": 0, "STL": 0}}
    assert all(c["ok"] for c in evaluate(hc.PROMISES, row, BASE, H200))


def test_tuner_merge_checks_the_coop_fallback_too():
    """A cooperative gluon winner is merged only if its Triton fallback (the pointer kernel, same tiles) fits:
    fallback_fits treats it as it treats "gluon"."""
    from gemmkit.tune.merge import fallback_fits

    assert fallback_fits({**BASE, "backend": "gluon", "num_stages": 3}, "sm_90")
    too_deep = {**BASE, "BLOCK_SIZE_M": 256, "backend": "gluon", "num_stages": 8}
    assert not fallback_fits(too_deep, "sm_90")
    assert fallback_fits({**too_deep, "backend": "triton"}, "sm_90")  # not a Gluon config: not its business


def test_isa_compiles_only_the_triton_path_the_fallback_can_take():
    """A 4-stage 128 x 256 cooperative bucket with "tma": true: the Triton TMA kernel's ring would not fit
    (ops/dispatch.py takes the pointer kernel), so the static report compiles the pointer kernel alone."""
    from gemmkit.kernels.triton import dense as G
    from gemmkit.ops import dispatch as D

    cfg = {**BASE, "backend": "gluon", "persistent": True, "tma": True, "NUM_KSPLIT": 1}
    assert [k for k, _ in D.kernels_for(cfg, H200)] == [D.GLUON_COOP, D.TRITON_POINTER]
    assert G.triton_kernels({**cfg, "num_stages": 3}, H200) == [D.TRITON_TMA, D.TRITON_POINTER]
    # a shipped 4-stage 128 x 256 bucket with "tma": true compiles the pointer kernel alone
    paths = {c["path"] for c in G.table_cases("a16w16", ["sm_90"])
             if c["table"] == "A16W16-N=4096-K=4096.json" and c["bucket"] == "M_GEQ_1024"}
    assert paths == {"pointer"}


def test_tail_plan_of_the_coop_tiles():
    """The tail split (hopper_pingpong.tail_plan on a CoopPlan): the power-of-two coop tiles split the last round
    along K by the ping-pong's rule; split tiles and split-K do not."""
    plan = hc.derive(BASE, H200)
    # 1412 x 6144: 12 x 24 = 288 tiles of 128 x 256 on 132 SMs, 2 rounds + 24: the 24 run as 5 splits each
    assert hp.tail_plan(plan, 1412, 6144, 25984, 132) == (24, 5)
    assert hp.tail_plan(plan, 1412, 6144, config_tail.TAIL_MIN_K - 64, 132) == (0, 1)
    assert hp.tail_plan(plan, 1412, 6144, 1024, 132, tail=True) == (24, 4)  # 16 K steps: 4 ranges of 4 start below K
    assert hp.tail_plan(plan, 1412, 6144, 25984, 132, tail=False) == (0, 1)
    # 4096 x 28672: 3584 tiles, 27 rounds + 20; 6 splits would save 5 / 6 of one round in 28, under TAIL_MIN_SAVING
    assert hp.tail_plan(plan, 4096, 28672, 8192, 132) == (0, 1)
    assert hp.tail_plan(hc.derive({**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128}, H200), 1412, 6144, 4096,
                        132) == (24, 5)
    for cfg in ({**BASE, "BLOCK_SIZE_N": 192, "num_stages": 5}, {**BASE, "NUM_KSPLIT": 2}):
        assert hp.tail_plan(hc.derive(cfg, H200), 1412, 6144, 25984, 132) == (0, 1)
    ce = hc.kernel_constexprs(plan, has_bias=True, activation="gelu", tail=True)
    assert ce["TAIL"] is True and hc.kernel_constexprs(plan, has_bias=True, activation="gelu")["TAIL"] is False


def test_no_tail_split_where_the_release_spills_it(monkeypatch):
    """kernels/_budgets.tail_split_ok (TAIL_COOP_WIDE): on Triton 3.9 the 128 x 256 tile's tail variant spills (bias +
    gelu_tanh, 112 B), so that tile runs whole tiles there (a forced tail too) and `gemmkit isa` compiles no such case;
    256 x 128 and every release before keep it."""
    from gemmkit.kernels import _budgets

    wide, tall = BASE, {**BASE, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128}
    for version, wide_ok in (((3, 6), True), ((3, 8), True), ((3, 9), False), ((3, 10), False)):
        assert _budgets.tail_split_ok(hc.KERNEL_NAME, wide, version) is wide_ok
        assert _budgets.tail_split_ok(hc.KERNEL_NAME, tall, version)
        assert _budgets.tail_split_ok(hp.KERNEL_NAME, {**BASE, "num_warps": 4, "BLOCK_SIZE_N": 128}, version)
        monkeypatch.setattr(_budgets, "installed", lambda v=version: v)
        tails = {c["config"]["BLOCK_SIZE_N"] for c in hc.isa_cases(["sm_90"]) if c["path"].endswith("-tail")}
        assert tails == ({256, 128} if wide_ok else {128})


def test_static_compile_of_the_tail_variant():
    """The tail split's variant (TAIL: a consumer's fp32 partial stored from its accumulator beside the staged
    epilogue) keeps the promises without spills: 128 x 256 with two sub-tiles a consumer (4 stages) and one (3),
    256 x 128; `gemmkit isa` compiles them as "-tail" cases."""
    tails = [c for c in hc.isa_cases(["sm_90"]) if c["path"].endswith("-tail")]
    assert {(c["bucket"], c["path"]) for c in tails} == {("preset0-tail", "gluon-bf16-tail"),
                                                         ("preset1-tail", "gluon-bf16-tail"),
                                                         ("preset2-tail", "gluon-bf16-tail"),
                                                         ("preset0-tail", "gluon-fp32-tail")}
    for case, res in zip(tails, compile_sm90_cases(hc, tails)):
        broken = broken_promises(res)
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        assert res["metrics"]["spill_bytes"] == 0 and res["metrics"]["counts"]["HGMMA"] > 0


def test_plan_of_split_k():
    """NUM_KSPLIT > 1: fp32 partial sub-tiles (128 x 256 x 64, 4 stages: 4 sub-tiles of 64 x 64 fp32)."""
    p = hc.derive({**BASE, "num_stages": 4, "NUM_KSPLIT": 2}, H200, 2, 2)
    assert (p.split_k, p.epi_split, p.stages) == (2, 4, 4)
    assert p == hc.derive({**BASE, "num_stages": 4, "NUM_KSPLIT": 2}, H200, 2, 4)
    ce = hc.kernel_constexprs(p, has_bias=True, activation="silu")
    assert (ce["SPLIT_K"], ce["HAS_BIAS"], ce["ACTIVATION"], ce["BN"]) == (True, False, "none", 256)


# ----------------------------------------------------------------------------- on the GPU (gpu-marked: `pytest -m gpu`)

DEV = "cuda"

CFG_S4 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
          "num_stages": 4}  # 2 output sub-tiles per consumer (bf16), 4 (fp32)
CFG_S3 = {**CFG_S4, "num_stages": 3}  # whole 64 x 256 output tile per consumer
CFG_256 = {**CFG_S4, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 4}  # 128 x 128 per consumer
CFG_192 = {**CFG_S4, "BLOCK_SIZE_N": 192, "num_stages": 5}  # split tile: 128 + 64 columns, 3 sub-tile stores
CFG_96 = {**CFG_S4, "BLOCK_SIZE_N": 96, "num_stages": 6}  # split tile: 64 + 32 columns
CFGS = {"128x256x64-s4": CFG_S4, "128x256x64-s3": CFG_S3, "256x128x64-s4": CFG_256, "128x192x64-s5": CFG_192,
        "128x96x64-s6": CFG_96}


def _hc():
    from gemmkit.kernels.gluon import hopper_coop

    return hopper_coop


def run(x, w, bias=None, act="none", out_dtype=None, cfg=CFG_S4, cus=None):
    return launch_dense(_hc(), x, w, bias, act, out_dtype, cfg, cus)


SHAPES = [(1, 264, 64), (17, 1000, 520), (4095, 1032, 776), (129, 136, 72), (300, 392, 200), (64, 8, 16),
          (2048, 2048, 2048)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, cfg):
    """M = 1 / 17 (consumer 1's rows all past M), ragged M, N, K (TMA fills and clips), K < BLOCK_K."""
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    check(run(x, w, cfg=CFGS[cfg]), x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K", [(17, 1000, 520), (4095, 1032, 776)])
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
def test_fp16(M, N, K, cfg):
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    check(run(x, w, cfg=CFGS[cfg]), x, w)


@pytest.mark.gpu
@pytest.mark.parametrize("act,out_dtype", [(a, torch.bfloat16) for a in ("none", "relu", "gelu", "gelu_tanh", "silu")]
                         + [("gelu", torch.float16), ("silu", torch.float32), ("none", torch.float32)],
                         ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_bias_activation_out_dtype(act, out_dtype, cfg):
    """Bias + every activation (bf16 out), fp16 out, fp32 out (4 sub-tiles of 64 x 64 per consumer; the split
    tile: 3 of 64 x 64, bias and activation applied to each accumulator with its own columns)."""
    M, N, K = 300, 1032, 520
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 8
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    y = run(x, w, b, act, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


@pytest.mark.gpu
@pytest.mark.parametrize("cus", [1, 3, 7])
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "256x128x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA (1 CTA: 5 x 4 = 20 tiles of 128 x 256), K steps > stages, bias + gelu."""
    M, N, K = 5 * 128 - 3, 4 * 256 - 8, 1000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 4
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    check(run(x, w, b, "gelu", cfg=CFGS[cfg], cus=cus), x, w, b, "gelu")


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_deterministic(cfg):
    """Each output element is one consumer's K-ordered sum: bitwise identical run to run, any grid."""
    x, w = randn(1000, 3000, dtype=torch.bfloat16, device=DEV), randn(2056, 3000, dtype=torch.bfloat16, device=DEV)
    first = run(x, w, cfg=CFGS[cfg])
    check(first, x, w)
    for cus in (None, 5, 1):
        assert torch.equal(run(x, w, cfg=CFGS[cfg], cus=cus), first)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
@pytest.mark.parametrize("M,N,K", [(1000, 4096, 1024), (256, 576, 7168)])
def test_op_backend_gluon_num_warps_8(M, N, K, cfg):
    """gemm_a16w16 with a "backend": "gluon", num_warps 8 config runs this kernel (LAUNCHES) and is correct (on a
    Triton release whose budget passes the kernel over for bias + gelu, kernels/_budgets.py: the Triton tier)."""
    import gemmkit
    from gemmkit.ops import _common as C

    x, w, bias = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
                  randn(N, dtype=torch.bfloat16, device=DEV))
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((M, N), torch.bfloat16, DEV),
                            config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert_gluon_or_fallback(C.LAUNCHES, before, "hopper_coop_kernel", CFGS[cfg], True, "gelu")
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, bias, "gelu"), torch.bfloat16)
    assert ok, msg


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
def test_op_backend_gluon_num_warps_8_falls_back_to_triton(cfg):
    """An output whose rows are not 16-byte multiples (no TMA store; no copy of x and w can help): the same config
    runs on the Triton tier (an 8-warp 128 x 256 tile; a split tile's power-of-two part, 128 x 128,
    kernels/triton/dense.py triton_tile), correct."""
    import gemmkit
    from gemmkit.ops import _common as C

    M, N, K = 300, 392, 1001
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    before = dict(C.LAUNCHES)
    out = poisoned((M, N + 1), torch.float16, DEV)[:, :N]  # rows of 2 (N + 1) bytes
    y = gemmkit.gemm_a16w16(x, w, out=out, config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_coop_kernel"] == before.get("hopper_coop_kernel", 0)
    assert C.LAUNCHES["gemm_kernel"] == before.get("gemm_kernel", 0) + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, None, None), torch.float16)
    assert ok, msg


# (M, N, K, CTAs): coop tiles with a partial last round (the tail split, forced on: tail=True); (R, S) per tile
TAIL_CASES = [(1412, 6144, 2048, 132),  # 128 x 256 and 256 x 128: 288 tiles, 24 tail tiles x 5 splits of 7 / 6 steps
              (4095, 1032, 776, 132),  # 128 x 256: 160 tiles, 28 x 4; 256 x 128: 144 tiles, 12 x 7; the last row
              #                          and column of tiles shifted back, among the tail tiles
              (129, 1000, 1040, 7),  # 8 tiles on 7 CTAs: 1 x 6 splits of 3 steps, the last of 2 (K % 64 = 16)
              (700, 1032, 1040, 9),  # 128 x 256: 30 tiles on 9 CTAs, 3 x 3 (256 x 128: no split fits, a control)
              (300, 1032, 1040, 4),  # 256 x 128: 18 tiles on 4 CTAs, 2 x 2 (128 x 256: 15 tiles, none)
              (640, 1024, 200, 6),  # 128 x 256: 20 tiles on 6 CTAs, 2 x 2 of 2 K steps each
              (1000, 3000, 3072, 132)]  # 96 or 88 tiles: one round, no split (a control: no reduce)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x256x64-s3", "256x128x64-s4"])
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES])
def test_tail_split(M, N, K, cus, cfg, launches):
    """The last round's tiles as K splits (hopper_pingpong.tail_plan), bias + gelu on both paths (the kernel's
    epilogue for the whole tiles, each consumer's fp32 partial of its rows for the split ones, then the tail
    reduce), every element against float64; the reduce launched exactly where the plan splits."""
    dtype = torch.bfloat16
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 4
    b = randn(N, dtype=dtype, device=DEV)
    t = gpu_target(cus)
    tail, splits = hp.tail_plan(hc.derive(CFGS[cfg], t), M, N, K, t.num_cus, True)
    before = launches["tail_reduce_kernel"]
    y = poisoned((M, N), dtype, DEV)
    _hc().launch(x, w, b, y, "gelu", CFGS[cfg], t, tail=True)
    torch.cuda.synchronize()
    assert launches["tail_reduce_kernel"] == before + (tail > 0), (tail, splits)
    check(y, x, w, b, "gelu")


def test_tail_cases_split_where_they_say():
    """TAIL_CASES' comments, on the plans: which cases split, and how."""
    wide, tall = hc.derive(CFG_S4, H200), hc.derive(CFG_256, H200)
    assert [hp.tail_plan(wide, *c, True) for c in TAIL_CASES] == [(24, 5), (28, 4), (1, 6), (3, 3), (0, 1), (2, 2),
                                                                   (0, 1)]
    assert [hp.tail_plan(tall, *c, True) for c in TAIL_CASES] == [(24, 5), (12, 7), (1, 6), (0, 1), (2, 2), (0, 1),
                                                                   (0, 1)]


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_tail_split_out_dtypes(out_dtype, launches):
    """fp16 operands, fp32 / fp16 out (fp32: 4 sub-tiles a consumer), no bias: 192 tiles of 128 x 256, 60 of them
    split 2 ways, K short enough for fp32 out's bound of one rounding an output."""
    dtype = torch.float16
    M, N, K = 2000, 3000, 520
    x, w = randn(M, K, dtype=dtype, device=DEV), randn(N, K, dtype=dtype, device=DEV) / 8
    y = poisoned((M, N), out_dtype, DEV)
    t = gpu_target()
    assert hp.tail_plan(hc.derive(CFG_S4, t, 2, out_dtype.itemsize), M, N, K, t.num_cus, True)[0] > 0
    before = launches["tail_reduce_kernel"]
    _hc().launch(x, w, None, y, "none", CFG_S4, t, tail=True)
    torch.cuda.synchronize()
    assert launches["tail_reduce_kernel"] == before + 1
    check(y, x, w)


@pytest.mark.gpu
def test_tail_split_served_and_in_cuda_graphs(launches):
    """The op's own call where the rule splits the coop's last round (K >= TAIL_MIN_K): 1496 x 12160 x 3008, the
    served coop 128 x 256 (576 tiles, 4 rounds + 48 split 2 ways): the reduce runs, the result checked, the same
    under CUDA-graph replay; deterministic."""
    M, N, K = 1496, 12160, 3008
    cfg, _why = configs.serve("a16w16", gpu_target(), M, N, K)
    assert hp.is_coop(cfg) and (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (128, 256), cfg
    check_served_tail_split(M, N, K, launches)


@pytest.mark.gpu
def test_unsupported_inputs_raise():
    t = gpu_target()
    x = torch.randn(64, 100, device=DEV, dtype=torch.bfloat16)  # K % 8 != 0: row stride not 16-byte aligned
    with pytest.raises(ValueError, match="TMA"):
        _hc().launch(x, x, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none", CFG_S4, t)
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="num_warps"):
        _hc().launch(x, x, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none",
                     {**CFG_S4, "num_warps": 4}, t)


# two output sub-tiles per consumer; the split tiles (3)
_SANITIZE_CFGS = [{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 8,
                   "num_stages": stages} for bn, stages in ((256, 4), (192, 5), (96, 6))]
_SANITIZE_CASES = [(1, (300, 392, 200)), (2, (520, 600, 520)), (3, (129, 264, 136))]


# the tail split forced on, 128 x 256 tiles: 20 tiles on 6 CTAs, 2 tail tiles x 2 splits; 30 on 9, 3 x 3; 6 on 2
# (300 x 1032 x 520), 1 x 2
_SANITIZE_TAIL = [(6, (640, 1024, 200)), (9, (700, 1032, 1040)), (2, (300, 1032, 520))]


@pytest.mark.gpu
@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
@pytest.mark.parametrize("cases", ["tiles", "tail"])
def test_compute_sanitizer(tool, cases):
    """No illegal barrier use (synccheck) and no bad accesses (memcheck): 1-3 persistent CTAs, several tiles
    each (the shared ring wraps across tiles), the 128 x 256 tile and the split tiles 128 x 192 / 128 x 96; and
    (tail) CTAs whose last round is split along K, the 128 x 256 tile (a split tile has no tail split)."""
    if cases == "tail":
        script = dense_sanitize_script("hopper_coop", _SANITIZE_CFGS[:1], _SANITIZE_TAIL, ", tail=True")
    else:
        script = dense_sanitize_script("hopper_coop", _SANITIZE_CFGS, _SANITIZE_CASES)
    assert_sanitizer_clean(sanitize(tool, script))
