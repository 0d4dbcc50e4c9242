"""bf16's split-width tiles: widths past the power-of-two tiles (configs.SPLIT_N: 160 = 128 + 32, 144 = 128 + 16, 192
= 128 + 64), where they fill the SMs' waves better. The ping-pong's 64-row tiles (`split_widths`, at 128 < M <= 512;
`wide_one_wave`, one wave above M = 512), the cooperative kernel's 128-row tiles (`coop_widths`), and where the coop's
own 128 x 256 keeps a call a width would take (`coop_tail`). `gluon_waves` chooses among them; `coop_one_wave`, after
every other rule, puts the cooperative tile in the place of a 64-row one where it takes one wave.
"""
from __future__ import annotations

from .base import GLUON_WAVE_MARGIN, SECTOR_ELEMENTS, Call, area_fill, coop_bucket, pingpong_64

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   split_widths  bf16 at SPLIT_WIDTH_MIN_M <= M <= SPLIT_WIDTH_MAX_M, in `gluon_waves`' choice: the ping-pong's 64-row
#                split tiles A + B of these widths (configs.SPLIT_N; 160 = 128 + 32, 144 = 128 + 16), unsplit, where
#                one fills its waves (tiles over waves x SMs) to at least SPLIT_WIDTH_FILL and better by
#                GLUON_WAVE_MARGIN than the coop's, the 128 x 128 ping-pong's and the 64 x 192's (the best of the
#                three). What cuBLAS does there: 144 / 168 / 80-wide tiles, one wave of 116-128 CTAs
#                (results/h200/vendor_kernels_bf16_weak.json). ab/bf16_split_widths.json and ab/bf16_m128_256_grid2.json
#                (H200, against cuBLAS): 64 x 160 on 116-128 tiles (M = 256, 4608 / 5120 columns: one wave, a tile a
#                CTA) 0.84-0.93 -> 0.88-1.00x, on 256 tiles (M = 256 / 512, 5120 / 10240 columns) 0.81-0.88 ->
#                0.84-0.95x; 64 x 144 on 4608 columns at M = 512 0.74-0.77 -> 0.81-0.86x. At M = 1024 (5 rows, 512
#                tiles) the a16w16 suite had 0.86-0.89 -> 0.84-0.88x where the A/B had +4%: M <= 512. Lost at
#                M = 3000 (0.43 against the coop's 0.79x), at 256 x 7168 / 14336 (180 / 360 tiles filling 68% / 91%
#                of their waves: 0.72 / 0.89x against 0.89 / 0.94x; the margin keeps both). The narrow-tail widths
#                (48, 80: B = 16 on A = 32 / 64) and 128-row split tiles (128 x 80 / 96) lost everywhere (0.40-0.85x
#                against 0.80-0.93x), so they are not in the menu. From M = 129 (was 256: at 128 < M < 256 the coop's
#                128-row tiles leave most of a second row empty): ab/bf16_short_k_wave.json's 10 rows at M = 134-199,
#                N = 9088-29056 (coop 0.59-0.77x) found a width best where it filled its waves (164 x 13824 64 x 160
#                0.71 -> 0.93x); held out (ab/bf16_m129_512_heldout.json, 21 random rows at M = 129-255): 0.757 ->
#                0.896x, none down. Past two waves at 256 < M <= 512 (`deep_rows`, DEEP_ROWS_*): a 64-row tile costs
#                1.2-1.6x the coop's time per output, and the 128 x 128's partial round is split from K = 2048, so
#                the width serves there only at shorter K and 1.35x the 128-row tiles' area fill
#                (ab/bf16_deep_rows.json: 287-370 x 11424-12728 0.57-0.65 -> 0.67-0.83x on 128 x 128; 459 x 6960 x
#                1832 0.51 -> 0.76x on the coop; held out, bf16_model_rules_final.json with the rules below: 95 rows
#                0.63 -> 0.78x).
#   coop_widths  bf16 at COOP_WIDTH_MIN_M <= M <= COOP_WIDTH_MAX_M, in `gluon_waves`' choice (before `split_widths`,
#                which it replaces where both fill their waves): the cooperative kernel's
#                128-row split tiles A + B of these widths (configs.SPLIT_N, each with the ring the A/B ran) where
#                one takes at most COOP_WIDTH_WAVES waves and fills them (the shape's area over waves x SMs x the tile's
#                area: a tile's columns past N count as empty) to at least SPLIT_WIDTH_FILL and better by
#                GLUON_WAVE_MARGIN than the coop's, the 128 x 128 ping-pong's and the 64 x 192's tile counts. The
#                wider on a tie. ab/bf16_coop_split_widths.json (H200, 10 held-out rows at M = 1000-4096, against
#                cuBLAS): 1024 x 5120 (256 tiles of 128 x 160, two waves at 97%) 0.83-0.89 -> 0.92-0.95x; 1000 x 3000
#                and 1024 x 2880 (120-128 tiles of 128 x 192, one wave) 0.80 / 0.82 -> 0.98 / 0.99x; 4096 x 576
#                (128 of 128 x 144; 128 x 160 has as many tiles, 10% of their columns empty: 0.84x) 0.82 -> 0.89x.
#                Lost where the widths' tiles take three waves or more, even fuller ones: 2048 x 5120 (512 of
#                128 x 160) 0.92 against the ping-pong's 0.97x, 1024 x 7168 0.96 against the coop's 0.99x,
#                3000 x 5000 x 7000 0.70 against 0.80x; and at 2048 x 2880 the 128 x 192 (two waves, 91%) ran 1.04
#                against the ping-pong's 0.98x, within the margin of the ping-pong's 93% (kept). At M = 480 / 512
#                (ab/bf16_coop_widths_small_m.json, then ab/bf16_coop_widths_m512.json: every suite row the rule
#                changes there, 16) one wave of 128 tiles of 128 x 144 / 160 (two at 10240 columns) against the
#                ping-pong's 64 x 144 / 160 on twice as many: 0.82-0.95 -> 0.86-1.00x, geomean 0.875 -> 0.916 (each
#                w tile loaded once for 128 rows); at M = 384 (96 tiles, 73%) it lost, 0.78 against 0.94x. Left out,
#                measured: 2048 x 4608 x 36864, three waves of 128 x 192, 1.01 against the served 0.92x.
#                On one row of 128-row tiles (64 < M <= 128, where the Triton bucket gives way to `wide_config`) the
#                same tiles up to COOP_ROW_WAVES waves, against `wide_config`'s 128 x 128 fill: the area fill keeps it
#                to M >= ~109 (rows past M count as empty). ab/bf16_m128_256_coop_widths.json (H200, M = 128, four
#                rows of 35840-51200 columns, or tables): 0.84-0.88 -> 0.97-0.98x, three waves (128 x 51200, 356
#                tiles at 90%) too; held out (ab/bf16_coop_row_heldout.json): 120 x 35840 0.83 -> 0.95x,
#                128 x 73728 x 4608 (three waves of 128 x 192) 0.94 -> 1.00x. At M = 256 (two rows of tiles) the same
#                tiles lost where they filled few SMs (0.58-0.76 against 0.89-0.95x), but where `split_widths`' 64-row
#                tile fills its waves, its 128-row counterpart filling as well won (it loads each w box once for 128
#                rows, and the card at its power cap favours fewer bytes a FLOP: +5-6% cool, +9% after heating, on
#                256 x 10240 x 5120 / 8192; ab/bf16_m256_tiles_heat.json): so under COOP_WIDTH_MIN_M the tile takes
#                `split_widths`' place where it fills SPLIT_WIDTH_FILL (ab/bf16_coop_widths_m256.json, 16 rows at
#                M = 234-384: 0.836 -> 0.947x cuBLAS, one -2%). Not in the 128 x 128 ping-pong's place there (M =
#                357-381, two waves: 3 of 7 rows up 4-6%, 4 down 2-8%). Tiles taking one wave win down to an area fill
#                of COOP_WIDTH_ONE_WAVE_FILL (ab/bf16_coop_widths_one_wave.json, 20 rows at M = 513-3709 where the
#                coop bucket's 128 x 256 filled 43-64% or the 64 x 192 served: 0.735 -> 0.934x, every row +7-48%;
#                a second seed's 20: 17 one-wave rows all up, 0.75 -> 0.94x, three of two waves at 80-83% in the
#                ping-pong's place -2 to -12%, hence one wave; that rule checked on a third seed's 19 rows,
#                ab/bf16_coop_widths_one_wave_verify.json: 0.723 -> 0.905x, all up; M = 129-512,
#                bf16_coop_widths_m256_verify.json: 16 rows 0.771 -> 0.911x, all up).
#   coop_tail    bf16, over `coop_widths` from M = 129: at K >= COOP_TAIL_MIN_K the coop bucket's 128 x 256 keeps a call
#                whose width tile would take two waves, where its own tiles take a round and a tail the kernels' tail
#                split runs along K (what was measured: at COOP_TAIL_MIN_K below; held out 0.891 -> 0.941x).
#   wide_one_wave  bf16, in `gluon_waves` where it would serve the ping-pong 128 x 128 at WIDE_ONE_WAVE_MIN_M <= M <=
#                WIDE_ONE_WAVE_MAX_M, N > WIDE_ONE_WAVE_MIN_N: the ping-pong's 64-row split tile of these widths
#                (`split_width_config`: unsplit, 8 stages) whose tiles take one wave of the SMs and fill the most of
#                their area, where that is at least SPLIT_WIDTH_FILL and GLUON_WAVE_MARGIN over the 128 x 128's area
#                fill (695 x 1664 x 2688: 78 tiles of 128 x 128 fill 53%, 132 of 64 x 144 95%). `split_widths` stops
#                at M = 512, where multi-wave rows at M = 1024 were mixed; in one wave each SM runs one tile a third to
#                a half the 128 x 128's area. H200 against cuBLAS, heated, one process: fitted on
#                ab/bf16_wide_one_wave_fit.json (80 shapes of random seeds 1-150 where a one-wave width filled >= 85%
#                and 1.1x the served launch): in the 128 x 128's place 56 rows 0.868 -> 0.968x (-1.5% to +38%); in
#                `narrow_pingpong`'s 64 x 192 place (14 rows, -16% to +14%) and the coop's split (10, -21% to +25%)
#                mixed: left alone. Held out (_heldout.json, seeds 151-300, measured before the rule was fitted): the
#                47 rows it changes 0.839 -> 0.942x, two down (-5%, -0.7%); again (_verify.json, every shape of seeds
#                301-400 it changes, 38, and two test rows): 40 rows 0.838 -> 0.953x, every one up (+4% to +43%).
SPLIT_WIDTH_MIN_M, SPLIT_WIDTH_MAX_M = 129, 512  # `split_widths`: where it won (M = 1024: mixed, see OP_RULES)
SPLIT_WIDTH_FILL = 0.85  # `split_widths`: the least share of its waves (tiles over waves x SMs) its tiles fill
# `wide_one_wave`: where it was fitted and held out (random shapes at M = 513-4096, N = 304-2408)
WIDE_ONE_WAVE_MIN_M, WIDE_ONE_WAVE_MAX_M, WIDE_ONE_WAVE_MIN_N = SPLIT_WIDTH_MAX_M + 1, 4096, 256
COOP_WIDTH_MIN_M, COOP_WIDTH_MAX_M = 385, 4096  # `coop_widths`: four 128-row tiles and more, measured to 4096
COOP_WIDTH_WAVES = 2  # `coop_widths`: lost from three waves
COOP_WIDTH_ONE_WAVE_FILL = 0.7  # `coop_widths`: the least area fill of tiles that take one wave (the lowest measured)
COOP_ROW_WAVES = 3  # `coop_widths` on one row of 128-row tiles (64 < M <= 128): won on three waves too
# `coop_one_wave` (after the other rules, over an answer that is still one of the ping-pong's 64-row tiles): at
# 128 < M <= COOP_WIDTH_MAX_M and K > COOP_ONE_WAVE_MIN_K, the `coop_widths` tile whose 128-row tiles take one wave and
# fill COOP_WIDTH_ONE_WAVE_FILL of it, however fuller the 64-row tiles' waves: a 64-row tile loads a w box for 64 rows,
# so its fill counts for less than the area says. Found on the H100 by timing 14 tiles on each of 78 random shapes
# (results/h100/ab/bf16_menu_oracle.json, _oracle2.json: 395 x 5920 x 1944 0.59 -> 0.86x cuBLAS, 1373 x 2008 x 13152
# 0.64 -> 0.94x, 249 x 11584 x 3632 0.82 -> 0.99x; the three rows where the tile fits, of 42 served a 64-row tile).
# Then every shape of seeds 20261300-399 at M > 128 where it fits (ab/bf16_coop_one_wave_over_64.json, H100, heated,
# one process, 58 rows and those three): at K > 1024 43 rows 0.81 -> 0.96x, 41 up (to +81%), two down (-5 / -2%,
# M = 185 / 191 on 144 columns); at K <= 1024 18 rows 0.94-0.98x of the answer (`short_k_rounds`' 12 among them).
# One row past COOP_WIDTH_MAX_M (5553 x 512 x 14208, +14%) is left out with `coop_widths`' own cap.
# Held out (_verify.json: 26 rows of seeds 20261400-499 and the 4 suite rows it changes): H100 0.838 -> 0.979x, 27 up,
# 3 down <= 4%; H200 (results/h200/ab/bf16_coop_one_wave_verify_h200.json) 0.891 -> 0.956x, 23 up, 7 down <= 7%
# (GPT-OSS o_proj at M = 1024 1.045 -> 0.997x; the other three suite rows +1 to +3%).
COOP_ONE_WAVE_MIN_K = 1024
# `coop_tail` (in `gluon_waves`, over `coop_widths` from M = 129): at K >= COOP_TAIL_MIN_K, rows on sectors, the coop
# bucket's 128 x 256 keeps the call where a `coop_widths` tile would take two waves and the 128 x 256's tiles take
# more than one round with a partial last round of at most half the SMs, which the kernels' tail split runs as two or
# more K splits a tile (hopper_pingpong.tail_plan), so the coop's waves fill as well as the width's. Why: a split
# tile's B-column wgmma costs 15-20% more a FLOP on 128 x 144 / 160 (ab/bf16_split_tile_rate.json), and the tail
# split's fp32 partials and reduce pay from a long K on (`long_k_split` found the same K). `coop_widths` was fitted
# before the cooperative kernel had a tail split. H200 against cuBLAS, heated, one process
# (ab/bf16_coop_tail_vs_widths.json: the 12 suite rows of the class and 20 random shapes of seed 20261204, K =
# 2304-25600): at K >= 12288 12 of 13 rows up to +16% (1024 x 5120 x 17920 0.92 -> 1.00x, 3150 x 1520 x 23488 0.84
# -> 0.97x), one -0.4%; at K <= 10736 18 of 19 down to -16% (727 x 6832 x 2608 0.99 -> 0.83x), one +2%. Held out
# (ab/bf16_coop_tail_heldout.json, 18 shapes of seed 20261205 at K = 13808-29520): 0.891 -> 0.941x, 15 up (to +12%),
# 3 down 0.2-2.6% (all three split three ways). Triton >= 3.9 runs this tile without its tail split
# (kernels/_budgets.py TAIL_COOP_WIDE): there the rule's tile fills a round and a part (unmeasured).
COOP_TAIL_MIN_K = 12288


