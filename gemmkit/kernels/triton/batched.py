"""The batched GEMM kernels seen from the host: why TMA cannot serve a call, constexprs, grid, launch, static specs.

ops/batched_gemm.py validates a call and resolves its config; ops/dispatch.py decides the kernel (Gluon or
Triton, TMA or pointer) and, for the Triton tier, calls `launch` here with 3-D operands and an output:

    batched_gemm_a16w16 / _a8w8 (ops/batched_gemm.py: checks, config, Gluon or Triton)
        │ launch(x (B, M, K), w (B, N, K), bias, y (B, M, N), activation, cfg, target, scaling)
        ▼
    tma=True   ─► batched_gemm_tma_kernel (kernels/triton/batched_gemm_tma.py): 3-D descriptors
    tma=False  ─► batched_gemm_kernel (kernels/triton/batched_gemm.py): any strides
        (ops/dispatch.py decides, from `tma_unsupported` here)
        every launch through launcher.py

`constexprs` and `static_spec` are the single description of what a launch specialises, for the launch
and for the static compiles of `gemmkit isa` (`table_cases`, `table_spec`).

Constraints:
  - no split-K: cfg["NUM_KSPLIT"] must be 1 (the batch fills the grid; ops/dispatch.batched raises otherwise);
  - TMA path: sm_90, cfg["tma"], and x, w, y meet TMA's rules as 3-D tensors (`tma_compatible_3d`),
    and the tile's shared memory fits (dense.check_feasible); else the pointer kernel, same tiles;
  - scaling "none" or "rowcol" (x_scale (B, M), w_scale (B, N), unit stride on M / N); no block scales;
  - bias (B, N) or (N,) with unit stride on N, or None;
  - nothing here imports from gemmkit/ops.
"""
from __future__ import annotations

import torch

from ... import launcher as L
from .. import _host as C
from . import dense as G
from ._schedule import persistent_grid
from .batched_gemm import batched_gemm_kernel
from .batched_gemm_tma import batched_gemm_tma_kernel, tma_compatible_3d

_DENSE_ONLY = ("SPLIT_K", "SCALE_BN", "SCALE_BK")  # dense-kernel constexprs the batched kernels do not take
KERNEL_NAMES = {"tma": "batched_gemm_tma_kernel", "pointer": "batched_gemm_kernel"}


# ----------------------------------------------------------------------------- path and constexprs

TMA_RULE_3D = "3-D TMA needs unit last stride, a 16-byte aligned base, row and batch strides of 16-byte multiples, " \
    "and rows and batch entries that do not overlap (no broadcast batch dim)"


def w_kn(w) -> bool:
    """Whether the 16-bit 3-D w is transposed in memory (unit stride along N) with (B, K, N) storage TMA takes: the
    TMA kernel reads it where it lies (W_KN, batched_gemm_tma.py)."""
    return w.element_size() == 2 and w.stride(2) != 1 and tma_compatible_3d(w.transpose(1, 2))


def tma_unsupported(cfg, target, x, w, y) -> str | None:
    """Why the batched TMA kernel cannot take this call (None: it can): kernels/_host.tma_reason with 3-D TMA's
    rules (`tma_compatible_3d`; a 16-bit w also transposed in memory: `w_kn`) and the dense kernels' shared-memory
    fit. ops/dispatch.py orders the kernels."""
    return C.tma_reason(cfg, target, {"x": x, "w": w, "y": y},
                        lambda: G.tma_fit_unsupported(cfg, target, x.element_size(), y.element_size()),
                        compatible=lambda t: tma_compatible_3d(t) or (t is w and w_kn(w)),
                        rule=TMA_RULE_3D + " (a 16-bit w: or the same of w.transpose(1, 2))")


def constexprs(cfg, target, *, tma, has_bias, activation, even_k, in_dtype, scale, int64_offsets=False,
               transposed_w=False):
    """The dense kernels' constexprs (kernels/triton/dense.constexprs: ACC_INT, PROMOTE_K, INT64_OFFSETS, ...) minus split-K /
    block scale; the TMA kernel has no int32 offset product, so no INT64_OFFSETS either, and takes W_KN
    (`transposed_w`: `w_kn`; kernels/triton/batched_gemm_tma.py)."""
    ce = G.constexprs(cfg, target, tma=tma, has_bias=has_bias, activation=activation, even_k=even_k,
                      in_dtype=in_dtype, scale=scale, int64_offsets=int64_offsets)
    for key in _DENSE_ONLY + (("INT64_OFFSETS",) if tma else ()):
        ce.pop(key)
    if tma:
        ce["W_KN"] = bool(transposed_w)
    return ce


def _descriptor(t, block):
    from triton.tools.tensor_descriptor import TensorDescriptor

    B, R, Cn = t.shape
    stride_b = t.stride(0) if B > 1 else R * t.stride(1)  # a size-1 dim's stride is arbitrary in torch
    return TensorDescriptor(t, [B, R, Cn], [stride_b, t.stride(1), 1], [1, *block])


def _operand(t):
    """A 3-D operand the pointer kernel reads well: unit stride on K or on the rows, else a copy."""
    return t if t.stride(2) == 1 or t.stride(1) == 1 else t.contiguous()


# ----------------------------------------------------------------------------- launch

