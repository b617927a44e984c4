"""The JSON Schema accepts every tree the loader accepts: the quickstart's documents, with values drawn
at random turned into variables (``{var: NAME}`` as a whole value, ``${var.NAME}`` inside a string,
set in a var file) and Patches drawn on them (targets, spaces and values given as variables too). The
loader must accept each tree drawn (else the drawing is wrong), and the schema every document of it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from reconciler.manifests import load_manifests, manifest_json_schema
from reconciler.model import SPACED_KINDS

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "manifests"
#: What a Patch may not set: what names the document it patches, and its kind.
IDENTITY = ("kind", "name", "space")


def quickstart() -> dict[str, list[dict[str, Any]]]:
    return {p.relative_to(QUICKSTART).as_posix(): [d for d in yaml.safe_load_all(p.read_text(encoding="utf-8")) if d]
            for p in sorted(QUICKSTART.rglob("*.yaml"))}


class Dumper(yaml.SafeDumper):
    """YAML without aliases (the loader refuses them): a value drawn twice is written twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"env", "file"}


def holds_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return is_secret(value) or any(holds_secret(v) for v in value.values())
    return isinstance(value, list) and any(holds_secret(v) for v in value)


class Variables:
    """The var file being drawn: each value turned into a variable is kept here under a new name."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def name(self, value: Any) -> str:
        name = f"v{len(self.values)}"
        self.values[name] = value
        return name


def with_variables(draw: st.DrawFn, value: Any, variables: Variables, *, key: str = "") -> Any:
    """``value`` with some of its values (drawn) turned into variables; never a secret, never ``kind``."""
    if key == "kind" or is_secret(value):
        return value
    choice = draw(st.sampled_from(["keep", "keep", "whole", "inside"]))
    if choice == "whole" and value is not None and not holds_secret(value):
        return {"var": variables.name(value)}
    if choice == "inside" and isinstance(value, str) and value and "$" not in value:
        cut = draw(st.integers(0, len(value) - 1))
        return value[:cut] + "${var." + variables.name(value[cut:]) + "}"
    if isinstance(value, dict):
        return {k: with_variables(draw, v, variables, key=k) for k, v in value.items()}
    if isinstance(value, list):
        return [with_variables(draw, v, variables) for v in value]
    return value


def a_patch(draw: st.DrawFn, doc: dict[str, Any], variables: Variables) -> dict[str, Any] | None:
    """A Patch on ``doc`` that sets again some of its own fields (so the tree stays what it was)."""
    fields = sorted(k for k in doc if k not in IDENTITY)
    if doc["kind"] not in ("Integration", "Prompt", "Dataset", "Evaluator") or not fields:
        return None
    chosen = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=3, unique=True))
    target = f"{doc['kind']}/{doc['name']}"
    patch: dict[str, Any] = {"kind": "Patch",
                             "target": draw(st.sampled_from([target, {"var": variables.name(target)},
                                                             f"{doc['kind']}/${{var.{variables.name(doc['name'])}}}"])),
                             "patch": {k: with_variables(draw, doc[k], variables, key=k) for k in chosen}}
    if doc["kind"] in SPACED_KINDS:
        patch["space"] = draw(st.sampled_from([doc["space"], {"var": variables.name(doc["space"])}]))
    return patch


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    variables = Variables()
    files: dict[str, list[dict[str, Any]]] = {}
    for path, docs in quickstart().items():
        out: list[dict[str, Any]] = []
        for doc in docs:
            out.append({k: with_variables(draw, v, variables, key=k) for k, v in doc.items()}
                       if draw(st.booleans()) else doc)  # a document is a mapping with its kind written
            if draw(st.booleans()) and (patch := a_patch(draw, doc, variables)) is not None:
                out.append(patch)
        files[path] = out
    return files, variables.values


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(manifest_json_schema())


@settings(max_examples=30, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(tree=trees())
def test_every_document_of_a_tree_the_loader_accepts_is_valid_under_the_schema(
        tree: tuple[dict[str, list[dict[str, Any]]], dict[str, Any]], validator: jsonschema.Draft7Validator,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    files, values = tree
    root = tmp_path_factory.mktemp("tree")
    shutil.copytree(QUICKSTART, root / "manifests")
    for path, docs in files.items():
        (root / "manifests" / path).write_text(yaml.dump_all(docs, Dumper=Dumper, sort_keys=False), encoding="utf-8")
    (root / "vars.yaml").write_text(yaml.dump(values or {"unused": 1}, Dumper=Dumper), encoding="utf-8")
    loaded = load_manifests([str(root / "manifests")], var_files=[str(root / "vars.yaml")])
    assert len(list(loaded)) == sum(1 for docs in quickstart().values() for d in docs if d["kind"] not in ("Policy", "Ownership"))
    for path, docs in files.items():
        for doc in docs:
            errors = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
            assert errors == [], (path, doc)
