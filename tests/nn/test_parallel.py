"""gemmkit.nn.parallel on 2 CPU processes (gloo) through the interpreter: every rank's result against the float64
reference of the sharded computation and against the single-device layer (tests/nn/_tp_workers.py says how), the
chunk plan of the overlapped collectives, and the refusals that need no second process."""
import pytest
import torch

from gemmkit.nn import parallel as P

from _tp_workers import spawn

SCHEMES = ["bf16", "fp8", "fp8_block"]


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme", SCHEMES)
def test_linear_layers_on_two_ranks(scheme):
    # fp8 per-token GEMMs are the interpreter's slowest (128 s for both chunkings here): its per-shard quantization
    # does not depend on the chunking, which bf16 and fp8_block cover sequential and chunked
    spawn("linear_layers", scheme=scheme, chunk_list=(3,) if scheme == "fp8" else (1, 3))


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme", SCHEMES)
def test_gated_mlp_on_two_ranks(scheme):
    spawn("gated_mlp", scheme=scheme)


@pytest.mark.parametrize("M", [0, 1, 17, 64, 1023, 1024, 4096, 4097, 8192, 100000])
@pytest.mark.parametrize("chunks", ["auto", 1, 2, 3, 7])
def test_chunk_rows_cover_every_row_once(M, chunks):
    b = P.chunk_rows(M, chunks)
    assert b[0][0] == 0 and b[-1][1] == M and all(x[1] == y[0] for x, y in zip(b, b[1:]))
    assert all(e > s for s, e in b) or M == 0
    n = len(b)
    if chunks != "auto":
        assert n <= max(1, min(chunks, M)) and (n == chunks or M < P.ALIGN_ROWS << chunks)
    sizes = [e - s for s, e in b]
    assert all(x >= y - P.ALIGN_ROWS for x, y in zip(sizes, sizes[1:])), sizes  # halving; the exposed last chunk
    assert all(e % P.ALIGN_ROWS == 0 for s, e in b[:-1] if e >= P.ALIGN_ROWS)  # about the smallest


def test_auto_chunks():
    assert P.chunk_rows(64) == [(0, 64)]  # decode: one chunk, the collective's latency is what is left
    assert P.chunk_rows(1023) == [(0, 1023)]
    assert P.chunk_rows(4096) == [(0, 2048), (2048, 3072), (3072, 3584), (3584, 4096)]
    assert [e - s for s, e in P.chunk_rows(8192)] == [4096, 2048, 1024, 512, 512]
    assert len(P.chunk_rows(10**6)) == P.MAX_CHUNKS


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "two"])
def test_bad_chunks_refused(bad):
    with pytest.raises(ValueError, match="chunks"):
        P.chunk_rows(100, bad)


def test_without_a_process_group_says_so():
    import torch.distributed as dist

    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        P.ColumnParallelLinear(64, 64)
    with pytest.raises(RuntimeError, match="init_process_group"):
        P.RowParallelLinear.from_linear(torch.nn.Linear(64, 64).to(torch.bfloat16))


@pytest.mark.interpreter
@pytest.mark.parametrize("scheme", SCHEMES)
def test_torch_compile_matches_eager_on_two_ranks(scheme):
    """torch.compile (dynamo with the eager backend: no C++ compiler on the CPU runners) of each chunked layer."""
    spawn("compiled", scheme=scheme)
