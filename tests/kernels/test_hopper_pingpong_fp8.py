"""The Gluon FP8 kernel (kernels/gluon/hopper_pingpong_fp8.py, per-tensor / per-token scales) and
gemm_a8w8's "backend": "gluon". On the CPU: its plan (pure Python), a static compile for sm_90 checked
against its PROMISES, and gemm_a8w8's fallback to the Triton tier in the interpreter. On the H200
(gpu-marked, the last section): the kernel itself. Its block-scale mode: test_hopper_pingpong_fp8_blockscale.py;
its in-flight wgmma chain in the SASS: test_hopper_pingpong_fp8_isa.py.

Gluon does not run in Triton's interpreter: on the CPU the kernel is compiled for sm_90 in a
subprocess without TRITON_INTERPRET (conftest.py sets it on CPU machines).

GPU tests (`pytest -m gpu tests/kernels/test_hopper_pingpong_fp8.py`). Reference: float64 on the
device from the dequantized operands (fp8 values and fp32 scales are exact in float64). Every output
is poisoned with NaN first. Two bounds, both must hold:
  norm-wise  ||y - ref|| <= TOL * ||ref|| (tests/_util.within_bound; fp32 out: 2**-12, the fp8
             accumulation dominates, as in tests/ops/test_a8w8_gpu.py)
  per element |y - ref| <= 2**-7 |ref| + 2**-10 A + tiny, A = (|x| @ |w|.T) * xs * ws + |bias|: one
             output rounding plus the reduced-precision fp8 adder inside one promotion interval
             (a missing, swapped or misscaled element is off by about |ref| and fails).
The precision test runs the Triton tier's promoted kernel on the same inputs: the Gluon kernel's
error against float64 must match it (and not Triton's unpromoted default, ~16x larger).
"""
import functools

import pytest
import torch

from _util import TOL, assert_gluon_or_fallback, compile_sm90_cases, poisoned, q8, scales, within_bound
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
    from gemmkit.kernels.triton.dense import triton_tile

    c = {**COOP, "BLOCK_SIZE_M": 256, "num_stages": 3, "backend": "gluon"}
    assert triton_tile(c, fp8=True) == {**c, "BLOCK_SIZE_M": 128}
    assert triton_tile(c) == c and triton_tile({**c, "BLOCK_SIZE_M": 128}, fp8=True)["BLOCK_SIZE_M"] == 128
    assert triton_tile({**c, "num_warps": 4}, fp8=True)["BLOCK_SIZE_M"] == 256  # not the coop kernel's


def test_plan_of_the_pair():
    """pair (pingpong): one output staging buffer (consumer 0 stores) beside the fp32 exchange buffer of consumer 1's
    partial; 64 x 64 x 128 keeps its 6 slots a ring. The rule (`pair_plan`): at most a tile a CTA and 2 K steps or
    more; forced on any pingpong launch of 2 K steps or more; never the coop layout."""
    cfg = {**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 4, "num_stages": 6}
    p, q = k.derive(cfg, H200), k.derive(cfg, H200, pair=True)
    assert (p.pair, p.stages, p.c_tiles, p.epilogue_bytes) == (False, 6, 2, 2 * 64 * 64 * 2)
    assert (q.pair, q.stages, q.c_tiles, q.epilogue_bytes) == (True, 6, 1, 64 * 64 * 2 + 64 * 64 * 4)
    assert q.smem_bytes <= H200.shared_mem_bytes and k.constexprs(q, has_bias=False)["PAIR"] is True
    assert k.derive(BASE, H200, pair=True).stages == 2  # 128 x 128: 32 + 64 KiB beside two rings of 32 KiB slots
    with pytest.raises(ValueError, match="pair"):
        k.derive(COOP, H200, pair=True)
    pair = k.pair_plan
    assert pair(p, 64, 8192, 14336, 132) and pair(p, 1, 8448, 4096, 132)  # 128 / 132 tiles of 64 x 64
    assert not pair(p, 64, 8512, 14336, 132) and not pair(p, 64, 28672, 8192, 132)  # 133 / 448 tiles
    assert not pair(p, 64, 8192, 128, 132) and not pair(p, 64, 8192, 128, 132, True)  # one K step
    assert pair(p, 64, 28672, 8192, 132, True) and not pair(p, 64, 8192, 14336, 132, False)
    # K under the scale mode's PAIR_MIN_K: unpaired unless forced
    b = k.derive(cfg, H200, block_shape=(128, 128))
    assert k.PAIR_MIN_K == {"rowcol": 4096, "block": 6144}
    assert not pair(p, 64, 8192, 4000, 132) and pair(p, 64, 8192, 4000, 132, True)
    assert pair(b, 64, 8192, 6144, 132) and not pair(b, 64, 8192, 5120, 132) and pair(b, 64, 8192, 5120, 132, True)
    assert not pair(k.derive(COOP, H200), 128, 128, 8192, 132, True)
    # where the exchange buffer leaves under 2 slots a ring (128 x 128, fp32 out) the launch runs unpaired
    assert not k.launch_plan(BASE, H200, 4, None, 64, 8192, 14336).pair
    assert k.launch_plan(BASE, H200, 2, None, 64, 8192, 14336).pair
    with pytest.raises(ValueError, match="each ring needs 2"):
        k.launch_plan(BASE, H200, 4, None, 64, 8192, 14336, True)


