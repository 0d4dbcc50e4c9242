"""Per-Triton-version register and shared-memory budgets: the one table of where a supported Triton release
allocates differently from Triton 3.6 (on which every kernel here was written and measured), and what gemmkit
does about it so that every shipped config keeps its promises (0 spills, shared memory within the bound) on
every supported release (issue 33).

The kernels are the same source on every release (Gluon names that moved: kernels/gluon/_compat.py); what
changes is what the compiler makes of them: LLVM's order of the epilogue arithmetic (Triton 3.7 on), ptxas's
register target (3.7 on), the AMD pipeliner's direct-to-LDS loads on gfx950 (3.8 on). Measured with
`gemmkit isa --arch all --op all` on Triton 3.6.0, 3.7.1, 3.8.0 and 3.9.0, plus every epilogue of each
full-accumulator Gluon tile (tests/data/triton_budgets.json holds the measurements, taken by
tests/data/measure_triton_budgets.py; tests/kernels/test_budgets.py checks that the rules below cover every spill
and every shared-memory excess measured there, and counts the measured cases a rule covers that did not spill).

  rule              releases  what                                     what gemmkit does (where)
  GLUON_EPILOGUE    >= 3.7    the Hopper Gluon 16-bit kernels with a   `gluon_epilogue_unsupported`: the dispatch
                              full accumulator (128 fp32 registers a   passes over the Gluon kernel for that call
                              consumer thread) spill under some gelu / (ops/dispatch.py) and the Triton tier serves
                              gelu_tanh / silu epilogues (8 B - 2.7 KB it with the same config; `gemmkit isa`
                              ; which ones: per release)               compiles the heaviest epilogue the dispatch
  GLUON_FP32_BIAS   >= 3.9    ... and with a bias into an fp32 y at    still sends (`isa_epilogue`) and names the
                              BLOCK_SIZE_N 256, whatever activation    ones it sends to the Triton tier, or skips
  FP8_BIAS          >= 3.8    the fp8 kernel (per-token x per-channel  a case it sends none of
                              scales), full accumulator, a bias into
                              an fp32 y
  FP8_COOP          >= 3.9    ... in the cooperative layout: any call
  SM90_MAXNREG      >= 3.7    five sm_90 Triton-tier tiles of < 64     `triton_options`: compiled with maxnreg 255
                              rows (mma.sync; SM90_MAXNREG_TILES)      (kernels/_host.compiler_options, launch and
                              spill 8-16 bytes: ptxas aims at a        static compile alike): given the directive,
                              register count below what they need      ptxas allocates what the code needs
  GFX950_STAGES     >= 3.7    gfx950 Triton-tier tiles whose fp32      `triton_options`: 1 stage; afp4's 256-wide
                              accumulator fills 128 VGPRs a lane       K step also halves (`triton_config`)
                              (256 x 256, 8 waves) spill 44-156 B
  CDNA_K_HALVES     >= 3.7    gfx950's CDNA ping-pong spills 84-188 B  `cdna_k_halves`: each compute stage reads
                                                                       its K tile from LDS in two halves
  GFX950_DIRECT_LDS >= 3.8    gfx950 Triton tier: the pipeliner loads  `amd_lds_bytes`: the LDS bound counts
                              straight into LDS: num_stages tiles in   num_stages tiles and their padding (under
                              LDS, not num_stages - 1                  1/32 of a stage) instead of num_stages - 1
  TMA_STORE_SLACK   >= 3.8    sm_90 3-D TMA store (batched): up to     `tma_slack`: the TMA bound's slack grows by
                              BLOCK_N x out bytes more shared memory   a row of the output tile
  SHIFT_FULL_ACC    >= 3.9    the Hopper Gluon dense kernels' shifted  `shift_ok`: those tiles load and store
                              last tiles (hopper_parts.tile_origin)    where their last tiles lie, as before the
                              spill 8-136 B with a bias + gelu_tanh    shift (kernels/_host.shift_last_tiles; the
                              epilogue at full accumulators (128 x     dispatch then copies x / w as before:
                              256 / 64 x 256 / 256 x 128 coop)         ops/dispatch.py SHIFTED_KERNELS)
  TAIL_COOP_WIDE    >= 3.9    the cooperative 128 x 256 tile's tail    `tail_split_ok`: no tail split there (the
                              split variant (hopper_coop.py TAIL)      launch runs whole tiles; `gemmkit isa`
                              spills 112 B with bias + gelu_tanh       compiles no such case)

The gated tile (ops/dispatch.gated: the gate's and the up's accumulators, counted together by `consumer_acc_regs`)
is a 16-bit tile under GLUON_EPILOGUE like any other: on 3.9 a gelu into a bf16 h spills 128 - 144 B at two 64-register
accumulators (the coop 128 x 128, the ping-pong's 64 x 128 and 128 x 64); 3.6 - 3.8 0 B with every activation.

Every function takes `version` ((major, minor); default: the installed Triton, or 3.6 while GEMMKIT_BUDGETS_OFF
is set: the compiler's own allocation, for measuring) so the rules can be asked about any release (the tests,
`gemmkit isa` reports). On Triton 3.6 no rule applies: its compiled code is byte-for-byte what it was before
this table existed (checked for every sm_90 SASS and AMD AMDGCN case of `gemmkit isa`).

Constraints:
  - Host code only: no torch, no device code; kernels/_host.py, the Triton tier's host modules, the Gluon
    kernels' plans and ops/dispatch.py ask here; nothing here imports them.
  - A rule says what was measured (releases, kernels, configs); a release newer than the newest measured one
    (3.9) gets the rules of the newest, until it is measured.
"""
from __future__ import annotations

