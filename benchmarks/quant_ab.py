"""Same-process A/B of launch parameters of the rowwise fp8 quantizer (kernels/triton/quant.py quant_rowwise_kernel):
the served ones (gemmkit.quant.launch_params) against named alternatives, on activations (x, per token) and the
gated form (act(gate) * up of h = [gate | up], the fp8 MLP's down input), bit for bit equal, CUDA-graph replays of
rotated inputs (bench/timing.time_graph), the sides alternated over passes, median per side. GB/s counts the bytes
read and written once; a row's `speedup_served` is each side's time over the served one's (> 1: served faster).

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/quant_ab.py --json OUT.json
"""
import argparse
import json
import statistics

import torch

SIDES = {  # name -> (BLOCK_M, BLOCK_K, num_warps, ONE_PASS) or None: what launch_params serves
    "served": None,
    "rows4_k1024": (4, 1024, 4, False),  # the large-M parameters before ONE_PASS
    "row1_k16384_2pass": (1, 16384, 16, False),  # one row a program, two passes
    "row1_k32768_w16": (1, 32768, 16, True),  # one pass over rows of up to 32768 (only where K > 16384)
    "row1_k32768_w32": (1, 32768, 32, True),
}
SHAPES = [  # (M, K, gated): Llama-3-70B x (8192) and its TP-2 / one-GPU gated shards (14336 / 28672), others
    (512, 8192, None), (1024, 8192, None), (4096, 8192, None), (8192, 8192, None),
    (1024, 14336, "silu"), (4096, 14336, "silu"), (8192, 14336, "silu"),
    (4096, 28672, "silu"), (8192, 28672, "silu"),
    (4096, 7168, None), (3000, 5120, None), (2048, 18432, "silu"), (4096, 4096, "silu"), (1000, 3584, None),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", required=True)
    p.add_argument("--passes", type=int, default=4)
    args = p.parse_args()
    from gemmkit import launcher as L
    from gemmkit import quant as Q
    from gemmkit.bench import stamp
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.kernels.triton import quant as K
    from gemmkit.ops import _common as C

    dt = torch.float8_e4m3fn
    rows = []
    for M, Kd, gated in SHAPES:
        cols = 2 * Kd if gated else Kd
        nbytes = M * cols * 2 + M * Kd + M * 4
        sets = [(torch.randn(M, cols, device="cuda", dtype=torch.bfloat16),)
                for _ in range(rotation_count(nbytes, 60 * 2**20))]
        q = torch.empty(M, Kd, device="cuda", dtype=dt)
        s = torch.empty(M, 1, device="cuda", dtype=torch.float32)

        def side(params):
            grid, ce, opts = Q.launch_params("quant_rowwise_kernel", M, Kd, dtype=dt,
                                             int64_offsets=C.int64_offsets(sets[0][0], q), gated=gated)
            if params is not None:
                bm, bk, warps, one = params
                if one and not Kd <= bk < 2 * Kd:  # a one-pass side only where its chunk is the row's power of two
                    return None
                grid, ce, opts = (-(-M // bm),), {**ce, "BLOCK_M": bm, "BLOCK_K": bk, "ONE_PASS": one}, \
                    {"num_warps": warps}

            def fn(x):
                L.launch(K.quant_rowwise_kernel, grid, x, q, s, M, Kd, x.stride(0), x.stride(1), **ce, **opts)
                return q, s
            return fn

        fns = {n: f for n, f in ((n, side(p)) for n, p in SIDES.items()) if f is not None}
        outs = {}
        for n, f in fns.items():
            qq, ss = f(sets[0][0])
            outs[n] = (qq.view(torch.uint8).clone(), ss.clone())
        for n in fns:
            assert torch.equal(outs[n][0], outs["served"][0]) and torch.equal(outs[n][1], outs["served"][1]), n
        times = {n: [] for n in fns}
        order = list(fns)
        for i in range(args.passes):
            for n in (order if i % 2 == 0 else order[::-1]):
                times[n].append(time_graph(fns[n], sets, rep_ms=40))
        ms = {n: statistics.median(t) for n, t in times.items()}
        row = {"M": M, "K": Kd, "gated": gated, "ms": ms, "GBps": {n: nbytes / t / 1e6 for n, t in ms.items()},
               "speedup_served": {n: ms[n] / ms["served"] for n in ms if n != "served"}}
        rows.append(row)
        print(M, Kd, gated, {n: f"{t * 1e3:.1f}us {row['GBps'][n]:.0f}GB/s" for n, t in ms.items()}, flush=True)
    out = {**stamp(), "sides": {n: p for n, p in SIDES.items()}, "rows": rows}
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
