"""A shape tuned on its first call (GEMMKIT_TUNE=on, or gemmkit.set_tuning("on")); the store and the modes:
configs/usercache.py.

    first call of a dense op, no shape file, no store entry for (op, dtype, M bucket, N, K)
      └─► ops/_common.resolve_config ─► tune_call (here, outside any call plan's recording):
            1. candidates: the tables' config at the bucket's M, then up to MAX_PER_FAMILY of each kernel family
               (Triton; each Gluon kernel) of the op's search space (tune/space.py), pruned as `gemmkit tune`
               prunes, drawn as it draws
            2. fresh random operands of the bucket's shape on the call's device, rotated past the L2 where a
               quarter of the free memory holds the sets (else fewer sets)
            3. every candidate compiled in parallel (Triton's AsyncCompileMode); then each checked against the
               fp32 reference and timed (CUDA-graph replay, REP_MS), the tables' config first, until the
               budget (GEMMKIT_TUNE_BUDGET_S, default 30 s, from the end of the compiles) is spent and one
               candidate besides the tables' config ran
            4. `decide`: the store gets the fastest where it beats the tables' config by MIN_GAIN, else a record that
               the tables' config stays; the call and every later one (this process and the next) run what is stored
      a failure (no memory for the operands, the tables' config or every other candidate failed): a warning, the
      tables' config, no entry; this process does not try that shape again

One shape tunes at a time (a lock): a second thread's call of the same shape waits and finds the entry.
The first call of a shape takes up to the budget plus the compiles of its candidates; calls of shapes the store
holds cost what a call without tuning costs (the entry is looked up where the tables would be, once per call
signature with call plans).
"""
from __future__ import annotations

import logging
import os
import threading
import time
import warnings

from .. import configs as _configs
from ..configs import usercache
from .merge import same_config
from .space import op_space

__all__ = ["set_tuning", "tune_call", "install", "decide", "MAX_PER_FAMILY", "MIN_GAIN", "REP_MS"]

MAX_PER_FAMILY = 6  # candidates per kernel family beside the tables' config: about 20 compiles, 10-30 s on 16 cores
MIN_GAIN = 0.03  # a winner must beat the tables' config by 3% (the timing noise of a 20 ms rep is 1-2%)
REP_MS = 20  # timing per candidate (do_bench's rep) after a 10 ms warm-up
MEMORY_SHARE = 0.25  # of the free device memory, at most, for the tuner's operand sets
_LOCK = threading.Lock()
_FAILED: set = set()
log = logging.getLogger("gemmkit.tune")


def set_tuning(mode: str | None, budget_s: float | None = None):
    """Tune shapes no table serves on their first call ("on"), serve only what was tuned before ("cached"), or
    neither ("off"); None: GEMMKIT_TUNE's mode. `budget_s`: seconds one shape's tuning may take (None:
    GEMMKIT_TUNE_BUDGET_S, default 30). Call plans recorded before are forgotten (their configs were chosen
    under the mode before)."""
    from .. import callplan

    usercache.set_mode(mode, budget_s)
    callplan.clear()


def install():
    """Register `tune_call` as the tuner ops/ call on a miss (gemmkit/__init__.py does, at import)."""
    usercache.set_tuner(tune_call)


def tune_call(op: str, dtype: str, device, target, M: int, N: int, K: int):
    """Tune (op, dtype) at M's bucket, N, K on `device` and store the result (see the module docstring)."""
    mb = usercache.m_bucket(M)
    name = f"{op} {dtype} M={mb} N={N} K={K}"
    key = (op, dtype, str(device), mb, N, K)
    with _LOCK:
        if key in _FAILED or usercache.lookup(op, dtype, target.arch, _device_name(device), M, N, K) is not None:
            return
        try:
            _tune(op, dtype, device, target, mb, N, K, name)
        except Exception as e:  # never the call's failure: it runs the tables' config
            _FAILED.add(key)
            warnings.warn(f"gemmkit: tuning {name} failed ({type(e).__name__}: {str(e)[:200]}); "
                          "the tables' config serves it", RuntimeWarning, stacklevel=2)


def _device_name(device):
    from ..ops._common import device_name

    return device_name(device)


