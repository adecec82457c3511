"""The inputs commands share, declared once: name, kind, unit, default, help.

The CLI builds its options from this table (cli.py's `option`), the scenario builder takes its
defaults and the datasheet overrides' units from it (derive/scenario.py), and tests check the rest
against it: every API keyword of that name, every field of the Setup, every question's changeable
input (tests/test_inputs.py). Bounds are derive/core/validate.py's, applied by kind: a count is a whole
number within its sanity bound, a quantity carries the unit below. This module imports nothing heavy:
`derive --help` reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "fp4", "int4")  # a cache's or a state's number formats


def weight_dtypes() -> tuple[str, ...]:
    """What --dtype takes: every weight recipe of formulas/recipes.toml (the plain formats among them)."""
    from derive.recipes import recipes

    return tuple(recipes())


@dataclass(frozen=True)
class Input:
    name: str  # the API keyword, the scenario key and the Setup field
    kind: str  # "count", "quantity", "number" (a plain one, bounds checked where it is read), "choice", "flag",
    # "text" or "path"
    help: str
    default: Any = None  # None: none, or a rule the help states
    unit: str = ""  # a quantity's unit
    example: str = ""  # a quantity as typed, for the help's metavar
    short: str = ""  # a one-letter option
    command: str = ""  # the commands that read it ("": the scenario every derivation shares)
    choices: str = "formats"  # a choice's names: number "formats" (DTYPES) or weight "recipes"
    rule: str = ""  # what the default is where a rule picks it ("" : the default itself)

    @property
    def names(self) -> tuple[str, ...]:
        """The names a choice takes."""
        return weight_dtypes() if self.choices == "recipes" else DTYPES

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def text(self) -> str:
        """The help with its default, as the CLI shows it."""
        if self.default is None:
            return self.help
        return f"{self.help} Default: {self.rule or self.default}."


_TABLE = (
    Input("model", "text", "Catalog model name or alias (see 'derive models').", short="-m"),
    Input("config", "path", "A local Hugging Face config.json, or its folder."),
    Input("gpu", "text", "Accelerator (see 'derive gpus').", default="h100", short="-g"),
    Input("bandwidth", "quantity", "Override memory bandwidth.", unit="byte/second", example="3.35 TB/s"),
    Input("flops", "quantity", "Override peak FLOP/s.", unit="FLOP/second", example="989 TFLOP/s"),
    Input("memory", "quantity", "Override memory per accelerator.", unit="byte", example="80 GB"),
    Input("power", "quantity", "Override power per accelerator.", unit="watt", example="700 W"),
    Input(
        "dtype",
        "choice",
        "Weight dtype or recipe (formulas/recipes.toml).",
        default="bf16",
        choices="recipes",
        rule="the recipe the checkpoint's quantization_config names (DeepSeek-V3: fp8-block), else bf16",
    ),
    Input("kv_dtype", "choice", "KV-cache dtype. Default: the format the weight recipe's activations travel in."),
    Input("context", "count", "Tokens of context per sequence.", default=2048, short="-s"),
    Input(
        "allow_long_context",
        "flag",
        "Size a --context, or a --prompt and --output, beyond the config's position limit anyway (with a note).",
    ),
    Input("tp", "count", "Tensor-parallel degree. Default: the smallest power of two that fits."),
    Input(
        "ep",
        "count",
        "Expert-parallel groups: each expert split tp·dp/ep ways inside one (1, the default: split over all; tp·dp: "
        "whole experts).",
    ),
    Input("pp", "count", "Pipeline stages; --batch is then one micro-batch of each. Default: 1."),
    Input("dp", "count", "Attention data-parallel ranks sharing the routed experts (MoE). Default: 1."),
    Input("batch", "count", "Sequences decoded together.", default=1, short="-b"),
    Input("prompt", "count", "Prompt tokens per request.", default=2048),
    Input("output", "count", "Output tokens per request.", default=256),
    Input("tokens", "count", "Tokens through the layer at once (T).", default=1),
    Input("floor", "flag", "The roofline floor alone, without the calibrated estimate."),
    # derive plan's targets and search bounds (derive/planning.py), with their defaults.
    Input(
        "tpot", "quantity", "Time-per-output-token target (required).", unit="second", example="50 ms", command="plan"
    ),
    Input("ttft", "quantity", "Time-to-first-token target.", "2 s", unit="second", example="2 s", command="plan"),
    Input(
        "rate",
        "quantity",
        "Requests a second to serve: plan sizes the fleet of whole copies for it.",
        unit="sequence/second",
        example="20 req/s",
        command="plan, simulate batching",
    ),
    # Speculative decoding (derive/speculation.py checks them together; formulas/speculative.py).
    Input(
        "draft_tokens",
        "count",
        "Speculative decoding: tokens a draft proposes a sequence before each verification pass (with --acceptance "
        "and --draft-cost; with --mtp, the config's MTP modules by default).",
        command="plan, predict",
    ),
    Input(
        "acceptance",
        "number",
        "Chance the model accepts each drafted token, from 0 to below 1 (with --mtp: 0.85, DeepSeek-V3's report).",
        command="plan, predict",
    ),
    Input(
        "draft_cost",
        "number",
        "One draft step's time over one verification pass, from 0 to 1 (with --mtp: one layer of the model's).",
        command="plan, predict",
    ),
    Input(
        "mtp",
        "flag",
        "Draft with the config's own multi-token-prediction modules (DeepSeek-V3's num_nextn_predict_layers).",
        command="plan, predict",
    ),
    Input("max_gpus", "count", "Most accelerators one copy may use.", 64, command="plan"),
    Input(
        "max_batch",
        "count",
        "Most sequences each attention rank holds in one micro-batch (an engine's max_batch_size: each attention "
        "data-parallel rank schedules its own).",
        1024,
        command="plan",
    ),
    Input(
        "price",
        "text",
        "Prices per accelerator-hour, overriding the committed table: 'h100=2.5 USD/h,b200=6 USD/h'.",
        command="plan",
    ),
)
INPUTS: dict[str, Input] = {i.name: i for i in _TABLE}

# The scenario's defaults (the tensor-parallel degree has a rule instead: derivations.common.smallest_tp).
DEFAULTS: dict[str, Any] = {i.name: i.default for i in _TABLE if i.default is not None and not i.command}
# Datasheet figures an input may override, each the unit it must carry.
OVERRIDES: dict[str, str] = {i.name: i.unit for i in _TABLE if i.kind == "quantity" and not i.command}
