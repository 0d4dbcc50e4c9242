"""gemmkit command line: `gemmkit bench | configs | tune | isa | schedule` (also `python -m gemmkit`)."""
from __future__ import annotations

import argparse
import json
import sys


def _fail(cmd: str, message: str) -> int:
    """A one-line error on stderr, argparse's style and exit code."""
    print(f"gemmkit {cmd}: error: {message}", file=sys.stderr)
    return 2


def _int_at_least(lo: int, what: str = "an integer"):
    """argparse type: an int >= lo, or an error that says what is allowed."""
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < lo:
            raise argparse.ArgumentTypeError(f"expected {what} >= {lo}, got {text!r}")
        return v
    parse.__name__ = f"int>={lo}"
    return parse


def _float_at_least(lo: float, strict: bool = False):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = None
        if v is None or v < lo or (strict and v == lo):
            raise argparse.ArgumentTypeError(f"expected a number {'>' if strict else '>='} {lo}, got {text!r}")
        return v
    return parse


def _shape_arg(text):
    """--shape M,N,K (or MxNxK), each >= 1; the text is kept (bench.parse_shapes reads it)."""
    parts = text.lower().replace("x", ",").split(",")
    try:
        sizes = [int(p) for p in parts if p.strip()]
    except ValueError:
        sizes = []
    if len(sizes) != 3:
        raise argparse.ArgumentTypeError(f"expected M,N,K (or MxNxK), got {text!r}")
    if min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected M, N, K >= 1, got {text!r}")
    return text


def _m_list(text):
    """-m 1,16,128: comma-separated M values, each >= 1 (kept as text: bench and tune split it)."""
    try:
        ms = [int(p) for p in text.split(",")]
    except ValueError:
        ms = []
    if not ms or min(ms) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated M values, each an integer >= 1, got {text!r}")
    return text


def _models():
    """--model choices: the models of gemmkit/bench/model_configs.json, and 'all'."""
    from .bench.suite import load_models

    return list(load_models()[0]) + ["all"]


def _check_op_args(args, bop):
    """Options that depend on the op: None when they fit, else the error message."""
    if args.dtype and args.dtype not in bop.dtypes:
        return f"--dtype {args.dtype}: {bop.name} takes {', '.join(bop.dtypes)}"
    if args.batch not in (None, 1) and not bop.batched:
        return (f"--batch: only for the batched ops ({', '.join(n for n, o in _bench_ops().items() if o.batched)}); "
                f"{bop.name} has no batch count")
    if args.m and not args.model:
        return "-m: only with --model (it picks the M values of the model's layers; --shape gives whole shapes)"
    if getattr(args, "seed", None) is not None and not getattr(args, "random", None):  # (bench's; tune has neither)
        return "--seed: only with --random (it picks the random shapes)"
    return None


# bench options that time kernels on a GPU, in the parser's order: (dest, how the user wrote it)
GPU_OPTIONS = [("op", "--op"), ("dtype", "--dtype"), ("shape", "--shape"), ("model", "--model"), ("m", "-m"),
               ("random", "--random"), ("seed", "--seed"), ("plot", "--plot"), ("json", "--json"),
               ("rep_ms", "--rep-ms"), ("cuda_graph", "--cuda-graph"), ("no_check", "--no-check"), ("batch", "--batch"),
               ("roofline", "--roofline")]


def _cmd_bench(args):
    import torch

    from . import bench

    if not torch.cuda.is_available():
        given = [flag for dest, flag in GPU_OPTIONS if getattr(args, dest) not in (None, False)]
        if given:
            return _fail("bench", f"{', '.join(given)}: these time kernels and need a CUDA GPU, and torch sees none "
                                  "here; without a GPU run `gemmkit bench` with no options (interpreter check + "
                                  "static compiles), `gemmkit isa --op OP` or `python -m pytest`")
        return bench.run_cpu_check(verbose=args.verbose)
    from .bench.ops import get as get_op

    args.op = args.op or "a16w16"
    bop = get_op(args.op)
    bad = _check_op_args(args, bop)
    if bad:
        return _fail("bench", bad)
    if args.roofline and not args.cuda_graph:
        return _fail("bench", "--roofline: needs --cuda-graph (the floor's peaks are CUDA-graph replay times, and "
                              "eager rows would hold the host's launch time against it)")
    shapes = bench.parse_shapes(args.shape) if args.shape or not (args.model or args.random) else []
    dtype = args.dtype or bop.dtypes[0]
    if args.random:  # with --shape / --model: all the rows; 8-bit operands get N and K % 16 == 0 (the vendors')
        from .bench.suite import RANDOM_SEED, random_suite

        shapes += random_suite(args.random, RANDOM_SEED if args.seed is None else args.seed,
                               16 if bop.operand_bytes(dtype) == 1 else 8)
    if args.model:  # --shape and --model together: both sets of rows
        try:
            shapes += bop.rows_for_models(args.model, [int(m) for m in args.m.split(",")] if args.m else None)
        except ValueError as e:  # e.g. split_cat has rows for deepseek-v3 only
            return _fail("bench", str(e))
    result = bench.run_gpu(shapes, dtype_name=dtype, json_path=args.json, op=args.op,
                           check=not args.no_check, rep_ms=args.rep_ms or 100, cuda_graph=args.cuda_graph,
                           batch=args.batch or 1, roofline=args.roofline)
    if args.plot:
        from .bench.plot import plot_results

        plot_results(result, args.plot)
    return 0


