"""Ping-pong GEMM for Hopper (sm_90) in Gluon: y = act(x @ w.T + bias), bf16 / fp16 in, bf16 / fp16 / fp32 out.

The seeds' schedule (two groups of warps alternating between memory and math),
written as a warp-specialized kernel whose hand-offs are mbarriers: every wait
names the barrier and the phase it waits for, so the compiler never has to
guess an intent (seed 003 section 6: explicit phase counters).

Three partitions per CTA (`gl.warp_specialize`; persistent: one CTA per SM):

  load   (1 warp)    TMA x[BM, BK] and w[BN, BK] tiles into an S-stage shared-memory ring
  mma 0  (4 warps)   consumer warpgroup 0: local tiles 0, 2, 4, ... of this CTA
  mma 1  (4 warps)   consumer warpgroup 1: local tiles 1, 3, 5, ...

Each consumer owns a whole BM x BN output tile: its mainloop (wgmma over all
K steps, accumulator in its registers), then its epilogue (bias, activation,
cast, TMA store). An "mma turn" mbarrier pair hands the tensor cores from one
consumer to the other, so one group's epilogue runs under the other's mainloop.

Tile layout (one CTA; its tiles t0, t1, t2, ... are tile ids pid, pid + grid, ...
mapped by the grouped order, `tile_coords` of kernels/triton/_schedule.py, here as `grouped_tile_magic` with the
host's division magic GROUP_M / GROUP_S / LAST_M / LAST_S, hopper_host.launch_tma; drawn
side by side here, they lie wherever that order puts them)::

                  K ─────────────────►                         N ──────────►
             ┌──────────────────────────┐                 ┌────────┬────────┐
   x (M, K)  │ BM x BK boxes, TMA ───┐  │       y (M, N)  │  t0    │  t1    │  BM
             └───────────────────────┼──┘                 │ (mma0) │ (mma1) │
             ┌───────────────────────┼──┐                 ├────────┼────────┤
   w (N, K)  │ BN x BK boxes, TMA ──┐│  │                 │  t2    │  ...   │
             └──────────────────────┼┼──┘                 └────────┴────────┘
                                    ▼▼                          BN

Batched form (hopper_pingpong_batched.py, the same partitions with BATCHED = True): the work ids
pid, pid + grid, ... cover B x tiles, batch-major (`batched_tile_coords`); the boxes are 3-D,
[1, BM, BK] / [1, BN, BK] / [1, BM, BN] at (b, row, col), written into / read from 3-D views of
the same 2-D ring slots and output tiles, so the consumer mainloop is unchanged::

   work id  0 ... T-1 | T ... 2T-1 | ...     (T = tiles of one entry; grouped order inside an entry)
            entry 0   | entry 1    |         a CTA's consumers alternate over these ids as over tiles
   shared memory:  ring[0..S-1] = (a: BM x BK, b: BN x BK), full[s] / empty[s] mbarriers
                   c0, c1: BM x BN output staging tile of each consumer (a split tile: BM x T), or one tile c
                           both share (C_TILES = 1, handed over by the c_free mbarrier)
                   turn[0], turn[1]: the mma-turn mbarriers

Phase timeline (one CTA, k = K steps per tile; "mma t" = all k wgmmas of tile t,
"epi t" = wait for the last wgmma, bias/activation/cast, smem, TMA store)::

   load  │ k steps of t0 │ k steps of t1 │ k steps of t2 │ k steps of t3 │ ...   (S stages ahead)
   mma 0 │ mma t0        │ epi t0 ...    │ mma t2        │ epi t2 ...    │
   mma 1 │ (wait turn)   │ mma t1        │ epi t1 ...    │ mma t3        │
                  turn[1] ▲       turn[0] ▲       turn[1] ▲
         each consumer arrives on the other's turn barrier once its last wgmma of
         a tile is issued, then drains it (wgmma wait 0) and runs its epilogue.

Barriers and their phase counters (all mbarriers, count 1; "step" g = j * k + kk,
the CTA-local K-step index over local tile j, shared by all three partitions):

   full[s]   stage s holds step g, s = g % S      load: expect-tx + 2 TMA (split tile: A / B + 2); mma: wait parity (g // S) & 1
   empty[s]  stage s may be refilled              mma: arrive after wgmma;    load: wait parity ((g // S) & 1) ^ 1
   turn[c]   consumer c may issue its mainloop    other consumer: arrive;     c, its n-th tile:
                                                  wait parity (n & 1) ^ 1 (c = 0) or n & 1 (c = 1)
   c_free    (C_TILES = 1) tile j's TMA store   consumer of tile j: store_wait(0), arrive;
             has read the shared c            consumer of tile j + 1 waits parity j & 1 before
                                              writing c (consumer 0: parity 1, consumer 1: 0)
   ready     (LATE_INIT) the ring is set up      load: after its first step's loads, init full[s] / empty[s] of
                                                  stages 1.. (stage 0 before that step), arrive; mma: wait parity 0
                                                  once, before its first step (hopper_parts.ring_init / ring_ready)
   A fresh mbarrier counts as having completed the phase before phase 0, so the
   first waits of the loader on empty[s] and of consumer 0 on turn[0] / c_free pass at once.

Why the turn barrier is needed for correctness, not only for speed: an mbarrier
wait matches a phase by its parity, so it is only exact when the barrier is at
most one phase away. The turn order makes a consumer start a tile only after the
other consumer has waited on every full[s] of the previous tile, so full[s] is
never two phases behind the consumer that waits on it.

Split tiles (BLOCK_SIZE_N = A + B, two powers of two with A = 2, 4 or 8 B: configs.SPLIT_N, 48 / 80 / 96 / 144 /
160 / 192; the 3 B ones shared with hopper_coop.py, whose docstring draws them): register and shared-memory tensors
and TMA boxes are powers of two, so the consumer keeps two accumulators (BM x A and BM x B, hopper_parts.py
`split_mainloop`: two wgmma per K step), the loader puts A / B + 1 B-row w boxes per stage into b[s] (A rows) and
t[s] (B rows), and the epilogue stores A / B + 1 BM x B sub-tiles, each from its own staging sub-tile where the
config's stages fit beside them (their stores in flight together), else one after the other through one per
consumer (hopper_parts.py `store_split`; always two consumers' staging). They let a tile count come near whole rounds of the
consumers where a power-of-two width cannot: 64 x 192 fits the 132 SMs where 128 x 128 does not (Llama-3-8B qkv at
M = 256: 128 tiles against 96); 4608 columns at M = 512 are 256 tiles of 64 x 144 (one round of 264 consumers)
where 64 x 192 makes 192 and 64 x 128 288 (cuBLAS runs 144 x 128 there, one wave of 128 CTAs). Dense kernel only.

Split-K (NUM_KSPLIT > 1; dense kernels only, this one and hopper_coop.py; `hopper_host.launch_dense`): the
work ids cover splits x tiles, split-major (`batched_tile_coords` with the split as the entry), and split s runs K steps
[s q, (s + 1) q), q = cdiv(cdiv(K, BK), splits) for every split (equal, so a consumer's ring position is still
local item x q; the last range may run past K into TMA's zero fill). Its fp32 partial tile goes to row
(s * cdiv(M, BM) + pid_m) * BM of a workspace of whole-tile slabs; the Triton tier's split-K reduce then sums
the slabs in order and applies bias / activation / cast (bitwise reproducible)::

   work id  0 ...... T-1 | T ...... 2T-1 | ...        workspace (fp32)   ┌ slab 0: cdiv(M, BM) * BM rows ┐
            split 0      | split 1       |                               ├ slab 1                        ┤ -> reduce -> y
            K steps [0, q)  [q, 2q)   ...                                 └ ...                           ┘

Tail split (TAIL; dense kernel, unsplit power-of-two tile: `tail_plan`, derived from the shape and the SM count):
where the tiles leave a partial last round after a full one, its R tiles run as S K splits each, so R S CTAs
share that round instead of R (`configs/model/tail.py tail_split`); work items whole tiles first, then the splits
(kernels/triton/_schedule.tail_item, hopper_parts `work_range`); a split, each CTA's last item at most, stores its
fp32 accumulator into workspace tile `part` (hopper_parts `store_partial`: plain stores, no staging), and the
Triton tier's `tail_reduce_kernel` sums each tail tile's splits in order, then bias / activation / cast::

   work id  0 ... T-R-1: whole tiles ──► epilogue ──► y
            T-R ... T-R+RS-1: split j % S of tail tile T-R + j // S ──► part[j] (fp32) ──► tail_reduce ──► y

Swap-AB (config key "swap_ab", dense kernel only; SWAP): at decode sizes a token tile of 16-64 rows wastes most of
a wgmma's m64, and cuBLAS runs its M = 1 GEMMs with the weight as the wgmma's M (nvjet ..._256x8_...). The config
still names y's BLOCK_SIZE_M (tokens) x BLOCK_SIZE_N (weight rows) tile; `derive` plans the kernel's tile as its
transpose, BM = BLOCK_SIZE_N weight rows (64 / 128) x BN = BLOCK_SIZE_M tokens, and `launch` passes w as the
kernel's x and x as its w (their boxes: BM x BK of w, BN x BK of x; under one token tile boxes of only x's rows,
hopper_host.token_boxes). The partitions
run unchanged; the epilogue permutes the accumulator (a layout change, no data moves), adds the bias along its
columns (the weight rows) and stores the BN x BM tile at y[tokens, weight rows] (TMA clips token rows past M)::

   kernel tile (BM w rows x BN tokens)         y (M tokens, N)
   acc = w[rows] @ x[tokens]^T  ──permute──►   c_smem (BN x BM) ──TMA──► y[pid_n BN .., pid_m BM ..]

A weight passed as W.t() ((K, N) storage, unit stride along N: GPT-2's Conv1D, `x @ W` code) is read where it lies
(X_KM): the kernel's x descriptor is over that storage, each ring slot of a holds its BK x BM box, and the consumer
hands wgmma the slot permuted, BM x BK with the weight rows contiguous (wgmma's MN-major A, 16-bit operands only)::

   w.t() (K, N) storage ──TMA [BK, BM] box──► a[s] (BK x BM) ──permute──► wgmma A (BM x BK, MN-major)

GROUP_SIZE_M then groups the kernel's rows, the weight tiles (1 in the shipped buckets: each weight tile's token
tiles run back to back, so the weight is read once and the small x from L2).

Measured on the H200 (docs/PERF.md): faster than the tables' unswapped tiles on most model layers
at M <= 64 (up to 1.7x where few weight tiles starved the SMs), 1-5% slower at M < 64 on the widest rows
(N >= 10240), whose tables keep their tiles there.

Gated (GATED, `launch_gated`; dense kernel only; a "backend": "gluon" gated config at num_warps 4, ops/dispatch.gated):
h = act(x @ w[:I].T) * (x @ w[I:].T), the gated GEMM of a SwiGLU FFN (w (2I, K): the gate rows, then the up rows;
ops/ffn.py gemm_a16w16_gated), on the split tile's partitions with A = B = BN: a tile is BM x BN of h (the launch's N is
I), each ring stage holds x's box and two w boxes of BN rows, the gate's at row col0 and the up's at row I + col0; the
consumer runs `split_mainloop` (two wgmma a K step) and its epilogue computes act(g) * u in fp32 (hopper_parts
`store_gated`), one TMA store of h::

   ring stage s:  a[s]: BM x BK | b[s]: w[col0 .. col0 + BN) (gate) | t[s]: w[I + col0 ..) (up)   full[s]: 3 boxes
   mma c:         acc_g += a @ b^T, acc_u += a @ t^T  (BM x BN each: 2 BM BN / 128 registers, 128 at 64 x 128)
   epilogue:      act(acc_g) * acc_u ──cast──► c0 / c1 (BM x BN) ──TMA──► h[row0, col0]

Where the last column of tiles shifts back (`tile_origin`) its gate box may reach into the up rows past I (and an
I under one tile's does): those columns of h lie past I and are clipped.

NUM_KSPLIT is an upper bound: `hopper_host.fit_split_k` keeps splits x tiles within one wave of the SMs (one
item a CTA) and runs no split where the tiles alone fill them, so a bucket tuned at one M does not go to two waves at a
larger M of the same bucket.

Register split (setmaxnreg): see `derive` and hopper_plan.py `register_split`. Epilogue math is the Triton tier's
(`bias_activation` in kernels/triton/_epilogue.py, a @triton.jit function that a
@gluon.jit kernel can call in Triton 3.6), and so is the tile order.

The load warp (`load_partition`), the ring counters, the tile order and the split tile's mainloop and stores are
hopper_parts.py's (shared with hopper_coop.py and the batched kernels); the plan arithmetic is hopper_plan.py's.
The partitions take named bundles (Gluon aggregates, hopper_bundles.py), built once in the kernel::

   mma_partition(CONSUMER, descs, ring, epi, handoff, sched)     load_partition(descs, ring, sched)
   descs: x, w, y | ring: a, b, t (split tile, else None), full, empty | epi: c (c0 / c1), bias, stride_bb
   handoff: turn, c_free, C_TILES | sched: M, N, K, B (splits / batch entries), GROUP_SIZE_M, BATCHED, SPLIT_K, SWAP

The partitions serve both kernels: `BATCHED` is a constexpr, so the dense kernel compiles
to the same SASS as before batching existed (compared byte for byte on sm_90, Triton 3.6).
In the batched consumer the tile's coordinates are computed after its mainloop, not before
(live across it, they made a bias + gelu epilogue spill 8 bytes in consumer 1).

Constraints:
  - sm_90 only (wgmma, TMA, setmaxnreg); bf16 or fp16 x and w, same dtype; y bf16, fp16 or fp32.
  - TMA rules: x, w, y 2-D, unit last stride, 16-byte aligned base and row stride
    (K % 8 == 0, N % 8 == 0 for a 16-bit y, N % 4 for fp32). M, N, K need not be
    multiples of the tile: where M (N) holds at least one tile, the last row (column) of tiles starts one tile
    before M (N), rounded up to 8 (hopper_parts `tile_origin`: boxes past a tensor's end load slowly); under one
    tile, and past K, TMA zero-fills the loads and clips the stores; but the tokens (x; swap-AB: the kernel's w) under
    one tile come in X_BOXES boxes of only their rows (hopper_host.token_boxes, kernels/_host.x_boxes: 8-64 rows a
    box, a power of two) into the first rows of each slot, the rest of the slot never written (those rows of the
    product lie past M and are never stored). x may hold more rows than y and w more than y's columns
    (ops/dispatch.py pad_m / pad_n, under one tile): they are computed and clipped.
  - BLOCK_SIZE_M in {64, 128} (one wgmma warpgroup covers 64-row slices);
    BLOCK_SIZE_N a power of two in [16, 256], or a split tile of configs.SPLIT_N (`configs.split_tail`; the dense
    kernel only); BLOCK_SIZE_K a power of two in [16, 128]; accumulator BM * BN / 128 <= 128
    fp32 registers per thread (64 x 192: 96; 128 x 192 does not fit).
  - num_warps == 4 (warps per consumer warpgroup; the kernel adds the second
    consumer and the load warp). NUM_KSPLIT >= 1, an upper bound (`hopper_host.fit_split_k`; the dense
    kernel only). num_stages is an upper bound:
    the ring gets num_stages stages beside two output tiles if they fit, else the
    most stages (>= 2, <= num_stages) beside one shared output tile; a dense launch runs at most the K steps one
    CTA runs (>= 2, `hopper_host.ring_stages`).
  - LATE_INIT (dense kernel): every CTA has at least one work item with at least one K step (the grid is at most
    the work items; K >= 1), so its load warp always arrives on `ready`.
  - K >= 1 (the op handles K == 0); M * N tiles < 2**31 (batched: B * tiles < 2**31); the dense kernel's GROUP_M,
    GROUP_S, LAST_M, LAST_S are kernels/triton/_schedule.group_magic of its num_pid_m, num_pid_n and GROUP_SIZE_M
    (or all None: plain divisions).
  - TAIL (dense kernel only; `tail_plan`): unsplit (NUM_KSPLIT 1), no split tile, no swap_ab; R S <= CTAs (each CTA
    at most one split, its last work item); the workspace R S BM x BN fp32, row-major. With a tail split the fp32
    summation order of the tail tiles depends on M, N, K and the SM count (bitwise reproducible on one grid).
  - swap_ab (dense kernel only): BLOCK_SIZE_N (the weight rows) 64 or 128, BLOCK_SIZE_M (tokens) a power of two
    in [16, 256] within the accumulator budget, NUM_KSPLIT 1, no split tile; the TMA rules as above (x is then
    the kernel's w operand: any M >= 1). X_KM (swap_ab only): w transposed in memory, its (K, N) storage under
    TMA's rules (N % 8 == 0, 16-byte aligned base), 16-bit.
  - gated (dense kernel only; `launch_gated`): BLOCK_SIZE_N (h's columns) a power of two, 2 * BM * BN / 128 <= 128
    accumulator registers a thread (64 x 128, 128 x 64, 64 x 64), NUM_KSPLIT 1, no swap_ab, no bias, no tail split,
    two staging tiles; w (2I, K) with h (M, I); an activation on the gate (not "none").
  - Batched (hopper_pingpong_batched.py): the same, with x, w, y 3-D under TMA's rules
    (batch stride a multiple of 16 bytes, entries not overlapping: no stride-0 batch).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_init, warpgroup_mma_wait)

from ... import configs
from ...configs.model.tail import tail_rule
from .. import _host
from ..triton._epilogue import ACTIVATIONS, bias_activation
from . import hopper_host as hh
from . import hopper_plan as hplan
from ._compat import tma_store
# is_coop: the plan builder's (hopper_plan.py); the op, the tuner and the tests read it here
from .hopper_plan import PingPongPlan, check_config, is_coop  # noqa: F401
from .hopper_bundles import Descs, Epilogue, Handoff, Ring, Schedule
from .hopper_parts import (load_partition, out_row, ring_init, ring_next, ring_prev, ring_ready, split_mainloop,
                           store_gated, store_partial, store_split, tail_items, tile_origin, work_range, work_space,
                           work_tile)

KERNEL_NAME = "hopper_pingpong_kernel"

# Checked by `gemmkit isa` / CI (gemmkit/isa/promises.py; cfg is the case's config, smem_bound the plan's bytes).
PROMISES = (
    {"promise": "three partitions, 4 + 4 + 1 warps, padded to 3 warpgroups", "check": "num_warps == 12"},
    {"promise": "register cap at entry = 64K / threads, rounded down to 8 (setmaxnreg moves registers within it)",
     "check": "vgpr == 65536 // (num_warps * 32) // 8 * 8"},
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "shared memory within the plan's bound (smem_bytes)", "check": "lds_bytes <= smem_bound"},
    {"promise": "wgmma (HGMMA) in both consumers", "check": "counts['HGMMA'] > 0 and counts['HMMA'] == 0"},
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the output tile", "check": "counts['UTMASTG'] > 0"},
)

# ----------------------------------------------------------------------------- the plan (hopper_plan.py builds it)

def derive(cfg: dict, target=None, in_bytes: int = 2, out_bytes: int = 2) -> PingPongPlan:
    """Everything the kernel and its launch need, from one config. ValueError names the key that cannot work.
    The ring fit, registers and swizzles are hopper_plan.py's (`budget`, `register_split`, `swizzle`); what is
    this kernel's:

    Derivation (H200 numbers: 227 KiB of shared memory per block, 64 K registers per SM):
      tile     BM x BN per consumer; one warpgroup issues wgmma m64nBNk16, BM / 64 of them per
               k16 slice; accumulator BM * BN fp32 over 128 threads = BM * BN / 128 registers
               (128 x 128: 128 regs).
      ring     stage_bytes = (BM + BN) * BK * in_bytes (128 x 128 x 64 bf16: 32 KiB);
               output tile = BM * BN * out_bytes (bf16: 32 KiB, fp32: 64 KiB). Two tiles (one per
               consumer) when num_stages stages fit beside them, else one shared tile and
               stages = min(num_stages, (smem - tile - slack) // stage_bytes), at least 2.
               128 x 128 x 64 bf16 out: num_stages <= 5 -> 2 tiles; 6 -> 1 tile, 6 stages.
               fp32 out: 3 stages beside 2 tiles, 4 beside 1. A split tile stages its BN / T BM x T
               sub-tiles per consumer (c_pieces) where num_stages fit beside them, else one (always two
               consumers' staging): 64 x 96 x 64 at 5 stages 3 (5 x 20 + 2 x 12 KiB), 64 x 192 at 6 one.
      warps    4 + 4 + 1 (load) padded to 12; regs 168 at entry, setmaxnreg 240 per consumer, 24 for
               the load warpgroup (`hopper_plan.register_split`).
      swizzle  a / b: BK * in_bytes rows; y: the staging tile's row (BM for the transposed tile).
    """
    gated = bool(cfg.get("gated"))
    cfg = {k: v for k, v in cfg.items() if k != "gated"}
    swap = bool(cfg.get("swap_ab"))
    if gated and (swap or cfg.get("NUM_KSPLIT", 1) != 1):
        raise ValueError(f"config: key {'swap_ab' if swap else 'NUM_KSPLIT'} with 'gated'; the gated tile (the module "
                         "docstring's \"Gated\") is unswapped and unsplit")
    if swap:  # the config names y's tile (tokens x weight rows); the kernel's is its transpose ("Swap-AB")
        tokens, rows = cfg.get("BLOCK_SIZE_M"), cfg.get("BLOCK_SIZE_N")
        if cfg.get("NUM_KSPLIT", 1) != 1:
            raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']} with 'swap_ab'; the transposed tile "
                             "has no split-K")
        if rows not in (64, 128):
            raise ValueError(f"config: key 'BLOCK_SIZE_N' = {rows} with 'swap_ab'; the weight rows are the wgmma's "
                             "M: 64 or 128")
        if not (hplan.pow2(tokens) and 16 <= tokens <= 256):
            raise ValueError(f"config: key 'BLOCK_SIZE_M' = {tokens} with 'swap_ab'; the tokens are the wgmma's N: "
                             "a power of two in [16, 256]")
        hplan.check_acc_regs(hplan.acc_regs(tokens, rows), tokens, rows, "gluon", note=" with 'swap_ab'")
        cfg = {**cfg, "BLOCK_SIZE_M": rows, "BLOCK_SIZE_N": tokens}  # the kernel's tile from here on
    bm, bn, bk = check_config(cfg, "gluon", "the gluon ping-pong kernel", "(wgmma rows)",
                              split_ok=not (swap or gated), split_k_ok=True, swap_ok=True)
    out_bytes = hh.split_k_out_bytes(cfg, out_bytes)
    hplan.check_block_k(bk)
    acc_regs = hplan.acc_regs(bm, bn) * (2 if gated else 1)  # the gated tile: the gate's and the up's accumulators
    hplan.check_acc_regs(acc_regs, bm, bn, "gluon", note=" (two accumulators: 'gated')" if gated else "")
    tail = hplan.split_tail(bn)
    tile_bytes = bm * bn * out_bytes
    if tail:  # (c_tiles, c_pieces): two consumers' BN / T sub-tiles of BM x T if num_stages fit beside them, else one
        pieces = bn // tail  # sub-tile each (each store then waits for the previous one to read it)
        staging = [((2, pieces), 2 * tile_bytes)] * hplan.SPLIT_PIECES + [((2, 1), 2 * bm * tail * out_bytes)]
    elif gated:  # two staging tiles, one per consumer (hopper_parts.store_gated): fewer stages before one shared
        staging = [((2, 1), 2 * tile_bytes)]
    else:  # two staging tiles (one per consumer) if num_stages fit beside them, else one
        staging = [((2, 1), 2 * tile_bytes), ((1, 1), tile_bytes)]
    w_rows = 2 * bn if gated else bn  # w rows a K step: the gated tile's gate and up boxes
    b = hplan.budget(target, (bm, bn, bk), stage_bytes=(bm + w_rows) * bk * in_bytes, num_stages=cfg["num_stages"],
                     staging=staging, out_bytes=out_bytes, staging_name="output tile")
    c_tiles, c_pieces = b.staging
    return PingPongPlan(BM=bm, BN=bn, BK=bk, GROUP_SIZE_M=cfg["GROUP_SIZE_M"], **b.fields(), c_tiles=c_tiles,
                        c_pieces=c_pieces, acc_regs=acc_regs, swizzle_a=hplan.swizzle(bk * in_bytes),
                        swizzle_b=hplan.swizzle(bk * in_bytes),
                        swizzle_c=hplan.swizzle((bm if swap else tail or bn) * out_bytes), BN_TAIL=tail,
                        w_box=tail or bn, split_k=cfg.get("NUM_KSPLIT", 1), swap=swap, gated=gated)


def constexprs(plan: PingPongPlan, *, has_bias: bool, activation: str) -> dict:
    """The kernel's constexpr arguments (one place for the launch and the static compile)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    return dict(STAGES=plan.stages, C_TILES=plan.c_tiles, GROUP_SIZE_M=plan.GROUP_SIZE_M, HAS_BIAS=has_bias,
                ACTIVATION=activation, MMA_REGS=plan.mma_regs, LOAD_REGS=plan.load_regs)


def dense_constexprs(plan, *, has_bias: bool, activation: str) -> dict:
    """The dense kernels' constexprs beyond a kernel's `constexprs` (this one's and hopper_coop's): the tile
    width BN (the w box is B rows for a split tile BN = A + B) and SPLIT_K (work ids over splits x tiles, partial
    tiles stored to the fp32 workspace: `hopper_host.launch_dense`). The bias and activation of a split-K call are the
    reduce's, so its GEMM launch has neither. BM, the tile's rows, and X_BOXES, the tokens' TMA boxes a K step
    (`hopper_host.launch_tma` sets it: more than one box, or one of fewer rows, only under one row of tiles).
    C_PIECES: a split tile's staging sub-tiles per consumer (the plan's c_pieces: hopper_parts.store_split).
    LATE_INIT: the load warp sets the ring up (hopper_parts.ring_init; hopper_host.LATE_INIT)."""
    split = plan.split_k > 1
    return {"BN": plan.BN, "SPLIT_K": split, "HAS_BIAS": has_bias and not split,
            "ACTIVATION": "none" if split else activation, "SHIFT": _host.shift_last_tiles(plan.acc_regs),
            "BM": plan.BM, "X_BOXES": 1, "C_PIECES": plan.c_pieces, "LATE_INIT": hh.LATE_INIT}


def kernel_constexprs(plan: PingPongPlan, *, has_bias: bool, activation: str, tail: bool = False,
                      w_kn: bool = False) -> dict:
    """hopper_pingpong_kernel's: `constexprs`, `dense_constexprs`, SWAP (the transposed tile), TAIL (a tail
    split: `tail_plan`), GATED (the gated tile: `launch_gated`) and X_KM (`w_kn`: the transposed tile on a w
    transposed in memory, the kernel's x read from its (K, N) storage: "Swap-AB")."""
    if w_kn and not plan.swap:
        raise ValueError("w transposed in memory: only the swap-AB tile reads it (X_KM)")
    return {**constexprs(plan, has_bias=has_bias, activation=activation),
            **dense_constexprs(plan, has_bias=has_bias, activation=activation), "SWAP": plan.swap, "TAIL": tail,
            "GATED": plan.gated, "X_KM": bool(w_kn)}


# The tail split (`tail_plan`): where a launch's tiles leave a partial last round, its R tiles run as S K splits each;
# the count and the rule (K >= TAIL_MIN_K, a saving of TAIL_MIN_SAVING, the TAIL_SPLIT switch) are model/tail.py's
# `tail_rule`, which the config model counts in a tile's waves too.


def tail_plan(plan, M: int, N: int, K: int, num_cus: int, tail=None) -> tuple[int, int]:
    """(tail tiles R, splits S) of a launch of this kernel or hopper_coop.py's (`plan` a PingPongPlan or CoopPlan;
    configs/model/tail.py `tail_rule`, min(tiles, SMs) CTAs); (0, 1): none. Only the unsplit, power-of-two,
    unswapped tile (split-K has its own splits; a split tile's two accumulators and sub-tiled stores and the
    transposed tile have no partial store). `tail` None: the rule (TAIL_SPLIT, K >= TAIL_MIN_K, the saving at least
    TAIL_MIN_SAVING: all configs/model/tail.py's), False: never, True: wherever tail_split can."""
    swap = getattr(plan, "swap", False)  # (a CoopPlan has no transposed tile)
    if plan.split_k > 1 or swap or plan.BN_TAIL or getattr(plan, "gated", False):
        return 0, 1
    return tail_rule(-(-M // plan.BM) * -(-N // plan.BN), num_cus, K, plan.BK, tail)


def y_box(plan: PingPongPlan) -> tuple:
    """The y TMA box = a consumer's staging tile: the whole BM x BN tile, BM x T for a split tile, or (swap) the
    tile transposed, BN tokens x BM weight rows."""
    if plan.swap:
        return (plan.BN, plan.BM)
    return (plan.BM, plan.BN_TAIL or plan.BN)


# ----------------------------------------------------------------------------- device code (+ hopper_parts.py)

@gluon.jit
def mma_partition(CONSUMER: gl.constexpr, descs, ring, epi, handoff, sched):
    """1 warpgroup: local tiles CONSUMER, CONSUMER + 2, ...: mainloop on its turn, then the epilogue (bundles:
    hopper_bundles.py; epi holds this consumer's staging tile, handoff the turn / c_free mbarriers).
    BATCHED: bias row b (epi.bias + b * epi.stride_bb; stride 0 shares one row) and a 3-D TMA store
    [b, m, n] through a 3-D view of the 2-D output tile.
    ring.t (a split tile, dense only: `split_mainloop`, `store_split`): epi.c is this consumer's BM x T staging
    sub-tile, or its epi.PIECES of them (C_TILES 2).
    SPLIT_K (dense only; sched.B = the number of splits): work ids over splits x tiles, each item one K range
    (hopper_parts `split_steps`), its fp32 partial tile stored in its split's slab of the workspace (`out_row`).
    SWAP (dense only; "Swap-AB"): the tile is y's transposed (BM weight rows x BN tokens: descs.x holds w,
    descs.w x); the epilogue permutes the accumulator (a layout change, no data moves), adds the bias along its
    columns (the weight rows, M of this launch) and stores it through epi.c (BN x BM) at y[tokens, rows]."""
    y_desc = descs.y
    a_ring = ring.a
    b_ring = ring.b
    full = ring.full
    empty = ring.empty
    c_smem = epi.c
    bias_ptr = epi.bias
    turn = handoff.turn
    c_free = handoff.c_free
    M = sched.M
    N = sched.N
    STAGES: gl.constexpr = ring.STAGES
    BM: gl.constexpr = ring.BM
    BN: gl.constexpr = ring.BN
    C_TILES: gl.constexpr = handoff.C_TILES
    GROUP_SIZE_M: gl.constexpr = sched.GROUP_SIZE_M
    HAS_BIAS: gl.constexpr = epi.HAS_BIAS
    ACTIVATION: gl.constexpr = epi.ACTIVATION
    BATCHED: gl.constexpr = sched.BATCHED
    SPLIT_K: gl.constexpr = sched.SPLIT_K
    SWAP: gl.constexpr = sched.SWAP
    if ring.t is None:
        # wgmma accumulator: 4 warps stacked along M, instruction m16 x BN x k16 per warp.
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    # (a split tile: accumulators of A and B columns, `split_mainloop`; epi.c one or epi.PIECES BM x B sub-tiles)
    num_pid_m, num_pid_n, num_work, k_steps = work_space(M, N, sched.K, BM, BN, ring.BK, sched.B, BATCHED,
                                                         SPLIT_K)
    nprog = gl.num_programs(0)
    n = 0  # tiles this consumer has done
    ring_ready(ring)  # (the load warp sets the ring up: hopper_parts.ring_init)
    for work_id in range(gl.program_id(0) + CONSUMER * nprog, tail_items(num_work, sched), 2 * nprog):
        if BATCHED:
            nk = k_steps
        else:  # (TAIL: a whole tile, or one K split of a tail tile, `part` its workspace tile; -1 elsewhere)
            b, pid_m, pid_n, k0, nk, part = work_range(work_id, num_work, num_pid_m, num_pid_n, k_steps, sched)
        # Explicit phase counter: local tile j = 2n + CONSUMER starts at ring step j * k_steps (a tail split's item,
        # shorter, is a CTA's last: `tail_item`).
        step = (2 * n + CONSUMER) * k_steps
        idx = step % STAGES
        phase = (step // STAGES) & 1
        # My turn on the tensor cores (consumer 0's first wait passes on the fresh barrier).
        mbarrier.wait(turn.index(CONSUMER), (n & 1) ^ (1 - CONSUMER))
        if ring.t is not None:
            gl.static_assert(not sched.TAIL, "a split tile has no tail split (hopper_host.launch_dense)")
            acc, acc_t, idx, phase = split_mainloop(ring, idx, phase, k_steps, 0, BM)
            mbarrier.arrive(turn.index(1 - CONSUMER))  # every wgmma issued: hand over the tensor cores
            acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
            mbarrier.arrive(empty.index(ring_prev(idx, STAGES)))  # the tile's last slot
            if ring.GATED:  # acc: the gate's columns, acc_t: the up's; h = act(g) * u
                store_gated(y_desc, epi, acc, acc_t, tile_origin(pid_m, M, BM, sched.SHIFT),
                            tile_origin(pid_n, N, BN, sched.SHIFT))
            else:
                store_split(y_desc, epi, acc, acc_t,
                            out_row(b, tile_origin(pid_m, M, BM, sched.SHIFT), num_pid_m, BM, SPLIT_K),
                            tile_origin(pid_n, N, BN, sched.SHIFT), N)
        else:
            acc = warpgroup_mma_init(gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout))
            for kk in range(nk):
                mbarrier.wait(full.index(idx), phase)
                if ring.X_KM:  # the BK x BM slot as the BM x BK operand: wgmma's MN-major A (16-bit)
                    a_op = a_ring.index(idx).permute((1, 0))
                else:
                    a_op = a_ring.index(idx)
                acc = warpgroup_mma(a_op, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
                # One wgmma group in flight: the previous step's has finished reading its slot.
                warpgroup_mma_wait(1, deps=(acc,))
                mbarrier.arrive(empty.index(ring_prev(idx, STAGES)), pred=kk > 0)
                idx, phase = ring_next(idx, phase, STAGES)
            # Every wgmma of this tile is issued: hand the tensor cores to the other consumer.
            mbarrier.arrive(turn.index(1 - CONSUMER))
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index(ring_prev(idx, STAGES)))  # the tile's last slot
            if sched.TAIL:
                is_part = part >= 0
            else:
                is_part: gl.constexpr = False  # the epilogue alone is compiled
            if is_part:  # (TAIL) a tail tile's K split: its fp32 partial into workspace tile `part`, no staging
                store_partial(epi.part, acc, part, 0, BM)  # (the CTA's last item: no later epilogue waits on c_free)
            else:
                # Epilogue (runs under the other consumer's mainloop).
                if BATCHED:  # the tile's coordinates, not live across the mainloop (a batched gelu epilogue spilled)
                    b, pid_m, pid_n = work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, BATCHED)
                row0 = tile_origin(pid_m, M, BM, sched.SHIFT)  # a last tile shifted back to end at M / N
                col0 = tile_origin(pid_n, N, BN, sched.SHIFT)
                if SWAP:  # y's tile is the accumulator transposed: BN tokens x BM weight rows, the bias per weight row
                    out_t = acc.permute((1, 0))
                    offs_w = row0 + gl.arange(0, BM, layout=gl.SliceLayout(0, out_t.type.layout))
                    out = bias_activation(out_t, bias_ptr, offs_w, M, HAS_BIAS, ACTIVATION)
                else:
                    offs_n = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
                    if BATCHED:
                        out = bias_activation(acc, bias_ptr + b.to(gl.int64) * epi.stride_bb, offs_n, N, HAS_BIAS,
                                              ACTIVATION)
                    else:
                        out = bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)
                if C_TILES == 2:
                    tma.store_wait(0)  # my previous tile's TMA store has read my c_smem
                else:
                    mbarrier.wait(c_free, 1 - CONSUMER)  # the other consumer's last store has read the shared c
                c_smem.store(out.to(y_desc.dtype))
                fence_async_shared()  # generic-proxy writes -> async-proxy (TMA) read
                if BATCHED:
                    tma_store(y_desc, [b, row0, col0], c_smem.reshape([1, BM, BN]))
                elif SWAP:
                    tma_store(y_desc, [col0, row0], c_smem)
                else:
                    tma_store(y_desc, [out_row(b, row0, num_pid_m, BM, SPLIT_K), col0], c_smem)
                if C_TILES == 1:
                    tma.store_wait(0)
                    mbarrier.arrive(c_free)
        n += 1
    tma.store_wait(0)


# TMA handles every M, N, K: one compile per config (and per TAIL)
@gluon.jit(do_not_specialize=["M", "N", "K", "SPLITS", "TAIL_TILES", "GROUP_M", "GROUP_S", "LAST_M", "LAST_S"])
def hopper_pingpong_kernel(x_desc, w_desc, y_desc, bias_ptr, M, N, K, SPLITS, part_ptr, TAIL_TILES,
                           GROUP_M, GROUP_S, LAST_M, LAST_S,  # the tile order's division magic (hopper_host.launch_tma)
                           STAGES: gl.constexpr, C_TILES: gl.constexpr, GROUP_SIZE_M: gl.constexpr,
                           HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, MMA_REGS: gl.constexpr,
                           LOAD_REGS: gl.constexpr, BN: gl.constexpr, SPLIT_K: gl.constexpr, SHIFT: gl.constexpr,
                           SWAP: gl.constexpr, TAIL: gl.constexpr, BM: gl.constexpr, X_BOXES: gl.constexpr,
                           C_PIECES: gl.constexpr, LATE_INIT: gl.constexpr, GATED: gl.constexpr,
                           X_KM: gl.constexpr):
    if X_KM:  # (SWAP) the kernel's x, a weight passed as W.t(), read as its (K, M) storage lies: BK x BM boxes
        BK: gl.constexpr = x_desc.block_type.shape[0]
        a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BK, BM], x_desc.layout)
    else:
        BK: gl.constexpr = x_desc.block_type.shape[1]
        a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BM, BK], x_desc.layout)  # (x's box may be fewer rows)
    W_ROWS: gl.constexpr = w_desc.block_type.shape[0]
    if GATED:  # the gated tile: the gate rows of its BN columns in b_ring, the up rows in t_ring (w box BN rows)
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
        t_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
    elif W_ROWS != BN and not SWAP:  # a split tile BN = A + B (the w box is B rows): w rows [0, A) in b_ring, [A, BN) in t_ring;
        # c0 / c1 BM x B, or C_PIECES of them (hopper_parts.store_split)
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN - W_ROWS, BK], w_desc.layout)
        t_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, W_ROWS, BK], w_desc.layout)
    else:
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
        t_ring = None
    if C_PIECES > 1:
        C_SHAPE: gl.constexpr = [C_PIECES, y_desc.block_type.shape[0], y_desc.block_type.shape[1]]
    else:
        C_SHAPE: gl.constexpr = y_desc.block_type.shape
    c0 = gl.allocate_shared_memory(y_desc.dtype, C_SHAPE, y_desc.layout)
    if C_TILES == 2:
        c1 = gl.allocate_shared_memory(y_desc.dtype, C_SHAPE, y_desc.layout)
    else:
        c1 = c0
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    c_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    if LATE_INIT:  # the load warp sets the ring up (hopper_parts.ring_init), then arrives here
        ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(ready, count=1)
    else:
        ready = None
    ring = Ring(a_ring, b_ring, t_ring, full, empty, ready, GATED=GATED, X_KM=X_KM)  # t_ring None: a constexpr field
    if not LATE_INIT:
        ring_init(ring, 0, STAGES)  # full: the loader's expect-tx arrive (+ the TMA bytes); empty: one consumer's
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)  # the other consumer's arrive
    mbarrier.init(c_free, count=1)  # (C_TILES == 1) the last store's consumer, after store_wait
    descs = Descs(x_desc, w_desc, y_desc)
    handoff = Handoff(turn, c_free, C_TILES)
    # TAIL (a tail split, hopper_host.launch_dense): SPLITS K splits of each of the last TAIL_TILES tiles, their fp32
    # partials into part_ptr; SPLIT_K: SPLITS K splits of every tile; neither: SPLITS, part_ptr, TAIL_TILES unused
    sched = Schedule(M, N, K, SPLITS, GROUP_SIZE_M, SPLIT_K=SPLIT_K, SWAP=SWAP, SHIFT=SHIFT, R=TAIL_TILES, TAIL=TAIL,
                     X_BOXES=X_BOXES, group_m=GROUP_M, group_s=GROUP_S, last_m=LAST_M, last_s=LAST_S)
    part = part_ptr if TAIL else None
    epi0 = Epilogue(c0, bias_ptr, 0, HAS_BIAS, ACTIVATION, part, C_PIECES)
    epi1 = Epilogue(c1, bias_ptr, 0, HAS_BIAS, ACTIVATION, part, C_PIECES)
    gl.warp_specialize([
        (mma_partition, (0, descs, ring, epi0, handoff, sched)),
        (mma_partition, (1, descs, ring, epi1, handoff, sched)),
        (load_partition, (descs, ring, sched)),
    ], [4, 1], [MMA_REGS, LOAD_REGS])


