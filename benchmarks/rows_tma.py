"""Unaligned K (bf16, w's rows off 16 bytes) at M = 1-1024 on the GPU: kernels/triton/gemm_rows_tma.py (w read
where it lies by TMA, x's shifted copies) against what the op serves without it (gemm_rows at M <= 16, else the copy
of x and w + the TMA kernel), the same shape at K rounded up to 8 (the aligned speed issue 32 asks 80% of) and the
vendor, one process; CUDA-graph replay, inputs rotated past the L2, each mode twice (the better round kept). Every
gemm_rows_tma tile is checked against an fp32 product first, and once with inf in a neighbouring weight row.

    PYTHONPATH=. python3 benchmarks/rows_tma.py benchmarks/results/<gpu>/rows_tma.json [--quick]"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS.add_argument("--quick", action="store_true", help="one round a mode, a few shapes")
ARGS.add_argument("--heldout", action="store_true", help="the held-out shapes (HELDOUT), with the op as it serves")
ARGS.add_argument("--short-k", action="store_true", help="the short-K sweep (SHORT_K)")
ARGS.add_argument("--unswapped", action="store_true",
                  help="the default and held-out shapes past SWAP_MAX_M tokens and HELDOUT_UNSWAPPED, both widths")
ARGS.add_argument("--small-m", action="store_true",
                  help="M = 2-16 (SMALL_M; with --heldout SMALL_M_HELDOUT), gemm_rows' tokens: the swapped tile "
                  "against it")
ARGS.add_argument("--share", action="store_true",
                  help="SHARE: x's copies 0.30-0.51 of w's bytes (the dispatch's ROWS_TMA_X_SHARE refuses past 0.3)")
ARGS.add_argument("--all-variants", action="store_true",
                  help="on VARIANT_SHAPES the stages and swapped-width neighbours too (else the K split's only)")
ARGS = ARGS.parse_args()

import json
import sys

import torch

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit import arch, callplan  # noqa: E402
from gemmkit.bench import write_stamped  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.kernels.triton import gemm_rows_tma as R  # noqa: E402
from gemmkit.ops import dispatch as D  # noqa: E402

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size
target = arch.current()
ROWS_TMA = getattr(D, "ROWS_TMA", None)
SHAPES = [(M, 4096, 4095) for M in (64, 16, 17, 32, 128, 256, 1)] + [(M, 28672, 8191) for M in (256, 64)] + \
    [(M, 5000, 7001) for M in (64, 256)] + [(M, 14336, 4095) for M in (32, 128)] + [(512, 4096, 4095)] + \
    [(40, 6144, 2047), (48, 18432, 5119), (24, 2560, 9999), (96, 28672, 8191), (128, 28672, 8191), (56, 1536, 7001)]
HELDOUT = [(20, 7168, 2049), (33, 11008, 4097), (72, 3584, 18943), (100, 8192, 1023), (160, 22016, 5119),
           (200, 12288, 6143), (250, 6144, 3001), (45, 2048, 12285), (64, 10240, 2879), (144, 18944, 3583)]
if ARGS.heldout:  # drawn before the constants were set (100 x 8192 x 1023 since informed the unswapped K floor)
    SHAPES = HELDOUT
SHORT_K = [(M, N, K) for M, N in ((100, 8192), (32, 8192), (200, 12288)) for K in (1023, 1535, 2047, 3071)]
if ARGS.short_k:  # where K's chunks are few (100 x 8192 x 1023 ran 2.4x slower than the copy)
    SHAPES = SHORT_K
# Drawn before timing the 128 x 256 tile's rule (R.WIDE_PROGRAMS): 120 x 20480 and 90 x 9216 under it
HELDOUT_UNSWAPPED = [(80, 24576, 5119), (180, 16384, 4097), (240, 11008, 7001), (120, 20480, 3071), (192, 13824, 5119),
                     (90, 9216, 6143), (136, 28672, 2047), (112, 32000, 4095)]
if ARGS.unswapped:  # the unswapped tile (M > SWAP_MAX_M) at 38-72% of the aligned speed: its width
    SHAPES = [(M, N, K) for M, N, K in SHAPES + HELDOUT if M > R.SWAP_MAX_M] + HELDOUT_UNSWAPPED
SMALL_M = [(M, N, K) for N, K in ((4096, 4095), (14336, 4095), (5000, 7001), (28672, 8191), (1536, 7001))
           for M in (2, 4, 8, 12, 16)]
# Drawn after gemm_rows_tma took M = 2-16 from gemm_rows (dispatch.ROWS_TMA_MIN_M, fitted on SMALL_M), to test it
SMALL_M_HELDOUT = [(3, 7168, 2049), (5, 11008, 4097), (10, 3584, 18943), (7, 8192, 1023), (14, 22016, 5119),
                   (6, 12288, 6143), (9, 6144, 3001), (13, 2048, 12285), (11, 10240, 2879), (15, 18944, 3583),
                   (2, 2560, 9999), (3, 576, 7001), (4, 1024, 4095), (16, 7168, 1535), (8, 4608, 36863)]
if ARGS.small_m:  # gemm_rows' tokens (gemm_rows.MAX_M); `served` (the op without gemm_rows_tma) is gemm_rows there
    SHAPES = SMALL_M_HELDOUT if ARGS.heldout else SMALL_M
# Drawn 2026-12-07 (random.seed(20261207): M 17-256, N 1024-8192 whole octets, K odd 1280-12000) where x's shifted
# copies hold 0.30-0.51 of w's bytes, after rows_reduce_kernel's block was sized (56 x 1536 x 7001, 0.34: 1.37x the
# copy, refused by the share): whether dispatch.ROWS_TMA_X_SHARE (0.3) should rise. `tma` against `op` (the copy)
SHARE = [(96, 3472, 2373), (255, 6760, 3369), (196, 6472, 9167), (187, 6328, 11647), (154, 6224, 4713),
         (181, 6040, 8781), (70, 2688, 4909), (182, 5016, 5349), (42, 1256, 4603), (63, 1040, 6253), (119, 2064, 11451),
         (109, 2024, 11893)]
if ARGS.share:
    SHAPES = SHARE
if ARGS.quick:
    SHAPES = [(64, 4096, 4095), (256, 4096, 4095), (16, 4096, 4095)]


VARIANT_SHAPES = {(64, 4096, 4095), (256, 28672, 8191)}


def variants(M, N, K):
    """The default tile, it with the partials' layout flipped (CLASS_MAJOR) and the K split's goal at 1 program an SM;
    with --unswapped the unswapped tile's other width (128 / R.WIDE_J columns);
    with --all-variants on VARIANT_SHAPES the goal at 4, stages, the weight rows a box."""
    base = R.tile(M, N, K, 2, target.num_cus)
    flipped = "tma_y_order" if base["CLASS_MAJOR"] else "tma_cm"  # the partials' other layout
    out = {"tma": base} if ARGS.unswapped else {"tma": base, flipped: dict(base, CLASS_MAJOR=not base["CLASS_MAJOR"])}
    chunks = -(-K // R.block_k(2))
    progs = 8 * -(-(N // 8) // base["BLOCK_J"]) * -(-M // base["BLOCK_M"])
    if ARGS.unswapped and not base["SWAP"]:  # the other of 128 x 256 (R.WIDE_J) and the 128-column tile
        wide = base["BLOCK_J"] == R.WIDE_J
        bm, bj = (64 if M <= 128 else 128, 128) if wide else (128, R.WIDE_J)
        p2 = 8 * -(-(N // 8) // bj) * -(-M // bm)
        split = max(1, min(-(-R.PROGRAMS_PER_SM * target.num_cus // p2), chunks // R.MIN_STEPS))
        out["tma_j128" if wide else "tma_j256"] = dict(base, BLOCK_M=bm, BLOCK_J=bj, SPLIT_K=split,
                                                        num_warps=4 if bm <= 64 else 8)
    for per_sm in (1, 4):
        split = max(1, min(-(-per_sm * target.num_cus // progs), chunks // R.MIN_STEPS))
        if split != base["SPLIT_K"] and (per_sm == 1 or ARGS.all_variants and (M, N, K) in VARIANT_SHAPES):
            out[f"tma_sm{per_sm}"] = dict(base, SPLIT_K=split)
    if not ARGS.all_variants or (M, N, K) not in VARIANT_SHAPES:
        return out
    for st in (3, 6):
        out[f"tma_st{st}"] = dict(base, num_stages=st)
    if base["SWAP"]:
        bj = 128
        progs2 = 8 * -(-(N // 8) // bj) * -(-M // base["BLOCK_M"])
        split = max(1, min(-(-R.PROGRAMS_PER_SM * target.num_cus // progs2), chunks // R.MIN_STEPS))
        out["tma_j128"] = dict(base, BLOCK_J=bj, SPLIT_K=split)
    return out


def check(x, w, t):
    y = torch.empty(x.shape[0], w.shape[0], device=dev, dtype=torch.bfloat16)
    R.launch(x, w, None, y, "none", target, t=t)
    ref = x.float() @ w.float().t()
    return ((y.float() - ref).abs().max() / ref.abs().max()).item()


def inf_neighbour(M, N, K, t):
    """inf in weight row 1: y's column 1 inf / nan, columns 0 and 2 (its neighbours in memory) finite."""
    x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
    w = torch.randn(N, K, device=dev, dtype=torch.bfloat16)
    w[1] = float("inf")
    y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
    R.launch(x, w, None, y, "none", target, t=t)
    return bool(torch.isfinite(y[:, [0, 2]]).all() and torch.isfinite(y[:, 3:]).all())


