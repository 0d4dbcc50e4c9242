"""gemmkit.nn.parallel on 2 GPUs of one host over NCCL (NVLink multicast off): the cases of the CPU test
(tests/nn/_tp_workers.py: float64 reference of the sharded computation, the single-device layer) with compiled
kernels and NCCL's own stream, plus one CUDA graph holding the chunked collectives; the copy-engine all-reduce
(symmetric memory) against NCCL's. Needs 2 GPUs: run on the
nvidia-h100-x2 / nvidia-h200-x2 machine with `pytest -m gpu tests/nn/test_parallel_gpu.py`."""
import pytest
import torch

from _tp_workers import spawn

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs of one host (NCCL)")]
SCHEMES = ["bf16", "fp8", "fp8_block"]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_linear_layers_nccl(scheme):
    spawn("linear_layers", backend="nccl", scheme=scheme, chunk_list=(1, 3, "auto"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gated_mlp_nccl(scheme):
    spawn("gated_mlp", backend="nccl", scheme=scheme, chunk_list=(1, 3, "auto"))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_graph_replay_equals_eager_nccl(scheme):
    spawn("graph_replay", backend="nccl", scheme=scheme)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_torch_compile_inductor_matches_eager_nccl(scheme):
    spawn("compiled", backend="nccl", scheme=scheme)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_copy_engine_all_reduce_nccl(scheme):
    spawn("copy_engine", backend="nccl", scheme=scheme)
