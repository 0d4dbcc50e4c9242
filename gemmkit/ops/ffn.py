"""Gated feed-forward (Llama-style SwiGLU): gemm_a16w16_gated and ffn_gated, bf16 / fp16.

    x          (..., K)   K = hidden size
    w_gate_up  (2I, K)    nn.Linear layout, the I gate rows FIRST, then the I up rows
                          (torch.cat([gate_proj.weight, up_proj.weight]), as vLLM / SGLang fuse them)
    w_down     (K, I)     nn.Linear layout (down_proj.weight)

    gemm_a16w16_gated:  h = act(x @ Wg.T) * (x @ Wu.T)             (..., I)   Wg = w_gate_up[:I], Wu = w_gate_up[I:]
    ffn_gated:          y = gemm_a16w16_gated(x, w_gate_up) @ w_down.T   (..., K)

How: the gated GEMM (kernels/triton/gemm_gated.py; where the config model or a config names the Gluon tier,
the Gluon gated tile of kernels/gluon/hopper_coop.py or hopper_pingpong.py: ops/dispatch.gated) computes gate and
up for the same I columns in one tile and applies act(g) * u in its epilogue, so the only intermediate is
h (M, I), in x's dtype (as the torch sequence holds it); the down projection is
gemm_a16w16's kernel (kernels/triton/dense.launch) with the A16W16 tables. At small M both GEMMs
take split-K configs from their tables (the gated one reduces gate and up partials
before the nonlinearity: gated_splitk_reduce_kernel). The gated kernels' host code (feasibility, TMA or
pointer, constexprs, grid, launch, static specs) is kernels/triton/gated.py; this file validates,
resolves configs, allocates h and dispatches.

Custom ops, each with a fake for torch.compile:
  gemmkit::gemm_a16w16_gated, gemmkit::gemm_a16w16_gated_out
  gemmkit::ffn_gated,         gemmkit::ffn_gated_out
Config tables: configs/<arch>/A16W16_GATED.json (+ A16W16_GATED-N=<I>-K=<K>.json), where
BLOCK_SIZE_N counts columns of h (the tile reads 2 * BLOCK_SIZE_N rows of w_gate_up).
"""
from __future__ import annotations

import json

import torch

from .. import configs as _configs
from . import _common as C
from . import dispatch as D
from ._registry import Op
from ..kernels.triton import dense as G
from ..kernels.triton import gated as H
# The Triton tier's host code (kernels/triton/gated.py), re-exported where the tuner and tests find it.
from ..kernels.triton.gated import (KERNEL_NAMES, check_feasible, constexprs,  # noqa: F401
                                    reduce_static_spec, reduce_tile, smem_bytes, static_spec)

OP = "a16w16_gated"
DOWN_OP = "a16w16"
GATED_ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "relu")


# ----------------------------------------------------------------------------- validation

def _normalize_activation(activation):
    if not isinstance(activation, str) or activation not in GATED_ACTIVATIONS:
        raise ValueError(f"activation: expected one of {GATED_ACTIVATIONS}, got {activation!r}")
    return activation


def resolve_out_dtype(out_dtype, x, out):
    """out_dtype=None: out's dtype when `out` is given, else x's dtype."""
    if out_dtype is None:
        return out.dtype if isinstance(out, torch.Tensor) else getattr(x, "dtype", None)
    return out_dtype


def _check_out(out, want_shape, out_dtype):
    if out is None:
        return
    C.check_tensor("out", out)
    if tuple(out.shape) != want_shape:
        raise ValueError(f"out: expected shape {want_shape}, got {tuple(out.shape)}")
    if out.dtype != out_dtype:
        raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    C.check_no_overlap("out", out)
    try:
        out.view(out.shape[:-1].numel(), want_shape[-1])  # not -1: ambiguous for an empty out
    except RuntimeError:
        raise ValueError(f"out: expected a tensor viewable as (M, {want_shape[-1]}), got strides {out.stride()}") from None


