"""gemm_a16w16: y = act(x @ w.T + bias) for bf16 / fp16, the nn.Linear convention.

Public entry `gemm_a16w16` validates, then calls one of two torch.library
custom ops (each with a fake for torch.compile):

  gemmkit::gemm_a16w16      functional, returns a new tensor
  gemmkit::gemm_a16w16_out  writes into `out` (declared mutated), returns nothing

Path choice per call (same config either way):
  TMA kernel      sm_90, config "tma": true, and x, w, y meet TMA's alignment rules
  pointer kernel  everything else (AMD, unaligned K/N, odd strides, the interpreter)
"""
from __future__ import annotations

import functools

import torch

from .. import configs as _configs
from ..kernels.triton._epilogue import ACTIVATIONS
from ..kernels.triton._schedule import persistent_grid
from ..kernels.triton._splitk_reduce import splitk_reduce_kernel
from ..kernels.triton.gemm_a16w16 import gemm_a16w16_kernel
from ..kernels.triton.gemm_a16w16_tma import gemm_a16w16_tma_kernel
from . import _common as C

OP = "a16w16"
_TMA_MAX_BOX = 256  # elements per TMA box dimension

_TL_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}


# ----------------------------------------------------------------------------- validation

def _normalize_activation(activation):
    act = "none" if activation is None else activation
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise ValueError(f"activation: expected None or one of {ACTIVATIONS[1:]}, got {activation!r}")
    return act


def _check_inputs(x, w, bias, activation, out_dtype, out=None):
    C.check_tensor("x", x, dtypes=C.FLOAT16_DTYPES, min_ndim=1)
    C.check_tensor("w", w, ndim=2)
    if w.dtype != x.dtype:
        raise TypeError(f"w: expected dtype {x.dtype} (the dtype of x), got {w.dtype}")
    K = x.shape[-1]
    if w.shape[1] != K:
        raise ValueError(f"w: expected shape (N, {K}) to match x's last dim K={K}, got {tuple(w.shape)}")
    N = w.shape[0]
    if bias is not None:
        C.check_tensor("bias", bias, ndim=1)
        if bias.dtype != x.dtype:
            raise TypeError(f"bias: expected dtype {x.dtype} (the dtype of x), got {bias.dtype}")
        if bias.shape[0] != N:
            raise ValueError(f"bias: expected shape ({N},) (N = w.shape[0]), got {tuple(bias.shape)}")
    _normalize_activation(None if activation == "none" else activation)
    C.check_out_dtype(out_dtype)
    if out is not None:
        C.check_tensor("out", out)
        want = tuple(x.shape[:-1]) + (N,)
        if tuple(out.shape) != want:
            raise ValueError(f"out: expected shape {want}, got {tuple(out.shape)}")
        if out.dtype != out_dtype:
            raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    C.check_same_device(x=x, w=w, bias=bias, out=out)
    return N, K


# ----------------------------------------------------------------------------- launch parameters

