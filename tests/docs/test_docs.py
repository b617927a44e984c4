"""The documents tell the truth: no reference to a document or section that does not exist, the
provider table in docs/manifests.md is the code's, the emulator's pre-made spaces and keys are the
ones it makes, and click's shell completion works as README shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.client.settings import REGIONAL_HOST_TEMPLATE, REGIONS
from reconciler.emulator.core import Emulator, EmulatorSettings
from tests.docs.provider_table import render

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "docs/manifest.schema.json",
             *sorted(p for p in (ROOT / "examples").rglob("*") if p.is_file())]


#: Documents the project was written from, which its repository does not hold (spelt apart here so
#: that this file does not cite them either).
NOT_HELD = tuple(f"{name}.md" for name in ("product", "api-spec", "api-reference"))


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    out = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"#+\s+(.*)", line):
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_document_names_no_document_the_repository_does_not_hold(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for name in (*NOT_HELD, "see the source"):
        assert name not in text, f"{doc.name} refers to {name!r}, which a user of this repository cannot read"


def test_no_file_of_the_repository_cites_a_document_it_does_not_hold() -> None:
    """The code, tests and documents cite docs/ (the API's facts: docs/api.md), never the design
    documents the project was written from."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    files = ([ROOT / f for f in listed.stdout.decode().split("\0") if f] if listed.returncode == 0 else
             [p for p in ROOT.rglob("*") if p.is_file() and not {".git", ".venv"} & set(p.relative_to(ROOT).parts)])
    citing = [str(f.relative_to(ROOT)) for f in files if f.is_file()
              and any(name.encode() in f.read_bytes() for name in NOT_HELD)]
    assert len(files) > 100 and citing == []


def test_every_document_of_docs_the_code_names_exists() -> None:
    """A document of docs/ cited by the product, its tests or its benchmarks is a file of the repository
    (a reader follows the reference; a plan-format page of docs/ was cited and never written)."""
    named = {(str(f.relative_to(ROOT)), m) for tree in ("reconciler", "tests", "benchmarks")
             for f in sorted((ROOT / tree).rglob("*.py"))
             for m in re.findall(r"\bdocs/[\w-]+\.md\b", f.read_text(encoding="utf-8"))}
    assert len(named) > 10
    assert [(f, m) for f, m in sorted(named) if not (ROOT / m).exists()] == []


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_path_a_document_names_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{doc.name} links to {target}"
        if anchor:
            assert anchor in anchors(path), f"{doc.name} links to a missing section {target}"
    for named in re.findall(r"`((?:docs|examples|manifests|reconciler|tests|benchmarks)/[\w./-]+)`", text):
        assert (ROOT / named.rstrip("/")).exists() or "*" in named, f"{doc.name} names {named}, which does not exist"
    for quoted in re.findall(r'"([A-Z][\w ]+)" in `(docs/[\w.]+)`', text):
        title, where = quoted
        assert title.lower().replace(" ", "-") in anchors(ROOT / where), f"{doc.name}: no section {title!r} in {where}"


def test_the_provider_table_in_the_manifest_docs_is_the_code_s() -> None:
    text = (ROOT / "docs/manifests.md").read_text(encoding="utf-8")
    assert render() in text, "docs/manifests.md: regenerate the table with python -m tests.docs.provider_table"


def test_the_regional_hosts_are_documented() -> None:
    text = (ROOT / "docs/manifests.md").read_text(encoding="utf-8")
    for region in REGIONS:
        assert f"`--region {region}` | `https://{REGIONAL_HOST_TEMPLATE.format(region=region)}`" in text


def test_the_emulator_s_pre_made_spaces_and_keys_are_documented() -> None:
    emu = Emulator(EmulatorSettings())
    spaces = sorted(s["name"] for _, s in emu.store.scan("space", limit=100))
    orgs = [o["name"] for _, o in emu.store.scan("organization", limit=10)]
    emu.store.close()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("## The emulator"):]
    paragraph = paragraph[: paragraph.index("\n## ", 3)]
    assert f"(`{orgs[0]}`)" in paragraph
    assert spaces == ["default", "research"]
    assert "two spaces, `default` and\n`research`" in paragraph
    settings = EmulatorSettings()
    assert f"`{settings.admin_key}` (reads and writes)" in paragraph and f"`{settings.reader_key}` (reads only)" in paragraph


def completion(shell_var: str, words: str, cword: int) -> str:
    env = {**os.environ, "_RECONCILER_COMPLETE": shell_var, "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return subprocess.run([sys.executable, "-m", "reconciler"], env=env, capture_output=True, text=True,
                          timeout=60, cwd=ROOT).stdout


def test_shell_completion_as_documented_completes_commands_options_and_choices() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'eval "$(_RECONCILER_COMPLETE=bash_source reconciler)"' in readme
    script = completion("bash_source", "", 0)
    assert "_reconciler_completion" in script and "complete -o nosort -F _reconciler_completion reconciler" in script
    assert "plain,plan" in completion("bash_complete", "reconciler pl", 1)
    assert "plain,--detailed-exitcode" in completion("bash_complete", "reconciler plan --det", 2)
    assert completion("bash_complete", "reconciler plan --format ", 3).split() == [
        "plain,text", "plain,json", "plain,markdown"]
    assert "reconciler" in completion("fish_source", "", 0) and "compdef" in completion("zsh_source", "", 0)
