"""The split-cat GEMM kernels seen from the host: why TMA cannot serve a call, the store choice, constexprs, grid, launch, static specs.

ops/gemm_split_cat.py (gemm_split_cat, gemm_a8w8_blockscale_split_cat) validates a call, resolves its
config (NUM_KSPLIT 1, Triton backend), allocates c1 and c2 and calls `launch` here:

    gemm_split_cat / gemm_a8w8_blockscale_split_cat (ops/gemm_split_cat.py: checks, config, outputs)
        │ launch(x2 (M, K), w (N, K), bias, y (M, D, S3), c1, c2, S1, S2, cfg, target, scaling)
        ▼
    tma=True   ─► gemm_split_cat_tma_kernel (kernels/triton/gemm_split_cat.py), its store
                │             `tma_store_mode`: "tma_part" | "tma_head" | "pointer"
    tma=False  ─► gemm_split_cat_kernel        (ops/dispatch.py decides, from `tma_unsupported` here)
        every launch through launcher.py

The constexprs are the dense kernels' (kernels/triton/dense.constexprs) plus the split (`split_constexprs`);
the shared-memory bound is the dense one (`smem_bound`). `static_spec` describes a launch once more for the
static compiles of `gemmkit isa` (`table_cases`, `table_spec`; DeepSeek-V3 kv_b_proj's split, `ISA_SPLIT`).

Constraints:
  - no split-K and the Triton tier only (the op refuses NUM_KSPLIT > 1 and other backends first);
  - TMA path: sm_90, cfg["tma"], x2 and w TMA-compatible and the tile within the TMA limits; the
    outputs are stored by TMA only when their 2-D views are TMA-compatible and BLOCK_N divides S1 and S2
    ("tma_part") or BLOCK_N == S1 + S2 == 2 * S1 ("tma_head");
  - scaling "none" or "block" (DeepSeek block scales, BLOCK_SIZE_K <= block_k: the op caps it);
  - nothing here imports from gemmkit/ops.
"""
from __future__ import annotations

import torch

from ... import launcher as L
from .. import _host as C
from . import dense as G
from ._schedule import persistent_grid
from .gemm_split_cat import gemm_split_cat_kernel, gemm_split_cat_tma_kernel

# The shapes the static compiles specialise for: DeepSeek-V3 kv_b_proj (S1 = qk_nope, S2 = v_head, S3 = qk_rope).
ISA_SPLIT = (128, 128, 64)
KERNEL_NAMES = {"tma": "gemm_split_cat_tma_kernel", "pointer": "gemm_split_cat_kernel"}


# ----------------------------------------------------------------------------- path and store

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


def tma_unsupported(cfg, target, x2, w, c1) -> str | None:
    """Why the split-cat TMA kernel cannot take this call (None: it can): kernels/_host.tma_reason for x2 and w
    with the dense kernels' shared-memory fit. The outputs' own store is `tma_store_mode`'s. ops/dispatch.py
    orders the kernels."""
    return C.tma_reason(cfg, target, {"x": x2, "w": w},
                        lambda: G.tma_fit_unsupported(cfg, target, x2.element_size(), c1.element_size()))


def split_constexprs(S1, S2, S3):
    return dict(S1=S1, S2=S2, S3=S3, S3P=G.next_pow2(max(S3, 1)))


# ----------------------------------------------------------------------------- launch

def launch(x2, w, bias, y, c1, c2, S1, S2, cfg, target, scaling, compile_only=False, *, tma: bool):
    """c = x2 @ w.T (+ bias) (scaled as `scaling` says), stored split: c1 = cat(c[..., :S1], y), c2 = c[..., S1:].
    x2 (M, K), w (N, K) with unit stride on one dim; bias (N,) contiguous or None; y (M, D, S3), c1, c2 any
    strides. `tma`: the TMA kernel (ops/dispatch.py: `tma_unsupported` allows it) or the pointer kernel."""
    M, K = x2.shape
    N = w.shape[0]
    S3 = y.shape[2]
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
        cfg = G.pointer_config(cfg, scaling.mode)
        ce = dict(G.constexprs(cfg, target, tma=False, even_k=K % bk == 0, **common), **split)
        grid = (persistent_grid(num_tiles, target.num_cus, target.num_xcds) if cfg["persistent"] else num_tiles,)
        kernel = gemm_split_cat_kernel
        L.launcher(kernel, grid, compile_only)(
            x2, w, xs, wsc, bias_arg, y, c1, c2, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
            *scale_strides, *strides, **ce, **opts)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def table_cases(table_op: str, archs, dtype: str, isa_op: str, block_k: int | None = None):
    """Every bucket of `table_op`'s shipped tables for its arch, `dtype` operands; sm_90 "tma" configs compile
    the TMA kernel (with the store the DeepSeek split gives it) and the pointer kernel the op falls back to.
    `block_k`: block-scaled operands cap BLOCK_SIZE_K at it (as the op does)."""
    for case in G.table_cases(table_op, archs, dtypes=(dtype,)):
        tma = case["path"] == "tma"
        cfg = dict(case["config"])
        if block_k is not None:
            cfg["BLOCK_SIZE_K"] = min(cfg["BLOCK_SIZE_K"], block_k)
        if tma:
            cfg["STORE"] = store_mode_for(cfg["BLOCK_SIZE_N"], ISA_SPLIT[0], ISA_SPLIT[1])
        yield dict(case, op=isa_op, table_op=table_op, config=cfg, kernel=KERNEL_NAMES[case["path"]])


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


def table_spec(case, block_scaled: bool):
    """isa_spec of a `table_cases` case: bf16 with bias, or (`block_scaled`) the target's fp8 with 128 x 128
    block scales and no bias."""
    from ... import arch as _arch
    from . import gemm_split_cat as k

    target = _arch.ARCHS[case["arch"]]
    tma = case["path"] == "tma"
    cfg = case["config"] if tma else G.pointer_config(case["config"], "block" if block_scaled else "none")
    dtype = C.fp8_dtype(target) if block_scaled else torch.bfloat16
    kernel, sig, ce, div, opts = static_spec(cfg, target, dtype=dtype, tma=tma, has_bias=not block_scaled,
                                             scale="block" if block_scaled else "none")
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=k.TMA_PROMISES if tma else k.PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bound(cfg, target, dtype.itemsize, 2, tma))
