"""gemm_a8w8 and gemm_a8w8_blockscale on the GPU (run on the H200: `pytest -m gpu`).

Every output is checked against the float64 reference computed on the GPU (`_util.check_8bit`): norm-wise (bf16
rounding of y, 2**-9 per element, `_util.TOL` allows 2x) and every element within its rounding plus the
accumulation's part, a share of its sum of magnitudes (int8 exact in int32, fp8's tensor cores keeping ~14 bits
inside one promoted K block of 128 products: kernels/triton/_mainloop.py). The precision test shows what the
promotion buys against Triton's default on sm_90.
"""
import pytest
import torch

import gemmkit
from gemmkit import arch, configs
from gemmkit.ops import dispatch as D

from _util import check_8bit, dispatch_copies, fp8_rows_with_nan_gaps

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn


def q8(*shape, dtype):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, device=DEV, dtype=torch.int8)
    return (torch.randn(*shape, device=DEV) * 8).to(dtype)


SHAPES = [(8192, 8192, 8192), (4095, 4097, 1008), (1, 8192, 8192), (16, 10240, 8192), (128, 57344, 8192),
          (17, 31, 48), (333, 1000, 784), (4096, 4096, 4096), (64, 7168, 2048),
          (1000, 1024, 4096), (4096, 128, 2880), (724, 1152, 16928), (451, 320, 26400), (256, 576, 7168),
          (200, 1024, 4096), (300, 1001, 1000)]
# (1000, 1024, 4096), (4096, 128, 2880): few tiles above M = 256, the 64 x 64 ping-pong (fp8); (724, ...), (451, ...):
# the same on long K, the Triton tier's 128 x 128 split along K (fp8 `large_few_split_k`); the last two: few tiles at
# 128 < M <= 256 (fp8 `m256_split`), the Triton tier's 64 x 64 split along K, and the 64 x 64 ping-pong; (300, 1001,
# 1000): y's rows and K's off 16 bytes, x and w copied, y through its workspace (ops/dispatch.py `_y_workspace`)


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_a8w8_shapes(M, N, K, dtype, launches):
    x, w = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype)
    xs, ws = torch.rand(M, 1, device=DEV) / 64 + 1e-3, torch.rand(1, N, device=DEV) / 64 + 1e-3
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before, tail_before, pad_before = sum(launches.values()), launches["tail_reduce_kernel"], launches["pad_rows_kernel"]
    split_before = launches["splitk_reduce_kernel"]
    gemmkit.gemm_a8w8(x, w, xs, ws, bias, out=out)
    torch.cuda.synchronize()
    # one GEMM launch, plus the coop Gluon kernel's tail reduce where it splits its last round (8192³ on 132 SMs), plus
    # the dispatch's copies (x to whole TMA boxes of rows, x and w to 16-byte rows, y out of its workspace where N % 8
    # != 0: ops/dispatch.py), plus the split-K reduce exactly where the served config splits K (int8's few tiles:
    # the Triton tier)
    tails, pads = launches["tail_reduce_kernel"] - tail_before, launches["pad_rows_kernel"] - pad_before
    splits = launches["splitk_reduce_kernel"] - split_before
    table_op = "a8w8_int8" if dtype == torch.int8 else "a8w8"
    cfg = configs.serve(table_op, arch.current(), M, N, K)[0]
    assert splits == (cfg.get("NUM_KSPLIT", 1) > 1)
    assert pads == dispatch_copies(D.for_shape(table_op, cfg, arch.current(), M, N, K))
    assert sum(launches.values()) - tails - pads - splits == before + 1 and tails in (0, 1)
    if (M, N, K, dtype) == (8192, 8192, 8192, FP8) and arch.current().num_cus == 132:
        assert tails == 1
    check_8bit(out, x, w, xs, ws, bias)