import functools
import os

from .._versions import parse

NEWEST_MEASURED = (3, 9)
BASELINE = (3, 6)  # the release every kernel was written and measured on: no rule applies
# Set (to anything but "" / "0") before a process asks: every rule answers as on BASELINE, whatever Triton is
# installed (what tests/data/measure_triton_budgets.py measures: the compiler's own allocation).
OFF_ENV = "GEMMKIT_BUDGETS_OFF"
GLUON_ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")
# The fused epilogues (has_bias, activation) in the order `gemmkit isa` tries them for a Gluon case: bias + gelu (the
# erfc fit, kernels/triton/_epilogue.py: what the Gluon static cases compile wherever the dispatch sends it to them),
# then the others, more arithmetic first (which one spills is the compiler's call, not a strict order).
EPILOGUE_ORDER = ((True, "gelu"), (True, "gelu_tanh"), (True, "silu"), (False, "gelu"), (False, "gelu_tanh"),
                  (False, "silu"), (True, "relu"), (True, "none"), (False, "relu"), (False, "none"))
# The gated tile's (a config with "gated": ops/dispatch.gated): no bias, an activation on the gate, heaviest first.
GATED_EPILOGUE_ORDER = ((False, "gelu"), (False, "gelu_tanh"), (False, "silu"), (False, "relu"))
FULL_ACC_REGS = 128  # fp32 accumulator registers per consumer thread that the Hopper Gluon kernels allow (the most)
# Triton 3.6's own spills, outside `gemmkit isa`'s cases (which compile bias + gelu: 0 spills): full-accumulator Gluon
# tiles with a gelu without a bias (8 bytes, bf16 y, most tiles) and a gelu_tanh without a bias at 128 x 128 x 64 with
# 6 stages (168 bytes). No rule covers them: on 3.6 nothing changes (a rule would send those calls to the Triton tier
# on the GPU release gemmkit is measured on; tests/data/triton_budgets.json lists each). A newer release's rules cover
# what it spills beyond these (the same epilogue of the same tile spilling no more than on 3.6 is left as on 3.6).


@functools.lru_cache(maxsize=None)
def installed() -> tuple[int, int]:
    """(major, minor) of the installed Triton."""
    import triton

    return parse(triton.__version__)


def _v(version) -> tuple[int, int]:
    if version is None:
        return BASELINE if os.environ.get(OFF_ENV, "") not in ("", "0") else installed()
    return parse(version) if isinstance(version, str) else tuple(version)


def _since(version, first: tuple) -> bool:
    return _v(version) >= first


def epilogue_name(has_bias: bool, activation: str) -> str:
    """"bias + gelu", "gelu", "bias", "no bias, no activation"."""
    if activation == "none":
        return "bias" if has_bias else "no bias, no activation"
    return ("bias + " if has_bias else "") + activation


def version_name(version=None) -> str:
    v = _v(version)
    return f"Triton {v[0]}.{v[1]}"


# ----------------------------------------------------------------------------- Hopper Gluon epilogues

