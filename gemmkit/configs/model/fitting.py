"""`fit`: a default-table bucket's tile fitted to the shape's waves (the three steps in the package docstring), and the
CDNA Gluon bucket's `cdna_tiles`, which hands few tiles to it.
"""
from __future__ import annotations

from .base import FEW_TILES, MAX_SPLIT, MIN_SPLIT_STEPS, MIN_TILE, SMALL_TILE, Call

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   ctas_per_sm  the K split aims for this many CTAs per SM (not one wave) wherever the tiles fall short of it.
#                Block scales: each K step's scale product sits on the consumer's critical path (~52 cycles a step,
#                ncu), so a second CTA per SM hides it: 64 x 8192 x 8192 ran 0.69x cuBLAS on 64 tiles, 0.97x split 2;
#                the split is the count nearest the goal, but no more CTAs than the SMs hold at once (their operand
#                rings in shared memory; `operand_bytes` sizes them): 160 tiles of 64 x 128 (98 KB, 2 an SM) on 132
#                SMs ran 0.67x unsplit and 0.57x split 2 (320 CTAs for 264 places), where 160 tiles of 16 x 64 (40
#                KB, 5 an SM) went 0.79x -> 0.96x split 2. Below the goal a tile count splits at least 2 ways (where
#                the SMs hold the CTAs): 192 tiles of 64 x 64 (3 an SM) at M = 64, N = 12288, K = 12288 / 28672 ran
#                0.81 / 0.77x unsplit, 0.95 / 0.97x split 2 (ab/blockscale_decode.json, against cuBLASLt).
#   cdna_tiles   (gfx942 / gfx950) a "backend": "gluon" bucket names the CDNA ping-pong, one fixed 256 x 256 tile a
#                program and no split-K: where those tiles are few (under FEW_TILES of the CUs) the bucket runs on the
#                Triton tier, fitted (its split K and smaller tiles), as it did before the kernel had a launcher.
#                Unmeasured (no AMD GPU here): the same rule as the sm_90 Gluon buckets' few-tiles step.


def rule_cdna(c: Call):
    """A CDNA Gluon bucket: as it is, or (`cdna_tiles`) the Triton tier fitted where its tiles are few."""
    cfg = c.cfg
    if not (c.amd and cfg.get("backend") == "gluon"):
        return None
    if not c.rules.get("cdna_tiles"):
        return cfg, []
    tiles = -(-c.M // cfg["BLOCK_SIZE_M"]) * -(-c.N // cfg["BLOCK_SIZE_N"])
    if tiles < FEW_TILES * c.num_cus:
        tile, notes = fit({k: v for k, v in cfg.items() if k != "backend"}, c.M, c.N, c.K, c.num_cus)
        return tile, [f"{tiles} tiles of {cfg['BLOCK_SIZE_M']} x {cfg['BLOCK_SIZE_N']} for {c.num_cus} CUs: "
                      "the Triton tier"] + notes
    return cfg, []


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


def fit(cfg: dict, M: int, N: int, K: int, num_cus: int, min_tile: int = MIN_TILE,
        ctas_per_sm: int | None = None, resident: int | None = None) -> tuple[dict, list]:
    """(config, notes): `cfg` fitted to an (M, N, K) call on `num_cus` SMs / CUs, and what changed (empty: nothing).
    `min_tile`: the smallest tile side the few-tiles step shrinks to (a tile below it splits K instead).
    `ctas_per_sm`: split K wherever the tiles are fewer than this many per SM, to the split count nearest that
    many but no more CTAs than `resident` an SM (default: split only few tiles, up to one wave; `OP_RULES`)."""
    if cfg.get("backend") == "gluon" or not (_pow2(cfg["BLOCK_SIZE_M"]) and _pow2(cfg["BLOCK_SIZE_N"])):
        return cfg, []
    c = dict(cfg)
    notes = []
    for key, size in (("BLOCK_SIZE_N", N), ("BLOCK_SIZE_M", M)):
        while c[key] > MIN_TILE and c[key] // 2 >= size:
            c[key] //= 2
    if (c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"]) != (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]):
        notes.append(f"narrow {'N' if c['BLOCK_SIZE_N'] != cfg['BLOCK_SIZE_N'] else 'M'}")

    def tiles():
        return -(-M // c["BLOCK_SIZE_M"]) * -(-N // c["BLOCK_SIZE_N"])

    threshold, goal = (FEW_TILES * num_cus, num_cus) if ctas_per_sm is None else (ctas_per_sm * num_cus,) * 2

    def splits():  # K splits that bring the tiles up to the goal (a wave), as far as K's steps allow (1: no split)
        if tiles() >= threshold or c.get("NUM_KSPLIT", 1) != 1:
            return c.get("NUM_KSPLIT", 1)
        # one wave: as many splits as fit in it; several CTAs an SM: the split count nearest that goal, but at least 2
        # (192 tiles for a goal of 264 round to 1: 60 SMs would hold two CTAs and 72 one)
        per_tile = goal // tiles() if ctas_per_sm is None else max(2, round(goal / tiles()))
        if resident is not None:
            per_tile = min(per_tile, resident * num_cus // tiles())
        return max(1, min(per_tile, -(-K // c["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS, MAX_SPLIT))

    before, split = tiles(), splits()
    while tiles() * split < FEW_TILES * num_cus and max(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"]) > min_tile:
        key = "BLOCK_SIZE_M" if c["BLOCK_SIZE_M"] >= c["BLOCK_SIZE_N"] else "BLOCK_SIZE_N"
        c[key] //= 2
        split = splits()
    if split != c.get("NUM_KSPLIT", 1):
        c["NUM_KSPLIT"] = split
        per_sm = '' if ctas_per_sm is None else f' ({ctas_per_sm} CTAs an SM)'
        notes.append(f"{before} tiles for {num_cus} SMs{per_sm}: "
                     f"K split {split} ways" +
                     (f" over {tiles()} smaller tiles" if tiles() != before else ""))
    elif tiles() != before:
        notes.append(f"{before} tiles for {num_cus} SMs: {tiles()} smaller tiles")
    if c["num_warps"] == 8 and c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] < SMALL_TILE:
        c["num_warps"] = 4
    if notes:
        notes.insert(0, f"tile {cfg['BLOCK_SIZE_M']} x {cfg['BLOCK_SIZE_N']} -> {c['BLOCK_SIZE_M']} x "
                        f"{c['BLOCK_SIZE_N']}" + (f", split {c['NUM_KSPLIT']}" if c.get("NUM_KSPLIT", 1) > 1 else ""))
    return c, notes