ROWS_SHAPES = [(1, 4096, 4095), (16, 4096, 4095), (5, 1536, 7001), (8, 14336, 4097), (3, 40, 75), (17, 4096, 4095),
               (64, 6144, 7001), (100, 14336, 4095), (256, 28672, 8191)]


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M,N,K", ROWS_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in ROWS_SHAPES])
def test_rows_kernels_8bit(M, N, K, dtype, launches):
    """K % 16 != 0 (ops/dispatch.py): w read where it lies, no copy, by gemm_rows_tma (16 classes, x's 16 shifted
    copies; swapped, unswapped, split) from 2 tokens where it takes the call, else gemm_rows; the scales on each
    partial or in the epilogue; w a view of wider rows whose gaps hold NaN (fp8; int8 has none), a bias; every element
    against float64."""
    x = q8(M, K, dtype=dtype)
    w = fp8_rows_with_nan_gaps(N, K, 3, device=DEV) if dtype == FP8 else q8(N, K + 3, dtype=dtype)[:, :K]
    xs, ws = torch.rand(M, 1, device=DEV) / 64 + 1e-3, torch.rand(1, N, device=DEV) / 64 + 1e-3
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    torch.full((1 << 26,), float("nan"), device=DEV)  # NaN in the allocator's free blocks (x's copies, partials)
    before = dict(launches)
    gemmkit.gemm_a8w8(x, w, xs, ws, bias, out=out)
    torch.cuda.synchronize()
    ran = {k for k, v in launches.items() if v != before.get(k, 0)}
    table_op = "a8w8_int8" if dtype == torch.int8 else "a8w8"
    choice = D.for_shape(table_op, configs.serve(table_op, arch.current(), M, N, K)[0], arch.current(), M, N, K)
    assert choice.kernel in (D.TRITON_ROWS, D.TRITON_ROWS_TMA) and choice.kernel in ran, (choice.kernel, ran)
    assert "pad_rows_kernel" not in ran, ran
    check_8bit(out, x, w, xs, ws, bias)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_a8w8_out_dtypes(out_dtype):
    M, N, K = 300, 500, 1024
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = torch.rand(M, device=DEV) / 64 + 1e-3, torch.rand(N, device=DEV) / 64 + 1e-3
    y = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=out_dtype)
    assert y.dtype == out_dtype
    check_8bit(y, x, w, xs, ws, norm_tol=2**-12 if out_dtype == torch.float32 else None)  # fp32 out: the fp8
    # accumulation's error dominates the norm


def test_fp8_accumulation_is_promoted():
    """Long K: the promoted accumulator stays near fp32 accuracy (2**-12 bound). Triton's sm_90
    default (no promotion) measured 2.05e-3 at 8192³ (docs/PERF.md, gemm_a8w8 precision), so the
    bound fails if promotion is lost."""
    M, N, K = 256, 256, 16384
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    ones_m, ones_n = torch.ones(M, 1, device=DEV), torch.ones(1, N, device=DEV)
    y = gemmkit.gemm_a8w8(x, w, ones_m, ones_n, out_dtype=torch.float32)
    # unpromoted wgmma sums lose ~1e-2 norm-wise here
    share = check_8bit(y, x, w, ones_m, ones_n, norm_tol=2**-12)
    print(f"fp8 K={K}: worst accumulation share {share:.3g}")


def test_int8_exact():
    M, N, K = 64, 64, 4096
    x, w = q8(M, K, dtype=torch.int8), q8(N, K, dtype=torch.int8)
    y = gemmkit.gemm_a8w8(x, w, torch.ones(M, 1, device=DEV), torch.ones(1, N, device=DEV), out_dtype=torch.float32)
    exact = (x.cpu().long() @ w.cpu().long().T).double()
    assert (y.double().cpu() - exact).abs().max().item() <= exact.abs().max().item() * 2**-24 * 2


def test_a8w8_deterministic():
    M, N, K = 1000, 3000, 4096
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = torch.rand(M, 1, device=DEV), torch.rand(1, N, device=DEV)
    a = gemmkit.gemm_a8w8(x, w, xs, ws)
    b = gemmkit.gemm_a8w8(x, w, xs, ws)
    assert torch.equal(a, b)


