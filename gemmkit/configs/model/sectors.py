"""bf16's cooperative tiles by K: on rows off 32-byte sectors (K % 16 == 8) the coop oriented against the operand left
off them (`off_sector`, a rule), and over any rule's answer at a long K the coop split along K (`long_k_split`) or a
split coop tile in a 64-row ping-pong tile's place (`long_k_coop`).
"""
from __future__ import annotations

from .base import GLUON_WAVE_MARGIN, MAX_SPLIT, MIN_SPLIT_STEPS, SECTOR_ELEMENTS, Call, coop_bucket, launch_fill, \
    pingpong_64

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   long_k_coop  bf16, over any rule's answer (`long_k_coop`, after `long_k_split`): at K >= LONG_K_COOP_MIN_K and
#                LONG_K_COOP_MIN_M < M <= OFF_SECTOR_MAX_M, where the answer is a 64-row Gluon ping-pong tile, a
#                cooperative tile split along K to one wave (ranges of LONG_K_COOP_MIN_STEPS K steps or more): on rows
#                off 32-byte sectors `off_sector`'s, on rows on them the best-filling of `off_sector`'s two and the
#                `coop_widths` tiles; its measurements at LONG_K_COOP_MIN_M below.
# `off_sector` (bf16, ahead of `gluon_waves` on its cooperative buckets): where K % 16 == 8 (16-bit rows start
# off 32-byte sectors; K % 8 != 0 goes to pad_k's aligned copies instead), M >= OFF_SECTOR_MIN_M and N >=
# OFF_SECTOR_MIN_N, the cooperative tile oriented so that the operand dispatch does not copy (`pitch` copies the
# smaller, x where M <= N) has the fewer rows a step, 4 stages: 256 x 128 where M <= N (w's 128 rows off sectors a
# step, x's 256 on the copy), else 128 x 256. A TMA box row off a sector costs our loads ~3 cycles a 128-byte row (the
# ping-pong's 128 x 128 at 1500 x 7000 x 3000 ran 1.45x its aligned time, the coop 128 x 256 1.19x: docs/PERF.md
# "Unaligned K"), so the tile with the fewest off-sector rows per multiply keeps its loads under its wgmma (cuBLAS's
# nvjet 160 x 256 in 2 x 1 clusters issues ~290 rows a step for 1280 cycles of wgmma). H200 against cuBLAS, same
# process: predicted 256 x 128 best where x is copied, +10-15% on the ping-pong's rows; measured on 5 rows
# (ab/bf16_offsector_coop.json) served 0.768 -> 0.860x, held out (bf16_offsector_coop_heldout.json, 8 random shapes
# at M = 486-3553, N = 1480-9840) 0.787 -> 0.870x, 7 of 8 up to +46% (486 x 6216 x 11304, the 64 x 192 split 0.58 ->
# 0.84x); the one down, 3553 x 2952 x 2664 (M > N: w copied, x's 256 rows off sectors) -4%, where 128 x 256 ran +3%:
# the M > N orientation, fitted on that row and 1844 x 1480 x 4376 (+9%). As served, against the rule off
# (ab/bf16_offsector_served.json, 14 random shapes the rule fills >= 60% of the SMs, 7 with M > N): M <= N up to +37%
# (3466 x 9544 x 11208), M > N -2 to +8%. Its tile on a partial round lost (10 shapes under 60%: 777 x 1536 x 8008
# 0.59x, 48 tiles): so the other orientation where it fills GLUON_WAVE_MARGIN more of its waves (0.82 -> 1.12x at
# 1028 x 6928 x 1480, 0.68 -> 0.86x at 856 x 4384 x 2520), and under one round of tiles K split to one wave
# (`off_sector_tile`: 777 x 1536 x 8008 128 x 256 split 3 1.08x, 1018 x 1544 x 7928 split 2 0.57 -> 0.82x). Still
# under 0.75x whichever tile: 527 x 8320 x 1144, 1576 x 3104 x 2600 (both orientations 51-57% filled). The least M
# and N measured.
OFF_SECTOR_MIN_M, OFF_SECTOR_MIN_N, OFF_SECTOR_MAX_M = 448, 1472, 4096
# `long_k_coop` (choose, over any rule's answer on a coop bucket, after `long_k_split`): at K >= LONG_K_COOP_MIN_K
# and LONG_K_COOP_MIN_M < M <= OFF_SECTOR_MAX_M, where the rules answered with a 64-row Gluon ping-pong tile
# (`split_widths`, `narrow_pingpong`, `one_wave`, `few_tiles`, ...), a cooperative tile split along K to one wave
# (`off_sector_tile`). A 64-row tile loads a whole w box for 64 rows (each SM's two consumers their own), which a
# long K makes the time, more so on rows off 32-byte sectors, whose TMA box rows cost the loads ~3 cycles each
# (docs/PERF.md "Operands the TMA kernels load slowly"). H200 against cuBLAS, one process, heated:
# - Rows off sectors (K % 16 == 8): `off_sector`'s tile, where its launch fill is at least LONG_K_COOP_OFF_SHARE of
#   the answer's. Fit (ab/bf16_offsector_low_m.json, 38 random shapes at M = 131-3915 below `off_sector`'s M or N,
#   seeds 40001-40300, both orientations split to one wave and the coop 128 x 144 / 160 / 192 unsplit): at
#   K >= 13016 all 11 rows up, 0.715 -> 0.911x; the 6 with a 64-row answer 0.606 -> 0.871x (197 x 17832 x 16472
#   0.57 -> 0.91x on 41% of the SMs against the 64 x 192 split's 72%; 751 x 648 x 25048 0.56 -> 0.89x); at
#   K = 280-11528 mixed (-40% to +23%, 12 of 27 up), so not there. Held out (ab/bf16_long_k_coop_off_heldout.json, seeds
#   50001-50079, the 30 rows the first form changed): the 22 with a 64-row answer 0.695 -> 0.823x, 18 up (to +61%),
#   4 down 3-8% (N <= 808 split 16 ways, 3995 x 272); the 128 x 128 / 128 x 160 answers -24% to +20%, hence 64-row
#   answers only. Held out again with that (ab/bf16_long_k_coop_off_heldout2.json, seeds 60001-60099, 21 rows):
#   0.696 -> 0.857x, 18 up (to +66%), 3 down 3-9% (527 x 328, 211 x 584: small N split 13-16 ways). (Fitted and held
#   out with split ranges of MIN_SPLIT_STEPS or more; LONG_K_COOP_MIN_STEPS, from the rows on sectors below, came
#   after, and the verification below ran with it.)
# - Rows on sectors: the first of `off_sector`'s two tiles and the `coop_widths` tiles that fills the most, where that
#   is GLUON_WAVE_MARGIN over the answer's. Fit (ab/bf16_long_k_coop_fit.json, 40 random shapes of seeds 70001-70039
#   where one of those tiles filled 1.1x more than the answer): the 10 with a 64-row answer 0.860 -> 0.978x, all up
#   (410 x 784 x 26224 0.70 -> 1.00x, 201 x 3744 x 13632 0.68 -> 0.81x); over the 30 with 128-row answers the same
#   pick lost (0.954 -> 0.916x, 9 up), so not there. Held out (ab/bf16_long_k_coop_heldout.json, seeds 80001-80199,
#   40 of the 161 rows the rule changed): 0.853 -> 0.950x, 32 up (to +62%: 1421 x 288 x 17648 0.60 -> 0.97x), 8 down;
#   the three worst (-11% to -19%: 1072 x 256 x 12672 and 1047 x 256 x 12544 split 14 ways, 249 x 576 x 13632 split
#   16) ran 13-14 K steps a split range, hence LONG_K_COOP_MIN_STEPS (which keeps their answers).
# - Both, verified with the rule as it is (ab/bf16_long_k_coop_verify.json, seeds 90001-90299, a random 52 of the 356
#   rows it changes, and 319 x 1696 x 23680 below): on sectors 37 rows 0.875 -> 0.949x, 27 up (to +46%), 10 down
#   (to -10%: 64 x 128 split 2-4 at N = 848-896 on 256 x 128 / 128 x 144 split 9-11 ways); off sectors 16 rows
#   0.643 -> 0.830x, 15 up (to +60%: 226 x 14064 x 17384 0.55 -> 0.88x), 422 x 280 x 14312 -17%.
LONG_K_COOP_MIN_M, LONG_K_COOP_MIN_K, LONG_K_COOP_OFF_SHARE = 128, 12288, 0.55
LONG_K_COOP_MIN_STEPS = 16
# `long_k_split` (choose, over any rule's answer on a coop bucket): at K >= LONG_K_SPLIT_MIN_K, M > LONG_K_SPLIT_MIN_M,
# rows on sectors, where the coop's tiles are under one round and the answer fills few SMs unsplit, the coop split
# along K to one wave. H200 against cuBLAS (ab/bf16_coop_split.json, 50 shapes of the class at K = 896-26640): the
# split lost at K <= 11072 (-2 to -46%: the fp32 partials and the reduce), won on all five at K >= 14160 (+16 to +58%:
# 2733 x 256 x 26640 0.66 -> 1.04x, 1319 x 768 x 21888 0.77 -> 0.97x), the orientation that fills more the better one
LONG_K_SPLIT_MIN_K, LONG_K_SPLIT_MIN_M = 12288, 256


