"""`derive knee`: the closed forms satisfy their equations and agree with a numeric search."""

from __future__ import annotations

import json

import pytest
import sympy

from derive.catalog import load_gpu, load_model
from derive.core.evaluation import evaluate
from derive.derivations import Setup, knee
from formulas import library, reads
from formulas import notation as sym

LIBRARY = library()  # every formula, loaded once

RESULT_NAMES = {
    "weight_bytes",
    "knee_batch",
    "knee_context_limit",
    "max_batch_by_memory",
    "throughput_at_max_batch",
    "throughput_ceiling",
    "first_limit",
    "half_ceiling_batch",
}


def test_the_hyperbola_has_its_own_knee(run):
    # Issue 25: memory-bound throughput is half its ceiling where the batch's cache reads equal the weights the step
    # reads, not all the weights stored: Llama 3 70B (bf16, 2,048 tokens, tp 2) gathers its 128,256 x 8,192 input
    # embedding a row a token, so of 70,553,706,496 parameters (published) a step streams 69,503,033,344 and one
    # row (8,192) a sequence; a sequence caches 2,048 x 327,680 bytes. B = 2·69,503,033,344 / (671,088,640 + 2·8,192).
    import json

    results = json.loads(run("knee", "--model", "llama70b", "--json").stdout)["results"]
    streamed = 70_553_706_496 - 128_256 * 8_192
    assert results["half_ceiling_batch"]["value"] == pytest.approx(2 * streamed / (2048 * 327_680 + 2 * 8_192))
    assert round(results["half_ceiling_batch"]["value"], 1) == 207.1  # the figure, not 210.3


def test_json_contract(run):
    result = run("knee", "--model", "llama70b", "--json")
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {"command", "inputs", "results", "notes"}
    assert payload["command"] == "knee"
    assert set(payload["results"]) == RESULT_NAMES
    for value in payload["results"].values():
        assert set(value) == {"value", "unit", "symbolic", "latex"}
    weights = payload["results"]["weight_bytes"]
    # 70,553,706,496 parameters (published, param_counts.json) x 2 bytes.
    assert weights == {"value": 141_107_412_992, "unit": "byte", "symbolic": "N·b_w", "latex": r"N \cdot b_w"}
    assert payload["inputs"]["tp"] == 2 and "tp" in payload["inputs"]["defaults"]
    assert payload["results"]["first_limit"]["value"] in {"compute", "memory_capacity"}


def test_no_knee_gives_null_and_a_note(run):
    # Llama 3 70B at 2,048 tokens on H100: each sequence adds 671 MB of KV reads per step
    # (0.20 ms) but only 0.15 ms of arithmetic, so the step never turns compute-bound.
    payload = json.loads(run("knee", "--model", "llama70b", "--json").stdout)
    assert payload["results"]["knee_batch"]["value"] is None
    assert payload["results"]["knee_context_limit"]["value"] < 2048
    assert payload["results"]["first_limit"]["value"] == "memory_capacity"


def test_terminal_output_is_a_worked_derivation(run):
    result = run("knee", "--model", "llama70b")
    assert result.exit_code == 0
    out = result.stdout
    assert "defaults used: gpu=h100, dtype=bf16, kv_dtype=bf16, context=2048, tp=2" in out
    # The weights a step reads: every matrix, and the embedding table only by its B·tau gathered rows.
    assert (
        "B_knee = (N·P·b_w·s_kv - N_look·P·b_w·s_kv)/(BW·F·s_kv·τ + BW·F_att·s_kv·τ - K_seq·P·n - P·b_w·n_g·s_kv·τ)"
        in out
    )
    assert "first_limit                memory_capacity" in out


def _sheet(model="llama70b", gpu="h100", context=512, tp=None):
    return knee(Setup(load_model(model), load_gpu(gpu), context=context, tp=tp))


def test_knee_closed_form_satisfies_its_equation():
    sheet = _sheet(context=512)
    values = dict(sheet.values)
    values[sym.B] = sheet.results["knee_batch"].value
    values.pop(sym.kv_total, None)
    for derived in (sym.t_mem, sym.t_comp, sym.t_step, sym.R, reads.N_read, reads.W_read):
        values.pop(derived, None)
    library = LIBRARY.extended(load_model("llama70b").formulas.all())
    memory = evaluate(LIBRARY.get("memory_time").expr, dict(values), library)
    compute = evaluate(LIBRARY.get("compute_time").expr, dict(values), library)
    assert sympy.simplify(memory - compute) == 0