def test_x_boxes():
    """x's TMA boxes under one row of tiles: the largest power of two dividing M rounded up to 8 rows, doubled past
    8 boxes; whole boxes of BLOCK_SIZE_M rows at and past it, and with TRIM_X_BOX off."""
    from gemmkit.kernels import _host as H

    got = {M: H.x_boxes(64, M) for M in (1, 8, 9, 16, 17, 24, 32, 33, 48, 56, 63, 64, 65)}
    assert got == {1: (8, 1), 8: (8, 1), 9: (16, 1), 16: (16, 1), 17: (8, 3), 24: (8, 3), 32: (32, 1), 33: (8, 5),
                   48: (16, 3), 56: (8, 7), 63: (64, 1), 64: (64, 1), 65: (64, 1)}
    assert [H.x_boxes(128, M) for M in (64, 72, 100, 127, 128)] == [(64, 1), (16, 5), (16, 7), (128, 1), (128, 1)]
    assert H.x_boxes(256, 129) == (32, 5)
    for bm in (64, 128, 256):
        for M in range(1, bm):
            rows, boxes = H.x_boxes(bm, M)
            assert rows & (rows - 1) == 0 and 8 <= rows <= bm and boxes <= H.MAX_X_BOXES and M <= rows * boxes <= bm
    old = H.TRIM_X_BOX
    try:
        H.TRIM_X_BOX = False
        assert H.x_boxes(64, 17) == (64, 1)
    finally:
        H.TRIM_X_BOX = old


def test_table_keys_are_accepted():
    assert k.derive({**BASE, "backend": "gluon", "persistent": True, "tma": True, "NUM_KSPLIT": 1}, H200).stages == 3


def test_isa_cases_are_sm90_only():
    assert list(k.isa_cases(["gfx942", "gfx950"])) == []
    cases = list(k.isa_cases(["sm_90"]))
    assert {c["path"] for c in cases} >= {"gluon-bf16", "gluon-fp32"}
    # the coop layout (num_warps 8) in both modes
    assert {(c["config"]["num_warps"], c["path"]) for c in cases} >= {(8, "gluon-bf16"), (8, "gluon-block-bf16")}
    assert {c["path"] for c in cases} >= {"gluon-pair-bf16", "gluon-pair-block-bf16"}  # the paired pingpong
    spec = k.isa_spec(cases[0])
    assert spec["signature"]["x_desc"].startswith("tensordesc<fp8e4nv[") and spec["promises"] is k.PROMISES


