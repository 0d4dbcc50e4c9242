"""Timing on the GPU: one method for gemmkit and the vendor library, in the same process.

- `triton.testing.do_bench`, median; it warms up first and clears the L2 before every timed call.
- Inputs rotated over several copies when one set is smaller than ~4x the L2, so no call
  finds its operands in cache (seed 000's measurement method).
"""
from __future__ import annotations

import itertools


ROTATION_CAP = 8  # the most input sets a timed graph holds (a small call's graph: 8 calls, its launch spread over them)


def rotation_count(bytes_per_set: int, l2_bytes: int, cap: int = ROTATION_CAP) -> int:
    if bytes_per_set <= 0:
        return 1
    return max(1, min(cap, -(-4 * l2_bytes // bytes_per_set)))


def time_rotated(fn, input_sets, warmup_ms=25, rep_ms=100) -> float:
    """Median milliseconds of fn(*inputs), cycling through input_sets call by call."""
    from triton.testing import do_bench

    cycle = itertools.cycle(input_sets)

    def call():
        return fn(*next(cycle))

    return do_bench(call, warmup=warmup_ms, rep=rep_ms, return_mode="median")


_CAPTURE_STREAMS: dict = {}  # device index -> the stream capture_graph captures on


def capture_graph(fn, input_sets):
    """One CUDA graph holding one fn(*inputs) call per input set (compiled and warmed up outside the capture), on
    the current device. The tuning cache (tune/online.py) captures inside a user's process: on a stream of this
    module's own for the current device (torch's default capture stream belongs to the device current at the
    process's first capture, and to any capture of the user's), in thread-local error mode (other threads may call
    into CUDA meanwhile; allocations there would fail a global-mode capture)."""
    import torch

    for args in input_sets:
        fn(*args)
    torch.cuda.synchronize()
    device = torch.cuda.current_device()
    if device not in _CAPTURE_STREAMS:
        _CAPTURE_STREAMS[device] = torch.cuda.Stream(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=_CAPTURE_STREAMS[device], capture_error_mode="thread_local"):
        for args in input_sets:
            fn(*args)
    torch.cuda.synchronize()
    return graph


def time_graph(fn, input_sets, warmup_ms=25, rep_ms=100) -> float:
    """Median milliseconds per fn(*inputs) call, replayed from one CUDA graph that holds one
    call per input set (launch overhead out of the number; inputs still rotated)."""
    from triton.testing import do_bench

    graph = capture_graph(fn, input_sets)
    return do_bench(graph.replay, warmup=warmup_ms, rep=rep_ms, return_mode="median") / len(input_sets)
