"""Findings 8 and 9: hostile inputs inside the caps are clear errors, never a traceback or unbounded
memory: deeply nested JSON in an examples file (watch keeps the last good state), a binary or huge
``{file:}`` secret (read bounded), and a small YAML of very many nodes (the load's node budget)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main
from reconciler.manifests.yamlload import MAX_NODES
from reconciler.model import MAX_SECRET_FILE_BYTES
from reconciler.telemetry import Telemetry
from reconciler.watch import WatchConfig, Watcher
from reconciler.workflow import Connection

DEEP = 5000


def validate(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args], catch_exceptions=False)


def dataset_tree(tmp_path: Path, examples_file: str, content: str) -> Path:
    root = tmp_path / "tree"
    root.mkdir(exist_ok=True)
    (root / "m.yaml").write_text(f"kind: Dataset\nspace: research\nname: d\nexamples_file: {examples_file}\n")
    (root / examples_file).write_text(content)
    return root


@pytest.mark.parametrize("name, content, line", [
    ("golden.jsonl", '{"q": 1}\n{"q": ' + "[" * DEEP + "]" * DEEP + "}\n", 2),
    ("golden.json", '[\n  {"q": 1},\n  {"q": ' + "{\"a\": " * DEEP + "1" + "}" * DEEP + "}\n]\n", 3),
], ids=["jsonl", "json"])
def test_deeply_nested_json_in_an_examples_file_is_an_error_at_its_line(tmp_path: Path, name: str, content: str,
                                                                         line: int) -> None:
    root = dataset_tree(tmp_path, name, content)

    result = validate(str(root))

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{root / name}:{line}:" in result.output and "JSON nested too deeply" in result.output


def test_watch_keeps_the_last_good_state_when_an_examples_file_becomes_deeply_nested(tmp_path: Path) -> None:
    root = dataset_tree(tmp_path, "golden.jsonl", '{"q": 1}\n')
    watcher = Watcher(WatchConfig(paths=(str(root),)), Connection(), Telemetry(), out=lambda line: None)
    good = watcher._desired(1)
    assert good is not None

    (root / "golden.jsonl").write_text('{"q": ' + "[" * DEEP + "]" * DEEP + "}\n")

    assert watcher._desired(2) is good
    assert watcher.t.registry.get_sample_value("reconciler_manifest_error") == 1
    assert "JSON nested too deeply" in (watcher.last_error or "")


def secret_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "m.yaml").write_text("kind: Integration\nname: a\ntype: LLM\nconfig:\n  provider: VENDOR_A\n"
                                 "  api_key: {file: key.bin}\n")
    return root


def test_a_binary_file_secret_is_a_clear_error(tmp_path: Path) -> None:
    root = secret_tree(tmp_path)
    (root / "key.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")

    result = validate(str(root), "--check-secrets")

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{root / 'm.yaml'}:6:" in result.output and "the file is not UTF-8 text (a binary file?" in result.output


def test_a_huge_file_secret_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    root = secret_tree(tmp_path)
    with open(root / "key.bin", "wb") as fh:
        fh.truncate(8 * 1024 * 1024)  # sparse: 8 MB of zero bytes (valid UTF-8, so only the cap refuses it)

    result = validate(str(root), "--check-secrets")

    assert result.exit_code == 1
    assert f"the file is over the {MAX_SECRET_FILE_BYTES:,}-byte limit of a secret file" in result.output


def test_a_secret_file_at_the_cap_is_read(tmp_path: Path) -> None:
    root = secret_tree(tmp_path)
    (root / "key.bin").write_text("k" * MAX_SECRET_FILE_BYTES)
    assert validate(str(root), "--check-secrets").exit_code == 0


def test_a_small_yaml_of_700k_empty_mappings_is_refused_by_the_node_budget(tmp_path: Path) -> None:
    """2 MB of YAML, far under the 50 MB cap, took about 650 MB to validate: the load's node budget
    refuses it, with the file and line where the budget ran out."""
    big = tmp_path / "big.yaml"
    big.write_text("kind: Dataset\nspace: research\nname: d\nexamples: [" + ",".join(["{}"] * 700_000) + "]\n")
    assert os.path.getsize(big) < 2_200_000

    result = validate(str(big))

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{big}:4:" in result.output
    assert f"the manifests hold too many YAML values: over {MAX_NODES:,}" in result.output


def test_the_node_budget_spans_every_file_of_a_load(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    for i in range(3):  # each file alone is under the budget
        (root / f"d{i}.yaml").write_text(f"kind: Dataset\nspace: research\nname: d{i}\nexamples: ["
                                         + ",".join(['{"k": 1}'] * 150_000) + "]\n")

    result = validate(str(root))

    assert result.exit_code == 1 and "too many YAML values" in result.output


@pytest.mark.parametrize("name, content, line", [
    ("ex.jsonl", "{}\n" * 12, 11),
    ("ex.json", "[\n" + "{},\n" * 11 + "{}\n]\n", 12),
])
def test_an_examples_file_over_the_example_budget_is_refused_at_the_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, content: str, line: int) -> None:
    """Bytes alone do not bound memory (20 MB of ``{}`` lines held 811 MB); the
    examples of a file are counted too (``MAX_EXAMPLES``, 2,000,000: 282 MB at the cap, measured)."""
    from reconciler.manifests import examples

    monkeypatch.setattr(examples, "MAX_EXAMPLES", 10)
    (tmp_path / name).write_text(content)
    (tmp_path / "d.yaml").write_text(f"kind: Dataset\nspace: research\nname: d\nexamples_file: {name}\n")

    result = validate(str(tmp_path / "d.yaml"))

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{tmp_path / name}:{line}:1: examples_file: holds more than 10 examples" in result.output
