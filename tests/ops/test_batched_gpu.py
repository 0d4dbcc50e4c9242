"""batched_gemm_a16w16 and batched_gemm_a8w8 on the GPU (run on the H200: `pytest -m gpu`).

Reference per batch entry: float64 on the CPU for small problems, float32 on the GPU (TF32 off,
conftest) for large ones. Bounds as tests/ops/test_a16w16_gpu.py / test_a8w8_gpu.py: bf16 rounding of
y (tests/_util.TOL), plus fp8's reduced-precision accumulation inside one promoted K block.
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a8w8_ref, gemm_a16w16_ref

from _util import TOL

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn


def rel_entries(y, ref):
    """Largest per-entry ||y[b] - ref[b]|| / ||ref[b]|| (a wrong batch offset spoils one entry)."""
    assert torch.isfinite(y).all(), "non-finite output (unwritten element?)"
    y, ref = y.double(), ref.to(y.device).double()
    return max(((y[b] - ref[b]).norm() / ref[b].norm()).item() for b in range(y.shape[0]))


def ref16(x, w, bias=None):
    B, M, K = x.shape
    if M * w.shape[1] * K * B <= 2**28:
        return torch.stack([gemm_a16w16_ref(x[b], w[b], None if bias is None else bias[b] if bias.dim() == 2
                                             else bias) for b in range(B)])
    y = torch.bmm(x.float(), w.float().transpose(1, 2))
    return y + (bias.float()[:, None, :] if bias is not None and bias.dim() == 2 else
                bias.float() if bias is not None else 0)


def ref8(x, w, xs, ws, bias=None):
    B, M, K = x.shape
    N = w.shape[1]
    if M * N * K * B <= 2**28:
        return torch.stack([gemm_a8w8_ref(x[b], w[b], xs.reshape(B, M)[b], ws.reshape(B, N)[b],
                                          None if bias is None else bias[b]) for b in range(B)])
    y = torch.bmm(x.float(), w.float().transpose(1, 2)) * xs.reshape(B, M, 1) * ws.reshape(B, 1, N)
    return y + bias.float()[:, None, :] if bias is not None else y


# B, M, N, K: the grid (aligned: TMA), decode-like rows, odd shapes (pointer fallback)
SHAPES = [(8, 512, 512, 512), (64, 512, 512, 512), (8, 2048, 2048, 2048), (64, 1024, 1024, 1024),
          (4, 1, 4096, 4096), (3, 1000, 1500, 784), (2, 17, 31, 48), (5, 333, 1000, 1000), (32, 128, 96, 64)]


@pytest.mark.parametrize("B,M,N,K", SHAPES, ids=[f"{b}x{m}x{n}x{k}" for b, m, n, k in SHAPES])
def test_a16w16_shapes(B, M, N, K, launches):
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16), torch.randn(B, N, K, device=DEV,
                                                                               dtype=torch.bfloat16)
    bias = torch.randn(B, N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((B, M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = sum(launches.values())
    gemmkit.batched_gemm_a16w16(x, w, bias, out=out)
    torch.cuda.synchronize()
    assert sum(launches.values()) == before + 1
    err = rel_entries(out, ref16(x, w, bias))
    assert err <= TOL[torch.bfloat16], f"rel err {err:.3g}"


def test_a16w16_tma_path_taken(launches):
    """Aligned operands on the sm_90 table take the TMA kernel; a K that breaks TMA's 16-byte rule: the TMA kernel on
    copies of x and w to 16-byte rows from ops/dispatch.ROW_COPY_MIN_MACS, the pointer kernel with the same config
    under it."""
    x, w = torch.randn(8, 256, 512, device=DEV, dtype=torch.bfloat16), torch.randn(8, 256, 512, device=DEV,
                                                                                   dtype=torch.bfloat16)
    before = launches["batched_gemm_tma_kernel"]
    y = gemmkit.batched_gemm_a16w16(x, w)
    assert launches["batched_gemm_tma_kernel"] == before + 1
    assert rel_entries(y, ref16(x, w)) <= TOL[torch.bfloat16]
    x2, w2 = x[:, :, :500].contiguous(), w[:, :, :500].contiguous()  # rows of 1000 bytes: not 16-byte multiples
    before = launches.copy()
    y2 = gemmkit.batched_gemm_a16w16(x2, w2)  # 262 M multiply-adds: the copies
    launched = launches - before
    assert launched["pad_rows_kernel"] == 2 and launched["batched_gemm_tma_kernel"] == 1, launched
    assert rel_entries(y2, ref16(x2, w2)) <= TOL[torch.bfloat16]
    x3, w3 = x2[:2, :64], w2[:2]  # 16 M: the pointer kernel
    before = launches["batched_gemm_kernel"]
    y3 = gemmkit.batched_gemm_a16w16(x3, w3)
    assert launches["batched_gemm_kernel"] == before + 1
    assert rel_entries(y3, ref16(x3, w3)) <= TOL[torch.bfloat16]


@pytest.mark.parametrize("layout", ["x_batch_interleaved", "w_broadcast", "x_col_major", "out_strided",
                                    "w_transposed"])
def test_a16w16_strided(layout):
    B, M, N, K = 6, 300, 256, 512
    x = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(B, N, K, device=DEV, dtype=torch.bfloat16)
    out = None
    if layout == "x_batch_interleaved":
        x = torch.randn(M, B, K, device=DEV, dtype=torch.bfloat16).transpose(0, 1)
    elif layout == "w_broadcast":
        w = torch.randn(1, N, K, device=DEV, dtype=torch.bfloat16).expand(B, N, K)
    elif layout == "x_col_major":
        x = torch.randn(B, K, M, device=DEV, dtype=torch.bfloat16).transpose(1, 2)
    elif layout == "w_transposed":  # probs @ V: V (B, K, N) passed as V.transpose(1, 2), read by TMA in place
        w = torch.randn(B, K, N, device=DEV, dtype=torch.bfloat16).transpose(1, 2)
    else:
        out = torch.full((B, M, N + 3), float("nan"), device=DEV, dtype=torch.bfloat16)[:, :, :N]
    y = gemmkit.batched_gemm_a16w16(x, w, out=out)
    assert out is None or y is out
    assert rel_entries(y, ref16(x, w)) <= TOL[torch.bfloat16]


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("tma", [False, True])
def test_a16w16_config_paths(tma, persistent):
    B, M, N, K = 64, 200, 136, 256
    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 3, "tma": tma, "persistent": persistent}
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.float16), torch.randn(B, N, K, device=DEV,
                                                                              dtype=torch.float16)
    bias = torch.randn(N, device=DEV, dtype=torch.float16)
    y = gemmkit.batched_gemm_a16w16(x, w, bias, config=cfg, out_dtype=torch.float32)
    ref = torch.stack([gemm_a16w16_ref(x[b], w[b], bias) for b in range(B)])
    assert rel_entries(y, ref) <= TOL[torch.float32] * 64  # fp32 out: fp32 accumulation order dominates


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("B,M,N,K", [(8, 1024, 1024, 1024), (64, 512, 512, 512), (3, 333, 1000, 784),
                                     (4, 1, 4096, 4096)], ids=str)
def test_a8w8_shapes(B, M, N, K, dtype, launches):
    if dtype == torch.int8:
        x = torch.randint(-128, 128, (B, M, K), device=DEV, dtype=torch.int8)
        w = torch.randint(-128, 128, (B, N, K), device=DEV, dtype=torch.int8)
    else:
        x = (torch.randn(B, M, K, device=DEV) * 8).to(FP8)
        w = (torch.randn(B, N, K, device=DEV) * 8).to(FP8)
    xs, ws = torch.rand(B, M, 1, device=DEV) / 64 + 1e-3, torch.rand(B, 1, N, device=DEV) / 64 + 1e-3
    bias = torch.randn(B, N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((B, M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = sum(launches.values())
    gemmkit.batched_gemm_a8w8(x, w, xs, ws, bias, out=out)
    torch.cuda.synchronize()
    assert sum(launches.values()) == before + 1
    err = rel_entries(out, ref8(x, w, xs, ws, bias))
    assert err <= TOL[torch.bfloat16], f"rel err {err:.3g}"


def test_fp8_accumulation_is_promoted():
    """K = 16384: promoted fp8 sums stay within 2**-12 of float64 (as gemm_a8w8's gpu test)."""
    B, M, N, K = 2, 128, 128, 16384
    x, w = (torch.randn(B, M, K, device=DEV) * 8).to(FP8), (torch.randn(B, N, K, device=DEV) * 8).to(FP8)
    ones_m, ones_n = torch.ones(B, M, 1, device=DEV), torch.ones(B, 1, N, device=DEV)
    y = gemmkit.batched_gemm_a8w8(x, w, ones_m, ones_n, out_dtype=torch.float32)
    err = rel_entries(y, ref8(x, w, ones_m, ones_n))
    assert err <= 2**-12, f"rel err {err:.3g}"


def test_deterministic_and_cuda_graph():
    B, M, N, K = 16, 512, 768, 1024
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16), torch.randn(B, N, K, device=DEV,
                                                                               dtype=torch.bfloat16)
    a, b = gemmkit.batched_gemm_a16w16(x, w), gemmkit.batched_gemm_a16w16(x, w)
    assert torch.equal(a, b)
    out = torch.empty(B, M, N, device=DEV, dtype=torch.bfloat16)
    gemmkit.batched_gemm_a16w16(x, w, out=out)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.batched_gemm_a16w16(x, w, out=out)
    out.fill_(float("nan"))
    x.copy_(torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16))
    g.replay()
    torch.cuda.synchronize()
    assert rel_entries(out, ref16(x, w)) <= TOL[torch.bfloat16]


