"""gemm_a16w16_gated and ffn_gated on the GPU (run on the H200: `pytest -m gpu`).

Reference: float64 on the GPU for the gated GEMM's h, every element checked (`_util.check_gated`); fp32 torch on
the GPU (TF32 off, conftest) for ffn_gated's y, h rounded to x's dtype as the op holds it, bound ||y - ref|| / ||ref||
<= TOL (bf16: 2**-8): through a bf16 h an element's bound would be ~2**-8 of its sum of magnitudes, which adds little
to the norm-wise one (the h that feeds it is checked element by element here). The shapes are Llama-3
8B / 70B FFNs (I = 14336 / 28672, hidden = 4096 / 8192) at decode and prefill M, so every
bucket of the shipped tables (split-K, TMA, persistent) runs, plus ragged edges.
"""
import pytest
import torch
import torch.nn.functional as F

import gemmkit

from _util import TOL, check_gated

pytestmark = pytest.mark.gpu
DEV = "cuda"
BF16 = torch.bfloat16


def inputs(M, I, K, dtype=BF16):
    x = torch.randn(M, K, device=DEV, dtype=dtype)
    w = torch.randn(2 * I, K, device=DEV, dtype=dtype) / K ** 0.5
    wd = torch.randn(K, I, device=DEV, dtype=dtype) / I ** 0.5
    return x, w, wd


def gated_ref(x, w, activation="silu"):
    I = w.shape[0] // 2
    gu = x.float() @ w.float().T
    g, u = gu[:, :I], gu[:, I:]
    act = {"silu": F.silu, "relu": F.relu, "gelu": F.gelu,
           "gelu_tanh": lambda v: F.gelu(v, approximate="tanh")}[activation]
    return act(g) * u


def rel(y, ref):
    assert torch.isfinite(y).all(), "non-finite output (unwritten element?)"
    return ((y.float() - ref).norm() / ref.norm()).item()


GATED_SHAPES = [(1, 14336, 4096), (8, 28672, 8192), (16, 14336, 4096), (64, 14336, 4096), (256, 28672, 8192),
                (1024, 14336, 4096), (4096, 14336, 4096), (17, 31, 48), (333, 1000, 784), (4095, 1001, 1008),
                # the config model's gated answers: few tiles split along K (`fit`), `gated_rows`' 64-row tile
                (128, 2048, 7168), (32, 2048, 7168), (512, 2048, 7168), (414, 13808, 7232), (287, 1904, 3088),
                # K % 8 != 0: M = 1 gemm_rows_kernel + the gated reduce, then gemm_rows_tma, the TMA kernel on copies
                (1, 4096, 4095), (16, 5000, 7001), (3, 2880, 2881), (37, 1000, 1001), (4096, 4096, 4095),
                # h's rows off 16 bytes (I % 8 != 0): the TMA kernel into h's workspace, K's rows copied or not
                (77, 1001, 2001), (300, 1001, 1024)]


@pytest.mark.parametrize("M,I,K", GATED_SHAPES, ids=[f"{m}x{i}x{k}" for m, i, k in GATED_SHAPES])
def test_gated_shapes(M, I, K):
    x, w, _ = inputs(M, I, K)
    out = torch.full((M, I), float("nan"), device=DEV, dtype=BF16)
    gemmkit.gemm_a16w16_gated(x, w, out=out)
    check_gated(out, x, w)


@pytest.mark.parametrize("M,I,K", [(80, 28672, 8192), (200, 14336, 4096)], ids=["80x28672x8192", "200x14336x4096"])
def test_gated_row_padded_x(M, I, K):
    """Tables' 64-row TMA tiles at an M that leaves a partial box, w of 235-940 MB: x is copied to whole boxes of rows
    first (ops/dispatch.py pad_m; asserted, so the test cannot miss it) and every element is right."""
    from gemmkit.ops import _common as C

    x, w, _ = inputs(M, I, K)
    out = torch.full((M, I), float("nan"), device=DEV, dtype=BF16)
    before = dict(C.LAUNCHES)
    gemmkit.gemm_a16w16_gated(x, w, out=out)
    torch.cuda.synchronize()
    launched = {k: v - before.get(k, 0) for k, v in C.LAUNCHES.items() if v != before.get(k, 0)}
    assert launched.get("pad_rows_kernel") == 1 and launched.get("gemm_gated_tma_kernel") == 1, launched
    check_gated(out, x, w)


