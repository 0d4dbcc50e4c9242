"""gemm_afp4wfp4: y = x @ w.T for OCP MXFP4 operands (E2M1 values, one E8M0 scale per 32 along K).

    x (M, K/2) uint8     two E2M1 codes per byte, element 2i in the LOW nibble, 2i + 1 in the high one
    w (N, K/2) uint8     same packing (nn.Linear layout)
    x_scale (M, K/32) uint8 E8M0    x[m, 32j .. 32j + 31] scaled by 2^(x_scale[m, j] - 127)
    w_scale (N, K/32) uint8 E8M0    one per 32 elements of each row of w
    y (M, N) = dequantize_mxfp4(x, x_scale) @ dequantize_mxfp4(w, w_scale).T    (fp32 accumulate)

gemmkit.quant.quantize_mxfp4 makes these operands (and dequantize_mxfp4 undoes them).
One Triton kernel (kernels/triton/gemm_afp4wfp4.py, tl.dot_scaled per K step) and
the shared split-K reduce. Two custom ops with fakes:

  gemmkit::gemm_afp4wfp4      functional
  gemmkit::gemm_afp4wfp4_out  writes into `out`

Targets (Triton 3.6):
  gfx950 (MI355X)   native: tl.dot_scaled becomes v_mfma_scale_f32_16x16x128_f8f6f4
  sm_90 (H100/H200) emulated: the codes are decoded and scaled to bf16 in registers, then
                    bf16 wgmma / mma.sync; correct, at bf16 tensor-core speed at best
  gfx942 (MI300X)   not supported: Triton 3.6 fails to lower tl.dot_scaled with e2m1
                    operands for gfx942 ("Unsupported DotScaleOp"); the op raises ValueError
  CPU interpreter   Triton 3.6's interpreter has no tl.dot_scaled: gemmkit models it there
                    (kernels/_interpreter.py: e2m1 x e2m1, E8M0 per 32, exact in fp32)
"""
from __future__ import annotations


import torch

from ..kernels.triton._schedule import persistent_grid
from ..kernels.triton._splitk_reduce import splitk_reduce_kernel
from ..kernels.triton.gemm_afp4wfp4 import PROMISES, gemm_afp4wfp4_kernel
from . import _common as C
from .. import launcher as L
from ..kernels.triton import dense as G
from .gemm_a8w8 import _check_out, resolve_out_dtype

OP = "afp4wfp4"
MX_GROUP = 32  # elements per E8M0 scale
MIN_BLOCK_K = 64  # tl.dot_scaled's minimum K per step (32 packed bytes, 2 scales per row)
UNSUPPORTED_ARCHS = {"gfx942": "Triton 3.6 cannot lower tl.dot_scaled with e2m1 operands for gfx942 "
                               "(\"Unsupported DotScaleOp found when converting TritonGPU to LLVM\")"}


# ----------------------------------------------------------------------------- validation

def _check_inputs(x, w, x_scale, w_scale, out_dtype, out=None):
    """(M, N, K) with K the unpacked length (2 * x.shape[1]); errors name the argument."""
    C.check_tensor("x", x, dtypes=(torch.uint8,), ndim=2)
    C.check_tensor("w", w, dtypes=(torch.uint8,), ndim=2)
    M, half_k = x.shape
    N = w.shape[0]
    K = 2 * half_k
    if K % MX_GROUP:
        raise ValueError(f"x: expected K = 2 * x.shape[1] divisible by {MX_GROUP} (one E8M0 scale per "
                         f"{MX_GROUP} elements), got shape {tuple(x.shape)} (K = {K})")
    if w.shape[1] != half_k:
        raise ValueError(f"w: expected shape (N, {half_k}) (K/2 packed bytes like x), got {tuple(w.shape)}")
    for name, s, rows in (("x_scale", x_scale, M), ("w_scale", w_scale, N)):
        C.check_tensor(name, s, dtypes=(torch.uint8,), ndim=2)
        if tuple(s.shape) != (rows, K // MX_GROUP):
            raise ValueError(f"{name}: expected shape ({rows}, {K // MX_GROUP}) (one E8M0 byte per {MX_GROUP} "
                             f"elements, K = {K}), got {tuple(s.shape)}")
    C.check_out_dtype(out_dtype)
    _check_out(out, M, N, out_dtype)
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, x_scale=x_scale, w_scale=w_scale)
    return M, N, K


def _check_target(target):
    if target.arch in UNSUPPORTED_ARCHS:
        raise ValueError(f"x: gemm_afp4wfp4 does not run on {target.name} ({target.arch}): "
                         f"{UNSUPPORTED_ARCHS[target.arch]}")


