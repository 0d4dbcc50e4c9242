"""gemm_a8w8 and gemm_a8w8_blockscale in the Triton interpreter, against float64.

8-bit values are exact in float64 and the kernels accumulate exactly (int32) or in
fp32 (fp8 products are exact in fp32; sums round at 2**-24), so the only sizeable
error is the final rounding to out_dtype: the bounds of tests/_util.py apply.
float8_e4m3fnuz (gfx942) runs in the interpreter from Triton 3.8 (`test_gfx942_fnuz`, under CI's newest
release; before 3.8 the ops refuse it); its kernels are compiled for gfx942 by tests/tools/test_isa.py (the A8W8
tables' fp8 cases).
"""
import itertools

import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a8w8_blockscale_ref, gemm_a8w8_ref

from _util import gemm_launches, poisoned, q8, randn, scales, within_bound

pytestmark = pytest.mark.interpreter
FP8 = torch.float8_e4m3fn
SHAPES = list(itertools.product([1, 17, 64], [1, 31, 128], [1, 40, 256]))
SMALL = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2}


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_a8w8_shapes(M, N, K, dtype, launches):
    x, w = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype)
    xs, ws = scales(M, 1), scales(1, N)
    for bias in (None, randn(N, dtype=torch.bfloat16)):
        out = poisoned((M, N), torch.bfloat16)
        before = gemm_launches(launches)
        y = gemmkit.gemm_a8w8(x, w, xs, ws, bias, out=out)
        assert y is out and gemm_launches(launches) == before + 1, "the Triton kernel did not run"
        ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws, bias), torch.bfloat16)
        assert ok, msg


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("path", ["pointer", "tma", "persistent"])
def test_a8w8_out_dtypes_and_paths(dtype, out_dtype, path, launches):
    M, N, K = 45, 80, 192
    x, w = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype)
    xs, ws, bias = scales(M), scales(N), randn(N, dtype=torch.float32)  # (M,) / (N,) scales, fp32 bias
    cfg = dict(SMALL, tma=path == "tma", persistent=path == "persistent")
    kernel = "gemm_tma_kernel" if path == "tma" else "gemm_kernel"
    before = launches[kernel]
    y = gemmkit.gemm_a8w8(x, w, xs, ws, bias, out_dtype=out_dtype, config=cfg)
    assert launches[kernel] == before + 1
    assert y.dtype == out_dtype
    ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws, bias), out_dtype)
    assert ok, msg


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("tma", [False, True], ids=["pointer", "tma"])
def test_a8w8_split_k(dtype, tma, launches):
    """Each split scales its partial sum (the scales are linear in it); the reduce adds bias in a fixed order."""
    M, N, K = 5, 48, 512
    x, w = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype)
    xs, ws, bias = scales(M, 1), scales(1, N), randn(N, dtype=torch.bfloat16)
    before = launches["splitk_reduce_kernel"]
    y = gemmkit.gemm_a8w8(x, w, xs, ws, bias, out_dtype=torch.float32, config=dict(SMALL, NUM_KSPLIT=3, tma=tma))
    assert launches["splitk_reduce_kernel"] == before + 1
    ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws, bias), torch.float32)
    assert ok, msg


def test_a8w8_int8_extremes_exact():
    """-128 * -128 * K in int32 with unit scales: exact, no overflow, no fp rounding before the scale."""
    M, N, K = 4, 8, 512
    x = torch.full((M, K), -128, dtype=torch.int8)
    w = torch.full((N, K), -128, dtype=torch.int8)
    y = gemmkit.gemm_a8w8(x, w, torch.ones(M, 1), torch.ones(1, N), out_dtype=torch.float32)
    assert torch.equal(y, torch.full((M, N), 128.0 * 128 * K))


@pytest.mark.parametrize("layout", ["x_col_major", "w_transposed", "x_k_strided", "scales_strided"])
def test_a8w8_strided(layout):
    M, N, K = 33, 40, 96
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = scales(M, 1), scales(1, N)
    if layout == "x_col_major":
        x = q8(K, M, dtype=FP8).t()
    elif layout == "w_transposed":
        w = q8(K, N, dtype=FP8).t()
    elif layout == "x_k_strided":
        x = q8(M, 2 * K, dtype=FP8)[:, ::2]
    else:
        xs, ws = scales(M, 2)[:, :1], scales(2, N)[:1]
    y = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32)
    ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws), torch.float32)
    assert ok, msg


