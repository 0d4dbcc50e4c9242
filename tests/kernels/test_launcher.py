"""The launch cache (gemmkit/launcher.py).

On the CPU: its key is at least as fine as Triton's specialisation. A cached compiled kernel may only
be reused for arguments Triton itself would have given the same compiled kernel: so two arguments
that Triton's `native_specialize_impl` tells apart must get different keys. Checked over the values
that matter (ints around 1, multiples of 16 and the i32 / i64 boundary; tensors of each dtype,
aligned and not; descriptors of different blocks).

On the GPU (gpu-marked, the last section): a cached launch computes exactly what Triton's own launch
computes, a new specialisation compiles instead of reusing, and a launch hook (a profiler) sends
every launch back through Triton."""
import itertools

import pytest
import torch
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
from triton.tools.tensor_descriptor import TensorDescriptor

import gemmkit
from gemmkit.kernels.triton.gemm import gemm_kernel
from gemmkit import launcher as _launch

from _util import untouched_empty

# The backends Triton's binder specialises with on the targets gemmkit ships (CUDA adds nothing to
# BaseBackend's marks; HIP adds "S": a tensor whose storage fits 2 GiB, for 32-bit buffer offsets).
BACKENDS = {"cuda": make_backend(GPUTarget("cuda", 90, 32)), "hip": make_backend(GPUTarget("hip", "gfx942", 64))}


INTS = [0, 1, 2, 15, 16, 17, 32, 4095, 4096, 2**31 - 16, 2**31 - 1, 2**31, 2**32, -1, -16, -(2**31), -(2**31) - 1]


def _tensors():
    base = torch.empty(4096, dtype=torch.uint8)
    out = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32, torch.int8, torch.float8_e4m3fn, torch.uint8):
        for offset_bytes in (0, 4, 16):  # 16-byte aligned, not, aligned again
            t = base[offset_bytes:offset_bytes + 64 * dtype.itemsize].view(dtype)
            out.append(t)
    # A view into a storage over 2 GiB (never touched: the pages are not allocated): HIP's "S" is off.
    big = untouched_empty(2**31 + 256, torch.uint8)
    out += [big[128:128 + 128].view(torch.bfloat16), big[132:132 + 128].view(torch.bfloat16)]
    return out


def _descs():
    x = torch.empty(64, 64, dtype=torch.bfloat16)
    h = torch.empty(64, 64, dtype=torch.float16)
    return [TensorDescriptor.from_tensor(x, [16, 32]), TensorDescriptor.from_tensor(x, [32, 32]),
            TensorDescriptor.from_tensor(h, [16, 32])]


VALUES = INTS + _tensors() + _descs() + [None, True, False, 0.5]


@pytest.mark.parametrize("backend", list(BACKENDS), ids=list(BACKENDS))
def test_key_separates_what_triton_separates(backend):
    be = BACKENDS[backend]
    spec = _launch.make_spec(be)

    def triton_spec(a):
        return native_specialize_impl(be, a, False, True, True)

    for a, b in itertools.combinations(VALUES, 2):
        if triton_spec(a) != triton_spec(b):
            assert spec(a) != spec(b), (a, b, triton_spec(a), triton_spec(b))


def test_hip_keys_buffer_op_eligibility():
    """The case a BaseBackend-only key would miss: same dtype and alignment, storage over 2 GiB or not."""
    spec = _launch.make_spec(BACKENDS["hip"])
    big = untouched_empty(2**31 + 256, torch.uint8)[128:256].view(torch.bfloat16)
    small = torch.empty(64, dtype=torch.bfloat16)
    assert spec(big) != spec(small)


@pytest.mark.parametrize("v", INTS)
def test_int_spec_matches_triton_classes(v):
    """Equal to 1 (constexpr), divisible by 16, fits in i32: Triton's three int classes (CUDA's fast path)."""
    kind, div = native_specialize_impl(BACKENDS["cuda"], v, False, True, True)
    one, d16, i32 = _launch.make_spec(BACKENDS["cuda"])(v)
    assert (kind == "constexpr") == one
    if kind != "constexpr":
        assert (div == "D") == d16
        assert (kind == "i32") == i32, (v, kind)


