"""Swap-AB in the Gluon ping-pong and cooperative kernels on the H200 (`pytest -m gpu tests/kernels/test_gluon_swap_ab.py`).

A "swap_ab": true config names y's BLOCK_SIZE_M x BLOCK_SIZE_N tile as every config does; the kernel computes it
transposed (weight rows as the wgmma's M, tokens as its N), adds the bias per weight row and stores the tile
transposed (kernels/gluon/hopper_pingpong.py, "Swap-AB"). Through the kernel's `launch` and through gemm_a16w16:
token counts below, at and above the token tile (several token tiles), ragged weight rows, K tails, bias /
activation / output dtypes, fp16, small persistent grids (many tiles a CTA, both consumers), a CUDA graph, the
Triton fallback of the same config. The cooperative kernel's swapped split tile (num_warps 8: 128 weight rows x a split
width of tokens, kernels/gluon/hopper_coop.py "Swap-AB") the same way. Reference: float64 on the CPU; outputs
poisoned with NaN, every element checked.
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a16w16_ref

from _util import check_a16w16 as check
from _util import (assert_sanitizer_clean, check_a16w16_graph_replays, dense_sanitize_script, launch_dense, poisoned,
                   randn, sanitize, within_bound)

pytestmark = pytest.mark.gpu
DEV = "cuda"

SW = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
      "num_stages": 8, "swap_ab": True}
CFGS = {
    "t16w64k128": SW,
    "t32w128k64": {**SW, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "num_stages": 6},
    "t64w128k128-g4": {**SW, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "num_stages": 6, "GROUP_SIZE_M": 4},
    "t64w128k64": {**SW, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64},  # a shipped bucket's tile
    "t64w64k128": {**SW, "BLOCK_SIZE_M": 64, "num_stages": 6},  # the default table's M <= 64 bucket
}

# (M, N, K): one token, a partial token tile, exactly one, one past it, several tiles; weight rows not a multiple
# of the tile (264, 1000); K with a tail step (200, 1000) and of one step (64); a decode-sized long-K row.
SHAPES = [(1, 4096, 1024), (7, 264, 200), (16, 1000, 520), (17, 392, 1000), (100, 136, 64), (300, 1024, 2056),
          (64, 4096, 14336)]


def run(name, x, w, bias=None, act="none", out_dtype=None, cus=None):
    from gemmkit.kernels.gluon import hopper_pingpong

    return launch_dense(hopper_pingpong, x, w, bias, act, out_dtype, CFGS[name], cus)


@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, name):
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    check(run(name, x, w), x, w)


@pytest.mark.parametrize("act,out_dtype", [("gelu", torch.bfloat16), ("silu", torch.float16), ("none", torch.float32)],
                         ids=["gelu-bf16", "silu-fp16", "none-fp32"])
@pytest.mark.parametrize("name", ["t16w64k128", "t32w128k64"])
def test_bias_activation_out_dtype(act, out_dtype, name):
    """The bias goes along the accumulator's rows (weight rows): a transposed bias would fail here."""
    M, N, K = 33, 392, 520
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    b = randn(N, dtype=torch.bfloat16, device=DEV) * 4
    y = run(name, x, w, b, act, out_dtype)
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


def test_fp16_inputs():
    M, N, K = 20, 1000, 1000
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    b = randn(N, dtype=torch.float16, device=DEV)
    check(run("t16w64k128", x, w, b, "gelu"), x, w, b, "gelu")


@pytest.mark.parametrize("cus", [1, 3, 7])
@pytest.mark.parametrize("name", ["t16w64k128", "t64w128k128-g4"])
def test_small_persistent_grids(cus, name):
    """Many tiles a CTA: the two consumers alternate over tiles of both token tiles and many weight tiles."""
    M, N, K = 100, 1000, 1000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    check(run(name, x, w, b, "silu", cus=cus), x, w, b, "silu")


def test_op_runs_the_swapped_kernel_and_its_fallback():
    """gemm_a16w16 with the config: the Gluon ping-pong once; with an output whose rows are not 16-byte multiples (no
    TMA store) the Triton tier runs the same BLOCK_SIZE_M x BLOCK_SIZE_N tile unswapped, and both are right."""
    from gemmkit.ops import _common as C

    M, N, K = 5, 4096, 2048
    x, w, b = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
               randn(N, dtype=torch.bfloat16, device=DEV))
    cfg = {**SW, "backend": "gluon"}
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_pingpong_kernel"] == before.get("hopper_pingpong_kernel", 0) + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg,
                            out=poisoned((M, N + 1), torch.bfloat16, DEV)[:, :N])  # rows of 2 (N + 1) bytes
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_pingpong_kernel"] == before.get("hopper_pingpong_kernel", 0)
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg


