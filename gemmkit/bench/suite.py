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


def parse_shape(text: str):
    parts = [int(p) for p in text.lower().replace("x", ",").split(",") if p]
    if len(parts) != 3:
        raise ValueError(f"--shape: expected M,N,K (or MxNxK), got {text!r}")
    return ("custom", *parts)
