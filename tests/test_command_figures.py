"""`--figure` on every command that draws one: deterministic files, drawn from what the command computed."""

from __future__ import annotations

import pytest

FIGURES = [
    ["knee", "--model", "llama70b"],
    ["kv", "--model", "gemma4-26b-a4b", "--context", "8192"],
    ["predict", "--model", "qwen3-30b-a3b", "--batch", "8"],
    ["crossover", "kv-weights", "--model", "llama3-8b", "--batch", "16"],
    ["crossover", "prefill", "--model", "llama3-70b"],
    ["experts", "--model", "deepseek-v3", "--batch", "64"],
    ["intensity", "--model", "mixtral-8x7b", "--batch", "32"],
    ["simulate", "batching", "--model", "gpt2", "--requests", "10"],
    ["sweep", "predict", "--model", "llama3-8b,qwen3-8b", "--batch", "1:32", "--quiet"],
]


@pytest.mark.parametrize("args", FIGURES, ids=[" ".join(a[:2]) for a in FIGURES])
def test_figures_are_written_and_deterministic(run, tmp_path, args):
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for path in (first, second):
        result = run(*args, "--figure", str(path))
        assert result.exit_code == 0, result.stderr
    for suffix in (".svg", ".png"):
        a, b = first.with_suffix(suffix).read_bytes(), second.with_suffix(suffix).read_bytes()
        assert a == b and len(a) > 1000


@pytest.mark.parametrize("args", FIGURES[:3], ids=[a[0] for a in FIGURES[:3]])
def test_an_unwritable_figure_path_fails_first_in_one_line(run, args):
    result = run(*args, "--figure", "/nonexistent/folder/figure.svg")
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "--figure" in result.stderr


def test_the_sweep_figure_has_a_line_per_model(tmp_path):
    import derive

    planned = derive.sweep("predict", "llama3-8b,qwen3-8b", ["h100", "h200"], batch="1:16")
    svg = planned.figure(tmp_path / "s.svg")[0].read_text()
    for label in ("llama3-8b, h100, bf16", "qwen3-8b, h200, bf16"):
        assert label in svg
