"""The command line as a user meets it: `gemmkit bench` on a machine without a GPU (the README's main
command) says so, shows progress and ends with a short summary; bad input to any subcommand is a
one-line error with exit code 2 (never a traceback); an option is honoured or refused, never
silently ignored."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from _util import ROOT
from gemmkit import arch as gemmkit_arch
from gemmkit import configs
from gemmkit.cli import main as cli_main

NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="the no-GPU behaviour of `gemmkit bench`")
# Every op with a default config table `<arch>/<OP>.json`, read from the directory (not from gemmkit).
TABLE_OPS = sorted({p.stem.lower() for p in configs.CONFIG_DIR.glob("*/*.json") if "-" not in p.stem})
ARCHS = ["sm_90", "gfx942", "gfx950"]
ARCH_TARGETS = {a: gemmkit_arch.ARCHS[a] for a in ARCHS}  # `gemmkit configs --arch` answers for these targets


def _cli(capsys, *argv):
    """(exit code, stdout, stderr) of `gemmkit ARGV` run in this process; an exception is a test failure."""
    try:
        rc = cli_main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def _no_interpret_env():
    return {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "GEMMKIT_INTERPRET_ARCH")}


@NO_GPU
def test_bench_without_gpu():
    """The README's command, as a user runs it: progress on stderr while it works, a short summary
    that says what was checked and where the full table is; exits 0."""
    r = subprocess.run([sys.executable, "-m", "gemmkit", "bench"], cwd=ROOT, env=_no_interpret_env(),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "No GPU found" in r.stdout
    assert "interpreter check: ok" in r.stdout
    assert "static compile: ok" in r.stdout
    for arch in ARCHS:
        assert f"\n{arch}" in r.stdout  # the summary's row per target
        assert f"{arch}: " in r.stderr and "done" in r.stderr  # progress per target
    assert "[1/2]" in r.stderr and "[2/2]" in r.stderr
    assert len(r.stdout.splitlines()) <= 40, r.stdout  # a summary, not ~800 lines of registers
    report = r.stdout.split("full table")[1].split(":", 1)[1].split()[0]
    text = Path(report).read_text()
    assert len(text.splitlines()) > 700 and "promises" in text  # every row kept, in the file
    assert "python -m pytest" in r.stdout and "docs/" in r.stdout


@NO_GPU
def test_bench_cpu_check_small_case(tmp_path):
    """The no-GPU check on a small static op (cdna_pingpong on gfx950: the kernel as written and its A16W16
    bucket's variant): progress per stage and target,
    the summary's counts, the full table in the report file and, with verbose, on stdout."""
    code = ("import sys; from gemmkit.bench import run_cpu_check; "
            f"sys.exit(run_cpu_check(op='cdna_pingpong', archs=['gfx950'], verbose=True, "
            f"report_path={str(tmp_path / 'report.txt')!r}))")
    env = dict(_no_interpret_env(), GEMMKIT_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    err, out = r.stderr, r.stdout
    assert "[1/2] interpreter check" in err and "[2/2] static compile: 2 cases" in err
    assert "gfx950: 2/2 done" in err
    assert "interpreter check: ok" in out and "static compile: ok" in out
    row = [ln for ln in out.splitlines() if ln.startswith("gfx950 ")][-1].split()  # the summary (after the table)
    assert row[1:4] == ["1", "2", "0"]  # kernels, cases compiled, failed
    assert "cdna_pingpong_kernel" in out  # verbose: the full table on stdout
    assert "cdna_pingpong_kernel" in (tmp_path / "report.txt").read_text()
    assert str(tmp_path / "report.txt") in out


def test_summary_lists_broken_promises_and_failed_compiles():
    """Formatting only (rows made up): counts per target, and each broken promise or failed compile named."""
    from gemmkit.isa.report import summary_lines

    good = {"arch": "sm_90", "kernel": "k1", "table": "T.json", "bucket": "any", "config": {}, "ok": True,
            "spill_bytes": 0, "promises": [{"promise": "p", "ok": True, "detail": ""}], "promises_ok": True}
    broken = dict(good, kernel="k2", spill_bytes=8, promises_ok=False,
                  promises=[{"promise": "no spills", "ok": False, "detail": "8 bytes"}])
    failed = dict(good, arch="gfx950", ok=False, promises_ok=False, promises=[], error="ValueError: boom\nmore")
    lines = summary_lines([good, broken, failed], ["sm_90", "gfx950"])
    text = "\n".join(lines)
    assert "static compile: FAILED" in text
    sm90 = [ln for ln in lines if ln.startswith("sm_90 ")][0].split()
    assert sm90[1:] == ["2", "2", "0", "1", "1/2", "1"]  # kernels, compiled, failed, spills, kept/checked, broken
    assert "no spills (8 bytes)" in text and "k2" in text and "ValueError: boom" in text


def test_collect_reports_progress():
    """`collect` tells a progress callback the cases per target, then each finished case (through the
    fresh process it starts when this process interprets)."""
    from gemmkit.isa.report import collect

    seen = []

    class P:
        def start(self, totals):
            seen.append(("start", dict(totals)))

        def step(self, row):
            seen.append(("step", row["arch"], row["ok"]))

    rows = collect("afp4wfp4", ["gfx950"], progress=P())
    assert seen[0] == ("start", {"gfx950": len(rows)})
    assert seen[1:] == [("step", "gfx950", r["ok"]) for r in rows]


# ---- configs -------------------------------------------------------------------------------------

def test_configs_unknown_op_is_an_argparse_error(capsys):
    rc, _, err = _cli(capsys, "configs", "--op", "bogus", "-M", 1, "-N", 1, "-K", 1)
    assert rc == 2 and "invalid choice: 'bogus'" in err


def test_configs_help_lists_every_table_op(capsys):
    rc, out, _ = _cli(capsys, "configs", "--help")
    assert rc == 0
    flat = " ".join(out.split())
    for op in TABLE_OPS + ["ffn_gated", "split_cat"]:
        assert op in flat, op


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("op", TABLE_OPS)
def test_configs_every_table_op(capsys, op, arch):
    """Every table op answers on every arch: its config and source, or (no table there) a one-line
    error naming the archs that have one."""
    rc, out, err = _cli(capsys, "configs", "--op", op, "-M", 100, "-N", 4096, "-K", 4096, "--arch", arch)
    if configs.table_path(op, arch).exists():
        assert rc == 0, err
        cfg, source = configs.serve(op, ARCH_TARGETS[arch], 100, 4096, 4096)
        assert source in out and json.JSONDecoder().raw_decode(out[out.index("{"):])[0] == cfg
        # and the kernel that serves the shape (ops/dispatch.py)
        assert "\nkernel: " in out
    else:
        have = sorted(p.parent.name for p in configs.CONFIG_DIR.glob(f"*/{op.upper()}.json"))
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
        assert f"no {op} config table for {arch}" in err and all(a in err for a in have)


@pytest.mark.parametrize("M,N,K,want", [
    (1496, 12160, 3008, "576 tiles of 128 x 256 on 132 SMs (4 rounds + 48), 3 ring stages; the last round's 48 "
                        "tiles as 2 K splits each"),  # the coop's tail split (hopper_pingpong.tail_plan's rule)
    (256, 2880, 2880, "120 tiles of 64 x 96 on 132 SMs (one round)"),
    (16, 4096, 4096, "64 tiles of 64 weight rows x 16 tokens (swap-AB)"),
    (300, 576, 7168, "18 tiles of 128 x 96, K split 7 ways (NUM_KSPLIT 11, fitted to a wave): 126 work items on 132 "
                     "SMs (one round), 6 ring stages")])
def test_configs_says_what_the_gluon_launch_derives(capsys, M, N, K, want):
    """`gemmkit configs` names what a dense Gluon launch derives from the shape, not the config: tiles and rounds on
    the SMs, the ring's stages, split-K's fitted count and the tail split (dispatch.gluon_launch)."""
    from gemmkit.kernels.gluon import hopper_coop, hopper_host, hopper_pingpong

    rc, out, err = _cli(capsys, "configs", "--op", "a16w16", "-M", M, "-N", N, "-K", K, "--arch", "sm_90")
    assert rc == 0, err
    assert "\n  launch: " + want in out, out
    cfg = configs.serve("a16w16", ARCH_TARGETS["sm_90"], M, N, K)[0]
    if M == 1496:  # the same (R, S) as the kernel's own launch asks
        plan = hopper_coop.derive(cfg, ARCH_TARGETS["sm_90"])
        assert hopper_coop.tail_of(plan, cfg, M, N, K, ARCH_TARGETS["sm_90"]) == (48, 2)
        assert hopper_pingpong.is_coop(cfg) and hopper_host.fit_split_k(cfg, M, N, K, ARCH_TARGETS["sm_90"]) == cfg


def test_configs_layouts(capsys):
    """`--w-t` / `--x-t`: the kernel a call with w / x transposed in memory runs (dispatch.for_shape over views of
    (K, N) / (K, M) storage): at decode the Gluon swap-AB tile reads a W.t() weight where it lies and copies a
    transposed x; at M = 1024 the Triton tier's TMA kernel reads both; ops without such operands say so."""
    def run(*args):
        rc, out, err = _cli(capsys, "configs", *args, "--arch", "sm_90")
        assert rc == 0, err
        return out

    out = run("-M", 16, "-N", 4096, "-K", 4096, "--w-t")
    assert "for w transposed in memory (the rest contiguous)" in out and "kernel: hopper_pingpong_kernel\n" in out
    assert "copies of" not in out and "swap-AB" in out
    out = run("-M", 16, "-N", 4096, "-K", 4096, "--x-t", "--w-t")
    assert "x and w transposed in memory" in out and "on copies of x with rows of 4096 elements" in out
    assert "kernel: hopper_pingpong_kernel" in out
    out = run("-M", 1024, "-N", 4096, "-K", 4096, "--x-t", "--w-t")
    assert "kernel: gemm_tma_kernel" in out and "copies of" not in out
    assert "kernel: none (x / w transposed in memory" in run("--op", "a16w16_gated", "-M", 16, "-N", 4096, "-K", 4096,
                                                             "--w-t")


def test_configs_ffn_gated_shows_both_gemms(capsys):
    """ffn_gated (bench/tune's name) is two GEMMs: the gated one (M, I, K) and the down projection (M, K, I)."""
    M, I, K = 64, 14336, 4096
    rc, out, err = _cli(capsys, "configs", "--op", "ffn_gated", "-M", M, "-N", I, "-K", K, "--arch", "sm_90")
    assert rc == 0, err
    assert configs.serve("a16w16_gated", ARCH_TARGETS["sm_90"], M, I, K)[1] in out
    assert configs.serve("a16w16", ARCH_TARGETS["sm_90"], M, K, I)[1] in out
    assert "gate/up" in out and "down" in out


def test_configs_names_a_card(capsys):
    """--arch H100: the card's own target (its SMs and HBM bandwidth, which the config model's rules see), named in
    the answer; the H100 serves 786 x 7712 x 23312 the coop (`tail_waves_off_line`), sm_90's H200 the ping-pong."""
    args = ("configs", "--op", "a16w16", "-M", 786, "-N", 7712, "-K", 23312)
    rc, out, err = _cli(capsys, *args, "--arch", "H100")
    assert rc == 0, err
    assert "on sm_90 (H100, 132 SMs): " in out and configs.serve("a16w16", gemmkit_arch.get("H100"), 786, 7712,
                                                                 23312)[1] in out
    assert "`tail_waves_off_line`" in out and "kernel: hopper_coop_kernel" in out
    rc, out, err = _cli(capsys, *args, "--arch", "sm_90")
    assert rc == 0 and "on sm_90: " in out and "kernel: hopper_pingpong_kernel" in out, err


def test_configs_split_cat_uses_its_table(capsys):
    rc, out, err = _cli(capsys, "configs", "--op", "split_cat", "-M", 16, "-N", 32768, "-K", 512, "--arch", "gfx950")
    assert rc == 0, err
    cfg, source = configs.serve("a16w16_split_cat", ARCH_TARGETS["gfx950"], 16, 32768, 512)
    assert source in out and json.JSONDecoder().raw_decode(out[out.index("{"):])[0] == cfg


@pytest.mark.parametrize("dim,value", [("-M", "0"), ("-N", "-1"), ("-K", "-8"), ("-M", "x")])
def test_configs_rejects_nonpositive_sizes(capsys, dim, value):
    sizes = {"-M": "1", "-N": "1", "-K": "1", dim: value}
    rc, out, err = _cli(capsys, "configs", *[t for kv in sizes.items() for t in kv])
    assert rc == 2 and out == ""
    assert f"argument {dim}" in err and ">= 1" in err


# ---- bench ---------------------------------------------------------------------------------------

@NO_GPU
@pytest.mark.parametrize("argv,named", [
    (["--op", "a8w8"], "--op"), (["--shape", "128,256,512"], "--shape"), (["--json", "r.json"], "--json"),
    (["--model", "llama3-8b", "-m", "1,16"], "--model, -m"),
    (["--cuda-graph", "--no-check"], "--cuda-graph, --no-check"),
    (["--cuda-graph", "--roofline"], "--cuda-graph, --roofline"),
    (["--random", "8", "--seed", "3"], "--random, --seed"),
    (["--dtype", "fp16", "--rep-ms", "5", "--batch", "2", "--plot", "p.png"], "--dtype, --plot, --rep-ms, --batch")])
def test_bench_refuses_gpu_options_without_gpu(capsys, monkeypatch, argv, named):
    """Without a GPU the timing options are refused up front (exit 2, one line that says why), not ignored."""
    import gemmkit.bench

    def ran(*a, **k):
        raise AssertionError("the CPU check ran: the options were ignored")

    monkeypatch.setattr(gemmkit.bench, "run_cpu_check", ran)
    rc, out, err = _cli(capsys, "bench", *argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert named in err and "need a CUDA GPU" in err


@NO_GPU
def test_bench_verbose_is_the_cpu_checks_option(capsys, monkeypatch):
    import gemmkit.bench

    seen = []
    monkeypatch.setattr(gemmkit.bench, "run_cpu_check", lambda **k: seen.append(k) or 0)
    assert _cli(capsys, "bench", "--verbose")[0] == 0 and _cli(capsys, "bench")[0] == 0
    assert seen == [{"verbose": True}, {"verbose": False}]


@pytest.mark.parametrize("argv,expect", [
    (["--shape", "0,16,16"], ">= 1"), (["--shape", "16,16"], "M,N,K"), (["-m", "1,x", "--model", "llama3-8b"], ">= 1"),
    (["--model", "nope"], "invalid choice"), (["--rep-ms", "0"], ">= 1"), (["--batch", "-2"], ">= 1"),
    (["--random", "0"], ">= 1")])
def test_bench_rejects_bad_values(capsys, monkeypatch, argv, expect):
    import gemmkit.bench

    monkeypatch.setattr(gemmkit.bench, "run_cpu_check", lambda *a, **k: 0)
    rc, _, err = _cli(capsys, "bench", *argv)
    assert rc == 2 and expect in err and "need a CUDA GPU" not in err


@pytest.mark.parametrize("argv,expect", [
    (["--op", "a16w16", "--dtype", "fp8"], "a16w16 takes bf16, fp16"),
    (["--op", "a8w8", "--batch", "4"], "--batch: only for the batched ops"),
    (["--shape", "64,64,64", "-m", "1,16"], "-m: only with --model"),
    (["--shape", "64,64,64", "--seed", "3"], "--seed: only with --random"),
    (["--op", "split_cat", "--model", "llama3-8b"], "deepseek-v3")])
def test_bench_on_a_gpu_checks_the_options_against_the_op(capsys, monkeypatch, argv, expect):
    """The GPU path (torch.cuda.is_available patched, run_gpu never reached): an option the op cannot take
    is an error, not a silently wrong run (--batch on a dense op multiplied its TFLOP/s)."""
    import gemmkit.bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gemmkit.bench, "run_gpu", lambda *a, **k: pytest.fail(f"run_gpu ran: {a} {k}"))
    rc, _, err = _cli(capsys, "bench", *argv)
    assert rc == 2 and expect in err and len(err.strip().splitlines()) == 1


def test_bench_on_a_gpu_passes_the_options_on(capsys, monkeypatch):
    import gemmkit.bench

    seen = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gemmkit.bench, "run_gpu", lambda shapes, **k: seen.update(k, shapes=shapes) or {})
    rc, _, err = _cli(capsys, "bench", "--op", "batched_a8w8", "--dtype", "int8", "--batch", "4",
                      "--shape", "32x64x128")
    assert rc == 0, err
    assert seen["shapes"] == [("custom", 32, 64, 128)] and seen["batch"] == 4 and seen["dtype_name"] == "int8"
    assert seen["op"] == "batched_a8w8" and seen["rep_ms"] == 100 and seen["check"] and not seen["cuda_graph"]


def test_bench_random_rows(capsys, monkeypatch):
    """--random COUNT [--seed S]: the seeded random suite (gemmkit/bench/suite.py random_suite), N and K % 16 == 0 for
    8-bit operands; with --shape, both sets of rows."""
    import gemmkit.bench
    from gemmkit.bench.suite import RANDOM_SEED, random_suite

    seen = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gemmkit.bench, "run_gpu", lambda shapes, **k: seen.update(k, shapes=shapes) or {})
    assert _cli(capsys, "bench", "--random", "5")[0] == 0
    assert seen["shapes"] == random_suite(5, RANDOM_SEED, 8) and seen["shapes"][0][0] == f"random {RANDOM_SEED}"
    assert _cli(capsys, "bench", "--op", "a8w8", "--random", "40", "--seed", "9", "--shape", "1,2,3")[0] == 0
    assert seen["shapes"][0] == ("custom", 1, 2, 3) and seen["shapes"][1:] == random_suite(40, 9, 16)
    assert all(n % 16 == 0 and k % 16 == 0 for _, _, n, k in seen["shapes"][1:])


