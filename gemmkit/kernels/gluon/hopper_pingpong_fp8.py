"""FP8 GEMM for Hopper (sm_90) in Gluon, promoted to fp32, with per-token/per-channel or block scales.

  SCALE = "rowcol"  y = (x @ w.T) * x_scale[m] * w_scale[n] (+ bias)               (gemm_a8w8)
  SCALE = "block"   y = sum_kb (x[:, kb] @ w[:, kb].T) * x_scale[m, kb] * w_scale[n // SBN, kb]
                    (+ bias), kb = K block of SBK columns: DeepSeek-V3 / torch._scaled_mm
                    blockwise scales, (SBN, SBK) = block_shape, (128, 128) by default
                    (gemm_a8w8_blockscale)

x (M, K) and w (N, K) float8_e4m3fn; rowcol: x_scale (M,) and w_scale (N,) fp32; block: x_scale
(M, ceil(K / SBK)) and w_scale (ceil(N / SBN), ceil(K / SBK)) fp32, any strides. bias (N,) bf16 /
fp16 / fp32, y bf16 / fp16 / fp32. The accumulator is fp32 at full precision: the tensor cores'
fp8 adder carries at most PROMOTE_K = BLOCK_SIZE_K <= 128 products before the kernel adds it into
an fp32 tile (the "promotion", as cuBLAS's precise mode, CUTLASS and the Triton tier do;
hopper_fp8_mainloop.py). The modes differ only there and in the epilogue: rowcol promotes
`acc += p` and scales in the epilogue; block promotes `acc += p * s`, s[m] = x_scale[m, kb] *
w_scale[n // SBN, kb] (an FFMA for the FADD), and its epilogue applies no scale. BK | SBK (a chain
never straddles two scale blocks) and BN | SBN (one w scale per tile per K block, as DeepGEMM).

Why not the BF16 ping-pong's schedule (hopper_pingpong.py; its plan builder, hopper_plan.py, and ring
counters, hopper_parts.py, are shared): promotion waits for the wgmma group, and the tensor cores idle
meanwhile. So both consumer warpgroups run their mainloops *at the same time* (pingpong: each on its own
tile, with its own load warp and ring; no turn barrier, every full / empty barrier has one waiter and one
arriver): while one waits and promotes, the other's wgmma keeps the tensor cores busy.

Two layouts of the same partitions, chosen by the config's num_warps (the warps that compute
one output tile, as in the Triton tier):

LAYOUT "pingpong" (num_warps 4): five partitions per CTA (`gl.warp_specialize`; persistent: one CTA per SM):

  mma 0   (4 warps)  consumer 0: local tiles 0, 2, 4, ...   (tile ids pid, pid + 2 grid, ...)
  mma 1   (4 warps)  consumer 1: local tiles 1, 3, 5, ...   (tile ids pid + grid, pid + 3 grid, ...)
  load 0  (1 warp)   TMA x[BM, BK], w[BN, BK] of consumer 0's tiles into ring 0
  load 1  (1 warp)   the same for consumer 1, ring 1

A tile id becomes (pid_m, pid_n) in the grouped order of kernels/triton/_schedule.tile_coords, in every layout and
partition the same way: without its two runtime divisions where the launch passes their magic (GROUP_M, GROUP_S,
LAST_M, LAST_S; hopper_parts.item_tile, hopper_host.tile_magic).

LAYOUT "coop" (num_warps 8, BLOCK_SIZE_M 128: DeepGEMM's cooperative layout; 256: below): four partitions, one
128 x BN tile (or a tail split's K range of one) per CTA work item, one ring, both consumers on every item:

  mma 0   (4 warps)  every local item (ids pid, pid + grid, ...), rows   0..63: acc 64 x BN + pA, pB 64 x BN
  mma 1   (4 warps)  the same items, rows 64..127                       (128 x 128: 64 + 64 + 64 regs)
  load    (1 warp)   TMA x[128, BK], w[BN, BK] (+ block scales) of every item into the one ring; (rowcol) before
                     an item's K steps, its 128 x scales and BN w scales into vector buffer item % 2 (cp.async)
                     ┌──────── ring slot s: a 128 x BK ─┬─ rows 0..63 ──► mma 0's chain ──► acc (mma 0)
                     │                                  └─ rows 64..127 ─► mma 1's chain ──► acc (mma 1)
                     └──────── b BN x BK (read by both), (block) s 128 fp32 (each reads its 64) and w's scale

  Why: a 64-row tile per consumer (the pingpong's smallest) reads its own w
  tile: (BM + BN) / (2 BM BN) bytes of L2 per FLOP, 11.7 TB/s at 1000 TFLOP/s for 64 x 128;
  the shared 128 x BN tile reads 7.8 (128 x 128), with no spill by construction (acc and
  two partials are 64 x BN each: 192 registers at BN = 128). Each consumer keeps one chain in flight
  while it promotes the one before (hopper_fp8_mainloop.py: two partials, `warpgroup_mma_wait(1)`), and
  the two consumers drift (each waits only for full[s]; a slot goes back once both arrived on empty[s]).
  The cost: both consumers run the epilogue at once, each storing its 64-row half (its own
  64 x BN staging buffer, one TMA store each); the tensor cores idle then, while the load
  warp already fills the ring with the next work item's first K steps. (rowcol) The epilogue's scales are
  already in shared memory (staged by the load warp while the mainloop ran): the consumers read them (LDS)
  instead of waiting an L2 round trip after the last chain (+1.5-2.4% at 4096^3 / 8192^3, +10-14% at
  K = 512-1024: docs/PERF.md).

LAYOUT "coop", BLOCK_SIZE_M 256 (the coop 256 tile): the same partitions, a 256 x BN item, a 128-row half per
consumer (two 64-row slices), run by the pingpong mainloop from the one ring (one partial, each chain waited, the
other consumer's wgmma under the wait and the FADDs: hopper_fp8_mainloop.pingpong_mainloop, ROW0 = 128 c)::

   ring slot s: a 256 x BK ─┬─ rows   0..127 ─► mma 0: slice 0 → p → acc0, slice 1 → p → acc1 (128 + 64 regs)
                            └─ rows 128..255 ─► mma 1: the same
                b BN x BK, read by both (each slice's chain reads it)

  Why: the b tile serves 256 rows, (BM + BN) / (2 BM BN) = 5.9 bytes of L2 a kFLOP at 256 x 128 against 7.8, and
  a tile boundary (drain, epilogue, refill) comes every 256 rows, half as often. The cost: no chain stays in
  flight while a consumer promotes, so the two consumers must interleave to keep the tensor cores fed; and a
  48 KiB slot leaves 3 of them (two 128 x BN staging buffers; one shared, c_free, for an fp32 y). Measured
  (docs/PERF.md): +3-8% on block-scale rows with K <= 2048 at M >= 4096, -6-9% at K >= 7168, per-token
  no gain; the tables use it where it won. cuBLAS / CUTLASS's promotion keeps a second accumulator of the whole
  tile (2 x 128 registers at 256 x 128 a consumer pair), so their fp8 tile stops at 128 x 128.

  Tail split (coop only; `tail_plan`, configs/model/tail.py tail_split): where the tiles leave a partial last round
  (R = tiles % CTAs of them) and K >= MIN_TAIL_K, those R tiles run as S K-splits each, so
  R * S CTAs share the last round instead of R. The work items (kernels/triton/_schedule.tail_item, its diagram)
  are the whole tiles first, then the splits; a split's epilogue stores its fp32 partial into a workspace
  (`store_scaled_partial`: rowcol already scaled), and tail_reduce_kernel (kernels/triton/_splitk_reduce.py) sums
  each tail tile's splits in order.

  Paired consumers (pingpong only; `PAIR`, hopper_fp8_plan.pair_plan): where the tiles are at most one a CTA
  (decode: 66-132 tiles of 64 x 64) consumer 1 would idle; paired, both consumers take every tile, ring r loading
  and consumer r computing K half r (hopper_fp8_parts.pair_steps), and consumer 1's fp32 partial goes through an
  exchange buffer to consumer 0, which adds it and stores y alone::

     load 0 ─► ring 0: K steps 0 .. q-1 ─► mma 0 ──────────────┐ acc0 + xch ─► epilogue ─► y (TMA)
     load 1 ─► ring 1: K steps q .. k-1 ─► mma 1 ─► xch (fp32) ┘  (xfull: written; xempty: read)

Tile layout (one consumer's BM x BN tile; BM = 128 is two 64-row slices, one wgmma
m64nBNk32 chain each; the partial accumulator p is one 64 x BN slice, reused)::

            BK (one ring stage, <= 128 = PROMOTE_K)
          ┌──────────┐          ┌──────────────────────┐
   a rows │ 0..63    │──wgmma──►│ p (64 x BN, fp32,    │──FADD──► acc0 (64 x BN fp32)  rows  0..63
          ├──────────┤    ▲     │ tensor-core adder)   │
          │ 64..127  │──wgmma──►│                      │──FADD──► acc1 (64 x BN fp32)  rows 64..127
          └──────────┘    │     └──────────────────────┘
          b = w[BN, BK]ᵀ ─┘     registers per consumer thread: acc0 + acc1 + p
                                = (BM + 64) * BN / 128 (128 x 128: 192 of the 240 setmaxnreg gives)

Block scales (SCALE = "block"; K step kk of BK columns lies in scale block kb = kk * BK // SBK): the load warp
copies each step's scales into the ring slot beside its operands (w scale: a TMA box; x scales: a TMA box where
`scale_tma_ok`, else cp.async), landing on full[s]; the consumers read them from the slot and promote
`acc += p * s` (diagram and why: hopper_fp8_parts.py). The pingpong 128 x 128 tile spills in block mode unless
the promotion is the inline-PTX FFMA (hopper_fp8_mainloop._promote; as a plain expression ptxas split the
partials: 324 bytes of spills), which every block-mode promotion now uses (the pingpong's rowcol FADD stays a
plain expression: its SASS compiles clean and is unchanged).

Phase timeline of one K step in consumer c (BK = 128; "wg" = 4 wgmma k32 issued async,
use_acc=False so each chain starts from zero; "wait" = warpgroup_mma_wait(0))::

   mma 0 │ wg top │ wait │ FADD acc0 │ wg bot │ wait │ FADD acc1 │ arrive empty │ wg top │ ...
   mma 1 │ FADD ..│ wg top        │ wait │ FADD acc0 │ wg bot        │ wait │ ...
   tensor│ mma0 top│ mma1 top     │ mma0 bot       │ mma1 bot      │ ...      (shared by both)
                    ▲ promotion of consumer 0 (wait + FADDs) runs under consumer 1's wgmma

   coop: both consumers chain on the same slot (rows 0..63 and 64..127 of a), each promotes only its
   own half, with its next chain in flight meanwhile (timeline: hopper_fp8_mainloop.py).

   tile level: load c │ k steps of its tiles, S stages ahead │ ...
               mma c  │ mainloop tile j │ epi j ((rowcol) scales, bias, cast, smem, TMA store) │ mainloop j+2 │
   The two consumers drift freely; only the epilogues of a shared output tile (C_TILES = 1)
   alternate, handed over by c_free (as in hopper_pingpong.py).

Barriers (full: count 1, block with cp.async x scales 1 + 32; empty: 1, coop 2): full[r*S + s] / empty[r*S + s] of ring r, slot s
(coop: r = 0, one ring; both consumers wait on full[s] with the same parity, both arrive on empty[s]):
   full   load r: (block without SCALE_TMA: BM / 32 cp.async + cp.async.mbarrier.arrive.noinc per lane: 32 of
          full[s]'s 33 arrivals, each made when that lane's copies land; the incrementing form raised the pending
          count past the barrier's count, "Barrier overflow" under compute-sanitizer synccheck)
          expect-tx (the last arrival) + 2 TMA (block: + the w scale's box, SCALE_TMA: + the x scales' box);
          mma r (coop: mma 0 and mma 1): wait parity (g // S) & 1 (g = its ring step count)
   empty  mma r: arrive once its slices' wgmmas read slot s (coop: 2 arrivals, one per consumer, each one
          K step late: after wait(1) and the promotion, so a coop consumer holds two slots at a time);
          load r: wait parity ((g // S) & 1) ^ 1
   c_free (C_TILES = 1) consumer of local tile j arrives after its store_wait; tile j + 1's waits
          parity j & 1 (consumer 0: 1, consumer 1: 0): epilogues alternate 0, 1, 0, ...
   vfull  (coop rowcol; count 32) load: cp.async of item i's scales into buffer v = i % 2, then each lane's
          cp.async.mbarrier.arrive.noinc; mma 0 and mma 1, epilogue of item i: wait parity (i // 2) & 1
   vempty (coop rowcol; count 2) mma 0 and mma 1: arrive once they have read buffer v; load, before item i's
          copies: wait parity ((i // 2) & 1) ^ 1 (so the load warp runs at most 2 items ahead of the epilogues)

The K loops of both layouts (chains, promotion, why max_num_imprecise_acc stays at the sm_90 default)
live in hopper_fp8_mainloop.py, the plan (derive, constexprs, tail_plan) in hopper_fp8_plan.py, the parts the
partitions compose (work items, the load partition with its scale staging, the epilogue's stores) in
hopper_fp8_parts.py; this file holds the consumer partition, the kernel (shared memory, barriers, partitions),
the launch and the static-compile cases.

Constraints:
  - sm_90 only (wgmma, TMA, setmaxnreg); x and w float8_e4m3fn; y bf16, fp16 or fp32;
    bias (N,) contiguous (any float dtype).
  - rowcol: x_scale (M,) and w_scale (N,) contiguous fp32. block: x_scale (M, ceil(K / SBK)),
    w_scale (ceil(N / SBN), ceil(K / SBK)) fp32, any strides, each spanning < 2**31 elements
    (int32 offsets); BLOCK_SIZE_K divides SBK and BLOCK_SIZE_N divides SBN. The scales' TMA boxes
    (1-D views of their storage) start on 16-byte boundaries: the x scales' only where `scale_tma_ok`
    (else cp.async), the w scale's from its offset rounded down to 4 (a w_scale whose base is not
    16-byte aligned is copied by the launch); each lands in a 128-byte aligned shared buffer.
  - TMA rules: x, w, y 2-D, unit last stride, 16-byte aligned base and row stride
    (K % 16 == 0; N % 8 == 0 for a 16-bit y, N % 4 for fp32). M, N, K need not be multiples
    of the tile: TMA zero-fills out-of-bounds loads (zeros add nothing) and clips stores. x may hold more rows than
    y (ops/dispatch.py pad_m): M is y's, the scales are read for y's rows, the extra rows are computed and clipped.
    Under one row of tiles (M < BLOCK_SIZE_M) x comes in XBOXES boxes of only its rows (kernels/_host.x_boxes:
    XROWS a power of two >= 8, XBOXES <= 8), into the first rows of each slot: the slot's other rows hold whatever
    shared memory held, and so do the output rows they make, which lie past M and are never stored.
    Block: a ragged last K block (K % SBK != 0) is zero-filled past K; its scale column
    covers what is there.
  - BLOCK_SIZE_M in {64, 128} (pingpong) or {128, 256} (coop) (64-row wgmma slices); BLOCK_SIZE_N a power of two
    in [16, 256]; BLOCK_SIZE_K in {32, 64, 128} (k32 wgmma; <= 128 is the promotion interval);
    (rows + 64 * partials) * BN / 128 <= 192 live accumulator registers per consumer thread (pingpong:
    rows BM, 1 partial; coop 128: rows 64, 2 partials, one chain in flight; coop 256: rows 128, 1 partial; so
    BN <= 128 in coop, as 128 x 256 would need 128 + 256).
  - num_warps 4 (pingpong: a warpgroup per tile) or 8 (coop: two warpgroups on one tile, a half each); NUM_KSPLIT == 1 (split-K runs on the Triton tier; the coop tail split is derived,
    not configured: TAIL * SPLITS <= CTAs, so each CTA runs at most one split, its last work item).
    num_stages is the depth of *each* ring (pingpong two, coop one; upper bound: the most
    that fit beside the output staging, >= 2).
  - PAIR (pingpong): every tile's K steps >= 2 (the launch pairs none with one step); one output staging buffer
    (consumer 0's) beside the BM x BN fp32 exchange buffer, 2 slots a ring at least (`launch_plan` runs the launch
    unpaired where they do not fit: 128 x 128 with an fp32 output or block scales); consumer 1 never stores y.
  - The pingpong layout is compiled with TAIL 0 and SPLITS 1 as constants: passing them as runtime values to
    its partitions aborts Triton 3.6's ConvertTritonGPUToLLVM (an index assertion), and it never splits.
  - With a tail split the fp32 summation order of the tail tiles depends on M, N, K and the SM count (bitwise
    reproducible for one shape on one GPU; not equal to the unsplit result): the op has no switch for it.
  - K >= 1 (the op handles K == 0); M * N tiles < 2**31; GROUP_M, GROUP_S, LAST_M, LAST_S are
    kernels/triton/_schedule.group_magic of its num_pid_m, num_pid_n and GROUP_SIZE_M, or all None.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from ... import configs, launcher
from .. import _budgets
from .. import _host as H
from ..triton import dense
from ..triton._schedule import tail_item
from . import hopper_host as hh
from .hopper_fp8_mainloop import coop_mainloop, pingpong_mainloop
from .hopper_fp8_parts import (LOAD_THREADS, NV_BUFFERS, W_SLOT, first_item, load_partition, pair_put,
                               pair_steps, pair_take, store_scaled_partial, store_y)
from .hopper_parts import item_tile
# The plan lives in hopper_fp8_plan.py; its names are this module's API too (launch, static compiles, tests).
from .hopper_fp8_plan import (CONFIG_KEYS, LAYOUTS, MAX_PROMOTE_K, MIN_TAIL_K, PAIR_MIN_K, SLICE_M,  # noqa: F401
                              VECTOR_BUFFERS, W_SLOT_FLOATS, WS_BOX_FLOATS, Fp8Plan, constexprs, derive, flat_storage,
                              fp8_layout, launch_plan, pair_plan, scale_layout, scale_tma_ok, tail_plan, unsupported)

KERNEL_NAME = "hopper_pingpong_fp8_kernel"

# Checked by `gemmkit isa` (gemmkit/isa/promises.py). fp8 wgmma is QGMMA in SASS (HGMMA is 16-bit).
PROMISES = (
    {"promise": "partitions of 4 + 4 + 1 + 1 (coop: 4 + 4 + 1) warps, padded to warpgroups",
     "check": "num_warps == 12"},
    {"promise": "register cap at entry = 64K / threads, rounded down to 8 (setmaxnreg moves registers within it)",
     "check": "vgpr == 65536 // (num_warps * 32) // 8 * 8"},
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "shared memory within the plan's bound (smem_bytes)", "check": "lds_bytes <= smem_bound"},
    {"promise": "fp8 wgmma (QGMMA) in both consumers, no mma.sync",
     "check": "counts['QGMMA'] > 0 and counts['HMMA'] == 0 and counts['HGMMA'] == 0"},
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the output tile", "check": "counts['UTMASTG'] > 0"},
    # The coop mainloop's speed rests on ptxas keeping wait(1) (hopper_fp8_mainloop.py). Conditional inside the
    # check, not by "when": every case keeps the same number of promises (pingpong: trivially kept).
    {"promise": "coop 128 (num_warps 8, BLOCK_SIZE_M 128): a wgmma chain stays in flight while the previous one is "
                "promoted (ptxas kept wait(1), did not serialize the wgmma)",
     "check": "cfg['num_warps'] != 8 or cfg['BLOCK_SIZE_M'] != 128 or counts['GMMA_WAIT1'] > 0"},
)


# ----------------------------------------------------------------------------- device code (parts: hopper_fp8_parts.py)

@gluon.jit
def _mma_partition(CONSUMER: gl.constexpr, LAYOUT: gl.constexpr, y_desc, xs_ptr, ws_ptr, bias_ptr, a_ring, b_ring,
                   s_ring, w_ring, c_smem, full, empty, c_free, vx_smem, vw_smem, vfull, vempty, xch, xfull, xempty,
                   M, N, K, stride_wsn, stride_wsk, part_ptr, TAIL, SPLITS, magic, BM: gl.constexpr, BK: gl.constexpr,
                   STAGES: gl.constexpr, C_TILES: gl.constexpr, GROUP_SIZE_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                   SCALE: gl.constexpr, SCALE_BN: gl.constexpr, SCALE_BK: gl.constexpr, VEC: gl.constexpr,
                   PAIR: gl.constexpr):
    """1 warpgroup: promoted mainloop, then the epilogue. pingpong: local tiles CONSUMER, CONSUMER + 2, ...,
    all BM rows, from ring CONSUMER. coop: every local work item (a tile, or a tail split's K range of one:
    `tail_item`), its half of the rows (coop 128: 64 CONSUMER .. + 63; coop 256: 128 CONSUMER .. + 127, two slices),
    from the one ring (both consumers wait on each full[s] and
    arrive on each empty[s]); a tail split's epilogue stores its fp32 partial (`store_scaled_partial`), not y. VEC (coop
    rowcol): the epilogue's x / w scales come from the item's vector buffer, staged by the load warp.
    PAIR (pingpong): every local tile, K half CONSUMER from ring CONSUMER (`pair_steps`); consumer 1 hands its
    partial to consumer 0 through xch (`pair_put`), which adds it (`pair_take`) and runs the epilogue alone."""
    BN: gl.constexpr = y_desc.block_type.shape[1]
    SM: gl.constexpr = 64  # SLICE_M
    if LAYOUT == "coop":
        RING: gl.constexpr = 0
        NRINGS: gl.constexpr = 1
        ROW0: gl.constexpr = (BM // 2) * CONSUMER  # this consumer's half of the tile
        TWO: gl.constexpr = BM == 4 * SM  # coop 256: a 128-row half, two slices
    else:
        RING: gl.constexpr = CONSUMER
        NRINGS: gl.constexpr = 2
        ROW0: gl.constexpr = 0
        TWO: gl.constexpr = BM == 2 * SM
    # wgmma accumulator of one 64-row slice: 4 warps along M, instruction m16 x BN x k32 (fp8) per warp.
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 32])
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    k_steps = gl.cdiv(K, BK)
    idx = 0
    phase = 0
    num_tiles = num_pid_m * num_pid_n
    item = 0  # local work items so far (VEC: which vector buffer, which phase; PAIR: the exchange's phase)
    start, stride = first_item(RING, NRINGS, PAIR)
    for w in range(start, num_tiles + TAIL * (SPLITS - 1), stride):
        tile_id, k0, nk, part = tail_item(w, num_tiles, TAIL, SPLITS, k_steps)
        if PAIR:
            k0, nk = pair_steps(k_steps, CONSUMER)
        pid_m, pid_n = item_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M, magic[0], magic[1], magic[2], magic[3])
        ws_row = (pid_n * BN // SCALE_BN) * stride_wsn  # (block) where the slot's w scale sits: _w_pick
        if LAYOUT == "coop" and not TWO:
            acc0, idx, phase = coop_mainloop(a_ring, b_ring, s_ring, w_ring, full, empty, idx, phase, k0, nk, ws_row,
                                              stride_wsk, ROW0, BK, STAGES, SCALE, SCALE_BK, acc_layout)
            acc1 = acc0
        else:  # pingpong, coop 256
            acc0, acc1, idx, phase = pingpong_mainloop(a_ring, b_ring, s_ring, w_ring, full, empty, idx, phase,
                                                        k0, nk, ws_row, stride_wsk, RING, ROW0, TWO, BK, STAGES,
                                                        SCALE, SCALE_BK, acc_layout)
        # Epilogue (pingpong: under the other consumer's mainloop; coop: both halves at once, while the load
        # warp fills the ring with the next work item's K steps).
        offs_m = pid_m * BM + ROW0 + gl.arange(0, SM, layout=gl.SliceLayout(1, acc_layout))
        offs_n = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
        # (rowcol) w_scale and bias once for both slices (64 + 64 registers when loaded per slice: the
        # Triton tier's `epilogue` twice spilled 160 bytes at 128 x 128).
        ws = offs_n.to(gl.float32)  # block: unused (the scales went into the promotion)
        xs = offs_m.to(gl.float32)  # (not VEC) loaded in hopper_fp8_parts._store_slice
        xs1 = xs
        if VEC:
            # Staged by the load warp while the mainloop ran: a shared-memory read here, not a global load's
            # latency after the last chain (docs/PERF.md). Both consumers read, then release it.
            vs = item % vx_smem.shape[0]
            mbarrier.wait(vfull.index(vs), (item // vx_smem.shape[0]) & 1)
            xs = vx_smem.index(vs).slice(ROW0, SM).load(gl.SliceLayout(1, acc_layout))
            if TWO:  # coop 256: the second slice's rows
                xs1 = vx_smem.index(vs).slice(ROW0 + SM, SM).load(gl.SliceLayout(1, acc_layout))
            ws = vw_smem.index(vs).slice(0, BN).load(gl.SliceLayout(0, acc_layout))
            mbarrier.arrive(vempty.index(vs))
            item += 1
        elif SCALE == "rowcol":
            ws = gl.load(ws_ptr + offs_n, mask=offs_n < N, other=0.0)
        bias = ws
        if HAS_BIAS:
            bias = gl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(gl.float32)
        if LAYOUT == "coop":
            if part >= 0:  # a tail split (`tail_item`): its partial goes to the workspace
                store_scaled_partial(part_ptr, acc0, part, ROW0, BM, xs, ws, SCALE)
                if TWO:
                    store_scaled_partial(part_ptr, acc1, part, ROW0 + SM, BM, xs1, ws, SCALE)
            else:
                store_y(y_desc, c_smem, c_free, acc0, acc1, pid_m * BM + ROW0, pid_n * BN, xs_ptr, xs, xs1, ws,
                         bias, offs_m, M, CONSUMER, C_TILES, TWO, HAS_BIAS, SCALE, VEC)
        elif PAIR:
            if CONSUMER == 1:
                pair_put(xch, xfull, xempty, acc0, acc1, item, TWO)
            else:  # the tile's sum, then the epilogue through consumer 0's own staging buffer (C_TILES 2's waits)
                acc0, acc1 = pair_take(xch, xfull, xempty, acc0, acc1, item, TWO)
                store_y(y_desc, c_smem, c_free, acc0, acc1, pid_m * BM + ROW0, pid_n * BN, xs_ptr, xs, xs1, ws, bias,
                         offs_m, M, CONSUMER, 2, TWO, HAS_BIAS, SCALE, VEC)
            item += 1
        else:  # (the host splits coop launches only)
            store_y(y_desc, c_smem, c_free, acc0, acc1, pid_m * BM + ROW0, pid_n * BN, xs_ptr, xs, xs1, ws, bias,
                     offs_m, M, CONSUMER, C_TILES, TWO, HAS_BIAS, SCALE, VEC)
    tma.store_wait(0)


# TMA handles every M, N, K and the scale strides are plain offsets: one compile per config and mode.
@gluon.jit(do_not_specialize=["M", "N", "K", "stride_xsm", "stride_xsk", "stride_wsn", "stride_wsk", "TAIL", "SPLITS",
                               "GROUP_M", "GROUP_S", "LAST_M", "LAST_S"])
def hopper_pingpong_fp8_kernel(x_desc, w_desc, y_desc, xs_desc, ws_desc, xs_ptr, ws_ptr, bias_ptr, M, N, K,
                               stride_xsm, stride_xsk, stride_wsn, stride_wsk, part_ptr, TAIL, SPLITS,
                               GROUP_M, GROUP_S, LAST_M, LAST_S,  # the tile order's division magic (launch)
                               STAGES: gl.constexpr, C_TILES: gl.constexpr, GROUP_SIZE_M: gl.constexpr,
                               HAS_BIAS: gl.constexpr, LAYOUT: gl.constexpr, SCALE: gl.constexpr,
                               SCALE_BN: gl.constexpr, SCALE_BK: gl.constexpr, SCALE_TMA: gl.constexpr,
                               PAIR: gl.constexpr, MMA_REGS: gl.constexpr, LOAD_REGS: gl.constexpr,
                               BM: gl.constexpr, XBOXES: gl.constexpr):
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    if LAYOUT == "coop":
        NRINGS: gl.constexpr = 1
        EMPTY_ARRIVALS: gl.constexpr = 2  # both consumers read every slot (each its half of a)
    else:
        NRINGS: gl.constexpr = 2
        EMPTY_ARRIVALS: gl.constexpr = 1  # the ring's one consumer
    NSLOTS: gl.constexpr = NRINGS * STAGES
    a_ring = gl.allocate_shared_memory(x_desc.dtype, [NSLOTS, BM, BK], x_desc.layout)  # ring r: slots r*S ..
    b_ring = gl.allocate_shared_memory(w_desc.dtype, [NSLOTS, BN, BK], w_desc.layout)
    # (block) the scales of each slot: BM fp32 x scales (s_ring; SCALE_TMA: a TMA box, else cp.async) and 128
    # bytes holding the tile's w scale (w_ring, a TMA box; 128 bytes: a TMA destination starts on a 128-byte
    # boundary), the TMA ones in the layout of their 1-D boxes (unswizzled); 1-element placeholders in rowcol.
    s_layout: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    if SCALE == "block":
        if SCALE_TMA:
            s_ring = gl.allocate_shared_memory(gl.float32, [NSLOTS, BM], xs_desc.layout)
        else:
            s_ring = gl.allocate_shared_memory(gl.float32, [NSLOTS, BM], s_layout)
        w_ring = gl.allocate_shared_memory(gl.float32, [NSLOTS, W_SLOT], ws_desc.layout)
    else:
        s_ring = gl.allocate_shared_memory(gl.float32, [NSLOTS, 1], s_layout)
        w_ring = s_ring
    # Output staging, one y box each (pingpong: BM x BN; coop: BM / 2 x BN, a half per consumer).
    c0 = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    if C_TILES == 2 and not PAIR:
        c1 = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    else:
        c1 = c0  # (PAIR: consumer 1 never stores y)
    full = gl.allocate_shared_memory(gl.int64, [NSLOTS, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [NSLOTS, 1], mbarrier.MBarrierLayout())
    c_free = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    # (coop rowcol) the epilogue's scales of NV work items, staged by the load warp: BM x scales, then
    # max(BN, 32) w scales each (hopper_fp8_plan.vector_bytes); vfull counts the load warp's 32 lanes, vempty
    # both consumers. Elsewhere placeholders, never touched.
    VEC: gl.constexpr = (LAYOUT == "coop") and (SCALE == "rowcol")
    if VEC:
        WSN: gl.constexpr = BN if BN >= LOAD_THREADS else LOAD_THREADS  # a whole copy a lane (plan: vector_bytes)
        vx_smem = gl.allocate_shared_memory(gl.float32, [NV_BUFFERS, BM], s_layout)
        vw_smem = gl.allocate_shared_memory(gl.float32, [NV_BUFFERS, WSN], s_layout)
        vfull = gl.allocate_shared_memory(gl.int64, [NV_BUFFERS, 1], mbarrier.MBarrierLayout())
        vempty = gl.allocate_shared_memory(gl.int64, [NV_BUFFERS, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(NV_BUFFERS):
            mbarrier.init(vfull.index(i), count=LOAD_THREADS)
            mbarrier.init(vempty.index(i), count=EMPTY_ARRIVALS)  # both consumers (VEC: coop)
    else:
        vx_smem = s_ring
        vw_smem = s_ring
        vfull = full
        vempty = empty
    if SCALE == "block" and not SCALE_TMA:
        # the loader's expect-tx arrive (+ the TMA bytes), and one arrive per load-warp lane when that lane's
        # cp.async x-scale copies have landed (cp.async.mbarrier.arrive.noinc: counted here, never incremented)
        FULL_ARRIVALS: gl.constexpr = 1 + LOAD_THREADS
    else:
        FULL_ARRIVALS: gl.constexpr = 1  # the loader's expect-tx arrive (+ the TMA bytes, SCALE_TMA's scales too)
    for i in gl.static_range(NSLOTS):
        mbarrier.init(full.index(i), count=FULL_ARRIVALS)
        mbarrier.init(empty.index(i), count=EMPTY_ARRIVALS)
    mbarrier.init(c_free, count=1)  # (C_TILES == 1) the last store's consumer, after store_wait
    # (PAIR) consumer 1's fp32 partial of a tile, handed to consumer 0: xfull (consumer 1 wrote it), xempty
    # (consumer 0 read it); elsewhere placeholders, never touched
    if PAIR:
        xch = gl.allocate_shared_memory(gl.float32, [BM, BN],
                                        gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0]))
        xfull = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        xempty = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(xfull, count=1)
        mbarrier.init(xempty, count=1)
    else:
        xch = s_ring
        xfull = c_free
        xempty = c_free
    magic = (GROUP_M, GROUP_S, LAST_M, LAST_S)  # (all None: the partitions divide, item_tile)
    if LAYOUT == "coop":
        gl.warp_specialize([
            (_mma_partition, (0, LAYOUT, y_desc, xs_ptr, ws_ptr, bias_ptr, a_ring, b_ring, s_ring, w_ring, c0, full,
                              empty, c_free, vx_smem, vw_smem, vfull, vempty, xch, xfull, xempty, M, N, K,
                              stride_wsn, stride_wsk, part_ptr, TAIL, SPLITS, magic, BM, BK, STAGES, C_TILES,
                              GROUP_SIZE_M, HAS_BIAS, SCALE, SCALE_BN, SCALE_BK, VEC, False)),
            (_mma_partition, (1, LAYOUT, y_desc, xs_ptr, ws_ptr, bias_ptr, a_ring, b_ring, s_ring, w_ring, c1, full,
                              empty, c_free, vx_smem, vw_smem, vfull, vempty, xch, xfull, xempty, M, N, K,
                              stride_wsn, stride_wsk, part_ptr, TAIL, SPLITS, magic, BM, BK, STAGES, C_TILES,
                              GROUP_SIZE_M, HAS_BIAS, SCALE, SCALE_BN, SCALE_BK, VEC, False)),
            (load_partition, (0, 1, x_desc, w_desc, xs_desc, ws_desc, a_ring, b_ring, s_ring, w_ring, full, empty,
                               vx_smem, vw_smem, vfull, vempty, xs_ptr, ws_ptr, M, N, K, stride_xsm, stride_xsk,
                               stride_wsn, stride_wsk, TAIL, SPLITS, magic, STAGES, GROUP_SIZE_M, SCALE, SCALE_BN,
                               SCALE_BK, SCALE_TMA, VEC, False, XBOXES)),
        ], [4, 1], [MMA_REGS, LOAD_REGS])
    else:  # no tail split (tail_plan): TAIL 0 and SPLITS 1 as constants (runtime ones break the pingpong
        # compile in Triton 3.6: an assertion in ConvertTritonGPUToLLVM), no workspace
        gl.warp_specialize([
            (_mma_partition, (0, LAYOUT, y_desc, xs_ptr, ws_ptr, bias_ptr, a_ring, b_ring, s_ring, w_ring, c0, full,
                              empty, c_free, vx_smem, vw_smem, vfull, vempty, xch, xfull, xempty, M, N, K,
                              stride_wsn, stride_wsk, xs_ptr, 0, 1, magic, BM, BK, STAGES, C_TILES, GROUP_SIZE_M,
                              HAS_BIAS, SCALE, SCALE_BN, SCALE_BK, VEC, PAIR)),
            (_mma_partition, (1, LAYOUT, y_desc, xs_ptr, ws_ptr, bias_ptr, a_ring, b_ring, s_ring, w_ring, c1, full,
                              empty, c_free, vx_smem, vw_smem, vfull, vempty, xch, xfull, xempty, M, N, K,
                              stride_wsn, stride_wsk, xs_ptr, 0, 1, magic, BM, BK, STAGES, C_TILES, GROUP_SIZE_M,
                              HAS_BIAS, SCALE, SCALE_BN, SCALE_BK, VEC, PAIR)),
            (load_partition, (0, 2, x_desc, w_desc, xs_desc, ws_desc, a_ring, b_ring, s_ring, w_ring, full, empty,
                               vx_smem, vw_smem, vfull, vempty, xs_ptr, ws_ptr, M, N, K, stride_xsm, stride_xsk,
                               stride_wsn, stride_wsk, 0, 1, magic, STAGES, GROUP_SIZE_M, SCALE, SCALE_BN,
                               SCALE_BK, SCALE_TMA, VEC, PAIR, XBOXES)),
            (load_partition, (1, 2, x_desc, w_desc, xs_desc, ws_desc, a_ring, b_ring, s_ring, w_ring, full, empty,
                               vx_smem, vw_smem, vfull, vempty, xs_ptr, ws_ptr, M, N, K, stride_xsm, stride_xsk,
                               stride_wsn, stride_wsk, 0, 1, magic, STAGES, GROUP_SIZE_M, SCALE, SCALE_BN,
                               SCALE_BK, SCALE_TMA, VEC, PAIR, XBOXES)),
        ], [4, 1, 1], [MMA_REGS, LOAD_REGS, LOAD_REGS])


# ----------------------------------------------------------------------------- host side

# The pairing of a pingpong launch's two consumers on one tile where its tiles are at most one a CTA (`pair_plan`);
# False turns the rule off (benchmarks/ab_configs.py's "_pair": the same config unpaired, for an A/B).
PAIR_SPLIT = True


def launch(x, w, x_scale, w_scale, bias, y, cfg, target, compile_only=False, block_shape=None, tail=None,
           scale_tma=None, pair=None):
    """y = (x @ w.T) * x_scale[:, None] * w_scale[None, :] + bias with this kernel (block_shape None), or
    y = sum_kb (x[:, kb] @ w[:, kb].T) * x_scale[m, kb] * w_scale[n // SBN, kb] + bias (block_shape (SBN, SBK)).

    x (M, K), w (N, K) float8_e4m3fn; rowcol: x_scale (M,), w_scale (N,) contiguous fp32; block: x_scale
    (M, ceil(K / SBK)), w_scale (ceil(N / SBN), ceil(K / SBK)) fp32, any strides; bias (N,) contiguous or
    None; y (M, N). `cfg`: BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps (4 or 8), num_stages (per ring, upper
    bound); `backend`, `persistent`, `tma` accepted and ignored; NUM_KSPLIT must be 1. `target`: a
    gemmkit.arch.Target (num_cus sizes the persistent grid). ValueError when `unsupported` says no.
    `tail`: the coop layout's tail split (`tail_plan`; None: the rule). With one, the kernel stores the last
    round's K-split partials into an fp32 workspace and `kernels.triton.dense.launch_tail_reduce` sums them into y.
    `scale_tma` (block): None copies the x scales by TMA where `scale_tma_ok`, False by cp.async (tests, A/B).
    `pair` (pingpong): both consumers on one tile, each half of K (`pair_plan`; None: the rule, where PAIR_SPLIT).
    """
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    why = unsupported(x, w, y, x_scale, w_scale, target, block_shape)
    if why:
        raise ValueError(f"gluon fp8 ping-pong: {why}")
    M, K = y.shape[0], x.shape[1]  # x may hold rows past y's (ops/dispatch.py's pad_m: computed, then dropped)
    N = w.shape[0]
    if block_shape is None:
        want_xs, want_ws = (M,), (N,)
    else:
        kb = -(-K // block_shape[1])
        want_xs, want_ws = (M, kb), (-(-N // block_shape[0]), kb)
    if (w.shape[1] != K or x.shape[0] < M or tuple(y.shape) != (M, N) or tuple(x_scale.shape) != want_xs or
            tuple(w_scale.shape) != want_ws or (bias is not None and tuple(bias.shape) != (N,))):
        raise ValueError(f"gluon fp8 ping-pong: shapes x {tuple(x.shape)}, w {tuple(w.shape)}, y {tuple(y.shape)}, "
                         f"x_scale {tuple(x_scale.shape)}, w_scale {tuple(w_scale.shape)}, bias "
                         f"{None if bias is None else tuple(bias.shape)} do not fit y = (x @ w.T) * scales + bias "
                         f"(block_shape {block_shape})")
    if K == 0:
        raise ValueError("gluon fp8 ping-pong: K == 0 (the empty sum) is the op's to handle")
    plan = launch_plan(cfg, target, y.element_size(), block_shape, M, N, K,
                       pair if pair is not None or PAIR_SPLIT else False)
    bm, bn, bk = plan.BM, plan.BN, plan.BK
    x_rows, x_boxes = H.x_boxes(bm, M)  # one box of BM rows, or (one row of tiles) those holding x's rows
    x_desc = TensorDescriptor.from_tensor(x, [x_rows, bk], fp8_layout(bm, bk))
    w_desc = TensorDescriptor.from_tensor(w, [bn, bk], fp8_layout(bn, bk))
    ym = plan.consumer_rows if plan.layout == "coop" else bm  # coop: each consumer stores its half
    y_desc = TensorDescriptor.from_tensor(y, [ym, bn], hh.shared_layout(ym, bn, hh.TORCH_NAME[str(y.dtype)]))
    use_tma = block_shape is not None and scale_tma is not False and scale_tma_ok(x_scale)
    if scale_tma and not use_tma:
        raise ValueError("gluon fp8 ping-pong: scale_tma=True needs block x scales that scale_tma_ok accepts")
    xs_desc = ws_desc = x_desc  # placeholders (unused) where no scale comes by TMA
    if use_tma:
        xs_desc = TensorDescriptor.from_tensor(flat_storage(x_scale), [bm], scale_layout())
    if block_shape is not None:
        if w_scale.data_ptr() % hh.TMA_ALIGN:  # a TMA base must be 16-byte aligned: copy it (a few KiB; strides below
            w_scale = w_scale.clone()  # and ws_ptr are the copy's)
        ws_desc = TensorDescriptor.from_tensor(flat_storage(w_scale), [WS_BOX_FLOATS], scale_layout())
    ce = constexprs(plan, has_bias=bias is not None, scale_tma=use_tma, x_boxes=x_boxes)
    num_tiles = -(-M // bm) * -(-N // bn)
    # A CTA per SM, fewer when the tiles are few: one tile on each of 128 SMs beats two on 64 (each
    # consumer alone keeps the tensor cores busy between its promotions only part of the time).
    grid = (max(1, min(num_tiles, target.num_cus)),)
    n_tail, splits = tail_plan(plan, M, N, K, grid[0], tail)
    ce["STAGES"] = hh.ring_stages(ce["STAGES"], K, bk, num_tiles + n_tail * (splits - 1), grid[0])
    part = x_scale  # no tail split: unused
    if n_tail and not compile_only:
        import torch

        part = torch.empty((n_tail * splits * bm, bn), dtype=torch.float32, device=x.device)
    strides = (0, 0, 0, 0) if block_shape is None else (*x_scale.stride(), *w_scale.stride())
    args = (x_desc, w_desc, y_desc, xs_desc, ws_desc, x_scale, w_scale, bias if bias is not None else x_scale, M, N, K,
            *strides, part, n_tail, splits, *hh.tile_magic(-(-M // bm), -(-N // bn), plan.GROUP_SIZE_M))
    launcher.launcher(hopper_pingpong_fp8_kernel, grid, compile_only)(*args, **ce, num_warps=hh.CONSUMER_WARPS)
    if n_tail:
        dense.launch_tail_reduce(part, num_tiles - n_tail, n_tail, splits, bm, bn, plan.GROUP_SIZE_M, bias, y,
                                 target, compile_only)


# ----------------------------------------------------------------------------- static compile (gemmkit isa)

PRESETS = (
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 3},
    {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
     "num_stages": 4},
    # coop (num_warps 8): one 128 x 128 tile, a 64-row half per consumer, one ring (6 slots: 5 in block mode)
    {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 8,
     "num_stages": 6},
    # coop 256: a 128-row half per consumer, 3 slots of 48 KiB (fp32 out: one shared staging buffer)
    {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16, "num_warps": 8,
     "num_stages": 3},
)


def static_spec(cfg: dict, target, *, out_dtype: str = "bf16", has_bias: bool = True, block_shape=None,
                scale_tma: bool = True, pair: bool = False, m: int | None = None):
    """(kernel, signature, constexprs, divisible, options, plan) to compile the kernel for `target` on a CPU.
    Block mode: scale_tma True compiles the TMA copy of the x scales (the fast path, M-major x scales), False the
    cp.async one. pair: the paired pingpong (`pair_plan`). m: a launch's M (None: one of at least BLOCK_SIZE_M rows),
    which under one row of tiles sets x's boxes (kernels/_host.x_boxes)."""
    plan = derive(cfg, target, 4 if out_dtype == "fp32" else 2, block_shape, pair=pair)
    bm, bn, bk = plan.BM, plan.BN, plan.BK
    ym = plan.consumer_rows if plan.layout == "coop" else bm
    use_tma = scale_tma and plan.scale == "block"
    x_rows, x_boxes = H.x_boxes(bm, m) if m else (bm, 1)
    sig = {"x_desc": f"tensordesc<fp8e4nv[{x_rows}, {bk}],{fp8_layout(bm, bk)!r}>",
           "w_desc": f"tensordesc<fp8e4nv[{bn}, {bk}],{fp8_layout(bn, bk)!r}>",
           "y_desc": f"tensordesc<{out_dtype}[{ym}, {bn}],{hh.shared_layout(ym, bn, out_dtype)!r}>",
           "xs_desc": f"tensordesc<fp32[{bm}],{scale_layout()!r}>" if use_tma else
                      f"tensordesc<fp8e4nv[{bm}, {bk}],{fp8_layout(bm, bk)!r}>",
           "ws_desc": f"tensordesc<fp32[{WS_BOX_FLOATS}],{scale_layout()!r}>" if plan.scale == "block" else
                      f"tensordesc<fp8e4nv[{bm}, {bk}],{fp8_layout(bm, bk)!r}>",
           "xs_ptr": "*fp32", "ws_ptr": "*fp32", "bias_ptr": f"*{out_dtype}", "M": "i32", "N": "i32", "K": "i32",
           "stride_xsm": "i32", "stride_xsk": "i32", "stride_wsn": "i32", "stride_wsk": "i32",
           "part_ptr": "*fp32", "TAIL": "i32", "SPLITS": "i32",
           # the tile order's division magic (launch, hopper_host.tile_magic)
           "GROUP_M": "u32", "GROUP_S": "i32", "LAST_M": "u32", "LAST_S": "i32"}
    ce = constexprs(plan, has_bias=has_bias, scale_tma=use_tma, x_boxes=x_boxes)
    sig.update({k: "constexpr" for k in ce})
    return (hopper_pingpong_fp8_kernel, sig, ce, ["xs_ptr", "ws_ptr", "bias_ptr", "part_ptr"],
            {"num_warps": hh.CONSUMER_WARPS}, plan)


# The decode tile (configs/model/base.py SMALL_PINGPONG over the fp8 tables' Gluon keys) as the paired pingpong runs it
PAIR_PRESET = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "num_warps": 4,
               "num_stages": 6}

