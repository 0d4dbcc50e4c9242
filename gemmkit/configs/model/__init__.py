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
                  ──► num_warps 4 under a 128 x 128 tile (two warpgroups on a small tile starve each wgmma)

Why split before shrinking (H200, bf16, against cuBLAS, docs/PERF.md "The config model"): a big tile keeps its
wgmma and its reuse; on 4096 x 256 x 16384 a 128 x 256 tile split 4 ways ran 0.90x where 64 x 128 tiles ran 0.47x,
and on 256 x 2880 x 4096 64 x 256 split 2 ran 0.67x against 0.57x. Where K is too short to split enough (GPT-OSS's

Before fitting, `choose` applies what is known of one op's kernels (`OP_RULES`, op_rules.py: the rules an op runs and
the tiles they serve). Each rule is one function of the call (`Call`) that answers (config, notes) or passes (None).
The first of RULES that answers serves (one that answers with the bucket itself ends the search with it as it is);
where none does, the bucket is fitted (`decode.fitted`). Then each of AFTER may replace that answer, in order:

    bucket for M ──► RULES, the first that answers (module.function      when: what)
        one_wave.rule_narrow_wave          N <= 256 above M = 256: one wave of small ping-pong tiles
        one_wave.rule_narrow_n             N in one tile column: a 64-row Triton tile split, or `few_tiles`
        one_wave.rule_one_wave             64 <= M <= 256: one wave of small ping-pong tiles
        fitting.rule_cdna                  a CDNA Gluon bucket: the Triton tier where its tiles are few
        sectors.rule_off_sector            bf16, K % 16 == 8: the coop oriented against the rows off sectors
        gluon_waves.rule_gluon_waves       bf16's coop bucket against the ping-pong's tiles, by their waves
        decode.rule_decode_pingpong        fp8, 17 <= M <= 64: the Gluon ping-pong on 64 x 64
        large_bucket.rule_large_few_tiles  fp8, M > 256, few large-M tiles: the ping-pong, or the Triton tier split
        large_bucket.rule_wide_share       64 < M <= 256: a Gluon tile by the share of the SMs it fills
        decode.rule_decode_split           bf16, M < 64, few swap-AB tiles: the Triton tier split along K
        decode.rule_swap_wide              bf16, M < 64: the swap-AB tile widened into one round
        gated.rule_gated_rows              the gated GEMM's 64-row tile
        decode.fitted                      none answered: the bucket `fit`ted; fp8's decode ring and tile, M <= 16
                 ──► AFTER, each over the answer, in order
        sectors.long_k_split               bf16, long K, few coop tiles: the coop split along K
        sectors.long_k_coop                bf16, long K: a split coop tile in a 64-row ping-pong tile's place
        gluon_waves.narrow_wide            bf16: the 64 x 160 in a one-wave 64 x 192's place
        swap.coop_swap, swap.swap_rounds   bf16, 128 < M <= 1536 (8192 at N <= 768): the cooperative swap-AB tile
        widths.coop_one_wave               bf16, K > 1024: one wave of the coop's split tiles over a 64-row tile
        swap.tall_swap                     bf16, 256 < M <= 640, K >= 8192: the swap-AB tile on 256 weight rows
        gated.gated_one_wave               the gated GEMM: the Gluon cooperative gated tile in one wave
                 ──► (config, notes): `gemmkit configs` prints the notes, each naming the rule that wrote it

The rest of the package: base.py (the call, how full a launch keeps the SMs, shared thresholds and tiles), tail.py
(the kernels' tail split, which the rules count), tables.py (where the model serves in a shape file's place:
configs.serve), few_tiles.py and widths.py (tiles `gluon_waves` chooses among). Each rule's thresholds sit beside it
with what they were fitted and held out on.

