"""Shared fixtures: the CLI runner, and small configs of the families the catalog lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import cli

CONFIGS = Path(__file__).parent / "data" / "configs"


@pytest.fixture
def run():
    """Invoke `derive ARGS...`; returns the click Result (stdout, stderr, exit_code)."""
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli.cli, list(args), prog_name="derive")

    return invoke


@pytest.fixture
def write_config(tmp_path):
    """Write a config dict (or raw text) to tmp_path/NAME/config.json and return its path."""

    def write(content, name: str = "model") -> Path:
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        path = folder / "config.json"
        if isinstance(content, (bytes, bytearray)):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path

    return write


def load_fixture(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())