BLOCK_SHAPE = (128, 128)  # the block-scale mode's static cases: DeepSeek-V3's (and the op's default) blocks


def _shipped_configs(arch: str, blockscale: bool = False):
    """(table, bucket, config) of every A8W8 (blockscale: A8W8_BLOCKSCALE) table bucket of `arch` with
    "backend": "gluon"."""
    if blockscale:
        return [(t, b, c) for t, b, c in hh.shipped_gluon_configs(arch) if t.startswith("A8W8_BLOCKSCALE")]
    return [(t, b, c) for t, b, c in hh.shipped_gluon_configs(arch) if t.startswith("A8W8") and
            not t.startswith(("A8W8_INT8", "A8W8_BLOCKSCALE"))]


def isa_cases(archs, op: str = "hopper_pingpong_fp8"):
    """Static cases for sm_90: every shipped A8W8 bucket with backend "gluon" (path gluon-bf16) and every
    A8W8_BLOCKSCALE one (gluon-block-bf16: block scales (128, 128), no bias, as gemm_a8w8_blockscale runs
    it), plus PRESETS (bf16 and fp32 out), in both modes."""
    if "sm_90" not in archs:
        return
    cases = [(t, b, c, "bf16") for t, b, c in _shipped_configs("sm_90")]
    cases += [(t, b, c, "block-bf16") for t, b, c in _shipped_configs("sm_90", blockscale=True)]
    # the config model's own tiles (configs.model_configs: the 64 x 64 ping-pong at 64 < M <= 256)
    cases += [(f"{op_.upper()}.json", name, c, mode) for op_, mode in (("a8w8", "bf16"), ("a8w8_blockscale",
                                                                                      "block-bf16"))
              for name, c in configs.model_configs(op_, "sm_90") if c.get("backend") == "gluon"]
    cases += [("-", f"preset{i}", c, o) for i, c in enumerate(PRESETS) for o in ("bf16", "fp32")]
    # Block mode: every preset (the pingpong 128 x 128 spilled in block mode before its promotion became inline PTX).
    cases += [("-", f"preset{i}", PRESETS[i], o) for i in range(len(PRESETS)) for o in ("block-bf16", "block-fp32")]
    # The paired pingpong (`pair_plan`: at most a tile a CTA), as the config model's decode tile runs it
    cases += [("-", "pair", PAIR_PRESET, o) for o in ("pair-bf16", "pair-block-bf16")]
    # x in the boxes that hold its rows (one row of tiles: kernels/_host.x_boxes), the decode tile paired and not
    # (M = 24: three boxes of 8 rows; 40: five), and the coop 128 at M = 72 (three of 32)
    cases += [("-", o.split("-")[0], c, o) for c, o in ((PAIR_PRESET, "rows24-bf16"), (PAIR_PRESET, "rows24-block-bf16"),
                                                        (PAIR_PRESET, "rows40-pair-bf16"),
                                                        (PAIR_PRESET, "rows40-pair-block-bf16"),
                                                        (PRESETS[2], "rows72-bf16"), (PRESETS[2], "rows72-block-bf16"))]
    yield from hh.unique_cases(cases, KERNEL_NAME, op)