def test_promises_can_fail():
    row = {"num_warps": 12, "vgpr": 168, "spill_bytes": 16, "lds_bytes": 100, "smem_bound": 99,
           "counts": {"QGMMA": 0, "HGMMA": 4, "HMMA": 0, "UTMALDG": 2, "UTMASTG": 0, "LDL": 0, "STL": 3}}
    bad = {c["promise"] for c in evaluate(k.PROMISES, row, BASE, H200) if not c["ok"]}
    assert bad == {"no spills", "no local-memory traffic", "fp8 wgmma (QGMMA) in both consumers, no mma.sync",
                   "TMA store (UTMASTG) of the output tile", "shared memory within the plan's bound (smem_bytes)"}


def test_interpreter_runs_the_triton_tier():
    """A "backend": "gluon" config in the interpreter: ops/dispatch.py says why, the Triton tier runs."""
    import gemmkit
    from gemmkit.ops import _common
    from gemmkit.ops import dispatch as D
    from gemmkit.kernels.triton import dense as _gemm
    from gemmkit.reference import gemm_a8w8_ref

    from _util import poisoned, q8, scales, within_bound

    if not _common.interpreting():
        pytest.skip("CPU interpreter test")
    M, N, K = 17, 40, 64
    x, w = q8(M, K, dtype=torch.float8_e4m3fn), q8(N, K, dtype=torch.float8_e4m3fn)
    xs, ws = scales(M, 1), scales(1, N)
    cfg = {**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_K": 64, "backend": "gluon"}
    sc = _gemm.Scaling("rowcol", xs.reshape(M), ws.reshape(N))
    assert "interpreter" in dict(D.dense(cfg, H200, x, w, torch.empty(M, N), sc).passed_over)[D.GLUON_FP8]
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
    from gemmkit.ops import dispatch as D
    from gemmkit.kernels.triton import dense as _gemm

    def meta(*shape, dtype=torch.float8_e4m3fn):  # a GPU call's tensors
        return torch.empty(shape, dtype=dtype, device="meta")

    cfg = {**BASE, "backend": "gluon"}
    f32 = torch.float32
    sc = _gemm.Scaling("block", meta(64, 4, dtype=f32), meta(2, 4, dtype=f32), 64, 128)
    choice = D.dense(cfg, H200, meta(64, 256), meta(128, 256), meta(64, 128, dtype=torch.bfloat16), sc)
    assert "block_shape (64, 128)" in dict(choice.passed_over)[D.GLUON_FP8] and choice.kernel != D.GLUON_FP8


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


# ----------------------------------------------------------------------------- on the GPU (gpu-marked: `pytest -m gpu`)

DEV = "cuda"
FP8 = torch.float8_e4m3fn


def _cfg(bm, bn, bk, stages, group=8, warps=4):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group, "num_warps": warps,
            "num_stages": stages}


CFGS = {"128x128x128s3": _cfg(128, 128, 128, 3),  # one shared output tile (c_free hand-off)
        "128x128x128s2": _cfg(128, 128, 128, 2),  # two output tiles
        "64x128x128s4": _cfg(64, 128, 128, 4, group=4),
        "128x64x64s6": _cfg(128, 64, 64, 6),
        # coop (num_warps 8): one 128-row tile, a 64-row half per consumer, one ring read by both
        "coop128x128x128s6": _cfg(128, 128, 128, 6, warps=8),
        "coop128x64x64s3": _cfg(128, 64, 64, 3, group=4, warps=8),  # the ring wraps every 3 K steps
        # BN < 32: the load warp stages 32 w scales a work item (one a lane), the consumers read 16
        "coop128x16x128s4": _cfg(128, 16, 128, 4, warps=8),
        # coop 256: a 128-row half (two slices, one partial, each chain waited) per consumer, one 256-row a a slot
        "coop256x128x128s3": _cfg(256, 128, 128, 3, group=16, warps=8),
        "coop256x64x64s4": _cfg(256, 64, 64, 4, group=4, warps=8)}  # the ring wraps every 4 K steps
