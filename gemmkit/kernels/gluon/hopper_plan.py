"""The plan builder of the Hopper (sm_90) Gluon kernels: the arithmetic every kernel's `derive` shares, once.

Each kernel's `derive` (hopper_pingpong.py, hopper_coop.py, hopper_fp8_plan.py) checks what is its own (the tile
one consumer warpgroup computes, the promotion and scales of the FP8 kernel, ...), says what one ring slot and the
output staging cost, and calls in here for the rest::

   config ──► kernel.derive ──► check_config, check_block_k, check_acc_regs  (ValueError naming the key)
                 │  the kernel's tile: ring slot bytes, staging options (most staging first), rings, load warps
                 ▼
              budget(target, ...) ──► Budget: ring depth, staging chosen, shared-memory bound, register split
                 │
                 ▼
              PingPongPlan | CoopPlan | Fp8Plan   (HopperPlan's fields + the kernel's own)

   shared memory of a CTA (fits the target's shared_mem_bytes, 227 KiB on sm_90):
   ┌──────────── rings x stages x slot_bytes ────────────┬── output staging ──┬ slack ┐
   │ ring slot: a (BM x BK) + b (BN x BK) [+ scales]  x S │ c tile(s) / vectors │ mbars │
   └──────────────────────────────────────────────────────┴────────────────────┴───────┘
   registers of a CTA (64 K on an SM, one CTA per SM): 2 consumer warpgroups + 1 padded load warpgroup

Host code only (no device code, no torch): the target's facts come from gemmkit/arch.py (`shared_mem`; a target
of None is the sm_90 entry of `gemmkit.arch.ARCHS`).

Constraints:
  - Kernels of two consumer warpgroups (hh.CONSUMER_WARPS warps each) and 1 or 2 load warps, one CTA per SM
    (persistent), setmaxnreg-split registers: what every Hopper Gluon kernel here is.
  - A config carries every hh.CONFIG_KEYS key and no other key but hh.IGNORED_KEYS (`check_config`); each
    refusal is a ValueError whose message names the config key.
  - A ring has at least 2 stages (one being filled while one is read): `budget` refuses fewer.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import arch as _arch
from ...configs import SPLIT_N, split_tail  # noqa: F401  (split_tail: the dense kernels' plans read it here)
from . import hopper_host as hh

REG_FILE = 65536  # 32-bit registers per SM
LOAD_REGS = 24  # registers per thread of the load warpgroup (the minimum): scalars and descriptors only
BARRIER_SLACK = 1024  # mbarriers (8 B each) and alignment; compiled kernels use ~250 B
MAX_ACC_REGS = 128  # fp32 accumulator registers per consumer thread that leave room for the epilogue
# A split tile's epilogue (hopper_parts.store_split) stages each of its A / B + 1 sub-tiles in its own buffer, its
# stores in flight together, where the config's ring stages fit beside them; else one buffer, each store waiting
# for the one before. False (read at each plan): always one buffer, e.g. to compare.
SPLIT_PIECES = True
CONSUMER_THREADS = 32 * hh.CONSUMER_WARPS  # threads of one consumer warpgroup (128)
COOP_WARPS = 2 * hh.CONSUMER_WARPS  # a "backend": "gluon" config's num_warps: 4 = a warpgroup per tile (the
# ping-pong), 8 = two warpgroups on one tile (the cooperative layout: hopper_coop.py, hopper_pingpong_fp8.py)


def is_coop(cfg: dict) -> bool:
    """Whether a "backend": "gluon" config asks for the cooperative layout (num_warps 8): the rule of
    gemm_a16w16's dispatch, the tuner (prune, pick_candidates, the batched space), the isa cases and
    the batched op (hopper_pingpong_batched.kernel_plan); the fp8 kernel's LAYOUTS use the same numbers."""
    return cfg.get("num_warps") == COOP_WARPS


# ----------------------------------------------------------------------------- the plans

@dataclass(frozen=True)
class HopperPlan:
    """What every Hopper Gluon kernel's plan holds (`budget` derives the shared-memory and register part)."""
    BM: int
    BN: int
    BK: int
    GROUP_SIZE_M: int
    stages: int  # ring depth actually used (per ring)
    stage_bytes: int  # one ring slot: (a, b) boxes (+ the FP8 block scales)
    epilogue_bytes: int  # output staging (+ the FP8 coop rowcol scale vectors)
    smem_bytes: int  # upper bound on the kernel's shared memory
    warps: int  # warps the CTA runs (partitions padded to warpgroups)
    regs_at_entry: int  # per thread, the kernel's .maxnreg
    mma_regs: int  # per consumer thread after setmaxnreg
    load_regs: int  # per load-warpgroup thread after setmaxnreg
    acc_regs: int  # fp32 accumulator registers per consumer thread
    swizzle_a: int  # NVMMA shared-layout swizzle bytes of the a / b ring slots and the y staging tile
    swizzle_b: int
    swizzle_c: int


