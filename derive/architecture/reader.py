"""Read any decoder's config.json into layer groups: the shared vocabulary, and a family entry where it differs.

Every family is read by the same code. The keys most families share (`hidden_size`,
`num_key_value_heads`, `layer_types`, `num_experts`, `first_k_dense_replace`, ...)
are read once, under any name a family gives them (derive/architecture/keys.py). A
family entry (derive/architecture/families/NAME.toml, a table, not code) says only
how its family differs: a q/k norm, biases, norms per layer, an ungated MLP, the
default of a pattern key, transformers' defaults for absent keys. A model_type with
no entry is read as Llama-shaped and the reading names each assumption it made.
Each layer kind reads its own keys (derive/architecture/kinds/).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import FULL, Kind, Span, kind_module
from derive.architecture.model import Architecture, LayerGroup
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError

if TYPE_CHECKING:  # the kind modules are imported as a config needs them
    from derive.architecture.kinds.mlp import DenseMLP
    from derive.architecture.kinds.moe import MoE

FAMILIES = Path(__file__).parent / "families"
BASE = "_base"  # the Llama-shaped reading every entry starts from

Layer = tuple["Kind | None", "DenseMLP | None", "MoE | None"]

# The names configs give a layer's type (layer_types, layers_block_type, hybrid_override_pattern), by meaning.
TYPE_NAMES: dict[str, str] = {
    **dict.fromkeys(("full_attention", "attention", "global", "global_attention", "full", "*"), "full"),
    **dict.fromkeys(("sliding_attention", "sliding", "local", "local_attention", "swa"), "sliding"),
    **dict.fromkeys(("chunked_attention", "chunked"), "chunked"),
    **dict.fromkeys(("linear_attention", "linear"), "linear"),
    **dict.fromkeys(("mamba", "mamba2", "ssm", "M", "m"), "mamba"),
    **dict.fromkeys(("mlp", "-"), "mlp"),
    **dict.fromkeys(("moe", "E"), "moe"),
    "conv": "conv",
    "compressed_sparse_attention": "compressed_sparse_attention",
    "heavily_compressed_attention": "heavily_compressed_attention",
}
# Which kind module reads each type, unless the entry's [layers.kinds] says otherwise.
KINDS: dict[str, str] = {
    "full": "attention",
    "sliding": "attention",
    "chunked": "attention",
    "linear": "delta_net",
    "mamba": "mamba2",
}
_NO_MIXER = ("mlp", "moe")
MLP_TYPES = {"dense": "dense", "sparse": "sparse"}

# A checkpoint whose model_type has no entry is read as the class its `architectures` names, when one does.
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

# What a model_type with no entry is assumed to be: the base entry, said in words.
ASSUMED = "gated SiLU MLP, RMSNorm without bias (2 a layer), no q/k norm, biases only where attention_bias/mlp_bias say"


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# The settings an entry may give at its top level (families/README.md), besides a section per kind module.
SETTINGS = frozenset(
    "like defaults refuse notes norms vectors vocab norm final_norm embedding_norm head_norm positions position_offset "
    "head_bias head_scale head_dense head_dense_bias tied extra_rows per_layer_inputs bridge hyper hyper_comb "
    "expert_format state_dtype layers attention mlp moe".split()
)


def _check_settings(family: str, table: Mapping[str, Any]) -> None:
    """A misspelt setting is an error naming it, not a silent default (kind sections are named by their module)."""
    kinds = Path(__file__).parent / "kinds"
    unknown = [key for key in table if key not in SETTINGS and not (kinds / f"{key}.py").is_file()]
    if unknown:
        raise CatalogError(
            f"family entry {family} has the setting {unknown[0]!r}, which derive does not know",
            "See derive/architecture/families/README.md for the settings",
        )


@cache
def entry(family: str) -> dict[str, Any] | None:
    """A family's entry over the entries it is `like` (the base last), or None when it has none."""
    path = FAMILIES / f"{family}.toml"
    if not path.is_file():
        return None
    table = tomllib.loads(path.read_text())
    _check_settings(family, table)
    parent = table.pop("like", BASE if family != BASE else None)
    if parent is None:
        return table
    inherited = entry(parent)
    if inherited is None:
        raise CatalogError(f"family entry {family} is like {parent!r}, which has no entry", "Fix the family entry")
    return _merge(inherited, table)


