"""Fused replacements for two module patterns of LLMs: the gated MLP (one ffn_gated call; for the fp8 / int8
schemes the activation fused into the down projection's quantization) and DeepSeek MLA's kv_b projection with its
split / cat (gemm_split_cat). gemmkit.nn.convert(..., fuse_mlp=True / fuse_mla=True) uses them.

Gated MLP (Llama, Qwen2, Mistral, DeepSeek's dense layers, Gemma):

    module.forward(x) = down_proj(act_fn(gate_proj(x)) * up_proj(x))       three nn.Linear, no bias
      ─► GatedMLP: ffn_gated(x, cat([gate.W, up.W]), down.W, activation)    gate rows first (ops/ffn.py)

  A module qualifies when it has `gate_proj`, `up_proj`, `down_proj` (torch.nn.Linear, no bias, of the scheme's
  dtype, shapes (I, K), (I, K), (K, I)) and `act_fn`, its act_fn matches one of ffn_gated's activations on a probe
  (silu, gelu, gelu_tanh, relu), and its forward equals the formula above on a probe input (computed in torch,
  before anything is replaced), so a module that looks like an MLP but computes something else is left alone with
  a reason. GatedMLP's state_dict has `w_gate_up` (2I, K) and `w_down` (K, I); it also loads the unfused keys
  (`gate_proj.weight`, `up_proj.weight`, `down_proj.weight`), so an original checkpoint loads into a fused model.
  bf16 / fp16 only, inference-only (ffn_gated has no backward).

  The quantized schemes (fp8, fp8_block, int8): QuantGatedMLP, the scheme's layers for [gate | up] (2I, K) and down
  (K, I), and between them one gated quantizer instead of torch's act, mul and the down layer's quantizer:

    h = gate_up(x) (M, 2I), x's dtype ─► quantize_*_gated(h, act): act(gate) * up in fp32, quantized ─► down GEMM

  one read of h and one write of the quantized (M, I) where the unfused path reads h, writes and reads the (M, I)
  product in x's dtype, and writes the quantized copy. The product is rounded once (the quantization), not twice.
  The state_dict holds `gate_up.*` and `down.*` (quantized: an original checkpoint loads before converting).

MLA kv_b (transformers' DeepseekV3Attention, which expands the latent KV in a method of its own):

    expand_kv(kv_nope (B, 1, S, r), k_rot (B, 1, S, R)):
        c = kv_b_proj(kv_nope).view(B, S, H, S1 + S2).transpose(1, 2)
        key = cat(c[..., :S1], k_rot.expand(heads)), value = c[..., S1:]          (S1 = qk_nope, S2 = v_head_dim)
      ─► gemm_split_cat(kv_nope (B*S, r), W, k_rot (B*S, 1, R).expand(B*S, H, R), S1, S2)   one kernel, no cat

  The attention instance's `expand_kv` is replaced by one calling its (converted) kv_b_proj's `split_cat`: bf16 /
  fp16 (gemm_split_cat) or fp8_block (gemm_a8w8_blockscale_split_cat). It applies only where the module has that
  method (transformers releases without `expand_kv` do the split and cat inline in forward, with no hook to take)
  and the method's results on a probe equal the formula above. kv_b_proj keeps its name and state_dict keys.
"""
from __future__ import annotations

import types

import torch
import torch.nn.functional as F

from ..ops import _common as C
from ..ops import ffn_gated
from ..reference import activation_ref

# ffn_gated's activations and a torch form of each, for the act_fn probe
ACTIVATIONS = {"silu": F.silu, "gelu": lambda t: F.gelu(t), "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
               "relu": F.relu}


