"""Names users type: the nearest known one, for a 'Did you mean' in an error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, known: Iterable[str]) -> str:
    """'Did you mean ...? ' for the nearest known name, or ''."""
    match = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.5)
    return f"Did you mean '{match[0]}'? " if match else ""
