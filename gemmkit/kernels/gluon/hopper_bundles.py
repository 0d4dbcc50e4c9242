"""The named bundles that the Hopper (sm_90) Gluon GEMM partitions take (Gluon aggregates): a partition is
called with a few of them, not with two dozen positional values. Used by hopper_parts.py (the load partition,
the split tile's mainloop and stores), hopper_pingpong.py, hopper_coop.py and hopper_pingpong_batched.py::

   Descs     x, w, y            the TMA descriptors (2-D, or 3-D with a unit batch box dim: the batched kernels)
   Ring      a, b, t, full, empty   the S-stage shared-memory ring and its mbarriers; t: a split tile's tail
                                w slot ring (BN = A + B: b holds A rows, t B), or (GATED, the ping-pong's gated
                                tile) the up rows' slot ring (b the gate rows, t the up rows, BN each), None
                                otherwise; ready: the load warp sets the ring up (hopper_parts.ring_init), None:
                                the kernel did; ARRIVALS: empty's count; X_KM: a's slots hold x's box as its
                                storage lies, BK x BM (x transposed in memory: the ping-pong's swap-AB tile on a
                                w passed as W.t()), the consumer reading them permuted. Derived: STAGES, BM, BK, BN
                                (the tile's output columns: b + t, or b's where GATED)
   Epilogue  c, bias, stride_bb one consumer's staging tile, the bias pointer (x's when HAS_BIAS is off) and
                                batch row stride (0: one row), HAS_BIAS, ACTIVATION; part: a tail split's fp32
                                workspace (the ping-pong's; None elsewhere); PIECES: a split tile's staging
                                sub-tiles in c (hopper_parts.store_split; 1: c is one)
   Handoff   turn, c_free       the ping-pong's consumer hand-off mbarriers, C_TILES
   Schedule  M, N, K, B, R      the problem and its work space: B = batch entries (BATCHED), K splits (SPLIT_K),
                                a tail tile's K splits (TAIL: R tail tiles, hopper_parts.work_range) or unused;
                                GROUP_SIZE_M, BATCHED, SPLIT_K, SWAP, SHIFT (last tiles shifted back:
                                hopper_parts.tile_origin; the dense kernels), TAIL; group_m, group_s, last_m,
                                last_s: the grouped order's division magic (the dense kernels; else None)

A bundle is a compile-time grouping only: it flattens into the same IR values as its fields passed one by
one (the kernels' SASS is byte-identical to the positional form, sm_90, Triton 3.6), and a field that is a
Python value (None, a literal 0, a flag) is a constexpr.

Constraints:
  - Field values are checked against the annotations when a bundle is built, so this module must not use
    `from __future__ import annotations` (string annotations would fail the check).
  - Scalars (M, N, K, B, R, stride_bb) may be run-time i32 values or constexprs (a literal, or a value the
    launch specialized); everything else named in upper case is a constexpr.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma

# Gluon's aggregate decorator: Triton 3.6 does not export it (gluon's own float2.py imports the private
# `triton.language.core._aggregate`); look for a public name first so a newer Triton uses that one.
aggregate = getattr(gl, "aggregate", None)
if aggregate is None:
    from triton.language.core import _aggregate as aggregate

_SMEM = gl.shared_memory_descriptor
_SCALAR = gl.tensor | gl.constexpr


@gluon.constexpr_function  # a JIT callable: the bundles' __init__ may reference no plain Python function
def _cx(v):
    """A field value: IR values as they are, a Python value (None, an int, a flag) as a constexpr."""
    return v if isinstance(v, (gl.tensor, _SMEM, tma.tensor_descriptor, gl.constexpr)) else gl.constexpr(v)


@aggregate
class Descs:
    x: tma.tensor_descriptor
    w: tma.tensor_descriptor
    y: tma.tensor_descriptor

    @gluon.constexpr_function
    def __init__(self, x, w, y):
        self.x = x
        self.w = w
        self.y = y


@aggregate
class Ring:
    a: _SMEM
    b: _SMEM
    t: _SMEM | gl.constexpr
    full: _SMEM
    empty: _SMEM
    ready: _SMEM | gl.constexpr
    ARRIVALS: gl.constexpr
    GATED: gl.constexpr
    X_KM: gl.constexpr
    STAGES: gl.constexpr
    BM: gl.constexpr
    BK: gl.constexpr
    BN: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, a, b, t, full, empty, ready=None, ARRIVALS=1, GATED=False, X_KM=False):
        self.a = a
        self.b = b
        self.t = _cx(t)
        self.full = full
        self.empty = empty
        self.ready = _cx(ready)  # (late set-up, hopper_parts.ring_init) the load warp's "ring set up" mbarrier
        self.ARRIVALS = gl.constexpr(ARRIVALS)  # consumer arrivals that free a slot (empty's count)
        self.GATED = gl.constexpr(GATED)  # b / t hold the gate / up rows of one tile of h's columns
        self.X_KM = gl.constexpr(X_KM)  # a's slots BK x BM: x's (K, M) storage, read permuted
        self.STAGES = gl.constexpr(a.shape[0])
        self.BM = gl.constexpr(a.shape[2] if X_KM else a.shape[1])
        self.BK = gl.constexpr(a.shape[1] if X_KM else a.shape[2])
        self.BN = gl.constexpr(b.shape[1] if t is None or GATED else b.shape[1] + t.shape[1])


@aggregate
class Epilogue:
    c: _SMEM
    bias: gl.tensor
    stride_bb: _SCALAR
    HAS_BIAS: gl.constexpr
    ACTIVATION: gl.constexpr
    part: gl.tensor | gl.constexpr
    PIECES: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, c, bias, stride_bb, HAS_BIAS, ACTIVATION, part=None, PIECES=1):
        self.c = c
        self.bias = bias
        self.stride_bb = _cx(stride_bb)
        self.HAS_BIAS = gl.constexpr(HAS_BIAS)
        self.ACTIVATION = gl.constexpr(ACTIVATION)
        self.part = _cx(part)
        self.PIECES = gl.constexpr(PIECES)


@aggregate
class Handoff:
    turn: _SMEM
    c_free: _SMEM
    C_TILES: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, turn, c_free, C_TILES):
        self.turn = turn
        self.c_free = c_free
        self.C_TILES = gl.constexpr(C_TILES)


@aggregate
class Schedule:
    M: _SCALAR
    N: _SCALAR
    K: _SCALAR
    B: _SCALAR
    GROUP_SIZE_M: gl.constexpr
    BATCHED: gl.constexpr
    SPLIT_K: gl.constexpr
    SWAP: gl.constexpr
    SHIFT: gl.constexpr
    R: _SCALAR
    TAIL: gl.constexpr
    X_BOXES: gl.constexpr
    group_m: _SCALAR
    group_s: _SCALAR
    last_m: _SCALAR
    last_s: _SCALAR

    @gluon.constexpr_function
    def __init__(self, M, N, K, B, GROUP_SIZE_M, BATCHED=False, SPLIT_K=False, SWAP=False, SHIFT=False, R=0,
                 TAIL=False, X_BOXES=1, group_m=None, group_s=None, last_m=None, last_s=None):
        self.M = _cx(M)
        self.N = _cx(N)
        self.K = _cx(K)
        self.B = _cx(B)
        self.R = _cx(R)
        self.TAIL = gl.constexpr(TAIL)
        self.GROUP_SIZE_M = gl.constexpr(GROUP_SIZE_M)
        self.BATCHED = gl.constexpr(BATCHED)
        self.SPLIT_K = gl.constexpr(SPLIT_K)
        self.SWAP = gl.constexpr(SWAP)
        self.SHIFT = gl.constexpr(SHIFT)
        self.X_BOXES = gl.constexpr(X_BOXES)
        self.group_m = _cx(group_m)  # the grouped order's division magic (kernels/triton/_schedule.group_magic),
        self.group_s = _cx(group_s)  # None: plain divisions
        self.last_m = _cx(last_m)
        self.last_s = _cx(last_s)
