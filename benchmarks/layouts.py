"""Operand layouts on the GPU: gemm_a16w16 with x and / or w transposed (unit stride along M or N: a (K, N) weight
passed as W.t(), an activation computed column-major) against the same call on contiguous operands and against
torch.matmul on the same views (cuBLAS takes either layout in place) in one process; CUDA-graph replay, inputs
rotated past the L2, ABBA. The dispatch sends a transposed operand to the Triton pointer kernel (TMA and the Gluon
kernels take rows along K only: ops/dispatch.py), a layout never timed before this script.

Predicted (2026-12-05, before any run): the pointer kernel at 0.5-0.8x of the contiguous call at M >= 1024; near
even at M <= 16 (one pass over w either way; M from 2: a (1, K) view of a (K, 1) tensor has rows one element apart,
not a transposed layout). Where it is under ~0.8x, a copy of the transposed operand to rows along K (one read and
write of it) ahead of the TMA kernels would pay from about M = 256 on a 4096 x 4096 weight.

    PYTHONPATH=. python3 benchmarks/layouts.py benchmarks/results/<gpu>/layouts.json"""
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
from gemmkit.ops import dispatch as D  # noqa: E402

SHAPES = [(2, 4096, 4096), (16, 4096, 4096), (256, 4096, 4096), (1024, 4096, 4096), (4096, 4096, 4096),
          (2048, 14336, 4096), (2048, 4096, 14336)]
LAYOUTS = ("contiguous", "w_t", "x_t", "both_t")
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def operands(M, N, K, layout):
    bf = torch.bfloat16
    x = torch.randn(K, M, device="cuda", dtype=bf).t() if layout in ("x_t", "both_t") else \
        torch.randn(M, K, device="cuda", dtype=bf)
    w = torch.randn(K, N, device="cuda", dtype=bf).t() if layout in ("w_t", "both_t") else \
        torch.randn(N, K, device="cuda", dtype=bf)
    return x, w


def timed(fn, sets):
    callplan.clear()
    return time_graph(fn, sets, rep_ms=40) * 1e3


rows = []
for M, N, K in SHAPES:
    n_sets = rotation_count((M + N) * K * 2, L2)
    base = None
    for layout in LAYOUTS:
        sets = [operands(M, N, K, layout) for _ in range(n_sets)]
        x, w = sets[0]
        y = gemmkit.gemm_a16w16(x, w)  # checked once against torch in fp32 before timing
        ref = torch.matmul(x.float(), w.float().t())
        err = ((y.float() - ref).norm() / ref.norm()).item()
        assert err < 2 ** -7, (M, N, K, layout, err)
        kernel = D.dense(configs.serve("a16w16", arch.current(), M, N, K)[0], arch.current(), x, w, y).kernel
        ours, vendor = (lambda a, b: gemmkit.gemm_a16w16(a, b)), (lambda a, b: torch.matmul(a, b.t()))
        t = [timed(f, sets) for f in (ours, vendor, vendor, ours)]  # ABBA
        us, ven = (t[0] + t[3]) / 2, (t[1] + t[2]) / 2
        base = us if layout == "contiguous" else base
        row = dict(M=M, N=N, K=K, layout=layout, kernel=kernel, us=round(us, 2), vendor_us=round(ven, 2),
                   ratio_vs_vendor=round(ven / us, 3), vs_contiguous=round(base / us, 3),
                   tflops=round(2 * M * N * K / us / 1e6, 1))
        rows.append(row)
        print(json.dumps(row), flush=True)

write_stamped(ARGS.json,
              "CUDA-graph replay, inputs rotated past the L2; gemmkit, torch.matmul, torch.matmul, gemmkit (ABBA, "
              "each side the mean of its two); vs_contiguous: the contiguous call's time over this layout's",
              rows)
