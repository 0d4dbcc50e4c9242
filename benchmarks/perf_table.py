"""Markdown table for docs/PERF.md from committed bench results (eager + CUDA-graph runs).

    python benchmarks/perf_table.py benchmarks/results/h200/a16w16.json benchmarks/results/h200/a16w16_graph.json

Floor per shape = max(FLOPs / peak, minimum bytes / bandwidth), with the dense bf16 peak
from gemmkit.arch (datasheet) and the copy bandwidth given below (a measurement, not a
datasheet figure: pass --gbps to change it).
"""
import argparse
import json

from gemmkit import arch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("eager")
    p.add_argument("graph")
    p.add_argument("--gbps", type=float, default=4300.0, help="measured device copy bandwidth, GB/s")
    a = p.parse_args()
    eager, graph = json.load(open(a.eager)), json.load(open(a.graph))
    peak = arch.get("sm_90").peak_tflops["bf16"]
    g_rows = {(r["M"], r["N"], r["K"]): r for r in graph["rows"]}
    print(f"| shape | M | N | K | GFLOP | min MB | floor µs | cuBLAS µs (graph) | gemmkit µs (graph) | "
          f"ratio graph | ratio eager |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in eager["rows"]:
        M, N, K = r["M"], r["N"], r["K"]
        flops = 2 * M * N * K
        nbytes = (M * K + N * K + M * N) * 2
        t_c, t_m = flops / (peak * 1e12) * 1e6, nbytes / (a.gbps * 1e9) * 1e6
        floor = f"{max(t_c, t_m):.1f} ({'mem' if t_m > t_c else 'mma'})"
        g = g_rows[(M, N, K)]
        print(f"| {r['label']} | {M} | {N} | {K} | {flops/1e9:.1f} | {nbytes/1e6:.1f} | {floor} | "
              f"{g['ref_ms']*1e3:.1f} | {g['ms']*1e3:.1f} | {g['ratio']:.3f} | {r['ratio']:.3f} |")


if __name__ == "__main__":
    main()
