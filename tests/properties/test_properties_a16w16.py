"""Property tests of gemm_a16w16 (complements tests/properties/test_properties_a16w16_configs.py, which draws small hand-made
configs): the shipped tables' configs and the served config's tile +- 1, every layout of
test_properties_common (transposed, sliced, strided, stride-0, offset, misaligned) for x, w, bias and out,
batch dims, bias / activation / out_dtype / out=, NaN-poisoned outputs (out= prefilled; functional outputs
through torch's NaN-filling allocator), every element against the float64 reference (gemmkit.reference)
with the bound of test_properties_common, no write outside the output, no write to an input.
Also: out= that aliases an input raises ValueError; invalid shapes / dtypes raise ValueError / TypeError.
gpu-marked versions draw large shapes (M up to 4100, N and K up to 4096) on the GPU.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit.ops import _common as C
from gemmkit.reference import activation_ref, gemm_a16w16_ref

from test_properties_common import (INVALID_EXAMPLES, ACTIVATIONS, F16, LAYOUTS_2D, OUT_DTYPES, OUT_LAYOUTS_2D, SEED,
                                    Inputs, check_elements, config_strategy, device_or_skip, f64, gemm_dims,
                                    interpret_arch, linear_err, norm_tol, place, poison_allocations, poisoned_out,
                                    prop_settings, raises_invalid)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
OP = "a16w16"
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p, "NUM_KSPLIT": s}
         for bm, bn, bk, g, p, s in [(16, 32, 16, 1, False, 1), (32, 16, 32, 3, True, 1), (16, 16, 32, 2, False, 3),
                                     (32, 32, 16, 1, True, 2)]]
BIAS_LAYOUTS = ["contiguous", "strided", "offset", "misaligned"]


@st.composite
def cases(draw, gpu=False):
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "sm_90", "gfx942", "gfx950"]))
    small = [dict(c, tma=True) for c in SMALL[:2]] + SMALL if arch == "sm_90" else SMALL
    config = draw(config_strategy(OP, arch, small=None if gpu else small))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=260, max_k=320)
    M, N, K = draw(gemm_dims(OP, arch, config, **lims, large=gpu))
    if gpu:
        N = min(N, 4096)
    batch = draw(st.sampled_from([(), (2,), (1, 3)]))
    if batch and M % (batch[0] * (batch[-1] if len(batch) > 1 else 1)):
        batch = ()
    out = draw(st.sampled_from([None] + OUT_LAYOUTS_2D))
    return dict(arch=arch, config=config, M=M, N=N, K=K, batch=batch, dtype=draw(st.sampled_from(F16)),
                out_dtype=draw(st.sampled_from(OUT_DTYPES)), act=draw(st.sampled_from(ACTIVATIONS)),
                x_layout=draw(st.sampled_from(LAYOUTS_2D)), w_layout=draw(st.sampled_from(LAYOUTS_2D)),
                bias=draw(st.sampled_from([None] + BIAS_LAYOUTS)), out=out, cus=draw(st.integers(1, 9)),
                seed=draw(SEED))


def reference(x, w, bias, act):
    """(ref, S): float64 act(x @ w.T + bias) (gemmkit.reference on the CPU; the same math on the device
    for GPU-sized shapes) and the magnitude sum |x| @ |w|.T + |bias|, shape (..., N)."""
    x2 = f64(x).reshape(x.shape[:-1].numel(), x.shape[-1])
    if x.is_cuda:
        y = x2 @ f64(w).T + (f64(bias) if bias is not None else 0)
        ref = activation_ref(y, act).reshape(*x.shape[:-1], w.shape[0])
    else:
        ref = gemm_a16w16_ref(x, w, bias, act)
    S = x2.abs() @ f64(w).abs().T + (f64(bias).abs() if bias is not None else 0)
    return ref, S.reshape(*x.shape[:-1], w.shape[0])


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    M, N, K, dt = c["M"], c["N"], c["K"], c["dtype"]
    xp = place(inp.randn(M, K, dtype=dt), c["x_layout"])
    wp = place(inp.randn(N, K, dtype=dt), c["w_layout"])
    bp = place(inp.randn(1, N, dtype=dt), c["bias"]) if c["bias"] else None
    x = xp.view.view(*c["batch"], M // (c["batch"][0] * (c["batch"][-1] if len(c["batch"]) > 1 else 1)), K) \
        if c["batch"] else xp.view
    w, bias = wp.view, bp.view[0] if bp else None
    out_dtype = c["out_dtype"] or dt
    op = None if c["out"] is None else poisoned_out((M, N), out_dtype, c["out"], device)
    out = None if op is None else op.view.view(*x.shape[:-1], N)
    before = sum(C.LAUNCHES.values())
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None), \
            poison_allocations():
        y = gemmkit.gemm_a16w16(x, w, bias, activation=c["act"], out_dtype=c["out_dtype"], out=out,
                                config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == tuple(x.shape[:-1]) + (N,) and y.dtype == out_dtype
    if out is not None:
        assert y is out
    if M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    ref, S = reference(x, w, bias, c["act"])
    err = linear_err(S, K + 8, device, c["act"])
    check_elements(y, ref, err, out_dtype, norm=norm_tol(out_dtype, K, device))
    for name, p in (("x", xp), ("w", wp), ("bias", bp)):
        if p is not None:
            p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(120)
@given(c=cases())
def test_matches_reference(c):
    run_case(c, "cpu")


@pytest.mark.gpu
@prop_settings(20)
@given(c=cases(gpu=True))
def test_matches_reference_gpu(c):
    run_case(c, device_or_skip(True))


@INTERP
def test_out_with_n_zero_gives_an_empty_result():
    """Found by test_matches_reference: x (3, 4), w (0, 4), out = torch.empty(3, 0) was refused (view(-1, 0))."""
    x, w = torch.randn(3, 4).bfloat16(), torch.randn(0, 4).bfloat16()
    out = torch.empty(3, 0, dtype=torch.bfloat16)
    assert gemmkit.gemm_a16w16(x, w, out=out) is out


@INTERP
def test_reference_with_k_zero():
    """Found by test_matches_reference (K = 0): the float64 reference raised instead of giving act(bias)."""
    x, w, b = torch.randn(3, 0), torch.randn(4, 0), torch.randn(4)
    assert torch.equal(gemm_a16w16_ref(x, w, b, None), b.double().expand(3, 4))


# ----------------------------------------------------------------------------- aliasing and invalid input

@st.composite
def alias_cases(draw):
    kind = draw(st.sampled_from(["out_is_x", "out_overlaps_x", "out_is_w_rows", "out_is_bias", "out_overlaps_w",
                                 "disjoint_control"]))
    M, N = draw(st.integers(1, 24)), draw(st.integers(1, 24))
    K = draw(st.integers(max(N, 1), 40))
    if kind == "out_is_x":
        K = N
    if kind == "out_is_w_rows":
        M = min(M, N)
    if kind == "out_is_bias":
        M = 1
    return dict(kind=kind, M=M, N=N, K=K, o=draw(st.integers(1, 1000)), seed=draw(SEED),
                dtype=draw(st.sampled_from(F16)))


@INTERP
@prop_settings(30)
@given(c=alias_cases())
def test_out_aliasing_an_input_raises(c):
    """out= sharing memory with x, w or bias raises ValueError (the kernel would overwrite an operand
    while other tiles still read it); an out whose memory is disjoint from the inputs in the same
    allocation is fine (control)."""
    inp = Inputs(c["seed"])
    M, N, K, dt, kind = c["M"], c["N"], c["K"], c["dtype"], c["kind"]
    bias = None
    if kind in ("out_is_x", "out_overlaps_x", "disjoint_control"):
        flat = inp.randn(M * K + M * N + K, dtype=dt)
        x = flat[:M * K].view(M, K)
        w = inp.randn(N, K, dtype=dt)
        if kind == "out_is_x":
            out = x
        elif kind == "out_overlaps_x":
            o = 1 + c["o"] % (M * K)  # out starts o elements before x's end
            out = flat[M * K - o:M * K - o + M * N].view(M, N)
        else:
            out = flat[M * K + K:M * K + K + M * N].view(M, N)
    else:
        x = inp.randn(M, K, dtype=dt)
        w = inp.randn(N, K, dtype=dt)
        if kind == "out_is_w_rows":
            out = w[:M, :N]
        elif kind == "out_overlaps_w":  # a window of w's memory
            M = min(M, K)
            s0 = c["o"] % (N * K - M * N + 1)
            x = x[:M]
            out = w.view(-1)[s0:s0 + M * N].view(M, N)
        else:
            bias = inp.randn(N, dtype=dt)
            out = bias.view(1, N)
    if kind == "disjoint_control":
        y = gemmkit.gemm_a16w16(x, w, bias, out=out)
        ref, S = reference(x, w, bias, None)
        check_elements(y, ref, linear_err(S, K + 8, "cpu"), dt)
        return
    with pytest.raises(ValueError):
        gemmkit.gemm_a16w16(x, w, bias, out=out)


MUTATIONS = ["k_mismatch", "w_1d", "w_3d", "x_0d", "w_dtype", "x_fp32", "bias_len", "bias_2d", "bias_dtype",
             "out_shape", "out_dtype_mismatch", "out_expanded", "activation", "out_dtype_int", "config_key",
             "x_not_tensor", "config_block"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 20), N=st.integers(1, 20), K=st.integers(1, 40),
       d=st.sampled_from([-1, 1, 2]), seed=SEED, dtype=st.sampled_from(F16))
def test_invalid_inputs_raise(mutation, M, N, K, d, seed, dtype):
    """A valid call with one thing made wrong raises ValueError / TypeError; it never returns."""
    inp = Inputs(seed)
    x, w, bias = inp.randn(M, K, dtype=dtype), inp.randn(N, K, dtype=dtype), inp.randn(N, dtype=dtype)
    kw = dict(activation=None, out_dtype=None, out=None, config=None)
    if mutation == "k_mismatch":
        w = inp.randn(N, max(K + d, 0) if K + d != K else K + 1, dtype=dtype)
    elif mutation == "w_1d":
        w = w[0]
    elif mutation == "w_3d":
        w = w[None]
    elif mutation == "x_0d":
        x = x[0, 0]
    elif mutation == "w_dtype":
        w = w.to(torch.float16 if dtype == torch.bfloat16 else torch.bfloat16)
    elif mutation == "x_fp32":
        x, w, bias = x.float(), w.float(), bias.float()
    elif mutation == "bias_len":
        bias = inp.randn(N + d if N + d > 0 else N + 1, dtype=dtype)
    elif mutation == "bias_2d":
        bias = bias[None]
    elif mutation == "bias_dtype":
        bias = bias.float()
    elif mutation == "out_shape":
        kw["out"] = torch.empty(M, N + d if N + d > 0 else N + 1, dtype=dtype)
    elif mutation == "out_dtype_mismatch":
        kw["out"] = torch.empty(M, N, dtype=torch.float32)
        kw["out_dtype"] = dtype
    elif mutation == "out_expanded":
        kw["out"] = torch.empty(1, N, dtype=dtype).expand(M + 1, N)
        x = inp.randn(M + 1, K, dtype=dtype)
    elif mutation == "activation":
        kw["activation"] = "tanh"
    elif mutation == "out_dtype_int":
        kw["out_dtype"] = torch.int8
    elif mutation == "config_key":
        kw["config"] = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 1,
                        "num_warps": 4, "num_stages": 2, "BLOCK_M": 16}
    elif mutation == "config_block":
        kw["config"] = {"BLOCK_SIZE_M": 24, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 1,
                        "num_warps": 4, "num_stages": 2}
    elif mutation == "x_not_tensor":
        x = x.tolist()
    raises_invalid(lambda: gemmkit.gemm_a16w16(x, w, bias, **kw))