def test_keyword_values_are_keyed_with_their_types():
    """True == 1 == 1.0 as dict keys; Triton compiles a constexpr True, 1 and 1.0 apart."""
    spec = _launch.make_spec(BACKENDS["cuda"])
    keys = {_launch.cache_key(object, 0, spec, (1, 16), kw) for kw in ({"F": True}, {"F": 1}, {"F": 1.0})}
    assert len(keys) == 3
    assert len({_launch.cache_key(object, 0, spec, (1, 16), {"F": 1}) for _ in range(2)}) == 1


def test_interpreted_kernels_take_tritons_path():
    """A kernel that is not a compiled JIT function (the interpreter's) is never cached."""
    class NotAJitFunction:
        pass

    assert _launch._runtime_params(NotAJitFunction()) == -1


class _FakeDescriptor:
    def __init__(self, ptr, shape, strides):
        self.base = type("Base", (), {"data_ptr": lambda _self: ptr})()
        self.shape, self.strides, self.padding = shape, strides, "zero"


def _flat_layout():
    import triton.backends.nvidia.driver as nv

    return getattr(nv, "_BASE_ARGS_FORMAT_LEN", None) == 13


@pytest.mark.skipif(not _flat_layout(), reason="Triton 3.6's launcher layout (3.7+'s: test_descriptor_cache_packed_layout)")
def test_descriptor_cache_passes_what_tritons_launcher_passes(monkeypatch):
    """A launcher laid out as Triton 3.6's CudaLauncher (wrap_handle_tensordesc around the C launcher): the caching
    wrapper hands the C launcher the same arguments, encodes a (metadata, address, shape, strides) once, and
    encodes again for a new address or shape."""
    import triton.backends.nvidia.driver as nv

    encoded = []

    def fake_encode(d, meta):  # stands for cuTensorMapEncodeTiled: a fresh object per encoding
        encoded.append((d.base.data_ptr(), meta["n"]))
        return [("map", d.base.data_ptr(), meta["n"], object()), *d.shape, *d.strides]

    monkeypatch.setattr(nv, "make_tensordesc_arg", fake_encode)
    calls = []
    signature = {0: "tensordesc<bf16[16, 16]>", 1: "i32", 2: "tensordesc<bf16[16, 16]>", 3: "constexpr"}
    metas = [{"n": 0}, {"n": 1}]

    class FakeRun(nv.CudaLauncher):  # the layout without compiling a launcher
        launch = staticmethod(nv.wrap_handle_tensordesc(lambda *a: calls.append(a), signature, metas))
        global_scratch_size = profile_scratch_size = 0
        launch_cooperative_grid, launch_pdl = False, True

        def __init__(self):
            pass

    run = _launch._descriptor_caching(FakeRun())
    assert run is not None
    a, b = _FakeDescriptor(4096, (32, 64), (64, 1)), _FakeDescriptor(8192, (64, 64), (64, 1))
    run(2, 1, 1, "stream", "fn", "meta", None, None, None, a, 7, b, None)
    direct = FakeRun.launch(2, 1, 1, "stream", "fn", False, True, None, None, "meta", None, None, None, a, 7, b, None)
    assert direct is None and len(calls) == 2
    strip = lambda args: [x[:3] if isinstance(x, tuple) else x for x in args]  # noqa: E731  (maps compare by content)
    assert strip(calls[0]) == strip(calls[1])
    n = len(encoded)
    run(4, 1, 1, "stream", "fn", "meta", None, None, None, a, 9, b, None)  # same tensors: no new encoding
    assert len(encoded) == n and calls[-1][13] is calls[0][13] and calls[-1][13 + 5] == 9
    run(4, 1, 1, "stream", "fn", "meta", None, None, None, _FakeDescriptor(12288, (32, 64), (64, 1)), 9, b, None)
    assert encoded[n:] == [(12288, 0)]  # a new address: encoded again
    run(4, 1, 1, "stream", "fn", "meta", None, None, None, _FakeDescriptor(4096, (16, 64), (64, 1)), 9, b, None)
    assert encoded[n + 1:] == [(4096, 0)]  # a new shape at an old address: encoded again
    listed = _FakeDescriptor(4096, [16, 64], [64, 1])  # shape and strides as lists: the same map
    run(4, 1, 1, "stream", "fn", "meta", None, None, None, listed, 9, b, None)
    assert len(encoded) == n + 2


