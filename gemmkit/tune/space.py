"""The tuner's candidate configs, in one place: the one list of what `gemmkit tune` may try.

`search_space` is the dense ops' space (shaped by M, the op and the target; the Gluon families in
`gluon_space`, `gluon_swap_space`, `gluon_fp8_space`, `gluon_split_k_space`; the few-tile split-K
ones in `few_tile_space`). Each bench op (gemmkit/bench/ops.py) tunes over `op_space(name)`: the
dense space, filtered by `OP_SPACES` for an op whose kernel lacks a path. tune/__init__.py prunes,
samples and times these; bench/ imports nothing from here (the layers point one way: tune -> bench).
"""
from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable

from ..configs import SPLIT_N

__all__ = ["search_space", "few_tile_space", "gluon_space", "gluon_swap_space", "gluon_fp8_space",
           "gluon_split_k_space", "fill_splits", "FEW_TILE_WAVES", "GLUON_SPLIT_K_BK", "GLUON_SPLIT_K_TILES",
           "MAX_GLUON_SPLIT", "MIN_SPLIT_STEPS", "dense_space", "fp4_space", "batched_space", "gated_space",
           "split_cat_space", "OP_SPACES", "op_space"]


def _cfg(bm, bn, bk, warps, stages, group, persistent, tma, split):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group,
            "num_warps": warps, "num_stages": stages, "persistent": persistent, "tma": tma, "NUM_KSPLIT": split}


