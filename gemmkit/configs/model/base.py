"""What every rule of the config model shares: the call it sees (`Call`), how full a launch keeps the SMs
(`wave_efficiency`, `area_fill`, `launch_fill`), the shared thresholds, and the Gluon ping-pong tiles several rules
serve.

    tiles = cdiv(M, BM) x cdiv(N, BN)          a work item a tile (x its K splits where it has them)
    wave_efficiency = tiles / (waves x SMs)    every tile counted whole
    launch_fill     = M x N x splits / (waves x SMs x BM x BN)
                                               rows and columns past M and N count as empty
"""
from __future__ import annotations

import dataclasses

MIN_TILE = 64  # the smallest BLOCK_SIZE_M / BLOCK_SIZE_N the fitting goes to (a wgmma's M is 64)
FEW_TILES = 0.5  # "few tiles": fewer output tiles than this share of the SMs
MIN_SPLIT_STEPS = 4  # K steps a split range keeps at least (fewer: the partial tile's traffic outweighs it)
MAX_SPLIT = 16
SMALL_TILE = 128 * 128  # under this many outputs a tile takes 4 warps (one warpgroup); the tuner prunes by it too
GLUON_WAVE_MARGIN = 1.1  # how much better the ping-pong's waves must be filled to give up the cooperative tile
SECTOR_ELEMENTS = 16  # bf16 elements in 32 bytes (ops/dispatch.py PITCH_SECTOR): K's rows off these are copied
LINE_ELEMENTS = 64  # bf16 elements in a 128-byte line (ops/dispatch.py PITCH_BYTES)

# The Gluon ping-pong tiles several bf16 rules serve (`one_wave`, `narrow_wave`, `few_tiles`, `m128_tile`): one
# definition each (stages: what hopper_plan.budget fits; the first narrow-wave A/B's 64 x 64 asked 8).
PINGPONG_64X128 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                   "num_stages": 8, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
PINGPONG_64X192 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                   "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
PINGPONG_64X64 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                  "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
# The Gluon ping-pong tile of `wide_share` (what the tuned fp8 block-scale tables run at M <= 128, e.g.
# A8W8_BLOCKSCALE-N=7168-K=16384.json), applied over the large-M Gluon bucket's other keys.
SMALL_PINGPONG = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 4, "num_warps": 4, "num_stages": 6}
PINGPONG_ROUND = 2  # ping-pong tiles an SM takes in one round (one a consumer): more, and the coop serves


@dataclasses.dataclass(frozen=True)
class Call:
    """What `choose`'s rules see of one call: the op's rules (OP_RULES), the default table's bucket `cfg` for M and
    its large-M bucket `large`, the shape, and the target (`num_cus` SMs / CUs of `shared_mem` bytes, `amd`, its HBM's
    `hbm_gbps`: 0 where unknown)."""
    rules: dict
    cfg: dict
    large: dict | None
    M: int
    N: int
    K: int
    num_cus: int
    shared_mem: int
    amd: bool
    hbm_gbps: float = 0.0


def launch_fill(cfg: dict, M: int, N: int, num_cus: int) -> float:
    """`area_fill` of a launch of `cfg` as the kernels run it: tiles x K splits work items (a Gluon config's splits
    kept to one wave, as hopper_host.fit_split_k keeps them; the Triton tier's as given; the cap of one split a K
    step is not counted: K is not an argument), rows and columns past M and N empty."""
    bm, bn = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]
    tiles = -(-M // bm) * -(-N // bn)
    split = cfg.get("NUM_KSPLIT", 1)
    if split > 1 and cfg.get("backend") == "gluon":
        split = max(1, min(split, num_cus // tiles))
    return M * N * split / (-(-tiles * split // num_cus) * num_cus * bm * bn)


def wave_efficiency(tiles: int, num_cus: int) -> float:
    """The share of the SM-slots a persistent grid's waves keep busy: tiles over (waves x SMs)."""
    return tiles / (-(-tiles // num_cus) * num_cus)


def area_fill(M: int, N: int, bm: int, bn: int, num_cus: int) -> float:
    """The share of the SM-slots of a persistent grid's waves of bm x bn tiles that the (M, N) output fills: unlike
    `wave_efficiency`, a tile's rows and columns past M and N count as empty (`launch_fill` of an unsplit tile)."""
    return launch_fill({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn}, M, N, num_cus)


def coop_bucket(c: Call) -> bool:
    """Whether the call's bucket is a cooperative Gluon one on an NVIDIA target (num_warps 8, 128 x 256, unswapped,
    unsplit): what `off_sector`, `long_k_split`, `long_k_coop` and `narrow_wide` take the place of."""
    cfg = c.cfg
    return bool(not c.amd and cfg.get("backend") == "gluon" and cfg["num_warps"] == 8
                and cfg["BLOCK_SIZE_N"] == 256 and not cfg.get("swap_ab") and cfg.get("NUM_KSPLIT", 1) == 1)


def pingpong_64(tile: dict) -> bool:
    """Whether a rule's answer is one of the Gluon ping-pong's 64-row tiles (not swap-AB): a w box loaded for 64 rows
    a consumer (`long_k_coop`, `coop_swap`)."""
    return tile.get("backend") == "gluon" and tile["BLOCK_SIZE_M"] == 64 and not tile.get("swap_ab")
