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


def load_models():
    """The model table shared by bench and tune: {name: {"layers": {layer: (N, K)}, ...}}, M values."""
    import json
    from pathlib import Path

    raw = json.loads((Path(__file__).with_name("model_configs.json")).read_text())
    models = {name: {**m, "layers": {k: tuple(v) for k, v in m["layers"].items()}} for name, m in raw["models"].items()}
    return models, raw["m_values"]


def model_suite(names, m_values=None):
    """(label, M, N, K) for every layer of the named models ('all' for every model) at every M."""
    models, default_m = load_models()
    names = list(models) if names in ("all", ["all"]) else ([names] if isinstance(names, str) else list(names))
    rows, seen = [], set()
    for name in names:
        if name not in models:
            raise ValueError(f"--model: unknown model {name!r}; expected one of {sorted(models)} or 'all'")
        for layer, (n, k) in models[name]["layers"].items():
            for m in (m_values or default_m):
                if (m, n, k) not in seen:  # a shape shared by two models is run once
                    seen.add((m, n, k))
                    rows.append((f"{name} {layer}", m, n, k))
    return rows


RANDOM_SEED = 20261128  # `gemmkit bench --random`'s default seed (benchmarks/results/<gpu>/<op>_random.json's)


def random_suite(count: int, seed: int = RANDOM_SEED, align: int = 8):
    """(label, M, N, K) of `count` seeded random shapes no table, rule or suite was fitted on (`gemmkit bench
    --random`): M log-uniform in [1, 8192] (decode to prefill); N and K log-uniform in [256, 32768], each rounded
    down to a multiple of 128 (60%), 16 (30%) or 8 (10%: 16-bit rows off 32-byte sectors, 8-bit rows off TMA's 16
    bytes), at least `align` (16 for 8-bit operands: their vendors refuse K or N % 16 != 0); at most 2**38
    multiply-adds and 2**29 weight elements a shape. The same seed gives the same shapes (a longer list extends a shorter one), so two
    revisions can be compared on them; another seed gives shapes nobody has seen."""
    import math
    import random

    rng = random.Random(seed)
    rows = []
    while len(rows) < count:
        M = max(1, int(round(math.exp(rng.uniform(0, math.log(8192))))))
        N, K = (int(math.exp(rng.uniform(math.log(256), math.log(32768)))) for _ in range(2))
        r = rng.random()
        a = max(align, 128 if r < 0.6 else 16 if r < 0.9 else 8)
        N, K = max(a, N // a * a), max(a, K // a * a)
        if M * N * K <= 2 ** 38 and N * K <= 2 ** 29:
            rows.append((f"random {seed}", M, N, K))
    return rows


def parse_shape(text: str):
    parts = [int(p) for p in text.lower().replace("x", ",").split(",") if p]
    if len(parts) != 3:
        raise ValueError(f"--shape: expected M,N,K (or MxNxK), got {text!r}")
    return ("custom", *parts)
