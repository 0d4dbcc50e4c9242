"""Call plans: what an eager op call does, decided once per call signature, then repeated with new tensors.

A call's validation, config lookup, kernel choice, plan derivation, grid and constexprs depend only on its
signature: each tensor's shape, strides, dtype, device and 16-byte alignment, plus the op's other arguments.
The first call of a signature runs the op's full path under `record`, which sees every kernel launch
(through gemmkit/launcher.py) and every allocation; later calls of the signature `replay` the launches with
their own tensors and nothing else::

    op(x, w, ...) ─► key = (op, signature(x, w, ...), other arguments)
                       │ lookup(key) hit ───────────────► plan.replay((x, w, ..., y)):
                       │                                   fresh workspaces, each launch's tensors and TMA
                       │                                   descriptors rebuilt on this call's pointers,
                       │                                   the compiled kernels called directly
                       │ miss: with record(key, inputs):
                       ▼       the op's full path (checks, dispatch, launches), seen by the recorder

A launch argument is stored as a constant (ints, floats, None, strings: fixed by the signature), one of the
call's inputs, a view of one (shape, strides, offset from it), a workspace the call allocated, or a TMA
descriptor over one of those. Anything else makes the signature unrepeatable, and its calls keep the full
path. While recording, a torch dispatch mode watches the torch ops the path runs outside kernel launches:
allocations and views are fine; any other op (a copy, a fill, a conversion: work a replay would skip) makes
the signature unrepeatable too. So a replay does exactly what the recorded call did, or there is no replay.

This holds because every kernel launch in gemmkit goes through the launcher (tests/kernels/test_callplan.py
scans the sources for any other `kernel[grid](...)`): a launch the recorder cannot see would be missing from
the plan. GEMMKIT_CALL_PLANS=0 (or `ENABLED = False`) turns plans off.

Not in a plan, done by the op on every call: the checks that read addresses (`out=` overlapping an input),
allocating the output. Not seen by the key, as in Triton's own caches: config tables or environment
variables changed after a signature's first call (`clear()` forgets every plan).
"""
from __future__ import annotations

import contextlib
import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import launcher

# False: every call takes the full path (GEMMKIT_CALL_PLANS=0 at import, or set at run time), e.g. to compare.
ENABLED = os.environ.get("GEMMKIT_CALL_PLANS", "1") != "0"
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_CONSTANT_TYPES = (int, float, bool, str, type(None), torch.dtype)
UNREPEATABLE = "unrepeatable"  # a signature whose calls keep the full path
MAX_PLANS = 4096  # one per signature in use; a server's ever-new M starts over rather than grow without bound
_PLANS: dict = {}
STATS = {"replays": 0, "recorded": 0, "unrepeatable": 0}


def clear():
    _PLANS.clear()


def signature(*tensors):
    """What a call's tensors decide: grad mode, and per tensor (shape, strides, dtype, device, base 16-byte
    aligned, requires_grad), None for None. None overall (no plan) for anything but a plain dense tensor."""
    sig = [torch.is_grad_enabled()]
    for t in tensors:
        if t is None:
            sig.append(None)
        elif type(t) in _PLAIN and t.layout is torch.strided:
            sig.append((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15 == 0, t.requires_grad))
        else:
            return None
    return tuple(sig)


def key(op: str, tensors, *arguments):
    """A call's key: the op, its tensors' `signature` and its other arguments (hashable: a config dict goes in
    as its sorted items); None (no plan) under torch.compile's tracing or when a tensor is not a plain dense
    tensor."""
    if not ENABLED or torch.compiler.is_compiling():
        return None
    sig = signature(*tensors)
    if sig is None:
        return None
    return op, sig, tuple(tuple(sorted(a.items())) if type(a) is dict else a for a in arguments)


def lookup(key):
    """The plan of `key` (None: record one, UNREPEATABLE: run the full path). None while another call is being
    recorded (its launches must be seen, not replayed), and for a key that is None (`key`)."""
    if key is None or launcher.STATE.recording is not None:
        return None
    try:
        return _PLANS.get(key)
    except TypeError:  # an unhashable argument (the op's checks will say what is wrong with it)
        return None


def repeatable(plan) -> bool:
    """`lookup`'s answer is a plan to replay (not None: record one, nor UNREPEATABLE: run the full path)."""
    return plan is not None and plan is not UNREPEATABLE


def record_key(key, plan):
    """The key `record` should keep a plan under after `lookup` answered `plan`: `key` where there was none,
    None (record nothing) for an UNREPEATABLE signature."""
    return key if plan is None else None


# ----------------------------------------------------------------------------- record

class _Guard(TorchDispatchMode):
    """Sees the torch ops a recorded call runs outside kernel launches: keeps its allocations, and marks the
    call unrepeatable on any op that is not an allocation or a view."""

    ALLOCATIONS = (torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default)
    HARMLESS = (torch.ops.aten._debug_has_internal_overlap.default,)  # reads metadata only

    def __init__(self):
        super().__init__()
        self.allocations = []  # (tensor, shape, strides, dtype, device)
        self.foreign = None  # the first op a replay would skip

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if launcher.STATE.in_launch:  # the interpreter's own work inside a launch
            return out
        if func in self.ALLOCATIONS:
            if out.device.type != "meta":
                self.allocations.append(out)
        elif not (func.is_view or func in self.HARMLESS) and self.foreign is None:
            self.foreign = func
        return out


