"""The tuning cache: configs measured on the user's own device for shapes no table serves (opt-in).

    GEMMKIT_TUNE=off      (default) the shipped tables and the config model, nothing else
    GEMMKIT_TUNE=cached   also the configs tuned earlier on this device, read from the store below; never tunes
    GEMMKIT_TUNE=on       as cached, and a shape the store lacks is tuned on its first call (gemmkit/tune/online.py),
                          within GEMMKIT_TUNE_BUDGET_S seconds (default 30), then stored (1 / true: on; 0 / false: off)
    gemmkit.set_tuning(mode, budget_s=None) sets both at run time (None: back to the environment).

What is tuned: the dense ops (gemm_a16w16, gemm_a8w8, gemm_a8w8_blockscale) on shapes whose config comes from a
default table (`configs.tuned(source)` false: no shape file measured this (N, K)). Shapes with a shape file keep
it. Calls with `config=` keep it. A call is tuned on a CUDA device only, never while a CUDA graph is captured or
torch.compile traces (those calls take the tables' config and tune nothing; a call plan recorded then keeps that
config for its signature: a later eager call of the shape with another signature, or after gemmkit.set_tuning,
which forgets the plans, tunes). An entry is measured without bias or activation, with the op's default output dtype
(bf16) and block shape: calls of other variants run the same config (ops/dispatch.py fits it to the call).

One store file per device kind and compiler (a config measured under another Triton, or on another GPU, is not
this one's measurement):

    <GEMMKIT_CACHE_DIR or ~/.cache/gemmkit>/tuned/<arch>/<device name>-triton<version>.json
    {"format": 1, "device": "NVIDIA H200", "arch": "sm_90", "triton": "3.6.0",
     "entries": {"a16w16 bf16 M=256 N=2880 K=5120": {"config": {...} or null, "ms": .., "served_ms": ..,
                                                     "served": "<what the tables served>", "timed": 14, ...}}}

An entry's M is the call's M rounded up to a power of two (`m_bucket`): a server's ever-changing M tunes at most
one shape per power of two, and a call at M runs the config tuned at its bucket's M. "config": null records
that nothing beat the tables' config by the tuner's margin: the call keeps the tables' choice at its own M.

The store is read once per process and file (later writes by other processes are seen by the next process);
an entry is written by reading the file again, adding it and replacing the file whole (os.replace), so two
processes tuning at once lose no file, at worst one of their entries. A file that is not such a store, or an entry
this gemmkit cannot run (another version sharing the directory), is ignored with a warning (`gemmkit tune --cache`
names it); an unwritable directory keeps the entries in the process, with a warning.

Layers: this module stores and finds entries; the tuner (tune/online.py, above ops/) registers itself here with
`set_tuner`, so that ops/ can call it without importing upward.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
import warnings
from pathlib import Path

from . import ConfigError, validate_config

__all__ = ["mode", "budget_s", "set_mode", "m_bucket", "store_path", "lookup", "record", "KEEP", "set_tuner",
           "tuner", "entry_key", "entries", "read_file", "cache_root", "forget"]

MODES = ("off", "cached", "on")
DEFAULT_BUDGET_S = 30.0
FORMAT = 1
KEEP = "keep"  # lookup's answer for an entry that kept the tables' config
_OVERRIDE = {"mode": None, "budget_s": None}
_STORES: dict = {}  # path -> {"entries": {...}} as this process knows it
_LOCK = threading.RLock()
_TUNER = None


_ALIASES = {"": "off", "0": "off", "false": "off", "1": "on", "true": "on"}  # the usual spellings of a switch


def mode() -> str:
    """The tuning mode in force: set_mode's, else GEMMKIT_TUNE's (off, cached, on; 1 / true and 0 / false mean on
    and off)."""
    if _OVERRIDE["mode"]:
        return _OVERRIDE["mode"]
    raw = os.environ.get("GEMMKIT_TUNE", "off")
    m = raw.strip().lower()
    m = _ALIASES.get(m, m)
    if m not in MODES:
        raise ConfigError(f"GEMMKIT_TUNE: expected one of {', '.join(MODES)} (or 1 / 0), got {raw!r}")
    return m


def budget_s() -> float:
    """Seconds one shape's tuning may take: set_mode's, else GEMMKIT_TUNE_BUDGET_S's, else 30."""
    if _OVERRIDE["budget_s"] is not None:
        return _OVERRIDE["budget_s"]
    raw = os.environ.get("GEMMKIT_TUNE_BUDGET_S")
    if raw is None:
        return DEFAULT_BUDGET_S
    try:
        v = float(raw)
    except ValueError:
        v = -1.0
    if not v > 0:
        raise ConfigError(f"GEMMKIT_TUNE_BUDGET_S: expected a positive number of seconds, got {raw!r}")
    return v


def set_mode(m: str | None, budget: float | None = None):
    """Set the mode (and budget) for this process; None: back to the environment's."""
    if m is not None and m not in MODES:
        raise ValueError(f"mode: expected one of {', '.join(MODES)} or None, got {m!r}")
    if budget is not None and not (isinstance(budget, (int, float)) and budget > 0):
        raise ValueError(f"budget_s: expected a positive number of seconds or None, got {budget!r}")
    _OVERRIDE["mode"], _OVERRIDE["budget_s"] = m, (float(budget) if budget is not None else None)


