"""Batched GEMMs: y[b] = x[b] @ w[b].T (+ scales, bias, activation) for b in [0, B), one launch.

    batched_gemm_a16w16(x (B, M, K), w (B, N, K), bias (B, N) | (N,) | None)     bf16 / fp16
    batched_gemm_a8w8(x, w, x_scale (B, M, 1), w_scale (B, 1, N), bias)          int8 / fp8

Custom ops with fakes (as gemm_a16w16 / gemm_a8w8):

  gemmkit::batched_gemm_a16w16   gemmkit::batched_gemm_a16w16_out
  gemmkit::batched_gemm_a8w8     gemmkit::batched_gemm_a8w8_out

Path per call (same config either way), as for the dense ops (kernels/triton/dense.py, gemm_a16w16.py):
  Gluon           batched_gemm_a16w16 with a "backend": "gluon" config (sm_90 tables, where it
                  wins): the ping-pong (num_warps 4) or cooperative (num_warps 8) batched kernel,
                  when `gluon_unsupported` says it can run: sm_90, x, w, y meet TMA's rules as
                  3-D tensors (kernels/gluon/hopper_pingpong_batched.py); else the Triton tier below
                  runs the same config (its tiles, "tma", "persistent")
  TMA kernel      sm_90, config "tma": true, and x, w, y meet TMA's rules as 3-D tensors
                  (kernels/triton/batched_gemm_tma.py)
  pointer kernel  everything else: AMD, odd K / N, broadcast or interleaved batch strides,
                  the interpreter (kernels/triton/batched_gemm.py)

Reused from the dense ops: `constexprs` (ACC_INT, PROMOTE_K, ...), `check_feasible` /
`smem_bytes`, compiler options, `persistent_grid`, 8-bit validation helpers. Tables:
`BATCHED_A16W16.json`, `BATCHED_A8W8.json` (fp8), `BATCHED_A8W8_INT8.json`, looked up by
the per-entry M (the tile shape follows the matrices, not the batch count).
"""
from __future__ import annotations

import json

import torch

from ..kernels.triton._schedule import persistent_grid
from ..kernels.triton.batched_gemm import batched_gemm_kernel
from ..kernels.triton.batched_gemm_tma import batched_gemm_tma_kernel, tma_compatible_3d
from ..configs import SPLIT_N
from . import _common as C
from ._registry import Op
from .. import launcher as L
from .gemm_a16w16 import _normalize_activation  # one home for the activation argument
from ..kernels.triton import dense as G
from .gemm_a8w8 import INT8_MAX_K, check_fp8_flavour, resolve_out_dtype

OP_A16W16 = "batched_a16w16"
OP_A8W8 = "batched_a8w8"
ISA_OP = "batched_gemm"  # `gemmkit isa --op batched_gemm`: both ops' tables (one provider, gemmkit/isa/report.py)
TABLE_OP_A8W8 = {"fp8": "batched_a8w8", "int8": "batched_a8w8_int8"}
BIAS_DTYPES_A8W8 = (torch.bfloat16, torch.float16, torch.float32)
_DENSE_ONLY = ("SPLIT_K", "SCALE_BN", "SCALE_BK")  # dense-kernel constexprs the batched kernels do not take


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

def choose_path(cfg, target, x, w, y) -> str:
    """"tma" or "pointer" (ValueError if the config fits neither), as kernels/triton/dense.choose_path for 3-D operands."""
    in_bytes, out_bytes = x.element_size(), y.element_size()
    if cfg["tma"] and target.is_nvidia and all(tma_compatible_3d(t) for t in (x, w, y)):
        try:
            G.check_feasible(cfg, target, in_bytes, out_bytes, tma=True)
            return "tma"
        except ValueError:
            pass
    G.check_feasible(cfg, target, in_bytes, out_bytes, tma=False)
    return "pointer"


def constexprs(cfg, target, *, tma, has_bias, activation, even_k, in_dtype, scale, int64_offsets=False):
    """The dense kernels' constexprs (kernels/triton/dense.constexprs: ACC_INT, PROMOTE_K, INT64_OFFSETS, ...) minus split-K /
    block scale; the TMA kernel has no int32 offset product, so no INT64_OFFSETS either
    (kernels/triton/batched_gemm_tma.py)."""
    ce = G.constexprs(cfg, target, tma=tma, has_bias=has_bias, activation=activation, even_k=even_k,
                      in_dtype=in_dtype, scale=scale, int64_offsets=int64_offsets)
    for key in _DENSE_ONLY + (("INT64_OFFSETS",) if tma else ()):
        ce.pop(key)
    return ce


