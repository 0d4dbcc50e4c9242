"""gemm_a16w16_gated and ffn_gated in the Triton interpreter, against float64.

Convention under test: w_gate_up (2I, K) holds the I gate rows first, then the I up rows;
h = act(x @ w_gate_up[:I].T) * (x @ w_gate_up[I:].T); ffn_gated's y = h @ w_down.T with
w_down (K, I) and h held in x's dtype between the GEMMs (the reference rounds it the same way).
bf16 inputs are exact in float64 and the kernels accumulate in fp32, so the error is the final
rounding: the bounds of tests/_util.py apply.
"""
import itertools

import pytest
import torch

import gemmkit
from gemmkit.reference import activation_ref

from _util import TOL, _norm_within, check_gated, poisoned, randn, within_bound

pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16
SMALL = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2}


def gated_ref(x, w_gate_up, activation="silu"):
    """float64 act(x Wg.T) * (x Wu.T), Wg = first half of the rows, shape (..., I)."""
    I = w_gate_up.shape[0] // 2
    x64 = x.detach().to("cpu", torch.float64).reshape(-1, x.shape[-1])
    w64 = w_gate_up.detach().to("cpu", torch.float64)
    h = activation_ref(x64 @ w64[:I].T, activation) * (x64 @ w64[I:].T)
    return h.reshape(tuple(x.shape[:-1]) + (I,))


def ffn_ref(x, w_gate_up, w_down, activation="silu"):
    """float64 y = h @ w_down.T with h rounded to x's dtype, as ffn_gated holds it."""
    h = gated_ref(x, w_gate_up, activation).to(x.dtype).to(torch.float64)
    return h @ w_down.detach().to("cpu", torch.float64).T


def within_ffn_bound(y, x, w_gate_up, w_down, activation, out_dtype):
    """`within_bound` of y against `ffn_ref`, where h's rounding may go either way: the kernel rounds its fp32 h, not
    the exact one, so an h element within a few fp32 ulps of a rounding midpoint of x's dtype may land on either
    neighbour (y then moves by one ulp of it times its column of w_down: 2^-9 relative, far past an fp32 y's bound).
    Each such element is tried both ways (the reference nearest y is the one checked); all others as `ffn_ref`."""
    import itertools

    g = gated_ref(x, w_gate_up, activation).reshape(-1, w_down.shape[1])
    ulp = torch.exp2(torch.floor(torch.log2(g.abs().clamp_min(1e-300)))) * torch.finfo(x.dtype).eps
    frac = torch.frac(g.abs() / ulp)
    near = ((frac - 0.5).abs() < 2.0 ** -10).nonzero().tolist()  # ~2^-18 relative: >> an fp32 sum's error
    assert len(near) <= 10, f"{len(near)} h elements at rounding midpoints: too many to try both ways"
    h = g.to(x.dtype).to(torch.float64)
    wd = w_down.detach().to("cpu", torch.float64)
    o = y.detach().to("cpu", torch.float64).reshape(h.shape[0], -1)
    best = None
    for signs in itertools.product((-1, 1), repeat=len(near)):
        hc = h.clone()
        for (m, i), sgn in zip(near, signs):  # the neighbour below / above the exact value, in magnitude
            hc[m, i] = torch.sign(g[m, i]) * (torch.floor(g[m, i].abs() / ulp[m, i]) + (sgn > 0)) * ulp[m, i]
        r = hc @ wd.T
        d = (o - r).norm().item()
        best = (d, r) if best is None or d < best[0] else best
    return _norm_within(o, best[1], out_dtype, TOL[out_dtype])


def weights(I, K, dtype=BF16):
    return randn(2 * I, K, dtype=dtype), randn(K, I, dtype=dtype)


