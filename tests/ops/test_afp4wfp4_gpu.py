"""gemm_afp4wfp4 (OCP MXFP4) on the GPU (run on the H200: `pytest -m gpu`). On sm_90 tl.dot_scaled
is emulated by Triton (codes decoded and scaled to bf16, then bf16 tensor cores).

Reference: the float64 product, on the GPU, of the operands dequantized by the torch reference
(quant.dequantize_mxfp4_ref). E2M1 x 2^e values are exact in bf16, fp32 and float64, so the bounds are
the output rounding plus the fp32 accumulation: norm-wise (tests/_util.TOL) and every element
(`_util.within_every_element`).
These tests also pin what only the hardware path can show: the nibble order tl.dot_scaled really
uses (hand-packed bytes) and how an E8M0 NaN byte comes out.
"""
import pytest
import torch

import gemmkit
import gemmkit.quant as Q

from _util import TOL, within_every_element

pytestmark = pytest.mark.gpu
DEV = "cuda"
SMALL = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "num_warps": 4,
         "num_stages": 3}


def mx(rows, K, kind="quantized"):
    if kind == "quantized":
        return Q.quantize_mxfp4(torch.randn(rows, K, device=DEV, dtype=torch.bfloat16) * 3)
    return (torch.randint(0, 256, (rows, K // 2), device=DEV, dtype=torch.uint8),
            torch.randint(118, 137, (rows, K // 32), device=DEV, dtype=torch.uint8))


def reference(xq, wq, xs, ws):
    return Q.dequantize_mxfp4_ref(xq, xs).double() @ Q.dequantize_mxfp4_ref(wq, ws).double().T


def check(y, xq, wq, xs, ws, tol=None):
    """y against `reference`: ||y - ref|| / ||ref|| within `tol` (default TOL of y's dtype), every element within
    its own bound (`within_every_element`, K long dot products)."""
    ref = reference(xq, wq, xs, ws)
    ok, msg = within_every_element(y, ref, y.dtype, 2 * xq.shape[1])
    assert ok, msg
    err = ((y.double() - ref).norm() / ref.norm()).item()
    assert err <= (TOL[y.dtype] if tol is None else tol), f"rel err {err:.3g}"


SHAPES = [(4096, 4096, 4096), (1, 8192, 8192), (16, 10240, 8192), (1024, 8192, 28672), (8192, 8192, 8192),
          (4095, 4097, 1056), (333, 1000, 800), (17, 31, 64), (5, 3, 32)]


@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, launches):
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K, "bytes" if N % 2 else "quantized")
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = launches["gemm_afp4wfp4_kernel"]
    gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out)
    torch.cuda.synchronize()
    assert launches["gemm_afp4wfp4_kernel"] == before + 1
    check(out, xq, wq, xs, ws)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_out_dtypes(out_dtype):
    M, N, K = 300, 500, 1024
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=out_dtype)
    assert y.dtype == out_dtype and y.shape == (M, N)
    check(y, xq, wq, xs, ws, 1e-5 if out_dtype == torch.float32 else None)


PATHS = {"split_k": dict(SMALL, NUM_KSPLIT=4), "persistent": dict(SMALL, persistent=True),
         "k_tail": dict(SMALL, BLOCK_SIZE_K=256), "mma_sync": dict(SMALL, BLOCK_SIZE_M=16, num_warps=4)}


@pytest.mark.parametrize("path", list(PATHS))
def test_config_paths(path):
    M, N, K = 70, 384, 2080  # K = 8.125 steps of 256: a masked tail
    (xq, xs), (wq, ws) = mx(M, K, "bytes"), mx(N, K)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.float32)
    gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out, config=PATHS[path])
    check(out, xq, wq, xs, ws, 1e-5)


def test_nibble_order_on_the_hardware():
    """tl.dot_scaled reads element 2i from the LOW nibble: hand-packed x, a selector w (y[0, n] = x[0, n])."""
    K = 64
    x = torch.zeros(1, K // 2, dtype=torch.uint8)
    x[0, 0], x[0, 1], x[0, 2], x[0, 16] = 0x2F, 0x71, 0xC3, 0x0B
    xs = torch.tensor([[128, 126]], dtype=torch.uint8)
    codes = torch.zeros(K, K, dtype=torch.uint8)
    codes[torch.arange(K), torch.arange(K)] = 0x2
    wq = codes[:, 0::2] | (codes[:, 1::2] << 4)
    ws = torch.full((K, K // 32), 127, dtype=torch.uint8)
    y = gemmkit.gemm_afp4wfp4(x.to(DEV), wq.to(DEV), xs.to(DEV), ws.to(DEV), out_dtype=torch.float32).cpu()
    assert y[0, :6].tolist() == [-12.0, 2.0, 1.0, 12.0, 3.0, -4.0]
    assert y[0, 32:34].tolist() == [-0.75, 0.0]
    assert (y[0, 6:32] == 0).all() and (y[0, 34:] == 0).all()


def test_nan_scale_row():
    M, N, K = 64, 128, 256
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    xs[5, 1] = 255  # E8M0 NaN
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=torch.float32)
    print(f"E8M0 255 in x_scale row 5: nan {int(torch.isnan(y[5]).sum())}, inf {int(torch.isinf(y[5]).sum())} of {N}")
    assert not torch.isfinite(y[5]).any()
    assert torch.isfinite(y[torch.arange(M, device=DEV) != 5]).all()


def test_deterministic():
    M, N, K = 1000, 3000, 4096
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    assert torch.equal(gemmkit.gemm_afp4wfp4(xq, wq, xs, ws), gemmkit.gemm_afp4wfp4(xq, wq, xs, ws))


def test_cuda_graph_capture():
    M, N, K = 64, 4096, 4096
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    out = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
    gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out)  # compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out)
    out.fill_(float("nan"))
    xq2, xs2 = mx(M, K)
    xq.copy_(xq2)
    xs.copy_(xs2)
    g.replay()
    torch.cuda.synchronize()
    check(out, xq, wq, xs, ws)


def test_torch_compile():
    (xq, xs), (wq, ws) = mx(48, 512), mx(256, 512)
    f = torch.compile(lambda a, b, c, d: gemmkit.gemm_afp4wfp4(a, b, c, d, out_dtype=torch.float32) + 1,
                      fullgraph=True, backend="aot_eager")
    check(f(xq, wq, xs, ws) - 1, xq, wq, xs, ws, 1e-5)
