"""An executable model of the CDNA ping-pong kernel (cdna_pingpong.py): its own code, run in NumPy.

The model does not re-write the kernel. It takes the source of `cdna_pingpong_kernel` and `_run` (the
@gluon.jit functions, as written) and executes them as plain Python, once per program of the grid, with
the Gluon primitives they call replaced by NumPy semantics over per-wave state:

    gl.BlockedLayout / DotOperandLayout / AMDMFMALayout   the compiler's own linear layouts (Triton's C++
                                                          toLinearLayout via the Gluon builder): which
                                                          (wave, lane, register) holds which tensor element
    gl.SwizzledSharedLayout                               element (r, c) -> LDS offset, from the layout's
                                                          definition (Triton 3.6 cannot hand a shared layout's
                                                          linear layout to Python); checked against
                                                          cdna_layout.lds_offset
    async_copy.buffer_load_to_shared                      every lane's vector: global offset (the kernel's
                                                          `offs + k_off`, in the layout `ld`) -> its LDS slot;
                                                          one instruction must fill one contiguous LDS range;
                                                          a mask must be one value per vector; a masked or
                                                          out-of-range lane (32-bit byte offset at or past
                                                          cdna_layout.BUFFER_BYTES) writes 0; writes land at
                                                          wait_group (NaN until then)
    shared .index / .slice / .permute / .load(DOT_x)      LDS -> the registers of every wave and lane
    cdna3.mfma                                            the ISA's v_mfma_f32_16x16x{32,16}_bf16 on register
                                                          chunks (transposed layouts: operands swapped), fp32
    bias_activation (kernels/triton/_epilogue.py)         its own source, with `tl` as NumPy fp32, on the
                                                          accumulator's logical tile; the bias indexed by the
                                                          kernel's column offsets
    cdna3.buffer_store(out.to(dtype), mask)               every register to its C offset, rounded to C's dtype;
                                                          masked / out-of-range lanes dropped; an element
                                                          written twice is an error
    barriers                                              no-ops: every wave steps in program order; that this
                                                          order is the only one that matters is the race
                                                          checker's result (gemmkit/schedule), not the model's

So the op lists walked (PROLOGUE, BODY, LAST, EPILOGUE) are `constexprs(target)`'s, the offsets are the
kernel's expressions, and the register <-> element maps are what the compiler builds from the kernel's
layouts. What the model adds is hardware: the MFMA's operand and result placement (lane l, element j of A is
A[l % 16][(l // 16) * kw + j]; result register i of lane l is D[(l // 16) * 4 + i][l % 16]), direct-to-LDS
writing a contiguous range per instruction, buffer ops returning 0 / dropping stores past the resource's range
and reporting an offset inside the range but outside the tensor (where hardware would read or write a
neighbour's memory). `run` compiles the variant cdna_host.variant picks for the shape (EDGE, MASK_K).

`run(target, A, B, mutate=...)` returns C and a report; `mutate` injects faults (tests/kernels/test_cdna_model.py).
"""
from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from dataclasses import dataclass, field

import numpy as np
from triton.experimental.gluon import language as _gl

from . import cdna_layout as L
from . import cdna_pingpong as K

WAVE = L.WAVE


class ModelError(AssertionError):
    pass


# ---- layouts -> tables ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _builder():
    from triton._C.libtriton import gluon_ir, ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    return ctx, gluon_ir.GluonOpBuilder(ctx)


@functools.lru_cache(maxsize=None)
def linear_layout(layout, shape: tuple):
    """The compiler's linear layout of a distributed Gluon layout over `shape`."""
    _, b = _builder()
    return b.to_linear_layout(layout._to_ir(b), list(shape))


def _span(bases, rank):
    """All 2^len(bases) XOR-combinations of `bases`, index bit i <-> basis i."""
    out = np.zeros((1 << len(bases), rank), np.int64)
    for i, v in enumerate(bases):
        out[1 << i:2 << i] = out[:1 << i] ^ np.array(v, np.int64)
    return out


