"""The dense GEMM kernels seen from the host: feasibility, path choice, constexprs, launch.

Every GEMM op (gemm_a16w16, gemm_a8w8, gemm_a8w8_blockscale) validates its own
arguments, then calls `launch` here with 2-D operands, an output, and a
`Scaling` that says how (if at all) the accumulator is scaled:

    Scaling("none")                               a16w16
    Scaling("rowcol", x_scale (M,), w_scale (N,)) a8w8, per-token x per-channel, in the epilogue
    Scaling("block", x_scale (M, KB), w_scale (NB, KB), block_n, block_k)
                                                  a8w8_blockscale, per K step in the mainloop

Path per call (same config either way):
  TMA kernel      sm_90, config "tma": true, and x, w, y meet TMA's alignment rules
  pointer kernel  everything else (AMD, unaligned K/N, odd strides, the interpreter)

`constexprs` and `static_spec` are the single description of what a launch
specialises, used both by `launch` and by the static compiles of `gemmkit isa`.
"""
from __future__ import annotations

import dataclasses

import torch

from ... import launcher as L
from ...configs import split_tail
from .. import _budgets
from .. import _host as C
from .._host import FP8_DTYPES, TL_DTYPE, cdiv, next_pow2  # noqa: F401  (the ops and tests find them here)
from ._schedule import persistent_grid
from ._splitk_reduce import splitk_reduce_kernel, tail_reduce_kernel
from .gemm import gemm_kernel
from .gemm_tma import gemm_tma_kernel

TMA_MAX_BOX = 256  # elements per TMA box dimension



@dataclasses.dataclass(frozen=True)
class Scaling:
    mode: str = "none"  # "none" | "rowcol" | "block"
    x_scale: torch.Tensor | None = None
    w_scale: torch.Tensor | None = None
    block_n: int = 1  # block: rows of w per w_scale row
    block_k: int = 1  # block: K elements per scale column


NO_SCALING = Scaling()


# ----------------------------------------------------------------------------- feasibility and path

