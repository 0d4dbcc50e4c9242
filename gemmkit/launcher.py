"""Launching compiled kernels with little host time: the one home of `kernel[grid](...)` in gemmkit.

Every kernel launch of the library goes through `launch` (or `launcher`): it counts launches per
kernel (`LAUNCHES`, how tests prove a result came from a kernel), shows each launch to a call
plan being recorded (`callplan.py`), and finds the compiled kernel from a key of its own.

`JITFunction.run` (what `kernel[grid](*args, **kwargs)` calls) binds every argument,
specialises each one (dtype, 16-byte alignment, ints equal to 1), builds a string key,
looks the compiled kernel up, then launches it: ~10-15 us of Python per launch on the
H200's host, as much as a decode-sized GEMM takes on the GPU. `launcher` does the
lookup itself from a key that is at least as fine as Triton's:

    runtime argument            Triton specialises on          our key holds
    tensor                      dtype, data_ptr % 16 == 0       the same
    int                         == 1, % 16 == 0, i32 / i64      the same
    None, bool, float           type (bool: value if constexpr)  the value / the type
    anything else (descriptors) native_specialize_impl          native_specialize_impl's answer
    keyword arguments           constexpr values, options       every (name, value, type) as passed

(ints and tensors on a backend that adds its own marks, HIP's "S" for buffer ops, are keyed by
native_specialize_impl with that backend, as Triton's binder does: `make_spec`)

and on a hit calls the compiled kernel's launcher the way `JITFunction.run` does
(`CompiledKernel.run(grid, stream, function, metadata, hooks, *all params)`). A miss, a
kernel launched otherwise than with every runtime argument by position and every constexpr
by keyword, the interpreter, or a launch hook (profilers such as proton add one) takes
Triton's own path, so nothing observable changes but the time. Bypassed on a hit, as
no gemmkit kernel uses them: a kernel's `pre_run_hooks`, and `jit_cache_hook`s. Keys hold no tensors (only dtypes and alignment bits), so the cache keeps
nothing alive; it is bounded by the number of distinct specialisations, as Triton's is.

Not seen by the key (as in Triton's own cache after the first compile): changes to
`triton.knobs` after a kernel was first launched (debug, instrumentation modes) and
global values a kernel reads. `clear()` empties it.

Every launch (and compile-only warm-up) also asks for the compiler options in `COMPILE_OPTIONS` unless the caller
passed them: fused multiply-adds (`enable_fp_fusion`), the default of Triton 3.6-3.9 that 3.9 warns will turn off in
3.10; the epilogues, the dequantization and the tests' error bounds were measured with it (gemmkit/isa compiles with
the same options). A user's TRITON_FORCE_DISABLE_FP_FUSION still wins, as in Triton.
"""
from __future__ import annotations

import collections
import functools
import threading

import torch

_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

# (id(kernel), device, positional specs, keyword items) -> (launcher, function, metadata, later parameters, device,
# the compiled kernel's own launcher)
_CACHE: dict = {}
# id(kernel) -> (kernel, number of leading parameters that are not constexpr). Keyed by id: a JITFunction
# hashes through its source's cache key (microseconds); holding the kernel keeps its id from being reused.
_RUNTIME_PARAMS: dict = {}
STATS = {"hits": 0, "misses": 0, "slow": 0}
# Launches per kernel name (`kernel_name`), counted here for every launch (not for compile-only warm-ups).
LAUNCHES: collections.Counter = collections.Counter()
# Compiler options every gemmkit kernel is built with (see the docstring); a launch's own keyword wins.
COMPILE_OPTIONS = {"enable_fp_fusion": True}


class _ThreadState(threading.local):
    recording: list | None = None  # callplan.record: each launch of this thread's call, in order
    in_launch: bool = False  # inside a kernel launch (callplan's guard lets the interpreter's own torch ops through)


STATE = _ThreadState()


def kernel_name(kernel) -> str:
    """The name launches are counted under: the kernel function's."""
    name = getattr(kernel, "__name__", None)
    return name if isinstance(name, str) else kernel.fn.__name__


def clear():
    _CACHE.clear()
    _RUNTIME_PARAMS.clear()
    _TMA_MAPS.clear()
    _runtime.cache_clear()


