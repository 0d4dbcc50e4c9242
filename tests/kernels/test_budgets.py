"""kernels/_budgets.py: the per-Triton-version register and shared-memory rules.

Against what was measured (tests/data/triton_budgets.json: each release's compiler on gemmkit's kernels without
the rules, tests/data/measure_triton_budgets.py): every spill and every shared-memory excess measured on Triton
3.7.1, 3.8.0 and 3.9.0 is covered by a rule, but for an epilogue that spills there no more than on Triton 3.6
itself (3.6's own spills, outside `gemmkit isa`'s cases, are listed and left alone); the measured cases a rule
covers without a spill are counted (so a rule that grows or shrinks shows here); on Triton 3.6 no rule applies. Then the two users: the
dispatch passes a Gluon kernel over for an epilogue its rule names (and keeps it for the others), and `gemmkit isa`
compiles the heaviest epilogue the dispatch still sends (or skips a case it sends none). Host code only: no
compiles here (`gemmkit isa` under each release checks that the rules remove the spills: .ci/triton_versions.sh).
"""
import json
from pathlib import Path

import pytest
import torch

from _util import ROOT
from gemmkit import arch
from gemmkit._versions import parse
from gemmkit.kernels import _budgets as B
from gemmkit.kernels import _host
from gemmkit.kernels.triton import dense as G
from gemmkit.ops import dispatch as D

DATA = json.loads((Path(ROOT) / "tests" / "data" / "triton_budgets.json").read_text())
COLS = DATA["epilogue_columns"]
VERSIONS = sorted(DATA["versions"], key=parse)
NEWER = [v for v in VERSIONS if parse(v) > B.BASELINE]
SM90, GFX942, GFX950 = arch.ARCHS["sm_90"], arch.ARCHS["gfx942"], arch.ARCHS["gfx950"]
TILE = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")

# Measured epilogues a rule sends to the Triton tier although they did not spill (the rules are per kernel family and
# full-accumulator tile, not per stage count: the spills move between epilogues and stage counts from one release to
# the next). A change here is a rule that grew or shrank.
OVER_COVERED = {"3.7.1": 0, "3.8.0": 21, "3.9.0": 8}


def epilogues(version):
    return [dict(zip(COLS, row)) for row in DATA["versions"][version]["epilogues"]]


def covers(e, version) -> str | None:
    cfg = {k: e[k] for k in TILE} | ({"gated": True} if e.get("gated") else {})
    scale = "rowcol" if e["kernel"] == B.GLUON_FP8 else "none"
    return B.gluon_epilogue_unsupported(e["kernel"], cfg, e["out"], e["has_bias"], e["activation"], scale,
                                        version=version)


@pytest.fixture
def at(monkeypatch):
    """at(version): the rules answer as under that Triton release (the installed one is left alone)."""
    monkeypatch.delenv(B.OFF_ENV, raising=False)

    def set_version(version):
        monkeypatch.setattr(B, "installed", lambda: parse(version))
    return set_version


def _key(e):
    return (e["kernel"], *(e[k] for k in TILE), e["out"], e["has_bias"], e["activation"])


# Triton 3.6's own spills (_budgets.py, the note at FULL_ACC_REGS): no rule covers them, on 3.6 or on a later release
# that spills no more there.
BASELINE = {_key(e): e["spill_bytes"] for e in epilogues("3.6.0") if e["spill_bytes"] > 0}


def test_measurements_are_there():
    assert VERSIONS[0] == "3.6.0" and {"3.7.1", "3.8.0", "3.9.0"} <= set(VERSIONS)
    assert parse(VERSIONS[-1]) == B.NEWEST_MEASURED
    base = DATA["versions"]["3.6.0"]
    assert base["isa"] == []  # Triton 3.6 keeps every promise of every `gemmkit isa` case
    # ... and spills only with a gelu / gelu_tanh without a bias (8 B; 168 B at 128 x 128 x 64 / 6 stages)
    assert {(k[-2], k[-1], b) for k, b in BASELINE.items()} == {(False, "gelu", 8), (False, "gelu_tanh", 168)}
    assert all(B.consumer_acc_regs(dict(zip(("kernel", *TILE), k))) == B.FULL_ACC_REGS for k in BASELINE)
    for v in NEWER:
        assert epilogues(v) and DATA["versions"][v]["cases"] == base["cases"]
    assert all(DATA["versions"][v]["gated"] for v in VERSIONS)


