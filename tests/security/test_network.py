"""Findings 6 and 7 over real loopback sockets: a proxy from the environment never sees a request to
a loopback endpoint (the key would travel in clear text), and ``--notify`` URLs are checked at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.emulator.middleware import request_counts
from tests.e2e.conftest import ENV
from tests.security.conftest import Collector

PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner(env={**ENV, "RECONCILER_BASE_URL": None, "RECONCILER_NOTIFY_URL": None, **(env or {})}).invoke(
        main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_from_the_environment_never_sees_a_loopback_endpoint(
        server: tuple[str, Any], collector: Collector, tree: Path, variable: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, collector.url)

    result = run("plan", str(tree), "--base-url", server[0])

    assert result.exit_code == 0, result.output
    assert collector.requests == []  # the "proxy" received nothing: no key in clear text
    assert request_counts(server[1]).get("GET /v2/integrations")  # the emulator was read directly


def test_a_notify_url_read_from_a_secret_file_with_its_newline_delivers(
        server: tuple[str, Any], collector: Collector, tree: Path) -> None:
    """A URL from a mounted secret file ends with a newline: stripped, not a traceback."""
    hook = f"{collector.url}/hooks/T000/B000/secret-token-4b1c\n"

    result = run("watch", str(tree), "--once", "--base-url", server[0], env={"RECONCILER_NOTIFY_URL": hook})

    assert result.exit_code == 2, result.output  # drift found (an empty account), reported
    assert [(r["method"], r["path"]) for r in collector.requests] == [("POST", "/hooks/T000/B000/secret-token-4b1c")]
    assert "secret-token" not in result.output


def test_a_loopback_notify_url_never_goes_through_a_proxy(
        server: tuple[str, Any], collector: Collector, proxy: Collector, tree: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The webhook's token would cross the proxy in clear text."""
    for name in (*PROXY_VARIABLES, "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("ALL_PROXY", proxy.url)

    result = run("watch", str(tree), "--once", "--base-url", server[0],
                 "--notify", f"{collector.url}/hooks/secret-token-4b1c")

    assert result.exit_code == 2, result.output
    assert proxy.requests == []
    assert [(r["method"], r["path"]) for r in collector.requests] == [("POST", "/hooks/secret-token-4b1c")]


@pytest.mark.parametrize("url, message", [
    ("https://" + "a" * 64 + ".example.com/secret-token-4b1c", "a DNS label of more than 63 characters"),
    ("https://" + ("a" * 60 + ".") * 5 + "com/secret-token-4b1c", "a host name of more than 253 characters"),
    ("http://hooks.example.com/services/secret-token-4b1c", "plain http:// is refused except to a loopback"),
    ("ftp://127.0.0.1/secret-token-4b1c", "expected an absolute https:// URL"),
    ("hooks.example.com/secret-token-4b1c", "expected an absolute https:// URL"),
    ("https://hooks.example.com/secret token-4b1c", "whitespace or control characters"),
    ("https://[::1/secret-token-4b1c", "not a valid URL"),
])
def test_a_bad_notify_url_is_refused_at_start_without_showing_it(
        server: tuple[str, Any], collector: Collector, tree: Path, url: str, message: str) -> None:
    result = run("watch", str(tree), "--once", "--base-url", server[0], "--notify", url)

    assert result.exit_code == 1 and result.output.startswith("Error: --notify")
    assert message in result.output and "secret-token" not in result.output
    assert request_counts(server[1]) == {}  # refused before the first cycle
