"""Linear layers on gemmkit's GEMMs: drop-in replacements for torch.nn.Linear, one per scheme.

    scheme      module           weight (buffer / parameter)        activations (per call)       op
    "bf16"      Linear           (N, K) bf16 Parameter              bf16, as given               gemm_a16w16, autograd
    "fp16"      Linear           (N, K) fp16 Parameter              fp16, as given               gemm_a16w16, autograd
    "fp8"       Fp8Linear        (N, K) fp8 + (1, N) fp32 scale     fp8 per token, dynamic       gemm_a8w8
    "fp8_block" Fp8BlockLinear   (N, K) fp8 + 128x128 block scales  fp8 per 1x128, dynamic       gemm_a8w8_blockscale
    "int8"      Int8Linear       (N, K) int8 + (1, N) fp32 scale    int8 per token, dynamic      gemm_a8w8
    "mxfp4"     MXFP4Linear      (N, K/2) uint8 + (N, K/32) E8M0    MXFP4 per 32, dynamic        gemm_afp4wfp4

y = x @ W.T + b with x (..., K) flattened to (M, K) as nn.Linear does. `Cls.from_linear(linear)` (or the
module-level `from_linear(linear, scheme)`) builds the layer from an nn.Linear, quantizing the weight once;
`Cls.why_not(linear)` says why a layer cannot be converted (None when it can; gemmkit.nn.convert skips such
layers and reports the reason).

Training: `Linear` (bf16 / fp16) is an nn.Linear subclass that shares the original Parameters and has a
backward through gemmkit's own GEMMs:

    dX = dY @ W          gemm_a16w16(dY, W.t())          W.t() has a unit stride: read in place
    dW = dY^T @ X        gemm_a16w16(dY^T, X^T)          2-D views (N, M) and (K, M): unit stride, in place
    db = sum_rows dY     torch, fp32 sum rounded to the bias dtype

(on sm_90 the transposed views go to the Triton TMA kernel, which reads them where they lie: its X_KM / W_KN,
kernels/triton/gemm_tma.py; at decode sizes W.t() goes to the Gluon swap-AB tile, which reads it so too;
ops/dispatch.py says where a copy or the pointer kernel serves instead)

each computed only where `ctx.needs_input_grad` asks for it (fp32 accumulation, rounded to the dtype, as
torch's bf16 matmul does). The quantized layers are inference-only: their weights are buffers (no gradient),
and a forward whose input requires grad with grad mode on raises RuntimeError (the gradient would otherwise
stop there silently); run them under torch.no_grad() / torch.inference_mode().

The quantized layers keep their storage dtypes: `model.to(torch.bfloat16)` / `.half()` after conversion moves
them between devices but never casts the fp8 / int8 / E8M0 weights or the fp32 scales (their bias keeps its dtype
too), and load_state_dict refuses a weight or scale of another dtype (an unquantized checkpoint: load it into the
model before converting). MXFP4 is emulated on Hopper (Triton decodes the codes to bf16, then bf16 tensor cores):
correct, at bf16 speed at best; the layer's repr says so, and gfx942 (MI300X) cannot run it at all.
"""
from __future__ import annotations

import torch

from .. import quant
from ..ops import _common as C
from ..ops import gemm_a8w8, gemm_a8w8_blockscale, gemm_a16w16, gemm_afp4wfp4
from ..ops.gemm_a8w8 import INT8_MAX_K

FLOAT_WEIGHTS = (torch.bfloat16, torch.float16, torch.float32)
OUT_DTYPES = C.OUT_DTYPES
BLOCK = (128, 128)  # fp8_block: weight blocks (bn, bk); activations are quantized per (1, bk)


# ----------------------------------------------------------------------------- checks shared by the layers

def target_of(device):
    """The gemmkit target a tensor on `device` runs on (the interpreter's GEMMKIT_INTERPRET_ARCH for CPU)."""
    return C.target_for(torch.device(device))


