"""Memory bounds in Triton's interpreter: every element a kernel loads, stores or updates atomically on the CPU must
lie inside the elements of a tensor its launch was given (each tensor argument as the view it is: its shape and
strides, not the rest of its storage; a TMA descriptor's base included), or inside one a test declares reachable
through a pointer table (`reachable`). The CPU tests' counterpart of compute-sanitizer's memcheck, and stricter: a
read in the gap of a strided view, or past a narrowed view's last row, is caught though the memory is mapped. A
tensor whose dims overlap or interleave (stride 0, a broadcast, more than 4 dims) is checked by its storage.

Why: the interpreter dereferences real addresses, so an out-of-bounds read returns whatever lies next to the tensor,
and a test passes or fails with the allocator's layout. The property tests once drew such a call (a8w8_blockscale,
K = 1 on a padded copy, block_k 32: scale columns read past x_scale's last), failed once in a CI run and passed on
Hypothesis's replay. Checked here, it fails every time, with the kernel and the addresses.

This instruments Triton's interpreter only (what gemmkit's kernels do is unchanged): `install` wraps the
interpreter's argument staging (to learn each launch's tensors) and its masked load, masked store and atomic
builders (each element the mask keeps, its whole width). A violation raises inside the kernel (the launch fails
with an InterpreterError) and is recorded, so a test that catches the error still fails (conftest's autouse
fixture reads `take_violations`). The wrapped functions have the same names and argument order in Triton 3.6-3.9;
where one is missing `install` returns False and nothing is checked (conftest then warns).
"""
from __future__ import annotations

import contextlib

import numpy as np

_LAUNCH: list = []  # (first byte, one past the last, what) of the storages behind the running launch's tensors
_VIEWS: list = []  # `_view`s of the running launch's tensors: the elements each one covers
_REACHABLE: list = []  # (first byte, one past the last, what) of tensors a test declared reachable (`reachable`)
_KERNEL = ["?"]  # the running launch's kernel name
_VIOLATIONS: list = []


class OutOfBounds(AssertionError):
    pass


def _storage_range(t, what):
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes(), what


def _view(t):
    """(address, element bytes, [(byte stride, size), ...] outermost first, bytes of the innermost run) of a tensor
    whose elements a byte address can be matched to: its dims nested (no two elements at one address, no stride 0),
    at most 4 of them; None otherwise (its storage is what is checked). The innermost run is the unit-stride dim's
    row of elements (accesses wider than an element, within a row, are in it), else one element."""
    if t.numel() == 0:
        return t.data_ptr(), 1, [(1, 0)], 0
    el = t.element_size()
    dims = sorted(((st, n) for st, n in zip(t.stride(), t.shape) if n > 1), reverse=True)
    if len(dims) > 4 or any(st <= 0 for st, _ in dims):
        return None
    for (outer, _), (inner, n) in zip(dims, dims[1:]):
        if outer < inner * n:
            return None  # overlapping or interleaved dims
    run = el
    if dims and dims[-1][0] == 1:
        run = dims[-1][1] * el
        dims = dims[:-1]
    return t.data_ptr(), el, [(st * el, n) for st, n in dims], run


