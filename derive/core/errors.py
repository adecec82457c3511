"""The one error type the library raises for anything a user can fix.

The CLI turns a DeriveError into a single line on stderr and exit code 2; the
message says what is wrong, the hint how to fix it.
"""

from __future__ import annotations


class DeriveError(Exception):
    """A problem with the user's input: names the problem and how to fix it."""

    def __init__(self, message: str, hint: str = "", **fields: object) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.fields = fields

    def __str__(self) -> str:
        text = f"{self.message}. {self.hint}" if self.hint else self.message
        return _one_line(text)


def _one_line(text: str) -> str:
    """Control characters from a user's input shown escaped, so an error stays one line."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class UnitError(DeriveError):
    """A quantity of the wrong dimension, or an expression whose units disagree."""


class CatalogError(DeriveError):
    """An unknown model or accelerator, or a config that cannot be read."""


class FitError(DeriveError):
    """A model whose weights (and one sequence) do not fit in the memory given."""