def _tune(op, dtype, device, target, M, N, K, name):
    import torch
    from concurrent.futures import ThreadPoolExecutor
    from triton.runtime._async_compile import AsyncCompileMode

    from ..bench.ops import get as get_op
    from ..bench.timing import rotation_count
    from . import measure, pick_candidates, prune

    t0 = time.monotonic()
    bop = get_op(op)
    table_op = bop.table_op(dtype)
    served, source = _configs.serve(table_op, target, M, N, K)
    served = _configs.validate_config(served)
    space = op_space(op)(M, N, K, target)
    if dtype == "int8":  # the FP8 Gluon kernel does not take int8
        space = [c for c in space if c.get("backend", "triton") == "triton"]
    pruned = prune(space, M, N, K, target, bop.operand_bytes(dtype), bop.out_dtype(dtype).itemsize,
                   bop.acc_tiles(dtype, target))
    cands = [served] + [c for c in pick_candidates(space, pruned, M, MAX_PER_FAMILY) if not same_config(c, served)]
    _flops, nbytes = bop.work(M, N, K, dtype)
    ref_bytes = 4 * (M * K + N * K + M * N)  # the fp32 reference and the fp32 operands it is computed from
    with torch.cuda.device(device), torch.no_grad():
        free, _total = torch.cuda.mem_get_info(device)
        room = int((free * MEMORY_SHARE - ref_bytes) // max(int(nbytes), 1))
        if room < 1:
            raise MemoryError(f"one operand set and its fp32 reference ({(nbytes + ref_bytes) / 2**20:.0f} MiB) "
                              f"exceed {MEMORY_SHARE:.0%} of the free device memory ({free / 2**20:.0f} MiB)")
        sets = [bop.make_inputs(M, N, K, dtype, device) for _ in range(min(room, rotation_count(nbytes, target.l2_bytes)))]
        ref = bop.reference(sets[0])
        ref_norm = ref.norm().item()
        with ThreadPoolExecutor(os.cpu_count() or 4) as pool, AsyncCompileMode(pool, ignore_errors=True):
            for c in cands:
                try:
                    bop.compile_for(sets[0], c)
                except Exception:  # measured (and dropped) below
                    pass
        deadline = time.monotonic() + usercache.budget_s()  # the budget is the timing's: compiles come first
        rows = []
        for c in cands:
            if sum("ms" in r for _, r in rows) >= 2 and time.monotonic() > deadline:  # a comparison made
                break
            rows.append((c, measure(bop, sets, ref, ref_norm, c, REP_MS)))
        del sets, ref
    choice, facts = decide(rows)
    from .. import __version__

    path = usercache.record(op, dtype, target.arch, _device_name(device), M, N, K, choice, served=source,
                            candidates=len(cands), seconds=round(time.monotonic() - t0, 1), gemmkit=__version__,
                            **facts)
    log.info("gemmkit: tuned %s in %.0f s (%d of %d candidates timed): %s -> %s", name, time.monotonic() - t0,
             len(rows), len(cands), "the tables' config kept" if choice is None else
             f"{facts['served_ms'] / facts['ms']:.2f}x the tables' config", path)


def decide(rows):
    """(config to store, or None where the tables' config stays; the facts an entry keeps) from the measured rows,
    [(config, measure's row)] with the tables' config first. ValueError where nothing decides: the tables' config
    failed, or no other candidate ran (an entry then would claim a comparison that was not made)."""
    if not rows or "ms" not in rows[0][1]:
        raise ValueError("the tables' config did not run: " + (rows[0][1].get("error", "?") if rows else "no row"))
    served_ms = rows[0][1]["ms"]
    ok = [(c, r) for c, r in rows if "ms" in r]
    if len(ok) < 2:
        raise ValueError(f"no candidate beside the tables' config ran ({len(rows) - 1} tried)")
    best, best_row = min(ok, key=lambda cr: cr[1]["ms"])
    keep = not best_row["ms"] < served_ms * (1 - MIN_GAIN)
    return (None if keep else dict(best)), {"ms": best_row["ms"], "served_ms": served_ms, "timed": len(ok)}
