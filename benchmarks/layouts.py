"""Operand layouts on the GPU: gemm_a16w16 with x and / or w transposed (unit stride along M or N: a (K, N) weight
passed as W.t(), an activation computed column-major) against the same call on contiguous operands and against
torch.matmul on the same views (cuBLAS takes either layout in place) in one process; CUDA-graph replay, inputs
rotated past the L2, ABBA. The dispatch (ops/dispatch.py) reads a 16-bit transposed operand in place on the Triton
TMA kernel where its storage meets TMA's rules (kernels/triton/dense.mn_major), and copies a small transposed x to
rows along K where it does not, or where the config is a Gluon swap-AB tile (`dispatch.SWAP_COPY`), whose kernel
also reads a transposed w in place (`dispatch.SWAP_W_KN`): for each row whose kernel those two change, the row also
times the call with both off (`us_without`, `kernel_without`, in the same ABBA).

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

SHAPES = [(2, 4096, 4096), (8, 4096, 4096), (16, 4096, 4096), (32, 4096, 4096), (64, 4096, 4096), (128, 4096, 4096),
          (256, 4096, 4096), (1024, 4096, 4096), (4096, 4096, 4096), (2048, 14336, 4096), (2048, 4096, 14336)]
LAYOUTS = ("contiguous", "w_t", "x_t", "both_t")
L2 = torch.cuda.get_device_properties(0).L2_cache_size


def operands(M, N, K, layout):
    bf = torch.bfloat16
    x = torch.randn(K, M, device="cuda", dtype=bf).t() if layout in ("x_t", "both_t") else \
        torch.randn(M, K, device="cuda", dtype=bf)
    w = torch.randn(K, N, device="cuda", dtype=bf).t() if layout in ("w_t", "both_t") else \
        torch.randn(N, K, device="cuda", dtype=bf)
    return x, w


def swap_paths(on: bool):
    """dispatch.SWAP_COPY and SWAP_W_KN both on (the library's default) or off."""
    D.SWAP_COPY = D.SWAP_W_KN = on


def timed(fn, sets, swap=True):
    callplan.clear()
    swap_paths(swap)
    try:
        return time_graph(fn, sets, rep_ms=40) * 1e3
    finally:
        swap_paths(True)
        callplan.clear()


def served(M, N, K, x, w, y, swap=True):
    swap_paths(swap)
    try:
        choice = D.dense(configs.serve("a16w16", arch.current(), M, N, K)[0], arch.current(), x, w, y)
    finally:
        swap_paths(True)
    return choice.kernel + (" on a copy of x" if choice.pad_k and not choice.pad_k_w else "")


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
        kernel, without = served(M, N, K, x, w, y), served(M, N, K, x, w, y, swap=False)
        ours, vendor = (lambda a, b: gemmkit.gemm_a16w16(a, b)), (lambda a, b: torch.matmul(a, b.t()))
        if without == kernel:
            t = [timed(f, sets) for f in (ours, vendor, vendor, ours)]  # ABBA
        else:  # ours, vendor, without the swap paths, without, vendor, ours
            t = [timed(ours, sets), timed(vendor, sets), timed(ours, sets, False), timed(ours, sets, False),
                 timed(vendor, sets), timed(ours, sets)]
        us, ven = (t[0] + t[-1]) / 2, (t[1] + t[-2]) / 2
        base = us if layout == "contiguous" else base
        row = dict(M=M, N=N, K=K, layout=layout, kernel=kernel, us=round(us, 2), vendor_us=round(ven, 2),
                   ratio_vs_vendor=round(ven / us, 3), vs_contiguous=round(base / us, 3),
                   tflops=round(2 * M * N * K / us / 1e6, 1))
        if without != kernel:
            row.update(kernel_without=without, us_without=round((t[2] + t[3]) / 2, 2))
        rows.append(row)
        print(json.dumps(row), flush=True)

write_stamped(ARGS.json,
              "CUDA-graph replay, inputs rotated past the L2; gemmkit, torch.matmul, torch.matmul, gemmkit (ABBA, "
              "each side the mean of its two); vs_contiguous: the contiguous call's time over this layout's; "
              "us_without: with dispatch.SWAP_COPY and SWAP_W_KN off, timed between the two vendor runs",
              rows)
