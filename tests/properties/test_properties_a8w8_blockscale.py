"""Property tests of gemm_a8w8_blockscale (fp8 e4m3fn, DeepSeek-V3 block scales: x_scale (M, ceil(K/bk)),
w_scale (ceil(N/bn), ceil(K/bk))).

Operands from gemmkit.quant.quantize_fp8_blockwise ((1, 128) for x, (128, 128) for w, of fresh bf16 / fp32
values) with block_shape (128, 128), or raw fp8 values with random positive scales for any block_shape
(bn in 1..200, bk a power of two 32..256). K is drawn freely, so it is mostly not a multiple of bk (the last
scale block partial), and at the served tile +- 1. x_scale M-major (as the quantizer makes it), row-major,
strided or offset; w_scale row-major, transposed or strided; every x / w layout; out_dtype; out= poisoned in
every layout, or functional. Every element against gemmkit.reference.gemm_a8w8_blockscale_ref (float64).
Also: aliasing out= raises ValueError; invalid shapes / block shapes raise. gpu versions: large shapes.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit import quant
from gemmkit.ops import _common as C
from gemmkit.reference import expand_block_scales, gemm_a8w8_blockscale_ref

from test_properties_common import (INVALID_EXAMPLES, FP8, LAYOUTS_2D, OUT_DTYPES, OUT_LAYOUTS_2D, SEED, Inputs,
                                    check_elements, config_strategy, device_or_skip, f64, gemm_dims, interpret_arch,
                                    linear_err, norm_tol, place, poison_allocations, poisoned_out, prop_settings,
                                    raises_invalid)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
OP = "a8w8_blockscale"
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": st_, "persistent": p, "NUM_KSPLIT": s}
         for bm, bn, bk, g, st_, p, s in [(32, 32, 64, 2, 2, False, 1), (16, 32, 128, 1, 3, True, 1),
                                          (32, 16, 32, 3, 2, False, 3), (16, 64, 64, 1, 2, True, 2)]]
XS_FORMS = ["m_major", "row_major", "strided", "offset"]
WS_FORMS = ["contiguous", "transposed", "strided"]


def cdiv(a, b):
    return -(-a // b)


@st.composite
def cases(draw, gpu=False):
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx950"]))
    small = SMALL + ([dict(SMALL[0], tma=True), dict(SMALL[1], tma=True)] if arch == "sm_90" else [])
    config = draw(config_strategy(OP, arch, small=None if gpu else small))
    source = draw(st.sampled_from(["quant", "raw", "raw"]))
    block = (128, 128) if source == "quant" else (draw(st.sampled_from([1, 48, 64, 128, 200])),
                                                  draw(st.sampled_from([32, 64, 128, 256])))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=260, max_k=320)
    M, N, K = draw(gemm_dims(OP, arch, config, **lims, large=gpu))
    N = min(N, 4096)
    if source == "raw" and block[0] == 1:
        N = min(N, 64)  # one scale row per w row: keep w_scale small
    return dict(arch=arch, config=config, source=source, block=block, M=M, N=N, K=K,
                src_dtype=draw(st.sampled_from([torch.bfloat16, torch.float32])),
                x_layout=draw(st.sampled_from(LAYOUTS_2D)), w_layout=draw(st.sampled_from(LAYOUTS_2D)),
                xs_form=draw(st.sampled_from(XS_FORMS)), ws_form=draw(st.sampled_from(WS_FORMS)),
                out_dtype=draw(st.sampled_from(OUT_DTYPES)), out=draw(st.sampled_from([None] + OUT_LAYOUTS_2D)),
                cus=draw(st.integers(1, 9)), seed=draw(SEED))


def make_operands(c, inp):
    M, N, K = c["M"], c["N"], c["K"]
    bn, bk = c["block"]
    if c["source"] == "quant":
        xq, xs = quant.quantize_fp8_blockwise(inp.randn(M, K, dtype=c["src_dtype"], scale=3.0), (1, 128))
        wq, ws = quant.quantize_fp8_blockwise(inp.randn(N, K, dtype=c["src_dtype"]), (128, 128))
        assert M == 0 or K == 0 or xs.stride() == (1, M), "quantize_fp8_blockwise((1, 128)): scales not M-major"
        return xq, wq, xs.contiguous(), ws
    return inp.q8(M, K, dtype=FP8), inp.q8(N, K, dtype=FP8), inp.scales(M, cdiv(K, bk)), inp.scales(cdiv(N, bn),
                                                                                                     cdiv(K, bk))


def place_scale(s, form):
    """(Placed, view) of a 2-D scale tensor in `form` (m_major: transposed storage, as the quantizer's)."""
    form = {"m_major": "transposed", "row_major": "contiguous"}.get(form, form)
    p = place(s, form)
    return p, p.view


def reference(x, w, xs, ws, block):
    """(ref, S) float64: gemm_a8w8_blockscale_ref on the CPU (the same math on the device) and the magnitude
    sum |x * xs| @ |w * ws|.T."""
    xd = f64(x) * expand_block_scales(f64(xs), (1, block[1]), x.shape)
    wd = f64(w) * expand_block_scales(f64(ws), block, w.shape)
    ref = xd @ wd.T if x.is_cuda else gemm_a8w8_blockscale_ref(x, w, xs, ws, block)
    return ref, xd.abs() @ wd.abs().T


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    M, N, K = c["M"], c["N"], c["K"]
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None):
        xq, wq, xs, ws = make_operands(c, inp)
        xp, wp = place(xq, c["x_layout"]), place(wq, c["w_layout"])
        xsp, xs_t = place_scale(xs, c["xs_form"])
        wsp, ws_t = place_scale(ws, c["ws_form"])
        out_dtype = c["out_dtype"] or torch.bfloat16
        op = None if c["out"] is None else poisoned_out((M, N), out_dtype, c["out"], device)
        before = sum(C.LAUNCHES.values())
        with poison_allocations():
            y = gemmkit.gemm_a8w8_blockscale(xp.view, wp.view, xs_t, ws_t, block_shape=c["block"],
                                             out_dtype=c["out_dtype"], out=None if op is None else op.view,
                                             config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == (M, N) and y.dtype == out_dtype
    if op is not None:
        assert y is op.view
    if M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    ref, S = reference(xp.view, wp.view, xs_t, ws_t, c["block"])
    n_acc = K + 2 * cdiv(K, c["block"][1]) + 8  # products in fp32, each block's partial scaled, then added
    check_elements(y, ref, linear_err(S, n_acc, device, in_dtype=FP8), out_dtype,
                   norm=norm_tol(out_dtype, K, device, FP8))
    for name, p in (("x", xp), ("w", wp), ("x_scale", xsp), ("w_scale", wsp)):
        p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(150)
@given(c=cases())
def test_matches_reference(c):
    run_case(c, "cpu")


@pytest.mark.gpu
@prop_settings(20)
@given(c=cases(gpu=True))
def test_matches_reference_gpu(c):
    run_case(c, device_or_skip(True))


# ----------------------------------------------------------------------------- aliasing and invalid input

@INTERP
@prop_settings(20)
@given(kind=st.sampled_from(["out_is_x_scale", "out_is_x_bytes", "out_is_w_scale", "disjoint_control"]),
       M=st.integers(1, 12), N=st.integers(1, 12), seed=SEED)
def test_out_aliasing_an_input_raises(kind, M, N, seed):
    inp = Inputs(seed)
    K = 2 * N if kind == "out_is_x_bytes" else 128 * N  # out_is_x_scale: x_scale (M, K / 128) = (M, N)
    x, w = inp.q8(M, K, dtype=FP8), inp.q8(N, K, dtype=FP8)
    xs, ws = inp.scales(M, cdiv(K, 128)), inp.scales(cdiv(N, 128), cdiv(K, 128))
    out_dtype = torch.float32
    if kind == "out_is_x_scale":
        out = xs
    elif kind == "out_is_x_bytes":
        out, out_dtype = x.view(torch.bfloat16), torch.bfloat16
    elif kind == "out_is_w_scale":  # w_scale (1, KB) seen as out (1, N): M = 1, KB = N
        x, xs = x[:1], xs[:1]
        out = ws
    else:
        flat = inp.scales(xs.numel() + M * N)
        xs = flat[:xs.numel()].view(xs.shape)
        out = flat[xs.numel():].view(M, N)
        y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out)
        ref, S = reference(x, w, xs, ws, (128, 128))
        check_elements(y, ref, linear_err(S, K + 2 * cdiv(K, 128) + 8, "cpu"), out_dtype)
        return
    with pytest.raises(ValueError):
        gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out_dtype=out_dtype, out=out)


