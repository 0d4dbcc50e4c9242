"""Measure which fused epilogues the CDNA ping-pong compiles without spilling (kernels/gluon/cdna_host.SPILL_FREE):
every target x operand dtype x output dtype x bias x activation x variant (EDGE, MASK_K), compiled statically with the
installed Triton, written to tests/data/cdna_pingpong_spills-<major.minor>.json. Run: python
tests/data/measure_cdna_pingpong.py (~6 minutes on 2 cores; another release: that venv's python, PYTHONPATH=. and
GEMMKIT_ALLOW_UNSUPPORTED_TRITON=1). SPILL_FREE[release] lists an epilogue where every operand dtype compiled it
with 0 spill bytes; a case the release fails to compile is recorded with its error (and is not spill-free)."""
import itertools
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

KEYS = ["arch", "in", "out", "has_bias", "activation", "edge", "mask_k"]


def one(case):
    from gemmkit import arch
    from gemmkit.isa import compile_static, resources
    from gemmkit.kernels.gluon import cdna_host as H
    from gemmkit.kernels.gluon import cdna_pingpong as K

    a, din, out, bias, act, edge, mask_k = case
    t = arch.ARCHS[a]
    ce = K.constexprs(t, bias, act, edge, mask_k)
    try:
        r = resources(compile_static(K.cdna_pingpong_kernel, K.signature(din, out, ce), ce, t, {"num_warps": 8},
                                     H.DIVISIBLE), t, H.tile(t))
    except Exception as e:  # noqa: BLE001  (a release that cannot compile a variant: recorded, never served)
        return dict(zip(KEYS, case), error=f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:160]}")
    return dict(zip(KEYS, case), vgpr=r["vgpr"], spill_bytes=r["spill_bytes"],
                buffer_load_lds=r["counts"]["buffer_load_lds"], v_mfma=r["counts"]["v_mfma"])


def main():
    import triton

    from gemmkit.kernels.gluon import cdna_host as H
    from gemmkit.kernels.triton._epilogue import ACTIVATIONS

    cases = list(itertools.product(H.TARGETS, H.IN_DTYPES, H.OUT_DTYPES, (False, True), ACTIVATIONS, (False, True),
                                   (False, True)))
    with ProcessPoolExecutor(2) as ex:
        rows = list(ex.map(one, cases))
    release = ".".join(triton.__version__.split(".")[:2])
    path = Path(__file__).with_name(f"cdna_pingpong_spills-{release}.json")
    with open(path, "w") as f:
        f.write(json.dumps({"triton": triton.__version__, "measured_by": "tests/data/measure_cdna_pingpong.py"})[:-1]
                + ', "rows": [\n' + ",\n".join(json.dumps(r) for r in rows) + "\n]}\n")
    print(f"{path}: {len(rows)} cases, {sum(r.get('spill_bytes') == 0 for r in rows)} without spills, "
          f"{sum('error' in r for r in rows)} failed to compile", file=sys.stderr)


if __name__ == "__main__":
    main()