def families() -> list[str]:
    """Every model_type with an entry."""
    return sorted(p.stem for p in FAMILIES.glob("*.toml") if not p.stem.startswith("_"))


def read_architecture(raw: object, name: str) -> Architecture:
    """Build an Architecture from a parsed config.json, or raise a CatalogError naming the key at fault."""
    if not isinstance(raw, dict):
        raise CatalogError(f"config for {name} is not a JSON object", "Pass a Hugging Face config.json")
    text = raw.get("text_config")
    if text is not None and not isinstance(text, dict):
        raise CatalogError(f"config for {name}: 'text_config' is not an object", "Fix the config.json")
    family, table, notes = _family(raw, text, name)
    keys_from = text if isinstance(text, dict) else raw
    k = Keys(keys_from, name, family, outer=raw if keys_from is not raw else None, defaults=table.get("defaults", {}))
    if any(isinstance(raw.get(t), dict) for t in _TOWERS):
        notes.append("the vision/audio tower is left out: these counts are the text decoder's")
    spec = Spec(table, family)
    _refuse(k, table.get("refuse", {}))
    layers = _layers(k, spec)
    if not layers:
        raise CatalogError(f"config for {name} has no layers", "Fix 'num_hidden_layers'")
    if all(mixer is None for mixer, _, _ in layers):
        raise CatalogError(
            f"config for {name}: no layer mixes tokens (no attention, linear attention or Mamba layer)",
            "A decoder needs at least one mixer layer: fix the layer pattern",
        )
    # d-wide norms a layer, with any d-wide learned vectors outside the mixer (residual gates and scales: ERGO, Doge)
    norms = spec.number(k, "norms", 2) + spec.number(k, "vectors", 0)
    moe_norms = spec.sub("moe").number(k, "norms", 0)
    passes = _passes(k, spec.sub("layers"), len(layers))
    mixers = dict.fromkeys(m for m, _, _ in layers if m is not None)
    notes += list(dict.fromkeys(note for mixer in mixers for note in mixer.notes()))
    notes += table.get("notes", [])
    limit = k.int("max_position_embeddings", 0, minimum=0)
    for mixer in dict.fromkeys(m for m, _, _ in layers if m is not None):
        if limit and mixer.window_tokens() > limit:  # transformers' own defaults do this (EXAONE 4: 4,096 of 2,048)
            notes.append(
                f"the {mixer.label} window of {mixer.window_tokens():,} tokens is past max_position_embeddings "
                f"{limit:,}: within the positions the model takes, those layers attend to every token"
            )
    mtp = k.get("num_nextn_predict_layers") or k.get("mtp_num_hidden_layers") or k.get("num_mtp_modules")
    mtp = mtp if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0 else 0
    if mtp:
        notes.append(
            f"the {mtp} multi-token-prediction layer(s) are left out of the counts, as transformers builds the model "
            "(--mtp drafts with them)"
        )
    hyper = spec.number(k, "hyper", 0)
    fields = dict(
        name=name,
        family=family,
        vocab=_vocab(k, spec),
        hidden=k.int("hidden_size"),
        groups=_runs(layers, norms, moe_norms, hyper, spec.sub("layers").number(k, "first_norms", norms), passes),
        hyper=hyper,
        max_context=k.int("max_position_embeddings", 0, minimum=0),
        torch_dtype=_dtype(k),
        quantization=_quantization(raw),
        mtp_layers=mtp,
        weight_recipe=_weight_recipe(raw),
        expert_format=spec.text(k, "expert_format") or _expert_format(raw),
        state_dtype=spec.text(k, "state_dtype") if "state_dtype" in table else "",
        **_around_the_layers(k, spec),
    )
    required = {key: value for key, value in k.defaulted.items() if key in _SAID}
    if required:  # a size the config lacks, taken from the family's entry (transformers' config defaults)
        taken = ", ".join(
            f"{key} = {value:,}" if isinstance(value, int) else f"{key} = {value}" for key, value in required.items()
        )
        notes.append(f"not in the config, taken as {family}'s default (transformers' config class): {taken}")
    return Architecture(notes=tuple(notes), **fields)  # type: ignore[arg-type]