def test_a8w8_empty_dims():
    x, w = q8(0, 32, dtype=FP8), q8(16, 32, dtype=FP8)
    assert gemmkit.gemm_a8w8(x, w, scales(0, 1), scales(1, 16)).shape == (0, 16)
    bias = randn(16, dtype=torch.bfloat16)
    y = gemmkit.gemm_a8w8(q8(3, 0, dtype=FP8), q8(16, 0, dtype=FP8), scales(3, 1), scales(1, 16), bias)
    assert torch.equal(y, bias.expand(3, 16))


# ----------------------------------------------------------------------------- block scale

BLOCK_CASES = [
    # M, N, K, block_shape, config
    (17, 96, 256, (128, 128), None),
    (64, 200, 300, (128, 128), None),               # K tail: last scale block partial; N edge
    (5, 130, 384, (64, 128), dict(SMALL, BLOCK_SIZE_K=128)),
    (40, 72, 160, (48, 32), SMALL),                  # config BLOCK_SIZE_K 64 capped at bk = 32; bn not a power of 2
    (33, 64, 256, (128, 128), dict(SMALL, BLOCK_SIZE_K=128, tma=True)),
    (33, 64, 300, (128, 128), dict(SMALL, BLOCK_SIZE_K=128, num_stages=3)),      # whole K in the prologue
    (1, 256, 512, (128, 128), dict(SMALL, BLOCK_SIZE_K=128, num_stages=4, tma=True)),
    (70, 64, 256, (128, 128), dict(SMALL, BLOCK_SIZE_K=128, persistent=True)),
    (3, 64, 640, (128, 128), dict(SMALL, BLOCK_SIZE_K=128, NUM_KSPLIT=2)),      # split-K: scaled partials
    (3, 64, 700, (128, 128), dict(SMALL, BLOCK_SIZE_K=64, NUM_KSPLIT=4, tma=True)),
    # BLOCK_SIZE_K a multiple of bk: the TMA kernel's step is boxes of one scale block each (dense.step_boxes); the
    # last step's second box starts past K (zeros, its scales masked); with split-K; the pointer kernel takes bk
    (33, 64, 300, (128, 128), dict(SMALL, BLOCK_SIZE_K=256, tma=True)),
    (5, 72, 520, (128, 64), dict(SMALL, BLOCK_SIZE_K=256, NUM_KSPLIT=2, tma=True)),
    (17, 96, 300, (128, 128), dict(SMALL, BLOCK_SIZE_K=256)),
]


@pytest.mark.parametrize("M,N,K,block,cfg", BLOCK_CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-b{c[3][0]}x{c[3][1]}-{i}"
                                                                for i, c in enumerate(BLOCK_CASES)])
def test_blockscale(M, N, K, block, cfg, launches):
    bn, bk = block
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = scales(M, -(-K // bk)), scales(-(-N // bn), -(-K // bk))
    out = poisoned((M, N), torch.float32)
    before = gemm_launches(launches)
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=block, out=out, out_dtype=torch.float32, config=cfg)
    split = (cfg or {}).get("NUM_KSPLIT", 1) > 1  # split-K adds the reduce launch
    assert y is out and gemm_launches(launches) == before + 1 + split
    ok, msg = within_bound(y, gemm_a8w8_blockscale_ref(x, w, xs, ws, block), torch.float32)
    assert ok, msg


def test_blockscale_scales_really_per_block():
    """A scale changed in one (row-block, K-block) cell changes exactly the outputs it should."""
    M, N, K = 8, 256, 256
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws = torch.ones(M, 2), torch.ones(2, 2)
    base = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out_dtype=torch.float32)
    ws2 = ws.clone()
    ws2[1, 0] = 2.0  # w rows 128..255, K 0..127
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws2, out_dtype=torch.float32)
    assert torch.equal(y[:, :128], base[:, :128])
    ok, msg = within_bound(y, gemm_a8w8_blockscale_ref(x, w, xs, ws2), torch.float32)
    assert ok, msg


# ----------------------------------------------------------------------------- validation

