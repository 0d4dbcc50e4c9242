"""`gemmkit isa`: every kernel x shipped config, compiled for its target on the CPU, with its promises checked.

Cases: for each op, every bucket of every shipped table for its arch (sm_90
configs with "tma": true compile both the TMA kernel and the pointer kernel the
op falls back to), plus the op's auxiliary kernels (the split-K reduce) once per
target. Compiles run in parallel processes and are cached on disk by (kernel
source hash, the full compile spec: signature, constexprs, options; config,
path, target, Triton version, analysis version): `GEMMKIT_CACHE_DIR`
(default ~/.cache/gemmkit), subfolder isa/; cases that differ only by the table
and bucket they came from compile once.

Under a Triton release with budget rules (kernels/_budgets.py) a case is compiled
as the dispatch runs it there, and its row says what the rules changed (`budget`:
the epilogues sent to the Triton tier, other compile options or tile); a Gluon
case whose every epilogue goes to the Triton tier is not compiled (`skipped`).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from .. import arch as _arch
from . import ANALYSIS_VERSION, compile_static, resources
from .promises import evaluate

# op -> the module that describes its static cases. Each provides
#   isa_cases(archs) -> iterable of case dicts {kernel, op, arch, table, bucket, config, path}
#   isa_spec(case)   -> dict(kernel, signature, constexprs, divisible, options, promises,
#                           block (BM, BN, BK) or None, smem_bound)
# so an op's kernels, configs and promises stay in the op's own files.
PROVIDERS = {
    "a16w16": "gemmkit.ops.gemm_a16w16",
    "a8w8": "gemmkit.ops.gemm_a8w8",
    "a8w8_blockscale": "gemmkit.ops.gemm_a8w8_blockscale",
    "batched_gemm": "gemmkit.ops.batched_gemm",
    "afp4wfp4": "gemmkit.ops.gemm_afp4wfp4",
    "a16w16_gated": "gemmkit.ops.ffn",
    "split_cat": "gemmkit.ops.gemm_split_cat",
    "hopper_pingpong": "gemmkit.kernels.gluon.hopper_pingpong",
    "hopper_pingpong_fp8": "gemmkit.kernels.gluon.hopper_pingpong_fp8",
    "hopper_coop": "gemmkit.kernels.gluon.hopper_coop",
    "cdna_pingpong": "gemmkit.kernels.gluon.cdna_pingpong",
    "quant": "gemmkit.quant",
    "peer_sum": "gemmkit.kernels.triton.peer_sum",
}
OPS = tuple(PROVIDERS)


def _provider(op):
    import importlib

    if op not in PROVIDERS:
        raise ValueError(f"op: expected one of {', '.join(PROVIDERS)} or 'all', got {op!r}")
    return importlib.import_module(PROVIDERS[op])


def static_cases(op: str = "a16w16", archs=None):
    """Case dicts for `op`: kernel name, arch, table, bucket, config, path."""
    return list(_provider(op).isa_cases(list(archs or _arch.ARCHS)))


def _spec(case):
    s = _provider(case["op"]).isa_spec(case)
    return (s["kernel"], s["signature"], s["constexprs"], s["divisible"], s["options"], s["promises"],
            s.get("block"), s.get("smem_bound", 0))


def budget_note(case, spec: dict) -> str:
    """What the installed Triton's budget (kernels/_budgets.py) changes in this case: the epilogues the dispatch
    sends to the Triton tier instead (a Gluon case's `budget`), the compile options it sets (a Triton-tier case:
    `triton_options`) or the K step it shortens (`triton_config`). "" on Triton 3.6 and wherever no rule applies."""
    from ..kernels import _budgets

    notes = [spec["budget"]] if spec.get("budget") else []
    kernel, cfg = spec["kernel"], case["config"]
    if not getattr(kernel, "is_gluon", lambda: False)() and "BLOCK_SIZE_M" in cfg:
        target = _arch.ARCHS[case["arch"]]
        changed = dict(_budgets.triton_options(cfg, target))
        tile = _budgets.triton_config(case["kernel"], cfg, target)
        changed.update({k: v for k, v in tile.items() if cfg.get(k) != v})
        if changed:
            notes.append(f"{_budgets.version_name()}: compiled with "
                         + ", ".join(f"{k} {v}" for k, v in sorted(changed.items())) + " (kernels/_budgets.py)")
    return "; ".join(notes)


def _cache_dir() -> Path:
    return Path(os.environ.get("GEMMKIT_CACHE_DIR", Path.home() / ".cache" / "gemmkit")) / "isa"


def _cache_key(case, kernel, sig, ce, div, opts) -> str:
    import triton

    blob = json.dumps([kernel.cache_key, sig, {k: repr(v) for k, v in ce.items()}, sorted(div), opts,
                       case["config"], case["path"], case["arch"], triton.__version__, ANALYSIS_VERSION],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def analyze(case: dict, use_cache: bool = True) -> dict:
    """Compile one case and return its report row (cached)."""
    row = dict(case)
    try:
        spec = _provider(case["op"]).isa_spec(case)
        kernel, sig, ce, div, opts, promises = (spec[k] for k in ("kernel", "signature", "constexprs", "divisible",
                                                                  "options", "promises"))
        block, bound = spec.get("block"), spec.get("smem_bound", 0)
        if spec.get("skip"):  # the dispatch never sends this case's kernel a call under the installed Triton
            row.update(ok=True, promises_ok=True, promises=[], skipped=spec["skip"])
            return row
        note = budget_note(case, spec)
        if note:
            row["budget"] = note
        key = _cache_key(case, kernel, sig, ce, div, opts)
        cached = _cache_dir() / f"{key}.json"
        if use_cache and cached.exists():
            metrics = json.loads(cached.read_text())
        else:
            target = _arch.ARCHS[case["arch"]]
            metrics = resources(compile_static(kernel, sig, ce, target, opts, div), target, block)
            if use_cache:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(metrics))
                tmp.replace(cached)
        metrics["smem_bound"] = bound  # the op's current bound, not the cached one
        row.update(metrics, ok=True)
        checks = evaluate(promises, metrics, case["config"], _arch.ARCHS[case["arch"]])
        row.update(promises=checks, promises_ok=all(c["ok"] for c in checks))
    except Exception as e:  # reported per case; CI fails on it
        row.update(ok=False, promises_ok=False, promises=[], error=f"{type(e).__name__}: {e}"[:2000])
    return row


def collect(op: str = "a16w16", archs=None, use_cache: bool = True, progress=None) -> list:
    """Report rows for every case of `op` ('all': every op), compiled in parallel.

    Static compiles need Triton's JIT objects, which an interpreter process
    (TRITON_INTERPRET=1, as the CPU tests run) does not have: then the work runs
    in a fresh process without it.

    `progress` (optional, e.g. `Progress()`): `progress.start({arch: cases})` once, then
    `progress.step(row)` as each case finishes (row: at least arch, kernel, ok, promises_ok).
    """
    import subprocess
    import sys

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        env = dict(os.environ, TRITON_INTERPRET="0")
        code = (f"import json; from gemmkit.isa.report import collect, _ForwardProgress; "
                f"print(json.dumps(collect({op!r}, {archs!r}, {use_cache!r}, "
                f"progress={'_ForwardProgress()' if progress else 'None'})))")
        import tempfile

        with tempfile.TemporaryFile("w+") as out:  # a file: the rows are large, progress streams on stderr
            proc = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=out, stderr=subprocess.PIPE,
                                    text=True)
            err = []
            for line in proc.stderr:
                if progress is not None and line.startswith(_PROGRESS_MARK):
                    kind, arg = json.loads(line[len(_PROGRESS_MARK):])
                    getattr(progress, kind)(arg)
                else:
                    err.append(line)
            rc = proc.wait()
            out.seek(0)
            stdout = out.read()
        if rc != 0:
            raise RuntimeError(f"static compile subprocess failed:\n{''.join(err)[-4000:]}")
        return json.loads(stdout.strip().splitlines()[-1])
    from concurrent.futures import ProcessPoolExecutor

    ops = OPS if op == "all" else (op,)
    cases = [c for o in ops for c in static_cases(o, archs)]
    # Compiled target by target (the rows keep the cases' order), so progress can say when a target is done.
    rank = {a: i for i, a in enumerate(_arch.ARCHS)}
    order = sorted(range(len(cases)), key=lambda i: rank.get(cases[i]["arch"], len(rank)))
    if progress is not None:
        totals = {}
        for i in order:
            totals[cases[i]["arch"]] = totals.get(cases[i]["arch"], 0) + 1
        progress.start(totals)
    # Cases that differ only by their table and bucket (a config several tables ship) compile once: the first
    # of them is analyzed, the others get its row with their own table and bucket.
    first, same = {}, {}
    for i in order:
        first.setdefault(_compile_key(cases[i]), i)
        same.setdefault(first[_compile_key(cases[i])], []).append(i)
    unique = [i for i in order if first[_compile_key(cases[i])] == i]
    workers = max(1, min(len(unique), os.cpu_count() or 1))
    rows = [None] * len(cases)

    def done(i, row):
        for j in same[i]:
            rows[j] = row if j == i else dict(row, **{k: cases[j][k] for k in ("table", "bucket")})
            if progress is not None:
                progress.step(rows[j])

    # Cases marked `isolate` (the quantizers on AMD targets: gemmkit/quant.py says why) compile in a fresh process a
    # target, whatever else ran before; the rest share the pool (or this process).
    groups = {}
    for i in unique:
        if cases[i].get("isolate"):
            groups.setdefault(cases[i]["arch"], []).append(i)
    shared = [i for i in unique if not cases[i].get("isolate")]
    if groups:
        with ProcessPoolExecutor(min(workers, len(groups)), max_tasks_per_child=1) as fresh:
            for group, group_rows in zip(groups.values(), fresh.map(
                    _analyze_all, [[cases[i] for i in g] for g in groups.values()], [use_cache] * len(groups))):
                for i, row in zip(group, group_rows):
                    done(i, row)
    if workers == 1 or len(shared) <= 1:
        for i in shared:
            done(i, analyze(cases[i], use_cache))
        return rows
    with ProcessPoolExecutor(workers) as pool:  # compiles are CPU-bound and independent
        for i, row in zip(shared, pool.map(analyze, [cases[i] for i in shared], [use_cache] * len(shared),
                                           chunksize=4)):
            done(i, row)
    return rows


def _analyze_all(cases, use_cache=True) -> list:
    """`analyze` each case in turn, in this process (a fresh one: `collect`'s isolated cases)."""
    return [analyze(c, use_cache) for c in cases]


def _compile_key(case) -> str:
    """What a table case's compile depends on: all of it but the table and bucket it came from (a case of no table,
    "-", may name its variant in `bucket`: the operand copy's dtype)."""
    drop = ("table", "bucket") if case["table"] != "-" else ()
    return json.dumps({k: v for k, v in case.items() if k not in drop}, sort_keys=True, default=str)


_PROGRESS_MARK = "@gemmkit-isa-progress "


class _ForwardProgress:
    """In the fresh process `collect` starts: progress events as marked lines on stderr, for the parent."""

    def start(self, totals):
        print(_PROGRESS_MARK + json.dumps(["start", totals]), file=sys.stderr, flush=True)

    def step(self, row):
        keep = {k: row.get(k) for k in ("arch", "kernel", "op", "ok", "promises_ok")}
        print(_PROGRESS_MARK + json.dumps(["step", keep]), file=sys.stderr, flush=True)


class Progress:
    """Progress lines while `collect` compiles (stderr by default, flushed): the cases per target at the
    start, a line every `every_s` seconds, and one as each target is done."""

    def __init__(self, title: str = "static compile", stream=None, every_s: float = 10.0, indent: str = "  "):
        self.title, self.stream, self.every_s, self.indent = title, stream, every_s, indent

    def _say(self, text, indent=True):
        print((self.indent if indent else "") + text, file=self.stream or sys.stderr, flush=True)

    def _elapsed(self):
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}m{s % 60:02d}s"

    def start(self, totals):
        n = sum(totals.values())
        if self.title:
            self._say(f"{self.title}: {n} case{'s' if n != 1 else ''} (kernel x shipped config x target: "
                      + ", ".join(f"{a} {k}" for a, k in totals.items())
                      + f") on {max(1, min(n, os.cpu_count() or 1))} processes ...", indent=False)
        self.totals, self.done, self.bad = dict(totals), {a: 0 for a in totals}, {a: 0 for a in totals}
        self.t0 = self.last = time.monotonic()

    def step(self, row):
        a = row["arch"]
        self.done[a] += 1
        self.bad[a] += not (row["ok"] and row["promises_ok"])
        now = time.monotonic()
        if self.done[a] == self.totals[a]:
            bad = f", {self.bad[a]} with a failed compile or a broken promise" if self.bad[a] else ""
            self._say(f"{a}: {self.done[a]}/{self.totals[a]} done{bad} [{self._elapsed()}]")
            self.last = now
        elif now - self.last >= self.every_s:
            self._say(f"{a}: {self.done[a]}/{self.totals[a]} [{self._elapsed()}]")
            self.last = now


