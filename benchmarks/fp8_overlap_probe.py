"""Probe: does keeping a wgmma chain in flight while promoting (kernels/gluon/hopper_pingpong_fp8_overlap.py)
beat the shipped FP8 Gluon kernel (hopper_pingpong_fp8.py) and torch._scaled_mm precise?

  1. correctness: every PROBE_CFGS config on ragged shapes (K not a multiple of BK, odd and even K-step
     counts, 1 K step, 1- and 3-SM grids), NaN-poisoned bf16 and fp32 outputs, vs float64 on the
     dequantized operands; stops (exit 1) on a failure before any timing.
  2. 4096^3 and 8192^3: _scaled_mm precise (rowwise scales, use_fast_accum=False) timed first and last,
     fast accum, the shipped kernel (128x128x128 / 3 and / 2), every overlap config; CUDA-graph timing,
     inputs rotated (gemmkit.bench.timing); fp32-out error vs float64 at 8192^3 for each kernel.
Writes the DESIGN.md results format. Usage: PYTHONPATH=. python benchmarks/fp8_overlap_probe.py OUT.json
"""
import datetime
import json
import os
import subprocess
import sys

import torch

from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as base
from gemmkit.kernels.gluon import hopper_pingpong_fp8_overlap as ov
from gemmkit.ops import _common as C