# ----------------------------------------------------------------------------- the Gluon backend (sm_90)
#
# kernels/gluon/hopper_pingpong_batched.py through its launcher (whatever the table picks) and through
# the op with a "backend": "gluon" config. Every element of every entry is checked against float64
# (`check_every_element`), into NaN-poisoned outputs; small persistent grids give each CTA many work
# ids that cross batch entries, so the ring, the turn hand-offs and the batch coordinate all move.

from _util import assert_gluon_or_fallback, poisoned, randn, within_bound, within_every_element  # noqa: E402

GL_128 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
          "num_stages": 5}
GL_64 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 4, "num_warps": 4,
         "num_stages": 4}
GL_COOP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 4}  # the cooperative kernel (num_warps 8): EPI_SPLIT 2 (16-bit out), 4 (fp32 out)
GL_COOP_256 = {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
               "num_stages": 3}
GL_CFGS = {"128x128x64": GL_128, "64x256x64": GL_64, "coop128x256x64": GL_COOP, "coop256x128x64": GL_COOP_256}


def _hb():
    from gemmkit.kernels.gluon import hopper_pingpong_batched

    return hopper_pingpong_batched


def _target(cus=None):
    from gemmkit import arch

    t = arch.current()
    return t.with_cus(cus) if cus else t


