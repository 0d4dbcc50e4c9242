"""Ad-hoc config sweep used to pick the first sm_90 table (the real tuner is `gemmkit tune`, issue 3).

For a few shape classes, times a short candidate list (do_bench median of CUDA
graph replays, rotated inputs: kernel time without launch overhead, for both
gemmkit and cuBLAS) and prints each class's best. Usage on the GPU:
    PYTHONPATH=. python benchmarks/sweep_a16w16.py OUT.json
"""
import json
import sys

import torch

import gemmkit
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C


def cfg(bm, bn, bk, w, s, g=8, tma=True, persistent=False):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g,
            "num_warps": w, "num_stages": s, "tma": tma, "persistent": persistent}


SMALL = [cfg(16, 64, 256, 4, 3), cfg(16, 64, 128, 4, 4), cfg(16, 128, 128, 4, 4), cfg(16, 32, 256, 4, 4),
         cfg(16, 128, 256, 4, 3), cfg(64, 64, 128, 4, 4), cfg(64, 128, 128, 4, 3), cfg(16, 64, 256, 4, 4, tma=False),
         cfg(16, 32, 128, 2, 6), cfg(32, 64, 256, 4, 3)]
MID = [cfg(64, 64, 128, 4, 4), cfg(64, 128, 64, 4, 4), cfg(128, 128, 64, 4, 4), cfg(128, 64, 128, 4, 4),
       cfg(64, 256, 64, 4, 4), cfg(128, 128, 64, 8, 4), cfg(128, 256, 64, 8, 3), cfg(128, 128, 64, 4, 4, persistent=True),
       cfg(64, 128, 128, 4, 4)]
LARGE = [cfg(128, 256, 64, 8, 3, persistent=True), cfg(128, 256, 64, 8, 3), cfg(128, 128, 64, 4, 4, persistent=True),
         cfg(128, 128, 64, 4, 4), cfg(256, 128, 64, 8, 3, persistent=True), cfg(128, 128, 64, 8, 4),
         cfg(128, 256, 64, 8, 3, g=16, persistent=True), cfg(128, 128, 128, 8, 3, persistent=True)]
CLASSES = {
    "small": (SMALL, [(1, 8192, 8192), (1, 57344, 8192), (16, 8192, 28672), (16, 10240, 8192)]),
    "mid": (MID, [(64, 8192, 8192), (128, 8192, 8192), (128, 57344, 8192), (256, 8192, 28672)]),
    "large": (LARGE, [(1024, 8192, 8192), (8192, 8192, 8192), (4096, 4096, 4096), (1024, 57344, 8192)]),
}


def main(path):
    dev = torch.device("cuda")
    target = C.target_for(dev)
    results = []
    for cls, (cands, shapes) in CLASSES.items():
        for M, N, K in shapes:
            nbytes = (M * K + N * K + M * N) * 2
            sets = [(torch.randn(M, K, device=dev, dtype=torch.bfloat16),
                     torch.randn(N, K, device=dev, dtype=torch.bfloat16))
                    for _ in range(rotation_count(nbytes, target.l2_bytes))]
            ref_ms = time_graph(lambda x, w: torch.matmul(x, w.T), sets, rep_ms=60)
            x, w = sets[0]
            ref = x.float() @ w.float().T
            line = []
            for i, c in enumerate(cands):
                try:
                    y = gemmkit.gemm_a16w16(x, w, config=c)
                    err = ((y.float() - ref).norm() / ref.norm()).item()
                    ms = time_graph(lambda x, w: gemmkit.gemm_a16w16(x, w, config=c), sets, rep_ms=60)
                except Exception as e:  # report and continue: this is a sweep
                    print(f"  {cls} {M}x{N}x{K} cand {i}: {type(e).__name__}: {str(e)[:100]}")
                    continue
                results.append({"class": cls, "M": M, "N": N, "K": K, "cand": i, "config": c, "ms": ms,
                                "ref_ms": ref_ms, "ratio": ref_ms / ms, "err": err})
                line.append((ref_ms / ms, i))
            line.sort(reverse=True)
            print(f"{cls:6s} {M:5d}x{N:5d}x{K:5d} cuBLAS {ref_ms*1e3:8.1f} us  best "
                  + "  ".join(f"#{i}:{r:.3f}" for r, i in line[:4]), flush=True)
            del sets
            torch.cuda.empty_cache()
    with open(path, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": results}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
