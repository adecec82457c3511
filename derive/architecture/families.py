"""Family readers: a config.json's keys, read into layer groups.

Each reader says which keys it reads and, where a key may be absent, takes the
default of transformers' config class for the family (named in a comment). A
layer a reader cannot describe is an error, never an approximation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from derive.architecture.keys import Keys
from derive.architecture.layers import (
    FULL,
    Attention,
    CompressedAttention,
    DenseMLP,
    GatedDeltaNet,
    Indexer,
    Kind,
    LatentAttention,
    Mamba2,
    MoE,
    Span,
)
from derive.architecture.model import Architecture, LayerGroup
from derive.errors import CatalogError

Layer = tuple[Kind | None, DenseMLP | None, MoE | None]
Reader = Callable[[Keys], tuple[list[Layer], dict[str, Any]]]


def runs(layers: list[Layer], norms: int = 2, hyper: int = 0) -> tuple[LayerGroup, ...]:
    """Consecutive identical layers as one group each."""
    groups: list[LayerGroup] = []
    for mixer, mlp, moe in layers:
        last = groups[-1] if groups else None
        if last is not None and (last.mixer, last.mlp, last.moe) == (mixer, mlp, moe):
            groups[-1] = LayerGroup(last.count + 1, mixer, mlp, moe, norms, hyper)
        else:
            groups.append(LayerGroup(1, mixer, mlp, moe, norms, hyper))
    return tuple(groups)


# ---- shared readings -------------------------------------------------------------------------------------------


def attention(k: Keys, window: Span = FULL, head_dim_key: str = "head_dim", **flags: Any) -> Attention:
    hidden, heads = k.int("hidden_size"), k.int("num_attention_heads")
    kv_heads = k.int("num_key_value_heads", heads)
    k.divides("num_attention_heads", heads, "num_key_value_heads", kv_heads)
    if k.has(head_dim_key):
        head_dim = k.int(head_dim_key)
    elif hidden % heads:
        raise CatalogError(
            f"config for {k.name}: num_attention_heads={heads} does not divide hidden_size={hidden}",
            "Give 'head_dim' explicitly or fix the head count",
        )
    else:
        head_dim = hidden // heads
    return Attention(heads, kv_heads, head_dim, window, **flags)


def sliding(k: Keys, key: str = "sliding_window", default: int | None = None) -> Span:
    tokens = k.int(key, default)
    limit = k.get("max_position_embeddings")
    if isinstance(limit, int) and not isinstance(limit, bool) and tokens > limit:
        raise CatalogError(
            f"config for {k.name}: '{key}' is {tokens:,}, larger than max_position_embeddings {limit:,}",
            f"Fix '{key}': a window cannot exceed the context the model takes",
        )
    return Span("sliding", tokens)


def layer_kinds(k: Keys, layers: int, default: list[str], known: tuple[str, ...]) -> list[str]:
    """`layer_types` as given (checked), or the family's default pattern."""
    given = k.texts("layer_types")
    return k.pattern("layer_types", given if given is not None else default, layers, known)


def dense(k: Keys, key: str = "intermediate_size", gated: bool = True, bias: bool = False) -> DenseMLP:
    return DenseMLP(k.int(key), gated, bias)


def moe_every(k: Keys, first_dense: int, frequency: int, layers: int) -> list[bool]:
    """DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0."""
    return [i >= first_dense and i % frequency == 0 for i in range(layers)]


def by_layer(mixers: list[Kind], mlps: list[tuple[DenseMLP | None, MoE | None]]) -> list[Layer]:
    return [(m, mlp, moe) for m, (mlp, moe) in zip(mixers, mlps, strict=True)]


# ---- families --------------------------------------------------------------------------------------------------


