"""The host side shared by the Hopper Gluon GEMM kernels (hopper_pingpong.py, hopper_coop.py, and pieces of
hopper_pingpong_batched.py / hopper_pingpong_fp8.py): what a call may pass (dtypes, TMA rules, shapes), how
a dense call is launched (TMA descriptors, the persistent grid, split-K's and the tail split's workspaces and
reduces), how many K splits a call runs, and the helpers of their static compiles (`gemmkit isa` signatures and cases).

No device code here: each kernel file holds its plan (`derive`), partitions and kernel, and calls in::

    op (ops/gemm_a16w16.py) ──► kernel.launch(x2, w, bias, y, activation, cfg, target)
                                   │ check_operands            (dense_unsupported: sm_90, dtypes, TMA rules)
                                   │ derive(fit_split_k(cfg))  (the kernel's plan; split count for this M)
                                   ▼
                                launch_dense ──► launch_tma (descriptors, grid = min(work, SMs))
                                   │ split-K: fp32 workspace, then kernels/triton/dense.launch_reduce
                                   │ tail split (ping-pong, coop; configs/model/tail.py): fp32 workspace of the last
                                   │   round's splits, then kernels/triton/dense.launch_tail_reduce
                                   (the ping-pong's swap_ab calls launch_tma itself, w and x swapped)

Below it: the launcher (gemmkit/launcher.py) and the Triton tier's split-K reduce (kernels/triton/dense.py
`launch_reduce`); nothing here imports from ops/.

Constraints (the kernels' own are in their files):
  - split-K: N % 4 == 0 (the fp32 workspace's rows must be 16-byte aligned for TMA); every split's K range
    starts below K (`fit_split_k` / `split_count`; `launch_dense` raises ValueError otherwise).
  - tail split (configs/model/tail.py): R S <= CTAs (a CTA runs at most one split, its last item), every split starting
    below K; the workspace R S BM x BN fp32 (plain stores: any N); never together with split-K.
  - Tensors spanning 2**31 elements or more need nothing here: x, w, y and the split-K workspace go through TMA
    descriptors (64-bit strides, int32 coordinates per dim: every dim < 2**31), the bias by an index below N (the
    batched kernels add an int64 batch offset), and the split-K reduce (the Triton tier's) sets its own
    INT64_OFFSETS (kernels/triton/dense.launch_reduce). A transposed or column-major operand fails `tma_ok` and runs on the
    Triton tier. (The FP8 kernel's block scales are read with int32 offsets: hopper_pingpong_fp8.unsupported.)
"""
from __future__ import annotations

import functools

from triton.experimental.gluon import language as gl

from ... import launcher
from .. import _host
from ...configs.model import split_count  # (the split-K and tail-split counts live with the config model)
from ..triton import _schedule, dense

# A Gluon config's keys (the Hopper kernels' `check_config`; `unique_cases` compiles each distinct one once) and
# the keys it may carry for the Triton tier's fallback, ignored here: always persistent and TMA; NUM_KSPLIT is
# split-K (the dense kernels only: `fit_split_k`).
CONFIG_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")
IGNORED_KEYS = ("backend", "persistent", "tma", "NUM_KSPLIT", "swap_ab")
# (NUM_KSPLIT and swap_ab are read by the kernels that take them: split-K by the dense kernels, swap_ab by the
# ping-pong; `hopper_plan.check_config` refuses them elsewhere.)
# Warps of one consumer warpgroup (wgmma is issued by 4 consecutive warps): a config's num_warps for the
# ping-pong, and every warp-specialized launch's num_warps (the default partition, consumer 0).
CONSUMER_WARPS = 4


# ----------------------------------------------------------------------------- operands

GL_DTYPE = {"bf16": gl.bfloat16, "fp16": gl.float16, "fp32": gl.float32}
TORCH_NAME = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}


@functools.lru_cache(maxsize=None)
def shared_layout(rows: int, cols: int, dtype: str):
    """The NVMMA shared layout of a rows x cols TMA box / smem tile (128B swizzle for 64 bf16 columns)."""
    return gl.NVMMASharedLayout.get_default_for([rows, cols], GL_DTYPE[dtype])