def _sector_tiles(c: Call) -> bool:
    """A cooperative Gluon bucket (`coop_bucket`) where the op names `off_sector`'s two tiles, which `off_sector`,
    `long_k_split` and `long_k_coop` serve."""
    return bool(c.rules.get("off_sector")) and coop_bucket(c)


def rule_off_sector(c: Call):
    """`off_sector`: on a cooperative Gluon bucket (as `gluon_waves`'s), K % 16 == 8 and OFF_SECTOR_MIN_M <= M <=
    OFF_SECTOR_MAX_M, N >= OFF_SECTOR_MIN_N: the coop oriented against the operand whose rows stay off sectors,
    unless the other orientation fills GLUON_WAVE_MARGIN more of its waves; K split to one wave where its tiles are
    fewer than the SMs (`off_sector_tile`)."""
    if not (_sector_tiles(c) and c.K % SECTOR_ELEMENTS == 8
            and OFF_SECTOR_MIN_M <= c.M <= OFF_SECTOR_MAX_M and c.N >= OFF_SECTOR_MIN_N):
        return None
    return off_sector_choice(c)


def off_sector_choice(c: Call, rule: str = "off_sector", min_steps: int | None = None) -> tuple[dict, list]:
    """(config, notes) of `off_sector`'s tile for the call: the coop oriented so the operand dispatch leaves off
    sectors has the fewer rows a step, unless the other orientation fills GLUON_WAVE_MARGIN more of its waves; K split
    to one wave where its tiles are fewer than the SMs (`off_sector_tile`, ranges of at least `min_steps` K steps,
    MIN_SPLIT_STEPS where None)."""
    tiles, cfg = c.rules["off_sector"], c.cfg
    kept = "w" if c.M <= c.N else "x"  # (dispatch.pitch copies the smaller operand: x where M <= N)
    first, other = (tiles[0], tiles[1]) if c.M <= c.N else (tiles[1], tiles[0])
    tile, fill = off_sector_tile(cfg, first, c.M, c.N, c.K, c.num_cus, min_steps)
    alt, alt_fill = off_sector_tile(cfg, other, c.M, c.N, c.K, c.num_cus, min_steps)
    why = f"the fewer rows of {kept} a step"
    if alt_fill > GLUON_WAVE_MARGIN * fill:
        why = f"{alt_fill:.0%} of its waves filled against {fill:.0%} the other way"
        tile = alt
    split = tile.get("NUM_KSPLIT", 1)
    return tile, [f"K = {c.K}: rows off 32-byte sectors ({'x' if kept == 'w' else 'w'} copied to a 128-byte pitch, "
                  f"{kept} not): the cooperative {tile['BLOCK_SIZE_M']} x {tile['BLOCK_SIZE_N']}" +
                  (f", K split {split} ways" if split > 1 else "") + f", {why} (`{rule}`)"]


