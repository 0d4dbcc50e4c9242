"""Cooperative GEMM for Hopper (sm_90) in Gluon: y = act(x @ w.T + bias), bf16 / fp16 in, bf16 / fp16 / fp32 out.

The ping-pong kernel's partitions (hopper_pingpong.py: one TMA load warp, two consumer
warpgroups, an S-stage mbarrier ring), arranged the other way CUTLASS arranges them on Hopper:
the two consumers share every output tile instead of taking turns on whole tiles. One BM x BN
tile per work item; consumer c computes rows c * BM/2 ... (c + 1) * BM/2 - 1 of it, all BN
columns. Both consumers read every ring stage (the x box's half each, the whole w box), so a
stage is released when both have read it (empty[s] counts 2).

Why (issues 7 and 3, H200): for the large compute-bound shapes both ping-pong tiles (128 x 128
or 64 x 256 per consumer) move (BM + BN) / (BM * BN) = 0.0156-0.0195 bytes of L2 -> smem per
FLOP; a 128 x 256 tile shared by two consumers moves 0.0117 (25-40 % less), which is what
cuBLAS's kernel there (a cooperative 128 x 256 tile) does, at the same tensor-pipe activity
and a higher clock under the power limit. The price: the tensor cores idle while the two
consumers run their epilogues (the load warp keeps filling the ring with the next tile).

Partitions per CTA (`gl.warp_specialize`; persistent: one CTA per SM):

  load   (1 warp)    TMA x[BM, BK] and w[BN, BK] boxes into the ring: hopper_parts.load_partition, as is
  mma 0  (4 warps)   consumer warpgroup 0: rows 0 .. BM/2 - 1 of every tile of this CTA
  mma 1  (4 warps)   consumer warpgroup 1: rows BM/2 .. BM - 1 of every tile of this CTA

Tile layout (one CTA's work items t0, t1, ... = tile ids pid, pid + grid, ... in the grouped
order of `tile_coords`, kernels/triton/_schedule.py, without its divisions: `grouped_tile_magic` and the host's
magic, as the ping-pong)::

                  K ─────────────────►                     N ────────────────────►
             ┌──────────────────────────┐              ┌──────────────────────────┐
   x (M, K)  │ BM x BK box, TMA ──┐     │      y (M,N) │ mma 0: BM/2 x BN          │  ┐
             └────────────────────┼─────┘              │  (sub-tiles of EPI_N cols │  │ t0
             ┌────────────────────┼─────┐              ├───────────────────────────┤  │ BM
   w (N, K)  │ BN x BK box, TMA ─┐│     │              │ mma 1: BM/2 x BN          │  ┘
             └───────────────────┼┼─────┘              └──────────────────────────┘
                                 ▼▼                                BN
   ring stage s:  a[s]: BM x BK  = [ rows 0..BM/2-1 -> mma 0 | rows BM/2..BM-1 -> mma 1 ]  (smem slices)
                  b[s]: BN x BK  -> both consumers (wgmma m64 x BN x k16, B from smem)
   c0, c1: BM/2 x EPI_N output staging tile of each consumer (EPI_N = BN / EPI_SPLIT: a sub-tiled
           store when a whole BM/2 x BN tile per consumer would cost a ring stage, see `derive`)

Phase timeline (one CTA, k = K steps per tile; "mma t" = k wgmma steps on tile t, "epi t" = drain,
bias / activation / cast, EPI_SPLIT x (smem store, TMA store))::

   load  │ k steps of t0 │ k steps of t1 (S ahead) ... │ k steps of t2 ...
   mma 0 │ mma t0 (rows 0..BM/2-1)  │epi t0│ mma t1           │epi t1│ ...
   mma 1 │ mma t0 (rows BM/2..BM-1) │epi t0│ mma t1           │epi t1│ ...
         both consumers wait full[s] of every step and both arrive on empty[s]; the loader refills
         slot s only after both have released it, and it runs ahead into the next tile during the
         epilogue (up to S stages), so the next mainloop starts on a full ring.

Barriers and their phase counters (mbarriers; "step" g = j * k + kk, the CTA-local K-step index over
local tile j, the same in all three partitions; s = g % S):

   full[s]   count 1   stage s holds step g    load: expect-tx + 2 TMA;  mma 0 and 1: wait parity (g // S) & 1
   empty[s]  count 2   stage s may be refilled mma 0 and 1: arrive once read;  load: wait parity ((g // S) & 1) ^ 1
   A fresh mbarrier counts as having completed the phase before phase 0: the loader's first waits pass.

Why the parity waits are exact without the ping-pong's turn barrier: the loader writes step g only
after both consumers released step g - S, so neither consumer can be more than S steps ahead of the
other, and full[s] is never two phases ahead of a consumer waiting on it; empty[s] completes a phase
only when both arrivals of that step are in (a consumer arrives for step g + S only after full[s]
showed step g + S, which needed both arrivals of step g).

Split tiles (BLOCK_SIZE_N = A + B of configs.SPLIT_N: 48, 80, 96, 144, 160, 192, A = 2, 4 or 8 B; drawn below for
192 / 96, A = 2T, B = T, T = 64 or 32): register and shared-memory tensors are powers of two, so a split tile is two
of them. Each consumer keeps two accumulators, BM/2 x A and BM/2 x B, and issues two wgmma per K step (m64nAk16 and
m64nBk16, on the same x slice); the w box is B rows and the loader puts A / B + 1 of them per stage, rows [0, A)
into b[s] and [A, A + B) into t[s]::

   ring stage s:  a[s]: BM x BK | b[s]: 2T x BK (two w boxes) | t[s]: T x BK (one w box)   full[s] expects all 4
   mma c:         acc  += a[s][rows of c] @ b[s]^T     (BM/2 x 2T)    ┐ two wgmma groups in flight per step:
                  acc_t += a[s][rows of c] @ t[s]^T    (BM/2 x T)     ┘ wait(2) retires the previous step's
   epilogue:      acc -> 2 sub-tiles of T columns, acc_t -> 1: 3 TMA stores of BM/2 x T through c0 / c1

Why: cuBLAS picks 192-wide tiles where a power-of-two width leaves SMs idle (docs/PERF.md):
Llama-3-8B qkv at M = 512 (N = 6144) is 128 tiles of 128 x 192 for 132 SMs, against 192 of 128 x 128
(1.45 waves) or 96 of 128 x 256; DeepSeek's N = 576 is 3 x 192. The Triton tier cannot build these tiles:
a call that falls back from Gluon runs the power-of-two part, 2T (kernels/triton/dense.py `triton_tile`).

Swap-AB (config key "swap_ab", dense kernel only; SWAP): a split tile whose columns are tokens. At 128 < M <= 192
the token rows fit no multiple of 64 (138 rows: two 128-row tiles, the second 10 rows full), and cuBLAS puts the
tokens on the wgmma's N in a width that covers M (nvjet ..._256x136_...). The config names y's tile, BLOCK_SIZE_M
tokens (a split width A + B of SPLIT_N: 144 = 128 + 16) x BLOCK_SIZE_N = 128 weight rows (or 256, below); `derive`
plans its transpose, BM = those weight rows (half a consumer) x BN tokens, and `launch` passes w as the kernel's x and
x as its w (the B-row token boxes as the split tile's w boxes; where M is under one tile, TMA zero-fills the boxes' rows
past M).
Mainloop unchanged; each consumer's epilogue (hopper_parts.store_split with SWAP) takes the accumulators' B-token pieces
(register splits), transposes each (a layout change), adds the bias per weight row (its columns now) and stores it
at y[tokens, weight rows] through a B x 64 staging sub-tile (B x 128 on 256 weight rows)::

   kernel tile (R = 128 or 256 w rows x A + B tokens)                     y (M tokens, N)
   mma c: acc (R/2 x A), acc_t (R/2 x B) ──pieces──► R/2 x B ──permute──► c0 / c1 (B x R/2) ──TMA──► y[col + i B, row]

Measured on the H200 (docs/PERF.md, `coop_swap`): at 128 < M <= 192 on wide layers +1-48% over the tiles before
(120 held-out shapes, 0.74 -> 0.94x cuBLAS); where its weight tiles are few it loses (no split-K), hence the rule.
BLOCK_SIZE_N = 256 weight rows (128 a consumer, two m64 slices each, as the unswapped 256-row tile) takes the
weights' box once for 256 rows; its accumulators, 128 x tokens a consumer, allow up to SWAP_TALL_ACC_REGS (160
tokens). The config model serves it at 256 < M <= 640 over a long K (`tall_swap`: over the 64 x 192 and the narrow
swaps 0.66-0.68 -> 0.84-0.85x cuBLAS on 62 held-out rows, over the 128 x 128 0.82 -> 0.87x on 26, H100); over the
shapes of its class as a whole it lost (docs/PERF.md).

Gated (GATED, `launch_gated`; dense only; served where configs/model/gated.py's `gated_one_wave` names its 128 x 128
tile): hopper_pingpong.py's gated tile ("Gated" there: the gate's and the up's w boxes of BN rows a stage, from rows
col0 and I + col0) with both consumers on one BM x BN tile of h, each on its BM/2 rows of the x box: `split_mainloop`
into a gate and an up accumulator of BM/2 x BN, act(g) * u in its epilogue (hopper_parts `store_gated`, one staging tile
a consumer). The x box is shared, so a stage moves (BM + 2 BN) BK for 2 BM BN BK MACs: 128 x 128 of h 0.0117 B/FLOP, the
ping-pong's 64 x 128 0.0195.

Tail split (TAIL; the unsplit power-of-two tile: hopper_pingpong.tail_plan, the ping-pong's rule, derived from the
shape and the SM count): where the tiles leave a partial last round of R tiles, those R tiles run as S K splits each
(R S CTAs share the round instead of R); work items are the whole tiles first, then the splits
(kernels/triton/_schedule.tail_item, as the load warp's `work_range`), so a split is a CTA's last item. Both
consumers run a split's shorter K range on the ring as any item; each stores its rows of the fp32 partial straight
from its accumulator (hopper_parts.store_partial, no staging), and the Triton tier's tail_reduce_kernel sums each
tail tile's splits in order, then bias / activation / cast::

   work ids 0 .. T-R-1:    whole tiles ──► epilogue ──► y
            T-R .. T-R+RS-1: split j % S of tail tile T-R + j // S ──► mma c: rows c BM/2.. of part[j] (fp32)
                                                                     ──► tail_reduce ──► y

Registers (setmaxnreg): the ping-pong's split, same partitions (see `derive`): 240 per consumer
thread, 24 for the load warpgroup; the accumulator is BM/2 * BN / 128 fp32 registers (128 at 128 x 256).
Epilogue math is the Triton tier's (`bias_activation`, kernels/triton/_epilogue.py) on the whole
BM/2 x BN accumulator; the cast result is then split in registers (reshape / permute / split: no data
moves) into EPI_SPLIT column sub-tiles, each stored through the consumer's staging tile.

Arguments: the partitions take hopper_bundles.py's named bundles (Gluon aggregates), built once in the kernel:
coop_mma_partition(CONSUMER, descs, ring, epi, sched) (a split tile: `_coop_split_mma_partition`, same
arguments, ring.t the T-row w ring) and hopper_parts.load_partition(descs, ring, sched); epi is the consumer's
(its staging tile c0 / c1, the bias, the tail split's workspace), the ring's empty[s] counts 2 (`ring_barriers`;
LATE_INIT, the dense kernel: the load warp sets the ring up after its first step's loads and arrives on ring.ready,
which both consumers wait on once: hopper_parts.ring_init, as the ping-pong's).

Constraints:
  - sm_90 only (wgmma, TMA, setmaxnreg); bf16 or fp16 x and w, same dtype; y bf16, fp16 or fp32.
  - TMA rules as the ping-pong's (`unsupported`): 2-D, unit last stride, 16-byte aligned base and row
    stride (K % 8 == 0, N % 8 == 0 for a 16-bit y, N % 4 for fp32). M, N, K need not be multiples of
    the tile: the last row / column of tiles shifts back as the ping-pong's (hopper_parts `tile_origin`); under one
    tile, and past K, TMA zero-fills the loads and clips the stores (a consumer's rows past M are clipped); but x under
    one tile comes in X_BOXES boxes of only its rows (hopper_host.token_boxes), the rest of each slot never written
    (its rows of the product lie past M, never stored). x may hold more rows than y (ops/dispatch.py pad_m, under
    one tile): they are computed and clipped.
  - BLOCK_SIZE_M in {128, 256} (BM/2 rows per consumer, 64 or 128: wgmma's m64 slices); BLOCK_SIZE_N a
    power of two in [16, 256], or a split tile A + B of configs.SPLIT_N (48, 80, 96, 144, 160, 192 at BM 128;
    48, 80, 96 at BM 256: the accumulator budget; the dense kernel only: the batched kernel rejects it);
    BLOCK_SIZE_K a power of two in
    [16, 128]; accumulator BM/2 * BN / 128 <= 128 fp32 registers per consumer thread (128 x 256, 256 x 128,
    128 x 192: 96, ...).
  - num_warps == 8: the warps that compute one tile (2 consumer warpgroups of 4; the kernel adds the
    load warp). The same config on the Triton tier (the op's fallback) is an 8-warp kernel with the
    same tile (a split tile: its power-of-two part). NUM_KSPLIT >= 1, an upper bound (split-K: the
    `hopper_host.fit_split_k` / `launch_dense`, fp32 partial sub-tiles). num_stages is an upper bound: the
    ring gets num_stages stages, with the output staged in EPI_SPLIT = 1, 2 or 4 column sub-tiles (the
    fewest that let them fit; a split tile: A / B + 1 of B columns, each its own buffer where they fit beside
    num_stages, else one), else the most stages (>= 2) beside 4 sub-tiles; a launch runs at most the K steps one CTA
    runs (>= 2, `hopper_host.ring_stages`).
  - TAIL (dense kernel only; hopper_pingpong.tail_plan): unsplit (NUM_KSPLIT 1), no split tile, not 128 x 256 on
    Triton >= 3.9 (kernels/_budgets.tail_split_ok); R S <= CTAs (each CTA at most one split, its last work item); the
    workspace R S BM x BN fp32, row-major. With a tail split the
    fp32 summation order of the tail tiles depends on M, N, K and the SM count (bitwise reproducible on one grid).
  - K >= 1 (the op handles K == 0); tiles < 2**31; GROUP_M, GROUP_S, LAST_M, LAST_S as the ping-pong's (the tile
    order's division magic, kernels/triton/_schedule.group_magic, or all None).
  - LATE_INIT: every CTA has a work item with a K step (grid <= work items, K >= 1): its load warp arrives on ready.
  - gated (dense kernel only; `launch_gated`): BLOCK_SIZE_N (h's columns) a power of two, 2 * BM/2 * BN / 128 <= 128
    accumulator registers a consumer thread (128 x 128, 128 x 64), NUM_KSPLIT 1, no swap_ab, no bias, no tail
    split, one staging tile a consumer (EPI_SPLIT 1); w (2I, K) with h (M, I); an activation on the gate.
  - swap_ab (dense kernel only): BLOCK_SIZE_N (the weight rows) 128 or 256, BLOCK_SIZE_M (tokens) a split width of
    SPLIT_N (48 ... 192 on 128 rows, accumulators 24-96 registers; 48 ... 160 on 256, up to SWAP_TALL_ACC_REGS),
    NUM_KSPLIT 1, no tail split; the TMA rules as above (x is the kernel's w operand: any M >= 1).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    mbarrier, tma, warpgroup_mma, warpgroup_mma_init, warpgroup_mma_wait)

from ... import configs
from .. import _budgets
from ..triton._epilogue import ACTIVATIONS, bias_activation
from ..triton._schedule import tail_item
from . import hopper_host as hh
from . import hopper_pingpong as hp
from . import hopper_plan as hplan
from .hopper_bundles import Descs, Epilogue, Ring, Schedule
from .hopper_parts import (load_partition, out_row, ring_next, ring_prev, ring_ready, sched_tile, split_mainloop,
                           store_gated, store_partial, store_split, store_subtile, tail_items, tile_origin, work_space)
from .hopper_plan import CoopPlan

KERNEL_NAME = "hopper_coop_kernel"
BACKEND = "gluon cooperative"  # in messages; a "backend": "gluon" config with num_warps 8 selects this kernel
# (hopper_pingpong.is_coop: ops/gemm_a16w16.py, the tuner, isa cases)

# Checked by `gemmkit isa` / CI (gemmkit/isa/promises.py): the ping-pong's, same partitions and instructions.
PROMISES = hp.PROMISES

unsupported = hh.dense_unsupported  # the same TMA / dtype / target rules

# ----------------------------------------------------------------------------- the plan (hopper_plan.py builds it)

_TILE_WARPS = hplan.COOP_WARPS  # config num_warps: the warps computing one tile
_EPI_SPLITS = (1, 2, 4)  # output sub-tiles per consumer tile, fewest first
# Split tiles: widths that are not powers of two, BN = A + B built from two power-of-two accumulators (A = 2, 4
# or 8 B: configs.SPLIT_N, `split_tail`), for rows whose tile count a power-of-two width wastes (DeepSeek N = 576 =
# 3 x 192, Llama-3-8B qkv N = 6144 at M = 512: 128 tiles of 128 x 192 for 132 SMs, against 96 or 192 of 128 x 256
# / 128 x 128; M = 1024 on 5120 columns: 256 tiles of 128 x 160, 1.94 waves, where 128 x 128 gives 320, 2.4).
# cuBLAS picks such widths there (docs/PERF.md). Dense kernel only.
SPLIT_N = configs.SPLIT_N
# The swapped tile on 256 weight rows (128 a consumer) x a split width of tokens: its accumulators, 128 x tokens fp32
# over a warpgroup, up to this many registers a consumer thread (160 tokens). Sm_90 static compiles (Triton 3.6 and 3.9)
# keep 96 / 144 / 160 tokens in the 240 registers setmaxnreg gives with a bias + gelu, bf16 or fp32 out; 192 tokens
# spilled 8 B with gelu (3.6). `gemmkit isa` compiles the config model's three (configs.model_configs, `tall_swap`).
SWAP_TALL_ACC_REGS = 160


def derive(cfg: dict, target=None, in_bytes: int = 2, out_bytes: int = 2) -> CoopPlan:
    """Everything the kernel and its launch need, from one config. ValueError names the key that cannot work.

    Derivation (H200 numbers: 227 KiB = 232448 B of shared memory per block, 64 K registers per SM):
      tile     BM x BN per work item, BM_C = BM / 2 rows per consumer warpgroup; each issues wgmma
               m64nBNk16, BM_C / 64 of them per k16 slice, on its half of the x box (an smem slice at
               row c * BM_C, a multiple of the 8-row swizzle atom); accumulator BM_C * BN fp32 over 128
               threads = BM_C * BN / 128 registers (128 x 256: 128 regs, as one ping-pong 128 x 128 tile).
               The per-consumer checks are the ping-pong's (hopper_plan.py `check_config` on the consumer's
               BM_C x BN, 4-warp view of the config).
      traffic  (BM + BN) * BK * in_bytes L2 -> smem bytes per 2 * BM * BN * BK FLOPs: 128 x 256:
               0.0117 B/FLOP, against 0.0156 for the ping-pong's 128 x 128 (and 0.0195 for 64 x 256).
      ring     stage_bytes = (BM + BN) * BK * in_bytes (128 x 256 x 64 bf16: 48 KiB).
      output   two staging tiles (one per consumer, never shared: both consumers store at once) of
               BM_C x EPI_N, EPI_N = BN / EPI_SPLIT, EPI_SPLIT the fewest of 1, 2, 4 for which
               num_stages stages fit: smem >= stages * stage_bytes + 2 * BM_C * EPI_N * out_bytes + slack.
               128 x 256 x 64 bf16 out: num_stages 3 -> EPI_SPLIT 1 (2 x 32 KiB + 3 x 48 KiB = 208 KiB);
               num_stages 4 -> EPI_SPLIT 2 (2 x 16 KiB + 4 x 48 KiB = 224 KiB); fp32 out, 4 stages ->
               EPI_SPLIT 4. A sub-tiled store waits for its previous TMA store to read the staging tile
               (store_wait(0)) before writing the next sub-tile: a short exposed wait per sub-tile.
               No 4-split fits num_stages: the most stages (>= 2) beside 4 sub-tiles. A split tile
               BN = A + B stores A / B + 1 sub-tiles of B columns (EPI_SPLIT = BN / B): 128 x 192 x 64 bf16:
               3 of 64, stage 40 KiB, 5 stages + 2 x 8 KiB = 217 KiB (fp32 out: 4 stages); 128 x 144 x 64:
               9 of 16, stage 34 KiB, 6 stages + 2 x 2 KiB. Where num_stages fit beside all of them
               (c_pieces = EPI_SPLIT: 128 x 96 x 64 at 6 stages, 6 x 28 + 2 x 12 KiB) each sub-tile has its
               own staging and no store waits for another (hopper_parts.store_split).
      warps    4 (consumer 0, the default partition) + 4 (consumer 1) + 1 (load), padded to 12.
      regs     as the ping-pong: 168 at entry (64 K / 384), setmaxnreg 240 per consumer, 24 for loads
               (hopper_plan.py `register_split`; the ring fit and the staging choice: `budget`).
      swizzle  the largest of 128/64/32 bytes dividing a tile row (BK * 2 = 128 B: 128-byte swizzle;
               hopper_plan.py `swizzle`).
    """
    for key in ("BLOCK_SIZE_M", "num_warps"):
        if key not in cfg:
            raise ValueError(f"config: missing key {key!r} for the {BACKEND} backend")
    gated = bool(cfg.get("gated"))
    cfg = {k: v for k, v in cfg.items() if k != "gated"}
    if gated and (cfg.get("swap_ab") or cfg.get("NUM_KSPLIT", 1) != 1):
        raise ValueError(f"config: key {'swap_ab' if cfg.get('swap_ab') else 'NUM_KSPLIT'} with 'gated'; the gated "
                         "tile (the module docstring's \"Gated\") is unswapped and unsplit")
    swap = bool(cfg.get("swap_ab"))
    if swap:  # the config names y's tile (tokens x weight rows); the kernel's is its transpose ("Swap-AB" above)
        tokens, rows = cfg.get("BLOCK_SIZE_M"), cfg.get("BLOCK_SIZE_N")
        if cfg.get("NUM_KSPLIT", 1) != 1:
            raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']} with 'swap_ab'; the transposed tile "
                             "has no split-K")
        if rows not in (128, 256):
            raise ValueError(f"config: key 'BLOCK_SIZE_N' = {rows} with 'swap_ab'; the {BACKEND} backend's weight "
                             "rows are the wgmma's M: 128 or 256 (64 or 128 a consumer)")
        if tokens not in SPLIT_N:
            raise ValueError(f"config: key 'BLOCK_SIZE_M' = {tokens} with 'swap_ab'; the {BACKEND} backend's tokens "
                             f"are a split width, one of {SPLIT_N} (the ping-pong takes power-of-two token tiles)")
        cfg = {**cfg, "BLOCK_SIZE_M": rows, "BLOCK_SIZE_N": tokens}  # the kernel's tile from here on
    bm = cfg["BLOCK_SIZE_M"]
    if bm not in (128, 256):
        raise ValueError(f"config: key 'BLOCK_SIZE_M' = {bm}; the {BACKEND} backend needs 128 or 256 "
                         "(two consumers of 64 or 128 wgmma rows)")
    if cfg["num_warps"] != _TILE_WARPS:
        raise ValueError(f"config: key 'num_warps' = {cfg['num_warps']}; the {BACKEND} backend needs 8 "
                         "(two consumer warpgroups of 4 share a tile)")
    consumer_view = {**cfg, "BLOCK_SIZE_M": bm // 2, "num_warps": hh.CONSUMER_WARPS}
    bm_c, bn, bk = hplan.check_config(consumer_view, BACKEND, "the gluon cooperative kernel", "(wgmma rows)",
                                      split_ok=not gated, split_k_ok=True, swap_ok=True)
    out_bytes = hh.split_k_out_bytes(cfg, out_bytes)
    bn_tail = hplan.split_tail(bn)
    hplan.check_block_k(bk)
    acc_regs = hplan.acc_regs(bm_c, bn) * (2 if gated else 1)  # the gated tile: the gate's and the up's accumulators
    hplan.check_acc_regs(acc_regs, bm, bn, BACKEND, per="consumer thread",
                         limit=SWAP_TALL_ACC_REGS if swap and bm == 256 else hplan.MAX_ACC_REGS,
                         note=" (two accumulators: 'gated')" if gated else "")
    # (epi_split, c_pieces): a split tile A + B stores B-wide sub-tiles, A / B + 1 of them (hopper_parts.store_split),
    # each in its own staging sub-tile if num_stages fit beside them, else one at a time through one
    if bn_tail:
        splits = ([((bn // bn_tail, bn // bn_tail), 2 * bm_c * bn * out_bytes)] * hplan.SPLIT_PIECES
                  + [((bn // bn_tail, 1), 2 * bm_c * bn_tail * out_bytes)])
    elif gated:  # one BM/2 x BN staging tile a consumer (hopper_parts.store_gated)
        splits = [((1, 1), 2 * bm_c * bn * out_bytes)]
    else:
        splits = [((s, 1), 2 * bm_c * (bn // s) * out_bytes) for s in _EPI_SPLITS if bn // s >= 16]
    w_rows = 2 * bn if gated else bn  # w rows a K step: the gated tile's gate and up boxes
    b = hplan.budget(target, (bm, bn, bk), stage_bytes=(bm + w_rows) * bk * in_bytes, num_stages=cfg["num_stages"],
                     staging=splits, out_bytes=out_bytes)
    epi_split, c_pieces = b.staging
    epi_n = bn // epi_split
    return CoopPlan(BM=bm, BN=bn, BK=bk, GROUP_SIZE_M=cfg["GROUP_SIZE_M"], **b.fields(), acc_regs=acc_regs,
                    swizzle_a=hplan.swizzle(bk * in_bytes), swizzle_b=hplan.swizzle(bk * in_bytes),
                    swizzle_c=hplan.swizzle((bm_c if swap else epi_n) * out_bytes), BM_C=bm_c, BN_TAIL=bn_tail,
                    w_box=bn_tail or bn, epi_split=epi_split, epi_n=epi_n, c_pieces=c_pieces,
                    split_k=cfg.get("NUM_KSPLIT", 1), swap=swap, gated=gated)


def constexprs(plan: CoopPlan, *, has_bias: bool, activation: str) -> dict:
    """The kernel's constexpr arguments (one place for the launch and the static compile)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    return dict(STAGES=plan.stages, GROUP_SIZE_M=plan.GROUP_SIZE_M, HAS_BIAS=has_bias, ACTIVATION=activation,
                MMA_REGS=plan.mma_regs, LOAD_REGS=plan.load_regs)


