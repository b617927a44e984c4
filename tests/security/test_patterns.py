"""An AGENT ``input_schema`` ``pattern`` is matched against the presets in linear
time (RE2): a pattern that makes Python's backtracking ``re`` run for ever is decided at once, and
one only a backtracking engine runs (a backreference, a lookaround) is refused at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reconciler.cli.main import main


def agent(tmp_path: Path, schema: dict[str, object], config: dict[str, object]) -> Result:
    doc = {"kind": "Integration", "name": "support-agent", "type": "AGENT",
           "config": {"endpoint": "https://agent.example.com/v1/run", "input_schema": schema,
                      "request_presets": [{"name": "p", "config": config}]}}
    (tmp_path / "agent.yaml").write_text(json.dumps(doc))  # JSON is YAML
    return CliRunner().invoke(main, ["validate", str(tmp_path / "agent.yaml")], catch_exceptions=False)


EVIL = "^(a+)+$"
SUBJECT = "a" * 64 + "!"  # Python's re takes about 2**64 steps on it


@pytest.mark.parametrize("schema, config, message", [
    ({"type": "object", "properties": {"q": {"type": "string", "pattern": EVIL}}}, {"q": SUBJECT},
     f"request_presets[0].config.q: does not match input_schema: '{SUBJECT}' does not match '{EVIL}'"),
    ({"type": "object", "patternProperties": {EVIL: {"type": "string"}}, "additionalProperties": False},
     {SUBJECT: "x"}, f"'{SUBJECT}' does not match any of the regexes: '{EVIL}'"),
], ids=["pattern", "patternProperties"])
def test_a_catastrophic_pattern_is_decided_at_once(tmp_path: Path, schema: dict[str, object],
                                                    config: dict[str, object], message: str) -> None:
    result = agent(tmp_path, schema, config)

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert message in result.output


def test_a_matching_value_still_passes(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": EVIL}}}
    assert agent(tmp_path, schema, {"q": "aaaa"}).exit_code == 0


def test_a_pattern_only_backtracking_can_run_is_refused(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": r"^(a+)\1$"}}}

    result = agent(tmp_path, schema, {"q": "aa"})

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "config.input_schema: is refused: pattern" in result.output
    assert "cannot be matched in linear time (a backreference or a lookaround)" in result.output
