"""Each kind is registered once (``reconciler/kinds.py``, docs/ARCHITECTURE.md "Where to add things"):
the layers' per-kind tables are keyed by the registry and cover every kind, and no module outside
the registry and the emulator branches on ``kind`` compared with a string literal."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from reconciler.kinds import (
    DELETE_ORDER,
    DOCUMENT_KINDS,
    EXPERIMENT,
    KIND_SPECS,
    KINDS,
    PRUNE_ORDER,
)
from reconciler.model import LIVE_TYPES, LiveState, ReadScope

PACKAGE = Path(__file__).resolve().parents[1] / "reconciler"
#: Names a comparison with a string literal would hard-code: every kind a document or operation has.
KIND_NAMES = {*DOCUMENT_KINDS, EXPERIMENT}
#: Where a literal kind is the definition itself: the registry, and the emulator (the API's side,
#: which knows no manifests).
EXEMPT = ("kinds.py", "emulator/")
#: Comparisons of a kind with a literal that may stay outside the registry, each with its reason
#: (``path: count``). None today.
ALLOWED: dict[str, int] = {}


def _literals(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _comparisons(holds: Callable[[ast.expr], bool]) -> dict[str, int]:
    """``path -> how many comparisons`` (==, !=, in, not in, is) outside the exempt modules have a
    side that ``holds``."""
    found: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(EXEMPT):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(holds(side) for side in (node.left, *node.comparators)):
                found[rel] = found.get(rel, 0) + 1
    return found


def kind_literal_comparisons() -> dict[str, int]:
    """``path -> how many comparisons`` hold a kind's name as a string literal."""
    return _comparisons(lambda side: bool(set(_literals(side)) & KIND_NAMES))


def test_no_module_outside_the_registry_compares_a_kind_with_a_string_literal() -> None:
    assert kind_literal_comparisons() == ALLOWED


#: The registry's names of single kinds (``INTEGRATION`` ... and ``EXPERIMENT``, ``OWNERSHIP``).
KIND_CONSTANTS = {"INTEGRATION", "PROMPT", "DATASET", "EVALUATOR", "RESTRICTION", "EXPERIMENT", "OWNERSHIP"}
#: Comparisons of a kind with one of those constants (``X.name``, ``X``, ``spec is X``) that stay
#: outside the registry, by module, each with its reason. Anything else reads a ``KindSpec`` field
#: (``secrets``, ``refers``, ``spaced``...), a table keyed by the kind, or
#: ``KindSpec.among``. A new comparison fails here: give the spec a field instead, or say why.
ALLOWED_CONSTANT_COMPARISONS = {
    # integrations re-listed per type (one request a page) instead of one GET per touched one (3);
    # restrictions are re-listed whole and have no id of their own (2); a dataset's experiments are
    # operations of their own, re-read by retention, never deleted as a resource (3)
    "apply/confirm.py": 8,
    "cli/pull.py": 1,  # --unmanaged-to exports by address, and a restriction is exported with its prompt
    # a dataset's examples file is read at load; the Ownership document is no resource; the Ownership's
    # globs match an integration by name, a restriction by type/id (3)
    "manifests/validate.py": 5,
    "plan/evaluators.py": 1,  # the LLM integrations this plan creates, by their identity's head
    "plan/lifecycle.py": 1,  # a protected experiment is kept by retention, not by --prune: its own warning
    "plan/planfile.py": 1,  # a saved plan's experiment delete is labelled with its dataset's address
    "plan/planner.py": 1,  # an integration's PATCH that carries only its type changes nothing
    "plan/prune.py": 1,  # only PROJECT and DASHBOARD restrictions are pruned
    # the restriction kind's own planner: a ResourceRestriction, or a Prompt's ``restricted`` (4); an
    # integration counts as applied under either type (1)
    "plan/restrictions.py": 5,
    "pull/engine.py": 2,  # as plan: restrictions left out when the key cannot see them
    "rehearse.py": 1,  # the datasets the plan touches: their examples are seeded into the replica
}


