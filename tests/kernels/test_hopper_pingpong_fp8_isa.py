"""The FP8 Gluon kernel's in-flight wgmma chain, checked in the sm_90 SASS (CPU: static compile).

The coop layout (num_warps 8) keeps one wgmma chain in flight while it promotes the one before
(kernels/gluon/hopper_fp8_mainloop.py: two partials, `warpgroup_mma_wait(1)`). That holds only while
ptxas keeps the wait-for-one, `WARPGROUP.DEPBAR.LE gsb0, 0x1` (gemmkit.isa count GMMA_WAIT1); when
it serializes the wgmma instead (warning C7514, e.g. when the promotion is sunk below the next chain
into the same registers) only `0x0` waits are left and the kernel runs like the ping-pong's mainloop,
~5-12% slower in block mode. Plan and promise tests of the kernel: tests/kernels/test_hopper_pingpong_fp8.py.
"""
import json
import os
import subprocess
import sys

import pytest

from _util import broken_promises, compile_sm90_cases
from gemmkit import arch
from gemmkit.isa.promises import evaluate
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k

H200 = arch.get("sm_90")
PINGPONG = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
            "num_stages": 3}
COOP = {**PINGPONG, "num_warps": 8, "num_stages": 6}
IN_FLIGHT = [p for p in k.PROMISES if "GMMA_WAIT1" in p["check"]]


def _case(cfg, path):
    return dict(kernel=k.KERNEL_NAME, op="hopper_pingpong_fp8", arch="sm_90", table="-", bucket="t", config=cfg,
                path=path)


COOP_CASES = [_case(COOP, "gluon-bf16"), _case(COOP, "gluon-block-bf16")]  # rowcol (with bias) and block scales
PINGPONG_CASES = [_case(PINGPONG, "gluon-bf16"), _case({**PINGPONG, "BLOCK_SIZE_M": 64, "num_stages": 4},
                                                       "gluon-block-bf16")]


def test_the_in_flight_promise_can_fail():
    """The promise binds coop cases (wait(1) in the SASS) and is kept trivially by pingpong ones."""
    assert len(IN_FLIGHT) == 1
    serialized = {"counts": {"GMMA_WAIT1": 0}}
    check = evaluate(IN_FLIGHT, serialized, COOP, H200)[0]
    assert not check["ok"] and "counts['GMMA_WAIT1']=0" in check["detail"]
    assert evaluate(IN_FLIGHT, {"counts": {"GMMA_WAIT1": 8}}, COOP, H200)[0]["ok"]
    assert evaluate(IN_FLIGHT, serialized, PINGPONG, H200)[0]["ok"]


def test_coop_chain_stays_in_flight_in_sass():
    """Coop (rowcol and block): a wait-for-one after each of the 4 places the mainloop issues a chain (K step 0,
    the two steps of a loop trip, the even tail), in each of the two consumers: 8. Pingpong, for contrast: none
    (each chain is waited to zero). Every promise kept, the in-flight one included."""
    cases = COOP_CASES + PINGPONG_CASES
    for case, res in zip(cases, compile_sm90_cases(k, cases)):
        where = f"{case['config']['BLOCK_SIZE_M']}x{case['config']['num_warps']} {case['path']}"
        assert not broken_promises(res), f"{where}: " + "; ".join(broken_promises(res))
        assert IN_FLIGHT[0]["promise"] in {p["promise"] for p in res["promises"]}, where
        waits = res["metrics"]["counts"]["GMMA_WAIT1"]
        assert waits == (2 * 4 if case["config"]["num_warps"] == 8 else 0), f"{where}: GMMA_WAIT1 = {waits}"


# Child: compile each case (Triton's cache makes a repeat cheap), then run ptxas on its PTX again as Triton does
# (-lineinfo -v --gpu-name=sm_90a) and print its log: Triton keeps the log only when ptxas fails.
_PTXAS_LOG = """
import json, os, subprocess, sys, tempfile
from triton import knobs
from gemmkit import arch
from gemmkit.isa import compile_static
from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k
t = arch.ARCHS["sm_90"]
logs = []
for case in json.loads(sys.argv[1]):
    s = k.isa_spec(case)
    c = compile_static(s["kernel"], s["signature"], s["constexprs"], t, s["options"], s["divisible"])
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        open(src, "w").write(c.asm["ptx"])
        r = subprocess.run([knobs.nvidia.ptxas.path, "-lineinfo", "-v", "--gpu-name=sm_90a", src, "-o",
                            os.path.join(d, "k.cubin")], capture_output=True, text=True)
        logs.append([r.returncode, r.stdout + r.stderr])
print(json.dumps(logs))
"""


def test_block_scale_copy_paths_in_sass():
    """Block mode, both ways the load warp copies the x scales (SCALE_TMA: gemmkit.quant's M-major scales; cp.async:
    row-major or unaligned ones), coop and 64-row pingpong: every promise kept, the coop chain in flight, the x
    scales by UTMALDG or LDGSTS (the w scale always by UTMALDG), and no global load (PTX ld.global) anywhere: the
    consumers read both scales from the slot (a block kernel has no bias and no epilogue scales)."""
    coop, pingpong = COOP_CASES[1]["config"], PINGPONG_CASES[1]["config"]
    cases = [_case(c, p) for c in (coop, pingpong) for p in ("gluon-block-bf16", "gluon-block-cpasync-bf16")]
    for case, res in zip(cases, compile_sm90_cases(k, cases, ptx_counts={"LD_GLOBAL": "ld.global"})):
        where = f"{case['config']['num_warps']} warps {case['path']}"
        assert not broken_promises(res), f"{where}: " + "; ".join(broken_promises(res))
        c = res["metrics"]["counts"]
        rings = 1 if case["config"]["num_warps"] == 8 else 2
        tma_x = "cpasync" not in case["path"]
        # per ring: a, b, the w scale's box (+ the x scales' box)
        assert c["UTMALDG"] == rings * (3 + tma_x), (where, c["UTMALDG"])
        assert (c["LDGSTS"] > 0) == (not tma_x), (where, c["LDGSTS"])
        assert res["metrics"]["LD_GLOBAL"] == 0, (where, res["metrics"]["LD_GLOBAL"])
        assert c["GMMA_WAIT1"] == (8 if rings == 1 else 0), (where, c["GMMA_WAIT1"])


@pytest.mark.parametrize("case", COOP_CASES, ids=["rowcol", "block"])
def test_ptxas_does_not_serialize_the_coop_chain(case):
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", _PTXAS_LOG, json.dumps([case])], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (rc, log), = json.loads(r.stdout.strip().splitlines()[-1])
    assert rc == 0, log
    assert "Compiling entry function 'hopper_pingpong_fp8_kernel'" in log, log  # ptxas -v's log of this kernel
    bad = [line for line in log.splitlines() if "C7514" in line or "serializ" in line.lower()]
    assert not bad, "\n".join(bad)
