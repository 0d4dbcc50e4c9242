"""gemm_split_cat and gemm_a8w8_blockscale_split_cat: a GEMM whose output is split per head and
concatenated with y by the kernel's store (DeepSeek MLA's kv_b_proj; kernels/triton/gemm_split_cat.py).

    c  = x @ w.T (+ bias)   viewed as (M, D, S1 + S2), N = D * (S1 + S2), D = y.shape[1]
    c1 = cat(c[..., :S1], y, dim=-1)    (M, D, S1 + S3)    fresh contiguous (or out[0])
    c2 = c[..., S1:]                    (M, D, S2)         fresh contiguous (or out[1]), not a view

What a user writes in torch instead (the bench's vendor reference):
    c = torch.matmul(x, w.T).view(M, D, S1 + S2); c1 = torch.cat([c[..., :S1], y], -1); c2 = c[..., S1:]
(there c2 stays a strided view of c; here it is its own contiguous tensor, at no extra cost:
the kernel writes every element of c once either way).

Four torch.library custom ops with fakes (functional + `_out` for each public op), from two `Op`s of two
outputs (ops/_registry.py: checks once per call signature, call plans, the eager path without the dispatcher):
  gemmkit::gemm_split_cat, gemmkit::gemm_split_cat_out
  gemmkit::gemm_a8w8_blockscale_split_cat, gemmkit::gemm_a8w8_blockscale_split_cat_out

Validation reuses the dense ops' (gemm_a16w16 / gemm_a8w8_blockscale `_check_inputs`); only the split-cat
arguments are new here. The kernels' host code (TMA or pointer, the TMA store, constexprs, grid, launch,
static specs) is kernels/triton/split_cat.py, built on kernels/triton/dense.py's constexprs and bounds.
No split-K (N is wide for the shapes this op is for): a config with NUM_KSPLIT > 1 is a ValueError.
"""
from __future__ import annotations


import torch

from . import _common as C
from . import dispatch as D
from ._registry import Op
from ..kernels.triton import dense as G
from ..kernels.triton import split_cat as H
# The Triton tier's host code (kernels/triton/split_cat.py), re-exported where callers have always found it.
from ..kernels.triton.split_cat import (ISA_SPLIT, smem_bound, split_constexprs,  # noqa: F401
                                        static_spec, store_mode_for, tma_store_mode)
# (module attributes of gemmkit.ops are the public functions, so import the pieces by name)
from .gemm_a8w8_blockscale import _block_shape as _bs_block_shape
from .gemm_a8w8_blockscale import _check_inputs as _bs_check_inputs
from .gemm_a16w16 import _check_inputs as _a16_check_inputs
from .gemm_a8w8 import check_fp8_flavour

OP16 = "a16w16_split_cat"  # config tables A16W16_SPLIT_CAT.json
OP8 = "a8w8_blockscale_split_cat"  # A8W8_BLOCKSCALE_SPLIT_CAT.json
ISA_OP = "split_cat"  # gemmkit isa --op split_cat (both ops)


# ----------------------------------------------------------------------------- validation

