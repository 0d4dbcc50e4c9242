"""`out=` that shares memory with an input is refused, for every op that takes `out=`; outputs that
only share a buffer with an input, without touching its elements, still run and are right.

Before the check, such calls returned wrong values (relative error 1.2-2.6): the kernel overwrote
an operand while other tiles still read it. Also: a sparse operand is a TypeError that names it.
"""
import pytest
import torch

import gemmkit
from gemmkit import quant
from gemmkit.reference import gemm_a16w16_ref

from _util import randn, within_bound

pytestmark = pytest.mark.interpreter
BF = torch.bfloat16


def _raises_naming(fn, other):
    with pytest.raises(ValueError, match=rf"^out(\[\d\])?: expected memory no other argument uses, but it "
                                         rf"overlaps {other} \(bytes"):
        fn()


def test_a16w16_out_is_x():
    buf = randn(16, 16, dtype=BF)
    w = randn(16, 16, dtype=BF)
    _raises_naming(lambda: gemmkit.gemm_a16w16(buf, w, out=buf), "x")


def test_a16w16_out_is_a_view_of_w():
    w = randn(32, 16, dtype=BF)
    x = randn(8, 16, dtype=BF)
    _raises_naming(lambda: gemmkit.gemm_a16w16(x, w, out=w.view(-1)[:256].view(8, 32)), "w")


def test_a16w16_out_overlaps_bias_and_batched_leading_dims():
    x = randn(2, 3, 16, dtype=BF)
    w = randn(8, 16, dtype=BF)
    store = torch.empty(2 * 3 * 8 + 4, dtype=BF)
    bias = store[:8]
    out = store[4:4 + 48].view(2, 3, 8)  # starts inside bias
    bias.copy_(randn(8, dtype=BF))
    _raises_naming(lambda: gemmkit.gemm_a16w16(x, w, bias, out=out), "bias")


def test_a16w16_out_beside_its_input_in_one_buffer_runs(launches):
    """x and out are disjoint halves of one allocation: allowed, and right."""
    buf = torch.full((2 * 17 * 24,), float("nan"), dtype=BF)
    x = buf[:17 * 24].view(17, 24)
    x.copy_(randn(17, 24, dtype=BF))
    w = randn(24, 24, dtype=BF)
    out = buf[17 * 24:].view(17, 24)
    y = gemmkit.gemm_a16w16(x, w, out=out)
    assert y.data_ptr() == out.data_ptr()
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w), BF)
    assert ok, msg


def test_a8w8_out_overlaps_each_input():
    M, N, K = 16, 16, 64
    x = quant.quantize_fp8_per_token(randn(M, K, dtype=torch.float32))[0]
    w = quant.quantize_fp8_per_channel(randn(N, K, dtype=torch.float32))[0]
    # out (bf16, 512 bytes) placed over each operand's bytes in turn
    for name in ("x", "w", "x_scale", "w_scale"):
        raw = torch.empty(4096, dtype=torch.uint8)
        views = {"x": raw[:M * K].view(torch.float8_e4m3fn).view(M, K),
                 "w": raw[1024:1024 + N * K].view(torch.float8_e4m3fn).view(N, K),
                 "x_scale": raw[2048:2048 + 4 * M].view(torch.float32).view(M, 1),
                 "w_scale": raw[2560:2560 + 4 * N].view(torch.float32).view(1, N)}
        views["x"].copy_(x)
        views["w"].copy_(w)
        views["x_scale"].fill_(0.5)
        views["w_scale"].fill_(0.25)
        start = {"x": 0, "w": 1024, "x_scale": 2048, "w_scale": 2560}[name]
        out = raw[start:start + 2 * M * N].view(BF).view(M, N)
        _raises_naming(lambda: gemmkit.gemm_a8w8(views["x"], views["w"], views["x_scale"], views["w_scale"], out=out),
                       name)


def test_blockscale_and_afp4_out_overlaps_x():
    M, N, K = 16, 32, 128
    xf, wf = randn(M, K, dtype=torch.float32), randn(N, K, dtype=torch.float32)
    xq, xs = quant.quantize_fp8_blockwise(xf, block=(1, 128))
    wq, ws = quant.quantize_fp8_blockwise(wf, block=(128, 128))
    raw = torch.empty(M * K, dtype=torch.uint8)
    raw.copy_(xq.view(torch.uint8).reshape(-1))
    x_alias = raw.view(torch.float8_e4m3fn).view(M, K)
    out = raw[:M * N * 2].view(BF).view(M, N)
    _raises_naming(lambda: gemmkit.gemm_a8w8_blockscale(x_alias, wq, xs, ws, out=out), "x")

    xq4, xs4 = quant.quantize_mxfp4(xf)
    wq4, ws4 = quant.quantize_mxfp4(wf)
    raw = torch.empty(wq4.numel(), dtype=torch.uint8)
    w_alias = raw.view(wq4.shape)
    w_alias.copy_(wq4)
    out = raw[:M * N * 2].view(BF).view(M, N)
    _raises_naming(lambda: gemmkit.gemm_afp4wfp4(xq4, w_alias, xs4, ws4, out=out), "w")


