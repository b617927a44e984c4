"""An ``http://`` loopback endpoint (the emulator, the demo) never speaks TLS: no CA bundle is loaded
for it (50 ms of CPU a command), and the context it gets trusts nothing, so any TLS would fail closed.
Any other endpoint keeps httpx's verifying default."""

from __future__ import annotations

import ssl

from reconciler.client.http import build_http_client
from reconciler.client.slots import SlotTransports


def context(url: str) -> ssl.SSLContext:
    transport = build_http_client(url, "k")._transport  # a connection per request in flight: one context for all
    assert isinstance(transport, SlotTransports)
    contexts = {id(t._pool._ssl_context): t._pool._ssl_context for t in transport._all}  # type: ignore[attr-defined]
    assert len(contexts) == 1
    found: ssl.SSLContext = next(iter(contexts.values()))
    return found


def test_an_http_loopback_endpoint_loads_no_ca_bundle_and_trusts_nothing() -> None:
    plain = context("http://127.0.0.1:9")
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert plain.verify_mode == ssl.CERT_REQUIRED and plain.check_hostname


def test_a_tls_or_remote_endpoint_keeps_the_ca_bundle() -> None:
    assert context("https://127.0.0.1:9").cert_store_stats()["x509_ca"] > 0
    assert context("http://gw.example").cert_store_stats()["x509_ca"] > 0
