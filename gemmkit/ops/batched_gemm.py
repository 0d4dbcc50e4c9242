"""Batched GEMMs: y[b] = x[b] @ w[b].T (+ scales, bias, activation) for b in [0, B), one launch.

    batched_gemm_a16w16(x (B, M, K), w (B, N, K), bias (B, N) | (N,) | None)     bf16 / fp16
    batched_gemm_a8w8(x, w, x_scale (B, M, 1), w_scale (B, 1, N), bias)          int8 / fp8

Custom ops with fakes (as gemm_a16w16 / gemm_a8w8):

  gemmkit::batched_gemm_a16w16   gemmkit::batched_gemm_a16w16_out
  gemmkit::batched_gemm_a8w8     gemmkit::batched_gemm_a8w8_out

Kernel per call (same config either way; ops/dispatch.batched decides and says why):
  Gluon           batched_gemm_a16w16 with a "backend": "gluon" config (sm_90 tables, where it
                  wins): the ping-pong (num_warps 4) or cooperative (num_warps 8) batched kernel,
                  when it can take the call: sm_90, more than one wave of tiles, x, w, y meet TMA's
                  rules as 3-D tensors (kernels/gluon/hopper_pingpong_batched.py); else the Triton
                  tier below runs the same config (its tiles, "tma", "persistent")
  TMA kernel      sm_90, config "tma": true, and x, w, y meet TMA's rules as 3-D tensors
                  (kernels/triton/batched_gemm_tma.py)
  pointer kernel  everything else: AMD, odd N, broadcast or interleaved batch strides
                  (kernels/triton/batched_gemm.py)
  K whose rows the kernel would read element by element (K % 8 != 0 for 16-bit operands on sm_90, K % 16
  != 0 on AMD): x and w first copied to rows of 16-byte (AMD: 16-element) multiples, zeros after K, where
  their batch flattens into rows and the call is large enough (ops/dispatch._batched_copies)
The Triton tier's host code (`tma_unsupported`, `constexprs`, grid, launch, static specs) is
kernels/triton/batched.py; this file validates, resolves the config and allocates.

Reused from the dense ops: 8-bit validation helpers (gemm_a8w8.py). Tables:
`BATCHED_A16W16.json`, `BATCHED_A8W8.json` (fp8), `BATCHED_A8W8_INT8.json`, looked up by
the per-entry M (the tile shape follows the matrices, not the batch count).
"""
from __future__ import annotations

import json

import torch

from ..configs import SPLIT_N
from . import _common as C
from . import dispatch as D
from ._registry import Op
from .gemm_a16w16 import _normalize_activation  # one home for the activation argument
from ..kernels.triton import batched as H
from ..kernels.triton import dense as G
# The Triton tier's host code (kernels/triton/batched.py), re-exported where callers have always found it.
from ..kernels.triton.batched import constexprs, static_spec, tma_compatible_3d  # noqa: F401
from .gemm_a8w8 import INT8_MAX_K, check_fp8_flavour, resolve_out_dtype

OP_A16W16 = "batched_a16w16"
OP_A8W8 = "batched_a8w8"
ISA_OP = "batched_gemm"  # `gemmkit isa --op batched_gemm`: both ops' tables (one provider, gemmkit/isa/report.py)
TABLE_OP_A8W8 = {"fp8": "batched_a8w8", "int8": "batched_a8w8_int8"}
BIAS_DTYPES_A8W8 = (torch.bfloat16, torch.float16, torch.float32)


# ----------------------------------------------------------------------------- validation

def _check_pair(x, w, dtypes):
    """x (B, M, K), w (B, N, K) of one dtype from `dtypes`; returns (B, M, N, K)."""
    C.check_tensor("x", x, dtypes=dtypes, ndim=3)
    C.check_tensor("w", w, ndim=3)
    if w.dtype != x.dtype:
        raise TypeError(f"w: expected dtype {x.dtype} (the dtype of x), got {w.dtype}")
    B, M, K = x.shape
    if w.shape[0] != B or w.shape[2] != K:
        raise ValueError(f"w: expected shape ({B}, N, {K}) to match x (B={B}, K={K}), got {tuple(w.shape)}")
    return B, M, w.shape[1], K


def _check_bias(bias, B, N, dtypes):
    if bias is None:
        return
    C.check_tensor("bias", bias, dtypes=dtypes)
    if tuple(bias.shape) not in ((N,), (B, N)):
        raise ValueError(f"bias: expected shape ({N},) or ({B}, {N}), got {tuple(bias.shape)}")