TRITON_PROMOTED = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                   "num_warps": 8, "num_stages": 4, "tma": True, "persistent": True}


def _k():
    from gemmkit.kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8


def _target(cus=None):
    t = arch.current()
    return t.with_cus(cus) if cus else t


def inputs(M, N, K, bias_dtype=torch.bfloat16):
    x, w = q8(M, K, dtype=FP8, device=DEV), q8(N, K, dtype=FP8, device=DEV)
    xs, ws = scales(M, device=DEV), scales(N, device=DEV)
    b = (torch.randn(N, device=DEV) * 4).to(bias_dtype) if bias_dtype is not None else None
    return x, w, xs, ws, b


def run(x, w, xs, ws, b, out_dtype=torch.bfloat16, cfg=CFGS["128x128x128s3"], cus=None, tail=None, pair=None):
    y = poisoned((x.shape[0], w.shape[0]), out_dtype, DEV)
    _k().launch(x, w, xs, ws, b, y, cfg, _target(cus), tail=tail, pair=pair)
    torch.cuda.synchronize()
    return y


def ref64(x, w, xs, ws, b):
    """(float64 reference, float64 magnitude A) on the device."""
    xd, wd = x.float().double(), w.float().double()
    s = xs.double().reshape(-1, 1) * ws.double().reshape(1, -1)
    ref = (xd @ wd.T) * s
    mag = (xd.abs() @ wd.abs().T) * s
    if b is not None:
        ref, mag = ref + b.double(), mag + b.double().abs()
    return ref, mag


def check(y, x, w, xs, ws, b):
    ref, mag = ref64(x, w, xs, ws, b)
    assert torch.isfinite(y).all(), "non-finite output (an element never written?)"
    if y.dtype == torch.float32:
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        assert rel <= 2**-12, f"rel err {rel:.3g}"
    else:
        ok, msg = within_bound(y, ref, y.dtype)
        assert ok, msg
    err = (y.double() - ref).abs()
    bound = 2**-7 * ref.abs() + 2**-10 * mag + 1e-30
    bad = (err > bound).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements out of bound, first {bad[:3].tolist()}: " \
        f"y {y[tuple(bad[0])].item()} ref {ref[tuple(bad[0])].item()}"


SHAPES = [(1, 264, 128), (17, 1000, 528), (4095, 1032, 784), (256, 512, 4096), (64, 8, 16), (129, 136, 80),
          (2048, 2048, 2048)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, cfg):
    """M = 1, 17, 4095; N, K not multiples of the tile (TMA zero-fills and clips); K < BLOCK_K."""
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS[cfg]), x, w, xs, ws, b)


BF, F16, F32 = torch.bfloat16, torch.float16, torch.float32
OUT_BIAS = [(BF, None), (BF, BF), (BF, F32), (F16, F16), (F16, None), (F32, F32), (F32, BF)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
@pytest.mark.parametrize("out_dtype,bias_dtype", OUT_BIAS, ids=[f"{o}-{b}" for o, b in OUT_BIAS])
def test_bias_out_dtypes(out_dtype, bias_dtype, cfg):
    x, w, xs, ws, b = inputs(300, 1024, 1040, bias_dtype)
    y = run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, xs, ws, b)


@pytest.mark.gpu
@pytest.mark.parametrize("cus", [1, 2, 3, 7])
@pytest.mark.parametrize("cfg", ["128x128x128s3", "128x128x128s2", "coop128x128x128s6", "coop256x128x128s3"])
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA (1 CTA: 5 x 8 = 40 tiles, 20 per consumer): both rings wrap many
    times, both consumers run every hand-off of c_free (one shared output tile) or not (two). coop: both
    consumers on all 35 tiles, the one ring's empty barriers take two arrivals each round."""
    M, N, K = 5 * 128 - 3, 7 * 128 + 8, 400
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus), x, w, xs, ws, b)


