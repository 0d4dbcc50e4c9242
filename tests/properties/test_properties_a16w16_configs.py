"""Property test: gemm_a16w16 equals the float64 reference for drawn shapes, strides, dtypes,
bias/activation and configs (pointer and TMA paths, persistent or not, sm_90 and gfx tables).

Every element is checked (test_properties_common.check_elements: a bound from the dtype and K) besides the
norm bound; settings as the other property tests (derandomized in CI, GEMMKIT_PROPERTY_RANDOM=1 explores; the
values from a drawn seed, so a failure's minimal example reruns bit for bit).
tests/properties/test_properties_a16w16.py complements it with the shipped tables' configs, tile +- 1 shapes and
more layouts."""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit.reference import gemm_a16w16_ref

from _util import poisoned, randn, within_bound
from test_properties_common import SEED, check_elements, f64, linear_err, prop_settings

pytestmark = pytest.mark.interpreter


def make_operand(rows, cols, layout, dtype, seed):
    """A (rows, cols) tensor with the drawn memory layout, its values from `seed`."""
    if layout == "contiguous":
        return randn(rows, cols, dtype=dtype, seed=seed)
    if layout == "transposed":  # unit stride on dim 0
        return randn(cols, rows, dtype=dtype, seed=seed).t()
    if layout == "strided":  # no unit stride at all: the op copies it
        return randn(rows, 2 * cols, dtype=dtype, seed=seed)[:, ::2]
    if layout == "row_padded":  # unit last stride, padded rows
        return randn(rows, cols + 3, dtype=dtype, seed=seed)[:, :cols]
    raise AssertionError(layout)


@prop_settings(60)
@given(
    M=st.integers(1, 70), N=st.integers(1, 70), K=st.integers(1, 90),
    dtype=st.sampled_from([torch.bfloat16, torch.float16]),
    out_dtype=st.sampled_from([None, torch.float32]),
    x_layout=st.sampled_from(["contiguous", "transposed", "strided", "row_padded"]),
    w_layout=st.sampled_from(["contiguous", "transposed", "strided", "row_padded"]),
    batch=st.sampled_from([(), (2,), (1, 3)]),
    with_bias=st.booleans(),
    act=st.sampled_from([None, "relu", "gelu", "gelu_tanh", "silu"]),
    blocks=st.tuples(st.sampled_from([16, 32]), st.sampled_from([16, 32]), st.sampled_from([16, 32])),
    group=st.integers(1, 4), persistent=st.booleans(), tma=st.booleans(),
    arch=st.sampled_from(["sm_90", "gfx942"]), cus=st.integers(1, 9), split_k=st.sampled_from([1, 1, 2, 3]),
    seed=SEED,
)
def test_matches_reference(M, N, K, dtype, out_dtype, x_layout, w_layout, batch, with_bias, act, blocks, group,
                           persistent, tma, arch, cus, split_k, seed, monkeypatch_session):
    monkeypatch_session.setenv("GEMMKIT_INTERPRET_ARCH", arch)
    monkeypatch_session.setenv("GEMMKIT_NUM_CUS", str(cus))
    rows = M * (batch[0] * (batch[1] if len(batch) > 1 else 1) if batch else 1)
    x = make_operand(rows, K, x_layout, dtype, seed)
    if batch:
        x = x.view(*batch, M, K)  # splitting dim 0 keeps the drawn layout (a view for every layout here)
    w = make_operand(N, K, w_layout, dtype, seed + 1)
    bias = randn(N, dtype=dtype, seed=seed + 2) if with_bias else None
    cfg = {"BLOCK_SIZE_M": blocks[0], "BLOCK_SIZE_N": blocks[1], "BLOCK_SIZE_K": blocks[2], "GROUP_SIZE_M": group,
           "num_warps": 4, "num_stages": 2, "persistent": persistent, "tma": tma and arch == "sm_90", "NUM_KSPLIT": split_k}
    want_dtype = out_dtype or dtype
    out = poisoned(tuple(x.shape[:-1]) + (N,), want_dtype)
    y = gemmkit.gemm_a16w16(x, w, bias, activation=act, out_dtype=out_dtype, out=out, config=cfg)
    ref = gemm_a16w16_ref(x, w, bias, act)
    ok, msg = within_bound(y, ref, want_dtype)
    assert ok, msg
    S = (f64(x).abs() @ f64(w).abs().T + (f64(bias).abs() if bias is not None else 0))
    check_elements(y, ref, linear_err(S, K + 8, "cpu", act), want_dtype)


@pytest.fixture(scope="module")
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()
