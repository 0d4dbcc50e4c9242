"""gemm_split_cat and gemm_a8w8_blockscale_split_cat on the GPU (run on the H200: `pytest -m gpu`).

DeepSeek-V3 kv_b_proj dims (D = 128 heads, S1 = S2 = 128, S3 = 64, K = 512) at decode and prefill M,
through the shipped tables, plus every store of the TMA kernel and the pointer kernel with explicit
configs. Outputs poisoned with NaN; reference: fp32 torch on the GPU (TF32 off; bf16 / fp8 inputs are
exact in fp32), bound: tests/_util.TOL of the output dtype on ||out - ref|| / ||ref||; the y part of
c1 must be y bit for bit.
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import expand_block_scales

from _util import TOL

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn
D, S1, S2, S3, K = 128, 128, 128, 64, 512
N = D * (S1 + S2)


def k_pe(M, dtype=torch.bfloat16):
    return torch.randn(M, 1, S3, device=DEV, dtype=dtype).expand(M, D, S3)


def poisoned(*shape, dtype=torch.bfloat16):
    return torch.full(shape, float("nan"), device=DEV, dtype=dtype)


def check(c1, c2, c_ref, y, out_dtype=torch.bfloat16):
    torch.cuda.synchronize()
    M = c_ref.shape[0]
    c = c_ref.view(M, -1, S1 + S2)
    assert torch.equal(c1[..., S1:], y.to(c1.dtype)), "y part of c1 is not a copy of y"
    got = torch.cat([c1[..., :S1].reshape(-1), c2.reshape(-1)]).double()
    ref = torch.cat([c[..., :S1].reshape(-1), c[..., S1:].reshape(-1)]).double()
    assert torch.isfinite(got).all(), "non-finite output (unwritten element?)"
    err = ((got - ref).norm() / ref.norm()).item()
    assert err <= TOL[out_dtype], f"rel err {err:.3g}"


@pytest.mark.parametrize("M", [1, 17, 64, 128, 1000, 4096, 8192])
def test_kv_b_proj_bf16(M, launches):
    x, w, y = (torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16),
               k_pe(M))
    c1, c2 = poisoned(M, D, S1 + S3), poisoned(M, D, S2)
    before = sum(launches.values())
    gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2))
    assert sum(launches.values()) == before + 1
    check(c1, c2, x.float() @ w.float().T, y)


def test_kv_b_proj_fp16_bias_fresh_outputs():
    M = 333
    x, w = torch.randn(M, K, device=DEV, dtype=torch.float16), torch.randn(N, K, device=DEV, dtype=torch.float16)
    bias, y = torch.randn(N, device=DEV, dtype=torch.float16), k_pe(M, torch.float16)
    c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, bias)
    assert c1.is_contiguous() and c2.is_contiguous()
    check(c1, c2, x.float() @ w.float().T + bias.float(), y, torch.float16)


CONFIGS = {  # each store of both kernels at the DeepSeek split
    "pointer": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                "num_stages": 3},
    "pointer_persistent_n64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                               "num_warps": 4, "num_stages": 3, "persistent": True},
    "tma_part": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                 "num_stages": 3, "tma": True, "persistent": True},
    "tma_head": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                 "num_stages": 3, "tma": True},
}


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("out_layout", ["fresh", "flat_views", "strided"])
def test_stores(name, out_layout):
    M = 1000
    x, w, y = (torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16),
               k_pe(M))
    if out_layout == "fresh":
        c1, c2 = poisoned(M, D, S1 + S3), poisoned(M, D, S2)
    elif out_layout == "flat_views":  # one buffer, c1 then c2 (the bench's layout; TMA stores still apply)
        buf = poisoned(M * D * (S1 + S3 + S2))
        c1, c2 = buf[:M * D * (S1 + S3)].view(M, D, S1 + S3), buf[M * D * (S1 + S3):].view(M, D, S2)
    else:  # rows interleaved in one (M, D, S1 + S3 + S2) buffer: no 2-D view, pointer stores
        buf = poisoned(M, D, S1 + S3 + S2)
        c1, c2 = buf[..., :S1 + S3], buf[..., S1 + S3:]
    gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=CONFIGS[name])
    check(c1, c2, x.float() @ w.float().T, y)


def bs_inputs(M):
    x = (torch.randn(M, K, device=DEV) * 8).to(FP8)
    w = (torch.randn(N, K, device=DEV) * 8).to(FP8)
    xs = torch.rand(M, K // 128, device=DEV) / 64 + 1e-3
    ws = torch.rand(N // 128, K // 128, device=DEV) / 64 + 1e-3
    return x, w, xs, ws


def bs_ref(x, w, xs, ws):
    xd = x.float() * expand_block_scales(xs, (1, 128), x.shape)
    wd = w.float() * expand_block_scales(ws, (128, 128), w.shape)
    return xd @ wd.T


@pytest.mark.parametrize("M", [1, 64, 128, 1000, 4096])
def test_kv_b_proj_fp8_blockscale(M, launches):
    x, w, xs, ws = bs_inputs(M)
    y = k_pe(M)
    c1, c2 = poisoned(M, D, S1 + S3), poisoned(M, D, S2)
    before = sum(launches.values())
    gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2, out=(c1, c2))
    assert sum(launches.values()) == before + 1
    check(c1, c2, bs_ref(x, w, xs, ws), y)


@pytest.mark.parametrize("name", ["pointer", "tma_head"])
def test_fp8_stores(name):
    M = 300
    x, w, xs, ws = bs_inputs(M)
    y = k_pe(M)
    cfg = dict(CONFIGS[name], BLOCK_SIZE_K=128)
    c1, c2 = gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2, config=cfg)
    check(c1, c2, bs_ref(x, w, xs, ws), y)


def test_matches_torch_split_cat():
    """Same values as the torch expression the bench times (up to rounding of c)."""
    M = 256
    x, w, y = (torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16),
               k_pe(M))
    c = torch.matmul(x, w.T).view(M, D, S1 + S2)
    t1, t2 = torch.cat([c[..., :S1], y], -1), c[..., S1:]
    c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2)
    assert torch.equal(c1[..., S1:], t1[..., S1:])
    assert ((c1.float() - t1.float()).norm() / t1.float().norm()).item() < 2**-8
    assert ((c2.float() - t2.float()).norm() / t2.float().norm()).item() < 2**-8


@pytest.mark.parametrize("name", ["table", "tma_part", "tma_head"])
@pytest.mark.parametrize("M", [1, 300])
def test_no_y(name, M):
    """S3 = 0 (c1 = c[..., :S1]) on the TMA kernel: the "tma_part" store with nothing after it in the loop
    body did not compile on sm_90 before the kernel's FLATTEN (session 5)."""
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    y = torch.empty(M, D, 0, device=DEV, dtype=torch.bfloat16)
    c1, c2 = poisoned(M, D, S1), poisoned(M, D, S2)
    gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=None if name == "table" else CONFIGS[name])
    check(c1, c2, x.float() @ w.float().T, y)
