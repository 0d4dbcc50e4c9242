"""The config model: a default-table bucket fitted to the shape it serves (`choose`: the kernel, then `fit`: the tile).

A default table (`<OP>.json`) buckets by M alone; its configs were measured on square-ish layers. On a shape unlike
those, a bucket's tile can leave most SMs idle: GPT-OSS's router (N = 128, K = 2880) at M = 1024 got a 256 x 128
tile, 4 tiles for 132 SMs (0.27x cuBLAS). `fit` keeps the bucket's kernel choices (stages, K step, TMA, grouping)
and fits its tile to the shape's waves, in three steps:

    bucket config ──► narrow N / M: halve BLOCK_SIZE_N (M) while half of it still covers N (M)
                  ──► few tiles (under FEW_TILES of the SMs): split K first, NUM_KSPLIT = min(SMs // tiles,
                      K steps // MIN_SPLIT_STEPS, MAX_SPLIT); while tiles x splits still fall short (K too short
                      to split further), halve the larger of BLOCK_SIZE_M / BLOCK_SIZE_N (not below MIN_TILE)
                      and split again
                  ──► num_warps 4 once the tile is under 128 x 128 (two warpgroups on a small tile starve each wgmma)

Why split before shrinking (H200, bf16, against cuBLAS, docs/PERF.md "The config model"): a big tile keeps its
wgmma and its reuse; on 4096 x 256 x 16384 a 128 x 256 tile split 4 ways ran 0.90x where 64 x 128 tiles ran 0.47x,
and on 256 x 2880 x 4096 64 x 256 split 2 ran 0.67x against 0.57x. Where K is too short to split enough (GPT-OSS's
router, K = 2880, at M = 128), smaller tiles are the rest of the way: 64 x 64 split 5 ran 1.15x against 0.93x.

Before fitting, `choose` applies what is known of one op's kernels (`OP_RULES`, each rule with its measurement):
which of the table's kernels serves a shape unlike the bucket's (bf16 first: at 64 <= M <= 256, and for N <= 256 at
larger M, the tile of a small menu that comes nearest one wave of the SMs, deep ring, no split; above M = 128 where
even 128 x 128 tiles are few (and `one_wave` found no tile), the ping-pong's 64 x 128 or 64 x 64 split to one wave
in long K ranges (`few_tiles`; unsplit down to a quarter of the SMs where K is too short to split; where those fill
too few SMs the 64 x 64 split in ranges of 1024+ (`short_split`), else the Triton tier's split, which `fit` makes,
and its unsplit tile not at all on rows on 32-byte
sectors: the ping-pong runs the same tile faster); below
M = 64 where the swap-AB decode tiles are few, the Triton tier's decode tile split along K (`decode_split`); N in one
tile column
the Triton tier's 64-row tile split to one wave; then a cooperative Gluon tile or the ping-pong by wave
efficiency, each tile's tail split counted (`tail_waves`; on rows off 32-byte sectors, K % 16 == 8, the coop tile
with the fewer rows of the operand left off them, or the other where it fills more of its waves: `off_sector`), bf16's 64 x 192 ping-pong (split-K at
128 < M <= 512) where its waves are the fullest, bf16's swap-AB decode tile on 128 weight rows where that takes its
tiles into one round of the SMs, and at 64 < M <= 128 the
Gluon ping-pong where the Triton tier would run its bucket unsplit (`m128_tile`); at 64 < M <= 256 in fp8, the
large-M Gluon bucket or the Gluon ping-pong by the share of SMs their tiles fill (where even the ping-pong's are
few at M > 128, the Triton tier's split: `m256_split`), and above M = 256 the ping-pong where the large-M bucket's
tiles are few), and how many CTAs an SM the K split aims for. Each rule is one function
(`RULES`, tried in order by `choose`; `_fitted` where none answers). Over whichever answered, bf16's `long_k_split`:
at K >= 12288 on rows on sectors, where the coop's tiles are under one round and the answer fills few SMs unsplit,
the coop split along K to one wave; bf16's `long_k_coop`: at K >= 12288 and 128 < M <= 4096 where the answer is a
64-row ping-pong tile, a cooperative tile split along K to one wave (on rows off sectors `off_sector`'s where it fills
over half as much, on rows on them the best-filling of `off_sector`'s and the coop widths where it fills 1.1x more);
then bf16's `coop_swap`: at 128 < M <= 192 (K > 448) the cooperative kernel's swap-AB tile, 128 weight rows x one tile
of tokens in a split width, where it fills 1.2x more (0.9x as much as a 64-row ping-pong answer will do).

The gated GEMM (a16w16_gated, N = I): one rule, `gated_rows` (its 64-row tile where the 128-row tiles fill their
waves poorly), else its buckets `fit`ted, few tiles split along K to one wave
(ab/gated_fit.json, gated_heldout.json, H200, against torch.matmul + silu(g) * u: the DeepSeek-V3 shared expert
128 x 2048 x 7168 0.61 -> 1.05x, 36 held-out shapes 0.63 -> 1.14x, every row up; a split of 66-131 tiles lost,
gated_mid.json: 0.98 -> 0.85x). Over either answer at 128 < M <= 1024, `gated_one_wave`: the Gluon cooperative gated
tile where its tiles fit one wave of the SMs and the answer's unsplit tiles take more, or are the same
(ab/gated_gluon*.json, H100: 12 rows held out, +0.5 to +23%).

Shape files (`<OP>-N=<N>-K=<K>.json`) are measured for their shape and are served as they are; so is a `config=`
argument. Gluon buckets are not fitted (only `choose`'s rules touch them): their kernels have their own tile rules
(kernels/gluon/hopper_plan.py) and their split-K is fitted by the kernel (hopper_host.fit_split_k).

Constraints:
  - power-of-two tiles only (a split tile, BLOCK_SIZE_N in configs.SPLIT_N, is served as it is; `wide_one_wave` and
    `coop_swap` write the split widths they measured, the latter as BLOCK_SIZE_M, the tokens of its swap-AB tile);
  - a fitted config is a smaller tile (or more K splits) of a valid one: it fits the shared memory the bucket fit;
  - the result depends on (M, N, K) and the target's SM count only: one config per shape and device.
"""
from __future__ import annotations

import dataclasses

MIN_TILE = 64  # the smallest BLOCK_SIZE_M / BLOCK_SIZE_N the fitting goes to (a wgmma's M is 64)
FEW_TILES = 0.5  # "few tiles": fewer output tiles than this share of the SMs
MIN_SPLIT_STEPS = 4  # K steps a split range keeps at least (fewer: the partial tile's traffic outweighs it)
MAX_SPLIT = 16
SMALL_TILE = 128 * 128  # under this many outputs a tile takes 4 warps (one warpgroup); the tuner prunes by it too

# The table ops whose default buckets the model fits: their Triton kernels take any power-of-two tile and split-K
# (block-scale: the fitting keeps BLOCK_SIZE_K, the scale block, and only halves tiles, so a tile still covers
# whole or half scale blocks; the gated GEMM: N is the intermediate size I, h's columns, and its split partials are
# reduced before the activation, kernels/triton/gated.py). On gfx942 / gfx950 the same `fit` runs, unmeasured (no AMD
# GPU here): its few-tile split was measured on the H200 only.
FITTED_OPS = ("a16w16", "a8w8", "a8w8_int8", "a8w8_blockscale", "a16w16_gated")

