"""Shared pieces of the property tests (tests/properties/test_properties_<family>.py): strategies, layouts, bounds.

The property tests hunt for wrong answers: hypothesis draws shapes (0, 1, odd, the served config's
BLOCK_SIZE_M/N/K +- 1), dtypes, layouts, bias / activation / out_dtype / out=, and every element of
every result is checked against a float64 reference. This module holds what the families share, and
a few self-tests of the checker (it must reject a single wrong element).

Reproducibility. CI runs with `derandomize=True`: the examples are a fixed function of the test, and
the tensors' values come from torch seeds that hypothesis draws (so a failure prints the seed, and the
minimal example reruns bit for bit). Fresh exploration: `GEMMKIT_PROPERTY_RANDOM=1` turns derandomize
off (hypothesis prints `--hypothesis-seed=...` / a reproduce blob for any failure);
`GEMMKIT_PROPERTY_SCALE=4` runs 4x the examples.

Invalid input (each family's `test_invalid_inputs_raise`): a valid call with one thing made wrong must raise
ValueError / TypeError. Each mutation is its own pytest case with INVALID_EXAMPLES shapes drawn for it: a
mutation drawn by hypothesis among the shapes could go unrun under derandomize (one did, and its expectation
went stale unnoticed: a gated "backend": "gluon" config became valid).

Layouts (`place`): every operand is copied into a tensor with the drawn strides, and the memory around
it (padding, the skipped columns of a strided view, the elements before an offset view) is filled with
poison (NaN for floats, 0xFF bytes / -128 otherwise). After the call `Placed.check_untouched` proves
nothing outside an output view was written and that inputs were not written at all; a kernel that reads
outside its view picks up NaN (or a wrong value) and fails the element bound.

Functional calls (no out=): `poison_allocations()` turns on torch's deterministic mode, which fills every
torch.empty with NaN (floats) or the maximum integer, so an output element (or a split-K workspace
element) that a kernel never writes is NaN, not whatever the allocator had.

Element bound (`check_elements`): the kernels compute an fp32 value v (accumulate, scale, bias,
activation) and round it once to out_dtype. With S the float64 sum of magnitudes of what was added
(e.g. |x| @ |w|.T + |bias|), fp32 summation of n terms in any order is within n * u * S of the exact
sum (u = 2**-24; 2**-22 on GPUs, allowing the tensor cores' truncating accumulation), each further fp32
op (scale, bias, activation) adds a few u * S, and an activation with |act'| <= L_ACT carries the error
through. Then |out - ref| <= U_OUT * (|ref| + e) + e + SUB_OUT, with U_OUT the largest relative rounding
error of out_dtype (2**-8 bf16, 2**-11 fp16, 2**-24 fp32) and SUB_OUT the size a result may flush to zero below
(tests/_util.py UNDERFLOW: half fp16's smallest subnormal; fp32's smallest normal for bf16 and fp32).
On top, the norm bound of tests/_util.py (`within_bound`, the project's convention) must hold too.
"""
from __future__ import annotations

import contextlib
import math
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _util import TOL, UNDERFLOW


RANDOM = os.environ.get("GEMMKIT_PROPERTY_RANDOM", "0") not in ("", "0")
SCALE = float(os.environ.get("GEMMKIT_PROPERTY_SCALE", "1"))
FP8 = torch.float8_e4m3fn
F16 = (torch.bfloat16, torch.float16)
U32 = 2.0**-24
U_OUT = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}
SUB_OUT = UNDERFLOW
L_ACT = 1.25  # max |act'| of relu (1), silu (1.0998), gelu (1.1289), gelu_tanh (~1.13)
ACT_ULPS = 24  # fp32 evaluation error of the activations (erfc fit < 1.2e-7, exp, one division) in u, generous
SEED = st.integers(0, 2**31 - 1)
INVALID_EXAMPLES = 4  # shapes per mutation of a test_invalid_inputs_raise: each mutation its own case, all run in CI
ACTIVATIONS = [None, "relu", "gelu", "gelu_tanh", "silu"]
OUT_DTYPES = [None, torch.bfloat16, torch.float16, torch.float32]


