"""Seed 000, question 6: an FFN layer's FLOPs, bytes and all-reduce under tensor parallelism; which limit binds."""

from __future__ import annotations

from functools import partial

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question, assumed
from derive.core.evaluation import evaluate
from derive.core.library import LIBRARY
from derive.core.sheet import Figure, Prose, Quantity, Section, Sheet
from derive.derivations.sharding import shard
from formulas import notation as sym
from formulas import sharding as sh

_WORDS = {"compute": "compute", "hbm": "HBM", "network": "the network"}


def _draw(labels, costs, title, stem):  # type: ignore[no-untyped-def]
    # A log axis has no zero: a cost that is not there (no all-reduce on one accelerator) draws no bar.
    shown = {k: [float(v) * 1e6 if v > 0 else float("nan") for v in vs] for k, vs in costs.items()}
    figures.bars(stem, labels, shown, "time (µs, log scale)", title, log=True)


def build(inputs: Inputs) -> Answer:
    slow = assumed(inputs, "slow_link", "byte/second")
    cases = [
        ("decode", "nvlink", inputs.setup(tokens=inputs["tokens"])),
        ("prefill", "nvlink", inputs.setup(tokens=inputs["prefill_tokens"])),
        ("decode", "slow", inputs.setup(tokens=inputs["tokens"], link=slow, link_name="(assumed inter-node link)")),
        (
            "prefill",
            "slow",
            inputs.setup(tokens=inputs["prefill_tokens"], link=slow, link_name="(assumed inter-node link)"),
        ),
    ]
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    q: dict[str, Quantity] = {"slow": Quantity(slow, "byte/second")}
    sheets = {f"{phase}_{link}": shard(setup) for phase, link, setup in cases}
    # What the question asks for first: the layer's FLOPs, bytes and communication; then what binds where.
    for phase in ("decode", "prefill"):
        r = sheets[f"{phase}_nvlink"].results
        q[f"{phase}_flops"] = answer.headline(f"{phase}_flops", r["flops"].value, "FLOP")
        q[f"{phase}_activations"] = answer.headline(f"{phase}_activation_bytes", r["activation_bytes"].value, "byte")
        q[f"{phase}_allreduce"] = answer.headline(f"{phase}_allreduce_bytes", r["allreduce_bytes"].value, "byte")
    for phase, link, setup in cases:
        key = f"{phase}_{link}"
        sheet = sheets[key]
        r = sheet.results
        answer.headline(f"{key}_binding", r["binding"].value)
        q[f"{key}_binding"] = Quantity(_WORDS[str(r["binding"].value)])
        for t in ("t_compute", "t_hbm", "t_network"):
            q[f"{key}_{t}"] = answer.headline(f"{key}_{t}", r[t].value, "second")
        link_words = "the GPUs' own link" if link == "nvlink" else "an assumed slow inter-node link"
        answer.sections.append(
            Section(
                f"{phase.capitalize()}, {setup.tokens:,} tokens, over {link_words}",
                sheet,
                outro=(
                    Prose(
                        "text",
                        "What binds: {b} (compute {c}, HBM {h}, network {n}).",
                        {
                            "b": q[f"{key}_binding"],
                            "c": q[f"{key}_t_compute"],
                            "h": q[f"{key}_t_hbm"],
                            "n": q[f"{key}_t_network"],
                        },
                    ),
                ),
            )
        )
        if phase == "decode" and link == "nvlink":
            q["n"] = Quantity(sheet.values[sym.n])
            q["gpu"] = Quantity(setup.gpu.name if setup.gpu else "")
            q["weights"] = Quantity(r["weight_bytes"].value, "byte")
    q["decode_tokens"] = Quantity(inputs["tokens"], "token")
    q["prefill_tokens"] = Quantity(inputs["prefill_tokens"], "token")
    answer.summary = Prose(
        "summary",
        "Write the three costs down and compare times: the largest binds. One FFN layer ({weights} of weights) does "
        "{decode_flops} for {decode_tokens} and {prefill_flops} for {prefill_tokens}, moves {decode_activations} and "
        "{prefill_activations} of activations, and its all-reduce sends {decode_allreduce} and {prefill_allreduce} "
        "from each accelerator. On {n} x {gpu}, the decode step "
        "takes {decode_nvlink_t_hbm} to read from HBM "
        "against {decode_nvlink_t_compute} of arithmetic, so {decode_nvlink_binding} binds; a prefill chunk of "
        "{prefill_tokens} needs {prefill_nvlink_t_compute} of arithmetic, and "
        + (
            "{prefill_nvlink_binding} binds over the GPUs' own link ({prefill_nvlink_t_network} of all-reduce). Over "
            "a slow inter-node link of {slow} the same all-reduce takes {prefill_slow_t_network}, and "
            "{prefill_slow_binding} binds."
            if q["n"].number > 1
            else "{prefill_nvlink_binding} binds. On one accelerator there is no all-reduce, so the link never "
            "binds; split the layer (--set tp=...) to see what it costs."
        ),
        q,
    )
    cases_shown = [f"{phase}, {'NVLink' if link == 'nvlink' else 'slow link'}" for phase, link, _ in cases]
    costs = {
        name: [sheets[f"{phase}_{link}"].results[t].number for phase, link, _ in cases]
        for name, t in (("compute", "t_compute"), ("HBM", "t_hbm"), ("network", "t_network"))
    }
    answer.figures.append(
        Figure(
            "costs",
            "One FFN layer's three costs in each case: the longest bar binds.",
            partial(_draw, cases_shown, costs, f"{q['n'].value} x {q['gpu'].value}, one FFN layer"),
        )
    )
    if q["n"].number > 1:
        # The seed's network time is bytes over the link; a small all-reduce also waits its latency.
        alpha = assumed(inputs, "allreduce_latency", "second")
        decode = sheets["decode_nvlink"].results
        with_latency = decode["t_network"].number + alpha
        q["alpha"], q["decode_net_alpha"] = Quantity(alpha, "second"), Quantity(with_latency, "second")
        q["decode_hbm"] = Quantity(decode["t_hbm"].number, "second")
        binds = "still under" if with_latency < decode["t_hbm"].number else "now over"
        answer.takeaways.append(
            Prose(
                "takeaway",
                "The network time here is bytes over the link, as the question's model has it; decode's all-reduce "
                "({decode_allreduce} sent) also waits a small-message latency ({alpha} assumed, as in "
                "decode-floor-70b): "
                "{decode_net_alpha}, " + binds + " HBM's {decode_hbm}.",
                q,
            )
        )
    answer.takeaways += [
        Prose(
            "takeaway",
            "With few tokens the layer's intensity is roughly T FLOPs per byte of weights, far below "
            "the ridge: HBM binds. Many tokens make it compute-bound.",
        ),
        Prose(
            "takeaway",
            "Sharding divides compute and weights by n but not the all-reduce of T x d values, so "
            "over slow links the network binds: keep tensor parallelism inside a node.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Peak figures and no overlap: real layers overlap the all-reduce with the matmuls in part, "
            "and a small all-reduce (decode's) is bound more by latency than by bandwidth.",
        ),
        Prose(
            "caveat",
            "The slow link is an assumption (assumed: one inter-node NIC per GPU, set with --set "
            "slow_link); the decode case's network time is a floor for the same reason.",
        ),
    ]
    _wrong_answers(answer, sheets, q)
    _follow_up(answer, sheets, q)
    return answer


