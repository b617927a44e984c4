"""The commands, flags and connection options, each end to end through the CLI over the emulator's socket:
exit codes (2 for changes, 1 for an apply that does not converge), export of one space, the apply
flags (--fail-fast, --allow-empty, --target, --version-name, --rotate-secrets, --parallelism), the
connection flags (--api-key-file, --region, --host, --ca-file), the interactive confirmation, the
emulator's --rate-limit and --faults, a reader key, and TLS against a self-signed certificate."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from tests.conftest import EMULATOR_ADMIN, free_port
from tests.e2e.conftest import ENV, ROOT
from tests.e2e.test_cli_e2e import edit

Cli = Callable[..., Result]
Factory = Callable[..., tuple[str, Any]]


def run_at(url: str, *args: str, input: str | None = None) -> Result:
    """The CLI in-process against ``url`` (the environment is the test's: see ``env``)."""
    command = list(args)
    if url and command[0] in ("plan", "apply", "drift", "export"):
        command += ["--base-url", url]
    return CliRunner().invoke(main, command, input=input, catch_exceptions=False)


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in ENV.items():
        monkeypatch.setenv(k, v)
    for k in ("RECONCILER_BASE_URL", "SSL_CERT_FILE", "SSL_CERT_DIR", "RECONCILER_CA_FILE"):
        monkeypatch.delenv(k, raising=False)


def admin(url: str, **kw: Any) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": "Bearer admin-key"}, timeout=10, **kw)


def names(url: str, path: str, key: str, **params: Any) -> list[str]:
    with admin(url) as api:
        return sorted(item["name"] for item in api.get(path, params={"limit": 100, **params}).json()[key])


def space_id(url: str, name: str) -> str:
    with admin(url) as api:
        return str(next(s["id"] for s in api.get("/v2/spaces").json()["spaces"] if s["name"] == name))


# ---------------------------------------------------------------- exit codes


def test_plan_detailed_exitcode_exits_2_when_there_are_changes(cli: Cli, tree: Path) -> None:
    result = cli("plan", str(tree), "--detailed-exitcode")
    assert result.exit_code == 2, result.output
    assert "to create" in result.stdout


def swallow_prompt_patches(app: Any) -> Any:
    """An ASGI layer that answers every PATCH of a prompt 200 without passing it on: the write
    'succeeds' but changes nothing, as a service that drops a field would."""
    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "PATCH" and scope["path"].startswith("/v2/prompts/"):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b"{}"})
            return
        await app(scope, receive, send)

    return wrapped


