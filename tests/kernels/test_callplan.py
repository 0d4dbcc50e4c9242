"""Call plans (gemmkit/callplan.py) in the Triton interpreter: a signature's first call records its launches,
later calls of the signature replay them on their own tensors. Each test checks that a replay computes what
the full path computes (against the float64 reference, every element, into NaN-poisoned outputs), that new
signatures record new plans, and that what a plan must not skip (the out= overlap check, grad checks, raising
calls, unrepeatable torch work) is not skipped."""
import ast
import io
import json
import pathlib
import re
import tokenize

import pytest
import torch
from _util import TOL, poisoned, randn, within_bound

import gemmkit
from gemmkit import callplan as CP
from gemmkit import launcher
from gemmkit.ops.gemm_a16w16 import gemm_a16w16
from gemmkit.reference import gemm_a16w16_ref

pytestmark = pytest.mark.interpreter

BF16, FP16 = torch.bfloat16, torch.float16
M, N, K = 24, 40, 48

SPLITK_CFG = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 2, "num_warps": 4,
              "num_stages": 2, "NUM_KSPLIT": 3}
TMA_CFG = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
           "num_stages": 2, "tma": True}
CONFIGS = {
    "table": None,
    "splitk": SPLITK_CFG,  # a workspace the call allocates, and a second kernel (the reduce)
    "tma": TMA_CFG,  # TMA descriptors rebuilt over each call's tensors
    "tma_splitk": {**TMA_CFG, "NUM_KSPLIT": 2, "BLOCK_SIZE_K": 16},
    "persistent": {**TMA_CFG, "tma": False, "persistent": True},
}


@pytest.fixture(autouse=True)
def _fresh_plans():
    CP.clear()
    yield
    CP.clear()


def _plans_of(x, w, bias=None, out=None):
    """{key: plan} of the plans kept for calls with these tensors' signature (callplan.key's
    (op, signature, arguments), found by the signature: the op's name and how it spells its other
    arguments are its own business)."""
    sig = CP.signature(x, w, bias, out)
    return {k: v for k, v in CP._PLANS.items() if k[1] == sig and "a16w16" in k[0]}


def _plan_of(x, w, bias=None, out=None):
    """The one plan kept for this signature (None if none)."""
    plans = _plans_of(x, w, bias, out)
    assert len(plans) <= 1, list(plans)
    return next(iter(plans.values()), None)


def _added(snapshot):
    return {k: v for k, v in CP._PLANS.items() if k not in snapshot}


def _check(y, x, w, bias, act, out_dtype):
    """Norm-wise within bound of the float64 reference (no NaN left from the poison), and every element
    within its own bound: the rounding to out_dtype plus a small share of the element's magnitude scale."""
    ref = gemm_a16w16_ref(x, w, bias, act)
    assert y.shape == ref.shape and y.dtype == out_dtype
    ok, msg = within_bound(y, ref, out_dtype)
    assert ok, msg
    y64 = y.detach().to(torch.float64)
    x64 = x.detach().to(torch.float64).reshape(-1, x.shape[-1])
    scale = (x64.abs() @ w.detach().to(torch.float64).abs().T).reshape(ref.shape)
    if bias is not None:
        scale = scale + bias.detach().to(torch.float64).abs()
    elem_bound = 2 * TOL[out_dtype] * ref.abs() + 2.0**-12 * scale + 1e-30
    bad = (y64 - ref).abs() > elem_bound
    assert not bad.any(), f"{int(bad.sum())} elements out of bound, first at {bad.nonzero()[0].tolist()}"


def _delta(before):
    return {k: v - before.get(k, 0) for k, v in launcher.LAUNCHES.items() if v != before.get(k, 0)}


def _inputs(m=M, n=N, k=K, dtype=BF16, bias=True):
    return randn(m, k, dtype=dtype), randn(n, k, dtype=dtype), (randn(n, dtype=dtype) if bias else None)


# ----------------------------------------------------------------------------- 1. a repeated signature replays

@pytest.mark.parametrize("with_out", [True, False], ids=["out", "no_out"])
@pytest.mark.parametrize("cfg_name", list(CONFIGS))
def test_repeated_signature_replays(cfg_name, with_out):
    cfg = CONFIGS[cfg_name]
    act = "silu"
    deltas, results = [], []
    for call in range(3):
        x, w, b = _inputs()
        out = poisoned((M, N), BF16) if with_out else None
        stats = dict(CP.STATS)
        before = dict(launcher.LAUNCHES)
        y = gemm_a16w16(x, w, b, activation=act, out=out, config=cfg)
        deltas.append(_delta(before))
        if with_out:
            assert y is out
        _check(y, x, w, b, act, BF16)
        results.append(y.clone())
        plan = _plan_of(x, w, b, out)
        assert plan is not None and plan is not CP.UNREPEATABLE, f"call {call}: no plan under the call's key"
        if call == 0:
            assert CP.STATS["recorded"] == stats["recorded"] + 1 and CP.STATS["replays"] == stats["replays"]
        else:
            assert CP.STATS["replays"] == stats["replays"] + 1, f"call {call} did not replay"
            assert CP.STATS["recorded"] == stats["recorded"]
    assert deltas[0], "the recorded call launched no kernel"
    if cfg_name.endswith("splitk") or cfg_name == "splitk":
        assert deltas[0].get("splitk_reduce_kernel") == 1, deltas[0]
    if cfg_name.startswith("tma"):
        assert deltas[0].get("gemm_tma_kernel") == 1, deltas[0]
    assert deltas[1] == deltas[0] and deltas[2] == deltas[0], deltas
    assert len(CP._PLANS) == 1
    assert not torch.equal(results[0], results[1]), "a replay returned the recorded call's result"