# What the model knows of one op beyond the shared rule, each measured (H200, docs/PERF.md "The config model"):
#   ctas_per_sm  the K split aims for this many CTAs per SM (not one wave) wherever the tiles fall short of it.
#                Block scales: each K step's scale product sits on the consumer's critical path (~52 cycles a step,
#                ncu), so a second CTA per SM hides it: 64 x 8192 x 8192 ran 0.69x cuBLAS on 64 tiles, 0.97x split 2;
#                the split is the count nearest the goal, but no more CTAs than the SMs hold at once (their operand
#                rings in shared memory; `operand_bytes` sizes them): 160 tiles of 64 x 128 (98 KB, 2 an SM) on 132
#                SMs ran 0.67x unsplit and 0.57x split 2 (320 CTAs for 264 places), where 160 tiles of 16 x 64 (40
#                KB, 5 an SM) went 0.79x -> 0.96x split 2. Below the goal a tile count splits at least 2 ways (where
#                the SMs hold the CTAs): 192 tiles of 64 x 64 (3 an SM) at M = 64, N = 12288, K = 12288 / 28672 ran
#                0.81 / 0.77x unsplit, 0.95 / 0.97x split 2 (ab/blockscale_decode.json, against cuBLASLt).
#   unsplit_stages  where `fit` leaves a Triton bucket's K unsplit at M <= UNSPLIT_MAX_M, its ring this deep where
#                that fills the CTAs the SMs hold at once (their shared memory over one ring) better by
#                GLUON_WAVE_MARGIN and K >= UNSPLIT_MIN_K: a 16 x 64 tile's 40 KB ring at 4 stages, five an SM (660
#                places on 132 SMs), 60 KB at 6, three (396). Block scale, H200, against cuBLASLt's block-scaled GEMM:
#                ab/blockscale_ring_depth.json, 4 -> 6 stages 0.81-0.91 -> 0.95-1.10x at N = 57344-59136 (896-924
#                tiles: 2 waves of 660 filled 68-70%, 3 of 396 75-78%); the suite (a8w8_blockscale_models.json, the
#                rule's first form, every unsplit tile) then showed the waves decide: 560-576 tiles (one wave of 660,
#                two of 396) 1.20-1.31 -> 0.87-1.00x, 448 1.04-1.27 -> 1.01-1.18x; and K: 51200 x 5120 (the waves of
#                57344's) 0.95-1.06 -> 0.89-1.01x, 73728 x 4608 mixed. 8 stages lost everywhere (0.49-1.05x). Split
#                tiles keep 4 stages (ab/blockscale_decode_split_ring.json: split 2 at 6 stages 0.93-1.00x against
#                0.96-1.02x at M = 16). At 17 <= M <= 64 `decode_pingpong` serves these shapes (block scale from
#                M = 8 on 66-264 of its tiles). sm_90 only.
#   decode_pingpong  at DECODE_PINGPONG_MIN_M <= M <= 64 a Triton bucket gives way to the Gluon ping-pong on 64 x 64
#                tiles (`SMALL_PINGPONG` over the large-M Gluon bucket's other keys) where those tiles are not few
#                (FEW_TILES of the SMs; the Triton bucket splits K where they are). ab/fp8_decode_kernels.json and
#                ab/blockscale_decode_split_ring.json (H200, M = 32 / 64, N = 8192-51200): per-token 0.67-1.08x ->
#                1.00-1.43x on 12 rows (kv_b 32768 x 512: 0.67 -> 1.00-1.04x), a tie on 8192 x 28672 (1.61 / 1.45x
#                both); block scale 0.87-0.96x -> 0.95-1.18x on 8 rows (10240 x 5120 against its split 2). The
#                persistent grid streams the weights without a CTA's prologue per tile. sm_90 only; M = 17-31 and
#                66-127 tiles not measured (the suites' rows are). Block scale also from `decode_pingpong_from` = 8
#                rows (x in TMA boxes of only its rows, kernels/_host.x_boxes), there only up to PINGPONG_ROUND tiles
#                an SM: its 16-row Triton tile's time grows with M (8192 x 8192: 24.2 us at M = 1, 26.7 at 16), the
#                ping-pong's does not (23.0 / 23.2). Fitted (ab/blockscale_decode_gluon_boxes.json,
#                blockscale_decode_m_sweep.json: 45 suite layers at M = 1 / 16, 16 of them at 4 / 8 / 12): every
#                row at M = 8-16 with 66-264 tiles up (+0.3-21%, M = 16 +8.5% geomean); 64 tiles and fewer -8% to
#                +11%, 288 and more -10% to +10%, M = 1 / 4 -16% to +10%. Held out
#                (blockscale_decode_gluon_heldout.json, 40 random shapes at M = 2-16): the 13 rows the rule takes
#                +8.2% (+0.8% to +19.5%; 12 x 13440 x 1024 0.89 -> 1.04x cuBLASLt). At M = 13-16 also on 4.5-10.5
#                tiles an SM (`decode_pingpong_wide`, DECODE_PINGPONG_WIDE_SMS).
#   wide_share   at 64 < M <= 128 a Triton bucket gives way to the table's large-M Gluon bucket (the cooperative
#                128 x 128) where that bucket's tiles reach this share of the SMs, and else to the Gluon ping-pong on
#                64 x 64 tiles (`SMALL_PINGPONG`, derived from that bucket) where those tiles are not few (FEW_TILES);
#                fewer still: the Triton bucket, fitted. At M = 128 the weights' stream is the time (memory-bound), and
#                both Gluon kernels keep more of it in flight than the Triton tier's 64 x 64 / 64 x 128 tiles
#                (benchmarks/results/h200/ab/, H200, against torch._scaled_mm / cuBLASLt's block-scaled GEMM):
#                per-token N = 10240-14336, K = 5120-28672 (80-112 coop tiles): Triton 0.63-0.70x, ping-pong
#                0.73-0.82x, coop 0.96-0.99x; N = 8192 / 5120 (64 / 40 coop tiles): Triton 1.01 / 1.02x, coop
#                0.99x, ping-pong 1.08 / 1.16x. Block scales the same way: coop 0.92-0.97x (Triton 0.67-0.69x) at
#                80-112 tiles, ping-pong 1.13-1.16x (Triton 0.79x, coop 0.94x) at 60-64. The share lies between
#                the 64 and 80 tiles measured (0.48 and 0.61 of 132 SMs). At 128 < M <= 256 the large-M bucket
#                serves, and gives way to the same ping-pong under the same share (ab/{fp8,blockscale}_m256.json,
#                M = 256, 13 / 6 layers: 64 coop tiles or fewer, ping-pong 1.12-1.33x per-token / 1.21-1.55x block
#                scale against the coop's 0.96-1.06x), but only while the ping-pong's tiles take one round of its
#                consumers (PINGPONG_ROUND): 72-80 coop tiles, 288-320 of 64 x 64 on 264 consumers, ran 0.76-0.85x
#                against the coop's 0.96-1.02x. bf16 has no Gluon large-M bucket: its
#                `wide_config` is the ping-pong the cooperative buckets give way to (`gluon_waves`), taken at the same
#                share, with no 64 x 64 step (ab/bf16_m128_256.json, against cuBLAS: 80 / 96 tiles
#                0.75 / 0.82x -> 0.94 / 0.93x; 64 tiles and fewer lost, 0.99 -> 0.88x, 0.79 -> 0.58x). sm_90 only.
#   m256_split   at 128 < M <= 256 where even the 64 x 64 ping-pong's tiles are under FEW_TILES of the SMs (N up to
#                ~1000), the large-M bucket's coop ran a few tiles (DeepSeek kv_a 256 x 576 x 7168: 10, 23 us, where
#                M = 128 ran 8.8 us on the Triton tier's split and M = 512 11.5 us on the ping-pong; cuBLAS 21 us, so
#                the ratio hid it): under M256_SPLIT_SHARE of the SMs in 64 x 64 tiles, this Triton tile (the
#                M_LEQ_128 bucket's) split along K by `fit`; from there, or where K is too short to split, the
#                ping-pong (ahead of the coop on every row measured). ab/fp8_m256_few.json /
#                blockscale_m256_few.json (H200, 13 rows each, against torch._scaled_mm / cuBLASLt): coop 0.97 /
#                0.92x, ping-pong 1.64 / 1.46x, split 1.86 / 1.57x; the ping-pong ahead at 48-64 tiles (and block
#                scale's 176 x 640 x 1536, short K: 1.37 vs 1.19x), the split below. Held out
#                (*_m256_few_heldout.json, fresh shapes): fp8 14 rows 0.98 -> 2.19x (+18 to +261%), block scale the
#                5 rows cuBLASLt takes 1.26 -> 2.26x. sm_90, fp8 and block scale.
#   gluon_waves  a cooperative Gluon bucket (two consumer warpgroups on a 128 x 256 tile) gives way to the ping-pong
#                on 128 x 128 (its tile split in N: four warps a consumer, six stages) where that tile count fills
#                its waves better by GLUON_WAVE_MARGIN (tiles over waves x SMs; N <= 128 leaves half the larger tile
#                empty, so the ping-pong), and to the Triton tier, fitted, where even 128 x 128 tiles are few.
#                bf16, 40 untuned rows (config_model.json, git history): 1024 x 5120 x 2880 (320 vs 160 tiles on 132 SMs) 0.65x
#                on the old Triton bucket, 0.88x ping-pong; GPT-OSS's router at M = 256 / 1024 (2 / 8 tiles) 1.10x /
#                0.81x on the fitted Triton tier, 0.46x / 0.52x on the ping-pong; 4096 x 57344 x 12288 (99% vs 100%)
#                0.91x ping-pong, 1.04x coop.
#   narrow_pingpong  a third tile for `gluon_waves`: the ping-pong on 64 x 192 tiles, at 128 < M <= NARROW_MAX_M
#                and N >= NARROW_MIN_N with K split up to 4 ways (hopper_host.fit_split_k keeps the splits to one
#                wave), above NARROW_MAX_M unsplit where K >= NARROW_MIN_K and the 128 x 128 tiles are not few (few:
#                the Triton tier's split, below); where its waves (tiles x
#                the splits the kernel keeps) are filled better by GLUON_WAVE_MARGIN than both the coop's and the
#                128 x 128 ping-pong's: the tile the tuned M_GEQ_256 buckets run (e.g. A16W16-N=16384-K=53248.json).
#                Held-out layers (ab/bf16_m256_512.json, 17 rows at M = 256 / 512, 40-96 coop tiles, against cuBLAS):
#                served (coop, or the 128 x 128 ping-pong / Triton tier by gluon_waves) 0.585-0.866x, geomean 0.735;
#                64 x 192 split 4 0.733-0.977x, geomean 0.859 (split 1 0.849, the 128 x 128 ping-pong split 2 0.743,
#                the coop split 2 0.700). By waves, not by "fewer coop tiles than SMs" (the rule's first form), since
#                ab/bf16_m128_256_few_tiles.json and ab/bf16_m512_1024_waves.json (H200, 26 held-out rows at
#                M = 256-3000): where 64 x 192 fills fewer waves than 128 x 128 (256 x 7680 / 8192: 160-172 tiles,
#                one split, 61-65%; 120-128 of 128 x 128, 91-97%) the 128 x 128 ping-pong ran 0.98-0.99x against
#                0.70-0.72x, the coop 0.93-0.96x against 0.79-0.84x at 256 x 14336 and 512 x 7680; above M = 512,
#                where 64 x 192 fills 79-97% and the others 55-87%: 0.85-0.97x against 0.70-0.87x (1024 x 4608 /
#                2880, 2048 x 4608, 777 x 1536), and where it does not (1024 x 5120, 3000 x 5000) it lost, up to
#                0.47x; past two waves there only on columns NARROW_COLUMN_FILL full (`narrow_columns`: a last
#                column of 64 / 192 at N = 640 ran 0.48-0.81x). At 64 < M <= 128, where the
#                Triton bucket keeps the shape (the wide ping-pong's tiles under `wide_share`), the same tile where K
#                is long: where its splits' fp32 partial tiles (written and read: splits x 2 x rows x N x 4 bytes,
#                rows = M in whole tiles) are at most 1 / NARROW_PARTIAL_SHARE of the weights' stream (N x K x 2
#                bytes): with 4 splits, K >= 64 x rows. ab/bf16_m128_narrow.json (13 held-out rows at M = 80 / 128, against cuBLAS): K = 8192-36864,
#                the Triton 64 x 128 bucket 0.79-0.88x, 64 x 192 split 4 0.86-0.99x; K <= 5120 it lost (0.81 vs 0.84x
#                at 128 x 5120 x 5120, 0.73-0.82 vs 0.80-0.86x at K = 2880-4096), as the partials' traffic predicts.
#   short_k_wave  where `narrow_pingpong` would split at 128 < M <= NARROW_MAX_M and K <= SHORT_K_WAVE_MAX_K: one wave
#                of this menu's unsplit ping-pong tiles instead (64 x 128, 64 x 64: the most tiles within the SMs, at
#                least SHORT_K_WAVE_FILL of them), where one fits: at short K the split's fp32 partials and reduce cost
#                more than the wave it fills. Found on random shapes (273 x 2240 x 2240: 64 x 192 split 0.70x, 90 tiles
#                of 64 x 128 0.86x); ab/bf16_short_k_wave.json (H200, against cuBLAS, 16 rows at M = 130-447,
#                N = 2048-4480, K = 1152-4096): 64 x 128 won on all 12 rows where its tiles fit one wave (0.64-0.81 ->
#                0.82-1.09x; 64 x 64 on 111-114 tiles 1.01x), lost on the 4 where they did not; held out
#                (ab/bf16_m129_512_heldout.json, 27 random rows): 0.733 -> 0.923x, one down (149 x 5632 x 1536 -10%).
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
#   narrow_wide  bf16, over the rules' answer after `long_k_coop` (`_narrow_wide`): where that is still
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
#   long_k_coop  bf16, over any rule's answer (`_long_k_coop`, after `long_k_split`): at K >= LONG_K_COOP_MIN_K and
#                LONG_K_COOP_MIN_M < M <= OFF_SECTOR_MAX_M, where the answer is a 64-row Gluon ping-pong tile, a
#                cooperative tile split along K to one wave (ranges of LONG_K_COOP_MIN_STEPS K steps or more): on rows
#                off 32-byte sectors `off_sector`'s, on rows on them the best-filling of `off_sector`'s two and the
#                `coop_widths` tiles; its measurements at LONG_K_COOP_MIN_M below.
#   coop_swap    bf16, over any rule's answer (`_coop_swap`): at COOP_SWAP_MIN_M < M <= COOP_SWAP_MAX_M and K >
#                SHORT_K_PINGPONG_MAX_K, the cooperative kernel's swap-AB split tile (kernels/gluon/hopper_coop.py
#                "Swap-AB": 128 weight rows x these token widths, the one >= M of the best area fill) where its area
#                fill is at least COOP_SWAP_FILL and COOP_SWAP_MARGIN over the answer's `launch_fill`: one tile of
#                tokens where 128-row tiles leave a second row mostly empty (138 x 30848 x 7552: the coop 128 x 256
#                fills 49%, 241 tiles of 128 x 144 87%). H200 against cuBLAS, heated, one process: fitted on
#                ab/bf16_coop_swap.json (96 shapes, seeds 1-15 at M = 65-96 / 129-192 and the weak rows: the four it
#                takes +8 to +37%; below the fill -5 to -18%, few tiles to -78%; M = 65-96 +0-9%, left alone); held
#                out on _verify.json (seeds 31-800, 138 rows 0.764 -> 0.940x; at K <= 448 18 of 23 down, to -13%:
#                the coop's epilogue unhidden at a few K steps, hence the K floor) and _verify2.json (seeds
#                801-1600, the rule with its floor: 120 rows 0.741 -> 0.941x, every one up). Over a 64-row ping-pong
#                answer from COOP_SWAP_PP_MARGIN of its fill (COOP_SWAP_PP_FILL at least): its measurements there.
#   swap_rounds  bf16, over any rule's answer (`_swap_rounds`, after `coop_swap`): at COOP_SWAP_MAX_M < M <=
#                SWAP_ROUNDS_MAX_M and K > SHORT_K_PINGPONG_MAX_K, the same swap-AB tile over several token tiles
#                (128 weight rows x a width of these, y's BLOCK_SIZE_M) where its rounds cost the width's margin
#                (SWAP_ROUNDS_MARGIN) less than the answer's (`round_area`: rounds of the SMs x tile area; an
#                unsplit, unswapped Gluon answer without a tail split only). cuBLAS sizes its token tile so the tiles
#                fill the SMs (nvjet 256 x 136 at M = 269, docs/PERF.md "What cuBLAS runs"): 301 x 8448 x 9296 on
#                132 tiles of 128 x 160 instead of 220 of 64 x 192, 0.62 -> 0.87x. Its measurements at
#                SWAP_ROUNDS_MARGIN below.
#   cdna_tiles   (gfx942 / gfx950) a "backend": "gluon" bucket names the CDNA ping-pong, one fixed 256 x 256 tile a
#                program and no split-K: where those tiles are few (under FEW_TILES of the CUs) the bucket runs on the
#                Triton tier, fitted (its split K and smaller tiles), as it did before the kernel had a launcher.
#                Unmeasured (no AMD GPU here): the same rule as the sm_90 Gluon buckets' few-tiles step.
#   one_wave     bf16 at ONE_WAVE_MIN_M <= M <= ONE_WAVE_MAX_M: before the rules above (and the M <= 64 decode
#                bucket at M = 64), the tile of this menu whose tiles come
#                nearest one wave without passing it (the most tiles <= SMs, at least ONE_WAVE_FILL of them), each
#                a Gluon ping-pong with a deep ring and no split: where a tile of 64 tokens fills one wave, the
#                weights stream through every SM once and nothing is reduced. What cuBLAS runs there
#                (benchmarks/results/h200/vendor_kernels_m128.json: 64 tokens x 64-112 weight rows, 96-128 CTAs, 10-13
#                stages, no split-K). Only where the last 64-row box of x is at least half full: the swap tile with
#                a box loading mostly past M ran 0.65 / 0.84x at M = 80 where M = 112 / 128 ran 0.94-1.09x (the
#                others not measured there). The menu, in order: the swap-AB 64 x 64 (weight rows in the wgmma's M;
#                tokens 64, at M <= 128), the 64 x 96 split tile (K step 128, 5 stages) and the 64 x 128 (8 stages). ab/bf16_m128_grid.json and ab/bf16_one_wave.json
#                (H200, against cuBLAS, 30 rows at M = 80-256): the swap 64 x 64 where 90-128 tiles 0.94-1.09x
#                against the served 0.80-0.99x; the 64 x 96 on 96-128 tiles 0.85-0.95x against 0.73-0.87x (M = 256,
#                N = 2880: 0.87 vs 0.73x); the 64 x 128 on 112 tiles 0.93x against 0.76x (7168 x 2048); the same
#                64 x 128 tile with 6 stages 0.78-0.87x (the ring's depth is most of it). Not taken where
#                `narrow_pingpong`'s split partials are under 1 / NARROW_LONG_SHARE of the weights (K >= 16384 at
#                M = 128): 128 x 4608 x 36864 ran 0.97x split, 0.91x on one wave of 64 x 96 (fewer bytes into each
#                SM: a 64 x 192 tile's x rows are half of a 64 x 96's for the same weights). At M = 64 on 10240-14336
#                columns (ab/bf16_one_wave_more.json) 64 x 96 / 64 x 128 ran 0.97-1.06x against the swap-AB decode
#                bucket's 0.81-0.90x (M < 64 not measured: a 64-token tile there loads past M).
#   narrow_wave  bf16, N <= NARROW_WAVE_MAX_N (routers: N = the experts) at M > ONE_WAVE_MAX_M, before every rule
#                below: the tile of this menu of Gluon ping-pong tiles (64 x 64, 64 x 128, 128 x 128; deep rings, no
#                split) whose tiles come nearest one wave without passing it, at least NARROW_WAVE_FILL of the SMs
#                (`one_wave`'s choice over this menu): the tokens supply the tiles, each SM streams its x rows once and
#                nothing is reduced. What cuBLAS runs there (vendor_kernels_decode.json: 4096 x 128 x 2880 on 128 CTAs
#                of 64 x 64, 13 stages, no split). Only on whole column tiles, or where ops/dispatch.py's `pad_n`
#                copies w to whole columns first (`_narrow_wave_fits`), and 64 x 64 only up to
#                NARROW_WAVE_SQUARE_MAX_K. Fitted on ab/bf16_narrow_wave.json (H200, against cuBLAS, 40 rows: ten
#                routers, N = 8-256, M = 1024-8192; the suite's GPT-OSS router and M x 256 x 16384 among them),
#                shaped on ab/bf16_narrow_wave_heldout.json (148 rows of other K, odd M and N = 96 / 160 / 200, the
#                rule's first form: N = 136-200 on a partial last column ran ~2x slower in both TMA kernels, ncu: the
#                same DRAM bytes, the w box's rows past N; 64 x 64 lost 12-15% at K = 16384 to the Triton split;
#                64 x 128 with K step 64 and 8 stages 0.853 against K step 128 and 4 stages' 0.838 over 55 rows),
#                checked on ab/bf16_narrow_wave_final.json (every one of those rows the final rule changes, 126:
#                0.782 -> 0.912x; the 111 of them outside the fitting A/B 0.778 -> 0.914x, three behind by 3-7%:
#                2600 x 128 x 7168, 6000 x 32 x 2048, 6000 x 96 x 4096). Partial last columns on w's copy:
#                ab/bf16_pad_n.json (fitted), ab/bf16_pad_n_heldout.json (46 held-out rows, N = 8-248: 0.651 ->
#                0.799x; docs/PERF.md "Operands the TMA kernels load slowly"). sm_90 only.
#   narrow_n     bf16, N within one tile column (N <= its BLOCK_SIZE_N), on the Triton tier's path (few tiles): this
#                64-row tile with a deeper ring (K step 128, 4 stages) instead of the bucket's 128 rows, split K to
#                one wave (`fit`), where its tiles and splits fill at least FEW_TILES of the SMs (the bucket's own fit
#                otherwise: at M <= 512 it shrinks to 64 rows itself and splits further with its K step of 64).
#                GPT-OSS's router (N = 128, K = 2880), ab/bf16_router.json (H200, against cuBLAS): M = 1024 / 2048 /
#                4096 split 4 / 4 / 2: 0.93 / 0.85 / 0.79x against the served 128 x 128 split 11 / 8 / 4's 0.80 /
#                0.68 / 0.62x (the same CTA counts at 2048 / 4096: the ring's depth, as at M = 128 under `one_wave`).
#                Since `narrow_wave` (which goes first) it serves only where that rule finds no tile: the router at
#                M = 1024 / 2048 (32 / 64 tiles of 64 x 64, under NARROW_WAVE_FILL), not at 4096 and above.
#   decode_wide  at M <= DECODE_WIDE_MAX_M (the weights' read is the time) a Triton bucket's tile widened to this many
#                columns (fitted as the bucket's tile is: K split where its tiles are few) where that keeps more CTAs
#                in flight: within one wave of the CTAs the SMs hold (`operand_bytes` sizes the rings), more CTAs
#                than the bucket's own fitted tile; beyond it, waves filled to DECODE_WIDE_FILL. Per-token fp8, 16 x 64 -> 16 x
#                128 (BK 256, 4 stages: a 144 KB ring by `operand_bytes`, one CTA an SM; the compiled kernel
#                holds 112 KB of it in shared memory, docs/ISA.md), ab/fp8_decode_wide.json (H200, 45 layers of
#                the suites at M = 1 and 16, against torch._scaled_mm): where the 16 x 64 tiles were 72-80 unsplit (one
#                CTA on most SMs) and 16 x 128 split 3 made 108-120, +5-50% (4608 x 36864: 1.61 -> 2.41x); the TP
#                shard's 28672 x 8192 / the 28672 x 4096 layer (224 tiles, 85% of two waves) +21% (1.23 -> 1.50x,
#                ab/fp8_decode_tp_shard.json); the same CTA count split 2 instead of unsplit mixed (-8% at K = 2048 to
#                +7%), and 280 / 288 tiles (71-73% of three waves) -5 / -9%: the rule leaves those. Over the 90 rows
#                1.525 -> 1.587x geomean (every row: 1.595), the worst change -3.6% (73728 x 4608, 576 tiles).
#                Block scale, the same rule over its 16 x 64 x 128 bucket (the wide tile split by `ctas_per_sm` as the
#                bucket's; 72 KB rings, three an SM), ab/blockscale_decode_wide.json (against cuBLASLt's block-scaled
#                GEMM): the 16 rows it changes (4864-7168 columns with long K, DeepSeek's lm_head) 1.196 -> 1.252x,
#                15 up (M = 16 rows 0.95-0.98 -> 1.05-1.08x), lm_head M = 1 -1%; where it leaves 16 x 64 (224-1152
#                wide tiles within the three-a-SM slots) 16 x 128 unsplit ran -11% to +6%.
#                (Block scale's `decode_pingpong` takes M = 8-16 first where its 64 x 64 tiles are 66-264.)
#   decode_wide_k  (with `decode_wide`) beyond one wave of the slots, the wide tile with this K step instead (block
#                scale: 16 x 128 x 256, two scale blocks a step, 4 stages: per-token's decode tile, a 144 KB ring by
#                `operand_bytes`, one an SM) where its tiles fill DECODE_WIDE_K_FILL of their waves and K is at least
#                DECODE_WIDE_K_MIN_K. The weights stream at per-token's rate there: ab/blockscale_decode_ptcfg.json
#                (H200, against cuBLASLt's block-scaled GEMM, per-token's served configs on the block-scale op at
#                M = 1 / 16, 82 rows): +0.6-15% on the 14 rows this rule takes (224-1010 tiles filling 85-96%: lm_head,
#                gate_up of 28672-106496 columns); the same tile split (within one wave, where `decode_wide` splits
#                the BK 128 tile) lost up to 14% at M = 16, and under the fill (280 / 288 tiles, 71-73%) 9%. Held out
#                (ab/blockscale_decode_wide_k.json: 42 rows, M = 1 / 4 / 8 / 12 / 16, N = 28672-151936 not in the
#                suites): 1.159 -> 1.201x with the rule at fill 0.8 and no K floor, 36 up (+2-21%); the 6 down were
#                40960 x 5120 (fill 81%) and 45056 x 3072, which the fill and K floors (fitted there) now leave.
#   swap_wide    at M < ONE_WAVE_MIN_M a Gluon swap-AB bucket (the weight rows are the kernel's tile rows; the
#                persistent grid takes min(tiles, SMs) CTAs) widened to this many weight rows where its own tiles take
#                more than one round of the SMs and the wide ones fit in one: the weights' read is the time, and a
#                partial second round leaves most SMs idle while some read two tiles. bf16, 16 / 32 / 64 tokens x 64
#                -> x 128 (cuBLAS runs 128 x 16 tiles here: 80 CTAs at 10240 x 5120, benchmarks/vendor_kernels.py),
#                ab/bf16_decode_waves.json (H200, against cuBLAS, M = 1 / 8 / 16 / 32): 22 rows of 133-224 narrow
#                tiles (12 suite rows, 10 held out: N = 8704-14336, K = 2048-28672) 0.965 -> 1.019x geomean, none
#                down more than 0.3% (qwen3 qkv 10240 x 5120 0.88 -> 0.97-1.00x); 272 narrow tiles (136 wide: a
#                second round again) -5%, which the rule leaves. The Triton tier's 16 x 128 (the tuned Llama table's
#                tile) did as well on long K (12288 x 28672: 1.02 against 0.96x) and worse on short K. At the M no
#                suite has (ab/bf16_decode_waves_odd_m.json): M = 2 / 5 / 12 / 24 +3-14% as at 1 / 16 / 32; M = 40 /
#                48 / 56 (the M_LEQ_64 bucket's 64 x 64, 4 stages at 128 rows) 0.76-0.93 -> 0.88-1.05x on 133-224
#                tiles, 272 tiles -9% (left).
#   decode_split  bf16 at M < ONE_WAVE_MIN_M, the other side of `swap_wide`: where the swap-AB bucket's tiles are few
#                (narrow N: under FEW_TILES of the SMs), this Triton tier tile of the bucket's token rows (16 / 32 /
#                64) x 64 weight rows x 128, K split by `fit` to one wave, where that split is at least
#                DECODE_SPLIT_MIN and K at least DECODE_SPLIT_MIN_K: the Gluon swap-AB kernel does not split K, so
#                4-44 CTAs each streamed a whole K of weights (23 x 528 x 22448: 9 CTAs, 0.37x cuBLAS). Found on random
#                shapes (benchmarks/results/h200/a16w16_random.json); fitted on ab/bf16_decode_split.json (H200,
#                against cuBLAS, 176 rows at M = 1-60 with the rule's first form, every few-tile swap shape split:
#                0.837 -> 0.974x; split 2 lost on 40 of 48 rows, -5 to -24%, split 4 at K = 2048 -4 to -14% at
#                M <= 24; from split 3 at K >= 4096 every row within -3.5%, up to +190% at 4-9 tiles); held out
#                (ab/bf16_decode_split_heldout.json, 68 other random rows at M = 1-63, N = 128-4096, K = 4096-32768):
#                0.605 -> 0.989x, rows under 0.90x 59 -> 9, two down (27 x 2560 x 11264, 40 tiles split 3: 1.02 ->
#                0.85x; 2 x 2304 x 6784 -4%). The suites' decode layers keep their tiles (4224 columns and more, or
#                a shape file). On the 64-token-row buckets (32 < M < 64) from K = DECODE_SPLIT_WIDE_MIN_K:
#                ab/bf16_decode_split_short_k.json (16 random shapes at M = 21-63, K = 2384-4008) 0.855 -> 0.987x,
#                the 64-row tiles within -2% or up (to +76%), the 32-row tiles at M = 21-22 -5 to -7% on two of four
#                (so not there); held out (bf16_decode_split_short_k_heldout.json, 18 shapes at M = 33-62, K =
#                2160-4000) 0.782 -> 0.992x, one down (46 x 648 x 3056 -3.5%).
# The Gluon ping-pong tiles several bf16 rules serve (`one_wave`, `narrow_wave`, `few_tiles`, `m128_tile`): one
# definition each (stages: what hopper_plan.budget fits; the first narrow-wave A/B's 64 x 64 asked 8).
PINGPONG_64X128 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                   "num_stages": 8, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
PINGPONG_64X192 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                   "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
PINGPONG_64X64 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                  "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}
#   gated_rows   (a16w16_gated) where the bucket's 128-row tiles fill their waves poorly (M past a whole row of
#                them: 259-341 rows; or a partial last round), this 64-row tile (the M_LEQ_256 bucket's) where its launch
#                fill (`launch_fill`) is GATED_ROWS_MARGIN of theirs and its tiles are not few (FEW_TILES of the SMs:
#                fewer, `fit` splits the bucket). ab/gated_midm.json (H200, against torch.matmul + silu(g) * u, the 64-row
#                tile non-persistent at 4 stages): at 1.33-2.0x the fill 0.66-1.20x where 128 x 128 ran 0.63-0.87x;
#                at 1.08-1.2x it lost 3-8% (265 x 15200 x 5536: 0.83 -> 0.76x), at equal fill 7-18%. sm_90 only.
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
OP_RULES = {"a16w16_gated": {"gated_rows": GATED_64X128, "gated_one_wave": GATED_COOP_128X128},
            "a8w8_blockscale": {"ctas_per_sm": 2, "wide_share": 0.6, "operand_bytes": 1, "unsplit_stages": 6,
                                "decode_pingpong": True, "decode_pingpong_from": 8, "decode_pingpong_wide": True,
                                "decode_wide": 128,
                                "decode_wide_k": 256,
                                # `m256_split` (both ops): the Triton tile measured there, each table's M_LEQ_128
                                # bucket's
                                "m256_split": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                                               "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4, "tma": True,
                                               "persistent": False, "NUM_KSPLIT": 1}},
            "a8w8": {"wide_share": 0.6, "decode_pingpong": True, "decode_wide": 128, "operand_bytes": 1,
                     "large_few_split_k": 8192,
                     "m256_split": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                                    "num_warps": 4, "num_stages": 6, "tma": True, "persistent": False,
                                    "NUM_KSPLIT": 1}},
            "a16w16": {"gluon_waves": True, "cdna_tiles": True, "wide_share": 0.6, "swap_wide": 128,
                       "decode_split": {"BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                                        "num_stages": 4, "tma": True, "persistent": True, "NUM_KSPLIT": 1},
                       "one_round_buckets": True, "fill_over_tables": True, "one_wave": (
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
                 "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "swap_ab": True, "NUM_KSPLIT": 1},
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 96, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                 "num_stages": 5, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1},
                PINGPONG_64X128),
                "narrow_wave": (
                PINGPONG_64X64,
                PINGPONG_64X128,
                {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                 "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "NUM_KSPLIT": 1}),
                "short_k_wave": (PINGPONG_64X128, PINGPONG_64X64),  # `short_k_wave`: the one with most tiles in a wave
                "few_tiles": (  # `few_tiles`: the one_wave / narrow_wave menus' 64 x 128 and 64 x 64, larger first
                PINGPONG_64X128,
                PINGPONG_64X64,
                PINGPONG_64X192),
                # `m128_tile`: at 64 < M <= 128, where the Triton tier's M_LEQ_128 bucket (64 x 128) would run
                # unsplit: the Gluon ping-pong on the same tile, or its 128 x 128 (`wide_config`) where those are
                # at least FEW_TILES of the SMs. H200 against cuBLAS: 22 held-out rows (M = 67-127, N = 4416-9664)
                # 0.76 -> 0.85x on 64 x 128, each up 4-21%; 128 x 128 from 68 tiles 0.85-0.95x where 64 x 128 ran
                # 0.68-0.82x, under 64 tiles it lost 10-25% (ab/bf16_m65_128_heldout.json; bf16_m65_128.json: 96 /
                # 127 x 9216 x 3072 0.70 / 0.65 -> 0.88 / 0.82x)
                "m128_tile": PINGPONG_64X128,
                # `m128_small`: `m128_tile`'s shapes whose 64 x 64 tiles are under FEW_TILES of the SMs (N <= ~2048):
                # 67 x 256 x 640, 77 x 384 x 352, 105 x 960 x 688 (4-16 tiles of 64 x 128) 0.76-0.77 -> 0.86-0.91x
                # on 64 x 64 (ab/bf16_short_k_few.json)
                "m128_small": PINGPONG_64X64,
                "narrow_n": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                             "num_warps": 4, "num_stages": 4, "tma": True, "persistent": False, "NUM_KSPLIT": 1},
                # `short_k_pingpong`: at K <= SHORT_K_PINGPONG_MAX_K, a whole number of its K steps, where
                # `gluon_waves` would serve a coop tile (128 x 256 or a `coop_widths` width): the ping-pong's 64 x 128.
                # At a few K steps a tile's epilogue is much of its time; the coop's two consumers store at once, the
                # ping-pong's hide each store behind the other's mainloop. ab/bf16_short_k_coop.json: 9 coop rows +3
                # to +20%; held out on any K <= 512 (bf16_short_k_coop_heldout.json) 0.877 -> 0.790x: up where K is
                # a multiple of 64 (8 of 10 rows, +3 to +25%), down to -43% elsewhere (a partial last K box on 4x
                # the tiles); held out again on K % 64 == 0 (bf16_short_k_pingpong_heldout.json, 36 fresh rows):
                # 0.957 -> 1.043x, 34 up, at K <= 448 none down over 3%
                "short_k_pingpong": PINGPONG_64X128,
                # `off_sector`: rows off 32-byte sectors (K % 16 == 8), the coop's two orientations, 4 stages
                "off_sector": ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 4, "num_stages": 4},
                               {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "GROUP_SIZE_M": 8, "num_stages": 4}),
                # `long_k_split`: `off_sector`'s two tiles split along K (128 x 256 first) on rows on sectors
                "long_k_split": True,
                # `long_k_coop`: a split coop tile in a 64-row ping-pong tile's place at a long K
                "long_k_coop": True,
                "split_widths": (160, 144),
                "wide_one_wave": (192, 160, 144),
                "narrow_wide": 160,
                "coop_swap": (144, 160, 192), "swap_rounds": (80, 96, 160, 192),
                "coop_widths": ((192, 5), (160, 6), (144, 6)),  # (BLOCK_SIZE_N, num_stages)
                "narrow_pingpong": {
                "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_warps": 4, "num_stages": 6, "NUM_KSPLIT": 4},
                "wide_config": {
                "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon"}}}


