"""batched_gemm_a16w16 and batched_gemm_a8w8 in the Triton interpreter, against float64.

Every entry of the batch is checked against the float64 reference of the dense op on that
entry (gemmkit.reference), with the norm-wise bounds of tests/_util.py on each entry
(a wrong batch offset shows up as one bad entry, not as a small error spread over all).
Outputs are NaN-poisoned first, so an element never written fails.
"""
import itertools

import pytest
import torch

import gemmkit
from gemmkit import arch, configs
from gemmkit.ops import batched_gemm as BG
from gemmkit.ops import dispatch as D
from gemmkit.reference import gemm_a8w8_ref, gemm_a16w16_ref

from _util import poisoned, q8, randn, scales, within_bound

pytestmark = pytest.mark.interpreter
FP8 = torch.float8_e4m3fn
SMALL = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2}
PATHS = {  # config -> the kernel that must run (aligned operands)
    "pointer": (dict(SMALL), "batched_gemm_kernel"),
    "pointer_persistent": (dict(SMALL, persistent=True), "batched_gemm_kernel"),
    "tma": (dict(SMALL, tma=True), "batched_gemm_tma_kernel"),
    "tma_persistent": (dict(SMALL, tma=True, persistent=True), "batched_gemm_tma_kernel"),
}


def ref16(x, w, bias=None, activation=None):
    return torch.stack([gemm_a16w16_ref(x[b], w[b], None if bias is None else (bias if bias.dim() == 1 else bias[b]),
                                        activation) for b in range(x.shape[0])])


def ref8(x, w, xs, ws, bias=None):
    B, M, N = x.shape[0], x.shape[1], w.shape[1]
    return torch.stack([gemm_a8w8_ref(x[b], w[b], xs.reshape(B, M)[b], ws.reshape(B, N)[b],
                                      None if bias is None else (bias if bias.dim() == 1 else bias[b]))
                        for b in range(B)])


def check_entries(y, ref, out_dtype):
    for b in range(y.shape[0]):
        ok, msg = within_bound(y[b], ref[b], out_dtype)
        assert ok, f"batch entry {b}: {msg}"


# ----------------------------------------------------------------------------- batched_gemm_a16w16

SHAPES = list(itertools.product([1, 3], [1, 17, 64], [31, 64], [40, 96]))


@pytest.mark.parametrize("B,M,N,K", SHAPES, ids=[f"{b}x{m}x{n}x{k}" for b, m, n, k in SHAPES])
def test_a16w16_shapes(B, M, N, K, launches):
    """Table configs (sm_90 tables: TMA where aligned, else the pointer kernel), bias per entry."""
    x, w, bias = randn(B, M, K, dtype=torch.bfloat16), randn(B, N, K, dtype=torch.bfloat16), \
        randn(B, N, dtype=torch.bfloat16)
    out = poisoned((B, M, N), torch.bfloat16)
    before = sum(launches.values())
    y = gemmkit.batched_gemm_a16w16(x, w, bias, out=out)
    assert y is out and sum(launches.values()) == before + 1, "one kernel launch for the whole batch"
    check_entries(y, ref16(x, w, bias), torch.bfloat16)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("bias_kind", ["none", "shared", "per_entry"])
def test_a16w16_paths_and_bias(path, bias_kind, launches):
    """Both kernels, persistent or not, with edge tiles on M and N and a ragged K tail (B x tiles > grid)."""
    cfg, kernel = PATHS[path]
    B, M, N, K = 5, 45, 72, 88
    x, w = randn(B, M, K, dtype=torch.float16), randn(B, N, K, dtype=torch.float16)
    bias = {"none": None, "shared": randn(N, dtype=torch.float16), "per_entry": randn(B, N, dtype=torch.float16)}[
        bias_kind]
    before = launches[kernel]
    y = gemmkit.batched_gemm_a16w16(x, w, bias, config=cfg, out=poisoned((B, M, N), torch.float16))
    assert launches[kernel] == before + 1
    check_entries(y, ref16(x, w, bias), torch.float16)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("activation", [None, "gelu", "silu"])
