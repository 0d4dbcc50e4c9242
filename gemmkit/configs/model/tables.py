"""Where the config model serves a shape in a shape file's place (configs.serve asks): a bucket past the round of tiles
it was measured with (`past_its_round`), or one whose launch fills its waves poorly at an M other than its own
(`fills_better`).
"""
from __future__ import annotations

from .base import launch_fill
from .op_rules import OP_RULES


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
