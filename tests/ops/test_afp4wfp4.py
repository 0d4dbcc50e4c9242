"""gemm_afp4wfp4 (OCP MXFP4) in the Triton interpreter, against float64, plus its static compiles.

On the CPU, tl.dot_scaled runs as gemmkit's interpreter models it (gemmkit/kernels/_interpreter.py:
Triton 3.6's interpreter has none): e2m1 x e2m1 packed along K, E8M0 scales per 32. So these tests
check everything of the kernel but the MMA instruction: the packed byte and scale addressing per K
step, strides, the K-tail masks (a wrong fill value, e.g. the E8M0 NaN byte, shows up as NaN),
split-K, persistence, the schedule and the store. The real tl.dot_scaled (and the nibble order on
the hardware) is checked by tests/ops/test_afp4wfp4_gpu.py on the GPU (emulated path) and by the gfx950
static compile below (native scaled MFMA).

References: gemmkit.quant.dequantize_mxfp4_ref (a decoder independent of triton.tools.mxfp) and a
float64 matmul. E2M1 values times powers of two are exact in fp32 and in float64, so the error is
fp32 accumulation plus the final rounding to out_dtype (tests/_util.py bounds).
"""
import itertools
import json
import os
import re
import subprocess
import sys

import pytest
import torch

import gemmkit
import gemmkit.quant as Q

from _util import poisoned, randn, within_bound

pytestmark = pytest.mark.interpreter
SMALL = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2}


