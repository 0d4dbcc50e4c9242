"""The promoted mainloops of the FP8 Gluon kernel (hopper_pingpong_fp8.py): one consumer warpgroup's K loop
over one output tile, wgmma chains from zero into a partial accumulator, each promoted into the fp32 tile.

The kernel file owns the consumer partition, the kernel and the launch (its plan: hopper_fp8_plan.py; the load
partition and the epilogue's stores: hopper_fp8_parts.py); this file owns what one K step of a consumer does
(`@gluon.jit` helpers, inlined into the kernel file's `_mma_partition`, which calls the two mainloops):

  _chain             one promotion interval: BK / 32 wgmma m64nBNk32 from zero into p, waited (wait(0))
  _promote           acc + p (rowcol, FADD) or acc + p * s[m] (block, FFMA), as inline PTX
  pingpong_mainloop  num_warps 4: BM rows (one or two 64-row slices), every chain waited at once;
                     also the coop 256 tile's consumer (its 128-row half of the one ring's a, ROW0 0 / 128)
  coop_mainloop      num_warps 8, BLOCK_SIZE_M 128: a 64-row half, one chain always in flight (two partials,
                     wait(1))
  _coop_step         one K step of it
  _slot_scales       (block) a step's scales s[m] = x_scale[m, kb] * w_scale[nb, kb], both read from the ring slot
  _w_pick            (block) where the w scale sits among the 4 fp32 its TMA box copied into the slot

Promotion: the tensor cores' fp8 adder has reduced precision, so a chain sums at most BK <= 128 = PROMOTE_K
products (use_acc=False: from zero) before the fp32 FADD / FFMA adds it into acc (cuBLAS's precise mode,
CUTLASS's promotion interval of 4 k32 MMAs). max_num_imprecise_acc stays at the sm_90 default (2**30: the
compiler adds no promotion of its own) on purpose: BK there would make the compiler add a second partial
and a wgmma wait *inside* each warpgroup_mma, the Triton tier's schedule whose stall this kernel hides.

Pingpong K step (one consumer; the other consumer's wgmma runs under this one's wait + FADDs; coop 256: rows
ROW0 + ..., and empty[s] counts both consumers)::

   wait full[s] │ (block) s_q = LDS x scales * LDS w scale │ chain rows 0..63 → p │ wait(0) │ acc0 += p (* s_0)
                │ (two slices) chain rows 64..127 → p │ wait(0) │ acc1 += p (* s_1) │ arrive empty[s]

Coop K steps (one consumer, its 64-row half; registers at BN = 128: acc 64 + pA 64 + pB 64 = 192)::

   K step          0              1              2              3         ...  tail (last step)
   issue chain     k0 -> pA       k1 -> pB       k2 -> pA       k3 -> pB
   wait(1)         (k0 runs on)   k0 done        k1 done        k2 done        wait(0): last done
   promote         -              acc += pA      acc += pB      acc += pA      acc += p(last)
   arrive empty    -              slot of k0     slot of k1     slot of k2     slot of last
   tensor cores    k0 ──────────► k1 ──────────► k2 ──────────► k3 ...  (one chain queued while acc += runs;
                                                                         a consumer holds two slots)

   wait(1) = warpgroup_mma_wait(1): the chain before (in the other partial) is done, this one runs on while
   it is promoted. SASS: `WARPGROUP.DEPBAR.LE gsb0, 0x1` after each chain (gemmkit isa's count GMMA_WAIT1,
   a promise of the kernel). K step k chains into pA if k is even, pB if odd: step 0 is peeled, the loop
   runs two steps a trip, so which partial is which stays static (no register moves).

Constraints:
  - sm_90 (wgmma); operands fp8 in NVMMA-swizzled shared memory; acc_layout the wgmma accumulator of one
    64-row slice (NVMMADistributedLayout v3, 4 warps along M, instr [16, BN, 32]).
  - BK in {32, 64, 128} (<= PROMOTE_K); each chain starts from zero; BK divides SCALE_BK (block mode: one
    scale per row per chain) and BN divides SCALE_BN (one w scale per tile per K block).
  - Coop: two live partials beside acc, (64 + 2 * 64) * BN / 128 <= 192 registers, so BN <= 128; the slot of
    K step k goes back after step k + 1's wait(1), so the ring needs >= 2 slots (derive: stages >= 2).
  - The promotion must stay inline PTX with side effects (is_pure=False): as a plain expression LLVM sinks
    it below the next chain's wgmma into the same partial registers, and ptxas then serializes every wgmma
    (C7514, only 0x0 waits left; seen in block mode). tests/kernels/test_hopper_pingpong_fp8_isa.py
    checks the SASS and the ptxas log.
  - k_steps >= 1 (the op handles K == 0).
  - (block) The w scale's one-element read indexes the slot's w buffer viewed as a column through Gluon's
    `reinterpret` (_compat.py: the private `_reinterpret` up to Triton 3.8, `reinterpret` from 3.9); the
    block-scale gpu tests (NaN beside the scale in its TMA box) fail if the read picks the wrong element.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, warpgroup_mma, warpgroup_mma_wait

from ._compat import reinterpret
from .hopper_fp8_plan import WS_BOX_FLOATS
from .hopper_parts import ring_next

WS_BOX = gl.constexpr(WS_BOX_FLOATS)  # (block) fp32 the w scale's TMA box copies into the head of its slot buffer


@gluon.jit
def _chain(a, b, p):
    """One promotion interval: BK / 32 wgmma k32 from zero into the partial p, waited.
    max_num_imprecise_acc stays at the sm_90 default on purpose (module docstring)."""
    p = warpgroup_mma(a, b, p, use_acc=False, is_async=True)
    return warpgroup_mma_wait(0, deps=(p,))


@gluon.jit
def _promote(acc, p, s, SCALE: gl.constexpr):
    """acc + p (rowcol) or acc + p * s[m] (block) as inline PTX that stays in program order: a plain expression
    would be sunk by LLVM below the next chain's wgmma into the same partial registers, and ptxas then
    serializes every wgmma (C7514, seen in the promotion-overlap probe). Same arithmetic as `acc + p` /
    `acc + p * s[:, None]` (which ptxas contracts to an FFMA): bitwise the same results."""
    if SCALE == "block":
        return gl.inline_asm_elementwise("fma.rn.f32 $0, $1, $2, $3;", "=r,r,r,r", [p, s[:, None], acc],
                                         dtype=gl.float32, is_pure=False, pack=1)
    else:
        return gl.inline_asm_elementwise("add.f32 $0, $1, $2;", "=r,r,r", [acc, p], dtype=gl.float32,
                                         is_pure=False, pack=1)


@gluon.jit
def pingpong_mainloop(a_ring, b_ring, s_ring, w_ring, full, empty, idx, phase, k0, k_steps, ws_row, stride_wsk,
                       RING: gl.constexpr, ROW0: gl.constexpr, TWO: gl.constexpr, BK: gl.constexpr,
                       STAGES: gl.constexpr, SCALE: gl.constexpr, SCALE_BK: gl.constexpr, acc_layout: gl.constexpr):
    """A consumer's mainloop of one work item (K steps k0 .. k0 + k_steps - 1) from ring RING, each chain waited
    at once and promoted while the other consumer's wgmma runs: rows ROW0..ROW0+63 of the slot's a into acc0
    and (TWO) rows ROW0+64..ROW0+127 into acc1. pingpong: ROW0 0 (a BM-row tile a ring); coop 256: the
    consumer's 128-row half of the one ring's 256-row a (ROW0 0 or 128)."""
    SM: gl.constexpr = 64
    BN: gl.constexpr = b_ring.shape[1]
    acc0 = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    acc1 = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    # The partial, overwritten by each chain. Per tile, not carried across tiles: dead in the
    # epilogue, whose scales and bias need its registers (carried: 160 bytes of spills).
    p = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    for kk in range(k0, k0 + k_steps):
        slot = RING * STAGES + idx
        mbarrier.wait(full.index(slot), phase)
        a = a_ring.index(slot)
        b = b_ring.index(slot).permute((1, 0))
        if SCALE == "block":
            # s[m] = x_scale[m, kb] * w_scale[nb, kb] for this thread's rows, both read from the slot *before* the
            # chain is issued: the shared-memory loads' latency runs under the wgmma, not after its wait.
            j = _w_pick(ws_row, kk, stride_wsk, BK, SCALE_BK)  # kk: the tile's K step
            s0 = _slot_scales(s_ring.index(slot), w_ring.index(slot), j, ROW0, acc_layout)
            if TWO:
                s1 = _slot_scales(s_ring.index(slot), w_ring.index(slot), j, ROW0 + SM, acc_layout)
        p = _chain(a.slice(ROW0, SM), b, p)
        # Promotion of rows ROW0..ROW0+63 (the other consumer's wgmma runs meanwhile).
        if SCALE == "block":
            acc0 = _promote(acc0, p, s0, SCALE)
        else:
            acc0 = acc0 + p
        if TWO:
            p = _chain(a.slice(ROW0 + SM, SM), b, p)
            if SCALE == "block":  # rows ROW0+64..ROW0+127
                acc1 = _promote(acc1, p, s1, SCALE)
            else:
                acc1 = acc1 + p
        mbarrier.arrive(empty.index(slot))  # my chains and scale loads have read the slot (coop: one of 2)
        idx, phase = ring_next(idx, phase, STAGES)
    return acc0, acc1, idx, phase


@gluon.jit
def _w_pick(ws_row, kstep, stride_wsk, BK: gl.constexpr, SCALE_BK: gl.constexpr):
    """(block) Which of the 4 fp32 at the head of a slot's w-scale buffer is K step kstep's w scale (element
    ws_row + kb * stride_wsk of w_scale): its TMA box starts at that offset rounded down to 4 elements (a box must
    start on a 16-byte boundary), so the offset modulo WS_BOX (a power of two). kstep: the tile's K step (the load
    warp's kk)."""
    return (ws_row + (kstep * BK // SCALE_BK) * stride_wsk) & (WS_BOX - 1)


@gluon.jit
def _slot_scales(s_slot, w_slot, j, ROW0: gl.constexpr, acc_layout: gl.constexpr):
    """(block) s[m] = x_scale[m, kb] * w_scale[nb, kb] of rows ROW0 .. ROW0 + 63, from a ring slot: the x scales
    (s_slot, BM fp32) and the tile's w scale (element j of the WS_BOX at the head of w_slot), both staged by the
    load warp. The w scale is one broadcast LDS from a uniform address (every thread the same element): read as the
    whole box and selected (LDS.128, 4 FSEL, 3 FADD), its dependent chain sat between the chain's wgmma, where ptxas
    puts this product."""
    row_layout: gl.constexpr = gl.SliceLayout(1, acc_layout)
    one_layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])  # every thread the one element
    col: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    col_shape: gl.constexpr = [w_slot.shape[0], 1]
    w = gl.sum(reinterpret(w_slot, gl.float32, col_shape, col).index(j).load(one_layout), axis=0)
    return s_slot.slice(ROW0, 64).load(row_layout) * w


