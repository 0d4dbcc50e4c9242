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
mapped by the grouped order, `tile_coords` of kernels/triton/_schedule.py; drawn
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

   full[s]   stage s holds step g, s = g % S      load: expect-tx + 2 TMA (split tile: 4); mma: wait parity (g // S) & 1
   empty[s]  stage s may be refilled              mma: arrive after wgmma;    load: wait parity ((g // S) & 1) ^ 1
   turn[c]   consumer c may issue its mainloop    other consumer: arrive;     c, its n-th tile:
                                                  wait parity (n & 1) ^ 1 (c = 0) or n & 1 (c = 1)
   c_free    (C_TILES = 1) tile j's TMA store   consumer of tile j: store_wait(0), arrive;
             has read the shared c            consumer of tile j + 1 waits parity j & 1 before
                                              writing c (consumer 0: parity 1, consumer 1: 0)
   A fresh mbarrier counts as having completed the phase before phase 0, so the
   first waits of the loader on empty[s] and of consumer 0 on turn[0] / c_free pass at once.

Why the turn barrier is needed for correctness, not only for speed: an mbarrier
wait matches a phase by its parity, so it is only exact when the barrier is at
most one phase away. The turn order makes a consumer start a tile only after the
other consumer has waited on every full[s] of the previous tile, so full[s] is
never two phases behind the consumer that waits on it.

Split tiles (BLOCK_SIZE_N 192 or 96 = 3 T; 64 x 192, 64 x 96 and 128 x 96 fit the accumulator budget; shared
with hopper_coop.py, whose docstring
draws them): register and shared-memory tensors and TMA boxes are powers of two, so the consumer keeps two
accumulators (BM x 2T and BM x T, `_split_mainloop`: two wgmma per K step), the loader puts three T-row w
boxes per stage into b[s] (2T rows) and t[s] (T rows), and the epilogue stores three BM x T sub-tiles through
a BM x T staging tile per consumer (`store_split`; always two staging tiles). 64 x 192 fits the 132 SMs
where 128 x 128 does not (Llama-3-8B qkv at M = 256: 128 tiles against 96). Dense kernel only.

Split-K (NUM_KSPLIT > 1; dense kernels only, this one and hopper_coop.py; `hopper_host.launch_dense`): the
work ids cover splits x tiles, split-major (`batched_tile_coords` with the split as the entry), and split s runs K steps
[s q, (s + 1) q), q = cdiv(cdiv(K, BK), splits) for every split (equal, so a consumer's ring position is still
local item x q; the last range may run past K into TMA's zero fill). Its fp32 partial tile goes to row
(s * cdiv(M, BM) + pid_m) * BM of a workspace of whole-tile slabs; the Triton tier's split-K reduce then sums
the slabs in order and applies bias / activation / cast (bitwise reproducible)::

   work id  0 ...... T-1 | T ...... 2T-1 | ...        workspace (fp32)   ┌ slab 0: cdiv(M, BM) * BM rows ┐
            split 0      | split 1       |                               ├ slab 1                        ┤ -> reduce -> y
            K steps [0, q)  [q, 2q)   ...                                 └ ...                           ┘

Swap-AB (config key "swap_ab", dense kernel only; SWAP): at decode sizes a token tile of 16-64 rows wastes most of
a wgmma's m64, and cuBLAS runs its M = 1 GEMMs with the weight as the wgmma's M (nvjet ..._256x8_...). The config
still names y's BLOCK_SIZE_M (tokens) x BLOCK_SIZE_N (weight rows) tile; `derive` plans the kernel's tile as its
transpose, BM = BLOCK_SIZE_N weight rows (64 / 128) x BN = BLOCK_SIZE_M tokens, and `launch` passes w as the
kernel's x and x as its w (their boxes: BM x BK of w, BN x BK of x, token rows past M zero-filled). The partitions
run unchanged; the epilogue permutes the accumulator (a layout change, no data moves), adds the bias along its
columns (the weight rows) and stores the BN x BM tile at y[tokens, weight rows] (TMA clips token rows past M)::

   kernel tile (BM w rows x BN tokens)         y (M tokens, N)
   acc = w[rows] @ x[tokens]^T  ──permute──►   c_smem (BN x BM) ──TMA──► y[pid_n BN .., pid_m BM ..]

GROUP_SIZE_M then groups the kernel's rows, the weight tiles (1 in the shipped buckets: each weight tile's token
tiles run back to back, so the weight is read once and the small x from L2).

Measured on the H200 (docs/PERF.md): faster than the tables' unswapped tiles on most model layers
at M <= 64 (up to 1.7x where few weight tiles starved the SMs), 1-5% slower at M < 64 on the widest rows
(N >= 10240), whose tables keep their tiles there.

NUM_KSPLIT is an upper bound: `hopper_host.fit_split_k` keeps splits x tiles within one wave of the SMs (one
item a CTA) and runs no split where the tiles alone fill them, so a bucket tuned at one M does not go to two waves at a
larger M of the same bucket.

Register split (setmaxnreg): see `derive`. Epilogue math is the Triton tier's
(`bias_activation` in kernels/triton/_epilogue.py, a @triton.jit function that a
@gluon.jit kernel can call in Triton 3.6), and so is the tile order.

The partitions serve both kernels: `BATCHED` is a constexpr, so the dense kernel compiles
to the same SASS as before batching existed (compared byte for byte on sm_90, Triton 3.6).
In the batched consumer the tile's coordinates are computed after its mainloop, not before
(live across it, they made a bias + gelu epilogue spill 8 bytes in consumer 1).

Constraints:
  - sm_90 only (wgmma, TMA, setmaxnreg); bf16 or fp16 x and w, same dtype; y bf16, fp16 or fp32.
  - TMA rules: x, w, y 2-D, unit last stride, 16-byte aligned base and row stride
    (K % 8 == 0, N % 8 == 0 for a 16-bit y, N % 4 for fp32). M, N, K need not be
    multiples of the tile: TMA zero-fills out-of-bounds loads and clips stores.
  - BLOCK_SIZE_M in {64, 128} (one wgmma warpgroup covers 64-row slices);
    BLOCK_SIZE_N a power of two in [16, 256], or a split tile 96 / 192 (`configs.split_tail`; the dense
    kernel only); BLOCK_SIZE_K a power of two in [16, 128]; accumulator BM * BN / 128 <= 128
    fp32 registers per thread (64 x 192: 96; 128 x 192 does not fit).
  - num_warps == 4 (warps per consumer warpgroup; the kernel adds the second
    consumer and the load warp). NUM_KSPLIT >= 1, an upper bound (`hopper_host.fit_split_k`; the dense
    kernel only). num_stages is an upper bound:
    the ring gets num_stages stages beside two output tiles if they fit, else the
    most stages (>= 2, <= num_stages) beside one shared output tile.
  - K >= 1 (the op handles K == 0); M * N tiles < 2**31 (batched: B * tiles < 2**31).
  - swap_ab (dense kernel only): BLOCK_SIZE_N (the weight rows) 64 or 128, BLOCK_SIZE_M (tokens) a power of two
    in [16, 256] within the accumulator budget, NUM_KSPLIT 1, no split tile; the TMA rules as above (x is then
    the kernel's w operand: any M >= 1).
  - Batched (hopper_pingpong_batched.py): the same, with x, w, y 3-D under TMA's rules
    (batch stride a multiple of 16 bytes, entries not overlapping: no stride-0 batch).
"""
from __future__ import annotations

from dataclasses import dataclass

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_init, warpgroup_mma_wait)

from ...configs import SPLIT_N, split_tail  # noqa: F401  (split_tail: hopper_coop.py reads it here too)
from ..triton._epilogue import ACTIVATIONS, bias_activation
from ..triton._schedule import batched_tile_coords, tile_coords
from . import hopper_host as hh

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

# ----------------------------------------------------------------------------- the plan (one place)

_REG_FILE = 65536  # 32-bit registers per SM
_LOAD_WARPS = 1
_LOAD_REGS = 24  # registers per thread of the load warpgroup (the minimum): scalars and descriptors only
_BARRIER_SLACK = 1024  # mbarriers (8 B each) and alignment; compiled kernels use ~250 B
_MAX_ACC_REGS = 128  # fp32 accumulator registers per consumer thread that leave room for the epilogue
COOP_WARPS = 2 * hh.CONSUMER_WARPS  # a "backend": "gluon" config's num_warps: 4 = a warpgroup per tile (this
# kernel), 8 = two warpgroups on one tile (the cooperative layout: hopper_coop.py, hopper_pingpong_fp8.py)


def is_coop(cfg: dict) -> bool:
    """Whether a "backend": "gluon" config asks for the cooperative layout (num_warps 8): the rule of
    gemm_a16w16's dispatch, the tuner (prune, pick_candidates, the batched space), the isa cases and
    the batched op (hopper_pingpong_batched.kernel_plan); the fp8 kernel's LAYOUTS use the same numbers."""
    return cfg.get("num_warps") == COOP_WARPS


@dataclass(frozen=True)
class Plan:
    BM: int
    BN: int
    BK: int
    GROUP_SIZE_M: int
    stages: int  # ring depth actually used
    stage_bytes: int  # one (a, b) ring slot
    c_tiles: int  # output staging tiles: 2 (one per consumer) or 1 (shared, handed over by c_free)
    epilogue_bytes: int  # c_tiles * BM * BN * out_bytes
    smem_bytes: int  # upper bound on the kernel's shared memory
    warps: int  # warps the CTA runs (partitions padded to warpgroups)
    regs_at_entry: int  # per thread, the kernel's .maxnreg
    mma_regs: int  # per consumer thread after setmaxnreg
    load_regs: int  # per load-warpgroup thread after setmaxnreg
    acc_regs: int  # fp32 accumulator registers per consumer thread
    swizzle_a: int  # NVMMA shared-layout swizzle bytes of the a / b ring slots and the y staging tile
    swizzle_b: int
    swizzle_c: int
    BN_TAIL: int = 0  # a split tile (BN 96 / 192 = 3 T, see `split_tail`): T; 0 for a power-of-two BN
    w_box: int = 0  # rows of the w TMA box: BN, or T for a split tile
    split_k: int = 1  # NUM_KSPLIT: K split into this many ranges, fp32 partial tiles, then a fixed-order reduce
    swap: bool = False  # swap_ab: BM x BN is y's BN x BM tile transposed (BM weight rows, BN tokens; "Swap-AB")


def _swizzle(inner_bytes: int) -> int:
    """NVMMASharedLayout.get_default_for's choice for a tile whose contiguous row is inner_bytes."""
    for sw in (128, 64, 32):
        if inner_bytes >= sw and inner_bytes % sw == 0:
            return sw
    return 0


def _pow2(v) -> bool:
    return isinstance(v, int) and v > 0 and v & (v - 1) == 0


def check_config(cfg: dict, backend: str, kernel: str, bm_why: str, split_ok: bool = False,
                 split_k_ok: bool = False, swap_ok: bool = False):
    """The checks every Hopper Gluon kernel's `derive` makes of a config (this one's and
    hopper_pingpong_fp8's): every hh.CONFIG_KEYS key present, no other key but the ignored ones, no
    split-K (unless `split_k_ok`: the dense bf16 kernels), no swap_ab (unless `swap_ok`: this kernel, whose
    `derive` passes the kernel's tile, already transposed), BLOCK_SIZE_M 64 or 128, BLOCK_SIZE_N a power of
    two in [16, 256] (or, `split_ok`, a split tile), num_warps 4 (one consumer warpgroup), GROUP_SIZE_M >= 1. Returns (BM, BN, BK); BLOCK_SIZE_K
    is each kernel's own."""
    for key in hh.CONFIG_KEYS:
        if key not in cfg:
            raise ValueError(f"config: missing key {key!r} for the {backend} backend")
    unknown = set(cfg) - set(hh.CONFIG_KEYS) - set(hh.IGNORED_KEYS)
    if unknown:
        raise ValueError(f"config: keys {sorted(unknown)} do not apply to {kernel}")
    if cfg.get("NUM_KSPLIT", 1) != 1 and not split_k_ok:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']}; {kernel} needs 1")
    if cfg.get("swap_ab") and not swap_ok:
        raise ValueError(f"config: key 'swap_ab' = true; {kernel} has no transposed tile (the ping-pong has)")
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    if bm not in (64, 128):
        raise ValueError(f"config: key 'BLOCK_SIZE_M' = {bm}; the {backend} backend needs 64 or 128 {bm_why}")
    if not ((_pow2(bn) and 16 <= bn <= 256) or (split_ok and bn in SPLIT_N)):
        raise ValueError(f"config: key 'BLOCK_SIZE_N' = {bn}; expected a power of two in [16, 256]"
                         + (f" (or a split tile {SPLIT_N})" if split_ok else ""))
    if cfg["num_warps"] != hh.CONSUMER_WARPS:
        raise ValueError(f"config: key 'num_warps' = {cfg['num_warps']}; the {backend} backend needs 4 "
                         "(warps per consumer warpgroup)")
    if not (isinstance(cfg["GROUP_SIZE_M"], int) and cfg["GROUP_SIZE_M"] >= 1):
        raise ValueError(f"config: key 'GROUP_SIZE_M' = {cfg['GROUP_SIZE_M']!r}; expected an integer >= 1")
    return bm, bn, bk


def derive(cfg: dict, target=None, in_bytes: int = 2, out_bytes: int = 2) -> Plan:
    """Everything the kernel and its launch need, from one config. ValueError names the key that cannot work.

    Derivation (H200 numbers: 227 KiB of shared memory per block, 64 K registers per SM):
      tile     BM x BN per consumer; one warpgroup issues wgmma m64nBNk16, BM / 64 of them per
               k16 slice; accumulator BM * BN fp32 over 128 threads = BM * BN / 128 registers
               (128 x 128: 128 regs).
      ring     stage_bytes = (BM + BN) * BK * in_bytes (128 x 128 x 64 bf16: 32 KiB);
               output tile = BM * BN * out_bytes (bf16: 32 KiB, fp32: 64 KiB). Two tiles (one per
               consumer) when num_stages stages fit beside them, else one shared tile and
               stages = min(num_stages, (smem - tile - slack) // stage_bytes), at least 2.
               128 x 128 x 64 bf16 out: num_stages <= 5 -> 2 tiles; 6 -> 1 tile, 6 stages.
               fp32 out: 3 stages beside 2 tiles, 4 beside 1.
      warps    4 (consumer 0, the default partition) + 4 (consumer 1) + 1 (load), each
               partition padded to a warpgroup for register allocation: 12 warps, 384 threads.
      regs     at entry: 65536 / 384 = 170 -> 168 (multiple of 8) per thread, the kernel's cap;
               setmaxnreg then gives the load warpgroup 24 (the minimum; its code needs < 24) and
               each consumer (168 * 384 - 24 * 128) / 256 = 240. (CUTLASS's ping-pong uses 40 / 232;
               with 232 the default partition spilled 4 bytes under a gelu epilogue, with 240 none.)
      swizzle  the largest of 128/64/32 bytes dividing a tile row (BK * 2 = 128 B: 128-byte
               swizzle, conflict-free for TMA writes and wgmma reads).
    """
    swap = bool(cfg.get("swap_ab"))
    if swap:  # the config names y's tile (tokens x weight rows); the kernel's is its transpose ("Swap-AB")
        tokens, rows = cfg.get("BLOCK_SIZE_M"), cfg.get("BLOCK_SIZE_N")
        if cfg.get("NUM_KSPLIT", 1) != 1:
            raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']} with 'swap_ab'; the transposed tile "
                             "has no split-K")
        if rows not in (64, 128):
            raise ValueError(f"config: key 'BLOCK_SIZE_N' = {rows} with 'swap_ab'; the weight rows are the wgmma's "
                             "M: 64 or 128")
        if not (_pow2(tokens) and 16 <= tokens <= 256):
            raise ValueError(f"config: key 'BLOCK_SIZE_M' = {tokens} with 'swap_ab'; the tokens are the wgmma's N: "
                             "a power of two in [16, 256]")
        if tokens * rows // (32 * hh.CONSUMER_WARPS) > _MAX_ACC_REGS:
            raise ValueError(f"config: BLOCK_SIZE_M x BLOCK_SIZE_N = {tokens} x {rows} with 'swap_ab' needs "
                             f"{tokens * rows // (32 * hh.CONSUMER_WARPS)} accumulator registers per thread; the "
                             f"gluon backend allows {_MAX_ACC_REGS}")
        cfg = {**cfg, "BLOCK_SIZE_M": rows, "BLOCK_SIZE_N": tokens}  # the kernel's tile from here on
    bm, bn, bk = check_config(cfg, "gluon", "the gluon ping-pong kernel", "(wgmma rows)", split_ok=not swap,
                              split_k_ok=True, swap_ok=True)
    out_bytes = hh.split_k_out_bytes(cfg, out_bytes)
    if not (_pow2(bk) and 16 <= bk <= 128):
        raise ValueError(f"config: key 'BLOCK_SIZE_K' = {bk}; expected a power of two in [16, 128]")
    acc_regs = bm * bn // (32 * hh.CONSUMER_WARPS)
    if acc_regs > _MAX_ACC_REGS:
        raise ValueError(f"config: BLOCK_SIZE_M x BLOCK_SIZE_N = {bm} x {bn} needs {acc_regs} accumulator "
                         f"registers per thread; the gluon backend allows {_MAX_ACC_REGS}")
    smem = target.shared_mem_bytes if target is not None else 232448
    stage_bytes = (bm + bn) * bk * in_bytes
    tail = split_tail(bn)
    tile_bytes = bm * (tail or bn) * out_bytes  # a split tile stages one BM x T sub-tile at a time
    c_tiles = 2 if tail or (smem - 2 * tile_bytes - _BARRIER_SLACK) // stage_bytes >= cfg["num_stages"] else 1
    epilogue_bytes = c_tiles * tile_bytes
    fit = (smem - epilogue_bytes - _BARRIER_SLACK) // stage_bytes
    stages = min(cfg["num_stages"], fit)
    if stages < 2:
        raise ValueError(f"config: {bm} x {bn} x {bk} leaves room for {fit} ring stage(s) beside the "
                         f"{epilogue_bytes}-byte output tile ({out_bytes}-byte output); the ring needs 2")
    warps = 2 * hh.CONSUMER_WARPS + 4 * -(-_LOAD_WARPS // 4)
    regs_at_entry = _REG_FILE // (warps * 32) // 8 * 8
    mma_regs = (regs_at_entry * warps * 32 - _LOAD_REGS * 128) // (2 * 128) // 8 * 8
    return Plan(BM=bm, BN=bn, BK=bk, GROUP_SIZE_M=cfg["GROUP_SIZE_M"], stages=stages, stage_bytes=stage_bytes,
                c_tiles=c_tiles, epilogue_bytes=epilogue_bytes,
                smem_bytes=stages * stage_bytes + epilogue_bytes + _BARRIER_SLACK,
                warps=warps, regs_at_entry=regs_at_entry, mma_regs=mma_regs, load_regs=_LOAD_REGS,
                acc_regs=acc_regs, swizzle_a=_swizzle(bk * in_bytes), swizzle_b=_swizzle(bk * in_bytes),
                swizzle_c=_swizzle((bm if swap else tail or bn) * out_bytes), BN_TAIL=tail, w_box=tail or bn,
                split_k=cfg.get("NUM_KSPLIT", 1), swap=swap)


def constexprs(plan: Plan, *, has_bias: bool, activation: str) -> dict:
    """The kernel's constexpr arguments (one place for the launch and the static compile)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    return dict(STAGES=plan.stages, C_TILES=plan.c_tiles, GROUP_SIZE_M=plan.GROUP_SIZE_M, HAS_BIAS=has_bias,
                ACTIVATION=activation, MMA_REGS=plan.mma_regs, LOAD_REGS=plan.load_regs)


def dense_constexprs(plan, *, has_bias: bool, activation: str) -> dict:
    """The dense kernels' constexprs beyond a kernel's `constexprs` (this one's and hopper_coop's): the tile
    width BN (the w box is BN / 3 rows for a split tile) and SPLIT_K (work ids over splits x tiles, partial
    tiles stored to the fp32 workspace: `hopper_host.launch_dense`). The bias and activation of a split-K call are the
    reduce's, so its GEMM launch has neither."""
    split = plan.split_k > 1
    return {"BN": plan.BN, "SPLIT_K": split, "HAS_BIAS": has_bias and not split,
            "ACTIVATION": "none" if split else activation}


def kernel_constexprs(plan: Plan, *, has_bias: bool, activation: str) -> dict:
    """hopper_pingpong_kernel's: `constexprs`, `dense_constexprs` and SWAP (the transposed tile)."""
    return {**constexprs(plan, has_bias=has_bias, activation=activation),
            **dense_constexprs(plan, has_bias=has_bias, activation=activation), "SWAP": plan.swap}


def y_box(plan: Plan) -> tuple:
    """The y TMA box = a consumer's staging tile: the whole BM x BN tile, BM x T for a split tile, or (swap) the
    tile transposed, BN tokens x BM weight rows."""
    if plan.swap:
        return (plan.BN, plan.BM)
    return (plan.BM, plan.BN_TAIL or plan.BN)


# ----------------------------------------------------------------------------- device code

@gluon.jit
def _ring_next(idx, phase, STAGES: gl.constexpr):
    """Advance a (slot, phase) counter of the ring by one step."""
    idx += 1
    wrap = idx == STAGES
    return gl.where(wrap, 0, idx), gl.where(wrap, phase ^ 1, phase)


@gluon.jit
def _ring_prev(idx, STAGES: gl.constexpr):
    """The slot one step before `idx`. Computed, not remembered: a Python name that aliases a loop
    variable at loop entry (`prev = idx`) is not loop-carried in Triton 3.6's frontend (its dry run
    compares values by identity), and such a `prev` silently stays the tile's first slot."""
    return gl.where(idx == 0, STAGES - 1, idx - 1)


@gluon.jit
def _num_work(num_pid_m, num_pid_n, B, BY_ENTRY: gl.constexpr):
    """Work ids of a launch: tiles, or B x tiles (BY_ENTRY: batch entries, or K splits with B = SPLITS)."""
    if BY_ENTRY:
        return B * num_pid_m * num_pid_n
    else:
        return num_pid_m * num_pid_n


@gluon.jit
def _split_steps(K, BK: gl.constexpr, SPLITS, SPLIT_K: gl.constexpr):
    """K steps per work item: all of K, or (SPLIT_K) one of SPLITS equal ranges of cdiv(cdiv(K, BK), SPLITS)
    steps. Equal, so a consumer's ring position stays (local item) x (steps); the last range may run past
    K, where TMA zero-fills the boxes (adding zeros). The host makes every range start below K
    (`hopper_host.split_count`)."""
    k_steps = gl.cdiv(K, BK)
    if SPLIT_K:
        k_steps = gl.cdiv(k_steps, SPLITS)
    return k_steps


@gluon.jit
def _work_space(M, N, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, B, BATCHED: gl.constexpr,
                SPLIT_K: gl.constexpr):
    """What every partition of a launch iterates over, in one place: (num_pid_m, num_pid_n, num_work, k_steps)
    with work ids over tiles, or over B x tiles when B counts batch entries (BATCHED) or K splits (SPLIT_K),
    and the K steps of one work item (`_split_steps`). The load and consumer partitions of this kernel,
    hopper_coop's and the batched kernels' call it, so their loops agree by construction."""
    num_pid_m = gl.cdiv(M, BM)
    num_pid_n = gl.cdiv(N, BN)
    num_work = _num_work(num_pid_m, num_pid_n, B, BATCHED or SPLIT_K)
    k_steps = _split_steps(K, BK, B, SPLIT_K)
    return num_pid_m, num_pid_n, num_work, k_steps


@gluon.jit
def _out_row(b, pid_m, num_pid_m, BM: gl.constexpr, SPLIT_K: gl.constexpr):
    """A tile's first output row: pid_m * BM, or (SPLIT_K) that row in split b's slab of the fp32 workspace.
    The slabs are num_pid_m * BM rows (whole tiles): a tile's rows past M stay inside its own slab, which
    TMA's clipping at the workspace's last row alone would not ensure."""
    if SPLIT_K:
        return (b * num_pid_m + pid_m) * BM
    else:
        return pid_m * BM


@gluon.jit
def _work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M: gl.constexpr, BATCHED: gl.constexpr):
    """Work id -> (batch entry, pid_m, pid_n), the Triton tier's order (kernels/triton/_schedule.py): grouped
    tiles (`tile_coords`), batch-major over B x tiles when BATCHED (`batched_tile_coords`); entry 0 if not."""
    if BATCHED:
        b, pid_m, pid_n = batched_tile_coords(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
    else:
        pid_m, pid_n = tile_coords(work_id, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
        b = 0
    return b, pid_m, pid_n


@gluon.jit
def _load_partition(x_desc, w_desc, a_ring, b_ring, full, empty, M, N, K,
                    STAGES: gl.constexpr, GROUP_SIZE_M: gl.constexpr, B=1, BATCHED: gl.constexpr = False,
                    t_ring=None, SPLIT_K: gl.constexpr = False):
    """1 warp: for every K step of every tile of this CTA, wait for the slot, then TMA x and w into it.
    BATCHED: 3-D descriptors (B, rows, K) with boxes [1, rows, BK], written through a 3-D view of the
    2-D ring slot (same bytes, same swizzle: the consumers read the slot as before).
    t_ring (a split tile, this kernel's or hopper_coop.py's, 2-D only): a tile of BN = 3 T columns keeps w rows
    [0, 2T) in b_ring and [2T, 3T) in t_ring (shared-memory shapes are powers of two); the w box is T rows,
    3 per step, and full[s] expects x's box + 3 w boxes.
    SPLIT_K (dense only): B is the number of K splits; work id -> (split b, tile) as the batched order, and
    split b loads K steps [b * k_steps, (b + 1) * k_steps) (`_split_steps`)."""
    BM: gl.constexpr = a_ring.shape[1]
    BK: gl.constexpr = a_ring.shape[2]
    if t_ring is None:
        BN: gl.constexpr = b_ring.shape[1]
        W_BYTES: gl.constexpr = w_desc.block_type.nbytes
    else:
        T: gl.constexpr = t_ring.shape[1]
        BN: gl.constexpr = 3 * T
        W_BYTES: gl.constexpr = 3 * w_desc.block_type.nbytes
    BY_ENTRY: gl.constexpr = BATCHED or SPLIT_K
    num_pid_m, num_pid_n, num_work, k_steps = _work_space(M, N, K, BM, BN, BK, B, BATCHED, SPLIT_K)
    idx = 0
    phase = 0
    for work_id in range(gl.program_id(0), num_work, gl.num_programs(0)):
        b, pid_m, pid_n = _work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, BY_ENTRY)
        if SPLIT_K:
            k0 = b * k_steps
        else:
            k0 = 0
        for kk in range(k0, k0 + k_steps):
            mbarrier.wait(empty.index(idx), phase ^ 1)  # round 0 passes: fresh barrier
            bar = full.index(idx)
            mbarrier.expect(bar, x_desc.block_type.nbytes + W_BYTES)
            if BATCHED:
                tma.async_copy_global_to_shared(x_desc, [b, pid_m * BM, kk * BK], bar,
                                                a_ring.index(idx).reshape([1, BM, BK]))
                tma.async_copy_global_to_shared(w_desc, [b, pid_n * BN, kk * BK], bar,
                                                b_ring.index(idx).reshape([1, BN, BK]))
            elif t_ring is None:
                tma.async_copy_global_to_shared(x_desc, [pid_m * BM, kk * BK], bar, a_ring.index(idx))
                tma.async_copy_global_to_shared(w_desc, [pid_n * BN, kk * BK], bar, b_ring.index(idx))
            else:
                tma.async_copy_global_to_shared(x_desc, [pid_m * BM, kk * BK], bar, a_ring.index(idx))
                tma.async_copy_global_to_shared(w_desc, [pid_n * BN, kk * BK], bar, b_ring.index(idx).slice(0, T))
                tma.async_copy_global_to_shared(w_desc, [pid_n * BN + T, kk * BK], bar, b_ring.index(idx).slice(T, T))
                tma.async_copy_global_to_shared(w_desc, [pid_n * BN + 2 * T, kk * BK], bar, t_ring.index(idx))
            idx, phase = _ring_next(idx, phase, STAGES)


@gluon.jit
def _split_mainloop(a_ring, b_ring, t_ring, full, empty, idx, phase, k_steps, STAGES: gl.constexpr,
                    A_ROW0: gl.constexpr, BM: gl.constexpr):
    """A split tile's mainloop (this kernel's and hopper_coop.py's), from ring slot (idx, phase): per K step
    two wgmma on rows [A_ROW0, A_ROW0 + BM) of the a slot (the ping-pong: all of it; a cooperative consumer:
    its half), one with the 2T-row b slot, one with the T-row t slot (loaded by `_load_partition`'s t_ring
    path). Returns the two accumulators, the last step's wgmma still in flight (the caller waits, then
    releases that slot), and the ring position after the tile."""
    T: gl.constexpr = t_ring.shape[1]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 2 * T, 16])
    tail_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                          instr_shape=[16, T, 16])
    acc = warpgroup_mma_init(gl.zeros((BM, 2 * T), dtype=gl.float32, layout=acc_layout))
    acc_t = warpgroup_mma_init(gl.zeros((BM, T), dtype=gl.float32, layout=tail_layout))
    for kk in range(k_steps):
        mbarrier.wait(full.index(idx), phase)
        a = a_ring.index(idx).slice(A_ROW0, BM)
        acc = warpgroup_mma(a, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
        acc_t = warpgroup_mma(a, t_ring.index(idx).permute((1, 0)), acc_t, is_async=True)
        # two wgmma groups per step: with this step's two in flight, the previous step's are done
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        mbarrier.arrive(empty.index(_ring_prev(idx, STAGES)), pred=kk > 0)
        idx, phase = _ring_next(idx, phase, STAGES)
    return acc, acc_t, idx, phase


@gluon.jit
def store_subtile(y_desc, c_smem, v, b, row, col, BATCHED: gl.constexpr):
    """One output sub-tile (hopper_coop.py's sub-tiled epilogue, `store_split`): wait until the last TMA store
    has read the staging tile, write it, store it (BATCHED: at [b, row, col] of a 3-D y through a 3-D view of
    the staging tile, same bytes)."""
    tma.store_wait(0)
    c_smem.store(v)
    fence_async_shared()  # generic-proxy writes -> async-proxy (TMA) read
    if BATCHED:
        tma.async_copy_shared_to_global(y_desc, [b, row, col], c_smem.reshape([1, c_smem.shape[0], c_smem.shape[1]]))
    else:
        tma.async_copy_shared_to_global(y_desc, [row, col], c_smem)


@gluon.jit
def store_split(y_desc, c_smem, acc, acc_t, bias_ptr, row, col, N, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr):
    """A split tile's epilogue (this kernel's and hopper_coop.py's): bias / activation / cast on each
    accumulator with its own columns, then 3 TMA stores of BM x T sub-tiles through c_smem (BM x T), each
    after the previous store has read it. acc: columns [col, col + 2T) (stored as two halves: a register
    split, nothing moves), acc_t: [col + 2T, col + 3T)."""
    BM: gl.constexpr = c_smem.shape[0]
    T: gl.constexpr = c_smem.shape[1]
    offs = col + gl.arange(0, 2 * T, layout=gl.SliceLayout(0, acc.type.layout))
    out = bias_activation(acc, bias_ptr, offs, N, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
    lo, hi = out.reshape([BM, 2, T]).permute((0, 2, 1)).split()
    offs_t = col + 2 * T + gl.arange(0, T, layout=gl.SliceLayout(0, acc_t.type.layout))
    out_t = bias_activation(acc_t, bias_ptr, offs_t, N, HAS_BIAS, ACTIVATION).to(y_desc.dtype)
    store_subtile(y_desc, c_smem, lo, 0, row, col, False)
    store_subtile(y_desc, c_smem, hi, 0, row, col + T, False)
    store_subtile(y_desc, c_smem, out_t, 0, row, col + 2 * T, False)


@gluon.jit
def _mma_partition(CONSUMER: gl.constexpr, y_desc, bias_ptr, a_ring, b_ring, c_smem, full, empty, turn, c_free,
                   M, N, K, BK: gl.constexpr, STAGES: gl.constexpr, C_TILES: gl.constexpr,
                   GROUP_SIZE_M: gl.constexpr, HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr,
                   B=1, stride_bb=0, BATCHED: gl.constexpr = False, t_ring=None, SPLIT_K: gl.constexpr = False,
                   SWAP: gl.constexpr = False):
    """1 warpgroup: local tiles CONSUMER, CONSUMER + 2, ...: mainloop on its turn, then the epilogue.
    BATCHED: bias row b (bias_ptr + b * stride_bb; stride 0 shares one row) and a 3-D TMA store
    [b, m, n] through a 3-D view of the 2-D output tile.
    t_ring (a split tile, dense only: `_split_mainloop`, `store_split`): c_smem is one BM x T sub-tile per
    consumer (C_TILES 2).
    SPLIT_K (dense only; B = the number of splits): work ids over splits x tiles, each item one K range
    (`_split_steps`), its fp32 partial tile stored in its split's slab of the workspace (`_out_row`).
    SWAP (dense only; "Swap-AB"): the tile is y's transposed (BM weight rows x BN tokens: x_desc holds w, w_desc
    x); the epilogue permutes the accumulator (a layout change, no data moves), adds the bias along its
    columns (the weight rows, M of this launch) and stores it through c_smem (BN x BM) at y[tokens, rows]."""
    BM: gl.constexpr = a_ring.shape[1]
    if t_ring is None:
        BN: gl.constexpr = b_ring.shape[1]
        # wgmma accumulator: 4 warps stacked along M, instruction m16 x BN x k16 per warp.
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
    else:  # a split tile: accumulators of 2T and T columns (`_split_mainloop`), c_smem one BM x T sub-tile
        BN: gl.constexpr = 3 * t_ring.shape[1]
    num_pid_m, num_pid_n, num_work, k_steps = _work_space(M, N, K, BM, BN, BK, B, BATCHED, SPLIT_K)
    nprog = gl.num_programs(0)
    n = 0  # tiles this consumer has done
    for work_id in range(gl.program_id(0) + CONSUMER * nprog, num_work, 2 * nprog):
        if not BATCHED:
            b, pid_m, pid_n = _work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, SPLIT_K)
        # Explicit phase counter: local tile j = 2n + CONSUMER starts at ring step j * k_steps.
        step = (2 * n + CONSUMER) * k_steps
        idx = step % STAGES
        phase = (step // STAGES) & 1
        # My turn on the tensor cores (consumer 0's first wait passes on the fresh barrier).
        mbarrier.wait(turn.index(CONSUMER), (n & 1) ^ (1 - CONSUMER))
        if t_ring is not None:
            acc, acc_t, idx, phase = _split_mainloop(a_ring, b_ring, t_ring, full, empty, idx, phase, k_steps,
                                                     STAGES, 0, BM)
            mbarrier.arrive(turn.index(1 - CONSUMER))  # every wgmma issued: hand over the tensor cores
            acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
            mbarrier.arrive(empty.index(_ring_prev(idx, STAGES)))  # the tile's last slot
            store_split(y_desc, c_smem, acc, acc_t, bias_ptr, _out_row(b, pid_m, num_pid_m, BM, SPLIT_K), pid_n * BN,
                        N, HAS_BIAS, ACTIVATION)
        else:
            acc = warpgroup_mma_init(gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout))
            for kk in range(k_steps):
                mbarrier.wait(full.index(idx), phase)
                acc = warpgroup_mma(a_ring.index(idx), b_ring.index(idx).permute((1, 0)), acc, is_async=True)
                # One wgmma group in flight: the previous step's has finished reading its slot.
                warpgroup_mma_wait(1, deps=(acc,))
                mbarrier.arrive(empty.index(_ring_prev(idx, STAGES)), pred=kk > 0)
                idx, phase = _ring_next(idx, phase, STAGES)
            # Every wgmma of this tile is issued: hand the tensor cores to the other consumer.
            mbarrier.arrive(turn.index(1 - CONSUMER))
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index(_ring_prev(idx, STAGES)))  # the tile's last slot
            # Epilogue (runs under the other consumer's mainloop).
            if BATCHED:  # the tile's coordinates, not live across the mainloop (a batched gelu epilogue spilled)
                b, pid_m, pid_n = _work_tile(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, BATCHED)
            if SWAP:  # y's tile is the accumulator transposed: BN tokens x BM weight rows, the bias per weight row
                out_t = acc.permute((1, 0))
                offs_w = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, out_t.type.layout))
                out = bias_activation(out_t, bias_ptr, offs_w, M, HAS_BIAS, ACTIVATION)
            else:
                offs_n = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
                if BATCHED:
                    out = bias_activation(acc, bias_ptr + b.to(gl.int64) * stride_bb, offs_n, N, HAS_BIAS,
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
                tma.async_copy_shared_to_global(y_desc, [b, pid_m * BM, pid_n * BN], c_smem.reshape([1, BM, BN]))
            elif SWAP:
                tma.async_copy_shared_to_global(y_desc, [pid_n * BN, pid_m * BM], c_smem)
            else:
                tma.async_copy_shared_to_global(y_desc, [_out_row(b, pid_m, num_pid_m, BM, SPLIT_K), pid_n * BN], c_smem)
            if C_TILES == 1:
                tma.store_wait(0)
                mbarrier.arrive(c_free)
        n += 1
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["M", "N", "K", "SPLITS"])  # TMA handles every M, N, K: one compile per config
def hopper_pingpong_kernel(x_desc, w_desc, y_desc, bias_ptr, M, N, K, SPLITS,
                           STAGES: gl.constexpr, C_TILES: gl.constexpr, GROUP_SIZE_M: gl.constexpr,
                           HAS_BIAS: gl.constexpr, ACTIVATION: gl.constexpr, MMA_REGS: gl.constexpr,
                           LOAD_REGS: gl.constexpr, BN: gl.constexpr, SPLIT_K: gl.constexpr, SWAP: gl.constexpr):
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BK: gl.constexpr = x_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BM, BK], x_desc.layout)
    if BN % 3 == 0:  # a split tile (96 / 192): w rows [0, 2T) in b_ring, [2T, 3T) in t_ring; c0 / c1 BM x T
        T: gl.constexpr = BN // 3
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, 2 * T, BK], w_desc.layout)
        t_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, T, BK], w_desc.layout)
    else:
        b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
        t_ring = None
    c0 = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    if C_TILES == 2:
        c1 = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
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
    # Two calls that differ only in t_ring: Gluon 3.6's warp_specialize cannot take a variable holding None
    # ("'NoneType' object has no attribute 'type'"), only the literal, so one call with t_ring does not compile.
    if BN % 3 == 0:
        gl.warp_specialize([
            (_mma_partition, (0, y_desc, bias_ptr, a_ring, b_ring, c0, full, empty, turn, c_free, M, N, K,
                              BK, STAGES, C_TILES, GROUP_SIZE_M, HAS_BIAS, ACTIVATION, SPLITS, 0, False, t_ring,
                              SPLIT_K)),
            (_mma_partition, (1, y_desc, bias_ptr, a_ring, b_ring, c1, full, empty, turn, c_free, M, N, K,
                              BK, STAGES, C_TILES, GROUP_SIZE_M, HAS_BIAS, ACTIVATION, SPLITS, 0, False, t_ring,
                              SPLIT_K)),
            (_load_partition, (x_desc, w_desc, a_ring, b_ring, full, empty, M, N, K, STAGES, GROUP_SIZE_M,
                               SPLITS, False, t_ring, SPLIT_K)),
        ], [4, 1], [MMA_REGS, LOAD_REGS])
    else:
        gl.warp_specialize([
            (_mma_partition, (0, y_desc, bias_ptr, a_ring, b_ring, c0, full, empty, turn, c_free, M, N, K,
                              BK, STAGES, C_TILES, GROUP_SIZE_M, HAS_BIAS, ACTIVATION, SPLITS, 0, False, None,
                              SPLIT_K, SWAP)),
            (_mma_partition, (1, y_desc, bias_ptr, a_ring, b_ring, c1, full, empty, turn, c_free, M, N, K,
                              BK, STAGES, C_TILES, GROUP_SIZE_M, HAS_BIAS, ACTIVATION, SPLITS, 0, False, None,
                              SPLIT_K, SWAP)),
            (_load_partition, (x_desc, w_desc, a_ring, b_ring, full, empty, M, N, K, STAGES, GROUP_SIZE_M,
                               SPLITS, False, None, SPLIT_K)),
        ], [4, 1], [MMA_REGS, LOAD_REGS])


