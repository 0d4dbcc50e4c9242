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
                                                          writes land at wait_group (NaN until then)
    shared .index / .slice / .permute / .load(DOT_x)      LDS -> the registers of every wave and lane
    cdna3.mfma                                            the ISA's v_mfma_f32_16x16x{32,16}_bf16 on register
                                                          chunks (transposed layouts: operands swapped), fp32
    cdna3.buffer_store(acc.to(bf16))                      every register to its C offset, rounded to bf16
    barriers                                              no-ops: every wave steps in program order; that this
                                                          order is the only one that matters is the race
                                                          checker's result (gemmkit/schedule), not the model's

So the op lists walked (PROLOGUE, BODY, LAST, EPILOGUE) are `constexprs(target)`'s, the offsets are the
kernel's expressions, and the register <-> element maps are what the compiler builds from the kernel's
layouts. What the model adds is hardware: the MFMA's operand and result placement (lane l, element j of A is
A[l % 16][(l // 16) * kw + j]; result register i of lane l is D[(l // 16) * 4 + i][l % 16]), direct-to-LDS
writing a contiguous range per instruction, buffer ops raising on out-of-range offsets (where hardware would
read or write a neighbour's memory).

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
    def __init__(self, name, data):
        self.name, self.data = name, data


class _Regs:
    """A register tensor: vals[wave, lane, register] in `layout` over `shape`."""

    def __init__(self, vals, layout, shape):
        self.vals, self.layout, self.shape = vals, layout, tuple(shape)

    def to(self, dtype):
        return _Regs(to_bf16(self.vals) if dtype == _gl.bfloat16 else self.vals.astype(np.float32),
                     self.layout, self.shape)


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
    def __init__(self, target, mutate: Mutation | None = None):
        self.target = target
        self.mutate = mutate or Mutation()
        self.cfg = L.tile_config(target)
        self.ce = K.constexprs(target)
        if self.mutate.constexprs:
            self.ce = self.mutate.constexprs(dict(self.ce))
        self.report = Report()
        self.pending = []  # commit groups of LDS writes not yet landed: [[(buf, offsets, values)], ...]
        self.open = []
        self.pid = (0, 0)
        self._ns = self._namespace()

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

    def _global(self, ptr, offs, what):
        offs = np.asarray(offs)
        bad = (offs < 0) | (offs >= ptr.data.size)
        if bad.any():
            self.report.errors.append(f"program {self.pid}: {what} {ptr.name}: {int(bad.sum())} offsets outside "
                                      f"0..{ptr.data.size - 1}")
        return np.where(bad, 0, offs), bad

    def _buffer_load_to_shared(self, dest, ptr, offs):
        lay = offs.layout
        t = self.table(lay, offs.shape)  # [W, L, R, 2]
        idx = tuple(np.moveaxis(t, -1, 0))
        g, bad = self._global(ptr, np.asarray(offs)[idx], "load")
        vals = np.where(bad, np.nan, ptr.data[g]).astype(np.float32)
        phys = self.mutate_smem("write", dest.offs, dest.buf)[idx]
        # one instruction = one vector of `vec` registers in every lane: a contiguous LDS range
        vec = int(lay.size_per_thread[-1])
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

    def _buffer_store(self, val: _Regs, ptr, offs):
        t = self.table(val.layout, offs.shape)
        g, bad = self._global(ptr, np.asarray(offs)[tuple(np.moveaxis(t, -1, 0))], "store")
        v = val.vals
        ptr.data[g[~bad]] = v[~bad]
        self.report.stores += int((~bad).sum())

    # -- the kernel's own code, executed
    def _namespace(self):
        m = self

        class GL:
            def __getattr__(self, name):
                return getattr(_gl, name)
            constexpr = _gl.constexpr
            static_range = staticmethod(range)
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
              "_group_barrier": lambda group, num_warps: None}
        for name in ("_run", "cdna_pingpong_kernel"):
            exec(compile(self._source(name), f"<cdna_pingpong.{name} (model)>", "exec"), ns)
        return ns

    def _source(self, name):
        src = textwrap.dedent(inspect.getsource(getattr(K, name).fn))
        if self.mutate.source:
            src = self.mutate.source(name, src)
        tree = ast.parse(src)
        fn = tree.body[0]
        fn.decorator_list = []
        return ast.Module(body=[fn], type_ignores=[])

    def run(self, A, B):
        A = to_bf16(np.asarray(A, np.float32))
        B = to_bf16(np.asarray(B, np.float32))
        (M, Kd), (N, _) = A.shape, B.shape
        a, b = _Ptr("A", A.ravel().copy()), _Ptr("B", B.ravel().copy())
        c = _Ptr("C", np.full(M * N, np.nan, np.float32))
        kern = self._ns["cdna_pingpong_kernel"]
        ce = self.ce
        for pm in range(math.ceil(M / ce["BM"])):
            for pn in range(math.ceil(N / ce["BN"])):
                self.pid = (pm, pn)
                self.pending, self.open = [], []
                kern(a, b, c, M, N, Kd, **ce)
                self.report.programs += 1
        return c.data.reshape(M, N), self.report


def run(target, A, B, mutate: Mutation | None = None):
    """C = the kernel's output for A (M, K), B (N, K) on `target` (arch.Target), and the model's Report."""
    return Model(target, mutate).run(A, B)


def check(target, A, B, mutate: Mutation | None = None):
    """(ok, detail): the model's C equals bf16(A @ B.T) element for element (inputs whose fp32 sums are exact,
    e.g. small integers, make the order of accumulation immaterial) and the run raised no errors."""
    C, rep = run(target, A, B, mutate)
    ref = to_bf16((to_bf16(A).astype(np.float64) @ to_bf16(B).astype(np.float64).T).astype(np.float32))
    bad = ~(C == ref)
    if rep.errors or bad.any():
        return False, f"{int(bad.sum())} of {C.size} elements differ; errors: {rep.errors[:3]}"
    return True, f"{rep.programs} programs, {rep.mfma} mfma, {rep.loads} direct-to-LDS loads"
