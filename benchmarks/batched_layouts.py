"""batched_gemm_a16w16 with w transposed in memory (attention's probs @ V: V (B, K, N) passed as V.transpose(1, 2)),
the batched TMA kernel's W_KN, against the same call on a contiguous w, the batched pointer kernel that served it
before (the served tile, "tma": false) and torch.bmm on the same views, in one process; CUDA-graph replay, inputs
rotated past the L2, each call timed once (a probe: no ABBA).

    PYTHONPATH=. python3 benchmarks/batched_layouts.py benchmarks/results/<gpu>/batched_layouts.json"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS = ARGS.parse_args()

import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit import arch, callplan, configs  # noqa: E402
from gemmkit.bench import write_stamped  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.kernels.triton import dense as G  # noqa: E402

L2 = torch.cuda.get_device_properties(0).L2_cache_size
bf = torch.bfloat16


def t(fn, sets):
    callplan.clear()
    return round(time_graph(fn, sets, rep_ms=30) * 1e3, 2)


rows = []
for B, M, N, K in [(32, 1, 128, 2048), (32, 16, 128, 2048), (32, 128, 128, 2048), (32, 1024, 128, 1024),
                   (8, 2048, 128, 2048)]:
    n = rotation_count(B * (M + N) * K * 2, L2)
    sets = [(torch.randn(B, M, K, device="cuda", dtype=bf),
             torch.randn(B, K, N, device="cuda", dtype=bf).transpose(1, 2)) for _ in range(n)]
    x, w = sets[0]
    y = gemmkit.batched_gemm_a16w16(x, w)
    err = ((y.float() - torch.bmm(x.float(), w.float().transpose(1, 2))).norm() / y.float().norm()).item()
    cont = [(a, b.contiguous()) for a, b in sets]
    cfg = G.fallback_stages(configs.serve("batched_a16w16", arch.current(), M, N, K)[0], arch.current(), 2, 2,
                            tma=False)
    ptr = {k: v for k, v in cfg.items() if k not in ("backend", "swap_ab")}
    ptr["tma"] = False
    row = dict(B=B, M=M, N=N, K=K, err=err,
               t_us=t(lambda a, b: gemmkit.batched_gemm_a16w16(a, b), sets),
               contiguous_us=t(lambda a, b: gemmkit.batched_gemm_a16w16(a, b), cont),
               pointer_us=t(lambda a, b: gemmkit.batched_gemm_a16w16(a, b, config=ptr), sets),
               bmm_t_us=t(lambda a, b: torch.bmm(a, b.transpose(1, 2)), sets))
    print(json.dumps(row), flush=True)
    rows.append(row)
write_stamped(ARGS.json,
              "CUDA-graph replay, inputs rotated past the L2, one timing a call (t_us: the served call on the "
              "transposed w; contiguous_us: w.contiguous(); pointer_us: the served tile on the pointer kernel)",
              rows)
