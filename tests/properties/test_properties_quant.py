"""Property tests of the quantizers (gemmkit.quant) against float64 models of their documented rounding.

Independent of gemmkit.quant's own *_ref functions (test_quant.py checks the kernels against those bit for
bit): here the documented rules are re-derived in float64 from the input values, and rounding to E4M3 /
E2M1 / int8 is done by nearest-with-ties-to-even on the format's value grid (decoded from the codes), not by
a dtype conversion:

  scale = fp32(clamp(fp32 amax, fp32(AMAX_FLOOR), AMAX_CEIL) / QMAX)      (NaN in the row/block: NaN)
  q     = RNE_fmt(clamp(fp32(x / scale), -QMAX, QMAX))                      (NaN scale: 0)
  MXFP4: X = clamp(floor(log2(min(amax, FLT_MAX))) - 2, -127), byte X + 127 (NaN group: 255, codes 0);
         code = RNE_e2m1(|x| 2^-X) saturating at 6, sign bit kept (also for values that round to 0)

(float64 then one rounding to fp32 equals the fp32 operation for + - * /: 53 >= 2 * 24 + 2.)
Drawn: shapes (0, 1, odd, 128 +- 1, K multiple of 32 for MXFP4), input dtypes bf16 / fp16 / fp32, every
2-D layout, and special rows / blocks: all zero, a NaN, +-Inf, huge (> 2^127), tiny / subnormal values.
Plus round-trip bounds: |q * scale - x| within half a step of the format, |q| <= QMAX, amax maps to QMAX.
The gpu versions run larger shapes.
"""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gemmkit import quant

from test_properties_common import (INVALID_EXAMPLES, FP8, LAYOUTS_2D, SEED, Inputs, device_or_skip, f64, place,
                                    prop_settings)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
QMAX = {FP8: 448.0, torch.int8: 127.0}
IN_DTYPES = [torch.bfloat16, torch.float16, torch.float32]
SPECIALS = ["zero", "nan", "inf", "neg_inf", "huge", "tiny", "subnormal", "neg_zero"]

# the positive E4M3 (fn) grid, codes 0x00..0x7E in order (0x7F is NaN), and the E2M1 grid, codes 0..7
_E4M3_POS = torch.arange(0, 127, dtype=torch.uint8).view(FP8).to(torch.float64)
_E2M1_POS = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
FLOOR = float(np.float32(quant.AMAX_FLOOR))  # the kernels compare in fp32
CEIL = quant.AMAX_CEIL
FLT_MAX = float(np.finfo(np.float32).max)