def _check_out(out, B, M, N, out_dtype):
    C.check_out_dtype(out_dtype)
    if out is None:
        return
    C.check_tensor("out", out, ndim=3)
    if tuple(out.shape) != (B, M, N):
        raise ValueError(f"out: expected shape {(B, M, N)}, got {tuple(out.shape)}")
    if out.dtype != out_dtype:
        raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    C.check_no_overlap("out", out)


def _check_config(config_str: str, gluon: bool = False):
    """Keys the batched kernels cannot honour are an error, not a silent ignore. `gluon`: the op has a
    Gluon backend (batched_gemm_a16w16; AMD tables and config= on AMD refuse it in configs.validate_config)."""
    cfg = json.loads(config_str) if config_str else {}
    if cfg.get("NUM_KSPLIT", 1) != 1:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']}; the batched GEMMs take 1 (no split-K: "
                         "the batch already fills the grid)")
    if cfg.get("BLOCK_SIZE_N") in SPLIT_N:
        raise ValueError(f"config: key 'BLOCK_SIZE_N' = {cfg['BLOCK_SIZE_N']}; the batched GEMMs take powers of two "
                         "(split tiles are the dense Gluon kernels')")
    if cfg.get("swap_ab"):
        raise ValueError("config: key 'swap_ab' = true; the batched GEMMs have no transposed tile (the dense Gluon "
                         "ping-pong has)")
    if cfg.get("backend", "triton") not in (("triton", "gluon") if gluon else ("triton",)):
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}; " +
                         ("batched_gemm_a16w16 runs 'triton' or 'gluon'" if gluon else
                          "batched_gemm_a8w8 has only the 'triton' kernels"))


def _check_a16w16(x, w, bias, activation, out_dtype, out=None):
    B, M, N, K = _check_pair(x, w, C.FLOAT16_DTYPES)
    _check_bias(bias, B, N, (x.dtype,))
    _normalize_activation(activation)
    _check_out(out, B, M, N, out_dtype)
    C.check_same_device(x=x, w=w, bias=bias, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, bias=bias)
    return B, M, N, K


def _check_a8w8(x, w, x_scale, w_scale, bias, out_dtype, out=None):
    B, M, N, K = _check_pair(x, w, (torch.int8,) + C.FP8_E4M3_DTYPES)
    if x.dtype == torch.int8 and K > INT8_MAX_K:
        raise ValueError(f"x: K = {K} can overflow the int32 accumulator (int8 allows K <= {INT8_MAX_K})")
    for name, s, shapes in (("x_scale", x_scale, [(B, M, 1), (B, M)]), ("w_scale", w_scale, [(B, 1, N), (B, N)])):
        C.check_tensor(name, s, dtypes=(torch.float32,))
        if tuple(s.shape) not in shapes:
            raise ValueError(f"{name}: expected shape {' or '.join(map(str, shapes))}, got {tuple(s.shape)}")
    _check_bias(bias, B, N, BIAS_DTYPES_A8W8)
    _check_out(out, B, M, N, out_dtype)
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, bias=bias, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, x_scale=x_scale, w_scale=w_scale, bias=bias)
    return B, M, N, K


# ----------------------------------------------------------------------------- path and launch

def launch(x, w, bias, y, activation, cfg, target, scaling=G.NO_SCALING, compile_only=False):
    """x (B, M, K), w (B, N, K), y (B, M, N); bias (B, N) / (N,) with unit stride on N, or None;
    scaling "none" or "rowcol" with x_scale (B, M) and w_scale (B, N), unit stride on M / N.
    The kernel ops/dispatch.batched chooses: the Gluon batched ping-pong for a "backend": "gluon" config where
    it can take the call, anything else the Triton tier (kernels/triton/batched.launch)."""
    choice = D.batched(cfg, target, x, w, y, scaling, epilogue=D.Epilogue(bias is not None, activation))
    if choice.pad_k:  # rows the pointer kernel would read element by element: copies of 16-byte rows first
        x = _copy_rows(x, choice.pad_k, compile_only)
        w = _copy_rows(w, choice.pad_k, compile_only) if choice.pad_k_w else w
    if choice.path == "gluon":
        from ..kernels.gluon import hopper_pingpong_batched

        D.run_gluon(choice, lambda: hopper_pingpong_batched.launch(x, w, bias, y, activation, cfg, target,
                                                                   compile_only=compile_only),
                    lambda: launch(x, w, bias, y, activation, cfg, target, scaling, compile_only))
        return
    # (choice.config: a Gluon config on the pointer kernel runs the stages that fit it, dispatch.batched)
    H.launch(x, w, bias, y, activation, choice.config, target, scaling, compile_only=compile_only,
             tma=choice.path == "tma")


