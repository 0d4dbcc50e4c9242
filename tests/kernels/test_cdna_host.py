"""The CDNA ping-pong's host side (kernels/gluon/cdna_host.py) on the CPU: the arguments it builds against the kernel's
signature and the static compile's, the grid against every tile, the dispatch rule's answers on meta tensors
(a gfx942 / gfx950 GPU call's shapes, no data), and clear errors for calls it must refuse."""
import itertools
import json
from pathlib import Path

import pytest
import torch

from gemmkit import arch, configs
from gemmkit.kernels.gluon import cdna_host as H
from gemmkit.kernels.gluon import cdna_layout as L
from gemmkit.kernels.gluon import cdna_pingpong as K
from gemmkit.kernels.triton._epilogue import ACTIVATIONS
from gemmkit.ops import dispatch as D

GFX950, GFX942, H200 = arch.ARCHS["gfx950"], arch.ARCHS["gfx942"], arch.ARCHS["sm_90"]
BF16 = torch.bfloat16


def meta(*shape, dtype=BF16, stride=None):
    stride = stride or torch.empty(shape, device="meta").stride()
    return torch.empty_strided(shape, stride, dtype=dtype, device="meta")


def dense_meta(M, N, K, dtype=BF16, out=BF16):
    return meta(M, K, dtype=dtype), meta(N, K, dtype=dtype), meta(M, N, dtype=out)


def cfg_for(target, **kw):
    bm, bn, bk = H.tile(target)
    return dict({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 4, "num_warps": 8,
                 "num_stages": 2, "NUM_KSPLIT": 1, "backend": "gluon"}, **kw)


@pytest.mark.parametrize("dtype, out", [(BF16, BF16), (torch.float16, torch.float32)])
def test_arguments_match_the_kernel_and_the_static_signature(dtype, out):
    x, w, y = dense_meta(300, 272, 144, dtype, out)
    bias = meta(272, dtype=dtype)
    args = H.arguments(x, w, bias, y)
    ce = K.kernel_constexprs(300, 272, 144, True, "gelu", GFX950)
    names = K.cdna_pingpong_kernel.arg_names
    runtime = [n for n in names if n not in ce]
    assert len(args) == len(runtime) and set(ce) | set(runtime) == set(names)  # every parameter given, once
    sig = K.signature(H._dtype_name(x), H._dtype_name(y), ce)
    assert list(sig) == names  # the kernel's own order: compile_static's divisibility indices follow it
    want = {torch.bfloat16: "*bf16", torch.float16: "*fp16", torch.float32: "*fp32"}
    for name, a in zip(runtime, args):
        assert sig[name] == (want[a.dtype] if isinstance(a, torch.Tensor) else "i32"), name
    assert args[4:] == (300, 272, 144) and args[3] is bias
    assert set(H.DIVISIBLE) <= set(runtime)
    assert H.arguments(x, w, None, y)[3] is x  # no bias: never read (HAS_BIAS False)


@pytest.mark.parametrize("a", ["gfx950", "gfx942"])
@pytest.mark.parametrize("M, N", [(256, 256), (257, 4096), (4000, 272), (1, 16)])
def test_grid_covers_every_tile_once(a, M, N):
    t = arch.ARCHS[a]
    bm, bn, _ = H.tile(t)
    gm, gn = H.grid(M, N, t)
    covered = torch.zeros(M, N, dtype=torch.int32)
    for i, j in itertools.product(range(gm), range(gn)):
        assert i * bm < M and j * bn < N  # no program starts past the output
        covered[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] += 1
    assert (covered == 1).all()


def test_variant_follows_the_shape():
    assert H.variant(4096, 4096, 4096, GFX950) == (False, False)
    assert H.variant(4000, 4096, 4096, GFX950) == (True, False)
    assert H.variant(4096, 4096, 4096 + 64, GFX950) == (False, True)  # 2 * BK = 128 on gfx950
    assert H.variant(4096, 4096, 4096 + 64, GFX942) == (False, False)  # 2 * BK = 64 on gfx942


def test_cpu_and_non_amd_calls_raise_clear_errors():
    x, w, y = torch.empty(256, 128, dtype=BF16), torch.empty(256, 128, dtype=BF16), torch.empty(256, 256, dtype=BF16)
    with pytest.raises(ValueError, match="runs on an AMD GPU.*got a tensor on cpu"):
        K.launch(x, w, None, y, "none", cfg_for(GFX950), GFX950)
    with pytest.raises(ValueError, match="needs gfx942 or gfx950, not sm_90"):
        K.launch(x, w, None, y, "none", cfg_for(GFX950), H200)
    # the dispatch never sends a CPU call here: the interpreter does not run Gluon
    choice = D.dense(cfg_for(GFX950), GFX950, x, w, y)
    assert choice.passed_over[0] == (D.GLUON_CDNA, "the Triton interpreter does not run Gluon kernels")


def test_dispatch_sends_whole_and_edge_tiles_to_the_kernel_on_gfx950():
    assert D.dense(cfg_for(GFX950), GFX950, *dense_meta(4096, 4096, 4096)).kernel == D.GLUON_CDNA
    assert D.dense(cfg_for(GFX950), GFX950, *dense_meta(4000, 4112, 4160)).kernel == D.GLUON_CDNA
    edge_gelu = D.dense(cfg_for(GFX950), GFX950, *dense_meta(4000, 4112, 4160), epilogue=D.Epilogue(True, "gelu"))
    assert edge_gelu.kernel == D.GLUON_CDNA


@pytest.mark.parametrize("shape, why", [
    ((4096, 4100, 4096), "K and N multiples of 16"),
    ((4096, 4096, 4104), "K and N multiples of 16"),
])
def test_dispatch_says_why_a_call_falls_back(shape, why):
    choice = D.dense(cfg_for(GFX950), GFX950, *dense_meta(*shape))
    assert choice.kernel == D.TRITON_POINTER and why in choice.passed_over[0][1]