def smem_bytes(cfg: dict, target, in_bytes: int, out_bytes: int, tma: bool) -> int:
    """Upper bound on the shared memory (LDS) a config needs on `target`.

    NVIDIA: the pipeliner keeps `num_stages` (x, w) tile pairs in shared memory;
    the TMA path also stages the output tile for its TMA store. AMD: the stream
    pipeliner keeps num_stages - 1 pairs in LDS (the newest K step waits in
    registers). Read off compiled kernels (Triton 3.6); the static-compile test
    checks that the bound holds for every shipped config.
    """
    stage = (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"] * in_bytes
    stages = cfg["num_stages"] if target.is_nvidia else max(1, cfg["num_stages"] - 1)
    # TMA: the output staging tile, plus ~0.5 KiB of mbarriers and alignment seen in compiled kernels.
    epilogue = cfg["BLOCK_SIZE_M"] * cfg["BLOCK_SIZE_N"] * out_bytes + 1024 if tma else 0
    return stages * stage + epilogue


def check_feasible(cfg: dict, target, in_bytes: int = 2, out_bytes: int = 2, tma: bool = False):
    """Raise ValueError (naming the key) if `cfg` cannot run on `target` on the given path."""
    if tma:
        if not target.is_nvidia:
            raise ValueError(f"config: key 'tma' needs an NVIDIA sm_90 target, not {target.arch}")
        for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"):
            if cfg[key] > _TMA_MAX_BOX:
                raise ValueError(f"config: key {key!r} = {cfg[key]} exceeds the TMA box limit of {_TMA_MAX_BOX}")
    need = smem_bytes(cfg, target, in_bytes, out_bytes, tma)
    if need > target.shared_mem_bytes:
        raise ValueError(
            f"config: BLOCK_SIZE_M/N/K = {cfg['BLOCK_SIZE_M']}/{cfg['BLOCK_SIZE_N']}/{cfg['BLOCK_SIZE_K']} with "
            f"num_stages = {cfg['num_stages']} needs {need} bytes of shared memory{' (TMA path)' if tma else ''}; "
            f"{target.name} ({target.arch}) allows {target.shared_mem_bytes} per block")


def choose_path(cfg: dict, target, x2, w, y) -> str:
    """"tma" or "pointer" for this call; ValueError if the config fits neither.

    TMA when the config asks for it, the target has it, the tensors meet its
    alignment rules and the output staging tile fits (an fp32 output doubles
    it); otherwise the pointer kernel with the same tiles.
    """
    in_bytes, out_bytes = x2.element_size(), y.element_size()
    if cfg["tma"] and target.is_nvidia and C.tma_compatible(x2, w, y):
        try:
            check_feasible(cfg, target, in_bytes, out_bytes, tma=True)
            return "tma"
        except ValueError:
            pass
    check_feasible(cfg, target, in_bytes, out_bytes, tma=False)
    return "pointer"


def constexprs(cfg: dict, target, *, tma: bool, has_bias: bool, activation: str, even_k: bool) -> dict:
    """The kernel's constexpr arguments, from the config and the target (one place for launch and static compile)."""
    c = dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
             GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds,
             HAS_BIAS=has_bias, ACTIVATION=activation, SPLIT_K=cfg["NUM_KSPLIT"])
    if not tma:
        c.update(EVEN_K=even_k, PERSISTENT=bool(cfg["persistent"]))
    return c


def static_spec(cfg: dict, target, *, dtype=torch.bfloat16, out_dtype=None, tma: bool | None = None,
                has_bias: bool = True, activation: str = "none", even_k: bool = True):
    """(kernel, signature, constexprs, divisible, options) to compile this op for `target` without a GPU.

    Describes the common aligned case as the JIT would specialise it: unit
    stride on K constexpr, pointers and row strides divisible by 16 (`divisible`).
    """
    out_dtype = out_dtype or dtype
    tma = bool(cfg.get("tma")) and target.is_nvidia if tma is None else tma
    ce = constexprs(cfg, target, tma=tma, has_bias=has_bias, activation=activation, even_k=even_k)
    t_in, t_out = _TL_DTYPE[dtype], _TL_DTYPE[out_dtype]
    if tma:
        bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
        sig = {"x_desc": f"tensordesc<{t_in}[{bm}, {bk}]>", "w_desc": f"tensordesc<{t_in}[{bn}, {bk}]>",
               "y_desc": f"tensordesc<{t_out}[{bm}, {bn}]>", "bias_ptr": f"*{t_in}", "ws_ptr": "*fp32",
               "M": "i32", "N": "i32", "K": "i32"}
        kernel = gemm_a16w16_tma_kernel
    else:
        sig = {"x_ptr": f"*{t_in}", "w_ptr": f"*{t_in}", "bias_ptr": f"*{t_in}", "y_ptr": f"*{t_out}",
               "ws_ptr": "*fp32",
               "M": "i32", "N": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr", "stride_wn": "i32", "stride_wk": "constexpr",
               "stride_ym": "i32", "stride_yn": "constexpr"}
        ce.update(stride_xk=1, stride_wk=1, stride_yn=1)  # the contiguous fast case Triton specialises
        kernel = gemm_a16w16_kernel
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items() if v.startswith("*") or k.startswith("stride_") and v == "i32"]
    return kernel, sig, ce, divisible, C.compiler_options(cfg, target)


