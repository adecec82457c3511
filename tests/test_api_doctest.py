"""Every API docstring's example runs as written (doctest), with `derive` imported as a notebook would."""

from __future__ import annotations

import doctest

import derive
import derive.api


def test_every_api_example_runs():
    result = doctest.testmod(derive.api, extraglobs={"derive": derive}, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= len(derive.api.__all__) - 3  # the error, the two result types need no example
    assert result.failed == 0


def test_the_package_docstring_example_runs():
    result = doctest.testmod(derive, extraglobs={"derive": derive})
    assert result.attempted >= 1 and result.failed == 0
