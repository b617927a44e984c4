"""What a request path may be: an API path under ``/v2``, relative to the configured endpoint.

The base URL and the ``Authorization`` header belong to the client; a path is joined to that base.
httpx sends an absolute URL (``https://elsewhere/x``) or a scheme-relative one (``//elsewhere/x``)
to its own host, with the key: a path that comes from a plan file, or is built from an id the API
returned, must never be able to do that, nor climb out of ``/v2`` with ``..``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

API_PREFIX = "/v2"
#: Characters a path may hold: RFC 3986 path characters and ``%`` escapes, nothing else (no space,
#: no control character, no backslash, no fragment).
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*\Z")


def api_path_problem(path: object, *, query: bool = True) -> str | None:
    """Why ``path`` is not an API path under ``/v2`` (None when it is). ``query=False`` refuses a
    query string too (a planned call never has one)."""
    if not isinstance(path, str) or not path:
        return "is not a path"
    target, sep, rest = path.partition("?")
    if sep and not query:
        return "has a query string"
    if "#" in path:
        return "has a fragment"
    if not (target == API_PREFIX or target.startswith(API_PREFIX + "/")):
        return f"is not an API path under {API_PREFIX}/ relative to the configured endpoint"
    if "//" in target:
        return "holds '//'"
    if not _PATH_CHARS.match(target) or (sep and not _PATH_CHARS.match(rest.replace("?", ""))):
        return "holds characters a path cannot (space, backslash, control or non-ASCII characters)"
    for segment in target.split("/"):
        problem = _segment_problem(segment)
        if problem is not None:
            return problem
    return None


#: How many layers of percent-encoding a segment is decoded through (``%252e`` is two).
_DECODE_ROUNDS = 4
_DOTS = re.compile(r"(?:^|[/;\\])\.\.?(?:$|[/;\\])")


def _segment_problem(segment: str) -> str | None:
    """Why one path segment could climb out of its place on some server: a ``.`` or ``..`` once
    decoded (any number of times: ``%252e%252e``), also before a ``;`` parameter (``..;``); or an
    escape that decodes to a byte outside printable ASCII (``%EF%BC%8E``, a full-width dot that
    normalises to ``.``; ``%c0%ae``, an overlong ``.``; a control character). An id is ASCII."""
    text = segment
    for _ in range(_DECODE_ROUNDS + 1):
        if _DOTS.search(text):
            return "holds a '.' or '..' segment"
        decoded = unquote_to_bytes(text)
        if any(b < 0x21 or b > 0x7E for b in decoded):
            return "holds an escape that decodes to a non-ASCII or control character"
        if decoded == text.encode("ascii"):
            return None
        text = decoded.decode("ascii")
    return "is percent-encoded more than four times over"