def test_replay_launches_kernels_with_the_new_tensors(monkeypatch):
    """A replay really runs the recorded kernels on the new pointers: count the interpreter's launches."""
    x, w, b = _inputs()
    gemm_a16w16(x, w, b)
    plan = _plan_of(x, w, b)
    assert isinstance(plan, CP.CallPlan)
    calls = []
    kernel = plan.steps[0].kernel
    orig = type(kernel).__getitem__

    def spy(self, grid):
        run = orig(self, grid)

        def wrapped(*args, **kwargs):
            # tensors, and the tensors under TMA descriptors
            calls.append([getattr(a, "base", a) for a in args
                          if isinstance(getattr(a, "base", a), torch.Tensor)])
            return run(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(type(kernel), "__getitem__", spy)
    x2, w2, b2 = _inputs()
    y2 = gemm_a16w16(x2, w2, b2)
    assert len(calls) == len(plan.steps)
    ptrs = {t.untyped_storage().data_ptr() for t in calls[0]}
    for t in (x2, w2, b2, y2):
        assert t.untyped_storage().data_ptr() in ptrs
    for t in (x, w, b):
        assert t.untyped_storage().data_ptr() not in ptrs
    _check(y2, x2, w2, b2, None, BF16)


@pytest.mark.parametrize("layout", ["x_t", "w_t", "x_copied"])
def test_transposed_operands_replay(layout):
    """Operands transposed in memory: the TMA kernel's descriptors over their storage (x.t() / w.t() of the call's
    views) and the copy of a small transposed x are rebuilt from each call's own tensors on a replay, generic and
    generated: every call's every element right, calls 2 and 3 replays."""
    m = 5 if layout == "x_copied" else M  # (K, 5) storage: rows off 16 bytes, so x is copied
    results = []
    for call in range(3):
        x = randn(K, m, dtype=BF16).t() if layout != "w_t" else randn(m, K, dtype=BF16)
        w = randn(K, N, dtype=BF16).t() if layout == "w_t" else randn(N, K, dtype=BF16)
        stats, before = dict(CP.STATS), dict(launcher.LAUNCHES)
        y = gemm_a16w16(x, w, config=CONFIGS["tma"])
        assert _delta(before) == ({"pad_rows_kernel": 1, "gemm_tma_kernel": 1} if layout == "x_copied"
                                  else {"gemm_tma_kernel": 1})
        assert CP.STATS["replays"] == stats["replays"] + (call > 0), call
        _check(y, x, w, None, None, BF16)
        results.append(y.clone())
    assert not torch.equal(results[1], results[2])


# ----------------------------------------------------------------------------- 2. new signatures, new plans

def _variants():
    """(name, x, w, bias, kwargs) of calls that each differ from the base call in one part of the signature."""
    def base():
        return _inputs()
    out = []
    x, w, b = base()
    out.append(("base", x, w, b, {"activation": "gelu"}))
    x, w, b = _inputs(m=M + 1)
    out.append(("M", x, w, b, {"activation": "gelu"}))
    x, w, b = base()
    out.append(("x_transposed", randn(K, M, dtype=BF16).t(), w, b, {"activation": "gelu"}))
    x, w, b = _inputs(dtype=FP16)
    out.append(("fp16", x, w, b, {"activation": "gelu"}))
    x, w, _ = base()
    out.append(("no_bias", x, w, None, {"activation": "gelu"}))
    x, w, b = base()
    out.append(("relu", x, w, b, {"activation": "relu"}))
    x, w, b = base()
    out.append(("out", x, w, b, {"activation": "gelu", "out": poisoned((M, N), BF16)}))
    x, w, b = base()
    out.append(("out_dtype", x, w, b, {"activation": "gelu", "out_dtype": torch.float32}))
    x, w, b = base()
    out.append(("x_3d", randn(4, 6, K, dtype=BF16), w, b, {"activation": "gelu"}))
    x, w, b = base()
    out.append(("config", x, w, b, {"activation": "gelu", "config": SPLITK_CFG}))
    return out


def test_generated_replay_passes_what_the_generic_replay_passes(monkeypatch):
    """The straight-line replay a plan generates (CallPlan.source) hands each C launcher exactly the arguments the
    generic replay hands it through the launcher's cache: the same constants, the new call's tensors and views of
    them, its own fresh output and workspace, each TMA descriptor encoded once per address. Fake CUDA launchers
    (the installed Triton's descriptor wrapper: 3.6's layout, or 3.7+'s with the parameters as one list) stand for
    compiled kernels: nothing runs on a GPU here."""
    import types

    import triton.backends.nvidia.driver as nv
    from triton.tools.tensor_descriptor import TensorDescriptor

    encoded = []

    def fake_encode(d, meta, _=None):  # stands for cuTensorMapEncodeTiled (3.8+ passes a third argument)
        encoded.append((d.base.data_ptr(), meta["n"]))
        return [("map", d.base.data_ptr(), meta["n"]), *d.shape, *d.strides]

    monkeypatch.setattr(nv, "make_tensordesc_arg", fake_encode)
    runtime = types.SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    monkeypatch.setattr(launcher, "_runtime", lambda: (runtime, lambda: 0, lambda dev: f"stream{dev}", None))
    calls = []

    def fake_run(n_params, descriptors):
        signature = {i: ("tensordesc<bf16[8, 8]>" if i in descriptors else "i32") for i in range(n_params)}
        metas = [{"n": i} for i in sorted(descriptors)]

        class Run(nv.CudaLauncher):
            launch = staticmethod(nv.wrap_handle_tensordesc(lambda *a: calls.append(a), signature, metas))
            global_scratch_size = profile_scratch_size = 0
            launch_cooperative_grid, launch_pdl = False, True
            arg_annotations, kernel_signature = "annotations", "signature"  # read in 3.7+'s layout

            def __init__(self):
                pass

        run = Run()
        return (launcher._descriptor_caching(run), f"fn{n_params}", "meta", ("TAIL", 3.5), 0, run)

    def kernel(name):
        return types.SimpleNamespace(__name__=name)

    def desc(t):
        return TensorDescriptor(t, list(t.shape), list(t.stride()), [8, 8])

    x, w = randn(16, 32, dtype=BF16), randn(24, 32, dtype=BF16)
    y = torch.empty(16, 24, dtype=BF16)
    ws = torch.empty(2, 16, 24, dtype=torch.float32)  # a workspace the call allocated
    launches = [
        (kernel("k0"), (2, 3), [desc(x), 5, w, desc(w), y[:, 8:], 2.5, None, ws], {}, fake_run(8, {0, 3})),
        (kernel("k1"), (4,), [ws, desc(y), 16], {}, fake_run(3, {1})),
    ]
    guard = types.SimpleNamespace(foreign=None, allocations=[ws])
    plan = CP._build(launches, guard, (x, w, y), 1, {"k0": 1, "k1": 1})
    assert plan.fast is None
    first = plan.replay((x, w))  # the first replay: generic, then generates the straight-line one
    assert plan.fast is not None, "the fake launchers have a layout launcher.py knows"
    assert "TAIL" not in plan.source and "_raw0(2, 3, 1, stream0" in plan.source

    x2, w2 = randn(16, 32, dtype=BF16), randn(24, 32, dtype=BF16)
    alive = [first]  # every output (the first replay's too) stays allocated: no new one reuses a cached address

    def replay(fast):
        saved = plan.fast
        plan.fast = plan.fast if fast else None
        del calls[:]
        try:
            (y2,) = plan.replay((x2, w2))
        finally:
            plan.fast = saved
        alive.append(y2)
        return y2, list(calls)

    def canon(args, y2, ws):
        """A pointer parameter by the storage it points into (input / output / workspace) and its byte offset there:
        a tensor (the generic replay passes views) or an int address (the generated one passes a view's address,
        which the C launchers take alike; shapes and strides are the kernel's other parameters)."""
        storages = {"x": x2, "w": w2, "y": y2, "ws": ws}
        out = []
        for a in args:
            ptr = a.data_ptr() if isinstance(a, torch.Tensor) else a if type(a) is int and a > 1 << 16 else None
            if ptr is not None:
                hit = [(n, ptr - t.untyped_storage().data_ptr()) for n, t in storages.items()
                       if 0 <= ptr - t.untyped_storage().data_ptr() < t.untyped_storage().nbytes()]
                out.append(("ptr", *(hit[0] if hit else ("?", ptr))))
            elif isinstance(a, tuple) and a[:1] == ("map",):
                out.append(("map", {x2.data_ptr(): "x", w2.data_ptr(): "w", y2.data_ptr(): "y"}.get(a[1]), a[2]))
            else:
                out.append(a)
        return out

    packed = "_BASE_ARGS_FORMAT_LEN" not in vars(nv)  # Triton 3.7+: launcher.py's "packed" layout

    def split(call):
        """(the arguments before the kernel's parameters, the parameters) of one C-launcher call."""
        return (list(call[:15]), list(call[15])) if packed else (list(call[:13]), list(call[13:]))

    results = {}
    for fast in (True, False):
        y2, got = replay(fast)
        assert y2.shape == y.shape and y2.dtype == y.dtype and y2.is_contiguous()
        ws2 = split(got[1])[1][0]  # k1's first argument: the workspace (a fresh tensor in both replays)
        results[fast] = [(head, canon(params, y2, ws2)) for head, params in map(split, got)]
        view = split(got[0])[1][results[fast][0][1].index(("ptr", "y", 16))]  # k0's y[:, 8:]
        if not fast:  # the generic replay's view of the output: the recorded one's shape, strides and offset
            assert (tuple(view.shape), view.stride(), view.storage_offset()) == ((16, 16), (24, 1), 8)
        else:  # the generated replay passes that view as its address, an int
            assert type(view) is int
    assert results[True] == results[False]
    (h0, k0), (_h1, k1) = results[True]
    assert h0 == ([2, 3, 1, "stream0", "fn8", False, True, "meta", None, None, None, None, None, "annotations",
                   "signature"] if packed else [2, 3, 1, "stream0", "fn8", False, True, None, None, "meta", None, None,
                                                None])
    assert k0[0] == ("map", "x", 0) and k0[5:7] == [5, ("ptr", "w", 0)]
    assert ("ptr", "y", 16) in k0 and k0[-2:] == ["TAIL", 3.5]  # y[:, 8:]: 8 bf16 elements in
    assert k0[-3] == ("ptr", "ws", 0) and k1[1] == ("map", "y", 1)
    n = len(encoded)
    replay(True)
    assert len(encoded) == n + 1  # the same inputs again: only the fresh output's descriptor is new
    runtime.launch_enter_hook = lambda *a: None  # a launch hook (a profiler): the generic replay, Triton's launch
    assert plan.fast((x2, w2)) is None


def test_new_signature_records_new_plan():
    keys = set()
    for name, x, w, b, kw in _variants():
        snapshot, recorded = dict(CP._PLANS), CP.STATS["recorded"]
        y = gemm_a16w16(x, w, b, **kw)
        added = _added(snapshot)
        assert len(added) == 1, f"{name}: {len(added)} new plans (want 1)"
        (key, plan), = added.items()
        assert key[1] == CP.signature(x, w, b, kw.get("out")), name
        assert isinstance(plan, CP.CallPlan), name
        keys.add(key)
        assert CP.STATS["recorded"] == recorded + 1, name
        _check(y, x, w, b, kw.get("activation"), kw.get("out_dtype") or x.dtype)
    assert set(CP._PLANS) == keys
    # Every variant again with new tensors: each replays its own plan, correctly.
    for name, x, w, b, kw in _variants():
        replays = CP.STATS["replays"]
        if "out" in kw:
            kw["out"] = poisoned(kw["out"].shape, kw["out"].dtype)
        y = gemm_a16w16(x, w, b, **kw)
        assert CP.STATS["replays"] == replays + 1, f"{name}: did not replay"
        _check(y, x, w, b, kw.get("activation"), kw.get("out_dtype") or x.dtype)
    assert set(CP._PLANS) == keys


def test_alignment_is_part_of_the_signature():
    """An x whose base is not 16-byte aligned (same shape, strides, dtype) is a different signature."""
    buf = randn(M * K + 8, dtype=BF16)
    xa, xu = buf[:M * K].view(M, K), buf[1:1 + M * K].view(M, K)
    _, w, b = _inputs()
    assert xa.data_ptr() % 16 == 0 and xu.data_ptr() % 16 != 0
    _check(gemm_a16w16(xa, w, b), xa, w, b, None, BF16)
    _check(gemm_a16w16(xu, w, b), xu, w, b, None, BF16)
    assert CP.signature(xa, w, b, None) != CP.signature(xu, w, b, None)
    assert isinstance(_plan_of(xa, w, b), CP.CallPlan) and isinstance(_plan_of(xu, w, b), CP.CallPlan)
    assert len(CP._PLANS) == 2


# ----------------------------------------------------------------------------- 3. views of the inputs on replay

def test_replay_3d_x():
    B, S = 3, 8
    for call in range(3):
        x, w, b = randn(B, S, K, dtype=BF16), randn(N, K, dtype=BF16), randn(N, dtype=BF16)
        out = poisoned((B, S, N), BF16)
        replays = CP.STATS["replays"]
        y = gemm_a16w16(x, w, b, activation="relu", out=out)
        assert y is out
        _check(y, x, w, b, "relu", BF16)
        assert CP.STATS["replays"] == replays + (call > 0)
    assert isinstance(_plan_of(x, w, b, out), CP.CallPlan) and len(CP._PLANS) == 1


def test_replay_x_sliced_from_a_bigger_buffer():
    """x = buf[:, off:off+K]: on replay the op's views must follow the new buffer (and the new offset)."""
    _, w, b = _inputs()
    bufs = [(randn(M, K + 32, dtype=BF16), 8), (randn(M, K + 32, dtype=BF16), 8), (randn(M, K + 32, dtype=BF16), 16),
            (randn(M, K + 32, dtype=BF16), 24)]
    for i, (buf, off) in enumerate(bufs):
        x = buf[:, off:off + K]
        assert x.data_ptr() % 16 == 0
        replays = CP.STATS["replays"]
        y = gemm_a16w16(x, w, b, out=poisoned((M, N), BF16))
        _check(y, x, w, b, None, BF16)
        assert CP.STATS["replays"] == replays + (i > 0)
    assert len(CP._PLANS) == 1


def test_replay_3d_x_sliced_from_a_bigger_buffer():
    """A 3-D slice the op reshapes to (M, K) in place: a view of a different shape (the as_strided path)."""
    B, S = 2, 12
    _, w, b = _inputs()
    for i, off in enumerate((8, 16, 8, 0)):
        buf = randn(B, S, K + 24, dtype=BF16)
        x = buf[:, :, off:off + K]
        replays = CP.STATS["replays"]
        y = gemm_a16w16(x, w, b, activation="gelu_tanh", out=poisoned((B, S, N), BF16))
        _check(y, x, w, b, "gelu_tanh", BF16)
        assert CP.STATS["replays"] == replays + (i > 0)
    assert len(CP._PLANS) == 1
    assert isinstance(next(iter(CP._PLANS.values())), CP.CallPlan)


def test_replay_w_transposed_view():
    for call in range(2):
        x, b = randn(M, K, dtype=FP16), randn(N, dtype=FP16)
        w = randn(K, N, dtype=FP16).t()
        y = gemm_a16w16(x, w, b, activation="silu")
        _check(y, x, w, b, "silu", FP16)
    assert CP.STATS["replays"] >= 1 and len(CP._PLANS) == 1


# ----------------------------------------------------------------------------- 4. out= overlap on a replayed signature

def test_out_overlap_refused_on_replay():
    W = 64  # a row of the buffers: room for K = 48 and N = 40
    bufa, bufb = randn(M, W, dtype=BF16), poisoned((M, W), BF16)
    _, w, b = _inputs()
    x, out = bufa[:, :K], bufb[:, :N]
    y = gemm_a16w16(x, w, b, out=out)
    _check(y, x, w, b, None, BF16)
    assert isinstance(_plan_of(x, w, b, out), CP.CallPlan)
    # The same signature, out overlapping x.
    big = randn(M, W, dtype=BF16)
    x2, out2 = big[:, :K], big[:, :N]
    assert CP.signature(x2, w, b, out2) == CP.signature(x, w, b, out)
    saved = big.clone()
    replays = CP.STATS["replays"]
    with pytest.raises(ValueError, match="overlaps"):
        gemm_a16w16(x2, w, b, out=out2)
    assert torch.equal(big, saved), "a kernel ran on the overlapping call"
    assert CP.STATS["replays"] == replays
    # Overlapping w and bias too.
    bigw = randn(N, W, dtype=BF16)
    with pytest.raises(ValueError, match="overlaps"):
        gemm_a16w16(randn(M, W, dtype=BF16)[:, :K], bigw[:, :K], b, out=bigw[:M, :N])
    # And the custom out op, after its own recording.
    out3 = poisoned((M, W), BF16)[:, :N]
    torch.ops.gemmkit.gemm_a16w16_out(x, w, b, "none", "", out3)
    _check(out3, x, w, b, None, BF16)
    with pytest.raises(ValueError, match="overlaps"):
        torch.ops.gemmkit.gemm_a16w16_out(x2, w, b, "none", "", out2)
    assert torch.equal(big, saved)
    # A disjoint out with the same signature still replays, correctly.
    bufc = poisoned((M, W), BF16)
    y = gemm_a16w16(x2, w, b, out=bufc[:, :N])
    _check(y, x2, w, b, None, BF16)


# ----------------------------------------------------------------------------- 5. unrepeatable paths

@pytest.mark.parametrize("with_out", [False, True], ids=["no_out", "out"])
def test_k0_is_unrepeatable(with_out):
    unrep = CP.STATS["unrepeatable"]
    for call in range(3):
        x, w, b = randn(5, 0, dtype=BF16), randn(7, 0, dtype=BF16), randn(7, dtype=BF16)
        out = poisoned((5, 7), torch.float32) if with_out else None
        replays = CP.STATS["replays"]
        y = gemm_a16w16(x, w, b, activation="silu", out_dtype=torch.float32, out=out)
        assert CP.STATS["replays"] == replays
        ref = gemm_a16w16_ref(x, w, b, "silu")
        ok, msg = within_bound(y, ref, torch.float32)
        assert ok, msg
        torch.testing.assert_close(y, torch.nn.functional.silu(b.float()).expand(5, 7))
        assert _plan_of(x, w, b, out) is CP.UNREPEATABLE, _plan_of(x, w, b, out)
    assert CP.STATS["unrepeatable"] == unrep + 1, "an UNREPEATABLE signature was recorded again"
    # K == 0 without bias: zeros, every call.
    for call in range(2):
        x, w = randn(3, 0, dtype=BF16), randn(6, 0, dtype=BF16)
        out = poisoned((3, 6), BF16)
        y = gemm_a16w16(x, w, out=out)
        assert torch.equal(y, torch.zeros(3, 6, dtype=BF16))
    assert _plan_of(x, w, None, out) is CP.UNREPEATABLE


def test_copied_operand_is_unrepeatable():
    """x with no unit stride is copied by the op (torch work a replay would skip): unrepeatable, and correct."""
    for call in range(2):
        x = randn(M, 2 * K, dtype=BF16)[:, ::2]
        _, w, b = _inputs()
        _check(gemm_a16w16(x, w, b, out=poisoned((M, N), BF16)), x, w, b, None, BF16)
    assert list(CP._PLANS.values()) == [CP.UNREPEATABLE]


def test_empty_m_replays():
    for call in range(2):
        x, w = randn(0, K, dtype=BF16), randn(N, K, dtype=BF16)
        y = gemm_a16w16(x, w)
        assert y.shape == (0, N)


# ----------------------------------------------------------------------------- 6. aliased inputs

def test_aliased_x_and_w():
    S = 32
    a = randn(S, S, dtype=BF16)
    _check(gemm_a16w16(a, a, out=None), a, a, None, None, BF16)
    assert _plan_of(a, a) is None, "a plan recorded from aliased inputs"
    # The same signature, distinct tensors: must not read x for w.
    x, w = randn(S, S, dtype=BF16), randn(S, S, dtype=BF16)
    assert CP.signature(x, w, None, None) == CP.signature(a, a, None, None)
    _check(gemm_a16w16(x, w), x, w, None, None, BF16)
    assert isinstance(_plan_of(x, w), CP.CallPlan)
    # Replays: distinct again, then aliased again.
    x, w = randn(S, S, dtype=BF16), randn(S, S, dtype=BF16)
    replays = CP.STATS["replays"]
    _check(gemm_a16w16(x, w), x, w, None, None, BF16)
    a = randn(S, S, dtype=BF16)
    _check(gemm_a16w16(a, a), a, a, None, None, BF16)
    assert CP.STATS["replays"] == replays + 2


def test_aliased_x_and_w_views_of_one_buffer():
    """x and w distinct views of one storage: the recording cannot tell them apart; later distinct calls correct."""
    buf = randn(2 * N, K, dtype=BF16)
    x, w = buf[:M], buf[N:]
    _check(gemm_a16w16(x, w), x, w, None, None, BF16)
    assert _plan_of(x, w) is None
    for call in range(2):
        x2, w2 = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
        assert CP.signature(x2, w2, None, None) == CP.signature(x, w, None, None)
        _check(gemm_a16w16(x2, w2), x2, w2, None, None, BF16)
    assert isinstance(_plan_of(x, w), CP.CallPlan)
    # The aliased shape again, new buffer.
    buf3 = randn(2 * N, K, dtype=BF16)
    _check(gemm_a16w16(buf3[:M], buf3[N:]), buf3[:M], buf3[N:], None, None, BF16)


# ----------------------------------------------------------------------------- 7. calls that raise

def test_raising_call_stores_no_plan():
    x, w, _ = _inputs()
    bad_bias = randn(N, dtype=FP16)
    for _ in range(2):
        with pytest.raises(TypeError, match="bias"):
            gemm_a16w16(x, w, bad_bias)
        assert len(CP._PLANS) == 0
    assert launcher.STATE.recording is None
    # A config that fails inside the recorded body (shared memory): no plan, the same error again.
    huge = {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 1, "num_warps": 8,
            "num_stages": 8}
    for _ in range(2):
        with pytest.raises(ValueError, match="shared memory"):
            gemm_a16w16(x, w, config=huge)
        assert len(CP._PLANS) == 0
        assert launcher.STATE.recording is None
    # Shape errors: twice.
    for _ in range(2):
        with pytest.raises(ValueError):
            gemm_a16w16(x, randn(N, K + 1, dtype=BF16))
        with pytest.raises(ValueError, match="out"):
            gemm_a16w16(x, w, out=poisoned((M, N + 1), BF16))
    assert len(CP._PLANS) == 0
    # The good call afterwards records and is correct.
    b = randn(N, dtype=BF16)
    _check(gemm_a16w16(x, w, b), x, w, b, None, BF16)
    assert len(CP._PLANS) == 1


def test_bad_argument_after_a_plan_still_raises():
    """A recorded signature with an argument the key sees but does not check (a bad activation) raises."""
    x, w, b = _inputs()
    gemm_a16w16(x, w, b, activation="relu")
    for _ in range(2):
        with pytest.raises(ValueError, match="activation"):
            gemm_a16w16(x, w, b, activation="tanh")
    with pytest.raises(TypeError, match="bias"):
        gemm_a16w16(x, w, b.to(FP16), activation="relu")


# ----------------------------------------------------------------------------- 8. grad mode

def test_grad_mode_checked_on_a_recorded_signature():
    x, w, b = _inputs()
    x.requires_grad_(True)
    with torch.no_grad():
        y = gemm_a16w16(x, w, b)
        _check(y, x, w, b, None, BF16)
        y = gemm_a16w16(x, w, b)  # replay under no_grad
        _check(y, x, w, b, None, BF16)
    assert CP.STATS["replays"] >= 1 and len(CP._PLANS) == 1
    for _ in range(2):
        with pytest.raises(NotImplementedError, match="requires grad"):
            gemm_a16w16(x, w, b)
    # requires_grad on w or bias, recorded under inference_mode, then grad mode on.
    with torch.inference_mode():
        gemm_a16w16(x.detach(), w, b)
    w.requires_grad_(True)
    with torch.no_grad():
        gemm_a16w16(x.detach(), w, b)
        gemm_a16w16(x.detach(), w, b)
    with pytest.raises(NotImplementedError, match="requires grad"):
        gemm_a16w16(x.detach(), w, b)
    # Recorded with grad on and nothing requiring grad; then x requires grad (grad on): raises.
    CP.clear()
    x2, w2, b2 = _inputs()
    gemm_a16w16(x2, w2, b2)
    gemm_a16w16(x2, w2, b2)
    with pytest.raises(NotImplementedError, match="requires grad"):
        gemm_a16w16(x2.clone().requires_grad_(True), w2, b2)


# ----------------------------------------------------------------------------- 9. the custom ops

def test_custom_op_replays():
    for call in range(3):
        x, w, b = _inputs()
        replays = CP.STATS["replays"]
        before = dict(launcher.LAUNCHES)
        y = torch.ops.gemmkit.gemm_a16w16(x, w, b, "silu", BF16, "")
        d = _delta(before)
        if call == 0:
            first = d
        assert d == first and d
        _check(y, x, w, b, "silu", BF16)
        assert CP.STATS["replays"] == replays + (call > 0)
    assert isinstance(_plan_of(x, w, b), CP.CallPlan) and len(CP._PLANS) == 1
    # out_dtype fp32 and a config string: another signature.
    cfg = json.dumps(SPLITK_CFG, sort_keys=True)
    for call in range(2):
        x, w, b = _inputs()
        y = torch.ops.gemmkit.gemm_a16w16(x, w, b, "gelu", torch.float32, cfg)
        _check(y, x, w, b, "gelu", torch.float32)
    assert len(CP._PLANS) == 2


def test_custom_out_op_replays():
    for call in range(3):
        x, w, b = _inputs(dtype=FP16)
        out = poisoned((M, N), FP16)
        replays = CP.STATS["replays"]
        torch.ops.gemmkit.gemm_a16w16_out(x, w, b, "relu", "", out)
        _check(out, x, w, b, "relu", FP16)
        assert CP.STATS["replays"] == replays + (call > 0)


def test_public_and_custom_ops_interleaved():
    """The public op and the custom op on one signature (their keys may coincide): each stays correct."""
    for call in range(2):
        x, w, b = _inputs()
        _check(gemm_a16w16(x, w, b, activation="none", out_dtype=BF16, config=None), x, w, b, None, BF16)
        x, w, b = _inputs()
        _check(torch.ops.gemmkit.gemm_a16w16(x, w, b, "none", BF16, ""), x, w, b, None, BF16)
        x, w, b = _inputs()
        out = poisoned((M, N), BF16)
        torch.ops.gemmkit.gemm_a16w16_out(x, w, b, "none", "", out)
        _check(out, x, w, b, None, BF16)
        x, w, b = _inputs()
        out = poisoned((M, N), BF16)
        _check(gemm_a16w16(x, w, b, activation="none", out=out), x, w, b, None, BF16)


def test_plan_cache_bound(monkeypatch):
    """MAX_PLANS: the table starts over rather than grow; calls stay correct across the reset."""
    monkeypatch.setattr(CP, "MAX_PLANS", 3)
    for m in (1, 2, 3, 4, 2):
        x, w, b = _inputs(m=m, n=16, k=16)
        _check(gemm_a16w16(x, w, b), x, w, b, None, BF16)
        assert len(CP._PLANS) <= 3


def test_clear_forgets_plans_recorded_under_other_settings(monkeypatch):
    """The key does not see GEMMKIT_INTERPRET_ARCH / GEMMKIT_NUM_CUS (callplan.py: as Triton's caches do not);
    after clear() a call records under the settings of its time (gfx942: the 8-XCD remap)."""
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 3, "num_warps": 4,
           "num_stages": 2, "persistent": True}
    monkeypatch.setenv("GEMMKIT_NUM_CUS", "3")
    x, w, b = _inputs()
    _check(gemm_a16w16(x, w, b, config=cfg), x, w, b, None, BF16)
    assert _plan_of(x, w, b).steps[0].kwargs["NUM_XCDS"] == 1
    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", "gfx942")
    CP.clear()
    x, w, b = _inputs()
    _check(gemm_a16w16(x, w, b, config=cfg), x, w, b, None, BF16)
    assert _plan_of(x, w, b).steps[0].kwargs["NUM_XCDS"] == 8
    x, w, b = _inputs()
    replays = CP.STATS["replays"]
    _check(gemm_a16w16(x, w, b, config=cfg), x, w, b, None, BF16)
    assert CP.STATS["replays"] == replays + 1


