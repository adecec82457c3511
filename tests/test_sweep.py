"""`derive sweep`: rows agree with the scalar derivation of the same configuration."""

from __future__ import annotations

import csv
import io
import json

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.core.errors import DeriveError
from derive.derivations.common import Setup
from derive.derivations.costs import predict
from derive.sweeps import parse_axis


def test_axis_syntax():
    assert parse_axis("batch", "1:4") == [1, 2, 3, 4]
    assert parse_axis("prompt", "128:512:128") == [128, 256, 384, 512]
    assert parse_axis("tp", "1,2,8") == [1, 2, 8]
    assert parse_axis("model", "llama3-8b, gpt2") == ["llama3-8b", "gpt2"]
    with pytest.raises(DeriveError, match="not an increasing range"):
        parse_axis("batch", "64:1")
    with pytest.raises(DeriveError, match="not a number or a range"):
        parse_axis("batch", "lots")


def test_predict_rows_match_the_scalar_derivation(run, tmp_path):
    out = tmp_path / "grid.csv"
    result = run(
        "sweep",
        "predict",
        "--model",
        "llama3-70b,llama3-8b",
        "--gpu",
        "h100,h200",
        "--tp",
        "1,2,4,8",
        "--batch",
        "1:64:9",
        "--prompt",
        "128:4096:992",
        "--output",
        "16:320:76",
        "--out",
        str(out),
        "--quiet",
    )
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 4 * 8 * 5 * 5
    checked = 0
    for row in rows[::37]:  # a spread sample; the scalar command refuses what does not fit
        if row["fits"] == "false":
            continue
        checked += 1
        sheet = predict(
            Setup(
                load_model(row["model"]),
                load_gpu(row["gpu"]),
                tp=int(row["tp"]),
                batch=int(row["batch"]),
                prompt=int(row["prompt"]),
                output=int(row["output"]),
            )
        )
        for column, name in (
            ("ttft_floor_s", "ttft_floor"),
            ("tpot_floor_s", "tpot_floor"),
            ("ttft_s", "ttft"),
            ("tpot_s", "tpot"),
            ("e2e_latency_s", "e2e_latency"),
            ("throughput_token_per_s", "throughput"),
        ):
            assert float(row[column]) == pytest.approx(float(sheet.results[name].value), rel=1e-5)
    assert checked > 10


def test_configurations_that_do_not_fit_are_marked_not_dropped(run):
    result = run("sweep", "predict", "--model", "llama3-70b", "--tp", "1,2", "--quiet")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["tp"], r["fits"]) for r in rows] == [("1", "false"), ("2", "true")]  # 141 GB of weights on 80 GB GPUs


def test_any_formula_and_json_lines(run, tmp_path):
    out = tmp_path / "kv.jsonl"
    result = run(
        "sweep", "kv_bytes", "--model", "llama70b", "--batch", "1,16", "--context", "1024,4096", "--out", str(out)
    )
    assert result.exit_code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # 327,680 bytes per token (2 x 80 layers x 8 KV heads x 128 x 2 bytes) x batch x context.
    assert [r["kv_bytes_byte"] for r in rows] == [327_680 * b * s for b in (1, 16) for s in (1024, 4096)]


def test_bad_axis_is_one_line(run):
    result = run("sweep", "predict", "--model", "llama70b", "--batch", "0:4")
    assert result.exit_code == 2
    assert result.stderr == "derive: error: --batch must be at least 1. Fix --batch '0:4'\n"


def test_unknown_model_in_a_list(run):
    result = run("sweep", "predict", "--model", "llama70b,llama9")
    assert result.exit_code == 2 and result.stderr.startswith("derive: error: unknown model 'llama9'")


def test_sympy_is_only_used_to_compile():
    # The evaluation itself is numpy: compiling a combination gives plain numpy functions.
    from derive.sweeps import compile_combination, predict_target

    compiled = compile_combination(
        predict_target(), "llama3-8b", "h100", "bf16", ("batch",), {"tp": 1, "prompt": 1000, "output": 200}
    )
    value = compiled.functions["tpot"](sympy.Integer(1) * 1.0)
    assert isinstance(float(value), float)


