"""docs/manifest.schema.json (what the quickstart manifests' modelines point editors at) is exactly
what `reconciler schema` prints."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from reconciler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_committed_schema_is_what_reconciler_schema_prints() -> None:
    printed = CliRunner().invoke(main, ["schema"]).stdout
    assert (ROOT / "docs/manifest.schema.json").read_text(encoding="utf-8") == printed


def test_quickstart_modelines_point_at_the_committed_schema() -> None:
    for path in (ROOT / "manifests").rglob("*.yaml"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path
        target = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert target == (ROOT / "docs/manifest.schema.json").resolve(), path
