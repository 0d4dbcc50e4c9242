"""The tuner's CPU-side logic: candidate space, pruning, progress keys (the GPU smoke test is in
tests/test_gpu_a16w16.py)."""
import json

from gemmkit import arch
from gemmkit.tune import _key, _load_progress, prune, search_space

H200 = arch.get("sm_90")


def test_small_m_offers_grouped_order_only():
    """At M <= 64 the bucket also serves larger M, where GROUP_SIZE_M 1 re-reads w per tile row."""
    for M in (1, 16, 64):
        assert {c["GROUP_SIZE_M"] for c in search_space(M, 8192, 8192, H200)} == {8}


def test_prune_counts_batched_tiles():
    """Persistent launches are pruned when one wave covers every tile: for batched ops, B x tiles."""
    c = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
         "num_stages": 3, "persistent": True, "tma": False, "NUM_KSPLIT": 1}
    assert prune([c], 512, 512, 512, H200) == []  # 16 tiles: one wave
    assert prune([c], 512, 512, 512, H200, batch=64) == [c]  # 1024 tiles


def test_progress_keys_tell_batches_apart(tmp_path):
    c = {"BLOCK_SIZE_M": 64}
    assert _key(1, 2, 3, c) != _key(1, 2, 3, c, batch=8)
    assert _key(1, 2, 3, c, "batched_a16w16", "bf16", 8) != _key(1, 2, 3, c, "batched_a16w16", "bf16", 64)
    p = tmp_path / "tune_progress.jsonl"
    rows = [{"op": "batched_a16w16", "dtype": "bf16", "M": 1, "N": 2, "K": 3, "B": b, "config": c, "ms": b}
            for b in (8, 64)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n{cut")
    done = _load_progress(p)
    assert len(done) == 2 and done[_key(1, 2, 3, c, "batched_a16w16", "bf16", 64)]["ms"] == 64