# Split-K reduce tile: 32 x 128 fp32 = 16 KiB per split, read by 4 warps (16 B per thread per row
# chunk); shrunk to the problem for small M / N.
_REDUCE_BM, _REDUCE_BN, _REDUCE_WARPS = 32, 128, 4


def reduce_tile(M: int, N: int):
    return min(_REDUCE_BM, triton_next_pow2(M)), min(_REDUCE_BN, triton_next_pow2(N))


def reduce_static_spec(target, *, split_k: int = 4, dtype=torch.bfloat16, activation: str = "silu"):
    """(kernel, signature, constexprs, divisible, options) of the split-K reduce as `_launch` runs it
    for a large problem (full reduce tiles)."""
    t = _TL_DTYPE[dtype]
    bm, bn = reduce_tile(2**20, 2**20)
    sig = {"ws_ptr": "*fp32", "bias_ptr": f"*{t}", "y_ptr": f"*{t}", "M": "i32", "N": "i32", "split_stride": "i32",
           "stride_ym": "i32", "stride_yn": "constexpr"}
    ce = dict(stride_yn=1, SPLIT_K=split_k, BLOCK_M=bm, BLOCK_N=bn, HAS_BIAS=True, ACTIVATION=activation)
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return splitk_reduce_kernel, sig, ce, ["ws_ptr", "bias_ptr", "y_ptr", "stride_ym"], {"num_warps": _REDUCE_WARPS}


# ----------------------------------------------------------------------------- implementation

def _launch(x2, w, bias, y, activation, cfg, target, compile_only=False):
    """Launch (or, with compile_only, just compile: the tuner's parallel warm-up) for one call."""
    M, K = x2.shape
    N = w.shape[0]
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    split_k = cfg["NUM_KSPLIT"]
    num_work = triton_cdiv(M, bm) * triton_cdiv(N, bn) * split_k
    persistent = bool(cfg["persistent"])
    has_bias = bias is not None
    bias_arg = bias if has_bias else x2  # never read when HAS_BIAS is False
    # Split-K partial sums: (split, M, N) fp32, reduced in order by splitk_reduce_kernel.
    ws = torch.empty((split_k, M, N), dtype=torch.float32, device=x2.device) if split_k > 1 else y
    opts = C.compiler_options(cfg, target)
    # One program per work id (tile x split), or a persistent grid of one program per CU.
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if persistent else num_work,)
    if choose_path(cfg, target, x2, w, y) == "tma":
        from triton.tools.tensor_descriptor import TensorDescriptor

        ce = constexprs(cfg, target, tma=True, has_bias=has_bias, activation=activation, even_k=False)
        kernel = gemm_a16w16_tma_kernel
        (functools.partial(kernel.warmup, grid=grid) if compile_only else kernel[grid])(
            TensorDescriptor.from_tensor(x2, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk]),
            TensorDescriptor.from_tensor(y, [bm, bn]), bias_arg, ws, M, N, K, **ce, **opts)
        C.LAUNCHES["gemm_a16w16_tma_kernel"] += not compile_only
    else:
        ce = constexprs(cfg, target, tma=False, has_bias=has_bias, activation=activation,
                        even_k=K % bk == 0)
        kernel = gemm_a16w16_kernel
        (functools.partial(kernel.warmup, grid=grid) if compile_only else kernel[grid])(
            x2, w, bias_arg, y, ws, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
            y.stride(0), y.stride(1), **ce, **opts)
        C.LAUNCHES["gemm_a16w16_kernel"] += not compile_only
    if split_k > 1:
        rbm, rbn = reduce_tile(M, N)
        rgrid = (triton_cdiv(M, rbm), triton_cdiv(N, rbn))
        kernel = splitk_reduce_kernel
        (functools.partial(kernel.warmup, grid=rgrid) if compile_only else kernel[rgrid])(
            ws, bias_arg, y, M, N, M * N, y.stride(0), y.stride(1), SPLIT_K=split_k, BLOCK_M=rbm, BLOCK_N=rbn,
            HAS_BIAS=has_bias, ACTIVATION=activation, num_warps=_REDUCE_WARPS)
        C.LAUNCHES["splitk_reduce_kernel"] += not compile_only