@dataclass(frozen=True)
class PingPongPlan(HopperPlan):
    """hopper_pingpong.py (and its batched form): a whole BM x BN tile per consumer warpgroup."""
    c_tiles: int = 2  # output staging tiles: 2 (one per consumer) or 1 (shared, handed over by c_free)
    c_pieces: int = 1  # a split tile's staging sub-tiles a consumer holds: BN / B (all its stores in flight) or 1
    BN_TAIL: int = 0  # a split tile BN = A + B (configs.SPLIT_N, `split_tail`): B; 0 for a power-of-two BN
    w_box: int = 0  # rows of the w TMA box: BN, or B for a split tile
    split_k: int = 1  # NUM_KSPLIT: K split into this many ranges, fp32 partial tiles, then a fixed-order reduce
    swap: bool = False  # swap_ab: BM x BN is y's BN x BM tile transposed (BM weight rows, BN tokens; "Swap-AB")
    gated: bool = False  # the gated tile: BN columns of h = act(x @ w[:N].T) * (x @ w[N:].T), two accumulators


@dataclass(frozen=True)
class CoopPlan(HopperPlan):
    """hopper_coop.py (and its batched form): one BM x BN tile, a BM / 2-row half per consumer warpgroup."""
    BM_C: int = 0  # rows per consumer = BM / 2
    BN_TAIL: int = 0  # 0: one BM_C x BN accumulator; BN / 3 for a split tile (96, 192): BN - BN_TAIL and BN_TAIL
    #                   columns
    w_box: int = 0  # rows of the w TMA box: BN, or BN / 3 (a split tile's stage holds 3 boxes)
    epi_split: int = 1  # column sub-tiles of a consumer's output tile (1, 2 or 4; a split tile 3)
    epi_n: int = 0  # columns of one sub-tile = BN / epi_split
    c_pieces: int = 1  # a split tile's staging sub-tiles a consumer holds: epi_split (all in flight) or 1
    split_k: int = 1  # NUM_KSPLIT (hopper_host.launch_dense: fp32 partial tiles, then a fixed-order reduce)
    swap: bool = False  # swap_ab: BM weight rows x BN tokens (a split width), y's tile transposed ("Swap-AB")
    gated: bool = False  # the gated tile: BN columns of h, each consumer a gate and an up accumulator of BM_C x BN


@dataclass(frozen=True)
class Fp8Plan(HopperPlan):
    """hopper_pingpong_fp8.py (hopper_fp8_plan.derive): promoted fp8 wgmma chains, rowcol or block scales,
    the "pingpong" (a tile and a ring per consumer) or "coop" (one tile, two halves, one ring) layout."""
    promote_k: int = 0  # fp8 products per tensor-core chain before the fp32 FADD (= BK)
    slices: int = 1  # 64-row wgmma slices per consumer per tile (consumer_rows / 64)
    c_tiles: int = 2  # output staging buffers: 2 (one per consumer) or 1 (shared, handed over by c_free);
    #                   each consumer_rows x BN (coop: a half each, 64 or 128 rows)
    partial_regs: int = 0  # the 64 x BN partial accumulator(s): pingpong and coop 256 one, coop 128 two (one in
    #                        flight): 64 * BN / 128 each
    scale: str = "rowcol"  # "rowcol" (epilogue scales) | "block" (scaled promotion)
    scale_bn: int = 1  # block: rows of w per w_scale row (SBN), a multiple of BN
    scale_bk: int = 1  # block: K columns per scale column (SBK), a multiple of BK
    scale_bytes: int = 0  # block: the scales of one ring slot (BM + W_SLOT_FLOATS fp32), part of stage_bytes
    layout: str = "pingpong"  # "pingpong" (num_warps 4: a tile per consumer) | "coop" (8: one tile, two halves)
    rings: int = 2  # pingpong: a ring (and a load warp) per consumer; coop: one, read by both consumers
    consumer_rows: int = 128  # rows of the output one consumer computes per tile (pingpong: BM; coop: BM / 2)
    pair: bool = False  # pingpong: both consumers on one tile, each its ring's half of K (hopper_fp8_plan.pair_plan)


# ----------------------------------------------------------------------------- config checks

def pow2(v) -> bool:
    return isinstance(v, int) and v > 0 and v & (v - 1) == 0


