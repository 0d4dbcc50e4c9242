"""`gemmkit bench`: gemmkit against the vendor library, on the GPU; a CPU check without one."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys

from .suite import default_suite, parse_shape
from .timing import rotation_count, time_graph, time_rotated

__all__ = ["run_gpu", "run_cpu_check", "git_sha"]


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


def _sm_clock_mhz():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        return int(out.splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def run_gpu(shapes, dtype_name="bf16", json_path=None, check=True, warmup_ms=25, rep_ms=100, configs=None,
            cuda_graph=False):
    """Time gemm_a16w16 vs torch.matmul (cuBLAS) for each (label, M, N, K); print a table; return the result dict."""
    import torch
    import triton

    import gemmkit
    from gemmkit import configs as _configs
    from gemmkit.ops import _common as C

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    dev = torch.device("cuda")
    target = C.target_for(dev)
    rows = []
    print(f"# {torch.cuda.get_device_name()} ({target.arch}, {target.num_cus} SMs/CUs), torch {torch.__version__}, "
          f"triton {triton.__version__}, {dtype_name}, y = x @ w.T, timing: {'CUDA graph replay' if cuda_graph else 'eager calls'}")
    header = f"{'shape':28s} {'M':>6s} {'N':>6s} {'K':>6s} {'gemmkit TF/s':>12s} {'vendor TF/s':>11s} {'ratio':>6s} {'GB/s':>7s}  err"
    print(header)
    for label, M, N, K in shapes:
        flops = 2.0 * M * N * K
        nbytes = (M * K + N * K + M * N) * dtype.itemsize
        n_sets = rotation_count(nbytes, target.l2_bytes)
        sets = [(torch.randn(M, K, device=dev, dtype=dtype), torch.randn(N, K, device=dev, dtype=dtype))
                for _ in range(n_sets)]
        override = (configs or {}).get((M, N, K))
        cfg, source = (override, "bench override") if override else _configs.select("a16w16", target.arch, M, N, K)
        err = None
        if check:
            x, w = sets[0]
            ref = (x.float() @ w.float().T)
            y = torch.full((M, N), float("nan"), device=dev, dtype=dtype)
            gemmkit.gemm_a16w16(x, w, out=y, config=override)
            err = ((y.float() - ref).norm() / ref.norm()).item() if ref.norm() > 0 else 0.0
        # Table configs go through the op's own lookup, as a user's call would.
        timer = time_graph if cuda_graph else time_rotated
        ms = timer(lambda x, w: gemmkit.gemm_a16w16(x, w, config=override), sets, warmup_ms, rep_ms)
        ref_ms = timer(lambda x, w: torch.matmul(x, w.T), sets, warmup_ms, rep_ms)
        row = {"op": "a16w16", "label": label, "M": M, "N": N, "K": K, "dtype": dtype_name,
               "backend": "triton", "config": cfg, "config_source": source, "ms": ms,
               "tflops": flops / ms / 1e9, "gbps": nbytes / ms / 1e6, "ref_impl": "torch.matmul (cuBLAS)",
               "ref_ms": ref_ms, "ref_tflops": flops / ref_ms / 1e9, "ref_gbps": nbytes / ref_ms / 1e6,
               "ratio": ref_ms / ms, "rel_err_vs_fp32": err, "input_sets": n_sets,
               "timing": "cuda_graph" if cuda_graph else "eager"}
        rows.append(row)
        print(f"{label:28s} {M:6d} {N:6d} {K:6d} {row['tflops']:12.1f} {row['ref_tflops']:11.1f} "
              f"{row['ratio']:6.3f} {row['gbps']:7.0f}  {err if err is None else f'{err:.1e}'}", flush=True)
        del sets
        torch.cuda.empty_cache()
    result = {"device": torch.cuda.get_device_name(), "arch": target.arch, "num_sms": target.num_cus,
              "sm_clock_mhz": _sm_clock_mhz(), "torch": torch.__version__, "triton": triton.__version__,
              "cuda": torch.version.cuda, "date": datetime.date.today().isoformat(), "git_sha": git_sha(),
              "method": "triton.testing.do_bench median (L2 cleared per call), inputs rotated to >= 4x L2"
              + ("; one CUDA graph replayed (one call per input set), time per call" if cuda_graph else
                 "; eager calls (Python and launch overhead included, for both sides)"),
              "rows": rows}
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {json_path}")
    return result


def run_cpu_check():
    """No GPU: a small interpreter check in a subprocess (the interpreter must be on before
    Triton decorates the kernels), then the static compile summary for the three targets."""
    print("No GPU found: `gemmkit bench` needs a CUDA GPU to time kernels.")
    print("Running instead: (1) an interpreter check of gemm_a16w16, (2) the static compile summary.\n")
    env = dict(os.environ, TRITON_INTERPRET="1")
    code = "from gemmkit.bench.cpu_check import main; main()"
    rc = subprocess.run([sys.executable, "-c", code], env=env).returncode
    print()
    from gemmkit.isa.report import print_summary

    ok = print_summary("all")
    return 0 if rc == 0 and ok else 1


def parse_shapes(shape_args):
    return [parse_shape(s) for s in shape_args] if shape_args else default_suite()
