"""Execute a plan: dependency order, bounded parallelism, references resolved from earlier responses.

Operations run in phases: first every create and update, then the deletes kind by kind in reverse
dependency order. Within a phase an operation starts when everything it depends on has been applied
and no earlier operation of the same resource is still pending (a resource's calls keep their plan
order). A failed operation skips what depends on it; independent work goes on, unless ``fail_fast``.
"""

from __future__ import annotations

import heapq
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from reconciler.apply.recover import recover_for, recover_for_patch
from reconciler.apply.resolve import request_for
from reconciler.client.http import ApiClient
from reconciler.client.settings import DEFAULT_PARALLELISM
from reconciler.errors import ProblemError, ReconcilerError
from reconciler.plan.model import KNOWN_AFTER_APPLY, REF_RE, Change, Operation, Plan
from reconciler.plan.planner import DELETE_ORDER

APPLIED, FAILED, SKIPPED = "applied", "failed", "skipped"


@dataclass
class Outcome:
    op: Operation
    status: str
    detail: str | None = None
    http_status: int | None = None  # the API's answer when it refused the call
    path: str | None = None  # the request's path as sent: real ids, no "(known after apply)"

    def describe(self) -> str:
        return describe(self.op, self.path)

    @property
    def rerun_can_fix(self) -> bool:
        """A transport failure, a 5xx, a 409 (a race), a 408 or 429 may pass next time; another 4xx
        is the API refusing what the manifests ask, and will be refused again."""
        return self.http_status is None or self.http_status >= 500 or self.http_status in (408, 409, 429)


@dataclass
class ApplyReport:
    outcomes: list[Outcome] = field(default_factory=list)
    responses: dict[str, Any] = field(default_factory=dict)  # op id -> decoded response body
    interrupted: bool = False  # Ctrl-C: the calls in flight were finished, nothing new started

    def of(self, status: str) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == status]

    @property
    def ok(self) -> bool:
        return all(o.status == APPLIED for o in self.outcomes)

    def failure_summary(self) -> str:
        """What to do about the failures: a fix per refused call (the field and the manifest's
        ``file:line``), and a re-run only when a re-run can help."""
        failed, skipped = self.of(FAILED), self.of(SKIPPED)
        head = f"apply finished with {len(failed)} failed and {len(skipped)} skipped calls"
        refused = [o for o in failed if not o.rerun_can_fix]
        if not refused:
            return head + "; the failures may be transient: re-run to converge"
        lines = [head + "; the API refused these, and will again until the manifests (or the key) change:"]
        lines += [f"  {o.op.address}: {o.detail}{_where_to_fix(o)}" for o in refused]
        if len(refused) < len(failed):
            lines.append("The other failures may be transient: re-run after fixing these to converge.")
        else:
            lines.append("Fix them and re-run.")
        return "\n".join(lines)

    def lines(self, *, list_applied: bool = True) -> list[str]:
        """The end report: a count per status, each call under it (with real ids). Applied calls
        are not listed again when ``list_applied`` is false (they were listed as they happened)."""
        out: list[str] = []
        for title, status in (("Applied", APPLIED), ("Failed", FAILED), ("Skipped", SKIPPED)):
            items = self.of(status)
            out.append(f"{title}: {len(items)}")
            if status == APPLIED and not list_applied:
                continue
            for o in items:
                detail = f": {o.detail}" if o.detail else ""
                out.append(f"  {o.describe()}{detail}")
        return out


INTERRUPTED = "not started: interrupted (Ctrl-C)"


class _Interrupted(Exception):
    pass


def describe(op: Operation, sent_path: str | None = None) -> str:
    """``ADDRESS METHOD PATH (note)``: the path as sent when known, else as planned."""
    path = sent_path or REF_RE.sub(KNOWN_AFTER_APPLY, op.path)
    return f"{op.address} {op.method} {path}" + (f" ({op.note})" if op.note else "")


def causes(outcome: Outcome) -> list[Change]:
    """The changes of a refused call that the refusal is about: those its detail names (by their
    last path part; quoted names left out), else every change of the call; at most three."""
    changes = [c for c in outcome.op.changes if c.source and c.path]
    detail = re.sub(r"'[^']*'", "", outcome.detail or "").lower()
    named = [c for c in changes if c.path.rsplit(".", 1)[-1].lower() in detail]
    return (named or changes)[:3]


def _where_to_fix(outcome: Outcome) -> str:
    """`` -> change FIELD at FILE:LINE``: the changes the refusal names (``causes``), with the
    manifest line that asks for each."""
    if outcome.http_status in (401, 403):
        return " -> use a key that may write (RECONCILER_API_KEY or --api-key-file)"
    chosen = causes(outcome)
    if not chosen:
        return ""
    return " -> change " + ", ".join(f"{c.path} at {c.source}" for c in chosen)


