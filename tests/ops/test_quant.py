"""gemmkit.quant: the quantizer kernels in the Triton interpreter, against their torch references.

Bitwise agreement of q and scale with the `*_ref` functions, round-trip error bounds, the GEMMs'
layouts, saturation (1e6, fp32 extremes, inf), NaN, all-zero rows/blocks, ragged and non-contiguous
shapes, the MXFP4 nibble order with hand-packed bytes, custom ops under torch.compile, bad inputs,
and static compiles for gfx942 (e4m3fnuz), gfx950 and sm_90 in a non-interpreting subprocess.

The fp32 -> fp8 casts round to nearest even in the interpreter through the interpreter patches
(Triton 3.6's interpreter truncates bit fields; the GPUs and torch round to nearest even). NaN tests run
twice: with the interpreter's NaN-propagating min / max and with NaN-dropping ones, as on the GPUs
(`nan_minmax`).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import gemmkit.quant as Q
from gemmkit import arch

pytestmark = pytest.mark.interpreter

BF, F16, F32 = torch.bfloat16, torch.float16, torch.float32
E4M3 = torch.float8_e4m3fn
FNUZ = torch.float8_e4m3fnuz


def spread(M, K, dtype, seed=None):
    """Random rows whose magnitudes span 1e-3 .. 1e3 (exercises many scales), in `dtype`."""
    seed = torch.seed() if seed is None else seed
    print(f"spread({M}, {K}, {dtype}) seed {seed}")  # (shown with a failure: the inputs are fresh each run)
    g = torch.Generator().manual_seed(seed)
    mag = 10.0 ** (torch.rand(M, 1, generator=g) * 6 - 3)
    return (torch.randn(M, K, generator=g) * mag).to(dtype)


def bits(t):
    """A view that compares bit patterns (fp8 / fp32 NaN == NaN, -0.0 != 0.0)."""
    return t.view({1: torch.uint8, 4: torch.int32}[t.element_size()])


def assert_bitwise(out, ref, what):
    assert out.shape == ref.shape and out.dtype == ref.dtype, \
        f"{what}: {out.shape}/{out.dtype} vs {ref.shape}/{ref.dtype}"
    bad = bits(out) != bits(ref)
    assert not bad.any(), f"{what}: {int(bad.sum())} of {bad.numel()} differ, first at " \
                          f"{tuple(bad.nonzero()[0].tolist())}: {out[bad][:4].tolist()} vs {ref[bad][:4].tolist()}"


QUANTIZERS = {
    "fp8_per_token": (lambda x: Q.quantize_fp8_per_token(x, E4M3), lambda x: Q.quantize_fp8_per_token_ref(x, E4M3)),
    "fp8_per_channel": (lambda x: Q.quantize_fp8_per_channel(x, E4M3),
                        lambda x: Q.quantize_fp8_per_channel_ref(x, E4M3)),
    "int8_per_token": (Q.quantize_int8_per_token, Q.quantize_int8_per_token_ref),
    "fp8_block_1x128": (lambda x: Q.quantize_fp8_blockwise(x, (1, 128), E4M3),
                        lambda x: Q.quantize_fp8_blockwise_ref(x, (1, 128), E4M3)),
    "fp8_block_128x128": (lambda x: Q.quantize_fp8_blockwise(x, (128, 128), E4M3),
                          lambda x: Q.quantize_fp8_blockwise_ref(x, (128, 128), E4M3)),
}
BLOCK_OF = {"fp8_block_1x128": (1, 128), "fp8_block_128x128": (128, 128)}
SHAPES = [(1, 1), (17, 100), (3, 130), (17, 257)]
CASES = [(n, s) for n in QUANTIZERS for s in SHAPES if n != "fp8_block_128x128" or s[0] > 1] + \
    [("fp8_block_128x128", (130, 129))]  # a ragged second row of 128-row blocks


def expected_scale_shape(name, M, K):
    return {"fp8_per_token": (M, 1), "int8_per_token": (M, 1), "fp8_per_channel": (1, M),
            "fp8_block_1x128": (M, -(-K // 128)), "fp8_block_128x128": (-(-M // 128), -(-K // 128))}[name]


def dequant(name, q, scale):
    if name == "fp8_per_channel":
        return q.float() * scale.view(-1, 1)
    return Q.dequantize_ref(q, scale, BLOCK_OF.get(name))


# ----------------------------------------------------------------------------- fp8 / int8

@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{s[0]}x{s[1]}" for n, s in CASES])
def test_bitwise_vs_reference_and_layout(name, shape, launches):
    M, K = shape
    x = spread(M, K, (BF, F16, F32)[(M + K) % 3])
    before = sum(launches.values())
    q, scale = QUANTIZERS[name][0](x)
    assert sum(launches.values()) == before + 1
    qr, sr = QUANTIZERS[name][1](x)
    assert q.shape == (M, K) and q.dtype == (torch.int8 if name.startswith("int8") else E4M3) and q.is_contiguous()
    assert scale.shape == expected_scale_shape(name, M, K) and scale.dtype == F32
    assert_bitwise(scale, sr, "scale")
    assert_bitwise(q, qr, "q")


# (M, K, BLOCK_M, ONE_PASS) of the rowwise kernel's three paths (quant.launch_params): a row read once into registers
# (K up to ONE_PASS_K, above M = ROW_PER_PROGRAM_M only if K fills 3/4 of its power of two), one row a program in two
# passes, four rows a program in two passes (large M: long rows, or rows filling under 3/4 of their power of two)
ROWWISE_PATHS = [(300, 2000, 1, True), (2, 1000, 1, True), (2, Q.ONE_PASS_K + 16, 1, False),
                 (260, Q.ONE_PASS_K + 16, 4, False), (300, 1500, 4, False)]


@pytest.mark.parametrize("M, K, bm, one_pass", ROWWISE_PATHS, ids=[f"{m}x{k}" for m, k, _, _ in ROWWISE_PATHS])
@pytest.mark.parametrize("name", ["fp8_per_token", "int8_per_token"])
def test_rowwise_paths_bitwise(name, M, K, bm, one_pass):
    _grid, ce, _opts = Q.launch_params("quant_rowwise_kernel", M, K, dtype=torch.int8 if "int8" in name else E4M3)
    assert (ce["BLOCK_M"], ce["ONE_PASS"]) == (bm, one_pass)
    x = spread(M, K, BF)
    x[M // 2, K - 1] = 1e4  # the row's amax in its last column (the last chunk of a two-pass row)
    q, scale = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x)
    assert_bitwise(scale, sr, "scale")
    assert_bitwise(q, qr, "q")


@pytest.mark.parametrize("name", QUANTIZERS)
def test_round_trip_bound(name):
    """Per element: fp8 e4m3 |q*s - x| <= 2^-4 |x| + 2^-10 s (half an ulp of 3 mantissa bits, half the
    subnormal step 2^-9); int8 <= s / 2. Plus a small fp32 slack for x / s and q * s."""
    M = 130 if name == "fp8_block_128x128" else 17
    x = spread(M, 257, F32)
    q, scale = QUANTIZERS[name][0](x)
    s = dequant(name, torch.ones_like(q, dtype=F32), scale)  # per-element scale
    err = (dequant(name, q, scale) - x).abs()
    bound = (0.5 * s if name.startswith("int8") else 2**-4 * x.abs() + 2**-10 * s) * (1 + 1e-5) + 1e-6 * x.abs()
    assert (err <= bound).all(), f"worst excess {float((err - bound).max()):.3g}"
    rel = ((dequant(name, q, scale) - x).norm() / x.norm()).item()
    assert rel < (2**-6 if name.startswith("int8") else 2**-4), rel  # int8: step / sqrt(12) ~ amax / 440


def test_round_half_even_int8_and_fp8():
    """amax 127 (448) makes the scale exactly 1: ties must round to even."""
    xi = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 126.5]])
    q, s = Q.quantize_int8_per_token(xi)
    assert s.item() == 1.0 and q.tolist() == [[127, 0, 2, 2, 0, -2, 4, 126]]
    xf = torch.tensor([[448.0, 17.0, 19.0, -17.0, 1.0625, 1.1875, 2.0**-10 * 3]])  # e4m3fn ties
    q, s = Q.quantize_fp8_per_token(xf, E4M3)
    assert s.item() == 1.0 and q.float().tolist() == [[448.0, 16.0, 20.0, -16.0, 1.0, 1.25, 2.0**-8]]


@pytest.mark.parametrize("name", QUANTIZERS)
def test_saturation_never_nan_or_inf(name):
    """Huge values (1e6, -1e38) quantize normally; beyond AMAX_CEIL = 2^127 (-3e38) and +-inf clamp to
    +-QMAX at scale 2^127 / QMAX: q within the format, scale and q * scale finite."""
    # One special per row and per 128 x 128 block, so no two share a row or a block.
    M = 130 if "128x128" in name else 6
    x = spread(M, 400, F32)
    x[0, 3], x[1, 130], x[2, 260], x[3, 390], x[M - 1, 3] = 1e6, -1e38, float("inf"), float("-inf"), -3e38
    q, scale = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x)
    assert_bitwise(scale, sr, "scale")
    assert_bitwise(q, qr, "q")
    qmax = 127 if name.startswith("int8") else 448
    assert torch.isfinite(scale).all() and (scale > 0).all()
    assert torch.isfinite(q.float()).all() and q.float().abs().max() <= qmax
    d = dequant(name, q, scale)
    assert torch.isfinite(d).all()
    assert abs(d[0, 3].item() / 1e6 - 1) < 2**-4 and abs(d[1, 130].item() / -1e38 - 1) < 2**-4
    # inf and -3e38 -> +-QMAX at the largest scale, 2^127 / QMAX
    assert q[2, 260].item() == qmax and q[3, 390].item() == -qmax and q[M - 1, 3].item() == -qmax
    for i, j, sign in [(2, 260, 1), (3, 390, -1), (M - 1, 3, -1)]:
        assert abs(d[i, j].item() / (sign * Q.AMAX_CEIL) - 1) < 1e-6


@pytest.mark.parametrize("name", QUANTIZERS)
def test_all_zero_rows_and_blocks(name):
    """A zero row (and, blockwise, a zero block inside data) gets scale AMAX_FLOOR / QMAX, finite and
    positive, and q = 0."""
    x = spread(17, 257, BF)
    x[5] = 0
    x[:, 128:256] = 0  # the second K block of every row: a zero (1, 128) / (128, 128) block
    q, scale = QUANTIZERS[name][0](x)
    assert_bitwise(scale, QUANTIZERS[name][1](x)[1], "scale")
    floor = torch.tensor(Q.AMAX_FLOOR, dtype=F32) / (127.0 if name.startswith("int8") else 448.0)
    assert torch.isfinite(scale).all() and (scale > 0).all()
    assert (q[5].float() == 0).all() and (q[:, 128:256].float() == 0).all()
    if name in BLOCK_OF:
        assert (scale[:, 1] == floor).all()
    else:
        assert scale.flatten()[5] == floor


@pytest.fixture(params=["numpy", "gpu"])
def nan_minmax(request, monkeypatch):
    """How minimum / maximum treat NaN while a kernel runs. "numpy": the interpreter's own (np.minimum /
    np.maximum propagate NaN). "gpu": NaN dropped, as the GPUs' min / max instructions do for tl.minimum /
    tl.maximum (IEEE minNum / maxNum: PTX min.f32 / max.f32, AMDGCN v_min_f32 / v_max_f32), modelled by swapping
    the interpreter builder's minnumf / maxnumf for np.fmin / np.fmax (restored after the test). A rule that
    leans on NaN passing through a clamp holds on the CPU only; the quantizers' NaN rule must hold under both."""
    if request.param == "gpu":
        from triton.runtime import interpreter

        builder = interpreter.InterpreterBuilder
        monkeypatch.setattr(builder, "create_minnumf", lambda self, a, b: self.binary_op(a, b, np.fmin))
        monkeypatch.setattr(builder, "create_maxnumf", lambda self, a, b: self.binary_op(a, b, np.fmax))
    return request.param


