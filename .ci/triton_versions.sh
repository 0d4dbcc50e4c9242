#!/usr/bin/env bash
# CI, after the main run (.ci/run: requirements-cpu.txt's Triton 3.6 and the whole test suite): the other Triton
# releases gemmkit supports or is being readied for (issue 33). Each release is installed alone (pip --target, no
# dependencies: Triton has none) into its own folder, put first on PYTHONPATH before .ci/run's virtual environment
# (its CPU torch, numpy, pytest): one torch install for every release, gemmkit from this checkout.
#
#   every release in TRITONS     `gemmkit isa --arch all --op all`: every kernel x shipped config x target compiled
#                                on the CPU, each kernel's promises checked (0 spills, shared memory within its
#                                bound, the matrix instructions, ...) under that release's budget rules
#                                (gemmkit/kernels/_budgets.py: what the dispatch sends elsewhere is compiled as the
#                                dispatch sends it, or skipped). The whole matrix, not a subset: ~3.5 minutes a
#                                release on 2 cores, cold (measured: see the timing line below).
#   the newest (last) release    the kernels' and ops' interpreter tests (`pytest -m interpreter tests/kernels
#                                tests/ops`, ~890 tests, on pytest-xdist workers, one a core, as .ci/run's), minus
#                                the two that assert Triton 3.6 facts (NEWEST_ONLY_36 below; they run under 3.6 in
#                                .ci/run). The property tests and the nn modules' (~230 more, over half the time:
#                                they reach the same kernels through the ops) run under 3.6 only.
#
# Exit status 1 if any release has a failed compile or a broken promise, or an interpreter test fails; every release
# runs first. TRITONS="3.7.1 3.8.0" (environment) narrows it; GEMMKIT_CI_KEEP=DIR keeps the installs and reports there.
# Measured on the 2-core CPU machine (2026-12-06): 7 s install + 3.4 min isa a release (cold caches); the subset of
# interpreter tests above 3.8 min (all ~1140 took 23 min beside other work): ~15 minutes in all. .ci/run's suite:
# ~22-24 min on 2 xdist workers. CI's limit is 90 minutes for both scripts with their installs.
set -uo pipefail
cd "$(dirname "$0")/.."
read -r -a TRITONS <<< "${TRITONS:-3.7.1 3.8.0 3.9.0}"
WORK="${GEMMKIT_CI_KEEP:-$(mktemp -d)}"
mkdir -p "$WORK"
[ -n "${GEMMKIT_CI_KEEP:-}" ] || trap 'rm -rf "$WORK"' EXIT
# Triton 3.6 facts, checked under 3.6 by .ci/run: 3.6 cannot lower tl.dot_scaled for gfx942 (the reason
# gemm_afp4wfp4 refuses gfx942; from 3.9 it can, emulated: the support table's to revisit).
NEWEST_ONLY_36=(
  "tests/ops/test_afp4wfp4.py::test_static_compile_gfx950_native_gfx942_unsupported"
)
export GEMMKIT_ALLOW_UNSUPPORTED_TRITON=1
PY="${GEMMKIT_CI_PYTHON:-$PWD/.venv/bin/python}"  # .ci/run's environment: torch, numpy, pytest, the [test] extras
"$PY" -c "import torch, pytest" || { echo "$PY: no torch / pytest (run .ci/run first)"; exit 1; }
run() { PYTHONPATH="$dir:$PWD" "$PY" "$@"; }  # Python with the release in "$dir" first on the path
status=0
for v in "${TRITONS[@]}"; do
  dir="$WORK/triton-$v"
  start=$SECONDS
  if [ ! -f "$dir/triton/__init__.py" ]; then
    "$PY" -m pip install -q --no-deps --target "$dir" "triton==$v" \
      || { echo "Triton $v: install failed"; status=1; continue; }
  fi
  installed=$((SECONDS - start))
  got=$(run -c "import triton; print(triton.__version__)")
  [ "$got" = "$v" ] || { echo "Triton $v: $dir imports Triton $got"; status=1; continue; }
  # a cache of this release's compiles only (the cache key holds the Triton version too)
  if GEMMKIT_CACHE_DIR="$WORK/cache-$v" run -m gemmkit isa --arch all --op all \
       --json "$WORK/isa-$v.json" > "$WORK/isa-$v.txt" 2> "$WORK/isa-$v.err"; then
    verdict=ok
  else
    verdict=FAILED; status=1
    grep -E "COMPILE FAILED|BROKEN" "$WORK/isa-$v.txt" | head -n 40
    tail -n 20 "$WORK/isa-$v.err"
  fi
  run -c "
import json, sys
from gemmkit.isa.report import summary_lines
print('\n'.join(summary_lines(json.load(open(sys.argv[1])), max_problems=0)))" "$WORK/isa-$v.json" 2>/dev/null
  echo "Triton $v: gemmkit isa $verdict (install ${installed}s, isa $((SECONDS - start - installed))s)"
done
newest="${TRITONS[${#TRITONS[@]}-1]}"
deselect=()
for t in "${NEWEST_ONLY_36[@]}"; do deselect+=(--deselect "$t"); done
start=$SECONDS
dir="$WORK/triton-$newest"
if run -m pytest -m "interpreter and not gpu" -q -p no:cacheprovider -n auto \
     --dist loadfile "${deselect[@]}" tests/kernels tests/ops; then
  echo "Triton $newest: interpreter tests ok ($((SECONDS - start))s)"
else
  echo "Triton $newest: interpreter tests FAILED ($((SECONDS - start))s)"; status=1
fi
exit $status
