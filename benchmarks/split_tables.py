"""Merge the winners of a same-process sweep (benchmarks/sweep_batched.py with a SERVED candidate) into the
sm_90 shape tables: a shape's M_GEQ_<M> bucket takes the best candidate where it beat the served config by
> MIN_GAIN on its median ratio *and* its slowest pass beat the served config's fastest (every pass, both
orders: the clock drift of one pass cannot decide it). A bucket serves M up to the next bucket: the sweep
rows are the M the issue lists (256 ... 4096), the same M the tuner writes buckets for.

Usage (repo root, no GPU): python benchmarks/split_tables.py SWEEP.json [--op a16w16] [--dry-run]
Prints one line per shape (kept / switched, the two ratios) and writes the decisions beside SWEEP.json
(<stem>_decisions.json).
"""
import argparse
import json
from pathlib import Path

MIN_GAIN = 0.02


def decide(rows):
    """{(M, N, K): (served row, best row, switch?)} from a sweep's rows."""
    by = {}
    for r in rows:
        if "ratio" in r:
            by.setdefault((r["M"], r["N"], r["K"]), []).append(r)
    out = {}
    for key, rs in by.items():
        served = next((r for r in rs if r["config"].get("_served")), None)
        if served is None:
            continue
        best = max((r for r in rs if not r["config"].get("_served")), key=lambda r: r["ratio"], default=None)
        switch = (best is not None and best["ratio"] > served["ratio"] * (1 + MIN_GAIN)
                  and min(best["ratios"]) > max(served["ratios"]))
        out[key] = (served, best, switch)
    return out


def main():
    from gemmkit import configs

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep")
    ap.add_argument("--op", default="a16w16")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    rows = json.loads(Path(args.sweep).read_text())["rows"]
    decisions = []
    for (M, N, K), (served, best, switch) in sorted(decide(rows).items()):
        cfg = {k: v for k, v in best["config"].items() if not k.startswith("_")} if best else None
        print(f"{M:5d} x {N:6d} x {K:5d}  served {served['ratio']:.3f}  best {best['ratio'] if best else 0:.3f}  "
              f"{'SWITCH ' + json.dumps(cfg) if switch else 'kept'}")
        decisions.append({"M": M, "N": N, "K": K, "served": served["config"], "served_ratios": served["ratios"],
                          "best": cfg, "best_ratios": best["ratios"] if best else None, "switch": switch})
        if switch and not args.dry_run:
            path = configs.table_path(args.op, args.arch, N, K)
            table = json.loads(path.read_text()) if path.exists() else {}
            table[f"M_GEQ_{M}"] = {k: v for k, v in cfg.items() if configs.DEFAULTS.get(k, object()) != v}
            order = sorted(table, key=lambda k: -int(k.split("_")[-1]) if k != "any" else 1)
            path.write_text(json.dumps({k: table[k] for k in order}, indent=1) + "\n")
    configs.clear_cache()
    for p in configs.shipped_tables(args.op):
        configs.load_table(str(p))  # every table still validates
    out = Path(args.sweep).with_name(Path(args.sweep).stem + "_decisions.json")
    out.write_text(json.dumps(decisions, indent=1) + "\n")
    print(f"{sum(d['switch'] for d in decisions)} of {len(decisions)} shapes switched; decisions in {out}")


if __name__ == "__main__":
    main()
