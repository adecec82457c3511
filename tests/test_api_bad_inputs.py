"""Issue 27: a generated table of bad values, each through every API function and keyword that takes its kind. Each
is a one-line DeriveError that names the argument (its keyword or its CLI option) or the value, never another
exception and never a result. The kinds are the inputs table's (derive/inputs.py) or the command's own."""

from __future__ import annotations

import inspect

import pytest
from api_calls import CALLS

import derive
from derive import api

BAD = {
    "count": [-1, 0, 2.5, "x", "1e400", True, [4], {}, 10**30],
    "number": ["x", True, [1], -1e300],
    "quantity": [3, 2.5, "3", "3 parsec", "-1 TB/s", "nan TB/s", True, [], {}],
    "choice": ["fp7", "", 3, ["bf16"]],
    "flag": ["yes", 1, [], "False"],
    "model": [3, "no-such-model", "", [], {"model": "llama"}],
    "gpu": [3, "no-such-gpu", "", {}],
    "gpus": [3, "no-such-gpu", "", [3]],
    "text": [3, [], {}, b"bytes"],
    "path": [3, "/no/such/config.json", "", []],
    "settings": [3, "batch", [3], {"batch": "x"}, {"no_such_symbol": 1}],
    "list": [2.5, "x", [None], {}, True],
    "models": [3, [3], "no-such-model"],
    "paths": [3, [3], "/no/such/config.json"],
    "texts": [3, [3]],
}
# A keyword whose bad value the function may take as another valid thing: the formula or question it names is
# looked up (an unknown name is its own error, in test_api_fuzz), the settings of a formula without that symbol.
SKIP = {("evaluate", "name"), ("solve", "equation"), ("solve", "for_"), ("formula", "name"), ("sweep", "target")}


def _cases() -> list[tuple[str, str, object]]:
    out = []
    for function, working in CALLS.items():
        for keyword in inspect.signature(getattr(api, function)).parameters:
            kind = api._kind(function, keyword)[0]
            if not kind or (function, keyword) in SKIP or keyword in ("overrides", "inputs"):
                continue
            if kind == "text" and keyword in working:  # a name the call needs: only wrong types
                bad = [v for v in BAD["text"] if not isinstance(v, str)]
            else:
                bad = BAD[kind]
            # Three bad values a keyword, rotating through its kind's list: every value meets many functions, and
            # the table stays a few seconds.
            start = len(out)
            out += [(function, keyword, bad[(start + i) % len(bad)]) for i in range(min(3, len(bad)))]
    return out


CASES = _cases()


def test_the_table_is_large():
    assert len(CASES) >= 200, len(CASES)


@pytest.mark.parametrize(("function", "keyword", "value"), CASES, ids=[f"{f}-{k}-{v!r}"[:60] for f, k, v in CASES])
def test_a_bad_value_is_a_one_line_error_naming_it(function, keyword, value):
    with pytest.raises(derive.DeriveError) as caught:
        getattr(derive, function)(**{**CALLS[function], keyword: value})
    message = str(caught.value)
    assert "\n" not in message
    names = [keyword, "--" + keyword.replace("_", "-").rstrip("-"), str(value)[:20], repr(value)[:20]]
    if keyword == "settings":  # a setting is named by its own key, as --set KEY=VALUE is
        names += ["--set", *(value if isinstance(value, dict) else [])]
    assert any(n and n in message for n in names), message