rows = []
for M, N, K in SHAPES:
    KA = -(-K // 8) * 8
    sets = [(torch.randn(M, K, device=dev, dtype=torch.bfloat16), torch.randn(N, K, device=dev, dtype=torch.bfloat16))
            for _ in range(rotation_count((M + N) * K * 2, L2))]
    aligned = [(torch.randn(M, KA, device=dev, dtype=torch.bfloat16),
                torch.randn(N, KA, device=dev, dtype=torch.bfloat16)) for _ in range(len(sets))]
    tiles = variants(M, N, K)
    errs = {name: check(*sets[0], t) for name, t in tiles.items()}
    fns = {"served": (lambda x, w: gemmkit.gemm_a16w16(x, w), sets),
           "aligned": (lambda x, w: gemmkit.gemm_a16w16(x, w), aligned),
           "vendor": (lambda x, w: torch.matmul(x, w.t()), sets),
           "op": (lambda x, w: gemmkit.gemm_a16w16(x, w), sets)}  # as it serves by default
    for name, t in tiles.items():
        fns[name] = ((lambda t: lambda x, w: R.launch(x, w, None, torch.empty(x.shape[0], w.shape[0], device=dev,
                                                                               dtype=torch.bfloat16),
                                                       "none", target, t=t))(t), sets)
    res = {}
    for rnd in range(1 if ARGS.quick else 2):
        for name, (fn, s) in fns.items():
            if ROWS_TMA is not None and name == "served":
                D.ROWS_TMA = False  # what the op serves without the new kernel
            callplan.clear()
            try:
                us = time_graph(fn, s, rep_ms=50) * 1e3
                res[name] = min(res.get(name, us), us)
            except Exception as e:
                res[name] = None
                print(M, N, K, name, "failed:", str(e).splitlines()[0][:160], flush=True)
            if ROWS_TMA is not None:
                D.ROWS_TMA = ROWS_TMA
    best = min((n for n in tiles if res.get(n)), key=lambda n: res[n], default=None)
    row = dict(M=M, N=N, K=K, us={k: (round(v, 2) if v else None) for k, v in res.items()},
               tiles=tiles, max_rel_err=errs, inf_neighbour_ok=inf_neighbour(min(M, 64), 64, K, tiles["tma"]),
               best=best, tma_over_served=round(res["served"] / res["tma"], 3) if res.get("tma") else None,
               tma_of_aligned=round(res["aligned"] / res["tma"], 3) if res.get("tma") else None,
               tma_vs_vendor=round(res["vendor"] / res["tma"], 3) if res.get("tma") else None)
    rows.append(row)
    print(M, N, K, {k: row["us"][k] for k in row["us"]}, "err", max(errs.values()), "inf ok", row["inf_neighbour_ok"],
          "tma/served", row["tma_over_served"], "of aligned", row["tma_of_aligned"], flush=True)
    if ARGS.json:  # after every row: a run cut short keeps what it measured
        write_stamped(ARGS.json, "CUDA-graph replay, inputs rotated past the L2, each mode twice (better round); "
                      "served: the op without gemm_rows_tma; aligned: the op at K rounded up to 8; tma*: "
                      "gemm_rows_tma.launch with the tile in `tiles` (x's shifted copies included)", rows)
print(json.dumps({"wrote": ARGS.json, "rows": len(rows)}))
