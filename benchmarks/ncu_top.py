"""Summarize `ncu -i REPORT --page source --csv --print-source sass` (stdin): the SASS instructions with the most
warp-stall samples, and the samples summed per stall-reason column. Usage: ... | python3 benchmarks/ncu_top.py [N]"""
import argparse
import csv
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", nargs="?", type=int, default=40, help="how many instructions to list (default 40)")
    n = ap.parse_args().n
    rows = list(csv.reader(sys.stdin))
    head = next((i for i, r in enumerate(rows) if any("Source" in c for c in r)), None)
    if head is None:
        print("no header with 'Source' found; first lines:", rows[:3])
        return
    cols, body = rows[head], [r for r in rows[head + 1:] if len(r) == len(rows[head])]
    print("columns:", " | ".join(cols))

    def num(v):
        try:
            return float(v.replace(",", ""))
        except ValueError:
            return 0.0

    allc = next((i for i, c in enumerate(cols) if "Warp Stall Sampling (All" in c), None)
    src = next(i for i, c in enumerate(cols) if c.strip() == "Source" or "Source" in c)
    addr = next((i for i, c in enumerate(cols) if "Address" in c), None)
    if allc is None:
        print("no 'Warp Stall Sampling (All Samples)' column")
        return
    total = sum(num(r[allc]) for r in body) or 1.0
    print(f"total samples {total:.0f}, {len(body)} instructions")
    for r in sorted(body, key=lambda r: -num(r[allc]))[:n]:
        print(f"{num(r[allc]) / total * 100:6.2f}%  {r[addr] if addr is not None else '':>8}  {r[src][:110]}")
    # stall-reason columns (numeric columns whose name mentions stall), summed
    sums = {}
    for i, c in enumerate(cols):
        if "stall" in c.lower() and i != allc:
            v = sum(num(r[i]) for r in body)
            if v:
                sums[c] = v
    for c, v in sorted(sums.items(), key=lambda kv: -kv[1])[:25]:
        print(f"  {c}: {v:.0f}")


if __name__ == "__main__":
    main()