def test_a16w16_out_dtypes_activation(out_dtype, activation):
    B, M, N, K = 2, 33, 48, 64
    x, w, bias = randn(B, M, K, dtype=torch.bfloat16), randn(B, N, K, dtype=torch.bfloat16), \
        randn(B, N, dtype=torch.bfloat16)
    y = gemmkit.batched_gemm_a16w16(x, w, bias, activation=activation, out_dtype=out_dtype)
    assert y.dtype == out_dtype and y.shape == (B, M, N)
    check_entries(y, ref16(x, w, bias, activation), out_dtype)


@pytest.mark.parametrize("layout,kernel", [
    ("x_batch_interleaved", "batched_gemm_kernel"),  # (M, B, K).transpose(0, 1): batch stride K
    ("x_col_major", "batched_gemm_kernel"),          # unit stride on M: read in place by the pointer kernel
    ("x_k_strided", "batched_gemm_kernel"),          # no unit stride: copied
    ("w_broadcast", "batched_gemm_kernel"),          # one weight for every entry (batch stride 0)
    ("w_padded_batch", "batched_gemm_tma_kernel"),   # batch stride > N * K, 16-byte multiple: still TMA
    ("out_strided", "batched_gemm_kernel"),          # out a slice of a wider tensor, rows not 16-byte aligned
    ("out_padded", "batched_gemm_tma_kernel"),       # out rows padded to 16 bytes: TMA store
    ("bias_strided", "batched_gemm_tma_kernel"),     # bias (B, N) with stride 2 on N: copied, then TMA
    ("w_transposed", "batched_gemm_tma_kernel"),     # (B, K, N).transpose(1, 2) (probs @ V): TMA reads it (W_KN)
    ("w_transposed_off", "batched_gemm_kernel"),     # the same with (K, N) rows of 86 bytes: the pointer kernel
])
def test_a16w16_strided(layout, kernel, launches):
    B, M, N, K = 3, 20, 40, 64
    cfg = dict(SMALL, tma=True)
    x, w, bias = randn(B, M, K, dtype=torch.bfloat16), randn(B, N, K, dtype=torch.bfloat16), \
        randn(B, N, dtype=torch.bfloat16)
    out = None
    if layout == "x_batch_interleaved":
        x = randn(M, B, K, dtype=torch.bfloat16).transpose(0, 1)
    elif layout == "x_col_major":
        x = randn(B, K, M, dtype=torch.bfloat16).transpose(1, 2)
    elif layout == "x_k_strided":
        x = randn(B, M, 2 * K, dtype=torch.bfloat16)[:, :, ::2]
    elif layout == "w_broadcast":
        w = randn(1, N, K, dtype=torch.bfloat16).expand(B, N, K)
    elif layout == "w_padded_batch":
        w = randn(B, N + 3, K, dtype=torch.bfloat16)[:, :N]
    elif layout == "out_strided":
        out = poisoned((B, M, N + 3), torch.bfloat16)[:, :, :N]
    elif layout == "out_padded":
        out = poisoned((B, M, N + 8), torch.bfloat16)[:, :, :N]
    elif layout == "bias_strided":
        bias = randn(B, 2 * N, dtype=torch.bfloat16)[:, ::2]
    elif layout == "w_transposed":
        w = randn(B, K, N, dtype=torch.bfloat16).transpose(1, 2)
    elif layout == "w_transposed_off":
        w = randn(B, K, N + 3, dtype=torch.bfloat16)[:, :, :N].transpose(1, 2)
    before = launches[kernel]
    y = gemmkit.batched_gemm_a16w16(x, w, bias, out=out, config=cfg)
    assert launches[kernel] == before + 1
    assert out is None or y is out
    check_entries(y, ref16(x, w, bias), torch.bfloat16)


def test_tma_rules_3d():
    t = torch.empty(4, 32, 64, dtype=torch.bfloat16)
    assert BG.tma_compatible_3d(t)
    assert BG.tma_compatible_3d(t[:1].expand(1, 32, 64))
    assert not BG.tma_compatible_3d(t[:1].expand(4, 32, 64)), "batch stride 0"
    assert not BG.tma_compatible_3d(t.transpose(0, 1)), "batch dim inside the rows"
    assert BG.tma_compatible_3d(t[:, :, :60]), "a K slice: the strides are still 16-byte multiples"
    assert not BG.tma_compatible_3d(torch.empty(4, 32, 60, dtype=torch.bfloat16)), "row stride 120 bytes"
    assert not BG.tma_compatible_3d(t[:, :, 1:]), "base not 16-byte aligned"
    assert not BG.tma_compatible_3d(torch.empty(0, 32, 64, dtype=torch.bfloat16)), "empty"