def _probe(shape, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(device=device, dtype=dtype)


def _close(a, b):
    """Probe outputs agree: the same torch computation gives identical bits; a reordering stays within rounding."""
    a, b = a.float(), b.float()
    return a.shape == b.shape and bool(torch.isfinite(a).all()) and \
        (a - b).norm().item() <= 2e-2 * b.norm().item() + 1e-6


def _activation_name(act_fn):
    """Which of ffn_gated's activations `act_fn` computes (None: none of them)."""
    t = torch.linspace(-8, 8, 257)
    try:
        with torch.no_grad():
            got = act_fn(t)
    except Exception:  # noqa: BLE001  (any failure: not an activation we know)
        return None
    for name in ACTIVATIONS:
        if isinstance(got, torch.Tensor) and torch.allclose(got, activation_ref(t.double(), name).float(),
                                                            rtol=1e-4, atol=1e-5):
            return name
    return None


# ----------------------------------------------------------------------------- gated MLP

def mlp_why_not(mlp, dtype):
    """(activation, None) when `mlp` can become a GatedMLP of `dtype`, else (None, reason)."""
    parts = [getattr(mlp, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
    if not all(type(p) is torch.nn.Linear for p in parts):
        return None, "gate_proj, up_proj and down_proj are not all torch.nn.Linear"
    gate, up, down = parts
    if any(p.bias is not None for p in parts):
        return None, "a projection has a bias (ffn_gated has none)"
    if any(p.weight.device.type == "meta" for p in parts):
        return None, "weights on the meta device"
    I, K = gate.weight.shape
    if tuple(up.weight.shape) != (I, K) or tuple(down.weight.shape) != (K, I):
        return None, f"shapes gate {tuple(gate.weight.shape)}, up {tuple(up.weight.shape)}, down " \
                     f"{tuple(down.weight.shape)}: expected (I, K), (I, K), (K, I)"
    if any(p.weight.dtype != dtype for p in parts):
        return None, f"weights are not all {dtype} (the fused MLP takes the three projections in one dtype)"
    try:
        C.check_device_supported(gate.weight, "weight")
    except ValueError as e:
        return None, str(e)
    act = _activation_name(getattr(mlp, "act_fn", None)) if callable(getattr(mlp, "act_fn", None)) else None
    if act is None:
        return None, "act_fn is none of ffn_gated's activations (silu, gelu, gelu_tanh, relu)"
    x = _probe((3, K), dtype, gate.weight.device, 0)
    with torch.no_grad():
        try:
            got = mlp(x)
        except Exception as e:  # noqa: BLE001
            return None, f"forward failed on a probe input ({type(e).__name__}: {e})"
        act_fn = ACTIVATIONS[act]  # (named first: a call through a subscript reads as a kernel launch to the scan)
        want = F.linear(act_fn(F.linear(x, gate.weight)) * F.linear(x, up.weight), down.weight)
    if not isinstance(got, torch.Tensor) or not _close(got, want):
        return None, "forward is not down_proj(act_fn(gate_proj(x)) * up_proj(x)) on a probe input"
    return act, None


class GatedMLP(torch.nn.Module):
    """y = ffn_gated(x, w_gate_up, w_down, activation): a gated MLP in one op (two kernels, no (M, 2I)
    intermediate). w_gate_up (2I, K) holds the gate rows first, then the up rows; w_down (K, I). Inference-only."""

    def __init__(self, hidden_size, intermediate_size, *, activation="silu", device=None, dtype=torch.bfloat16):
        super().__init__()
        if dtype not in C.FLOAT16_DTYPES:
            raise TypeError(f"dtype: expected torch.bfloat16 or torch.float16, got {dtype}")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation: expected one of {tuple(ACTIVATIONS)}, got {activation!r}")
        self.hidden_size, self.intermediate_size, self.activation = hidden_size, intermediate_size, activation
        kw = dict(device=device, dtype=dtype)
        self.w_gate_up = torch.nn.Parameter(torch.empty(2 * intermediate_size, hidden_size, **kw), requires_grad=False)
        self.w_down = torch.nn.Parameter(torch.empty(hidden_size, intermediate_size, **kw), requires_grad=False)
        self._register_load_state_dict_pre_hook(self._load_unfused)

    @classmethod
    def from_mlp(cls, mlp, dtype=torch.bfloat16):
        act, why = mlp_why_not(mlp, dtype)
        if why:
            raise ValueError(f"mlp: cannot fuse into gemmkit.nn.GatedMLP: {why}")
        I, K = mlp.gate_proj.weight.shape
        m = cls(K, I, activation=act, device="meta", dtype=dtype)
        with torch.no_grad():
            m.w_gate_up = torch.nn.Parameter(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]), requires_grad=False)
            m.w_down = torch.nn.Parameter(mlp.down_proj.weight.detach().clone(), requires_grad=False)
        return m

    @staticmethod
    def _load_unfused(state_dict, prefix, *args):
        """gate_proj.weight + up_proj.weight -> w_gate_up, down_proj.weight -> w_down (original checkpoints)."""
        keys = [prefix + k for k in ("gate_proj.weight", "up_proj.weight", "down_proj.weight")]
        if all(k in state_dict for k in keys):
            gate, up, down = (state_dict.pop(k) for k in keys)
            state_dict[prefix + "w_gate_up"] = torch.cat([gate, up])
            state_dict[prefix + "w_down"] = down

    def forward(self, x):
        if torch.is_grad_enabled() and x.requires_grad:
            raise RuntimeError("x: requires grad, but gemmkit.nn.GatedMLP (ffn_gated) is inference-only; run it under "
                               "torch.no_grad(), or convert without fuse_mlp to train")
        return ffn_gated(x, self.w_gate_up, self.w_down, activation=self.activation)

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, intermediate_size={self.intermediate_size}, "
                f"activation={self.activation}, dtype={self.w_down.dtype} (gemmkit.ffn_gated: gate/up + "
                f"{self.activation}*mul + down)")


