"""Layer kinds, one module each: a kind owns its parameters, cache or state, FLOPs and what a model asks of it."""

from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.base import FULL, Indexer, Kind, Resolve, Span
from derive.architecture.kinds.compressed import CompressedAttention
from derive.architecture.kinds.delta_net import GatedDeltaNet
from derive.architecture.kinds.latent import LatentAttention
from derive.architecture.kinds.mamba2 import Mamba2
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.kinds.moe import MoE

__all__ = [
    "FULL",
    "Attention",
    "CompressedAttention",
    "DenseMLP",
    "GatedDeltaNet",
    "Indexer",
    "Kind",
    "LatentAttention",
    "Mamba2",
    "MoE",
    "Resolve",
    "Span",
]
