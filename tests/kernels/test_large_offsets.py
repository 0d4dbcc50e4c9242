"""Operands whose span along one dim reaches 2**31 elements: the kernels' 64-bit offsets (INT64_OFFSETS).

The kernels compute row offsets in int64 and the rest (a column index times its stride, a K step's
pointer increment) in int32 unless the host sets INT64_OFFSETS (kernels/triton/_offsets.py,
ops/_common.int64_offsets): a transposed weight W.t() of a W with >= 2**31 elements, a column-major
x or out, whose column stride times a column index passes 2**31, wrapped to a negative offset
(a segfault in the interpreter, a wrong read or a fault on a GPU).

The K loop moves its pointers by BLOCK_K * stride a step, so what wraps is a step's own column
offsets: (k_first * BLOCK_K + j) * stride. The CPU cases therefore keep K within one K step, or
split K (a split's first step starts at k_first * BLOCK_K), or put the large stride on the output's
columns or on the block scales' K blocks.

CPU (interpreter) tests build each such operand as a strided view (as_strided) over ONE buffer of
just enough elements, from torch.empty without conftest's fill (`_util.untouched_empty`): only the pages
the few real elements sit on are ever touched, so a 4 GiB bf16 buffer costs a few MB of memory. One
buffer lives at a time; the test frees it. Every element of the output (poisoned with NaN first) is
checked against a float64 reference of the same logical values (`assert_every_element`).

GPU tests (`pytest -m gpu tests/kernels/test_large_offsets.py`, an 80 GB H100 / H200): real weights of
more than 2**31 elements (135168 x 16384: bf16 4.4 GB, fp8 / int8 2.2 GB), transposed and not,
M = 64 and 257 with the shipped tables' configs, plus a split-K pointer config on the transposed
weight, every element against a float64 reference computed on the GPU in column chunks.
"""
import gc

import pytest
import torch

import gemmkit
import gemmkit.quant as Q
from gemmkit.ops import _common as C
from gemmkit.reference import gemm_a8w8_blockscale_ref, gemm_a8w8_ref, gemm_a16w16_ref

from _util import untouched_empty

SPAN = C.INT32_SPAN  # 2**31: an offset from here on does not fit int32
E4M3 = torch.float8_e4m3fn
BF = torch.bfloat16


# ----------------------------------------------------------------------------- helpers

def big_stride(extent: int) -> int:
    """The smallest stride whose (extent - 1) * stride reaches 2**31 (extent: the size of the strided dim)."""
    return -(-SPAN // (extent - 1))


def strided(values: torch.Tensor, stride, device="cpu"):
    """A view with `stride` over one fresh buffer (untouched pages cost no memory: `untouched_empty`) holding
    `values`; its span, sum (size - 1) * stride, is what the caller picked."""
    span = sum((n - 1) * s for n, s in zip(values.shape, stride))
    buf = untouched_empty(span + 1, values.dtype, device)
    view = buf.as_strided(values.shape, stride)
    view.copy_(values)
    return view


def spans_2_31(t) -> bool:
    return C.int64_offsets(t)


def col_major(values, device="cpu"):
    """values (R, Cn) as a column-major view whose column stride makes it span 2**31 elements."""
    return strided(values, (1, big_stride(values.shape[1])), device)


def transposed(values, device="cpu"):
    """values (N, K) as W.t() of a W (K, S) whose rows are S >= 2**31 / (K - 1) apart: strides (1, S)."""
    return col_major(values, device)


def assert_every_element(out, ref, absx, absw, out_dtype, what=""):
    """|out - ref| <= the output's rounding (half an ulp: 2**-8 |ref| for bf16) + the fp32 accumulation's worst
    case, K * 2**-24 * sum_k |x_k w_k| (absx @ absw.T, float64), for EVERY element (NaN, a poisoned element never
    written, fails). A wrong or missing product of the K here moves an element by ~1/K of that sum, far more."""
    o = out.detach().to(torch.float64)
    rel = {torch.bfloat16: 2**-8, torch.float16: 2**-11, torch.float32: 2**-23}[out_dtype]
    bound = rel * ref.abs() + absx.shape[-1] * 2**-24 * (absx @ absw.T) + 1e-30
    bad = ~((o - ref).abs() <= bound)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.numel()} elements wrong, first at "
                           f"{tuple(bad.nonzero()[0].tolist())}: {o[bad][:4].tolist()} vs {ref[bad][:4].tolist()}")


