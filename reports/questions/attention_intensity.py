"""Seed 004, question 4: decode attention intensity is fixed at the query-to-KV head ratio; what MLA does to it."""

from dataclasses import replace
from functools import partial

import sympy

from derive import figures
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.evaluation import over
from derive.core.sheet import Figure, Prose, Quantity, Section, Work
from derive.derivations import costs
from derive.derivations.calibrated import calibrated_ridges
from derive.derivations.common import Setup, model_library
from formulas import calibrated as cal
from formulas import intensity as it
from formulas import notation as sym
from reports.questions.shared import recurrent_states


def _draw(gqa, mla, setups, stem):  # type: ignore[no-untyped-def]
    gqa_setup, mla_setup = setups
    batch = int(gqa.values[sym.B])
    at_one = float(over(it.I_w.symbol, sym.B, gqa.values, model_library(gqa_setup.model))(1.0))
    points = [
        ("weight GEMMs, batch 1", at_one),
        (f"weight GEMMs, batch {batch:,}", float(gqa.values[it.I_w])),
        (f"GQA attention ({gqa_setup.model.name})", float(gqa.values[it.I_att])),
        (f"MLA attention ({mla_setup.model.name})", float(mla.values[it.I_att])),
    ]
    figures.roofline(
        stem,
        float(gqa.values[sym.P]),
        float(gqa.values[sym.BW]),
        points,
        f"Decode on {gqa_setup.gpu.name}: batching moves the GEMMs, not attention",
    )


