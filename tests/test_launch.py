"""The launch cache's key (gemmkit/ops/_launch.py) is at least as fine as Triton's specialisation.

A cached compiled kernel may only be reused for arguments Triton itself would have given the same
compiled kernel: so two arguments that Triton's `native_specialize_impl` tells apart must get
different keys. Checked on CPU over the values that matter (ints around 1, multiples of 16 and the
i32 / i64 boundary; tensors of each dtype, aligned and not; descriptors of different blocks).
The GPU side (the cached launch computes what Triton's launch does) is tests/test_gpu_launch.py.
"""
import itertools

import pytest
import torch
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
from triton.tools.tensor_descriptor import TensorDescriptor

from gemmkit.ops import _launch

# The backends Triton's binder specialises with on the targets gemmkit ships (CUDA adds nothing to
# BaseBackend's marks; HIP adds "S": a tensor whose storage fits 2 GiB, for 32-bit buffer offsets).
BACKENDS = {"cuda": make_backend(GPUTarget("cuda", 90, 32)), "hip": make_backend(GPUTarget("hip", "gfx942", 64))}


INTS = [0, 1, 2, 15, 16, 17, 32, 4095, 4096, 2**31 - 16, 2**31 - 1, 2**31, 2**32, -1, -16, -(2**31), -(2**31) - 1]


def _tensors():
    base = torch.empty(4096, dtype=torch.uint8)
    out = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.int8, torch.float8_e4m3fn, torch.uint8):
        for offset_bytes in (0, 4, 16):  # 16-byte aligned, not, aligned again
            t = base[offset_bytes:offset_bytes + 64 * dtype.itemsize].view(dtype)
            out.append(t)
    # A view into a storage over 2 GiB (never touched: the pages are not allocated): HIP's "S" is off.
    big = torch.empty(2**31 + 256, dtype=torch.uint8)
    out += [big[128:128 + 128].view(torch.bfloat16), big[132:132 + 128].view(torch.bfloat16)]
    return out


def _descs():
    x = torch.empty(64, 64, dtype=torch.bfloat16)
    h = torch.empty(64, 64, dtype=torch.float16)
    return [TensorDescriptor.from_tensor(x, [16, 32]), TensorDescriptor.from_tensor(x, [32, 32]),
            TensorDescriptor.from_tensor(h, [16, 32])]


VALUES = INTS + _tensors() + _descs() + [None, True, False, 0.5]


@pytest.mark.parametrize("backend", list(BACKENDS), ids=list(BACKENDS))
def test_key_separates_what_triton_separates(backend):
    be = BACKENDS[backend]
    spec = _launch.make_spec(be)

    def triton_spec(a):
        return native_specialize_impl(be, a, False, True, True)

    for a, b in itertools.combinations(VALUES, 2):
        if triton_spec(a) != triton_spec(b):
            assert spec(a) != spec(b), (a, b, triton_spec(a), triton_spec(b))


def test_hip_keys_buffer_op_eligibility():
    """The case a BaseBackend-only key would miss: same dtype and alignment, storage over 2 GiB or not."""
    spec = _launch.make_spec(BACKENDS["hip"])
    big = torch.empty(2**31 + 256, dtype=torch.uint8)[128:256].view(torch.bfloat16)
    small = torch.empty(64, dtype=torch.bfloat16)
    assert spec(big) != spec(small)


@pytest.mark.parametrize("v", INTS)
def test_int_spec_matches_triton_classes(v):
    """Equal to 1 (constexpr), divisible by 16, fits in i32: Triton's three int classes (CUDA's fast path)."""
    kind, div = native_specialize_impl(BACKENDS["cuda"], v, False, True, True)
    one, d16, i32 = _launch.make_spec(BACKENDS["cuda"])(v)
    assert (kind == "constexpr") == one
    if kind != "constexpr":
        assert (div == "D") == d16
        assert (kind == "i32") == i32, (v, kind)


def test_keyword_values_are_keyed_with_their_types():
    """True == 1 == 1.0 as dict keys; Triton compiles a constexpr True, 1 and 1.0 apart."""
    spec = _launch.make_spec(BACKENDS["cuda"])
    keys = {_launch.cache_key(object, 0, spec, (1, 16), kw) for kw in ({"F": True}, {"F": 1}, {"F": 1.0})}
    assert len(keys) == 3
    assert len({_launch.cache_key(object, 0, spec, (1, 16), {"F": 1}) for _ in range(2)}) == 1


def test_interpreted_kernels_take_tritons_path():
    """A kernel that is not a compiled JIT function (the interpreter's) is never cached."""
    class NotAJitFunction:
        pass

    assert _launch._runtime_params(NotAJitFunction()) == -1
