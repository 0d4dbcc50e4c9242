"""gemmkit.nn layers in the Triton interpreter, against float64.

Linear (bf16 / fp16): forward and every gradient (dX, dW, db) against float64 x @ W.T and its derivatives; the
inputs are exact in float64 and the GEMMs accumulate in fp32, so each result is within the final rounding of its
dtype (tests/_util.py's bounds). The quantized layers: against linear_ref, the float64 product of x quantized the
way the layer does it (gemmkit.quant's torch references, bitwise equal to its kernels) and the layer's dequantized
weight, so the bound is again the output rounding (plus one rounding for a bias added after the GEMM); and against
the unquantized x @ W.T with the scheme's quantization error, so a weight quantized in a wrong layout cannot pass.
"""
import pytest
import torch

from gemmkit import nn as gnn
from gemmkit.ops import _common as C
from gemmkit.reference import gemm_a16w16_ref

from _util import gemm_launches, randn, within_bound

pytestmark = pytest.mark.interpreter
BF16, FP16 = torch.bfloat16, torch.float16
QUANTIZED = ["fp8", "fp8_block", "int8", "mxfp4"]
# ||y - x @ W.T|| / ||x @ W.T|| from quantizing both operands, for Gaussian data (measured 3.5-3.8% fp8 and
# fp8_block, 0.9-1.1% int8, 15-17% mxfp4 at 5 x 256 x 136; the bounds leave about 2x).
QUANT_ERROR = {"fp8": 0.08, "fp8_block": 0.08, "int8": 0.02, "mxfp4": 0.4}


def nn_linear(K, N, bias=True, dtype=BF16):
    lin = torch.nn.Linear(K, N, bias=bias)
    with torch.no_grad():
        lin.weight.copy_(randn(N, K, dtype=torch.float32))
        if bias:
            lin.bias.copy_(randn(N, dtype=torch.float32))
    return lin.to(dtype)


def bound_check(y, ref, dtype, factor=1.0):
    o, r = y.detach().double(), ref.detach().double()
    assert torch.isfinite(o).all()
    ok, msg = within_bound(y, ref, dtype) if factor == 1.0 else ((o - r).norm() <= factor * r.norm(), "")
    assert ok, msg or f"rel {((o - r).norm() / r.norm()).item():.3g} > {factor}"


# ----------------------------------------------------------------------------- bf16 / fp16

