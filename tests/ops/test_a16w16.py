"""gemm_a16w16 in the Triton interpreter: the kernels themselves, against float64."""
import itertools

import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a16w16_ref

from _util import gemm_launches, poisoned, randn, within_bound

pytestmark = pytest.mark.interpreter

DTYPES = [torch.bfloat16, torch.float16]
ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]
SHAPES = list(itertools.product([1, 17, 64, 129], [1, 31, 128], [1, 40, 256]))


def _check(y, x, w, bias, act, out_dtype):
    ref = gemm_a16w16_ref(x, w, bias, act)
    assert y.shape == ref.shape and y.dtype == out_dtype
    ok, msg = within_bound(y, ref, out_dtype)
    assert ok, msg


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, dtype, launches):
    """Every shape x dtype x (no bias, bias) x activation, into a NaN-poisoned out."""
    x, w = randn(M, K, dtype=dtype), randn(N, K, dtype=dtype)
    for bias, act in itertools.product((None, randn(N, dtype=dtype)), ACTS):
        out = poisoned((M, N), dtype)
        before = gemm_launches(launches)
        y = gemmkit.gemm_a16w16(x, w, bias, activation=act, out=out)
        assert y is out
        assert gemm_launches(launches) == before + 1, "the Triton kernel did not run"
        _check(y, x, w, bias, act, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["bf16", "fp16"])
@pytest.mark.parametrize("act", ACTS, ids=str)
@pytest.mark.parametrize("with_bias", [False, True], ids=["nobias", "bias"])
def test_activations(act, dtype, with_bias):
    M, N, K = 33, 48, 72
    x, w = randn(M, K, dtype=dtype) * 2, randn(N, K, dtype=dtype) / 4
    bias = randn(N, dtype=dtype) if with_bias else None
    _check(gemmkit.gemm_a16w16(x, w, bias, activation=act, out=poisoned((M, N), dtype)), x, w, bias, act, dtype)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_out_dtype(out_dtype):
    x, w, b = randn(20, 64, dtype=torch.bfloat16), randn(40, 64, dtype=torch.bfloat16), randn(40, dtype=torch.bfloat16)
    y = gemmkit.gemm_a16w16(x, w, b, activation="silu", out_dtype=out_dtype)
    _check(y, x, w, b, "silu", out_dtype)


@pytest.mark.parametrize("layout", ["x_col_major", "x_k_strided", "w_transposed", "x_3d", "x_3d_permuted", "out_strided"])
def test_strided_inputs(layout, launches):
    dtype = torch.bfloat16
    M, N, K = 37, 45, 72
    x, w, bias = randn(M, K, dtype=dtype), randn(N, K, dtype=dtype), randn(N, dtype=dtype)
    out = None
    if layout == "x_col_major":
        x = randn(K, M, dtype=dtype).t()  # stride (1, M): read in place
    elif layout == "x_k_strided":
        x = randn(M, 2 * K, dtype=dtype)[:, ::2]  # no unit stride: copied
    elif layout == "w_transposed":
        w = randn(K, N, dtype=dtype).t()  # (N, K) view of a (K, N) weight
    elif layout == "x_3d":
        x = randn(3, 5, K, dtype=dtype)
    elif layout == "x_3d_permuted":
        x = randn(5, 3, K, dtype=dtype).transpose(0, 1)
    elif layout == "out_strided":
        big = poisoned((M, 2 * N), dtype)
        out = big[:, N:]
    assert layout in ("x_3d",) or not (x.is_contiguous() and w.is_contiguous()) or out is not None
    before = launches["gemm_kernel"]
    y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=out)
    assert launches["gemm_kernel"] == before + 1
    _check(y, x, w, bias, "gelu", dtype)
    if layout == "out_strided":
        assert torch.isnan(big[:, :N].float()).all(), "wrote outside the out view"


def test_tma_path(launches):
    """The Hopper TMA kernel (host tensor descriptors) runs in the interpreter too."""
    dtype = torch.bfloat16
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2,
           "num_warps": 4, "num_stages": 2, "tma": True}
    for M, N, K, persistent in [(17, 40, 72, False), (50, 64, 200, True), (1, 8, 8, False)]:
        x, w, bias = randn(M, K, dtype=dtype), randn(N, K, dtype=dtype), randn(N, dtype=dtype)
        before = launches["gemm_tma_kernel"]
        y = gemmkit.gemm_a16w16(x, w, bias, activation="relu", out=poisoned((M, N), dtype),
                                config={**cfg, "persistent": persistent})
        assert launches["gemm_tma_kernel"] == before + 1
        _check(y, x, w, bias, "relu", dtype)