# ----------------------------------------------------------------------------- host side (shared: hopper_host.py)

unsupported = hh.dense_unsupported  # why this kernel cannot take a call (the op falls back to the Triton tier)


def launch(x2, w, bias, y, activation, cfg, target, compile_only=False, tail=None):
    """y = act(x2 @ w.T + bias) with the ping-pong kernel. x2 (M, K), w (N, K), bias (N,) or None, y (M, N).

    `cfg` keys: BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps (4), num_stages (upper bound); `backend`,
    `persistent`, `tma` are accepted and ignored (always persistent, always TMA); NUM_KSPLIT > 1 splits K
    into at most that many ranges (`hopper_host.fit_split_k`, `launch_dense`); swap_ab computes y's tile
    transposed (the module docstring's "Swap-AB": w and x swap roles, `hopper_host.launch_tma` directly); it also
    takes a w transposed in memory (a (K, N) weight passed as W.t(), kernels/triton/dense.mn_major: X_KM).
    `tail`: the tail split (`tail_plan`: None the rule, False never, True wherever it can).
    `target`: a gemmkit.arch.Target (its num_cus sizes the persistent grid). Raises ValueError when
    `unsupported` says no or the config cannot be planned.
    """
    w_kn = bool(cfg.get("swap_ab")) and w.stride(-1) != 1  # (a W.t() weight: the transposed tile's X_KM)
    hh.check_operands(x2, w, bias, y, target, "gluon ping-pong", w_kn=bool(cfg.get("swap_ab")))
    (M, K), N = x2.shape, y.shape[1]
    plan = derive(hh.fit_split_k(cfg, M, N, K, target), target, x2.element_size(), y.element_size())
    n_tail, splits = tail_plan(plan, M, N, K, target.num_cus, tail)
    ce = kernel_constexprs(plan, has_bias=bias is not None, activation=activation, tail=n_tail > 0, w_kn=w_kn)
    if plan.swap:  # the kernel's "x" is w (BM-row boxes), its "w" is x (BN-row boxes); y's box is BN x BM
        return hh.launch_tma(hopper_pingpong_kernel, plan, y_box(plan), w, x2, bias, y, ce, target, compile_only,
                             w_box=plan.w_box, tail=(y, 0, 1))
    return hh.launch_dense(hopper_pingpong_kernel, plan, y_box(plan), x2, w, bias, y, activation, ce, target,
                           compile_only, tail=(n_tail, splits))