def _wrong_answers(answer: Answer, sheets: dict[str, Sheet], q: dict[str, Quantity]) -> None:
    """The three costs as candidates commonly get them wrong, each figure from the same sheets."""
    decode, prefill = sheets["decode_nvlink"].values, sheets["prefill_slow"].values
    library = LIBRARY
    n = decode[sym.n]
    if n > 2:  # at n = 2 a ring all-reduce sends exactly one copy
        one_copy = prefill[sh.T_ffn] * prefill[sh.b_a] * prefill[sh.v_d]
        net = library.get("ffn_network_time").expr
        q["one_copy"] = Quantity(evaluate(net, {**prefill, sh.C_ar: one_copy}, library), "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Sizing the all-reduce as one copy of the output, T·d·b_a: over the slow link the prefill's comes "
                "to {one_copy}, not {prefill_slow_t_network}. A ring all-reduce sends 2(n-1)/n of it from each "
                "accelerator.",
                q,
            )
        )
    if n > 1:
        hbm = library.get("ffn_hbm_time").expr
        q["whole_hbm"] = Quantity(evaluate(hbm, {**decode, sh.W_gpu: decode[sh.W_ffn]}, library), "second")
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Timing the decode read with the whole layer's {weights} on each accelerator: {whole_hbm}, not "
                "{decode_nvlink_t_hbm}. Each holds and reads only its 1/n shard.",
                q,
            )
        )
    t_comp, t_hbm = decode[sh.t_ffn_comp], decode[sh.t_ffn_hbm]
    if len(answer.wrong_answers) < 2 and t_comp < t_hbm:
        q["decode_too_fast"] = Quantity(t_hbm / t_comp)
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Timing the decode layer by its FLOPs: {decode_nvlink_t_compute}, {decode_too_fast} times too fast. "
                "With {decode_tokens} the weight read, {decode_nvlink_t_hbm}, binds.",
                q,
            )
        )


