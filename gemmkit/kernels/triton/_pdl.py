"""Programmatic dependent launch (PDL, sm_90+): the kernel side, one home for every kernel that takes part.

A kernel launched with PDL (`launch_pdl=True`, ops/_common.pdl_kwargs) may start while the kernel
before it in the stream is still finishing: its CTAs are scheduled, set up, and then wait in
`griddepcontrol.wait` until that kernel has completed and its memory is visible. What it saves is
the gap between two kernels (the previous grid's drain and this grid's launch), ~1 us a boundary on
the H200, which is a tenth of a decode-sized GEMM (docs/PERF.md, session 13).

    previous kernel   ██████████████▒▒ (last CTAs, flush)
    this kernel (PDL)            [launch, CTA setup] wait ──► ████████████  (every load after the wait)
    next kernel (PDL)                     (launched once all of this grid's CTAs ran `launch_dependents`)

`dependent_launch_start(PDL)` is the first statement of such a kernel:
  - `gdc_wait` before any global memory access: nothing of the previous kernel's output (x, an
    output buffer it may still read) is touched early, so PDL can never change a result;
  - `gdc_launch_dependents` right after: the next PDL kernel may be scheduled once every CTA of this
    grid has started. Its CTAs then wait (their own `gdc_wait`) until this grid has completed; they take
    only SM room this grid's CTAs, all already placed, have left.

Constraints:
  - PDL constexpr: False compiles to nothing (AMD, the interpreter, PDL off); True only on sm_90+
    (inline PTX `griddepcontrol`), and only with `launch_pdl=True` at the launch (pdl_kwargs gives both).
"""
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait


@triton.jit
def dependent_launch_start(PDL: tl.constexpr):
    if PDL:
        gdc_wait()
        if PDL == 1:
            gdc_launch_dependents()


# The Gluon kernels' twin (a @gluon.jit kernel cannot call a @triton.jit function in Triton 3.6): the same two
# instructions, first in the kernel body, before warp_specialize, so no partition touches memory before the wait.
@gluon.jit
def gluon_dependent_launch_start(PDL: gl.constexpr):
    if PDL:
        gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)
    if PDL == 1:
        gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=gl.int32,
                                  is_pure=False, pack=1)
