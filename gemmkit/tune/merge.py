"""Merge tuner winners into existing table files (`<OP>-N=<N>-K=<K>.json`), bucket by bucket.

A shipped shape file holds `M_GEQ_<m>` buckets tuned at a few m; a bucket serves every M from
its m up to the next bucket. Tuning at a new M (say 32, between buckets 16 and 64) measures the
config that serves M today (the tuner always times it) beside the candidates, in one process.
For each tuned (M, N, K), with `win` the fastest correct row and `cur` the row of the config the
base table serves at M:

    win is cur's config ................................ keep   (nothing to say)
    cur is structurally wrong: M <= 64 and
      BLOCK_SIZE_M < M (two tile rows: w read twice) ... write
    cur was not measured (a progress file from a run
      against other tables) ............................ keep   (nothing to compare against)
    cur.ms / win.ms - 1 > min_gain ..................... write
    otherwise .......................................... keep   (a gain within timing noise)

where a `write` becomes `model` if the config model's choice for the shape (the tuner always times it too:
`configs.serve(..., shape_files=False)`) was measured within min_gain of win: the table then says "model"
(`configs.MODEL`) for that M rather than a copy of the model's config, so the model's later rules reach it. Where
no shape-file bucket serves M, cur is the model's config (the default table's bucket fitted, as a call gets it).

`write` is `M_GEQ_<M>` = win's config (or "model"): a new bucket inserted beside the others, or the existing
bucket of that name replaced (re-tuned). Buckets not tuned are kept as they are. Where a new
bucket at a lower M would start serving a tuned M that decided `keep` with a config not measured
there within min_gain of the best, that M gets its own bucket pinned to the config it kept.
Tables are merged from every run's progress at once (`--tables-from run1.jsonl run2.jsonl`):
the decisions then see every tuned M together, and merging again changes nothing. Every written
file is reloaded through `configs.load_table` (validation) and checked to serve each tuned M
with the config decided for it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .. import configs as _configs

__all__ = ["merge_tables", "serving", "rows_by_shape", "same_config", "bucket_order", "fallback_fits"]

_BUCKET = re.compile(r"^M_(LEQ|GEQ)_(\d+)$")


def same_config(a: dict, b: dict) -> bool:
    """Equal after defaults are filled in (the tuner's candidates spell every key; tables do not); a shape file's
    MODEL bucket equals no config."""
    if _configs.MODEL in (a, b):
        return a == b
    return _configs.validate_config(dict(a)) == _configs.validate_config(dict(b))


def serving(raw: dict, M: int):
    """(bucket key, config) that a table file's raw bucket dict serves at M, by the lookup rules of
    configs/__init__.py (M_LEQ ascending, then M_GEQ descending, then 'any'); None if no match."""
    leq, geq = [], []
    for key, cfg in raw.items():
        m = _BUCKET.match(key)
        if m:
            (leq if m.group(1) == "LEQ" else geq).append((int(m.group(2)), key, cfg))
    for bound, key, cfg in sorted(leq):
        if M <= bound:
            return key, cfg
    for bound, key, cfg in sorted(geq, reverse=True):
        if M >= bound:
            return key, cfg
    return ("any", raw["any"]) if "any" in raw else None


def bucket_order(raw: dict) -> dict:
    """Buckets in lookup order, as the shipped files write them: M_LEQ ascending, M_GEQ
    descending, then 'any'."""
    def rank(key):
        m = _BUCKET.match(key)
        if not m:
            return (2, 0)
        return (0, int(m.group(2))) if m.group(1) == "LEQ" else (1, -int(m.group(2)))
    return {k: raw[k] for k in sorted(raw, key=rank)}


def rows_by_shape(progress_rows, arch: str = "sm_90") -> dict:
    """{(M, N, K): [correct, timed rows]} from tune_progress rows (any op filtering done by the caller),
    without Gluon configs whose Triton fallback cannot run (see `fallback_fits`)."""
    out = {}
    for r in progress_rows:
        in_bytes = 1 if r.get("dtype") in ("fp8", "int8") else 2  # the operands the fallback would stage
        if "ms" in r and r.get("rel_err", 1.0) <= 2**-8 and fallback_fits(r["config"], arch, in_bytes):
            out.setdefault((r["M"], r["N"], r["K"]), []).append(r)
    return out


def fallback_fits(cfg: dict, arch: str, in_bytes: int = 2, out_bytes: int = 2) -> bool:
    """A "backend": "gluon" config (either layout) also runs on the Triton pointer kernel, with the same tiles, for
    calls the Gluon kernel cannot take (ops/dispatch.py): its shared memory
    must fit there too (64x256x64 with 6 stages fits the ping-pong's plan, not the pointer kernel's)."""
    if cfg.get("backend") != "gluon":
        return True
    from .. import arch as _arch
    from ..kernels.triton.dense import check_feasible

    try:
        check_feasible(_configs.validate_config(dict(cfg)), _arch.get(arch), in_bytes, out_bytes, tma=False)
    except ValueError:
        return False
    return True


def _strip(cfg: dict) -> dict:
    """Drop keys that equal their defaults, so tables stay short."""
    return {k: v for k, v in cfg.items() if _configs.DEFAULTS.get(k, object()) != v}


def _row_of(rows, cfg):
    hits = [r for r in rows if same_config(r["config"], cfg)]
    return hits[-1] if hits else None  # the latest measurement of that config


def decide(M: int, rows: list, served, min_gain: float, model_cfg: dict | None = None) -> dict:
    """One tuned shape's decision (see the module docstring). `served`: (source, config) the base
    tables serve at M; `model_cfg`: the config model's choice there (None: not known)."""
    win = min(rows, key=lambda r: r["ms"])
    source, cur_cfg = served
    cur = _row_of(rows, cur_cfg)
    d = {"M": M, "served_by": source, "win_ms": win["ms"], "config": _strip(win["config"]),
         "cur_ms": cur["ms"] if cur else None, "ref_ms": win.get("ref_ms")}
    structural = M <= 64 and cur_cfg["BLOCK_SIZE_M"] < M
    if same_config(win["config"], cur_cfg):
        d.update(action="keep", why="the serving config won")
    elif cur is None:  # a progress file measured against other tables: no comparison, no change
        d.update(action="write" if structural else "keep", why="serving config not measured"
                 + (f"; BLOCK_SIZE_M {cur_cfg['BLOCK_SIZE_M']} < M (w read twice)" if structural else ""))
    else:
        d["gain"] = cur["ms"] / win["ms"] - 1
        if structural:
            d.update(action="write", why=f"BLOCK_SIZE_M {cur_cfg['BLOCK_SIZE_M']} < M (w read twice)")
        elif d["gain"] > min_gain:
            d.update(action="write", why=f"{100 * d['gain']:+.1f}% > {100 * min_gain:.0f}%")
        else:
            d.update(action="keep", why=f"{100 * d['gain']:+.1f}% <= {100 * min_gain:.0f}% (noise)")
    mrow = _row_of(rows, model_cfg) if model_cfg is not None and not same_config(model_cfg, cur_cfg) else None
    if d["action"] == "write" and mrow is not None and mrow["ms"] <= win["ms"] * (1 + min_gain):
        d.update(action="model", config=_configs.MODEL,
                 why=d["why"] + f"; the config model's choice within {100 * (mrow['ms'] / win['ms'] - 1):.1f}% "
                                f"of the best")
    return d


def _model_choice(op: str, arch: str, default_raw: dict, M: int, N: int, K: int):
    """The config model's choice at (M, N, K) on the default table `default_raw` (None: no table)."""
    from .. import arch as _arch

    hit, large = serving(default_raw, M), serving(default_raw, 1 << 62)
    if hit is None:
        return None
    cfg = _configs.validate_config(dict(hit[1]))
    big = _configs.validate_config(dict(large[1])) if large else None
    return dict(_configs.fit_bucket(op, _arch.get(arch), cfg, big, M, N, K)[0])


def merge_tables(rows: dict, out_dir, arch: str, op: str = "a16w16", *, base_dir=None, min_gain: float = 0.02,
                 log=print):
    """Merge the tuned shapes `rows` ({(M, N, K): [rows]}) into `<base_dir>/<arch>/<OP>-N=..-K=...json`
    (default: the shipped tables) and write the changed files to `<out_dir>/<arch>/`
    (out_dir == base_dir: in place). Returns (written paths, decisions per (N, K))."""
    base = Path(base_dir) if base_dir is not None else _configs.CONFIG_DIR
    by_nk = {}
    for (M, N, K), rs in rows.items():
        if rs:
            by_nk.setdefault((N, K), {})[M] = rs
    default_path = base / arch / f"{op.upper()}.json"
    default_raw = json.loads(default_path.read_text()) if default_path.exists() else {}
    written, decisions = [], {}
    for (N, K), per_m in sorted(by_nk.items()):
        stem = f"{op.upper()}-N={N}-K={K}.json"
        src = base / arch / stem
        raw = json.loads(src.read_text()) if src.exists() else {}
        new = dict(raw)
        ds = []
        models = {M: _model_choice(op, arch, default_raw, M, N, K) for M in per_m}

        def served(table, M):  # (source, config) `table` (a raw shape file) serves at M; the model's where none
            hit = serving(table, M)
            if hit is not None and hit[1] != _configs.MODEL:
                return hit
            if models[M] is None:
                raise ValueError(f"merge: no table serves M={M} N={N} K={K} for {op} on {arch}")
            return f"{op.upper()}.json (the config model)", models[M]

        for M in sorted(per_m):
            hit = served(raw, M)
            d = decide(M, per_m[M], hit, min_gain, models[M])
            d["before"] = _configs.MODEL if hit[0].endswith("(the config model)") else hit[1]
            ds.append(d)
            if d["action"] in ("write", "model"):
                key = f"M_GEQ_{M}"
                d["bucket"] = ("replace " if key in raw else "add ") + key
                new[key] = d["config"]
        # A new bucket below a tuned M that kept its config must not change what serves that M,
        # unless the config that would serve it now was measured there within min_gain of the best.
        for d in ds:
            if d["action"] == "keep":
                now = served(new, d["M"])[1]
                before = models[d["M"]] if d["before"] == _configs.MODEL else d["before"]
                if same_config(now, before):
                    continue
                row = _row_of(per_m[d["M"]], now)
                if row is None or row["ms"] > d["win_ms"] * (1 + min_gain):
                    new[f"M_GEQ_{d['M']}"] = (_configs.MODEL if d["before"] == _configs.MODEL
                                              else _strip(_configs.validate_config(dict(d["before"]))))
                    d["bucket"] = f"pin M_GEQ_{d['M']}"
        for d in ds:
            d.pop("before")
        decisions[(N, K)] = ds
        if new == raw:
            continue
        new = bucket_order(new)
        path = Path(out_dir) / arch / stem
        for d in ds:  # check the new table serves what we decided before writing anything
            want = d["config"] if d["action"] in ("write", "model") else None
            got = serving(new, d["M"])
            if want is not None and (got is None or not same_config(got[1], want)):
                raise ValueError(f"{path}: M={d['M']} would be served by {got and got[0]}, not the bucket being "
                                 "written (an M_LEQ bucket in the file shadows it); nothing written")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(new, indent=1) + "\n")
        _configs.load_table.cache_clear()
        _configs.load_table(str(path))  # validate what we wrote
        written.append(path)
    _configs.clear_cache()
    for (N, K), ds in sorted(decisions.items()):
        for d in ds:
            cur = f"{d['cur_ms'] * 1e3:8.1f}" if d["cur_ms"] else "     n/a"
            log(f"merge {op} N={N:6d} K={K:6d} M={d['M']:6d}: {d['action']:5s} {d.get('bucket', ''):18s} "
                f"best {d['win_ms'] * 1e3:8.1f} us, served by {d['served_by']} {cur} us ({d['why']})")
    return written, decisions
