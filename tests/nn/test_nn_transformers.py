"""gemmkit.nn.convert on Hugging Face transformers models (tiny configs, random weights, bf16), in the interpreter.

Models: LlamaForCausalLM, Qwen2ForCausalLM (biases on q / k / v), and DeepseekV3ForCausalLM (MLA; its kv_b fusion
where the installed transformers has DeepseekV3Attention.expand_kv). Two references for the logits:

  - the scheme's own math, layer by layer: every gemmkit layer's output in the model's forward against linear_ref
    on the input it was given (x quantized as the layer does it, the dequantized weight, float64, rounded to bf16).
    gemmkit must match it to bf16 rounding: this catches any difference between what a layer computes and what its
    scheme says. (Not end to end: a bf16 ulp that differs upstream can move a dynamically quantized activation, or
    its block's scale, by an fp8 step, and a tiny model carries that to 1-2% of its logits: seen in 1 of 15 draws.)
  - the unconverted bf16 model: the quantization error of the scheme (measured bounds), top-1 agreement.

Backward (bf16): the gradient of every linear weight and bias against the unconverted model's, within twice the
unconverted model's own bf16 error against a float64 copy of it (two bf16 computations of one gradient differ by
at most about the sum of their errors). State_dict: a converted model's state_dict loads into a model built from
another seed and converted, and gives the same logits bit for bit.
"""
import copy
import inspect

import pytest
import torch

from gemmkit import nn as gnn

from _util import gemm_launches

transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16
VOCAB = 96
SCHEMES = ["bf16", "fp8", "fp8_block", "int8", "mxfp4"]
# ||logits - unconverted|| / ||unconverted|| (2 layers, hidden 64): measured 5.5-6.2% fp8 / fp8_block, 1.5% int8,
# 23-26% mxfp4 for Llama and Qwen2; bounds about 2x. Top-1 agreement over 2 x 16 tokens of a random tiny model
# (near-flat logits over 96 tokens, chance 1%): measured 0.88-1.0 fp8, 0.94-1.0 int8, 0.44-0.81 mxfp4.
# bf16: see test_bf16_logits_and_backward.
VS_BF16 = {"fp8": 0.12, "fp8_block": 0.12, "int8": 0.04, "mxfp4": 0.5}
TOP1 = {"fp8": 0.6, "fp8_block": 0.6, "int8": 0.75, "mxfp4": 0.2}
# a gemmkit layer against linear_ref on the same input, both rounded to bf16 once (fp32 against float64
# accumulation moves an output across a rounding boundary at most): measured 0 to 1.2e-4 over the schemes
VS_SCHEME = 2**-8


def build(family, seed=0, layers=2):
    torch.manual_seed(seed)
    common = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                  num_hidden_layers=layers, vocab_size=VOCAB, max_position_embeddings=64)
    if family == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    elif family == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        cfg = transformers.DeepseekV3Config(
            hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=1,
            topk_group=1, first_k_dense_replace=1, kv_lora_rank=32, q_lora_rank=None, qk_rope_head_dim=16,
            qk_nope_head_dim=32, v_head_dim=32, vocab_size=VOCAB, max_position_embeddings=64)
        model = transformers.DeepseekV3ForCausalLM(cfg)
    return model.eval()


class LayerRecorder:
    """Records every gemmkit layer's (input, output) in a model's forwards; check() holds each to its scheme."""

    def __init__(self, model):
        self.records = []
        self.hooks = [m.register_forward_hook(self._record) for m in model.modules()
                      if isinstance(m, (gnn.Linear, gnn.linear._QuantLinear))]

    def _record(self, module, inputs, output):
        self.records.append((module, inputs[0].detach().clone(), output.detach().clone()))

    def check(self, layers):
        for h in self.hooks:
            h.remove()
        assert len(self.records) == layers
        for module, x, y in self.records:
            assert y.dtype == x.dtype and torch.isfinite(y).all()
            assert rel(y, gnn.linear_ref(module, x).to(y.dtype)) <= VS_SCHEME, module


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm()).item()


def tokens(batch=2, seq=16):
    g = torch.Generator().manual_seed(torch.seed())
    return torch.randint(0, VOCAB, (batch, seq), generator=g)


def logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_convert_logits(family, scheme, launches):
    base = build(family).to(BF16)
    model = copy.deepcopy(base)
    report = gnn.convert(model, scheme)
    assert len(report.converted) == 7 * 2 + 1 and not report.skipped, str(report)  # q k v o gate up down, lm_head
    ids = tokens()
    before = gemm_launches(launches)
    recorder = LayerRecorder(model)
    got = logits(model, ids)
    assert gemm_launches(launches) > before
    assert torch.isfinite(got).all()
    recorder.check(layers=15)
    if scheme != "bf16":  # bf16: test_bf16_logits_and_backward
        want = logits(base, ids)
        assert rel(got, want) <= VS_BF16[scheme]
        assert (got.argmax(-1) == want.argmax(-1)).float().mean().item() >= TOP1[scheme]


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_bf16_logits_and_backward(family):
    base = build(family)
    f64 = copy.deepcopy(base).double()
    ref = base.to(BF16)
    model = copy.deepcopy(ref)
    gnn.convert(model, "bf16")
    ids, labels = tokens(), tokens()
    got, want, exact = (m(ids, labels=labels) for m in (model, ref, f64))
    assert rel(got.logits, want.logits) <= 2 * rel(want.logits, exact.logits) + 2**-10
    for m, out in ((model, got), (ref, want), (f64, exact)):
        out.loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    ref_grads, exact_grads = dict(ref.named_parameters()), dict(f64.named_parameters())
    checked = 0
    for name, module in model.named_modules():
        if not isinstance(module, gnn.Linear):
            continue
        for p in ("weight", "bias"):
            key = f"{name}.{p}"
            if key not in grads:
                continue
            g, g_ref, g_exact = grads[key], ref_grads[key].grad, exact_grads[key].grad
            assert g is not None and g.dtype == BF16, key
            assert rel(g, g_ref) <= 2 * rel(g_ref, g_exact) + 2**-10, key
            checked += 1
    assert checked == 15 + (6 if family == "qwen2" else 0)  # 15 weights (+ q / k / v biases of Qwen2's 2 layers)


@pytest.mark.parametrize("family", ["llama", "qwen2"])
@pytest.mark.parametrize("scheme,fuse", [("bf16", True), ("fp8", False), ("fp8_block", False), ("int8", False),
                                         ("mxfp4", False)])
def test_state_dict_round_trip(family, scheme, fuse):
    a = build(family, seed=0, layers=1).to(BF16)
    gnn.convert(a, scheme, fuse_mlp=fuse)
    b = build(family, seed=1, layers=1).to(BF16)
    gnn.convert(b, scheme, fuse_mlp=fuse)
    sd = a.state_dict()
    assert set(sd) == set(b.state_dict())
    b.load_state_dict(sd)
    ids = tokens()
    assert torch.equal(logits(b, ids), logits(a, ids))


def test_fuse_mlp_llama():
    base = build("llama").to(BF16)
    model = copy.deepcopy(base)
    report = gnn.convert(model, "bf16", fuse_mlp=True)
    assert set(report.fused) == {"model.layers.0.mlp", "model.layers.1.mlp"}
    assert isinstance(model.model.layers[1].mlp, gnn.GatedMLP) and len(report.converted) == 4 * 2 + 1
    ids = tokens()
    got, want = logits(model, ids), logits(base, ids)
    # ffn_gated rounds h once (torch rounds gate, act, up and the product): measured 0.4% from the unconverted model
    assert rel(got, want) <= 2**-6 and (got.argmax(-1) == want.argmax(-1)).float().mean() >= 0.9


def test_decode_step_with_cache():
    """A prefill filling the KV cache, then one decode step (M = batch) on the fp8 layers."""
    model = build("llama").to(BF16)
    gnn.convert(model, "fp8")
    ids, step = tokens(2, 6), tokens(2, 1)
    with torch.no_grad():
        out = model(ids, use_cache=True)
        recorder = LayerRecorder(model)
        got = model(step, use_cache=True, **{CACHE_KW: out.past_key_values}).logits
    assert got.shape == (2, 1, VOCAB) and torch.isfinite(got).all()
    recorder.check(layers=15)
    assert all(x.shape[:-1] == (2, 1) for _, x, _ in recorder.records)  # the decode step: M = batch


# transformers renamed forward's past_key_values to cache (5.2x); older releases take only past_key_values
CACHE_KW = ("cache" if "cache" in inspect.signature(transformers.LlamaForCausalLM.forward).parameters
            else "past_key_values")


def _has_expand_kv():
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as ds

    return hasattr(ds.DeepseekV3Attention, "expand_kv")


@pytest.mark.skipif(not _has_expand_kv(), reason="this transformers has no DeepseekV3Attention.expand_kv hook")
@pytest.mark.parametrize("scheme", ["bf16", "fp8_block"])
def test_deepseek_mla_split_cat(scheme, launches):
    base = build("deepseek").to(BF16)
    model = copy.deepcopy(base)
    report = gnn.convert(model, scheme, fuse_mlp=True, fuse_mla=True)
    op = "gemm_split_cat" if scheme == "bf16" else "gemm_a8w8_blockscale_split_cat"
    assert report.fused["model.layers.0.self_attn"] == f"expand_kv: kv_b_proj + split + cat in one {op}"
    assert report.fused["model.layers.0.mlp"].startswith("GatedMLP" if scheme == "bf16" else "QuantGatedMLP")
    ids = tokens()
    before = launches["gemm_split_cat_kernel"] + launches["gemm_split_cat_tma_kernel"]
    got = logits(model, ids)
    assert launches["gemm_split_cat_kernel"] + launches["gemm_split_cat_tma_kernel"] > before
    want = logits(base, ids)
    assert rel(got, want) <= (2**-6 if scheme == "bf16" else VS_BF16["fp8_block"])
    unfused = copy.deepcopy(base)  # the same MLPs (fused alike), kv_b_proj + split + cat unfused
    gnn.convert(unfused, scheme, fuse_mlp=True)
    assert rel(got, logits(unfused, ids)) <= (2**-6 if scheme == "bf16" else VS_SCHEME)
