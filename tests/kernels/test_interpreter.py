"""What a CPU user gets: gemmkit in Triton's interpreter computes what the GPUs compute, and a process
that cannot run CPU tensors says why (gemmkit/kernels/_interpreter.py).

The subprocess tests start Python the way a user does (no test harness, no conftest), so they
check the library alone: each failed before the interpreter fixes moved into gemmkit (relative
error ~1e10 for the README's bf16 example; 124.3 quantized to 64).
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import gemmkit
from gemmkit import quant
from gemmkit.kernels import _interpreter

from _util import ROOT, poisoned


def run_python(code, interpret):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "GEMMKIT_INTERPRET_ARCH")}
    if interpret is not None:
        env["TRITON_INTERPRET"] = interpret
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=300)


def test_readme_bf16_example_in_a_plain_process():
    """The README's bf16 call, in a process without the test harness: every element within bf16 rounding."""
    r = run_python("""
        import torch, gemmkit
        torch.manual_seed(0)
        x = torch.randn(2, 17, 96, dtype=torch.bfloat16)
        w = torch.randn(40, 96, dtype=torch.bfloat16)
        b = torch.randn(40, dtype=torch.bfloat16)
        y = gemmkit.gemm_a16w16(x, w, b, activation="silu")
        ref = torch.nn.functional.silu(x.double() @ w.double().T + b.double())
        err = ((y.double() - ref).abs() / (ref.abs() + 1)).max().item()
        print("maxerr", err)
        assert err < 2**-7, err
        xq, xs = gemmkit.quant.quantize_fp8_per_token(torch.tensor([[124.3, 448.0] + [1.0] * 14]))
        print("q", xq.float()[0, 0].item(), xs.item())
        assert xq.float()[0, 0].item() == 128.0
        """, "1")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.interpreter
def test_bf16_output_rounds_to_nearest_even(launches):
    """1 + 1.5 * 2^-8 is 0.75 bf16 ulps above 1: round-to-nearest-even gives 1 + 2^-7, truncation 1."""
    x = torch.tensor([[1.0, 1.0]], dtype=torch.bfloat16)
    w = torch.tensor([[1.0, 1.5 * 2**-8]], dtype=torch.bfloat16)
    y = gemmkit.gemm_a16w16(x, w, out=poisoned((1, 1), torch.bfloat16))
    assert y.item() == 1 + 2**-7


@pytest.mark.interpreter
def test_fp8_quantizer_rounds_like_the_hardware():
    """The quantizer's fp32 -> e4m3 cast: RNE with the mantissa carry (124.3 -> 128), every value of a
    dense sweep equal to torch's (the RNE reference). e5m2 (no quantizer makes it): the next test."""
    dtype = torch.float8_e4m3fn
    x = torch.cat([torch.tensor([124.3, -124.3, 447.9, 0.0]), torch.linspace(-440, 440, 4091)])[None, :]
    xq, xs = quant.quantize_fp8_per_token(x, dtype=dtype)
    want = (x / xs).clamp(-448, 448).to(dtype)
    assert torch.equal(xq.view(torch.uint8), want.view(torch.uint8))
    assert xq.float()[0, 0].item() == 128.0


@pytest.mark.interpreter
def test_cast_replacement_matches_torch_for_both_formats():
    """The replacement cast itself, for both fp8 formats the kernels use: torch's RNE, saturated."""
    import triton.language as tl
    from triton.runtime import interpreter

    assert _interpreter.active()
    vals = torch.cat([torch.linspace(-70000, 70000, 2**15 - 3), torch.tensor([float("nan"), float("inf"), -float("inf")])])
    for tl_dtype, dtype in ((tl.float8e4nv, torch.float8_e4m3fn), (tl.float8e5, torch.float8_e5m2)):
        src = interpreter.TensorHandle(vals.numpy(), tl.float32)
        got = interpreter.InterpreterBuilder.create_fp_to_fp(None, src, tl.block_type(tl_dtype, [vals.numel()]), None)
        big = torch.finfo(dtype).max
        want = vals.clamp(-big, big).to(dtype)
        got_t = torch.from_numpy(got.data).view(dtype)
        assert torch.equal(got_t[:-3].view(torch.uint8), want[:-3].view(torch.uint8))
        assert torch.isnan(got_t[-3].float()) and got_t[-2].float() == big and got_t[-1].float() == -big


