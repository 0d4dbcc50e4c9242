"""Same-process A/B of configs per shape, against the op's vendor: `python benchmarks/ab_configs.py AB.json OUT.json`.

AB.json: {"op": "a16w16" (default; any `gemmkit bench --op` name of a dense op: a8w8, a8w8_blockscale, ...),
          "dtype": the op's dtype name (default: its first),
          "shapes": {"M,N,K": {"before": config, "after": config, ...}}}
Each shape names two or more configs; a config of null is what the op serves without one (tables + config model;
the row's `served_configs` records it).
A config (or {} for the served one) with "_pad_m": false runs with ops/dispatch.py's row padding of x turned off
(dispatch.PAD_M): the copy of x to whole TMA boxes of rows, against the same config with it ("always": on, without
its floors on M and on w's bytes); "_pair": false runs the fp8 Gluon pingpong unpaired
(kernels/gluon/hopper_pingpong_fp8.PAIR_SPLIT: both consumers on one tile where the tiles are at most one a CTA);
"_shift": false loads the Gluon kernels' last tiles where they lie (kernels/_host.SHIFT_LAST_TILES: past M / N, or
on the copy where dispatch makes one), not shifted back; "_pitch": false runs x and w at their own row pitch
(dispatch.PITCH: no copy to a 128-byte pitch; "lines": the copy also for rows off 128-byte lines, not only for those
off 32-byte sectors: dispatch.PITCH_SECTOR = PITCH_BYTES; "always": the Gluon kernels' copies however few of the
operand's rows their tiles load, dispatch.PITCH_MIN_LOADS = 0; "both": each operand whatever its bytes against the
other's, dispatch.PITCH_SHARE = inf); "_rows": false turns dispatch.ROWS_KERNEL off (an
unaligned K at a few tokens then copies x and w instead of reading w where it lies); "_tail": false turns the bf16 ping-pong's and
cooperative kernel's tail split off (configs/model/tail.py TAIL_SPLIT; the config model then counts no tail split in the
waves it compares either), an integer sets its least K
(TAIL_MIN_K), "always" splits wherever a partial last round can be split (TAIL_MIN_K and TAIL_MIN_SAVING 0); "_xbox": false loads x
in one whole box of BLOCK_SIZE_M rows under one row of tiles (kernels/_host.TRIM_X_BOX), an integer caps the boxes of
only x's rows a K step (kernels/_host.MAX_X_BOXES; 1: one power-of-two box); "_pieces": false stages a split
tile's output sub-tiles one at a time through one buffer (kernels/gluon/hopper_plan.SPLIT_PIECES); "_cap_stages": false
runs the Gluon dense kernels' rings at the plan's stages (kernels/gluon/hopper_host.CAP_STAGES); "_magic": false
has them divide for their tile order (kernels/gluon/hopper_host.TILE_MAGIC); "_late": false has the bf16 dense kernels
set up their whole ring before their partitions start (kernels/gluon/hopper_host.LATE_INIT); "_align": false runs
the split-K reduce without its alignment hints (kernels/triton/dense.REDUCE_ALIGN); "_gluon_gated": true (op
a16w16_gated) runs the Gluon gated tile (kernels/gluon/hopper_pingpong.launch_gated, num_warps 8
hopper_coop.launch_gated; the op serves the latter where configs/model/gated.py's `gated_one_wave` says, so a null
config there is it too) with the config's keys; "_prev":
true runs the
Triton tier's dense kernels (gemm_tma_kernel, gemm_kernel) of another revision, from the directory `--prev` names
(that revision's kernels/triton/_mainloop.py, gemm_tma.py and gemm.py, e.g. `git show
REV:gemmkit/kernels/triton/gemm.py`; imported beside the package, their other imports resolving to the current
files; both revisions must take the same arguments).
Call plans are off in this script (each capture takes the full path, so each config's own dispatch is what the graph
holds).
For each shape, in one process and on the same rotated inputs: the vendor (gemmkit/bench/ops.py: torch.matmul,
torch._scaled_mm, ...) and every config, then again in reverse order, each timed by CUDA-graph replay
(gemmkit/bench/timing.py); the ratios use the mean of the two measurements of each, so a drift in clock over the
shape's measurements affects every config alike. `--heat-ms N`: each of the two passes after N ms of 8192^3 bf16
products, at the clock a suite's large part runs at (its 64-row tiles lose more there than on a cool card). Every
config's result is checked against fp32 first. Prints one line per shape (vendor_ms / config_ms per config; speedup
of each over the first) and the geometric means; where the vendor refuses a shape the configs are timed against each
other alone (the row holds `vendor_error`, no ratios, and its speedups count in the summary's `speedup_<config>`).
"""
import argparse
import importlib.util
import json
import math
import os
import sys
import time