def _blocks(cfg, kernel=""):
    """A config's label; `/swap` only on the Gluon ping-pong's own rows (its Triton fallback runs the tile unswapped)."""
    if "BLOCK_SIZE_M" in cfg:
        return f"{cfg['BLOCK_SIZE_M']}x{cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']}/{cfg['num_warps']}/{cfg['num_stages']}" + \
            (f"/s{cfg['NUM_KSPLIT']}" if cfg.get("NUM_KSPLIT", 1) > 1 else "") + \
            ("/swap" if cfg.get("swap_ab") and kernel == "hopper_pingpong_kernel" else "")
    if "BLOCK_R" in cfg:  # the operand copy (kernels/triton/pad.py): rows x columns a program
        return f"{cfg['BLOCK_R']}x{cfg['BLOCK_K']}/{cfg['num_warps']}"
    if "SPLIT_K" not in cfg:  # a quantizer (gemmkit/quant.py): rows x columns a program
        return f"{cfg['BLOCK_M']}x{cfg['BLOCK_K']}/{cfg['num_warps']}"
    return f"{cfg['BLOCK_M']}x{cfg['BLOCK_N']}/{cfg['num_warps']}/split{cfg['SPLIT_K']}"


def _mma(r):
    c = r.get("counts", {})
    if "v_mfma" in c:
        return str(c["v_mfma"])
    return f"{c.get('HGMMA', 0) + c.get('QGMMA', 0) + c.get('IGMMA', 0)}/{c.get('HMMA', 0) + c.get('IMMA', 0)}"


