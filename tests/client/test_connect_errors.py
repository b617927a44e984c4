"""An unreachable service is named with its host and the cause (DNS, refused, TLS, timeout), fails
within seconds rather than after a minute of silent retries, and its retries are reported as they
happen; --timeout changes the connect timeout."""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner
from clienthelpers import no_sleep

from reconciler.cli.main import main
from reconciler.client.http import (
    DEFAULT_CONNECT_TIMEOUT,
    MAX_CONNECT_RETRIES,
    ApiClient,
    connect_cause,
    open_client,
)
from reconciler.client.settings import Endpoint
from reconciler.errors import TransportError

URL = httpx.URL("https://api.test.example:8443")
DOC = ("kind: Prompt\nname: p\nspace: research\nversion:\n  commit_message: c\n  provider: VENDOR_A\n"
       "  messages: [{role: user, content: hi}]\n")


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port where nothing listens, held for the test's length: bound but never listening,
    so a connect to it is refused, and no other test's server (the suite runs two at once) can take
    it meanwhile, as it could take a port closed before use."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def chained(outer: Exception, inner: BaseException) -> Exception:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(("error", "words", "final"), [
    (chained(httpx.ConnectError("boom"), socket.gaierror(-2, "Name or service not known")),
     "DNS lookup failed (the host name does not resolve)", True),
    (chained(httpx.ConnectError("boom"), ConnectionRefusedError(111, "Connection refused")),
     "connection refused (nothing listens there)", False),
    (chained(httpx.ConnectError("boom"), ssl.SSLCertVerificationError(1, "certificate verify failed")),
     "TLS failed", True),
    (httpx.ConnectTimeout("timed out"), "timed out connecting (no answer; --timeout SECONDS waits longer)", False),
], ids=["dns", "refused", "tls", "timeout"])
def test_each_connect_failure_is_named_with_the_host_and_its_cause(error: Exception, words: str,
                                                                    final: bool) -> None:
    message, is_final = connect_cause(error, URL)
    assert message.startswith("cannot reach api.test.example:8443: ")
    assert words in message
    assert is_final is final


def test_a_tls_failure_says_how_to_trust_a_private_ca() -> None:
    error = chained(httpx.ConnectError("x"), ssl.SSLCertVerificationError(1, "certificate verify failed"))
    assert "--ca-file FILE (or set SSL_CERT_FILE)" in connect_cause(error, URL)[0]


def test_a_refused_port_fails_fast_with_its_retries_reported() -> None:
    events: list[str] = []
    with refused_port() as port:
        client = open_client(Endpoint(base_url=f"http://127.0.0.1:{port}", emulator_db=None), "k",
                             on_event=events.append)
        with client, pytest.raises(TransportError) as info:
            client.run(client.get("/v2/spaces"))
    assert f"cannot reach 127.0.0.1:{port}: connection refused" in str(info.value)
    assert events == [f"cannot reach 127.0.0.1:{port}: connection refused (nothing listens there): retrying for "
                      "up to 5s"]  # one line for the outage, however many retries
    assert client.stats.snapshot().attempts == 1 + MAX_CONNECT_RETRIES


def test_a_host_that_does_not_resolve_is_not_retried() -> None:
    events: list[str] = []
    client = open_client(Endpoint(base_url="https://no-such-host.invalid", emulator_db=None), "k",
                         on_event=events.append)
    with client, pytest.raises(TransportError) as info:
        client.run(client.get("/v2/spaces"))
    assert "cannot reach no-such-host.invalid: DNS lookup failed" in str(info.value)
    assert events == [] and client.stats.snapshot().attempts == 1


def test_a_connect_timeout_is_not_retried_past_the_connect_budget() -> None:
    clock = [0.0]

    def handler(request: httpx.Request) -> httpx.Response:
        clock[0] += DEFAULT_CONNECT_TIMEOUT  # the attempt waited out the whole connect timeout
        raise httpx.ConnectTimeout("timed out", request=request)

    http = httpx.AsyncClient(base_url="https://slow.example", transport=httpx.MockTransport(handler))
    client = ApiClient(http, clock=lambda: clock[0], sleep=no_sleep)
    with pytest.raises(TransportError, match="cannot reach slow.example: timed out connecting"):
        client.run(client.get("/v2/spaces"))
    assert client.stats.snapshot().attempts == 1


def test_the_timeout_option_sets_the_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float | None] = []
    real = open_client

    def spy(*args: object, **kwargs: object) -> ApiClient:
        client = real(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(client.timeout.connect)
        raise SystemExit(0)

    import reconciler.workflow

    monkeypatch.setattr(reconciler.workflow, "open_client", spy)
    monkeypatch.setenv("RECONCILER_API_KEY", "k")
    for extra, expected in (([], DEFAULT_CONNECT_TIMEOUT), (["--timeout", "1.5"], 1.5)):
        CliRunner().invoke(main, ["drift", "-", "--base-url", "https://x.example", *extra],
                           input=DOC)
        assert seen.pop() == expected


def test_retries_show_on_stderr_without_verbose_and_not_with_quiet() -> None:
    with refused_port() as port:
        args = ["drift", "-", "--base-url", f"http://127.0.0.1:{port}"]
        shown = CliRunner().invoke(main, args, input=DOC, env={"RECONCILER_API_KEY": "k"})
        quiet = CliRunner().invoke(main, [*args, "--quiet"], input=DOC, env={"RECONCILER_API_KEY": "k"})
    assert shown.exit_code == 1, (shown.output, shown.exception)
    # one line for the refused host, not one per read in flight (several start at once), then the error
    assert shown.stderr.splitlines()[:-1] == [f"cannot reach 127.0.0.1:{port}: connection refused (nothing listens "
                                              "there): retrying for up to 5s"]
    assert shown.stderr.splitlines()[-1].startswith("Error: GET /v2/")
    assert quiet.exit_code == 1, (quiet.output, quiet.exception)
    assert "retrying" not in quiet.stderr and "cannot reach" in quiet.stderr
