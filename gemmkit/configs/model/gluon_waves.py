"""`gluon_waves`: bf16's cooperative Gluon bucket (two consumer warpgroups on 128 x 256) against the ping-pong's tiles,
by the waves each fills; and, over the answer once `long_k_coop` has run, `narrow_wide`.

    coop bucket 128 x 256, the first step that answers:
      _widths   coop_widths (128 x 144 / 160 / 192)      [coop_tail keeps the 128 x 256; coop_widths_area]
                split_widths (64 x 144 / 160)            [deep_rows holds it back]
      _narrow   narrow_pingpong 64 x 192, split-K        [short_k_wave, narrow_tail, narrow_columns, deep_rows]
      _few      few_tiles / short_split / the Triton tier, where even 128 x 128 tiles are few
      _last     the ping-pong 128 x 128 (tail_waves; wide_one_wave: one wave of a 64-row width), or the coop
                (short_k_pingpong in its place at K <= 448); at K <= 1024 either gives way to the ping-pong's
                64 x 128 where it takes 1.2-1.25x its rounds x area (short_k_rounds)
"""
from __future__ import annotations

import dataclasses

from .base import FEW_TILES, GLUON_WAVE_MARGIN, LINE_ELEMENTS, MIN_SPLIT_STEPS, SECTOR_ELEMENTS, Call, area_fill, \
    coop_bucket, launch_fill, pingpong_64, wave_efficiency
from .few_tiles import FEW_TILES_FILL, FEW_TILES_MIN_M, FEW_TILES_SHORT_SPLIT_K, FEW_TILES_SPLIT_K, \
    FEW_TILES_UNSPLIT_FILL, SHORT_SPLIT_MIN_N, few_tiles, few_tiles_note, short_split_tile