@pytest.mark.parametrize("name", QUANTIZERS)
def test_nan_poisons_its_row_or_block(name, nan_minmax):
    """NaN input: scale NaN and q = 0 (+0, bit pattern 0) for its row / block, so q * scale is NaN there;
    others exact. Under both NaN semantics of min / max (`nan_minmax`): with NaN-dropping min / max a NaN
    left to the clamp would come out as -QMAX (fp8 -448, int8 -127) for the whole row / block."""
    x = spread(17, 200, F32)
    x[4, 150] = float("nan")
    q, scale = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x)
    assert_bitwise(scale, sr, "scale")
    assert_bitwise(q, qr, "q")
    d = dequant(name, q, scale)
    poisoned = {"fp8_block_1x128": (slice(4, 5), slice(128, 200)),
                "fp8_block_128x128": (slice(0, 17), slice(128, 200))}.get(name, (slice(4, 5), slice(None)))
    assert torch.isnan(d[poisoned]).all() and (bits(q[poisoned].contiguous()) == 0).all()
    assert torch.isnan(scale.flatten()).sum() == 1  # only the NaN's own row / block scale
    clean = torch.ones_like(d, dtype=torch.bool)
    clean[poisoned] = False
    assert torch.isfinite(d[clean]).all()


@pytest.mark.parametrize("layout", ["strided_k", "transposed"])
@pytest.mark.parametrize("name", ["fp8_per_token", "int8_per_token", "fp8_block_1x128", "fp8_block_128x128"])
def test_non_contiguous_input(name, layout):
    base = spread(40, 300, BF)
    x = base[:17, 1::2] if layout == "strided_k" else base[:, :150].t()[:, :17]
    assert not x.is_contiguous()
    q, scale = QUANTIZERS[name][0](x)
    qr, sr = QUANTIZERS[name][1](x.contiguous())
    assert_bitwise(scale, sr, "scale")
    assert_bitwise(q, qr, "q")


