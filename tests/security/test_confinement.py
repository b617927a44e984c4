"""Finding 3: ``{file:}`` secrets and ``examples_file`` stay inside the manifests' tree (the PATHs
given), symlinks followed; the opt-out is explicit (--allow-outside-tree, RECONCILER_ALLOW_OUTSIDE_TREE)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main

CANARY = '{"question": "canary-outside-3a9f", "answer": "x"}\n'


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner(env={"RECONCILER_ALLOW_OUTSIDE_TREE": None, **(env or {})}).invoke(
        main, list(args), catch_exceptions=False)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    place = tmp_path / "elsewhere"
    place.mkdir()
    (place / "secret.txt").write_text("canary-secret-7d21\n")
    (place / "examples.jsonl").write_text(CANARY)
    return place


def tree_with(tmp_path: Path, secret: str | None = None, examples: str | None = None) -> Path:
    root = tmp_path / "tree"
    root.mkdir(exist_ok=True)
    docs = []
    if secret is not None:
        docs.append(f"kind: Integration\nname: a\ntype: LLM\nconfig:\n  provider: VENDOR_A\n  api_key: {{file: {secret}}}\n")
    if examples is not None:
        docs.append(f"kind: Dataset\nspace: research\nname: d\nexamples_file: {examples}\n")
    (root / "m.yaml").write_text("---\n".join(docs))
    return root


@pytest.mark.parametrize("written", ["ABS", "../elsewhere/secret.txt", "link.txt", "~/../../ABS"],
                         ids=["absolute", "dot-dot", "symlink-out", "home-relative"])
def test_a_file_secret_outside_the_tree_is_refused_at_its_line(tmp_path: Path, outside: Path, written: str) -> None:
    written = written.replace("ABS", str(outside / "secret.txt").lstrip("/" if written.startswith("~") else ""))
    root = tree_with(tmp_path, secret=written)
    (root / "link.txt").symlink_to(outside / "secret.txt")

    result = run("validate", str(root), "--check-secrets")

    assert result.exit_code == 1
    assert f"{root / 'm.yaml'}:6:" in result.output
    assert "config.api_key.file: the secret file is outside the manifests' tree" in result.output
    assert "canary" not in result.output


@pytest.mark.parametrize("written", ["ABS", "../elsewhere/examples.jsonl", "data.jsonl"],
                         ids=["absolute", "dot-dot", "symlink-out"])
def test_an_examples_file_outside_the_tree_is_refused_and_never_shown(tmp_path: Path, outside: Path,
                                                                      written: str) -> None:
    root = tree_with(tmp_path, examples=written.replace("ABS", str(outside / "examples.jsonl")))
    (root / "data.jsonl").symlink_to(outside / "examples.jsonl")

    checked = run("validate", str(root))
    planned = run("plan", str(root), "--emulator", str(tmp_path / "state.db"), "--format", "markdown")

    for result in (checked, planned):
        assert result.exit_code == 1
        assert f"{root / 'm.yaml'}:4:" in result.output and " examples_file: " in result.output
        assert "is outside the manifests' tree" in result.output and "--allow-outside-tree" in result.output
        assert "canary" not in result.output


def test_files_inside_the_tree_symlinks_included_are_read(tmp_path: Path) -> None:
    root = tree_with(tmp_path, secret="keys/current", examples="data/golden.jsonl")
    (root / "keys").mkdir()
    (root / "keys" / "v2.txt").write_text("a-key-value\n")
    (root / "keys" / "current").symlink_to("v2.txt")  # as a mounted Secret's ..data links are
    (root / "data").mkdir()
    (root / "data" / "golden.jsonl").write_text(CANARY)

    assert run("validate", str(root), "--check-secrets").exit_code == 0


@pytest.mark.parametrize("opt_out", ["flag", "env"])
def test_the_opt_out_lets_files_outside_the_tree_be_read(tmp_path: Path, outside: Path, opt_out: str) -> None:
    root = tree_with(tmp_path, secret=str(outside / "secret.txt"), examples="../elsewhere/examples.jsonl")
    flag = ["--allow-outside-tree"] if opt_out == "flag" else []
    env: dict[str, str | None] = {"RECONCILER_ALLOW_OUTSIDE_TREE": "1"} if opt_out == "env" else {}

    result = run("validate", str(root), "--check-secrets", *flag, env=env)

    assert result.exit_code == 0, result.output


def test_the_tree_is_every_path_given(tmp_path: Path) -> None:
    """``plan base overlays/prod``: a file of either tree may be named from the other."""
    base = tree_with(tmp_path, examples="../shared/golden.jsonl")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "golden.jsonl").write_text(CANARY)
    (shared / "restriction.yml").write_text("kind: ResourceRestriction\nname: p\nresource_type: PROJECT\nresource_id: UHJvamVjdDox\n")

    assert run("validate", str(base)).exit_code == 1
    assert run("validate", str(base), str(shared)).exit_code == 0


def test_a_manifest_that_is_a_symlink_out_of_the_tree_is_refused_and_never_shown(tmp_path: Path,
                                                                                 outside: Path) -> None:
    """A link planted in the tree to a YAML file elsewhere is neither read nor
    printed; the opt-out reads it."""
    (outside / "leak.yaml").write_text("kind: ResourceRestriction\nname: canary-linked-5e0a\n"
                                       "resource_type: PROJECT\nresource_id: UHJvamVjdDoy\n")
    root = tree_with(tmp_path, examples=None, secret=None)
    (root / "m.yaml").write_text("kind: ResourceRestriction\nname: p\nresource_type: PROJECT\nresource_id: UHJvamVjdDox\n")
    (root / "linked.yaml").symlink_to(outside / "leak.yaml")

    result = run("validate", str(root))

    assert result.exit_code == 1
    assert f"{root / 'linked.yaml'}:1:1: file: is outside the manifests' tree" in result.output
    assert "(through a symbolic link)" in result.output and "canary-linked" not in result.output
    assert run("validate", str(root), "--allow-outside-tree").exit_code == 0
