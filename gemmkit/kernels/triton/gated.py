"""The gated GEMM kernels seen from the host: feasibility, why TMA cannot serve a call, constexprs, grid, launch, static specs.

ops/ffn.py (gemm_a16w16_gated, and the first GEMM of ffn_gated) validates a call, resolves its config, asks
ops/dispatch.py which kernel serves it and calls `launch` here with 2-D operands and h:

    gemm_a16w16_gated / ffn_gated (ops/ffn.py: checks, config; a Gluon gated config's fallback lands here too)
        │ launch(x2 (M, K), w (2I, K), y (M, I), activation, cfg, target)
        ▼
    tma=True   ─► gemm_gated_tma_kernel  (kernels/triton/gemm_gated.py)   ops/dispatch.py decides, from
    tma=False  ─► gemm_gated_kernel                                       `tma_unsupported` here
    NUM_KSPLIT > 1 ─► gated_splitk_reduce_kernel over the (split, M, 2I) fp32 partials
        │ launch_rows(...): w's rows off 16 bytes, a few tokens (past them tma=True: ops/dispatch._rows_tma_kernel)
        ▼
    gemm_rows_kernel / gemm_rows_tma_kernel (kernels/triton/gemm_rows*.partials: [g | u] in fp32)
        ─► gated_splitk_reduce_kernel
    gemm_rows_tma_kernel, I % 8 == 0: class-major partials ─► its rows_reduce_kernel (GATED: act(g) * u)
        every launch through launcher.py

A gated tile reads 2 * BLOCK_SIZE_N rows of w per K step (gate and up) and writes BLOCK_SIZE_N columns
of h, so its shared memory bound is the dense one of the doubled tile minus half the output staging tile
(`smem_bytes`). `constexprs` / `static_spec` / `reduce_static_spec` describe a launch once, for the launch
and the static compiles of `gemmkit isa` (`table_cases`, `table_spec`, `reduce_spec`).

Constraints:
  - the Triton tier's kernels (a "backend": "gluon" config runs the Gluon gated tile, ops/dispatch.gated, or
    falls back here with the same tile);
  - TMA path: sm_90, cfg["tma"], x2, w, y TMA-compatible and the gated tile within the TMA box and
    shared memory limits (`fit_stages` shortens the ring for a 4-byte h); else the pointer kernel with the same
    tiles (ValueError if neither fits);
  - split-K partials are (NUM_KSPLIT, M, 2I) fp32, [g | u] per split, reduced in split order;
  - nothing here imports from gemmkit/ops.
"""
from __future__ import annotations

import torch

from ... import launcher as L
from .. import _host as C
from . import dense as G
from ._schedule import persistent_grid
from .gemm_gated import (
    gated_splitk_reduce_kernel,
    gemm_gated_kernel,
    gemm_gated_tma_kernel,
)

KERNEL_NAMES = {"tma": "gemm_gated_tma_kernel", "pointer": "gemm_gated_kernel"}


# ----------------------------------------------------------------------------- feasibility and path

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


def fit_stages(cfg: dict, target, in_bytes: int, out_bytes: int) -> dict:
    """`cfg` with the deepest ring (num_stages, down to 2) whose TMA tile fits the target's shared memory for this
    h dtype: a 4-byte h doubles the output staging tile, which the tables' 16-bit rings leave no room for (64 x 128
    at 5 stages: 238592 bytes with an fp32 h, 232448 allowed on sm_90). `cfg` itself where it fits or nothing does."""
    stages = cfg["num_stages"]
    while stages > 2 and smem_bytes(dict(cfg, num_stages=stages), target, in_bytes, out_bytes, True) > \
            target.shared_mem_bytes:
        stages -= 1
    return cfg if stages == cfg["num_stages"] else dict(cfg, num_stages=stages)


def tma_unsupported(cfg, target, x2, w, y) -> str | None:
    """Why the gated TMA kernel cannot take this call (None: it can): kernels/_host.tma_reason with the gated
    tile's shared-memory fit (`check_feasible`). ops/dispatch.py orders the kernels."""
    return C.tma_reason(cfg, target, {"x": x2, "w": w, "y": y},
                        lambda: C.fit_reason(check_feasible, cfg, target, x2.element_size(), y.element_size(),
                                             tma=True))


def constexprs(cfg: dict, target, *, tma: bool, activation: str, even_k: bool, int64_offsets: bool = False) -> dict:
    """The gated kernels' constexprs (one place for the launch and the static compile). `int64_offsets`
    (pointer kernel): the call's tensors span 2**31 elements or more (_host.int64_offsets); the TMA
    kernel has no int32 offset product and takes none."""
    c = dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
             GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds, ACTIVATION=activation,
             SPLIT_K=cfg["NUM_KSPLIT"])
    if not tma:
        c.update(EVEN_K=even_k, PERSISTENT=bool(cfg["persistent"]), INT64_OFFSETS=bool(int64_offsets),
                 W_KN=G.w_kn(target))  # w's tiles read (BLOCK_K, BLOCK_N) on gfx942: kernels/triton/_mainloop.py
    return c


