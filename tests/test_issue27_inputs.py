"""Bad inputs issue 27 lists, each a one-line error with exit code 2 (or, for a byte-order mark, no error)."""

from __future__ import annotations

import json

import pytest

import derive


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["answer", ""], "unknown question ''"),  # it printed the list and exited 0
        (["eval", "kv_bytes", "--model", "llama3-8b", "--set", "batch=1e400"], "--set batch"),  # printed 'inf B'
        (["eval", "kv_bytes", "--model", "llama3-8b", "--set", "context=1.5"], "whole number"),  # was taken
        (["knee", "--model", "llama70b", "--figure", "k.txt"], "not '.txt'"),  # wrote k.svg and k.png
        (["knee", "--model", "llama70b", "--figure", "p.pdf"], "not '.pdf'"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(run, tmp_path, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    result = run(*args)
    assert result.exit_code == 2, result.stdout[-300:]
    assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written before the refusal


def test_a_figure_path_is_checked_by_the_api_too(tmp_path):
    with pytest.raises(derive.DeriveError, match="not '.txt'"):
        derive.knee("llama70b").figure(tmp_path / "k.txt")


def test_a_config_with_a_byte_order_mark_reads(tmp_path):
    """Some editors save JSON with a UTF-8 byte-order mark; json.loads refuses it, derive reads past it."""
    config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    config.update({"intermediate_size": 128, "vocab_size": 100})
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(config).encode())
    plain = tmp_path / "plain" / "config.json"
    plain.parent.mkdir()
    plain.write_text(json.dumps(config))
    counted = derive.params(config=path).results["total_params"]
    assert counted == derive.params(config=plain).results["total_params"]


@pytest.mark.parametrize(
    ("model", "prompt", "output", "positions"), [("gpt2", 5000, 5000, 1024), ("llama3-70b", 9000, 128, 8192)]
)
def test_predict_checks_the_positions_on_the_tokens_it_uses(model, prompt, output, positions):
    """Issue 27: predict checked the unused default context of 2,048 instead of prompt plus output (gpt2 was told
    "2,048 tokens is beyond the 1,024 positions", Llama 3 70B with 9,128 tokens nothing). Since stop 45 a request
    past the positions is refused, as a --context past them is, unless allow_long_context sizes it with the note."""
    tp = 4 if model != "gpt2" else 1
    refused = f"reach {prompt + output:,} tokens, beyond the {positions:,} positions"
    with pytest.raises(derive.DeriveError, match=refused):
        derive.predict(model, "h100", tp=tp, prompt=prompt, output=output)
    notes = derive.predict(model, "h100", tp=tp, prompt=prompt, output=output, allow_long_context=True).notes
    said = [n for n in notes if "positions" in n]
    assert said == [f"{prompt + output:,} tokens is beyond the {positions:,} positions of {model}'s config"]


@pytest.mark.parametrize(
    "args",
    [
        ["measure", "--quick", "--out", "/proc/m.json"],  # ran the whole measurement first
        ["sweep", "tpot", "--model", "llama3-8b", "--batch", "1:4", "--out", "/proc/w.csv"],  # printed a note first
        ["knee", "--model", "llama70b", "--figure", "/proc/k.svg"],  # FileNotFoundError
    ],
)
def test_an_unwritable_place_is_refused_before_any_work(run, args):
    """/proc passes the permission bits but takes no file: the path is tried before a minute of work."""
    result = run(*args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "nothing can be written" in result.stderr
    assert result.stdout == ""


def test_a_count_solved_below_one_is_flagged(run):
    """Issue 27: a count solved below one (a batch of 0.09) is said to be no whole batch."""
    result = run("solve", "kv_bytes = 100 MB", "--for", "batch", "--model", "llama3-8b", "--context", "8192")
    assert result.exit_code == 0 and "is below one sequence: no whole batch satisfies" in result.stdout


def test_an_equation_whose_sides_never_cross_is_refused(run):
    """Issue 27: `solve 'ttft = tpot' --for batch` answered 0.1416 sequences: a root of a piece that does not hold.
    A prompt pass of 2,048 tokens outlasts a decode step at every batch, so no batch solves it, and it says so."""
    result = run("solve", "ttft = tpot", "--for", "batch", "--model", "llama3-8b")
    assert result.exit_code == 0 and "the two sides do not cross" in result.output
    assert "no positive solution at these values" in result.output and "0.14" not in result.output


LLAMA_7B_SHAPES = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "intermediate_size": 11008,
}


def test_a_key_transformers_defaults_is_taken_with_a_note(run, write_config):
    """Issue 27: a Llama config without vocab_size was refused; LlamaConfig defaults it to 32,000 (transformers'
    configuration_llama.py), so the count is Llama 2 7B's published 6,738,415,616 (meta-llama/Llama-2-7b-hf)."""
    result = run("params", "--config", str(write_config(LLAMA_7B_SHAPES)), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["results"]["total_params"]["value"] == 6_738_415_616
    assert any("vocab_size = 32,000" in note for note in out["notes"])


def test_a_llava_wrapper_reads_its_llama_text_config(run, write_config):
    """Issue 27: a llava checkpoint (a vision tower around a Llama text_config) was refused."""
    wrapper = {"model_type": "llava", "text_config": {**LLAMA_7B_SHAPES, "vocab_size": 32064}}
    result = run("params", "--config", str(write_config(wrapper)), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["results"]["total_params"]["value"] == 6_738_415_616 + 2 * 64 * 4096


def test_compare_says_which_inputs_it_chose(run):
    """Issue 27: compare printed no 'defaults used' and labelled the tp it chose for both accelerators '[--tp]'."""
    result = run("compare", "--model", "llama3-70b", "--gpu", "h100", "--vs", "b200")
    assert result.exit_code == 0
    assert "defaults used:" in result.stdout and "tp=2" in result.stdout
    assert "[--tp]" not in result.stdout and "[chosen:" in result.stdout


def test_curve_refuses_batches_past_the_memory_ceiling():
    """Issue 27: curve() drew batches past what memory holds, and hinted with the CLI's syntax."""
    knee = derive.knee("llama70b")
    ceiling = knee.results["max_batch_by_memory"].magnitude
    assert len(knee.curve("throughput_floor", "batch", [1, ceiling])) == 2
    with pytest.raises(derive.DeriveError, match="does not fit"):
        knee.curve("throughput_floor", "batch", [ceiling + 1])
    assert len(knee.curve("throughput_floor", "batch", [ceiling + 1], past_memory=True)) == 1
    with pytest.raises(derive.DeriveError, match=r"derive\.formulas\(\)"):
        knee.curve("no_such_quantity", "batch", [1])
