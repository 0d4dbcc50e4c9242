"""Property tests of gemm_split_cat and gemm_a8w8_blockscale_split_cat (DeepSeek MLA's kv_b_proj):
c = x @ w.T (+ bias) seen as (M, D, S1 + S2); c1 = cat(c[..., :S1], y), c2 = c[..., S1:].

Shapes: M and K 0, 1, odd or the served config's tile +- 1 (A16W16_SPLIT_CAT / A8W8_BLOCKSCALE_SPLIT_CAT);
N = D (S1 + S2) with S1 + S2 at the tile width +- 1 (one head per tile edge), or several small heads, S1 or
S2 = 0 included, S3 0..20; y in every 3-D layout (the MLA form: k_pe (M, 1, S3) expanded over the heads);
x / w layouts; bias; out_dtype; out=(c1, c2) NaN-poisoned in every layout, or functional. The y part of c1
must be y bit for bit; every other element against float64 (gemmkit.reference math) within the bound of
test_properties_common. fp8: gemmkit.quant block scales (128, 128) or raw fp8 with any block_shape.
Also: aliasing outputs raise ValueError; invalid splits / shapes raise.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit import quant
from gemmkit.ops import _common as C
from gemmkit.reference import expand_block_scales

from test_properties_common import (INVALID_EXAMPLES, F16, FP8, LAYOUTS_2D, LAYOUTS_3D, OUT_DTYPES, OUT_LAYOUTS_3D,
                                    SEED, Inputs, check_elements, config_strategy, device_or_skip, f64, gemm_dims,
                                    interpret_arch, linear_err, norm_tol, place, poison_allocations, poisoned_out,
                                    prop_settings, raises_invalid, served_tile)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
TABLE = {"a16": "a16w16_split_cat", "a8": "a8w8_blockscale_split_cat"}
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p, "tma": t}
         for bm, bn, bk, g, p, t in [(32, 32, 32, 2, False, False), (16, 16, 64, 1, True, False),
                                     (32, 32, 32, 2, False, True), (16, 32, 32, 3, True, True)]]


def cdiv(a, b):
    return -(-a // b)


@st.composite
def cases(draw, gpu=False):
    kind = draw(st.sampled_from(["a16", "a16", "a8"]))
    op = TABLE[kind]
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx950"]))
    config = draw(config_strategy(op, arch, small=None if gpu else
                                  [c for c in SMALL if arch == "sm_90" or not c["tma"]]))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=200, max_k=200)
    M, N0, K = draw(gemm_dims(op, arch, config, **lims, large=gpu))
    bn = served_tile(op, arch, max(M, 1), max(N0, 1), max(K, 1), config)[1]
    heads = draw(st.sampled_from(["one_per_tile", "small", "many"]))
    if heads == "one_per_tile":
        D, W = draw(st.integers(1, 3)), max(1, bn + draw(st.sampled_from([-1, 0, 1])))
    elif heads == "small":
        D, W = draw(st.integers(1, 6)), draw(st.integers(1, 40))
    else:
        D, W = draw(st.integers(8, 32 if gpu else 16)), draw(st.integers(1, 24))
    S1 = draw(st.sampled_from([0, W, draw(st.integers(0, W))]))
    block = (128, 128) if kind == "a16" else draw(st.sampled_from([(128, 128), (128, 128), (64, 64), (48, 32)]))
    return dict(kind=kind, arch=arch, config=config, M=M, K=K, D=D, S1=S1, S2=W - S1, S3=draw(st.integers(0, 20)),
                dtype=draw(st.sampled_from(F16)), source=draw(st.sampled_from(["quant", "raw"])), block=block,
                x_layout=draw(st.sampled_from(LAYOUTS_2D)), w_layout=draw(st.sampled_from(LAYOUTS_2D)),
                y_layout=draw(st.sampled_from(LAYOUTS_3D)), bias=draw(st.booleans()) and kind == "a16",
                out_dtype=draw(st.sampled_from(OUT_DTYPES)),
                out=draw(st.sampled_from([None] + OUT_LAYOUTS_3D)), out2=draw(st.sampled_from(OUT_LAYOUTS_3D)),
                cus=draw(st.integers(1, 9)), seed=draw(SEED))


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    M, K, D, S1, S2, S3 = c["M"], c["K"], c["D"], c["S1"], c["S2"], c["S3"]
    N = D * (S1 + S2)
    a8 = c["kind"] == "a8"
    out_dtype = c["out_dtype"] or (torch.bfloat16 if a8 else c["dtype"])
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None):
        xs = ws = bias = None
        if not a8:
            xv, wv = inp.randn(M, K, dtype=c["dtype"]), inp.randn(N, K, dtype=c["dtype"])
            bias = inp.randn(N, dtype=c["dtype"]) if c["bias"] else None
        elif c["source"] == "quant" and c["block"] == (128, 128):
            xv, xs = quant.quantize_fp8_blockwise(inp.randn(M, K, scale=3.0), (1, 128))
            wv, ws = quant.quantize_fp8_blockwise(inp.randn(N, K), (128, 128))
        else:
            bn, bk = c["block"]
            xv, wv = inp.q8(M, K, dtype=FP8), inp.q8(N, K, dtype=FP8)
            xs, ws = inp.scales(M, cdiv(K, bk)), inp.scales(cdiv(N, bn), cdiv(K, bk))
        xp, wp = place(xv, c["x_layout"]), place(wv, c["w_layout"])
        yp = place(inp.randn(M, D, S3, dtype=out_dtype), c["y_layout"])
        x, w, y = xp.view, wp.view, yp.view
        outs = None
        if c["out"] is not None:
            outs = (poisoned_out((M, D, S1 + S3), out_dtype, c["out"], device),
                    poisoned_out((M, D, S2), out_dtype, c["out2"], device))
        before = sum(C.LAUNCHES.values())
        out_arg = None if outs is None else (outs[0].view, outs[1].view)
        with poison_allocations():
            if a8:
                c1, c2 = gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2, block_shape=c["block"],
                                                                out_dtype=c["out_dtype"], out=out_arg,
                                                                config=c["config"])
            else:
                c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, bias, out_dtype=c["out_dtype"], out=out_arg,
                                                config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert c1.shape == (M, D, S1 + S3) and c2.shape == (M, D, S2) and c1.dtype == c2.dtype == out_dtype
    if outs is not None:
        assert c1 is outs[0].view and c2 is outs[1].view
    if M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    if a8:
        xd = f64(x) * expand_block_scales(f64(xs), (1, c["block"][1]), x.shape)
        wd = f64(w) * expand_block_scales(f64(ws), c["block"], w.shape)
        n_acc = K + 2 * cdiv(K, c["block"][1]) + 8
    else:
        xd, wd, n_acc = f64(x), f64(w), K + 8
    cref = xd @ wd.T + (f64(bias) if bias is not None else 0)
    S = xd.abs() @ wd.abs().T + (f64(bias).abs() if bias is not None else 0)
    err = linear_err(S, n_acc, device, in_dtype=FP8 if a8 else c["dtype"])
    cref, err = cref.view(M, D, S1 + S2), err.view(M, D, S1 + S2)
    if M and D and S3:
        assert torch.equal(c1[..., S1:].cpu().view(torch.uint8) if out_dtype.itemsize == 1 else c1[..., S1:].cpu(),
                           y.cpu()), "the y part of c1 is not y"
    norm = norm_tol(out_dtype, K, device, FP8 if a8 else None)
    check_elements(c1[..., :S1], cref[..., :S1], err[..., :S1], out_dtype, "c1", norm=norm)
    check_elements(c2, cref[..., S1:], err[..., S1:], out_dtype, "c2", norm=norm)
    for name, p in (("x", xp), ("w", wp), ("y", yp)):
        p.check_untouched(name)
    if outs is not None:
        outs[0].check_untouched("c1", output=True)
        outs[1].check_untouched("c2", output=True)


@INTERP
@prop_settings(100)
@given(c=cases())
def test_matches_reference(c):
    run_case(c, "cpu")


@pytest.mark.gpu
@prop_settings(15)
@given(c=cases(gpu=True))
def test_matches_reference_gpu(c):
    run_case(c, device_or_skip(True))


# ----------------------------------------------------------------------------- aliasing and invalid input

@INTERP
@prop_settings(20)
@given(kind=st.sampled_from(["c1_is_y", "c2_is_y", "c2_overlaps_x", "c1_overlaps_c2", "a8_c1_is_y", "disjoint_control"]),
       M=st.integers(1, 8), D=st.integers(1, 4), S=st.integers(1, 8), seed=SEED)
def test_out_aliasing_an_input_raises(kind, M, D, S, seed):
    """c1 / c2 sharing memory with y or x raises ValueError; c1 and c2 overlapping each other too (tiles would
    race on it)."""
    inp = Inputs(seed)
    S1, S2, S3 = (0, S, S) if kind in ("c1_is_y", "a8_c1_is_y") else (S, S, S)
    K = D * S2
    x, w = inp.randn(M, K, dtype=torch.bfloat16), inp.randn(D * (S1 + S2), K, dtype=torch.bfloat16)
    y = inp.randn(M, D, S3, dtype=torch.bfloat16)
    c1, c2 = torch.empty(M, D, S1 + S3, dtype=torch.bfloat16), torch.empty(M, D, S2, dtype=torch.bfloat16)
    if kind == "c1_is_y":
        c1 = y
    elif kind == "c2_is_y":
        c2 = y
    elif kind == "c2_overlaps_x":  # x (M, K = D S2) seen as (M, D, S2)
        c2 = x.view(M, D, S2)
    elif kind == "c1_overlaps_c2":
        buf = torch.empty(M * D * (S1 + S3) + M * D * S2, dtype=torch.bfloat16)
        c1 = buf[:M * D * (S1 + S3)].view(M, D, S1 + S3)
        c2 = buf[1:1 + M * D * S2].view(M, D, S2)
    elif kind == "a8_c1_is_y":
        x8, w8 = inp.q8(M, 128, dtype=FP8), inp.q8(D * S2, 128, dtype=FP8)
        xs, ws = inp.scales(M, 1), inp.scales(cdiv(D * S2, 128), 1)
        with pytest.raises(ValueError):
            gemmkit.gemm_a8w8_blockscale_split_cat(x8, w8, xs, ws, y, 0, S2, out=(y, c2))
        return
    else:
        buf = torch.empty(M * D * (S1 + S3) + M * D * S2, dtype=torch.bfloat16)
        c1 = buf[:M * D * (S1 + S3)].view(M, D, S1 + S3)
        c2 = buf[M * D * (S1 + S3):].view(M, D, S2)
        r1, r2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2))
        assert r1 is c1 and torch.equal(c1[..., S1:], y) and torch.isfinite(c2).all()
        return
    with pytest.raises(ValueError):
        gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2))


MUTATIONS = ["n_not_d_s", "s1_negative", "s_both_zero", "s1_float", "y_2d", "y_rows", "y_dtype", "out_single",
             "out_c1_shape", "out_c2_dtype", "split_k", "gluon", "bias_len", "x_3d", "a8_bk"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 8), D=st.integers(1, 4), S1=st.integers(1, 8),
       S2=st.integers(1, 8), S3=st.integers(1, 8), K=st.integers(1, 40), seed=SEED)
def test_invalid_inputs_raise(mutation, M, D, S1, S2, S3, K, seed):
    inp = Inputs(seed)
    bf = torch.bfloat16
    x, w, y, bias = inp.randn(M, K, dtype=bf), inp.randn(D * (S1 + S2), K, dtype=bf), inp.randn(M, D, S3, dtype=bf), None
    kw = dict(out=None, config=None)
    s1, s2 = S1, S2
    if mutation == "n_not_d_s":
        w = inp.randn(D * (S1 + S2) + 1, K, dtype=bf)
    elif mutation == "s1_negative":
        s1 = -1
    elif mutation == "s_both_zero":
        s1 = s2 = 0
    elif mutation == "s1_float":
        s1 = float(S1)
    elif mutation == "y_2d":
        y = y[:, 0]
    elif mutation == "y_rows":
        y = inp.randn(M + 1, D, S3, dtype=bf)
    elif mutation == "y_dtype":
        y = y.float()
    elif mutation == "out_single":
        kw["out"] = torch.empty(M, D, S1 + S3, dtype=bf)
    elif mutation == "out_c1_shape":
        kw["out"] = (torch.empty(M, D, S1 + S3 + 1, dtype=bf), torch.empty(M, D, S2, dtype=bf))
    elif mutation == "out_c2_dtype":
        kw["out"] = (torch.empty(M, D, S1 + S3, dtype=bf), torch.empty(M, D, S2, dtype=torch.float16))
    elif mutation == "split_k":
        kw["config"] = dict(SMALL[0], NUM_KSPLIT=2)
    elif mutation == "gluon":
        kw["config"] = dict(SMALL[0], backend="gluon")
    elif mutation == "bias_len":
        bias = inp.randn(D * (S1 + S2) + 1, dtype=bf)
    elif mutation == "x_3d":
        x = x[None]
    elif mutation == "a8_bk":
        x8, w8 = inp.q8(M, K, dtype=FP8), inp.q8(D * (S1 + S2), K, dtype=FP8)
        raises_invalid(lambda: gemmkit.gemm_a8w8_blockscale_split_cat(
            x8, w8, inp.scales(M, 1), inp.scales(1, 1), y, S1, S2, block_shape=(128, 100)))
        return
    raises_invalid(lambda: gemmkit.gemm_split_cat(x, w, y, s1, s2, bias, **kw))