def prop_settings(max_examples: int, **kw):
    """hypothesis settings of a property: derandomized in CI (see the module docstring), no deadline
    (the interpreter is slow and uneven), health checks about slowness off."""
    return settings(max_examples=max(1, int(max_examples * SCALE)), deadline=None, derandomize=not RANDOM,
                    database=None if not RANDOM else settings.default.database, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
                    **kw)


def device_or_skip(gpu: bool) -> str:
    if gpu:
        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA GPU")
        return "cuda"
    return "cpu"


# ----------------------------------------------------------------------------- inputs

class Inputs:
    """Fresh random tensors from one drawn seed (reproducible: the seed is part of the example)."""

    def __init__(self, seed: int, device="cpu"):
        self.g = torch.Generator().manual_seed(seed)
        self.device = device

    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        t = torch.randn(*shape, generator=self.g, dtype=torch.float32) * scale
        return t.to(device=self.device, dtype=dtype)

    def randint(self, lo, hi, *shape, dtype=torch.int64):
        return torch.randint(lo, hi, shape, generator=self.g, dtype=dtype).to(self.device)

    def rand(self, *shape):
        return torch.rand(*shape, generator=self.g).to(self.device)

    def q8(self, *shape, dtype):
        """Random 8-bit operand over the format (int8: every value; fp8: normals and subnormals)."""
        if dtype == torch.int8:
            return self.randint(-128, 128, *shape, dtype=torch.int8)
        return self.randn(*shape, scale=8.0).to(dtype)

    def scales(self, *shape):
        """Positive fp32 scales that keep 8-bit products in range (as tests/_util.scales)."""
        return (self.randn(*shape).abs() + 0.25) / 64

    def choice(self, n):
        return int(torch.randint(0, n, (1,), generator=self.g))


# ----------------------------------------------------------------------------- layouts

LAYOUTS_2D = ["contiguous", "transposed", "sliced", "strided", "expanded_rows", "expanded_cols", "offset",
              "misaligned"]
OUT_LAYOUTS_2D = ["contiguous", "transposed", "sliced", "strided", "offset", "misaligned"]
LAYOUTS_3D = ["contiguous", "transposed", "sliced", "strided", "offset", "misaligned", "interleaved",
              "expanded_batch", "expanded_rows"]
OUT_LAYOUTS_3D = ["contiguous", "transposed", "sliced", "strided", "offset", "misaligned", "interleaved"]


def poison_value(dtype):
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.uint8:
        return 255
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).min


def _bits(t):
    """The raw bytes of a tensor (NaN-safe equality)."""
    return t.detach().contiguous().view(torch.uint8) if t.element_size() == 1 else \
        t.detach().contiguous().view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


class Placed:
    """A tensor `view` with a drawn layout inside a poisoned `buffer` (1-D, the whole allocation)."""

    def __init__(self, view, buffer):
        self.view, self.buffer = view, buffer
        self.before = _bits(buffer).clone()

    def _inside(self):
        mark = torch.zeros(self.buffer.numel(), dtype=torch.bool, device=self.buffer.device)
        if self.view.numel():
            mark.as_strided(self.view.shape, self.view.stride(),
                            self.view.storage_offset() - self.buffer.storage_offset()).fill_(True)
        return mark

    def check_untouched(self, name, output=False):
        """Inputs: not one byte changed. Outputs: nothing outside the view changed."""
        now = _bits(self.buffer)
        changed = now != self.before
        if output:
            changed &= ~self._inside()
        n = int(changed.sum())
        assert n == 0, (f"{name}: {n} element(s) of its allocation changed " +
                        ("outside the output view (an out-of-bounds write)" if output else
                         "(an input was written)") + f": first at flat index {int(changed.nonzero()[0])}")


