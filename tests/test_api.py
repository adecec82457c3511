"""The Python API: a function for every command, the same results through either, objects a notebook can use."""

from __future__ import annotations

import inspect
import json

import pytest

import derive
from derive import api
from tests.test_hardening import _leaf_commands

# The command's name in Python, where it is not the command's own.
NAMES = {"eval": "evaluate"}
# CLI options that are the command line's own business (output, progress), not the derivation's.
CLI_ONLY = {"as_json", "figure", "out", "quiet", "fmt", "list_questions", "settings", "unknown", "measure"}
# Where an option's destination differs from the API's keyword.
RENAMED = {"models": "model", "gpus": "gpu", "configs": "config", "dtypes": "dtype", "target": "target"}


def _api_name(path: tuple[str, ...]) -> str:
    name = " ".join(path)
    return NAMES.get(name, name.replace(" ", "_").replace("-", "_"))


COMMANDS = [(" ".join(p), _api_name(p)) for p, _ in _leaf_commands()]


@pytest.mark.parametrize(("command", "name"), COMMANDS)
def test_every_command_has_its_api_function_taking_its_options(command, name):
    import cli

    function = getattr(api, name, None)
    assert callable(function), f"derive.{name} missing for `derive {command}`"
    group = cli.cli
    for part in command.split():
        group = group.commands[part]  # type: ignore[attr-defined]
    accepted = set(inspect.signature(function).parameters)
    options = {RENAMED.get(p.name, p.name) for p in group.params} - CLI_ONLY  # type: ignore[attr-defined]
    if name == "answer":
        accepted |= {"model", "gpu", "question_id"}  # **inputs: any input the question lets a user change
    if name in ("solve",):
        accepted |= {"equation"}
    assert options <= accepted, f"derive.{name} lacks {sorted(options - accepted)}"


# (CLI arguments, API call) pairs that must give the same JSON: every derivation command, several model kinds.
SAME = [
    (["params", "--model", "mixtral-8x7b"], lambda: api.params("mixtral-8x7b")),
    (
        ["kv", "--model", "deepseek-v3", "--context", "4096", "--batch", "8"],
        lambda: api.kv("deepseek-v3", context=4096, batch=8),
    ),
    (["knee", "--model", "llama70b", "--gpu", "h200", "--tp", "4"], lambda: api.knee("llama70b", "h200", tp=4)),
    (["flops", "--model", "qwen3-8b", "--context", "32768"], lambda: api.flops("qwen3-8b", context=32768)),
    (["fit", "--model", "llama2-13b", "--gpu", "a100", "--tp", "2"], lambda: api.fit("llama2-13b", "a100", tp=2)),
    (["intensity", "--model", "mixtral-8x7b", "--batch", "32"], lambda: api.intensity("mixtral-8x7b", batch=32)),
    (
        ["crossover", "kv-weights", "--model", "gemma4-26b-a4b", "--batch", "4"],
        lambda: api.crossover_kv_weights("gemma4-26b-a4b", batch=4),
    ),
    (
        ["crossover", "prefill", "--model", "llama3-70b", "--dtype", "fp8"],
        lambda: api.crossover_prefill("llama3-70b", dtype="fp8"),
    ),
    (
        ["predict", "--model", "qwen3-30b-a3b", "--batch", "16", "--prompt", "1024"],
        lambda: api.predict("qwen3-30b-a3b", batch=16, prompt=1024),
    ),
    (["compare", "--model", "llama3-70b", "--vs", "b200"], lambda: api.compare("llama3-70b", vs="b200")),
    (["experts", "--model", "deepseek-v3", "--batch", "64"], lambda: api.experts("deepseek-v3", batch=64)),
    (
        ["energy", "--model", "llama3-8b", "--gpu", "a100", "--power", "300 W"],
        lambda: api.energy("llama3-8b", "a100", power="300 W"),
    ),
    (
        ["shard", "--model", "llama3-70b", "--tp", "8", "--link", "50 GB/s"],
        lambda: api.shard("llama3-70b", tp=8, link="50 GB/s"),
    ),
    (
        ["claim", "--model", "llama3-70b", "--claim", "1000 token/s"],
        lambda: api.claim("llama3-70b", claim="1000 token/s"),
    ),
    (
        ["attention-memory", "--model", "llama3-8b", "--context", "8192"],
        lambda: api.attention_memory("llama3-8b", context=8192),
    ),
    (
        ["utilisation", "--model", "llama3-70b", "--step-time", "36 ms"],
        lambda: api.utilisation("llama3-70b", step_time="36 ms"),
    ),
    (
        ["eval", "kv_bytes", "--model", "nemotron3-nano", "--set", "batch=16"],
        lambda: api.evaluate("kv_bytes", "nemotron3-nano", settings={"batch": 16}),
    ),
    (
        ["solve", "tpot = 20 ms", "--for", "batch", "--model", "llama3-70b", "--tp", "4"],
        lambda: api.solve("tpot = 20 ms", "batch", "llama3-70b", tp=4),
    ),
    (
        ["simulate", "batching", "--model", "gpt2", "--requests", "20"],
        lambda: api.simulate_batching("gpt2", requests=20),
    ),
    (
        ["answer", "kv-sizing-13b", "--model", "llama3-8b", "--format", "json"],
        lambda: api.answer("kv-sizing-13b", model="llama3-8b"),
    ),
]


