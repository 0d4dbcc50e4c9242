"""The Gluon FP8 kernel on the CPU: its plan (pure Python), a static compile for sm_90 checked against
its PROMISES, and gemm_a8w8's fallback to the Triton tier in the interpreter.

Gluon does not run in Triton's interpreter: the kernel is compiled for sm_90 in a subprocess
without TRITON_INTERPRET (conftest.py sets it on CPU machines). GPU tests:
tests/test_gpu_a8w8_gluon.py.
"""
import pytest
import torch

from _util import compile_sm90_cases
from gemmkit import arch
from gemmkit.isa.promises import evaluate
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k

H200 = arch.get("sm_90")
BASE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
        "num_stages": 3}


def test_plan_of_the_default_tile():
    p = k.derive(BASE, H200)
    assert (p.BM, p.BN, p.BK, p.promote_k, p.slices) == (128, 128, 128, 128, 2)
    # Registers: fp32 tile 128 + one 64-row partial 64 = 192 of the consumer's 240.
    assert (p.acc_regs, p.partial_regs, p.warps, p.regs_at_entry, p.mma_regs, p.load_regs) == (128, 64, 12, 168,
                                                                                               240, 24)
    # Two rings of 3 x 32 KiB beside one shared 32 KiB bf16 output tile (two tiles leave 2 stages a ring).
    assert (p.stage_bytes, p.stages, p.c_tiles) == (32768, 3, 1)
    assert p.smem_bytes == 2 * 3 * 32768 + 32768 + 1024 <= H200.shared_mem_bytes
    p2 = k.derive({**BASE, "num_stages": 2}, H200)
    assert (p2.stages, p2.c_tiles) == (2, 2)
    p32 = k.derive(BASE, H200, out_bytes=4)  # fp32 out: 64 KiB tile, 2 stages a ring
    assert (p32.stages, p32.c_tiles) == (2, 1)
    assert k.derive({**BASE, "BLOCK_SIZE_M": 64, "num_stages": 8}, H200).stages == 4


@pytest.mark.parametrize("change,match", [
    ({"BLOCK_SIZE_M": 256}, "BLOCK_SIZE_M"),
    ({"BLOCK_SIZE_K": 256}, "promotion"),
    ({"BLOCK_SIZE_K": 16}, "BLOCK_SIZE_K"),
    ({"BLOCK_SIZE_N": 256}, "accumulator registers"),  # 128 + 64 * 256 / 128 ... > 192
    ({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256}, "accumulator registers"),  # 128 + 128
    ({"num_warps": 16}, "num_warps"),
    ({"num_warps": 2}, "num_warps"),
    ({"num_warps": 8, "BLOCK_SIZE_M": 64}, "BLOCK_SIZE_M"),  # coop: two 64- or 128-row halves
    ({"num_warps": 8, "BLOCK_SIZE_M": 512}, "BLOCK_SIZE_M"),
    ({"num_warps": 8, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256}, "accumulator registers"),  # 256 + 128
    ({"num_warps": 8, "BLOCK_SIZE_N": 256}, "accumulator registers"),  # coop 64 x 256 acc + partial: 256
    ({"NUM_KSPLIT": 2}, "NUM_KSPLIT"),
    ({"waves_per_eu": 2}, "do not apply"),
    ({"num_stages": 1}, "each ring needs 2"),
])
def test_plan_rejects_what_cannot_run(change, match):
    with pytest.raises(ValueError, match=match):
        k.derive({**BASE, **change}, H200)


COOP = {**BASE, "num_warps": 8, "num_stages": 6}


