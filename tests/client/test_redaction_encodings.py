"""A secret the client knows (its key, a value given to ``hide``) shows in no
error, exception text or event, whatever encoding a gateway echoes it in (JSON escapes of any case,
``\\/``, HTML character references, percent-encoding, nested), wherever it echoes it (a non-problem
body, a problem's title or detail, a ``Location``), and when the gateway cut its echo short.

The handlers echo what they were sent (the request body, the Authorization header) over a
MockTransport; what a test finds in a message is checked with the standard library's own decoders,
not with the client's."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import httpx
import pytest
from clienthelpers import CANARY, Script, no_sleep, ran

from reconciler.client.http import ApiClient
from reconciler.client.redaction import MIN_PREFIX, redact
from reconciler.errors import ProblemError

#: A manifest's secret, with every character an encoder treats apart (quote, slash, backslash,
#: ampersand, apostrophe, angle bracket, space, plus, newline, non-ASCII, outside the BMP).
HIDDEN = "hid\"den/se\\cret&it's <b> a+b\nc é😀-91f2"


def uhex(text: str, upper: bool) -> str:
    """JSON with every non-ASCII character (and ``/``) escaped, the hex digits in the given case."""
    escaped = json.dumps(text)[1:-1].replace("/", "\\/")
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: "\\u" + (m[1].upper() if upper else m[1].lower()), escaped)


def every_char(text: str, form: str) -> str:
    return "".join(form.format(ord(c)) if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in text)


#: The ways a gateway writes what it echoes.
ENCODINGS: dict[str, Callable[[str], str]] = {
    "raw": lambda s: s,
    "json": lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    "json-ascii-lower": lambda s: uhex(s, upper=False),
    "json-ascii-upper": lambda s: uhex(s, upper=True),
    "json-every-letter": lambda s: every_char(s, "\\u{:04X}"),
    "html": html.escape,
    "html-apostrophe-39": lambda s: s.replace("&", "&amp;").replace("'", "&#39;").replace("<", "&lt;"),
    "html-decimal": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "html-hex": lambda s: "".join(f"&#x{ord(c):x};" for c in s),
    "html-hex-upper-no-semicolon": lambda s: "".join(f"&#X{ord(c):X}" for c in s),
    "percent-upper": lambda s: quote(s, safe=""),
    "percent-lower": lambda s: re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), quote(s, safe="")),
    "percent-plus": quote_plus,
    "percent-every-byte": lambda s: "".join(f"%{b:02x}" for b in s.encode()),
    "html-of-json": lambda s: html.escape(json.dumps(s)),
    "json-of-json": lambda s: json.dumps(json.dumps(s))[1:-1],
    "percent-of-percent": lambda s: quote(quote(s, safe=""), safe=""),
    "json-of-html": lambda s: json.dumps(html.escape(s))[1:-1],
}


def decodings(text: str) -> list[str]:
    """``text`` as the standard library decodes it, one and two layers deep."""
    def json_unescape(t: str) -> str:
        return re.sub(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.",
                      lambda m: json.loads(f'"{m[0]}"') if len(m[0]) > 2 or m[0][1] in '"\\/bfnrt' else m[0][1], t)

    one = [text, html.unescape(text), unquote(text), unquote_plus(text), json_unescape(text)]
    return one + [f(t) for t in one for f in (html.unescape, unquote, unquote_plus, json_unescape)]


def assert_hidden(*texts: str) -> None:
    for text in texts:
        for seen in decodings(text):
            assert CANARY not in seen and HIDDEN not in seen
            assert HIDDEN[:MIN_PREFIX] not in seen and CANARY[:MIN_PREFIX] not in seen, text


def echo_client(make_client: Callable[..., ApiClient], answer: Callable[[str], httpx.Response],
                events: list[str]) -> ApiClient:
    """A client that knows ``HIDDEN`` and whose service answers ``answer(what it was sent)``: the
    request body (where ``HIDDEN`` is) and the Authorization header (the canary)."""
    def handler(request: httpx.Request) -> httpx.Response:
        return answer(request.content.decode() + " " + request.headers["authorization"])

    client = make_client(Script().then(handler), on_event=events.append, sleep=no_sleep)
    client.hide(HIDDEN)
    return client


def failure(client: ApiClient) -> ProblemError:
    with pytest.raises(ProblemError) as info:
        ran(client, lambda c: c.put("/v2/integrations/I1", {"config": {"api_key": HIDDEN}}))
    return info.value


def shown(error: ProblemError) -> list[str]:
    return [str(error), repr(error), error.title, error.detail or "", error.type or "", *map(str, error.args)]


WHERE: dict[str, Callable[[str], httpx.Response]] = {
    "non-problem body": lambda text: httpx.Response(400, text=f"<html><body>rejected: {text}</body></html>"),
    "problem detail": lambda text: httpx.Response(
        422, content=json.dumps({"title": "Invalid", "detail": f"bad body {text}"}).encode(),
        headers={"content-type": "application/problem+json"}),
    "problem title and type": lambda text: httpx.Response(
        400, content=json.dumps({"title": f"Bad {text}", "type": f"https://errors.example/{text}"}).encode(),
        headers={"content-type": "application/problem+json"}),
    "location": lambda text: httpx.Response(302, headers={"location": f"https://elsewhere.example/?echo={text}"}),
}


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_echoed_secret_shows_in_no_error_or_event_whatever_its_encoding(
        where: str, encoding: str, make_client: Callable[..., ApiClient]) -> None:
    encode = ENCODINGS[encoding]
    if where == "location":  # a header is ASCII: what is not is percent-encoded after the encoding
        encode = (lambda e: lambda s: quote(e(s), safe="%&#;\\=+/'\"<>"))(encode)
    events: list[str] = []
    client = echo_client(make_client, lambda sent: WHERE[where](encode(sent)), events)

    error = failure(client)

    assert_hidden(*shown(error), *events)
    assert "(sensitive)" in str(error) + (error.type or "")


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_5xx_echo_is_redacted_from_the_retry_events_too(encoding: str, make_client: Callable[..., ApiClient]) -> None:
    events: list[str] = []
    client = echo_client(make_client, lambda sent: httpx.Response(503, text=ENCODINGS[encoding](sent)), events)
    client.max_retries = 2

    error = failure(client)

    assert_hidden(*shown(error), *events)


def cuts(encoded: str) -> list[str]:
    """Every beginning of ``encoded`` that shows at least ``MIN_PREFIX`` characters of ``HIDDEN``,
    each as the gateway cut it: mid-escape too."""
    return [encoded[:n] for n in range(1, len(encoded))
            if any(HIDDEN[:MIN_PREFIX] in seen for seen in decodings(encoded[:n]))]


TRAILERS = ["", "\n", '"}', "...</pre></body></html>", " [truncated]", "\u2026\"}", '\\"}"}']


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_echo_the_gateway_cut_short_shows_no_beginning_of_the_secret(
        encoding: str, make_client: Callable[..., ApiClient]) -> None:
    encoded = ENCODINGS[encoding](HIDDEN)
    pages = [f"<pre>{piece}{trailer}" for piece in cuts(encoded) for trailer in TRAILERS]
    assert len(pages) > len(TRAILERS)
    client = make_client(Script().then(*(httpx.Response(400, text=page) for page in pages)))
    client.hide(HIDDEN)

    for _ in pages:
        error = failure(client)
        assert_hidden(*shown(error))
        assert "(sensitive)" in (error.detail or "")


def test_a_long_beginning_followed_by_a_note_is_redacted_wherever_it_is(
        make_client: Callable[..., ApiClient]) -> None:
    page = f"echo: {json.dumps(HIDDEN)[1:22]} (and 40 more bytes), see the gateway's log"
    client = make_client(Script().then(httpx.Response(400, text=page)))
    client.hide(HIDDEN)

    error = failure(client)

    assert error.detail == "non-problem error body: echo: (sensitive) (and 40 more bytes), see the gateway's log"


# ---------------------------------------------------------------- what stays readable


@pytest.mark.parametrize(("text", "expected"), [
    ('{"detail": "key \\u0043ANARY-sk-7f3e9b1d2c4a\\/x refused"}', '{"detail": "key (sensitive)\\/x refused"}'),
    ("<p>key &#x43;ANARY-sk-7f3e9b1d2c4a &amp; more</p>", "<p>key (sensitive) &amp; more</p>"),
    ("https://x.example/?k=CANARY%2Dsk-7f3e9b1d2c4a&next=1", "https://x.example/?k=(sensitive)&next=1"),
    ("a CANARY-sk-7f3e9b1d2c4a b CANARY-sk-7f3e9b1d2c4a c", "a (sensitive) b (sensitive) c"),
    ("nothing to hide &amp; %41 \\u0041", "nothing to hide &amp; %41 \\u0041"),
    ("a word that starts the key: CANARY-sk, mid-text", "a word that starts the key: CANARY-sk, mid-text"),
])
def test_only_the_secret_is_replaced(text: str, expected: str) -> None:
    assert redact(text, [CANARY]) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("rejected: CANARY-sk-7f", "rejected: (sensitive)"),
    ("rejected: CANARY-sk-7f3e9b1d%3", "rejected: (sensitive)"),
    ("<pre>CANARY\\u002dsk\\u00", "<pre>(sensitive)"),
    ("rejected: CANAR", "rejected: CANAR"),  # shorter than MIN_PREFIX
    ("rejected: CANARY-sk-7f and then more words", "rejected: CANARY-sk-7f and then more words"),
])
def test_a_cut_text_loses_what_it_ends_with_of_a_secret(text: str, expected: str) -> None:
    assert redact(text, [CANARY], cut=True) == expected


def test_a_space_and_a_plus_are_the_same_to_the_search() -> None:
    assert redact("q=a+secret+value&r=a%20secret%20value", ["a secret value"]) == "q=(sensitive)&r=(sensitive)"
    assert redact("q=a%2Bb%2Bcdef g=a+b+cdef", ["a+b+cdef"]) == "q=(sensitive) g=(sensitive)"


def test_a_literal_escape_in_a_secret_is_found_raw_and_encoded() -> None:
    secret = "a%41b&amp;c\\nd-0e1f"
    for form in (secret, json.dumps(secret)[1:-1], html.escape(secret), quote(secret, safe="")):
        assert redact(f"[{form}]", [secret]) == "[(sensitive)]", form


def test_a_secret_outside_the_basic_plane_is_found_in_its_json_surrogate_escapes() -> None:
    """A gateway that escapes what it echoes as ASCII JSON writes each character beyond U+FFFF as
    two ``\\u`` escapes (a surrogate pair): they are one character of the secret."""
    secret = "\U0001F511\U0001F600-key-\U00010348\U0010FFFD"  # a key, a smile, a Gothic letter, the last plane's
    for upper in (False, True):
        echoed = f'{{"detail": "bad {uhex(secret, upper)} here"}}'
        assert "\\ud83d" in echoed.lower()
        assert redact(echoed, [secret]) == '{"detail": "bad (sensitive) here"}', echoed


KEY = "sk-live-1234567890abcdef"  # longer than LONG_PREFIX (16)


@pytest.mark.parametrize(("text", "expected"), [
    (KEY + " refused", "(sensitive) refused"),  # the secret at the very start of the text
    ("s\\u006b-live-1234567890abcdef refused", "(sensitive) refused"),  # escaped from its second character
    ("&nosuch; key &#x73;k-live-1234567890abcdef", "&nosuch; key (sensitive)"),  # an inert entity before it
    (KEY[:16] + " and then more words", "(sensitive) and then more words"),  # exactly LONG_PREFIX of it
    (f"{KEY} a {KEY} b {KEY}", "(sensitive) a (sensitive) b (sensitive)"),  # every time, the middle one too
])
def test_the_secret_is_found_at_the_start_after_inert_escapes_and_by_its_long_beginning(
        text: str, expected: str) -> None:
    assert redact(text, [KEY]) == expected


def test_overlapping_and_self_repeating_secrets_are_hidden_whole() -> None:
    runs = "a" * 20 + "Z"  # its beginning found again one character on
    assert redact("a" + runs, [runs]) == "(sensitive)"
    repeats = "abcabcabcabc-XYZ-0123456789"  # its first six characters again three on
    assert redact("rejected: " + repeats[:12], [repeats], cut=True) == "rejected: (sensitive)"


def test_a_cut_beginning_is_hidden_only_when_asked() -> None:
    """Without ``cut`` (a whole message, not one a gateway cut short) a short beginning is no secret."""
    assert redact("rejected: " + KEY[:8], [KEY]) == "rejected: " + KEY[:8]
    assert redact("rejected: " + KEY[:8], [KEY], cut=True) == "rejected: (sensitive)"


def test_a_text_that_is_only_a_cut_beginning_is_hidden() -> None:
    assert redact(KEY[:8], [KEY], cut=True) == "(sensitive)"


def test_a_line_break_and_a_latin_1_byte_are_read_as_their_escapes_mean() -> None:
    assert redact('{"detail": "bad line1\\nline2-secret"}', ["line1\nline2-secret"]) == '{"detail": "bad (sensitive)"}'
    assert redact("k=d%E9-secret-value&x=1", ["d\u00e9-secret-value"]) == "k=(sensitive)&x=1"  # not UTF-8: Latin-1


def test_every_secret_is_searched_after_one_is_found_or_cut() -> None:
    assert redact("one sk-A-123456 two sk-B-654321", ["sk-A-123456", "sk-B-654321"]) == "one (sensitive) two (sensitive)"
    assert redact("A abcdef-123456-XYZ B abcdef-123456-XYZ", ["abcdef-123456-XYZ", "123456-XY"]) == (
        "A (sensitive) B (sensitive)")  # one secret inside the other, then both again
    assert redact("key SECOND-secret-value-99 then FIRSTsec", ["FIRSTsecret-abc", "SECOND-secret-value-99"],
                  cut=True) == "key (sensitive) then (sensitive)"


@pytest.mark.parametrize(("text", "secret", "expected"), [
    ("rejected: abcdefghi", "abcdefghij", "rejected: (sensitive)"),  # all but its last character
    ("rejected: abcdef", "abcdefghij", "rejected: (sensitive)"),  # exactly MIN_PREFIX characters
    ("x abcdef<b>", "abcdef<zzzz", "x (sensitive)"),  # six characters, then a tag (its "<" is the secret's too)
    ("x abcde<b>", "abcde<zzzz", "x abcde<b>"),  # five characters then a tag: too short a beginning
    ("rejected: " + KEY + '"}', KEY, 'rejected: (sensitive)"}'),  # the whole secret: what follows stays
    ("rejected: " + KEY[:8] + " " * 200, KEY, "rejected: (sensitive)"),  # _TRAILER characters of debris after it
    ("x <bbbbbQ <bbbbb<bbbbb>", "<bbbbbZZ", "x <bbbbbQ (sensitive)"),  # a secret like a tag, twice: from the first
    ("rejected: aaaaaaa", "aaaaaaXYZ", "rejected: a(sensitive)"),  # its beginning found again one character on
])
def test_a_cut_beginning_is_as_long_as_the_text_shows_and_what_follows_is_judged_whole(
        text: str, secret: str, expected: str) -> None:
    assert redact(text, [secret], cut=True) == expected
