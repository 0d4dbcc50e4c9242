"""Tensor parallel over 2 GPUs of one host: gemmkit.nn.parallel's layers against one GPU and plain torch TP.

    torchrun --nproc-per-node 2 benchmarks/tp.py [--M 1,16,64,1024,4096,8192] [--dtypes bf16,fp8,fp8_block]
    python -m torch.distributed.run --nproc-per-node 2 benchmarks/tp.py --smoke      (CPU: gloo, interpreter, tiny)

NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set here (NVLink multicast stays off on these machines);
set them in torchrun's environment too.

Blocks (Llama-3-70B: hidden 8192, intermediate 28672, 64 heads, 8 KV heads, head_dim 128), each at every M:
    mlp      ParallelGatedMLP: gate / up column-parallel, down row-parallel, one all-reduce
    qkv      ColumnParallelLinear 8192 -> 10240, output sharded (no collective: the GEMM's own scaling)
    o_proj   RowParallelLinear 8192 -> 8192, all-reduce
Modes (one row each):
    one_gpu      the unsplit gemmkit layers on one GPU (each rank runs them alone on its own GPU)
    torch_seq    plain torch TP on the same shards: cuBLAS (F.linear; fp8: torch._scaled_mm rowwise / block-scaled on
                 the same quantized weights, activations quantized by gemmkit.quant), then the NCCL collective
    sequential   gemmkit.nn.parallel, chunks=1: the GEMMs, then the collective
    overlapped   gemmkit.nn.parallel, chunks="auto": each chunk's collective behind the next chunk's GEMM
  and, for the blocks with a collective, the same layers with transport="copy_engine" (the all-reduce by copy-engine
  pulls from a symmetric-memory workspace, no SM held during the transfer):
    ce_sequential  chunks=1;   ce_overlapped  chunks="auto";   ce_2  chunks=2
  and, for the blocks with a collective (mlp, o_proj), where the time goes:
    local        this rank's GEMMs alone (reduce=None, chunks=1): one_gpu_ms / 2 is the ideal
    local_chunked  the same cut into chunks="auto" (what chunking costs the GEMMs)
    collective   the all-reduce alone, on the block's (M, hidden) bf16 output
    collective_push / collective_one_shot   at decode (M x hidden x 2 bytes <= 1 MiB), GPUs: the same all-reduce
                 over the copy-engine transport's workspace, by gemmkit's push sum (what transport="copy_engine"
                 runs there) and by torch's one-shot all-reduce kernel (what it ran before)
Timing: each mode's call captured once in a CUDA graph (collectives included); the modes of one (block, M) then
take turns, ROUNDS (5) rounds each replaying every graph a fixed number of times with CUDA events around each
replay (the same count on both ranks: the collectives pair them); median per rank, the slower rank's median
reported. The rounds keep one_gpu and the TP modes on the same stretch of the card's clock (a long GEMM heats it).
Every block's weights exceed the L2 (>= 50 MB a rank), so the inputs are not rotated.
Rows (--json, default benchmarks/results/<gpu>x2/tp.json): label, M, dtype, mode, ms, one_gpu_ms, scaling
(one_gpu_ms / ms; 2.0 is the ideal), vs_torch_seq (torch_seq ms / ms), rel_err (the TP output against one GPU's).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HIDDEN, INTER, HEADS, KV_HEADS, HEAD_DIM = 8192, 28672, 64, 8, 128
SMOKE = dict(HIDDEN=256, INTER=512, QKV=384)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--M", default="1,16,64,1024,4096,8192")
    p.add_argument("--dtypes", default="bf16,fp8,fp8_block")
    p.add_argument("--blocks", default="mlp,qkv,o_proj")
    p.add_argument("--iters", type=int, default=0, help="timed replays (0: 200 at M <= 64, 30 above)")
    p.add_argument("--json", default=None)
    p.add_argument("--smoke", action="store_true", help="CPU: gloo, the interpreter, tiny layers (--M default 16,64), "
                                                        "perf_counter timing: checks the script, measures nothing")
    args = p.parse_args(argv)
    if args.smoke and args.M == p.get_default("M"):
        args.M = "16,64"
    return args


# ----------------------------------------------------------------------------- the blocks


def _rand(shape, device, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * 0.02).to(device=device, dtype=torch.bfloat16)


def _linear(K, N, device, seed):
    lin = torch.nn.Linear(K, N, bias=False, device="meta")
    lin.weight = torch.nn.Parameter(_rand((N, K), device, seed), requires_grad=False)
    return lin


def _fp8_torch_gemm(layer, x2):
    """torch._scaled_mm on a gemmkit fp8 layer's own quantized weight (activations quantized by gemmkit.quant)."""
    from gemmkit import quant
    from gemmkit.bench.ops import _blockwise_scaled_mm
    from gemmkit.nn.linear import Fp8BlockLinear

    if isinstance(layer, Fp8BlockLinear):
        if not hasattr(layer, "_vendor_scale"):  # cuBLASLt's 128 x 128 layout, once (as at load time)
            kb = layer.weight_scale.shape[1]
            l4 = -(-kb // 4) * 4
            layer._vendor_scale = F.pad(layer.weight_scale, (0, l4 - kb)).t()
        xq, xs = layer.quantize_input(x2)
        return _blockwise_scaled_mm(xq, layer.weight, xs, layer._vendor_scale, pad_m=x2.shape[0] % 4 != 0)
    xq, xs = quant.quantize_fp8_per_token(x2, dtype=layer.weight.dtype)
    return torch._scaled_mm(xq, layer.weight.t(), scale_a=xs, scale_b=layer.weight_scale, out_dtype=torch.bfloat16)


def _torch_gemm(layer, x2):
    from gemmkit.nn.linear import Linear

    return F.linear(x2, layer.weight) if isinstance(layer, Linear) else _fp8_torch_gemm(layer, x2)


CE_CHUNKS = (1, "auto", 2)
CE_MODES = {("ce", 1): "ce_sequential", ("ce", "auto"): "ce_overlapped", ("ce", 2): "ce_2"}


def build(block, scheme, dims, device):
    """(one_gpu(x), tps: {chunks or ("ce", chunks): fn(x)}, torch_seq(x), K) for one block."""
    cuda = device.type == "cuda"
    from gemmkit import nn as gnn
    from gemmkit.nn import parallel as P

    H, I, QKV = dims["HIDDEN"], dims["INTER"], dims["QKV"]
    if block == "mlp":
        mlp = torch.nn.Module()
        mlp.gate_proj, mlp.up_proj, mlp.down_proj = _linear(H, I, device, 1), _linear(H, I, device, 2), \
            _linear(I, H, device, 3)
        if scheme == "bf16":
            mlp.act_fn = torch.nn.SiLU()
            one = gnn.GatedMLP(H, I, device="meta")
            one.w_gate_up = torch.nn.Parameter(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
                                               requires_grad=False)
            one.w_down = mlp.down_proj.weight
        else:  # the same fused act * mul + quantization as ParallelGatedMLP's shards
            mlp.act_fn = torch.nn.SiLU()
            mlp.forward = lambda t: mlp.down_proj(mlp.act_fn(mlp.gate_proj(t)) * mlp.up_proj(t))
            one = gnn.QuantGatedMLP.from_mlp(mlp, scheme)
        tps = {c: P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=c) for c in (1, "auto")}
        tps.update({("ce", c): P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=c,
                                                          transport="copy_engine") for c in CE_CHUNKS if cuda})
        m, i = tps[1], I // P.rank_and_world()[1]

        def torch_seq(x):
            if scheme == "bf16":
                h = F.linear(x, m.w_gate_up)
                y = F.linear(F.silu(h[:, :i]) * h[:, i:], m.w_down)
            else:
                h = _torch_gemm(m.gate_up, x)
                y = _torch_gemm(m.down, F.silu(h[:, :i]) * h[:, i:])
            dist.all_reduce(y)
            return y
        return one, tps, torch_seq, H, _decomposed(tps[1], H, device)
    lin = _linear(H, QKV if block == "qkv" else H, device, 4)
    one = gnn.from_linear(lin, scheme)
    if block == "qkv":
        tps = {c: P.ColumnParallelLinear.from_linear(lin, scheme, chunks=c) for c in (1, "auto")}

        def torch_seq(x):
            return _torch_gemm(tps[1].local, x)
    else:
        tps = {c: P.RowParallelLinear.from_linear(lin, scheme, input_is_parallel=False, chunks=c) for c in (1, "auto")}
        tps.update({("ce", c): P.RowParallelLinear.from_linear(lin, scheme, input_is_parallel=False, chunks=c,
                                                              transport="copy_engine") for c in CE_CHUNKS if cuda})
        r, w = P.rank_and_world()
        k = H // w

        def torch_seq(x):
            y = _torch_gemm(tps[1].local, x[:, r * k:(r + 1) * k])
            dist.all_reduce(y)
            return y
    return one, tps, torch_seq, H, _decomposed(tps[1], H, device) if block == "o_proj" else {}


