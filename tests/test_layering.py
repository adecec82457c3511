"""The direction of every import, lazy ones included: machinery, content, derivations, the question bank, API, CLI.

0 derive/core/      units, symbols, formula objects, evaluation, the solver, sheets and rendering, validation
1 formulas/         the formula library, on the machinery alone
2 the model         derive/architecture/, the catalog, systems, layouts, calibration, the inputs table, recipes
3 derivations       what the commands compute (derive/derivations/, planning, sweeps, scenario, plots, answers)
3 reports/          the question bank: derivations and the helpers of reports/questions/shared.py, never another
                    question, the API or the CLI; found by derive.answers through an entry point, not imported
4 derive/api.py     the Python API
5 cli.py            the command line
A module imports only from its own layer or below, and no set of modules imports itself round a loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = {
    "catalog",
    "systems",
    "layouts",
    "calibration",
    "inputs",
    "model_facts",
    "transformers_check",
    "figures",
    "recipes",
}


def _modules() -> dict[str, Path]:
    paths = [*ROOT.glob("derive/**/*.py"), *ROOT.glob("formulas/*.py"), *ROOT.glob("reports/**/*.py"), ROOT / "cli.py"]
    out = {}
    for path in paths:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every project module `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            named = {f"{node.module}.{a.name}" for a in node.names} & MODULES.keys()
            found |= named or {node.module}
    return found & MODULES.keys()


EDGES = {name: _imports(path) for name, path in MODULES.items()}


def layer(name: str) -> float:
    parts = name.split(".")
    if parts[0] == "cli":
        return 5
    if name in ("derive", "derive.api"):
        return 4
    if parts[0] == "reports":
        return 3
    if parts[0] == "formulas":
        return 1
    if parts[1] == "core":
        return 0
    if parts[1] == "architecture" or parts[1] in MODEL:
        return 2
    return 3


def test_every_import_points_down_or_across():
    upward = [(a, b) for a, deps in EDGES.items() for b in deps if layer(b) > layer(a)]
    assert not upward, upward


def test_the_machinery_imports_no_content():
    outside = [(a, b) for a, deps in EDGES.items() if a.startswith("derive.core") for b in deps]
    assert all(b.startswith("derive.core") for _, b in outside), [e for e in outside if not e[1].startswith("derive.")]


def test_the_engine_does_not_import_the_question_bank():
    engine = [(a, b) for a, deps in EDGES.items() if a.startswith(("derive", "formulas")) for b in deps]
    assert not [e for e in engine if e[1].startswith("reports")]


def test_questions_share_helpers_through_one_module():
    crossed = [
        (a, b)
        for a, deps in EDGES.items()
        if a.startswith("reports.questions.")
        for b in deps
        if b.startswith("reports.questions.") and b != "reports.questions.shared"
    ]
    assert not crossed, crossed


def test_no_import_loop():
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in EDGES.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for name in sorted(EDGES):
        if name not in index:
            visit(name)
    assert not loops, loops


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


def test_every_data_file_the_engine_reads_is_in_the_package():
    """The README installs with `pip install .`, which copies only pyproject's package-data: a data file beside the
    code but outside those globs would be found in a checkout and missing from an install."""
    import fnmatch
    import subprocess
    import tomllib

    root = Path(__file__).parent.parent
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    tracked = subprocess.run(
        ["git", "ls-files", "derive", "formulas", "reports"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [f for f in tracked if not f.endswith((".py", ".md")) and not f.startswith("reports/answers/")]
    assert len(data) > 150
    missing = [
        f
        for f in data
        if not any(fnmatch.fnmatch(f.split("/", 1)[1], pattern) for pattern in globs.get(f.split("/", 1)[0], []))
    ]
    assert not missing, f"add to [tool.setuptools.package-data]: {missing}"
