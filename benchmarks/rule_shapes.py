"""The shapes a config-model rule changes, as a held-out A/B input, on a CPU: every shape of `gemmkit bench --random`'s
seeds [FIRST, LAST) (gemmkit/bench/suite.py `random_suite`, COUNT shapes a seed) whose served config on a card changes
when one of the op's rule keys (configs/model/op_rules.py OP_RULES) is turned off.

    PYTHONPATH=. python3 benchmarks/rule_shapes.py a16w16 coop_widths_area 20262300 20263000 AB.json [--card H100]

AB.json is benchmarks/ab_configs.py's input: per shape "before" (the config served with the key off, as an A/B's
before side is written) and "served" (null: what the tree serves, the rule on). Seeds nobody fitted on make it a
held-out set; the share of shapes the rule changes is printed with it. Then, on the GPU:
`python benchmarks/ab_configs.py AB.json OUT.json --rep-ms 30 --heat-ms 200`.
"""
from __future__ import annotations

import argparse
import json
import sys


def changed_shapes(op: str, key: str, seeds: range, card: str, count: int = 48):
    """[(M, N, K, before, after)] of the random shapes of `seeds` whose config on `card` changes with `key` off."""
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
        for _, M, N, K in random_suite(count, seed, align):
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
    a = ap.parse_args(argv)
    rows = changed_shapes(a.op, a.key, range(a.first, a.last), a.card, a.count)
    total = (a.last - a.first) * a.count
    with open(a.out, "w") as f:
        json.dump({"op": a.op, "shapes": {f"{M},{N},{K}": {"before": before, "served": None}
                                          for M, N, K, before, _ in rows}}, f, indent=1)
    for M, N, K, before, after in rows:
        print(f"{M:6d} {N:6d} {K:6d}  {before['BLOCK_SIZE_M']} x {before['BLOCK_SIZE_N']} "
              f"({before.get('num_warps')} warps) -> {after['BLOCK_SIZE_M']} x {after['BLOCK_SIZE_N']} "
              f"({after.get('num_warps')} warps)")
    print(f"{len(rows)} of {total} shapes ({len(rows) / max(1, total):.2%}) change with {a.key!r} off -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