def test_empty_and_k_zero():
    q, s = Q.quantize_fp8_per_token(torch.empty(0, 64, dtype=BF), E4M3)
    assert q.shape == (0, 64) and s.shape == (0, 1)
    q, s = Q.quantize_fp8_per_token(torch.empty(3, 0, dtype=BF), E4M3)  # empty rows: the zero-row scale
    assert q.shape == (3, 0) and (s == torch.tensor(Q.AMAX_FLOOR, dtype=F32) / 448).all()
    q, s = Q.quantize_fp8_blockwise(torch.empty(3, 0, dtype=BF), (1, 128), E4M3)
    assert q.shape == (3, 0) and s.shape == (3, 0)
    p, s = Q.quantize_mxfp4(torch.empty(0, 64))
    assert p.shape == (0, 32) and s.shape == (0, 2)


def test_default_dtype_follows_target(monkeypatch):
    assert Q.fp8_dtype_for(arch.get("sm_90")) == E4M3
    assert Q.fp8_dtype_for(arch.get("gfx950")) == E4M3
    assert Q.fp8_dtype_for(arch.get("gfx942")) == FNUZ
    for t in arch.TARGETS.values():  # agrees with the target fact, where gemmkit.arch has one
        assert getattr(t, "fp8_e4m3", None) in (None, str(Q.fp8_dtype_for(t)).removeprefix("torch.")), t.name
    x = spread(3, 64, BF)
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx950")
    assert Q.quantize_fp8_per_token(x)[0].dtype == E4M3
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx942")  # picks e4m3fnuz, which the interpreter lacks before 3.8
    if Q.C.interpreter_lacks(FNUZ):
        with pytest.raises(ValueError, match=r"^dtype: torch.float8_e4m3fnuz \(gfx942's fp8\) does not run in Triton "
                                             r"3\.[67]'s interpreter"):
            Q.quantize_fp8_per_token(x)
    else:  # (tests/ops/test_a8w8.py test_gfx942_fnuz checks its values)
        assert Q.quantize_fp8_per_token(x)[0].dtype == FNUZ