@pytest.mark.gpu
@pytest.mark.parametrize("cus", [1, 3])
@pytest.mark.parametrize("K", [16, 128])
def test_coop_one_step_work_items(cus, K):
    """coop rowcol with one K step per work item and many items per CTA (1 CTA: 40): the load warp, free to run
    six slots ahead, is held VECTOR_BUFFERS items ahead by the staged scale vectors (vempty); each item's
    epilogue must read its own tile's x / w scales (they differ per row and column), after every wrap."""
    M, N, K = 5 * 128 - 3, 7 * 128 + 8, K
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS["coop128x128x128s6"], cus=cus), x, w, xs, ws, b)


@pytest.mark.gpu
@pytest.mark.parametrize("cus", [1, 3])
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16], ids=["nobias", "bias"])
@pytest.mark.parametrize("K", [128, 256, 384, 512, 640])
def test_coop_k_steps_many_items(K, bias_dtype, cus):
    """coop 128 with 1-5 K steps a work item (odd and even counts end the mainloop in different partials), with and
    without a bias, many items per CTA (1 CTA: 40), the 6-slot ring wrapping at different offsets across the K
    values."""
    M, N = 5 * 128 - 3, 7 * 128 + 8
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    check(run(x, w, xs, ws, b, cfg=CFGS["coop128x128x128s6"], cus=cus), x, w, xs, ws, b)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
def test_deterministic(cfg):
    """Without a tail split each element is one consumer's K-ordered sum: bitwise identical run to run, any grid,
    and the same bits in every layout (the same chains, promotions and epilogue arithmetic per element). With
    one (coop, forced: 128-row tiles, 192 tiles on 132 SMs, 60 tail tiles split in 2; 256-row tiles, 96 tiles on 40
    CTAs, 16 tail tiles split in 2), bitwise identical run to run on one grid."""
    x, w, xs, ws, b = inputs(1000, 3000, 3072)
    first = run(x, w, xs, ws, b, cfg=CFGS[cfg], tail=False)
    check(first, x, w, xs, ws, b)
    for cus in (None, None, 5, 1):
        assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=False), first)
    assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS["128x128x128s2"]), first)
    cus = 40 if CFGS[cfg]["BLOCK_SIZE_M"] == 256 else 132
    tailed = run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=True)
    check(tailed, x, w, xs, ws, b)
    assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=True), tailed)


# (M, N, K, CTAs, pair): the rule's own case (9 tiles of 64 x 128 on the GPU's SMs, 33 K steps: the halves 17 + 16),
# the TP-2 Llama-3-70B down shard at decode (128 tiles, 112 steps), and forced pairs on grids smaller than the tiles
# (a CTA runs several paired tiles: the exchange buffer's phases wrap), 2 K steps (the second ragged: 256 + 16).
PAIR_CASES = [(64, 1032, 4112, None, None), (64, 8192, 14336, None, None), (17, 264, 272, 1, True),
              (129, 1000, 1040, 3, True), (1, 136, 2048, 2, True)]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["64x128x128s4", "128x64x64s6", "128x128x128s3"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("M,N,K,cus,pair", PAIR_CASES, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c, _ in PAIR_CASES])
def test_pair(M, N, K, cus, pair, out_dtype, cfg):
    """The pingpong's two consumers on one tile, a half of K each (`pair_plan`): consumer 1's partial through the
    exchange buffer, consumer 0's sum and epilogue, every element against float64 (with a bias), bitwise the same
    run to run on one grid; unpaired (pair=False) too."""
    x, w, xs, ws, b = inputs(M, N, K)
    # 128 x 128 with fp32 out: the exchange buffer leaves 1 slot a ring, so the rule's launch runs unpaired
    plan = functools.partial(_k().launch_plan, CFGS[cfg], _target(cus), out_dtype.itemsize, None, M, N, K, pair)
    if cfg == "128x128x128s3" and out_dtype == torch.float32:
        if pair:  # forced: refused, as a launch of it is
            for call in (plan, lambda: run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg], cus=cus, pair=pair)):
                with pytest.raises(ValueError, match="each ring needs 2"):
                    call()
            return
        assert not plan().pair
    else:
        assert plan().pair
    y = run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg], cus=cus, pair=pair)
    check(y, x, w, xs, ws, b)
    assert torch.equal(run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg], cus=cus, pair=pair), y)
    check(run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg], cus=cus, pair=False), x, w, xs, ws, b)