def isa_spec(case):
    from ... import arch as _arch

    target = _arch.ARCHS[case["arch"]]
    # path gluon-[block-[cpasync-]]<out dtype>: block scales, copied by TMA (what gemmkit.quant's scales take) or,
    # with "cpasync", the x scales by cp.async (row-major or unaligned x_scale; not in isa_cases, tested directly)
    out = case["path"].split("-", 1)[1] if case["path"].startswith("gluon-") else "bf16"
    m = None
    if out.startswith("rows"):  # rows<M>-...: x's boxes those of M rows
        rows, out = out.split("-", 1)
        m = int(rows.removeprefix("rows"))
    pair = out.startswith("pair-")
    out = out.removeprefix("pair-")
    block = out.startswith("block-")
    # rowcol: with a bias, unless the installed Triton's budget sends those calls to the Triton tier
    epilogue, passed = _budgets.isa_epilogue(KERNEL_NAME, case["config"], out.split("-")[-1],
                                             default=(not block, "none"), scale="block" if block else "rowcol")
    kernel, sig, ce, div, opts, plan = static_spec(case["config"], target, out_dtype=out.split("-")[-1],
                                                   has_bias=(epilogue or (False,))[0],
                                                   block_shape=BLOCK_SHAPE if block else None,
                                                   scale_tma="cpasync" not in out, pair=pair, m=m)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=PROMISES,
                block=(plan.BM, plan.BN, plan.BK), smem_bound=plan.smem_bytes, **hh.budget_note(passed, epilogue))
