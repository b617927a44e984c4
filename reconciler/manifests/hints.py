"""Did-you-mean, for the models' validators and ``messages`` (which the models must not import)."""

from __future__ import annotations

from collections.abc import Iterable


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The closest name to a misspelling (case differences first), or None."""
    options = list(choices)
    for c in options:
        if c.lower() == word.lower():
            return c
    import difflib  # only a misspelling pays for it (heapq included), not every validate

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(word.lower(), [c.lower() for c in options], n=1, cutoff=0.6)
        close = [c for c in options if c.lower() in close][:1]
    return close[0] if close else None
