"""Validation in one place: every count, fraction, quantity and output path a user gives, before any work.

The CLI's option types, `derive answer --set`, the questions' assumed inputs and the API all call
these, so a value is refused the same way wherever it enters: finite, positive, whole where a count
is whole, and within a sanity bound (stated in the message) that no real deployment reaches.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sympy

from derive.core.errors import DeriveError
from derive.core.units import parse_quantity, to_base_factor, unit

# The largest value each count may take: far beyond any deployment, small enough that the exact
# arithmetic stays fast and no float overflows.
COUNT_LIMITS: dict[str, int] = {
    "batch": 10**7,
    "context": 10**9,
    "prompt": 10**9,
    "output": 10**9,
    "tokens": 10**9,
    "tp": 4096,
    "count": 4096,
    "seats": 10**7,
    "replies": 10**9,
    "requests": 10**7,
    "max_gpus": 4096,
    "max_batch": 10**7,
}
DEFAULT_COUNT_LIMIT = 10**12

# Sanity bounds by dimension, in base units: (smallest, largest, what they mean, a real figure).
QUANTITY_BOUNDS: dict[str, tuple[float, float, str, str]] = {
    "byte/second": (1e3, 1e16, "1 kB/s to 10 PB/s", "3.35 TB/s"),
    "FLOP/second": (1e6, 1e20, "1 MFLOP/s to 100 EFLOP/s", "989 TFLOP/s"),
    "byte": (1e3, 1e16, "1 kB to 10 PB", "80 GB"),
    "watt": (1e-2, 1e7, "10 mW to 10 MW", "700 W"),
    "second": (1e-15, 1e9, "1 fs to 30 years", "20 ms"),
    "token/second": (1e-9, 1e12, "10^-9 to 10^12 token/s", "1000 token/s"),
    "1/second": (1e-9, 1e12, "10^-9 to 10^12 per second", "10 /s"),
    "sequence/second": (1e-9, 1e12, "10^-9 to 10^12 requests/s", "20 req/s"),
    "USD/second": (1e-9, 1.0, "a few micro-dollars to 3,600 USD an hour", "2.5 USD/h"),
}


def _example(where: str, value: object) -> str:
    return f"{where}={value}" if where.startswith("--set") else f"{where} {value}"


def count(value: object, name: str, option: str = "") -> int:
    """A whole number of at least 1 and at most the name's sanity bound ('1,024', '1_024' and 1e3 accepted)."""
    where = option or f"--{name}"
    limit = COUNT_LIMITS.get(name, DEFAULT_COUNT_LIMIT)
    if isinstance(value, bool):
        raise DeriveError(f"{where} must be a whole number, got {value}", f"For example {_example(where, 16)}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).replace(",", "").replace("_", "").strip()
        try:
            exact = sympy.Rational(text) if text else None
        except (TypeError, ValueError, ZeroDivisionError, sympy.SympifyError):
            exact = None
        if exact is None or not exact.is_finite:
            raise DeriveError(
                f"{where} must be a whole number of at least 1, got '{value}'", f"For example {_example(where, 16)}"
            )
        if not exact.is_integer:
            raise DeriveError(
                f"{where} must be a whole number, got {value}", f"Round it: {_example(where, math.ceil(exact))}"
            )
        number = int(exact)
    if number < 1:
        raise DeriveError(
            f"{where} must be a whole number of at least 1, got {number:,}", f"For example {_example(where, 16)}"
        )
    if number > limit:
        raise DeriveError(
            f"{where} {number:,} is above {limit:,}, this tool's sanity bound for {name}",
            f"Give {name} at most {limit:,}",
        )
    return number


def number(
    value: object,
    name: str,
    option: str = "",
    low: float = 0,
    high: float | None = None,
    zero: bool = False,
    below_high: bool = False,
) -> sympy.Rational:
    """A finite plain number above `low` (or equal to it where `zero`), at most `high`, exact."""
    where = option or f"--{name}"
    try:
        exact = sympy.Rational(str(value).strip())
    except (TypeError, ValueError, ZeroDivisionError, sympy.SympifyError):
        raise DeriveError(f"{where} must be a number, got '{value}'", f"For example {_example(where, 0.5)}") from None
    above = exact >= low if zero else exact > low
    if not exact.is_finite or not above or (high is not None and exact > high):
        top = f" and {'below' if below_high else 'at most'} {high:g}" if high is not None else ""
        bound = f"{'at least' if zero else 'above'} {low:g}" + top
        raise DeriveError(f"{where} must be {bound}, got {value}", f"For example {_example(where, 0.5)}")
    return exact


def chance(value: object, option: str) -> sympy.Rational:
    """A probability from 0 to below 1, exact (a speculative draft's acceptance: 1 is 0/0 in its sum)."""
    exact = number(value, option.lstrip("-"), option, zero=True, high=1, below_high=True)
    if exact == 1:
        raise DeriveError(
            f"{option} must be below 1, got {value}",
            "Every draft accepted is k+1 tokens a pass: give 0.99, or take tau = k+1 without a draft",
        )
    return exact


def quantity(text: object, expected: str, option: str = "") -> sympy.Rational:
    """'3.35 TB/s' as an exact value in base units, of the right dimension, within the dimension's sanity bound."""
    value = parse_quantity(str(text), expected, option)
    for bound_unit, (low, high, words, example) in QUANTITY_BOUNDS.items():
        if unit(bound_unit).dimensionality != unit(expected).dimensionality:
            continue
        base = float(value) * float(to_base_factor(expected)) / float(to_base_factor(bound_unit))
        if not (low <= base <= high):
            where = f"{option} " if option else ""
            raise DeriveError(
                f"{where}'{text}' is outside {words}, this tool's sanity bound",
                f"Give a real figure, for example '{example}'",
            )
    return value


def setting(text: str, example: str = "--set batch=16") -> tuple[str, str]:
    """A --set KEY=VALUE as its key and its value, both stripped (every --set, of a question or a formula)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise DeriveError(f"--set '{text}' is not key=value", f"For example {example}")
    return key.strip(), value.strip()


def path_text(value: object, option: str = "") -> str:
    """A path as typed: not empty, no NUL byte (the system would refuse it with an exception)."""
    text = str(value)
    if not text.strip() or "\x00" in text:
        raise DeriveError(
            f"{option} '{text.strip(chr(0))}' is not a path", f"Give a file name, for example {option} out.json"
        )
    return text


def output_file(path: str | Path, option: str = "--out", example: str = "out.csv") -> Path:
    """A file to write: its folder must exist and be writable, and it must not be a folder itself."""
    file = Path(path)
    if file.is_dir():
        raise DeriveError(f"{option} '{path}' is a folder, not a file", f"Give a file name, such as {file / example}")
    _writable_folder(file.parent, option, path)
    return file


FIGURE_SUFFIXES = ("", ".svg", ".png")


def figure_file(path: str | Path, option: str = "--figure") -> Path:
    """Where a figure goes: an output file whose name ends in .svg, .png or nothing (both are written beside it)."""
    file = output_file(path, option)
    if file.suffix.lower() not in FIGURE_SUFFIXES:
        raise DeriveError(
            f"{option} '{path}': a figure is written as SVG and PNG, not '{file.suffix}'",
            f"Give a name ending in .svg or .png, such as {file.with_suffix('.svg')}",
        )
    return file


def output_folder(path: str | Path, option: str = "--out") -> Path:
    """A folder to write into: it may be made, but only inside a folder that exists and is writable."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise DeriveError(f"{option} '{path}' is a file, not a folder", "Give a folder")
    _writable_folder(folder if folder.exists() else folder.parent, option, path)
    return folder


def _writable_folder(folder: Path, option: str, path: str | Path) -> None:
    folder = folder if str(folder) else Path(".")
    if not folder.is_dir():
        raise DeriveError(
            f"{option} '{path}': the folder '{folder}' does not exist", f"Create it first: mkdir -p {folder}"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DeriveError(f"{option} '{path}': the folder '{folder}' is not writable", "Write somewhere else")
    try:  # permission bits can say yes where the filesystem says no (/proc, a read-only mount): try it, before any work
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise DeriveError(
            f"{option} '{path}': nothing can be written in '{folder}' ({exc.strerror})", "Write somewhere else"
        ) from None


def make_folder(folder: Path, option: str = "--out") -> Path:
    """Create `folder` itself (its parent was checked), or say in one line why it cannot be."""
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise DeriveError(f"{option} '{folder}' cannot be created: {exc.strerror}", "Write somewhere else") from None
    return folder


@contextmanager
def atomic(path: Path, mode: str = "w") -> Iterator[object]:
    """Write to a temporary file beside `path` and rename it on success: a failed run leaves no partial file."""
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    except OSError as exc:
        raise DeriveError(f"'{path}' cannot be written: {exc.strerror}", "Write somewhere else") from None
    try:
        os.close(handle)
        encoding = None if "b" in mode else "utf-8"
        with open(temporary, mode, encoding=encoding, newline=None if "b" in mode else "") as stream:
            yield stream
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# What Python type an API argument of each kind takes. The CLI hands every argument over as text, which each kind
# takes; a Python caller can hand anything, and gets the same one-line error for a wrong type as for a bad value.
_TAKES = {
    "count": "a whole number (an int, or its digits as a string)",
    "number": "a number (an int or a float, or its digits as a string)",
    "quantity": "a string with its unit, such as {example}, or a pint quantity (a bare number has no unit)",
    "choice": "one of the names {choices}",
    "flag": "True or False",
    "text": "a string",
    "path": "a path (a string or a pathlib.Path)",
    "model": "a catalog name (a string), or a model from derive.model(...)",
    "gpu": "a catalog name (a string), or an accelerator from derive.gpu(...)",
    "gpus": "catalog names, comma-separated or as a list, or accelerators from derive.gpu(...)",
    "list": "a whole number, a list of them, or a range such as '1:64' (a string)",
    "models": "catalog names, comma-separated or as a list, or models from derive.model(...)",
    "paths": "a path or a list of paths",
    "texts": "a name, comma-separated names, or a list of them",
    "settings": "a mapping {{name: value}} or an iterable of 'name=value' strings",
}


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_quantity(value: object) -> bool:
    return hasattr(value, "magnitude") and hasattr(value, "units")


def _is_whole(value: object) -> bool:
    return isinstance(value, int | float | str) and not isinstance(value, bool) or _is_exact(value)


def _is_axis(value: object) -> bool:
    """One value of a sweep's axis: a whole number, or text (a list, or a range such as '1:64')."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def _is_exact(value: object) -> bool:
    """A SymPy number: how the CLI hands over a value it has parsed (a quantity in base units)."""
    return getattr(value, "is_Number", False) is True


def _takes(kind: str, value: object) -> bool:
    """Whether `value` is of a Python type an argument of `kind` takes (its value is checked after, as the CLI's)."""
    from pathlib import PurePath

    listed = isinstance(value, list | tuple | range)
    checks = {
        "count": lambda v: _is_whole(v),
        "number": lambda v: _is_whole(v),
        "quantity": lambda v: _is_text(v) or _is_quantity(v) or _is_exact(v),
        "choice": _is_text,
        "flag": lambda v: isinstance(v, bool),
        "text": _is_text,
        "path": lambda v: _is_text(v) or isinstance(v, PurePath),
        "model": lambda v: _is_text(v) or hasattr(v, "formulas"),
        "gpu": lambda v: _is_text(v) or hasattr(v, "bandwidth"),
        "gpus": lambda v: _is_text(v) or hasattr(v, "bandwidth") or listed and all(_takes("gpu", g) for g in v),
        "list": lambda v: _is_axis(v) or listed and all(_is_axis(x) for x in v),
        "models": lambda v: _takes("model", v) or listed and all(_takes("model", m) for m in v),
        "paths": lambda v: _takes("path", v) or listed and all(_takes("path", x) for x in v),
        "texts": lambda v: _is_text(v) or listed and all(_is_text(x) for x in v),
        "settings": lambda v: (
            isinstance(v, dict) and all(_is_text(k) for k in v) or listed and all(_is_text(x) for x in v)
        ),
    }
    return checks[kind](value)


def argument(
    function: str, name: str, value: object, kind: str, example: str = "", choices: str = "", optional: bool = True
) -> None:
    """Refuse an API argument whose Python type its kind does not take, naming the argument and what it takes
    (None, where it is `optional`: the argument's default)."""
    if value is None and optional or value is not None and _takes(kind, value):
        return
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    takes = _TAKES[kind].format(example=f"'{example}'" if example else "'3.35 TB/s'", choices=choices)
    raise DeriveError(
        f"derive.{function}({name}={shown}): {name} takes {takes}, not {type(value).__name__}",
        f"See help(derive.{function})",
    )
