"""Text from elsewhere (names and values the API returned, a fork's policy messages) as each output
format shows it: the one place where it is escaped (docs/security.md, "Names in outputs").

- ``text``: one line on a terminal or in a CI log: control characters (an escape sequence, a
  carriage return, a newline), DEL, C1 controls, line and paragraph separators and bidirectional
  overrides as visible escapes (``\\x1b``, ``\\n``, ``\\u202e``). Also what a comment line of an
  env file holds (``env_comment``): it stays one comment line.
- ``md_code``: a Markdown code span (its content shown literally): one line, ``|`` escaped for a
  table cell, fenced by more backticks than any run inside.
- ``md_html``: text inside an HTML element of a Markdown comment (``<summary><code>``): one line,
  ``&``, ``<``, ``>``, quotes and ``|`` as entities: no ``<!--``, no tag, no fake line.
- ``md_text``: prose in Markdown: one line; each character of markup (``<``, ``&``, ``|``, ``*``,
  a backtick, a backslash, the ``]`` of a link, ``~~``) as a numeric entity.
- JSON: ``json.dumps`` escapes control characters itself; nothing to add.

And ``plural``: a count with its noun, as the lines commands write say it.
"""

from __future__ import annotations

import html
import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: What Markdown or HTML gives a meaning to inside a line: a tag or comment, an entity, a table
#: cell, a code span, a link, emphasis, an escape.
_MARKUP = re.compile(r"[&<>|`*\\]|\](?=\()|~(?=~)")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return {10: "\\n", 13: "\\r", 9: "\\t"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def text(value: str) -> str:
    """``value`` on one line, every control or direction character a visible escape."""
    return _CONTROL.sub(_escape, value)


def env_comment(value: str) -> str:
    """``value`` inside a ``#`` comment line of an env file: it cannot end the line."""
    return text(value)


def md_code(value: str) -> str:
    """``value`` as a Markdown code span (in a table cell or in prose)."""
    inner = text(value).replace("|", "\\|")
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", inner)), default=0))
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def md_html(value: str) -> str:
    """``value`` inside an HTML element of a Markdown document."""
    return html.escape(text(value), quote=True).replace("|", "&#124;")


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def md_text(value: str) -> str:
    """``value`` as Markdown prose, on one line, each character of markup a numeric entity."""
    return _MARKUP.sub(lambda m: f"&#{ord(m.group(0))};", text(value))
