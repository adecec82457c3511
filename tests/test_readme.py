"""The README's example outputs are real: each `$ derive ...` block is rerun and must match."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

README = Path(__file__).parent.parent / "README.md"
BLOCKS = re.findall(r"```text\n\$ (derive [^\n]*)\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize(("command", "expected"), BLOCKS, ids=[c for c, _ in BLOCKS])
def test_example_output_is_current(run, command, expected):
    result = run(*shlex.split(command)[1:])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected, f"README example is stale: rerun `{command}` and paste its output"