# TMA's alignment rules on sm_90: a tensor's base, its row strides and (measured on the H200 with
# a probe kernel: an unaligned box start faults) every box's start in global memory on TMA_ALIGN bytes; a box's destination in shared
# memory on TMA_SMEM_ALIGN bytes (else the kernel faults).
from .._host import TMA_ALIGN  # noqa: E402, F401  (the one number, for the fp8 kernels; tma_compatible applies it)
from .._host import tma_compatible as tma_ok  # noqa: E402  (the Triton tier's rule, one definition for both tiers)
TMA_SMEM_ALIGN = 128


def dtype_unsupported(x, w, y, target=None) -> str | None:
    """The target and dtype rules of the 16-bit Hopper kernels, dense and batched (None: they hold): sm_90,
    bf16 / fp16 x and w of one dtype, a bf16 / fp16 / fp32 output. Each kernel adds its TMA rules."""
    import torch

    if target is not None and target.arch != "sm_90":
        return f"needs sm_90, not {target.arch}"
    if x.dtype not in (torch.bfloat16, torch.float16) or w.dtype != x.dtype:
        return f"needs bf16/fp16 x and w of one dtype, got {x.dtype} and {w.dtype}"
    if y.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        return f"needs a bf16, fp16 or fp32 output, got {y.dtype}"
    return None


def dense_unsupported(x2, w, y, target=None, w_kn: bool = False) -> str | None:
    """Why the dense kernels (hopper_pingpong, hopper_coop) cannot run these tensors (None: they can); the op
    falls back to the Triton tier then. `w_kn`: the call is the ping-pong's swap-AB tile, which also reads a w
    transposed in memory (a (K, N) weight passed as W.t()) where its storage meets TMA's rules (16-bit:
    kernels/triton/dense.mn_major, the Triton tier's TMA kernel's test of the same)."""
    why = dtype_unsupported(x2, w, y, target)
    if why:
        return why
    for name, t in (("x", x2), ("w", w), ("y", y)):
        if not (tma_ok(t) or (w_kn and t is w and dense.mn_major(w))):
            return f"{name}: TMA needs a 2-D tensor, unit last stride, 16-byte aligned base and row stride" + \
                (" (or w transposed in memory: only under the ping-pong's swap-AB tile)" if t is w else "")
    return None



def check_operands(x2, w, bias, y, target, who: str, w_kn: bool = False):
    """(M, N, K) of y = act(x2 @ w.T + bias) once `dense_unsupported` (`w_kn`: its w transposed in memory too)
    and the shapes agree, else ValueError prefixed `who`: the launch checks of the dense kernels (hopper_pingpong,
    hopper_coop)."""
    why = dense_unsupported(x2, w, y, target, w_kn)
    if why:
        raise ValueError(f"{who}: {why}")
    # x2 may hold rows past y's, w rows past y's columns (ops/dispatch.py's pad_m / pad_n: computed, then dropped)
    (M, N), K = y.shape, x2.shape[1]
    if w.shape[1] != K or x2.shape[0] < M or w.shape[0] < N or \
            (bias is not None and tuple(bias.shape) != (N,)):
        raise ValueError(f"{who}: shapes x {tuple(x2.shape)}, w {tuple(w.shape)}, y {tuple(y.shape)}, "
                         f"bias {None if bias is None else tuple(bias.shape)} do not fit y = x @ w.T + bias")
    if K == 0:
        raise ValueError(f"{who}: K == 0 (the empty sum) is the op's to handle")
    return M, N, K


def check_gated_operands(x2, w, y, activation: str, target, who: str):
    """`check_operands` of a gated call (the ping-pong's and the cooperative kernel's `launch_gated`): h (M, I) =
    act(x2 @ w[:I].T) * (x2 @ w[I:].T), w (2I, K) with the gate rows first, an activation on the gate."""
    check_operands(x2, w, None, y, target, who)
    if w.shape[0] != 2 * y.shape[1]:
        raise ValueError(f"{who}: w {tuple(w.shape)} must hold 2 x I rows for h {tuple(y.shape)}")
    if activation == "none":
        raise ValueError(f"{who}: the gate takes an activation (silu, gelu, gelu_tanh, relu)")


# ----------------------------------------------------------------------------- split-K: how many splits a call runs

