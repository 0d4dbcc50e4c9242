"""Swap-AB at decode sizes: does a weight-rows-first tile beat the tables where M is tiny?

cuBLAS's M = 1 kernel on DeepSeek's kv_b_proj (32768 x 512) is nvjet_sm90_tst_256x8_64x6_2x1 (session 8,
docs/PERF.md): the weight is the wgmma's M operand (256 rows a CTA, 128 CTAs, one wave), the tokens are
its N (8), a 6-deep ring of 64-wide K steps. gemmkit's tables put the tokens in M (16-row tiles, 512
programs of 64 weight rows); 80 such configs all ran 12.2-12.3 us against cuBLAS's 11.4 (ncu).

This probe times, in one process (CUDA graph of rotated inputs, L2 cleared before each replay; several
passes, variants interleaved), y^T = w @ x^T through the Gluon kernels as they are (gemm_a16w16 with the
operands swapped: "x" = w (N, K), "w" = x padded to BN token rows, y^T (N, BN)), against torch.matmul
(cuBLAS) and gemm_a16w16 / gemm_split_cat as served by the tables. Every swapped output is checked
against torch's.

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/swap_ab_probe.py --json OUT.json [--passes 3]
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

SHAPES = [  # (label, N, K); M values below
    ("kv_b_proj", 32768, 512),
    ("llama3-70b o", 8192, 8192),
    ("llama3-8b down", 4096, 14336),
    ("deepseek q_b", 24576, 1536),
]
MS = [1, 8, 16, 32, 64]


def swap_configs(bn):
    out = []
    for bm, bk, st, w in [(256, 64, 6, 8), (256, 64, 8, 8), (256, 128, 4, 8), (128, 128, 6, 8), (128, 64, 8, 8),
                          (128, 128, 6, 4), (128, 64, 8, 4), (64, 128, 8, 4)]:
        out.append({"backend": "gluon", "tma": True, "persistent": True, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
                    "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 1, "num_warps": w, "num_stages": st})
    return out


def name(cfg):
    kind = "coop" if cfg["num_warps"] == 8 else "pp"
    return f"swap {kind} {cfg['BLOCK_SIZE_M']}x{cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']} s{cfg['num_stages']}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--rep-ms", type=int, default=40)
    args = ap.parse_args()
    dev = torch.device("cuda")
    target = C.target_for(dev)
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "git_sha": git_sha(),
           "method": __doc__.strip(), "rows": []}
    for label, N, K in SHAPES:
        for M in MS:
            bn = max(16, 1 << (M - 1).bit_length())
            nsets = rotation_count((N * K + M * K) * 2, target.l2_bytes)
            ws = [torch.randn(N, K, device=dev, dtype=torch.bfloat16) / K ** 0.5 for _ in range(nsets)]
            xs = [torch.randn(M, K, device=dev, dtype=torch.bfloat16) for _ in range(nsets)]
            xps = []
            for x in xs:
                xp = torch.zeros(bn, K, device=dev, dtype=torch.bfloat16)
                xp[:M] = x
                xps.append(xp)
            ref = (xs[0].double() @ ws[0].double().T)
            variants = {"cublas": (lambda x, w, xp: torch.matmul(x, w.T)),
                        "table": (lambda x, w, xp: gemmkit.gemm_a16w16(x, w))}
            if label == "kv_b_proj":
                ys = [torch.randn(M, 128, 64, device=dev, dtype=torch.bfloat16) for _ in range(nsets)]

                def torch_sc(x, w, xp, _ys=ys):
                    c = torch.matmul(x, w.T).view(M, 128, 256)
                    return torch.cat([c[..., :128], _ys[0]], -1), c[..., 128:]
                variants["torch split_cat"] = torch_sc
                variants["split_cat table"] = (lambda x, w, xp, _ys=ys: gemmkit.gemm_split_cat(x, w, _ys[0], 128, 128))
            for cfg in swap_configs(bn):
                variants[name(cfg)] = (lambda x, w, xp, _c=cfg: gemmkit.gemm_a16w16(w, xp, config=_c))
            sets = list(zip(xs, ws, xps))
            row = {"label": label, "M": M, "N": N, "K": K, "us": {}, "err": {}}
            for vname, fn in list(variants.items()):
                try:
                    out = fn(*sets[0])
                    torch.cuda.synchronize()
                    if vname.startswith("swap"):
                        got = out[:, :M].T
                    elif "split_cat" in vname:
                        got = None
                    else:
                        got = out
                    if got is not None:
                        err = ((got.double() - ref).abs().max() / ref.abs().max()).item()
                        row["err"][vname] = err
                        if not err < 2e-2:
                            raise RuntimeError(f"wrong result: rel err {err}")
                except Exception as e:  # a config the kernel rejects, or a wrong one: recorded, not timed
                    row["err"][vname] = f"{type(e).__name__}: {str(e)[:160]}"
                    del variants[vname]
            for p in range(args.passes):
                for vname, fn in variants.items():
                    row["us"].setdefault(vname, []).append(time_graph(fn, sets, 10, args.rep_ms) * 1e3)
            med = {k: statistics.median(v) for k, v in row["us"].items()}
            row["median_us"] = med
            res["rows"].append(row)
            best = min((k for k in med if k.startswith("swap")), key=med.get, default=None)
            line = f"{label:14s} M={M:3d} cublas {med['cublas']:7.2f} table {med['table']:7.2f}"
            if best:
                line += f" best swap {med[best]:7.2f} ({best}) cublas/best {med['cublas'] / med[best]:.3f}"
            if "torch split_cat" in med:
                line += (f" | split_cat torch {med['torch split_cat']:.2f} ours {med['split_cat table']:.2f}"
                         f" torch/swap {med['torch split_cat'] / med[best]:.3f}" if best else "")
            print(line, flush=True)
            for k in sorted(med, key=med.get):
                print(f"    {k:28s} {med[k]:8.2f}", flush=True)
            bad = {k: v for k, v in row["err"].items() if isinstance(v, str)}
            if bad:
                print("    rejected:", bad, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
