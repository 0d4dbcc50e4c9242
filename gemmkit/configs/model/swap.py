"""bf16's cooperative swap-AB tile (128 weight rows x a tile of tokens) over any rule's answer: one token tile where
128-row tiles leave a second row mostly empty (`coop_swap`, 128 < M <= 192), several where its rounds cost less
(`swap_rounds`, 192 < M <= 1536; to 8192 at N <= 768); on 256 weight rows over the 64 x 192, a narrow swap or the
128 x 128 at a long K (`tall_swap`, 256 < M <= 640).
"""
from __future__ import annotations

from .base import Call, launch_fill, pingpong_64
from .gluon_waves import SHORT_K_PINGPONG_MAX_K, long_k_off_line
from .tail import round_area

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   coop_swap    bf16, over any rule's answer (`coop_swap`): at COOP_SWAP_MIN_M < M <= COOP_SWAP_MAX_M and K >
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
#   swap_rounds  bf16, over any rule's answer (`swap_rounds`, after `coop_swap`): at COOP_SWAP_MAX_M < M <=
#                SWAP_ROUNDS_MAX_M and K > SHORT_K_PINGPONG_MAX_K, the same swap-AB tile over several token tiles
#                (128 weight rows x a width of these, y's BLOCK_SIZE_M) where its rounds cost the width's margin
#                (SWAP_ROUNDS_MARGIN) less than the answer's (`round_area`: rounds of the SMs x tile area; an
#                unsplit, unswapped Gluon answer without a tail split only). cuBLAS sizes its token tile so the tiles
#                fill the SMs (nvjet 256 x 136 at M = 269, docs/PERF.md "What cuBLAS runs"): 301 x 8448 x 9296 on
#                132 tiles of 128 x 160 instead of 220 of 64 x 192, 0.62 -> 0.87x. Its measurements at
#                SWAP_ROUNDS_MARGIN below.
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
# At a long K off 128-byte lines (`long_k_off_line`, with `tail_waves_off_line`) no width under
# SWAP_ROUNDS_WIDE_WIDTH: H100, heated, one process (results/h100/ab/bf16_tail_waves_off_line_heldout.json and
# _verify.json, 23 such picks against the unswapped answer): 80 tokens lost all 11 (-25 to -41%), 96 mixed over 7
# (-28 to +3%, six within 4%), 160 / 192 won 4 of 5 (+5 to +24%; one tie). Then 96 on 31 random rows where it was the
# pick (_swap_rounds_off_line_96.json): 0.698 -> 0.844x cuBLAS without it, 25 up (to +58%), 6 down (to -13%; four
# of them narrow N past M = 1536, where 4 of its 8 rows went up): so 160 and 192 only.
# Past SWAP_ROUNDS_MAX_M only at N <= SWAP_ROUNDS_NARROW_N (six weight tiles of 128 at most: a few columns of tiles, so
# the token tiling alone sets the rounds), up to SWAP_ROUNDS_NARROW_MAX_M. H100, heated, one process, the rule's own
# margins: results/h100/ab/bf16_swap_rounds_large_m_fit.json (40 random shapes at M = 1537-8192 where the rule without
# its M cap answers; every width timed): at N <= 768 0.787 -> 0.912x cuBLAS, 29 of 33 picks up (+3 to +101%: 5185 x
# 480 x 10192 0.50 -> 1.01x), 4 down 1-4%; at N >= 1088 0.994x over the answer (4 of 7 down, to -11%). Held out
# (_heldout.json, 30 shapes of another seed): at N <= 768 0.813 -> 0.928x, all 23 up (+3 to +40%); at N >= 1376 5 of 7
# up, 4776 x 1376 x 680 -19%. The rule as it stands, on a third seed (25 rows) and 7 rows of older seeds it changes
# (_narrow_verify.json): 0.785 -> 0.924x cuBLAS, all 32 up (+2 to +45%); on the H200 the 26 of them it changes there
# (results/h200/ab/bf16_swap_rounds_narrow_verify_h200.json) 0.759 -> 0.881x, all up (+4 to +32%).
SWAP_ROUNDS_MAX_M = 1536
# Measured there over the ping-pong's 128 x 128 (44 rows, -4 to +35%), the coop 128 x 256 (42, -1 to +45%) and the
# ping-pong's 64 x 192 (2, +88 / +101%) only, so only over those: the coop's split widths (3416 x 672 x 2560's
# 128 x 192, 0.71 -> 0.90x) and `short_k_rounds`' 64 x 128 (5957 x 384 x 512, +24%) won their own A/Bs there.
SWAP_ROUNDS_NARROW_N, SWAP_ROUNDS_NARROW_MAX_M = 768, 8192
SWAP_ROUNDS_NARROW_OVER = ((128, 128), (128, 256), (64, 192))
# SWAP_ROUNDS_WIDE_WIDTH: the narrowest of the wide token widths (160 / 192); the narrow ones under it (80 / 96) are
# what two rules set aside: at a long K off lines (above) and over the coop past many columns (`swap_rounds_wide_n`).
SWAP_ROUNDS_WIDE_WIDTH = 160
SWAP_ROUNDS_MARGIN = {80: 1.2, 96: 1.2, 160: 1.1, 192: 1.1}
# `swap_rounds_wide_n`: over the cooperative kernel's answer (the coop 256 x 128 / 128 x 256 or a split width, 8 warps)
# at N > SWAP_ROUNDS_WIDE_N, no 80- or 96-token width (160 / 192 still). The narrow token tile loads 1.4-1.6x the bytes
# a FLOP of the 192-token one, the coop's 256-row tile the fewest (a reading, not profiled). Heated, one process,
# 2026-12-06 (ab/bf16_swap_rounds_narrow_picks*.json: random shapes at M = 257-1536 where the tree served an 80- /
# 96-token tile, three seeds; every row timed served, without `swap_rounds`, and at 160 / 192 tokens; results/h100/ab/
# and h200/ab/). Over a coop answer (N = 1824-31528 here) that answer ran 0.99-1.60x the narrow pick on the H100 (68
# rows, 67 ahead by 6% or more), 0.97-1.32x on the H200 (49 rows). Over the ping-pong's 128 x 128 the narrow picks held:
# the answer 0.87-1.14x theirs on the H200 (21 rows, ahead on 3), 0.88-1.21x on the H100 (30 rows; ahead by 9-21% on the
# 6 at N >= 17504, M ~ 390, where nothing is changed). The rule: H100 108 rows 0.712 -> 0.898x cuBLAS (68 changed, all
# up), H200 72 rows 0.760 -> 0.884x (49 changed, 48 up). Held out (_wide_n_heldout.json: 40 shapes of a fourth seed,
# sampled for a first form of the rule that cut at N alone, run on the H200): 0.747 -> 0.861x, 34 changed, 31 up (3 down
# 4-8%); the 6 over a 128 x 128 it keeps would have lost 3-10%. At N <= 768 past M = 1536 the narrow picks over the coop
# 128 x 256 won (above), hence the floor on N; between 768 and 1792 nothing was measured over a coop. Where `tall_swap`
# goes over the narrow pick (256 < M <= 640, K >= 8192) the pick stays: that tile was measured over it.
SWAP_ROUNDS_WIDE_N = 1792
# `swap_rounds_wide_pp`: where `swap_rounds` picks an 80- or 96-token width over the ping-pong's 128 x 128 past
# SWAP_ROUNDS_WIDE_PP_N columns, 160 tokens instead, whatever its margin (at M ~ 260-290 two 160-token tiles fill
# 320 rows, the margin's area test says no, the time says yes). H100, heated, one process, 2026-12-07
# (results/h100/ab/bf16_swap_rounds_narrow_over_pp_wide_n.json: rule_shapes.within_shapes M 257-1536, N 12000-32768,
# K 512-16384; 20 shapes each card served so, all timed on the H100): the 20 the H100 serves so, 160 over the pick
# +15.7% (+1 to +38%, none down; 0.787 -> 0.910x cuBLAS), 192 +9.8%; the 20 the H200 serves so +9.8% (two -0.8%),
# 192 +3.5%. The margin-bound wide pick (the coop form above) gained only +2.9% there: 9 of 20 fell back to the
# 128 x 128, which lost 2-6% to the narrow pick. In sample for the bound (smallest N timed 12816). Held out on the
# H100 (results/h100/ab/bf16_swap_rounds_wide_pp_heldout_h100.json, 30 fresh shapes as the H100 serves them,
# 2026-12-07): 0.758 -> 0.825x cuBLAS (+8.9%), 25 up (to +40%), 5 down (-2% to -15%: 336 x 12096 x 1744 0.68 ->
# 0.59x, 551 x 13832 x 1152 0.91 -> 0.78x; short K). The H200's held-out half waits for an H200.
SWAP_ROUNDS_WIDE_PP_N = 12000


