"""The Gluon cooperative kernel on the H200 (`pytest -m gpu tests/test_gpu_hopper_coop.py`).

Called through its launcher (gemmkit.kernels.gluon.hopper_coop.launch) and through gemm_a16w16 with a
"backend": "gluon" config. Reference: float64 on the CPU (gemmkit.reference); outputs poisoned with
NaN first, so an unwritten element fails (tests/_util.within_bound: every element finite, norm-wise bound
of half an ulp of the output dtype, x2). Small persistent grids (target.with_cus(n)) give each CTA many
tiles, so the ring wraps across tiles while the consumers run epilogues.
"""
import pytest
import torch

from gemmkit.reference import gemm_a16w16_ref

from _util import check_a16w16 as check
from _util import dense_sanitize_script, gpu_target, launch_dense, poisoned, randn, sanitize, within_bound

pytestmark = pytest.mark.gpu
DEV = "cuda"

CFG_S4 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
          "num_stages": 4}  # 2 output sub-tiles per consumer (bf16), 4 (fp32)
CFG_S3 = {**CFG_S4, "num_stages": 3}  # whole 64 x 256 output tile per consumer
CFG_256 = {**CFG_S4, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 4}  # 128 x 128 per consumer
CFG_192 = {**CFG_S4, "BLOCK_SIZE_N": 192, "num_stages": 5}  # split tile: 128 + 64 columns, 3 sub-tile stores
CFG_96 = {**CFG_S4, "BLOCK_SIZE_N": 96, "num_stages": 6}  # split tile: 64 + 32 columns
CFGS = {"128x256x64-s4": CFG_S4, "128x256x64-s3": CFG_S3, "256x128x64-s4": CFG_256, "128x192x64-s5": CFG_192,
        "128x96x64-s6": CFG_96}


def _hc():
    from gemmkit.kernels.gluon import hopper_coop

    return hopper_coop


def run(x, w, bias=None, act="none", out_dtype=None, cfg=CFG_S4, cus=None):
    return launch_dense(_hc(), x, w, bias, act, out_dtype, cfg, cus)


SHAPES = [(1, 264, 64), (17, 1000, 520), (4095, 1032, 776), (129, 136, 72), (300, 392, 200), (64, 8, 16),
          (2048, 2048, 2048)]


@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, cfg):
    """M = 1 / 17 (consumer 1's rows all past M), ragged M, N, K (TMA fills and clips), K < BLOCK_K."""
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    check(run(x, w, cfg=CFGS[cfg]), x, w)


@pytest.mark.parametrize("M,N,K", [(17, 1000, 520), (4095, 1032, 776)])
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
def test_fp16(M, N, K, cfg):
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    check(run(x, w, cfg=CFGS[cfg]), x, w)


@pytest.mark.parametrize("act,out_dtype", [(a, torch.bfloat16) for a in ("none", "relu", "gelu", "gelu_tanh", "silu")]
                         + [("gelu", torch.float16), ("silu", torch.float32), ("none", torch.float32)],
                         ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_bias_activation_out_dtype(act, out_dtype, cfg):
    """Bias + every activation (bf16 out), fp16 out, fp32 out (4 sub-tiles of 64 x 64 per consumer; the split
    tile: 3 of 64 x 64, bias and activation applied to each accumulator with its own columns)."""
    M, N, K = 300, 1032, 520
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 8
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    y = run(x, w, b, act, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


@pytest.mark.parametrize("cus", [1, 3, 7])
@pytest.mark.parametrize("cfg", ["128x256x64-s4", "256x128x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA (1 CTA: 5 x 4 = 20 tiles of 128 x 256), K steps > stages, bias + gelu."""
    M, N, K = 5 * 128 - 3, 4 * 256 - 8, 1000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 4
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    check(run(x, w, b, "gelu", cfg=CFGS[cfg], cus=cus), x, w, b, "gelu")


@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5", "128x96x64-s6"])
def test_deterministic(cfg):
    """Each output element is one consumer's K-ordered sum: bitwise identical run to run, any grid."""
    x, w = randn(1000, 3000, dtype=torch.bfloat16, device=DEV), randn(2056, 3000, dtype=torch.bfloat16, device=DEV)
    first = run(x, w, cfg=CFGS[cfg])
    check(first, x, w)
    for cus in (None, 5, 1):
        assert torch.equal(run(x, w, cfg=CFGS[cfg], cus=cus), first)


@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
@pytest.mark.parametrize("M,N,K", [(1000, 4096, 1024), (256, 576, 7168)])
def test_op_backend_gluon_num_warps_8(M, N, K, cfg):
    """gemm_a16w16 with a "backend": "gluon", num_warps 8 config runs this kernel (LAUNCHES) and is correct."""
    import gemmkit
    from gemmkit.ops import _common as C

    x, w, bias = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
                  randn(N, dtype=torch.bfloat16, device=DEV))
    before = C.LAUNCHES["hopper_coop_kernel"]
    y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((M, N), torch.bfloat16, DEV),
                            config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_coop_kernel"] == before + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, bias, "gelu"), torch.bfloat16)
    assert ok, msg


@pytest.mark.parametrize("cfg", ["128x256x64-s4", "128x192x64-s5"])
def test_op_backend_gluon_num_warps_8_falls_back_to_triton(cfg):
    """K % 8 != 0 (no TMA): the same config runs on the Triton tier (an 8-warp 128 x 256 tile; a split tile's
    power-of-two part, 128 x 128, ops/_gemm.py triton_tile), correct."""
    import gemmkit
    from gemmkit.ops import _common as C

    M, N, K = 300, 392, 1001
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV)
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, out=poisoned((M, N), torch.float16, DEV), config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert C.LAUNCHES["hopper_coop_kernel"] == before.get("hopper_coop_kernel", 0)
    assert C.LAUNCHES["gemm_kernel"] == before.get("gemm_kernel", 0) + 1
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, None, None), torch.float16)
    assert ok, msg


def test_unsupported_inputs_raise():
    t = gpu_target()
    x = torch.randn(64, 100, device=DEV, dtype=torch.bfloat16)  # K % 8 != 0: row stride not 16-byte aligned
    with pytest.raises(ValueError, match="TMA"):
        _hc().launch(x, x, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none", CFG_S4, t)
    x = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="num_warps"):
        _hc().launch(x, x, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), "none",
                     {**CFG_S4, "num_warps": 4}, t)


# two output sub-tiles per consumer; the split tiles (3)
_SANITIZE_CFGS = [{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 8,
                   "num_stages": stages} for bn, stages in ((256, 4), (192, 5), (96, 6))]
_SANITIZE_CASES = [(1, (300, 392, 200)), (2, (520, 600, 520)), (3, (129, 264, 136))]


@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
def test_compute_sanitizer(tool):
    """No illegal barrier use (synccheck) and no bad accesses (memcheck): 1-3 persistent CTAs, several tiles
    each (the shared ring wraps across tiles), the 128 x 256 tile and the split tiles 128 x 192 / 128 x 96."""
    out = sanitize(tool, dense_sanitize_script("hopper_coop", _SANITIZE_CFGS, _SANITIZE_CASES))
    assert "ERROR SUMMARY: 0 errors" in out, out[-4000:]
