"""`derive sweep` agrees with the commands it stands for: the tp they choose, the batch that fits, the context they
decode at, and it refuses, before any output, what would make its rows mean something else."""

from __future__ import annotations

import csv
import io

import pytest

import derive
from derive.scenario import DEFAULTS


def _rows(result):  # type: ignore[no-untyped-def]
    assert result.exit_code == 0, result.stderr
    return list(csv.DictReader(io.StringIO(result.stdout)))


def test_tp_is_chosen_row_by_row_as_predict_chooses_it():
    # QA: on a 20 GB accelerator Qwen3-8B needs two at a 30,000-token prompt; the sweep chose at 2,048 tokens.
    # Over prompts where predict's choice changes, each row's tp and TTFT are predict's.
    rows = derive.sweep("predict", "qwen3-8b", memory="20 GB", batch=1, prompt="10000:40000:10000").table()
    rows = rows.to_pylist()
    assert len({row["tp"] for row in rows}) > 1  # the choice changes along the axis
    for row in rows:
        predicted = derive.predict("qwen3-8b", memory="20 GB", batch=1, prompt=row["prompt"])
        assert row["tp"] == predicted.inputs["tp"] and row["fits"]
        assert row["ttft_floor_s"] == pytest.approx(predicted.results["ttft_floor"].magnitude, rel=1e-9)
        assert row["tpot_floor_s"] == pytest.approx(predicted.results["tpot_floor"].magnitude, rel=1e-9)


def test_each_model_of_a_list_shows_the_tp_it_ran_at(run):
    rows = _rows(run("sweep", "predict", "-m", "llama70b,llama3-8b", "--quiet"))
    assert [row["tp"] for row in rows] == [str(derive.predict(m).inputs["tp"]) for m in ("llama70b", "llama3-8b")]


def test_fits_holds_the_cache_at_the_context_swept(run):
    # QA: batch 14 at --context 8192 fitted although knee's memory ceiling there is 7.
    knee = derive.knee("llama70b", context=8192)
    ceiling = int(knee.results["max_batch_by_memory"].magnitude)
    rows = _rows(run("sweep", "predict", "-m", "llama70b", "--batch", "1:16", "--context", "8192", "--quiet"))
    assert {row["tp"] for row in rows} == {str(knee.inputs["tp"])}
    assert [row["fits"] == "true" for row in rows] == [int(row["batch"]) <= ceiling for row in rows]


def test_an_explicit_context_is_what_leaving_it_out_stands_for(run):
    # predict decodes at the prompt plus half the output and holds the cache to its end; a formula at --context's
    # default. Stating either explicitly changes nothing.
    prompt, output = DEFAULTS["prompt"], DEFAULTS["output"]
    base = ("sweep", "predict", "-m", "llama70b", "--batch", "1:64:9", "--quiet")
    left_out = _rows(run(*base))
    decoding = _rows(run(*base, "--context", str(prompt + output // 2)))
    holding = _rows(run(*base, "--context", str(prompt + output)))
    assert [r["tpot_floor_s"] for r in decoding] == [r["tpot_floor_s"] for r in left_out]
    assert [r["fits"] for r in holding] == [r["fits"] for r in left_out]
    assert {r["fits"] for r in left_out} == {"true", "false"}
    formula = ("sweep", "tpot_floor", "-m", "llama70b", "--batch", "1:64:9", "--quiet")
    stated = _rows(run(*formula, "--context", str(DEFAULTS["context"])))
    assert [{**r, "context": None} for r in stated] == [{**r, "context": None} for r in _rows(run(*formula))]


@pytest.mark.parametrize(
    ("target", "axes", "depends"),
    [
        ("tpot_floor", ("--batch", "14", "--prompt", "100,4000", "--output", "2,2000"), "--tp, --batch, --context"),
        ("kv_bytes_per_sequence", ("--prompt", "100,4000"), "--context"),
    ],
)
def test_an_axis_the_target_does_not_depend_on_is_one_line(run, target, axes, depends):
    # QA: these gave rows identical but for the prompt and output, as if those applied.
    result = run("sweep", target, "-m", "llama70b", *axes, "--quiet")
    assert result.exit_code == 2 and result.stdout == ""
    expected = f"derive: error: {target} does not depend on --prompt. It depends on {depends}: sweep those\n"
    assert result.stderr == expected


def test_a_tp_range_keeps_the_degrees_that_split_the_heads(run):
    # Llama 3 70B has 64 query heads and 8 KV heads (its config.json): of 1 to 8, tp 1, 2, 4 and 8 split both.
    planned = derive.sweep("predict", "llama70b", tp="1:8")
    assert planned.grid.numeric["tp"] == [1, 2, 4, 8]
    assert planned.notes == ["--tp 1:8: skipped 3, 5, 6, 7, which cannot split the heads of llama3-70b"]
    swept = _rows(run("sweep", "predict", "-m", "llama70b", "--tp", "1:8", "--quiet"))
    assert [int(row["tp"]) for row in swept] == planned.grid.numeric["tp"]
    named = run("sweep", "predict", "-m", "llama70b", "--tp", "1,3", "--quiet")  # named on its own: refused
    assert named.exit_code == 2 and "--tp 3 cannot split llama3-70b" in named.stderr


def test_every_combination_is_checked_before_any_output(run):
    # QA: the h100 row was printed before the a100, which has no fp8 peak, failed.
    for quiet in ((), ("--quiet",)):
        result = run("sweep", "predict", "-m", "llama70b", "-g", "h100,a100", "--dtype", "fp8", *quiet)
        assert result.exit_code == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "a100 has no fp8 peak" in result.stderr


def test_a_hybrid_cache_fits_where_predict_runs(run):
    # Qwen3.5's cache shards are a ratio of its caches: the fit check substituted the end of the output into one
    # and not the other, and `sweep predict --model qwen3.5-27b --tp 1,2` asked for a context.
    rows = _rows(run("sweep", "predict", "-m", "qwen3.5-27b", "--tp", "1,2", "--batch", "1,512", "--quiet"))
    for row in rows:
        try:
            derive.predict("qwen3.5-27b", tp=int(row["tp"]), batch=int(row["batch"]))
            runs = True
        except derive.DeriveError:
            runs = False
        assert (row["fits"] == "true") == runs, row
    assert {row["fits"] for row in rows} == {"true", "false"}