def free():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def fp8_values(*shape, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 8).to(device=device, dtype=E4M3)


def int8_values(*shape, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8).to(device)


def bf16_values(*shape, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(*shape, generator=g).to(device=device, dtype=BF)


def pos_scales(*shape, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return ((torch.randn(*shape, generator=g).abs() + 0.25) / 64).to(device)


def place(layout, x, w, out_shape, out_dtype, device="cpu"):
    """(x, w, out) for `layout`: the one operand named spans 2**31 elements (a view over one buffer),
    the others are small and contiguous; out poisoned with NaN."""
    if layout == "w_transposed":
        w = transposed(w, device)
    elif layout == "x_col_major":
        x = col_major(x, device)
    out = torch.full(out_shape, float("nan"), dtype=out_dtype, device=device)
    if layout == "out_col_major":
        out = col_major(out, device)
    return x, w, out


LAYOUTS = ["w_transposed", "x_col_major", "out_col_major"]
POINTER = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 2, "tma": False}
KERNELS_X_COPIED = {"pad_rows_kernel": 1, "gemm_tma_kernel": 1}


# ----------------------------------------------------------------------------- CPU: the interpreter

@pytest.fixture
def launches():
    C.LAUNCHES.clear()
    return C.LAUNCHES


def test_int64_offsets_rule():
    """The host rule: the largest element offset, sum of (size - 1) * |stride|, reaching 2**31."""
    def meta(shape, stride):
        return torch.empty_strided(shape, stride, dtype=torch.int8, device="meta")

    assert not C.int64_offsets(None, torch.empty(0), torch.empty(4, 4), "not a tensor")
    K = 3
    S = big_stride(K)
    assert C.int64_offsets(meta((1, K), (1, S)))  # (K - 1) * S >= 2**31
    assert not C.int64_offsets(meta((1, K), (1, S - 1)))  # one stride less: the largest offset is 2**31 - 2
    assert C.int64_offsets(torch.empty(4), meta((2, 3), (SPAN, 1)))  # any one tensor decides
    assert not C.int64_offsets(meta((0, 5), (SPAN, 1)))  # empty: nothing is addressed
    assert C.int64_offsets(meta((SPAN + 1,), (1,)))


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a16w16(layout, launches):
    M, N, K = 17, 40, 48
    x, w, out = place(layout, bf16_values(M, K, seed=1), bf16_values(N, K, seed=2), (M, N), BF)
    assert spans_2_31({"w_transposed": w, "x_col_major": x, "out_col_major": out}[layout])
    bias = bf16_values(N, seed=3)
    xd, wd = x.double(), w.double()
    # x_col_major: the served call copies the small transposed x to rows (ops/dispatch._x_transposed_copy) for the
    # TMA kernel; a pointer config reads it in place
    for config in ((None, POINTER) if layout == "x_col_major" else (None,)):
        launches.clear()
        y = gemmkit.gemm_a16w16(x, w, bias, out=out, config=config)
        assert y is out and dict(launches) == (KERNELS_X_COPIED if layout == "x_col_major" and config is None
                                               else {"gemm_kernel": 1})
        assert_every_element(out, gemm_a16w16_ref(x, w, bias), xd.abs(), wd.abs(), BF, layout)
        out.fill_(float("nan"))
    del x, w, out, y
    free()


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", ["w_transposed", "out_col_major"])
def test_a16w16_split_k(layout, launches):
    """Split-K: a split's first K step starts at column k_first * BLOCK_K (w_transposed: times a stride that
    passes 2**31 there), and the reduce kernel stores into the column-major out (out_col_major)."""
    M, N, K = 5, 24, 128
    x, w, out = place(layout, bf16_values(M, K, seed=4), bf16_values(N, K, seed=5), (M, N), BF)
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 2, "NUM_KSPLIT": 4}
    gemmkit.gemm_a16w16(x, w, out=out, config=cfg)
    assert launches["gemm_kernel"] == 1 and launches["splitk_reduce_kernel"] == 1
    assert_every_element(out, gemm_a16w16_ref(x, w), x.double().abs(), w.double().abs(), BF, "split-K")
    del x, w, out
    free()


