"""The answer sheets: the committed set is current, every sheet compiles, and answers re-derive."""

from __future__ import annotations

import filecmp
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from derive import answers

COMMITTED = Path(__file__).parent.parent / "reports" / "answers"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("answers")
    answers.write_all(out)
    return out


def _files(root: Path) -> list[str]:
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.suffix in {".md", ".tex", ".svg", ".png"}
    )


def test_committed_sheets_match_a_fresh_run(fresh):
    assert _files(COMMITTED) == _files(fresh), "run: derive sheets --out reports/answers"
    stale = [name for name in _files(fresh) if not filecmp.cmp(COMMITTED / name, fresh / name, shallow=False)]
    assert not stale, f"stale sheets {stale}: run 'derive sheets --out reports/answers' and commit"


def test_every_question_has_a_short_answer_and_numbers():
    for qid in answers.questions():
        answer = answers.answer(qid)
        assert answer.summary.text and answer.summary.quantities, qid
        assert answer.sections and all(s.sheet.steps for s in answer.sections), qid
        assert answer.results, qid


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (.ci/run installs it)")
def test_sheets_compile_on_their_own(fresh, tmp_path):
    """Every fifth answer's own .tex, standalone (the book, which holds every answer's text, compiles in the test
    below with the same overfull-box check: this holds the standalone preamble)."""
    shutil.copytree(fresh, tmp_path / "tex")
    for tex in sorted(t for t in (tmp_path / "tex").glob("*.tex") if t.name != "book.tex")[::5]:
        result = subprocess.run(
            ["pdflatex", "-halt-on-error", "-interaction=nonstopmode", tex.name],
            cwd=tex.parent,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, f"{tex.name}:\n" + result.stdout[-2000:]
        assert tex.with_suffix(".pdf").exists()
        _no_overfull_boxes(tex)


def _no_overfull_boxes(tex: Path) -> None:
    """No line longer than the page, no table taller than it (issue 15: 32 overfull boxes, the worst 133.6 pt)."""
    log = tex.with_suffix(".log").read_text(errors="ignore")
    overfull = [float(x) for x in re.findall(r"Overfull \\[hv]box \(([\d.]+)pt too (?:wide|high)\)", log)]
    assert not [x for x in overfull if x > 5], f"{tex.name}: overfull boxes of {sorted(overfull)} pt"


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (.ci/run installs it)")
def test_the_book_is_one_page_an_answer_then_the_appendix(fresh, tmp_path):
    """Issue 28: the book settles in two pdflatex passes, every answer is one page (from the labels' pages), and the
    appendix of derivations is at most 60 pages."""
    shutil.copytree(fresh, tmp_path / "tex")
    for _ in range(2):
        subprocess.run(
            ["pdflatex", "-halt-on-error", "-interaction=nonstopmode", "book.tex"],
            cwd=tmp_path / "tex",
            capture_output=True,
            timeout=300,
            check=True,
        )
    _no_overfull_boxes(tmp_path / "tex" / "book.tex")
    log = (tmp_path / "tex" / "book.log").read_text(errors="ignore")
    assert "Label(s) may have changed" not in log, "the second pass moved a label: the book needs a third"
    aux = (tmp_path / "tex" / "book.aux").read_text()
    answer_pages = [int(p) for p in re.findall(r"\\newlabel\{q:[^}]+\}\{\{\d+\}\{(\d+)\}", aux)]
    appendix = min(int(p) for p in re.findall(r"\\newlabel\{a:[^}]+\}\{\{\w+\}\{(\d+)\}", aux))
    pages = int(re.search(r"Output written on book\.pdf \((\d+) pages", log).group(1))  # type: ignore[union-attr]
    assert len(answer_pages) == len(answers.questions())
    spans = [b - a for a, b in zip(answer_pages, [*answer_pages[1:], appendix], strict=True)]
    assert spans == [1] * len(spans), f"answers longer than a page: {spans}"
    assert pages - appendix + 1 <= 60, f"an appendix of {pages - appendix + 1} pages"


def test_sheets_for_some_questions_only(run, tmp_path):
    """--question writes those answers and a book of them; an unknown id stops before anything is written."""
    bad = run("sheets", "--out", str(tmp_path / "bad"), "--question", "decode-knee,nope")
    assert bad.exit_code == 2 and "unknown question 'nope'" in bad.stderr and not (tmp_path / "bad").exists()
    ok = run("sheets", "--out", str(tmp_path / "two"), "--question", "kv-sizing-13b, decode-knee")
    assert ok.exit_code == 0
    written = sorted(p.name for p in (tmp_path / "two").glob("*.*"))
    assert written == ["book.tex", "decode-knee.md", "decode-knee.tex", "kv-sizing-13b.md", "kv-sizing-13b.tex"]
