"""Closing sweep of gemm_a16w16 with the shipped tables: compile every config the rows will use in
parallel first, then `gemmkit bench --cuda-graph` on the rows (same method and JSON format).

`gemmkit bench` compiles each table config on its first call, one at a time: with ~100 distinct
configs across the model layers that is minutes of a device run. Here Triton's AsyncCompileMode
compiles them on every CPU core first (as the tuner does), then bench.run_gpu times the rows.

    PYTHONPATH=. python benchmarks/sweep_a16w16.py OUT.json --model all -m 1,16,32,64
    PYTHONPATH=. python benchmarks/sweep_a16w16.py OUT.json --squares 4096,8192,16384
    python benchmarks/sweep_a16w16.py --summary DECODE.json GEQ256.json SQUARES.json   (no GPU)

`--summary` prints what issue 3's targets read from result files: geomean ratio (and min) by
M band and per M, the M <= 16 rows' bandwidth against cuBLAS's and the copy bandwidth.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

COPY_TBPS = 4.24  # device-to-device copy bandwidth of this machine kind (read + write), the M <= 64 ceiling


def rows_for(args):
    from gemmkit.bench.suite import default_suite, model_suite

    rows = []
    if args.model:
        rows += model_suite(args.model, [int(m) for m in args.m.split(",")] if args.m else None)
    if args.squares:
        rows += [(f"square {s}", s, s, s) for s in map(int, args.squares.split(","))]
    return rows or default_suite()


def precompile(rows, log=print):
    """Compile what the table config of each row runs, on every core (no launch)."""
    from concurrent.futures import ThreadPoolExecutor

    import torch
    from triton.runtime._async_compile import AsyncCompileMode

    from gemmkit import configs
    from gemmkit.ops import _common as C
    from gemmkit.ops.gemm_a16w16 import compile_for

    dev = torch.device("cuda")
    arch = C.target_for(dev).arch
    t0, seen = time.time(), set()
    with AsyncCompileMode(ThreadPoolExecutor(os.cpu_count() or 4), ignore_errors=True):
        for _label, M, N, K in rows:
            cfg, _src = configs.select("a16w16", arch, M, N, K)
            key = (M == 1, N, K, json.dumps(cfg, sort_keys=True))
            if key in seen:
                continue
            seen.add(key)
            x = torch.empty(M, K, device=dev, dtype=torch.bfloat16)
            w = torch.empty(N, K, device=dev, dtype=torch.bfloat16)
            try:
                compile_for(x, w, cfg)
            except Exception as e:  # the bench row reports it
                log(f"precompile {M}x{N}x{K}: {type(e).__name__}: {str(e)[:120]}")
            del x, w
    torch.cuda.empty_cache()
    log(f"precompiled {len(seen)} (shape, config) pairs in {time.time() - t0:.0f} s")


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def summary(paths):
    rows = []
    for p in paths:
        d = json.load(open(p))
        rows += [dict(r, _file=os.path.basename(p)) for r in d["rows"] if r.get("ratio")]
        print(f"{os.path.basename(p)}: {len(d['rows'])} rows, git {d.get('git_sha')}, {d.get('date')}, "
              f"clock at end {d.get('sm_clock_mhz')} MHz")
    squares = [r for r in rows if r["label"].startswith("square") or r["label"] == "custom"]
    models = [r for r in rows if r not in squares]
    for r in squares:
        print(f"  square {r['M']}: {r['ratio']:.3f}x ({r['tflops']:.0f} vs {r['ref_tflops']:.0f} TFLOP/s)  bar 1.05x")
    for name, sel, bar in (("M <= 64", lambda r: r["M"] <= 64, 1.25), ("M >= 256", lambda r: r["M"] >= 256, 1.05)):
        band = [r for r in models if sel(r)]
        if not band:
            continue
        rs = [r["ratio"] for r in band]
        worst = min(band, key=lambda r: r["ratio"])
        low = sum(x < 0.95 for x in rs)
        print(f"  {name}: geomean {geomean(rs):.3f}x over {len(rs)} rows (bar {bar}x), min {worst['ratio']:.3f}x "
              f"({worst['label']} {worst['M']}x{worst['N']}x{worst['K']}), {low} rows < 0.95x")
        for m in sorted({r["M"] for r in band}):
            mr = [r["ratio"] for r in band if r["M"] == m]
            print(f"    M={m:5d}: geomean {geomean(mr):.3f}x  min {min(mr):.3f}x  max {max(mr):.3f}x  ({len(mr)})")
    small = [r for r in models if r["M"] <= 16]
    if small:
        g = statistics.median(r["gbps"] for r in small) / 1e3
        v = statistics.median(r["ref_gbps"] for r in small) / 1e3
        print(f"  M <= 16 median bandwidth: gemmkit {g:.2f} TB/s, cuBLAS {v:.2f} TB/s, copy {COPY_TBPS} TB/s "
              f"({100 * g / COPY_TBPS:.0f}% / {100 * v / COPY_TBPS:.0f}%); 1.25x over cuBLAS would need "
              f"{1.25 * v:.2f} TB/s")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="*", help="output JSON (one path); with --summary: result files to read")
    ap.add_argument("--model", help="model_configs.json model or 'all'")
    ap.add_argument("-m", help="comma-separated M values with --model")
    ap.add_argument("--squares", help="comma-separated sizes of M = N = K rows")
    ap.add_argument("--rep-ms", type=int, default=100)
    ap.add_argument("--summary", action="store_true", help="no GPU: summarize result files")
    args = ap.parse_args(argv)
    if args.summary:
        summary(args.json)
        return 0
    from gemmkit import bench

    rows = rows_for(args)
    precompile(rows)
    # One M at a time, the JSON rewritten after each: a run cut by its time limit keeps what it measured.
    result, done = None, []
    for m in dict.fromkeys(r[1] for r in rows):
        result = bench.run_gpu([r for r in rows if r[1] == m], rep_ms=args.rep_ms, cuda_graph=True)
        done += result["rows"]
        if args.json:
            with open(args.json[0], "w") as f:
                json.dump({**result, "rows": done}, f, indent=1)
    print(f"wrote {args.json[0] if args.json else '(no json)'}: {len(done)} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
