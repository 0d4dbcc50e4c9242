"""The shapes a config-model rule changes, as a held-out A/B input, on a CPU: every shape of `gemmkit bench --random`'s
seeds [FIRST, LAST) (gemmkit/bench/suite.py `random_suite`, COUNT shapes a seed) whose served config on a card changes
when one of the op's rule keys (configs/model/op_rules.py OP_RULES) is turned off.

    PYTHONPATH=. python3 benchmarks/rule_shapes.py a16w16 coop_widths_area 20262300 20263000 AB.json [--card H100]

AB.json is benchmarks/ab_configs.py's input: per shape "before" (the config served with the key off, as an A/B's
before side is written) and "served" (null: what the tree serves, the rule on). Seeds nobody fitted on make it a
held-out set; the share of shapes the rule changes is printed with it. Then, on the GPU:
`python benchmarks/ab_configs.py AB.json OUT.json --rep-ms 30 --heat-ms 200`.

`--within M=257-1536,N=32-4096,K=70-2048` samples the region a rule acts in instead (few random_suite shapes fall
in a narrow one): per seed `--count` shapes, M uniform in its range, N and K 8 x uniform in theirs / 8 (16-bit rows,
TMA's 16 bytes); `--max` keeps the first so many changed shapes. The file's `note` records the seeds and ranges.
"""
from __future__ import annotations

import argparse
import json
import sys


def within_shapes(ranges: dict, count: int, seed: int):
    """`count` shapes of one seed: M uniform in ranges["M"], N and K 8 x uniform in their ranges / 8."""
    import random

    rng = random.Random(seed)
    (m0, m1), (n0, n1), (k0, k1) = ranges["M"], ranges["N"], ranges["K"]
    return [(f"within {seed}", rng.randint(m0, m1), 8 * rng.randint(-(-n0 // 8), n1 // 8),
             8 * rng.randint(-(-k0 // 8), k1 // 8)) for _ in range(count)]


def parse_within(text: str) -> dict:
    """"M=257-1536,N=32-4096,K=70-2048" -> {"M": (257, 1536), ...}; each of M, N, K once, lo <= hi, N and K >= 8."""
    ranges = {}
    for part in text.split(","):
        name, _, span = part.partition("=")
        lo, _, hi = span.partition("-")
        name = name.strip().upper()
        if name not in ("M", "N", "K") or name in ranges or not lo.isdigit() or not hi.isdigit():
            raise SystemExit(f"--within: expected M=lo-hi,N=lo-hi,K=lo-hi, got {text!r}")
        ranges[name] = (int(lo), int(hi))
    if set(ranges) != {"M", "N", "K"} or any(lo > hi or lo < 1 for lo, hi in ranges.values()) or \
            any(ranges[d][1] < 8 for d in "NK"):
        raise SystemExit(f"--within: each of M, N, K once, 1 <= lo <= hi (N and K up to 8 at least), got {text!r}")
    return ranges


def changed_shapes(op: str, key: str, seeds: range, card: str, count: int = 48, within: dict | None = None):
    """[(M, N, K, before, after)] of the random shapes of `seeds` (`within` ranges' shapes where given) whose
    config on `card` changes with `key` off."""
    from gemmkit import arch, configs
    from gemmkit.bench import ops as bench_ops
    from gemmkit.bench.suite import random_suite
    from gemmkit.configs import model

    rules = model.OP_RULES[op]
    if key not in rules:
        raise SystemExit(f"{op} has no rule key {key!r}: one of {sorted(rules)}")
    target = arch.get(card)
    bop = bench_ops.get(op)  # the bench's alignment of N and K for the op's operands (as `gemmkit bench --random`)
    align = 16 if bop.operand_bytes(bop.dtypes[0]) == 1 else 8
    out = []
    for seed in seeds:
        shapes = within_shapes(within, count, seed) if within else random_suite(count, seed, align)
        for _, M, N, K in shapes:
            after = configs.serve(op, target, M, N, K)[0]
            with configs.rule_off(op, key):
                before = configs.serve(op, target, M, N, K)[0]
            if before != after:
                out.append((M, N, K, before, after))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("op")
    ap.add_argument("key", help="an OP_RULES key of the op")
    ap.add_argument("first", type=int, help="the first random seed")
    ap.add_argument("last", type=int, help="one past the last seed")
    ap.add_argument("out", help="the ab_configs.py input to write")
    ap.add_argument("--card", default="H100", help="the card whose target serves (gemmkit.arch.get): H100, H200, ...")
    ap.add_argument("--count", type=int, default=48, help="shapes a seed (the bench's default)")
    ap.add_argument("--within", type=parse_within, help="M=lo-hi,N=lo-hi,K=lo-hi: sample these ranges instead")
    ap.add_argument("--max", type=int, help="keep the first so many changed shapes")
    a = ap.parse_args(argv)
    rows = changed_shapes(a.op, a.key, range(a.first, a.last), a.card, a.count, a.within)
    total = (a.last - a.first) * a.count
    kept = rows[:a.max] if a.max else rows
    source = (f"M, N, K uniform in {a.within} (N, K multiples of 8)" if a.within else "gemmkit bench --random's shapes")
    note = (f"`{a.key}` off ('before') and on ('served', null), as the {a.card} serves them: the first {len(kept)} of "
            f"the {len(rows)} of {total} shapes that change, {a.count} a seed of seeds {a.first}-{a.last - 1}, "
            f"{source} (benchmarks/rule_shapes.py).")
    with open(a.out, "w") as f:
        json.dump({"op": a.op, "note": note, "shapes": {f"{M},{N},{K}": {"before": before, "served": None}
                                                        for M, N, K, before, _ in kept}}, f, indent=1)
    for M, N, K, before, after in kept:
        print(f"{M:6d} {N:6d} {K:6d}  {before['BLOCK_SIZE_M']} x {before['BLOCK_SIZE_N']} "
              f"({before.get('num_warps')} warps) -> {after['BLOCK_SIZE_M']} x {after['BLOCK_SIZE_N']} "
              f"({after.get('num_warps')} warps)")
    print(f"{len(rows)} of {total} shapes ({len(rows) / max(1, total):.2%}) change with {a.key!r} off -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
