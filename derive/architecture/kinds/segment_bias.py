"""Softmax attention with a relative position bias shared by every layer (CPM-Ant).

transformers' models/cpmant/modeling_cpmant.py: CpmAntSegmentPositionEmbedding holds one
relative_attention_bias of (segment_types^2 + position_bias_num_buckets) rows x num_attention_heads, which
CpmAntModel computes once a forward and adds to every layer's scores. The layers are plain attention
(project_q/k/v and attention_out without biases); the table is a lookup the model holds once, so it is counted
with the embedding (Kind.shared_tables), not with the matmul weights.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import FULL, Resolve
from derive.architecture.spec import Spec
from formulas import notation as n


@dataclass(frozen=True)
class SegmentBiasAttention(Attention):
    """Attention whose scores add a bias looked up in one (segments^2 + buckets) x heads table for the model."""

    buckets: int = 0  # position_bias_num_buckets: relative-distance buckets
    segments: int = 0  # segment_types: one bias row for each (query segment, key segment) pair besides

    def shared_tables(self, s: Resolve) -> sympy.Expr:
        return (self.segments**2 + self.buckets) * s(n.n_h)

    def notes(self) -> tuple[str, ...]:
        return (
            f"the relative position-bias table ({self.segments}^2 segment pairs + {self.buckets} buckets, "
            "x the heads) is held once and counted with the embedding",
        )


def read(k: Keys, spec: Spec) -> SegmentBiasAttention:
    """Attention as the entry's section says, with the table's rows from position_bias_num_buckets, segment_types."""
    plain = read_attention(k, spec, FULL)
    return SegmentBiasAttention(
        **{f.name: getattr(plain, f.name) for f in fields(plain)},
        buckets=k.int("position_bias_num_buckets", minimum=0),
        segments=k.int("segment_types", minimum=0),
    )
