"""The config model (gemmkit/configs/model/): a default-table bucket fitted to the shape it serves. The fitted
configs the rule gives on the shapes it was measured on (docs/PERF.md, "The config model"), what it leaves alone,
that every fitted config is a valid config that fits the target, and that a call runs the fitted config."""
import re

import pytest
import torch
from _util import check_a16w16, poisoned, randn

import gemmkit
from gemmkit import arch, configs, launcher
from gemmkit.configs import model
from gemmkit.kernels.triton import dense as G
from gemmkit.kernels.triton import gated as TG

H200 = arch.get("sm_90")


def tile(cfg):
    return cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg.get("NUM_KSPLIT", 1), cfg["num_warps"]


@pytest.mark.parametrize("M, N, K, want", [
    (128, 128, 2880, (64, 64, 5, 4)),  # GPT-OSS router: K too short to split enough, so smaller tiles too
    (256, 128, 2880, (64, 64, 11, 4)),
    # N in one tile column (`narrow_n`, ab/bf16_router_rule.json): 64-row tiles, K step 128, split to one wave
    (1024, 128, 2880, (64, 128, 5, 4)),  # 1.01x against 128 x 128 split 11's 0.81x
    # above M = 256, where 128 x 128 tiles are few, `few_tiles` (ab/bf16_few_tiles.json): the ping-pong's 64 x 128 or
    # 64 x 64, split to one wave in ranges of FEW_TILES_SPLIT_K at least
    (2048, 128, 2880, (64, 64, 1, 4)),  # 64 tiles of 64 x 64, 48% of the SMs: 0.91x, the Triton tier's split 0.85x
    (1024, 1000, 7168, (64, 128, 1, 4)),  # 128 tiles (1000 x 1000 x 4000: 0.99x, the Triton split 0.50x)
    (1024, 256, 16384, (64, 128, 4, 4)),  # 32 tiles split 4
    (384, 384, 4096, (64, 64, 2, 4)),  # 64 x 128 would fill 27%, 64 x 64 split 2 55%
    (512, 128, 2880, (64, 128, 11, 4)),  # 64 x 64 fills 12% of the SMs: the Triton tier's split (0.96x)
    (1024, 128, 8192, (64, 128, 8, 4)),  # one tile column: the Triton tier's split held (1.02x, `few_tiles`' 0.97x)
    (1414, 118, 6483, (64, 64, 2, 4)),  # ... but not where N % 8 != 0 (its pointer kernel 0.07x, `few_tiles` 1.12x)
])
def test_fitted_configs_on_the_measured_shapes(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert tile(cfg) == want
    assert "A16W16.json" in source and ", fitted: " in source and (f"{H200.num_cus} SMs" in source or N <= 128)


@pytest.mark.parametrize("M, N, K, want", [
    # `narrow_wave` (ab/bf16_narrow_wave*.json, H200, against cuBLAS): one wave of Gluon ping-pong tiles, unsplit
    (4096, 128, 2880, (64, 64, 1, 4)),  # GPT-OSS router: 0.79 -> 0.85x (the narrow_n split 2 before)
    (8192, 128, 2880, (64, 128, 1, 4)),  # 0.94 -> 0.96x
    (4096, 256, 16384, (64, 128, 1, 4)),  # 0.88 -> 0.90x
    (8192, 256, 7168, (128, 128, 1, 4)),  # DeepSeek-V3's router (held out): 0.74 -> 0.93x
    (1900, 256, 2880, (64, 64, 1, 4)),  # 120 tiles (held out): 0.63 -> 0.94x
    (8192, 8, 4096, (64, 64, 1, 4)),  # Mixtral's router (held out): 0.65 -> 0.78x, N past 8 in the tile
    (16384, 96, 4096, (128, 128, 1, 4)),  # N = 96 in one 128-wide column (held out): 0.73 -> 0.92x
    # a last column past N, on w copied to whole columns (dispatch.pad_n; ab/bf16_pad_n.json)
    (4096, 160, 4096, (64, 128, 1, 4)),  # 0.87 -> 0.91x (0.57x on w as given)
    (2048, 200, 3072, (64, 64, 1, 4)),  # 0.48 -> 0.86x
])
def test_narrow_wave_serves_one_wave_of_pingpong_tiles(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert tile(cfg) == want and cfg["backend"] == "gluon" and "one wave" in source, source
    assert model.launch_fill(cfg, M, N, H200.num_cus) <= 1.0


@pytest.mark.parametrize("M, N, K, why", [
    (1024, 160, 4096, "a last column past N and w's copy over 1/8 of x's bytes (dispatch.pad_n would not pad)"),
    (6000, 60, 2048, "N % 8: y's rows are not TMA's (the pointer kernel)"),
    (4096, 128, 16384, "64 x 64 at K > NARROW_WAVE_SQUARE_MAX_K (1.00 -> 0.85x measured)"),
    (2048, 128, 2880, "64 tiles: under NARROW_WAVE_FILL of the SMs"),
    (256, 128, 2880, "M within `one_wave`'s range"),
    (4096, 512, 4096, "N past NARROW_WAVE_MAX_N"),
])
def test_narrow_wave_leaves(M, N, K, why):
    _, source = configs.serve("a16w16", H200, M, N, K)
    assert f"N = {N}: one wave" not in source, why


def test_narrow_wave_is_sm90_only():
    _, source = configs.serve("a16w16", arch.get("gfx942"), 4096, 128, 2880)
    assert "one wave" not in source, source


@pytest.mark.parametrize("M, N, K, want", [
    # (at M = 8-16 these shapes take the Gluon ping-pong: test_blockscale_decode_pingpong_from_8_rows)
    (4, 8192, 8192, (16, 64, 2, 4)),  # 128 tiles: a second CTA per SM hides the scale product's latency
    (4, 7168, 18432, (16, 128, 5, 4)),  # 56 wide tiles split 5 (`decode_wide`: 280 CTAs against 224 of 16 x 64)
    (4, 12288, 28672, (16, 64, 2, 4)),  # 192 tiles: round(264 / 192) is 1, but a count under the goal splits 2 ways
    (64, 4096, 4096, (64, 64, 4, 4)),  # 64 tiles: few for the ping-pong (`decode_pingpong`), the Triton tile split
    (128, 576, 7168, (64, 128, 14, 4)),  # 10 tiles: split as far as K's 56 steps allow (4 a split)
])
def test_blockscale_aims_for_two_ctas_an_sm(M, N, K, want):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert tile(cfg) == want and "(2 CTAs an SM)" in source, source


@pytest.mark.parametrize("M, N, K, want", [
    # ab/fp8_decode_wide.json (H200, against torch._scaled_mm): the wide decode tile where it keeps more in flight
    (1, 4608, 36864, (16, 128, 3, 4)),  # 108 CTAs against 72 of 16 x 64 unsplit: 1.61 -> 2.41x
    (16, 5120, 8192, (16, 128, 3, 4)),  # 120 against 80: 1.48 -> 1.76x
    (1, 28672, 8192, (16, 128, 1, 4)),  # the TP shard: 224 tiles, 85% of two waves (ab/fp8_decode_tp_shard.json +21%)
    (7, 57344, 8192, (16, 128, 1, 4)),  # 448 tiles, 85% of four waves
    # ... and the 16 x 64 bucket where it does not
    (1, 7168, 2048, (16, 64, 1, 4)),  # 112 CTAs either way (split 2 wide: 1.30 -> 1.20x)
    (16, 36864, 7168, (16, 64, 1, 4)),  # 288 wide tiles fill 73% of three waves (1.51 -> 1.39x)
    (16, 18432, 16384, (16, 64, 1, 4)),  # 144: 55% of two waves
    (1, 576, 7168, (16, 64, 7, 4)),  # 5 wide tiles: the fitting narrows it back
])
def test_fp8_decode_widens_the_tile_where_more_ctas_stay_in_flight(M, N, K, want):
    cfg, source = configs.serve("a8w8", H200, M, N, K)
    assert tile(cfg) == want, source
    assert ("the wide decode tile" in source) == (want[1] == 128), source
    assert configs.validate_config(dict(cfg)) == cfg
    ring = cfg["num_stages"] * (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"]
    assert ring <= H200.shared_mem_bytes


@pytest.mark.parametrize("M, N, K, want", [
    # ab/blockscale_decode_wide.json (H200, against cuBLASLt's block-scaled GEMM): the wide tile split two CTAs an SM
    # (measured at M = 16, which the Gluon ping-pong now serves on these shapes; the rule stays below M = 8)
    (4, 7168, 18432, (16, 128, 5, 4)),  # 280 CTAs against 224 of 16 x 64 split 2: 0.95 -> 1.08x
    (4, 5120, 25600, (16, 128, 7, 4)),  # 280 against 240 of 16 x 64 split 3: 0.95 -> 1.05x
    (1, 28672, 4096, (16, 128, 1, 4)),  # 224 wide tiles: BK 128 left them (+3%, 57344 -11%), BK 256 serves them
    (4, 8192, 8192, (16, 64, 2, 4)),  # the two-CTA split as before (test_blockscale_aims_for_two_ctas_an_sm)
])
def test_blockscale_decode_widens_where_more_ctas_stay_in_flight(M, N, K, want):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert tile(cfg) == want, source
    assert ("the wide decode tile" in source) == (want[1] == 128), source
    assert cfg["BLOCK_SIZE_K"] == (256 if "long K step" in source else 128)  # the scale block, or two


@pytest.mark.parametrize("M, N, K, deep", [
    # ab/blockscale_decode_ptcfg.json (H200, against cuBLASLt's block-scaled GEMM): the per-token decode tile
    # 16 x 128 x 256 (4 stages, one ring an SM) where its tiles take more than one wave and fill >= 80% of their
    # waves: +0.6-15% on the 14 suite rows at M = 1 / 16; split or under that fill it lost 3-32% (left)
    (16, 106496, 16384, True),  # 832 tiles, 90% of 7 waves: 1.05 -> 1.20x
    (1, 57344, 8192, True),  # 448 tiles, 85%
    (16, 28672, 4096, True),  # 224 tiles, 85% of two waves
    (16, 36864, 7168, False),  # 288 tiles, 73%: -9%
    (16, 18432, 16384, False),  # 144 tiles, 55%
    (4, 5120, 25600, False),  # within one wave: the BK 128 wide tile split (test above)
])
def test_blockscale_decode_wide_takes_the_long_k_step_beyond_one_wave(M, N, K, deep):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert ("long K step" in source) == deep, source
    if deep:
        assert tile(cfg) == (16, 128, 1, 4) and cfg["BLOCK_SIZE_K"] == 256, cfg
        assert configs.validate_config(dict(cfg)) == cfg
    else:
        assert cfg["BLOCK_SIZE_K"] == 128, cfg
    assert "long K step" not in configs.serve("a8w8", H200, M, N, K)[1]  # per-token's bucket has BK 256 already


def test_decode_wide_is_only_fp8_and_only_at_m_16():
    assert "wide decode" not in configs.serve("a8w8_int8", H200, 1, 4608, 36864)[1]
    for op in ("a8w8", "a8w8_blockscale"):
        assert "wide decode" in configs.serve(op, H200, 4 if op == "a8w8_blockscale" else 16, 5120, 25600)[1]
        assert "wide decode" not in configs.serve(op, H200, 17, 5120, 25600)[1]
        assert "wide decode" not in configs.serve(op, arch.get("gfx942"), 1, 5120, 25600)[1]


@pytest.mark.parametrize("M, N, K, wide", [
    # ab/bf16_decode_waves.json (H200, against cuBLAS): 64-row swap-AB tiles past one round of the SMs, 128-row in one
    (1, 10240, 5120, True),  # 160 -> 80 tiles: 0.88 -> 0.97x
    (32, 10240, 5120, True),  # 0.88 -> 1.00x
    (16, 14336, 12288, True),  # 224 -> 112: 1.09 -> 1.13x
    (8, 8704, 3072, True),  # 136 -> 68 (held out): 1.04 -> 1.17x
    (16, 17408, 5120, False),  # 272 -> 136, a second round again: the wide tile lost 5%
    (16, 8192, 4608, False),  # 128 tiles: one round already
    (48, 10240, 5120, True),  # the M_LEQ_64 bucket's 64 x 64 (ab/bf16_decode_waves_odd_m.json): 0.77 -> 0.91x
    (56, 17408, 5120, False),  # 272 tiles: 0.87 -> 0.79x on 128 rows
    (64, 10240, 5120, False),  # M = 64: `one_wave`'s menu
])
def test_bf16_decode_swap_tile_widens_into_one_round(M, N, K, wide):
    bucket = configs.select("a16w16", "sm_90", M, N, K)[0]
    assert M >= 64 or bucket["swap_ab"] and bucket["BLOCK_SIZE_N"] == 64  # the default table's decode bucket
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert ("the wide swap-AB tile" in source) == wide, source
    if wide:
        assert cfg == dict(bucket, BLOCK_SIZE_N=128)
        assert configs.validate_config(dict(cfg)) == cfg
    assert "wide swap-AB" not in configs.serve("a16w16", arch.get("gfx942"), M, N, K)[1]


@pytest.mark.parametrize("M, N, K, split", [
    # `decode_split` (ab/bf16_decode_split.json, H200, against cuBLAS): few swap-AB tiles, the Triton tier split along K
    (23, 528, 22448, 14),  # 9 tiles: 0.37 -> 0.96x
    (1, 256, 16384, 16),  # 4 tiles: 0.40 -> 0.98x
    (6, 928, 8288, 8),  # 15 tiles: 0.76 -> 1.01x
    (40, 2112, 16384, 4),  # the M_LEQ_64 bucket's 64 x 64 (33 tiles): 0.66 -> 0.97x
    (6, 2560, 23808, 3),  # 40 tiles: 0.97 -> 1.05x
    (24, 2880, 16384, 0),  # 45 tiles, split 2: 1.01 -> 0.79x, left
    (24, 1024, 2048, 0),  # K = 2048: split 4 0.98 -> 0.85x, left
    # from K = 2048 on the 64-token-row buckets (bf16_decode_split_short_k*.json)
    (43, 368, 3880, 7),  # 6 tiles: 0.58 -> 1.05x (held out)
    (52, 960, 4008, 8),  # 15 tiles: 0.58 -> 1.01x
    (22, 752, 3392, 0),  # 32-row tiles below K = 4096: 1.10 -> 1.03x, left
    (16, 8192, 8192, 0),  # 128 tiles: not few
    (64, 256, 16384, 0),  # M = 64: `one_wave`'s range
])
def test_bf16_decode_splits_few_swap_tiles_on_the_triton_tier(M, N, K, split):
    bucket = configs.select("a16w16", "sm_90", M, N, K)[0]
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert ("K split" in source and "swap-AB tiles" in source) == bool(split), source
    if split:
        assert cfg.get("backend") is None and not cfg.get("swap_ab"), cfg
        assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"], cfg["NUM_KSPLIT"]) == \
            (bucket["BLOCK_SIZE_M"], 64, 128, split)
        assert configs.validate_config(dict(cfg)) == cfg
    assert "swap-AB tiles" not in configs.serve("a16w16", arch.get("gfx942"), M, N, K)[1]


@pytest.mark.parametrize("M, N, K, want", [
    # `few_tiles` at 128 < M <= 256, where `one_wave` has no tile (ab/bf16_decode_split.json: the Triton tier's
    # 128 x 256 / 128 x 128 split before)
    (207, 1856, 1168, (64, 64, 1, 4)),  # 0.65 -> 1.00x
    (235, 1600, 4256, (64, 128, 2, 4)),  # 0.67 -> 0.83x
    (240, 1024, 7168, (64, 64, 2, 4)),  # 0.81 -> 1.05x
    (234, 256, 28160, (64, 64, 8, 4)),  # 0.72 -> 1.01x
    # the menu's 64 x 192 on long K (ab/bf16_few_tiles_wide.json): 45 tiles split 2 where 70 of 64 x 128 cannot split
    # (319 x 1696 x 23680, 0.74 -> 0.86x, is `long_k_coop`'s now: 0.86 -> 0.85x, bf16_long_k_coop_verify.json)
    (512, 1536, 16384, (64, 192, 2, 4)),
    (512, 1536, 4096, (64, 128, 1, 4)),  # K = 4096: the 64 x 192 lost 8%
])
def test_a16w16_few_tiles_from_m_128_and_wide_on_long_k(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert tile(cfg) == want and cfg["backend"] == "gluon" and "the ping-pong's" in source, source


@pytest.mark.parametrize("M, N, K, split", [
    # fp8 per-token, few large-M tiles on long K (`large_few_split_k`, ab/fp8_large_few_split.json): the Triton tier's
    # 128 x 128 split along K, not the Gluon ping-pong's 64 x 64
    (724, 1152, 16928, 2),  # 0.69 -> 1.07x
    (451, 320, 26400, 11),  # 12 tiles: 2.05 -> 3.54x
    (512, 576, 7168, 0),  # K < 8192: the suite's DeepSeek kv_a kept its ping-pong (split -16%)
    (2015, 256, 25472, 0),  # M > LARGE_FEW_SPLIT_MAX_M (split -13%)
])
def test_fp8_few_large_tiles_split_on_the_triton_tier_on_long_k(M, N, K, split):
    cfg, source = configs.serve("a8w8", H200, M, N, K)
    if split:
        assert cfg.get("backend") is None and tile(cfg) == (128, 128, split, 8) and cfg["num_stages"] == 4, source
        assert configs.validate_config(dict(cfg)) == cfg
    else:
        assert cfg.get("backend") == "gluon" and tile(cfg)[:2] == (64, 64), source
    assert configs.serve("a8w8_blockscale", H200, M, N, K)[0].get("backend") == "gluon"  # per-token only


@pytest.mark.parametrize("M, N, K, want", [
    # `short_k_wave` (ab/bf16_short_k_wave.json): one wave of unsplit 64-row ping-pong tiles where `narrow_pingpong`
    # would split a short K
    (273, 2240, 2240, (64, 128, 1, 4)),  # 0.70 -> 0.86x
    (170, 2352, 2304, (64, 64, 1, 4)),  # 111 tiles of 64 x 64: 0.77 -> 1.01x
    (358, 3584, 1664, (64, 192, 4, 4)),  # 168 tiles of 64 x 128, past one wave: the split kept (1.00x, 0.84x unsplit)
    (432, 2048, 8192, (64, 192, 4, 4)),  # K past SHORT_K_WAVE_MAX_K: `narrow_pingpong` (split up to 4)
    # `split_widths` from M = 129
    (164, 13824, 7872, (64, 160, 1, 4)),  # 0.71 -> 0.93x
])
def test_a16w16_short_k_wave_and_split_widths_from_m_129(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert tile(cfg) == want and cfg["backend"] == "gluon", source


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
@pytest.mark.parametrize("M, N, K, gluon", [
    (32, 28672, 4096, True),  # ab/fp8_decode_kernels.json: 1.00 -> 1.22x; block scale 0.89 -> 1.04x
    (64, 10240, 5120, True),  # block scale 0.87x split 2 -> 1.04x
    (64, 8192, 28672, True),
    (17, 5120, 5120, True),  # 80 tiles: not few
    (64, 4096, 4096, False),  # 64 tiles: few, the Triton tile splits K
    (32, 576, 7168, False),
    (12, 59136, 8192, False),  # M <= 16: the 16-row Triton tile (block scale's at 13-16: `decode_pingpong_wide`)
])
def test_fp8_decode_takes_the_ping_pong_where_its_tiles_are_not_few(op, M, N, K, gluon):
    cfg, source = configs.serve(op, H200, M, N, K)
    assert (cfg.get("backend") == "gluon") == gluon, source
    if gluon:
        assert tile(cfg) == (64, 64, 1, 4) and cfg["num_stages"] == model.SMALL_PINGPONG["num_stages"]
        assert "Gluon ping-pong's 64 x 64" in source
    assert configs.serve(op, arch.get("gfx942"), M, N, K)[0].get("backend") != "gluon"  # sm_90 only


def test_blockscale_split_stays_within_the_ctas_an_sm_holds():
    """160 tiles of 64 x 128 (a 98 KB operand ring: 2 CTAs an SM, 264 places): split 2 would make 320 CTAs, so no
    split; the same 160 tiles of 16 x 64 (40 KB: 5 an SM) split 2 ways."""
    bucket = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
              "num_stages": 4, "tma": True}  # the Triton bucket A8W8_BLOCKSCALE.json had at M <= 128
    cfg, notes = model.fit(bucket, 128, 10240, 8192, H200.num_cus, ctas_per_sm=2, resident=2)
    assert tile(cfg) == (64, 128, 1, 4) and not notes
    assert tile(model.fit(bucket, 128, 10240, 8192, H200.num_cus, ctas_per_sm=2, resident=3)[0]) == (64, 128, 2, 4)
    assert tile(configs.serve("a8w8_blockscale", H200, 4, 10240, 8192)[0]) == (16, 64, 2, 4)


@pytest.mark.parametrize("M, N, K, stages, split", [
    # (59136 x 8192 at M = 1 and 57344 x 12288 at 16, 924 / 896 tiles, took 6 stages here (ab/blockscale_ring_depth.json)
    # until `decode_wide_k`'s tile served them: test_blockscale_decode_wide_takes_the_long_k_step_beyond_one_wave)
    (16, 18432, 16384, 6, 1),  # 288 tiles: 73% against 44%
    (1, 36864, 7168, 4, 1),  # 576 tiles: one wave of 660 at 4 stages (the suite: 1.31x at 4, 0.87x at 6)
    (1, 51200, 5120, 4, 1),  # the waves of 57344's, but K <= 5120 lost
    (1, 106496, 16384, 4, 1),  # 1664 tiles: 84% either way
    (4, 10240, 8192, 4, 2),  # split: the bucket's ring (ab/blockscale_decode_split_ring.json: 6 stages lost)
    (4, 8192, 8192, 4, 2),
])
def test_blockscale_unsplit_decode_tiles_take_a_deeper_ring_where_it_fills_the_sms(M, N, K, stages, split):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert (cfg["num_stages"], cfg.get("NUM_KSPLIT", 1)) == (stages, split), source
    assert ("6-stage ring" in source) == (stages == 6)
    # the ring still fits the SM's shared memory
    assert stages * (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"] <= H200.shared_mem_bytes


def test_blockscale_deeper_ring_is_sm90_only():
    """The same shape on gfx942 (its table's M <= 16 bucket, unsplit): the rule leaves its ring alone."""
    bucket, _ = configs.select("a8w8_blockscale", "gfx942", 1, 59136, 8192)
    cfg, source = configs.serve("a8w8_blockscale", arch.get("gfx942"), 1, 59136, 8192)
    assert "-stage ring" not in source and cfg["num_stages"] == bucket["num_stages"], source


@pytest.mark.parametrize("M, N, K, gluon", [
    # ab/blockscale_decode_gluon_boxes.json / blockscale_decode_m_sweep.json (H200, against cuBLASLt's block-scaled
    # GEMM): at M = 8-16 the Gluon ping-pong (x in boxes of its own rows) over the 16-row Triton tile where its
    # 64 x 64 tiles are not few and take at most one round of its consumers (66-264 tiles on 132 SMs)
    (16, 8192, 8192, True),  # 128 tiles: +15%
    (8, 8192, 28672, True),  # +10%
    (12, 14336, 12288, True),  # 224 tiles: +1.4%
    (16, 4608, 36864, True),  # 72 tiles: +11%
    (7, 8192, 8192, False),  # under 8 rows: the Triton tile (M = 4: -16% to +10%)
    (16, 4096, 4096, False),  # 64 tiles: few (under FEW_TILES of the SMs)
    (16, 18432, 16384, False),  # 288 tiles: a second round (-10% at M = 8)
    (12, 57344, 8192, False),  # `decode_wide_k`'s rows stay at M = 8-12 (at 13-16: `decode_pingpong_wide`)
    (17, 8192, 8192, True),  # `decode_pingpong` from 17 as before
    # DeepSeek-V3's two 7168-column block-scale shape files hand M = 8-16 to the model (their tuned 16-row tile ran
    # 1.12-1.19x slower at 8-16 on 7168 x 2048, 1.04x at 16 on 7168 x 16384) and keep it at M <= 7
    (16, 7168, 2048, True), (8, 7168, 16384, True), (7, 7168, 2048, False),
])
def test_blockscale_decode_pingpong_from_8_rows(M, N, K, gluon):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert (cfg.get("backend") == "gluon") == gluon, source
    if gluon:
        assert tile(cfg) == (64, 64, 1, 4) and cfg["num_stages"] == 6 and "Gluon ping-pong" in source, source
        assert ("one round of its 264 consumers" in source) == (M <= 16), source
    elif N == 7168:
        assert source.endswith("A8W8_BLOCKSCALE-N=7168-K=2048.json:M_LEQ_7") and tile(cfg) == (16, 64, 2, 4)
    # per-token keeps its 16-row tiles at M <= 16 (its fit: within +-5% of the ping-pong, fp8_decode_gluon_boxes.json)
    if M <= 16:
        assert configs.serve("a8w8", H200, M, N, K)[0].get("backend") != "gluon"
    assert configs.serve("a8w8_blockscale", arch.get("gfx942"), M, N, K)[0].get("backend") != "gluon"


@pytest.mark.parametrize("M, N, K, gluon", [
    # `decode_pingpong_wide` (ab/blockscale_m13_16.json, blockscale_m13_16_heldout.json): at M = 13-16 the ping-pong
    # past one round of its consumers on 4.5-10.5 of its tiles an SM (594-1386 on 132 SMs)
    (16, 51200, 5120, True),  # Qwen3-32B gate_up, 800 tiles: 0.91 -> 1.01x
    (13, 58368, 3584, True),  # held out: 0.98 -> 1.32x
    (16, 57344, 8192, True),  # over `decode_wide_k`'s tile: +5%
    (12, 57344, 8192, False),  # M = 8-12: the Triton tile held
    (16, 34432, 10752, False),  # 538 tiles: -4% (under 4.5 an SM)
    (16, 129280, 7168, False),  # 2020 tiles: -0.9% (over 10.5 an SM)
])
def test_blockscale_decode_pingpong_wide(M, N, K, gluon):
    cfg, source = configs.serve("a8w8_blockscale", H200, M, N, K)
    assert ("`decode_pingpong_wide`" in source) == gluon and (cfg.get("backend") == "gluon") == gluon, source
    if gluon:
        assert tile(cfg) == (64, 64, 1, 4) and cfg["num_stages"] == 6, cfg
    assert configs.serve("a8w8", H200, M, N, K)[0].get("backend") != "gluon"  # per-token: its 16-row tiles


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
@pytest.mark.parametrize("M, N, K, kernel", [
    (128, 36864, 7168, "coop"),  # 288 tiles of 128 x 128: over two waves
    (128, 10240, 5120, "coop"),  # 80 tiles: 0.61 of the SMs (measured: coop 0.98x / 0.92x, ping-pong 0.80 / 0.84)
    (100, 12288, 28672, "coop"),
    (128, 8192, 8192, "ping-pong"),  # 64 coop tiles: 0.48 (measured: ping-pong 1.08x, coop 0.99x)
    (128, 5120, 17920, "ping-pong"),
    (128, 2880, 2880, "ping-pong"),  # 23 coop tiles, 90 of 64 x 64
    (128, 1536, 7168, "triton"),  # 48 tiles of 64 x 64: few, the Triton tier's split
    (64, 36864, 7168, "ping-pong"),  # M <= 64: the ping-pong where its tiles are not few (`decode_pingpong`)
    (64, 4096, 6144, "triton"),  # ... and the Triton tier's split where they are
    (256, 4096, 4096, "ping-pong"),  # 64 coop tiles, 256 of 64 x 64 (measured: ping-pong 1.15x / 1.21x, coop 0.96 / 1.00)
    (256, 2880, 2880, "ping-pong"),
    (200, 4096, 14336, "ping-pong"),
    (256, 4608, 4096, "coop"),  # 288 tiles of 64 x 64: a second round (measured: ping-pong 0.77x, coop 0.97x)
    (128, 9216, 8192, "coop"),  # 72 coop tiles, under 0.6 of the SMs, but 288 of 64 x 64: the same round cap
    (256, 5120, 5120, "coop"),
    (256, 8192, 8192, "coop"),  # 128 coop tiles: not few
    (256, 1024, 4096, "ping-pong"),  # 64 of 64 x 64, few for the ping-pong too: `m256_split`'s ping-pong (the coop
    #                                   ran 0.97x against its 1.81x at 256 x 1024 x 7168, ab/fp8_m256_few.json)
    (512, 4096, 4096, "coop"),  # M > 256: the bucket as it is
])
def test_fp8_at_m_128_takes_a_gluon_kernel_by_the_share_of_sms(op, M, N, K, kernel):
    cfg, source = configs.serve(op, H200, M, N, K)
    got = "triton" if cfg.get("backend") != "gluon" else ("coop" if cfg["num_warps"] == 8 else "ping-pong")
    assert got == kernel, source
    if kernel == "coop":
        assert cfg == configs.select(op, "sm_90", 4096, N, K)[0] and ("-> any" in source or M > 128)
    if kernel == "ping-pong":
        assert tile(cfg) == (64, 64, 1, 4) and cfg["num_stages"] == 6 and "Gluon ping-pong" in source


def test_a16w16_wide_config_is_the_ping_pong_the_coop_buckets_give_way_to():
    """bf16's wide_config is written out (A16W16.json has no Gluon large-M bucket to derive it from at the call):
    it must stay the gluon_waves rule's ping-pong of the default table's cooperative buckets."""
    coop = configs.select("a16w16", "sm_90", 256, 1000, 3000)[0]
    assert coop["backend"] == "gluon" and coop["num_warps"] == 8 and coop["BLOCK_SIZE_N"] == 256
    want = dict(coop, BLOCK_SIZE_N=128, num_warps=4, num_stages=6)  # as choose's gluon_waves branch derives it
    assert configs.validate_config(dict(model.OP_RULES["a16w16"]["wide_config"])) == want


@pytest.mark.parametrize("M, N, K, gluon", [
    (128, 10240, 5120, True),  # 80 tiles of 128 x 128 (measured: 0.75 -> 0.94x cuBLAS)
    (100, 51200, 5120, True),
    (128, 8192, 8192, False),  # 64 tiles: the Triton bucket (measured: 0.99x, the ping-pong 0.88x)
    (128, 2880, 2880, False),
    (64, 51200, 5120, False),  # M <= 64: the swap-AB decode bucket
])
def test_a16w16_at_m_128_takes_the_ping_pong_for_a_wide_n(M, N, K, gluon):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if gluon:
        wide = {"NUM_KSPLIT": 1, **model.OP_RULES["a16w16"]["wide_config"]}  # (serve names the split count)
        assert cfg == wide and "the Gluon ping-pong's 128 x 128" in source
    else:
        assert "wide N" not in source and cfg != {"NUM_KSPLIT": 1, **model.OP_RULES["a16w16"]["wide_config"]}
    for amd in ("gfx942", "gfx950"):  # measured on sm_90 only
        assert "wide N" not in configs.serve("a16w16", arch.ARCHS[amd], M, N, K)[1]


@pytest.mark.parametrize("M, N, K, kernel", [
    (512, 5120, 2880, "coop"),  # 128 of the coop's 128 x 160 fill one wave 97% (`coop_widths`); 160 of 128 x 128 61%
    # 320 tiles of 128 x 128 fill 81% of 3 waves, 160 of 128 x 256 61% of 2: 256 of the coop's 128 x 160 97%
    (1024, 5120, 2880, "coop"),
    (2048, 5120, 2880, "ping-pong"),  # 512 of 128 x 160 take four waves (`coop_widths`: lost there)
    # 104 tiles of 64 x 192 (79%) against 84 of 128 x 128 (64%), 42 of 128 x 256: ab/bf16_m512_1024_waves.json,
    # 0.85x cuBLAS against the 128 x 128 ping-pong's 0.71x
    (777, 1536, 8000, "64x192"),
    # 240 of 64 x 192 (91%) against 96 of 128 x 256 (73%): 0.97x against 0.85x; then `coop_one_wave`'s 128 x 192
    (1024, 2880, 4096, "coop"),
    (1024, 4608, 36864, "64x192"),  # 384 (97%) against 288 of 128 x 128 (73%): 0.91x against 0.76x
    (1000, 3000, 2000, "coop"),  # 64 x 192 fills 97%, but K is short (NARROW_MIN_K): it lost, 0.78x against 0.83x
    (3000, 5000, 7000, "coop"),  # K % 16 == 8: `off_sector`'s 256 x 128 (0.78 -> 0.83x; 64 x 192 ran 0.47x)
    (256, 7680, 5120, "ping-pong"),  # 120 of 128 x 128 (91%) against 160 of 64 x 192, unsplit (61%): 0.99x vs 0.70x
    (256, 14336, 12288, "coop"),  # 112 of 128 x 256 (85%) against 300 of 64 x 192 (76%): 0.93x against 0.79x
    (256, 2880, 2880, "64x96"),  # one wave of 64 x 96 (120 tiles, `one_wave`) before 64 x 192 split 2: 0.87 vs 0.73x
    (4096, 57344, 12288, "coop"),  # 99% against 100%: within the margin
    (1024, 128, 2880, "triton"),  # 8 tiles even of 128 x 128: the Triton tier's split-K
])
def test_a16w16_gluon_kernel_by_wave_efficiency(M, N, K, kernel):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    got = "triton" if cfg.get("backend") != "gluon" else ("coop" if cfg["num_warps"] == 8 else
                                                          "64x192" if cfg["BLOCK_SIZE_N"] == 192 else
                                                          "64x96" if cfg["BLOCK_SIZE_N"] == 96 else
                                                          "64x160" if cfg["BLOCK_SIZE_N"] == 160 else "ping-pong")
    assert got == kernel, source
    if kernel == "ping-pong":
        assert (cfg["BLOCK_SIZE_N"], cfg["num_stages"]) == (128, 6) and "the ping-pong" in source
    if kernel == "64x192":
        assert (cfg["BLOCK_SIZE_M"], cfg["num_stages"]) == (64, 6) and "the ping-pong's 64 x 192" in source
        assert cfg["NUM_KSPLIT"] == (1 if M > model.NARROW_MAX_M else 4)
    # the Triton tier can still take it (a failed Gluon compile), with the stages of it that fit there
    G.check_feasible(G.fallback_stages(cfg, H200, 2, 2, True), H200, 2, 2, tma=True)


@pytest.mark.parametrize("M, N, K", [(4096, 4096, 4096), (4000, 4000, 4000), (1, 128, 2880), (16, 4096, 4096)])
def test_left_alone(M, N, K):
    """Shape files, Gluon buckets (decode) and shapes with enough tiles are served as they are."""
    assert configs.serve("a16w16", H200, M, N, K) == configs.select("a16w16", "sm_90", M, N, K)


def test_the_sm_count_decides():
    """The same shape on fewer SMs needs no fitting (an H100 PCIe has 114, a small target 16)."""
    assert tile(configs.serve("a16w16", H200.with_cus(16), 1024, 2880, 4096)[0]) == \
        tile(configs.select("a16w16", "sm_90", 1024, 2880, 4096)[0])
    assert ", fitted" in configs.serve("a16w16", H200, 256, 2880, 4096)[1]


@pytest.mark.parametrize("op", model.FITTED_OPS)
@pytest.mark.parametrize("arch_name", ["sm_90", "gfx942", "gfx950"])
def test_every_fitted_config_is_valid_and_fits(op, arch_name):
    target = arch.ARCHS[arch_name]
    if not configs.table_path(op, arch_name).exists():
        pytest.skip(f"no {op} table for {arch_name}")
    in_bytes = 1 if op.startswith("a8w8") else 2
    fitted = 0
    for M in (1, 7, 64, 128, 256, 777, 1024, 4096):
        for N in (64, 128, 256, 1000, 2880, 8192):
            for K in (256, 2880, 16384):
                cfg, source = configs.serve(op, target, M, N, K)
                fitted += ", fitted" in source
                assert configs.validate_config(dict(cfg), backend=target.backend) == cfg  # complete and valid
                if op == "a16w16_gated":  # its tile reads 2 x BLOCK_SIZE_N rows of w a K step
                    TG.check_feasible(cfg, target, in_bytes, 2, tma=False)
                else:
                    G.check_feasible(cfg, target, in_bytes, 2, tma=False)
                if cfg.get("NUM_KSPLIT", 1) > 1:
                    assert -(-K // cfg["BLOCK_SIZE_K"]) // cfg["NUM_KSPLIT"] >= model.MIN_SPLIT_STEPS
    assert fitted > 0


@pytest.mark.parametrize("op, least", [("a16w16", 100), ("a8w8", 100), ("a8w8_blockscale", 100),
                                       ("a16w16_gated", 1)])  # (gated: `gated_one_wave` alone; int8: no Gluon kernel)
def test_a_served_gluon_config_runs_its_gluon_kernel(op, least):
    """No silent cliff from a rule: on 400 random shapes whose rows TMA can address (K and N multiples of 16 bytes),
    a served config naming the Gluon backend is taken by a Gluon kernel on sm_90 (contiguous operands,
    dispatch.for_shape), not passed over to the Triton tier for a plan its kernel cannot build: a rule's tile that
    `derive` or the installed Triton's budgets refuse would be a cliff the model's own notes do not show."""
    import random

    from gemmkit.ops import dispatch as D

    rng, align, served = random.Random(20261205), (16 if op.startswith("a8w8") else 8), 0
    for _ in range(400):
        M = round(10 ** rng.uniform(0, 3.92))
        N, K = rng.randrange(align, 33000, align), rng.randrange(align, 33000, align)
        cfg, source = configs.serve(op, H200, M, N, K)
        if cfg.get("backend") != "gluon":
            continue
        choice = D.for_shape(op, cfg, H200, M, N, K)
        served += 1
        assert choice.path == "gluon", (M, N, K, source, choice.passed_over)
    assert served >= least


@pytest.mark.interpreter
def test_a_call_runs_the_fitted_config(monkeypatch):
    """On a 64-SM target (GEMMKIT_NUM_CUS) M = 200, N = 40 fits the M <= 256 bucket (64 x 256) to 64 x 64 split 2:
    the call launches the split-K reduce, and is right."""
    monkeypatch.setenv("GEMMKIT_NUM_CUS", "64")
    M, N, K = 200, 40, 512
    cfg, source = configs.serve("a16w16", H200.with_cus(64), M, N, K)
    assert tile(cfg)[:3] == (64, 64, 2), source
    x, w = randn(M, K, dtype=torch.bfloat16), randn(N, K, dtype=torch.bfloat16)
    before = launcher.LAUNCHES.copy()
    y = gemmkit.gemm_a16w16(x, w, out=poisoned((M, N + 8), torch.bfloat16)[:, :N])
    assert (launcher.LAUNCHES - before)["splitk_reduce_kernel"] == 1
    check_a16w16(y, x, w)


@pytest.mark.parametrize("M, N, K, want", [
    # the gated GEMM (N = I, h's columns) on few tiles: its bucket split along K to one wave by `fit`
    # (ab/gated_fit.json, H200, against torch.matmul + silu(g) * u)
    (128, 2048, 7168, (64, 128, 4, 4)),  # DeepSeek-V3 shared expert: 32 tiles, 0.61 -> 1.05x
    (32, 2048, 7168, (64, 64, 4, 4)),  # 0.84 -> 1.14x
    (128, 2880, 2880, (64, 128, 2, 4)),  # GPT-OSS expert: 46 tiles, 0.86 -> 0.97x
])
def test_gated_few_tiles_split_k(M, N, K, want):
    cfg, source = configs.serve("a16w16_gated", H200, M, N, K)
    assert tile(cfg) == want and "A16W16_GATED.json" in source and "K split" in source, source


@pytest.mark.parametrize("M, N, K", [
    (253, 3776, 7360),  # 118 tiles: split 2 ran 0.90 -> 0.74x (ab/gated_mid.json)
    (128, 14336, 4096),  # a shape file (Llama-3-8B's): served as measured
])
def test_gated_leaves_enough_tiles_and_shape_files(M, N, K):
    cfg, source = configs.serve("a16w16_gated", H200, M, N, K)
    assert cfg.get("NUM_KSPLIT", 1) == 1 and "fitted" not in source, source


@pytest.mark.parametrize("M, N, K, rows", [
    # `gated_rows` (ab/gated_verify.json, H200): the 64-row tile where it fills 1.3x the 128-row tiles' waves
    (414, 13808, 7232, True),  # 0.81 -> 1.05x
    (287, 1904, 3088, True),  # 0.72 -> 0.96x
    (1024, 2880, 2880, True),  # GPT-OSS expert: 0.89 -> 1.18x
    (512, 2048, 7168, True),  # DeepSeek-V3 shared expert: 0.90 -> 1.14x (64 tiles of 128 x 128: `fit` split them)
    (265, 15200, 5536, False),  # 1.2x the fill: the 64-row tile lost, 0.83 -> 0.76x (ab/gated_midm.json)
    (512, 29568, 8192, False),  # equal fill: 128 x 128 (1.20 against 1.03x)
    (300, 320, 6288, False),  # 64-row tiles few too: `fit` splits the bucket's
])
def test_gated_rows(M, N, K, rows):
    cfg, source = configs.serve("a16w16_gated", H200, M, N, K)
    assert ("gated_rows" in source) == rows, source
    assert tile(cfg)[:2] == ((64, 128) if rows else (128, 128)), source
    amd, amd_source = configs.serve("a16w16_gated", arch.get("gfx942"), M, N, K)
    assert "gated_rows" not in amd_source  # measured on the H200 only


def test_gated_rows_tile_is_a_shipped_bucket():
    """`gated_rows` serves the M <= 256 bucket's tile (so `gemmkit isa` compiles it with the table's cases)."""
    bucket, _ = configs.select("a16w16_gated", "sm_90", 256, 4096, 4096)
    assert dict(bucket, NUM_KSPLIT=1) == model.OP_RULES["a16w16_gated"]["gated_rows"]


@pytest.mark.parametrize("M, N, K, coop", [
    # `gated_one_wave` (ab/gated_gluon*.json, H100, against the served Triton tier): the Gluon cooperative gated tile
    (200, 6144, 4096, True),  # 96 coop tiles, 192 of the answer's 64 x 128: +13%
    (460, 2304, 11264, True),  # 72 tiles, the answer's own 128 x 128: +13%
    (974, 2048, 14720, True),  # 128 tiles, the same tiles: +7% (held out)
    (144, 8000, 4096, True),  # 126 tiles against 189: +15%
    (192, 4736, 6144, False),  # the answer's 111 tiles of 64 x 128 fit one wave themselves: 0.78x
    (600, 1664, 7168, False),  # `gated_rows`' 130 64-row tiles, one wave: 0.68x
    (529, 752, 10672, False),  # few tiles: the answer splits K (0.41x)
    (256, 9216, 4096, False),  # 144 coop tiles, past one wave: 0.86x
    (128, 8192, 4096, False),  # M <= 128: not measured
    (1100, 1024, 4096, False),  # M > 1024: not measured
    (200, 6144, 4104, False),  # K % 16 == 8, rows off 32-byte sectors: not measured
    (200, 6140, 4096, False),  # N % 8 != 0: h's rows off 16 bytes, which the Gluon tile cannot store (TMA)
])
def test_gated_one_wave(M, N, K, coop):
    cfg, source = configs.serve("a16w16_gated", H200, M, N, K)
    assert (cfg.get("backend") == "gluon") == coop and ("gated_one_wave" in source) == coop, source
    if coop:
        assert cfg == model.GATED_COOP_128X128
    amd, amd_source = configs.serve("a16w16_gated", arch.get("gfx942"), M, N, K)
    assert amd.get("backend") != "gluon" and "gated_one_wave" not in amd_source  # no Gluon gated tile there


def test_gated_one_wave_tile_is_compiled_by_isa():
    """`gated_one_wave` serves hopper_coop's first gated preset (so `gemmkit isa` compiles the served config)."""
    from gemmkit.kernels.gluon import hopper_coop

    preset = hopper_coop.GATED_PRESETS[0]
    assert {k: model.GATED_COOP_128X128[k] for k in preset} == preset


@pytest.mark.interpreter
def test_a_gated_call_runs_the_fitted_config(monkeypatch, launches):
    """On a 64-SM target M = 40, N = I = 96, K = 1024 fits the gated M <= 64 bucket (64 x 64, 2 tiles) to a K split:
    the gated split-K reduce applies the activation to the summed partials, and the result is right."""
    from _util import within_bound

    from gemmkit.reference import activation_ref

    monkeypatch.setenv("GEMMKIT_NUM_CUS", "64")
    M, I, K = 40, 96, 1024
    cfg, source = configs.serve("a16w16_gated", H200.with_cus(64), M, I, K)
    assert cfg["NUM_KSPLIT"] > 1, source
    x, w = randn(M, K, dtype=torch.bfloat16), randn(2 * I, K, dtype=torch.bfloat16)
    before = dict(launches)
    h = gemmkit.gemm_a16w16_gated(x, w, out=poisoned((M, I + 8), torch.bfloat16)[:, :I])
    assert launches["gated_splitk_reduce_kernel"] - before.get("gated_splitk_reduce_kernel", 0) == 1
    x64, w64 = x.double(), w.double()
    ok, msg = within_bound(h, activation_ref(x64 @ w64[:I].T, "silu") * (x64 @ w64[I:].T), torch.bfloat16)
    assert ok, msg


@pytest.mark.interpreter
def test_a_blockscale_call_runs_the_fitted_config(monkeypatch):
    """Block scales (1 x 128 / 128 x 128) on a 64-SM target: M = 16, N = 256, K = 1024 fits the M <= 16 bucket
    (16 x 64, 4 tiles) to a K split 2 ways (K's 8 steps allow no more): the split partials are scaled per K block
    and summed by the reduce, and the result is right."""
    from _util import q8, scales, within_bound

    from gemmkit.reference import gemm_a8w8_blockscale_ref

    monkeypatch.setenv("GEMMKIT_NUM_CUS", "64")
    M, N, K = 16, 256, 1024
    cfg, source = configs.serve("a8w8_blockscale", H200.with_cus(64), M, N, K)
    assert cfg.get("NUM_KSPLIT") == 2 and ", fitted: " in source, source
    f8 = torch.float8_e4m3fn
    x, w = q8(M, K, dtype=f8), q8(N, K, dtype=f8)
    xs, ws = scales(K // 128, M).t(), scales(N // 128, K // 128)
    before = launcher.LAUNCHES.copy()
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out_dtype=torch.float32, out=poisoned((M, N), torch.float32))
    assert (launcher.LAUNCHES - before)["splitk_reduce_kernel"] == 1
    ok, msg = within_bound(y, gemm_a8w8_blockscale_ref(x, w, xs, ws), torch.float32)
    assert ok, msg


def test_tuned_names_shape_files_only():
    """The bench rows' `tuned`: a shape file's bucket, not a default bucket (fitted or not) nor a config= argument."""
    assert configs.tuned(configs.serve("a16w16", H200, 4096, 4096, 4096)[1])
    assert not configs.tuned(configs.serve("a16w16", H200, 1024, 128, 2880)[1])  # fitted default bucket
    assert not configs.tuned(configs.serve("a16w16", H200, 4000, 4000, 4000)[1])
    assert not configs.tuned("config= argument") and not configs.tuned("bench override")


@pytest.mark.parametrize("M, N, K, narrow", [
    (256, 5120, 5120, False),  # 40 coop tiles (64 x 192 split 4 0.89x against the coop's 0.81x); 128 of 64 x 160
    # fill one wave (`split_widths`: ab/bf16_m128_256_grid2.json 0.89 -> 0.96x)
    (512, 4608, 36864, False),  # 72 (0.65 -> 0.75x); 256 of 64 x 144 fill a round (`split_widths`: 0.74 -> 0.81x)
    (256, 12288, 12288, False),  # 96 (0.80 -> 0.90x); then `coop_one_wave`'s one wave of 128 x 192 over it
    (200, 2880, 8192, True),  # the last 64-row box holds 8 rows: no `one_wave`
    (200, 2880, 2880, False),  # K <= 4096: one wave of 64 x 128 (`short_k_wave`)
    (256, 2880, 4096, False),  # 24 coop tiles; 64 x 192 split 4 0.77x, one wave of 64 x 96 0.87x
    (512, 8192, 8192, False),  # 128 coop tiles: not fewer than the SMs
    (1024, 5120, 8192, False),  # M > 512: not measured
    # 64 < M <= 128, the Triton bucket's shapes: where K >= 64 x the tile rows (the four splits' partials small)
    (128, 4608, 36864, True),  # measured: 0.79 -> 0.97x
    (80, 5120, 8192, True),  # 0.88 -> 0.93x (M = 80: 128 tile rows, the same K bound; one_wave: a box past M)
    (128, 5120, 5120, False),  # K < 8192: the split lost (0.84 -> 0.81x)
    (128, 4608, 4096, False),
    (128, 10240, 5120, False),  # 80 tiles of 128 x 128: the wide ping-pong (wide_share)
    (256, 1024, 4096, False),  # N < 2048
])
def test_a16w16_few_coop_tiles_take_the_64_x_192_ping_pong(M, N, K, narrow):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    got = (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["num_warps"], cfg.get("NUM_KSPLIT"))
    assert (got == (64, 192, 4, 4)) == narrow, source
    if narrow:
        assert "the ping-pong's 64 x 192" in source and cfg.get("backend") == "gluon"
    assert "64 x 192" not in configs.serve("a16w16", arch.ARCHS["gfx942"], M, N, K)[1]



# ab/bf16_m128_grid.json, ab/bf16_one_wave.json (H200, against cuBLAS): the tile that comes nearest one wave
@pytest.mark.parametrize("M, N, K, want", [
    (128, 2880, 2880, (64, 64, True, 90)),  # swap-AB 64 x 64: 0.95x against the served Triton 64 x 128's 0.80x
    (128, 3072, 3072, (64, 64, True, 96)),  # 0.96x against 0.82x
    (112, 2880, 2880, (64, 64, True, 90)),  # the last box 48 of 64 rows: 0.94x against 0.81x
    (128, 4608, 4096, (64, 96, False, 96)),  # 144 swap tiles would be two waves: 64 x 96, 0.90x against 0.84x
    (128, 5120, 8192, (64, 96, False, 108)),  # before the 64 x 192 split (partials 25% of w): 0.93x against 0.87x
    (128, 7168, 2048, (64, 128, False, 112)),  # 64 x 96 would be 150 tiles: 64 x 128, 8 stages, 0.93x against 0.76x
    (256, 2880, 4096, (64, 96, False, 120)),  # 0.87x against 0.77x
    # M = 64, over the swap-AB decode bucket (ab/bf16_one_wave_more.json)
    (64, 10240, 5120, (64, 96, False, 107)),  # 0.97x against 0.81x
    (64, 14336, 12288, (64, 128, False, 112)),  # 64 x 96 would be 150 tiles: 0.97x against 0.90x
])
def test_a16w16_one_wave_tile(M, N, K, want):
    bm, bn, swap, tiles = want
    # the default table's buckets (the shape files of tuned layers are served as measured)
    cfg, notes = model.choose("a16w16", configs.select("a16w16", "sm_90", M, 1, 1)[0], None, M, N, K, 132, 232448)
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], bool(cfg.get("swap_ab")), cfg.get("NUM_KSPLIT", 1)) == \
        (bm, bn, swap, 1), notes
    assert f"one wave: {tiles} tiles" in notes[0]


@pytest.mark.parametrize("M, N, K", [
    (80, 4096, 4096),  # the last 64-row box a quarter full: the swap tile ran 0.65x (the served 0.84x)
    (80, 2880, 2880),
    (128, 1536, 7168),  # 48 swap tiles, under ONE_WAVE_FILL of the SMs
    (128, 4608, 36864),  # the 64 x 192 split's partials 6% of w: it goes first (0.97x against 0.91x)
    (128, 18432, 16384),  # no tile of the menu within one wave
    (32, 10240, 5120),  # M < 64: a 64-token tile would load past M (not measured)
    (64, 2880, 2880),  # 45 swap tiles: under ONE_WAVE_FILL of the SMs
])
def test_a16w16_one_wave_not_taken(M, N, K):
    bucket = configs.select("a16w16", "sm_90", M, 1, 1)[0]
    cfg, notes = model.choose("a16w16", bucket, None, M, N, K, 132, 232448)
    assert not any("one wave" in n for n in notes), notes
    if M <= 64:  # the decode bucket as it is, or its tile widened by `swap_wide` (32 x 10240: 160 -> 80 tiles)
        assert cfg == bucket or cfg == dict(bucket, BLOCK_SIZE_N=128) and "wide swap-AB" in notes[-1], notes
    else:  # no swap tile
        assert not cfg.get("swap_ab")


@pytest.mark.parametrize("M, N, K, width", [
    # 256 tiles: one round of 264 consumers (ab/bf16_split_widths.json: 0.77 -> 0.86x); now the coop's 128 x 144 /
    # 160 there, one wave of 128 tiles (`coop_widths`, ab/bf16_coop_widths_m512.json: 0.87 / 0.92 -> 0.93 / 0.96x)
    (512, 4608, 4096, None),
    (512, 5120, 5120, None),
    (1024, 5120, 8192, None),  # 512 tiles, two rounds (+4% A/B, -1 to -6% suite); the coop 128 x 160 serves
    (256, 10240, 5120, None),  # 0.85 -> 0.92x; now the coop's 128 x 160 (`coop_widths`, below)
    (256, 4608, 4096, 144),  # 128 tiles, one wave (64 x 160's 116: 0.84 -> 0.91x, ab/bf16_m128_256_grid2.json)
    (256, 7168, 4096, None),  # 180 of 64 x 160: 68% of two waves
    (3000, 5000, 7000, None),  # M > 1024 (lost: 0.43 against 0.79x)
    (2048, 4608, 4096, None),
    (1000, 3000, 2000, None),  # no width fills 90% of a round
])
def test_a16w16_split_width_where_it_fills_its_waves(M, N, K, width):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if width is None:
        assert cfg["BLOCK_SIZE_M"] != 64 or cfg["BLOCK_SIZE_N"] not in model.OP_RULES["a16w16"]["split_widths"], source
        return
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg.get("NUM_KSPLIT", 1), cfg["num_warps"]) == (64, width, 1, 4)
    assert cfg["backend"] == "gluon" and configs.split_tail(width) and f"64 x {width} split tile" in source
    configs.validate_config(cfg, backend="cuda")
    assert configs.serve("a16w16", arch.get("gfx942"), M, N, K)[0]["BLOCK_SIZE_N"] != width  # sm_90 only


@pytest.mark.parametrize("M, N, K, width", [
    (1024, 5120, 5120, 160),  # 256 tiles, two waves at 97% (ab/bf16_coop_split_widths.json: 0.87 -> 0.95x)
    (1000, 3000, 2000, 192),  # 128 tiles, one wave (0.80 -> 0.98x)
    (1024, 2880, 2880, 192),  # 120 tiles, 91% (0.82 -> 0.99x)
    (2048, 5120, 5120, None),  # 512 of 128 x 160: four waves (0.92 against the ping-pong's 0.97x)
    (1024, 7168, 2048, None),  # a shape table serves it (and 360 tiles of 128 x 160 take three waves)
    (2048, 2880, 2880, None),  # 128 x 192 fills 91%, within the margin of the ping-pong's 93%
    (3000, 5000, 7000, None),  # 648 of 128 x 192: five waves (0.70 against the coop's 0.80x)
    (1024, 2880, 4096, None),  # the 64 x 192 fills 91%: within the margin (`coop_one_wave` takes it after)
    (512, 5120, 5120, 160),  # one wave of 128 tiles, ahead of the ping-pong's 64 x 160 (0.92 -> 0.96x)
    (480, 4608, 36864, 144),  # 0.82 -> 0.87x (ab/bf16_coop_widths_m512.json)
    (384, 4608, 4096, None),  # 96 tiles of 128 x 144 (73%; measured 0.78 against the served 0.94x)
    (448, 4608, 4096, 144),  # 128 tiles, the last 128-row tile half empty: 85% of the area, one wave (was 64 x 192)
    (8192, 5120, 128, None),  # M > COOP_WIDTH_MAX_M
    # one wave from COOP_WIDTH_ONE_WAVE_FILL (ab/bf16_coop_widths_one_wave.json: 0.735 -> 0.934x, the coop bucket's
    # 128 x 256 filling 43-64% before)
    (2532, 984, 2464, 192),  # 120 tiles, 77%: 0.71x in the random suite of seed 20270101
    (3416, 672, 2560, 192),  # 108 tiles, 71% (0.71 -> 0.90x)
    (3726, 1072, 640, None),  # 240 of 128 x 144 (82%): two waves keep SPLIT_WIDTH_FILL (0.86 -> 0.76x measured)
    # `coop_widths_area`: the other tiles' fills by area too (ab/bf16_coop_widths_by_area_fit.json, H100: 0.81 ->
    # 0.95x): the coop's 100 tiles of 128 x 256 take 76% of the SMs but fill 60% of their area (808 of 1024 columns)
    (3198, 808, 672, 192),  # 125 tiles of 128 x 192, 80% (0.78x on the coop in the short-K A/B)
    (3016, 808, 1600, 192),  # 0.71 -> 0.85x
    (2443, 2080, 2224, 160),  # 260 tiles, 94%, over the 128 x 128 (H200 +10%)
    # under COOP_WIDTH_MIN_M only in `split_widths`' 64-row tile's place (ab/bf16_coop_widths_m256.json: 0.836 ->
    # 0.947x), not the 128 x 128 ping-pong's (360-384 x 12720-13968: 3 of 7 up 4-6%, 4 down 2-8%)
    (256, 10240, 5120, 160),  # 128 tiles of 128 x 160, 97% (0.94 -> 1.00x)
    (370, 6208, 22240, 144),  # three rows of 128-row tiles (0.77 -> 0.95x)
    (245, 20944, 10032, 160),  # two waves (0.79 -> 0.96x)
    (375, 12752, 5936, None),  # the ping-pong's 128 x 128 stays (0.90 against 0.87x)
    # one row of 128-row tiles (64 < M <= 128, up to COOP_ROW_WAVES), ab/bf16_m128_256_coop_widths.json
    (128, 51200, 5120, 144),  # 356 tiles, three waves at 90%, against 400 of 128 x 128 at 76%: 0.88 -> 0.97x
    (128, 35840, 5120, 144),  # 249 tiles, 94% against 71%: 0.85 -> 0.98x
    (128, 14336, 5120, None),  # 100 tiles of 128 x 144: 75% of one wave, under the bar
    (100, 51200, 5120, None),  # the tile's rows 78% full: 70% of the area
    (128, 57344, 8192, None),  # 359 of 128 x 160 fill 90%, 448 of 128 x 128 85%: within the margin
])
def test_a16w16_coop_width_where_it_fills_two_waves(M, N, K, width):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    widths = dict(model.OP_RULES["a16w16"]["coop_widths"])
    if width is None:
        assert re.search(r"the cooperative 128 x \d+ split tile(?! in the 64-row)", source) is None, source
        assert "coop_one_wave" in source or not (cfg["num_warps"] == 8 and cfg["BLOCK_SIZE_N"] in widths), source
        return
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["num_warps"], cfg["num_stages"], cfg["NUM_KSPLIT"]) == \
        (128, width, 8, widths[width], 1), source
    assert cfg["backend"] == "gluon" and f"the cooperative 128 x {width} split tile" in source
    configs.validate_config(cfg, backend="cuda")
    assert ("model:coop_width_%d" % width, cfg) in configs.model_configs("a16w16", "sm_90")  # `gemmkit isa` compiles it
    assert configs.serve("a16w16", arch.get("gfx942"), M, N, K)[0]["BLOCK_SIZE_N"] != width  # sm_90 only


@pytest.mark.parametrize("M, N, K, card", [(3198, 808, 672, "H200"), (3016, 808, 1600, "H200"),
                                           (2023, 1184, 28368, "H100")])
def test_a16w16_coop_widths_area_is_the_rule_that_serves_the_width(M, N, K, card, monkeypatch):
    """Without `coop_widths_area` (its key off, as an A/B's "before" side) these shapes keep a 128 x 128 / 256 tile:
    the coop's and the ping-pong's tile counts fill their waves within the margin of the width's area."""
    assert configs.serve("a16w16", arch.get(card), M, N, K)[0]["BLOCK_SIZE_N"] in (160, 192)
    monkeypatch.setitem(model.OP_RULES["a16w16"], "coop_widths_area", None)
    assert configs.serve("a16w16", arch.get(card), M, N, K)[0]["BLOCK_SIZE_N"] in (128, 256)


@pytest.mark.parametrize("M, N, K", [
    (2111, 1024, 32512), (1346, 1792, 14976), (2636, 896, 18960),  # K >= 5000: the H200's A/B -4.7% over 29 rows
    (2443, 2080, 2224),  # K under 5000: H200 +10%
])
def test_a16w16_coop_widths_area_160_on_both_cards(M, N, K):
    """`coop_widths_area`'s 128 x 160 over the 128 x 128 serves on both cards at any K: the H200's exception at K >=
    5000 (`area_160_long_k`, fitted on 29 rows of results/h200/ab/bf16_coop_widths_by_area_h200.json) lost on 40 rows
    held out (results/h200/ab/bf16_area_160_long_k_heldout_h200.json: 0.886 -> 0.859x) and was taken out."""
    for card in ("H200", "H100"):
        cfg, source = configs.serve("a16w16", arch.get(card), M, N, K)
        assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["num_warps"]) == (128, 160, 8), (card, source)
        assert "area_160" not in source, source


@pytest.mark.parametrize("M, N, K, coop", [
    # `coop_tail`: a long K keeps the coop's 128 x 256 (one round and a tail the tail split runs along K) over two
    # waves of `coop_widths` split tiles (ab/bf16_coop_tail_vs_widths.json, bf16_coop_tail_heldout.json)
    (1024, 5120, 17920, True),  # Phi-4 down_proj: 160 tiles, a tail of 28 (0.92 -> 1.00x)
    (3150, 1520, 23488, True),  # 150 tiles, a tail of 18 (0.84 -> 0.97x)
    (253, 19776, 14400, True),  # under COOP_WIDTH_MIN_M, in `split_widths`' place too (0.93 -> 0.99x)
    (1243, 4144, 23440, True),  # a tail of 38: split three ways (held out: 0.90 -> 0.87x, kept as the rule was)
    (1024, 5120, 8192, False),  # K under COOP_TAIL_MIN_K: the 128 x 160 (0.96x; the coop 0.98x, the one such row of 19)
    (1024, 5120, 17928, False),  # K % 16 == 8: not measured there
    (4096, 576, 16384, False),  # the width's 128 tiles take one wave (and the coop's 96 under a round)
    (1024, 9216, 16384, False),  # 288 of 128 x 256 and 8 x 58 = 464 of 128 x 160: no two-wave width to replace
])
def test_a16w16_coop_tail_keeps_the_coop_on_long_k(M, N, K, coop):
    from gemmkit.kernels import _budgets
    from gemmkit.kernels.gluon import hopper_coop
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if not coop:
        assert "coop_tail" not in source, source
        return
    assert tile(cfg) == (128, 256, 1, 8) and cfg["backend"] == "gluon" and "(`coop_tail`)" in source, source
    # the rule's premise: the kernel runs the partial last round as two or more K splits a tile (where the installed
    # Triton's registers take the tail variant: kernels/_budgets.py TAIL_COOP_WIDE)
    plan = hopper_coop.derive(cfg, H200, 2, 2)
    n_tail, splits = hopper_coop.tail_of(plan, cfg, M, N, K, H200)
    tiles = -(-M // 128) * -(-N // 256)
    if _budgets.tail_split_ok(hopper_coop.KERNEL_NAME, cfg):
        assert (n_tail, splits >= 2) == (tiles % H200.num_cus, True)
    else:
        assert (n_tail, splits) == (0, 1)


def test_coop_tail_needs_a_partial_round_of_at_most_half_the_sms():
    assert model.coop_tail(132 + 66, 250, 16384, 132)
    assert not model.coop_tail(132 + 67, 250, 16384, 132)  # one split a tail tile: no tail split
    assert not model.coop_tail(264, 250, 16384, 132)  # whole rounds
    assert not model.coop_tail(120, 250, 16384, 132)  # under one round
    assert not model.coop_tail(160, 132, 16384, 132)  # the width's tiles in one wave
    assert not model.coop_tail(160, 256, model.COOP_TAIL_MIN_K - 16, 132)


@pytest.mark.parametrize("M, N, K, want", [
    # `tail_waves` (ab/bf16_tail_waves_{fit,heldout,verify}.json): the coop 128 x 256 against the ping-pong 128 x 128
    # by fills that count each one's tail split. The ping-pong where its tail split fills GLUON_WAVE_MARGIN more:
    (1024, 7168, 16384, 128),  # DeepSeek-V3 o_proj: 224 coop tiles leave 92 (unsplit), 448 ping-pong 52 split 2 (+15%)
    (139, 8896, 27776, 128),  # 70 coop tiles in one round; 140 of 128 x 128: a tail of 8 split 8 ways (0.50 -> 0.83x)
    (1735, 1792, 2944, 128),  # at a short K too (+10%)
    (1735, 1792, 1536, 256),  # ... not under TAIL_MIN_K (no tail split)
    # the coop in the ping-pong's place only at K >= COOP_TAIL_MIN_K, filling TAIL_WAVES_COOP_MARGIN more:
    (2384, 2304, 12288, 256),  # 171 coop tiles, a tail of 39 split 3 ways, against 342 with an unsplit 78 (+4%)
    (3583, 1536, 14816, 256),  # (+7%)
    (2422, 2304, 8064, 128),  # the same fills under COOP_TAIL_MIN_K: mixed there (-6 to +6%), the ping-pong stays
    (1642, 3808, 2640, 128),  # equal fills counting the tails: the ping-pong stays (the coop -14%)
    (376, 11760, 21152, 128),  # 64 x 192's `deep_rows` test keeps the ping-pong by whole-round fills (pp stays)
])
def test_a16w16_tail_waves(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["backend"]) == (128, want, "gluon"), source
    assert cfg["num_warps"] == (8 if want == 256 else 4), source
    changed = (M, N, K) not in ((1735, 1792, 1536), (2422, 2304, 8064), (1642, 3808, 2640), (376, 11760, 21152))
    assert ("(`tail_waves`)" in source) == changed, source


@pytest.mark.parametrize("M, N, K, pingpong", [
    # `narrow_tail` (ab/bf16_pp_tail_vs_narrow_{fit,heldout}.json, bf16_narrow_tail_verify.json): the 64 x 192 gives way
    # to the 128 x 128 where that tile's area fill counting its tail split is NARROW_TAIL_MARGIN over
    (4416, 512, 7680, True),  # 207 tiles of 64 x 192 (70%) against 140 of 128 x 128, a tail of 8 split 8 ways (93%): +22%
    (292, 6144, 12864, True),  # against the 64 x 192 split 4 (55% against 74%): +26%
    # (held out: 2636 x 896 x 18960 0.61 -> 0.99x; now `coop_widths_area`'s 128 x 160, in test_a16w16_coop_width_...)
    (5459, 512, 6080, False),  # 1.12x more: mixed there (-0.2%), the 64 x 192 stays
    (949, 2688, 6016, False),  # 1.12x (+7%; the band is mixed; `swap_rounds` then takes the 64 x 192's place)
])
def test_a16w16_narrow_tail(M, N, K, pingpong):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if pingpong:
        assert tile(cfg) == (128, 128, 1, 4) and "(`narrow_tail`)" in source, source
    else:
        assert "narrow_tail" not in source, source
        assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (64, 192) or "(`swap_rounds`)" in source, source


def test_tail_fill_counts_the_last_rounds_splits():
    # 1412 x 6144: 576 tiles of 128 x 128 = 4 rounds + 48 split 2 ways: 4.5 rounds' time
    assert model.tail_fill(576, 132, 25984, 64) == pytest.approx(576 / (4.5 * 132))
    assert model.tail_fill(576, 132, model.tail.TAIL_MIN_K - 64, 64) == model.wave_efficiency(576, 132)
    assert model.tail_fill(120, 132, 25984, 64) == model.wave_efficiency(120, 132)  # one round: nothing to split
    assert model.tail_fill(132 + 67, 132, 25984, 64) == model.wave_efficiency(132 + 67, 132)  # one split a tail tile
    # the kernels' rule is the model's: the same (R, S) for the ping-pong's and the coop's plans
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong
    for derive, bn in ((hopper_pingpong.derive, 128), (hopper_coop.derive, 256)):
        cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
               "num_warps": 4 if bn == 128 else 8, "num_stages": 4, "NUM_KSPLIT": 1, "backend": "gluon"}
        for M, N, K in ((1412, 6144, 25984), (4096, 28672, 4096), (790, 4800, 2048), (139, 8896, 27776)):
            tiles = -(-M // 128) * -(-N // bn)
            assert hopper_pingpong.tail_plan(derive(cfg, H200), M, N, K, 132) == model.tail_rule(tiles, 132, K, 64)


def test_area_fill_counts_columns_past_n_as_empty():
    # 4096 x 576: 128 tiles of 128 x 144 or of 128 x 160 (one wave each); the 160-wide leave 10% of theirs empty
    assert model.area_fill(4096, 576, 128, 144, 132) == pytest.approx(4096 * 576 / (132 * 128 * 144))
    assert model.area_fill(4096, 576, 128, 160, 132) < 0.9 * model.area_fill(4096, 576, 128, 144, 132)
    assert model.area_fill(128, 128, 128, 128, 1) == 1.0


@pytest.mark.parametrize("M, N, K, want", [
    # `m128_tile`: where the Triton tier's M_LEQ_128 bucket would run unsplit, the Gluon ping-pong
    (65, 5120, 5120, (64, 128, 1, 4)),  # 40 tiles of 128 x 128: the same 64 x 128 tile (0.74 -> 0.85x)
    (96, 9216, 3072, (128, 128, 1, 4)),  # 72 tiles of 128 x 128, over half the SMs (0.70 -> 0.88x)
    (80, 2880, 2880, (64, 128, 2, 4, None)),  # the Triton tier splits K: as it was
    # `few_tiles` from a partial last row: 69 tiles of 128 x 128 fill 40% of the SMs (0.74 -> 1.06x)
    (300, 2880, 2880, (64, 128, 1, 4)),
    # 78 tiles, 59%: not the 64 x 64 (lost 31%); one wave of 64 x 144 (`wide_one_wave`, 0.86 -> 0.95x)
    (651, 1632, 1936, (64, 144, 1, 4)),
    # 80 tiles fill 48%, the 64 x 128 no better; one wave of 64 x 144 fills 87% (`wide_one_wave`, 0.76 -> 0.81x)
    (517, 2008, 1024, (64, 144, 1, 4)),
])
def test_a16w16_gluon_over_the_triton_tier(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    backend = want[4] if len(want) > 4 else "gluon"
    assert tile(cfg) == want[:4] and cfg.get("backend") == backend, source


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
@pytest.mark.parametrize("M, N, K, pingpong", [
    (1024, 1024, 4096, True),  # 64 tiles of the large-M bucket's 128 x 128: the 64 x 64 ping-pong (0.95 -> 1.17x)
    (4096, 128, 2880, True),  # GPT-OSS's router: 32 tiles (fp8 0.97 -> 1.16x, block scale 0.98 -> 1.28x)
    (300, 2880, 2880, False),  # 69 tiles: the bucket (the ping-pong lost, 0.97 -> 0.90x)
    (2048, 1024, 7168, False),  # 128 tiles: the bucket (0.95 against 0.76x)
])
def test_fp8_few_large_tiles_take_the_ping_pong_above_m_256(op, M, N, K, pingpong):
    cfg, source = configs.serve(op, H200, M, N, K)
    assert cfg.get("backend") == "gluon"
    assert ((cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["num_warps"]) == (64, 64, 4)) == pingpong, source


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
@pytest.mark.parametrize("M, N, K, want", [
    # `m256_split`: at 128 < M <= 256 where even the 64 x 64 ping-pong's tiles are under half the SMs, the large-M
    # bucket's coop (10 / 2 tiles here) gives way (ab/fp8_m256_few.json, blockscale_m256_few.json; held out:
    # *_m256_few_heldout.json, fp8 0.98 -> 2.19x torch._scaled_mm) ...
    (256, 576, 7168, "triton"),  # DeepSeek kv_a: 36 of 64 x 64, under 35%: the Triton tier split (23 -> ~10 us)
    (256, 128, 2880, "triton"),  # GPT-OSS router: 8 of 64 x 64
    (136, 320, 7168, "triton"),
    (252, 512, 384, "pingpong"),  # 32 of 64 x 64, but K too short for `fit` to split: the ping-pong
    (160, 1024, 4096, "pingpong"),  # 48 of 64 x 64, 35-50% of the SMs: the ping-pong
    (256, 1024, 7168, "pingpong"),
    (256, 2048, 7168, "pingpong"),  # 128 of 64 x 64: `wide_share`'s ping-pong, as before
    (128, 576, 7168, "triton"),  # M <= 128: the M_LEQ_128 bucket, as before
    (257, 576, 7168, "pingpong"),  # M > 256: `large_few_tiles`, as before
])
def test_fp8_few_tiles_at_m_129_256(op, M, N, K, want):
    cfg, source = configs.serve(op, H200, M, N, K)
    got = "triton" if cfg.get("backend") != "gluon" else "pingpong" if cfg["num_warps"] == 4 else "coop"
    assert got == want, source
    if got == "triton" and M > 128:
        assert cfg.get("NUM_KSPLIT", 1) > 1 and cfg["BLOCK_SIZE_M"] == 64, cfg
    configs.validate_config(dict(cfg), backend="cuda")


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_m256_split_is_the_measured_m128_bucket_tile(op):
    """`m256_split` holds the tile its A/B measured, each table's M_LEQ_128 bucket's (as of 2026-12-02): a retuned
    bucket fails here, so the rule's tile is measured again rather than drifting from it unseen."""
    bucket = configs.select(op, "sm_90", 128, 1, 1)[0]
    split = model.OP_RULES[op]["m256_split"]
    keys = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages", "tma")
    assert {k: split[k] for k in keys} == {k: bucket[k] for k in keys}
    assert bucket.get("backend") != "gluon"


def _kernel(cfg):
    if cfg.get("backend") != "gluon":
        return "triton split %d" % cfg.get("NUM_KSPLIT", 1)
    return "%s %dx%d" % ("coop" if cfg["num_warps"] == 8 else "pp", cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"])


@pytest.mark.parametrize("M, N, K, want", [
    # `deep_rows` (ab/bf16_deep_rows.json, bf16_model_rules_heldout.json): past two waves at 256 < M <= 512 the
    # 64-row tiles give way where K >= 2048 (the 128 x 128's tail split) ...
    (287, 11848, 5744, "pp 128x128"),  # 375 of 64 x 160: 0.58 -> 0.67x
    (370, 12728, 6096, "pp 128x128"),  # 0.63 -> 0.82x
    (426, 12768, 6296, "pp 128x128"),  # the 64 x 192: 0.69 -> 0.95x on the coop; `tail_waves`: the 128 x 128's
    #                                    tail split (400 tiles, 97%) against the coop's 76%: 0.90 -> 0.99x
    # ... or where their area fill is not DEEP_ROWS_MARGIN over the 128-row tiles'
    (459, 6960, 1832, "coop 256x128"),  # 392 of 64 x 144 fill 88%, 128 x 256 74%: 0.51 -> 0.76x; K % 16 == 8:
    #                                     `off_sector`'s 256 x 128 (0.83 -> 0.89x)
    (352, 8496, 1744, "coop 128x256"),  # 0.70 -> 0.82x
    (288, 11640, 1440, "pp 64x160"),  # 82% against the 128 x 128's 52% (a third round): kept, 0.83x vs 0.69x
    (286, 11664, 1968, "pp 64x160"),
    (256, 4608, 4096, "pp 64x144"),  # one wave: as before (0.93x)
    (280, 3584, 7680, "pp 64x144"),  # one wave (0.89x against the 128 x 128's 0.68x)
    (1024, 4608, 36864, "pp 64x192"),  # M > DEEP_ROWS_MAX_M: not measured there, as before
])
def test_a16w16_deep_rows(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want, source


@pytest.mark.parametrize("M, N, K, want", [
    # `narrow_columns` (ab/bf16_narrow_n_large_m.json, held out bf16_narrow_columns_heldout.json): above M = 512 the
    # 64 x 192 past two waves gives way where its last column leaves its columns under NARROW_COLUMN_FILL full
    (7355, 640, 14720, "pp 128x128"),  # 460 tiles, columns 83% full: 0.72 -> 0.89x
    (6840, 584, 16496, "pp 128x128"),  # 0.48 -> 0.82x (held out)
    (5398, 1176, 16080, "pp 128x128"),  # 0.59 -> 0.80x on the coop (held out); `tail_waves`: 0.79 -> 0.89x
    (3202, 320, 7040, "pp 64x192"),  # 102 tiles: under a wave (1.06x on it, 0.86x on the 128 x 128)
    (2298, 576, 7424, "pp 64x192"),  # whole columns
    (1024, 4608, 36864, "pp 64x192"),  # whole columns, 2.9 waves
])
def test_a16w16_narrow_columns(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want, source


@pytest.mark.parametrize("M, N, K, want", [
    # `few_tiles` down to FEW_TILES_UNSPLIT_FILL where K is too short to split (ab/bf16_short_k_few.json)
    (646, 368, 1824, "pp 64x64"),  # 44% of the SMs: 0.58 -> 0.96x (the Triton tier's split 7)
    (403, 376, 3264, "pp 64x64"),  # 28%: 0.34 -> 0.87x
    (222, 720, 2208, "pp 64x64"),  # 30%: 0.68 -> 0.88x
    (512, 128, 2880, "triton split 11"),  # GPT-OSS's router, 12%: the Triton split (0.96x)
    # the Triton tier unsplit: the ping-pong on the same tile, K's rows on 32-byte sectors or not (dispatch leaves
    # these small calls' x where it is: `pitch`'s PITCH_MIN_LOADS; with its copy they had lost 15%)
    (252, 512, 384, "pp 64x64"),  # 0.76 -> 0.89x
    (243, 448, 408, "pp 64x64"),  # K % 16 == 8: 0.71 -> 0.90x (ab/bf16_few_tiles_off_sector.json)
    (208, 1040, 440, "pp 64x64"),  # 40% of the SMs, K % 16 == 8: 0.76 -> 0.89x
    (617, 352, 2216, "pp 64x64"),  # K % 16 == 8 but the Triton tier's split 8: 0.66 -> 0.73x
    # `m128_small`: 64 < M <= 128 where even 64 x 64 tiles are few
    (67, 256, 640, "pp 64x64"),  # 4 tiles of 64 x 128: 0.76 -> 0.90x
    (105, 960, 688, "pp 64x64"),  # 0.77 -> 0.91x
    (100, 2304, 640, "pp 64x128"),  # 72 tiles of 64 x 64: not few
])
def test_a16w16_short_k_few_tiles_take_the_ping_pong(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want, source
    configs.validate_config(cfg, backend="cuda")


def test_model_mirrors_of_kernel_and_dispatch_constants():
    from gemmkit.ops import dispatch
    assert model.SECTOR_ELEMENTS * 2 == dispatch.PITCH_SECTOR  # bf16


@pytest.mark.parametrize("M, N, K, want", [
    # `short_k_pingpong` (ab/bf16_short_k_coop*.json, bf16_short_k_pingpong_heldout.json): the ping-pong's 64 x 128
    # where a coop tile would serve a few whole K steps
    (4303, 640, 256, "pp 64x128"),  # 0.77 -> 0.93x
    (5987, 456, 384, "pp 64x128"),  # 0.82 -> 1.02x
    (14696, 584, 448, "pp 64x128"),  # 0.83 -> 1.06x
    (15598, 3504, 512, "coop 128x256"),  # K = 512: -17% there
    (6183, 336, 416, "coop 128x256"),  # a partial last K step (416 % 64): the held-out rows lost up to 43%
    (8848, 3200, 896, "coop 128x256"),  # K past the bound
])
def test_a16w16_short_k_pingpong(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want, source
    assert "short_k_pingpong" not in str(configs.serve("a16w16", arch.get("gfx942"), M, N, K)[1])  # sm_90 only


@pytest.mark.parametrize("M, N, K, want", [
    # `short_k_rounds` (ab/bf16_short_k_rounds.json, _verify.json, H100): at K <= 1024 the ping-pong's 64 x 128 where
    # the 128 x 128's or the coop's rounds x area is 1.2x its own (K <= 512) or 1.25x (K <= 1024)
    (542, 7168, 384, "pp 64x128"),  # 280 tiles of 128 x 128 (3 rounds) against 616 of 64 x 128 (5): 1.5x, +14%
    (5957, 384, 512, "pp 64x128"),  # the coop's 141 tiles (2 rounds of 128 x 256), 1.33x: +24%
    (4792, 640, 768, "pp 64x128"),  # K = 768 at 1.33x: +17%
    (6940, 1408, 1024, "coop 128x256"),  # K = 1024 at 1.2x: under that K's 1.25 (-8% there)
    (3258, 9040, 384, "pp 128x128"),  # 1.0x: the rounds even (-3%)
    (1182, 4096, 449, "coop 128x160"),  # K % 64 != 0: a partial last K step (left alone; 448: the 64 x 128)
    (3000, 4096, 2048, "coop 128x256"),  # K past the bound
])
def test_a16w16_short_k_rounds(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want, source
    assert ("short_k_rounds" in source) == (want == "pp 64x128"), source


@pytest.mark.parametrize("M, N, K, want", [
    # `off_sector` (ab/bf16_offsector_coop.json, bf16_offsector_coop_heldout.json): K % 16 == 8, the coop with the
    # fewer rows a step of the operand dispatch leaves off sectors
    (1500, 7000, 3000, "coop 256x128"),  # x copied (M <= N), w's rows off sectors: 0.72 -> 0.86x
    (486, 6216, 11304, "coop 256x128"),  # was the 64 x 192 split: 0.58 -> 0.84x
    (3553, 2952, 2664, "coop 128x256"),  # w copied (M > N), x's rows off sectors: 0.81 -> 0.83x
    (1844, 1480, 4376, "coop 128x256"),
])
def test_a16w16_off_sector(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want and cfg["num_stages"] == 4 and "`off_sector`" in source, source
    G.check_feasible(G.fallback_stages(cfg, H200, 2, 2, True), H200, 2, 2, tma=True)


@pytest.mark.parametrize("M, N, K, want, split", [
    # the other orientation where it fills GLUON_WAVE_MARGIN more of its waves, K split to one wave under one round
    # of tiles (ab/bf16_offsector_served.json: the fewer-rows tile on a partial round 0.57-0.82x)
    (777, 1536, 8008, "coop 128x256", 3),  # 48 tiles of 256 x 128 (55%) 0.59x, 42 of 128 x 256 split 3 1.08x
    (1028, 6928, 1480, "coop 128x256", 1),  # 82% against 55%: 0.82 -> 1.12x
    (1018, 1544, 7928, "coop 256x128", 2),  # 52 tiles either way: split 2, 0.57 -> 0.82x
    (3466, 9544, 11208, "coop 256x128", 1),  # 96% against 85%: the fewer rows of w (0.97x; 128 x 128 0.71x)
])
def test_a16w16_off_sector_fill(M, N, K, want, split):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert _kernel(cfg) == want and cfg["NUM_KSPLIT"] == split and "`off_sector`" in source, source
    assert split == 1 or split * -(-M // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"]) <= H200.num_cus


@pytest.mark.parametrize("M, N, K, split", [
    # `short_split` (ab/bf16_few_tiles_triton_fallback.json, bf16_short_split_heldout.json): where even `few_tiles`
    # fills too few SMs, the ping-pong's 64 x 64 split in ranges of 1024+, not the Triton tier's split
    (234, 344, 2656, 2),  # the Triton 64 x 128 split 10: 0.54 -> 0.89x
    (165, 648, 4592, 4),  # 0.35 -> 1.08x
    (452, 296, 3792, 3),  # held out: 0.35 -> 1.12x
    (523, 912, 8056, 0),  # 135 tiles of 64 x 64, a second round: the Triton split (0.84x; 64 x 64 0.63x)
    (512, 128, 2880, 0),  # one column of 128 (GPT-OSS's router): the Triton split
])
def test_a16w16_short_split(M, N, K, split):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert ("`short_split`" in source) == bool(split), source
    if split:
        assert _kernel(cfg) == "pp 64x64" and cfg["NUM_KSPLIT"] == split, cfg
        assert ("model:few_tiles_64x64_split", dict(cfg, NUM_KSPLIT=2)) in configs.model_configs("a16w16", "sm_90")
    else:
        assert cfg.get("backend") != "gluon", cfg


@pytest.mark.parametrize("M, N, K, want, split", [
    # `long_k_split` (ab/bf16_coop_split.json, bf16_long_k_split_heldout.json): at K >= 12288, where the coop's tiles
    # take under one round and the rules' answer fills few SMs unsplit, the coop split along K to one wave
    (2733, 256, 26640, "coop 128x256", 6),  # `narrow_wave`'s 64 x 128 (86 tiles): 0.66 -> 1.04x
    (1319, 768, 21888, "coop 128x256", 4),  # the 64 x 192: 0.77 -> 0.97x
    (1067, 640, 22112, "coop 256x128", 5),  # `few_tiles`' 64 x 128; 256 x 128 fills more: 0.72 -> 0.88x
    (2278, 256, 23424, "coop 128x256", 7),  # held out: 0.74 -> 0.93x
    (973, 1088, 11072, None, 1),  # K under 12288: the split lost (1.05 -> 1.00x)
    (777, 1536, 8000, None, 1),  # (0.87 -> 0.78x)
    (1319, 768, 21896, None, 0),  # K % 16 == 8: rows off sectors (unmeasured there)
    (5000, 5000, 20000, None, 1),  # the coop's tiles past one round
])
def test_a16w16_long_k_split(M, N, K, want, split):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    assert ("`long_k_split`" in source) == bool(want), source
    if want:
        assert _kernel(cfg) == want and cfg["NUM_KSPLIT"] == split and cfg["num_stages"] == 4, cfg
        assert split * -(-M // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"]) <= H200.num_cus
        assert ("model:off_sector_" + want.split()[1] + "_split", dict(cfg, NUM_KSPLIT=2)) in \
            configs.model_configs("a16w16", "sm_90")
    assert "`long_k_split`" not in configs.serve("a16w16", arch.ARCHS["gfx942"], M, N, K)[1]


@pytest.mark.parametrize("M, N, K", [
    (1500, 7000, 3072),  # rows on sectors
    (1500, 7000, 3001),  # K % 8 != 0: pad_k's aligned copies of both
    (1500, 7000, 3004),  # K % 16 == 12 (and K % 8 != 0)
    (model.OFF_SECTOR_MIN_M - 1, 7000, 3000),
    (model.OFF_SECTOR_MAX_M + 1, 7000, 3000),
    (1500, model.OFF_SECTOR_MIN_N - 8, 3000),
])
def test_a16w16_off_sector_only_where_measured(M, N, K):
    assert "`off_sector`" not in configs.serve("a16w16", H200, M, N, K)[1]
    assert "`off_sector`" not in configs.serve("a8w8", H200, 1500, 7000, 3000)[1]  # 16-bit rows only


@pytest.mark.parametrize("M, N, K, want", [
    # `wide_one_wave`: where `gluon_waves` would serve the ping-pong's 128 x 128 above M = 512, one wave of its 64-row
    # split tile that fills the most of the SMs' area (ab/bf16_wide_one_wave_*.json)
    (695, 1664, 2688, (64, 144, 1, 4)),  # 78 tiles of 128 x 128 fill 53%, 132 of 64 x 144 95% (0.77 -> 1.05x)
    (1588, 896, 896, (64, 192, 1, 4)),  # 64 x 192 fills 88% (0.80 -> 1.00x)
    (3810, 304, 3424, (64, 160, 1, 4)),  # 64 x 160 fills 86%, the 64 x 192 71% (0.73 -> 0.80x)
    # not in `narrow_pingpong`'s place (the 64 x 192 served: mixed, -16% to +14%), nor at M <= 512 (`split_widths`)
    (777, 1536, 8000, None),
    (480, 2176, 768, None),
    # nor where the 64-row tiles take a second wave, nor on narrow N (N <= 256: `narrow_wave`'s)
    (1200, 1664, 2688, None),
    (3000, 256, 2048, None),
])
def test_a16w16_wide_one_wave(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if want is None:
        assert "wide_one_wave" not in source, source
    else:
        assert tile(cfg) == want and cfg.get("backend") == "gluon" and cfg["num_stages"] == 8, source
        assert -(-M // 64) * -(-N // cfg["BLOCK_SIZE_N"]) <= H200.num_cus  # one wave


@pytest.mark.parametrize("M, N, K, want", [
    # `narrow_wide`: over `narrow_pingpong`'s one-wave 64 x 192 above M = 512, the 64 x 160 where its tiles take one
    # wave too and cover at most 0.96x the 64 x 192's columns (ab/bf16_narrow_wide_*.json)
    (2021, 640, 5504, 160),  # 128 tiles either way, 640 columns against 768 (1.03 -> 1.13x)
    (842, 1416, 9016, 160),  # 126 tiles of 160 on 1440 columns, 112 of 192 on 1536 (0.69 -> 0.73x)
    (3941, 304, 6576, 160),  # N = 304: two tiles of either width (0.71 -> 0.78x)
    (1599, 768, 5632, 192),  # 800 columns against 768: more SMs run smaller tiles (-7%)
    (574, 2048, 8064, 192),  # 2080 against 2112 (0.98x; -6%)
    (777, 1536, 8000, 192),  # 1600 against 1536
    (2594, 464, 15392, 256),  # `long_k_coop`'s split 128 x 256 stays (the 64 x 160 lost 33% to it)
    (1000, 1408, 6144, 192),  # 144 tiles of 64 x 160 (on 1440 columns): past one wave
    (480, 640, 8192, None),  # M <= 512: not `narrow_pingpong`'s unsplit tile
])
def test_a16w16_narrow_wide(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if want == 160:
        assert tile(cfg) == (64, 160, 1, 4) and cfg["num_stages"] == 8 and "`narrow_wide`" in source, source
        assert -(-M // 64) * -(-N // 160) <= H200.num_cus  # one wave
    else:
        assert "`narrow_wide`" not in source, source
    if want in (192, 256):
        assert cfg["BLOCK_SIZE_N"] == want and cfg.get("backend") == "gluon", (cfg, source)


def _check_coop_swap(target, M, N, K, tokens, rows, rule):
    """On `target`, `rule` serves (M, N, K) the cooperative swap-AB tile of `tokens` x `rows` weight rows, a valid
    config; or, with tokens None, the rule is not in the answer's source."""
    cfg, source = configs.serve("a16w16", target, M, N, K)
    if tokens is None:
        assert rule not in source, source
        return
    assert cfg.get("swap_ab") and cfg["num_warps"] == 8 and cfg.get("backend") == "gluon", source
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (tokens, rows) and f"`{rule}`" in source, source
    assert configs.validate_config(dict(cfg)) == {**configs.DEFAULTS, **cfg}


@pytest.mark.parametrize("M, N, K, tokens", [
    # `coop_swap`: at 128 < M <= 192, one tile of tokens in a split width on the wgmma's N, 128 weight rows a tile
    # (ab/bf16_coop_swap*.json)
    (138, 30848, 7552, 144),  # 241 tiles fill 87% of two rounds; the coop 128 x 256's rows half empty (0.69 -> 0.94x)
    (155, 16000, 4992, 160),  # 125 tiles, one round (0.77 -> 1.00x)
    (170, 28928, 12032, 192),
    (137, 14592, 31488, 144),  # held out (0.62 -> 0.92x)
    # over a 64-row ping-pong answer from 0.9x its fill (ab/bf16_coop_swap_over_pingpong*.json)
    (133, 12320, 920, 144),  # over `split_widths`' 64 x 144 at the same fill, 67% (0.66 -> 0.87x)
    (160, 10768, 3888, 160),  # held out (0.73 -> 0.94x)
    (187, 11216, 2632, None),  # 65% against the 64 x 144's 86%
    (169, 23296, 5760, None),  # over the 128 x 128 still 1.2x its fill (both 61%)
    # not at a short K (the coop's epilogue then unhidden: 18 of 23 held-out rows at K <= 448 lost up to 13%)
    (133, 28928, 256, None),
    # not where its tiles fill less, or not 1.2x more than the answer's (175 x 13184 x 30720: 0.71 against 0.85, -5%)
    (175, 13184, 30720, None),
    (132, 20480, 7936, None),
    (141, 3072, 4224, None),  # 24 weight tiles
    # nor outside 128 < M <= 192
    (128, 30848, 7552, None),
    (200, 30848, 7552, None),
])
def test_a16w16_coop_swap(M, N, K, tokens):
    if tokens is None:  # no cooperative swap tile from any rule
        cfg, source = configs.serve("a16w16", H200, M, N, K)
        assert not cfg.get("swap_ab") or cfg["num_warps"] == 4, source
    else:
        _check_coop_swap(H200, M, N, K, tokens, 128, "coop_swap")


@pytest.mark.parametrize("M, N, K, tokens", [
    # `swap_rounds`: at 192 < M <= 1536, the cooperative swap-AB tile over several token tiles where the answer's
    # rounds x tile area is over the width's margin times its own (ab/bf16_swap_rounds_fit.json)
    (301, 8448, 9296, 160),  # 132 tiles of 128 x 160 for 220 of 64 x 192: 0.62 -> 0.87x
    (478, 3328, 7680, 96),  # one round either way, 128 x 96 the smaller area (0.82 -> 0.91x)
    (929, 1168, 3584, 80),  # 0.89 -> 1.15x
    (1323, 14208, 1760, 192),  # over the coop 128 x 256 (0.98 -> 1.08x)
    # not where the answer has a tail split that the estimate counts in (1340 x 1744 x 10368 lost 6% with 160 tokens),
    # nor at the margin (777 x 1536 x 8000: 80 tokens exactly 1.2x, -3%), nor where a 128-row tile serves as well
    (1340, 1744, 10368, None),
    (777, 1536, 8000, None),
    (1024, 5760, 2880, None),
    # nor outside 192 < M <= 1536, nor at a short K
    (1600, 1168, 3584, None),
    (929, 1168, 448, None),
    # past M = 1536 at N <= 768 only, to M = 8192 (results/h100/ab/bf16_swap_rounds_large_m_*.json, _narrow_verify.json)
    (5185, 480, 10192, 160),  # 0.50 -> 1.01x cuBLAS (H100)
    (7642, 368, 3320, 192),  # 0.83 -> 0.99x
    (4243, 256, 768, 80),  # 0.85 -> 0.93x
    (4776, 1376, 680, None),  # N over 768: 96 tokens lost 19% here
    (9000, 480, 10192, None),  # past M = 8192, where nothing was measured
    (3416, 672, 2560, None),  # nor over an answer not 128 x 128 / 128 x 256 / 64 x 192 (here the coop 128 x 192)
    # `swap_rounds_wide_n`: over the coop's answer past N = 1792 no 80- or 96-token tile
    # (ab/bf16_swap_rounds_narrow_picks*.json)
    (698, 3432, 12040, 192),  # 80 tokens 0.72 / 0.70x cuBLAS (H200 / H100), 192 1.01 / 1.14x
    (1306, 1824, 11720, 192),  # 80 tokens 0.73 / 0.69x, 192 1.02 / 1.10x
    (861, 3600, 5480, None),  # 96 tokens 0.77 / 0.74x, the coop 256 x 128 0.84 / 1.00x
    (458, 3232, 9024, 96),  # over the ping-pong's 128 x 128 they stay: the answer 0.96 / 0.99x the 96 tokens
    (1200, 1248, 9856, 96),  # and up to 1792 columns: 96 tokens 0.93 / 1.02x, the answer 0.91 / 0.99x
    (1040, 1152, 2656, 80),  # 80 tokens 1.03 / 1.11x, the answer 0.91 / 1.02x
    # `swap_rounds_wide_pp`: over the ping-pong's 128 x 128 past N = 12000, 160 tokens for the 80 / 96-token pick,
    # whatever its margin (results/h100/ab/bf16_swap_rounds_narrow_over_pp_wide_n.json, H100)
    (398, 22496, 7416, 160),  # 80 tokens 0.58x cuBLAS, 160 0.82x
    (268, 26456, 5752, 160),  # 96 tokens 0.70x, 160 0.74x (its area margin says no: the answer 0.69x)
    (386, 12816, 11336, 160),  # 80 tokens 0.90x, 160 1.03x
])
@pytest.mark.parametrize("target", ["H200", "H100"])
def test_a16w16_swap_rounds(M, N, K, tokens, target):
    _check_coop_swap(arch.get(target), M, N, K, tokens, 128, "swap_rounds")


@pytest.mark.parametrize("M, N, K, tokens", [
    # `tall_swap`: at 256 < M <= 640, K >= 8192, over the 64 x 192 ping-pong or an 80 / 96-token swap past 1.5 waves,
    # the cooperative swap-AB tile on 256 weight rows x the token width that fills its waves most, at >= 0.8
    # (results/h100/ab/bf16_deep_long_k_menu.json, then _tall_swap_heldout.json and _tall_swap_verify.json)
    (525, 7920, 17088, 144),  # the 64 x 192: 0.69 -> 0.88x cuBLAS
    (276, 21792, 11072, 96),  # `swap_rounds`' 96 tokens on 128 rows: 0.68 -> 0.90x
    (261, 30096, 25648, 144),  # held out: 0.52 -> 0.91x
    (391, 20016, 9512, 144),  # over 80 tokens, below their fill: 0.57 -> 0.87x
    # over the 128 x 128 where its rounds x tile area exceed the tall tile's by the width's margin (1.1 at 144 / 160,
    # 1.2 at 96): results/h100/ab/bf16_tall_swap_over_128.json
    (420, 9952, 12432, 144),  # +25%
    (427, 10416, 29904, 144),  # +28%
    (438, 19968, 13184, None),  # 96 tokens at 1.11: -8%
    (425, 28928, 10624, None),  # 144 tokens at 1.04: -7%
    # not where the 64 x 192 fills its waves better by over 1 / 0.9 (381 x 29376: 0.99 against 0.86, -20%), nor under
    # the fill (284 x 17952: 0.79, a tie), nor within 1.5 waves (621 x 2352: -42%), nor past M = 640 or under K = 8192
    (381, 29376, 11968, None),
    (284, 17952, 10176, None),
    (621, 2352, 23360, None),
    (700, 7920, 17088, None),
    (525, 7920, 6016, None),
])
@pytest.mark.parametrize("target", ["H200", "H100"])
def test_a16w16_tall_swap(M, N, K, tokens, target):
    _check_coop_swap(arch.get(target), M, N, K, tokens, 256, "tall_swap")


def test_swap_rule_widths_have_margins():
    """Each token width `swap_rounds` and `tall_swap` may pick has its margin (an added width is measured first)."""
    from gemmkit.configs.model import swap
    rules = model.OP_RULES["a16w16"]
    assert set(rules["swap_rounds"]) <= set(swap.SWAP_ROUNDS_MARGIN)
    assert set(rules["tall_swap"]) <= set(swap.TALL_SWAP_128_MARGIN)


@pytest.mark.parametrize("M, N, K, want", [
    # `long_k_coop`: at K >= 12288 and 128 < M <= 4096, a split cooperative tile in a 64-row ping-pong answer's place
    # (ab/bf16_offsector_low_m.json, bf16_long_k_coop_*.json). Rows off 32-byte sectors: `off_sector`'s tile
    (197, 17832, 16472, (256, 128, 1, 8)),  # the 64 x 192 split 4: 0.57 -> 0.91x on 41% of the SMs against its 72%
    (235, 3592, 13016, (256, 128, 4, 8)),  # `one_wave`'s 64 x 128: 0.77 -> 1.08x
    (751, 648, 25048, (128, 256, 7, 8)),  # M > N: x's rows stay off sectors, 128 of them a step (0.56 -> 0.89x)
    # rows on sectors: the best-filling of 256 x 128, 128 x 256 and the coop widths
    (410, 784, 26224, (128, 160, 6, 8)),  # the 64 x 128 split 2: 0.70 -> 1.00x
    (201, 3744, 13632, (256, 128, 4, 8)),  # the 64 x 192 split 4: 0.68 -> 0.81x
    (1421, 288, 17648, (128, 144, 5, 8)),  # held out: 0.60 -> 0.97x
    (319, 1696, 23680, (128, 160, 4, 8)),  # `few_tiles`' 64 x 192 split 2 before: a tie (0.86 -> 0.85x)
    # not where the answer has 128 rows (388 x 3696 x 20472: 128 x 128 held out -24% to +20%), nor at K < 12288
    # (235 x 3592 x 12280, which the rule would take under a lower floor: -40% to +23% there), nor off sectors where
    # `off_sector`'s tile fills under 0.55 of the answer (182 x 592 x 16728), nor on sectors where the best coop tile,
    # its ranges at least 16 K steps, does not fill 1.1x more (1072 x 256 x 12672: split 14 ways it ran -19%; split 12
    # it fills as much as the answer), nor at K % 8 != 0 (dispatch's pad_k copies both operands: unmeasured)
    (388, 3696, 20472, None),
    (235, 3592, 12280, None),
    (182, 592, 16728, None),
    (1072, 256, 12672, None),
    (235, 3592, 13017, None),
])
def test_a16w16_long_k_coop(M, N, K, want):
    cfg, source = configs.serve("a16w16", H200, M, N, K)
    if want is None:
        assert "long_k_coop" not in source, source
        return
    assert "`long_k_coop`" in source, source
    assert tile(cfg) == want and cfg.get("backend") == "gluon" and not cfg.get("swap_ab"), source
    split = cfg["NUM_KSPLIT"]
    assert split == 1 or split * -(-M // cfg["BLOCK_SIZE_M"]) * -(-N // cfg["BLOCK_SIZE_N"]) <= H200.num_cus
    assert -(-K // cfg["BLOCK_SIZE_K"]) // split >= model.LONG_K_COOP_MIN_STEPS
    name = (f"coop_width_{cfg['BLOCK_SIZE_N']}" if cfg["BLOCK_SIZE_N"] < 256 and cfg["BLOCK_SIZE_M"] == 128 else
            f"off_sector_{cfg['BLOCK_SIZE_M']}x{cfg['BLOCK_SIZE_N']}") + ("_split" if split > 1 else "")
    assert any(n == "model:" + name for n, _ in configs.model_configs("a16w16", "sm_90")), name
    assert "long_k_coop" not in configs.serve("a16w16", arch.ARCHS["gfx942"], M, N, K)[1]
    assert "long_k_coop" not in configs.serve("a8w8", H200, M, N, K)[1]


@pytest.mark.parametrize("M, N, K, width", [
    # `coop_one_wave` (configs/model/widths.py; H100, results/h100/ab/bf16_menu_oracle*.json,
    # bf16_coop_one_wave_over_64.json, _verify.json): over a 64-row ping-pong answer at K > 1024, the coop's split tile
    # whose 128-row tiles take one wave and fill 70% of it
    (395, 5920, 1944, 192),  # 0.59 -> 0.86x cuBLAS
    (1373, 2008, 13152, 192),  # 0.64 -> 0.94x
    (249, 11584, 3632, 192),  # over `narrow_pingpong`'s split 64 x 192: 0.82 -> 0.99x
    (1024, 2880, 4096, 192),  # GPT-OSS o_proj: 0.96 -> 1.05x
    (256, 12288, 12288, 192),  # Mistral-Large-2 o_proj: 0.91 -> 0.98x
    (433, 5512, 640, None),  # K <= 1024: 0.89x of the answer
    (138, 4176, 2944, None),  # no width's tiles fill 70% of one wave
])
def test_a16w16_coop_one_wave(M, N, K, width):
    for target in ("H100", "H200"):
        cfg, source = configs.serve("a16w16", arch.get(target), M, N, K)
        if width is None:
            assert "coop_one_wave" not in source, source
            continue
        assert ("model:coop_width_%d" % width, cfg) in configs.model_configs("a16w16", "sm_90"), source
        assert "(`coop_one_wave`)" in source, source
    assert "coop_one_wave" not in configs.serve("a16w16", arch.get("gfx942"), M, N, K)[1]


@pytest.mark.parametrize("M, N, K, h100, h200", [
    # `tail_waves_off_line` (configs/model/gluon_waves.py, results/h100/ab/bf16_tail_waves_off_line_*.json): at K >=
    # COOP_TAIL_MIN_K with rows off 128-byte lines, on a card of the H100's HBM bandwidth, the coop 128 x 256 unless
    # the ping-pong's tail-split fill is 1.4x its own (786 x 7712 x 23312, 1.22x: 0.66 -> 0.82x cuBLAS on the H100)
    (786, 7712, 23312, "coop 128x256", "pp 128x128"),
    (595, 10432, 15968, "coop 128x256", "pp 128x128"),  # and no 80-token `swap_rounds` over it (lost all 11 there)
    (786, 7712, 23296, "pp 128x128", "pp 128x128"),  # rows on lines: `tail_waves` as before on both cards
    (786, 7712, 8016, "pp 128x128", "pp 128x128"),  # K under COOP_TAIL_MIN_K: as before
    (134, 9024, 30112, "pp 128x128", "pp 128x128"),  # off lines, the ping-pong fills 1.75x the coop: kept (+46%)
    # nor a 96-token one (results/h100/ab/bf16_swap_rounds_off_line_96.json: 0.698 -> 0.844x over 31 rows); K % 16 == 8
    # here, so `off_sector`'s 256 x 128 (the 96 tokens 0.83x, the coop's 128 x 256 1.11x, its 256 x 128 1.25x); on the
    # H200 `swap_rounds`' 96 tokens, which `tall_swap` puts on 256 weight rows (over 80 / 96 tokens 18 of 18 up, H100)
    (417, 6552, 14792, "coop 256x128", "coop 96x256"),
])
def test_a16w16_tail_waves_off_line(M, N, K, h100, h200):
    for target, want in ((arch.get("H100"), h100), (arch.get("H200"), h200)):
        cfg, source = configs.serve("a16w16", target, M, N, K)
        assert _kernel(cfg) == want, (target.name, source)
    cfg, source = configs.serve("a16w16", arch.get("H100"), 1435, 7216, 14736)  # 160 tokens still swap (+12%)
    assert cfg.get("swap_ab") and cfg["BLOCK_SIZE_M"] == 160, source
