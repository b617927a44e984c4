"""With --log-format json (or RECONCILER_LOG_FORMAT=json) a usage error is one JSON line on stderr,
like every other error: a log pipeline parses every line a run writes."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from reconciler.cli.main import main


@pytest.mark.parametrize(("args", "env", "message"), [
    (["validate", "manifests", "--bogus", "--log-format", "json"], {}, "No such option '--bogus'."),
    (["plan", "manifests", "--log-format=json", "--format", "xml"], {},
     "Invalid value for '--format': 'xml' is not one of 'text', 'json', 'markdown'."),
    (["drift", "--parallelism", "0", "manifests"], {"RECONCILER_LOG_FORMAT": "json"}, "Invalid value for '--parallelism'"),
    (["validate"], {"RECONCILER_LOG_FORMAT": "json"}, "Missing argument 'PATHS...'."),
])
def test_a_usage_error_is_one_json_line(args: list[str], env: dict[str, str], message: str) -> None:
    result = CliRunner().invoke(main, args, env=env, prog_name="reconciler")
    assert result.exit_code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    event = json.loads(line)
    assert event["event"] == "error" and event["outcome"] == "usage_error" and event["exit_code"] == 1
    assert event["message"].startswith(message) and event["command"].startswith("reconciler ")


def test_without_json_a_usage_error_reads_as_click_prints_it() -> None:
    result = CliRunner().invoke(main, ["validate", "manifests", "--bogus"], env={"RECONCILER_LOG_FORMAT": "text"},
                                prog_name="reconciler")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == "Error: No such option '--bogus'."
    assert "Usage: reconciler validate" in result.stderr