def _copy_rows(t, KP: int, compile_only=False):
    """A contiguous (B, R, KP) copy of the 3-D `t` (B, R, K), zeros after K: the dense ops' row copy over its batch
    flattened into rows (ops/dispatch._batched_copies copies only operands whose batch flattens: a view)."""
    from ..kernels.triton import pad

    B, R, K = t.shape
    return pad.pad_rows(t.reshape(B * R, K), KP, compile_only).view(B, R, KP)


def _bias_arg(bias):
    return None if bias is None else (bias if bias.stride(-1) == 1 else bias.contiguous())


def _rows(s, B, L):
    """A (B, L, 1) / (B, 1, L) / (B, L) scale as (B, L) with unit stride on L."""
    s = s.reshape(B, L)
    return s if s.stride(1) == 1 or L == 1 else s.contiguous()


# ----------------------------------------------------------------------------- batched_gemm_a16w16

def _run_a16w16(x, w, bias, activation, config, y, compile_only=False):
    B, M, K = x.shape
    N = w.shape[1]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if B == 0 or M == 0 or N == 0:
        return
    if K == 0:  # the empty sum: act(0 + bias) in every row
        from ..reference import activation_ref

        row = bias.float() if bias is not None else torch.zeros(N, device=x.device)
        y.copy_(activation_ref(row, activation).expand(B, M, N) if row.dim() == 1 else
                activation_ref(row, activation)[:, None, :].expand(B, M, N))
        return
    target = C.target_for(x.device)
    cfg, _source = C.resolve_config(OP_A16W16, config, target, M, N, K)
    launch(x, w, _bias_arg(bias), y, activation, cfg, target, compile_only=compile_only)


def _batched_shape(x, w, *args):
    return x.shape[0], x.shape[1], w.shape[1]


def _check_a16w16_op(x, w, bias, activation, *, out_dtype, out):
    _check_a16w16(x, w, bias, activation, out_dtype, out)
    return _batched_shape(x, w)


def _execute_a16w16(x, w, bias, activation, *, config, y):
    _check_config(config, gluon=True)
    _run_a16w16(x, w, bias, activation, config, y)


BATCHED_A16W16 = Op("batched_gemm_a16w16", "Tensor x, Tensor w, Tensor? bias, str activation", 3, _check_a16w16_op,
                    _execute_a16w16, default_out_dtype=lambda x, out: out.dtype if isinstance(out, torch.Tensor)
                    else getattr(x, "dtype", None), output_shape=_batched_shape)


def batched_gemm_a16w16(x, w, bias=None, *, activation=None, out_dtype=None, out=None, config=None):
    """y[b] = act(x[b] @ w[b].T + bias[b]) for every b, bf16 / fp16, in one kernel launch.

    Args:
      x: (B, M, K) bf16 or fp16, any strides (unit stride on K is the fast case).
      w: (B, N, K), same dtype (nn.Linear layout per entry); a batch stride of 0 shares one weight.
      bias: optional (B, N) (one per entry) or (N,) (shared), same dtype as x.
      activation: None, "relu", "gelu", "gelu_tanh" or "silu", applied after the bias.
      out_dtype: bf16, fp16 or fp32; defaults to x.dtype.
      out: optional preallocated (B, M, N) tensor of out_dtype, any strides; written and returned.
      config: optional dict overriding the table (gemmkit/configs/<arch>/BATCHED_A16W16.json);
        NUM_KSPLIT must be 1.

    Returns (B, M, N). B, M or N == 0: empty; K == 0: act(bias) (or zeros) in every row.
    No backward yet: inputs that require grad (with grad mode on) raise NotImplementedError.
    """
    return BATCHED_A16W16.call(x, w, bias, _normalize_activation(activation), out_dtype=out_dtype, out=out,
                               config=config)


def compile_for_a16w16(x, w, config: dict, bias=None, out_dtype=None):
    """Compile (no launch) what batched_gemm_a16w16(x, w, ..., config=config) would run (tuner warm-up)."""
    out_dtype = out_dtype or x.dtype
    B, M, N, _K = _check_a16w16(x, w, bias, "none", out_dtype)
    cfg = C.config_to_str(config)
    _check_config(cfg, gluon=True)
    _run_a16w16(x, w, bias, "none", cfg, torch.empty((B, M, N), dtype=out_dtype, device=x.device), compile_only=True)


# ----------------------------------------------------------------------------- batched_gemm_a8w8

