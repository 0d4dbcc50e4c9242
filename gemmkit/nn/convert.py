"""gemmkit.nn.convert: replace a model's nn.Linear layers by gemmkit layers in place (torchao's quantize_ convention).

    report = gemmkit.nn.convert(model, "fp8", filter=lambda module, name: name != "lm_head")
    print(report)          # one line per layer: converted (to what), fused, or skipped (why)

Steps, in this order, over the modules of `model` (the root itself is never replaced):

  1. fuse_mlp=True: each gated MLP (gate_proj / up_proj / down_proj / act_fn, checked on a probe:
     gemmkit/nn/fused.py) whose three projections the filter accepts becomes one GatedMLP (ffn_gated; bf16 / fp16)
     or QuantGatedMLP (fp8 / fp8_block / int8: the activation fused into the down projection's quantization).
  2. fuse_mla=True (bf16 / fp16 / fp8_block): each MLA attention with an `expand_kv` method whose kv_b_proj the
     filter accepts is probed now, before its kv_b_proj is replaced, and re-routed through gemm_split_cat in step 4.
  3. Every torch.nn.Linear (the exact class: a subclass may compute something else in its forward) that the filter
     accepts becomes the scheme's layer (gemmkit/nn/linear.py), or is left alone with the reason: the layer class's
     `why_not` (a weight the op cannot take: e.g. MXFP4 with K % 32 != 0, int8 with K > 131071, a bf16 scheme on an
     fp32 weight, weights on the meta device, CPU weights without the interpreter).
  4. The probed MLA modules whose kv_b_proj became a layer with `split_cat` get their expand_kv replaced.

A module reached by several paths (shared) is replaced at every one of them by the same new layer. `filter(module,
name) -> bool` sees each candidate nn.Linear with its qualified name (as torchao's filter_fn). Returns a
ConvertReport; `str(report)` is the table, `report.skipped` maps names to reasons.
"""
from __future__ import annotations

import dataclasses

import torch

from . import fused as _fused
from . import linear as _linear

# Layers convert() produced: left alone if it runs again.
GEMMKIT_LAYERS = (_linear.Linear, _linear._QuantLinear, _fused.GatedMLP, _fused.QuantGatedMLP)