def ref64(x, w, bias=None, act="none"):
    """float64 on the CPU, entry by entry (gemmkit.reference)."""
    B = x.shape[0]
    return torch.stack([gemm_a16w16_ref(x[b].cpu(), w[b].cpu(), None if bias is None else
                                        (bias if bias.dim() == 1 else bias[b]).cpu(), act) for b in range(B)])


def check_every_element(y, ref, k):
    """Each entry within the norm-wise and the per-element bound of its float64 reference (k: the dot products'
    length)."""
    for b in range(y.shape[0]):
        for ok, msg in (within_bound(y[b], ref[b], y.dtype), within_every_element(y[b], ref[b], y.dtype, k)):
            assert ok, f"entry {b}: {msg}"


def run_gluon(x, w, bias=None, act="none", out=None, out_dtype=None, cfg=GL_128, cus=None):
    y = out if out is not None else poisoned((x.shape[0], x.shape[1], w.shape[1]), out_dtype or x.dtype, DEV)
    _hb().launch(x, w, bias, y, act, cfg, _target(cus))
    torch.cuda.synchronize()
    return y


GL_SHAPES = [(3, 1, 264, 64), (2, 17, 1000, 520), (4, 129, 136, 72), (2, 1000, 1032, 776), (5, 64, 8, 16),
             (8, 512, 512, 512), (3, 333, 1000, 1000)]


