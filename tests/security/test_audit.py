"""Finding 12: ``make audit`` (tests/audit.py) fails on a known vulnerability and says plainly when
nothing could be checked. pip-audit is replaced here: no test reaches beyond loopback."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests import audit


def fake_pip_audit(monkeypatch: pytest.MonkeyPatch, dependencies: list[dict[str, Any]]) -> None:
    def run(*args: Any, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 1, json.dumps({"dependencies": dependencies, "fixes": []}), "")

    monkeypatch.setattr(audit.subprocess, "run", run)


def test_a_known_vulnerability_fails_the_audit_naming_the_advisory_and_the_fix(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    fake_pip_audit(monkeypatch, [
        {"name": "httpx", "version": "0.28.1", "vulns": []},
        {"name": "pyyaml", "version": "5.3", "vulns": [{"id": "PYSEC-2021-142", "aliases": ["CVE-2020-14343"],
                                                         "fix_versions": ["5.4"]}]},
    ])
    assert audit.main() == 1
    out = capsys.readouterr().out
    assert "pyyaml 5.3: PYSEC-2021-142 (CVE-2020-14343); fixed in 5.4" in out
    assert "2 packages checked, 1 with known vulnerabilities" in out


def test_an_audit_that_could_check_nothing_says_so_and_passes(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    fake_pip_audit(monkeypatch, [{"name": "httpx", "skip_reason": "Dependency not found on PyPI"}])
    assert audit.main() == 0
    assert "nothing checked: the vulnerability service knows none of the 1 installed versions" in capsys.readouterr().out
