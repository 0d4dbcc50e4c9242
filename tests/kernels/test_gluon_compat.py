"""The Gluon compatibility layer (gemmkit/kernels/gluon/_compat.py): the Gluon names that moved between Triton
3.6 and 3.9 (TMA / cp.async copies, shared_memory_descriptor reinterpret, the CTA barrier), resolved once at import.

Three checks, each on the installed Triton: the names resolve to that Triton's own builtins (the new spelling when
it has one: 3.9 keeps the old TMA / cp.async names as stubs that raise when compiled); no kernel file spells a moved
name itself (a source scan); and a small probe kernel that calls every compat name compiles (sm_90 and gfx942, CPU
static compiles in a fresh process without TRITON_INTERPRET: a few seconds). The shipped kernels' compiles are
`gemmkit isa`'s (and test_hopper_pingpong_fp8_isa.py's).
"""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gemmkit.kernels.gluon import _compat

GLUON_DIR = Path(_compat.__file__).resolve().parent

# ours -> (the module it comes from, the new name, the old name)
BUILTINS = {
    "tma_load": ("triton.experimental.gluon.language.nvidia.hopper.tma", "async_load", "async_copy_global_to_shared"),
    "tma_store": ("triton.experimental.gluon.language.nvidia.hopper.tma", "async_store", "async_copy_shared_to_global"),
    "cp_async_load": ("triton.experimental.gluon.language.nvidia.ampere.async_copy", "async_load",
                      "async_copy_global_to_shared"),
    "barrier": ("triton.experimental.gluon.language", "barrier", "thread_barrier"),
}
# Names only _compat.py may use: every spelling, old and new, of what moved (as an attribute, an imported name or a
# bare name), so a kernel cannot pick one spelling and compile on one Triton only.
MOVED = {"async_copy_global_to_shared", "async_copy_shared_to_global", "async_load", "async_store", "_reinterpret",
         "reinterpret", "thread_barrier", "barrier"}


@pytest.mark.parametrize("ours", sorted(BUILTINS))
def test_builtin_names_are_the_installed_tritons(ours):
    import importlib

    module, new, old = BUILTINS[ours]
    mod = importlib.import_module(module)
    fn = getattr(_compat, ours)
    want = getattr(mod, new, None) or getattr(mod, old)
    assert fn is want, (ours, fn, want)
    assert callable(fn) and getattr(fn, "__triton_builtin__", False), f"{ours} is not a Triton builtin: {fn!r}"
    used = new if hasattr(mod, new) else old
    assert _compat.RESOLVED[ours].endswith("." + used), (ours, _compat.RESOLVED[ours], used)


def test_reinterpret_calls_the_method_the_installed_triton_has():
    from triton.experimental.gluon import language as gl

    method = "reinterpret" if hasattr(gl.shared_memory_descriptor, "reinterpret") else "_reinterpret"
    assert callable(getattr(gl.shared_memory_descriptor, method))
    assert _compat.RESOLVED["reinterpret"] == f"shared_memory_descriptor.{method}"
    src = _compat.reinterpret.src if hasattr(_compat.reinterpret, "src") else _compat.reinterpret.fn.__code__
    assert f"smem.{method}(" in str(src), src


