"""Finding 1: a plan file is an artifact that crosses a trust boundary (made by a pull-request job,
applied on merge). A tampered one must not send the key elsewhere, call outside /v2, or make apply
read a secret the manifests do not declare: refused before any request, exit 1, no traceback."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from reconciler.apply.resolve import request_for
from reconciler.plan.model import Operation
from tests.security.conftest import Collector

Cli = Callable[..., Result]


def saved_plan(cli: Cli, tree: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    planfile = tmp_path / "plan.json"
    assert cli("plan", str(tree), "--out", str(planfile)).exit_code == 0
    return planfile, json.loads(planfile.read_text())


def op_with_secret(plan: dict[str, Any], spec: str) -> dict[str, Any]:
    return next(op for op in plan["operations"] if spec in op.get("secrets", {}).values())


def apply_tampered(cli: Cli, planfile: Path, plan: dict[str, Any], reset_stats: Callable[[], None]) -> Result:
    planfile.write_text(json.dumps(plan))
    reset_stats()
    return cli("apply", str(planfile))


@pytest.mark.parametrize("make_path", [
    lambda c: f"{c.url}/v2/integrations",  # an absolute URL: its own host, with the Authorization header
    lambda c: "//" + c.url.split("://")[1] + "/v2/integrations",  # scheme-relative
    lambda c: "/v2/../v2/integrations",
    lambda c: "/v2/%2e%2e/admin",
    lambda c: "/v2//integrations",
    lambda c: "/v1/integrations",
    lambda c: "/v2/integrations?x=1",
    lambda c: "/v2/integrations/..;/admin",  # a path parameter after '..' (servers that drop it)
    lambda c: "/v2/%252e%252e/admin",  # encoded twice
    lambda c: "/v2/%EF%BC%8E%EF%BC%8E/admin",  # full-width dots, '..' once normalised
    lambda c: "/v2/%c0%ae%c0%ae/admin",  # overlong UTF-8 dots
], ids=["absolute-url", "scheme-relative", "dot-dot", "escaped-dot-dot", "double-slash", "not-v2", "query",
        "dot-dot-semicolon", "double-encoded", "full-width", "overlong-utf8"])
def test_a_plan_file_path_off_the_api_is_refused_before_any_request(
        cli: Cli, tree: Path, tmp_path: Path, collector: Collector, stats: Callable[[], dict[str, int]],
        reset_stats: Callable[[], None], make_path: Callable[[Collector], str]) -> None:
    planfile, plan = saved_plan(cli, tree, tmp_path)
    plan["operations"][0]["path"] = make_path(collector)

    result = apply_tampered(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1
    assert "refused before any request" in result.output and "Traceback" not in result.output
    assert f"operation {plan['operations'][0]['id']!r}: path" in result.output
    assert collector.requests == []  # the key went nowhere
    assert stats() == {}  # not even the stale check's reads


def test_a_plan_file_method_apply_never_sends_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                          stats: Callable[[], dict[str, int]],
                                                          reset_stats: Callable[[], None]) -> None:
    planfile, plan = saved_plan(cli, tree, tmp_path)
    plan["operations"][0]["method"] = "GET"

    result = apply_tampered(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "method 'GET' is not one apply sends" in result.output
    assert stats() == {}


def test_a_secret_reference_the_manifests_do_not_declare_is_refused_and_never_read(
        cli: Cli, tree: Path, tmp_path: Path, stats: Callable[[], dict[str, int]], reset_stats: Callable[[], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    canary_file = tmp_path / "outside" / "id_rsa"
    canary_file.parent.mkdir()
    canary_file.write_text("canary-private-key-81f3")
    monkeypatch.setenv("CI_DEPLOY_TOKEN", "canary-ci-token-2c7a")
    planfile, plan = saved_plan(cli, tree, tmp_path)
    op = op_with_secret(plan, "env:VENDOR_A_KEY")
    for spec in (f"file:{canary_file}", "env:CI_DEPLOY_TOKEN"):
        op["secrets"] = {"/config/api_key": spec}

        result = apply_tampered(cli, planfile, plan, reset_stats)

        assert result.exit_code == 1 and "Traceback" not in result.output
        assert f"Integration/vendor-a-prod: config.api_key: {spec} is not declared there" in result.output
        assert "canary" not in result.output
        assert stats() == {}


def test_a_secret_moved_to_a_readable_field_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                       stats: Callable[[], dict[str, int]],
                                                       reset_stats: Callable[[], None]) -> None:
    """A declared reference sent into a field the API shows back (the name) would publish it."""
    planfile, plan = saved_plan(cli, tree, tmp_path)
    op = op_with_secret(plan, "env:VENDOR_A_KEY")
    op["body"]["name"] = "(sensitive)"
    op["secrets"] = {"/name": "env:VENDOR_A_KEY"}

    result = apply_tampered(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1 and "Integration/vendor-a-prod: name: env:VENDOR_A_KEY is not declared" in result.output
    assert stats() == {}


def test_a_plan_whose_manifests_are_gone_is_refused(cli: Cli, tree: Path, tmp_path: Path,
                                                    stats: Callable[[], dict[str, int]],
                                                    reset_stats: Callable[[], None]) -> None:
    """Nothing but its manifests vouches for a plan file's secret references and policies."""
    planfile, plan = saved_plan(cli, tree, tmp_path)
    shutil.move(tree, tmp_path / "elsewhere")

    result = apply_tampered(cli, planfile, plan, reset_stats)

    assert result.exit_code == 1
    assert "the plan is bound to the files it was made from" in result.output
    assert f"{tree}/restrictions.yaml: missing" in result.output
    assert stats() == {}