def _common_why_not(linear):
    """Why no gemmkit layer can take `linear` (None: it can): a weight the ops cannot read where it lives."""
    w = getattr(linear, "weight", None)
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or w.layout != torch.strided:
        return "weight: expected a dense 2-D tensor"
    if w.device.type == "meta":
        return "weight is on the meta device (load or materialize the weights before converting)"
    try:
        C.check_device_supported(w, "weight")
    except ValueError as e:
        return str(e)
    b = getattr(linear, "bias", None)
    if b is not None and (b.dim() != 1 or b.shape[0] != w.shape[0]):
        return f"bias: expected shape ({w.shape[0]},), got {tuple(b.shape)}"
    return None


def _check_input(layer, x):
    """x (..., K) of a dtype the layer can return; (x2 (M, K), output shape)."""
    K = layer.in_features
    if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != K:
        raise ValueError(f"x: expected a tensor (..., {K}) (in_features = {K}), got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    return x.reshape(-1, K), tuple(x.shape[:-1]) + (layer.out_features,)


def _no_grad_or_raise(layer, x):
    if torch.is_grad_enabled() and x.requires_grad:
        raise RuntimeError(f"x: requires grad, but {type(layer).__name__} (scheme {layer.scheme}) is inference-only "
                           "(its quantized weight has no gradient and the quantized activations no backward); "
                           "run it under torch.no_grad() / torch.inference_mode(), or convert with scheme 'bf16' / "
                           "'fp16' to train")


# ----------------------------------------------------------------------------- bf16 / fp16, with autograd

class _A16W16Function(torch.autograd.Function):
    """y = x @ W.T + b on gemm_a16w16 forward and backward (the op itself refuses inputs that require grad: it is
    called on detached tensors here, with grad mode off, as autograd runs Function.forward / backward)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.bias_dtype = None if bias is None else bias.dtype
        return gemm_a16w16(x.detach(), weight.detach(), None if bias is None else bias.detach())

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        x, weight = ctx.saved_tensors
        N, K = weight.shape
        dy = grad_y.reshape(-1, N)
        if dy.dtype != weight.dtype:
            dy = dy.to(weight.dtype)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:  # dX (M, K) = dY (M, N) @ W (N, K): W.t() is (K, N) with unit stride, read in place
            dx = gemm_a16w16(dy, weight.t()).reshape(x.shape)
        if ctx.needs_input_grad[1]:  # dW (N, K) = dY^T (N, M) @ X (M, K): the op's "x" is dY^T, its "w" X^T (K, M)
            dw = gemm_a16w16(dy.t(), x.reshape(-1, K).t())
        if ctx.bias_dtype is not None and ctx.needs_input_grad[2]:
            db = dy.sum(0, dtype=torch.float32).to(ctx.bias_dtype)
        return dx, dw, db


class Linear(torch.nn.Linear):
    """torch.nn.Linear on gemmkit.gemm_a16w16 (bf16 or fp16), forward and backward.

    Same constructor, parameters, init and state_dict as torch.nn.Linear (it is a subclass); the dtype must be
    bf16 or fp16 and x must have it (no silent casts). `from_linear(linear)` shares the original Parameters
    (no copy: an optimizer built before the conversion keeps updating them; tied weights stay tied)."""

    scheme_dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=torch.bfloat16):
        if dtype not in C.FLOAT16_DTYPES:
            raise TypeError(f"dtype: expected torch.bfloat16 or torch.float16, got {dtype}")
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)

    @property
    def scheme(self):
        return "bf16" if self.weight.dtype == torch.bfloat16 else "fp16"

    @classmethod
    def why_not(cls, linear, dtype=None):
        why = _common_why_not(linear)
        if why:
            return why
        want = dtype or linear.weight.dtype
        if linear.weight.dtype not in C.FLOAT16_DTYPES or linear.weight.dtype != want:
            return (f"weight dtype {linear.weight.dtype}: this scheme computes in {want} and does not cast "
                    f"(cast the model first, e.g. model.to({want}))")
        if linear.bias is not None and linear.bias.dtype != want:
            return f"bias dtype {linear.bias.dtype}: expected {want} (the weight's)"
        return None

    @classmethod
    def from_linear(cls, linear, dtype=None):
        """A gemmkit Linear sharing `linear`'s weight and bias Parameters (dtype: None = the weight's, which must
        be bf16 or fp16)."""
        why = cls.why_not(linear, dtype)
        if why:
            raise ValueError(f"linear: cannot convert to gemmkit.nn.Linear: {why}")
        m = cls(linear.in_features, linear.out_features, bias=False, device="meta", dtype=linear.weight.dtype)
        m.weight = linear.weight
        m.bias = linear.bias
        return m

    def forward(self, x):
        # each read of a module attribute costs host time (a decode step's ~100 eager linears are host-bound): once
        w, b = self.weight, self.bias
        if not isinstance(x, torch.Tensor) or x.dtype != w.dtype:
            raise TypeError(f"x: expected dtype {w.dtype} (the layer's; gemmkit.nn.Linear does not cast), "
                            f"got {getattr(x, 'dtype', type(x).__name__)}")
        if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)):
            return _A16W16Function.apply(x, w, b)
        return gemm_a16w16(x, w, b)

    def _gemm(self, x2, out_dtype, bias, out=None):
        """y (M, N) = x2 @ W.T (+ bias), no autograd, into `out` when given: the quantized layers' interface
        (_QuantLinear._gemm), which gemmkit.nn.parallel calls on its shards. x2 has the layer's dtype, so out_dtype
        is x2's."""
        return gemm_a16w16(x2, self.weight.detach(), None if bias is None else bias.detach(), out=out)

    def split_cat(self, x, y, S1, S2):
        """gemm_split_cat(x, W, y, S1, S2, bias) (DeepSeek MLA's kv_b projection; gemmkit.nn.fused). Inference-only."""
        from ..ops import gemm_split_cat

        _no_grad_or_raise(self, x)
        return gemm_split_cat(x, self.weight, y, S1, S2, self.bias)

    def extra_repr(self):
        return f"{super().extra_repr()}, scheme={self.scheme} (gemmkit.gemm_a16w16, autograd)"