def _follow_up(answer: Answer, sheets: dict[str, Sheet], q: dict[str, Quantity]) -> None:
    """Both the all-reduce and the FLOPs grow in proportion to the chunk: their ratio over the slow link. On one
    accelerator (no all-reduce), the chunk where compute overtakes HBM instead."""
    v = sheets["prefill_slow"].values
    if v[sym.n] < 2:
        crossing = v.get(sh.T_cross)
        if crossing is None:
            return
        q["crossing"] = Quantity(crossing, "token")
        answer.follow_up = FollowUp(
            "How many tokens must pass through the layer before compute binds?",
            Prose("follow-up", "About {crossing}: below it the weight read binds, above it the arithmetic.", q),
        )
        return
    ratio = v[sh.t_ffn_net] / v[sh.t_ffn_comp]
    q["net_ratio"] = Quantity(ratio)
    text = (
        "No: the all-reduce and the FLOPs both grow in proportion to T, so over {slow} the all-reduce stays "
        "{net_ratio} times the arithmetic at any chunk; keep the tensor-parallel group inside a node."
        if ratio > 1
        else "No longer chunk is needed: the all-reduce and the FLOPs both grow in proportion to T, and over "
        "{slow} the all-reduce is already {net_ratio} of the arithmetic at any chunk."
    )
    answer.follow_up = FollowUp(
        "Would a longer prefill chunk hide the slow link's all-reduce behind the arithmetic?",
        Prose("follow-up", text, q),
    )


QUESTION = Question(
    id="ffn-sharding",
    title="Estimate an FFN layer's FLOPs, parameter and activation bytes, and the communication from sharding it. "
    "Which limit binds: compute, HBM or network?",
    source="Seed 000, question 6",
    level="Senior",
    kind="estimate",
    defaults={
        "model": "llama3-70b",
        "gpu": "h100",
        "dtype": "bf16",
        "tp": 8,
        "tokens": 8,
        "prefill_tokens": 4096,
        "slow_link": "50 GB/s",
        "allreduce_latency": "10 us",
    },
    changeable=("model", "gpu", "dtype", "tp", "tokens", "prefill_tokens", "slow_link", "allreduce_latency"),
    build=build,
)