def smem_bytes(cfg: dict, target, in_bytes: int, out_bytes: int, tma: bool) -> int:
    """Upper bound on the shared memory (LDS) a config needs on `target`.

    NVIDIA: the pipeliner keeps `num_stages` (x, w) tile pairs in shared memory;
    the TMA path also stages the output tile for its TMA store. AMD: the stream
    pipeliner keeps num_stages - 1 pairs in LDS (the newest K step waits in
    registers; gfx950 from Triton 3.8: num_stages, loaded straight into LDS). Read off
    compiled kernels (Triton 3.6; what later releases change: kernels/_budgets.py, whose
    `amd_lds_bytes` and `tma_slack` this uses); the static-compile test checks that the
    bound holds for every shipped config.
    """
    stage = (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"] * in_bytes
    if target.is_amd:
        return _budgets.amd_lds_bytes(_budgets.num_stages(cfg, target), stage, target)
    # TMA: the output staging tile, plus ~0.5 KiB of mbarriers and alignment seen in compiled kernels.
    epilogue = cfg["BLOCK_SIZE_M"] * cfg["BLOCK_SIZE_N"] * out_bytes + _budgets.tma_slack(cfg, out_bytes) if tma else 0
    # Pointer path on NVIDIA: up to 1 KiB of layout-conversion scratch (block scales moved into
    # the wgmma accumulator layout), seen in compiled kernels.
    scratch = 1024 if not tma else 0
    return cfg["num_stages"] * stage + epilogue + scratch


def triton_tile(cfg: dict, fp8: bool = False) -> dict:
    """The config the Triton tier runs for `cfg` when a call falls back from Gluon: itself, but
    - a split tile (BLOCK_SIZE_N in configs.SPLIT_N, which only the dense Gluon kernels build, from two
      accumulators of A + B columns: configs.split_tail) runs its larger power-of-two part A (ops/dispatch.py), and so
      does a split width of tokens (BLOCK_SIZE_M of the cooperative kernel's swap-AB tile);
    - (fp8 operands, promoted on sm_90) the Gluon FP8 kernel's cooperative 256-row tile (num_warps 8: a 128-row
      half per consumer, one 64-row partial reused over its slices) runs 128 rows: the Triton tier's promotion
      keeps a second accumulator of the whole tile, and 256 x 128 spills (592 bytes at BLOCK_SIZE_K 128)."""
    tail = split_tail(cfg["BLOCK_SIZE_N"])
    if tail:
        cfg = dict(cfg, BLOCK_SIZE_N=cfg["BLOCK_SIZE_N"] - tail)
    tail = split_tail(cfg["BLOCK_SIZE_M"])
    if tail:
        cfg = dict(cfg, BLOCK_SIZE_M=cfg["BLOCK_SIZE_M"] - tail)
    if fp8 and cfg.get("backend") == "gluon" and cfg["num_warps"] == 8 and cfg["BLOCK_SIZE_M"] == 256:
        cfg = dict(cfg, BLOCK_SIZE_M=128)
    return cfg


def check_feasible(cfg: dict, target, in_bytes: int = 2, out_bytes: int = 2, tma: bool = False):
    """Raise ValueError (naming the key) if `cfg` (its `triton_tile`) cannot run on `target` on the given path."""
    cfg = triton_tile(cfg)
    if tma:
        if not target.is_nvidia:
            raise ValueError(f"config: key 'tma' needs an NVIDIA sm_90 target, not {target.arch}")
        for key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K"):
            if cfg[key] > TMA_MAX_BOX:
                raise ValueError(f"config: key {key!r} = {cfg[key]} exceeds the TMA box limit of {TMA_MAX_BOX}")
    need = smem_bytes(cfg, target, in_bytes, out_bytes, tma)
    if need > target.shared_mem_bytes:
        raise ValueError(
            f"config: BLOCK_SIZE_M/N/K = {cfg['BLOCK_SIZE_M']}/{cfg['BLOCK_SIZE_N']}/{cfg['BLOCK_SIZE_K']} with "
            f"num_stages = {cfg['num_stages']} needs {need} bytes of shared memory{' (TMA path)' if tma else ''}; "
            f"{target.name} ({target.arch}) allows {target.shared_mem_bytes} per block")


def fallback_stages(cfg: dict, target, in_bytes: int, out_bytes: int, tma: bool) -> dict:
    """`cfg` as the Triton tier runs it on `tma`'s path: a Gluon config (`"backend": "gluon"`) with as many of its
    num_stages as fit there, since for a Gluon config num_stages is an upper bound (the Gluon kernels run as many
    stages as fit them: kernels/gluon/hopper_plan.py); any other config as it is (its stages fit, or
    `check_feasible` says why not). Why: the config model widens Gluon swap-AB tiles to 128 weight rows keeping 8
    stages (`swap_wide`), which fit the Gluon kernel's budget but not the Triton tier's, so a call that kernel
    declines (an x with a non-unit last stride, the interpreter) raised ValueError."""
    if cfg.get("backend") != "gluon":
        return cfg
    stages = cfg["num_stages"]
    while stages > 1 and smem_bytes(dict(cfg, num_stages=stages), target, in_bytes, out_bytes, tma) > \
            target.shared_mem_bytes:
        stages -= 1
    return cfg if stages == cfg["num_stages"] else dict(cfg, num_stages=stages)


def tma_fit_unsupported(cfg: dict, target, in_bytes: int, out_bytes: int) -> str | None:
    """Why the TMA kernel cannot run `cfg` (its `triton_tile`) on `target` whatever the tensors (None: it can)."""
    if not cfg.get("tma"):
        return 'the config has "tma": false'
    return C.fit_reason(check_feasible, cfg, target, in_bytes, out_bytes, tma=True)


def mn_major(t) -> bool:
    """Whether the 2-D operand `t` is transposed in memory (unit stride along its rows: a (K, N) weight passed as
    W.t()) with storage TMA takes, 16-bit: the TMA kernel reads it where it lies (X_KM / W_KN, gemm_tma.py)."""
    return t.element_size() == 2 and t.stride(-1) != 1 and C.tma_compatible(t.t())


def tma_unsupported(cfg: dict, target, x2, w, y) -> str | None:
    """Why the TMA kernel cannot take this call (None: it can): the config asks for it, the target has it,
    x, w (either as it is or transposed in memory, 16-bit: `mn_major`) and y meet TMA's rules and the output staging
    tile fits (an fp32 output doubles it). The pointer kernel runs the same tiles otherwise (ops/dispatch.py orders
    the kernels)."""
    return C.tma_reason(cfg, target, {"x": x2, "w": w, "y": y},
                        lambda: tma_fit_unsupported(cfg, target, x2.element_size(), y.element_size()),
                        lambda t: C.tma_compatible(t) or (t is not y and mn_major(t)),
                        C.TMA_RULE_2D + " (x and w 16-bit: or the same of their transpose)")


def pointer_config(cfg: dict, scale: str) -> dict:
    """The config the pointer kernel runs for `cfg`. A block-scale TMA config (tuned for the TMA
    kernel, whose persistent loop is flattened so the next tile's loads overlap this tile's
    epilogue) falls back to a non-persistent pointer launch: there the pointer kernel's unflattened
    persistent loop only adds live registers (+16 bytes of spills for 8-warp 128 x 128 tiles,
    static compile on sm_90). Other ops keep the config as it is."""
    return dict(cfg, persistent=False) if cfg.get("tma") and scale == "block" else cfg


def pointer_block_k(cfg: dict, scale: str, scale_bk: int) -> dict:
    """The pointer kernel's K step under block scales: at most one scale block (a TMA config may take two,
    `step_boxes`)."""
    if scale == "block" and cfg["BLOCK_SIZE_K"] > scale_bk:
        return dict(cfg, BLOCK_SIZE_K=scale_bk)
    return cfg


# ----------------------------------------------------------------------------- what a launch specialises

# Where the pointer mainloop reads w's tile as (BLOCK_K, BLOCK_N) (W_KN): gfx942, whose transposed (BLOCK_N, BLOCK_K)
# tile Triton left in an unswizzled LDS buffer (kernels/triton/_mainloop.py says why). gfx950 swizzles both forms
# alike under 3.6, and 3.8 allocates the (BLOCK_K, BLOCK_N) form's direct-to-LDS buffer larger there (over the LDS
# bound of its tables' tiles): it keeps (BLOCK_N, BLOCK_K), as sm_90 does (its measured code).
W_KN_ARCHS = ("gfx942",)


def w_kn(target) -> bool:
    return target.arch in W_KN_ARCHS


def step_boxes(bk: int, scale: str, scale_bk: int) -> tuple[int, int]:
    """(K_BOX, SUB) of the TMA kernel's K step of BLOCK_K = bk: one box of bk, or with block scales and bk a
    multiple of the scale block's K, bk / scale_bk boxes of scale_bk (one scaled product each). Why: the 16-row
    per-token decode tile streams 5-17% faster at BLOCK_K 256 than at 128 (ab/fp8_decode_bk.json); for block scales
    256 = 2 x 128 was mixed on the tables' 16 x 64 tiles (ab/blockscale_bk256.json: +2 to +17% on 26 of 96 decode
    rows, down to -28% on others), so no table asks for it; the config model's `decode_wide_k` serves 16 x 128 x 256
    at M <= 16 beyond one wave (configs/model/)."""
    if scale == "block" and bk > scale_bk:
        if bk % scale_bk:
            raise ValueError(f"config: key 'BLOCK_SIZE_K' = {bk}: block scales of {scale_bk} K need a BLOCK_SIZE_K "
                             "dividing it or a multiple of it")
        return scale_bk, bk // scale_bk
    return bk, 1


def constexprs(cfg: dict, target, *, tma: bool, has_bias: bool, activation: str, even_k: bool,
               in_dtype=torch.bfloat16, scale: str = "none", scale_bn: int = 1, scale_bk: int = 1,
               int64_offsets: bool = False) -> dict:
    """The kernel's constexpr arguments, from the config, the target and the operands
    (one place for the launch and the static compile). `int64_offsets`: the call's tensors span 2**31
    elements or more (_common.int64_offsets; kernels/triton/_offsets.py)."""
    k_box = step_boxes(cfg["BLOCK_SIZE_K"], scale, scale_bk)[0] if tma else cfg["BLOCK_SIZE_K"]
    c = dict(BLOCK_M=cfg["BLOCK_SIZE_M"], BLOCK_N=cfg["BLOCK_SIZE_N"], BLOCK_K=cfg["BLOCK_SIZE_K"],
             GROUP_SIZE_M=cfg["GROUP_SIZE_M"], NUM_XCDS=target.num_xcds,
             HAS_BIAS=has_bias, ACTIVATION=activation, SPLIT_K=cfg["NUM_KSPLIT"],
             SCALE=scale, SCALE_BN=scale_bn, SCALE_BK=scale_bk,
             ACC_INT=in_dtype == torch.int8,
             # fp8 on sm_90: promote the wgmma partial sums to fp32 every K block of <= 128 (_mainloop.py).
             PROMOTE_K=min(k_box, 128) if in_dtype in FP8_DTYPES else 0,  # (a dot's K: one box)
             INT64_OFFSETS=bool(int64_offsets))
    if not tma:
        c.update(EVEN_K=even_k, PERSISTENT=bool(cfg["persistent"]), W_KN=w_kn(target))
    return c


def tma_constexprs(cfg: dict, target, x_km: bool = False, w_kn: bool = False, **kw) -> dict:
    """gemm_tma_kernel's: `constexprs`, its K step's boxes (K_BOX, SUB: `step_boxes`) and whether x / w are read
    transposed in memory (X_KM / W_KN: `mn_major`)."""
    c = constexprs(cfg, target, tma=True, even_k=False, **kw)
    c["K_BOX"], c["SUB"] = step_boxes(cfg["BLOCK_SIZE_K"], kw.get("scale", "none"), kw.get("scale_bk", 1))
    c.update(X_KM=bool(x_km), W_KN=bool(w_kn))
    return c


def tma_blocks(ce: dict) -> tuple:
    """The TMA kernel's (x, w, y) descriptor boxes for its constexprs `ce`: x / w boxes over their transposed
    storage where X_KM / W_KN."""
    bm, bn, kb = ce["BLOCK_M"], ce["BLOCK_N"], ce["K_BOX"]
    return [kb, bm] if ce["X_KM"] else [bm, kb], [kb, bn] if ce["W_KN"] else [bn, kb], [bm, bn]


def static_spec(cfg: dict, target, *, dtype=torch.bfloat16, out_dtype=None, tma: bool | None = None,
                has_bias: bool = True, activation: str = "none", even_k: bool = True, scale: str = "none",
                scale_bn: int = 1, scale_bk: int = 1, int64_offsets: bool = False, x_km: bool = False,
                w_kn: bool = False):
    """(kernel, signature, constexprs, divisible, options) to compile a GEMM for `target` without a GPU.

    Describes the common aligned case as the JIT would specialise it: unit
    stride on K constexpr, pointers and row strides divisible by 16 (`divisible`); `int64_offsets`
    compiles the variant a call with a span of 2**31 elements or more runs; `x_km` / `w_kn` the TMA kernel's
    variant for x / w transposed in memory.
    """
    out_dtype = out_dtype or (dtype if dtype in C.FLOAT16_DTYPES else torch.bfloat16)
    tma = bool(cfg.get("tma")) and target.is_nvidia if tma is None else tma
    kw = dict(has_bias=has_bias, activation=activation, in_dtype=dtype, scale=scale, scale_bn=scale_bn,
              scale_bk=scale_bk, int64_offsets=int64_offsets)
    ce = tma_constexprs(cfg, target, x_km, w_kn, **kw) if tma else \
        constexprs(cfg, target, tma=False, even_k=even_k, **kw)
    t_in, t_out = TL_DTYPE[dtype], TL_DTYPE[out_dtype]
    t_bias = t_in if dtype in C.FLOAT16_DTYPES else "bf16"
    scale_strides = {"stride_xsm": "i32", "stride_xsk": "i32", "stride_wsn": "i32", "stride_wsk": "i32"}
    if tma:
        bx, bw, by = tma_blocks(ce)
        sig = {"x_desc": f"tensordesc<{t_in}{bx}>", "w_desc": f"tensordesc<{t_in}{bw}>",
               "y_desc": f"tensordesc<{t_out}{by}>", "xs_ptr": "*fp32", "wsc_ptr": "*fp32",
               "bias_ptr": f"*{t_bias}", "part_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32", **scale_strides}
        kernel = gemm_tma_kernel
    else:
        sig = {"x_ptr": f"*{t_in}", "w_ptr": f"*{t_in}", "xs_ptr": "*fp32", "wsc_ptr": "*fp32",
               "bias_ptr": f"*{t_bias}", "y_ptr": f"*{t_out}", "part_ptr": "*fp32",
               "M": "i32", "N": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr", "stride_wn": "i32", "stride_wk": "constexpr",
               "stride_ym": "i32", "stride_yn": "constexpr", **scale_strides}
        ce.update(stride_xk=1, stride_wk=1, stride_yn=1)  # the contiguous fast case Triton specialises
        kernel = gemm_kernel
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items() if v.startswith("*") or k in ("stride_xm", "stride_wn", "stride_ym")]
    return kernel, sig, ce, divisible, C.compiler_options(cfg, target)