# The family defaults a note names where a config lacks them: sizes that change every count. Pattern defaults
# (a window, a layer period) are how the family reads its own keys, and stay unsaid.
_SAID = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def _around_the_layers(k: Keys, spec: Spec) -> dict[str, Any]:
    """What a model holds outside its layers: the embedding and its extras, the head, the outer norms."""
    per_layer_inputs = spec.flag(k, "per_layer_inputs")  # Gemma 4's per-layer input embeddings
    return dict(
        # A head of its own whatever tie_word_embeddings says, where the entry says so (CPM-Ant: tied = false).
        tied=spec.flag(k, "tied", k.flag("tie_word_embeddings", False)),
        layer_norm=spec.text(k, "norm", "rms") == "layer",
        # A learned position table; OPT and BioGPT keep `position_offset` rows more than the positions.
        positions=k.int("max_position_embeddings") + spec.number(k, "position_offset", 0)
        if spec.flag(k, "positions")
        else 0,
        outer_norms=sum(
            int(spec.flag(k, key, key == "final_norm")) for key in ("final_norm", "embedding_norm", "head_norm")
        ),
        # Embedding rows past the head's vocabulary: the entry's, and a padded embedding's (Inkling 2's vocab_size).
        extra_rows=spec.number(k, "extra_rows", 0) + k.int("vocab_size") - _vocab(k, spec),
        hyper_comb=spec.flag(k, "hyper_comb", True),
        per_layer_input=k.int("hidden_size_per_layer_input", 0, minimum=0) if per_layer_inputs else 0,
        per_layer_vocab=k.int("vocab_size_per_layer_input", k.int("vocab_size")) if per_layer_inputs else 0,
        bridge=k.int(spec.raw("bridge"), 0, minimum=0) if spec.raw("bridge") else 0,
        head_bias=spec.flag(k, "head_bias"),
        head_scale=spec.flag(k, "head_scale"),
        head_dense=(1 + int(spec.flag(k, "head_dense_bias"))) if spec.flag(k, "head_dense") else 0,
    )


def _vocab(k: Keys, spec: Spec) -> int:
    """The rows the LM head scores: vocab_size, or the key the entry's `vocab` names where the embedding is padded
    past them (Inkling 2's unpadded_vocab_size); never more than the embedding's vocab_size rows."""
    key = spec.raw("vocab", "vocab_size")
    vocab = k.int(key, k.int("vocab_size"))  # a null or absent key: the head scores every row
    if vocab > k.int("vocab_size"):
        raise k.fail(spec.raw("vocab"), vocab, f"more than the {k.int('vocab_size'):,} rows of {k.spelt('vocab_size')}")
    return vocab


def _refuse(k: Keys, rules: Mapping[str, Any]) -> None:
    """A part derive cannot describe, named by the key that turns it on: `key = "why"` (when the key is set), or
    `key = { why = "...", above = N }` (past N), `{ why = "...", differs = "other_key" }`, or `{ why, equals = V }`."""
    for key, rule in rules.items():
        value = k.get(key)
        why = rule if isinstance(rule, str) else rule["why"]
        if isinstance(rule, dict) and "above" in rule:
            hit = isinstance(value, (int, float)) and not isinstance(value, bool) and value > rule["above"]
        elif isinstance(rule, dict) and "differs" in rule:
            hit = value is not None and value != k.get(rule["differs"])
        elif isinstance(rule, dict) and "equals" in rule:
            hit = value == rule["equals"]
        else:
            hit = bool(value)
        if hit:
            shown = "a table" if isinstance(value, dict) else repr(value[:8] if isinstance(value, list) else value)
            raise CatalogError(f"config for {k.name}: '{k.spelt(key)}' is {shown}", why)


def _family(raw: Mapping[str, Any], text: Any, name: str) -> tuple[str, dict[str, Any], list[str]]:
    """The model_type to read as, its entry, and what the reading had to assume."""
    family = raw.get("model_type")
    inner = text.get("model_type") if isinstance(text, dict) else None
    if isinstance(inner, str) and entry(inner) is not None and not (isinstance(family, str) and entry(family)):
        family = inner  # a wrapper with no entry of its own: its text decoder's family (llava -> llama)
    if family is None or (isinstance(family, str) and not family.strip()):
        raise CatalogError(f"config for {name} has no 'model_type'", "Add the family's model_type to the config.json")
    if not isinstance(family, str):
        raise CatalogError(
            f"config for {name}: 'model_type' is {family!r}, not a string", "Give the family's model_type as a string"
        )
    table = entry(family)
    if table is not None:
        return family, table, []
    excluded = tomllib.loads((FAMILIES / "_excluded.toml").read_text())
    if family in excluded:
        raise CatalogError(
            f"config for {name}: model_type {family!r} is not a decoder-only language model ({excluded[family]})",
            "derive reads decoders: pass the config of a causal language model",
        )
    named = raw.get("architectures")
    known = (
        [ARCHITECTURES[a] for a in named if isinstance(a, str) and a in ARCHITECTURES]
        if isinstance(named, list)
        else []
    )
    if known:
        return (
            known[0],
            entry(known[0]) or {},
            [f"model_type {family!r} is read as {known[0]}, the class its architectures field names"],
        )
    base = entry(BASE) or {}
    return family, base, [f"model_type {family!r} has no family entry; read with the shared keys, assumed: {ASSUMED}"]