def coop_width_config(cfg: dict, width: int, stages: int) -> dict:
    """The `coop_widths` tile over a cooperative Gluon bucket `cfg` (128 x 256): the same kernel on 128 x `width`."""
    return dict(cfg, BLOCK_SIZE_N=width, num_stages=stages, NUM_KSPLIT=1)


def coop_width_fit(widths, M: int, N: int, num_cus: int, max_waves: int, best: float,
                   one_wave_floor: float = SPLIT_WIDTH_FILL):
    """(width, stages, area fill, tiles) of the `coop_widths` tile (128 rows) that fills its waves best, of those
    that take at most `max_waves` waves and fill them to SPLIT_WIDTH_FILL (`one_wave_floor` where the tiles take
    one wave) and by GLUON_WAVE_MARGIN over `best` (the served tiles' fill); the wider on a tie. None where none
    does."""
    rows = -(-M // 128)
    fits = []
    for w, s in widths:
        tiles = rows * -(-N // w)
        fill = area_fill(M, N, 128, w, num_cus)
        floor = one_wave_floor if tiles <= num_cus else SPLIT_WIDTH_FILL
        if tiles <= max_waves * num_cus and fill >= floor and fill > GLUON_WAVE_MARGIN * best:
            fits.append((fill, w, s, tiles))
    if not fits:
        return None
    fill, w, stages, tiles = max(fits)
    return w, stages, fill, tiles


def coop_tail(coop_tiles: int, width_tiles: int, K: int, num_cus: int) -> bool:
    """`coop_tail`: whether the coop bucket's 128 x 256 (`coop_tiles` tiles) serves in place of a `coop_widths` tile
    (`width_tiles` tiles): K >= COOP_TAIL_MIN_K on sectors, the width's tiles past one wave, the coop's past one round
    with a partial last round of at most half the SMs (a tail split of two or more a tile)."""
    tail = coop_tiles % num_cus
    return (K >= COOP_TAIL_MIN_K and K % SECTOR_ELEMENTS == 0 and width_tiles > num_cus and coop_tiles > num_cus
            and 0 < tail <= num_cus // 2)


def coop_tail_note(coop: int, width: int, width_tiles: int, K: int, num_cus: int) -> str:
    return (f"K = {K}: {coop} tiles of 128 x 256, one round and a tail of {coop % num_cus} that the tail split runs "
            f"along K, against two waves of {width_tiles} split tiles of 128 x {width}: the coop (`coop_tail`)")


def wide_one_wave(widths, M: int, N: int, num_cus: int, base_fill: float) -> tuple[int, float, int] | None:
    """`wide_one_wave`: (width, area fill, tiles) of the ping-pong's 64 x width split tile of `widths` (the wider on a
    tie) whose tiles take one wave of the SMs and fill the most of their area, where that is at least SPLIT_WIDTH_FILL
    and GLUON_WAVE_MARGIN over `base_fill` (the ping-pong 128 x 128's area fill), at WIDE_ONE_WAVE_MIN_M <= M <=
    WIDE_ONE_WAVE_MAX_M and N > WIDE_ONE_WAVE_MIN_N; else None."""
    if not (widths and WIDE_ONE_WAVE_MIN_M <= M <= WIDE_ONE_WAVE_MAX_M and N > WIDE_ONE_WAVE_MIN_N):
        return None
    fits = [(area_fill(M, N, 64, w, num_cus), w, -(-M // 64) * -(-N // w)) for w in widths]
    fits = [f for f in fits if f[2] <= num_cus]
    if not fits:
        return None
    fill, w, tiles = max(fits)
    if fill < SPLIT_WIDTH_FILL or fill <= GLUON_WAVE_MARGIN * base_fill:
        return None
    return w, fill, tiles


def split_width_config(cfg: dict, width: int) -> dict:
    """The `split_widths` tile over a Gluon bucket `cfg`: the ping-pong's 64 x `width` split tile, unsplit, the ring
    as deep as the shared memory allows (8 stages at most; what ab/bf16_split_widths.json ran)."""
    return dict(cfg, BLOCK_SIZE_M=64, BLOCK_SIZE_N=width, num_warps=4, num_stages=8, NUM_KSPLIT=1)


def coop_one_wave(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`coop_one_wave` (bf16, after the other rules; on a cooperative Gluon bucket, whose tile it narrows as
    `coop_widths` does): over one of the ping-pong's 64-row tiles at 128 < M <=
    COOP_WIDTH_MAX_M and K > COOP_ONE_WAVE_MIN_K, the `coop_widths` tile (that rule's key: its widths and stages)
    whose tiles take one wave of the SMs and fill at least COOP_WIDTH_ONE_WAVE_FILL of its area (`coop_width_fit`
    with no margin over the answer's fill)."""
    widths = c.rules.get("coop_one_wave") and c.rules.get("coop_widths")
    if not widths or not coop_bucket(c) or not pingpong_64(tile) or tile.get("num_warps") != 4 \
            or not 128 < c.M <= COOP_WIDTH_MAX_M or c.K <= COOP_ONE_WAVE_MIN_K:
        return tile, notes
    hit = coop_width_fit(widths, c.M, c.N, c.num_cus, 1, 0.0, COOP_WIDTH_ONE_WAVE_FILL)
    if hit is None:
        return tile, notes
    width, stages, fill, tiles = hit
    return coop_width_config(c.cfg, width, stages), notes + [
        f"{tiles} tiles of 128 x {width} take one wave and fill {fill:.0%} of it: the cooperative 128 x {width} split "
        "tile in the 64-row tile's place (`coop_one_wave`)"]