@pytest.mark.parametrize("cfg", list(GL_CFGS))
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("B,M,N,K", GL_SHAPES, ids=[f"{b}x{m}x{n}x{k}" for b, m, n, k in GL_SHAPES])
def test_gluon_shapes(B, M, N, K, dtype, cfg):
    """M = 1, 17, 129, 1000 (edge tiles in every entry: TMA clips per entry), ragged K (776 = 12 x 64 + 8,
    K < BLOCK_K), N < BLOCK_N, and the issue's 8 x 512^3; bias per entry."""
    x, w = randn(B, M, K, dtype=dtype, device=DEV), randn(B, N, K, dtype=dtype, device=DEV)
    bias = randn(B, N, dtype=dtype, device=DEV)
    check_every_element(run_gluon(x, w, bias, cfg=GL_CFGS[cfg]), ref64(x, w, bias), x.shape[-1])


EPILOGUES = [(torch.bfloat16, a) for a in ("none", "relu", "gelu", "gelu_tanh", "silu")] + \
    [(torch.float16, "silu"), (torch.float32, "gelu")]


@pytest.mark.parametrize("cfg", ["128x128x64", "coop128x256x64"])
@pytest.mark.parametrize("out_dtype,act", EPILOGUES, ids=[f"{str(d)[6:]}-{a}" for d, a in EPILOGUES])
@pytest.mark.parametrize("bias_form", ["none", "shared", "per_entry", "per_entry_padded"])
def test_gluon_bias_activation_out_dtype(bias_form, out_dtype, act, cfg):
    """(cooperative, fp32 out: the output goes out in 4 column sub-tiles per consumer, 2 for 16-bit.)"""
    B, M, N, K = 3, 200, 264, 136
    x, w = randn(B, M, K, dtype=torch.bfloat16, device=DEV), randn(B, N, K, dtype=torch.bfloat16, device=DEV) / 8
    bias = {"none": None, "shared": randn(N, dtype=torch.bfloat16, device=DEV),
            "per_entry": randn(B, N, dtype=torch.bfloat16, device=DEV),
            "per_entry_padded": randn(B, N + 24, dtype=torch.bfloat16, device=DEV)[:, 8:N + 8]}[bias_form]
    y = run_gluon(x, w, bias, act, out_dtype=out_dtype, cfg=GL_CFGS[cfg])
    assert y.dtype == out_dtype
    check_every_element(y, ref64(x, w, bias, act), x.shape[-1])


@pytest.mark.parametrize("cfg", ["128x128x64", "coop128x256x64"])
@pytest.mark.parametrize("layout", ["x_padded_batch", "x_padded_rows", "w_padded_batch", "y_padded", "batch_of_one"])
def test_gluon_batch_strides(layout, cfg):
    """Batch and row strides TMA takes (multiples of 16 bytes, entries apart): the kernel reads and writes in place."""
    B, M, N, K = 4, 100, 136, 200
    x, w = randn(B, M, K, dtype=torch.bfloat16, device=DEV), randn(B, N, K, dtype=torch.bfloat16, device=DEV)
    out = base = None
    if layout == "x_padded_batch":
        x = randn(B, M + 5, K, dtype=torch.bfloat16, device=DEV)[:, 3:M + 3]
    elif layout == "x_padded_rows":
        x = randn(B, M, K + 40, dtype=torch.bfloat16, device=DEV)[:, :, 16:K + 16]
    elif layout == "w_padded_batch":
        w = randn(B, N + 3, K, dtype=torch.bfloat16, device=DEV)[:, :N]
    elif layout == "y_padded":
        base = poisoned((B, M + 1, N + 8), torch.bfloat16, DEV)
        out = base[:, 1:, :N]
    else:
        x, w = x[2:3], w[1:2]
    assert _hb().unsupported(x, w, out if out is not None else torch.empty(x.shape[0], M, N, device=DEV,
                                                                             dtype=torch.bfloat16)) is None
    check_every_element(run_gluon(x, w, out=out, cfg=GL_CFGS[cfg]), ref64(x, w), x.shape[-1])
    if base is not None:
        assert torch.isnan(base[:, 0]).all() and torch.isnan(base[:, 1:, N:]).all(), "wrote outside y"