def launch_gated(x2, w, y, activation, cfg, target, compile_only=False):
    """h = act(x2 @ w[:I].T) * (x2 @ w[I:].T) with the ping-pong's gated tile ("Gated" above): x2 (M, K), w (2I, K)
    (the gate rows, then the up rows), y (M, I); activation one of "silu", "gelu", "gelu_tanh", "relu".

    `cfg`: the ping-pong's keys (BLOCK_SIZE_N counts h's columns; unsplit, unswapped). Raises ValueError where the
    kernel cannot take the call (`unsupported`, the shapes) or the config cannot be planned. The ops run it for a
    user's "backend": "gluon" gated config at num_warps 4 (ops/dispatch.gated); the config model serves none (its
    tiles lost to the Triton tier's: ab/gated_gluon.json)."""
    hh.check_gated_operands(x2, w, y, activation, target, "gluon gated ping-pong")
    plan = derive({**cfg, "gated": True}, target, x2.element_size(), y.element_size())
    ce = kernel_constexprs(plan, has_bias=False, activation=activation)
    return hh.launch_dense(hopper_pingpong_kernel, plan, y_box(plan), x2, w, None, y, activation, ce, target,
                           compile_only, tail=(0, 1))


# ----------------------------------------------------------------------------- static compile (gemmkit isa)