def _types(k: Keys, spec: Spec, layers: int) -> list[str]:
    """Each layer's type, by meaning (full, sliding, linear, mamba, mlp, moe, ...), from whichever key gives them.

    A DSA layer that reuses the previous layer's top-k (`indexer_types` "shared") is its own type, `TYPE+shared`.
    """
    types = _listed_types(k, spec, layers)
    reads_kv = _kv_shared(k, layers)
    types = [f"{t}+kv" if s and t not in _NO_MIXER else t for t, s in zip(types, reads_kv, strict=True)]
    shared = k.texts("indexer_types")
    if shared is None:
        return types
    indexing = _named(k, "indexer_types", shared, layers, spec, {"full": "full", "shared": "shared"})
    return [f"{t}+shared" if i == "shared" and t not in _NO_MIXER else t for t, i in zip(types, indexing, strict=True)]


def _kv_shared(k: Keys, layers: int) -> list[bool]:
    """Layers that read an earlier layer's keys and values: kv_source_layers naming another layer (Kolibri 1.1),
    or the last num_kv_shared_layers (Gemma 3n, Gemma 4). Such a layer has no k/v projections and caches nothing."""
    if k.has("kv_source_layers"):
        given = k.ints("kv_source_layers")
        if len(given) != layers:
            raise k.fail("kv_source_layers", given[:8], f"not one entry for each of the {layers} layers")
        return [source != i for i, source in enumerate(given)]
    last = k.int("num_kv_shared_layers", 0, minimum=0)
    if last > layers:
        raise k.fail("num_kv_shared_layers", last, f"more than the {layers} layers")
    return [i >= layers - last for i in range(layers)]


def _listed_types(k: Keys, spec: Spec, layers: int) -> list[str]:
    plan = spec.sub("layers")
    for key in ("layer_types", "layers_block_type"):
        given = k.get(key)
        if given is not None:
            if not isinstance(given, list) or not all(isinstance(v, str) for v in given):
                raise k.fail(key, given if not isinstance(given, list) else given[:8], "not a list of strings")
            return _named(k, key, given[: layers if plan.flag(k, "cut") else None], layers, plan)
    cycle = plan.raw("cycle")
    if cycle is not None and k.has(cycle):  # a short list repeated over the layers (RecurrentGemma's block_types)
        given = k.texts(cycle) or []
        return _named(k, cycle, [given[i % len(given)] for i in range(layers)] if given else [], layers, plan)
    pattern = k.get("hybrid_override_pattern")
    if pattern is not None:
        if not isinstance(pattern, str):
            raise k.fail("hybrid_override_pattern", pattern, "not a string")
        return _named(k, "hybrid_override_pattern", list(pattern), layers, plan)
    ratios = plan.sub("ratios")
    if "key" in ratios:  # DeepSeek V4's legacy compress_ratios
        given = k.ints(ratios.raw("key"))
        names = {int(r): t for r, t in ratios.raw("map").items()}
        unknown = [r for r in given if r not in names]
        if unknown:
            raise k.fail(ratios.raw("key"), unknown[0], f"not one of {', '.join(map(str, names))}")
        return _named(k, "layer_types", [names[r] for r in given][:layers], layers, plan)
    return _default_types(k, plan, layers)