def format_rows(rows, markdown=False):
    head = ["arch", "kernel", "table:bucket", "blocks M x N x K/w/s", "vgpr", "agpr", "sgpr", "spill", "LDS/smem",
            "occ", "mma", "promises"]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    else:
        lines.append(f"{'arch':7s} {'kernel':24s} {'table:bucket':40s} {'blocks':20s} {'vgpr':>5s} {'agpr':>5s} "
                     f"{'sgpr':>5s} {'spill':>6s} {'smem':>7s} {'occ':>4s} {'mma':>7s}  promises")
    for r in rows:
        where = f"{r['table']}:{r['bucket']}" + (f" [{r['dtype']}]" if r.get("dtype", "bf16") != "bf16" else "")
        if not r["ok"]:
            cells = [r["arch"], r["kernel"], where, _blocks(r["config"], r["kernel"]), "", "", "", "", "", "", "",
                     "COMPILE FAILED: " + r["error"].splitlines()[0][:80]]
        elif r.get("skipped"):
            cells = [r["arch"], r["kernel"], where, _blocks(r["config"], r["kernel"]), "", "", "", "", "", "", "",
                     "SKIPPED by the dispatch: " + r["skipped"]]
        else:
            bad = [c for c in r["promises"] if not c["ok"]]
            verdict = f"{len(r['promises'])} ok" if not bad else "BROKEN: " + "; ".join(
                f"{c['promise']} ({c['detail']})" for c in bad)
            if r.get("budget"):
                verdict += f" [budget: {r['budget']}]"
            cells = [r["arch"], r["kernel"], where, _blocks(r["config"], r["kernel"]), str(r["vgpr"]), str(r["agpr"]), str(r["sgpr"]),
                     str(r["spill_bytes"]), str(r["lds_bytes"]), str(r["occupancy"]), _mma(r), verdict]
        if markdown:
            lines.append("| " + " | ".join(cells) + " |")
        else:
            lines.append(f"{cells[0]:7s} {cells[1]:24s} {cells[2]:40s} {cells[3]:20s} {cells[4]:>5s} {cells[5]:>5s} "
                         f"{cells[6]:>5s} {cells[7]:>6s} {cells[8]:>7s} {cells[9]:>4s} {cells[10]:>7s}  {cells[11]}")
    return "\n".join(lines)


