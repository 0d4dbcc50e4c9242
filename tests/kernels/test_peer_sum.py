"""kernels/triton/peer_sum.py, the push all-reduce of the tensor-parallel layers at decode: the layout, the parities
and the sums with every rank in one process (the interpreter runs the push and sum phases as two launches: it runs
programs one after another, so a program waiting for a peer's flag would wait for ever), and the sm_90 code's memory
orders. On 2 GPUs the one-launch kernel runs in tests/nn/test_parallel_gpu.py (copy_engine)."""
import os
import re
import subprocess
import sys

import pytest
import torch
from _bounds import reachable

from gemmkit import arch
from gemmkit.kernels.triton import peer_sum as PS


def _workspaces(world, extra):
    # zeroed as _PeerSum zeroes the counters and flags of a new workspace; poisoned past them
    ws = [torch.full((PS.region_bytes(world) + extra,), 0xFF, dtype=torch.uint8) for _ in range(world)]
    for w in ws:
        w[:PS.flag_bytes(world)].zero_()
    return ws, torch.tensor([w.data_ptr() for w in ws], dtype=torch.int64)


@pytest.mark.interpreter
@pytest.mark.parametrize("world", [2, 3])
def test_push_then_sum_every_rank(world):
    """Several calls of different sizes (odd, one row, the whole inbox) and both parities: every rank's output is the
    float64 sum of the partials rounded once (bf16 from fp32: two or three bf16 addends), the same bits on every
    rank, and nothing written past numel."""
    dt = torch.bfloat16
    most = PS.INBOX_BYTES // 2
    ws, bases = _workspaces(world, PS.INBOX_BYTES)
    region = PS.region_bytes(world)
    g = torch.Generator().manual_seed(5)
    for call, numel in enumerate([17, most, 8192, 3 * 1000 + 1, 1]):
        mines = [ws[r][region:region + 2 * numel].view(dt) for r in range(world)]
        for m in mines:
            m.copy_(torch.randn(numel, generator=g).to(dt))
        outs = [torch.full((numel + 8,), float("nan"), dtype=dt) for _ in range(world)]
        with reachable(*ws):  # every rank's workspace, through the table of their addresses
            for phase in ("push", "sum"):
                for r in range(world):
                    PS.peer_sum(mines[r], outs[r][:numel], bases, r, world, phase=phase)
        want = sum(m.double() for m in mines)
        for r in range(world):
            got = outs[r][:numel]
            assert torch.equal(got, outs[0][:numel]), f"call {call}: rank {r} differs from rank 0"
            err = (got.double() - want).abs().max().item()
            assert err <= 2 ** -7 * want.abs().max().item(), f"call {call} rank {r}: max error {err}"
            assert torch.isnan(outs[r][numel:]).all(), f"call {call} rank {r}: wrote past numel"
        for r in range(world):  # every program counted the call
            assert ws[r][:4 * PS.CTAS].view(torch.int32).eq(call + 1).all()


def test_refuses_what_the_inbox_cannot_hold():
    ws, bases = _workspaces(2, 16)
    too_many = torch.empty(PS.INBOX_BYTES // 2 + 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="at most"):
        PS.peer_sum(too_many, too_many.clone(), bases, 0, 2)
    with pytest.raises(ValueError, match="contiguous"):
        PS.peer_sum(too_many[:64].view(8, 8).t(), torch.empty(8, 8, dtype=torch.bfloat16), bases, 0, 2)
    with pytest.raises(ValueError, match="phase"):
        PS.peer_sum(too_many[:8], too_many[:8].clone(), bases, 0, 2, phase="pull")


_CHILD = """
from gemmkit import arch
from gemmkit.isa import compile_static
from gemmkit.kernels.triton import peer_sum as PS
kernel, sig, ce, div, opt = PS.static_spec("bf16", rank=1, world=2)
print(compile_static(kernel, sig, ce, arch.TARGETS["H200"], opt, div).asm["ptx"])
"""


def test_sm90_code_orders_the_flags(tmp_path):
    """The flag after the pushes is a release at system scope by one thread after a CTA barrier, the wait an acquire
    load at system scope, the inbox read past L1 (ld.global.cg), and the moves 16-byte vectors (compiled in a child
    process: in this one the interpreter has the kernel)."""
    env = dict(os.environ, TRITON_INTERPRET="0", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    ptx = r.stdout
    release = re.search(r"@%p\d+ (atom|red)\.global\.sys\.release\.add\.u32", ptx)  # red: Triton >= 3.9 (unused result)
    assert release, "no release of the flag by one (predicated) thread"
    before = ptx[:release.start()]
    assert before.rfind("bar.sync") > before.rfind("st.global"), "no CTA barrier between the pushes and the flag"
    assert "ld.global.sys.acquire.b32" in ptx, "no acquire load of the flag"
    assert "ld.global.cg.v4.b32" in ptx, "the inbox is not read past L1 in 16-byte vectors"
    assert "st.global.v4.b32" in ptx and not re.search(r"st\.global\.b16", ptx), "pushes not in 16-byte vectors"
