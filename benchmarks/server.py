"""The emulator in its own process (``python -m reconciler emulator``), on a SQLite file, over a
real socket: its CPU is not the reconciler's and the two do not share a GIL. The benchmark keeps
snapshots of the file (``snapshot``/``restore`` with SQLite's backup API) so every scenario, ours and
the naive baseline's, starts from the same account."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ADMIN_KEY = "admin-key"
EMULATOR_ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}  # the control endpoints need the admin key


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Served:
    url: str
    pid: int

    def cpu_s(self) -> float:
        """CPU time the emulator process has used so far (Linux ``/proc``; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def emulator(db: Path, *, rate_limit: float | None = None, faults: str | None = None,
             rate_burst: float | None = None) -> Iterator[Served]:
    """Serve ``db`` until the block ends. Stopped with SIGINT, so the store is closed (and the WAL
    checkpointed) before the file is copied."""
    port = free_port()
    cmd = [sys.executable, "-m", "reconciler", "emulator", "--port", str(port), "--db", str(db)]
    if rate_limit is not None:
        cmd += ["--rate-limit", str(rate_limit)]
    if rate_burst is not None:
        cmd += ["--rate-burst", str(rate_burst)]
    if faults:
        cmd += ["--faults", faults]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + float(os.environ.get("BENCH_EMULATOR_START_S", "30"))  # a loaded machine
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"the emulator exited: {err.strip()}")
            try:
                httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN, timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the emulator did not start") from None
                time.sleep(0.05)
        yield Served(url, proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def reset_stats(url: str) -> None:
    httpx.post(f"{url}/_emulator/reset-stats", headers=EMULATOR_ADMIN, timeout=10).raise_for_status()


def read_stats(url: str) -> dict[str, int]:
    counts: dict[str, int] = httpx.get(f"{url}/_emulator/stats", headers=EMULATOR_ADMIN, timeout=10).json()["requests"]
    return counts


def by_method(counts: dict[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, n in counts.items():
        method = key.partition(" ")[0]
        out[method] = out.get(method, 0) + n
    return dict(sorted(out.items()))


def copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite file (the backup API, so a WAL is folded in)."""
    if dst.exists():
        dst.unlink()
    for suffix in ("-wal", "-shm"):
        extra = Path(str(dst) + suffix)
        if extra.exists():
            extra.unlink()
    with sqlite3.connect(src) as source, sqlite3.connect(dst) as target:
        source.backup(target)
    # sqlite3's context manager commits but does not close
    source.close()
    target.close()


def admin_client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60,
                        limits=httpx.Limits(max_connections=8))


def json_of(response: httpx.Response) -> Any:
    response.raise_for_status()
    return response.json()