@functools.lru_cache(maxsize=None)
def layout_table(layout, shape: tuple) -> np.ndarray:
    """[waves, lanes, registers, rank]: the tensor index (wave, lane, register) holds, per the compiler."""
    ll = linear_layout(layout, shape)
    rank = len(shape)
    w, l, r = (_span(b, rank) for b in (ll.warp_bases, ll.lane_bases, ll.reg_bases))
    t = w[:, None, None, :] ^ l[None, :, None, :] ^ r[None, None, :, :]
    if t.shape[0] != L.NUM_WARPS or t.shape[1] != WAVE:
        raise ModelError(f"{layout}: {t.shape[0]} waves x {t.shape[1]} lanes, expected {L.NUM_WARPS} x {WAVE}")
    t.flags.writeable = False
    return t


def swizzled_offsets(smem, rows: int, cols: int) -> np.ndarray:
    """[rows, cols] LDS element offsets of SwizzledSharedLayout(vec, per_phase, max_phase, order=[1, 0])
    (Triton's definition: the vec-chunk index of row r is XOR-ed with (r // per_phase) % max_phase)."""
    if list(smem.order) != [1, 0]:
        raise ModelError(f"the model takes row-major swizzled layouts, got order {smem.order}")
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    phase = (r // smem.per_phase) % smem.max_phase
    return r * cols + ((c // smem.vec) ^ phase) * smem.vec + c % smem.vec


def round_to(x, dtype: str) -> np.ndarray:
    """float32 -> the nearest value of `dtype` ("bf16", "fp16", "fp32"), returned as float32."""
    if dtype == "bf16":
        return to_bf16(x)
    if dtype == "fp16":
        return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)
    return np.asarray(x, np.float32)


_GL_NAME = {"bf16": _gl.bfloat16, "fp16": _gl.float16, "fp32": _gl.float32}


def to_bf16(x) -> np.ndarray:
    """float32 -> nearest bf16 (ties to even), returned as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return b.view(np.float32)


# ---- the state and the primitives -------------------------------------------------------------------

@dataclass
class Mutation:
    """Faults to inject. table(layout, shape, table) -> table (a register layout, e.g. DOT_A's);
    smem(side, offsets) -> offsets (side 'write': the direct-to-LDS destination, 'read': the LDS -> register
    read); source(name, text) -> text (the kernel's own source); constexprs(dict) -> dict (op lists)."""
    table: object = None
    smem: object = None
    source: object = None
    constexprs: object = None


@dataclass
class Report:
    programs: int = 0
    loads: int = 0  # direct-to-LDS instructions (per wave)
    mfma: int = 0  # MFMA instructions (per wave, summed)
    stores: int = 0
    errors: list = field(default_factory=list)  # out-of-range offsets, non-contiguous LDS writes, ...


class _Tagged(np.ndarray):
    """An index tensor of the kernel (rows, offs_a, ...) carrying the distributed layout it has."""

    def __array_finalize__(self, obj):
        self.layout = getattr(obj, "layout", None)


class _Ptr:
    def __init__(self, name, data, dtype="bf16"):
        self.name, self.data = name, data
        self.dtype = type("PointerType", (), {"element_ty": _GL_NAME[dtype]})()
        self.elem_bytes = 4 if dtype == "fp32" else 2

    def __add__(self, offs):
        return (self, np.asarray(offs))


class _Regs:
    """A register tensor: vals[wave, lane, register] in `layout` over `shape`."""

    def __init__(self, vals, layout, shape):
        self.vals, self.layout, self.shape = vals, layout, tuple(shape)

    def to(self, dtype):
        name = next(n for n, d in _GL_NAME.items() if d == dtype)
        return _Regs(round_to(self.vals, name), self.layout, self.shape)


class _Smem:
    """A view of an LDS allocation: `offs` maps the view's logical indices to offsets in `buf.data`."""

    def __init__(self, buf, offs, layout):
        self.buf, self.offs, self.layout = buf, offs, layout

    def index(self, i):
        return _Smem(self.buf, self.offs[i], self.layout)

    def slice(self, start, length, dim):
        sl = [slice(None)] * self.offs.ndim
        sl[dim] = slice(start, start + length)
        return _Smem(self.buf, self.offs[tuple(sl)], self.layout)

    def permute(self, order):
        return _Smem(self.buf, self.offs.transpose(order), self.layout)

    def load(self, layout):
        m = self.buf.model
        t = m.table(layout, self.offs.shape)
        phys = m.mutate_smem("read", self.offs, self.buf)[tuple(np.moveaxis(t, -1, 0))]
        return _Regs(self.buf.data[phys], layout, self.offs.shape)


class _LdsBuf:
    def __init__(self, model, shape, layout):
        self.model, self.layout = model, layout
        rows, cols = shape[-2:]
        n = rows * cols
        self.data = np.full(int(np.prod(shape)), np.nan, np.float32)
        base = swizzled_offsets(layout, rows, cols)
        self.offs = (np.arange(int(np.prod(shape[:-2]))) * n).reshape(shape[:-2] + (1, 1)) + base


class Model:
    def __init__(self, target, mutate: Mutation | None = None, *, has_bias=False, activation="none", edge=False,
                 mask_k=False):
        self.target = target
        self.mutate = mutate or Mutation()
        self.cfg = L.tile_config(target)
        self.ce = K.constexprs(target, has_bias, activation, edge, mask_k)
        if self.mutate.constexprs:
            self.ce = self.mutate.constexprs(dict(self.ce))
        self.report = Report()
        self.pending = []  # commit groups of LDS writes not yet landed: [[(buf, offsets, values)], ...]
        self.open = []
        self.pid = (0, 0)
        self.written = None
        self._ns = self._namespace()
        self._epilogue = self._epilogue_namespace()

    # -- the maps the primitives use
    def table(self, layout, shape):
        t = layout_table(layout, tuple(shape))
        if self.mutate.table:
            t = self.mutate.table(layout, tuple(shape), t)
        return t

    def mutate_smem(self, side, offs, buf):
        if not self.mutate.smem:
            return offs
        # the mutation sees the whole allocation's [rows, cols] map; a view is a sub-array of it
        full = buf.offs
        m = self.mutate.smem(side, full.copy())
        lut = np.empty(full.size, np.int64)
        lut[full.ravel()] = m.ravel()
        return lut[offs]

    # -- Gluon primitives
    def _arange(self, lo, hi, layout=None):
        t = np.arange(lo, hi, dtype=np.int64).view(_Tagged)
        t.layout = layout.parent if isinstance(layout, _gl.SliceLayout) else layout
        return t

    def _zeros(self, shape, dtype, layout):
        t = self.table(layout, tuple(shape))
        return _Regs(np.zeros(t.shape[:3], np.float32), layout, shape)

    def _alloc(self, dtype, shape, layout):
        b = _LdsBuf(self, tuple(shape), layout)
        return _Smem(b, b.offs, layout)

    def _global(self, ptr, offs, what, mask=None):
        """(offsets, off): a buffer op's element offsets as the hardware takes them: a masked lane's offset becomes
        out of range (Triton's lowering: byte offset 2**31), the byte offset is 32 bits, and one at or past the
        resource's range (cdna_layout.BUFFER_BYTES) reads 0 / writes nothing (`off`). An offset inside the range
        but outside the tensor would read or write a neighbour's memory: an error of the kernel."""
        offs = np.asarray(offs, np.int64)
        byte = (offs * ptr.elem_bytes) & 0xFFFFFFFF
        if mask is not None:
            byte = np.where(mask, byte, 2**31)
        off = byte >= L.BUFFER_BYTES
        bad = ~off & (byte // ptr.elem_bytes >= ptr.data.size)
        if bad.any():
            self.report.errors.append(f"program {self.pid}: {what} {ptr.name}: {int(bad.sum())} offsets outside "
                                      f"0..{ptr.data.size - 1} but inside the buffer's range")
        skip = off | bad
        return np.where(skip, 0, byte // ptr.elem_bytes), skip

    def _vector_mask(self, mask, offs, idx, vec, what):
        """The mask at every (wave, lane, register), checked to be one value per `vec`-element vector (one buffer
        instruction takes one predicate per lane)."""
        if mask is None:
            return None
        m = np.broadcast_to(np.asarray(mask, bool), np.asarray(offs).shape)[idx]
        w, ln, r = m.shape
        v = m.reshape(w, ln, r // vec, vec)
        if (v != v[..., :1]).any():
            self.report.errors.append(f"program {self.pid}: {what}: a mask splits a {vec}-element vector")
        return m

    def _buffer_load_to_shared(self, dest, ptr, offs, mask=None, other=None):
        lay = offs.layout
        t = self.table(lay, offs.shape)  # [W, L, R, 2]
        idx = tuple(np.moveaxis(t, -1, 0))
        vec = int(lay.size_per_thread[-1])
        if other is not None:
            raise ModelError("buffer_load_to_shared with `other`: the kernel relies on 0 for masked lanes")
        m = self._vector_mask(mask, offs, idx, vec, f"load {ptr.name}")
        g, off = self._global(ptr, np.asarray(offs)[idx], "load", m)
        vals = np.where(off, 0.0, ptr.data[g]).astype(np.float32)  # out of range: the hardware writes 0
        phys = self.mutate_smem("write", dest.offs, dest.buf)[idx]
        # one instruction = one vector of `vec` registers in every lane: a contiguous LDS range
        w, ln, r = phys.shape
        inst = phys.reshape(w, ln, r // vec, vec).transpose(0, 2, 1, 3).reshape(w, r // vec, ln * vec)
        lo, hi = inst.min(-1), inst.max(-1)
        if (hi - lo + 1 != ln * vec).any() or (np.sort(inst, -1) - lo[..., None] != np.arange(ln * vec)).any():
            self.report.errors.append(f"program {self.pid}: a direct-to-LDS instruction does not fill one "
                                      "contiguous LDS range")
        self.report.loads += w * (r // vec)
        self.open.append((dest.buf, phys.ravel(), vals.ravel()))

    def _commit_group(self):
        self.pending.append(self.open)
        self.open = []

    def _wait_group(self, n):
        while len(self.pending) > n:
            for buf, phys, vals in self.pending.pop(0):
                buf.data[phys] = vals

    def _mfma(self, a: _Regs, b: _Regs, acc: _Regs):
        """cdna3.mfma: the tensor dot split into MFMA instructions the way the registers are laid out."""
        lay = acc.layout
        _, _, kinst = lay.instr_shape
        kw = kinst // 4  # elements per lane per operand of one 16x16xK instruction
        ta, tb, tc = self.table(a.layout, a.shape), self.table(b.layout, b.shape), self.table(lay, acc.shape)
        out = acc.vals.copy()
        for w in range(out.shape[0]):
            # register chunks, in register order: kw per MFMA operand, 4 per result
            def chunks(vals, t, size, dims):
                n = vals.shape[-1] // size
                v = vals[w].reshape(WAVE, n, size).transpose(1, 0, 2)  # [chunk, lane, j]
                key = [tuple(int(t[w, 0, c * size, d]) // 16 for d in dims) for c in range(n)]
                return v, key
            va, ka = chunks(a.vals, ta, kw, (0,))
            vb, kb = chunks(b.vals, tb, kw, (1,))
            _, kc = chunks(acc.vals, tc, 4, (0, 1))
            by_m, by_n = {}, {}
            for c, (mb,) in enumerate(ka):
                by_m.setdefault(mb, []).append(c)
            for c, (nb,) in enumerate(kb):
                by_n.setdefault(nb, []).append(c)
            lane = np.arange(WAVE)
            for c, (mb, nb) in enumerate(kc):
                ca, cb = by_m.get(mb, []), by_n.get(nb, [])
                if len(ca) != len(cb) or not ca:
                    raise ModelError(f"wave {w}: result block ({mb}, {nb}) has {len(ca)} A and {len(cb)} B chunks")
                src_a, src_b = va[ca], vb[cb]  # [k steps, lane, j]
                if lay.transposed:  # the compiler issues mfma(B, A): D is C's block transposed
                    src_a, src_b = src_b, src_a
                sa = src_a.reshape(len(ca), 4, 16, kw).astype(np.float32)
                sb = src_b.reshape(len(cb), 4, 16, kw).astype(np.float32)
                d = np.zeros((16, 16), np.float32)
                for s in range(len(ca)):  # one instruction per K step, fp32 accumulate
                    d += np.einsum("gpj,gqj->pq", sa[s], sb[s], dtype=np.float32)
                self.report.mfma += len(ca)
                for i in range(4):  # result register i of lane l: D[(l // 16) * 4 + i][l % 16]
                    out[w, :, c * 4 + i] += d[(lane // 16) * 4 + i, lane % 16]
        return _Regs(out, lay, acc.shape)

    def _buffer_store(self, val: _Regs, ptr, offs, mask=None):
        t = self.table(val.layout, np.shape(offs))
        idx = tuple(np.moveaxis(t, -1, 0))
        m = None if mask is None else np.broadcast_to(np.asarray(mask, bool), np.shape(offs))[idx]
        g, skip = self._global(ptr, np.asarray(offs)[idx], "store", m)
        v = val.vals
        if (self.written[g[~skip]]).any():
            self.report.errors.append(f"program {self.pid}: store {ptr.name}: an element written twice")
        self.written[g[~skip]] = True
        ptr.data[g[~skip]] = v[~skip]
        self.report.stores += int((~skip).sum())

    def _where(self, cond, a, b):
        out = np.where(cond, a, b).view(_Tagged)
        out.layout = getattr(cond, "layout", None)
        return out

    def _bias_activation(self, acc: _Regs, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION):
        """kernels/triton/_epilogue.bias_activation, its own source run on the accumulator's logical tile (the
        elementwise math is the same in any layout; the bias's index is the kernel's `offs_n`)."""
        t = self.table(acc.layout, acc.shape)
        idx = tuple(np.moveaxis(t, -1, 0))
        tile = np.full(acc.shape, np.nan, np.float32)
        tile[idx] = acc.vals
        bias_activation = self._epilogue["bias_activation"]  # (named first: a call through a subscript reads as a
        out = bias_activation(tile, bias_ptr, np.asarray(offs_n), N, HAS_BIAS, ACTIVATION)  # launch to the scan)
        return _Regs(np.asarray(out, np.float32)[idx], acc.layout, acc.shape)

    # -- the kernel's own code, executed
    def _namespace(self):
        m = self

        class GL:
            def __getattr__(self, name):
                return getattr(_gl, name)
            constexpr = _gl.constexpr
            static_range = staticmethod(range)
            where = staticmethod(m._where)
            arange = staticmethod(m._arange)
            zeros = staticmethod(m._zeros)
            allocate_shared_memory = staticmethod(m._alloc)

            @staticmethod
            def program_id(axis):
                return m.pid[axis]

        class AsyncCopy:
            buffer_load_to_shared = staticmethod(m._buffer_load_to_shared)
            commit_group = staticmethod(m._commit_group)
            wait_group = staticmethod(m._wait_group)

        class CDNA3:
            mfma = staticmethod(m._mfma)
            buffer_store = staticmethod(m._buffer_store)

        ns = {"gl": GL(), "async_copy": AsyncCopy(), "cdna3": CDNA3(), "barrier": lambda: None,
              "_group_barrier": lambda group, num_warps: None, "bias_activation": m._bias_activation}
        for name in ("_run", "cdna_pingpong_kernel"):
            exec(compile(self._source(name), f"<cdna_pingpong.{name} (model)>", "exec"), ns)
        return ns

    def _epilogue_namespace(self):
        """kernels/triton/_epilogue.py's bias_activation and activation, their own source, with `tl` as NumPy (fp32)."""
        from ..triton import _epilogue as E

        def load(p, mask=None, other=None):
            ptr, offs = p
            g, skip = self._global(ptr, offs, "load", mask)
            return np.where(skip, np.float32(0.0 if other is None else other), ptr.data[g]).astype(np.float32)

        class TL:
            constexpr = _gl.constexpr
            float32 = np.float32
            maximum = staticmethod(np.maximum)
            exp = staticmethod(np.exp)
            abs = staticmethod(np.abs)
            where = staticmethod(np.where)

            @staticmethod
            def load(p, mask=None, other=None):
                return load(p, mask, other)

            @staticmethod
            def static_assert(cond, msg=""):
                if not cond:
                    raise ModelError(msg)

        class F32(np.ndarray):  # `.to(tl.float32)` on a loaded vector
            def to(self, dtype):
                return np.asarray(self, np.float32)

        tl = TL()
        orig_load = TL.load
        TL.load = staticmethod(lambda p, mask=None, other=None: orig_load(p, mask, other).view(F32))
        ns = {"tl": tl}
        for fn in (E._sigmoid, E._erfc_abs, E.activation, E.bias_activation):
            src = textwrap.dedent(inspect.getsource(fn.fn))
            if self.mutate.source:
                src = self.mutate.source(fn.fn.__name__, src)
            tree = ast.parse(src)
            tree.body[0].decorator_list = []
            exec(compile(ast.Module(body=[tree.body[0]], type_ignores=[]), f"<_epilogue.{fn.fn.__name__} (model)>",
                         "exec"), ns)
        return ns

    def _source(self, name):
        src = textwrap.dedent(inspect.getsource(getattr(K, name).fn))
        if self.mutate.source:
            src = self.mutate.source(name, src)
        tree = ast.parse(src)
        fn = tree.body[0]
        fn.decorator_list = []
        return ast.Module(body=[fn], type_ignores=[])

    def run(self, A, B, bias=None, dtype="bf16", out="bf16"):
        A = round_to(np.asarray(A, np.float32), dtype)
        B = round_to(np.asarray(B, np.float32), dtype)
        (M, Kd), (N, _) = A.shape, B.shape
        a, b = _Ptr("A", A.ravel().copy(), dtype), _Ptr("B", B.ravel().copy(), dtype)
        c = _Ptr("C", np.full(M * N, np.nan, np.float32), out)
        bp = _Ptr("bias", round_to(np.asarray(bias, np.float32), dtype).copy(), dtype) if bias is not None else a
        self.written = np.zeros(M * N, bool)
        kern = self._ns["cdna_pingpong_kernel"]
        ce = self.ce
        grid = (math.ceil(M / ce["BM"]), math.ceil(N / ce["BN"]))  # cdna_host.grid's rule
        for pm in range(grid[0]):
            for pn in range(grid[1]):
                self.pid = (pm, pn)
                self.pending, self.open = [], []
                kern(a, b, c, bp, M, N, Kd, **ce)
                self.report.programs += 1
        return c.data.reshape(M, N), self.report


def run(target, A, B, mutate: Mutation | None = None, *, bias=None, activation="none", dtype="bf16", out="bf16"):
    """C = the kernel's output for A (M, K), B (N, K) (and a bias (N,), an activation) on `target` (arch.Target), in
    the variant the host compiles for that shape (cdna_host.variant), and the model's Report."""
    from . import cdna_host as H

    edge, mask_k = H.variant(A.shape[0], B.shape[0], A.shape[1], target)
    return Model(target, mutate, has_bias=bias is not None, activation=activation, edge=edge,
                 mask_k=mask_k).run(A, B, bias, dtype, out)


def reference(A, B, bias=None, activation="none", dtype="bf16", out="bf16"):
    """act(A @ B.T + bias) in float64 on the operands rounded to `dtype`, rounded to `out`."""
    from ...reference import activation_ref

    import torch

    a, b = (round_to(np.asarray(t, np.float32), dtype).astype(np.float64) for t in (A, B))
    r = a @ b.T
    if bias is not None:
        r = r + round_to(np.asarray(bias, np.float32), dtype).astype(np.float64)[None, :]
    r = activation_ref(torch.from_numpy(r), activation).numpy()
    return round_to(r.astype(np.float32), out)


def check(target, A, B, mutate: Mutation | None = None, *, bias=None, activation="none", dtype="bf16", out="bf16"):
    """(ok, detail): the model's C equals `reference` element for element (inputs whose fp32 sums are exact, e.g.
    small integers, make the order of accumulation immaterial; with gelu / gelu_tanh / silu, within 2 units of
    `out`'s last place: the model's fp32 exp is not the GPU's) and the run raised no errors."""
    C, rep = run(target, A, B, mutate, bias=bias, activation=activation, dtype=dtype, out=out)
    ref = reference(A, B, bias, activation, dtype, out)
    if activation in ("none", "relu"):
        bad = ~(C == ref)
    else:
        ulp = {"bf16": 2.0**-7, "fp16": 2.0**-10, "fp32": 2.0**-20}[out]
        bad = ~(np.abs(C - ref) <= 2 * ulp * np.abs(ref) + 1e-6)
    if rep.errors or bad.any():
        return False, f"{int(bad.sum())} of {C.size} elements differ; errors: {rep.errors[:3]}"
    return True, f"{rep.programs} programs, {rep.mfma} mfma, {rep.loads} direct-to-LDS loads"