def test_an_untampered_plan_file_still_applies(cli: Cli, tree: Path, tmp_path: Path) -> None:
    planfile, _ = saved_plan(cli, tree, tmp_path)
    result = cli("apply", str(planfile))
    assert result.exit_code == 0, result.output
    assert "Apply complete" in result.output


@pytest.mark.parametrize("text, message", [
    ('{"format_version": "1.0", "operations": [{"id": "a", "act', "invalid JSON (Unterminated string"),
    ('{"format_version": "1.0", "operations": [', "(the file ends early: truncated?)"),
    ('{"format_version": "2.0.0", "operations": []}', "format_version 2.0.0 is newer than this reconciler reads (1.x)"),
    ('{"format_version": 1, "operations": []}', "format_version 1 is not a version (MAJOR.MINOR.PATCH)"),
    ('{"format_version": "1.0", "operations": {}}', "operations: expected a JSON array"),
    ('{"format_version": "1.0", "operations": [1], "options": {"targets": 3}}', "options.targets"),
    ('{"format_version": "1.0", "operations": [{"id": "a"}]}', "operations[0].action: expected a string"),
])
def test_a_broken_or_newer_plan_file_is_a_clear_error(cli: Cli, tmp_path: Path, stats: Callable[[], dict[str, int]],
                                                       reset_stats: Callable[[], None], text: str,
                                                       message: str) -> None:
    planfile = tmp_path / "plan.json"
    planfile.write_text(text)
    reset_stats()

    result = cli("apply", str(planfile))

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"Error: {planfile}") and message in result.output
    assert stats() == {}


def test_an_id_from_an_answer_cannot_climb_out_of_its_path_segment() -> None:
    """A reference in a path is filled from an earlier response (the API's answer, not trusted)."""
    op = Operation(id="b", action="update", kind="Prompt", name="p", method="PUT",
                   path="/v2/prompt-versions/${Prompt/s/p#create:version.id}/labels", body={},
                   depends_on=("Prompt/s/p#create",))
    path, _ = request_for(op, {"Prompt/s/p#create": {"version": {"id": "../../../admin?x=//evil"}}}, "now")
    assert path == "/v2/prompt-versions/..%2F..%2F..%2Fadmin%3Fx%3D%2F%2Fevil/labels"
