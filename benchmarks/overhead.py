"""Host overhead per call (microseconds): wall time of many back-to-back calls on a tiny
problem whose GPU time is negligible, then a cProfile of the eager path.
Usage: PYTHONPATH=. python benchmarks/overhead.py"""
import cProfile
import pstats
import time

import torch

import gemmkit


def per_call_us(fn, n=3000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def main():
    x = torch.randn(1, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(1, 256, device="cuda", dtype=torch.bfloat16)
    ptr_cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 1,
               "num_warps": 4, "num_stages": 3}
    rows = {
        "torch.matmul(x, w.T)": lambda: torch.matmul(x, w.T),
        "gemmkit.gemm_a16w16 (eager path)": lambda: gemmkit.gemm_a16w16(x, w),
        "gemmkit.gemm_a16w16(out=)": lambda: gemmkit.gemm_a16w16(x, w, out=out),
        "gemmkit.gemm_a16w16(config=pointer)": lambda: gemmkit.gemm_a16w16(x, w, config=ptr_cfg),
        "torch.ops.gemmkit.gemm_a16w16": lambda: torch.ops.gemmkit.gemm_a16w16(x, w, None, "none", torch.bfloat16, ""),
    }
    for name, fn in rows.items():
        print(f"{name:40s} {per_call_us(fn):7.1f} us/call")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        gemmkit.gemm_a16w16(x, w)
    prof.disable()
    torch.cuda.synchronize()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