def _wrapper_37(launcher, indices, metas):
    """The closure Triton 3.7's wrap_handle_tensordesc builds around the C launcher (its free variables)."""
    tensordesc_indices, tensordesc_meta = set(indices), metas

    def inner(*args):
        return launcher, tensordesc_indices, tensordesc_meta

    return inner


def _wrapper_38(launcher, indices, metas, nested=False):
    """The closure of Triton 3.8+'s wrap_handle_tensordesc_impl: descriptor paths as a tree."""
    relevant_paths = {i: ({1: {}} if nested else {}) for i in indices}
    tensordesc_meta, signature = metas, ()

    def inner(*args):
        return launcher, relevant_paths, tensordesc_meta, signature

    return inner


@pytest.mark.parametrize("wrap", [_wrapper_37, _wrapper_38])
def test_descriptor_cache_packed_layout(monkeypatch, wrap):
    """Triton 3.7+'s CudaLauncher calls the C launcher with the parameters as one list after the argument annotations
    and the kernel signature (launcher.py, "packed"): the caching wrapper and a call plan's direct form do the same,
    each descriptor expanded (map, shape, strides) at its position, a map encoded once per tensor."""
    import triton.backends.nvidia.driver as nv

    monkeypatch.delattr(nv, "_BASE_ARGS_FORMAT_LEN", raising=False)  # absent from 3.7 on
    encoded = []

    def fake_expand(d, meta):
        encoded.append(d.base.data_ptr())
        return [("map", d.base.data_ptr(), meta["n"]), *d.shape, *d.strides]

    monkeypatch.setattr(_launch, "_expander", lambda: fake_expand)
    calls, metas = [], [{"n": 0}, {"n": 1}]

    class FakeRun(nv.CudaLauncher):
        launch = staticmethod(wrap(lambda *a: calls.append(a), [0, 2], metas))
        global_scratch_size = profile_scratch_size = 0
        launch_cooperative_grid, launch_pdl = False, True
        arg_annotations, kernel_signature = "annotations", "signature"

        def __init__(self):
            pass

    run = _launch._descriptor_caching(FakeRun())
    a, b = _FakeDescriptor(4096, (32, 64), (64, 1)), _FakeDescriptor(8192, (64, 16), (16, 1))
    run(2, 1, 1, "stream", "fn", "meta", None, None, None, a, 7, b, None)
    run(3, 1, 1, "stream", "fn", "meta", None, None, None, a, 9, b, None)
    assert calls[0][:15] == (2, 1, 1, "stream", "fn", False, True, "meta", None, None, None, None, None,
                             "annotations", "signature") and len(calls[0]) == 16
    assert calls[0][15] == [("map", 4096, 0), 32, 64, 64, 1, 7, ("map", 8192, 1), 64, 16, 16, 1, None]
    assert calls[1][15][5] == 9 and encoded == [4096, 8192]  # the second launch reused both maps
    d = _launch.direct((None, "fn", "meta", (None,), 0, FakeRun()))
    assert d.packed and d.descriptors == {0: metas[0], 2: metas[1]}
    assert d.head == ("fn", False, True, "meta", None, None, None, None, None, "annotations", "signature")
    if wrap is _wrapper_38:  # a descriptor inside a tuple argument: Triton's own launcher
        FakeRun.launch = staticmethod(_wrapper_38(lambda *a: None, [0], [{"n": 0}], nested=True))
        assert _launch._unwrap(FakeRun()) is None and _launch._descriptor_caching(FakeRun()) is None