SHIPPED = [("shipped-128x128x128/s3", {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                                       "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 3}),
           ("shipped-128x128x128/s2", {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                                       "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 2})]
CHECK_SHAPES = [(300, 392, 272, None), (520, 264, 1040, 3), (129, 136, 16, None), (1000, 1000, 1024, None),
                (2048, 2048, 2048, None), (4095, 520, 784, 1)]


def _inputs(M, N, K):
    x = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    w = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
    return x, w, torch.rand(M, device="cuda") + 0.1, torch.rand(N, device="cuda") + 0.1


def _ref(x, w, xs, ws):
    return (x.double() @ w.double().T) * xs.double()[:, None] * ws.double()[None, :]


def _runner(kind, cfg, target, out_dtype=torch.bfloat16):
    def f(x, w, xs, ws):
        y = torch.empty(x.shape[0], w.shape[0], device="cuda", dtype=out_dtype)
        if kind == "shipped":
            base.launch(x, w, xs, ws, None, y, cfg, target)
        elif kind == "overlap":
            ov.launch(x, w, xs, ws, y, cfg, target)
        else:
            y = torch._scaled_mm(x, w.T, scale_a=xs[:, None], scale_b=ws[None, :], out_dtype=out_dtype,
                                 use_fast_accum=(kind == "fast"))
        return y
    return f


def _rel(y, ref):
    return ((y.double() - ref).norm() / ref.norm()).item()


def correctness(target, log):
    """Every overlap config (and the shipped kernel, for comparison) on CHECK_SHAPES, bf16 and fp32 out.
    Pass: all finite, ||y - ref|| / ||ref|| under 2e-4 (fp32) / 6e-3 (bf16), and per element
    |y - ref| <= tol * (|ref| + rms(ref)), tol 5e-3 (fp32: the tensor cores' fp8 adder carries up to 128
    products, ~1e-3 of rms at the tail, measured in run 1) / 2e-2 (bf16): a wrong or unwritten tile is O(1)."""
    ok = True
    cfgs = [(nm, "overlap", c) for nm, c in ov.PROBE_CFGS] + [(SHIPPED[0][0], "shipped", SHIPPED[0][1])]
    for name, kind, cfg in cfgs:
        for M, N, K, cus in CHECK_SHAPES:
            x, w, xs, ws = _inputs(M, N, K)
            ref = _ref(x, w, xs, ws)
            scale = ref.abs() + ref.pow(2).mean().sqrt()
            for dt, tol, ntol in ((torch.float32, 5e-3, 2e-4), (torch.bfloat16, 2e-2, 6e-3)):
                y = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
                t = target.with_cus(cus) if cus else target
                if kind == "overlap":
                    ov.launch(x, w, xs, ws, y, cfg, t)
                else:
                    base.launch(x, w, xs, ws, None, y, cfg, t)
                torch.cuda.synchronize()
                rel = _rel(y, ref)
                finite = bool(torch.isfinite(y).all())
                elem = ((y.double() - ref).abs() / scale).max().item()
                good = finite and elem <= tol and rel < ntol
                ok &= good
                log.append({"config": name, "M": M, "N": N, "K": K, "cus": cus, "out": str(dt), "rel": rel,
                            "finite": finite, "max_elem_err_over_abs_plus_rms": elem, "ok": good})
                print(f"check {name:<22} {M:>5} {N:>5} {K:>5} cus={cus} {str(dt):<15} rel {rel:.3e} finite {finite} "
                      f"elem {elem:.2e} {'ok' if good else 'FAIL'}", flush=True)
    return ok


def squares(target, rows):
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        flops = 2 * M * N * K
        n = rotation_count(M * K + N * K + 2 * M * N, target.l2_bytes, 8)
        sets = [_inputs(M, N, K) for _ in range(n)]
        kinds = [("torch._scaled_mm precise", "precise", None), ("torch._scaled_mm fast_accum", "fast", None)]
        kinds += [(nm, "shipped", c) for nm, c in SHIPPED] + [(nm, "overlap", c) for nm, c in ov.PROBE_CFGS]
        kinds += [("torch._scaled_mm precise (repeat)", "precise", None)]
        ref_ms = None
        x, w, xs, ws = sets[0]
        ref64 = _ref(x, w, xs, ws) if M == 8192 else None
        for name, kind, cfg in kinds:
            try:
                ms = time_graph(_runner(kind, cfg, target), sets, rep_ms=150)
            except Exception as e:  # noqa: BLE001 (a config that fails is a row with an error)
                rows.append({"op": "a8w8", "M": M, "N": N, "K": K, "backend": name, "error": f"{type(e).__name__}: "
                             f"{str(e)[:300]}"})
                print("ERROR", name, rows[-1]["error"], flush=True)
                continue
            if ref_ms is None:
                ref_ms = ms
            row = {"op": "a8w8", "M": M, "N": N, "K": K, "dtype": "fp8", "backend": name, "config": cfg, "ms": ms,
                   "tflops": flops / ms / 1e9, "gbps": (M * K + N * K + 2 * M * N) / ms / 1e6,
                   "ref_impl": "torch._scaled_mm rowwise, fast accum off (first timing)", "ref_ms": ref_ms,
                   "ref_tflops": flops / ref_ms / 1e9, "ratio": ref_ms / ms}
            if ref64 is not None and "repeat" not in name:
                y = _runner(kind, cfg, target, torch.float32)(x, w, xs, ws)
                row["rel_err_fp32_out"] = _rel(y, ref64)
                del y
            rows.append(row)
            print(f"{M:>5} {name:<36} {row['tflops']:7.1f} TFLOP/s  {row['ratio']:.3f}x"
                  + (f"  err {row['rel_err_fp32_out']:.3e}" if "rel_err_fp32_out" in row else ""), flush=True)
        del sets, ref64
        torch.cuda.empty_cache()


def main(path):
    target = C.target_for(torch.device("cuda"))
    import triton

    clock = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True).stdout.strip()
    checks, rows = [], []
    out = {"device": torch.cuda.get_device_name(), "sm_clock_mhz": clock, "torch": torch.__version__.split("+")[0],
           "triton": triton.__version__, "date": datetime.date.today().isoformat(),
           "git_sha": os.environ.get("GEMMKIT_GIT_SHA", "unknown"), "timing": "cuda graph, inputs rotated",
           "checks": checks, "rows": rows}
    try:
        if not correctness(target, checks):
            print("correctness FAILED: no timing", flush=True)
            return 1
        squares(target, rows)
    finally:
        json.dump(out, open(path, "w"), indent=1)
    print("\nsummary (ratio = first _scaled_mm precise ms / ms):")
    for r in rows:
        if "ms" in r:
            print(f"{r['M']:>5} {r['backend']:<36} {r['tflops']:7.1f}  {r['ratio']:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
