"""Secrets kept. Every secret (the API key, every api_key and header value the manifests reference)
is a random canary. One session runs every command (validate, plan in each format and to a plan
file, apply with ``-v`` through failing requests and with ``--rotate-secrets``, drift, export, a
stale plan file, an unreachable service, a wrong key, an oversized header map), then:

- no stdout, stderr, log record (every logger at DEBUG, httpx and the emulator included), plan
  file, exported file, error message or traceback contains a canary;
- on the wire, a canary appears only where it is meant to: the API key in the ``Authorization``
  header, a manifest secret in the body of a create or update of an integration that references
  it; never in a path, a query, another header, another request, or any answer.
"""

from __future__ import annotations

import logging
import signal
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from click.testing import Result

from tests.reliability.generators import API_KEY_ENV, DesiredState, api_key_canary, canary, desired_state
from tests.reliability.harness import Exchange, admin_client, cli_process, run_cli, serve

FAULTS = "seed=3,error_rate=0.1,reset_rate=0.05,commit_then_fail_rate=0.05"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Session:
    state: DesiredState
    key: str
    texts: dict[str, str] = field(default_factory=dict)  # what a user or a log could see, by origin
    exchanges: list[Exchange] = field(default_factory=list)
    integration_names: dict[str, str] = field(default_factory=dict)  # id -> name
    exit_codes: dict[str, int] = field(default_factory=dict)

    @property
    def canaries(self) -> dict[str, str]:
        return {**self.state.secrets, API_KEY_ENV: self.key}

    def keep(self, label: str, result: Result) -> None:
        self.exit_codes[label] = result.exit_code
        self.texts[f"{label}: stdout"] = result.stdout
        self.texts[f"{label}: stderr"] = result.stderr
        if result.exc_info is not None and result.exc_info[0] is not SystemExit:
            self.texts[f"{label}: traceback"] = "".join(traceback.format_exception(*result.exc_info))


@contextmanager
def session_in(tmp: Path) -> Iterator[Session]:
    state = desired_state(80, 13)
    tree = str(state.write(tmp / "m"))
    run = Session(state, api_key_canary())
    env = {**state.env(), API_KEY_ENV: run.key}
    logs = _Collect()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(logs)
    root.setLevel(logging.DEBUG)
    try:
        with serve(admin_key=run.key, faults=FAULTS) as served:
            url = ["--base-url", served.url]

            def cli(label: str, *args: str, extra_env: dict[str, str] | None = None) -> Result:
                result = run_cli([*args], {**env, **(extra_env or {})}, catch=True)
                run.keep(label, result)
                return result

            cli("validate", "validate", tree, "--check-secrets")
            planfile = tmp / "plan.json"
            cli("plan text", "plan", tree, *url, "-v")
            cli("plan json", "plan", tree, *url, "--format", "json")
            cli("plan markdown", "plan", tree, *url, "--format", "markdown")
            cli("plan --out", "plan", tree, *url, "-v", "--out", str(planfile))
            run.texts["plan file"] = planfile.read_text(encoding="utf-8")
            for route, status in (("POST /v2/integrations", 422), ("POST /v2/prompts", 500)):
                httpx.post(f"{served.url}/_emulator/faults", headers={"Authorization": f"Bearer {run.key}"}, json={"route": route, "status": status, "times": 2}
                           ).raise_for_status()
            cli("apply with failures", "apply", tree, *url, "--auto-approve", "-v")
            cli("apply", "apply", tree, *url, "--auto-approve", "-v")
            cli("apply --rotate-secrets", "apply", tree, *url, "--auto-approve", "-v", "--rotate-secrets")
            cli("stale plan file", "apply", str(planfile), *url, "-v")
            cli("drift", "drift", tree, *url, "-v", "--format", "json")
            exported = tmp / "exported"
            cli("export", "export", "--out", str(exported), *url, "-v")
            for path in sorted(exported.rglob("*")):
                if path.is_file():
                    run.texts[f"exported {path.name}"] = path.read_text(encoding="utf-8", errors="replace")
            wrong = canary("wrong-key")
            run.texts["(the wrong key is a secret too)"] = ""
            cli("wrong key", "plan", tree, *url, "-v", extra_env={API_KEY_ENV: wrong})
            run.state.secrets["WRONG_KEY"] = wrong
            # a secret the plan would send is read (and refused when the header map is too big)
            huge = {"HUGE_HEADER": canary("huge") + "x" * 9000}
            big = tmp / "big.yaml"
            big.write_text("kind: Integration\nname: too-big\ntype: LLM\nconfig:\n  provider: CUSTOM\n"
                           "  base_url: https://big.example.com\n  is_default_models_enabled: true\n"
                           "  headers: {X-Big: {env: HUGE_HEADER}}\n", encoding="utf-8")
            cli("oversized header map", "apply", str(big), *url, "--auto-approve", extra_env=huge)  # plan resolves none
            run.state.secrets.update(huge)
            with admin_client(served.url, run.key) as api:
                for type_ in ("LLM", "AGENT"):
                    for item in api.run(api.paginate("/v2/integrations", "integrations", {"type": type_})):
                        run.integration_names[item["id"]] = item["name"]
            run.exchanges = served.recorder.api()
    finally:
        root.removeHandler(logs)
        root.setLevel(old_level)
    run.texts["logs"] = "\n".join(logs.lines)
    yield run


def test_every_command_keeps_every_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One session (it is the slow part), four promises; each helper below is one of them. It runs
    in its directory: the working tree a plan file's files must lie in."""
    monkeypatch.chdir(tmp_path)
    with session_in(tmp_path) as session:
        every_command_ran_and_the_failures_were_real(session)
        no_output_log_plan_file_export_or_traceback_contains_a_secret(session)
        the_plan_file_marks_secrets_as_sensitive(session)
        a_secret_crosses_the_wire_only_in_the_requests_meant_to_carry_it(session)
        no_answer_from_the_service_repeats_a_secret(session)


