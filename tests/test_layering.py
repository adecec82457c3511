"""The layout's layers import only downward, and the formula library is loaded in one place.

machinery (derive's core) < formula library (formulas/) < model descriptions (derive/architecture/)
< catalog, derivations and answers < the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINERY = ["units", "symbols", "dimensions", "library", "solving", "evaluation", "sheet", "render", "errors", "names"]
ABOVE_MACHINERY = ("formulas", "derive.architecture", "derive.catalog", "derive.derivations", "derive.answers", "cli")
ABOVE_LIBRARY = ("derive.architecture", "derive.catalog", "derive.derivations", "derive.answers", "reports", "cli")
ABOVE_MODELS = ("derive.catalog", "derive.derivations", "derive.answers", "reports", "cli")


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def reaching(path: Path, layers: tuple[str, ...]) -> list[str]:
    return sorted(m for m in imports(path) if any(m == layer or m.startswith(layer + ".") for layer in layers))


@pytest.mark.parametrize("name", MACHINERY)
def test_machinery_imports_no_definitions(name):
    assert reaching(ROOT / "derive" / f"{name}.py", ABOVE_MACHINERY) == []


@pytest.mark.parametrize("path", sorted((ROOT / "formulas").glob("*.py")), ids=lambda p: p.name)
def test_formula_library_imports_no_models(path):
    assert reaching(path, ABOVE_LIBRARY) == []


@pytest.mark.parametrize("path", sorted((ROOT / "derive" / "architecture").glob("*.py")), ids=lambda p: p.name)
def test_model_descriptions_import_no_derivations(path):
    assert reaching(path, ABOVE_MODELS) == []


def test_library_loads_every_formula_module():
    from formulas import MODULES, library

    modules = {p.stem for p in (ROOT / "formulas").glob("*.py")} - {"__init__", "notation"}
    assert set(MODULES) == modules
    names = {f.name for f in library()}
    assert {"attainable_flops", "kv_bytes_per_sequence", "claim_over_floor", "two_n_ratio"} <= names


def test_formulas_and_check_list_the_same_library(run):
    import json

    listed = json.loads(run("formulas", "--json").stdout)["results"]["formulas"]["value"]
    report = run("check").stdout
    assert f"{len(listed)} library formulas" in report
