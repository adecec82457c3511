"""Rerun every `$ derive ...` example in README.md and paste its output (tests/test_readme.py checks it).

python3 tools/update_readme.py
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"```text\n\$ (derive [^\n]*)\n(.*?)```", flags=re.S)


def rerun(match: re.Match[str]) -> str:
    command = match.group(1)
    output = subprocess.run(shlex.split(command), capture_output=True, text=True, check=True).stdout
    return f"```text\n$ {command}\n{output}```"


def main() -> None:
    text = README.read_text(encoding="utf-8")
    README.write_text(BLOCK.sub(rerun, text), encoding="utf-8")


if __name__ == "__main__":
    main()
