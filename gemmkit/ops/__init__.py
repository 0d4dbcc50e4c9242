"""Public ops, one module per family."""
from .gemm_a16w16 import gemm_a16w16

__all__ = ["gemm_a16w16"]