def split_k_out_bytes(cfg: dict, out_bytes: int) -> int:
    """The bytes of a staged output element: the output's, or 4 under split-K (fp32 partial tiles)."""
    return 4 if cfg.get("NUM_KSPLIT", 1) > 1 else out_bytes


def staged_dtype(cfg: dict, out_dtype: str) -> str:
    """`split_k_out_bytes` for the static compiles' dtype names: "fp32" under split-K, else out_dtype."""
    return "fp32" if cfg.get("NUM_KSPLIT", 1) > 1 else out_dtype


def one_wave_splits(tiles: int, num_cus: int) -> int:
    """The most K splits of `tiles` tiles that stay within one wave of `num_cus` persistent CTAs (one (split,
    tile) item a CTA): the rule of `fit_split_k` and of the tuner's `fill_splits`."""
    return num_cus // max(tiles, 1)


def fit_split_k(cfg: dict, M: int, N: int, K: int, target) -> dict:
    """The config a dense call runs: NUM_KSPLIT is an upper bound, lowered to `one_wave_splits` and then to the
    splits that start below K (`split_count`); 1 (no workspace, no reduce) where the tiles alone fill the SMs or
    K has one step. A bucket tuned at M = 256 (128 x 96 tiles, 11 splits: 132 items) then runs 7 splits at
    M = 300 (18 tiles), not a second wave. The split count, and so the fp32 summation order, depends on M and
    on the device's SM count: bitwise reproducible for a given shape on a given GPU."""
    split = cfg.get("NUM_KSPLIT", 1)
    if split == 1:
        return cfg
    tiles = -(-M // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"])
    split = min(split, one_wave_splits(tiles, target.num_cus))
    return dict(cfg, NUM_KSPLIT=split_count(K, cfg["BLOCK_SIZE_K"], split) if split > 1 else 1)


# ----------------------------------------------------------------------------- launch

# A launch's ring has at most as many stages as the K steps one CTA runs (at least 2): the kernel sets up each stage's
# two mbarriers one after another, ~110 cycles a stage on the H200 (a barrier between stages: Triton's shared-memory
# hazard analysis orders them), time no call with fewer steps than stages gets back. False (read at each launch):
# the plan's stages, e.g. to compare.
CAP_STAGES = True
MIN_STAGES = 2
# The dense kernels' load warp sets up their ring's mbarriers after its first step's loads (hopper_parts.ring_init):
# the kernel's prologue then sets up one mbarrier for it, not two a stage. False (read at each launch): the kernel sets
# up every stage, e.g. to compare.
LATE_INIT = True
# The dense and FP8 kernels place their tiles with the host's division magic (kernels/triton/_schedule.group_magic,
# `tile_magic`): the load warp's first TMA load no longer waits on two runtime integer divisions. False (read at each
# launch): they divide, e.g. to compare.
TILE_MAGIC = True


def tile_magic(num_pid_m: int, num_pid_n: int, group_size_m: int) -> tuple:
    """A launch's GROUP_M, GROUP_S, LAST_M, LAST_S (the dense and FP8 kernels'): the grouped order's division magic
    (kernels/triton/_schedule.group_magic), or four None where TILE_MAGIC is off (the kernels divide)."""
    return _schedule.group_magic(num_pid_m, num_pid_n, group_size_m) if TILE_MAGIC else (None,) * 4


def ring_stages(stages: int, K: int, bk: int, num_work: int, grid: int) -> int:
    """The ring depth a launch of `num_work` work items on `grid` CTAs runs: `stages` (the plan's), or the K steps one
    CTA runs at most (each item at most cdiv(K, bk) of them) where those are fewer, not under MIN_STAGES."""
    if not CAP_STAGES:
        return stages
    steps = -(-K // bk) * -(-num_work // max(grid, 1))
    return max(MIN_STAGES, min(stages, steps))


def token_boxes(plan, tokens: int, w_box=None) -> tuple[int, int, int]:
    """(x's box rows, w's box rows, X_BOXES) of a dense kernel's launch at `tokens` rows of the tokens' operand (x;
    swap-AB: w, the kernel's N): BM and (w_box or BN), one box a step; or, where the tokens are under one tile, the
    boxes of only their rows that kernels/_host.x_boxes gives, in place of that operand's (not a split width of tokens,
    the cooperative swap-AB tile: its B-row boxes as they are, TMA zero-filling the rows past M)."""
    xb, wb = plan.BM, w_box or plan.BN
    if getattr(plan, "swap", False) and plan.BN_TAIL:  # a split width of tokens: its B-row boxes (the last past M)
        return xb, wb, 1
    if getattr(plan, "swap", False):
        wb, boxes = _host.x_boxes(plan.BN, tokens)
    else:
        xb, boxes = _host.x_boxes(plan.BM, tokens)
    return xb, wb, boxes


def launch_tma(kernel, plan, y_box, x2, w, bias, y, ce: dict, target, compile_only=False, w_box=None, splits=1,
               tail=None):
    """Launch kernel(x_desc, w_desc, y_desc, bias_ptr, M, N, K, splits[, part, R, GROUP_M, GROUP_S, LAST_M, LAST_S],
    **ce) (the dense kernels'; the last four: the tile order's division magic, kernels/triton/_schedule.group_magic, or
    None where TILE_MAGIC is off; the launch's ring depth: `ring_stages`): 2-D TMA boxes x [BM, BK] (ce["X_KM"]: x
    transposed in memory, [BK, BM] of its (K, M) storage), w [w_box or BN, BK], y `y_box` (the staging tile); a
    persistent grid of min(splits x tiles, SMs) CTAs. `tail` (the ping-pong's and the coop's kernels, which take a
    tail split's arguments after `splits`): (part, R, S), R tail tiles of S K splits each into the fp32 workspace
    `part` (R = 0: none; its launch passes S as SPLITS, and has tiles + R (S - 1) work items). `launch_dense` is the
    entry: it adds split-K's and the tail split's workspaces and reduces."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    M, K = x2.shape
    # w may hold rows past y's columns (ops/dispatch.py's pad_n): the tiles, the bias and y's bounds are y's N. Swap-AB
    # (the caller passes x as w): the kernel's N is the tokens, w's rows as given (x's rows past M: pad_m).
    N = w.shape[0] if getattr(plan, "swap", False) else y.shape[1]
    t_in, t_out = TORCH_NAME[str(x2.dtype)], TORCH_NAME[str(y.dtype)]
    bm, bn, bk = plan.BM, plan.BN, plan.BK
    xb, wb = bm, w_box or bn
    if "X_BOXES" in ce:  # the tokens' rows only, under one row of tiles: x's, swap-AB w's (the kernel's N)
        xb, wb, boxes = token_boxes(plan, N if getattr(plan, "swap", False) else M, w_box)
        ce = {**ce, "X_BOXES": boxes}
    if ce.get("X_KM"):  # the kernel's x transposed in memory (the ping-pong's swap-AB on W.t()): BK x BM boxes
        x_desc = TensorDescriptor.from_tensor(x2.t(), [bk, xb], shared_layout(bk, bm, t_in))
    else:
        x_desc = TensorDescriptor.from_tensor(x2, [xb, bk], shared_layout(bm, bk, t_in))
    w_desc = TensorDescriptor.from_tensor(w, [wb, bk], shared_layout(w_box or bn, bk, t_in))
    y_desc = TensorDescriptor.from_tensor(y, list(y_box), shared_layout(*y_box, t_out))
    num_work = -(-M // bm) * -(-N // bn) * splits
    args = (x_desc, w_desc, y_desc, bias if bias is not None else x2, M, N, K, splits)
    if tail is not None:
        part, n_tail, tail_splits = tail
        if n_tail:
            assert splits == 1, "a tail split of a split-K launch"
            num_work += n_tail * (tail_splits - 1)
            args = (*args[:-1], tail_splits)
        # then the tile order's division magic (the same kernels take it; None: they divide, `TILE_MAGIC`)
        args = (*args, part, n_tail, *tile_magic(-(-M // bm), -(-N // bn), plan.GROUP_SIZE_M))
    grid = (max(1, min(num_work, target.num_cus)),)
    ce = {**ce, "STAGES": ring_stages(ce["STAGES"], K, bk, num_work, grid[0])}
    return launcher.launcher(kernel, grid, compile_only)(*args, **ce, num_warps=CONSUMER_WARPS)


def launch_dense(kernel, plan, y_box, x2, w, bias, y, activation, ce: dict, target, compile_only=False, tail=None):
    """One dense call of `kernel` (hopper_pingpong's or hopper_coop's) planned as `plan`, `ce` its constexprs. Split-K
    (plan.split_k > 1: `fit_split_k`'s count, each split starting below K): the kernel stores fp32 partial tiles
    into a workspace of plan.split_k slabs of Mp = cdiv(M, BM) * BM rows (whole tiles: no tile crosses into the
    next slab), then the Triton tier's split-K reduce sums the slabs in order (bitwise reproducible for a given
    split count) and applies bias / activation / cast::

        x, w ──► kernel: work id -> (split s, tile) ──► ws[s * Mp + m, n]  (fp32)
                                                          │ splitk_reduce_kernel: ws[0] + ws[1] + ...
                                                          ▼ + bias, act, cast
                                                          y

    `tail` (the ping-pong's and the coop's kernels; None for a kernel without the tail split's arguments): (R, S) of
    its tail split (hopper_pingpong.tail_plan; R = 0: none, plan.split_k 1 where R > 0): the last round's R tiles run
    as S K splits each, their fp32 partials into a workspace of R S whole tiles, then `dense.launch_tail_reduce` sums
    each tail tile's splits in order and applies bias / activation / cast (ce["TAIL"] must say the same)::

        work items: T - R whole tiles ──► y;  R S splits ──► part[r S + s] (fp32) ──► tail_reduce_kernel ──► y
    """
    import torch

    n_tail, tail_splits = tail or (0, 1)
    if n_tail:
        M, N = y.shape
        part = torch.empty((n_tail * tail_splits * plan.BM, plan.BN), dtype=torch.float32, device=x2.device)
        launch_tma(kernel, plan, y_box, x2, w, bias, y, ce, target, compile_only, w_box=plan.w_box,
                   tail=(part, n_tail, tail_splits))
        tiles = -(-M // plan.BM) * -(-N // plan.BN)
        dense.launch_tail_reduce(part, tiles - n_tail, n_tail, tail_splits, plan.BM, plan.BN, plan.GROUP_SIZE_M, bias,
                                 y, target, compile_only, activation=activation, shift=ce["SHIFT"])
        return
    no_tail = None if tail is None else (y, 0, 1)  # the tail split's arguments, unused (y: any pointer)
    if plan.split_k == 1:
        return launch_tma(kernel, plan, y_box, x2, w, bias, y, ce, target, compile_only, w_box=plan.w_box,
                          tail=no_tail)

    M, K = x2.shape
    N = y.shape[1]
    if N % 4:
        raise ValueError(f"gluon split-K: the fp32 workspace's rows (N = {N}) must be a multiple of 16 bytes "
                         "(N % 4 == 0)")
    splits = plan.split_k
    if split_count(K, plan.BK, splits) != splits:
        raise ValueError(f"gluon split-K: {splits} splits of K = {K} leave an empty range (fit_split_k first)")
    mp = -(-M // plan.BM) * plan.BM
    ws = torch.empty((splits * mp, N), dtype=torch.float32, device=x2.device)
    launch_tma(kernel, plan, y_box, x2, w, None, ws, ce, target, compile_only, w_box=plan.w_box, splits=splits,
               tail=None if tail is None else (ws, 0, 1))
    dense.launch_reduce(ws, mp * N, splits, bias, y, activation, target, compile_only)


# ----------------------------------------------------------------------------- static compile (gemmkit isa)

def tma_signature(plan, y_box, dtype: str, out_dtype: str, ce: dict, w_box=None, tokens=None) -> dict:
    """The static-compile signature of (x_desc, w_desc, y_desc, bias_ptr, M, N, K, **ce), the descriptors
    `launch_tma` builds (x [BM, BK], w [w_box or BN, BK], y `y_box`): the dense kernels' static compiles. `tokens`:
    a launch's tokens under one tile (`token_boxes`; ce["X_BOXES"] must be its count)."""
    bm, bk = plan.BM, plan.BK
    bn = w_box or plan.BN
    xb, wb, _ = token_boxes(plan, tokens, w_box) if tokens else (bm, bn, 1)
    x_box = (bk, xb) if ce.get("X_KM") else (xb, bk)  # (X_KM: the (K, M) storage's box, `launch_tma`)
    x_layout = shared_layout(bk, bm, dtype) if ce.get("X_KM") else shared_layout(bm, bk, dtype)
    sig = {"x_desc": f"tensordesc<{dtype}[{x_box[0]}, {x_box[1]}],{x_layout!r}>",
           "w_desc": f"tensordesc<{dtype}[{wb}, {bk}],{shared_layout(bn, bk, dtype)!r}>",
           "y_desc": f"tensordesc<{out_dtype}[{y_box[0]}, {y_box[1]}],{shared_layout(*y_box, out_dtype)!r}>",
           "bias_ptr": f"*{dtype}", "M": "i32", "N": "i32", "K": "i32", "SPLITS": "i32",
           # the tile order's division magic (launch_tma): multipliers in [2**31, 2**32), shifts 31-62
           "GROUP_M": "u32", "GROUP_S": "i32", "LAST_M": "u32", "LAST_S": "i32"}
    sig.update({k: "constexpr" for k in ce})
    return sig


def dense_static_spec(kernel, derive, kernel_constexprs, y_box, cfg: dict, target, *, dtype: str = "bf16",
                      out_dtype: str | None = None, has_bias: bool = True, activation: str = "gelu", tail: bool = False,
                      tokens: int | None = None, gated: bool = False, w_kn: bool = False):
    """(kernel, signature, constexprs, divisible, options, plan) to compile a dense kernel (hopper_pingpong's,
    hopper_coop's: `kernel` with its `derive`, `kernel_constexprs` and `y_box`) for `target` on a CPU. Split-K: the
    kernel stores fp32 partial tiles, whatever the op's output dtype (`staged_dtype`); `tail`: the tail split's
    variant, its partials fp32 through part_ptr; `tokens`: a launch's tokens under one tile, loaded in the boxes
    `token_boxes` gives; `gated`: the gated tile, the kernel's `launch_gated`'s, `activation` on the gate, no bias;
    `w_kn`: the ping-pong's swap-AB tile on a w transposed in memory (its X_KM)."""
    out_dtype = staged_dtype(cfg, out_dtype or dtype)
    if gated:
        cfg, has_bias = {**cfg, "gated": True}, False
    plan = derive(cfg, target, 2, 4 if out_dtype == "fp32" else 2)
    variant = {"w_kn": True} if w_kn else {}  # (hopper_coop's kernel_constexprs has no w_kn)
    ce = kernel_constexprs(plan, has_bias=has_bias, activation=activation, tail=tail, **variant)
    if tokens:
        ce["X_BOXES"] = token_boxes(plan, tokens, plan.w_box)[2]
    sig = tma_signature(plan, y_box(plan), dtype, out_dtype, ce, w_box=plan.w_box, tokens=tokens)
    sig.update(part_ptr="*fp32" if tail else f"*{out_dtype}", TAIL_TILES="i32")  # (unused without TAIL: y's)
    return kernel, sig, ce, ["bias_ptr"], {"num_warps": CONSUMER_WARPS}, plan


def shipped_gluon_configs(arch: str):
    """(table, bucket, config) of every `arch` table bucket that picks the gluon backend (any layout)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "configs" / arch
    for path in sorted(root.glob("*.json")) if root.exists() else ():
        try:
            table = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # the config loader reports broken tables
        for bucket, cfg in table.items():
            if isinstance(cfg, dict) and cfg.get("backend") == "gluon":
                yield path.name, bucket, cfg  # both layouts: each kernel's isa_cases keeps its own


def unique_cases(cases, kernel_name: str, op: str):
    """`gemmkit isa` cases (sm_90) from (table, bucket, config, path suffix) tuples, each distinct
    (tile config, path) compiled once: the Hopper Gluon kernels' isa_cases share this."""
    seen = set()
    for table, bucket, cfg, out in cases:
        # the split count is a runtime argument: one compile for every NUM_KSPLIT > 1, and fp32 staging for any out
        split = cfg.get("NUM_KSPLIT", 1) > 1
        key = (tuple(sorted((k, cfg[k]) for k in CONFIG_KEYS if k in cfg)), split, bool(cfg.get("swap_ab")),
               "fp32" if split else out)
        if key in seen:
            continue
        seen.add(key)
        yield {"kernel": kernel_name, "op": op, "arch": "sm_90", "table": table, "bucket": bucket,
               "config": dict(cfg), "path": f"gluon-{out}"}


def token_cases(cases, kernel_name: str, op: str):
    """`gemmkit isa` cases of (table, bucket, config, out dtype, tokens): a launch at `tokens` rows under one tile,
    the tokens in the boxes `token_boxes` gives (path "gluon-<out>-tok<tokens>")."""
    for table, bucket, cfg, out, tokens in cases:
        for case in unique_cases([(table, bucket, cfg, out)], kernel_name, op):
            yield dict(case, path=f"{case['path']}-tok{tokens}", bucket=f"{bucket}-tok{tokens}")


def variant_cases(cases, variant: str, kernel_name: str, op: str):
    """`unique_cases` of a dense kernel's compile variant ("tail": the tail split's, "gated": the gated tile's,
    "w_kn": the ping-pong's swap-AB tile on a w transposed in memory),
    named by the suffix "-<variant>" on path and bucket (`dense_isa_spec` compiles it with static_spec's keyword
    <variant>=True)."""
    for case in unique_cases(cases, kernel_name, op):
        yield dict(case, path=f"{case['path']}-{variant}", bucket=f"{case['bucket']}-{variant}")


def token_spec(case, static_spec):
    """(case, static_spec) for isa_spec_from: a `token_cases` case's path without its "-tok<tokens>" and static_spec
    bound to those tokens; any other case as it is."""
    head, _, tok = case["path"].rpartition("-tok")
    if not head or not tok.isdigit():
        return case, static_spec
    return dict(case, path=head), functools.partial(static_spec, tokens=int(tok))


def isa_spec_from(case, static_spec, promises, gated: bool = False):
    """`gemmkit isa`'s spec of a case ("gluon-<out dtype>" path) from a kernel's static_spec(cfg, target,
    out_dtype=..., has_bias=..., activation=...) and promises: the isa_spec of hopper_pingpong.py, hopper_coop.py
    and hopper_pingpong_batched.py. The epilogue compiled is bias + gelu (the heaviest; `gated`, the gated tile's:
    gelu, no bias), unless the installed Triton's budget sends that one to the Triton tier
    (kernels/_budgets.isa_epilogue): then the heaviest the dispatch still sends here, and `budget` names the ones it
    passes over."""
    from ... import arch as _arch
    from .. import _budgets

    target = _arch.ARCHS[case["arch"]]
    out = case["path"].split("-", 1)[1] if case["path"].startswith("gluon-") else "bf16"
    epilogue, passed = _budgets.isa_epilogue(case["kernel"], {**case["config"], "gated": True} if gated
                                             else case["config"], out)
    has_bias, activation = epilogue or (False, "none")
    kernel, sig, ce, div, opts, plan = static_spec(case["config"], target, out_dtype=out, has_bias=has_bias,
                                                   activation=activation)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=promises,
                block=(plan.BM, plan.BN, plan.BK), smem_bound=plan.smem_bytes,
                **budget_note(passed, epilogue))


def dense_isa_spec(case, static_spec, promises):
    """The isa_spec of hopper_pingpong.py and hopper_coop.py: `isa_spec_from` a case of `unique_cases`,
    `variant_cases` (its variant's static_spec) or `token_cases` (`token_spec`)."""
    head, _, variant = case["path"].rpartition("-")
    if variant in ("tail", "gated", "w_kn"):
        return isa_spec_from(dict(case, path=head), functools.partial(static_spec, **{variant: True}), promises,
                             gated=variant == "gated")
    return isa_spec_from(*token_spec(case, static_spec), promises)


def budget_note(passed, epilogue) -> dict:
    """The `budget` / `skip` entries of a Gluon case's isa spec whose heaviest epilogues (`passed`) the dispatch sends
    to the Triton tier under the installed Triton (kernels/_budgets.isa_epilogue); `epilogue` None: it sends every
    one there, so nothing of this case ever runs: `gemmkit isa` skips it."""
    if not passed:
        return {}
    from .. import _budgets

    where = f"{_budgets.version_name()}: {', '.join(passed)} -> Triton tier (kernels/_budgets.py)"
    if epilogue is None:
        return {"skip": where}
    return {"budget": f"{where}; compiled with {_budgets.epilogue_name(*epilogue)}"}