@pytest.mark.parametrize("version", NEWER)
def test_every_measured_epilogue_spill_is_covered(version):
    rows = epilogues(version)
    missed = [e for e in rows if e["spill_bytes"] > BASELINE.get(_key(e), 0) and covers(e, version) is None]
    assert not missed, f"Triton {version}: spills no rule covers: {missed}"
    left = [e for e in rows if 0 < e["spill_bytes"] and covers(e, version) is None]
    assert all(_key(e) in BASELINE for e in left)  # what is left spills as on 3.6
    over = [e for e in rows if e["spill_bytes"] == 0 and covers(e, version) is not None]
    # a rule covers only full-accumulator tiles, and only an epilogue that spilled at some such tile on that release
    spilled = {(e["has_bias"], e["activation"]) for e in rows if e["spill_bytes"] > 0}
    for e in over:
        assert B.consumer_acc_regs(e) == B.FULL_ACC_REGS, e
        assert (e["has_bias"], e["activation"]) in spilled, e
    assert len(over) == OVER_COVERED[version], [(e["kernel"], *(e[k] for k in TILE), e["out"], e["has_bias"],
                                                 e["activation"]) for e in over]


def gated_rows(version):
    return [dict(zip(COLS, row), gated=True) for row in DATA["versions"][version]["gated"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_measured_gated_spill_is_covered(version):
    """The Gluon gated tiles (two accumulators a consumer, `consumer_acc_regs` counts both): every spill measured is
    covered by a rule (3.9: a gelu into a bf16 h at the 128-register tiles), none on 3.6 - 3.8; a rule covers only the
    full-accumulator tiles, and there only the gelu (3.9: into an fp32 h too, which did not spill: 3 cases)."""
    rows = gated_rows(version)
    assert {r["activation"] for r in rows} == {a for _b, a in B.GATED_EPILOGUE_ORDER} and not any(
        r["has_bias"] for r in rows)
    assert {B.consumer_acc_regs(r) for r in rows} == {64, B.FULL_ACC_REGS}  # both kinds measured
    assert not [r for r in rows if r["spill_bytes"] > 0 and covers(r, version) is None]
    spilled = {(r["kernel"], *(r[k] for k in TILE), r["out"]) for r in rows if r["spill_bytes"] > 0}
    assert bool(spilled) == (version == "3.9.0")
    over = [r for r in rows if r["spill_bytes"] == 0 and covers(r, version) is not None]
    assert all(B.consumer_acc_regs(r) == B.FULL_ACC_REGS and r["activation"] == "gelu" for r in over)
    assert len(over) == {"3.9.0": 3}.get(version, 0), over


@pytest.mark.parametrize("version", VERSIONS)
def test_no_rule_covers_a_tile_below_the_full_accumulator(version):
    for e in epilogues(version):
        if B.consumer_acc_regs(e) < B.FULL_ACC_REGS:
            assert e["spill_bytes"] == 0 and covers(e, version) is None, e


def _case_target(case):
    return arch.ARCHS[case["arch"]]


@pytest.mark.parametrize("version", NEWER)
def test_every_measured_isa_spill_and_excess_is_covered(version, at):
    """Each case of `gemmkit isa` that spilled or needed more shared memory than its bound on `version` (without
    the rules) is one a rule changes there: a Gluon case compiles another epilogue (or is skipped: the dispatch
    sends it nothing), a Triton-tier case other compile options or another tile, the CDNA ping-pong reads its K
    tile in halves; and an excess is within the bound the rules give."""
    from gemmkit.isa.report import _provider

    at(version)
    rows = DATA["versions"][version]["isa"]
    assert rows and all("error" not in r for r in rows)  # nothing failed to compile on a supported release
    recompiled = 0
    for r in rows:
        case = {k: v for k, v in r.items() if k not in ("spill_bytes", "lds_bytes", "smem_bound")}
        target = _case_target(case)
        spec = _provider(case["op"]).isa_spec(case)
        where = f"Triton {version} {case['arch']} {case['kernel']} {case['table']}:{case['bucket']} {case['path']}"
        if r["spill_bytes"] > 0:
            if case["kernel"] == "cdna_pingpong_kernel":
                assert spec["constexprs"]["K_HALVES"] == B.cdna_k_halves(target) == 2, where
            elif case["path"].startswith("gluon"):
                assert spec.get("budget") or spec.get("skip"), where
            else:
                cfg = case["config"]
                assert B.triton_options(cfg, target) or B.triton_config(case["kernel"], cfg, target) != cfg, where
                assert {k: spec["options"][k] for k in B.triton_options(cfg, target)} == B.triton_options(cfg, target)
        if 0 < r["smem_bound"] < r["lds_bytes"]:
            if "BLOCK_SIZE_M" in case["config"] and B.triton_options(case["config"], target):
                recompiled += 1  # compiled otherwise now (one stage): `gemmkit isa` checks that one's bound
            else:
                assert spec["smem_bound"] >= r["lds_bytes"], f"{where}: bound {spec['smem_bound']} < {r['lds_bytes']}"
    # the gfx950 256 x 256 tiles (GFX950_STAGES, from 3.7) of the 3.8 / 3.9 LDS excesses
    assert recompiled == {"3.7.1": 0, "3.8.0": 8, "3.9.0": 8}[version]


def test_nothing_changes_on_triton_36(at):
    """Triton 3.6: no rule applies, whatever the config (its SASS / AMDGCN stays byte-identical)."""
    at("3.6.0")
    for version in NEWER:
        for e in epilogues(version):
            assert covers(e, "3.6.0") is None
    for target in (SM90, GFX942, GFX950):
        for bm, bn, w in ((16, 64, 4), (32, 128, 8), (128, 128, 4), (256, 256, 8)):
            cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 256, "num_warps": w, "num_stages": 2}
            assert B.triton_options(cfg, target) == {}
            assert B.triton_config("gemm_afp4wfp4_kernel", cfg, target) == cfg
            assert _host.compiler_options(cfg, target) == {"num_warps": w, "num_stages": 2}
            assert B.amd_lds_bytes(3, 1000, target) == 2000 and B.tma_slack(cfg, 2) == 1024
        assert B.cdna_k_halves(target) == 1


def test_budgets_off_answers_as_on_36(monkeypatch):
    monkeypatch.setattr(B, "installed", lambda: (3, 9))
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "num_warps": 4, "num_stages": 3}
    assert B.triton_options(cfg, SM90) == {"maxnreg": SM90.max_regs_per_thread}
    monkeypatch.setenv(B.OFF_ENV, "1")
    assert B.triton_options(cfg, SM90) == {}


