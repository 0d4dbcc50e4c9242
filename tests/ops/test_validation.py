"""Bad input raises ValueError / TypeError naming the argument; one test per case."""
import pytest
import torch

import gemmkit

from _util import randn

BF = torch.bfloat16
# A small valid config; each config test breaks one thing in it.
CFG = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2}


def xw(M=4, N=8, K=16, dtype=BF):
    return randn(M, K, dtype=dtype), randn(N, K, dtype=dtype)


def test_x_wrong_dtype():
    x, w = xw()
    with pytest.raises(TypeError, match=r"^x: expected dtype"):
        gemmkit.gemm_a16w16(x.float(), w)


def test_x_not_a_tensor():
    _, w = xw()
    with pytest.raises(TypeError, match=r"^x: expected a torch.Tensor"):
        gemmkit.gemm_a16w16([[1.0]], w)


def test_w_dtype_mismatch():
    x, w = xw()
    with pytest.raises(TypeError, match=r"^w: expected dtype torch.bfloat16"):
        gemmkit.gemm_a16w16(x, w.half())


def test_k_mismatch():
    x, _ = xw(K=16)
    with pytest.raises(ValueError, match=r"^w: expected shape \(N, 16\)"):
        gemmkit.gemm_a16w16(x, randn(8, 15, dtype=BF))


def test_w_1d():
    x, _ = xw(K=16)
    with pytest.raises(ValueError, match=r"^w: expected a 2-D tensor"):
        gemmkit.gemm_a16w16(x, randn(16, dtype=BF))


def test_bias_dtype_mismatch():
    x, w = xw()
    with pytest.raises(TypeError, match=r"^bias: expected dtype torch.bfloat16"):
        gemmkit.gemm_a16w16(x, w, randn(8, dtype=torch.float32))


def test_bias_wrong_shape():
    x, w = xw(N=8)
    with pytest.raises(ValueError, match=r"^bias: expected shape \(8,\)"):
        gemmkit.gemm_a16w16(x, w, randn(7, dtype=BF))


def test_bias_2d():
    x, w = xw(N=8)
    with pytest.raises(ValueError, match=r"^bias: expected a 1-D tensor"):
        gemmkit.gemm_a16w16(x, w, randn(1, 8, dtype=BF))


def test_out_wrong_shape():
    x, w = xw(M=4, N=8)
    with pytest.raises(ValueError, match=r"^out: expected shape \(4, 8\)"):
        gemmkit.gemm_a16w16(x, w, out=torch.empty(4, 9, dtype=BF))


def test_out_wrong_dtype():
    x, w = xw(M=4, N=8)
    with pytest.raises(TypeError, match=r"^out: expected dtype torch.bfloat16"):
        gemmkit.gemm_a16w16(x, w, out=torch.empty(4, 8, dtype=torch.float16))


def test_out_dtype_unsupported():
    x, w = xw()
    with pytest.raises(TypeError, match=r"^out_dtype: expected one of"):
        gemmkit.gemm_a16w16(x, w, out_dtype=torch.int8)


def test_out_not_viewable():
    x, w = randn(2, 3, 16, dtype=BF), randn(8, 16, dtype=BF)
    out = torch.empty(3, 2, 8, dtype=BF).transpose(0, 1)  # (2, 3, 8) but not viewable as (6, 8)
    with pytest.raises(ValueError, match=r"^out: expected a tensor viewable as \(M, 8\)"):
        gemmkit.gemm_a16w16(x, w, out=out)


def test_unknown_activation():
    x, w = xw()
    with pytest.raises(ValueError, match=r"^activation: expected None or one of"):
        gemmkit.gemm_a16w16(x, w, activation="tanh")


def test_different_devices():
    x, w = xw()
    with pytest.raises(ValueError, match=r"^w: expected a tensor on cpu"):
        gemmkit.gemm_a16w16(x, w.to("meta"))


def test_config_block_k_not_power_of_two():
    x, w = xw()
    cfg = {**CFG, "BLOCK_SIZE_K": 48}
    with pytest.raises(ValueError, match=r"^config: key 'BLOCK_SIZE_K' = 48; expected a power of two"):
        gemmkit.gemm_a16w16(x, w, config=cfg)


def test_config_too_much_shared_memory():
    x, w = xw()
    cfg = {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 8, "num_stages": 4}
    with pytest.raises(ValueError, match=r"^config: .* needs \d+ bytes of shared memory; H200 \(sm_90\) allows 232448"):
        gemmkit.gemm_a16w16(x, w, config=cfg)


def test_config_unknown_key():
    x, w = xw()
    cfg = {**CFG, "BLOCK_M": 16}
    with pytest.raises(ValueError, match=r"^config: unknown key 'BLOCK_M'"):
        gemmkit.gemm_a16w16(x, w, config=cfg)


def test_config_missing_key():
    x, w = xw()
    with pytest.raises(ValueError, match=r"^config: missing key 'num_stages'"):
        gemmkit.gemm_a16w16(x, w, config={k: v for k, v in CFG.items() if k != "num_stages"})


def test_config_amd_key_on_nvidia():
    x, w = xw()
    cfg = {**CFG, "waves_per_eu": 2}
    with pytest.raises(ValueError, match=r"^config: key 'waves_per_eu' is not supported on cuda"):
        gemmkit.gemm_a16w16(x, w, config=cfg)


def test_config_tma_on_amd(monkeypatch):
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx950")
    x, w = xw()
    cfg = {**CFG, "tma": True}
    with pytest.raises(ValueError, match=r"^config: key 'tma' is not supported on hip"):
        gemmkit.gemm_a16w16(x, w, config=cfg)


def test_requires_grad_is_refused():
    x, w = xw()
    w.requires_grad_(True)
    with pytest.raises(NotImplementedError, match=r"^w: requires grad, but gemm_a16w16 has no backward"):
        gemmkit.gemm_a16w16(x, w)


def test_parameters_under_no_grad(launches):
    x, w = xw()
    p = torch.nn.Parameter(w)
    before = sum(launches.values())
    with torch.no_grad():
        y = gemmkit.gemm_a16w16(x, p)
    assert sum(launches.values()) == before + 1
    torch.testing.assert_close(y.float(), (x.double() @ w.double().T).float(), rtol=2**-8, atol=1e-2)


def test_out_with_overlapping_elements_is_refused():
    """An expand()ed out would be written by several programs at once: an error, not a race."""
    x, w = torch.randn(4, 32, dtype=torch.bfloat16), torch.randn(8, 32, dtype=torch.bfloat16)
    out = torch.empty(1, 8, dtype=torch.bfloat16).expand(4, 8)
    with pytest.raises(ValueError, match="^out: expected a tensor whose elements do not overlap"):
        gemmkit.gemm_a16w16(x, w, out=out)
    xb, wb = torch.randn(3, 4, 32, dtype=torch.bfloat16), torch.randn(3, 8, 32, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="^out: expected a tensor whose elements do not overlap"):
        gemmkit.batched_gemm_a16w16(xb, wb, out=torch.empty(1, 4, 8, dtype=torch.bfloat16).expand(3, 4, 8))
