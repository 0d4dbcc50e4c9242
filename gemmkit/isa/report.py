"""`gemmkit isa`: every kernel x shipped config, compiled for its target on the CPU, with its promises checked.

Cases: for each op, every bucket of every shipped table for its arch (sm_90
configs with "tma": true compile both the TMA kernel and the pointer kernel the
op falls back to), plus the op's auxiliary kernels (the split-K reduce) once per
target. Compiles run in parallel processes and are cached on disk by (kernel
source hash, the full compile spec: signature, constexprs, options; config,
path, target, Triton version, analysis version): `GEMMKIT_CACHE_DIR`
(default ~/.cache/gemmkit), subfolder isa/.
"""
from __future__ import annotations

import hashlib
import json
import os
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
        kernel, sig, ce, div, opts, promises, block, bound = _spec(case)
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


def collect(op: str = "a16w16", archs=None, use_cache: bool = True) -> list:
    """Report rows for every case of `op` ('all': every op), compiled in parallel.

    Static compiles need Triton's JIT objects, which an interpreter process
    (TRITON_INTERPRET=1, as the CPU tests run) does not have: then the work runs
    in a fresh process without it.
    """
    import subprocess
    import sys

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        env = dict(os.environ, TRITON_INTERPRET="0")
        code = (f"import json; from gemmkit.isa.report import collect; "
                f"print(json.dumps(collect({op!r}, {archs!r}, {use_cache!r})))")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"static compile subprocess failed:\n{r.stderr[-4000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])
    from concurrent.futures import ProcessPoolExecutor

    ops = OPS if op == "all" else (op,)
    cases = [c for o in ops for c in static_cases(o, archs)]
    workers = max(1, min(len(cases), os.cpu_count() or 1))
    if workers == 1:
        return [analyze(c, use_cache) for c in cases]
    with ProcessPoolExecutor(workers) as pool:  # compiles are CPU-bound and independent
        return list(pool.map(analyze, cases, [use_cache] * len(cases), chunksize=4))


def _blocks(cfg, kernel=""):
    """A config's label; `/swap` only on the Gluon ping-pong's own rows (its Triton fallback runs the tile unswapped)."""
    if "BLOCK_SIZE_M" in cfg:
        return f"{cfg['BLOCK_SIZE_M']}x{cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']}/{cfg['num_warps']}/{cfg['num_stages']}" + \
            (f"/s{cfg['NUM_KSPLIT']}" if cfg.get("NUM_KSPLIT", 1) > 1 else "") + \
            ("/swap" if cfg.get("swap_ab") and kernel == "hopper_pingpong_kernel" else "")
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
        else:
            bad = [c for c in r["promises"] if not c["ok"]]
            verdict = f"{len(r['promises'])} ok" if not bad else "BROKEN: " + "; ".join(
                f"{c['promise']} ({c['detail']})" for c in bad)
            cells = [r["arch"], r["kernel"], where, _blocks(r["config"], r["kernel"]), str(r["vgpr"]), str(r["agpr"]), str(r["sgpr"]),
                     str(r["spill_bytes"]), str(r["lds_bytes"]), str(r["occupancy"]), _mma(r), verdict]
        if markdown:
            lines.append("| " + " | ".join(cells) + " |")
        else:
            lines.append(f"{cells[0]:7s} {cells[1]:24s} {cells[2]:40s} {cells[3]:20s} {cells[4]:>5s} {cells[5]:>5s} "
                         f"{cells[6]:>5s} {cells[7]:>6s} {cells[8]:>7s} {cells[9]:>4s} {cells[10]:>7s}  {cells[11]}")
    return "\n".join(lines)


def print_summary(op: str = "a16w16", archs=None, json_path=None, markdown_path=None) -> bool:
    rows = collect(op, archs)
    print(f"static compile of {op} kernels x shipped configs on {', '.join(archs or _arch.ARCHS)} "
          "(Triton compiles for targets it has no GPU for); occ = waves/SIMD (AMD), resident warps/SM (sm_90); "
          "mma = v_mfma (AMD), wgmma/mma.sync (sm_90: HGMMA+QGMMA+IGMMA / HMMA+IMMA)")
    print(format_rows(rows))
    ok = all(r["ok"] and r["promises_ok"] for r in rows)
    n_promises = sum(len(r["promises"]) for r in rows)
    print(f"static compile: {'ok' if ok else 'FAILED'} ({len(rows)} kernel x config x target cases, "
          f"{n_promises} promises checked)")
    if json_path:
        Path(json_path).write_text(json.dumps(rows, indent=1) + "\n")
    if markdown_path:
        write_markdown(rows, markdown_path)
    return ok


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
        "(tests/test_isa.py). No AMD hardware has run these kernels: the AMD rows are compiled "
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
