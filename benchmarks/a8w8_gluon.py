"""The Gluon FP8 kernel (kernels/gluon/hopper_pingpong_fp8.py) against torch._scaled_mm (rowwise scales,
use_fast_accum=False: cuBLASLt's precise mode) and the Triton tier's table config, in one process.

  squares   4096^3 and 8192^3: every config in GLUON_CFGS, the Triton tier, _scaled_mm precise and
            fast-accum; each also with fp32 out against float64 (the precision check).
  models    llama3-70b layers at M = 256 / 1024 / 4096 (gemmkit/bench/model_configs.json): _scaled_mm
            precise, the Triton tier (table), the best square Gluon config and the 64 x 128 one.
  blockscale  (--blockscale) gemm_a8w8_blockscale on DeepSeek-V3's dense (N, K) at M = 64 / 128 / 4096
            (issue 4): bf16 torch.matmul (the issue's bar), the table config (config=None's pick: the
            row's backend says "table triton" or "table gluon") and the Gluon kernel's block-scale mode in
            BLOCKSCALE_CFGS; each Gluon output is compared with the table config's (rel_diff_vs_table:
            both within bf16 rounding of each other).
The cooperative layout (num_warps 8) is compared in benchmarks/blockscale_coop.py, which reuses these.
CUDA-graph timing, inputs rotated (gemmkit.bench.timing). Writes the DESIGN.md results format.
Usage on the GPU: PYTHONPATH=. python benchmarks/a8w8_gluon.py OUT.json [--squares-only | --blockscale]
"""
import datetime
import json
import os
import subprocess
import sys

import torch

import gemmkit
from gemmkit.bench.ops import get
from gemmkit.bench.suite import model_suite
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C


def _cfg(bm, bn, bk, stages, group=8, warps=4):
    """A "backend": "gluon" config; warps 8 is the cooperative layout (kernels/gluon/hopper_pingpong_fp8.py)."""
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group, "num_warps": warps,
            "num_stages": stages, "backend": "gluon"}


GLUON_CFGS = [_cfg(128, 128, 128, 3), _cfg(128, 128, 128, 2), _cfg(128, 128, 128, 3, 16), _cfg(128, 128, 64, 6),
              _cfg(64, 128, 128, 4), _cfg(128, 64, 128, 4)]


def _vendor(fast):
    def f(x, w, xs, ws):
        return torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16, use_fast_accum=fast)
    return f


def _rel64(y, x, w, xs, ws):
    ref = (x.float().double() @ w.float().double().T) * xs.double() * ws.double()
    return ((y.double() - ref).norm() / ref.norm()).item()


def _row(M, N, K, backend, cfg, ms, ref_ms, extra=None):
    flops, nbytes = 2 * M * N * K, M * K + N * K + 2 * M * N
    r = {"op": "a8w8", "M": M, "N": N, "K": K, "dtype": "fp8", "backend": backend, "config": cfg, "ms": ms,
         "tflops": flops / ms / 1e9, "gbps": nbytes / ms / 1e6, "ref_impl": "torch._scaled_mm rowwise, fast accum off",
         "ref_ms": ref_ms, "ref_tflops": flops / ref_ms / 1e9, "ratio": ref_ms / ms}
    r.update(extra or {})
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "config"},
                     sort_keys=False), cfg and {k: cfg[k] for k in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K",
                                                                       "GROUP_SIZE_M", "num_stages") if k in cfg},
          flush=True)
    return r


def _sets(M, N, K, target, cap=8):
    bop = get("a8w8")
    n = rotation_count(M * K + N * K + 2 * M * N, target.l2_bytes, cap)
    return [bop.inputs(M, N, K, "fp8", torch.device("cuda")) for _ in range(n)]


def _time(fn, sets, rep_ms):
    try:
        return time_graph(fn, sets, rep_ms=rep_ms), None
    except Exception as e:  # a config that cannot compile or run is a row with an error, not a crash
        return None, f"{type(e).__name__}: {str(e)[:300]}"


def _tag(cfg):
    return (f"{'coop ' if cfg.get('num_warps') == 8 and cfg.get('backend') == 'gluon' else ''}{cfg['BLOCK_SIZE_M']}x"
            f"{cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']}/s{cfg['num_stages']}/g{cfg['GROUP_SIZE_M']}")


