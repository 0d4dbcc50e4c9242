"""Per-tile fixed cost of the FP8 per-token GEMM against torch._scaled_mm: time against K at fixed M, N.

At fixed M and N our persistent kernel runs the same tiles on every CTA for any K, so time(K) = a + b * K. The
slope b is the mainloop's cost per K; the intercept a is what the CTAs' sequence of tiles (~8 at 4096, ~32 at
8192) pays whatever the K (pipeline fill, epilogues, scales, stores), plus the launch: `intercept_us_per_round`
divides it by the rounds. Comparing a and b says whether a gap is in the mainloop (b) or in the per-tile
overhead (a) that an overlap of the epilogue would hide. The vendor may pick another kernel per K, so its
split into a and b is a description of its times, not of one kernel. Each fit carries its standard errors
(from the residuals): intercepts differing by less than about twice those are not told apart.

One config for every K (the default table's `any`, the config 4096^3 and 8192^3 run), CUDA-graph timing of
rotated inputs (bench/timing.time_graph), passes interleaved with the vendor, median per point, every
output checked first.

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/fp8_k_scaling.py --json OUT.json [--passes 3]
"""
import argparse
import json
import statistics
import time

CONFIG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16, "num_warps": 8,
          "num_stages": 6, "backend": "gluon"}
SERIES = {(4096, 4096): (512, 1024, 2048, 4096, 8192, 16384), (8192, 8192): (1024, 2048, 4096, 8192)}


def fit(ks, ts):
    """Least squares t = a + b k: (a, b, standard error of a, standard error of b)."""
    n = len(ks)
    mk, mt = sum(ks) / n, sum(ts) / n
    sxx = sum((k - mk) ** 2 for k in ks)
    b = sum((k - mk) * (t - mt) for k, t in zip(ks, ts)) / sxx
    a = mt - b * mk
    s2 = sum((t - a - b * k) ** 2 for k, t in zip(ks, ts)) / max(n - 2, 1)
    return a, b, (s2 * (1 / n + mk * mk / sxx)) ** 0.5, (s2 / sxx) ** 0.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--sizes", default="4096,8192", help="which M = N series to run")
    ap.add_argument("--no-check", action="store_true", help="time without checking (a probe that is wrong on purpose)")
    args = ap.parse_args()
    sizes = {int(v) for v in args.sizes.split(",")}

    import torch

    from gemmkit.bench import git_sha, ops as bench_ops
    from gemmkit.bench.timing import rotation_count, time_graph

    op = bench_ops.get("a8w8")
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    out = {"meta": dict(device=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d %H:%M:%S"),
                        torch=torch.__version__, triton=__import__("triton").__version__, git_sha=git_sha(),
                        config=CONFIG, passes=args.passes), "series": []}
    for (M, N), klist in SERIES.items():
        if M not in sizes:
            continue
        pts = []
        for K in klist:
            torch.manual_seed(K)
            first = op.make_inputs(M, N, K, "fp8", dev)
            nbytes = sum(t.numel() * t.element_size() for t in first)
            sets = [first] + [op.make_inputs(M, N, K, "fp8", dev) for _ in range(rotation_count(nbytes, l2) - 1)]
            ref = op.reference(first).float()
            got = op.run(first, CONFIG).float()
            rel = ((got - ref).norm() / ref.norm()).item()
            assert args.no_check or (torch.isfinite(got).all() and rel < 2e-2), (M, N, K, rel)
            t = {"ours": [], "vendor": []}
            for p in range(args.passes):
                order = [("vendor", lambda *i: op.vendor(i)), ("ours", lambda *i: op.run(i, CONFIG))]
                for key, fn in (order[::-1] if p % 2 else order):
                    t[key].append(time_graph(fn, sets) * 1e3)
            med = {k: statistics.median(v) for k, v in t.items()}
            pts.append(dict(K=K, times_us=t, median_us=med, rel_err=rel, ratio=med["vendor"] / med["ours"],
                            tflops_ours=2 * M * N * K / med["ours"] * 1e-6))
            print(f"M=N={M} K={K:6d}  ours {med['ours']:9.2f} us  vendor {med['vendor']:9.2f} us  "
                  f"ratio {med['vendor'] / med['ours']:.3f}  rel {rel:.1e}", flush=True)
        ks = [p["K"] for p in pts]
        fits = {}
        for key in ("ours", "vendor"):
            a, b, sa, sb = fit(ks, [p["median_us"][key] for p in pts])
            fits[key] = dict(intercept_us=a, us_per_1k_K=b * 1e3, intercept_se_us=sa, us_per_1k_K_se=sb * 1e3)
        tiles = -(-M // CONFIG["BLOCK_SIZE_M"]) * -(-N // CONFIG["BLOCK_SIZE_N"])
        rounds = tiles / sms
        for key in fits:
            fits[key]["intercept_us_per_round"] = fits[key]["intercept_us"] / -(-tiles // sms)
        o, v = fits["ours"], fits["vendor"]
        print(f"M=N={M}: {tiles} tiles, {rounds:.2f} rounds; fit t = a + b K:  ours a {o['intercept_us']:.2f} "
              f"+- {o['intercept_se_us']:.2f} us b {o['us_per_1k_K']:.3f} us/1k;  vendor a {v['intercept_us']:.2f} "
              f"+- {v['intercept_se_us']:.2f} us b {v['us_per_1k_K']:.3f} us/1k", flush=True)
        out["series"].append(dict(M=M, N=N, tiles=tiles, rounds=rounds, points=pts, fit=fits))
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
