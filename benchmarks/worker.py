"""One measured run of the reconciler (or of the naive baseline), in a process of its own so its
CPU time and peak RSS are its own: ``python -m benchmarks.worker JOB_JSON``; prints one JSON line.

The reconciler runs in-process through the library (``workflow.load``, ``plan_against``,
``run_apply``, ``confirm_converged``) against the emulator over a real socket.

``cpu_s`` is the process's CPU time (``time.process_time``), split by phase in ``phase_cpu``. Only
in the run that measures the parse floor (``floor``, one request at a time) is the transport timed
(``http_cpu_s``: the CPU between sending each request and its body received), since timing every
exchange costs CPU of its own. Wall time covers the whole job, manifest loading included, as a
user's command does; interpreter start-up and imports are not measured (they happen before the
clock starts). ``bare_loop`` (synchronous, one request after another) and ``bare_async_loop`` (ten
at a time on the event loop) are the floors of sending requests; ``profiled`` runs a job under
pyinstrument.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.naive import naive_writes
from reconciler.client.http import DEFAULT_TIMEOUT, ApiClient, StatsSnapshot, build_http_client
from reconciler.client.lean import LeanClient
from reconciler.client.live import read_live
from reconciler.client.settings import DEFAULT_PARALLELISM
from reconciler.plan.model import PlanOptions
from reconciler.plan.planner import make_plan
from reconciler.workflow import confirm_converged, load, run_apply


class TimedTransport(httpx.AsyncBaseTransport):
    """Adds up the CPU time spent in the wrapped transport, body included (and keeps the bodies
    when asked, for ``parse_floor``). Timed runs send one request at a time (``Job.floor``), so
    the CPU between a request and its answer is the transport's own."""

    def __init__(self, inner: httpx.AsyncBaseTransport, keep_bodies: bool = False, timed: bool = True) -> None:
        self.inner = inner
        self.timed = timed
        self.cpu_s = 0.0
        self.bodies: list[bytes] | None = [] if keep_bodies else None
        self.urls: list[str] = []  # the GETs sent, when bodies are kept (for ``bare_loop``)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not self.timed:
            return await self.inner.handle_async_request(request)
        start = time.process_time()
        try:
            response = await self.inner.handle_async_request(request)
            await response.aread()
            if self.bodies is not None:
                self.bodies.append(response.content)
                if request.method == "GET":
                    self.urls.append(request.url.raw_path.decode("ascii"))
            return response
        finally:
            self.cpu_s += time.process_time() - start

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass(frozen=True)
class Job:
    mode: str  # "ours" or "naive"
    action: str  # "plan", "rehearse" (plan --rehearse) or "apply"
    manifests: str
    url: str
    parallelism: int = DEFAULT_PARALLELISM  # the CLI's default
    api_key: str = "admin-key"
    floor: bool = False  # also measure parse_floor (keeps every response body: not for RSS figures)
    bare: str | None = None  # a file of URLs: run ``bare_loop`` over them instead of the reconciler
    profile: bool = False  # run under pyinstrument (parallelism 1: every request in the main thread)
    urls_out: str | None = None  # with ``floor``: write the GET URLs sent here
    bare_async: bool = False  # with ``bare``: the bare async loop (``bare_async_loop``) instead
    requests: int = 0  # with ``bare_async``: send this many requests (the URLs repeated)
    #: "lean": the client the CLI builds (``lean.LeanClient``); "httpx": an ``httpx.AsyncClient`` with
    #: httpx's own connection pool; "httpx-over-lean": an ``httpx.AsyncClient`` over the lean client's
    #: connections (``LeanTransport``): the two pieces the lean client replaces, measured one at a time
    pool: str = "lean"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Job:
        return cls(**data)


