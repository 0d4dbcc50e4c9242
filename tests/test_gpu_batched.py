"""batched_gemm_a16w16 and batched_gemm_a8w8 on the GPU (run on the H200: `pytest -m gpu`).

Reference per batch entry: float64 on the CPU for small problems, float32 on the GPU (TF32 off,
conftest) for large ones. Bounds as tests/test_gpu_a16w16.py / test_gpu_a8w8.py: bf16 rounding of
y (tests/_util.TOL), plus fp8's reduced-precision accumulation inside one promoted K block.
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a8w8_ref, gemm_a16w16_ref

from _util import TOL

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn


def rel_entries(y, ref):
    """Largest per-entry ||y[b] - ref[b]|| / ||ref[b]|| (a wrong batch offset spoils one entry)."""
    assert torch.isfinite(y).all(), "non-finite output (unwritten element?)"
    y, ref = y.double(), ref.to(y.device).double()
    return max(((y[b] - ref[b]).norm() / ref[b].norm()).item() for b in range(y.shape[0]))


def ref16(x, w, bias=None):
    B, M, K = x.shape
    if M * w.shape[1] * K * B <= 2**28:
        return torch.stack([gemm_a16w16_ref(x[b], w[b], None if bias is None else bias[b] if bias.dim() == 2
                                             else bias) for b in range(B)])
    y = torch.bmm(x.float(), w.float().transpose(1, 2))
    return y + (bias.float()[:, None, :] if bias is not None and bias.dim() == 2 else
                bias.float() if bias is not None else 0)


def ref8(x, w, xs, ws, bias=None):
    B, M, K = x.shape
    N = w.shape[1]
    if M * N * K * B <= 2**28:
        return torch.stack([gemm_a8w8_ref(x[b], w[b], xs.reshape(B, M)[b], ws.reshape(B, N)[b],
                                          None if bias is None else bias[b]) for b in range(B)])
    y = torch.bmm(x.float(), w.float().transpose(1, 2)) * xs.reshape(B, M, 1) * ws.reshape(B, 1, N)
    return y + bias.float()[:, None, :] if bias is not None else y


# B, M, N, K: the grid (aligned: TMA), decode-like rows, odd shapes (pointer fallback)
SHAPES = [(8, 512, 512, 512), (64, 512, 512, 512), (8, 2048, 2048, 2048), (64, 1024, 1024, 1024),
          (4, 1, 4096, 4096), (3, 1000, 1500, 784), (2, 17, 31, 48), (5, 333, 1000, 1000), (32, 128, 96, 64)]


@pytest.mark.parametrize("B,M,N,K", SHAPES, ids=[f"{b}x{m}x{n}x{k}" for b, m, n, k in SHAPES])
def test_a16w16_shapes(B, M, N, K, launches):
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16), torch.randn(B, N, K, device=DEV,
                                                                               dtype=torch.bfloat16)
    bias = torch.randn(B, N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((B, M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = sum(launches.values())
    gemmkit.batched_gemm_a16w16(x, w, bias, out=out)
    torch.cuda.synchronize()
    assert sum(launches.values()) == before + 1
    err = rel_entries(out, ref16(x, w, bias))
    assert err <= TOL[torch.bfloat16], f"rel err {err:.3g}"


def test_a16w16_tma_path_taken(launches):
    """Aligned operands on the sm_90 table take the TMA kernel; a K that breaks TMA's 16-byte rule
    falls back to the pointer kernel with the same config."""
    x, w = torch.randn(8, 256, 512, device=DEV, dtype=torch.bfloat16), torch.randn(8, 256, 512, device=DEV,
                                                                                   dtype=torch.bfloat16)
    before = launches["batched_gemm_tma_kernel"]
    y = gemmkit.batched_gemm_a16w16(x, w)
    assert launches["batched_gemm_tma_kernel"] == before + 1
    assert rel_entries(y, ref16(x, w)) <= TOL[torch.bfloat16]
    x2, w2 = x[:, :, :500].contiguous(), w[:, :, :500].contiguous()  # rows of 1000 bytes: not 16-byte multiples
    before = launches["batched_gemm_kernel"]
    y2 = gemmkit.batched_gemm_a16w16(x2, w2)
    assert launches["batched_gemm_kernel"] == before + 1
    assert rel_entries(y2, ref16(x2, w2)) <= TOL[torch.bfloat16]


@pytest.mark.parametrize("layout", ["x_batch_interleaved", "w_broadcast", "x_col_major", "out_strided"])
def test_a16w16_strided(layout):
    B, M, N, K = 6, 300, 256, 512
    x = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(B, N, K, device=DEV, dtype=torch.bfloat16)
    out = None
    if layout == "x_batch_interleaved":
        x = torch.randn(M, B, K, device=DEV, dtype=torch.bfloat16).transpose(0, 1)
    elif layout == "w_broadcast":
        w = torch.randn(1, N, K, device=DEV, dtype=torch.bfloat16).expand(B, N, K)
    elif layout == "x_col_major":
        x = torch.randn(B, K, M, device=DEV, dtype=torch.bfloat16).transpose(1, 2)
    else:
        out = torch.full((B, M, N + 3), float("nan"), device=DEV, dtype=torch.bfloat16)[:, :, :N]
    y = gemmkit.batched_gemm_a16w16(x, w, out=out)
    assert out is None or y is out
    assert rel_entries(y, ref16(x, w)) <= TOL[torch.bfloat16]


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("tma", [False, True])
def test_a16w16_config_paths(tma, persistent):
    B, M, N, K = 64, 200, 136, 256
    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 3, "tma": tma, "persistent": persistent}
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.float16), torch.randn(B, N, K, device=DEV,
                                                                              dtype=torch.float16)
    bias = torch.randn(N, device=DEV, dtype=torch.float16)
    y = gemmkit.batched_gemm_a16w16(x, w, bias, config=cfg, out_dtype=torch.float32)
    ref = torch.stack([gemm_a16w16_ref(x[b], w[b], bias) for b in range(B)])
    assert rel_entries(y, ref) <= TOL[torch.float32] * 64  # fp32 out: fp32 accumulation order dominates


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("B,M,N,K", [(8, 1024, 1024, 1024), (64, 512, 512, 512), (3, 333, 1000, 784),
                                     (4, 1, 4096, 4096)], ids=str)
def test_a8w8_shapes(B, M, N, K, dtype, launches):
    if dtype == torch.int8:
        x = torch.randint(-128, 128, (B, M, K), device=DEV, dtype=torch.int8)
        w = torch.randint(-128, 128, (B, N, K), device=DEV, dtype=torch.int8)
    else:
        x = (torch.randn(B, M, K, device=DEV) * 8).to(FP8)
        w = (torch.randn(B, N, K, device=DEV) * 8).to(FP8)
    xs, ws = torch.rand(B, M, 1, device=DEV) / 64 + 1e-3, torch.rand(B, 1, N, device=DEV) / 64 + 1e-3
    bias = torch.randn(B, N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((B, M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = sum(launches.values())
    gemmkit.batched_gemm_a8w8(x, w, xs, ws, bias, out=out)
    torch.cuda.synchronize()
    assert sum(launches.values()) == before + 1
    err = rel_entries(out, ref8(x, w, xs, ws, bias))
    assert err <= TOL[torch.bfloat16], f"rel err {err:.3g}"


def test_fp8_accumulation_is_promoted():
    """K = 16384: promoted fp8 sums stay within 2**-12 of float64 (as gemm_a8w8's gpu test)."""
    B, M, N, K = 2, 128, 128, 16384
    x, w = (torch.randn(B, M, K, device=DEV) * 8).to(FP8), (torch.randn(B, N, K, device=DEV) * 8).to(FP8)
    ones_m, ones_n = torch.ones(B, M, 1, device=DEV), torch.ones(B, 1, N, device=DEV)
    y = gemmkit.batched_gemm_a8w8(x, w, ones_m, ones_n, out_dtype=torch.float32)
    err = rel_entries(y, ref8(x, w, ones_m, ones_n))
    assert err <= 2**-12, f"rel err {err:.3g}"


def test_deterministic_and_cuda_graph():
    B, M, N, K = 16, 512, 768, 1024
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16), torch.randn(B, N, K, device=DEV,
                                                                               dtype=torch.bfloat16)
    a, b = gemmkit.batched_gemm_a16w16(x, w), gemmkit.batched_gemm_a16w16(x, w)
    assert torch.equal(a, b)
    out = torch.empty(B, M, N, device=DEV, dtype=torch.bfloat16)
    gemmkit.batched_gemm_a16w16(x, w, out=out)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.batched_gemm_a16w16(x, w, out=out)
    out.fill_(float("nan"))
    x.copy_(torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16))
    g.replay()
    torch.cuda.synchronize()
    assert rel_entries(out, ref16(x, w)) <= TOL[torch.bfloat16]