from .fitting import fit
from .tail import TAIL_MIN_K, round_area, tail_fill
from .widths import COOP_TAIL_MIN_K, COOP_WIDTH_MAX_M, COOP_WIDTH_MIN_M, COOP_WIDTH_ONE_WAVE_FILL, COOP_WIDTH_WAVES, \
    SPLIT_WIDTH_FILL, SPLIT_WIDTH_MAX_M, SPLIT_WIDTH_MIN_M, coop_tail, coop_tail_note, coop_width_config, \
    coop_width_fit, split_width_config, wide_one_wave

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   gluon_waves  a cooperative Gluon bucket (two consumer warpgroups on a 128 x 256 tile) gives way to the ping-pong on
#                128 x 128 (its tile split in N: four warps a consumer, six stages) where that tile count fills its
#                waves better by GLUON_WAVE_MARGIN (tiles over waves x SMs; N <= 128 leaves half the larger tile empty,
#                so the ping-pong), and to the Triton tier, fitted, where even 128 x 128 tiles are few. bf16, 40 untuned
#                rows (config_model.json, git history): 1024 x 5120 x 2880 (320 vs 160 tiles on 132 SMs) 0.65x on the
#                old Triton bucket, 0.88x ping-pong; GPT-OSS's router at M = 256 / 1024 (2 / 8 tiles) 1.10x / 0.81x on
#                the fitted Triton tier, 0.46x / 0.52x on the ping-pong; 4096 x 57344 x 12288 (99% vs 100%) 0.91x
#                ping-pong, 1.04x coop.
#   narrow_pingpong  a third tile for `gluon_waves`: the ping-pong on 64 x 192 tiles, at 128 < M <= NARROW_MAX_M and N
#                >= NARROW_MIN_N with K split up to 4 ways (hopper_host.fit_split_k keeps the splits to one wave), above
#                NARROW_MAX_M unsplit where K >= NARROW_MIN_K and the 128 x 128 tiles are not few (few: the Triton
#                tier's split, below); where its waves (tiles x the splits the kernel keeps) are filled better by
#                GLUON_WAVE_MARGIN than both the coop's and the 128 x 128 ping-pong's: the tile the tuned M_GEQ_256
#                buckets run (e.g. A16W16-N=16384-K=53248.json). Held-out layers (ab/bf16_m256_512.json, 17 rows at M =
#                256 / 512, 40-96 coop tiles, against cuBLAS): served (coop, or the 128 x 128 ping-pong / Triton tier by
#                gluon_waves) 0.585-0.866x, geomean 0.735; 64 x 192 split 4 0.733-0.977x, geomean 0.859 (split 1 0.849,
#                the 128 x 128 ping-pong split 2 0.743, the coop split 2 0.700). By waves, not by "fewer coop tiles than
#                SMs" (the rule's first form), since ab/bf16_m128_256_few_tiles.json and ab/bf16_m512_1024_waves.json
#                (H200, 26 held-out rows at M = 256-3000): where 64 x 192 fills fewer waves than 128 x 128 (256 x 7680 /
#                8192: 160-172 tiles, one split, 61-65%; 120-128 of 128 x 128, 91-97%) the 128 x 128 ping-pong ran
#                0.98-0.99x against 0.70-0.72x, the coop 0.93-0.96x against 0.79-0.84x at 256 x 14336 and 512 x 7680;
#                above M = 512, where 64 x 192 fills 79-97% and the others 55-87%: 0.85-0.97x against 0.70-0.87x (1024 x
#                4608 / 2880, 2048 x 4608, 777 x 1536), and where it does not (1024 x 5120, 3000 x 5000) it lost, up to
#                0.47x; past two waves there only on columns NARROW_COLUMN_FILL full (`narrow_columns`: a last column of
#                64 / 192 at N = 640 ran 0.48-0.81x). At 64 < M <= 128, where the Triton bucket keeps the shape (the
#                wide ping-pong's tiles under `wide_share`), the same tile where K is long: where its splits' fp32
#                partial tiles (written and read: splits x 2 x rows x N x 4 bytes, rows = M in whole tiles) are at most
#                1 / NARROW_PARTIAL_SHARE of the weights' stream (N x K x 2 bytes): with 4 splits, K >= 64 x rows.
#                ab/bf16_m128_narrow.json (13 held-out rows at M = 80 / 128, against cuBLAS): K = 8192-36864, the Triton
#                64 x 128 bucket 0.79-0.88x, 64 x 192 split 4 0.86-0.99x; K <= 5120 it lost (0.81 vs 0.84x at 128 x 5120
#                x 5120, 0.73-0.82 vs 0.80-0.86x at K = 2880-4096), as the partials' traffic predicts.
#   short_k_wave  where `narrow_pingpong` would split at 128 < M <= NARROW_MAX_M and K <= SHORT_K_WAVE_MAX_K: one wave
#                of this menu's unsplit ping-pong tiles instead (64 x 128, 64 x 64: the most tiles within the SMs, at
#                least SHORT_K_WAVE_FILL of them), where one fits: at short K the split's fp32 partials and reduce cost
#                more than the wave it fills. Found on random shapes (273 x 2240 x 2240: 64 x 192 split 0.70x, 90 tiles
#                of 64 x 128 0.86x); ab/bf16_short_k_wave.json (H200, against cuBLAS, 16 rows at M = 130-447,
#                N = 2048-4480, K = 1152-4096): 64 x 128 won on all 12 rows where its tiles fit one wave (0.64-0.81 ->
#                0.82-1.09x; 64 x 64 on 111-114 tiles 1.01x), lost on the 4 where they did not; held out
#                (ab/bf16_m129_512_heldout.json, 27 random rows): 0.733 -> 0.923x, one down (149 x 5632 x 1536 -10%).
#   tail_waves   bf16, in `gluon_waves`' last choice (the coop 128 x 256 or the ping-pong 128 x 128): the two tiles'
#                fills counting each one's tail split (`tail_fill`: the last round's R tiles as S K splits take 1 / S
#                of a round, where the kernels' `tail_rule` splits them). The ping-pong where its fill so counted is
#                GLUON_WAVE_MARGIN over the coop's (the coop's partial round over half the SMs cannot split, the
#                ping-pong's twice as many tiles leave one that can: DeepSeek-V3 o_proj at M = 1024, 224 coop tiles
#                leave 92, 448 ping-pong tiles 52 split 2); the coop in the ping-pong's place at K >= COOP_TAIL_MIN_K
#                where its fill is TAIL_WAVES_COOP_MARGIN over. H200 against cuBLAS, heated, one process: first
#                both ways by the margin from K = 2048 (ab/bf16_tail_waves_fit.json, _heldout.json: 88 shapes of
#                random seeds 1-10 it changed): to the ping-pong every row up; to the coop down where the fills
#                were within ~3% (to -24%), mixed at K < 12288 even at 1.125x, up at K >= 12288 from 1.07x
#                (ab/bf16_pp_vs_coop_tail_fit.json / _heldout.json: 24 rows at 1.125-1.15x all up, +6 to +16%).
#                Held out (ab/bf16_tail_waves_verify.json, seeds 11-20 and the two suite rows it changes): 45 rows
#                0.81 -> 0.94x, to the ping-pong 30 rows +20% (min +0.4%), to the coop 15 rows +9% (min -0.2%).
#                Rows off 128-byte lines at long K (K % 64 != 0, K >= COOP_TAIL_MIN_K): the ping-pong only where its
#                fill is TAIL_WAVES_OFF_LINE_MARGIN over the coop's. H100, heated, one process, the coop 128 x 256 x 64
#                (3 stages) against the ping-pong the rule served (results/h100/ab/bf16_tail_waves_h100.json: the
#                served ping-pong won 13 of 15 rows on lines, the other two within 2%, lost the 4 off them (the coop
#                at 4 stages there); _heldout.json, 28 random rows: on
#                lines the ping-pong won 8 of 8, +3 to +35%; off lines the coop won the 14 at fill ratios 1.12-1.33,
#                +12 to +36%, lost 6757 x 336 x 20512 (1.2) by 7%, and the ping-pong won the 5 at 1.5-1.75). The
#                H200's A/Bs above (older kernels, 2026-12-0x) had three such rows go the other way (1025 x 9416 x
#                14480 and 5971 x 464 x 28336 +9 / +10% for the ping-pong, 5398 x 1176 x 16080 +13%): where the
#                H100 put the coop 28% / 17% ahead. So the rule holds only on cards whose HBM streams at most
#                OFF_LINE_MAX_HBM_GBPS (the H100's 3350 GB/s, not the H200's 4800) until an H200 A/B of the current
#                kernels decides; a guess at why, not measured: the ping-pong re-reads x twice as often, and a
#                box row off a line touches two, so its misses cost more of the slower HBM.
#                There `swap_rounds` takes no 80- or 96-token tile (swap.py SWAP_ROUNDS_WIDE_WIDTH). Held out
#                (_off_line_verify.json, 26 random rows the two change: tail_waves' 12 +16%, 10 up, -7 / -2% down);
#                the rule as it stands (_off_line_final.json, the 50 rows before and 20 of seed 20261211 it changes,
#                against the answer without it): the 20 0.728 -> 0.906x cuBLAS, 19 up, one down (671 x 9456 x 23072,
#                a 96-token swap, -14%); the 50 0.709 -> 0.858x, 45 up, 5 down (-22% to -4%).
#                Unmeasured under Triton >= 3.9, where the coop's 128 x 256 has no tail split
#                (kernels/_budgets.py TAIL_COOP_WIDE): there the rule counts a split the launch does not make.
#   narrow_tail  bf16, in `gluon_waves`: `narrow_pingpong`'s 64 x 192 gives way to the ping-pong 128 x 128 where that
#                tile's area fill counting its tail split (`tail_fill`, rows and columns past M / N empty) is
#                NARROW_TAIL_MARGIN over the 64 x 192 launch's (4416 x 512 x 7680: 207 tiles of 64 x 192 fill 70%,
#                140 of 128 x 128 leave a tail of 8 split 8 ways, 93%). H200 against cuBLAS, heated, one process:
#                fitted on ab/bf16_pp_tail_vs_narrow_fit.json (the 128 x 128 forced against served 64-row and split
#                tiles it fills more than, seeds 1-10: the 64 x 192 at >= 1.2x 4 of 4 up +1 to +16%, at 1.09-1.12x
#                mixed -2 to +7%; the coop's 128 x 144 / 160 / 192 mixed, left alone); held out
#                (ab/bf16_pp_tail_vs_narrow_heldout.json, seeds 11-20: at >= 1.2x 4 of 4 +22 to +41%;
#                ab/bf16_narrow_tail_verify.json, every shape of seeds 21-60 it changes, 49: all up, 0.757 -> 0.913x).
#   narrow_wide  bf16, over the rules' answer after `long_k_coop` (`narrow_wide`): where that is still
#                `narrow_pingpong`'s 64 x 192, unsplit above M = NARROW_MAX_M in one wave, the ping-pong's 64 x this
#                width split tile where its tiles take one wave too, fill SPLIT_WIDTH_FILL of the SMs' area, and cover
#                at most NARROW_WIDE_COLUMNS of the 64 x 192's columns (past N included; N = 640: 4 tiles of 160 for 4
#                of 192, 83%). Where the narrower tile covers as many columns or more (N = 896 / 1536 / 2048: 6 / 10 /
#                13 tiles of 160 against 5 / 8 / 11 of 192), more SMs run smaller tiles and the card gained nothing, as
#                if a one-wave launch's time followed all the work it runs, padding included, not one SM's tile. H100
#                against cuBLAS, cold and heated, one process. Fitted on ab/bf16_wide_over_narrow_heldout.json (33
#                shapes of random seeds 2001-2600 where the 64 x 160 fills >= 85% in one wave): on <= 0.95x the
#                columns 18 rows 1.065 / 1.050x (-2% to +11%), on 0.97-1.11x 15 rows 0.994 / 0.990x (-8% to +8%, six
#                down both times); the H200 rows of ab/bf16_wide_one_wave_{fit,heldout}.json alike (11 on <= 0.95x,
#                all up +3 to +14%; 15 on 0.97-1.25x, -19% to +9%). Held out (ab/bf16_narrow_wide_heldout.json, seeds
#                2601-3599, with the rule inside `gluon_waves`, before `long_k_coop`): over the 64 x 192 21 rows
#                1.059 / 1.043x (-6% to +12%), but over `long_k_coop`'s split cooperative tiles 11 rows 0.884 /
#                0.932x (2594 x 464 x 15392 and two more at N = 448-464: -30% to -36%; there 42 tiles of 128 x 256
#                split 3 ways against 123 of 64 x 160), hence after it; the 28 controls (columns >= 0.97x) 1.001 /
#                0.992x, 9-10 down by more than 2%. Verified as served (ab/bf16_narrow_wide_verify.json, every shape
#                of seeds 3600-4799 it changes, 25): 0.858 -> 0.910x cold, 0.871 -> 0.920x heated (+6.0% / +5.6%;
#                -7% to +13%, three rows at N = 1200-1248 down in one run or both); again (_verify2.json, seeds
#                4800-6199, 27 rows): 0.939 -> 0.987x cold, 0.947 -> 0.983x heated (+5.1% / +3.8%; -8% to +12%, four
#                rows at N = 1216-1760 down 3-8% heated). The same three sets on an H200 (results/h200/ab/, cold /
#                heated): over the 64 x 192 21 rows 1.085 / 1.093x, none down; over the split coop tiles 0.970 /
#                1.013x; the controls 1.019 / 1.052x (on the H100 0.99x: left out); _verify.json 0.842 -> 0.909x and
#                _verify2.json 0.924 -> 0.992x cold, +7-9% either way, no row down by more than 2%. Left out: past
#                0.96x the columns where N % 128 == 0 (the earlier sets' rows there gained, the others lost; held out,
#                ab/bf16_narrow_wide_n128.json, H100: 28 rows +1.2% / +2.8%, 7 down by more than 2%; the 12 others
#                -7%), too little for a feature nothing explains.
#   short_k_pingpong  bf16, at K <= SHORT_K_PINGPONG_MAX_K, a whole number of its K steps, where `gluon_waves` would
#                serve a coop tile (128 x 256 or a `coop_widths` width): the ping-pong's 64 x 128. At a few K steps a
#                tile's epilogue is much of its time; the coop's two consumers store at once, the ping-pong's hide each
#                store behind the other's mainloop. ab/bf16_short_k_coop.json: 9 coop rows +3 to +20%; held out on any
#                K <= 512 (bf16_short_k_coop_heldout.json) 0.877 -> 0.790x: up where K is a multiple of 64 (8 of 10
#                rows, +3 to +25%), down to -43% elsewhere (a partial last K box on 4x the tiles); held out again on
#                K % 64 == 0 (bf16_short_k_pingpong_heldout.json, 36 fresh rows): 0.957 -> 1.043x, 34 up, at K <= 448
#                none down over 3%
#   short_k_rounds  bf16, in `_last` at M > 128 and K <= 1024 (SHORT_K_ROUNDS_MARGIN), a whole number of its K steps:
#                the ping-pong's 64 x 128 in place of the 128 x 128 ping-pong or the coop 128 x 256 where that answer's
#                rounds x tile area (`round_area`) is at least SHORT_K_ROUNDS_MARGIN times the 64 x 128's (the least
#                ratio by K). Below K = 2048 no tail split evens out a partial last round, and at a few K steps the
#                smaller tile's epilogue hides behind the other consumer's mainloop. Found by benchmarks/model_audit.py
#                (4 H200 rows on disk at K <= 512 +6-16%); stated before its run (ab/bf16_short_k_rounds.json, H100,
#                cold / heated, 44 fresh shapes of seeds 9000-12999): at a ratio >= 1.2 and K <= 512 24 rows +10.9% /
#                +10.1% (-0.5% to +25%, none down by 2%); at K = 576-1024 12 rows +8.5% / +9.2%, where the 5 at a ratio
#                of exactly 1.2 ran -8% to +8% and the 7 at 1.33 +10% to +20%; under 1.2 (8 controls, ratio 1.0-1.17)
#                +0.9% / +0.4%, -8% to +6%.
#   coop_widths_area  bf16, in `_widths`: `coop_widths` weighs the coop's 128 x 256, the 128 x 128 ping-pong and the
#                64 x 192 (split as it would run) by the share of their waves' area the output fills (`_area_best`),
#                as it weighs its own width; by tile counts (before) a coop whose last column is mostly empty counted
#                as full (3198 x 808: 100 tiles of 128 x 256 take 76% of the SMs, fill 60% of their area; 125 of
#                128 x 192 fill 80%). H100, heated, one process: fitted on ab/bf16_coop_widths_by_area_fit.json (40
#                random shapes the coop served unfitted where the width then wins, N = 456-4664, K = 272-1888):
#                0.810 -> 0.946x cuBLAS, all 40 up (+4% to +28%). Held out on every random_suite shape it changes
#                (benchmarks/rule_shapes.py; _heldout.json, seeds 20261500-20262299: 58 of 38400, 0.15%, most of them
#                over the 128 x 128 ping-pong `narrow_tail` or `tail_waves` served): 0.841 -> 0.928x, 43 up (to
#                +83%), 15 down (to -9%); again (_verify.json, seeds 20262300-20262999, 45 rows, and `narrow_tail`'s
#                2636 x 896 x 18960): 0.853 -> 0.921x, 31 up (to +42%), 15 down (to -8%). The downs: 28 of the 74
#                128 x 160 rows (+6% over the 74; its 32-column wgmma costs more a FLOP; 2304 x 1024 x 25856 -8%),
#                2 of the 12 where `coop_tail` then keeps the 128 x 256 (-3%); the 18 rows of 128 x 192 / 144 all up
#                +2% to +30%. Counting the 128 x 128's tail split in its fill (`narrow_tail`'s measure) would have
#                kept 81 of the 104 rows as they were, most ups with them (1.018 / 1.006x over before). No suite row
#                changes (H100, H200). On the H200 (results/h200/ab/bf16_coop_widths_by_area_h200.json, the 67 rows
#                of both held-out sets it changes there, 2026-12-06) a tie: 0.903 -> 0.903x, 26 up; the 128 x 160 in
#                the 128 x 128's place -2.8% over 38 (+6% on the H100), 128 x 192 in the 128 x 256's / 128 x 128's /
#                80-token swap's place +13% / +14% / +11% (11 rows). Kept on both cards (sm_90). Not its 128 x 160
#                on the H200 at K >= 5000 (`area_160_long_k`, fitted on 29 of those rows: the 128 x 160 -4.7%) lost
#                held out (results/h200/ab/bf16_area_160_long_k_heldout_h200.json, 40 fresh rows, 2026-12-07:
#                0.886 -> 0.859x, 21 down) and was taken out.
NARROW_MAX_M, NARROW_MIN_N = 512, 2048  # where `narrow_pingpong`'s split was measured (M = 256 / 512, N = 2880-12288)
NARROW_MIN_K = 4096  # above NARROW_MAX_M the 64 x 192 tile needs K this long (1000 x 3000 x 2000 lost: 0.78 vs 0.83x)
NARROW_PARTIAL_SHARE = 4  # at 64 < M <= 128: `narrow_pingpong`'s split partials at most 1 / this of w's bytes
NARROW_LONG_SHARE = 8  # ... and at most 1 / this: the split goes before `one_wave`
# `deep_rows`: a 64-row ping-pong tile (`split_widths`, `narrow_pingpong`) at DEEP_ROWS_MIN_M < M <= DEEP_ROWS_MAX_M
# (where it was measured) that takes more than DEEP_ROWS_WAVES waves: only at K < TAIL_MIN_K
# (`tail_rule`: from there the 128 x 128's partial last round is split along K, which evens out the
# waves the 64-row tile would fill), and where its area fill is DEEP_ROWS_MARGIN over the coop's and the 128 x 128's
# (a 64-row tile costs 1.2-1.6x the coop's time per output: each consumer reads a whole w box for 64 rows).
DEEP_ROWS_MIN_M, DEEP_ROWS_MAX_M, DEEP_ROWS_WAVES, DEEP_ROWS_MARGIN = 256, 512, 2, 1.35
# `narrow_columns`: above NARROW_MAX_M, `narrow_pingpong`'s 64 x 192 past DEEP_ROWS_WAVES waves only where its columns
# are this full (N over its columns' width): at N = 640 (83%) 7355 x 640 x 14720 / 7038 x 640 x 9216 ran 0.72 / 0.69x
# on it, 0.89 / 0.86x on the 128 x 128 (ab/bf16_narrow_n_large_m.json); within two waves it held (3202 x 320, 83%:
# 1.06x against 0.86x; 5332 x 512, 89%, 1.9 waves: a tie), and on whole columns (2298 x 576: 0.93x against 0.76x).
NARROW_COLUMN_FILL = 0.9
# `narrow_wide`: the most of the 64 x 192's columns (tiles x width, past N included) the narrower tile's may cover
NARROW_WIDE_COLUMNS = 0.96
SHORT_K_PINGPONG_MAX_K = 448  # `short_k_pingpong`: K up to this (at 512 two of six rows with M > 15000 lost 11-17%)
# `short_k_rounds`: the least rounds x area ratio over the 64 x 128 by the most K it holds at (at 576-1024 a ratio of
# 1.2 was mixed, 1.33 won on all 7 rows)
SHORT_K_ROUNDS_MIN_M, SHORT_K_ROUNDS_MARGIN = 128, {512: 1.2, 1024: 1.25}
# `tail_waves` (in `gluon_waves`): the coop's and the 128 x 128 ping-pong's fills counting each one's tail split
# (`tail_fill`): the ping-pong where its fill is GLUON_WAVE_MARGIN over the coop's; the coop in the ping-pong's place
# only at K >= COOP_TAIL_MIN_K and a fill TAIL_WAVES_COOP_MARGIN over the ping-pong's.
TAIL_WAVES_COOP_MARGIN = 1.05
# ... and where K >= COOP_TAIL_MIN_K and x's and w's rows start off 128-byte lines (K % LINE_ELEMENTS != 0), the
# ping-pong only where its fill is TAIL_WAVES_OFF_LINE_MARGIN over the coop's (`tail_waves`' comment above: H100).
TAIL_WAVES_OFF_LINE_MARGIN = 1.4
# ... on cards whose HBM streams at most this (the H100's 3350 GB/s; the H200's 4800 measured the other way: the
# H100's rule on the H200, results/h200/ab/bf16_tail_waves_off_line_h200.json, 70 rows 0.912 -> 0.879x, 16 up)
OFF_LINE_MAX_HBM_GBPS = 4000.0
# `narrow_tail` (in `gluon_waves`): `narrow_pingpong`'s 64 x 192 gives way to the ping-pong 128 x 128 where that tile's
# area fill counting its tail split (`tail_fill`) is NARROW_TAIL_MARGIN over the 64 x 192 launch's (`launch_fill`).
NARROW_TAIL_MARGIN = 1.2
SHORT_K_WAVE_MAX_K, SHORT_K_WAVE_FILL = 4096, 0.55  # `short_k_wave`: where its A/B ran; its least fill that won (57%)