TABLE_NOTE = ("occ = waves/SIMD (AMD), resident warps/SM (sm_90); mma = v_mfma (AMD), wgmma/mma.sync "
              "(sm_90: HGMMA+QGMMA+IGMMA / HMMA+IMMA)")


def table_text(rows, op: str = "all", archs=None) -> str:
    """The full report as text: a header, one line per kernel x config x target, the verdict."""
    return "\n".join([
        f"static compile of {op} kernels x shipped configs on {', '.join(archs or _arch.ARCHS)} "
        f"(Triton compiles for targets it has no GPU for); {TABLE_NOTE}",
        format_rows(rows), verdict_line(rows)])


def verdict_line(rows) -> str:
    ok = all(r["ok"] and r["promises_ok"] for r in rows)
    n_promises = sum(len(r["promises"]) for r in rows)
    skipped = sum(bool(r.get("skipped")) for r in rows)
    return (f"static compile: {'ok' if ok else 'FAILED'} ({len(rows)} kernel x config x target cases, "
            f"{n_promises} promises checked" + (f", {skipped} skipped: the dispatch sends them no call under this "
                                                "Triton" if skipped else "") + ")")


def summary_lines(rows, archs=None, max_problems: int = 10) -> list:
    """A few lines for people: the verdict, a row per target (kernels, cases compiled and failed, cases
    that spill, promises kept), then each failed compile or broken promise (the first `max_problems`)."""
    lines = [verdict_line(rows),
             f"{'target':7s} {'kernels':>7s} {'compiled':>8s} {'failed':>6s} {'spills':>6s} {'promises kept':>13s} "
             f"{'broken':>6s}"]
    for arch in archs or _arch.ARCHS:
        rs = [r for r in rows if r["arch"] == arch]
        if not rs:
            continue
        compiled = [r for r in rs if r["ok"] and not r.get("skipped")]
        checks = [c for r in compiled for c in r["promises"]]
        kept = sum(c["ok"] for c in checks)
        failed = sum(not r["ok"] for r in rs)
        lines.append(f"{arch:7s} {len({r['kernel'] for r in rs}):7d} {len(compiled):8d} {failed:6d} "
                     f"{sum(r.get('spill_bytes', 0) > 0 for r in compiled):6d} {f'{kept}/{len(checks)}':>13s} "
                     f"{len(checks) - kept:6d}")
    lines.append("(kernels: distinct kernel functions; compiled / failed: kernel x shipped config cases; "
                 "spills: cases that spill registers)")
    budget = [r for r in rows if r.get("budget")]
    if budget:
        from ..kernels import _budgets

        passed = sum("Triton tier" in r["budget"] for r in budget)
        lines.append(f"{_budgets.version_name()} budget (kernels/_budgets.py): {len(budget)} cases; {passed} Gluon "
                     "cases whose heaviest epilogues the dispatch sends to the Triton tier (compiled with the "
                     f"heaviest it still sends them), {len(budget) - passed} compiled with changed options or tile")
    problems = []
    for r in rows:
        where = f"{r['arch']} {r['kernel']} {r['table']}:{r['bucket']} {_blocks(r['config'], r['kernel'])}" \
            if r["config"] else f"{r['arch']} {r['kernel']} {r['table']}:{r['bucket']}"
        if not r["ok"]:
            problems.append(f"  {where}: COMPILE FAILED: {r['error'].splitlines()[0][:160]}")
        problems += [f"  {where}: BROKEN {c['promise']} ({c['detail']})" for c in r["promises"] if not c["ok"]]
    if problems:
        lines.append(f"failed compiles and broken promises ({len(problems)}"
                     + (f", the first {max_problems}" if len(problems) > max_problems else "") + "):")
        lines += problems[:max_problems]
    return lines


