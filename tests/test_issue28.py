"""Issue 28's cases: numbers the answer book got wrong and sentences false for other models, each a regression."""

from __future__ import annotations

import sympy

from derive.sheet_render import prose
from tests.interview import built


def _summary(answer) -> str:  # type: ignore[no-untyped-def]
    return prose(answer.summary, "md")


def test_cuda_graph_gaps_are_gpu_time_in_series():
    """GPT-2 small on an H100: 12 layers x 15 kernels; a graph keeps a 1 us GPU gap before each, so its step is the
    85.09 us floor + 180 x 1 us = 265 us, and against the 900 us of eager launching it saves 635 us, not 715."""
    r = built("framework-to-gpu").results
    floor = r["decode_step_floor"].value
    assert r["graph_step_time"].value == floor + 180 * sympy.Rational(1, 10**6)
    assert r["eager_step_time"].value == 180 * sympy.Rational(5, 10**6)
    assert round(float(r["graph_saving"].value) * 1e6) == 635


def test_measure_mbu_reads_the_cache_at_a_context_the_workload_has():
    """1,024-token prompts and 512-token replies: a live sequence sits at 1,280 tokens on average, never 4,096; the
    MBU there is 54.4% (issue 28)."""
    answer = built("measure-mbu")
    assert round(float(answer.results["mbu"].value) * 100, 1) == 54.4
    assert answer.inputs.setup(context=1280).context == 1280


def test_gpt_oss_experts_are_said_in_their_own_format():
    """gpt-oss-20b ships its routed experts in MXFP4 (its config's quantization_config): the bytes a step reads are
    not 'in fp8'."""
    text = _summary(built("moe-experts-read", model="gpt-oss-20b"))
    assert "in mxfp4 routed experts, the rest in fp8" in text


def test_a_coincidence_only_where_one_is_computed():
    """Llama 3 8B's cache at the crossover is 0.11 of an H200: no coincidence; Llama 3 70B's is 0.99 of it."""
    assert "coincidence" not in _summary(built("kv-weight-crossover", model="llama3-8b"))
    assert "The coincidence" in _summary(built("kv-weight-crossover"))


def test_the_half_ceiling_batch_past_memory_is_said_so():
    """DeepSeek-V3's half-ceiling batch lies past what its accelerators' memory holds; and with no context limit to
    the knee no sentence says 'below none'."""
    text = _summary(built("decode-knee", model="deepseek-v3"))
    assert "a batch never gets there" in text
    for gpu in ("a100", "h100", "b200"):
        assert "None" not in _summary(built("decode-knee", gpu=gpu)) and "below none" not in _summary(
            built("decode-knee", gpu=gpu)
        )


def test_tensor_parallelism_across_nodes_is_not_called_plausible():
    """32 H200s are 4 HGX systems of 8: tensor parallelism past one crosses the 400 Gb/s network, not NVLink."""
    claim = _summary(built("vendor-claim", tp=32))
    assert "plausible as stated" not in claim and "scale-out network" in claim
    floor = built("decode-floor-70b", tp=32)
    assert "scale-out network" in _summary(floor)
    one_node = built("decode-floor-70b", tp=8)
    assert "scale-out network" not in _summary(one_node)


def test_fp32_is_not_the_likeliest_cause_where_fp32_weights_cannot_fit():
    """Nemotron-3 Nano's 31.6B parameters in fp32 are 126 GB, past one 80 GB H100: it was never loaded so."""
    assert "fp32" not in _summary(built("slow-8b-step", model="nemotron3-nano"))
    assert "fp32" in _summary(built("slow-8b-step"))  # Llama 3 8B in fp32 fits, and its floor fits the 12 ms


def test_a_claim_about_a_dtype_keeps_the_accelerator_count():
    """DeepSeek-V3 on B200: bf16 needs all 8; fp8 on the same 8 reads half the bytes (its floor about twice bf16's),
    not fp8 on the 4 its own default would pick, which made 'fp8 reaches it' read as '4-bit would'."""
    answer = built("vendor-claim", model="deepseek-v3", gpu="b200")
    floors = answer.results["floor_at_alt_dtype"].value / answer.results["floor_tokens_per_s_per_user"].value
    assert 1.9 < float(floors) <= 2
    assert "fp8 weights on the same 8 accelerators would reach it" in _summary(answer)


def test_recurrent_layers_are_ranked_beside_attention():
    """Qwen3.5-27B's 48 gated delta-net layers and Nemotron-3 Nano's 23 Mamba-2 layers read their state at about 1.5
    and 1.0 FLOP/B (their FLOPs on the fp32 state over its bytes): both answers name them."""
    for model, layers, intensity in (("qwen3.5-27b", 48, 1.471), ("nemotron3-nano", 23, 0.9827)):
        for question in ("intensity-ranking", "attention-intensity"):
            text = _summary(built(question, model=model))
            assert f"its {layers} " in text and f"state at {intensity} FLOP/B" in text