GLUON_WAVE_MARGIN = 1.1  # how much better the ping-pong's waves must be filled to give up the cooperative tile
NARROW_MAX_M, NARROW_MIN_N = 512, 2048  # where `narrow_pingpong`'s split was measured (M = 256 / 512, N = 2880-12288)
NARROW_MIN_K = 4096  # above NARROW_MAX_M the 64 x 192 tile needs K this long (1000 x 3000 x 2000 lost: 0.78 vs 0.83x)
NARROW_PARTIAL_SHARE = 4  # at 64 < M <= 128: `narrow_pingpong`'s split partials at most 1 / this of w's bytes
NARROW_LONG_SHARE = 8  # ... and at most 1 / this: the split goes before `one_wave`
ONE_WAVE_MIN_M, ONE_WAVE_MAX_M, ONE_WAVE_SWAP_MAX_M = 64, 256, 128  # `one_wave`'s M range; its swap-AB tile up to this M
# (below ONE_WAVE_MIN_M the swap-AB decode buckets, which `swap_wide` widens)
ONE_WAVE_FILL = 0.6  # `one_wave`: the least share of the SMs a tile's count fills
SPLIT_WIDTH_MIN_M, SPLIT_WIDTH_MAX_M = 129, 512  # `split_widths`: where it won (M = 1024: mixed, see OP_RULES)
SPLIT_WIDTH_FILL = 0.85  # `split_widths`: the least share of its waves (tiles over waves x SMs) its tiles fill
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
# `wide_one_wave`: where it was fitted and held out (random shapes at M = 513-4096, N = 304-2408)
WIDE_ONE_WAVE_MIN_M, WIDE_ONE_WAVE_MAX_M, WIDE_ONE_WAVE_MIN_N = SPLIT_WIDTH_MAX_M + 1, 4096, 256
# `narrow_wide`: the most of the 64 x 192's columns (tiles x width, past N included) the narrower tile's may cover
NARROW_WIDE_COLUMNS = 0.96
# `coop_swap`: where it was fitted (M = 129-192: one token tile of 144-192 fills what 128-row tiles leave half
# empty), the least area fill that won, and the margin over the answer's fill (at 1.0-1.1x it lost 1-7%)
COOP_SWAP_MIN_M, COOP_SWAP_MAX_M, COOP_SWAP_FILL, COOP_SWAP_MARGIN = 128, 192, 0.7, 1.2
# ... and over a 64-row ping-pong answer (`split_widths`' 64 x 144 / 160 mostly), whose consumers each load a w box for
# 64 rows: the swap tile where it fills COOP_SWAP_PP_MARGIN of the answer's launch fill and at least COOP_SWAP_PP_FILL.
# ab/bf16_coop_swap_over_pingpong.json (H200, heated, one process; 36 random shapes of seeds 120001-120199 at
# M = 130-190, K > 448 with such an answer, every swap width >= M timed): at a fill 0.9x the answer's or more all 7
# rows up (+2% to +31%: 133 x 12320 x 920 0.66 -> 0.87x, at fills 0.59-0.82), at 0.83x mixed (-6% to +10%), below it
# down to -31%. Held out (ab/bf16_coop_swap_over_pingpong_heldout.json, a random 30 of the 97 rows of seeds
# 130001-130399 it changes): 0.854 -> 0.902x, 22 up (to +28%: 160 x 10768 x 3888 0.73 -> 0.94x), 8 down 0.2-5%.
COOP_SWAP_PP_FILL, COOP_SWAP_PP_MARGIN = 0.55, 0.9
# `swap_rounds`: the answer's `round_area` over the swap tile's at least this, by token width. Fitted on
# ab/bf16_swap_rounds_fit.json (H200, heated, one process; 40 shapes at M = 256-1478: the suites' weak rows there and
# random ones where a width fills more, the two best-filling widths >= 80 timed each): 160 / 192 from 1.1 (8 rows
# +1 to +42%, one -1%; below it -4 to -18%); 80 / 96 over 1.2, not at it (the margin is exclusive: at exactly 1.2
# 7 of 9 lost, to -22%, the split tile's second wgmma dear on a narrow tile; the picks over it, at 1.33 and up, few-tile
# rows +0 to +29%); 144 (nine 16-row boxes a stage) lost on 4 of 5 rows where it filled better; over an answer with a
# tail split the estimate misses (3 rows -7 to -15%). Held out (ab/bf16_swap_rounds_heldout.json, 31 shapes at
# M = 262-1534 the fit never saw, 2026-12-05): 1.136x over the answer without it, 28 faster, 3 behind by 0.5-1.8%.
SWAP_ROUNDS_MAX_M = 1536
SWAP_ROUNDS_MARGIN = {80: 1.2, 96: 1.2, 160: 1.1, 192: 1.1}
COOP_WIDTH_MIN_M, COOP_WIDTH_MAX_M = 385, 4096  # `coop_widths`: four 128-row tiles and more, measured to 4096
COOP_WIDTH_WAVES = 2  # `coop_widths`: lost from three waves
COOP_WIDTH_ONE_WAVE_FILL = 0.7  # `coop_widths`: the least area fill of tiles that take one wave (the lowest measured)
SHORT_K_PINGPONG_MAX_K = 448  # `short_k_pingpong`: K up to this (at 512 two of six rows with M > 15000 lost 11-17%)
COOP_ROW_WAVES = 3  # `coop_widths` on one row of 128-row tiles (64 < M <= 128): won on three waves too
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
# `tail_waves` (in `gluon_waves`): the coop's and the 128 x 128 ping-pong's fills counting each one's tail split
# (`tail_fill`): the ping-pong where its fill is GLUON_WAVE_MARGIN over the coop's; the coop in the ping-pong's place
# only at K >= COOP_TAIL_MIN_K and a fill TAIL_WAVES_COOP_MARGIN over the ping-pong's.
TAIL_WAVES_COOP_MARGIN = 1.05
# `narrow_tail` (in `gluon_waves`): `narrow_pingpong`'s 64 x 192 gives way to the ping-pong 128 x 128 where that tile's
# area fill counting its tail split (`tail_fill`) is NARROW_TAIL_MARGIN over the 64 x 192 launch's (`launch_fill`).
NARROW_TAIL_MARGIN = 1.2
# The Gluon ping-pong tile of `wide_share` (what the tuned fp8 block-scale tables run at M <= 128, e.g.
# A8W8_BLOCKSCALE-N=7168-K=16384.json), applied over the large-M Gluon bucket's other keys.
SMALL_PINGPONG = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 4, "num_warps": 4, "num_stages": 6}
SMALL_PINGPONG_MAX_M = 256  # the largest M the large-M Gluon bucket gives way to it at
PINGPONG_ROUND = 2  # ping-pong tiles an SM takes in one round (one a consumer): more, and the coop serves
M256_SPLIT_SHARE = 0.35  # `m256_split`: the Triton tier's split under this share of the SMs in 64 x 64 tiles
DECODE_PINGPONG_MIN_M = 17  # `decode_pingpong`: from the M_LEQ_64 buckets' first M (at M <= 16 the 16-row Triton
# tile; block scale's rule from its `decode_pingpong_from`)
# `decode_pingpong_wide` (block scale): at DECODE_PINGPONG_WIDE_MIN_M <= M < DECODE_PINGPONG_MIN_M the ping-pong past
# one round of its consumers where its tiles are DECODE_PINGPONG_WIDE_SMS (lo, hi) an SM (594-1386 on 132 SMs).
# H200 against cuBLASLt's block-scaled GEMM: fitted on ab/blockscale_m13_16.json (24 random shapes at M = 13-16,
# 280-1356 tiles: 18 up; down 2-7% only at 280-544 tiles) and the M = 16 rows of blockscale_decode_gluon_boxes.json
# (800-1152 tiles +5-10%, 1664 / 2020 -2.5 / -0.9%); held out (blockscale_m13_16_heldout.json, 20 shapes at 600-1400
# tiles): 1.183 -> 1.304x, all 20 up (+0.1% to +34%). At M = 8-12 the Triton tile held (blockscale_decode_m_sweep.json)
DECODE_PINGPONG_WIDE_MIN_M = 13
DECODE_PINGPONG_WIDE_SMS = (4.5, 10.5)
UNSPLIT_MAX_M = 16  # `unsplit_stages`: the M_LEQ_16 bucket (at 17-64 the unsplit tiles are `decode_pingpong`'s)
UNSPLIT_MIN_K = 7168  # ... and K at least this (K <= 5120 lost with the same waves: see OP_RULES)
DECODE_WIDE_MAX_M = 16  # `decode_wide`: the M_LEQ_16 bucket (at 17-64 `decode_pingpong`'s Gluon tiles)
DECODE_WIDE_FILL = 0.8  # `decode_wide` beyond one wave: the least share of its waves its tiles fill
# `decode_wide_k`: the least share of its waves (one CTA an SM: a partial last wave idles more of the stream) and the
# least K (K = 3072: 12 steps of 256) it serves; fitted on ab/blockscale_decode_wide_k.json's held-out shapes (320
# tiles filling 81% lost 9-13%, 352 at K = 3072 5-8%), the suite's rows fill >= 85%
DECODE_WIDE_K_FILL, DECODE_WIDE_K_MIN_K = 0.84, 4096
NARROW_WAVE_MAX_N = 256  # `narrow_wave`: N at most this (a router's experts; measured N = 8-256)
NARROW_WAVE_FILL = 0.6  # `narrow_wave`: the least share of the SMs its tiles fill
NARROW_WAVE_SQUARE_MAX_K = 8192  # `narrow_wave`: the 64 x 64 tile up to this K (K = 12288 / 16384 lost to the split)
NARROW_WAVE_PAD_SHARE = 8  # `narrow_wave`: a partial last column where a copy of w is 1 / this of x (dispatch.pad_n)
# `few_tiles` (bf16, H200, against cuBLAS in the same process): above M = 128 (FEW_TILES_MIN_M) where even 128 x 128
# tiles are under FEW_TILES of the SMs, the Triton tier's split (128 x 256 split 4-16) ran 0.63x geomean on 20 shapes
# (1000^3 0.31x), the ping-pong's 64 x 128 split to one wave 0.86x, its 64 x 64 best where 64 x 128 tiles are too few
# (ab/bf16_few_tiles.json); held out: 32 random shapes 0.84 -> 1.56x (odd N / K, where cuBLAS slows too; two lost
# 3 / 8%: bf16_few_tiles_heldout.json), 11 aligned 0.74 -> 0.95x (one lost 5%, 1024 x 128 x 8192 on one tile
# column: hence `narrow_n`'s exception in `choose`; bf16_few_tiles_verify.json). At 128 < M <= 256 (first measured
# above 256 only; below, where `one_wave` finds no tile, the Triton tier's split served: 128 x 256 split 4-16, 0.59-0.88x)
# ab/bf16_decode_split.json's 18 such rows (random and grid shapes, N = 256-2048) 0.789 -> 0.990x, every one up 3-58%;
# held out (ab/bf16_decode_split_heldout.json, 12 random rows at M = 129-256) 0.783 -> 0.970x, none down. The
# 64 x 192 (`narrow_pingpong`'s tile, last in the menu: taken where it fills GLUON_WAVE_MARGIN more than the others)
# where K >= FEW_TILES_WIDE_MIN_K: fewer, wider tiles split in two where 64 x 128 tiles are too many to split
# (319 x 1696 x 23680: 70 tiles of 64 x 128 unsplit 0.74x, 45 of 64 x 192 split 2 0.86x). ab/bf16_few_tiles_wide.json
# (68 grid rows at M = 260-1000, N = 768-2560): K = 4096 -5 to -9% (hence the K floor), 8192 +1-5%, 16384 / 24576
# +5-19%; held out (ab/bf16_few_tiles_wide_heldout.json, 40 random rows at M = 257-1100, K = 8192-32768): 0.821 ->
# 0.920x, every row up 2-20%.
DECODE_SPLIT_MIN, DECODE_SPLIT_MIN_K = 3, 4096  # `decode_split`: the least K split (split 2 lost) and K (2048 lost)
DECODE_SPLIT_WIDE_MIN_K = 2048  # ... and K on the bucket's 64 token rows (32 < M < 64; see `decode_split` above)
LARGE_FEW_STAGES = 4  # `large_few_split_k`: the Triton tier's ring (what its A/B ran)
LARGE_FEW_SPLIT_MAX_M = 1536  # `large_few_split_k`: up to this M (2015 x 256 x 25472 and 4096 x 256 x 16384 lost)
SHORT_K_WAVE_MAX_K, SHORT_K_WAVE_FILL = 4096, 0.55  # `short_k_wave`: where its A/B ran; its least fill that won (57%)
FEW_TILES_MIN_M = 128  # `few_tiles` in `gluon_waves` above this M (at M <= 128 the bucket is the Triton tier's)
FEW_TILES_WIDE_MIN_K = 8192  # `few_tiles`: the least K of its menu's 64 x 192 (K = 4096 split 2 lost 5-9%)
FEW_TILES_FILL = 0.45  # `few_tiles`: the least share of the SMs its CTAs fill (won from 0.48: 1024 x 256 x 2048)
SECTOR_ELEMENTS = 16  # bf16 elements in 32 bytes (ops/dispatch.py PITCH_SECTOR): K's rows off these are copied
FEW_TILES_UNSPLIT_FILL = 0.25  # ... in `gluon_waves` where K is too short to split (K < 2 x FEW_TILES_SPLIT_K):
# unsplit 64 x 64 at 27-45% beat the Triton tier's split 0.34-0.69 -> 0.87-0.96x (ab/bf16_short_k_few.json; held out,
# bf16_model_rules_heldout.json, the rule's first form: 22 Triton-tier rows 0.35-0.77 -> 0.61-0.93x); GPT-OSS's
# router 512 x 128 x 2880 (12%) stays the Triton split's (0.96x).
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


