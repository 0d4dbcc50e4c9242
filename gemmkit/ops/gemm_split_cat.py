"""gemm_split_cat and gemm_a8w8_blockscale_split_cat: a GEMM whose output is split per head and
concatenated with y by the kernel's store (DeepSeek MLA's kv_b_proj; kernels/triton/gemm_split_cat.py).

    c  = x @ w.T (+ bias)   viewed as (M, D, S1 + S2), N = D * (S1 + S2), D = y.shape[1]
    c1 = cat(c[..., :S1], y, dim=-1)    (M, D, S1 + S3)    fresh contiguous (or out[0])
    c2 = c[..., S1:]                    (M, D, S2)         fresh contiguous (or out[1]), not a view

What a user writes in torch instead (the bench's vendor reference):
    c = torch.matmul(x, w.T).view(M, D, S1 + S2); c1 = torch.cat([c[..., :S1], y], -1); c2 = c[..., S1:]
(there c2 stays a strided view of c; here it is its own contiguous tensor, at no extra cost:
the kernel writes every element of c once either way).

Four torch.library custom ops with fakes (functional + `_out` for each public op):
  gemmkit::gemm_split_cat, gemmkit::gemm_split_cat_out
  gemmkit::gemm_a8w8_blockscale_split_cat, gemmkit::gemm_a8w8_blockscale_split_cat_out

Validation reuses the dense ops' (gemm_a16w16 / gemm_a8w8_blockscale `_check_inputs`), the
constexprs and feasibility checks are kernels/triton/dense.py's; only the split-cat arguments are new here.
No split-K (N is wide for the shapes this op is for): a config with NUM_KSPLIT > 1 is a ValueError.
"""
from __future__ import annotations


import torch

from ..kernels.triton._schedule import persistent_grid
from ..kernels.triton.gemm_split_cat import gemm_split_cat_kernel, gemm_split_cat_tma_kernel
from .. import callplan as CP
from . import _common as C
from .. import launcher as L
from ..kernels.triton import dense as G
# (module attributes of gemmkit.ops are the public functions, so import the pieces by name)
from .gemm_a8w8_blockscale import _block_shape as _bs_block_shape
from .gemm_a8w8_blockscale import _check_inputs as _bs_check_inputs
from .gemm_a16w16 import _check_inputs as _a16_check_inputs
from .gemm_a8w8 import check_fp8_flavour, resolve_out_dtype

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


def _outs_disjoint(out, **inputs):
    """A replayed call's address-dependent checks (callplan.py): out[0], out[1] against the inputs and each other."""
    C.check_out_disjoint("out[1]", out[1], **{"out[0]": out[0]})
    for name, t in (("out[0]", out[0]), ("out[1]", out[1])):
        C.check_out_disjoint(name, t, **inputs)


def _replayed(key, inputs, out, S1, S2, out_dtype, **named):
    """(c1, c2) of a call whose signature has a plan (callplan.py), or None: the full path runs. `named`: the
    inputs by name (x and y among them)."""
    plan = CP.lookup(key)
    if not CP.repeatable(plan):
        return None
    if out is None:
        x, y = named["x"], named["y"]
        c1, c2 = _new_outputs(x, x.shape[0], y.shape[1], S1, S2, y.shape[2], out_dtype)
    else:
        (c1, c2), _ = out, _outs_disjoint(out, **named)
    plan.replay(inputs + (c1, c2))
    return c1, c2


def _new_outputs(x, M, D, S1, S2, S3, out_dtype):
    return (torch.empty((M, D, S1 + S3), dtype=out_dtype, device=x.device),
            torch.empty((M, D, S2), dtype=out_dtype, device=x.device))


# ----------------------------------------------------------------------------- path and launch

def _as_2d(t):
    """(M, D, E) -> (M, D * E) view, or None when the strides do not allow it."""
    try:
        return t.view(t.shape[0], -1)
    except RuntimeError:
        return None


def store_mode_for(block_n: int, S1: int, S2: int) -> str:
    """The TMA kernel's store for a tile width and split, before the outputs' strides are looked at."""
    if S1 == 0 or S2 == 0:
        return "pointer"
    if S1 % block_n == 0 and S2 % block_n == 0:
        return "tma_part"
    if block_n == S1 + S2 and S1 == S2:
        return "tma_head"
    return "pointer"


