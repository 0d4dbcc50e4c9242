"""Seeded random GEMM shapes that no table, rule or suite was fitted on: `python benchmarks/random_shapes.py [--seed S]
[--count N] [--align A]` prints them as `gemmkit bench` arguments (`--shape M,N,K ...`).

  M  log-uniform in [1, 8192] (tokens: decode to prefill)
  N, K  log-uniform in [256, 32768], each rounded down to a multiple of 128 (60%), 16 (30%) or 8 (10%: rows off
        TMA's 16-byte rule for 8-bit operands, off 32-byte sectors for 16-bit ones); `--align 16` rounds those to 16
        too (the 8-bit vendors refuse K or N % 16 != 0)
  at most 2**38 multiply-adds and 2**29 weight elements a shape (a few milliseconds each on a Hopper)

`bash benchmarks/run_gpu.sh random` times them for every dense op against its vendor (benchmarks/results/<gpu>/
<op>_random.json); keep the seed fixed to compare revisions, change it for shapes nobody has seen."""
import argparse
import math
import random


def shapes(seed: int = 20261128, count: int = 48, align: int = 8) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        M = max(1, int(round(math.exp(rng.uniform(0, math.log(8192))))))
        N, K = (int(math.exp(rng.uniform(math.log(256), math.log(32768)))) for _ in range(2))
        r = rng.random()
        a = max(align, 128 if r < 0.6 else 16 if r < 0.9 else 8)
        N, K = max(a, N // a * a), max(a, K // a * a)
        if M * N * K > 2 ** 38 or N * K > 2 ** 29:
            continue
        out.append((M, N, K))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--align", type=int, default=8, choices=(8, 16), help="the least alignment of N and K")
    a = ap.parse_args()
    print(" ".join(f"--shape {m},{n},{k}" for m, n, k in shapes(a.seed, a.count, a.align)))
