"""One helper for every op with `out=`: its two custom ops (functional and `_out`, each with a fake), its eager path,
and its call plans.

    gemmkit.<op>(...) ─► op-specific argument defaults ─► Op.call(*args, out_dtype=, out=, config=)
                                                             │ a known signature: replay its plan (callplan.py)
                                                             │ else: check, then
                                                             │   plain tensors, not tracing: run (recorded)
                                                             ▼   otherwise: torch.ops.gemmkit.<op>[_out]
    torch.ops.gemmkit.<op>(*args, out_dtype, config)       -> Tensor      the same plan / check / run
    torch.ops.gemmkit.<op>_out(*args, config, Tensor(a!) out) -> ()

An op gives `Op` its schema's own arguments (`params`; the tensors among them, in order, are the call plan's
inputs), `check(*args, out_dtype, out)` (raises on bad input, returns the output's shape) and `run(*args, config,
y)` (the full path into y). An op of several outputs (gemm_split_cat: c1, c2) names them (`outputs`): its
functional op returns a tuple, its `_out` op takes one out tensor per output, the public `out=` is a tuple (or
list) of them, `check` returns a tuple of shapes and `run` gets the tuple of outputs as `y`; every output has
out_dtype. The custom ops are defined with `torch.library.Library` and implemented for every backend
(CompositeExplicitAutograd): torch.ops.gemmkit.gemm_a16w16 costs ~2.5 us more than the eager call on the H200's
host (13.3 against 10.8 us, both replaying a call plan), where `torch.library.custom_op`'s Python wrappers cost
~28 us (docs/PERF.md). The
fakes run `check` on fake tensors (torch.compile, meta tensors).

Ops that were first registered with `torch.library.custom_op` (split-cat, gemm_afp4wfp4, the quantizers) keep the
schemas it gave them (`legacy_schema`: alias sets named by argument position, the pt2_compliant tag), so their names,
arguments and returns read as they always have.

An op without a dtype or config of its own (`plain`: the quantizers in gemmkit/quant.py) has neither in its schemas
(`name(params) -> ...`, `name_out(params, outs...) -> ()`); its outputs' dtypes come from its arguments
(`out_dtypes`), and `new_outputs` may give them other strides than row-major (a block-scale quantizer's M-major
scale; call plans replay those strides).
"""
from __future__ import annotations

import torch

from .. import callplan as CP
from . import _common as C

LIB = torch.library.Library("gemmkit", "FRAGMENT")