def tma_store_mode(block_n: int, S1: int, S2: int, c1, c2) -> str:
    """How the TMA kernel stores the GEMM part (see the kernel's docstring): "tma_part" when
    BLOCK_N divides S1 and S2, "tma_head" when BLOCK_N == S1 + S2 == 2 * S1, and the outputs are
    TMA-aligned 2-D views; otherwise "pointer"."""
    mode = store_mode_for(block_n, S1, S2)
    if mode == "pointer":
        return mode
    c1_2d, c2_2d = _as_2d(c1), _as_2d(c2)
    if c1_2d is None or c2_2d is None or not C.tma_compatible(c1_2d, c2_2d):
        return "pointer"
    return mode


def smem_bound(cfg, target, in_bytes, out_bytes, tma):
    """Shared memory bound of the split-cat kernels: the dense kernels' (kernels/triton/dense.smem_bytes), whose
    output staging tile covers the TMA stores and the pointer stores' layout conversion alike."""
    return G.smem_bytes(cfg, target, in_bytes, out_bytes, tma)


def split_constexprs(S1, S2, S3):
    return dict(S1=S1, S2=S2, S3=S3, S3P=G.next_pow2(max(S3, 1)))


def _launch(x2, w, bias, y, c1, c2, S1, S2, cfg, target, scaling, compile_only=False):
    M, K = x2.shape
    N = w.shape[0]
    S3 = y.shape[2]
    if cfg["NUM_KSPLIT"] != 1:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']}; the split-cat GEMMs have no split-K "
                         "path (expected 1)")
    if cfg.get("backend", "triton") != "triton":
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}; the split-cat GEMMs run on the Triton tier "
                         "only (expected 'triton')")
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    num_tiles = G.cdiv(M, bm) * G.cdiv(N, bn)
    has_bias = bias is not None
    bias_arg = bias if has_bias else c1  # never read when HAS_BIAS is False
    xs = scaling.x_scale if scaling.x_scale is not None else c1  # never read when SCALE == "none"
    wsc = scaling.w_scale if scaling.w_scale is not None else c1
    scale_strides = (xs.stride(0), xs.stride(1), wsc.stride(0), wsc.stride(1)) if scaling.mode == "block" \
        else (0, 0, 0, 0)
    strides = (*y.stride(), *c1.stride(), *c2.stride())
    opts = C.compiler_options(cfg, target)
    wide = C.int64_offsets(x2, w, y, c1, c2, bias, *((xs, wsc) if scaling.mode == "block" else ()))
    common = dict(has_bias=has_bias, activation="none", in_dtype=x2.dtype, scale=scaling.mode,
                  scale_bn=scaling.block_n, scale_bk=scaling.block_k, int64_offsets=wide)
    split = split_constexprs(S1, S2, S3)
    in_bytes, out_bytes = x2.element_size(), c1.element_size()
    tma = False
    if cfg["tma"] and target.is_nvidia and C.tma_compatible(x2, w):
        try:
            G.check_feasible(cfg, target, in_bytes, out_bytes, tma=True)
            tma = True
        except ValueError:
            pass
    if tma:
        from triton.tools.tensor_descriptor import TensorDescriptor

        store = tma_store_mode(bn, S1, S2, c1, c2)
        box_n = bn if store == "tma_part" else S1
        descs = (None, None) if store == "pointer" else \
            (TensorDescriptor.from_tensor(_as_2d(c1), [bm, box_n]), TensorDescriptor.from_tensor(_as_2d(c2), [bm, box_n]))
        ce = dict(G.constexprs(cfg, target, tma=True, even_k=False, **common), **split, STORE=store)
        grid = (persistent_grid(num_tiles, target.num_cus, target.num_xcds) if cfg["persistent"] else num_tiles,)
        kernel = gemm_split_cat_tma_kernel
        L.launcher(kernel, grid, compile_only)(
            TensorDescriptor.from_tensor(x2, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk]), *descs,
            xs, wsc, bias_arg, y, c1, c2, M, N, K, *scale_strides, *strides, **ce, **opts)
    else:
        G.check_feasible(cfg, target, in_bytes, out_bytes, tma=False)
        cfg = G.pointer_config(cfg, scaling.mode)
        ce = dict(G.constexprs(cfg, target, tma=False, even_k=K % bk == 0, **common), **split)
        grid = (persistent_grid(num_tiles, target.num_cus, target.num_xcds) if cfg["persistent"] else num_tiles,)
        kernel = gemm_split_cat_kernel
        L.launcher(kernel, grid, compile_only)(
            x2, w, xs, wsc, bias_arg, y, c1, c2, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
            *scale_strides, *strides, **ce, **opts)


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