def _args(M=8, N=16, K=64, dtype=FP8):
    return q8(M, K, dtype=dtype), q8(N, K, dtype=dtype), scales(M, 1), scales(1, N)


@pytest.mark.parametrize("case,exc,match", [
    ("fnuz_on_sm90", TypeError, r"^x: H200 \(sm_90\) multiplies torch.float8_e4m3fn, got torch.float8_e4m3fnuz"),
    ("dtype_mismatch", TypeError, r"^w: expected dtype torch.float8_e4m3fn \(the dtype of x\)"),
    ("bf16_x", TypeError, r"^x: expected dtype"),
    ("x_3d", ValueError, r"^x: expected a 2-D tensor"),
    ("k_mismatch", ValueError, r"^w: expected shape \(N, 64\)"),
    ("x_scale_shape", ValueError, r"^x_scale: expected shape \(8, 1\) or \(8,\), got \(1, 8\)"),
    ("w_scale_shape", ValueError, r"^w_scale: expected shape \(1, 16\) or \(16,\), got \(16, 2\)"),
    ("scale_dtype", TypeError, r"^x_scale: expected dtype torch.float32, got torch.bfloat16"),
    ("bias_shape", ValueError, r"^bias: expected shape \(16,\)"),
    ("out_shape", ValueError, r"^out: expected shape \(8, 16\)"),
    ("requires_grad", NotImplementedError, r"^bias: requires grad"),
])
def test_a8w8_errors(case, exc, match):
    x, w, xs, ws = _args()
    kw = {}
    if case == "fnuz_on_sm90":
        x, w = x.to(torch.float32).to(torch.float8_e4m3fnuz), w.to(torch.float32).to(torch.float8_e4m3fnuz)
    elif case == "dtype_mismatch":
        w = w.to(torch.float32).to(torch.float8_e5m2)
    elif case == "bf16_x":
        x, w = x.to(torch.bfloat16), w.to(torch.bfloat16)
    elif case == "x_3d":
        x = x.reshape(2, 4, 64)
    elif case == "k_mismatch":
        w = q8(16, 32, dtype=FP8)
    elif case == "x_scale_shape":
        xs = scales(1, 8)
    elif case == "w_scale_shape":
        ws = scales(16, 2)
    elif case == "scale_dtype":
        xs = xs.to(torch.bfloat16)
    elif case == "bias_shape":
        kw["bias"] = randn(15, dtype=torch.bfloat16)
    elif case == "out_shape":
        kw["out"] = torch.empty(8, 15, dtype=torch.bfloat16)
    elif case == "requires_grad":
        kw["bias"] = randn(16, dtype=torch.float32).requires_grad_()
    with pytest.raises(exc, match=match):
        gemmkit.gemm_a8w8(x, w, xs, ws, **kw)


def test_out_dtype_follows_out_and_int8_k_bound():
    x, w, xs, ws = _args()
    out = poisoned((8, 16), torch.float32)
    assert gemmkit.gemm_a8w8(x, w, xs, ws, out=out) is out  # out_dtype None: out's dtype
    ok, msg = within_bound(out, gemm_a8w8_ref(x, w, xs, ws), torch.float32)
    assert ok, msg
    assert gemmkit.gemm_a8w8(x, w, xs, ws).dtype == torch.bfloat16
    big = torch.zeros(1, 131072, dtype=torch.int8)
    with pytest.raises(ValueError, match=r"^x: K = 131072 can overflow the int32 accumulator"):
        gemmkit.gemm_a8w8(big, big, torch.ones(1, 1), torch.ones(1, 1))


def test_blockscale_strided_scales():
    """Column-major x_scale (as DeepGEMM passes it) and a strided w_scale view are read in place."""
    M, N, K = 20, 130, 384
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs = scales(3, M).t()                       # (M, 3), stride (1, M)
    ws = scales(2, 6)[:, ::2]                   # (2, 3), stride (6, 2)
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out_dtype=torch.float32)
    ok, msg = within_bound(y, gemm_a8w8_blockscale_ref(x, w, xs, ws), torch.float32)
    assert ok, msg


