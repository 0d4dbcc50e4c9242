"""Shared plumbing of the ops: input validation, target lookup, config resolution, launch bookkeeping.

Every public op validates through these helpers, so the error messages have
one form: `<argument>: expected <what>, got <what>`.
"""
from __future__ import annotations

import functools
import json
import os

import torch

from .. import arch as _arch
from .. import callplan
from .. import configs as _configs
from ..configs import usercache
from ..kernels import _interpreter
# Tensor rules the kernels' host code shares, re-exported for the ops' checks.
from ..kernels._host import (FLOAT16_DTYPES, FP8_E4M3_DTYPES, INT32_SPAN, compiler_options, fp8_dtype,  # noqa: F401
                             int64_offsets, last_offset, tma_compatible)
from ..launcher import LAUNCHES  # noqa: F401  (launches per kernel name: tests read C.LAUNCHES)

OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_PLAIN = (torch.Tensor, torch.nn.Parameter)  # real tensors (not fake, functional or other subclasses)


def interpreting() -> bool:
    """True when gemmkit's kernels run in Triton's CPU interpreter (TRITON_INTERPRET=1 was set when
    gemmkit was imported: kernels/_interpreter.py)."""
    return _interpreter.active()


def interpreter_lacks(dtype) -> str | None:
    """Why the installed Triton's interpreter cannot take tensors of `dtype` (None: it can): float8_e4m3fnuz before
    Triton 3.8 (kernels/_interpreter.dtype_unsupported)."""
    return _interpreter.dtype_unsupported(dtype)


def interpreter_dtype_unsupported(t, dtype=None) -> str | None:
    """`interpreter_lacks` for a CPU tensor `t` of `dtype` (default: its own); None for a GPU tensor."""
    return interpreter_lacks(t.dtype if dtype is None else dtype) if t.device.type == "cpu" else None


