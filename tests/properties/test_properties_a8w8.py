"""Property tests of gemm_a8w8 (fp8 e4m3fn and int8, per-token x_scale, per-channel w_scale).

Operands come either from gemmkit.quant (quantize_fp8_per_token / _per_channel, quantize_int8_per_token of
fresh bf16 / fp32 values, as a user makes them) or raw (every 8-bit value, fp8 subnormals included, with
random positive scales). Shapes: 0, 1, odd, the served config's tile +- 1 (tables A8W8 / A8W8_INT8, or a
drawn shipped / small config); layouts of x, w (test_properties_common.place), scales as (M, 1), (M,),
strided or offset views; bias bf16 / fp16 / fp32; out_dtype; out= NaN-poisoned in every layout, or the
functional form with NaN-filled allocations. Every element against gemmkit.reference.gemm_a8w8_ref (float64)
within the bound of test_properties_common (int8 sums are exact; fp8 products are exact in fp32).
Also: out= aliasing an input raises ValueError; invalid shapes / dtypes raise. gpu versions: large shapes.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit import quant
from gemmkit.ops import _common as C
from gemmkit.reference import gemm_a8w8_ref

from test_properties_common import (INVALID_EXAMPLES, FP8, LAYOUTS_2D, OUT_DTYPES, OUT_LAYOUTS_2D, SEED, Inputs,
                                    check_elements, config_strategy, device_or_skip, f64, gemm_dims, interpret_arch,
                                    linear_err, norm_tol, place, poison_allocations, poisoned_out, prop_settings,
                                    raises_invalid)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
TABLE = {FP8: "a8w8", torch.int8: "a8w8_int8"}
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p, "NUM_KSPLIT": s}
         for bm, bn, bk, g, p, s in [(32, 32, 64, 2, False, 1), (16, 32, 32, 1, True, 1), (32, 16, 32, 3, False, 3),
                                     (16, 16, 64, 1, True, 2)]]
SCALE_FORMS = ["col", "vec", "strided", "offset"]
BIAS = [None, torch.bfloat16, torch.float16, torch.float32]


@st.composite
def cases(draw, gpu=False):
    dtype = draw(st.sampled_from([FP8, torch.int8]))
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx950"] +
                                                      (["gfx942"] if dtype == torch.int8 else [])))
    op = TABLE[dtype]
    small = SMALL + ([dict(SMALL[0], tma=True), dict(SMALL[2], tma=True)] if arch == "sm_90" else [])
    config = draw(config_strategy(op, arch, small=None if gpu else small))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=260, max_k=320)
    M, N, K = draw(gemm_dims(op, arch, config, **lims, large=gpu))
    N = min(N, 4096)
    return dict(dtype=dtype, arch=arch, config=config, M=M, N=N, K=K,
                source=draw(st.sampled_from(["quant", "raw"])), src_dtype=draw(st.sampled_from([torch.bfloat16,
                                                                                             torch.float32])),
                x_layout=draw(st.sampled_from(LAYOUTS_2D)), w_layout=draw(st.sampled_from(LAYOUTS_2D)),
                xs_form=draw(st.sampled_from(SCALE_FORMS)), ws_form=draw(st.sampled_from(SCALE_FORMS)),
                bias=draw(st.sampled_from(BIAS)), bias_layout=draw(st.sampled_from(["contiguous", "strided",
                                                                                    "misaligned"])),
                out_dtype=draw(st.sampled_from(OUT_DTYPES)), out=draw(st.sampled_from([None] + OUT_LAYOUTS_2D)),
                cus=draw(st.integers(1, 9)), seed=draw(SEED))


def scale_view(s, n, form, lead):
    """A per-row scale vector s (n,) as the op takes it: "col" (n, 1) if lead else (1, n), "vec" (n,), or a
    strided (stride 2) / offset view of the "col" shape; returns (Placed, tensor)."""
    p = place(s.view(1, n), {"vec": "contiguous", "col": "contiguous"}.get(form, form))
    v = p.view[0]
    return p, v if form == "vec" else (v.unsqueeze(1) if lead else v.unsqueeze(0))


def make_operands(c, inp):
    M, N, K, dt = c["M"], c["N"], c["K"], c["dtype"]
    if c["source"] == "quant":
        xf, wf = inp.randn(M, K, dtype=c["src_dtype"], scale=3.0), inp.randn(N, K, dtype=c["src_dtype"])
        if dt == torch.int8:
            (xq, xs), (wq, ws) = quant.quantize_int8_per_token(xf), quant.quantize_int8_per_token(wf)
        else:
            (xq, xs), (wq, ws) = quant.quantize_fp8_per_token(xf), quant.quantize_fp8_per_channel(wf)
        xs, ws = xs.reshape(M), ws.reshape(N)
    else:
        xq, wq = inp.q8(M, K, dtype=dt), inp.q8(N, K, dtype=dt)
        xs, ws = inp.scales(M), inp.scales(N)
    return xq, wq, xs, ws


def reference(x, w, xs, ws, bias):
    """(ref, S) in float64: gemm_a8w8_ref (the CPU) or the same math on the device; S = |x| @ |w|.T * |xs| * |ws|
    + |bias|."""
    M, N = x.shape[0], w.shape[0]
    xs2, ws2 = f64(xs).reshape(M, 1), f64(ws).reshape(1, N)
    b = f64(bias) if bias is not None else 0
    if x.is_cuda:
        ref = (f64(x) @ f64(w).T) * xs2 * ws2 + b
    else:
        ref = gemm_a8w8_ref(x, w, xs, ws, bias)
    S = (f64(x).abs() @ f64(w).abs().T) * xs2.abs() * ws2.abs() + (b.abs() if bias is not None else 0)
    return ref, S


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    M, N, K, dt = c["M"], c["N"], c["K"], c["dtype"]
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None):
        xq, wq, xs, ws = make_operands(c, inp)
        xp, wp = place(xq, c["x_layout"]), place(wq, c["w_layout"])
        xsp, xs_t = scale_view(xs, M, c["xs_form"], lead=True)
        wsp, ws_t = scale_view(ws, N, c["ws_form"], lead=False)
        bp = place(inp.randn(1, N, dtype=c["bias"]), c["bias_layout"]) if c["bias"] else None
        bias = bp.view[0] if bp else None
        out_dtype = c["out_dtype"] or torch.bfloat16
        op = None if c["out"] is None else poisoned_out((M, N), out_dtype, c["out"], device)
        before = sum(C.LAUNCHES.values())
        with poison_allocations():
            y = gemmkit.gemm_a8w8(xp.view, wp.view, xs_t, ws_t, bias, out_dtype=c["out_dtype"],
                                  out=None if op is None else op.view, config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == (M, N) and y.dtype == out_dtype
    if op is not None:
        assert y is op.view
    if M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    ref, S = reference(xp.view, wp.view, xs_t, ws_t, bias)
    n_acc = 0 if dt == torch.int8 else K + 8
    check_elements(y, ref, linear_err(S, n_acc, device, in_dtype=dt), out_dtype,
                   norm=norm_tol(out_dtype, K, device, dt))
    for name, p in (("x", xp), ("w", wp), ("x_scale", xsp), ("w_scale", wsp), ("bias", bp)):
        if p is not None:
            p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(110)
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
@prop_settings(25)
@given(kind=st.sampled_from(["out_is_x_scale", "out_is_w_scale", "out_is_bias", "out_is_x_bytes", "disjoint_control"]),
       M=st.integers(1, 20), N=st.integers(1, 20), K=st.integers(1, 40), seed=SEED,
       dtype=st.sampled_from([FP8, torch.int8]))
def test_out_aliasing_an_input_raises(kind, M, N, K, seed, dtype):
    """out= sharing memory with x (its bytes seen as bf16), a scale or the bias raises ValueError; an out that
    shares an allocation with x_scale but not its bytes is fine (control)."""
    inp = Inputs(seed)
    if kind == "out_is_x_bytes":
        K = 2 * N
    x, w = inp.q8(M, K, dtype=dtype), inp.q8(N, K, dtype=dtype)
    xs, ws, bias, out_dtype = inp.scales(M, 1), inp.scales(1, N), None, torch.float32
    if kind == "out_is_x_scale":
        N = 1
        w, ws = w[:1], ws[:, :1]
        out = xs
    elif kind == "out_is_w_scale":
        M = 1
        x, xs = x[:1], xs[:1]
        out = ws
    elif kind == "out_is_bias":
        M = 1
        x, xs = x[:1], xs[:1]
        bias = inp.randn(N, dtype=torch.bfloat16)
        out, out_dtype = bias.view(1, N), torch.bfloat16
    elif kind == "out_is_x_bytes":
        out, out_dtype = x.view(torch.bfloat16), torch.bfloat16
    else:
        flat = inp.scales(M + M * N)
        xs = flat[:M].view(M, 1)
        out = flat[M:].view(M, N)
        y = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=out_dtype, out=out)
        ref, S = reference(x, w, xs, ws, None)
        check_elements(y, ref, linear_err(S, 0 if dtype == torch.int8 else K + 8, "cpu"), out_dtype)
        return
    with pytest.raises(ValueError):
        gemmkit.gemm_a8w8(x, w, xs, ws, bias, out_dtype=out_dtype, out=out)


MUTATIONS = ["k_mismatch", "w_dtype", "fnuz_on_sm90", "x_bf16", "x_3d", "xs_shape", "xs_transposed", "xs_dtype",
             "ws_shape", "bias_len", "bias_int", "out_shape", "out_dtype_mismatch", "out_dtype_int",
             "int8_k_too_long", "out_expanded"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(2, 20), N=st.integers(2, 20), K=st.integers(1, 40),
       seed=SEED, dtype=st.sampled_from([FP8, torch.int8]))
def test_invalid_inputs_raise(mutation, M, N, K, seed, dtype):
    inp = Inputs(seed)
    x, w = inp.q8(M, K, dtype=dtype), inp.q8(N, K, dtype=dtype)
    xs, ws, bias = inp.scales(M, 1), inp.scales(1, N), None
    kw = dict(out_dtype=None, out=None)
    if mutation == "k_mismatch":
        w = inp.q8(N, K + 1, dtype=dtype)
    elif mutation == "w_dtype":
        w = w.to(torch.float32).to(torch.int8 if dtype == FP8 else FP8)
    elif mutation == "fnuz_on_sm90":
        x, w = inp.q8(M, K, dtype=torch.float8_e4m3fnuz), inp.q8(N, K, dtype=torch.float8_e4m3fnuz)
    elif mutation == "x_bf16":
        x, w = inp.randn(M, K, dtype=torch.bfloat16), inp.randn(N, K, dtype=torch.bfloat16)
    elif mutation == "x_3d":
        x = x[None]
    elif mutation == "xs_shape":
        xs = inp.scales(M + 1, 1)
    elif mutation == "xs_transposed":
        xs = xs.view(1, M)
    elif mutation == "xs_dtype":
        xs = xs.to(torch.bfloat16)
    elif mutation == "ws_shape":
        ws = inp.scales(N, 2)
    elif mutation == "bias_len":
        bias = inp.randn(N + 1, dtype=torch.float32)
    elif mutation == "bias_int":
        bias = inp.randint(0, 5, N, dtype=torch.int32)
    elif mutation == "out_shape":
        kw["out"] = torch.empty(M, N + 1, dtype=torch.bfloat16)
    elif mutation == "out_dtype_mismatch":
        kw.update(out=torch.empty(M, N, dtype=torch.float16), out_dtype=torch.float32)
    elif mutation == "out_dtype_int":
        kw["out_dtype"] = torch.int32
    elif mutation == "int8_k_too_long":
        K = 2**17
        x, w = torch.ones(1, K, dtype=torch.int8), torch.ones(1, K, dtype=torch.int8)
        xs, ws = torch.ones(1, 1), torch.ones(1, 1)
        if dtype != torch.int8:
            return
    elif mutation == "out_expanded":
        kw["out"] = torch.empty(1, N, dtype=torch.bfloat16).expand(M, N)
    raises_invalid(lambda: gemmkit.gemm_a8w8(x, w, xs, ws, bias, **kw))