def test_gate_rows_first_convention():
    """Gate = the first I rows: swapping the halves changes the result; the op equals
    act(x @ gate.T) * (x @ up.T) built from two separate nn.Linear-style weights."""
    M, I, K = 5, 16, 64
    x, gate, up = randn(M, K, dtype=BF16), randn(I, K, dtype=BF16), randn(I, K, dtype=BF16)
    h = gemmkit.gemm_a16w16_gated(x, torch.cat([gate, up]), out_dtype=torch.float32)
    x64 = x.double()
    ref = torch.nn.functional.silu(x64 @ gate.double().T) * (x64 @ up.double().T)
    ok, msg = within_bound(h, ref, torch.float32)
    assert ok, msg
    swapped = torch.nn.functional.silu(x64 @ up.double().T) * (x64 @ gate.double().T)
    assert not within_bound(h, swapped, torch.float32)[0]


SHAPES = [(1, 1, 16), (1, 40, 96), (17, 24, 40), (17, 40, 96), (64, 33, 64), (33, 64, 200)]


@pytest.mark.parametrize("M,I,K", SHAPES, ids=[f"{m}x{i}x{k}" for m, i, k in SHAPES])
def test_gated_shapes(M, I, K, launches):
    x, (w, _) = randn(M, K, dtype=BF16), weights(I, K)
    out = poisoned((M, I), BF16)
    before = sum(launches.values())
    h = gemmkit.gemm_a16w16_gated(x, w, out=out)
    assert h is out and sum(launches.values()) > before, "no Triton kernel ran"
    check_gated(h, x, w)


@pytest.mark.parametrize("activation,out_dtype", list(itertools.product(
    ["silu", "gelu", "gelu_tanh", "relu"], [BF16, torch.float16, torch.float32])), ids=str)
def test_gated_activations_and_out_dtypes(activation, out_dtype):
    M, I, K = 9, 24, 48
    x, (w, _) = randn(M, K, dtype=BF16) * 2, weights(I, K)
    h = gemmkit.gemm_a16w16_gated(x, w, activation=activation, out_dtype=out_dtype)
    assert h.dtype == out_dtype
    check_gated(h, x, w, activation)


PATHS = {
    "pointer": (dict(SMALL), "gemm_gated_kernel"),
    "pointer_ktail": (dict(SMALL, BLOCK_SIZE_K=64), "gemm_gated_kernel"),  # K = 200: masked tail
    "persistent": (dict(SMALL, persistent=True), "gemm_gated_kernel"),
    "tma": (dict(SMALL, tma=True), "gemm_gated_tma_kernel"),
    "splitk_pointer": (dict(SMALL, NUM_KSPLIT=3), "gated_splitk_reduce_kernel"),
    "splitk_tma": (dict(SMALL, NUM_KSPLIT=4, tma=True), "gated_splitk_reduce_kernel"),
}


@pytest.mark.parametrize("path", list(PATHS))
def test_gated_paths(path, launches):
    """Every kernel path, on ragged M and I edges (wrapped loads, masked / clipped stores)."""
    cfg, kernel = PATHS[path]
    M, I, K = 37, 40, 200 if path == "pointer_ktail" else 192
    x, (w, _) = randn(M, K, dtype=BF16), weights(I, K)
    out = poisoned((M, I), torch.float32)
    before = launches[kernel]
    gemmkit.gemm_a16w16_gated(x, w, out=out, config=cfg)
    assert launches[kernel] == before + 1
    check_gated(out, x, w)


