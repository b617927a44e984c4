"""Names from the API are data in every output. ``export`` and
``pull --unmanaged-to`` write ``secrets.env.example`` (a file people ``source``) with one
``NAME=`` line a variable, variables named apart from the reconciler's own and one to one; the text
plan holds no control character, the Markdown plan no line, tag or comment a name brings. The
names are made over a loopback socket, in the emulator."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from reconciler import shown
from reconciler.export import env_name
from reconciler.plan.model import Change, Operation, Plan, Unmanaged, Verdict
from reconciler.plan.render import render_markdown, render_text
from tests.conftest import EMULATOR_ADMIN
from tests.security.test_plan_file import Cli

INJECTED = "x\nRECONCILER_BASE_URL=http://127.0.0.1:9/\n$(touch INJECTED)\n`touch INJECTED2`"


def integration(server: tuple[str, Any], name: str, *, agent: bool = False) -> None:
    body: dict[str, Any] = ({"type": "AGENT", "name": name, "config": {"endpoint": "https://agent.example.com/run",
                                                                         "headers": {"X-Token": "t0ken-value"},
                                                                         "input_schema": {"type": "object"}}}
                            if agent else {"type": "LLM", "name": name,
                                           "config": {"provider": "VENDOR_A", "api_key": "k3y-value"}})
    answer = httpx.post(f"{server[0]}/v2/integrations", headers=EMULATOR_ADMIN, json=body)
    assert answer.status_code in (200, 201), answer.text


def sourced(path: Path, tmp_path: Path) -> dict[str, str]:
    """The variables a shell has after ``set -a; . FILE`` (with every one given a value), run in
    ``tmp_path``: what the file really does when sourced."""
    text = "".join(line + "v\n" if line.endswith("=") else line + "\n" for line in path.read_text().splitlines())
    filled = tmp_path / "filled.env"
    filled.write_text(text)
    out = subprocess.run(["bash", "-c", f'set -a; . "{filled}"; env -0'], cwd=tmp_path, capture_output=True,
                         env={"PATH": os.environ["PATH"]}, check=True)
    return dict(item.split("=", 1) for item in out.stdout.decode().split("\0") if "=" in item)


def test_export_writes_hostile_names_as_data_and_names_variables_one_to_one(
        cli: Cli, server: tuple[str, Any], tmp_path: Path) -> None:
    for name in ("reconciler", "Reconciler", "reconciler-", "a-b", "a_b", "A B", INJECTED):
        integration(server, name)
    integration(server, INJECTED + "-agent", agent=True)
    out = tmp_path / "exported"

    result = cli("export", "--out", str(out))

    assert result.exit_code == 0, result.output
    lines = (out / "secrets.env.example").read_text().splitlines()
    variables = [line[:-1] for line in lines if not line.startswith("#")]
    assert all(re.fullmatch(r"SECRET_[A-Z0-9_]+=", line) or line.startswith("# ") for line in lines), lines
    assert len(variables) == len(set(variables)) == 7  # seven integrations with an api_key, seven variables
    assert "RECONCILER_API_KEY" not in variables and "SECRET_RECONCILER__API_KEY" in variables
    assert not (tmp_path / "INJECTED").exists() and not (tmp_path / "INJECTED2").exists()
    env = sourced(out / "secrets.env.example", tmp_path)
    assert not (tmp_path / "INJECTED").exists() and not (tmp_path / "INJECTED2").exists()
    assert set(env) - {"PWD", "SHLVL", "_", "OLDPWD", "PATH"} == set(variables)  # nothing else defined
    note = next(line for line in lines if "(AGENT)" in line)
    assert "x\\nRECONCILER_BASE_URL=" in note  # the name is shown, escaped, inside the comment


def test_pull_unmanaged_to_writes_the_same_safe_file(cli: Cli, tree: Path, server: tuple[str, Any],
                                                     tmp_path: Path) -> None:
    from click.testing import CliRunner

    from reconciler.cli.main import main

    assert cli("apply", str(tree), "--auto-approve").exit_code == 0
    integration(server, "support-" + INJECTED)  # inside the ownership's "support-*" glob: unmanaged
    out = tmp_path / "unmanaged"
    result = CliRunner().invoke(main, ["pull", str(tree), "--unmanaged-to", str(out), "--base-url", server[0]])

    assert result.exit_code in (0, 2), result.output
    lines = (out / "secrets.env.example").read_text().splitlines()
    assert all(re.fullmatch(r"SECRET_[A-Z0-9_]+=", line) or line.startswith("# ") for line in lines), lines
    assert not any(line.startswith("RECONCILER") for line in lines)


@pytest.mark.parametrize(("a", "b"), [("a-b", "a_b"), ("a-b", "A-B"), ("x", "x "), ("a--b", "a-b"),
                                      ("reconciler", "reconciler-api-key")])
def test_two_live_names_never_share_a_variable(a: str, b: str) -> None:
    assert env_name(a, "api_key") != env_name(b, "api_key")
    assert env_name(a, "headers", header="h") != env_name(b, "headers", header="h")
    assert env_name("n", "headers", header=a) != env_name("n", "headers", header=b)


def hostile_plan() -> Plan:
    name = "p\x1b]0;owned\x07\x1b[2J\r\n<!-- hide -->\n**Plan: 0 to create** | `x`"
    op = Operation(id="a", address=f"Prompt/research/{name}", action="update", kind="Prompt", name=name,
                   space="research", method="PATCH", path="/v2/prompts/UHJvbXB0OjE",
                   changes=(Change("description", f"old {name}", "new"),))
    return Plan((op,), unmanaged=(Unmanaged(f"Prompt/research/{name}-2", "Prompt", name, "/v2/prompts/X"),),
                warnings=(f"warning about {name}",),
                policy=(Verdict("r", "warn", f"Prompt/research/{name}", f"message {name}", "p.yaml:1"),))


def test_the_text_plan_holds_no_control_character_from_a_name() -> None:
    text = render_text(hostile_plan(), verbose=True)

    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    assert "\\x1b]0;owned\\x07" in text and "\\r\\n<!-- hide -->" in text
    assert [line for line in text.splitlines() if line.startswith("Plan: ")] == [
        "Plan: 0 to create, 1 to update, 0 to delete; 1 unmanaged."]  # the summary line is the reconciler's own


def test_the_text_plan_keeps_its_own_colour_only() -> None:
    text = render_text(hostile_plan(), colour=True)
    assert re.findall(r"\x1b\[[0-9;]*m", text) == ["\x1b[33m", "\x1b[0m"]
    assert "\x1b]" not in text and "\x1b[2J" not in text


def test_the_markdown_plan_gets_no_line_tag_or_comment_from_a_name() -> None:
    markdown = render_markdown(hostile_plan())

    # a fenced block and a code span show their text literally (a diff line starts with -, + or space)
    outside_code = re.sub(r"(`+)[^`].*?\1(?!`)", "", re.sub(r"(?ms)^(`{3,})diff\n.*?^\1$", "", markdown))
    assert "<!--" not in outside_code and "\x1b" not in markdown and "\r" not in markdown
    assert [line for line in markdown.splitlines() if line.startswith("**Plan: ")] == [
        "**Plan: 0 to create, 1 to update, 0 to delete; 1 unmanaged.**"]
    for line in markdown.splitlines():  # the name never starts a line or a row of its own
        assert not line.startswith(("<!--", "| `x`", "RECONCILER"))
    assert "&lt;!-- hide --&gt;" in markdown or "&#60;!-- hide --&#62;" in markdown


@pytest.mark.parametrize("value", ["`", "a`b", "``", "x|y", "<!--", "\n", "\u202e"])
def test_a_code_span_holds_any_text_literally(value: str) -> None:
    span = shown.md_code(value)
    assert "\n" not in span and "<!--" not in span.replace("`", "") or span.strip("` ") == "<!--"
    fence = re.match(r"`+", span)
    assert fence is not None and fence.group(0) not in span[len(fence.group(0)):-len(fence.group(0))]