def _descriptor(t, block):
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, R, Cn = t.shape
    stride_b = t.stride(0) if B > 1 else R * t.stride(1)  # a size-1 dim's stride is arbitrary in torch
    return TensorDescriptor(t, [B, R, Cn], [stride_b, t.stride(1), 1], [1, *block])


def _operand(t):
    """A 3-D operand the pointer kernel reads well: unit stride on K or on the rows, else a copy."""
    return t if t.stride(2) == 1 or t.stride(1) == 1 else t.contiguous()


def gluon_unsupported(x, w, y, cfg, target, scaling=G.NO_SCALING) -> str | None:
    """Why a "backend": "gluon" config runs on the Triton tier for this call (None: it runs on Gluon).
    The Triton kernels then run the same config (its tiles, and its "tma" / "persistent" keys), as
    gemm_a16w16's `gluon_unsupported`: Gluon does not run in the interpreter, has no 8-bit batched
    kernel, needs more than one wave of tiles to gain anything (measured), and needs sm_90 and x, w, y
    that meet TMA's rules as 3-D tensors (a broadcast, stride-0 or interleaved batch dim, K % 8 != 0,
    an unaligned base or row: kernels/gluon/hopper_pingpong_batched.py `unsupported`)."""
    if C.interpreting():
        return "the Triton interpreter does not run Gluon kernels"
    if scaling.mode != "none":
        return "the Gluon batched kernel is 16-bit only (batched_gemm_a8w8 runs the Triton tier)"
    B, M, N = y.shape
    work = B * G.cdiv(M, cfg["BLOCK_SIZE_M"]) * G.cdiv(N, cfg["BLOCK_SIZE_N"])
    if target is not None and work <= target.num_cus:
        # One wave: every CTA has at most one tile, so nothing runs under an epilogue (ping-pong: the
        # second consumer idles); the Triton kernel with the same tiles starts sooner (H200, 8 x 512^3, 128 tiles:
        # Gluon 0.84-0.92x torch.bmm over 8 configs, Triton 128x128x64 0.94x; docs/kernels/batched_gemm.md).
        return f"one wave of work ({work} tiles for {target.num_cus} SMs): nothing to overlap"
    from ..kernels.gluon import hopper_pingpong_batched

    return hopper_pingpong_batched.unsupported(x, w, y, target)


def launch(x, w, bias, y, activation, cfg, target, scaling=G.NO_SCALING, compile_only=False):
    """x (B, M, K), w (B, N, K), y (B, M, N); bias (B, N) / (N,) with unit stride on N, or None;
    scaling "none" or "rowcol" with x_scale (B, M) and w_scale (B, N), unit stride on M / N.
    A "backend": "gluon" config runs the Gluon batched ping-pong where `gluon_unsupported` allows."""
    if cfg.get("backend") == "gluon" and gluon_unsupported(x, w, y, cfg, target, scaling) is None:
        from ..kernels.gluon import hopper_pingpong_batched

        hopper_pingpong_batched.launch(x, w, bias, y, activation, cfg, target, compile_only=compile_only)
        return
    B, M, K = x.shape
    N = w.shape[1]
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    if cfg["NUM_KSPLIT"] != 1:
        raise ValueError("config: key 'NUM_KSPLIT' must be 1 for the batched GEMMs (no split-K)")
    num_work = B * G.cdiv(M, bm) * G.cdiv(N, bn)
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    has_bias = bias is not None
    bias_arg, stride_bb = (bias, bias.stride(0) if bias.dim() == 2 else 0) if has_bias else (y, 0)
    rowcol = scaling.mode == "rowcol"
    xs, wsc = (scaling.x_scale, scaling.w_scale) if rowcol else (y, y)  # never read when SCALE == "none"
    scale_strides = (xs.stride(0), wsc.stride(0)) if rowcol else (0, 0)
    opts = C.compiler_options(cfg, target)
    common = dict(has_bias=has_bias, activation=activation, in_dtype=x.dtype, scale=scaling.mode)
    if choose_path(cfg, target, x, w, y) == "tma":
        ce = constexprs(cfg, target, tma=True, even_k=False, **common)
        kernel = batched_gemm_tma_kernel
        L.launcher(kernel, grid, compile_only)(
            _descriptor(x, [bm, bk]), _descriptor(w, [bn, bk]), _descriptor(y, [bm, bn]), xs, wsc, bias_arg,
            B, M, N, K, *scale_strides, stride_bb, **ce, **opts)
    else:
        x, w = _operand(x), _operand(w)
        ce = constexprs(cfg, target, tma=False, even_k=K % bk == 0,
                        int64_offsets=C.int64_offsets(x, w, y, bias, *((xs, wsc) if rowcol else ())), **common)
        kernel = batched_gemm_kernel
        L.launcher(kernel, grid, compile_only)(
            x, w, xs, wsc, bias_arg, y, B, M, N, K, *x.stride(), *w.stride(), *y.stride(), *scale_strides,
            stride_bb, **ce, **opts)


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
        for case in G.table_cases(table_op, archs, dtypes=(dtype,)):
            kernel = "batched_gemm_tma_kernel" if case["path"] == "tma" else "batched_gemm_kernel"
            yield dict(case, kernel=kernel, op=ISA_OP)
    if "sm_90" in archs:
        from ..kernels.gluon import hopper_pingpong_batched

        yield from hopper_pingpong_batched.isa_cases(archs, op=ISA_OP)