MUTATIONS = ["k_mismatch", "int8", "xs_cols", "xs_rows", "ws_rows", "ws_cols", "xs_1d", "xs_bf16", "bk_not_pow2",
             "bk_16", "bn_0", "block_len3", "block_float", "out_shape", "out_dtype_int", "x_3d"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 20), N=st.integers(1, 140), K=st.integers(1, 300), seed=SEED)
def test_invalid_inputs_raise(mutation, M, N, K, seed):
    inp = Inputs(seed)
    x, w = inp.q8(M, K, dtype=FP8), inp.q8(N, K, dtype=FP8)
    kb, nb = cdiv(K, 128), cdiv(N, 128)
    xs, ws = inp.scales(M, kb), inp.scales(nb, kb)
    kw = dict(block_shape=(128, 128), out=None, out_dtype=None)
    if mutation == "k_mismatch":
        w = inp.q8(N, K + 1, dtype=FP8)
    elif mutation == "int8":
        x, w = inp.q8(M, K, dtype=torch.int8), inp.q8(N, K, dtype=torch.int8)
    elif mutation == "xs_cols":
        xs = inp.scales(M, kb + 1)
    elif mutation == "xs_rows":
        xs = inp.scales(M + 1, kb)
    elif mutation == "ws_rows":
        ws = inp.scales(nb + 1, kb)
    elif mutation == "ws_cols":
        ws = inp.scales(nb, kb + 1)
    elif mutation == "xs_1d":
        xs = xs[:, 0]
    elif mutation == "xs_bf16":
        xs = xs.to(torch.bfloat16)
    elif mutation == "bk_not_pow2":
        kw["block_shape"] = (128, 96)
    elif mutation == "bk_16":
        kw["block_shape"] = (128, 16)
    elif mutation == "bn_0":
        kw["block_shape"] = (0, 128)
    elif mutation == "block_len3":
        kw["block_shape"] = (128, 128, 1)
    elif mutation == "block_float":
        kw["block_shape"] = (128.0, 128)
    elif mutation == "out_shape":
        kw["out"] = torch.empty(M + 1, N, dtype=torch.bfloat16)
    elif mutation == "out_dtype_int":
        kw["out_dtype"] = torch.int8
    elif mutation == "x_3d":
        x = x[None]
    raises_invalid(lambda: gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, **kw))