def shift_ok(acc_regs: int, version=None) -> bool:
    """Whether the Hopper Gluon dense kernels shift their last tiles back (hopper_parts.tile_origin) for a tile of
    `acc_regs` fp32 accumulator registers a consumer thread (`consumer_acc_regs`) under `version`: not on 3.9 at a
    full accumulator (SHIFT_FULL_ACC: `gemmkit isa` on 3.9.0, bias + gelu_tanh: the cooperative 128 x 256 136 B, the
    ping-pong's 64 x 256 136 B, the cooperative 256 x 128 8 B; 3.6 and 3.7.1 0 B). The rule was measured with the
    static cases, not with tests/data/measure_triton_budgets.py's epilogue sweep."""
    return not (_v(version) >= (3, 9) and acc_regs >= FULL_ACC_REGS)


def tail_split_ok(kernel: str, cfg: dict, version=None) -> bool:
    """Whether the Hopper Gluon dense `kernel` may run its tail split (hopper_pingpong.tail_plan) for `cfg` under
    `version`: not the cooperative kernel's full-accumulator 128 x 256 tile on 3.9 (TAIL_COOP_WIDE: `gemmkit isa` on
    3.9.0, bias + gelu_tanh, the tail variant at 3 and 4 stages 112 B; 256 x 128 and the ping-pong's 128 x 128 tail
    variants 0 B; 3.6-3.8 0 B). Measured with the static cases only."""
    return not (kernel == "hopper_coop_kernel" and _v(version) >= (3, 9) and cfg["BLOCK_SIZE_N"] == 256
                and consumer_acc_regs(cfg) >= FULL_ACC_REGS)


def consumer_acc_regs(cfg: dict) -> int:
    """fp32 accumulator registers per consumer thread of a Hopper Gluon config: BM x BN over a warpgroup's 128
    threads, BM / 2 rows a consumer for the cooperative layout (num_warps 8; the fp8 kernel's too); twice that for
    the gated tile (a config with "gated": the gate's and the up's accumulators, hopper_pingpong.py "Gated")."""
    rows = cfg["BLOCK_SIZE_M"] // 2 if cfg["num_warps"] == 8 else cfg["BLOCK_SIZE_M"]
    return rows * cfg["BLOCK_SIZE_N"] // 128 * (2 if cfg.get("gated") else 1)


GLUON_BATCHED = ("hopper_pingpong_batched_kernel", "hopper_coop_batched_kernel")
GLUON_16BIT = ("hopper_pingpong_kernel", "hopper_coop_kernel") + GLUON_BATCHED
GLUON_FP8 = "hopper_pingpong_fp8_kernel"


def _gluon_16bit_rule(v: tuple, kernel: str, cfg: dict, out_dtype: str, has_bias: bool, activation: str) -> str | None:
    """The rule of the 16-bit kernels that covers this epilogue on release `v` (a full-accumulator tile), or None.
    Which epilogue spills moves from release to release (LLVM orders the erfc fit's and the sigmoid's arithmetic
    differently each time); each release's rule is what spilled on it beyond Triton 3.6's own spills (the note at
    FULL_ACC_REGS), over every full tile measured:
      3.7   GLUON_EPILOGUE: bias + gelu into an fp32 y (784 - 2672 B)
      3.8   GLUON_EPILOGUE: bias + gelu (64 - 2728 B); in the batched kernels gelu / gelu_tanh without a bias (8 B)
      3.9   GLUON_EPILOGUE: gelu, bias or not (8 - 1048 B; the gated tiles of two 64-register accumulators, gelu
            into a bf16 h: 128 - 144 B, the gated measurements of tests/data/triton_budgets.json); GLUON_FP32_BIAS: a
            bias into an fp32 y at BLOCK_SIZE_N 256 with any activation (relu, none: 112 - 120 B), or with silu at
            any BLOCK_SIZE_N (8 - 160 B)
    (a newer release: 3.9's). The gated tiles spilled with nothing else on any release (3.6 - 3.8: 0 B)."""
    if v == (3, 7):
        hit = activation == "gelu" and has_bias and out_dtype == "fp32"
    elif v == (3, 8):
        hit = (activation == "gelu" and has_bias) or (
            kernel in GLUON_BATCHED and not has_bias and activation in ("gelu", "gelu_tanh"))
    elif v >= (3, 9):
        if activation != "gelu" and has_bias and out_dtype == "fp32" and (cfg["BLOCK_SIZE_N"] == 256 or
                                                                        activation == "silu"):
            return "GLUON_FP32_BIAS"
        hit = activation == "gelu"
    else:
        hit = False
    return "GLUON_EPILOGUE" if hit else None


