"""The coop FP8 kernel's tail split (kernels/gluon/hopper_host.tail_split) on and off, in one process.

For each row the table's config (config=None's pick) is launched through the kernel (hopper_pingpong_fp8.launch)
three ways, alternated over ROUNDS rounds with the vendor between them, CUDA-graph timing with rotated inputs
(gemmkit.bench.timing), median per variant:

  off    tail=False: every tile whole (the kernel before the tail split)
  on     tail=True: the last partial round split along K wherever tail_split can (2+ splits fit)
  rule   tail=None: what the op runs (on where K >= MIN_TAIL_K)

block: gemm_a8w8_blockscale's DeepSeek-V3 rows (vendor: bf16 torch.matmul, issue 4's bar);
rowcol: gemm_a8w8's squares and Llama-3-70B rows (vendor: torch._scaled_mm rowwise, fast accum off).
Rows whose table config is not the coop Gluon kernel are skipped (listed). Each output is checked against
the "off" output (rel_diff: bf16 rounding apart at most). The JSON holds device, date, versions and git sha.
Usage on the GPU: PYTHONPATH=. python benchmarks/tail_split_ab.py OUT.json [--quick]
"""
import datetime
import json
import os
import statistics
import sys

import torch

from gemmkit import arch
from gemmkit.bench import git_sha
from gemmkit.bench.ops import get
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k
from gemmkit.ops import _common as C

ROUNDS = 3
BLOCK_ROWS = [(M, N, K) for M in (4096, 8192) for N, K in ((2112, 7168), (24576, 1536), (32768, 512),
                                                              (7168, 16384), (4096, 7168), (7168, 2048))]
L70 = ((10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672))
ROWCOL_ROWS = [(4096, 4096, 4096), (8192, 8192, 8192)] + [(M, N, K) for M in (256, 1024, 2048, 4096) for N, K in L70]


def _variants(op, M, N, K, target):
    """(vendor fn, {variant: fn}, input sets, cfg) of one row, or None when the table does not run the coop kernel."""
    cfg, source = C.resolve_config("a8w8_blockscale" if op == "block" else "a8w8", None, target, M, N, K)
    if cfg.get("backend") != "gluon" or cfg.get("num_warps") != 8:
        return None, source
    bop = get("a8w8_blockscale" if op == "block" else "a8w8")
    per_set = M * K + N * K + 2 * M * N
    sets = [bop.inputs(M, N, K, "fp8", torch.device("cuda")) for _ in range(rotation_count(per_set, target.l2_bytes))]
    block = (128, 128) if op == "block" else None
    outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in sets]
    slot = {"i": 0}

    def launcher(tail):
        def f(x, w, xs, ws, *rest):
            y = outs[slot["i"] % len(outs)]
            slot["i"] += 1
            if op == "rowcol":
                xs, ws = xs.reshape(-1), ws.reshape(-1)
            k.launch(x, w, xs, ws, None, y, cfg, target, block_shape=block, tail=tail)
            return y
        return f

    if op == "block":
        def vendor(x, w, xs, ws, xb, wb):
            return torch.matmul(xb, wb.T)
    else:
        def vendor(x, w, xs, ws):
            return torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)
    return (vendor, {"off": launcher(False), "on": launcher(True), "rule": launcher(None)}, sets, cfg), source


def run_row(op, M, N, K, target, rep_ms):
    got, source = _variants(op, M, N, K, target)
    if got is None:
        return {"op": op, "M": M, "N": N, "K": K, "skipped": f"table config {source} is not the coop gluon kernel"}
    vendor, fns, sets, cfg = got
    plan = k.derive(cfg, target, 2, (128, 128) if op == "block" else None)
    tiles = -(-M // plan.BM) * -(-N // plan.BN)
    ctas = min(tiles, target.num_cus)
    # outputs of the three variants on the first input set: the tail split changes only the fp32 summation order
    ys = {}
    for name, fn in fns.items():
        ys[name] = fn(*sets[0]).clone()
    torch.cuda.synchronize()
    rel = {name: ((y.double() - ys["off"].double()).norm() / ys["off"].double().norm()).item()
           for name, y in ys.items() if name != "off"}
    times = {name: [] for name in ["vendor", *fns]}
    order = ["vendor", *fns]
    for r in range(ROUNDS):
        seq = order if r % 2 == 0 else ["vendor", *reversed(list(fns))]
        for name in seq:
            fn = vendor if name == "vendor" else fns[name]
            times[name].append(time_graph(fn, sets, rep_ms=rep_ms))
    med = {name: statistics.median(v) for name, v in times.items()}
    flops = 2 * M * N * K
    row = {"op": op, "M": M, "N": N, "K": K, "config_source": source, "tiles": tiles, "ctas": ctas,
           "tail_forced": list(k.tail_plan(plan, M, N, K, ctas, True)),
           "tail_rule": list(k.tail_plan(plan, M, N, K, ctas, None)),
           "ms": med, "ms_rounds": times, "tflops": {n: flops / v / 1e9 for n, v in med.items()},
           "vendor": "bf16 torch.matmul" if op == "block" else "torch._scaled_mm rowwise, fast accum off",
           "ratio_vs_vendor": {n: med["vendor"] / v for n, v in med.items() if n != "vendor"},
           "on_over_off": med["off"] / med["on"], "rel_diff_vs_off": rel, "input_sets": len(sets)}
    print(json.dumps({k2: row[k2] for k2 in ("op", "M", "N", "K", "tail_forced", "tail_rule", "on_over_off")}),
          {n: round(v, 1) for n, v in row["tflops"].items()}, flush=True)
    return row


def main(path, quick=False):
    target = arch.current()
    props = torch.cuda.get_device_properties(0)
    out = {"device": props.name, "num_sms": props.multi_processor_count, "torch": torch.__version__,
           "triton": __import__("triton").__version__, "cuda": torch.version.cuda,
           "date": datetime.date.today().isoformat(), "git_sha": os.environ.get("GEMMKIT_GIT_SHA") or git_sha(),
           "method": f"CUDA graph of one call per rotated input set (triton do_bench median), {ROUNDS} rounds, "
                     "variant order alternated, median of rounds; vendor timed in every round",
           "min_tail_k": k.MIN_TAIL_K, "rows": []}
    rows = [("block", *r) for r in BLOCK_ROWS] + [("rowcol", *r) for r in ROWCOL_ROWS]
    if quick:
        rows = [("block", 4096, 2112, 7168), ("rowcol", 8192, 8192, 8192)]
    for op, M, N, K in rows:
        try:
            out["rows"].append(run_row(op, M, N, K, target, rep_ms=60))
        except Exception as e:  # a row that fails is recorded, the others still run
            out["rows"].append({"op": op, "M": M, "N": N, "K": K, "error": f"{type(e).__name__}: {str(e)[:400]}"})
            print("ERROR", op, M, N, K, e, flush=True)
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], quick="--quick" in sys.argv)
