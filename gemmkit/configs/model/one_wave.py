"""One wave of a small menu of Gluon ping-pong tiles, deep ring, no split: at 64 <= M <= 256 (`one_wave`), for narrow N
above it (`narrow_wave`, routers), and N in one tile column (`narrow_n`: the Triton tier's 64-row tile split to one
wave, or `few_tiles`).
"""
from __future__ import annotations

from .base import FEW_TILES, MAX_SPLIT, MIN_SPLIT_STEPS, MIN_TILE, Call
from .few_tiles import few_tiles, few_tiles_note
from .fitting import fit
from .gluon_waves import NARROW_LONG_SHARE, NARROW_MIN_N, narrow_split

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
#   one_wave     bf16 at ONE_WAVE_MIN_M <= M <= ONE_WAVE_MAX_M: before `off_sector` and `gluon_waves` (and the M <= 64
#                decode bucket at M = 64), the tile of this menu whose tiles come nearest one wave without passing it
#                (the most tiles <= SMs, at least ONE_WAVE_FILL of them), each a Gluon ping-pong with a deep ring and no
#                split: where a tile of 64 tokens fills one wave, the weights stream through every SM once and nothing
#                is reduced. What cuBLAS runs there (benchmarks/results/h200/vendor_kernels_m128.json: 64 tokens x
#                64-112 weight rows, 96-128 CTAs, 10-13 stages, no split-K). Only where the last 64-row box of x is at
#                least half full: the swap tile with a box loading mostly past M ran 0.65 / 0.84x at M = 80 where M =
#                112 / 128 ran 0.94-1.09x (the others not measured there). The menu, in order: the swap-AB 64 x 64
#                (weight rows in the wgmma's M; tokens 64, at M <= 128), the 64 x 96 split tile (K step 128, 5 stages)
#                and the 64 x 128 (8 stages). ab/bf16_m128_grid.json and ab/bf16_one_wave.json (H200, against cuBLAS, 30
#                rows at M = 80-256): the swap 64 x 64 where 90-128 tiles 0.94-1.09x against the served 0.80-0.99x; the
#                64 x 96 on 96-128 tiles 0.85-0.95x against 0.73-0.87x (M = 256, N = 2880: 0.87 vs 0.73x); the 64 x 128
#                on 112 tiles 0.93x against 0.76x (7168 x 2048); the same 64 x 128 tile with 6 stages 0.78-0.87x (the
#                ring's depth is most of it). Not taken where `narrow_pingpong`'s split partials are under 1 /
#                NARROW_LONG_SHARE of the weights (K >= 16384 at M = 128): 128 x 4608 x 36864 ran 0.97x split, 0.91x on
#                one wave of 64 x 96 (fewer bytes into each SM: a 64 x 192 tile's x rows are half of a 64 x 96's for the
#                same weights). At M = 64 on 10240-14336 columns (ab/bf16_one_wave_more.json) 64 x 96 / 64 x 128 ran
#                0.97-1.06x against the swap-AB decode bucket's 0.81-0.90x (M < 64 not measured: a 64-token tile there
#                loads past M).
#   narrow_wave  bf16, N <= NARROW_WAVE_MAX_N (routers: N = the experts) at M > ONE_WAVE_MAX_M, before every other rule:
#                the tile of this menu of Gluon ping-pong tiles (64 x 64, 64 x 128, 128 x 128; deep rings, no split)
#                whose tiles come nearest one wave without passing it, at least NARROW_WAVE_FILL of the SMs
#                (`one_wave`'s choice over this menu): the tokens supply the tiles, each SM streams its x rows once and
#                nothing is reduced. What cuBLAS runs there (vendor_kernels_decode.json: 4096 x 128 x 2880 on 128 CTAs
#                of 64 x 64, 13 stages, no split). Only on whole column tiles, or where ops/dispatch.py's `pad_n` copies
#                w to whole columns first (`_narrow_wave_fits`), and 64 x 64 only up to NARROW_WAVE_SQUARE_MAX_K. Fitted
#                on ab/bf16_narrow_wave.json (H200, against cuBLAS, 40 rows: ten routers, N = 8-256, M = 1024-8192; the
#                suite's GPT-OSS router and M x 256 x 16384 among them), shaped on ab/bf16_narrow_wave_heldout.json (148
#                rows of other K, odd M and N = 96 / 160 / 200, the rule's first form: N = 136-200 on a partial last
#                column ran ~2x slower in both TMA kernels, ncu: the same DRAM bytes, the w box's rows past N; 64 x 64
#                lost 12-15% at K = 16384 to the Triton split; 64 x 128 with K step 64 and 8 stages 0.853 against K step
#                128 and 4 stages' 0.838 over 55 rows), checked on ab/bf16_narrow_wave_final.json (every one of those
#                rows the final rule changes, 126: 0.782 -> 0.912x; the 111 of them outside the fitting A/B 0.778 ->
#                0.914x, three behind by 3-7%: 2600 x 128 x 7168, 6000 x 32 x 2048, 6000 x 96 x 4096). Partial last
#                columns on w's copy: ab/bf16_pad_n.json (fitted), ab/bf16_pad_n_heldout.json (46 held-out rows, N =
#                8-248: 0.651 -> 0.799x; docs/PERF.md "Operands the TMA kernels load slowly"). sm_90 only.
#   narrow_n     bf16, N within one tile column (N <= its BLOCK_SIZE_N), on the Triton tier's path (few tiles): this
#                64-row tile with a deeper ring (K step 128, 4 stages) instead of the bucket's 128 rows, split K to
#                one wave (`fit`), where its tiles and splits fill at least FEW_TILES of the SMs (the bucket's own fit
#                otherwise: at M <= 512 it shrinks to 64 rows itself and splits further with its K step of 64).
#                GPT-OSS's router (N = 128, K = 2880), ab/bf16_router.json (H200, against cuBLAS): M = 1024 / 2048 /
#                4096 split 4 / 4 / 2: 0.93 / 0.85 / 0.79x against the served 128 x 128 split 11 / 8 / 4's 0.80 /
#                0.68 / 0.62x (the same CTA counts at 2048 / 4096: the ring's depth, as at M = 128 under `one_wave`).
#                Since `narrow_wave` (which goes first) it serves only where that rule finds no tile: the router at
#                M = 1024 / 2048 (32 / 64 tiles of 64 x 64, under NARROW_WAVE_FILL), not at 4096 and above.
# `one_wave`'s M range (below ONE_WAVE_MIN_M the swap-AB decode buckets, which `swap_wide` widens); its swap-AB tile
# up to ONE_WAVE_SWAP_MAX_M
ONE_WAVE_MIN_M, ONE_WAVE_MAX_M, ONE_WAVE_SWAP_MAX_M = 64, 256, 128
ONE_WAVE_FILL = 0.6  # `one_wave`: the least share of the SMs a tile's count fills
NARROW_WAVE_MAX_N = 256  # `narrow_wave`: N at most this (a router's experts; measured N = 8-256)
NARROW_WAVE_FILL = 0.6  # `narrow_wave`: the least share of the SMs its tiles fill
NARROW_WAVE_SQUARE_MAX_K = 8192  # `narrow_wave`: the 64 x 64 tile up to this K (K = 12288 / 16384 lost to the split)
NARROW_WAVE_PAD_SHARE = 8  # `narrow_wave`: a partial last column where a copy of w is 1 / this of x (dispatch.pad_n)


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


