"""The memory floor of the decode-sized bars: how fast can any kernel on this GPU stream N bytes it
has never seen, timed the way `gemmkit bench --cuda-graph` times everything?

Three bars of issues 3 and 5 are bandwidth bars at small M (the weight read is the work):
  - issue 3: M <= 64 geomean >= 1.25x cuBLAS (>= 90% of the copy bandwidth on the weight bytes)
  - issue 5: ffn_gated >= 1.2x the torch sequence at M <= 256; split_cat >= 1.2x at M = 1 (33.6 MB of weight)
A ratio bar there is only reachable if the vendor is far from the floor. This script measures the floor
in the bench's own harness (bench/timing.time_graph: one CUDA graph of one call per rotated input set,
L2 cleared before every replay, median of do_bench) for:
  read     a Triton streaming read (each program sums a contiguous chunk: loads only, one float out),
           best of a few block / warp / chunk settings: the fastest a kernel can pull the bytes in
  copy     torch's device-to-device copy of the same tensor (reads and writes it: 2x the bytes)
  and, same process, the calls the bars compare at the same sizes: torch.matmul / gemm_a16w16 at M = 1,
  gemm_split_cat vs matmul + cat (kv_b_proj, M = 1), ffn_gated vs its torch sequence (Llama-3 8B / 70B, M = 1).
Output: a table (stdout) and --json with every number, device, versions and git sha.

Usage (repo root, on the GPU): PYTHONPATH=. python benchmarks/read_floor.py --json OUT.json
"""
import argparse
import json
import time

import triton

from gemmkit.bench.roofline import stream_read  # the read `gemmkit bench --roofline` measures too

READ_SETTINGS = [(8192, 1024, 4), (16384, 2048, 4), (32768, 2048, 8), (65536, 4096, 8), (16384, 1024, 4),
                 (4096, 512, 4), (4096, 1024, 4), (2048, 512, 2), (8192, 1024, 2), (8192, 512, 4)]
# (CHUNK elements per program, BLOCK per load step, num_warps)

SIZES = [  # (label, rows, cols) of a bf16 weight
    ("deepseek kv_a N=576 K=7168", 576, 7168),
    ("kv_b_proj N=32768 K=512 (split_cat)", 32768, 512),
    ("llama3-70b N=8192 K=8192", 8192, 8192),
    ("llama3-8b down N=4096 K=14336", 4096, 14336),
    ("llama3-8b gate_up N=28672 K=4096", 28672, 4096),
    ("llama3-70b down N=8192 K=28672", 8192, 28672),
    ("llama3-70b gate_up N=57344 K=8192", 57344, 8192),
]


def main():
    import torch

    import gemmkit
    from gemmkit.bench import stamp
    from gemmkit.bench.ops import get
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.ops import _common as C

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--rep-ms", type=int, default=50)
    args = ap.parse_args()
    dev = torch.device("cuda")
    target = C.target_for(dev)
    res = {**stamp(), "method": __doc__.split("Output:")[0].strip(), "sizes": [], "ops": []}
    t0 = time.time()
    for label, rows, cols in SIZES:
        nbytes = rows * cols * 2
        sets = [(torch.randn(rows, cols, device=dev, dtype=torch.bfloat16),)
                for _ in range(rotation_count(nbytes, target.l2_bytes))]
        n = rows * cols
        best = None
        per = {}
        for chunk, block, warps in READ_SETTINGS:
            progs = triton.cdiv(n, chunk)
            out = torch.empty(progs, device=dev, dtype=torch.float32)

            def fn(w, chunk=chunk, block=block, warps=warps, out=out, progs=progs):
                stream_read[(progs,)](w, out, n, CHUNK=chunk, BLOCK=block, num_warps=warps)
            ms = time_graph(fn, sets, 10, args.rep_ms)
            per[f"chunk{chunk}_block{block}_w{warps}"] = ms
            # (None: a size that is not a whole number of chunks is not checked; every size here is)
            ok = torch.allclose(out, sets[-1][0].float().reshape(-1).reshape(progs, -1).sum(1), rtol=1e-2,
                                atol=1e-1) if n % chunk == 0 else None
            if best is None or ms < best[0]:
                best = (ms, f"chunk{chunk}_block{block}_w{warps}", ok)
        dst = torch.empty_like(sets[0][0])
        copy_ms = time_graph(lambda w: dst.copy_(w), sets, 10, args.rep_ms)
        row = {"label": label, "rows": rows, "cols": cols, "bytes": nbytes, "read_ms": best[0],
               "read_setting": best[1], "read_checked": best[2], "read_tbps": nbytes / best[0] / 1e9,
               "read_ms_per_setting": per, "copy_ms": copy_ms, "copy_tbps_moved": 2 * nbytes / copy_ms / 1e9}
        # the GEMM at M = 1 on this weight: cuBLAS and gemmkit's table config
        xs = [torch.randn(1, cols, device=dev, dtype=torch.bfloat16) for _ in sets]
        pairs = [(x, s[0]) for x, s in zip(xs, sets)]
        row["matmul_m1_ms"] = time_graph(lambda x, w: torch.matmul(x, w.T), pairs, 10, args.rep_ms)
        row["gemmkit_m1_ms"] = time_graph(lambda x, w: gemmkit.gemm_a16w16(x, w), pairs, 10, args.rep_ms)
        res["sizes"].append(row)
        print(f"{label:40s} {nbytes / 1e6:8.1f} MB  read {best[0] * 1e3:8.2f} us ({row['read_tbps']:.2f} TB/s, "
              f"{best[1]}, checked {best[2]})  copy {copy_ms * 1e3:8.2f} us ({row['copy_tbps_moved']:.2f} TB/s moved)  "
              f"matmul M=1 {row['matmul_m1_ms'] * 1e3:8.2f} us  gemmkit M=1 {row['gemmkit_m1_ms'] * 1e3:8.2f} us",
              flush=True)
        del sets, pairs, xs, dst
        torch.cuda.empty_cache()
    # The bars' own calls at M = 1, same process (bench/ops.py: table configs, vendor as bench times it).
    for op, label, N, K in (("split_cat", "deepseek-v3 kv_b_proj", 32768, 512),
                            ("ffn_gated", "llama3-8b ffn", 14336, 4096), ("ffn_gated", "llama3-70b ffn", 28672, 8192)):
        bop = get(op)
        _f, nbytes = bop.work(1, N, K, "bf16")
        sets = [bop.make_inputs(1, N, K, "bf16", dev) for _ in range(rotation_count(nbytes, target.l2_bytes))]
        ms = time_graph(lambda *inp: bop.run(inp, None), sets, 10, args.rep_ms)
        ref_ms = time_graph(lambda *inp: bop.vendor(inp), sets, 10, args.rep_ms)
        row = {"op": op, "label": label, "M": 1, "N": N, "K": K, "min_bytes": nbytes, "ms": ms, "ref_ms": ref_ms,
               "ratio": ref_ms / ms}
        res["ops"].append(row)
        print(f"{op:10s} {label:24s} M=1: gemmkit {ms * 1e3:8.2f} us  torch {ref_ms * 1e3:8.2f} us  "
              f"ratio {ref_ms / ms:.3f}", flush=True)
        del sets
        torch.cuda.empty_cache()
    res["seconds"] = time.time() - t0
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