@pytest.mark.parametrize("layout", ["aligned", "w_broadcast"])
def test_a16w16_gluon_config_runs_the_triton_tier_here(layout, launches):
    """A "backend": "gluon" config is accepted; the interpreter (no Gluon) runs the same config on the
    Triton tier: its "tma" key picks the TMA kernel where the operands allow, else the pointer kernel."""
    B, M, N, K = 3, 20, 40, 64
    x, w = randn(B, M, K, dtype=torch.bfloat16), randn(B, N, K, dtype=torch.bfloat16)
    if layout == "w_broadcast":
        w = randn(1, N, K, dtype=torch.bfloat16).expand(B, N, K)
    kernel = "batched_gemm_tma_kernel" if layout == "aligned" else "batched_gemm_kernel"
    before = dict(launches)
    y = gemmkit.batched_gemm_a16w16(x, w, config=dict(SMALL, backend="gluon", tma=True, persistent=True))
    assert launches[kernel] == before.get(kernel, 0) + 1
    assert launches["hopper_pingpong_batched_kernel"] == before.get("hopper_pingpong_batched_kernel", 0)
    check_entries(y, ref16(x, w), torch.bfloat16)
    choice = D.batched(configs.validate_config(dict(SMALL, backend="gluon", tma=True)), arch.get("sm_90"), x, w, y)
    assert choice.passed_over[0] == (D.GLUON_BATCHED, "the Triton interpreter does not run Gluon kernels")
    assert choice.kernel == kernel


def test_a16w16_gluon_config_falls_back_with_the_stages_that_fit(launches):
    """A Gluon config's num_stages is an upper bound (the Gluon kernels run as many as fit them), so on the Triton
    tier's pointer kernel (here: w broadcast along the batch, no TMA; and the interpreter) it runs the stages that fit
    that kernel (dense.fallback_stages), as the dense op does; before, 128 x 256 x 64 at 8 stages raised ValueError.
    A Triton config's stages stay as asked and still raise."""
    from gemmkit.kernels.triton import dense as G

    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 8, "backend": "gluon"}
    sm90 = arch.get("sm_90")
    with pytest.raises(ValueError, match="shared memory"):
        G.check_feasible(cfg, sm90, 2, 2, tma=False)
    B, M, N, K = 2, 20, 40, 72
    x = randn(B, M, K, dtype=torch.bfloat16)
    w = randn(1, N, K, dtype=torch.bfloat16).expand(B, N, K)
    y = poisoned((B, M, N), torch.bfloat16)
    choice = D.batched(configs.validate_config(dict(cfg)), sm90, x, w, y)
    assert choice.kernel == "batched_gemm_kernel" and choice.config["num_stages"] < 8
    G.check_feasible(choice.config, sm90, 2, 2, tma=False)
    before = dict(launches)
    out = gemmkit.batched_gemm_a16w16(x, w, out=y, config=cfg)
    assert launches["batched_gemm_kernel"] == before.get("batched_gemm_kernel", 0) + 1
    check_entries(out, ref16(x, w), torch.bfloat16)
    with pytest.raises(ValueError, match="shared memory"):
        gemmkit.batched_gemm_a16w16(x, w, config=dict(cfg, backend="triton"))


def test_a16w16_empty_dims():
    B, N = 2, 16
    assert gemmkit.batched_gemm_a16w16(randn(0, 4, 32, dtype=torch.bfloat16),
                                       randn(0, N, 32, dtype=torch.bfloat16)).shape == (0, 4, N)
    assert gemmkit.batched_gemm_a16w16(randn(B, 0, 32, dtype=torch.bfloat16),
                                       randn(B, N, 32, dtype=torch.bfloat16)).shape == (B, 0, N)
    bias = randn(B, N, dtype=torch.bfloat16)
    y = gemmkit.batched_gemm_a16w16(randn(B, 3, 0, dtype=torch.bfloat16), randn(B, N, 0, dtype=torch.bfloat16),
                                    bias, activation="relu")
    assert torch.equal(y, bias.relu()[:, None, :].expand(B, 3, N))
    shared = randn(N, dtype=torch.bfloat16)
    y = gemmkit.batched_gemm_a16w16(randn(B, 3, 0, dtype=torch.bfloat16), randn(B, N, 0, dtype=torch.bfloat16),
                                    shared)
    assert torch.equal(y, shared.expand(B, 3, N))


