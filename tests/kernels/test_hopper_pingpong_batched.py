"""The batched Gluon kernels (kernels/gluon/hopper_pingpong_batched.py: ping-pong and cooperative) on the
CPU: the op's dispatch rules, its `gemmkit isa` cases, the tuner's candidates, and a static compile for sm_90.

Gluon does not run in Triton's interpreter: the kernel is compiled for sm_90 in a subprocess without
TRITON_INTERPRET (as tests/kernels/test_hopper_pingpong.py does for the dense kernel) and its SASS / PTX checked
against the promises it declares, plus what batching must and must not change: 3-D TMA copies in the
batched kernel, 2-D ones only in the dense kernel. The GPU tests are in tests/ops/test_batched_gpu.py.
"""
import json

import pytest
import torch

from _util import broken_promises, compile_sm90_cases
from gemmkit import arch
from gemmkit.kernels.gluon import hopper_host as hh
from gemmkit.kernels.gluon import hopper_pingpong as hp
from gemmkit.kernels.gluon import hopper_pingpong_batched as hb

H200 = arch.get("sm_90")
BASE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
        "num_stages": 5}


def test_unsupported_names_the_reason():
    t = torch.empty(4, 32, 64, dtype=torch.bfloat16)
    y = torch.empty(4, 32, 32, dtype=torch.bfloat16)
    w = torch.empty(4, 32, 64, dtype=torch.bfloat16)
    assert hb.unsupported(t, w, y, H200) is None
    assert hb.unsupported(t, w, y, arch.get("gfx942")) == "needs sm_90, not gfx942"
    assert "bf16/fp16" in hb.unsupported(t.float(), w.float(), y, H200)
    assert "output" in hb.unsupported(t, w, y.to(torch.int32), H200)
    assert hb.unsupported(t, w[:1].expand(4, 32, 64), y, H200).startswith("w: 3-D TMA")  # stride-0 batch
    assert hb.unsupported(t, w, torch.empty(4, 32, 40, dtype=torch.bfloat16)[:, :, :28], H200) is None
    assert hb.unsupported(t, w, torch.empty(4, 32, 28, dtype=torch.bfloat16), H200).startswith("y: 3-D TMA")


def test_layouts_of_the_3d_boxes_keep_the_2d_swizzle():
    """The load warp writes [1, rows, cols] boxes into 2-D ring slots: same swizzle, rank 3."""
    for rows, cols, dt in ((128, 64, "bf16"), (256, 64, "fp16"), (128, 128, "bf16"), (64, 256, "fp32")):
        l2, l3 = hh.shared_layout(rows, cols, dt), hb._layout3(rows, cols, dt)
        assert (l3.swizzle_byte_width, l3.element_bitwidth, l3.rank) == (l2.swizzle_byte_width, l2.element_bitwidth, 3)


def test_op_dispatch_rules(monkeypatch):
    """batched_gemm_a16w16 accepts "backend": "gluon" (the interpreter runs it on the Triton tier);
    batched_gemm_a8w8 refuses it; on AMD the Gluon batched kernel is passed over with its reason."""
    from gemmkit import configs
    from gemmkit.kernels.triton import dense as G
    from gemmkit.ops import batched_gemm as BG

    BG._check_config(json.dumps(dict(BASE, backend="gluon")), gluon=True)
    with pytest.raises(ValueError, match="batched_gemm_a8w8 has only the 'triton' kernels"):
        BG._check_config(json.dumps(dict(BASE, backend="gluon")))
    from gemmkit.ops import dispatch as D

    configs.validate_config(dict(BASE, backend="gluon"), backend="hip")  # AMD tables may name it ...
    xa = torch.empty(400, 8, 64, dtype=torch.bfloat16, device="meta")
    amd = D.batched(dict(BASE, NUM_KSPLIT=1, backend="gluon"), arch.ARCHS["gfx950"], xa, xa, xa, G.NO_SCALING)
    assert amd.kernel == "batched_gemm_kernel" and "needs sm_90, not gfx950" in amd.passed_over[0][1]  # ... and say why

    def why_not(x, w, y, scaling=G.NO_SCALING):  # ops/dispatch.py's reason for passing over the Gluon kernel
        choice = D.batched(dict(BASE, NUM_KSPLIT=1, tma=True, backend="gluon"), H200, x, w, y, scaling)
        gluon = D.GLUON_BATCHED_COOP if BASE["num_warps"] == 8 else D.GLUON_BATCHED
        assert (choice.kernel == gluon) == (not choice.passed_over)
        return dict(choice.passed_over).get(gluon)

    x = torch.empty(133, 8, 64, dtype=torch.bfloat16, device="meta")  # 133 tiles: more than one wave on 132 SMs
    assert why_not(x, x, x) is None
    assert "16-bit only" in why_not(x, x, x, G.Scaling("rowcol", x, x))
    assert why_not(x, x[:1].expand(133, 8, 64), x).startswith("w: 3-D TMA")
    assert why_not(x[:132], x[:132], x[:132]).startswith("one wave of work (132 tiles")


