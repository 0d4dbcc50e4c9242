"""Config sweep for the batched GEMMs on the GPU: a short hand-picked candidate list per op
(instead of the tuner's random 40), every candidate checked against an fp32 reference and
timed with the bench method (CUDA-graph replays, inputs rotated past the L2), the vendor
reference (bench/ops.py) timed in the same process.

Usage (repo root, on the H200):
  PYTHONPATH=. python benchmarks/sweep_batched.py --op batched_a16w16 --dtype bf16 \
      --shapes 8x512,64x512,8x1024,64x1024,8x2048,64x2048 --json OUT.json
Shapes are BxS (M = N = K = S) or BxMxNxK. The table is looked up by M, so a bucket's winner
should be the config with the best geomean ratio over the B values sharing that M.
"""
import argparse
import json
import math
import time


def cfg(bm, bn, bk, warps, stages, group=8, persistent=False, tma=True):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group,
            "num_warps": warps, "num_stages": stages, "persistent": persistent, "tma": tma}


CANDIDATES = {
    "batched_a16w16": [
        # round 2 (after the first H200 sweep, 2026-11-22: 128x256x64 g16 P best at M >= 1024,
        # 128x128x128 P at M = 512): the winners, their group sizes, and the runners-up
        cfg(128, 256, 64, 8, 3, persistent=True),
        cfg(128, 256, 64, 8, 3, group=16, persistent=True),
        cfg(128, 256, 64, 8, 3, group=32, persistent=True),
        cfg(128, 256, 64, 8, 3, group=64, persistent=True),
        cfg(256, 128, 64, 8, 3, group=16, persistent=True),
        cfg(128, 128, 128, 8, 3, persistent=True),
        cfg(128, 128, 128, 8, 3, group=16, persistent=True),
        cfg(128, 128, 64, 4, 4, persistent=True),
        cfg(128, 128, 64, 4, 5),
        cfg(128, 128, 64, 4, 5, persistent=True),
        cfg(64, 256, 64, 4, 4, persistent=True),
        cfg(128, 256, 64, 8, 3, group=16, persistent=True, tma=False),  # the pointer path, same tiles
    ],
    "batched_a8w8": [
        cfg(128, 128, 128, 8, 4, persistent=True),
        cfg(128, 128, 128, 8, 4),
        cfg(128, 128, 64, 8, 5, persistent=True),
        cfg(64, 128, 128, 4, 5),
        # int8: one int32 accumulator fits, and it was the fastest in the first sweep, but not shipped:
        # 255 registers on the TMA path and 48 bytes of spills on the pointer fallback (gemmkit isa)
        cfg(128, 256, 128, 8, 3, persistent=True),
        cfg(128, 128, 128, 8, 4, persistent=True, tma=False),
    ],
}


def parse_shape(s):
    parts = [int(p) for p in s.lower().split("x")]
    return (parts[0], parts[1], parts[1], parts[1]) if len(parts) == 2 else tuple(parts)


def write_table(path, best):
    """Buckets M_LEQ_512, M_LEQ_1024 and any <- the winners at M = 512, 1024, 2048; the buckets for
    smaller M stay; one line per bucket, as the hand-written tables."""
    from gemmkit import configs as _configs

    with open(path) as f:
        table = json.load(f)
    for bucket, m in (("M_LEQ_512", 512), ("M_LEQ_1024", 1024), ("any", 2048)):
        if m in best:
            table.pop(bucket, None)
            table[bucket] = {k: v for k, v in best[m]["config"].items() if _configs.DEFAULTS.get(k, object()) != v}
    order = sorted((k for k in table if k != "any"), key=lambda k: int(k.split("_")[-1])) + ["any"]
    lines = [f'  "{k}": ' + json.dumps(table[k]) for k in order]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    _configs.clear_cache()
    _configs.load_table(path)  # validate
    print(f"wrote {path}: " + ", ".join(f"{k}" for k in order))


