"""Attention layers: MultiHeadAttention, Attention, AdditiveAttention and EinsumDense.

Re-exported by `kerasrs.layers`.
"""

from kerasrs.layers.attention.attention import AdditiveAttention, Attention
from kerasrs.layers.attention.einsum_dense import EinsumDense
from kerasrs.layers.attention.grouped_query_attention import (  # noqa: F401
    GroupedQueryAttention, GroupQueryAttention)
from kerasrs.layers.attention.multi_head_attention import MultiHeadAttention

__all__ = ["MultiHeadAttention", "Attention", "AdditiveAttention", "EinsumDense",
           "GroupQueryAttention", "GroupedQueryAttention"]