def test_op_in_a_cuda_graph():
    check_a16w16_graph_replays(3, 1024, 4096, {**SW, "backend": "gluon"})


# A weight passed as W.t() ((K, N) storage, unit stride along N; every N of SHAPES keeps its rows on 16 bytes): the
# kernel reads it where it lies (X_KM: BK x BM boxes of the storage, wgmma's MN-major A), its last weight tile shifted
# back along the storage's rows.
@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_transposed_w(M, N, K, name):
    """Every element right, and bitwise the result on the weight's contiguous copy (the same products summed in the
    same order)."""
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(K, N, dtype=torch.bfloat16, device=DEV).t()
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    y = run(name, x, w, b, "silu")
    check(y, x, w, b, "silu")
    assert torch.equal(y, run(name, x, w.contiguous(), b, "silu"))


@pytest.mark.parametrize("N", [8, 40, 72])
@pytest.mark.parametrize("name", ["t16w64k128", "t32w128k64"])
def test_transposed_w_narrow(N, name):
    """Fewer weight rows than one tile (N = 8: the storage's 16-byte rows at their least): TMA zero-fills the box's
    columns past N in the (K, N) storage, and nothing is copied (dispatch pads only a w of rows along K)."""
    M, K = 5, 1000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(K, N, dtype=torch.bfloat16, device=DEV).t()
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    y = run(name, x, w, b, "gelu")
    check(y, x, w, b, "gelu")
    assert torch.equal(y, run(name, x, w.contiguous(), b, "gelu"))


@pytest.mark.parametrize("w_t", [False, True], ids=["w", "w_t"])
@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
def test_compute_sanitizer(tool, w_t):
    """No illegal barrier use, no bad accesses: the transposed store's clipped token rows, ragged weight rows; `w_t`:
    the weight read from its (K, N) storage."""
    script = dense_sanitize_script("hopper_pingpong", [CFGS["t16w64k128"], CFGS["t32w128k64"]],
                                   [(3, (7, 264, 1000)), (12, (40, 392, 520))], w_t=w_t)
    out = sanitize(tool, script)
    assert_sanitizer_clean(out)


# The cooperative kernel's swapped split tile: tokens in a split width A + B (two accumulators, A / B + 1 pieces a
# consumer, each transposed into its own B x 64 staging sub-tile or one shared)
CS = {"BLOCK_SIZE_M": 144, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
      "num_stages": 6, "swap_ab": True}
COOP_CFGS = {
    "t144w128": CS,  # 128 + 16: nine pieces
    "t160w128-g1": {**CS, "BLOCK_SIZE_M": 160, "GROUP_SIZE_M": 1},  # 128 + 32
    "t192w128k128": {**CS, "BLOCK_SIZE_M": 192, "BLOCK_SIZE_K": 128, "num_stages": 3},  # 128 + 64, one staging piece
    "t96w128": {**CS, "BLOCK_SIZE_M": 96},  # 64 + 32
    "t80w128": {**CS, "BLOCK_SIZE_M": 80},  # 64 + 16
    "t48w128": {**CS, "BLOCK_SIZE_M": 48},  # 32 + 16
    # 256 weight rows (128 a consumer: two m64 slices), up to SWAP_TALL_ACC_REGS accumulators
    "t144w256": {**CS, "BLOCK_SIZE_N": 256, "num_stages": 4},
    "t160w256-g1": {**CS, "BLOCK_SIZE_M": 160, "BLOCK_SIZE_N": 256, "num_stages": 4, "GROUP_SIZE_M": 1},
    "t96w256k128": {**CS, "BLOCK_SIZE_M": 96, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "num_stages": 3},
}
# one token; under one token tile with its last pieces past M (138 of 144, 129: the B box past M); exactly one tile;
# one past it (two token tiles, the last shifted back); several; ragged weight rows, K tails
COOP_SHAPES = [(1, 1024, 256), (138, 1000, 520), (129, 392, 1000), (144, 256, 64), (145, 264, 200), (300, 1024, 2056),
               (700, 136, 1000)]


