"""``reconciler emulator`` as a user runs it: a subprocess on a free port that prints its URL and
keys, answers over HTTP, and with --db keeps its state across a restart."""

from __future__ import annotations

import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from reconciler.emulator.core import EmulatorSettings
from reconciler.emulator.server import banner

from . import bearer, llm_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def emulator_process(*args: str) -> Iterator[tuple[str, str]]:
    """Run the CLI; yields (base URL, banner) once the banner is printed and the port answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "reconciler", "emulator", "--port", str(port), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    url = f"http://127.0.0.1:{port}"
    lines: queue.Queue[str] = queue.Queue()  # a thread reads, so a slow start cannot hang the test

    def read() -> None:
        for line in proc.stdout or ():
            lines.put(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    printed: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while not any(line.lstrip().startswith("state:") for line in printed):
            try:
                printed.append(lines.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError("no banner: " + "".join(printed)) from None
        while True:
            try:
                httpx.get(f"{url}/v2/openapi.json", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "the port never answered"
                time.sleep(0.05)
        yield url, "".join(printed)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        proc.stdout.close()


def test_the_command_prints_url_and_keys_answers_and_keeps_state_across_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "emulator.db"
    args = ("--db", str(db), "--admin-key", "adm-1", "--reader-key", "rd-1", "--space-key", "sp-1=research")
    with emulator_process(*args) as (url, text):
        assert url in text
        for expected in ("adm-1", "rd-1", "sp-1", "research", f"SQLite file {db}"):
            assert expected in text
        with httpx.Client(base_url=url, headers=bearer("adm-1"), timeout=10) as c:
            assert c.get("/v2/spaces").status_code == 200
            assert c.get("/v2/spaces", headers=bearer("admin-key")).status_code == 401
            r = c.post("/v2/integrations", json={"type": "LLM", "name": "survivor", "config": llm_config("VENDOR_A")})
            assert r.status_code == 201
            created = r.json()
    with emulator_process(*args) as (url, _), httpx.Client(base_url=url, headers=bearer("rd-1"), timeout=10) as c:
        assert c.get(f"/v2/integrations/{created['id']}").json() == created


def test_the_banner_says_when_state_is_only_in_memory() -> None:
    text = banner(EmulatorSettings(port=9999))
    assert "http://127.0.0.1:9999" in text
    assert "admin-key" in text and "reader-key" in text
    assert "in memory" in text


def test_space_options_create_the_spaces_once_across_restarts(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    for _ in range(2):
        with emulator_process("--db", db, "--space", "staging", "--space", "production") as (url, _banner):
            spaces = httpx.get(f"{url}/v2/spaces", headers=bearer("admin-key")).json()["spaces"]
            assert [s["name"] for s in spaces] == ["default", "research", "staging", "production"]
            assert len({s["organization_id"] for s in spaces}) == 1


def test_over_its_socket_the_emulator_answers_loopback_hosts_and_allowed_names_only() -> None:
    """A DNS name rebound to 127.0.0.1 (a web page the user visits) reaches the socket with its own
    Host: refused, so the well-known default keys cannot be used from a browser."""
    with emulator_process("--allowed-host", "emulator.test") as (url, _):
        port = url.rsplit(":", 1)[1]

        def status(host: str) -> tuple[int, str]:
            answer = httpx.get(f"{url}/_emulator/stats", headers={**bearer("admin-key"), "Host": host}, timeout=10)
            return answer.status_code, answer.text

        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"app.localhost:{port}",
                     f"EMULATOR.test:{port}", "127.0.0.2"):
            assert status(host)[0] == 200, host
        for host in (f"attacker.example:{port}", f"127.0.0.1.attacker.example:{port}", f"0.0.0.0:{port}", ""):
            code, body = status(host)
            assert code == 400 and "--allowed-host NAME" in body, (host, body)