@pytest.mark.parametrize("case,exc,match", [
    ("int8", TypeError, r"^x: expected dtype torch.float8_e4m3fn or torch.float8_e4m3fnuz, got torch.int8"),
    ("x_scale_blocks", ValueError, r"^x_scale: expected shape \(8, 2\) for block_shape \(128, 128\)"),
    ("w_scale_blocks", ValueError, r"^w_scale: expected shape \(1, 2\) for block_shape \(128, 128\)"),
    ("block_shape_vs_scales", ValueError, r"^x_scale: expected shape \(8, 4\) for block_shape \(128, 64\)"),
    ("bad_bk", ValueError, r"^block_shape: expected bk a power of two >= 32"),
    ("bad_block", ValueError, r"^block_shape: expected a pair of ints"),
])
def test_blockscale_errors(case, exc, match):
    M, N, K = 8, 16, 256
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs, ws, block = scales(M, 2), scales(1, 2), (128, 128)
    if case == "int8":
        x, w = q8(M, K, dtype=torch.int8), q8(N, K, dtype=torch.int8)
    elif case == "x_scale_blocks":
        xs = scales(M, 3)
    elif case == "w_scale_blocks":
        ws = scales(2, 2)
    elif case == "block_shape_vs_scales":
        block = (128, 64)
    elif case == "bad_bk":
        block = (128, 100)
    elif case == "bad_block":
        block = 128
    with pytest.raises(exc, match=match):
        gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=block)


# ----------------------------------------------------------------------------- torch integration

# opcheck's schema test multiplies the inputs on the CPU, which torch cannot do for fp8:
# the fp8 calls run the other checks (fake tensor, AOT dispatch), int8 runs them all.
NO_SCHEMA = ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def test_opcheck_and_compile(launches):
    xi, wi, xsi, wsi = _args(9, 24, 64, dtype=torch.int8)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a8w8.default, (xi, wi, xsi, wsi, None, torch.float32, ""))
    torch.library.opcheck(torch.ops.gemmkit.gemm_a8w8_out.default,
                          (xi, wi, xsi, wsi, None, "", torch.empty(9, 24, dtype=torch.bfloat16)))
    x, w, xs, ws = _args(9, 24, 64)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a8w8.default, (x, w, xs, ws, None, torch.float32, ""),
                          test_utils=NO_SCHEMA)
    xb, wb = q8(9, 256, dtype=FP8), q8(24, 256, dtype=FP8)
    xbs, wbs = scales(9, 2), scales(1, 2)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a8w8_blockscale.default,
                          (xb, wb, xbs, wbs, 128, 128, torch.bfloat16, ""), test_utils=NO_SCHEMA)
    torch._dynamo.reset()

    def f(x, w, xs, ws):
        return gemmkit.gemm_a8w8(x, w, xs * 2, ws, out_dtype=torch.float32) + 1

    before = gemm_launches(launches)
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, xs, ws)
    assert gemm_launches(launches) > before
    ok, msg = within_bound(y - 1, gemm_a8w8_ref(x, w, xs * 2, ws), torch.float32)
    assert ok, msg