@contextlib.contextmanager
def record(key, inputs):
    """Run the body (the op's full path) and keep a plan of its launches under `key`, with `inputs` the call's
    tensors (None allowed) in the order `replay` gets them. A body that raises keeps nothing. A key of None
    (or a recording already under way: this call's launches belong to it) just runs the body."""
    if key is None or launcher.STATE.recording is not None or torch.compiler.is_compiling():
        yield
        return
    launcher.STATE.recording = launches = []
    counts = dict(launcher.LAUNCHES)
    guard = _Guard()
    try:
        with guard:
            yield
    finally:
        launcher.STATE.recording = None
    counts = {k: v - counts.get(k, 0) for k, v in launcher.LAUNCHES.items() if v != counts.get(k, 0)}
    plan = _build(launches, guard, inputs, counts)
    if plan is None:  # inputs that alias each other: decide again on the next call
        return
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    try:
        _PLANS[key] = plan
    except TypeError:
        return
    STATS["recorded" if plan is not UNREPEATABLE else "unrepeatable"] += 1


def _build(launches, guard, inputs, counts):
    if guard.foreign is not None or any(step is None for step in launches):
        return UNREPEATABLE
    sources = [t for t in inputs] + guard.allocations  # slot i < len(inputs): an input, else a workspace
    resolve = _Resolver(sources)
    steps = []
    for kernel, grid, args, kwargs, entry in launches:
        if not isinstance(grid, tuple) or any(isinstance(v, torch.Tensor) for v in kwargs.values()):
            return UNREPEATABLE
        template, dynamic = list(args), []
        for pos, a in enumerate(args):
            if isinstance(a, _CONSTANT_TYPES):
                continue
            getter = resolve(a)
            if getter is None:
                return UNREPEATABLE
            if getter is _AMBIGUOUS:
                return None
            template[pos] = None
            dynamic.append((pos, getter))
        steps.append((kernel, grid, kwargs, entry, template, tuple(dynamic)))
    workspaces = tuple((i, tuple(sources[i].shape), sources[i].stride(), sources[i].dtype, sources[i].device)
                       for i in sorted(resolve.used) if i >= len(inputs))
    return CallPlan(tuple(steps), workspaces, len(sources), tuple(counts.items()))


_AMBIGUOUS = object()


class _Resolver:
    """Maps a launch argument of the recorded call to a function of the replayed call's sources (inputs, then
    workspaces): the source itself, a view of it, or a TMA descriptor over one of those."""

    def __init__(self, sources):
        self.sources = sources
        self.used = set()  # the sources some argument reads

    def __call__(self, a):
        if isinstance(a, torch.Tensor):
            return self._tensor(a)
        base = getattr(a, "base", None)
        if isinstance(base, torch.Tensor) and type(a).__name__ == "TensorDescriptor":
            get = self._tensor(base)
            if get is None or get is _AMBIGUOUS:
                return get
            cls, fields = type(a), {k: v for k, v in vars(a).items() if k != "base"}

            def descriptor(src, get=get, cls=cls, fields=fields):
                d = object.__new__(cls)
                d.__dict__.update(fields)
                d.base = get(src)
                return d
            return descriptor
        return None

    def _tensor(self, t):
        storage = t.untyped_storage().data_ptr()
        owners = [i for i, s in enumerate(self.sources)
                  if s is not None and s.device == t.device and s.untyped_storage().data_ptr() == storage]
        if not owners:
            return None
        if len(owners) > 1:  # inputs sharing memory: which one an argument came from is not known
            return _AMBIGUOUS
        i = owners[0]
        s = self.sources[i]
        if s.dtype != t.dtype:
            return None
        self.used.add(i)
        if t.shape == s.shape and t.stride() == s.stride() and t.storage_offset() == s.storage_offset():
            return lambda src, i=i: src[i]
        shape, stride, delta = tuple(t.shape), t.stride(), t.storage_offset() - s.storage_offset()
        return lambda src, i=i: src[i].as_strided(shape, stride, src[i].storage_offset() + delta)


# ----------------------------------------------------------------------------- replay

class CallPlan:
    """The launches of one call signature: per launch the kernel, grid, constexprs, compiled entry, and its
    arguments as a template whose tensor slots are filled from each call's sources."""

    __slots__ = ("steps", "workspaces", "n_sources", "counts")

    def __init__(self, steps, workspaces, n_sources, counts):
        self.steps, self.workspaces, self.n_sources, self.counts = steps, workspaces, n_sources, counts

    def replay(self, inputs):
        """The recorded call's launches on `inputs` (the same signature, in `record`'s order)."""
        src = list(inputs) + [None] * (self.n_sources - len(inputs))
        for i, shape, stride, dtype, device in self.workspaces:
            src[i] = torch.empty_strided(shape, stride, dtype=dtype, device=device)
        for kernel, grid, kwargs, entry, template, dynamic in self.steps:
            args = template.copy()
            for pos, get in dynamic:
                args[pos] = get(src)
            if entry is None or not launcher.run_entry(entry, grid, args):
                launcher.STATE.in_launch = True
                try:
                    kernel[grid](*args, **kwargs)
                finally:
                    launcher.STATE.in_launch = False
        for name, n in self.counts:
            launcher.LAUNCHES[name] += n
        STATS["replays"] += 1
