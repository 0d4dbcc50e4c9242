"""`gemmkit tune`: search configs for shapes on the GPU, merge the winners into the tables.

For each shape (M, N, K), in M-major order (every layer at the first M, then the next M: a run
cut short by its time budget loses the last M, not the last model):
  1. candidates: `search_space` enumerates block sizes, GROUP_SIZE_M, num_warps,
     num_stages, persistent or not, split-K, TMA or pointer loads, shaped by M
     (small M: short/narrow tiles and split-K; at 16 < M <= 64 BLOCK_SIZE_M 64 >= M, one
     tile row; large M: big tiles, persistence; sm_90 M >= 256: Gluon ping-pong configs too;
     sm_90 a16w16 M <= 64: the ping-pong's transposed tile, `gluon_swap_space`;
     sm_90 fp8 (a8w8, a8w8_blockscale) M >= 64: the FP8 Gluon kernel's, `gluon_fp8_space`;
     a16w16 at M > 64 where a tiling leaves under 2 waves of tiles: split-K 2-8, 64-wide tiles);
  2. prune before compiling: shared memory (the op's own `smem_bytes` bound on
     the path the config would take), accumulator registers per thread, TMA box
     limits, split-K that leaves fewer than 2 K steps per split;
  3. sample: up to --max-candidates of each backend (Triton, Gluon), drawn in an order seeded by
     M alone, so the layers tuned at one M share candidates and compiled kernels; plus the config
     the table serves at M today and the configs of the buckets beside it in the shape file
     (tuned winners at the nearest M);
  4. compile the survivors in parallel (Triton's AsyncCompileMode on a thread pool
     sized to the CPU cores; ptxas runs as separate processes);
  5. time each on the GPU with the bench method (do_bench median of CUDA-graph
     replays, inputs rotated past the L2), the vendor in the same process;
  6. check every candidate's result against an fp32 torch reference: a config
     that computes wrongly is dropped, never written;
  7. merge (tune/merge.py): per tuned M, `M_GEQ_<M>` = the winner, inserted beside the existing
     buckets of `<OP>-N=<N>-K=<K>.json` or replacing the bucket of that name, but only where it
     beats the config serving M today by more than --min-gain (2%: timing noise) or that config
     is structurally wrong (BLOCK_SIZE_M < M at M <= 64). Buckets not tuned are kept. Tables go
     to <out>/<arch>/ (merged onto the shipped ones), or into gemmkit/configs/ with --install.
Progress is appended to `<out>/tune_progress.jsonl` as each timing lands; a rerun
with the same --out skips what is already measured (resumable); `--tables-from` redoes the
merge from a progress file without a GPU.
"""
from __future__ import annotations

import itertools
import json
import os
import random
import sys
import time
from pathlib import Path

from .. import arch as _arch
from .. import configs as _configs
from ..ops import dispatch
from .merge import _strip, merge_tables, rows_by_shape, same_config, serving

__all__ = ["search_space", "few_tile_space", "prune", "tune_shapes", "write_tables", "pick_candidates", "order_m_major",
           "merge_tables"]

