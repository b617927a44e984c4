"""Finding 2: a gateway in front of the API that echoes the request body in
a non-problem error page must not make apply print a secret: not raw, not JSON-escaped (newline,
quote, backslash; upper-case ``\\uXXXX`` and ``\\/`` too), not HTML character references, not
percent-encoded, not in a redirect's ``Location``, not the beginning a cut leaves (ours or the
gateway's own); in the apply report and in the --log-format json events."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus

import pytest
from click.testing import CliRunner, Result
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.cli.main import main
from tests.conftest import running_emulator
from tests.e2e.conftest import ENV

SECRET = 'canary"quote\nnew line\\backslash-5e0d'
PIECES = ("canary", "quote", "new line", "backslash", "5e0d")


def echoing_gateway(style: str, pad: int) -> Callable[[ASGIApp], ASGIApp]:
    """A gateway that answers every write 400 with a non-problem body echoing what it was sent:
    ``raw`` the request body as it came (the secret JSON-escaped), ``value`` the decoded api_key as
    it is (a real newline) in HTML, ``escaped`` HTML-escaped, ``upper`` the body with every
    character of the key a ``\\uXXXX`` in upper-case hex and ``/`` as ``\\/``, ``entities`` the key
    as decimal character references, ``percent`` percent-encoded, ``cut`` the body cut short by the
    gateway inside the key and marked ``[truncated]``; ``location`` answers 302 to a URL carrying
    the key percent-encoded. ``pad`` characters first, so the client's 200-character excerpt cuts
    where the test wants."""

    def wrap(app: ASGIApp) -> ASGIApp:
        async def gateway(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http" or scope["method"] == "GET":
                await app(scope, receive, send)
                return
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            text = body.decode()
            api_key = str((json.loads(text).get("config") or {}).get("api_key"))
            status, headers = 400, []
            if style == "raw":
                page, kind = "x" * pad + text, "text/plain"
            elif style == "value":
                page, kind = f"<html><body>{'x' * pad}{api_key}</body></html>", "text/html"
            elif style == "escaped":
                page, kind = f"<html><body>{'x' * pad}{html.escape(api_key)}</body></html>", "text/html"
            elif style == "upper":
                every = "".join(f"\\u{ord(c):04X}" for c in api_key)
                page, kind = "x" * pad + text.replace(json.dumps(api_key), f'"{every}"').replace("/", "\\/"), "text/plain"
            elif style == "entities":
                page, kind = f"<p>{'x' * pad}{''.join(f'&#{ord(c)};' for c in api_key)}</p>", "text/html"
            elif style == "percent":
                page, kind = f"bad form: key={quote(api_key, safe='')}&x=1", "text/plain"
            elif style == "cut":
                page, kind = "x" * pad + text[:text.index(json.dumps(api_key)) + 14] + "...[truncated]", "text/plain"
            else:
                page, kind, status = "", "text/plain", 302
                headers = [(b"location", f"https://elsewhere.example/?echo={quote(api_key, safe='')}".encode())]
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", kind.encode()), *headers]})
            await send({"type": "http.response.body", "body": page.encode()})

        return gateway

    return wrap


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """One LLM integration whose key is the canary."""
    root = tmp_path / "manifests"
    root.mkdir()
    (root / "llm.yaml").write_text("kind: Integration\nname: vendor-a-prod\ntype: LLM\nscopings: []\n"
                                   "config: {provider: VENDOR_A, api_key: {env: VENDOR_A_KEY}}\n")
    return root


def run_apply(url: str, tree: Path, *extra: str) -> Result:
    env = {**ENV, "VENDOR_A_KEY": SECRET, "RECONCILER_BASE_URL": None, "RECONCILER_LOG_FORMAT": None}
    return CliRunner(env=env).invoke(main, ["apply", str(tree), "--auto-approve", "--base-url", url, *extra],
                                     catch_exceptions=False)


def assert_no_secret(text: str) -> None:
    """No piece of the secret in ``text``, nor in it decoded (JSON escapes, HTML references,
    percent-encoding) by the standard library."""
    unescaped = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text).replace("\\/", "/")
    for seen in (text, html.unescape(text), unquote_plus(text), unescaped):
        assert [p for p in PIECES if p in seen] == []


STYLES = {"json-body": ("raw", 10), "json-body-cut": ("raw", 150), "html-raw-value-cut": ("value", 160),
          "html-escaped-cut": ("escaped", 150), "json-upper-hex": ("upper", 10), "json-upper-hex-cut": ("upper", 150),
          "html-decimal": ("entities", 10), "percent": ("percent", 0), "cut-by-the-gateway": ("cut", 10),
          "location": ("location", 0)}


@pytest.fixture(params=list(STYLES.values()), ids=list(STYLES))
def gateway(request: pytest.FixtureRequest) -> Iterator[str]:
    style, pad = request.param
    with running_emulator(wrap=echoing_gateway(style, pad)) as (url, _):
        yield url


def test_an_echoed_secret_never_shows_in_the_apply_report(gateway: str, tree: Path) -> None:
    result = run_apply(gateway, tree)

    assert result.exit_code == 1
    assert "non-problem error body" in result.output or "unexpected redirect to" in result.output
    assert "(sensitive" in result.output  # the plan shows the reference
    assert_no_secret(result.output)


def test_an_echoed_secret_never_shows_in_the_json_logs(gateway: str, tree: Path) -> None:
    result = run_apply(gateway, tree, "--log-format", "json", "-v")

    assert result.exit_code == 1
    events: list[dict[str, Any]] = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    failed = [e for e in events if e.get("event") == "resource" and e.get("outcome") == "failed"]
    assert failed and ("non-problem error body" in failed[0]["detail"] or "redirect" in failed[0]["detail"])
    assert_no_secret(result.stderr)
    assert_no_secret(result.stdout)