def _client(job: Job, parallelism: int) -> tuple[ApiClient, TimedTransport | None]:
    """The client of a run, built as the CLI builds it (``build_http_client``). Only the floor's own
    run times its transport (``http_cpu_s``: one request at a time, httpx's pool of one
    connection), since timing every exchange costs CPU of its own; ``job.pool`` (see ``Job``) swaps
    the lean client for httpx's pieces, to measure what each saves."""
    limits = httpx.Limits(max_connections=parallelism, max_keepalive_connections=parallelism)
    transport: TimedTransport | None = None
    given: httpx.AsyncBaseTransport | None = None
    if job.floor:
        given = transport = TimedTransport(httpx.AsyncHTTPTransport(limits=limits), keep_bodies=True)
    elif job.pool == "httpx":
        given = httpx.AsyncHTTPTransport(limits=limits)
    elif job.pool == "httpx-over-lean":
        given = LeanTransport(job.url, parallelism)
    http = build_http_client(job.url, job.api_key, parallelism=parallelism, transport=given)
    return ApiClient(http, parallelism=parallelism), transport


def _delta(after: StatsSnapshot, before: StatsSnapshot) -> dict[str, Any]:
    methods = sorted(set(after.requests) | set(before.requests))
    return {"requests": {m: after.requests.get(m, 0) - before.requests.get(m, 0) for m in methods
                         if after.requests.get(m, 0) - before.requests.get(m, 0)},
            "attempts": after.attempts - before.attempts, "throttled": after.throttled - before.throttled,
            "retries": after.retries - before.retries, "wait_s": round(after.wait_seconds - before.wait_seconds, 3)}


def _longest_chain(plan: Any) -> int:
    """The most operations of the plan that must run one after another (its dependency depth)."""
    depth: dict[str, int] = {}
    for op in plan.operations:  # operations come after what they depend on
        depth[op.id] = 1 + max((depth.get(d, 0) for d in op.depends_on), default=0)
    return max(depth.values(), default=0)


