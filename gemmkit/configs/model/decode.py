"""Decode (M <= 64): fp8's Gluon ping-pong on 64 x 64 (`decode_pingpong`), bf16's swap-AB bucket widened into one round
(`swap_wide`) or split along K on the Triton tier where its tiles are few (`decode_split`); and where no rule answered
(`fitted`), the bucket fitted, then fp8's deeper ring (`unsplit_stages`) and wider tile (`decode_wide`) at M <= 16.
"""
from __future__ import annotations

from .base import FEW_TILES, GLUON_WAVE_MARGIN, PINGPONG_ROUND, SMALL_PINGPONG, Call, wave_efficiency
from .fitting import fit
from .one_wave import ONE_WAVE_MIN_M

# What was measured for each rule of this module (H200 unless a card is named; against the vendor in the same
# process; docs/PERF.md "The config model"):
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
#   decode_wide  at M <= DECODE_WIDE_MAX_M (the weights' read is the time) a Triton bucket's tile widened to this many
#                columns (fitted as the bucket's tile is: K split where its tiles are few) where that keeps more CTAs in
#                flight: within one wave of the CTAs the SMs hold (`operand_bytes` sizes the rings), more CTAs than the
#                bucket's own fitted tile; beyond it, waves filled to DECODE_WIDE_FILL. Per-token fp8, 16 x 64 -> 16 x
#                128 (BK 256, 4 stages: a 144 KB ring by `operand_bytes`, one CTA an SM; the compiled kernel holds 112
#                KB of it in shared memory, docs/ISA.md), ab/fp8_decode_wide.json (H200, 45 layers of the suites at M =
#                1 and 16, against torch._scaled_mm): where the 16 x 64 tiles were 72-80 unsplit (one CTA on most SMs)
#                and 16 x 128 split 3 made 108-120, +5-50% (4608 x 36864: 1.61 -> 2.41x); the TP shard's 28672 x 8192 /
#                the 28672 x 4096 layer (224 tiles, 85% of two waves) +21% (1.23 -> 1.50x, ab/fp8_decode_tp_shard.json);
#                the same CTA count split 2 instead of unsplit mixed (-8% at K = 2048 to +7%), and 280 / 288 tiles
#                (71-73% of three waves) -5 / -9%: the rule leaves those. Over the 90 rows 1.525 -> 1.587x geomean
#                (every row: 1.595), the worst change -3.6% (73728 x 4608, 576 tiles). Block scale, the same rule over
#                its 16 x 64 x 128 bucket (the wide tile split by `ctas_per_sm` as the bucket's; 72 KB rings, three an
#                SM), ab/blockscale_decode_wide.json (against cuBLASLt's block-scaled GEMM): the 16 rows it changes
#                (4864-7168 columns with long K, DeepSeek's lm_head) 1.196 -> 1.252x, 15 up (M = 16 rows 0.95-0.98 ->
#                1.05-1.08x), lm_head M = 1 -1%; where it leaves 16 x 64 (224-1152 wide tiles within the three-a-SM
#                slots) 16 x 128 unsplit ran -11% to +6%. (Block scale's `decode_pingpong` takes M = 8-16 first where
#                its 64 x 64 tiles are 66-264.)
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
UNSPLIT_MIN_K = 7168  # ... and K at least this (K <= 5120 lost with the same waves: above)
DECODE_WIDE_MAX_M = 16  # `decode_wide`: the M_LEQ_16 bucket (at 17-64 `decode_pingpong`'s Gluon tiles)
DECODE_WIDE_FILL = 0.8  # `decode_wide` beyond one wave: the least share of its waves its tiles fill
# `decode_wide_k`: the least share of its waves (one CTA an SM: a partial last wave idles more of the stream) and the
# least K (K = 3072: 12 steps of 256) it serves; fitted on ab/blockscale_decode_wide_k.json's held-out shapes (320
# tiles filling 81% lost 9-13%, 352 at K = 3072 5-8%), the suite's rows fill >= 85%
DECODE_WIDE_K_FILL, DECODE_WIDE_K_MIN_K = 0.84, 4096
DECODE_SPLIT_MIN, DECODE_SPLIT_MIN_K = 3, 4096  # `decode_split`: the least K split (split 2 lost) and K (2048 lost)
DECODE_SPLIT_WIDE_MIN_K = 2048  # ... and K on the bucket's 64 token rows (32 < M < 64; see `decode_split` above)


def rule_decode_pingpong(c: Call):
    """`decode_pingpong` (fp8): at DECODE_PINGPONG_MIN_M <= M <= 64 (block scale from `decode_pingpong_from` rows,
    below DECODE_PINGPONG_MIN_M only up to one round of its consumers, or at M >= DECODE_PINGPONG_WIDE_MIN_M on
    DECODE_PINGPONG_WIDE_SMS tiles an SM: `decode_pingpong_wide`) the large-M bucket's Gluon ping-pong on 64 x 64
    where its tiles are not few."""
    low = c.rules.get("decode_pingpong_from") or DECODE_PINGPONG_MIN_M
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


def rule_swap_wide(c: Call):
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


def rule_decode_split(c: Call):
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


def fitted(c: Call):
    """No rule answered: the bucket `fit`ted (split toward `ctas_per_sm` where the op has one), then fp8's
    `unsplit_stages` deeper ring at M <= 16 and its `decode_wide` tile where it keeps more CTAs in flight."""
    rules, cfg, M, N, K, num_cus, shared_mem = c.rules, c.cfg, c.M, c.N, c.K, c.num_cus, c.shared_mem
    resident = None
    if rules.get("operand_bytes"):  # CTAs an SM holds at once: its shared memory over one CTA's operand ring
        ring = (cfg["num_stages"] * (cfg["BLOCK_SIZE_M"] + cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_K"]
                * rules["operand_bytes"])
        resident = max(1, shared_mem // ring)
    tile, notes = fit(cfg, M, N, K, num_cus, ctas_per_sm=rules.get("ctas_per_sm"), resident=resident)
    deep = rules.get("unsplit_stages")
    if deep and rules.get("operand_bytes") and not c.amd and M <= UNSPLIT_MAX_M and K >= UNSPLIT_MIN_K \
            and tile.get("backend") != "gluon" and tile.get("NUM_KSPLIT", 1) == 1 and tile["num_stages"] < deep:
        tiles = -(-M // tile["BLOCK_SIZE_M"]) * -(-N // tile["BLOCK_SIZE_N"])
        fill = {}
        for stages in (tile["num_stages"], deep):
            ring = (stages * (tile["BLOCK_SIZE_M"] + tile["BLOCK_SIZE_N"]) * tile["BLOCK_SIZE_K"]
                    * rules["operand_bytes"])
            fill[stages] = wave_efficiency(tiles, max(1, shared_mem // ring) * num_cus)
        if fill[deep] > GLUON_WAVE_MARGIN * fill[tile["num_stages"]]:
            notes = notes + [f"K unsplit: {tiles} tiles fill {fill[deep]:.0%} of the CTAs the SMs hold at {deep} "
                             f"stages, {fill[tile['num_stages']]:.0%} at {tile['num_stages']}: a {deep}-stage ring"]
            tile = dict(tile, num_stages=deep)
    wide_n = rules.get("decode_wide")
    if wide_n and rules.get("operand_bytes") and not c.amd and M <= DECODE_WIDE_MAX_M \
            and tile.get("backend") != "gluon" and cfg["BLOCK_SIZE_N"] < wide_n:
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
