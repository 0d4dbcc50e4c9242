"""gemm_split_cat at decode sizes: the y copy before the mainloop (Y_EARLY) against after the tile, in one process.

Issue 5's bar is gemm_split_cat >= 1.2x torch (matmul, then split and cat) at DeepSeek-V3 kv_b_proj
(N = 32768, K = 512, D = 128, S1 = S2 = 128, S3 = 64, y = k_pe expanded over the heads). At M = 1 it ran
1.16-1.19x; the same process timed the plain GEMM (gemm_a16w16, no y, no split) ~0.35 us faster than the
split-cat kernel (benchmarks/swap_ab_probe.py, session 16). The TMA kernel copied y after its tile store,
a global load and a dependent store trailing a quarter of the programs.

Variants, interleaved over --passes passes (CUDA graph of rotated inputs, L2 cleared before each replay,
do_bench median; ratio = torch / ours):
  torch        c = x @ w.T viewed (M, D, S1 + S2); c1 = cat(c[..., :S1], y); c2 = c[..., S1:]  (the bar's)
  early        gemm_split_cat as served (tables; Y_EARLY where the op derives it)
  late         the same with gemm_split_cat.y_early patched to False (the kernel before this change)
  cfg ...      a few M <= 15 configs, Y_EARLY as derived
  matmul       torch.matmul alone (cuBLAS), a16w16 gemm_a16w16 alone (tables): what the store costs
Every output of ours is checked against torch's (bit for bit in y's part, rel. error elsewhere).

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/split_cat_ab.py --json OUT.json [--passes 5]
"""
import argparse
import json
import statistics
import time

import torch
import triton

import gemmkit
from gemmkit.bench import git_sha
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C
from gemmkit.ops import gemm_split_cat as SC

N, K, D, S1, S2, S3 = 32768, 512, 128, 128, 128, 64
MS = [1, 4, 16, 64]
EXTRA = [  # (BM, BN, BK, warps, stages) at M <= 15
    (16, 64, 256, 4, 2), (16, 128, 256, 4, 2), (16, 64, 128, 2, 3), (16, 32, 256, 4, 2), (16, 64, 512, 4, 1),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--rep-ms", type=int, default=40)
    args = ap.parse_args()
    dev = torch.device("cuda")
    target = C.target_for(dev)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git_sha": git_sha(),
           "method": __doc__.strip(), "rows": []}
    derived = SC.y_early
    for M in MS:
        nsets = rotation_count((N * K + M * K) * 2, target.l2_bytes)
        sets = [(torch.randn(M, K, device=dev, dtype=torch.bfloat16),
                 torch.randn(N, K, device=dev, dtype=torch.bfloat16) / K ** 0.5,
                 torch.randn(M, 1, S3, device=dev, dtype=torch.bfloat16).expand(M, D, S3)) for _ in range(nsets)]

        def torch_sc(x, w, y):
            c = torch.matmul(x, w.T).view(M, D, S1 + S2)
            return torch.cat([c[..., :S1], y], -1), c[..., S1:]

        def late(x, w, y):
            SC.y_early = lambda *a: False
            try:
                return gemmkit.gemm_split_cat(x, w, y, S1, S2)
            finally:
                SC.y_early = derived

        variants = {"torch": torch_sc, "early": (lambda x, w, y: gemmkit.gemm_split_cat(x, w, y, S1, S2)),
                    "late": late}
        if M <= 15:
            for bm, bn, bk, nw, st in EXTRA:
                cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "num_warps": nw,
                       "num_stages": st, "tma": True}
                variants[f"cfg {bm}x{bn}x{bk} w{nw} s{st}"] = (
                    lambda x, w, y, _c=cfg: gemmkit.gemm_split_cat(x, w, y, S1, S2, config=_c))
        variants["matmul"] = lambda x, w, y: torch.matmul(x, w.T)
        variants["a16w16"] = lambda x, w, y: gemmkit.gemm_a16w16(x, w)
        row = {"M": M, "N": N, "K": K, "D": D, "S": [S1, S2, S3], "us": {}, "check": {}}
        x, w, y = sets[0]
        r1, r2 = torch_sc(x, w, y)
        for name, fn in list(variants.items()):
            if name in ("torch", "matmul", "a16w16"):
                continue
            try:
                c1, c2 = fn(x, w, y)
                torch.cuda.synchronize()
                assert torch.equal(c1[..., S1:], y), "y part differs"
                err = max(((c1[..., :S1].float() - r1[..., :S1].float()).abs().max() / r1.float().abs().max()).item(),
                          ((c2.float() - r2.float()).abs().max() / r2.float().abs().max()).item())
                assert err < 2e-2, f"rel err {err}"
                row["check"][name] = err
            except Exception as e:  # recorded, not timed
                row["check"][name] = f"{type(e).__name__}: {str(e)[:200]}"
                del variants[name]
        for _ in range(args.passes):
            for name, fn in variants.items():
                row["us"].setdefault(name, []).append(time_graph(fn, sets, 10, args.rep_ms) * 1e3)
        med = {k: statistics.median(v) for k, v in row["us"].items()}
        row["median_us"] = med
        row["ratio"] = {k: med["torch"] / v for k, v in med.items() if k not in ("torch", "matmul", "a16w16")}
        res["rows"].append(row)
        print(f"M={M}: torch {med['torch']:.2f} us; early {med['early']:.2f} ({row['ratio']['early']:.3f}x), "
              f"late {med['late']:.2f} ({row['ratio']['late']:.3f}x); matmul {med['matmul']:.2f}, "
              f"a16w16 {med['a16w16']:.2f}", flush=True)
        for k in sorted(med, key=med.get):
            per = " ".join(f"{t:.2f}" for t in row["us"][k])
            print(f"    {k:26s} {med[k]:7.2f}  [{per}]", flush=True)
        bad = {k: v for k, v in row["check"].items() if isinstance(v, str)}
        if bad:
            print("    rejected:", bad, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
