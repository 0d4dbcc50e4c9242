"""benchmarks/random_shapes.py: seeded random shapes for `run_gpu.sh random` (the same seed, the same shapes, so two
revisions can be compared on them; N and K as aligned as asked, the work capped)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import random_shapes as RS  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks", "random_shapes.py")


def test_the_same_seed_gives_the_same_shapes_and_another_seed_others():
    assert RS.shapes(7, 32) == RS.shapes(7, 32)
    assert RS.shapes(7, 32) != RS.shapes(8, 32)
    assert RS.shapes(7, 40)[:32] == RS.shapes(7, 32)  # a longer list extends a shorter one


def test_ranges_alignment_and_work_cap():
    for align in (8, 16):
        got = RS.shapes(20261128, 200, align)
        assert len(got) == 200
        for M, N, K in got:
            assert 1 <= M <= 8192 and 128 <= N <= 32768 and 128 <= K <= 32768
            assert N % align == 0 and K % align == 0
            assert M * N * K <= 2 ** 38 and N * K <= 2 ** 29
        if align == 8:  # some rows off 16 (the TMA / sector cases the generator is there to reach)
            assert any(K % 16 for _, _, K in got)


def test_cli_prints_bench_arguments():
    out = subprocess.run([sys.executable, SCRIPT, "--seed", "5", "--count", "3"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0::2] == ["--shape"] * 3
    assert [tuple(map(int, s.split(","))) for s in out[1::2]] == RS.shapes(5, 3)