@dataclasses.dataclass
class ConvertReport:
    """What convert() did, per qualified module name."""

    scheme: str
    converted: dict = dataclasses.field(default_factory=dict)  # name -> gemmkit class name
    fused: dict = dataclasses.field(default_factory=dict)      # name -> what it became
    skipped: dict = dataclasses.field(default_factory=dict)    # name -> why it was left as it is
    filtered: list = dataclasses.field(default_factory=list)   # nn.Linear names the filter declined

    def __str__(self):
        lines = [f"gemmkit.nn.convert(scheme={self.scheme!r}): {len(self.converted)} converted, {len(self.fused)} "
                 f"fused, {len(self.skipped)} skipped, {len(self.filtered)} declined by the filter"]
        lines += [f"  converted  {name}: {what}" for name, what in self.converted.items()]
        lines += [f"  fused      {name}: {what}" for name, what in self.fused.items()]
        lines += [f"  skipped    {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)


def _paths(model):
    """{id(module): (module, [(parent, attribute, qualified name), ...])} for every module below the root."""
    found = {}
    for parent_name, parent in model.named_modules(remove_duplicate=False):
        for attr, child in parent._modules.items():
            if child is None:
                continue
            name = f"{parent_name}.{attr}" if parent_name else attr
            found.setdefault(id(child), (child, []))[1].append((parent, attr, name))
    return found


def _replace(where, new):
    for parent, attr, _name in where:
        setattr(parent, attr, new)


def convert(model, scheme, filter=None, *, fuse_mlp=False, fuse_mla=False):  # noqa: A002  (the issue's name)
    """Replace `model`'s nn.Linear layers by gemmkit layers of `scheme` in place; returns a ConvertReport.

    Args:
      model: a torch.nn.Module (its children are replaced; convert a lone nn.Linear with gemmkit.nn.from_linear).
      scheme: "bf16" / "fp16" (gemm_a16w16, trainable), "fp8" (per-token x per-channel), "fp8_block" (1x128 x
        128x128), "int8", "mxfp4" (emulated on Hopper): gemmkit/nn/linear.py.
      filter: optional callable(module, name) -> bool choosing the nn.Linear layers to convert (None: all).
      fuse_mlp: gated MLPs into one ffn_gated call (bf16 / fp16), or for fp8 / fp8_block / int8 into a
        QuantGatedMLP (the activation fused into the down projection's quantization); inference-only.
      fuse_mla: MLA kv_b_proj + split + cat into gemm_split_cat (bf16 / fp16 / fp8_block; inference-only).
    """
    cls = _linear.check_scheme(scheme)
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if type(model) is torch.nn.Linear:
        raise ValueError("model: convert replaces a model's submodules; convert a lone nn.Linear with "
                         "gemmkit.nn.from_linear(linear, scheme)")
    accept = filter or (lambda module, name: True)
    report = ConvertReport(scheme)
    dtype16 = _linear.Linear.scheme_dtypes.get(scheme)

    with torch.no_grad():
        if fuse_mlp:
            _fuse_mlps(model, scheme, dtype16, accept, report)
        mla = _probe_mla(model, scheme, accept, report) if fuse_mla else []
        parts = {id(m) for f in model.modules() if isinstance(f, _fused.QuantGatedMLP) for m in f.modules() if m is not f}
        for module, where in _paths(model).values():
            name = where[0][2]
            if id(module) in parts:  # a fused module's own layers (QuantGatedMLP's gate_up / down)
                continue
            if isinstance(module, GEMMKIT_LAYERS):
                if isinstance(module, (_linear.Linear, _linear._QuantLinear)):
                    report.skipped[name] = f"already a gemmkit layer ({type(module).__name__})"
                continue
            if not isinstance(module, torch.nn.Linear):
                continue
            if not accept(module, name):
                report.filtered.append(name)
                continue
            if type(module) is not torch.nn.Linear:
                report.skipped[name] = (f"a subclass of nn.Linear ({type(module).__module__}."
                                        f"{type(module).__qualname__}): its forward may not be x @ W.T + b")
                continue
            why = _linear.why_not(module, scheme)
            if why:
                report.skipped[name] = why
                continue
            new = _linear.from_linear(module, scheme)
            _replace(where, new)
            report.converted[name] = type(new).__name__ if cls is not _linear.Linear else f"Linear ({scheme})"
        for attn, name in mla:
            kv_b = attn.kv_b_proj
            if isinstance(kv_b, _linear.Linear) or (isinstance(kv_b, _linear.Fp8BlockLinear) and kv_b.bias is None):
                _fused.fuse_mla(attn)
                op = "gemm_split_cat" if scheme in ("bf16", "fp16") else "gemm_a8w8_blockscale_split_cat"
                report.fused[name] = f"expand_kv: kv_b_proj + split + cat in one {op}"
            else:
                report.skipped[name + " (fuse_mla)"] = ("kv_b_proj was not converted to a layer with a split-cat GEMM "
                                                        f"({type(kv_b).__name__})")
    return report


def _fuse_mlps(model, scheme, dtype16, accept, report):
    for module, where in _paths(model).values():
        if not all(hasattr(module, n) for n in ("gate_proj", "up_proj", "down_proj")):
            continue
        name = where[0][2]
        if not all(accept(getattr(module, n), f"{name}.{n}") for n in ("gate_proj", "up_proj", "down_proj")):
            report.skipped[name + " (fuse_mlp)"] = "the filter declined one of gate_proj, up_proj, down_proj"
            continue
        if dtype16 is None:
            act, why = _fused.QuantGatedMLP.why_not(module, scheme)
            if why:
                report.skipped[name + " (fuse_mlp)"] = why + ": the projections are converted one by one"
                continue
            _replace(where, _fused.QuantGatedMLP.from_mlp(module, scheme))
            report.fused[name] = f"QuantGatedMLP ({scheme}, {act} fused into the down projection's quantization)"
            continue
        act, why = _fused.mlp_why_not(module, dtype16)
        if why:
            report.skipped[name + " (fuse_mlp)"] = why
            continue
        new = _fused.GatedMLP.from_mlp(module, dtype16)
        _replace(where, new)
        report.fused[name] = f"GatedMLP (ffn_gated, {act})"


def _probe_mla(model, scheme, accept, report):
    found = []
    for module, where in _paths(model).values():
        if not isinstance(getattr(module, "kv_b_proj", None), torch.nn.Module):
            continue
        name = where[0][2]
        if scheme not in ("bf16", "fp16", "fp8_block"):
            report.skipped[name + " (fuse_mla)"] = (f"split-cat GEMMs exist for bf16 / fp16 and fp8_block, not "
                                                   f"{scheme}: kv_b_proj is converted alone")
            continue
        if not accept(module.kv_b_proj, name + ".kv_b_proj"):
            report.skipped[name + " (fuse_mla)"] = "the filter declined kv_b_proj"
            continue
        why = _fused.mla_why_not(module)
        if why:
            report.skipped[name + " (fuse_mla)"] = why
            continue
        found.append((module, name))
    return found