def test_plan_of_the_coop_layout():
    """num_warps 8: one 128 x BN tile per CTA work item, one ring and one load warp, a 64-row half per
    consumer (acc 64 + two partials 64 + 64 registers at BN = 128: one chain in flight while the other is
    promoted), two 64 x BN staging buffers (one tile's bytes); rowcol: two buffers of the epilogue's scales
    (128 + 128 fp32 each), which still leave room for 6 slots."""
    p = k.derive(COOP, H200)
    assert (p.layout, p.rings, p.consumer_rows, p.slices) == ("coop", 1, 64, 1)
    assert (p.acc_regs, p.partial_regs, p.warps, p.regs_at_entry, p.mma_regs, p.load_regs) == (64, 128, 12, 168,
                                                                                               240, 24)
    assert (p.stage_bytes, p.stages, p.c_tiles, p.epilogue_bytes) == (32768, 6, 2, 32768 + 2 * 256 * 4)
    assert p.smem_bytes == 6 * 32768 + 32768 + 2048 + 1024 == H200.shared_mem_bytes
    # BN < 32: the load warp copies 32 w scales (one a lane) of which the consumers read BN
    assert k.derive({**COOP, "BLOCK_SIZE_N": 16}, H200).epilogue_bytes == 2 * 64 * 16 * 2 + 2 * (128 + 32) * 4
    b = k.derive(COOP, H200, block_shape=(128, 128))  # + 128 + 32 fp32 scales a slot: 5 slots; no staged vectors
    assert (b.layout, b.scale, b.stage_bytes, b.stages, b.scale_bytes) == ("coop", "block", 33408, 5, 640)
    assert b.epilogue_bytes == 32768
    assert k.derive(BASE, H200).epilogue_bytes % (128 * 128 * 2) == 0  # pingpong: staging only
    assert (b.load_regs, b.mma_regs) == (24, 240)
    assert b.smem_bytes <= H200.shared_mem_bytes
    assert (k.derive(COOP, H200, out_bytes=4).stages, k.derive(COOP, H200, 4, (128, 128)).stages) == (5, 4)
    assert k.derive({**COOP, "BLOCK_SIZE_K": 64, "num_stages": 8}, H200).stages == 8
    assert k.derive(BASE, H200).layout == "pingpong" and k.derive(BASE, H200).rings == 2
    assert k.constexprs(p, has_bias=False)["LAYOUT"] == "coop"


def test_plan_of_the_coop_256_tile():
    """num_warps 8, BLOCK_SIZE_M 256: a 128-row half per consumer (two slices: acc 128 + one partial 64 registers,
    each chain waited), one 256 x BK a beside the shared BN x BK w a slot (48 KiB at BK = 128: 3 slots beside two
    128 x 128 bf16 staging buffers and the staged scales); fp32 out: one shared 64 KiB buffer (c_free), so that 3
    slots still fit; block scales: 256 + 32 fp32 more a slot."""
    c = {**COOP, "BLOCK_SIZE_M": 256, "num_stages": 4}
    p = k.derive(c, H200)
    assert (p.layout, p.rings, p.consumer_rows, p.slices, p.acc_regs, p.partial_regs) == ("coop", 1, 128, 2, 128, 64)
    assert (p.stage_bytes, p.stages, p.c_tiles, p.epilogue_bytes) == (49152, 3, 2, 2 * 32768 + 2 * 384 * 4)
    assert p.smem_bytes <= H200.shared_mem_bytes
    p32 = k.derive(c, H200, out_bytes=4)
    assert (p32.stages, p32.c_tiles, p32.epilogue_bytes) == (3, 1, 65536 + 2 * 384 * 4)
    b = k.derive(c, H200, block_shape=(128, 128))
    assert (b.scale, b.stage_bytes, b.stages, b.c_tiles) == ("block", 49152 + 4 * (256 + 32), 3, 2)
    assert k.tail_plan(p, 4096, 2112, 2048, 132, True) == (272 % 132, 8)  # 16 x 17 = 272 tiles of 256 x 128
    assert (b.load_regs, b.mma_regs, p.regs_at_entry) == (24, 240, 168) and b.smem_bytes <= H200.shared_mem_bytes


def test_triton_fallback_of_the_coop_256_tile():
    """The Triton tier runs a 256-row Gluon fp8 coop config at 128 rows (its promotion would spill at 256 x 128);
    bf16 configs and the 128-row tile are its own."""
    from gemmkit.ops._gemm import triton_tile

    c = {**COOP, "BLOCK_SIZE_M": 256, "num_stages": 3, "backend": "gluon"}
    assert triton_tile(c, fp8=True) == {**c, "BLOCK_SIZE_M": 128}
    assert triton_tile(c) == c and triton_tile({**c, "BLOCK_SIZE_M": 128}, fp8=True)["BLOCK_SIZE_M"] == 128
    assert triton_tile({**c, "num_warps": 4}, fp8=True)["BLOCK_SIZE_M"] == 256  # not the coop kernel's


