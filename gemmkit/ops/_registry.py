"""One helper for every single-output op: its two custom ops (functional and `_out`, each with a fake), its
eager path, and its call plans.

    gemmkit.<op>(...) ─► op-specific argument defaults ─► Op.call(*args, out_dtype=, out=, config=)
                                                             │ a known signature: replay its plan (callplan.py)
                                                             │ else: check, then
                                                             │   plain tensors, not tracing: run (recorded)
                                                             ▼   otherwise: torch.ops.gemmkit.<op>[_out]
    torch.ops.gemmkit.<op>(*args, out_dtype, config)       -> Tensor      the same plan / check / run
    torch.ops.gemmkit.<op>_out(*args, config, Tensor(a!) out) -> ()

An op gives `Op` its schema's own arguments (`params`, the leading ones tensors), `check(*args, out_dtype, out)`
(raises on bad input, returns the output's shape) and `run(*args, config, y)` (the full path into y). The
custom ops are defined with `torch.library.Library` and implemented for every backend
(CompositeExplicitAutograd): torch.ops.gemmkit.gemm_a16w16 costs ~12 us more than the eager call on the H200's
host (47.1 against 34.7 us), where `torch.library.custom_op`'s Python wrappers cost ~28 us (docs/PERF.md). The fakes run `check` on fake tensors (torch.compile, meta tensors).
"""
from __future__ import annotations

import torch

from .. import callplan as CP
from . import _common as C

LIB = torch.library.Library("gemmkit", "FRAGMENT")


class Op:
    """A registered op: `call` for the public function, `torch.ops.gemmkit.<name>` and `<name>_out`."""

    def __init__(self, name: str, params: str, n_tensors: int, check, run, default_out_dtype, *,
                 output_shape=None, config_to_str=C.config_to_str):
        """`params`: the schema's arguments before out_dtype / config (e.g. "Tensor x, Tensor w, Tensor? bias,
        str activation"); the first `n_tensors` are the call plan's inputs (None allowed).
        `default_out_dtype(x, out)`: the output dtype of a call with out_dtype=None. `output_shape(*args)`:
        the output's shape (default: y = x @ w.T's, x.shape[:-1] + (w.shape[0],)); it runs on replayed calls,
        whose signature passed `check`. `config_to_str`: the public `config=` as the custom ops' string."""
        self.name, self.n, self.check, self.run = name, n_tensors, check, run
        self.default_out_dtype = default_out_dtype
        self.config_to_str = config_to_str
        if output_shape is not None:
            self.output_shape = output_shape
        self.tensor_names = [p.split()[-1] for p in params.split(",")][:n_tensors]
        LIB.define(f"{name}({params}, ScalarType out_dtype, str config) -> Tensor")
        LIB.define(f"{name}_out({params}, str config, Tensor(a!) out) -> ()")
        LIB.impl(name, self._functional, "CompositeExplicitAutograd")
        LIB.impl(f"{name}_out", self._out_variant, "CompositeExplicitAutograd")
        torch.library.register_fake(f"gemmkit::{name}", self._fake, lib=LIB)
        torch.library.register_fake(f"gemmkit::{name}_out", self._fake_out, lib=LIB)
        self.functional = getattr(torch.ops.gemmkit, name).default
        self.out_variant = getattr(torch.ops.gemmkit, f"{name}_out").default

    # ------------------------------------------------------------------ the public op

    def call(self, *args, out_dtype=None, out=None, config=None):
        """The public op after its own defaults: `args` in schema order."""
        key = CP.key(self.name, args[:self.n] + (out,), *args[self.n:], out_dtype, config, C.target_key(args[0]))
        plan = CP.lookup(key)
        if out_dtype is None:
            out_dtype = self.default_out_dtype(args[0], out)
        if CP.repeatable(plan):
            y = out if out is not None else self._new(args, out_dtype)
            if out is not None:
                self._check_out_disjoint(args, out)
            plan.replay(args[:self.n] + (y,))
            return y
        self.check(*args, out_dtype=out_dtype, out=out)
        C.check_no_grad(self.name, **self._named(args))
        cfg = self.config_to_str(config)
        if C.eager_call(*args[:self.n], out):
            # Plain tensors outside torch.compile: no dispatcher round trip. Same checks, same kernels.
            y = out if out is not None else self._new(args, out_dtype)
            with CP.record(CP.record_key(key, plan), args[:self.n] + (y,)):
                self.run(*args, config=cfg, y=y)
            return y
        if out is not None:
            self.out_variant(*args, cfg, out)
            return out
        return self.functional(*args, out_dtype, cfg)

    # ------------------------------------------------------------------ the custom ops

    def _functional(self, *a):
        args, out_dtype, config = a[:-2], a[-2], a[-1]
        key = CP.key(self.name, args[:self.n] + (None,), *args[self.n:], out_dtype, config, C.target_key(args[0]))
        plan = CP.lookup(key)
        if CP.repeatable(plan):
            y = self._new(args, out_dtype)
            plan.replay(args[:self.n] + (y,))
            return y
        shape = self.check(*args, out_dtype=out_dtype, out=None)
        y = torch.empty(shape, dtype=out_dtype, device=args[0].device)
        with CP.record(CP.record_key(key, plan), args[:self.n] + (y,)):
            self.run(*args, config=config, y=y)
        return y

    def _out_variant(self, *a):
        args, config, out = a[:-2], a[-2], a[-1]
        key = CP.key(self.name, args[:self.n] + (out,), *args[self.n:], out.dtype, config, C.target_key(args[0]))
        plan = CP.lookup(key)
        if CP.repeatable(plan):
            self._check_out_disjoint(args, out)
            plan.replay(args[:self.n] + (out,))
            return
        self.check(*args, out_dtype=out.dtype, out=out)
        with CP.record(CP.record_key(key, plan), args[:self.n] + (out,)):
            self.run(*args, config=config, y=out)

    def _fake(self, *a):
        args, out_dtype = a[:-2], a[-2]
        return args[0].new_empty(self.check(*args, out_dtype=out_dtype, out=None), dtype=out_dtype)

    def _fake_out(self, *a):
        args, out = a[:-2], a[-1]
        self.check(*args, out_dtype=out.dtype, out=out)

    # ------------------------------------------------------------------ helpers

    def _new(self, args, out_dtype):
        """A replayed call's output (its shape is the recorded call's: `check` passed on this signature)."""
        return torch.empty(self.output_shape(*args), dtype=out_dtype, device=args[0].device)

    def output_shape(self, *args):
        return tuple(args[0].shape[:-1]) + (args[1].shape[0],)  # y = x @ w.T; ops of other shapes override

    def _named(self, args):
        return dict(zip(self.tensor_names, args[:self.n]))

    def _check_out_disjoint(self, args, out):
        C.check_out_disjoint("out", out, **self._named(args))
