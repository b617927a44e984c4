"""The reliability suite's machinery, shared with the soak (``python -m tests.soak``).

- ``serve``: the emulator behind uvicorn on a free loopback port, wrapped in a ``Recorder`` that
  keeps every exchange as it crossed the socket (request line, headers, body; status, headers and
  body of the answer, or ``None`` for a dropped connection). That is how the suite counts faults
  injected and requests sent, and proves no request or answer carries a secret it should not.
- ``run_cli``: the CLI in this process with click's runner (stdout and stderr apart), and
  ``run_cli_process``: the CLI as a separate process (two applies at once need two processes).
- ``live_names``: every kind listed through the API (with ``X-Emulator-No-Faults``), so counts and
  duplicates are checked against what the service holds, not against what the client believes.
- ``ApplyOutput``: the end report of an apply, parsed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner, Result
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reconciler.cli.main import main
from reconciler.client.http import ApiClient
from reconciler.emulator.core import Emulator
from reconciler.emulator.middleware import NO_FAULTS_HEADER
from tests.conftest import running_emulator

ROOT = Path(__file__).resolve().parents[2]
#: the fault mix the suite must survive
FAULTS = "error_rate=0.1,reset_rate=0.02,commit_then_fail_rate=0.05"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


# ---------------------------------------------------------------- recording what crossed the socket


@dataclass
class Exchange:
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    status: int | None = None  # None: the connection was dropped (an injected reset)
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytes = b""

    @property
    def injected(self) -> str | None:
        """Which fault the emulator injected into this exchange, if any."""
        if self.status is None:
            return "reset"
        if self.status >= 500 and b"injected fault" in self.response_body:
            return "commit_then_fail" if b"was processed" in self.response_body else "error"
        return None

    def request_text(self) -> str:
        """Everything the request carried, as text (header values and body included)."""
        head = "\n".join(f"{k}: {v}" for k, v in self.headers)
        return f"{self.method} {self.path}?{self.query}\n{head}\n\n{self.body.decode('utf-8', 'replace')}"

    def response_text(self) -> str:
        head = "\n".join(f"{k}: {v}" for k, v in self.response_headers)
        return f"{self.status}\n{head}\n\n{self.response_body.decode('utf-8', 'replace')}"


class _SendTap:
    """Wraps uvicorn's ``send`` to see the answer. The emulator resets a connection by reaching the
    server's transport through ``send.__self__`` (``middleware.drop_connection``), so every other
    attribute is delegated to the server's own request cycle."""

    def __init__(self, send: Send, exchange: Exchange) -> None:
        self._inner = send
        self._exchange = exchange

    def __getattr__(self, name: str) -> Any:
        return getattr(getattr(self._inner, "__self__"), name)  # noqa: B009 (Send declares no __self__)

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._exchange.status = int(message["status"])
            self._exchange.response_headers = [(k.decode("latin-1"), v.decode("latin-1"))
                                               for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            self._exchange.response_body += bytes(message.get("body", b""))
        await self._inner(message)


class Recorder:
    """Outermost ASGI layer: keeps every HTTP exchange (thread-safe list)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(str(scope["method"]), str(scope["path"]),
                            bytes(scope.get("query_string", b"")).decode("latin-1"),
                            [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])])
        with self._lock:
            self.exchanges.append(exchange)

        async def tapped_receive() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.body += bytes(message.get("body", b""))
            return message

        await self.app(scope, tapped_receive, _SendTap(send, exchange).send)

    def api(self) -> list[Exchange]:
        """The ``/v2`` exchanges (the emulator's own ``/_emulator`` endpoints left out)."""
        with self._lock:
            return [e for e in self.exchanges if e.path.startswith("/v2")]

    def clear(self) -> None:
        with self._lock:
            self.exchanges.clear()

    def figures(self) -> dict[str, int]:
        """Requests sent, by outcome: what the reliability table reports."""
        api = self.api()
        injected = Counter(e.injected for e in api if e.injected)
        return {
            "requests": len(api),
            "writes": sum(e.method in WRITES for e in api),
            "throttled": sum(e.status == 429 for e in api),
            "errors": injected["error"],
            "resets": injected["reset"],
            "commit_then_fail": injected["commit_then_fail"],
            "faults": sum(injected.values()),
            "real_5xx": sum(1 for e in api if e.status is not None and e.status >= 500 and not e.injected),
        }


@dataclass
class Served:
    url: str
    emu: Emulator
    recorder: Recorder

    def stats(self) -> dict[str, int]:
        counts: dict[str, int] = httpx.get(f"{self.url}/_emulator/stats", headers={"Authorization": f"Bearer {self.emu.settings.admin_key}"}).json()["requests"]
        return counts

    def reset_stats(self) -> None:
        httpx.post(f"{self.url}/_emulator/reset-stats", headers={"Authorization": f"Bearer {self.emu.settings.admin_key}"}).raise_for_status()
        self.recorder.clear()


@contextmanager
def serve(**overrides: Any) -> Iterator[Served]:
    """A fresh emulator (``EmulatorSettings`` fields as keywords) behind a ``Recorder`` on a free port."""
    recorders: list[Recorder] = []

    def record(app: Any) -> Recorder:
        recorders.append(Recorder(app))
        return recorders[0]

    with running_emulator(wrap=record, log_level="critical", **overrides) as (url, emu):
        yield Served(url, emu, recorders[0])


# ---------------------------------------------------------------- driving the CLI


def run_cli(args: list[str], env: Mapping[str, str], *, catch: bool = False, stdin: str | None = None) -> Result:
    """The CLI in-process; ``env`` is set for the run only. With ``catch`` an unexpected exception
    becomes ``result.exception`` (so a test can inspect its traceback) instead of propagating."""
    return CliRunner().invoke(main, args, env=dict(env), catch_exceptions=catch, input=stdin)


def cli_process(args: list[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    """The CLI as its own process (``python -m reconciler``), started and not waited for, with
    SIGINT at its default, as in a terminal: a suite started in the background by a shell (``make
    test &``) runs with SIGINT ignored, which a child inherits, and Python then installs no
    KeyboardInterrupt handler, so a test's Ctrl-C would be lost."""
    full_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "reconciler", *args], env=full_env, cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_sigint_default)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# ---------------------------------------------------------------- reading the service


def admin_client(url: str, key: str) -> ApiClient:
    """An API client that is never faulted (setup and checks must not be disturbed)."""
    http = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {key}", NO_FAULTS_HEADER: "1"},
                             timeout=30)
    return ApiClient(http, parallelism=4)


def live_names(url: str, key: str) -> dict[str, list[str]]:
    """Names of every resource the service holds, by kind key (``Integration/LLM``,
    ``Integration/AGENT``, ``Prompt``, ``Dataset``, ``Evaluator``, ``ResourceRestriction`` for
    projects and dashboards, ``PromptRestriction`` as prompt names). Duplicates are kept."""
    with admin_client(url, key) as api:
        out: dict[str, list[str]] = {}
        for type_ in ("LLM", "AGENT"):
            out[f"Integration/{type_}"] = [i["name"] for i in api.run(api.paginate("/v2/integrations", "integrations",
                                                                           {"type": type_}))]
        spaces = api.run(api.paginate("/v2/spaces", "spaces"))
        prompt_names: dict[str, str] = {}
        for kind, path, key_ in (("Prompt", "/v2/prompts", "prompts"), ("Dataset", "/v2/datasets", "datasets"),
                                 ("Evaluator", "/v2/evaluators", "evaluators")):
            out[kind] = []
            for space in spaces:
                for item in api.run(api.paginate(path, key_, {"space_id": space["id"]})):
                    out[kind].append(item["name"])
                    if kind == "Prompt":
                        prompt_names[item["id"]] = item["name"]
        restrictions = api.run(api.paginate("/v2/resource-restrictions", "resource_restrictions"))
        out["ResourceRestriction"] = [r["resource_id"] for r in restrictions if r["resource_type"] != "PROMPT"]
        out["PromptRestriction"] = [prompt_names.get(r["resource_id"], r["resource_id"])
                                    for r in restrictions if r["resource_type"] == "PROMPT"]
        return {k: sorted(v) for k, v in out.items()}


def duplicates(names: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Kinds holding a name more than once."""
    out = {kind: sorted(n for n, c in Counter(items).items() if c > 1) for kind, items in names.items()}
    return {k: v for k, v in out.items() if v}


# ---------------------------------------------------------------- reading an apply's report

_SECTION = re.compile(r"^(Applied|Failed|Skipped): (\d+)$")


@dataclass
class ApplyOutput:
    """The end report of ``apply`` (``Applied: N`` / ``Failed: N`` / ``Skipped: N``, each followed
    by one indented line per call) and the addresses it names."""

    sections: dict[str, list[str]]
    counts: dict[str, int]

    @classmethod
    def parse(cls, stdout: str) -> ApplyOutput:
        sections: dict[str, list[str]] = {}
        counts: dict[str, int] = {}
        current: str | None = None
        for line in stdout.splitlines():
            m = _SECTION.match(line)
            if m:
                current = m.group(1)
                counts[current] = int(m.group(2))
                sections[current] = []
            elif current and line.startswith("  "):
                sections[current].append(line.strip())
            else:
                current = None
        return cls(sections, counts)

    def addresses(self, section: str) -> set[str]:
        """``Kind/name`` (or ``Kind/space/name``) of each listed call."""
        return {line.split(" ", 1)[0] for line in self.sections.get(section, [])}

    @property
    def consistent(self) -> bool:
        """Every count matches the lines listed under it (applied calls are listed as they happen,
        so the end report lists them only on a terminal)."""
        return all(len(self.sections[s]) == n for s, n in self.counts.items() if s != "Applied")