# M under one row of tiles: x loaded in boxes of only its rows (kernels/_host.x_boxes), each count of boxes and rows
X_BOX_M = [1, 8, 9, 16, 17, 24, 31, 32, 33, 40, 48, 56, 63, 65, 72, 100, 127, 129, 200]


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["64x128x128s4", "128x64x64s6", "coop128x128x128s6", "coop256x128x128s3"])
@pytest.mark.parametrize("pair", [None, False], ids=["rule", "unpaired"])
def test_x_boxes_of_its_rows(cfg, pair, monkeypatch):
    """Under one row of tiles the kernel loads only x's rows (several boxes a K step) and leaves the rest of each
    slot unwritten: every element against float64, and bitwise equal to the same launch loading one whole box
    (TRIM_X_BOX off: the rows past M zero-filled), whose rows are summed in the same order. Paired where the rule
    pairs (K = 4160: 33 steps of 128, more than one tile a CTA nowhere)."""
    from gemmkit.kernels import _host as H

    c = CFGS[cfg]
    for M in X_BOX_M:
        if M >= c["BLOCK_SIZE_M"]:
            continue
        rows, boxes = H.x_boxes(c["BLOCK_SIZE_M"], M)
        assert rows * boxes >= M and (rows < c["BLOCK_SIZE_M"] or M > 32), (M, rows, boxes)
        x, w, xs, ws, b = inputs(M, 520, 4160)
        y = run(x, w, xs, ws, b, cfg=c, pair=pair)
        check(y, x, w, xs, ws, b)
        monkeypatch.setattr(H, "TRIM_X_BOX", False)
        assert torch.equal(run(x, w, xs, ws, b, cfg=c, pair=pair), y), M
        monkeypatch.setattr(H, "TRIM_X_BOX", True)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
def test_precision_matches_the_promoted_triton_kernel(cfg):
    """fp32 out, K = 16384: error against float64 equals the Triton tier's promoted kernel's (promotion
    every 128 products), far under Triton's unpromoted default (2.05e-3 at 8192^3)."""
    import gemmkit

    M, N, K = 512, 512, 16384
    x, w = (torch.randn(M, K, device=DEV) * 4).to(FP8), (torch.randn(N, K, device=DEV) * 4).to(FP8)
    xs, ws = torch.ones(M, device=DEV), torch.ones(N, device=DEV)
    ref, _ = ref64(x, w, xs, ws, None)
    y_g = run(x, w, xs, ws, None, torch.float32, cfg=CFGS[cfg])
    y_t = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32, config=TRITON_PROMOTED)
    e_g = ((y_g.double() - ref).norm() / ref.norm()).item()
    e_t = ((y_t.double() - ref).norm() / ref.norm()).item()
    print(f"{cfg} K={K}: gluon rel err {e_g:.4g}, triton promoted {e_t:.4g}, bitwise equal {torch.equal(y_g, y_t)}")
    assert e_g <= 1.05 * e_t + 1e-7 and e_g < 4e-4, (e_g, e_t)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