def test_batched_out_overlaps_x():
    x = randn(2, 8, 16, dtype=BF)
    w = randn(2, 16, 16, dtype=BF)
    w8 = w[:, :8, :].contiguous()
    _raises_naming(lambda: gemmkit.batched_gemm_a16w16(x, w8, out=x.view(-1)[:2 * 8 * 8].view(2, 8, 8)), "x")
    xq = torch.randint(-8, 8, (2, 8, 32), dtype=torch.int8)
    wq = torch.randint(-8, 8, (2, 8, 32), dtype=torch.int8)
    xs = torch.ones(2, 8, 1)
    big_ws = torch.ones(2 * 8 * 8)
    ws_view = big_ws[:2 * 8].view(2, 1, 8)
    _raises_naming(lambda: gemmkit.batched_gemm_a8w8(xq, wq, xs, ws_view, out=big_ws.view(2, 8, 8),
                                                     out_dtype=torch.float32), "w_scale")


def test_gated_and_ffn_out_overlaps_x():
    x = randn(8, 16, dtype=BF)
    wgu = randn(32, 16, dtype=BF)
    wd = randn(16, 16, dtype=BF)
    _raises_naming(lambda: gemmkit.gemm_a16w16_gated(x, wgu, out=x), "x")
    _raises_naming(lambda: gemmkit.ffn_gated(x, wgu, wd, out=wd[:8]), "w_down")


def test_split_cat_outputs_overlap_inputs_or_each_other():
    M, D, S1, S2, S3, K = 4, 2, 8, 8, 4, 32
    x = randn(M, K, dtype=BF)
    w = randn(D * (S1 + S2), K, dtype=BF)
    ybuf = torch.empty(M * D * S2, dtype=BF)
    y = ybuf[:M * D * S3].view(M, D, S3)
    y.copy_(randn(M, D, S3, dtype=BF))
    c1 = torch.empty(M, D, S1 + S3, dtype=BF)
    _raises_naming(lambda: gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(c1, ybuf.view(M, D, S2))), "y")
    shared = torch.empty(M * D * (S1 + S3), dtype=BF)
    _raises_naming(lambda: gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(shared.view(M, D, S1 + S3),
                                                                         shared[:M * D * S2].view(M, D, S2))),
                   r"out\[0\]")


def test_sparse_weight_is_named():
    x = randn(4, 16, dtype=BF)
    w = randn(8, 16, dtype=BF).to_sparse()
    with pytest.raises(TypeError, match=r"^w: expected a dense \(strided\) tensor, got layout torch.sparse_coo"):
        gemmkit.gemm_a16w16(x, w)


def test_interleaved_outputs_of_one_buffer_run(launches):
    """c1 = buf[..., :S1 + S3] and c2 = buf[..., S1 + S3:] interleave row by row in one allocation without
    sharing a byte: allowed (the address ranges intersect, the elements do not), and right."""
    M, D, S1, S2, S3, K = 5, 2, 8, 8, 4, 32
    x, w, y = randn(M, K, dtype=BF), randn(D * (S1 + S2), K, dtype=BF), randn(M, D, S3, dtype=BF)
    buf = torch.full((M, D, S1 + S3 + S2), float("nan"), dtype=BF)
    c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(buf[..., :S1 + S3], buf[..., S1 + S3:]))
    c = (x.double() @ w.double().T).view(M, D, S1 + S2)
    ok1, msg1 = within_bound(c1[..., :S1], c[..., :S1], BF)
    ok2, msg2 = within_bound(c2, c[..., S1:], BF)
    assert ok1 and ok2, (msg1, msg2)
    assert torch.equal(c1[..., S1:], y)


def test_share_bytes_is_exact_on_random_views():
    """share_bytes against brute force (the byte sets of both views) on random strided views of one buffer:
    dtypes of 1, 2 and 4 bytes, strides 0..40, storage offsets."""
    import itertools
    import random

    from gemmkit.ops._common import share_bytes

    def byte_set(t):
        e, out = t.element_size(), set()
        for idx in itertools.product(*[range(n) for n in t.shape]):
            start = t.data_ptr() + sum(i * s for i, s in zip(idx, t.stride())) * e
            out.update(range(start, start + e))
        return out

    seed = torch.seed()
    rng = random.Random(seed)
    buf = torch.empty(4096, dtype=torch.uint8)

    def view():
        dtype = rng.choice([torch.uint8, torch.bfloat16, torch.float32])
        e = torch.empty(0, dtype=dtype).element_size()
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
        stride = [rng.choice([0, 1, 2, 3, 5, 7, 8, 16, 40]) for _ in shape]
        span = sum((n - 1) * s for n, s in zip(shape, stride)) + 1
        return buf.view(dtype).as_strided(shape, stride, rng.randint(0, min(4096 // e - span, 60)))

    for _ in range(500):
        a, b = view(), view()
        assert share_bytes(a, b) == bool(byte_set(a) & byte_set(b)), \
            (seed, a.shape, a.stride(), a.storage_offset(), a.dtype, b.shape, b.stride(), b.storage_offset(), b.dtype)
