"""Batched Hopper (sm_90) GEMMs in Gluon: y[b] = act(x[b] @ w[b].T + bias[b]), b in [0, B), one launch.

Two kernels, the dense Gluon kernels with the batch as one more coordinate, picked by the config's
num_warps as gemm_a16w16 picks them (hopper_pingpong.is_coop):
  num_warps 4  hopper_pingpong_batched_kernel: hopper_pingpong.py's `mma_partition` (two consumer warpgroups
               taking turns on the tensor cores, S-stage mbarrier ring) and plan `derive`
  num_warps 8  hopper_coop_batched_kernel: hopper_coop.py's `coop_mma_partition` (two consumer warpgroups
               sharing every BM x BN tile, BM/2 rows each; empty[s] counts 2) and plan `derive`
  both         the load warp of hopper_parts.py (`load_partition`); the plans are built by hopper_plan.py
What is batched, and nothing else, is here and in the dense partitions' `BATCHED` branches
(compiled away in the dense kernels: their SASS is byte-identical to the kernels before batching,
checked by tests/kernels/test_hopper_pingpong.py, and for the cooperative kernel by comparing the SASS of
every isa case before and after):

  work space   B x tiles_m x tiles_n work ids, batch-major, grouped order inside an entry
               (`batched_tile_coords` of kernels/triton/_schedule.py, as the Triton tier's batched
               kernels); a persistent CTA takes ids pid, pid + grid, ...; consumer c its local ids
               c, c + 2, ... exactly as the dense kernel takes tiles
  addressing   3-D TMA descriptors x (B, M, K), w (B, N, K), y (B, M, N) with boxes [1, BM, BK],
               [1, BN, BK], [1, BM, BN] (cooperative: [1, BM/2, EPI_N], a consumer's staging
               sub-tile); the load warp writes a box through a 3-D view (`reshape`) of the 2-D ring
               slot, the consumer stores through a 3-D view of its 2-D output tile (same bytes, same
               NVMMA swizzle), so wgmma and the whole consumer mainloop are the dense kernel's
  bias         bias_ptr + b * stride_bb: a (B, N) bias (one row per entry) or a (N,) one (stride 0)
  bundles      the dense kernels' (hopper_bundles.py): Schedule(..., B, BATCHED=True), Epilogue(c, bias_ptr,
               stride_bb, ...), a Ring without a split tile (t None)

Work ids and boxes (T = tiles of one entry = ceil(M / BM) * ceil(N / BN))::

   id:    0 ........ T-1 | T ....... 2T-1 | ... | (B-1)T ..... BT-1
          entry 0        | entry 1        |     | entry B-1           (grouped order inside)

                 K ───────────────►           y[b] (M, N)  N ──────────►
          ┌──────────────────────────┐       ┌────────┬────────┬──┐
   x[b]   │ [1, BM, BK] box, TMA ─┐  │       │ tile   │ tile   │▒▒│ ▒ edge tile: TMA clips the
          ├───────────────────────┼──┤ M     ├────────┼────────┼──┤   store at M / N of entry b,
          │▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒▒│▒▒│       │▒▒▒▒▒▒▒▒│▒▒▒▒▒▒▒▒│▒▒│   zero-fills loads past M / N / K
          └───────────────────────┼──┘       └────────┴────────┴──┘   of entry b: never a row of b+1
   x[b+1] (its own entry: batch coordinate b + 1, never reached from entry b's boxes)

Why 3-D descriptors, not 2-D ones over the flattened (B*M, K) / (B*N, K) / (B*M, N) views: the
flattened views are only right when no box crosses an entry (M % BM == 0, N % BN == 0, batches
contiguous); an edge tile would read rows of entry b + 1 (harmless) and store into them (a race
with that entry's own tile). The 3-D boxes clip per entry, so any M, N, K and any batch stride that
TMA accepts (a multiple of 16 bytes, entries not overlapping) run here; the cost is nothing
(UTMALDG.3D / UTMASTG.3D are single instructions like their 2-D forms).

Constraints:
  - The dense kernel's (hopper_pingpong.py, or hopper_coop.py for num_warps 8): sm_90; bf16 or fp16 x
    and w of one dtype; y bf16, fp16 or fp32; the tile, warp, stage and register rules of that kernel's
    `derive`; K >= 1 (the op handles K == 0).
  - TMA rules for x, w, y as 3-D tensors (`tma_compatible_3d`): 16-byte aligned base, unit last stride, row
    and batch strides multiples of 16 bytes (K % 8 == 0; N % 8 == 0 for a 16-bit y, N % 4 for fp32),
    rows not overlapping, entries outermost and not overlapping: a broadcast (stride-0) or interleaved
    batch dim takes the Triton tier (ops/dispatch.batched says why).
  - bias (N,) or (B, N) with unit stride on N; B x tiles < 2**31 (int32 work ids); bias offsets int64.
"""
from __future__ import annotations