def launcher(kernel, grid, compile_only: bool = False):
    """`kernel[grid]` (fast when repeated), or `kernel.warmup` on `grid` when only compiling
    (the tuner's parallel warm-up). Call the result with the kernel's arguments."""
    if compile_only:
        if STATE.recording is not None:
            STATE.recording.append(None)  # not a launch a call plan can repeat
        return functools.partial(kernel.warmup, grid=grid, **COMPILE_OPTIONS)
    return functools.partial(launch, kernel, grid)


def make_spec(backend):
    """The key function for one runtime argument, for the compiler backend Triton's binder uses.
    Ints and tensors take the fast path only where the backend specialises them as BaseBackend
    does (CUDA); a backend that adds its own marks (HIP: "S", a tensor whose storage fits 2 GiB,
    for 32-bit-offset buffer ops) gets Triton's own answer for every argument of that type."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    cls = type(backend)
    fast_int = cls.get_int_specialization is BaseBackend.get_int_specialization
    fast_tensor = cls.get_tensor_specialization is BaseBackend.get_tensor_specialization

    def spec(a):
        t = type(a)
        if t is int:
            if fast_int:
                return (a == 1, a & 15 == 0, _I32_MIN <= a <= _I32_MAX)
        elif t in _TENSOR_TYPES:
            if fast_tensor:
                return (a.dtype, a.data_ptr() & 15 == 0)
        elif a is None or t is bool:
            return a
        elif t is float:
            return float
        return native_specialize_impl(backend, a, False, True, True)

    return spec


def _runtime_params(kernel) -> int:
    """How many leading parameters of `kernel` are runtime (not constexpr) arguments; -1 (Triton's
    path always) for anything that is not a compiled JIT function (the interpreter's kernels) or
    whose runtime parameters do not all come before its constexprs."""
    hit = _RUNTIME_PARAMS.get(id(kernel))
    if hit is None:
        from triton.runtime.jit import JITFunction

        n = -1
        if isinstance(kernel, JITFunction):
            flags = [p.is_constexpr for p in kernel.params]
            first = flags.index(True) if True in flags else len(flags)
            n = first if all(flags[first:]) else -1
        hit = _RUNTIME_PARAMS[id(kernel)] = (kernel, n)
    return hit[1]


def _hooked(hook) -> bool:
    """A launch hook is set: None or an empty chain (Triton 3.6's `HookChain`) is none."""
    return hook is not None and bool(getattr(hook, "calls", True))


@functools.lru_cache(maxsize=None)
def _runtime():
    """(knobs.runtime, current-device function, current-stream function, argument key function) of
    the active Triton driver, looked up once: `driver.active` is a lazy proxy that costs a few
    microseconds per access (a later `driver.set_active` is not seen: `clear()` forgets this too)."""
    from triton import knobs
    from triton.compiler.compiler import make_backend
    from triton.runtime.driver import driver

    active = driver.active
    current_device = active.get_current_device
    if current_device is torch.cuda.current_device:  # the same answer without its lazy-init checks (~0.5 us):
        current_device = torch._C._cuda_getDevice  # a launch that reaches here has initialised CUDA
    return (knobs.runtime, current_device, active.get_current_stream,
            make_spec(make_backend(active.get_current_target())))


def cache_key(kernel, device, spec, args, kwargs) -> tuple:
    """The launch cache's key. Keyword values go in with their types: True == 1 == 1.0 as dict
    keys, but Triton compiles a constexpr True, 1 and 1.0 apart."""
    return (id(kernel), device, tuple(map(spec, args)), tuple(kwargs.items()), tuple(map(type, kwargs.values())))


def launch(kernel, grid, *args, **kwargs):
    """kernel[grid](*args, **kwargs), with the compiled kernel looked up from our own key."""
    if "enable_fp_fusion" not in kwargs:  # COMPILE_OPTIONS (one key: cheaper than merging dicts on every call)
        kwargs["enable_fp_fusion"] = COMPILE_OPTIONS["enable_fp_fusion"]
    STATE.in_launch = True
    try:
        entry = _launch(kernel, grid, args, kwargs)
    finally:
        STATE.in_launch = False
    LAUNCHES[kernel_name(kernel)] += 1  # counted once launched (a kernel that failed to compile did not run)
    if STATE.recording is not None:
        STATE.recording.append((kernel, grid, args, kwargs, entry))


def _launch(kernel, grid, args, kwargs):
    """Launch; return the cache entry (run, function, metadata, later parameters, device, the compiled kernel's own
    launcher) that can repeat
    it with other tensors of the same specialisation, or None where it took Triton's path."""
    # Every runtime argument by position, every constexpr by keyword: else (and in the interpreter) Triton's path.
    if len(args) != _runtime_params(kernel):
        STATS["slow"] += 1
        kernel[grid](*args, **kwargs)
        return None
    runtime, current_device, current_stream, spec = _runtime()
    if hooked(runtime):
        STATS["slow"] += 1
        kernel[grid](*args, **kwargs)
        return None
    device = current_device()
    key = cache_key(kernel, device, spec, args, kwargs)
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable keyword value: Triton's path
        STATS["slow"] += 1
        kernel[grid](*args, **kwargs)
        return None
    if hit is None:
        STATS["misses"] += 1
        compiled = kernel[grid](*args, **kwargs)
        # Every later parameter is a constexpr (_runtime_params), passed by keyword or defaulted. The
        # launcher skips constexpr slots, but takes them, as JITFunction.run passes every parameter.
        tail = tuple(kwargs[p.name] if p.name in kwargs else p.default for p in kernel.params[len(args):])
        hit = _CACHE[key] = (_descriptor_caching(compiled.run) or compiled.run, compiled.function,
                             compiled.packed_metadata, tail, device, compiled.run)
        return hit
    STATS["hits"] += 1
    run, function, metadata, tail, _, _ = hit
    g = (*grid, 1, 1)
    run(g[0], g[1], g[2], current_stream(device), function, metadata, None, None, None, *args, *tail)
    return hit


def hooked(runtime=None) -> bool:
    """A launch hook is set (profilers such as proton add one): launches then take Triton's path."""
    runtime = runtime or _runtime()[0]
    return _hooked(runtime.launch_enter_hook) or _hooked(runtime.launch_exit_hook)


def run_entry(entry, grid, args):
    """Repeat a launch from its cache entry (`_launch`'s answer) with `args` of the same specialisation, on the
    current stream; False (nothing launched) where the current device is not the entry's or a hook is set."""
    runtime, current_device, current_stream, _ = _runtime()
    run, function, metadata, tail, device, _ = entry
    if current_device() != device or hooked(runtime):
        return False
    g = (*grid, 1, 1)
    run(g[0], g[1], g[2], current_stream(device), function, metadata, None, None, None, *args, *tail)
    return True


# ----------------------------------------------------------------------------- host TMA descriptors
#
# A kernel that takes host TMA descriptors (Triton's TensorDescriptor, Gluon's) gets, from Triton's CUDA launcher,
# each one re-encoded on every launch (`make_tensordesc_arg`: cuTensorMapEncodeTiled through `fill_tma_descriptor`,
# ~1-2 us of host time each; a dense GEMM passes three). The encoded CUtensorMap is a pure function of the tensor's
# address, shape and strides and of the compiled kernel's descriptor metadata (box, swizzle, element type), so
# `_descriptor_caching` wraps a compiled kernel's launcher to encode each distinct (metadata, address, shape,
# strides) once and pass the cached map afterwards. A map holds an address, not a tensor: a freed and reused address
# gets the same (correct) map; nothing is kept alive. The C launcher is called the way the compiled kernel's own
# launcher (`CudaLauncher`) calls it, in one of the two layouts Triton has had:
#
#   "flat"    (3.6)       raw(gx, gy, gz, stream, function, cooperative, pdl, scratch x2, metadata, launch metadata,
#                         hooks x2, *parameters)
#   "packed"  (3.7-3.9)   raw(gx, gy, gz, stream, function, cooperative, pdl, metadata, launch metadata, hooks x2,
#                         scratch x2, argument annotations, kernel signature, [parameters])
#
# with each descriptor parameter expanded into (map, *shape, *strides) and the constexpr parameters passed too (the C
# launcher skips them). Where the launcher is laid out otherwise (AMD, scratch buffers, Triton 3.8+'s GSan, nested
# descriptors, descriptors lowered to plain pointers, another release's layout), the compiled kernel's own launcher
# runs unchanged: only the host time differs.

MAX_TMA_MAPS = 4096  # encoded maps kept (128 bytes each); the cache starts over when full
_TMA_MAPS: dict = {}
TMA_STATS = {"encoded": 0, "reused": 0}


def _encode(meta, d, expand):
    """The kept encoding of descriptor `d` for a kernel's descriptor metadata `meta`, else Triton's own (kept)."""
    key = (id(meta), d.base.data_ptr(), tuple(d.shape), tuple(d.strides), d.padding)
    hit = _TMA_MAPS.get(key)
    if hit is not None:
        TMA_STATS["reused"] += 1
        return hit
    if len(_TMA_MAPS) >= MAX_TMA_MAPS:
        _TMA_MAPS.clear()
    hit = _TMA_MAPS[key] = (meta, expand(d, meta))  # meta held: its id stays unique while kept
    TMA_STATS["encoded"] += 1
    return hit


def _expander():
    """expand(d, meta) -> [map, *shape, *strides]: Triton's make_tensordesc_arg (3.8+ adds a third parameter, the
    launch's other arguments, which the CUDA backend does not read). Looked up on each call (the module's current
    function: tests replace it), not cached."""
    from triton.backends.nvidia.driver import make_tensordesc_arg

    if getattr(getattr(make_tensordesc_arg, "__code__", None), "co_argcount", 2) == 2:
        return make_tensordesc_arg
    return lambda d, meta: make_tensordesc_arg(d, meta, None)


def _descriptor_positions(inner):
    """((parameter position, descriptor metadata), ...) of a CudaLauncher's descriptor wrapper `inner` (the closure
    Triton builds around the C launcher), and the C launcher; None for a wrapper this does not know (nested
    descriptors, missing metadata)."""
    code, closure = getattr(inner, "__code__", None), getattr(inner, "__closure__", None)
    if code is None or not closure:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in closure)))
    raw, metas = cells.get("launcher"), cells.get("tensordesc_meta")
    if "tensordesc_indices" in cells:  # 3.6, 3.7: a set of top-level positions
        indices = cells["tensordesc_indices"]
        if not isinstance(indices, set):
            return None
    elif isinstance(cells.get("relevant_paths"), dict):  # 3.8+: a tree of paths; top-level descriptors are leaves
        paths = cells["relevant_paths"]
        if any(sub for sub in paths.values()):
            return None
        indices = set(paths)
    else:
        return None
    if not callable(raw) or not metas or len(metas) != len(indices) or any(m is None for m in metas):
        return None
    return raw, tuple(zip(sorted(indices), metas))  # each descriptor position with its metadata, in order


