"""Tensor-parallel layers on gemmkit's GEMMs and torch.distributed (NCCL on GPUs, gloo on CPUs).

Megatron-LM's and vLLM's layout; p ranks in the process group, this one is r:

    ColumnParallelLinear   W (N, K) split by rows: rank r holds W[r*N/p : (r+1)*N/p] and that slice of the bias
        x (..., K), the same on every rank ──► y_r = x @ W_r.T + b_r (..., N/p) ──output="sharded"──► y_r
                                                                            └──output="gathered"──► all-gather: y (..., N)
    RowParallelLinear      W (N, K) split by columns: rank r holds W[:, r*K/p : (r+1)*K/p]; the whole bias
        x_r (..., K/p) ──► y_r = x_r @ W_r.T (+ b on rank 0 only) ──reduce="all_reduce"──► y = sum_r y_r (..., N)
                                                                     ├──reduce="reduce_scatter"──► y[r*B/p : (r+1)*B/p]
                                                                     │  (B = x's first dimension)
                                                                     └──reduce=None──► y_r: the caller reduces (e.g.
                                                                        with its residual add, as vLLM's
                                                                        reduce_results=False)
    ParallelGatedMLP       gate / up column-parallel, down row-parallel, one collective:
        x (..., K) ──► y_r = down_r(act(gate_r(x)) * up_r(x)) ──all-reduce (reduce-scatter, None)──► y (..., K)
        bf16 / fp16: one ffn_gated call (this rank's I/p gate rows, then its I/p up rows, fused as ffn_gated
        takes them); fp8 / int8: gate_up GEMM, act * mul fused into the down layer's activation quantization
        (gemmkit.quant's gated forms, as gemmkit.nn.QuantGatedMLP), the down GEMM. Chunked (below), gate_up and
        act * mul run once on every row and only the down GEMM is cut into chunks: only its output is reduced,
        and each chunk of gate_up would stream the whole gate_up weight from memory again.

Overlap (`chunks`): x's rows are cut into chunks; each chunk's GEMM is queued on the current stream, then its
collective with async_op=True, which NCCL runs on its own stream once that GEMM is done, while the next GEMM computes:

    current stream   [ GEMM rows 0 .. M/2 ][ GEMM .. 3M/4 ][ GEMM .. 7M/8 ][ GEMM .. M ]
    NCCL stream                           [ coll 0 ]      [ coll 1 ]     [ coll 2 ]   [ coll 3 ]   <- only this one
                                                                                                      is exposed
Chunks halve (M/2, M/4, ..., the last two equal; multiples of ALIGN_ROWS) so that the exposed collective is the
smallest; "auto" halves while the tail keeps >= TAIL_ROWS rows, at most MAX_CHUNKS chunks, so M < 2 * TAIL_ROWS is
one chunk (decode: what is left is the collective's latency, and chunks only add launches). chunks=1, the default,
is the sequential version; every rank must pass the same chunks (they take the same M).

Transport of the all-reduce (`transport`, RowParallelLinear and ParallelGatedMLP with reduce="all_reduce"):
    "nccl"         NCCL's all-reduce (its kernels hold SMs for the whole transfer)
    "copy_engine"  the partial products are written by the GEMMs into a symmetric-memory workspace
                   (torch.distributed._symmetric_memory, shared by every layer of the process on this device); per
                   chunk, on a side stream: a barrier (every rank's chunk written), each peer's chunk pulled by the
                   copy engines (cudaMemcpy over NVLink: no SM); on a second side stream the p partials summed in
                   rank order into the output (one elementwise kernel, local memory); after the last chunk a barrier
                   (every peer done reading this rank's workspace) before the next GEMM may write it. The sum is the
                   same bits on every rank.
                   NVLink traffic is (p - 1) x the output per rank: for p = 2 what a ring all-reduce moves. The
                   workspace grows (a collective rendezvous) on an eager call; under a CUDA-graph capture a
                   workspace too small for the call takes the "nccl" path (warm up with the largest M first).
                   An output of at most peer_sum.INBOX_BYTES (1 MiB: decode) is summed instead by one kernel
                   (kernels/triton/peer_sum.py, the push sum): each program stores its slice of this rank's partial
                   into every peer's inbox in the workspace over NVLink, raises a flag there, waits for the peers'
                   flags and sums in rank order; one launch, no grid-wide barrier, the same bits on every rank.

Measured (2 x H200, NVLink, NCCL 2.28, benchmarks/results/h200x2/tp.json; docs/PERF.md, "Tensor parallel"): over
NCCL the overlap loses little or nothing: run beside a GEMM, NCCL's resident CTAs keep that many SMs from the
persistent kernels, whose CTAs have fixed tile lists, so the GEMM's last tiles wait for the collective. Over the copy
engines the transfer holds no SM: a Llama-3-70B MLP at M = 4096 / 8192 chunked ("auto") runs at 1.89-1.94x one GPU
(its GEMMs alone 1.91-2.00x; NCCL sequential 1.75-1.92x), and a row-parallel o_proj (8192 -> 8192), whose all-reduce
is as long as its GEMM, 1.10-1.50x with chunks=2 where NCCL sequential gives 0.90-1.25x. At decode (M <= 64) the
push sum costs 5-10 us over the GEMMs alone, NCCL's all-reduce 9-17 (torch's one-shot kernel, which it replaced,
5-16; MLP: fp8 1.69-1.78x one GPU, block scale 1.65-1.83x, bf16 1.82-1.85x). Both opt-in: transport="nccl",
chunks=1 by default.

Numerics: a column-parallel output is the single-device output's columns (each shard is quantized on its own: with
shard boundaries on multiples of 128 the fp8 per-channel and 128 x 128-block scales are the single-device ones).
A row-parallel output sums p partial products, each rounded to the output dtype, in the collective's dtype and
order (NCCL reduces in the output dtype, as Megatron and vLLM do): within rounding of one device, not bitwise; fp8 /
int8 per-token activations get one scale per token and shard of K (1 x 128 blocks: the single-device ones when K/p
is a multiple of 128).

Constraints: transport="copy_engine" needs CUDA tensors, a process group whose ranks' GPUs reach each other's memory
(one host: NVLink / PCIe peer access) and torch's symmetric memory, and reduce="all_reduce"; it was run on 2 ranks
only (p > 2 sums in float32 in rank order: CPU-reviewed, never run); torch.distributed initialized (dist.init_process_group) before a layer is built; out_features (column),
in_features (row) and the MLP's intermediate size divisible by p; reduce_scatter needs x's first dimension divisible
by p; inference-only (an input that requires grad with grad mode on raises, as the quantized layers do); the
state_dict holds this rank's shard (`local.*`, or the MLP's `w_gate_up` / `w_down` / `gate_up.*` / `down.*`). Build
from a full layer with `from_linear` / `from_mlp` (every rank passes the same full weights and slices its own).
"""
from __future__ import annotations