@pytest.mark.parametrize("scale_shape", ["2d", "1d"])
@pytest.mark.parametrize("M,N,K", [(1000, 4096, 1024), (256, 576, 7168), (129, 104, 64), (1, 8192, 1024)])
def test_op_backend_gluon(M, N, K, scale_shape, cfg, launches):
    """gemm_a8w8 with a "backend": "gluon" config (either layout) runs this kernel (LAUNCHES) for both
    scale shapes, or the Triton tier where the installed Triton's budget passes it over (Triton >= 3.9: the
    cooperative layout, kernels/_budgets.py FP8_COOP)."""
    import gemmkit

    x, w, xs, ws, b = inputs(M, N, K)
    xs_a, ws_a = (xs.reshape(M, 1), ws.reshape(1, N)) if scale_shape == "2d" else (xs, ws)
    before = dict(launches)
    y = gemmkit.gemm_a8w8(x, w, xs_a, ws_a, b, out=poisoned((M, N), torch.bfloat16, DEV),
                          config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert_gluon_or_fallback(launches, before, "hopper_pingpong_fp8_kernel", {**CFGS[cfg], "backend": "gluon"},
                             has_bias=True, activation="none", scale="rowcol")
    check(y, x, w, xs, ws, b)


@pytest.mark.gpu
def test_op_backend_gluon_strided_views(launches):
    """A row-sliced x (row stride 2K, still TMA-aligned) runs on Gluon as given; a column-major x on a row-major copy
    (one pad_rows_kernel: ops/dispatch.py `_padded`)."""
    import gemmkit

    M, N, K = 300, 512, 1024
    big, _w, xs, ws, b = inputs(M, N, 2 * K)
    x, w = big[:, K:], q8(N, K, dtype=FP8, device=DEV)
    cfg = {**CFGS["128x128x128s3"], "backend": "gluon"}
    before = launches["hopper_pingpong_fp8_kernel"]
    y = gemmkit.gemm_a8w8(x, w, xs, ws, b, out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 1
    check(y, x, w, xs, ws, b)
    xt = x.contiguous().T.contiguous().T  # same values, stride (1, M)
    pads = launches["pad_rows_kernel"]
    y = gemmkit.gemm_a8w8(xt, w, xs, ws, b, out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 2 and launches["pad_rows_kernel"] == pads + 1
    check(y, xt, w, xs, ws, b)


@pytest.mark.gpu
def test_op_backend_gluon_falls_back_to_triton(launches):
    """An output whose rows are not 16-byte multiples (no TMA store; K % 16 != 0 too, so no copy either), split-K
    and int8: the same config runs on the Triton tier, still correct."""
    import gemmkit
    from gemmkit.reference import gemm_a8w8_ref

    cfg = {**CFGS["64x128x128s4"], "backend": "gluon"}
    for (M, N, K), extra, dtype in [((300, 256, 1000), {}, FP8), ((16, 512, 4096), {"NUM_KSPLIT": 4}, FP8),
                                    ((200, 256, 512), {}, torch.int8)]:
        x, w = q8(M, K, dtype=dtype, device=DEV), q8(N, K, dtype=dtype, device=DEV)
        xs, ws = scales(M, 1, device=DEV), scales(1, N, device=DEV)
        before = dict(launches)
        out = poisoned((M, N + 1), torch.bfloat16, DEV)[:, :N] if K % 16 else poisoned((M, N), torch.bfloat16, DEV)
        y = gemmkit.gemm_a8w8(x, w, xs, ws, out=out, config={**cfg, **extra})
        torch.cuda.synchronize()
        assert launches["hopper_pingpong_fp8_kernel"] == before.get("hopper_pingpong_fp8_kernel", 0)
        assert sum(launches.values()) > sum(before.values())
        ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws), torch.bfloat16)
        assert ok, msg


@pytest.mark.gpu
def test_unsupported_inputs_raise():
    k = _k()
    t = _target()
    x, w, xs, ws, _ = inputs(64, 64, 100)  # K % 16 != 0: fp8 row stride not 16-byte aligned
    with pytest.raises(ValueError, match="TMA"):
        k.launch(x, w, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), CFGS["64x128x128s4"], t)
    xi = torch.zeros(64, 64, device=DEV, dtype=torch.int8)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        k.launch(xi, xi, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), CFGS["64x128x128s4"], t)
    x, w, xs, ws, _ = inputs(64, 64, 64)
    with pytest.raises(ValueError, match="BLOCK_SIZE_K"):
        k.launch(x, w, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16),
                 {**CFGS["64x128x128s4"], "BLOCK_SIZE_K": 256}, t)


