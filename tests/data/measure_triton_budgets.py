"""Measure what the installed Triton's compiler does with gemmkit's kernels, without gemmkit's budget rules
(kernels/_budgets.py), and print it as one release's entry of tests/data/triton_budgets.json.

    GEMMKIT_ALLOW_UNSUPPORTED_TRITON=1 PYTHONPATH=. /path/to/venv-with-triton-X/bin/python \\
        tests/data/measure_triton_budgets.py > /tmp/X.json          (30-60 minutes on 2 cores)

What it measures (GEMMKIT_BUDGETS_OFF=1: every rule answers as on Triton 3.6):
  isa        every `gemmkit isa --arch all --op all` case that fails to compile, spills, or needs more shared
             memory than its bound (kernel, case, spill_bytes, lds_bytes, smem_bound)
  epilogues  every Hopper Gluon static case whose accumulator fills the consumer's 128 registers
             (_budgets.FULL_ACC_REGS), compiled with each fused epilogue the op can ask for (16-bit kernels:
             bias or not x none / relu / gelu / gelu_tanh / silu; the fp8 kernel: bias or not), and its spill bytes
  gated      the Gluon gated tiles (hopper_coop / hopper_pingpong GATED_PRESETS, the full-accumulator ones and the
             others), each with every activation on the gate (no bias) into a bf16 and an fp32 h, and its spill bytes
             (`--only gated`: this part alone, a few minutes)
The entries in triton_budgets.json were measured this way on Triton 3.6.0, 3.7.1, 3.8.0 and 3.9.0
(tests/kernels/test_budgets.py reads them).
"""
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

os.environ["GEMMKIT_BUDGETS_OFF"] = "1"
os.environ["TRITON_INTERPRET"] = "0"

STATIC_SPEC = {
    "hopper_pingpong_kernel": "gemmkit.kernels.gluon.hopper_pingpong",
    "hopper_coop_kernel": "gemmkit.kernels.gluon.hopper_coop",
    "hopper_pingpong_batched_kernel": "gemmkit.kernels.gluon.hopper_pingpong_batched",
    "hopper_coop_batched_kernel": "gemmkit.kernels.gluon.hopper_pingpong_batched",
    "hopper_pingpong_fp8_kernel": "gemmkit.kernels.gluon.hopper_pingpong_fp8",
}
TILE = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")


def epilogue_jobs(cases):
    from gemmkit.kernels import _budgets

    jobs, seen = [], set()
    for c in cases:
        if c["kernel"] not in STATIC_SPEC or c["config"].get("swap_ab") or c["config"].get("NUM_KSPLIT", 1) > 1:
            continue
        if _budgets.consumer_acc_regs(c["config"]) < _budgets.FULL_ACC_REGS or "block" in c["path"]:
            continue
        out = c["path"].split("-")[-1]
        tile = {k: c["config"][k] for k in TILE}
        key = (c["kernel"], json.dumps(tile, sort_keys=True), out)
        if key in seen:
            continue
        seen.add(key)
        if c["kernel"] == "hopper_pingpong_fp8_kernel":
            epis = [(True, "none"), (False, "none")]
        else:
            epis = [(b, a) for b in (True, False) for a in _budgets.GLUON_ACTIVATIONS]
        jobs += [dict(kernel=c["kernel"], config=tile, out=out, has_bias=b, activation=a) for b, a in epis]
    return jobs


GATED_MODULES = ("gemmkit.kernels.gluon.hopper_coop", "gemmkit.kernels.gluon.hopper_pingpong")


def gated_jobs():
    import importlib

    from gemmkit.kernels import _budgets

    return [dict(kernel=mod.KERNEL_NAME, config={k: cfg[k] for k in TILE}, out=out, has_bias=False, activation=act,
                 gated=True)
            for mod in map(importlib.import_module, GATED_MODULES) for cfg in mod.GATED_PRESETS
            for out in ("bf16", "fp32") for _b, act in _budgets.GATED_EPILOGUE_ORDER]


def compile_epilogue(job):
    import importlib

    from gemmkit import arch
    from gemmkit.isa import compile_static, resources

    target = arch.ARCHS["sm_90"]
    mod = importlib.import_module(STATIC_SPEC[job["kernel"]])
    kw = dict(out_dtype=job["out"], has_bias=job["has_bias"])
    if job["kernel"] != "hopper_pingpong_fp8_kernel":
        kw["activation"] = job["activation"]
    if job.get("gated"):
        kw["gated"] = True
    kernel, sig, ce, div, opts, _plan = mod.static_spec(job["config"], target, **kw)
    return dict(job, spill_bytes=resources(compile_static(kernel, sig, ce, target, opts, div), target)["spill_bytes"])


def main():
    import triton

    from gemmkit.isa.report import OPS, collect, static_cases

    def columns(measured):  # triton_budgets.json's "epilogue_columns"
        return [[e["kernel"], *(e["config"][k] for k in TILE), e["out"], e["has_bias"], e["activation"],
                 e["spill_bytes"]] for e in measured]

    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        gated = columns(pool.map(compile_epilogue, gated_jobs()))
    if sys.argv[1:] == ["--only", "gated"]:
        json.dump({triton.__version__: {"gated": gated}}, sys.stdout, indent=1)
        return
    with tempfile.TemporaryDirectory() as cache:
        os.environ["GEMMKIT_CACHE_DIR"] = cache
        rows = collect("all")
    cases_keys = {k for op in OPS for c in static_cases(op) for k in c}  # a row = its case + the metrics
    isa = [dict({k: v for k, v in r.items() if k in cases_keys}, spill_bytes=r.get("spill_bytes"),
                lds_bytes=r.get("lds_bytes"), smem_bound=r.get("smem_bound"),
                **({"error": r["error"][:200]} if "error" in r else {}))
           for r in rows if not r["ok"] or r["spill_bytes"] > 0 or 0 < r["smem_bound"] < r["lds_bytes"]]
    cases = [c for op in OPS for c in static_cases(op, ["sm_90"])]
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        epilogues = columns(pool.map(compile_epilogue, epilogue_jobs(cases)))
    json.dump({triton.__version__: {"cases": len(rows), "isa": isa, "epilogues": epilogues, "gated": gated}},
              sys.stdout, indent=1)


if __name__ == "__main__":
    main()