def _check_split(S1, S2):
    for name, v in (("S1", S1), ("S2", S2)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
    if S1 + S2 < 1:
        raise ValueError(f"S1, S2: expected S1 + S2 >= 1, got S1={S1}, S2={S2}")


def _check_split_cat(M, N, y, S1, S2, out_dtype, out):
    """y (M, D, S3) of out_dtype with N = D * (S1 + S2); out None or a pair (c1, c2). Returns (D, S3)."""
    _check_split(S1, S2)
    C.check_tensor("y", y, ndim=3)
    D, S3 = y.shape[1], y.shape[2]
    if y.shape[0] != M:
        raise ValueError(f"y: expected shape ({M}, D, S3) (M = x.shape[0] = {M}), got {tuple(y.shape)}")
    if N != D * (S1 + S2):
        raise ValueError(f"w: expected N = D * (S1 + S2) = {D} * {S1 + S2} = {D * (S1 + S2)} rows "
                         f"(D = y.shape[1]), got N = {N}")
    if y.dtype != out_dtype:
        raise TypeError(f"y: expected dtype {out_dtype} (out_dtype: c1 = cat(c[..., :S1], y)), got {y.dtype}")
    if out is None:
        return D, S3
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"out: expected a pair (c1, c2) of tensors, got {type(out).__name__}")
    for name, t, want in (("out[0]", out[0], (M, D, S1 + S3)), ("out[1]", out[1], (M, D, S2))):
        C.check_tensor(name, t)
        if tuple(t.shape) != want:
            raise ValueError(f"{name}: expected shape {want}, got {tuple(t.shape)}")
        if t.dtype != out_dtype:
            raise TypeError(f"{name}: expected dtype {out_dtype} (out_dtype), got {t.dtype}")
        C.check_no_overlap(name, t)
    C.check_out_disjoint("out[1]", out[1], **{"out[0]": out[0]})
    return D, S3


def _check_inputs16(x, w, y, S1, S2, bias, out_dtype, out=None):
    C.check_tensor("x", x, dtypes=C.FLOAT16_DTYPES, ndim=2)
    N, K = _a16_check_inputs(x, w, bias, "none", out_dtype)
    D, S3 = _check_split_cat(x.shape[0], N, y, S1, S2, out_dtype, out)
    outs = {} if out is None else {"out[0]": out[0], "out[1]": out[1]}
    C.check_same_device(x=x, w=w, y=y, bias=bias, **outs)
    for name, t in outs.items():
        C.check_out_disjoint(name, t, x=x, w=w, y=y, bias=bias)
    return x.shape[0], N, K, D, S3


def _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, out_dtype, out=None):
    M, N, K = _bs_check_inputs(x, w, x_scale, w_scale, block_n, block_k, out_dtype)
    D, S3 = _check_split_cat(M, N, y, S1, S2, out_dtype, out)
    outs = {} if out is None else {"out[0]": out[0], "out[1]": out[1]}
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, y=y, **outs)
    for name, t in outs.items():
        C.check_out_disjoint(name, t, x=x, w=w, x_scale=x_scale, w_scale=w_scale, y=y)
    return M, N, K, D, S3


def _new_outputs(x, M, D, S1, S2, S3, out_dtype):
    return (torch.empty((M, D, S1 + S3), dtype=out_dtype, device=x.device),
            torch.empty((M, D, S2), dtype=out_dtype, device=x.device))


# ----------------------------------------------------------------------------- launch

def _launch(x2, w, bias, y, c1, c2, S1, S2, cfg, target, scaling, compile_only=False):
    """The kernel ops/dispatch.split_cat chooses (its config rules first), on the Triton tier
    (kernels/triton/split_cat.launch)."""
    choice = D.split_cat(cfg, target, x2, w, c1)
    H.launch(x2, w, bias, y, c1, c2, S1, S2, cfg, target, scaling, compile_only=compile_only,
             tma=choice.path == "tma")


def _empty_k(y, bias, c1, c2, S1, M, D):
    """K == 0: c is the empty sum (+ bias)."""
    c = (bias.float() if bias is not None else torch.zeros(D * (c1.shape[2] - y.shape[2] + c2.shape[2]),
                                                            device=y.device)).view(1, D, -1).expand(M, D, -1)
    c1[..., :S1].copy_(c[..., :S1])
    c1[..., S1:].copy_(y)
    c2.copy_(c[..., S1:])


def _run(x, w, bias, y, S1, S2, config, c1, c2, table_op, scaling=G.NO_SCALING, check_fp8=False,
         compile_only=False):
    M, K = x.shape
    N = w.shape[0]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:
        _empty_k(y, bias, c1, c2, S1, M, y.shape[1])
        return
    target = C.target_for(x.device)
    if check_fp8:
        check_fp8_flavour(x, target)
    cfg, _source = C.resolve_config(table_op, config, target, M, N, K)
    if scaling.mode == "block":  # derived: a K step never straddles two scale blocks (gemm_a8w8_blockscale)
        cfg["BLOCK_SIZE_K"] = min(cfg["BLOCK_SIZE_K"], scaling.block_k)
    _launch(G.matrix_operand(x), G.matrix_operand(w), bias.contiguous() if bias is not None else None, y, c1, c2,
            S1, S2, cfg, target, scaling, compile_only=compile_only)


