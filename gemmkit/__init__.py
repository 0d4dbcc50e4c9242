"""gemmkit: readable, fast GEMM kernels for LLM workloads (Triton and Gluon; Hopper and AMD Instinct).

Public ops follow PyTorch's nn.Linear convention: y = x @ w.T with w of shape (N, K).
"""
from . import quant  # noqa: F401  (gemmkit.quant: the quantizers)
from .ops import gemm_a8w8, gemm_a8w8_blockscale, gemm_a16w16
from .ops import batched_gemm_a8w8, batched_gemm_a16w16
from .ops import ffn_gated, gemm_a16w16_gated

__version__ = "0.1.0"
__all__ = ["ffn_gated", "gemm_a16w16_gated", "gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "__version__"]
__all__ += ["batched_gemm_a16w16", "batched_gemm_a8w8"]
from .ops import gemm_afp4wfp4  # noqa: E402
__all__ += ["gemm_afp4wfp4"]
from .ops import gemm_a8w8_blockscale_split_cat, gemm_split_cat  # noqa: E402
__all__ += ["gemm_split_cat", "gemm_a8w8_blockscale_split_cat"]
