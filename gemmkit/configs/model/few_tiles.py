"""bf16's few-tile tiles: where even the ping-pong's 128 x 128 tiles are few (under FEW_TILES of the SMs), its 64-row
tiles split along K to one wave (`few_tiles`), or its 64 x 64 split in short ranges (`short_split`).
`gluon_waves` and `narrow_n` serve them.
"""
from __future__ import annotations

from .base import GLUON_WAVE_MARGIN, MAX_SPLIT, PINGPONG_64X64, launch_fill

# `few_tiles` (bf16, H200, against cuBLAS in the same process): above M = 128 (FEW_TILES_MIN_M) where even 128 x 128
# tiles are under FEW_TILES of the SMs, the Triton tier's split (128 x 256 split 4-16) ran 0.63x geomean on 20 shapes
# (1000^3 0.31x), the ping-pong's 64 x 128 split to one wave 0.86x, its 64 x 64 best where 64 x 128 tiles are too few
# (ab/bf16_few_tiles.json); held out: 32 random shapes 0.84 -> 1.56x (odd N / K, where cuBLAS slows too; two lost 3 /
# 8%: bf16_few_tiles_heldout.json), 11 aligned 0.74 -> 0.95x (one lost 5%, 1024 x 128 x 8192 on one tile column: hence
# `narrow_n`'s exception in `choose`; bf16_few_tiles_verify.json). At 128 < M <= 256 (first measured above 256 only;
# below, where `one_wave` finds no tile, the Triton tier's split served: 128 x 256 split 4-16, 0.59-0.88x)
# ab/bf16_decode_split.json's 18 such rows (random and grid shapes, N = 256-2048) 0.789 -> 0.990x, every one up 3-58%;
# held out (ab/bf16_decode_split_heldout.json, 12 random rows at M = 129-256) 0.783 -> 0.970x, none down. The 64 x 192
# (`narrow_pingpong`'s tile, last in the menu: taken where it fills GLUON_WAVE_MARGIN more than the others) where K >=
# FEW_TILES_WIDE_MIN_K: fewer, wider tiles split in two where 64 x 128 tiles are too many to split (319 x 1696 x 23680:
# 70 tiles of 64 x 128 unsplit 0.74x, 45 of 64 x 192 split 2 0.86x). ab/bf16_few_tiles_wide.json (68 grid rows at M =
# 260-1000, N = 768-2560): K = 4096 -5 to -9% (hence the K floor), 8192 +1-5%, 16384 / 24576 +5-19%; held out
# (ab/bf16_few_tiles_wide_heldout.json, 40 random rows at M = 257-1100, K = 8192-32768): 0.821 -> 0.920x, every row up
# 2-20%.
FEW_TILES_MIN_M = 128  # `few_tiles` in `gluon_waves` above this M (at M <= 128 the bucket is the Triton tier's)
FEW_TILES_WIDE_MIN_K = 8192  # `few_tiles`: the least K of its menu's 64 x 192 (K = 4096 split 2 lost 5-9%)
FEW_TILES_FILL = 0.45  # `few_tiles`: the least share of the SMs its CTAs fill (won from 0.48: 1024 x 256 x 2048)
FEW_TILES_UNSPLIT_FILL = 0.25  # ... in `gluon_waves` where K is too short to split (K < 2 x FEW_TILES_SPLIT_K):
# unsplit 64 x 64 at 27-45% beat the Triton tier's split 0.34-0.69 -> 0.87-0.96x (ab/bf16_short_k_few.json; held out,
# bf16_model_rules_heldout.json, the rule's first form: 22 Triton-tier rows 0.35-0.77 -> 0.61-0.93x); GPT-OSS's
# router 512 x 128 x 2880 (12%) stays the Triton split's (0.96x).
# `short_split` (bf16, in `gluon_waves` where even `few_tiles` fills too few SMs and the Triton tier would split K):
# the ping-pong's 64 x 64 split to one wave in ranges of at least FEW_TILES_SHORT_SPLIT_K, where its tiles take one
# round. The Triton tier's split there ran its bucket's 128 x 128 / 128 x 256 (shrunk to 64 x 128 at most) on 6-20
# tiles, 6-16 ways, partials 0.8-2.6x the operands' bytes: ab/bf16_few_tiles_triton_fallback.json (H200, against
# cuBLAS, 20 random shapes at M = 131-523, N = 272-912) 0.589 -> 0.910x on the 64 x 64 (the 64 x 128 0.809x), 18 up
# (165 x 648 x 4592 0.35 -> 1.08x, 355 x 280 x 3760 0.36 -> 1.07x); 333 x 288 x 2520 -13%; 523 x 912 x 8056 (135
# tiles: a second round) -25%, hence one round.
# Held out (ab/bf16_short_split_heldout.json, 20 shapes of another seed at M = 129-1664, N = 136-952): 0.552 -> 0.871x,
# 15 up (452 x 296 x 3792 0.35 -> 1.12x), 5 down 1-3.5%. Not on one column of 128 (N <= SHORT_SPLIT_MIN_N: GPT-OSS's
# router at M = 256 / 512 keeps the Triton split, 1.03 / 0.95x in the suite; the least N measured is 136).
FEW_TILES_SHORT_SPLIT_K = 1024
SHORT_SPLIT_MIN_N = 128
FEW_TILES_SPLIT_K = 2048  # `few_tiles`: the least K a split range keeps (1024 lost: 1024 x 256 x 2048 64 x 64
# unsplit 0.95x, split 2 0.85x; 300 x 1000 x 8192 64 x 128 split 3 1.01x against 0.66x unsplit)


