"""Target facts: one home for what the kernels and tools need to know about a GPU.

A `Target` names an architecture (the key of the config tables: ``sm_90``,
``gfx942``, ``gfx950``) and carries the numbers the kernels derive their
parameters from (warp size, XCD count, CU/SM count, shared memory per block,
register file) and the numbers the benchmarks compare against (dense peak
rates per dtype, HBM bandwidth). Peak rates and bandwidths are the vendors'
datasheet figures: leads for roofs, not measurements.

Nothing here touches a GPU at import time. `current()` reads the active torch
device when it is called; the CU/SM count comes from the device when there is
one and can be overridden (argument or ``GEMMKIT_NUM_CUS``), which tests use
to exercise small persistent grids.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

__all__ = ["Target", "TARGETS", "ARCHS", "get", "current", "current_or_none"]


@dataclass(frozen=True)
class Target:
    name: str  # product, e.g. "H200"
    arch: str  # config-table key: "sm_90", "gfx942", "gfx950"
    backend: str  # "cuda" or "hip" (Triton's backend names)
    warp_size: int
    num_xcds: int  # chiplets that own an L2 each; 1 on NVIDIA
    num_cus: int  # SMs (NVIDIA) or CUs (AMD)
    shared_mem_bytes: int  # largest shared memory / LDS one block may use
    regs_per_cu: int  # 32-bit registers per SM (NVIDIA) / VGPRs per SIMD lane (AMD, arch+acc)
    max_regs_per_thread: int
    peak_tflops: dict = field(default_factory=dict)  # dense, per input dtype name
    hbm_gbps: float = 0.0
    l2_bytes: int = 0
    # The FP8 E4M3 flavour the matrix units take (a torch dtype name): OCP float8_e4m3fn on
    # Hopper and gfx950, float8_e4m3fnuz (no negative zero, bias 8, max 240) on gfx942.
    fp8_e4m3: str = "float8_e4m3fn"

    @property
    def is_amd(self) -> bool:
        return self.backend == "hip"

    @property
    def is_nvidia(self) -> bool:
        return self.backend == "cuda"

    def gpu_target(self):
        """The `triton.backends.compiler.GPUTarget` to compile for this target on any machine."""
        from triton.backends.compiler import GPUTarget

        if self.is_nvidia:
            return GPUTarget("cuda", int(self.arch.split("_")[1]), self.warp_size)
        return GPUTarget("hip", self.arch, self.warp_size)

    def with_cus(self, num_cus: int) -> "Target":
        if int(num_cus) < 1:
            raise ValueError(f"num_cus: expected a positive integer, got {num_cus!r}")
        return dataclasses.replace(self, num_cus=int(num_cus))


# Datasheet figures (dense, no sparsity). TFLOP/s (TOP/s for int8).
_H100 = Target(
    name="H100", arch="sm_90", backend="cuda", warp_size=32, num_xcds=1, num_cus=132,
    shared_mem_bytes=232448,  # 227 KiB opt-in per block
    regs_per_cu=65536, max_regs_per_thread=255,
    peak_tflops={"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "int8": 1978.9, "tf32": 494.7, "fp32": 66.9},
    hbm_gbps=3350.0, l2_bytes=50 * 2**20,
)
TARGETS: dict[str, Target] = {
    "H100": _H100,
    "H200": dataclasses.replace(_H100, name="H200", hbm_gbps=4800.0, l2_bytes=60 * 2**20),
    "MI300X": Target(
        name="MI300X", arch="gfx942", backend="hip", warp_size=64, num_xcds=8, num_cus=304,
        shared_mem_bytes=64 * 1024,
        regs_per_cu=512, max_regs_per_thread=512,  # unified VGPR+AGPR file per SIMD lane
        peak_tflops={"bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "int8": 2614.9, "tf32": 653.7, "fp32": 163.4},
        hbm_gbps=5300.0, l2_bytes=4 * 2**20 * 8, fp8_e4m3="float8_e4m3fnuz",
    ),
    "MI355X": Target(
        name="MI355X", arch="gfx950", backend="hip", warp_size=64, num_xcds=8, num_cus=256,
        shared_mem_bytes=160 * 1024,
        regs_per_cu=512, max_regs_per_thread=512,
        peak_tflops={"bf16": 2516.6, "fp16": 2516.6, "fp8": 5033.2, "int8": 5033.2, "fp4": 10066.3, "fp32": 157.3},
        hbm_gbps=8000.0, l2_bytes=4 * 2**20 * 8,
    ),
}
# One representative target per config-table architecture (static compiles, `--arch`).
ARCHS: dict[str, Target] = {"sm_90": TARGETS["H200"], "gfx942": TARGETS["MI300X"], "gfx950": TARGETS["MI355X"]}


def get(name: str) -> Target:
    """A target by product name ("H200") or architecture ("sm_90", "gfx950")."""
    if name in TARGETS:
        return TARGETS[name]
    if name in ARCHS:
        return ARCHS[name]
    raise ValueError(f"arch: unknown target {name!r}; expected one of {sorted(TARGETS) + sorted(ARCHS)}")


def _num_cus_override(num_cus):
    if num_cus is not None:
        return int(num_cus)
    env = os.environ.get("GEMMKIT_NUM_CUS")
    return int(env) if env else None


def current(device=None, *, num_cus: int | None = None) -> Target:
    """The target of a torch CUDA/HIP device (default: the current one).

    Raises RuntimeError when there is no GPU and ValueError for an architecture
    gemmkit has no tables for.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("gemmkit.arch.current(): no CUDA/HIP device is available")
    props = torch.cuda.get_device_properties(device)
    if getattr(torch.version, "hip", None):
        arch = props.gcnArchName.split(":")[0]
        base = {"gfx942": TARGETS["MI300X"], "gfx950": TARGETS["MI355X"]}.get(arch)
    else:
        arch = f"sm_{props.major}{props.minor}"
        base = None
        if arch == "sm_90":
            base = TARGETS["H200"] if "H200" in props.name else TARGETS["H100"]
            base = dataclasses.replace(base, l2_bytes=getattr(props, "L2_cache_size", base.l2_bytes) or base.l2_bytes)
    if base is None:
        raise ValueError(
            f"device: {props.name} ({arch}) is not a gemmkit target; expected sm_90 (H100/H200), "
            "gfx942 (MI300X) or gfx950 (MI355X)")
    return base.with_cus(_num_cus_override(num_cus) or props.multi_processor_count)


def current_or_none(device=None):
    try:
        return current(device)
    except (RuntimeError, ValueError):
        return None