# Split-K reduce tile: 32 x 128 fp32 = 16 KiB per split, read by 4 warps (16 B per thread per row
# chunk); shrunk to the problem for small M / N.
REDUCE_BM, REDUCE_BN, REDUCE_WARPS = 32, 128, 4


def reduce_tile(M: int, N: int, min_programs: int = 0):
    """(BLOCK_M, BLOCK_N) of the reduce. `min_programs` (the launch passes 2 x SMs): where the full
    tiles leave fewer programs than that, BLOCK_M halves (down to 8): a few-tile output (512 x 576:
    16 x 5 = 80 programs of 32 x 128, each summing 8 x 16 KiB) is latency-bound on a few SMs
    (5 us of a 19 us split-8 op on the H200)."""
    bm, bn = min(REDUCE_BM, next_pow2(M)), min(REDUCE_BN, next_pow2(N))
    while bm > 8 and cdiv(M, bm) * cdiv(N, bn) < min_programs:
        bm //= 2
    return bm, bn


REDUCE_ALIGN = True  # False: the reduce as before its VEC / Y_VEC hints (benchmarks/ab_configs.py "_align")


def reduce_alignment(N: int, split_stride: int, y) -> dict:
    """splitk_reduce_kernel's VEC / Y_VEC: the largest power of two up to 16 bytes' worth that divides N and
    `split_stride` (the fp32 workspace's rows and slabs), and N and y's row stride."""
    def vec(limit, *values):
        v = limit if REDUCE_ALIGN else 1
        while v > 1 and any(value % v for value in values):
            v //= 2
        return v

    return dict(VEC=vec(4, N, split_stride), Y_VEC=vec(16 // y.element_size(), N, y.stride(0)))


def reduce_static_spec(target, *, split_k: int = 4, dtype=torch.bfloat16, activation: str = "silu"):
    """(kernel, signature, constexprs, divisible, options) of the split-K reduce as `launch` runs it
    for a large problem (full reduce tiles)."""
    t = TL_DTYPE[dtype]
    bm, bn = reduce_tile(2**20, 2**20)
    sig = {"ws_ptr": "*fp32", "bias_ptr": f"*{t}", "y_ptr": f"*{t}", "M": "i32", "N": "i32", "split_stride": "i32",
           "stride_ym": "i32", "stride_yn": "constexpr"}
    ce = dict(stride_yn=1, SPLIT_K=split_k, BLOCK_M=bm, BLOCK_N=bn, HAS_BIAS=True, ACTIVATION=activation,
              INT64_OFFSETS=False, VEC=4, Y_VEC=16 // torch.tensor([], dtype=dtype).element_size())
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return splitk_reduce_kernel, sig, ce, ["ws_ptr", "bias_ptr", "y_ptr", "stride_ym"], {"num_warps": REDUCE_WARPS}


# ----------------------------------------------------------------------------- launch

@dataclasses.dataclass(frozen=True)
class Plan:
    """What one launch needs that its tensors' data do not change (`plan` computes it once per key)."""
    tma: bool
    kernel: object
    grid: tuple
    kwargs: dict  # constexprs and compiler options
    blocks: tuple  # TMA: the x, w, y descriptor blocks
    split_k: int
    reduce_grid: tuple
    reduce_kwargs: dict


_PLANS: dict = {}
MAX_PLANS = 4096  # plans are ~1 KiB; one per distinct (config, shape, strides, dtypes, epilogue) in use


def plan(x2, w, y, has_bias, activation, cfg, target, scaling: Scaling = NO_SCALING, tma: bool = False) -> Plan:
    """The path (TMA or pointer), grid, constexprs and options of a launch, cached under a key that
    holds everything they depend on: the config, the target, shapes, strides, dtypes, the epilogue,
    the scaling (block scales: their strides too, for INT64_OFFSETS) and whether every base pointer is 16-byte
    aligned (TMA's rule)."""
    key = (tuple(cfg.items()), target.arch, target.backend, target.num_cus, target.num_xcds, target.shared_mem_bytes,
           x2.shape, w.shape, y.shape, x2.stride(), w.stride(), y.stride(), x2.dtype, y.dtype, has_bias, activation,
           scaling.mode, scaling.block_n, scaling.block_k, (x2.data_ptr() | w.data_ptr() | y.data_ptr()) & 15 == 0,
           (scaling.x_scale.stride(), scaling.w_scale.stride()) if scaling.mode == "block" else None, tma)
    p = _PLANS.get(key)
    if p is None:
        if len(_PLANS) >= MAX_PLANS:  # a server's ever-new M: start over rather than grow without bound
            _PLANS.clear()
        p = _PLANS[key] = _make_plan(x2, w, y, has_bias, activation, triton_tile(cfg, x2.dtype in FP8_DTYPES), target,
                                     scaling, tma)
    return p


def _make_plan(x2, w, y, has_bias, activation, cfg, target, scaling, tma):
    (M, N), K = y.shape, x2.shape[1]  # x2 / w may hold rows past M / N (ops/dispatch.py's pad_m / pad_n)
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    split_k = cfg["NUM_KSPLIT"]
    # Every tensor the kernels address by pointer; the split-K workspace as `launch` allocates it. Bias and the
    # rowcol scales are contiguous vectors of N / M elements.
    part = torch.empty((split_k, M, N), dtype=torch.float32, device="meta") if split_k > 1 else None
    wide = C.int64_offsets(x2, w, y, part, *((scaling.x_scale, scaling.w_scale) if scaling.mode == "block" else ()))
    common = dict(has_bias=has_bias, activation=activation, in_dtype=x2.dtype, scale=scaling.mode,
                  scale_bn=scaling.block_n, scale_bk=scaling.block_k, int64_offsets=wide)
    if tma:
        ce = tma_constexprs(cfg, target, mn_major(x2), mn_major(w), **common)
        kernel, blocks = gemm_tma_kernel, tma_blocks(ce)
    else:
        cfg = pointer_block_k(pointer_config(cfg, scaling.mode), scaling.mode, scaling.block_k)
        bk = cfg["BLOCK_SIZE_K"]
        ce = constexprs(cfg, target, tma=False, even_k=K % bk == 0, **common)
        kernel, blocks = gemm_kernel, ()
    # One program per work id (tile x split), or a persistent grid of one program per CU.
    num_work = cdiv(M, bm) * cdiv(N, bn) * split_k
    grid = (persistent_grid(num_work, target.num_cus, target.num_xcds) if cfg["persistent"] else num_work,)
    reduce_grid, reduce_kwargs = reduce_plan(M, N, split_k, has_bias, activation, target, wide)
    return Plan(tma=tma, kernel=kernel, grid=grid, kwargs={**ce, **C.compiler_options(cfg, target)}, blocks=blocks,
                split_k=split_k, reduce_grid=reduce_grid, reduce_kwargs=reduce_kwargs)


def reduce_plan(M, N, split_k, has_bias, activation, target, int64_offsets=False):
    """(grid, constexprs and options) of the split-K reduce of an M x N output (`reduce_tile`)."""
    rbm, rbn = reduce_tile(M, N, 2 * target.num_cus)
    return (cdiv(M, rbm), cdiv(N, rbn)), dict(SPLIT_K=split_k, BLOCK_M=rbm, BLOCK_N=rbn, HAS_BIAS=has_bias,
                                              ACTIVATION=activation, INT64_OFFSETS=bool(int64_offsets),
                                              num_warps=REDUCE_WARPS)


def launch_reduce(ws, split_stride, split_k, bias, y, activation, target, compile_only=False, grid=None, kwargs=None):
    """y = act(ws[0] + ... + ws[split_k - 1] + bias), the slabs `split_stride` elements apart in the fp32
    workspace `ws` (rows of N), summed in that order: the split-K reduce of both tiers (`launch`: slabs of M
    rows; kernels/gluon/hopper_host.launch_dense: slabs padded to whole tiles of rows). `grid` / `kwargs`:
    a cached `reduce_plan` (the Triton tier's Plan)."""
    M, N = y.shape
    if grid is None:
        grid, kwargs = reduce_plan(M, N, split_k, bias is not None, activation, target, C.int64_offsets(ws, y))
    L.launcher(splitk_reduce_kernel, grid, compile_only)(
        ws, bias if bias is not None else y, y, M, N, split_stride, y.stride(0), y.stride(1), **kwargs,
        **reduce_alignment(N, split_stride, y))


def tail_reduce_rows(bm: int, tail: int, min_programs: int) -> int:
    """Rows of a tail tile one reduce program sums: BM halved (down to 1) until tail * BM / rows programs reach
    `min_programs` (the launch passes 2 x SMs): 4 tail tiles of 128 rows -> 2 rows, 256 programs."""
    rows = bm
    while rows > 1 and tail * (bm // rows) < min_programs:
        rows //= 2
    return rows


def launch_tail_reduce(part, first_tile, tail, splits, bm, bn, group_size_m, bias, y, target, compile_only=False,
                       activation="none", shift=False):
    """y's last `tail` tiles (ids first_tile.., in the kernels' grouped order) = the sum of their `splits` fp32
    partial tiles in `part` (the tail split of kernels/gluon/hopper_pingpong_fp8.py's coop layout, of
    hopper_pingpong.py and of hopper_coop.py), in split order, + bias, activation, cast at the tiles' origins
    (`shift`: the kernel's last tiles shifted back): kernels/triton/_splitk_reduce.tail_reduce_kernel,
    `tail_reduce_rows` rows a program."""
    M, N = y.shape
    rows = tail_reduce_rows(bm, tail, 2 * target.num_cus)
    L.launcher(tail_reduce_kernel, (tail, bm // rows), compile_only)(
        part, bias if bias is not None else y, y, M, N, y.stride(0), y.stride(1), first_tile, SPLITS=splits,
        BM=bm, BN=bn, ROWS=rows, GROUP_SIZE_M=group_size_m, HAS_BIAS=bias is not None, ACTIVATION=activation,
        SHIFT=shift, INT64_OFFSETS=C.int64_offsets(part, y), num_warps=REDUCE_WARPS)


def launch(x2, w, bias, y, activation, cfg, target, scaling: Scaling = NO_SCALING, compile_only=False, *,
           tma: bool):
    """Launch (or, with compile_only, just compile: the tuner's parallel warm-up) the GEMM for one call.

    x2 (M, K), w (N, K), y (M, N) 2-D views; bias (N,) contiguous or None; scales as `scaling` says;
    `tma`: the TMA kernel (ops/dispatch.py decided that `tma_unsupported` allows it) or the pointer kernel.
    """
    # x2 may hold rows past y's, w rows past y's columns (ops/dispatch.py's pad_m / pad_n: computed, then dropped)
    (M, N), K = y.shape, x2.shape[1]
    has_bias = bias is not None
    p = plan(x2, w, y, has_bias, activation, cfg, target, scaling, tma)
    bias_arg = bias if has_bias else y  # never read when HAS_BIAS is False
    xs = scaling.x_scale if scaling.x_scale is not None else y  # never read when SCALE == "none"
    wsc = scaling.w_scale if scaling.w_scale is not None else y
    if scaling.mode == "block":
        scale_strides = (xs.stride(0), xs.stride(1), wsc.stride(0), wsc.stride(1))
    else:
        scale_strides = (0, 0, 0, 0)
    # Split-K partial sums: (split, M, N) fp32, reduced in order by splitk_reduce_kernel.
    part = torch.empty((p.split_k, M, N), dtype=torch.float32, device=x2.device) if p.split_k > 1 else y
    if p.tma:
        bx, bw, by = p.blocks
        x_t, w_t = x2.t() if p.kwargs["X_KM"] else x2, w.t() if p.kwargs["W_KN"] else w  # (the storage as it lies)
        L.launcher(p.kernel, p.grid, compile_only)(
            L.tma_descriptor(x_t, bx), L.tma_descriptor(w_t, bw), L.tma_descriptor(y, by), xs, wsc, bias_arg, part,
            M, N, K, *scale_strides, **p.kwargs)
    else:
        L.launcher(p.kernel, p.grid, compile_only)(
            x2, w, xs, wsc, bias_arg, y, part, M, N, K, x2.stride(0), x2.stride(1), w.stride(0), w.stride(1),
            y.stride(0), y.stride(1), *scale_strides, **p.kwargs)
    if p.split_k > 1:
        launch_reduce(part, M * N, p.split_k, bias, y, activation, target, compile_only, p.reduce_grid,
                      p.reduce_kwargs)


def matrix_operand(t):
    """A 2-D operand the pointer kernel reads well: unit stride on one dim, else a contiguous copy."""
    if t.stride(-1) == 1 or t.stride(0) == 1:
        return t
    return t.contiguous()


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def _case_dtype(name, target):
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "int8": torch.int8}.get(name) or C.fp8_dtype(target)


def triton_kernels(cfg: dict, target, in_bytes: int = 2, out_bytes: int = 2) -> list:
    """["gemm_tma_kernel", "gemm_kernel"] or ["gemm_kernel"]: the Triton-tier kernels that can serve `cfg` (its
    `triton_tile`) on `target` for some call, in dispatch order (ops/dispatch.py): the TMA kernel where the config
    asks for it and its shared memory fits (the pointer kernel takes the calls TMA cannot), then the pointer kernel."""
    tma = target.is_nvidia and tma_fit_unsupported(cfg, target, in_bytes, out_bytes) is None
    return ["gemm_tma_kernel", "gemm_kernel"] if tma else ["gemm_kernel"]


def table_cases(op: str, archs, dtypes=("bf16",)):
    """Every bucket of every shipped table of `op` for its arch, per operand dtype, once per Triton-tier kernel
    that can serve it (`triton_kernels`: the TMA kernel and the pointer kernel the op falls back to, or the
    pointer kernel alone where the TMA kernel's shared memory would not fit: e.g. the Triton fallback of a
    4-stage 128 x 256 Gluon cooperative bucket), and the config model's Triton tiles beside the default table
    (configs.model_configs). The Gluon kernels' cases: kernels/gluon/hopper_*.isa_cases."""
    import json

    from ... import arch as _arch
    from ... import configs as _configs

    for path in _configs.shipped_tables(op):
        arch = path.parent.name
        if arch not in archs:
            continue
        buckets = [(b, c) for b, c in json.loads(path.read_text()).items() if c != _configs.MODEL]
        if path == _configs.table_path(op, arch):  # the config model's Triton tiles no table ships (decode_wide)
            buckets += [(name, c) for name, c in _configs.model_configs(op, arch) if c.get("backend") != "gluon"]
        for bucket, shipped in buckets:
            shipped = _configs.validate_config(shipped, backend=_arch.ARCHS[arch].backend, where=f"{path}:{bucket}")
            for dt in dtypes:
                cfg = triton_tile(shipped, fp8=dt == "fp8")
                in_bytes = 1 if dt in ("fp8", "int8", "fp4") else 2
                for kernel in triton_kernels(cfg, _arch.ARCHS[arch], in_bytes):
                    yield {"kernel": kernel, "op": op, "arch": arch, "table": path.name, "bucket": bucket,
                           "config": cfg, "path": "tma" if kernel == "gemm_tma_kernel" else "pointer", "dtype": dt}


def table_spec(case, *, scale="none", scale_bn=1, scale_bk=1):
    """isa_spec for a table case: the GEMM kernel as the op launches it for `case["dtype"]` operands (the TMA
    kernel's variant for x / w transposed in memory where the case says "x_km" / "w_kn")."""
    from ... import arch as _arch
    from . import gemm as k_ptr
    from . import gemm_tma as k_tma

    target = _arch.ARCHS[case["arch"]]
    cfg, tma = case["config"], case["path"] == "tma"
    cfg = cfg if tma else pointer_config(cfg, scale)
    dtype = _case_dtype(case.get("dtype", "bf16"), target)
    kernel, sig, ce, div, opts = static_spec(cfg, target, dtype=dtype, tma=tma, scale=scale, scale_bn=scale_bn,
                                             scale_bk=scale_bk, **({"x_km": case.get("x_km", False),
                                                                    "w_kn": case.get("w_kn", False)} if tma else {}))
    out_bytes = 2
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=(k_tma if tma else k_ptr).PROMISES,
                block=(cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]),
                smem_bound=smem_bytes(cfg, target, dtype.itemsize, out_bytes, tma))
