"""Small things a new user meets: each as the user would try it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from reconciler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {"VENDOR_A_KEY": "k", "AGENT_TOKEN": "t"}


def test_emulator_file_in_a_missing_directory_creates_the_directory(tmp_path: Path,
                                                                      monkeypatch: object) -> None:
    db = tmp_path / "new" / "dir" / "state.db"
    result = CliRunner().invoke(main, ["plan", str(ROOT / "manifests"), "--emulator", str(db)], env=SECRETS)
    assert result.exit_code == 0, result.output
    assert db.is_file() and "Plan: " in result.stdout


def test_watch_help_lists_no_option_that_watch_refuses() -> None:
    help_text = CliRunner().invoke(main, ["watch", "--help"]).stdout
    assert "--prune" in help_text and "--target" in help_text  # apply's options that watch takes
    for refused in ("--rotate", "--rotate-secrets", "--since"):
        assert refused not in help_text
        result = CliRunner().invoke(main, ["watch", "manifests", refused, *(["x"] if refused != "--rotate-secrets"
                                                                            else [])])
        assert result.exit_code == 1 and "use it with apply" in result.stderr  # still refused with the reason


def without_server_stack(*args: str) -> subprocess.CompletedProcess[str]:
    """``reconciler ARGS`` in a Python where starlette and uvicorn cannot be imported (a plain
    ``pip install reconciler``, without the emulator extra)."""
    code = ("import sys; sys.modules.update(starlette=None, uvicorn=None); "
            f"sys.argv = ['reconciler', *{list(args)!r}]; from reconciler.cli.main import main; main()")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **SECRETS})


def test_without_the_emulator_extra_the_emulator_says_how_to_install_it(tmp_path: Path) -> None:
    for args in (["emulator", "--port", "0"], ["plan", "manifests", "--emulator", str(tmp_path / "s.db")]):
        done = without_server_stack(*args)
        assert done.returncode == 1, done.stderr
        assert "pip install 'reconciler[emulator]'" in done.stderr and "Traceback" not in done.stderr


def test_validate_needs_no_server_stack() -> None:
    done = without_server_stack("validate", "manifests")
    assert done.returncode == 0, done.stderr


LLM = "type: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n"


def validate(tmp_path: Path, text: str, *paths: str) -> str:
    (tmp_path / "m.yaml").write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["validate", *(paths or (str(tmp_path / "m.yaml"),))])
    assert result.exit_code == 1, result.output
    return result.stderr


def test_an_alias_clash_names_both_aliases_lines(tmp_path: Path) -> None:
    err = validate(tmp_path, f"kind: Integration\nname: a\naliases: [x, old]\n{LLM}---\n"
                             f"kind: Integration\nname: b\naliases: [old]\n{LLM}")
    here = tmp_path / "m.yaml"
    assert f"{here}:9:11: aliases[0]: 'old' is an alias of Integration/a too (its aliases[1] at {here}:3)" in err


def test_a_var_file_given_as_a_path_gets_a_hint(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("env: production\nspace: production\ntemperature: 0.2\n", encoding="utf-8")
    err = validate(tmp_path, "", str(tmp_path / "vars.yaml"))
    assert "this looks like a var file (a mapping of variables), given as a PATH; pass it with --var-file FILE" in err


def test_a_misspelt_key_next_to_a_missing_required_one_gets_did_you_mean(tmp_path: Path) -> None:
    err = validate(tmp_path, "kind: Evaluator\nspace: s\nname: e\ncommit_message: x\ntemplate_config:\n  name: n\n"
                             "  template: t\n  classification_choices: {a: 1}\n  llm: {integration: i, model_name: m}\n")
    assert err.splitlines()[0].endswith("template_config.llm: unknown field 'llm'; did you mean 'llm_config'? "
                                        "(a required field, not written here)")
    assert "missing required field" not in err


def test_the_text_plan_names_the_owner_of_what_prune_deletes(tmp_path: Path) -> None:
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "manifests", tree)
    db = str(tmp_path / "state.db")
    assert CliRunner().invoke(main, ["apply", str(tree), "--emulator", db, "--auto-approve"], env=SECRETS).exit_code == 0
    (tree / "restrictions.yaml").unlink()
    result = CliRunner().invoke(main, ["plan", str(tree), "--emulator", db, "--prune", "--allow-empty"], env=SECRETS)
    assert result.exit_code == 0, result.output
    assert "(not declared, inside the ownership of quickstart: --prune)" in result.stdout
