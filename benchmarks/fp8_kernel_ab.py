"""Same-process A/B of two versions of the FP8 Gluon kernel (kernels/gluon/hopper_pingpong_fp8.py) through the op,
with torch._scaled_mm timed beside them.

The "prev" version is another copy of the kernel file (e.g. `git show <rev>:gemmkit/kernels/gluon/hopper_pingpong_fp8.py
> prev.py`), imported as a sibling module of the package so its relative imports resolve to the current plan,
mainloop and host code (both versions must then take the same constexprs, hopper_fp8_plan.constexprs); or a
directory holding that revision's hopper_pingpong_fp8.py, hopper_fp8_mainloop.py and hopper_fp8_plan.py, imported
together (the kernel's imports of the other two rewritten to the copies).
With `--sustain-ms T` each side of each row also runs back to back for T ms (its CUDA graph replayed, no L2 flush
between calls) while `nvidia-smi -lms 20` samples the SM clock and the board power: whether a faster schedule runs
at a lower clock under the power limit (the fp8 kernels run at ~1.4 GHz of the H200's 1.98, docs/PERF.md). The op (`--op a8w8`: gemm_a8w8,
`a8w8_blockscale`: gemm_a8w8_blockscale on DeepSeek-V3's dense rows, M-major x scales as gemmkit.quant makes them;
the table's config) runs it by swapping the module's `launch`. With `--cpasync` (block scales) a third side runs
the new kernel with its scales copied by cp.async instead of TMA (launch(scale_tma=False)). Each row: every output checked against
float64-free fp32 reference (rel. error), prev and new compared bit for bit, then `--passes` passes of CUDA-graph
timing of rotated inputs (bench/timing.time_graph), the order of vendor / prev / new rotated between passes,
median per side. Rows whose table config does not run the Gluon coop kernel time the same code twice (a control).

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/fp8_kernel_ab.py --prev prev.py|prevdir --json OUT.json
       [--op a8w8_blockscale --cpasync] [--sustain-ms 1500]
"""
import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import time

