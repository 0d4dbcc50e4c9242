"""Issue 3 / H2: old vs new table bucket per shape, same process, and what split-K's second pass costs.

    python benchmarks/fewtile_ab.py OLD_SM90_DIR OUT.json M,N,K [M,N,K ...]

1. For each shape, `before` = the config the tables in OLD_SM90_DIR served (a copy of
   gemmkit/configs/sm_90 taken before the merge), `after` = the config the installed tables
   serve now. Shapes whose config changed go through benchmarks/ab_configs.py (cuBLAS, before,
   after, then the reverse order; CUDA-graph timing, rotated inputs) -> OUT.json.
2. For every `after` config with NUM_KSPLIT > 1 (two launches: the GEMM writes fp32 partials,
   _splitk_reduce.py sums them in order), time in one process, CUDA-graph replay:
     op       gemm_a16w16 as served (GEMM + reduce)
     gemm     the same call with the reduce launch skipped (partials written, never summed)
     reduce   the reduce kernel alone on a (split, M, N) fp32 workspace (do_bench flushes the L2
              before each replay: its reads come from HBM, an upper bound on the in-op cost,
              where the partials were just written and sit in the 50 MB L2)
   -> OUT.json["splitk_cost"]: how much of the op the second pass is (the case for an in-kernel
   reduction: stream-K, or the last CTA of a tile summing the partials in fixed order).
"""
import json
import math
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ab_configs  # noqa: E402
import gemmkit  # noqa: E402
from gemmkit import configs  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.ops import _common as C  # noqa: E402
from gemmkit.ops import _gemm as G  # noqa: E402
from gemmkit.tune.merge import same_config, serving  # noqa: E402


def old_serving(old_dir: Path, M, N, K):
    for name in (f"A16W16-N={N}-K={K}.json", "A16W16.json"):
        p = old_dir / name
        if p.exists():
            hit = serving(json.loads(p.read_text()), M)
            if hit:
                return configs.validate_config(dict(hit[1]))
    raise ValueError(f"no old table serves {M}x{N}x{K}")


def splitk_cost(M, N, K, cfg, rep_ms=60):
    target = C.target_for(torch.device("cuda"))
    n = rotation_count((M * K + N * K + M * N) * 2, target.l2_bytes)
    sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
             torch.randn(N, K, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
    op = lambda x, w: gemmkit.gemm_a16w16(x, w, config=cfg)  # noqa: E731
    out = {"op_ms": time_graph(op, sets, 10, rep_ms)}
    launcher = G.L.launcher

    def no_reduce(kernel, grid, compile_only=False):
        if kernel is G.splitk_reduce_kernel:
            return lambda *a, **k: None
        return launcher(kernel, grid, compile_only)

    G.L.launcher = no_reduce
    try:
        out["gemm_ms"] = time_graph(op, sets, 10, rep_ms)
    finally:
        G.L.launcher = launcher
    s = cfg["NUM_KSPLIT"]
    part = torch.randn(s, M, N, device="cuda", dtype=torch.float32)
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    rbm, rbn = G.reduce_tile(M, N)

    def red():
        G.splitk_reduce_kernel[(G.cdiv(M, rbm), G.cdiv(N, rbn))](
            part, y, y, M, N, M * N, y.stride(0), y.stride(1), SPLIT_K=s, BLOCK_M=rbm, BLOCK_N=rbn,
            HAS_BIAS=False, ACTIVATION="none", num_warps=G.REDUCE_WARPS)

    out["reduce_ms"] = time_graph(lambda: red(), [()], 10, rep_ms)
    out["partial_mb"] = 2 * s * M * N * 4 / 1e6  # written once, read once
    del sets, part
    torch.cuda.empty_cache()
    return out


def main(old_dir, out_path, shapes):
    old_dir = Path(old_dir)
    spec, kept = {}, []
    for text in shapes:
        M, N, K = map(int, text.split(","))
        before = old_serving(old_dir, M, N, K)
        after = configs.validate_config(dict(configs.select("a16w16", "sm_90", M, N, K)[0]))
        if same_config(before, after):
            kept.append(f"{M},{N},{K}")
        else:
            spec[f"{M},{N},{K}"] = {"before": before, "after": after}
    print(f"{len(spec)} shapes changed, {len(kept)} kept: {' '.join(kept)}", flush=True)
    tmp = Path(tempfile.mkdtemp()) / "ab_spec.json"
    tmp.write_text(json.dumps({"shapes": spec}, indent=1))
    if spec:
        ab_configs.main(str(tmp), out_path)
        res = json.loads(Path(out_path).read_text())
    else:
        res = {"rows": []}
    res["kept"] = kept
    costs = []
    for key, c in spec.items():
        if c["after"]["NUM_KSPLIT"] > 1:
            M, N, K = map(int, key.split(","))
            r = {"M": M, "N": N, "K": K, "config": c["after"], **splitk_cost(M, N, K, c["after"])}
            costs.append(r)
            print(f"split-K cost {M:5d} {N:6d} {K:6d} split {c['after']['NUM_KSPLIT']}: op {r['op_ms'] * 1e3:6.1f} us"
                  f"  gemm alone {r['gemm_ms'] * 1e3:6.1f}  reduce alone {r['reduce_ms'] * 1e3:5.1f}"
                  f"  (partials {r['partial_mb']:.1f} MB)", flush=True)
    res["splitk_cost"] = costs
    if res["rows"]:
        g = lambda v: math.exp(sum(map(math.log, v)) / len(v))  # noqa: E731
        res["summary"]["min_before"] = min(r["ratio_before"] for r in res["rows"])
        res["summary"]["min_after"] = min(r["ratio_after"] for r in res["rows"])
        res["summary"]["geomean_after"] = g([r["ratio_after"] for r in res["rows"]])
    Path(out_path).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
