"""gemm_split_cat and gemm_a8w8_blockscale_split_cat in the Triton interpreter, against float64.

Every test poisons c1 and c2 with NaN, so an element the kernel never writes fails the bound;
the y part of c1 must be y bit for bit (a copy). Shapes cover tiles inside one head, tiles that
cross the c1/c2 boundary or several heads, edge tiles in M, ragged K, and the three stores of
the TMA kernel ("tma_part", "tma_head", "pointer"; kernels/triton/gemm_split_cat.py).
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a8w8_blockscale_ref

from _util import poisoned, q8, randn, scales, within_bound

pytestmark = pytest.mark.interpreter
FP8 = torch.float8_e4m3fn
BASE = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
        "num_stages": 2}
CFG = {
    "pointer": BASE,
    "persistent": dict(BASE, persistent=True),
    "tma": dict(BASE, tma=True),
    "tma_persistent": dict(BASE, tma=True, persistent=True),
    "tma_n16": dict(BASE, BLOCK_SIZE_N=16, tma=True),
}


def ref_split_cat(c, y, S1):
    """float64 (c1, c2) from c (M, N) float64 and y (M, D, S3)."""
    M, D = c.shape[0], y.shape[1]
    c = c.view(M, D, -1)
    return torch.cat([c[..., :S1], y.double()], dim=-1), c[..., S1:]


def check(c1, c2, r1, r2, y, S1, out_dtype):
    assert torch.equal(c1[..., S1:], y.to(c1.dtype)), "y part of c1 is not a copy of y"
    ok, msg = within_bound(torch.cat([c1.reshape(-1), c2.reshape(-1)]),
                           torch.cat([r1.reshape(-1), r2.reshape(-1)]), out_dtype)
    assert ok, msg


def outs(M, D, S1, S2, S3, dtype):
    return poisoned((M, D, S1 + S3), dtype), poisoned((M, D, S2), dtype)


def k_pe(M, D, S3, dtype):
    """y as MLA passes it: k_pe (M, 1, S3) expanded over the heads (stride 0 on D)."""
    return randn(M, 1, S3, dtype=dtype).expand(M, D, S3)


# M, K, D, S1, S2, S3, config
CASES = [
    (17, 40, 3, 16, 16, 8, "pointer"),          # ragged K, M edge, BLOCK_N == S1 + S2
    (1, 64, 4, 16, 16, 8, "tma"),               # tma_head store (BLOCK_N == S1 + S2, S1 == S2)
    (33, 64, 3, 32, 32, 16, "tma_n16"),         # tma_part store (BLOCK_N divides S1 and S2)
    (20, 48, 5, 12, 20, 8, "tma"),              # TMA loads, pointer store: tiles cross heads and parts
    (40, 72, 7, 8, 4, 5, "persistent"),         # several heads per tile; S3 not a power of two
    (70, 32, 2, 24, 40, 16, "tma_persistent"),  # tiles straddle the c1 / c2 boundary inside a head
    (9, 16, 6, 5, 3, 3, "pointer"),             # odd everything
    (40, 72, 7, 8, 4, 5, "tma"),                # TMA kernel, several heads per tile
]


@pytest.mark.parametrize("M,K,D,S1,S2,S3,cfg", CASES, ids=[f"M{c[0]}-K{c[1]}-D{c[2]}-{c[3]}.{c[4]}.{c[5]}-{c[6]}"
                                                          for c in CASES])
def test_split_cat(M, K, D, S1, S2, S3, cfg, launches):
    x, w = randn(M, K, dtype=torch.bfloat16), randn(D * (S1 + S2), K, dtype=torch.bfloat16)
    y = k_pe(M, D, S3, torch.bfloat16)
    c1, c2 = outs(M, D, S1, S2, S3, torch.bfloat16)
    before = sum(launches.values())
    r = gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=CFG[cfg])
    kernel = "gemm_split_cat_tma_kernel" if cfg.startswith("tma") else "gemm_split_cat_kernel"
    assert r[0] is c1 and r[1] is c2 and launches[kernel] >= 1 and sum(launches.values()) == before + 1
    check(c1, c2, *ref_split_cat(x.double() @ w.double().T, y, S1), y, S1, torch.bfloat16)


@pytest.mark.parametrize("dtype,out_dtype", [(torch.float16, torch.float16), (torch.bfloat16, torch.float32)],
                         ids=["fp16", "bf16-fp32out"])
@pytest.mark.parametrize("cfg", ["pointer", "tma"])
def test_split_cat_dtypes_bias_fresh_outputs(dtype, out_dtype, cfg):
    M, K, D, S1, S2, S3 = 19, 64, 3, 16, 16, 8
    x, w, bias = randn(M, K, dtype=dtype), randn(D * (S1 + S2), K, dtype=dtype), randn(D * (S1 + S2), dtype=dtype)
    y = randn(M, D, S3, dtype=out_dtype)  # a plain (M, D, S3) y
    c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, bias, out_dtype=out_dtype, config=CFG[cfg])
    assert c1.is_contiguous() and c2.is_contiguous() and c1.dtype == c2.dtype == out_dtype
    assert c1.shape == (M, D, S1 + S3) and c2.shape == (M, D, S2)
    check(c1, c2, *ref_split_cat(x.double() @ w.double().T + bias.double(), y, S1), y, S1, out_dtype)


@pytest.mark.parametrize("layout", ["x_col_major", "w_transposed", "y_strided", "out_strided"])
def test_split_cat_strided(layout):
    M, K, D, S1, S2, S3 = 21, 48, 3, 16, 8, 8
    x, w = randn(M, K, dtype=torch.bfloat16), randn(D * (S1 + S2), K, dtype=torch.bfloat16)
    y = k_pe(M, D, S3, torch.bfloat16)
    c1, c2 = outs(M, D, S1, S2, S3, torch.bfloat16)
    if layout == "x_col_major":
        x = x.t().contiguous().t()
    elif layout == "w_transposed":
        w = w.t().contiguous().t()
    elif layout == "y_strided":
        y = randn(D, 2 * S3, M, dtype=torch.bfloat16).permute(2, 0, 1)[..., ::2]
    else:  # c1, c2 views into larger buffers, last dim not unit-stride
        c1 = poisoned((M, D, 2 * (S1 + S3)), torch.bfloat16)[..., ::2]
        c2 = poisoned((D, M, S2 + 3), torch.bfloat16).permute(1, 0, 2)[..., :S2]
    for cfg in ("pointer", "tma"):
        c1.fill_(float("nan"))
        c2.fill_(float("nan"))
        gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=CFG[cfg])
        check(c1, c2, *ref_split_cat(x.double() @ w.double().T, y, S1), y, S1, torch.bfloat16)


@pytest.mark.parametrize("S1,S2,S3", [(0, 16, 8), (16, 0, 8), (16, 16, 0)])
def test_split_cat_empty_parts(S1, S2, S3):
    M, K, D = 11, 32, 3
    x, w = randn(M, K, dtype=torch.bfloat16), randn(D * (S1 + S2), K, dtype=torch.bfloat16)
    y = k_pe(M, D, S3, torch.bfloat16)
    for cfg in ("pointer", "tma_n16"):
        c1, c2 = outs(M, D, S1, S2, S3, torch.bfloat16)
        gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, c2), config=CFG[cfg])
        check(c1, c2, *ref_split_cat(x.double() @ w.double().T, y, S1), y, S1, torch.bfloat16)


_COMPILE_SM90 = """
import json, sys
from gemmkit import arch
from gemmkit.isa import compile_static
from gemmkit.ops.gemm_split_cat import static_spec
out = []
for store, bn, persistent, s3 in json.loads(sys.argv[1]):
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 2, "tma": True, "persistent": persistent, "NUM_KSPLIT": 1, "STORE": store}
    target = arch.ARCHS["sm_90"]
    try:
        kernel, sig, ce, div, opts = static_spec(cfg, target, tma=True, split=(128, 128, s3))
        out.append(bool(compile_static(kernel, sig, ce, target, opts, div).asm.get("cubin")))
    except Exception as e:
        out.append(f"{type(e).__name__}: {str(e)[:300]}")