def static_spec(cfg, target, *, dtype=torch.bfloat16, tma=None, has_bias=True, scale="none", int64_offsets=False):
    """(kernel, signature, constexprs, divisible, options) of a batched launch as the JIT specialises
    the common aligned case: unit stride on K and N, pointers and row / batch strides divisible by 16
    (`int64_offsets`: the pointer kernel's variant for a call whose tensors span 2**31 elements or more)."""
    out_dtype = dtype if dtype in C.FLOAT16_DTYPES else torch.bfloat16
    tma = bool(cfg.get("tma")) and target.is_nvidia if tma is None else tma
    ce = constexprs(cfg, target, tma=tma, has_bias=has_bias, activation="none", even_k=True, in_dtype=dtype,
                    scale=scale, int64_offsets=int64_offsets)
    t_in, t_out = G.TL_DTYPE[dtype], G.TL_DTYPE[out_dtype]
    t_bias = t_in if dtype in C.FLOAT16_DTYPES else "bf16"
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    batch_strides = {"stride_xsb": "i32", "stride_wsb": "i32", "stride_bb": "i32"}
    if tma:
        sig = {"x_desc": f"tensordesc<{t_in}[1, {bm}, {bk}]>", "w_desc": f"tensordesc<{t_in}[1, {bn}, {bk}]>",
               "y_desc": f"tensordesc<{t_out}[1, {bm}, {bn}]>", "xs_ptr": "*fp32", "wsc_ptr": "*fp32",
               "bias_ptr": f"*{t_bias}", "B": "i32", "M": "i32", "N": "i32", "K": "i32", **batch_strides}
        kernel = batched_gemm_tma_kernel
    else:
        sig = {"x_ptr": f"*{t_in}", "w_ptr": f"*{t_in}", "xs_ptr": "*fp32", "wsc_ptr": "*fp32",
               "bias_ptr": f"*{t_bias}", "y_ptr": f"*{t_out}", "B": "i32", "M": "i32", "N": "i32", "K": "i32",
               "stride_xb": "i32", "stride_xm": "i32", "stride_xk": "constexpr",
               "stride_wb": "i32", "stride_wn": "i32", "stride_wk": "constexpr",
               "stride_yb": "i32", "stride_ym": "i32", "stride_yn": "constexpr", **batch_strides}
        ce.update(stride_xk=1, stride_wk=1, stride_yn=1)
        kernel = batched_gemm_kernel
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items() if v.startswith("*") or
                 k in ("stride_xb", "stride_xm", "stride_wb", "stride_wn", "stride_yb", "stride_ym")]
    return kernel, sig, ce, divisible, C.compiler_options(cfg, target)


def isa_spec(case):
    from .. import arch as _arch
    from ..kernels.triton import batched_gemm as k_ptr

    if case["path"].startswith("gluon-"):
        from ..kernels.gluon import hopper_pingpong_batched

        return hopper_pingpong_batched.isa_spec(case)
    from ..kernels.triton import batched_gemm_tma as k_tma

    target = _arch.ARCHS[case["arch"]]
    cfg, tma = case["config"], case["path"] == "tma"
    dtype = G._case_dtype(case["dtype"], target)
    scale = "none" if case["dtype"] == "bf16" else "rowcol"
    kernel, sig, ce, div, opts = static_spec(cfg, target, dtype=dtype, tma=tma, scale=scale)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=(k_tma if tma else k_ptr).PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=G.smem_bytes(cfg, target, dtype.itemsize, 2, tma))