def long_k_coop(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`long_k_coop`, over what the rules answered (`tile`, `notes`): on a cooperative Gluon bucket at
    K >= LONG_K_COOP_MIN_K and LONG_K_COOP_MIN_M < M <= OFF_SECTOR_MAX_M, where the answer is the Gluon ping-pong's
    64-row tile, a cooperative tile split along K to one wave: on rows off 32-byte sectors (K % 16 == 8)
    `off_sector`'s (`off_sector_choice`) where its launch fill is at least LONG_K_COOP_OFF_SHARE of the answer's; on
    rows on them the first of `off_sector`'s two tiles and the `coop_widths` tiles (`off_sector_tile`) that fills the
    most, where that is GLUON_WAVE_MARGIN over the answer's. Other K (K % 8 != 0, where dispatch's pad_k copies both
    operands to aligned rows) unmeasured: left alone."""
    sector = c.K % SECTOR_ELEMENTS
    if not (c.rules.get("long_k_coop") and _sector_tiles(c) and sector in (0, 8) and c.K >= LONG_K_COOP_MIN_K
            and LONG_K_COOP_MIN_M < c.M <= OFF_SECTOR_MAX_M and pingpong_64(tile)):
        return tile, notes
    served = launch_fill(tile, c.M, c.N, c.num_cus)
    if sector == 8:
        chosen, why = off_sector_choice(c, "long_k_coop", LONG_K_COOP_MIN_STEPS)
        fill = launch_fill(chosen, c.M, c.N, c.num_cus)
        if fill < LONG_K_COOP_OFF_SHARE * served:
            return tile, notes
    else:
        menu = list(c.rules["off_sector"]) + [{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": w, "num_stages": st}
                                              for w, st in c.rules.get("coop_widths") or ()]
        fill, chosen = -1.0, None
        for t in menu:  # the first that fills the most
            cand, f = off_sector_tile(c.cfg, t, c.M, c.N, c.K, c.num_cus, LONG_K_COOP_MIN_STEPS)
            if f > fill:
                fill, chosen = f, cand
        if fill <= GLUON_WAVE_MARGIN * served:
            return tile, notes
        split = chosen["NUM_KSPLIT"]
        why = [f"K = {c.K}: the cooperative {chosen['BLOCK_SIZE_M']} x {chosen['BLOCK_SIZE_N']}"
               + (f", K split {split} ways" if split > 1 else "") + ", the best-filling coop tile (`long_k_coop`)"]
    return chosen, notes + [f"that fills {served:.0%} of the SMs, this tile {fill:.0%}; " + why[0]]


def off_sector_tile(cfg: dict, tile: dict, M: int, N: int, K: int, num_cus: int,
                    min_steps: int | None = None) -> tuple[dict, float]:
    """(config, its `launch_fill`): the bucket `cfg` on an `off_sector` tile, K split to one wave of `num_cus` SMs
    where its tiles are fewer (each split range at least `min_steps` K steps, MIN_SPLIT_STEPS where None)."""
    count = -(-M // tile["BLOCK_SIZE_M"]) * -(-N // tile["BLOCK_SIZE_N"])
    steps = MIN_SPLIT_STEPS if min_steps is None else min_steps
    split = max(1, min(num_cus // count, -(-K // cfg["BLOCK_SIZE_K"]) // steps, MAX_SPLIT))
    out = dict(cfg, **tile, NUM_KSPLIT=split)
    return out, launch_fill(out, M, N, num_cus)


def long_k_split(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`long_k_split`, over what the rules answered (`tile`, `notes`): on a cooperative Gluon bucket with K % 16 == 0,
    K >= LONG_K_SPLIT_MIN_K and M > LONG_K_SPLIT_MIN_M, where the coop bucket's tiles take under one round of the SMs
    and the answer runs unsplit: `off_sector`'s coop tiles split along K to one wave (`off_sector_tile`: 128 x
    256, or 256 x 128 where it fills GLUON_WAVE_MARGIN more) where that fills GLUON_WAVE_MARGIN more of the SMs than
    the answer."""
    tiles, cfg, M, N, K, num_cus = c.rules.get("off_sector"), c.cfg, c.M, c.N, c.K, c.num_cus
    if not (c.rules.get("long_k_split") and _sector_tiles(c) and K % SECTOR_ELEMENTS == 0 and K >= LONG_K_SPLIT_MIN_K
            and M > LONG_K_SPLIT_MIN_M and tile.get("NUM_KSPLIT", 1) == 1
            and -(-M // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"]) < num_cus):
        return tile, notes
    tall, wide = tiles
    split, fill = off_sector_tile(cfg, wide, M, N, K, num_cus)
    alt, alt_fill = off_sector_tile(cfg, tall, M, N, K, num_cus)
    if alt_fill > GLUON_WAVE_MARGIN * fill:
        split, fill = alt, alt_fill
    served = launch_fill(tile, M, N, num_cus)
    if split["NUM_KSPLIT"] == 1 or fill <= GLUON_WAVE_MARGIN * served:
        return tile, notes
    return split, notes + [
        f"K = {K}: that fills {served:.0%} of the SMs unsplit; the cooperative {split['BLOCK_SIZE_M']} x "
        f"{split['BLOCK_SIZE_N']} split {split['NUM_KSPLIT']} ways {fill:.0%} (`long_k_split`)"]