# ----------------------------------------------------------------------------- quantized layers (inference-only)

class _QuantLinear(torch.nn.Module):
    """What the quantized layers share: buffers `weight`, `weight_scale`, optional `bias` (all in the state_dict,
    dtypes fixed: see `_apply` and `_load_from_state_dict`), input checks, the no-grad rule, the repr."""

    scheme = ""
    description = ""

    def __init__(self, in_features, out_features, bias, device, weight_shape, weight_dtype, scale_shape,
                 scale_dtype, bias_dtype):
        super().__init__()
        if bias_dtype not in FLOAT_WEIGHTS:
            raise TypeError(f"bias_dtype: expected one of {FLOAT_WEIGHTS}, got {bias_dtype}")
        self.in_features, self.out_features = in_features, out_features
        self.register_buffer("weight", torch.zeros(weight_shape, dtype=weight_dtype, device=device))
        self.register_buffer("weight_scale", torch.ones(scale_shape, dtype=scale_dtype, device=device))
        self.register_buffer("bias", torch.zeros(out_features, dtype=bias_dtype, device=device) if bias else None)

    @classmethod
    def why_not(cls, linear):
        why = _common_why_not(linear)
        if why:
            return why
        if linear.weight.dtype not in FLOAT_WEIGHTS:
            return f"weight dtype {linear.weight.dtype}: expected one of {FLOAT_WEIGHTS} to quantize"
        return None

    @classmethod
    def _checked(cls, linear):
        why = cls.why_not(linear)
        if why:
            raise ValueError(f"linear: cannot convert to gemmkit.nn.{cls.__name__}: {why}")
        return linear.weight.detach()

    @classmethod
    def _quantized(cls, linear, wq, ws, **kwargs):
        """The layer of `linear`'s shape holding wq, ws (its weight, quantized by from_linear) and a copy of its bias;
        `kwargs`: the class's own constructor arguments (fp8_dtype)."""
        m = cls(linear.in_features, linear.out_features, bias=False, device="meta", **kwargs)
        m.weight, m.weight_scale = wq, ws
        if linear.bias is not None:
            m.bias = linear.bias.detach().clone()
        return m

    def forward(self, x):
        _no_grad_or_raise(self, x)
        x2, shape = _check_input(self, x)
        if x.dtype not in OUT_DTYPES:
            raise TypeError(f"x: expected bf16, fp16 or fp32 (quantized per call; the output has x's dtype), "
                            f"got {x.dtype}")
        return self._gemm(x2, x.dtype, self.bias).reshape(shape)

    def _apply(self, fn, recurse=True):
        """Device moves apply; dtype casts (model.to(torch.bfloat16), .half(), ...) leave the quantized weight, its
        scales and the bias as they are."""
        def keep_dtype(t):
            out = fn(t)
            return t.to(out.device) if isinstance(out, torch.Tensor) and out.dtype != t.dtype else out

        return super()._apply(keep_dtype, recurse)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        for name in ("weight", "weight_scale"):
            t, mine = state_dict.get(prefix + name), getattr(self, name)
            if isinstance(t, torch.Tensor) and t.dtype != mine.dtype:
                raise TypeError(f"{prefix}{name}: expected dtype {mine.dtype} ({type(self).__name__}, scheme "
                                f"{self.scheme}), got {t.dtype}; an unquantized checkpoint loads into the model "
                                "before gemmkit.nn.convert")
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def _gemm(self, x2, out_dtype, bias, out=None):
        """y (M, N) = x2 (M, K) @ W.T (+ bias), x2 quantized as the scheme does it; into `out` when given (a (M, N)
        tensor of out_dtype: gemmkit.nn.parallel writes row chunks of one output). `bias` is explicit so the
        tensor-parallel layers can add theirs on one rank only."""
        xq, xs = self.quantize_input(x2)
        return self._gemm_quantized(xq, xs, out_dtype, bias, out)

    def quantize_input(self, x2):
        """(xq, xs): x2 (M, K) in this layer's activation format (the scheme's dynamic quantization)."""
        raise NotImplementedError

    def quantize_gated(self, h, activation):
        """(xq, xs): act(gate) * up of a gated MLP's h = [gate | up] (M, 2K) in this layer's activation format, one
        pass over h (gemmkit.quant's gated forms); None where the scheme has no gated form."""
        return None

    def _gemm_quantized(self, xq, xs, out_dtype, bias, out=None):
        """y (M, N) = dequant(xq, xs) @ W.T (+ bias) for an input already in this layer's activation format."""
        raise NotImplementedError

    @staticmethod
    def _add_bias(y, bias):
        return y if bias is None else y.add_(bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"scheme={self.scheme} ({self.description})")


