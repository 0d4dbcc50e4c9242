"""Where the coop FP8 kernel's time goes with and without its tail split: torch.profiler's device time per
kernel (the GEMM, the tail reduce) for one row, tail off / on, 20 calls each over rotated inputs (L2 not
cleared between calls: a breakdown, not the bench's number). Usage on the GPU:
PYTHONPATH=. python benchmarks/tail_profile.py [block|rowcol] M N K
"""
import sys
from collections import defaultdict

import torch

from gemmkit import arch
from gemmkit.bench.ops import get
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k
from gemmkit.ops import _common as C


def main(op, M, N, K, calls=20):
    target = arch.current()
    name = "a8w8_blockscale" if op == "block" else "a8w8"
    cfg, source = C.resolve_config(name, None, target, M, N, K)
    sets = [get(name).inputs(M, N, K, "fp8", torch.device("cuda")) for _ in range(4)]
    y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    block = (128, 128) if op == "block" else None
    for tail in (False, True):
        def call(i):
            x, w, xs, ws = sets[i % len(sets)][:4]
            if op == "rowcol":
                xs, ws = xs.reshape(-1), ws.reshape(-1)
            k.launch(x, w, xs, ws, None, y, cfg, target, block_shape=block, tail=tail)
        for i in range(5):
            call(i)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for i in range(calls):
                call(i)
            torch.cuda.synchronize()
        per = defaultdict(list)
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                per[e.name].append(e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
        print(f"{op} {M}x{N}x{K} tail={tail} ({source}):",
              {n[:40]: round(sorted(v)[len(v) // 2], 2) for n, v in per.items()}, "us (median per call)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:5]))
