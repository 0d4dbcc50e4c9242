"""Unaligned K for gemm_a8w8 (fp8 / int8, K % 16 != 0, per-token x per-channel scales) at M = 1-256 on the GPU: the
op as it serves it (kernels/triton/gemm_rows_tma.py from 2 tokens where it takes the call, gemm_rows.py at one),
against gemm_rows where it takes the call (`rows`: dispatch.ROWS_TMA off), the copy of x and w to 16-byte rows + the
TMA / Gluon kernel (`copy`: ROWS_TMA and ROWS_KERNEL off, what the op served before), the op at K rounded up to 16
(the aligned speed issue 32 asks 80% of) and, for fp8, torch._scaled_mm at that aligned K (it refuses K % 16 != 0).
One process, CUDA-graph replay, inputs rotated past the L2, each mode twice (the better round kept); every served
call checked against an fp32 product of the dequantized operands first.

    PYTHONPATH=. python3 benchmarks/rows_8bit.py [OUT.json] [--quick]"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS.add_argument("--quick", action="store_true", help="one round a mode, a few shapes")
ARGS = ARGS.parse_args()

import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit import callplan, launcher  # noqa: E402
from gemmkit.bench import write_stamped  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.ops import dispatch as D  # noqa: E402

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size
# Drawn before any 8-bit gemm_rows timing (2026-12-07): the bf16 unaligned sets' weights (rows_tma.py SMALL_M) and
# odd sizes of other families
SHAPES = [(M, N, K) for N, K in ((4096, 4095), (14336, 4095), (5000, 7000), (28672, 8191), (1536, 7001))
          for M in (1, 4, 16, 17, 64, 128, 256)] + \
    [(2, 7168, 2049), (8, 11008, 4097), (1, 576, 7001), (12, 3584, 18943), (16, 18944, 3583), (1, 2560, 9999),
     (33, 11008, 4097), (72, 3584, 18943), (100, 8192, 2047), (160, 22016, 5119), (200, 12288, 6143)]
if ARGS.quick:
    SHAPES = [(1, 4096, 4095), (16, 4096, 4095)]


def operands(M, N, K, dtype):
    if dtype == torch.int8:
        x = torch.randint(-127, 128, (M, K), device=dev, dtype=torch.int8)
        w = torch.randint(-127, 128, (N, K), device=dev, dtype=torch.int8)
    else:
        x, w = torch.randn(M, K, device=dev).to(dtype), torch.randn(N, K, device=dev).to(dtype)
    return x, w, torch.rand(M, 1, device=dev) + 0.5, torch.rand(1, N, device=dev) + 0.5


def served_error(x, w, xs, ws):
    y = gemmkit.gemm_a8w8(x, w, xs, ws).float()
    ref = (x.float() * xs) @ (w.float() * ws.t()).t()
    return ((y - ref).abs().max() / ref.abs().max()).item()


rows = []
for dtype, name in ((torch.float8_e4m3fn, "fp8"), (torch.int8, "int8")):
    for M, N, K in SHAPES:
        KA = -(-K // 16) * 16
        count = rotation_count((M + N) * K, L2)
        sets = [operands(M, N, K, dtype) for _ in range(count)]
        aligned = [operands(M, N, KA, dtype) for _ in range(count)]
        before = launcher.LAUNCHES.copy()
        err = served_error(*sets[0])
        ran = sorted(k for k, v in (launcher.LAUNCHES - before).items() if v)
        op = lambda x, w, xs, ws: gemmkit.gemm_a8w8(x, w, xs, ws)  # noqa: E731
        fns = {"served": (op, sets), "rows": (op, sets), "copy": (op, sets), "aligned": (op, aligned)}
        if name == "fp8":
            fns["vendor_aligned"] = (lambda x, w, xs, ws: torch._scaled_mm(
                x, w.t(), scale_a=xs, scale_b=ws.reshape(1, -1), out_dtype=torch.bfloat16), aligned)
        res = {}
        for _ in range(1 if ARGS.quick else 2):
            for mode, (fn, s) in fns.items():
                D.ROWS_KERNEL = mode != "copy"  # the copy: what the op served before either took 8-bit calls
                D.ROWS_TMA = mode not in ("copy", "rows")
                callplan.clear()
                try:
                    us = time_graph(fn, s, rep_ms=50) * 1e3
                    res[mode] = min(res.get(mode, us), us)
                except Exception as e:
                    res[mode] = None
                    print(name, M, N, K, mode, "failed:", str(e).splitlines()[0][:160], flush=True)
                D.ROWS_KERNEL = D.ROWS_TMA = True
        row = dict(dtype=name, M=M, N=N, K=K, kernels=ran, max_rel_err=err,
                   us={k: (round(v, 2) if v else None) for k, v in res.items()},
                   served_over_copy=round(res["copy"] / res["served"], 3) if res.get("served") else None,
                   served_over_rows=round(res["rows"] / res["served"], 3) if res.get("served") else None,
                   served_of_aligned=round(res["aligned"] / res["served"], 3) if res.get("served") else None)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if ARGS.json:  # after every row: a run cut short keeps what it measured
            write_stamped(ARGS.json, "CUDA-graph replay, inputs rotated past the L2, each mode twice (better round); "
                          "served: gemm_a8w8 as the op serves it (kernels: what the first call launched); rows: "
                          "dispatch.ROWS_TMA off (gemm_rows at M <= 16, else the copy); copy: ROWS_TMA and "
                          "ROWS_KERNEL off (x and w copied to 16-byte rows, then the TMA / Gluon kernel); aligned: "
                          "the op at K rounded up to 16; vendor_aligned: torch._scaled_mm there",
                          rows)
print(json.dumps({"wrote": ARGS.json, "rows": len(rows)}))