@torch.library.custom_op("gemmkit::gemm_split_cat", mutates_args=())
def _split_cat_op(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, S1: int, S2: int, bias: torch.Tensor | None,
                  out_dtype: torch.dtype, config: str) -> tuple[torch.Tensor, torch.Tensor]:
    M, _N, _K, D, S3 = _check_inputs16(x, w, y, S1, S2, bias, out_dtype)
    c1, c2 = _new_outputs(x, M, D, S1, S2, S3, out_dtype)
    _run(x, w, bias, y, S1, S2, config, c1, c2, OP16)
    return c1, c2


@_split_cat_op.register_fake
def _(x, w, y, S1, S2, bias, out_dtype, config):
    M, _N, _K, D, S3 = _check_inputs16(x, w, y, S1, S2, bias, out_dtype)
    return x.new_empty((M, D, S1 + S3), dtype=out_dtype), x.new_empty((M, D, S2), dtype=out_dtype)


@torch.library.custom_op("gemmkit::gemm_split_cat_out", mutates_args=("c1", "c2"))
def _split_cat_out_op(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, S1: int, S2: int,
                      bias: torch.Tensor | None, config: str, c1: torch.Tensor, c2: torch.Tensor) -> None:
    _check_inputs16(x, w, y, S1, S2, bias, c1.dtype, (c1, c2))
    _run(x, w, bias, y, S1, S2, config, c1, c2, OP16)


@_split_cat_out_op.register_fake
def _(x, w, y, S1, S2, bias, config, c1, c2):
    _check_inputs16(x, w, y, S1, S2, bias, c1.dtype, (c1, c2))


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
    if out_dtype is None:
        out_dtype = out[0].dtype if isinstance(out, (tuple, list)) and len(out) == 2 and \
            isinstance(out[0], torch.Tensor) else getattr(x, "dtype", None)
    pair = tuple(out) if isinstance(out, (tuple, list)) and len(out) == 2 else (None, None)
    key = CP.key(OP16, (x, w, y, bias) + pair, out is None, S1, S2, out_dtype, config, C.target_key(x))
    done = _replayed(key, (x, w, y, bias), out, S1, S2, out_dtype, x=x, w=w, y=y, bias=bias)
    if done is not None:
        return done
    _check_inputs16(x, w, y, S1, S2, bias, out_dtype, out)
    C.check_no_grad("gemm_split_cat", x=x, w=w, y=y, bias=bias)
    cfg = C.config_to_str(config)
    if C.eager_call(x, w, y, bias, *(out or ())):
        c1, c2 = out if out is not None else _new_outputs(x, x.shape[0], y.shape[1], S1, S2, y.shape[2], out_dtype)
        with CP.record(CP.record_key(key, CP.lookup(key)), (x, w, y, bias, c1, c2)):
            _run(x, w, bias, y, S1, S2, cfg, c1, c2, OP16)
        return c1, c2
    if out is not None:
        torch.ops.gemmkit.gemm_split_cat_out(x, w, y, S1, S2, bias, cfg, out[0], out[1])
        return out[0], out[1]
    return torch.ops.gemmkit.gemm_split_cat(x, w, y, S1, S2, bias, out_dtype, cfg)


# ----------------------------------------------------------------------------- gemm_a8w8_blockscale_split_cat

def _scaling(x_scale, w_scale, bn, bk):
    return G.Scaling("block", x_scale, w_scale, bn, bk)


@torch.library.custom_op("gemmkit::gemm_a8w8_blockscale_split_cat", mutates_args=())
def _bs_split_cat_op(x: torch.Tensor, w: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor,
                     y: torch.Tensor, S1: int, S2: int, block_n: int, block_k: int, out_dtype: torch.dtype,
                     config: str) -> tuple[torch.Tensor, torch.Tensor]:
    M, _N, _K, D, S3 = _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, out_dtype)
    c1, c2 = _new_outputs(x, M, D, S1, S2, S3, out_dtype)
    _run(x, w, None, y, S1, S2, config, c1, c2, OP8, _scaling(x_scale, w_scale, block_n, block_k), True)
    return c1, c2