print(json.dumps(out))
"""


def test_tma_kernel_compiles_for_sm90_with_and_without_y():
    """Static sm_90 compile of the TMA kernel at the DeepSeek split, every store, y present (S3 = 64) and
    absent (S3 = 0: c1 = c[..., :S1]). S3 = 0 with the "tma_part" store failed in Triton 3.6's
    TritonGPUFuseNestedLoops pass ("'scf.if' op region control flow edge ...", found on the H200 in
    session 5) until the kernel stopped flattening that case. A subprocess: the static compile needs
    real @triton.jit functions (TRITON_INTERPRET=0), as tests/kernels/test_hopper_pingpong_batched.py."""
    import json
    import os
    import subprocess
    import sys

    cases = [[store, bn, persistent, s3] for store, bn, persistent in
             (("tma_part", 64, False), ("tma_part", 128, True), ("tma_head", 256, False), ("pointer", 64, False))
             for s3 in (0, 64)]
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", _COMPILE_SM90, json.dumps(cases)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res == [True] * len(cases), [(c, x) for c, x in zip(cases, res) if x is not True]


def test_split_cat_empty_dims():
    w, y = randn(64, 32, dtype=torch.bfloat16), randn(0, 2, 8, dtype=torch.bfloat16)
    c1, c2 = gemmkit.gemm_split_cat(randn(0, 32, dtype=torch.bfloat16), w, y, 16, 16)
    assert c1.shape == (0, 2, 24) and c2.shape == (0, 2, 16)
    # K == 0: c = bias; the y part still copied
    bias, y = randn(64, dtype=torch.bfloat16), randn(3, 2, 8, dtype=torch.bfloat16)
    c1, c2 = gemmkit.gemm_split_cat(randn(3, 0, dtype=torch.bfloat16), randn(64, 0, dtype=torch.bfloat16), y, 16, 16,
                                    bias)
    b = bias.view(2, 32)
    assert torch.equal(c1, torch.cat([b[:, :16].expand(3, 2, 16), y], -1)) and torch.equal(c2, b[:, 16:].expand(3, 2, 16))


# ----------------------------------------------------------------------------- fp8 block scale

def fp8(*shape):
    return q8(*shape, dtype=FP8)


BS_CASES = [  # M, K, D, S1, S2, S3, block_shape, config
    (17, 256, 2, 64, 64, 32, (128, 128), dict(BASE, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64)),
    (5, 300, 3, 32, 32, 16, (128, 128), dict(BASE, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128, tma=True)),   # K tail; tma_head
    (33, 128, 4, 16, 16, 8, (64, 64), dict(BASE, BLOCK_SIZE_K=64, tma=True, persistent=True)),
    (9, 192, 3, 24, 8, 8, (48, 64), dict(BASE, BLOCK_SIZE_K=64, persistent=True)),  # bn not a power of two
]


@pytest.mark.parametrize("M,K,D,S1,S2,S3,block,cfg", BS_CASES, ids=[f"M{c[0]}-K{c[1]}-D{c[2]}-{i}"
                                                                    for i, c in enumerate(BS_CASES)])
def test_blockscale_split_cat(M, K, D, S1, S2, S3, block, cfg, launches):
    N = D * (S1 + S2)
    x, w = fp8(M, K), fp8(N, K)
    xs, ws = scales(M, -(-K // block[1])), scales(-(-N // block[0]), -(-K // block[1]))
    y = k_pe(M, D, S3, torch.float32)
    c1, c2 = outs(M, D, S1, S2, S3, torch.float32)
    before = sum(launches.values())
    gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2, block_shape=block, out=(c1, c2), config=cfg)
    assert sum(launches.values()) == before + 1
    ref = gemm_a8w8_blockscale_ref(x, w, xs, ws, block)
    check(c1, c2, *ref_split_cat(ref, y, S1), y, S1, torch.float32)


def test_blockscale_split_cat_default_table():
    M, K, D, S1, S2, S3 = 3, 128, 2, 64, 64, 16
    x, w = fp8(M, K), fp8(D * 128, K)
    xs, ws = scales(M, 1), scales(2, 1)
    y = k_pe(M, D, S3, torch.bfloat16)
    c1, c2 = gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2)
    assert c1.dtype == torch.bfloat16
    check(c1, c2, *ref_split_cat(gemm_a8w8_blockscale_ref(x, w, xs, ws), y, S1), y, S1, torch.bfloat16)


# ----------------------------------------------------------------------------- custom ops, bench hooks

def test_custom_ops_and_fakes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    M, K, D, S1, S2, S3 = 5, 32, 2, 16, 16, 8
    x, w, y = randn(M, K, dtype=torch.bfloat16), randn(D * 32, K, dtype=torch.bfloat16), k_pe(M, D, S3, torch.bfloat16)
    c1, c2 = torch.ops.gemmkit.gemm_split_cat(x, w, y, S1, S2, None, torch.bfloat16, "")
    check(c1, c2, *ref_split_cat(x.double() @ w.double().T, y, S1), y, S1, torch.bfloat16)
    o1, o2 = outs(M, D, S1, S2, S3, torch.bfloat16)
    torch.ops.gemmkit.gemm_split_cat_out(x, w, y, S1, S2, None, "", o1, o2)
    assert torch.equal(o1, c1) and torch.equal(o2, c2)
    with FakeTensorMode() as mode:
        f1, f2 = torch.ops.gemmkit.gemm_split_cat(mode.from_tensor(x), mode.from_tensor(w), mode.from_tensor(y),
                                                  S1, S2, None, torch.bfloat16, "")
        assert f1.shape == (M, D, S1 + S3) and f2.shape == (M, D, S2)
        xs, ws = mode.from_tensor(scales(M, 1)), mode.from_tensor(scales(1, 1))
        g1, g2 = torch.ops.gemmkit.gemm_a8w8_blockscale_split_cat(
            mode.from_tensor(fp8(M, K)), mode.from_tensor(fp8(D * 32, K)), xs, ws, mode.from_tensor(y), S1, S2, 128,
            128, torch.bfloat16, "")
        assert g1.shape == (M, D, S1 + S3) and g2.shape == (M, D, S2)


@pytest.mark.parametrize("op,dtype", [("split_cat", "bf16"), ("a8w8_blockscale_split_cat", "fp8")])
def test_bench_hooks(op, dtype):
    """The bench/tune hooks on a small kv_b_proj-like shape (D = 2 heads of 128 + 128, K = 128): the op writes
    the flat c1 | c2 buffer the check compares, and the vendor side is torch's GEMM (cuBLASLt's block-scaled one
    for fp8, GPU only) + cat."""
    from gemmkit.bench.ops import get

    bop = get(op)
    M, N, K = 3, 512, 128
    inp = bop.make_inputs(M, N, K, dtype, torch.device("cpu"))
    ref = bop.reference(inp)
    out = poisoned(tuple(ref.shape), bop.out_dtype(dtype))
    assert bop.run(inp, None, out=out) is out
    ok, msg = within_bound(out, ref, torch.bfloat16)
    assert ok, msg
    if dtype == "fp8":  # the vendor is cuBLASLt's block-scaled GEMM (GPU only): its split / cat on the reference
        from gemmkit.bench.ops import _bs_reference, _split_cat_of

        v1, v2 = _split_cat_of(_bs_reference(inp[:6]).to(torch.bfloat16), inp[6])
    else:
        v1, v2 = bop.vendor(inp)
    assert v1.shape == (M, 2, 192) and v2.shape == (M, 2, 128)
    from gemmkit.tune import op_space

    assert [c["NUM_KSPLIT"] for c in op_space(op)(M, N, K, gemmkit.arch.get("sm_90"))].count(1) > 0
    assert all(c["NUM_KSPLIT"] == 1 for c in op_space(op)(M, N, K, gemmkit.arch.get("sm_90")))


# ----------------------------------------------------------------------------- validation

def _args(M=4, K=32, D=2, S1=16, S2=16, S3=8):
    return (randn(M, K, dtype=torch.bfloat16), randn(D * (S1 + S2), K, dtype=torch.bfloat16),
            randn(M, D, S3, dtype=torch.bfloat16))


@pytest.mark.parametrize("case,exc,match", [
    ("x_3d", ValueError, r"^x: expected a 2-D tensor"),
    ("x_dtype", TypeError, r"^x: expected dtype"),
    ("w_dtype", TypeError, r"^w: expected dtype torch.bfloat16 \(the dtype of x\)"),
    ("k_mismatch", ValueError, r"^w: expected shape \(N, 32\)"),
    ("n_not_heads", ValueError, r"^w: expected N = D \* \(S1 \+ S2\) = 2 \* 32 = 64 rows"),
    ("y_2d", ValueError, r"^y: expected a 3-D tensor"),
    ("y_rows", ValueError, r"^y: expected shape \(4, D, S3\)"),
    ("y_dtype", TypeError, r"^y: expected dtype torch.bfloat16 \(out_dtype"),
    ("s1_negative", ValueError, r"^S1: expected an int >= 0, got -1"),
    ("s2_float", ValueError, r"^S2: expected an int >= 0, got 16.0"),
    ("both_zero", ValueError, r"^S1, S2: expected S1 \+ S2 >= 1"),
    ("bias_shape", ValueError, r"^bias: expected shape \(64,\)"),
    ("out_not_pair", TypeError, r"^out: expected a pair \(c1, c2\)"),
    ("out1_shape", ValueError, r"^out\[0\]: expected shape \(4, 2, 24\)"),
    ("out2_dtype", TypeError, r"^out\[1\]: expected dtype torch.bfloat16"),
    ("split_k", ValueError, r"^config: key 'NUM_KSPLIT' = 2; the split-cat GEMMs have no split-K"),
    ("requires_grad", NotImplementedError, r"^y: requires grad"),
])
def test_split_cat_errors(case, exc, match):
    x, w, y = _args()
    S1, S2, kw = 16, 16, {}
    if case == "x_3d":
        x = x.view(2, 2, 32)
    elif case == "x_dtype":
        x = x.float()
    elif case == "w_dtype":
        w = w.half()
    elif case == "k_mismatch":
        w = w[:, :16]
    elif case == "n_not_heads":
        w = w[:48]
    elif case == "y_2d":
        y = y[:, 0]
    elif case == "y_rows":
        y = y[:3]
    elif case == "y_dtype":
        y = y.half()
    elif case == "s1_negative":
        S1 = -1
    elif case == "s2_float":
        S2 = 16.0
    elif case == "both_zero":
        S1 = S2 = 0
    elif case == "bias_shape":
        kw["bias"] = randn(32, dtype=torch.bfloat16)
    elif case == "out_not_pair":
        kw["out"] = poisoned((4, 2, 24), torch.bfloat16)
    elif case == "out1_shape":
        kw["out"] = (poisoned((4, 2, 16), torch.bfloat16), poisoned((4, 2, 16), torch.bfloat16))
    elif case == "out2_dtype":
        kw["out"] = (poisoned((4, 2, 24), torch.bfloat16), poisoned((4, 2, 16), torch.float16))
    elif case == "split_k":
        kw["config"] = dict(BASE, NUM_KSPLIT=2)
    elif case == "requires_grad":
        y = y.requires_grad_()
    with pytest.raises(exc, match=match):
        gemmkit.gemm_split_cat(x, w, y, S1, S2, **kw)


@pytest.mark.parametrize("case,exc,match", [
    ("bf16_x", TypeError, r"^x: expected dtype"),
    ("w_scale_shape", ValueError, r"^w_scale: expected shape \(1, 1\)"),
    ("y_dtype", TypeError, r"^y: expected dtype torch.bfloat16 \(out_dtype"),
    ("n_not_heads", ValueError, r"^w: expected N = D \* \(S1 \+ S2\)"),
])
def test_blockscale_split_cat_errors(case, exc, match):
    M, K, D = 4, 64, 2
    x, w, xs, ws = fp8(M, K), fp8(D * 32, K), scales(M, 1), scales(1, 1)
    y = randn(M, D, 8, dtype=torch.bfloat16)
    if case == "bf16_x":
        x = x.to(torch.bfloat16)
    elif case == "w_scale_shape":
        ws = scales(2, 1)
    elif case == "y_dtype":
        y = y.float()
    elif case == "n_not_heads":
        w, ws = fp8(D * 32 + 8, K), scales(1, 1)
    with pytest.raises(exc, match=match):
        gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, 16, 16)


def test_split_cat_rejects_the_gluon_backend():
    """No Gluon split-cat kernel: a config that asks for one is an error, not ignored."""
    x, w, y = randn(4, 32, dtype=torch.bfloat16), randn(2 * 24, 32, dtype=torch.bfloat16), \
        randn(4, 2, 8, dtype=torch.bfloat16)
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 2, "backend": "gluon"}
    with pytest.raises(ValueError, match="key 'backend' = 'gluon'"):
        gemmkit.gemm_split_cat(x, w, y, 16, 8, config=cfg)