def _unwrap(run):
    """(C launcher, ((parameter position, descriptor metadata), ...), layout "flat" / "packed") of a compiled kernel's
    launcher that is Triton's CudaLauncher in a layout this module knows, without scratch buffers (the positions of
    its host TMA descriptors, in order; none for a kernel without them), else None."""
    try:
        from triton.backends.nvidia import driver
    except ImportError:
        return None
    if not isinstance(run, driver.CudaLauncher) or run.global_scratch_size or run.profile_scratch_size \
            or getattr(run, "gsan_enabled", False):
        return None
    base = getattr(driver, "_BASE_ARGS_FORMAT_LEN", None)
    if base == 13:  # grid x3, stream, function, cooperative, pdl, 2 scratch, metadata, 3 hook slots
        layout = "flat"
    elif base is None and hasattr(run, "arg_annotations") and hasattr(run, "kernel_signature"):
        layout = "packed"
    else:
        return None
    inner = getattr(run, "launch", None)
    if type(inner).__name__ == "builtin_function_or_method":  # no descriptors: Triton keeps the C launcher itself
        return inner, (), layout
    found = _descriptor_positions(inner)
    return None if found is None else (*found, layout)


def _descriptor_caching(run):
    """A launcher equivalent to `run` (a compiled kernel's CudaLauncher) that reuses encoded TMA descriptors, or
    None where `run` takes no host descriptors or is not laid out as this module knows."""
    unwrapped = _unwrap(run)
    if unwrapped is None or not unwrapped[1]:
        return None
    raw, metas_at, layout = unwrapped
    expand = _expander()
    cooperative, pdl = run.launch_cooperative_grid, run.launch_pdl
    annotations, kernel_signature = getattr(run, "arg_annotations", None), getattr(run, "kernel_signature", None)

    def expanded(params):
        out, start = [], 0
        for i, meta in metas_at:  # the parameters between descriptors as slices; each descriptor expanded
            out += params[start:i]
            d = params[i]
            key = (id(meta), d.base.data_ptr(), d.shape, d.strides, d.padding)
            try:
                hit = _TMA_MAPS[key]
                TMA_STATS["reused"] += 1
            except (KeyError, TypeError):  # TypeError: a shape or strides given as a list
                hit = _encode(meta, d, expand)
            out += hit[1]
            start = i + 1
        out += params[start:]
        return out

    if layout == "flat":
        def launch_cached(gx, gy, gz, stream, function, metadata, launch_metadata, enter_hook, exit_hook, *params):
            raw(gx, gy, gz, stream, function, cooperative, pdl, None, None, metadata, launch_metadata, enter_hook,
                exit_hook, *expanded(params))
    else:
        def launch_cached(gx, gy, gz, stream, function, metadata, launch_metadata, enter_hook, exit_hook, *params):
            raw(gx, gy, gz, stream, function, cooperative, pdl, metadata, launch_metadata, enter_hook, exit_hook, None,
                None, annotations, kernel_signature, expanded(params))

    return launch_cached