def kernel_constexprs(plan: CoopPlan, *, has_bias: bool, activation: str, tail: bool = False) -> dict:
    """hopper_coop_kernel's: `constexprs`, hopper_pingpong.dense_constexprs (BN, SPLIT_K, SHIFT), TAIL (a tail
    split: hopper_pingpong.tail_plan), SWAP (the transposed split tile, "Swap-AB") and GATED (the gated tile)."""
    return {**constexprs(plan, has_bias=has_bias, activation=activation),
            **hp.dense_constexprs(plan, has_bias=has_bias, activation=activation), "TAIL": tail, "SWAP": plan.swap,
            "GATED": plan.gated}


# ----------------------------------------------------------------------------- device code

@gluon.jit
def _halves(v, ROWS: gl.constexpr, COLS: gl.constexpr):
    """Columns [0, COLS/2) and [COLS/2, COLS) of a ROWS x COLS register tensor (a register split: the
    column bit COLS/2 is a register index bit of the wgmma accumulator layout, so nothing moves)."""
    return v.reshape([ROWS, 2, COLS // 2]).permute((0, 2, 1)).split()


@gluon.jit
def coop_mma_partition(CONSUMER: gl.constexpr, descs, ring, epi, sched):
    """1 warpgroup: rows CONSUMER * BM/2 ... of every tile of this CTA: mainloop, then the epilogue (bundles:
    hopper_bundles.py; epi holds this consumer's BM/2 x EPI_N staging tile).
    BATCHED (hopper_pingpong_batched.py): work ids over B x tiles, bias row b (epi.bias + b * epi.stride_bb)
    and 3-D TMA stores [b, m, n]; compiled away in the dense kernel.
    SPLIT_K (dense only, sched.B = the number of splits): work ids over splits x tiles, one K range each, the
    fp32 partial tile stored in its split's workspace slab (hopper_parts `split_steps`, `out_row`)."""
    y_desc = descs.y
    a_ring = ring.a
    b_ring = ring.b
    full = ring.full
    empty = ring.empty
    c_smem = epi.c
    bias_ptr = epi.bias
    STAGES: gl.constexpr = ring.STAGES
    GROUP_SIZE_M: gl.constexpr = sched.GROUP_SIZE_M
    HAS_BIAS: gl.constexpr = epi.HAS_BIAS
    ACTIVATION: gl.constexpr = epi.ACTIVATION
    BATCHED: gl.constexpr = sched.BATCHED
    SPLIT_K: gl.constexpr = sched.SPLIT_K
    BM: gl.constexpr = ring.BM
    BN: gl.constexpr = ring.BN
    BM_C: gl.constexpr = c_smem.shape[0]
    EPI_N: gl.constexpr = c_smem.shape[1]
    EPI_SPLIT: gl.constexpr = BN // EPI_N
    # wgmma accumulator: 4 warps stacked along M, instruction m16 x BN x k16 per warp.
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 16])
    BY_ENTRY: gl.constexpr = BATCHED or SPLIT_K
    num_pid_m, num_pid_n, num_work, k_steps = work_space(sched.M, sched.N, sched.K, BM, BN, ring.BK, sched.B,
                                                         BATCHED, SPLIT_K)
    idx = 0
    phase = 0
    ring_ready(ring)  # (the load warp sets the ring up: hopper_parts.ring_init)
    for work_id in range(gl.program_id(0), tail_items(num_work, sched), gl.num_programs(0)):
        if sched.TAIL:  # a whole tile, or one K split of a tail tile (`part` its workspace tile; -1 elsewhere)
            tile_id, _k0, nk, part = tail_item(work_id, num_work, sched.R, sched.B, k_steps)
        else:
            tile_id = work_id
            nk = k_steps
        acc = warpgroup_mma_init(gl.zeros((BM_C, BN), dtype=gl.float32, layout=acc_layout))
        for kk in range(nk):
            mbarrier.wait(full.index(idx), phase)
            a = a_ring.index(idx).slice(CONSUMER * BM_C, BM_C)  # my rows of the x box
            acc = warpgroup_mma(a, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
            # One wgmma group in flight: the previous step's has finished reading its slot.
            warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index(ring_prev(idx, STAGES)), pred=kk > 0)
            idx, phase = ring_next(idx, phase, STAGES)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index(ring_prev(idx, STAGES)))  # the tile's last slot
        if sched.TAIL:
            is_part = part >= 0
        else:
            is_part: gl.constexpr = False  # the epilogue alone is compiled
        if is_part:  # (TAIL) a tail tile's K split: my rows' fp32 partial into workspace tile `part`, no staging
            store_partial(epi.part, acc, part, CONSUMER * BM_C, BM)  # (the CTA's last item)
        else:
            # Epilogue (the load warp is already filling the ring with the next tile). The tile's
            # coordinates are computed here, not live across the mainloop.
            b, pid_m, pid_n = sched_tile(tile_id, num_work, num_pid_m, num_pid_n, sched, BY_ENTRY)
            col = tile_origin(pid_n, sched.N, BN, sched.SHIFT)  # a last tile shifted back to end at M / N
            offs_n = col + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
            if BATCHED:
                bias_row = bias_ptr + b.to(gl.int64) * epi.stride_bb
            else:
                bias_row = bias_ptr
            out = bias_activation(acc, bias_row, offs_n, sched.N, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
            row0 = tile_origin(pid_m, sched.M, BM, sched.SHIFT)
            row = out_row(b, row0, num_pid_m, BM, SPLIT_K) + CONSUMER * BM_C
            if EPI_SPLIT == 1:
                store_subtile(y_desc, c_smem, out, b, row, col, BATCHED)
            elif EPI_SPLIT == 2:
                lo, hi = _halves(out, BM_C, BN)
                store_subtile(y_desc, c_smem, lo, b, row, col, BATCHED)
                store_subtile(y_desc, c_smem, hi, b, row, col + EPI_N, BATCHED)
            else:
                lo, hi = _halves(out, BM_C, BN)
                q0, q1 = _halves(lo, BM_C, BN // 2)
                store_subtile(y_desc, c_smem, q0, b, row, col, BATCHED)
                store_subtile(y_desc, c_smem, q1, b, row, col + EPI_N, BATCHED)
                q2, q3 = _halves(hi, BM_C, BN // 2)
                store_subtile(y_desc, c_smem, q2, b, row, col + 2 * EPI_N, BATCHED)
                store_subtile(y_desc, c_smem, q3, b, row, col + 3 * EPI_N, BATCHED)
    tma.store_wait(0)


@gluon.jit
def _coop_split_mma_partition(CONSUMER: gl.constexpr, descs, ring, epi, sched):
    """`coop_mma_partition` for a split tile, BN = A + B columns (B = EPI_N: 96 -> 64 + 32, 144 -> 128 + 16;
    ring.b holds w rows [0, A), ring.t [A, BN)): the ping-pong's split mainloop on this consumer's rows of the x
    box (two accumulators, A and B columns) and its split epilogue (A / B + 1 sub-tiles of B columns):
    hopper_parts.split_mainloop / store_split. Dense only; SPLIT_K as `coop_mma_partition`'s."""
    SPLIT_K: gl.constexpr = sched.SPLIT_K
    BN: gl.constexpr = ring.BN
    BM: gl.constexpr = ring.BM
    BM_C: gl.constexpr = BM // 2
    gl.static_assert(not sched.TAIL, "a split tile has no tail split (hopper_pingpong.tail_plan)")
    num_pid_m, num_pid_n, num_work, k_steps = work_space(sched.M, sched.N, sched.K, BM, BN, ring.BK, sched.B, False,
                                                         SPLIT_K)
    idx = 0
    phase = 0
    ring_ready(ring)
    for work_id in range(gl.program_id(0), num_work, gl.num_programs(0)):
        acc, acc_t, idx, phase = split_mainloop(ring, idx, phase, k_steps, CONSUMER * BM_C, BM_C)
        acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
        mbarrier.arrive(ring.empty.index(ring_prev(idx, ring.STAGES)))  # the tile's last slot
        b, pid_m, pid_n = sched_tile(work_id, num_work, num_pid_m, num_pid_n, sched, SPLIT_K)
        row = out_row(b, tile_origin(pid_m, sched.M, BM, sched.SHIFT), num_pid_m, BM, SPLIT_K) + CONSUMER * BM_C
        if ring.GATED:  # acc: the gate's columns, acc_t: the up's; h = act(g) * u
            store_gated(descs.y, epi, acc, acc_t, row, tile_origin(pid_n, sched.N, BN, sched.SHIFT))
        else:  # (SWAP: y's tile transposed, this consumer's weight rows y's columns, the bias bounded by the kernel's M)
            store_split(descs.y, epi, acc, acc_t, row, tile_origin(pid_n, sched.N, BN, sched.SHIFT),
                        sched.M if sched.SWAP else sched.N, sched.SWAP)
    tma.store_wait(0)


@gluon.jit
def ring_barriers(STAGES: gl.constexpr, INIT: gl.constexpr = True):
    """The ring's mbarriers (this kernel's and its batched form's): full[s] counts the loader's expect-tx
    arrive (+ the TMA bytes), empty[s] both consumers' arrives. INIT False: allocated only (the load warp sets them
    up, hopper_parts.ring_init with the Ring's ARRIVALS 2)."""
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    if INIT:
        for i in gl.static_range(STAGES):
            mbarrier.init(full.index(i), count=1)
            mbarrier.init(empty.index(i), count=2)
    return full, empty


# TMA handles every M, N, K: one compile per config (and per TAIL)
@gluon.jit(do_not_specialize=["M", "N", "K", "SPLITS", "TAIL_TILES", "GROUP_M", "GROUP_S", "LAST_M", "LAST_S"])
def hopper_coop_kernel(x_desc, w_desc, y_desc, bias_ptr, M, N, K, SPLITS, part_ptr, TAIL_TILES,
                       GROUP_M, GROUP_S, LAST_M, LAST_S,  # the tile order's division magic (hopper_host.launch_tma)
                       STAGES: gl.constexpr, GROUP_SIZE_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                       ACTIVATION: gl.constexpr, MMA_REGS: gl.constexpr, LOAD_REGS: gl.constexpr,
                       BN: gl.constexpr, SPLIT_K: gl.constexpr, SHIFT: gl.constexpr, TAIL: gl.constexpr,
                       BM: gl.constexpr, X_BOXES: gl.constexpr, C_PIECES: gl.constexpr, LATE_INIT: gl.constexpr,
                       SWAP: gl.constexpr, GATED: gl.constexpr):
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BM_C: gl.constexpr = y_desc.block_type.shape[0]  # (SWAP: the staging sub-tile is B tokens x BM / 2 weight rows)
    EPI_N: gl.constexpr = y_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BM, BK], x_desc.layout)  # (x's box may be fewer rows)
    if C_PIECES > 1:  # a split tile's sub-tiles, each its own (hopper_parts.store_split)
        C_SHAPE: gl.constexpr = [C_PIECES, BM_C, EPI_N]
    else:
        C_SHAPE: gl.constexpr = [BM_C, EPI_N]
    c0 = gl.allocate_shared_memory(y_desc.dtype, C_SHAPE, y_desc.layout)
    c1 = gl.allocate_shared_memory(y_desc.dtype, C_SHAPE, y_desc.layout)
    full, empty = ring_barriers(STAGES, not LATE_INIT)
    if LATE_INIT:  # the load warp sets the ring up (hopper_parts.ring_init), then arrives on ready
        ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(ready, count=1)
    else:
        ready = None
    descs = Descs(x_desc, w_desc, y_desc)
    # TAIL (a tail split, hopper_host.launch_dense): SPLITS K splits of each of the last TAIL_TILES tiles, their fp32
    # partials into part_ptr; SPLIT_K: SPLITS K splits of every tile; neither: SPLITS, part_ptr, TAIL_TILES unused
    sched = Schedule(M, N, K, SPLITS, GROUP_SIZE_M, SPLIT_K=SPLIT_K, SWAP=SWAP, SHIFT=SHIFT, R=TAIL_TILES, TAIL=TAIL,
                     X_BOXES=X_BOXES, group_m=GROUP_M, group_s=GROUP_S, last_m=LAST_M, last_s=LAST_S)
    part = part_ptr if TAIL else None
    epi0 = Epilogue(c0, bias_ptr, 0, HAS_BIAS, ACTIVATION, part, C_PIECES)
    epi1 = Epilogue(c1, bias_ptr, 0, HAS_BIAS, ACTIVATION, part, C_PIECES)
    W_ROWS: gl.constexpr = w_desc.block_type.shape[0]
    if GATED or W_ROWS != BN:  # two accumulators: a split tile BN = A + B (the w box is B rows: w rows [0, A) in
        # b_ring, [A, BN) in t_ring), or the gated tile (the gate rows of its BN columns in b_ring, the up rows in t_ring)
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN if GATED else BN - W_ROWS, BK], w_desc.layout)
        t_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, W_ROWS, BK], w_desc.layout)
        ring = Ring(a_ring, b_ring, t_ring, full, empty, ready, 2, GATED=GATED)
        gl.warp_specialize([
            (_coop_split_mma_partition, (0, descs, ring, epi0, sched)),
            (_coop_split_mma_partition, (1, descs, ring, epi1, sched)),
            (load_partition, (descs, ring, sched)),
        ], [4, 1], [MMA_REGS, LOAD_REGS])
    else:
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
        ring = Ring(a_ring, b_ring, None, full, empty, ready, 2)
        gl.warp_specialize([
            (coop_mma_partition, (0, descs, ring, epi0, sched)),
            (coop_mma_partition, (1, descs, ring, epi1, sched)),
            (load_partition, (descs, ring, sched)),
        ], [4, 1], [MMA_REGS, LOAD_REGS])


