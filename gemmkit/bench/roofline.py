"""`gemmkit bench --roofline`: each row's floor from peaks measured in the same run, and the efficiency of gemmkit
and the vendor against it.

    measure(bop, dtype, device)  ─► Peaks: dense TF/s (the faster of gemmkit and the vendor on a square GEMM of the
                                    op and dtype), read GB/s (a streaming read of READ_BYTES), minimum kernel time
                                    (one tiny kernel, a graph of timing.ROTATION_CAP calls as a small row's), each
                                    timed by the bench's own method (time_graph)
    floor_ms(flops, nbytes, p)   ─► max(flops / dense, bytes / read, minimum kernel time)
    efficiency = floor / measured time (1.0: at the floor; a row can read a little over 1 where a kernel beats the
    square's peak or the streaming read)

Why measured and not the data sheet: clocks under a power cap, HBM's achievable share and the launch floor differ
per card and driver; a floor from the same run, same harness, is what a row can be held to.

Constraints: a CUDA GPU; the square and the read buffer (READ_BYTES) must fit next to the rows' inputs; the square
is timed with one input set (it exceeds the L2 by itself: 3 x 8192^2 elements).
"""
from __future__ import annotations

import dataclasses

import triton
import triton.language as tl

SQUARE = 8192  # M = N = K of the peak's GEMM
READ_BYTES = 1 << 30  # the streaming read's buffer (>= 20x any Hopper / CDNA L2)


@dataclasses.dataclass(frozen=True)
class Peaks:
    dense_tflops: float  # the faster of gemmkit and the vendor on SQUARE^3
    dense_source: str  # which one
    read_gbps: float  # READ_BYTES / the streaming read's time
    min_ms: float  # one tiny kernel, CUDA-graph replay of ROTATION_CAP calls, per call

    def floor_ms(self, flops: float, nbytes: float) -> float:
        return floor_ms(flops, nbytes, self)


def floor_ms(flops: float, nbytes: float, peaks: Peaks) -> float:
    """The shortest time a call can take on this GPU: compute at the dense peak, the bytes at the read bandwidth,
    and no less than one kernel (milliseconds)."""
    return max(flops / (peaks.dense_tflops * 1e9), nbytes / (peaks.read_gbps * 1e6), peaks.min_ms)


@triton.jit
def stream_read(src, out, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """Program p sums src[p * CHUNK : (p + 1) * CHUNK] (bf16 as fp32) into out[p]: loads only (also
    benchmarks/read_floor.py's read)."""
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * CHUNK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in tl.range(0, CHUNK, BLOCK):
        offs = base + i + tl.arange(0, BLOCK)
        acc += tl.load(src + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out + pid, tl.sum(acc, 0))


@triton.jit
def one_store(out):
    """The smallest kernel: one program, one store (the minimum kernel time)."""
    tl.store(out, 1.0)


# (CHUNK elements a program, BLOCK a load step, num_warps): the best of benchmarks/read_floor.py's settings on the
# H200 (2026-11-22: 3.6-4.3 TB/s on 117-940 MB) and two neighbours
READ_SETTINGS = [(4096, 512, 4), (4096, 1024, 4), (8192, 1024, 4)]


def measure(bop, dtype_name: str, device, warmup_ms: int = 25, rep_ms: int = 100, batch: int = 1) -> Peaks:
    """The three peaks for `bop` (gemmkit.bench.ops) in `dtype_name` on `device`, timed with time_graph."""
    import torch

    from .. import launcher
    from .timing import ROTATION_CAP, time_graph

    # dense: a square GEMM of this op, both sides, the faster one
    S = SQUARE
    flops, _ = bop.work(S, S, S, dtype_name, batch)
    sq = [bop.make_inputs(S, S, S, dtype_name, device, batch)]
    ms_gemmkit = time_graph(lambda *inp: bop.run(inp, None), sq, warmup_ms, rep_ms)
    try:
        ms_vendor = time_graph(lambda *inp: bop.vendor(inp), sq, warmup_ms, rep_ms)
    except Exception:  # noqa: BLE001  (a vendor that refuses the square: gemmkit's alone)
        ms_vendor = float("inf")
    best, source = (ms_gemmkit, "gemmkit") if ms_gemmkit <= ms_vendor else (ms_vendor, "vendor")
    del sq
    # read: the fastest of a few streaming-read settings over READ_BYTES
    n = READ_BYTES // 2
    src = torch.ones(n, dtype=torch.bfloat16, device=device)
    read_ms = float("inf")
    for chunk, block, warps in READ_SETTINGS:
        out = torch.empty(-(-n // chunk), dtype=torch.float32, device=device)
        grid = (out.numel(),)

        def read(s, o=out, c=chunk, b=block, w=warps):
            launcher.launch(stream_read, grid, s, o, n, CHUNK=c, BLOCK=b, num_warps=w)

        ms = time_graph(read, [(src,)], warmup_ms, rep_ms)
        if abs(out.sum().item() - n) > 1e-3 * n:  # every element read once (ones: the sum is n)
            raise RuntimeError(f"roofline: the streaming read (chunk {chunk}) summed {out.sum().item()}, not {n}")
        read_ms = min(read_ms, ms)
    del src
    # the minimum kernel time: one program storing one value, timed as a small row is (a graph of ROTATION_CAP calls:
    # the graph's own launch spread over them; a graph of one call adds it whole)
    flag = torch.zeros(1, dtype=torch.float32, device=device)
    min_ms = time_graph(lambda t: launcher.launch(one_store, (1,), t), [(flag,)] * ROTATION_CAP, warmup_ms, rep_ms)
    torch.cuda.empty_cache()
    return Peaks(dense_tflops=flops / best / 1e9, dense_source=source, read_gbps=READ_BYTES / read_ms / 1e6,
                 min_ms=min_ms)
