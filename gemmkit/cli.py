"""gemmkit command line: `gemmkit bench | configs | tune | isa | schedule` (also `python -m gemmkit`)."""
from __future__ import annotations

import argparse
import json
import sys


def _cmd_bench(args):
    import torch

    from . import bench

    if not torch.cuda.is_available():
        return bench.run_cpu_check()
    shapes = bench.parse_shapes(args.shape) if args.shape or not args.model else []
    if args.model:  # --shape and --model together: both sets of rows
        from .bench.ops import get as get_op

        shapes += get_op(args.op).rows_for_models(args.model, [int(m) for m in args.m.split(",")] if args.m else None)
    from .bench.ops import get as get_op

    dtype = args.dtype or get_op(args.op).dtypes[0]
    result = bench.run_gpu(shapes, dtype_name=dtype, json_path=args.json, op=args.op,
                           check=not args.no_check, rep_ms=args.rep_ms, cuda_graph=args.cuda_graph,
                           batch=args.batch)
    if args.plot:
        from .bench.plot import plot_results

        plot_results(result, args.plot)
    return 0


def _cmd_configs(args):
    from . import arch as _arch
    from . import configs as _configs

    arch = args.arch
    if arch is None:
        t = _arch.current_or_none()
        arch = t.arch if t else "sm_90"
    cfg, source = _configs.select(args.op, arch, args.M, args.N, args.K)
    print(f"gemm_{args.op} M={args.M} N={args.N} K={args.K} on {arch}: {source}")
    print(json.dumps(cfg, indent=1, sort_keys=True))
    return 0


def _cmd_tune(args):
    from .tune import main as tune_main

    return tune_main(args)


def _cmd_isa(args):
    from .isa.report import print_summary

    archs = None if args.arch == "all" else [args.arch]
    return 0 if print_summary(args.op, archs, json_path=args.json, markdown_path=args.markdown) else 1


def _cmd_schedule(args):
    from .schedule.cli import run

    return run(args)


def _ops():
    """The ops bench and tune know (gemmkit/bench/ops.py, the one registry)."""
    from .bench.ops import BENCH_OPS

    return list(BENCH_OPS)


