"""Where a call's time goes: each kernel's device time per call of gemm_a16w16 (or an aligned neighbour), from
torch.profiler over CUDA-graph replays (inputs rotated past the L2), and the call's span (first kernel's start to the
last one's end). For paths of several launches, e.g. the unaligned K's gemm_rows_tma (x's shifted copies, the kernel,
the ordering reduce: docs/PERF.md "Unaligned K").

    PYTHONPATH=. python3 benchmarks/kernel_breakdown.py [OUT.json] [--shapes 17x4096x4095,64x4096x4096 ...]"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS.add_argument("--shapes", default="2x4096x4095,16x4096x4095,17x4096x4095,64x4096x4095,128x4096x4095,"
                  "200x12288x6143,16x4096x4096,64x4096x4096,128x4096x4096,200x12288x6144",
                  help="MxNxK, comma-separated (bf16)")
ARGS.add_argument("--replays", type=int, default=20, help="graph replays profiled a shape")
ARGS = ARGS.parse_args()

import collections  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit.bench import write_stamped  # noqa: E402
from gemmkit.bench.timing import capture_graph, rotation_count  # noqa: E402

L2 = torch.cuda.get_device_properties(0).L2_cache_size
rows = []
for shape in ARGS.shapes.split(","):
    M, N, K = map(int, shape.lower().split("x"))
    sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
             torch.randn(N, K, device="cuda", dtype=torch.bfloat16))
            for _ in range(rotation_count((M + N) * K * 2, L2))]
    graph = capture_graph(lambda x, w: gemmkit.gemm_a16w16(x, w), sets)
    for _ in range(20):  # warm: clocks, caches
        graph.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ARGS.replays):
            graph.replay()
        torch.cuda.synchronize()
    calls = ARGS.replays * len(sets)
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per_kernel = collections.defaultdict(float)
    for e in events:
        per_kernel[e.name] += e.device_time / calls
    span = (max(e.time_range.end for e in events) - min(e.time_range.start for e in events)) / calls
    row = dict(M=M, N=N, K=K, per_call_us=round(span, 2),
               kernels_us={k: round(v, 2) for k, v in sorted(per_kernel.items(), key=lambda kv: -kv[1])})
    rows.append(row)
    print(row, flush=True)
write_stamped(ARGS.json, "torch.profiler device time per kernel per call over CUDA-graph replays (one call per input "
              "set, inputs rotated past the L2); per_call_us: first kernel start to last kernel end / calls", rows)