def moved_names_used(source: str) -> list:
    """(line, name) of each moved name `source` uses in code (attribute, bare name, import); docstrings and
    comments do not count."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in MOVED:
            hits.append((node.lineno, node.attr))
        elif isinstance(node, ast.Name) and node.id in MOVED:
            # a bare `barrier` / `reinterpret` is ours once imported from _compat; anything else is not
            hits.append((node.lineno, node.id))
        elif isinstance(node, ast.ImportFrom) and node.module != "_compat" and (node.level, node.module) != (1, "_compat"):
            hits += [(node.lineno, a.name) for a in node.names if a.name in MOVED]
        elif isinstance(node, (ast.FunctionDef, ast.arg)):
            name = node.name if isinstance(node, ast.FunctionDef) else node.arg
            if name in MOVED:
                hits.append((node.lineno, name))
    return hits


def _imported_from_compat(source: str) -> set:
    return {a.asname or a.name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module == "_compat" for a in node.names}


def test_the_scan_sees_a_moved_name():
    """The scan below can fail: each spelling, in each form, is found; a docstring or comment is not."""
    assert moved_names_used("tma.async_copy_global_to_shared(d, c, b, s)") == [(1, "async_copy_global_to_shared")]
    assert moved_names_used("x = s._reinterpret(gl.int32, [1], l)") == [(1, "_reinterpret")]
    assert moved_names_used("gl.barrier()") == [(1, "barrier")]
    assert moved_names_used("from triton.experimental.gluon.language.nvidia.hopper.tma import async_load") == \
        [(1, "async_load")]
    assert moved_names_used('"""tma.async_copy_global_to_shared(...)"""  # gl.thread_barrier()') == []


def test_kernel_files_use_no_moved_name_directly():
    """Every kernel file reaches a moved name through _compat only (no version checks outside it)."""
    files = sorted(p for p in GLUON_DIR.glob("*.py") if p.name != "_compat.py")
    assert any(p.name == "hopper_parts.py" for p in files) and any(p.name == "cdna_pingpong.py" for p in files)
    bad, users = [], 0
    for path in files:
        source = path.read_text()
        ours = _imported_from_compat(source)
        users += bool(ours)
        bad += [f"{path.name}:{line}: {name}" for line, name in moved_names_used(source) if name not in ours]
        assert "__version__" not in source, f"{path.name}: a Triton version check outside _compat.py"
    assert not bad, "moved Gluon names used outside _compat.py:\n" + "\n".join(bad)
    assert users >= 5, users  # hopper_parts, hopper_pingpong, hopper_fp8_parts, hopper_fp8_mainloop, cdna_pingpong


# ----------------------------------------------------------------------------- a probe kernel, compiled

PROBE = '''
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from gemmkit.kernels.gluon._compat import barrier, cp_async_load, reinterpret, tma_load, tma_store


@gluon.jit
def nvidia_probe(in_desc, out_desc, v_ptr, o_ptr, BM: gl.constexpr, BN: gl.constexpr):
    tile = gl.allocate_shared_memory(in_desc.dtype, [BM, BN], in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), BM * BN * 2)
    tma_load(in_desc, [0, 0], bar.index(0), tile)
    mbarrier.wait(bar.index(0), 0)
    tma_store(out_desc, [0, 0], tile)
    tma.store_wait(0)
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    flat: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[0])
    v = gl.allocate_shared_memory(gl.float32, [128], flat)
    offs = gl.arange(0, 128, layout=layout)
    cp_async_load(v, v_ptr + offs)
    async_copy.commit_group()
    async_copy.wait_group(0)
    barrier()
    shape: gl.constexpr = [128]
    gl.store(o_ptr + offs, reinterpret(v, gl.int32, shape, flat).load(layout))


@gluon.jit
def amd_probe(x_ptr, y_ptr):
    layout: gl.constexpr = gl.BlockedLayout([1], [64], [4], [0])
    offs = gl.arange(0, 256, layout=layout)
    x = gl.load(x_ptr + offs)
    barrier()
    gl.store(y_ptr + offs, x + 1.0)
'''

_CHILD = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from triton.experimental.gluon import language as gl
from gemmkit import arch
from gemmkit.isa import compile_static
import gluon_compat_probe as p
layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
desc = f"tensordesc<bf16[64, 64],{layout!r}>"
sig = {"in_desc": desc, "out_desc": desc, "v_ptr": "*fp32", "o_ptr": "*i32", "BM": "constexpr", "BN": "constexpr"}
nv = compile_static(p.nvidia_probe, sig, {"BM": 64, "BN": 64}, arch.ARCHS["sm_90"], {"num_warps": 4}, ())
amd = compile_static(p.amd_probe, {"x_ptr": "*fp32", "y_ptr": "*fp32"}, {}, arch.ARCHS["gfx942"], {"num_warps": 4}, ())
print(json.dumps({"ptx": nv.asm["ptx"], "amdgcn": amd.asm["amdgcn"]}))
'''


def test_a_probe_kernel_through_the_compat_names_compiles(tmp_path):
    """Every compat name in one small kernel, compiled for sm_90 (TMA load + store, cp.async, reinterpret, barrier)
    and gfx942 (barrier) on the installed Triton: the PTX holds the TMA and cp.async copies, the AMDGCN an
    s_barrier."""
    (tmp_path / "gluon_compat_probe.py").write_text(PROBE)
    env = dict(os.environ, TRITON_INTERPRET="0", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    ptx, amdgcn = out["ptx"], out["amdgcn"]
    # TMA load: shared::cluster.global (3.6), shared::cta.global (3.9)
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.mbarrier", ptx), "no TMA load in the PTX"
    assert re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::\w+", ptx), "no TMA store in the PTX"
    assert "cp.async.ca.shared.global" in ptx or "cp.async.cg.shared.global" in ptx, "no cp.async in the PTX"
    assert "bar.sync" in ptx or "barrier.sync" in ptx, "no CTA barrier in the PTX"
    assert "s_barrier" in amdgcn, "no s_barrier in the AMDGCN"
