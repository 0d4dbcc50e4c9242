"""The Gluon FP8 kernel's cooperative layout (num_warps 8: one 128 x BN tile per CTA work item, a 64-row
half per consumer warpgroup, one ring; kernels/gluon/hopper_pingpong_fp8.py) against what ships, in one
process, CUDA-graph timing with rotated inputs (benchmarks/a8w8_gluon.py's helpers):

  blockscale  gemm_a8w8_blockscale on DeepSeek-V3's dense (N, K) at M = 64 / 128 / 4096 (all 18 rows):
              bf16 torch.matmul (issue 4's bar), the table config (config=None's pick), COOP_BLOCK
              (each output compared with the table config's: rel_diff_vs_table).
  squares     gemm_a8w8 (per-token x per-channel) at 4096^3 and 8192^3: torch._scaled_mm precise and fast
              accum, the table config, the shipped pingpong 128 x 128 configs and COOP_ROWCOL, fp32-out
              error vs float64 for each; _scaled_mm again last (the noise floor).
  models      llama3-70b at M = 256 / 1024 / 4096: _scaled_mm precise, the table config, the best coop
              config of `squares`.
  loader_ab   (--ab BEFORE.py) block mode at M = 4096 on the six shapes (and M = 128 on two): the kernel
              module in BEFORE.py (a copy of hopper_pingpong_fp8.py before a change) against the current
              one, launched directly (launch(), same configs, same inputs), alternating before / after;
              plus rowcol coop vs the table config on the model rows where coop measured faster before.
Each section is saved as it completes (a timeout keeps what was measured).
Usage on the GPU: PYTHONPATH=. python benchmarks/blockscale_coop.py OUT.json [--no-models] [--no-squares]
                  [--ab BEFORE.py]
"""
import datetime
import json
import os
import statistics
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import a8w8_gluon as A  # noqa: E402

from gemmkit.ops import _common as C  # noqa: E402

_cfg = A._cfg
# Block mode: 5 slots is the most that fit (33280 B a slot beside the two 64 x 128 bf16 halves): s6 = s5.
COOP_BLOCK = [_cfg(128, 128, 128, 5, 8, warps=8), _cfg(128, 128, 128, 4, 8, warps=8),
              _cfg(128, 128, 128, 3, 8, warps=8), _cfg(128, 128, 128, 5, 16, warps=8)]
SHIPPED_ROWCOL = [_cfg(128, 128, 128, 3), _cfg(128, 128, 128, 2)]
COOP_ROWCOL = [_cfg(128, 128, 128, 6, 8, warps=8), _cfg(128, 128, 128, 4, 8, warps=8),
               _cfg(128, 128, 128, 6, 16, warps=8)]


def _load_before(path):
    """The kernel module at `path` as gemmkit.kernels.gluon.<stem> (its relative imports resolve)."""
    import importlib.util

    name = "gemmkit.kernels.gluon." + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


AB_ROUNDS = 3  # loader_ab: before / after / rowcol alternated, median of the rounds
AB_CFGS = [_cfg(128, 128, 128, 4, 8, warps=8), _cfg(128, 128, 128, 5, 16, warps=8), _cfg(64, 128, 128, 4)]
AB_ROWCOL = [(1024, 10240, 8192), (4096, 8192, 8192), (256, 8192, 28672), (256, 57344, 8192)]


