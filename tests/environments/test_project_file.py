"""reconciler.yaml read and checked: every problem at its file:line, as a manifest's are, before any
request; its JSON Schema published beside the manifests'."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from reconciler import project
from reconciler.cli.main import main
from reconciler.client.settings import REGIONS
from reconciler.errors import ConfigError, ManifestError

ROOT = Path(__file__).resolve().parents[2]


def problems_of(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "reconciler.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ManifestError) as caught:
        project.load(path)
    assert str(caught.value).startswith(f"{len(caught.value.problems)} problem")
    return [p.replace(str(path), "reconciler.yaml") for p in caught.value.problems]


def loaded(tmp_path: Path, text: str) -> project.Project:
    path = tmp_path / "reconciler.yaml"
    path.write_text(textwrap.dedent(text))
    return project.load(path)


def test_a_literal_api_key_is_refused_at_its_line_without_repeating_it(tmp_path: Path) -> None:
    found = problems_of(tmp_path, """\
        environments:
          production:
            region: eu-west-1a
            api_key: sk-live-0123456789
            paths: [base]
        """)
    assert found == ["reconciler.yaml:4:14: environments.production.api_key: a secret must be a reference: "
                     "{env: NAME}; literal values would end up in git; a project file is committed"]
    assert "sk-live" not in "".join(found)


def test_a_file_reference_for_the_key_is_refused(tmp_path: Path) -> None:
    found = problems_of(tmp_path, """\
        environments:
          production: {region: eu-west-1a, api_key: {file: key.txt}, paths: [base]}
        """)
    assert found == ["reconciler.yaml:2:46: environments.production.api_key.file: the key is read from an "
                     "environment variable only: write {env: NAME}"]


def test_a_misspelt_field_gets_a_did_you_mean(tmp_path: Path) -> None:
    found = problems_of(tmp_path, """\
        environments:
          staging:
            emulator: staging.db
            path: [base]
        """)
    assert "reconciler.yaml:4:5: environments.staging.path: unknown field 'path'; did you mean 'paths'?" in found


def test_an_environment_names_exactly_one_endpoint(tmp_path: Path) -> None:
    assert problems_of(tmp_path, """\
        environments:
          staging: {emulator: a.db, host: api.example.com, paths: [base]}
          production: {api_key: {env: K}, paths: [base]}
        """) == [
        "reconciler.yaml:2:12: environments.staging: write exactly one of base_url, region, host, emulator (where "
        "the environment's account is); found host, emulator",
        "reconciler.yaml:3:15: environments.production: write exactly one of base_url, region, host, emulator "
        "(where the environment's account is)"]


def test_a_real_endpoint_needs_a_key_reference(tmp_path: Path) -> None:
    assert problems_of(tmp_path, """\
        environments:
          production: {region: eu-west-1a, paths: [base]}
        """) == ["reconciler.yaml:2:3: environments.production: missing required field 'api_key' ({env: NAME}: the "
                 "variable holding the key)"]


def test_an_unknown_name_in_after_gets_a_did_you_mean_and_the_list(tmp_path: Path) -> None:
    assert problems_of(tmp_path, """\
        environments:
          staging: {emulator: a.db, paths: [base]}
          production: {emulator: b.db, paths: [base], after: [stageing]}
        """) == ["reconciler.yaml:3:55: environments.production.after.0: no environment 'stageing'; did you mean "
                 "'staging'? (environments: staging, production)"]


def test_a_cycle_in_after_is_refused_at_its_line(tmp_path: Path) -> None:
    assert problems_of(tmp_path, """\
        environments:
          a: {emulator: a.db, paths: [x], after: [c]}
          b: {emulator: a.db, paths: [x], after: [a]}
          c:
            emulator: a.db
            paths: [x]
            after: [b]
          d: {emulator: a.db, paths: [x], after: [d]}
        """) == ["reconciler.yaml:2:43: environments.a.after.0: a cycle in after: a after c after b after a (each "
                 "would wait for another)",
                 "reconciler.yaml:8:43: environments.d.after.0: an environment cannot come after itself"]


def test_a_duplicate_key_is_refused_as_in_a_manifest(tmp_path: Path) -> None:
    found = problems_of(tmp_path, """\
        environments:
          staging: {emulator: a.db, paths: [x]}
          staging: {emulator: b.db, paths: [y]}
        """)
    assert len(found) == 1 and found[0].startswith("reconciler.yaml:3:") and "staging" in found[0]


def test_after_orders_the_environments_and_the_file_orders_the_rest(tmp_path: Path) -> None:
    chosen = loaded(tmp_path, """\
        environments:
          production: {emulator: p.db, paths: [x], after: [staging, qa]}
          research: {emulator: r.db, paths: [x]}
          qa: {emulator: q.db, paths: [x], after: [staging]}
          staging: {emulator: s.db, paths: [x]}
        """)
    assert project.order(chosen, chosen.names) == ["research", "staging", "qa", "production"]
    assert project.order(chosen, ["production", "qa"]) == ["qa", "production"]


def test_an_unknown_environment_gets_a_did_you_mean_and_the_list(tmp_path: Path) -> None:
    chosen = loaded(tmp_path, "environments: {staging: {emulator: a.db, paths: [x]}, production: "
                              "{emulator: b.db, paths: [x]}}\n")
    with pytest.raises(ConfigError, match=r"--env prod: no environment 'prod'; did you mean 'production'\? "
                                          r"\(environments: staging, production\)"):
        project.select(chosen, ["prod"], every=False)


def test_an_unset_key_variable_is_named_with_its_line(tmp_path: Path) -> None:
    chosen = loaded(tmp_path, "environments:\n  production:\n    region: eu-west-1a\n"
                              "    api_key: {env: PRODUCTION_API_KEY}\n    paths: [x]\n")
    with pytest.raises(ConfigError) as caught:
        project.key_of(chosen, "production", environ={})
    assert str(caught.value) == (f"environment production: its key variable PRODUCTION_API_KEY is not set (api_key "
                                 f"at {tmp_path / 'reconciler.yaml'}:4); nothing was sent")


def test_the_project_file_is_found_from_the_working_directory_upwards(tmp_path: Path) -> None:
    (tmp_path / "reconciler.yaml").write_text("environments: {}\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert project.find(tmp_path / "a" / "b") == tmp_path / "reconciler.yaml"
    assert project.find(tmp_path.parent) in (None, *(p / "reconciler.yaml" for p in tmp_path.parent.parents))


def test_regions_are_the_clients() -> None:
    assert project.Environment.model_fields["region"].annotation is not None
    assert tuple(project.json_schema()["$defs"]["Environment"]["properties"]["region"]["anyOf"][0]["enum"]) == REGIONS


def test_committed_schema_is_what_reconciler_schema_project_prints() -> None:
    printed = CliRunner().invoke(main, ["schema", "--project"]).stdout
    assert (ROOT / "docs/project.schema.json").read_text(encoding="utf-8") == printed


def test_a_region_and_its_base_url_are_one_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "o.yaml").write_text("kind: Ownership\nname: o\nspaces: [shared]\n")
    (tmp_path / "reconciler.yaml").write_text(textwrap.dedent("""\
        environments:
          eu: {region: eu-west-1a, api_key: {env: EU_KEY}, paths: [base]}
          eu-again: {base_url: "https://api.eu-west-1a.llmops.example/v2", api_key: {env: EU_KEY}, paths: [base]}
        """))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "--all"])  # no network, no key: refused all the same
    assert result.exit_code == 1
    assert ("environments eu and eu-again name one account and the space shared (reconciler.yaml:2, "
            "reconciler.yaml:3)") in result.output


def test_an_endpoint_the_client_refuses_names_its_environment(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reconciler.yaml").write_text(
        "environments:\n  lab: {base_url: 'http://lab.example.com', api_key: {env: LAB_KEY}, paths: [base]}\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "--all"])
    assert result.exit_code == 1
    assert "environment lab (reconciler.yaml:2): " in result.output and "http://" in result.output


def test_the_example_project_file_follows_the_published_schema_its_modeline_names() -> None:
    import json

    import jsonschema
    import yaml

    path = ROOT / "examples/environments/reconciler.yaml"
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert (path.parent / first.split("$schema=", 1)[1]).resolve() == (ROOT / "docs/project.schema.json").resolve()
    schema = json.loads((ROOT / "docs/project.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(path.read_text()))) == []
    assert project.load(path).names == ["staging", "production"]


def test_a_directory_walk_never_loads_the_project_file_as_a_manifest(tmp_path: Path) -> None:
    from reconciler.manifests import load_manifests

    (tmp_path / "reconciler.yaml").write_text("environments:\n  staging: {emulator: s.db, paths: [base]}\n")
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "llm.yaml").write_text(
        "kind: Integration\nname: i\ntype: LLM\nconfig: {provider: VENDOR_A, api_key: {env: K}}\n")
    assert [r.name for r in load_manifests([str(tmp_path)])] == ["i"]