def test_a_config_sweeps_as_its_catalog_model_does(run):
    # Issue 12: sweep had no --config; the same config.json gives the same rows as the catalog name.
    from pathlib import Path

    config = Path(__file__).parent.parent / "formulas" / "models" / "llama3-8b.json"
    by_name = run("sweep", "predict", "--model", "llama3-8b", "--batch", "1,8", "--quiet")
    by_config = run("sweep", "predict", "--config", str(config), "--batch", "1,8", "--quiet")
    assert by_name.exit_code == 0 and by_config.exit_code == 0, by_config.stderr

    def rows(result):  # type: ignore[no-untyped-def]
        return [line.split(",")[1:] for line in result.stdout.splitlines()[1:]]  # the model's label aside

    assert rows(by_config) == rows(by_name)


def test_sweep_takes_the_kv_dtype_and_the_datasheet_overrides(run):
    base = ["sweep", "predict", "--model", "llama3-70b", "--batch", "64", "--context", "8192", "--tp", "4", "--quiet"]
    plain, fp8 = run(*base), run(*base, "--kv-dtype", "fp8")
    faster = run(*base, "--bandwidth", "8 TB/s")
    assert plain.exit_code == fp8.exit_code == faster.exit_code == 0
    column = plain.stdout.splitlines()[0].split(",").index("tpot_floor_s")

    def tpot(result):  # type: ignore[no-untyped-def]
        return float(result.stdout.splitlines()[1].split(",")[column])

    assert tpot(fp8) < tpot(plain) and tpot(faster) < tpot(plain)


@pytest.mark.parametrize("model", ["gpt-oss-20b", "qwen3.5-27b", "nemotron3-nano", "deepseek-v3.2", "gemma4-26b-a4b"])
def test_every_layer_kind_sweeps(run, model):
    # The fuzzer found `sweep predict --model gpt-oss-20b` exceeding the recursion limit (an unevaluated tree).
    result = run("sweep", "predict", "--model", model, "--batch", "1,8", "--quiet")
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3


def test_a_figure_without_a_swept_axis_is_one_line_before_any_work(run):
    # The fuzzer found `sweep predict --model llama3-8b --figure 0` printing the tp note before its error.
    result = run("sweep", "predict", "--model", "llama3-8b", "--figure", "0")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "derive: error: a sweep figure needs a swept axis. Sweep one, e.g. --batch 1:64"
    ]


@pytest.mark.parametrize("model", ["llama3-70b", "qwen3-30b-a3b", "gpt-oss-20b", "nemotron3-nano"])
def test_inlining_every_swept_symbol_at_once_is_inlining_each_in_turn(model):
    """derive.core.evaluation.inline_all, which the sweep and the plan use, gives the very tree the one-unknown
    inline gives applied for each unknown in turn (unevaluated, as the sweep builds it), for unknowns without formulas
    of their own (an unknown with one, the plan's o_1L, inline_all keeps)."""
    from derive.core.evaluation import inline, inline_all
    from derive.planning import INPUTS
    from derive.sweeps import predictor_inputs
    from formulas import layout as lay
    from formulas import notation as sym

    _, library = predictor_inputs(load_model(model), load_gpu("h100"), "bf16")
    swept = [sym.BW, sym.P, *INPUTS, sym.B, sym.S]
    for target in (lay.tpot_c, lay.ttft_c, lay.K_gs):
        with sympy.evaluate(False):
            one_at_a_time = target.symbol
            for variable in swept:
                one_at_a_time = inline(one_at_a_time, variable, library)
            assert len(one_at_a_time.free_symbols) > 5  # inlined down to the inputs
            assert inline_all(target.symbol, swept, library) == one_at_a_time
