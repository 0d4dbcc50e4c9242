"""Triton's CPU interpreter (TRITON_INTERPRET=1) made to compute what the GPUs compute.

gemmkit's Triton kernels run on a CPU only in Triton's interpreter. Triton 3.6's
interpreter differs from every GPU in five places that change a GEMM's result; `install()`
(called by `import gemmkit` when the kernels were built for the interpreter) replaces those
builder methods by versions that model the hardware. The kernels themselves are not
changed: a CPU call runs the same kernel source as a GPU call.

  builder method          the interpreter (3.6)                    here, as sm_90 / gfx9 do
  create_dot (bf16)       multiplies the raw uint16 bit patterns   bf16 -> fp32, then the fp32
                          (triton issue 11584: ~1e10 rel. error)   matmul with fp32 accumulate
  cast_impl fp32 -> bf16  truncates the mantissa                   round to nearest even, NaN kept
  cast_impl bf16 -> fp32  loses or rounds subnormals (2^-128 -> 0)  exact: the bits shifted by 16
  create_fp_to_fp         truncates bit fields: a mantissa carry   round to nearest even and
    fp32 -> e4m3fn / e5m2   is lost (124.3 -> 64 instead of 128)   saturate to the finite range
    (e4m3fnuz: from 3.8)                                           (cvt.rn.satfinite), NaN kept
  create_dot_scaled       missing (tl.dot_scaled cannot run)       e2m1 x e2m1 packed along K,
                                                                   E8M0 scales per 32 (OCP MX)

Each replacement is exact for what the interpreter then stores: fp32 products of bf16 values
are exact, RNE is what the hardware's cvt does, and E2M1 x 2^e values are exact in fp32. A
newer Triton whose builder lacks one of these methods (renamed) leaves that one alone; a
builder that already has `create_dot_scaled` keeps its own.

The patch changes Triton's interpreter for the whole process: any other interpreted kernel
in it gets the same hardware semantics. It is installed only when gemmkit's kernels are
interpreted (`active()`), never on a GPU process.

The interpreter has no float8_e4m3fnuz type (gfx942's fp8, Triton's fp8e4b8) before Triton 3.8 (3.6.0 and 3.7.1 fail
to convert it; 3.8.0 and 3.9.0 load, cast and multiply it: probed 2026-12-05): `dtype_unsupported` says so, and the
ops raise that instead of the interpreter's error.

`active()` is decided when gemmkit is imported: `triton.jit` builds an interpreted function
or a compiled one at decoration time, so setting TRITON_INTERPRET after `import gemmkit`
cannot make the kernels run on a CPU (`cpu_unavailable_reason` says so).
"""
from __future__ import annotations

import functools
import os

import numpy as np
import torch
import triton

ENV = "TRITON_INTERPRET"


@triton.jit
def _sentinel():
    """Built by triton.jit like every gemmkit kernel: an interpreted function iff they are."""
    pass


def env_requests() -> bool:
    """TRITON_INTERPRET is set (now)."""
    return os.environ.get(ENV, "0") not in ("", "0")


@functools.lru_cache(maxsize=None)
def active() -> bool:
    """gemmkit's Triton kernels were built for the interpreter (TRITON_INTERPRET was set when
    gemmkit was imported), so CPU tensors can run through them."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(_sentinel, InterpretedFunction)


FNUZ_SINCE = (3, 8)  # the first Triton whose interpreter takes float8_e4m3fnuz (module docstring)


def dtype_unsupported(dtype) -> str | None:
    """Why the installed Triton's interpreter cannot take tensors of `dtype` (None: it can): float8_e4m3fnuz before
    FNUZ_SINCE."""
    from .._versions import parse

    v = parse(triton.__version__)
    if dtype == torch.float8_e4m3fnuz and v < FNUZ_SINCE:
        return (f"torch.float8_e4m3fnuz (gfx942's fp8) does not run in Triton {v[0]}.{v[1]}'s interpreter (it has no "
                f"e4m3fnuz type before Triton {FNUZ_SINCE[0]}.{FNUZ_SINCE[1]})")
    return None


def cpu_unavailable_reason() -> str | None:
    """Why CPU tensors cannot run in this process (None: they can)."""
    if active():
        return None
    if env_requests():
        return (f"{ENV}=1 was set after gemmkit was imported; Triton builds its kernels for the CPU "
                f"interpreter only when {ENV}=1 is set before `import gemmkit` (set it in the environment "
                "or at the top of the program)")
    return (f"CPU tensors run only in the Triton interpreter (set {ENV}=1 before importing gemmkit); "
            "gemmkit has no torch fallback")


# ----------------------------------------------------------------------------- the replacements

def _bf16_bits_to_f32(h):
    return (h.data.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16_bits(x):
    """Round-to-nearest-even of fp32 values to bf16 bit patterns (uint16); NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def _fp8_formats():
    import triton.language as tl

    return {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2, tl.float8e4b8: torch.float8_e4m3fnuz}