# ----------------------------------------------------------------------------- batched_gemm_a8w8

SHAPES8 = [(1, 1, 31, 64), (3, 17, 40, 96), (2, 64, 128, 256), (4, 33, 64, 40)]


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("B,M,N,K", SHAPES8, ids=[f"{b}x{m}x{n}x{k}" for b, m, n, k in SHAPES8])
def test_a8w8_shapes(B, M, N, K, dtype, launches):
    x, w = q8(B, M, K, dtype=dtype), q8(B, N, K, dtype=dtype)
    xs, ws, bias = scales(B, M, 1), scales(B, 1, N), randn(B, N, dtype=torch.bfloat16)
    out = poisoned((B, M, N), torch.bfloat16)
    before = sum(launches.values())
    y = gemmkit.batched_gemm_a8w8(x, w, xs, ws, bias, out=out)
    assert y is out and sum(launches.values()) == before + 1
    check_entries(y, ref8(x, w, xs, ws, bias), torch.bfloat16)


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("path", list(PATHS))
def test_a8w8_paths(dtype, path, launches):
    """(B, M) / (B, N) scales, a shared fp32 bias, fp32 out, every path."""
    cfg, kernel = PATHS[path]
    cfg = dict(cfg, BLOCK_SIZE_K=64)
    B, M, N, K = 3, 45, 80, 192
    x, w = q8(B, M, K, dtype=dtype), q8(B, N, K, dtype=dtype)
    xs, ws, bias = scales(B, M), scales(B, N), randn(N, dtype=torch.float32)
    before = launches[kernel]
    y = gemmkit.batched_gemm_a8w8(x, w, xs, ws, bias, out_dtype=torch.float32, config=cfg)
    assert launches[kernel] == before + 1
    check_entries(y, ref8(x, w, xs, ws, bias), torch.float32)


def test_a8w8_strided_scales_and_int8_exact():
    B, M, N, K = 2, 24, 48, 128
    x, w = q8(B, M, K, dtype=FP8), q8(B, N, K, dtype=FP8)
    xs = scales(B, M, 2)[:, :, :1]   # (B, M, 1) with stride 2 on M
    ws = scales(B, 3, N)[:, 1:2, :]  # (B, 1, N) view
    y = gemmkit.batched_gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32)
    check_entries(y, ref8(x, w, xs, ws), torch.float32)
    xi = torch.full((B, 4, 512), -128, dtype=torch.int8)
    wi = torch.full((B, 8, 512), -128, dtype=torch.int8)
    y = gemmkit.batched_gemm_a8w8(xi, wi, torch.ones(B, 4, 1), torch.ones(B, 1, 8), out_dtype=torch.float32)
    assert torch.equal(y, torch.full((B, 4, 8), 128.0 * 128 * 512))


def test_a8w8_empty_dims():
    y = gemmkit.batched_gemm_a8w8(q8(2, 0, 32, dtype=FP8), q8(2, 16, 32, dtype=FP8), scales(2, 0, 1),
                                  scales(2, 1, 16))
    assert y.shape == (2, 0, 16) and y.dtype == torch.bfloat16
    bias = randn(2, 16, dtype=torch.bfloat16)
    y = gemmkit.batched_gemm_a8w8(q8(2, 3, 0, dtype=FP8), q8(2, 16, 0, dtype=FP8), scales(2, 3, 1),
                                  scales(2, 1, 16), bias)
    assert torch.equal(y, bias[:, None, :].expand(2, 3, 16))


# ----------------------------------------------------------------------------- validation

def _args16(B=2, M=8, N=16, K=64):
    return randn(B, M, K, dtype=torch.bfloat16), randn(B, N, K, dtype=torch.bfloat16)


