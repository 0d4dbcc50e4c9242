"""The gated GEMM's rules (a16w16_gated, N = I): `gated_rows` (its 64-row tile where the 128-row tiles fill their
waves poorly) and, over whatever answered, `gated_one_wave` (the Gluon cooperative gated tile in one wave).
"""
from __future__ import annotations

from .base import FEW_TILES, SECTOR_ELEMENTS, Call, launch_fill

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   (fitted)     where `gated_rows` passes, the gated GEMM's buckets `fit`ted: few tiles split along K to one wave
#                (ab/gated_fit.json, gated_heldout.json, H200, against torch.matmul + silu(g) * u: the DeepSeek-V3
#                shared expert 128 x 2048 x 7168 0.61 -> 1.05x, 36 held-out shapes 0.63 -> 1.14x, every row up; a split
#                of 66-131 tiles lost, gated_mid.json: 0.98 -> 0.85x).
#   gated_rows   (a16w16_gated) where the bucket's 128-row tiles fill their waves poorly (M past a whole row of them:
#                259-341 rows; or a partial last round), this 64-row tile (the M_LEQ_256 bucket's) where its launch fill
#                (`launch_fill`) is GATED_ROWS_MARGIN of theirs and its tiles are not few (FEW_TILES of the SMs: fewer,
#                `fit` splits the bucket). ab/gated_midm.json (H200, against torch.matmul + silu(g) * u, the 64-row tile
#                non-persistent at 4 stages): at 1.33-2.0x the fill 0.66-1.20x where 128 x 128 ran 0.63-0.87x; at
#                1.08-1.2x it lost 3-8% (265 x 15200 x 5536: 0.83 -> 0.76x), at equal fill 7-18%. sm_90 only.
GATED_ROWS_MARGIN = 1.3
GATED_64X128 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                "num_stages": 5, "tma": True, "persistent": True, "NUM_KSPLIT": 1}
#   gated_one_wave (a16w16_gated, over whatever answered) at GATED_ONE_WAVE_MIN_M < M <= GATED_ONE_WAVE_MAX_M, K on
#                32-byte sectors: the Gluon cooperative gated tile (kernels/gluon/hopper_coop.launch_gated, 128 x 128 of
#                h) where its tiles fit one wave of the SMs and the answer runs unsplit with more than one wave of tiles
#                or with these same tiles. H100, against torch.matmul + silu(g) * u, `_gluon_gated` A/Bs: on the 35
#                fitting shapes (ab/gated_gluon.json) and 36 held out (gated_gluon_coop_heldout.json,
#                gated_gluon_coop_one_wave_heldout.json) the coop won on all 23 rows the rule names (+2 to +31%; heated
#                0.97-1.26x) and lost on the 7 one-wave rows it does not (0.41-0.78x: a split answer, or 64-row tiles
#                that fit one wave themselves); stated before its run, 23 more held out
#                (gated_gluon_coop_one_wave_heldout2.json): 12 named, +0.5 to +23% (heated 0.97-1.22x), the 5 one-wave
#                rows it does not name 0.78-0.90x. Coop tiles past one wave lost (1.1-1.5 waves: 12 rows,
#                0.78-0.96x). sm_90 (H100 and H200, both 132 SMs), timed on the H100 only.
GATED_ONE_WAVE_MIN_M, GATED_ONE_WAVE_MAX_M = 128, 1024
GATED_COOP_128X128 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                      "num_stages": 4, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}


def rule_gated_rows(c: Call):
    """`gated_rows` (the gated GEMM): the 64-row tile in place of the bucket's larger one where its launch fills
    GATED_ROWS_MARGIN more of the SMs' waves and its tiles are not few (`fit` splits those)."""
    tile = c.rules.get("gated_rows")
    if not (tile and not c.amd and c.cfg.get("backend") != "gluon" and c.cfg["BLOCK_SIZE_M"] > tile["BLOCK_SIZE_M"]
            and c.cfg["BLOCK_SIZE_N"] == tile["BLOCK_SIZE_N"]):
        return None
    tiles = -(-c.M // tile["BLOCK_SIZE_M"]) * -(-c.N // tile["BLOCK_SIZE_N"])
    served, fill = launch_fill(c.cfg, c.M, c.N, c.num_cus), launch_fill(tile, c.M, c.N, c.num_cus)
    if tiles < FEW_TILES * c.num_cus or fill < GATED_ROWS_MARGIN * served:
        return None
    return dict(tile), [f"{c.cfg['BLOCK_SIZE_M']} x {c.cfg['BLOCK_SIZE_N']} tiles fill {served:.0%} of their waves, "
                        f"{tiles} of {tile['BLOCK_SIZE_M']} x {tile['BLOCK_SIZE_N']} {fill:.0%}: the 64-row tile "
                        f"(`gated_rows`)"]


def gated_one_wave(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`gated_one_wave` (the gated GEMM, over whatever answered): at GATED_ONE_WAVE_MIN_M < M <= GATED_ONE_WAVE_MAX_M,
    K on 32-byte sectors and h's rows on 16 bytes (N % 8 == 0: TMA's; other N run the Triton tier anyway), the Gluon
    cooperative gated tile where its tiles fit one wave of the SMs and the answer, a Triton-tier tile, runs unsplit with
    more than one wave of tiles or with these same tiles. One wave of the coop's tiles against more of the answer's
    saves a round; against its own tiles the coop's warp-specialized ring runs each tile faster; where the answer's
    64-row tiles fit one wave too they finish in about half a coop tile's time."""
    coop = c.rules.get("gated_one_wave")
    if not coop or c.amd or not GATED_ONE_WAVE_MIN_M < c.M <= GATED_ONE_WAVE_MAX_M or c.K % SECTOR_ELEMENTS \
            or c.N % 8 or tile.get("backend") == "gluon" or tile.get("NUM_KSPLIT", 1) > 1:
        return tile, notes
    bm, bn = tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"]
    tiles = -(-c.M // bm) * -(-c.N // bn)
    coop_tiles = -(-c.M // coop["BLOCK_SIZE_M"]) * -(-c.N // coop["BLOCK_SIZE_N"])
    same = (bm, bn) == (coop["BLOCK_SIZE_M"], coop["BLOCK_SIZE_N"])
    if coop_tiles > c.num_cus or not (same or tiles > c.num_cus):
        return tile, notes
    return dict(coop), notes + [
        f"{coop_tiles} tiles of the Gluon cooperative gated {coop['BLOCK_SIZE_M']} x {coop['BLOCK_SIZE_N']} fit one "
        f"wave of {c.num_cus} SMs; the answer's {tiles} tiles of {bm} x {bn} unsplit " +
        ("are the same tiles" if same else "take more") + " (`gated_one_wave`)"]