# ----------------------------------------------------------------------------- host side (shared: hopper_host.py)

unsupported = hh.dense_unsupported  # why this kernel cannot take a call (the op falls back to the Triton tier)


def launch(x2, w, bias, y, activation, cfg, target, compile_only=False):
    """y = act(x2 @ w.T + bias) with the ping-pong kernel. x2 (M, K), w (N, K), bias (N,) or None, y (M, N).

    `cfg` keys: BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps (4), num_stages (upper bound); `backend`,
    `persistent`, `tma` are accepted and ignored (always persistent, always TMA); NUM_KSPLIT > 1 splits K
    into at most that many ranges (`hopper_host.fit_split_k`, `launch_dense`); swap_ab computes y's tile
    transposed (the module docstring's "Swap-AB": w and x swap roles, `hopper_host.launch_tma` directly).
    `target`: a gemmkit.arch.Target (its num_cus sizes the persistent grid). Raises ValueError when
    `unsupported` says no or the config cannot be planned.
    """
    hh.check_operands(x2, w, bias, y, target, "gluon ping-pong")
    plan = derive(hh.fit_split_k(cfg, x2.shape[0], w.shape[0], x2.shape[1], target), target, x2.element_size(),
                  y.element_size())
    ce = kernel_constexprs(plan, has_bias=bias is not None, activation=activation)
    if plan.swap:  # the kernel's "x" is w (BM-row boxes), its "w" is x (BN-row boxes); y's box is BN x BM
        return hh.launch_tma(hopper_pingpong_kernel, plan, y_box(plan), w, x2, bias, y, ce, target, compile_only,
                             w_box=plan.w_box)
    return hh.launch_dense(hopper_pingpong_kernel, plan, y_box(plan), x2, w, bias, y, activation, ce, target,
                        compile_only)


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