def test_descriptor_cache_declines_other_launchers():
    """No descriptors, scratch buffers, or a launcher that is not CUDA's (HIP's C launcher takes other arguments):
    the compiled kernel's own launcher runs, and call plans get no direct form."""
    import triton.backends.nvidia.driver as nv

    class NoDescriptors(nv.CudaLauncher):
        launch = staticmethod(lambda *a: None)
        global_scratch_size = profile_scratch_size = 0

        def __init__(self):
            pass

    class Scratch(NoDescriptors):
        global_scratch_size = 128

    class NotCuda:  # laid out alike, but not CUDA's launcher
        launch = staticmethod(max)
        global_scratch_size = profile_scratch_size = 0

    assert _launch._descriptor_caching(NoDescriptors()) is None
    assert _launch._descriptor_caching(Scratch()) is None
    assert _launch._descriptor_caching(object()) is None
    assert _launch._unwrap(Scratch()) is None and _launch._unwrap(NotCuda()) is None
    assert _launch.direct((None, "fn", "meta", (), 0, NotCuda())) is None


# ----------------------------------------------------------------------------- on the GPU (gpu-marked: `pytest -m gpu`)

DEV = "cuda"
PTR = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4,
       "num_stages": 3}
TMA = dict(PTR, tma=True)
SPLIT = dict(PTR, NUM_KSPLIT=3)


def _tritons_path(fn):
    """fn() with every launch through Triton's `kernel[grid](...)` (no call plans: they launch from the cache)."""
    from gemmkit import callplan

    real = _launch.launch
    _launch.launch = lambda kernel, grid, *a, **k: kernel[grid](*a, **k)
    callplan.ENABLED = False
    try:
        return fn()
    finally:
        _launch.launch = real
        callplan.ENABLED = True


@pytest.mark.gpu
def test_runtime_params_stop_at_the_first_constexpr():
    n = _launch._runtime_params(gemm_kernel)
    assert n > 0
    assert not any(p.is_constexpr for p in gemm_kernel.params[:n])
    assert gemm_kernel.params[n].is_constexpr


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [PTR, TMA, SPLIT], ids=["pointer", "tma", "splitk"])
def test_cached_launch_is_bitwise_tritons(cfg):
    x = torch.randn(37, 320, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(200, 320, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(200, device=DEV, dtype=torch.bfloat16)
    from gemmkit import callplan

    want = _tritons_path(lambda: gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg))
    gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg)  # fills the cache
    hits, replays = _launch.STATS["hits"], callplan.STATS["replays"]
    for _ in range(3):  # fresh inputs each time: a cached launch must read the new pointers
        x.normal_()
        w.normal_()
        want = _tritons_path(lambda: gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg))
        out = torch.full_like(want, float("nan"))
        gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg, out=out)
        torch.cuda.synchronize()
        assert torch.equal(out, want)
    # the first out= call records a plan (through the launch cache), the next two replay it
    assert _launch.STATS["hits"] > hits, "the cache was never used"
    assert callplan.STATS["replays"] >= replays + 2, "the call plan was never replayed"


@pytest.mark.gpu
def test_new_specialisations_compile():
    """M == 1 (an int Triton turns into a constexpr), a misaligned pointer, a row stride that is not a
    multiple of 16: each is a different compiled kernel, never a reuse of the aligned one."""
    w = torch.randn(96, 64, device=DEV, dtype=torch.bfloat16)
    for M in (32, 1, 2):
        x = torch.randn(M, 64, device=DEV, dtype=torch.bfloat16)
        ref = x.float() @ w.float().T
        y = gemmkit.gemm_a16w16(x, w, config=PTR)
        torch.testing.assert_close(y.float(), ref, rtol=2**-7, atol=1e-2)
    big = torch.randn(5, 64 + 8, device=DEV, dtype=torch.bfloat16)
    for x in (big[:, 1:65], big[:, 8:72], torch.randn(5, 64, device=DEV, dtype=torch.bfloat16)):
        y = gemmkit.gemm_a16w16(x, w, config=PTR)
        torch.testing.assert_close(y.float(), x.float() @ w.float().T, rtol=2**-7, atol=1e-2)
    keys = {k[2] for k in _launch._CACHE if k[0] == id(gemm_kernel)}
    aligned = [k for k in keys if k[0] == (torch.bfloat16, True)]
    unaligned = [k for k in keys if k[0] == (torch.bfloat16, False)]
    assert aligned and unaligned, keys