def test_random_suite_is_seeded_aligned_and_capped():
    from gemmkit.bench.suite import random_suite

    assert random_suite(32, 7) == random_suite(32, 7) != random_suite(32, 8)
    assert random_suite(40, 7)[:32] == random_suite(32, 7)  # a longer list extends a shorter one
    for align in (8, 16):
        rows = random_suite(200, 20261128, align)
        assert len(rows) == 200
        for _, M, N, K in rows:
            assert 1 <= M <= 8192 and 256 <= N <= 32768 and 256 <= K <= 32768
            assert N % align == 0 and K % align == 0 and M * N * K <= 2 ** 38 and N * K <= 2 ** 29
        if align == 8:  # some rows off 16 (the TMA / sector cases the suite is there to reach)
            assert any(K % 16 for _, _, _, K in rows)


# ---- tune ----------------------------------------------------------------------------------------

PROGRESS = Path(ROOT) / "benchmarks" / "results" / "h200" / "tune" / "a16w16_tables_tune_progress.jsonl"


@pytest.mark.parametrize("argv,expect", [
    (["--shape", "-5", "10", "10"], ">= 1"), (["--model", "llama3-70b", "-m", "1,x"], ">= 1"),
    (["--model", "nope"], "invalid choice"), (["--tables-from", "/nonexistent/p.jsonl"], "no such file"),
    (["--shape", "8", "8", "8", "-m", "16"], "-m: only with --model"),
    (["--shape", "8", "8", "8", "--arch", "gfx950"], "--arch: only with --tables-from"),
    (["--op", "a16w16", "--dtype", "fp8", "--shape", "8", "8", "8"], "a16w16 takes bf16, fp16"),
    (["--op", "a16w16", "--batch", "4", "--shape", "8", "8", "8"], "--batch: only for the batched ops"),
    (["--shape", "8", "8", "8", "--max-candidates", "0"], ">= 1")])