def check_config(cfg: dict, backend: str, kernel: str, bm_why: str, split_ok: bool = False,
                 split_k_ok: bool = False, swap_ok: bool = False):
    """The checks every Hopper Gluon kernel's `derive` makes of a config (the ping-pong's, the cooperative
    kernel's on its per-consumer view, the FP8 kernel's): every hh.CONFIG_KEYS key present, no other key but the
    ignored ones, no split-K (unless `split_k_ok`: the dense bf16 kernels), no swap_ab (unless `swap_ok`: the
    ping-pong and the cooperative kernel, whose `derive`s pass the kernel's tile, already transposed), BLOCK_SIZE_M 64 or 128, BLOCK_SIZE_N
    a power of two in [16, 256] (or, `split_ok`, a split tile), num_warps 4 (one consumer warpgroup),
    GROUP_SIZE_M >= 1. Returns (BM, BN, BK); BLOCK_SIZE_K is each kernel's own (`check_block_k`)."""
    for key in hh.CONFIG_KEYS:
        if key not in cfg:
            raise ValueError(f"config: missing key {key!r} for the {backend} backend")
    unknown = set(cfg) - set(hh.CONFIG_KEYS) - set(hh.IGNORED_KEYS)
    if unknown:
        raise ValueError(f"config: keys {sorted(unknown)} do not apply to {kernel}")
    if cfg.get("NUM_KSPLIT", 1) != 1 and not split_k_ok:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']}; {kernel} needs 1")
    if cfg.get("swap_ab") and not swap_ok:
        raise ValueError(f"config: key 'swap_ab' = true; {kernel} has no transposed tile (the dense ping-pong and cooperative kernels have)")
    bm, bn, bk = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]
    if bm not in (64, 128):
        raise ValueError(f"config: key 'BLOCK_SIZE_M' = {bm}; the {backend} backend needs 64 or 128 {bm_why}")
    if not ((pow2(bn) and 16 <= bn <= 256) or (split_ok and bn in SPLIT_N)):
        raise ValueError(f"config: key 'BLOCK_SIZE_N' = {bn}; expected a power of two in [16, 256]"
                         + (f" (or a split tile {SPLIT_N})" if split_ok else ""))
    if cfg["num_warps"] != hh.CONSUMER_WARPS:
        raise ValueError(f"config: key 'num_warps' = {cfg['num_warps']}; the {backend} backend needs 4 "
                         "(warps per consumer warpgroup)")
    if not (isinstance(cfg["GROUP_SIZE_M"], int) and cfg["GROUP_SIZE_M"] >= 1):
        raise ValueError(f"config: key 'GROUP_SIZE_M' = {cfg['GROUP_SIZE_M']!r}; expected an integer >= 1")
    return bm, bn, bk


def check_block_k(bk) -> None:
    """The 16-bit kernels' BLOCK_SIZE_K: a power of two in [16, 128] (wgmma k16; one 128-byte swizzled row at 64)."""
    if not (pow2(bk) and 16 <= bk <= 128):
        raise ValueError(f"config: key 'BLOCK_SIZE_K' = {bk}; expected a power of two in [16, 128]")


def acc_regs(rows: int, cols: int) -> int:
    """fp32 registers per consumer thread of a rows x cols accumulator: wgmma spreads it over the warpgroup's
    128 threads (4 warps stacked along M, instruction m16 x cols per warp), rows * cols / 128 each."""
    return rows * cols // CONSUMER_THREADS


def check_acc_regs(regs, bm: int, bn: int, backend: str, *, limit: int = MAX_ACC_REGS, count=None, note: str = "",
                   per: str = "thread", why: str = "") -> None:
    """Refuse a tile whose accumulators need more than `limit` registers per consumer thread (the rest of the
    240 setmaxnreg gives are the epilogue's and the addresses'); the message names BLOCK_SIZE_M x BLOCK_SIZE_N."""
    if regs > limit:
        raise ValueError(f"config: BLOCK_SIZE_M x BLOCK_SIZE_N = {bm} x {bn}{note} needs "
                         f"{regs if count is None else count} accumulator registers per {per}{why}; the {backend} "
                         f"backend allows {limit}")


# ----------------------------------------------------------------------------- shared memory and registers

def shared_mem(target) -> int:
    """Shared memory one block may use on `target` (a gemmkit.arch.Target; None: the sm_90 entry of ARCHS)."""
    return (_arch.ARCHS["sm_90"] if target is None else target).shared_mem_bytes


def swizzle(inner_bytes: int) -> int:
    """NVMMASharedLayout.get_default_for's choice for a tile whose contiguous row is inner_bytes: the largest of
    128/64/32 bytes dividing a tile row (BK * 2 = 128 B of bf16, or BK = 128 fp8: 128-byte swizzle,
    conflict-free for TMA writes and wgmma reads)."""
    for sw in (128, 64, 32):
        if inner_bytes >= sw and inner_bytes % sw == 0:
            return sw
    return 0


