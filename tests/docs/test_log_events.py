"""Every log event the code can write (``--log-format json``) is named in README's Logs section."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def emitted() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "reconciler").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names.update(re.findall(r"\.event\(\s*\"([a-z_]+)\"", text))
        names.update(re.findall(r"_say\([^\n]*?,\s*\"([a-z_]+)\"", text))
        names.update(re.findall(r"\"([a-z_]+)\" if kind == \"drift\" else \"([a-z_]+)\"", text)[0]
                     if "if kind == \"drift\"" in text else ())
    return names


def test_every_log_event_is_documented() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    logs = readme.split("### Logs", 1)[1].split("\n## ", 1)[0]
    names = emitted()
    assert {"plan", "error", "command", "plan_saved", "warning", "healed"} <= names
    assert sorted(n for n in names if f"`{n}`" not in logs) == []