@pytest.mark.parametrize(("args", "call"), SAME, ids=[" ".join(a[:2]) for a, _ in SAME])
def test_the_api_and_the_cli_give_the_same_results(run, args, call):
    result = run(*args, *([] if "--format" in args else ["--json"]))
    assert result.exit_code == 0, result.stderr
    assert json.loads(call().to_json()) == json.loads(result.stdout)


def test_sweep_through_the_api_is_the_cli_sweep(run, tmp_path):
    import pyarrow.csv as pc

    out = tmp_path / "grid.csv"
    result = run("sweep", "predict", "--model", "llama3-8b", "--gpu", "h100,h200", "--batch", "1:8", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    table = api.sweep("predict", "llama3-8b", ["h100", "h200"], batch=range(1, 9)).table()
    assert pc.read_csv(out).to_pylist() == table.cast(pc.read_csv(out).schema).to_pylist()


def test_results_are_pint_quantities_and_the_symbolic_forms_sympy():
    import sympy

    r = derive.knee("llama70b")
    assert str(r.results["max_batch_by_memory"].units) == "sequence"
    assert isinstance(r.symbolic["max_batch_by_memory"], sympy.Basic)
    assert r.steps and r.notes and r.inputs["model"] == "llama3-70b"


def test_markdown_and_latex_render_every_step_and_result():
    r = derive.kv("llama3-8b", context=8192)
    markdown, latex = r.to_markdown(), r.to_latex()
    assert r._repr_markdown_() == markdown
    for name in r.results:
        assert f"`{name}`" in markdown and name.replace("_", r"\_") in latex
    assert "$$" in markdown and r"\begin{aligned}" in latex


def test_keyword_arguments_take_strings_or_pint_quantities_with_the_same_checks():
    from derive.core.units import registry

    q = registry().Quantity
    by_text = derive.knee("llama70b", bandwidth="4 TB/s").results["max_batch_by_memory"]
    assert (
        derive.knee("llama70b", bandwidth=q(4, "TB/s")).to_json()
        == derive.knee("llama70b", bandwidth="4 TB/s").to_json()
    )
    assert by_text.magnitude == 28
    with pytest.raises(derive.DeriveError, match="--bandwidth"):
        derive.knee("llama70b", bandwidth="3 TFLOP/s")
    with pytest.raises(derive.DeriveError, match="--batch"):
        derive.kv("llama3-8b", batch=-1)


def test_models_gpus_and_formulas_are_objects():
    assert derive.model("llama70b").name == "llama3-70b"
    assert derive.gpu("h100", memory="40 GB").memory == 40 * 10**9
    f = derive.formula("kv_bytes")
    assert f.unit == "byte" and f.meaning and f.source
    assert {m["name"] for m in derive.models()} >= {"llama3-70b", "deepseek-v3"}


def test_figures_are_drawn_from_the_api_and_deterministic(tmp_path):
    first = derive.knee("llama70b").figure(tmp_path / "a.svg")
    second = derive.knee("llama70b").figure(tmp_path / "b.svg")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    with pytest.raises(derive.DeriveError, match="no figure"):
        derive.params("llama3-8b").figure(tmp_path / "c.svg")


@pytest.mark.parametrize("name", ["models", "gpus", "formulas"])
def test_the_listings_are_the_cli_listings(run, name):
    result = run(name, "--json")
    assert result.exit_code == 0
    assert getattr(api, name)() == json.loads(result.stdout)["results"][name]["value"]


def test_check_is_the_cli_check(run):
    result = run("check", "--json")
    assert api.check()["checks"] == json.loads(result.stdout)["results"]["checks"]["value"]


def test_an_answer_renders_as_the_cli_renders_it(run):
    for fmt, method in (("md", "to_markdown"), ("tex", "to_latex")):
        result = run("answer", "decode-knee", "--set", "context=4096", "--format", fmt)
        assert result.exit_code == 0
        assert getattr(api.answer("decode-knee", context=4096), method)() == result.stdout


def test_every_result_object_has_one_shape():
    """Issue 27: a Derivation, an Answer and a Plan each have `.results`, `.notes`, `.to_json()` and a short repr
    (a Plan's was tens of kB, its pick a method)."""
    objects = [
        derive.knee("llama3-8b"),
        derive.answer("kv-sizing-13b"),
        derive.plan("llama3-8b", "h100", tpot="50 ms"),
    ]
    for obj in objects:
        assert isinstance(obj.results, dict) and obj.results, type(obj)
        assert isinstance(obj.notes, list) and all(isinstance(n, str) for n in obj.notes), type(obj)
        assert json.loads(obj.to_json()), type(obj)
        assert len(repr(obj)) < 200, repr(obj)[:300]
    plan = objects[2]
    assert plan.pick is not None and str(plan.pick.layout) == plan.results["layout"]