def past_its_round(op: str, cfg: dict, bound: int, M: int, N: int, num_cus: int) -> bool:
    """`one_round_buckets`: whether a shape file's unsplit bucket `cfg`, measured at M = `bound` < M with its tiles in
    one round of the SMs, would take a second round at M (its tile was picked to fill the SMs at `bound`; a few rows
    more leave a partial round: the config model serves M instead, configs.serve). Swap-AB and split-K tiles keep
    their bucket: a split tile's second round is short, and the tuned split configs beat the model there (H200,
    `ab/bf16_one_round_buckets.json`: 28 unsplit rows 0.666 -> 0.853x cuBLAS with the model, none behind by 3%; 22
    split rows 0.966 -> 0.846x, 16 behind)."""
    if not OP_RULES.get(op, {}).get("one_round_buckets") or cfg.get("swap_ab") or cfg.get("NUM_KSPLIT", 1) > 1:
        return False

    def tiles(m):
        return -(-m // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"])
    return bound < M and tiles(bound) <= num_cus < tiles(M)


# `fill_over_tables`: the config model's answer replaces a shape file's bucket at an M other than the bucket's own where
# the model's launch fills at least FILL_OVER_TABLE of its waves and the bucket's less than FILL_TABLE_BELOW
# (`fills_better`, `launch_fill`).
FILL_OVER_TABLE, FILL_TABLE_BELOW = 0.9, 0.8


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


def fills_better(op: str, table: dict, fitted: dict, M: int, N: int, num_cus: int) -> bool:
    """`fill_over_tables`: whether the config model's answer `fitted` should serve M instead of a shape file's bucket
    `table` (configs.serve asks at an M other than the bucket's own, where it was measured): its launch fills at
    least FILL_OVER_TABLE of its waves where the bucket's fills less than FILL_TABLE_BELOW (`launch_fill`; a bucket
    tuned at one M leaves partial waves at others, and the model fits each M). Fitted on
    `ab/tables_vs_model_bf16.json` (H200: the 15 of 312 rows it picks 1.21x over the tables, none behind), checked
    on 38 rows at other M (`ab/bf16_fill_over_tables.json`: 0.749 -> 0.869x cuBLAS, two behind, 2-8%: both where
    the model's answer is its few-tile fallback, a Triton-tier split, against a tuned split of the Gluon ping-pong
    at N = 1536: such an answer never replaces a bucket)."""
    if not OP_RULES.get(op, {}).get("fill_over_tables"):
        return False
    if fitted.get("NUM_KSPLIT", 1) > 1 and fitted.get("backend") != "gluon":
        return False
    return (launch_fill(fitted, M, N, num_cus) >= FILL_OVER_TABLE
            and launch_fill(table, M, N, num_cus) < FILL_TABLE_BELOW)


# ----------------------------------------------------------------------------- the tail split
# The Gluon dense kernels' tail split (kernels/gluon/hopper_pingpong.tail_plan, the fp8 coop's hopper_fp8_plan.tail_plan):
# where a persistent launch's tiles leave a partial last round, its R tiles run as S K splits each. Its count lives here
# because the config model counts it in the waves a tile fills (`tail_fill`); the kernels' host code reads it here.
#
# The most K splits of a tail tile: the reduce reads every split's partial (fp8 8192³, 4 tail tiles: 32 splits
# cost 10.1 us of reduce for 6.0 us less GEMM, with the reduce's split loop a runtime loop; 8 splits, unrolled,
# 1.7 us for 7.1 us less: measured with an nsys profile of the tail split, docs/PERF.md decision log).
MAX_TAIL_SPLITS = 8
# The bf16 kernels' rule (`tail_rule`): where K is at least TAIL_MIN_K: a shorter tile's saved time does not pay for
# the partials and the reduce launch. ab/bf16_tail_split.json (H200, against cuBLAS, 48 random shapes served by the
# 128 x 128 tile with a partial last round, tail split forced on): K = 1024 lost on all 7 rows (-3 to -8%), K = 2048
# won on all 15 (+1 to +21%), K >= 3072 on 25 of 26 (+0.5 to +24%; 3533 x 5120 x 4096, 64 tail tiles split 2 after 8
# rounds, -3%); 0.869 -> 0.916x over the 48. And where its saving, (1 - 1 / S) of one round out of rounds + 1, is at
# least TAIL_MIN_SAVING: held out (ab/bf16_tail_split_heldout.json, 40 other random shapes and the 11 suite rows the
# rule splits: 0.876 -> 0.943x) the four rows under it ran -3.6 to +0.6% (4096 x 28672 x 4096: 40 tail tiles after 54
# rounds), those over it -0.7 to +23%. TAIL_SPLIT False turns it off (read at each launch; benchmarks/ab_configs.py
# "_tail": false).
TAIL_SPLIT = True
TAIL_MIN_K = 2048
TAIL_MIN_SAVING = 0.04


def split_count(K: int, BK: int, split_k: int) -> int:
    """The splits a split-K launch runs for NUM_KSPLIT = split_k: ranges of q = cdiv(cdiv(K, BK), split_k)
    K steps (hopper_parts `split_steps`), as many as start below K: cdiv(cdiv(K, BK), q) (K steps 112, NUM_KSPLIT 3:
    3 x 38; K steps 5, NUM_KSPLIT 4: 3 x 2)."""
    k_steps = -(-K // BK)
    return -(-k_steps // -(-k_steps // split_k))


def tail_split(tiles: int, ctas: int, k_steps: int, min_k_steps: int = 1) -> tuple[int, int]:
    """(tail tiles R, splits S) of a persistent launch of `tiles` whole-K tiles on `ctas` CTAs: the R = tiles % ctas
    tiles of the last, partial round run as S K-splits each (R * S <= ctas work items, one a CTA, S * R of the
    round's CTAs busy instead of R; S <= MAX_TAIL_SPLITS), their fp32 partials summed by a reduce; (0, 1) where
    there is no partial round after a full one (tiles <= ctas or tiles % ctas == 0), where fewer than 2 splits
    fit, or where K has fewer than `min_k_steps` steps (a short tile's saved time does not pay for the partials
    and the reduce).
    S is the count whose K ranges of q = cdiv(k_steps, S) steps all start below K (`split_count`).

    DeepSeek-V3 (2112, 7168) at M = 4096, 128 x 128 tiles on 132 SMs: 544 tiles = 4 rounds + 16; R = 16, S = 8,
    so the fifth round is 128 items of 7 K steps (1/8 of a tile) instead of 16 whole tiles."""
    if tiles <= ctas or k_steps < max(min_k_steps, 2):
        return 0, 1
    tail = tiles % ctas
    if tail == 0:
        return 0, 1
    splits = min(ctas // tail, k_steps, MAX_TAIL_SPLITS)
    if splits < 2:
        return 0, 1
    return tail, split_count(k_steps, 1, splits)


def tail_rule(tiles: int, num_cus: int, K: int, BK: int, tail=None) -> tuple[int, int]:
    """(R, S) of the bf16 kernels' tail split for `tiles` unsplit tiles of K step BK on min(tiles, SMs) CTAs
    (`tail_split`): `tail` None the rule (TAIL_SPLIT, K >= TAIL_MIN_K, a saving of at least TAIL_MIN_SAVING),
    False never, True wherever `tail_split` can. (0, 1): none."""
    if tail is False or (tail is None and not TAIL_SPLIT):
        return 0, 1
    ctas = min(tiles, num_cus)
    n_tail, splits = tail_split(tiles, ctas, -(-K // BK), 1 if tail else -(-TAIL_MIN_K // BK))
    if tail is None and n_tail and (1 - 1 / splits) / (tiles // ctas + 1) < TAIL_MIN_SAVING:
        return 0, 1
    return n_tail, splits


def tail_fill(tiles: int, num_cus: int, K: int, BK: int) -> float:
    """`wave_efficiency` of `tiles` unsplit bf16 Gluon tiles counting their tail split (`tail_rule`): the last round's
    R tiles as S splits take 1 / S of a round (the partials' stores and the reduce not counted)."""
    n_tail, splits = tail_rule(tiles, num_cus, K, BK)
    if not n_tail:
        return wave_efficiency(tiles, num_cus)
    return tiles / ((tiles // num_cus + 1 / splits) * num_cus)


def wave_efficiency(tiles: int, num_cus: int) -> float:
    """The share of the SM-slots a persistent grid's waves keep busy: tiles over (waves x SMs)."""
    return tiles / (-(-tiles // num_cus) * num_cus)


def area_fill(M: int, N: int, bm: int, bn: int, num_cus: int) -> float:
    """The share of the SM-slots of a persistent grid's waves of bm x bn tiles that the (M, N) output fills: unlike
    `wave_efficiency`, a tile's rows and columns past M and N count as empty (`launch_fill` of an unsplit tile)."""
    return launch_fill({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn}, M, N, num_cus)


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


def _coop_tail_note(coop: int, width: int, width_tiles: int, K: int, num_cus: int) -> str:
    return (f"K = {K}: {coop} tiles of 128 x 256, one round and a tail of {coop % num_cus} that the tail split runs "
            f"along K, against two waves of {width_tiles} split tiles of 128 x {width}: the coop (`coop_tail`)")


def one_wave(menu, M: int, N: int, num_cus: int, fill: float = ONE_WAVE_FILL) -> tuple[dict | None, int]:
    """(tile, its tile count) of `menu` (OP_RULES' `one_wave` or `narrow_wave`) with the most tiles within one wave of
    `num_cus` SMs and at least `fill` of them, the first such on a tie; (None, 0) where none."""
    best, best_tiles = None, 0
    for c in menu:
        bm = c["BLOCK_SIZE_M"]
        if c.get("swap_ab") and M > ONE_WAVE_SWAP_MAX_M or 0 < M % bm < bm // 2:
            continue
        tiles = -(-M // bm) * -(-N // c["BLOCK_SIZE_N"])
        if fill * num_cus <= tiles <= num_cus and tiles > best_tiles:
            best, best_tiles = c, tiles
    return best, best_tiles


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


def _few_tiles_note(tile: dict, fill: float, num_cus: int) -> str:
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


def _narrow_split(narrow: dict, own: dict, M: int, N: int, K: int) -> tuple[int, float]:
    """(K splits, their fp32 partials' bytes over the weights') of `narrow_pingpong` at 64 < M <= 128."""
    rows = -(-M // narrow["BLOCK_SIZE_M"]) * narrow["BLOCK_SIZE_M"]
    split = max(1, min(narrow["NUM_KSPLIT"], -(-K // own["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS))
    return split, split * 2 * rows * N * 4 / (N * K * 2)  # fp32 partials written and read; bf16 w


@dataclasses.dataclass(frozen=True)
class _Call:
    """What `choose`'s rules see of one call: the op's rules (OP_RULES), the default table's bucket `cfg` for M and
    its large-M bucket `large`, the shape, and the target (`num_cus` SMs / CUs of `shared_mem` bytes, `amd`)."""
    rules: dict
    cfg: dict
    large: dict | None
    M: int
    N: int
    K: int
    num_cus: int
    shared_mem: int
    amd: bool


def choose(op: str, cfg: dict, large: dict | None, M: int, N: int, K: int, num_cus: int,
           shared_mem: int, amd: bool = False) -> tuple[dict, list]:
    """(config, notes) for a default-table bucket `cfg` serving (M, N, K) on `num_cus` SMs of `shared_mem` bytes
    each (`amd`: a gfx942 / gfx950 target): the first of RULES that answers (each a function of the call that
    returns (config, notes), or None to pass), else `cfg` fitted (`_fitted`). RULES, in order: `narrow_wave`,
    `narrow_n` (with `few_tiles` above M = 256), `one_wave`, the CDNA Gluon bucket's `cdna_tiles`, bf16's
    `off_sector` (K % 16 == 8: the coop oriented by which operand dispatch copies, or by its waves), a cooperative
    Gluon bucket's `gluon_waves` (coop / ping-pong / `coop_widths` / `split_widths` / `narrow_pingpong` (held back
    by `deep_rows` and `narrow_columns`) / `few_tiles` / `short_split` / the Triton tier), fp8's `decode_pingpong`, the large-M Gluon bucket's few tiles
    above M = 256,
    `wide_share` at 64 < M <= 256 (with `m128_tile`), `decode_split`, `swap_wide`, the gated GEMM's `gated_rows`. A rule that answers with `cfg`
    itself ends the search with the bucket as it is. fp8's few large-M tiles on long K: the Triton tier split
    (`large_few_split_k`). Whatever answered, bf16's `long_k_split` may split the coop instead (`_long_k_split`),
    its `long_k_coop` serve a split coop tile in a 64-row tile's place (`_long_k_coop`), its `narrow_wide` a 64 x 160
    in the 64 x 192's place (`_narrow_wide`), its `coop_swap` swap it."""
    call = _Call(OP_RULES.get(op, {}), cfg, large, M, N, K, num_cus, shared_mem, amd)
    for rule in RULES:
        hit = rule(call)
        if hit is not None:
            return _gated_one_wave(call, *_swap_rounds(call, *_coop_swap(call, *_narrow_wide(call, *_long_k_coop(
                call, *_long_k_split(call, *hit))))))
    return _gated_one_wave(call, *_swap_rounds(call, *_coop_swap(call, *_narrow_wide(call, *_long_k_coop(
        call, *_long_k_split(call, *_fitted(call)))))))


def _narrow_wide(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`narrow_wide`, over what the rules and `long_k_coop` answered: where that is still `narrow_pingpong`'s 64-row
    tile unsplit above M = NARROW_MAX_M (on a cooperative Gluon bucket, as `gluon_waves`' answer) and its tiles take
    one wave of the SMs, the ping-pong's 64 x `narrow_wide` split tile where its tiles take one wave too, fill
    SPLIT_WIDTH_FILL of the SMs' area and cover at most NARROW_WIDE_COLUMNS of the answer's columns."""
    w, narrow = c.rules.get("narrow_wide"), c.rules.get("narrow_pingpong")
    if not (w and narrow and _coop_bucket(c) and c.M > NARROW_MAX_M and _pingpong_64(tile)
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


def _gated_one_wave(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
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


def _coop_swap(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`coop_swap` (bf16, over whatever answered): at COOP_SWAP_MIN_M < M <= COOP_SWAP_MAX_M and K over
    SHORT_K_PINGPONG_MAX_K, the cooperative kernel's swap-AB tile (128 weight rows x one tile of tokens in a split
    width >= M) where its area fill (`coop_swap_fill`) is at least COOP_SWAP_FILL and COOP_SWAP_MARGIN over the
    answer's launch fill; over a 64-row Gluon ping-pong answer at least COOP_SWAP_PP_FILL and COOP_SWAP_PP_MARGIN of
    it."""
    widths = c.rules.get("coop_swap")
    if not widths or c.amd or not COOP_SWAP_MIN_M < c.M <= COOP_SWAP_MAX_M or c.K <= SHORT_K_PINGPONG_MAX_K:
        return tile, notes
    fits = [(coop_swap_fill(c.M, c.N, w, c.num_cus), -w) for w in widths if w >= c.M]
    if not fits:
        return tile, notes
    fill, w = max(fits)
    w = -w
    served = launch_fill(tile, c.M, c.N, c.num_cus)
    floor, margin = COOP_SWAP_FILL, COOP_SWAP_MARGIN
    if _pingpong_64(tile):
        floor, margin = COOP_SWAP_PP_FILL, COOP_SWAP_PP_MARGIN
    if fill < floor or fill < margin * served:
        return tile, notes
    cfg = coop_swap_config(w)
    over_pp = f" (over a 64-row ping-pong tile {margin:.0%} of its fill will do)" if margin < 1 else ""
    return cfg, notes + [f"the launch fills {served:.0%} of the SMs' area; {-(-c.N // 128)} tiles of 128 weight rows x "
                         f"{w} tokens {fill:.0%}{over_pp}: the cooperative swap-AB tile (`coop_swap`)"]


def _swap_rounds(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`swap_rounds` (bf16, over whatever answered, after `coop_swap`): at COOP_SWAP_MAX_M < M <= SWAP_ROUNDS_MAX_M and
    K over SHORT_K_PINGPONG_MAX_K, the cooperative swap-AB tile over several token tiles (128 weight rows x a width of
    the rule's) where the answer's `round_area` is over the width's SWAP_ROUNDS_MARGIN times the swap tile's; of
    several such widths the one with the most to spare over its margin. Only over an unsplit, unswapped Gluon answer."""
    widths = c.rules.get("swap_rounds")
    if not widths or c.amd or not COOP_SWAP_MAX_M < c.M <= SWAP_ROUNDS_MAX_M or c.K <= SHORT_K_PINGPONG_MAX_K:
        return tile, notes
    bm, bn = tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"]
    tiles = -(-c.M // bm) * -(-c.N // bn)
    if tile.get("backend") != "gluon" or tile.get("swap_ab") or min(tile.get("NUM_KSPLIT", 1), c.num_cus // tiles) > 1:
        return tile, notes
    served = round_area(tile, c.M, c.N, c.K, c.num_cus)
    spare, w = max((served / round_area({"BLOCK_SIZE_M": w, "BLOCK_SIZE_N": 128, "swap_ab": True}, c.M, c.N, c.K, c.num_cus)
                    / SWAP_ROUNDS_MARGIN[w], w) for w in widths)
    if spare <= 1:
        return tile, notes
    return coop_swap_config(w), notes + [
        f"{-(-c.N // 128) * -(-c.M // w)} tiles of 128 weight rows x {w} tokens take {1 / (spare * SWAP_ROUNDS_MARGIN[w]):.0%} "
        f"of the answer's rounds x tile area (under {1 / SWAP_ROUNDS_MARGIN[w]:.0%} will do at {w} tokens): the "
        "cooperative swap-AB tile (`swap_rounds`)"]


def round_area(cfg: dict, M: int, N: int, K: int, num_cus: int) -> float:
    """A persistent, unsplit launch's time in tile areas (`swap_rounds`): its rounds of tiles on the SMs (a tail split's
    last round 1 / S of one: `tail_rule`, the power-of-two, unswapped tile) x BLOCK_SIZE_M x BLOCK_SIZE_N. The
    ping-pong's two consumers take turns on one tensor core and the cooperative kernel's share one tile, so a CTA's
    time is its tiles x their area in both (a tile's own rate, a narrow or split tile's dearer wgmma, is the rule's
    margin)."""
    bm, bn = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]
    tiles = -(-M // bm) * -(-N // bn)
    tail, splits = (0, 1) if bn & (bn - 1) or cfg.get("swap_ab") else tail_rule(tiles, num_cus, K, cfg["BLOCK_SIZE_K"])
    rounds = tiles // num_cus + 1 / splits if tail else -(-tiles // num_cus)
    return rounds * bm * bn


def coop_swap_fill(M: int, N: int, tokens: int, num_cus: int) -> float:
    """The area fill (`launch_fill`) of the cooperative swap-AB tile: 128 weight rows x `tokens` (y's BLOCK_SIZE_M)."""
    return launch_fill({"BLOCK_SIZE_M": tokens, "BLOCK_SIZE_N": 128}, M, N, num_cus)


def coop_swap_config(tokens: int) -> dict:
    """`coop_swap`'s config: y's tile `tokens` x 128 weight rows, swapped on the cooperative kernel, the ring the A/B
    ran (6 stages, 5 at 192 tokens: ab/bf16_coop_swap.json)."""
    return {"BLOCK_SIZE_M": tokens, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
            "num_stages": 5 if tokens > 160 else 6, "swap_ab": True, "NUM_KSPLIT": 1, "backend": "gluon",
            "persistent": True, "tma": True}


def _long_k_split(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`long_k_split`, over what the rules answered (`tile`, `notes`): on a cooperative Gluon bucket with K % 16 == 0,
    K >= LONG_K_SPLIT_MIN_K and M > LONG_K_SPLIT_MIN_M, where the coop bucket's tiles take under one round of the SMs
    and the answer runs unsplit: `off_sector`'s coop tiles split along K to one wave (`off_sector_tile`: 128 x
    256, or 256 x 128 where it fills GLUON_WAVE_MARGIN more) where that fills GLUON_WAVE_MARGIN more of the SMs than
    the answer."""
    tiles, cfg, M, N, K, num_cus = c.rules.get("off_sector"), c.cfg, c.M, c.N, c.K, c.num_cus
    if not (c.rules.get("long_k_split") and _coop_bucket(c) and K % SECTOR_ELEMENTS == 0 and K >= LONG_K_SPLIT_MIN_K
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


def _rule_narrow_wave(c: _Call):
    """`narrow_wave`: N <= NARROW_WAVE_MAX_N above M = ONE_WAVE_MAX_M, one wave of the menu's Gluon tiles."""
    wave_menu = c.rules.get("narrow_wave")
    if wave_menu and not c.amd and c.N <= NARROW_WAVE_MAX_N and c.M > ONE_WAVE_MAX_M:
        tile, tiles = one_wave([t for t in wave_menu if _narrow_wave_fits(t, c.M, c.N, c.K)], c.M, c.N, c.num_cus,
                               NARROW_WAVE_FILL)
        if tile is not None:
            return dict(tile), [f"N = {c.N}: " + _one_wave_note(tile, tiles, c.num_cus)]
    return None


def _rule_narrow_n(c: _Call):
    """`narrow_n`: N in one tile column, the Triton tier's 64-row tile split to half the SMs; above M = 256
    `few_tiles` first where it runs unsplit or y's rows are off 16 bytes."""
    narrow_n, few_menu = c.rules.get("narrow_n"), c.rules.get("few_tiles")
    if not narrow_n or c.amd or c.N > narrow_n["BLOCK_SIZE_N"]:
        return None
    M, N, K, num_cus = c.M, c.N, c.K, c.num_cus
    if few_menu and M > ONE_WAVE_MAX_M:  # unsplit, or where y's rows are off 16 bytes (the Triton tier
        # then runs its pointer kernel: 1414 x 118 x 6483 0.07x, `few_tiles` split 2 1.12x); on one column the
        # Triton tier's split held against `few_tiles`' (1024 x 128 x 8192 1.02 / 0.97x, 384 x 128 x 14652
        # 0.89 / 0.86x: ab/bf16_few_tiles_verify.json, bf16_few_tiles_heldout.json)
        tile, fill = few_tiles(few_menu, M, N, K, num_cus)
        if tile is not None and (tile["NUM_KSPLIT"] == 1 or N % 8):
            return dict(tile), [f"N = {N}, one tile column: " + _few_tiles_note(tile, fill, num_cus)]
    tiles = -(-M // narrow_n["BLOCK_SIZE_M"])
    split = 1 if tiles >= FEW_TILES * num_cus else \
        max(1, min(num_cus // tiles, -(-K // narrow_n["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS, MAX_SPLIT))
    if tiles * split >= FEW_TILES * num_cus:
        tile, notes = fit(dict(narrow_n), M, N, K, num_cus)
        return tile, [f"N = {N}, one tile column: the Triton tier's {narrow_n['BLOCK_SIZE_M']} x "
                      f"{narrow_n['BLOCK_SIZE_N']} x {narrow_n['BLOCK_SIZE_K']}, {narrow_n['num_stages']} stages"] + notes
    return None


def _rule_one_wave(c: _Call):
    """`one_wave`: at ONE_WAVE_MIN_M <= M <= ONE_WAVE_MAX_M the menu tile nearest one wave, unless
    `narrow_pingpong`'s split is due first (64 < M <= 128 on long K)."""
    menu, narrow = c.rules.get("one_wave"), c.rules.get("narrow_pingpong")
    if not menu or c.amd or not ONE_WAVE_MIN_M <= c.M <= ONE_WAVE_MAX_M:
        return None
    # the narrow split goes first where its partials are a small share of the weights (64 < M <= 128, where
    # the Triton bucket would give way to it)
    long_k = False
    if narrow and 64 < c.M <= 128 and c.N >= NARROW_MIN_N and c.rules.get("wide_config"):
        split, share_w = _narrow_split(narrow, c.rules["wide_config"], c.M, c.N, c.K)
        long_k = split > 1 and share_w * NARROW_LONG_SHARE <= 1
    tile, tiles = (None, 0) if long_k else one_wave(menu, c.M, c.N, c.num_cus)
    if tile is not None:
        return dict(tile), [_one_wave_note(tile, tiles, c.num_cus)]
    return None


def _rule_cdna(c: _Call):
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


def _rule_gluon_waves(c: _Call):
    """`gluon_waves`: a cooperative Gluon bucket (128 x 256, 8 warps) against the ping-pong's tiles by the waves
    they fill: `coop_widths`, `split_widths`, `narrow_pingpong` (or `short_k_wave` in its place on a short K; both
    64-row tiles held back by `deep_rows`, the 64 x 192 above M = 512 by `narrow_columns`), `few_tiles`, the Triton
    tier where even those are few (the ping-pong's tile where it would not split), the ping-pong 128 x 128 (above
    M = 512 one wave of a 64-row split tile in its place where that fills more: `wide_one_wave`),
    `short_k_pingpong` in the coop's place, else the bucket."""
    rules, cfg, M, N, K, num_cus = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus
    if not (rules.get("gluon_waves") and cfg.get("backend") == "gluon" and cfg["num_warps"] == 8
            and cfg["BLOCK_SIZE_N"] == 256 and not cfg.get("swap_ab") and cfg.get("NUM_KSPLIT", 1) == 1):
        return None
    bm = cfg["BLOCK_SIZE_M"]
    coop, pp = (-(-M // bm) * -(-N // bn) for bn in (256, 128))
    pingpong = dict(cfg, BLOCK_SIZE_N=128, num_warps=4, num_stages=6)  # the bucket's tile split in N: the 128 x 128
    eff_coop, eff_pp = wave_efficiency(coop, num_cus), wave_efficiency(pp, num_cus)
    narrow = rules.get("narrow_pingpong")
    narrow_ok = narrow and (128 < M <= NARROW_MAX_M and N >= NARROW_MIN_N
                            or M > NARROW_MAX_M and K >= NARROW_MIN_K and pp >= FEW_TILES * num_cus)
    eff_narrow = 0.0
    if narrow_ok:
        nm, nn = narrow["BLOCK_SIZE_M"], narrow["BLOCK_SIZE_N"]
        n_tiles = -(-M // nm) * -(-N // nn)
        split = 1 if M > NARROW_MAX_M else \
            max(1, min(narrow["NUM_KSPLIT"], -(-K // cfg["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS))
        # the kernel keeps the splits to one wave (hopper_host.fit_split_k)
        eff_narrow = wave_efficiency(n_tiles * max(1, min(split, num_cus // n_tiles)), num_cus)

    def triton_tile():  # the Triton tier's tile, fitted
        return fit({k: v for k, v in cfg.items() if k != "backend"}, M, N, K, num_cus)

    def deep_rows_lose(width: int, tiles: int) -> bool:  # `deep_rows`: a 64 x width tile past its waves
        if not DEEP_ROWS_MIN_M < M <= DEEP_ROWS_MAX_M or tiles <= DEEP_ROWS_WAVES * num_cus:
            return False
        best_area = max(area_fill(M, N, bm, 256, num_cus), area_fill(M, N, bm, 128, num_cus))
        return K >= TAIL_MIN_K or area_fill(M, N, 64, width, num_cus) < DEEP_ROWS_MARGIN * best_area

    short_pp = rules.get("short_k_pingpong")  # no coop tile at a short K (below)
    if short_pp and not (K <= SHORT_K_PINGPONG_MAX_K and K % short_pp["BLOCK_SIZE_K"] == 0):
        short_pp = None
    coop_widths = rules.get("coop_widths")
    if coop_widths and not short_pp and bm == 128 and COOP_WIDTH_MIN_M <= M <= COOP_WIDTH_MAX_M:
        best = max(eff_coop, eff_pp, eff_narrow)
        hit = coop_width_fit(coop_widths, M, N, num_cus, COOP_WIDTH_WAVES, best, COOP_WIDTH_ONE_WAVE_FILL)
        if hit and coop_tail(coop, hit[3], K, num_cus):
            return cfg, [_coop_tail_note(coop, hit[0], hit[3], K, num_cus)]
        if hit:
            w, stages, fill, tiles = hit
            return coop_width_config(cfg, w, stages), [
                f"{coop} tiles of {bm} x 256, {pp} of {bm} x 128 and the 64 x 192's fill at best {best:.0%} of "
                f"their waves, {tiles} of {bm} x {w} {fill:.0%} of theirs: the cooperative {bm} x {w} split tile"]
    widths = rules.get("split_widths")
    if widths and SPLIT_WIDTH_MIN_M <= M <= SPLIT_WIDTH_MAX_M:
        def width_tiles(w):
            return -(-M // split_width_config(cfg, w)["BLOCK_SIZE_M"]) * -(-N // w)
        fill, w = max((wave_efficiency(width_tiles(w), num_cus), w) for w in widths)  # the wider on a tie
        best = max(eff_coop, eff_pp, eff_narrow)
        if fill >= SPLIT_WIDTH_FILL and fill > GLUON_WAVE_MARGIN * best and not deep_rows_lose(w, width_tiles(w)):
            tiles = width_tiles(w)
            # under COOP_WIDTH_MIN_M the cooperative 128-row tile in the 64-row tile's place where it fills as well
            # (`coop_widths`' last paragraph)
            hit = coop_width_fit(coop_widths, M, N, num_cus, COOP_WIDTH_WAVES, best) \
                if coop_widths and not short_pp and bm == 128 and M < COOP_WIDTH_MIN_M else None
            if hit and coop_tail(coop, hit[3], K, num_cus):
                return cfg, [_coop_tail_note(coop, hit[0], hit[3], K, num_cus)]
            if hit:
                cw, stages, cfill, ctiles = hit
                return coop_width_config(cfg, cw, stages), [
                    f"{coop} tiles of {bm} x 256, {pp} of {bm} x 128 and the 64 x 192's fill at best {best:.0%} of "
                    f"their waves, {tiles} of 64 x {w} {fill:.0%}, {ctiles} of {bm} x {cw} {cfill:.0%}: the "
                    f"cooperative {bm} x {cw} split tile"]
            return split_width_config(cfg, w), [
                f"{coop} tiles of {bm} x 256, {pp} of {bm} x 128 and the 64 x 192's fill at best {best:.0%} of "
                f"their waves, {tiles} of 64 x {w} {fill:.0%}: the ping-pong's 64 x {w} split tile"]
    # `deep_rows` for the 64 x 192: on K's rows off 32-byte sectors; on rows on them only for the 128 x 128 (where the
    # coop would serve instead, the 64 x 192 held: 5 of 7 held-out rows -4 to -22% on the coop)
    pp_after = eff_pp > GLUON_WAVE_MARGIN * eff_coop
    narrow_columns = not (narrow_ok and M > NARROW_MAX_M and n_tiles > DEEP_ROWS_WAVES * num_cus
                          and N < NARROW_COLUMN_FILL * -(-N // nn) * nn)  # `narrow_columns`
    if narrow_ok and narrow_columns and eff_narrow > GLUON_WAVE_MARGIN * max(eff_coop, eff_pp) and \
            not ((K % SECTOR_ELEMENTS or pp_after) and deep_rows_lose(nn, n_tiles)):
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
        chosen = dict(cfg, **dict(narrow, NUM_KSPLIT=split))
        narrow_area = launch_fill(chosen, M, N, num_cus)
        # (the 128 x 128's rows and columns past M and N count as empty, as in `launch_fill`)
        pp_area = tail_fill(pp, num_cus, K, cfg["BLOCK_SIZE_K"]) * M * N / (pp * bm * 128)
        if pp_area >= NARROW_TAIL_MARGIN * narrow_area:  # `narrow_tail`
            return pingpong, [
                f"{n_tiles} tiles of {nm} x {nn} (K split up to {split}) fill {narrow_area:.0%} of their waves' "
                f"area, {pp} of {bm} x 128 {pp_area:.0%} counting their tail split: the ping-pong (`narrow_tail`)"]
        return chosen, [
            f"{coop} tiles of {bm} x 256 fill {eff_coop:.0%} of their waves, {pp} of {bm} x 128 "
            f"{eff_pp:.0%}, {n_tiles} of {nm} x {nn} (K split up to {split}) {eff_narrow:.0%}: the ping-pong's "
            f"{nm} x {nn}"]
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
                                _few_tiles_note(tile, fill, num_cus)]
    if pp < FEW_TILES * num_cus:  # (few_tiles fills too few SMs): the Triton tier's split and smaller tiles
        tile, notes = triton_tile()
        if few_menu and M > FEW_TILES_MIN_M and tile.get("NUM_KSPLIT", 1) == 1:
            # K too short for the Triton tier to split: the same few tiles run faster on the Gluon ping-pong
            # (252 x 512 x 384: the Triton 64 x 64 0.76x, the ping-pong's 0.89x; ab/bf16_short_k_few.json), on rows
            # off 32-byte sectors too since dispatch leaves such small calls' x where it is (`pitch`'s
            # PITCH_MIN_LOADS: 208 x 1040 x 440 0.76 -> 0.89x, 243 x 448 x 408 0.71 -> 0.90x,
            # ab/bf16_few_tiles_off_sector.json; with the copy's launch they had lost 15%)
            gluon, fill = few_tiles(few_menu, M, N, K, num_cus, 0.0)
            return dict(gluon), [f"{pp} tiles of {bm} x 128 for {num_cus} SMs, the Triton tier unsplit at K = {K}: "
                                 + _few_tiles_note(gluon, fill, num_cus)]
        short = short_split_tile(M, N, K, num_cus) if few_menu and M > FEW_TILES_MIN_M and N > SHORT_SPLIT_MIN_N \
            else None
        if short is not None and tile.get("NUM_KSPLIT", 1) > 1:
            how = (f"K split {short['NUM_KSPLIT']} ways in ranges of {FEW_TILES_SHORT_SPLIT_K} or more"
                   if short["NUM_KSPLIT"] > 1 else f"unsplit (K under two ranges of {FEW_TILES_SHORT_SPLIT_K})")
            return short, [f"{pp} tiles of {bm} x 128 for {num_cus} SMs, the Triton tier split "
                           f"{tile['NUM_KSPLIT']} ways: the ping-pong's 64 x 64, {how} (`short_split`)"]
        return tile, [f"{pp} tiles of {bm} x 128 for {num_cus} SMs: the Triton tier"] + notes
    # `tail_waves`: the same choice by fills that count each tile's tail split (not in `deep_rows`' test above: with
    # it, 3 of 6 rows of 64 x 192 split 4 lost 8-10% to the 128 x 128)
    bk = cfg["BLOCK_SIZE_K"]
    tail_coop, tail_pp = tail_fill(coop, num_cus, K, bk), tail_fill(pp, num_cus, K, bk)
    flipped = (not pp_after and tail_pp > GLUON_WAVE_MARGIN * tail_coop
               or pp_after and K >= COOP_TAIL_MIN_K and tail_coop >= TAIL_WAVES_COOP_MARGIN * tail_pp)
    pp_after ^= flipped
    fills = f"{coop} tiles of {bm} x 256 fill {eff_coop:.0%} of their waves, {pp} of {bm} x 128 {eff_pp:.0%}"
    if flipped:
        fills = (f"{coop} tiles of {bm} x 256 fill {tail_coop:.0%} of their waves, {pp} of {bm} x 128 {tail_pp:.0%} "
                 f"counting their tail splits (`tail_waves`)")
    if pp == coop or pp_after:  # pp == coop: N <= 128, half the coop tile empty
        wide = wide_one_wave(rules.get("wide_one_wave"), M, N, num_cus, area_fill(M, N, bm, 128, num_cus))
        if wide:
            w, fill, tiles = wide
            return split_width_config(cfg, w), [
                f"{fills}; {pp} tiles of {bm} x 128 fill {area_fill(M, N, bm, 128, num_cus):.0%} of the SMs' area, "
                f"{tiles} of 64 x {w} {fill:.0%} in one wave: the ping-pong's 64 x {w} split tile (`wide_one_wave`)"]
        return pingpong, [f"{fills}: the ping-pong"]
    if short_pp:
        return dict(short_pp), [f"K = {K}: the ping-pong's {short_pp['BLOCK_SIZE_M']} x {short_pp['BLOCK_SIZE_N']}, "
                                "not the coop (`short_k_pingpong`)"]
    if flipped:
        return cfg, [f"{fills}: the coop"]
    return cfg, []


def _coop_bucket(c: _Call) -> bool:
    """Whether the call's bucket is a cooperative Gluon one on an NVIDIA target (num_warps 8, 128 x 256, unswapped,
    unsplit) and the rules name `off_sector`'s tiles: what `off_sector`, `long_k_split` and `long_k_coop` replace."""
    cfg = c.cfg
    return bool(c.rules.get("off_sector") and not c.amd and cfg.get("backend") == "gluon" and cfg["num_warps"] == 8
                and cfg["BLOCK_SIZE_N"] == 256 and not cfg.get("swap_ab") and cfg.get("NUM_KSPLIT", 1) == 1)


def _pingpong_64(tile: dict) -> bool:
    """Whether a rule's answer is one of the Gluon ping-pong's 64-row tiles (not swap-AB): a w box loaded for 64 rows
    a consumer (`long_k_coop`, `coop_swap`)."""
    return tile.get("backend") == "gluon" and tile["BLOCK_SIZE_M"] == 64 and not tile.get("swap_ab")


def _rule_off_sector(c: _Call):
    """`off_sector`: on a cooperative Gluon bucket (as `gluon_waves`'s), K % 16 == 8 and OFF_SECTOR_MIN_M <= M <=
    OFF_SECTOR_MAX_M, N >= OFF_SECTOR_MIN_N: the coop oriented against the operand whose rows stay off sectors,
    unless the other orientation fills GLUON_WAVE_MARGIN more of its waves; K split to one wave where its tiles are
    fewer than the SMs (`off_sector_tile`)."""
    if not (_coop_bucket(c) and c.K % SECTOR_ELEMENTS == 8
            and OFF_SECTOR_MIN_M <= c.M <= OFF_SECTOR_MAX_M and c.N >= OFF_SECTOR_MIN_N):
        return None
    return off_sector_choice(c)


def off_sector_choice(c: _Call, rule: str = "off_sector", min_steps: int | None = None) -> tuple[dict, list]:
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


def _long_k_coop(c: _Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`long_k_coop`, over what the rules answered (`tile`, `notes`): on a cooperative Gluon bucket at
    K >= LONG_K_COOP_MIN_K and LONG_K_COOP_MIN_M < M <= OFF_SECTOR_MAX_M, where the answer is the Gluon ping-pong's
    64-row tile, a cooperative tile split along K to one wave: on rows off 32-byte sectors (K % 16 == 8)
    `off_sector`'s (`off_sector_choice`) where its launch fill is at least LONG_K_COOP_OFF_SHARE of the answer's; on
    rows on them the first of `off_sector`'s two tiles and the `coop_widths` tiles (`off_sector_tile`) that fills the
    most, where that is GLUON_WAVE_MARGIN over the answer's. Other K (K % 8 != 0, where dispatch's pad_k copies both
    operands to aligned rows) unmeasured: left alone."""
    sector = c.K % SECTOR_ELEMENTS
    if not (c.rules.get("long_k_coop") and _coop_bucket(c) and sector in (0, 8) and c.K >= LONG_K_COOP_MIN_K
            and LONG_K_COOP_MIN_M < c.M <= OFF_SECTOR_MAX_M and _pingpong_64(tile)):
        return tile, notes
    served = launch_fill(tile, c.M, c.N, c.num_cus)
    if sector == 8:
        chosen, why = off_sector_choice(c, "long_k_coop", LONG_K_COOP_MIN_STEPS)
        fill = launch_fill(chosen, c.M, c.N, c.num_cus)
        if fill < LONG_K_COOP_OFF_SHARE * served:
            return tile, notes
    else:
        menu = list(c.rules["off_sector"]) + [{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": w, "num_stages": st}
                                              for w, st in c.rules.get("coop_widths", ())]
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


def _rule_decode_pingpong(c: _Call):
    """`decode_pingpong` (fp8): at DECODE_PINGPONG_MIN_M <= M <= 64 (block scale from `decode_pingpong_from` rows,
    below DECODE_PINGPONG_MIN_M only up to one round of its consumers, or at M >= DECODE_PINGPONG_WIDE_MIN_M on
    DECODE_PINGPONG_WIDE_SMS tiles an SM: `decode_pingpong_wide`) the large-M bucket's Gluon ping-pong on 64 x 64
    where its tiles are not few."""
    low = c.rules.get("decode_pingpong_from", DECODE_PINGPONG_MIN_M)
    if not (c.rules.get("decode_pingpong") and not c.amd and low <= c.M <= 64
            and c.cfg.get("backend") != "gluon" and c.large is not None and c.large.get("backend") == "gluon"):
        return None
    pm, pn = SMALL_PINGPONG["BLOCK_SIZE_M"], SMALL_PINGPONG["BLOCK_SIZE_N"]
    pp = -(-c.M // pm) * -(-c.N // pn)
    if pp < FEW_TILES * c.num_cus:
        return None
    if c.M < DECODE_PINGPONG_MIN_M:
        lo, hi = DECODE_PINGPONG_WIDE_SMS
        if c.rules.get("decode_pingpong_wide") and c.M >= DECODE_PINGPONG_WIDE_MIN_M and \
                lo * c.num_cus <= pp <= hi * c.num_cus:
            return dict(c.large, **SMALL_PINGPONG), [
                f"M = {c.M}: {pp} tiles of the Gluon ping-pong's {pm} x {pn}, {lo}-{hi} an SM "
                "(`decode_pingpong_wide`)"]
        if pp > PINGPONG_ROUND * c.num_cus:
            return None
        return dict(c.large, **SMALL_PINGPONG), [
            f"M = {c.M}: {pp} tiles of the Gluon ping-pong's {pm} x {pn}, one round of its "
            f"{PINGPONG_ROUND * c.num_cus} consumers"]
    return dict(c.large, **SMALL_PINGPONG), [f"M = {c.M}: {pp} tiles of the Gluon ping-pong's {pm} x {pn}"]


def _rule_large_few_tiles(c: _Call):
    """Above M = SMALL_PINGPONG_MAX_M (fp8 / block scale, whose Gluon kernel does not split K): where the large-M
    bucket's tiles are under FEW_TILES of the SMs, the ping-pong on 64 x 64 while its tiles take one round of its
    consumers (`few_tiles` for bf16; ab/fp8_few_tiles.json, blockscale_few_tiles.json: 10 shapes each 0.93-1.08 ->
    1.10-1.61x; at 69 tiles and more it lost, 300 x 2880 x 2880 0.97 -> 0.90x). fp8 per-token (`large_few_split_k`):
    where K >= that and M <= LARGE_FEW_SPLIT_MAX_M, the Triton tier's tile of the bucket (128 x 128, 4 stages), K split
    to one wave by `fit`. Fitted on ab/fp8_large_few_split.json and fp8_large_few_split_2.json (H200, against
    torch._scaled_mm, 48 random rows at M = 257-2048 and the 4 suite rows the first form changed): K >= 8192 and
    M <= 1536 +4-86% on 34 of 35 rows (300 x 1360 x 11136 -4%); below K = 8192 mixed (the suite's DeepSeek q_a / kv_a
    at M = 512 / 1024, K = 7168: -8 to -22%; 923 x 832 x 7248 +54%), at M >= 2015 -6 to -13%. Held out
    (fp8_large_few_split_heldout.json, 20 random rows): 1.460 -> 2.063x, one down (443 x 976 x 9152 -9%)."""
    large = c.large
    if not (c.rules.get("wide_share") and c.rules.get("wide_config") is None and large is not None
            and large.get("backend") == "gluon" and not c.amd and c.cfg == large and c.M > SMALL_PINGPONG_MAX_M):
        return None
    bm, bn = large["BLOCK_SIZE_M"], large["BLOCK_SIZE_N"]
    n_tiles = -(-c.M // bm) * -(-c.N // bn)
    pm, pn = SMALL_PINGPONG["BLOCK_SIZE_M"], SMALL_PINGPONG["BLOCK_SIZE_N"]
    pp = -(-c.M // pm) * -(-c.N // pn)
    if n_tiles < FEW_TILES * c.num_cus and pp <= PINGPONG_ROUND * c.num_cus:
        split_k = c.rules.get("large_few_split_k")
        if split_k and c.K >= split_k and c.M <= LARGE_FEW_SPLIT_MAX_M:  # long K: the Triton tier's tile, split
            tile, notes = fit(dict({k: v for k, v in large.items() if k != "backend"}, num_stages=LARGE_FEW_STAGES,
                                   tma=True, persistent=True), c.M, c.N, c.K, c.num_cus)
            if tile.get("NUM_KSPLIT", 1) > 1:
                return tile, [f"{n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn} for {c.num_cus} SMs (under "
                              f"{FEW_TILES:.0%}), K = {c.K}: the Triton tier's {bm} x {bn}, K split"] + notes
        return dict(large, **SMALL_PINGPONG), [
            f"{n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn} for {c.num_cus} SMs (under {FEW_TILES:.0%}), "
            f"{pp} of {pm} x {pn}: the Gluon ping-pong"]
    return None


def _rule_wide_share(c: _Call):
    """`wide_share`: 64 < M <= 128, a Triton bucket gives way to a Gluon kernel (bf16's `wide_config` and its
    `coop_widths` / `narrow_pingpong` / `m128_tile`; fp8's large-M bucket); 128 < M <= 256 (no `wide_config`): the
    large-M Gluon bucket itself, where its tiles are few, to the ping-pong on 64 x 64, and where even those are few
    (`m256_split`) to the Triton tier's tile split along K."""
    rules, cfg, large, M, N, K, num_cus = c.rules, c.cfg, c.large, c.M, c.N, c.K, c.num_cus
    share, own = rules.get("wide_share"), rules.get("wide_config")
    wide = own or (large if large is not None and large.get("backend") == "gluon" else None)
    small_triton = cfg.get("backend") != "gluon" and 64 < M <= 128
    small_gluon = own is None and large is not None and cfg == large and 128 < M <= SMALL_PINGPONG_MAX_M
    if not (share and wide is not None and not c.amd and (small_triton or small_gluon)):
        return None
    narrow = rules.get("narrow_pingpong")
    bm, bn = wide["BLOCK_SIZE_M"], wide["BLOCK_SIZE_N"]
    n_tiles = -(-M // bm) * -(-N // bn)
    coop_widths = rules.get("coop_widths")
    if coop_widths and own and small_triton and bm == 128:  # one row of 128-row tiles (`coop_widths`)
        best = wave_efficiency(n_tiles, num_cus)
        hit = coop_width_fit(coop_widths, M, N, num_cus, COOP_ROW_WAVES, best)
        if hit:
            w, stages, fill, tiles = hit
            return coop_width_config(dict(own, num_warps=8), w, stages), [
                f"{n_tiles} tiles of the Gluon ping-pong's {bm} x {bn} fill {best:.0%} of their waves, {tiles} of "
                f"{bm} x {w} {fill:.0%} of theirs: the cooperative {bm} x {w} split tile"]
    if n_tiles >= share * num_cus:
        if small_gluon:
            return cfg, []
        return (dict(own), [f"wide N: {n_tiles} tiles of the Gluon ping-pong's {bm} x {bn} fill "
                            f"{n_tiles / num_cus:.1f} waves"]) if own else \
            (large, [f"wide N: {n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn} fill "
                     f"{n_tiles / num_cus:.1f} waves"])
    if own and narrow and small_triton and N >= NARROW_MIN_N:
        split, share_w = _narrow_split(narrow, own, M, N, K)
        if split > 1 and share_w * NARROW_PARTIAL_SHARE <= 1:
            return dict(own, **dict(narrow, NUM_KSPLIT=split)), [
                f"{n_tiles} tiles of the Gluon ping-pong's {bm} x {bn} (under {share:.0%} of {num_cus} SMs), "
                f"K = {K}: the ping-pong's {narrow['BLOCK_SIZE_M']} x {narrow['BLOCK_SIZE_N']}, K split up to "
                f"{split} (its partials {share_w:.0%} of w's bytes)"]
    m128 = rules.get("m128_tile")
    if own and m128 and small_triton and fit(cfg, M, N, K, num_cus)[0].get("NUM_KSPLIT", 1) == 1:
        # where the Triton tier would run its bucket's tile unsplit (`m128_tile`)
        if n_tiles >= FEW_TILES * num_cus:
            return dict(own), [f"{n_tiles} tiles of the Gluon ping-pong's {bm} x {bn} for {num_cus} SMs (half "
                               f"or more): the ping-pong's {bm} x {bn}"]
        small = rules.get("m128_small")
        if small and -(-M // small["BLOCK_SIZE_M"]) * -(-N // small["BLOCK_SIZE_N"]) < FEW_TILES * num_cus:
            m128 = small  # few even as 64 x 64 tiles: twice the CTAs of 64 x 128 (`m128_small`)
        return dict(m128), [f"{n_tiles} tiles of the Gluon ping-pong's {bm} x {bn} (under half of {num_cus} "
                            f"SMs): the ping-pong's {m128['BLOCK_SIZE_M']} x {m128['BLOCK_SIZE_N']}, "
                            f"{m128['num_stages']} stages, unsplit"]
    pm, pn = SMALL_PINGPONG["BLOCK_SIZE_M"], SMALL_PINGPONG["BLOCK_SIZE_N"]
    pp = -(-M // pm) * -(-N // pn)
    if not own and FEW_TILES * num_cus <= pp <= PINGPONG_ROUND * num_cus:
        return dict(large, **SMALL_PINGPONG), [
            f"{n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn} for {num_cus} SMs (under "
            f"{share:.0%}), {pp} of {pm} x {pn}: the Gluon ping-pong"]
    if not own and pp > PINGPONG_ROUND * num_cus:  # a second round of ping-pong tiles: the coop, one round
        return (cfg, []) if small_gluon else (large, [
            f"{n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn}; {pp} of {pm} x {pn} would take a "
            "second round on the ping-pong's consumers"])
    split = rules.get("m256_split")
    if small_gluon and split:  # few even as 64 x 64 tiles (`m256_split`)
        few = f"{n_tiles} tiles of the large-M bucket's Gluon {bm} x {bn} for {num_cus} SMs, {pp} of {pm} x {pn}"
        if pp < M256_SPLIT_SHARE * num_cus:
            tile, notes = fit(dict(split), M, N, K, num_cus)
            if tile.get("NUM_KSPLIT", 1) > 1:
                return tile, [few + f" (under {M256_SPLIT_SHARE:.0%}): the Triton tier's {split['BLOCK_SIZE_M']} x "
                                    f"{split['BLOCK_SIZE_N']}, K split"] + notes
        # (from that share, or K too short to split: the ping-pong, which ran ahead of the coop on every row)
        return dict(large, **SMALL_PINGPONG), [few + f" (under {FEW_TILES:.0%}): the Gluon ping-pong"]
    if small_gluon:
        return cfg, []
    return None


def _rule_swap_wide(c: _Call):
    """`swap_wide`: at M < ONE_WAVE_MIN_M a Gluon swap-AB bucket on wider weight rows where that brings its tiles
    into one round of the SMs."""
    swap_n, cfg = c.rules.get("swap_wide"), c.cfg
    if not (swap_n and not c.amd and c.M < ONE_WAVE_MIN_M and cfg.get("backend") == "gluon" and cfg.get("swap_ab")
            and cfg["BLOCK_SIZE_N"] < swap_n):
        return None
    rows = -(-c.M // cfg["BLOCK_SIZE_M"])
    narrow_tiles, wide_tiles = rows * -(-c.N // cfg["BLOCK_SIZE_N"]), rows * -(-c.N // swap_n)
    if wide_tiles <= c.num_cus < narrow_tiles:
        return dict(cfg, BLOCK_SIZE_N=swap_n), [
            f"M = {c.M}: {narrow_tiles} swap-AB tiles of {cfg['BLOCK_SIZE_N']} weight rows take two rounds of "
            f"{c.num_cus} SMs, {wide_tiles} of {swap_n} one: the wide swap-AB tile"]
    return None


def _rule_decode_split(c: _Call):
    """`decode_split`: at M < ONE_WAVE_MIN_M a Gluon swap-AB bucket whose tiles are few (under FEW_TILES of the SMs)
    gives way to the Triton tier's tile of as many token rows, 64 weight rows wide, K split to one wave (`fit`), where
    K is long enough to split."""
    tile, cfg = c.rules.get("decode_split"), c.cfg
    if not (tile and not c.amd and c.M < ONE_WAVE_MIN_M and cfg.get("backend") == "gluon" and cfg.get("swap_ab")):
        return None
    tiles = -(-c.M // cfg["BLOCK_SIZE_M"]) * -(-c.N // cfg["BLOCK_SIZE_N"])
    if tiles >= FEW_TILES * c.num_cus:
        return None
    fitted, notes = fit(dict(tile, BLOCK_SIZE_M=cfg["BLOCK_SIZE_M"]), c.M, c.N, c.K, c.num_cus)
    if fitted.get("NUM_KSPLIT", 1) < DECODE_SPLIT_MIN or \
            c.K < (DECODE_SPLIT_WIDE_MIN_K if cfg["BLOCK_SIZE_M"] >= 64 else DECODE_SPLIT_MIN_K):
        return None
    return fitted, [f"M = {c.M}: {tiles} swap-AB tiles of {cfg['BLOCK_SIZE_N']} weight rows for {c.num_cus} SMs: "
                    f"the Triton tier's {fitted['BLOCK_SIZE_M']} x {fitted['BLOCK_SIZE_N']} x "
                    f"{fitted['BLOCK_SIZE_K']}, K split"] + notes


def _rule_gated_rows(c: _Call):
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


RULES = (_rule_narrow_wave, _rule_narrow_n, _rule_one_wave, _rule_cdna, _rule_off_sector, _rule_gluon_waves,
         _rule_decode_pingpong,
         _rule_large_few_tiles, _rule_wide_share, _rule_decode_split, _rule_swap_wide, _rule_gated_rows)


def _fitted(c: _Call):
    """No rule answered: the bucket `fit`ted (split toward `ctas_per_sm` where the op has one), then fp8's
    `unsplit_stages` deeper ring at M <= 16 and its `decode_wide` tile where it keeps more CTAs in flight."""
    rules, cfg, M, N, K, num_cus, shared_mem = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus, c.shared_mem
    resident = None
    if "operand_bytes" in rules:  # CTAs an SM holds at once: its shared memory over one CTA's operand ring
        ring = cfg["num_stages"] * (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"] * rules["operand_bytes"]
        resident = max(1, shared_mem // ring)
    tile, notes = fit(cfg, M, N, K, num_cus, ctas_per_sm=rules.get("ctas_per_sm"), resident=resident)
    deep = rules.get("unsplit_stages")
    if deep and not c.amd and M <= UNSPLIT_MAX_M and K >= UNSPLIT_MIN_K and tile.get("backend") != "gluon" \
            and tile.get("NUM_KSPLIT", 1) == 1 and tile["num_stages"] < deep:
        tiles = -(-M // tile["BLOCK_SIZE_M"]) * -(-N // tile["BLOCK_SIZE_N"])
        fill = {}
        for stages in (tile["num_stages"], deep):
            ring = stages * (tile["BLOCK_SIZE_M"] + tile["BLOCK_SIZE_N"]) * tile["BLOCK_SIZE_K"] * rules["operand_bytes"]
            fill[stages] = wave_efficiency(tiles, max(1, shared_mem // ring) * num_cus)
        if fill[deep] > GLUON_WAVE_MARGIN * fill[tile["num_stages"]]:
            notes = notes + [f"K unsplit: {tiles} tiles fill {fill[deep]:.0%} of the CTAs the SMs hold at {deep} "
                             f"stages, {fill[tile['num_stages']]:.0%} at {tile['num_stages']}: a {deep}-stage ring"]
            tile = dict(tile, num_stages=deep)
    wide_n = rules.get("decode_wide")
    if wide_n and not c.amd and M <= DECODE_WIDE_MAX_M and tile.get("backend") != "gluon" \
            and cfg["BLOCK_SIZE_N"] < wide_n:
        wide = dict(cfg, BLOCK_SIZE_N=wide_n)
        if rules.get("decode_wide_k"):  # beyond one wave of the slots, the longer K step's ring where it fills them
            deep = dict(wide, BLOCK_SIZE_K=rules["decode_wide_k"], NUM_KSPLIT=1)
            ring = deep["num_stages"] * (deep["BLOCK_SIZE_M"] + wide_n) * deep["BLOCK_SIZE_K"] * rules["operand_bytes"]
            slots = max(1, shared_mem // ring) * num_cus
            tiles = -(-M // deep["BLOCK_SIZE_M"]) * -(-N // wide_n)
            if tiles > slots and wave_efficiency(tiles, slots) >= DECODE_WIDE_K_FILL and K >= DECODE_WIDE_K_MIN_K:
                return deep, notes + [
                    f"M = {M}: {tiles} tiles of {deep['BLOCK_SIZE_M']} x {wide_n} x {deep['BLOCK_SIZE_K']} fill "
                    f"{wave_efficiency(tiles, slots):.0%} of their waves of {slots}: the wide decode tile, long K step"]
        ring = wide["num_stages"] * (wide["BLOCK_SIZE_M"] + wide_n) * wide["BLOCK_SIZE_K"] * rules["operand_bytes"]
        wide, wide_notes = fit(wide, M, N, K, num_cus, ctas_per_sm=rules.get("ctas_per_sm"),
                               resident=max(1, shared_mem // ring))
        slots = max(1, shared_mem // ring) * num_cus
        ctas = [-(-M // t["BLOCK_SIZE_M"]) * -(-N // t["BLOCK_SIZE_N"]) * t.get("NUM_KSPLIT", 1) for t in (tile, wide)]
        fill = wave_efficiency(ctas[1], slots)
        if wide["BLOCK_SIZE_N"] == wide_n and (ctas[1] > ctas[0] if ctas[1] <= slots else fill >= DECODE_WIDE_FILL):
            return wide, wide_notes + [
                f"M = {M}: {ctas[1]} CTAs of {wide['BLOCK_SIZE_M']} x {wide_n} (" +
                (f"{ctas[0]} of {tile['BLOCK_SIZE_M']} x {tile['BLOCK_SIZE_N']}" if ctas[1] <= slots else
                 f"{fill:.0%} of their waves of {slots}") + "): the wide decode tile"]
    return tile, notes


def _narrow_wave_fits(tile: dict, M: int, N: int, K: int) -> bool:
    """`narrow_wave`: whether a menu tile may serve (M, N, K): N a multiple of its width, or a partial last column
    where whole columns of w would be at most 1 / NARROW_WAVE_PAD_SHARE of x's bytes (the bound measured with
    ops/dispatch.py's `pad_n` copy; kept since, so the rule serves the shapes it was measured on): under one width
    `pad_n` copies w to a whole column (the same rule; tests/ops/test_dispatch.py checks they agree), past one the
    Gluon kernels shift the last column back to end at N (kernels/gluon/hopper_parts.py `tile_origin`); the 64 x 64
    tile only up to NARROW_WAVE_SQUARE_MAX_K; N % 8 == 0
    (y's rows in 16-byte multiples, as the Gluon kernels need for a 16-bit y; other N run the pointer kernel, which
    the rule was not measured on). A column tile reaching past N costs the TMA kernels about twice the time of a
    whole one (4096 x 160 x 4096 on 64 x 128 tiles: 31.5 us against 13.9 at N = 256, same tile count): on w as
    given such a shape keeps the model's other rules."""
    bn = tile["BLOCK_SIZE_N"]
    if N % 8 or tile["BLOCK_SIZE_M"] * bn == MIN_TILE * MIN_TILE and K > NARROW_WAVE_SQUARE_MAX_K:
        return False
    return N % bn == 0 or -(-N // bn) * bn * NARROW_WAVE_PAD_SHARE <= M


def _one_wave_note(tile: dict, tiles: int, num_cus: int) -> str:
    kind = "the swap-AB ping-pong's" if tile.get("swap_ab") else "the ping-pong's"
    return (f"one wave: {tiles} tiles of {kind} {tile['BLOCK_SIZE_M']} x {tile['BLOCK_SIZE_N']} for {num_cus} SMs, "
            f"{tile['num_stages']} stages, no split")


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
        notes.append(f"{before} tiles for {num_cus} SMs{'' if ctas_per_sm is None else f' ({ctas_per_sm} CTAs an SM)'}: "
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
