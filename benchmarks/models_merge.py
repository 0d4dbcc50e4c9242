"""Issue 32's result file of one op from its parts: `python benchmarks/models_merge.py OUT.json PART.json ... [--plot P]`.

The parts are `gemmkit bench --cuda-graph --roofline --json` files of the same op (run_gpu.sh's `models` stage writes
models/OP_small.json and models/OP_large.json, one process each: a process's peaks are measured in it). OUT holds:
  - the stamps of the first part (device, versions; date, git sha and method joined where the parts differ) and each
    part's own (`parts`: file, git sha, date, SM clock at its start, roofline peaks, method);
  - one row per (layer, M) and odd size: label, M, N, K, ms, ref_ms, ratio, efficiency, ref_efficiency, tuned (a shape
    table served it), plus the config's source and backend, both sides' relative error against fp32, ref_error (why the
    vendor has no time, e.g. a K it refuses), settle_ms (gemmkit's timing before the ABBA runs, not kept) and `part`
    (whose peaks its floor used);
  - `summary`: over all rows and over rows with tuned false: rows, geomean ratio, rows under 0.90, the worst row, and
    the geomean / minimum efficiency of both sides.
--plot: ratio and efficiency against M, every row, tuned and untuned marked.
"""
import argparse
import json
import math

KEEP = ("label", "M", "N", "K", "ms", "ref_ms", "ratio", "efficiency", "ref_efficiency", "floor_ms", "tuned",
        "config_source", "backend", "rel_err_vs_fp32", "ref_rel_err_vs_fp32", "ref_error", "settle_ms")


def _geo(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def summarize(rows):
    timed = [r for r in rows if r.get("ratio")]
    if not timed:
        return {"rows": len(rows), "timed": 0}
    worst = min(timed, key=lambda r: r["ratio"])
    eff = [r["efficiency"] for r in rows if r.get("efficiency")]
    ref_eff = [r["ref_efficiency"] for r in rows if r.get("ref_efficiency")]
    return {"rows": len(rows), "timed": len(timed), "geomean_ratio": _geo([r["ratio"] for r in timed]),
            "rows_under_0.90": sum(r["ratio"] < 0.90 for r in timed),
            "worst": {k: worst[k] for k in ("label", "M", "N", "K", "ratio")},
            "efficiency_geomean": _geo(eff), "efficiency_min": min(eff) if eff else None,
            "rows_efficiency_under_0.60": sum(e < 0.60 for e in eff),
            "ref_efficiency_geomean": _geo(ref_eff), "ref_efficiency_min": min(ref_eff) if ref_eff else None}


def merge(paths):
    parts = [json.load(open(p)) for p in paths]
    ops = {(p["op"], p["dtype"]) for p in parts}
    if len(ops) != 1:
        raise SystemExit(f"models_merge: the parts hold different ops {sorted(ops)}")
    head = {k: parts[0][k] for k in ("device", "arch", "num_sms", "torch", "triton", "cuda", "date", "git_sha", "op",
                                     "dtype", "shape_doc", "method") if k in parts[0]}
    rows, seen = [], set()
    for i, p in enumerate(parts):
        for r in p["rows"]:
            key = (r["label"], r["M"], r["N"], r["K"])
            if key in seen:
                continue
            seen.add(key)
            rows.append({**{k: r.get(k) for k in KEEP}, "part": i})
    rows.sort(key=lambda r: (r["label"] == "custom", r["label"], r["N"], r["K"], r["M"]))
    for key in ("git_sha", "date", "method"):  # parts run at different revisions or days: each part's in `parts`
        values = list(dict.fromkeys(str(p.get(key)) for p in parts))
        if len(values) > 1:
            head[key] = " + ".join(values) if key != "method" else "per part (parts[i].method)"
    out = {**head, "parts": [{"file": path, "git_sha": p.get("git_sha"), "date": p.get("date"),
                              "sm_clock_mhz": p.get("sm_clock_mhz"), "roofline": p.get("roofline"),
                              "method": p.get("method")} for path, p in zip(paths, parts)],
           "summary": {"all": summarize(rows), "tuned_false": summarize([r for r in rows if not r["tuned"]])},
           "rows": rows}
    return out


def plot(result, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    for tuned, color in ((True, "tab:blue"), (False, "tab:orange")):
        rs = [r for r in result["rows"] if bool(r["tuned"]) == tuned]
        a.scatter([r["M"] for r in rs if r["ratio"]], [r["ratio"] for r in rs if r["ratio"]], s=9, c=color,
                  label=f"{'tuned' if tuned else 'no table'} ({len(rs)})")
        b.scatter([r["M"] for r in rs if r["efficiency"]], [r["efficiency"] for r in rs if r["efficiency"]], s=9,
                  c=color)
    b.scatter([r["M"] for r in result["rows"] if r["ref_efficiency"]],
              [r["ref_efficiency"] for r in result["rows"] if r["ref_efficiency"]], s=5, c="gray", marker="x",
              label="vendor")
    for ax, title, line in ((a, "vendor time / gemmkit time", 0.9), (b, "roofline efficiency (floor / time)", 0.6)):
        if ax.collections and any(len(c.get_offsets()) for c in ax.collections):
            ax.set_xscale("log", base=2)
        ax.axhline(line, color="red", lw=0.8, ls="--")
        ax.set_xlabel("M")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    a.axhline(1.0, color="black", lw=0.6)
    a.legend(fontsize=8)
    b.legend(fontsize=8)
    s = result["summary"]["all"]
    fig.suptitle(f"{result['op']} {result['dtype']} on {result['device']} ({result['date']}, {result['git_sha']}): "
                 f"geomean {s['geomean_ratio']:.3f}, {s['rows_under_0.90']} of {s['timed']} rows < 0.90")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("parts", nargs="+")
    ap.add_argument("--plot")
    args = ap.parse_args()
    res = merge(args.parts)
    json.dump(res, open(args.out, "w"), indent=1)
    for name, s in res["summary"].items():
        print(name, json.dumps(s))
    if args.plot:
        plot(res, args.plot)