@pytest.mark.parametrize("layout", ["x_t", "w_t", "both_t"])
def test_tma_reads_transposed_operands_where_they_lie(layout, launches):
    """x / w transposed in memory (unit stride along M / N: W.t() of a (K, N) weight) whose storage meets TMA's rules:
    the TMA kernel reads it where it lies (X_KM / W_KN: boxes of the (K, M) / (K, N) storage), no copy launched,
    split-K and the persistent loop too; every element against float64. Storage TMA cannot take (rows of 86 bytes):
    x copied whole to rows along K (it holds no more than w: ops/dispatch._x_transposed_copy), w left to the pointer
    kernel."""
    dtype = torch.bfloat16
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
           "num_stages": 2, "tma": True}
    for M, N, K, split, persistent in [(48, 40, 72, 1, False), (24, 64, 200, 3, True), (8, 8, 8, 1, False)]:
        x = randn(K, M, dtype=dtype).t() if layout != "w_t" else randn(M, K, dtype=dtype)
        w = randn(K, N, dtype=dtype).t() if layout != "x_t" else randn(N, K, dtype=dtype)
        bias = randn(N, dtype=dtype)
        before = dict(launches)
        y = gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=poisoned((M, N), dtype),
                                config={**cfg, "NUM_KSPLIT": split, "persistent": persistent})
        ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
        assert ran == ({"gemm_tma_kernel": 1, "splitk_reduce_kernel": 1} if split > 1 else {"gemm_tma_kernel": 1})
        _check(y, x, w, bias, "silu", dtype)
    M = N = 40
    x = randn(K, M + 3, dtype=dtype)[:, :M].t() if layout != "w_t" else randn(M, K, dtype=dtype)
    w = randn(K, N + 3, dtype=dtype)[:, :N].t() if layout != "x_t" else randn(N, K, dtype=dtype)
    before = dict(launches)
    y = gemmkit.gemm_a16w16(x, w, config={**cfg, "persistent": False})
    ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert ran == ({"pad_rows_kernel": 1, "gemm_tma_kernel": 1} if layout == "x_t" else {"gemm_kernel": 1})
    _check(y, x, w, None, None, dtype)


def test_tma_falls_back_when_unaligned(launches):
    """K = 41 breaks TMA's 16-byte row rule: at M = 40 x and w are copied to rows of 48 (ops/dispatch.py,
    kernels/triton/pad.py) and the TMA kernel runs on the copies; an output whose rows break the rule (no copy helps
    there) takes the pointer kernel. At M = 9 (<= gemm_rows.MAX_M, 16) w is read where it lies (gemm_rows_kernel), into
    either output. All correct."""
    dtype = torch.float16
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1,
           "num_warps": 4, "num_stages": 2, "tma": True}
    x, w = randn(40, 41, dtype=dtype), randn(24, 41, dtype=dtype)
    before = dict(launches)
    y = gemmkit.gemm_a16w16(x, w, config=cfg)
    assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0) + 2
    assert launches["gemm_tma_kernel"] == before.get("gemm_tma_kernel", 0) + 1
    assert launches["gemm_kernel"] == before.get("gemm_kernel", 0)
    _check(y, x, w, None, None, dtype)
    out = poisoned((40, 25), dtype)[:, :24]  # rows of 50 bytes
    before = dict(launches)
    y = gemmkit.gemm_a16w16(x, w, config=cfg, out=out)
    assert launches["gemm_kernel"] == before.get("gemm_kernel", 0) + 1
    assert launches["gemm_tma_kernel"] == before.get("gemm_tma_kernel", 0)
    assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0)
    _check(y, x, w, None, None, dtype)
    for out in (None, poisoned((9, 25), dtype)[:, :24]):
        before = dict(launches)
        y = gemmkit.gemm_a16w16(x[:9], w, config=cfg, out=out)
        assert launches["gemm_rows_kernel"] == before.get("gemm_rows_kernel", 0) + 1
        assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0)
        _check(y, x[:9], w, None, None, dtype)


def test_x_rows_off_copies_x_alone(launches):
    """K % 8 == 0 but x sliced from a wider tensor (rows off 16 bytes), w as the model holds it: x alone is copied
    (`Choice.pad_k_w` False: a copy of w would be a pass over the weight every call), the TMA kernel runs on x's copy
    and w as it is, and the result is right; at K % 8 != 0 both are copied (the kernels take x and w of one K)."""
    dtype = torch.bfloat16
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1,
           "num_warps": 4, "num_stages": 2, "tma": True}
    for K, copies in ((64, 1), (41, 2)):
        x, w, bias = randn(37, K + 3, dtype=dtype)[:, :K], randn(24, K, dtype=dtype), randn(24, dtype=dtype)
        before = dict(launches)
        y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((37, 24), dtype), config=cfg)
        ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
        assert ran == {"pad_rows_kernel": copies, "gemm_tma_kernel": 1}, (K, ran)
        _check(y, x, w, bias, "gelu", dtype)


def test_gluon_backend_config_runs_triton_in_the_interpreter(launches):
    """A "backend": "gluon" config (sm_90 tables) runs the Triton tier with its tile sizes where
    Gluon cannot run; the interpreter is such a place (the Gluon runs are GPU tests)."""
    dtype = torch.bfloat16
    cfg = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
           "num_stages": 3, "backend": "gluon"}
    x, w, bias = randn(70, 96, dtype=dtype), randn(80, 96, dtype=dtype), randn(80, dtype=dtype)
    before = dict(launches)
    y = gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=poisoned((70, 80), dtype), config=cfg)
    assert launches["gemm_kernel"] == before.get("gemm_kernel", 0) + 1
    assert launches["hopper_pingpong_kernel"] == before.get("hopper_pingpong_kernel", 0)
    _check(y, x, w, bias, "silu", dtype)