# DeepSeek-V3 dense block-scale shapes (N, K) of the issue, plus edges.
BS_SHAPES = [(4096, 2112, 7168), (4096, 24576, 1536), (4096, 32768, 512), (128, 7168, 16384), (64, 4096, 7168),
             (64, 7168, 2048), (1, 2112, 7168), (333, 1000, 1000), (17, 130, 300), (1000, 1024, 4096), (2048, 128, 2880),
             # the config model's `decode_wide_k` tile (16 x 128 x 256: two scale-block boxes a step, scales loaded a
             # box ahead); K = 4160 ends in a half box and a box past K (its scales clamped to the last block's)
             (8, 28672, 4096), (3, 28672, 4160),
             # `decode_pingpong_wide`: the Gluon ping-pong at M = 13-16 on 4.5-10.5 tiles an SM (x in boxes of its rows;
             # K = 1152 ends in a partial scale box of 4)
             (13, 40000, 1152), (16, 51200, 5120),
             # y's rows and K's off 16 bytes: x and w copied, y through its workspace (ops/dispatch.py `_y_workspace`)
             (300, 1001, 1000)]


@pytest.mark.parametrize("M,N,K", BS_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in BS_SHAPES])
def test_blockscale_shapes(M, N, K):
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs = torch.rand(M, -(-K // 128), device=DEV) / 64 + 1e-3
    ws = torch.rand(-(-N // 128), -(-K // 128), device=DEV) / 64 + 1e-3
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out)
    check_8bit(out, x, w, xs, ws, block=(128, 128))


def test_cuda_graph_capture():
    M, N, K = 64, 4096, 4096
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = torch.rand(M, 1, device=DEV), torch.rand(1, N, device=DEV)
    out = torch.empty(M, N, device=DEV, dtype=torch.bfloat16)
    gemmkit.gemm_a8w8(x, w, xs, ws, out=out)  # compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_a8w8(x, w, xs, ws, out=out)
    out.fill_(float("nan"))
    x.copy_(q8(M, K, dtype=FP8))
    g.replay()
    torch.cuda.synchronize()
    check_8bit(out, x, w, xs, ws)


# x copied to whole TMA boxes of rows (ops/dispatch.py pad_m): each Gluon layout and mode on an M that leaves its last
# row of tiles mostly past M, the copy's zero rows computed and dropped; every element checked against the reference.
# Under one row of tiles (M < BLOCK_SIZE_M) the Gluon kernel loads boxes of only x's rows instead (kernels/_host.x_boxes:
# M = 17 three boxes of 8 rows, M = 80 on the coop 128 five of 16), no copy.
ROW_PAD_CONFIGS = {
    "pingpong_64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 4, "num_warps": 4,
                    "num_stages": 6, "backend": "gluon"},
    "coop_128": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16, "num_warps": 8,
                 "num_stages": 6, "backend": "gluon"},
    "triton_64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                  "num_stages": 4, "tma": True},
}


@pytest.mark.parametrize("block", [False, True], ids=["rowcol", "block"])
@pytest.mark.parametrize("name", list(ROW_PAD_CONFIGS))
@pytest.mark.parametrize("M", [17, 80, 200])
def test_row_padded_x(M, name, block, launches):
    from gemmkit.ops import dispatch as D

    N, K = 8192, 8192
    cfg = ROW_PAD_CONFIGS[name]
    copy = name == "triton_64" or M > cfg["BLOCK_SIZE_M"]
    assert bool(D.pad_m(D.TRITON_TMA if name == "triton_64" else D.GLUON_FP8, cfg, M, N, K, 1, 1)) == copy
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = launches["pad_rows_kernel"]
    if block:
        xs = (torch.rand(K // 128, M, device=DEV) / 64 + 1e-3).t()  # M-major
        ws = torch.rand(N // 128, K // 128, device=DEV) / 64 + 1e-3
        gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out, config=cfg)
        bias = None
    else:
        xs, ws = torch.rand(M, 1, device=DEV) / 64 + 1e-3, torch.rand(1, N, device=DEV) / 64 + 1e-3
        bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
        gemmkit.gemm_a8w8(x, w, xs, ws, bias, out=out, config=cfg)
    torch.cuda.synchronize()
    assert launches["pad_rows_kernel"] == before + copy
    check_8bit(out, x, w, xs, ws, bias, block=(128, 128) if block else None)