def _decomposed(m, H, device):
    """The local / local_chunked / collective modes of a reducing layer `m` (its reduce and chunks switched for
    the call)."""
    def local(chunks):
        def fn(x):
            saved = m.reduce, m.chunks
            m.reduce, m.chunks = None, chunks
            try:
                return m(x)
            finally:
                m.reduce, m.chunks = saved
        return fn

    def collective(x):
        y = torch.empty(x.shape[0], H, dtype=torch.bfloat16, device=device)
        dist.all_reduce(y)
        return y
    modes = {"local": local(1), "local_chunked": local("auto"), "collective": collective}
    if device.type == "cuda":
        modes.update(_peer_collectives(H, device))
    return modes


def _peer_collectives(H, device):
    """The decode all-reduce alone over the copy-engine transport's workspace (an output of at most the push sum's
    inbox): collective_push, gemmkit's push sum (what transport="copy_engine" runs there), and collective_one_shot,
    torch's one-shot all-reduce kernel (symm_mem.one_shot_all_reduce_out) on the same partial."""
    from gemmkit.kernels.triton import peer_sum
    from gemmkit.nn import parallel as P

    def mine(x):
        ps = P._peer_sum(None, device)
        ps.ready(x.shape[0] * H * 2)  # grown eagerly: capture_graph warms up outside the capture
        return ps, ps.view(ps.rank, x.shape[0], H, torch.bfloat16)

    def push(x):
        ps, m = mine(x)
        return peer_sum.peer_sum(m, torch.empty_like(m), ps.bases, ps.rank, ps.world)

    def one_shot(x):
        ps, m = mine(x)
        n = m.numel() * 2
        local = ps.buf[ps.region:ps.region + n].view(torch.bfloat16).view(m.shape)  # the allocation's own view
        return torch.ops.symm_mem.one_shot_all_reduce_out(local, "sum", dist.group.WORLD.group_name,
                                                          out=torch.empty_like(m))
    return {"collective_push": push, "collective_one_shot": one_shot}


