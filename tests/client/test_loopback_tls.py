"""TLS settings of the client ``build_http_client`` makes: an ``http://`` endpoint (the emulator, the
demo) never speaks TLS, so no CA bundle is loaded for it (50 ms of CPU a command); an ``https://``
endpoint verifies against the CA bundle (or ``--ca-file``). A proxy from the environment gets
httpx's own client, which verifies by default."""

from __future__ import annotations

import ssl

import httpx
import pytest

from reconciler.client.http import build_http_client
from reconciler.client.lean import LeanClient


def lean(url: str) -> LeanClient:
    client = build_http_client(url, "k")
    assert isinstance(client, LeanClient)
    return client


@pytest.mark.parametrize("url", ["http://127.0.0.1:9", "http://[::1]:9", "http://gw.example"])
def test_an_http_endpoint_loads_no_ca_bundle(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert lean(url).ssl_context is None


@pytest.mark.parametrize("url", ["https://127.0.0.1:9", "https://gw.example"])
def test_an_https_endpoint_verifies_against_the_ca_bundle(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    context = lean(url).ssl_context
    assert context is not None and context.cert_store_stats()["x509_ca"] > 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_a_proxy_from_the_environment_gets_httpx_for_a_remote_endpoint_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert isinstance(build_http_client("https://gw.example", "k"), httpx.AsyncClient)
    assert isinstance(build_http_client("https://127.0.0.1:9", "k"), LeanClient)  # loopback: never through a proxy
