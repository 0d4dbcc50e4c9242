"""The config model (gemmkit/configs/model/) on shapes no table was tuned for, against the vendor in the same process.

Each row times gemmkit with the default bucket chosen and fitted for the shape (model.choose + fit: what a call
gets), the same bucket as the table has it (model.choose off: what the tables alone would give), and the op's vendor
(torch.matmul / torch._scaled_mm rowwise / cuBLASLt's block-scaled GEMM: gemmkit/bench/ops.py). CUDA-graph replay,
inputs rotated past the L2, each gemmkit mode twice (the better round; rows the model leaves alone time the same
config twice: the noise floor). Every served result is checked against fp32 before it is timed.

Shapes: every layer of the held-out model families (gemmkit/bench/model_configs.json entries marked "untuned": no
table or rule was fitted on them) at M = 128, 256, 1024, 4096, plus odd sizes. Each row carries its roofline
efficiency: the time the shape needs at the target's dense peak or HBM bandwidth, whichever is longer, over the
measured time (1.0: at the roofline).

    PYTHONPATH=. python3 benchmarks/config_model.py [--op a16w16|a8w8|a8w8_blockscale] [--models NAME,...]
        [-m 128,256,1024,4096] [--no-odd] [JSON]      (JSON: benchmarks/results/<gpu>/config_model_<op>.json;
                                                          the tuned families at -m 80,128,200: config_model_tuned_<op>.json)
"""
import argparse

ODD = [("odd", 3000, 5000, 7000), ("odd", 1000, 3000, 2000), ("odd", 777, 1536, 8000), ("odd", 4096, 256, 16384)]
DTYPES = {"a16w16": "bf16", "a8w8": "fp8", "a8w8_blockscale": "fp8"}


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
    p.add_argument("--op", default="a16w16", choices=tuple(DTYPES))
    p.add_argument("--models", default="untuned", help="comma list of model_configs.json names, or 'untuned' (the "
                                                         "entries marked untuned)")
    p.add_argument("-m", default="128,256,1024,4096", help="M values")
    p.add_argument("--no-odd", action="store_true", help="leave out the odd sizes")
    return p.parse_args(argv)


def held_out_models():
    """The model_configs.json entries no table or config-model rule was fitted on."""
    import json
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gemmkit", "bench", "model_configs.json")
    with open(path) as f:
        models = json.load(f)["models"]
    return {name: m["layers"] for name, m in models.items() if m.get("untuned")}


def shapes(args):
    """(label, M, N, K) rows: every layer of each chosen model at every M, then the odd sizes."""
    untuned = held_out_models()
    if args.models == "untuned":
        layers = untuned
    else:
        from gemmkit.bench.suite import model_suite

        names = args.models.split(",")
        return [r for r in model_suite(names, [int(m) for m in args.m.split(",")])] + ([] if args.no_odd else ODD)
    rows = [(f"{model} {layer}", M, n, k) for model, ls in layers.items() for layer, (n, k) in ls.items()
            for M in (int(m) for m in args.m.split(","))]
    return rows + ([] if args.no_odd else ODD)


def roofline_us(target, M, N, K, dtype_name, op):
    """The shortest time the shape can take on `target`: its flops at the dense peak or its minimum bytes at the HBM
    bandwidth, whichever is longer (microseconds)."""
    flops, nbytes = op.work(M, N, K, dtype_name)
    return max(flops / (target.peak_tflops[op.peak_key(dtype_name)] * 1e12), nbytes / (target.hbm_gbps * 1e9)) * 1e6


