"""Which of the config model's rules each op runs, and the tiles they serve (`OP_RULES`); which ops the model fits
(`FITTED_OPS`). A rule reads its op's entry (`Call.rules`) and passes where its key is missing: an op that names a
rule runs it, an op that does not is untouched by it. Where each key's rule lives and what it was fitted on:

    key                            module          key                           module
    ctas_per_sm, cdna_tiles        fitting         gluon_waves, narrow_pingpong, gluon_waves
    operand_bytes (ring sizes)     decode            wide_config, short_k_wave, coop_widths_area,
    unsplit_stages, decode_wide,   decode            short_k_pingpong, short_k_rounds, narrow_wide,
                                                     tail_waves_off_line
      decode_wide_k, decode_split,                 few_tiles                     few_tiles
      decode_pingpong(_from, _wide), swap_wide     split_widths, coop_widths,    widths
    wide_share, m256_split,        large_bucket      wide_one_wave
      large_few_split_k, m128_tile, m128_small     off_sector, long_k_split,     sectors
    one_wave, narrow_wave,         one_wave          long_k_coop
      narrow_n                                     coop_swap, swap_rounds,       swap
                                                     swap_rounds_wide_n, tall_swap
    one_round_buckets,             tables          gated_rows, gated_one_wave    gated
      fill_over_tables                             coop_one_wave                 widths

A rule is turned off by setting its key to None here (the rule then passes; `configs.rule_off` does it and restores
it): how an A/B's "before" side is written, and what benchmarks/model_audit.py --rules does to weigh each rule
against the A/Bs on disk. A rule that reads another's key passes with it: `long_k_split` and `long_k_coop` take
`off_sector`'s tiles, `narrow_wide` `narrow_pingpong`'s tile; without `wide_config`, `wide_share` and
`large_few_tiles` serve as for fp8.
"""
from __future__ import annotations

from .base import PINGPONG_64X64, PINGPONG_64X128, PINGPONG_64X192
from .gated import GATED_64X128, GATED_COOP_128X128

# The table ops whose default buckets the model fits: their Triton kernels take any power-of-two tile and split-K
# (block-scale: the fitting keeps BLOCK_SIZE_K, the scale block, and only halves tiles, so a tile still covers
# whole or half scale blocks; the gated GEMM: N is the intermediate size I, h's columns, and its split partials are
# reduced before the activation, kernels/triton/gated.py). On gfx942 / gfx950 the same `fit` runs, unmeasured (no AMD
# GPU here): its few-tile split was measured on the H200 only.
FITTED_OPS = ("a16w16", "a8w8", "a8w8_int8", "a8w8_blockscale", "a16w16_gated")

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
                 "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon", "swap_ab": True,
                 "NUM_KSPLIT": 1},
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
                # `m128_tile` / `m128_small` (large_bucket.py): the ping-pong at 64 < M <= 128 where the Triton
                # tier would run its bucket unsplit; 64 x 64 where even those tiles are few
                "m128_tile": PINGPONG_64X128,
                "m128_small": PINGPONG_64X64,
                "narrow_n": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                             "num_warps": 4, "num_stages": 4, "tma": True, "persistent": False, "NUM_KSPLIT": 1},
                # `short_k_pingpong` (gluon_waves.py): the ping-pong's 64 x 128 in the coop's place at K <= 448
                "short_k_pingpong": PINGPONG_64X128,
                # `short_k_rounds` (gluon_waves.py): the same tile in the 128 x 128's or the coop's place at K <= 1024
                # where their rounds x area is 1.2-1.25x its own
                "short_k_rounds": PINGPONG_64X128,
                # `off_sector`: rows off 32-byte sectors (K % 16 == 8), the coop's two orientations, 4 stages
                "off_sector": ({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 4, "num_stages": 4},
                               {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "GROUP_SIZE_M": 8, "num_stages": 4}),
                # `long_k_split`: `off_sector`'s two tiles split along K (128 x 256 first) on rows on sectors
                "long_k_split": True,
                # `long_k_coop`: a split coop tile in a 64-row ping-pong tile's place at a long K
                "long_k_coop": True,
                # `tail_waves_off_line` (gluon_waves.py): `tail_waves` keeps the coop at long K off 128-byte lines
                "tail_waves_off_line": True,
                "split_widths": (160, 144),
                "wide_one_wave": (192, 160, 144),
                "narrow_wide": 160,
                "coop_swap": (144, 160, 192), "swap_rounds": (80, 96, 160, 192),
                # `swap_rounds_wide_n` (swap.py): `swap_rounds` takes no 80- or 96-token tile over the coop's answer
                # past 14 weight tiles' columns
                "swap_rounds_wide_n": True,
                # `swap_rounds_wide_pp` (swap.py): 160 tokens for its 80- / 96-token pick over the ping-pong's 128 x 128
                # past SWAP_ROUNDS_WIDE_PP_N columns
                "swap_rounds_wide_pp": True,
                # `tall_swap` (swap.py): the token widths of the cooperative swap-AB tile on 256 weight rows
                "tall_swap": (96, 144, 160),
                "coop_widths": ((192, 5), (160, 6), (144, 6)),  # (BLOCK_SIZE_N, num_stages)
                # `coop_widths_area` (gluon_waves.py): `coop_widths` weighs the other tiles' fills by area, as its own
                "coop_widths_area": True,
                # `coop_one_wave`: one wave of `coop_widths`' tiles over a 64-row ping-pong answer
                "coop_one_wave": True,
                "narrow_pingpong": {
                "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_warps": 4, "num_stages": 6, "NUM_KSPLIT": 4},
                "wide_config": {
                "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                "num_stages": 6, "tma": True, "persistent": True, "backend": "gluon"}}}
