"""Unaligned K on the GPU: gemm_a16w16 / gemm_a8w8 / batched_gemm_a16w16 where x's and w's rows are not 16-byte
multiples, with the copy to 16-byte rows (ops/dispatch.py `_padded`, `_batched_copies`; kernels/triton/pad.py) and
without it (the Triton pointer kernel), against the vendor (torch.matmul / _scaled_mm / bmm) in the same process; CUDA-graph replay, inputs rotated past the L2, each mode twice, the better round kept;
aligned 4096^3 control rows (both modes do the same there: the noise floor).

    PYTHONPATH=. python3 benchmarks/unaligned_k.py benchmarks/results/<gpu>/unaligned_k.json"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS = ARGS.parse_args()

import json
import sys

import torch

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit import callplan  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.ops import dispatch as D  # noqa: E402

NO_COPY = D._padded

dev = "cuda"
L2 = torch.cuda.get_device_properties(0).L2_cache_size
rows = []
SHAPES = [("bf16", M, 4096, 4095) for M in (16, 32, 64, 128, 256, 1024, 4096)] + \
    [("bf16", M, 5000, 7001) for M in (64, 3000)] + [("bf16", 4096, 4096, 4096)] + \
    [("fp8", M, 5000, 7000) for M in (32, 64, 128, 3000)] + [("fp8", 4096, 4096, 4095), ("fp8", 4096, 4096, 4096)] + \
    [("bf16x8", 1024, 1024, 1025), ("bf16x32", 128, 128, 1001), ("bf16x64", 512, 512, 511), ("bf16x8", 1024, 1024, 1024)]
for dt, M, N, K in SHAPES:
    if "x" in dt:  # batched: B entries of (M, N, K)
        B = int(dt.split("x")[1])

        def make():
            return (torch.randn(B, M, K, device=dev, dtype=torch.bfloat16),
                    torch.randn(B, N, K, device=dev, dtype=torch.bfloat16))
        ours = lambda x, w: gemmkit.batched_gemm_a16w16(x, w)  # noqa: E731
        vendor = lambda x, w: torch.bmm(x, w.transpose(1, 2))  # noqa: E731
        nbytes = B * (M + N) * K * 2
    elif dt == "bf16":
        def make():
            return (torch.randn(M, K, device=dev, dtype=torch.bfloat16), torch.randn(N, K, device=dev, dtype=torch.bfloat16))
        ours = lambda x, w: gemmkit.gemm_a16w16(x, w)  # noqa: E731
        vendor = lambda x, w: torch.matmul(x, w.t())  # noqa: E731
        nbytes = (M + N) * K * 2
    else:
        def make():
            x = torch.randn(M, K, device=dev).to(torch.float8_e4m3fn)
            w = torch.randn(N, K, device=dev).to(torch.float8_e4m3fn)
            return (x, w, torch.rand(M, 1, device=dev) + 0.5, torch.rand(1, N, device=dev) + 0.5)
        ours = lambda x, w, xs, ws: gemmkit.gemm_a8w8(x, w, xs, ws)  # noqa: E731
        vendor = lambda x, w, xs, ws: torch._scaled_mm(x, w.t(), scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)  # noqa: E731
        nbytes = (M + N) * K
    sets = [make() for _ in range(rotation_count(nbytes, L2))]
    res = {}
    for mode in ("pad", "nopad", "vendor", "pad2", "nopad2"):
        D._padded = NO_COPY if mode.startswith("pad") else (lambda *a: None)  # the copy where it applies, or never
        D.BATCHED_COPIES = mode.startswith("pad")
        D.ROWS_KERNEL = D.ROWS_TMA = False  # (the copy against the pointer kernel: rows_tma.py times the rows kernels)
        callplan.clear()
        fn = vendor if mode == "vendor" else ours
        try:
            res[mode] = time_graph(fn, sets) * 1e3
        except Exception as e:  # the vendor may not take an odd K
            res[mode] = None
            print(dt, M, N, K, mode, "failed:", str(e).splitlines()[0][:120])
    pad = min(v for v in (res["pad"], res["pad2"]) if v)
    nopad = min(v for v in (res["nopad"], res["nopad2"]) if v)
    fl = 2 * M * N * K * (int(dt.split("x")[1]) if "x" in dt else 1)
    row = dict(dtype=dt, M=M, N=N, K=K, pad_us=round(pad, 2), nopad_us=round(nopad, 2),
               vendor_us=round(res["vendor"], 2) if res["vendor"] else None,
               pad_tflops=round(fl / pad / 1e6, 1), nopad_tflops=round(fl / nopad / 1e6, 1),
               speedup=round(nopad / pad, 3), ratio_vs_vendor=round(res["vendor"] / pad, 3) if res["vendor"] else None)
    rows.append(row)
    print(json.dumps(row), flush=True)
from gemmkit.bench import stamp  # noqa: E402

out = {**stamp(),
       "method": "CUDA-graph replay, inputs rotated past the L2, each mode twice (better round); pad_us: the copy "
                 "to 16-byte rows + the TMA / Gluon kernel, nopad_us: the Triton pointer kernel",
       "rows": rows}
if ARGS.json:
    with open(ARGS.json, "w") as f:
        json.dump(out, f, indent=1)
