"""`gemmkit tune`: search configs for shapes on the GPU, merge the winners into the tables.

For each shape (M, N, K), in M-major order (every layer at the first M, then the next M: a run
cut short by its time budget loses the last M, not the last model):
  1. candidates (tune/space.py): `search_space` enumerates block sizes, GROUP_SIZE_M, num_warps,
     num_stages, persistent or not, split-K, TMA or pointer loads, shaped by M
     (small M: short/narrow tiles and split-K; at 16 < M <= 64 BLOCK_SIZE_M 64 >= M, one
     tile row; large M: big tiles, persistence; sm_90 M >= 256: Gluon ping-pong configs too;
     sm_90 a16w16 M <= 64: the ping-pong's transposed tile, `gluon_swap_space`;
     sm_90 fp8 (a8w8, a8w8_blockscale) M >= 64: the FP8 Gluon kernel's, `gluon_fp8_space`;
     a16w16 at M > 64 where a tiling leaves under 2 waves of tiles: split-K 2-8, 64-wide tiles);
     an op whose kernel lacks a path searches that space filtered (`op_space`, `OP_SPACES`);
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

import json
import os
import random
import sys
import time
from pathlib import Path

from .. import arch as _arch
from .. import configs as _configs
from ..configs.model import SMALL_TILE  # two warpgroups on a smaller tile starve each wgmma
from ..ops import dispatch
from .merge import _strip, merge_tables, rows_by_shape, same_config, serving
from .space import (FEW_TILE_WAVES, GLUON_SPLIT_K_BK, GLUON_SPLIT_K_TILES, MAX_GLUON_SPLIT,  # noqa: F401 (re-exported)
                    MIN_SPLIT_STEPS, OP_SPACES, _cfg, few_tile_space, fill_splits, gluon_fp8_space, gluon_space,
                    gluon_split_k_space, gluon_swap_space, op_space, search_space)

__all__ = ["search_space", "few_tile_space", "op_space", "prune", "tune_shapes", "write_tables", "pick_candidates",
           "order_m_major", "merge_tables", "measure"]

MAX_ACC_REGS = 128  # fp32 accumulator registers per thread we allow (of 255); more spills or starves the pipeline


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
        if c["BLOCK_SIZE_M"] >= 64 and c["num_warps"] == 8 and c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] < SMALL_TILE:
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
    above = sorted(((int(k[6:]), c) for k, c in raw.items() if k.startswith("M_GEQ_") and int(k[6:]) > M),
                   key=lambda kc: kc[0])
    if above:
        out.append(above[0][1])
    return [_configs.validate_config(dict(c)) for c in out if c != _configs.MODEL]  # "model": timed anyway


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


MAX_REL_ERR = 2**-8  # a candidate's result against the fp32 reference, ||y - ref|| / ||ref||: more drops it


def measure(bop, sets, ref, ref_norm, c, rep_ms) -> dict:
    """{"rel_err", "ms"} of one candidate config on the input sets (its result checked against `ref` first, then
    timed by CUDA-graph replay over the sets), or {"error": why} where it fails or computes wrongly."""
    from ..bench.timing import time_graph

    row = {}
    try:
        y = bop.run(sets[0], c)
        err = ((y.float() - ref).norm().item() / ref_norm) if ref_norm else 0.0
        row["rel_err"] = err
        if not err <= MAX_REL_ERR:
            row["error"] = f"wrong result: rel err {err:.3g}"
        else:
            row["ms"] = time_graph(lambda *inp: bop.run(inp, c), sets, 10, rep_ms)
    except Exception as e:
        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return row


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
        current, _ = _configs.serve(table_op, target, M, N, K)
        current = _configs.validate_config(current)
        # the config model's choice with the shape files set aside: the merge writes a table config only where it
        # beats this one (tune/merge.py), else hands the M to the model
        model_cfg = _configs.validate_config(_configs.serve(table_op, target, M, N, K, shape_files=False)[0])
        space = op_space(op)(M, N, K, target)
        if dtype_name == "int8":  # the FP8 Gluon kernel does not take int8: those configs would run the Triton tier
            space = [c for c in space if c.get("backend", "triton") == "triton"]
        if backend != "all":  # e.g. "gluon": only that backend's candidates (and the current config)
            space = [c for c in space if c.get("backend", "triton") == backend]
        pruned = prune(space, M, N, K, target, in_bytes, 2, acc_tiles, batch)
        extra = [current, model_cfg] + [c for c in neighbours(table_op, target.arch, M, N, K)
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
                           "ref_ms": ref_ms, "is_current": same_config(c, current),
                           **measure(bop, sets, ref, ref_norm, c, rep_ms)}
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
        if "ms" in r and r.get("rel_err", 1.0) <= MAX_REL_ERR:
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