def _default_types(k: Keys, plan: Spec, layers: int) -> list[str]:
    """The family's pattern when the config lists none: every n-th layer `on`, the rest `off`; or flags per layer."""
    listed = plan.sub("listed")
    if "key" in listed and "absent" in listed and not k.has(listed.raw("key")):
        return [listed.raw("absent")] * layers  # the key's absence means every layer (LFM2's full_attn_idxs)
    if "key" in listed:  # the layers a list key names are of another type (Mllama's cross_attention_layers)
        at = set(k.ints(listed.raw("key")))
        if any(i >= layers for i in at):
            raise k.fail(listed.raw("key"), max(at), f"not a layer index below {layers}")
        return [listed.raw("type") if i in at else plan.raw("all", "full") for i in range(layers)]
    flags = plan.sub("flags")
    if "key" in flags and "absent" in flags and not k.has(flags.raw("key")):  # MiniMax-M3 with no list: all full
        return _named(k, flags.raw("key"), [flags.raw("absent")] * layers, layers, plan)
    if "key" in flags:  # Llama 4's no_rope_layers: 1 where a layer uses RoPE (chunked), 0 where it does not (full)
        every = flags.number(k, "every", 4)
        given = k.ints(flags.raw("key"), [int((i + 1) % every != 0) for i in range(layers)], minimum=0)
        return _named(k, flags.raw("key"), [flags.raw("one") if v else flags.raw("zero") for v in given], layers, plan)
    prefix = plan.raw("prefix", [])  # the first layers' types, the rule below counting from after them (Zamba)
    if prefix:
        if len(prefix) > layers:
            raise k.fail("num_hidden_layers", layers, f"fewer than the {len(prefix)} layers the family starts with")
        rest = Spec({key: value for key, value in plan.section.items() if key != "prefix"}, plan.where)
        return list(prefix) + _default_types(k, rest, layers - len(prefix))
    if "every" not in plan:
        return [plan.raw("all", "full")] * layers
    every, offset = plan.number(k, "every", 1), plan.number(k, "offset", -1)
    if every < 1:
        raise k.fail(plan.raw("every"), every, "not a whole number from 1")
    # offset -1: every n-th layer counting from one (layers n-1, 2n-1, ...); otherwise layer i where i % n == offset
    on = [(i + 1) % every == 0 if offset < 0 else i % every == offset for i in range(layers)]
    return [plan.raw("on") if is_on else plan.raw("off") for is_on in on]


def _named(
    k: Keys, key: str, given: list[str], layers: int, plan: Spec, known: Mapping[str, str] | None = None
) -> list[str]:
    if len(given) != layers:
        raise CatalogError(
            f"config for {k.name}: '{key}' has {len(given)} entries but {k.spelt('num_hidden_layers')} is {layers}",
            f"Give '{key}' one entry per layer",
        )
    names = {**(TYPE_NAMES if known is None else known), **plan.raw("names", {})}
    for value in given:
        if value not in names:
            raise CatalogError(
                f"config for {k.name}: '{key}' has a layer of kind {value!r}, which derive cannot describe",
                f"Known kinds: {', '.join(sorted(set(names)))}",
            )
    return [names[v] for v in given]


def _mixer(k: Keys, spec: Spec, kind: str) -> Kind:
    """The mixer of one layer type, read by its kind's module with the entry's settings for that type."""
    plan = spec.sub("layers")
    kind, shared = kind.removesuffix("+shared"), kind.endswith("+shared")
    kind, reads_kv = kind.removesuffix("+kv"), kind.endswith("+kv")
    module = "kv_shared" if reads_kv else plan.sub("kinds").raw(kind, KINDS.get(kind, kind))
    attention = ("attention", "latent", "compressed", "kv_shared")
    section = spec.sub("attention") if module in attention else spec.sub(module)
    own = _merge(section.section, section.sub(kind).section) | ({"indexer_shared": True} if shared else {})
    typed = Spec(own, f"{spec.where}.{kind}")
    keys = typed.keys(k)
    if module == "attention" and keys.has("kv_lora_rank"):
        module = "latent"  # kv_lora_rank means multi-head latent attention, in any family
    reader = kind_module(k.name, module)
    if module in ("attention", "kv_shared"):
        return reader.read(keys, typed, _span(keys, typed, kind))
    if module == "compressed":
        return reader.read(keys, typed, kind, _sliding(keys, "sliding_window"))
    return reader.read(keys, typed)


def _span(k: Keys, spec: Spec, kind: str) -> Span:
    if kind == "sliding" or (kind == "full" and spec.raw("window") and k.has(spec.raw("window"))):
        return _sliding(k, spec.raw("window", "sliding_window"))
    if kind == "chunked":
        return Span("chunked", k.int("attention_chunk_size"))
    return FULL


def _sliding(k: Keys, key: str) -> Span:
    return Span("sliding", k.int(key))


