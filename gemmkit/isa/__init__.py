"""Static compilation for any target on any machine, and what the compiled code says.

`compile_static` compiles a Triton kernel for a `gemmkit.arch.Target` with
`triton.compile(ASTSource(...), target=GPUTarget(...))`: no GPU needed.
`resources` reads registers, spills and shared memory out of the result:
AMD from the AMDGCN assembler's own comments, sm_90 from `cuobjdump
--dump-resource-usage` on the cubin (cuobjdump ships in the Triton wheel).
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

__all__ = ["compile_static", "resources"]


def compile_static(kernel, signature: dict, constexprs: dict, target, options: dict, divisible=()):
    import triton
    from triton.compiler import ASTSource

    names = list(signature)
    attrs = {(names.index(k),): [["tt.divisibility", 16]] for k in divisible}
    src = ASTSource(kernel, signature, constexprs, attrs=attrs)
    return triton.compile(src, target=target.gpu_target(), options=options)


def _amd_field(asm: str, name: str) -> int:
    m = re.search(rf";\s*{name}:\s*(\d+)", asm)
    return int(m.group(1)) if m else -1


def _cuobjdump():
    import triton

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def resources(compiled, target) -> dict:
    """Registers, spills and shared memory of a compiled kernel, plus matrix-instruction counts."""
    md = compiled.metadata
    out = {"arch": target.arch, "shared_bytes": md.shared, "num_warps": md.num_warps}
    if target.is_amd:
        asm = compiled.asm["amdgcn"]
        out.update(vgpr=_amd_field(asm, "NumVgprs"), agpr=_amd_field(asm, "NumAgprs"),
                   sgpr=_amd_field(asm, "TotalNumSgprs"), vgpr_total=_amd_field(asm, "TotalNumVgprs"), spill_bytes=_amd_field(asm, "ScratchSize"),
                   occupancy=_amd_field(asm, "Occupancy"),
                   mfma=len(re.findall(r"^\s*v_mfma", asm, re.M)))
    else:
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(compiled.asm["cubin"])
            f.flush()
            usage = subprocess.run([_cuobjdump(), "--dump-resource-usage", f.name],
                                   capture_output=True, text=True, check=True).stdout
            sass = subprocess.run([_cuobjdump(), "--dump-sass", f.name],
                                  capture_output=True, text=True, check=True).stdout
        reg = re.search(r"REG:(\d+)", usage)
        stack = re.search(r"STACK:(\d+)", usage)
        local = re.search(r"LOCAL:(\d+)", usage)
        out.update(regs=int(reg.group(1)) if reg else -1,
                   spill_bytes=(int(stack.group(1)) if stack else 0) + (int(local.group(1)) if local else 0),
                   hgmma=len(re.findall(r"\bHGMMA\b", sass)), hmma=len(re.findall(r"\bHMMA\b", sass)),
                   utmaldg=len(re.findall(r"\bUTMALDG\b", sass)), ldgsts=len(re.findall(r"\bLDGSTS\b", sass)),
                   ldl_stl=len(re.findall(r"\b(?:LDL|STL)\b", sass)))
    return out