def test_triton_tier_rules(at):
    small = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 256, "num_warps": 8, "num_stages": 3}
    full = {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "num_warps": 8, "num_stages": 2}
    at("3.7.1")
    assert _host.compiler_options(small, SM90)["maxnreg"] == 255  # a tile of SM90_MAXNREG_TILES
    assert "maxnreg" not in _host.compiler_options(dict(small, num_stages=4), SM90)  # only the tiles that spilled
    assert "maxnreg" not in _host.compiler_options(dict(small, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, num_stages=4), SM90)
    at("3.9.0")
    assert _host.compiler_options(dict(small, BLOCK_SIZE_M=16, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, num_warps=4,
                                       num_stages=4), SM90)["maxnreg"] == 255
    at("3.7.1")
    assert _host.compiler_options(full, GFX950)["num_stages"] == 1
    assert _host.compiler_options(full, GFX942)["num_stages"] == 2  # gfx942 kept 0 spills
    assert B.triton_config("gemm_afp4wfp4_kernel", full, GFX950)["BLOCK_SIZE_K"] == 128
    assert B.triton_config("gemm_kernel", full, GFX950) == full
    # LDS bound (gfx950): 3.7 keeps num_stages - 1 tiles; 3.8 loads straight into LDS, num_stages tiles + padding
    stage = (256 + 256) * 64 * 2
    assert G.smem_bytes(dict(full, BLOCK_SIZE_K=64), GFX950, 2, 2, tma=False) == stage  # 1 stage compiled
    at("3.8.0")
    assert G.smem_bytes(dict(full, BLOCK_SIZE_K=64), GFX950, 2, 2, tma=False) == stage + stage // 32
    assert G.smem_bytes(dict(full, BLOCK_SIZE_K=64), GFX942, 2, 2, tma=False) == stage
    tma = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "num_warps": 4, "num_stages": 4}
    assert G.smem_bytes(tma, SM90, 2, 2, tma=True) == 4 * (64 + 256) * 64 * 2 + 64 * 256 * 2 + 1024 + 256 * 2