# ----------------------------------------------------------------------------- gemm_split_cat (bf16 / fp16)

def _check16(x, w, y, S1, S2, bias, *, out_dtype, out):
    """The op's checks (Op: eager, custom ops and fakes alike); the outputs' shapes."""
    M, _N, _K, D, S3 = _check_inputs16(x, w, y, S1, S2, bias, out_dtype, out)
    return (M, D, S1 + S3), (M, D, S2)


def _execute16(x, w, y_in, S1, S2, bias, *, config, y):
    c1, c2 = y
    _run(x, w, bias, y_in, S1, S2, config, c1, c2, OP16)


def _split_cat_shapes(x, w, y, S1, S2, *args):
    return (x.shape[0], y.shape[1], S1 + y.shape[2]), (x.shape[0], y.shape[1], S2)


def _pair_dtype(out, default):
    """out_dtype=None: the dtype of out[0] when `out` is a pair of tensors, else `default`."""
    if isinstance(out, (tuple, list)) and len(out) == 2 and isinstance(out[0], torch.Tensor):
        return out[0].dtype
    return default


SPLIT_CAT = Op("gemm_split_cat", "Tensor x, Tensor w, Tensor y, SymInt S1, SymInt S2, Tensor? bias", 4, _check16,
               _execute16, default_out_dtype=lambda x, out: _pair_dtype(out, getattr(x, "dtype", None)),
               output_shape=_split_cat_shapes, outputs=("c1", "c2"), legacy_schema=True)


def gemm_split_cat(x, w, y, S1, S2, bias=None, *, out_dtype=None, out=None, config=None):
    """(c1, c2): c = x @ w.T (+ bias) seen as (M, D, S1 + S2); c1 = cat(c[..., :S1], y, -1), c2 = c[..., S1:].

    Args:
      x: (M, K) bf16 or fp16.
      w: (N, K), same dtype, N = D * (S1 + S2) (row d * (S1 + S2) + s of w makes column s of head d).
      y: (M, D, S3) of out_dtype, any strides (e.g. k_pe (M, 1, S3).expand(M, D, S3)); D and S3 come from it.
      S1, S2: ints >= 0, S1 + S2 >= 1: the columns of each head that go to c1 and to c2.
      bias: optional (N,), same dtype as x, added to c before the split.
      out_dtype: bf16, fp16 or fp32; None: out's dtype if `out` is given, else x.dtype.
      out: optional pair (c1, c2) of preallocated tensors, any strides; written and returned.
      config: optional dict overriding gemmkit/configs/<arch>/A16W16_SPLIT_CAT.json (NUM_KSPLIT must be 1).

    Returns (c1 (M, D, S1 + S3), c2 (M, D, S2)), both contiguous when allocated here.
    M == 0 or D == 0: empty; K == 0: c = bias (or zeros).
    """
    return SPLIT_CAT.call(x, w, y, S1, S2, bias, out_dtype=out_dtype, out=out, config=config)


# ----------------------------------------------------------------------------- gemm_a8w8_blockscale_split_cat

def _scaling(x_scale, w_scale, bn, bk):
    return G.Scaling("block", x_scale, w_scale, bn, bk)


def _check8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, *, out_dtype, out):
    M, _N, _K, D, S3 = _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, out_dtype, out)
    return (M, D, S1 + S3), (M, D, S2)


def _execute8(x, w, x_scale, w_scale, y_in, S1, S2, block_n, block_k, *, config, y):
    c1, c2 = y
    _run(x, w, None, y_in, S1, S2, config, c1, c2, OP8, _scaling(x_scale, w_scale, block_n, block_k), True)


