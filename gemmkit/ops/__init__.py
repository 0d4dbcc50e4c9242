"""Public ops, one module per family."""
from .gemm_a8w8 import gemm_a8w8
from .gemm_a8w8_blockscale import gemm_a8w8_blockscale
from .gemm_a16w16 import gemm_a16w16
from .ffn import ffn_gated, gemm_a16w16_gated

__all__ = ["ffn_gated", "gemm_a16w16_gated", "gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale"]
