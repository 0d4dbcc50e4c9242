"""The Gluon ping-pong's gated tile on the H200 (`pytest -m gpu tests/kernels/test_gluon_gated.py`).

h = act(x @ w[:I].T) * (x @ w[I:].T) through kernels/gluon/hopper_pingpong.py `launch_gated` (the ping-pong with GATED:
the gate's and the up's boxes of one tile of h's columns a ring stage, two accumulators, act(g) * u in the epilogue; the
module docstring's "Gated") and hopper_coop.py's (num_warps 8: the two consumers share the tile, 64 rows of it each).
The ops serve the coop 128 x 128 where configs/model/gated.py's `gated_one_wave` names it (tests/ops/test_ffn_gpu.py
runs that path). Shapes: one token, a partial tile, several tiles with the last row / column shifted back, I under one
tile (the gate box then reads up rows, clipped), K with a tail step; every activation, bf16 / fp16 / fp32 h, fp16
inputs, small persistent grids (many tiles a CTA, both consumers). Reference: float64; outputs poisoned with NaN, every
element checked (`_util.check_gated`).
"""
import pytest
import torch

from _util import assert_sanitizer_clean, check_gated, gpu_target, poisoned, randn, sanitize

pytestmark = pytest.mark.gpu
DEV = "cuda"

GT = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
      "num_stages": 4}
CFGS = {
    "64x128": GT,  # the Triton tier's M <= 256 gated bucket's tile
    "128x64-g1": {**GT, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 1},
    "64x64k128": {**GT, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "num_stages": 5},
    # the cooperative kernel's (num_warps 8: both consumers on one tile, 64 rows each): the M <= 4095 bucket's tile
    "coop128x128": {**GT, "BLOCK_SIZE_M": 128, "num_warps": 8},
    "coop128x64-g1": {**GT, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 1, "num_warps": 8,
                      "num_stages": 6},
}
# (M, I, K): one token; a partial row of tiles; several rows and columns, the last shifted back (I = 1000); I under
# one tile (40: the gate box reads up rows, whose products are clipped); K with a tail step (200, 1000), one step (64)
SHAPES = [(1, 4096, 1024), (7, 264, 200), (100, 1000, 520), (300, 40, 1000), (257, 1536, 64), (1024, 2048, 2048)]


def run(name, x, w, activation="silu", out_dtype=None, cus=None):
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong

    cfg = CFGS[name]
    y = poisoned((x.shape[0], w.shape[0] // 2), out_dtype or x.dtype, DEV)
    (hopper_coop if cfg["num_warps"] == 8 else hopper_pingpong).launch_gated(x, w, y, activation, cfg,
                                                                                gpu_target(cus))
    torch.cuda.synchronize()
    return y


def check(y, x, w, activation="silu"):
    check_gated(y, x, w, activation)


@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("M,I,K", SHAPES, ids=[f"{m}x{i}x{k}" for m, i, k in SHAPES])
def test_gated_shapes(M, I, K, name):
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(2 * I, K, dtype=torch.bfloat16, device=DEV)
    check(run(name, x, w), x, w)


@pytest.mark.parametrize("name", ["64x128", "coop128x128"])
@pytest.mark.parametrize("activation", ["silu", "gelu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=["bf16", "fp16", "fp32"])
def test_gated_activations_and_out_dtypes(activation, out_dtype, name):
    M, I, K = 150, 392, 520
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(2 * I, K, dtype=torch.bfloat16, device=DEV)
    y = run(name, x, w, activation, out_dtype)
    assert y.dtype == out_dtype
    check(y, x, w, activation)


def test_gated_fp16_inputs():
    M, I, K = 77, 520, 264
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(2 * I, K, dtype=torch.float16, device=DEV)
    check(run("128x64-g1", x, w), x, w)


@pytest.mark.parametrize("name", ["64x128", "coop128x128"])
@pytest.mark.parametrize("cus", [1, 3, 7])
def test_gated_small_persistent_grids(cus, name):
    """Many tiles a CTA: the ping-pong's consumers take turns on the tensor cores, the coop's share each tile; both
    reuse their staging tiles."""
    M, I, K = 300, 1000, 1000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(2 * I, K, dtype=torch.bfloat16, device=DEV)
    check(run(name, x, w, cus=cus), x, w)


def test_gated_refuses_what_it_cannot_take():
    from gemmkit.kernels.gluon import hopper_pingpong

    x, w = randn(8, 64, dtype=torch.bfloat16, device=DEV), randn(128, 64, dtype=torch.bfloat16, device=DEV)
    with pytest.raises(ValueError, match="2 x I rows"):
        hopper_pingpong.launch_gated(x, w, poisoned((8, 48), torch.bfloat16, DEV), "silu", GT, gpu_target())
    with pytest.raises(ValueError, match="activation"):
        hopper_pingpong.launch_gated(x, w, poisoned((8, 64), torch.bfloat16, DEV), "none", GT, gpu_target())
    with pytest.raises(ValueError, match="gated"):
        hopper_pingpong.launch_gated(x, w, poisoned((8, 64), torch.bfloat16, DEV), "silu", {**GT, "NUM_KSPLIT": 2},
                                     gpu_target())


# 1-3 persistent CTAs with several tiles each (the ring wraps across tiles), partial tiles in both dims, a K tail step
_SANITIZE_CASES = [(1, (300, 392, 200)), (2, (129, 264, 136)), (3, (257, 520, 520))]
_SANITIZE_SCRIPT = """
import torch
from gemmkit import arch
from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong
t = arch.current()
for cfg in {cfgs!r}:
    for cus, (M, I, K) in {cases!r}:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(2 * I, K, device="cuda", dtype=torch.bfloat16)
        h = torch.full((M, I), float("nan"), device="cuda", dtype=torch.bfloat16)
        kernel = hopper_coop if cfg["num_warps"] == 8 else hopper_pingpong
        kernel.launch_gated(x, w, h, "silu", cfg, t.with_cus(cus))
        torch.cuda.synchronize()
        gu = x.float() @ w.float().T
        ref = torch.nn.functional.silu(gu[:, :I]) * gu[:, I:]
        assert ((h.float() - ref).norm() / ref.norm()).item() < 2**-8, (cfg, M, I, K)
print("sanitized run done")
"""


@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
def test_compute_sanitizer(tool):
    """No illegal barrier use (synccheck) and no bad accesses (memcheck) in either gated tile: every config of CFGS
    (the ping-pong's and the coop's) on 1-3 persistent CTAs, the h poisoned with NaN."""
    script = _SANITIZE_SCRIPT.format(cfgs=list(CFGS.values()), cases=_SANITIZE_CASES)
    assert_sanitizer_clean(sanitize(tool, script))