@pytest.mark.interpreter
@pytest.mark.parametrize("dtype", ["fp8", "int8"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a8w8(layout, dtype, launches):
    M, N, K = 9, 24, 64
    make = fp8_values if dtype == "fp8" else int8_values
    x, w, out = place(layout, make(M, K, seed=6), make(N, K, seed=7), (M, N), BF)
    xs, ws = pos_scales(M, 1, seed=8), pos_scales(1, N, seed=9)
    ref = gemm_a8w8_ref(x, w, xs, ws)
    for config in ((None, POINTER) if layout == "x_col_major" else (None,)):  # (as test_a16w16)
        launches.clear()
        gemmkit.gemm_a8w8(x, w, xs, ws, out=out, config=config)
        assert dict(launches) == (KERNELS_X_COPIED if layout == "x_col_major" and config is None
                                  else {"gemm_kernel": 1})
        assert_every_element(out, ref, x.double().abs() * xs.double(), w.double().abs() * ws.double().T, BF,
                             f"{dtype} {layout}")
        out.fill_(float("nan"))
    del x, w, out
    free()


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", LAYOUTS + ["x_scale_col_major"])
def test_a8w8_blockscale(layout, launches):
    """Block scales (128, 128). K = 128 (one K step: the first step's column offsets reach (K - 1) * stride; later
    steps move the pointers by BLOCK_K * stride, below 2**31 here). x_scale_col_major: the (M, KB) x scales
    M-major with a K-block stride that makes them span 2**31 elements (kb * stride_xsk in the mainloop; KB = 3,
    so the stride stays below 2**31, an int32 argument, and only the product wraps)."""
    M, N = 7, 40
    K = 384 if layout == "x_scale_col_major" else 128
    bn, bk = 128, 128
    x, w, out = place(layout if layout != "x_scale_col_major" else "", fp8_values(M, K, seed=10),
                      fp8_values(N, K, seed=11), (M, N), BF)
    xs = pos_scales(M, K // bk, seed=12) * 64
    ws = pos_scales(-(-N // bn), K // bk, seed=13) * 64
    if layout == "x_scale_col_major":
        xs = col_major(xs)
        assert spans_2_31(xs)
    gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=(bn, bk), out=out)
    # (x_scale_col_major: x, w, out meet TMA's rules, so a "tma" config runs the TMA kernel, whose scale reads
    # are pointer reads too)
    assert launches["gemm_kernel"] + launches["gemm_tma_kernel"] == 1
    ref = gemm_a8w8_blockscale_ref(x, w, xs, ws, (bn, bk))
    # accumulation bound with each operand's largest scale (one scale per (row, K block) as a factor)
    assert_every_element(out, ref, x.double().abs() * xs.max().item(), w.double().abs() * ws.max().item(), BF,
                         layout)
    del x, w, out, xs
    free()


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", ["w_transposed", "out_col_major"])
def test_batched_a16w16(layout, launches):
    """w (B, N, K) with strides (N, 1, S) (a transposed weight per entry), or y (B, M, N) with column stride S."""
    B, M, N, K = 2, 9, 16, 32
    x, w = bf16_values(B, M, K, seed=14), bf16_values(B, N, K, seed=15)
    out = torch.full((B, M, N), float("nan"), dtype=BF)
    if layout == "w_transposed":
        w = strided(w, (N, 1, big_stride(K)))
        assert spans_2_31(w)
    else:
        out = strided(out, (M, 1, big_stride(N)))
        assert spans_2_31(out)
    gemmkit.batched_gemm_a16w16(x, w, out=out)
    assert launches["batched_gemm_kernel"] == 1
    for b in range(B):
        assert_every_element(out[b], gemm_a16w16_ref(x[b], w[b]), x[b].double().abs(), w[b].double().abs(), BF,
                             f"{layout} entry {b}")
    del x, w, out
    free()


@pytest.mark.interpreter
def test_gated_transposed_weight(launches):
    """gemm_a16w16_gated with w_gate_up (2I, K) as a transposed view spanning 2**31 elements."""
    M, I, K = 5, 16, 32
    x, w = bf16_values(M, K, seed=16), transposed(bf16_values(2 * I, K, seed=17))
    h = gemmkit.gemm_a16w16_gated(x, w, activation="silu")
    assert launches["gemm_gated_kernel"] == 1
    xd, wd = x.double(), w.double()
    ref = torch.nn.functional.silu(xd @ wd[:I].T) * (xd @ wd[I:].T)
    g, u = (xd.abs() @ wd[:I].abs().T), (xd.abs() @ wd[I:].abs().T)
    # silu(g) * u: the relative error of g and u (fp32 sums) plus the bf16 rounding of the product
    o = h.double()
    assert torch.isfinite(o).all() and ((o - ref).abs() <= 2**-8 * ref.abs() + 2**-16 * (g + 1) * (u + 1)).all()
    del x, w, h
    free()


@pytest.mark.interpreter
@pytest.mark.parametrize("name", ["fp8_per_token", "int8_per_token", "fp8_block_1x128"])
def test_quantizers_col_major_input(name):
    """A quantizer's x spanning 2**31 elements along K (column-major): bitwise equal to the reference."""
    M, K = 6, 160
    vals = bf16_values(M, K, seed=18)
    x = col_major(vals)
    assert spans_2_31(x)
    quant, ref = {"fp8_per_token": (lambda t: Q.quantize_fp8_per_token(t, E4M3),
                                    lambda t: Q.quantize_fp8_per_token_ref(t, E4M3)),
                  "int8_per_token": (Q.quantize_int8_per_token, Q.quantize_int8_per_token_ref),
                  "fp8_block_1x128": (lambda t: Q.quantize_fp8_blockwise(t, (1, 128), E4M3),
                                      lambda t: Q.quantize_fp8_blockwise_ref(t, (1, 128), E4M3))}[name]
    q, s = quant(x)
    qr, sr = ref(vals)
    assert torch.equal(s, sr) and torch.equal(q.view(torch.uint8), qr.view(torch.uint8))
    del x
    free()


# ----------------------------------------------------------------------------- GPU: real >= 2**31-element weights

# N x K = 132 x 2**24 elements (bf16 4.4 GB, fp8 2.2 GB); W.t()'s largest offset (K - 1) * N passes 2**31 (with
# N = 131072 it would stop at 2**31 - 1).
GPU_N, GPU_K = 135168, 16384
# A split-K pointer config: 64 splits of 2 K steps, split s starting at column 256 s, so the last split's first column
# offsets (k_first * BLOCK_K + j) * stride_wk of a transposed weight pass 2**31 (16128 * 135168 > 2**31): what int32
# offsets got wrong. (The shipped sm_90 tables pick no split-K at these shapes; AMD tables may.)
SPLIT_CFG = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
             "num_stages": 3, "NUM_KSPLIT": 64, "tma": False, "persistent": False}


def _gpu_weight(dtype, transposed_w: bool):
    """w (N, K): row-major, or w = W.t() of a contiguous W (K, N); either spans more than 2**31 elements."""
    g = torch.Generator(device="cuda").manual_seed(1234)
    shape = (GPU_K, GPU_N) if transposed_w else (GPU_N, GPU_K)
    if dtype == torch.int8:
        W = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8, device="cuda")
    else:
        W = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
        for i in range(0, shape[0], 4096):  # randn in chunks: no fp32 copy of the whole weight
            W[i:i + 4096] = torch.randn(W[i:i + 4096].shape, generator=g, device="cuda").to(torch.bfloat16)
        if dtype != torch.bfloat16:
            W = W.to(dtype)
    w = W.t() if transposed_w else W
    assert w.shape == (GPU_N, GPU_K) and w.numel() >= SPAN and spans_2_31(w)
    return w


def _check_rows(out, ref_fn, what, acc_rel, chunk=8192):
    """Every element of out (M, N) against ref_fn(n0, n1) -> (float64 reference, |x| @ |w|.T) of columns n0:n1,
    chunk by chunk: |out - ref| <= 2**-8 |ref| (bf16 rounding) + acc_rel * |x| @ |w|.T (the accumulation: fp32
    sums, 2**-12, 32x the random-walk size sqrt(K) 2**-24 at K = 16384; fp8 wgmma sums promoted every 128 products,
    2**-10). Unwritten (NaN) elements fail, and a wrong or missing K step (128 of the 16384 products) moves many of
    the M x N elements past the bound."""
    M, N = out.shape
    for n0 in range(0, N, chunk):
        ref, absref = ref_fn(n0, min(N, n0 + chunk))
        o = out[:, n0:n0 + chunk].double()
        bound = 2**-8 * ref.abs() + acc_rel * absref + 1e-30
        bad = ~((o - ref).abs() <= bound)
        assert not bad.any(), (f"{what}: {int(bad.sum())} wrong in columns {n0}.., first at "
                               f"{tuple(bad.nonzero()[0].tolist())}: {o[bad][:4].tolist()} vs {ref[bad][:4].tolist()}")


GPU_CASES = [(M, t, None) for M in (64, 257) for t in (False, True)] + [(64, True, SPLIT_CFG)]
GPU_IDS = [f"M{M}-{'wT' if t else 'w'}{'-splitk' if c else ''}" for M, t, c in GPU_CASES]


@pytest.mark.gpu
@pytest.mark.parametrize("M,transposed_w,config", GPU_CASES, ids=GPU_IDS)
def test_gpu_a16w16_big_weight(M, transposed_w, config):
    free()
    w = _gpu_weight(torch.bfloat16, transposed_w)
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, GPU_K, generator=g, device="cuda").to(torch.bfloat16)
    out = torch.full((M, GPU_N), float("nan"), dtype=torch.bfloat16, device="cuda")
    gemmkit.gemm_a16w16(x, w, out=out, config=config)
    torch.cuda.synchronize()
    xd = x.double()

    def ref(n0, n1):
        wd = w[n0:n1].double()
        return xd @ wd.T, xd.abs() @ wd.abs().T

    _check_rows(out, ref, f"a16w16 M={M} transposed={transposed_w}", 2**-12)
    del w, x, out
    free()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M,transposed_w,config", GPU_CASES, ids=GPU_IDS)
def test_gpu_a8w8_big_weight(M, transposed_w, config, dtype):
    free()
    w = _gpu_weight(dtype, transposed_w)
    g = torch.Generator(device="cuda").manual_seed(M)
    if dtype == torch.int8:
        x = torch.randint(-128, 128, (M, GPU_K), generator=g, dtype=torch.int8, device="cuda")
    else:
        x = torch.randn(M, GPU_K, generator=g, device="cuda").to(dtype)
    xs = (torch.rand(M, 1, generator=g, device="cuda") + 0.5) / 64
    ws = (torch.rand(1, GPU_N, generator=g, device="cuda") + 0.5) / 64
    out = torch.full((M, GPU_N), float("nan"), dtype=torch.bfloat16, device="cuda")
    gemmkit.gemm_a8w8(x, w, xs, ws, out=out, config=config)
    torch.cuda.synchronize()
    xd = x.double() * xs.double()

    def ref(n0, n1):
        wd = w[n0:n1].double() * ws[:, n0:n1].double().T
        return xd @ wd.T, xd.abs() @ wd.abs().T

    _check_rows(out, ref, f"a8w8 {dtype} M={M} transposed={transposed_w}", 2**-12 if dtype == torch.int8 else 2**-10)
    del w, x, out
    free()


@pytest.mark.gpu
@pytest.mark.parametrize("M,transposed_w,config", GPU_CASES, ids=GPU_IDS)
def test_gpu_a8w8_blockscale_big_weight(M, transposed_w, config):
    free()
    bn = bk = 128
    w = _gpu_weight(E4M3, transposed_w)
    g = torch.Generator(device="cuda").manual_seed(M)
    x = torch.randn(M, GPU_K, generator=g, device="cuda").to(E4M3)
    xs = torch.rand(M, GPU_K // bk, generator=g, device="cuda") + 0.5
    ws = torch.rand(GPU_N // bn, GPU_K // bk, generator=g, device="cuda") + 0.5
    out = torch.full((M, GPU_N), float("nan"), dtype=torch.bfloat16, device="cuda")
    gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=(bn, bk), out=out, config=config)
    torch.cuda.synchronize()
    xd = x.double() * xs.double().repeat_interleave(bk, dim=1)

    def ref(n0, n1):
        wd = w[n0:n1].double() * ws[n0 // bn:-(-n1 // bn)].double().repeat_interleave(bn, 0).repeat_interleave(bk, 1)
        return xd @ wd.T, xd.abs() @ wd.abs().T

    _check_rows(out, ref, f"a8w8_blockscale M={M} transposed={transposed_w}", 2**-10)
    del w, x, out
    free()