def loader_ab(target, rows, before_path, save):
    import gemmkit
    from gemmkit.bench.ops import get
    from gemmkit.bench.timing import rotation_count
    from gemmkit.kernels.gluon import hopper_pingpong_fp8 as after

    before = _load_before(before_path)
    bop = get("a8w8_blockscale")
    shapes = [(4096, N, K) for N, K in A.DSV3] + [(128, 7168, 16384), (128, 4096, 7168)]
    for M, N, K in shapes:
        flops = 2 * M * N * K
        n = rotation_count(M * K + N * K + 2 * M * N, target.l2_bytes, 4)
        sets = [bop.inputs(M, N, K, "fp8", torch.device("cuda"))[:4] for _ in range(n)]
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        xs_r = torch.rand(M, device="cuda") / 16 + 1e-3  # rowcol scales: the same tile's ceiling without block scales
        ws_r = torch.rand(N, device="cuda") / 16 + 1e-3
        for cfg in AB_CFGS:
            res = {"before": [], "after": [], "rowcol": []}
            for rnd in range(AB_ROUNDS):  # alternate the order each round; median per side
                order = ("before", "after", "rowcol") if rnd % 2 == 0 else ("rowcol", "after", "before")
                for label in order:
                    mod = before if label == "before" else after
                    if label == "rowcol":
                        fn = lambda x, w, xs, ws, m=mod, c=cfg: m.launch(x, w, xs_r, ws_r, None, y, c, target)  # noqa
                    else:
                        fn = lambda x, w, xs, ws, m=mod, c=cfg: m.launch(x, w, xs, ws, None, y, c, target,  # noqa
                                                                          block_shape=(128, 128))
                    ms, err = A._time(fn, sets, 40)
                    res[label].append(ms)
            if any(None in v for v in res.values()):
                rows.append({"op": "a8w8_blockscale", "section": "loader_ab", "M": M, "N": N, "K": K, "config": cfg,
                             "error": "a launch failed", "ms": res})
                continue
            b, a, r = (statistics.median(res[k]) for k in ("before", "after", "rowcol"))
            rows.append({"op": "a8w8_blockscale", "section": "loader_ab", "M": M, "N": N, "K": K, "config": cfg,
                         "ms_before": res["before"], "ms_after": res["after"], "ms_rowcol": res["rowcol"],
                         "tflops_before": flops / b / 1e9, "tflops_after": flops / a / 1e9,
                         "tflops_rowcol": flops / r / 1e9, "speedup": b / a, "after_vs_rowcol": r / a})
            print(f"ab {M:>5} {N:>6} {K:>6} {A._tag(cfg):<24} before {flops / b / 1e9:7.1f} TF after "
                  f"{flops / a / 1e9:7.1f} TF  x{b / a:.3f}  rowcol {flops / r / 1e9:7.1f} TF  (ms before "
                  f"{'/'.join(f'{v:.4f}' for v in res['before'])} after {'/'.join(f'{v:.4f}' for v in res['after'])})",
                  flush=True)
        del sets
        torch.cuda.empty_cache()
        save()
    # rowcol: coop vs the table config again where coop measured faster in the first run
    for M, N, K in AB_ROWCOL:
        sets = A._sets(M, N, K, target, cap=4)
        table_cfg, _src = C.resolve_config("a8w8", "", target, M, N, K)
        coop = _cfg(128, 128, 128, 4, 8, warps=8)
        ms = {}
        for label, cfg in (("table", table_cfg), ("coop", coop), ("table2", table_cfg), ("coop2", coop)):
            ms[label], _ = A._time(lambda x, w, xs, ws, c=cfg: gemmkit.gemm_a8w8(x, w, xs, ws, config=c), sets, 60)
        ref_ms, _ = A._time(A._vendor(False), sets, 60)
        t, c = min(ms["table"], ms["table2"]), min(ms["coop"], ms["coop2"])
        flops = 2 * M * N * K
        rows.append({"op": "a8w8", "section": "rowcol_ab", "M": M, "N": N, "K": K, "table_config": table_cfg,
                     "config": coop, "ms_table": [ms["table"], ms["table2"]], "ms_coop": [ms["coop"], ms["coop2"]],
                     "ref_ms": ref_ms, "tflops_table": flops / t / 1e9, "tflops_coop": flops / c / 1e9,
                     "ratio_table": ref_ms / t, "ratio_coop": ref_ms / c})
        print(f"rowcol ab {M:>5} {N:>6} {K:>6} table {A._tag(table_cfg)} {flops / t / 1e9:7.1f} TF ({ref_ms / t:.3f}x) "
              f"coop {flops / c / 1e9:7.1f} TF ({ref_ms / c:.3f}x)", flush=True)
        del sets
        torch.cuda.empty_cache()
        save()


def main(path, with_models=True, with_squares=True, before=None):
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
           "note": "coop = num_warps 8 (cooperative layout); 'table ...' rows = config=None's pick", "rows": rows}
    save = lambda: json.dump(out, open(path, "w"), indent=1)  # noqa: E731
    try:
        if before:
            loader_ab(target, rows, before, save)
        A.blockscale(target, rows, save, cfgs=COOP_BLOCK, rep_ms=40)
        save()
        if with_squares:
            ranked = A.squares(target, rows, cfgs=SHIPPED_ROWCOL + COOP_ROWCOL, rep_ms=60)
            save()
            coop = [c for c in ranked if c["num_warps"] == 8][:1]
            if with_models and coop:
                A.models(target, rows, coop, save)
    finally:
        save()
    print("\nsummary a8w8 (ratio = _scaled_mm precise ms / ms):")
    for r in rows:
        if r.get("op") == "a8w8" and "ratio" in r and r["backend"].startswith(("table", "gluon")):
            print(f"{r['M']:>5} {r['N']:>6} {r['K']:>6} {r['backend']:<13} {A._tag(r['config']):<24} "
                  f"{r['tflops']:7.1f} TF {r['ratio']:.3f}x" +
                  (f" err {r['rel_err_fp32_out']:.3g}" if "rel_err_fp32_out" in r else ""))
    print("\nsummary blockscale (ratio = bf16 torch.matmul ms / ms), best per row:")
    best = {}
    for r in rows:
        if r.get("op") == "a8w8_blockscale" and "ratio" in r:
            key = (r["M"], r["N"], r["K"])
            if r["backend"].startswith("table"):
                best.setdefault(key, {})["table"] = r
            elif key not in best or r["tflops"] > best[key].get("coop", {"tflops": 0})["tflops"]:
                best.setdefault(key, {})["coop"] = r
    for (M, N, K), d in best.items():
        t, c = d.get("table"), d.get("coop")
        print(f"{M:>5} {N:>6} {K:>6} table {t and t['tflops'] or 0:7.1f} TF {t and t['ratio'] or 0:.3f}x | best coop "
              f"{c and A._tag(c['config']) or '-':<24} {c and c['tflops'] or 0:7.1f} TF {c and c['ratio'] or 0:.3f}x")


if __name__ == "__main__":
    main(sys.argv[1], "--no-models" not in sys.argv, "--no-squares" not in sys.argv,
         sys.argv[sys.argv.index("--ab") + 1] if "--ab" in sys.argv else None)