def _writable(path) -> None:
    """Make `path`'s folder and check that `path` can be written, so that a typo'd path fails now and not
    after minutes of compiling (OSError otherwise). Creates no file."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.is_dir() or not os.access(p if p.exists() else p.parent, os.W_OK):
        raise PermissionError(13, "not a writable file", str(p))


def print_summary(op: str = "a16w16", archs=None, json_path=None, markdown_path=None, progress=None) -> bool:
    """`gemmkit isa`: the full table on stdout (progress, if given, while it compiles); True when every
    case compiled and kept its promises."""
    for path in (json_path, markdown_path):
        if path:
            _writable(path)
    rows = collect(op, archs, progress=progress)
    print(table_text(rows, op, archs))
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1) + "\n")
    if markdown_path:
        write_markdown(rows, markdown_path)
    return all(r["ok"] and r["promises_ok"] for r in rows)


def write_markdown(rows, path):
    import triton

    by_arch = {}
    for r in rows:
        by_arch.setdefault(r["arch"], []).append(r)
    text = [
        "# ISA report",
        "",
        "Generated by `gemmkit isa --markdown docs/ISA.md` (do not edit by hand): every kernel x "
        f"shipped config compiled on a CPU for its target with Triton {triton.__version__}, read for "
        "registers, spills, shared memory / LDS, occupancy and instruction counts, and checked "
        "against the promises each kernel file declares (`PROMISES`). The same check runs in CI "
        "(tests/tools/test_isa.py). No AMD hardware has run these kernels: the AMD rows are compiled "
        "code only.",
        "",
        "Columns: vgpr/agpr/sgpr are AMD register counts (sm_90: vgpr = registers per thread); "
        "spill = scratch (AMD) or stack + local bytes (sm_90); occ = waves per SIMD from registers "
        "and LDS (AMD) or resident warps per SM (sm_90); mma = v_mfma count (AMD) or, in the SASS "
        "(sm_90), wgmma / mma.sync counts (HGMMA + QGMMA (fp8) + IGMMA (int8) / HMMA + IMMA). "
        "A `[fp8]` / `[int8]` after the bucket names the operand type compiled (default bf16). Blocks: "
        "BLOCK_SIZE_M x N x K / num_warps / num_stages, then `/s<n>` for split-K and `/swap` for the Gluon "
        "ping-pong's transposed tile (its Triton fallback rows, same tile, have no mark).",
        "",
        "Findings the promises do not (yet) cover: the Triton-tier kernels use `global_load` on "
        "gfx942/gfx950, not buffer loads or direct-to-LDS loads, and Triton 3.6's block ping-pong "
        "pass does not fire for them (no `s_setprio`), also for the 8-warp 256 x 256 x 64 "
        "configs; the seeds' schedule on AMD is the Gluon kernel's job.",
    ]
    for arch, rs in by_arch.items():
        ok = sum(r["ok"] and r["promises_ok"] for r in rs)
        text += ["", f"## {arch} ({ok}/{len(rs)} cases keep every promise)", "", format_rows(rs, markdown=True)]
    Path(path).write_text("\n".join(text) + "\n")
