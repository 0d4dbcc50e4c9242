"""The MXFP4 GEMM kernel seen from the host: target and config feasibility, constexprs, grid, launch, static spec.

ops/gemm_afp4wfp4.py validates a call, resolves its config and calls `launch` here with the packed
operands and their E8M0 scales:

    gemm_afp4wfp4 (ops/gemm_afp4wfp4.py: checks, config, output)
        │ check_target(target), check_config(cfg, target)
        │ launch(x (M, K/2), w (N, K/2), x_scale (M, K/32), w_scale (N, K/32), y (M, N), cfg, target)
        ▼
    gemm_afp4wfp4_kernel (kernels/triton/gemm_afp4wfp4.py: tl.dot_scaled per K step), pointer path only
    NUM_KSPLIT > 1 ─► splitk_reduce_kernel (kernels/triton/_splitk_reduce.py) over (split, M, N) fp32
        every launch through launcher.py

`constexprs` / `static_spec` describe a launch once, for the launch and for the static compiles of
`gemmkit isa` (`table_cases`, `table_spec`).

Constraints:
  - no TMA path and the Triton tier only (`check_config`); BLOCK_SIZE_K >= 64 (tl.dot_scaled's minimum
    K step), counted in unpacked elements;
  - K (= 2 * x.shape[1]) a multiple of MX_GROUP (32): one E8M0 scale per 32 elements;
  - gfx942 is refused (`UNSUPPORTED_ARCHS`: Triton 3.6 cannot lower tl.dot_scaled with e2m1 operands there);
    gfx950 is native, sm_90 emulated (bf16 MMA), the interpreter modelled (kernels/_interpreter.py);
  - nothing here imports from gemmkit/ops.
"""
from __future__ import annotations

import torch

from ... import launcher as L
from .. import _budgets
from .. import _host as C
from . import dense as G
from ._schedule import persistent_grid
from ._splitk_reduce import splitk_reduce_kernel
from .gemm_afp4wfp4 import PROMISES, gemm_afp4wfp4_kernel

KERNEL_NAME = "gemm_afp4wfp4_kernel"

MX_GROUP = 32  # elements per E8M0 scale
MIN_BLOCK_K = 64  # tl.dot_scaled's minimum K per step (32 packed bytes, 2 scales per row)
UNSUPPORTED_ARCHS = {"gfx942": "Triton 3.6 cannot lower tl.dot_scaled with e2m1 operands for gfx942 "
                               "(\"Unsupported DotScaleOp found when converting TritonGPU to LLVM\")"}


# ----------------------------------------------------------------------------- feasibility

def check_target(target):
    """ValueError (naming x) on a target the kernel cannot be compiled for."""
    if target.arch in UNSUPPORTED_ARCHS:
        raise ValueError(f"x: gemm_afp4wfp4 does not run on {target.name} ({target.arch}): "
                         f"{UNSUPPORTED_ARCHS[target.arch]}")


def smem_bytes(cfg: dict, target) -> int:
    """Upper bound on the shared memory (LDS) one program needs, per K step in flight:
    packed x and w tiles ((BM + BN) * BK / 2 bytes) and their scale tiles ((BM + BN) * BK / 32).

    NVIDIA (emulated): num_stages such steps, plus the w tile upcast to bf16 (BN * BK * 2) that
    the wgmma reads from shared memory, plus 1 KiB of layout-conversion scratch. AMD: the stream
    pipeliner keeps num_stages - 1 steps in LDS (gfx950 128x128x128, 2 stages: exactly one step,
    17408 bytes; from Triton 3.8 num_stages: kernels/_budgets.amd_lds_bytes). Read off compiled kernels
    (Triton 3.6); `gemmkit isa` checks the bound on every shipped config."""
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    step = (bm + bn) * bk // 2 + (bm + bn) * bk // MX_GROUP
    if target.is_nvidia:
        return cfg["num_stages"] * step + bn * bk * 2 + 1024
    return _budgets.amd_lds_bytes(_budgets.num_stages(cfg, target), step, target)


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
    `int64_offsets`: the call's tensors span 2**31 elements or more (_host.int64_offsets)."""
    return dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
                GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds, EVEN_K=even_k,
                PERSISTENT=bool(cfg["persistent"]), SPLIT_K=cfg["NUM_KSPLIT"], INT64_OFFSETS=bool(int64_offsets))


def launch(x, w, xs, ws, y, cfg, target, compile_only=False):
    """y = x @ w.T for packed MXFP4 x (M, K/2), w (N, K/2) and their E8M0 scales xs (M, K/32), ws (N, K/32);
    `cfg` already passed `check_config` (the installed Triton's budget may shorten its K step:
    kernels/_budgets.triton_config)."""
    cfg = _budgets.triton_config(KERNEL_NAME, cfg, target)
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
            HAS_BIAS=False, ACTIVATION="none", INT64_OFFSETS=C.int64_offsets(part, y), num_warps=G.REDUCE_WARPS,
            **G.reduce_alignment(N, M * N, y))


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def static_spec(cfg: dict, target, *, out_dtype=torch.bfloat16, even_k: bool = True):
    """(kernel, signature, constexprs, divisible, options) to compile the kernel for `target` without a
    GPU, as the JIT specialises the aligned contiguous case (unit K strides, 16-divisible rows), with the
    config `launch` runs (kernels/_budgets.triton_config)."""
    cfg = _budgets.triton_config(KERNEL_NAME, cfg, target)
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


def table_cases(op: str, archs):
    """Every bucket of every shipped `op` table (sm_90, gfx950; gfx942 has none: see UNSUPPORTED_ARCHS)."""
    for case in G.table_cases(op, archs, dtypes=("fp4",)):
        yield dict(case, kernel=KERNEL_NAME)


def table_spec(case):
    """isa_spec of a `table_cases` case."""
    from ... import arch as _arch

    target = _arch.ARCHS[case["arch"]]
    cfg = _budgets.triton_config(KERNEL_NAME, case["config"], target)
    kernel, sig, ce, div, opts = static_spec(cfg, target)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bytes(cfg, target))
