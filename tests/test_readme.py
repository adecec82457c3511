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


# The command table's examples: every `derive ...` in its first column, in order (a later one may read a file an
# earlier one wrote, as `simulate --measured machine.json` reads what `measure --out machine.json` wrote).
TABLE = re.findall(r"^\| `(derive [^`]*)` \|", README.read_text(), flags=re.M)


def test_the_command_table_has_every_command():
    from tests.test_hardening import _leaf_commands

    named = {" ".join(e.split()[1:3]) for e in TABLE} | {e.split()[1] for e in TABLE}
    missing = [" ".join(path) for path, _ in _leaf_commands() if " ".join(path) not in named]
    assert not missing, f"commands without a README example: {missing}"


def test_every_command_table_example_runs_as_written(run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    failed = []
    for example in TABLE:
        result = run(*shlex.split(example)[1:])
        if result.exit_code != 0:
            failed.append(f"{example}: {result.stderr.strip()[:200]}")
    assert not failed, "\n".join(failed)


def test_the_python_session_runs_as_shown():
    import doctest

    import derive

    session = re.search(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert session, "the README's Python session is missing"
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    test = parser.get_doctest(session[1], {"derive": derive}, "README", "README.md", 0)
    result = runner.run(test)
    assert result.attempted >= 6 and result.failed == 0
