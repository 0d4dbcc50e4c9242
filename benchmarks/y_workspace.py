"""y through a workspace of 16-byte rows (ops/dispatch.py `_y_workspace`, `Choice.pitch_y`) on the GPU, for the
kernels it was extended to without a timing: the Triton tier's TMA kernel (bf16 split-K tiles of the config model at
M = 17-128, on x's and w's copies where K's rows are off too; its decode tiles), the fp8 / block-scale kernels and the
gated GEMM's h. Each row: the served call (the workspace) and the same call with the workspace off (the pointer
kernel that served it before), ABBA, and the vendor in the same process; CUDA-graph replay, inputs rotated past the
L2. Controls: Gluon bf16 rows the workspace served before (measured 12-34x, docs/PERF.md).

Predicted (2026-12-05, before any run): where K's rows are off too, 3-10x (the copies beat the pointer kernel on
misaligned rows 1.5-26x at M = 16-4096, "Unaligned K"); at aligned K near the Gluon bf16 kernels' 12-34x above M = 64;
within +-10% at M <= 16 (bf16 Gluon +5-7% measured there).

    PYTHONPATH=. python3 benchmarks/y_workspace.py benchmarks/results/<gpu>/y_workspace.json"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS = ARGS.parse_args()

import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, ".")
from gemmkit import arch, callplan, configs  # noqa: E402
from gemmkit.bench import write_stamped  # noqa: E402
from gemmkit.bench.ops import BENCH_OPS  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.ops import dispatch as D  # noqa: E402

SERVED = D._y_workspace
# (bench op, dtype, M, N, K, what): N is h's columns (I) for the gated GEMM
SPLIT, DECODE, GLUON = "Triton split tile", "Triton decode tile", "control: Gluon"
SHAPES = [("a16w16", "bf16", 98, 1827, 4153, SPLIT + ", K off"), ("a16w16", "bf16", 23, 1191, 16414, SPLIT + ", K off"),
          ("a16w16", "bf16", 95, 325, 5955, SPLIT + ", K off"), ("a16w16", "bf16", 82, 114, 29008, SPLIT),
          ("a16w16", "bf16", 5, 2245, 20872, DECODE), ("a16w16", "bf16", 12, 1300, 22928, DECODE),
          ("a16w16", "bf16", 300, 3001, 3000, GLUON), ("a16w16", "bf16", 1024, 50257, 4096, GLUON),
          ("a8w8", "fp8", 300, 1001, 1000, "K off"), ("a8w8", "fp8", 507, 1773, 19536, ""),
          ("a8w8", "fp8", 3000, 5001, 7168, ""), ("a8w8", "fp8", 16, 50257, 4096, "decode"),
          ("a8w8", "fp8", 1024, 50257, 4096, ""), ("a8w8", "int8", 1024, 50257, 4096, ""),
          ("a8w8_blockscale", "fp8", 300, 1001, 1024, ""), ("a8w8_blockscale", "fp8", 2048, 7001, 7168, ""),
          ("a16w16_gated", "bf16", 300, 1001, 1024, ""), ("a16w16_gated", "bf16", 77, 1001, 2001, "K off"),
          ("a16w16_gated", "bf16", 4095, 1001, 1008, "")]


def timed(fn, sets):
    callplan.clear()
    try:
        return time_graph(fn, sets, rep_ms=40) * 1e3
    except Exception as e:  # the vendor may refuse an odd N or K
        print("   failed:", str(e).splitlines()[0][:120], flush=True)
        return None


rows = []
target = arch.current()
L2 = torch.cuda.get_device_properties(0).L2_cache_size
for name, dtype, M, N, K, what in SHAPES:
    op = BENCH_OPS[name]
    table_op = op.table_op(dtype)
    choice = D.for_shape(table_op, configs.serve(table_op, target, M, N, K)[0], target, M, N, K)
    ours, vendor = (lambda *inp: op.run(inp, None)), (lambda *inp: op.vendor(inp))
    nbytes = op.work(M, N, K, dtype)[1]
    sets = [op.make_inputs(M, N, K, dtype, "cuda") for _ in range(rotation_count(nbytes, L2))]
    res = {}
    for mode in ("on", "off", "vendor", "vendor2", "off2", "on2"):  # ABBA
        D._y_workspace = SERVED if mode.startswith("on") else (lambda *a, **k: None)
        res[mode] = timed(vendor if mode.startswith("vendor") else ours, sets)
    D._y_workspace = SERVED
    if not all(res[m] or res[m + "2"] for m in ("on", "off")):
        print(name, dtype, M, N, K, "not timed: our call failed", flush=True)
        continue
    on, off = (min(v for v in (res[m], res[m + "2"]) if v) for m in ("on", "off"))
    ven = [v for v in (res["vendor"], res["vendor2"]) if v]
    row = dict(op=name, dtype=dtype, M=M, N=N, K=K, what=what, kernel=choice.kernel, pitch_y=choice.pitch_y,
               pad_k=choice.pad_k, workspace_us=round(on, 2), without_us=round(off, 2), speedup=round(off / on, 3),
               vendor_us=round(sum(ven) / len(ven), 2) if ven else None,
               ratio_vs_vendor=round(sum(ven) / len(ven) / on, 3) if ven else None)
    rows.append(row)
    print(json.dumps(row), flush=True)

write_stamped(ARGS.json,
              "CUDA-graph replay, inputs rotated past the L2; the served call (y's workspace) and the same call "
              "with dispatch._y_workspace off (what served it before), ABBA, the better of each pair; the vendor "
              "between them (mean of two)",
              rows)