def m_bucket(M: int) -> int:
    """The M an entry is tuned at and stored under: M rounded up to a power of two."""
    return 1 << max(0, M - 1).bit_length()


def cache_root() -> Path:
    return Path(os.environ.get("GEMMKIT_CACHE_DIR") or Path.home() / ".cache" / "gemmkit") / "tuned"


def store_path(arch: str, device: str) -> Path:
    """The store file of one device kind (its name as torch gives it) under the installed Triton."""
    import triton

    slug = re.sub(r"[^A-Za-z0-9.]+", "_", device).strip("_") or "device"
    return cache_root() / arch / f"{slug}-triton{triton.__version__}.json"


def entry_key(op: str, dtype: str, M: int, N: int, K: int) -> str:
    return f"{op} {dtype} M={m_bucket(M)} N={N} K={K}"


def read_file(path: Path, strict: bool = True) -> dict:
    """A store file's entries (key -> entry, configs validated); {} where there is none. strict (`gemmkit tune
    --cache`): ConfigError names a file that is not a store, or an entry this gemmkit cannot run. Not strict (the
    calls' lookups, `record`): such a file counts as empty and such entries as absent, with one warning a file (a
    store written by another gemmkit sharing the cache directory must not fail the calls: the shapes tune again)."""
    if not path.exists():
        return {}
    problems = []
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raw, why = None, f"not a gemmkit tuning cache ({e})"
    else:
        why = None if (isinstance(raw, dict) and raw.get("format") == FORMAT and isinstance(raw.get("entries"), dict)) \
            else f"not a gemmkit tuning cache of format {FORMAT}"
    if why:
        if strict:
            raise ConfigError(f"{path}: {why}; delete it to start over")
        _warn_once(path, f"{path}: {why}: ignored (its shapes tune again, and the file is replaced)")
        return {}
    backend = "cuda" if path.parent.name.startswith("sm_") else "hip"
    out = {}
    for key, e in raw["entries"].items():
        try:
            if not isinstance(e, dict) or "config" not in e:
                raise ConfigError(f"{path}: entry {key!r} has no 'config'")
            if e["config"] is not None:
                e["config"] = validate_config(e["config"], backend=backend, where=f"{path}: entry {key!r}")
        except ConfigError as err:
            if strict:
                raise ConfigError(f"{err}; delete the file to start over") from None
            problems.append(key)
            continue
        out[key] = e
    if problems:
        _warn_once(path, f"{path}: {len(problems)} entr{'y' if len(problems) == 1 else 'ies'} this gemmkit cannot "
                         f"run ignored ({', '.join(problems[:3])}{', ...' if len(problems) > 3 else ''})")
    return out


_WARNED: set = set()


def _warn_once(path: Path, message: str):
    if (path, message) not in _WARNED:  # once a process per file and problem
        _WARNED.add((path, message))
        warnings.warn("gemmkit tuning cache: " + message, RuntimeWarning, stacklevel=3)


def entries(path: Path) -> dict:
    """The entries of a store file as this process knows them (read once)."""
    with _LOCK:
        if path not in _STORES:
            _STORES[path] = read_file(path, strict=False)
        return _STORES[path]


def lookup(op: str, dtype: str, arch: str, device: str, M: int, N: int, K: int):
    """(config, source) stored for the shape's bucket, KEEP where the tables' config was kept, None where the store
    has no entry."""
    path = store_path(arch, device)
    key = entry_key(op, dtype, M, N, K)
    e = entries(path).get(key)
    if e is None:
        return None
    if e["config"] is None:
        return KEEP
    return dict(e["config"]), f"tuning cache {path}: {key}"


def record(op: str, dtype: str, arch: str, device: str, M: int, N: int, K: int, config, **facts) -> Path:
    """Store one entry (config None: the tables' config kept) with the measurements behind it; returns the file.
    The entry serves this process even where the file cannot be written (a warning says so)."""
    path = store_path(arch, device)
    key = entry_key(op, dtype, M, N, K)
    backend = "cuda" if arch.startswith("sm_") else "hip"
    entry = {"config": None if config is None else validate_config(dict(config), backend=backend,
                                                                      where=f"tuning cache entry {key!r}"),
             **facts, "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with _LOCK:
        import triton

        on_disk = read_file(path, strict=False)
        on_disk[key] = entry
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps({"format": FORMAT, "device": device, "arch": arch,
                                       "triton": triton.__version__, "entries": on_disk},
                                      indent=1, sort_keys=True) + "\n")
            os.replace(tmp, path)
        except OSError as e:
            _warn_once(path, f"{path}: not written ({e}); this process keeps its entries")
        entries(path)[key] = entry
    return path


def forget():
    """Drop what this process read of the store files (the next lookup reads them again)."""
    with _LOCK:
        _STORES.clear()


def set_tuner(fn):
    """Register the function that tunes a shape on its first call (tune/online.py)."""
    global _TUNER
    _TUNER = fn


def tuner():
    return _TUNER
