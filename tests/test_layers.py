"""The layers import one way (docs/ARCHITECTURE.md, style.md: cli -> apply -> plan -> client |
manifests -> models): the emulator never uses the planner or the client, the planner never talks
HTTP, and nothing below the CLI imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reconciler"

FORBIDDEN = {
    "emulator": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.manifests",
                 "reconciler.workflow", "reconciler.cli"),
    # the planner may use the client's normalisation (essence), never its HTTP machinery
    "plan": ("reconciler.client.http", "reconciler.client.settings", "reconciler.client.inprocess",
             "reconciler.apply", "reconciler.emulator", "reconciler.workflow", "reconciler.cli"),
    "manifests": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.emulator",
                  "reconciler.workflow", "reconciler.cli"),
    "client": ("reconciler.plan", "reconciler.apply", "reconciler.manifests", "reconciler.workflow", "reconciler.cli"),
    "apply": ("reconciler.workflow", "reconciler.cli", "reconciler.emulator"),
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_downwards(layer: str) -> None:
    bad = [f"{path.relative_to(PACKAGE)} imports {name}"
           for path in sorted((PACKAGE / layer).glob("*.py"))
           for name in imports_of(path)
           if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer])]
    assert bad == []
