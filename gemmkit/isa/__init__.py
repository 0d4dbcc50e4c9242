"""Static compilation for any target on any machine, and what the compiled code says.

`compile_static` compiles a Triton kernel for a `gemmkit.arch.Target` with
`triton.compile(ASTSource(...), target=GPUTarget(...))`: no GPU needed.
`resources` reads the result:
  AMD (gfx942, gfx950): VGPRs, AGPRs, SGPRs, scratch (spill) bytes and LDS from
    the assembler's own comments and metadata; occupancy in waves per SIMD
    computed from registers and LDS for the target (`amd_occupancy`); counts of
    the instructions the designs talk about (v_mfma, direct-to-LDS buffer loads,
    ds_read_b128, s_barrier, s_setprio, s_waitcnt, ...); from the TTGIR,
    `lds_unswizzled`: LDS buffers read into registers that have no swizzle
    (a `swizzled_shared` encoding with maxPhase = 1: rows at a 128-byte pitch
    then all fall in the same banks).
  sm_90: registers, stack/local bytes (spills) and shared memory from
    `cuobjdump --dump-resource-usage` on the cubin, and instruction counts from
    its SASS (HGMMA, QGMMA, HMMA, UTMALDG, LDGSTS, LDL/STL, BAR, GMMA_WAIT1). cuobjdump
    ships inside the Triton wheel.
  Both: `mma_k_steps`, the matrix-instruction work in the code divided by one
    K step of the tile (BLOCK_M x BLOCK_N x BLOCK_K per CTA): a positive
    integer when every instruction belongs to whole K steps (the main loop plus
    the copies the software pipeliner peels off).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

__all__ = ["compile_static", "resources", "amd_occupancy", "AMD_COUNTS", "SM90_COUNTS"]

# Instruction classes counted per target: name -> regex on one assembly line.
AMD_COUNTS = {
    "v_mfma": r"^\s*v_mfma\w*",
    "v_mfma_scale": r"^\s*v_mfma_scale\w*",  # MX-scaled MFMA (tl.dot_scaled on gfx950), also in v_mfma
    "buffer_load_lds": r"^\s*buffer_load_\w+.*\blds\b",  # direct-to-LDS (cdna3/4)
    "global_load_lds": r"^\s*global_load_lds_\w+",  # direct-to-LDS (gfx950)
    "buffer_load": r"^\s*buffer_load_\w+",
    "global_load": r"^\s*global_load_\w+",
    # 16-byte loads into registers, and into LDS (gfx950 from Triton 3.8): kernels/triton/gemm_rows.py's AMD promise
    "global_load_dwordx4": r"^\s*global_load_dwordx4\b",
    "global_load_lds_dwordx4": r"^\s*global_load_lds_dwordx4\b",
    "ds_read_b128": r"^\s*ds_read_b128\b",
    "ds_write": r"^\s*ds_write\w*",
    "s_barrier": r"^\s*s_barrier\b",
    "s_setprio": r"^\s*s_setprio\b",
    "s_waitcnt": r"^\s*s_waitcnt\b",
    "v_cvt_pk_fp8": r"^\s*v_cvt_pk_fp8_f32\b",  # fp32 -> fp8 in hardware: gfx942 (e4m3fnuz)
    "v_cvt_scalef32_pk_fp8": r"^\s*v_cvt_scalef32_pk_fp8_f32\b",  # gfx950 (OCP e4m3fn)
}
SM90_COUNTS = {
    "HGMMA": r"\bHGMMA\.",
    "QGMMA": r"\bQGMMA\.",
    "IGMMA": r"\bIGMMA\.",
    "HMMA": r"\bHMMA\.",
    "IMMA": r"\bIMMA\.",
    "UTMALDG": r"\bUTMALDG\b",
    "UTMASTG": r"\bUTMASTG\b",
    "LDGSTS": r"\bLDGSTS\b",
    "LDGSTS128": r"\bLDGSTS(\.\w+)*\.128\b",  # 16-byte cp.async copies (kernels/triton/gemm_rows.py's promise)
    "LDG128": r"\bLDG(\.\w+)*\.128\b",  # 16-byte loads and stores (kernels/triton/_splitk_reduce.py's promise)
    "STG128": r"\bSTG(\.\w+)*\.128\b",
    "LDL": r"\bLDL\b",
    "STL": r"\bSTL\b",
    "BAR": r"\bBAR\.",
    "F2FP_E4M3": r"\bF2FP\.SATFINITE\.E4M3\b",  # fp32 -> fp8 e4m3 in hardware
    # warpgroup_mma_wait(1): wait until at most one wgmma group is in flight (a chain kept running while
    # the one before is used). ptxas writes `WARPGROUP.DEPBAR.LE gsb0, 0x1`; when it serializes the wgmma
    # (warning C7514) only `0x0` waits are left.
    "GMMA_WAIT1": r"\bWARPGROUP\.DEPBAR\.LE gsb0, 0x1\b",
}
_AMD_MMA = re.compile(r"^\s*v_mfma_\w*?_(\d+)x(\d+)x(\d+)", re.M)
_SM90_GMMA = re.compile(r"\b[HQI]GMMA\.(\d+)x(\d+)x(\d+)")
_SM90_HMMA = re.compile(r"\b[HI]MMA\.(\d{2})(\d)(\d{1,2})\b")  # HMMA.16816 = m16 n8 k16, HMMA.1688 = m16 n8 k8
# Bump when the analysis (what `resources` reads) changes: it is part of the report cache key.
ANALYSIS_VERSION = 11


def compile_static(kernel, signature: dict, constexprs: dict, target, options: dict, divisible=()):
    """Compile a Triton or Gluon kernel (`@gluon.jit`, told apart by `is_gluon()`) for `target`."""
    import triton
    from triton.compiler import ASTSource

    names = list(signature)
    attrs = {(names.index(k),): [["tt.divisibility", 16]] for k in divisible}
    if getattr(kernel, "is_gluon", lambda: False)():
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        Source = ASTSource
    src = Source(kernel, signature, constexprs, attrs=attrs)
    from ..launcher import COMPILE_OPTIONS  # the options every launch compiles with

    return triton.compile(src, target=target.gpu_target(), options={**COMPILE_OPTIONS, **options})


def _amd_field(asm: str, name: str) -> int:
    m = re.search(rf";\s*{name}:\s*(\d+)", asm)
    return int(m.group(1)) if m else -1


def _cuobjdump():
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def amd_occupancy(vgpr_total: int, lds_bytes: int, num_warps: int, target) -> int:
    """Waves per SIMD one kernel can keep resident on a CDNA3/4 CU.

    Registers: each SIMD lane has `target.regs_per_cu` (512) unified VGPR+AGPR
    slots, allocated in granules of 8: waves = 512 // roundup(vgprs, 8), at most 8.
    LDS: a CU holds floor(LDS / lds_bytes) workgroups of `num_warps` waves spread
    over its 4 SIMDs.
    """
    granule = 8
    regs = max(granule, -(-max(vgpr_total, 1) // granule) * granule)
    by_regs = min(8, target.regs_per_cu // regs)
    by_lds = 8 if lds_bytes <= 0 else (target.shared_mem_bytes // lds_bytes) * num_warps // 4
    return max(0, min(by_regs, by_lds))


def _mma_work(asm: str, target) -> int:
    """Sum of m*n*k over the matrix instructions in the code (per wave / warpgroup / warp)."""
    if target.is_amd:
        return sum(int(m) * int(n) * int(k) for m, n, k in _AMD_MMA.findall(asm))
    return (sum(int(m) * int(n) * int(k) for m, n, k in _SM90_GMMA.findall(asm)),
            sum(int(m) * int(n) * int(k) for m, n, k in _SM90_HMMA.findall(asm)))


def mma_k_steps(asm: str, target, block: tuple, num_warps: int) -> float:
    """Matrix-instruction work in the code / one K step of the tile, per issuing unit.

    One K step is BM*BN*BK multiply-adds per CTA, split over the issuing units:
    waves on AMD (num_warps of them), warpgroups for wgmma (num_warps / 4), warps
    for mma.sync (num_warps). A whole number means the tile arithmetic is all there.
    """
    bm, bn, bk = block
    per_step = bm * bn * bk
    if target.is_amd:
        return _mma_work(asm, target) / (per_step / num_warps)
    gmma, hmma = _mma_work(asm, target)
    if gmma:
        return gmma / (per_step / max(1, num_warps // 4))
    return hmma / (per_step / num_warps)


_IDENTITY_SWIZZLE = re.compile(r"^(#shared\w*) = #ttg\.swizzled_shared<\{vec = \d+, perPhase = \d+, maxPhase = 1,", re.M)


def lds_unswizzled(ttgir: str) -> int:
    """`ttg.local_load`s (LDS -> registers) from a buffer whose shared encoding has no swizzle (maxPhase = 1)."""
    names = set(_IDENTITY_SWIZZLE.findall(ttgir))
    return sum(1 for line in ttgir.splitlines() if "ttg.local_load" in line
               and any(re.search(re.escape(n) + r"\b", line) for n in names))


def resources(compiled, target, block: tuple | None = None) -> dict:
    """Registers, spills, shared memory, occupancy and instruction counts of a compiled kernel."""
    md = compiled.metadata
    out = {"arch": target.arch, "lds_bytes": md.shared, "num_warps": md.num_warps}
    if target.is_amd:
        asm = compiled.asm["amdgcn"]
        counts = {k: len(re.findall(p, asm, re.M)) for k, p in AMD_COUNTS.items()}
        counts["lds_unswizzled"] = lds_unswizzled(compiled.asm.get("ttgir", ""))
        vgpr_total = _amd_field(asm, "TotalNumVgprs")
        out.update(vgpr=_amd_field(asm, "NumVgprs"), agpr=_amd_field(asm, "NumAgprs"),
                   sgpr=_amd_field(asm, "TotalNumSgprs"), vgpr_total=vgpr_total,
                   spill_bytes=_amd_field(asm, "ScratchSize"),
                   occupancy=amd_occupancy(vgpr_total, md.shared, md.num_warps, target),
                   compiler_occupancy=_amd_field(asm, "Occupancy"), counts=counts)
    else:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(compiled.asm["cubin"])
            f.flush()
            usage = subprocess.run([_cuobjdump(), "--dump-resource-usage", f.name],
                                   capture_output=True, text=True, check=True).stdout
            asm = subprocess.run([_cuobjdump(), "--dump-sass", f.name],
                                 capture_output=True, text=True, check=True).stdout
        reg = re.search(r"REG:(\d+)", usage)
        stack = re.search(r"STACK:(\d+)", usage)
        local = re.search(r"LOCAL:(\d+)", usage)
        counts = {k: len(re.findall(p, asm)) for k, p in SM90_COUNTS.items()}
        regs = int(reg.group(1)) if reg else -1
        # Resident warps per SM: 64K registers (allocated per warp in 256-register units), at most 64 warps.
        per_warp = -(-max(regs, 1) * 32 // 256) * 256
        occupancy = min(64, 65536 // per_warp // md.num_warps * md.num_warps,
                        (target.shared_mem_bytes // md.shared if md.shared else 64) * md.num_warps)
        out.update(vgpr=regs, agpr=0, sgpr=0, spill_bytes=(int(stack.group(1)) if stack else 0) +
                   (int(local.group(1)) if local else 0), occupancy=occupancy, counts=counts)
    if block is not None:
        out["mma_k_steps"] = mma_k_steps(asm, target, block, md.num_warps)
    return out
