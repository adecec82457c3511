"""Which transformers families derive reads exactly: every config in tests/data/families against the oracle.

    python3 tools/family_coverage.py [--family NAME ...] [--json]   # a line per config: exact, off by N, or why not
    python3 tools/family_coverage.py --readme                         # rewrite the README's coverage table

The oracle's counts (tests/data/families/counts.json) were made by tools/transformers_families.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "families"
sys.path.insert(0, str(ROOT))


def reading(path: Path) -> dict:
    """derive's total and active count of one config, or the error it gives."""
    from derive.architecture.build import model_formulas
    from derive.architecture.reader import read_architecture
    from derive.core.errors import DeriveError

    raw = json.loads(path.read_text())
    try:
        arch = read_architecture(raw, path.stem)
        counts = model_formulas(arch).counts()
        # DeepSeek-style routers' e_score_correction_bias is in the checkpoint; transformers keeps it as a buffer.
        beyond = counts.get("router_correction_params", 0)
        return {
            "total": counts["total_params"] - beyond,
            "active": counts["active_params"] - beyond,
            "notes": list(arch.notes),
        }
    except DeriveError as e:
        return {"error": str(e).splitlines()[0]}


def rows(only: list[str] | None = None) -> list[dict]:
    oracle = json.loads((DATA / "counts.json").read_text())
    families = json.loads((DATA / "families.json").read_text())
    out = []
    for family, facts in sorted(families.items()):
        if family.startswith("_") or not facts.get("covered") or (only and family not in only):
            continue
        for name in facts.get("configs", []):
            key = f"{family}/{Path(name).stem}"
            expected = oracle.get(key, {})
            row = {"family": family, "config": key, "oracle": expected}
            if "error" in expected or "text" not in expected:
                row["status"] = "oracle cannot build it"
            else:
                got = reading(DATA / family / name)
                row["derive"] = got
                if "error" in got:
                    row["status"] = "refused: " + got["error"]
                else:
                    # The oracle gives no active count where it cannot find the experts: the total must agree.
                    active = expected.get("active") or (got["active"] if expected.get("active") is None else 0)
                    if not expected.get("active") and got["active"] == got["total"]:
                        active = expected["text"]
                    exact = got["total"] == expected["text"] and got["active"] == active
                    row["status"] = (
                        "exact"
                        if exact
                        else f"off: total {got['total'] - expected['text']:+,}, active {got['active'] - active:+,}"
                    )
            out.append(row)
    return out


START, END = "<!-- coverage: start (tools/family_coverage.py --readme) -->", "<!-- coverage: end -->"


def table(result: list[dict]) -> str:
    """The README's coverage section: how many families read exactly, and each one that does not, with why."""
    families = json.loads((DATA / "families.json").read_text())
    by_family: dict[str, list[dict]] = {}
    for row in result:
        by_family.setdefault(row["family"], []).append(row)
    unbuilt = "oracle cannot build it"
    checked = {f: rows for f, rows in by_family.items() if any(r["status"] != unbuilt for r in rows)}
    exact = sorted(f for f, rows in checked.items() if all(r["status"] in ("exact", unbuilt) for r in rows))
    published = sum(1 for f in exact if any(not r["config"].endswith("/default") for r in checked[f]))
    excluded = sorted(f for f, v in families.items() if not f.startswith("_") and not v.get("covered"))
    lines = [
        START,
        f"**{len(exact)} of {len(checked)} decoder families read exactly** (every config of the family: transformers' "
        f"default and, for {published} of them, a published checkpoint's; {sum(len(v) for v in checked.values())} "
        "configs in all, counted by transformers itself in `tests/data/families/`). "
        f"{len(by_family) - len(checked)} more families' configs transformers itself cannot build; "
        f"{len(excluded)} model_types in its causal-LM mapping are not decoder-only language models "
        "(encoders, encoder-decoder halves, audio) and are refused by name.",
        "",
        "| family | not read exactly, because |",
        "| --- | --- |",
    ]
    for family in sorted(set(checked) - set(exact)):
        worst = next(r for r in checked[family] if r["status"] not in ("exact", "oracle cannot build it"))
        lines.append(f"| `{family}` | {worst['config'].split('/')[1]}: {worst['status'].replace('|', '/')} |")
    lines.append(END)
    return "\n".join(lines)


def write_readme(result: list[dict]) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = text.index(START), text.index(END) + len(END)
    readme.write_text(text[:start] + table(result) + text[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--readme", action="store_true", help="rewrite the README's coverage section")
    args = parser.parse_args()
    result = rows(args.family)
    if args.readme:
        write_readme(result)
        return
    if args.json:
        print(json.dumps(result, indent=1))
        return
    for row in result:
        print(f"{row['config']:60} {row['status']}")
    exact = {r["family"] for r in result if r["status"] == "exact"}
    every = {r["family"] for r in result}
    print(f"\n{len(exact)} of {len(every)} families with at least one exact config")


if __name__ == "__main__":
    main()