import torch

import gemmkit
from gemmkit.bench import ops as bench_ops
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit import callplan, configs
from gemmkit.ops import _common as C
from gemmkit.kernels import _host as H
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as FP8
from gemmkit.configs.model import tail as TAIL
from gemmkit.kernels.gluon import hopper_host as HH
from gemmkit.kernels.gluon import hopper_plan as HPLAN
from gemmkit.ops import dispatch as D
from gemmkit.kernels.triton import dense as DENSE

PREV = None  # (gemm_tma_kernel, gemm_kernel) of the revision `--prev` names
_PREV_PARTS = ("_mainloop", "gemm_tma", "gemm")  # import order


def load_prev(path):
    """The dense Triton kernels of the revision in directory `path` (see the module docstring)."""
    pkg = "gemmkit.kernels.triton"
    mods = {}
    for part in _PREV_PARTS:
        text = open(os.path.join(path, part + ".py")).read()
        for other in _PREV_PARTS[:-1]:
            text = text.replace(f"from .{other} import", f"from ._abprev_{other} import")
        name = f"{pkg}._abprev_{part}"
        spec = importlib.util.spec_from_file_location(name, os.path.join(path, part + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        exec(compile(text, os.path.join(path, part + ".py"), "exec"), mod.__dict__)
        mods[part] = mod
    return mods["gemm_tma"].gemm_tma_kernel, mods["gemm"].gemm_kernel


def _gluon_gated_runner(op, cfg):
    """`"_gluon_gated": true` (op a16w16_gated): h through kernels/gluon/hopper_pingpong.launch_gated (num_warps 8:
    hopper_coop.launch_gated) with `cfg` (BLOCK_SIZE_N h's columns), into an h allocated a call as the op does; silu
    on the gate."""
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong

    if op.name != "a16w16_gated":
        raise ValueError('"_gluon_gated" is the a16w16_gated op\'s')
    target = C.target_for(torch.device("cuda"))
    kernel = hopper_coop if hopper_pingpong.is_coop(cfg) else hopper_pingpong  # num_warps 8: the cooperative tile

    def run(x, w):
        y = torch.empty((x.shape[0], w.shape[0] // 2), dtype=x.dtype, device=x.device)
        kernel.launch_gated(x, w, y, "silu", cfg, target)
        return y
    return run


def _runner(op, cfg):
    """The call of `cfg` (None / {} with only "_pad_m" / "_rows" / "_shift" / "_pitch" / "_tail" / "_xbox" /
    "_pieces" / "_cap_stages" / "_magic" / "_late" / "_align": what the op serves),
    with dispatch.PAD_M, dispatch.ROWS_KERNEL, kernels/_host.SHIFT_LAST_TILES, dispatch.PITCH and
    configs/model/tail.py TAIL_SPLIT / TAIL_MIN_K as the config says
    ("_pad_m": "always" keeps the copy on and drops its floors, PAD_M_MIN_ROWS and PAD_M_MIN_W_BYTES)."""
    cfg = dict(cfg) if cfg else {}
    pad, rows, shift, pitch, pair, tail, xbox, pieces, cap, magic, late, align = (
        cfg.pop(k, True) for k in ("_pad_m", "_rows", "_shift", "_pitch", "_pair", "_tail", "_xbox", "_pieces",
                                   "_cap_stages", "_magic", "_late", "_align"))
    prev = cfg.pop("_prev", False)
    if prev and PREV is None:
        raise ValueError('"_prev": true needs --prev DIR')
    if cfg.pop("_gluon_gated", False):  # the Gluon gated tile's launch itself (the op serves it at `gated_one_wave`)
        return _gluon_gated_runner(op, cfg)
    floors = (0, 0) if pad == "always" else (D.PAD_M_MIN_ROWS, D.PAD_M_MIN_W_BYTES)
    cfg = cfg or None

    def run(*inp):
        saved = (D.PAD_M, D.ROWS_KERNEL, H.SHIFT_LAST_TILES, D.PITCH, D.PAD_M_MIN_ROWS, D.PAD_M_MIN_W_BYTES,
                 FP8.PAIR_SPLIT, D.PITCH_SECTOR, TAIL.TAIL_SPLIT, TAIL.TAIL_MIN_K, TAIL.TAIL_MIN_SAVING, H.TRIM_X_BOX,
                 H.MAX_X_BOXES, HPLAN.SPLIT_PIECES, HH.CAP_STAGES, HH.TILE_MAGIC, HH.LATE_INIT, D.PITCH_MIN_LOADS,
                 DENSE.REDUCE_ALIGN, D.PITCH_SHARE)
        DENSE.REDUCE_ALIGN = bool(align)
        HPLAN.SPLIT_PIECES = bool(pieces)
        HH.LATE_INIT = bool(late)
        HH.CAP_STAGES = bool(cap)
        HH.TILE_MAGIC = bool(magic)
        D.PAD_M, D.ROWS_KERNEL, H.SHIFT_LAST_TILES, D.PITCH = bool(pad), rows, shift, bool(pitch)
        if pitch == "lines":  # rows off whole 128-byte lines copied too (not only those off 32-byte sectors)
            D.PITCH_SECTOR = D.PITCH_BYTES
        if pitch == "always":
            D.PITCH_MIN_LOADS = 0
        if pitch == "both":
            D.PITCH_SHARE = float("inf")
        D.PAD_M_MIN_ROWS, D.PAD_M_MIN_W_BYTES = floors
        FP8.PAIR_SPLIT = pair
        H.TRIM_X_BOX = xbox is not False
        if xbox is not True and xbox is not False:
            H.MAX_X_BOXES = int(xbox)
        TAIL.TAIL_SPLIT = tail is not False
        if tail == "always":
            TAIL.TAIL_MIN_K, TAIL.TAIL_MIN_SAVING = 0, 0.0
        elif tail is not True and tail is not False:
            TAIL.TAIL_MIN_K = int(tail)
        kernels = (DENSE.gemm_tma_kernel, DENSE.gemm_kernel)
        if prev:  # dense's plans hold the kernel they launch: none cached across the swap
            DENSE._PLANS.clear()
            DENSE.gemm_tma_kernel, DENSE.gemm_kernel = PREV
        try:
            return op.run(inp, cfg)
        finally:
            (D.PAD_M, D.ROWS_KERNEL, H.SHIFT_LAST_TILES, D.PITCH, D.PAD_M_MIN_ROWS, D.PAD_M_MIN_W_BYTES,
             FP8.PAIR_SPLIT, D.PITCH_SECTOR, TAIL.TAIL_SPLIT, TAIL.TAIL_MIN_K, TAIL.TAIL_MIN_SAVING, H.TRIM_X_BOX,
             H.MAX_X_BOXES, HPLAN.SPLIT_PIECES, HH.CAP_STAGES, HH.TILE_MAGIC, HH.LATE_INIT, D.PITCH_MIN_LOADS,
             DENSE.REDUCE_ALIGN, D.PITCH_SHARE) = saved
            if prev:
                DENSE._PLANS.clear()
                DENSE.gemm_tma_kernel, DENSE.gemm_kernel = kernels
    return run


_HEAT = []  # the heating product's operand, made once


def heat(ms):
    """Bring the card to the clock a run of large GEMMs leaves it at (a suite's large part; docs/PERF.md "Model
    suites": the 64-row tiles lose more there than timed on a cool card): 8192^3 bf16 products for `ms` ms."""
    if not _HEAT:
        _HEAT.append(torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16))
    a = _HEAT[0]
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        for _ in range(4):
            a @ a
        torch.cuda.synchronize()


def main(path, out_path, rep_ms=60, heat_ms=0):
    callplan.ENABLED = False
    spec = json.load(open(path))
    op = bench_ops.get(spec.get("op", "a16w16"))
    dtype_name = spec.get("dtype", op.dtypes[0])
    target = C.target_for(torch.device("cuda"))
    rows = []
    for key, cfgs in spec["shapes"].items():
        M, N, K = map(int, key.split(","))
        names = list(cfgs)
        n = rotation_count((M + N) * K * op.operand_bytes(dtype_name), target.l2_bytes)
        sets = [op.make_inputs(M, N, K, dtype_name, "cuda") for _ in range(n)]
        ref = op.reference(sets[0]).float()
        fns = {"vendor": lambda *inp: op.vendor(inp)}
        vendor_error = None
        try:  # a shape the vendor refuses (torch._scaled_mm: K or N % 16 != 0): said, the configs timed alone
            op.vendor(sets[0])
        except RuntimeError as e:
            vendor_error = f"{type(e).__name__}: {str(e)[:200]}"
            print(f"{M:6d} {N:6d} {K:6d}  vendor refused ({str(e)[:100]}): the configs timed against each other",
                  flush=True)
            del fns["vendor"]
        refused = {}
        for name in list(names):
            fn = _runner(op, cfgs[name])
            try:
                err = ((fn(*sets[0]).float() - ref).norm() / ref.norm()).item()
            except (ValueError, RuntimeError) as e:  # a config this shape or kernel refuses: said, not timed
                refused[name] = f"{type(e).__name__}: {str(e)[:200]}"
                names.remove(name)
                continue
            assert err < 2e-2, (key, name, err)
            fns[name] = fn
        ms = {k: [] for k in fns}
        order = list(fns)  # the vendor (if it takes the shape) first, then the configs
        for o in (order, order[::-1]):
            heat(heat_ms)
            for k in o:
                ms[k].append(time_graph(fns[k], sets, 10, rep_ms))
        m = {k: sum(v) / len(v) for k, v in ms.items()}
        row = {"M": M, "N": N, "K": K, "ms": ms, "configs": cfgs,
               "ratio": {k: m["vendor"] / m[k] for k in names} if vendor_error is None else {},
               "speedup": {k: m[names[0]] / m[k] for k in names[1:]}, "refused": refused}
        if vendor_error is not None:
            row["vendor_error"] = vendor_error
        served = [name for name in names if cfgs[name] is None]
        if served:  # what a null config ran (configs.serve on this GPU's target): benchmarks/model_audit.py reads it
            row["served_configs"] = dict.fromkeys(served, configs.serve(op.table_op(dtype_name), target, M, N, K)[0])
        rows.append(row)
        vs = row["ratio"] if vendor_error is None else {names[0]: 1.0, **row["speedup"]} if names else {}
        print(f"{M:6d} {N:6d} {K:6d}  " + "  ".join(f"{k} {v:.3f}" for k, v in vs.items())
              + ("  (over the first config: no vendor)" if vendor_error is not None else "")
              + "".join(f"  {k} refused ({v[:80]})" for k, v in refused.items()), flush=True)
        del sets, ref
        torch.cuda.empty_cache()
        _write(out_path, op, dtype_name, rows, heat_ms)  # after every shape: a run cut off keeps its rows
    print("geomean", {k: round(v, 3) for k, v in _write(out_path, op, dtype_name, rows, heat_ms).items()})


def _write(out_path, op, dtype_name, rows, heat_ms=0):
    """Write the result file (stamped); return its summary (geomean of each config's ratio over the rows the vendor
    takes, and of each later config's speedup over the first over every timed row)."""
    g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    names = sorted({k for r in rows for k in r.get("ratio", {})})
    summary = {f"ratio_{k}": g([r["ratio"][k] for r in rows if k in r.get("ratio", {})]) for k in names}
    faster = sorted({k for r in rows for k in r.get("speedup", {})})
    summary.update({f"speedup_{k}": g([r["speedup"][k] for r in rows if k in r.get("speedup", {})]) for k in faster})
    with open(out_path, "w") as f:
        json.dump({**gemmkit.bench.stamp(), "op": op.name, "dtype": dtype_name,
                   "vendor": op.vendor_name(dtype_name), "heat_ms": heat_ms, "summary": summary, "rows": rows}, f,
                  indent=1)
    return summary


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ab", help='AB.json: {"op": ..., "shapes": {"M,N,K": {"before": config, "after": config}}}')
    ap.add_argument("out", help="the result JSON (device, torch, triton, git_sha, date, per-shape rows)")
    ap.add_argument("--rep-ms", type=int, default=60, help="CUDA-graph replay time per measurement (ms)")
    ap.add_argument("--prev", help='directory of another revision\'s kernels/triton/{_mainloop,gemm_tma,gemm}.py, run by '
                    'configs with "_prev": true')
    ap.add_argument("--heat-ms", type=int, default=0, help="before each pass over a shape's configs, this many ms of "
                    "8192^3 bf16 products (the clock of a suite's large part; default 0: a cool card)")
    args = ap.parse_args()
    if args.prev:
        PREV = load_prev(args.prev)
    main(args.ab, args.out, args.rep_ms, args.heat_ms)