def _config_ops():
    """--op choices of `configs`: every op with a config table (gemmkit/configs/<arch>/<OP>.json), and the
    bench/tune op names, which name a table op (or two: ffn_gated)."""
    from . import configs as _configs

    return sorted(set(_configs.table_ops()) | set(_bench_ops()))


def _config_lookups(op: str, M: int, N: int, K: int):
    """[(what, table op, M, N, K)]: the table lookups behind `op` at (M, N, K)."""
    from . import configs as _configs

    if op in _configs.table_ops():
        return [(None, op, M, N, K)]
    bop = _bench_ops()[op]
    table_op = bop.table_op(bop.dtypes[0])
    if op == "ffn_gated":  # two GEMMs: the gated one (M, I, K), then the down projection h @ w_down.T (M, K, I)
        from .ops import ffn

        return [("gate/up", ffn.OP, M, N, K), ("down", ffn.DOWN_OP, M, K, N)]
    return [(None, table_op, M, N, K)]


def _cmd_configs(args):
    from . import arch as _arch
    from . import configs as _configs

    # the target the op would serve: the named one, else this machine's GPU (its SM count, its HBM), else sm_90's
    target = _arch.get(args.arch) if args.arch else (_arch.current_or_none() or _arch.ARCHS["sm_90"])
    arch = target.arch
    where = arch if target is _arch.ARCHS.get(arch) else f"{arch} ({target.name}, {target.num_cus} SMs)"
    lookups = _config_lookups(args.op, args.M, args.N, args.K)
    answers = []
    for what, table_op, M, N, K in lookups:
        if not _configs.table_path(table_op, arch).exists():
            have = _configs.table_archs(table_op)
            return _fail("configs", f"no {table_op} config table for {arch} ({table_op} has tables for "
                                    f"{', '.join(have) or 'no arch'}; see the README's support table)")
        try:
            answers.append((what, table_op, M, N, K, *_configs.serve(table_op, target, M, N, K)))
        except _configs.ConfigError as e:  # a broken table file: say which, no traceback
            return _fail("configs", str(e))
    if len(answers) > 1:
        print(f"{args.op} M={args.M} N={args.N} K={args.K} on {where} runs {len(answers)} GEMMs "
              "(N = I, the intermediate size; K = hidden):")
    elif args.op != answers[0][1]:
        print(f"{args.op} looks up the {answers[0][1]} table:")
    from .ops import dispatch

    for what, table_op, M, N, K, cfg, source in answers:
        print(f"{what + ': ' if what else ''}gemm_{table_op} M={M} N={N} K={K} on {where}: {source}")
        print(json.dumps(cfg, indent=1, sort_keys=True))
        if _configs.tuned(source):  # what the shape file overrides (benchmarks/tables_vs_model.py measures both)
            model_cfg, model_source = _configs.serve(table_op, target, M, N, K, shape_files=False)
            same = "the same config" if _configs.validate_config(dict(model_cfg)) == _configs.validate_config(
                dict(cfg)) else json.dumps(model_cfg, sort_keys=True)
            print(f"without the shape file, the config model: {model_source}: {same}")
        try:
            choice = dispatch.for_shape(table_op, cfg, target, M, N, K, B=args.B, x_t=args.x_t, w_t=args.w_t)
        except ValueError as e:  # a config that fits no kernel of this target, or a layout the op has not
            print(f"kernel: none ({e})")
            continue
        layout = " and ".join(n for n, t in (("x", args.x_t), ("w", args.w_t)) if t)
        layout = f"{layout} transposed in memory (the rest contiguous)" if layout else "contiguous operands"
        print(f"for {layout} at 16-byte aligned addresses on a GPU (other strides may pass over more kernels):")
        print(choice.explain())
        gated = table_op == "a16w16_gated"
        launch = dispatch.gluon_launch(choice, target, M, N, K, gated=gated)
        if launch:
            print(launch)
        if choice.path == "gluon":  # the installed Triton's budget, per fused epilogue (Triton >= 3.7)
            scale = "block" if "blockscale" in table_op else "rowcol" if choice.kernel == dispatch.GLUON_FP8 else "none"
            for epilogue, why in dispatch.epilogues_elsewhere(choice.kernel, choice.config, scale=scale):
                print(f"  with a {epilogue} epilogue: the Triton tier ({why.split(':')[0]}: kernels/_budgets.py)")
    return 0


