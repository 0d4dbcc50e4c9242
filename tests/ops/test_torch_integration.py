"""torch.library custom ops: opcheck, fake (meta) shapes, torch.compile(fullgraph=True) on the CPU."""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a16w16_ref, rel_error

from _util import TOL, randn

pytestmark = pytest.mark.interpreter
BF = torch.bfloat16


def test_opcheck_functional():
    x, w, b = randn(9, 32, dtype=BF), randn(24, 32, dtype=BF), randn(24, dtype=BF)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16.default, (x, w, b, "silu", torch.float32, ""))
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16.default, (randn(2, 3, 16, dtype=BF), randn(8, 16, dtype=BF),
                                                                  None, "none", BF, ""))


def test_opcheck_out():
    x, w = randn(9, 32, dtype=BF), randn(24, 32, dtype=BF)
    out = torch.empty(9, 24, dtype=BF)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16_out.default, (x, w, None, "relu", "", out))


def test_fake_shapes_and_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x, w = torch.empty(5, 7, 64, dtype=BF), torch.empty(48, 64, dtype=BF)
        y = gemmkit.gemm_a16w16(x, w, out_dtype=torch.float32)
        assert y.shape == (5, 7, 48) and y.dtype == torch.float32
        with pytest.raises(ValueError, match=r"^w: expected shape \(N, 64\)"):
            gemmkit.gemm_a16w16(x, torch.empty(48, 63, dtype=BF))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph(backend, launches):
    """The op is opaque to the compiler (its fake gives shapes); the kernel still runs."""
    torch._dynamo.reset()
    x, w, b = randn(17, 64, dtype=BF), randn(40, 64, dtype=BF), randn(40, dtype=BF)

    def f(x, w, b):
        return gemmkit.gemm_a16w16(x * 2, w, b, activation="gelu", out_dtype=torch.float32) - 1

    before = sum(launches.values())
    y = torch.compile(f, fullgraph=True, backend=backend)(x, w, b)
    assert sum(launches.values()) > before
    err = rel_error(y, gemm_a16w16_ref(x * 2, w, b, "gelu") - 1)
    assert err <= TOL[torch.float32] * 10


def test_torch_compile_out_variant():
    torch._dynamo.reset()
    x, w = randn(8, 32, dtype=BF), randn(16, 32, dtype=BF)

    def f(x, w, out):
        gemmkit.gemm_a16w16(x, w, out=out)
        return out * 1

    out = torch.full((8, 16), float("nan"), dtype=BF)
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, out)
    assert rel_error(y, gemm_a16w16_ref(x, w)) <= TOL[BF]
    assert rel_error(out, gemm_a16w16_ref(x, w)) <= TOL[BF]