def _is_kind_constant(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "name" and isinstance(node.value, ast.Name):
        return node.value.id in KIND_CONSTANTS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):  # a group of kinds, not an identity holding one
        return bool(node.elts) and all(_is_kind_constant(e) for e in node.elts)
    return isinstance(node, ast.Name) and node.id in KIND_CONSTANTS


def kind_constant_comparisons() -> dict[str, int]:
    """``path -> how many comparisons`` hold one of the registry's kind constants on a side."""
    return _comparisons(_is_kind_constant)


def test_comparisons_of_a_kind_with_a_registry_constant_are_the_few_allowed() -> None:
    assert kind_constant_comparisons() == ALLOWED_CONSTANT_COMPARISONS


def test_the_constant_counter_sees_names_groups_and_specs_but_not_identities() -> None:
    tree = ast.parse("if r.kind == INTEGRATION.name or k in (PROMPT.name, DATASET.name) or spec is RESTRICTION "
                     "or op.kind != EXPERIMENT or (INTEGRATION.name, t, n) in declared or r.kind in KIND_SPECS: pass")
    assert sum(1 for n in ast.walk(tree) if isinstance(n, ast.Compare)
               and any(_is_kind_constant(s) for s in (n.left, *n.comparators))) == 4


def test_the_counter_sees_the_comparisons_it_forbids() -> None:
    tree = ast.parse('if r.kind == "Prompt" or op.kind in ("Dataset", "Evaluator") or kind != x: pass')
    assert sum(1 for n in ast.walk(tree) if isinstance(n, ast.Compare)
               and any(set(_literals(s)) & KIND_NAMES for s in (n.left, *n.comparators))) == 2


def test_the_orders_derive_from_the_registry() -> None:
    from reconciler.plan.planner import KIND_ORDER

    assert KIND_ORDER == KINDS == tuple(KIND_SPECS)
    assert set(PRUNE_ORDER) == set(KINDS) and (EXPERIMENT, *PRUNE_ORDER) == DELETE_ORDER


def test_every_registered_kind_has_its_step_in_every_layer() -> None:
    """Adding a KindSpec without one of its steps fails here, naming the table that lacks it."""
    from reconciler.apply.confirm import REREADS
    from reconciler.client.live import ACCOUNT_READS
    from reconciler.client.replica import COPIES
    from reconciler.emulator.app import KIND_MODULES, ROUTE_MODULES
    from reconciler.essence import ESSENCE_KINDS
    from reconciler.export import EXPORTS
    from reconciler.manifests.models import KIND_MODELS
    from reconciler.plan.registry import STEPS

    assert tuple(KIND_MODELS) == DOCUMENT_KINDS
    tables = {"plan.registry.STEPS": STEPS, "model.LIVE_TYPES": LIVE_TYPES,
              "client.live essence": dict.fromkeys(ESSENCE_KINDS), "emulator.app.KIND_MODULES": KIND_MODULES}
    missing = {name: sorted(set(KINDS) - set(table)) for name, table in tables.items() if set(KINDS) - set(table)}
    assert missing == {}
    assert all(module in ROUTE_MODULES for module in KIND_MODULES.values())  # its routes are served
    # the tables of the kinds that differ from a default: the others are read again by id
    # (confirm._reread_object), read whole by their list (live.read_whole), exported as their compared
    # fields (export.account_documents, export.compared_documents), copied as read (replica.copied_as_read)
    for table in (REREADS, ACCOUNT_READS, EXPORTS, COPIES):
        assert set(table) <= set(KINDS)
    live = LiveState()
    assert tuple(live.tables()) == KINDS
    for spec in KIND_SPECS.values():
        assert live.table(spec.name) is getattr(live, spec.table), spec.name  # the attribute the spec names
        if spec.spaced:
            assert spec.table in ReadScope.__dataclass_fields__, spec.name
