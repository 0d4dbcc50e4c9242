"""Issue 3 / H2: the split-K reduce's tile, old vs new, same process: `python benchmarks/fewtile_reduce_ab.py OUT.json`.

ops/_gemm.reduce_tile now halves BLOCK_M (down to 8) while the reduce grid has fewer than 2 x SMs
programs. For each split-K case (the table's config at decode M, the few-tile configs at M >= 256),
on the same rotated inputs, CUDA-graph replay: the op with the new reduce tile, with the old one
(32 x 128, shrunk to M / N only), and the GEMM alone (reduce launch skipped); measured in the
order new, old, gemm, gemm, old, new and averaged per variant.
"""
import json
import sys

import torch

import gemmkit
from gemmkit import configs
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C
from gemmkit.ops import _gemm as G

FEW = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
       "num_stages": 3, "tma": True}
CASES = [(512, 576, 7168, dict(FEW, NUM_KSPLIT=8)), (512, 576, 7168, dict(FEW, NUM_KSPLIT=4)),
         (1024, 576, 7168, dict(FEW, NUM_KSPLIT=4)), (512, 1536, 7168, dict(FEW, NUM_KSPLIT=4)),
         (256, 576, 7168, None), (256, 1536, 7168, None), (16, 576, 7168, None), (64, 576, 7168, None),
         (32, 1536, 7168, None), (16, 4096, 14336, None), (64, 4096, 4096, None), (32, 8192, 28672, None),
         (1, 18432, 16384, None)]


def main(out_path, rep_ms=40):
    target = C.target_for(torch.device("cuda"))
    new_tile = G.reduce_tile
    old_tile = lambda M, N, min_programs=0: new_tile(M, N)  # noqa: E731
    launcher = G.L.launcher

    def no_reduce(kernel, grid, compile_only=False):
        if kernel is G.splitk_reduce_kernel:
            return lambda *a, **k: None
        return launcher(kernel, grid, compile_only)

    rows = []
    for M, N, K, cfg in CASES:
        cfg = configs.validate_config(dict(cfg or configs.select("a16w16", "sm_90", M, N, K)[0]))
        if cfg["NUM_KSPLIT"] == 1:
            print(f"{M}x{N}x{K}: table config does not split K, skipped", flush=True)
            continue
        n = rotation_count((M * K + N * K + M * N) * 2, target.l2_bytes)
        sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                 torch.randn(N, K, device="cuda", dtype=torch.bfloat16)) for _ in range(n)]
        op = lambda x, w: gemmkit.gemm_a16w16(x, w, config=cfg)  # noqa: E731
        ref = sets[0][0].double() @ sets[0][1].double().T
        ms = {"new": [], "old": [], "gemm": []}
        for variant in ("new", "old", "gemm", "gemm", "old", "new"):
            G._PLANS.clear()
            G.reduce_tile = old_tile if variant == "old" else new_tile
            G.L.launcher = no_reduce if variant == "gemm" else launcher
            try:
                if variant != "gemm":
                    err = ((op(*sets[0]).double() - ref).norm() / ref.norm()).item()
                    assert err < 2**-8, (M, N, K, variant, err)
                ms[variant].append(time_graph(op, sets, 10, rep_ms))
            finally:
                G.reduce_tile, G.L.launcher = new_tile, launcher
        G._PLANS.clear()
        m = {k: sum(v) / len(v) for k, v in ms.items()}
        row = {"M": M, "N": N, "K": K, "config": cfg, "ms": ms, "op_new_ms": m["new"], "op_old_ms": m["old"],
               "gemm_ms": m["gemm"], "reduce_tile_new": new_tile(M, N, 2 * target.num_cus),
               "reduce_tile_old": new_tile(M, N), "speedup": m["old"] / m["new"],
               "second_pass_old_us": (m["old"] - m["gemm"]) * 1e3, "second_pass_new_us": (m["new"] - m["gemm"]) * 1e3}
        rows.append(row)
        print(f"{M:5d} {N:6d} {K:6d} split {cfg['NUM_KSPLIT']}  op old {m['old'] * 1e3:7.1f} us"
              f"  new {m['new'] * 1e3:7.1f}"
              f"  gemm alone {m['gemm'] * 1e3:7.1f}  second pass {row['second_pass_old_us']:5.1f} -> "
              f"{row['second_pass_new_us']:5.1f} us  tile {row['reduce_tile_old']} -> {row['reduce_tile_new']}",
              flush=True)
        del sets, ref
        torch.cuda.empty_cache()
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "triton": __import__("triton").__version__, "git_sha": gemmkit.bench.git_sha(),
               "date": __import__("datetime").date.today().isoformat(), "rows": rows},
              open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