class Op:
    """A registered op: `call` for the public function, `torch.ops.gemmkit.<name>` and `<name>_out`."""

    def __init__(self, name: str, params: str, n_tensors: int | None, check, run, default_out_dtype, *,
                 output_shape=None, config_to_str=C.config_to_str, outputs=("out",), grad_checked=None,
                 legacy_schema: bool = False, plain: bool = False, out_dtypes=None, new_outputs=None):
        """`params`: the schema's arguments before out_dtype / config (e.g. "Tensor x, Tensor w, Tensor? bias,
        str activation"); its tensors (`n_tensors` of them, None: count them) are the call plan's inputs (None
        allowed). `default_out_dtype(x, out)`: the output dtype of a call with out_dtype=None. `output_shape(*args)`:
        the output's shape (a tuple of shapes for several outputs; default: y = x @ w.T's, x.shape[:-1] +
        (w.shape[0],)); it runs on replayed calls, whose signature passed `check`. `config_to_str`: the public
        `config=` as the custom ops' string. `outputs`: the `_out` op's output names, one per output.
        `grad_checked`: the tensors whose requires_grad the call refuses (default: every tensor argument).
        `legacy_schema`: the schema `torch.library.custom_op` would write (see the module docstring). `plain`: no
        out_dtype / config arguments (default_out_dtype unused: None). `out_dtypes(*args, out_dtype)`: a dtype per
        output (default: out_dtype for each). `new_outputs(args, shapes, dtypes, like)`: the fresh outputs (default:
        like.new_empty(shape, dtype) each)."""
        self.name, self.check, self.run = name, check, run
        self.plain = plain
        self.out_dtypes = out_dtypes or (lambda *args, out_dtype: (out_dtype,) * self.k)
        self.new_outputs = new_outputs
        self.default_out_dtype = default_out_dtype
        self.config_to_str = config_to_str
        if output_shape is not None:
            self.output_shape = output_shape
        decls = [p.split() for p in params.split(",")]
        self.tensor_pos = tuple(i for i, d in enumerate(decls) if d[0].startswith("Tensor"))
        if n_tensors is not None and n_tensors != len(self.tensor_pos):
            raise ValueError(f"Op {name}: n_tensors = {n_tensors}, but params has {len(self.tensor_pos)} tensors")
        self.other_pos = tuple(i for i in range(len(decls)) if i not in self.tensor_pos)
        self.n = len(self.tensor_pos)
        self._tensors, self._others = _picker(self.tensor_pos), _picker(self.other_pos)
        self.tensor_names = [decls[i][-1] for i in self.tensor_pos]
        self.grad_checked = tuple(grad_checked) if grad_checked is not None else tuple(self.tensor_names)
        self.outputs = tuple(outputs)
        self.k = len(self.outputs)
        self._no_outs = (None,) * self.k
        self.out_names = ("out",) if self.k == 1 else tuple(f"out[{i}]" for i in range(self.k))
        returns = "Tensor" if self.k == 1 else "(" + ", ".join(["Tensor"] * self.k) + ")"
        first_out = len(decls) + (0 if plain else 1)  # the _out op's arguments: params, config, then the outputs
        outs = ", ".join(f"Tensor(a{first_out + j if legacy_schema else ''}!) {o}" if legacy_schema or self.k == 1
                         else f"Tensor({chr(ord('a') + j)}!) {o}" for j, o in enumerate(self.outputs))
        tags = (torch.Tag.pt2_compliant_tag,) if legacy_schema else ()
        tail, out_tail = ("", "") if plain else (", ScalarType out_dtype, str config", ", str config")
        LIB.define(f"{name}({params}{tail}) -> {returns}", tags=tags)
        LIB.define(f"{name}_out({params}{out_tail}, {outs}) -> ()", tags=tags)
        LIB.impl(name, self._functional, "CompositeExplicitAutograd")
        LIB.impl(f"{name}_out", self._out_variant, "CompositeExplicitAutograd")
        torch.library.register_fake(f"gemmkit::{name}", self._fake, lib=LIB)
        torch.library.register_fake(f"gemmkit::{name}_out", self._fake_out, lib=LIB)
        self.functional = getattr(torch.ops.gemmkit, name).default
        self.out_variant = getattr(torch.ops.gemmkit, f"{name}_out").default

    # ------------------------------------------------------------------ the public op

    def call(self, *args, out_dtype=None, out=None, config=None):
        """The public op after its own defaults: `args` in schema order."""
        tensors = self._tensors(args)
        outs = self._no_outs if out is None else self._outs(out)
        key = None if outs is None else self._key(args, outs, out_dtype, config, tensors)
        plan = CP.lookup(key)
        if CP.repeatable(plan):
            if out is None:
                ys = plan.replay(tensors)
                return ys[0] if self.k == 1 else ys
            self._check_out_disjoint(args, outs)
            plan.replay(tensors + outs)
            return self._result(outs)
        if out_dtype is None and not self.plain:
            out_dtype = self.default_out_dtype(args[0], out)
        self.check(*args, out_dtype=out_dtype, out=out)
        C.check_no_grad(self.name, **{n: t for n, t in self._named(args).items() if n in self.grad_checked})
        cfg = self.config_to_str(config)
        if C.eager_call(*tensors, *outs):
            # Plain tensors outside torch.compile: no dispatcher round trip. Same checks, same kernels.
            ys = outs if out is not None else self._new(args, out_dtype)
            with CP.record(CP.record_key(key, plan), tensors + ys, fresh=0 if out is not None else self.k):
                self.run(*args, config=cfg, y=self._result(ys))
            return self._result(ys)
        if out is not None:
            self.out_variant(*args, *outs) if self.plain else self.out_variant(*args, cfg, *outs)
            return self._result(outs)
        return self.functional(*args) if self.plain else self.functional(*args, out_dtype, cfg)

    # ------------------------------------------------------------------ the custom ops

    def _split(self, a):
        """A functional op's arguments -> (args, out_dtype, config)."""
        return (a, None, "") if self.plain else (a[:-2], a[-2], a[-1])

    def _split_out(self, a):
        """An `_out` op's arguments -> (args, config, outs)."""
        k = self.k
        return (a[:-k], "", tuple(a[-k:])) if self.plain else (a[:-1 - k], a[-1 - k], tuple(a[-k:]))

    def _functional(self, *a):
        args, out_dtype, config = self._split(a)
        tensors = self._tensors(args)
        key = self._key(args, self._no_outs, out_dtype, config, tensors)
        plan = CP.lookup(key)
        if CP.repeatable(plan):
            return self._result(plan.replay(tensors))
        shapes = self._shapes(self.check(*args, out_dtype=out_dtype, out=None))
        ys = self._empty(args, out_dtype, shapes)
        with CP.record(CP.record_key(key, plan), tensors + ys, fresh=self.k):
            self.run(*args, config=config, y=self._result(ys))
        return self._result(ys)

    def _out_variant(self, *a):
        args, config, outs = self._split_out(a)
        tensors = self._tensors(args)
        key = self._key(args, outs, outs[0].dtype, config, tensors)
        plan = CP.lookup(key)
        if CP.repeatable(plan):
            self._check_out_disjoint(args, outs)
            plan.replay(tensors + outs)
            return
        self.check(*args, out_dtype=self._out_dtype(outs), out=self._result(outs))
        with CP.record(CP.record_key(key, plan), tensors + outs):
            self.run(*args, config=config, y=self._result(outs))

    def _fake(self, *a):
        args, out_dtype, _ = self._split(a)
        shapes = self._shapes(self.check(*args, out_dtype=out_dtype, out=None))
        return self._result(self._empty(args, out_dtype, shapes))

    def _fake_out(self, *a):
        args, _, outs = self._split_out(a)
        self.check(*args, out_dtype=self._out_dtype(outs), out=self._result(outs))

    # ------------------------------------------------------------------ helpers

    def _out_dtype(self, outs):
        """The out_dtype an `_out` call's check gets: its first output's (a plain op has none)."""
        return None if self.plain else outs[0].dtype

    def _empty(self, args, out_dtype, shapes):
        """Fresh outputs of `shapes` (a tuple, one per output) on args[0]'s device (fake tensors too)."""
        dtypes = self.out_dtypes(*args, out_dtype=out_dtype)
        if self.new_outputs is not None:
            return tuple(self.new_outputs(args, shapes, dtypes, args[0]))
        return tuple(args[0].new_empty(s, dtype=d) for s, d in zip(shapes, dtypes))

    def _key(self, args, outs, out_dtype, config, tensors):
        """The call plan key (callplan.key): the tensor arguments and the outputs, then the other arguments."""
        return CP.key(self.name, tensors + outs, (*self._others(args), out_dtype, C.target_key(args[0])), config)

    def _outs(self, out):
        """The public `out=` as a tuple of one entry per output (None entries: allocate them); None for an `out=`
        that is not `outputs` tensors (no plan: the checks say what is wrong with it)."""
        if self.k == 1:
            return (out,)
        if out is None:
            return (None,) * self.k
        if isinstance(out, (tuple, list)) and len(out) == self.k and all(isinstance(t, torch.Tensor) for t in out):
            return tuple(out)
        return None

    def _result(self, ys):
        return ys[0] if self.k == 1 else tuple(ys)

    def _shapes(self, shape):
        return (shape,) if self.k == 1 else tuple(shape)

    def _new(self, args, out_dtype):
        """A replayed call's outputs (their shapes are the recorded call's: `check` passed on this signature)."""
        return self._empty(args, out_dtype, self._shapes(self.output_shape(*args)))

    def output_shape(self, *args):
        return tuple(args[0].shape[:-1]) + (args[1].shape[0],)  # y = x @ w.T; ops of other shapes override

    def _named(self, args):
        return dict(zip(self.tensor_names, self._tensors(args)))

    def _check_out_disjoint(self, args, outs):
        """A replayed call's address-dependent checks: the outputs against each other, then against the inputs."""
        for j in range(1, self.k):
            for i in range(j):
                C.check_out_disjoint(self.out_names[j], outs[j], **{self.out_names[i]: outs[i]})
        named = self._named(args)
        for name, t in zip(self.out_names, outs):
            C.check_out_disjoint(name, t, **named)


def _picker(positions):
    """args -> (args[i] for i in positions) as a tuple, written out (a call's hot path; torch.compile traces it)."""
    return eval(f"lambda args: ({''.join(f'args[{i}], ' for i in positions)})")  # noqa: S307 - ints only