@pytest.mark.parametrize("cus", [1, 2, 3, 7])
@pytest.mark.parametrize("cfg", list(GL_CFGS))
def test_gluon_small_persistent_grids(cus, cfg):
    """Many work ids per CTA, crossing entries: 5 x (2 x 3) tiles of 128 x 128 = 30 ids on 1-7 CTAs, bias + gelu."""
    B, M, N, K = 5, 2 * 128 - 3, 3 * 128 + 8, 200
    x, w = randn(B, M, K, dtype=torch.float16, device=DEV), randn(B, N, K, dtype=torch.float16, device=DEV) / 4
    bias = randn(B, N, dtype=torch.float16, device=DEV)
    y = run_gluon(x, w, bias, "gelu", cfg=GL_CFGS[cfg], cus=cus)
    check_every_element(y, ref64(x, w, bias, "gelu"), x.shape[-1])


@pytest.mark.parametrize("cfg", ["128x128x64", "coop128x256x64"])
def test_gluon_entries_equal_the_dense_kernel_bitwise(cfg):
    """Each entry of the batched kernel is the dense kernel's result on that entry (hopper_pingpong, or
    hopper_coop for num_warps 8), bit for bit (same partitions, same K order), for any grid; and the
    kernel is deterministic run to run."""
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong as hp

    dense = hopper_coop if hp.is_coop(GL_CFGS[cfg]) else hp
    B, M, N, K = 6, 300, 520, 1000
    x, w = randn(B, M, K, dtype=torch.bfloat16, device=DEV), randn(B, N, K, dtype=torch.bfloat16, device=DEV)
    bias = randn(B, N, dtype=torch.bfloat16, device=DEV)
    y = run_gluon(x, w, bias, "silu", cfg=GL_CFGS[cfg])
    for b in range(B):
        yb = poisoned((M, N), torch.bfloat16, DEV)
        dense.launch(x[b], w[b], bias[b], yb, "silu", GL_CFGS[cfg], _target())
        torch.cuda.synchronize()
        assert torch.equal(y[b], yb), f"entry {b} differs from the dense kernel"
    for cus in (None, 5, 1):
        assert torch.equal(run_gluon(x, w, bias, "silu", cfg=GL_CFGS[cfg], cus=cus), y)


@pytest.mark.parametrize("cfg", ["128x128x64", "coop128x256x64"])
@pytest.mark.parametrize("B,M,N,K", [(8, 1024, 1024, 1024), (64, 17, 1000, 520), (200, 1, 264, 64)], ids=str)
def test_op_backend_gluon(B, M, N, K, cfg, launches):
    """batched_gemm_a16w16 with a "backend": "gluon" config runs the Gluon kernel of its layout (one launch)
    and is right (more than one wave of tiles for 132 SMs at both tile sizes); on a Triton release whose budget
    passes the kernel over for bias + gelu (kernels/_budgets.py), the Triton tier with the same config."""
    import gemmkit

    kernel = _hb().kernel_name(GL_CFGS[cfg])
    x, w = randn(B, M, K, dtype=torch.bfloat16, device=DEV), randn(B, N, K, dtype=torch.bfloat16, device=DEV)
    bias = randn(N, dtype=torch.bfloat16, device=DEV)
    before = dict(launches)
    y = gemmkit.batched_gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((B, M, N), torch.bfloat16, DEV),
                                    config={**GL_CFGS[cfg], "backend": "gluon", "tma": True, "persistent": True})
    torch.cuda.synchronize()
    assert_gluon_or_fallback(launches, before, kernel, GL_CFGS[cfg], True, "gelu")
    check_every_element(y, ref64(x, w, bias, "gelu"), x.shape[-1])


