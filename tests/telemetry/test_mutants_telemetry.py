"""Telemetry at edges mutation testing found unpinned (reconciler/telemetry.py): the ``*_created``
series of the metrics file, on by the environment's choice only, and the error for a figure that
does not exist."""

from __future__ import annotations

import threading
from pathlib import Path

import prometheus_client.metrics
import pytest

from reconciler.telemetry import Telemetry


def series(tmp_path: Path) -> set[str]:
    t = Telemetry()
    t.cycle_done("ok", 1.0, success=True)
    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {line.split("{")[0].split(" ")[0] for line in path.read_text().splitlines() if not line.startswith("#")}


def test_the_metrics_file_has_no_created_series_unless_the_environment_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # a fresh process's default
    monkeypatch.delenv("PROMETHEUS_DISABLE_CREATED_SERIES", raising=False)
    names = series(tmp_path)
    assert "reconciler_cycles_total" in names
    assert not any(n.endswith("_created") for n in names)


def test_the_created_series_are_written_when_the_environment_asks_for_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prometheus_client.metrics, "_use_created", True)  # what prometheus_client read from it
    monkeypatch.setenv("PROMETHEUS_DISABLE_CREATED_SERIES", "false")
    assert "reconciler_cycles_created" in series(tmp_path)


def test_a_figure_that_does_not_exist_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"^'Telemetry' object has no attribute 'nope'$"):
        Telemetry().nope  # noqa: B018
    assert getattr(Telemetry(), "nope", None) is None


def samples(t: Telemetry, tmp_path: Path, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    from prometheus_client.parser import text_string_to_metric_families

    path = tmp_path / "reconciler.prom"
    t.write_textfile(str(path))
    return {tuple(sorted(s.labels.items())): s.value for f in text_string_to_metric_families(path.read_text())
            if f.name == family for s in f.samples if s.name == family + "_total"}


def test_policy_verdicts_are_counted_by_effect_from_zero_and_each_is_logged(tmp_path: Path) -> None:
    import io
    import json

    from reconciler.plan.model import Verdict

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, clock=lambda: 0.0)
    assert samples(t, tmp_path, "reconciler_policy_verdicts") == {
        (("effect", "deny"),): 0.0, (("effect", "require_approval"),): 0.0, (("effect", "warn"),): 0.0}
    t.count_verdicts([Verdict("no-deletes", "deny", "Prompt/research/p", "no", "policy.yaml:3"),
                      Verdict("review", "warn", None, "look", "policy.yaml:9"),
                      Verdict("no-deletes", "deny", "Prompt/research/q", "no", "policy.yaml:3")])
    assert samples(t, tmp_path, "reconciler_policy_verdicts") == {
        (("effect", "deny"),): 2.0, (("effect", "require_approval"),): 0.0, (("effect", "warn"),): 1.0}
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [{k: v for k, v in e.items() if k != "ts"} for e in events] == [
        {"event": "policy", "rule": "no-deletes", "effect": "deny", "resource": "Prompt/research/p", "message": "no",
         "source": "policy.yaml:3"},
        {"event": "policy", "rule": "review", "effect": "warn", "message": "look", "source": "policy.yaml:9"},
        {"event": "policy", "rule": "no-deletes", "effect": "deny", "resource": "Prompt/research/q", "message": "no",
         "source": "policy.yaml:3"}]


def test_without_metrics_verdicts_are_only_logged() -> None:
    import io

    from reconciler.plan.model import Verdict

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, metrics=False)
    t.count_verdicts([Verdict("r", "warn", None, "m", "p.yaml:1")])
    assert '"event": "policy"' in stream.getvalue()
    assert "registry" not in vars(t)  # no figure was built


def test_notifications_are_counted_by_kind_and_outcome(tmp_path: Path) -> None:
    t = Telemetry()
    t.notifications.labels("drift", "ok").inc()
    assert samples(t, tmp_path, "reconciler_notifications") == {(("kind", "drift"), ("outcome", "ok")): 1.0}


def test_a_request_event_gives_the_exchange_s_duration_in_seconds() -> None:
    import io
    import json

    import httpx

    from reconciler.client.http import ApiClient, Exchange

    stream = io.StringIO()
    t = Telemetry(log_format="json", stream=stream, metrics=False)
    http = httpx.AsyncClient(base_url="http://127.0.0.1:9", transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with ApiClient(http) as client:
        t.attach(client, log_requests=True)
        for observe in client.observers:  # an exchange that took 1.25 s, as the client tells it
            observe(Exchange("GET", "/v2/spaces", None, 200, 1.25, 1))
    (event,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert event["duration_s"] == 1.25


class _Gate:
    """Stands for the telemetry's build lock: each thread that reaches it (its figures not built yet)
    says so, then waits until the test lets it through; the real lock still serialises them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived = {name: threading.Event() for name in ("first", "second")}
        self.go = {name: threading.Event() for name in ("first", "second")}

    def __enter__(self) -> None:
        name = threading.current_thread().name
        self.arrived[name].set()
        assert self.go[name].wait(30)
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_two_threads_reaching_the_unbuilt_figures_at_once_count_into_one_registry(tmp_path: Path) -> None:
    """Two apply workers finish their first operations together: both find the figures not built; the
    first builds them and counts; the second must count into the same figures, not build new ones (which
    would drop the first count from the metrics file)."""
    t = Telemetry()
    gate = _Gate()
    t._build_lock = gate  # type: ignore[assignment]
    threads = {name: threading.Thread(target=t.observe_outcome, args=("create", "applied"), name=name)
               for name in ("first", "second")}
    for name, thread in threads.items():
        thread.start()
        assert gate.arrived[name].wait(30)
    gate.go["first"].set()
    threads["first"].join(30)
    gate.go["second"].set()
    threads["second"].join(30)
    assert samples(t, tmp_path, "reconciler_apply_operations")[(("action", "create"), ("outcome", "applied"))] == 2