# ----------------------------------------------------------------------------- host side

def y_box(plan: CoopPlan) -> tuple:
    """The y TMA box = a consumer's staging sub-tile: BM/2 x EPI_N, or (swap) B tokens x BM/2 weight rows."""
    if plan.swap:
        return (plan.BN_TAIL, plan.BM_C)
    return (plan.BM_C, plan.epi_n)


def tail_of(plan: CoopPlan, cfg: dict, M: int, N: int, K: int, target, tail=None) -> tuple[int, int]:
    """(tail tiles R, splits S) of a launch: hopper_pingpong.tail_plan (the same rule), none where the installed
    Triton's registers do not fit this tile's tail variant (kernels/_budgets.tail_split_ok)."""
    if not _budgets.tail_split_ok(KERNEL_NAME, cfg):
        tail = False
    return hp.tail_plan(plan, M, N, K, target.num_cus, tail)


def launch(x2, w, bias, y, activation, cfg, target, compile_only=False, tail=None):
    """y = act(x2 @ w.T + bias) with the cooperative kernel. x2 (M, K), w (N, K), bias (N,) or None, y (M, N).

    `cfg` keys: BLOCK_SIZE_M (128 / 256), BLOCK_SIZE_N/K, GROUP_SIZE_M, num_warps (8), num_stages (upper
    bound); `backend`, `persistent`, `tma` are accepted and ignored; NUM_KSPLIT > 1 splits K into at most
    that many ranges (hopper_host.fit_split_k, launch_dense). `tail`: the tail split (hopper_pingpong.tail_plan:
    None the rule, False never, True wherever it can). `target`: a
    gemmkit.arch.Target (num_cus sizes the persistent grid). ValueError when `unsupported` says no or the
    config cannot be planned.
    """
    hh.check_operands(x2, w, bias, y, target, "gluon coop")
    (M, K), N = x2.shape, y.shape[1]
    plan = derive(hh.fit_split_k(cfg, M, N, K, target), target, x2.element_size(), y.element_size())
    n_tail, splits = tail_of(plan, cfg, M, N, K, target, tail)
    ce = kernel_constexprs(plan, has_bias=bias is not None, activation=activation, tail=n_tail > 0)
    if plan.swap:  # the kernel's "x" is w (BM-row boxes), its "w" is x (B-row boxes); y's box is B x BM/2
        return hh.launch_tma(hopper_coop_kernel, plan, y_box(plan), w, x2, bias, y, ce, target, compile_only,
                             w_box=plan.w_box, tail=(y, 0, 1))
    # the y box is a consumer's staging sub-tile (BM/2 x EPI_N), not the whole tile
    return hh.launch_dense(hopper_coop_kernel, plan, y_box(plan), x2, w, bias, y, activation, ce,
                           target, compile_only, tail=(n_tail, splits))


