"""Gated feed-forward (Llama-style SwiGLU): gemm_a16w16_gated and ffn_gated, bf16 / fp16.

    x          (..., K)   K = hidden size
    w_gate_up  (2I, K)    nn.Linear layout, the I gate rows FIRST, then the I up rows
                          (torch.cat([gate_proj.weight, up_proj.weight]), as vLLM / SGLang fuse them)
    w_down     (K, I)     nn.Linear layout (down_proj.weight)

    gemm_a16w16_gated:  h = act(x @ Wg.T) * (x @ Wu.T)             (..., I)   Wg = w_gate_up[:I], Wu = w_gate_up[I:]
    ffn_gated:          y = gemm_a16w16_gated(x, w_gate_up) @ w_down.T   (..., K)

How: the gated GEMM (kernels/triton/gemm_gated.py) computes gate and up for the same I
columns in one tile and applies act(g) * u in its epilogue, so the only intermediate is
h (M, I), in x's dtype (as the torch sequence holds it); the down projection is
gemm_a16w16's kernel (kernels/triton/dense.launch) with the A16W16 tables. At small M both GEMMs
take split-K configs from their tables (the gated one reduces gate and up partials
before the nonlinearity: gated_splitk_reduce_kernel).

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
from ..kernels.triton._schedule import persistent_grid
from ..kernels.triton.gemm_gated import gated_splitk_reduce_kernel, gemm_gated_kernel, gemm_gated_tma_kernel
from . import _common as C
from ._registry import Op
from .. import launcher as L
from ..kernels.triton import dense as G

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


# ----------------------------------------------------------------------------- feasibility and launch

def smem_bytes(cfg: dict, target, in_bytes: int, out_bytes: int, tma: bool) -> int:
    """Shared memory bound of a gated config: the dense bound (kernels/triton/dense.smem_bytes) of a tile with
    2 * BLOCK_SIZE_N w rows per K step (gate + up), whose TMA output staging tile is only
    BLOCK_M x BLOCK_N (h), not BLOCK_M x 2 * BLOCK_N."""
    dense = G.smem_bytes(dict(cfg, BLOCK_SIZE_N=2 * cfg["BLOCK_SIZE_N"]), target, in_bytes, out_bytes, tma)
    return dense - (cfg["BLOCK_SIZE_M"] * cfg["BLOCK_SIZE_N"] * out_bytes if tma else 0)


def check_feasible(cfg: dict, target, in_bytes: int = 2, out_bytes: int = 2, tma: bool = False):
    """Raise ValueError (naming the key) if the gated `cfg` cannot run on `target` on the given path."""
    if tma:
        G.check_feasible(dict(cfg, num_stages=1), target, in_bytes, out_bytes, tma=True)  # TMA boxes, target
    need = smem_bytes(cfg, target, in_bytes, out_bytes, tma)
    if need > target.shared_mem_bytes:
        raise ValueError(
            f"config: BLOCK_SIZE_M/N/K = {cfg['BLOCK_SIZE_M']}/{cfg['BLOCK_SIZE_N']}/{cfg['BLOCK_SIZE_K']} with "
            f"num_stages = {cfg['num_stages']} needs {need} bytes of shared memory for the gated tile (2 x "
            f"BLOCK_SIZE_N w rows){' (TMA path)' if tma else ''}; {target.name} ({target.arch}) allows "
            f"{target.shared_mem_bytes} per block")


def choose_path(cfg, target, x2, w, y) -> str:
    """"tma" when asked for, on NVIDIA, TMA-aligned and fitting; else "pointer" (or ValueError)."""
    in_bytes, out_bytes = x2.element_size(), y.element_size()
    if cfg["tma"] and target.is_nvidia and C.tma_compatible(x2, w, y):
        try:
            check_feasible(cfg, target, in_bytes, out_bytes, tma=True)
            return "tma"
        except ValueError:
            pass
    check_feasible(cfg, target, in_bytes, out_bytes, tma=False)
    return "pointer"


def constexprs(cfg: dict, target, *, tma: bool, activation: str, even_k: bool, int64_offsets: bool = False) -> dict:
    """The gated kernels' constexprs (one place for the launch and the static compile). `int64_offsets`
    (pointer kernel): the call's tensors span 2**31 elements or more (_common.int64_offsets); the TMA
    kernel has no int32 offset product and takes none."""
    c = dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
             GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds, ACTIVATION=activation,
             SPLIT_K=cfg["NUM_KSPLIT"])
    if not tma:
        c.update(EVEN_K=even_k, PERSISTENT=bool(cfg["persistent"]), INT64_OFFSETS=bool(int64_offsets))
    return c


def launch_gated(x2, w, y, activation, cfg, target, compile_only=False):
    """The gated GEMM for one call: x2 (M, K), w (2I, K), y (M, I) 2-D views."""
    M, K = x2.shape
    I = w.shape[0] // 2
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    split_k = cfg["NUM_KSPLIT"]
    if cfg.get("backend", "triton") != "triton":
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}; the gated GEMM runs on the Triton tier "
                         "only (expected 'triton')")
    num_work = G.cdiv(M, bm) * G.cdiv(I, bn) * split_k
    # Split-K partials: (split, M, 2I) fp32, [g | u] per split, reduced in order by the gated reduce.
    part = torch.empty((split_k, M, 2 * I), dtype=torch.float32, device=x2.device) if split_k > 1 else y
    opts = C.compiler_options(cfg, target)
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    if choose_path(cfg, target, x2, w, y) == "tma":
        from triton.tools.tensor_descriptor import TensorDescriptor

        ce = constexprs(cfg, target, tma=True, activation=activation, even_k=False)
        kernel = gemm_gated_tma_kernel
        L.launcher(kernel, grid, compile_only)(
            TensorDescriptor.from_tensor(x2, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk]),
            TensorDescriptor.from_tensor(y, [bm, bn]), part, M, I, K, **ce, **opts)
    else:
        ce = constexprs(cfg, target, tma=False, activation=activation, even_k=K % bk == 0,
                        int64_offsets=C.int64_offsets(x2, w, y, part if split_k > 1 else None))
        kernel = gemm_gated_kernel
        L.launcher(kernel, grid, compile_only)(
            x2, w, y, part, M, I, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
            **ce, **opts)
    if split_k > 1:
        rbm, rbn = reduce_tile(M, I)
        rgrid = (G.cdiv(M, rbm), G.cdiv(I, rbn))
        kernel = gated_splitk_reduce_kernel
        L.launcher(kernel, rgrid, compile_only)(
            part, y, M, I, M * 2 * I, y.stride(0), y.stride(1), SPLIT_K=split_k, BLOCK_M=rbm, BLOCK_N=rbn,
            ACTIVATION=activation, INT64_OFFSETS=C.int64_offsets(part, y), num_warps=G.REDUCE_WARPS)


def reduce_tile(M: int, I: int):
    """The gated reduce's (BLOCK_M, BLOCK_N): it holds two fp32 tiles (g and u) and loads 2 x SPLIT_K,
    so half the dense reduce's columns (kernels/triton/dense.reduce_tile) for the same registers per thread
    (32 x 128 spilled 8 bytes on sm_90 in the static compile; 32 x 64 does not)."""
    bm, bn = G.reduce_tile(M, I)
    return bm, max(1, bn // 2)


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

def static_spec(cfg: dict, target, *, dtype=torch.bfloat16, tma: bool | None = None, activation: str = "silu",
                even_k: bool = True):
    """(kernel, signature, constexprs, divisible, options) of the gated GEMM as the JIT specialises
    the common aligned case (unit K stride, 16-divisible pointers and row strides)."""
    tma = bool(cfg.get("tma")) and target.is_nvidia if tma is None else tma
    ce = constexprs(cfg, target, tma=tma, activation=activation, even_k=even_k)
    t = G.TL_DTYPE[dtype]
    if tma:
        bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
        sig = {"x_desc": f"tensordesc<{t}[{bm}, {bk}]>", "w_desc": f"tensordesc<{t}[{bn}, {bk}]>",
               "y_desc": f"tensordesc<{t}[{bm}, {bn}]>", "part_ptr": "*fp32", "M": "i32", "I": "i32", "K": "i32"}
        kernel = gemm_gated_tma_kernel
    else:
        sig = {"x_ptr": f"*{t}", "w_ptr": f"*{t}", "y_ptr": f"*{t}", "part_ptr": "*fp32",
               "M": "i32", "I": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr", "stride_wn": "i32", "stride_wk": "constexpr",
               "stride_ym": "i32", "stride_yn": "constexpr"}
        ce.update(stride_xk=1, stride_wk=1, stride_yn=1)
        kernel = gemm_gated_kernel
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items() if v.startswith("*") or k in ("stride_xm", "stride_wn", "stride_ym")]
    return kernel, sig, ce, divisible, C.compiler_options(cfg, target)


def reduce_static_spec(target, *, split_k: int = 4, dtype=torch.bfloat16, activation: str = "silu"):
    t = G.TL_DTYPE[dtype]
    bm, bn = reduce_tile(2**20, 2**20)
    sig = {"ws_ptr": "*fp32", "y_ptr": f"*{t}", "M": "i32", "I": "i32", "split_stride": "i32",
           "stride_ym": "i32", "stride_yn": "constexpr"}
    ce = dict(stride_yn=1, SPLIT_K=split_k, BLOCK_M=bm, BLOCK_N=bn, ACTIVATION=activation, INT64_OFFSETS=False)
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return gated_splitk_reduce_kernel, sig, ce, ["ws_ptr", "y_ptr", "stride_ym"], {"num_warps": G.REDUCE_WARPS}


KERNEL_NAMES = {"tma": "gemm_gated_tma_kernel", "pointer": "gemm_gated_kernel"}


def isa_cases(archs):
    """Every bucket of every shipped A16W16_GATED table (TMA configs: both paths), bf16, silu;
    plus the gated split-K reduce once per target."""
    for case in G.table_cases(OP, archs):
        yield dict(case, kernel=KERNEL_NAMES[case["path"]])
    rbm, rbn = reduce_tile(2**20, 2**20)
    for arch in archs:
        yield {"kernel": "gated_splitk_reduce_kernel", "op": OP, "arch": arch, "table": "-", "bucket": "-",
               "config": {"SPLIT_K": 4, "BLOCK_M": rbm, "BLOCK_N": rbn, "num_warps": G.REDUCE_WARPS},
               "path": "reduce"}


def isa_spec(case):
    from .. import arch as _arch
    from ..kernels.triton import gemm_gated as K

    target = _arch.ARCHS[case["arch"]]
    if case["path"] == "reduce":
        kernel, sig, ce, div, opts = reduce_static_spec(target, split_k=case["config"]["SPLIT_K"])
        return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                    promises=K.REDUCE_PROMISES, block=None, smem_bound=0)
    cfg, tma = case["config"], case["path"] == "tma"
    kernel, sig, ce, div, opts = static_spec(cfg, target, tma=tma)
    # `block` feeds the mma_k_steps metric: the MMA work of one K step is BM x (2 * BN) x BK.
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=K.TMA_PROMISES if tma else K.PROMISES,
                block=(cfg["BLOCK_SIZE_M"], 2 * cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bytes(cfg, target, 2, 2, tma))
