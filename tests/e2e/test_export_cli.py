"""``reconciler export`` over the emulator's socket: it refuses a non-empty --out without --force,
writes multi-line text as block scalars, counts in good English, and exports one resource when
named (KIND/NAME or KIND/SPACE/NAME)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from click.testing import Result

from tests.e2e.test_cli_e2e import edit

Cli = Callable[..., Result]


def test_a_non_empty_out_directory_is_refused_without_force(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    refused = cli("export", "--out", str(out))
    assert refused.exit_code == 1
    assert "is not empty" in refused.stderr and "--force" in refused.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]  # nothing written
    forced = cli("export", "--out", str(out), "--force")
    assert forced.exit_code == 0, forced.output
    assert (out / "integrations.yaml").is_file() and (out / "keep.txt").read_text() == "mine"


def test_an_empty_or_missing_out_directory_needs_no_force(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    (tmp_path / "empty").mkdir()
    assert cli("export", "--out", str(tmp_path / "empty")).exit_code == 0
    assert cli("export", "--out", str(tmp_path / "new")).exit_code == 0


def test_multi_line_text_is_written_as_a_block_scalar_and_reads_back_the_same(cli: Cli, tree: Path,
                                                                             tmp_path: Path) -> None:
    edit(tree / "research/prompts.yaml", "- {role: system, content: You summarize support tickets.}",
         '- {role: system, content: "You summarize support tickets.\\nBe brief.\\nNever guess."}')
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    out = tmp_path / "out"
    assert cli("export", "--out", str(out)).exit_code == 0
    text = (out / "research/prompts.yaml").read_text()
    assert "content: |-\n" in text and "      Be brief.\n" in text
    doc = yaml.safe_load(text)
    assert doc["version"]["messages"][0]["content"] == "You summarize support tickets.\nBe brief.\nNever guess."


def test_counts_are_singular_for_one(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    result = cli("export", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0
    assert f"wrote {tmp_path / 'out' / 'research' / 'prompts.yaml'} (1 resource)" in result.stdout
    assert "(1 resources)" not in result.stdout and "(1 variables" not in result.stdout
    assert "(3 resources)" in result.stdout  # integrations.yaml: plural for more than one


def test_export_kind_name_exports_that_resource_only(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    out = tmp_path / "one"
    result = cli("export", "Prompt/research/summarize-ticket", "Integration/vendor-a-prod", "--out", str(out))
    assert result.exit_code == 0, result.output
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["integrations.yaml", "research/prompts.yaml", "secrets.env.example"]
    assert [d["name"] for d in yaml.safe_load_all((out / "integrations.yaml").read_text())] == ["vendor-a-prod"]
    secrets = (out / "secrets.env.example").read_text()
    assert "SECRET_VENDOR_A_PROD__API_KEY=" in secrets and "support-agent" not in secrets


def test_export_of_an_unknown_resource_suggests_the_closest(cli: Cli, tree: Path, tmp_path: Path) -> None:
    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    result = cli("export", "Dataset/research/golden-ticket", "--out", str(tmp_path / "x"))
    assert result.exit_code == 1
    assert "Dataset/research/golden-ticket (did you mean Dataset/research/golden-tickets?)" in result.stderr