def triton_next_pow2(n):
    return 1 << (max(1, n) - 1).bit_length()


def triton_cdiv(a, b):
    return (a + b - 1) // b


def _matrix_operand(t):
    """A 2-D operand the pointer kernel reads well: unit stride on one dim, else a contiguous copy."""
    if t.stride(-1) == 1 or t.stride(0) == 1:
        return t
    return t.contiguous()


def _run(x, w, bias, activation, out_dtype, config, y_full, compile_only=False):
    N, K = w.shape
    M = x.shape[:-1].numel()
    y = y_full.view(M, N) if y_full.dim() != 2 else y_full
    if M == 0 or N == 0:
        return
    if K == 0:  # the empty sum: act(0 + bias) in every row
        row = bias.float() if bias is not None else torch.zeros(N, device=x.device)
        y.copy_(_torch_activation(row, activation).expand(M, N))
        return
    C.check_device_supported(x)
    target = C.target_for(x.device)
    cfg, _source = C.resolve_config(OP, config, target, M, N, K)
    x2 = _matrix_operand(x.reshape(M, K))
    _launch(x2, _matrix_operand(w), bias.contiguous() if bias is not None else None, y, activation, cfg, target,
            compile_only)


def compile_for(x, w, config: dict, bias=None, activation=None, out_dtype=None):
    """Compile (no launch) the kernels `gemm_a16w16(x, w, ..., config=config)` would run.
    Used by the tuner inside triton's AsyncCompileMode to compile candidates in parallel."""
    activation = _normalize_activation(activation)
    out_dtype = out_dtype or x.dtype
    N, _K = _check_inputs(x, w, bias, activation, out_dtype)
    _run(x, w, bias, activation, out_dtype, C.config_to_str(config), _new_output(x, N, out_dtype), compile_only=True)


def _torch_activation(v, activation):
    from ..reference import activation_ref

    return activation_ref(v, activation)


def _out_view_ok(out, N):
    try:
        out.view(-1, N)
        return True
    except RuntimeError:
        return False


def _new_output(x, N, out_dtype):
    return torch.empty(tuple(x.shape[:-1]) + (N,), dtype=out_dtype, device=x.device)


@torch.library.custom_op("gemmkit::gemm_a16w16", mutates_args=())
def _gemm_a16w16_op(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, activation: str,
                    out_dtype: torch.dtype, config: str) -> torch.Tensor:
    N, _K = _check_inputs(x, w, bias, activation, out_dtype)
    y = _new_output(x, N, out_dtype)
    _run(x, w, bias, activation, out_dtype, config, y)
    return y


@_gemm_a16w16_op.register_fake
def _(x, w, bias, activation, out_dtype, config):
    N, _K = _check_inputs(x, w, bias, activation, out_dtype)
    return x.new_empty(tuple(x.shape[:-1]) + (N,), dtype=out_dtype)


@torch.library.custom_op("gemmkit::gemm_a16w16_out", mutates_args=("out",))
def _gemm_a16w16_out_op(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, activation: str,
                        config: str, out: torch.Tensor) -> None:
    _check_inputs(x, w, bias, activation, out.dtype, out)
    _run(x, w, bias, activation, out.dtype, config, out)


@_gemm_a16w16_out_op.register_fake
def _(x, w, bias, activation, config, out):
    _check_inputs(x, w, bias, activation, out.dtype, out)