@pytest.mark.parametrize("M,K,split", [(37, 203, 1), (17, 1001, 1), (37, 203, 3)], ids=str)
def test_gated_unaligned_k_runs_the_tma_kernel_on_copies(M, K, split, launches):
    """K % 8 != 0 (rows off TMA's 16-byte rule): x and w copied to rows of 16-byte multiples, zeros after K
    (dispatch `pad_k`), and the TMA kernel on the copies, not the pointer kernel; split-K too."""
    I = 40
    x, (w, _) = randn(M, K, dtype=BF16), weights(I, K)
    cfg = dict(SMALL, tma=True, NUM_KSPLIT=split)
    before = dict(launches)
    out = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x, w, out=out, config=cfg)
    ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert ran.get("gemm_gated_tma_kernel") == 1 and ran.get("pad_rows_kernel") == 2, ran
    assert "gemm_gated_kernel" not in ran, ran
    check_gated(out, x, w)
    from gemmkit import callplan

    replays = callplan.STATS["replays"]
    x2 = randn(M, K, dtype=BF16)  # the same signature again: its call plan replays the copies, right too
    out2 = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x2, w, out=out2, config=cfg)
    assert callplan.STATS["replays"] == replays + 1
    check_gated(out2, x2, w)
    # and through ffn_gated (its first GEMM), against float64
    _, wd = weights(I, K)
    y = gemmkit.ffn_gated(x, w, wd, config=(cfg, None))
    ok, msg = within_bound(y, ffn_ref(x, w, wd), BF16)
    assert ok, msg


def test_gated_x_rows_off_copies_x_alone(launches):
    """x sliced from a wider tensor (rows off 16 bytes), K % 8 == 0, w as the model holds it: x alone is copied
    (`pad_k` without w: a weight's copy would be a pass over it every call), the TMA kernel runs, and is right."""
    M, I, K = 37, 40, 192
    x, (w, _) = randn(M, K + 3, dtype=BF16)[:, :K], weights(I, K)
    before = dict(launches)
    out = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x, w, out=out, config=dict(SMALL, tma=True))
    ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert ran == {"pad_rows_kernel": 1, "gemm_gated_tma_kernel": 1}, ran
    check_gated(out, x, w)


def test_gated_fp32_h_keeps_the_tma_kernel():
    """An fp32 h doubles the TMA kernel's output staging tile: the tables' rings (64 x 128 at 5 stages, 128 x 128 at
    4) no longer fit sm_90's shared memory, so the dispatch shortens the ring rather than fall to the pointer kernel."""
    from gemmkit import arch, configs
    from gemmkit.kernels.triton import gated as TG
    from gemmkit.ops import dispatch as D

    H200 = arch.get("sm_90")
    for M in (200, 1000):
        I, K = 4096, 4096
        cfg, _ = configs.serve("a16w16_gated", H200, M, I, K)
        x, w = (torch.empty((n, K), dtype=BF16, device="meta") for n in (M, 2 * I))
        y = torch.empty((M, I), dtype=torch.float32, device="meta")
        choice = D.gated(cfg, H200, x, w, y, activation="silu")
        assert choice.kernel == "gemm_gated_tma_kernel", choice.explain()
        assert choice.config["num_stages"] < cfg["num_stages"]
        assert TG.smem_bytes(choice.config, H200, 2, 4, True) <= H200.shared_mem_bytes
        h16 = torch.empty((M, I), dtype=BF16, device="meta")  # a 16-bit h keeps the table's ring
        assert D.gated(cfg, H200, x, w, h16, activation="silu").config == cfg


@pytest.mark.parametrize("M,K", [(1, 4095), (16, 1001), (3, 203)], ids=str)
def test_gated_unaligned_k_at_few_tokens_reads_w_where_it_lies(M, K, launches):
    """K % 8 != 0 at M <= 16 where gemm_rows_tma declines (M = 1; w of 80 rows, small beside x's eight copies):
    gemm_rows_kernel reads w where it lies into fp32 [g | u] partials (split along K or not) and the gated reduce
    applies the activation: no copy of w, no pointer kernel; and right, through ffn_gated too."""
    I = 40
    x, (w, wd) = randn(M, K, dtype=BF16), weights(I, K)
    cfg = dict(SMALL, tma=True)
    before = dict(launches)
    out = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x, w, out=out, config=cfg)
    ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert ran == {"gemm_rows_kernel": 1, "gated_splitk_reduce_kernel": 1}, ran
    check_gated(out, x, w)
    from gemmkit import arch
    from gemmkit.kernels.triton import gemm_rows
    from gemmkit.ops import dispatch as D

    # what `gemmkit configs` says runs: the rows kernel on its own tile, then the gated reduce (split or not)
    H200 = arch.get("sm_90")
    meta = [torch.empty(t.shape, dtype=t.dtype, device="meta") for t in (x, w, out)]
    explain = D.gated(cfg, H200, *meta, activation="silu").explain()
    t = gemm_rows.tile(M, 2 * I, K, 2, H200.num_cus)
    assert "gated split-K reduce" in explain and f"{t['BLOCK_M']} x {t['BLOCK_N']} x {t['BLOCK_K']}" in explain, explain
    from gemmkit import callplan

    replays = callplan.STATS["replays"]
    x2 = randn(M, K, dtype=BF16)  # the same signature again: its call plan's replay (fresh partials), right too
    out2 = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x2, w, out=out2, config=cfg)
    assert callplan.STATS["replays"] == replays + 1
    check_gated(out2, x2, w)
    y = gemmkit.ffn_gated(x, w, wd, config=(cfg, None))
    ok, msg = within_bound(y, ffn_ref(x, w, wd), BF16)
    assert ok, msg


