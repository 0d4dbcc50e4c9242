"""The Gluon ping-pong kernel on the H200: correctness, then timing against torch.matmul (cuBLAS) and the Triton tier.

    PYTHONPATH=. python benchmarks/hopper_pingpong.py --out $OUT/hopper_pingpong.json   # full run
    PYTHONPATH=. python benchmarks/hopper_pingpong.py --smoke                             # small checks first
    PYTHONPATH=. python benchmarks/hopper_pingpong.py --profile-once                      # one launch each, for ncu

Timing is gemmkit/bench/timing.py's: one CUDA graph holding one call per rotated input set
(inputs rotated when a set is under 4x the L2), replayed under triton.testing.do_bench, median.
torch.matmul is timed twice per shape (before and after the others): the spread of those two
is the noise floor of the comparison. ratio = torch ms / our ms (above 1: faster than cuBLAS).
The Triton tier runs with the sm_90 table's config for the shape, minus any "backend" key.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time

import torch

from gemmkit import arch
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.kernels.gluon import hopper_pingpong as hp

CONFIGS = {
    "128x128x64-s5-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                         "num_warps": 4, "num_stages": 5},
    "128x128x64-s5-g16": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16,
                          "num_warps": 4, "num_stages": 5},
    "128x128x64-s4-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                         "num_warps": 4, "num_stages": 4},
    "128x128x64-s6-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                         "num_warps": 4, "num_stages": 6},
    "128x128x64-s6-g16": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 16,
                          "num_warps": 4, "num_stages": 6},
    "128x128x128-s3-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                          "num_warps": 4, "num_stages": 3},
    "64x256x64-s4-g8": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                        "num_warps": 4, "num_stages": 4},
    "128x64x64-s6-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                        "num_warps": 4, "num_stages": 6},
}
SQUARES = [4096, 8192, 16384]
MODEL = [("llama3-70b qkv", 10240, 8192), ("llama3-70b o", 8192, 8192), ("llama3-70b gate_up", 57344, 8192),
         ("llama3-70b down", 8192, 28672), ("llama3-8b qkv", 6144, 4096), ("llama3-8b down", 4096, 14336)]
MODEL_M = [1024, 4096]


def env_header():
    def smi(q):
        try:
            return subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001
            return f"n/a ({e})"

    import triton

    return {"device": torch.cuda.get_device_name(), "sm_clock_mhz": smi("clocks.sm"),
            "max_sm_clock_mhz": smi("clocks.max.sm"), "driver": smi("driver_version"),
            "torch": torch.__version__, "triton": triton.__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "git_sha": os.environ.get("GEMMKIT_GIT_SHA", "unknown"),
            "timing": "CUDA graph of rotated input sets, triton do_bench median (gemmkit/bench/timing.py)"}


def rel_err(y, ref):
    if not torch.isfinite(y).all():
        return float("inf")
    return ((y.float() - ref).norm() / ref.norm()).item()


def inputs(M, N, K, dtype, l2):
    n = rotation_count((M * K + N * K + M * N) * 2, l2)
    return [(torch.randn(M, K, device="cuda", dtype=dtype), torch.randn(N, K, device="cuda", dtype=dtype),
             torch.empty(M, N, device="cuda", dtype=dtype)) for _ in range(n)]


def gluon_fn(cfg, target):
    return lambda x, w, y: hp.launch(x, w, None, y, "none", cfg, target)


def triton_tier_fn(M, N, K):
    import gemmkit
    from gemmkit import configs

    cfg = dict(configs.select("a16w16", "sm_90", M, N, K)[0])
    cfg.pop("backend", None)
    return (lambda x, w, y: gemmkit.gemm_a16w16(x, w, out=y, config=cfg)), cfg


def torch_fn(x, w, y):
    torch.matmul(x, w.T, out=y)


def bench_shape(label, M, N, K, configs, target, rep_ms, rows, log):
    dtype = torch.bfloat16
    sets = inputs(M, N, K, dtype, target.l2_bytes)
    x, w, _ = sets[0]
    ref = x.float() @ w.float().T
    flops, nbytes = 2.0 * M * N * K, (M * K + N * K + M * N) * 2
    base = dict(op="a16w16", label=label, M=M, N=N, K=K, dtype="bf16", ref_impl="torch.matmul",
                rotated_sets=len(sets))
    t_ref1 = time_graph(torch_fn, sets, rep_ms=rep_ms)
    results = []
    for name, cfg in configs.items():
        row = dict(base, backend="gluon", config=cfg, config_name=name)
        try:
            y = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
            hp.launch(x, w, None, y, "none", cfg, target)
            torch.cuda.synchronize()
            row["rel_err"] = rel_err(y, ref)
            if not row["rel_err"] <= 2**-8:
                row["error"] = f"wrong result: rel_err {row['rel_err']:.3g}"
            else:
                row["ms"] = time_graph(gluon_fn(cfg, target), sets, rep_ms=rep_ms)
        except Exception as e:  # noqa: BLE001 (a config that cannot run is a row, not a crash)
            row["error"] = f"{type(e).__name__}: {e}"[:500]
        results.append(row)
    try:
        fn, tcfg = triton_tier_fn(M, N, K)
        row = dict(base, backend="triton", config=tcfg, config_name="sm_90 table")
        y = torch.full((M, N), float("nan"), device="cuda", dtype=dtype)
        fn(x, w, y)
        torch.cuda.synchronize()
        row["rel_err"] = rel_err(y, ref)
        row["ms"] = time_graph(fn, sets, rep_ms=rep_ms)
    except Exception as e:  # noqa: BLE001
        row = dict(base, backend="triton", error=f"{type(e).__name__}: {e}"[:500])
    results.append(row)
    t_ref2 = time_graph(torch_fn, sets, rep_ms=rep_ms)
    ref_ms = (t_ref1 + t_ref2) / 2
    for r in results:
        r.update(ref_ms=ref_ms, ref_ms_first=t_ref1, ref_ms_last=t_ref2, ref_tflops=flops / ref_ms * 1e-9)
        if "ms" in r:
            r.update(tflops=flops / r["ms"] * 1e-9, gbps=nbytes / r["ms"] * 1e-6, ratio=ref_ms / r["ms"])
        rows.append(r)
    best = max((r for r in results if r["backend"] == "gluon" and "ms" in r), key=lambda r: r["ratio"], default=None)
    tri = next(r for r in results if r["backend"] == "triton")
    log(f"{label:22s} {M:6d} {N:6d} {K:6d} | cuBLAS {flops / ref_ms * 1e-9:6.1f} TF/s "
        f"(spread {abs(t_ref1 - t_ref2) / ref_ms * 100:4.1f}%) | triton {tri.get('ratio', float('nan')):.3f}x | "
        + (f"gluon best {best['config_name']} {best['tflops']:6.1f} TF/s {best['ratio']:.3f}x" if best
           else "gluon: none")
        + " | " + " ".join(f"{r['config_name']}={r.get('ratio', float('nan')):.3f}" for r in results
                           if r["backend"] == "gluon"))
    for r in results:
        if "error" in r:
            log(f"    {r['backend']} {r.get('config_name', '')}: {r['error']}")
    del sets, ref
    torch.cuda.empty_cache()


def smoke(target, log):
    """Small correctness checks (1-3 CTAs: many hand-offs), then one 8192^3 timing."""
    from gemmkit.reference import gemm_a16w16_ref

    cfg = CONFIGS["128x128x64-s5-g8"]
    for cus, (M, N, K), act in [(2, (300, 392, 200), "silu"), (1, (129, 520, 64), "gelu"),
                                (None, (4095, 1032, 776), "none")]:
        t = target.with_cus(cus) if cus else target
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        t0 = time.time()
        hp.launch(x, w, b, y, act, cfg, t)
        torch.cuda.synchronize()
        e = rel_err(y, gemm_a16w16_ref(x, w, b, act).to("cuda", torch.float32))
        log(f"smoke {M}x{N}x{K} {act} cus={cus}: rel_err {e:.3g} ({time.time() - t0:.1f}s incl. compile)")
        assert e <= 2**-8, e
    sets = inputs(8192, 8192, 8192, torch.bfloat16, target.l2_bytes)
    for name in ("torch", "gluon"):
        fn = torch_fn if name == "torch" else gluon_fn(cfg, target)
        ms = time_graph(fn, sets, rep_ms=100)
        log(f"smoke 8192^3 {name}: {ms:.3f} ms, {2 * 8192**3 / ms * 1e-9:.1f} TFLOP/s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--profile-once", action="store_true", help="one launch of gluon and torch.matmul at 8192^3")
    ap.add_argument("--configs", default="all", help="comma-separated names from CONFIGS")
    ap.add_argument("--squares", default=",".join(map(str, SQUARES)))
    ap.add_argument("--model-m", default=",".join(map(str, MODEL_M)), help="M values of the model shapes ('' = none)")
    ap.add_argument("--rep-ms", type=int, default=100)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    target = arch.current()
    lines = []

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    if args.smoke:
        return smoke(target, log)
    configs = CONFIGS if args.configs == "all" else {k: CONFIGS[k] for k in args.configs.split(",")}
    if args.profile_once:
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        y = torch.empty(8192, 8192, device="cuda", dtype=torch.bfloat16)
        for cfg in configs.values():
            hp.launch(x, w, None, y, "none", cfg, target)
        torch_fn(x, w, y)
        torch.cuda.synchronize()
        return None
    header = env_header()
    log(json.dumps(header))
    shapes = [(f"square {s}", s, s, s) for s in map(int, filter(None, args.squares.split(",")))]
    shapes += [(lab, m, n, k) for m in map(int, filter(None, args.model_m.split(","))) for lab, n, k in MODEL]
    rows = []
    t0 = time.time()

    def write(summary=None):
        if args.out:  # after every shape: a run cut short by its time limit still leaves its rows
            with open(args.out, "w") as f:
                json.dump({**header, "summary": summary or {}, "rows": rows, "log": lines}, f, indent=1)

    for label, M, N, K in shapes:
        bench_shape(label, M, N, K, configs, target, args.rep_ms, rows, log)
        write()
    # Geomean over the model shapes (M >= 1024): best gluon config per shape vs the Triton tier, vs cuBLAS.
    summary = {}
    for key in ("gluon_best", "triton"):
        ratios = []
        for label, M, N, K in shapes:
            if label.startswith("square"):
                continue
            rs = [r for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K) and "ratio" in r and
                  (r["backend"] == "triton" if key == "triton" else r["backend"] == "gluon")]
            if rs:
                ratios.append(max(r["ratio"] for r in rs))
        if ratios:
            summary[f"{key}_geomean_ratio_models"] = math.exp(sum(map(math.log, ratios)) / len(ratios))
    log(f"model shapes geomean vs cuBLAS: {json.dumps(summary)} ({time.time() - t0:.0f}s)")
    header["clock_after_mhz"] = env_header()["sm_clock_mhz"]
    write(summary)
    return None


if __name__ == "__main__":
    sys.exit(main())
