"""Property tests of gemm_a16w16_gated (h = act(x @ Wg.T) * (x @ Wu.T), gate rows first) and ffn_gated
(y = h @ w_down.T, h held in x's dtype).

Shapes: M (flattened, with batch dims), I and K 0, 1, odd or the served config's tile +- 1 (A16W16_GATED:
BLOCK_SIZE_N counts h columns); configs from the tables, shipped ones, small ones (split-K: the gated reduce),
and for ffn_gated also pairs (gate_up config, down config); every 2-D layout of x, w_gate_up, w_down;
activation; out_dtype; out= NaN-poisoned in every layout, or functional. Every element against float64:
h = activation_ref(x Wg.T) * (x Wu.T) exactly; the bound carries the errors of g and u through act(g) * u,
and for ffn_gated the rounding of h to x's dtype through the down projection (|w_down| @ (U_in |h| + ...)).
Also: aliasing out= raises ValueError (an in-place ffn_gated(x, ..., out=x) included); invalid input raises.
"""
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import gemmkit
from gemmkit.ops import _common as C
from gemmkit.reference import activation_ref

from test_properties_common import (INVALID_EXAMPLES, ACT_ULPS, F16, L_ACT, LAYOUTS_2D, OUT_DTYPES, OUT_LAYOUTS_2D,
                                    SEED, SUB_OUT, U32, U_OUT, Inputs, acc_unit, check_elements, config_strategy,
                                    device_or_skip, f64, gemm_dims, interpret_arch, norm_tol, place, poison_allocations,
                                    poisoned_out, prop_settings, raises_invalid, shipped_configs)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
OP = "a16w16_gated"
GATED_ACTS = ["silu", "gelu", "gelu_tanh", "relu"]
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p, "NUM_KSPLIT": s}
         for bm, bn, bk, g, p, s in [(16, 16, 32, 2, False, 1), (32, 16, 16, 1, True, 1), (16, 32, 32, 3, False, 3),
                                     (16, 16, 16, 1, True, 2)]]


@st.composite
def cases(draw, gpu=False, ffn=False):
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx942", "gfx950"]))
    small = SMALL + ([dict(SMALL[0], tma=True)] if arch == "sm_90" else [])
    config = draw(config_strategy(OP, arch, small=None if gpu else small))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=200, max_k=200)
    M, I, K = draw(gemm_dims(OP, arch, config, **lims, large=gpu))
    if gpu:
        I = min(I, 2048 if ffn else 4096)
    if ffn and config is not None and draw(st.booleans()):
        down = shipped_configs("a16w16", arch)
        config = (config, draw(st.sampled_from(down + [None])))
    batch = draw(st.sampled_from([(), (2,)]))
    if batch and M % 2:
        batch = ()
    out = draw(st.sampled_from([None] + OUT_LAYOUTS_2D))
    return dict(arch=arch, config=config, M=M, I=I, K=K, batch=batch, dtype=draw(st.sampled_from(F16)),
                act=draw(st.sampled_from(GATED_ACTS)), out_dtype=draw(st.sampled_from(OUT_DTYPES)), out=out,
                layouts=[draw(st.sampled_from(LAYOUTS_2D)) for _ in range(3)], cus=draw(st.integers(1, 9)),
                seed=draw(SEED))


def gated_reference(x2, w_gate_up, act, device):
    """(h, e_h, |h|-free magnitude pieces) float64: h = act(g) * u exactly, and the bound e_h on the kernel's
    fp32 h: g and u each within e = (K + 8) u_acc S of exact (S = |x| @ |W|.T); act(g) * u then within
    L e_g S_u + L S_g e_u + e_g e_u + (act's own + the product's rounding) L S_g S_u."""
    I, K = w_gate_up.shape[0] // 2, x2.shape[1]
    xg, wg, wu = f64(x2), f64(w_gate_up[:I]), f64(w_gate_up[I:])
    g, u = xg @ wg.T, xg @ wu.T
    Sg, Su = xg.abs() @ wg.abs().T, xg.abs() @ wu.abs().T
    h = activation_ref(g, act) * u
    eg, eu = (K + 8) * acc_unit(device) * Sg, (K + 8) * acc_unit(device) * Su
    e_h = L_ACT * eg * Su + L_ACT * Sg * eu + eg * eu + (ACT_ULPS + 2) * U32 * L_ACT * Sg * Su
    return h, e_h