def coop_swap(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
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
    if pingpong_64(tile):
        floor, margin = COOP_SWAP_PP_FILL, COOP_SWAP_PP_MARGIN
    if fill < floor or fill < margin * served:
        return tile, notes
    cfg = coop_swap_config(w)
    over_pp = f" (over a 64-row ping-pong tile {margin:.0%} of its fill will do)" if margin < 1 else ""
    return cfg, notes + [f"the launch fills {served:.0%} of the SMs' area; {-(-c.N // 128)} tiles of 128 weight rows x "
                         f"{w} tokens {fill:.0%}{over_pp}: the cooperative swap-AB tile (`coop_swap`)"]


def swap_rounds(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`swap_rounds` (bf16, over whatever answered, after `coop_swap`): at COOP_SWAP_MAX_M < M <= SWAP_ROUNDS_MAX_M
    (SWAP_ROUNDS_NARROW_MAX_M at N <= SWAP_ROUNDS_NARROW_N) and K over SHORT_K_PINGPONG_MAX_K, the cooperative
    swap-AB tile over several token tiles (128 weight rows x a width of the rule's; past SWAP_ROUNDS_MAX_M only over
    SWAP_ROUNDS_NARROW_OVER's tiles) where the answer's `round_area` is over the width's SWAP_ROUNDS_MARGIN times the
    swap tile's; of several such widths the one with the most to spare over its margin; over the cooperative kernel's
    answer past SWAP_ROUNDS_WIDE_N columns no 80 / 96-token width unless `tall_swap` goes over it
    (`swap_rounds_wide_n`). Only over an unsplit, unswapped Gluon answer."""
    widths = c.rules.get("swap_rounds")
    max_m = SWAP_ROUNDS_NARROW_MAX_M if c.N <= SWAP_ROUNDS_NARROW_N else SWAP_ROUNDS_MAX_M
    if not widths or c.amd or not COOP_SWAP_MAX_M < c.M <= max_m or c.K <= SHORT_K_PINGPONG_MAX_K:
        return tile, notes
    if long_k_off_line(c):
        widths = [w for w in widths if w >= SWAP_ROUNDS_WIDE_WIDTH]
    if not widths:
        return tile, notes
    bm, bn = tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"]
    tiles = -(-c.M // bm) * -(-c.N // bn)
    if tile.get("backend") != "gluon" or tile.get("swap_ab") or min(tile.get("NUM_KSPLIT", 1), c.num_cus // tiles) > 1:
        return tile, notes
    if c.M > SWAP_ROUNDS_MAX_M and (bm, bn) not in SWAP_ROUNDS_NARROW_OVER:
        return tile, notes
    served = round_area(tile, c.M, c.N, c.K, c.num_cus)

    def most_spare(widths):
        return max(((served / round_area({"BLOCK_SIZE_M": w, "BLOCK_SIZE_N": 128, "swap_ab": True}, c.M, c.N, c.K,
                                         c.num_cus) / SWAP_ROUNDS_MARGIN[w], w) for w in widths), default=(0, 0))

    spare, w = most_spare(widths)
    wide_n, spare_ok = "", False
    # `swap_rounds_wide_n`: no narrow width over the coop past SWAP_ROUNDS_WIDE_N columns, unless `tall_swap` (later)
    # goes over it
    if spare > 1 and w < SWAP_ROUNDS_WIDE_WIDTH and narrow_widths_dear(c, tile) and \
            tall_swap(c, coop_swap_config(w), [])[0]["BLOCK_SIZE_N"] != TALL_SWAP_ROWS:
        spare, w = most_spare([v for v in widths if v >= SWAP_ROUNDS_WIDE_WIDTH])
        wide_n = f" (no 80 / 96 tokens over the coop past {SWAP_ROUNDS_WIDE_N} columns: `swap_rounds_wide_n`)"
    elif spare > 1 and w < SWAP_ROUNDS_WIDE_WIDTH and narrow_over_pingpong_dear(c, tile) and \
            tall_swap(c, coop_swap_config(w), [])[0]["BLOCK_SIZE_N"] != TALL_SWAP_ROWS:
        spare, w = most_spare([SWAP_ROUNDS_WIDE_WIDTH])
        wide_n = (f"; {w} tokens, not 80 / 96, over the ping-pong's 128 x 128 past {SWAP_ROUNDS_WIDE_PP_N} columns "
                  "whatever the margin (`swap_rounds_wide_pp`)")
        spare_ok = True
    if spare <= 1 and not spare_ok:
        return tile, notes
    return coop_swap_config(w), notes + [
        f"{-(-c.N // 128) * -(-c.M // w)} tiles of 128 weight rows x {w} tokens take "
        f"{1 / (spare * SWAP_ROUNDS_MARGIN[w]):.0%} "
        f"of the answer's rounds x tile area (under {1 / SWAP_ROUNDS_MARGIN[w]:.0%} will do at {w} tokens){wide_n}: "
        "the cooperative swap-AB tile (`swap_rounds`)"]


def narrow_widths_dear(c: Call, tile: dict) -> bool:
    """`swap_rounds_wide_n` (the op's rule key): at N over SWAP_ROUNDS_WIDE_N over the cooperative kernel's answer
    (8 warps), where `swap_rounds` takes no 80- or 96-token tile."""
    return bool(c.rules.get("swap_rounds_wide_n")) and c.N > SWAP_ROUNDS_WIDE_N and tile.get("num_warps") == 8


def narrow_over_pingpong_dear(c: Call, tile: dict) -> bool:
    """`swap_rounds_wide_pp` (the op's rule key): at N over SWAP_ROUNDS_WIDE_PP_N over the ping-pong's 128 x 128
    answer (4 warps), where `swap_rounds` takes 160 tokens for an 80- or 96-token pick."""
    return bool(c.rules.get("swap_rounds_wide_pp")) and c.N > SWAP_ROUNDS_WIDE_PP_N and tile.get("num_warps") == 4 \
        and (tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"]) == (128, 128)


def coop_swap_fill(M: int, N: int, tokens: int, num_cus: int) -> float:
    """The area fill (`launch_fill`) of the cooperative swap-AB tile: 128 weight rows x `tokens` (y's BLOCK_SIZE_M)."""
    return launch_fill({"BLOCK_SIZE_M": tokens, "BLOCK_SIZE_N": 128}, M, N, num_cus)


def coop_swap_config(tokens: int) -> dict:
    """`coop_swap`'s config: y's tile `tokens` x 128 weight rows, swapped on the cooperative kernel, the ring the A/B
    ran (6 stages, 5 at 192 tokens: ab/bf16_coop_swap.json)."""
    return {"BLOCK_SIZE_M": tokens, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
            "num_stages": 5 if tokens > 160 else 6, "swap_ab": True, "NUM_KSPLIT": 1, "backend": "gluon",
            "persistent": True, "tma": True}


# `tall_swap` (after every rule but the gated one): at TALL_SWAP_MIN_M < M <= TALL_SWAP_MAX_M and K >= TALL_SWAP_MIN_K,
# over the ping-pong's 64 x 192 (`narrow_pingpong`) or `swap_rounds`' 80 / 96 tokens on 128 weight rows, where the
# answer takes more than TALL_SWAP_WAVES waves: the cooperative swap-AB tile on 256 weight rows (128 a consumer:
# kernels/gluon/hopper_coop.py SWAP_TALL_ACC_REGS) x the token width of the rule's that fills the most of its waves'
# area, where that is at least TALL_SWAP_FILL. Its w box serves 256 weight rows a stage where the answers' serve 64 or
# 128, and its token widths split such M in two to four tiles (282 rows: two of 144). H100, heated, one process
# (results/h100/ab/bf16_deep_long_k_menu.json: 45 shapes at M = 259-636, K = 8960-24448; the answer, 128 x 128, the
# coop 128 x 256, 128 x 160 / 192 swaps and the tall widths 96 / 144 / 160 timed each): over all 45 the tall tiles
# lost (0.668-0.735x cuBLAS against the answers' 0.900x: a 16- or 32-token piece's wgmma is dear, and few tiles leave
# SMs idle); over these answers past the waves at the fill, all 6 picks up (+9% to +33%: 525 x 7920 x 17088 0.69 ->
# 0.88x, 276 x 21792 x 11072 0.68 -> 0.90x); below the fill a tie (284 x 17952, 0.79), under the waves -42%.
TALL_SWAP_MIN_M, TALL_SWAP_MAX_M, TALL_SWAP_MIN_K = 256, 640, 8192
TALL_SWAP_ROWS = 256  # the tile's weight rows (y's BLOCK_SIZE_N): two consumers of 128
TALL_SWAP_WAVES, TALL_SWAP_FILL = 1.5, 0.8
# ... and over the 64 x 192 at least this share of its launch fill. Held out with the rule above
# (ab/bf16_tall_swap_heldout.json, H100, heated, one process: the 30 rows it changed of 735 random shapes of seed
# 20261242 in its M and K): 0.679 -> 0.840x cuBLAS (1.238x over the answer), 27 up (to +75%: 261 x 30096 x 25648
# 0.52 -> 0.91x); down only where the 64 x 192 filled 0.97-0.99 against 0.85-0.86 (381 x 29376 x 11968 -20%,
# 384 x 28720 x 12896 -8%) and at the K floor (280 x 19472 x 8320, -7%). Over the 80-token swap no margin: its four
# rows won at 0.80-0.81 against 0.96-0.98 (+22% to +52%). On the H200 (results/h200/ab/bf16_tall_swap_verify.json,
# seed 20261243's 32 rows, 2026-12-06): 0.784 -> 0.860x, 26 up (to +37%), 6 down (to -13%).
TALL_SWAP_PP_MARGIN = 0.9
TALL_SWAP_OVER = ((64, 192, False), (80, 128, True), (96, 128, True), (128, 128, False))  # (BM, BN, swap_ab)
# ... and over the 128 x 128 where the answer's rounds x tile area (`round_area`, its tail split counted) are over
# the width's margin times the tall tile's. In the menu above the tall tile at such a fill beat the 128 x 128 on all 5
# rows where its round area was under the answer's (+2 to +9%). H100, heated, one process: first stated with any
# width 3% under the answer (results/h100/ab/bf16_tall_swap_over_128.json, the 38 rows it changed of 120,000 random
# shapes, seeds 20261260-63): 0.863 -> 0.892x cuBLAS, 27 up; the 96-token tile won 7 of 15 (to -8%: its 32-token
# piece, as `swap_rounds`' narrow widths, hence their 1.2), 144 / 160 the 15 with 1.1 to spare 14 of 15 (+1.082x).
# The rule as it stands on 26 fresh rows (_over_128_verify.json, seeds 20261264-71; 0.01% of their shapes):
# 0.819 -> 0.872x (1.065x over the answer, predicted +5%), 22 up (to +29%), 4 down 0.5-5%. The same rows on the H200
# (results/h200/ab/bf16_tall_swap_over_128_verify.json, 2026-12-06): 0.855 -> 0.871x, 20 up (to +7%), 6 down <= 4%.
TALL_SWAP_128_MARGIN = {96: 1.2, 144: 1.1, 160: 1.1}


def tall_swap(c: Call, tile: dict, notes: list) -> tuple[dict, list]:
    """`tall_swap` (bf16, over whatever answered, after `swap_rounds` and `coop_one_wave`): the cooperative swap-AB tile
    on 256 weight rows x the rule's token width of the best area fill, over a TALL_SWAP_OVER answer of more than
    TALL_SWAP_WAVES waves at TALL_SWAP_MIN_M < M <= TALL_SWAP_MAX_M, K >= TALL_SWAP_MIN_K, where that fill is at least
    TALL_SWAP_FILL (and TALL_SWAP_PP_MARGIN of a 64 x 192 answer's); over the 128 x 128 the width of such a fill whose
    rounds x tile area (`round_area`) are the most under the answer's, by more than TALL_SWAP_128_MARGIN."""
    widths = c.rules.get("tall_swap")
    if not widths or c.amd or not TALL_SWAP_MIN_M < c.M <= TALL_SWAP_MAX_M or c.K < TALL_SWAP_MIN_K:
        return tile, notes
    key = (tile["BLOCK_SIZE_M"], tile["BLOCK_SIZE_N"], bool(tile.get("swap_ab")))
    if tile.get("backend") != "gluon" or key not in TALL_SWAP_OVER:
        return tile, notes
    tiles = -(-c.M // tile["BLOCK_SIZE_M"]) * -(-c.N // tile["BLOCK_SIZE_N"])
    if tiles <= TALL_SWAP_WAVES * c.num_cus:
        return tile, notes
    fills = {w: launch_fill(tall_swap_config(w), c.M, c.N, c.num_cus) for w in widths}
    fill, w = max((f, w) for w, f in fills.items())
    if fill < TALL_SWAP_FILL or (pingpong_64(tile) and fill < TALL_SWAP_PP_MARGIN * launch_fill(tile, c.M, c.N,
                                                                                               c.num_cus)):
        return tile, notes
    rows, over_128 = TALL_SWAP_ROWS, ""
    if key == (128, 128, False):  # the width of the most rounds x tile area to spare over its margin
        served = round_area(tile, c.M, c.N, c.K, c.num_cus)
        spare, w = max((served / round_area(tall_swap_config(w), c.M, c.N, c.K, c.num_cus) / TALL_SWAP_128_MARGIN[w], w)
                       for w in widths if fills[w] >= TALL_SWAP_FILL)
        if spare <= 1:
            return tile, notes
        fill, over_128 = fills[w], (f" in 1 / {spare * TALL_SWAP_128_MARGIN[w]:.2f} of the 128 x 128's rounds x tile "
                                    f"area (1 / {TALL_SWAP_128_MARGIN[w]} will do at {w} tokens)")
    tall = -(-c.N // rows) * -(-c.M // w)
    return tall_swap_config(w), notes + [
        f"{tiles} tiles of the answer past {TALL_SWAP_WAVES} waves; {tall} of {rows} weight rows x {w} tokens fill "
        f"{fill:.0%} of their waves{over_128}: the cooperative swap-AB tile on {rows} weight rows (`tall_swap`)"]


def tall_swap_config(tokens: int) -> dict:
    """`tall_swap`'s config: y's tile `tokens` x 256 weight rows, swapped on the cooperative kernel, 4 stages (what
    its A/B ran)."""
    return dict(coop_swap_config(tokens), BLOCK_SIZE_N=TALL_SWAP_ROWS, num_stages=4)