def _check_gate_up(x, w_gate_up):
    """x (..., K) and w_gate_up (2I, K): returns (I, K)."""
    C.check_tensor("x", x, dtypes=C.FLOAT16_DTYPES, min_ndim=1)
    C.check_tensor("w_gate_up", w_gate_up, ndim=2)
    if w_gate_up.dtype != x.dtype:
        raise TypeError(f"w_gate_up: expected dtype {x.dtype} (the dtype of x), got {w_gate_up.dtype}")
    K = x.shape[-1]
    if w_gate_up.shape[1] != K or w_gate_up.shape[0] % 2:
        raise ValueError(f"w_gate_up: expected shape (2*I, {K}) (gate rows then up rows; K={K} from x), "
                         f"got {tuple(w_gate_up.shape)}")
    return w_gate_up.shape[0] // 2, K


def _check_gated(x, w_gate_up, activation, out_dtype, out=None):
    I, K = _check_gate_up(x, w_gate_up)
    _normalize_activation(activation)
    C.check_out_dtype(out_dtype)
    _check_out(out, tuple(x.shape[:-1]) + (I,), out_dtype)
    C.check_same_device(x=x, w_gate_up=w_gate_up, out=out)
    C.check_out_disjoint("out", out, x=x, w_gate_up=w_gate_up)
    return I, K


def _check_ffn(x, w_gate_up, w_down, activation, out_dtype, out=None):
    I, K = _check_gate_up(x, w_gate_up)
    C.check_tensor("w_down", w_down, ndim=2)
    if w_down.dtype != x.dtype:
        raise TypeError(f"w_down: expected dtype {x.dtype} (the dtype of x), got {w_down.dtype}")
    if tuple(w_down.shape) != (K, I):
        raise ValueError(f"w_down: expected shape ({K}, {I}) (K = x's last dim, I = w_gate_up.shape[0] // 2), "
                         f"got {tuple(w_down.shape)}")
    _normalize_activation(activation)
    C.check_out_dtype(out_dtype)
    _check_out(out, tuple(x.shape), out_dtype)
    C.check_same_device(x=x, w_gate_up=w_gate_up, w_down=w_down, out=out)
    C.check_out_disjoint("out", out, x=x, w_gate_up=w_gate_up, w_down=w_down)
    return I, K


# ----------------------------------------------------------------------------- configs

def ffn_config_to_str(config) -> str:
    """ffn_gated's config= : None, a gated-GEMM config dict, or a pair (gate_up config, down config)
    where either may be None (= the table). Crosses the custom-op boundary as JSON."""
    if config is None:
        return ""
    if isinstance(config, dict):
        config = (config, None)
    if not isinstance(config, (tuple, list)) or len(config) != 2:
        raise ValueError(f"config: expected None, a dict, or a pair (gate_up config, down config), got {config!r}")
    pair = [None if c is None else _configs.validate_config(c, where=f"config[{i}]") for i, c in enumerate(config)]
    return json.dumps(pair, sort_keys=True)


def _split_ffn_config(config_str):
    if not config_str:
        return "", ""
    gate_up, down = json.loads(config_str)
    return tuple("" if c is None else json.dumps(c, sort_keys=True) for c in (gate_up, down))


# ----------------------------------------------------------------------------- launch