@_bs_split_cat_op.register_fake
def _(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, out_dtype, config):
    M, _N, _K, D, S3 = _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, out_dtype)
    return x.new_empty((M, D, S1 + S3), dtype=out_dtype), x.new_empty((M, D, S2), dtype=out_dtype)


@torch.library.custom_op("gemmkit::gemm_a8w8_blockscale_split_cat_out", mutates_args=("c1", "c2"))
def _bs_split_cat_out_op(x: torch.Tensor, w: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor,
                         y: torch.Tensor, S1: int, S2: int, block_n: int, block_k: int, config: str,
                         c1: torch.Tensor, c2: torch.Tensor) -> None:
    _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, c1.dtype, (c1, c2))
    _run(x, w, None, y, S1, S2, config, c1, c2, OP8, _scaling(x_scale, w_scale, block_n, block_k), True)


@_bs_split_cat_out_op.register_fake
def _(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, config, c1, c2):
    _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, block_n, block_k, c1.dtype, (c1, c2))


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
    out_dtype = resolve_out_dtype(out_dtype, out[0] if isinstance(out, (tuple, list)) and len(out) == 2 else None)
    pair = tuple(out) if isinstance(out, (tuple, list)) and len(out) == 2 else (None, None)
    key = CP.key(OP8, (x, w, x_scale, w_scale, y) + pair, out is None, S1, S2, bn, bk, out_dtype, config,
                 C.target_key(x))
    done = _replayed(key, (x, w, x_scale, w_scale, y), out, S1, S2, out_dtype, x=x, w=w, x_scale=x_scale,
                     w_scale=w_scale, y=y)
    if done is not None:
        return done
    _check_inputs8(x, w, x_scale, w_scale, y, S1, S2, bn, bk, out_dtype, out)
    C.check_no_grad("gemm_a8w8_blockscale_split_cat", x_scale=x_scale, w_scale=w_scale, y=y)
    cfg = C.config_to_str(config)
    if C.eager_call(x, w, x_scale, w_scale, y, *(out or ())):
        c1, c2 = out if out is not None else _new_outputs(x, x.shape[0], y.shape[1], S1, S2, y.shape[2], out_dtype)
        with CP.record(CP.record_key(key, CP.lookup(key)), (x, w, x_scale, w_scale, y, c1, c2)):
            _run(x, w, None, y, S1, S2, cfg, c1, c2, OP8, _scaling(x_scale, w_scale, bn, bk), True)
        return c1, c2
    if out is not None:
        torch.ops.gemmkit.gemm_a8w8_blockscale_split_cat_out(x, w, x_scale, w_scale, y, S1, S2, bn, bk, cfg,
                                                             out[0], out[1])
        return out[0], out[1]
    return torch.ops.gemmkit.gemm_a8w8_blockscale_split_cat(x, w, x_scale, w_scale, y, S1, S2, bn, bk, out_dtype,
                                                            cfg)


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

# The shapes the static compiles specialise for: DeepSeek-V3 kv_b_proj (S1 = qk_nope, S2 = v_head, S3 = qk_rope).
ISA_SPLIT = (128, 128, 64)


def isa_cases(archs):
    """Every bucket of both shipped tables (A16W16_SPLIT_CAT bf16, A8W8_BLOCKSCALE_SPLIT_CAT fp8) for its arch;
    sm_90 "tma" configs compile the TMA kernel (with the store the DeepSeek split gives it) and the pointer
    kernel the op falls back to."""
    for table_op, dtypes in ((OP16, ("bf16",)), (OP8, ("fp8",))):
        for case in G.table_cases(table_op, archs, dtypes=dtypes):
            tma = case["path"] == "tma"
            cfg = dict(case["config"])
            if table_op == OP8:
                cfg["BLOCK_SIZE_K"] = min(cfg["BLOCK_SIZE_K"], 128)
            if tma:
                cfg["STORE"] = store_mode_for(cfg["BLOCK_SIZE_N"], ISA_SPLIT[0], ISA_SPLIT[1])
            yield dict(case, op=ISA_OP, table_op=table_op, config=cfg,
                       kernel="gemm_split_cat_tma_kernel" if tma else "gemm_split_cat_kernel")