def _fp8_rule(v: tuple, cfg: dict, out_dtype: str, has_bias: bool) -> str | None:
    """The fp8 kernel's rule (per-token x per-channel scales, a full-accumulator tile) on release `v`, or None:
      3.8   FP8_BIAS: a bias into an fp32 y (8 B)
      3.9   FP8_BIAS: the same (16 B); FP8_COOP: the cooperative layout (num_warps 8), any call (8 - 176 B)
    (the block-scale mode, no bias, kept 0 spills on every release)."""
    if v >= (3, 9) and cfg["num_warps"] == 8:
        return "FP8_COOP"
    if v >= (3, 8) and has_bias and out_dtype == "fp32":
        return "FP8_BIAS"
    return None


def gluon_epilogue_unsupported(kernel: str, cfg: dict, out_dtype: str, has_bias: bool, activation: str,
                               scale: str = "none", version=None) -> str | None:
    """Why the Hopper Gluon `kernel` cannot take a call with this epilogue under `version` (None: it can).
    `out_dtype`: y's, "bf16" / "fp16" / "fp32"; `activation`: one of GLUON_ACTIVATIONS ("none" for the fp8
    kernel); `scale`: the fp8 kernel's "rowcol" or "block". Only tiles whose accumulator fills a consumer's
    FULL_ACC_REGS (consumer_acc_regs) have rules: every spill measured was at such a tile, none below (96
    registers: 0 spills with every epilogue on every release). The rules: `_gluon_16bit_rule`, `_fp8_rule`."""
    v = _v(version)
    if consumer_acc_regs(cfg) < FULL_ACC_REGS or v < (3, 7):
        return None
    if kernel in GLUON_16BIT:
        rule = _gluon_16bit_rule(v, kernel, cfg, out_dtype, has_bias, activation)
        what = f"a {epilogue_name(has_bias, activation)} epilogue into {'an' if out_dtype == 'fp32' else 'a'} " \
               f"{out_dtype} y"
    elif kernel == GLUON_FP8 and scale == "rowcol":
        rule = _fp8_rule(v, cfg, out_dtype, has_bias)
        what = f"per-token x per-channel scales{' and a bias' if has_bias else ''} into a {out_dtype} y" + \
            (" in its cooperative layout" if rule == "FP8_COOP" else "")
    else:
        return None
    if rule is None:
        return None
    return (f"{version_name(v)}: with {what} its {FULL_ACC_REGS}-register accumulator tile spills "
            f"(kernels/_budgets.py, {rule}); the Triton tier serves it")


def isa_epilogue(kernel: str, cfg: dict, out_dtype: str, default=(True, "gelu"), scale: str = "none", version=None):
    """((has_bias, activation) or None, passed_over) for `gemmkit isa`: the epilogue a Gluon case compiles
    (`default`, the heaviest, unless the dispatch passes the kernel over for it under `version`: then the first of
    EPILOGUE_ORDER after it that the dispatch still sends there; None: it sends none, the case is skipped) and the
    epilogues before that one that the dispatch sends to the Triton tier ("bias + gelu", ...). The fp8 kernel:
    default (True, "none"), then (False, "none"); the gated tile (`cfg` with "gated"): GATED_EPILOGUE_ORDER, from
    gelu."""
    if cfg.get("gated"):
        order = GATED_EPILOGUE_ORDER
    else:
        order = ((True, "none"), (False, "none")) if kernel == GLUON_FP8 else EPILOGUE_ORDER
        order = order[order.index(tuple(default)):]
    passed = []
    for has_bias, act in order:
        if gluon_epilogue_unsupported(kernel, cfg, out_dtype, has_bias, act, scale, version) is None:
            return (has_bias, act), tuple(passed)
        passed.append(epilogue_name(has_bias, act))
    return None, tuple(passed)


# ----------------------------------------------------------------------------- the Triton tier

def _full_amd_acc(cfg: dict, target) -> bool:
    """The tile's fp32 accumulator fills 128 VGPRs of every lane (256 x 256 over 8 waves of 64)."""
    return cfg["BLOCK_SIZE_M"] * cfg["BLOCK_SIZE_N"] // (target.warp_size * cfg["num_warps"]) >= 128