def _patch_dot(builder_cls, tl, TensorHandle):
    original = builder_cls.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if a.dtype.scalar == tl.bfloat16 or b.dtype.scalar == tl.bfloat16:
            a32 = _bf16_bits_to_f32(a) if a.dtype.scalar == tl.bfloat16 else a.data.astype(np.float32)
            b32 = _bf16_bits_to_f32(b) if b.dtype.scalar == tl.bfloat16 else b.data.astype(np.float32)
            return TensorHandle(np.matmul(a32, b32, dtype=d.data.dtype) + d.data, d.dtype.scalar)
        return original(self, a, b, d, input_precision, max_num_imprecise_acc)

    builder_cls.create_dot = create_dot


def _patch_bf16_cast(builder_cls, tl, TensorHandle):
    original = builder_cls.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return TensorHandle(_f32_to_bf16_bits(src.data), dst_type.scalar)
        if src.dtype.scalar == tl.bfloat16 and dst_type.scalar == tl.float32:
            return TensorHandle(_bf16_bits_to_f32(src), dst_type.scalar)
        return original(self, src, dst_type)

    builder_cls.cast_impl = cast_impl


def _patch_fp8_cast(builder_cls, tl, TensorHandle):
    original = builder_cls.create_fp_to_fp
    formats = _fp8_formats()

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        dst = formats.get(dst_type.scalar)
        if src.dtype.scalar == tl.float32 and dst is not None:
            big = torch.finfo(dst).max
            data = np.clip(np.ascontiguousarray(src.data, dtype=np.float32), -big, big)  # satfinite; NaN kept
            out = torch.from_numpy(data).to(dst).view(torch.uint8).numpy()
            return TensorHandle(out, dst_type.scalar)
        return original(self, src, dst_type, rounding_mode)

    builder_cls.create_fp_to_fp = create_fp_to_fp


def _mx_decode(packed, dim, scales):
    """fp32 values of E2M1 codes packed two per byte along `dim` (element 2i in the low nibble),
    times 2^(scale - 127) per 32 elements along K (scales: (rows, K / 32) E8M0; 255 is NaN)."""
    codes = np.ascontiguousarray(packed).astype(np.uint8)
    lo, hi = codes & 0xF, codes >> 4
    both = np.stack([lo, hi], axis=dim + 1)
    shape = list(codes.shape)
    shape[dim] *= 2
    nib = both.reshape(shape)
    magnitude = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)[nib & 7]
    values = np.where(nib & 8, -magnitude, magnitude)
    s = np.ascontiguousarray(scales).astype(np.int32)
    per_k = np.where(s == 255, np.float32(np.nan), np.ldexp(np.float32(1.0), s - 127).astype(np.float32))
    per_k = np.repeat(per_k, 32, axis=1)  # (rows, K)
    return values * (per_k if dim == 1 else per_k.T)


def _patch_dot_scaled(builder_cls, tl, TensorHandle):
    from triton.language.semantic import TritonSemantic

    original_semantic = TritonSemantic.dot_scaled

    def dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *args):
        if isinstance(self.builder, builder_cls):  # the interpreter passes the formats as plain str
            lhs_format = lhs_format if isinstance(lhs_format, tl.constexpr) else tl.constexpr(lhs_format)
            rhs_format = rhs_format if isinstance(rhs_format, tl.constexpr) else tl.constexpr(rhs_format)
        return original_semantic(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *args)

    def create_dot_scaled(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, fast_math, lhs_k_pack,
                          rhs_k_pack, acc):
        from triton._C.libtriton import ir

        if not (lhs_format == rhs_format == ir.ScaleDotElemTypeTY.E2M1 and lhs_k_pack and rhs_k_pack):
            raise NotImplementedError("gemmkit's interpreter tl.dot_scaled models e2m1 x e2m1 packed along K only")
        a = _mx_decode(lhs.data, 1, lhs_scale.data).astype(np.float64)  # (M, K)
        b = _mx_decode(rhs.data, 0, rhs_scale.data).astype(np.float64)  # (K, N)
        return TensorHandle(((a @ b).astype(np.float32) + acc.data).astype(np.float32), tl.float32)

    TritonSemantic.dot_scaled = dot_scaled
    builder_cls.create_dot_scaled = create_dot_scaled


_PATCHES = {"create_dot": _patch_dot, "cast_impl": _patch_bf16_cast, "create_fp_to_fp": _patch_fp8_cast}


@functools.lru_cache(maxsize=None)
def install() -> tuple:
    """Replace the interpreter's builder methods listed in the module docstring (once; a no-op
    unless `active()`). Returns the names replaced."""
    if not active():
        return ()
    import triton.language as tl
    from triton.runtime import interpreter

    builder_cls, handle = interpreter.InterpreterBuilder, interpreter.TensorHandle
    done = []
    for name, patch in _PATCHES.items():
        if hasattr(builder_cls, name):
            patch(builder_cls, tl, handle)
            done.append(name)
    if not hasattr(builder_cls, "create_dot_scaled"):
        _patch_dot_scaled(builder_cls, tl, handle)
        done.append("create_dot_scaled")
    return tuple(done)