@pytest.mark.gpu
def test_launch_hook_takes_tritons_path():
    from triton import knobs

    x = torch.randn(16, 64, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=DEV, dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(x, w, config=PTR)
    seen = []

    def hook(metadata):
        seen.append(metadata)

    knobs.runtime.launch_enter_hook.add(hook)  # Triton 3.6: a HookChain (proton adds its hooks so)
    try:
        gemmkit.gemm_a16w16(x, w, config=PTR)  # a replayed call plan: Triton's path while a hook is set
        assert seen, "the hook did not see the launch"
        slow = _launch.STATS["slow"]
        gemmkit.gemm_a16w16(x, w, config=PTR, activation="relu")  # a new signature: the launcher's slow path
        assert _launch.STATS["slow"] == slow + 1
        assert len(seen) == 2
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


@pytest.mark.gpu
def test_cuda_graph_capture_replays_cached_launches():
    x = torch.randn(16, 256, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(512, 256, device=DEV, dtype=torch.bfloat16)
    out = torch.empty(16, 512, device=DEV, dtype=torch.bfloat16)
    for cfg in (PTR, SPLIT):
        gemmkit.gemm_a16w16(x, w, config=cfg, out=out)  # compiled and cached before capture
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            gemmkit.gemm_a16w16(x, w, config=cfg, out=out)
        x.normal_()
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(out.float(), x.float() @ w.float().T, rtol=2**-7, atol=2e-2)


def _op_calls():
    dev, bf, f8 = DEV, torch.bfloat16, torch.float8_e4m3fn
    x = torch.randn(64, 256, device=dev, dtype=bf)
    w = torch.randn(256, 256, device=dev, dtype=bf)
    gluon = {"backend": "gluon", "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
             "num_warps": 4, "num_stages": 4}
    x8, w8 = x.to(f8), w.to(f8)
    xs, ws = torch.rand(64, 1, device=dev) + 0.5, torch.rand(1, 256, device=dev) + 0.5
    xb, wb = torch.rand(64, 2, device=dev) + 0.5, torch.rand(2, 2, device=dev) + 0.5
    xb3, wb3 = torch.randn(4, 64, 256, device=dev, dtype=bf), torch.randn(4, 256, 256, device=dev, dtype=bf)
    wgu, wd = torch.randn(512, 256, device=dev, dtype=bf), torch.randn(256, 256, device=dev, dtype=bf)
    ysc = torch.randn(64, 2, 32, device=dev, dtype=bf)
    return {
        "a16w16 pointer": lambda: gemmkit.gemm_a16w16(x, w, config=PTR),
        "a16w16 tma": lambda: gemmkit.gemm_a16w16(x, w, config=TMA),
        "a16w16 split-K": lambda: gemmkit.gemm_a16w16(x, w, config=SPLIT),
        "a16w16 gluon": lambda: gemmkit.gemm_a16w16(x, w, config=gluon),
        "a8w8 fp8 gluon": lambda: gemmkit.gemm_a8w8(x8, w8, xs, ws, config=dict(gluon, BLOCK_SIZE_K=128)),
        "a8w8 fp8 triton": lambda: gemmkit.gemm_a8w8(x8, w8, xs, ws, config=dict(TMA, BLOCK_SIZE_K=128)),
        "a8w8_blockscale": lambda: gemmkit.gemm_a8w8_blockscale(x8, w8, xb, wb),
        "quantize_fp8_per_token": lambda: gemmkit.quant.quantize_fp8_per_token(x),
        "batched a16w16": lambda: gemmkit.batched_gemm_a16w16(xb3, wb3),
        "ffn_gated": lambda: gemmkit.ffn_gated(x, wgu, wd),
        "split_cat": lambda: gemmkit.gemm_split_cat(x, w, ysc, 64, 64),
    }


@pytest.mark.gpu
@pytest.mark.parametrize("name", [
    "a16w16 pointer", "a16w16 tma", "a16w16 split-K", "a16w16 gluon", "a8w8 fp8 gluon", "a8w8 fp8 triton",
    "a8w8_blockscale", "quantize_fp8_per_token", "batched a16w16", "ffn_gated", "split_cat"])
def test_every_op_launches_through_the_cache(name):
    """After one call, a repeated call of every op replays its call plan (gemmkit/callplan.py) or, where it has
    none (quantize), takes the launch cache's path for all its launches: no kernel of ours falls back to
    Triton's launch path by the way it is called."""
    from gemmkit import callplan

    fn = _op_calls()[name]
    fn()
    torch.cuda.synchronize()
    before, replays = dict(_launch.STATS), callplan.STATS["replays"]
    fn()
    torch.cuda.synchronize()
    assert _launch.STATS["slow"] == before["slow"], f"{name}: a launch took Triton's path"
    assert _launch.STATS["misses"] == before["misses"], f"{name}: a repeated call missed the cache"
    assert callplan.STATS["replays"] == replays + 1 or _launch.STATS["hits"] > before["hits"]
    if name != "quantize_fp8_per_token":
        assert callplan.STATS["replays"] == replays + 1, f"{name}: no call plan replayed"


GLUON_CFG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
             "num_stages": 3, "backend": "gluon"}


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [TMA, GLUON_CFG], ids=["triton_tma", "gluon"])
def test_tma_descriptors_are_encoded_once_per_tensor(cfg):
    """Host TMA descriptors (launcher._descriptor_caching, and a call plan's generated replay, which keeps its own
    maps per descriptor slot): a repeated (address, shape, strides) reuses its encoded map, a new output buffer gets
    its own, and every result is Triton's own launch's, bit for bit (Triton 3.6's launcher layout and 3.7+'s:
    launcher._unwrap knows both)."""
    _launch.clear()  # no map kept from an earlier test at an address the caching allocator hands out again here
    x = torch.randn(256, 512, device=DEV, dtype=torch.bfloat16)
    w = torch.randn(384, 512, device=DEV, dtype=torch.bfloat16)
    want = _tritons_path(lambda: gemmkit.gemm_a16w16(x, w, config=cfg))
    outs = [torch.full_like(want, float("nan")) for _ in range(3)]  # alive together: three addresses
    for _ in range(2):  # compile (Triton's launch), then the cache's own launch encodes x's, w's and y's maps
        gemmkit.gemm_a16w16(x, w, config=cfg, out=outs[0])
    encoded = _launch.TMA_STATS["encoded"]
    for out in outs[1:]:
        gemmkit.gemm_a16w16(x, w, config=cfg, out=out)
    new = 2  # y's map for each of the two new outputs
    assert _launch.TMA_STATS["encoded"] == encoded + new, "a new output address must be encoded (and only it)"
    gemmkit.gemm_a16w16(x, w, config=cfg, out=outs[0])
    assert _launch.TMA_STATS["encoded"] == encoded + new
    x.normal_()  # new contents at the same address: the map (an address) still serves
    want2 = _tritons_path(lambda: gemmkit.gemm_a16w16(x, w, config=cfg))
    gemmkit.gemm_a16w16(x, w, config=cfg, out=outs[1])
    torch.cuda.synchronize()
    assert all(torch.equal(o, want) for o in (outs[0], outs[2])) and torch.equal(outs[1], want2)
