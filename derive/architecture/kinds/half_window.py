"""Sliding-window attention whose window is half a config key (ModernBERT-decoder's local_attention // 2).

ModernBertDecoderConfig.__post_init__ sets sliding_window = local_attention // 2 whatever the config saved as
sliding_window, and ModernBertDecoderAttention masks its sliding layers to that window. The layer itself is plain
softmax attention (kinds/attention.py); only where its window comes from differs.
"""

from __future__ import annotations

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.attention import read as read_attention
from derive.architecture.kinds.base import Span
from derive.architecture.spec import Spec


def read(k: Keys, spec: Spec) -> Attention:
    """Attention as the entry's section says, over a window of `window_key` // 2 tokens (`window_key` from 2)."""
    key = spec.raw("window_key", "local_attention")
    whole = k.int(key, minimum=2)
    return read_attention(k, spec, Span("sliding", whole // 2))