def test_table_keys_are_accepted():
    assert k.derive({**BASE, "backend": "gluon", "persistent": True, "tma": True, "NUM_KSPLIT": 1}, H200).stages == 3


def test_isa_cases_are_sm90_only():
    assert list(k.isa_cases(["gfx942", "gfx950"])) == []
    cases = list(k.isa_cases(["sm_90"]))
    assert {c["path"] for c in cases} >= {"gluon-bf16", "gluon-fp32"}
    # the coop layout (num_warps 8) in both modes
    assert {(c["config"]["num_warps"], c["path"]) for c in cases} >= {(8, "gluon-bf16"), (8, "gluon-block-bf16")}
    spec = k.isa_spec(cases[0])
    assert spec["signature"]["x_desc"].startswith("tensordesc<fp8e4nv[") and spec["promises"] is k.PROMISES


def test_promises_can_fail():
    row = {"num_warps": 12, "vgpr": 168, "spill_bytes": 16, "lds_bytes": 100, "smem_bound": 99,
           "counts": {"QGMMA": 0, "HGMMA": 4, "HMMA": 0, "UTMALDG": 2, "UTMASTG": 0, "LDL": 0, "STL": 3}}
    bad = {c["promise"] for c in evaluate(k.PROMISES, row, BASE, H200) if not c["ok"]}
    assert bad == {"no spills", "no local-memory traffic", "fp8 wgmma (QGMMA) in both consumers, no mma.sync",
                   "TMA store (UTMASTG) of the output tile", "shared memory within the plan's bound (smem_bytes)"}


def test_interpreter_runs_the_triton_tier():
    """A "backend": "gluon" config in the interpreter: gluon_unsupported says why, the Triton tier runs."""
    import gemmkit
    from gemmkit.ops import _a8w8_gluon, _common, _gemm
    from gemmkit.reference import gemm_a8w8_ref

    from _util import poisoned, q8, scales, within_bound

    if not _common.interpreting():
        pytest.skip("CPU interpreter test")
    M, N, K = 17, 40, 64
    x, w = q8(M, K, dtype=torch.float8_e4m3fn), q8(N, K, dtype=torch.float8_e4m3fn)
    xs, ws = scales(M, 1), scales(1, N)
    cfg = {**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_K": 64, "backend": "gluon"}
    sc = _gemm.Scaling("rowcol", xs.reshape(M), ws.reshape(N))
    assert "interpreter" in _a8w8_gluon.gluon_unsupported(x, w, sc, torch.empty(M, N), cfg, H200)
    y = gemmkit.gemm_a8w8(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16), config=cfg)
    ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws), torch.bfloat16)
    assert ok, msg


def test_static_compile_sm90_keeps_promises():
    """128 x 128 x 128 (bf16 out, bias) and 64 x 128 x 128 (fp32 out) compile for sm_90 with fp8 wgmma
    (QGMMA), TMA loads and stores, 12 warps, no spills, shared memory within the plan."""
    cases = [dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16"),
             dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "num_stages": 4}, path="gluon-fp32"),
             dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t", config=COOP,
                  path="gluon-bf16")]
    for case, res in zip(cases, compile_sm90_cases(k, cases)):
        broken = [f"{p['promise']}: {p['check']} ({p['detail']})" for p in res["promises"] if not p["ok"]]
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        assert len(res["promises"]) == len(k.PROMISES)
        m = res["metrics"]
        # slices (pingpong BM / 64, coop 1) x BK / 32 k32 wgmma per chain, two consumers; the coop mainloop
        # issues its chain at 4 places (K step 0, the two steps of a loop trip, the tail).
        plan = k.derive(case["config"], H200)
        assert m["counts"]["QGMMA"] == 2 * plan.slices * 4 * (4 if plan.layout == "coop" else 1)


def test_shipped_a8w8_gluon_buckets_plan():
    """Every A8W8 table bucket that picks "backend": "gluon" is one this kernel's plan accepts (bf16 and
    fp32 out), and is among its `gemmkit isa` cases."""
    shipped = k._shipped_configs("sm_90")
    assert shipped, "the sm_90 A8W8 tables ship Gluon buckets"
    for _table, _bucket, cfg in shipped:
        assert k.derive(cfg, H200).stages >= 2 and k.derive(cfg, H200, out_bytes=4).stages >= 2
    key = lambda c: tuple(c[n] for n in k.CONFIG_KEYS)  # noqa: E731
    assert {key(c) for _t, _b, c in shipped} <= {key(c["config"]) for c in k.isa_cases(["sm_90"])}