def static_spec(cfg: dict, target, *, dtype: str = "bf16", out_dtype: str | None = None, has_bias: bool = True,
                activation: str = "gelu"):
    """(kernel, signature, constexprs, divisible, options, plan) to compile the kernel for `target` on a CPU
    (split-K: the kernel stores fp32 partial tiles, whatever the op's output dtype)."""
    out_dtype = hh.staged_dtype(cfg, out_dtype or dtype)
    plan = derive(cfg, target, 2, 4 if out_dtype == "fp32" else 2)
    ce = kernel_constexprs(plan, has_bias=has_bias, activation=activation)
    sig = hh.tma_signature(plan, y_box(plan), dtype, out_dtype, ce, w_box=plan.w_box)
    return hopper_pingpong_kernel, sig, ce, ["bias_ptr"], {"num_warps": hh.CONSUMER_WARPS}, plan


def isa_cases(archs, op: str = "hopper_pingpong"):
    """Static cases for sm_90: every shipped bucket with backend "gluon", plus PRESETS and SPLIT_PRESETS
    (bf16 and fp32 output)."""
    if "sm_90" not in archs:
        return
    # gemm_a16w16's tables (the batched and fp8 kernels compile their own tables' gluon buckets)
    cases = [(t, b, c, "bf16") for t, b, c in hh.shipped_gluon_configs("sm_90")
             if t.startswith("A16W16") and not is_coop(c)]
    cases += [("-", f"preset{i}", c, o) for i, c in enumerate(PRESETS + SPLIT_PRESETS) for o in ("bf16", "fp32")]
    yield from hh.unique_cases(cases, KERNEL_NAME, op)


def isa_spec(case):
    return hh.isa_spec_from(case, static_spec, PROMISES)
