"""Test setup: the Triton interpreter on CPU machines, and its patches.

On a machine without a GPU the tests run every Triton kernel in Triton's CPU
interpreter. TRITON_INTERPRET must be set before any @triton.jit decorator
runs (Triton picks JITFunction or InterpretedFunction at decoration time), so
it is set here, before gemmkit is imported. On the GPU machine run
`pytest -m gpu` (no interpreter); `TRITON_INTERPRET=1 pytest` there runs the
CPU tests.

Three patches, in the test harness only; the kernels stay exactly what the GPU runs:

1. bf16 dot. Triton 3.6's interpreter stores bf16 tensors as raw uint16 bit
   patterns and its `create_dot` multiplies those integers directly (triton
   issue 11584), so every bf16 tl.dot is garbage. We convert bf16 operands to
   float32 before the matmul.
2. fp32 -> bf16 cast rounding. The interpreter's `cast_impl` truncates the
   mantissa (round toward zero); GPUs round to nearest even, so truncation
   doubles the output error and made our half-ulp bound fail on single
   elements (e.g. -2.62277 -> -2.609375 instead of -2.625). We round to
   nearest even, as the hardware does.
3. fp32 -> fp8 (e4m3fn, e5m2) cast rounding. The interpreter converts by
   truncating bit fields, so a mantissa carry is lost (127.4 -> 64 instead of
   128, a factor-2 error). sm_90 (`cvt.rn.satfinite.e4m3x2.f32`), gfx9
   (`v_cvt_*pk_fp8_f32`) and torch round to nearest even; gemmkit's kernels
   clamp to the format's range before the cast, so in-range RNE is all the
   hardware does, and the patch converts with torch (exactly that).
"""
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("GEMMKIT_INTERPRET_ARCH", "sm_90")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _patch_interpreter_bf16_dot():
    import triton.language as tl
    from triton.runtime import interpreter

    builder_cls = interpreter.InterpreterBuilder
    if getattr(builder_cls.create_dot, "_gemmkit_bf16_patch", False):
        return
    original = builder_cls.create_dot

    def bf16_bits_to_f32(h):
        return (h.data.astype(np.uint32) << 16).view(np.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype == tl.bfloat16 or b.dtype == tl.bfloat16:
            a_data = bf16_bits_to_f32(a) if a.dtype == tl.bfloat16 else a.data.astype(np.float32)
            b_data = bf16_bits_to_f32(b) if b.dtype == tl.bfloat16 else b.data.astype(np.float32)
            return interpreter.TensorHandle(np.matmul(a_data, b_data, dtype=d.data.dtype) + d.data, d.dtype.scalar)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    create_dot._gemmkit_bf16_patch = True
    builder_cls.create_dot = create_dot

    original_cast = builder_cls.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            bits = np.ascontiguousarray(src.data, dtype=np.float32).view(np.uint32).astype(np.uint64)
            rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            rounded = np.where(np.isnan(src.data), np.uint16(0x7FC0), rounded)
            return interpreter.TensorHandle(rounded, dst_type.scalar)
        return original_cast(self, src, dst_type)

    builder_cls.cast_impl = cast_impl

    original_fp_to_fp = builder_cls.create_fp_to_fp
    to_torch = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        dst = to_torch.get(dst_type.scalar)
        if src.dtype.scalar == tl.float32 and dst is not None:
            data = torch.from_numpy(np.ascontiguousarray(src.data, dtype=np.float32)).to(dst).view(torch.uint8)
            return interpreter.TensorHandle(data.numpy(), dst_type.scalar)
        return original_fp_to_fp(self, src, dst_type, rounding_mode)

    builder_cls.create_fp_to_fp = create_fp_to_fp


if INTERPRETING:
    _patch_interpreter_bf16_dot()


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on the H200)")
    skip_interp = pytest.mark.skip(reason="interpreter test: run with TRITON_INTERPRET=1")
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_gpu)
        if "interpreter" in item.keywords and not INTERPRETING:
            item.add_marker(skip_interp)


@pytest.fixture(autouse=True)
def _no_tf32_on_gpu(request):
    """gpu tests compare against fp32 torch references: TF32 off, so the reference is fp32."""
    if request.node.get_closest_marker("gpu") is None or not torch.cuda.is_available():
        yield
        return
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


@pytest.fixture
def launches():
    """The kernel-launch counter; tests assert on its delta to prove a kernel ran."""
    from gemmkit.ops import _common

    return _common.LAUNCHES