# ----------------------------------------------------------------------------- block-scale mode

def test_plan_of_the_block_mode():
    """Block scales: each ring slot also holds the step's BM fp32 x scales and a 128-byte buffer holding its w
    scale (a TMA destination starts on a 128-byte boundary); BN | bn and BK | bk. 64 x 128 x 128 with 4 stages a
    ring: 8 slots of 24960 B leave room for one 64 x 128 bf16 staging tile, not two (24832 B slots before the w
    scale moved into the slot, session 15)."""
    p = k.derive({**BASE, "BLOCK_SIZE_M": 64, "num_stages": 4}, H200, block_shape=(128, 128))
    assert (p.scale, p.scale_bn, p.scale_bk, p.scale_bytes) == ("block", 128, 128, 4 * (64 + 32))
    assert p.stage_bytes == (64 + 128) * 128 + 384 and (p.stages, p.c_tiles) == (4, 1)
    assert p.smem_bytes <= H200.shared_mem_bytes
    assert k.derive(BASE, H200).scale == "rowcol"
    with pytest.raises(ValueError, match="BLOCK_SIZE_N"):
        k.derive(BASE, H200, block_shape=(64, 128))
    with pytest.raises(ValueError, match="BLOCK_SIZE_K"):
        k.derive(BASE, H200, block_shape=(128, 64))


def test_blockscale_fallback_reasons():
    """gemm_a8w8_blockscale's "backend": "gluon" runs on the Triton tier where the blocks do not hold whole tiles."""
    from gemmkit.ops import _a8w8_gluon, _gemm

    x, w = torch.empty(64, 256, dtype=torch.float8_e4m3fn), torch.empty(128, 256, dtype=torch.float8_e4m3fn)
    cfg = {**BASE, "backend": "gluon"}
    sc = _gemm.Scaling("block", torch.empty(64, 4), torch.empty(2, 4), 64, 128)
    why = _a8w8_gluon.gluon_unsupported(x, w, sc, torch.empty(64, 128), cfg, H200)
    assert why is not None and ("interpreter" in why or "block_shape" in why)


def test_shipped_blockscale_gluon_buckets_plan_and_compile_cases():
    """Every A8W8_BLOCKSCALE bucket with "backend": "gluon" is planned in block mode and is a `gemmkit isa` case."""
    shipped = k._shipped_configs("sm_90", blockscale=True)
    assert shipped, "the sm_90 A8W8_BLOCKSCALE tables ship Gluon buckets"
    for _table, _bucket, cfg in shipped:
        assert k.derive(cfg, H200, block_shape=k.BLOCK_SHAPE).stages >= 2
    key = lambda c: tuple(c[n] for n in k.CONFIG_KEYS)  # noqa: E731
    block_cases = [c for c in k.isa_cases(["sm_90"]) if c["path"].startswith("gluon-block-")]
    assert {key(c) for _t, _b, c in shipped} <= {key(c["config"]) for c in block_cases}


def test_static_compile_sm90_block_mode_keeps_promises():
    """64 x 128 x 128 and 64 x 64 x 128 pingpong and 128 x 128 x 128 coop in block mode (bf16 out, no bias:
    what the op runs) compile with the PROMISES kept (no spills: the x scales are read from shared memory
    right before each chain; coop's consumer holds a 64-row half, acc + two partials 192 registers)."""
    cases = [dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "num_stages": st}, path="gluon-block-bf16")
             for bn, st in ((128, 4), (64, 6))]
    cases.append(dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t",
                      config=COOP, path="gluon-block-bf16"))
    for case, res in zip(cases, compile_sm90_cases(k, cases)):
        broken = [f"{p['promise']}: {p['check']} ({p['detail']})" for p in res["promises"] if not p["ok"]]
        assert not broken, f"{case['config']} {case['path']}: " + "; ".join(broken)
        # one 64-row slice x BK / 32 k32, two consumers (coop: the chain at 4 places, see above)
        assert res["metrics"]["counts"]["QGMMA"] == 2 * 4 * (4 if case["config"]["num_warps"] == 8 else 1)
        assert res["metrics"]["counts"]["UTMASTG"] >= 1