def mx(rows, K, kind="quantized"):
    """(packed (rows, K/2), scales (rows, K/32)): MXFP4 of fresh normal values, or (kind='bytes') every
    code at random (both zeros, all magnitudes) with scale bytes around 2^0."""
    if kind == "quantized":
        return Q.quantize_mxfp4(randn(rows, K, dtype=torch.float32) * 3)
    g = torch.Generator().manual_seed(torch.seed())
    return (torch.randint(0, 256, (rows, K // 2), generator=g, dtype=torch.uint8),
            torch.randint(120, 135, (rows, K // 32), generator=g, dtype=torch.uint8))


def ref(xq, wq, xs, ws):
    """float64 product of the dequantized operands (gemmkit.quant's torch decoder)."""
    x = Q.dequantize_mxfp4_ref(xq.contiguous(), xs.contiguous()).double()
    w = Q.dequantize_mxfp4_ref(wq.contiguous(), ws.contiguous()).double()
    return x @ w.T


SHAPES = list(itertools.product([1, 17, 64], [1, 31, 96], [32, 96, 256]))


@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, launches):
    """K = 32 (one partial step), 96 (a full step and a masked tail), 256; M, N edges; odd shapes
    through the shipped sm_90 table, the others through a small config."""
    (xq, xs), (wq, ws) = mx(M, K, "bytes" if M == 17 else "quantized"), mx(N, K, "bytes" if N == 31 else "quantized")
    out = poisoned((M, N), torch.float32)
    before = launches["gemm_afp4wfp4_kernel"]
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out, config=None if (M + N + K) % 2 else SMALL)
    assert y is out and launches["gemm_afp4wfp4_kernel"] == before + 1, "the Triton kernel did not run"
    ok, msg = within_bound(y, ref(xq, wq, xs, ws), torch.float32)
    assert ok, msg


PATHS = {"pointer": SMALL, "persistent": dict(SMALL, persistent=True),
         "split_k": dict(SMALL, NUM_KSPLIT=3), "split_k_persistent": dict(SMALL, NUM_KSPLIT=2, persistent=True),
         "bk128_group1": dict(SMALL, BLOCK_SIZE_K=128, GROUP_SIZE_M=1, BLOCK_SIZE_M=32)}


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("path", list(PATHS))
def test_out_dtypes_and_paths(out_dtype, path, launches):
    M, N, K = 37, 70, 352  # K = 5.5 steps of 64: a masked tail in the last split
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K, "bytes")
    before = launches["splitk_reduce_kernel"]
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=out_dtype, config=PATHS[path])
    assert y.dtype == out_dtype and y.shape == (M, N)
    assert launches["splitk_reduce_kernel"] == before + ("split_k" in path)
    ok, msg = within_bound(y, ref(xq, wq, xs, ws), out_dtype)
    assert ok, msg


@pytest.mark.parametrize("layout", ["x_k_strided", "x_col_major", "w_col_major", "scales_col_major",
                                    "scales_strided"])
def test_strided(layout):
    M, N, K = 19, 40, 192
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K, "bytes")
    if layout == "x_k_strided":  # every other byte of a wider buffer
        wide = torch.zeros(M, K, dtype=torch.uint8)
        wide[:, ::2] = xq
        xq = wide[:, ::2]
    elif layout == "x_col_major":
        xq = xq.t().contiguous().t()
    elif layout == "w_col_major":
        wq = wq.t().contiguous().t()
    elif layout == "scales_col_major":  # as DeepGEMM-style callers keep them
        xs, ws = xs.t().contiguous().t(), ws.t().contiguous().t()
    else:
        wide = torch.zeros(N, 2 * (K // 32), dtype=torch.uint8)
        wide[:, 1::2] = ws
        ws = wide[:, 1::2]
    assert not all(t.is_contiguous() for t in (xq, wq, xs, ws))
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=torch.float32, config=SMALL)
    ok, msg = within_bound(y, ref(xq, wq, xs, ws), torch.float32)
    assert ok, msg


def selector(N, K):
    """w whose row n is 1.0 at element n and 0 elsewhere (code 0x2, scale byte 127), so y[:, n] = x[:, n]."""
    codes = torch.zeros(N, K, dtype=torch.uint8)
    codes[torch.arange(N), torch.arange(N)] = 0x2
    return codes[:, 0::2] | (codes[:, 1::2] << 4), torch.full((N, K // 32), 127, dtype=torch.uint8)


def test_nibble_order_hand_packed():
    """Element 2i of x is the LOW nibble of byte i: bytes written by hand, read back through the GEMM with
    a selector w (y[0, n] = x[0, n]); no gemmkit decoder involved."""
    K = 64
    x = torch.zeros(1, K // 2, dtype=torch.uint8)
    x[0, 0], x[0, 1], x[0, 2] = 0x2F, 0x71, 0xC3  # (-6, 1), (0.5, 6), (1.5, -2)
    xs = torch.tensor([[128, 126]], dtype=torch.uint8)  # elements 0-31 times 2, 32-63 times 1/2
    x[0, 16] = 0x0B  # elements 32, 33: -1.5 (code 0xB), 0
    wq, ws = selector(K, K)
    y = gemmkit.gemm_afp4wfp4(x, wq, xs, ws, out_dtype=torch.float32, config=SMALL)
    assert y[0, :6].tolist() == [-12.0, 2.0, 1.0, 12.0, 3.0, -4.0]
    assert y[0, 32:34].tolist() == [-0.75, 0.0]
    assert (y[0, 6:32] == 0).all() and (y[0, 34:] == 0).all()


def test_scale_groups_are_per_32_along_k():
    """Doubling one E8M0 byte (x row 3, K group 2) doubles exactly that group's contribution."""
    M, N, K = 8, 24, 128
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    base = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=torch.float32, config=SMALL)
    xs2 = xs.clone()
    xs2[3, 2] += 1
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs2, ws, out_dtype=torch.float32, config=SMALL)
    rows = torch.arange(M) != 3
    assert torch.equal(y[rows], base[rows])
    ok, msg = within_bound(y, ref(xq, wq, xs2, ws), torch.float32)
    assert ok, msg


def test_nan_scale_poisons_its_row_only():
    M, N, K = 4, 16, 64
    (xq, xs), (wq, ws) = mx(M, K), mx(N, K)
    xs[1, 0] = 255  # E8M0 NaN
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=torch.float32, config=SMALL)
    assert torch.isnan(y[1]).all() and torch.isfinite(y[[0, 2, 3]]).all()


def test_quantize_then_gemm_end_to_end():
    """The chain a user runs: bf16 -> quantize_mxfp4 -> gemm_afp4wfp4, within MXFP4's own error of x @ w.T."""
    M, N, K = 33, 48, 256
    x, w = randn(M, K, dtype=torch.bfloat16), randn(N, K, dtype=torch.bfloat16)
    (xq, xs), (wq, ws) = Q.quantize_mxfp4(x), Q.quantize_mxfp4(w)
    y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws)
    assert y.dtype == torch.bfloat16
    ok, msg = within_bound(y, ref(xq, wq, xs, ws), torch.bfloat16)
    assert ok, msg
    exact = x.double() @ w.double().T
    assert ((y.double() - exact).norm() / exact.norm()).item() < 0.25  # 4-bit operands: ~0.1 measured