# SM90_MAXNREG: the sm_90 Triton-tier tiles (BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, num_warps, num_stages) that
# spilled, from the release that first spilled them on: all mma.sync tiles (< 64 rows), 8 - 16 bytes, where ptxas
# picked a register count below what the code needs (64 for 32 x 64 x 256 / 8 warps). With a .maxnreg directive
# (any value: 64 there gave 64 registers and no spill) ptxas allocates for the code: compiled with maxnreg 255, the
# listed tiles use 0 - 32 registers more and keep their occupancy (every case of every table measured). The list, not
# every < 64-row tile: given 255 across all 162 such cases, 24 lost occupancy (32 -> 24 warps an SM). A tile that
# spills on a new release or in a new table joins the list (`gemmkit isa` under that release fails until it does).
SM90_MAXNREG_TILES = {
    (3, 7): ((32, 64, 256, 8, 3), (16, 64, 128, 4, 3)),  # gemm_kernel split-K 4, gemm_gated_kernel
    (3, 9): ((16, 128, 128, 4, 4), (32, 128, 128, 8, 3), (16, 128, 256, 4, 2)),  # pointer, gated, TMA
}


def _maxnreg_tile(cfg: dict, v: tuple) -> bool:
    tile = (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg.get("BLOCK_SIZE_K"), cfg["num_warps"], cfg["num_stages"])
    return any(tile in tiles for first, tiles in SM90_MAXNREG_TILES.items() if v >= first)


def triton_options(cfg: dict, target, version=None) -> dict:
    """Compile-option changes of the SM90_MAXNREG and GFX950_STAGES rules for a Triton-tier config (`cfg` with the
    table keys: BLOCK_SIZE_M / N / K, num_warps, num_stages): {} where none applies. kernels/_host.compiler_options
    merges them, so a launch and a static compile get the same."""
    v = _v(version)
    if "BLOCK_SIZE_M" not in cfg or v < (3, 7):
        return {}
    if target.is_nvidia and _maxnreg_tile(cfg, v):
        return {"maxnreg": target.max_regs_per_thread}
    if target.arch == "gfx950" and _full_amd_acc(cfg, target) and cfg["num_stages"] > 1:
        return {"num_stages": 1}
    return {}


def triton_config(kernel: str, cfg: dict, target, version=None) -> dict:
    """The config a Triton-tier kernel runs for `cfg` under `version` (itself, unless a rule changes a tile key):
    GFX950_STAGES halves gemm_afp4wfp4's 256-wide K step on a full-accumulator gfx950 tile (one stage of 256
    still spilled 60-68 bytes; 128, one stage: none)."""
    if (kernel == "gemm_afp4wfp4_kernel" and target.arch == "gfx950" and _since(version, (3, 7))
            and _full_amd_acc(cfg, target) and cfg["BLOCK_SIZE_K"] > 128):
        return dict(cfg, BLOCK_SIZE_K=128)
    return cfg


def cdna_k_halves(target, version=None) -> int:
    """CDNA_K_HALVES: in how many K slices the CDNA ping-pong reads a stage from LDS for its MFMAs (1: the whole
    K tile at once, as on Triton 3.6; 2 on gfx950 from 3.7: the operands of half a K tile live at a time)."""
    return 2 if target.arch == "gfx950" and _since(version, (3, 7)) else 1


# ----------------------------------------------------------------------------- shared memory bounds

def amd_lds_bytes(num_stages: int, stage_bytes: int, target, version=None) -> int:
    """LDS the Triton tier's pipeliner keeps on an AMD target for `num_stages` (what it compiles: `triton_options`
    applied): num_stages - 1 stages (the newest K step waits in registers), or, GFX950_DIRECT_LDS (gfx950,
    Triton >= 3.8: loads straight into LDS), num_stages stages plus their padding, under stage_bytes / 32
    (measured: 480 B at 16 KiB stages, 992 at 32, 2016 at 64)."""
    if target.arch == "gfx950" and _since(version, (3, 8)):
        return num_stages * stage_bytes + stage_bytes // 32
    return max(1, num_stages - 1) * stage_bytes


def tma_slack(cfg: dict, out_bytes: int, version=None) -> int:
    """Shared memory beyond the ring and the TMA output staging tile (mbarriers, alignment): 1 KiB, and from
    Triton 3.8 on (TMA_STORE_SLACK) a row of the output tile more (the batched kernel's 3-D store: +256 B at
    BLOCK_N 128, +512 B at 256)."""
    return 1024 + (cfg["BLOCK_SIZE_N"] * out_bytes if _since(version, (3, 8)) else 0)


def num_stages(cfg: dict, target, version=None) -> int:
    """The stages a Triton-tier config compiles with (`triton_options` applied)."""
    return triton_options(cfg, target, version).get("num_stages", cfg["num_stages"])