@pytest.mark.parametrize("case,exc,match", [
    ("x_2d", ValueError, r"^x: expected a 3-D tensor, got shape \(8, 64\)"),
    ("x_dtype", TypeError, r"^x: expected dtype torch.bfloat16 or torch.float16, got torch.float32"),
    ("w_dtype", TypeError, r"^w: expected dtype torch.bfloat16 \(the dtype of x\), got torch.float16"),
    ("w_batch", ValueError, r"^w: expected shape \(2, N, 64\) to match x \(B=2, K=64\), got \(3, 16, 64\)"),
    ("w_k", ValueError, r"^w: expected shape \(2, N, 64\) to match x \(B=2, K=64\), got \(2, 16, 32\)"),
    ("bias_shape", ValueError, r"^bias: expected shape \(16,\) or \(2, 16\), got \(3, 16\)"),
    ("bias_dtype", TypeError, r"^bias: expected dtype torch.bfloat16, got torch.float32"),
    ("out_shape", ValueError, r"^out: expected shape \(2, 8, 16\), got \(2, 8, 15\)"),
    ("out_dtype", TypeError, r"^out: expected dtype torch.float32 \(out_dtype\), got torch.bfloat16"),
    ("bad_out_dtype", TypeError, r"^out_dtype: expected one of"),
    ("activation", ValueError, r"^activation: expected None or one of"),
    ("split_k", ValueError, r"^config: key 'NUM_KSPLIT' = 2; the batched GEMMs take 1"),
    ("cutlass", ValueError, r"^config: key 'backend' = 'cutlass'; expected 'triton' or 'gluon'"),
    ("swap_ab", ValueError, r"^config: key 'swap_ab' = true; the batched GEMMs have no transposed tile"),
    ("bad_config", ValueError, r"^config: unknown key 'BLOCK_M'"),
    ("requires_grad", NotImplementedError, r"^x: requires grad"),
])
def test_a16w16_errors(case, exc, match):
    x, w = _args16()
    kw = {}
    if case == "x_2d":
        x = x[0]
    elif case == "x_dtype":
        x = x.float()
    elif case == "w_dtype":
        w = w.half()
    elif case == "w_batch":
        w = randn(3, 16, 64, dtype=torch.bfloat16)
    elif case == "w_k":
        w = randn(2, 16, 32, dtype=torch.bfloat16)
    elif case == "bias_shape":
        kw["bias"] = randn(3, 16, dtype=torch.bfloat16)
    elif case == "bias_dtype":
        kw["bias"] = randn(16, dtype=torch.float32)
    elif case == "out_shape":
        kw["out"] = torch.empty(2, 8, 15, dtype=torch.bfloat16)
    elif case == "out_dtype":
        kw["out"], kw["out_dtype"] = torch.empty(2, 8, 16, dtype=torch.bfloat16), torch.float32
    elif case == "bad_out_dtype":
        kw["out_dtype"] = torch.int32
    elif case == "activation":
        kw["activation"] = "tanh"
    elif case == "split_k":
        kw["config"] = dict(SMALL, NUM_KSPLIT=2)
    elif case == "cutlass":
        kw["config"] = dict(SMALL, backend="cutlass")
    elif case == "swap_ab":  # refused on every path, not only where the Gluon kernel would run
        kw["config"] = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4,
                        "num_stages": 2, "backend": "gluon", "swap_ab": True}
    elif case == "bad_config":
        kw["config"] = {"BLOCK_M": 64}
    elif case == "requires_grad":
        x.requires_grad_()
    with pytest.raises(exc, match=match):
        gemmkit.batched_gemm_a16w16(x, w, **kw)