import functools

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from ... import launcher
from ..triton.batched_gemm_tma import tma_compatible_3d
from . import hopper_coop as hc
from . import hopper_host as hh
from . import hopper_pingpong as hp
from .hopper_bundles import Descs, Epilogue, Handoff, Ring, Schedule
from .hopper_parts import load_partition

KERNEL_NAME = "hopper_pingpong_batched_kernel"
COOP_KERNEL_NAME = "hopper_coop_batched_kernel"
PROMISES = hp.PROMISES  # same partitions, warps, registers, shared memory and instructions as the dense kernels


# ----------------------------------------------------------------------------- device code

@gluon.jit
def _smem2(desc, shape: gl.constexpr):
    """Shared memory of `shape` with the swizzle of a 3-D descriptor's box, as a rank-2 (per-slot) layout:
    the ring slots and output tiles are 2-D (what wgmma and the dense consumers read); the host builds the
    3-D box layouts from the same 2-D ones (`_layout3`)."""
    layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=desc.layout.swizzle_byte_width,
                                                element_bitwidth=desc.layout.element_bitwidth, rank=2)
    return gl.allocate_shared_memory(desc.dtype, shape, layout)


@gluon.jit(do_not_specialize=["B", "M", "N", "K", "stride_bb"])  # TMA handles every shape: one compile per config
def hopper_pingpong_batched_kernel(x_desc, w_desc, y_desc, bias_ptr, B, M, N, K, stride_bb,
                                   STAGES: gl.constexpr, C_TILES: gl.constexpr, GROUP_SIZE_M: gl.constexpr,
                                   HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, MMA_REGS: gl.constexpr,
                                   LOAD_REGS: gl.constexpr):
    BM: gl.constexpr = x_desc.block_type.shape[1]
    BK: gl.constexpr = x_desc.block_type.shape[2]
    BN: gl.constexpr = w_desc.block_type.shape[1]
    a_ring = _smem2(x_desc, [STAGES, BM, BK])
    b_ring = _smem2(w_desc, [STAGES, BN, BK])
    c0 = _smem2(y_desc, [BM, BN])
    if C_TILES == 2:
        c1 = _smem2(y_desc, [BM, BN])
    else:
        c1 = c0
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    c_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(full.index(i), count=1)  # the loader's expect-tx arrive (+ the TMA bytes)
        mbarrier.init(empty.index(i), count=1)  # one consumer's arrive
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)  # the other consumer's arrive
    mbarrier.init(c_free, count=1)  # (C_TILES == 1) the last store's consumer, after store_wait
    descs = Descs(x_desc, w_desc, y_desc)
    ring = Ring(a_ring, b_ring, None, full, empty)
    sched = Schedule(M, N, K, B, GROUP_SIZE_M, BATCHED=True)
    handoff = Handoff(turn, c_free, C_TILES)
    epi0 = Epilogue(c0, bias_ptr, stride_bb, HAS_BIAS, ACTIVATION)
    epi1 = Epilogue(c1, bias_ptr, stride_bb, HAS_BIAS, ACTIVATION)
    gl.warp_specialize([
        (hp.mma_partition, (0, descs, ring, epi0, handoff, sched)),
        (hp.mma_partition, (1, descs, ring, epi1, handoff, sched)),
        (load_partition, (descs, ring, sched)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])


@gluon.jit(do_not_specialize=["B", "M", "N", "K", "stride_bb"])
def hopper_coop_batched_kernel(x_desc, w_desc, y_desc, bias_ptr, B, M, N, K, stride_bb,
                               STAGES: gl.constexpr, GROUP_SIZE_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                               ACTIVATION: gl.constexpr, MMA_REGS: gl.constexpr, LOAD_REGS: gl.constexpr):
    """hopper_coop_kernel over B x tiles: both consumers share each tile (BM/2 rows each, one
    BM/2 x EPI_N staging tile each); the y box is a consumer's sub-tile [1, BM/2, EPI_N]."""
    BM: gl.constexpr = x_desc.block_type.shape[1]
    BK: gl.constexpr = x_desc.block_type.shape[2]
    BN: gl.constexpr = w_desc.block_type.shape[1]
    BM_C: gl.constexpr = y_desc.block_type.shape[1]
    EPI_N: gl.constexpr = y_desc.block_type.shape[2]
    a_ring = _smem2(x_desc, [STAGES, BM, BK])
    b_ring = _smem2(w_desc, [STAGES, BN, BK])
    c0 = _smem2(y_desc, [BM_C, EPI_N])
    c1 = _smem2(y_desc, [BM_C, EPI_N])
    full, empty = hc.ring_barriers(STAGES)  # full: the loader's expect-tx arrive; empty: both consumers
    descs = Descs(x_desc, w_desc, y_desc)
    ring = Ring(a_ring, b_ring, None, full, empty, None, 2)
    sched = Schedule(M, N, K, B, GROUP_SIZE_M, BATCHED=True)
    gl.warp_specialize([
        (hc.coop_mma_partition, (0, descs, ring, Epilogue(c0, bias_ptr, stride_bb, HAS_BIAS, ACTIVATION), sched)),
        (hc.coop_mma_partition, (1, descs, ring, Epilogue(c1, bias_ptr, stride_bb, HAS_BIAS, ACTIVATION), sched)),
        (load_partition, (descs, ring, sched)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])


# ----------------------------------------------------------------------------- host side

@functools.lru_cache(maxsize=None)
def _layout3(rows: int, cols: int, dtype: str):
    """The 3-D layout of a [1, rows, cols] box: the 2-D tile's (`hh.shared_layout`) swizzle, rank 3."""
    l2 = hh.shared_layout(rows, cols, dtype)
    return gl.NVMMASharedLayout(swizzle_byte_width=l2.swizzle_byte_width, element_bitwidth=l2.element_bitwidth,
                                rank=3)


def unsupported(x, w, y, target=None) -> str | None:
    """Why this kernel cannot run these tensors (None: it can). The op runs the Triton tier then."""
    why = hh.dtype_unsupported(x, w, y, target)
    if why:
        return why
    for name, t in (("x", x), ("w", w), ("y", y)):
        if not tma_compatible_3d(t):
            return (f"{name}: 3-D TMA needs unit last stride, a 16-byte aligned base, row and batch strides "
                    "multiples of 16 bytes and batch entries that do not overlap (no broadcast batch)")
    return None


def _descriptor(t, block, dtype: str):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    B, R, Cn = t.shape
    stride_b = t.stride(0) if B > 1 else R * t.stride(1)  # a size-1 dim's stride is arbitrary in torch
    return TensorDescriptor(t, [B, R, Cn], [stride_b, t.stride(1), 1], [1, *block], _layout3(*block, dtype))


def _no_split_tile(plan):
    """The dense kernels' three extras that the batched ones do not build: split tiles, split-K and the
    ping-pong's transposed tile (swap_ab; the coop plan refuses it itself)."""
    if getattr(plan, "swap", False):
        raise ValueError("config: key 'swap_ab' = true; the batched kernels have no transposed tile (the dense "
                         "ping-pong has)")
    if plan.BN_TAIL:
        raise ValueError(f"config: key 'BLOCK_SIZE_N' = {plan.BN}; the batched kernels take powers of two "
                         f"(split tiles {hc.configs.SPLIT_N} are the dense Gluon kernels')")
    if plan.split_k != 1:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {plan.split_k}; the batched kernels need 1 "
                         "(split-K is the dense Gluon kernels')")


def kernel_plan(cfg: dict, target, in_bytes: int, out_bytes: int, *, has_bias: bool, activation: str):
    """(kernel, plan, y box, constexprs) for `cfg`: the cooperative kernel for num_warps 8
    (hopper_pingpong.is_coop; hopper_coop.derive plans it, the y box is a consumer's staging sub-tile),
    else the ping-pong (hopper_pingpong.derive, the y box is the whole tile)."""
    if hp.is_coop(cfg):
        plan = hc.derive(cfg, target, in_bytes, out_bytes)
        _no_split_tile(plan)
        return (hopper_coop_batched_kernel, plan, (plan.BM_C, plan.epi_n),
                hc.constexprs(plan, has_bias=has_bias, activation=activation))
    plan = hp.derive(cfg, target, in_bytes, out_bytes)
    _no_split_tile(plan)
    return (hopper_pingpong_batched_kernel, plan, (plan.BM, plan.BN),
            hp.constexprs(plan, has_bias=has_bias, activation=activation))


def kernel_name(cfg: dict) -> str:
    """The kernel a "backend": "gluon" config runs here (the op counts launches by it)."""
    return COOP_KERNEL_NAME if hp.is_coop(cfg) else KERNEL_NAME


def launch(x, w, bias, y, activation, cfg, target, compile_only=False):
    """y[b] = act(x[b] @ w[b].T + bias[b]) for every b with the batched ping-pong (num_warps 4) or
    cooperative (num_warps 8) kernel.

    x (B, M, K), w (B, N, K), y (B, M, N); bias (B, N) or (N,) with unit stride on N, or None. `cfg` and
    `target` as hopper_pingpong.launch / hopper_coop.launch (their `derive` plans the tile, ring and
    registers). Raises ValueError when `unsupported` says no, the shapes disagree or the config cannot be
    planned.
    """
    why = unsupported(x, w, y, target)
    if why:
        raise ValueError(f"gluon batched ping-pong: {why}")
    B, M, K = x.shape
    N = w.shape[1]
    bias_ok = bias is None or (tuple(bias.shape) in ((N,), (B, N)) and bias.stride(-1) == 1)
    if tuple(w.shape) != (B, N, K) or tuple(y.shape) != (B, M, N) or not bias_ok:
        raise ValueError(f"gluon batched ping-pong: shapes x {tuple(x.shape)}, w {tuple(w.shape)}, y {tuple(y.shape)}, "
                         f"bias {None if bias is None else tuple(bias.shape)} do not fit y[b] = x[b] @ w[b].T + bias "
                         "(bias (N,) or (B, N), unit stride on N)")
    if K == 0:
        raise ValueError("gluon batched ping-pong: K == 0 (the empty sum) is the op's to handle")
    t_in, t_out = hh.TORCH_NAME[str(x.dtype)], hh.TORCH_NAME[str(y.dtype)]
    kernel, plan, y_box, ce = kernel_plan(cfg, target, x.element_size(), y.element_size(),
                                          has_bias=bias is not None, activation=activation)
    bm, bn, bk = plan.BM, plan.BN, plan.BK
    x_desc, w_desc, y_desc = _descriptor(x, [bm, bk], t_in), _descriptor(w, [bn, bk], t_in), \
        _descriptor(y, list(y_box), t_out)
    num_work = B * -(-M // bm) * -(-N // bn)
    grid = (max(1, min(num_work, target.num_cus)),)
    stride_bb = bias.stride(0) if bias is not None and bias.dim() == 2 else 0
    args = (x_desc, w_desc, y_desc, bias if bias is not None else x, B, M, N, K, stride_bb)
    return launcher.launcher(kernel, grid, compile_only)(*args, **ce, num_warps=hh.CONSUMER_WARPS)


# ----------------------------------------------------------------------------- static compile (gemmkit isa)

def static_spec(cfg: dict, target, *, dtype: str = "bf16", out_dtype: str | None = None, has_bias: bool = True,
                activation: str = "gelu"):
    """(kernel, signature, constexprs, divisible, options, plan) to compile the batched kernel of `cfg`
    (ping-pong or cooperative: `kernel_plan`) for `target`."""
    out_dtype = out_dtype or dtype
    kernel, plan, (ym, yn), ce = kernel_plan(cfg, target, 2, 4 if out_dtype == "fp32" else 2,
                                             has_bias=has_bias, activation=activation)
    bm, bn, bk = plan.BM, plan.BN, plan.BK
    sig = {"x_desc": f"tensordesc<{dtype}[1, {bm}, {bk}],{_layout3(bm, bk, dtype)!r}>",
           "w_desc": f"tensordesc<{dtype}[1, {bn}, {bk}],{_layout3(bn, bk, dtype)!r}>",
           "y_desc": f"tensordesc<{out_dtype}[1, {ym}, {yn}],{_layout3(ym, yn, out_dtype)!r}>",
           "bias_ptr": f"*{dtype}", "B": "i32", "M": "i32", "N": "i32", "K": "i32", "stride_bb": "i32"}
    sig.update({k: "constexpr" for k in ce})
    return kernel, sig, ce, ["bias_ptr"], {"num_warps": hh.CONSUMER_WARPS}, plan


def isa_cases(archs, tables=("BATCHED_A16W16.json",), op: str = "batched_gemm"):
    """Static cases for sm_90: every bucket of `tables` with backend "gluon", plus the dense kernels'
    PRESETS (bf16 and fp32 output), each compiled as its batched kernel (ping-pong or cooperative)."""
    if "sm_90" not in archs:
        return
    shipped = [(t, b, c, "bf16") for t, b, c in hh.shipped_gluon_configs("sm_90") if t in tables]
    for kernel, presets, coop in ((KERNEL_NAME, hp.PRESETS, False), (COOP_KERNEL_NAME, hc.PRESETS, True)):
        cases = [c for c in shipped if hp.is_coop(c[2]) == coop]
        cases += [("-", f"preset{i}", c, o) for i, c in enumerate(presets) for o in ("bf16", "fp32")]
        yield from hh.unique_cases(cases, kernel, op)


def isa_spec(case):
    return hh.isa_spec_from(case, static_spec, PROMISES)