def few_tiles(menu, M: int, N: int, K: int, num_cus: int, floor: float = FEW_TILES_FILL) -> tuple[dict | None, float]:
    """(tile, its launch fill) of `few_tiles`' menu for a shape whose 128 x 128 tiles are under FEW_TILES of the
    SMs: each menu tile split along K up to one wave of CTAs, every split range at least FEW_TILES_SPLIT_K long;
    the smaller tile where its launch fills GLUON_WAVE_MARGIN more of its waves (`launch_fill`, rows and columns
    past M and N empty); (None, fill) where that fill is under `floor` (the Triton tier's split then serves:
    its short split ranges still beat a few lone tiles, e.g. GPT-OSS's router 512 x 128 x 2880 split 11 0.96x)."""
    best, best_fill = None, 0.0
    for c in menu:
        if c["BLOCK_SIZE_N"] > 128 and K < FEW_TILES_WIDE_MIN_K:  # the 64 x 192 on long K only
            continue
        tiles = -(-M // c["BLOCK_SIZE_M"]) * -(-N // c["BLOCK_SIZE_N"])
        cfg = dict(c, NUM_KSPLIT=max(1, min(num_cus // tiles, K // FEW_TILES_SPLIT_K, MAX_SPLIT)))
        fill = launch_fill(cfg, M, N, num_cus)
        if best is None or fill > GLUON_WAVE_MARGIN * best_fill:
            best, best_fill = cfg, fill
    return (best if best_fill >= floor else None), best_fill


def few_tiles_note(tile: dict, fill: float, num_cus: int) -> str:
    split = tile["NUM_KSPLIT"]
    return (f"the ping-pong's {tile['BLOCK_SIZE_M']} x {tile['BLOCK_SIZE_N']}" +
            (f", K split up to {split}" if split > 1 else "") + f": {fill:.0%} of {num_cus} SMs")


def short_split_tile(M: int, N: int, K: int, num_cus: int) -> dict | None:
    """`short_split`: the ping-pong's 64 x 64 with K split to one wave of `num_cus` SMs in ranges of at least
    FEW_TILES_SHORT_SPLIT_K, where its tiles take one round; None where they take more."""
    tiles = -(-M // PINGPONG_64X64["BLOCK_SIZE_M"]) * -(-N // PINGPONG_64X64["BLOCK_SIZE_N"])
    if tiles > num_cus:
        return None
    return dict(PINGPONG_64X64, NUM_KSPLIT=max(1, min(num_cus // tiles, K // FEW_TILES_SHORT_SPLIT_K, MAX_SPLIT)))
