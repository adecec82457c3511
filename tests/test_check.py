"""`derive params --check`: derive's reading against transformers' own modules, layer by layer (issue 24).

Runs where the optional extra is installed (`pip install -e '.[test,hf]'`, as .ci/run does); skipped otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_families import NOT_READ, ROWS

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("transformers")
pytest.importorskip("torch")

from derive.api import params  # noqa: E402

CATALOG = sorted((ROOT / "formulas" / "models").glob("*.json"))
FAMILIES = [
    ROOT / "tests" / "data" / "families" / row["config"].split("/")[0] / f"{row['config'].split('/')[1]}.json"
    for row in ROWS
    if row["status"] == "exact" and row["family"] not in NOT_READ
]


# transformers' Step3p7Config ignores the checkpoint's flat keys and builds a vocabulary of 128,815 rows where the
# config says 128,896: the embedding and head differ by 2 x 81 x 4,096 (tests/test_architectures.py says the same).
DIFFERS = {
    "step-3.7-flash": "outside the layers (embedding, head, final norm) transformers has 1,055,256,576, derive "
    f"1,055,920,128 (+{2 * (128896 - 128815) * 4096:,})",
}


def _verdict(path: Path) -> str:
    notes = params(config=str(path), check=True).notes
    return next(n for n in notes if n.startswith("--check: "))


@pytest.mark.parametrize("path", CATALOG + FAMILIES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_check_equals_transformers_on_every_committed_config(path):
    verdict = _verdict(path)
    assert DIFFERS[path.stem] in verdict if path.stem in DIFFERS else verdict.startswith("--check: equal"), verdict


def test_check_names_the_first_layer_that_differs():
    from derive.transformers_check import Check, compare

    built = Check("5.25.0", (10, 12, 12), 5, "XForCausalLM")
    assert compare([10, 12, 12], 5, built).startswith("equal to transformers 5.25.0 (XForCausalLM")
    assert compare([10, 13, 12], 5, built) == (
        "first difference at layer 1: transformers 12 parameters, derive 13 (+1)"
    )
    assert compare([10, 12, 12], 7, built).startswith("every layer equal; outside the layers")
    assert compare([10, 12], 5, built) == "transformers builds 3 layers where derive reads 2"
    assert compare([10, 12, 6, 6], 5, built).endswith(
        "in 3 layers where the config lists 4 (a layer's parts listed apart)"
    )
    # RWKV-4's first block holds the embedding's LayerNorm (blocks.0.pre_ln), Zamba's first hybrid layer the shared
    # block: the same parameters, which derive counts with the model as a whole.
    assert compare([8, 12, 12], 7, built).startswith("equal in total to transformers 5.25.0 (XForCausalLM): 39 ")
    # A family whose modules name no layers (XLM's attentions.N, ffns.N): the totals are compared.
    assert compare([10, 12, 12], 5, Check("5.25.0", (), 39, "XLMWithLMHeadModel")).startswith("equal in total")


def test_remote_code_is_checked_by_the_reading_alone(tmp_path):
    raw = json.loads((ROOT / "formulas" / "models" / "llama3-8b.json").read_text())
    raw.update(model_type="my_new_llm", architectures=["MyNewLLMForCausalLM"], auto_map={"AutoConfig": "x.Y"})
    (tmp_path / "config.json").write_text(json.dumps(raw))
    assert _verdict(tmp_path / "config.json") == (
        "--check: checked by derive's reading only: transformers has no model_type 'my_new_llm': it needs its own "
        "code (auto_map), which --check never runs"
    )


def test_no_other_command_imports_transformers_or_torch():
    code = (
        "import sys; from click.testing import CliRunner; from cli import cli; "
        "r = CliRunner().invoke(cli, ['knee', '--model', 'llama70b']); assert r.exit_code == 0, r.output; "
        "r = CliRunner().invoke(cli, ['params', '--model', 'deepseek-v3']); assert r.exit_code == 0, r.output; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
