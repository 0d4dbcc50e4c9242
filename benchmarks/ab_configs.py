"""Same-process A/B of two configs per shape, against cuBLAS: `python benchmarks/ab_configs.py AB.json OUT.json`.

AB.json: {"shapes": {"M,N,K": {"before": config, "after": config}}}. For each shape, in one
process and on the same rotated inputs: cuBLAS, before, after, and again in reverse order
(after, before, cuBLAS), each timed by CUDA-graph replay (gemmkit/bench/timing.py); the
ratios use the mean of the two measurements of each, so a drift in clock over the shape's
measurements affects both configs alike. Prints one line per shape and the geometric means.
"""
import argparse
import json
import math

import torch

import gemmkit
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C


def main(path, out_path, rep_ms=60):
    spec = json.load(open(path))["shapes"]
    target = C.target_for(torch.device("cuda"))
    rows = []
    for key, cfgs in spec.items():
        M, N, K = map(int, key.split(","))
        n = rotation_count((M * K + N * K + M * N) * 2, target.l2_bytes)
        sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                 torch.randn(N, K, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
        x, w = sets[0]
        ref = x.float() @ w.float().T
        fns = {"cublas": lambda x, w: torch.matmul(x, w.T)}
        for name in ("before", "after"):
            y = gemmkit.gemm_a16w16(x, w, config=cfgs[name])
            err = ((y.float() - ref).norm() / ref.norm()).item()
            assert err < 2**-8, (key, name, err)
            fns[name] = (lambda c: (lambda x, w: gemmkit.gemm_a16w16(x, w, config=c)))(cfgs[name])
        ms = {k: [] for k in fns}
        for order in (("cublas", "before", "after"), ("after", "before", "cublas")):
            for k in order:
                ms[k].append(time_graph(fns[k], sets, 10, rep_ms))
        m = {k: sum(v) / len(v) for k, v in ms.items()}
        row = {"M": M, "N": N, "K": K, "ms": ms, "ratio_before": m["cublas"] / m["before"],
               "ratio_after": m["cublas"] / m["after"], "speedup": m["before"] / m["after"],
               "before": cfgs["before"], "after": cfgs["after"]}
        rows.append(row)
        print(f"{M:6d} {N:6d} {K:6d}  before {row['ratio_before']:.3f}  after {row['ratio_after']:.3f}  "
              f"speedup {row['speedup']:.3f}", flush=True)
        del sets, ref
        torch.cuda.empty_cache()
    g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
    summary = {k: g([r[k] for r in rows]) for k in ("ratio_before", "ratio_after", "speedup")}
    print("geomean", {k: round(v, 3) for k, v in summary.items()})
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "triton": __import__("triton").__version__, "git_sha": gemmkit.bench.git_sha(),
               "date": __import__("datetime").date.today().isoformat(), "summary": summary, "rows": rows},
              open(out_path, "w"), indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ab", help='AB.json: {"shapes": {"M,N,K": {"before": config, "after": config}}}')
    ap.add_argument("out", help="the result JSON (device, torch, triton, git_sha, date, per-shape rows)")
    ap.add_argument("--rep-ms", type=int, default=60, help="CUDA-graph replay time per measurement (ms)")
    args = ap.parse_args()
    main(args.ab, args.out, args.rep_ms)