def _moe_layers(k: Keys, layers: int, plan: Spec) -> list[bool]:
    """Which layers route to experts, by whichever placement keys the config gives (all of them, if none)."""
    on = [True] * layers
    kinds = k.texts("mlp_layer_types")  # transformers 5: "dense" or "sparse" per layer, where a config lists them
    if kinds is not None:
        return [kind == "sparse" for kind in _named(k, "mlp_layer_types", kinds, layers, plan, MLP_TYPES)]
    if k.has("moe_layers"):
        listed = set(k.ints("moe_layers"))
        on = [i in listed for i in range(layers)]
    elif k.has("interleave_moe_layer_step"):  # Llama 4: every step-th layer
        step = k.int("interleave_moe_layer_step")
        on = [(i + 1) % step == 0 for i in range(layers)]
    if k.has("decoder_sparse_step") or k.has("mlp_only_layers"):  # Qwen: (i+1) % step == 0, less mlp_only_layers
        step, dense_only = k.int("decoder_sparse_step", 1), set(k.ints("mlp_only_layers"))
        on = [o and (i + 1) % step == 0 and i not in dense_only for i, o in enumerate(on)]
    if isinstance(k.get("moe_layer_freq"), list):  # a 0/1 flag per layer (MiMo-V2, dots)
        flags = k.ints("moe_layer_freq")
        if len(flags) != layers:
            raise k.fail("moe_layer_freq", f"a list of {len(flags)}", f"not one flag for each of the {layers} layers")
        on = [o and bool(f) for o, f in zip(on, flags, strict=True)]
    if k.has("first_k_dense_replace") or isinstance(k.get("moe_layer_freq"), int):  # i >= k and i % freq == 0
        first = k.int("first_k_dense_replace", 0, minimum=0)
        freq = k.int("moe_layer_freq", 1) if isinstance(k.get("moe_layer_freq"), int) else 1
        on = [o and i >= first and i % freq == 0 for i, o in enumerate(on)]
    if k.has("moe_layer_end_index"):  # ERNIE: no experts past this layer (-1: the last)
        end = k.get("moe_layer_end_index")
        if not isinstance(end, int) or isinstance(end, bool) or end < -1:
            raise k.fail("moe_layer_end_index", end, "not a layer index (or -1 for the last)")
        last = layers - 1 if end == -1 else end
        on = [o and i <= last for i, o in enumerate(on)]
    if k.has("expert_layer_period"):  # Jamba: i % period == offset
        period, offset = k.int("expert_layer_period"), k.int("expert_layer_offset", 0, minimum=0)
        on = [o and i % period == offset for i, o in enumerate(on)]
    return on


