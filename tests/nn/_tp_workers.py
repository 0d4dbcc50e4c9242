"""The ranks of the tensor-parallel tests (tests/nn/test_parallel.py, test_parallel_gpu.py): each case runs in
`world` processes (gloo on CPUs through the interpreter, NCCL on GPUs), every rank building the same full layers from
one seed, and checks its own result against

  - a float64 reference of what the tensor-parallel layer computes: each rank's shard product in float64 (x quantized
    per shard as the shard does it), summed over ranks in float64 by the collective, the bias once; the bound is the
    output rounding of each partial product plus of the sum;
  - the single-device layer's output (gemmkit.nn, the same weights unsplit): within rounding where the sharded
    computation quantizes as the single device does (bf16; fp8 block scales with shards on multiples of 128), within
    the scheme's quantization error where it cannot (fp8 per-token activations are quantized per shard of K).
"""
from __future__ import annotations

import os
import traceback

import torch

BF16 = torch.bfloat16
_DEVICE = [torch.device("cpu")]  # where this rank's collectives run (set by _rank_main)
TOL = {torch.bfloat16: 2**-8, torch.float16: 2**-10, torch.float32: 2e-6}
QUANT_ERROR = {"fp8": 0.08, "fp8_block": 0.08, "int8": 0.02}  # ||y - x @ W.T|| / ||x @ W.T|| (tests/nn/test_nn_linear)


def spawn(case, world=2, backend="gloo", timeout=900, **kwargs):
    """Run CASES[case](rank, world, device, **kwargs) on `world` ranks; raise with every failing rank's traceback."""
    import tempfile

    import torch.multiprocessing as mp

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off (these machines' rule)
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    with tempfile.TemporaryDirectory() as tmp:
        ctx = mp.get_context("spawn")
        errors = ctx.Queue()
        procs = [ctx.Process(target=_rank_main, args=(r, world, backend, os.path.join(tmp, "init"), case, kwargs, errors))
                 for r in range(world)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout)
        alive = [p for p in procs if p.is_alive()]
        for p in alive:
            p.kill()
        failures = []
        while not errors.empty():
            failures.append(errors.get())
        if alive:
            failures.append(f"{len(alive)} rank(s) still running after {timeout} s (a collective that never matched?)")
        failures += [f"rank {r} exited with {p.exitcode}" for r, p in enumerate(procs) if p.exitcode not in (0, None)
                     and not any(f.startswith(f"rank {r}:") for f in failures)]
        if failures:
            raise AssertionError(f"{case}: " + "\n".join(failures))


def _rank_main(rank, world, backend, init_file, case, kwargs, errors):
    """One rank: the case, then a hard exit. Its checks are done (or reported) before it exits; a normal interpreter
    exit sometimes aborted after them in the Triton 3.9 interpreter runs ("terminate called without an active
    exception", a C++ thread still joinable at static destruction), which would fail a case that passed."""
    import sys

    import torch.distributed as dist

    status = 0
    try:
        device = torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(rank)
            device = torch.device("cuda", rank)
        _DEVICE[0] = device
        dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world,
                                **({"device_id": device} if backend == "nccl" else {}))
        try:
            CASES[case](rank, world, device, **kwargs)
            dist.barrier()
        finally:
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001  (reported to the parent, which fails the test)
        errors.put(f"rank {rank}: {traceback.format_exc()}")
        status = 1
    errors.close()
    errors.join_thread()  # the report is in the pipe before the hard exit
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


# ----------------------------------------------------------------------------- helpers

def _rand(*shape, seed, dtype=torch.float32, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)


def _linear(K, N, bias, seed, device):
    lin = torch.nn.Linear(K, N, bias=bias, device="meta")
    lin.weight = torch.nn.Parameter(_rand(N, K, seed=seed, dtype=BF16, device=device), requires_grad=False)
    if bias:
        lin.bias = torch.nn.Parameter(_rand(N, seed=seed + 1, dtype=BF16, device=device), requires_grad=False)
    return lin


def _sum64(t):
    """sum over ranks, in float64 (the reference's collective), on the CPU."""
    import torch.distributed as dist

    t = t.detach().to(device=_DEVICE[0], dtype=torch.float64).clone()  # a copy: the caller's t stays this rank's
    dist.all_reduce(t)
    return t.cpu()


def _rel(a, b):
    a, b = a.detach().cpu().double(), b.detach().cpu().double()
    return ((a - b).norm() / b.norm().clamp_min(1e-300)).item()


