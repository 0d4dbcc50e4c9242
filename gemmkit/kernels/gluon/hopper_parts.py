"""The device parts shared by the Hopper (sm_90) Gluon GEMM kernels: ring counters, the work space and tile
order, the TMA load partition, the split tile's mainloop and the sub-tiled stores (`@gluon.jit` helpers,
inlined where they are called; no kernel here).

Used by hopper_pingpong.py (its consumer partition), hopper_coop.py (its two consumer partitions),
hopper_pingpong_batched.py (both kernels' load warp) and hopper_fp8_mainloop.py / hopper_fp8_parts.py /
hopper_pingpong_fp8.py (`ring_next`, `item_tile`), so every kernel steps its ring and orders its tiles the same way::

   load_partition (1 warp) ──TMA──► ring slot s = (a[s], b[s] [, t[s]])  ── full[s] ──► consumer mainloop
        ▲                                                                                   │
        └──────────────────────────────── empty[s] ◄────────────────────────────────────────┘
   every partition: work_space (tiles, or B x tiles: batch entries / K splits; tail_items: + a tail split's splits)
                    ──► work_range (sched_tile's (b, pid_m, pid_n): work_tile's order, without runtime divisions
                    where the Schedule has the host's magic (item_tile); and the item's K range:
                    _schedule.tail_item's under a tail split) ──► tile_origin (first row / column: the last tile
                    shifted back to end at M / N, the dense kernels; the batched ones pid * BLOCK; both from
                    kernels/triton/_schedule.py)
                    ring_next (slot, phase) after each K step; ring_prev: the slot a consumer releases
   ring set-up:     ring_init (a ring's full / empty mbarriers of some stages: by the kernel before its partitions
                    start, or, the dense kernels (ring.ready), by the load warp: stage 0 before its first step, the
                    rest after that step's loads, then it arrives on ready) ──► ring_ready (a consumer's one wait)
   epilogue:        store_subtile (one TMA store through a staging tile), store_split (a split tile: A / B + 1 of them),
                    store_partial (a tail split's fp32 partial, plain stores), store_gated (the gated tile: act(g) * u)
   arguments:       hopper_bundles.py's bundles: load_partition(descs, ring, sched), split_mainloop(ring, ...),
                    store_split(y_desc, epi, ...); the consumer partitions are the kernel files'

Ring counters: step g of a CTA (over all its work items) sits in slot g % S with phase (g // S) & 1; `ring_next`
advances (slot, phase) by one step, so no partition divides. A fresh mbarrier counts as having completed the
phase before phase 0: the loader's first wait on empty[s] (parity phase ^ 1) passes at once.

Split tile (BN = A + B, two powers of two, A = 2, 4 or 8 B: 48 / 96 / 192 = 3 B, 80 = 64 + 16, 144 = 128 + 16,
160 = 128 + 32; hopper_pingpong.py's docstring; hopper_coop.py runs it on each consumer's half of the x box)::

   ring slot s:  a[s]: BM x BK | b[s]: A x BK (A / B w boxes) | t[s]: B x BK (one w box)   full[s] expects them all
   mainloop:     acc += a[s][rows] @ b[s]^T (BM x A), acc_t += a[s][rows] @ t[s]^T (BM x B); wait(2)
   epilogue:     acc -> A / B pieces of B columns, acc_t -> one: A / B + 1 TMA stores of BM x B, each from its
                 own staging sub-tile (epi.PIECES = A / B + 1: one wait for the previous tile's stores) or all
                 through one (PIECES 1: each store waits for the one before)

Constraints:
  - sm_90 (TMA, wgmma, mbarriers); the ring's slots are 2-D NVMMA-swizzled shared memory (the batched
    kernels' 3-D boxes are written through 3-D views of them).
  - Work ids < 2**31 (int32: tiles, or B x tiles); tile order is the Triton tier's (kernels/triton/_schedule.py).
  - `tile_origin` (SHIFT): every tile dim (BLOCK_SIZE_M / N, split tiles too) a multiple of 8, so a shifted origin
    (rounded up to 8) is one a TMA box may start at; the tiles that overlap a shifted one compute the same values.
  - SPLIT_K: every split's K range starts below K (the host: configs/model/tail.py split_count); the ranges are equal,
    the last one may run past K into TMA's zero fill.
  - TAIL (the ping-pong's and the cooperative kernel's tail split): SPLIT_K and BATCHED off; sched.R tail tiles x
    sched.B splits <= the grid, so a CTA's split, if any, is its last item (configs/model/tail.py tail_split).
  - ring.ready (the load warp sets the ring up): every CTA has a work item with at least one K step (grid <= work
    items, K >= 1), so its load warp arrives on ready, which every consumer of the CTA waits on.
  - A split tile is 2-D only (the dense kernels), B a power of two >= 16 and A = 2, 4 or 8 B (configs.SPLIT_N);
    the gated tile (GATED, the ping-pong's) 2-D, A = B = BN, w (2N, K) with its up rows from row N; ring.t is None
    (a constexpr field of the `Ring`) for every other tile.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_init, warpgroup_mma_wait)

from ..triton._epilogue import activation, bias_activation
from ..triton._schedule import batched_tile_coords, grouped_tile_magic, tail_item, tile_coords, tile_origin
from ._compat import tma_load, tma_store


@gluon.jit
def ring_next(idx, phase, STAGES: gl.constexpr):
    """Advance a (slot, phase) counter of the ring by one step."""
    idx += 1
    wrap = idx == STAGES
    return gl.where(wrap, 0, idx), gl.where(wrap, phase ^ 1, phase)


@gluon.jit
def ring_prev(idx, STAGES: gl.constexpr):
    """The slot one step before `idx`. Computed, not remembered: a Python name that aliases a loop
    variable at loop entry (`prev = idx`) is not loop-carried in Triton 3.6's frontend (its dry run
    compares values by identity), and such a `prev` silently stays the tile's first slot."""
    return gl.where(idx == 0, STAGES - 1, idx - 1)