def run(job: Job) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    phases: dict[str, float] = {}
    phase_cpu: dict[str, float] = {}
    out: dict[str, Any] = {"mode": job.mode, "action": job.action}
    mark, cpu_mark = wall0, cpu0

    def phase(name: str) -> None:
        nonlocal mark, cpu_mark
        now, now_cpu = time.perf_counter(), time.process_time()
        phases[name] = round(now - mark, 3)
        phase_cpu[name.replace("_s", "_cpu_s")] = round(now_cpu - cpu_mark, 3)
        mark, cpu_mark = now, now_cpu

    manifests = load([job.manifests])
    phase("load_s")
    parallelism = job.parallelism if job.mode == "ours" and not job.floor else 1
    client, transport = _client(job, parallelism)
    phase("client_s")  # built before the clock starts in the bare loops: not the read's
    options = PlanOptions(version_name="bench")
    with client:
        # plan_against(manifests, client, options) is read_live then make_plan; called apart here to
        # time them apart (the naive baseline reads with parallelism 1, so the same code serves both).
        # the naive baseline keeps every live example whole (its writes look them up by key)
        live = client.run(read_live(client, manifests.read_scope(), manifests if job.mode == "ours" else None))
        phase("read_s")
        plan = make_plan(manifests, live, options)
        phase("plan_s")
        out["plan_operations"] = len(plan.operations)
        out["apply_chain"] = _longest_chain(plan)
        out["plan_summary"] = plan.summary()
        if job.action == "rehearse":  # plan --rehearse: the plan executed on a replica, re-read, planned again
            from reconciler.rehearse import rehearse

            rehearsal = rehearse(plan, live, manifests, parallelism=parallelism)
            phase("rehearse_s")
            out["rehearsal"] = {k: v for k, v in rehearsal.to_json().items() if k not in ("remaining", "unknown")}
        before_apply = client.stats.snapshot()
        if job.action == "apply":
            if job.mode == "ours":
                out["failed"] = 0
                out["converged"] = plan.empty
                if not plan.empty:
                    report = run_apply(plan, client, parallelism=parallelism, fail_fast=False)
                    out["failed"] = len(report.of("failed")) + len(report.of("skipped"))
                    out["failures"] = [f"{o.op.address}: {o.detail}" for o in report.outcomes
                                       if o.status != "applied"][:5]
                    phase("apply_s")
                    out["apply_stats"] = _delta(client.stats.snapshot(), before_apply)
                    before_confirm = client.stats.snapshot()
                    again = confirm_converged(manifests, client, plan, live, report)
                    phase("confirm_s")
                    out["confirm_stats"] = _delta(client.stats.snapshot(), before_confirm)
                    out["converged"] = again.empty
                    out["not_converged"] = [op.address for op in again.operations][:5]
            else:
                sent, failed = client.run(naive_writes(manifests, live, client))
                out["failed"] = failed
                phase("apply_s")
                out["apply_stats"] = _delta(client.stats.snapshot(), before_apply)
        stats = client.stats.snapshot()
        pacing = client.pacer.state()
        out["pacing"] = {"rate": round(pacing.rate, 2) if pacing.rate else None, "collisions": pacing.collisions,
                         "paced_s": round(pacing.paced_s, 3)}
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    out.update(
        wall_s=round(wall, 3), cpu_s=round(cpu, 3), http_cpu_s=round(transport.cpu_s, 3) if transport else None,
        planner_cpu_s=round(max(0.0, cpu - (transport.cpu_s if transport else 0.0)), 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        phases=phases, phase_cpu=phase_cpu, client=_delta(stats, StatsSnapshot({}, 0, 0, 0, 0.0)),
    )
    if transport is not None and transport.bodies is not None:
        out["floor"] = parse_floor(Path(job.manifests), transport.bodies, transport.cpu_s)
        if job.urls_out:
            Path(job.urls_out).write_text("\n".join(transport.urls), encoding="utf-8")
    return out


def bare_loop(job: Job) -> dict[str, Any]:
    """The CPU floor of sending requests: the same GETs (``job.bare``, one URL a line) with the same
    httpx settings as the client's (headers, timeouts, TLS, no redirects), one after another on a
    synchronous ``httpx.Client``, each body parsed as JSON; nothing else."""
    urls = _urls(job)
    like = build_http_client(job.url, job.api_key, parallelism=job.parallelism)
    http = httpx.Client(base_url=job.url, headers=like.headers, timeout=like.timeout, follow_redirects=False,
                        transport=httpx.HTTPTransport(limits=httpx.Limits(max_connections=1)))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    with http:
        for url in urls:
            http.get(url).json()
    return _bare_figures("bare", urls, wall0, cpu0)


def bare_async_loop(job: Job) -> dict[str, Any]:
    """The floor of the event loop: the same GETs (``job.bare``, repeated up to ``job.requests``
    when given), ``job.parallelism`` at a time on the ``httpx.AsyncClient`` the reconciler builds
    (``build_http_client``), each body parsed as JSON; no retry, no pacing, no plan. Its wall at an
    injected latency is the latency floor of a run with as many requests."""
    import asyncio

    urls = _urls(job)
    if job.requests:
        urls = [urls[i % len(urls)] for i in range(job.requests)]
    http = build_http_client(job.url, job.api_key, parallelism=job.parallelism)

    async def send() -> None:
        queue = iter(urls)

        async def worker() -> None:
            for url in queue:
                (await http.request("GET", url)).json()

        try:
            await asyncio.gather(*(worker() for _ in range(job.parallelism)))
        finally:
            await http.aclose()

    wall0, cpu0 = time.perf_counter(), time.process_time()
    asyncio.run(send())
    return _bare_figures("bare_async", urls, wall0, cpu0)


class LeanTransport(httpx.AsyncBaseTransport):
    """``lean.LeanClient``'s connections under an ``httpx.AsyncClient`` (``Job.pool``)."""

    def __init__(self, base_url: str, keep: int) -> None:
        self.lean = LeanClient(base_url, headers={}, timeout=DEFAULT_TIMEOUT, ssl_context=None, keep=keep)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k != "host"}
        return await self.lean.request(request.method, request.url.raw_path.decode("ascii"),
                                       content=request.content or None, headers=headers)

    async def aclose(self) -> None:
        await self.lean.aclose()


def _urls(job: Job) -> list[str]:
    return [u for u in Path(str(job.bare)).read_text(encoding="utf-8").splitlines() if u]