def test_interpret_set_after_import_says_so():
    r = run_python("""
        import os, torch, gemmkit
        os.environ["TRITON_INTERPRET"] = "1"
        x = torch.randn(4, 8, dtype=torch.bfloat16)
        try:
            gemmkit.gemm_a16w16(x, x)
        except ValueError as e:
            print("ERR", e)
        """, "0")
    assert r.returncode == 0, r.stderr
    assert "ERR x: TRITON_INTERPRET=1 was set after gemmkit was imported" in r.stdout, r.stdout + r.stderr


def test_cpu_without_interpreter_raises_for_every_shape():
    """No silent torch fallback, also for the empty shapes that need no kernel (M = 0, K = 0)."""
    r = run_python("""
        import torch, gemmkit
        bf = torch.bfloat16
        cases = {"normal": ((4, 8), (5, 8)), "M=0": ((0, 8), (5, 8)), "K=0": ((4, 0), (5, 0)), "N=0": ((4, 8), (0, 8))}
        for name, (xs, ws) in cases.items():
            try:
                gemmkit.gemm_a16w16(torch.randn(xs, dtype=bf), torch.randn(ws, dtype=bf))
                print(name, "RETURNED")
            except ValueError as e:
                print(name, "ERR", str(e)[:60])
        try:
            gemmkit.ffn_gated(torch.randn(0, 8, dtype=bf), torch.randn(6, 8, dtype=bf), torch.randn(8, 3, dtype=bf))
            print("ffn M=0 RETURNED")
        except ValueError as e:
            print("ffn M=0 ERR", str(e)[:60])
        """, None)
    assert r.returncode == 0, r.stderr
    assert "RETURNED" not in r.stdout, r.stdout
    assert r.stdout.count("ERR x: CPU tensors run only in the Triton interpreter") == 5, r.stdout


@pytest.mark.parametrize("version,ok", [("3.6.0", True), ("3.7.1", True), ("3.8.0+git12ab", True), ("3.9.0", True),
                                        ("3.10.0rc1", False), ("3.5.1", False), ("4.0.0", False)])
def test_triton_version_range(version, ok):
    from gemmkit import _versions

    assert (_versions.triton_problem(version) is None) == ok


def test_unsupported_triton_is_refused_at_import():
    r = run_python("""
        import triton
        triton.__version__ = "3.10.0"
        try:
            import gemmkit
            print("IMPORTED")
        except ImportError as e:
            print("ERR", e)
        """, None)
    assert "ERR gemmkit supports Triton 3.6 to 3.9.x, but Triton 3.10.0 is installed" in r.stdout, r.stdout + r.stderr
    r = run_python("""
        import os, warnings, triton
        triton.__version__ = "3.10.0"
        os.environ["GEMMKIT_ALLOW_UNSUPPORTED_TRITON"] = "1"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            import gemmkit
        print("IMPORTED", [str(x.message)[:40] for x in w if "Triton 3.10.0" in str(x.message)])
        """, None)
    assert "IMPORTED ['gemmkit supports Triton 3.6 to 3.9.x, bu']" in r.stdout, r.stdout + r.stderr


def test_declared_versions_match_the_import_check():
    """pyproject.toml declares the Triton range that gemmkit._versions enforces."""
    import re

    from gemmkit import _versions

    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    lo, hi = ".".join(map(str, _versions.TRITON_MIN)), ".".join(map(str, _versions.TRITON_MAX))
    assert re.search(rf'"triton>={re.escape(lo)},<{re.escape(hi)}"', text), "pyproject's triton range"
