"""Where the large-M Gluon bucket gives way at small M or few tiles: `wide_share` (64 < M <= 256: bf16's `wide_config`,
its `coop_widths` on one row of tiles, `narrow_pingpong` or `m128_tile`; fp8's large-M bucket or the ping-pong on
64 x 64), `m256_split` (few even as 64 x 64 tiles: the Triton tier's split), and fp8's few large-M tiles above M = 256.
"""
from __future__ import annotations

from .base import FEW_TILES, PINGPONG_ROUND, SMALL_PINGPONG, Call, wave_efficiency
from .fitting import fit
from .gluon_waves import NARROW_MIN_N, NARROW_PARTIAL_SHARE, narrow_split
from .widths import COOP_ROW_WAVES, coop_width_config, coop_width_fit

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
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
#   m128_tile    at 64 < M <= 128, where the Triton tier's M_LEQ_128 bucket (64 x 128) would run unsplit: the Gluon
#                ping-pong on the same tile, or its 128 x 128 (`wide_config`) where those are at least FEW_TILES of the
#                SMs. H200 against cuBLAS: 22 held-out rows (M = 67-127, N = 4416-9664) 0.76 -> 0.85x on 64 x 128, each
#                up 4-21%; 128 x 128 from 68 tiles 0.85-0.95x where 64 x 128 ran 0.68-0.82x, under 64 tiles it lost
#                10-25% (ab/bf16_m65_128_heldout.json; bf16_m65_128.json: 96 / 127 x 9216 x 3072 0.70 / 0.65 -> 0.88 /
#                0.82x)
#   m128_small   `m128_tile`'s shapes whose 64 x 64 tiles are under FEW_TILES of the SMs (N <= ~2048): 67 x 256 x 640,
#                77 x 384 x 352, 105 x 960 x 688 (4-16 tiles of 64 x 128) 0.76-0.77 -> 0.86-0.91x on 64 x 64
#                (ab/bf16_short_k_few.json)
SMALL_PINGPONG_MAX_M = 256  # the largest M the large-M Gluon bucket gives way to SMALL_PINGPONG at
M256_SPLIT_SHARE = 0.35  # `m256_split`: the Triton tier's split under this share of the SMs in 64 x 64 tiles
LARGE_FEW_STAGES = 4  # `large_few_split_k`: the Triton tier's ring (what its A/B ran)
LARGE_FEW_SPLIT_MAX_M = 1536  # `large_few_split_k`: up to this M (2015 x 256 x 25472 and 4096 x 256 x 16384 lost)


def rule_large_few_tiles(c: Call):
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


def rule_wide_share(c: Call):
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
        split, share_w = narrow_split(narrow, own, M, N, K)
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
