"""The Gluon names that moved between Triton releases, resolved once at import (issue 33).

The Gluon kernels here (hopper_*.py, cdna_*.py) call these names instead of Triton's, so one
source compiles on every Triton gemmkit supports; this file is the only place that looks at
what the installed Triton has. Each name is resolved by presence, the new spelling first, never
by version number (a backport or a dev build gets whichever it has):

  ours           what it is                         3.6              3.7              3.8                  3.9
  tma_load       TMA copy global -> shared,         tma.async_copy_  tma.async_copy_  tma.async_load (old  tma.async_load (old
                 completes on an mbarrier           global_to_shared global_to_shared name: an alias)      name raises)
  tma_store      TMA copy shared -> global          tma.async_copy_  tma.async_copy_  tma.async_store (old tma.async_store (old
                                                    shared_to_global shared_to_global name: an alias)      name raises)
  cp_async_load  cp.async copy global -> shared     async_copy.      async_copy.      async_copy.          async_copy.
                 (nvidia.ampere.async_copy)         async_copy_      async_copy_      async_load (old      async_load (old
                                                    global_to_shared global_to_shared name: an alias)      name raises)
  reinterpret    shared_memory_descriptor viewed as smem.            smem.            smem.                smem.reinterpret
                 another dtype / shape / layout     _reinterpret     _reinterpret     _reinterpret         (_reinterpret gone)
  barrier        CTA-wide thread barrier            gl.thread_       gl.barrier       gl.barrier           gl.barrier
                                                    barrier          (thread_barrier
                                                                     gone)

(tma = triton.experimental.gluon.language.nvidia.hopper.tma, async_copy = ...nvidia.ampere.async_copy,
gl = triton.experimental.gluon.language. The 3.7 / 3.8 columns are read from those wheels' sources;
3.6 and 3.9 are also compiled against: tests/kernels/test_gluon_compat.py, `gemmkit isa`.)

The argument order of each pair is the same (checked in the 3.6 and 3.9 sources):
  tma_load(desc, coord, mbarrier, smem, pred=True)   tma_store(desc, coord, smem)
  cp_async_load(smem, pointer, mask=None)            reinterpret(smem, dtype, shape, layout)
  barrier()

Constraints:
  - tma_load, tma_store, cp_async_load and barrier are Triton's builtin function objects themselves,
    re-exported (the Gluon frontend calls a module-level builtin like its own): no wrapper, so the
    compiled code is the same as with the name they stand for (3.6: SASS / PTX / AMDGCN identical).
    Call them with positional arguments, plus only keywords both spellings take (pred, mask); the
    new-only ones (multicast, cache_policy; barrier's cluster) would fail on 3.6.
  - reinterpret is a method on 3.6 - 3.9, so it is a `@gluon.jit` helper (inlined; 3.6's SASS is the same
    as the method's) defined for the method the installed Triton has. dtype, shape and layout are
    constexpr parameters: pass the shape as a constexpr variable (`shape: gl.constexpr = [n, 1]`), not a
    list or tuple literal (a jit call does not take one: "'int' object has no attribute 'type'").
  - The old names are only looked up when the new one is missing: on 3.9 the old TMA / cp.async names
    still exist but raise RuntimeError when compiled, so "has the old name" proves nothing.
  - Kernel files import these from here and use none of the moved names directly
    (tests/kernels/test_gluon_compat.py scans them).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _cp_async
from triton.experimental.gluon.language.nvidia.hopper import tma as _tma

__all__ = ["tma_load", "tma_store", "cp_async_load", "reinterpret", "barrier", "RESOLVED"]


def _pick(module, new: str, old: str):
    """`module.new` if the installed Triton has it, else `module.old`; (function, the name used)."""
    fn = getattr(module, new, None)
    if fn is not None:
        return fn, new
    return getattr(module, old), old


tma_load, _tma_load_name = _pick(_tma, "async_load", "async_copy_global_to_shared")
tma_store, _tma_store_name = _pick(_tma, "async_store", "async_copy_shared_to_global")
cp_async_load, _cp_async_load_name = _pick(_cp_async, "async_load", "async_copy_global_to_shared")
barrier, _barrier_name = _pick(gl, "barrier", "thread_barrier")

if hasattr(gl.shared_memory_descriptor, "reinterpret"):
    _reinterpret_name = "reinterpret"

    @gluon.jit
    def reinterpret(smem, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
        """`smem` viewed as `dtype` / `shape` / `layout` (Triton >= 3.8's public method)."""
        return smem.reinterpret(dtype, shape, layout)
else:
    _reinterpret_name = "_reinterpret"

    @gluon.jit
    def reinterpret(smem, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
        """`smem` viewed as `dtype` / `shape` / `layout` (Triton 3.6's private method)."""
        return smem._reinterpret(dtype, shape, layout)

# ours -> the Triton name it resolved to (for tests and bug reports)
RESOLVED = {
    "tma_load": f"tma.{_tma_load_name}",
    "tma_store": f"tma.{_tma_store_name}",
    "cp_async_load": f"async_copy.{_cp_async_load_name}",
    "reinterpret": f"shared_memory_descriptor.{_reinterpret_name}",
    "barrier": f"gl.{_barrier_name}",
}