def test_dispatch_reasons_strides_spills_split_k_tile_fp8():
    x, w, y = dense_meta(4096, 4096, 4096)
    view = meta(4096, 4096, stride=(8192, 1))  # y: a view of wider rows
    assert "rows of exactly 4096" in D.dense(cfg_for(GFX950), GFX950, x, w, view).passed_over[0][1]
    spills = D.dense(cfg_for(GFX950), GFX950, x, w, y, epilogue=D.Epilogue(False, "gelu"))
    assert spills.kernel == D.TRITON_POINTER and "spills or does not compile on gfx950" in spills.passed_over[0][1]
    assert "split-K" in D.dense(cfg_for(GFX950, NUM_KSPLIT=2), GFX950, x, w, y).passed_over[0][1]
    small = D.dense(cfg_for(GFX950, BLOCK_SIZE_M=128), GFX950, x, w, y)
    assert "256 x 256 x 64" in small.passed_over[0][1]
    assert "256 x 256 x 32" in D.dense(cfg_for(GFX950), GFX942, x, w, y).passed_over[0][1]  # BK 64 on gfx942
    edge942 = D.dense(cfg_for(GFX942), GFX942, *dense_meta(4000, 4096, 4096))
    assert "spills or does not compile on gfx942 (edge tiles" in edge942.passed_over[0][1]
    assert D.dense(cfg_for(GFX942), GFX942, *dense_meta(4096, 4096, 4096)).kernel == D.GLUON_CDNA
    fp8 = torch.float8_e4m3fn
    from gemmkit.kernels.triton import dense as G
    x8, w8 = meta(4096, 4096, dtype=fp8), meta(4096, 4096, dtype=fp8)
    scaling = G.Scaling("rowcol", meta(4096, dtype=torch.float32), meta(4096, dtype=torch.float32))
    c8 = D.dense(cfg_for(GFX950), GFX950, x8, w8, y, scaling)  # 16-bit only: passed over, and it says so
    assert c8.kernel == D.TRITON_POINTER and "takes no scales" in dict(c8.passed_over)[D.GLUON_CDNA]


def test_buffer_span_rule():
    M = L.BUFFER_BYTES // (2 * 4096) + 16  # x spans more than a buffer op addresses
    why = H.operands_unsupported(*dense_meta(M, 4096, 4096), None, GFX950)
    assert why.startswith("x: spans") and "buffer op" in why


def test_the_tables_and_the_config_model():
    cfg, source = configs.serve("a16w16", GFX950, 4096, 4096, 4096)
    assert cfg.get("backend") == "gluon" and source.endswith("A16W16.json:any")
    cfg, source = configs.serve("a16w16", GFX950, 512, 512, 4096)  # 4 tiles for 256 CUs: the Triton tier, fitted
    assert "backend" not in cfg and "the Triton tier" in source
    assert D.for_shape("a16w16", *configs.serve("a16w16", GFX950, 4096, 4096, 4096)[:1], GFX950,
                       4096, 4096, 4096).kernel == D.GLUON_CDNA
    # the sm_90 Gluon rule (the cooperative tile's ping-pong) does not touch an AMD bucket
    cfg, _ = configs.serve("a16w16", GFX950, 4096, 1024, 4096)
    assert (cfg["BLOCK_SIZE_N"], cfg["num_warps"]) == (256, 8)


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[1] / "data").glob("cdna_pingpong_spills-*.json")),
                         ids=lambda p: p.stem.split("-")[-1])
def test_spill_free_table_is_the_measurement(path):
    """Each measured release's table lists exactly the epilogues every operand dtype compiled with 0 spills (a case
    that failed to compile is not spill-free)."""
    data = json.loads(path.read_text())
    release = tuple(int(x) for x in path.stem.split("-")[-1].split("."))
    assert ".".join(data["triton"].split(".")[:2]) == path.stem.split("-")[-1]
    clean = {}
    for r in data["rows"]:
        key = (r["arch"], r["edge"], r["mask_k"], r["out"], r["has_bias"], r["activation"])
        clean[key] = clean.get(key, True) and r.get("spill_bytes") == 0
    assert len(data["rows"]) == 2 * 2 * 3 * 2 * len(ACTIVATIONS) * 4
    listed = {(a, e, m, o, b, act) for (a, e, m, o), d in H.spill_free(release).items() for b, acts in d.items()
              for act in acts}
    assert listed == {k for k, ok in clean.items() if ok}
    assert release in H.SPILL_FREE_BY_RELEASE


def test_spill_free_release_lookup():
    first, newest = min(H.SPILL_FREE_BY_RELEASE), max(H.SPILL_FREE_BY_RELEASE)
    assert H.spill_free((3, 5)) is H.SPILL_FREE_BY_RELEASE[first]  # older than any: the first measured
    assert H.spill_free((newest[0], newest[1] + 1)) is H.SPILL_FREE_BY_RELEASE[newest]  # newer: the newest's


def test_isa_cases_cover_the_gluon_buckets():
    cases = list(K.isa_cases(["gfx950", "gfx942"]))
    shipped = [(a, b) for a in ("gfx950", "gfx942") for b, c in
               json.loads(configs.table_path("a16w16", a).read_text()).items() if c.get("backend") == "gluon"]
    assert shipped and {(c["arch"], c["bucket"]) for c in cases if c["table"] != "-"} == set(shipped)
    c950 = next(c for c in cases if c["arch"] == "gfx950" and c["table"] != "-")["config"]
    assert (c950["edge"], c950["mask_k"], c950["has_bias"], c950["activation"]) == (True, True, True, "gelu")

