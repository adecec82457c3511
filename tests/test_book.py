"""The answer book's printed arithmetic is true on its face (issue 15's defects, each pinned here).

Figures named: Llama 3 70B's MLP is 28,672 wide and its vocabulary 128,256 (meta-llama/Meta-Llama-3-70B
config.json); issue 15 found them printed as 28,670 and 128,300.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sympy

from derive import answers
from derive.core.sheet import Compute, Solve
from derive.core.symbols import symbols_of

COMMITTED = Path(__file__).parents[1] / "reports" / "answers"
MARKDOWN = sorted(COMMITTED.glob("*.md"))
LATEX = sorted(COMMITTED.glob("*.tex"))


def test_integers_print_exactly():
    text = "\n".join(p.read_text() for p in MARKDOWN)
    assert "28{,}672" in text and "128{,}256" in text
    assert "28{,}670" not in text and "128{,}300" not in text


@pytest.mark.parametrize("path", MARKDOWN, ids=[p.stem for p in MARKDOWN])
def test_no_stale_or_empty_lines(path):
    text = path.read_text()
    assert not re.search(r"solve \$[^$]*= \$", text), "a solve line with nothing on its right"
    repeated = re.findall(r"\(([^()]{3,})\) \(\1\)", text)
    assert not repeated, f"a note printed twice: {repeated[:3]}"
    echoed = re.findall(r"\((\w+)\) \(\1\b", text)  # 'launch overhead (assumed) (assumed: eager dispatch)'
    assert not echoed, f"a note that repeats the meaning's own: {echoed[:3]}"


@pytest.mark.parametrize("path", LATEX, ids=[p.name for p in LATEX])
def test_no_markdown_backticks_in_latex(path):
    assert "`" not in path.read_text()


def _steps():  # type: ignore[no-untyped-def]
    for qid in answers.questions():
        answer = answers.answer(qid)
        for section in answer.sections:
            for step in section.sheet.steps:
                if isinstance(step, (Compute, Solve)) and step.value is not None:
                    yield qid, step


def test_every_substitution_gives_the_value_it_prints():
    """Each worked line's substituted values, put back into its formula, give its result (no stale inputs)."""
    checked = 0
    for qid, step in _steps():
        expr = step.expr if isinstance(step, Compute) else step.solution.closed_form
        free = symbols_of(expr)
        if not all(s.value is not None or s in step.inputs for s in free):
            continue  # a closed form over a symbol the sheet leaves free
        at = {s.symbol: (s.value if s.value is not None else step.inputs[s]) for s in free}
        value = sympy.N(expr.xreplace(at), 15)
        if not value.is_number or isinstance(step.value, str):
            continue
        expected = sympy.N(step.value, 15)
        assert float(value) == pytest.approx(float(expected), rel=1e-9, abs=1e-30), f"{qid}: {step.defines.key}"
        checked += 1
    assert checked > 500


def test_a_line_shows_the_inputs_it_was_computed_with():
    """Issue 15: batching-strategy printed (194 tokens/sequence)·(131.1 kB/token) = 134.2 MB/sequence."""
    text = (COMMITTED / "batching-strategy.md").read_text()
    for match in re.finditer(r"\\left\(194\\,\\mathrm\{tokens/sequence\}\\right\) \\cdot [^\n]*\n&= ([^\n]*)", text):
        assert match.group(1).startswith("25.43")
    assert "194\\,\\mathrm{tokens/sequence}" in text


def test_an_fp32_model_is_judged_against_the_fp32_ridge():
    # Issue 15: decode-bandwidth-bound judged an fp32 model against the bf16 tensor-core ridge. H100 SXM: 66.9
    # TFLOP/s fp32 on the CUDA cores and 3.35 TB/s (NVIDIA H100 datasheet; gpus.toml).
    r = answers.answer("decode-bandwidth-bound").results
    assert float(r["ridge_intensity"].value) == pytest.approx(66.9e12 / 3.35e12)


def test_slow_8b_step_leads_with_fp32_weights():
    answer = answers.answer("slow-8b-step")
    from derive.sheet_render import prose

    text = prose(answer.summary, "md")
    assert text.index("fp32") < text.index("sorted by what one profiler trace shows")
    floor, widened = answer.results["floor_step_time"].value, answer.results["fp32_floor_step_time"].value
    assert widened == 2 * floor  # bf16 to fp32 doubles every byte a step reads


def test_batching_strategy_says_static_batching_is_overloaded():
    answer = answers.answer("batching-strategy")
    from derive.sheet_render import prose

    assert answer.results["offered_rate"].value > answer.results["static_capacity"].value
    assert "simply overloaded" in prose(answer.summary, "md")


def test_prefill_passes_are_not_labelled_decode():
    """Issue 15: a prompt pass's GEMM intensity was printed under 'Intensity of a weight GEMM ... at decode'."""
    text = "\n".join(p.read_text() for p in MARKDOWN)
    assert "weight GEMM (QKV, O, MLP, head) at decode" not in text


def test_the_seeds_batching_measurement_is_reconciled():
    """Seed 000, question 3 states 159 to 860 tokens/s from steps of 6.3 ms (one sequence) and 9.3 ms (eight)."""
    r = answers.answer("batching-decode").results
    assert round(float(r["seed_throughput_1"].value)) == 159 and round(float(r["seed_throughput_8"].value)) == 860