PEER_MODES = ("collective_push", "collective_one_shot")  # at M x hidden x 2 bytes <= the push sum's inbox only


# ----------------------------------------------------------------------------- timing


ROUNDS = 5  # the modes of one (block, M) are timed in this many alternating rounds (`timed_interleaved`)


def timed_interleaved(fns, x, iters, cuda, rounds=ROUNDS):
    """{mode: median ms of fns[mode](x), or the exception its capture raised}. On a GPU each mode's call is
    captured once in a CUDA graph, then the modes take turns: `rounds` rounds, each replaying every graph
    iters / rounds times with CUDA events around each replay. A long GEMM heats the card and its clock falls:
    alternating keeps one_gpu and the TP modes on the same stretch of the card's state, so their ratio is not the
    order they ran in. perf_counter on the CPU. Both ranks make the same calls in the same order."""
    rounds = min(rounds, iters)
    per = iters // rounds
    runs, out = {}, {}
    with torch.no_grad():
        for mode, fn in fns.items():
            try:
                if cuda:
                    from gemmkit.bench.timing import capture_graph

                    graph = capture_graph(fn, [(x,)])  # warmed up (compiled, communicators made) outside it
                    for _ in range(3):
                        graph.replay()
                    runs[mode] = graph
                else:
                    fn(x)
                    runs[mode] = (lambda f: lambda: f(x))(fn)
            except Exception as e:  # noqa: BLE001  (a vendor refusal: recorded, the others go on)
                out[mode] = e
        times = {mode: [] for mode in runs}
        for _ in range(rounds):
            for mode, run in runs.items():
                if cuda:
                    torch.cuda.synchronize()
                    dist.barrier()
                    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                              for _ in range(per)]
                    for a, b in events:
                        a.record()
                        run.replay()
                        b.record()
                    torch.cuda.synchronize()
                    times[mode] += [a.elapsed_time(b) for a, b in events]
                else:
                    for _ in range(per):
                        dist.barrier()
                        t = time.perf_counter()
                        run()
                        times[mode].append((time.perf_counter() - t) * 1e3)
        del runs
    out.update({mode: statistics.median(ts) for mode, ts in times.items()})
    return out