MAX_ACC_REGS = 128  # fp32 accumulator registers per thread we allow (of 255); more spills or starves the pipeline


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
    kernels/gluon/hopper_pingpong.py): the tiles its register budget allows, with the split tiles 64 x 192 and
    64 x 96 (128 + 64 and 64 + 32 columns, for rows a power-of-two width leaves SMs idle), ring depths, group
    sizes. The cooperative kernel (num_warps 8, kernels/gluon/hopper_coop.py: two consumers share one tile):
    its split tile 128 x 192 and 128 x 128 with 6 stages (the sweeps: that one won 9 rows at M = 256 -
    2048), and at M >= 1024 its 128 x 256 / 256 x 128 tiles."""
    out = []
    for (bm, bn), stages, group in itertools.product([(128, 128), (64, 256), (64, 192), (64, 96)], [4, 5, 6], [8, 16]):
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
MIN_SPLIT_STEPS = 4  # K steps a split range keeps at least (fewer: the partial tile's traffic outweighs it)


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


def prune(cands, M: int, N: int, K: int, target, in_bytes=2, out_bytes=2, acc_tiles=1, batch=1) -> list:
    """Drop configs that cannot run or cannot be good, before anything is compiled.
    `acc_tiles`: accumulator tiles live at once (2 when fp8 partial sums are promoted or
    block scales applied per step, see kernels/triton/_mainloop.py)."""
    from ..kernels.triton.dense import check_feasible

    keep = []
    for c in cands:
        kernel = dispatch.gluon_dense_kernel(c, fp8=in_bytes == 1)  # the 8-bit ops' Gluon kernel is fp8's
        if kernel is not None:
            from ..kernels.gluon import hopper_coop, hopper_pingpong, hopper_pingpong_fp8

            if kernel == dispatch.GLUON_FP8:  # (the tuner drops Gluon for int8)
                def derive(c, target, in_bytes, out_bytes):
                    return hopper_pingpong_fp8.derive(c, target, out_bytes)
            else:
                derive = (hopper_coop if kernel == dispatch.GLUON_COOP else hopper_pingpong).derive

            if c.get("NUM_KSPLIT", 1) > 1 and -(-K // c["BLOCK_SIZE_K"]) // c["NUM_KSPLIT"] < MIN_SPLIT_STEPS:
                continue  # short ranges: the partial-tile traffic outweighs the work
            try:
                derive(c, target, in_bytes, out_bytes)
                # calls the Gluon kernel cannot take (non-TMA strides) run this config on the Triton
                # pointer kernel (ops/dispatch.py): it must fit there too
                check_feasible(c, target, in_bytes, out_bytes, tma=False)
            except ValueError:
                continue
            keep.append(c)
            continue
        threads = 32 * c["num_warps"] if target.is_nvidia else 64 * c["num_warps"]
        acc_regs = c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] // threads * acc_tiles
        if acc_regs > MAX_ACC_REGS or acc_regs < 4:
            continue
        if c["BLOCK_SIZE_M"] >= 64 and c["num_warps"] == 8 and c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] < 128 * 128:
            continue  # two warpgroups on a small tile: each wgmma too short
        k_steps = -(-K // c["BLOCK_SIZE_K"])
        if c["NUM_KSPLIT"] > 1 and k_steps // c["NUM_KSPLIT"] < 2:
            continue
        tiles = batch * -(-M // c["BLOCK_SIZE_M"]) * -(-N // c["BLOCK_SIZE_N"])  # batched ops: B x tiles
        if c["NUM_KSPLIT"] > 1 and tiles >= 2 * target.num_cus:
            continue  # enough tiles already: split-K only adds partial-sum traffic
        if c["persistent"] and tiles <= target.num_cus:
            continue  # one wave: persistence changes nothing
        try:
            check_feasible(c, target, in_bytes, out_bytes, tma=c["tma"])
        except ValueError:
            continue
        keep.append(c)
    return keep


def neighbours(table_op: str, arch: str, M: int, N: int, K: int, base_dir=None) -> list:
    """Configs of the shape file's buckets beside M: the one serving M and the next M_GEQ bucket
    above it (winners tuned at the nearest M: strong candidates at an M between them)."""
    base = Path(base_dir) if base_dir is not None else _configs.CONFIG_DIR
    path = base / arch / f"{table_op.upper()}-N={N}-K={K}.json"
    if not path.exists():
        return []
    raw = json.loads(path.read_text())
    out = []
    hit = serving(raw, M)
    if hit:
        out.append(hit[1])
    above = sorted((int(k[6:]), c) for k, c in raw.items() if k.startswith("M_GEQ_") and int(k[6:]) > M)
    if above:
        out.append(above[0][1])
    return [_configs.validate_config(dict(c)) for c in out]


def pick_candidates(space: list, pruned: list, M: int, max_candidates: int, seed: int = 0, extra=()) -> list:
    """Up to `max_candidates` of each kernel family from `pruned` (Triton; Gluon ping-pong; Gluon
    cooperative, num_warps 8), in the order of `space` shuffled by a seed of M alone (the layers tuned
    at one M draw the same configs where their pruning allows: shared compiles), then `extra` (the
    serving and neighbouring configs) not already drawn."""
    order = list(space)
    random.Random(seed + M * 7).shuffle(order)
    rank = {json.dumps(c, sort_keys=True): i for i, c in enumerate(order)}
    ranked = sorted(pruned, key=lambda c: rank.get(json.dumps(c, sort_keys=True), len(rank)))
    out, per_backend = [], {}
    for c in ranked:
        b = dispatch.preferred_kernel(c)  # one family per Gluon kernel layout; the Triton tier's TMA and pointer
        b = b if b in dispatch.GLUON_KERNELS else "triton"  # kernels share one
        if per_backend.get(b, 0) < max_candidates:
            per_backend[b] = per_backend.get(b, 0) + 1
            out.append(c)
    for c in extra:
        if not any(same_config(c, o) for o in out):
            out.append(c)
    return out


def order_m_major(shapes, m_values=None) -> list:
    """(label, M, N, K) rows sorted by M's place in `m_values` (given order; default ascending M),
    stable within one M: every layer at the first M before any at the next."""
    m_values = list(m_values) if m_values else sorted({s[1] for s in shapes})
    place = {m: i for i, m in enumerate(m_values)}
    return sorted(shapes, key=lambda s: place.get(s[1], len(place)))


def _key(M, N, K, c, op="a16w16", dtype="bf16", batch=1):
    return f"{op},{dtype},{M},{N},{K}," + (f"B={batch}," if batch != 1 else "") + json.dumps(c, sort_keys=True)


def _load_progress(path: Path) -> dict:
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                r = json.loads(line)
            except json.JSONDecodeError:  # a line cut by an interruption
                continue
            done[_key(r["M"], r["N"], r["K"], r["config"], r.get("op", "a16w16"), r.get("dtype", "bf16"),
                      r.get("B", 1))] = r
    return done


def tune_shapes(shapes, out_dir, *, max_candidates=40, rep_ms=40, seed=0, workers=None, dtype_name=None,
                log=print, op="a16w16", batch=1, backend="all", budget_s=None):
    """Tune each (label, M, N, K) for `op` (bench/ops.py); returns {(M, N, K): best row}.
    Rows also go to tune_progress.jsonl. `budget_s`: start no new shape after that many seconds
    (the shapes left are logged and skipped; their tables stay as they are)."""
    import torch
    from triton.runtime._async_compile import AsyncCompileMode
    from concurrent.futures import ThreadPoolExecutor

    from ..bench.ops import get as get_op
    from ..bench.timing import rotation_count, time_graph
    from ..ops import _common as C

    bop = get_op(op)
    dtype_name = dtype_name or bop.dtypes[0]
    table_op = bop.table_op(dtype_name)
    in_bytes = bop.operand_bytes(dtype_name)
    dev = torch.device("cuda")
    target = C.target_for(dev)
    acc_tiles = bop.acc_tiles(dtype_name, target)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    progress = out_dir / "tune_progress.jsonl"
    done = _load_progress(progress)
    workers = workers or os.cpu_count() or 4
    best = {}
    t0 = time.time()
    for i, (label, M, N, K) in enumerate(shapes):
        if budget_s is not None and time.time() - t0 > budget_s:
            left = shapes[i:]
            log(f"time budget ({budget_s:.0f} s) spent: {len(left)} shapes not tuned: "
                + ", ".join(f"{lb} {m}x{n}x{k}" for lb, m, n, k in left))
            break
        current, _ = _configs.select(table_op, target.arch, M, N, K)
        current = _configs.validate_config(current)
        space = bop.search_space(M, N, K, target) if bop.search_space else search_space(M, N, K, target, op)
        if dtype_name == "int8":  # the FP8 Gluon kernel does not take int8: those configs would run the Triton tier
            space = [c for c in space if c.get("backend", "triton") == "triton"]
        if backend != "all":  # e.g. "gluon": only that backend's candidates (and the current config)
            space = [c for c in space if c.get("backend", "triton") == backend]
        pruned = prune(space, M, N, K, target, in_bytes, 2, acc_tiles, batch)
        extra = [current] + [c for c in neighbours(table_op, target.arch, M, N, K)
                             if backend == "all" or c.get("backend", "triton") == backend]
        cands = pick_candidates(space, pruned, M, max_candidates, seed, extra)
        todo = [c for c in cands if _key(M, N, K, c, op, dtype_name, batch) not in done]
        rows = [done[_key(M, N, K, c, op, dtype_name, batch)] for c in cands
                if _key(M, N, K, c, op, dtype_name, batch) in done]
        if todo:
            _flops, nbytes = bop.work(M, N, K, dtype_name, batch)
            sets = [bop.make_inputs(M, N, K, dtype_name, dev, batch)
                    for _ in range(rotation_count(nbytes, target.l2_bytes))]
            ref = bop.reference(sets[0])
            ref_norm = ref.norm().item()
            tc = time.time()
            with AsyncCompileMode(ThreadPoolExecutor(workers), ignore_errors=True):
                for c in todo:
                    try:
                        bop.compile_for(sets[0], c)
                    except Exception:  # reported when the candidate is timed
                        pass
            t_compile = time.time() - tc
            try:
                ref_ms = time_graph(lambda *inp: bop.vendor(inp), sets, 10, rep_ms)
            except Exception:  # e.g. torch._int_mm at M <= 16: tune without a vendor ratio
                ref_ms = None
            with progress.open("a") as f:
                for c in todo:
                    row = {"label": label, "op": op, "dtype": dtype_name, "M": M, "N": N, "K": K,
                           **({"B": batch} if batch != 1 else {}), "config": c,
                           "ref_ms": ref_ms, "is_current": same_config(c, current)}
                    try:
                        y = bop.run(sets[0], c)
                        err = ((y.float() - ref).norm().item() / ref_norm) if ref_norm else 0.0
                        row["rel_err"] = err
                        if not err <= 2**-8:
                            row["error"] = f"wrong result: rel err {err:.3g}"
                        else:
                            row["ms"] = time_graph(lambda *inp, c=c: bop.run(inp, c), sets, 10, rep_ms)
                    except Exception as e:
                        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    rows.append(row)
            del sets, ref
            torch.cuda.empty_cache()
        else:
            t_compile = 0.0
        ok = [r for r in rows if "ms" in r]
        if not ok:
            log(f"[{i + 1}/{len(shapes)}] {label} {M}x{N}x{K}: no candidate ran")
            continue
        win = min(ok, key=lambda r: r["ms"])
        cur = [r for r in ok if same_config(r["config"], current)]
        best[(M, N, K)] = win
        elapsed = time.time() - t0
        eta = elapsed / (i + 1) * (len(shapes) - i - 1)
        vs = (lambda r: f"{r['ref_ms'] / r['ms']:.3f}x vendor") if win["ref_ms"] else (lambda r: f"{r['ms']:.4f} ms")
        cur_txt = f"table {vs(cur[0])} ({100 * (cur[0]['ms'] / win['ms'] - 1):+.1f}% best vs table)" if cur \
            else "table config failed"
        log(f"[{i + 1}/{len(shapes)}] {label:28s} {M:6d}x{N:6d}x{K:6d}  {len(ok)}/{len(cands)} ran "
            f"(compile {t_compile:.0f}s)  best {vs(win)}, {cur_txt}  eta {eta / 60:.1f} min")
    return best


def best_from_progress(path, op="a16w16", dtype=None) -> dict:
    """{(M, N, K): fastest correct row of `op` (and `dtype`, if given)} from a tune_progress.jsonl
    (regenerate tables without the GPU)."""
    best = {}
    for r in _load_progress(Path(path)).values():
        if r.get("op", "a16w16") != op or (dtype and r.get("dtype", "bf16") != dtype):
            continue
        if "ms" in r and r.get("rel_err", 1.0) <= 2**-8:
            k = (r["M"], r["N"], r["K"])
            if k not in best or r["ms"] < best[k]["ms"]:
                best[k] = r
    return best


def write_tables(best: dict, out_dir, arch: str, op: str = "a16w16") -> list:
    """One `<OP>-N=<N>-K=<K>.json` per (N, K), from scratch: M_GEQ_<m> = the winner per tuned m, so a
    call at M uses the winner of the largest tuned m <= M and an M below every tuned m falls through
    to the default table. (The CLI merges into the shipped tables instead: `merge_tables`.)"""
    by_nk = {}
    for (M, N, K), row in best.items():
        by_nk.setdefault((N, K), {})[M] = row["config"]
    written = []
    for (N, K), per_m in sorted(by_nk.items()):
        table = {f"M_GEQ_{m}": _strip(per_m[m]) for m in sorted(per_m, reverse=True)}
        path = Path(out_dir) / arch / f"{op.upper()}-N={N}-K={K}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=1) + "\n")
        _configs.load_table.cache_clear()
        _configs.load_table(str(path))  # validate what we wrote
        written.append(path)
    return written


def rows_from_progress(paths, op="a16w16", dtype=None, shapes=None, arch="sm_90", batch=1) -> dict:
    """{(M, N, K): correct timed rows of `op` (and `dtype`) at batch count `batch`} from one or more
    tune_progress.jsonl (a later file's row for the same shape and config wins), restricted to
    `shapes` ((M, N, K) set) if given: what `merge_tables` takes. Rows of another batch count never
    mix in (a winner at B = 8 against a serving config timed at B = 64 decides nothing)."""
    done = {}
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        done.update(_load_progress(Path(path)))
    rows = [r for r in done.values()
            if r.get("op", "a16w16") == op and (not dtype or r.get("dtype", "bf16") == dtype)
            and r.get("B", 1) == batch and (shapes is None or (r["M"], r["N"], r["K"]) in shapes)]
    return rows_by_shape(rows, arch)


def _merge(progress, args, table_op, op, dtype_name, arch, shapes=None) -> int:
    from .. import configs as cfgs

    out = cfgs.CONFIG_DIR if args.install else Path(args.out)
    decisions_path = Path(args.out) / "merge_decisions.json"
    rows = rows_from_progress(progress, op, dtype_name, shapes, arch, batch=getattr(args, "batch", 1) or 1)
    written, decisions = merge_tables(rows, out, arch, table_op, min_gain=args.min_gain)
    for p in written:
        print(f"wrote {p}")
    decisions_path.parent.mkdir(parents=True, exist_ok=True)
    decisions_path.write_text(json.dumps([{"N": n, "K": k, **d} for (n, k), ds in sorted(decisions.items())
                                          for d in ds], indent=1) + "\n")
    return 0


def main(args) -> int:
    import torch

    from ..bench.ops import get as get_op
    from ..bench.suite import default_suite, parse_shape

    bop = get_op(args.op)
    dtype_name = getattr(args, "dtype", None) or bop.dtypes[0]
    table_op = bop.table_op(dtype_name)
    m_values = [int(m) for m in args.m.split(",")] if args.m else None
    if args.tables_from:  # every shape of the progress files, merged together
        return _merge(args.tables_from, args, table_op, args.op, dtype_name, args.arch)
    if not torch.cuda.is_available():
        print("gemmkit tune: needs a CUDA GPU (it times candidates on the device)", file=sys.stderr)
        return 2
    if args.shape:
        shapes = [parse_shape(",".join(map(str, s))) for s in args.shape]
    elif args.model:
        shapes = order_m_major(bop.rows_for_models(args.model, m_values), m_values)
    else:
        shapes = default_suite() if args.suite == "default" else \
            [(f"square {s}", s, s, s) for s in (1024, 2048, 4096, 8192, 16384)]
    best = tune_shapes(shapes, args.out, max_candidates=args.max_candidates, rep_ms=args.rep_ms, op=args.op,
                       dtype_name=dtype_name, batch=getattr(args, "batch", 1) or 1,
                       backend=getattr(args, "backend", "all") or "all", budget_s=args.budget_s)
    # Merge every shape measured in this --out (earlier, resumed runs included) whose (N, K) this
    # run touched: the decisions see all tuned M of a file together (see tune/merge.py).
    progress = Path(args.out) / "tune_progress.jsonl"
    touched = {(n, k) for _m, n, k in best}
    shapes = {s for s in rows_from_progress(progress, args.op, dtype_name, batch=getattr(args, "batch", 1) or 1)
              if s[1:] in touched}
    return _merge(progress, args, table_op, args.op, dtype_name, _arch.current().arch, shapes)