@gluon.jit
def count_work(num_pid_m, num_pid_n, B, BY_ENTRY: gl.constexpr):
    """Work ids of a launch: tiles, or B x tiles (BY_ENTRY: batch entries, or K splits with B = SPLITS)."""
    if BY_ENTRY:
        return B * num_pid_m * num_pid_n
    else:
        return num_pid_m * num_pid_n


@gluon.jit
def split_steps(K, BK: gl.constexpr, SPLITS, SPLIT_K: gl.constexpr):
    """K steps per work item: all of K, or (SPLIT_K) one of SPLITS equal ranges of cdiv(cdiv(K, BK), SPLITS)
    steps. Equal, so a consumer's ring position stays (local item) x (steps); the last range may run past
    K, where TMA zero-fills the boxes (adding zeros). The host makes every range start below K
    (`configs/model/tail.py split_count`)."""
    k_steps = gl.cdiv(K, BK)
    if SPLIT_K:
        k_steps = gl.cdiv(k_steps, SPLITS)
    return k_steps


@gluon.jit
def work_space(M, N, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, B, BATCHED: gl.constexpr,
                SPLIT_K: gl.constexpr):
    """What every partition of a launch iterates over, in one place: (num_pid_m, num_pid_n, num_work, k_steps)
    with work ids over tiles, or over B x tiles when B counts batch entries (BATCHED) or K splits (SPLIT_K),
    and the K steps of one work item (`split_steps`). The load and consumer partitions of the ping-pong,
    the cooperative and the batched kernels call it, so their loops agree by construction."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    num_work = count_work(num_pid_m, num_pid_n, B, BATCHED or SPLIT_K)
    k_steps = split_steps(K, BK, B, SPLIT_K)
    return num_pid_m, num_pid_n, num_work, k_steps


@gluon.jit
def out_row(b, row0, num_pid_m, BM: gl.constexpr, SPLIT_K: gl.constexpr):
    """A tile's first output row: row0 (`tile_origin`), or (SPLIT_K) that row in split b's slab of the fp32
    workspace. The slabs are num_pid_m * BM rows (whole tiles): a tile's rows past M stay inside its own slab,
    which TMA's clipping at the workspace's last row alone would not ensure."""
    if SPLIT_K:
        return b * num_pid_m * BM + row0
    else:
        return row0


@gluon.jit
def work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M: gl.constexpr, BATCHED: gl.constexpr):
    """Work id -> (batch entry, pid_m, pid_n), the Triton tier's order (kernels/triton/_schedule.py): grouped
    tiles (`tile_coords`), batch-major over B x tiles when BATCHED (`batched_tile_coords`); entry 0 if not."""
    if BATCHED:
        b, pid_m, pid_n = batched_tile_coords(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
    else:
        pid_m, pid_n = tile_coords(work_id, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
        b = 0
    return b, pid_m, pid_n


@gluon.jit
def item_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: gl.constexpr, group_m, group_s, last_m, last_s):
    """A tile id's (pid_m, pid_n) in the grouped order: with the host's division magic (group_m, group_s, last_m,
    last_s: kernels/triton/_schedule.group_magic, hopper_host.TILE_MAGIC) `grouped_tile_magic`, the same tiles as
    `tile_coords` without its two runtime divisions; all None: `tile_coords`. The dense kernels (`sched_tile`) and
    the fp8 kernels (hopper_fp8_parts, hopper_pingpong_fp8) take their tiles here."""
    if group_m is not None:
        pid_m, pid_n = grouped_tile_magic(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M, group_m, group_s, last_m,
                                          last_s)
    else:
        pid_m, pid_n = tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
    return pid_m, pid_n


@gluon.jit
def sched_tile(tile_id, num_work, num_pid_m, num_pid_n, sched, BY_ENTRY: gl.constexpr):
    """`work_tile` with the schedule's division magic where it has one (the dense kernels, tiles not by entry:
    `item_tile`)."""
    if BY_ENTRY:
        b, pid_m, pid_n = work_tile(tile_id, num_work, num_pid_m, num_pid_n, sched.GROUP_SIZE_M, BY_ENTRY)
    else:
        pid_m, pid_n = item_tile(tile_id, num_pid_m, num_pid_n, sched.GROUP_SIZE_M, sched.group_m, sched.group_s,
                                 sched.last_m, sched.last_s)
        b = 0
    return b, pid_m, pid_n


@gluon.jit
def tail_items(num_work, sched):
    """Work items of a launch of `num_work` (`work_space`), and (sched.TAIL: a tail split) each of the sched.R tail
    tiles as sched.B K splits: R (B - 1) more (`tail_item`)."""
    if sched.TAIL:
        return num_work + sched.R * (sched.B - 1)
    else:
        return num_work


@gluon.jit
def work_range(work_id, num_work, num_pid_m, num_pid_n, k_steps, sched):
    """Work id -> (b, pid_m, pid_n, first K step, K steps, partial) for the load and consumer partitions: the tile
    (`work_tile`; b the batch entry or K split, else 0) and its K range: all k_steps; (SPLIT_K) split b's,
    [b k_steps, (b + 1) k_steps); (TAIL, a tail split of the dense kernels) `tail_item`'s: a whole tile, or one
    of sched.B K splits of a tail tile, `partial` its fp32 workspace tile (-1 elsewhere: the epilogue stores y)."""
    if sched.TAIL:
        tile_id, k0, nk, part = tail_item(work_id, num_pid_m * num_pid_n, sched.R, sched.B, k_steps)
        b, pid_m, pid_n = sched_tile(tile_id, num_work, num_pid_m, num_pid_n, sched, False)
    else:
        BY_ENTRY: gl.constexpr = sched.BATCHED or sched.SPLIT_K
        b, pid_m, pid_n = sched_tile(work_id, num_work, num_pid_m, num_pid_n, sched, BY_ENTRY)
        k0 = 0
        if sched.SPLIT_K:
            k0 = b * k_steps
        nk = k_steps
        part = -1
    return b, pid_m, pid_n, k0, nk, part


@gluon.jit
def store_partial(part_ptr, out, part, ROW0: gl.constexpr, BM: gl.constexpr):
    """A tail split's fp32 partial (`tail_item`), the rows of `out` at ROW0 of a BM-row tile, into workspace tile
    `part` (rows part * BM + ROW0 .., out's columns a row, the workspace (R S BM, BN) fp32 row-major): plain stores
    from the wgmma layout (each thread 2 adjacent fp32: whole 32-byte sectors); only the last round's splits take
    this path, kernels/triton/_splitk_reduce.tail_reduce_kernel sums them. The bf16 ping-pong's (a whole tile), the bf16
    cooperative kernel's and the FP8 coop kernel's (a consumer's half, hopper_fp8_parts.store_scaled_partial)."""
    BN: gl.constexpr = out.shape[1]
    rows = part * BM + ROW0 + gl.arange(0, out.shape[0], layout=gl.SliceLayout(1, out.type.layout))
    cols = gl.arange(0, BN, layout=gl.SliceLayout(0, out.type.layout))
    gl.store(part_ptr + rows[:, None] * BN + cols[None, :], out)


@gluon.jit
def load_rows(desc, row0, k0, bar, dst, CUT: gl.constexpr, BOXES: gl.constexpr):
    """TMA desc's box at (row0, k0) into dst (a ring slot), arriving on bar; or (CUT: one row of tiles, row0 0, the
    box fewer rows than dst: kernels/_host.x_boxes) BOXES boxes of its rows into dst's first rows, the rest of dst
    never written (the rows of the product they make lie past the tensor's rows, never stored)."""
    if CUT:
        R: gl.constexpr = desc.block_type.shape[0]
        for i in gl.static_range(BOXES):
            tma_load(desc, [i * R, k0], bar, dst.slice(i * R, R))
    else:
        tma_load(desc, [row0, k0], bar, dst)


@gluon.jit
def ring_init(ring, FIRST: gl.constexpr, LAST: gl.constexpr):
    """Set up ring stages [FIRST, LAST): full[s] counts the load warp's expect-tx arrive (+ the TMA bytes), empty[s]
    ring.ARRIVALS consumer arrivals. The kernel sets up every stage before its partitions start (ring.ready None), or
    only the ready mbarrier (count 1), and the load warp stage 0 before its first step and stages 1.. after that
    step's loads (`load_partition`), then arrives on ready; each consumer waits on ready before its first step
    (`ring_ready`). Why: Triton 3.6 orders two inits of one mbarrier array with a barrier of the kernel's warps
    (~110 cycles a stage on the H200) ahead of the first load; late, the load warp's own short barriers lie under
    its first loads' latency."""
    for i in gl.static_range(FIRST, LAST):
        mbarrier.init(ring.full.index(i), count=1)
        mbarrier.init(ring.empty.index(i), count=ring.ARRIVALS)


@gluon.jit
def ring_ready(ring):
    """A consumer's wait, before its first step, for the load warp's late set-up of the ring (`ring_init`)."""
    if ring.ready is not None:
        mbarrier.wait(ring.ready, 0)


@gluon.jit
def load_partition(descs, ring, sched):
    """1 warp: for every K step of every tile of this CTA, wait for the slot, then TMA x and w into it
    (bundles: hopper_bundles.py `Descs`, `Ring`, `Schedule`).
    BATCHED: 3-D descriptors (B, rows, K) with boxes [1, rows, BK], written through a 3-D view of the
    2-D ring slot (same bytes, same swizzle: the consumers read the slot as before).
    ring.t (a split tile, the ping-pong's or hopper_coop.py's, 2-D only): a tile of BN = A + B columns keeps w rows
    [0, A) in ring.b and [A, A + B) in ring.t (shared-memory shapes are powers of two); the w box is B rows,
    A / B + 1 per step, and full[s] expects x's box + those w boxes. ring.GATED (the ping-pong's gated tile): ring.b
    holds the gate rows [col0, col0 + BN) of w (2N, K), ring.t the up rows [N + col0, N + col0 + BN), one box each.
    SPLIT_K (dense only): B is the number of K splits; work id -> (split b, tile) as the batched order, and
    split b loads K steps [b * k_steps, (b + 1) * k_steps) (`split_steps`). TAIL (the ping-pong's and hopper_coop.py's
    tail split): the K range of `work_range`'s item, a whole tile or one split of a tail tile.
    The tokens' operand (x; SWAP: w) under one row of tiles (2-D only; kernels/_host.x_boxes): a box of fewer rows than
    its ring slot's, sched.X_BOXES of them a step into the slot's first rows (`load_rows`). ring.X_KM (2-D, no split
    tile): x's descriptor is over its (K, M) storage, a BK x BM box a step."""
    x_desc = descs.x
    w_desc = descs.w
    a_ring = ring.a
    b_ring = ring.b
    t_ring = ring.t
    full = ring.full
    empty = ring.empty
    STAGES: gl.constexpr = ring.STAGES
    BM: gl.constexpr = ring.BM
    BK: gl.constexpr = ring.BK
    BN: gl.constexpr = ring.BN
    BATCHED: gl.constexpr = sched.BATCHED
    SPLIT_K: gl.constexpr = sched.SPLIT_K
    X_BOXES: gl.constexpr = sched.X_BOXES
    # the tokens' rows only (X_CUT: x's; W_CUT, swap-AB: w's, the tokens), X_BOXES boxes a step
    X_CUT: gl.constexpr = not BATCHED and not sched.SWAP and x_desc.block_type.shape[0] < BM
    W_CUT: gl.constexpr = not BATCHED and sched.SWAP and w_desc.block_type.shape[0] < BN
    X_BYTES: gl.constexpr = x_desc.block_type.nbytes * (X_BOXES if X_CUT else 1)
    if t_ring is None:
        W_BYTES: gl.constexpr = w_desc.block_type.nbytes * (X_BOXES if W_CUT else 1)
    else:
        T: gl.constexpr = t_ring.shape[1]  # B, the w box's rows
        BOXES: gl.constexpr = b_ring.shape[1] // T  # A / B boxes into ring.b
        W_BYTES: gl.constexpr = (BOXES + 1) * w_desc.block_type.nbytes
    num_pid_m, num_pid_n, num_work, k_steps = work_space(sched.M, sched.N, sched.K, BM, BN, BK, sched.B, BATCHED,
                                                         SPLIT_K)
    LATE: gl.constexpr = ring.ready is not None  # the ring's late set-up (`ring_init`)
    if LATE:
        ring_init(ring, 0, 1)
    idx = 0
    phase = 0
    first = gl.program_id(0)
    for work_id in range(first, tail_items(num_work, sched), gl.num_programs(0)):
        b, pid_m, pid_n, k0, nk, part = work_range(work_id, num_work, num_pid_m, num_pid_n, k_steps, sched)
        row0 = tile_origin(pid_m, sched.M, BM, sched.SHIFT)
        col0 = tile_origin(pid_n, sched.N, BN, sched.SHIFT)
        for kk in range(k0, k0 + nk):
            mbarrier.wait(empty.index(idx), phase ^ 1)  # round 0 passes: fresh barrier
            bar = full.index(idx)
            mbarrier.expect(bar, X_BYTES + W_BYTES)
            if BATCHED:
                tma_load(x_desc, [b, row0, kk * BK], bar, a_ring.index(idx).reshape([1, BM, BK]))
                tma_load(w_desc, [b, col0, kk * BK], bar, b_ring.index(idx).reshape([1, BN, BK]))
            elif t_ring is None:
                if ring.X_KM:  # x transposed in memory (a swap-AB tile's weight): its BK x BM box at (k, row)
                    tma_load(x_desc, [kk * BK, row0], bar, a_ring.index(idx))
                else:
                    load_rows(x_desc, row0, kk * BK, bar, a_ring.index(idx), X_CUT, X_BOXES)
                load_rows(w_desc, col0, kk * BK, bar, b_ring.index(idx), W_CUT, X_BOXES)
            else:
                load_rows(x_desc, row0, kk * BK, bar, a_ring.index(idx), X_CUT, X_BOXES)
                for i in gl.static_range(BOXES):
                    tma_load(w_desc, [col0 + i * T, kk * BK], bar, b_ring.index(idx).slice(i * T, T))
                if ring.GATED:  # the up rows of the tile's columns: w's second half, from row N (= I)
                    tma_load(w_desc, [sched.N + col0, kk * BK], bar, t_ring.index(idx))
                else:
                    tma_load(w_desc, [col0 + BOXES * T, kk * BK], bar, t_ring.index(idx))
            if LATE:
                if (work_id == first) & (kk == k0):  # the CTA's first step, its loads in flight
                    ring_init(ring, 1, STAGES)
                    mbarrier.arrive(ring.ready, count=1)
            idx, phase = ring_next(idx, phase, STAGES)


@gluon.jit
def split_mainloop(ring, idx, phase, k_steps, A_ROW0: gl.constexpr, BM: gl.constexpr):
    """A split tile's mainloop (hopper_pingpong.py's and hopper_coop.py's), from ring slot (idx, phase): per K step
    two wgmma on rows [A_ROW0, A_ROW0 + BM) of the a slot (the ping-pong: all of it; a cooperative consumer:
    its half), one with the A-row b slot, one with the B-row t slot of the `Ring` (loaded by `load_partition`'s
    ring.t path). Returns the two accumulators (BM x A, BM x B), the last step's wgmma still in flight (the caller
    waits, then releases that slot), and the ring position after the tile."""
    a_ring = ring.a
    b_ring = ring.b
    t_ring = ring.t
    full = ring.full
    empty = ring.empty
    STAGES: gl.constexpr = ring.STAGES
    T: gl.constexpr = t_ring.shape[1]
    A: gl.constexpr = b_ring.shape[1]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, A, 16])
    tail_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                          instr_shape=[16, T, 16])
    acc = warpgroup_mma_init(gl.zeros((BM, A), dtype=gl.float32, layout=acc_layout))
    acc_t = warpgroup_mma_init(gl.zeros((BM, T), dtype=gl.float32, layout=tail_layout))
    for kk in range(k_steps):
        mbarrier.wait(full.index(idx), phase)
        a = a_ring.index(idx).slice(A_ROW0, BM)
        acc = warpgroup_mma(a, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
        acc_t = warpgroup_mma(a, t_ring.index(idx).permute((1, 0)), acc_t, is_async=True)
        # two wgmma groups per step: with this step's two in flight, the previous step's are done
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        mbarrier.arrive(empty.index(ring_prev(idx, STAGES)), pred=kk > 0)
        idx, phase = ring_next(idx, phase, STAGES)
    return acc, acc_t, idx, phase


@gluon.jit
def store_subtile(y_desc, c_smem, v, b, row, col, BATCHED: gl.constexpr, WAIT: gl.constexpr = True):
    """One output sub-tile (hopper_coop.py's sub-tiled epilogue, `store_split`): wait until the last TMA store
    has read the staging tile (WAIT; not where the caller gave each sub-tile its own and waited once), write it,
    store it (BATCHED: at [b, row, col] of a 3-D y through a 3-D view of the staging tile, same bytes)."""
    if WAIT:
        tma.store_wait(0)
    c_smem.store(v)
    fence_async_shared()  # generic-proxy writes -> async-proxy (TMA) read
    if BATCHED:
        tma_store(y_desc, [b, row, col], c_smem.reshape([1, c_smem.shape[0], c_smem.shape[1]]))
    else:
        tma_store(y_desc, [row, col], c_smem)


@gluon.jit
def store_gated(y_desc, epi, acc_g, acc_u, row, col):
    """The gated tile's epilogue (hopper_pingpong.py's GATED): h = act(g) * u in fp32 (the Triton tier's
    `activation`, kernels/triton/_epilogue.py), cast, one TMA store of the BM x BN tile through this consumer's
    staging tile, after the previous tile's store has read it (two staging tiles: each consumer its own)."""
    h = activation(acc_g, epi.ACTIVATION) * acc_u
    store_subtile(y_desc, epi.c, h.to(y_desc.dtype), 0, row, col, False)


@gluon.jit
def _halves(v):
    """(columns [0, W / 2), columns [W / 2, W)) of a BM x W register tensor: a register split, nothing moves."""
    BM: gl.constexpr = v.shape[0]
    W: gl.constexpr = v.shape[1]
    return v.reshape([BM, 2, W // 2]).permute((0, 2, 1)).split()


@gluon.jit
def _piece(c_smem, k: gl.constexpr, PIECES: gl.constexpr):
    """A split tile's staging sub-tile for its piece k: its own (PIECES > 1), or the one all pieces share."""
    if PIECES > 1:
        return c_smem.index(k)
    else:
        return c_smem


@gluon.jit
def _put_piece(y_desc, c_smem, v, bias_ptr, row, col, M, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr,
               EACH: gl.constexpr, SWAP: gl.constexpr):
    """One piece of a split tile's epilogue (`store_split`): v at y[row, col] (its bias, activation and cast already
    applied); or (SWAP) v, the kernel's weight rows [row, row + R) x tokens [col, col + C) in fp32, transposed (a
    layout change, no data moves) to y's C x R, the bias per weight row (its columns now, bounded by M, the kernel's
    rows), the activation and the cast, stored at y[col, row]."""
    if SWAP:
        out = v.permute((1, 0))
        offs = row + gl.arange(0, out.shape[1], layout=gl.SliceLayout(0, out.type.layout))
        out = bias_activation(out, bias_ptr, offs, M, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
        store_subtile(y_desc, c_smem, out, 0, col, row, False, EACH)
    else:
        store_subtile(y_desc, c_smem, v, 0, row, col, False, EACH)


@gluon.jit
def store_split(y_desc, epi, acc, acc_t, row, col, N, SWAP: gl.constexpr = False):
    """A split tile's epilogue (hopper_pingpong.py's and hopper_coop.py's): bias / activation / cast on each
    accumulator with its own columns, then A / B + 1 TMA stores of BM x B sub-tiles. PIECES (epi.PIECES) = A / B + 1:
    the `Epilogue`'s staging c holds that many sub-tiles, one a piece, written after one wait for the previous tile's
    stores and stored with no wait between them; PIECES = 1: c is one BM x B sub-tile (where shared memory has no
    room for more), each store waiting until the previous one has read it. acc: columns [col, col + A) (stored as
    A / B pieces of B columns, A / B in 2, 4, 8: register splits, nothing moves), acc_t: [col + A, col + A + B).
    SWAP (hopper_coop.py's "Swap-AB"): the columns are tokens and the rows weight rows (N then bounds the bias, the
    kernel's M): each piece is split off in fp32 and transposed, its bias added per weight row, and stored at
    y[tokens, weight rows] through a B x BM staging sub-tile (`_put_piece`)."""
    c_smem = epi.c
    bias_ptr = epi.bias
    HAS_BIAS: gl.constexpr = epi.HAS_BIAS
    ACTIVATION: gl.constexpr = epi.ACTIVATION
    PIECES: gl.constexpr = epi.PIECES
    T: gl.constexpr = acc_t.shape[1]
    A: gl.constexpr = acc.shape[1]
    gl.static_assert(A == 2 * T or A == 4 * T or A == 8 * T, "a split tile's A is 2, 4 or 8 times its B")
    gl.static_assert(PIECES == 1 or PIECES == A // T + 1, "a split tile's staging: one sub-tile, or one a piece")
    EACH: gl.constexpr = PIECES == 1  # every store waits for the one before
    if not EACH:
        tma.store_wait(0)  # the previous tile's stores have read every piece
    if SWAP:  # (the pieces' epilogue math in `_put_piece`, after the transpose)
        out = acc
        out_t = acc_t
    else:
        offs = col + gl.arange(0, A, layout=gl.SliceLayout(0, acc.type.layout))
        out = bias_activation(acc, bias_ptr, offs, N, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
        offs_t = col + A + gl.arange(0, T, layout=gl.SliceLayout(0, acc_t.type.layout))
        out_t = bias_activation(acc_t, bias_ptr, offs_t, N, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
    lo, hi = _halves(out)
    if A == 2 * T:
        _put_piece(y_desc, _piece(c_smem, 0, PIECES), lo, bias_ptr, row, col, N, HAS_BIAS, ACTIVATION, EACH, SWAP)
        _put_piece(y_desc, _piece(c_smem, 1, PIECES), hi, bias_ptr, row, col + T, N, HAS_BIAS, ACTIVATION, EACH,
                   SWAP)
    elif A == 4 * T:
        for h in gl.static_range(2):
            q0, q1 = _halves(lo if h == 0 else hi)
            _put_piece(y_desc, _piece(c_smem, 2 * h, PIECES), q0, bias_ptr, row, col + 2 * h * T, N, HAS_BIAS,
                       ACTIVATION, EACH, SWAP)
            _put_piece(y_desc, _piece(c_smem, 2 * h + 1, PIECES), q1, bias_ptr, row, col + (2 * h + 1) * T, N,
                       HAS_BIAS, ACTIVATION, EACH, SWAP)
    else:
        for h in gl.static_range(2):
            q0, q1 = _halves(lo if h == 0 else hi)
            for q in gl.static_range(2):
                e0, e1 = _halves(q0 if q == 0 else q1)
                _put_piece(y_desc, _piece(c_smem, 4 * h + 2 * q, PIECES), e0, bias_ptr, row,
                           col + (4 * h + 2 * q) * T, N, HAS_BIAS, ACTIVATION, EACH, SWAP)
                _put_piece(y_desc, _piece(c_smem, 4 * h + 2 * q + 1, PIECES), e1, bias_ptr, row,
                           col + (4 * h + 2 * q + 1) * T, N, HAS_BIAS, ACTIVATION, EACH, SWAP)
    _put_piece(y_desc, _piece(c_smem, A // T, PIECES), out_t, bias_ptr, row, col + A, N, HAS_BIAS, ACTIVATION, EACH,
               SWAP)