@pytest.mark.parametrize("M,I,K", [(17, 1024, 201), (64, 2048, 1031), (100, 4096, 203), (24, 1028, 203),
                                   (4, 1024, 201), (3, 1028, 203)], ids=str)
def test_gated_unaligned_k_reads_w_by_tma(M, I, K, launches, monkeypatch):
    """K % 8 != 0 from M = 2 (dispatch.ROWS_TMA_MIN_M): w read where it lies by TMA (gemm_rows_tma) into fp32
    [g | u] partials (x's shifted copies; the swapped tile unsplit and split along K, the unswapped one), class-major
    and summed into act(g) * u by its rows_reduce_kernel where I is whole octets, else in y's order and the gated
    reduce (I = 1028): no copy of w. I wide enough that x's eight copies pass the dispatch's share; at the small K
    the interpreter affords, with the dispatch's K floors (a speed rule, ROWS_TMA_MIN_K*) lowered."""
    from gemmkit.ops import dispatch as D

    monkeypatch.setattr(D, "ROWS_TMA_MIN_K", 0)
    monkeypatch.setattr(D, "ROWS_TMA_MIN_K_UNSWAPPED", 0)
    x, (w, wd) = randn(M, K, dtype=BF16), weights(I, K)
    cfg = dict(SMALL, tma=True)
    before = dict(launches)
    out = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x, w, out=out, config=cfg)
    ran = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    reduce = "rows_reduce_kernel" if I % 8 == 0 else "gated_splitk_reduce_kernel"
    assert ran == {"shift_rows_kernel": 1, "gemm_rows_tma_kernel": 1, reduce: 1}, ran
    check_gated(out, x, w)
    from gemmkit import arch

    meta = [torch.empty(t.shape, dtype=t.dtype, device="meta") for t in (x, w, out)]
    explain = D.gated(cfg, arch.get("sm_90"), *meta, activation="silu").explain()  # what `gemmkit configs` says
    assert ("rows_reduce_kernel, which applies the activation" if I % 8 == 0 else "gated split-K reduce") in explain, \
        explain
    from gemmkit import callplan

    replays = callplan.STATS["replays"]
    x2 = randn(M, K, dtype=BF16)  # the same signature again: its call plan's replay (fresh partials), right too
    out2 = poisoned((M, I), torch.float32)
    gemmkit.gemm_a16w16_gated(x2, w, out=out2, config=cfg)
    assert callplan.STATS["replays"] == replays + 1
    check_gated(out2, x2, w)
    if M == 17:  # and through ffn_gated (its first GEMM), against float64
        y = gemmkit.ffn_gated(x, w, wd, config=(cfg, None))
        ok, msg = within_bound(y, ffn_ref(x, w, wd), BF16)
        assert ok, msg