def _bare_figures(mode: str, urls: list[str], wall0: float, cpu0: float) -> dict[str, Any]:
    cpu = time.process_time() - cpu0
    return {"mode": mode, "requests": len(urls), "wall_s": round(time.perf_counter() - wall0, 3),
            "cpu_s": round(cpu, 3), "cpu_per_request_ms": round(1000 * cpu / len(urls), 4) if urls else 0.0,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def profiled(job: Job) -> dict[str, Any]:
    """``run`` under pyinstrument with parallelism 1 (every request sent and answered one after
    another, so own time is not interleaved), and the top costs by own time, grouped by function."""
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    out = run(Job(**{**job.__dict__, "profile": False, "parallelism": 1}))
    session = profiler.stop()
    own: dict[str, float] = {}
    waited = 0.0
    stack = [session.root_frame()]
    while stack:
        frame = stack.pop()
        if frame is None:
            continue
        stack.extend(frame.children)
        if frame.is_synthetic or frame.total_self_time <= 0:
            continue
        if frame.function.rpartition(".")[2] in WAITING:  # pyinstrument samples wall time: a socket wait is not CPU
            waited += frame.total_self_time
            continue
        where = f"{frame.function} ({frame.file_path_short}:{frame.line_no})"
        own[where] = own.get(where, 0.0) + frame.total_self_time
    total = sum(own.values()) or 1.0
    top = sorted(own.items(), key=lambda kv: kv[1], reverse=True)[:TOP_COSTS]
    out["profile"] = {"sampled_s": round(total, 3), "waiting_s": round(waited, 3),
                      "top": [{"where": w, "s": round(t, 3), "share": round(t / total, 3)} for w, t in top]}
    return out


TOP_COSTS = 5
#: Functions whose own time is waiting on a socket, a lock or a clock, not CPU.
WAITING = frozenset({"recv_into", "recv", "select", "poll", "acquire", "sleep", "wait", "send", "sendall",
                     "connect", "readinto", "get"})


def parse_floor(manifests: Path, bodies: list[bytes], http_cpu_s: float) -> dict[str, float]:
    """The CPU a plan cannot do without, whatever its design: only *parsing* its inputs with the
    fastest calls of the libraries it reads them with (libyaml's events for every manifest, no
    values built; one ``json.loads`` per examples file, as a single array; ``json.loads`` of every
    response body), nothing checked, compared or planned. Beside the transport's CPU this bounds
    the share of a CPU-bound run that can be outside HTTP from below: ``floor / (floor + http)``."""
    manifest_texts = [p.read_text(encoding="utf-8") for p in sorted(manifests.rglob("*"))
                      if p.suffix in (".yaml", ".yml")]
    example_texts = [p.read_text(encoding="utf-8") for p in sorted(manifests.rglob("*.jsonl"))]
    start = time.process_time()
    for text in manifest_texts:
        for _ in yaml.parse(text, Loader=yaml.CSafeLoader):
            pass
    yaml_s = time.process_time() - start
    start = time.process_time()
    for text in example_texts:
        json.loads("[" + ",".join(line for line in text.splitlines() if line.strip()) + "]")
    examples_s = time.process_time() - start
    start = time.process_time()
    for body in bodies:
        if body:
            json.loads(body)
    bodies_s = time.process_time() - start
    floor = yaml_s + examples_s + bodies_s
    return {"yaml_events_s": round(yaml_s, 3), "examples_json_s": round(examples_s, 3),
            "responses_json_s": round(bodies_s, 3), "total_s": round(floor, 3), "http_cpu_s": round(http_cpu_s, 3),
            "share": round(floor / (floor + http_cpu_s), 3) if floor + http_cpu_s else 0.0,
            "manifest_files": len(manifest_texts), "examples_files": len(example_texts), "responses": len(bodies)}


def main(argv: list[str]) -> int:
    job = Job.from_json(json.loads(argv[0]))
    if job.bare:
        result = bare_async_loop(job) if job.bare_async else bare_loop(job)
    else:
        result = profiled(job) if job.profile else run(job)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