def test_dtype_per_target_on_gpu_tensors(monkeypatch):
    """On a GPU tensor the format follows the device's target (fake cuda tensors, target patched)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 64, dtype=BF, device="cuda")
        monkeypatch.setattr(Q.C, "target_for", lambda device: arch.get("gfx942"))
        assert Q.quantize_fp8_per_token(x)[0].dtype == FNUZ
        assert Q.quantize_fp8_blockwise(x, (1, 128), E4M3)[0].dtype == E4M3  # explicit: kept
        monkeypatch.setattr(Q.C, "target_for", lambda device: arch.get("sm_90"))
        assert Q.quantize_fp8_per_channel(x)[0].dtype == E4M3
        with pytest.raises(TypeError, match=r"^dtype: H200 \(sm_90\) has no torch.float8_e4m3fnuz"):
            Q.quantize_fp8_per_token(x, FNUZ)


# ----------------------------------------------------------------------------- MXFP4

E2M1_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def mx_scale(scales):
    return torch.exp2(scales.double() - 127).float().repeat_interleave(32, 1)


@pytest.mark.parametrize("shape", [(1, 32), (17, 96), (5, 288)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_mxfp4_bitwise_and_round_trip(shape, launches):
    M, K = shape
    x = spread(M, K, (BF, F16, F32)[M % 3])
    x[:, :32] *= 1e4 if x.dtype != F16 else 10  # groups of one row at very different scales
    before = launches["mxfp4_quant_kernel"], launches["mxfp4_dequant_kernel"]
    packed, scales = Q.quantize_mxfp4(x)
    pr, sr = Q.quantize_mxfp4_ref(x)
    assert packed.shape == (M, K // 2) and packed.dtype == torch.uint8 and scales.shape == (M, K // 32)
    assert scales.dtype == torch.uint8
    assert_bitwise(scales, sr, "scales")
    assert_bitwise(packed, pr, "packed")
    y = Q.dequantize_mxfp4(packed, scales)
    assert (launches["mxfp4_quant_kernel"], launches["mxfp4_dequant_kernel"]) == (before[0] + 1, before[1] + 1)
    assert y.dtype == F32 and y.shape == (M, K)
    assert_bitwise(y, Q.dequantize_mxfp4_ref(packed, scales), "dequantized")
    # The OCP scale rule, read independently: X = floor(log2(amax)) - 2 (frexp: amax = m * 2^e, m in [0.5, 1)).
    amax = x.float().reshape(M, K // 32, 32).abs().amax(-1)
    assert torch.equal(scales.int(), torch.frexp(amax).exponent - 1 - 2 + 127)
    # |y - x| <= max(scale / 4, |x| / 4): half the grid step below 2, at most a quarter of |x| above
    # (values in (6, 8) * scale saturate to 6).
    xf, s = x.float(), mx_scale(scales)
    assert ((y - xf).abs() <= torch.maximum(0.25 * s, 0.25 * xf.abs()) * (1 + 1e-6)).all()
    assert ((y - xf).norm() / xf.norm()).item() < 0.2


def test_mxfp4_nibble_order_hand_packed():
    """Element 2i is the LOW nibble of byte i, 2i + 1 the high one (tl.dot_scaled's e2m1 packing)."""
    x = torch.zeros(1, 32)
    x[0, 0], x[0, 1] = 1.0, -6.0  # codes 0x2 and 0xF; amax 6 -> X = 2 - 2 = 0 -> scale byte 127
    packed, scales = Q.quantize_mxfp4(x)
    assert scales.tolist() == [[127]]
    assert packed[0, 0].item() == 0xF2 and (packed[0, 1:] == 0).all()
    # The other way round, by hand: byte 0x2F = element 0 -> code 0xF (-6), element 1 -> code 0x2 (1.0);
    # byte 0x71 = 0.5 then 6; scale byte 128 doubles them.
    hand = torch.zeros(1, 16, dtype=torch.uint8)
    hand[0, 0], hand[0, 1] = 0x2F, 0x71
    y = Q.dequantize_mxfp4(hand, torch.tensor([[128]], dtype=torch.uint8))
    assert y[0, :4].tolist() == [-12.0, 2.0, 1.0, 12.0] and (y[0, 4:] == 0).all()


def test_mxfp4_matches_triton_mxfp4tensor():
    """Codes and packing agree with Triton's own MX helper (triton.tools.mxfp), given our scales.
    Fixed seed: that helper breaks ties with a 1e-6 nudge, so values within 1e-6 of a midpoint
    could legitimately differ."""
    from triton.tools.mxfp import MXFP4Tensor

    x = spread(8, 128, F32, seed=1234)
    packed, scales = Q.quantize_mxfp4(x)
    scaled = x.reshape(8, 4, 32) / torch.exp2(scales.double() - 127).float()[..., None]
    theirs = MXFP4Tensor(data=scaled.reshape(8, 128).contiguous()).to_packed_tensor(dim=1)
    assert torch.equal(packed, theirs)


def test_mxfp4_grid_ties_and_saturation():
    """amax 7 -> X = 0: the grid is exact, ties go to the even code, 7 saturates to 6."""
    vals = [7.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 5.1, -0.1, *E2M1_GRID, *[-v for v in E2M1_GRID[1:]]]
    x = torch.zeros(1, 32)
    x[0, : len(vals)] = torch.tensor(vals)
    packed, scales = Q.quantize_mxfp4(x)
    assert scales.item() == 127
    y = Q.dequantize_mxfp4(packed, scales)[0, : len(vals)].tolist()
    assert y[:10] == [6.0, 0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, -0.0]
    assert y[10:] == vals[10:]
    assert packed[0, 4].item() >> 4 == 0x8  # element 9, -0.1, rounds to zero and keeps its sign (code 0x8)


def test_mxfp4_zero_nan_inf_groups(nan_minmax):
    x = spread(3, 128, F32)
    x[0, 32:64] = 0  # all-zero group: byte 0 (2^-127), codes 0
    x[1, 70] = float("nan")  # NaN group: byte 255 (E8M0 NaN), codes 0
    x[2, 100] = float("inf")  # inf: code 6 at the largest finite scale
    packed, scales = Q.quantize_mxfp4(x)
    pr, sr = Q.quantize_mxfp4_ref(x)
    assert_bitwise(scales, sr, "scales")
    assert_bitwise(packed, pr, "packed")
    assert scales[0, 1].item() == 0 and (packed[0, 16:32] == 0).all()
    assert scales[1, 2].item() == 255 and (packed[1, 32:48] == 0).all()
    assert scales[2, 3].item() == 125 + 127 and packed[2, 50].item() & 0xF == 0x7
    y = Q.dequantize_mxfp4(packed, scales)
    assert (y[0, 32:64] == 0).all() and torch.isnan(y[1, 64:96]).all()
    assert y[2, 100].item() == 6.0 * 2.0**125 and torch.isfinite(y[2]).all()
    assert torch.isfinite(y[0]).all() and torch.isfinite(y[1, :64]).all() and torch.isfinite(y[1, 96:]).all()


def test_mxfp4_non_contiguous():
    base = spread(64, 256, BF)
    for x in (base[:9, ::2], base[:, :64].t()):
        assert not x.is_contiguous()
        packed, scales = Q.quantize_mxfp4(x)
        pr, sr = Q.quantize_mxfp4_ref(x.contiguous())
        assert_bitwise(scales, sr, "scales")
        assert_bitwise(packed, pr, "packed")
    p = torch.randint(0, 256, (4, 64), dtype=torch.uint8)
    s = torch.randint(100, 150, (4, 4), dtype=torch.uint8)
    y = Q.dequantize_mxfp4(p[:, ::2], s[:, ::2])
    assert_bitwise(y, Q.dequantize_mxfp4_ref(p[:, ::2].contiguous(), s[:, ::2].contiguous()), "dequantized")


# ----------------------------------------------------------------------------- bad inputs

X = torch.zeros(4, 64, dtype=BF)


def U8(*shape):
    return torch.zeros(*shape, dtype=torch.uint8)


BAD = [
    ("x_dtype", lambda: Q.quantize_fp8_per_token(X.int(), E4M3), TypeError,
     r"^x: expected dtype torch.bfloat16 or torch.float16 or torch.float32, got torch.int32"),
    ("x_3d", lambda: Q.quantize_int8_per_token(X.view(2, 2, 64)), ValueError,
     r"^x: expected a 2-D tensor, got shape \(2, 2, 64\)"),
    ("w_not_tensor", lambda: Q.quantize_fp8_per_channel([[1.0]]), TypeError, r"^w: expected a torch.Tensor, got list"),
    ("fp8_dtype", lambda: Q.quantize_fp8_per_token(X, torch.int8), TypeError,
     r"^dtype: expected None, torch.float8_e4m3fn or torch.float8_e4m3fnuz, got torch.int8"),
    ("block_shape", lambda: Q.quantize_fp8_blockwise(X, (64, 64), E4M3), ValueError,
     r"^block: expected \(1, 128\) or \(128, 128\), got \(64, 64\)"),
    ("block_kind", lambda: Q.quantize_fp8_blockwise(X, "1x128", E4M3), ValueError, r"^block: expected"),
    ("op_dtype", lambda: torch.ops.gemmkit.quantize_rowwise(X, torch.float16), TypeError,
     r"^dtype: expected torch.float8_e4m3fn or torch.float8_e4m3fnuz or torch.int8, got torch.float16"),
    ("mxfp4_k", lambda: Q.quantize_mxfp4(torch.zeros(4, 48)), ValueError,
     r"^x: expected K \(x.shape\[1\]\) divisible by 32 for MXFP4, got shape \(4, 48\)"),
    ("mxfp4_dtype", lambda: Q.quantize_mxfp4(torch.zeros(4, 64, dtype=torch.float64)), TypeError,
     r"^x: expected dtype"),
    ("packed_dtype", lambda: Q.dequantize_mxfp4(torch.zeros(4, 16, dtype=torch.int8), U8(4, 1)), TypeError,
     r"^packed: expected dtype torch.uint8, got torch.int8"),
    ("packed_k", lambda: Q.dequantize_mxfp4(U8(4, 8), U8(4, 1)), ValueError,
     r"^packed: expected shape \(M, K/2\) with K divisible by 32, got \(4, 8\)"),
    ("scales_shape", lambda: Q.dequantize_mxfp4(U8(4, 32), U8(4, 1)), ValueError,
     r"^scales: expected shape \(4, 2\) \(M, K/32\) for packed \(4, 32\), got \(4, 1\)"),
]
if Q.C.interpreter_lacks(FNUZ):  # Triton < 3.8 (from 3.8 the interpreter runs it: test_a8w8.py test_gfx942_fnuz)
    BAD.append(("fnuz_interpreter", lambda: Q.quantize_fp8_blockwise(X, (1, 128), FNUZ), ValueError,
                r"^dtype: torch.float8_e4m3fnuz \(gfx942's fp8\) does not run in Triton 3\.[67]'s interpreter"))


@pytest.mark.parametrize("call,exc,msg", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ----------------------------------------------------------------------------- custom ops, torch.compile

def test_opcheck():
    x = spread(9, 160, BF)
    torch.library.opcheck(torch.ops.gemmkit.quantize_rowwise.default, (x, E4M3))
    torch.library.opcheck(torch.ops.gemmkit.quantize_rowwise.default, (x, torch.int8))
    torch.library.opcheck(torch.ops.gemmkit.quantize_fp8_blockwise.default, (x, 128, 128, E4M3))
    torch.library.opcheck(torch.ops.gemmkit.quantize_fp8_blockwise.default, (x, 1, 128, E4M3))  # M-major scale
    torch.library.opcheck(torch.ops.gemmkit.quantize_mxfp4.default, (x,))
    p, s = Q.quantize_mxfp4(x)
    torch.library.opcheck(torch.ops.gemmkit.dequantize_mxfp4.default, (p, s))


def test_fake_shapes_and_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(300, 260, dtype=BF)
        q, s = Q.quantize_fp8_per_channel(x, E4M3)
        assert q.shape == (300, 260) and q.dtype == E4M3 and s.shape == (1, 300) and s.dtype == F32
        q, s = Q.quantize_fp8_blockwise(x, (128, 128), E4M3)
        assert q.shape == (300, 260) and s.shape == (3, 3)
        p, s = Q.quantize_mxfp4(torch.empty(5, 64, dtype=BF))
        assert p.shape == (5, 32) and s.shape == (5, 2) and p.dtype == s.dtype == torch.uint8
        assert Q.dequantize_mxfp4(p, s).shape == (5, 64)
        with pytest.raises(ValueError, match=r"^block: expected"):
            Q.quantize_fp8_blockwise(x, (1, 64), E4M3)


def test_torch_compile_fullgraph(launches, backend="aot_eager"):
    """The quantizers are opaque custom ops to the compiler; the kernels still run inside. (Inductor
    works too, ~10 s here; tests/ops/test_torch_integration.py covers it for the GEMM's custom ops.)"""
    torch._dynamo.reset()

    def f(x, w):
        qx, sx = Q.quantize_fp8_per_token(x * 2)
        qw, sw = Q.quantize_fp8_blockwise(w, (128, 128), E4M3)
        p, s = Q.quantize_mxfp4(x)
        return qx.float() * sx, qw, sw, Q.dequantize_mxfp4(p, s)

    x, w = spread(9, 160, BF), spread(130, 160, BF)
    before = sum(launches.values())
    dx, qw, sw, dmx = torch.compile(f, fullgraph=True, backend=backend)(x, w)
    assert sum(launches.values()) == before + 4
    qxr, sxr = Q.quantize_fp8_per_token_ref(x * 2, E4M3)
    assert_bitwise(dx, qxr.float() * sxr, "per-token dequantized")
    assert_bitwise(qw, Q.quantize_fp8_blockwise_ref(w, (128, 128), E4M3)[0], "block q")
    assert_bitwise(dmx, Q.dequantize_mxfp4_ref(*Q.quantize_mxfp4_ref(x)), "mxfp4 round trip")


# ----------------------------------------------------------------------------- static compiles

_STATIC = """
import json, re, sys, torch
from gemmkit import arch, quant
from gemmkit.isa import compile_static, resources
DECODE = {"shape": (1, 14336)}  # the rowwise kernel's decode launch: one row per program, the row in one 16384 tile
cases = {"gfx942": [("quant_rowwise_kernel", {}), ("quant_rowwise_kernel", {"dtype": torch.int8}),
                    ("quant_rowwise_kernel", DECODE),
                    ("quant_block_kernel", {"block": (1, 128)}), ("quant_block_kernel", {"block": (128, 128)})],
         "gfx950": [("quant_rowwise_kernel", {}), ("quant_rowwise_kernel", DECODE), ("quant_block_kernel", {"block": (128, 128)}),
                    ("mxfp4_quant_kernel", {}), ("mxfp4_dequant_kernel", {})],
         "sm_90": [("quant_rowwise_kernel", {}), ("quant_rowwise_kernel", DECODE), ("quant_block_kernel", {"block": (1, 128)}),
                   ("mxfp4_quant_kernel", {}), ("mxfp4_dequant_kernel", {})]}[sys.argv[1]]
GATED = [("quant_block_kernel", {"block": (1, 128), "gated": "silu"}), ("quant_rowwise_kernel", {"gated": "gelu"}),
         ("quant_rowwise_kernel", dict(DECODE, gated="silu")),  # the gated forms (a gated MLP's activation), and
         ("quant_rowwise_kernel", {"shape": (4096, 14336), "gated": "silu"})]  # a TP-2 70B shard's: one pass, 16 warps
cases += [(n, kw) for n, kw in GATED if sys.argv[1] != "gfx950"]
t = arch.ARCHS[sys.argv[1]]
out = []
for name, kw in cases:
    kernel, sig, ce, div, opts = quant.static_spec(name, t, **kw)
    c = compile_static(kernel, sig, ce, t, opts, div)
    asm = c.asm["amdgcn"] if t.is_amd else c.asm["ptx"]
    row = {"arch": t.arch, "kernel": name, "q": sig.get("q_ptr"), "decode": kw is DECODE, "gated": "gated" in kw,
           "cvt": sorted(set(re.findall(r"v_cvt_\\w*pk_fp8_f32|cvt\\.rn\\.satfinite\\.e4m3x2\\.f32", asm)))}
    row["spill_bytes"] = resources(c, t)["spill_bytes"]
    out.append(row)
print(json.dumps(out))
"""


def test_static_compile_fnuz_gfx942_and_others(tmp_path):
    """e4m3fnuz cannot run in the 3.6 interpreter (from 3.8 it does: test_a8w8.py test_gfx942_fnuz): its kernels
    compile for gfx942 (hardware fp8 conversion, no spills), next to gfx950 / sm_90 builds, in processes that do not
    interpret.

    One process per target: Triton 3.6's AMD backend picks its fp8 conversion lowering for the first
    AMD target a process compiles for. After a gfx942 compile, gfx950 gets the software conversion
    (and that binary lands in the on-disk cache under the normal key); after a gfx950 compile, the
    gfx942 e4m3fnuz conversion aborts the process (`Fp32_to_Fp8E4M3FNUZ_SW: v.size() == 2`).
    """
    env = dict(os.environ, TRITON_INTERPRET="0", TRITON_CACHE_DIR=str(tmp_path))
    rows = []
    for target in ("gfx942", "gfx950", "sm_90"):
        r = subprocess.run([sys.executable, "-c", _STATIC, target], env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"{target}: " + r.stderr[-3000:]
        rows += json.loads(r.stdout.strip().splitlines()[-1])
    by = {(x["arch"], x["kernel"], x["q"]): x for x in rows if not x["decode"] and not x["gated"]}
    decode = [x for x in rows if x["decode"]]
    gated = [x for x in rows if x["gated"]]
    assert len(gated) == 8 and all(x["cvt"] for x in gated), gated  # the gated forms compile, fp8 stores and all
    assert len(decode) == 3 and all(x["cvt"] for x in decode), decode  # the decode launch compiles on each target
    for key in [("gfx942", "quant_rowwise_kernel", "*fp8e4b8"), ("gfx942", "quant_block_kernel", "*fp8e4b8")]:
        assert by[key]["cvt"] == ["v_cvt_pk_fp8_f32"], by[key]
    for k in ("quant_rowwise_kernel", "quant_block_kernel"):
        assert by[("gfx950", k, "*fp8e4nv")]["cvt"] == ["v_cvt_scalef32_pk_fp8_f32"], by[("gfx950", k, "*fp8e4nv")]
        assert by[("sm_90", k, "*fp8e4nv")]["cvt"] == ["cvt.rn.satfinite.e4m3x2.f32"]
    assert all(x["spill_bytes"] == 0 for x in rows), rows


def test_blockwise_scale_layouts():
    """Token groups (1, 128): scale (M, KB) M-major, strides (1, M) (the FP8 kernel reads a K block's scales of a
    tile as one line), the eager and compiled paths alike; weight blocks (128, 128): row-major."""
    x = spread(33, 300, BF)
    _q, s = Q.quantize_fp8_blockwise(x, (1, 128), E4M3)
    assert s.shape == (33, 3) and s.stride() == (1, 33)
    _q, s = torch.compile(lambda t: Q.quantize_fp8_blockwise(t, (1, 128), E4M3), fullgraph=True)(x)
    assert s.shape == (33, 3) and s.stride() == (1, 33)
    _q, s = Q.quantize_fp8_blockwise(x, (128, 128), E4M3)
    assert s.shape == (1, 3) and s.stride() == (3, 1)


# ----------------------------------------------------------------------------- out= and call plans (ops/_registry.Op)

OUT_CALLS = {  # name -> (call(x, out), the outputs' (shape, dtype) for x (M, K))
    "fp8_per_token": (lambda x, out: Q.quantize_fp8_per_token(x, E4M3, out=out),
                      lambda M, K: [((M, K), E4M3), ((M, 1), F32)]),
    "int8_per_token": (lambda x, out: Q.quantize_int8_per_token(x, out=out),
                       lambda M, K: [((M, K), torch.int8), ((M, 1), F32)]),
    "fp8_block_1x128": (lambda x, out: Q.quantize_fp8_blockwise(x, (1, 128), E4M3, out=out),
                        lambda M, K: [((M, K), E4M3), ((M, -(-K // 128)), F32)]),
    "fp8_block_128x128": (lambda x, out: Q.quantize_fp8_blockwise(x, (128, 128), E4M3, out=out),
                          lambda M, K: [((M, K), E4M3), ((-(-M // 128), -(-K // 128)), F32)]),
    "mxfp4": (lambda x, out: Q.quantize_mxfp4(x, out=out),
              lambda M, K: [((M, K // 2), torch.uint8), ((M, K // 32), torch.uint8)]),
}


def _poisoned(shape, dtype):
    t = torch.empty(shape, dtype=dtype)
    t.view(torch.uint8).fill_(0xFF)  # NaN bits for fp32 / fp8, 255 for uint8, -1 for int8
    return t


@pytest.mark.parametrize("name", OUT_CALLS)
def test_out_writes_in_place_what_a_fresh_call_returns(name):
    call, outs_of = OUT_CALLS[name]
    M, K = 37, 288
    x = spread(M, K, BF)
    fresh = call(x, None)
    out = tuple(_poisoned(s, d) for s, d in outs_of(M, K))
    got = call(x, out)
    assert all(g is o for g, o in zip(got, out))
    for g, f, what in zip(got, fresh, ("q", "scale")):
        assert_bitwise(g, f.contiguous(), what)
    if name == "fp8_block_1x128":  # a row-major scale out= is taken as given (the kernel takes its strides)
        assert fresh[1].stride() == (1, M) and out[1].stride() == (out[1].shape[1], 1)


def test_dequantize_out_and_the_custom_out_ops():
    x = spread(5, 64, F32)
    p, s = Q.quantize_mxfp4(x)
    y = _poisoned((5, 64), F32)
    assert Q.dequantize_mxfp4(p, s, out=y) is y
    assert_bitwise(y, Q.dequantize_mxfp4_ref(p, s), "dequantized")
    q, sc = _poisoned((5, 64), E4M3), _poisoned((5, 1), F32)
    torch.ops.gemmkit.quantize_rowwise_out(x, E4M3, q, sc)
    qr, sr = Q.quantize_fp8_per_token_ref(x, E4M3)
    assert_bitwise(q, qr, "q")
    assert_bitwise(sc, sr, "scale")


@pytest.mark.parametrize("bad, exc, msg", [
    (lambda M, K: (torch.empty(M, K + 1, dtype=E4M3), torch.empty(M, 1)), ValueError, "out[0]: expected shape"),
    (lambda M, K: (torch.empty(M, K, dtype=E4M3), torch.empty(M, 1, dtype=F16)), TypeError, "out[1]: expected dtype"),
    (lambda M, K: (torch.empty(K, M, dtype=E4M3).t(), torch.empty(M, 1)), ValueError, "out[0]: expected a contiguous"),
    (lambda M, K: (torch.empty(M, K, dtype=E4M3), torch.empty(1, 1).expand(M, 1)), ValueError, "out[1]: expected a"),
])
def test_out_refusals(bad, exc, msg):
    x = spread(6, 96, BF)
    with pytest.raises(exc, match=msg.replace("[", r"\[").replace("]", r"\]")):
        Q.quantize_fp8_per_token(x, E4M3, out=bad(6, 96))


def test_out_may_not_alias_the_input():
    x = spread(4, 64, F32)
    with pytest.raises(ValueError, match="overlaps x"):
        Q.quantize_fp8_per_token(x, E4M3, out=(x.view(-1).view(torch.uint8)[:256].view(4, 64).view(E4M3),
                                               torch.empty(4, 1)))


def test_a_repeated_quantizer_call_replays_its_plan_and_keeps_the_m_major_scale():
    from gemmkit import callplan as CP

    CP.clear()
    x1, x2 = spread(40, 256, BF), spread(40, 256, BF)
    q1, s1 = Q.quantize_fp8_blockwise(x1, (1, 128), E4M3)
    before = CP.STATS["replays"]
    q2, s2 = Q.quantize_fp8_blockwise(x2, (1, 128), E4M3)
    assert CP.STATS["replays"] == before + 1, "the second call of one signature did not replay its plan"
    assert s2.stride() == s1.stride() == (1, 40)
    x3 = spread(40, 100, BF)  # one K block: an (M, 1) scale, M-major strides (1, M), not torch.empty's (1, 1)
    for _ in range(2):
        assert Q.quantize_fp8_blockwise(x3, (1, 128), E4M3)[1].stride() == (1, 40)
    qr, sr = Q.quantize_fp8_blockwise_ref(x2, (1, 128), E4M3)
    assert_bitwise(s2, sr, "scale")
    assert_bitwise(q2, qr, "q")