def search_space(M: int, N: int, K: int, target, op: str = "a16w16") -> list:
    """Every candidate config for one shape (before pruning), ordered, no duplicates.

    8-bit ops: K steps of 128 / 256 elements (the same bytes per step as 64 / 128 of bf16);
    block scale: K steps that divide the 128-wide scale blocks."""
    # GROUP_SIZE_M 8 at small M too: where the tuned M fits one row of tiles the group size changes
    # nothing, but the bucket also serves larger M, where 1 would re-read every w tile per tile row.
    if M <= 16:
        bms, bns, bks, groups, persist, splits = [16, 64], [32, 64, 128], [128, 256], [8], [False], [1, 2, 4, 8]
    elif M <= 64:
        bms, bns, bks, groups, persist, splits = [32, 64], [64, 128], [64, 128, 256], [8], [False], [1, 2, 4]
    elif M <= 256:
        bms, bns, bks, groups, persist, splits = [64, 128], [64, 128, 256], [64, 128], [8], [False, True], [1, 2]
    elif M <= 2048:
        bms, bns, bks, groups, persist, splits = [64, 128, 256], [128, 256], [64, 128], [8, 16], [False, True], [1]
    else:
        bms, bns, bks, groups, persist, splits = [128, 256], [128, 256], [64], [8, 16], [False, True], [1]
    if op in ("a8w8", "a8w8_blockscale"):
        bks = [64, 128] if op == "a8w8_blockscale" else [128, 256]
    tmas = [True, False] if target.is_nvidia else [False]
    out, seen = [], set()
    if op == "a16w16" and target.arch == "sm_90" and M >= 256:
        out += gluon_space(M) + gluon_split_k_space(M, N, K, target)
        seen.update(json.dumps(c, sort_keys=True) for c in out)
    if op == "a16w16" and target.arch == "sm_90" and M <= 64:
        out += gluon_swap_space(M)
        seen.update(json.dumps(c, sort_keys=True) for c in out)
    if op in ("a8w8", "a8w8_blockscale") and target.arch == "sm_90" and M >= 64:
        out += gluon_fp8_space(M, op)
        seen.update(json.dumps(c, sort_keys=True) for c in out)
    for bm, bn, bk, warps, stages, group, p, tma, split in itertools.product(
            bms, bns, bks, [4, 8], [2, 3, 4, 5], groups, persist, tmas, splits):
        c = _cfg(bm, bn, bk, warps, stages, group, p, tma, split)
        key = json.dumps(c, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(c)
    if op == "a16w16" and M > 64:
        for c in few_tile_space(M, N, K, target, groups[:1], persist, tmas):
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


FEW_TILE_WAVES = 2  # "few tiles": a candidate's output tiles fill under this many waves of the SMs


def few_tile_space(M: int, N: int, K: int, target, groups=(8,), persist=(False, True), tmas=(True, False)) -> list:
    """Extra a16w16 candidates at M > 64 for tilings that leave the SMs short of work (the
    skinny N = 576 / 1536 layers, M = 256 / 512 on N <= 10240): split-K 2 / 4 / 8 (the two-pass
    deterministic path: fp32 partials, then _splitk_reduce.py in fixed order), BLOCK_SIZE_N 64 and
    BLOCK_SIZE_M 64 at any M. Only tilings whose tile count is under FEW_TILE_WAVES x SMs (before
    the split) are offered, each with the splits up to the first that reaches that many work units
    (split s only if tiles x s/2 is still short), and no persistent split-K (under two waves there is
    nothing to persist over): a shape with many tiles keeps the space it had.

        512 x 576 (kv_a_proj), 132 SMs:  64 x 64 -> 8 x 9 = 72 tiles: split 2 / 4 -> 144 / 288 CTAs
                                        (split 8 not offered: 4 x 72 = 288 >= 2 x 132 already)
                                        128 x 128 -> 4 x 5 = 20 tiles: split 2 / 4 / 8 -> up to 160 CTAs
        4096 x 57344:                   128 x 128 -> 32 x 448 = 14336 tiles: nothing added
    prune() then drops the splits that leave < 2 K steps per split (and keeps its own >= 2 x SMs rule)."""
    out = []
    limit = FEW_TILE_WAVES * target.num_cus
    for bm, bn, bk, warps, stages, group, p, tma, split in itertools.product(
            [64, 128, 256], [64, 128, 256], [64, 128], [4, 8], [2, 3, 4, 5], groups, persist, tmas, [1, 2, 4, 8]):
        tiles = -(-M // bm) * -(-N // bn)
        # splits up to the first that fills the waves (half of it must not already), no persistence on top
        if tiles < limit and tiles * (split // 2) < limit and not (p and split > 1):
            out.append(_cfg(bm, bn, bk, warps, stages, group, p, tma, split))
    return out


def gluon_space(M: int = 256) -> list:
    """Candidates for the Gluon backend of gemm_a16w16 (sm_90, M >= 256). The ping-pong (num_warps 4,
    kernels/gluon/hopper_pingpong.py): the tiles its register budget allows, with the split tiles 64 x 192,
    64 x 160, 64 x 144 and 64 x 96 (128 + 64, 128 + 32, 128 + 16 and 64 + 32 columns, for rows a power-of-two width
    leaves SMs idle: the 144 / 160 ones won 4-18% at M = 256-512, docs/PERF.md), ring depths, group sizes. The cooperative kernel (num_warps 8, kernels/gluon/hopper_coop.py: two consumers share one tile):
    its split tile 128 x 192 and 128 x 128 with 6 stages (the sweeps: that one won 9 rows at M = 256 -
    2048), and at M >= 1024 its 128 x 256 / 256 x 128 tiles."""
    out = []
    for (bm, bn), stages, group in itertools.product([(128, 128), (64, 256), (64, 192), (64, 160), (64, 144), (64, 96)],
                                                   [4, 5, 6], [8, 16]):
        c = _cfg(bm, bn, 64, 4, stages, group, True, True, 1)
        c["backend"] = "gluon"
        out.append(c)
    coop = [((128, 192), s) for s in (4, 5)] + [((128, 128), 6)] + [((bm, bn), s) for bm, bn in ((128, 256), (256, 128))
                                                                   if M >= 1024 for s in (3, 4)]
    for ((bm, bn), stages), group in itertools.product(coop, [8, 16]):
        c = _cfg(bm, bn, 64, 8, stages, group, True, True, 1)
        c["backend"] = "gluon"
        out.append(c)
    return out


def gluon_swap_space(M: int) -> list:
    """Candidates for the Gluon ping-pong's transposed tile at decode sizes (gemm_a16w16, sm_90, M <= 64; "swap_ab":
    weight rows as the wgmma's M, tokens as its N): token tiles (BLOCK_SIZE_M) of 16 up to the first that holds M,
    64 or 128 weight rows (BLOCK_SIZE_N), 64- or 128-wide K steps, rings of 6 or 8 (an upper bound for the Gluon
    plan, but `prune` also drops what the Triton fallback of the same tile cannot fit: 64 x 64 x 128 / 8, for one).
    GROUP_SIZE_M 1: it groups weight tiles here, and each weight tile's token tiles then run back to back (the
    unswapped small-M rule, group 8, is about re-reading w across token-tile rows, which this order avoids).
    Measured in sweeps: 16 x 64 x 128 / 8 stages won most rows at M <= 16, 32 x 64 and 64 x 64 above
    (docs/PERF.md)."""
    out = []
    tokens = [t for t in (16, 32, 64) if t == 16 or t // 2 < M]  # 16, and each tile whose half is short of M
    for t, bn, bk, stages in itertools.product(tokens, [64, 128], [64, 128], [6, 8]):
        c = _cfg(t, bn, bk, 4, stages, 1, True, True, 1)
        c.update(backend="gluon", swap_ab=True)
        out.append(c)
    return out


def gluon_fp8_space(M: int, op: str = "a8w8") -> list:
    """Candidates for the FP8 Gluon kernel (kernels/gluon/hopper_pingpong_fp8.py; gemm_a8w8 fp8 and
    gemm_a8w8_blockscale on sm_90, M >= 64; the tuner drops them for int8). The ping-pong (num_warps 4): the
    64 x 64 / 64 x 128 tiles the block-scale tables serve at M <= 128, and (per-token only: in block mode it once spilled
    and has not been timed since) 128 x 128 with 3 stages. From M = 128 the cooperative
    128 x 128 x 128 (num_warps 8), 5 / 6 stages: the config the A8W8 tables serve from M = 256 and the block-scale
    ones from M = 256 (a sweep: 1.2-2.4x the Triton tier at M = 256-2048), with its tail split by the
    kernel's own rule. From M = 1024 the cooperative 256 x 128 x 128, 3 stages (+3-8% on block-scale
    rows with K <= 2048, -6-9% at K >= 7168; the tables serve it on three DeepSeek-V3 rows)."""
    pp = [((64, 64), 6, g) for g in (4, 8)] + [((64, 128), 4, 8)]
    if op == "a8w8" and M >= 128:
        pp += [((128, 128), 3, 8), ((128, 128), 3, 16)]
    coop = [((128, 128), s, g) for s in (5, 6) for g in (8, 16)] if M >= 128 else []
    coop += [((256, 128), 3, g) for g in (8, 16)] if M >= 1024 else []
    out = []
    for warps, tiles in ((4, pp), (8, coop)):
        for (bm, bn), stages, group in tiles:
            c = _cfg(bm, bn, 128, warps, stages, group, False, False, 1)
            c["backend"] = "gluon"
            out.append(c)
    return out


GLUON_SPLIT_K_BK = 64  # the K step of every Gluon split-K candidate (its ranges are counted in these steps)
GLUON_SPLIT_K_TILES = (("pp", 128, 128, 5), ("pp", 64, 192, 6), ("pp", 64, 96, 6), ("coop", 128, 192, 5),
                       ("coop", 128, 128, 6), ("coop", 128, 96, 6))  # (layout, BM, BN, num_stages)
MAX_GLUON_SPLIT = 16
# K steps a split range keeps at least: the config model's (configs/model/), one number for both
from ..configs.model import MIN_SPLIT_STEPS  # noqa: E402


def fill_splits(tiles: int, k_steps: int, num_cus: int) -> list:
    """Split counts that fill one wave of a persistent Gluon grid with (split, tile) items: the largest s with
    tiles x s <= SMs, and s - 1, each >= 2, <= MAX_GLUON_SPLIT and leaving >= MIN_SPLIT_STEPS K steps a range.
    One item per CTA: a ping-pong CTA given two runs them one after the other on its tensor cores, and a
    second wave of partial tiles costs as much as the first (measured: splits 2 / 3 for every
    tile switched 3 of 19 rows; with these counts, 6 of 12)."""
    from ..kernels.gluon.hopper_host import one_wave_splits

    top = min(one_wave_splits(tiles, num_cus), MAX_GLUON_SPLIT, k_steps // MIN_SPLIT_STEPS)
    return [s for s in (top, top - 1) if s >= 2]


def gluon_split_k_space(M: int, N: int, K: int, target) -> list:
    """Split-K candidates for the dense Gluon kernels (hopper_host.launch_dense: fp32 partial tiles, a
    fixed-order reduce) where a tiling leaves the SMs short of work: for each of GLUON_SPLIT_K_TILES, the
    `fill_splits` of its tile count.
        1024 x 576 x 7168 (DeepSeek kv_a_proj), 132 SMs:  coop 128 x 128 -> 8 x 5 = 40 tiles: splits 3, 2
                                                          coop 128 x 192 -> 24 tiles: splits 5, 4
        256 x 576 x 7168:                                 ping-pong 64 x 96 -> 24 tiles: splits 5, 4"""
    out = []
    for layout, bm, bn, stages in GLUON_SPLIT_K_TILES:
        tiles = -(-M // bm) * -(-N // bn)
        for split in fill_splits(tiles, -(-K // GLUON_SPLIT_K_BK), target.num_cus):
            c = _cfg(bm, bn, GLUON_SPLIT_K_BK, 8 if layout == "coop" else 4, stages, 8, True, True, split)
            c["backend"] = "gluon"
            out.append(c)
    return out


# ----------------------------------------------------------------------------- per bench op

def dense_space(op: str) -> Callable:
    """`search_space` of `op` (the bench op's name, as `gemmkit tune --op` passes it: a8w8 int8 also
    searches "a8w8"'s space, and tune_shapes drops its Gluon candidates)."""
    return functools.partial(search_space, op=op)


def fp4_space(M, N, K, target):
    """The tuner's space without what this kernel lacks (no TMA path, K steps >= 64), and only
    configs that fit its own shared-memory bound (ops/gemm_afp4wfp4.py smem_bytes)."""
    from ..ops.gemm_afp4wfp4 import check_config

    keep = []
    for c in search_space(M, N, K, target, "afp4wfp4"):
        c = dict(c, BLOCK_SIZE_K=max(c["BLOCK_SIZE_K"], 64) * 2)  # 4-bit: twice the elements per step
        if c.get("tma") or c.get("backend", "triton") != "triton":
            continue
        try:
            check_config(c, target)
        except ValueError:
            continue
        if c not in keep:
            keep.append(c)
    return keep


def batched_space(op):
    """The dense tuner space of `op`, less what the batched kernels do not run: split-K, split tiles
    (BLOCK_SIZE_N in configs.SPLIT_N: the dense Gluon kernels'), and Gluon except for a16w16 (search_space offers its
    Gluon candidates, ping-pong and cooperative, on sm_90 only, at M >= 256; the batched op runs both layouts
    on kernels/gluon/hopper_pingpong_batched.py)."""
    def space(M, N, K, target):
        return [c for c in search_space(M, N, K, target, op)
                if c["NUM_KSPLIT"] == 1 and c["BLOCK_SIZE_N"] not in SPLIT_N
                and (op == "a16w16" or c.get("backend", "triton") == "triton")]
    return space


def gated_space(M, N, K, target):
    """search_space's Triton-tier configs, keeping those whose gated tile (2 x BLOCK_SIZE_N w rows) fits
    the shared memory on the path each would take (the dense pruning counts BLOCK_SIZE_N rows)."""
    from ..ops.ffn import check_feasible

    keep = []
    for c in search_space(M, N, K, target):
        if c.get("backend", "triton") != "triton":  # the dense op's Gluon tiles are not the gated tile's kernels
            continue
        try:
            check_feasible(c, target, 2, 2, tma=c["tma"])
        except ValueError:
            continue
        keep.append(c)
    return keep


def split_cat_space(op):
    """The dense tuner space of `op` without split-K and without Gluon candidates (the split-cat kernels
    have no split-K path and run on the Triton tier: ops/gemm_split_cat.py rejects other backends)."""
    def space(M, N, K, target):
        return [c for c in search_space(M, N, K, target, op)
                if c["NUM_KSPLIT"] == 1 and c.get("backend", "triton") == "triton"]
    return space


# bench op name (bench/ops.py BENCH_OPS) -> (M, N, K, target) -> [config]: every op's candidate space
OP_SPACES = {
    "a16w16": dense_space("a16w16"),
    "a8w8": dense_space("a8w8"),
    "a8w8_blockscale": dense_space("a8w8_blockscale"),
    "afp4wfp4": fp4_space,
    "batched_a16w16": batched_space("a16w16"),
    "batched_a8w8": batched_space("a8w8"),
    "ffn_gated": gated_space,
    "a16w16_gated": gated_space,
    "split_cat": split_cat_space("a16w16"),
    "a8w8_blockscale_split_cat": split_cat_space("a8w8_blockscale"),
}


def op_space(name: str) -> Callable:
    """The candidate space `gemmkit tune --op <name>` searches: (M, N, K, target) -> [config]; an op not in
    OP_SPACES gets the dense `search_space` of its name."""
    return OP_SPACES.get(name) or dense_space(name)
