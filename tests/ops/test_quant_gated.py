"""gemmkit.quant's gated forms in the Triton interpreter: act(gate) * up of h = [gate | up] quantized in one pass.

Against `quantize_gated_ref` (the product in float64 from h's values, then the quantizer references): the scale to
within the fp32 roundings of the product's amax (and gelu's erfc fit), every dequantized element within the format's rounding of the
reference product; zero, NaN and saturating rows; ragged and strided h; the layouts the GEMMs take; the refusals;
the custom ops (opcheck, fakes, torch.compile); the fused MLP module of gemmkit.nn against the unfused layers.
"""
import pytest
import torch

import gemmkit.quant as Q
from gemmkit.reference import activation_ref

pytestmark = pytest.mark.interpreter

BF, F32 = torch.bfloat16, torch.float32
E4M3 = torch.float8_e4m3fn
FORMS = {
    "fp8_per_token": (lambda h, a: Q.quantize_fp8_per_token_gated(h, a, E4M3), None, 2.0**-4),
    "int8_per_token": (lambda h, a: Q.quantize_int8_per_token_gated(h, a), None, 0.0),
    "fp8_blockwise": (lambda h, a: Q.quantize_fp8_blockwise_gated(h, a, (1, 128), E4M3), (1, 128), 2.0**-4),
}


def gate_up(M, I, seed=None, dtype=BF):
    seed = torch.seed() if seed is None else seed
    print(f"gate_up({M}, {I}) seed {seed}")  # (shown with a failure: the inputs are fresh each run)
    g = torch.Generator().manual_seed(seed)
    mag = 10.0 ** (torch.rand(M, 1, generator=g) * 4 - 2)  # rows of 1e-2 .. 1e2
    return (torch.randn(M, 2 * I, generator=g) * mag).to(dtype)


def product64(h, act):
    I = h.shape[1] // 2
    hd = h.double()
    return activation_ref(hd[:, :I], act) * hd[:, I:]


def check_form(form, h, act):
    call, block, rel = FORMS[form]
    q, s = call(h, act)
    qr, sr = Q.quantize_gated_ref(h, act, form, E4M3)
    M, I = h.shape[0], h.shape[1] // 2
    assert q.shape == (M, I) and q.is_contiguous() and s.shape == sr.shape and s.dtype == F32
    # the fp32 roundings of the activation (exp: ~1 ulp), the product and the scale, each under 2^-23 relative, and
    # gelu's erfc fit (fractional error < 1.2e-7, kernels/triton/_epilogue._erfc_abs): 8 x 2^-23 (+ the fit). The
    # largest measured: 4.05e-7 at 17 x 300 (gelu, seed 11762395184804260660); over 3600 fresh gelu cases up to 0.9
    # of the bound before, 5.2e-7. A wrong scale is off by far more
    rtol = 8 * 2.0**-23 + (1.2e-7 if act == "gelu" else 0)
    assert torch.allclose(s, sr, rtol=rtol, atol=0), f"{form} {act}: scales {s.flatten()[:4]} vs {sr.flatten()[:4]}"
    v = product64(h, act)
    deq = Q.dequantize_ref(q, s, block).double()
    scale = Q.dequantize_ref(torch.ones_like(q, dtype=F32), s, block).double()  # each element's scale
    # the format's rounding: half a step at |v| (fp8 e4m3: 2^-4 relative, 2^-10 of the scale below its normals;
    # int8: half a unit of the scale), plus the fp32 product's own rounding
    bound = rel * v.abs() + (2.0**-9 if rel else 0.5) * scale + 1e-4 * v.abs() + 1e-30  # (the GPU test's slack)
    err = (deq - v).abs()
    assert (err <= bound).all(), f"{form} {act}: |deq - v| {err.max():.3g} over its bound at {(err > bound).nonzero()[0]}"
    return q, s


@pytest.mark.parametrize("act", Q.GATED_ACTIVATIONS)
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("M, I", [(1, 128), (17, 300), (5, 1024)])
def test_gated_forms_against_the_reference(form, act, M, I):
    check_form(form, gate_up(M, I), act)


@pytest.mark.parametrize("form", list(FORMS))
def test_layouts_the_gemms_take(form):
    h = gate_up(33, 256)
    q, s = FORMS[form][0](h, "silu")
    if form == "fp8_blockwise":
        assert s.shape == (33, 2) and s.stride() == (1, 33)  # M-major, as quantize_fp8_blockwise's (1, 128)
    else:
        assert s.shape == (33, 1) and q.dtype == (torch.int8 if form == "int8_per_token" else E4M3)