@pytest.mark.parametrize(
    ("question", "stated"),
    [
        ("roofline-decode-prefill", ["46 %", "51 %"]),  # seed 000, question 1: laptop CPU fractions of the ceilings
        ("batching-strategy", ["343 tokens/s", "299 tokens/s", "1.147 times"]),  # seed 000, question 5
    ],
)
def test_the_seeds_measured_figures_are_set_beside_ours(question, stated):
    from derive.sheet_render import prose

    answer = answers.answer(question)
    said = " ".join(prose(p, "md") for p in answer.caveats)
    assert all(figure in said for figure in stated), said


@pytest.mark.parametrize(
    "question", ["decode-knee", "vendor-claim", "energy-per-token", "kv-weight-crossover", "h100-to-b200"]
)
def test_a_realistic_figure_stands_beside_the_floor(question):
    """Issue 15: every floor with the calibrated estimate beside it, and the estimate on the slow side of it."""
    r = answers.answer(question).results
    pairs = {
        "decode-knee": ("throughput_at_max_batch", "calibrated_throughput_at_max_batch", "faster"),
        "vendor-claim": ("floor_at_alt_dtype", "calibrated_tokens_per_s_per_user", "faster"),
        "energy-per-token": ("joules_per_token_batch1", "calibrated_joules_per_token_one", "cheaper"),
        "kv-weight-crossover": ("step_floor_at_crossover", "calibrated_step_at_crossover", "cheaper"),
        "h100-to-b200": ("batch1_step_time_new", "calibrated_batch1_step_time_new", "cheaper"),
    }
    floor, estimate, better = pairs[question]
    f, e = float(r[floor].value), float(r[estimate].value)
    assert (e < f) if better == "faster" else (e > f)


@pytest.mark.parametrize(
    ("command", "shards"),
    [
        (["knee", "--model", "deepseek-v3", "--gpu", "h200", "--json"], 1),  # an MLA latent: whole on every rank
        (["predict", "--model", "qwen3-30b-a3b", "--tp", "8", "--json"], 4),  # 4 KV heads: copied past them
        (["energy", "--model", "qwen3-30b-a3b", "--tp", "8", "--json"], 4),
        (["predict", "--model", "llama3-70b", "--tp", "4", "--json"], 4),
    ],
)
def test_sheets_on_many_accelerators_hold_the_cache_as_served(run, command, shards):
    """Issue 25: the cache splits over min(tp, KV heads) shards in every sheet that has n (a latent over none), so no
    sheet needs a note that its own figures are off for the layout."""
    import json

    result = run(*command)
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert not any("assumed here" in note or "larger than assumed" in note for note in payload["notes"])
    plain = run(*command[:-1]).stdout
    assert "s_kv = Min(h_kv, n)" in plain and "= " + str(shards) in plain.split("s_kv = Min(h_kv, n)")[1][:200]


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["intensity", "--model", "llama3-70b", "--gpu", "h100", "--batch", "64"], "this batch is not servable there"),
        (["intensity", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--batch", "64"], "routed experts a layer"),
        (["knee", "--model", "qwen3-30b-a3b", "--gpu", "h100"], "routed experts a layer"),
        (["energy", "--model", "mixtral-8x7b", "--gpu", "h100"], "a step's 1 token touches about 2 of 8"),
    ],
)
def test_every_sheet_checks_the_batch_against_memory_and_the_experts_it_touches(run, command, says):
    """Issue 15's other shared checks (derive/derivations/common.sanity_notes): said where a sheet's values fall
    outside them, once."""
    result = run(*command)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(says) == 1


def test_a_batch_that_fits_is_not_called_unservable(run):
    result = run("intensity", "--model", "llama3-8b", "--gpu", "h100", "--batch", "8")
    assert result.exit_code == 0 and "not servable" not in result.stdout


def test_a_sheet_works_the_terms_its_model_has():
    """A dense model has no routed experts, latent attention or q/k norms, and on one accelerator no all-reduce: its
    predict sheet leaves them out of the step it sums, as the value is the same; DeepSeek-V3 (MLA, MoE, config.json)
    on 8 works them all. A zero a sheet keeps stays: decode's recomputed share in HFU."""
    import derive

    dense = derive.predict("llama3-8b", "h100", batch=8).to_text()
    for absent in ("t_la ", "t_qnp ", "t_mlp ", "t_Xrt =", "L_qn"):
        assert absent not in dense, absent
    assert "t_fixd = L·t_layer   " in dense
    # A result the model makes zero is still worked, whole: here why one accelerator has no all-reduce.
    assert "TPOT = t_ewd + t_fixd + Max" in dense and "t_AR = L·m_AR·" in dense
    mla = derive.predict("deepseek-v3", "h200", tp=8, batch=16).to_text()
    for present in ("t_la ", "t_Xrt =", "t_AR =", "t_fixd = L·t_layer + L_la·t_la"):
        assert present in mla, present
    assert "f_{rc}" in derive.answer("measure-mbu").to_markdown()