def run_coop(name, x, w, bias=None, act="none", out_dtype=None, cus=None):
    from gemmkit.kernels.gluon import hopper_coop

    return launch_dense(hopper_coop, x, w, bias, act, out_dtype, COOP_CFGS[name], cus)


@pytest.mark.parametrize("name", list(COOP_CFGS))
@pytest.mark.parametrize("M,N,K", COOP_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in COOP_SHAPES])
def test_coop_shapes(M, N, K, name):
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    check(run_coop(name, x, w), x, w)


@pytest.mark.parametrize("act,out_dtype", [("gelu", torch.bfloat16), ("silu", torch.float16), ("none", torch.float32)],
                         ids=["gelu-bf16", "silu-fp16", "none-fp32"])
@pytest.mark.parametrize("name", ["t144w128", "t96w128", "t192w128k128", "t160w256-g1"])
def test_coop_bias_activation_out_dtype(act, out_dtype, name):
    """The bias per weight row (y's columns) in every piece; fp32 out stages each piece at twice the bytes."""
    M, N, K = 150, 392, 520
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    b = randn(N, dtype=torch.bfloat16, device=DEV) * 4
    y = run_coop(name, x, w, b, act, out_dtype)
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


@pytest.mark.parametrize("cus", [1, 5])
def test_coop_small_persistent_grids(cus):
    """Many tiles a CTA: weight tiles of two token tiles each, the staging reused across them."""
    M, N, K = 200, 1000, 1000
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    b = randn(N, dtype=torch.float16, device=DEV)
    check(run_coop("t144w128", x, w, b, "silu", cus=cus), x, w, b, "silu")


def test_coop_op_runs_the_swapped_kernel():
    """gemm_a16w16 with the config: the cooperative kernel once; with an output whose rows are not 16-byte multiples
    (no TMA store: ops/dispatch.py runs the kernel into a workspace, or the Triton tier its power-of-two part
    unswapped, kernels/triton/dense.triton_tile) the result is right too."""
    from gemmkit.ops import _common as C

    M, N, K = 140, 2048, 1024
    x, w, b = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
               randn(N, dtype=torch.bfloat16, device=DEV))
    cfg = {**CS, "backend": "gluon"}
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_coop_kernel"] == before.get("hopper_coop_kernel", 0) + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg,
                            out=poisoned((M, N + 1), torch.bfloat16, DEV)[:, :N])
    torch.cuda.synchronize()
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg


def test_coop_op_in_a_cuda_graph():
    check_a16w16_graph_replays(3, 150, 4096, {**CS, "backend": "gluon"})


@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
def test_coop_compute_sanitizer(tool):
    """The swapped pieces' stores clipped at M, token boxes past M, ragged weight rows."""
    script = dense_sanitize_script("hopper_coop", [COOP_CFGS["t144w128"], COOP_CFGS["t96w128"], COOP_CFGS["t144w256"]],
                                   [(3, (138, 264, 1000)), (12, (145, 392, 520))])
    out = sanitize(tool, script)
    assert_sanitizer_clean(out)


@pytest.mark.parametrize("M,N,K", [(140, 16384, 1024), (150, 16000, 640), (478, 3328, 7680), (929, 1168, 3584),
                                   (5185, 480, 10192), (4243, 256, 768), (395, 5920, 1944), (3198, 808, 672),
                                   (1835, 1184, 11696), (403, 6576, 16912), (521, 8448, 15344),
                                   (420, 9952, 12432)])
def test_coop_served_by_the_config_model(M, N, K):
    """A shape the config model's `coop_swap` (one token tile), `swap_rounds` (several; past M = 1536 at a narrow N),
    `tall_swap` (256 weight rows x 96 / 144 tokens; over the 128 x 128 at 420 x 9952) or `coop_one_wave` /
    `coop_widths_area` (the unswapped split tile, 128 x 192 past N = 808 on 40 columns) serves (no config=): the
    cooperative kernel runs it, bias and gelu per weight row, every element right."""
    from gemmkit.ops import _common as C

    x, w, b = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
               randn(N, dtype=torch.bfloat16, device=DEV))
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, b, activation="gelu", out=poisoned((M, N), torch.bfloat16, DEV))
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_coop_kernel"] == before.get("hopper_coop_kernel", 0) + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "gelu"), torch.bfloat16)
    assert ok, msg
