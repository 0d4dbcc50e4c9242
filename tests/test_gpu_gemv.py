"""The GEMV mainloop (BLOCK_SIZE_M < 16, kernels/triton/_mainloop.py fma_product) on the GPU (`pytest -m gpu`).

Every op that can run a GEMV config, at decode M and model-sized K, into NaN-poisoned outputs, against
float64 on the CPU (tests/_util.within_bound: bf16 rounding of y); plus run-to-run bitwise determinism and
CUDA-graph capture of a GEMV launch. CPU (interpreter + static compile) twins: tests/test_gemv_interp.py.
"""
import pytest
import torch

import gemmkit
from _util import poisoned, randn, within_bound
from gemmkit.reference import gemm_a16w16_ref

pytestmark = pytest.mark.gpu
DEV = "cuda"
BF16 = torch.bfloat16


def gemv(bm=1, bn=16, bk=512, warps=4, **kw):
    return dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=1, num_warps=warps, num_stages=1,
                **kw)


# (GEMV tiles keep BLOCK_M x BLOCK_N x BLOCK_K partial products in registers: <= 64 per thread here)
SHAPES = [(1, 1000, 520, gemv()), (1, 576, 7168, gemv(1, 32, 256)), (3, 4104, 1024, gemv(4, 16, 128)),
          (8, 264, 4096, gemv(8, 16, 128, 8)), (13, 520, 776, gemv(4, 32, 64)), (2, 4096, 8192, gemv(2, 16, 256, NUM_KSPLIT=4))]


@pytest.mark.parametrize("M,N,K,cfg", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k, _ in SHAPES])
def test_a16w16(M, N, K, cfg):
    x, w, bias = randn(M, K, dtype=BF16, device=DEV), randn(N, K, dtype=BF16, device=DEV) / K ** 0.5, \
        randn(N, dtype=BF16, device=DEV)
    out = poisoned((M, N), BF16, DEV)
    gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=out, config=cfg)
    ok, msg = within_bound(out, gemm_a16w16_ref(x.cpu(), w.cpu(), bias.cpu(), "silu"), BF16)
    assert ok, msg


@pytest.mark.parametrize("M", [1, 4])
def test_split_cat_kv_b_proj(M):
    """DeepSeek-V3's kv_b_proj: D = 128 heads, S1 = S2 = 128, S3 = 64 (k_pe expanded over heads), K = 512."""
    from test_split_cat_interp import check, ref_split_cat

    D, S1, S2, S3, K = 128, 128, 128, 64, 512
    x, w = randn(M, K, dtype=BF16, device=DEV), randn(D * (S1 + S2), K, dtype=BF16, device=DEV) / K ** 0.5
    y = randn(M, 1, S3, dtype=BF16, device=DEV).expand(M, D, S3)
    c1, c2 = poisoned((M, D, S1 + S3), BF16, DEV), poisoned((M, D, S2), BF16, DEV)
    gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=gemv(1 << (M - 1).bit_length(), 16, 512 // (1 << (M - 1).bit_length())))
    r1, r2 = ref_split_cat(x.cpu().double() @ w.cpu().double().T, y.cpu(), S1)
    check(c1.cpu(), c2.cpu(), r1, r2, y.cpu(), S1, BF16)


@pytest.mark.parametrize("M", [1, 2])
def test_gated_and_ffn(M):
    from test_ffn_interp import ffn_ref, gated_ref

    I, K = 1536, 1024
    x = randn(M, K, dtype=BF16, device=DEV)
    w_gu, w_down = randn(2 * I, K, dtype=BF16, device=DEV) / K ** 0.5, randn(K, I, dtype=BF16, device=DEV) / I ** 0.5
    h = poisoned((M, I), BF16, DEV)
    gemmkit.gemm_a16w16_gated(x, w_gu, out=h, config=gemv(M, 16, 512 // M))
    ok, msg = within_bound(h, gated_ref(x, w_gu), BF16)
    assert ok, msg
    y = gemmkit.ffn_gated(x, w_gu, w_down, config=(gemv(M, 32, 256 // M), gemv(M, 16, 512 // M)))
    ok, msg = within_bound(y, ffn_ref(x, w_gu, w_down), BF16)
    assert ok, msg


def test_deterministic_and_cuda_graph():
    M, N, K = 1, 8192, 8192
    cfg = gemv(1, 16, 512)
    x, w = randn(M, K, dtype=BF16, device=DEV), randn(N, K, dtype=BF16, device=DEV) / K ** 0.5
    y0 = gemmkit.gemm_a16w16(x, w, config=cfg)
    for _ in range(3):
        assert torch.equal(gemmkit.gemm_a16w16(x, w, config=cfg), y0)
    out = torch.empty_like(y0)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_a16w16(x, w, out=out, config=cfg)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, y0)
