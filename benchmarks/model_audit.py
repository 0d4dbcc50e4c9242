"""The config model against its own evidence, on a CPU: every same-process A/B on disk that timed two or more configs
of one shape (benchmarks/results/<gpu>/ab/*.json, benchmarks/ab_configs.py's rows), and what the model serves that
shape now.

    PYTHONPATH=. python3 benchmarks/model_audit.py [--gpu h200] [--since 2026-12-01] [--top 25] [--out OUT.json]
    PYTHONPATH=. python3 benchmarks/model_audit.py --rules a16w16 [--gpu h200]   # each rule of the op off in turn

Per row: whether the config served now (`configs.serve`, shape files included) is one of the configs the row timed,
and if so its regret, its time over the fastest timed config's (each config's time the mean of its runs in the row).
A row whose timed configs do not include the one served now says nothing of it (a rule changed since, or the row
timed other candidates); a row timed with a knob off (a config key starting with "_") is not the served config.

`--rules OP`: each of the op's rules (configs/model/op_rules.py OP_RULES keys) turned off in turn, over the rows where
that changes the config served and both configs were timed: the geomean of the time with the rule off over the time
with it on (above 1: the evidence is for the rule), and the rows either way by more than 2%.

What it tells: where the rules as they stand contradict a measurement (a served config that lost by more than the
noise in the same process), which shapes the next A/B should take, and how much of the evidence the model still
agrees with. What it does not: the rows were timed with the kernels and dispatch of their date (`git_sha`, `date` in
each file); a kernel or a dispatch copy (ops/dispatch.py `pad_n`, `pad_m`, `pitch`) added since runs the same config
differently, so `--since` keeps the recent ones.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os

from gemmkit import arch as _arch
from gemmkit import configs as _configs

GPUS = ("h200", "h100")
NOISE = 0.05  # regret under this is within a row's run-to-run spread at M >= 256 (docs/PERF.md "Noise")


def _op(doc: dict) -> str | None:
    """The config-table op a file's rows were served by (None: not a dense op's A/B)."""
    op, dtype = doc.get("op"), doc.get("dtype")
    if op == "a8w8" and dtype == "int8":
        return "a8w8_int8"
    return op if op in ("a16w16", "a8w8", "a8w8_blockscale", "a16w16_gated") else None


def _configs_of(row: dict):
    """A row's configs by name, a null one (what the op served) as the run recorded it (`served_configs`, where
    benchmarks/ab_configs.py wrote it; else it stays null and says nothing)."""
    cfgs = row.get("configs")
    if not isinstance(cfgs, dict):
        return cfgs
    return {**cfgs, **{k: v for k, v in row.get("served_configs", {}).items() if cfgs.get(k) is None}}


def _norm(cfg: dict) -> dict:
    return {"NUM_KSPLIT": 1, **cfg}


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def audit_rows(gpu: str, since: str = "", results: str = RESULTS):
    """[row]: one per A/B row of `gpu` (results/<gpu>/ab/*.json) that timed two or more configs, with what the model
    serves now."""
    target = _arch.get(gpu.upper())  # the card's own target: 132 SMs both, a rule may read its HBM (H100 / H200)
    out = []
    for path in sorted(glob.glob(os.path.join(results, gpu, "ab", "*.json"))):
        doc = json.load(open(path))
        op = _op(doc)
        if op is None or not isinstance(doc.get("rows"), list) or str(doc.get("date", "")) < since:
            continue
        heated = bool(doc.get("heat_ms"))
        for r in doc["rows"]:
            cfgs, ms = _configs_of(r), r.get("ms")
            if not isinstance(cfgs, dict) or not isinstance(ms, dict):
                continue
            times = {name: sum(v) / len(v) for name, v in ms.items() if isinstance(cfgs.get(name), dict) and v}
            if len(times) < 2:
                continue
            served, source = _configs.serve(op, target, r["M"], r["N"], r["K"])
            same = [name for name in times
                    if not any(k.startswith("_") for k in cfgs[name]) and _norm(cfgs[name]) == _norm(served)]
            best = min(times, key=times.get)
            row = {"file": os.path.relpath(path, results), "date": doc.get("date"), "op": op,
                   "heated": heated, "M": r["M"], "N": r["N"], "K": r["K"], "best": best,
                   "served_as": same[0] if same else None, "source": source}
            if same:
                row["regret"] = times[same[0]] / times[best] - 1
                vendor = ms.get("vendor")
                if vendor:
                    row["ratio"] = sum(vendor) / len(vendor) / times[same[0]]
                    row["best_ratio"] = sum(vendor) / len(vendor) / times[best]
            out.append(row)
    return out


def _timed_rows(gpu: str, op: str, since: str = "", results: str = RESULTS):
    """[(M, N, K, [(config, ms)])]: the A/B rows of `op` on `gpu` that timed two or more configs (no knob off)."""
    out = []
    for path in sorted(glob.glob(os.path.join(results, gpu, "ab", "*.json"))):
        doc = json.load(open(path))
        if _op(doc) != op or not isinstance(doc.get("rows"), list) or str(doc.get("date", "")) < since:
            continue
        for r in doc["rows"]:
            cfgs, ms = _configs_of(r), r.get("ms")
            if not isinstance(cfgs, dict) or not isinstance(ms, dict):
                continue
            timed = [(_norm(c), sum(ms[n]) / len(ms[n])) for n, c in cfgs.items()
                     if isinstance(c, dict) and ms.get(n) and not any(k.startswith("_") for k in c)]
            if len(timed) >= 2:
                out.append((r["M"], r["N"], r["K"], timed))
    return out


def rule_evidence(gpu: str, op: str, since: str = "", results: str = RESULTS) -> dict:
    """{rule: {"rows", "off_over_on" (geomean), "off_better", "off_worse"}} for each of `op`'s rules turned off in
    turn (OP_RULES[op][rule] = None), over the rows where that changes the served config and both were timed."""
    from gemmkit.configs import model

    target = _arch.get(gpu.upper())
    rows = _timed_rows(gpu, op, since, results)

    def time_of(cfg, timed):
        return next((ms for c, ms in timed if c == _norm(cfg)), None)

    base = [_configs.serve(op, target, M, N, K)[0] for M, N, K, _ in rows]
    rules, out = model.OP_RULES[op], {}
    for key in list(rules):
        if not rules[key]:
            continue
        pairs = []
        with _configs.rule_off(op, key):
            for (M, N, K, timed), on in zip(rows, base):
                off = _configs.serve(op, target, M, N, K)[0]
                t_on, t_off = time_of(on, timed), time_of(off, timed)
                if _norm(off) != _norm(on) and t_on is not None and t_off is not None:
                    pairs.append(t_off / t_on)
        out[key] = {"rows": len(pairs),
                    "off_over_on": math.exp(sum(map(math.log, pairs)) / len(pairs)) if pairs else None,
                    "off_better": sum(p < 1 / 1.02 for p in pairs), "off_worse": sum(p > 1.02 for p in pairs)}
    return out


def summary(rows: list) -> dict:
    timed = [r for r in rows if r["served_as"] is not None]
    regrets = [r["regret"] for r in timed]
    return {"rows": len(rows), "served_config_timed": len(timed),
            "geomean_regret": (math.exp(sum(math.log1p(g) for g in regrets) / len(regrets)) - 1) if regrets else None,
            "over_noise": sum(g > NOISE for g in regrets), "over_10pct": sum(g > 0.10 for g in regrets)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", choices=GPUS, default="h200")
    ap.add_argument("--since", default="", help="only files dated on or after this (YYYY-MM-DD)")
    ap.add_argument("--top", type=int, default=25, help="the worst rows to print")
    ap.add_argument("--out", help="write the summary and every row the served config lost by over NOISE")
    ap.add_argument("--rules", metavar="OP", help="each of OP's rules off in turn, against the rows that time both")
    args = ap.parse_args(argv)
    if args.rules:
        for key, e in rule_evidence(args.gpu, args.rules, args.since).items():
            said = (f"{e['rows']:4d} rows, off / on {e['off_over_on']:.3f}, off better on {e['off_better']}, worse on "
                    f"{e['off_worse']}") if e["rows"] else "no row times both"
            print(f"{key:18s} {said}")
        return
    rows = audit_rows(args.gpu, args.since)
    s = summary(rows)
    print(json.dumps(s))
    worst = sorted((r for r in rows if r.get("regret", 0) > NOISE), key=lambda r: -r["regret"])
    for r in worst[:args.top]:
        print(f"{r['regret']:+.1%}  {r['M']} x {r['N']} x {r['K']}  served as {r['served_as']!r}, best {r['best']!r}"
              f"{' (heated)' if r['heated'] else ''}  {r['file']} {r['date']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"gpu": args.gpu, "since": args.since, "noise": NOISE, "summary": s, "lost": worst}, f, indent=1)


if __name__ == "__main__":
    main()