@gluon.jit
def _coop_step(a, b, s_slot, w_slot, j, p_new, p_old, acc, s_old, prev_empty, ROW0: gl.constexpr,
               SCALE: gl.constexpr, acc_layout: gl.constexpr, FIRST: gl.constexpr):
    """One K step of a coop consumer with a chain always in flight: (block) this step's scales from the slot,
    the chain into p_new, wait(1) (the previous step's chain, in p_old, is done; this one runs on), then the
    previous step's promotion and the release of its slot."""
    if SCALE == "block":
        s_new = _slot_scales(s_slot, w_slot, j, ROW0, acc_layout)
    else:
        s_new = s_old
    p_new = warpgroup_mma(a.slice(ROW0, 64), b, p_new, use_acc=False, is_async=True)
    p_new, p_old = warpgroup_mma_wait(1, deps=(p_new, p_old))
    if not FIRST:
        acc = _promote(acc, p_old, s_old, SCALE)
        mbarrier.arrive(prev_empty)
    return acc, p_new, p_old, s_new


@gluon.jit
def coop_mainloop(a_ring, b_ring, s_ring, w_ring, full, empty, idx, phase, k0, k_steps, ws_row, stride_wsk,
                   ROW0: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr, SCALE: gl.constexpr,
                   SCALE_BK: gl.constexpr, acc_layout: gl.constexpr):
    """A coop consumer's mainloop of one work item (its 64 rows of a tile, K steps k0 .. k0 + k_steps - 1: the
    whole K, or a tail split's range), one chain in flight while the previous one is promoted (two partials
    pA / pB, 64 + 64 registers beside the 64 of acc at BN = 128). K step k chains into pA if k is even, pB if
    odd: the loop runs two steps a trip so the parity is static."""
    SM: gl.constexpr = 64
    BN: gl.constexpr = b_ring.shape[1]
    acc = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    pA = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    pB = gl.zeros((SM, BN), dtype=gl.float32, layout=acc_layout)
    s_a = gl.zeros((SM,), dtype=gl.float32, layout=gl.SliceLayout(1, acc_layout))
    # K step 0: nothing before it to promote
    mbarrier.wait(full.index(idx), phase)
    j = _w_pick(ws_row, k0, stride_wsk, BK, SCALE_BK)
    acc, pA, pB, s_a = _coop_step(a_ring.index(idx), b_ring.index(idx).permute((1, 0)), s_ring.index(idx),
                                  w_ring.index(idx), j, pA, pB, acc, s_a, empty.index(idx), ROW0, SCALE, acc_layout,
                                  True)
    prev = idx
    idx, phase = ring_next(idx, phase, STAGES)
    for kk in range(1, k_steps - 1, 2):
        mbarrier.wait(full.index(idx), phase)
        j = _w_pick(ws_row, k0 + kk, stride_wsk, BK, SCALE_BK)
        acc, pB, pA, s_b = _coop_step(a_ring.index(idx), b_ring.index(idx).permute((1, 0)), s_ring.index(idx),
                                      w_ring.index(idx), j, pB, pA, acc, s_a, empty.index(prev), ROW0, SCALE,
                                      acc_layout, False)
        prev = idx
        idx, phase = ring_next(idx, phase, STAGES)
        mbarrier.wait(full.index(idx), phase)
        j = _w_pick(ws_row, k0 + kk + 1, stride_wsk, BK, SCALE_BK)
        acc, pA, pB, s_a = _coop_step(a_ring.index(idx), b_ring.index(idx).permute((1, 0)), s_ring.index(idx),
                                      w_ring.index(idx), j, pA, pB, acc, s_b, empty.index(prev), ROW0, SCALE,
                                      acc_layout, False)
        prev = idx
        idx, phase = ring_next(idx, phase, STAGES)
    if k_steps % 2 == 0:  # the last step (odd) chains into pB
        mbarrier.wait(full.index(idx), phase)
        j = _w_pick(ws_row, k0 + k_steps - 1, stride_wsk, BK, SCALE_BK)
        acc, pB, pA, s_b = _coop_step(a_ring.index(idx), b_ring.index(idx).permute((1, 0)), s_ring.index(idx),
                                      w_ring.index(idx), j, pB, pA, acc, s_a, empty.index(prev), ROW0, SCALE,
                                      acc_layout, False)
        pB = warpgroup_mma_wait(0, deps=(pB,))
        acc = _promote(acc, pB, s_b, SCALE)
        mbarrier.arrive(empty.index(idx))
        idx, phase = ring_next(idx, phase, STAGES)
    else:
        pA = warpgroup_mma_wait(0, deps=(pA,))
        acc = _promote(acc, pA, s_a, SCALE)
        mbarrier.arrive(empty.index(prev))
    return acc, idx, phase
