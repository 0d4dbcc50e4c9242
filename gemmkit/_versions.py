"""The Triton releases gemmkit runs on, checked once at `import gemmkit`.

Triton's Gluon API moves between releases (3.7 removed `gl.thread_barrier`; 3.9 removed the TMA / cp.async
copy names and `_reinterpret`: kernels/gluon/_compat.py resolves those at import), and the first sign of a mismatch would
otherwise be a CompilationError deep inside the first call that picks a Gluon kernel. So an
unsupported Triton is refused at import with one message that says what to install.
pyproject.toml declares the same range; `GEMMKIT_ALLOW_UNSUPPORTED_TRITON=1` turns the
refusal into a warning (for trying a new release, at your own risk). Within or outside the range, a Gluon
kernel that fails to compile does not fail the call: it runs the Triton tier with one warning naming the
kernel and the Triton version (ops/dispatch.py `run_gluon`).

  Triton   torch that pins it   status
  3.6.x    2.11                 developed and measured on (H100 / H200)
  3.7.x    2.12, 2.13           compiles; every `gemmkit isa` case keeps its promises under the release's budget
                                 rules (kernels/_budgets.py: some fused epilogues of full-accumulator Gluon tiles run
                                 on the Triton tier, some Triton-tier tiles compile with other options)
  3.8.x    2.14                 the same (CI: .ci/triton_versions.sh, static compiles of every case); the GPU suite
                                 and the model suites run on an H200 (docs/PERF.md)
  3.9.x    -                    the same (Gluon names through kernels/gluon/_compat.py); the GPU suite and the bf16
                                 model suite run on an H200 (with torch 2.11, which pins 3.6: the wheel beside it)
  >= 3.10  -                    not tried: refused
"""
from __future__ import annotations

import os
import re
import warnings

TRITON_MIN = (3, 6)  # inclusive
TRITON_MAX = (3, 10)  # exclusive
OVERRIDE_ENV = "GEMMKIT_ALLOW_UNSUPPORTED_TRITON"


def parse(version: str) -> tuple[int, int]:
    """(major, minor) of a version string such as '3.6.0', '3.7.0+git1a2b3c' or '3.10.0rc1'."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise ValueError(f"cannot read a Triton version from {version!r}")
    return int(m.group(1)), int(m.group(2))


def triton_problem(version: str) -> str | None:
    """Why Triton `version` is not supported (None: it is)."""
    v = parse(version)
    if TRITON_MIN <= v < TRITON_MAX:
        return None
    lo, hi = ".".join(map(str, TRITON_MIN)), f"{TRITON_MAX[0]}.{TRITON_MAX[1] - 1}"
    return (f"gemmkit supports Triton {lo} to {hi}.x, but Triton {version} is installed. Install a supported "
            f"release, e.g. `pip install 'triton>={lo},<{TRITON_MAX[0]}.{TRITON_MAX[1]}'` (or a torch that pins "
            f"one: torch 2.11-2.14), or set {OVERRIDE_ENV}=1 to try this one anyway.")


def check_triton():
    """Raise ImportError (or warn, with the override set) if the installed Triton is not supported."""
    import triton

    problem = triton_problem(triton.__version__)
    if problem is None:
        return
    if os.environ.get(OVERRIDE_ENV, "0") not in ("", "0"):
        warnings.warn(problem, RuntimeWarning, stacklevel=3)
        return
    raise ImportError(problem)