def rule_narrow_wave(c: Call):
    """`narrow_wave`: N <= NARROW_WAVE_MAX_N above M = ONE_WAVE_MAX_M, one wave of the menu's Gluon tiles."""
    wave_menu = c.rules.get("narrow_wave")
    if wave_menu and not c.amd and c.N <= NARROW_WAVE_MAX_N and c.M > ONE_WAVE_MAX_M:
        tile, tiles = one_wave([t for t in wave_menu if _narrow_wave_fits(t, c.M, c.N, c.K)], c.M, c.N, c.num_cus,
                               NARROW_WAVE_FILL)
        if tile is not None:
            return dict(tile), [f"N = {c.N}: " + _one_wave_note(tile, tiles, c.num_cus)]
    return None


def rule_narrow_n(c: Call):
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
            return dict(tile), [f"N = {N}, one tile column: " + few_tiles_note(tile, fill, num_cus)]
    tiles = -(-M // narrow_n["BLOCK_SIZE_M"])
    split = 1 if tiles >= FEW_TILES * num_cus else \
        max(1, min(num_cus // tiles, -(-K // narrow_n["BLOCK_SIZE_K"]) // MIN_SPLIT_STEPS, MAX_SPLIT))
    if tiles * split >= FEW_TILES * num_cus:
        tile, notes = fit(dict(narrow_n), M, N, K, num_cus)
        return tile, [f"N = {N}, one tile column: the Triton tier's {narrow_n['BLOCK_SIZE_M']} x "
                      f"{narrow_n['BLOCK_SIZE_N']} x {narrow_n['BLOCK_SIZE_K']}, {narrow_n['num_stages']} stages"
                      ] + notes
    return None


def rule_one_wave(c: Call):
    """`one_wave`: at ONE_WAVE_MIN_M <= M <= ONE_WAVE_MAX_M the menu tile nearest one wave, unless
    `narrow_pingpong`'s split is due first (64 < M <= 128 on long K)."""
    menu, narrow = c.rules.get("one_wave"), c.rules.get("narrow_pingpong")
    if not menu or c.amd or not ONE_WAVE_MIN_M <= c.M <= ONE_WAVE_MAX_M:
        return None
    # the narrow split goes first where its partials are a small share of the weights (64 < M <= 128, where
    # the Triton bucket would give way to it)
    long_k = False
    if narrow and 64 < c.M <= 128 and c.N >= NARROW_MIN_N and c.rules.get("wide_config"):
        split, share_w = narrow_split(narrow, c.rules["wide_config"], c.M, c.N, c.K)
        long_k = split > 1 and share_w * NARROW_LONG_SHARE <= 1
    tile, tiles = (None, 0) if long_k else one_wave(menu, c.M, c.N, c.num_cus)
    if tile is not None:
        return dict(tile), [_one_wave_note(tile, tiles, c.num_cus)]
    return None


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