def place(t, layout, poison=None):
    """A Placed holding t's values with the drawn `layout` (2-D or 3-D). Expanded layouts repeat the
    first row / column / batch entry of t (stride 0), so the values change: compute references from
    the returned view, never from t."""
    dev, dt = t.device, t.dtype
    pv = poison_value(dt) if poison is None else poison

    def buf(n):
        return torch.full((max(n, 1),), pv, dtype=dt, device=dev) if dt != torch.float8_e4m3fn else \
            torch.full((max(n, 1),), float("nan"), dtype=torch.float32, device=dev).to(dt)

    shape = tuple(t.shape)
    if t.dim() == 2:
        R, Cn = shape
        if layout == "contiguous":
            b = buf(R * Cn)
            v = b[:R * Cn].view(R, Cn)
        elif layout == "transposed":
            b = buf(R * Cn)
            v = b[:R * Cn].view(Cn, R).t()
        elif layout == "sliced":  # rows and columns of a larger poisoned matrix
            b = buf((R + 2) * (Cn + 3))
            v = b[:(R + 2) * (Cn + 3)].view(R + 2, Cn + 3)[1:R + 1, 1:Cn + 1]
        elif layout == "strided":  # no unit stride
            b = buf(R * 2 * Cn)
            v = b[:2 * R * Cn].view(R, 2 * Cn)[:, ::2]
        elif layout == "offset":  # a view that starts 16 bytes into its storage
            off = max(1, 16 // t.element_size())
            b = buf(R * Cn + off)
            v = b[off:off + R * Cn].view(R, Cn)
        elif layout == "misaligned":  # base not 16-byte aligned, odd row stride
            b = buf(R * (Cn + 1) + 1)
            v = b[1:1 + R * (Cn + 1)].view(R, Cn + 1)[:, :Cn]
        elif layout == "expanded_rows":  # stride 0 on dim 0
            b = buf(Cn)
            v = b[:Cn].view(1, Cn).expand(R, Cn)
            t = t[:1].expand(R, Cn) if R else t
        elif layout == "expanded_cols":  # stride 0 on dim 1
            b = buf(R)
            v = b[:R].view(R, 1).expand(R, Cn)
            t = t[:, :1].expand(R, Cn) if Cn else t
        else:
            raise AssertionError(layout)
    elif t.dim() == 3:
        B, R, Cn = shape
        if layout == "contiguous":
            b = buf(B * R * Cn)
            v = b[:B * R * Cn].view(B, R, Cn)
        elif layout == "transposed":
            b = buf(B * R * Cn)
            v = b[:B * R * Cn].view(B, Cn, R).transpose(1, 2)
        elif layout == "sliced":
            b = buf((B + 1) * (R + 2) * (Cn + 3))
            v = b[:(B + 1) * (R + 2) * (Cn + 3)].view(B + 1, R + 2, Cn + 3)[1:, 1:R + 1, 1:Cn + 1]
        elif layout == "strided":
            b = buf(B * R * 2 * Cn)
            v = b[:B * R * 2 * Cn].view(B, R, 2 * Cn)[:, :, ::2]
        elif layout == "offset":
            off = max(1, 16 // t.element_size())
            b = buf(B * R * Cn + off)
            v = b[off:off + B * R * Cn].view(B, R, Cn)
        elif layout == "misaligned":
            b = buf(B * R * (Cn + 1) + 1)
            v = b[1:1 + B * R * (Cn + 1)].view(B, R, Cn + 1)[:, :, :Cn]
        elif layout == "interleaved":  # batch is not the outermost dim in memory
            b = buf(B * R * Cn)
            v = b[:B * R * Cn].view(R, B, Cn).transpose(0, 1)
        elif layout == "expanded_batch":  # one entry shared by the whole batch (stride 0 on B)
            b = buf(R * Cn)
            v = b[:R * Cn].view(1, R, Cn).expand(B, R, Cn)
            t = t[:1].expand(B, R, Cn) if B else t
        elif layout == "expanded_rows":
            b = buf(B * Cn)
            v = b[:B * Cn].view(B, 1, Cn).expand(B, R, Cn)
            t = t[:, :1].expand(B, R, Cn) if R else t
        else:
            raise AssertionError(layout)
    else:
        raise AssertionError(t.dim())
    if v.numel():
        if 0 in v.stride():
            _copy_expanded(v, t)
        else:
            v.copy_(t)
    return Placed(v, b)


def _copy_expanded(v, t):
    """Write t (constant along v's stride-0 dims) into the expanded view v."""
    idx = tuple(slice(0, 1) if s == 0 else slice(None) for s in v.stride())
    v[idx].copy_(t[idx])


def poisoned_out(shape, dtype, layout, device):
    """An output tensor (Placed) of `layout`, every element NaN."""
    return place(torch.full(shape, float("nan"), dtype=dtype, device=device), layout)


@contextlib.contextmanager
def poison_allocations():
    """torch.empty fills with NaN / max int while this is active (torch's deterministic mode), so an
    element no kernel writes shows up; warn_only: no torch op is refused."""
    old = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    old_fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(old[0], warn_only=old[1])
        torch.utils.deterministic.fill_uninitialized_memory = old_fill


@contextlib.contextmanager
def interpret_arch(arch: str | None, cus: int | None = None):
    """GEMMKIT_INTERPRET_ARCH / GEMMKIT_NUM_CUS for CPU calls (which tables and schedule the interpreter
    runs), restored afterwards."""
    keys = {"GEMMKIT_INTERPRET_ARCH": arch, "GEMMKIT_NUM_CUS": None if cus is None else str(cus)}
    old = {k: os.environ.get(k) for k in keys}
    try:
        for k, v in keys.items():
            if v is not None:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ----------------------------------------------------------------------------- shapes and configs

def shipped_configs(op: str, arch: str = "sm_90"):
    """Every distinct config of the shipped tables of `op` on `arch` (validated, defaults filled)."""
    from gemmkit import configs

    seen, out = set(), []
    for p in configs.shipped_tables(op):
        if p.parent.name != arch:
            continue
        t = configs.load_table(str(p))
        for _, cfg in configs.bucket_configs(t):
            key = tuple(sorted(cfg.items()))
            if key not in seen:
                seen.add(key)
                out.append(dict(cfg))
    return out


def served_tile(op, arch, M, N, K, config=None):
    """(BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K) of the config that serves the shape (config= if given)."""
    import os

    from gemmkit import arch as _arch
    from gemmkit import configs

    target = _arch.ARCHS[arch]
    if os.environ.get("GEMMKIT_NUM_CUS"):  # the interpreter's target (ops/_common.target_for)
        target = target.with_cus(int(os.environ["GEMMKIT_NUM_CUS"]))
    cfg = config if config is not None else configs.serve(op, target, max(M, 1), max(N, 1), max(K, 1))[0]
    return cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"]


DIM_KINDS = ["one", "small", "odd", "edge", "edge", "edge"]  # and "zero", one dim in 20


@st.composite
def gemm_dims(draw, op, arch="sm_90", config=None, max_mn=260, max_k=320, zero_ok=True, k_quantum=1,
              k_min=None, tiles=None, large=False):
    """(M, N, K) where each dim is 0, 1, small, odd, or the served config's tile +- 1 (BLOCK_SIZE_M for M,
    BLOCK_SIZE_N for N, BLOCK_SIZE_K or 2 * BLOCK_SIZE_K for K). The served config is looked up for the
    shape drawn so far and the edge dims are set from it, twice (an edge can move M into another bucket;
    the second lookup follows it). k_quantum: K is a multiple of it (MXFP4: 32; then the edge is +- one
    quantum). `tiles`: a callable (M, N, K) -> tile sizes, for ops whose tile axes are not (M, N, K).
    large: also draw dims in [limit / 2, limit] (the GPU versions)."""
    pool = DIM_KINDS + (["large", "large", "large"] if large else [])
    kinds = [draw(st.sampled_from(pool)) for _ in range(3)]
    kinds = ["zero" if zero_ok and draw(st.integers(0, 19)) == 0 else k for k in kinds]
    deltas = [draw(st.sampled_from([-1, 0, 1])) for _ in range(3)]
    kmul = draw(st.sampled_from([1, 2]))
    lims = (max_mn, max_mn, max_k)
    q = (1, 1, k_quantum)
    dims = []
    for i, kind in enumerate(kinds):
        if kind == "zero":
            v = 0
        elif kind == "one":
            v = q[i]
        elif kind == "small":
            v = draw(st.integers(1, max(1, min(lims[i], 64) // q[i]))) * q[i]
        elif kind == "large":
            v = max(1, draw(st.integers(lims[i] // (2 * q[i]), lims[i] // q[i]))) * q[i]
        elif kind == "odd":
            v = (2 * draw(st.integers(0, max(0, (lims[i] // q[i] - 1) // 2))) + 1) * q[i]
        else:
            v = draw(st.integers(1, max(1, lims[i] // q[i]))) * q[i]  # placeholder until the tile is known
        dims.append(v)
    if k_min is not None and dims[2] < k_min:
        dims[2] = k_min
    for _ in range(2):
        tile = (tiles or (lambda M, N, K: served_tile(op, arch, M, N, K, config)))(*dims)
        for i, kind in enumerate(kinds):
            if kind == "edge":
                base = tile[i] * (kmul if i == 2 else 1)
                v = min(base + deltas[i] * q[i], (lims[i] // q[i]) * q[i])  # a tile above the limit: the limit
                dims[i] = max(q[i], v)
    return tuple(dims)


def config_strategy(op, arch="sm_90", small=None, extra=None):
    """None (the table), a shipped config of `op`, or one of the `small` configs (dicts), drawn."""
    pool = shipped_configs(op, arch)
    opts = [st.none(), st.sampled_from(pool)] if pool else [st.none()]
    if small:
        opts.append(st.sampled_from(small))
    s = st.one_of(*opts)
    if extra is not None:
        s = s.flatmap(extra)
    return s


# ----------------------------------------------------------------------------- bounds

def acc_unit(device, in_dtype=None):
    """Per-addition relative error of the accumulator: fp32 (2**-24) in the interpreter; 2**-22 on a GPU
    (tensor cores may truncate instead of rounding; a factor 2 more as margin)."""
    return U32 if str(device).startswith("cpu") else 2.0**-22


def fp8_block_slack(device, in_dtype):
    """Extra accumulation error, in units of S, of fp8 tensor-core sums on sm_90 within one promoted K block
    (<= 128): the MMA keeps ~13 fraction bits (aligned to the largest term, truncated: 2**-13 of the block's
    magnitude sum per wgmma step of k = 32, four steps per block: 2**-11). 0 in the interpreter (fp32)."""
    if str(device).startswith("cpu") or in_dtype not in (torch.float8_e4m3fn, torch.float8_e4m3fnuz):
        return 0.0
    return 2.0**-11


def norm_tol(out_dtype, K, device, in_dtype=None):
    """The norm bound of within_bound: tests/_util.TOL in the interpreter; on a GPU with fp32 out, plus the
    fp32 summation-order noise (~ sqrt(K) * 2**-24, x4) and, for fp8, the promoted block's 2**-12."""
    tol = TOL[out_dtype]
    if str(device).startswith("cpu") or out_dtype != torch.float32:
        return tol
    if in_dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz):
        return 2.0**-12
    return tol + 4 * U32 * math.sqrt(max(K, 1))


def check_elements(out, ref, err, out_dtype, name="out", norm=None):
    """Every element: |out - ref| <= U_OUT (|ref| + err) + err + SUB_OUT (NaN / Inf never pass), and the
    norm bound (`norm`: the tolerance; None = tests/_util.TOL). out: any device; ref, err: float64 tensors
    of out's shape on any device."""
    if out.numel() == 0:
        return
    o = out.detach().to(torch.float64)
    r = ref.detach().to(o.device, torch.float64)
    e = err.detach().to(o.device, torch.float64)
    bound = U_OUT[out_dtype] * (r.abs() + e) + e + SUB_OUT[out_dtype]
    diff = (o - r).abs()
    bad = ~(diff <= bound)
    # Beyond out_dtype's range RNE gives +-inf (fp16 out of large sums): allowed where the fp32 result can reach
    # the overflow threshold, the largest finite value plus half its ulp (relative U_OUT / 2).
    top = torch.finfo(out_dtype).max * (1 + U_OUT[out_dtype] / 2)
    overflow = (r.abs() + e >= top) & torch.isinf(o) & (torch.sign(o) == torch.sign(r))
    bad &= ~overflow
    if bool(bad.any()):
        idx = bad.nonzero()[:5].tolist()
        rows = "\n".join(f"  {name}{tuple(i)}: got {o[tuple(i)].item():.9g}, want {r[tuple(i)].item():.9g}, "
                         f"|diff| {diff[tuple(i)].item():.3g} > bound {bound[tuple(i)].item():.3g}" for i in idx)
        pytest.fail(f"{name}: {int(bad.sum())} of {bad.numel()} elements outside the element bound:\n{rows}")
    tol = TOL[out_dtype] if norm is None else norm
    keep = ~overflow
    o_c, r_c, e_c = o[keep].cpu(), r[keep].cpu(), e[keep].cpu()
    diff_n, ref_n, err_n = (o_c - r_c).norm().item(), r_c.norm().item(), e_c.norm().item()
    # The output's rounding (tol * ||ref||) plus the summation's own bound (||err||: under cancellation
    # ||ref|| is small against the magnitudes summed, so a bound relative to ||ref|| alone is wrong).
    assert diff_n <= tol * ref_n + err_n + UNDERFLOW[out_dtype] * r_c.numel() ** 0.5, \
        f"{name}: ||out - ref|| = {diff_n:.3g} > {tol:.3g} * ||ref|| ({ref_n:.3g}) + ||err|| ({err_n:.3g})"


def f64(t):
    return t.detach().to(torch.float64)


def linear_err(S, n_acc, device, act=None, in_dtype=None, extra_ops=4):
    """float64 bound e on |v - exact| of an fp32 GEMM value v from S (sum of magnitudes), n_acc (additions
    in the longest chain), `extra_ops` further fp32 roundings (scales, bias), and the activation."""
    e = (n_acc * acc_unit(device, in_dtype) + fp8_block_slack(device, in_dtype) + extra_ops * U32) * S
    if act not in (None, "none"):
        e = L_ACT * e + ACT_ULPS * U32 * L_ACT * S
    return e


def raises_invalid(fn):
    """fn() raises ValueError or TypeError (never returns)."""
    try:
        fn()
    except (ValueError, TypeError):
        return
    pytest.fail("returned instead of raising ValueError / TypeError")


# ----------------------------------------------------------------------------- self-tests of the checker

@prop_settings(20)
@given(seed=SEED, out_dtype=st.sampled_from([torch.bfloat16, torch.float16, torch.float32]),
       where=st.integers(0, 10**6))
def test_element_bound_rejects_one_wrong_element(seed, out_dtype, where):
    """A result whose norm error is tiny but one element is off by 1% (or NaN) fails check_elements."""
    inp = Inputs(seed)
    ref = inp.randn(64, 64, dtype=torch.float64)
    out = ref.to(out_dtype)
    err = torch.zeros_like(ref)
    check_elements(out, ref, err, out_dtype)  # the plain rounding passes
    i = where % out.numel()
    v = out.view(-1)[i].item()
    for bad_value in (float("nan"), v + 0.01 * abs(v) + 1e-3):  # (v * 1.01 + 1e-3 was v itself at v ~ -0.1)
        bad = out.clone()
        bad.view(-1)[i] = bad_value
        with pytest.raises(pytest.fail.Exception):
            check_elements(bad, ref, err, out_dtype)


@prop_settings(20)
@given(seed=SEED, layout=st.sampled_from(LAYOUTS_2D + ["interleaved3", "expanded_batch3"]),
       shape=st.tuples(st.integers(0, 5), st.integers(0, 6)), dtype=st.sampled_from([torch.bfloat16, FP8, torch.uint8]))
def test_place_keeps_values_and_poisons_around(seed, layout, shape, dtype):
    inp = Inputs(seed)
    t = inp.randn(*shape).to(dtype) if dtype != torch.uint8 else inp.randint(0, 255, *shape, dtype=torch.uint8)
    if layout.endswith("3"):
        t = t.reshape(1, *shape).expand(2, *shape).contiguous()
        layout = layout[:-1]
    p = place(t, layout)
    want = t
    if layout == "expanded_rows":
        want = t[:1].expand_as(t) if t.dim() == 2 else t[:, :1].expand_as(t)
    elif layout == "expanded_cols":
        want = t[:, :1].expand_as(t)
    elif layout == "expanded_batch":
        want = t[:1].expand_as(t)
    if t.numel():
        assert torch.equal(_bits(p.view), _bits(want.contiguous()))
    p.check_untouched("t")