def main(argv=None):
    args = parse(argv)
    import json
    import math
    import sys

    import torch

    sys.path.insert(0, ".")
    import gemmkit  # noqa: F401
    from gemmkit import arch, callplan, configs
    from gemmkit.bench import stamp
    from gemmkit.bench import ops as bench_ops
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.configs import model

    op, dtype_name = bench_ops.get(args.op), DTYPES[args.op]
    table_op = op.table_op(dtype_name)
    target = arch.current(0)
    L2 = torch.cuda.get_device_properties(0).L2_cache_size
    real_choose = model.choose
    rows = []
    for label, M, N, K in shapes(args):
        _fitted, source = configs.serve(table_op, target, M, N, K)
        per_set = (M + N) * K * op.operand_bytes(dtype_name)
        sets = [op.make_inputs(M, N, K, dtype_name, "cuda") for _ in range(rotation_count(per_set, L2))]
        res, errors, refused = {}, {}, None
        for mode in ("model", "bucket", "vendor", "model2", "bucket2"):
            model.choose = real_choose if mode.startswith("model") else (lambda o, cfg, *a, **k: (cfg, []))
            callplan.clear()
            fn = (lambda *inp: op.vendor(inp)) if mode == "vendor" else (lambda *inp: op.run(inp, None))
            if mode in ("model", "bucket", "vendor"):  # each served result against fp32, before it is timed
                ref = op.reference(sets[0]).float()
                try:
                    errors[mode] = ((fn(*sets[0]).float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                except RuntimeError as e:  # the vendor refuses the shape (cuBLASLt: K % 16, block scales K % 128)
                    if mode != "vendor":
                        raise
                    refused = str(e).split("\n")[0][:160]
                    continue
                assert errors[mode] < 5e-2, (label, M, N, K, mode, errors[mode])
            res[mode] = time_graph(fn, sets) * 1e3
        model.choose = real_choose
        us_model, us_bucket = min(res["model"], res["model2"]), min(res["bucket"], res["bucket2"])
        floor = roofline_us(target, M, N, K, dtype_name, op)
        vendor = res.get("vendor")
        row = dict(label=label, M=M, N=N, K=K, fitted="fitted" in source, source=source,
                   model_us=round(us_model, 2), bucket_us=round(us_bucket, 2),
                   vendor_us=vendor and round(vendor, 2), ratio_model=vendor and round(vendor / us_model, 3),
                   ratio_bucket=vendor and round(vendor / us_bucket, 3), roofline_model=round(floor / us_model, 3),
                   roofline_vendor=vendor and round(floor / vendor, 3),
                   rel_err_model=float(f"{errors['model']:.3g}"),
                   rel_err_vendor=float(f"{errors['vendor']:.3g}") if vendor else None)
        if refused:
            row["vendor_refused"] = refused
        rows.append(row)
        print(json.dumps(row), flush=True)

    def geo(key):  # over the rows that have it (a vendor that refused a shape has no ratio there)
        vals = [r[key] for r in rows if r[key]]
        return round(math.exp(sum(map(math.log, vals)) / len(vals)), 3) if vals else None

    timed = [r for r in rows if r["ratio_model"]]
    worst = min(timed, key=lambda r: r["ratio_model"]) if timed else {k: None for k in ("label", "M", "N", "K",
                                                                                         "ratio_model",
                                                                                         "roofline_model")}
    summary = dict(rows=len(rows), vendor_refused=len(rows) - len(timed), geomean_model=geo("ratio_model"),
                   geomean_bucket=geo("ratio_bucket"), under_090=sum(r["ratio_model"] < 0.9 for r in timed),
                   worst_roofline_model=min(r["roofline_model"] for r in rows), worst=dict(
                       (k, worst[k]) for k in ("label", "M", "N", "K", "ratio_model", "roofline_model")),
                   geomean_roofline_model=geo("roofline_model"), geomean_roofline_vendor=geo("roofline_vendor"))
    print(json.dumps(summary))
    out = {**stamp(), "op": args.op, "dtype": dtype_name,
           "models": args.models if args.models != "untuned" else sorted(held_out_models()),
           "method": "CUDA-graph replay, inputs rotated past the L2, each gemmkit mode twice (better round); ratio = "
                     f"vendor_us / gemmkit_us ({op.vendor_name(dtype_name)}); roofline = max(flops / dense peak, "
                     "minimum bytes / HBM bandwidth) / measured time", "summary": summary, "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
