"""Where the block-scale FP8 kernel's time goes, against its own rowcol mode on the same tiles (session 14).

Runs under a probe patch of the FP8 Gluon kernel (logs/session14/bs_probe.patch, never committed): the env var
GEMMKIT_BS_PROBE = 1 (no w-scale load), 2 (no x-scale cp.async), 3 (FADD instead of the scaled FFMA promotion),
4 (all three); 0 or committed code: the shipped kernel. 1-4 are timing only (wrong outputs). One process per
probe value, processes alternating; per row: the op (gemm_a8w8_blockscale, table config), with --rowcol also the
same config in rowcol mode (per-token scales: the ceiling without block scales) and bf16 torch.matmul, CUDA-graph
timing of rotated inputs, `--passes` passes interleaved, median.

Usage (repo root, GPU): GEMMKIT_BS_PROBE=P PYTHONPATH=. python benchmarks/bs_probe.py --json OUT.json [--rowcol]
"""
import argparse
import json
import os
import statistics
import time

ROWS = [(4096, 2112, 7168), (4096, 7168, 16384), (4096, 4096, 7168), (4096, 7168, 2048), (4096, 24576, 1536)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--rowcol", action="store_true")
    ap.add_argument("--mmajor", action="store_true", help="also time the inputs' x_scale made M-major (a (KB, M) "
                    "tensor, transposed); since git a7339ad the bench's inputs are M-major already, so this compares "
                    "M-major with itself: check out b3053c9 to rerun session 14's row-major / M-major comparison")
    args = ap.parse_args()
    import torch

    from gemmkit import arch
    from gemmkit.bench import git_sha, ops as bench_ops
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k
    from gemmkit.ops import _common as C

    op = bench_ops.get("a8w8_blockscale")
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    t = arch.current()
    probe = int(os.environ.get("GEMMKIT_BS_PROBE", "0"))
    out = {"meta": dict(device=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d %H:%M:%S"),
                        torch=torch.__version__, git_sha=git_sha(), probe=probe, passes=args.passes), "rows": []}
    for M, N, K in ROWS:
        torch.manual_seed(N + K)
        first = op.make_inputs(M, N, K, "fp8", dev)
        nbytes = sum(x.numel() * x.element_size() for x in first)
        sets = [first] + [op.make_inputs(M, N, K, "fp8", dev) for _ in range(rotation_count(nbytes, l2) - 1)]
        cfg, _ = C.resolve_config("A8W8_BLOCKSCALE", None, t, M, N, K)
        fns = {"block": lambda *i: op.run(i, None), "bf16": lambda *i: op.vendor(i)}
        if args.mmajor:
            msets = [(s[0], s[1], s[2].t().contiguous().t(), *s[3:]) for s in sets]
            fns["block_mmajor"] = lambda *i: op.run(i, None)
            if probe == 0:
                got_m = op.run(msets[0], None)
                assert torch.equal(got_m, op.run(first, None)), "M-major x_scale changed the result"
        if args.rowcol:
            xs1 = [torch.rand(M, device=dev) / 16 + 1e-3 for _ in sets]
            ws1 = [torch.rand(N, device=dev) / 16 + 1e-3 for _ in sets]
            ys = [torch.empty(M, N, device=dev, dtype=torch.bfloat16) for _ in sets]
            rsets = [(s[0], s[1], a, b, y) for s, a, b, y in zip(sets, xs1, ws1, ys)]

            def rowcol(x, w, a, b, y):
                k.launch(x, w, a, b, None, y, cfg, t)
            fns["rowcol"] = rowcol
        if probe == 0:
            ref = op.reference(first).float()
            got = op.run(first, None).float()
            assert ((got - ref).norm() / ref.norm()).item() < 2e-2
        times = {key: [] for key in fns}
        for p in range(args.passes):
            keys = list(fns)
            for key in keys[p % len(keys):] + keys[:p % len(keys)]:
                use = {"rowcol": rsets if args.rowcol else None, "block_mmajor": msets if args.mmajor else None}.get(key)
                times[key].append(time_graph(fns[key], use or sets) * 1e3)
        med = {key: statistics.median(v) for key, v in times.items()}
        tf = {key: 2 * M * N * K / v * 1e-6 for key, v in med.items()}
        out["rows"].append(dict(M=M, N=N, K=K, config=cfg, times_us=times, median_us=med, tflops=tf))
        print(f"probe {probe} {M}x{N}x{K} " + "  ".join(f"{key} {tf[key]:7.1f}" for key in tf), flush=True)
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