def smem_bytes(cfg: dict, target) -> int:
    """Upper bound on the shared memory (LDS) one program needs, per K step in flight:
    packed x and w tiles ((BM + BN) * BK / 2 bytes) and their scale tiles ((BM + BN) * BK / 32).

    NVIDIA (emulated): num_stages such steps, plus the w tile upcast to bf16 (BN * BK * 2) that
    the wgmma reads from shared memory, plus 1 KiB of layout-conversion scratch. AMD: the stream
    pipeliner keeps num_stages - 1 steps in LDS (gfx950 128x128x128, 2 stages: exactly one step,
    17408 bytes). Read off compiled kernels (Triton 3.6); `gemmkit isa` checks the bound on every
    shipped config."""
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    step = (bm + bn) * bk // 2 + (bm + bn) * bk // MX_GROUP
    if target.is_nvidia:
        return cfg["num_stages"] * step + bn * bk * 2 + 1024
    return max(1, cfg["num_stages"] - 1) * step


def check_config(cfg: dict, target):
    """ValueError (naming the key) for a config this kernel cannot run on `target`."""
    if cfg.get("tma"):
        raise ValueError("config: key 'tma' = true, but gemm_afp4wfp4 has no TMA path (pointer kernel only)")
    if cfg.get("backend", "triton") != "triton":
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}, but gemm_afp4wfp4 has only the Triton kernel")
    if cfg["BLOCK_SIZE_K"] < MIN_BLOCK_K:
        raise ValueError(f"config: key 'BLOCK_SIZE_K' = {cfg['BLOCK_SIZE_K']}; gemm_afp4wfp4 needs >= {MIN_BLOCK_K} "
                         "(tl.dot_scaled's minimum K step)")
    need = smem_bytes(cfg, target)
    if need > target.shared_mem_bytes:
        raise ValueError(
            f"config: BLOCK_SIZE_M/N/K = {cfg['BLOCK_SIZE_M']}/{cfg['BLOCK_SIZE_N']}/{cfg['BLOCK_SIZE_K']} with "
            f"num_stages = {cfg['num_stages']} needs {need} bytes of shared memory; {target.name} ({target.arch}) "
            f"allows {target.shared_mem_bytes} per block")


# ----------------------------------------------------------------------------- launch

def constexprs(cfg: dict, target, *, even_k: bool, int64_offsets: bool = False) -> dict:
    """The kernel's constexprs from the config and the target (one place: launch and static compile).
    `int64_offsets`: the call's tensors span 2**31 elements or more (_common.int64_offsets)."""
    return dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
                GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds, EVEN_K=even_k,
                PERSISTENT=bool(cfg["persistent"]), SPLIT_K=cfg["NUM_KSPLIT"], INT64_OFFSETS=bool(int64_offsets))


def _launch(x, w, xs, ws, y, cfg, target, compile_only=False):
    M, N, K = x.shape[0], w.shape[0], 2 * x.shape[1]
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    split_k = cfg["NUM_KSPLIT"]
    num_work = G.cdiv(M, bm) * G.cdiv(N, bn) * split_k
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    part = torch.empty((split_k, M, N), dtype=torch.float32, device=x.device) if split_k > 1 else y
    ce = constexprs(cfg, target, even_k=K % bk == 0,
                    int64_offsets=C.int64_offsets(x, w, xs, ws, y, part if split_k > 1 else None))
    kernel = gemm_afp4wfp4_kernel
    L.launcher(kernel, grid, compile_only)(
        x, w, xs, ws, y, part, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), y.stride(0), y.stride(1),
        xs.stride(0), xs.stride(1), ws.stride(0), ws.stride(1), **ce, **C.compiler_options(cfg, target))
    if split_k > 1:
        rbm, rbn = G.reduce_tile(M, N)
        rgrid = (G.cdiv(M, rbm), G.cdiv(N, rbn))
        reduce = splitk_reduce_kernel
        L.launcher(reduce, rgrid, compile_only)(
            part, y, y, M, N, M * N, y.stride(0), y.stride(1), SPLIT_K=split_k, BLOCK_M=rbm, BLOCK_N=rbn,
            HAS_BIAS=False, ACTIVATION="none", INT64_OFFSETS=C.int64_offsets(part, y), num_warps=G.REDUCE_WARPS)


def _run(x, w, x_scale, w_scale, config, y, compile_only=False):
    M, N, K = x.shape[0], w.shape[0], 2 * x.shape[1]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:  # the empty sum
        y.zero_()
        return
    target = C.target_for(x.device)
    _check_target(target)
    cfg, _source = C.resolve_config(OP, config, target, M, N, K)
    check_config(cfg, target)
    _launch(x, w, x_scale, w_scale, y, cfg, target, compile_only)


@torch.library.custom_op("gemmkit::gemm_afp4wfp4", mutates_args=())
def _gemm_afp4wfp4_op(x: torch.Tensor, w: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor,
                      out_dtype: torch.dtype, config: str) -> torch.Tensor:
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, out_dtype)
    y = torch.empty((M, N), dtype=out_dtype, device=x.device)
    _run(x, w, x_scale, w_scale, config, y)
    return y


@_gemm_afp4wfp4_op.register_fake
def _(x, w, x_scale, w_scale, out_dtype, config):
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, out_dtype)
    return x.new_empty((M, N), dtype=out_dtype)