import torch

from ..kernels.triton import peer_sum as peer_sum_kernel
from ..ops import ffn_gated, gemm_a16w16, gemm_a16w16_gated
from .fused import ACTIVATIONS, GatedMLP
from .linear import Linear, SCHEMES, check_scheme, from_linear

ALIGN_ROWS = 128  # chunk boundaries on whole 128-row tiles where the rows allow
TAIL_ROWS = 512  # "auto" chunks: the last (exposed) collective covers at least this many rows
MAX_CHUNKS = 6
OUTPUTS = ("sharded", "gathered")
REDUCTIONS = ("all_reduce", "reduce_scatter", None)  # None: no collective, this rank's partial sum
TRANSPORTS = ("nccl", "copy_engine")  # the all-reduce's: NCCL's kernels, or copy-engine pulls (see the header)
WORKSPACE_ROUND = 1 << 21  # the copy-engine workspace grows in whole 2 MiB (and at least doubles)


# ----------------------------------------------------------------------------- process group and chunks

def _dist():
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("gemmkit.nn.parallel: torch.distributed is not initialized; call "
                           "torch.distributed.init_process_group('nccl') first (torchrun sets the environment)")
    return dist


def rank_and_world(group=None):
    """(this rank in `group`, the group's size); None: the default group."""
    dist = _dist()
    return dist.get_rank(group), dist.get_world_size(group)


