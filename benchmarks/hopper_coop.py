"""The Gluon cooperative kernel on the H200 (issues 7 and 3): correctness smoke, then timing against
torch.matmul (cuBLAS), the shipped sm_90 table config and the ping-pong, in one process.

    PYTHONPATH=. python benchmarks/hopper_coop.py --smoke                        # small checks, 1-3 CTAs
    PYTHONPATH=. python benchmarks/hopper_coop.py --out $OUT/hopper_coop.json    # squares + model rows

Timing is gemmkit/bench/timing.py's `time_graph` (one CUDA graph of one call per rotated input set,
do_bench median), as benchmarks/hopper_pingpong.py. torch.matmul is timed before and after the
candidates of a shape; ratio = mean torch ms / candidate ms (> 1: faster than cuBLAS); the spread of
the two torch timings is the noise floor. "table" = gemm_a16w16 with the shipped table's config.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import torch

from benchmarks.hopper_pingpong import env_header, inputs, rel_err, torch_fn
from gemmkit import arch
from gemmkit.bench.timing import time_graph
from gemmkit.kernels.gluon import hopper_coop as hc
from gemmkit.kernels.gluon import hopper_pingpong as hp


def _coop(bm, bn, stages, group):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": group, "num_warps": 8,
            "num_stages": stages}


COOP = {"coop-128x256x64-s4-g8": _coop(128, 256, 4, 8), "coop-128x256x64-s4-g16": _coop(128, 256, 4, 16),
        "coop-128x256x64-s3-g8": _coop(128, 256, 3, 8), "coop-256x128x64-s4-g8": _coop(256, 128, 4, 8)}
# --wide: the second round (after run 1: s3 led on most rows, g16 at 16384^3)
COOP_WIDE = {"coop-128x256x64-s3-g8": _coop(128, 256, 3, 8), "coop-128x256x64-s3-g16": _coop(128, 256, 3, 16),
             "coop-128x256x64-s4-g16": _coop(128, 256, 4, 16), "coop-256x128x64-s3-g8": _coop(256, 128, 3, 8),
             "coop-256x128x64-s4-g8": _coop(256, 128, 4, 8), "coop-256x128x64-s4-g16": _coop(256, 128, 4, 16)}
PINGPONG = {"pp-128x128x64-s5-g8": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                                    "num_warps": 4, "num_stages": 5}}
SQUARES = [4096, 8192, 16384]
# The large M >= 1024 rows of gemmkit/bench/model_configs.json that sat at 0.89-0.96x (a16w16_models_geq256_graph.json)
MODEL = [("deepseek-v3 dense_down", 4096, 7168, 18432), ("llama3-405b down_proj", 2048, 16384, 53248),
         ("llama3-8b down_proj", 2048, 4096, 14336), ("llama3-70b o_proj", 2048, 8192, 8192),
         ("llama3-70b gate_up_proj", 2048, 57344, 8192), ("deepseek-v3 o_proj", 2048, 7168, 16384),
         ("qwen2.5-72b gate_up_proj", 4096, 59136, 8192), ("qwen2.5-72b down_proj", 2048, 8192, 29568),
         ("llama3-70b o_proj", 1024, 8192, 8192), ("deepseek-v3 dense_gate_up", 4096, 36864, 7168),
         ("llama3-70b down_proj", 2048, 8192, 28672)]
MODEL_WIDE = [("llama3-70b o_proj", 4096, 8192, 8192), ("llama3-70b gate_up_proj", 4096, 57344, 8192),
              ("llama3-70b gate_up_proj", 1024, 57344, 8192), ("llama3-70b qkv_proj", 2048, 10240, 8192),
              ("llama3-405b qkv_proj", 4096, 18432, 16384)]


def table_fn():
    import gemmkit

    return lambda x, w, y: gemmkit.gemm_a16w16(x, w, out=y)


def kernel_fn(mod, cfg, target):
    return lambda x, w, y: mod.launch(x, w, None, y, "none", cfg, target)


def bench_shape(label, M, N, K, target, rep_ms, rows, log):
    from gemmkit import configs

    sets = inputs(M, N, K, torch.bfloat16, target.l2_bytes)
    x, w, _ = sets[0]
    ref = x.float() @ w.float().T
    flops, nbytes = 2.0 * M * N * K, (M * K + N * K + M * N) * 2
    base = dict(op="a16w16", label=label, M=M, N=N, K=K, dtype="bf16", ref_impl="torch.matmul", rotated_sets=len(sets))
    t_ref1 = time_graph(torch_fn, sets, rep_ms=rep_ms)
    table_cfg = dict(configs.select("a16w16", "sm_90", M, N, K)[0])
    cands = [("table", table_cfg.get("backend", "triton"), table_cfg, table_fn())]
    cands += [(n, "gluon", c, kernel_fn(hp, c, target)) for n, c in PINGPONG.items()]
    cands += [(n, "gluon_coop", c, kernel_fn(hc, c, target)) for n, c in COOP.items()]
    results = []
    for name, backend, cfg, fn in cands:
        row = dict(base, backend=backend, config=cfg, config_name=name)
        try:
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            fn(x, w, y)
            torch.cuda.synchronize()
            row["rel_err"] = rel_err(y, ref)
            if not row["rel_err"] <= 2**-8:
                row["error"] = f"wrong result: rel_err {row['rel_err']:.3g}"
            else:
                row["ms"] = time_graph(fn, sets, rep_ms=rep_ms)
        except Exception as e:  # noqa: BLE001 (a config that cannot run is a row, not a crash)
            row["error"] = f"{type(e).__name__}: {e}"[:500]
        results.append(row)
    t_ref2 = time_graph(torch_fn, sets, rep_ms=rep_ms)
    ref_ms = (t_ref1 + t_ref2) / 2
    for r in results:
        r.update(ref_ms=ref_ms, ref_ms_first=t_ref1, ref_ms_last=t_ref2, ref_tflops=flops / ref_ms * 1e-9)
        if "ms" in r:
            r.update(tflops=flops / r["ms"] * 1e-9, gbps=nbytes / r["ms"] * 1e-6, ratio=ref_ms / r["ms"])
        rows.append(r)
    log(f"{label:26s} {M:5d} {N:6d} {K:6d} | cuBLAS {flops / ref_ms * 1e-9:5.0f} TF/s "
        f"(spread {abs(t_ref1 - t_ref2) / ref_ms * 100:4.1f}%) | "
        + " ".join(f"{r['config_name'].replace('coop-', 'c').replace('x64', '')}={r.get('ratio', float('nan')):.3f}"
                   for r in results))
    for r in results:
        if "error" in r:
            log(f"    {r['config_name']}: {r['error']}")
    del sets, ref
    torch.cuda.empty_cache()


def sanitize(target):
    """A few small launches for compute-sanitizer (1-3 CTAs, several tiles each, both epilogue splits)."""
    for cfg in (COOP["coop-128x256x64-s4-g8"], COOP["coop-128x256x64-s3-g8"]):
        for cus, (M, N, K) in [(1, (300, 520, 200)), (2, (520, 264, 136)), (3, (129, 1032, 520))]:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            hc.launch(x, w, b, y, "silu", cfg, target.with_cus(cus))
            torch.cuda.synchronize()
            ref = torch.nn.functional.silu(x.float() @ w.float().T + b.float())
            assert rel_err(y, ref) < 2**-8
    print("sanitized run done")


def smoke(target, log):
    """Correctness on small grids (many tiles per CTA: ring wrap across tiles and epilogues), every candidate."""
    from gemmkit.reference import gemm_a16w16_ref

    for name, cfg in COOP.items():
        for cus, (M, N, K), act, od in [(1, (300, 520, 1000), "gelu", torch.bfloat16),
                                        (3, (1000, 1032, 776), "silu", torch.float32)]:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / 8
            b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
            y = torch.full((M, N), float("nan"), device="cuda", dtype=od)
            t0 = time.time()
            hc.launch(x, w, b, y, act, cfg, target.with_cus(cus))
            torch.cuda.synchronize()
            e = rel_err(y, gemm_a16w16_ref(x, w, b, act).to("cuda", torch.float32))
            log(f"smoke {name} {M}x{N}x{K} {act} {od} cus={cus}: rel_err {e:.3g} ({time.time() - t0:.1f}s)")
            assert e <= 2**-8, e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--rep-ms", type=int, default=60)
    ap.add_argument("--squares", default=",".join(map(str, SQUARES)))
    ap.add_argument("--models", type=int, default=len(MODEL), help="how many MODEL rows (in order)")
    ap.add_argument("--wide", action="store_true", help="round 2: COOP_WIDE configs, MODEL + MODEL_WIDE rows")
    ap.add_argument("--sanitize", action="store_true", help="small launches for compute-sanitizer")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    target = arch.current()
    lines = []

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    if args.smoke:
        return smoke(target, log)
    if args.sanitize:
        return sanitize(target)
    if args.wide:
        COOP.clear()
        COOP.update(COOP_WIDE)
        MODEL.extend(MODEL_WIDE)
        args.models = len(MODEL)
    header = env_header()
    log(json.dumps(header))
    shapes = [(f"square {s}", s, s, s) for s in map(int, filter(None, args.squares.split(",")))]
    shapes += MODEL[:args.models]
    rows = []
    t0 = time.time()

    def write(summary=None):
        if args.out:  # after every shape: a run cut short still leaves its rows
            with open(args.out, "w") as f:
                json.dump({**header, "summary": summary or {}, "rows": rows, "log": lines}, f, indent=1)

    for label, M, N, K in shapes:
        bench_shape(label, M, N, K, target, args.rep_ms, rows, log)
        write()
    summary = {}
    for name in ["table", *PINGPONG, *COOP, "coop_best"]:
        ratios = []
        for label, M, N, K in shapes:
            rs = [r["ratio"] for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K) and "ratio" in r and
                  (r["config_name"] == name or (name == "coop_best" and r["backend"] == "gluon_coop"))]
            if rs:
                ratios.append(max(rs))
        if ratios:
            summary[f"{name}_geomean"] = math.exp(sum(map(math.log, ratios)) / len(ratios))
    log(f"geomean vs cuBLAS over {len(shapes)} shapes: {json.dumps(summary)} ({time.time() - t0:.0f}s)")
    header["clock_after_mhz"] = env_header()["sm_clock_mhz"]
    write(summary)
    return None


if __name__ == "__main__":
    sys.exit(main())