@pytest.mark.parametrize("context", [256, 1024, 1400, 1500, 4096])
def test_knee_existence_agrees_with_a_numeric_search(context):
    """Search the step-time curve directly: is there a batch where compute time passes memory time?"""
    sheet = _sheet(context=context)
    limit = sheet.results["knee_context_limit"].value
    library = LIBRARY.extended(load_model("llama70b").formulas.all())
    crossed = False
    for batch in (2**i for i in range(0, 24)):
        values = {
            s: v
            for s, v in sheet.values.items()
            if s not in (sym.kv_total, sym.t_mem, sym.t_comp, sym.t_step, sym.R, reads.N_read, reads.W_read)
        }
        values[sym.B] = sympy.Integer(batch)
        if evaluate(sym.t_comp.symbol, values, library) > evaluate(sym.t_mem.symbol, values, library):
            crossed = True
            break
    assert crossed == (context < limit)
    assert (sheet.results["knee_batch"].value is not None) == crossed


def test_ceiling_is_the_limit_of_throughput():
    sheet = _sheet(context=1024)
    ceiling = float(sheet.results["throughput_ceiling"].value)
    library = LIBRARY.extended(load_model("llama70b").formulas.all())
    values = {
        s: v for s, v in sheet.values.items() if s not in (sym.kv_total, sym.t_mem, sym.t_comp, sym.t_step, sym.R)
    }
    values[sym.B] = sympy.Integer(10**12)
    far = float(evaluate(sym.R.symbol, values, library))
    assert far == pytest.approx(ceiling, rel=1e-6)


def test_default_tp_is_smallest_power_of_two_that_holds_weights():
    # 405B in bf16 is 811.7 GB: ten 80 GB H100s would do, the next power of two is 16.
    payload = _sheet(model="llama3.1-405b", context=2048)
    assert payload.inputs["tp"] == 16
    assert _sheet(model="llama3-8b").inputs["tp"] == 1


def test_overrides_change_the_figure(run):
    base = json.loads(run("knee", "--model", "llama3-8b", "--json").stdout)["results"]
    fast = json.loads(run("knee", "--model", "llama3-8b", "--bandwidth", "6.7 TB/s", "--json").stdout)["results"]
    assert fast["throughput_ceiling"]["value"] > base["throughput_ceiling"]["value"]


def test_knee_is_batch_independent_of_tp():
    # Ideal tensor parallelism divides both roofs by n, so the knee does not move.
    one, eight = _sheet(model="llama3-8b", tp=1), _sheet(model="llama3-8b", tp=8)
    assert one.results["knee_batch"].value == eight.results["knee_batch"].value


@pytest.mark.parametrize(
    "model", ["llama70b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "qwen3.5-27b", "nemotron3-nano"]
)
def test_shortcuts_give_sympys_own_roots_and_limits(model, monkeypatch):
    """The linear root and the rational limit that spare a cold `derive knee` sympy.solve and Gruntz are sympy's
    own answers on every equation and limit the knee meets, for models of every kind."""
    from derive.core import solving

    seen: dict[str, list] = {"roots": [], "limits": []}
    linear, rational = solving._linear, solving._rational_limit

    def record_root(expr, x):
        root = linear(expr, x)
        seen["roots"].append((expr, x, root))
        return root

    def record_limit(expr, x):
        found = rational(expr, x)
        seen["limits"].append((expr, x, found))
        return found

    monkeypatch.setattr(solving, "_linear", record_root)
    monkeypatch.setattr(solving, "_rational_limit", record_limit)
    solving._cached_roots.cache_clear()  # roots solved earlier in this process would skip the shortcut
    _sheet(model=model, context=2048)
    assert any(root is not None for _, _, root in seen["roots"])
    for expr, x, root in seen["roots"]:
        if root is not None:
            (own,) = [solving._tidy(r) for r in sympy.solve(expr, x, simplify=False, rational=False)]
            assert own == root or sympy.cancel(own - root) == 0  # one root, written alike or equal as fractions
    for expr, x, found in seen["limits"]:
        if found is not None:
            assert sympy.simplify(sympy.limit(expr, x, sympy.oo) - found) == 0