def narrow_split(narrow: dict, own: dict, M: int, N: int, K: int) -> tuple[int, float]:
    """(K splits, their fp32 partials' bytes over the weights') of `narrow_pingpong` at 64 < M <= 128."""
    rows = -(-M // narrow["BLOCK_SIZE_M"]) * narrow["BLOCK_SIZE_M"]
    split = max(1, min(narrow["NUM_KSPLIT"], -(-K // own["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS))
    return split, split * 2 * rows * N * 4 / (N * K * 2)  # fp32 partials written and read; bf16 w


@dataclasses.dataclass(frozen=True)
class _Waves:
    """What `gluon_waves`' steps share of one call: the bucket's rows `bm`; its coop tiles (bm x 256) and the
    ping-pong's 128-wide ones (`pp`, run as `pingpong`) and how full their waves are; `narrow_pingpong`'s 64 x 192
    where it may serve (`narrow`: its tiles, K splits and fill, else None); `short_k_pingpong`'s tile where K is
    short (else None); `held`: what a step held back, said after the answer's own notes."""
    bm: int
    coop: int
    pp: int
    pingpong: dict
    eff_coop: float
    eff_pp: float
    narrow: tuple | None  # (tile, tiles, K splits, fill)
    short_pp: dict | None
    held: list = dataclasses.field(default_factory=list)

    @property
    def eff_narrow(self) -> float:
        return self.narrow[3] if self.narrow else 0.0

    @property
    def best(self) -> float:  # the fullest waves of the coop's, the 128 x 128's and the 64 x 192's
        return max(self.eff_coop, self.eff_pp, self.eff_narrow)

    def narrow_config(self, cfg: dict) -> dict:
        """`narrow_pingpong`'s tile over the bucket `cfg` with the K splits it would run (self.narrow must be set)."""
        narrow, _, split, _ = self.narrow
        return dict(cfg, **dict(narrow, NUM_KSPLIT=split))

    @property
    def pp_after(self) -> bool:  # the 128 x 128 ping-pong fills GLUON_WAVE_MARGIN more than the coop
        return self.eff_pp > GLUON_WAVE_MARGIN * self.eff_coop


def rule_gluon_waves(c: Call):
    """`gluon_waves`: a cooperative Gluon bucket (128 x 256, 8 warps) against the ping-pong's tiles by the waves
    they fill, in four steps (the module docstring): `coop_widths` / `split_widths` (`_widths`); `narrow_pingpong`
    (or `short_k_wave` in its place on a short K; both 64-row tiles held back by `deep_rows`, the 64 x 192 above
    M = 512 by `narrow_columns`: `_narrow`); `few_tiles`, the Triton tier where even those are few (the ping-pong's
    tile where it would not split: `_few`); the ping-pong 128 x 128 (above M = 512 one wave of a 64-row split tile
    in its place where that fills more: `wide_one_wave`), `short_k_pingpong` in the coop's place, else the bucket,
    either giving way to the ping-pong's 64 x 128 at a short K by `short_k_rounds` (`_last`)."""
    rules, cfg, M, N, K, num_cus = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus
    if not (rules.get("gluon_waves") and cfg.get("backend") == "gluon" and cfg["num_warps"] == 8
            and cfg["BLOCK_SIZE_N"] == 256 and not cfg.get("swap_ab") and cfg.get("NUM_KSPLIT", 1) == 1):
        return None
    bm = cfg["BLOCK_SIZE_M"]
    coop, pp = (-(-M // bm) * -(-N // bn) for bn in (256, 128))
    pingpong = dict(cfg, BLOCK_SIZE_N=128, num_warps=4, num_stages=6)  # the bucket's tile split in N: the 128 x 128
    narrow, narrow_fit = rules.get("narrow_pingpong"), None
    if narrow and (128 < M <= NARROW_MAX_M and N >= NARROW_MIN_N
                   or M > NARROW_MAX_M and K >= NARROW_MIN_K and pp >= FEW_TILES * num_cus):
        n_tiles = -(-M // narrow["BLOCK_SIZE_M"]) * -(-N // narrow["BLOCK_SIZE_N"])
        split = 1 if M > NARROW_MAX_M else \
            max(1, min(narrow["NUM_KSPLIT"], -(-K // cfg["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS))
        # the kernel keeps the splits to one wave (hopper_host.fit_split_k)
        narrow_fit = (narrow, n_tiles, split, wave_efficiency(n_tiles * max(1, min(split, num_cus // n_tiles)),
                                                              num_cus))
    short_pp = rules.get("short_k_pingpong")  # no coop tile at a short K (`_widths`, `_last`)
    if short_pp and not (K <= SHORT_K_PINGPONG_MAX_K and K % short_pp["BLOCK_SIZE_K"] == 0):
        short_pp = None
    w = _Waves(bm, coop, pp, pingpong, wave_efficiency(coop, num_cus), wave_efficiency(pp, num_cus), narrow_fit,
               short_pp)
    for step in (_widths, _narrow, _few, _last):
        hit = step(c, w)
        if hit is not None:
            return hit[0], hit[1] + w.held
    return None  # (`_last` always answers)


def _deep_rows_lose(c: Call, bm: int, width: int, tiles: int) -> bool:
    """`deep_rows`: whether a 64 x `width` tile (`tiles` of them) past DEEP_ROWS_WAVES waves gives way."""
    M, N, num_cus = c.M, c.N, c.num_cus
    if not DEEP_ROWS_MIN_M < M <= DEEP_ROWS_MAX_M or tiles <= DEEP_ROWS_WAVES * num_cus:
        return False
    best_area = max(area_fill(M, N, bm, 256, num_cus), area_fill(M, N, bm, 128, num_cus))
    return c.K >= TAIL_MIN_K or area_fill(M, N, 64, width, num_cus) < DEEP_ROWS_MARGIN * best_area


def _widths(c: Call, w: _Waves):
    """`coop_widths` (128-row split tiles at COOP_WIDTH_MIN_M <= M <= COOP_WIDTH_MAX_M) and `split_widths` (64-row
    ones at SPLIT_WIDTH_MIN_M <= M <= SPLIT_WIDTH_MAX_M, or their 128-row counterparts where those fill as well),
    each unless `coop_tail` keeps the coop's 128 x 256."""
    rules, cfg, M, N, num_cus = c.rules, c.cfg, c.M, c.N, c.num_cus
    bm, coop, pp = w.bm, w.coop, w.pp
    coop_widths = rules.get("coop_widths")
    if coop_widths and not w.short_pp and bm == 128 and COOP_WIDTH_MIN_M <= M <= COOP_WIDTH_MAX_M:
        best = _area_best(c, w) if rules.get("coop_widths_area") else w.best
        hit = coop_width_fit(coop_widths, M, N, num_cus, COOP_WIDTH_WAVES, best, COOP_WIDTH_ONE_WAVE_FILL)
        if hit:
            return _coop_width(c, w, hit)
    widths = rules.get("split_widths")
    if not (widths and SPLIT_WIDTH_MIN_M <= M <= SPLIT_WIDTH_MAX_M):
        return None

    def width_tiles(width):
        return -(-M // split_width_config(cfg, width)["BLOCK_SIZE_M"]) * -(-N // width)
    fill, width = max((wave_efficiency(width_tiles(v), num_cus), v) for v in widths)  # the wider on a tie
    best = w.best
    if fill < SPLIT_WIDTH_FILL or fill <= GLUON_WAVE_MARGIN * best or _deep_rows_lose(c, bm, width, width_tiles(width)):
        return None
    tiles = width_tiles(width)
    # under COOP_WIDTH_MIN_M the cooperative 128-row tile in the 64-row tile's place where it fills as well
    # (`coop_widths`' last paragraph)
    hit = coop_width_fit(coop_widths, M, N, num_cus, COOP_WIDTH_WAVES, best) \
        if coop_widths and not w.short_pp and bm == 128 and M < COOP_WIDTH_MIN_M else None
    if hit:
        return _coop_width(c, w, hit, f"{tiles} of 64 x {width} {fill:.0%}, ")
    return split_width_config(cfg, width), [
        f"{coop} tiles of {bm} x 256, {pp} of {bm} x 128 and the 64 x 192's fill at best {best:.0%} of "
        f"their waves, {tiles} of 64 x {width} {fill:.0%}: the ping-pong's 64 x {width} split tile"]


def _area_best(c: Call, w: _Waves) -> float:
    """`coop_widths_area`: the fullest of the coop's, the 128 x 128's and the 64 x 192's launches counted as
    `coop_width_fit` counts the width's own, by area (rows and columns past M and N empty), not by tile count."""
    fills = [area_fill(c.M, c.N, w.bm, bn, c.num_cus) for bn in (256, 128)]
    if w.narrow is not None:
        fills.append(launch_fill(w.narrow_config(c.cfg), c.M, c.N, c.num_cus))
    return max(fills)


def _coop_width(c: Call, w: _Waves, hit: tuple, also: str = ""):
    """The `coop_widths` tile of `hit` (`coop_width_fit`'s width, stages, fill, tiles), or the coop's 128 x 256 where
    `coop_tail` keeps it; `also`: what the note says of the 64-row split tile it takes the place of."""
    width, stages, fill, tiles = hit
    if coop_tail(w.coop, tiles, c.K, c.num_cus):
        return c.cfg, [coop_tail_note(w.coop, width, tiles, c.K, c.num_cus)]
    return coop_width_config(c.cfg, width, stages), [
        f"{w.coop} tiles of {w.bm} x 256, {w.pp} of {w.bm} x 128 and the 64 x 192's fill at best {w.best:.0%} of "
        f"their waves, {also}{tiles} of {w.bm} x {width} {fill:.0%}: the cooperative {w.bm} x {width} split tile"]


def _narrow(c: Call, w: _Waves):
    """`narrow_pingpong`'s 64 x 192 where its waves are the fullest by GLUON_WAVE_MARGIN, unless `narrow_columns` or
    `deep_rows` hold it back; in its place one wave of `short_k_wave`'s unsplit tiles at a short K, or the 128 x 128
    ping-pong where that fills NARROW_TAIL_MARGIN more counting its tail split (`narrow_tail`)."""
    if w.narrow is None:
        return None
    rules, cfg, M, N, K, num_cus = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus
    bm, coop, pp = w.bm, w.coop, w.pp
    narrow, n_tiles, split, eff_narrow = w.narrow
    nm, nn = narrow["BLOCK_SIZE_M"], narrow["BLOCK_SIZE_N"]
    if M > NARROW_MAX_M and n_tiles > DEEP_ROWS_WAVES * num_cus and N < NARROW_COLUMN_FILL * -(-N // nn) * nn:
        return None  # `narrow_columns`
    # `deep_rows` for the 64 x 192: on K's rows off 32-byte sectors; on rows on them only for the 128 x 128 (where the
    # coop would serve instead, the 64 x 192 held: 5 of 7 held-out rows -4 to -22% on the coop)
    if eff_narrow <= GLUON_WAVE_MARGIN * max(w.eff_coop, w.eff_pp) or \
            (K % SECTOR_ELEMENTS or w.pp_after) and _deep_rows_lose(c, bm, nn, n_tiles):
        return None
    short = rules.get("short_k_wave")
    if short and M <= NARROW_MAX_M and K <= SHORT_K_WAVE_MAX_K:  # one wave of unsplit 64-row tiles instead
        fits = [(-(-M // t["BLOCK_SIZE_M"]) * -(-N // t["BLOCK_SIZE_N"]), i) for i, t in enumerate(short)]
        fits = [(n, i) for n, i in fits if SHORT_K_WAVE_FILL * num_cus <= n <= num_cus]
        if fits:
            n, i = max(fits)
            t = short[i]
            return dict(t), [f"{n_tiles} tiles of {nm} x {nn} (K split up to {split}) fill {eff_narrow:.0%} of "
                             f"their waves; K = {K}: one wave of the ping-pong's {t['BLOCK_SIZE_M']} x "
                             f"{t['BLOCK_SIZE_N']}, {n} tiles, unsplit"]
    chosen = w.narrow_config(cfg)
    narrow_area = launch_fill(chosen, M, N, num_cus)
    # (the 128 x 128's rows and columns past M and N count as empty, as in `launch_fill`)
    pp_area = tail_fill(pp, num_cus, K, cfg["BLOCK_SIZE_K"]) * M * N / (pp * bm * 128)
    if pp_area >= NARROW_TAIL_MARGIN * narrow_area:  # `narrow_tail`
        return w.pingpong, [
            f"{n_tiles} tiles of {nm} x {nn} (K split up to {split}) fill {narrow_area:.0%} of their waves' "
            f"area, {pp} of {bm} x 128 {pp_area:.0%} counting their tail split: the ping-pong (`narrow_tail`)"]
    return chosen, [
        f"{coop} tiles of {bm} x 256 fill {w.eff_coop:.0%} of their waves, {pp} of {bm} x 128 "
        f"{w.eff_pp:.0%}, {n_tiles} of {nm} x {nn} (K split up to {split}) {eff_narrow:.0%}: the ping-pong's "
        f"{nm} x {nn}"]


def _few(c: Call, w: _Waves):
    """Where even the ping-pong's 128 x 128 tiles take under one round above M = FEW_TILES_MIN_M: `few_tiles`; under
    FEW_TILES of the SMs the Triton tier's split (or `short_split`'s 64 x 64 in its place, or `few_tiles`' tile where
    the Triton tier would not split)."""
    rules, cfg, M, N, K, num_cus = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus
    bm, pp = w.bm, w.pp
    few_menu = rules.get("few_tiles")
    if few_menu and M > FEW_TILES_MIN_M and pp <= num_cus:  # few tiles even for the ping-pong
        # Under FEW_TILES of the SMs, any menu tile; from there, where a mostly empty last row / column leaves the
        # 128 x 128 tiles' area under FEW_TILES of the SMs, the 64 x 128 only, and only where it fills
        # GLUON_WAVE_MARGIN more (300 x 2880 x 2880, 69 tiles, 40%: 1.06x against 0.74x; held out, eight rows
        # +7-52%, while 64 x 64 there lost up to 31%: bf16_few_tiles_partial_wave.json, bf16_few_tiles_area.json)
        pp_fill = area_fill(M, N, bm, 128, num_cus)
        few = pp < FEW_TILES * num_cus
        floor = FEW_TILES_FILL
        if K < 2 * FEW_TILES_SPLIT_K:
            floor = FEW_TILES_UNSPLIT_FILL
        tile, fill = few_tiles(few_menu if few else few_menu[:1], M, N, K, num_cus, floor) if pp_fill < FEW_TILES \
            else (None, 0.0)
        if tile is not None and (few or fill > GLUON_WAVE_MARGIN * pp_fill):
            return dict(tile), [f"{pp} tiles of {bm} x 128 fill {pp_fill:.0%} of {num_cus} SMs: " +
                                few_tiles_note(tile, fill, num_cus)]
    if pp >= FEW_TILES * num_cus:
        return None
    # (few_tiles fills too few SMs): the Triton tier's split and smaller tiles
    tile, notes = fit({k: v for k, v in cfg.items() if k != "backend"}, M, N, K, num_cus)
    if few_menu and M > FEW_TILES_MIN_M and tile.get("NUM_KSPLIT", 1) == 1:
        # K too short for the Triton tier to split: the same few tiles run faster on the Gluon ping-pong
        # (252 x 512 x 384: the Triton 64 x 64 0.76x, the ping-pong's 0.89x; ab/bf16_short_k_few.json), on rows
        # off 32-byte sectors too since dispatch leaves such small calls' x where it is (`pitch`'s
        # PITCH_MIN_LOADS: 208 x 1040 x 440 0.76 -> 0.89x, 243 x 448 x 408 0.71 -> 0.90x,
        # ab/bf16_few_tiles_off_sector.json; with the copy's launch they had lost 15%)
        gluon, fill = few_tiles(few_menu, M, N, K, num_cus, 0.0)
        return dict(gluon), [f"{pp} tiles of {bm} x 128 for {num_cus} SMs, the Triton tier unsplit at K = {K}: "
                             + few_tiles_note(gluon, fill, num_cus)]
    short = short_split_tile(M, N, K, num_cus) if few_menu and M > FEW_TILES_MIN_M and N > SHORT_SPLIT_MIN_N \
        else None
    if short is not None and tile.get("NUM_KSPLIT", 1) > 1:
        how = (f"K split {short['NUM_KSPLIT']} ways in ranges of {FEW_TILES_SHORT_SPLIT_K} or more"
               if short["NUM_KSPLIT"] > 1 else f"unsplit (K under two ranges of {FEW_TILES_SHORT_SPLIT_K})")
        return short, [f"{pp} tiles of {bm} x 128 for {num_cus} SMs, the Triton tier split "
                       f"{tile['NUM_KSPLIT']} ways: the ping-pong's 64 x 64, {how} (`short_split`)"]
    return tile, [f"{pp} tiles of {bm} x 128 for {num_cus} SMs: the Triton tier"] + notes


def long_k_off_line(c: Call) -> bool:
    """`tail_waves_off_line` (the op's rule key) on a card whose HBM streams at most OFF_LINE_MAX_HBM_GBPS, at K >=
    COOP_TAIL_MIN_K with x's and w's rows off 128-byte lines (bf16: K % LINE_ELEMENTS != 0): where `tail_waves` keeps
    the coop 128 x 256 and `swap_rounds` (swap.py) takes no 80- or 96-token tile."""
    return bool(c.rules.get("tail_waves_off_line")) and 0 < c.hbm_gbps <= OFF_LINE_MAX_HBM_GBPS and \
        c.K >= COOP_TAIL_MIN_K and c.K % LINE_ELEMENTS != 0


def _last(c: Call, w: _Waves):
    """The coop 128 x 256 or the ping-pong 128 x 128 by their fills, `tail_waves` counting each one's tail split; in
    the 128 x 128's place one wave of a 64-row split tile (`wide_one_wave`), in the coop's `short_k_pingpong`; in
    either's place at a short K the ping-pong's 64 x 128 where its rounds x area is smaller (`short_k_rounds`)."""
    cfg, M, N, K, num_cus = c.cfg, c.M, c.N, c.K, c.num_cus
    bm, coop, pp = w.bm, w.coop, w.pp
    # `tail_waves`: the same choice by fills that count each tile's tail split (not in `deep_rows`' test: with
    # it, 3 of 6 rows of 64 x 192 split 4 lost 8-10% to the 128 x 128)
    bk = cfg["BLOCK_SIZE_K"]
    tail_coop, tail_pp = tail_fill(coop, num_cus, K, bk), tail_fill(pp, num_cus, K, bk)
    pp_after = w.pp_after
    margin = TAIL_WAVES_OFF_LINE_MARGIN if long_k_off_line(c) else GLUON_WAVE_MARGIN
    flipped = (not pp_after and tail_pp > margin * tail_coop
               or pp_after and K >= COOP_TAIL_MIN_K and tail_coop >= TAIL_WAVES_COOP_MARGIN * tail_pp)
    kept = not pp_after and GLUON_WAVE_MARGIN * tail_coop < tail_pp <= margin * tail_coop  # `tail_waves_off_line`
    pp_after ^= flipped
    fills = f"{coop} tiles of {bm} x 256 fill {w.eff_coop:.0%} of their waves, {pp} of {bm} x 128 {w.eff_pp:.0%}"
    if flipped:
        fills = (f"{coop} tiles of {bm} x 256 fill {tail_coop:.0%} of their waves, {pp} of {bm} x 128 {tail_pp:.0%} "
                 f"counting their tail splits (`tail_waves`)")
    if pp == coop or pp_after:  # pp == coop: N <= 128, half the coop tile empty
        wide = wide_one_wave(c.rules.get("wide_one_wave"), M, N, num_cus, area_fill(M, N, bm, 128, num_cus))
        if wide:
            width, fill, tiles = wide
            return split_width_config(cfg, width), [
                f"{fills}; {pp} tiles of {bm} x 128 fill {area_fill(M, N, bm, 128, num_cus):.0%} of the SMs' area, "
                f"{tiles} of 64 x {width} {fill:.0%} in one wave: the ping-pong's 64 x {width} split tile "
                "(`wide_one_wave`)"]
        return _short_k_rounds(c, w.pingpong, f"{fills}: the ping-pong")
    rounds = _short_k_rounds(c, cfg, fills)
    if rounds[0] is not cfg:
        return rounds
    if w.short_pp:
        return dict(w.short_pp), [f"K = {K}: the ping-pong's {w.short_pp['BLOCK_SIZE_M']} x "
                                  f"{w.short_pp['BLOCK_SIZE_N']}, not the coop (`short_k_pingpong`)"]
    if flipped:
        return cfg, [f"{fills}: the coop"]
    if kept:
        return cfg, [f"{coop} tiles of {bm} x 256 fill {tail_coop:.0%} of their waves, {pp} of {bm} x 128 "
                     f"{tail_pp:.0%} counting their tail splits, under {margin}x at K = {K}, rows off 128-byte lines, "
                     f"HBM {c.hbm_gbps:.0f} GB/s: the coop (`tail_waves_off_line`)"]
    return cfg, []


def _short_k_rounds(c: Call, answer: dict, note: str) -> tuple[dict, list]:
    """`short_k_rounds`: the ping-pong's 64 x 128 in place of `answer` (the 128 x 128 ping-pong or the coop 128 x 256)
    at M > SHORT_K_ROUNDS_MIN_M and a short K, a whole number of its K steps, where the answer's rounds x tile area is
    SHORT_K_ROUNDS_MARGIN times the 64 x 128's; else (answer, [note])."""
    tile = c.rules.get("short_k_rounds")
    margin = next((m for k, m in sorted(SHORT_K_ROUNDS_MARGIN.items()) if c.K <= k), None)
    if not tile or margin is None or c.M <= SHORT_K_ROUNDS_MIN_M or c.K % tile["BLOCK_SIZE_K"]:
        return answer, [note]
    served, small = (round_area(t, c.M, c.N, c.K, c.num_cus) for t in (answer, tile))
    if served < margin * small:
        return answer, [note]
    return dict(tile), [f"{note}; K = {c.K}: {answer['BLOCK_SIZE_M']} x {answer['BLOCK_SIZE_N']} tiles take "
                        f"{served / small:.2f}x the rounds x area of the ping-pong's {tile['BLOCK_SIZE_M']} x "
                        f"{tile['BLOCK_SIZE_N']} (`short_k_rounds`)"]


def narrow_wide(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`narrow_wide`, over what the rules and `long_k_coop` answered: where that is still `narrow_pingpong`'s 64-row
    tile unsplit above M = NARROW_MAX_M (on a cooperative Gluon bucket, as `gluon_waves`' answer) and its tiles take
    one wave of the SMs, the ping-pong's 64 x `narrow_wide` split tile where its tiles take one wave too, fill
    SPLIT_WIDTH_FILL of the SMs' area and cover at most NARROW_WIDE_COLUMNS of the answer's columns."""
    w, narrow = c.rules.get("narrow_wide"), c.rules.get("narrow_pingpong")
    if not (w and narrow and coop_bucket(c) and c.M > NARROW_MAX_M and pingpong_64(tile)
            and tile["BLOCK_SIZE_N"] == narrow["BLOCK_SIZE_N"] and tile.get("NUM_KSPLIT", 1) == 1):
        return tile, notes
    bm, nn = tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"]  # (the split tile keeps the 64 rows: split_width_config)
    rows = -(-c.M // bm)
    tiles, fill = rows * -(-c.N // w), area_fill(c.M, c.N, bm, w, c.num_cus)
    columns, own = -(-c.N // w) * w, -(-c.N // nn) * nn
    if rows * -(-c.N // nn) > c.num_cus or tiles > c.num_cus or fill < SPLIT_WIDTH_FILL \
            or columns > NARROW_WIDE_COLUMNS * own:
        return tile, notes
    return split_width_config(tile, w), notes + [
        f"{tiles} of {bm} x {w} fill {fill:.0%} of the SMs' area in one wave on {columns} columns, {own} for the "
        f"{bm} x {nn}: the ping-pong's {bm} x {w} split tile (`narrow_wide`)"]