def every_command_ran_and_the_failures_were_real(session: Session) -> None:
    codes = session.exit_codes
    assert codes["validate"] == 0 and codes["plan text"] == 0 and codes["drift"] == 0 and codes["export"] == 0
    assert codes["apply with failures"] == 1 and "injected fault" in session.texts["apply with failures: stdout"]
    assert codes["apply"] == 0 and codes["apply --rotate-secrets"] == 0
    assert codes["stale plan file"] == 1 and "stale" in session.texts["stale plan file: stderr"]
    assert codes["wrong key"] == 1 and "401" in session.texts["wrong key: stderr"]
    assert codes["oversized header map"] == 1
    assert "over the 8,175-byte limit" in session.texts["oversized header map: stderr"]
    assert "retrying" in session.texts["apply with failures: stderr"]  # -v reported retries
    assert session.texts["logs"]  # httpx and the emulator did log


def no_output_log_plan_file_export_or_traceback_contains_a_secret(session: Session) -> None:
    leaks = [(origin, name) for origin, text in session.texts.items()
             for name, value in session.canaries.items() if value in text]
    assert leaks == []
    assert not [label for label in session.texts if label.endswith("traceback")]  # nothing escaped


def the_plan_file_marks_secrets_as_sensitive(session: Session) -> None:
    assert '"(sensitive)"' in session.texts["plan file"]


def a_secret_crosses_the_wire_only_in_the_requests_meant_to_carry_it(session: Session) -> None:
    wrong: list[str] = []
    carried: set[str] = set()
    for e in session.exchanges:
        header_text = "\n".join(f"{k}: {v}" for k, v in e.headers)
        body = e.body.decode("utf-8", "replace")
        for name, value in session.canaries.items():
            in_header, in_body = value in header_text, value in body
            in_line = value in e.path or value in e.query
            if not (in_header or in_body or in_line):
                continue
            if name == API_KEY_ENV:
                if in_body or in_line or dict(e.headers).get("authorization") != f"Bearer {value}":
                    wrong.append(f"API key in {e.method} {e.path} outside Authorization")
                continue
            if name == "WRONG_KEY":
                if in_body or in_line:
                    wrong.append(f"the wrong key in {e.method} {e.path} outside Authorization")
                continue
            carrier = _integration_written(e, session.integration_names)
            if in_header or in_line or carrier not in session.state.carriers.get(name, set()):
                wrong.append(f"{name} in {e.method} {e.path} (writes {carrier})")
            else:
                carried.add(name)
    assert wrong == []
    assert carried == set(session.state.carriers)  # every secret was sent where it belongs


def no_answer_from_the_service_repeats_a_secret(session: Session) -> None:
    leaks = [(e.method, e.path, name) for e in session.exchanges for name, value in session.canaries.items()
             if value in e.response_text()]
    assert leaks == []


def test_a_traceback_of_an_interrupted_apply_holds_no_secret(tmp_path: Path) -> None:
    """Ctrl-C in the middle of ``apply -v`` (requests in flight, secrets resolved in memory) prints
    the report of what was done, or Python's own traceback: neither may carry a secret."""
    state = desired_state(40, 21)
    tree = str(state.write(tmp_path / "m"))
    key = api_key_canary()
    with serve(admin_key=key, faults="latency_ms=300") as served:
        proc = cli_process(["apply", tree, "--auto-approve", "-v", "--base-url", served.url],
                           {**state.env(), API_KEY_ENV: key})
        deadline = time.monotonic() + 30
        while not any(e.method == "POST" for e in served.recorder.api()) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, err[-2000:]
    # the report of what was applied and what was not (the signal lands in a phase or between two), or
    # click's abort if it lands after the calls; never a traceback, and no secret either way
    assert "apply interrupted:" in err or "Aborted!" in err, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    text = out + err
    assert [name for name, value in {**state.secrets, API_KEY_ENV: key}.items() if value in text] == []


def test_a_traceback_from_an_unexpected_error_mid_apply_holds_no_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (here: decoding an answer raises) escapes as a traceback through every layer that held
    a resolved secret: the traceback, with its chained causes, names none."""
    from reconciler.client import http

    state = desired_state(20, 22)
    tree = str(state.write(tmp_path / "m"))
    key = api_key_canary()

    def broken(self: http.ApiClient, response: httpx.Response, method: str, path: str) -> object:
        if method == "POST":
            raise RuntimeError(f"cannot decode the answer to {method} {path}")
        return original(self, response, method, path)

    original = http.ApiClient._decode
    monkeypatch.setattr(http.ApiClient, "_decode", broken)
    with serve(admin_key=key) as served:
        result = run_cli(["apply", tree, "--auto-approve", "-v", "--base-url", served.url],
                         {**state.env(), API_KEY_ENV: key}, catch=True)
    assert result.exc_info is not None and result.exc_info[0] is not SystemExit
    text = "".join(traceback.format_exception(*result.exc_info)) + result.stdout + result.stderr
    assert "cannot decode the answer" in text
    assert [name for name, value in {**state.secrets, API_KEY_ENV: key}.items() if value in text] == []


def _integration_written(e: Exchange, names: dict[str, str]) -> str | None:
    """The integration a request creates or updates (by its body's name, or its id in the path)."""
    import json

    if e.method == "POST" and e.path == "/v2/integrations":
        try:
            return str(json.loads(e.body)["name"])
        except (ValueError, KeyError):
            return None
    if e.method == "PATCH" and e.path.startswith("/v2/integrations/"):
        return names.get(e.path.rsplit("/", 1)[1])
    return None