def test_an_apply_that_does_not_converge_exits_1_and_names_what_still_differs(
        env: None, tree: Path, emulator_factory: Factory) -> None:
    url, _ = emulator_factory(wrap=swallow_prompt_patches)
    assert run_at(url, "apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "research/prompts.yaml", "description: Summarize a support ticket", "description: Summaries")
    result = run_at(url, "apply", str(tree), "--auto-approve")
    assert result.exit_code == 1, result.output
    assert "did not converge" in result.stderr
    assert "Prompt/research/summarize-ticket: description" in result.stderr


def test_a_refused_create_says_what_to_change_and_where_not_re_run(cli: Cli, tree: Path,
                                                                    server: tuple[str, Any]) -> None:
    httpx.post(f"{server[0]}/_emulator/faults", headers=EMULATOR_ADMIN, json={"route": "POST /v2/prompts", "status": 422, "times": 5}
               ).raise_for_status()
    result = cli("apply", str(tree), "--auto-approve")
    assert result.exit_code == 1
    prompts = tree / "research/prompts.yaml"
    assert re.search(rf"Prompt/research/summarize-ticket: 422 .* -> change \S+ at {re.escape(str(prompts))}:\d+",
                     result.stderr), result.stderr
    assert "re-run to converge" not in result.stderr and "Fix them and re-run." in result.stderr


# ---------------------------------------------------------------- export


def test_export_space_exports_that_space_only(cli: Cli, tree: Path, server: tuple[str, Any], tmp_path: Path) -> None:
    url = server[0]
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    with admin(url) as api:
        api.post("/v2/prompts", json={"space_id": space_id(url, "default"), "name": "elsewhere", "version": {
            "commit_message": "x", "provider": "VENDOR_A", "messages": [{"role": "user", "content": "hi"}]}}
        ).raise_for_status()
    out = tmp_path / "exported"
    result = cli("export", "--space", "research", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (out / "research/prompts.yaml").is_file()
    assert not (out / "default").exists()
    assert "elsewhere" not in "".join(p.read_text() for p in out.rglob("*.yaml"))
    unknown = cli("export", "--space", "nowhere", "--out", str(tmp_path / "other"))
    assert unknown.exit_code == 1 and "no such space: nowhere" in unknown.stderr


# ---------------------------------------------------------------- apply flags


def test_fail_fast_starts_nothing_after_the_first_failure(cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    url = server[0]
    httpx.post(f"{url}/_emulator/faults", headers=EMULATOR_ADMIN, json={"route": "POST /v2/integrations", "status": 422, "times": 50}
               ).raise_for_status()
    fast = cli("apply", str(tree), "--auto-approve", "--fail-fast", "--parallelism", "1")
    assert fast.exit_code == 1
    assert "not started: --fail-fast after an earlier failure" in fast.stdout
    assert names(url, "/v2/prompts", "prompts") == []  # independent of the integration, yet not started
    slow = cli("apply", str(tree), "--auto-approve", "--parallelism", "1")
    assert slow.exit_code == 1
    assert "--fail-fast" not in slow.stdout
    assert names(url, "/v2/prompts", "prompts") == ["summarize-ticket"]  # without it, independent work goes on


def test_prune_that_empties_a_kind_needs_allow_empty(cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "research/prompts.yaml", "name: summarize-ticket", "name: summarize-ticket-v2")
    refused = cli("plan", str(tree), "--prune")
    assert refused.exit_code == 1
    assert "--allow-empty" in refused.stderr and "every live Prompt in space research" in refused.stderr
    allowed = cli("apply", str(tree), "--prune", "--allow-empty", "--auto-approve")
    assert allowed.exit_code == 0, allowed.output
    assert names(server[0], "/v2/prompts", "prompts") == ["summarize-ticket-v2"]


def test_apply_target_creates_only_the_target_and_what_it_needs(cli: Cli, tree: Path,
                                                                  server: tuple[str, Any]) -> None:
    result = cli("apply", str(tree), "--auto-approve", "--target", "Evaluator/research/faithfulness")
    assert result.exit_code == 0, result.output
    url = server[0]
    assert names(url, "/v2/evaluators", "evaluators") == ["faithfulness"]
    assert names(url, "/v2/integrations", "integrations", type="LLM") == ["vendor-a-prod"]  # its dependency
    assert names(url, "/v2/prompts", "prompts") == [] and names(url, "/v2/datasets", "datasets") == []


def test_version_name_names_the_dataset_version_an_apply_makes(cli: Cli, tree: Path, server: tuple[str, Any]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    edit(tree / "research/data/golden-tickets.jsonl", '"expected": "bug"', '"expected": "defect"')
    assert cli("apply", str(tree), "--auto-approve", "--version-name", "release-7").exit_code == 0
    with admin(server[0]) as api:
        dataset = next(d for d in api.get("/v2/datasets").json()["datasets"] if d["name"] == "golden-tickets")
        versions = api.get(f"/v2/datasets/{dataset['id']}").json()["versions"]
    assert versions[0]["name"] == "release-7"


def test_rotate_secrets_sends_every_secret_again(cli: Cli, tree: Path, stats: Any,
                                                 reset_stats: Callable[[], None]) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    assert cli("plan", str(tree), "--detailed-exitcode").exit_code == 0  # secrets exist: nothing to send
    reset_stats()
    result = cli("apply", str(tree), "--auto-approve", "--rotate-secrets")
    assert result.exit_code == 0, result.output
    writes = {k: v for k, v in stats().items() if not k.startswith("GET ")}
    assert writes == {"PATCH /v2/integrations/{integration_id}": 2}  # vendor-a-prod's api_key, the agent's header


def peak_concurrency(app: Any, record: list[int]) -> Any:
    """An ASGI layer that holds each /v2 request 100 ms and records how many were in flight at once."""
    state = {"now": 0}

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v2/"):
            await app(scope, receive, send)
            return
        state["now"] += 1
        record.append(state["now"])
        try:
            await asyncio.sleep(0.1)  # long enough for the client's threads to overlap, even on a busy machine
            await app(scope, receive, send)
        finally:
            state["now"] -= 1

    return wrapped


@pytest.mark.parametrize("parallelism", [1, 4])
def test_parallelism_bounds_the_requests_in_flight(env: None, tree: Path, emulator_factory: Factory,
                                                   parallelism: int) -> None:
    seen: list[int] = []
    url, _ = emulator_factory(wrap=lambda app: peak_concurrency(app, seen))
    result = run_at(url, "apply", str(tree), "--auto-approve", "--parallelism", str(parallelism))
    assert result.exit_code == 0, result.output
    assert max(seen) <= parallelism
    assert max(seen) == 1 if parallelism == 1 else max(seen) >= 2


# ---------------------------------------------------------------- the confirmation on a terminal


def run_on_a_terminal(args: list[str], answer: str, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The CLI as a process whose standard input is a terminal (a pty) that types ``answer``."""
    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer.encode())
        proc = subprocess.run([sys.executable, "-m", "reconciler", *args], stdin=terminal, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **ENV, **extra_env}, cwd=ROOT)
    finally:
        os.close(terminal)
        os.close(controller)
    return proc


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 1)])
def test_apply_on_a_terminal_asks_and_obeys_the_answer(tree: Path, server: tuple[str, Any], answer: str,
                                                       code: int) -> None:
    url = server[0]
    proc = run_on_a_terminal(["apply", str(tree), "--base-url", url], answer, {})
    assert "Apply these changes?" in proc.stdout
    assert proc.returncode == code, proc.stderr
    if code == 0:
        assert "Apply complete" in proc.stdout
        assert names(url, "/v2/prompts", "prompts") == ["summarize-ticket"]
    else:
        assert "apply cancelled" in proc.stderr
        assert names(url, "/v2/integrations", "integrations", type="LLM") == []


# ---------------------------------------------------------------- the emulator command's flags


@pytest.fixture
def emulator_process() -> Iterator[Callable[..., str]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "reconciler", "emulator", "--port", str(port), *flags],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        procs.append(proc)
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert "Emulator listening" in banner, banner
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN, timeout=1)
                return url
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_emulator_rate_limit_is_waited_out_and_each_wait_shown_on_stderr(
        env: None, tree: Path, emulator_process: Callable[..., str]) -> None:
    url = emulator_process("--rate-limit", "4")
    result = run_at(url, "plan", str(tree))
    assert result.exit_code == 0, result.output
    assert re.search(r"429 on GET /v2/\S+: waiting \d+s \(Retry-After\)", result.stderr), result.stderr
    counts = httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN).json()["requests"]
    assert sum(counts.values()) > 4  # more than one second's worth: the limit was met, and waited out


def test_the_emulator_faults_are_retried_through_and_apply_converges(
        env: None, tree: Path, emulator_process: Callable[..., str]) -> None:
    url = emulator_process("--faults", "seed=11,error_rate=0.25")
    result = run_at(url, "apply", str(tree), "--auto-approve", "--parallelism", "1")
    assert result.exit_code == 0, result.output
    assert "Apply complete" in result.stdout
    assert re.search(r"50\d \S.* on (GET|POST|PATCH|PUT|DELETE) /v2/\S+: retrying in", result.stderr), result.stderr


# ---------------------------------------------------------------- keys and hosts


def test_a_reader_key_plans_and_drifts_but_cannot_apply(env: None, tree: Path, server: tuple[str, Any],
                                                        stats: Any, reset_stats: Callable[[], None],
                                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    url = server[0]
    (tree / "restrictions.yaml").unlink()  # the API lists a restriction only to a key that may manage it
    edit(tree / "research/prompts.yaml", "restricted: true", "restricted: false")
    assert run_at(url, "apply", str(tree), "--auto-approve").exit_code == 0
    monkeypatch.delenv("RECONCILER_API_KEY")
    key_file = tmp_path / "reader.key"
    key_file.write_text("reader-key\n")
    reset_stats()
    planned = run_at(url, "plan", str(tree), "--detailed-exitcode", "--api-key-file", str(key_file))
    assert planned.exit_code == 0, planned.output
    drifted = run_at(url, "drift", str(tree), "--api-key-file", str(key_file))
    assert drifted.exit_code == 0, drifted.output
    edit(tree / "research/prompts.yaml", "description: Summarize a support ticket", "description: Summaries")
    drifted = run_at(url, "drift", str(tree), "--api-key-file", str(key_file))
    assert drifted.exit_code == 2 and "Prompt/research/summarize-ticket" in drifted.stdout
    assert all(k.startswith("GET ") for k in stats()), stats()
    refused = run_at(url, "apply", str(tree), "--auto-approve", "--api-key-file", str(key_file))
    assert refused.exit_code == 1
    assert "403" in refused.stdout and "use a key that may write" in refused.stderr
    assert "re-run to converge" not in refused.stderr  # the same key would be refused again


def test_api_key_file_is_used_when_no_key_is_in_the_environment(env: None, tree: Path, server: tuple[str, Any],
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.delenv("RECONCILER_API_KEY")
    assert run_at(server[0], "plan", str(tree)).exit_code == 1  # no key anywhere
    key_file = tmp_path / "key"
    key_file.write_text("admin-key\n")
    result = run_at(server[0], "apply", str(tree), "--auto-approve", "--api-key-file", str(key_file))
    assert result.exit_code == 0, result.output


def test_region_builds_the_regional_host_and_an_unreachable_host_is_named_with_its_cause(env: None,
                                                                                        tree: Path) -> None:
    started = time.monotonic()
    result = run_at("", "plan", str(tree), "--region", "eu-west-1a", "--timeout", "2")
    assert result.exit_code == 1
    assert "cannot reach api.eu-west-1a.llmops.example" in result.stderr
    assert re.search(r"DNS lookup failed|timed out connecting|connection refused", result.stderr), result.stderr
    assert time.monotonic() - started < 60  # never the old minute of silent retries (a bound, not a speed test)


@pytest.fixture(scope="module")
def certificate_authority(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[str, str]]:
    """A throwaway CA (trustme) and a certificate it signed for localhost: (CA file, (cert, key))."""
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    folder = tmp_path_factory.mktemp("tls")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    return folder / "ca.pem", (str(folder / "cert.pem"), str(folder / "key.pem"))


def test_tls_with_a_self_signed_certificate_is_refused_untrusted_and_accepted_with_the_ca(
        env: None, tree: Path, emulator_factory: Factory, certificate_authority: tuple[Path, tuple[str, str]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ca_file, tls = certificate_authority
    url, _ = emulator_factory(tls=tls)
    port = url.rsplit(":", 1)[1]
    untrusted = run_at(url, "plan", str(tree))
    assert untrusted.exit_code == 1
    assert f"cannot reach localhost:{port}: TLS failed" in untrusted.stderr
    assert "--ca-file" in untrusted.stderr
    trusted = run_at(url, "apply", str(tree), "--auto-approve", "--ca-file", str(ca_file))
    assert trusted.exit_code == 0, trusted.output
    by_host = run_at("", "plan", str(tree), "--host", f"localhost:{port}", "--ca-file", str(ca_file),
                     "--detailed-exitcode")
    assert by_host.exit_code == 0, by_host.output  # --host builds https://HOST
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    by_env = run_at(url, "plan", str(tree), "--detailed-exitcode")
    assert by_env.exit_code == 0, by_env.output
    assert json.loads(run_at(url, "plan", str(tree), "--format", "json").stdout)["summary"]["create"] == 0


def test_an_unknown_target_suggests_the_closest_address(cli: Cli, tree: Path) -> None:
    result = cli("plan", str(tree), "--target", "Prompt/research/summarize-tickets")
    assert result.exit_code == 1
    assert "Prompt/research/summarize-tickets (did you mean Prompt/research/summarize-ticket?)" in result.stderr