@pytest.mark.parametrize("arch", ["sm_90", "gfx942", "gfx950"])
def test_persistent_small_grid(arch, monkeypatch):
    """Persistent launches with fewer programs than tiles (and the 8-XCD remap on gfx*)."""
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch)
    monkeypatch.setenv("GEMMKIT_NUM_CUS", "3")
    dtype = torch.bfloat16
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 3,
           "num_warps": 4, "num_stages": 2, "persistent": True}
    M, N, K = 70, 53, 64  # 5 x 4 = 20 tiles over 3 programs
    x, w, bias = randn(M, K, dtype=dtype), randn(N, K, dtype=dtype), randn(N, dtype=dtype)
    y = gemmkit.gemm_a16w16(x, w, bias, out=poisoned((M, N), dtype), config=cfg)
    _check(y, x, w, bias, None, dtype)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_amd_tables_in_interpreter(arch, monkeypatch):
    """The gfx tables' own configs (XCD remap with 8 XCDs) computed in the interpreter."""
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch)
    dtype = torch.float16
    for M in (3, 40, 130):
        x, w = randn(M, 64, dtype=dtype), randn(72, 64, dtype=dtype)
        _check(gemmkit.gemm_a16w16(x, w, out=poisoned((M, 72), dtype)), x, w, None, None, dtype)


def test_empty_and_k0():
    dtype = torch.bfloat16
    x, w = randn(0, 8, dtype=dtype), randn(5, 8, dtype=dtype)
    assert gemmkit.gemm_a16w16(x, w).shape == (0, 5)
    x, w = randn(4, 8, dtype=dtype), randn(0, 8, dtype=dtype)
    assert gemmkit.gemm_a16w16(x, w).shape == (4, 0)
    x, w, b = randn(3, 0, dtype=dtype), randn(6, 0, dtype=dtype), randn(6, dtype=dtype)
    torch.testing.assert_close(gemmkit.gemm_a16w16(x, w), torch.zeros(3, 6, dtype=dtype))
    y = gemmkit.gemm_a16w16(x, w, b, activation="silu", out_dtype=torch.float32)
    torch.testing.assert_close(y, torch.nn.functional.silu(b.float()).expand(3, 6))


@pytest.mark.parametrize("act", ACTS[1:], ids=str)
def test_activation_tails_elementwise(act):
    """Each activation is accurate element by element, also deep in the negative tail where
    the textbook formulas cancel (fp32 output, relative error per element)."""
    vals = torch.tensor([-60.0, -30.0, -12.0, -9.0, -5.0, -2.5, -1.0, -0.125, 0.0, 0.125, 1.0, 2.5, 9.0, 60.0])
    x = vals.to(torch.bfloat16)[:, None]  # K = 1, w = 1: the GEMM result is exactly x
    w = torch.ones(1, 1, dtype=torch.bfloat16)
    y = gemmkit.gemm_a16w16(x, w, activation=act, out_dtype=torch.float32)[:, 0].double()
    ref = gemm_a16w16_ref(x, w, None, act)[:, 0]
    tiny = ref.abs() < 1e-37  # below fp32's normal range: only require a tiny result
    rel = ((y - ref).abs() / ref.abs().clamp_min(1e-300))[~tiny]
    # fp32 evaluation: a few ulps (2**-24 each), times the tail's condition number ~ x**2
    # (exp(-x**2/2) turns the rounding of x**2 into a relative error of x**2 ulps).
    bound = 4e-7 * (1 + vals[~tiny].double() ** 2)
    assert (rel < bound).all(), list(zip(vals[~tiny].tolist(), rel.tolist()))
    assert (y[tiny].abs() < 1e-36).all()


@pytest.mark.parametrize("tma", [False, True], ids=["pointer", "tma"])
@pytest.mark.parametrize("split_k,K", [(2, 64), (3, 200), (4, 40), (5, 96), (8, 32)],
                         ids=["2x64", "3x200", "4x40-empty-splits", "5x96", "8x32-empty-splits"])
@pytest.mark.parametrize("M", [1, 19])
def test_split_k(M, split_k, K, tma, launches):
    """Split-K partial sums + the ordered reduce, including splits with no K steps and M = 1
    (which Triton specialises to a constant)."""
    dtype = torch.bfloat16
    N = 48
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2, "num_warps": 4,
           "num_stages": 2, "NUM_KSPLIT": split_k, "tma": tma}
    x, w, bias = randn(M, K, dtype=dtype), randn(N, K, dtype=dtype), randn(N, dtype=dtype)
    before = launches["splitk_reduce_kernel"]
    y = gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=poisoned((M, N), dtype), config=cfg)
    assert launches["splitk_reduce_kernel"] == before + 1
    _check(y, x, w, bias, "silu", dtype)
    y2 = gemmkit.gemm_a16w16(x, w, bias, activation="silu", config=cfg)
    assert torch.equal(y, y2), "split-K must be bitwise reproducible"