def static_spec(cfg, target, *, dtype=torch.bfloat16, out_dtype=torch.bfloat16, tma=False, has_bias=True,
                scale="none", split=ISA_SPLIT):
    """(kernel, signature, constexprs, divisible, options) of a split-cat launch for `target`, as the JIT
    specialises the common case: unit last strides constexpr, pointers, N and other strides divisible by 16."""
    S1, S2, S3 = split
    ce = G.constexprs(cfg, target, tma=tma, has_bias=has_bias, activation="none", even_k=True, in_dtype=dtype,
                      scale=scale, scale_bn=128 if scale == "block" else 1, scale_bk=128 if scale == "block" else 1)
    ce.update(split_constexprs(S1, S2, S3))
    t_in, t_out = G.TL_DTYPE[dtype], G.TL_DTYPE[out_dtype]
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    tail = {"xs_ptr": "*fp32", "wsc_ptr": "*fp32", "bias_ptr": f"*{t_in if dtype in C.FLOAT16_DTYPES else 'bf16'}",
            "y_ptr": f"*{t_out}", "c1_ptr": f"*{t_out}", "c2_ptr": f"*{t_out}", "M": "i32", "N": "i32", "K": "i32"}
    scale_strides = {"stride_xsm": "i32", "stride_xsk": "i32", "stride_wsn": "i32", "stride_wsk": "i32"}
    out_strides = {"stride_ym": "i32", "stride_yd": "i32", "stride_ys": "constexpr", "stride_c1m": "i32",
                   "stride_c1d": "i32", "stride_c1s": "constexpr", "stride_c2m": "i32", "stride_c2d": "i32",
                   "stride_c2s": "constexpr"}
    ce.update(stride_ys=1, stride_c1s=1, stride_c2s=1)
    if tma:
        store = cfg.get("STORE", "pointer")
        ce["STORE"] = store
        box_n = bn if store == "tma_part" else S1
        out_desc = f"tensordesc<{t_out}[{bm}, {box_n}]>" if store != "pointer" else "constexpr"
        sig = {"x_desc": f"tensordesc<{t_in}[{bm}, {bk}]>", "w_desc": f"tensordesc<{t_in}[{bn}, {bk}]>",
               "c1_desc": out_desc, "c2_desc": out_desc, **tail, **scale_strides, **out_strides}
        if store == "pointer":
            ce.update(c1_desc=None, c2_desc=None)
        kernel = gemm_split_cat_tma_kernel
    else:
        sig = {"x_ptr": f"*{t_in}", "w_ptr": f"*{t_in}", **tail, "stride_xm": "i32", "stride_xk": "constexpr",
               "stride_wn": "i32", "stride_wk": "constexpr", **scale_strides, **out_strides}
        ce.update(stride_xk=1, stride_wk=1)
        kernel = gemm_split_cat_kernel
    # signature in the kernel's parameter order
    names = kernel.arg_names
    sig = {k: sig.get(k, "constexpr") for k in names}
    # N too (D * (S1 + S2) = 32768 at kv_b_proj): the store mask's (n < N) then keeps 16-byte stores.
    divisible = [k for k, v in sig.items() if v.startswith("*") or k == "N" or (v == "i32" and k.startswith("stride_")
                                                                      and not k.startswith("stride_xs")
                                                                      and not k.startswith("stride_ws"))]
    return kernel, sig, ce, divisible, C.compiler_options(cfg, target)


def isa_spec(case):
    from .. import arch as _arch
    from ..kernels.triton import gemm_split_cat as k

    target = _arch.ARCHS[case["arch"]]
    tma = case["path"] == "tma"
    block = case["table_op"] == OP8
    cfg = case["config"] if tma else G.pointer_config(case["config"], "block" if block else "none")
    dtype = C.fp8_dtype(target) if block else torch.bfloat16
    kernel, sig, ce, div, opts = static_spec(cfg, target, dtype=dtype, tma=tma, has_bias=not block,
                                             scale="block" if block else "none")
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=k.TMA_PROMISES if tma else k.PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bound(cfg, target, dtype.itemsize, 2, tma))
