"""gemmkit.nn.convert and the fused modules on small hand-built models, in the Triton interpreter.

What convert replaces, skips (with its reason), leaves to the filter; shared modules; the gated-MLP fusion
against float64 (h rounded to the dtype between the GEMMs, as ffn_gated holds it), and the quantized schemes'
QuantGatedMLP; a module that looks like an MLP but computes something else is not fused; GatedMLP loads an unfused
checkpoint.
"""
import pytest
import torch
import torch.nn.functional as F

from gemmkit import nn as gnn
from gemmkit import quant
from gemmkit.reference import activation_ref

from _util import randn, within_bound

pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16


def _init(module):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(*p.shape, dtype=torch.float32) * 0.2)
    return module


class MLP(torch.nn.Module):
    def __init__(self, K, I, act=F.silu, swap=False):
        super().__init__()
        self.gate_proj, self.up_proj = torch.nn.Linear(K, I, bias=False), torch.nn.Linear(K, I, bias=False)
        self.down_proj = torch.nn.Linear(I, K, bias=False)
        self.act_fn, self.swap = act, swap

    def forward(self, x):
        g, u = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(self.act_fn(u) * g if self.swap else self.act_fn(g) * u)


class SubLinear(torch.nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Toy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(64, 64)
        self.mlp = MLP(64, 96)
        self.odd = torch.nn.Linear(64, 48)      # K = 64, fine for every scheme
        self.narrow = torch.nn.Linear(48, 64)   # K = 48: not a multiple of 32 (MXFP4)
        self.sub = SubLinear(64, 64)
        self.head = torch.nn.Linear(64, 32, bias=False)

    def forward(self, x):
        h = self.mlp(self.inp(x))
        h = self.narrow(self.odd(h)) + self.sub(h)
        return self.head(h)


def toy():
    return _init(Toy()).to(BF16)


def test_convert_replaces_in_place_and_reports(launches):
    model = toy()
    x = randn(5, 64, dtype=BF16)
    with torch.no_grad():
        want = model(x)
    report = gnn.convert(model, "mxfp4", filter=lambda module, name: name != "head")
    assert isinstance(model.inp, gnn.MXFP4Linear) and isinstance(model.mlp.up_proj, gnn.MXFP4Linear)
    assert type(model.narrow) is torch.nn.Linear and type(model.sub) is SubLinear
    assert type(model.head) is torch.nn.Linear
    assert set(report.converted) == {"inp", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "odd"}
    assert report.skipped["narrow"].startswith("in_features = 48: MXFP4 needs a multiple of 32")
    assert report.skipped["sub"].startswith("a subclass of nn.Linear")
    assert report.filtered == ["head"]
    text = str(report)
    assert "5 converted, 0 fused, 2 skipped, 1 declined by the filter" in text
    assert "skipped    narrow: in_features = 48" in text
    # Each converted layer computes its MXFP4 product of the input it was given: against float64 on the dequantized
    # codes (x quantized as the layer does, E2M1 x E8M0 exact in float64), rounded once to bf16 (per layer: the
    # model's error against bf16 is the fp4 rounding, ~30% here, which no bound of the conversion's own can judge).
    seen = {}
    layers = {n: model.get_submodule(n) for n in report.converted}
    handles = [m.register_forward_hook(lambda m, i, o, name=n: seen.__setitem__(name, (i[0], o)))
               for n, m in layers.items()]
    with torch.no_grad():
        got = model(x)
    for h in handles:
        h.remove()
    assert set(seen) == set(report.converted) and torch.isfinite(got).all() and got.shape == want.shape
    for name, m in layers.items():
        inp, out = seen[name]
        xq, xs = quant.quantize_mxfp4(inp)
        w64 = quant.dequantize_mxfp4_ref(m.weight, m.weight_scale).double()
        ref = quant.dequantize_mxfp4_ref(xq, xs).double() @ w64.T
        if m.bias is not None:
            ref = ref + m.bias.double()
        ok, msg = within_bound(out, ref, BF16)
        assert ok, f"{name}: {msg}"

    again = gnn.convert(model, "mxfp4")  # a second pass leaves gemmkit layers alone and takes what is left
    assert again.skipped["inp"] == "already a gemmkit layer (MXFP4Linear)" and "head" in again.converted


def test_convert_argument_errors():
    with pytest.raises(ValueError, match="scheme: expected one of"):
        gnn.convert(toy(), "fp6")
    with pytest.raises(ValueError, match="gemmkit.nn.from_linear"):
        gnn.convert(torch.nn.Linear(4, 4), "bf16")
    with pytest.raises(TypeError, match="model: expected a torch.nn.Module"):
        gnn.convert(object(), "bf16")


def test_convert_bf16_skips_other_dtypes():
    model = toy()
    model.odd.float()
    report = gnn.convert(model, "bf16")
    assert report.skipped["odd"].startswith("weight dtype torch.float32: this scheme computes in torch.bfloat16 "
                                            "and does not cast")
    assert isinstance(model.inp, gnn.Linear)


def test_shared_module_replaced_everywhere():
    shared = torch.nn.Linear(32, 32).to(BF16)
    model = torch.nn.Sequential(shared, torch.nn.ReLU(), shared)
    report = gnn.convert(model, "int8")
    assert model[0] is model[2] and isinstance(model[0], gnn.Int8Linear)
    assert list(report.converted) == ["0"]


# ----------------------------------------------------------------------------- gated MLP fusion

def ffn_ref(x, mlp, act="silu"):
    """float64 down(act(x G.T) * (x U.T)) with h rounded to x's dtype (ffn_gated holds h in it)."""
    x64 = x.double()
    h = activation_ref(x64 @ mlp.gate_proj.weight.double().T, act) * (x64 @ mlp.up_proj.weight.double().T)
    return h.to(x.dtype).double() @ mlp.down_proj.weight.double().T


@pytest.mark.parametrize("act,name", [(F.silu, "silu"), (lambda t: F.gelu(t, approximate="tanh"), "gelu_tanh")])
def test_fuse_mlp(act, name, launches):
    model = torch.nn.Sequential(_init(MLP(64, 80, act)).to(BF16))
    mlp = model[0]
    report = gnn.convert(model, "bf16", fuse_mlp=True)
    fused = model[0]
    assert isinstance(fused, gnn.GatedMLP) and fused.activation == name
    assert report.fused == {"0": f"GatedMLP (ffn_gated, {name})"} and not report.converted
    assert f"activation={name}" in repr(fused)
    x = randn(2, 3, 64, dtype=BF16)
    before = launches["gemm_gated_kernel"] + launches["gemm_gated_tma_kernel"]
    with torch.no_grad():
        y = fused(x)
    assert launches["gemm_gated_kernel"] + launches["gemm_gated_tma_kernel"] > before
    ok, msg = within_bound(y, ffn_ref(x.reshape(-1, 64), mlp, name).reshape(2, 3, 64), BF16)
    assert ok, msg
    with pytest.raises(RuntimeError, match="inference-only"):
        fused(x.clone().requires_grad_())


def test_fuse_mlp_leaves_what_is_not_a_gated_mlp():
    model = torch.nn.Sequential(_init(MLP(64, 32, swap=True)).to(BF16), _init(MLP(64, 32, act=torch.tanh)).to(BF16))
    report = gnn.convert(model, "bf16", fuse_mlp=True)
    assert "forward is not down_proj(act_fn(gate_proj(x)) * up_proj(x))" in report.skipped["0 (fuse_mlp)"]
    assert "act_fn is none of ffn_gated's activations" in report.skipped["1 (fuse_mlp)"]
    assert isinstance(model[0].gate_proj, gnn.Linear)  # converted one by one instead
    report = gnn.convert(torch.nn.Sequential(_init(MLP(64, 32)).to(BF16)), "mxfp4", fuse_mlp=True)
    assert "has no gated quantizer" in report.skipped["0 (fuse_mlp)"]
    report = gnn.convert(torch.nn.Sequential(_init(MLP(64, 32, swap=True)).to(BF16)), "fp8", fuse_mlp=True)
    assert "forward is not down_proj" in report.skipped["0 (fuse_mlp)"]


@pytest.mark.parametrize("scheme", ["fp8", "fp8_block", "int8"])
def test_fuse_mlp_quantized_schemes(scheme, launches):
    """fp8 / fp8_block / int8: QuantGatedMLP, one gated quantizer between the two GEMMs (no torch act / mul and no
    quantizer of its own for down), against float64 of the layers' own quantized weights and the gated form's
    quantized product, and close to the unfused converted MLP (the product rounded once instead of twice)."""
    I = 160  # not a multiple of 128: the last (1, 128) block of the product is partial
    mlp = _init(MLP(128, I)).to(BF16)
    model = torch.nn.Sequential(mlp)
    ref_model = torch.nn.Sequential(MLP(128, I).to(BF16))
    ref_model.load_state_dict(model.state_dict())
    gnn.convert(ref_model, scheme)
    report = gnn.convert(model, scheme, fuse_mlp=True)
    fused = model[0]
    assert isinstance(fused, gnn.QuantGatedMLP) and fused.activation == "silu" and not report.converted
    assert report.fused["0"].startswith(f"QuantGatedMLP ({scheme}, silu")
    assert f"scheme={scheme}" in repr(fused) and type(fused.gate_up) is type(fused.down)
    x = randn(2, 5, 128, dtype=BF16)
    gated = "quant_rowwise_kernel" if scheme != "fp8_block" else "quant_block_kernel"
    before = dict(launches)
    with torch.no_grad():
        y = fused(x)
    assert launches[gated] - before.get(gated, 0) == 2  # gate_up's input, then the gated product
    x2 = x.reshape(-1, 128)
    with torch.no_grad():
        h = fused.gate_up._gemm(x2, BF16, None)
        xq, xs = fused.down.quantize_gated(h, "silu")
        block = (1, 128) if scheme == "fp8_block" else None
        want = quant.dequantize_ref(xq, xs, block).double() @ gnn.dequantize_weight(fused.down).double().T
    ok, msg = within_bound(y.reshape(-1, 128), want, BF16)
    assert ok, msg
    with torch.no_grad():
        y_unfused = ref_model(x)
    rel = ((y.double() - y_unfused.double()).norm() / y_unfused.double().norm()).item()
    assert rel < (0.02 if scheme == "int8" else 0.08), rel  # the two quantizations of the product differ by a step
    with pytest.raises(RuntimeError, match="inference-only"):
        fused(x.clone().requires_grad_())
    sd = fused.state_dict()
    assert {k.split(".")[0] for k in sd} == {"gate_up", "down"}
    again = gnn.QuantGatedMLP.from_mlp(_init(MLP(128, I)).to(BF16), scheme)
    again.load_state_dict(sd)
    with torch.no_grad():
        assert torch.equal(again(x), y)


def test_gated_mlp_state_dict_and_unfused_checkpoint():
    mlp = _init(MLP(64, 48)).to(BF16)
    fused = gnn.GatedMLP.from_mlp(mlp, BF16)
    assert set(fused.state_dict()) == {"w_gate_up", "w_down"}
    fresh = gnn.GatedMLP(64, 48, dtype=BF16)
    fresh.load_state_dict(fused.state_dict())
    unfused = gnn.GatedMLP(64, 48, dtype=BF16)
    unfused.load_state_dict(mlp.state_dict())  # gate_proj.weight, up_proj.weight, down_proj.weight
    x = randn(4, 64, dtype=BF16)
    with torch.no_grad():
        y = fused(x)
        assert torch.equal(fresh(x), y) and torch.equal(unfused(x), y)
