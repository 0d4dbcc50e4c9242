"""Property tests of gemm_afp4wfp4 (OCP MXFP4: packed E2M1 codes, E8M0 scales per 32 along K).

Operands from gemmkit.quant.quantize_mxfp4 (fresh bf16 / fp32 values) or raw bytes (every code, scale bytes
around 2^0). K is a multiple of 32; shapes 0, 1, odd and the served config's tile +- 1 (K: +- one MX group
of 32 around BLOCK_SIZE_K and 2 * BLOCK_SIZE_K); every layout for the packed bytes and the scales; out_dtype;
out= NaN-poisoned in every layout, or functional. Every element against the float64 product of
gemmkit.quant.dequantize_mxfp4_ref (E2M1 x 2^e values are exact, so the error is fp32 accumulation and the
final rounding). On the CPU tl.dot_scaled runs as gemmkit's interpreter support models it
(gemmkit/kernels/_interpreter.py); the gpu versions run the real (emulated on sm_90) instruction.
Also: aliasing out= raises ValueError; invalid shapes / configs / gfx942 raise.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import gemmkit
from gemmkit import quant
from gemmkit.ops import _common as C

from test_properties_common import (INVALID_EXAMPLES, LAYOUTS_2D, OUT_DTYPES, OUT_LAYOUTS_2D, SEED, Inputs,
                                    check_elements, config_strategy, device_or_skip, f64, gemm_dims, interpret_arch,
                                    linear_err, norm_tol, place, poison_allocations, poisoned_out, prop_settings,
                                    raises_invalid)

INTERP = pytest.mark.interpreter  # CPU tests (the gpu ones must not carry it: conftest skips it without the interpreter)
OP = "afp4wfp4"
SMALL = [{"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g, "num_warps": 4,
          "num_stages": 2, "persistent": p, "NUM_KSPLIT": s}
         for bm, bn, bk, g, p, s in [(16, 32, 64, 2, False, 1), (32, 16, 128, 1, True, 1), (16, 16, 64, 3, False, 3),
                                     (32, 32, 64, 1, True, 2)]]


@st.composite
def cases(draw, gpu=False):
    arch = "sm_90" if gpu else draw(st.sampled_from(["sm_90", "gfx950"]))
    config = draw(config_strategy(OP, arch, small=None if gpu else SMALL))
    lims = dict(max_mn=4100, max_k=4096) if gpu else dict(max_mn=260, max_k=320)
    M, N, K = draw(gemm_dims(OP, arch, config, **lims, k_quantum=32, large=gpu))
    return dict(arch=arch, config=config, M=M, N=min(N, 4096), K=K,
                x_source=draw(st.sampled_from(["quant", "bytes"])), w_source=draw(st.sampled_from(["quant", "bytes"])),
                src_dtype=draw(st.sampled_from([torch.bfloat16, torch.float32])),
                layouts=[draw(st.sampled_from(LAYOUTS_2D)) for _ in range(4)],
                out_dtype=draw(st.sampled_from(OUT_DTYPES)), out=draw(st.sampled_from([None] + OUT_LAYOUTS_2D)),
                cus=draw(st.integers(1, 9)), seed=draw(SEED))


def mx(inp, rows, K, source, src_dtype):
    if source == "quant":
        return quant.quantize_mxfp4(inp.randn(rows, K, dtype=src_dtype, scale=3.0))
    return inp.randint(0, 256, rows, K // 2, dtype=torch.uint8), inp.randint(120, 135, rows, K // 32,
                                                                             dtype=torch.uint8)


def dequant64(q, s):
    return f64(quant.dequantize_mxfp4_ref(q.contiguous(), s.contiguous()))


def reference(x, w, xs, ws):
    xd, wd = dequant64(x, xs), dequant64(w, ws)
    return xd @ wd.T, xd.abs() @ wd.abs().T


def run_case(c, device):
    inp = Inputs(c["seed"], device)
    M, N, K = c["M"], c["N"], c["K"]
    with interpret_arch(c["arch"] if device == "cpu" else None, c["cus"] if device == "cpu" else None):
        (xq, xs), (wq, ws) = mx(inp, M, K, c["x_source"], c["src_dtype"]), mx(inp, N, K, c["w_source"], c["src_dtype"])
        ps = [place(t, lay) for t, lay in zip((xq, wq, xs, ws), c["layouts"])]
        x, w, xs, ws = (p.view for p in ps)
        out_dtype = c["out_dtype"] or torch.bfloat16
        op = None if c["out"] is None else poisoned_out((M, N), out_dtype, c["out"], device)
        before = sum(C.LAUNCHES.values())
        with poison_allocations():
            y = gemmkit.gemm_afp4wfp4(x, w, xs, ws, out_dtype=c["out_dtype"], out=None if op is None else op.view,
                                      config=c["config"])
    if device == "cuda":
        torch.cuda.synchronize()
    assert y.shape == (M, N) and y.dtype == out_dtype
    if op is not None:
        assert y is op.view
    if M and N and K:
        assert sum(C.LAUNCHES.values()) > before, "no kernel ran"
    ref, S = reference(x, w, xs, ws)
    check_elements(y, ref, linear_err(S, K + 8, device), out_dtype, norm=norm_tol(out_dtype, K, device))
    for name, p in zip(("x", "w", "x_scale", "w_scale"), ps):
        p.check_untouched(name)
    if op is not None:
        op.check_untouched("out", output=True)


@INTERP
@prop_settings(130)
@given(c=cases())
def test_matches_reference(c):
    run_case(c, "cpu")


@pytest.mark.gpu
@prop_settings(15)
@given(c=cases(gpu=True))
def test_matches_reference_gpu(c):
    run_case(c, device_or_skip(True))


# ----------------------------------------------------------------------------- aliasing and invalid input

@INTERP
@prop_settings(15)
@given(kind=st.sampled_from(["out_is_x_bytes", "out_is_w_scale_bytes", "disjoint_control"]), M=st.integers(1, 9),
       N=st.integers(1, 9), seed=SEED)
def test_out_aliasing_an_input_raises(kind, M, N, seed):
    inp = Inputs(seed)
    K = 32 * N if kind != "out_is_w_scale_bytes" else 128 * N  # x (M, 16 N) bytes = (M, 4 N) fp32 ... see below
    (x, xs), (w, ws) = mx(inp, M, K, "bytes", None), mx(inp, N, K, "bytes", None)
    if kind == "out_is_x_bytes":  # x (M, K/2 = 16 N) uint8 seen as fp32 (M, 4 N): out (M, N) is a column slice
        out = x.view(torch.float32)[:, :N]
    elif kind == "out_is_w_scale_bytes":  # w_scale (N, K/32 = 4 N) uint8 seen as fp32 (N, N): M = N
        x, xs = mx(inp, N, K, "bytes", None)
        out = ws.view(torch.float32)
    else:
        flat = torch.empty(M * N * 4 + M * K // 2, dtype=torch.uint8)
        flat[M * N * 4:].copy_(x.reshape(-1))
        x = flat[M * N * 4:].view(M, K // 2)
        out = flat[:M * N * 4].view(torch.float32).view(M, N)
        y = gemmkit.gemm_afp4wfp4(x, w, xs, ws, out=out)
        ref, S = reference(x, w, xs, ws)
        check_elements(y, ref, linear_err(S, K + 8, "cpu"), torch.float32)
        return
    with pytest.raises(ValueError):
        gemmkit.gemm_afp4wfp4(x, w, xs, ws, out=out)


MUTATIONS = ["k_not_32", "w_halfk", "xs_cols", "ws_rows", "x_int8", "xs_fp32", "x_1d", "tma", "gluon", "bk_32",
             "out_shape", "gfx942"]


@INTERP
@pytest.mark.parametrize("mutation", MUTATIONS)
@prop_settings(INVALID_EXAMPLES)
@given(M=st.integers(1, 12), N=st.integers(1, 12), kg=st.integers(1, 6), seed=SEED)
def test_invalid_inputs_raise(mutation, M, N, kg, seed):
    inp = Inputs(seed)
    K = 32 * kg
    (x, xs), (w, ws) = mx(inp, M, K, "bytes", None), mx(inp, N, K, "bytes", None)
    kw = dict(out=None, config=None)
    cfg = dict(SMALL[0])
    arch = "sm_90"
    if mutation == "k_not_32":
        x, w, xs, ws = x[:, :K // 2 - 8], w[:, :K // 2 - 8], xs[:, :kg - 1], ws[:, :kg - 1]
    elif mutation == "w_halfk":
        w = inp.randint(0, 256, N, K // 2 + 16, dtype=torch.uint8)
    elif mutation == "xs_cols":
        xs = inp.randint(120, 130, M, kg + 1, dtype=torch.uint8)
    elif mutation == "ws_rows":
        ws = inp.randint(120, 130, N + 1, kg, dtype=torch.uint8)
    elif mutation == "x_int8":
        x = x.view(torch.int8)
    elif mutation == "xs_fp32":
        xs = xs.float()
    elif mutation == "x_1d":
        x = x[0]
    elif mutation == "tma":
        kw["config"] = dict(cfg, tma=True)
    elif mutation == "gluon":
        kw["config"] = dict(cfg, backend="gluon")
    elif mutation == "bk_32":
        kw["config"] = dict(cfg, BLOCK_SIZE_K=32)
    elif mutation == "out_shape":
        kw["out"] = torch.empty(M, N + 1, dtype=torch.bfloat16)
    elif mutation == "gfx942":
        arch = "gfx942"
    with interpret_arch(arch):
        raises_invalid(lambda: gemmkit.gemm_afp4wfp4(x, w, xs, ws, **kw))