def test_gated_splitk_is_reproducible():
    M, I, K = 3, 32, 512
    x, (w, _) = randn(M, K, dtype=BF16), weights(I, K)
    cfg = dict(SMALL, NUM_KSPLIT=4)
    a = gemmkit.gemm_a16w16_gated(x, w, config=cfg, out_dtype=torch.float32)
    assert torch.equal(a, gemmkit.gemm_a16w16_gated(x, w, config=cfg, out_dtype=torch.float32))


@pytest.mark.parametrize("layout", ["x_col_major", "w_transposed", "x_k_strided", "out_strided"])
def test_gated_strided(layout):
    M, I, K = 19, 24, 64
    x, (w, _) = randn(M, K, dtype=BF16), weights(I, K)
    out = None
    if layout == "x_col_major":
        x = randn(K, M, dtype=BF16).t()
    elif layout == "w_transposed":
        w = randn(K, 2 * I, dtype=BF16).t()
    elif layout == "x_k_strided":
        x = randn(M, 2 * K, dtype=BF16)[:, ::2]
    else:
        out = poisoned((M, 2 * I), torch.float32)[:, :I]  # row stride 2I
    h = gemmkit.gemm_a16w16_gated(x, w, out_dtype=torch.float32, out=out)
    check_gated(h, x, w)


# ----------------------------------------------------------------------------- ffn_gated

FFN_SHAPES = [(1, 40, 96), (17, 24, 40), (33, 64, 64)]


@pytest.mark.parametrize("M,I,K", FFN_SHAPES, ids=[f"{m}x{i}x{k}" for m, i, k in FFN_SHAPES])
def test_ffn_shapes(M, I, K, launches):
    x, (w, wd) = randn(M, K, dtype=BF16), weights(I, K)
    out = poisoned((M, K), BF16)
    before = sum(launches.values())
    y = gemmkit.ffn_gated(x, w, wd, out=out)
    assert y is out and sum(launches.values()) >= before + 2, "expected the gated and the down kernels"
    ok, msg = within_bound(y, ffn_ref(x, w, wd), BF16)
    assert ok, msg


def test_ffn_batched_x_activation_out_dtype_and_config_pair(launches):
    """3-D x (flattened like nn.Linear), gelu, fp32 y, a (gate_up, down) config pair with split-K in both."""
    B, S, I, K = 2, 5, 24, 128
    x, (w, wd) = randn(B, S, K, dtype=BF16), weights(I, K)
    before = (launches["gated_splitk_reduce_kernel"], launches["splitk_reduce_kernel"])
    y = gemmkit.ffn_gated(x, w, wd, activation="gelu", out_dtype=torch.float32,
                          config=(dict(SMALL, NUM_KSPLIT=2), dict(SMALL, NUM_KSPLIT=2)))
    assert y.shape == (B, S, K) and y.dtype == torch.float32
    assert (launches["gated_splitk_reduce_kernel"], launches["splitk_reduce_kernel"]) == (before[0] + 1, before[1] + 1)
    ok, msg = within_ffn_bound(y, x, w, wd, "gelu", torch.float32)
    assert ok, msg


def test_ffn_fp16_strided_weights():
    M, I, K = 7, 40, 64
    x = randn(M, K, dtype=torch.float16)
    w = randn(K, 2 * I, dtype=torch.float16).t()  # column-major w_gate_up
    wd = randn(I, K, dtype=torch.float16).t()  # column-major w_down
    y = gemmkit.ffn_gated(x, w, wd, config=dict(SMALL, tma=True))  # TMA asked for, pointer taken (strides)
    ok, msg = within_bound(y, ffn_ref(x, w, wd), torch.float16)
    assert ok, msg