@pytest.mark.parametrize("form", list(FORMS))
def test_strided_and_wider_h(form):
    """h a column slice of a wider gate_up output (row stride > 2I) and a transposed copy: the same result."""
    wide = gate_up(9, 200)
    base = torch.zeros(9, 500, dtype=BF)
    base[:, 50:450] = wide
    h = base[:, 50:450]
    assert not h.is_contiguous()
    q1, s1 = FORMS[form][0](h, "gelu_tanh")
    q2, s2 = FORMS[form][0](wide, "gelu_tanh")
    t = wide.t().contiguous().t()  # column-major
    q3, s3 = FORMS[form][0](t, "gelu_tanh")
    for q, s in ((q1, s1), (q3, s3)):
        assert torch.equal(q.view(torch.uint8), q2.view(torch.uint8)) and torch.equal(s, s2)


@pytest.mark.parametrize("form", list(FORMS))
def test_zero_nan_and_saturation(form):
    h = gate_up(4, 128)
    h[0] = 0  # all zero: finite scale, q = 0
    h[1, 5] = float("nan")  # a NaN in the gate: the row's (block's) scale NaN, q 0 there
    h[2, 128 + 7] = 3e38  # huge up: saturates, finite
    q, s = FORMS[form][0](h, "silu")
    assert (q[0].float() == 0).all() and torch.isfinite(s[0]).all() and (s[0] > 0).all()
    assert torch.isnan(s[1]).any() and (q[1].float() == 0).all() if form != "fp8_blockwise" else \
        torch.isnan(s[1, 0]) and (q[1, :128].float() == 0).all()
    assert torch.isfinite(s[2]).all() and torch.isfinite(q[2].float()).all()
    assert (q.float()[3] != 0).any()


def test_empty():
    for form, (call, _, _) in FORMS.items():
        q, s = call(torch.empty(0, 512, dtype=BF), "relu")
        assert q.shape == (0, 256) and s.shape[0] == 0


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: Q.quantize_fp8_per_token_gated(torch.zeros(3, 7, dtype=BF)), ValueError, "even number of columns"),
    (lambda: Q.quantize_fp8_per_token_gated(torch.zeros(3, 8, dtype=BF), "tanh"), ValueError, "activation"),
    (lambda: Q.quantize_fp8_blockwise_gated(torch.zeros(3, 256, dtype=BF), block=(128, 128)), ValueError,
     r"\(1, 128\)"),
    (lambda: Q.quantize_fp8_per_token_gated(torch.zeros(3, 8, dtype=torch.int32)), TypeError, "h"),
    (lambda: Q.quantize_int8_per_token_gated(torch.zeros(3, 8, 2, dtype=BF)), ValueError, "h"),
])
def test_refusals(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_out_writes_in_place():
    h = gate_up(6, 256)
    q, s = Q.quantize_fp8_blockwise_gated(h, "silu", dtype=E4M3)
    qo, so = torch.empty_like(q), torch.empty(2, 6, dtype=F32).t()
    r = Q.quantize_fp8_blockwise_gated(h, "silu", dtype=E4M3, out=(qo, so))
    assert r[0] is qo and r[1] is so and torch.equal(qo.view(torch.uint8), q.view(torch.uint8)) and torch.equal(so, s)


def test_custom_ops_opcheck_fakes_and_compile(launches):
    h = gate_up(9, 160)
    torch.library.opcheck(torch.ops.gemmkit.quantize_rowwise_gated.default, (h, "silu", E4M3))
    torch.library.opcheck(torch.ops.gemmkit.quantize_fp8_blockwise_gated.default, (h, "gelu", 128, E4M3))
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q, s = Q.quantize_fp8_blockwise_gated(torch.empty(300, 520, dtype=BF), "silu", dtype=E4M3)
        assert q.shape == (300, 260) and s.shape == (300, 3)
    torch._dynamo.reset()

    def f(h):
        q, s = Q.quantize_fp8_per_token_gated(h * 2, "silu", E4M3)
        return q.float() * s

    before = sum(launches.values())
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(h)
    assert sum(launches.values()) == before + 1
    qr, sr = Q.quantize_fp8_per_token_gated(h * 2, "silu", E4M3)
    assert torch.equal(got, qr.float() * sr)