# ----------------------------------------------------------------------------- 10. every launch goes through launcher

_ALLOWED = {"launcher.py", "callplan.py"}
_LAUNCH_RE = re.compile(r"\w\s*\[[^\[\]\n]*\]\s*\(")  # name[...](  : a Triton launch, `kernel[grid](`


def _code_only(src):
    """The source with comments and strings (docstrings) blanked, so prose naming kernel[grid](...) is skipped."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            continue
        out.append(tok)
    lines = [""] * (src.count("\n") + 2)
    for tok in out:
        (r, c) = tok.start
        if tok.type in (tokenize.NEWLINE, tokenize.NL):
            continue
        line = lines[r - 1]
        lines[r - 1] = line + " " * max(0, c - len(line)) + tok.string
    return "\n".join(lines)


def test_only_launcher_launches_kernels():
    root = pathlib.Path(gemmkit.__file__).parent
    regex_hits, ast_hits = {}, {}
    for path in sorted(root.rglob("*.py")):
        src = path.read_text()
        rel = str(path.relative_to(root))
        for n, line in enumerate(_code_only(src).splitlines(), 1):
            if _LAUNCH_RE.search(line):
                regex_hits.setdefault(rel, []).append(n)
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
                ast_hits.setdefault(rel, []).append(node.lineno)
    assert set(regex_hits) == _ALLOWED, {f: v for f, v in regex_hits.items() if f not in _ALLOWED} or regex_hits
    assert set(ast_hits) == _ALLOWED, {f: v for f, v in ast_hits.items() if f not in _ALLOWED} or ast_hits
    assert {f: sorted(v) for f, v in regex_hits.items()} == {f: sorted(v) for f, v in ast_hits.items()}
    assert len(regex_hits["launcher.py"]) >= 4 and len(regex_hits["callplan.py"]) == 1


# ----------------------------------------------------------------------------- 11. layers: kernels/ never imports ops/

def test_kernels_do_not_import_ops():
    """docs/DESIGN.md's layers: data flows down, so nothing under gemmkit/kernels/ imports gemmkit/ops/ (the host
    modules of kernels/triton/ included: the ops call them, never the other way)."""
    root = pathlib.Path(gemmkit.__file__).parent
    hits = []
    for path in sorted((root / "kernels").rglob("*.py")):
        rel = path.relative_to(root)
        package = ["gemmkit", *rel.parent.parts]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                names = [mod] + [f"{mod}.{a.name}" for a in node.names]
            else:
                continue
            if any(n == "gemmkit.ops" or n.startswith("gemmkit.ops.") for n in names):
                hits.append(f"{rel}:{node.lineno}")
    assert not hits, hits
    assert (root / "kernels" / "triton" / "batched.py").exists()  # the scan sees the host modules


# ----------------------------------------------------------------------------- 12. the ops of several outputs and afp4wfp4 on Op

SC_BASE = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
           "num_stages": 2}
SC_CONFIGS = {"pointer": SC_BASE, "tma": {**SC_BASE, "tma": True}, "tma_persistent": {**SC_BASE, "tma": True,
                                                                                      "persistent": True}}
SC_M, SC_K, SC_D, SC_S1, SC_S2, SC_S3 = 20, 48, 3, 16, 16, 8


def _full_path(monkeypatch, fn, *args, **kwargs):
    """fn(*args, **kwargs) with call plans off: the full path (checks, dispatch, launches), recorded nowhere."""
    with monkeypatch.context() as m:
        m.setattr(CP, "ENABLED", False)
        return fn(*args, **kwargs)


def _sc_inputs(dtype=BF16):
    N = SC_D * (SC_S1 + SC_S2)
    return (randn(SC_M, SC_K, dtype=dtype), randn(N, SC_K, dtype=dtype),
            randn(SC_M, 1, SC_S3, dtype=dtype).expand(SC_M, SC_D, SC_S3), randn(N, dtype=dtype))


def _sc_outs(dtype=BF16):
    return poisoned((SC_M, SC_D, SC_S1 + SC_S3), dtype), poisoned((SC_M, SC_D, SC_S2), dtype)


def _sc_check(c1, c2, x, w, y, b):
    """(c1, c2) against the float64 reference: c = x @ w.T + b split per head, y copied into c1."""
    c = (x.double() @ w.double().T + (b.double() if b is not None else 0)).view(SC_M, SC_D, -1)
    assert torch.equal(c1[..., SC_S1:], y.to(c1.dtype))
    for got, want in ((c1[..., :SC_S1], c[..., :SC_S1]), (c2, c[..., SC_S1:])):
        ok, msg = within_bound(got, want, got.dtype)
        assert ok, msg


@pytest.mark.parametrize("with_out", [True, False], ids=["out", "no_out"])
@pytest.mark.parametrize("cfg_name", list(SC_CONFIGS))
def test_split_cat_replays(cfg_name, with_out, monkeypatch):
    """gemm_split_cat (two outputs, through Op): the second and third call of a signature replay the first's
    launches on their own fresh tensors, without recording again, and equal the full path on the same inputs."""
    cfg = SC_CONFIGS[cfg_name]
    deltas = []
    for call in range(3):
        x, w, y, b = _sc_inputs()
        out = _sc_outs() if with_out else None
        stats, before = dict(CP.STATS), dict(launcher.LAUNCHES)
        c1, c2 = gemmkit.gemm_split_cat(x, w, y, SC_S1, SC_S2, b, out=out, config=cfg)
        deltas.append(_delta(before))
        if with_out:
            assert c1 is out[0] and c2 is out[1]
        _sc_check(c1, c2, x, w, y, b)
        f1, f2 = _full_path(monkeypatch, gemmkit.gemm_split_cat, x, w, y, SC_S1, SC_S2, b, config=cfg)
        assert torch.equal(c1, f1) and torch.equal(c2, f2)
        if call == 0:
            assert CP.STATS["recorded"] == stats["recorded"] + 1 and CP.STATS["replays"] == stats["replays"]
        else:
            assert CP.STATS["replays"] == stats["replays"] + 1, f"call {call} did not replay"
            assert CP.STATS["recorded"] == stats["recorded"]
    kernel = "gemm_split_cat_tma_kernel" if cfg.get("tma") else "gemm_split_cat_kernel"
    assert deltas[0] == {kernel: 1}, deltas[0]
    assert deltas[1] == deltas[0] and deltas[2] == deltas[0], deltas
    assert len(CP._PLANS) == 1 and isinstance(next(iter(CP._PLANS.values())), CP.CallPlan)


def test_split_cat_custom_ops_replay(monkeypatch):
    for call in range(3):
        x, w, y, b = _sc_inputs(FP16)
        replays, before = CP.STATS["replays"], dict(launcher.LAUNCHES)
        c1, c2 = torch.ops.gemmkit.gemm_split_cat(x, w, y, SC_S1, SC_S2, b, FP16, "")
        d = _delta(before)
        if call == 0:
            first = d
        assert d == first and sum(d.values()) == 1 and set(d) <= {"gemm_split_cat_kernel", "gemm_split_cat_tma_kernel"}
        _sc_check(c1, c2, x, w, y, b)
        o1, o2 = _sc_outs(FP16)
        torch.ops.gemmkit.gemm_split_cat_out(x, w, y, SC_S1, SC_S2, b, "", o1, o2)
        assert torch.equal(o1, c1) and torch.equal(o2, c2)
        f1, f2 = _full_path(monkeypatch, gemmkit.gemm_split_cat, x, w, y, SC_S1, SC_S2, b)
        assert torch.equal(c1, f1) and torch.equal(c2, f2)
        assert CP.STATS["replays"] == replays + 2 * (call > 0)
    assert len(CP._PLANS) == 2


def test_split_cat_out_overlap_refused_on_replay():
    """The address checks of a replayed two-output signature: out[1] against out[0], each against the inputs."""
    P = SC_D * (SC_S1 + SC_S3)  # c1's columns in a row of the (M, W) buffers; c2's follow
    W = P + SC_D * SC_S2

    def pair(buf1, buf2):  # c1 from buf1, c2 from buf2 (the same buffer: side by side, disjoint)
        return buf1[:, :P].view(SC_M, SC_D, SC_S1 + SC_S3), buf2[:, P:].view(SC_M, SC_D, SC_S2)

    x, w, y, b = _sc_inputs()
    c1, c2 = pair(poisoned((SC_M, W), BF16), poisoned((SC_M, W), BF16))
    gemmkit.gemm_split_cat(x, w, y, SC_S1, SC_S2, b, out=(c1, c2))
    _sc_check(c1, c2, x, w, y, b)
    assert isinstance(next(iter(CP._PLANS.values())), CP.CallPlan)
    replays = CP.STATS["replays"]
    # The same signature, c2 overlapping c1: refused, nothing written.
    big = poisoned((SC_M, W), BF16)
    o1 = big[:, :P].view(SC_M, SC_D, SC_S1 + SC_S3)
    o2 = big[:, 8:8 + SC_D * SC_S2].view(SC_M, SC_D, SC_S2)
    with pytest.raises(ValueError, match=r"out\[1\].*overlaps out\[0\]"):
        gemmkit.gemm_split_cat(x, w, y, SC_S1, SC_S2, b, out=(o1, o2))
    assert torch.isnan(big).all()
    # The same signature, c1 overlapping x.
    bufx = randn(SC_M, W, dtype=BF16)
    x2 = bufx.view(-1)[:SC_M * SC_K].view(SC_M, SC_K)
    p1, p2 = pair(bufx, poisoned((SC_M, W), BF16))
    saved = bufx.clone()
    with pytest.raises(ValueError, match=r"out\[0\].*overlaps x"):
        gemmkit.gemm_split_cat(x2, w, y, SC_S1, SC_S2, b, out=(p1, p2))
    assert torch.equal(bufx, saved) and torch.isnan(p2).all()
    assert CP.STATS["replays"] == replays
    # Disjoint outputs of the same signature replay, correctly.
    x3, w3, y3, b3 = _sc_inputs()
    d1, d2 = pair(poisoned((SC_M, W), BF16), poisoned((SC_M, W), BF16))
    gemmkit.gemm_split_cat(x3, w3, y3, SC_S1, SC_S2, b3, out=(d1, d2))
    assert CP.STATS["replays"] == replays + 1
    _sc_check(d1, d2, x3, w3, y3, b3)
    # c1 and c2 side by side in one buffer (no byte shared): the same signature, so a replay, correct (the
    # replay hands each launch its own output; only a recording cannot tell outputs in one storage apart).
    e1, e2 = pair(*(2 * [poisoned((SC_M, W), BF16)]))
    gemmkit.gemm_split_cat(x3, w3, y3, SC_S1, SC_S2, b3, out=(e1, e2))
    assert CP.STATS["replays"] == replays + 2
    _sc_check(e1, e2, x3, w3, y3, b3)
    # Recorded from such a pair (CP.clear(): no plan yet), the signature records nothing and stays correct.
    CP.clear()
    for _ in range(2):
        e1, e2 = pair(*(2 * [poisoned((SC_M, W), BF16)]))
        gemmkit.gemm_split_cat(x3, w3, y3, SC_S1, SC_S2, b3, out=(e1, e2))
        _sc_check(e1, e2, x3, w3, y3, b3)
    assert CP.STATS["replays"] == replays + 2 and not CP._PLANS


def test_blockscale_split_cat_replays(monkeypatch):
    from _util import q8, scales

    from gemmkit.reference import gemm_a8w8_blockscale_ref

    M, K, D, S1, S2, S3 = 9, 256, 2, 32, 32, 16
    N = D * (S1 + S2)
    cfg = {**SC_BASE, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "tma": True}
    deltas = []
    for call in range(3):
        x, w = q8(M, K, dtype=torch.float8_e4m3fn), q8(N, K, dtype=torch.float8_e4m3fn)
        xs, ws = scales(M, 2), scales(1, 2)
        y = randn(M, 1, S3, dtype=torch.float32).expand(M, D, S3)
        out = (poisoned((M, D, S1 + S3), torch.float32), poisoned((M, D, S2), torch.float32)) if call != 1 else None
        stats, before = dict(CP.STATS), dict(launcher.LAUNCHES)
        c1, c2 = gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2, out=out, out_dtype=torch.float32,
                                                        config=cfg)
        deltas.append(_delta(before))
        c = gemm_a8w8_blockscale_ref(x, w, xs, ws).view(M, D, -1)
        assert torch.equal(c1[..., S1:], y)
        ok, msg = within_bound(torch.cat([c1[..., :S1].reshape(-1), c2.reshape(-1)]),
                               torch.cat([c[..., :S1].reshape(-1), c[..., S1:].reshape(-1)]), torch.float32)
        assert ok, msg
        f1, f2 = _full_path(monkeypatch, gemmkit.gemm_a8w8_blockscale_split_cat,
            x, w, xs, ws, y, S1, S2, out_dtype=torch.float32, config=cfg)
        assert torch.equal(c1, f1) and torch.equal(c2, f2)
        # calls 0 and 2 share a signature (out=), call 1 records its own (fresh outputs)
        assert CP.STATS["replays"] == stats["replays"] + (call == 2)
        assert CP.STATS["recorded"] == stats["recorded"] + (call < 2)
    assert deltas[0] == {"gemm_split_cat_tma_kernel": 1} and deltas[1] == deltas[0] == deltas[2], deltas
    assert len(CP._PLANS) == 2


AFP4_CFG = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 2, "num_warps": 4,
            "num_stages": 2}


def _afp4_inputs(M=17, N=40, K=128):
    import gemmkit.quant as Q

    xq, xs = Q.quantize_mxfp4(randn(M, K, dtype=torch.float32) * 3)
    wq, ws = Q.quantize_mxfp4(randn(N, K, dtype=torch.float32) * 3)
    return xq, wq, xs, ws


def _afp4_check(y, xq, wq, xs, ws):
    import gemmkit.quant as Q

    ref = Q.dequantize_mxfp4_ref(xq, xs).double() @ Q.dequantize_mxfp4_ref(wq, ws).double().T
    ok, msg = within_bound(y, ref, y.dtype)
    assert ok, msg


@pytest.mark.parametrize("with_out", [True, False], ids=["out", "no_out"])
@pytest.mark.parametrize("split_k", [1, 2])
def test_afp4wfp4_replays(split_k, with_out, monkeypatch):
    """gemm_afp4wfp4 (through Op): repeated signatures replay, split-K's workspace and reduce included."""
    cfg = {**AFP4_CFG, "NUM_KSPLIT": split_k}
    deltas = []
    for call in range(3):
        xq, wq, xs, ws = _afp4_inputs()
        out = poisoned((17, 40), torch.float32) if with_out else None
        stats, before = dict(CP.STATS), dict(launcher.LAUNCHES)
        y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=out, out_dtype=torch.float32, config=cfg)
        deltas.append(_delta(before))
        if with_out:
            assert y is out
        _afp4_check(y, xq, wq, xs, ws)
        full = _full_path(monkeypatch, gemmkit.gemm_afp4wfp4, xq, wq, xs, ws, out_dtype=torch.float32,
                                                                     config=cfg)
        assert torch.equal(y, full)
        assert CP.STATS["replays"] == stats["replays"] + (call > 0)
        assert CP.STATS["recorded"] == stats["recorded"] + (call == 0)
    want = {"gemm_afp4wfp4_kernel": 1, **({"splitk_reduce_kernel": 1} if split_k > 1 else {})}
    assert deltas[0] == want and deltas[1] == deltas[0] == deltas[2], deltas
    plans = _op_plans("gemm_afp4wfp4")  # (the inputs' quantize_mxfp4 calls keep plans of their own)
    assert len(plans) == 1 and isinstance(plans[0], CP.CallPlan)


def _op_plans(op):
    return [plan for key, plan in CP._PLANS.items() if key[0] == op]


def test_afp4wfp4_custom_ops_replay(monkeypatch):
    for call in range(2):
        xq, wq, xs, ws = _afp4_inputs(8, 32, 64)
        replays = CP.STATS["replays"]
        y = torch.ops.gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, BF16, "")
        out = poisoned((8, 32), BF16)
        torch.ops.gemmkit.gemm_afp4wfp4_out(xq, wq, xs, ws, "", out)
        assert torch.equal(out, y)
        _afp4_check(y, xq, wq, xs, ws)
        assert torch.equal(y, _full_path(monkeypatch, gemmkit.gemm_afp4wfp4, xq, wq, xs, ws))
        assert CP.STATS["replays"] == replays + 2 * call
    assert len(_op_plans("gemm_afp4wfp4")) == 2