class Direct:
    """A cached launch as a call plan's generated replay calls it (callplan.py): the C launcher `raw`, called as
    raw(gx, gy, gz, stream, *head, *parameters) ("flat" layout) or raw(gx, gy, gz, stream, *head, [parameters])
    ("packed", `packed` True), `head` the layout's arguments between the stream and the parameters (see above: no
    scratch, no launch metadata, no hooks), the parameters the runtime arguments then the constexpr `tail`, each host
    TMA descriptor (at the positions of `descriptors`, with its metadata) expanded by `expand(d, meta)` into its
    encoded map, shape and strides."""

    __slots__ = ("raw", "head", "tail", "device", "descriptors", "packed")

    def __init__(self, raw, head, tail, device, descriptors, packed=False):
        self.raw, self.head, self.tail, self.device, self.descriptors = raw, head, tail, device, descriptors
        self.packed = packed

    @staticmethod
    def expand(d, meta):
        return _expander()(d, meta)


def direct(entry):
    """The `Direct` form of a cache entry (`_launch`'s answer), or None where its compiled kernel's launcher is not
    laid out as a CUDA launcher this module knows (the plan then repeats it with `run_entry`)."""
    if entry is None:
        return None
    _, function, metadata, tail, device, run = entry
    unwrapped = _unwrap(run)
    if unwrapped is None:
        return None
    raw, metas_at, layout = unwrapped
    if layout == "flat":
        head = (function, run.launch_cooperative_grid, run.launch_pdl, None, None, metadata, None, None, None)
    else:
        head = (function, run.launch_cooperative_grid, run.launch_pdl, metadata, None, None, None, None, None,
                run.arg_annotations, run.kernel_signature)
    return Direct(raw, head, tail, device, dict(metas_at), packed=layout == "packed")


def current_runtime():
    """(knobs.runtime, current-device function, current-stream function) of the active driver (`_runtime`)."""
    return _runtime()[:3]


def tma_descriptor(t, block_shape):
    """Triton's host TMA descriptor of `t` (2-D) with `block_shape`, without the dataclass's per-call
    validation (~1.5-3 us for three descriptors): callers pass only tensors `_common.tma_compatible`
    accepted, the same rules (16-byte aligned base and row stride, unit last stride, no empty dim)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    d = object.__new__(TensorDescriptor)
    d.base, d.shape, d.strides, d.block_shape, d.padding = t, t.shape, t.stride(), block_shape, "zero"
    return d


def tma_view_descriptor(t, shape, strides, block_shape):
    """Triton's host TMA descriptor over `t`'s storage from its first element as a tensor of `shape` and `strides`
    (elements), not `t`'s own: kernels/triton/gemm_rows_tma.py's octets of rows. Validated (the caller's shape is no
    tensor's: the 16-byte base and strides rules are checked here); the caller keeps every box inside the storage."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor(t, list(shape), list(strides), list(block_shape))
