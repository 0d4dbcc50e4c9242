"""Can the Triton tier use thread-block clusters (and so TMA multicast) on sm_90? cuBLAS's kernels on most rows we
trail run 2-CTA clusters (benchmarks/vendor_kernels.py). This compiles one descriptor-load tl.dot kernel for sm_90
(no GPU needed) with num_ctas = 1 and 2 and prints, per setting, whether it compiled, the TMA copy forms in the PTX
and whether any is a multicast; then the parameters of Gluon's Hopper TMA copy (a multicast would need a CTA-mask
parameter). Triton 3.6.0 (2026-11-22): num_ctas = 2 does not compile ("PassManager::run failed"; the MLIR dump on stderr
names ConvertTritonGPUToLLVM); the Gluon copy takes
(tensor_desc, coord, barrier, result, pred): no multicast.

Session 11 adds a Gluon kernel launched as a 2-CTA cluster (num_ctas = 2), its TMA copy into a shared buffer whose
CGA layout either gives both CTAs the same box (`cga_layout=[[0, 0]]`: what a multicast would serve) or splits it
between them (`[[64, 0]]`), each case in a child process (the compiler aborts the process on the second). Triton
3.6.0 (2026-11-22): the broadcast layout compiles to one plain copy per CTA (no `.multicast::cluster`); the split
layout aborts in LLVM ("Layout is expected to be surjective"). So neither tier can load one tile once for two
CTAs, the traffic saving cuBLAS's 2-CTA-cluster kernels have (docs/PERF.md, session 8).

Usage: python benchmarks/probe_num_ctas.py
"""
import re
import subprocess
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def _tile(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, [N, K], [K, 1], [BN, BK])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in tl.range(0, K, BK, num_stages=4):
        acc = tl.dot(a_d.load([pid_m * BM, k]), b_d.load([pid_n * BN, k]).T, acc)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))


def main():
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "M": "i32", "N": "i32", "K": "i32"}
    print(f"triton {triton.__version__}, sm_90, 256 x 128 x 64 tile, 8 warps")
    for num_ctas in (1, 2):
        src = ASTSource(_tile, sig, {"BM": 256, "BN": 128, "BK": 64})
        try:
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_ctas": num_ctas})
        except Exception as e:  # the compiler's own error, first line
            print(f"num_ctas={num_ctas}: does not compile: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
            continue
        forms = sorted(set(re.findall(r"cp\.async\.bulk\.tensor[\w.:]*", k.asm["ptx"])))
        print(f"num_ctas={num_ctas}: compiles; TMA copies {forms}; multicast: {any('multicast' in f for f in forms)}")
    import inspect

    from triton.experimental.gluon.language.nvidia.hopper import tma

    params = [p for p in inspect.signature(tma.async_copy_global_to_shared).parameters if not p.startswith("_")]
    print(f"gluon hopper tma.async_copy_global_to_shared{tuple(params)}")
    for num_ctas, cga in ((1, []), (2, [[0, 0]]), (2, [[64, 0]])):
        try:
            r = subprocess.run([sys.executable, __file__, "--gluon-case", str(num_ctas), repr(cga)],
                               capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            print(f"gluon num_ctas={num_ctas} cga_layout={cga}: no answer in 600 s")
            continue
        lines = (r.stdout.strip() or r.stderr.strip()).splitlines()
        why = next((ln for ln in lines if "ERROR" in ln or "error" in ln), lines[-1] if lines else "no output")
        print(f"gluon num_ctas={num_ctas} cga_layout={cga}: " + (r.stdout.strip() if r.returncode == 0 else
                                                                  f"exit {r.returncode}: {why[:200]}"))


def gluon_case(num_ctas: int, cga: list):
    """One TMA copy of a 128 x 64 bf16 box into shared memory laid out with `cga`, read back, in a num_ctas
    cluster; prints the TMA copy forms in the PTX."""
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

    @gluon.jit
    def copy_box(a_desc, out_ptr, BM: gl.constexpr, BK: gl.constexpr, L: gl.constexpr):
        smem = gl.allocate_shared_memory(gl.bfloat16, [BM, BK], a_desc.layout)
        bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        mbarrier.init(bar, count=1)
        mbarrier.expect(bar, a_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [0, 0], bar, smem)
        mbarrier.wait(bar, 0)
        v = smem.load(L)
        offs_m = gl.arange(0, BM, layout=gl.SliceLayout(1, L))
        offs_k = gl.arange(0, BK, layout=gl.SliceLayout(0, L))
        gl.store(out_ptr + offs_m[:, None] * BK + offs_k[None, :], v)

    lay = gl.NVMMASharedLayout(128, 16, 2, cga_layout=cga)
    sig = {"a_desc": f"tensordesc<bf16[128, 64],{lay!r}>", "out_ptr": "*bf16"}
    ce = {"BM": 128, "BK": 64, "L": gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0], cga_layout=cga)}
    k = triton.compile(GluonASTSource(copy_box, sig, ce), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4, "num_ctas": num_ctas})
    copies = re.findall(r"cp\.async\.bulk\.tensor[\w.:]*", k.asm["ptx"])
    print(f"compiles; {len(copies)} TMA copy instruction(s) in the PTX (each CTA runs its own), forms "
          f"{sorted(set(copies))}; multicast: {any('multicast' in f for f in copies)}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--gluon-case"]:
        import ast

        gluon_case(int(sys.argv[2]), ast.literal_eval(sys.argv[3]))
    else:
        main()
