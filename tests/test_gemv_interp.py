"""The GEMV mainloop (BLOCK_SIZE_M in {1, 2, 4, 8}: kernels/triton/_mainloop.py `fma_product`) on the CPU.

Decode-sized M reads the whole weight to produce a few rows; a tensor-core tile computes at least 16 rows.
Tiles of fewer than 16 rows therefore take CUDA-core FMAs on a (BLOCK_M, BLOCK_N, BLOCK_K) broadcast,
through the same pointer kernels (gemm.py, gemm_gated.py, gemm_split_cat.py: only `mma_step` differs).
Checked here in the interpreter against float64 (NaN-poisoned outputs, ragged M / N / K, more rows than
BLOCK_M, split-K) and, for sm_90, by static compile: no tensor-core instruction, no spills. The GPU tests
are in tests/test_gpu_gemv.py.
"""
import pytest
import torch

import gemmkit
from _util import broken_promises, compile_sm90_cases, poisoned, randn, within_bound
from gemmkit import configs
from gemmkit.reference import gemm_a16w16_ref

BF16 = torch.bfloat16
pytestmark = pytest.mark.interpreter


def gemv(bm=1, bn=16, bk=64, warps=4, stages=1, **kw):
    return dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=1, num_warps=warps,
                num_stages=stages, **kw)


def test_config_accepts_gemv_tiles_only_as_powers_of_two():
    for bm in (1, 2, 4, 8, 16):
        configs.validate_config(gemv(bm))
    for bm in (0, 3, 12):
        with pytest.raises(configs.ConfigError, match="BLOCK_SIZE_M"):
            configs.validate_config(gemv(bm))


CASES = [(1, 48, 512, gemv(1, 16, 512)), (1, 17, 100, gemv(1, 32, 32)), (3, 40, 200, gemv(4, 16, 64)),
         (8, 24, 96, gemv(8, 16, 32, stages=2)), (13, 40, 72, gemv(4, 16, 32)),  # M > BLOCK_M: 4 row tiles
         (2, 64, 256, gemv(2, 32, 64, NUM_KSPLIT=2))]


@pytest.mark.parametrize("M,N,K,cfg", CASES, ids=[f"{m}x{n}x{k}-bm{c['BLOCK_SIZE_M']}" for m, n, k, c in CASES])
def test_a16w16(M, N, K, cfg, launches):
    x, w, bias = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16), randn(N, dtype=BF16)
    out = poisoned((M, N), torch.float32)
    gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out_dtype=torch.float32, out=out, config=cfg)
    ok, msg = within_bound(out, gemm_a16w16_ref(x, w, bias, "gelu"), torch.float32)
    assert ok, msg


@pytest.mark.parametrize("M", [1, 3])
def test_gated_and_ffn(M):
    """The gated GEMM (gate and up rows in one tile, silu * mul in the epilogue) and ffn_gated with a
    GEMV gate-up config and a GEMV down config."""
    from test_ffn_interp import ffn_ref, gated_ref

    I, K = 40, 96
    x = randn(M, K, dtype=BF16)
    w_gu, w_down = randn(2 * I, K, dtype=BF16) / K ** 0.5, randn(K, I, dtype=BF16) / I ** 0.5
    h = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x, w_gu, out=h, config=gemv(1 if M == 1 else 4, 16, 32))
    ok, msg = within_bound(h, gated_ref(x, w_gu), torch.float32)
    assert ok, msg
    y = gemmkit.ffn_gated(x, w_gu, w_down, config=(gemv(2, 16, 64), gemv(1, 32, 32)))
    ok, msg = within_bound(y, ffn_ref(x, w_gu, w_down), BF16)
    assert ok, msg


@pytest.mark.parametrize("M", [1, 5])
def test_split_cat(M):
    """gemm_split_cat with a GEMV tile: every element of c1 (GEMM part and the copied y) and c2, into
    NaN-poisoned outputs; y as MLA passes it (k_pe expanded over the heads)."""
    from test_split_cat_interp import check, k_pe, outs, ref_split_cat

    D, S1, S2, S3, K = 4, 16, 16, 8, 64
    x, w = randn(M, K, dtype=BF16), randn(D * (S1 + S2), K, dtype=BF16)
    y = k_pe(M, D, S3, BF16)
    c1, c2 = outs(M, D, S1, S2, S3, BF16)
    gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=gemv(1 if M == 1 else 8, 16, 32))
    check(c1, c2, *ref_split_cat(x.double() @ w.double().T, y, S1), y, S1, BF16)


def test_static_compile_sm90_gemv_keeps_promises():
    """sm_90, bf16: GEMV configs compile with every promise of their kernel kept, including "no tensor-core
    instruction" (FMAs), and without spills; the ops' isa paths (table_spec) as `gemmkit isa` compiles them."""
    cases = [dict(kernel="gemm_kernel", op="a16w16", arch="sm_90", table="-", bucket=f"gemv{i}", config=c,
                  path="pointer", dtype="bf16")
             for i, c in enumerate([configs.validate_config(gemv(1, 16, 512)), configs.validate_config(gemv(4, 16, 128, stages=2))])]
    res = compile_sm90_cases("gemmkit.ops.gemm_a16w16", cases)
    for case, one in zip(cases, res):
        assert not broken_promises(one), broken_promises(one)
        m = one["metrics"]
        assert m["spill_bytes"] == 0 and m["counts"]["HMMA"] + m["counts"]["HGMMA"] == 0
        assert any("GEMV" in p["promise"] and p["ok"] for p in one["promises"])
