"""Design promises as data, checked against compiled code.

A kernel module declares `PROMISES`: a tuple of dicts
    {"promise": what it says, "check": expression, "when": expression (optional),
     "arch": "sm_90" | "amd" | an arch name (optional; default every target)}
Expressions are Python over the names of one report row (`spill_bytes`,
`lds_bytes`, `occupancy`, `counts[...]`, `mma_k_steps`, `smem_bound`, ...),
`cfg` (the kernel's config) and `target` (gemmkit.arch.Target). A promise that
does not hold reports its text, its check, and the values the check read.
"""
from __future__ import annotations

import re

_SAFE = {"min": min, "max": max, "abs": abs, "int": int, "len": len, "sum": sum}


def applies(p: dict, target) -> bool:
    arch = p.get("arch")
    return arch is None or arch == target.arch or (arch == "amd" and target.is_amd) or \
        (arch == "nvidia" and target.is_nvidia)


def evaluate(promises, row: dict, cfg: dict, target) -> list:
    """[{promise, check, ok, detail}] for the promises that apply to this row."""
    ns = dict(_SAFE, **row, cfg=cfg, target=target)
    out = []
    for p in promises:
        if not applies(p, target):
            continue
        if "when" in p and not eval(p["when"], {"__builtins__": {}}, ns):  # noqa: S307 (our own expressions)
            continue
        try:
            ok = bool(eval(p["check"], {"__builtins__": {}}, ns))  # noqa: S307
        except Exception as e:  # a check that cannot be evaluated is a broken promise
            ok, err = False, f"{type(e).__name__}: {e}"
        else:
            err = ""
        names = sorted(set(re.findall(r"[A-Za-z_]\w*(?:\['\w+'\])?", p["check"])) - {"and", "or", "not", "cfg", "target"})
        values = {}
        for n in names:
            try:
                values[n] = eval(n, {"__builtins__": {}}, ns)  # noqa: S307
            except Exception:
                pass
        out.append({"promise": p["promise"], "check": p["check"], "ok": ok,
                    "detail": err or ", ".join(f"{k}={v}" for k, v in values.items() if not callable(v))})
    return out
