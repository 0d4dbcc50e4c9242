"""Probe (not a library path): block-scale decode as swap-AB on the Triton tier, through the op itself.

y^T = w @ x^T with w as the op's x (its 128-row block scale repeated per row, M-major) and x as the op's w
(block_shape (1, 128): one scale a token row), so the Triton TMA kernel runs wgmma m64 x n16 on the fp8 operands
directly instead of the 16-row tile's mma.sync on fp8 -> f16 conversions (docs/PERF.md: that tile is bound by its
warps' instruction chains, ab/ncu_decode_block_vs_pertoken.json). Each row: the vendor (cuBLASLt's block-scaled
GEMM), what the op serves, and the swapped tile unsplit and split 2 / 4 / 8 (`--split`), every result checked
against the fp32 reference first, timed by CUDA-graph replay over rotated inputs in both orders.

Usage (GPU): PYTHONPATH=. python benchmarks/blockscale_swap_probe.py OUT.json [--split]
Result: benchmarks/results/h200/ab/blockscale_decode_swap_probe.json (both runs).
"""
import argparse
import json

import torch

import gemmkit
from gemmkit.bench import ops as bench_ops
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C

SHAPES = [(16, 18432, 16384), (16, 8192, 28672), (16, 12288, 12288), (16, 5120, 5120), (16, 4096, 4096),
          (16, 57344, 8192), (8, 10240, 8192), (16, 7168, 2048), (8, 14336, 12288), (16, 24576, 1536)]
BASE = {"GROUP_SIZE_M": 1, "num_warps": 4, "tma": True, "persistent": False, "NUM_KSPLIT": 1}


def configs(split: bool) -> dict:
    """The swapped tiles (y^T's: BLOCK_SIZE_M weight rows x BLOCK_SIZE_N tokens)."""
    tile = dict(BASE, BLOCK_SIZE_M=64, BLOCK_SIZE_N=16, BLOCK_SIZE_K=128, num_stages=6)
    if split:
        return {"s64x16_s6": tile, **{f"s64x16_s6_k{s}": dict(tile, NUM_KSPLIT=s) for s in (2, 4, 8)}}
    return {"s64x16_s6": tile, "s64x16_s8": dict(tile, num_stages=8),
            "s128x16_s6": dict(tile, BLOCK_SIZE_M=128),
            "s64x16_k256_s4": dict(tile, BLOCK_SIZE_K=256, num_stages=4)}


def main(out_path, split):
    op = bench_ops.get("a8w8_blockscale")
    target = C.target_for(torch.device("cuda"))
    cfgs = configs(split)
    rows = []
    for M, N, K in SHAPES:
        sets = []
        for _ in range(rotation_count((M + N) * K, target.l2_bytes)):
            inp = op.make_inputs(M, N, K, "fp8", "cuda")
            ws = inp[3]
            sets.append(inp + (ws.repeat_interleave(128, 0)[:N].t().contiguous().t(),))  # (N, kb), strides (1, N)
        ref = op.reference(sets[0][:6]).float()
        fns = {"vendor": lambda *s: op.vendor(s[:6]),
               "served": lambda *s: gemmkit.gemm_a8w8_blockscale(s[0], s[1], s[2], s[3])}
        for name, cfg in cfgs.items():
            fns[name] = (lambda cfg: lambda *s: gemmkit.gemm_a8w8_blockscale(
                s[1], s[0], s[6], s[2], block_shape=(1, 128), config=cfg).t())(cfg)
        err = {k: ((f(*sets[0]).float() - ref).norm() / ref.norm()).item() for k, f in fns.items()}
        assert all(e < 2e-2 for e in err.values()), (M, N, K, err)
        ms = {k: [] for k in fns}
        for order in (list(fns), list(fns)[::-1]):
            for k in order:
                ms[k].append(time_graph(fns[k], sets, 10, 15))
        m = {k: sum(v) / len(v) for k, v in ms.items()}
        rows.append({"M": M, "N": N, "K": K, "ms": m, "rel_err": err,
                     "ratio": {k: m["vendor"] / m[k] for k in m if k != "vendor"}})
        print(M, N, K, " ".join(f"{k} {v:.3f}" for k, v in rows[-1]["ratio"].items()), flush=True)
    with open(out_path, "w") as f:
        json.dump({**gemmkit.bench.stamp(), "configs": cfgs, "rows": rows}, f,
                  indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--split", action="store_true", help="the swapped 64 x 16 tile split 2 / 4 / 8 ways")
    args = ap.parse_args()
    main(args.out, args.split)
