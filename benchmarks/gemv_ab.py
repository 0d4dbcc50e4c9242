"""GEMV configs (BLOCK_SIZE_M < 16: kernels/triton/_mainloop.py fma_product) against the shipped tables at
decode M, on the GPU, in one process: split_cat (kv_b_proj), gemm_a16w16 and a16w16_gated layers, and
ffn_gated end to end.

Prediction (benchmarks/read_floor.py, H200, session 7): a streaming read of 33.6 MB takes 11.0 us in the
bench harness where gemm_a16w16 / gemm_split_cat at M = 1 take 12.2 / 12.4 us (its best setting: 16 KiB per
program, 4 warps, plain loads). A GEMV tile of BLOCK_N x BLOCK_K = 16 x 512 reads the same 16 KiB per
program with the same loads, so split_cat at M = 1 should land near 11.3 us (ratio ~1.25x torch, bar 1.2x);
on the 100-900 MB layers the table is already within 4-14 % of the read floor: +0-10 %.

Method: every candidate checked first (fp32 reference, rel err <= 2**-8); then CUDA-graph timing
(bench/timing.time_graph: one call per rotated input set, L2 cleared per replay, do_bench median), the
vendor timed between every two candidates; 3 passes, alternate ones reversed; each ratio against the mean of
the adjacent vendor timings; the row keeps the median. Usage (repo root, GPU):
  PYTHONPATH=. python benchmarks/gemv_ab.py --json OUT.json
"""
import argparse
import json
import time


def gemv(bm, bn, bk, warps=4, **kw):
    return dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=1, num_warps=warps, num_stages=1,
                **kw)


# (BLOCK_N, BLOCK_K, num_warps) per BLOCK_SIZE_M; a GEMV tile keeps BM x BN x BK partial products in registers
GEMV_CANDIDATES = {
    1: [(16, 512, 4), (32, 256, 4), (16, 256, 4), (16, 1024, 8), (32, 512, 8), (64, 128, 4), (16, 512, 8),
        (16, 256, 2)],
    4: [(16, 128, 4), (32, 64, 4), (16, 256, 8), (16, 64, 2)],
    8: [(16, 64, 4), (16, 128, 8), (32, 64, 8)],
}
# session 7, first round (per-step reductions over K, fma_product in mma_step): every candidate 0.03-1.05x of
# the vendor, below the tables everywhere (gemv_ab_round1.json); this round accumulates across K steps.
# rows: (op, label, M, N, K); M > 1 rows take the candidates with BLOCK_SIZE_M = the next power of two >= M
ROWS = [
    ("split_cat", "deepseek-v3 kv_b_proj", 1, 32768, 512),
    ("a16w16", "deepseek-v3 kv_a_proj", 1, 576, 7168),
    ("a16w16", "deepseek-v3 kv_b_proj", 1, 32768, 512),
    ("a16w16", "llama3-70b o_proj", 1, 8192, 8192),
    ("a16w16", "llama3-8b down_proj", 1, 4096, 14336),
    ("a16w16", "llama3-70b down_proj", 1, 8192, 28672),
    ("a16w16_gated", "llama3-8b gate_up", 1, 14336, 4096),
    ("a16w16_gated", "llama3-70b gate_up", 1, 28672, 8192),
    ("a16w16", "llama3-70b o_proj", 4, 8192, 8192),
    ("a16w16", "llama3-70b o_proj", 8, 8192, 8192),
]


def main():
    import torch

    from gemmkit.bench import git_sha
    from gemmkit.bench.ops import get
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.ops import _common as C

    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=int, default=25)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--rows", default="all", help="comma-separated row indices, or all")
    args = ap.parse_args()
    dev = torch.device("cuda")
    target = C.target_for(dev)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731 (odd counts)
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": time.strftime(
        "%Y-%m-%d %H:%M UTC", time.gmtime()), "git_sha": git_sha(), "method": __doc__.split("Usage")[0].strip(),
        "rows": []}
    import triton

    out["triton"] = triton.__version__
    rows = ROWS if args.rows == "all" else [ROWS[int(i)] for i in args.rows.split(",")]
    t0 = time.time()
    for op, label, M, N, K in rows:
        bop = get(op)
        _f, nbytes = bop.work(M, N, K, "bf16")
        sets = [bop.make_inputs(M, N, K, "bf16", dev) for _ in range(rotation_count(nbytes, target.l2_bytes))]
        bm = 1 << (M - 1).bit_length()
        cands = [None] + [gemv(bm, bn, bk, w) for bn, bk, w in GEMV_CANDIDATES[bm]]
        if op == "ffn_gated":
            cands = [None] + [(c, None) for c in cands[1:]]
        ref = bop.reference(sets[0])
        res = []
        for c in cands:
            r = {"config": c if c is not None else "table"}
            try:
                y = bop.run(sets[0], c)
                err = ((y.float() - ref).norm() / ref.norm()).item()
                r["rel_err"] = err
                if not err <= 2**-8:
                    r["error"] = f"wrong: {err:.3g}"
            except Exception as e:  # a candidate the op refuses: recorded, not timed
                r["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            res.append(r)
        timed = [r for r in res if "error" not in r]
        vendor = lambda: time_graph(lambda *inp: bop.vendor(inp), sets, 5, args.rep_ms)  # noqa: E731
        v = [vendor()]
        for p in range(args.passes):
            for r in (timed if p % 2 == 0 else timed[::-1]):
                c = None if r["config"] == "table" else r["config"]
                ms = time_graph(lambda *inp, c=c: bop.run(inp, c), sets, 5, args.rep_ms)
                v.append(vendor())
                r.setdefault("ms_all", []).append(ms)
                r.setdefault("ratio_all", []).append((v[-2] + v[-1]) / 2 / ms)
        print(f"{op} {label} M={M} N={N} K={K}: vendor {med(v) * 1e3:.2f} us (spread "
              f"{(max(v) - min(v)) / med(v):.1%})", flush=True)
        for r in res:
            c = r["config"]
            desc = "table" if c == "table" else (f"{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']} "
                                                 f"w{c['num_warps']}" if isinstance(c, dict) else str(c)[:40])
            if "ms_all" in r:
                r.update(ms=med(r["ms_all"]), ratio=med(r["ratio_all"]))
                print(f"   {desc:22s} {r['ms'] * 1e3:8.2f} us  ratio {r['ratio']:.3f}  "
                      f"({', '.join(f'{x:.3f}' for x in r['ratio_all'])})", flush=True)
            else:
                print(f"   {desc:22s} {r.get('error')}", flush=True)
        out["rows"].append({"op": op, "label": label, "M": M, "N": N, "K": K, "vendor_ms": med(v),
                            "vendor_all": v, "candidates": res})
        del sets
        torch.cuda.empty_cache()
    out["seconds"] = time.time() - t0
    print(f"took {out['seconds']:.0f}s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
