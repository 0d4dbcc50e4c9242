"""Property tests of batched_gemm_a16w16 and batched_gemm_a8w8 (y[b] = x[b] @ w[b].T, one launch).

Shapes: B in 1..4 (and 0), M, N, K 0, 1, odd, or the served config's tile +- 1 (BATCHED_* tables, or a
drawn shipped / small config); 3-D layouts of test_properties_common (transposed, sliced, strided, offset,
misaligned, interleaved batch, stride-0 batch = a shared weight, stride-0 rows); bias (B, N) or (N,);
activation; out_dtype; out= NaN-poisoned in every layout, or functional. 8-bit operands from gemmkit.quant
(per token of every entry) or raw, scales (B, M, 1) / (B, M) and (B, 1, N) / (B, N). Every element against a
float64 reference (gemmkit.reference per entry) within the bound of test_properties_common.
Also: aliasing out= raises ValueError; invalid shapes / configs raise. gpu versions: large shapes.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit import quant
from gemmkit.ops import _common as C
from gemmkit.reference import activation_ref

from test_properties_common import (INVALID_EXAMPLES, ACTIVATIONS, F16, FP8, LAYOUTS_3D, OUT_DTYPES, OUT_LAYOUTS_3D,
                                    SEED, Inputs, check_elements, config_strategy, device_or_skip, f64, gemm_dims,
                                    interpret_arch, linear_err, norm_tol, place, poison_allocations, poisoned_out,
                                    prop_settings, raises_invalid)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p}
         for bm, bn, bk, g, p in [(16, 32, 32, 1, False), (32, 16, 64, 3, True), (16, 16, 32, 2, True)]]
TABLE = {"a16w16": "batched_a16w16", FP8: "batched_a8w8", torch.int8: "batched_a8w8_int8"}


@st.composite
def cases(draw, gpu=False):
    kind = draw(st.sampled_from(["a16w16", "a16w16", "a8w8"]))
    dtype = draw(st.sampled_from(F16 if kind == "a16w16" else [FP8, torch.int8]))
    op = TABLE["a16w16" if kind == "a16w16" else dtype]
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx950"] +
                                                      (["gfx942"] if dtype != FP8 else [])))
    small = SMALL + ([dict(SMALL[0], tma=True)] if arch == "sm_90" else [])
    config = draw(config_strategy(op, arch, small=None if gpu else small))
    lims = dict(max_mn=2100, max_k=2048) if gpu else dict(max_mn=200, max_k=200)
    M, N, K = draw(gemm_dims(op, arch, config, **lims, large=gpu))
    B = 0 if draw(st.integers(0, 19)) == 0 else draw(st.integers(1, 3 if gpu else 4))
    return dict(kind=kind, dtype=dtype, arch=arch, config=config, B=B, M=M, N=N, K=K,
                source=draw(st.sampled_from(["quant", "raw"])),
                x_layout=draw(st.sampled_from(LAYOUTS_3D)), w_layout=draw(st.sampled_from(LAYOUTS_3D)),
                bias=draw(st.sampled_from([None, "per_entry", "shared"])),
                bias_dtype=draw(st.sampled_from([torch.bfloat16, torch.float16, torch.float32])),
                scale_form=draw(st.sampled_from(["3d", "2d"])), act=draw(st.sampled_from(ACTIVATIONS)),
                out_dtype=draw(st.sampled_from(OUT_DTYPES)), out=draw(st.sampled_from([None] + OUT_LAYOUTS_3D)),
                cus=draw(st.integers(1, 9)), seed=draw(SEED))


def reference(x, w, bias, act, xs=None, ws=None):
    """(ref, S) float64, (B, M, N): act(x[b] @ w[b].T * xs[b] * ws[b] + bias) and its magnitude sum."""
    B, M, N = x.shape[0], x.shape[1], w.shape[1]
    y, S = f64(x) @ f64(w).transpose(1, 2), f64(x).abs() @ f64(w).abs().transpose(1, 2)
    if xs is not None:
        sc = f64(xs).reshape(B, M, 1) * f64(ws).reshape(B, 1, N)
        y, S = y * sc, S * sc.abs()
    if bias is not None:
        b = f64(bias).reshape(bias.shape[0] if bias.dim() == 2 else 1, 1, N)  # (B or 1, 1, N); no -1: B or N may be 0
        y, S = y + b, S + b.abs()
    return activation_ref(y, act), S


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    B, M, N, K, dt = c["B"], c["M"], c["N"], c["K"], c["dtype"]
    a8 = c["kind"] == "a8w8"
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None):
        xs = ws = None
        if not a8:
            xv, wv = inp.randn(B, M, K, dtype=dt), inp.randn(B, N, K, dtype=dt)
        elif c["source"] == "quant":
            qf = quant.quantize_int8_per_token if dt == torch.int8 else quant.quantize_fp8_per_token
            xv, xs = qf(inp.randn(B * M, K, dtype=torch.bfloat16, scale=2.0))
            wv, ws = qf(inp.randn(B * N, K, dtype=torch.float32))
            xv, wv, xs, ws = xv.view(B, M, K), wv.view(B, N, K), xs.view(B, M), ws.view(B, N)
        else:
            xv, wv, xs, ws = inp.q8(B, M, K, dtype=dt), inp.q8(B, N, K, dtype=dt), inp.scales(B, M), inp.scales(B, N)
        xp, wp = place(xv, c["x_layout"]), place(wv, c["w_layout"])
        x, w = xp.view, wp.view
        if a8:
            xs, ws = (xs.view(B, M, 1), ws.view(B, 1, N)) if c["scale_form"] == "3d" else (xs, ws)
        bdt = c["bias_dtype"] if a8 else dt
        bias = None if c["bias"] is None else inp.randn(*((B, N) if c["bias"] == "per_entry" else (N,)), dtype=bdt)
        out_dtype = c["out_dtype"] or (torch.bfloat16 if a8 else dt)
        op = None if c["out"] is None else poisoned_out((B, M, N), out_dtype, c["out"], device)
        act = None if a8 else c["act"]
        before = sum(C.LAUNCHES.values())
        with poison_allocations():
            if a8:
                y = gemmkit.batched_gemm_a8w8(x, w, xs, ws, bias, out_dtype=c["out_dtype"],
                                              out=None if op is None else op.view, config=c["config"])
            else:
                y = gemmkit.batched_gemm_a16w16(x, w, bias, activation=act, out_dtype=c["out_dtype"],
                                                out=None if op is None else op.view, config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == (B, M, N) and y.dtype == out_dtype
    if op is not None:
        assert y is op.view
    if B and M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    ref, S = reference(x, w, bias, act, xs, ws)
    n_acc = 0 if dt == torch.int8 else K + 8
    check_elements(y, ref, linear_err(S, n_acc, device, act, in_dtype=dt), out_dtype,
                   norm=norm_tol(out_dtype, K, device, dt))
    for name, p in (("x", xp), ("w", wp)):
        p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(120)
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
@given(kind=st.sampled_from(["out_is_x", "out_overlaps_w", "out_is_bias", "a8_out_is_x_scale", "disjoint_control"]),
       B=st.integers(1, 3), M=st.integers(1, 10), N=st.integers(1, 10), seed=SEED)
def test_out_aliasing_an_input_raises(kind, B, M, N, seed):
    inp = Inputs(seed)
    K = N
    x, w = inp.randn(B, M, K, dtype=torch.bfloat16), inp.randn(B, N, K, dtype=torch.bfloat16)
    bias = None
    if kind == "a8_out_is_x_scale":
        x8, w8 = inp.q8(B, M, K, dtype=FP8), inp.q8(B, 1, K, dtype=FP8)
        xs, ws = inp.scales(B, M, 1), inp.scales(B, 1, 1)
        with pytest.raises(ValueError):
            gemmkit.batched_gemm_a8w8(x8, w8, xs, ws, out_dtype=torch.float32, out=xs)
        return
    if kind == "out_is_x":
        out = x
    elif kind == "out_overlaps_w":  # a window of w's memory (w has B * N * N elements, M <= N)
        M = min(M, N)
        x = x[:, :M]
        s0 = 1 if B * M * N < w.numel() else 0
        out = w.view(-1)[s0:s0 + B * M * N].view(B, M, N)
    elif kind == "out_is_bias":
        M = 1
        x = x[:, :1]
        bias = inp.randn(B, N, dtype=torch.bfloat16)
        out = bias.view(B, 1, N)
    else:
        flat = inp.randn(B * M * K + B * M * N, dtype=torch.bfloat16)
        x = flat[:B * M * K].view(B, M, K)
        out = flat[B * M * K:].view(B, M, N)
        y = gemmkit.batched_gemm_a16w16(x, w, out=out)
        ref, S = reference(x, w, None, None)
        check_elements(y, ref, linear_err(S, K + 8, "cpu"), torch.bfloat16)
        return
    with pytest.raises(ValueError):
        gemmkit.batched_gemm_a16w16(x, w, bias, out=out)


MUTATIONS = ["batch_mismatch", "k_mismatch", "x_2d", "w_dtype", "bias_shape", "bias_3d", "out_shape",
             "split_k", "split_n", "swap_ab", "a8_xs_shape", "a8_ws_shape", "a8_gluon", "a8_bias_int", "act"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(B=st.integers(1, 3), M=st.integers(1, 12), N=st.integers(1, 12), K=st.integers(1, 40), seed=SEED)
def test_invalid_inputs_raise(mutation, B, M, N, K, seed):
    inp = Inputs(seed)
    x, w, bias = inp.randn(B, M, K, dtype=torch.bfloat16), inp.randn(B, N, K, dtype=torch.bfloat16), None
    x8, w8, xs, ws = inp.q8(B, M, K, dtype=FP8), inp.q8(B, N, K, dtype=FP8), inp.scales(B, M, 1), inp.scales(B, 1, N)
    cfg = dict(SMALL[0])
    kw = dict(out=None, config=None)
    a8 = mutation.startswith("a8")
    if mutation == "batch_mismatch":
        w = inp.randn(B + 1, N, K, dtype=torch.bfloat16)
    elif mutation == "k_mismatch":
        w = inp.randn(B, N, K + 1, dtype=torch.bfloat16)
    elif mutation == "x_2d":
        x = x[0]
    elif mutation == "w_dtype":
        w = w.half()
    elif mutation == "bias_shape":
        bias = inp.randn(B + 1, N, dtype=torch.bfloat16)
    elif mutation == "bias_3d":
        bias = inp.randn(B, 1, N, dtype=torch.bfloat16)
    elif mutation == "out_shape":
        kw["out"] = torch.empty(B, M, N + 1, dtype=torch.bfloat16)
    elif mutation == "split_k":
        kw["config"] = dict(cfg, NUM_KSPLIT=2)
    elif mutation == "split_n":
        kw["config"] = dict(cfg, BLOCK_SIZE_N=96, backend="gluon")
    elif mutation == "swap_ab":
        kw["config"] = dict(cfg, BLOCK_SIZE_N=64, backend="gluon", swap_ab=True)
    elif mutation == "a8_xs_shape":
        xs = inp.scales(B, M + 1, 1)
    elif mutation == "a8_ws_shape":
        ws = inp.scales(B, N, 1) if N != 1 else inp.scales(B, 2, 1)
    elif mutation == "a8_gluon":
        kw["config"] = dict(cfg, backend="gluon")
    elif mutation == "a8_bias_int":
        bias = inp.randint(0, 3, N, dtype=torch.int32)
    elif mutation == "act":
        kw["activation"] = "swish"
    if a8:
        raises_invalid(lambda: gemmkit.batched_gemm_a8w8(x8, w8, xs, ws, bias, **kw))
    else:
        raises_invalid(lambda: gemmkit.batched_gemm_a16w16(x, w, bias, **kw))