def reduce_tile(M: int, I: int):
    """The gated reduce's (BLOCK_M, BLOCK_N): it holds two fp32 tiles (g and u) and loads 2 x SPLIT_K,
    so half the dense reduce's columns (kernels/triton/dense.reduce_tile) for the same registers per thread
    (32 x 128 spilled 8 bytes on sm_90 in the static compile; 32 x 64 does not)."""
    bm, bn = G.reduce_tile(M, I)
    return bm, max(1, bn // 2)


# ----------------------------------------------------------------------------- launch

def launch(x2, w, y, activation, cfg, target, compile_only=False, *, tma: bool):
    """The gated GEMM for one call: x2 (M, K), w (2I, K), y (M, I) 2-D views; `tma`: the TMA kernel
    (ops/dispatch.py: `tma_unsupported` allows it) or the pointer kernel. M is y's: the TMA kernel may take an x2 of
    more rows (a copy in whole boxes of rows, zeros after M: ops/dispatch.py pad_m)."""
    M, K = y.shape[0], x2.shape[1]
    I = w.shape[0] // 2
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    split_k = cfg["NUM_KSPLIT"]
    num_work = G.cdiv(M, bm) * G.cdiv(I, bn) * split_k
    # Split-K partials: (split, M, 2I) fp32, [g | u] per split, reduced in order by the gated reduce.
    part = torch.empty((split_k, M, 2 * I), dtype=torch.float32, device=x2.device) if split_k > 1 else y
    opts = C.compiler_options(cfg, target)
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    if tma:
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
        launch_reduce(part, y, activation, compile_only)


def launch_rows(x2, w, y, activation, target, compile_only=False, tma: bool = False):
    """The gated GEMM on a w whose rows TMA cannot address (K % 8 != 0): gemm_rows_kernel (one token, or a few where
    gemm_rows_tma declines) reads w where it lies into fp32 [g | u] partials (its `partials`), then the gated reduce
    adds them and applies the activation; `tma` (from M = 2): gemm_rows_tma_kernel, into class-major partials that
    its rows_reduce_kernel sums into act(g) * u where I is whole octets (`gemm_rows_tma.gated_takes`), else into
    partials in y's order and the gated reduce. (ops/dispatch.py weighs them against copies of x and w.)"""
    from . import gemm_rows, gemm_rows_tma

    if tma and gemm_rows_tma.gated_takes(y.shape[1], w.element_size()):
        gemm_rows_tma.launch(x2, w, None, y, activation, target, compile_only, gated=True)
        return
    launch_reduce((gemm_rows_tma if tma else gemm_rows).partials(x2, w, target, compile_only), y, activation,
                  compile_only)


def launch_reduce(part, y, activation, compile_only=False):
    """y (M, I) = act(g) * u of the split partials `part` (SPLIT_K, M, 2I) fp32, [g | u] per split, added in order."""
    split_k, M, I = part.shape[0], y.shape[0], y.shape[1]
    rbm, rbn = reduce_tile(M, I)
    rgrid = (G.cdiv(M, rbm), G.cdiv(I, rbn))
    L.launcher(gated_splitk_reduce_kernel, rgrid, compile_only)(
        part, y, M, I, M * 2 * I, y.stride(0), y.stride(1), SPLIT_K=split_k, BLOCK_M=rbm, BLOCK_N=rbn,
        ACTIVATION=activation, INT64_OFFSETS=C.int64_offsets(part, y), num_warps=G.REDUCE_WARPS)


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


def table_cases(op: str, archs):
    """Every bucket of every shipped `op` table (TMA configs: both paths), bf16, silu; plus the gated
    split-K reduce once per target, and on sm_90 gemm_rows_tma's reduce as the gated GEMM launches it."""
    for case in G.table_cases(op, archs):
        yield dict(case, kernel=KERNEL_NAMES[case["path"]])
    rbm, rbn = reduce_tile(2**20, 2**20)
    for arch in archs:
        yield {"kernel": "gated_splitk_reduce_kernel", "op": op, "arch": arch, "table": "-", "bucket": "-",
               "config": {"SPLIT_K": 4, "BLOCK_M": rbm, "BLOCK_N": rbn, "num_warps": G.REDUCE_WARPS},
               "path": "reduce"}
    if "sm_90" in archs:  # gemm_rows_tma's class-major partials summed into act(g) * u (`launch_rows`)
        from . import gemm_rows_tma as R

        yield {"kernel": "rows_reduce_kernel", "op": op, "arch": "sm_90", "table": "-", "bucket": "bf16",
               "config": {"BLOCK_M": R.REDUCE_M, "BLOCK_N": R.REDUCE_J * R.vec(2), "num_warps": R.REDUCE_WARPS,
                          "SPLIT_K": 3, "GATED": True}, "path": "rows_reduce"}


def table_spec(case):
    """isa_spec of a `table_cases` case."""
    from ... import arch as _arch
    from . import gemm_gated as K

    target = _arch.ARCHS[case["arch"]]
    if case["path"] == "rows_reduce":
        from . import gemm_rows_tma as R

        kernel, sig, ce, div, opts = R.reduce_static_spec(case["bucket"], case["config"]["SPLIT_K"], "silu", True)
        return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                    promises=R.REDUCE_PROMISES, block=None, smem_bound=0)
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
