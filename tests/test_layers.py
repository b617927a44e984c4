"""The layers import one way (docs/ARCHITECTURE.md: cli -> watch -> workflow -> telemetry -> apply ->
plan -> client | manifests -> models): the emulator never uses the planner or the client, the planner
never talks HTTP, nothing below the CLI imports it; and no two modules import each other, through
any chain, at the top of a file or inside a function."""

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
    # the top-level modules (reconciler/NAME.py)
    "errors.py": ("reconciler",),
    "model.py": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.manifests",
                 "reconciler.workflow", "reconciler.cli", "reconciler.emulator", "reconciler.telemetry"),
    "providers.py": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.manifests",
                     "reconciler.workflow", "reconciler.cli", "reconciler.emulator", "reconciler.model"),
    "files.py": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.manifests",
                 "reconciler.workflow", "reconciler.cli", "reconciler.emulator"),
    "export.py": ("reconciler.apply", "reconciler.workflow", "reconciler.cli", "reconciler.watch"),
    "telemetry.py": ("reconciler.workflow", "reconciler.cli", "reconciler.watch", "reconciler.emulator"),
    "rehearse.py": ("reconciler.workflow", "reconciler.cli", "reconciler.watch"),
    "workflow.py": ("reconciler.cli", "reconciler.watch", "reconciler.emulator"),
    # the project file is read as manifests are, and knows nothing of planning or connecting
    "project.py": ("reconciler.plan", "reconciler.client", "reconciler.apply", "reconciler.workflow",
                   "reconciler.cli", "reconciler.watch", "reconciler.emulator", "reconciler.environments"),
    "environments.py": ("reconciler.cli", "reconciler.watch", "reconciler.emulator"),
    "watch.py": ("reconciler.cli",),
    # desired state against desired state: no request
    "promote.py": ("reconciler.cli", "reconciler.watch", "reconciler.emulator", "reconciler.client",
                   "reconciler.apply", "reconciler.workflow"),
    # the command modules below cli.py: cli.py adds their commands to its group, never the reverse
    "cli_watch.py": ("reconciler.cli.", "reconciler.cli_pull"),
    "cli_pull.py": ("reconciler.cli.", "reconciler.cli_watch"),
    "cli_promote.py": ("reconciler.cli.", "reconciler.cli_watch", "reconciler.cli_pull"),
    "cli_observe.py": ("reconciler.cli.", "reconciler.cli_watch", "reconciler.cli_pull"),
    "cli_confine.py": ("reconciler.cli.", "reconciler.cli_watch", "reconciler.cli_pull"),
    "cli_environments.py": ("reconciler.cli.", "reconciler.cli_watch", "reconciler.cli_pull"),
    "cli_flags.py": ("reconciler.cli.", "reconciler.cli_"),
    "cli_common.py": ("reconciler.cli.", "reconciler.cli_"),
}


def imports_of(path: Path) -> set[str]:
    """Every name an import anywhere in the file (inside functions too) brings: ``X`` for ``import
    X``, ``X.Y`` for ``from X import Y`` (Y a module or a name of X)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def forbidden(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == f.rstrip(".") or name.startswith(f if f.endswith((".", "_")) else f + ".")
               for f in prefixes)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_only_downwards(layer: str) -> None:
    files = [PACKAGE / layer] if layer.endswith(".py") else sorted((PACKAGE / layer).glob("*.py"))
    assert files and all(f.exists() for f in files)
    bad = [f"{path.relative_to(PACKAGE)} imports {name}"
           for path in files for name in sorted(imports_of(path)) if forbidden(name, FORBIDDEN[layer])]
    assert bad == []


def module_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name that is not a module counts as its module)."""
    modules = {".".join(("reconciler", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__"): p
               for p in PACKAGE.rglob("*.py")}

    def module_of(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    return {m: {t for n in imports_of(p) if n.startswith("reconciler") and (t := module_of(n)) not in (None, m)}
            for m, p in modules.items()}


def test_no_two_modules_import_each_other_through_any_chain() -> None:
    graph = module_graph()
    assert {"reconciler.cli", "reconciler.cli_watch", "reconciler.watch"} <= set(graph)
    cycles = [sorted(c) for c in strongly_connected(graph) if len(c) > 1]
    assert cycles == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert sorted(map(sorted, strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}))) == [
        ["a", "b", "c"], ["d"]]