def build_parser():
    p = argparse.ArgumentParser(prog="gemmkit", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    b = sub.add_parser("bench", help="time gemmkit against the vendor BLAS (CPU: interpreter check + static report)")
    b.add_argument("--op", default="a16w16", choices=_ops())
    b.add_argument("--dtype", choices=["bf16", "fp16", "fp8", "int8", "fp4"],
                   help="operand type (default: the op's first: a16w16 bf16, a8w8 fp8, a8w8_blockscale fp8)")
    b.add_argument("--shape", action="append", help="M,N,K (repeatable); default: the built-in suite")
    b.add_argument("--model", help="time every layer of a model in gemmkit/bench/model_configs.json ('all': every model)")
    b.add_argument("-m", help="with --model: comma-separated M values (default: the file's m_values)")
    b.add_argument("--plot", help="draw TFLOP/s (and GB/s) against M per layer, gemmkit vs vendor, to this PNG")
    b.add_argument("--json", help="write results (DESIGN.md format) to this path")
    b.add_argument("--rep-ms", type=int, default=100, help="do_bench repetition time per measurement")
    b.add_argument("--cuda-graph", action="store_true",
                   help="time CUDA graph replays (kernel time without Python/launch overhead), both sides")
    b.add_argument("--no-check", action="store_true", help="skip the correctness check per shape")
    b.add_argument("--batch", type=int, default=1, help="batched ops: the batch count B (default 1)")
    b.set_defaults(fn=_cmd_bench)

    c = sub.add_parser("configs", help="print the config a shape gets, and where it came from")
    c.add_argument("--op", default="a16w16",
                   help="a config table op: a16w16, a8w8 (fp8), a8w8_int8, a8w8_blockscale")
    c.add_argument("-M", type=int, required=True)
    c.add_argument("-N", type=int, required=True)
    c.add_argument("-K", type=int, required=True)
    c.add_argument("--arch", choices=["sm_90", "gfx942", "gfx950"], help="default: the current GPU, else sm_90")
    c.set_defaults(fn=_cmd_configs)

    t = sub.add_parser("tune", help="search configs on the GPU and merge the winners into aiter-format tables")
    t.add_argument("--op", default="a16w16", choices=_ops())
    t.add_argument("--dtype", choices=["bf16", "fp16", "fp8", "int8", "fp4"], help="operand type (default: the op's first)")
    g = t.add_mutually_exclusive_group(required=True)
    g.add_argument("--tables-from", metavar="PROGRESS_JSONL", nargs="+",
                   help="no GPU needed: merge the winners of an earlier run's tune_progress.jsonl into the tables")
    g.add_argument("--shape", nargs=3, type=int, action="append", metavar=("M", "N", "K"))
    g.add_argument("--model", help="a model of gemmkit/bench/model_configs.json, or 'all'")
    g.add_argument("--suite", choices=["default", "squares"])
    t.add_argument("-m", "--m", dest="m",
                   help="with --model: comma-separated M values, tuned in this order (default: the file's "
                        "m_values, every M the issue lists)")
    t.add_argument("--out", default="tune_out",
                   help="progress log, merge decisions and merged tables (<out>/<arch>/) go here (rerun to resume)")
    t.add_argument("--install", action="store_true",
                   help="merge the winners into the shipped tables (gemmkit/configs/<arch>/) instead of <out>/<arch>/")
    t.add_argument("--min-gain", type=float, default=0.02,
                   help="write a bucket only where the winner beats the config serving that M by more than this "
                        "(or that config has BLOCK_SIZE_M < M at M <= 64); default 0.02")
    t.add_argument("--budget-s", type=float, help="start no new shape after this many seconds (then merge)")
    t.add_argument("--max-candidates", type=int, default=40,
                   help="per backend (Triton, Gluon), besides the serving config and its neighbouring buckets'")
    t.add_argument("--rep-ms", type=int, default=40)
    t.add_argument("--arch", default="sm_90", help="with --tables-from: the arch the progress was measured on")
    t.add_argument("--batch", type=int, default=1, help="batched ops: the batch count B (default 1)")
    t.add_argument("--backend", default="all", choices=["all", "triton", "gluon"],
                   help="only this backend's candidates (plus the current table's config); gluon: sm_90 a16w16, "
                        "M >= 256 (the ping-pong; the cooperative layout, num_warps 8: its split tile 128 x 192, "
                        "and at M >= 1024 its other tiles)")
    t.set_defaults(fn=_cmd_tune)

    i = sub.add_parser("isa", help="compile every kernel x shipped config for sm_90 / gfx942 / gfx950 on the CPU, "
                                   "report registers, spills, LDS, occupancy, instruction counts; check promises")
    i.add_argument("--op", default="all", help="an op (a16w16) or 'all'")
    i.add_argument("--arch", default="all", choices=["all", "sm_90", "gfx942", "gfx950"])
    i.add_argument("--json", help="write the rows (kernel, op, config, arch, vgpr, agpr, sgpr, spill_bytes, "
                                  "lds_bytes, occupancy, counts, promises, promises_ok) to this path")
    i.add_argument("--markdown", help="write the report as markdown (docs/ISA.md)")
    i.set_defaults(fn=_cmd_isa)

    s = sub.add_parser("schedule", help="the CDNA ping-pong schedules as data: check one for LDS races, "
                                        "or draw its two wave groups' timeline")
    ssub = s.add_subparsers(dest="schedule_cmd", required=True)
    sc = ssub.add_parser("check", help="explore every interleaving; exit 0 when race-free, 1 on a race")
    sc.add_argument("name", help="a named schedule ('list' prints the names)")
    ss = ssub.add_parser("show", help="draw the two groups' timeline as text")
    ss.add_argument("name")
    sl = ssub.add_parser("list", help="the named schedules with the seeds' and the checker's verdicts")
    sl.set_defaults(name="list")
    s.set_defaults(fn=_cmd_schedule)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
