"""The FP8 promotion-overlap probe kernel (kernels/gluon/hopper_pingpong_fp8_overlap.py) on the CPU: its plan,
and a static compile for sm_90 checked against its PROMISES and against the SASS that shows the overlap.

Gluon does not run in the interpreter: compiled in a subprocess without TRITON_INTERPRET. On the H200:
benchmarks/run_h200_fp8_overlap.sh (correctness on ragged shapes, then timing).
"""
import json
import os
import subprocess
import sys

import pytest

from gemmkit import arch
from gemmkit.kernels.gluon import hopper_pingpong_fp8_overlap as k

H200 = arch.get("sm_90")
CFGS = dict(k.PROBE_CFGS)


def test_plans():
    q = k.derive(CFGS["quarter-128x128-n64"], H200)
    assert (q.consumer_rows, q.chains, q.acc_regs, q.partial_regs, q.rings, q.stages, q.c_bufs) == \
        (128, 4, 128, 64, 2, 3, 2)
    c = k.derive(CFGS["coop-128x128-n128"], H200)
    assert (c.consumer_rows, c.chains, c.acc_regs, c.partial_regs, c.rings, c.stages, c.c_bufs) == \
        (64, 1, 64, 128, 1, 6, 1)
    for p in (q, c):
        assert p.smem_bytes <= H200.shared_mem_bytes


@pytest.mark.parametrize("change,match", [
    ({"CHAIN_N": 128}, "registers"),  # quarter 128 x 128 with two 64 x 128 partials: 256
    ({"MODE": "coop", "BLOCK_SIZE_M": 64}, "BLOCK_SIZE_M"),
    ({"MODE": "x"}, "MODE"),
    ({"BLOCK_SIZE_K": 256}, "promotion"),
])
def test_plan_rejects(change, match):
    with pytest.raises(ValueError, match=match):
        k.derive({**CFGS["quarter-128x128-n64"], **change}, H200)


_COMPILE = """
import json, re, subprocess, sys, tempfile
from gemmkit import arch
from gemmkit.isa import _cuobjdump, compile_static, resources
from gemmkit.isa.promises import evaluate
from gemmkit.kernels.gluon import hopper_pingpong_fp8_overlap as k
t = arch.ARCHS["sm_90"]
out = []
for name in json.loads(sys.argv[1]):
    cfg = dict(k.PROBE_CFGS)[name]
    kern, sig, ce, div, opts, plan = k.static_spec(cfg, t)
    c = compile_static(kern, sig, ce, t, opts, div)
    m = resources(c, t)
    m["smem_bound"] = plan.smem_bytes
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(c.asm["cubin"]); f.flush()
        sass = subprocess.run([_cuobjdump(), "--dump-sass", f.name], capture_output=True, text=True).stdout
    out.append({"name": name, "metrics": m, "promises": evaluate(k.PROMISES, m, cfg, t),
                "wait1": sass.count(k.SASS_WAIT1)})
print(json.dumps(out))
"""


def test_static_compile_coop_overlaps():
    """coop 128 x 128, m64n128 chains: no spills, QGMMA, TMA, and ptxas kept the wait(1)s (one per K step
    and consumer in the two-step loop body and the tail: 2 x 4), i.e. did not serialize the wgmma."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    names = ["coop-128x128-n128"]
    r = subprocess.run([sys.executable, "-c", _COMPILE, json.dumps(names)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])[0]
    broken = [f"{p['promise']}: {p['detail']}" for p in res["promises"] if not p["ok"]]
    assert not broken, broken
    assert res["metrics"]["vgpr"] == 168 and res["metrics"]["spill_bytes"] == 0
    assert res["metrics"]["counts"]["QGMMA"] == 2 * 4 * 4  # 2 consumers x (first step, 2 in the loop, tail) x BK/32
    assert res["wait1"] == 8