def build(inputs: Inputs) -> Answer:
    gqa_setup = inputs.setup()
    mla_setup = inputs.setup(model=inputs["mla_model"])
    if gqa_setup.model.config.is_mla:  # the model asked about caches a latent: hold it against the GQA default
        gqa_setup, mla_setup = inputs.setup(model=QUESTION.defaults["model"]), gqa_setup
    gqa, mla = costs.intensity(gqa_setup), costs.intensity(mla_setup)
    for sheet, setup in ((gqa, gqa_setup), (mla, mla_setup)):
        work = Work(sheet, model_library(setup.model))
        work.heading("Against the ridge")
        if sheet is gqa:
            arch = setup.model.config
            for shape, value in ((sym.n_h, arch.heads), (sym.n_kv, arch.kv_heads)):
                if shape not in work.values:  # layers of several shapes: the first attention layer's
                    work.given(shape, value, "the first attention layer's (the layers differ)")
            work.compute(work.library.get("query_kv_group_ratio"), "query_kv_group_ratio")
        work.compute(work.library.get("attention_ridge_fraction"), "attention_ridge_fraction")
        if sheet is gqa:
            assert setup.gpu is not None  # the question always names one
            calibrated_ridges(work, setup, setup.gpu)
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    g, m = gqa.results, mla.results
    q = {
        "g": answer.headline("query_kv_group_ratio", g["query_kv_group_ratio"].value, ""),
        "i_gqa": answer.headline("gqa_attention_intensity", g["attention_intensity"].value, "FLOP/byte"),
        "i_mla": answer.headline("mla_attention_intensity", m["attention_intensity"].value, "FLOP/byte"),
        "ridge": answer.headline("ridge_intensity", g["ridge_intensity"].value, "FLOP/byte"),
        "x_gqa": answer.headline("gqa_ridge_fraction", g["attention_ridge_fraction"].value, ""),
        "x_mla": answer.headline("mla_ridge_fraction", m["attention_ridge_fraction"].value, ""),
        "i_w": answer.headline("gemm_intensity", g["qkv_intensity"].value, "FLOP/byte"),
        "flip": answer.headline("flip_batch", g["flip_batch"].value, "sequence"),
        "batch": Quantity(gqa.values[sym.B], "sequence"),
        "gqa_model": Quantity(gqa_setup.model.title),
        "mla_model": Quantity(mla_setup.model.title),
        "heads": Quantity(gqa.values[sym.n_h], ""),
        "kv_heads": Quantity(gqa.values[sym.n_kv], ""),
        "mla_heads": Quantity(mla.values[sym.n_h], ""),
        "gpu": Quantity(gqa_setup.gpu.name),
        "k_gqa": Quantity(gqa.values[sym.k], "byte/token"),
        "k_mla": Quantity(mla.values[sym.k], "byte/token"),
        "ridge_a": answer.headline("calibrated_attention_ridge", g["calibrated_attention_ridge"].value, "FLOP/byte"),
        "eta_a": Quantity(gqa.values[cal.eta_a]),
        "eta_kv": Quantity(gqa.values[cal.eta_kv]),
    }
    mla_bound = _bound(q["i_mla"].number, q["ridge"].number)
    mla_real = _bound(q["i_mla"].number, q["ridge_a"].number)
    realistic = (
        " At the efficiencies attention kernels reach ({eta_a} of peak FLOP/s, {eta_kv} of peak bandwidth, fitted "
        "to aiconfigurator's profiled kernels on the {gpu}) attention's own ridge is {ridge_a}, so MLA attention is "
        + mla_real
        + " in practice"
        + (" too." if mla_real == mla_bound else f", though {mla_bound} against the peaks.")
    )
    answer.summary = Prose(
        "summary",
        "Per cached token, every query head does a score and a value sum, while the cache holds one key and one "
        "value per KV head; so attention's FLOPs per cached byte are the query-to-KV head ratio times two FLOPs per "
        "multiply-accumulate over the bytes per cached value, and the layers, head width and batch all cancel. "
        "For {gqa_model} ({heads} query heads over {kv_heads} KV heads) that is {i_gqa} at any batch, against "
        "a ridge of {ridge} on the {gpu}, while the weight GEMMs reach {i_w} at {batch}"
        + (" (they pass attention from {flip})" if q["flip"].value is not None else "")
        + ". MLA caches one latent "
        "that all {mla_heads} heads of {mla_model} read as both key and value, lifting attention to {i_mla}: "
        "{x_mla} of the ridge." + recurrent_states(gqa_setup, gqa) + realistic,
        q,
    )
    answer.sections.append(
        Section(
            "Grouped-query attention",
            gqa,
            intro=(
                Prose(
                    "text",
                    "The intensity of each decode operation of {gqa_model} at {batch}: the weight GEMMs "
                    "scale with the batch, attention does not, because each sequence reads its own cache.",
                    q,
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "Attention sits at {i_gqa}, exactly the group ratio {g} in a 16-bit cache: batching "
                    "overtakes it at {flip}, and no batch lifts it.",
                    q,
                ),
            ),
        )
    )
    answer.sections.append(
        Section(
            "Multi-head latent attention",
            mla,
            intro=(
                Prose(
                    "text",
                    "MLA caches a compressed latent and a rotary key per layer ({k_mla}, against "
                    "{k_gqa} for {gqa_model}); with the key and value up-projections absorbed into the "
                    "query and output, every head scores and sums directly against that latent.",
                    q,
                ),
            ),
            outro=(
                Prose(
                    "text",
                    "One cached byte now feeds all {mla_heads} heads twice (score and value), so the "
                    "intensity is {i_mla}, {x_mla} of the ridge: " + mla_bound + " against the peaks.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "roofline",
            "Decode operations on the roofline: the weight GEMMs climb with the "
            "batch, GQA attention stays at its group ratio, MLA attention sits "
            + ("below" if q["x_mla"].number < 1 else "past")
            + " the ridge.",
            partial(_draw, gqa, mla, (gqa_setup, mla_setup)),
        )
    )
    answer.takeaways += [
        Prose(
            "takeaway",
            "Batching rescues the weight GEMMs (intensity grows with the batch) but never decode "
            "attention: each sequence's cache serves only that sequence's query.",
        ),
        Prose(
            "takeaway",
            "Only the architecture moves attention's intensity: fewer KV heads (GQA, MQA), a shared "
            "latent (MLA) or a smaller cache dtype (fp8 doubles it).",
        ),
        Prose(
            "takeaway",
            "Speculative decoding is the one runtime lever: verifying several tokens per sequence "
            "reuses each cached byte for each of them.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Intensities count matmul FLOPs and cache bytes only; softmax, rotary and the query and "
            "output activations add a little traffic that lowers them.",
        ),
        Prose(
            "caveat",
            "Absorbing the MLA up-projections trades cache bytes for FLOPs; kernels that instead "
            "decompress the latent into full keys and values run at a lower intensity.",
        ),
    ]
    _wrong_answers(answer, mla_setup, mla.values[sym.b_kv], q)
    _follow_up(answer, inputs, (gqa_setup, mla_setup), q)
    return answer


def _bound(intensity: object, ridge: object) -> str:
    return "compute-bound" if intensity >= ridge else "bandwidth-bound"  # type: ignore[operator]


def _wrong_answers(answer: Answer, mla_setup: Setup, b_kv: sympy.Expr, q: dict[str, Quantity]) -> None:
    """Attention's intensity as candidates commonly get it wrong, from the same sheets."""
    if q["i_w"].number > q["i_gqa"].number:
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Expecting the batch to lift attention as it lifts the GEMMs ({i_w} at {batch}): each sequence "
                "reads only its own cache, so attention stays at {i_gqa}.",
                q,
            )
        )
    q["macs"] = Quantity(q["i_gqa"].number / 2, "FLOP/byte")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Counting one FLOP per multiply-accumulate: {macs}, half the intensity, and every roofline comparison "
            "off by two. A multiply-accumulate is two FLOPs, as the peaks count them.",
            q,
        )
    )
    arch = mla_setup.model.config
    q["mla_kv"] = Quantity(arch.kv_heads)
    # The group-ratio formula, 2·(n_h/n_kv)/b_kv, fed the MLA config's head counts.
    q["mla_as_gqa"] = Quantity(2 * sympy.Rational(arch.heads, arch.kv_heads) / b_kv, "FLOP/byte")
    answer.wrong_answers.append(
        Prose(
            "wrong",
            "Applying the group ratio to MLA from its config's head counts ({mla_heads} query heads over {mla_kv} "
            "KV heads): {mla_as_gqa}. The latent is shared by every head, so the ratio that counts is all "
            "{mla_heads} heads to one latent: {i_mla}.",
            q,
        )
    )


