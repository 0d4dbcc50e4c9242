"""W_KN (kernels/triton/_mainloop.py): on gfx942 the pointer kernels read w's tile as (BLOCK_K, BLOCK_N), so that
Triton gives it a swizzled LDS buffer. The host sets it from the target; these tests run every pointer kernel that
takes it (dense, batched, split-cat, gated) in the interpreter as gfx942 (W_KN) and gfx950 (not) launch it, against float64,
with the shapes that exercise its pointer arithmetic: an odd K (the K-tail mask on the transposed tile), M / N edges,
a w with a column-major w (stride_wk = N), and split-K. `gemmkit isa` checks the swizzle itself (promise "dot operands read
from swizzled LDS buffers")."""
import pytest
import torch

import gemmkit
from gemmkit import arch
from gemmkit.kernels.triton import dense as G
from gemmkit.reference import activation_ref, gemm_a8w8_blockscale_ref, gemm_a8w8_ref, gemm_a16w16_ref

from _util import poisoned, q8, randn, scales, within_bound

pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16
SMALL = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2, "NUM_KSPLIT": 1, "persistent": False}


def _ok(y, ref):
    ok, msg = within_bound(y, ref, y.dtype)
    assert ok, msg


@pytest.mark.parametrize("arch_name, want", [("gfx942", True), ("gfx950", False), ("sm_90", False)])
def test_host_sets_w_kn_from_the_target(arch_name, want):
    target = arch.ARCHS[arch_name]
    ce = G.constexprs(dict(SMALL), target, tma=False, has_bias=False, activation="none", even_k=True)
    assert ce["W_KN"] is want
    assert "W_KN" not in G.constexprs(dict(SMALL), target, tma=True, has_bias=False, activation="none", even_k=True)


def _w(N, K, strided):
    """w (N, K); strided: column-major (strides (1, N): the kernels read it in place, stride_wk = N)."""
    if strided:
        return randn(K, N, dtype=BF16).T
    return randn(N, K, dtype=BF16)


@pytest.mark.parametrize("arch_name", ["gfx942", "gfx950"])
@pytest.mark.parametrize("M, N, K, split, strided", [(37, 70, 100, 1, False), (5, 33, 96, 3, False),
                                                      (40, 64, 72, 1, True)])
def test_a16w16_pointer_kernel(arch_name, M, N, K, split, strided, monkeypatch):
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    x, w, b = randn(M, K, dtype=BF16), _w(N, K, strided), randn(N, dtype=BF16)
    cfg = dict(SMALL, NUM_KSPLIT=split)
    y = gemmkit.gemm_a16w16(x, w, b, activation="silu", out=poisoned((M, N), BF16), config=cfg)
    _ok(y, gemm_a16w16_ref(x, w, b, "silu"))


def test_a8w8_and_blockscale_fp8_on_gfx950(monkeypatch):
    """fp8 runs in the interpreter as gfx950's float8_e4m3fn (gfx942's e4m3fnuz has no interpreter type before
    Triton 3.8)."""
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx950")
    f8 = torch.float8_e4m3fn
    M, N, K = 19, 40, 160
    x, w = q8(M, K, dtype=f8), q8(N, K, dtype=f8)
    xs, ws = scales(M, 1), scales(1, N)
    cfg = dict(SMALL, BLOCK_SIZE_K=64)
    y = gemmkit.gemm_a8w8(x, w, xs, ws, out=poisoned((M, N), BF16), config=cfg)
    _ok(y, gemm_a8w8_ref(x, w, xs, ws))
    xbs, wbs = scales(M, 2), scales(1, 2)  # 1 x 128 and 128 x 128 blocks over K = 160 (the second partial)
    y = gemmkit.gemm_a8w8_blockscale(x, w, xbs, wbs, out=poisoned((M, N), BF16), config=cfg)
    _ok(y, gemm_a8w8_blockscale_ref(x, w, xbs, wbs))


@pytest.mark.parametrize("arch_name", ["gfx942", "gfx950"])
def test_batched_pointer_kernel(arch_name, monkeypatch):
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    B, M, N, K = 3, 9, 40, 72
    x = randn(B, M, K, dtype=BF16)
    w = randn(B, K, N, dtype=BF16).transpose(1, 2)  # column-major entries, read in place
    y = gemmkit.batched_gemm_a16w16(x, w, out=poisoned((B, M, N), BF16), config=dict(SMALL))
    for i in range(B):
        _ok(y[i], gemm_a16w16_ref(x[i], w[i]))


@pytest.mark.parametrize("arch_name", ["gfx942", "gfx950"])
def test_gated_pointer_kernel(arch_name, monkeypatch):
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    M, I, K = 21, 48, 88
    x, wgu = randn(M, K, dtype=BF16), randn(2 * I, K, dtype=BF16)
    h = gemmkit.gemm_a16w16_gated(x, wgu, out=poisoned((M, I), BF16), config=dict(SMALL))
    x64, w64 = x.double(), wgu.double()
    _ok(h, activation_ref(x64 @ w64[:I].T, "silu") * (x64 @ w64[I:].T))


@pytest.mark.parametrize("arch_name", ["gfx942", "gfx950"])
def test_split_cat_pointer_kernel(arch_name, monkeypatch):
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    M, K, D, S1, S2, S3 = 11, 80, 2, 16, 24, 8  # N = D * (S1 + S2) = 80
    x, w = randn(M, K, dtype=BF16), randn(D * (S1 + S2), K, dtype=BF16)
    y = randn(M, D, S3, dtype=BF16)
    c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, config=dict(SMALL))
    c = gemm_a16w16_ref(x, w).view(M, D, S1 + S2)
    _ok(c1[..., :S1], c[..., :S1])
    assert torch.equal(c1[..., S1:], y)
    _ok(c2, c[..., S1:])


def test_tma_kernels_read_transposed_operands_with_wgmma():
    """The sm_90 TMA kernels' variants for operands transposed in memory (dense X_KM / W_KN, batched W_KN: boxes of
    the (K, M) / (K, N) storage) keep their promises: wgmma (HGMMA) straight from shared memory, TMA loads, no
    spills or local memory; the same instruction counts as the K-major variant."""
    from _util import broken_promises, compile_sm90_cases

    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 4, "NUM_KSPLIT": 1, "tma": True, "persistent": True}
    base = dict(op="a16w16", arch="sm_90", table="-", bucket="t", config=cfg, path="tma", dtype="bf16")
    cases = [base, dict(base, x_km=True, w_kn=True), dict(base, op="batched_gemm"),
             dict(base, op="batched_gemm", w_kn=True)]
    mods = ["gemmkit.ops.gemm_a16w16"] * 2 + ["gemmkit.ops.batched_gemm"] * 2
    res = compile_sm90_cases(mods, cases)
    for case, r in zip(cases, res):
        assert not broken_promises(r), case
        assert r["metrics"]["spill_bytes"] == 0 and r["metrics"]["counts"]["HGMMA"] > 0, (case, r["metrics"])
    for plain, transposed in ((res[0], res[1]), (res[2], res[3])):
        assert {k: plain["metrics"]["counts"][k] for k in ("HGMMA", "UTMALDG", "UTMASTG")} == \
            {k: transposed["metrics"]["counts"][k] for k in ("HGMMA", "UTMALDG", "UTMASTG")}
