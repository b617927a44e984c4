"""What a run tells the world besides its output: Prometheus metrics and structured log events.

One ``Telemetry`` per command run (or per ``watch`` process). It owns a private
``CollectorRegistry`` (never the global one, so two runs in one process do not mix) with the
figures below, and a log sink that writes one event a line on stderr:

- ``--log-format text`` (the default): nothing but what the command already prints, and ``watch``'s
  own one line a cycle.
- ``--log-format json``: one JSON object a line, always with ``ts`` (UTC, ISO 8601) and ``event``
  (``command``, ``cycle``, ``resource``, ``apply``, ``request``, ``client``, ``error``, ...), and as the
  event has them ``cycle``, ``resource``, ``action``, ``outcome``, ``duration_s``. No event carries a
  secret value: they are made of addresses, actions, statuses and the client's (redacted) messages.

Metrics (the same names for ``watch`` on ``--metrics-addr`` and for ``--metrics-file`` of plan,
apply and drift, so one dashboard serves a cron job and a loop; a one-shot run is one cycle):

=================================================  ===========================================
``reconciler_resources{kind,state}``               declared resources ``in_sync`` / ``drifted``,
                                                   undeclared ones inside the scope ``unmanaged``
``reconciler_planned_operations{action}``          what the last plan would do (create, update...)
``reconciler_cycle_duration_seconds``              histogram of cycle (run) durations
``reconciler_cycles_total{outcome}``               ok, error, manifest_error, interrupted
``reconciler_last_successful_cycle_timestamp_seconds``  when a cycle last read, planned (and applied)
``reconciler_api_requests_total{method,status}``   every HTTP exchange, retries included
``reconciler_apply_operations_total{action,outcome}``  applied, failed, skipped
``reconciler_manifest_errors_total``               loads that failed (bad YAML, a failed check...)
``reconciler_manifest_error``                      1 while the manifests on disk do not load
``reconciler_consecutive_failures``                cycles failed in a row (``watch`` backs off)
``reconciler_build_info{version}``                 always 1
``reconciler_policy_verdicts_total{effect}``       policy rules that fired: deny, require_approval, warn
=================================================  ===========================================
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from reconciler import __version__

if TYPE_CHECKING:  # imported where used: a command that reports no figure never loads prometheus_client
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

    from reconciler.apply.executor import Outcome
    from reconciler.client.http import ApiClient, Exchange
    from reconciler.model import ManifestSet
    from reconciler.plan.model import Plan

LOG_FORMATS = ("text", "json")
STATES = ("in_sync", "drifted", "unmanaged")
#: Cycle durations from a small tree on a near API to thousands of resources behind a rate limit.
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


#: The figures of a ``Telemetry``, built together on the first use of any of them.
METRIC_ATTRIBUTES = frozenset({
    "registry", "resources", "planned", "cycle_duration", "cycles", "last_success", "api_requests", "apply_ops",
    "manifest_errors", "manifest_error", "git_pull_errors", "notifications", "failures", "policy_verdicts"})


class Telemetry:
    """Metrics and log events of one run; thread-safe (watch's /metrics server reads them from its own thread
    while the cycle, on the main thread, writes them).

    ``metrics=False`` (a one-shot command without ``--metrics-file``: nobody will read its figures)
    records none, so prometheus_client is never imported. Otherwise the registry and its figures are
    built on first use (``__getattr__``)."""

    registry: CollectorRegistry
    resources: Gauge
    planned: Gauge
    cycle_duration: Histogram
    cycles: Counter
    last_success: Gauge
    api_requests: Counter
    apply_ops: Counter
    manifest_errors: Counter
    manifest_error: Gauge
    git_pull_errors: Counter
    notifications: Counter
    failures: Gauge
    policy_verdicts: Counter

    def __init__(self, *, log_format: str = "text", stream: TextIO | None = None,
                 clock: Callable[[], float] = time.time, metrics: bool = True, environment: str | None = None) -> None:
        if log_format not in LOG_FORMATS:
            raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}")
        self.log_format = log_format
        #: the environment of reconciler.yaml the run is about (``watch --all``): in every json event,
        #: before every text line, and as a label when served with others (``ByEnvironment``)
        self.environment = environment
        self.metrics = metrics
        self._stream = stream
        self._clock = clock
        self._write_lock = threading.Lock()
        self._build_lock = threading.Lock()
        self.heartbeat = time.monotonic()  # the last sign of life (a request, a cycle): /healthz
        self.cycle: int | None = None  # the watch cycle running, for events (None: a one-shot command)

    def __getattr__(self, name: str) -> Any:
        if name not in METRIC_ATTRIBUTES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        with self._build_lock:
            if "registry" not in self.__dict__:
                self._build_metrics()
        return self.__dict__[name]

    def _build_metrics(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics

        from reconciler.plan.model import ACTIONS

        if "PROMETHEUS_DISABLE_CREATED_SERIES" not in os.environ:  # set (to false): the *_created series wanted
            disable_created_metrics()  # type: ignore[no-untyped-call]
        r = CollectorRegistry(auto_describe=True)
        self.resources = Gauge("reconciler_resources", "Resources by kind and state (in_sync, drifted, unmanaged).",
                               ["kind", "state"], registry=r)
        self.planned = Gauge("reconciler_planned_operations", "Objects the last plan creates, updates, deletes, "
                             "replaces.", ["action"], registry=r)
        self.cycle_duration = Histogram("reconciler_cycle_duration_seconds", "Duration of a reconcile cycle (a "
                                        "one-shot command is one cycle).", buckets=DURATION_BUCKETS, registry=r)
        self.cycles = Counter("reconciler_cycles", "Cycles by outcome (ok, error, manifest_error, interrupted).",
                              ["outcome"], registry=r)
        self.last_success = Gauge("reconciler_last_successful_cycle_timestamp_seconds",
                                  "Unix time the last cycle that read, planned (and applied) succeeded.", registry=r)
        self.api_requests = Counter("reconciler_api_requests", "HTTP exchanges with the API by method and status "
                                    "(retries included).", ["method", "status"], registry=r)
        self.apply_ops = Counter("reconciler_apply_operations", "Apply operations by action and outcome (applied, "
                                 "failed, skipped).", ["action", "outcome"], registry=r)
        self.manifest_errors = Counter("reconciler_manifest_errors", "Manifest loads that failed.", registry=r)
        self.manifest_error = Gauge("reconciler_manifest_error", "1 while the manifests do not load (the last good "
                                    "desired state is used).", registry=r)
        self.git_pull_errors = Counter("reconciler_git_pull_errors", "git pull --ff-only runs that failed "
                                       "(watch --git-pull).", registry=r)
        self.notifications = Counter("reconciler_notifications", "Notices posted (watch --notify) by kind and "
                                     "outcome.", ["kind", "outcome"], registry=r)
        self.failures = Gauge("reconciler_consecutive_failures", "Cycles failed in a row.", registry=r)
        self.policy_verdicts = Counter("reconciler_policy_verdicts", "Policy rules that fired, by effect (deny, "
                                       "require_approval, warn).", ["effect"], registry=r)
        Gauge("reconciler_build_info", "The reconciler version.", ["version"], registry=r).labels(__version__).set(1)
        for action in ACTIONS:
            self.planned.labels(action)
        for label in ("ok", "error", "manifest_error", "interrupted"):
            self.cycles.labels(label)
        for effect in ("deny", "require_approval", "warn"):
            self.policy_verdicts.labels(effect)
        self.registry = r  # last: its presence says the figures are built

    def count_verdicts(self, verdicts: Iterable[Any]) -> None:
        """Count each policy verdict of a plan by effect, and log it (``policy`` events)."""
        for v in verdicts:
            if self.metrics:
                self.policy_verdicts.labels(v.effect).inc()
            self.event("policy", rule=v.rule, effect=v.effect, resource=v.address, message=v.message,
                       source=v.source)

    # ------------------------------------------------------------------ logs

    def event(self, event: str, text: str | None = None, **fields: Any) -> None:
        """One log event: a JSON line in json mode; ``text`` (when given) as is in text mode."""
        if self.log_format == "json":
            record = {"ts": datetime.fromtimestamp(self._clock(), UTC).isoformat(timespec="milliseconds")
                      .replace("+00:00", "Z"), "event": event}
            if self.environment is not None:
                record["environment"] = self.environment
            record.update((k, v) for k, v in fields.items() if v is not None)
            line = json.dumps(record, default=str, sort_keys=False)
        elif text is None:
            return
        else:
            line = text if self.environment is None else f"{self.environment}: {text}"
        with self._write_lock:
            stream = self._stream or sys.stderr
            stream.write(line + "\n")
            stream.flush()

    def client_events(self) -> Callable[[str], None]:
        """The ``on_event`` sink of an ``ApiClient``: its messages (retries, waits, recoveries, and
        with ``-v`` in text mode each request's line) as they are (text), or ``client`` events with
        the message (json). Requests are logged as ``request`` events from the client's structured
        ``Exchange``s (``attach``), never parsed from these lines."""
        def sink(line: str) -> None:
            if self.log_format != "json":
                self.event("client", text=line)
            else:
                self.event("client", message=line)
        return sink

    # ------------------------------------------------------------------ observations

    def attach(self, client: ApiClient, *, log_requests: bool = False) -> None:
        """Observe every answered exchange of this client, retries included (``client.observers``):
        counted by method and status (with metrics), and with ``log_requests`` (``-v`` under
        ``--log-format json``) logged as a ``request`` event with method, path, status and duration."""
        if not (self.metrics or log_requests):
            return
        children: dict[tuple[str, int], Any] = {}  # the counter of each (method, status), looked up once

        def observe(exchange: Exchange) -> None:
            if self.metrics:
                key = (exchange.method, exchange.status)
                child = children.get(key)
                if child is None:
                    child = children.setdefault(key, self.api_requests.labels(key[0], str(key[1])))
                child.inc()
                self.heartbeat = time.monotonic()
            if log_requests:
                self.event("request", method=exchange.method, path=client.redact(exchange.target),
                           status=exchange.status, duration_s=exchange.milliseconds / 1000)

        client.observers.append(observe)

    def observe_plan(self, manifests: ManifestSet | None, plan: Plan, *, log: bool = False) -> dict[str, list[str]]:
        """Set the resource gauges from a plan made of ``manifests``; returns the addresses by state
        (``drifted`` and ``unmanaged``; ``in_sync`` is every other declared one). With ``log``, a
        ``plan`` event (json) for each object the plan changes and each unmanaged one."""
        declared = {r.address: r.kind for r in manifests} if manifests is not None else {}
        touched = {op.address for op in plan.operations}
        drifted = sorted(a for a in declared if a in touched)
        # undeclared resources inside the ownership: listed by the plan, or deleted by it (--prune)
        unmanaged = {op.subject: op.kind for op in plan.operations
                     if op.action == "delete" and op.address not in declared and op.kind == op.address.partition("/")[0]}
        unmanaged.update((u.address, u.kind) for u in plan.unmanaged)
        if self.metrics:
            self._set_gauges(declared, touched, unmanaged, plan)
        if log and self.log_format == "json":
            seen: set[str] = set()
            for op in plan.operations:
                if op.subject not in seen:
                    seen.add(op.subject)
                    self.event("plan", cycle=self.cycle, resource=op.subject, action=op.action, outcome="planned")
            for u in plan.unmanaged:
                self.event("plan", cycle=self.cycle, resource=u.address, action="none", outcome="unmanaged")
        return {"drifted": drifted, "unmanaged": sorted(unmanaged)}

    def _set_gauges(self, declared: dict[str, str], touched: set[str], unmanaged: dict[str, str], plan: Plan) -> None:
        from reconciler.plan.model import ACTIONS

        counts: dict[tuple[str, str], int] = {}
        for address, kind in declared.items():
            state = "drifted" if address in touched else "in_sync"
            counts[kind, state] = counts.get((kind, state), 0) + 1
        for kind in unmanaged.values():
            counts[kind, "unmanaged"] = counts.get((kind, "unmanaged"), 0) + 1
        kinds = {k for k, _ in counts} | {k for k, _ in _labels(self.resources)}
        for kind in kinds:
            for state in STATES:
                self.resources.labels(kind, state).set(counts.get((kind, state), 0))
        summary = plan.summary()
        for action in ACTIONS:
            self.planned.labels(action).set(summary.get(action, 0))

    def observe_outcome(self, action: str, outcome: str) -> None:
        if self.metrics:
            self.apply_ops.labels(action, outcome).inc()
        self.heartbeat = time.monotonic()

    def outcome_sink(self, then: Callable[[Outcome], None] | None) -> Callable[[Outcome], None]:
        """An executor ``on_done`` that counts the outcome, logs it (json: a ``resource`` event with
        its action, outcome and the seconds since the apply began), then calls ``then``."""
        started = time.monotonic()

        def done(outcome: Outcome) -> None:
            self.observe_outcome(outcome.op.action, outcome.status)
            self.event("resource", cycle=self.cycle, resource=outcome.op.subject, action=outcome.op.action,
                       method=outcome.op.method, outcome=outcome.status, detail=outcome.detail,
                       duration_s=round(time.monotonic() - started, 3))
            if then is not None:
                then(outcome)
        return done

    def cycle_done(self, outcome: str, duration: float, *, success: bool) -> None:
        self.heartbeat = time.monotonic()
        if not self.metrics:
            return
        self.cycles.labels(outcome).inc()
        self.cycle_duration.observe(duration)
        if success:
            self.last_success.set(self._clock())
            self.failures.set(0)
        elif outcome != "interrupted":
            self.failures.inc()

    def manifest_failed(self) -> None:
        if not self.metrics:
            return
        self.manifest_errors.inc()
        self.manifest_error.set(1)

    def manifest_loaded(self) -> None:
        if self.metrics:
            self.manifest_error.set(0)

    # ------------------------------------------------------------------ export

    def write_textfile(self, path: str) -> None:
        """The registry in the text format node_exporter's textfile collector reads, written
        atomically (a temporary file in the same directory, then a rename)."""
        from prometheus_client import write_to_textfile

        write_to_textfile(os.fspath(path), self.registry)


class ByEnvironment:
    """The figures of several runs (``watch --all``: one ``Telemetry`` an environment) served as one
    registry, each sample with the label ``environment``: a collector of prometheus_client's own
    kind, reading each run's registry when scraped."""

    def __init__(self, runs: Mapping[str, Telemetry]) -> None:
        from prometheus_client import CollectorRegistry

        self.runs = dict(runs)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def collect(self) -> Iterable[Any]:
        from prometheus_client.metrics_core import Metric
        from prometheus_client.samples import Sample

        merged: dict[str, Metric] = {}
        for name, run in self.runs.items():
            for family in run.registry.collect():
                into = merged.get(family.name)
                if into is None:
                    into = merged[family.name] = Metric(family.name, family.documentation, family.type, family.unit)
                into.samples.extend(Sample(s.name, {"environment": name, **s.labels}, s.value, s.timestamp,
                                           s.exemplar) for s in family.samples)
        return list(merged.values())


def _labels(metric: Gauge) -> Iterable[tuple[str, str]]:
    """The (kind, state) label pairs a gauge has been set with (so a kind gone to zero reads 0)."""
    for family in metric.collect():
        for sample in family.samples:
            yield sample.labels.get("kind", ""), sample.labels.get("state", "")