@pytest.mark.parametrize("M,I,K", [(4, 4096, 4095), (64, 4096, 4095), (200, 14336, 4095), (17, 5000, 7001),
                                   (64, 2052, 4095)],
                         ids=str)
def test_gated_rows_tma(M, I, K, launches):
    """K % 8 != 0 from M = 2 (dispatch.ROWS_TMA_MIN_M): w read where it lies by TMA (gemm_rows_tma) into fp32
    [g | u] partials, then its rows_reduce_kernel (class-major partials, I % 8 == 0) or the gated reduce; every element
    of h against float64."""
    x, w, _ = inputs(M, I, K)
    out = torch.full((M, I), float("nan"), device=DEV, dtype=BF16)
    before = dict(launches)
    gemmkit.gemm_a16w16_gated(x, w, out=out)
    torch.cuda.synchronize()
    ran = {k for k in launches if launches[k] != before.get(k, 0)}
    reduce = "rows_reduce_kernel" if I % 8 == 0 else "gated_splitk_reduce_kernel"
    assert {"gemm_rows_tma_kernel", reduce} <= ran and "pad_rows_kernel" not in ran, ran
    check_gated(out, x, w)


# The config model's `gated_one_wave` (model/gated.py): the Gluon cooperative gated tile where its 128 x 128 tiles
# of h fit one wave; partial tiles in both dims (333 x 3000, 129 x 7000: the last row / column shifted back), long K
ONE_WAVE = [(200, 6144, 4096), (460, 2304, 11264), (777, 1536, 8000), (333, 3000, 2048), (129, 7000, 1024)]


def launched_by(fn):
    from gemmkit.ops import _common as C

    before = dict(C.LAUNCHES)
    fn()
    torch.cuda.synchronize()
    return {k: v - before.get(k, 0) for k, v in C.LAUNCHES.items() if v != before.get(k, 0)}


@pytest.mark.parametrize("M,I,K", ONE_WAVE, ids=[f"{m}x{i}x{k}" for m, i, k in ONE_WAVE])
def test_gated_one_wave_runs_the_gluon_coop(M, I, K):
    """The served Gluon gated tile (asserted launched, so the test cannot miss it), eager and from its call plan (the
    second call replays the first's), against float64; the activations and an fp32 h on the first shape."""
    from gemmkit import callplan

    x, w, _ = inputs(M, I, K)
    for _ in range(2):
        out = torch.full((M, I), float("nan"), device=DEV, dtype=BF16)
        replays = callplan.STATS["replays"]
        assert launched_by(lambda: gemmkit.gemm_a16w16_gated(x, w, out=out)) == {"hopper_coop_kernel": 1}
        check_gated(out, x, w)
        x = torch.randn_like(x)
    assert callplan.STATS["replays"] == replays + 1, "the second call was not replayed"
    if (M, I, K) == ONE_WAVE[0]:
        # an fp32 h: its rounding is far under the fp32 accumulation's error, which grows with K (tensor cores add
        # with truncation: _util.within_every_element), so the bound is that part, 2**-16 x max(1, K / 2048) of ||h||
        # (measured 8.8e-6 with gelu at K = 4096, H100; TOL's 2e-6 covers h's rounding alone)
        for activation in ("gelu", "gelu_tanh", "relu"):
            h = gemmkit.gemm_a16w16_gated(x, w, activation=activation, out_dtype=torch.float32)
            check_gated(h, x, w, activation, norm_tol=2**-16 * max(1, K / 2048))


