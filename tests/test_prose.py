"""Every answer for 8 models of every kind, each on 2 of 4 accelerators (every accelerator meets 4 models): what
its prose claims, its own numbers bear out.

Issue 15 found prose written for the default model that broke for others (an MLA latent named for Mixtral,
"reachable only as an aggregate" beside a computed 4.5 bits that would reach it, "1 accelerators"). Each
check below reads a claim from the rendered short answer and holds it against the answer's results.
"""

from __future__ import annotations

import re

import pytest

from derive import answers
from derive.core.errors import DeriveError
from derive.sheet_render import prose

MODELS = [
    "llama3-70b",  # dense, GQA
    "llama2-13b",  # dense, MHA
    "mixtral-8x7b",  # MoE, sliding window in its config
    "deepseek-v3",  # MLA, MoE, multi-token prediction
    "gpt-oss-20b",  # alternating windows, MXFP4 experts
    "nemotron3-nano",  # Mamba hybrid, MoE
    "qwen3.5-35b-a3b",  # linear-attention hybrid, MoE
    "gemma4-26b-a4b",  # windows, MoE
    "qwen3.5-27b",  # linear-attention hybrid, dense
    "deepseek-v3.2",  # DeepSeek sparse attention (an indexer over an MLA cache), MoE
]
GPUS = ["h100", "h200", "b200", "a100"]


def _value(answer, name):  # type: ignore[no-untyped-def]
    result = answer.results.get(name)
    return None if result is None or result.value is None else float(result.value)


def _claims(answer, text):  # type: ignore[no-untyped-def]
    """Contradictions between the short answer's words and the answer's numbers."""
    wrong = []
    if re.search(r"(?<![\d.,])1 (accelerators|sequences|tokens|GPUs)\b", text):
        wrong.append("a plural after 1")
    model = answer.inputs.get("model")
    config = answer.inputs.setup().model.config if model else None
    interview = answer.wrong_answers + ([answer.follow_up.answer] if answer.follow_up else [])
    everything = " ".join([text] + [prose(c, "md") for c in answer.caveats + answer.takeaways + interview])
    if re.search(r"(?<![\d.,])1 (accelerators|sequences|tokens|GPUs)\b", " ".join(prose(p, "md") for p in interview)):
        wrong.append("a plural after 1 in a wrong answer or the follow-up")
    if re.search(r"\bnan\b|zoo|\binf\b|(?<![\w-])-\d", " ".join(prose(p, "md") for p in interview)):
        wrong.append("a wrong answer or the follow-up prints a number that is not one, or a negative")
    claims_mla = re.search(r"MLA latent here|its MLA|this MLA|MLA cache cannot", everything)
    if config is not None and claims_mla and not config.is_mla and "mla_model" not in answer.inputs:
        wrong.append("names an MLA latent the model does not have")
    if config is not None and "multi-token-prediction" in everything:
        if not any("multi-token-prediction" in note for note in config.notes):
            wrong.append("names a multi-token-prediction module the model does not have")
    x = _value(answer, "claim_over_floor")
    if x is not None and x <= 1 and "only as an aggregate" in text:
        wrong.append("calls a claim below the floor reachable only as an aggregate")
    bits = _value(answer, "required_bits_per_weight")
    if bits is not None and bits >= 4 and "below any format served" in text:
        wrong.append("says no format reaches a claim that 4-bit weights would")
    offered, static = _value(answer, "offered_rate"), _value(answer, "static_capacity")
    if offered is not None and static is not None and (offered > static) != ("simply overloaded" in text):
        wrong.append("says static batching is overloaded, or not, against its capacity")
    if answer.question.id == "decode-knee":
        if (_value(answer, "knee_batch") is None) != ("no compute knee" in text):
            wrong.append("says there is a compute knee, or none, against the knee it computed")
    # Launches are asynchronous: a step is launch-bound only where the CPU's launching outlasts the GPU's work (and
    # the gaps between its kernels, GPU time in series, where the answer counts them).
    for cpu, gpu in (("decode_eager_launch_time", "decode_gpu_work"), ("eager_launch_time", "decode_step_floor")):
        launching, working = _value(answer, cpu), _value(answer, gpu)
        if working is not None and gpu == "decode_step_floor":
            working += _value(answer, "kernel_gap_time") or 0
        if launching is not None and working is not None and (launching > working) != ("launch-bound" in text):
            wrong.append("calls the step launch-bound, or not, against its launch and GPU times")
    crossing = _value(answer, "attention_equals_weights_context")
    if crossing is not None and config is not None and config.max_context:
        if (crossing > config.max_context) != ("the config allows" in text):
            wrong.append("places attention's crossing within the model's positions, or past them, wrongly")
    mbu = _value(answer, "mbu")
    if mbu is not None and (mbu > 1) != ("passes 100 %" in text):
        wrong.append("an MBU past 100 % goes unflagged, or one below it is flagged")
    fits = _value(answer, "max_batch_by_memory")
    if fits is not None and fits < 1 and "caps the batch at" in text:
        wrong.append("caps a batch that does not fit at all")
    return wrong


def _pairs(question: answers.Question, model: str | None) -> list[dict[str, str]]:
    """`model` (where the question takes one) on every accelerator (issue 28: 10 models of every kind x 4)."""
    gpus = GPUS if "gpu" in question.changeable else [None]
    return [{k: v for k, v in (("model", model), ("gpu", g)) if v is not None} for g in gpus]


def _cases() -> list[tuple[str, str | None]]:
    """One case a question and model, so the grid spreads over the test workers."""
    return [
        (q, m) for q in answers.questions() for m in (MODELS if "model" in answers.question(q).changeable else [None])
    ]


@pytest.mark.parametrize(("question", "model"), _cases())
def test_prose_agrees_with_numbers_across_models_and_accelerators(question, model):
    q = answers.question(question)
    failures, built = [], 0
    for overrides in _pairs(q, model):
        try:
            answer = answers.answer(question, overrides)
        except DeriveError as error:  # a model that does not fit says so in one line
            assert "\n" not in str(error)
            continue
        built += 1
        text = prose(answer.summary, "md")
        for problem in _claims(answer, text):
            failures.append(f"{question} {overrides}: {problem}")
    # A model that fits no accelerator of the grid for this question says so, one line each; another model builds.
    assert built or model is not None, f"{question}: no combination built"
    assert not failures, "\n".join(failures[:20])