def squares(target, rows, cfgs=None, rep_ms=100):
    best = {}
    cfgs = GLUON_CFGS if cfgs is None else cfgs
    for M, N, K in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        sets = _sets(M, N, K, target)
        x, w, xs, ws = sets[0]
        ref_ms, _ = _time(_vendor(False), sets, rep_ms)
        fast_ms, _ = _time(_vendor(True), sets, rep_ms)
        y = torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.float32, use_fast_accum=False)
        rows.append(_row(M, N, K, "torch._scaled_mm precise", None, ref_ms, ref_ms,
                         {"rel_err_fp32_out": _rel64(y, x, w, xs, ws)}))
        y = torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.float32, use_fast_accum=True)
        rows.append(_row(M, N, K, "torch._scaled_mm fast_accum", None, fast_ms, ref_ms,
                         {"rel_err_fp32_out": _rel64(y, x, w, xs, ws)}))
        table_cfg, _src = C.resolve_config("a8w8", "", target, M, N, K)
        table = "table " + table_cfg.get("backend", "triton")  # the op's own pick (config=None)
        for backend, cfg in [(table, table_cfg)] + [("gluon", c) for c in cfgs]:
            try:
                ms = time_graph(lambda x, w, xs, ws, c=cfg: gemmkit.gemm_a8w8(x, w, xs, ws, config=c), sets,
                                rep_ms=rep_ms)
                y = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32, config=cfg)
                err = _rel64(y, x, w, xs, ws)
                del y
            except Exception as e:  # a config that cannot compile or run is a row with an error
                rows.append({"op": "a8w8", "M": M, "N": N, "K": K, "backend": backend, "config": cfg,
                             "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print("ERROR", backend, cfg, rows[-1]["error"], flush=True)
                continue
            rows.append(_row(M, N, K, backend, cfg, ms, ref_ms, {"rel_err_fp32_out": err}))
            if backend == "gluon":
                key = json.dumps(cfg, sort_keys=True)
                best[key] = best.get(key, 0.0) + ref_ms / ms
        # The vendor again at the end: the spread of two timings of one version (noise floor).
        ref2_ms, _ = _time(_vendor(False), sets, rep_ms)
        rows.append(_row(M, N, K, "torch._scaled_mm precise (repeat)", None, ref2_ms, ref_ms))
        del sets
        torch.cuda.empty_cache()
    ranked = sorted(best, key=best.get, reverse=True)
    return [json.loads(k) for k in ranked]


def models(target, rows, gluon_cfgs, save=lambda: None):
    for label, M, N, K in model_suite(["llama3-70b"], [256, 1024, 4096]):
        sets = _sets(M, N, K, target, cap=4)
        ref_ms, _ = _time(_vendor(False), sets, 60)
        table_cfg, _src = C.resolve_config("a8w8", "", target, M, N, K)
        table = "table " + table_cfg.get("backend", "triton")
        for backend, cfg in [(table, table_cfg)] + [("gluon", c) for c in gluon_cfgs if c != table_cfg]:
            ms, err = _time(lambda x, w, xs, ws, c=cfg: gemmkit.gemm_a8w8(x, w, xs, ws, config=c), sets, 60)
            if ms is None:
                rows.append({"op": "a8w8", "M": M, "N": N, "K": K, "backend": backend, "config": cfg, "error": err})
                continue
            rows.append(_row(M, N, K, backend, cfg, ms, ref_ms, {"label": label}))
        del sets
        torch.cuda.empty_cache()
        save()


BLOCKSCALE_CFGS = [_cfg(64, 128, 128, 4), _cfg(64, 64, 128, 6, 4), _cfg(128, 128, 128, 2)]
DSV3 = [(2112, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]


def blockscale(target, rows, save=lambda: None, cfgs=None, rep_ms=60):
    """Every DSV3 row: bf16 torch.matmul, the table config (config=None's pick), then `cfgs`."""
    cfgs = BLOCKSCALE_CFGS if cfgs is None else cfgs
    bop = get("a8w8_blockscale")
    for N, K in DSV3:
        for M in (64, 128, 4096):
            flops = 2 * M * N * K
            n = rotation_count(M * K + N * K + 2 * M * N, target.l2_bytes, 4)
            sets = [bop.inputs(M, N, K, "fp8", torch.device("cuda")) for _ in range(n)]
            ref_ms, _ = _time(lambda x, w, xs, ws, xb, wb: torch.matmul(xb, wb.T), sets, rep_ms)
            table_cfg, _src = C.resolve_config("a8w8_blockscale", "", target, M, N, K)
            table = "table " + table_cfg.get("backend", "triton")  # the op's own pick (config=None)
            y_t = None
            for backend, cfg in [(table, table_cfg)] + [("gluon", c) for c in cfgs]:
                fn = lambda x, w, xs, ws, xb, wb, c=cfg: gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, config=c)  # noqa
                ms, err = _time(fn, sets, rep_ms)
                if ms is None:
                    rows.append({"op": "a8w8_blockscale", "M": M, "N": N, "K": K, "backend": backend, "config": cfg,
                                 "error": err})
                    print("ERROR", M, N, K, backend, err, flush=True)
                    continue
                y = fn(*sets[0]).float()
                if y_t is None:
                    y_t, extra = y, {}
                else:
                    extra = {"rel_diff_vs_table": ((y - y_t).norm() / y_t.norm()).item()}
                r = {"op": "a8w8_blockscale", "M": M, "N": N, "K": K, "dtype": "fp8", "backend": backend,
                     "config": cfg, "ms": ms, "tflops": flops / ms / 1e9,
                     "gbps": (M * K + N * K + 2 * M * N) / ms / 1e6, "ref_impl": "torch.matmul bf16",
                     "ref_ms": ref_ms, "ref_tflops": flops / ref_ms / 1e9, "ratio": ref_ms / ms, **extra}
                rows.append(r)
                print(f"{M:>5} {N:>6} {K:>6} {backend:<13} {_tag(cfg):<24} {r['tflops']:7.1f} TF  bf16 "
                      f"{r['ref_tflops']:7.1f} TF  {r['ratio']:.3f}x" +
                      (f"  diff {extra['rel_diff_vs_table']:.2g}" if extra else ""), flush=True)
            del sets, y_t
            torch.cuda.empty_cache()
            save()  # a timeout keeps what was measured


def main(path, squares_only=False, blockscale_only=False):
    torch.backends.cuda.matmul.allow_tf32 = False
    target = C.target_for(torch.device("cuda"))
    try:
        clock = int(subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                                   capture_output=True, text=True).stdout.split()[0])
    except Exception:
        clock = None
    import triton

    rows = []
    out = {"device": torch.cuda.get_device_name(), "sm_clock_mhz": clock, "torch": torch.__version__.split("+")[0],
           "triton": triton.__version__, "date": datetime.date.today().isoformat(),
           "git_sha": os.environ.get("GEMMKIT_GIT_SHA", "unknown"), "timing": "cuda graph, inputs rotated",
           "rows": rows}
    if blockscale_only:
        try:
            blockscale(target, rows, lambda: json.dump(out, open(path, "w"), indent=1))
        finally:
            json.dump(out, open(path, "w"), indent=1)
        return
    try:
        ranked = squares(target, rows)
        json.dump(out, open(path, "w"), indent=1)
        if not squares_only:
            small = [c for c in ranked if c["BLOCK_SIZE_M"] == 64][:1]
            models(target, rows, ranked[:1] + [c for c in small if c not in ranked[:1]])
    finally:
        json.dump(out, open(path, "w"), indent=1)
    print("\nsummary (ratio = _scaled_mm precise ms / ms):")
    for r in rows:
        if "ratio" in r and r["backend"].startswith(("table", "gluon")):
            c = r["config"]
            print(f"{r['M']:>5} {r['N']:>6} {r['K']:>6} {r['backend']:<7} {c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x"
                  f"{c['BLOCK_SIZE_K']}/s{c['num_stages']}/g{c['GROUP_SIZE_M']} {r['tflops']:7.1f} TF "
                  f"{r['ratio']:.3f}x" + (f" err {r['rel_err_fp32_out']:.3g}" if "rel_err_fp32_out" in r else ""))


if __name__ == "__main__":
    main(sys.argv[1], "--squares-only" in sys.argv, "--blockscale" in sys.argv)