def _fp8_default(device):
    return quant.fp8_dtype_for(target_of(device or "cpu"))


def _fp8_why_not(target):
    """Why the target's fp8 cannot run here (None: it can): e4m3fnuz (gfx942) has no interpreter type before Triton
    3.8 (`C.interpreter_lacks`)."""
    why = C.interpreting() and C.interpreter_lacks(C.fp8_dtype(target))
    return f"{target.arch}'s {why}" if why else None


class Fp8Linear(_QuantLinear):
    """FP8 weights, quantized once per output channel (scale (1, N)); activations quantized per token on every
    call (dynamic, scale (M, 1)); gemm_a8w8, fp32 accumulate, output in x's dtype. The fp8 format is the target's
    E4M3 (float8_e4m3fn on H100/H200 and MI355X, float8_e4m3fnuz on MI300X)."""

    scheme = "fp8"
    description = "per-token dynamic fp8 activations x per-channel fp8 weights, gemmkit.gemm_a8w8"

    def __init__(self, in_features, out_features, bias=True, *, device=None, fp8_dtype=None,
                 bias_dtype=torch.bfloat16):
        fp8_dtype = fp8_dtype or _fp8_default(device)
        super().__init__(in_features, out_features, bias, device, (out_features, in_features), fp8_dtype,
                         (1, out_features), torch.float32, bias_dtype)

    @classmethod
    def why_not(cls, linear):
        return super().why_not(linear) or _fp8_why_not(target_of(linear.weight.device))

    @classmethod
    def from_linear(cls, linear):
        wq, ws = quant.quantize_fp8_per_channel(cls._checked(linear))
        return cls._quantized(linear, wq, ws, fp8_dtype=wq.dtype)

    def quantize_input(self, x2):
        return quant.quantize_fp8_per_token(x2, dtype=self.weight.dtype)

    def quantize_gated(self, h, activation):
        return quant.quantize_fp8_per_token_gated(h, activation, dtype=self.weight.dtype)

    def _gemm_quantized(self, xq, xs, out_dtype, bias, out=None):
        return gemm_a8w8(xq, self.weight, xs, self.weight_scale, bias, out_dtype=out_dtype, out=out)


