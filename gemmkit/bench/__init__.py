"""`gemmkit bench`: gemmkit against the vendor library, on the GPU; a CPU check without one."""
from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from .suite import default_suite, parse_shape
from .timing import rotation_count, time_graph, time_rotated

__all__ = ["run_gpu", "run_cpu_check", "default_report_path", "git_sha", "stamp", "write_stamped"]


def git_sha() -> str:
    """HEAD of the source tree (GEMMKIT_GIT_SHA wins: copies without .git, like the device machine's)."""
    if os.environ.get("GEMMKIT_GIT_SHA"):
        return os.environ["GEMMKIT_GIT_SHA"]
    try:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        return (sha + ("-dirty" if dirty else "")) or "unknown"
    except OSError:
        return "unknown"


def stamp() -> dict:
    """What every result file opens with: the device, torch / Triton / CUDA versions, the date and the git sha (the
    benchmark scripts' one stamp: `{**stamp(), ...their own keys}`)."""
    import torch
    import triton

    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "date": datetime.date.today().isoformat(), "git_sha": git_sha()}


def write_stamped(path, method: str, rows: list) -> dict:
    """A benchmark script's result, stamped (`stamp`) with its `method` and `rows`; written as JSON to `path` where it
    is given. Returns it."""
    out = {**stamp(), "method": method, "rows": rows}
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
    return out


