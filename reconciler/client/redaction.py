"""Where a secret shows in a text, however a gateway encoded it: ``redact(text, secrets)``.

A gateway may echo what it was sent raw or encoded, and encoded more than once (a JSON body
HTML-escaped in an error page, a URL percent-encoded in a ``Location``). Rather than list the
encoded forms of each secret, ``redact`` decodes copies of the text and searches the secret as it
is in each of them:

- **views**: the text itself, then every copy one decoder further (``_DECODERS``: JSON and
  backslash escapes, HTML character references, percent-encoding), up to ``DEPTH`` decoders deep,
  so ``&quot;a\\u0026b&quot;`` and ``%2541`` are read as they were meant. Each character of a view
  remembers the stretch of the original text it came from, and that stretch is what is replaced
  by ``(sensitive)``: the rest of the message reads as it did.
- ``+`` and a space are the same character to the search (form encoding writes a space as ``+``):
  this can only hide more.
- a beginning of a secret ``LONG_PREFIX`` characters long or more is redacted wherever it is (a
  gateway that cut its echo short and went on writing).
- with ``cut`` (the text may have been shortened, by us or by the gateway), the first
  ``MIN_PREFIX`` or more characters of a secret followed by nothing but what a cut leaves (the rest
  of an escape it split, such as ``\\u00``, ``%C3`` or ``&#3``; closing quotes, brackets and tags;
  an ellipsis or a short note) are redacted from there to the end of the text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable
from itertools import takewhile

#: The shortest beginning of a secret redacted at the end of a cut text.
MIN_PREFIX = 6
#: The shortest beginning of a secret redacted wherever it is (an echo cut short, then more text).
LONG_PREFIX = 16
#: How many decoders deep a view goes (a value encoded three times over is still found).
DEPTH = 3
SHOWN = "(sensitive)"

#: A view of the text: its characters, and for each the ``(start, end)`` of what it came from.
View = tuple[str, list[tuple[int, int]]]

_JSON = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"  # a surrogate pair
                   r"|\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})|\\(.)", re.DOTALL)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_HTML = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")  # as html.unescape reads them
_HEX = "[0-9a-fA-F]"
_NEXT = "%[89abAB][0-9a-fA-F]"  # a UTF-8 continuation byte
_URL = re.compile(rf"%[c-dC-D]{_HEX}{_NEXT}|%[eE]{_HEX}(?:{_NEXT}){{2}}|%[fF][0-7](?:{_NEXT}){{3}}|%{_HEX}{{2}}")
#: What may follow a beginning of a secret at the end of a cut text: the rest of an escape the cut
#: split (``\\u00``, ``%C3``, ``&#3``, half a surrogate pair), then what a gateway closes its page
#: with (quotes, escaped or not, brackets, tags, whitespace, an ellipsis, a short note such as
#: ``[truncated]``).
_DEBRIS = re.compile(r"(?:\\(?:[uU][dD][89abAB][0-9a-fA-F]{2}\\?)?(?:[uU][0-9a-fA-F]{0,3}|[xX][0-9a-fA-F]?)?"
                     r"|(?:%[0-9a-fA-F]{0,2}){1,4}"
                     r"|&#?[xX]?[0-9a-zA-Z]{0,31}|[\ud800-\udbff])?"
                     r"(?:[\s\"'`)\]}>.,;\\\u2026]|</?[A-Za-z][^<>]{0,40}>|[(\[<][^()\[\]<>]{0,40}[)\]>]|truncated)*")
#: How much of a cut text, at most, may follow a beginning of a secret (debris).
_TRAILER = 200


def _json(m: re.Match[str]) -> str:
    high, low, code, byte, char = m.groups()
    if high is not None:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    if code is not None or byte is not None:
        return chr(int(code or byte, 16))
    return _SIMPLE.get(char, char)


def _url(m: re.Match[str]) -> str:
    raw = bytes.fromhex(m[0].replace("%", ""))
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("latin-1")


_DECODERS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (_JSON, _json), (_HTML, lambda m: html.unescape(m[0])), (_URL, _url))


def _decoded(view: View, pattern: re.Pattern[str], decode: Callable[[re.Match[str]], str]) -> View | None:
    """``view`` with every match of ``pattern`` decoded (None when nothing changes)."""
    text, spans = view
    chars: list[str] = []
    where: list[tuple[int, int]] = []
    at = 0
    for m in pattern.finditer(text):
        piece = decode(m)
        if piece == m[0]:
            continue
        chars.append(text[at:m.start()])
        where.extend(spans[at:m.start()])
        chars.append(piece)
        where.extend([(spans[m.start()][0], spans[m.end() - 1][1])] * len(piece))
        at = m.end()
    if not at:
        return None
    chars.append(text[at:])
    where.extend(spans[at:])
    return "".join(chars), where


def views(text: str) -> list[View]:
    """The text, and every decoding of it up to ``DEPTH`` decoders deep (each distinct text once)."""
    found: list[View] = [(text, [(i, i + 1) for i in range(len(text))])]
    seen = {text}
    layer = found
    for _ in range(DEPTH):
        deeper = [v for view in layer for pattern, decode in _DECODERS
                  if (v := _decoded(view, pattern, decode)) is not None and v[0] not in seen]
        for v in deeper:
            seen.add(v[0])
        found.extend(deeper)
        layer = deeper
    return found


def _fold(text: str) -> str:
    return text.replace("+", " ")


def _debris(tail: str) -> bool:
    """Whether ``tail``, in some view, is nothing but what a cut leaves (``_DEBRIS``)."""
    return any(_DEBRIS.fullmatch(text) for text, _ in views(tail))


def _same(text: str, at: int, wanted: str) -> int:
    """How many characters of ``wanted`` ``text`` shows from ``at`` on."""
    same = 0
    while same < len(wanted) and at + same < len(text) and text[at + same] == wanted[same]:
        same += 1
    return same


def _stretches(view: View, original: str, secrets: Iterable[str], cut: bool) -> Iterable[tuple[int, int]]:
    """The stretches of ``original`` that show a secret in ``view`` (one of its ``views``)."""
    text, spans = view
    folded = _fold(text)
    for secret in secrets:
        wanted = _fold(secret)
        # the secret, or a beginning of it long enough not to be chance (an echo cut short, then a note)
        at = folded.find(wanted[:LONG_PREFIX])
        while at >= 0:
            same = _same(folded, at, wanted)
            if same == len(wanted) or same >= LONG_PREFIX:
                yield spans[at][0], spans[at + same - 1][1]
            at = folded.find(wanted[:LONG_PREFIX], at + 1)
        if not cut or len(wanted) <= MIN_PREFIX:
            continue
        # a shorter beginning (MIN_PREFIX characters or more) followed by nothing but what a cut leaves
        at = folded.find(wanted[:MIN_PREFIX], max(0, len(folded) - len(wanted) - _TRAILER))
        while at >= 0:
            same = min(_same(folded, at, wanted), len(wanted) - 1)
            # judged on the original text after the beginning: the rest of a split escape is not
            # decoded as the gateway meant it (``\\u00`` reads as ``u00``, ``%C3`` as ``Ã``)
            tails = (original[spans[at + k - 1][1]:] for k in range(same, MIN_PREFIX - 1, -1))
            if any(_debris(tail) for tail in takewhile(lambda tail: len(tail) <= _TRAILER, tails)):
                yield spans[at][0], len(original)
                break
            at = folded.find(wanted[:MIN_PREFIX], at + 1)


def redact(text: str, secrets: Iterable[str], *, cut: bool = False) -> str:
    """``text`` with every secret of ``secrets`` (raw or encoded in any way ``views`` decodes)
    replaced by ``(sensitive)``; with ``cut``, a beginning of one at the end of the text too."""
    secrets = [s for s in secrets if s]
    if not secrets or not text:
        return text
    stretches = sorted({s for view in views(text) for s in _stretches(view, text, secrets, cut)})
    if not stretches:
        return text
    out: list[str] = []
    at = 0
    for start, end in stretches:
        if end <= at:
            continue
        if start >= at:
            out.append(text[at:start])
            out.append(SHOWN)
        at = end
    out.append(text[at:])
    return "".join(out)