# ----------------------------------------------------------------------------- the dispatch and `gemmkit isa`

PP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
      "num_stages": 5, "backend": "gluon", "tma": True, "persistent": True, "NUM_KSPLIT": 1}
PP96 = dict(PP, BLOCK_SIZE_M=64, BLOCK_SIZE_N=192, num_stages=6)


def meta(*shape, dtype=torch.bfloat16):
    return torch.empty(shape, dtype=dtype, device="meta")


def dense_choice(cfg, epilogue, out=torch.bfloat16, fp8=False, scaling=G.NO_SCALING):
    dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
    x, w, y = meta(4096, 4096, dtype=dt), meta(4096, 4096, dtype=dt), meta(4096, 4096, dtype=out)
    return D.dense(cfg, SM90, x, w, y, scaling, interpreting=False, epilogue=epilogue)


def test_dispatch_passes_over_gluon_for_the_epilogues_the_rule_names(at):
    gelu, relu = D.Epilogue(True, "gelu"), D.Epilogue(True, "relu")
    at("3.6.0")
    assert dense_choice(PP, gelu).kernel == D.GLUON_BF16
    at("3.8.0")
    choice = dense_choice(PP, gelu)
    assert choice.kernel == D.TRITON_TMA and choice.passed_over[0][0] == D.GLUON_BF16
    assert "Triton 3.8" in choice.passed_over[0][1] and "GLUON_EPILOGUE" in choice.passed_over[0][1]
    assert dense_choice(PP, relu).kernel == D.GLUON_BF16
    assert dense_choice(PP96, gelu).kernel == D.GLUON_BF16  # 96 accumulator registers: every epilogue fits
    assert dense_choice(PP, D.Epilogue(False, "gelu")).kernel == D.GLUON_BF16  # 3.8: in the batched kernels only
    coop = dict(PP, BLOCK_SIZE_N=256, num_warps=8, num_stages=4)
    assert dense_choice(coop, relu, out=torch.float32).kernel == D.GLUON_COOP
    at("3.7.1")
    assert dense_choice(PP, gelu).kernel == D.GLUON_BF16  # 3.7: bias + gelu spilled into fp32 y only
    assert dense_choice(PP, gelu, out=torch.float32).kernel == D.TRITON_TMA
    at("3.9.0")
    assert dense_choice(coop, relu, out=torch.float32).kernel == D.TRITON_POINTER  # GLUON_FP32_BIAS (an fp32
    # 128 x 256 staging tile leaves the TMA kernel too little shared memory)
    assert dense_choice(coop, D.Epilogue(False, "relu"), out=torch.float32).kernel == D.GLUON_COOP


