"""Call plans: what an eager op call does, decided once per call signature, then repeated with new tensors.

A call's validation, config lookup, kernel choice, plan derivation, grid and constexprs depend only on its
signature: each tensor's shape, strides, dtype, device and 16-byte alignment, plus the op's other arguments.
The first call of a signature runs the op's full path under `record`, which sees every kernel launch
(through gemmkit/launcher.py) and every allocation; later calls of the signature `replay` the launches with
their own tensors and nothing else::

    op(x, w, ...) ─► key = (op, signature(x, w, ...), other arguments, config)
                       │ lookup(key) hit ───────────────► plan.replay((x, w, ...[, out])) -> fresh outputs:
                       │                                   fresh outputs and workspaces, each launch's tensors
                       │                                   and TMA maps on this call's pointers, the C launchers
                       │                                   called by code generated for the signature
                       │ miss: with record(key, inputs, fresh=outputs it allocated):
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

import collections
import contextlib
import operator
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


def key(op: str, tensors, arguments: tuple, config=None):
    """A call's key: the op, its tensors' `signature`, its other arguments (a tuple of hashables) and its config
    (None, a string, or a dict: as its sorted items); None (no plan) under torch.compile's tracing or when a
    tensor is not a plain dense tensor."""
    if not ENABLED or torch.compiler.is_compiling():
        return None
    sig = signature(*tensors)
    if sig is None:
        return None
    return op, sig, arguments, tuple(sorted(config.items())) if type(config) is dict else config


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

    def __init__(self, launches):
        super().__init__()
        self.launches = launches  # the recording this guard watches (launcher.STATE.recording while it is on)
        self.allocations = []  # (tensor, shape, strides, dtype, device)
        self.foreign = None  # the first op a replay would skip

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if launcher.STATE.in_launch or launcher.STATE.recording is not self.launches:
            return out  # the interpreter's own work inside a launch; work of no recording or another's (`suspended`)
        if func in self.ALLOCATIONS:
            if out.device.type != "meta":
                self.allocations.append(out)
        elif not (func.is_view or func in self.HARMLESS) and self.foreign is None:
            self.foreign = func
        return out


@contextlib.contextmanager
def record(key, inputs, fresh: int = 0):
    """Run the body (the op's full path) and keep a plan of its launches under `key`, with `inputs` the call's
    tensors (None allowed) in the order `replay` gets them, the last `fresh` of them outputs the op allocated for
    this call (fresh tensors: the plan's replays allocate their own, of the same shapes and strides). A body that raises keeps nothing.
    A key of None (or a recording already under way: this call's launches belong to it) just runs the body."""
    if key is None or launcher.STATE.recording is not None or torch.compiler.is_compiling():
        yield
        return
    launcher.STATE.recording = launches = []
    guard = _Guard(launches)
    try:
        with guard:
            yield
    finally:
        launcher.STATE.recording = None
    # the launches a replay counts: this recording's own (not other threads', nor a tuner's under `suspended`)
    counts = collections.Counter(launcher.kernel_name(step[0]) for step in launches if step is not None)
    plan = _build(launches, guard, inputs, fresh, counts)
    if plan is None:  # inputs that alias each other: decide again on the next call
        return
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    try:
        _PLANS[key] = plan
    except TypeError:
        return
    STATS["recorded" if plan is not UNREPEATABLE else "unrepeatable"] += 1


@contextlib.contextmanager
def suspended():
    """Run the body as no part of the call being recorded, if any (a shape tuned on its first call,
    tune/online.py: its launches and torch ops belong to no plan): no recording, and the recording's guard looks
    away. (Its launches are counted in launcher.LAUNCHES, as every launch is; a plan counts its recording's own.)"""
    state = launcher.STATE
    saved = state.recording
    state.recording = None  # the recording's guard looks away while it is not the one under way
    try:
        yield
    finally:
        state.recording = saved


def _build(launches, guard, inputs, fresh, counts):
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
            spec = resolve(a)
            if spec is None:
                return UNREPEATABLE
            if spec is _AMBIGUOUS:
                return None
            template[pos] = None
            dynamic.append((pos, spec))
        steps.append(Step(kernel, grid, kwargs, entry, template, tuple(dynamic)))
    n_inputs = len(inputs) - fresh
    outputs = tuple((tuple(t.shape), None if t.stride() == _row_major(t.shape) else t.stride(), t.dtype, t.device)
                    for t in inputs[n_inputs:])  # strides kept where an op allocates other than torch.empty's
    workspaces = tuple((i, tuple(sources[i].shape), sources[i].stride(), sources[i].dtype, sources[i].device)
                       for i in sorted(resolve.used) if i >= len(inputs))
    return CallPlan(tuple(steps), n_inputs, outputs, workspaces, len(sources), tuple(counts.items()))


def _row_major(shape):
    """torch.empty(shape)'s strides (a size-1 dimension's too: (M, 1) -> (1, 1), where an M-major (M, 1) view has
    (1, M); is_contiguous() calls both contiguous)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


_AMBIGUOUS = object()


class _Resolver:
    """Maps a launch argument of the recorded call to where a replay finds it among its sources (inputs, then
    workspaces), as a spec: ("source", i); ("view", i, shape, strides, offset from the source's); or
    ("descriptor", tensor spec, class, fields): a TMA descriptor over one of those, its other fields as recorded."""

    def __init__(self, sources):
        self.sources = sources
        self.used = set()  # the sources some argument reads

    def __call__(self, a):
        if isinstance(a, torch.Tensor):
            return self._tensor(a)
        base = getattr(a, "base", None)
        if isinstance(base, torch.Tensor) and type(a).__name__ == "TensorDescriptor":
            spec = self._tensor(base)
            if spec is None or spec is _AMBIGUOUS:
                return spec
            return ("descriptor", spec, type(a), {k: v for k, v in vars(a).items() if k != "base"})
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
            return ("source", i)
        return ("view", i, tuple(t.shape), t.stride(), t.storage_offset() - s.storage_offset())


def _getter(spec):
    """A spec (`_Resolver`) as a function of a replay's sources."""
    kind = spec[0]
    if kind == "source":
        return operator.itemgetter(spec[1])
    if kind == "view":
        _, i, shape, stride, delta = spec
        return lambda src: src[i].as_strided(shape, stride, src[i].storage_offset() + delta)
    _, inner, cls, fields = spec
    get = _getter(inner)
    return lambda src: _descriptor(cls, fields, get(src))


def _descriptor(cls, fields, base):
    d = object.__new__(cls)
    d.__dict__.update(fields)
    d.base = base
    return d


class Step:
    """One recorded launch: the kernel, grid, constexprs and launch-cache entry, and its runtime arguments as a
    template (None where a replay fills in a tensor: no tensor of the recorded call is kept) with the specs of
    those slots."""

    __slots__ = ("kernel", "grid", "kwargs", "entry", "template", "specs", "getters")

    def __init__(self, kernel, grid, kwargs, entry, template, specs):
        self.kernel, self.grid, self.kwargs, self.entry = kernel, grid, kwargs, entry
        self.template, self.specs = template, specs
        self.getters = tuple((pos, _getter(spec)) for pos, spec in specs)


# ----------------------------------------------------------------------------- replay

class CallPlan:
    """The launches of one call signature, repeated on each call's tensors.

    `replay(inputs)` takes the call's tensors as `record` got them, minus the fresh outputs, allocates those and
    the workspaces, launches, and returns the fresh outputs. Where every launch's compiled kernel has a launcher
    laid out as Triton 3.6's (launcher.direct), the plan runs a Python function generated for it (`source`, at its
    first replay: a signature called once never pays for it): straight-line code that unpacks the tensors,
    allocates, encodes a TMA descriptor only for an address it has not seen in that slot (a view of an input passed
    as its address, an int, which the C launchers take for a pointer: no view made), and calls each C
    launcher with every argument the signature fixes written in as a constant. Otherwise, or when the current
    device is not the recorded one or a launch hook is set, the generic replay fills each launch's template and
    repeats it through the launcher's cache."""

    __slots__ = ("steps", "n_inputs", "outputs", "workspaces", "n_sources", "counts", "fast", "source", "generated")

    def __init__(self, steps, n_inputs, outputs, workspaces, n_sources, counts):
        self.steps, self.n_inputs, self.outputs, self.workspaces = steps, n_inputs, outputs, workspaces
        self.n_sources, self.counts = n_sources, counts
        self.fast = self.source = None
        self.generated = False  # _generate tried (at the first replay)

    def replay(self, inputs):
        """The recorded call's launches on `inputs` (the same signature, in `record`'s order, without the fresh
        outputs); returns the fresh outputs (a tuple, empty if none)."""
        if self.fast is not None:
            ys = self.fast(inputs)
            if ys is not None:
                return ys
        ys = tuple(torch.empty(shape, dtype=dtype, device=device) if stride is None else
                   torch.empty_strided(shape, stride, dtype=dtype, device=device)
                   for shape, stride, dtype, device in self.outputs)
        src = list(inputs) + list(ys) + [None] * (self.n_sources - len(inputs) - len(ys))
        for i, shape, stride, dtype, device in self.workspaces:
            src[i] = torch.empty_strided(shape, stride, dtype=dtype, device=device)
        launched = []
        for step in self.steps:
            args = step.template.copy()
            for pos, get in step.getters:
                args[pos] = get(src)
            launched.append(args)
            if step.entry is None or not launcher.run_entry(step.entry, step.grid, args):
                launcher.STATE.in_launch = True
                try:
                    step.kernel[step.grid](*args, **step.kwargs)
                finally:
                    launcher.STATE.in_launch = False
        for name, n in self.counts:
            launcher.LAUNCHES[name] += n
        STATS["replays"] += 1
        if not self.generated:
            self.generated = True
            self.fast, self.source = _generate(self, launched)
        return ys


MAX_DESCRIPTOR_MAPS = 256  # encoded TMA maps kept per descriptor slot of a plan (one per address seen)


def _generate(plan, launched):
    """(function, its source) of `plan`'s straight-line replay (`CallPlan`), or (None, None) where a launch has no
    `launcher.direct` form. `launched`: each launch's runtime arguments in a replay (read here, not kept: a
    descriptor's encoding there fixes the shape and strides its slot passes)."""
    directs = [launcher.direct(step.entry) for step in plan.steps]
    if not directs or any(d is None for d in directs):
        return None, None
    if any(spec[0] == "descriptor" and pos not in d.descriptors  # a descriptor lowered to plain arguments
           for step, d in zip(plan.steps, directs) for pos, spec in step.specs):
        return None, None
    runtime, current_device, current_stream = launcher.current_runtime()
    ns = {"_device": current_device, "_stream": current_stream, "_rt": runtime, "_hooked": launcher._hooked,
          "_empty": torch.empty, "_empty_strided": torch.empty_strided, "_LAUNCHES": launcher.LAUNCHES,
          "_STATS": STATS}

    def const(v):
        if v is None or type(v) in (int, bool):
            return repr(v)
        name = f"_c{len(ns)}"
        ns[name] = v
        return name

    n_in = plan.n_inputs
    names = [f"s{i}" for i in range(plan.n_sources)]
    lines = ["def replay(src):", f"    {', '.join(names[:n_in])}{',' if n_in else ''} = src" if n_in else "    pass"]
    devices = sorted({d.device for d in directs})
    lines.append(f"    if {' or '.join(f'_device() != {dev}' for dev in devices)} or _hooked(_rt.launch_enter_hook) "
                 "or _hooked(_rt.launch_exit_hook):")
    lines.append("        return None")
    for j, (shape, stride, dtype, device) in enumerate(plan.outputs):
        lines.append(f"    {names[n_in + j]} = _empty({shape!r}, dtype={const(dtype)}, device={const(device)})"
                     if stride is None else f"    {names[n_in + j]} = _empty_strided({shape!r}, {stride!r}, "
                                            f"dtype={const(dtype)}, device={const(device)})")
    for i, shape, stride, dtype, device in plan.workspaces:
        lines.append(f"    {names[i]} = _empty_strided({shape!r}, {stride!r}, dtype={const(dtype)}, "
                     f"device={const(device)})")
    for dev in devices:
        lines.append(f"    stream{dev} = _stream({dev})")

    def tensor(spec):
        if spec[0] == "source":
            return names[spec[1]]
        _, i, shape, stride, delta = spec
        return f"{names[i]}.as_strided({shape!r}, {stride!r}, {names[i]}.storage_offset() + {delta})"

    def address(spec, itemsize):
        """A pointer parameter as the C launcher also takes it, an int: a view's address without making the view
        (its shape and strides are the launch's other parameters, fixed by the signature)."""
        if spec[0] == "source":
            return names[spec[1]]
        _, i, _shape, _stride, delta = spec
        return f"({names[i]}.data_ptr() + {delta * itemsize})"

    for k, (step, d, args) in enumerate(zip(plan.steps, directs, launched)):
        specs = dict(step.specs)
        params = []
        for pos, a in enumerate(args):
            spec = specs.get(pos)
            if spec is None:
                params.append(const(a))
            elif spec[0] != "descriptor":
                params.append(address(spec, a.element_size()))
            else:
                _, inner, cls, fields = spec
                meta = d.descriptors[pos]
                expanded = d.expand(a, meta)  # this replay's map; shape and strides are fixed by the signature
                maps = {a.base.data_ptr(): expanded[0]}

                def encode(t, cls=cls, fields=fields, meta=meta, maps=maps, expand=d.expand):
                    if len(maps) >= MAX_DESCRIPTOR_MAPS:
                        maps.clear()
                    m = maps[t.data_ptr()] = expand(_descriptor(cls, fields, t), meta)[0]
                    launcher.TMA_STATS["encoded"] += 1
                    return m
                ns[f"_maps{k}_{pos}"], ns[f"_encode{k}_{pos}"] = maps, encode
                p, m = f"p{k}_{pos}", f"m{k}_{pos}"
                # the map of an address seen before: looked up by the address alone (no view made for it)
                ptr = f"{names[inner[1]]}.data_ptr()" if inner[0] == "source" else address(inner, a.base.element_size())
                lines.append(f"    {p} = {ptr}")
                lines.append(f"    {m} = _maps{k}_{pos}.get({p})")
                lines.append(f"    if {m} is None:")
                lines.append(f"        {m} = _encode{k}_{pos}({tensor(inner)})")
                params.append(", ".join([m] + [const(v) for v in expanded[1:]]))
        ns[f"_raw{k}"] = d.raw
        grid = (*step.grid, 1, 1)[:3]
        head = ", ".join(const(v) for v in d.head)
        tail = "".join(f", {const(v)}" for v in d.tail)
        body = f"{''.join(', ' + p for p in params)}{tail}"
        if d.packed:  # the parameters as one list (launcher.py's "packed" layout, Triton 3.7+)
            body = f", [{body[2:]}]"
        lines.append(f"    _raw{k}({grid[0]}, {grid[1]}, {grid[2]}, stream{d.device}, {head}{body})"
                     f"  # {launcher.kernel_name(step.kernel)}")
    for name, n in plan.counts:
        lines.append(f"    _LAUNCHES[{name!r}] += {n}")
    lines.append("    _STATS['replays'] += 1")
    outs = names[n_in:n_in + len(plan.outputs)]
    lines.append(f"    return ({''.join(o + ', ' for o in outs)})")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<gemmkit call plan {id(plan):x}>", "exec"), ns)
    return ns["replay"], source