def _check(name, y, ref, bound_norm, dtype=BF16, factor=1.0):
    """||y - ref|| <= factor * TOL * bound_norm, y finite."""
    y64, r64 = y.detach().cpu().double(), ref.detach().cpu().double()
    assert y.shape == ref.shape, f"{name}: shape {tuple(y.shape)} != {tuple(ref.shape)}"
    assert torch.isfinite(y64).all(), f"{name}: non-finite output"
    diff, bound = (y64 - r64).norm().item(), factor * TOL[dtype] * bound_norm
    assert diff <= bound, f"{name}: ||y - ref|| = {diff:.3g} > {bound:.3g} (rel {diff / r64.norm().item():.3g})"


def _close_to_single(name, y, y1, scheme, exact_quant):
    """The single-device output: within rounding (twice the output rounding of both), or within the scheme's
    quantization error where the shards quantize differently."""
    rel = _rel(y, y1)
    want = 4 * TOL[BF16] if exact_quant else QUANT_ERROR[scheme]
    assert rel <= want, f"{name}: ||y_tp - y_one|| / ||y_one|| = {rel:.3g} > {want:.3g}"


# ----------------------------------------------------------------------------- cases

def linear_layers(rank, world, device, scheme, chunk_list=(1, 3)):
    """Column-parallel (sharded, gathered) and row-parallel (all-reduce, reduce-scatter, whole or split input) on
    odd row counts, a 3-D input and an empty one, each with sequential and chunked collectives."""
    from gemmkit import nn as gnn
    from gemmkit.nn import parallel as P
    from gemmkit.nn.linear import linear_ref

    K, N = 256, 256  # shards of 128: the fp8 block grid of one device
    lin = _linear(K, N, True, seed=1, device=device)
    one = gnn.from_linear(lin, scheme)
    exact = scheme != "fp8" and scheme != "int8"
    for shape in ((33, K), (2, 17, K), (0, K)):
        x = _rand(*shape, seed=7, dtype=BF16, device=device)
        with torch.no_grad():
            y1 = one(x)
        for chunks in chunk_list:
            tag = f"{scheme} x{tuple(shape)} chunks={chunks}"
            col = P.ColumnParallelLinear.from_linear(lin, scheme, output="sharded", chunks=chunks)
            n = N // world
            with torch.no_grad():
                ys = col(x)
                yg = P.ColumnParallelLinear.from_linear(lin, scheme, output="gathered", chunks=chunks)(x)
            ref = linear_ref(col.local, x)
            _check(f"column sharded {tag}", ys, ref, ref.norm().item() + 1)
            _close_to_single(f"column sharded {tag}", ys, y1[..., rank * n:(rank + 1) * n], scheme, True)
            _check(f"column gathered {tag}", yg, y1, y1.double().norm().item() + 1, factor=4)
            if shape[0] == 0:
                assert ys.shape == (0, n) and yg.shape == (0, N)

            k = K // world
            for whole in (False, True):
                row = P.RowParallelLinear.from_linear(lin, scheme, chunks=chunks, input_is_parallel=not whole)
                x_r = x[..., rank * k:(rank + 1) * k]
                with torch.no_grad():
                    y = row(x if whole else x_r)
                    partial = linear_ref(row.local, x_r) - (0 if lin.bias is None else lin.bias.double().cpu())
                    ref = _sum64(partial) + lin.bias.double().cpu()
                    bound = _sum64(partial.norm().reshape(1)).item() + ref.norm().item() + 1
                _check(f"row all_reduce whole={whole} {tag}", y, ref, bound, factor=2)
                _close_to_single(f"row all_reduce whole={whole} {tag}", y, y1, scheme, exact)
            row = P.RowParallelLinear.from_linear(lin, scheme, chunks=chunks, reduce=None)
            with torch.no_grad():  # no collective: rank r's partial product, the bias on rank 0's alone
                y = row(x[..., rank * k:(rank + 1) * k])
            mine = partial + (lin.bias.double().cpu() if rank == 0 else 0)
            _check(f"row reduce=None {tag}", y, mine, mine.norm().item() + 1, factor=2)
            _close_to_single(f"row reduce=None {tag} summed", _sum64(y), y1, scheme, exact)
            if len(shape) == 3:  # reduce-scatter over x's first dimension (2 = world)
                row = P.RowParallelLinear.from_linear(lin, scheme, chunks=chunks, reduce="reduce_scatter")
                with torch.no_grad():
                    y = row(x[..., rank * k:(rank + 1) * k])
                b = shape[0] // world
                _close_to_single(f"row reduce_scatter {tag}", y, y1[rank * b:(rank + 1) * b], scheme, exact)
    # refusals every rank reaches alike (no collective is entered)
    row = P.RowParallelLinear.from_linear(lin, scheme, reduce="reduce_scatter")
    for bad in (_rand(3, K // world, seed=2, dtype=BF16, device=device), _rand(K // world, seed=2, dtype=BF16,
                                                                               device=device)):
        try:
            with torch.no_grad():
                row(bad)
        except ValueError as e:
            assert "reduce_scatter" in str(e)
        else:
            raise AssertionError(f"reduce_scatter took x of shape {tuple(bad.shape)} on {world} ranks")
    for kwargs, what in (({"transport": "nvshmem"}, "transport"),
                         ({"transport": "copy_engine", "reduce": "reduce_scatter"}, "all-reduce"),
                         *((({"transport": "copy_engine"}, "NCCL"),) if device.type == "cpu" else ())):
        try:
            P.RowParallelLinear.from_linear(lin, scheme, **kwargs)
        except ValueError as e:
            assert what in str(e), str(e)
        else:
            raise AssertionError(f"RowParallelLinear took {kwargs} on {device}")
    try:
        P.ColumnParallelLinear.from_linear(_linear(K, N + 1, False, seed=3, device=device), scheme)
    except ValueError as e:
        assert "out_features = 257" in str(e)
    else:
        raise AssertionError("a column split of 257 rows over 2 ranks was accepted")