@pytest.mark.gpu
def test_tol_is_the_shared_one():
    assert TOL[torch.bfloat16] == 2**-8  # the bound test_a8w8_gpu.py uses for fp8 with bf16 out


# ----------------------------------------------------------------------------- tail split (coop)

# (M, N, K, CTAs): tiles = cdiv(M, 128) * cdiv(N, 128) > CTAs with a partial last round; ragged M, N, K.
TAIL_CASES = [(4096, 2112, 2048, 132),  # 544 tiles on 132 SMs: 16 tail tiles, 8 splits of 2 steps
              (1000, 3000, 3072, 132),  # 192 tiles: 60 tail tiles, 2 splits
              (129, 1000, 384, 7),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of one step each
              (300, 1000, 1040, 4),  # 24 tiles on 4 CTAs: 0 tail -> none; 3 x 8 = 24 % 4 = 0 (a control)
              (300, 1032, 1040, 5),  # 27 tiles on 5 CTAs: 2 tail tiles, 2 splits of 5 / 4 steps
              (129, 1000, 1008, 7),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of 3 / 3 / 2 steps (K % 128 = 112)
              (17, 136, 304, 1)]  # 2 tiles on 1 CTA: 0 tail (tiles % CTAs == 0)


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype,bias_dtype", [(torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32),
                                                  (torch.float16, None)], ids=["bf16", "fp32", "fp16-nobias"])
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES])
def test_tail_split(M, N, K, cus, out_dtype, bias_dtype, launches):
    """The coop layout with its last round split along K (forced on: tail=True), every element against
    float64, the reduce launched exactly when tail_plan splits; the partials carry the scales, the reduce the
    bias."""
    k = _k()
    cfg = CFGS["coop128x128x128s6"]
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    t = _target(cus)
    tail, splits = k.tail_plan(k.derive(cfg, t, 2), M, N, K, min(t.num_cus, -(-M // 128) * -(-N // 128)), True)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, b, out_dtype, cfg=cfg, cus=cus, tail=True)
    assert launches["tail_reduce_kernel"] == before + (tail > 0)
    assert (tail > 0) == ((M, N, K) not in [(300, 1000, 1040), (17, 136, 304)]), (tail, splits)
    check(y, x, w, xs, ws, b)


# (M, N, K, CTAs) for the coop 256 tile: cdiv(M, 256) * cdiv(N, 128) tiles with a partial last round.
TAIL_CASES_256 = [(4096, 2112, 2048, 132),  # 272 tiles on 132 SMs: 8 tail tiles, 8 splits of 2 steps
                  (300, 1032, 1040, 4),  # 18 tiles on 4 CTAs: 2 tail tiles, 2 splits (M = 300: the second half ragged)
                  (257, 1000, 1008, 3)]  # 16 tiles on 3 CTAs: 1 tail tile, 3 splits (K % 128 = 112)


@pytest.mark.gpu
@pytest.mark.parametrize("out_dtype,bias_dtype", [(torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32)],
                         ids=["bf16", "fp32"])
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES_256, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES_256])
def test_tail_split_coop256(M, N, K, cus, out_dtype, bias_dtype, launches):
    """The coop 256 tile's tail split: each consumer stores both 64-row slices of its half as partials (with their
    own staged x scales); every element against float64, the reduce launched exactly when tail_plan splits."""
    k = _k()
    cfg = CFGS["coop256x128x128s3"]
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    t = _target(cus)
    tail, splits = k.tail_plan(k.derive(cfg, t, 2), M, N, K, min(t.num_cus, -(-M // 256) * -(-N // 128)), True)
    assert tail > 0 and splits > 1, (tail, splits)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, b, out_dtype, cfg=cfg, cus=cus, tail=True)
    assert launches["tail_reduce_kernel"] == before + 1
    check(y, x, w, xs, ws, b)
