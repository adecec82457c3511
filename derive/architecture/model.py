"""A model as data: its embedding, and runs of identical layers, each a mixer and an MLP.

Family readers (derive/architecture/families.py) build an Architecture from a
config.json; derive/architecture/build.py turns it into the model's formulas.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from derive.architecture.kinds.base import Kind

if TYPE_CHECKING:  # a model reads only the kind modules its layers need
    from derive.architecture.kinds.mlp import DenseMLP
    from derive.architecture.kinds.moe import MoE


@dataclass(frozen=True)
class LayerGroup:
    """`count` consecutive layers alike: a mixer (or none), a dense MLP and/or a MoE block (or neither).

    norms: d-wide normalisations a layer applies outside its mixer (two RMSNorms in Llama, seven in Gemma 4).
    hyper: residual streams of DeepSeek V4's hyper-connections (0: a plain residual).
    """

    count: int
    mixer: Kind | None
    mlp: DenseMLP | None = None
    moe: MoE | None = None
    norms: int = 2
    hyper: int = 0
    passes: int = 1  # times a token runs each of these layers, with the same weights (Dory's recurrent loops)

    def parts(self) -> tuple[Kind, ...]:
        return tuple(p for p in (self.mixer, self.mlp, self.moe) if p is not None)


@dataclass(frozen=True)
class Architecture:
    """The text decoder of one checkpoint, in the counts its config gives.

    layer_norm: LayerNorms with a bias (GPT-2) rather than RMSNorms. expert_format: the number format the
    checkpoint stores its routed experts in when it differs from the rest (gpt-oss: mxfp4). state_dtype: the
    dtype recurrent state is kept in (Mamba and linear attention keep fp32). max_context: the position limit.
    """

    name: str
    family: str
    vocab: int
    hidden: int
    groups: tuple[LayerGroup, ...]
    tied: bool
    layer_norm: bool = False
    positions: int = 0
    outer_norms: int = 1  # d-wide norms outside the layers: the final norm, and an embedding norm (BLOOM)
    head_bias: bool = False  # the LM head adds a V-wide bias
    head_scale: bool = False  # the LM head scales its logits by a learned V-wide vector (Dory's nGPT)
    head_dense: int = 0  # the head first transforms the hidden state: a d x d dense (1), with its bias (2)
    hyper_comb: bool = True  # the hyper-connection mixers keep DeepSeek V4's h x h comb rows (HY V4: no)
    extra_rows: int = 0  # input-embedding rows past the vocabulary, which the head does not have (Mllama: 8)
    per_layer_input: int = 0  # d_pl: each layer's own input embedding, gated into it (Gemma 4's PLE)
    per_layer_vocab: int = 0
    bridge: int = 0  # d_b: a drafter's pre/post projections to its backbone's width (Gemma 4 assistant)
    hyper: int = 0
    max_context: int = 0
    torch_dtype: str = ""
    quantization: str = ""
    weight_recipe: str = ""  # the recipe (formulas/recipes.toml) quantization_config names, if one does
    expert_format: str = ""
    state_dtype: str = ""
    mtp_layers: int = 0  # multi-token-prediction modules the checkpoint ships beside its layers (DeepSeek-V3: 1)
    notes: tuple[str, ...] = field(default=())

    # What the derivations ask of a model, whatever its layers.
    @property
    def layers(self) -> int:
        return sum(g.count for g in self.groups)

    def count(self, test) -> int:  # type: ignore[no-untyped-def]
        return sum(g.count for g in self.groups if test(g))

    @property
    def attention(self) -> Kind | None:
        """The first softmax-attention mixer: its heads are what tensor parallelism splits."""
        return next((m for m in self.mixers if m.softmax), None)

    @property
    def heads(self) -> int:
        mixer = self.attention
        if mixer is not None:
            return mixer.head_count()
        return next((m.head_count() for m in self.mixers if m.head_count()), 1)

    @property
    def kv_heads(self) -> int:
        mixer = self.attention
        return mixer.kv_head_count() if mixer is not None else self.heads

    def position_note(self, tokens: int, name: str) -> str | None:
        """What to say where a sequence of `tokens` runs past the config's position limit (None within it)."""
        if self.max_context and tokens > self.max_context:
            return f"{tokens:,} tokens is beyond the {self.max_context:,} positions of {name}'s config"
        return None

    @property
    def kv_splits(self) -> int:
        """The most ways tensor parallelism splits the cache: a latent or shared head not at all, else the fewest KV
        heads any layer keeps (past them serving engines copy heads, vLLM and SGLang), else the recurrent heads."""
        if any(m.whole_cache for m in self.mixers):
            return 1
        kv = [m.kv_head_count() for m in self.mixers if m.kv_head_count()]
        return min(kv) if kv else max(self.heads, 1)

    @property
    def head_dim(self) -> int:
        mixer = self.attention
        return mixer.head_width() if mixer is not None else 0

    @property
    def is_mla(self) -> bool:
        mixer = self.attention
        return mixer is not None and mixer.latent

    @property
    def moe(self) -> MoE | None:
        return next((g.moe for g in self.groups if g.moe is not None), None)

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def experts(self) -> int:
        return self.moe.experts if self.moe is not None else 0

    @property
    def experts_per_token(self) -> int:
        return self.moe.top_k if self.moe is not None else 0

    @property
    def expert_intermediate(self) -> int:
        return self.moe.width if self.moe is not None else 0

    @property
    def shared_experts(self) -> int:
        return self.moe.shared if self.moe is not None else 0

    @property
    def moe_layers(self) -> int:
        return self.count(lambda g: g.moe is not None)

    @property
    def dense_mlp(self) -> DenseMLP | None:
        return next((g.mlp for g in self.groups if g.mlp is not None), None)

    @property
    def intermediate(self) -> int:
        mlp = self.dense_mlp
        if mlp is not None:
            return mlp.width
        moe = self.moe
        return moe.width if moe is not None else 0

    @property
    def gated_mlp(self) -> bool:
        mlp = self.dense_mlp or self.moe
        return mlp.gated if mlp is not None else True

    @property
    def mlp_bias(self) -> bool:
        mlp = self.dense_mlp
        return mlp.bias if mlp is not None else False

    @property
    def mixers(self) -> tuple[Kind, ...]:
        """Each distinct mixer, in the order it first appears."""
        seen: list[Kind] = []
        for g in self.groups:
            if g.mixer is not None and g.mixer not in seen:
                seen.append(g.mixer)
        return tuple(seen)

    @property
    def is_plain(self) -> bool:
        """Every layer caches every token with one attention kind and attends to all of it."""
        mixers = self.mixers
        return len(mixers) == 1 and all(g.mixer is not None for g in self.groups) and mixers[0].plain()

    @property
    def windows(self) -> dict[str, int]:
        """Caps on the span of each windowed or chunked mixer, by tag."""
        return {m.tag: m.window_tokens() for m in self.mixers if m.window_tokens()}

    def with_layers(self, layers: int, vocab: int | None = None) -> Architecture:
        """The same model cut to its first `layers` layers (a quick measurement)."""
        groups, left = [], layers
        for g in self.groups:
            if left <= 0:
                break
            groups.append(replace(g, count=min(g.count, left)))
            left -= g.count
        return replace(self, groups=tuple(groups), vocab=vocab or self.vocab)