@pytest.mark.parametrize("case,exc,match", [
    ("bf16_x", TypeError, r"^x: expected dtype torch.int8 or torch.float8_e4m3fn or torch.float8_e4m3fnuz"),
    ("fnuz_on_sm90", TypeError, r"^x: H200 \(sm_90\) multiplies torch.float8_e4m3fn, got torch.float8_e4m3fnuz"),
    ("w_dtype", TypeError, r"^w: expected dtype torch.float8_e4m3fn \(the dtype of x\)"),
    ("x_scale_shape", ValueError, r"^x_scale: expected shape \(2, 8, 1\) or \(2, 8\), got \(2, 1, 8\)"),
    ("w_scale_shape", ValueError, r"^w_scale: expected shape \(2, 1, 16\) or \(2, 16\), got \(1, 16\)"),
    ("scale_dtype", TypeError, r"^w_scale: expected dtype torch.float32, got torch.bfloat16"),
    ("bias_shape", ValueError, r"^bias: expected shape \(16,\) or \(2, 16\), got \(2, 1, 16\)"),
    ("out_shape", ValueError, r"^out: expected shape \(2, 8, 16\)"),
    ("int8_k", ValueError, r"^x: K = 131072 can overflow the int32 accumulator"),
    ("requires_grad", NotImplementedError, r"^x_scale: requires grad"),
    ("gluon", ValueError, r"^config: key 'backend' = 'gluon'; batched_gemm_a8w8 has only the 'triton' kernels"),
])
def test_a8w8_errors(case, exc, match):
    B, M, N, K = 2, 8, 16, 64
    x, w, xs, ws = q8(B, M, K, dtype=FP8), q8(B, N, K, dtype=FP8), scales(B, M, 1), scales(B, 1, N)
    kw = {}
    if case == "bf16_x":
        x, w = x.to(torch.bfloat16), w.to(torch.bfloat16)
    elif case == "fnuz_on_sm90":
        x, w = x.float().to(torch.float8_e4m3fnuz), w.float().to(torch.float8_e4m3fnuz)
    elif case == "w_dtype":
        w = w.float().to(torch.float8_e5m2)
    elif case == "x_scale_shape":
        xs = scales(B, 1, M)
    elif case == "w_scale_shape":
        ws = scales(1, N)
    elif case == "scale_dtype":
        ws = ws.to(torch.bfloat16)
    elif case == "bias_shape":
        kw["bias"] = randn(B, 1, N, dtype=torch.bfloat16)
    elif case == "out_shape":
        kw["out"] = torch.empty(B, M, N + 1, dtype=torch.bfloat16)
    elif case == "int8_k":
        x, w = torch.zeros(1, 1, 131072, dtype=torch.int8), torch.zeros(1, 1, 131072, dtype=torch.int8)
        xs, ws = torch.ones(1, 1, 1), torch.ones(1, 1, 1)
    elif case == "requires_grad":
        xs.requires_grad_()
    elif case == "gluon":
        kw["config"] = dict(SMALL, backend="gluon")
    with pytest.raises(exc, match=match):
        gemmkit.batched_gemm_a8w8(x, w, xs, ws, **kw)


# ----------------------------------------------------------------------------- torch integration

# opcheck's schema test runs the op on CPU copies, which torch cannot multiply in fp8 (see test_a8w8_interp).
NO_SCHEMA = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_opcheck_and_compile(launches):
    x, w = _args16(2, 9, 24, 32)
    bias = randn(24, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.gemmkit.batched_gemm_a16w16.default, (x, w, bias, "none", torch.float32, ""))
    torch.library.opcheck(torch.ops.gemmkit.batched_gemm_a16w16_out.default,
                          (x, w, None, "silu", "", torch.empty(2, 9, 24, dtype=torch.bfloat16)))
    xi, wi = q8(2, 9, 64, dtype=torch.int8), q8(2, 24, 64, dtype=torch.int8)
    torch.library.opcheck(torch.ops.gemmkit.batched_gemm_a8w8.default,
                          (xi, wi, scales(2, 9, 1), scales(2, 1, 24), None, torch.float32, ""))
    xf, wf = q8(2, 9, 64, dtype=FP8), q8(2, 24, 64, dtype=FP8)
    torch.library.opcheck(torch.ops.gemmkit.batched_gemm_a8w8_out.default,
                          (xf, wf, scales(2, 9), scales(2, 24), bias, "", torch.empty(2, 9, 24)),
                          test_utils=NO_SCHEMA)
    torch._dynamo.reset()

    def f(x, w):
        return gemmkit.batched_gemm_a16w16(x * 2, w, out_dtype=torch.float32) + 1

    before = sum(launches.values())
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w)
    assert sum(launches.values()) > before
    check_entries(y - 1, ref16(x * 2, w), torch.float32)
