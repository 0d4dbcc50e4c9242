"""Same-process A/B of two versions of the FP8 Gluon kernel (kernels/gluon/hopper_pingpong_fp8.py) through the op,
with torch._scaled_mm timed beside them.

The "prev" version is another copy of the kernel file (e.g. `git show <rev>:gemmkit/kernels/gluon/hopper_pingpong_fp8.py
> prev.py`), imported as a sibling module of the package so its relative imports resolve to the current plan,
mainloop and host code; the op (`gemm_a8w8` with the table's config) runs it by swapping the module's `launch`.
Both versions must take the same constexprs (hopper_fp8_plan.constexprs). Each row: every output checked against
float64-free fp32 reference (rel. error), prev and new compared bit for bit, then `--passes` passes of CUDA-graph
timing of rotated inputs (bench/timing.time_graph), the order of vendor / prev / new rotated between passes,
median per side. Rows whose table config does not run the Gluon coop kernel time the same code twice (a control).

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/fp8_kernel_ab.py --prev prev.py --json OUT.json
"""
import argparse
import importlib.util
import json
import statistics
import sys
import time

SQUARES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 512), (4096, 4096, 1024), (4096, 4096, 2048)]
LLAMA70B = [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]


def load_prev(path):
    name = "gemmkit.kernels.gluon._ab_prev_fp8"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prev", required=True, help="the other version of hopper_pingpong_fp8.py")
    ap.add_argument("--json", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--ms", default="256,1024,4096", help="M values of the Llama-3-70B rows")
    ap.add_argument("--no-squares", action="store_true", help="only the Llama-3-70B rows")
    args = ap.parse_args()

    import torch

    from gemmkit.bench import git_sha, ops as bench_ops
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.kernels.gluon import hopper_pingpong_fp8 as new

    prev = load_prev(args.prev)
    launches = {"prev": prev.launch, "new": new.launch}
    op = bench_ops.get("a8w8")
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    rows = [] if args.no_squares else [(M, N, K) for M, N, K in SQUARES]
    rows += [(m, n, k) for m in (int(v) for v in args.ms.split(",")) for n, k in LLAMA70B]
    out = {"meta": dict(device=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d %H:%M:%S"),
                        torch=torch.__version__, triton=__import__("triton").__version__, git_sha=git_sha(),
                        prev=args.prev, passes=args.passes), "rows": []}

    def run_with(which):
        def fn(*inp):
            new.launch = launches[which]
            try:
                return op.run(inp, None)
            finally:
                new.launch = launches["new"]
        return fn

    for M, N, K in rows:
        torch.manual_seed(M + N + K)
        first = op.make_inputs(M, N, K, "fp8", dev)
        nbytes = sum(t.numel() * t.element_size() for t in first)
        sets = [first] + [op.make_inputs(M, N, K, "fp8", dev) for _ in range(rotation_count(nbytes, l2) - 1)]
        ref = op.reference(first).float()
        got = {k: run_with(k)(*first) for k in launches}
        rel = ((got["new"].float() - ref).norm() / ref.norm()).item()
        assert torch.isfinite(got["new"]).all() and rel < 2e-2, (M, N, K, rel)
        same = bool(torch.equal(got["new"], got["prev"]))
        fns = {"vendor": lambda *i: op.vendor(i), "prev": run_with("prev"), "new": run_with("new")}
        t = {k: [] for k in fns}
        keys = list(fns)
        for p in range(args.passes):
            order = keys[p % 3:] + keys[:p % 3]
            for key in order:
                t[key].append(time_graph(fns[key], sets) * 1e3)
        med = {k: statistics.median(v) for k, v in t.items()}
        row = dict(M=M, N=N, K=K, times_us=t, median_us=med, rel_err=rel, bitwise_equal=same,
                   new_over_prev=med["prev"] / med["new"], ratio_new=med["vendor"] / med["new"],
                   ratio_prev=med["vendor"] / med["prev"])
        out["rows"].append(row)
        print(f"{M:5d} x {N:5d} x {K:5d}  prev {med['prev']:9.2f}  new {med['new']:9.2f}  vendor {med['vendor']:9.2f} us"
              f"  new/prev {row['new_over_prev']:.3f}  ratio prev {row['ratio_prev']:.3f} new {row['ratio_new']:.3f}"
              f"  equal {same}", flush=True)
    g = lambda key: statistics.geometric_mean([r[key] for r in out["rows"]])  # noqa: E731
    out["geomean"] = {k: g(k) for k in ("new_over_prev", "ratio_new", "ratio_prev")}
    print("geomean", {k: round(v, 4) for k, v in out["geomean"].items()})
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
