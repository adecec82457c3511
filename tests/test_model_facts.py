"""Issue 15: the book derives each model's own quantities once (its KV per token, its weight bytes, ...) and every
answer's derivation cites them (derive/model_facts.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from derive import answers
from derive.catalog import load_model
from derive.core.sheet import Compute
from derive.model_facts import Facts, Reference
from derive.sheet_render import render_book


@pytest.fixture(scope="module")
def book():  # type: ignore[no-untyped-def]
    built = [answers.answer(q) for q in answers.questions()]
    sheets = [section.sheet for a in built for section in a.sections]
    return built, sheets, Facts(sheets, lambda name: load_model(name).title)


def test_each_model_quantity_is_derived_once(book):
    _, sheets, facts = book
    in_section = Counter((g.model, s.defines, s.value) for g in facts.groups.values() for s in g.steps)
    assert set(in_section.values()) == {1}
    for sheet in sheets:  # no answer's derivation works out a quantity the models' section holds
        for step in facts.cited(sheet).steps:
            if isinstance(step, Compute):
                assert (sheet.inputs.get("model"), step.defines, step.value) not in in_section, step.defines.key
    kv = [key for key in in_section if key[0] == "llama3-70b" and key[1].key == "kv_bytes_per_token"]
    assert len(kv) == 2  # bf16 and fp8 caches: one derivation each, where the answers derived it sixteen times


def test_a_citation_gives_the_value_the_answer_computed(book):
    _, sheets, facts = book
    cited = 0
    for sheet in sheets:
        view = facts.cited(sheet)
        for step in view.steps:
            if isinstance(step, Reference):
                group = facts.groups[str(sheet.inputs["model"])]
                assert step.label == group.label
                for original in step.steps:
                    assert original in sheet.steps and original.value == sheet.values[original.defines]
                    assert any(s.defines == original.defines and s.value == original.value for s in group.steps)
                    cited += 1
        # everything else is kept, in order
        kept = [s for s in view.steps if not isinstance(s, Reference)]
        assert kept == [s for s in sheet.steps if s in kept]
    assert cited > 200


def test_a_quantity_that_rests_on_the_workload_is_not_shared(book):
    _, _, facts = book
    shared = {s.defines.key for g in facts.groups.values() for s in g.steps}
    assert {"kv_bytes_per_sequence", "kv_bytes", "step_time", "max_batch_by_memory"}.isdisjoint(shared)


def test_the_book_cites_the_models_section(book):
    built, _, _ = book
    tex = render_book(built)
    assert tex.count(r"\label{m:llama3-70b}") == 1
    assert r"derived once in appendix~\ref{m:llama3-70b}" in tex


@pytest.mark.parametrize(
    "command",
    [
        ["crossover", "prefill", "--model", "llama3-70b", "--gpu", "h100"],
        ["shard", "--model", "llama3-70b", "--gpu", "h100", "--tp", "8", "--tokens", "8"],
        ["knee", "--model", "llama3-8b", "--gpu", "h100", "--context", "256"],
    ],
)
def test_an_exact_crossover_has_its_short_form_beside_it(run, command):
    """Issue 15: beside the screen-wide closed form, the ridge times bytes per weight over 2 (c_MAC)."""
    import json

    result = run(*command, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # H100 SXM datasheet: 989.4 TFLOP/s dense bf16 over 3.35 TB/s, times 2 bytes per bf16 weight, over 2 FLOPs
    assert data["results"]["ridge_tokens"]["value"] == pytest.approx(989.4e12 / 3.35e12)
    assert any(note.startswith("short form:") for note in data["notes"])