Shape files (`<OP>-N=<N>-K=<K>.json`) are measured for their shape and are served as they are; so is a `config=`
argument. Gluon buckets are not fitted (only `choose`'s rules touch them): their kernels have their own tile rules
(kernels/gluon/hopper_plan.py) and their split-K is fitted by the kernel (hopper_host.fit_split_k).

Constraints:
  - power-of-two tiles only (a split tile, BLOCK_SIZE_N in configs.SPLIT_N, is served as it is; `wide_one_wave` and
    `coop_swap` write the split widths they measured, the latter as BLOCK_SIZE_M, the tokens of its swap-AB tile);
  - a fitted config is a smaller tile (or more K splits) of a valid one: it fits the shared memory the bucket fit;
  - the result depends on (M, N, K) and the target's SM count only: one config per shape and device;
  - the modules import one way, each only from those before it in: base, tail, fitting, few_tiles, widths, gated,
    op_rules, tables, gluon_waves, sectors, swap, one_wave, large_bucket, decode; this file imports them all.
"""
from __future__ import annotations

from . import decode, fitting, gated, gluon_waves, large_bucket, one_wave, sectors, swap, widths
from .base import GLUON_WAVE_MARGIN, MIN_SPLIT_STEPS, SECTOR_ELEMENTS, SMALL_PINGPONG, SMALL_TILE, Call, area_fill, \
    launch_fill, wave_efficiency
from .decode import DECODE_SPLIT_MIN
from .fitting import fit
from .gated import GATED_COOP_128X128
from .gluon_waves import NARROW_MAX_M
from .large_bucket import LARGE_FEW_STAGES
from .one_wave import NARROW_WAVE_MAX_N, NARROW_WAVE_PAD_SHARE, ONE_WAVE_MIN_M
from .op_rules import FITTED_OPS, OP_RULES
from .sectors import LONG_K_COOP_MIN_STEPS, OFF_SECTOR_MAX_M, OFF_SECTOR_MIN_M, OFF_SECTOR_MIN_N
from .swap import coop_swap_config, tall_swap_config
from .tables import FILL_OVER_TABLE, fills_better, past_its_round
from .tail import MAX_TAIL_SPLITS, split_count, tail_fill, tail_rule, tail_split
from .widths import COOP_TAIL_MIN_K, COOP_WIDTH_MAX_M, WIDE_ONE_WAVE_MAX_M, coop_tail, coop_width_config, \
    split_width_config

RULES = (one_wave.rule_narrow_wave, one_wave.rule_narrow_n, one_wave.rule_one_wave, fitting.rule_cdna,
         sectors.rule_off_sector, gluon_waves.rule_gluon_waves, decode.rule_decode_pingpong,
         large_bucket.rule_large_few_tiles, large_bucket.rule_wide_share, decode.rule_decode_split,
         decode.rule_swap_wide, gated.rule_gated_rows)
AFTER = (sectors.long_k_split, sectors.long_k_coop, gluon_waves.narrow_wide, swap.coop_swap, swap.swap_rounds,
         widths.coop_one_wave, swap.tall_swap, gated.gated_one_wave)


def choose(op: str, cfg: dict, large: dict | None, M: int, N: int, K: int, num_cus: int,
           shared_mem: int, amd: bool = False, hbm_gbps: float = 0.0) -> tuple[dict, list]:
    """(config, notes) for a default-table bucket `cfg` serving (M, N, K) on `num_cus` SMs of `shared_mem` bytes
    each (`amd`: a gfx942 / gfx950 target; `hbm_gbps`: its HBM's bandwidth, 0 where unknown), `large` the table's
    bucket for the largest M: the first of RULES that answers, else `cfg` fitted (`decode.fitted`); then each of AFTER
    over that answer (the package docstring)."""
    call = Call(OP_RULES.get(op, {}), cfg, large, M, N, K, num_cus, shared_mem, amd, hbm_gbps)
    hit = next((h for h in (rule(call) for rule in RULES) if h is not None), None)
    tile, notes = hit if hit is not None else decode.fitted(call)
    for after in AFTER:
        tile, notes = after(call, tile, notes)
    return tile, notes


__all__ = ["AFTER", "COOP_TAIL_MIN_K", "COOP_WIDTH_MAX_M", "DECODE_SPLIT_MIN", "FILL_OVER_TABLE", "FITTED_OPS",
           "GATED_COOP_128X128", "GLUON_WAVE_MARGIN", "LARGE_FEW_STAGES", "LONG_K_COOP_MIN_STEPS", "MAX_TAIL_SPLITS",
           "MIN_SPLIT_STEPS", "NARROW_MAX_M", "NARROW_WAVE_MAX_N", "NARROW_WAVE_PAD_SHARE", "OFF_SECTOR_MAX_M",
           "OFF_SECTOR_MIN_M", "OFF_SECTOR_MIN_N", "ONE_WAVE_MIN_M", "OP_RULES", "RULES", "SECTOR_ELEMENTS",
           "SMALL_PINGPONG", "SMALL_TILE", "WIDE_ONE_WAVE_MAX_M", "area_fill", "choose", "coop_swap_config",
           "coop_tail", "coop_width_config", "fills_better", "fit", "launch_fill", "past_its_round", "split_count",
           "split_width_config", "tail_fill", "tail_rule", "tail_split", "tall_swap_config", "wave_efficiency"]
