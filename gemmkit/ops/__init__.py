"""Public ops, one module per family."""
from .batched_gemm import batched_gemm_a8w8, batched_gemm_a16w16
from .ffn import ffn_gated, gemm_a16w16_gated
from .gemm_a8w8 import gemm_a8w8
from .gemm_a8w8_blockscale import gemm_a8w8_blockscale
from .gemm_a16w16 import gemm_a16w16
from .gemm_afp4wfp4 import gemm_afp4wfp4
from .gemm_split_cat import gemm_a8w8_blockscale_split_cat, gemm_split_cat

__all__ = ["gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "gemm_afp4wfp4", "batched_gemm_a16w16",
           "batched_gemm_a8w8", "gemm_a16w16_gated", "ffn_gated", "gemm_split_cat", "gemm_a8w8_blockscale_split_cat"]
