"""Benchmark shapes: one home for the suites that bench (and later tune) use."""
from __future__ import annotations

# Llama-3-70B linear layers as (N, K): fused QKV, attention output, fused gate+up, down.
LLAMA3_70B = [(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
LLAMA3_70B_M = [1, 16, 128, 1024, 8192]
SQUARES = [2048, 4096, 8192, 16384]


def default_suite():
    """(label, M, N, K) rows of the built-in `gemmkit bench` suite."""
    rows = [(f"square {s}", s, s, s) for s in SQUARES]
    for n, k in LLAMA3_70B:
        for m in LLAMA3_70B_M:
            rows.append((f"llama3-70b N={n} K={k}", m, n, k))
    return rows


def parse_shape(text: str):
    parts = [int(p) for p in text.lower().replace("x", ",").split(",") if p]
    if len(parts) != 3:
        raise ValueError(f"--shape: expected M,N,K (or MxNxK), got {text!r}")
    return ("custom", *parts)