def launch_gated(x2, w, y, activation, cfg, target, compile_only=False):
    """The gated GEMM for one call: x2 (M, K), w (2I, K), y (M, I) 2-D views, on the kernel ops/dispatch.gated
    chooses. The Gluon gated tile (kernels/gluon/hopper_coop.launch_gated, hopper_pingpong.launch_gated) on the
    operands as given; where it fails to compile with the installed Triton, the Triton tier (dispatch.run_gluon). The
    Triton tier (kernels/triton/gated.launch): on a copy of x2 of whole boxes of rows where
    `choice.pad_m` says so (the kernel takes an x of more rows than y's; y's bounds drop the rows past M), on copies
    of x2 (and of w where its own rows are off: `choice.pad_k_w`) with rows of `choice.pad_k` elements (16-byte
    multiples, zeros after K) where TMA cannot address their rows; with `choice.config` (the ring the TMA kernel fits
    for h's dtype). Where h's rows are off 16 bytes (`choice.pitch_y`), into a workspace of 16-byte rows first."""
    choice = D.gated(cfg, target, x2, w, y, activation=activation)
    if choice.pitch_y:  # h's rows off 16 bytes: the call into a workspace of 16-byte rows, then h copied out of it
        D.run_in_workspace(choice, y, compile_only,
                           lambda ws: launch_gated(x2, w, ws, activation, cfg, target, compile_only))
        return
    if choice.path == "gluon":
        from ..kernels.gluon import hopper_coop, hopper_pingpong

        kernel = hopper_coop if choice.kernel == D.GLUON_COOP else hopper_pingpong
        D.run_gluon(choice, lambda: kernel.launch_gated(x2, w, y, activation, choice.config, target,
                                                        compile_only=compile_only),
                    lambda: launch_gated(x2, w, y, activation, cfg, target, compile_only))  # now passed over
        return
    if choice.kernel in (D.TRITON_ROWS, D.TRITON_ROWS_TMA):
        H.launch_rows(x2, w, y, activation, target, compile_only, tma=choice.kernel == D.TRITON_ROWS_TMA)
        return
    if choice.pad_m or choice.pad_k:
        from ..kernels.triton import pad

        x2 = pad.pad_rows(x2, choice.pad_k or x2.shape[1], compile_only, RP=choice.pad_m or None)
        if choice.pad_k and choice.pad_k_w:  # zeros after K: the kernel sums the copies' KP columns
            w = pad.pad_rows(w, choice.pad_k, compile_only)
    H.launch(x2, w, y, activation, choice.config, target, compile_only=compile_only, tma=choice.path == "tma")