def _sm_clock_mhz():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return int(out.splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


VENDOR_MAX_ERR = 0.05  # a vendor result further than this (norm-wise) from the fp32 reference is not timed
# Every row first runs one gemmkit timing that is not kept (`settle_ms`), so the first of its ABBA runs starts on the
# clock the vendor's runs will find: after a compile (seconds of host work, the card idle, its clock falling) and after
# a heavy row (the suites' M = 256 rows follow each layer's M = 8192 row, whose heat held the first ABBA run at up to
# 1.2-1.5x the second: docs/PERF.md "Model suites"). COLD_CALL_S only marks a compile in the row (cold_first_call).
COLD_CALL_S = 0.5
# A row whose two runs of one side differ by more than this share (the card's clock moved within the row: a hot H200 at
# its power cap moved 405B-sized fp8 rows by up to 22% run to run) is timed ABBA once more, each side the median of its
# four runs.
RETIME_SPREAD = 0.10


def _spread(runs):
    return max(runs) / min(runs) - 1 if runs else 0.0


def run_gpu(shapes, dtype_name="bf16", json_path=None, check=True, warmup_ms=25, rep_ms=100, configs=None,
            cuda_graph=False, op="a16w16", batch=1, roofline=False):
    """Time gemmkit's `op` against what a user would call in torch (bench/ops.py) for each
    (label, M, N, K); print a table; return the result dict (DESIGN.md format). `roofline`: measure the peaks
    first (bench/roofline.py) and give each row its floor and both sides' efficiency against it."""
    import torch
    import triton

    from gemmkit import configs as _configs
    from gemmkit.ops import _common as C

    from .ops import get as get_op

    bop = get_op(op)
    if dtype_name not in bop.dtypes:
        raise ValueError(f"--dtype: gemm_{op} takes {', '.join(bop.dtypes)}, got {dtype_name!r}")
    dev = torch.device("cuda")
    target = C.target_for(dev)
    rows = []
    vendor_name = bop.vendor_name(dtype_name)
    print(f"# {torch.cuda.get_device_name()} ({target.arch}, {target.num_cus} SMs/CUs), torch {torch.__version__}, "
          f"triton {triton.__version__}, gemm_{op} {dtype_name}, y = x @ w.T, vendor: {vendor_name}, "
          f"timing: {'CUDA graph replay' if cuda_graph else 'eager calls'}")
    peaks = None
    if roofline:
        from . import roofline as _roofline

        peaks = _roofline.measure(bop, dtype_name, dev, warmup_ms, rep_ms, batch)
        print(f"# roofline (measured now): dense {peaks.dense_tflops:.0f} TF/s ({peaks.dense_source}, "
              f"{_roofline.SQUARE}^3), read {peaks.read_gbps:.0f} GB/s, minimum kernel {peaks.min_ms * 1e3:.1f} us")
    header = f"{'shape':28s} {'M':>6s} {'N':>6s} {'K':>6s} {'gemmkit TF/s':>12s} {'vendor TF/s':>11s} {'ratio':>6s} {'GB/s':>7s}  err"
    print(header + ("  eff gemmkit / vendor" if peaks else ""))
    for label, M, N, K in shapes:
        flops, nbytes = bop.work(M, N, K, dtype_name, batch)
        n_sets = rotation_count(nbytes, target.l2_bytes)
        sets = [bop.make_inputs(M, N, K, dtype_name, dev, batch) for _ in range(n_sets)]
        override = (configs or {}).get((M, N, K))
        cfg, source = (override, "bench override") if override else \
            _configs.serve(bop.table_op(dtype_name), target, M, N, K)
        t0 = time.perf_counter()
        bop.run(sets[0], override)  # (compiles what this row runs, where it must)
        torch.cuda.synchronize()
        cold = time.perf_counter() - t0 > COLD_CALL_S
        err = None
        if check:
            ref = bop.reference(sets[0])
            y = torch.full(tuple(ref.shape), float("nan"), device=dev, dtype=bop.out_dtype(dtype_name))  # poisoned
            bop.run(sets[0], override, out=y)
            err = ((y.float() - ref).norm() / ref.norm()).item() if ref.norm() > 0 else 0.0
        # Table configs go through the op's own lookup, as a user's call would. Timed gemmkit, vendor, vendor,
        # gemmkit (ABBA): a drift of the card's clock over the row (a long GEMM heats it) falls on both sides alike.
        timer = time_graph if cuda_graph else time_rotated
        settle_ms = timer(lambda *inp: bop.run(inp, override), sets, warmup_ms, rep_ms)  # settle: not kept (above)
        ms_runs = [timer(lambda *inp: bop.run(inp, override), sets, warmup_ms, rep_ms)]
        ref_runs, ref_error, vendor_err = [], None, None
        try:
            if check:  # the vendor's own result against the reference: a ratio only against a right answer
                v = bop.vendor(sets[0])
                if isinstance(v, torch.Tensor) and tuple(v.shape) == tuple(ref.shape):
                    vendor_err = ((v.float() - ref).norm() / ref.norm()).item() if ref.norm() > 0 else 0.0
                    if not vendor_err <= VENDOR_MAX_ERR:
                        ref_error = f"vendor result off: relative error {vendor_err:.2e} against the reference"
            if ref_error is None:
                ref_runs = [timer(lambda *inp: bop.vendor(inp), sets, warmup_ms, rep_ms) for _ in range(2)]
        except Exception as e:  # e.g. torch._int_mm needs M > 16
            ref_runs, ref_error = [], f"{type(e).__name__}: {str(e)[:200]}"
        if ref_runs:
            ms_runs.append(timer(lambda *inp: bop.run(inp, override), sets, warmup_ms, rep_ms))
            if max(_spread(ms_runs), _spread(ref_runs)) > RETIME_SPREAD:  # the clock moved within the row: once more
                ms_runs.append(timer(lambda *inp: bop.run(inp, override), sets, warmup_ms, rep_ms))
                ref_runs += [timer(lambda *inp: bop.vendor(inp), sets, warmup_ms, rep_ms) for _ in range(2)]
                ms_runs.append(timer(lambda *inp: bop.run(inp, override), sets, warmup_ms, rep_ms))
        ms = statistics.median(ms_runs)
        ref_ms = statistics.median(ref_runs) if ref_runs else None
        row = {"op": op, "label": label, "M": M, "N": N, "K": K, **({"B": batch} if bop.batched else {}),
               "dtype": dtype_name,
               "backend": cfg.get("backend", "triton") if isinstance(cfg, dict) else "triton", "config": cfg, "config_source": source,
               "tuned": _configs.tuned(source), "fitted": ", fitted: " in source, "ms": ms,
               "tflops": flops / ms / 1e9, "gbps": nbytes / ms / 1e6, "ref_impl": vendor_name,
               "ref_ms": ref_ms, "ref_tflops": flops / ref_ms / 1e9 if ref_ms else None,
               "ref_gbps": nbytes / ref_ms / 1e6 if ref_ms else None,
               "ratio": ref_ms / ms if ref_ms else None, "rel_err_vs_fp32": err, "ref_rel_err_vs_fp32": vendor_err,
               "ms_runs": ms_runs, "ref_ms_runs": ref_runs, "input_sets": n_sets,
               "timing": "cuda_graph" if cuda_graph else "eager", "cold_first_call": cold,
               "settle_ms": settle_ms}
        if ref_error:
            row["ref_error"] = ref_error
        if peaks:
            floor = peaks.floor_ms(flops, nbytes)
            row.update(floor_ms=floor, efficiency=floor / ms, ref_efficiency=floor / ref_ms if ref_ms else None)
        rows.append(row)
        ref_txt = f"{row['ref_tflops']:11.1f} {row['ratio']:6.3f}" if ref_ms else f"{'n/a':>11s} {'n/a':>6s}"
        eff_txt = "" if not peaks else f"  {row['efficiency']:.2f} / " + (
            f"{row['ref_efficiency']:.2f}" if ref_ms else "n/a")
        print(f"{label:28s} {M:6d} {N:6d} {K:6d} {row['tflops']:12.1f} {ref_txt} "
              f"{row['gbps']:7.0f}  {err if err is None else f'{err:.1e}'}{eff_txt}", flush=True)
        del sets
        torch.cuda.empty_cache()
    result = {**stamp(), "arch": target.arch, "num_sms": target.num_cus, "sm_clock_mhz": _sm_clock_mhz(),
              "op": op, "dtype": dtype_name, "shape_doc": bop.shape_doc,
              "method": "triton.testing.do_bench median (L2 cleared per call), inputs rotated to >= 4x L2; per row "
              "gemmkit, vendor, vendor, gemmkit (ABBA), each side the mean of its two medians (ms_runs, "
              f"ref_ms_runs; where one side's two differ by over {RETIME_SPREAD:.0%}, ABBA once more and each side the "
              "median of four); "
              "before them one gemmkit timing, not kept (settle_ms: the card's clock after a compile or a heavier "
              "row)"
              + ("; one CUDA graph replayed (one call per input set), time per call" if cuda_graph else
                 "; eager calls (Python and launch overhead included, for both sides)"),
              "rows": rows}
    if peaks:
        import dataclasses

        from . import roofline as _roofline

        result["roofline"] = {**dataclasses.asdict(peaks), "square": _roofline.SQUARE,
                              "read_bytes": _roofline.READ_BYTES,
                              "method": "floor_ms = max(flops / dense, bytes / read, min kernel); efficiency = "
                                        "floor_ms / ms (gemmkit) and floor_ms / ref_ms (vendor); peaks measured in "
                                        "this run by CUDA-graph replay (bench/roofline.py)"}
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {json_path}")
    return result


def _stage(text):
    """A progress line: stderr, flushed (stdout keeps the results and the summary)."""
    print(text, file=sys.stderr, flush=True)


def _elapsed(t0):
    s = int(time.monotonic() - t0)
    return f"{s // 60}m{s % 60:02d}s"


def default_report_path():
    """Where the no-GPU check writes its full static compile table (beside the compile cache)."""
    from gemmkit.isa.report import _cache_dir

    return _cache_dir().parent / "bench_cpu_report.txt"


def run_cpu_check(verbose=False, op="all", archs=None, report_path=None):
    """No GPU: a small interpreter check in a subprocess (the interpreter must be on before
    Triton decorates the kernels), then the static compile of `op`'s kernels x shipped configs
    ('all': every kernel) for `archs` (default: sm_90, gfx942, gfx950). Progress on stderr;
    on stdout the interpreter check's rows and a short summary; the full static table goes to
    `report_path` (default: `default_report_path()`) and, with `verbose`, to stdout too.
    Returns the exit code: 0 when both checks pass."""
    from gemmkit import arch as _arch
    from gemmkit.isa.report import Progress, _cache_dir, collect, summary_lines, table_text

    from .cpu_check import CASES

    archs = list(archs or _arch.ARCHS)
    report_path = Path(report_path) if report_path else default_report_path()
    print("No GPU found: `gemmkit bench` times kernels on a CUDA GPU, and torch sees none on this machine.")
    print(f"Checking on the CPU instead: (1) gemm_a16w16 in the Triton interpreter, (2) {op} kernels x shipped "
          f"configs compiled for {', '.join(archs)} and checked against the promises their files declare. "
          f"Progress goes to stderr; a first run compiles for minutes (cached after, in {_cache_dir()}).\n",
          flush=True)

    t0 = time.monotonic()
    _stage(f"[1/2] interpreter check: gemm_a16w16 on {len(CASES)} small shapes (bf16 / fp16, TRITON_INTERPRET=1, "
           "in a fresh process) ...")
    env = dict(os.environ, TRITON_INTERPRET="1")
    code = "from gemmkit.bench.cpu_check import main; main()"
    verdict = "interpreter check: FAILED (no verdict: see the errors above)"
    with subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) as child:
        for line in child.stdout:  # its rows, as they come
            print(line, end="", flush=True)
            if line.startswith("interpreter check:"):
                verdict = line.strip()
    interp_ok = child.returncode == 0
    _stage(f"[1/2] interpreter check: {'ok' if interp_ok else 'FAILED'} [{_elapsed(t0)}]")

    t1 = time.monotonic()
    rows = collect(op, archs, progress=Progress("[2/2] static compile"))
    static_ok = all(r["ok"] and r["promises_ok"] for r in rows)
    _stage(f"[2/2] static compile: {'ok' if static_ok else 'FAILED'} [{_elapsed(t1)}]")

    table = table_text(rows, op, archs)
    try:
        report_path.parent.mkdir(parents=True, exist_ok=True)
        report_path.write_text(table + "\n")
        where = str(report_path)
    except OSError as e:
        where = f"not written ({e}); `gemmkit bench --verbose` prints it"
    if verbose:
        print()
        print(table)
    print()
    print(f"Summary [{_elapsed(t0)}]")
    print(verdict)
    for line in summary_lines(rows, archs):
        print(line)
    print(f"full table (registers, spills, LDS/smem, occupancy, MMA counts, each promise): {where}")
    print("  also: `gemmkit bench --verbose` prints it; `gemmkit isa [--op OP] [--arch ARCH] [--json PATH]` "
          "(cached compiles: seconds); docs/ISA.md")
    print("next: the tests, as CI runs them (interpreter + static compiles): python -m pytest")
    print("      docs: README.md (API, what runs where), docs/DESIGN.md, docs/kernels/, docs/PERF.md (H200 numbers)")
    print("      on a machine with a CUDA GPU (H100/H200): `gemmkit bench` times gemm_a16w16 against torch.matmul "
          "(cuBLAS); --op, --shape, --model, --json: `gemmkit bench --help`", flush=True)
    return 0 if interp_ok and static_ok else 1


def parse_shapes(shape_args):
    return [parse_shape(s) for s in shape_args] if shape_args else default_suite()