def test_empty_dims():
    x = randn(0, 32, dtype=BF16)
    w, wd = weights(8, 32)
    assert gemmkit.gemm_a16w16_gated(x, w).shape == (0, 8)
    assert gemmkit.ffn_gated(x, w, wd).shape == (0, 32)
    x = randn(3, 32, dtype=BF16)
    assert torch.equal(gemmkit.ffn_gated(x, randn(0, 32, dtype=BF16), randn(32, 0, dtype=BF16)),
                       torch.zeros(3, 32, dtype=BF16))  # I == 0: empty sums
    h = gemmkit.gemm_a16w16_gated(randn(3, 0, dtype=BF16), randn(16, 0, dtype=BF16))
    assert torch.equal(h, torch.zeros(3, 8, dtype=BF16))  # K == 0: act(0) * 0
    assert gemmkit.ffn_gated(randn(3, 0, dtype=BF16), randn(16, 0, dtype=BF16), randn(0, 8, dtype=BF16)).shape == (3, 0)


# ----------------------------------------------------------------------------- validation

@pytest.mark.parametrize("case,exc,match", [
    ("x_dtype", TypeError, r"^x: expected dtype torch.bfloat16 or torch.float16, got torch.float32"),
    ("w_dtype", TypeError, r"^w_gate_up: expected dtype torch.bfloat16 \(the dtype of x\), got torch.float16"),
    ("w_1d", ValueError, r"^w_gate_up: expected a 2-D tensor"),
    ("w_odd_rows", ValueError, r"^w_gate_up: expected shape \(2\*I, 64\) \(gate rows then up rows"),
    ("w_k", ValueError, r"^w_gate_up: expected shape \(2\*I, 64\)"),
    ("wd_shape", ValueError, r"^w_down: expected shape \(64, 16\)"),
    ("wd_dtype", TypeError, r"^w_down: expected dtype torch.bfloat16"),
    ("activation", ValueError, r"^activation: expected one of \('silu', 'gelu', 'gelu_tanh', 'relu'\), got 'tanh'"),
    ("out_dtype", TypeError, r"^out_dtype: expected one of"),
    ("out_shape", ValueError, r"^out: expected shape \(8, 64\), got \(8, 16\)"),
    ("out_dtype_mismatch", TypeError, r"^out: expected dtype torch.float16 \(out_dtype\)"),
    ("config", ValueError, r"^config: expected None, a dict, or a pair"),
    ("config_key", ValueError, r"^config\[1\]: unknown key 'BLOCK_N'"),
    ("requires_grad", NotImplementedError, r"^w_down: requires grad"),
])
def test_ffn_errors(case, exc, match):
    x, (w, wd) = randn(8, 64, dtype=BF16), weights(16, 64)
    kw = {}
    if case == "x_dtype":
        x = x.float()
    elif case == "w_dtype":
        w = w.half()
    elif case == "w_1d":
        w = w[0]
    elif case == "w_odd_rows":
        w = w[:31]
    elif case == "w_k":
        w = randn(32, 48, dtype=BF16)
    elif case == "wd_shape":
        wd = wd.t()
    elif case == "wd_dtype":
        wd = wd.half()
    elif case == "activation":
        kw["activation"] = "tanh"
    elif case == "out_dtype":
        kw["out_dtype"] = torch.int8
    elif case == "out_shape":
        kw["out"] = torch.empty(8, 16, dtype=BF16)
    elif case == "out_dtype_mismatch":
        kw.update(out=torch.empty(8, 64, dtype=BF16), out_dtype=torch.float16)
    elif case == "config":
        kw["config"] = [SMALL]
    elif case == "config_key":
        kw["config"] = (None, {"BLOCK_N": 16})
    elif case == "requires_grad":
        wd = wd.clone().requires_grad_()
    with pytest.raises(exc, match=match):
        gemmkit.ffn_gated(x, w, wd, **kw)


