"""gemmkit: readable, fast GEMM kernels for LLM workloads (Triton and Gluon; Hopper and AMD Instinct).

Public ops follow PyTorch's nn.Linear convention: y = x @ w.T with w of shape (N, K).
"""
from ._versions import check_triton as _check_triton

_check_triton()

from . import quant  # noqa: E402, F401  (gemmkit.quant: the quantizers)
from .kernels import _interpreter  # noqa: E402
from .ops import (batched_gemm_a8w8, batched_gemm_a16w16, ffn_gated, gemm_a8w8, gemm_a8w8_blockscale,
                  gemm_a8w8_blockscale_split_cat, gemm_a16w16, gemm_a16w16_gated, gemm_afp4wfp4, gemm_split_cat)

_interpreter.install()  # CPU processes (TRITON_INTERPRET=1): the interpreter computes what GPUs compute

from . import nn  # noqa: E402, F401  (gemmkit.nn: nn.Linear replacements on the ops, convert())
from .tune import online as _online  # noqa: E402
from .tune.online import set_tuning  # noqa: E402  (GEMMKIT_TUNE's modes at run time: configs/usercache.py)

_online.install()  # a shape no table serves, under GEMMKIT_TUNE=on: tuned on its first call

__version__ = "0.1.0"
__all__ = ["gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "gemm_afp4wfp4", "batched_gemm_a16w16",
           "batched_gemm_a8w8", "gemm_a16w16_gated", "ffn_gated", "gemm_split_cat",
           "gemm_a8w8_blockscale_split_cat", "set_tuning", "__version__"]
