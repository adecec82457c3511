"""`derive params --check`: derive's reading of a config held against transformers' own modules, layer by layer.

This is how a user trusts derive's reading of a family released after this version. It needs the optional
extra (`pip install 'derive[hf]'`: torch and transformers) and is the only module that imports them, only
when asked. The model is built on the meta device (no weights, no memory), from the config as given: nothing
is downloaded and `trust_remote_code` is never set, so a family that needs its own code (`auto_map`) is
checked by derive's reading alone, and the check says why it goes no further.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from derive.core.errors import DeriveError

# Towers and projectors of multimodal checkpoints: not the text decoder derive counts.
_NONTEXT = re.compile(
    r"(^|\.)(visual|vision_tower|vision_model|vision|audio_tower|audio|multi_modal_projector|embed_vision|"
    r"embed_audio|mm_projector|vision_embed|image_newline|image_encoder|visual_projection|vision_embed_tokens|"
    r"embed_tokens_extend)(\.|$)"
)
_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|layer|block)\.(\d+)\.")


@dataclass(frozen=True)
class Check:
    """What transformers builds from the config: its version, each layer's parameters, and those outside them."""

    version: str
    layers: tuple[int, ...]
    outside: int
    built: str  # the class transformers built
    skipped: str = ""  # why the check went no further (remote code), or ""

    @property
    def total(self) -> int:
        return sum(self.layers) + self.outside


def build(raw: Mapping[str, Any], read_as: str = "") -> Check:
    """Build the config's model on the meta device and count its parameters per layer.

    `read_as`: the model_type derive read an unknown one as, from the class its `architectures` field names
    (Kimi K2 as deepseek_v3); transformers builds it as that class too, as its own auto mapping would.
    """
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except ImportError:
        raise DeriveError(
            "--check needs torch and transformers, which are not installed",
            "Install them with: pip install 'derive[hf]'",
        ) from None
    transformers.logging.set_verbosity_error()
    family = raw.get("model_type")
    if family not in CONFIG_MAPPING_NAMES and read_as in CONFIG_MAPPING_NAMES:
        raw, family = {**raw, "model_type": read_as}, read_as
    if family not in CONFIG_MAPPING_NAMES:
        needs = "its own code (auto_map), which --check never runs" if raw.get("auto_map") else "code it does not have"
        why = f"transformers has no model_type {family!r}: it needs {needs}"
        return Check(transformers.__version__, (), 0, "", why)
    config = {k: v for k, v in raw.items() if not k.startswith("_") and k not in ("quantization_config", "auto_map")}
    model, error = None, ""
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        try:
            built = AutoConfig.for_model(**config)
        except Exception as exc:  # noqa: BLE001 - transformers' own validation, said in one line
            message = f"transformers refuses this config: {exc}".splitlines()[0]
            raise DeriveError(message, "Fix the config.json") from None
        for auto in (AutoModelForCausalLM, AutoModelForImageTextToText, AutoModel):
            try:
                model = auto.from_config(built)
                break
            except Exception as exc:  # noqa: BLE001 - try the next head
                error = error or str(exc)
    if model is None:
        raise DeriveError(f"transformers cannot build this config: {error}".splitlines()[0], "Fix the config.json")
    layers: dict[int, int] = {}
    outside = 0
    for name, tensor in model.named_parameters(remove_duplicate=True):
        if _NONTEXT.search(name):
            continue
        found = _LAYER.search(name)
        if found:
            layers[int(found.group(1))] = layers.get(int(found.group(1)), 0) + tensor.numel()
        else:
            outside += tensor.numel()
    counted = tuple(layers.get(i, 0) for i in range(max(layers, default=-1) + 1))
    return Check(transformers.__version__, counted, outside, type(model).__name__)


def compare(derived: list[int], derived_outside: int, check: Check) -> str:
    """One line: every layer and the rest equal, or the first place derive and transformers differ."""
    if check.skipped:
        return f"checked by derive's reading only: {check.skipped}"
    if not check.layers:  # its modules name no layers (XLM: attentions.N, ffns.N): the totals are what compare
        ours = sum(derived) + derived_outside
        if ours == check.outside:
            return f"equal in total to transformers {check.version} ({check.built}): {ours:,} parameters"
        return (
            f"transformers {check.version} counts {check.outside:,} parameters, derive {ours:,} "
            f"({ours - check.outside:+,})"
        )
    if len(derived) != len(check.layers):
        if sum(derived) + derived_outside == check.total:  # Dory's config lists each layer's attention and MLP apart
            return (
                f"equal in total to transformers {check.version} ({check.built}): {check.total:,} parameters, in "
                f"{len(check.layers)} layers where the config lists {len(derived)} (a layer's parts listed apart)"
            )
        return f"transformers builds {len(check.layers)} layers where derive reads {len(derived)}"
    moved = next((i for i, (ours, theirs) in enumerate(zip(derived, check.layers, strict=True)) if ours != theirs), -1)
    if moved >= 0 and sum(derived) + derived_outside == check.total:  # the same parameters, placed elsewhere
        return (
            f"equal in total to transformers {check.version} ({check.built}): {check.total:,} parameters; its layer "
            f"{moved} holds {check.layers[moved] - derived[moved]:+,} of them that derive counts with the model as a "
            "whole (a block the layers share, or a norm on the embedding)"
        )
    for i, (ours, theirs) in enumerate(zip(derived, check.layers, strict=True)):
        if ours != theirs:
            return (
                f"first difference at layer {i}: transformers {theirs:,} parameters, derive {ours:,} "
                f"({ours - theirs:+,})"
            )
    if derived_outside != check.outside:
        return (
            f"every layer equal; outside the layers (embedding, head, final norm) transformers has "
            f"{check.outside:,}, derive {derived_outside:,} ({derived_outside - check.outside:+,})"
        )
    return (
        f"equal to transformers {check.version} ({check.built} on the meta device): each of the {len(derived)} "
        f"layers and the {check.outside:,} parameters outside them"
    )
