"""Static compile report: every shipped config of every op, for its table's target, on the CPU."""
from __future__ import annotations

import json

from .. import arch as _arch
from .. import configs as _configs
from . import compile_static, resources


def static_cases(op: str = "a16w16"):
    """(arch, table file name, bucket, config, path) for every shipped config.

    On sm_90 a config with "tma": true is compiled for both paths: the TMA
    kernel, and the pointer kernel the op falls back to when alignment forbids TMA.
    """
    for path in _configs.shipped_tables(op):
        arch = path.parent.name
        raw = json.loads(path.read_text())
        for bucket, cfg in raw.items():
            cfg = _configs.validate_config(cfg, backend=_arch.ARCHS[arch].backend, where=f"{path}:{bucket}")
            paths = ["tma", "pointer"] if cfg.get("tma") else ["pointer"]
            for p in paths:
                yield arch, path.name, bucket, cfg, p


def compile_case(arch: str, cfg: dict, path: str):
    from ..ops.gemm_a16w16 import smem_bytes, static_spec

    target = _arch.ARCHS[arch]
    kernel, sig, ce, divisible, opts = static_spec(cfg, target, tma=(path == "tma"))
    compiled = compile_static(kernel, sig, ce, target, opts, divisible)
    res = resources(compiled, target)
    res["smem_bound"] = smem_bytes(cfg, target, 2, 2, path == "tma")
    res["smem_limit"] = target.shared_mem_bytes
    return compiled, res


def print_summary(op: str = "a16w16") -> bool:
    print(f"static compile of gemm_{op}, every shipped config (Triton compiles for targets it has no GPU for):")
    print(f"{'arch':7s} {'table:bucket':42s} {'path':8s} {'blocks MxNxK/w/s':18s} {'regs':>9s} {'spill':>6s} "
          f"{'smem':>7s} {'mma':>7s}")
    print("  (mma: v_mfma count on AMD; HGMMA/HMMA count in the SASS on sm_90)")
    ok = True
    for r in collect(op):
        cfg = r["config"]
        where = f"{r['table']}:{r['bucket']}"
        blocks = f"{cfg['BLOCK_SIZE_M']}x{cfg['BLOCK_SIZE_N']}x{cfg['BLOCK_SIZE_K']}/{cfg['num_warps']}/{cfg['num_stages']}"
        if not r["ok"]:
            ok = False
            print(f"{r['arch']:7s} {where:42s} {r['path']:8s} {blocks:18s} FAILED: {r['error'].splitlines()[0][:80]}")
            continue
        regs = f"{r['vgpr']}v/{r['agpr']}a" if "vgpr" in r else str(r["regs"])
        mma = r["mfma"] if "mfma" in r else f"{r['hgmma']}/{r['hmma']}"
        bad = r["spill_bytes"] > 0 or r["shared_bytes"] > r["smem_limit"]
        ok &= not bad
        print(f"{r['arch']:7s} {where:42s} {r['path']:8s} {blocks:18s} {regs:>9s} {r['spill_bytes']:6d} "
              f"{r['shared_bytes']:7d} {mma:>7}{'  PROBLEM' if bad else ''}")
    print("static compile:", "ok" if ok else "FAILED")
    return ok


def collect(op: str = "a16w16") -> list:
    """Compile every shipped case and return one row per case (JSON-able).

    Static compiles need Triton's JIT kernels: when this process runs Triton's
    interpreter (TRITON_INTERPRET=1, as the CPU tests do), the kernels are
    interpreter objects, so the compiles run in a fresh process without it.
    """
    import os
    import subprocess
    import sys

    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        env = dict(os.environ, TRITON_INTERPRET="0")
        code = f"import json; from gemmkit.isa.report import collect; print(json.dumps(collect({op!r})))"
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"static compile subprocess failed:\n{r.stderr[-4000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])
    from concurrent.futures import ProcessPoolExecutor

    cases = [{"op": op, "arch": a, "table": f, "bucket": b, "config": c, "path": p} for a, f, b, c, p in static_cases(op)]
    workers = max(1, min(len(cases), os.cpu_count() or 1))
    if workers == 1:
        return [_compile_row(row) for row in cases]
    with ProcessPoolExecutor(workers) as pool:  # compiles are CPU-bound and independent
        return list(pool.map(_compile_row, cases, chunksize=4))


def _compile_row(row: dict) -> dict:
    row = dict(row)
    try:
        _, res = compile_case(row["arch"], row["config"], row["path"])
        row.update(res, ok=True)
    except Exception as e:  # reported per case; the tests fail on it
        row.update(ok=False, error=f"{type(e).__name__}: {e}"[:2000])
    return row