class QuantGatedMLP(torch.nn.Module):
    """y = down(act(gate(x)) * up(x)) on a quantized scheme's layers (fp8, fp8_block, int8): gate and up as one
    layer of (2I, K) (gate rows first), the activation, its product with up and the quantization of that product
    for down in one pass (gemmkit.quant's gated forms). Inference-only."""

    def __init__(self, gate_up, down, activation):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation: expected one of {tuple(ACTIVATIONS)}, got {activation!r}")
        if type(gate_up) is not type(down) or gate_up.out_features != 2 * down.in_features or \
                gate_up.in_features != down.out_features:
            raise ValueError(f"gate_up {type(gate_up).__name__} ({gate_up.in_features} -> {gate_up.out_features}) and "
                             f"down {type(down).__name__} ({down.in_features} -> {down.out_features}): expected one "
                             "scheme's layers (K -> 2I) and (I -> K)")
        self.gate_up, self.down, self.activation = gate_up, down, activation
        self.hidden_size, self.intermediate_size = down.out_features, down.in_features

    @staticmethod
    def why_not(mlp, scheme):
        """(activation, None) when `mlp` can become a QuantGatedMLP of `scheme`, else (None, reason)."""
        from . import linear as L

        cls = L.check_scheme(scheme)
        if cls is L.Linear or getattr(cls, "quantize_gated", None) is L._QuantLinear.quantize_gated:
            return None, f"scheme {scheme!r} has no gated quantizer (fp8, fp8_block and int8 do)"
        w = getattr(getattr(mlp, "gate_proj", None), "weight", None)
        if not isinstance(w, torch.Tensor) or w.dtype not in L.FLOAT_WEIGHTS:
            return None, "gate_proj has no float weight to quantize"
        act, why = mlp_why_not(mlp, w.dtype)
        if why:
            return None, why
        for n in ("gate_proj", "up_proj", "down_proj"):
            why = cls.why_not(getattr(mlp, n))
            if why:
                return None, f"{n}: {why}"
        return act, None

    @classmethod
    def from_mlp(cls, mlp, scheme):
        """The fused module of a gate_proj / up_proj / down_proj / act_fn MLP (checked on a probe, as GatedMLP's),
        each weight quantized once by `scheme`'s layer."""
        from . import linear as L

        act, why = cls.why_not(mlp, scheme)
        if why:
            raise ValueError(f"mlp: cannot fuse into gemmkit.nn.QuantGatedMLP ({scheme}): {why}")
        gate, up = mlp.gate_proj.weight, mlp.up_proj.weight
        I, K = gate.shape
        both = torch.nn.Linear(K, 2 * I, bias=False, device="meta")
        both.weight = torch.nn.Parameter(torch.cat([gate, up]).detach(), requires_grad=False)
        return cls(L.from_linear(both, scheme), L.from_linear(mlp.down_proj, scheme), act)

    def forward(self, x):
        if torch.is_grad_enabled() and isinstance(x, torch.Tensor) and x.requires_grad:
            raise RuntimeError("x: requires grad, but gemmkit.nn.QuantGatedMLP is inference-only; run it under "
                               "torch.no_grad()")
        K = self.hidden_size
        if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != K:
            raise ValueError(f"x: expected a tensor (..., {K}) (hidden_size = {K}), got "
                             f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
        if x.dtype not in C.OUT_DTYPES:
            raise TypeError(f"x: expected bf16, fp16 or fp32 (the output has x's dtype), got {x.dtype}")
        x2 = x.reshape(-1, K)
        h = self.gate_up._gemm(x2, x.dtype, None)
        xq, xs = self.down.quantize_gated(h, self.activation)
        return self.down._gemm_quantized(xq, xs, x.dtype, None).reshape(*x.shape[:-1], K)

    def extra_repr(self):
        return (f"hidden_size={self.hidden_size}, intermediate_size={self.intermediate_size}, "
                f"activation={self.activation}, scheme={self.down.scheme} (gate_up GEMM, {self.activation}*mul fused "
                "into the down projection's quantization, down GEMM)")


# ----------------------------------------------------------------------------- MLA kv_b + split / cat

MLA_ATTRS = ("kv_b_proj", "qk_nope_head_dim", "v_head_dim", "qk_rope_head_dim", "kv_lora_rank")


def _expand_kv_reference(kv_b, S1, S2, kv_nope, k_rot):
    """What DeepseekV3Attention.expand_kv computes, in torch: (key (B, H, S, S1 + R), value (B, H, S, S2))."""
    B, _, S, _ = kv_nope.shape
    c = F.linear(kv_nope, kv_b.weight, kv_b.bias).view(B, S, -1, S1 + S2).transpose(1, 2)
    key = torch.cat([c[..., :S1], k_rot.expand(-1, c.shape[1], -1, -1)], dim=-1)
    return key, c[..., S1:]


def mla_why_not(attn):
    """None when `attn`'s expand_kv can be replaced by a gemm_split_cat call, else the reason."""
    if not callable(getattr(attn, "expand_kv", None)):
        return "no expand_kv method (this transformers release splits and concatenates inline in forward)"
    if not all(hasattr(attn, a) for a in MLA_ATTRS):
        return f"missing one of {MLA_ATTRS}"
    kv_b = attn.kv_b_proj
    if type(kv_b) is not torch.nn.Linear:
        return "kv_b_proj is not a torch.nn.Linear"
    S1, S2, R, r = attn.qk_nope_head_dim, attn.v_head_dim, attn.qk_rope_head_dim, attn.kv_lora_rank
    N, K = kv_b.weight.shape
    if K != r or N % (S1 + S2):
        return f"kv_b_proj {tuple(kv_b.weight.shape)}: expected (H * {S1 + S2}, {r})"
    if kv_b.weight.device.type == "meta":
        return "weights on the meta device"
    dtype, device = kv_b.weight.dtype, kv_b.weight.device
    kv_nope, k_rot = _probe((1, 1, 3, r), dtype, device, 1), _probe((1, 1, 3, R), dtype, device, 2)
    with torch.no_grad():
        try:
            got = attn.expand_kv(kv_nope, k_rot)
        except Exception as e:  # noqa: BLE001
            return f"expand_kv failed on a probe input ({type(e).__name__}: {e})"
        want = _expand_kv_reference(kv_b, S1, S2, kv_nope, k_rot)
    if not (isinstance(got, tuple) and len(got) == 2 and all(_close(g, w) for g, w in zip(got, want))):
        return "expand_kv is not cat(kv_b_proj(x)[..., :S1], k_rot), kv_b_proj(x)[..., S1:] on a probe input"
    return None


def _split_cat_expand_kv(self, kv_nope, k_rot):
    """expand_kv on one gemm_split_cat call (gemmkit.nn.fused): key = cat(c[..., :S1], k_rot), value = c[..., S1:]."""
    B, _, S, r = kv_nope.shape
    S1, S2, R = self.qk_nope_head_dim, self.v_head_dim, self.qk_rope_head_dim
    H = self.kv_b_proj.out_features // (S1 + S2)
    x = kv_nope.reshape(B * S, r)
    y = k_rot.reshape(B * S, 1, R).expand(B * S, H, R)
    c1, c2 = self.kv_b_proj.split_cat(x, y if y.dtype == x.dtype else y.to(x.dtype), S1, S2)
    return c1.view(B, S, H, S1 + R).transpose(1, 2), c2.view(B, S, H, S2).transpose(1, 2)


def fuse_mla(attn):
    """Route `attn.expand_kv` through its (already converted) kv_b_proj's split_cat."""
    attn.expand_kv = types.MethodType(_split_cat_expand_kv, attn)