def launch(x, w, bias, y, activation, cfg, target, scaling=G.NO_SCALING, compile_only=False, *, tma: bool):
    """The Triton tier's batched GEMM for one call: x (B, M, K), w (B, N, K), y (B, M, N); bias (B, N) / (N,)
    with unit stride on N, or None; scaling "none" or "rowcol" with x_scale (B, M) and w_scale (B, N), unit
    stride on M / N; `tma`: the TMA kernel (ops/dispatch.py: `tma_unsupported` allows it) or the pointer kernel."""
    B, M, K = x.shape
    N = w.shape[1]
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    num_work = B * G.cdiv(M, bm) * G.cdiv(N, bn)
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    has_bias = bias is not None
    bias_arg, stride_bb = (bias, bias.stride(0) if bias.dim() == 2 else 0) if has_bias else (y, 0)
    rowcol = scaling.mode == "rowcol"
    xs, wsc = (scaling.x_scale, scaling.w_scale) if rowcol else (y, y)  # never read when SCALE == "none"
    scale_strides = (xs.stride(0), wsc.stride(0)) if rowcol else (0, 0)
    opts = C.compiler_options(cfg, target)
    common = dict(has_bias=has_bias, activation=activation, in_dtype=x.dtype, scale=scaling.mode)
    if tma:
        t_w = w_kn(w)
        ce = constexprs(cfg, target, tma=True, even_k=False, transposed_w=t_w, **common)
        kernel = batched_gemm_tma_kernel
        w_d = _descriptor(w.transpose(1, 2), [bk, bn]) if t_w else _descriptor(w, [bn, bk])
        L.launcher(kernel, grid, compile_only)(
            _descriptor(x, [bm, bk]), w_d, _descriptor(y, [bm, bn]), xs, wsc, bias_arg,
            B, M, N, K, *scale_strides, stride_bb, **ce, **opts)
    else:
        x, w = _operand(x), _operand(w)
        ce = constexprs(cfg, target, tma=False, even_k=K % bk == 0,
                        int64_offsets=C.int64_offsets(x, w, y, bias, *((xs, wsc) if rowcol else ())), **common)
        kernel = batched_gemm_kernel
        L.launcher(kernel, grid, compile_only)(
            x, w, xs, wsc, bias_arg, y, B, M, N, K, *x.stride(), *w.stride(), *y.stride(), *scale_strides,
            stride_bb, **ce, **opts)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def table_cases(table_op: str, archs, dtype: str, isa_op: str):
    """Every bucket of `table_op`'s shipped tables for its arch, `dtype` operands, as the batched kernels
    (`KERNEL_NAMES`) compile them; "tma": true configs give both the TMA and the pointer kernel."""
    for case in G.table_cases(table_op, archs, dtypes=(dtype,)):
        yield dict(case, kernel=KERNEL_NAMES[case["path"]], op=isa_op)


def static_spec(cfg, target, *, dtype=torch.bfloat16, tma=None, has_bias=True, scale="none", int64_offsets=False,
                transposed_w=False):
    """(kernel, signature, constexprs, divisible, options) of a batched launch as the JIT specialises
    the common aligned case: unit stride on K and N, pointers and row / batch strides divisible by 16
    (`int64_offsets`: the pointer kernel's variant for a call whose tensors span 2**31 elements or more;
    `transposed_w`: the TMA kernel's W_KN variant)."""
    out_dtype = dtype if dtype in C.FLOAT16_DTYPES else torch.bfloat16
    tma = bool(cfg.get("tma")) and target.is_nvidia if tma is None else tma
    ce = constexprs(cfg, target, tma=tma, has_bias=has_bias, activation="none", even_k=True, in_dtype=dtype,
                    scale=scale, int64_offsets=int64_offsets, transposed_w=transposed_w)
    t_in, t_out = G.TL_DTYPE[dtype], G.TL_DTYPE[out_dtype]
    t_bias = t_in if dtype in C.FLOAT16_DTYPES else "bf16"
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    batch_strides = {"stride_xsb": "i32", "stride_wsb": "i32", "stride_bb": "i32"}
    if tma:
        w_box = f"[1, {bk}, {bn}]" if transposed_w else f"[1, {bn}, {bk}]"
        sig = {"x_desc": f"tensordesc<{t_in}[1, {bm}, {bk}]>", "w_desc": f"tensordesc<{t_in}{w_box}>",
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


def table_spec(case):
    """isa_spec of a Triton-tier case (`table_cases`): bf16 cases unscaled, 8-bit ones rowcol-scaled (the TMA
    kernel's W_KN variant where the case says "w_kn")."""
    from ... import arch as _arch
    from . import batched_gemm as k_ptr
    from . import batched_gemm_tma as k_tma

    target = _arch.ARCHS[case["arch"]]
    cfg, tma = case["config"], case["path"] == "tma"
    dtype = G._case_dtype(case["dtype"], target)
    scale = "none" if case["dtype"] == "bf16" else "rowcol"
    kernel, sig, ce, div, opts = static_spec(cfg, target, dtype=dtype, tma=tma, scale=scale,
                                             transposed_w=tma and case.get("w_kn", False))
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=(k_tma if tma else k_ptr).PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=G.smem_bytes(cfg, target, dtype.itemsize, 2, tma))