def test_gated_one_wave_operands_tma_cannot_take():
    """x at a row pitch off 16 bytes (a slice of a wider x): the Gluon tile passes it over (TMA cannot address x's
    rows), the Triton tier serves the call with the config's tile, and h is right."""
    M, I, K = ONE_WAVE[0]
    x = torch.randn(M, K + 4, device=DEV, dtype=BF16)[:, :K]
    w = torch.randn(2 * I, K, device=DEV, dtype=BF16) / K ** 0.5
    out = torch.full((M, I), float("nan"), device=DEV, dtype=BF16)
    ran = launched_by(lambda: gemmkit.gemm_a16w16_gated(x, w, out=out))
    assert "hopper_coop_kernel" not in ran, ran
    check_gated(out, x, w)


FFN_SHAPES = [(1, 14336, 4096), (4, 28672, 8192), (32, 14336, 4096), (128, 28672, 8192), (2048, 14336, 4096),
              (100, 1000, 1000)]


@pytest.mark.parametrize("M,I,K", FFN_SHAPES, ids=[f"{m}x{i}x{k}" for m, i, k in FFN_SHAPES])
def test_ffn_shapes(M, I, K):
    x, w, wd = inputs(M, I, K)
    out = torch.full((M, K), float("nan"), device=DEV, dtype=BF16)
    gemmkit.ffn_gated(x, w, wd, out=out)
    ref = gated_ref(x, w).to(BF16).float() @ wd.float().T
    err = rel(out, ref)
    assert err <= TOL[BF16], f"rel err {err:.3g}"
    # and close to what the torch sequence computes (same bf16 h, cuBLAS GEMMs)
    g, u = torch.matmul(x, w.T).chunk(2, dim=-1)
    assert rel(out, torch.matmul(F.silu(g) * u, wd.T).float()) <= 2 * TOL[BF16]


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu"])
def test_activations_fp16_fp32_out(activation):
    M, I, K = 200, 2048, 1024
    x, w, _ = inputs(M, I, K, dtype=torch.float16)
    h = gemmkit.gemm_a16w16_gated(x, w, activation=activation, out_dtype=torch.float32)
    check_gated(h, x, w, activation, norm_tol=1e-5)


SMALL_SPLIT = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
               "num_stages": 3, "NUM_KSPLIT": 4}


@pytest.mark.parametrize("tma", [False, True], ids=["pointer", "tma"])
def test_splitk_deterministic(tma):
    M, I, K = 8, 4096, 8192
    x, w, _ = inputs(M, I, K)
    cfg = dict(SMALL_SPLIT, tma=tma)
    a = gemmkit.gemm_a16w16_gated(x, w, config=cfg, out_dtype=torch.float32)
    b = gemmkit.gemm_a16w16_gated(x, w, config=cfg, out_dtype=torch.float32)
    assert torch.equal(a, b)
    check_gated(a, x, w, norm_tol=1e-5)


@pytest.mark.parametrize("M,I,K", [(4, 14336, 4096), ONE_WAVE[0]], ids=["decode", "one_wave"])
def test_cuda_graph_capture(M, I, K):
    """ffn_gated captured in a CUDA graph and replayed on new x: at decode (split-K, the gated reduce) and at a
    `gated_one_wave` shape (the Gluon gated tile, asserted, then the down projection)."""
    x, w, wd = inputs(M, I, K)
    out = torch.empty(M, K, device=DEV, dtype=BF16)
    ran = launched_by(lambda: gemmkit.ffn_gated(x, w, wd, out=out))  # compile outside the capture
    assert ("hopper_coop_kernel" in ran) == ((M, I, K) == ONE_WAVE[0]), ran
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.ffn_gated(x, w, wd, out=out)
    out.fill_(float("nan"))
    x.copy_(torch.randn(M, K, device=DEV, dtype=BF16))
    g.replay()
    torch.cuda.synchronize()
    assert rel(out, gated_ref(x, w).to(BF16).float() @ wd.float().T) <= TOL[BF16]