def check_tensor(name, t, *, dtypes=None, ndim=None, min_ndim=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise TypeError(f"{name}: expected a dense (strided) tensor, got layout {t.layout} (call .to_dense())")
    if dtypes is not None and t.dtype not in dtypes:
        raise TypeError(f"{name}: expected dtype {' or '.join(map(str, dtypes))}, got {t.dtype}")
    if ndim is not None and t.dim() != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D tensor, got shape {tuple(t.shape)}")
    if min_ndim is not None and t.dim() < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dims, got shape {tuple(t.shape)}")


def check_same_device(**tensors):
    named = [(n, t) for n, t in tensors.items() if t is not None]
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.device != first.device:
            raise ValueError(f"{name}: expected a tensor on {first.device} (like {first_name}), got {t.device}")


def check_no_overlap(name, t):
    """An output whose elements share memory (an expand()ed view, stride 0) would be written by
    several programs at once: refuse it rather than race. (Skipped while torch.compile traces the
    public wrapper; the custom op's own check runs on the real tensors.)"""
    if t is None or torch.compiler.is_compiling():
        return
    if torch._debug_has_internal_overlap(t) == 1:
        raise ValueError(f"{name}: expected a tensor whose elements do not overlap in memory, got strides "
                         f"{tuple(t.stride())} for shape {tuple(t.shape)} (an expand()ed view?)")


def _address_range(t):
    """[first byte, one past the last byte) that `t`'s elements occupy (a contiguous tensor: its nbytes, without
    the walk over its strides: this runs on every replayed call with `out=`)."""
    start = t.data_ptr()
    if t.is_contiguous():
        return start, start + t.nbytes
    return start, start + (last_offset(t) + 1) * t.element_size()


def share_bytes(a, b, budget: int = 10_000) -> bool:
    """Whether some byte of an element of `a` is a byte of an element of `b` (strided views, any dtypes).

    An element of a starts at A + sum_i a_i * ca_i (ca_i = stride_i * itemsize, 0 <= a_i < size_i), one
    of b at B + sum_j b_j * cb_j; they share a byte iff their start difference lies in
    [-(itemsize_a - 1), itemsize_b - 1]. So: is there an integer point with
        sum_i a_i ca_i - sum_j b_j cb_j + u = B - A,   u in [-(itemsize_b - 1), itemsize_a - 1]?
    Terms of equal coefficient merge (their ranges add); a depth-first search over the terms, largest
    coefficient first, keeps only the values of each that leave the rest reachable: slices of one
    buffer (c1 = buf[..., :S], c2 = buf[..., S:]) resolve in a few steps. Past `budget` steps it answers
    True (refuse rather than guess)."""
    ea, eb = a.element_size(), b.element_size()
    ranges: dict = {}
    for t, e, sign in ((a, ea, 1), (b, eb, -1)):
        for size, stride in zip(t.shape, t.stride()):
            if size > 1 and stride != 0:
                lo, hi = ranges.get(stride * e, (0, 0))
                ranges[stride * e] = (lo, hi + size - 1) if sign > 0 else (lo - (size - 1), hi)
    lo_u, hi_u = ranges.get(1, (0, 0))
    ranges[1] = (lo_u - (eb - 1), hi_u + ea - 1)
    terms = sorted(((c, lo, hi) for c, (lo, hi) in ranges.items()), reverse=True)
    rest_lo, rest_hi = [0] * (len(terms) + 1), [0] * (len(terms) + 1)
    for i in range(len(terms) - 1, -1, -1):
        c, lo, hi = terms[i]
        rest_lo[i], rest_hi[i] = rest_lo[i + 1] + c * lo, rest_hi[i + 1] + c * hi
    steps = 0

    def reach(i, r):
        nonlocal steps
        steps += 1
        if steps > budget:
            return True
        if not rest_lo[i] <= r <= rest_hi[i]:
            return False
        if i == len(terms):
            return r == 0
        c, lo, hi = terms[i]
        k_lo = max(lo, -((rest_hi[i + 1] - r) // c))  # ceil((r - rest_hi) / c)
        k_hi = min(hi, (r - rest_lo[i + 1]) // c)
        return any(reach(i + 1, r - c * k) for k in range(k_lo, k_hi + 1))

    return reach(0, b.data_ptr() - a.data_ptr())


def check_out_disjoint(out_name, out, **inputs):
    """An output that shares memory with an input is overwritten while the kernel still reads it (tiles
    race each other): refuse it. Exact for views that interleave without touching (c1 = buf[..., :S] beside
    c2 = buf[..., S:] passes; `share_bytes`), cheap when the address ranges do not even intersect (the usual
    case). Checked on real tensors only (fake tensors under torch.compile have no memory; the custom op
    checks again)."""
    if out is None or torch.compiler.is_compiling() or type(out) not in _PLAIN or out.device.type == "meta" \
            or out.numel() == 0:
        return
    lo, hi = _address_range(out)
    for name, t in inputs.items():
        if t is None or type(t) not in _PLAIN or t.device != out.device or t.numel() == 0:
            continue
        t_lo, t_hi = _address_range(t)
        if t_lo < hi and lo < t_hi and share_bytes(out, t):
            raise ValueError(f"{out_name}: expected memory no other argument uses, but it overlaps {name} (bytes "
                             f"[{lo:#x}, {hi:#x}) and [{t_lo:#x}, {t_hi:#x})): the kernel's stores to {out_name} would "
                             f"race with its accesses to {name}; pass a separate output tensor")


def check_out_dtype(out_dtype):
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype: expected one of {', '.join(map(str, OUT_DTYPES))}, got {out_dtype}")


def eager_call(*tensors) -> bool:
    """True when the op may run its implementation directly instead of through torch.ops:
    not under torch.compile / export tracing, and every tensor a plain one (no fake,
    functional or other subclass tensors, which need the dispatcher)."""
    if torch.compiler.is_compiling():
        return False
    return all(t is None or type(t) in _PLAIN for t in tensors)


def check_no_grad(op, **tensors):
    if torch.is_grad_enabled():
        for name, t in tensors.items():
            if t is not None and t.requires_grad:
                raise NotImplementedError(
                    f"{name}: requires grad, but {op} has no backward yet; call it under torch.no_grad() "
                    "or torch.inference_mode()")


def check_device_supported(t, name="x"):
    if t.device.type == "cuda":
        return
    if t.device.type == "cpu":
        why = _interpreter.cpu_unavailable_reason()
        if why is None:
            return
        raise ValueError(f"{name}: {why}")
    raise ValueError(f"{name}: expected a CUDA/HIP tensor, got device {t.device}")


@functools.lru_cache(maxsize=None)
def _cuda_target(index):
    return _arch.current(index)


def target_for(device: torch.device) -> _arch.Target:
    """The target whose tables and constants a launch on `device` uses.

    CPU tensors (interpreter) use GEMMKIT_INTERPRET_ARCH (default sm_90) so the
    interpreter exercises the same tables, schedule (XCD remap on gfx*) and paths.
    """
    if device.type == "cpu":
        t = _arch.get(os.environ.get("GEMMKIT_INTERPRET_ARCH", "sm_90"))
        n = os.environ.get("GEMMKIT_NUM_CUS")
        return t.with_cus(int(n)) if n else t
    return _cuda_target(device.index if device.index is not None else torch.cuda.current_device())


def target_key(t):
    """What a call plan's key needs besides the tensors' devices (callplan.py): a CPU call's target comes from
    GEMMKIT_INTERPRET_ARCH / GEMMKIT_NUM_CUS (`target_for`), read again on every call; a GPU's from its device."""
    if not getattr(t, "is_cpu", False):
        return None
    return os.environ.get("GEMMKIT_INTERPRET_ARCH"), os.environ.get("GEMMKIT_NUM_CUS")


def config_to_str(config) -> str:
    """Configs cross the custom-op boundary as canonical JSON strings ('' = use the table)."""
    if config is None:
        return ""
    _configs.validate_config(config, where="config")
    return json.dumps(config, sort_keys=True)


@functools.lru_cache(maxsize=256)
def _parse_config(config_str: str, backend: str) -> dict:
    return _configs.validate_config(json.loads(config_str), backend=backend, where="config")


def resolve_config(op: str, config_str: str, target: _arch.Target, M: int, N: int, K: int, tune_as=None):
    """(config, source): the `config=` override if given, else the table's choice for the shape (configs.serve:
    a shape file's bucket, or the default bucket fitted to the shape), or where no shape file serves it and
    GEMMKIT_TUNE is not off, the tuning cache's (configs/usercache.py). `tune_as`: (op, dtype name, device) of a
    dense op's call, the names its entries go under (None: an op the cache does not serve)."""
    if config_str:
        return dict(_parse_config(config_str, target.backend)), "config= argument"
    cfg, source = _configs.serve(op, target, M, N, K)
    if tune_as is None or _configs.tuned(source):
        return cfg, source
    mode = usercache.mode()
    if mode == "off":
        return cfg, source
    name, dtype, device = tune_as
    where = (name, dtype, target.arch, device_name(device), M, N, K)
    hit = usercache.lookup(*where)
    if hit is None and mode == "on" and may_tune(device) and usercache.tuner() is not None:
        with callplan.suspended():
            usercache.tuner()(name, dtype, device, target, M, N, K)
        hit = usercache.lookup(*where)
    if hit is None:
        return cfg, source
    if hit is usercache.KEEP:
        return cfg, source + f"; kept by the tuning cache ({usercache.entry_key(*where[:2], M, N, K)})"
    return hit


def device_name(device: torch.device) -> str:
    """The device kind a tuning cache file belongs to: torch's name of a GPU; 'interpreter' on the CPU."""
    if device.type == "cpu":
        return "interpreter"
    return _gpu_name(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _gpu_name(index):
    return torch.cuda.get_device_name(index)


def may_tune(device: torch.device) -> bool:
    """Whether a call may stop to tune its shape: on a GPU, in eager code (not while a CUDA graph is captured,
    where nothing may be timed, nor while torch.compile traces)."""
    return (device.type == "cuda" and not torch.compiler.is_compiling()
            and not torch.cuda.is_current_stream_capturing())


