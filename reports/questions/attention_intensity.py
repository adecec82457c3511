"""Seed 004, question 4: decode attention intensity is fixed at the query-to-KV head ratio; what MLA does to it."""

from functools import partial

from derive import figures
from derive.answers import Answer, Inputs, Question
from derive.derivations import costs
from derive.derivations.common import model_library
from derive.evaluation import over
from derive.sheet import Figure, Prose, Quantity, Section, Work
from formulas import intensity as it
from formulas import notation as sym


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
    }
    answer.summary = Prose(
        "summary",
        "Per cached token, every query head does a score and a value sum, while the cache holds one key and one "
        "value per KV head; so attention's FLOPs per cached byte are the query-to-KV head ratio times two FLOPs per "
        "multiply-accumulate over the bytes per cached value, and the layers, head width and batch all cancel. "
        "For {gqa_model} ({heads} query heads over {kv_heads} KV heads) that is {i_gqa} at any batch, against "
        "a ridge of {ridge} on the {gpu}, while the weight GEMMs reach {i_w} at {batch}. MLA caches one latent "
        "that all {mla_heads} heads of {mla_model} read as both key and value, lifting attention to {i_mla}: "
        "{x_mla} of the ridge.",
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
                    "intensity is {i_mla}, {x_mla} of the ridge: within a hair of compute-bound.",
                    q,
                ),
            ),
        )
    )
    answer.figures.append(
        Figure(
            "roofline",
            "Decode operations on the roofline: the weight GEMMs climb with the "
            "batch, GQA attention stays at its group ratio, MLA attention sits just below the "
            "ridge.",
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
    return answer


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
