"""Execute a plan: dependency order, bounded parallelism, references resolved from earlier responses.

Operations run in phases: first every create and update, then the deletes kind by kind in reverse
dependency order. Within a phase an operation starts when everything it depends on has been applied
and no earlier operation of the same resource is still pending (a resource's calls keep their plan
order). A failed operation skips what depends on it; independent work goes on, unless ``fail_fast``.
"""

from __future__ import annotations

import asyncio
import heapq
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

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


INTERRUPTED = "not started: interrupted (Ctrl-C or SIGTERM)"


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


async def execute(
    plan: Plan,
    client: ApiClient,
    *,
    parallelism: int = DEFAULT_PARALLELISM,
    fail_fast: bool = False,
    on_start: Callable[[Operation], None] | None = None,
    on_done: Callable[[Outcome], None] | None = None,
    apply_time: str | None = None,
    explain: Callable[[str, Mapping[str, Any]], str] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> ApplyReport:
    """Run on the client's event loop (``client.run(execute(...))``). Interrupted, it starts
    nothing more, lets the calls in flight finish, and returns the report with ``interrupted`` set:
    by Ctrl-C (the loop cancels it), or once ``stop()`` is true (``watch``'s signals), which is
    asked before each call starts. ``explain`` rewrites a refusal's detail, given the responses so
    far (ids into names: ``apply.naming.Namer.name``)."""
    started = datetime.now(UTC)
    stamp = apply_time or started.strftime("%Y-%m-%dT%H:%M:%SZ")
    responses: dict[str, Any] = {}
    status: dict[str, Outcome] = {}
    failed: list[str] = []  # under --fail-fast, the first failure: nothing new starts after it

    async def run(op: Operation) -> Outcome:
        if on_start:
            on_start(op)
        note = None
        path: str | None = None
        try:
            path, body = request_for(op, responses, stamp, hide=client.hide)
            try:
                result = await _send(client, op, path, body, started)
            except ProblemError as exc:
                # A create that meets 409: someone (a concurrent apply) made it meanwhile. Adopt it
                # when it is found by name; the convergence check then compares it with the manifest.
                recover = recover_for(client, path, body) if op.method == "POST" and exc.status == 409 else None
                result = await recover() if recover is not None else None
                if result is None:
                    raise
                note = "already existed (409): adopted the existing resource"
        except ProblemError as exc:
            detail = exc.detail
            if detail and explain is not None:
                detail = explain(detail, dict(responses))
            return Outcome(op, FAILED, f"{exc.status} {exc.title}" + (f": {detail}" if detail else ""),
                           http_status=exc.status, path=path)
        except ReconcilerError as exc:
            return Outcome(op, FAILED, str(exc), path=path)
        responses[op.id] = result if result is not None else {}
        return Outcome(op, APPLIED, note, path=path)

    interrupted = False
    try:
        for phase in sorted({_phase(op) for op in plan.operations}):
            await _run_phase([op for op in plan.operations if _phase(op) == phase], run, status, parallelism,
                             fail_fast, failed, on_done, stop)
    except _Interrupted:
        interrupted = True
        status.update((op.id, Outcome(op, SKIPPED, INTERRUPTED)) for op in plan.operations if op.id not in status)
    return ApplyReport([status[op.id] for op in plan.operations], responses, interrupted)


async def _send(client: ApiClient, op: Operation, path: str, body: Any, started: datetime) -> Any:
    if op.method == "POST":
        return await client.post(path, body, recover=recover_for(client, path, body))
    if op.method == "PATCH":
        return await client.patch(path, body, recover=recover_for_patch(client, path, body, started))
    if op.method == "PUT":
        return await client.put(path, body)
    if op.method == "DELETE":
        return await client.delete(path, body, missing_ok=op.action == "delete")
    raise ReconcilerError(f"unsupported method {op.method}")


async def _run_phase(
    ops: list[Operation],
    run: Callable[[Operation], Awaitable[Outcome]],
    status: dict[str, Outcome],
    parallelism: int,
    fail_fast: bool,
    failed: list[str],
    on_done: Callable[[Outcome], None] | None,
    stop: Callable[[], bool],
) -> None:
    """Event-driven scheduling on the event loop: each op waits for its in-phase prerequisites (what
    it depends on, and the previous op of the same resource); ready ops start in plan order, at
    most ``parallelism`` at once. Each call is a task; as each ends, its outcome is recorded
    (``on_done``) and the ops it unblocks become ready. Interrupted (cancelled by Ctrl-C, or
    ``stop()``), nothing new starts, the calls in flight are waited for and reported, and
    ``_Interrupted`` is raised."""
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
    running: dict[asyncio.Task[Outcome], Operation] = {}
    errors: list[BaseException] = []  # what a call raised (a bug, or from on_done): raised at the end

    def finish(outcome: Outcome) -> None:
        status[outcome.op.id] = outcome
        if outcome.status == FAILED and fail_fast:
            failed.append(outcome.op.id)
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
        return "not started: --fail-fast after an earlier failure" if failed else None

    def settle(done: set[asyncio.Task[Outcome]]) -> None:
        for task in sorted(done, key=lambda t: index[running[t].id]):
            running.pop(task)
            try:
                finish(task.result())
            except Exception as exc:  # a bug in the call, or in on_done: raised once the calls in flight are done
                errors.append(exc)

    def interrupted() -> NoReturn:
        for op in ops:
            if op.id not in status:
                status[op.id] = Outcome(op, SKIPPED, INTERRUPTED)
        raise _Interrupted

    while True:
        if stop():
            if running:
                settle((await asyncio.wait(running))[0])
            interrupted()
        while ready and len(running) < max(1, parallelism) and not errors:
            op = ops[heapq.heappop(ready)]
            why = blocker(op)
            if why is not None:
                finish(Outcome(op, SKIPPED, why))
                continue
            running[asyncio.ensure_future(run(op))] = op
        if not running:
            break
        try:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # Ctrl-C: a call in flight may already have taken effect, so each is waited for and
            # reported; nothing new starts (a second Ctrl-C aborts the wait).
            _uncancel()
            settle((await asyncio.wait(running))[0])
            interrupted()
        settle(done)
    if errors:
        raise errors[0]
    for op in ops:
        if op.id not in status:  # unreachable: a cycle the planner would have refused
            status[op.id] = Outcome(op, SKIPPED, "its prerequisites never completed")


def _uncancel() -> None:
    """The cancellation is handled (the interrupted report is the answer): the task goes on."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