def _in_view(p, width, view):
    """Which of the byte addresses `p` (an access of `width` bytes each) lie wholly inside the elements of `view`."""
    base, _, dims, run = view
    r = p.astype(np.int64) - np.int64(base)
    ok = r >= 0
    for stride, n in dims:
        i = np.where(ok, r // stride, 0)
        ok &= i < n
        r = r - i * stride
    return ok & (r + width <= run)


def _collect(arg, out, what, views=None):
    if isinstance(arg, (tuple, list)):
        for a in arg:
            _collect(a, out, what, views)
    elif hasattr(arg, "block_shape") and hasattr(arg, "base"):  # a host TMA descriptor
        _collect(arg.base, out, what, views)
    elif hasattr(arg, "untyped_storage"):
        out.append(_storage_range(arg, what))
        if views is not None:
            v = _view(arg)
            views.append(v if v is not None else _storage_range(arg, what))


@contextlib.contextmanager
def reachable(*tensors):
    """Tensors a kernel may touch though not passed to it (a table of their addresses is): e.g. peer workspaces."""
    added = [_storage_range(t, "reachable") for t in tensors]
    _REACHABLE.extend(added)
    try:
        yield
    finally:
        for r in added:
            _REACHABLE.remove(r)


def _check(ptrs, mask, width, kind):
    p = np.asarray(ptrs.data, dtype=np.uint64)
    if mask is not None:
        p = p[np.broadcast_to(np.asarray(mask.data, dtype=bool), p.shape)]
    p = p.ravel()
    if p.size == 0:
        return
    inside = np.zeros(p.shape, dtype=bool)
    for v in _VIEWS:
        if len(v) == 3:  # a tensor whose elements cannot be matched to addresses: its storage
            inside |= (p >= np.uint64(v[0])) & (p + np.uint64(width) <= np.uint64(v[1]))
        else:
            inside |= _in_view(p, width, v)
    for lo, hi, _ in _REACHABLE:
        inside |= (p >= np.uint64(lo)) & (p + np.uint64(width) <= np.uint64(hi))
    if inside.all():
        return
    bad = p[~inside]
    in_storage = any((int(bad[0]) >= lo and int(bad[0]) + width <= hi) for lo, hi, _ in _LAUNCH)
    where = "outside the elements of every tensor of the launch, inside one's storage" if in_storage else \
        "outside every tensor of the launch"
    ranges = ", ".join(f"[{lo:#x}, +{hi - lo})" for lo, hi, _ in _LAUNCH + _REACHABLE)
    msg = (f"{_KERNEL[0]}: {kind} of {bad.size} element(s) of {width} bytes {where}, first at {int(bad[0]):#x} "
           f"(storages: {ranges})")
    _VIOLATIONS.append(msg)
    raise OutOfBounds(msg)


def _width(handle) -> int:
    return np.dtype(handle.data.dtype).itemsize


def install() -> bool:
    """Wrap the interpreter's staging and memory builders (once); False where this Triton lacks one of them."""
    try:
        import triton.runtime.interpreter as interp
        grid_executor, builder = interp.GridExecutor, interp.InterpreterBuilder
        stage = grid_executor._init_args_hst
        load, store = builder.create_masked_load, builder.create_masked_store
        rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas
        element_type = interp._get_np_dtype
    except (ImportError, AttributeError):
        return False
    if getattr(stage, "_bounds_checked", False):
        return True

    def staged(self, args_dev, kwargs):
        args_hst, kwargs_hst = stage(self, args_dev, kwargs)
        _LAUNCH.clear()
        _VIEWS.clear()
        _KERNEL[0] = getattr(self.fn, "__name__", "?")
        _collect(list(args_hst) + list(kwargs_hst.values()), _LAUNCH, _KERNEL[0], _VIEWS)
        return args_hst, kwargs_hst

    def masked_load(self, ptrs, mask, *rest, **kw):
        _check(ptrs, mask, np.dtype(element_type(ptrs.get_element_ty())).itemsize, "load")
        return load(self, ptrs, mask, *rest, **kw)

    def masked_store(self, ptrs, value, mask, *rest, **kw):
        _check(ptrs, mask, _width(value), "store")
        return store(self, ptrs, value, mask, *rest, **kw)

    def atomic_rmw(self, op, ptr, val, mask, *rest, **kw):
        _check(ptr, mask, _width(val), "atomic")
        return rmw(self, op, ptr, val, mask, *rest, **kw)

    def atomic_cas(self, ptr, cmp, val, *rest, **kw):
        _check(ptr, None, _width(val), "atomic")
        return cas(self, ptr, cmp, val, *rest, **kw)

    staged._bounds_checked = True
    grid_executor._init_args_hst = staged
    builder.create_masked_load, builder.create_masked_store = masked_load, masked_store
    builder.create_atomic_rmw, builder.create_atomic_cas = atomic_rmw, atomic_cas
    return True


def take_violations() -> list:
    """The violations recorded since the last call (and forget them)."""
    out = list(_VIOLATIONS)
    _VIOLATIONS.clear()
    return out
