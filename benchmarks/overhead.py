"""Host overhead per call (microseconds), measured as wall time of many back-to-back calls on a
tiny problem whose GPU time is negligible. Usage: PYTHONPATH=. python benchmarks/overhead.py"""
import time

import torch

import gemmkit
from gemmkit.ops import gemm_a16w16 as op


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
    rows = {
        "torch.matmul(x, w.T)": lambda: torch.matmul(x, w.T),
        "gemmkit.gemm_a16w16 (eager path)": lambda: gemmkit.gemm_a16w16(x, w),
        "gemmkit.gemm_a16w16(out=)": lambda: gemmkit.gemm_a16w16(x, w, out=out),
        "torch.ops.gemmkit.gemm_a16w16": lambda: torch.ops.gemmkit.gemm_a16w16(x, w, None, "none", torch.bfloat16, ""),
        "op._run (no validation)": lambda: op._run(x, w, None, "none", torch.bfloat16, "", out),
    }
    for name, fn in rows.items():
        print(f"{name:36s} {per_call_us(fn):7.1f} us/call")


if __name__ == "__main__":
    main()
