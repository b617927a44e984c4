"""Promote's three promises over trees drawn at random: a base of prompts (values literal or from
variables, whole or inside a string), an overlay per environment with Patch documents (flow or block,
a value, a variable or a removal), a var file each, and prompts only the first environment declares.
After ``promote a b --write``:

- only b's own files changed (never the base, a's files, or b's var file);
- each value of b now equals a's, except where a variable sets it on either side, or b's overlay sets
  it over the value a has from the base: that one is b's as before, and listed as kept (exactly those);
- a's desired state is as before, and b's tree loads.

No request is made: the trees are compared with the loader alone (what ``plan --env b`` would read)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from reconciler.manifests.loader import load_manifests
from reconciler.model import DesiredResource
from reconciler.project import load
from reconciler.promote import Promoter

EXAMPLES = int(os.environ.get("RECONCILER_PROMOTE_EXAMPLES", "25"))
ABSENT = "(absent)"

#: A base value of a field: a literal, a whole variable, a variable inside a string, or nothing.
DESCRIPTION = st.sampled_from(['"first"', '"second"', '"for ${var.label}"', None])
MODEL = st.sampled_from(["model-large", "model-small", "{var: model}"])
TEMPERATURE = st.sampled_from(["0.1", "0.9", "{var: temperature}", None])
#: What an overlay's Patch sets on one prompt (None: that field not patched).
PATCH = st.fixed_dictionaries({
    "description": st.sampled_from([None, '"patched"', "null", '"${var.label} patched"']),
    "model": st.sampled_from([None, "model-medium", "{var: model}"]),
    "temperature": st.sampled_from([None, "0.5", "{var: temperature}"]),
    "flow": st.booleans(),
})


def prompt(name: str, space: str, description: str | None, model: str, temperature: str | None) -> str:
    lines = ["kind: Prompt", f"space: {space}", f"name: {name}"]
    if description is not None:
        lines.append(f"description: {description}")
    lines += ["version:", "  commit_message: first", "  provider: VENDOR_A", f"  model: {model}",
              "  messages: [{role: user, content: '{ticket}'}]"]
    if temperature is not None:
        lines.append(f"  invocation_params: {{temperature: {temperature}}}")
    return "\n".join(lines) + "\n"


def patch(name: str, space: str, p: Mapping[str, Any]) -> str | None:
    version = {k: p[k] for k in ("model", "temperature") if p[k] is not None}
    if p["description"] is None and not version:
        return None
    body: list[str] = []
    if p["description"] is not None:
        body.append(f"  description: {p['description']}")
    if version:
        if p["flow"]:
            inner = ", ".join(f"model: {v}" if k == "model" else f"invocation_params: {{temperature: {v}}}"
                              for k, v in version.items())
            body.append(f"  version: {{{inner}}}")
        else:
            body.append("  version:")
            if "model" in version:
                body.append(f"    model: {version['model']}")
            if "temperature" in version:
                body.append(f"    invocation_params:\n      temperature: {version['temperature']}")
    return f"kind: Patch\ntarget: Prompt/{name}\nspace: {space}\npatch:\n" + "\n".join(body) + "\n"


TREES = st.fixed_dictionaries({
    "prompts": st.lists(st.tuples(DESCRIPTION, MODEL, TEMPERATURE, st.booleans()), min_size=1, max_size=3),
    "patches_a": st.lists(PATCH, min_size=3, max_size=3),
    "patches_b": st.lists(PATCH, min_size=3, max_size=3),
    "only_a": st.lists(st.tuples(DESCRIPTION, MODEL, TEMPERATURE), max_size=2),
    "vars_b_model": st.sampled_from(["model-large", "model-b"]),
})


def write_tree(root: Path, t: Mapping[str, Any]) -> None:
    docs = []
    for i, (description, model, temperature, own_space) in enumerate(t["prompts"]):
        docs.append(prompt(f"p{i}", "{var: space}" if own_space else "common", description, model, temperature))
    (root / "base").mkdir()
    (root / "base" / "prompts.yaml").write_text("---\n".join(docs))
    for env, model in (("a", "model-a"), ("b", t["vars_b_model"])):
        overlay = root / "overlays" / env
        overlay.mkdir(parents=True)
        (overlay / "vars.yaml").write_text(f"space: space-{env}\nlabel: {env}-team\nmodel: {model}\n"
                                           f"temperature: {0.2 if env == 'a' else 0.7}\n")
        found = []
        for i, (_, _, _, own_space) in enumerate(t["prompts"]):
            text = patch(f"p{i}", f"space-{env}" if own_space else "common", t[f"patches_{env}"][i])
            if text is not None:
                found.append(text)
        if env == "a":
            found += [prompt(f"new{i}", "{var: space}", d, m, temp) for i, (d, m, temp) in enumerate(t["only_a"])]
        (overlay / "patches.yaml").write_text("# the overlay\n" + "---\n".join(found))
    (root / "reconciler.yaml").write_text(
        "environments:\n"
        "  a: {emulator: a.db, paths: [base, overlays/a], var_files: [overlays/a/vars.yaml]}\n"
        "  b: {emulator: b.db, paths: [base, overlays/b], var_files: [overlays/b/vars.yaml], after: [a]}\n")


def tree_of(env: str) -> dict[tuple[str, str], DesiredResource]:
    loaded = load_manifests(["base", f"overlays/{env}"], var_files=[f"overlays/{env}/vars.yaml"])
    return {(r.kind, r.name): r for r in loaded.resources}


def leaves(spec: Any, path: str = "") -> dict[str, Any]:
    if isinstance(spec, Mapping) and spec:
        found: dict[str, Any] = {}
        for k, v in spec.items():
            found.update(leaves(v, f"{path}.{k}" if path else k))
        return found
    return {path: spec}


def from_variable(r: DesiredResource | None, path: str) -> bool:
    """A variable sets the value at ``path``, around it or inside it."""
    return r is not None and any(
        src.via and (at == path or at.startswith(path + ".") or path.startswith(at + ".")) for at, src in r.sources.items())


def written_in(r: DesiredResource | None, path: str, folder: str) -> bool:
    """The value at ``path`` (or, unset, the field around it or the document) is written below ``folder``."""
    if r is None:
        return False
    parts = path.split(".")
    while parts and ".".join(parts) not in r.sources:
        parts.pop()
    src = r.sources.get(".".join(parts) if parts else "")
    return src is not None and os.path.relpath(src.file).startswith(folder + os.sep)


def value_at(r: DesiredResource | None, path: str) -> Any:
    return leaves(dict(r.spec)).get(path, ABSENT) if r is not None else ABSENT


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TREES)
def test_promote_writes_only_bs_own_files_and_makes_b_as_a_but_for_the_variables(t: Mapping[str, Any]) -> None:
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        write_tree(root, t)
        os.chdir(root)
        try:
            before_files = files_of(root)
            for name, text in before_files.items():
                note(f"--- {name}\n{text.decode()}")
            a, b = tree_of("a"), tree_of("b")
            result = Promoter(load(Path("reconciler.yaml")), "a", "b").run()
            result.write()
            after_files = files_of(root)
            a_after, b_after = tree_of("a"), tree_of("b")
        finally:
            os.chdir(here)

    changed = sorted(f for f in after_files if before_files.get(f) != after_files[f])
    assert set(changed) <= {"overlays/b/patches.yaml"}
    assert {k: r.spec for k, r in a_after.items()} == {k: r.spec for k, r in a.items()}
    assert result.not_promoted == []
    kept = set()
    for key, theirs in a.items():
        mine, now = b.get(key), b_after[key]
        for path in set(leaves(dict(theirs.spec))) | set(leaves(dict(mine.spec) if mine else {})) | set(
                leaves(dict(now.spec))):
            was, want, got = value_at(mine, path), value_at(theirs, path), value_at(now, path)
            own = written_in(mine, path, "overlays/b") and written_in(theirs, path, "base")  # b overrides the base
            if from_variable(mine, path) or from_variable(theirs, path) or own:
                if mine is not None:  # b's own value stays
                    assert got == was, (key, path)
                if got != want:  # b's own value, or b's variable in a document copied from a
                    kept.add((now.address, path))
            else:
                assert got == want, (key, path, was, want, got)
    # each value kept is listed, at its path or at the mapping around it that one side does not declare
    listed = {(k.address, k.path) for k in result.kept}
    assert all(any(a == address and (p == path or path.startswith(p + ".")) for a, p in listed)
               for address, path in kept), (listed, kept)
    assert all(any(a == address and (p == path or p.startswith(path + ".")) for a, p in kept)
               for address, path in listed), (listed, kept)