def _check_split_config(op, cfg, M, N, K, launches):
    """gemm_a8w8 (per-token scales) or gemm_a8w8_blockscale (128 x 128 blocks) at (M, N, K) on `cfg`, a config that
    splits K: the GEMM and the split's reduce launched, every element against float64."""
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    out = poisoned((M, N), torch.bfloat16)
    before = gemm_launches(launches)
    if op == "a8w8":
        xs, ws = scales(M, 1), scales(1, N)
        y = gemmkit.gemm_a8w8(x, w, xs, ws, out=out, config=cfg)
        ref = gemm_a8w8_ref(x, w, xs, ws)
    else:
        xs, ws = scales(M, K // 128), scales(N // 128, K // 128)
        y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out, config=cfg)
        ref = gemm_a8w8_blockscale_ref(x, w, xs, ws, (128, 128))
    assert y is out and gemm_launches(launches) == before + 2  # the GEMM and the split's reduce
    ok, msg = within_bound(y, ref, torch.bfloat16)
    assert ok, msg


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_decode_wide_tile_split(op, launches):
    """The config model's wide decode tile as it serves it (configs.model_configs: 16 x 128 over the M_LEQ_16
    bucket's BK and ring, TMA), K split 3 ways as at few tiles (4608 x 36864 at M = 1 runs split 3), against
    float64."""
    from gemmkit import configs

    cfg = dict(dict(configs.model_configs(op, "sm_90"))["model:decode_wide"], NUM_KSPLIT=3)
    assert (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (16, 128)
    _check_split_config(op, cfg, 5, 256, 6 * cfg["BLOCK_SIZE_K"], launches)


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_m256_split_as_served(op, launches):
    """At 128 < M <= 256 where even the 64 x 64 ping-pong's tiles are few, the config model serves the Triton tier's
    tile split along K (configs/model/large_bucket.py `m256_split`): that config as the H200 gets it for 200 x 128 x
    1024 (8 tiles, K split), against float64."""
    from gemmkit import arch, configs

    M, N, K = 200, 128, 1024
    cfg, source = configs.serve(op, arch.get("sm_90"), M, N, K)
    assert cfg.get("backend") != "gluon" and cfg["NUM_KSPLIT"] > 1, source
    _check_split_config(op, cfg, M, N, K, launches)


# ----------------------------------------------------------------------------- gfx942's float8_e4m3fnuz

FNUZ = torch.float8_e4m3fnuz


def test_gfx942_fnuz(monkeypatch):
    """gfx942's fp8 (float8_e4m3fnuz) through the interpreter: from Triton 3.8, whose interpreter has the type (CI's
    newest-release interpreter run: .ci/triton_versions.sh), per-token x per-channel with a bias, block scales, the
    batched op and the quantizer, every element against float64 (the quantizer bit for bit against its reference);
    before 3.8 each op refuses it with the interpreter's reason (ops/_common.interpreter_lacks), not the interpreter's
    own conversion error."""
    from gemmkit import quant
    from gemmkit.ops import _common as C
    from _util import within_every_element

    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx942")
    M, N, K = 19, 40, 160
    x, w = q8(M, K, dtype=FNUZ), q8(N, K, dtype=FNUZ)
    xs, ws, bias = scales(M, 1), scales(1, N), randn(N, dtype=torch.bfloat16)
    xbs, wbs = scales(M, 2), scales(1, 2)  # 1 x 128 and 128 x 128 blocks over K = 160 (the second partial)
    xb = randn(M, K, dtype=torch.bfloat16)
    cfg = dict(SMALL, BLOCK_SIZE_K=64)

    def two(t):  # a batch of 2 copies (fp8 through its bytes)
        return torch.stack([t.view(torch.uint8)] * 2).view(t.dtype) if t.element_size() == 1 else torch.stack([t] * 2)

    calls = [lambda: gemmkit.gemm_a8w8(x, w, xs, ws, bias, out=poisoned((M, N), torch.bfloat16), config=cfg),
             lambda: gemmkit.gemm_a8w8_blockscale(x, w, xbs, wbs, out=poisoned((M, N), torch.bfloat16), config=cfg),
             lambda: gemmkit.batched_gemm_a8w8(two(x), two(w), two(xs), two(ws), config=cfg)]
    if C.interpreter_lacks(FNUZ):
        for call in calls:
            with pytest.raises(ValueError, match=r"^x: torch.float8_e4m3fnuz \(gfx942's fp8\) does not run in Triton "
                                                 r"3\.[67]'s interpreter"):
                call()
        with pytest.raises(ValueError, match=r"^dtype: torch.float8_e4m3fnuz \(gfx942's fp8\) does not run"):
            quant.quantize_fp8_per_token(xb)
        return
    refs = [gemm_a8w8_ref(x, w, xs, ws, bias), gemm_a8w8_blockscale_ref(x, w, xbs, wbs),
            two(gemm_a8w8_ref(x, w, xs, ws))]
    for call, ref in zip(calls, refs):
        y = call()
        for ok, msg in (within_bound(y, ref, y.dtype), within_every_element(y, ref, y.dtype, K)):
            assert ok, msg
    q, s = quant.quantize_fp8_per_token(xb)  # the target's format: e4m3fnuz, saturating at 240
    qr, sr = quant.quantize_fp8_per_token_ref(xb, FNUZ)
    assert q.dtype == FNUZ and torch.equal(q.view(torch.uint8), qr.view(torch.uint8)) and torch.equal(s, sr)