def _gated_2d(x, w_gate_up, activation, config, h2, compile_only=False):
    """h2 (M, I) = act(x Wg.T) * (x Wu.T) for x flattened to (M, K)."""
    M, (I, K) = h2.shape[0], (w_gate_up.shape[0] // 2, w_gate_up.shape[1])
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or I == 0:
        return
    if K == 0:  # empty sums: act(0) * 0 = 0
        h2.zero_()
        return
    target = C.target_for(x.device)
    cfg, _source = C.resolve_config(OP, config, target, M, I, K)
    launch_gated(G.matrix_operand(x.reshape(M, K)), G.matrix_operand(w_gate_up), h2, activation, cfg, target,
                 compile_only=compile_only)


def _run_gated(x, w_gate_up, activation, config, y_full, compile_only=False):
    I = w_gate_up.shape[0] // 2
    M = x.shape[:-1].numel()
    _gated_2d(x, w_gate_up, activation, config, y_full.view(M, I), compile_only)


def _run_ffn(x, w_gate_up, w_down, activation, config, y_full, compile_only=False):
    I, K = w_gate_up.shape[0] // 2, w_gate_up.shape[1]
    M = x.shape[:-1].numel()
    y = y_full.view(M, K)
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or K == 0:
        return
    if I == 0:  # h is (M, 0): the down projection's sums are empty
        y.zero_()
        return
    cfg_gate_up, cfg_down = _split_ffn_config(config)
    # h: the only intermediate, (M, I) in x's dtype (what the torch sequence holds between the GEMMs).
    h = torch.empty((M, I), dtype=x.dtype, device=x.device)
    _gated_2d(x, w_gate_up, activation, cfg_gate_up, h, compile_only)
    target = C.target_for(x.device)
    cfg, _source = C.resolve_config(DOWN_OP, cfg_down, target, M, K, I)
    from .gemm_a16w16 import launch as launch_a16w16  # the down projection is gemm_a16w16, backend included

    launch_a16w16(h, G.matrix_operand(w_down), None, y, "none", cfg, target, compile_only=compile_only)


# ----------------------------------------------------------------------------- custom ops

def _check_gated_op(x, w_gate_up, activation, *, out_dtype, out):
    I, _K = _check_gated(x, w_gate_up, activation, out_dtype, out)
    return tuple(x.shape[:-1]) + (I,)


def _execute_gated(x, w_gate_up, activation, *, config, y):
    _run_gated(x, w_gate_up, activation, config, y)


def _check_ffn_op(x, w_gate_up, w_down, activation, *, out_dtype, out):
    _check_ffn(x, w_gate_up, w_down, activation, out_dtype, out)
    return tuple(x.shape)


def _execute_ffn(x, w_gate_up, w_down, activation, *, config, y):
    _run_ffn(x, w_gate_up, w_down, activation, config, y)


def _default_out_dtype(x, out):
    return resolve_out_dtype(None, x, out)


GATED = Op("gemm_a16w16_gated", "Tensor x, Tensor w_gate_up, str activation", 2, _check_gated_op, _execute_gated,
           default_out_dtype=_default_out_dtype,
           output_shape=lambda x, w_gate_up, activation: tuple(x.shape[:-1]) + (w_gate_up.shape[0] // 2,))
FFN = Op("ffn_gated", "Tensor x, Tensor w_gate_up, Tensor w_down, str activation", 3, _check_ffn_op, _execute_ffn,
         default_out_dtype=_default_out_dtype, output_shape=lambda x, *args: tuple(x.shape),
         config_to_str=lambda config: ffn_config_to_str(config))


# ----------------------------------------------------------------------------- public entries

def gemm_a16w16_gated(x, w_gate_up, *, activation="silu", out_dtype=None, out=None, config=None):
    """h = act(x @ w_gate_up[:I].T) * (x @ w_gate_up[I:].T): the first half of a gated FFN, fused.

    Args:
      x: (..., K) bf16 or fp16, flattened to (M, K) like nn.Linear.
      w_gate_up: (2*I, K), same dtype: the I gate rows first, then the I up rows
         (torch.cat([gate_proj.weight, up_proj.weight])).
      activation: "silu" (SwiGLU, default), "gelu" (GeGLU), "gelu_tanh" or "relu", applied to the gate.
      out_dtype: bf16, fp16 or fp32; None: out's dtype if `out` is given, else x's dtype.
      out: optional preallocated (..., I) tensor of out_dtype, viewable as (M, I).
      config: optional dict overriding configs/<arch>/A16W16_GATED*.json (BLOCK_SIZE_N counts h columns).

    Returns (..., I). No (M, 2I) intermediate is written. M or I == 0: empty; K == 0: zeros.
    No backward: inputs that require grad (grad mode on) raise NotImplementedError.
    """
    return GATED.call(x, w_gate_up, activation, out_dtype=out_dtype, out=out, config=config)


def ffn_gated(x, w_gate_up, w_down, *, activation="silu", out_dtype=None, out=None, config=None):
    """y = (act(x @ Wg.T) * (x @ Wu.T)) @ w_down.T: a Llama-style gated feed-forward (SwiGLU by default).

    Args:
      x: (..., K) bf16 or fp16 (K = hidden size), flattened to (M, K).
      w_gate_up: (2*I, K), same dtype: gate rows [0, I), then up rows [I, 2I) (see gemm_a16w16_gated).
      w_down: (K, I), same dtype (nn.Linear layout of down_proj).
      activation: "silu" (default), "gelu", "gelu_tanh" or "relu".
      out_dtype: bf16, fp16 or fp32 for y; None: out's dtype if `out` is given, else x's dtype.
         The intermediate h (M, I) is always x's dtype.
      out: optional preallocated (..., K) tensor of out_dtype.
      config: None (tables), a dict for the gated GEMM (A16W16_GATED keys), or a pair
         (gate_up config, down config), either None for its table (the down GEMM uses A16W16's).

    Two kernels (plus a split-K reduce each where the table splits): the gated GEMM writes h,
    gemm_a16w16's kernel computes y = h @ w_down.T. M or K == 0: empty; I == 0: zeros.
    """
    return FFN.call(x, w_gate_up, w_down, activation, out_dtype=out_dtype, out=out, config=config)


def compile_for(x, w_gate_up, config: dict, activation="silu", out_dtype=None):
    """Compile (no launch) the kernels gemm_a16w16_gated(x, w_gate_up, config=config) would run
    (the tuner's parallel warm-up)."""
    out_dtype = out_dtype or x.dtype
    I, _K = _check_gated(x, w_gate_up, activation, out_dtype)
    y = torch.empty(tuple(x.shape[:-1]) + (I,), dtype=out_dtype, device=x.device)
    _run_gated(x, w_gate_up, activation, C.config_to_str(config), y, compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped A16W16_GATED table (TMA configs: both paths), bf16, silu;
    plus the gated split-K reduce once per target (kernels/triton/gated.table_cases)."""
    yield from H.table_cases(OP, archs)


def isa_spec(case):
    return H.table_spec(case)
