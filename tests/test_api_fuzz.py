"""Issue 27: the API as strict as the CLI. Any Python value for any keyword of any API function gives a result or a
one-line DeriveError, never another exception (derive/core/validate.py's `argument`, then the CLI's value checks).

Each example calls one function with one keyword set to an arbitrary value (ints, floats, strings, None, lists,
dicts, pint quantities of every dimension) and the others at working values, so the call reaches the derivation
whenever the value is one it takes. HYPOTHESIS_PROFILE=long runs 5,000 examples (40 s, none failing); CI runs 60.
"""

from __future__ import annotations

import inspect
import os

from api_calls import CALLS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import derive
from derive import api
from derive.core.units import registry

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"


CASES = [
    (f, k) for f in CALLS for k in inspect.signature(getattr(api, f)).parameters if k not in ("overrides", "inputs")
]
CASES += [("gpu", "memory"), ("gpu", "bandwidth"), ("answer", "model"), ("answer", "context")]

_UNITS = ["byte", "second", "byte/second", "FLOP/second", "watt", "token/second", "sequence/second", "parameter", ""]
quantities = st.builds(
    lambda m, u: registry().Quantity(m, u or "dimensionless"),
    st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30),
    st.sampled_from(_UNITS),
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["h100", "bf16", "8", "1:4", "3 TB/s", "50 ms", "llama3-8b", "", "0", "-1", "nan"])
    | quantities
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner))


@settings(
    max_examples=5_000 if LONG else 60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(st.sampled_from(CASES), values)
def test_any_value_for_any_keyword_gives_a_result_or_a_derive_error(case, value):
    function, keyword = case
    arguments = {**CALLS[function], keyword: value}
    try:
        result = getattr(derive, function)(**arguments)
    except derive.DeriveError as error:
        assert "\n" not in str(error) and "Traceback" not in str(error)
        return
    if hasattr(result, "results"):  # a result is whole: its figures, notes and JSON render
        result.results, result.to_json()