def _per_layer(k: Keys, layers: int, lists: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each layer's own key values: from per_layer_config ({"05": {"head_dim": 512}, ...}) and from per-layer
    lists the entry names (`[layers] per_layer = { num_attention_heads = "num_attention_heads_per_layer" }`)."""
    out: list[dict[str, Any]] = [{} for _ in range(layers)]
    for key, list_key in lists.items():
        values = k.get(list_key)
        if values is None:
            continue
        if not isinstance(values, list) or len(values) != layers:
            raise k.fail(list_key, values if not isinstance(values, list) else values[:8], f"not {layers} values")
        for layer, value in zip(out, values, strict=True):
            layer[key] = value
    given = k.get("per_layer_config")
    if given is None:
        return out
    if not isinstance(given, dict) or not all(isinstance(v, dict) for v in given.values()):
        raise k.fail("per_layer_config", given, "not a table of layers to their keys")
    for index, values in given.items():
        if not str(index).isdigit() or int(index) >= layers:
            raise k.fail("per_layer_config", index, f"not a layer index below {layers}")
        out[int(index)].update(values)
    return out


def _listed(k: Keys) -> int | None:
    """The layers a per-layer pattern lists, where the config gives one (Nemotron-H's layers_block_type, say)."""
    for key in ("layer_types", "layers_block_type", "hybrid_override_pattern"):
        given = k.raw.get(key)
        if isinstance(given, (list, str)) and given:
            return len(given)
    return None


def _layers(k: Keys, spec: Spec) -> list[Layer]:
    # A config that lists every layer's type may leave the count to the list (NemotronHConfig does not save it).
    listed = None if k.given("num_hidden_layers") else _listed(k)
    count = listed if listed is not None else k.int("num_hidden_layers")
    # A layer whose shapes per_layer_config overrides (Gemma 4's global layers) is its own type.
    overrides = _per_layer(k, count, spec.sub("layers").raw("per_layer", {}))
    by_meaning = _types(k, spec, count)
    types = [t if not o else f"{t}#{json.dumps(o, sort_keys=True)}" for t, o in zip(by_meaning, overrides, strict=True)]
    mixers = {
        t: _mixer(k.overlay(o), spec, t.split("#")[0])
        for t, o in dict(zip(types, overrides, strict=True)).items()
        if t.split("#")[0] not in _NO_MIXER
    }
    mlp_spec, moe_spec = spec.sub("mlp"), spec.sub("moe")
    experts = moe_spec.keys(k).int("num_experts", 0, minimum=0) if moe_spec.flag(k, "routed", True) else 0
    separate = "mlp" in types or "moe" in types  # a pattern of separate mixer and MLP layers (Nemotron-H)
    moe = (
        kind_module(k.name, moe_spec.raw("kind", "moe")).read(moe_spec.keys(k), moe_spec)
        if experts or "moe" in types
        else None
    )
    routed_at = _moe_layers(k, count, moe_spec) if moe is not None and not separate else [False] * count
    beside = moe_spec.flag(k, "beside_dense")
    needs_dense = "mlp" in types if separate else beside or not all(routed_at)
    dense = kind_module(k.name, mlp_spec.raw("kind", "mlp")).read(mlp_spec.keys(k), mlp_spec) if needs_dense else None
    if separate:
        return [
            (None, dense, None) if t == "mlp" else (None, None, moe) if t == "moe" else (mixers[t], None, None)
            for t in types
        ]
    return [
        (mixers[t], dense if (beside or not r) else None, moe if r else None)
        for t, r in zip(types, routed_at, strict=True)
    ]


def _passes(k: Keys, plan: Spec, layers: int) -> list[int]:
    """How many times a token runs each layer: `[layers] loop = { first, count, times }` (each a number or a key)
    runs layers first .. first + count - 1 `times` times with the same weights (Dory's recurrent layers)."""
    loop = plan.sub("loop")
    if "times" not in loop:
        return [1] * layers
    first, count, times = (loop.number(k, key, 1) for key in ("first", "count", "times"))
    if times < 1 or first + count > layers:
        raise k.fail(str(loop.raw("times")), times, f"not a loop of at least one pass over layers {first}..")
    return [times if first <= i < first + count else 1 for i in range(layers)]


def _runs(
    layers: list[Layer], norms: int, moe_norms: int, hyper: int, first: int, passes: list[int]
) -> tuple[LayerGroup, ...]:
    """Consecutive identical layers as one group each (a MoE layer has its block's own norms too; the first layer
    may have fewer: ModernBERT-decoder's has no attention norm; looped layers run more than once)."""
    groups: list[LayerGroup] = []
    for i, (mixer, mlp, moe) in enumerate(layers):
        last = groups[-1] if groups else None
        own = (first if i == 0 else norms) + (moe_norms if moe is not None else 0)
        alike = last is not None and (last.mixer, last.mlp, last.moe, last.norms, last.passes)
        if alike == (mixer, mlp, moe, own, passes[i]):
            groups[-1] = LayerGroup(last.count + 1, mixer, mlp, moe, own, hyper, passes[i])  # type: ignore[union-attr]
        else:
            groups.append(LayerGroup(1, mixer, mlp, moe, own, hyper, passes[i]))
    return tuple(groups)


def _dtype(k: Keys) -> str:
    value = k.get("torch_dtype") or k.get("dtype")
    return value if isinstance(value, str) else ""


def _quantization(raw: Mapping[str, Any]) -> str:
    quant = raw.get("quantization_config")
    if not isinstance(quant, dict):
        return ""
    return str(quant.get("quant_method", "")) + (f" {quant['fmt']}" if "fmt" in quant else "")


def _weight_recipe(raw: Mapping[str, Any]) -> str:
    from derive.recipes import from_quantization_config

    quant = raw.get("quantization_config")
    return from_quantization_config(quant)[0] if isinstance(quant, dict) else ""


def _expert_format(raw: Mapping[str, Any]) -> str:
    """mxfp4 when the checkpoint stores its experts so (gpt-oss keeps attention, router, embeddings in bf16)."""
    quant = raw.get("quantization_config")
    if isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        return "mxfp4"
    return ""