def make(c, inp):
    M, I, K, dt = c["M"], c["I"], c["K"], c["dtype"]
    xp = place(inp.randn(M, K, dtype=dt), c["layouts"][0])
    wp = place(inp.randn(2 * I, K, dtype=dt), c["layouts"][1])
    dp = place(inp.randn(K, I, dtype=dt), c["layouts"][2])
    x = xp.view.view(*c["batch"], M // 2, K) if c["batch"] else xp.view
    return xp, wp, dp, x


def finite_in(magnitude, dtype) -> bool:
    """Whether every element of `magnitude` (float64, >= 0) rounds to a finite value of `dtype`."""
    return magnitude.numel() == 0 or bool(magnitude.max() < torch.finfo(dtype).max)


def run_gated(c, device):
    inp = Inputs(c["seed"], device)
    M, I, K, dt = c["M"], c["I"], c["K"], c["dtype"]
    xp, wp, _dp, x = make(c, inp)
    out_dtype = c["out_dtype"] or dt
    op = None if c["out"] is None else poisoned_out((M, I), out_dtype, c["out"], device)
    before = sum(C.LAUNCHES.values())
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None), \
            poison_allocations():
        y = gemmkit.gemm_a16w16_gated(x, wp.view, activation=c["act"], out_dtype=c["out_dtype"],
                                      out=None if op is None else op.view.view(*x.shape[:-1], I), config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == tuple(x.shape[:-1]) + (I,) and y.dtype == out_dtype
    if M and I and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    h, e_h = gated_reference(xp.view, wp.view, c["act"], device)
    assume(finite_in(h.abs() + e_h, out_dtype))  # (an h past out_dtype's range is inf, as in torch: see run_ffn)
    check_elements(y.reshape(M, I), h, e_h, out_dtype, norm=norm_tol(out_dtype, K, device))
    xp.check_untouched("x")
    wp.check_untouched("w_gate_up")
    if op is not None:
        op.check_untouched("out", output=True)


def run_ffn(c, device):
    inp = Inputs(c["seed"], device)
    M, I, K, dt = c["M"], c["I"], c["K"], c["dtype"]
    xp, wp, dp, x = make(c, inp)
    out_dtype = c["out_dtype"] or dt
    op = None if c["out"] is None else poisoned_out((M, K), out_dtype, c["out"], device)
    before = sum(C.LAUNCHES.values())
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None), \
            poison_allocations():
        y = gemmkit.ffn_gated(x, wp.view, dp.view, activation=c["act"], out_dtype=c["out_dtype"],
                              out=None if op is None else op.view.view(*x.shape), config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == tuple(x.shape) and y.dtype == out_dtype
    if M and I and K:
        assert sum(C.LAUNCHES.values()) > before + 1, "not both GEMM kernels ran"
    h, e_h = gated_reference(xp.view, wp.view, c["act"], device)
    # h is held in x's dtype (documented; torch's unfused silu(x Wg.T) * (x Wu.T) @ Wd.T the same): where h may pass
    # its largest finite value it is inf, as in torch, which the float64 reference does not model (fp16 with
    # stride-0 rows of x and w: every product adds up, |h| ~ (K |x| |w|)^2)
    assume(finite_in(h.abs() + e_h, dt))
    # h is stored in x's dtype: within U_in (|h| + e_h) + e_h + SUB_in of the exact h, elementwise
    d_h = U_OUT[dt] * (h.abs() + e_h) + e_h + SUB_OUT[dt]
    wd = f64(dp.view)
    ref = h @ wd.T
    mag = (h.abs() + d_h) @ wd.abs().T
    err = d_h @ wd.abs().T + ((I + 8) * acc_unit(device) + 2 * U32) * mag
    h_round = (U_OUT[dt] * h.abs()) @ wd.abs().T  # what rounding h to x's dtype can move y (norm bound)
    assume(finite_in(ref.abs() + err, out_dtype))
    check_elements(y.reshape(M, K), ref, err, out_dtype,
                   norm=norm_tol(out_dtype, I, device) + (h_round.norm() / ref.norm().clamp_min(1e-300)).item())
    for name, p in (("x", xp), ("w_gate_up", wp), ("w_down", dp)):
        p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(70)
@given(c=cases())
def test_gated_matches_reference(c):
    run_gated(c, "cpu")


@INTERP
@prop_settings(50)
@given(c=cases(ffn=True))
def test_ffn_matches_reference(c):
    run_ffn(c, "cpu")


@pytest.mark.gpu
@prop_settings(12)
@given(c=cases(gpu=True))
def test_gated_matches_reference_gpu(c):
    run_gated(c, device_or_skip(True))


@pytest.mark.gpu
@prop_settings(12)
@given(c=cases(gpu=True, ffn=True))
def test_ffn_matches_reference_gpu(c):
    run_ffn(c, device_or_skip(True))


@INTERP
def test_out_with_zero_width_gated():
    """I = 0 (w_gate_up (0, K)), out = torch.empty(M, 0): documented 'M or I == 0: empty'."""
    x = torch.randn(3, 8).bfloat16()
    out = torch.empty(3, 0, dtype=torch.bfloat16)
    assert gemmkit.gemm_a16w16_gated(x, torch.randn(0, 8).bfloat16(), out=out) is out


@INTERP
def test_out_with_zero_width_ffn():
    """K = 0 (x (M, 0)), out = torch.empty(M, 0): documented 'M or K == 0: empty'."""
    x = torch.randn(3, 0).bfloat16()
    out = torch.empty(3, 0, dtype=torch.bfloat16)
    assert gemmkit.ffn_gated(x, torch.randn(8, 0).bfloat16(), torch.randn(0, 4).bfloat16(), out=out) is out


# ----------------------------------------------------------------------------- aliasing and invalid input

@INTERP
@prop_settings(25)
@given(kind=st.sampled_from(["ffn_in_place", "ffn_out_is_w_down", "gated_out_is_x", "gated_out_overlaps_w",
                             "disjoint_control"]),
       M=st.integers(1, 10), I=st.integers(1, 10), seed=SEED)
def test_out_aliasing_an_input_raises(kind, M, I, seed):
    inp = Inputs(seed)
    K = I if kind in ("gated_out_is_x", "ffn_out_is_w_down") else 2 * I + 1
    x, wgu, wd = inp.randn(M, K, dtype=torch.bfloat16), inp.randn(2 * I, K, dtype=torch.bfloat16), \
        inp.randn(K, I, dtype=torch.bfloat16)
    if kind == "ffn_in_place":
        fn = lambda: gemmkit.ffn_gated(x, wgu, wd, out=x)  # noqa: E731
    elif kind == "ffn_out_is_w_down":  # w_down (K, I) = (I, I); x (I, K): out (I, K) = w_down
        x = inp.randn(I, K, dtype=torch.bfloat16)
        fn = lambda: gemmkit.ffn_gated(x, wgu, wd, out=wd)  # noqa: E731
    elif kind == "gated_out_is_x":
        fn = lambda: gemmkit.gemm_a16w16_gated(x, wgu, out=x)  # noqa: E731
    elif kind == "gated_out_overlaps_w":  # out (M, I) on w's first elements: one buffer holds both (M * I can be more)
        flat = inp.randn(max(2 * I * K, M * I), dtype=torch.bfloat16)
        wgu = flat[:2 * I * K].view(2 * I, K)
        fn = lambda: gemmkit.gemm_a16w16_gated(x, wgu, out=flat[:M * I].view(M, I))  # noqa: E731
    else:
        flat = inp.randn(M * K + M * K, dtype=torch.bfloat16)
        x, out = flat[:M * K].view(M, K), flat[M * K:].view(M, K)
        y = gemmkit.ffn_gated(x, wgu, wd, out=out)
        assert y is out and torch.isfinite(y).all()
        return
    with pytest.raises(ValueError):
        fn()


MUTATIONS = ["odd_rows", "k_mismatch", "w_down_swapped", "w_down_dtype", "act_none", "act_bad", "out_shape",
             "ffn_out_shape", "config_triple", "gated_backend", "x_fp32", "out_dtype_int"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 10), I=st.integers(1, 10), K=st.integers(1, 30), seed=SEED)
