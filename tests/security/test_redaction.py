"""Finding 2: a gateway in front of the API that echoes the request body in a non-problem error
page must not make apply print a secret: not raw, not JSON-escaped (newline, quote, backslash), not
the beginning a cut leaves; in the apply report and in the --log-format json events."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.cli import main
from tests.conftest import running_emulator
from tests.e2e.conftest import ENV

SECRET = 'canary"quote\nnew line\\backslash-5e0d'
PIECES = ("canary", "quote", "new line", "backslash", "5e0d")


def echoing_gateway(style: str, pad: int) -> Callable[[ASGIApp], ASGIApp]:
    """A gateway that answers every write 400 with a non-problem body echoing what it was sent:
    ``raw`` the request body as it came (the secret JSON-escaped), ``value`` the decoded api_key as
    it is (a real newline) in HTML, ``escaped`` HTML-escaped; ``pad`` characters first, so the
    client's 200-character excerpt cuts where the test wants."""

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
            api_key = (json.loads(text).get("config") or {}).get("api_key")
            if style == "raw":
                page, kind = "x" * pad + text, "text/plain"
            elif style == "value":
                page, kind = f"<html><body>{'x' * pad}{api_key}</body></html>", "text/html"
            else:
                page, kind = f"<html><body>{'x' * pad}{html.escape(str(api_key))}</body></html>", "text/html"
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", kind.encode())]})
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
    assert [p for p in PIECES if p in text] == []


@pytest.fixture(params=[("raw", 10), ("raw", 150), ("value", 160), ("escaped", 150)],
                ids=["json-body", "json-body-cut", "html-raw-value-cut", "html-escaped-cut"])
def gateway(request: pytest.FixtureRequest) -> Iterator[str]:
    style, pad = request.param
    with running_emulator(wrap=echoing_gateway(style, pad)) as (url, _):
        yield url


def test_an_echoed_secret_never_shows_in_the_apply_report(gateway: str, tree: Path) -> None:
    result = run_apply(gateway, tree)

    assert result.exit_code == 1
    assert "non-problem error body" in result.output and "(sensitive" in result.output  # the plan shows the reference
    assert_no_secret(result.output)


def test_an_echoed_secret_never_shows_in_the_json_logs(gateway: str, tree: Path) -> None:
    result = run_apply(gateway, tree, "--log-format", "json", "-v")

    assert result.exit_code == 1
    events: list[dict[str, Any]] = [json.loads(line) for line in result.stderr.splitlines() if line.strip()]
    failed = [e for e in events if e.get("event") == "resource" and e.get("outcome") == "failed"]
    assert failed and "non-problem error body" in failed[0]["detail"]
    assert_no_secret(result.stderr)
    assert_no_secret(result.stdout)