# Configs compiled by `gemmkit isa` besides any shipped table bucket with "backend": "gluon".
PRESETS = (
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 5},
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 4},
)
# The split tiles, split-K and the transposed tile (dense kernel only: hopper_pingpong_batched.py compiles PRESETS above).
SPLIT_PRESETS = (
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 6},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 5, "NUM_KSPLIT": 3},  # fp32 partial tiles, one shared staging tile
    {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
     "num_stages": 8, "swap_ab": True},  # decode: 64 weight rows x 16 tokens a tile, transposed store
)


def static_spec(cfg: dict, target, **kw):
    """(kernel, signature, constexprs, divisible, options, plan) to compile hopper_pingpong_kernel for `target` on a
    CPU: hopper_host.dense_static_spec with this kernel's plan (keywords dtype, out_dtype, has_bias, activation,
    tail, tokens, gated)."""
    return hh.dense_static_spec(hopper_pingpong_kernel, derive, kernel_constexprs, y_box, cfg, target, **kw)


def isa_cases(archs, op: str = "hopper_pingpong"):
    """Static cases for sm_90: every shipped bucket with backend "gluon", plus PRESETS and SPLIT_PRESETS
    (bf16 and fp32 output)."""
    if "sm_90" not in archs:
        return
    # gemm_a16w16's tables (the batched and fp8 kernels compile their own tables' gluon buckets)
    cases = [(t, b, c, "bf16") for t, b, c in hh.shipped_gluon_configs("sm_90")
             if t.startswith("A16W16") and not is_coop(c)]
    cases += [("A16W16.json", name, c, "bf16") for name, c in configs.model_configs("a16w16", "sm_90")
              if c.get("backend") == "gluon" and not is_coop(c)]  # the
    # config model's own Gluon tiles (configs.model_configs: the ping-pong 128 x 128 at 64 < M <= 128, 64 x 192 split-K,
    # the few-tile, one-wave and split-width tiles; its Triton-tier tiles are kernels/triton/dense.py's cases)
    cases += [("-", f"preset{i}", c, o) for i, c in enumerate(PRESETS + SPLIT_PRESETS) for o in ("bf16", "fp32")]
    yield from hh.unique_cases(cases, KERNEL_NAME, op)
    # the tail split's variant (TAIL: its partials' stores beside the epilogue) of the 128 x 128 tiles, two staging
    # tiles (PRESETS' 5 stages) and one (the config model's `wide_config`, 6 stages)
    tails = [("-", "preset0", PRESETS[0], o) for o in ("bf16", "fp32")]
    tails += [("A16W16.json", "wide_config", configs.model.OP_RULES["a16w16"]["wide_config"], "bf16")]
    yield from hh.variant_cases(tails, "tail", KERNEL_NAME, op)
    # the tokens in boxes of only their rows under one tile (hopper_host.token_boxes): M = 100 on 128 x 128 (seven
    # boxes of 16 rows of x), swap-AB M = 40 on 64 tokens (five of 8 rows of the kernel's w) and M = 5 on 16 (one of 8)
    yield from hh.token_cases([("-", "preset0", PRESETS[0], "bf16", 100), ("-", "swap64", SWAP_PRESET, "bf16", 40),
                               ("-", "preset4", SPLIT_PRESETS[2], "bf16", 5)], KERNEL_NAME, op)
    # the swap-AB tile on a w transposed in memory (X_KM: BK x BM boxes of its (K, N) storage, wgmma's MN-major A)
    yield from hh.variant_cases([("-", "preset4", SPLIT_PRESETS[2], "bf16"), ("-", "swap64", SWAP_PRESET, "bf16")],
                                "w_kn", KERNEL_NAME, op)
    # the gated tile (`launch_gated`: two accumulators of BM x BN, the gate and up boxes a step), bf16 and fp32 h
    gated = [("-", f"gated{i}", c, o) for i, c in enumerate(GATED_PRESETS) for o in ("bf16", "fp32")]
    yield from hh.variant_cases(gated, "gated", KERNEL_NAME, op)


# The swap-AB tile on 64 tokens (configs/model/decode.py `swap_wide`'s kind of tile)
SWAP_PRESET = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4,
               "num_stages": 6, "swap_ab": True}


# The gated tile's configs compiled by `gemmkit isa` (the Triton tier's gated tables' shapes: 64 x 128 and 128 x 64 of
# h's columns, 128 accumulator registers a thread; 64 x 64 at a deep ring)
GATED_PRESETS = (
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4},
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 6},
)


def isa_spec(case):
    return hh.dense_isa_spec(case, static_spec, PROMISES)