def gpt2(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    hidden, heads = k.int("n_embd"), k.int("n_head")
    if hidden % heads:
        raise CatalogError(f"config for {k.name}: n_head={heads} does not divide n_embd={hidden}", "Fix the head count")
    mixer = Attention(heads, heads, hidden // heads, qkv_bias=True, out_bias=True)
    mlp = DenseMLP(k.int("n_inner", 4 * hidden), gated=False, bias=True)
    layers: list[Layer] = [(mixer, mlp, None)] * k.int("n_layer")
    # GPT2Config defaults tie_word_embeddings to True.
    return layers, dict(
        vocab=k.int("vocab_size"),
        hidden=hidden,
        tied=k.flag("tie_word_embeddings", True),
        layer_norm=True,
        positions=k.int("n_positions"),
        max_context=k.int("n_positions"),
    )


def _common(k: Keys, tied: bool = False) -> dict[str, Any]:
    # LlamaConfig, MistralConfig, Qwen2Config, ... default tie_word_embeddings to False; Gemma's to True.
    return dict(
        vocab=k.int("vocab_size"),
        hidden=k.int("hidden_size"),
        tied=k.flag("tie_word_embeddings", tied),
        max_context=k.int("max_position_embeddings", 0, minimum=0),
    )


def llama_like(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Llama, Mistral, Mixtral, Qwen2, Phi-3: q/k/v/o, a gated MLP (or Mixtral's experts), two RMSNorms."""
    family, layers = k.family, k.int("num_hidden_layers")
    bias = k.flag("attention_bias", False)
    window = FULL
    if family in ("mistral", "mixtral") and k.has("sliding_window"):
        window = sliding(k)  # MistralConfig: every layer attends to its last sliding_window tokens
    if family == "qwen2" and k.flag("use_sliding_window", False):
        raise CatalogError(
            f"config for {k.name}: use_sliding_window is true", "derive reads Qwen2 without sliding windows only"
        )
    mixer = attention(
        k,
        window,
        qkv_bias=bias or family == "qwen2",  # Qwen2 always biases q, k and v
        out_bias=bias and family == "llama",
    )
    if family == "mixtral":
        moe = MoE(k.int("num_local_experts"), k.int("num_experts_per_tok"), k.int("intermediate_size"))
        return [(mixer, None, moe)] * layers, _common(k)
    mlp = dense(k, bias=k.flag("mlp_bias", False) and family == "llama")
    return [(mixer, mlp, None)] * layers, _common(k)


def gemma2(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    layers = k.int("num_hidden_layers")
    bias = k.flag("attention_bias", False)
    # Gemma2Config: even layers slide over sliding_window tokens, odd ones attend to all.
    default = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]
    kinds = layer_kinds(k, layers, default, ("sliding_attention", "full_attention"))
    window = sliding(k, default=4096) if "sliding_attention" in kinds else FULL  # Gemma2Config: 4096
    mixers = [
        attention(k, window if kind == "sliding_attention" else FULL, qkv_bias=bias, out_bias=bias) for kind in kinds
    ]
    mlp = dense(k)
    return [(m, mlp, None) for m in mixers], {**_common(k, tied=True), "norms": 4}


def _latent(k: Keys, indexer: bool) -> LatentAttention:
    q_lora = k.get("q_lora_rank")
    return LatentAttention(
        k.int("num_attention_heads"),
        0 if q_lora is None else k.int("q_lora_rank"),
        k.int("kv_lora_rank"),
        k.int("qk_nope_head_dim"),
        k.int("qk_rope_head_dim"),
        k.int("v_head_dim"),
        qkv_bias=k.flag("attention_bias", False),
        indexer=Indexer(k.int("index_n_heads"), k.int("index_head_dim"), k.int("index_topk")) if indexer else None,
    )


def deepseek(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """DeepSeek V2/V3 (and Kimi K2), V3.2 and GLM-5: MLA, dense-first then routed + shared experts."""
    layers = k.int("num_hidden_layers")
    mixer = _latent(k, indexer=k.family in ("deepseek_v32", "glm_moe_dsa"))
    experts = k.int("n_routed_experts", 0, minimum=0)
    mlp = dense(k)
    if not experts:
        return [(mixer, mlp, None)] * layers, _common(k)
    shared = k.int("n_shared_experts", 0, minimum=0)
    moe = MoE(
        experts,
        k.int("num_experts_per_tok"),
        k.int("moe_intermediate_size"),
        correction_bias=k.get("topk_method") == "noaux_tc",
        shared=shared,
        shared_width=k.int("moe_intermediate_size") if shared else 0,
    )
    is_moe = moe_every(k, k.int("first_k_dense_replace", 0, minimum=0), k.int("moe_layer_freq", 1), layers)
    fields = _common(k)
    if mixer.indexer is not None:
        fields["notes"] = (
            "the indexer's keys are cached here in the KV dtype; DeepSeek's reference kernels keep them in fp8 "
            "with one fp32 scale per 128 values",
        )
    return [(mixer, None, moe) if m else (mixer, mlp, None) for m in is_moe], fields


def qwen3(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Qwen3 and Qwen3-MoE: Llama's layout with per-head q/k RMSNorms; MoE layers by decoder_sparse_step."""
    layers = k.int("num_hidden_layers")
    if k.flag("use_sliding_window", False):
        raise CatalogError(
            f"config for {k.name}: use_sliding_window is true", "derive reads Qwen3 without sliding windows only"
        )
    bias = k.flag("attention_bias", False)
    mixer = attention(k, qkv_bias=bias, out_bias=bias, qk_norm="head")
    experts = k.int("num_experts", 0, minimum=0) if k.family == "qwen3_moe" else 0
    if not experts:
        return [(mixer, dense(k), None)] * layers, _common(k)
    moe = MoE(experts, k.int("num_experts_per_tok"), k.int("moe_intermediate_size"))
    # Qwen3MoeConfig: decoder_sparse_step 1, mlp_only_layers [] (layer i is MoE when (i+1) % step == 0).
    step, dense_only = k.int("decoder_sparse_step", 1), set(k.ints("mlp_only_layers"))
    mlp = dense(k)
    return [
        (mixer, None, moe) if i not in dense_only and (i + 1) % step == 0 else (mixer, mlp, None) for i in range(layers)
    ], _common(k)


def qwen3_5(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Qwen3.5 (and its MoE): gated delta-net linear attention, with full attention every few layers."""
    layers = k.int("num_hidden_layers")
    # Qwen3_5TextConfig: layer_types default to full attention every full_attention_interval (4) layers.
    interval = k.int("full_attention_interval", 4)
    default = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    kinds = layer_kinds(k, layers, default, ("full_attention", "linear_attention"))
    bias = k.flag("attention_bias", False)
    full = attention(
        k, qkv_bias=bias, out_bias=bias, qk_norm="head", gate="output" if k.flag("attn_output_gate", True) else ""
    )
    linear = GatedDeltaNet(
        k.int("linear_num_key_heads"),
        k.int("linear_num_value_heads"),
        k.int("linear_key_head_dim"),
        k.int("linear_value_head_dim"),
        k.int("linear_conv_kernel_dim", 4),
    )
    mixers: list[Kind] = [full if kind == "full_attention" else linear for kind in kinds]
    if k.family == "qwen3_5_moe":
        moe = MoE(
            k.int("num_experts"),
            k.int("num_experts_per_tok"),
            k.int("moe_intermediate_size"),
            shared=1,
            shared_width=k.int("shared_expert_intermediate_size"),
            shared_gate=True,
        )
        mlps: list[tuple[DenseMLP | None, MoE | None]] = [(None, moe)] * layers
    else:
        mlps = [(dense(k), None)] * layers
    return by_layer(mixers, mlps), {**_common(k), "state_dtype": k.text("mamba_ssm_dtype", "float32")}


def gpt_oss(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """gpt-oss: alternating sliding-window and full attention with sinks; biased experts and router."""
    layers = k.int("num_hidden_layers")
    # GptOssConfig: layer_types default to sliding on even layers, full on odd ones.
    default = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(layers)]
    kinds = layer_kinds(k, layers, default, ("sliding_attention", "full_attention"))
    bias = k.flag("attention_bias", True)
    window = sliding(k)
    mixers: list[Kind] = [
        attention(k, window if kind == "sliding_attention" else FULL, qkv_bias=bias, out_bias=bias, sinks=True)
        for kind in kinds
    ]
    moe = MoE(
        k.int("num_local_experts"),
        k.int("num_experts_per_tok"),
        k.int("intermediate_size"),
        expert_bias=True,
        router_bias=True,
    )
    return by_layer(mixers, [(None, moe)] * layers), _common(k)


def llama4(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Llama 4: chunked attention on RoPE layers, full attention on every fourth (NoPE); MoE every step layers."""
    layers = k.int("num_hidden_layers")
    # Llama4TextConfig: no_rope_layers default to 0 (NoPE, full attention) on every 4th layer, 1 elsewhere.
    no_rope = k.ints("no_rope_layers", [int((i + 1) % 4 != 0) for i in range(layers)], minimum=0)
    default = ["chunked_attention" if uses_rope else "full_attention" for uses_rope in no_rope]
    kinds = layer_kinds(k, layers, default, ("chunked_attention", "full_attention"))
    chunk = Span("chunked", k.int("attention_chunk_size")) if "chunked_attention" in kinds else FULL
    bias = k.flag("attention_bias", False)
    mixers: list[Kind] = [
        attention(k, chunk if kind == "chunked_attention" else FULL, qkv_bias=bias, out_bias=bias) for kind in kinds
    ]
    moe = MoE(
        k.int("num_local_experts"),
        k.int("num_experts_per_tok"),
        k.int("intermediate_size"),
        shared=1,
        shared_width=k.int("intermediate_size"),
    )
    mlp = dense(k, "intermediate_size_mlp")
    # Llama4TextConfig: interleave_moe_layer_step 1; moe_layers default to every step-th layer.
    step = k.int("interleave_moe_layer_step", 1)
    moe_layers = set(k.ints("moe_layers", list(range(step - 1, layers, step))))
    return by_layer(mixers, [(None, moe) if i in moe_layers else (mlp, None) for i in range(layers)]), _common(k)


def gemma4(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Gemma 4: sliding-window layers and global layers with their own heads; a dense MLP and experts per layer."""
    layers = k.int("num_hidden_layers")
    kinds = layer_kinds(
        k,
        layers,
        ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
        ("sliding_attention", "full_attention"),
    )
    if k.int("num_kv_shared_layers", 0, minimum=0) or k.int("hidden_size_per_layer_input", 0, minimum=0):
        raise CatalogError(
            f"config for {k.name}: shared KV layers or per-layer inputs",
            "derive reads Gemma 4 configs without num_kv_shared_layers and hidden_size_per_layer_input",
        )
    local = attention(k, sliding(k), qk_norm="head")
    heads = k.int("num_attention_heads")
    global_kv = k.int("num_global_key_value_heads", k.int("num_key_value_heads"))
    k.divides("num_attention_heads", heads, "num_global_key_value_heads", global_kv)
    glob = Attention(
        heads, global_kv, k.int("global_head_dim"), qk_norm="head", k_eq_v=k.flag("attention_k_eq_v", False)
    )
    mixers: list[Kind] = [glob if kind == "full_attention" else local for kind in kinds]
    mlp = dense(k)
    moe = None
    norms = 4
    if k.flag("enable_moe_block", False):
        moe = MoE(k.int("num_experts"), k.int("top_k_experts"), k.int("moe_intermediate_size"), router_scales=True)
        norms = 7  # the MoE block adds a pre-norm and two post-norms
    return by_layer(mixers, [(mlp, moe)] * layers), {**_common(k, tied=True), "norms": norms}


def minimax_m2(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """MiniMax M2: GQA with q/k norms over all heads, routed experts only, with a routing-score bias."""
    layers = k.int("num_hidden_layers")
    norm = k.text("qk_norm_type", "per_layer") if k.flag("use_qk_norm", True) else ""
    mixer = attention(k, qk_norm={"per_layer": "layer", "per_head": "head", "": ""}.get(norm, "layer"))
    moe = MoE(
        k.int("num_local_experts"),
        k.int("num_experts_per_tok"),
        k.int("intermediate_size"),
        correction_bias=k.flag("use_routing_bias", True),
    )
    return [(mixer, None, moe)] * layers, _common(k)


def nemotron_h(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Nemotron-H: a pattern of Mamba-2 (M), attention (*), MLP (-) and MoE (E) layers, one norm each."""
    layers = k.int("num_hidden_layers")
    pattern = k.text("hybrid_override_pattern")
    kinds = k.pattern("hybrid_override_pattern", list(pattern), layers, ("M", "*", "-", "E"))
    mamba = Mamba2(
        k.int("mamba_num_heads"),
        k.int("mamba_head_dim"),
        k.int("ssm_state_size"),
        k.int("n_groups"),
        k.int("conv_kernel"),
        conv_bias=k.flag("use_conv_bias", True),
        proj_bias=k.flag("use_bias", False),
    )
    bias = k.flag("attention_bias", False)
    table: dict[str, Layer] = {
        "M": (mamba, None, None),
        "*": (attention(k, qkv_bias=bias, out_bias=bias), None, None),
        "-": (None, dense(k, gated=False, bias=k.flag("mlp_bias", False)), None),
    }
    if "E" in kinds:
        table["E"] = (
            None,
            None,
            MoE(
                k.int("n_routed_experts"),
                k.int("num_experts_per_tok"),
                k.int("moe_intermediate_size"),
                gated=False,
                correction_bias=True,  # NemotronHTopkRouter keeps e_score_correction_bias (a buffer)
                shared=k.int("n_shared_experts", 1, minimum=0),
                shared_width=k.int("moe_shared_expert_intermediate_size"),
            ),
        )
    return [table[kind] for kind in kinds], {
        **_common(k),
        "norms": 1,
        "state_dtype": k.text("mamba_ssm_cache_dtype", "float32"),
    }


def step3p7(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """Step-3.7: full and sliding-window GQA with per-head output gates; dense-first, then routed + shared experts.

    Read from the flat keys the checkpoint ships. transformers' Step3p7Config ignores them and builds its
    text defaults (vocab 128,815, no windows); the layers and experts are the same.
    """
    layers = k.int("num_hidden_layers")
    kinds = layer_kinds(k, layers, ["full_attention"] * layers, ("full_attention", "sliding_attention"))
    window = sliding(k) if "sliding_attention" in kinds else FULL
    mixers: list[Kind] = [
        attention(k, window if kind == "sliding_attention" else FULL, qk_norm="head", gate="head") for kind in kinds
    ]
    moe = MoE(
        k.int("num_experts"),
        k.int("num_experts_per_tok"),
        k.int("moe_intermediate_size"),
        shared=k.int("n_shared_experts", 1),
        shared_width=k.int("share_expert_dim"),
    )
    first_dense = k.int("first_k_dense_replace", 3, minimum=0)
    mlp = dense(k)
    return by_layer(mixers, [(None, moe) if i >= first_dense else (mlp, None) for i in range(layers)]), _common(k)


def deepseek_v4(k: Keys) -> tuple[list[Layer], dict[str, Any]]:
    """DeepSeek V4: a shared-KV sliding window on every layer, plus compressed entries (sparse or heavy)."""
    layers = k.int("num_hidden_layers")
    # DeepseekV4Config maps the legacy compress_ratios (0, 4, 128) onto layer_types and cuts them to the layer
    # count: the extra entry is the multi-token-prediction layer, which transformers does not build.
    by_ratio = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
    given = k.texts("layer_types")
    if given is None:
        ratios = k.ints("compress_ratios")
        unknown = [r for r in ratios if r not in by_ratio]
        if unknown:
            raise k.fail("compress_ratios", unknown[0], "not one of 0, 4, 128")
        given = [by_ratio[r] for r in ratios]
    kinds = k.pattern("layer_types", given[:layers], layers, tuple(by_ratio.values()))
    rates = k.get("compress_rates", {}) or {}
    window, heads = sliding(k), k.int("num_attention_heads")
    common: dict[str, Any] = dict(
        heads=heads,
        q_lora_rank=k.int("q_lora_rank"),
        head_dim=k.int("head_dim"),
        out_groups=k.int("o_groups"),
        out_lora_rank=k.int("o_lora_rank"),
        window=window,
    )
    indexer = Indexer(k.int("index_n_heads"), k.int("index_head_dim"), k.int("index_topk"))
    table: dict[str, Kind] = {
        "sliding_attention": CompressedAttention(**common),
        "compressed_sparse_attention": CompressedAttention(
            **common, ratio=int(rates.get("compressed_sparse_attention", 4)), indexer=indexer
        ),
        "heavily_compressed_attention": CompressedAttention(
            **common, ratio=int(rates.get("heavily_compressed_attention", 128))
        ),
    }
    width = k.int("moe_intermediate_size")
    # transformers builds exactly one shared MLP of the expert width, whatever n_shared_experts says.
    moe = MoE(k.int("n_routed_experts"), k.int("num_experts_per_tok"), width, shared=1, shared_width=width)
    return by_layer([table[kind] for kind in kinds], [(None, moe)] * layers), {
        **_common(k),
        "hyper": k.int("hc_mult", 4),
        "expert_format": "fp4" if k.get("expert_dtype") == "fp4" else "",
    }


READERS: dict[str, Reader] = {
    "gpt2": gpt2,
    **{family: llama_like for family in ("llama", "mistral", "mixtral", "qwen2", "phi3")},
    "gemma2": gemma2,
    **{family: deepseek for family in ("deepseek_v2", "deepseek_v3", "deepseek_v32", "glm_moe_dsa")},
    "qwen3": qwen3,
    "qwen3_moe": qwen3,
    "qwen3_vl": qwen3,
    "qwen3_5": qwen3_5,
    "qwen3_5_moe": qwen3_5,
    "gpt_oss": gpt_oss,
    "llama4": llama4,
    "gemma4": gemma4,
    "minimax_m2": minimax_m2,
    "nemotron_h": nemotron_h,
    "step3p7": step3p7,
    "deepseek_v4": deepseek_v4,
}

# A checkpoint whose model_type transformers does not know is read as the class its `architectures` names.
ARCHITECTURES: dict[str, str] = {
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
}

# The part of a multimodal checkpoint derive counts: its text decoder (towers are left out, with a note).
_TOWERS = ("vision_config", "audio_config")


def read_architecture(raw: object, name: str) -> Architecture:
    """Build an Architecture from a parsed config.json, or raise a CatalogError naming the key at fault."""
    if not isinstance(raw, dict):
        raise CatalogError(f"config for {name} is not a JSON object", "Pass a Hugging Face config.json")
    family = raw.get("model_type")
    notes: list[str] = []
    if not isinstance(family, str) or family not in READERS:
        named = raw.get("architectures")
        known = (
            [ARCHITECTURES[a] for a in named if isinstance(a, str) and a in ARCHITECTURES]
            if isinstance(named, list)
            else []
        )
        if not known:
            raise CatalogError(
                f"config for {name}: model_type {family!r} is not supported",
                f"Supported families: {', '.join(sorted(READERS))}",
            )
        notes.append(f"model_type {family!r} is read as {known[0]}, the class its architectures field names")
        assert isinstance(family, str)
        family = known[0]
    text = raw.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise CatalogError(f"config for {name}: 'text_config' is not an object", "Fix the config.json")
    keys = Keys(text, name, family, outer=raw) if isinstance(text, dict) else Keys(raw, name, family)
    if any(isinstance(raw.get(t), dict) for t in _TOWERS):
        notes.append("the vision/audio tower is left out: these counts are the text decoder's")
    layers, fields = READERS[family](keys)
    if not layers:
        raise CatalogError(f"config for {name} has no layers", "Fix 'num_hidden_layers'")
    if all(mixer is None for mixer, _, _ in layers):
        raise CatalogError(
            f"config for {name}: no layer mixes tokens (no attention, linear attention or Mamba layer)",
            "A decoder needs at least one mixer layer: fix the layer pattern",
        )
    norms = fields.pop("norms", 2)
    notes += fields.pop("notes", ())
    hyper = fields.get("hyper", 0)
    mtp = keys.get("num_nextn_predict_layers") or keys.get("mtp_num_hidden_layers") or keys.get("num_mtp_modules")
    if isinstance(mtp, int) and mtp > 0:
        notes.append(f"the {mtp} multi-token-prediction layer(s) are left out, as transformers builds the model")
    return Architecture(
        name=name,
        family=family,
        groups=runs(layers, norms, hyper),
        torch_dtype=_dtype(keys),
        quantization=_quantization(raw),
        expert_format=fields.pop("expert_format", "") or _expert_format(raw),
        notes=tuple(notes),
        **fields,
    )


def _dtype(k: Keys) -> str:
    value = k.get("torch_dtype") or k.get("dtype")
    return value if isinstance(value, str) else ""


def _quantization(raw: Mapping[str, Any]) -> str:
    quant = raw.get("quantization_config")
    if not isinstance(quant, dict):
        return ""
    return str(quant.get("quant_method", "")) + (f" {quant['fmt']}" if "fmt" in quant else "")


def _expert_format(raw: Mapping[str, Any]) -> str:
    """mxfp4 when the checkpoint stores its experts so (gpt-oss keeps attention, router, embeddings in bf16)."""
    quant = raw.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        return "mxfp4"
    return ""