def _run_a8w8(x, w, x_scale, w_scale, bias, config, y, compile_only=False):
    B, M, K = x.shape
    N = w.shape[1]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if B == 0 or M == 0 or N == 0:
        return
    if K == 0:  # the empty sum, scaled: bias (or zeros) in every row
        row = bias.float() if bias is not None else torch.zeros(N, device=x.device)
        y.copy_(row.expand(B, M, N) if row.dim() == 1 else row[:, None, :].expand(B, M, N))
        return
    target = C.target_for(x.device)
    check_fp8_flavour(x, target)
    cfg, _source = C.resolve_config(TABLE_OP_A8W8["int8" if x.dtype == torch.int8 else "fp8"], config, target,
                                    M, N, K)
    scaling = G.Scaling("rowcol", _rows(x_scale, B, M), _rows(w_scale, B, N))
    launch(x, w, _bias_arg(bias), y, "none", cfg, target, scaling, compile_only=compile_only)


def _check_a8w8_op(x, w, x_scale, w_scale, bias, *, out_dtype, out):
    _check_a8w8(x, w, x_scale, w_scale, bias, out_dtype, out)
    return _batched_shape(x, w)


def _execute_a8w8(x, w, x_scale, w_scale, bias, *, config, y):
    _check_config(config)
    _run_a8w8(x, w, x_scale, w_scale, bias, config, y)


BATCHED_A8W8 = Op("batched_gemm_a8w8", "Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias", 5,
                  _check_a8w8_op, _execute_a8w8, default_out_dtype=lambda x, out: resolve_out_dtype(None, out),
                  output_shape=_batched_shape)


def batched_gemm_a8w8(x, w, x_scale, w_scale, bias=None, *, out_dtype=None, out=None, config=None):
    """y[b] = (x[b] @ w[b].T) * x_scale[b] * w_scale[b] + bias[b], int8 or fp8, in one kernel launch.

    Args:
      x: (B, M, K) int8, or fp8 in the target's E4M3 format (float8_e4m3fn on H100/H200 and MI355X,
         float8_e4m3fnuz on MI300X); any strides.
      w: (B, N, K), same dtype as x.
      x_scale: (B, M, 1) or (B, M) float32, per token of each entry.
      w_scale: (B, 1, N) or (B, N) float32, per output channel of each entry.
      bias: optional (B, N) or (N,) (shared), bf16 / fp16 / fp32, added after the scales.
      out_dtype: bf16, fp16 or fp32; None (default): out's dtype if `out` is given, else bf16.
      out: optional preallocated (B, M, N) tensor of out_dtype.
      config: optional dict overriding the table (BATCHED_A8W8.json for fp8, BATCHED_A8W8_INT8.json
        for int8); NUM_KSPLIT must be 1.

    int8 accumulates exactly in int32 (K <= 131071); fp8 in fp32, promoted out of the tensor cores'
    reduced-precision accumulator every K block (kernels/triton/_mainloop.py), as gemm_a8w8.
    Returns (B, M, N). B, M or N == 0: empty; K == 0: bias (or zeros) in every row.
    """
    return BATCHED_A8W8.call(x, w, x_scale, w_scale, bias, out_dtype=out_dtype, out=out, config=config)


def compile_for_a8w8(x, w, x_scale, w_scale, config: dict, bias=None, out_dtype=torch.bfloat16):
    """Compile (no launch) what batched_gemm_a8w8(..., config=config) would run (tuner warm-up)."""
    B, M, N, _K = _check_a8w8(x, w, x_scale, w_scale, bias, out_dtype)
    cfg = C.config_to_str(config)
    _check_config(cfg)
    _run_a8w8(x, w, x_scale, w_scale, bias, cfg, torch.empty((B, M, N), dtype=out_dtype, device=x.device),
              compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of the shipped BATCHED_* tables: bf16 (a16w16), the target's fp8 and int8 (a8w8);
    "tma": true configs compile both the TMA kernel and the pointer kernel the op falls back to, and
    "backend": "gluon" buckets (sm_90) also the Gluon batched ping-pong (with the dense presets, bf16
    and fp32 output: kernels/gluon/hopper_pingpong_batched.py `isa_cases`)."""
    for table_op, dtype in ((OP_A16W16, "bf16"), (TABLE_OP_A8W8["fp8"], "fp8"), (TABLE_OP_A8W8["int8"], "int8")):
        yield from H.table_cases(table_op, archs, dtype, ISA_OP)
    if "sm_90" in archs:
        from ..kernels.gluon import hopper_pingpong_batched

        yield from hopper_pingpong_batched.isa_cases(archs, op=ISA_OP)


def isa_spec(case):
    if case["path"].startswith("gluon-"):
        from ..kernels.gluon import hopper_pingpong_batched

        return hopper_pingpong_batched.isa_spec(case)
    return H.table_spec(case)
