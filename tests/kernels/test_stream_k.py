"""Stream-K's schedule (kernels/gluon/hopper_host.py `stream_k_tiles`, `stream_k_segments`, `stream_k_last_peer`: the
arithmetic hopper_streamk.py's `sk_space` / `sk_item` / `sk_last_peer` run on the device), on the CPU: every K step
of every tile is computed once, each tile's first piece finds its later pieces where they are, and the CTAs' work
is even. The kernel itself (partials, flags, the owner's sum) runs on the GPU: the "stream_k" tests of
tests/kernels/test_hopper_coop.py."""
import pytest

from gemmkit import configs
from gemmkit.kernels.gluon import hopper_host as hh


def test_stream_k_tiles_rule():
    assert hh.stream_k_tiles(480, 132, 110) == 216  # 3000 x 5000 x 7000, 128 x 256: two whole rounds, then 216
    assert hh.stream_k_tiles(96, 132, 112) == 96  # DeepSeek kv_a at M = 4096, 128 x 192: fewer tiles than SMs
    assert hh.stream_k_tiles(200, 132, 16) == 200  # between one and two rounds: all of them
    assert hh.stream_k_tiles(264, 132, 112) == 0  # whole rounds
    assert hh.stream_k_tiles(96, 132, hh.STREAM_K_MIN_STEPS - 1) == 0  # too few K steps a tile
    assert hh.stream_k_tiles(10, 132, 12) == 0  # 120 steps for 132 CTAs
    assert hh.stream_k_tiles(11, 132, 12) == 11


def _check(ctas, tiles, k_steps):
    sk = hh.stream_k_tiles(tiles, ctas, k_steps)
    if not sk:
        return
    dp = tiles - sk
    assert dp % ctas == 0
    covered = {}
    for p in range(ctas):
        segs = hh.stream_k_segments(p, ctas, tiles, k_steps, sk)
        assert segs, f"CTA {p} has no work"
        for j, (t, k0, k1) in enumerate(segs):
            assert 0 <= k0 < k1 <= k_steps
            if k0 > 0:  # a later piece: only ever the CTA's first stream-K segment (one slot a CTA)
                assert t >= dp and (t, k0, k1) == next(s for s in segs if s[0] >= dp)
            if k0 == 0 and k1 < k_steps:  # the tile's first piece: the CTA's last segment (it waits last)
                assert j == len(segs) - 1
                last = hh.stream_k_last_peer(t, ctas, tiles, k_steps, sk)
                rest = [hh.stream_k_segments(q, ctas, tiles, k_steps, sk) for q in range(p + 1, last + 1)]
                pieces = [s for r in rest for s in r if s[0] == t]
                assert len(pieces) == last - p and all(s[1] > 0 for s in pieces)  # each peer: one later piece
                assert sorted((k0, k1) for _, k0, k1 in pieces)[-1][1] == k_steps
            for k in range(k0, k1):
                assert (t, k) not in covered, f"step {k} of tile {t} twice"
                covered[(t, k)] = p
        work = sum(k1 - k0 for _, k0, k1 in segs if _ >= dp)
        assert abs(work - sk * k_steps / ctas) < 1
    assert len(covered) == tiles * k_steps


@pytest.mark.parametrize("ctas", [1, 3, 7, 132])
def test_stream_k_segments_cover_every_step_once(ctas):
    for tiles in (1, 2, 5, 96, 131, 133, 200, 263, 265, 480):
        for k_steps in (8, 13, 112):
            _check(ctas, tiles, k_steps)


def test_stream_k_config_key():
    base = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
            "num_stages": 4, "backend": "gluon", "stream_k": True}
    assert configs.validate_config(base, backend="cuda")["stream_k"] is True
    for bad, why in (({"num_warps": 4, "BLOCK_SIZE_M": 64}, "num_warps 8"), ({"NUM_KSPLIT": 2}, "NUM_KSPLIT 1"),
                     ({"backend": "triton"}, "gluon")):
        with pytest.raises(configs.ConfigError, match=why):
            configs.validate_config({**base, **bad}, backend="cuda")
    with pytest.raises(configs.ConfigError, match="not supported on hip"):
        configs.validate_config(base, backend="hip")


def test_stream_k_plan_and_kernels_that_refuse_it():
    from gemmkit import arch
    from gemmkit.kernels.gluon import hopper_coop as hc
    from gemmkit.kernels.gluon import hopper_pingpong as hp
    from gemmkit.kernels.gluon import hopper_pingpong_batched as hb

    t = arch.ARCHS["sm_90"]
    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 4, "stream_k": True}
    assert hc.derive(cfg, t).stream_k and not hc.derive({**cfg, "stream_k": False}, t).stream_k
    assert hc.kernel_constexprs(hc.derive(cfg, t), has_bias=False, activation="none", stream_k=True)["STREAM_K"]
    with pytest.raises(ValueError, match="one or the other"):
        hc.derive({**cfg, "NUM_KSPLIT": 2}, t)
    with pytest.raises(ValueError, match="no stream-K"):
        hp.derive({**cfg, "BLOCK_SIZE_M": 64, "num_warps": 4}, t)
    with pytest.raises(ValueError, match="no stream-K"):
        hb.kernel_plan(cfg, t, 2, 2, has_bias=False, activation="none")