def _tuning_cache(clear: bool) -> int:
    """`gemmkit tune --cache` / `--clear-cache`: the store files of configs/usercache.py on this machine."""
    from . import configs as _configs
    from .configs import usercache

    root = usercache.cache_root()
    files = sorted(root.glob("*/*.json")) if root.is_dir() else []
    if clear:
        for f in files:
            f.unlink()
        print(f"removed {len(files)} tuning cache file(s) under {root}")
        return 0
    if not files:
        print(f"no tuning cache under {root} (GEMMKIT_TUNE=on tunes shapes no table serves on their first call)")
        return 0
    for f in files:
        try:
            entries = usercache.read_file(f)
        except _configs.ConfigError as e:
            return _fail("tune", str(e))
        print(f"{f}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")
        for key, e in sorted(entries.items()):
            c = e["config"]
            what = ("the tables' config kept" if c is None else
                    f"{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']}/{c['num_warps']}/{c['num_stages']}"
                    + (f"/s{c['NUM_KSPLIT']}" if c.get("NUM_KSPLIT", 1) > 1 else "")
                    + f" {c.get('backend', 'triton')}")
            gain = (f", {e['served_ms'] / e['ms']:.2f}x the tables' config" if c is not None and e.get("ms")
                    and e.get("served_ms") else "")
            print(f"  {key}: {what}{gain} ({e.get('timed', '?')} configs timed, {e.get('tuned_at', '?')})")
    return 0


def _cmd_tune(args):
    import os

    from .bench.ops import get as get_op
    from .tune import main as tune_main

    if args.cache or args.clear_cache:
        return _tuning_cache(args.clear_cache)
    bop = get_op(args.op)
    bad = _check_op_args(args, bop)
    if bad:
        return _fail("tune", bad)
    if args.arch and not args.tables_from:
        return _fail("tune", "--arch: only with --tables-from (a GPU run tunes the GPU it runs on)")
    args.arch = args.arch or "sm_90"
    args.batch = args.batch or 1
    if args.tables_from:
        missing = [p for p in args.tables_from if not os.path.isfile(p)]
        if missing:
            return _fail("tune", f"--tables-from: no such file: {', '.join(missing)}")
        from .tune import rows_from_progress

        dtype = args.dtype or bop.dtypes[0]
        try:
            rows = rows_from_progress(args.tables_from, args.op, dtype, arch=args.arch, batch=args.batch)
        except (KeyError, TypeError, AttributeError):  # a JSON line that is not a tune row
            return _fail("tune", f"--tables-from: {', '.join(args.tables_from)}: not a tune_progress.jsonl "
                                 "(each line a JSON object with M, N, K, config and the timing, as the tuner writes)")
        if not rows:
            return _fail("tune", f"--tables-from: no timed rows of {args.op} {dtype}"
                                 + (f" at --batch {args.batch}" if bop.batched else "")
                                 + f" in {', '.join(args.tables_from)}: nothing to merge "
                                 "(check --op, --dtype, --batch)")
    return tune_main(args)


def _cmd_isa(args):
    from .isa.report import Progress, _writable, print_summary

    for flag, path in (("--json", args.json), ("--markdown", args.markdown)):
        if path:
            try:
                _writable(path)  # now, not after minutes of compiling
            except OSError as e:
                return _fail("isa", f"{flag} {path}: cannot write there ({e.strerror or e})")
    archs = None if args.arch == "all" else [args.arch]
    return 0 if print_summary(args.op, archs, json_path=args.json, markdown_path=args.markdown,
                              progress=Progress()) else 1