@pytest.mark.parametrize("case,exc,match", [
    ("out_shape", ValueError, r"^out: expected shape \(8, 16\), got \(8, 32\)"),
    ("device", ValueError, r"^w_gate_up: expected a tensor on cpu"),
    ("tma_box", ValueError, r"^config: key 'BLOCK_SIZE_N' = 512 exceeds the TMA box limit"),
    ("smem", ValueError, r"^config: BLOCK_SIZE_M/N/K = 256/256/128 .* gated tile"),
])
def test_gated_errors(case, exc, match):
    x, (w, _) = randn(8, 64, dtype=BF16), weights(16, 64)
    kw = {}
    if case == "out_shape":
        kw["out"] = torch.empty(8, 32, dtype=BF16)
    elif case == "device":
        w = w.to("meta")
    elif case == "tma_box":
        from gemmkit import arch
        from gemmkit.ops.ffn import check_feasible

        with pytest.raises(exc, match=match):
            check_feasible(dict(SMALL, BLOCK_SIZE_N=512, tma=True), arch.get("sm_90"), tma=True)
        return
    else:
        kw["config"] = dict(SMALL, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=128, num_stages=4)
    with pytest.raises(exc, match=match):
        gemmkit.gemm_a16w16_gated(x, w, **kw)


# ----------------------------------------------------------------------------- torch integration

def test_opcheck_and_compile(launches):
    x, (w, wd) = randn(9, 64, dtype=BF16), weights(16, 64)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16_gated.default, (x, w, "silu", torch.float32, ""))
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16_gated_out.default,
                          (x, w, "gelu", "", torch.empty(9, 16, dtype=BF16)))
    torch.library.opcheck(torch.ops.gemmkit.ffn_gated.default, (x, w, wd, "silu", BF16, ""))
    torch.library.opcheck(torch.ops.gemmkit.ffn_gated_out.default, (x, w, wd, "relu", "", torch.empty(9, 64)))
    torch._dynamo.reset()

    def f(x, w, wd):
        return gemmkit.ffn_gated(x * 2, w, wd, out_dtype=torch.float32) + 1

    before = sum(launches.values())
    y = torch.compile(f, fullgraph=True, backend="aot_eager")(x, w, wd)
    assert sum(launches.values()) > before
    ok, msg = within_ffn_bound(y - 1, x * 2, w, wd, "silu", torch.float32)
    assert ok, msg


def test_gated_gluon_tile_runs_the_triton_tier_in_the_interpreter(monkeypatch, launches):
    """The config model's `gated_one_wave` (on a 4-SM target: 2 x 2 tiles of 128 x 128 of h fit one wave, 8 of the
    answer's 64 x 128 do not) serves the Gluon cooperative gated tile; the interpreter does not run Gluon, so the call
    runs the Triton tier's gated kernel with the same tile, and every element is right. A user's "backend": "gluon"
    config takes the same path, in both GEMMs of ffn_gated."""
    from gemmkit import configs
    from gemmkit.ops import _common as C
    from gemmkit.ops import dispatch as D

    monkeypatch.setenv("GEMMKIT_NUM_CUS", "4")
    M, I, K = 200, 256, 64
    cfg, source = configs.serve("a16w16_gated", C.target_for(torch.device("cpu")), M, I, K)
    assert cfg["backend"] == "gluon" and cfg["num_warps"] == 8 and "gated_one_wave" in source, source
    x, (w, wd) = randn(M, K, dtype=BF16), weights(I, K)
    choice = D.gated(cfg, C.target_for(x.device), x, w, torch.empty(M, I, dtype=BF16), activation="silu")
    assert choice.passed_over == ((D.GLUON_COOP, "the Triton interpreter does not run Gluon kernels"),), choice
    before = dict(launches)
    h = gemmkit.gemm_a16w16_gated(x, w)
    ran = {k for k, v in launches.items() if v != before.get(k, 0)}
    assert ran & {"gemm_gated_tma_kernel", "gemm_gated_kernel"} and not ran & {"hopper_coop_kernel"}, ran
    check_gated(h, x, w)
    x, w, wd = x[:8], randn(32, 64, dtype=BF16), randn(64, 16, dtype=BF16)
    y = gemmkit.ffn_gated(x, w, wd, config=(dict(SMALL, backend="gluon"), dict(SMALL, backend="gluon")))
    ok, msg = within_bound(y, ffn_ref(x, w, wd), BF16)
    assert ok, msg
