"""Enumerate transformers' decoder-only LM families; write and count their configs into tests/data/families/.

    /work/oracle/bin/python tools/transformers_families.py            # a venv with torch and transformers
    /work/oracle/bin/python tools/transformers_families.py --jobs 2   # count in two processes

A dev tool, never a dependency of the product: it needs torch and transformers (made with transformers
5.25.0, torch 2.13.0 CPU). It never downloads and never trusts remote code; models are built on the meta
device, so a 1T-parameter config counts in seconds and allocates nothing.

What it does, each step re-runnable and deterministic:
 1. reads transformers' causal-LM auto mapping (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) and classifies every
    model_type: a decoder-only language-model family to cover, or excluded with a one-line reason
    (EXCLUDED below: encoders that also carry a causal-LM head, the decoder half of encoder-decoder
    models, audio/music decoders). An entry it has not classified and that looks like an encoder
    (in the masked-LM mapping, or is_encoder_decoder) stops the run, so a new transformers is noticed;
 2. writes tests/data/families/<model_type>/default.json for every covered family: its config class's
    defaults, AutoConfig.for_model(model_type).to_dict();
 3. counts every *.json config under tests/data/families/<model_type>/ (the defaults and the published
    configs committed beside them by hand, each with a "_source" key) with the counting logic of
    shared/tools/count_with_transformers.py, copied here: total, text (no vision/audio towers or
    projectors) and active (text less, per MoE layer, the routed experts a token does not use:
    experts*(1-k/E)); writes tests/data/families/counts.json;
 4. writes tests/data/families/families.json (every model_type of the mapping: covered or not, the class
    the mapping names, the reason, the config files) and tests/data/families/README.md.

Published configs are not fetched by this tool (it has no network); they were copied by hand from the
places their "_source" key names, values untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

warnings.filterwarnings("ignore")

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "families"

ENCODER = "bidirectional encoder that also has a causal-LM head (in the masked-LM mapping)"
SEQ2SEQ = "decoder half of an encoder-decoder model (is_encoder_decoder); not a decoder-only LM"
EXCLUDED = {
    # Encoders with a causal-LM head for use as a decoder in EncoderDecoderModel.
    "bert": ENCODER,
    "big_bird": ENCODER,
    "camembert": ENCODER,
    "data2vec-text": ENCODER,
    "electra": ENCODER,
    "ernie": ENCODER + "; BERT-style ERNIE 1.0-3.0, not ERNIE 4.5",
    "megatron-bert": ENCODER,
    "rembert": ENCODER,
    "roberta": ENCODER,
    "roberta-prelayernorm": ENCODER,
    "roc_bert": ENCODER,
    "roformer": ENCODER,
    "xlm-roberta": ENCODER,
    "xlm-roberta-xl": ENCODER,
    "xmod": ENCODER,
    "bert-generation": "BERT-architecture decoder for EncoderDecoderModel (bert2bert seq-generation checkpoints)",
    # Decoder halves of encoder-decoder models.
    "bart": SEQ2SEQ,
    "bigbird_pegasus": SEQ2SEQ,
    "blenderbot": SEQ2SEQ,
    "blenderbot-small": SEQ2SEQ,
    "marian": SEQ2SEQ,
    "mbart": SEQ2SEQ,
    "mvp": SEQ2SEQ,
    "pegasus": SEQ2SEQ,
    "plbart": SEQ2SEQ,
    "prophetnet": SEQ2SEQ,
    "trocr": "text decoder of the TrOCR vision-encoder-decoder OCR model; not a decoder-only LM",
    "whisper": "decoder half of the Whisper speech encoder-decoder; not a decoder-only LM",
    # Audio and music.
    "musicgen": "music generation: decoder over EnCodec audio codebooks, text-conditioned by a T5 encoder",
    "musicgen_melody": "music generation: decoder over EnCodec audio codebooks, conditioned by text and audio",
    "moshi": "Kyutai speech-text dialogue model: its causal LM is the temporal transformer over audio "
    "codebooks plus text, not a standalone text LM",
    "moss_transcribe_diarize": "speech transcription/diarization: audio encoder + text decoder (seq2seq mapping)",
}
# Covered, with something to know about them.
NOTES = {
    "xlm": "kept, unsure: XLM is mostly a cross-lingual encoder (MLM/TLM) but its xlm-clm-* checkpoints are causal LMs",
    "xlnet": "kept, unsure: permutation LM (two-stream attention), generative but mostly used as an encoder",
    "git": "image-to-text: BERT-style causal decoder reading CLIP image tokens; its vision tower is "
    "'git.image_encoder' (and visual_projection), left out of text",
    "modernbert-decoder": "decoder-only ModernBERT (causal), despite the name",
    "cpmant": "Chinese decoder-only LM (CPM-Ant)",
    "emu3": "multimodal: Emu3ForCausalLM is the text decoder; the VQ image tokenizer is not built",
    "got_ocr2": "OCR VLM: wrapper around a Qwen2 text decoder",
    "mllama": "Llama 3.2 Vision: MllamaForCausalLM is the text decoder with its cross-attention layers",
    "gemma4_assistant": "Gemma 4 assistant (drafter) model",
    "gemma4_unified_assistant": "Gemma 4 unified assistant (drafter) model",
    "gemma3n": "its default needs timm and pillow to build the vision tower; gemma3n_text is the same decoder",
    "phi4_multimodal": "multimodal wrapper; Phi4MultimodalForCausalLM holds a Phi-3-style text decoder; its image and "
    "audio embedders sit in model.embed_tokens_extend, left out of text",
    "fuyu": "multimodal decoder-only: image patches go straight into a Persimmon decoder through "
    "model.vision_embed_tokens, left out of text",
    "reformer": "kept though in the masked-LM mapping: its published checkpoints (crime-and-punishment, "
    "enwik8) are causal LMs; the default has is_decoder false, so ReformerModelWithLMHead refuses it and "
    "the count falls back to the bare ReformerModel",
    "ernie4_5_moe": "its expert keys are moe_num_experts / moe_k, which the counting logic does not read: "
    "active is null",
    "blt": "Byte Latent Transformer: local encoder/decoder around a global latent transformer",
}


def classify(model_type: str, cls_name: str, mlm: dict, shared: dict) -> dict:
    """covered or not, and why; the class the mapping names and the other model_types that build it."""
    from transformers import AutoConfig

    entry: dict = {"class": cls_name}
    if model_type in EXCLUDED:
        entry.update(covered=False, reason=EXCLUDED[model_type])
        return entry
    try:
        config = AutoConfig.for_model(model_type)
    except Exception as e:  # a default some validator rejects: still a family
        config = None
        entry["default_error"] = one_line(e)
    if config is not None and getattr(config, "is_encoder_decoder", False) or model_type in mlm:
        if model_type not in NOTES:
            raise SystemExit(f"{model_type}: unclassified encoder or encoder-decoder; add it to EXCLUDED or NOTES")
    entry["covered"] = True
    notes = []
    if model_type in NOTES:
        notes.append(NOTES[model_type])
    others = sorted(t for t in shared[cls_name] if t != model_type)
    if others:
        notes.append(
            f"builds {cls_name}, as {', '.join(others)} also do"
            + (f" (its own config class {type(config).__name__})" if config is not None else "")
        )
    text = getattr(config, "text_config", None) if config is not None else None
    if text is not None and hasattr(text, "model_type"):
        notes.append(f"multimodal wrapper; covered through its text decoder (text_config {text.model_type})")
    if notes:
        entry["note"] = "; ".join(notes)
    return entry


def one_line(e: BaseException) -> str:
    """The exception in one line, with the file and line that raised it."""
    text = " ".join(str(e).split())[:240]
    frames = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {text}{where}"


# The counting logic of shared/tools/count_with_transformers.py, unchanged but for keeping each failure's message.
# Families whose experts the pattern below misreads: no active count rather than a wrong one. JetMoE's
# `.experts.` tensors are its attention experts (self_attention.experts); its MLP experts are not named so.
NO_ACTIVE = ("jetmoe",)

NONTEXT = re.compile(
    r"(^|\.)(visual|vision_tower|vision_model|vision|audio_tower|audio|multi_modal_projector|"
    r"embed_vision|embed_audio|mm_projector|vision_embed|image_newline|"
    # towers the shared oracle's pattern misses: GIT's image encoder and projection, Fuyu's patch embedding,
    # Phi-4-multimodal's image and audio embedders
    r"image_encoder|visual_projection|vision_embed_tokens|embed_tokens_extend)(\.|$)"
)


def count(path: str) -> dict:
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText

    raw = json.load(open(path))
    raw.pop("quantization_config", None)
    raw.pop("_source", None)
    raw.pop("_note", None)
    try:
        config = AutoConfig.for_model(**raw)
    except Exception as e:
        return {"error": one_line(e)}
    model = None
    errors = []
    with torch.device("meta"):  # the model with its LM head; a bare backbone only as the last resort
        for auto in (AutoModelForCausalLM, AutoModelForImageTextToText, AutoModel):
            try:
                model = auto.from_config(config)
                break
            except Exception as e:
                errors.append(one_line(e))
    if model is None:
        return {"error": errors[0]}
    total = text = 0
    experts: dict[int, int] = {}
    for name, p in model.named_parameters(remove_duplicate=True):
        total += p.numel()
        if NONTEXT.search(name):
            continue
        text += p.numel()
        layer = re.search(r"layers\.(\d+)\..*\.experts\.", name)
        if layer and "shared" not in name:
            experts[int(layer.group(1))] = experts.get(int(layer.group(1)), 0) + p.numel()
    tc = raw.get("text_config", raw)
    n_exp = tc.get("n_routed_experts") or tc.get("num_local_experts") or tc.get("num_experts")
    top_k = tc.get("num_experts_per_tok") or tc.get("num_experts_per_token") or tc.get("moe_topk")
    active = None
    if experts and n_exp and top_k and tc.get("model_type", raw.get("model_type")) not in NO_ACTIVE:
        active = text - sum(round(v * (1 - top_k / n_exp)) for v in experts.values())
    return {
        "model_type": raw.get("model_type"),
        "class": type(model).__name__,
        "total": total,
        "text": text,
        "active": active,
    }


def _quiet() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    warnings.filterwarnings("ignore")


def _count_one(path: str) -> tuple[str, dict]:
    try:
        return path, count(path)
    except Exception as e:  # a crash past the guards above
        return path, {"error": one_line(e)}


def dump(obj, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def write_defaults(families: dict) -> None:
    from transformers import AutoConfig

    for model_type, entry in families.items():
        if not entry["covered"] or "default_error" in entry:
            continue
        config = AutoConfig.for_model(model_type).to_dict()
        config["model_type"] = model_type
        dump(config, OUT / model_type / "default.json")


def readme(families: dict, counts: dict, command: str) -> str:
    import torch
    import transformers

    covered = [t for t, e in families.items() if e["covered"]]
    published = [t for t in covered if any(f != "default.json" for f in families[t]["configs"])]
    lines = [
        "# Decoder-only LM families of transformers, with exact parameter counts",
        "",
        f"Made by `tools/transformers_families.py` with transformers {transformers.__version__} and torch "
        f"{torch.__version__}, in a scratch virtual environment:",
        "",
        f"    {command}",
        "",
        "- `families.json`: every model_type of transformers' causal-LM auto mapping "
        f"({len(families)}): covered ({len(covered)}) or excluded with the reason ({len(families) - len(covered)}), "
        "the class the mapping names, notes (aliases that build another family's class, multimodal wrappers "
        "covered through their text decoder, doubtful cases kept), the config files.",
        "- `<model_type>/default.json`: the family's config class defaults, `AutoConfig.for_model(model_type)"
        ".to_dict()`, written by the tool.",
        f"- `<model_type>/<org>__<name>.json`: a released checkpoint's real `config.json` ({len(published)} "
        "families have one), copied by hand, values untouched, with a `_source` key saying where from "
        "(listed below).",
        "- `counts.json`: each config counted by transformers' own modules on the meta device (no weights, "
        "no download, no remote code): `total` every parameter (tied once), `text` without vision/audio "
        "towers and projectors, `active` text less the routed experts a token does not use (null for "
        "dense models); `error` where transformers cannot build the config. The counting logic is "
        "`shared/tools/count_with_transformers.py`'s, copied into the tool.",
        "",
        "## Where each published config came from",
        "",
    ]
    for model_type in covered:
        for name in families[model_type]["configs"]:
            if name == "default.json":
                continue
            source = json.load(open(OUT / model_type / name)).get("_source", "?")
            lines.append(f"- `{model_type}/{name}`: {source}")
    errors = [k for k, v in counts.items() if "error" in v and not k.startswith("_")]
    if errors:
        lines += ["", "## Configs transformers could not build", ""]
        lines += [f"- `{k}`: {counts[k]['error']}" for k in errors]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1, help="processes counting configs (default 1)")
    parser.add_argument("--skip-count", action="store_true", help="keep counts.json; only classify and write")
    args = parser.parse_args()
    _quiet()
    import torch
    import transformers
    from transformers.models.auto import modeling_auto

    mapping = dict(sorted(modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()))
    mlm = modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    shared: dict[str, list[str]] = {}
    for model_type, cls_name in mapping.items():
        shared.setdefault(cls_name, []).append(model_type)
    families = {t: classify(t, c, mlm, shared) for t, c in mapping.items()}
    write_defaults(families)

    for model_type, entry in families.items():
        folder = OUT / model_type
        entry["configs"] = sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []
    paths = sorted(str(p) for p in OUT.glob("*/*.json"))
    stale = sorted({Path(p).parent.name for p in paths} - set(families))
    if stale:
        raise SystemExit(f"folders for model_types not in the mapping: {stale}")

    counts_path = OUT / "counts.json"
    if args.skip_count and counts_path.exists():
        counts = json.load(open(counts_path))
    else:
        if args.jobs > 1:
            with ProcessPoolExecutor(args.jobs, initializer=_quiet) as pool:
                results = dict(pool.map(_count_one, paths, chunksize=1))
        else:
            results = dict(_count_one(p) for p in paths)
        counts = {
            "_source": f"tools/transformers_families.py: transformers {transformers.__version__}, "
            f"torch {torch.__version__}, meta device, AutoConfig.for_model(**config) then "
            "AutoModelForCausalLM / AutoModelForImageTextToText / AutoModel.from_config, first that builds"
        }
        for p, result in results.items():
            counts[f"{Path(p).parent.name}/{Path(p).stem}"] = result
    dump(counts, counts_path)
    dump(families, OUT / "families.json")
    command = "/work/oracle/bin/python tools/transformers_families.py --jobs 2"
    (OUT / "README.md").write_text(readme(families, counts, command))
    covered = sum(e["covered"] for e in families.values())
    print(
        f"{len(families)} model_types: {covered} covered, {len(families) - covered} excluded; "
        f"{len(paths)} configs counted, {sum('error' in v for v in counts.values() if isinstance(v, dict))} errors",
        file=sys.stderr,
    )


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