def test_a_mixture_of_experts_prompt_pass_is_not_every_weight_times_every_token():
    """Mixtral routes each token through 2 of its 8 experts a layer (its config)."""
    text = _summary(built("prefill-crossover", model="mixtral-8x7b"))
    assert "every weight by every prompt token" not in text and "2 of the 8 experts" in text
    assert "every weight by every prompt token" in _summary(built("prefill-crossover"))


def test_recurrent_state_flops_are_not_a_cost_per_cached_token():
    """Qwen3.5-27B's 48 gated delta-net layers spend 226.5 MFLOP a token on their state, whatever the context; only
    its 16 attention layers' FLOPs grow with the cache."""
    answer = built("flops-per-token", model="qwen3.5-27b")
    text = _summary(answer)
    assert "226.5 MFLOP/token to update and read their state whatever the context" in text
    q = answer.summary.quantities
    assert q["f_cached"].number + q["f_st"].number == answer.results["attention_flops_per_token"].value


def test_a_capacity_ratio_set_by_leftover_memory_says_so():
    """Llama 3 70B's 141.1 GB of weights fill 88% of two 80 GB H100s: the 11.6x is the 19 GB left against 219 GB."""
    text = _summary(built("h100-to-b200"))
    assert "the weights fill 88.19 % of the 2 x h100" in text
    assert "That capacity ratio" not in _summary(built("h100-to-b200", model="llama3-8b"))


def test_batching_strategy_reconciles_its_closed_form_with_its_simulation():
    """Capacities (every seat busy) against what the simulated arrivals got out: both pairs named, and which is."""
    text = _summary(built("batching-strategy"))
    assert "are the capacities with every seat busy" in text and "of arrivals got out" in text


def test_repeated_derivations_fold_into_one_table_of_cases():
    """ffn-sharding works one layer four times (decode and prefill, fast and slow link): the book's appendix works it
    once and tables the other three where their inputs and results differ (issue 28, item 1)."""
    from derive.sheet_render import worked_once

    answer = built("ffn-sharding")
    [(first, repeats, table)] = worked_once(answer.sections)
    assert first is answer.sections[0] and repeats == answer.sections[1:]
    assert table is not None and table.header == ("quantity", "(a)", "(b)", "(c)", "(d)")
    rows = {row[0].value: [str(cell.value) for cell in row[1:]] for row in table.rows}
    assert "Tokens through the layer at once (decode batch or prefill chunk)" in rows
    assert all(len(set(values)) > 1 for values in rows.values()), "a row where every case agrees"
    # Sections that work different steps stay worked in full.
    assert all(not repeats for _, repeats, _ in worked_once(built("slow-training-serving").sections))


def test_a_table_has_a_cell_a_column():
    """A row with a missing cell is a programming error, caught when the table is built."""
    import pytest

    from derive.core.sheet import Quantity, Table

    with pytest.raises(ValueError, match="2 cells"):
        Table(("run", "measured"), ((Quantity("m00"),),))


def test_a_moe_crossover_names_the_experts_a_step_reads():
    """DeepSeek-V3 at batch 16 reads the experts its batch routes to, not 'all its matrices' (issue 28)."""
    text = _summary(built("kv-weight-crossover", model="deepseek-v3", gpu="b200"))
    assert "the experts its batch routes to" in text and "all its matrices" not in text


def test_one_launch_model_across_the_answers_that_launch_kernels():
    """The answers that time a launched step assume the same runtime (reports/questions/shared.py): a reviewer found
    480 kernels x 4 us on one page and 960 x 10 us on another for the same Llama 3 8B step. transformers' eager
    generate (slow-8b-step) is a runtime of its own and its page says so."""
    from derive import answers

    keys = ("kernels_per_layer", "launch_overhead", "kernel_gap")
    shared = {
        qid: tuple(answers.question(qid).defaults[k] for k in keys)
        for qid in ("framework-to-gpu", "compiler-fusion", "mbu-budget")
    }
    assert len(set(shared.values())) == 1, shared
    assert "run op by op from Python" in _summary(built("slow-8b-step"))


def test_a_vendor_claims_floor_reads_what_the_step_reads():
    """Llama 3 70B on one H200: a step reads 139.7 GB (the weights it multiplies through and its cache), 29.1 ms at
    4.8 TB/s; 'all 141.1 GB' would be 29.4 ms (issue 28 review)."""
    text = _summary(built("vendor-claim"))
    assert "must read 139.7 GB" in text and "29.1 ms" in text


def test_energy_at_tdp_is_not_called_a_floor():
    """Floor step time x TDP bounds neither way: the page may not call it a floor of the energy."""
    assert "floors of the energy" not in _summary(built("energy-per-token"))


def test_ffn_sharding_leads_with_the_flops_bytes_and_communication_asked_for():
    r = built("ffn-sharding").results
    assert list(r)[:6] == [
        "decode_flops",
        "decode_activation_bytes",
        "decode_allreduce_bytes",
        "prefill_flops",
        "prefill_activation_bytes",
        "prefill_allreduce_bytes",
    ]
