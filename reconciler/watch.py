"""``reconciler watch``: continuous reconciliation.

Every ``interval`` (jittered by ±10%, so many watchers do not beat together) one *cycle*:

1. With ``git_pull``: ``git pull --ff-only`` in each git work tree holding a PATH. A failed pull is
   reported (``git_pull`` event) and the cycle goes on with the files as they are.
2. Reload the manifests. Loading is all or nothing (``workflow.load`` returns a whole, validated
   ``ManifestSet`` or raises), and a tree whose files change while it is read is not used either;
   either way the cycle keeps the **last good desired state**, reports the error and raises
   ``reconciler_manifest_errors_total`` / ``reconciler_manifest_error``. Before any good load there is
   no desired state: the cycle only reports (and ``/readyz`` stays 503).
3. Plan against live state (``workflow.plan_against``), set the resource gauges, report.
4. With ``apply`` and a non-empty plan: ``workflow.apply_and_confirm``, the step ``apply`` runs,
   under the same guards (a replacement only with ``--allow-replace``, deletes of undeclared
   resources only with ``--prune`` and inside the tree's ownership, protected resources kept, the
   secrets it sends resolved before anything is sent: ``workflow.check_plan_secrets``): execute,
   then re-read what it touched and plan again.

A cycle that fails on the API (or on a plan the guards refuse) counts as a failure: the next one
comes after an exponential backoff (base ``min(interval, 30s)``, doubling, capped at ``max_backoff``,
equal jitter), and the first success resets it. A manifest error is not an API failure: the cycle
still reconciles the last good state, and the schedule stays.

SIGTERM or SIGINT: no new cycle and no new call starts; during an apply the calls in flight finish
(the executor asks the stop flag before each call: the rest are reported as not started), the
report is printed, and the process exits 0. The first signal puts back the handlers the process
had: a second SIGTERM ends it at once (the signal's default action), a second Ctrl-C is Python's
``KeyboardInterrupt``.

``--notify URL``: a JSON ``POST`` (Slack-compatible: it has ``text``) when drift appears (a resource
drifted that was not drifted at the previous cycle) and when it is healed (nothing drifted any more,
after a notice of drift); never on every cycle. The URL is a secret (a webhook): it is never logged.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from http import HTTPStatus
from pathlib import Path
from typing import Any

import h11
import httpx
from prometheus_client.exposition import choose_encoder

from reconciler.apply.executor import APPLIED, ApplyReport
from reconciler.client.http import ApiClient
from reconciler.errors import ConfigError, ReconcilerError
from reconciler.model import ManifestSet
from reconciler.plan.model import Plan, PlanOptions
from reconciler.plan.render import render_text, summary_line
from reconciler.stopping import Stop
from reconciler.telemetry import ByEnvironment, Telemetry
from reconciler.workflow import (
    Connection,
    apply_and_confirm,
    check_plan_secrets,
    connect,
    load,
    plan_against,
    prepare_options,
    run_apply,
)

#: The first wait after a failed cycle is at most this (shorter when the interval is).
BACKOFF_BASE = 30.0
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_URL_CREDENTIALS = re.compile(r"(://)[^/@\s]+@")


def parse_duration(text: str) -> float:
    """``5m``, ``30s``, ``1h``, ``250ms``, ``1.5s`` or plain seconds; must be positive."""
    m = _DURATION_RE.match(text)
    if not m or float(m[1]) <= 0:
        raise ValueError(f"expected a positive duration such as 30s, 5m or 1h, got {text!r}")
    return float(m[1]) * _UNITS[m[2]]


def check_notify_url(raw: str) -> str:
    """The ``--notify`` URL, checked at start: surrounding whitespace (the trailing newline of a
    secret file) is stripped; then it must be an absolute ``https://`` URL, or ``http://`` to a
    loopback host (the URL is a secret: a webhook's token). A message shows the scheme and host only."""
    from reconciler.client.settings import is_loopback

    url = raw.strip()
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        raise ConfigError("--notify: not a valid URL (the URL is not shown: it is a secret)") from None
    where = f"{parsed.scheme}://{parsed.host}" if parsed.host else "it"
    if any(c.isspace() for c in url):  # an ASCII control character is already an invalid URL to httpx
        raise ConfigError(f"--notify {where}/...: the URL holds whitespace or control characters")
    if parsed.scheme not in ("https", "http") or not parsed.host:
        raise ConfigError("--notify: expected an absolute https:// URL (the URL is not shown: it is a secret)")
    labels = parsed.host.split(".")  # the empty label after a trailing dot is never too long
    if len(parsed.host) > 253 or any(len(label) > 63 for label in labels):  # else a UnicodeError when sent
        raise ConfigError(f"--notify {parsed.scheme}://...: the host is not a DNS name: "
                          + ("a host name of more than 253 characters" if len(parsed.host) > 253
                             else "a DNS label of more than 63 characters"))
    if parsed.scheme == "http" and not is_loopback(parsed.host):
        raise ConfigError(f"--notify {where}/...: plain http:// is refused except to a loopback address (the URL "
                          "is a secret and the notice is sent in clear text); use https://")
    return url


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (every interface) or ``[::1]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT (e.g. 0.0.0.0:9108), got {text!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass(frozen=True)
class WatchConfig:
    paths: tuple[str, ...]
    interval: float = 300.0
    apply: bool = False
    options: PlanOptions = PlanOptions()
    git_pull: bool = False
    metrics_addr: tuple[str, int] | None = None
    notify_url: str | None = None
    max_backoff: float = 600.0
    once: bool = False  # one cycle, then exit (its exit code says how it went)
    request_retries: int | None = None  # the client's per-request retries (None: its default)
    approvals: tuple[str, ...] = ()  # --approve RULE: policy rules whose require_approval is given


class Watcher:
    def __init__(self, config: WatchConfig, conn: Connection, telemetry: Telemetry, *,
                 out: Callable[[str], None], verbose: bool = False, rng: random.Random | None = None,
                 stop: threading.Event | None = None, pulls: bool = True) -> None:
        self.config = config
        self.conn = conn
        self.t = telemetry
        self.out = out if telemetry.log_format == "text" else (lambda line: None)
        self.verbose = verbose
        self.rng = rng or random.Random()
        self.stop = stop or threading.Event()  # given: one stop for the watchers of every environment
        self.signals = Stop(self.stop)  # SIGTERM and SIGINT set ``stop`` while ``run`` runs
        self.last_good: ManifestSet | None = None
        self.last_error: str | None = None
        self.cycles = 0
        self.failures = 0
        self.ready = False
        self.finished = False
        self.drift_open: set[str] = set()  # what the notices said drifted and not yet healed
        self.last_drifted: list[str] | None = None
        self.git_tops = self._find_git_tops() if config.git_pull else []
        self.pulls = pulls  # False: another pulls its git work trees (watch --all: once a round)

    # ------------------------------------------------------------------ the loop

    def run(self) -> int:
        """Loop until a signal (exit 0); with ``once``, one cycle (0 ok, 2 drift left, 1 failed)."""
        self.signals.install(signal.SIGTERM, signal.SIGINT)
        server = None if self.config.metrics_addr is None else HealthServer(
            self.config.metrics_addr, self.t, healthy=self.healthy, ready=lambda: self.ready).start()
        try:
            with self.connected() as client:
                self.started(server)
                while not self.stop.is_set():
                    ok, left = self.cycle(client)
                    if self.config.once:
                        return once_code([(ok, left)])
                    if self.stop.is_set():
                        break
                    self.stop.wait(self.delay(ok))
            self.stopped(self.signals.signal_name)
            return 0
        finally:
            self.finished = True
            if server is not None:
                server.close()
            self.signals.restore()

    def connected(self) -> ApiClient:
        """The client of this watch: read-only unless it applies, its retries as asked."""
        client = connect(self.conn, read_only=not self.config.apply,
                         on_event=self.t.client_events() if self.verbose else None, telemetry=self.t)
        if self.config.request_retries is not None:
            client.max_retries = self.config.request_retries
        return client

    def started(self, server: HealthServer | None) -> None:
        self.t.event("start", text=self._start_line(server), interval_s=self.config.interval,
                     apply=self.config.apply, prune=self.config.options.prune, paths=list(self.config.paths))

    def stopped(self, name: str | None) -> None:
        self.t.event("stopped", signal=name, cycles=self.cycles, ready=self.ready,
                     text=f"{name or 'stop'}: stopped after {self.cycles} cycle(s)"
                          + ("" if self.ready else " (none succeeded)") + ".")

    def cycle(self, client: ApiClient) -> tuple[bool, bool]:
        """One cycle; returns (it succeeded, changes are left: drift, or with --prune unmanaged)."""
        self.cycles += 1
        n = self.t.cycle = self.cycles
        started = time.monotonic()
        manifests = self._desired(n)
        if manifests is None:
            return self._ended(n, started, "manifest_error", "no desired state yet (the manifests have never loaded)")
        outcome = "ok" if self.last_error is None else "manifest_error"
        try:
            options = replace(self.config.options, restrictions="compare") if self.config.apply else self.config.options
            live, plan = plan_against(manifests, client, prepare_options(manifests, options))
            found = self.t.observe_plan(manifests, plan)
            self._report_plan(plan, found["drifted"])
            left = found["drifted"]
            final = plan  # what is still to do at the end of the cycle (--once's exit code)
            applied = 0
            allowed = self._allowed(n, plan) if self.config.apply else plan
            if self.config.apply and not allowed.empty and not self.stop.is_set():
                check_plan_secrets(allowed, manifests)  # what it sends must resolve, as apply checks
                report, again = apply_and_confirm(allowed, client, manifests, live, parallelism=self.conn.parallelism,
                                                  confirm_failed=True, on_report=lambda r: self._reported(n, r),
                                                  execute=run_apply, stop=self.stop.is_set)
                applied = len(report.of(APPLIED))
                if again is None:  # interrupted
                    return self._ended(n, started, "interrupted", f"apply interrupted: {applied} calls applied, "
                                       f"{len(report.of('skipped'))} not started", left=True)
                final = again
                left = self.t.observe_plan(manifests, again)["drifted"]
                self._notify(n, found["drifted"], left)
                if not report.ok:
                    raise ReconcilerError(f"apply finished with {len(report.of('failed'))} failed and "
                                          f"{len(report.of('skipped'))} skipped calls; the next cycle retries")
            else:
                self._notify(n, found["drifted"], left)
        except ReconcilerError as exc:
            self.failures += 1
            return self._ended(n, started, "error", f"failed ({self.failures} in a row): {exc}", message=str(exc),
                               error_type=type(exc).__name__, failures=self.failures)
        self.failures = 0
        self.ready = True
        healed = len(found["drifted"]) - len(left) if self.config.apply else 0
        return self._ended(n, started, outcome, f"{summary_line(plan).rstrip('.')}; {len(found['drifted'])} drifted"
                           + (f", {healed} healed ({applied} calls)" if self.config.apply and found["drifted"] else "")
                           + (", manifests failing: last good state used" if outcome == "manifest_error" else "")
                           + f" ({_secs(started)}s)", success=True, left=not final.empty,
                           drifted=len(found["drifted"]), healed=healed, unmanaged=len(found["unmanaged"]),
                           applied=applied)

    def _ended(self, n: int, started: float, outcome: str, text: str, *, success: bool = False, left: bool = False,
               **fields: Any) -> tuple[bool, bool]:
        """The cycle's outcome counted and logged (``text`` after ``cycle N: ``); returns ``cycle``'s
        (it succeeded, changes are left)."""
        self.t.cycle_done(outcome, time.monotonic() - started, success=success)
        self.t.event("cycle", cycle=n, outcome=outcome, **fields, duration_s=_secs(started), text=f"cycle {n}: {text}")
        return success, left

    def _reported(self, n: int, report: ApplyReport) -> None:
        """The apply's report, as soon as its calls end (before the re-read)."""
        for line in report.lines():
            self.out(line)
        self.t.event("apply", cycle=n, outcome="interrupted" if report.interrupted else
                     "ok" if report.ok else "partial", applied=len(report.of(APPLIED)),
                     failed=len(report.of("failed")), skipped=len(report.of("skipped")))

    def _allowed(self, n: int, plan: Plan) -> Plan:
        """The plan less what a policy denies or holds for an approval not given (``--approve``),
        each held verdict reported."""
        if not plan.policy:
            return plan
        from reconciler.policy.evaluate import describe, without_blocked

        allowed, held = without_blocked(plan, self.config.approvals)
        for v in held:
            why = "denied" if v.effect == "deny" else f"needs --approve {v.rule}"
            self.t.event("policy_held", cycle=n, rule=v.rule, effect=v.effect, resource=v.address,
                         text=f"cycle {n}: not applied ({why}): {describe(v)}")
            self.out(f"Not applied ({why}): {describe(v)}")
        return allowed

    def delay(self, ok: bool) -> float:
        """Until the next cycle: the interval, jittered; after failures, the backoff."""
        if ok or self.failures == 0:
            return self.config.interval * self.rng.uniform(0.9, 1.1)
        d = min(self.config.max_backoff, min(self.config.interval, BACKOFF_BASE) * 2.0 ** (self.failures - 1))
        delay: float = d / 2 + self.rng.uniform(0, d / 2)
        self.t.event("backoff", cycle=self.cycles, failures=self.failures, duration_s=round(delay, 3),
                     text=f"backing off {delay:.1f}s after {self.failures} failed cycle(s)")
        return delay

    # ------------------------------------------------------------------ desired state

    def _desired(self, n: int) -> ManifestSet | None:
        if self.git_tops and self.pulls:
            self.pull(self.git_tops, n)
        try:
            watched = (*self.config.paths, *self.config.options.var_files, *self.config.options.policies)
            before = tree_stamp(watched)
            manifests = load(self.config.paths, var_assignments=self.config.options.variables,
                             var_files=self.config.options.var_files, policy_paths=self.config.options.policies)
            if tree_stamp(watched) != before:
                raise ReconcilerError("the manifests changed while they were read; the next cycle reads them again")
        except ReconcilerError as exc:
            message = str(exc)
            self.t.manifest_failed()
            kept = "keeping the last good desired state" if self.last_good is not None else "no desired state yet"
            self.t.event("manifest_error", cycle=n, outcome="kept_last_good" if self.last_good else "none",
                         message=message,
                         text=None if message == self.last_error else f"cycle {n}: the manifests do not load "
                                                                     f"({kept}):\n{message}")
            self.last_error = message
            return self.last_good
        if self.last_error is not None:
            self.t.event("manifest_ok", cycle=n, text=f"cycle {n}: the manifests load again")
        if self.last_good is None or manifests.warnings != self.last_good.warnings:
            for warning in manifests.warnings:  # e.g. an unused --var: said when it first appears
                self.t.event("warning", cycle=n, message=warning, text=f"Warning: {warning}")
        self.last_error = None
        self.t.manifest_loaded()
        self.last_good = manifests
        return manifests

    def _find_git_tops(self) -> list[str]:
        tops: list[str] = []
        for p in self.config.paths:
            where = Path(p) if Path(p).is_dir() else Path(p).parent
            try:
                r = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel"], capture_output=True,
                                   text=True, timeout=30)
            except (OSError, subprocess.SubprocessError) as exc:
                raise ConfigError(f"--git-pull: cannot run git ({exc})") from None
            if r.returncode != 0:
                raise ConfigError(f"--git-pull: {p} is not in a git work tree")
            if r.stdout.strip() not in tops:
                tops.append(r.stdout.strip())
        return tops

    def pull(self, tops: Sequence[str], n: int) -> None:
        """``git pull --ff-only`` in each work tree; a failure is reported and the files used as they are."""
        for top in tops:
            try:
                r = subprocess.run(["git", "-C", top, "pull", "--ff-only", "--quiet"], capture_output=True,
                                   text=True, timeout=300, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
                failed, detail = r.returncode != 0, r.stderr.strip()
            except (OSError, subprocess.SubprocessError) as exc:
                failed, detail = True, str(exc)
            if failed:
                detail = _URL_CREDENTIALS.sub(r"\1***@", detail)
                self.t.git_pull_errors.inc()
                self.t.event("git_pull", cycle=n, outcome="error", repository=top, message=detail,
                             text=f"cycle {n}: git pull --ff-only failed in {top}; using the files as they are: "
                                  f"{detail}")
            else:
                self.t.event("git_pull", cycle=n, outcome="ok", repository=top)

    # ------------------------------------------------------------------ reports and notices

    def _start_line(self, server: HealthServer | None) -> str:
        where = f"; metrics on http://{_host(server)}/metrics" if server is not None else ""
        mode = "applying" if self.config.apply else "planning only"
        return (f"watching {', '.join(self.config.paths)} every {self.config.interval:g}s ({mode}"
                + (", pruning" if self.config.options.prune else "") + f"){where}")

    def _report_plan(self, plan: Plan, drifted: list[str]) -> None:
        """The plan in text mode when what drifted changed since the last cycle (not every cycle)."""
        if drifted != self.last_drifted and not plan.empty:
            self.out(render_text(plan).rstrip("\n"))
        self.last_drifted = drifted

    def _notify(self, n: int, found: list[str], left: list[str]) -> None:
        if any(a not in self.drift_open for a in found):  # something drifted that no notice said
            self._post("drift", n, found, f"Drift detected by reconciler watch: {len(found)} resource(s) differ "
                       f"from the manifests: {_short(found)}", healed=[a for a in found if a not in left])
        if self.drift_open | set(found) and not left:
            self._post("healed", n, [], f"Drift healed: {_short(sorted(self.drift_open | set(found)))} "
                       "match the manifests again", healed=sorted(self.drift_open | set(found)))
        self.drift_open = set(left)

    def _post(self, kind: str, n: int, drifted: list[str], text: str, *, healed: list[str]) -> None:
        self.t.event("drift" if kind == "drift" else "healed", cycle=n, resources=drifted or None, healed=healed,
                     text=text)
        if not self.config.notify_url:
            return
        from reconciler.client.settings import is_loopback

        payload: dict[str, Any] = {"text": text if self.t.environment is None else f"{self.t.environment}: {text}",
                                   "event": kind, "cycle": n, "drifted": drifted, "healed": healed,
                                   "paths": list(self.config.paths), "apply": self.config.apply}
        if self.t.environment is not None:
            payload["environment"] = self.t.environment
        try:
            # a loopback hook is reached directly: a proxy would carry its token in clear text
            response = httpx.post(self.config.notify_url, json=payload, timeout=10.0,
                                  trust_env=not is_loopback(httpx.URL(self.config.notify_url).host))
            outcome = "ok" if response.is_success else f"HTTP {response.status_code}"
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, UnicodeError) as exc:
            outcome = type(exc).__name__  # never str(exc): it may carry the webhook URL
        self.t.notifications.labels(kind, "ok" if outcome == "ok" else "error").inc()
        self.t.event("notify", cycle=n, outcome=outcome, kind=kind,
                     text=None if outcome == "ok" else f"cycle {n}: the {kind} notice was not delivered ({outcome})")

    # ------------------------------------------------------------------ the metrics server

    def healthy(self) -> bool:
        """The loop runs and showed life recently (a request, an outcome, a cycle)."""
        stall = 2 * max(self.config.interval * 1.1, self.config.max_backoff) + 600
        return not self.finished and time.monotonic() - self.t.heartbeat < stall


def once_code(results: Sequence[tuple[bool, bool]]) -> int:
    """``--once``'s exit code over the cycles run (one an environment): 1 when one failed, else 2 when
    changes are left in one, else 0."""
    if not all(ok for ok, _ in results):
        return 1
    return 2 if any(left for _, left in results) else 0


class Watchers:
    """``watch --all`` (or ``--env``): the watchers of several environments in one process, one stop,
    one metrics server (each figure labelled ``environment``: ``telemetry.ByEnvironment``). Each
    environment keeps its own client, schedule and backoff; their cycles run one at a time, in the
    project's order, so two environments of one account never compete for its rate budget. With
    ``--git-pull`` the work trees are pulled once a round, before its cycles (the watchers are made
    with ``pulls=False``). Ready once every environment had a good cycle; healthy while each is."""

    def __init__(self, watchers: dict[str, Watcher], stop: threading.Event, *, metrics_addr: tuple[str, int] | None,
                 once: bool) -> None:
        self.watchers = watchers  # each made with ``stop``
        self.metrics_addr = metrics_addr
        self.once = once
        self.stop = stop
        self.signals = Stop(stop)

    def run(self) -> int:
        from contextlib import ExitStack

        from reconciler.telemetry import ByEnvironment

        self.signals.install(signal.SIGTERM, signal.SIGINT)
        server = None if self.metrics_addr is None else HealthServer(
            self.metrics_addr, ByEnvironment({n: w.t for n, w in self.watchers.items()}),
            healthy=lambda: all(w.healthy() for w in self.watchers.values()),
            ready=lambda: all(w.ready for w in self.watchers.values())).start()
        try:
            with ExitStack() as stack:
                clients = {n: stack.enter_context(w.connected()) for n, w in self.watchers.items()}
                for w in self.watchers.values():
                    w.started(server)
                due = dict.fromkeys(self.watchers, 0.0)
                tops = list(dict.fromkeys(top for w in self.watchers.values() for top in w.git_tops))
                while not self.stop.is_set():
                    results = []
                    ready = [name for name in self.watchers if due[name] <= time.monotonic()]
                    if tops and ready:  # once a round, so every environment of the round reads one commit
                        first = self.watchers[ready[0]]
                        first.pull(tops, first.cycles + 1)
                    for name in ready:
                        w = self.watchers[name]
                        if self.stop.is_set():
                            break
                        ok, left = w.cycle(clients[name])
                        results.append((ok, left))
                        due[name] = time.monotonic() + w.delay(ok)
                    if self.once:
                        return once_code(results)
                    self.stop.wait(max(0.0, min(due.values()) - time.monotonic()))
            for w in self.watchers.values():
                w.stopped(self.signals.signal_name)
            return 0
        finally:
            for w in self.watchers.values():
                w.finished = True
            if server is not None:
                server.close()
            self.signals.restore()


#: Seconds a connection may take to send its request before it is closed.
IDLE_TIMEOUT = 10.0
#: Connections held open at once; past it the oldest one still waiting for its request is closed.
MAX_CONNECTIONS = 256
#: The longest request head read (request line and headers).
MAX_REQUEST_HEAD = 16 * 1024


class HealthServer:
    """``/metrics`` (Prometheus text format, or OpenMetrics when the Accept header asks for it),
    ``/healthz`` and ``/readyz`` (200 or 503) (call ``start()``). A small asyncio server in a thread
    of its own, h11 driving HTTP/1.1 (a request it cannot parse is answered 400, a head longer than
    ``MAX_REQUEST_HEAD`` 431): one request a connection, each request head read within
    ``idle_timeout``, at most ``max_connections`` open (the oldest idle one is closed for a
    newcomer). Idle or slow clients (half-open sockets, a slow scanner) cost a few bytes each and
    never hold up a probe: the liveness probe keeps its answer, and Kubernetes does not restart a
    healthy pod."""

    def __init__(self, address: tuple[str, int], telemetry: Telemetry | ByEnvironment, *, healthy: Callable[[], bool],
                 ready: Callable[[], bool], idle_timeout: float = IDLE_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        import asyncio
        import socket

        host, port = address
        try:
            self.socket = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                               reuse_port=False)
        except OSError as exc:
            raise ConfigError(f"--metrics-addr {host}:{port}: cannot listen ({exc.strerror or exc})") from None
        self.server_address = self.socket.getsockname()
        self.telemetry = telemetry
        self.healthy = healthy
        self.ready = ready
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections
        self.loop = asyncio.new_event_loop()
        self.waiting: dict[Any, None] = {}  # writers of connections still waiting for their request, oldest first
        self.open = 0
        self.thread = threading.Thread(target=self._run, name="metrics", daemon=True)

    def start(self) -> HealthServer:
        self.thread.start()
        return self

    def answer(self, method: str, target: str, accept: str = "") -> tuple[int, bytes, str]:
        path = target.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, b"only GET\n", "text/plain; charset=utf-8"
        if path == "/metrics":
            encode, content_type = choose_encoder(accept)  # OpenMetrics when asked
            return 200, encode(self.telemetry.registry), content_type
        if path == "/healthz":
            ok = self.healthy()
            return (200 if ok else 503), b"ok\n" if ok else b"the loop is not running\n", "text/plain; charset=utf-8"
        if path == "/readyz":
            ok = self.ready()
            return (200 if ok else 503), b"ok\n" if ok else b"no cycle has succeeded yet\n", "text/plain; charset=utf-8"
        return 404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain; charset=utf-8"

    def _run(self) -> None:
        import asyncio

        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, sock=self.socket))
        try:
            self.loop.run_forever()
        finally:
            server.close()
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    async def _serve(self, reader: Any, writer: Any) -> None:
        import asyncio

        self.open += 1
        self.waiting[writer] = None
        if self.open > self.max_connections:  # make room: the oldest connection still silent goes
            oldest = next(iter(self.waiting))
            self.waiting.pop(oldest, None)
            oldest.close()
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_REQUEST_HEAD)
        try:
            try:
                request = await asyncio.wait_for(self._request(connection, reader), self.idle_timeout)
                self.waiting.pop(writer, None)
                if request is None:  # closed before a whole request head came
                    return
                method, target = request.method.decode("ascii"), request.target.decode("ascii")
                accept = b", ".join(value for name, value in request.headers if name == b"accept").decode("latin-1")
                status, body, kind = self.answer(method, target, accept)
            except h11.RemoteProtocolError as exc:  # not HTTP/1.x, a malformed line or header, a head too long
                status, kind = exc.error_status_hint, "text/plain; charset=utf-8"
                body = f"{HTTPStatus(status).phrase.lower()}\n".encode("ascii")  # bad request
                method = ""
            headers = [("Content-Type", kind), ("Content-Length", str(len(body))), ("Connection", "close")]
            out = connection.send(h11.Response(status_code=status, headers=headers,
                                               reason=HTTPStatus(status).phrase.encode("ascii")))
            if method != "HEAD":  # a HEAD answer has the headers of the GET's, and no body
                out += connection.send(h11.Data(data=body))
            out += connection.send(h11.EndOfMessage())
            writer.write(out)
            await asyncio.wait_for(writer.drain(), self.idle_timeout)
        except (TimeoutError, ConnectionError, OSError):
            pass  # too slow, gone, or closed to make room
        finally:
            self.waiting.pop(writer, None)
            self.open -= 1
            writer.close()

    @staticmethod
    async def _request(connection: h11.Connection, reader: Any) -> h11.Request | None:
        """The request's head, read as h11 asks for more bytes; None when the client closes first
        (or the server closed it to make room). A head longer than ``MAX_REQUEST_HEAD`` is refused
        (h11 bounds only a head still incomplete)."""
        received = 0
        while (event := connection.next_event()) is h11.NEED_DATA:
            data = await reader.read(MAX_REQUEST_HEAD)
            if not data:
                return None
            received += len(data)
            if received > MAX_REQUEST_HEAD:
                raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
            connection.receive_data(data)
        assert isinstance(event, h11.Request)  # a server's first event, unless it raised
        if not event.http_version.startswith(b"1."):  # h11 reads any version's request line
            raise h11.RemoteProtocolError("not HTTP/1.x", error_status_hint=400)
        return event

    def close(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
        self.socket.close()


def tree_stamp(paths: Sequence[str]) -> list[tuple[str, int, int]]:
    """Every file under ``paths`` (``.git`` left out) with its mtime and size: a tree that moved
    while it was read is not trusted."""
    found: list[tuple[str, int, int]] = []
    for p in paths:
        root = Path(p)
        # a path that is not a directory (absent, a fifo) globs nothing
        files = [root] if root.is_file() else sorted(f for f in root.rglob("*") if ".git" not in f.parts and f.is_file())
        for f in files:
            try:
                st = f.stat()
            except OSError:
                continue
            found.append((str(f), st.st_mtime_ns, st.st_size))
    return found


def _host(server: HealthServer) -> str:
    host, port = server.server_address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _secs(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _short(addresses: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(addresses[:limit])
    return shown + (f" and {len(addresses) - limit} more" if len(addresses) > limit else "")