def test_empty_dims():
    (xq, xs), (wq, ws) = mx(5, 64), mx(7, 64)
    assert gemmkit.gemm_afp4wfp4(xq[:0], wq, xs[:0], ws).shape == (0, 7)
    assert gemmkit.gemm_afp4wfp4(xq, wq[:0], xs, ws[:0]).shape == (5, 0)
    e8 = torch.empty(5, 0, dtype=torch.uint8)
    y = gemmkit.gemm_afp4wfp4(e8, e8[:3], e8, e8[:3], out=poisoned((5, 3), torch.float32))
    assert torch.equal(y, torch.zeros(5, 3))


# ----------------------------------------------------------------------------- validation

def _args(M=8, N=16, K=64):
    return (*mx(M, K, "bytes"), *mx(N, K, "bytes"))


@pytest.mark.parametrize("case,exc,match", [
    ("x_dtype", TypeError, r"^x: expected dtype torch.uint8, got torch.int8"),
    ("w_dtype", TypeError, r"^w: expected dtype torch.uint8, got torch.bfloat16"),
    ("x_3d", ValueError, r"^x: expected a 2-D tensor"),
    ("k_not_32", ValueError, r"^x: expected K = 2 \* x.shape\[1\] divisible by 32 .*got shape \(8, 24\) \(K = 48\)"),
    ("k_mismatch", ValueError, r"^w: expected shape \(N, 32\) \(K/2 packed bytes like x\), got \(16, 16\)"),
    ("x_scale_shape", ValueError, r"^x_scale: expected shape \(8, 2\) .*got \(8, 4\)"),
    ("w_scale_shape", ValueError, r"^w_scale: expected shape \(16, 2\) .*got \(2, 16\)"),
    ("scale_dtype", TypeError, r"^x_scale: expected dtype torch.uint8, got torch.float32"),
    ("out_shape", ValueError, r"^out: expected shape \(8, 16\)"),
    ("out_dtype_mismatch", TypeError, r"^out: expected dtype torch.bfloat16 \(out_dtype\), got torch.float32"),
    ("bad_out_dtype", TypeError, r"^out_dtype: expected one of"),
    ("tma_config", ValueError, r"^config: key 'tma' = true, but gemm_afp4wfp4 has no TMA path"),
    ("small_bk", ValueError, r"^config: key 'BLOCK_SIZE_K' = 32; gemm_afp4wfp4 needs >= 64"),
    ("smem", ValueError, r"^config: BLOCK_SIZE_M/N/K = 256/256/512 with num_stages = 8 needs \d+ bytes"),
    ("gfx942", ValueError, r"^x: gemm_afp4wfp4 does not run on MI300X \(gfx942\): Triton 3.6 cannot lower "
                           r"tl.dot_scaled"),
])
def test_errors(case, exc, match, monkeypatch):
    xq, xs, wq, ws = _args()
    kw = {}
    if case == "x_dtype":
        xq = xq.view(torch.int8)
    elif case == "w_dtype":
        wq = wq.to(torch.bfloat16)
    elif case == "x_3d":
        xq = xq.reshape(2, 4, 32)
    elif case == "k_not_32":
        xq = xq[:, :24]
    elif case == "k_mismatch":
        wq = wq[:, :16]
    elif case == "x_scale_shape":
        xs = torch.zeros(8, 4, dtype=torch.uint8)
    elif case == "w_scale_shape":
        ws = ws.t().contiguous()
    elif case == "scale_dtype":
        xs = xs.float()
    elif case == "out_shape":
        kw["out"] = torch.empty(8, 15, dtype=torch.bfloat16)
    elif case == "out_dtype_mismatch":
        kw.update(out=torch.empty(8, 16), out_dtype=torch.bfloat16)
    elif case == "bad_out_dtype":
        kw["out_dtype"] = torch.int32
    elif case == "tma_config":
        kw["config"] = dict(SMALL, tma=True)
    elif case == "small_bk":
        kw["config"] = dict(SMALL, BLOCK_SIZE_K=32)
    elif case == "smem":
        kw["config"] = dict(SMALL, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=512, num_stages=8)
    elif case == "gfx942":
        monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx942")
    with pytest.raises(exc, match=match):
        gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, **kw)