def _phase(op: Operation) -> int:
    if op.action != "delete":
        return 0
    return 1 + (DELETE_ORDER.index(op.kind) if op.kind in DELETE_ORDER else len(DELETE_ORDER))


def execute(
    plan: Plan,
    client: ApiClient,
    *,
    parallelism: int = DEFAULT_PARALLELISM,
    fail_fast: bool = False,
    on_start: Callable[[Operation], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    apply_time: str | None = None,
    explain: Callable[[str, Mapping[str, Any]], str] | None = None,
) -> ApplyReport:
    """``explain`` rewrites a refusal's detail, given the responses so far (ids into names:
    ``apply.naming.Namer.name``)."""
    started = datetime.now(UTC)
    stamp = apply_time or started.strftime("%Y-%m-%dT%H:%M:%SZ")
    responses: dict[str, Any] = {}
    status: dict[str, Outcome] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def run(op: Operation) -> Outcome:
        if stop.is_set():
            return Outcome(op, SKIPPED, "not started: --fail-fast after an earlier failure")
        if on_start:
            on_start(op)
        note = None
        path: str | None = None
        try:
            path, body = request_for(op, responses, stamp, hide=client.hide)
            try:
                result = _send(client, op, path, body, started)
            except ProblemError as exc:
                # A create that meets 409: someone (a concurrent apply) made it meanwhile. Adopt it
                # when it is found by name; the convergence check then compares it with the manifest.
                recover = recover_for(client, path, body) if op.method == "POST" and exc.status == 409 else None
                result = recover() if recover is not None else None
                if result is None:
                    raise
                note = "already existed (409): adopted the existing resource"
        except ProblemError as exc:
            detail = exc.detail
            if detail and explain is not None:
                with lock:
                    known = dict(responses)
                detail = explain(detail, known)
            return Outcome(op, FAILED, f"{exc.status} {exc.title}" + (f": {detail}" if detail else ""),
                           http_status=exc.status, path=path)
        except ReconcilerError as exc:
            return Outcome(op, FAILED, str(exc), path=path)
        with lock:
            responses[op.id] = result if result is not None else {}
        return Outcome(op, APPLIED, note, path=path)

    interrupted = False
    try:
        for phase in sorted({_phase(op) for op in plan.operations}):
            _run_phase([op for op in plan.operations if _phase(op) == phase], run, status, parallelism, fail_fast,
                       stop, on_done)
    except (_Interrupted, KeyboardInterrupt):  # in a phase (its calls in flight finished) or between two
        interrupted = True
        status.update((op.id, Outcome(op, SKIPPED, INTERRUPTED)) for op in plan.operations if op.id not in status)
    return ApplyReport([status[op.id] for op in plan.operations], responses, interrupted)


def _send(client: ApiClient, op: Operation, path: str, body: Any, started: datetime) -> Any:
    if op.method == "POST":
        return client.post(path, body, recover=recover_for(client, path, body))
    if op.method == "PATCH":
        return client.patch(path, body, recover=recover_for_patch(client, path, body, started))
    if op.method == "PUT":
        return client.put(path, body)
    if op.method == "DELETE":
        return client.delete(path, body, missing_ok=op.action == "delete")
    raise ReconcilerError(f"unsupported method {op.method}")


def _run_phase(
    ops: list[Operation],
    run: Callable[[Operation], Outcome],
    status: dict[str, Outcome],
    parallelism: int,
    fail_fast: bool,
    stop: threading.Event,
    on_done: Callable[[Outcome], None] | None,
) -> None:
    """Event-driven scheduling: each op waits for its in-phase prerequisites (what it depends on,
    and the previous op of the same resource); ready ops start in plan order.

    ``parallelism`` worker threads schedule themselves: a worker that finishes a call records its
    outcome (``on_done``, the dependents it unblocks) and takes the next ready op under one lock, so
    no thread hands each call to another (a hand-off per call cost more CPU than the scheduling).
    The main thread only starts the workers and waits; a Ctrl-C there lets the calls in flight
    finish and starts nothing more."""
    if not ops:
        return
    index = {op.id: i for i, op in enumerate(ops)}
    waits_for: dict[str, set[str]] = {}
    dependents: dict[str, list[str]] = {op.id: [] for op in ops}
    last_of: dict[str, str] = {}
    for op in ops:
        pre = {d for d in op.depends_on if d in index}
        if op.address in last_of:
            pre.add(last_of[op.address])
        last_of[op.address] = op.id
        waits_for[op.id] = pre
        for d in pre:
            dependents[d].append(op.id)
    ready = [i for i, op in enumerate(ops) if not waits_for[op.id]]  # a heap of plan positions
    # Kept by the workers themselves under ``settled``: what is being sent (so that an interrupt
    # waits for it and reports it) and what each call ended with.
    in_flight: set[str] = set()
    ended: dict[str, Outcome] = {}
    settled = threading.Condition()
    over = threading.Event()  # the phase is over: every op finished, or a worker failed
    halted = False  # Ctrl-C: no worker takes another op
    errors: list[BaseException] = []  # what a worker raised (a bug, or from on_done): raised here

    def finish(outcome: Outcome) -> None:
        status[outcome.op.id] = outcome
        if outcome.status == FAILED and fail_fast:
            stop.set()
        if on_done:
            on_done(outcome)
        for nxt in dependents[outcome.op.id]:
            waits_for[nxt].discard(outcome.op.id)
            if not waits_for[nxt]:
                heapq.heappush(ready, index[nxt])

    def blocker(op: Operation) -> str | None:
        for d in op.depends_on:
            if d in status and status[d].status != APPLIED:
                return f"depends on {d}, which was {status[d].status}"
        return "not started: --fail-fast after an earlier failure" if stop.is_set() else None

    def take() -> Operation | None:
        """The next op to send (``settled`` held), waiting while prerequisites run; None when the
        phase is over or halted."""
        while True:
            if halted or errors or over.is_set():
                return None
            while ready:
                op = ops[heapq.heappop(ready)]
                why = blocker(op)
                if why is not None:
                    finish(Outcome(op, SKIPPED, why))
                    continue
                in_flight.add(op.id)  # before `run` looks at `stop`: an interrupt either sees it or stops it
                if ready:  # skipping unblocked more than this worker takes: wake idle ones for them
                    settled.notify(len(ready))
                return op
            if not in_flight:  # nothing ready, nothing running: the phase is over
                over.set()
                settled.notify_all()
                return None
            settled.wait()

    def work() -> None:
        try:
            while True:
                with settled:
                    op = take()
                    if op is None:
                        return
                outcome = Outcome(op, FAILED, "the call raised unexpectedly")
                try:
                    outcome = run(op)
                finally:
                    with settled:
                        in_flight.discard(op.id)
                        ended[op.id] = outcome
                        if not halted:
                            finish(outcome)
                        if not in_flight or halted:  # the phase may be over: every idle worker looks
                            settled.notify_all()
                        elif len(ready) > 1:  # this worker takes one of them itself
                            settled.notify(len(ready) - 1)
        except BaseException as exc:  # noqa: BLE001 - raised again by the main thread
            with settled:
                errors.append(exc)
                over.set()
                settled.notify_all()

    workers = [threading.Thread(target=work, name=f"apply-{n}")  # not daemons: exit waits for calls in flight
               for n in range(min(max(1, parallelism), len(ops)))]
    try:
        for worker in workers:
            _start(worker)
        _wait(over)
    except KeyboardInterrupt:
        # Ctrl-C: a call in flight may already have taken effect, so each is waited for and
        # reported; nothing new starts (a second Ctrl-C aborts the wait). The interrupt may land
        # while the workers are being started (one already sending): waiting for what the workers
        # say is in flight, then reading what they recorded, reports those calls too.
        with settled:
            halted = True
            stop.set()
            settled.notify_all()
            _wait_in_flight(settled, in_flight)
            for op in ops:
                result = ended.get(op.id)
                if op.id not in status and result is not None and result.status != SKIPPED:
                    finish(result)
            for op in ops:
                if op.id not in status:
                    status[op.id] = Outcome(op, SKIPPED, INTERRUPTED)
        raise _Interrupted from None
    with settled:  # after a worker's error: the others finish their calls first, as a pool would
        settled.wait_for(lambda: not in_flight)
    for worker in workers:
        if worker.is_alive():
            worker.join()
    if errors:
        raise errors[0]
    for op in ops:
        if op.id not in status:  # unreachable: a cycle the planner would have refused
            status[op.id] = Outcome(op, SKIPPED, "its prerequisites never completed")


def _start(worker: threading.Thread) -> None:
    worker.start()


def _wait(over: threading.Event) -> None:
    over.wait()


def _wait_in_flight(settled: threading.Condition, in_flight: set[str]) -> None:
    """Wait (``settled`` held) until no call is in flight."""
    settled.wait_for(lambda: not in_flight)