def test_isa_cases_cover_the_shipped_gluon_buckets():
    from gemmkit.ops import batched_gemm as BG

    assert list(hb.isa_cases(["gfx942", "gfx950"])) == []
    all_cases = list(BG.isa_cases(["sm_90"]))
    cases = [c for c in all_cases if c["kernel"] == hb.KERNEL_NAME]
    coop = [c for c in all_cases if c["kernel"] == hb.COOP_KERNEL_NAME]
    assert {c["path"] for c in cases} >= {"gluon-bf16", "gluon-fp32"}
    assert {c["path"] for c in coop} >= {"gluon-bf16", "gluon-fp32"}
    assert all(not hp.is_coop(c["config"]) for c in cases) and all(hp.is_coop(c["config"]) for c in coop)
    from gemmkit import configs

    table = json.loads(configs.table_path("batched_a16w16", "sm_90").read_text())
    key = lambda c: tuple(sorted((k, c[k]) for k in hh.CONFIG_KEYS))  # noqa: E731 (equal configs compile once)
    shipped = {key(c) for c in table.values() if c.get("backend") == "gluon"}
    assert shipped and shipped <= {key(c["config"]) for c in cases + coop}
    spec = BG.isa_spec(cases[0])
    assert spec["kernel"] is hb.hopper_pingpong_batched_kernel and spec["promises"] is hb.PROMISES
    assert spec["signature"]["x_desc"].startswith("tensordesc<bf16[1, ") and "rank=3" in spec["signature"]["x_desc"]
    spec = BG.isa_spec(coop[0])
    plan = hb.kernel_plan(coop[0]["config"], H200, 2, 2, has_bias=True, activation="gelu")[1]
    assert spec["kernel"] is hb.hopper_coop_batched_kernel  # y box: a consumer's staging sub-tile
    assert spec["signature"]["y_desc"].startswith(f"tensordesc<{coop[0]['path'][6:]}[1, {plan.BM_C}, ")


def test_tuner_offers_gluon_candidates_for_batched_a16w16_on_sm90_only():
    from gemmkit.tune import op_space

    space = op_space("batched_a16w16")
    g = [c for c in space(1024, 1024, 1024, H200) if c.get("backend") == "gluon"]
    from gemmkit.kernels.gluon import hopper_coop as hc

    pp, coop = [c for c in g if not hp.is_coop(c)], [c for c in g if hp.is_coop(c)]
    assert pp and coop  # both layouts have a batched form
    assert all(hp.derive(c, H200) for c in pp) and all(hc.derive(c, H200) for c in coop)
    assert not [c for c in space(1024, 1024, 1024, arch.get("gfx942")) if c.get("backend") == "gluon"]
    assert not [c for c in op_space("batched_a8w8")(1024, 1024, 1024, H200) if c.get("backend") == "gluon"]


def test_static_compile_sm90_keeps_promises():
    """The batched kernels (ping-pong 128 x 128 bf16 out with bias + gelu, 64 x 256 fp32 out; cooperative
    128 x 256 fp32 out) compile for sm_90 with
    the dense kernel's promises (HGMMA, TMA loads and stores, no spills, 12 warps, shared memory within
    the plan) and 3-D TMA copies only; the dense kernel keeps 2-D ones only."""
    cases = [dict(kernel=hb.KERNEL_NAME, op="batched_gemm", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16"),
             dict(kernel=hb.KERNEL_NAME, op="batched_gemm", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "num_stages": 4}, path="gluon-fp32"),
             dict(kernel=hb.COOP_KERNEL_NAME, op="batched_gemm", arch="sm_90", table="-", bucket="t",
                  config={**BASE, "BLOCK_SIZE_N": 256, "num_warps": 8, "num_stages": 4}, path="gluon-fp32"),
             dict(kernel=hp.KERNEL_NAME, op="hopper_pingpong", arch="sm_90", table="-", bucket="t", config=BASE,
                  path="gluon-bf16")]
    res = compile_sm90_cases([hp if c["kernel"] == hp.KERNEL_NAME else hb for c in cases], cases,
                             ptx_counts={"tma_3d": "cp.async.bulk.tensor.3d", "tma_2d": "cp.async.bulk.tensor.2d"})
    for case, one in zip(cases, res):
        broken = broken_promises(one)
        assert not broken, f"{case['kernel']} {case['config']} {case['path']}: " + "; ".join(broken)
        assert len(one["promises"]) == len(hp.PROMISES)
    for one in res[:3]:
        m = one["metrics"]
        assert m["counts"]["HGMMA"] > 0 and m["spill_bytes"] == 0
        assert m["tma_3d"] >= 3 and m["tma_2d"] == 0, (m["tma_3d"], m["tma_2d"])  # x, w loads and the y store
    # cooperative, fp32 out, 4 stages: 4 column sub-tiles per consumer, each a 3-D TMA store
    assert res[2]["metrics"]["tma_3d"] >= 2 + 4, res[2]["metrics"]["tma_3d"]
    dense = res[3]["metrics"]
    assert dense["tma_2d"] >= 3 and dense["tma_3d"] == 0
