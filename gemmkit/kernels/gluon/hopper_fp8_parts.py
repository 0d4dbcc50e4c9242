"""Device parts of the FP8 Gluon kernel (hopper_pingpong_fp8.py) that its partitions compose: the work items, the
load partition (TMA operands and block scales into the ring slots), the staging of the coop rowcol epilogue's
scale vectors, and the epilogue's stores (y through the staging buffer; a tail split's fp32 partial). `@gluon.jit`
helpers, inlined where called. The kernel file holds the consumer partition, the kernel (shared memory, barriers,
`gl.warp_specialize`), the launch and the static compiles; the K loops are hopper_fp8_mainloop.py, the plan
hopper_fp8_plan.py, the ring counter (`ring_next`) hopper_parts.py.

  (work items: kernels/triton/_schedule.tail_item, whole tiles, then the tail split's K splits; shared with the
  bf16 ping-pong's tail split)
  load_partition  1 warp: every K step of its work items into its ring, (block) with the step's scales;
                  (VEC: coop rowcol) each item's epilogue scales first (_stage_vectors)
  _stage_vectors  (coop rowcol) an item's BM x scales and max(BN, 32) w scales into vector buffer item % 2
  store_y         a work item's y tile (coop: its half) through the staging buffer, one TMA store
  _store_slice    one 64-row slice into the staging buffer: (rowcol) scales, + bias, cast
  store_scaled_partial  (coop tail split) one 64-row slice of a K split's fp32 partial into the workspace
  pair_steps      (PAIR) a ring's half of a tile's K steps; first_item: where a ring's work items start
  pair_put / pair_take  (PAIR) consumer 1's fp32 partial through the exchange buffer into consumer 0's

Work items (the coop tail split: `tail_plan`, configs/model/tail.py, _schedule.tail_item; T tiles, R = T % CTAs of
them in the last round, S splits each; pingpong and unsplit launches: TAIL 0, SPLITS 1, every item a whole tile)::

   work id  0 .. T-R-1: tile = id, K steps 0 .. k_steps-1  ──► store_y ──► y (TMA)
            T-R + j:     tile T-R + j // S, K steps of split j % S ──► store_scaled_partial ──► part[j] (fp32) ──┐
                                                            tail_reduce: sum_s part[r S + s] + bias ──► y
   (a split's partial is already scaled in rowcol: linear, so tail_reduce_kernel, kernels/triton/_splitk_reduce.py,
   only sums the splits in order and adds the bias)

Block scales (SCALE = "block"; K step kk of BK columns lies in scale block kb = kk * BK // SBK)::

   load r (1 warp), after empty[s]:                              ring slot s of ring r
     expect-tx (a, b and the scale boxes), then TMA a[s], b[s]      ┐  (a: one box, or XBOXES of x's rows: x_boxes)
     TMA w_scale.flat[o & ~3 .. +3], o = offset of w_scale[nb, kb]  ├─► w_ring[s]: 4 fp32 holding the w scale ┐ full[s]
     SCALE_TMA (M-major x_scale, 16-byte aligned boxes):            │                                         │ completes
       TMA x_scale.flat[kb * stride + m0 .. + BM]  ──────────────────┴─► s_ring[s]: BM fp32 x scales          │ when all
     else: cp.async x_scale[m, kb] (BM / 32 4-byte copies a lane) ──► s_ring[s], then each lane's            │ landed
       cp.async.mbarrier.arrive.noinc full[s] (32 of the 33 arrivals full[s] counts then) ───────────────────┘
   mma r, K step kk (nb = pid_n * BN // SBN, BN | SBN; hopper_fp8_mainloop.py):
     wait full[s] │ w = w_ring[s][o & 3] (one broadcast LDS) │ s_q = s_ring[s][64q .. 64q + 63] * w (LDS) │
     chain q │ wait │ acc_q += p * s_q[:, None] (FFMA)

   Why this way (docs/kernels/hopper_pingpong_fp8.md "Block-scale mode", docs/PERF.md's decision log, FP8 rows): the
   load warp never waits on a scale (copies land on full[s] with the operands), and the consumers load nothing
   from global memory in the mainloop (a w-scale LDG one step ahead stalled the chain's issue: +1-7% at M = 128
   without it); reading the slot before issuing the chain puts the shared-memory latency under the
   wgmma. TMA where it can: a box must start on a 16-byte boundary in global memory and land on a 128-byte
   boundary in shared memory (measured with a probe kernel), so the x scales go by TMA only when M-major with a
   K-block stride of a multiple of 4 (`scale_tma_ok`; the op takes any strides: row-major (M, KB) makes a tile's
   BM scales of one kb a strided column, 32 bytes a row, docs/PERF.md), and the w scale's box starts
   at its offset rounded down to 4 elements (hopper_fp8_mainloop._w_pick keeps the one).

Epilogue of one work item (per consumer; coop: its half, ROW0 = (BM / 2) * consumer)::

   acc0 [acc1] ─► _store_slice: (rowcol) acc * x_scale[m] * w_scale[n], + bias[n] (fp32), cast ─► c_smem rows
                  0..63 [64..127] ─► fence_async_shared ─► TMA store c_smem ─► y[row.., col..]
      staging buffer free: C_TILES 2: store_wait(0) of my last store; C_TILES 1: wait c_free (the other consumer's
      store has read it), then after my store: store_wait(0), arrive c_free (epilogues alternate 0, 1, 0, ...)
   tail split: acc [* x_scale[m] * w_scale[n]] ─► gl.store ─► part rows part * BM + ROW0 .. (fp32, BN a row)

Constraints:
  - Those of hopper_pingpong_fp8.py (its docstring): sm_90, fp8 operands, the tile and scale-block rules.
  - load_partition runs as one warp (LOAD_THREADS = 32 lanes): the cp.async x-scale copies spread BM rows over
    the lanes (BM % 32 == 0), and full[s] must count 1 + LOAD_THREADS arrivals when the x scales go by cp.async
    (each lane's noinc arrival), 1 otherwise; NBYTES (expect-tx) is every TMA box of the step.
  - Scale offsets are int32 (the launch refuses scale tensors spanning 2**31 elements or more: `unsupported`).
    The x scales' TMA box starts on a multiple of 4 elements only where `scale_tma_ok`; the w scale's box starts
    at its offset rounded down to WS_BOX and lands in the head of a W_SLOT-float (128-byte) slot buffer.
  - _stage_vectors: BM and vw_smem's width multiples of 32 (whole copies a lane); rows / columns past M / N are
    clamped to the last (the TMA store clips them); vfull counts the 32 lanes, vempty both consumers.
  - store_y's C_TILES 1 handover needs the two consumers' epilogues to alternate, consumer 0's first (c_free's
    parity 1 - CONSUMER, counting one arrival); slices of 64 rows (SLICE_M), y_desc's block the staging box.
  - store_scaled_partial: the workspace is (TAIL * SPLITS * BM, BN) fp32, row-major; `part` < TAIL * SPLITS.
  - PAIR (pingpong): both rings run every tile of the CTA (`first_item`), half RING of its K steps (`pair_steps`:
    k_steps >= 2, so neither half is empty); pair_put / pair_take alternate on one exchange buffer, xfull and xempty
    counting one arrival each, their phases the consumers' local tile count.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from ..triton._schedule import tail_item
from ._compat import cp_async_load, tma_load, tma_store
from .hopper_fp8_plan import VECTOR_BUFFERS, W_SLOT_FLOATS, WS_BOX_FLOATS
from .hopper_parts import item_tile, load_rows, ring_next, store_partial

LOAD_THREADS = gl.constexpr(32)  # one load warp per ring (warp_specialize's 1s): its lanes all arrive on full[s]
NV_BUFFERS = gl.constexpr(VECTOR_BUFFERS)  # (coop rowcol) work items whose epilogue scales are staged at once
W_SLOT = gl.constexpr(W_SLOT_FLOATS)  # (block) fp32 of a slot's w-scale buffer (128 bytes: a TMA destination)
WS_BOX = gl.constexpr(WS_BOX_FLOATS)  # (block) of which the w scale's TMA box fills the first 4


@gluon.jit
def pair_steps(k_steps, HALF: gl.constexpr):
    """(first K step, K steps) of half HALF (0 or 1) of a tile's k_steps, for the paired pingpong (PAIR: both
    consumers on one tile, consumer / ring HALF its half): cdiv(k_steps, 2) steps, then the rest."""
    q = gl.cdiv(k_steps, 2)
    k0 = HALF * q
    return k0, gl.minimum(q, k_steps - k0)


@gluon.jit
def first_item(RING: gl.constexpr, NRINGS: gl.constexpr, PAIR: gl.constexpr):
    """(first local work item, stride) of ring RING: items pid + RING * nprog, stepping NRINGS * nprog (pingpong:
    each consumer its tiles; coop: NRINGS 1), or (PAIR) every item of the CTA on both rings."""
    nprog = gl.num_programs(0)
    if PAIR:
        return gl.program_id(0), nprog
    else:
        return gl.program_id(0) + RING * nprog, NRINGS * nprog


@gluon.jit
def load_partition(RING: gl.constexpr, NRINGS: gl.constexpr, x_desc, w_desc, xs_desc, ws_desc, a_ring, b_ring,
                    s_ring, w_ring, full, empty, vx_smem, vw_smem, vfull, vempty, xs_ptr, ws_ptr, M, N, K, stride_xsm,
                    stride_xsk, stride_wsn, stride_wsk, TAIL, SPLITS, magic, STAGES: gl.constexpr,
                    GROUP_SIZE_M: gl.constexpr, SCALE: gl.constexpr, SCALE_BN: gl.constexpr, SCALE_BK: gl.constexpr,
                    SCALE_TMA: gl.constexpr, VEC: gl.constexpr, PAIR: gl.constexpr, XBOXES: gl.constexpr):
    """1 warp: every K step of local work items RING, RING + NRINGS, ... into ring RING (pingpong: NRINGS = 2,
    consumer RING's tiles; coop: NRINGS = 1, every work item of the CTA, read by both consumers; a tail split's
    item is its K range of one tile, `tail_item`; PAIR: every tile of the CTA, half RING of its K steps,
    `pair_steps`); (block) with the step's scales, which full[slot] also waits for:
    BM x scales x_scale[m, kb] into s_ring[slot] (SCALE_TMA: a 1-D TMA box; else cp.async) and the tile's
    w_scale[nb, kb] into w_ring[slot] (a 1-D TMA box of 4 from its offset rounded down to 4 elements,
    hopper_fp8_mainloop._w_pick). (VEC: coop rowcol) before an item's K steps, its epilogue scales into a vector
    buffer (`_stage_vectors`)."""
    BM: gl.constexpr = a_ring.shape[1]  # the tile's rows
    XROWS: gl.constexpr = x_desc.block_type.shape[0]  # x's box: BM, or XBOXES boxes hold x's rows (_host.x_boxes)
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    # (block) BM scales over the warp's 32 lanes, BM / 32 each, lane l holding rows l, l + 32, ...: each cp.async
    # instruction of the warp reads 32 consecutive rows, one 128-byte line when x_scale is M-major (the layout
    # gemmkit.quant.quantize_fp8_blockwise returns; row-major costs a line per row, docs/PERF.md).
    s_layout: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    if SCALE == "block" and SCALE_TMA:  # a, b and the two scale boxes
        NBYTES: gl.constexpr = (XBOXES * x_desc.block_type.nbytes + w_desc.block_type.nbytes +
                                xs_desc.block_type.nbytes + ws_desc.block_type.nbytes)
    elif SCALE == "block":  # a, b and the w scale's box (the x scales by cp.async)
        NBYTES: gl.constexpr = XBOXES * x_desc.block_type.nbytes + w_desc.block_type.nbytes + ws_desc.block_type.nbytes
    else:
        NBYTES: gl.constexpr = XBOXES * x_desc.block_type.nbytes + w_desc.block_type.nbytes
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_steps = gl.cdiv(K, BK)
    idx = 0
    phase = 0
    num_tiles = num_pid_m * num_pid_n
    item = 0  # local work items so far (VEC: which vector buffer, which phase)
    start, stride = first_item(RING, NRINGS, PAIR)
    for w in range(start, num_tiles + TAIL * (SPLITS - 1), stride):
        tile_id, k0, nk, part = tail_item(w, num_tiles, TAIL, SPLITS, k_steps)
        if PAIR:
            k0, nk = pair_steps(k_steps, RING)
        pid_m, pid_n = item_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M, magic[0], magic[1], magic[2], magic[3])
        if VEC:
            _stage_vectors(vx_smem, vw_smem, vfull, vempty, item, xs_ptr, ws_ptr, pid_m, pid_n, M, N, BM, BN)
            item += 1
        if SCALE == "block":
            # The tile's first x scale and its w scale row in K block 0 (TMA: 1-D coordinates; the x box starts on
            # a multiple of 4 elements by scale_tma_ok and runs on past row M into what follows the column, or is
            # zero-filled past the tensor: those rows of x are zero-filled and those rows of y never stored);
            # cp.async: each lane's rows of x (clamped to M - 1).
            xs0 = pid_m * BM * stride_xsm
            ws0 = (pid_n * BN // SCALE_BN) * stride_wsn
            xs_off = gl.minimum(pid_m * BM + gl.arange(0, BM, layout=s_layout), M - 1) * stride_xsm
        for kk in range(k0, k0 + nk):
            slot = RING * STAGES + idx
            mbarrier.wait(empty.index(slot), phase ^ 1)  # round 0 passes: fresh barrier
            bar = full.index(slot)
            if SCALE == "block":
                kb = kk * BK // SCALE_BK
                if not SCALE_TMA:
                    # The step's x scales by cp.async (a 4-byte copy per row, a line an instruction if x_scale is
                    # M-major), then this lane's arrival on full[slot], made when its copies have landed (noinc:
                    # full counts 1 + 32 arrivals then): the slot completes only with its scales, and this warp
                    # never waits for them.
                    cp_async_load(s_ring.index(slot), xs_ptr + (xs_off + kb * stride_xsk))
                    async_copy.mbarrier_arrive(bar, increment_count=False)
            mbarrier.expect(bar, NBYTES)
            load_rows(x_desc, pid_m * BM, kk * BK, bar, a_ring.index(slot), XROWS < BM, XBOXES)  # (x_boxes)
            tma_load(w_desc, [pid_n * BN, kk * BK], bar, b_ring.index(slot))
            if SCALE == "block":  # 4 fp32 holding the w scale; (SCALE_TMA) BM x scales (512 bytes at BM = 128)
                tma_load(ws_desc, [(ws0 + kb * stride_wsk) // WS_BOX * WS_BOX], bar, w_ring.index(slot).slice(0, WS_BOX))
                if SCALE_TMA:
                    tma_load(xs_desc, [xs0 + kb * stride_xsk], bar, s_ring.index(slot))
            idx, phase = ring_next(idx, phase, STAGES)


@gluon.jit
def _stage_vectors(vx_smem, vw_smem, vfull, vempty, item, xs_ptr, ws_ptr, pid_m, pid_n, M, N, BM: gl.constexpr,
                   BN: gl.constexpr):
    """(load warp, coop rowcol) Work item `item`'s epilogue scales into vector buffers item % NV: x_scale of the
    tile's BM rows into vx_smem, w_scale of its columns into vw_smem (WSN = max(BN, 32) of them: whole 4-byte
    copies on every lane), by cp.async, tracked by vfull (each lane's noinc arrival, made when its copies land: vfull counts 32).
    Indices past M / N are clamped to the last (those rows and columns are clipped by the store)."""
    NV: gl.constexpr = vx_smem.shape[0]
    WSN: gl.constexpr = vw_smem.shape[1]
    vs = item % NV
    mbarrier.wait(vempty.index(vs), ((item // NV) & 1) ^ 1)  # both consumers read it NV items ago
    rows = gl.minimum(pid_m * BM + gl.arange(0, BM, layout=gl.BlockedLayout([BM // 32], [32], [1], [0])), M - 1)
    cols = gl.minimum(pid_n * BN + gl.arange(0, WSN, layout=gl.BlockedLayout([WSN // 32], [32], [1], [0])), N - 1)
    cp_async_load(vx_smem.index(vs), xs_ptr + rows)
    cp_async_load(vw_smem.index(vs), ws_ptr + cols)
    async_copy.mbarrier_arrive(vfull.index(vs), increment_count=False)


@gluon.jit
def _store_slice(c_smem, acc, ROW: gl.constexpr, xs_ptr, xs, ws, bias, offs_m, M, HAS_BIAS: gl.constexpr,
                 SCALE: gl.constexpr, VEC: gl.constexpr):
    """Epilogue of one 64-row slice into c_smem rows ROW..ROW+63: (rowcol) (acc * x_scale[m]) * w_scale[n],
    (block) acc as promoted, then + bias[n] in fp32 (the Triton tier's order: kernels/triton/_epilogue.py),
    cast to y's dtype. x_scale: `xs` as staged (VEC), else loaded here."""
    out = acc
    if SCALE == "rowcol":
        if not VEC:
            xs = gl.load(xs_ptr + offs_m + ROW, mask=offs_m + ROW < M, other=0.0)
        out = acc * xs[:, None] * ws[None, :]
    if HAS_BIAS:
        out = out + bias[None, :]
    c_smem.slice(ROW, acc.shape[0]).store(out.to(c_smem.dtype))


@gluon.jit
def store_y(y_desc, c_smem, c_free, acc0, acc1, row, col, xs_ptr, xs, xs1, ws, bias, offs_m, M, CONSUMER: gl.constexpr,
             C_TILES: gl.constexpr, TWO: gl.constexpr, HAS_BIAS: gl.constexpr, SCALE: gl.constexpr,
             VEC: gl.constexpr):
    """A work item's y tile (or coop half) at (row, col): the slices through the staging buffer, one TMA store.
    The staging buffer is free once this consumer's previous store has read it (C_TILES 2) or the other
    consumer's has (C_TILES 1: handed over by c_free, epilogues alternating)."""
    SM: gl.constexpr = 64
    if C_TILES == 2:
        tma.store_wait(0)  # my previous tile's TMA store has read my c_smem
    else:
        mbarrier.wait(c_free, 1 - CONSUMER)  # the other consumer's last store has read the shared c
    _store_slice(c_smem, acc0, 0, xs_ptr, xs, ws, bias, offs_m, M, HAS_BIAS, SCALE, VEC)
    if TWO:  # rows 64..127 of the buffer (VEC: coop 256, their staged x scales xs1)
        _store_slice(c_smem, acc1, SM, xs_ptr, xs1, ws, bias, offs_m, M, HAS_BIAS, SCALE, VEC)
    fence_async_shared()  # generic-proxy writes -> async-proxy (TMA) read
    tma_store(y_desc, [row, col], c_smem)
    if C_TILES == 1:
        tma.store_wait(0)
        mbarrier.arrive(c_free)


@gluon.jit
def store_scaled_partial(part_ptr, acc, part, ROW0: gl.constexpr, BM: gl.constexpr, xs, ws, SCALE: gl.constexpr):
    """(coop, tail split) 64 of this consumer's rows (a slice at ROW0) of a K split's fp32 partial, into workspace
    tile `part` (hopper_parts.store_partial): (rowcol) times x_scale[m] * w_scale[n] (`xs`, `ws`: the staged vectors;
    linear, so the splits may be scaled before tail_reduce_kernel sums them and adds the bias), (block) as promoted."""
    out = acc
    if SCALE == "rowcol":
        out = acc * xs[:, None] * ws[None, :]
    store_partial(part_ptr, out, part, ROW0, BM)


@gluon.jit
def pair_put(xch, xfull, xempty, acc0, acc1, item, TWO: gl.constexpr):
    """(PAIR, consumer 1) Its partial of local tile `item` (rows 0..63 in acc0, TWO: 64..127 in acc1) into the
    exchange buffer, once consumer 0 has taken the last one out (xempty), then xfull. mbarrier arrive / wait
    order the shared-memory writes before consumer 0's reads (release / acquire, CTA scope)."""
    mbarrier.wait(xempty, (item & 1) ^ 1)  # item 0 passes: fresh barrier
    xch.slice(0, 64).store(acc0)
    if TWO:
        xch.slice(64, 64).store(acc1)
    mbarrier.arrive(xfull)


@gluon.jit
def pair_take(xch, xfull, xempty, acc0, acc1, item, TWO: gl.constexpr):
    """(PAIR, consumer 0) acc + consumer 1's partial of local tile `item` (its K half: the tile's sum, in one
    fixed order: first half + second half), then the buffer back (xempty)."""
    mbarrier.wait(xfull, item & 1)
    acc0 = acc0 + xch.slice(0, 64).load(acc0.type.layout)
    if TWO:
        acc1 = acc1 + xch.slice(64, 64).load(acc1.type.layout)
    mbarrier.arrive(xempty)
    return acc0, acc1