SQUARES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 512), (4096, 4096, 1024), (4096, 4096, 2048)]
LLAMA70B = [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
DEEPSEEK = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
_PARTS = ("hopper_fp8_plan", "hopper_fp8_mainloop", "hopper_pingpong_fp8")  # import order


def _load(name, path, text=None):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    if text is None:
        spec.loader.exec_module(mod)
    else:
        exec(compile(text, path, "exec"), mod.__dict__)
    return mod


def load_prev(path):
    pkg = "gemmkit.kernels.gluon"
    if not os.path.isdir(path):
        return _load(f"{pkg}._ab_prev_fp8", path)
    mod = None
    for part in _PARTS:
        text = open(os.path.join(path, part + ".py")).read()
        for other in _PARTS[:-1]:
            text = text.replace(f"from .{other} import", f"from ._abprev_{other} import")
        mod = _load(f"{pkg}._abprev_{part}", os.path.join(path, part + ".py"), text)
    return mod


class Smi:
    """nvidia-smi sampling the SM clock (MHz), board power (W; on Hopper `power.draw` is a ~1 s average), the power
    limit (W) and the temperature (C) every 20 ms into a file, read back per window. Its values change about every
    100 ms, so `samples` counts repeats."""

    FIELDS = ("sm_mhz", "watts", "power_limit_w", "temp_c")

    def __init__(self, path):
        import subprocess

        self.path = path
        self.f = open(path, "w")
        query = "--query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu"
        self.p = subprocess.Popen(["nvidia-smi", query, "--format=csv,noheader,nounits", "-lms", "20"], stdout=self.f,
                                  stderr=subprocess.DEVNULL)

    def window(self, t0, t1):
        """{field: median} of the samples taken between wall times t0 and t1, and `samples`."""
        import datetime

        vals = {k: [] for k in self.FIELDS}
        self.f.flush()
        for line in open(self.path):
            parts = [v.strip() for v in line.split(",")]
            try:
                ts = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                row = [float(v) for v in parts[1:1 + len(self.FIELDS)]]
            except (ValueError, IndexError):
                continue
            if t0 <= ts <= t1 and len(row) == len(self.FIELDS):
                for k, v in zip(self.FIELDS, row):
                    vals[k].append(v)
        out = {k: (statistics.median(v) if v else None) for k, v in vals.items()}
        out["samples"] = len(vals["sm_mhz"])
        return out

    def close(self):
        self.p.terminate()
        self.p.wait()
        self.f.close()


def sustain(fn, sets, ms, smi):
    """ms per call of fn replayed back to back for ~ms milliseconds (a CUDA graph of one call per input set, no L2
    flush), with the medians of the second half of that time (the first half lets the clock and power settle;
    `power.draw` averages over ~1 s, so ms should be >= 1000)."""
    import torch

    from gemmkit.bench.timing import capture_graph

    g = capture_graph(fn, sets)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    torch.cuda.synchronize()
    reps = max(2, int(ms / max(a.elapsed_time(b), 1e-3)))
    t0 = time.time()
    a.record()
    for _ in range(reps):
        g.replay()
    b.record()
    torch.cuda.synchronize()
    t1 = time.time()
    return dict(ms_per_call=a.elapsed_time(b) / (reps * len(sets)), **smi.window(t0 + (t1 - t0) / 2, t1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prev", required=True, help="the other version of hopper_pingpong_fp8.py")
    ap.add_argument("--json", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--ms", default="256,1024,4096", help="M values of the Llama-3-70B rows")
    ap.add_argument("--no-squares", action="store_true", help="only the Llama-3-70B rows")
    ap.add_argument("--op", default="a8w8", choices=("a8w8", "a8w8_blockscale"))
    ap.add_argument("--bs-ms", default="4096", help="(a8w8_blockscale) M values of the DeepSeek-V3 rows")
    ap.add_argument("--cpasync", action="store_true", help="(a8w8_blockscale) also the new kernel, scales by cp.async")
    ap.add_argument("--sustain-ms", type=float, default=0, help="also run each side back to back this long, "
                    "sampling the SM clock and power (nvidia-smi)")
    ap.add_argument("--rows", default="", help="only these rows, MxNxK comma-separated")
    ap.add_argument("--new-config", default="", help="JSON merged into the table config of the new side only (a "
                    "config A/B: --prev a copy of the current kernel files)")
    args = ap.parse_args()

    import torch

    from gemmkit.bench import ops as bench_ops, stamp
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.kernels.gluon import hopper_pingpong_fp8 as new

    prev = load_prev(args.prev)
    launches = {"prev": prev.launch, "new": new.launch}
    if args.cpasync:
        launches["new_cpasync"] = functools.partial(new.launch, scale_tma=False)
    op = bench_ops.get(args.op)
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    if args.op == "a8w8":
        rows = [] if args.no_squares else [(M, N, K) for M, N, K in SQUARES]
        rows += [(m, n, k) for m in (int(v) for v in args.ms.split(",")) for n, k in LLAMA70B]
    else:
        rows = [(m, n, k) for m in (int(v) for v in args.bs_ms.split(",")) for n, k in DEEPSEEK]
    if args.rows:
        keep = {tuple(int(v) for v in r.split("x")) for r in args.rows.split(",")}
        rows = [r for r in rows if r in keep]
        if not rows:
            raise SystemExit(f"--rows {args.rows}: none of this op's rows")
    smi = Smi(args.json + ".smi.csv") if args.sustain_ms else None
    out = {"meta": dict(stamp(), prev=args.prev, passes=args.passes, op=args.op,
                        vendor=op.vendor_name("fp8")), "rows": []}

    override = json.loads(args.new_config) if args.new_config else None
    shape = {}  # the row being run (its table config is the base of --new-config)

    def run_with(which):
        def fn(*inp):
            new.launch = launches[which]
            cfg = None
            if override and which != "prev":
                from gemmkit import configs

                cfg = {**configs.select(args.op, "sm_90", *shape["mnk"])[0], **override}
            try:
                return op.run(inp, cfg)
            finally:
                new.launch = launches["new"]
        return fn

    try:
        out["meta"].update(new_config=override, sustain_ms=args.sustain_ms, rows_filter=args.rows or None)
        for M, N, K in rows:
            shape["mnk"] = (M, N, K)
            torch.manual_seed(M + N + K)
            first = op.make_inputs(M, N, K, "fp8", dev)
            nbytes = sum(t.numel() * t.element_size() for t in first)
            sets = [first] + [op.make_inputs(M, N, K, "fp8", dev) for _ in range(rotation_count(nbytes, l2) - 1)]
            ref = op.reference(first).float()
            got = {k: run_with(k)(*first) for k in launches}
            rel = ((got["new"].float() - ref).norm() / ref.norm()).item()
            rel_prev = ((got["prev"].float() - ref).norm() / ref.norm()).item()
            assert torch.isfinite(got["new"]).all() and rel < 2e-2, (M, N, K, rel)
            assert torch.isfinite(got["prev"]).all() and rel_prev < 2e-2, (M, N, K, rel_prev)
            # (--new-config: two configs, e.g. another tail split, need not agree bit for bit: not compared)
            same = None if override else bool(torch.equal(got["new"], got["prev"]))
            same_cp = bool(torch.equal(got["new"], got["new_cpasync"])) if args.cpasync else None
            fns = {"vendor": lambda *i: op.vendor(i), **{k: run_with(k) for k in launches}}
            t = {k: [] for k in fns}
            keys = list(fns)
            for p in range(args.passes):
                order = keys[p % len(keys):] + keys[:p % len(keys)]
                for key in order:
                    t[key].append(time_graph(fns[key], sets) * 1e3)
            med = {k: statistics.median(v) for k, v in t.items()}
            row = dict(M=M, N=N, K=K, times_us=t, median_us=med, rel_err=rel, rel_err_prev=rel_prev,
                       bitwise_equal=same,
                       new_over_prev=med["prev"] / med["new"], ratio_new=med["vendor"] / med["new"],
                       ratio_prev=med["vendor"] / med["prev"],
                       tflops={k: 2 * M * N * K / v * 1e-6 for k, v in med.items()})
            if args.cpasync:
                row.update(bitwise_equal_cpasync=same_cp, new_over_cpasync=med["new_cpasync"] / med["new"])
            if smi:
                order = keys[len(out["rows"]) % len(keys):] + keys[:len(out["rows"]) % len(keys)]  # rotated by row
                row["sustained"] = {k: sustain(fns[k], sets, args.sustain_ms, smi) for k in order}
                row["sustained_order"] = order
                print("   sustained: " + "  ".join(f"{k} {v['ms_per_call'] * 1e3:.2f} us {v['sm_mhz']} MHz "
                                               f"{v['watts']} W {v['temp_c']} C" for k, v in row["sustained"].items()),
                      flush=True)
            out["rows"].append(row)
            print(f"{M:5d} x {N:5d} x {K:5d}  prev {med['prev']:9.2f}  new {med['new']:9.2f}  vendor {med['vendor']:9.2f} us"
                  f"  new/prev {row['new_over_prev']:.3f}  ratio prev {row['ratio_prev']:.3f} new {row['ratio_new']:.3f}"
                  f"  equal {same}" + (f"  new/cpasync {row['new_over_cpasync']:.3f} equal {same_cp}" if args.cpasync
                                       else ""), flush=True)
        g = lambda key: statistics.geometric_mean([r[key] for r in out["rows"]])  # noqa: E731
        out["geomean"] = {k: g(k) for k in ("new_over_prev", "ratio_new", "ratio_prev") +
                          (("new_over_cpasync",) if args.cpasync else ())}
        print("geomean", {k: round(v, 4) for k, v in out["geomean"].items()})
    finally:
        if smi:
            smi.close()
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
