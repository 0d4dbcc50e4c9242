"""The tile of kernels/triton/gemm_rows.py (a few tokens against weight rows TMA cannot address), swept on the GPU:
`python benchmarks/rows_sweep.py --json OUT.json`. For each (BLOCK_N, CHUNK_BYTES, STAGES, PROGRAMS_PER_SM) the
module's constants are set, and gemm_a16w16 on each shape is timed by CUDA-graph replay against torch.matmul in the
same process (inputs rotated past the L2), every result checked against fp32 first; the aligned K of the same
layer beside it (the issue's bar: an unaligned K within 80% of the aligned shape's speed)."""
import argparse
import itertools
import json

import torch
from triton.runtime.errors import OutOfResources

import gemmkit
from gemmkit import callplan
from gemmkit.bench import stamp
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.kernels.triton import gemm_rows as R
from gemmkit.ops import _common as C

SHAPES = [(1, 4096, 4095), (16, 4096, 4095), (1, 5000, 7001), (1, 14336, 4095)]
# (results/h200/rows_sweep.json also swept the edge chunks as whole vectors inside the loop: -10 to -40%, removed)
GRID = dict(BLOCK_N=(16, 32, 64), CHUNK_BYTES=(512, 1024), STAGES=(4,), PROGRAMS_PER_SM=(2, 4))


def main(out, rep_ms):
    callplan.ENABLED = False  # each variant's own dispatch and launch
    target = C.target_for(torch.device("cuda"))
    rows = []
    for M, N, K in SHAPES:
        n = rotation_count((M + N) * K * 2, target.l2_bytes)
        sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                 torch.randn(N, K, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
        ka = -(-K // 8) * 8
        aligned = [(torch.randn(M, ka, device="cuda", dtype=torch.bfloat16),
                    torch.randn(N, ka, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
        ref = (sets[0][0].float() @ sets[0][1].float().t())
        row = {"M": M, "N": N, "K": K, "vendor_ms": time_graph(lambda x, w: x @ w.t(), sets, 10, rep_ms),
               "aligned_ms": time_graph(gemmkit.gemm_a16w16, aligned, 10, rep_ms), "variants": {}}
        for values in itertools.product(*GRID.values()):
            v = dict(zip(GRID, values))
            for k, val in v.items():
                setattr(R, k, val)
            try:
                y = gemmkit.gemm_a16w16(*sets[0]).float()
            except OutOfResources:  # the ring (BLOCK_N x CHUNK_BYTES x STAGES) past the SM's shared memory
                continue
            err = ((y - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (M, N, K, v, err)
            key = "/".join(str(x) for x in values)
            row["variants"][key] = time_graph(gemmkit.gemm_a16w16, sets, 10, rep_ms)
        best = min(row["variants"], key=row["variants"].get)
        print(f"{M:5d} {N:6d} {K:6d} vendor {row['vendor_ms'] * 1e3:6.1f} aligned {row['aligned_ms'] * 1e3:6.1f} "
              f"best {best} {row['variants'][best] * 1e3:6.1f} us; " +
              " ".join(f"{k} {t * 1e3:.1f}" for k, t in row["variants"].items()), flush=True)
        rows.append(row)
    keys = [k for k in rows[0]["variants"] if all(k in r["variants"] for r in rows)]
    geo = {k: 1.0 for k in keys}
    for r in rows:
        for k in keys:
            geo[k] *= r["aligned_ms"] / r["variants"][k]
    geo = {k: v ** (1 / len(rows)) for k, v in geo.items()}
    print("geomean of aligned_ms / variant_ms:", sorted(geo.items(), key=lambda kv: -kv[1])[:6])
    json.dump({**stamp(), "grid": list(GRID),
               "rows": rows, "geomean_vs_aligned": geo}, open(out, "w"), indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", required=True)
    ap.add_argument("--rep-ms", type=int, default=40)
    a = ap.parse_args()
    main(a.json, a.rep_ms)