def _all_gather(out, inp, group):
    dist = _dist()
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor  # the newer name from torch 2.13
    return fn(out, inp, group=group, async_op=True)


def _reduce_scatter(out, inp, group):
    dist = _dist()
    fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return fn(out, inp, group=group, async_op=True)


def _all_reduce(t, group):
    return _dist().all_reduce(t, group=group, async_op=True)


class _PeerSum:
    """The copy-engine all-reduce's state for one (process group, device): the symmetric-memory workspace the GEMMs
    write their partial products into, its handle (peer views, barriers), and the side stream the copies run on."""

    def __init__(self, group, device):
        self.group, self.device = group, device
        self.rank, self.world = rank_and_world(group)
        self.stream = torch.cuda.Stream(device)  # the barriers and the copies
        self.adds = torch.cuda.Stream(device)  # the sums: a chunk's pull need not wait for the chunk before's sum
        self.buf = self.handle = self.bases = None
        self.outgrown = []  # earlier workspaces, kept: a CUDA graph captured on one still reads and signals it

    def ready(self, nbytes):
        """Whether the workspace holds a partial product of `nbytes` after its region; grows it where not (a
        collective: every rank asks for the same sizes in the same order), except under a CUDA-graph capture."""
        if self.buf is not None and self.buf.numel() >= self.region + nbytes:
            return True
        if torch.cuda.is_current_stream_capturing():
            return False
        import torch.distributed._symmetric_memory as symm_mem

        old = 0 if self.buf is None else self.buf.numel()
        size = -(-max(self.region + nbytes, 2 * old) // WORKSPACE_ROUND) * WORKSPACE_ROUND
        group = self.group if self.group is not None else _dist().group.WORLD
        if self.buf is not None:
            self.outgrown.append((self.buf, self.handle, self.bases))
        self.buf = symm_mem.empty(size, dtype=torch.uint8, device=self.device)
        self.handle = symm_mem.rendezvous(self.buf, group)
        self.bases = torch.tensor(self.handle.buffer_ptrs, dtype=torch.int64, device=self.device)
        self.buf[:peer_sum_kernel.flag_bytes(self.world)].zero_()  # the push sum's counters and flags
        self.handle.barrier(channel=0)  # zeroed on every rank before any rank's first push
        return True

    @property
    def region(self):
        """Bytes at the start of the workspace before the partial product: the push sum's
        (kernels/triton/peer_sum.py)."""
        return peer_sum_kernel.region_bytes(self.world)

    def view(self, rank, M, N, dtype):
        """Rank `rank`'s partial product in its workspace as an (M, N) tensor of `dtype` (this rank's own: its local
        memory)."""
        return self.handle.get_buffer(rank, (M, N), dtype, self.region // dtype.itemsize)


_PEER_SUMS: dict = {}


def _peer_sum(group, device):
    key = (id(group), device)
    if key not in _PEER_SUMS:
        _PEER_SUMS[key] = _PeerSum(group, device)
    return _PEER_SUMS[key]


def check_chunks(chunks):
    if chunks == "auto" or (isinstance(chunks, int) and not isinstance(chunks, bool) and chunks >= 1):
        return chunks
    raise ValueError(f"chunks: expected 'auto' or an int >= 1, got {chunks!r}")


def chunk_rows(M, chunks="auto"):
    """The row ranges [(start, end)] of the overlapped pipeline: halving sizes, the last two about equal (each
    boundary on the nearest multiple of ALIGN_ROWS)."""
    check_chunks(chunks)
    if chunks == "auto":
        n = 1
        while n < MAX_CHUNKS and M >> n >= TAIL_ROWS:
            n += 1
    else:
        n = chunks
    bounds, start = [], 0
    for i in range(1, n):
        end = M - (M >> i)  # the ideal boundaries M/2, 3M/4, ..., on the nearest whole tile where M allows
        if end >= ALIGN_ROWS:
            end = (end + ALIGN_ROWS // 2) // ALIGN_ROWS * ALIGN_ROWS
        if start < end < M:
            bounds.append((start, end))
            start = end
    bounds.append((start, M))
    return bounds


def _part(name, size, world):
    if size % world:
        raise ValueError(f"{name} = {size}: expected a multiple of the tensor-parallel size {world}")
    return size // world


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name}: expected one of {choices}, got {value!r}")
    return value


# ----------------------------------------------------------------------------- local shards

def _local_from(weight, bias, scheme):
    """The gemmkit layer of `scheme` on a shard (W_r, b_r) of a full layer's weights (copied: the shard owns them)."""
    N, K = weight.shape
    lin = torch.nn.Linear(K, N, bias=bias is not None, device="meta")
    lin.weight = torch.nn.Parameter(weight.detach().contiguous().clone(), requires_grad=False)
    if bias is not None:
        lin.bias = torch.nn.Parameter(bias.detach().clone(), requires_grad=False)
    return from_linear(lin, scheme)


def _local_new(scheme, in_features, out_features, bias, device, dtype, fan_in):
    """A fresh shard: bf16 / fp16 initialized as torch.nn.Linear initializes the full layer (bound 1/sqrt(fan_in) of
    the FULL in_features), the quantized schemes with empty buffers to load a state_dict into."""
    cls = check_scheme(scheme)
    if cls is Linear:
        want = Linear.scheme_dtypes[scheme]
        if dtype is not None and dtype != want:
            raise TypeError(f"dtype: scheme {scheme!r} computes in {want}, got {dtype}")
        layer = Linear(in_features, out_features, bias, device=device, dtype=want)
        bound = fan_in ** -0.5
        with torch.no_grad():
            layer.weight.uniform_(-bound, bound)
            if layer.bias is not None:
                layer.bias.uniform_(-bound, bound)
        layer.weight.requires_grad_(False)
        if layer.bias is not None:
            layer.bias.requires_grad_(False)
        return layer
    kw = {} if dtype is None else {"bias_dtype": dtype}
    return cls(in_features, out_features, bias, device=device, **kw)


def _no_grad(module, x):
    if torch.is_grad_enabled() and isinstance(x, torch.Tensor) and x.requires_grad:
        raise RuntimeError(f"x: requires grad, but gemmkit.nn.{type(module).__name__} is inference-only (no "
                           "backward through the collectives); run it under torch.no_grad() / torch.inference_mode()")


def _rows(module, x, K, what):
    """x (..., K) -> (x2 (M, K), leading shape)."""
    _no_grad(module, x)
    if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[-1] != K:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x: expected a tensor (..., {K}) ({what}), got {got}")
    return x.reshape(-1, K), tuple(x.shape[:-1])


class _QuantRows:
    """A quantized activation (q (M, K), its per-row scales (M, ...)) sliced by rows as one value: what the
    chunked MLP hands `_Parallel._reduced` in place of x's rows."""

    def __init__(self, q, scale):
        self.q, self.scale = q, scale
        self.shape, self.device = q.shape, q.device

    def __getitem__(self, rows):
        return _QuantRows(self.q[rows], self.scale[rows])


class _Parallel(torch.nn.Module):
    """What the tensor-parallel modules share: the group, this rank, the chunking, and the two collectives' loops."""

    def _setup(self, group, chunks, in_features, out_features, scheme, transport="nccl", reduce="all_reduce"):
        self.group = group
        self.rank, self.world = rank_and_world(group)
        self.chunks = check_chunks(chunks)
        self.transport = _check_choice("transport", transport, TRANSPORTS)
        if transport == "copy_engine":
            if reduce != "all_reduce":
                raise ValueError(f"transport='copy_engine' carries an all-reduce; reduce={reduce!r} takes 'nccl'")
            if not torch.cuda.is_available() or _dist().get_backend(group) != "nccl":
                raise ValueError("transport='copy_engine': needs CUDA GPUs and a process group of the NCCL backend "
                                 f"(this one: {_dist().get_backend(group)}); use transport='nccl'")
        self.in_features, self.out_features, self.scheme = in_features, out_features, scheme
        check_scheme(scheme)

    def _gathered(self, x2, n, dtype, partial):
        """(M, p * n): partial(rows, out) writes this rank's (rows, n) columns; all-gathered chunk by chunk."""
        M = x2.shape[0]
        mine = torch.empty(M, n, dtype=dtype, device=x2.device)
        pending = []
        for a, b in chunk_rows(M, self.chunks):
            partial(x2[a:b], mine[a:b])
            buf = torch.empty(self.world * (b - a), n, dtype=dtype, device=x2.device)  # rank-major rows
            pending.append((a, b, buf, _all_gather(buf, mine[a:b], self.group)))
        y = torch.empty(M, self.world, n, dtype=dtype, device=x2.device)
        for a, b, buf, work in pending:
            work.wait()
            y[a:b].copy_(buf.view(self.world, b - a, n).transpose(0, 1))
        return y.view(M, self.world * n)

    def _reduced(self, x2, lead, N, dtype, partial, reduce):
        """sum over ranks of partial(rows, out) (each writes its (rows, N) product): all-reduced, (M, N) on every
        rank, or reduce-scattered, rank r keeping rows r * M/p .. of the sum; chunk by chunk either way. reduce=None:
        this rank's partial product (M, N), chunk by chunk, no collective."""
        M = x2.shape[0]
        if reduce == "all_reduce" and self.transport == "copy_engine" and M * N:
            y = self._peer_reduced(x2, N, dtype, partial)
            if y is not None:
                return y.view(*lead, N)
        if reduce in ("all_reduce", None):
            y = torch.empty(M, N, dtype=dtype, device=x2.device)
            pending = []
            for a, b in chunk_rows(M, self.chunks):
                partial(x2[a:b], y[a:b])
                if reduce is not None:
                    pending.append(_all_reduce(y[a:b], self.group))
            for work in pending:
                work.wait()
            return y.view(*lead, N)
        if not lead or lead[0] % self.world:
            raise ValueError(f"x: reduce_scatter splits x's first dimension across the {self.world} ranks; got x of "
                             f"shape {(*lead, x2.shape[1])}")
        m = M // self.world
        y = torch.empty(m, N, dtype=dtype, device=x2.device)
        pending = []
        for a, b in chunk_rows(m, self.chunks):
            buf = torch.empty(self.world, b - a, N, dtype=dtype, device=x2.device)
            for j in range(self.world):  # rank j's rows of this chunk
                partial(x2[j * m + a:j * m + b], buf[j])
            pending.append((buf, _reduce_scatter(y[a:b], buf.view(-1, N), self.group)))
        for buf, work in pending:
            work.wait()
        return y.view(lead[0] // self.world, *lead[1:], N)

    def _peer_reduced(self, x2, N, dtype, partial):
        """The all-reduce over copy engines (the header's "copy_engine"); None where the workspace cannot take the
        call (a CUDA-graph capture before an eager call of this size: the caller takes NCCL)."""
        if x2.device.type != "cuda":
            raise ValueError(f"x: transport='copy_engine' needs CUDA tensors, got {x2.device}")
        M = x2.shape[0]
        ps = _peer_sum(self.group, x2.device)
        if not ps.ready(M * N * dtype.itemsize):
            return None
        mine, r = ps.view(ps.rank, M, N, dtype), ps.rank
        if M * N * dtype.itemsize <= peer_sum_kernel.INBOX_BYTES:
            # a few rows (decode): one kernel pushes this rank's partial into the peers' inboxes and sums, where the
            # pull's barrier, copy and add would each pay a launch and a wait
            partial(x2, mine)
            return peer_sum_kernel.peer_sum(mine, torch.empty(M, N, dtype=dtype, device=x2.device), ps.bases, r,
                                            ps.world)
        peers = [ps.view(j, M, N, dtype) for j in range(ps.world)]
        y = torch.empty(M, N, dtype=dtype, device=x2.device)
        got = torch.empty(ps.world, M, N, dtype=dtype, device=x2.device) if ps.world > 2 else \
            torch.empty(1, M, N, dtype=dtype, device=x2.device)
        cur = torch.cuda.current_stream(x2.device)
        for a, b in chunk_rows(M, self.chunks):
            partial(x2[a:b], mine[a:b])
            ps.stream.wait_stream(cur)
            with torch.cuda.stream(ps.stream):
                ps.handle.barrier(channel=0)  # every rank's chunk written
                for j in range(ps.world):
                    if j != r:
                        got[0 if ps.world == 2 else j, a:b].copy_(peers[j][a:b])  # the copy engine, over NVLink
            ps.adds.wait_stream(ps.stream)  # (an add beside a GEMM runs slowly: on the copies' stream it held up
            with torch.cuda.stream(ps.adds):  # the next chunk's pull, and the last pulls ran after the GEMMs)
                if ps.world == 2:
                    torch.add(mine[a:b], got[0, a:b], out=y[a:b])  # a + b == b + a: the same bits on both ranks
                else:
                    acc = torch.zeros(b - a, N, dtype=torch.float32, device=x2.device)
                    for j in range(ps.world):  # rank order on every rank
                        acc += (mine if j == r else got[j])[a:b]
                    y[a:b].copy_(acc)
        with torch.cuda.stream(ps.stream):
            ps.handle.barrier(channel=0)  # every peer done reading this rank's workspace
        cur.wait_stream(ps.stream)
        cur.wait_stream(ps.adds)
        return y

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, scheme={self.scheme}, "
                f"rank={self.rank}/{self.world}, chunks={self.chunks}"
                + (f", transport={self.transport}" if self.transport != "nccl" else ""))


# ----------------------------------------------------------------------------- the layers

class ColumnParallelLinear(_Parallel):
    """y = x @ W.T + b with W's rows (and b) split over the group; output "sharded" (this rank's N/p columns) or
    "gathered" (all N, all-gathered chunk by chunk behind the GEMM)."""

    def __init__(self, in_features, out_features, bias=True, *, scheme="bf16", group=None, output="sharded",
                 chunks=1, device=None, dtype=None):
        super().__init__()
        self._setup(group, chunks, in_features, out_features, scheme)
        self.output = _check_choice("output", output, OUTPUTS)
        n = _part("out_features", out_features, self.world)
        self.local = _local_new(scheme, in_features, n, bias, device, dtype, fan_in=in_features)

    @classmethod
    def from_linear(cls, linear, scheme="bf16", *, group=None, output="sharded", chunks=1):
        """This rank's shard of a full nn.Linear (every rank passes the same one)."""
        N, K = linear.weight.shape
        m = cls.__new__(cls)
        torch.nn.Module.__init__(m)
        m._setup(group, chunks, K, N, scheme)
        m.output = _check_choice("output", output, OUTPUTS)
        n = _part("out_features", N, m.world)
        rows = slice(m.rank * n, (m.rank + 1) * n)
        m.local = _local_from(linear.weight[rows], None if linear.bias is None else linear.bias[rows], scheme)
        return m

    def forward(self, x):
        x2, lead = _rows(self, x, self.in_features, "in_features")
        local, dtype = self.local, x.dtype

        def partial(rows, out):
            local._gemm(rows, dtype, local.bias, out=out)

        n = local.out_features
        if self.output == "sharded":
            y = torch.empty(x2.shape[0], n, dtype=dtype, device=x2.device)
            partial(x2, y)
            return y.view(*lead, n)
        return self._gathered(x2, n, dtype, partial).view(*lead, self.out_features)

    def extra_repr(self):
        return f"{super().extra_repr()}, output={self.output}"


class RowParallelLinear(_Parallel):
    """y = x @ W.T + b with W's columns split over the group: x comes split along K (input_is_parallel=True: (...,
    K/p), e.g. a ColumnParallelLinear's sharded output) or whole ((..., K): this rank reads its K/p columns in place);
    the partial products are all-reduced (or reduce-scattered over x's first dimension), chunk by chunk behind the
    GEMM; reduce=None returns this rank's partial product for the caller to reduce. The bias is added once, in rank
    0's GEMM."""

    def __init__(self, in_features, out_features, bias=True, *, scheme="bf16", group=None, reduce="all_reduce",
                 input_is_parallel=True, chunks=1, transport="nccl", device=None, dtype=None):
        super().__init__()
        self.reduce = _check_choice("reduce", reduce, REDUCTIONS)
        self._setup(group, chunks, in_features, out_features, scheme, transport, reduce)
        self.input_is_parallel = bool(input_is_parallel)
        k = _part("in_features", in_features, self.world)
        self.local = _local_new(scheme, k, out_features, bias, device, dtype, fan_in=in_features)

    @classmethod
    def from_linear(cls, linear, scheme="bf16", *, group=None, reduce="all_reduce", input_is_parallel=True,
                    chunks=1, transport="nccl"):
        """This rank's shard of a full nn.Linear (every rank passes the same one)."""
        N, K = linear.weight.shape
        m = cls.__new__(cls)
        torch.nn.Module.__init__(m)
        m.reduce = _check_choice("reduce", reduce, REDUCTIONS)
        m._setup(group, chunks, K, N, scheme, transport, reduce)
        m.input_is_parallel = bool(input_is_parallel)
        k = _part("in_features", K, m.world)
        m.local = _local_from(linear.weight[:, m.rank * k:(m.rank + 1) * k], linear.bias, scheme)
        return m

    def forward(self, x):
        k = self.local.in_features
        if self.input_is_parallel:
            x2, lead = _rows(self, x, k, f"in_features / {self.world}: this rank's part of K")
        else:
            x2, lead = _rows(self, x, self.in_features, "in_features")
            x2 = x2[:, self.rank * k:(self.rank + 1) * k]
        local, dtype = self.local, x.dtype
        bias = local.bias if self.rank == 0 else None

        def partial(rows, out):
            local._gemm(rows, dtype, bias, out=out)

        return self._reduced(x2, lead, self.out_features, dtype, partial, self.reduce)

    def extra_repr(self):
        return f"{super().extra_repr()}, reduce={self.reduce}, input_is_parallel={self.input_is_parallel}"


class ParallelGatedMLP(_Parallel):
    """y = down(act(gate(x)) * up(x)) (Llama's MLP, no biases) with gate / up column-parallel and down
    row-parallel: each rank computes its I/p slice of the intermediate and its partial product of y, then one
    all-reduce (or reduce-scatter over x's first dimension; None: this rank's partial product), chunk by chunk behind
    the GEMMs."""

    def __init__(self, hidden_size, intermediate_size, *, scheme="bf16", activation="silu", group=None,
                 reduce="all_reduce", chunks=1, transport="nccl", device=None, dtype=None):
        super().__init__()
        self._init_common(hidden_size, intermediate_size, scheme, activation, group, reduce, chunks, transport)
        i, K = self.local_intermediate, hidden_size
        if check_scheme(scheme) is Linear:
            gate_up = _local_new(scheme, K, 2 * i, False, device, dtype, fan_in=K)
            down = _local_new(scheme, i, K, False, device, dtype, fan_in=intermediate_size)
            self._set_weights(gate_up, down)
        else:
            self.gate_up = _local_new(scheme, K, 2 * i, False, device, dtype, fan_in=K)
            self.down = _local_new(scheme, i, K, False, device, dtype, fan_in=intermediate_size)

    def _init_common(self, K, intermediate_size, scheme, activation, group, reduce, chunks, transport):
        self.reduce = _check_choice("reduce", reduce, REDUCTIONS)
        self._setup(group, chunks, K, K, scheme, transport, reduce)
        self.intermediate_size = intermediate_size
        self.activation = _check_choice("activation", activation, tuple(ACTIVATIONS))
        self.local_intermediate = _part("intermediate_size", intermediate_size, self.world)

    def _set_weights(self, gate_up, down):
        self.w_gate_up = torch.nn.Parameter(gate_up.weight.detach(), requires_grad=False)
        self.w_down = torch.nn.Parameter(down.weight.detach(), requires_grad=False)

    @classmethod
    def from_mlp(cls, mlp, scheme="bf16", *, activation=None, group=None, reduce="all_reduce", chunks=1,
                 transport="nccl"):
        """This rank's shard of a full MLP: a gemmkit.nn.GatedMLP, or a module with gate_proj / up_proj / down_proj
        (torch.nn.Linear, no bias; `activation` names its act_fn: silu, gelu, gelu_tanh or relu). Every rank passes
        the same one."""
        if isinstance(mlp, GatedMLP):
            I = mlp.intermediate_size
            gate, up, down = mlp.w_gate_up[:I], mlp.w_gate_up[I:], mlp.w_down
            activation = activation or mlp.activation
        else:
            parts = [getattr(mlp, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
            if not all(isinstance(p, torch.nn.Linear) and p.bias is None for p in parts):
                raise ValueError("mlp: expected a gemmkit.nn.GatedMLP or gate_proj / up_proj / down_proj "
                                 "torch.nn.Linear without bias")
            gate, up, down = (p.weight for p in parts)
            I = gate.shape[0]
            if activation is None:
                raise ValueError("activation: name the MLP's act_fn (silu, gelu, gelu_tanh or relu)")
        K = down.shape[0]
        if tuple(gate.shape) != (I, K) or tuple(up.shape) != (I, K) or tuple(down.shape) != (K, I):
            raise ValueError(f"mlp: shapes gate {tuple(gate.shape)}, up {tuple(up.shape)}, down {tuple(down.shape)}: "
                             "expected (I, K), (I, K), (K, I)")
        m = cls.__new__(cls)
        torch.nn.Module.__init__(m)
        m._init_common(K, I, scheme, activation, group, reduce, chunks, transport)
        i, r = m.local_intermediate, m.rank
        rows = slice(r * i, (r + 1) * i)
        gate_up = _local_from(torch.cat([gate[rows], up[rows]]), None, scheme)
        down_r = _local_from(down[:, rows], None, scheme)
        if check_scheme(scheme) is Linear:
            m._set_weights(gate_up, down_r)
        else:
            m.gate_up, m.down = gate_up, down_r
        return m

    def forward(self, x):
        x2, lead = _rows(self, x, self.in_features, "hidden_size")
        dtype = x.dtype
        bf16 = SCHEMES[self.scheme] is Linear
        if bf16 and dtype != self.w_down.dtype:
            raise TypeError(f"x: expected dtype {self.w_down.dtype} (the layer's; no casts), got {dtype}")
        if len(chunk_rows(x2.shape[0], self.chunks)) > 1:
            # chunked: only the down projection feeds the collective, so gate_up runs once on every row (each
            # chunk of it would stream the whole gate_up weight again) and the chunks cut the down GEMM
            return self._reduced(self._down_input(x2, dtype), lead, self.out_features, dtype,
                                 lambda rows, out: self._down(rows, dtype, out), self.reduce)
        if bf16:
            def partial(rows, out):
                ffn_gated(rows, self.w_gate_up, self.w_down, activation=self.activation, out=out)
        else:
            def partial(rows, out):
                self._down(self._down_input(rows, dtype), dtype, out)

        return self._reduced(x2, lead, self.out_features, dtype, partial, self.reduce)

    def _down_input(self, x2, dtype):
        """The down projection's input for x2's rows, one value sliced by rows: bf16 / fp16 act(gate) * up
        (gemm_a16w16_gated); quantized schemes the gate_up GEMM, then act * mul fused into the down layer's
        activation quantization (one pass, `_QuantRows`; torch's act * mul where the scheme has no gated form)."""
        if SCHEMES[self.scheme] is Linear:
            return gemm_a16w16_gated(x2, self.w_gate_up, activation=self.activation)
        h = self.gate_up._gemm(x2, dtype, None)
        q = self.down.quantize_gated(h, self.activation)
        if q is None:  # a scheme without a gated quantizer (mxfp4)
            act, i = ACTIVATIONS[self.activation], self.local_intermediate
            return act(h[:, :i]) * h[:, i:]
        return _QuantRows(*q)

    def _down(self, rows, dtype, out):
        """out = rows @ W_down.T for rows of `_down_input`'s value."""
        if isinstance(rows, _QuantRows):
            self.down._gemm_quantized(rows.q, rows.scale, dtype, None, out=out)
        elif SCHEMES[self.scheme] is Linear:
            gemm_a16w16(rows, self.w_down, out=out)
        else:
            self.down._gemm(rows, dtype, None, out=out)

    def extra_repr(self):
        return (f"{super().extra_repr()}, intermediate_size={self.intermediate_size}, activation={self.activation}, "
                f"reduce={self.reduce}")


__all__ = ["ColumnParallelLinear", "RowParallelLinear", "ParallelGatedMLP", "chunk_rows", "rank_and_world",
           "ALIGN_ROWS", "TAIL_ROWS", "MAX_CHUNKS", "TRANSPORTS"]