def launch_gated(x2, w, y, activation, cfg, target, compile_only=False):
    """h = act(x2 @ w[:I].T) * (x2 @ w[I:].T) with the cooperative gated tile ("Gated" above): x2 (M, K), w (2I, K)
    (the gate rows, then the up rows), y (M, I); activation one of "silu", "gelu", "gelu_tanh", "relu". `cfg`: this
    kernel's keys (BLOCK_SIZE_N counts h's columns; unsplit, unswapped). ValueError as hopper_pingpong.launch_gated.
    The ops serve it through ops/dispatch.gated (the config model's `gated_one_wave`, or a "backend": "gluon" gated
    config at num_warps 8)."""
    hh.check_gated_operands(x2, w, y, activation, target, "gluon gated coop")
    plan = derive({**cfg, "gated": True}, target, x2.element_size(), y.element_size())
    ce = kernel_constexprs(plan, has_bias=False, activation=activation)
    return hh.launch_dense(hopper_coop_kernel, plan, y_box(plan), x2, w, None, y, activation, ce, target,
                           compile_only, tail=(0, 1))


# ----------------------------------------------------------------------------- static compile (gemmkit isa)

# Configs compiled by `gemmkit isa` besides any shipped table bucket with "backend": "gluon", num_warps 8.
PRESETS = (
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 4},  # EPI_SPLIT 2 (bf16 out), 4 (fp32 out)
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 3},  # EPI_SPLIT 1 (bf16 out)
    {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 4},
)
# The split tiles (dense kernel only: hopper_pingpong_batched.py compiles PRESETS above).
SPLIT_PRESETS = (
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 5},  # 5 stages (bf16 out), 4 (fp32 out)
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 96, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 5, "NUM_KSPLIT": 3},  # split-K: fp32 partial sub-tiles (4 stages)
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 144, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6},  # A = 8 B: 9 sub-tiles of 16 columns
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 160, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6},  # A = 4 B: 5 sub-tiles of 32 columns
)