def gated_mlp(rank, world, device, scheme, chunk_list=(1, 3)):
    """ParallelGatedMLP against the float64 MLP of its shards (h rounded to bf16 as the layer holds it) and the
    single-device gemmkit MLP, all-reduce and reduce-scatter, sequential and chunked."""
    from gemmkit import nn as gnn
    from gemmkit.nn import parallel as P
    from gemmkit.nn.linear import linear_ref
    from gemmkit.reference import activation_ref

    K, I = 128, 512  # I / p = 256: the gate / up shards' 128-row blocks are the single device's
    mlp = torch.nn.Module()
    mlp.gate_proj, mlp.up_proj = _linear(K, I, False, 11, device), _linear(K, I, False, 12, device)
    mlp.down_proj = _linear(I, K, False, 13, device)
    x = _rand(2, 19, K, seed=5, dtype=BF16, device=device)
    with torch.no_grad():
        if scheme == "bf16":
            y1 = gnn.GatedMLP.from_mlp(_with_act(mlp), BF16)(x)
        else:
            gu = _linear(K, 2 * I, False, 0, device)
            gu.weight = torch.nn.Parameter(torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]), requires_grad=False)
            gu1, d1 = gnn.from_linear(gu, scheme), gnn.from_linear(mlp.down_proj, scheme)
            h = gu1(x)
            y1 = d1(torch.nn.functional.silu(h[..., :I]) * h[..., I:])
    for chunks in chunk_list:
        for reduce in ("all_reduce", "reduce_scatter", None):
            tag = f"{scheme} mlp {reduce} chunks={chunks}"
            m = P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", reduce=reduce, chunks=chunks)
            seen = []  # the rows gate_up ran on, call by call: chunked, once on every row (only down is cut)
            down_input = m._down_input
            m._down_input = lambda rows, dtype: seen.append(rows.shape[0]) or down_input(rows, dtype)
            with torch.no_grad():
                y = m(x)
            M = x.shape[0] * x.shape[1]
            if len(P.chunk_rows(M, chunks)) > 1:
                want = [M]
            elif scheme == "bf16":  # one ffn_gated call
                want = []
            else:  # reduce_scatter: each rank's rows of the sum, one call each
                want = [M // world] * world if reduce == "reduce_scatter" else [M]
            assert seen == want, (tag, seen, want)
            i = I // world
            if scheme == "bf16":
                h64 = activation_ref(x.double().cpu() @ m.w_gate_up[:i].double().cpu().T, "silu") * \
                    (x.double().cpu() @ m.w_gate_up[i:].double().cpu().T)
                partial = h64.to(BF16).double() @ m.w_down.double().cpu().T
            else:
                hg = linear_ref(m.gate_up, x).to(BF16)
                partial = linear_ref(m.down, torch.nn.functional.silu(hg[..., :i]) * hg[..., i:])
            ref = _sum64(partial)
            bound = _sum64(partial.norm().reshape(1)).item() + ref.norm().item() + 1
            if reduce is None:  # this rank's partial product, and the caller's sum of them is the MLP
                _check(tag, y, partial, partial.norm().item() + 1, factor=2 if scheme == "bf16" else 8)
                _close_to_single(f"{tag} summed", _sum64(y), y1, scheme, scheme == "bf16")
                continue
            one = y1
            if reduce == "reduce_scatter":
                b = x.shape[0] // world
                ref, one = ref[rank * b:(rank + 1) * b], y1[rank * b:(rank + 1) * b]
            _check(tag, y, ref, bound, factor=2 if scheme == "bf16" else 8)
            _close_to_single(tag, y, one, scheme, scheme == "bf16")


def _with_act(mlp):
    mlp.act_fn = torch.nn.SiLU()
    mlp.forward = lambda t: mlp.down_proj(mlp.act_fn(mlp.gate_proj(t)) * mlp.up_proj(t))
    return mlp


CASES = {"linear_layers": linear_layers, "gated_mlp": gated_mlp}


def graph_replay(rank, world, device, scheme):
    """The chunked MLP (4 chunks: 4 collectives on NCCL's stream) captured in one CUDA graph: a replay on new input
    equals an eager call on it, bit for bit."""
    from gemmkit.nn import parallel as P

    K, I, M = 1024, 4096, 2048
    mlp = torch.nn.Module()
    mlp.gate_proj, mlp.up_proj = _linear(K, I, False, 21, device), _linear(K, I, False, 22, device)
    mlp.down_proj = _linear(I, K, False, 23, device)
    m = P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=4)
    x = _rand(M, K, seed=3, dtype=BF16, device=device)
    with torch.no_grad():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                m(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = m(x)
        x.copy_(_rand(M, K, seed=4, dtype=BF16, device=device))
        graph.replay()
        torch.cuda.synchronize()
        want = m(x)
    assert torch.equal(y, want), f"{scheme}: graph replay differs from eager (max {(y - want).abs().max().item()})"


CASES["graph_replay"] = graph_replay


def compiled(rank, world, device, scheme):
    """torch.compile (dynamo; the eager backend on CPUs, inductor on GPUs) of the tensor-parallel MLP and row layer,
    chunked: the same output as the eager call on the same input."""
    from gemmkit.nn import parallel as P

    K, I = 128, 256
    mlp = torch.nn.Module()
    mlp.gate_proj, mlp.up_proj = _linear(K, I, False, 31, device), _linear(K, I, False, 32, device)
    mlp.down_proj = _linear(I, K, False, 33, device)
    lin = _linear(K, K, True, 34, device)
    x = _rand(40, K, seed=9, dtype=BF16, device=device)
    backend = "inductor" if device.type == "cuda" else "eager"
    for m, inp in ((P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=2), x),
                   (P.RowParallelLinear.from_linear(lin, scheme, chunks=2), x[:, rank * K // world:(rank + 1) * K // world]),
                   (P.ColumnParallelLinear.from_linear(lin, scheme, output="gathered", chunks=2), x)):
        with torch.no_grad():
            want = m(inp)
            got = torch.compile(m, backend=backend)(inp)
        if backend == "eager":  # dynamo alone runs the same kernels: the same bits
            assert torch.equal(got, want), f"{type(m).__name__} {scheme}: compiled differs (max {(got - want).abs().max()})"
        else:  # inductor may fuse the torch elementwise ops (act * mul) with one rounding fewer
            assert _rel(got, want) <= 4 * TOL[BF16], f"{type(m).__name__} {scheme}: compiled rel {_rel(got, want):.3g}"


CASES["compiled"] = compiled


def copy_engine(rank, world, device, scheme):
    """transport="copy_engine" (symmetric-memory workspace, copy-engine pulls): the MLP and the row-parallel layer
    (bias, whole or split input) at M = 1, 19, 300 and 2048, sequential and chunked, against the same layers on
    NCCL's all-reduce (within rounding: the sum of the same two partials) and bit for bit the same on every rank; one
    CUDA graph holding the chunked copy-engine MLP replays as eager runs, and one holding the push sum (M = 16); ten
    push sums of alternating sizes (both parities, the whole inbox) each against NCCL;
    a capture whose M outgrows the workspace takes NCCL (no rendezvous inside a capture) and is still right."""
    import torch.distributed as dist

    from gemmkit.nn import parallel as P

    K, I = 1024, 2048
    mlp = torch.nn.Module()
    mlp.gate_proj, mlp.up_proj = _linear(K, I, False, 41, device), _linear(K, I, False, 42, device)
    mlp.down_proj = _linear(I, K, False, 43, device)
    lin = _linear(K, K, True, 44, device)

    def same_on_every_rank(name, y):
        ys = [torch.empty_like(y) for _ in range(world)]
        dist.all_gather(ys, y.contiguous())
        assert all(torch.equal(ys[0], t) for t in ys), f"{name}: the ranks' outputs differ"

    for M in (1, 19, 300, 2048):
        x = _rand(M, K, seed=50 + M, dtype=BF16, device=device)
        for chunks in (1, 3, "auto"):
            tag = f"{scheme} M={M} chunks={chunks}"
            pairs = [(P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=chunks, transport=t), x)
                     for t in P.TRANSPORTS]
            pairs += [(P.RowParallelLinear.from_linear(lin, scheme, chunks=chunks, input_is_parallel=False,
                                                       transport=t), x) for t in P.TRANSPORTS]
            for (nccl, inp), (ce, _) in (pairs[0:2], pairs[2:4]):
                assert ce.transport == "copy_engine" and "transport=copy_engine" in repr(ce)
                with torch.no_grad():
                    want, got = nccl(inp), ce(inp)
                name = f"{type(ce).__name__} {tag}"
                assert got.shape == want.shape and torch.isfinite(got.float()).all(), name
                assert _rel(got, want) <= 2 * TOL[BF16], f"{name}: copy engine vs NCCL rel {_rel(got, want):.3g}"
                same_on_every_rank(name, got)

    # the push sum (decode) call after call, sizes and parities alternating, against NCCL each time
    ce = P.RowParallelLinear.from_linear(lin, scheme, input_is_parallel=False, transport="copy_engine")
    nccl = P.RowParallelLinear.from_linear(lin, scheme, input_is_parallel=False)
    for i, M in enumerate((1, 64, 5, 512, 16, 1, 3, 64, 512, 2)):  # 512 x 1024 bf16: the whole 1 MiB inbox
        x = _rand(M, K, seed=80 + i, dtype=BF16, device=device)
        with torch.no_grad():
            want, got = nccl(x), ce(x)
        assert _rel(got, want) <= 2 * TOL[BF16], f"{scheme} push sum call {i} M={M}: rel {_rel(got, want):.3g}"
        same_on_every_rank(f"{scheme} push sum call {i}", got)

    # a few rows (decode: the push sum over the workspace) captured in a CUDA graph
    m = P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", transport="copy_engine")
    x = _rand(16, K, seed=70, dtype=BF16, device=device)
    with torch.no_grad():
        m(x)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = m(x)
        x.copy_(_rand(16, K, seed=71, dtype=BF16, device=device))
        graph.replay()
        torch.cuda.synchronize()
        want = m(x)
    assert torch.equal(y, want), f"{scheme} push sum graph replay differs from eager"
    same_on_every_rank(f"{scheme} push sum graph replay", y)

    M = 4096  # more rows than any call above: the workspace must grow, which a capture cannot
    nccl = P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=4)
    for warm in (False, True):
        m = P.ParallelGatedMLP.from_mlp(mlp, scheme, activation="silu", chunks=4, transport="copy_engine")
        x = _rand(M, K, seed=60, dtype=BF16, device=device)
        with torch.no_grad():
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                nccl(x)  # the kernels of this M compiled and their plans made before the capture
                if warm:
                    m(x)  # and the workspace grown
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                y = m(x)
            x.copy_(_rand(M, K, seed=61, dtype=BF16, device=device))
            graph.replay()
            torch.cuda.synchronize()
            want, ref = m(x), nccl(x)
        name = f"{scheme} graph replay (warm={warm})"
        if warm:
            assert torch.equal(y, want), f"{name}: differs from eager (max {(y - want).abs().max().item()})"
        assert _rel(y, ref) <= 2 * TOL[BF16], f"{name}: rel {_rel(y, ref):.3g} against NCCL's"
        same_on_every_rank(name, y)


CASES["copy_engine"] = copy_engine
