"""Markdown tables for docs/PERF.md from committed bench results (`gemmkit bench --json` files).

    python benchmarks/perf_table.py --summary benchmarks/results/h200/*.json     one line per file
    python benchmarks/perf_table.py --summary --min-m 256 FILE                   only rows with M >= 256
    python benchmarks/perf_table.py EAGER.json GRAPH.json                        per-shape table, eager + graph
    python benchmarks/perf_table.py --plot OUT.png FILE                          gemmkit bench --plot's figure
                                                                                 from a saved file (bf16 rows)

--summary: per file (CUDA-graph rows where the file has them), the rows' geometric-mean ratio (vendor time / gemmkit time), the worst row, and the
median roofline efficiency of both sides. Efficiency = roof time / measured time, roof time = max(FLOPs /
dense peak of the row's dtype, minimum bytes / copy bandwidth), computed from the row's own `tflops` and
`gbps` (the bench's FLOP and byte counts), so it holds for every op. The dense peak is the datasheet
figure from gemmkit.arch; the copy bandwidth is a measurement, not a datasheet figure (--gbps).
"""
import argparse
import json
import math
import os
import statistics

from gemmkit import arch


def _eff(tflops, gbps, peak, bw):
    return max(tflops / peak, gbps / bw)


def summary(paths, peak_of, bw, min_m=None, max_m=None, timing=None, dtype=None):
    print("| file | git | rows | geomean | worst row (ratio) | gemmkit % of roof (median) | vendor % of roof (median) |")
    print("|---|---|---:|---:|---|---:|---:|")
    for path in paths:
        d = json.load(open(path))
        rows = [r for r in d.get("rows", []) if "ratio" in r and r.get("ratio")
                and (min_m is None or r["M"] >= min_m) and (max_m is None or r["M"] <= max_m)
                and (dtype is None or r.get("dtype") == dtype)]
        want = timing or ("cuda_graph" if any(r.get("timing") == "cuda_graph" for r in rows) else None)
        rows = [r for r in rows if want is None or r.get("timing") == want]
        if not rows:
            continue
        g = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
        w = min(rows, key=lambda r: r["ratio"])
        ours = statistics.median(_eff(r["tflops"], r["gbps"], peak_of(r), bw) for r in rows)
        ref = statistics.median(_eff(r["ref_tflops"], r["ref_gbps"], peak_of(r), bw) for r in rows
                                if r.get("ref_tflops") is not None)
        shape = f"{w.get('label', '')} {w.get('B', '') and str(w['B']) + ' x '}{w['M']} x {w['N']} x {w['K']}"
        print(f"| {os.path.basename(path)} | {str(d.get('git_sha', '?'))[:7]} | {len(rows)} | {g:.3f} | "
              f"{shape.strip()} ({w['ratio']:.3f}) | {100 * ours:.0f}% | {100 * ref:.0f}% |")


def per_shape(eager_path, graph_path, peak, bw):
    eager, graph = json.load(open(eager_path)), json.load(open(graph_path))
    g_rows = {(r["M"], r["N"], r["K"]): r for r in graph["rows"]}
    print("| shape | M | N | K | GFLOP | min MB | floor µs | vendor µs (graph) | gemmkit µs (graph) | "
          "ratio graph | ratio eager |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in eager["rows"]:
        M, N, K = r["M"], r["N"], r["K"]
        flops = 2 * M * N * K
        nbytes = (M * K + N * K + M * N) * 2
        t_c, t_m = flops / (peak * 1e12) * 1e6, nbytes / (bw * 1e9) * 1e6
        floor = f"{max(t_c, t_m):.1f} ({'mem' if t_m > t_c else 'mma'})"
        g = g_rows[(M, N, K)]
        print(f"| {r['label']} | {M} | {N} | {K} | {flops/1e9:.1f} | {nbytes/1e6:.1f} | {floor} | "
              f"{g['ref_ms']*1e3:.1f} | {g['ms']*1e3:.1f} | {g['ratio']:.3f} | {r['ratio']:.3f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", help="bench result JSONs (without --summary: EAGER.json GRAPH.json)")
    p.add_argument("--plot", metavar="PNG", help="draw FILE's rows as `gemmkit bench --plot` does (needs matplotlib; "
                                                 "the roof assumes bf16 operands)")
    p.add_argument("--summary", action="store_true", help="one line per file: geomean, worst row, roofline efficiency")
    p.add_argument("--min-m", type=int, help="--summary: only rows with M >= this")
    p.add_argument("--max-m", type=int, help="--summary: only rows with M <= this")
    p.add_argument("--timing", choices=("cuda_graph", "eager"),
                   help="--summary: only rows timed this way (default: cuda_graph where a file has such rows)")
    p.add_argument("--dtype", help="--summary: only rows of this dtype (bf16, fp8, int8, fp4)")
    p.add_argument("--arch", default="sm_90", help="the target whose datasheet peaks are used (default sm_90)")
    p.add_argument("--gbps", type=float, default=4300.0, help="measured device copy bandwidth, GB/s (default 4300)")
    a = p.parse_args()
    peaks = arch.get(a.arch).peak_tflops
    if a.plot:
        from gemmkit.bench.plot import plot_results

        if len(a.files) != 1:
            p.error("--plot takes one file")
        plot_results(json.load(open(a.files[0])), a.plot, a.gbps)
    elif a.summary:
        def peak_of(r):
            dt = str(r.get("dtype", "bf16"))
            return peaks.get(dt, peaks["bf16"])  # fp4 on sm_90 is emulated on bf16 tensor cores
        summary(a.files, peak_of, a.gbps, a.min_m, a.max_m, a.timing, a.dtype)
    else:
        if len(a.files) != 2:
            p.error("without --summary: exactly two files, EAGER.json GRAPH.json")
        per_shape(a.files[0], a.files[1], peaks["bf16"], a.gbps)


if __name__ == "__main__":
    main()