@pytest.mark.parametrize("dtype", [BF16, FP16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape,K,N,bias", [((5,), 64, 48, True), ((2, 3), 40, 72, False), ((1,), 17, 9, True)])
def test_linear16_forward(dtype, shape, K, N, bias, launches):
    lin = nn_linear(K, N, bias, dtype)
    layer = gnn.Linear.from_linear(lin)
    assert layer.weight is lin.weight and layer.bias is lin.bias  # shared, not copied
    x = randn(*shape, K, dtype=dtype)
    before = gemm_launches(launches)
    with torch.no_grad():
        y = layer(x)
    assert gemm_launches(launches) > before, "no gemmkit kernel ran"
    assert y.shape == (*shape, N) and y.dtype == dtype
    bound_check(y, gemm_a16w16_ref(x, lin.weight, lin.bias), dtype)


@pytest.mark.parametrize("dtype", [BF16, FP16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_linear16_backward(dtype, bias, launches):
    """dX = dY @ W, dW = dY^T @ X, db = sum of dY's rows, each against float64 (fresh dY, x of shape (2, 7, K))."""
    K, N = 48, 40
    lin = nn_linear(K, N, bias, dtype)
    layer = gnn.Linear.from_linear(lin)
    x = randn(2, 7, K, dtype=dtype).requires_grad_()
    dy = randn(2, 7, N, dtype=dtype)
    y = layer(x)
    bound_check(y, gemm_a16w16_ref(x, lin.weight, lin.bias), dtype)
    before = gemm_launches(launches)
    y.backward(dy)
    assert gemm_launches(launches) >= before + 2, "dX and dW did not run on gemmkit's GEMMs"
    x64, w64, dy64 = x.detach().double().reshape(-1, K), lin.weight.detach().double(), dy.double().reshape(-1, N)
    bound_check(x.grad, (dy64 @ w64).reshape(x.shape), dtype)
    bound_check(layer.weight.grad, dy64.T @ x64, dtype)
    if bias:
        bound_check(layer.bias.grad, dy64.sum(0), dtype)
    assert lin.weight.grad is layer.weight.grad  # the original Parameter received it


def test_linear16_needs_input_grad(launches):
    """Only the gradients asked for are computed: a frozen weight costs no dW GEMM, an input without grad no dX."""
    K, N = 32, 24
    layer = gnn.Linear.from_linear(nn_linear(K, N))
    layer.weight.requires_grad_(False)
    x = randn(3, K, dtype=BF16).requires_grad_()
    y = layer(x)
    before = gemm_launches(launches)
    y.sum().backward()  # dY = ones expanded (stride 0): the op copies it
    assert gemm_launches(launches) == before + 1
    assert layer.weight.grad is None and layer.bias.grad is not None
    bound_check(x.grad, torch.ones(3, 24, dtype=torch.float64) @ layer.weight.double(), BF16)

    layer.weight.requires_grad_(True)
    layer.bias.requires_grad_(False)
    x2 = randn(3, K, dtype=BF16)  # no grad: only dW
    y = layer(x2)
    before = gemm_launches(launches)
    y.backward(torch.ones_like(y))
    assert gemm_launches(launches) == before + 1
    bound_check(layer.weight.grad, torch.ones(3, N, dtype=torch.float64).T @ x2.double(), BF16)


def test_linear16_trains_the_original_parameters():
    lin = nn_linear(16, 8)
    layer = gnn.Linear.from_linear(lin)
    opt = torch.optim.SGD(lin.parameters(), lr=0.5)  # built on the original layer, before the conversion
    w0 = lin.weight.detach().clone()
    layer(randn(4, 16, dtype=BF16)).square().sum().backward()
    opt.step()
    assert not torch.equal(lin.weight.detach(), w0) and layer.weight is lin.weight


def test_linear16_refuses_mixed_dtypes_and_double_backward():
    layer = gnn.Linear.from_linear(nn_linear(16, 8))
    with pytest.raises(TypeError, match="x: expected dtype torch.bfloat16"):
        layer(randn(2, 16, dtype=torch.float32))
    with pytest.raises(TypeError, match="dtype: expected torch.bfloat16 or torch.float16"):
        gnn.Linear(4, 4, dtype=torch.float32)
    x = randn(2, 16, dtype=BF16).requires_grad_()
    (g,) = torch.autograd.grad(layer(x).square().sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable|does not require grad|double backward"):
        g.sum().backward()


# ----------------------------------------------------------------------------- quantized layers

@pytest.mark.parametrize("scheme", QUANTIZED)
@pytest.mark.parametrize("shape,K,N,bias", [((5,), 256, 136, True), ((2, 3), 160, 40, False)],
                         ids=["5x256x136-bias", "2x3x160x40"])
def test_quantized_forward(scheme, shape, K, N, bias, launches):
    """K 256 / 160 and N 136: two K blocks, a partial one, and a partial N block for fp8_block."""
    lin = nn_linear(K, N, bias)
    layer = gnn.from_linear(lin, scheme)
    assert type(layer) is gnn.SCHEMES[scheme] and layer.scheme == scheme
    x = randn(*shape, K, dtype=BF16)
    before = gemm_launches(launches)
    with torch.no_grad():
        y = layer(x)
    assert gemm_launches(launches) >= before + 2, "the quantizer and the GEMM did not both run"
    assert y.shape == (*shape, N) and y.dtype == BF16
    bound_check(y, gnn.linear_ref(layer, x), BF16)  # exactly the scheme's math, to the output rounding
    bound_check(y, gemm_a16w16_ref(x, lin.weight, lin.bias), BF16, QUANT_ERROR[scheme])  # near the unquantized


@pytest.mark.parametrize("scheme", QUANTIZED)
def test_quantized_out_dtype_follows_x(scheme):
    layer = gnn.from_linear(nn_linear(64, 32, dtype=torch.float32), scheme)
    for dtype in (torch.float32, FP16):
        x = randn(3, 64, dtype=dtype)
        with torch.no_grad():
            y = layer(x)
        assert y.dtype == dtype
        bound_check(y, gnn.linear_ref(layer, x), dtype, 2e-3 if dtype == torch.float32 else 1.0)
    with pytest.raises(TypeError, match="x: expected bf16, fp16 or fp32"):
        with torch.no_grad():
            layer(randn(3, 64, dtype=torch.float64))


@pytest.mark.parametrize("scheme", QUANTIZED)
def test_quantized_is_inference_only(scheme):
    layer = gnn.from_linear(nn_linear(64, 16), scheme)
    x = randn(2, 64, dtype=BF16)
    assert not any(p.requires_grad for p in layer.parameters())
    y = layer(x)  # grad mode on, but nothing requires grad: runs
    with pytest.raises(RuntimeError, match="inference-only"):
        layer(x.clone().requires_grad_())
    with torch.no_grad():
        assert torch.equal(layer(x.clone().requires_grad_()), y)


@pytest.mark.parametrize("scheme", QUANTIZED + ["bf16"])
def test_state_dict_round_trip(scheme):
    """A freshly constructed layer of the same scheme loads the state_dict and computes the same bits."""
    lin = nn_linear(128, 48)
    layer = gnn.from_linear(lin, scheme)
    sd = layer.state_dict()
    want = {"weight", "bias"} | ({"weight_scale"} if scheme != "bf16" else set())
    assert set(sd) == want
    cls = type(layer)
    fresh = cls(128, 48, bias=True) if scheme != "bf16" else cls(128, 48, dtype=BF16)
    for name, t in fresh.state_dict().items():
        assert t.shape == sd[name].shape and t.dtype == sd[name].dtype, name
    fresh.load_state_dict(sd)
    x = randn(3, 128, dtype=BF16)
    with torch.no_grad():
        assert torch.equal(fresh(x), layer(x))


def test_load_state_dict_refuses_unquantized_weights():
    layer = gnn.Fp8Linear(32, 16)
    with pytest.raises(TypeError, match="weight: expected dtype torch.float8_e4m3fn"):
        layer.load_state_dict({"weight": torch.zeros(16, 32, dtype=BF16), "weight_scale": torch.ones(1, 16),
                               "bias": torch.zeros(16)})


@pytest.mark.parametrize("scheme", QUANTIZED)
def test_dtype_casts_leave_quantized_buffers(scheme):
    layer = gnn.from_linear(nn_linear(64, 16), scheme)
    before = {k: (v.dtype, v.clone()) for k, v in layer.state_dict().items()}
    layer.to(torch.float16)
    layer.half()
    layer.to("cpu", torch.float32)
    for k, v in layer.state_dict().items():
        assert v.dtype == before[k][0] and torch.equal(v, before[k][1]), k


def test_repr_names_the_scheme():
    lin = nn_linear(64, 16)
    assert "scheme=bf16" in repr(gnn.from_linear(lin, "bf16"))
    assert "scheme=fp8 (per-token dynamic" in repr(gnn.from_linear(lin, "fp8"))
    assert "scheme=fp8_block (1x128" in repr(gnn.from_linear(lin, "fp8_block"))
    assert "scheme=int8" in repr(gnn.from_linear(lin, "int8"))
    fp4 = gnn.from_linear(lin, "mxfp4")
    assert fp4.emulated and "EMULATED on sm_90" in repr(fp4)


def test_why_not_and_from_linear_errors(monkeypatch):
    assert gnn.why_not(nn_linear(48, 8), "mxfp4").startswith("in_features = 48: MXFP4 needs a multiple of 32")
    with pytest.raises(ValueError, match="cannot convert to gemmkit.nn.MXFP4Linear: in_features = 48"):
        gnn.from_linear(nn_linear(48, 8), "mxfp4")
    assert "does not cast" in gnn.why_not(nn_linear(16, 8, dtype=torch.float32), "bf16")
    assert "does not cast" in gnn.why_not(nn_linear(16, 8), "fp16")
    assert "meta device" in gnn.why_not(torch.nn.Linear(16, 8, device="meta"), "fp8")
    assert gnn.why_not(nn_linear(16, 8, dtype=torch.float32), "int8") is None
    with pytest.raises(ValueError, match="scheme: expected one of bf16, fp16, fp8, fp8_block, int8, mxfp4"):
        gnn.from_linear(nn_linear(16, 8), "fp4")
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx942")  # MI300X: no MXFP4; its fp8 (below: before 3.8)
    assert "gfx942" in gnn.why_not(nn_linear(64, 8), "mxfp4")  # before Triton 3.8
    fnuz = C.interpreter_lacks(torch.float8_e4m3fnuz)
    assert (fnuz is None and gnn.why_not(nn_linear(64, 8), "fp8") is None) or (
        "float8_e4m3fnuz" in gnn.why_not(nn_linear(64, 8), "fp8") and "before Triton 3.8" in fnuz)


def test_empty_batch():
    for scheme in ("bf16", "fp8", "fp8_block"):
        layer = gnn.from_linear(nn_linear(32, 16), scheme)
        with torch.no_grad():
            y = layer(torch.empty(0, 32, dtype=BF16))
        assert y.shape == (0, 16)