def _bs_split_cat_shapes(x, w, x_scale, w_scale, y, S1, S2, *args):
    return _split_cat_shapes(x, w, y, S1, S2)


# fp8 x and w are not checked for requires_grad (as before this op moved onto Op): the scales and y are.
BS_SPLIT_CAT = Op("gemm_a8w8_blockscale_split_cat", "Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor y, "
                  "SymInt S1, SymInt S2, SymInt block_n, SymInt block_k", 5, _check8, _execute8,
                  default_out_dtype=lambda x, out: _pair_dtype(out, torch.bfloat16),
                  output_shape=_bs_split_cat_shapes, outputs=("c1", "c2"), grad_checked=("x_scale", "w_scale", "y"),
                  legacy_schema=True)


def gemm_a8w8_blockscale_split_cat(x, w, x_scale, w_scale, y, S1, S2, *, block_shape=(128, 128), out_dtype=None,
                                   out=None, config=None):
    """gemm_split_cat for FP8 operands with DeepSeek-V3 block scales (the math of gemm_a8w8_blockscale).

    Args:
      x, w, x_scale, w_scale, block_shape: as gemm_a8w8_blockscale (x (M, K), w (N, K) fp8 E4M3 of
         the target; x_scale (M, ceil(K / bk)), w_scale (ceil(N / bn), ceil(K / bk)) float32).
      y, S1, S2: as gemm_split_cat: y (M, D, S3) of out_dtype, N = D * (S1 + S2).
      out_dtype: bf16, fp16 or fp32; None: out's dtype if `out` is given, else bf16.
      out: optional pair (c1, c2), any strides.
      config: optional dict overriding A8W8_BLOCKSCALE_SPLIT_CAT.json (BLOCK_SIZE_K is capped at bk).

    Returns (c1 (M, D, S1 + S3), c2 (M, D, S2)).
    """
    bn, bk = _bs_block_shape(block_shape)
    return BS_SPLIT_CAT.call(x, w, x_scale, w_scale, y, S1, S2, bn, bk, out_dtype=out_dtype, out=out, config=config)


# ----------------------------------------------------------------------------- tuner warm-up

def compile_for(x, w, y, S1, S2, config: dict, out=None):
    """Compile (no launch) what gemm_split_cat(x, w, y, S1, S2, config=config, out=out) would run."""
    out_dtype = out[0].dtype if out is not None else y.dtype
    M, _N, _K, D, S3 = _check_inputs16(x, w, y, S1, S2, None, out_dtype, out)
    c1, c2 = out if out is not None else _new_outputs(x, M, D, S1, S2, S3, out_dtype)
    _run(x, w, None, y, S1, S2, C.config_to_str(config), c1, c2, OP16, compile_only=True)


def compile_for_blockscale(x, w, x_scale, w_scale, y, S1, S2, config: dict, block_shape=(128, 128), out=None):
    bn, bk = _bs_block_shape(block_shape)
    out_dtype = out[0].dtype if out is not None else y.dtype
    M, _N, _K, D, S3 = _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, bn, bk, out_dtype, out)
    c1, c2 = out if out is not None else _new_outputs(x, M, D, S1, S2, S3, out_dtype)
    _run(x, w, None, y, S1, S2, C.config_to_str(config), c1, c2, OP8, _scaling(x_scale, w_scale, bn, bk), True,
         compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of both shipped tables (A16W16_SPLIT_CAT bf16, A8W8_BLOCKSCALE_SPLIT_CAT fp8) for its arch;
    sm_90 "tma" configs compile the TMA kernel (with the store the DeepSeek split gives it) and the pointer
    kernel the op falls back to (kernels/triton/split_cat.table_cases)."""
    yield from H.table_cases(OP16, archs, "bf16", ISA_OP)
    yield from H.table_cases(OP8, archs, "fp8", ISA_OP, block_k=128)


def isa_spec(case):
    return H.table_spec(case, block_scaled=case["table_op"] == OP8)