def gemm_a16w16(x, w, bias=None, *, activation=None, out_dtype=None, out=None, config=None):
    """y = act(x @ w.T + bias) for bf16 / fp16 inputs (nn.Linear's convention).

    Args:
      x: (..., K) bf16 or fp16. Flattened to (M, K) like nn.Linear.
      w: (N, K), same dtype as x. Any strides with unit stride on one dim run
         in place (a transposed weight is fine); other layouts are copied.
      bias: optional (N,), same dtype as x.
      activation: None, "relu", "gelu", "gelu_tanh" or "silu", applied after the bias.
      out_dtype: bf16, fp16 or fp32; defaults to x.dtype.
      out: optional preallocated (..., N) tensor of out_dtype, viewable as (M, N); written and returned.
      config: optional dict overriding the config table (keys as in gemmkit/configs).

    Returns (..., N) of out_dtype. M or N == 0 gives an empty result; K == 0 gives act(bias) (or zeros).
    No backward yet: inputs that require grad (with grad mode on) raise NotImplementedError.
    """
    activation = _normalize_activation(activation)
    if out_dtype is None:
        out_dtype = getattr(x, "dtype", None)
    _check_inputs(x, w, bias, activation, out_dtype, out)
    C.check_no_grad("gemm_a16w16", x=x, w=w, bias=bias)
    cfg = C.config_to_str(config)
    if out is not None and not _out_view_ok(out, w.shape[0]):
        raise ValueError(f"out: expected a tensor viewable as (M, {w.shape[0]}), got strides {out.stride()}")
    if C.eager_call(x, w, bias, out):
        # Plain tensors outside torch.compile: skip the dispatcher's round trip (tens of
        # microseconds a call, as much as a decode-sized GEMM takes). Same checks, same kernel.
        y = out if out is not None else _new_output(x, w.shape[0], out_dtype)
        _run(x, w, bias, activation, out_dtype, cfg, y)
        return y
    if out is not None:
        torch.ops.gemmkit.gemm_a16w16_out(x, w, bias, activation, cfg, out)
        return out
    return torch.ops.gemmkit.gemm_a16w16(x, w, bias, activation, out_dtype, cfg)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped table for its arch (configs with "tma": true compile both the
    TMA kernel and the pointer kernel the op falls back to), plus the split-K reduce once per target."""
    import json

    from .. import arch as _arch

    for path in _configs.shipped_tables(OP):
        arch = path.parent.name
        if arch not in archs:
            continue
        for bucket, cfg in json.loads(path.read_text()).items():
            cfg = _configs.validate_config(cfg, backend=_arch.ARCHS[arch].backend, where=f"{path}:{bucket}")
            for p in (["tma", "pointer"] if cfg.get("tma") else ["pointer"]):
                kernel = "gemm_a16w16_tma_kernel" if p == "tma" else "gemm_a16w16_kernel"
                yield {"kernel": kernel, "op": OP, "arch": arch, "table": path.name, "bucket": bucket,
                       "config": cfg, "path": p}
    rbm, rbn = reduce_tile(2**20, 2**20)
    for arch in archs:
        yield {"kernel": "splitk_reduce_kernel", "op": OP, "arch": arch, "table": "-", "bucket": "-",
               "config": {"SPLIT_K": 4, "BLOCK_M": rbm, "BLOCK_N": rbn, "num_warps": _REDUCE_WARPS},
               "path": "reduce"}


def isa_spec(case):
    from .. import arch as _arch
    from ..kernels.triton import _splitk_reduce
    from ..kernels.triton import gemm_a16w16 as k_ptr
    from ..kernels.triton import gemm_a16w16_tma as k_tma

    target = _arch.ARCHS[case["arch"]]
    cfg, path = case["config"], case["path"]
    if path == "reduce":
        kernel, sig, ce, div, opts = reduce_static_spec(target, split_k=cfg["SPLIT_K"])
        return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                    promises=_splitk_reduce.PROMISES, block=None, smem_bound=0)
    kernel, sig, ce, div, opts = static_spec(cfg, target, tma=(path == "tma"))
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=(k_tma if path == "tma" else k_ptr).PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bytes(cfg, target, 2, 2, path == "tma"))