def rne_index(a, grid):
    """Index into the ascending `grid` of the value nearest to a >= 0 (ties: the even index, i.e. the even
    code), saturating at the last; float64 in, int64 out."""
    g = grid.to(a.device)
    hi = torch.searchsorted(g, a.contiguous()).clamp(max=len(g) - 1)
    lo = (hi - 1).clamp(min=0)
    d_lo, d_hi = a - g[lo], g[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    idx = torch.where(pick_hi, hi, lo)
    return torch.where(a >= g[-1], torch.full_like(idx, len(g) - 1), idx)


def f32(t):
    """Round float64 to fp32 (RNE) and back."""
    return t.to(torch.float32).to(torch.float64)


def quantize_model(x, groups, qdtype):
    """(q as float64, scale float64) of the fp8 / int8 rule for x float64 (M, K) where `groups` maps x's
    elements to scale entries: a (M, K) long tensor of flat scale indices, n_scales = groups.max() + 1."""
    qmax = QMAX[qdtype]
    n = int(groups.max()) + 1 if groups.numel() else 0
    flat_g, flat_x = groups.reshape(-1), x.reshape(-1)
    amax = torch.zeros(n, dtype=torch.float64, device=x.device).scatter_reduce(
        0, flat_g, flat_x.abs(), reduce="amax", include_self=True)
    has_nan = torch.zeros(n, dtype=torch.float64, device=x.device).scatter_reduce(
        0, flat_g, torch.isnan(flat_x).to(torch.float64), reduce="amax", include_self=True) > 0
    scale = f32(amax.clamp(FLOOR, CEIL) / qmax)
    scale = torch.where(has_nan, torch.full_like(scale, float("nan")), scale)
    s = scale[groups]
    v = f32(x / s).clamp(-qmax, qmax)
    v = torch.where(torch.isnan(v), torch.zeros_like(v), v)
    if qdtype == torch.int8:
        q = torch.round(v)  # half to even
    else:
        q = _E4M3_POS.to(x.device)[rne_index(v.abs(), _E4M3_POS)] * torch.where(v < 0, -1.0, 1.0)
    return q, scale


def mxfp4_model(x):
    """(codes (M, K) int64 incl. sign bit, scale bytes (M, K/32) int64) of the MXFP4 rule, x float64."""
    M, K = x.shape
    g = x.reshape(M, K // 32, 32)
    has_nan = torch.isnan(g).any(dim=2)
    amax = g.abs().nan_to_num(0.0).amax(dim=2).clamp(max=FLT_MAX) if K else g.new_zeros(M, 0)
    # floor(log2(amax)) from frexp (exact); 0 and fp32 subnormals clamp to -127 below anyway
    _, e = torch.frexp(amax)
    X = torch.where(amax > 0, e.to(torch.int64) - 1 - 2, torch.full_like(e, -200, dtype=torch.int64)).clamp(min=-127)
    v = g * torch.exp2(-X.to(torch.float64))[..., None]
    mag = rne_index(f32(v.abs()).nan_to_num(0.0), _E2M1_POS)
    sign = torch.signbit(g).to(torch.int64)
    code = torch.where(has_nan[..., None], torch.zeros_like(mag), mag | (sign << 3)).reshape(M, K)
    byte = torch.where(has_nan, torch.full_like(X, 255), X + 127)
    return code, byte


@st.composite
def rows_with_specials(draw, max_m, max_k, k_quantum=1, dtypes=IN_DTYPES):
    dtype = draw(st.sampled_from(dtypes))
    kind_m = draw(st.sampled_from(["zero", "one", "small", "edge", "edge"]))
    M = {"zero": 0, "one": 1}.get(kind_m) if kind_m in ("zero", "one") else \
        (draw(st.integers(1, max_m)) if kind_m == "small" else 128 + draw(st.sampled_from([-1, 0, 1])))
    kq = draw(st.sampled_from(["one", "small", "edge", "edge"]))
    if k_quantum == 1:
        K = 1 if kq == "one" else draw(st.integers(1, max_k)) if kq == "small" else \
            128 * draw(st.integers(1, 2)) + draw(st.sampled_from([-1, 0, 1]))
    else:
        K = 32 * (1 if kq == "one" else draw(st.integers(1, max_k // 32)) if kq == "small" else
                  draw(st.sampled_from([3, 4, 5])))
    specials = draw(st.lists(st.tuples(st.sampled_from(SPECIALS), st.integers(0, 10**6), st.booleans()),
                             max_size=4))
    return dict(dtype=dtype, M=M, K=K, specials=specials, layout=draw(st.sampled_from(LAYOUTS_2D)),
                scale=draw(st.sampled_from([1.0, 1e-3, 300.0])), seed=draw(SEED))


def make_x(c, device):
    """(Placed, x): random values with special rows / elements; `whole row` specials fill a row."""
    inp = Inputs(c["seed"], device)
    M, K, dt = c["M"], c["K"], c["dtype"]
    x = inp.randn(M, K, scale=c["scale"])
    if M and K:
        for kind, where, whole in c["specials"]:
            r, k = (where // K) % M, where % K
            val = {"zero": 0.0, "nan": float("nan"), "inf": float("inf"), "neg_inf": float("-inf"),
                   "huge": 3e38 if dt == torch.float32 else float(torch.finfo(dt).max),
                   "tiny": 1e-12, "subnormal": float(torch.finfo(dt).smallest_normal) / 4, "neg_zero": -0.0}[kind]
            if whole:
                x[r] = val
            else:
                x[r, k] = val
    p = place(x.to(dt), c["layout"])
    return p, p.view


def check_same(name, got, want, what):
    """Elementwise equality of two float64 tensors with NaN == NaN; a readable first mismatch."""
    g, w = f64(got), f64(want).to(got.device)
    ok = (g == w) | (torch.isnan(g) & torch.isnan(w))
    if not bool(ok.all()):
        i = tuple((~ok).nonzero()[0].tolist())
        pytest.fail(f"{name}: {int((~ok).sum())} of {ok.numel()} {what} differ from the float64 model; first at "
                    f"{i}: got {g[i].item()!r}, want {w[i].item()!r}")


def run_rowwise(c, device, which):
    p, x = make_x(c, device)
    M, K = c["M"], c["K"]
    qdt = torch.int8 if which == "int8" else FP8
    if which == "int8":
        q, s = quant.quantize_int8_per_token(x)
    elif which == "per_token":
        q, s = quant.quantize_fp8_per_token(x, dtype=FP8)
    else:
        q, s = quant.quantize_fp8_per_channel(x, dtype=FP8)
    p.check_untouched("x")
    assert q.shape == (M, K) and q.dtype == qdt and q.is_contiguous()
    assert s.dtype == torch.float32 and s.shape == ((1, M) if which == "per_channel" else (M, 1))
    if M == 0:
        return
    groups = torch.arange(M, device=x.device)[:, None].expand(M, K)
    xd = f64(x)
    if K == 0:
        return
    q_want, s_want = quantize_model(xd, groups, qdt)
    check_same("scale", s.reshape(M), s_want, "scales")
    check_same("q", q.to(torch.float64) if qdt == torch.int8 else q.float(), q_want, "quantized values")
    check_round_trip(xd, q, s.reshape(M, 1), qdt)


def check_round_trip(xd, q, s_full, qdt):
    """Rows / blocks without NaN / Inf: |q - x / scale| is at most half a step of the format (E4M3: 2^-4
    relative, 2^-10 absolute in the subnormals; int8: 1/2), |q| <= QMAX, and where amax >= the floor the
    largest |x| maps to +-QMAX."""
    qf, sf = q.to(torch.float32).to(torch.float64), f64(s_full).expand_as(xd)
    finite = torch.isfinite(xd) & torch.isfinite(sf) & (xd.abs() <= CEIL)
    v = xd / sf
    step = 0.5 if qdt == torch.int8 else torch.maximum(v.abs() * 2.0**-4, torch.full_like(v, 2.0**-10))
    bad = finite & ((qf - v.clamp(-QMAX[qdt], QMAX[qdt])).abs() > step * (1 + 2.0**-20) + v.abs() * 2.0**-23)
    assert not bool(bad.any()), f"round trip: {int(bad.sum())} elements off by more than half a step"
    assert bool((qf.abs() <= QMAX[qdt]).all())


@INTERP
@prop_settings(100)
@given(c=rows_with_specials(40, 300), which=st.sampled_from(["per_token", "per_channel", "int8"]))
def test_rowwise_matches_float64_model(c, which):
    run_rowwise(c, "cpu", which)


def run_blockwise(c, device, block):
    p, x = make_x(c, device)
    M, K = c["M"], c["K"]
    q, s = quant.quantize_fp8_blockwise(x, block, dtype=FP8)
    p.check_untouched("x")
    bm, bk = block
    assert q.shape == (M, K) and q.dtype == FP8
    assert s.shape == (-(-M // bm), -(-K // bk)) and s.dtype == torch.float32
    if block == (1, 128) and M > 1 and K:
        assert s.stride() == (1, M), f"x_scale not M-major: strides {s.stride()}"
    if M == 0 or K == 0:
        return
    kb = -(-K // bk)
    groups = (torch.arange(M, device=x.device)[:, None] // bm) * kb + (torch.arange(K, device=x.device)[None] // bk)
    q_want, s_want = quantize_model(f64(x), groups, FP8)
    check_same("scale", s.reshape(-1), s_want, "scales")
    check_same("q", q.float(), q_want, "quantized values")
    from gemmkit.reference import expand_block_scales
    check_round_trip(f64(x), q, expand_block_scales(f64(s), block, (M, K)), FP8)


@INTERP
@prop_settings(80)
@given(c=rows_with_specials(140, 300), block=st.sampled_from([(1, 128), (128, 128)]))
def test_blockwise_matches_float64_model(c, block):
    run_blockwise(c, "cpu", block)


def run_mxfp4(c, device):
    p, x = make_x(c, device)
    M, K = c["M"], c["K"]
    packed, scales = quant.quantize_mxfp4(x)
    p.check_untouched("x")
    assert packed.shape == (M, K // 2) and scales.shape == (M, K // 32)
    assert packed.dtype == scales.dtype == torch.uint8
    if M == 0:
        return
    code, byte = mxfp4_model(f64(x))
    got = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(M, K).to(torch.int64)
    check_same("scales", scales.to(torch.int64), byte, "E8M0 bytes")
    check_same("codes", got, code.to(got.device), "E2M1 codes")
    # round trip through dequantize_mxfp4 (the kernel): |deq - x| <= max(2^(X-2), |x| / 4) where finite
    deq = f64(quant.dequantize_mxfp4(packed, scales))
    X = (byte - 127).to(torch.float64).repeat_interleave(32, dim=1).to(deq.device)
    xd = f64(x)
    ok_rows = torch.isfinite(xd).reshape(M, K // 32, 32).all(dim=2).repeat_interleave(32, dim=1)
    bound = torch.maximum(torch.exp2(X - 2), xd.abs() / 4)
    bad = ok_rows & ~((deq - xd).abs() <= bound)
    assert not bool(bad.any()), f"MXFP4 round trip: {int(bad.sum())} elements off by more than the E2M1 step"


@INTERP
@prop_settings(80)
@given(c=rows_with_specials(40, 320, k_quantum=32))
def test_mxfp4_matches_float64_model(c):
    run_mxfp4(c, "cpu")


@INTERP
def test_mxfp4_bf16_subnormal_row():
    """Minimal example found by test_mxfp4_matches_float64_model: one row of 32 bf16 2^-128 (a bf16 subnormal):
    amax 2^-128, X = -127 (clamped), every element 2^-128 * 2^127 = 0.5: code 1, byte 0."""
    x = torch.full((1, 32), 2.0**-128, dtype=torch.bfloat16)
    packed, scales = quant.quantize_mxfp4(x)
    assert scales.tolist() == [[0]]
    assert packed.tolist() == [[0x11] * 16]


def run_dequant_bytes(seed, M, kg, layout, device):
    """dequantize_mxfp4 of every byte pattern: exact E2M1 value x 2^(s - 127) (255: NaN), as fp32; values whose
    fp32 product falls below the normal range may be flushed to zero (documented: exact down to the normals)."""
    inp = Inputs(seed, device)
    K = 32 * kg
    packed = place(inp.randint(0, 256, M, K // 2, dtype=torch.uint8), layout).view
    scales = place(inp.randint(0, 256, M, kg, dtype=torch.uint8), layout).view
    y = quant.dequantize_mxfp4(packed, scales)
    assert y.shape == (M, K) and y.dtype == torch.float32
    codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(M, K).long().cpu()
    vals = torch.cat([_E2M1_POS, -_E2M1_POS])[codes]
    b = scales.cpu().to(torch.float64).repeat_interleave(32, dim=1)
    want = f32(torch.where(b == 255, torch.full_like(b, float("nan")), vals * torch.exp2(b - 127)))
    got = f64(y).cpu()
    tiny = want.abs() < 2.0**-126
    ok = (got == want) | (torch.isnan(got) & torch.isnan(want)) | (tiny & ((got == 0) | (got == want)))
    assert bool(ok.all()), f"{int((~ok).sum())} dequantized values differ; first at {tuple((~ok).nonzero()[0].tolist())}"


@INTERP
@prop_settings(30)
@given(seed=SEED, M=st.integers(1, 40), kg=st.integers(1, 6), layout=st.sampled_from(LAYOUTS_2D))
def test_dequantize_mxfp4_every_byte(seed, M, kg, layout):
    run_dequant_bytes(seed, M, kg, layout, "cpu")


@INTERP
def test_dequantize_mxfp4_ref_with_zero_rows():
    """Found by test_properties_afp4wfp4 (M = 0): the torch reference raises on (0, K/2) codes."""
    packed, scales = torch.zeros(0, 16, dtype=torch.uint8), torch.zeros(0, 1, dtype=torch.uint8)
    assert quant.dequantize_mxfp4_ref(packed, scales).shape == (0, 32)


# ----------------------------------------------------------------------------- invalid input

@INTERP
@pytest.mark.parametrize("mutation", ["int_input", "x_3d", "x_1d", "fp8_dtype_e5m2", "int8_as_fp8", "block_bad",
                                      "mxfp4_k", "dequant_scales_shape", "dequant_dtype", "not_tensor"])
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 8), K=st.integers(1, 70), seed=SEED)
def test_invalid_inputs_raise(mutation, M, K, seed):
    from test_properties_common import raises_invalid

    inp = Inputs(seed)
    x = inp.randn(M, K, dtype=torch.bfloat16)
    fn = {
        "int_input": lambda: quant.quantize_fp8_per_token(x.to(torch.int32)),
        "x_3d": lambda: quant.quantize_fp8_per_channel(x[None]),
        "x_1d": lambda: quant.quantize_int8_per_token(x[0]),
        "fp8_dtype_e5m2": lambda: quant.quantize_fp8_per_token(x, dtype=torch.float8_e5m2),
        "int8_as_fp8": lambda: quant.quantize_fp8_blockwise(x, (1, 128), dtype=torch.int8),
        "block_bad": lambda: quant.quantize_fp8_blockwise(x, (1, 64)),
        "mxfp4_k": lambda: quant.quantize_mxfp4(inp.randn(M, 32 * K + 16)),
        "dequant_scales_shape": lambda: quant.dequantize_mxfp4(torch.zeros(M, 16, dtype=torch.uint8),
                                                               torch.zeros(M, 2, dtype=torch.uint8)),
        "dequant_dtype": lambda: quant.dequantize_mxfp4(torch.zeros(M, 16, dtype=torch.int8),
                                                        torch.zeros(M, 1, dtype=torch.uint8)),
        "not_tensor": lambda: quant.quantize_fp8_per_token(x.tolist()),
    }[mutation]
    raises_invalid(fn)


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@prop_settings(12)
@given(c=rows_with_specials(4100, 4096), which=st.sampled_from(["per_token", "per_channel", "int8"]))
def test_rowwise_matches_float64_model_gpu(c, which):
    run_rowwise(c, device_or_skip(True), which)


@pytest.mark.gpu
@prop_settings(12)
@given(c=rows_with_specials(4100, 4096), block=st.sampled_from([(1, 128), (128, 128)]))
def test_blockwise_matches_float64_model_gpu(c, block):
    run_blockwise(c, device_or_skip(True), block)


@pytest.mark.gpu
@prop_settings(12)
@given(c=rows_with_specials(4100, 4096, k_quantum=32))
def test_mxfp4_matches_float64_model_gpu(c):
    run_mxfp4(c, device_or_skip(True))


@pytest.mark.gpu
@prop_settings(10)
@given(seed=SEED, M=st.integers(1, 4100), kg=st.integers(1, 128), layout=st.sampled_from(LAYOUTS_2D))
def test_dequantize_mxfp4_every_byte_gpu(seed, M, kg, layout):
    run_dequant_bytes(seed, M, kg, layout, device_or_skip(True))