def test_tune_rejects_bad_input(capsys, tmp_path, argv, expect):
    rc, _, err = _cli(capsys, "tune", "--out", tmp_path, *argv)
    assert rc == 2 and expect in err, err
    assert not (tmp_path / "merge_decisions.json").exists()


def test_tune_tables_from_without_rows_of_the_op_is_refused(capsys, tmp_path):
    """A progress file with no rows of the op merges nothing: say so, and leave the decisions file alone."""
    assert PROGRESS.exists()
    rc, _, err = _cli(capsys, "tune", "--op", "ffn_gated", "--tables-from", PROGRESS, "--out", tmp_path)
    assert rc == 2 and "no timed rows of ffn_gated" in err
    assert not (tmp_path / "merge_decisions.json").exists()


def test_tune_tables_from_a_file_that_is_not_progress(capsys, tmp_path):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"M": 1}\n')
    rc, _, err = _cli(capsys, "tune", "--tables-from", bad, "--out", tmp_path)
    assert rc == 2 and "not a tune_progress.jsonl" in err
    assert not (tmp_path / "merge_decisions.json").exists()


# ---- isa, schedule -------------------------------------------------------------------------------

def test_isa_unknown_op_is_an_argparse_error(capsys):
    rc, _, err = _cli(capsys, "isa", "--op", "bogus")
    assert rc == 2 and "invalid choice: 'bogus'" in err


def test_isa_output_path_checked_before_compiling(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    rc, out, err = _cli(capsys, "isa", "--op", "afp4wfp4", "--arch", "gfx950", "--json", tmp_path / "file" / "x.json")
    assert rc == 2 and "--json" in err and out == ""


def test_schedule_unknown_name_on_stderr(capsys):
    rc, out, err = _cli(capsys, "schedule", "check", "nope")
    assert rc == 2 and out == "" and "unknown schedule 'nope'" in err