def _cmd_schedule(args):
    from .schedule import library
    from .schedule.cli import run

    if args.name != "list" and args.name not in library.SCHEDULES:
        return _fail("schedule", f"unknown schedule {args.name!r}; known: {', '.join(library.SCHEDULES)} (or 'list')")
    return run(args)


def _bench_ops():
    """The ops bench and tune know (gemmkit/bench/ops.py, the one registry)."""
    from .bench.ops import BENCH_OPS

    return BENCH_OPS


def _ops():
    return list(_bench_ops())


def _isa_ops():
    """The static-compile providers (gemmkit/isa/report.py's PROVIDERS, the one list)."""
    from .isa.report import OPS

    return list(OPS)


def build_parser():
    p = argparse.ArgumentParser(prog="gemmkit", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    b = sub.add_parser("bench", help="time gemmkit against the vendor BLAS (CPU: interpreter check + static report)")
    b.epilog = ("Without a CUDA GPU, `gemmkit bench` takes no timing options: it runs an interpreter check of "
                "gemm_a16w16 and the static compile of every kernel for sm_90, gfx942 and gfx950, shows progress on "
                "stderr and ends with a summary (the full table goes to a file; --verbose prints it too).")
    b.add_argument("--op", choices=_ops(), help="the op to time (default a16w16)")
    b.add_argument("--dtype", choices=["bf16", "fp16", "fp8", "int8", "fp4"],
                   help="operand type (default: the op's first: a16w16 bf16, a8w8 fp8, a8w8_blockscale fp8)")
    b.add_argument("--shape", action="append", type=_shape_arg,
                   help="M,N,K, each >= 1 (repeatable); default: the built-in suite")
    b.add_argument("--model", choices=_models(), metavar="MODEL",
                   help="time every layer of a model in gemmkit/bench/model_configs.json ('all': every model): "
                        + ", ".join(_models()))
    b.add_argument("-m", type=_m_list, help="with --model: comma-separated M values (default: the file's m_values)")
    b.add_argument("--random", type=_int_at_least(1), metavar="COUNT",
                   help="time COUNT seeded random shapes no table or rule was fitted on (M 1-8192, N and K 256-32768, "
                        "some unaligned; gemmkit/bench/suite.py random_suite)")
    b.add_argument("--seed", type=int,
                   help="with --random: the seed (default 20261128; the same seed, the same shapes)")
    b.add_argument("--plot", help="draw TFLOP/s (and GB/s) against M per layer, gemmkit vs vendor, to this PNG")
    b.add_argument("--json", help="write results (DESIGN.md format) to this path")
    b.add_argument("--rep-ms", type=_int_at_least(1), help="do_bench repetition time per measurement (default 100)")
    b.add_argument("--cuda-graph", action="store_true",
                   help="time CUDA graph replays (kernel time without Python/launch overhead), both sides")
    b.add_argument("--no-check", action="store_true", help="skip the correctness check per shape")
    b.add_argument("--batch", type=_int_at_least(1), help="batched ops: the batch count B (default 1)")
    b.add_argument("--roofline", action="store_true",
                   help="with --cuda-graph: measure the dense peak, read bandwidth and minimum kernel time first, then "
                        "give each row its floor max(flops / peak, bytes / bandwidth, minimum kernel) and the "
                        "efficiency floor / time of gemmkit and the vendor")
    b.add_argument("--verbose", "-v", action="store_true",
                   help="no GPU: print the full static compile table too (a GPU run prints every row anyway)")
    b.set_defaults(fn=_cmd_bench)

    c = sub.add_parser("configs", help="print the config a shape gets, and where it came from")
    c.add_argument("--op", default="a16w16", choices=_config_ops(), metavar="OP",
                   help="an op with config tables (gemmkit/configs/<arch>/<OP>.json), or a bench/tune op name, "
                        "which names its table (ffn_gated: the gated GEMM's and the down projection's): "
                        + ", ".join(_config_ops()))
    c.add_argument("-M", type=_int_at_least(1), required=True, help="rows of x (tokens), >= 1")
    c.add_argument("-N", type=_int_at_least(1), required=True, help="rows of w (output features), >= 1")
    c.add_argument("-K", type=_int_at_least(1), required=True, help="the reduction size, >= 1")
    c.add_argument("-B", type=_int_at_least(1), default=1,
                   help="batch entries (batched ops: the Gluon batched kernel needs more than one wave of tiles)")
    c.add_argument("--arch", choices=["sm_90", "gfx942", "gfx950", "H100", "H200", "MI300X", "MI355X"],
                   help="an architecture (its representative card: H200, MI300X, MI355X) or a card (the config model "
                        "sees its SMs and HBM bandwidth); default: the current GPU, else sm_90")
    c.add_argument("--x-t", action="store_true", help="x transposed in memory (a view of (K, M) storage): the kernel "
                                                      "such a call runs (the dense GEMMs)")
    c.add_argument("--w-t", action="store_true", help="w transposed in memory (a (K, N) weight passed as W.t()): the "
                                                      "kernel such a call runs (the dense GEMMs)")
    c.set_defaults(fn=_cmd_configs)

    t = sub.add_parser("tune", help="search configs on the GPU and merge the winners into aiter-format tables")
    t.add_argument("--op", default="a16w16", choices=_ops())
    t.add_argument("--dtype", choices=["bf16", "fp16", "fp8", "int8", "fp4"], help="operand type (default: the op's first)")
    g = t.add_mutually_exclusive_group(required=True)
    g.add_argument("--tables-from", metavar="PROGRESS_JSONL", nargs="+",
                   help="no GPU needed: merge the winners of an earlier run's tune_progress.jsonl into the tables")
    g.add_argument("--shape", nargs=3, type=_int_at_least(1), action="append", metavar=("M", "N", "K"),
                   help="one shape (repeatable), each size >= 1")
    g.add_argument("--model", choices=_models(), metavar="MODEL",
                   help="a model of gemmkit/bench/model_configs.json, or 'all': " + ", ".join(_models()))
    g.add_argument("--suite", choices=["default", "squares"])
    g.add_argument("--cache", action="store_true",
                   help="no GPU needed: list the tuning cache's entries on this machine (GEMMKIT_TUNE: shapes tuned "
                        "on their first call, under $GEMMKIT_CACHE_DIR/tuned or ~/.cache/gemmkit/tuned)")
    g.add_argument("--clear-cache", action="store_true", help="delete the tuning cache's files on this machine")
    t.add_argument("-m", "--m", dest="m", type=_m_list,
                   help="with --model: comma-separated M values, tuned in this order (default: the file's "
                        "m_values, every M the issue lists)")
    t.add_argument("--out", default="tune_out",
                   help="progress log, merge decisions and merged tables (<out>/<arch>/) go here (rerun to resume)")
    t.add_argument("--install", action="store_true",
                   help="merge the winners into the shipped tables (gemmkit/configs/<arch>/) instead of <out>/<arch>/")
    t.add_argument("--min-gain", type=_float_at_least(0.0), default=0.02,
                   help="write a bucket only where the winner beats the config serving that M by more than this "
                        "(or that config has BLOCK_SIZE_M < M at M <= 64); default 0.02")
    t.add_argument("--budget-s", type=_float_at_least(0.0, strict=True),
                   help="start no new shape after this many seconds (then merge)")
    t.add_argument("--max-candidates", type=_int_at_least(1), default=40,
                   help="per backend (Triton, Gluon), besides the serving config and its neighbouring buckets'")
    t.add_argument("--rep-ms", type=_int_at_least(1), default=40)
    t.add_argument("--arch", choices=["sm_90", "gfx942", "gfx950"],
                   help="with --tables-from: the arch the progress was measured on (default sm_90)")
    t.add_argument("--batch", type=_int_at_least(1), help="batched ops: the batch count B (default 1)")
    t.add_argument("--backend", default="all", choices=["all", "triton", "gluon"],
                   help="only this backend's candidates (plus the current table's config); gluon: sm_90 a16w16, "
                        "M >= 256 (the ping-pong; the cooperative layout, num_warps 8: its split tile 128 x 192, "
                        "and at M >= 1024 its other tiles)")
    t.set_defaults(fn=_cmd_tune)

    i = sub.add_parser("isa", help="compile every kernel x shipped config for sm_90 / gfx942 / gfx950 on the CPU, "
                                   "report registers, spills, LDS, occupancy, instruction counts; check promises")
    i.add_argument("--op", default="all", choices=["all", *_isa_ops()],
                   help="the op or kernel whose static cases to compile, or 'all' (default)")
    i.add_argument("--arch", default="all", choices=["all", "sm_90", "gfx942", "gfx950"])
    i.add_argument("--json", help="write the rows (kernel, op, config, arch, vgpr, agpr, sgpr, spill_bytes, "
                                  "lds_bytes, occupancy, counts, promises, promises_ok; budget / skipped where the "
                                  "installed Triton's budget rules apply: kernels/_budgets.py) to this path")
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
    try:
        return args.fn(args)
    except BrokenPipeError:  # `gemmkit ... | head`: the reader left; no traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