def test_invalid_inputs_raise(mutation, M, I, K, seed):
    inp = Inputs(seed)
    x, wgu, wd = inp.randn(M, K, dtype=torch.bfloat16), inp.randn(2 * I, K, dtype=torch.bfloat16), \
        inp.randn(K, I, dtype=torch.bfloat16)
    kw = dict(activation="silu", out=None, config=None)
    ffn = True
    if mutation == "odd_rows":
        wgu = inp.randn(2 * I + 1, K, dtype=torch.bfloat16)
    elif mutation == "k_mismatch":
        wgu = inp.randn(2 * I, K + 1, dtype=torch.bfloat16)
    elif mutation == "w_down_swapped":
        wd = inp.randn(I, K + (I == K), dtype=torch.bfloat16)
    elif mutation == "w_down_dtype":
        wd = wd.half()
    elif mutation == "act_none":
        kw["activation"] = None
    elif mutation == "act_bad":
        kw["activation"] = "sigmoid"
    elif mutation == "out_shape":
        ffn = False
        kw["out"] = torch.empty(M, I + 1, dtype=torch.bfloat16)
    elif mutation == "ffn_out_shape":
        kw["out"] = torch.empty(M, I + K + 1, dtype=torch.bfloat16)
    elif mutation == "config_triple":
        kw["config"] = (SMALL[0], None, None)
    elif mutation == "gated_backend":  # (a "gluon" config is valid: test_ffn's Gluon tile runs the Triton tier here)
        ffn = False
        kw["config"] = dict(SMALL[0], backend="cuda")
    elif mutation == "x_fp32":
        x, wgu, wd = x.float(), wgu.float(), wd.float()
    elif mutation == "out_dtype_int":
        kw["out_dtype"] = torch.int32
    if ffn:
        raises_invalid(lambda: gemmkit.ffn_gated(x, wgu, wd, **kw))
    else:
        raises_invalid(lambda: gemmkit.gemm_a16w16_gated(x, wgu, **kw))
