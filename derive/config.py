"""A Hugging Face config.json read into the shapes derive's formulas need.

One reader per family maps that family's keys (GPT-2's `n_embd`, Llama's
`hidden_size`, DeepSeek's MLA ranks) onto one ModelConfig. Unknown keys are
ignored; a key the family needs and does not default is an error that names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from derive.errors import CatalogError

# Families whose layout is Llama's: q/k/v/o projections, gated MLP, two RMSNorms a layer.
_LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "phi3")


@dataclass(frozen=True)
class ModelConfig:
    """The architecture of one model, in the units of its config (counts of things)."""

    name: str
    family: str
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    tied: bool
    norm_has_bias: bool = False  # LayerNorm (weight and bias) rather than RMSNorm (weight)
    norms_per_layer: int = 2
    gated_mlp: bool = True  # three matrices (gate, up, down) rather than two
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    positions: int = 0  # learned position embeddings (GPT-2); 0 for rotary
    # Mixture of experts (experts == 0 for a dense model).
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    expert_intermediate: int = 0
    moe_layers: int = 0
    router_bias: bool = False
    # Multi-head latent attention (kv_lora_rank == 0 for ordinary attention).
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_dim: int = 0
    qk_rope_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    torch_dtype: str = ""
    quantization: str = ""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers


class _Keys:
    """Typed access to a config dict; a missing or ill-typed key names itself."""

    def __init__(self, raw: Mapping[str, Any], name: str) -> None:
        self.raw, self.name = raw, name

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.raw.get(key, default)
        if value is None:
            if default is None and key not in self.raw:
                raise CatalogError(
                    f"config for {self.name} lacks '{key}', which a {self.raw.get('model_type')} model needs",
                    f"Add '{key}' to the config.json",
                )
            value = default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise CatalogError(
                f"config for {self.name}: '{key}' is {value!r}, not a whole number >= {minimum}",
                "Fix the value in the config.json",
            )
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise CatalogError(
                f"config for {self.name}: '{key}' is {value!r}, not true or false", "Fix the value in the config.json"
            )
        return value


def _head_dim(keys: _Keys, hidden: int, heads: int) -> int:
    if keys.raw.get("head_dim") is not None:
        return keys.int("head_dim")
    if hidden % heads:
        raise CatalogError(
            f"config for {keys.name}: {heads} attention heads do not divide hidden size {hidden}",
            "Give 'head_dim' explicitly or fix the head count",
        )
    return hidden // heads


def _divides_heads(keys: _Keys, heads: int, kv_heads: int) -> None:
    if heads % kv_heads:
        raise CatalogError(
            f"config for {keys.name}: {kv_heads} key/value heads do not divide {heads} attention heads",
            "Fix 'num_key_value_heads'",
        )


def _gpt2(keys: _Keys) -> dict[str, Any]:
    hidden, heads = keys.int("n_embd"), keys.int("n_head")
    return dict(
        vocab=keys.int("vocab_size"),
        hidden=hidden,
        layers=keys.int("n_layer"),
        heads=heads,
        kv_heads=heads,
        head_dim=_head_dim(keys, hidden, heads),
        intermediate=keys.int("n_inner", 4 * hidden),
        tied=keys.flag("tie_word_embeddings", True),
        norm_has_bias=True,
        gated_mlp=False,
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        positions=keys.int("n_positions"),
    )


def _llama_like(keys: _Keys) -> dict[str, Any]:
    family = keys.raw["model_type"]
    hidden, heads = keys.int("hidden_size"), keys.int("num_attention_heads")
    kv_heads = keys.int("num_key_value_heads", heads)
    _divides_heads(keys, heads, kv_heads)
    attention_bias = keys.flag("attention_bias", False)
    fields: dict[str, Any] = dict(
        vocab=keys.int("vocab_size"),
        hidden=hidden,
        layers=keys.int("num_hidden_layers"),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=_head_dim(keys, hidden, heads),
        intermediate=keys.int("intermediate_size"),
        # transformers' config classes for these families default to untied.
        tied=keys.flag("tie_word_embeddings", False),
        qkv_bias=attention_bias or family == "qwen2",  # Qwen2 always biases q, k and v
        out_bias=attention_bias and family == "llama",
        mlp_bias=keys.flag("mlp_bias", False) and family == "llama",
        sliding_window=keys.int("sliding_window", 0, minimum=0) if family in ("mistral", "mixtral") else 0,
    )
    if family == "mixtral":
        fields.update(
            experts=keys.int("num_local_experts"),
            experts_per_token=keys.int("num_experts_per_tok"),
            expert_intermediate=fields["intermediate"],
            moe_layers=fields["layers"],
        )
    return fields


def _gemma2(keys: _Keys) -> dict[str, Any]:
    hidden, heads = keys.int("hidden_size"), keys.int("num_attention_heads")
    kv_heads = keys.int("num_key_value_heads", heads)
    _divides_heads(keys, heads, kv_heads)
    return dict(
        vocab=keys.int("vocab_size"),
        hidden=hidden,
        layers=keys.int("num_hidden_layers"),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=keys.int("head_dim"),
        intermediate=keys.int("intermediate_size"),
        tied=keys.flag("tie_word_embeddings", True),
        norms_per_layer=4,
        qkv_bias=keys.flag("attention_bias", False),
        out_bias=keys.flag("attention_bias", False),
    )


def _deepseek(keys: _Keys) -> dict[str, Any]:
    hidden, heads, layers = keys.int("hidden_size"), keys.int("num_attention_heads"), keys.int("num_hidden_layers")
    first_dense = keys.int("first_k_dense_replace", 0, minimum=0)
    frequency = keys.int("moe_layer_freq", 1)
    experts = keys.int("n_routed_experts", 0, minimum=0)
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % frequency == 0) if experts else 0
    q_lora = keys.raw.get("q_lora_rank")
    return dict(
        vocab=keys.int("vocab_size"),
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=keys.int("num_key_value_heads", heads),
        head_dim=keys.int("v_head_dim"),
        intermediate=keys.int("intermediate_size"),
        tied=keys.flag("tie_word_embeddings", False),
        experts=experts,
        experts_per_token=keys.int("num_experts_per_tok") if experts else 0,
        shared_experts=keys.int("n_shared_experts", 0, minimum=0) if experts else 0,
        expert_intermediate=keys.int("moe_intermediate_size") if experts else 0,
        moe_layers=moe_layers,
        # V3's aux-loss-free routing keeps a learned per-expert bias (e_score_correction_bias).
        router_bias=keys.raw.get("topk_method") == "noaux_tc",
        q_lora_rank=0 if q_lora is None else keys.int("q_lora_rank"),
        kv_lora_rank=keys.int("kv_lora_rank"),
        qk_nope_dim=keys.int("qk_nope_head_dim"),
        qk_rope_dim=keys.int("qk_rope_head_dim"),
        v_head_dim=keys.int("v_head_dim"),
        qkv_bias=keys.flag("attention_bias", False),
    )


READERS: dict[str, Callable[[_Keys], dict[str, Any]]] = {
    "gpt2": _gpt2,
    **{family: _llama_like for family in _LLAMA_LIKE},
    "gemma2": _gemma2,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}


def read_config(raw: object, name: str) -> ModelConfig:
    """Build a ModelConfig from a parsed config.json, or raise a CatalogError."""
    if not isinstance(raw, dict):
        raise CatalogError(f"config for {name} is not a JSON object", "Pass a Hugging Face config.json")
    family = raw.get("model_type")
    if not isinstance(family, str) or family not in READERS:
        known = ", ".join(sorted(READERS))
        raise CatalogError(
            f"config for {name}: model_type {family!r} is not supported",
            f"Supported families: {known}",
        )
    fields = READERS[family](_Keys(raw, name))
    quant = raw.get("quantization_config")
    quantization = ""
    if isinstance(quant, dict):
        quantization = str(quant.get("quant_method", "")) + (f" {quant['fmt']}" if "fmt" in quant else "")
    dtype = raw.get("torch_dtype")
    return ModelConfig(
        name=name,
        family=family,
        torch_dtype=dtype if isinstance(dtype, str) else "",
        quantization=quantization,
        **fields,
    )