@torch.library.custom_op("gemmkit::gemm_afp4wfp4_out", mutates_args=("out",))
def _gemm_afp4wfp4_out_op(x: torch.Tensor, w: torch.Tensor, x_scale: torch.Tensor, w_scale: torch.Tensor,
                          config: str, out: torch.Tensor) -> None:
    _check_inputs(x, w, x_scale, w_scale, out.dtype, out)
    _run(x, w, x_scale, w_scale, config, out)


@_gemm_afp4wfp4_out_op.register_fake
def _(x, w, x_scale, w_scale, config, out):
    _check_inputs(x, w, x_scale, w_scale, out.dtype, out)


def gemm_afp4wfp4(x, w, x_scale, w_scale, *, out_dtype=None, out=None, config=None):
    """y = x @ w.T for OCP MXFP4 operands (what gemmkit.quant.quantize_mxfp4 returns).

    Args:
      x: (M, K/2) uint8, two E2M1 codes per byte: element 2i in bits 0-3, element 2i + 1 in bits 4-7.
      w: (N, K/2) uint8, same packing (nn.Linear layout).
      x_scale: (M, K/32) uint8 E8M0: x[m, 32j:32j+32] is scaled by 2^(x_scale[m, j] - 127) (255 = NaN).
      w_scale: (N, K/32) uint8 E8M0, the same for the rows of w.
      out_dtype: bf16, fp16 or fp32; None (default): out's dtype if `out` is given, else bf16.
      out: optional preallocated (M, N) tensor of out_dtype.
      config: optional dict overriding gemmkit/configs/<arch>/AFP4WFP4.json (BLOCK_SIZE_K >= 64, counted in
        unpacked elements; no "tma").

    K (= 2 * x.shape[1]) must be a multiple of 32. Accumulates in fp32. Native on gfx950; emulated on
    sm_90 (decoded to bf16, then bf16 tensor cores); not available on gfx942 (ValueError).
    Returns (M, N) of out_dtype. M or N == 0: empty; K == 0: zeros.
    """
    out_dtype = resolve_out_dtype(out_dtype, out)
    _check_inputs(x, w, x_scale, w_scale, out_dtype, out)
    cfg = C.config_to_str(config)
    if C.eager_call(x, w, x_scale, w_scale, out):
        y = out if out is not None else torch.empty((x.shape[0], w.shape[0]), dtype=out_dtype, device=x.device)
        _run(x, w, x_scale, w_scale, cfg, y)
        return y
    if out is not None:
        torch.ops.gemmkit.gemm_afp4wfp4_out(x, w, x_scale, w_scale, cfg, out)
        return out
    return torch.ops.gemmkit.gemm_afp4wfp4(x, w, x_scale, w_scale, out_dtype, cfg)


def compile_for(x, w, x_scale, w_scale, config: dict, out_dtype=torch.bfloat16):
    """Compile (no launch) the kernel gemm_afp4wfp4(..., config=config) would run (the tuner's warm-up)."""
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, out_dtype)
    y = torch.empty((M, N), dtype=out_dtype, device=x.device)
    _run(x, w, x_scale, w_scale, C.config_to_str(config), y, compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def static_spec(cfg: dict, target, *, out_dtype=torch.bfloat16, even_k: bool = True):
    """(kernel, signature, constexprs, divisible, options) to compile the kernel for `target` without a
    GPU, as the JIT specialises the aligned contiguous case (unit K strides, 16-divisible rows)."""
    ce = constexprs(cfg, target, even_k=even_k)
    t_out = G.TL_DTYPE[out_dtype]
    sig = {"x_ptr": "*u8", "w_ptr": "*u8", "xs_ptr": "*u8", "ws_ptr": "*u8", "y_ptr": f"*{t_out}", "part_ptr": "*fp32",
           "M": "i32", "N": "i32", "K": "i32",
           "stride_xm": "i32", "stride_xk": "constexpr", "stride_wn": "i32", "stride_wk": "constexpr",
           "stride_ym": "i32", "stride_yn": "constexpr",
           "stride_xsm": "i32", "stride_xsk": "constexpr", "stride_wsn": "i32", "stride_wsk": "constexpr"}
    ce.update(stride_xk=1, stride_wk=1, stride_yn=1, stride_xsk=1, stride_wsk=1)
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items()
                 if v.startswith("*") or k in ("stride_xm", "stride_wn", "stride_ym", "stride_xsm", "stride_wsn")]
    return gemm_afp4wfp4_kernel, sig, ce, divisible, C.compiler_options(cfg, target)


def isa_cases(archs):
    """Every bucket of every shipped AFP4WFP4 table (sm_90, gfx950; gfx942 has none: see UNSUPPORTED_ARCHS)."""
    for case in G.table_cases(OP, archs, dtypes=("fp4",)):
        yield dict(case, kernel="gemm_afp4wfp4_kernel")


def isa_spec(case):
    from .. import arch as _arch

    target = _arch.ARCHS[case["arch"]]
    cfg = case["config"]
    kernel, sig, ce, div, opts = static_spec(cfg, target)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bytes(cfg, target))