@pytest.mark.parametrize("layout", ["w_stride0", "x_interleaved", "k_unaligned", "one_wave"])
def test_op_backend_gluon_falls_back_to_triton(layout, launches):
    """What 3-D TMA cannot read (a shared weight of batch stride 0, a batch dim inside the rows, K % 8 != 0)
    runs the same config on the Triton tier (its pointer kernel: the Triton TMA path has the same rule),
    correct, one launch; so does one wave of tiles (on the Triton TMA kernel)."""
    import gemmkit

    kernel = "batched_gemm_kernel"
    B, M, N, K = 64, 130, 264, 136  # 384 tiles: more than one wave
    if layout == "one_wave":  # 21 x 2 x 3 = 126 tiles <= 132 SMs: the Triton TMA kernel, same tiles
        B, kernel = 21, "batched_gemm_tma_kernel"
    x, w = randn(B, M, K, dtype=torch.bfloat16, device=DEV), randn(B, N, K, dtype=torch.bfloat16, device=DEV)
    if layout == "one_wave":
        pass
    elif layout == "w_stride0":
        w = randn(1, N, K, dtype=torch.bfloat16, device=DEV).expand(B, N, K)
    elif layout == "x_interleaved":
        x = randn(M, B, K, dtype=torch.bfloat16, device=DEV).transpose(0, 1)
    elif layout == "k_unaligned":
        x, w = randn(B, M, 131, dtype=torch.bfloat16, device=DEV), randn(B, N, 131, dtype=torch.bfloat16, device=DEV)
    bias = randn(B, N, dtype=torch.bfloat16, device=DEV)
    before = dict(launches)
    y = gemmkit.batched_gemm_a16w16(x, w, bias, out=poisoned((B, M, N), torch.bfloat16, DEV),
                                    config={**GL_128, "backend": "gluon", "tma": True, "persistent": True})
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_batched_kernel"] == before.get("hopper_pingpong_batched_kernel", 0)
    assert launches[kernel] == before.get(kernel, 0) + 1
    check_every_element(y, ref64(x, w, bias), x.shape[-1])


def test_gluon_unsupported_inputs_raise():
    hb, t = _hb(), _target()
    x = torch.randn(2, 64, 100, device=DEV, dtype=torch.bfloat16)  # K % 8 != 0: row stride not 16-byte aligned
    with pytest.raises(ValueError, match="3-D TMA"):
        hb.launch(x, x, None, torch.empty(2, 64, 64, device=DEV, dtype=torch.bfloat16), "none", GL_128, t)
    x = torch.randn(2, 64, 64, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="bias"):
        hb.launch(x, x, torch.randn(3, 64, device=DEV, dtype=torch.bfloat16),
                  torch.empty(2, 64, 64, device=DEV, dtype=torch.bfloat16), "none", GL_128, t)
    with pytest.raises(ValueError, match="BLOCK_SIZE_M"):
        hb.launch(x, x, None, torch.empty(2, 64, 64, device=DEV, dtype=torch.bfloat16), "none",
                  {**GL_128, "BLOCK_SIZE_M": 256}, t)


def test_gluon_cuda_graph(launches):
    import gemmkit

    B, M, N, K = 16, 512, 512, 512
    cfg = {**GL_128, "backend": "gluon", "tma": True, "persistent": True}
    x, w = torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16), torch.randn(B, N, K, device=DEV,
                                                                               dtype=torch.bfloat16)
    out = torch.empty(B, M, N, device=DEV, dtype=torch.bfloat16)
    gemmkit.batched_gemm_a16w16(x, w, out=out, config=cfg)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.batched_gemm_a16w16(x, w, out=out, config=cfg)
    out.fill_(float("nan"))
    x.copy_(torch.randn(B, M, K, device=DEV, dtype=torch.bfloat16))
    before = launches["hopper_pingpong_batched_kernel"]
    g.replay()
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_batched_kernel"] == before  # counted at capture, not per replay
    check_every_element(out, ref64(x, w), x.shape[-1])