def main():
    import torch
    from concurrent.futures import ThreadPoolExecutor

    import triton
    from triton.runtime._async_compile import AsyncCompileMode

    from gemmkit.bench import git_sha
    from gemmkit.bench.ops import get
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.ops import _common as C

    ap = argparse.ArgumentParser()
    ap.add_argument("--op", default="batched_a16w16")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--shapes", default="8x512,64x512,8x1024,64x1024,8x2048,64x2048")
    ap.add_argument("--rep-ms", type=int, default=30)
    ap.add_argument("--json")
    ap.add_argument("--write-table", help="a table file: its M_LEQ_512 / M_LEQ_1024 / any buckets become the "
                                          "best configs at M = 512 / 1024 / 2048 (geomean over B)")
    args = ap.parse_args()
    bop = get(args.op)
    dtype = args.dtype or bop.dtypes[0]
    dev = torch.device("cuda")
    target = C.target_for(dev)
    cands = [c for c in CANDIDATES[args.op] if not (dtype == "fp8" and c["BLOCK_SIZE_N"] == 256)]
    rows = []
    t0 = time.time()
    for B, M, N, K in map(parse_shape, args.shapes.split(",")):
        _f, nbytes = bop.work(M, N, K, dtype, B)
        sets = [bop.make_inputs(M, N, K, dtype, dev, B) for _ in range(rotation_count(nbytes, target.l2_bytes))]
        tc = time.time()
        with AsyncCompileMode(ThreadPoolExecutor(16), ignore_errors=True):
            for c in cands:
                try:
                    bop.compile_for(sets[0], c)
                except Exception:
                    pass
        t_compile = time.time() - tc
        ref = bop.reference(sets[0])
        ref_ms = time_graph(lambda *inp: bop.vendor(inp), sets, 10, args.rep_ms)
        flops = 2.0 * B * M * N * K
        print(f"B={B} {M}x{N}x{K}: vendor {ref_ms * 1e3:8.1f} us {flops / ref_ms / 1e9:6.0f} TF/s "
              f"(compile {t_compile:.0f}s)", flush=True)
        for c in cands:
            row = {"op": args.op, "dtype": dtype, "B": B, "M": M, "N": N, "K": K, "config": c, "ref_ms": ref_ms}
            try:
                y = bop.run(sets[0], c)
                err = ((y.float() - ref).norm() / ref.norm()).item()
                row["rel_err"] = err
                if not err <= 2**-8:
                    row["error"] = f"wrong result: rel err {err:.3g}"
                else:
                    row["ms"] = time_graph(lambda *inp, c=c: bop.run(inp, c), sets, 10, args.rep_ms)
                    row["ratio"] = ref_ms / row["ms"]
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            rows.append(row)
            desc = (f"{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']} w{c['num_warps']} s{c['num_stages']} "
                    f"g{c['GROUP_SIZE_M']}{' P' if c['persistent'] else ''}{' tma' if c['tma'] else ' ptr'}")
            if "ms" in row:
                print(f"   {desc:34s} {row['ms'] * 1e3:8.1f} us {flops / row['ms'] / 1e9:6.0f} TF/s "
                      f"ratio {row['ratio']:.3f}", flush=True)
            else:
                print(f"   {desc:34s} {row['error'][:100]}", flush=True)
        del sets, ref
        torch.cuda.empty_cache()
    # Best per M (geomean ratio over the B values that share the M bucket).
    by_m = {}
    for r in rows:
        if "ratio" in r:
            by_m.setdefault(r["M"], {}).setdefault(json.dumps(r["config"], sort_keys=True), []).append(r["ratio"])
    print("best per M (geomean ratio over B):")
    best = {}
    for M, per in sorted(by_m.items()):
        n = max(len(v) for v in per.values())
        scored = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in per.items() if len(v) == n}
        k = max(scored, key=scored.get)
        best[M] = {"config": json.loads(k), "geomean_ratio": scored[k]}
        print(f"  M={M}: {scored[k]:.3f}  {k}")
    print(f"sweep took {time.time() - t0:.0f}s")
    if args.write_table:
        write_table(args.write_table, best)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "git_sha": git_sha(), "op": args.op, "dtype": dtype,
                       "method": "CUDA-graph replay, do_bench median, inputs rotated past 4x L2",
                       "rows": rows, "best_per_M": best}, f, indent=1)


if __name__ == "__main__":
    main()
