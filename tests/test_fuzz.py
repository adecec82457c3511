"""Fuzzing the config loader and the quantity parser: every input gives a result or a DeriveError."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derive.architecture.reader import families
from derive.architecture.reader import read_architecture as read_config
from derive.catalog import Model, load_config_path
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.units import parse_quantity
from formulas import library
from formulas import notation as sym

LIBRARY = library()  # every formula, loaded once

settings.register_profile("ci", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=100_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"

KEYS = [
    "model_type",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "num_hidden_layers",
    "vocab_size",
    "intermediate_size",
    "head_dim",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
    "num_local_experts",
    "num_experts_per_tok",
    "n_embd",
    "n_head",
    "n_layer",
    "n_positions",
    "n_inner",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "n_routed_experts",
    "n_shared_experts",
    "moe_intermediate_size",
    "first_k_dense_replace",
    "moe_layer_freq",
    "topk_method",
    "sliding_window",
    "quantization_config",
    "torch_dtype",
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5000) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=5,
)
plausible = st.integers(1, 64)


@st.composite
def raw_configs(draw):  # type: ignore[no-untyped-def]
    raw = {key: draw(st.one_of(plausible, json_values)) for key in draw(st.sets(st.sampled_from(KEYS), max_size=20))}
    raw["model_type"] = draw(st.one_of(st.sampled_from(families()), json_values))
    return raw


def _derive_everything(raw: object) -> None:
    cfg = read_config(raw, "fuzz")
    model = Model("fuzz", "fuzz", cfg, "fuzz")
    library = LIBRARY.extended(model.formulas.all())
    total = evaluate(sym.N.symbol, dict(model.formulas.shapes), library)
    assert total.is_Integer and total > 0


@given(raw_configs())
def test_config_dicts_load_or_fail_cleanly(raw):
    try:
        _derive_everything(raw)
    except DeriveError as exc:
        assert "\n" not in str(exc)


@given(st.one_of(json_values, st.lists(json_values)))
def test_any_json_value_loads_or_fails_cleanly(raw):
    try:
        _derive_everything(raw)
    except DeriveError as exc:
        assert "\n" not in str(exc)


@settings(max_examples=100_000 if LONG else 60)  # a file write each: fewer in CI
@given(content=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_config_files_load_or_fail_cleanly(tmp_path_factory, content):
    path = _fuzz_file(tmp_path_factory)
    path.write_bytes(content)
    try:
        load_config_path(path)
    except DeriveError as exc:
        assert "\n" not in str(exc)


_FUZZ_DIR: list = []


def _fuzz_file(tmp_path_factory):  # type: ignore[no-untyped-def]
    """One file, rewritten for every example (a folder each would make 100,000 folders)."""
    if not _FUZZ_DIR:
        _FUZZ_DIR.append(tmp_path_factory.mktemp("fuzz") / "config.json")
    return _FUZZ_DIR[0]


units = st.sampled_from(
    ["byte/second", "FLOP/second", "byte", "watt", "second", "token/second", "token/(second*sequence)"]
)
quantity_text = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda n, u: f"{n} {u}",
        st.floats(allow_nan=True, allow_infinity=True) | st.integers(),
        st.sampled_from(
            [
                "TB/s",
                "GB",
                "GiB",
                "TFLOPS",
                "TFLOP/s",
                "W",
                "ms",
                "tok/s",
                "furlong",
                "",
                "%",
                "B/s/s",
                "1/s",
                "s**2",
                "GB**0.5",
                "(",
                "2 3",
                "e9",
            ]
        ),
    ),
)


@given(quantity_text, units)
def test_quantities_parse_or_fail_cleanly(text, unit):
    try:
        value = parse_quantity(text, unit, "--option")
    except DeriveError as exc:
        assert "\n" not in str(exc)
    else:
        assert value > 0 and value.is_finite