class Int8Linear(_QuantLinear):
    """int8 weights (symmetric, per output channel, scale (1, N)) x int8 activations quantized per token on every
    call; gemm_a8w8 with an exact int32 accumulator (K <= 131071, so 128 * 128 * K fits it)."""

    scheme = "int8"
    description = "per-token dynamic int8 activations x per-channel int8 weights, gemmkit.gemm_a8w8 (int32 accumulate)"

    def __init__(self, in_features, out_features, bias=True, *, device=None, bias_dtype=torch.bfloat16):
        super().__init__(in_features, out_features, bias, device, (out_features, in_features), torch.int8,
                         (1, out_features), torch.float32, bias_dtype)

    @classmethod
    def why_not(cls, linear):
        why = super().why_not(linear)
        if why is None and linear.in_features > INT8_MAX_K:
            why = f"in_features = {linear.in_features}: int8 allows K <= {INT8_MAX_K} (the int32 accumulator)"
        return why

    @classmethod
    def from_linear(cls, linear):
        wq, ws = quant.quantize_int8_per_token(cls._checked(linear))
        return cls._quantized(linear, wq, ws.view(1, -1))

    def quantize_input(self, x2):
        return quant.quantize_int8_per_token(x2)

    def quantize_gated(self, h, activation):
        return quant.quantize_int8_per_token_gated(h, activation)

    def _gemm_quantized(self, xq, xs, out_dtype, bias, out=None):
        return gemm_a8w8(xq, self.weight, xs, self.weight_scale, bias, out_dtype=out_dtype, out=out)