# The swapped split tiles ("Swap-AB": configs name y's tile, tokens x weight rows; the dense kernel only)
SWAP_PRESETS = (
    {"BLOCK_SIZE_M": 144, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6, "swap_ab": True},  # 144 tokens (128 + 16: 9 pieces of 16) x 128 weight rows
    {"BLOCK_SIZE_M": 96, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6, "swap_ab": True},  # 96 tokens (64 + 32)
)  # (the tiles on 256 weight rows: the config model's `tall_swap` configs, configs.model_configs)


def static_spec(cfg: dict, target, **kw):
    """(kernel, signature, constexprs, divisible, options, plan) to compile hopper_coop_kernel for `target` on a
    CPU: hopper_host.dense_static_spec with this kernel's plan (keywords dtype, out_dtype, has_bias, activation,
    tail, tokens, gated)."""
    return hh.dense_static_spec(hopper_coop_kernel, derive, kernel_constexprs, y_box, cfg, target, **kw)


def _shipped_coop_configs(arch: str):
    """(table, bucket, config) of every A16W16 table bucket of `arch` that picks this backend."""
    return ((t, b, c) for t, b, c in hh.shipped_gluon_configs(arch) if t.startswith("A16W16") and hp.is_coop(c))


def isa_cases(archs, op: str = "hopper_coop"):
    """Static cases for sm_90: every shipped A16W16 bucket with backend "gluon" and num_warps 8, the config model's
    cooperative tiles, plus PRESETS, SPLIT_PRESETS and SWAP_PRESETS (bf16, fp32 out)."""
    if "sm_90" not in archs:
        return
    cases = [(t, b, c, "bf16") for t, b, c in _shipped_coop_configs("sm_90") if not t.startswith("A16W16_")]
    cases += [("A16W16.json", name, c, "bf16") for name, c in configs.model_configs("a16w16", "sm_90")
              if c.get("backend") == "gluon" and c.get("num_warps") == _TILE_WARPS]  # `coop_widths`' tiles
    cases += [("-", f"preset{i}", c, o) for i, c in enumerate(PRESETS + SPLIT_PRESETS + SWAP_PRESETS)
              for o in ("bf16", "fp32")]
    yield from hh.unique_cases(cases, KERNEL_NAME, op)
    # the tail split's variant (TAIL: a consumer's fp32 partial stored beside the staged epilogue) of the
    # power-of-two tiles: 128 x 256 at 4 stages (two sub-tiles a consumer) and 3 (one), 256 x 128; fp32 out
    tails = [("-", f"preset{i}", c, "bf16") for i, c in enumerate(PRESETS)] + [("-", "preset0", PRESETS[0], "fp32")]
    tails = [t for t in tails if _budgets.tail_split_ok(KERNEL_NAME, t[2])]  # (the installed Triton's budget)
    yield from hh.variant_cases(tails, "tail", KERNEL_NAME, op)
    # x in boxes of only its rows under one row of tiles (hopper_host.token_boxes): M = 72 on 128 x 256, five of 16
    yield from hh.token_cases([("-", "preset0", PRESETS[0], "bf16", 72)], KERNEL_NAME, op)
    # the gated tile (`launch_gated`: a gate and an up accumulator of BM/2 x BN a consumer), bf16 and fp32 h
    gated = [("-", f"gated{i}", c, o) for i, c in enumerate(GATED_PRESETS) for o in ("bf16", "fp32")]
    yield from hh.variant_cases(gated, "gated", KERNEL_NAME, op)


# The gated tile's configs compiled by `gemmkit isa` (the Triton tier's M <= 4095 gated bucket's 128 x 128 of h: the
# x box shared by both consumers, 128 accumulator registers a thread; 128 x 64 at a deeper ring)
GATED_PRESETS = (
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8, "num_stages": 4},
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8, "num_stages": 6},
)


def isa_spec(case):
    return hh.dense_isa_spec(case, static_spec, PROMISES)
