"""The Gluon dense kernels' tail split: where a persistent launch's tiles leave a partial last round, its R tiles run as
S K splits each (`tail_split`), and the bf16 kernels' rule for when (`tail_rule`).

    round 1 .. n     whole tiles, one a CTA
    last round       R = tiles % CTAs tiles  ->  R x S work items of cdiv(K steps, S) steps, fp32 partials
    reduce           sums each tail tile's S partials into y

The kernels' host code reads the count here (kernels/gluon/hopper_pingpong.tail_plan, the fp8 coop's
hopper_fp8_plan.tail_plan), because the config model counts it in the waves a tile fills (`tail_fill`).
TAIL_SPLIT, TAIL_MIN_K and TAIL_MIN_SAVING are read at each launch (benchmarks/ab_configs.py sets them here).
"""
from __future__ import annotations

from .base import wave_efficiency

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


def round_area(cfg: dict, M: int, N: int, K: int, num_cus: int) -> float:
    """A persistent, unsplit launch's time in tile areas (`swap_rounds`, `short_k_rounds`): its rounds of tiles on the
    SMs (a tail split's last round 1 / S of one: `tail_rule`, the power-of-two, unswapped tile) x BLOCK_SIZE_M x
    BLOCK_SIZE_N. The
    ping-pong's two consumers take turns on one tensor core and the cooperative kernel's share one tile, so a CTA's
    time is its tiles x their area in both (a tile's own rate, a narrow or split tile's dearer wgmma, is the rule's
    margin)."""
    bm, bn = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]
    tiles = -(-M // bm) * -(-N // bn)
    tail, splits = (0, 1) if bn & (bn - 1) or cfg.get("swap_ab") else tail_rule(tiles, num_cus, K, cfg["BLOCK_SIZE_K"])
    rounds = tiles // num_cus + 1 / splits if tail else -(-tiles // num_cus)
    return rounds * bm * bn