def register_split(load_warps: int = 1) -> tuple[int, int, int]:
    """(warps, registers per thread at entry, per consumer thread after setmaxnreg) of a kernel of two consumer
    warpgroups and `load_warps` load warps.

      warps    4 (consumer 0, the default partition) + 4 (consumer 1) + the load warp(s) (1, or 2 for the FP8
               ping-pong's two rings: they share one warpgroup), each partition padded to a warpgroup for
               register allocation: 12 warps, 384 threads.
      regs     at entry: 65536 / 384 = 170 -> 168 (multiple of 8) per thread, the kernel's cap;
               setmaxnreg then gives the load warpgroup 24 (the minimum; its code needs < 24) and
               each consumer (168 * 384 - 24 * 128) / 256 = 240. (CUTLASS's ping-pong uses 40 / 232;
               with 232 the default partition spilled 4 bytes under a gelu epilogue, with 240 none.)
    """
    warps = 2 * hh.CONSUMER_WARPS + 4 * -(-load_warps // 4)
    regs_at_entry = REG_FILE // (warps * 32) // 8 * 8
    mma_regs = (regs_at_entry * warps * 32 - LOAD_REGS * 128) // (2 * 128) // 8 * 8
    return warps, regs_at_entry, mma_regs


@dataclass(frozen=True)
class Budget:
    """The part of a plan `budget` derives: the staging option chosen, the ring depth, the bytes, the registers."""
    staging: object  # the option of `staging` chosen (the ping-pong's c_tiles, the coop's epi_split, ...)
    stages: int
    stage_bytes: int
    epilogue_bytes: int
    smem_bytes: int
    warps: int
    regs_at_entry: int
    mma_regs: int
    load_regs: int

    def fields(self) -> dict:
        """The HopperPlan fields this holds (all but `staging`)."""
        return dict(stages=self.stages, stage_bytes=self.stage_bytes, epilogue_bytes=self.epilogue_bytes,
                    smem_bytes=self.smem_bytes, warps=self.warps, regs_at_entry=self.regs_at_entry,
                    mma_regs=self.mma_regs, load_regs=self.load_regs)


def ring_fit(smem: int, staging_bytes: int, slot_bytes: int) -> int:
    """Ring stages (slots of every ring: slot_bytes = rings x one slot) that fit beside the staging and the slack."""
    return (smem - staging_bytes - BARRIER_SLACK) // slot_bytes


def budget(target, tile: tuple, *, stage_bytes: int, num_stages: int, staging, out_bytes: int, want=None,
           rings: int = 1, load_warps: int = 1, staging_name: str = "output staging",
           each_ring: bool = False) -> Budget:
    """The ring, the output staging and the registers of one config on `target`.

      ring     S slots in each of `rings` rings, stage_bytes each ((BM + BN) * BK * in_bytes, + the block scales);
               `staging` lists the output staging options as (option, bytes), the most staging first: the
               first beside which `want` (default num_stages) stages fit, else the last (the least staging):
                 smem >= rings * want * stage_bytes + staging bytes + BARRIER_SLACK,
               then stages = min(num_stages, (smem - staging - slack) // (rings * stage_bytes)): num_stages is
               an upper bound; fewer than 2 is a ValueError (`tile` = (BM, BN, BK) names the tile in it).
      smem     smem_bytes = rings * stages * stage_bytes + staging + slack, the kernel's bound (checked against
               the compiled kernel by `gemmkit isa`); smem is the target's (`shared_mem`).
      regs     `register_split(load_warps)`.
    """
    smem = shared_mem(target)
    slot = rings * stage_bytes  # one slot in each ring
    want = num_stages if want is None else want
    choice, epilogue_bytes = next(((o, b) for o, b in staging if ring_fit(smem, b, slot) >= want), staging[-1])
    fit = ring_fit(smem, epilogue_bytes, slot)
    stages = min(num_stages, fit)
    if stages < 2:
        bm, bn, bk = tile
        raise ValueError(f"config: {bm} x {bn} x {bk} leaves room for {fit} "
                         f"{'stage(s) per ring' if each_ring else 'ring stage(s)'} beside the {epilogue_bytes}-byte "
                         f"{staging_name} ({out_bytes}-byte output); {'each ring' if each_ring else 'the ring'} "
                         "needs 2")
    warps, regs_at_entry, mma_regs = register_split(load_warps)
    return Budget(staging=choice, stages=stages, stage_bytes=stage_bytes, epilogue_bytes=epilogue_bytes,
                  smem_bytes=rings * stages * stage_bytes + epilogue_bytes + BARRIER_SLACK, warps=warps,
                  regs_at_entry=regs_at_entry, mma_regs=mma_regs, load_regs=LOAD_REGS)
