"""Test setup: the Triton interpreter on CPU machines, markers, fixtures, tests/ on sys.path.

On a machine without a GPU the tests run every Triton kernel in Triton's CPU
interpreter. TRITON_INTERPRET must be set before any @triton.jit decorator
runs (Triton picks JITFunction or InterpretedFunction at decoration time), so
it is set here, before gemmkit is imported. On the GPU machine run
`pytest -m gpu` (no interpreter); `TRITON_INTERPRET=1 pytest` there runs the
CPU tests.

No patch of library behaviour lives here: the interpreter's differences from the GPUs
(bf16 dot, fp32 -> bf16 / fp8 rounding, tl.dot_scaled) are fixed by gemmkit itself when it
is imported with the interpreter on (gemmkit/kernels/_interpreter.py), so the CPU tests
run what a user gets. What the tests add to the interpreter is a check, not a behaviour:
every load and store an interpreted kernel makes must stay inside its launch's tensors
(tests/_bounds.py; a test fails on a violation even where it catches the kernel's error). And on the CPU every
tensor torch allocates uninitialized (torch.empty, the ops' own outputs and workspaces) is filled with NaN / the
largest integer (torch's deterministic mode, warn_only: no op is refused): an element no kernel writes shows up
in the test's comparison, whatever the allocator happened to hand back.
"""
import os
import sys

import torch

# Tests live in tests/ops/, tests/kernels/, tests/tools/ and tests/properties/; their shared helpers
# (tests/_util.py) are imported as `from _util import ...` from every folder.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("GEMMKIT_INTERPRET_ARCH", "sm_90")

import pytest  # noqa: E402

INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
BOUNDS_CHECKED = False
if INTERPRETING:
    import _bounds  # noqa: E402

    BOUNDS_CHECKED = _bounds.install()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run `pytest -m gpu` on the H200)")
    skip_interp = pytest.mark.skip(reason="interpreter test: run with TRITON_INTERPRET=1")
    for item in items:
        if item.get_closest_marker("gpu") is not None and not torch.cuda.is_available():
            item.add_marker(skip_gpu)
        if item.get_closest_marker("interpreter") is not None and not INTERPRETING:
            item.add_marker(skip_interp)


def pytest_configure(config):
    if INTERPRETING and not BOUNDS_CHECKED:
        import warnings

        warnings.warn("tests/_bounds.py: this Triton's interpreter lacks a function the bounds check wraps; "
                      "interpreted kernels' memory accesses are not checked", stacklevel=1)


@pytest.fixture(autouse=True)
def _interpreted_accesses_in_bounds():
    """Fail a test in which an interpreted kernel touched memory outside its launch's tensors (tests/_bounds.py)."""
    if not BOUNDS_CHECKED:
        yield
        return
    _bounds.take_violations()
    yield
    violations = _bounds.take_violations()
    if violations:
        pytest.fail("out-of-bounds access by an interpreted kernel:\n" + "\n".join(violations[:3]), pytrace=False)


@pytest.fixture(autouse=True)
def _fresh_call_plans():
    """Each test starts with no call plan recorded (gemmkit.callplan): a plan is keyed by its call's signature, not by
    the module flags a test may patch, and tests count the replays of their own calls; one recorded by a test before
    (on the same xdist worker, which --dist loadfile varies) would be replayed instead."""
    from gemmkit import callplan

    callplan.clear()
    yield


@pytest.fixture(autouse=True)
def _no_tf32_on_gpu(request):
    """gpu tests compare against fp32 torch references: TF32 off, so the reference is fp32."""
    if request.node.get_closest_marker("gpu") is None or not torch.cuda.is_available():
        yield
        return
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


@pytest.fixture
def launches():
    """The kernel-launch counter; tests assert on its delta to prove a kernel ran."""
    from gemmkit.ops import _common

    return _common.LAUNCHES
