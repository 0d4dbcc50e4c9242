"""Can the Triton tier use thread-block clusters (and so TMA multicast) on sm_90? cuBLAS's kernels on most rows we
trail run 2-CTA clusters (benchmarks/vendor_kernels.py). This compiles one descriptor-load tl.dot kernel for sm_90
(no GPU needed) with num_ctas = 1 and 2 and prints, per setting, whether it compiled, the TMA copy forms in the PTX
and whether any is a multicast; then the parameters of Gluon's Hopper TMA copy (a multicast would need a CTA-mask
parameter). Triton 3.6.0 (2026-11-22): num_ctas = 2 does not compile ("PassManager::run failed"; the MLIR dump on stderr
names ConvertTritonGPUToLLVM); the Gluon copy takes
(tensor_desc, coord, barrier, result, pred): no multicast.

Usage: python benchmarks/probe_num_ctas.py
"""
import re

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


if __name__ == "__main__":
    main()