def _follow_up(answer: Answer, inputs: Inputs, setups: tuple[Setup, Setup], q: dict[str, Quantity]) -> None:
    """An 8-bit cache halves the bytes under the same FLOPs: both intensities against the ridges again."""
    if inputs.get("kv_dtype") == "fp8":
        return
    gqa, mla = (costs.intensity(replace(s, kv_dtype="fp8")).results["attention_intensity"].value for s in setups)
    q["gqa_fp8"], q["mla_fp8"] = Quantity(gqa, "FLOP/byte"), Quantity(mla, "FLOP/byte")
    answer.follow_up = FollowUp(
        "And with the cache in fp8?",
        Prose(
            "follow-up",
            "The same FLOPs over fewer bytes: GQA attention rises to {gqa_fp8}, "
            + _bound(gqa, q["ridge"].number)
            + ", and MLA to {mla_fp8}, "
            + (
                _bound(mla, q["ridge"].number) + " against the peaks and at the kernels' efficiencies."
                if _bound(mla, q["ridge"].number) == _bound(mla, q["ridge_a"].number)
                else _bound(mla, q["ridge"].number)
                + " against the peaks and "
                + _bound(mla, q["ridge_a"].number)
                + " at the kernels' efficiencies."
            ),
            q,
        ),
    )


QUESTION = Question(
    id="attention-intensity",
    title="Decode attention intensity is fixed at the query-to-KV head ratio. Derive that, then tell me what MLA "
    "does to it.",
    source="Seed 004, question 4",
    level="Senior",
    kind="explanation",
    defaults={
        "model": "llama3-70b",
        "mla_model": "deepseek-v3",
        "gpu": "h100",
        "dtype": "bf16",
        "kv_dtype": "bf16",
        "batch": 64,
    },
    changeable=("model", "mla_model", "gpu", "dtype", "kv_dtype", "batch"),
    build=build,
)