def test_dispatch_fp8_and_batched_follow_the_rule(at):
    f32 = torch.float32
    rowcol = G.Scaling("rowcol", meta(4096, dtype=f32), meta(4096, dtype=f32))
    fp8 = dict(PP, BLOCK_SIZE_K=128, num_stages=3)
    at("3.8.0")
    assert dense_choice(fp8, D.Epilogue(True), f32, fp8=True, scaling=rowcol).kernel == D.TRITON_TMA  # FP8_BIAS
    assert dense_choice(fp8, D.Epilogue(True), fp8=True, scaling=rowcol).kernel == D.GLUON_FP8  # bf16 y: 0 spills
    assert dense_choice(fp8, D.Epilogue(False), f32, fp8=True, scaling=rowcol).kernel == D.GLUON_FP8
    at("3.9.0")
    coop = dict(fp8, BLOCK_SIZE_M=256, num_warps=8)
    assert dense_choice(coop, D.Epilogue(False), fp8=True, scaling=rowcol).kernel != D.GLUON_FP8  # FP8_COOP
    at("3.8.0")
    x, w, y = meta(64, 1024, 1024), meta(64, 1024, 1024), meta(64, 1024, 1024)
    assert D.batched(PP, SM90, x, w, y, epilogue=D.Epilogue(False, "gelu")).kernel == D.BATCHED_TMA
    assert D.batched(PP, SM90, x, w, y, epilogue=D.Epilogue(True, "relu")).kernel == D.GLUON_BATCHED


def test_isa_compiles_the_heaviest_epilogue_the_dispatch_sends(at):
    from gemmkit.isa.report import analyze, static_cases

    ops = ("hopper_pingpong", "hopper_coop", "hopper_pingpong_fp8")
    cases = {(c["kernel"], c["bucket"], c["path"]): c for op in ops for c in static_cases(op, ["sm_90"])}
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong_fp8

    coop_fp32 = cases[("hopper_coop_kernel", "preset0", "gluon-fp32")]  # 128 x 256, 4 stages
    at("3.6.0")
    spec = hopper_coop.isa_spec(coop_fp32)
    assert (spec["constexprs"]["HAS_BIAS"], spec["constexprs"]["ACTIVATION"]) == (True, "gelu") and "budget" not in spec
    at("3.7.1")
    spec = hopper_coop.isa_spec(coop_fp32)
    assert (spec["constexprs"]["HAS_BIAS"], spec["constexprs"]["ACTIVATION"]) == (True, "gelu_tanh")
    assert spec["budget"].startswith("Triton 3.7: bias + gelu -> Triton tier")
    at("3.9.0")
    spec = hopper_coop.isa_spec(coop_fp32)  # gelu, and any bias into fp32 at BLOCK_SIZE_N 256: Triton tier
    assert (spec["constexprs"]["HAS_BIAS"], spec["constexprs"]["ACTIVATION"]) == (False, "gelu_tanh")
    assert "bias + gelu, bias + gelu_tanh, bias + silu, gelu -> Triton tier" in spec["budget"]
    fp8_coop = cases[("hopper_pingpong_fp8_kernel", "preset3", "gluon-bf16")]  # 256 x 128, num_warps 8
    assert "skip" in hopper_pingpong_fp8.isa_spec(fp8_coop)
    row = analyze(fp8_coop, use_cache=False)  # no compile: the dispatch sends this case nothing on 3.9
    assert row["ok"] and row["promises_ok"] and row["skipped"].startswith("Triton 3.9")
    gated = cases[("hopper_coop_kernel", "gated0-gated", "gluon-bf16-gated")]  # the served 128 x 128 of h
    at("3.6.0")
    spec = hopper_coop.isa_spec(gated)
    assert (spec["constexprs"]["HAS_BIAS"], spec["constexprs"]["ACTIVATION"], spec["constexprs"]["GATED"]) == (
        False, "gelu", True) and "budget" not in spec
    at("3.9.0")
    spec = hopper_coop.isa_spec(gated)
    assert spec["constexprs"]["ACTIVATION"] == "gelu_tanh" and spec["budget"].startswith("Triton 3.9: gelu -> Triton")
    block = next(c for c in cases.values() if c["kernel"] == "hopper_pingpong_fp8_kernel" and
                 c["path"] == "gluon-block-bf16" and c["config"]["BLOCK_SIZE_M"] == 256)  # the block-scale mode
    assert "skip" not in hopper_pingpong_fp8.isa_spec(block) and "budget" not in hopper_pingpong_fp8.isa_spec(block)