# ----------------------------------------------------------------------------- torch integration

def test_opcheck_and_compile(launches):
    xq, xs, wq, ws = _args(9, 24, 128)
    torch.library.opcheck(torch.ops.gemmkit.gemm_afp4wfp4.default, (xq, wq, xs, ws, torch.float32, ""))
    torch.library.opcheck(torch.ops.gemmkit.gemm_afp4wfp4_out.default,
                          (xq, wq, xs, ws, "", torch.empty(9, 24, dtype=torch.bfloat16)))
    torch._dynamo.reset()

    def f(xq, wq, xs, ws):
        return gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out_dtype=torch.float32) * 2

    before = launches["gemm_afp4wfp4_kernel"]
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(xq, wq, xs, ws)
    assert launches["gemm_afp4wfp4_kernel"] > before
    ok, msg = within_bound(y / 2, ref(xq, wq, xs, ws), torch.float32)
    assert ok, msg


# ----------------------------------------------------------------------------- static compiles

STATIC = r"""
import json, re, sys
from gemmkit import arch
from gemmkit.isa import compile_static
from gemmkit.ops.gemm_afp4wfp4 import static_spec
cfg = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
       "num_stages": 2, "persistent": False, "tma": False, "NUM_KSPLIT": 1, "matrix_instr_nonkdim": 16}
out = {}
for name in ("gfx950", "gfx942"):
    t = arch.ARCHS[name]
    kernel, sig, ce, div, opts = static_spec(cfg, t, even_k=False)
    try:
        asm = compile_static(kernel, sig, ce, t, opts, div).asm["amdgcn"]
        out[name] = sorted(set(re.findall(r"\bv_mfma\w*", asm)))
    except Exception as e:
        out[name] = "error: " + str(e)[-300:]
print(json.dumps(out))
"""


def test_static_compile_gfx950_native_gfx942_unsupported():
    """gfx950: tl.dot_scaled becomes the scaled MFMA (v_mfma_scale_f32_*_f8f6f4) and no other MFMA.
    gfx942: Triton 3.6 cannot lower it (the reason the op refuses gfx942; this test fails when a
    Triton upgrade changes that, so the support table gets updated)."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", STATIC], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["gfx950"] and all(re.fullmatch(r"v_mfma_scale_f32_\d+x\d+x\d+_f8f6f4", m) for m in out["gfx950"]), \
        out["gfx950"]
    assert isinstance(out["gfx942"], str) and out["gfx942"].startswith("error"), out["gfx942"]