def slowest(v, device):
    t = torch.tensor([v], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def rel_err(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def write(args, rows, world, device, cuda):
    """The result file (rank 0), rewritten after every block so that a run cut short keeps what it measured."""
    import triton

    from gemmkit.bench import git_sha

    name = torch.cuda.get_device_name(device) if cuda else "cpu (smoke: gloo, interpreter)"
    result = {"device": f"{world} x {name}", "date": datetime.date.today().isoformat(), "torch": torch.__version__,
              "triton": triton.__version__, "cuda": torch.version.cuda,
              "nccl": ".".join(map(str, torch.cuda.nccl.version())) if cuda else None, "git_sha": git_sha(),
              "method": __doc__.split("Timing: ")[1].split("Rows")[0].strip(), "config": vars(args),
              "rows": rows}
    path = args.json
    if path is None and cuda:
        low = name.lower()
        gpu = next((g for g in ("h200", "h100") if g in low), low.replace(" ", "_"))
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", f"{gpu}x{world}", "tp.json")
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    return path


def main(argv=None):
    args = parse(argv)
    cuda = not args.smoke
    if args.smoke:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before gemmkit is imported
    elif not torch.cuda.is_available():
        sys.exit("tp.py: needs CUDA GPUs (or --smoke on the CPU)")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    import gemmkit  # noqa: F401  (after TRITON_INTERPRET)
    from gemmkit.kernels.triton.peer_sum import INBOX_BYTES
    rank, world = dist.get_rank(), dist.get_world_size()
    dims = SMOKE if args.smoke else dict(HIDDEN=HIDDEN, INTER=INTER, QKV=(HEADS + 2 * KV_HEADS) * HEAD_DIM)
    rows, path = [], None
    for scheme in args.dtypes.split(","):
        for block in args.blocks.split(","):
            one, tps, torch_seq, K, parts = build(block, scheme, dims, device)
            for M in (int(m) for m in args.M.split(",")):
                iters = args.iters or (3 if args.smoke else 200 if M <= 64 else 30)
                x = _rand((M, K), device, 100 + M) * 50
                with torch.no_grad():
                    y1 = one(x)
                    errs = {c: rel_err(tp(x).reshape(y1.shape) if block != "qkv" else tp(x),
                                       y1 if block != "qkv" else y1[:, rank * (y1.shape[1] // world):
                                                                    (rank + 1) * (y1.shape[1] // world)])
                            for c, tp in tps.items()}
                modes = {"one_gpu": (one, 0.0), "torch_seq": (torch_seq, None), "sequential": (tps[1], errs[1]),
                         "overlapped": (tps["auto"], errs["auto"]),
                         **{CE_MODES[c]: (tps[c], errs[c]) for c in tps if c in CE_MODES},
                         **{k: (f, None) for k, f in parts.items() if k not in PEER_MODES or M * K * 2 <= INBOX_BYTES}}
                got = timed_interleaved({mode: fn for mode, (fn, _) in modes.items()}, x, iters, cuda)
                got = {mode: v if isinstance(v, Exception) else slowest(v, device) for mode, v in got.items()}
                if isinstance(got["one_gpu"], Exception):
                    raise got["one_gpu"]
                one_ms = got["one_gpu"]
                label = f"llama3-70b {block}"
                base = dict(label=label, M=M, dtype=scheme, one_gpu_ms=round(one_ms, 5))
                torch_ms = None if isinstance(got["torch_seq"], Exception) else got["torch_seq"]
                for mode, (_, err) in modes.items():
                    ms = got[mode]
                    if isinstance(ms, Exception):
                        rows.append({**base, "mode": mode, "error": f"{type(ms).__name__}: {str(ms)[:200]}"})
                        continue
                    row = {**base, "mode": mode, "ms": round(ms, 5), "scaling": round(one_ms / ms, 4)}
                    if torch_ms and mode in ("sequential", "overlapped", *CE_MODES.values()):
                        row["vs_torch_seq"] = round(torch_ms / ms, 4)
                    if err is not None:
                        row["rel_err"] = float(f"{err:.3g}")
                    rows.append(row)
                    if rank == 0:
                        print(f"{label:18s} {scheme:9s} M={M:5d} {mode:13s} {ms:8.4f} ms  scaling "
                              f"{one_ms / ms:5.2f}" + (f"  vs torch {row['vs_torch_seq']:5.2f}" if "vs_torch_seq"
                                                       in row else ""), flush=True)
            del one, tps, torch_seq, parts
            if rank == 0:
                path = write(args, rows, world, device, cuda)
    if rank == 0 and path:
        print(f"wrote {path}")
    dist.barrier()  # both ranks tear down together
    dist.destroy_process_group()
    if args.smoke:  # CPU ranks in Triton's interpreter: a normal exit sometimes aborted after all the work was done
        sys.stdout.flush()  # ("terminate called without an active exception", a C++ thread still joinable at
        sys.stderr.flush()  # static destruction, seen with Triton 3.9): exit without the static destructors
        os._exit(0)


if __name__ == "__main__":
    main()