class Fp8BlockLinear(_QuantLinear):
    """FP8 with DeepSeek-V3 block scales: the weight quantized once per 128 x 128 block (scale (ceil(N/128),
    ceil(K/128))), activations per 1 x 128 on every call; gemm_a8w8_blockscale. Any N and K (the last blocks may
    be partial, as the op and the quantizer allow). The bias is added after the GEMM (the op has none)."""

    scheme = "fp8_block"
    description = "1x128 dynamic fp8 activations x 128x128-block fp8 weights, gemmkit.gemm_a8w8_blockscale"

    def __init__(self, in_features, out_features, bias=True, *, device=None, fp8_dtype=None,
                 bias_dtype=torch.bfloat16):
        fp8_dtype = fp8_dtype or _fp8_default(device)
        scale_shape = (-(-out_features // BLOCK[0]), -(-in_features // BLOCK[1]))
        super().__init__(in_features, out_features, bias, device, (out_features, in_features), fp8_dtype,
                         scale_shape, torch.float32, bias_dtype)

    @classmethod
    def why_not(cls, linear):
        return super().why_not(linear) or _fp8_why_not(target_of(linear.weight.device))

    @classmethod
    def from_linear(cls, linear):
        wq, ws = quant.quantize_fp8_blockwise(cls._checked(linear), BLOCK)
        return cls._quantized(linear, wq, ws, fp8_dtype=wq.dtype)

    def quantize_input(self, x2):
        return quant.quantize_fp8_blockwise(x2, (1, BLOCK[1]), dtype=self.weight.dtype)

    def quantize_gated(self, h, activation):
        return quant.quantize_fp8_blockwise_gated(h, activation, (1, BLOCK[1]), dtype=self.weight.dtype)

    def _gemm_quantized(self, xq, xs, out_dtype, bias, out=None):
        y = gemm_a8w8_blockscale(xq, self.weight, xs, self.weight_scale, block_shape=BLOCK, out_dtype=out_dtype,
                                 out=out)
        return self._add_bias(y, bias)

    def split_cat(self, x, y, S1, S2):
        """gemm_a8w8_blockscale_split_cat on x quantized per 1 x 128 (DeepSeek MLA's kv_b; gemmkit.nn.fused)."""
        from ..ops import gemm_a8w8_blockscale_split_cat

        _no_grad_or_raise(self, x)
        if self.bias is not None:
            raise ValueError("split_cat: gemm_a8w8_blockscale_split_cat has no bias; this layer has one")
        xq, xs = self.quantize_input(x)
        return gemm_a8w8_blockscale_split_cat(xq, self.weight, xs, self.weight_scale, y, S1, S2, block_shape=BLOCK,
                                              out_dtype=y.dtype)


class MXFP4Linear(_QuantLinear):
    """OCP MXFP4 weights (E2M1 codes two per byte, one E8M0 scale per 32 along K), activations quantized to MXFP4
    on every call; gemm_afp4wfp4. K must be a multiple of 32. Native on gfx950 (MI355X); EMULATED on Hopper
    (Triton decodes to bf16, then bf16 tensor cores: the accuracy of MXFP4, the speed of bf16 at best); not
    available on gfx942 (MI300X). The bias is added after the GEMM."""

    scheme = "mxfp4"

    def __init__(self, in_features, out_features, bias=True, *, device=None, bias_dtype=torch.bfloat16):
        if in_features % quant.MXFP4_GROUP:
            raise ValueError(f"in_features: expected a multiple of {quant.MXFP4_GROUP} for MXFP4, got {in_features}")
        super().__init__(in_features, out_features, bias, device, (out_features, in_features // 2), torch.uint8,
                         (out_features, in_features // quant.MXFP4_GROUP), torch.uint8, bias_dtype)

    @property
    def emulated(self) -> bool:
        """True where tl.dot_scaled is emulated (every target but gfx950)."""
        return target_of(self.weight.device).arch != "gfx950"

    @property
    def description(self):
        arch = target_of(self.weight.device).arch
        how = ("native on gfx950" if not self.emulated else
               f"EMULATED on {arch}: decoded to bf16, bf16 tensor cores")
        return f"MXFP4 activations and weights (E2M1, E8M0 per 32), gemmkit.gemm_afp4wfp4, {how}"

    @classmethod
    def why_not(cls, linear):
        why = super().why_not(linear)
        if why is None and linear.in_features % quant.MXFP4_GROUP:
            why = (f"in_features = {linear.in_features}: MXFP4 needs a multiple of {quant.MXFP4_GROUP} (one E8M0 "
                   "scale per 32 elements)")
        if why is None:
            from ..ops.gemm_afp4wfp4 import UNSUPPORTED_ARCHS

            target = target_of(linear.weight.device)
            if target.arch in UNSUPPORTED_ARCHS:
                why = f"gemm_afp4wfp4 does not run on {target.name} ({target.arch}): {UNSUPPORTED_ARCHS[target.arch]}"
        return why

    @classmethod
    def from_linear(cls, linear):
        wq, ws = quant.quantize_mxfp4(cls._checked(linear))
        return cls._quantized(linear, wq, ws)

    def _gemm(self, x2, out_dtype, bias, out=None):
        xq, xs = quant.quantize_mxfp4(x2)
        return self._add_bias(gemm_afp4wfp4(xq, self.weight, xs, self.weight_scale, out_dtype=out_dtype, out=out),
                              bias)


# ----------------------------------------------------------------------------- schemes

SCHEMES = {"bf16": Linear, "fp16": Linear, "fp8": Fp8Linear, "fp8_block": Fp8BlockLinear, "int8": Int8Linear,
           "mxfp4": MXFP4Linear}


def check_scheme(scheme):
    if scheme not in SCHEMES:
        raise ValueError(f"scheme: expected one of {', '.join(SCHEMES)}, got {scheme!r}")
    return SCHEMES[scheme]


def why_not(linear, scheme) -> str | None:
    """Why `linear` cannot become a gemmkit layer of `scheme` (None: it can)."""
    cls = check_scheme(scheme)
    if cls is Linear:
        return Linear.why_not(linear, Linear.scheme_dtypes[scheme])
    return cls.why_not(linear)


def from_linear(linear, scheme):
    """The gemmkit layer of `scheme` for an nn.Linear (weights quantized once; bf16 / fp16 share the Parameters)."""
    cls = check_scheme(scheme)
    if cls is Linear:
        return Linear.from_linear(linear, Linear.scheme_dtypes[scheme])
    return cls.from_linear(linear)


def linear_ref(layer, x):
    """float64 reference of a gemmkit layer on x: the dequantized weight against x quantized as the layer does
    it (bf16 / fp16: x and W as they are). For tests and the e2e benchmark's checks."""
    x2 = x.detach().cpu().reshape(-1, layer.in_features)
    if isinstance(layer, Linear):
        x64, w64 = x2.double(), layer.weight.detach().cpu().double()
    else:
        x64, w64 = _quantized_input(layer, x2).double(), dequantize_weight(layer).cpu().double()
    y = x64 @ w64.T
    if layer.bias is not None:
        y = y + layer.bias.detach().cpu().double()
    return y.reshape(tuple(x.shape[:-1]) + (layer.out_features,))


def dequantize_weight(layer):
    """float32 W as a quantized layer multiplies it."""
    from ..reference import expand_block_scales

    w, s = layer.weight, layer.weight_scale
    if isinstance(layer, MXFP4Linear):
        return quant.dequantize_mxfp4_ref(w.cpu(), s.cpu())
    if isinstance(layer, Fp8BlockLinear):
        return w.float() * expand_block_scales(s, BLOCK, w.shape)
    return w.float() * s.reshape(-1, 1)


def _quantized_input(layer, x2):
    """float32 x as the layer quantizes it (the torch references of gemmkit.quant, bitwise equal to its kernels)."""
    from ..reference import expand_block_scales

    if isinstance(layer, MXFP4Linear):
        return quant.dequantize_mxfp4_ref(*quant.quantize_mxfp4_ref(x2))
    if isinstance(layer, Fp8BlockLinear):
        q, s = quant.quantize_fp8_blockwise_ref(x2, (1, BLOCK[1]), layer.weight.dtype)
        return q.float() * expand_block_scales(s, (1, BLOCK[1]), q.shape)
    if isinstance(layer, Int8Linear):
        q, s = quant.quantize_int8_per_token_ref(x2)
    else:
        q, s = quant.quantize_fp8_per_token_ref(x2, layer.weight.dtype)
    return q.float() * s


__all__ = ["Linear", "Fp8Linear", "Fp8BlockLinear", "Int8Linear", "MXFP4Linear", "SCHEMES", "from_linear", "why_not",
           "linear_ref", "dequantize_weight"]
