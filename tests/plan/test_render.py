"""How a plan reads (reconciler/plan/render.py) at its edges: the headline of a plan with only
unmanaged resources, values with non-ASCII text or keys out of order, references inside lists,
long ignored values cut with an ellipsis, a long text removed, and '|' inside a Markdown table."""

from __future__ import annotations

from reconciler.plan.model import Change, Ignored, Operation, Plan, Unmanaged
from reconciler.plan.render import render, render_markdown, render_text

U = [Unmanaged(f"Prompt/research/{n}", "Prompt", n, f"/v2/prompts/P-{n}", "research") for n in ("a", "b")]


def update(*changes: Change) -> Plan:
    op = Operation(id="Prompt/research/p#version", action="update", kind="Prompt", name="p", method="POST",
                   path="/v2/prompts/P/versions", changes=changes, address="Prompt/research/p", space="research")
    return Plan(operations=(op,))


def test_a_plan_with_only_unmanaged_resources_says_so_in_one_headline() -> None:
    assert render_text(Plan(operations=(), unmanaged=(U[0],))).splitlines()[0] == (
        "No changes. The declared resources match live state; 1 unmanaged resource listed below.")
    assert render_text(Plan(operations=(), unmanaged=tuple(U))).splitlines()[0] == (
        "No changes. The declared resources match live state; 2 unmanaged resources listed below.")
    assert render_text(Plan(operations=(), unmanaged=tuple(U)), unmanaged_drift=True).splitlines()[0] == (
        "Drift: 2 unmanaged resources (listed below); the declared resources match live state.")
    assert render_markdown(Plan(operations=(), unmanaged=(U[0],))).count(
        "No changes. The declared resources match live state; 1 unmanaged resource listed below.") == 1


def test_values_keep_their_letters_and_sort_their_keys() -> None:
    text = render_text(update(Change("description", "café", "thé"), Change("invocation_params", {"b": 1, "a": 2},
                                                                          {"b": 1, "a": 3})))
    assert '      description: "café" -> "thé"\n' in text
    assert '      invocation_params: {"a": 2, "b": 1} -> {"a": 3, "b": 1}\n' in text


def test_a_reference_shows_unquoted_and_inside_lists() -> None:
    text = render_text(update(Change("version.id", None, "${Prompt/research/p#create:id}"),
                              Change("version.labels", None, ["${Prompt/research/p#create:version.id}", "x"])))
    assert "      version.id = (known after apply)\n" in text
    assert '      version.labels = ["(known after apply)", "x"]\n' in text


def test_a_value_short_without_escapes_stays_on_one_line() -> None:
    value = {"k": "é" * 40}  # 49 characters as written, 249 with \\u escapes
    assert '      config.x = {"k": "' + "é" * 40 + '"}\n' in render_text(update(Change("config.x", None, value)))


def test_a_long_value_with_letters_is_diffed_as_written() -> None:
    value = {"k": "é" * 200}
    text = render_text(update(Change("config.x", None, value), Change("config.y", "a" * 100, None)))
    assert "      config.x: (added, see below)\n" in text and '        +  "k": "' + "é" * 200 + '"' in text
    assert "      config.y: (removed, see below)\n" in text


def test_a_diffed_change_keeps_its_source() -> None:
    text = render_text(update(Change("description", None, "x" * 100, "p.yaml:3")))
    assert "      description: (added, see below)   # p.yaml:3\n" in text


def test_a_long_ignored_value_is_cut_with_an_ellipsis() -> None:
    plan = Plan(operations=(), ignored=(Ignored("Prompt/research/p", "description", "x" * 200, "y", "p.yaml:4"),))
    line = next(li for li in render_text(plan, verbose=True).splitlines() if li.startswith("  ~ "))
    assert line == '  ~ Prompt/research/p: description: "' + "x" * 158 + '… (live) vs "y" (declared)  [p.yaml:4]'
    plan = Plan(operations=(), ignored=(Ignored("Prompt/research/p", "description", "x" * 158, "y"),))
    line = next(li for li in render_text(plan, verbose=True).splitlines() if li.startswith("  ~ "))
    assert line == '  ~ Prompt/research/p: description: "' + "x" * 158 + '" (live) vs "y" (declared)'


def test_a_bar_in_a_markdown_cell_is_escaped() -> None:
    md = render_markdown(update(Change("description", "a|b", "c")))
    assert '| `POST /v2/prompts/P/versions` | `description` | `"a\\|b"` | `"c"` |  |' in md


def test_a_plan_with_only_a_warning_leads_with_no_changes() -> None:
    text = render_text(Plan(operations=(), warnings=("something to know",)))
    assert text.splitlines()[:2] == ["No changes. Live state matches the manifests.", "Warning: something to know"]


def test_ignored_differences_are_counted_in_words() -> None:
    one = Ignored("Prompt/research/p", "description", "a", "b")
    assert "Ignored: 1 difference left as live (ignore_changes):" in render_text(Plan((), ignored=(one,)), verbose=True)
    assert "Ignored: 2 differences left as live (ignore_changes):" in render_text(Plan((), ignored=(one, one)),
                                                                                  verbose=True)


def test_a_plan_in_sync_is_one_line_that_counts_the_secrets_it_could_not_compare() -> None:
    assert render(Plan(()), "text") == "No changes. Live state matches the manifests.\n"
    assert render_text(Plan((), unverified_secrets=("Integration/a: config.api_key",))) == (
        "No changes. Live state matches the manifests (1 write-only secret cannot be compared: --rotate KIND/NAME or "
        "--since REF sends them; -v lists them).\n")
    assert "(2 write-only secrets cannot be compared" in render_text(Plan((), unverified_secrets=("a", "b")))


def test_unmanaged_without_ownership_and_secrets_in_the_plural() -> None:
    plan = Plan(operations=update(Change("description", "a", "b")).operations, unmanaged=(U[0],),
                unverified_secrets=("a", "b"))
    text = render_text(plan)
    assert "Unmanaged: 1 not declared, inside the spaces and kinds the manifests name (--prune deletes them):" in text
    assert ("Note: 2 write-only secrets exist live and cannot be compared; send them with --rotate KIND/NAME "
            "(or --rotate-secrets), or with --since REF when their declaration changed.") in text


def test_drift_of_unmanaged_resources_reads_so_in_markdown() -> None:
    assert "\nDrift: 2 unmanaged resources (listed below); the declared resources match live state.\n" in render(
        Plan((), unmanaged=tuple(U)), "markdown", unmanaged_drift=True)
    assert "Drift:" not in render(Plan((), unmanaged=tuple(U)), "markdown")


def test_a_markdown_plan_whole() -> None:
    op = Operation(id="Prompt/research/p#version", action="update", kind="Prompt", name="p", method="POST",
                   path="/v2/prompts/P/versions", changes=(Change("description", "a" * 90, "b" * 90),
                                                            Change("", "p", None)),
                   address="Prompt/research/p", space="research", note="new version")
    plan = Plan(operations=(op,), unmanaged=tuple(U), owner="team",
                ignored=(Ignored("Prompt/research/q", "description", "x", "y", "q.yaml:2"),),
                unverified_secrets=("Integration/a: config.api_key",))
    assert render(plan, "markdown") == (
        '### reconciler plan\n'
        '\n'
        '| create | update | delete | replace | unmanaged |\n'
        '|---:|---:|---:|---:|---:|\n'
        '| 0 | 1 | 0 | 0 | 2 |\n'
        '\n'
        '<details><summary><code>~ Prompt/research/p</code> (update, 1 call)</summary>\n'
        '\n'
        '| call | field | before | after | source |\n'
        '|---|---|---|---|---|\n'
        '| `POST /v2/prompts/P/versions` (new version) | `description` | (text, see the diff below) | (text, see the diff below) |  |\n'
        '| `POST /v2/prompts/P/versions` (new version) | `(resource)` | `"p"` | `null` |  |\n'
        '\n'
        '`description`:\n'
        '\n'
        '```diff\n'
        '@@ -1 +1 @@\n'
        '-A90\n'
        '+B90\n'
        '```\n'
        '\n'
        '</details>\n'
        '\n'
        '<details><summary>Unmanaged: 2 not declared, inside the ownership of team (--prune deletes them):</summary>\n'
        '\n'
        '- `Prompt/research/a` (`/v2/prompts/P-a`)\n'
        '- `Prompt/research/b` (`/v2/prompts/P-b`)\n'
        '\n'
        '</details>\n'
        '\n'
        '<details><summary>Ignored: 1 difference left as live (ignore_changes):</summary>\n'
        '\n'
        '- ~ Prompt/research/q: description: "x" (live) vs "y" (declared)  [q.yaml:2]\n'
        '\n'
        '</details>\n'
        '\n'
        '\n'
        'Note: 1 write-only secret exists live and cannot be compared; send it with --rotate KIND/NAME (or --rotate-secrets), or with --since REF when their declaration changed.\n'
        '\n'
        '**Plan: 0 to create, 1 to update, 0 to delete; 2 unmanaged, 1 ignored.**\n'
    ).replace("A90", "a" * 90).replace("B90", "b" * 90)


def test_markdown_warnings_are_quoted_and_a_fence_outlasts_the_backticks_of_a_diff() -> None:
    md = render_markdown(Plan(update(Change("description", "```\n" + "x" * 90, "y")).operations,
                              warnings=("mind the gap",)))
    assert "\n````diff\n" in md and "\n````\n" in md
    assert "\n> **Warning:** mind the gap\n" in md


def test_a_coloured_text_plan_paints_each_action() -> None:
    def op(action: str, name: str) -> Operation:
        return Operation(id=f"Prompt/research/{name}#x", action=action, kind="Prompt", name=name, method="POST",
                         path="/v2/prompts", address=f"Prompt/research/{name}", space="research")
    plan = Plan(operations=(op("create", "a"), op("update", "b"), op("delete", "c"), op("replace", "d")))
    text = render(plan, "text", colour=True)
    assert [line for line in text.splitlines() if line.startswith("\x1b")] == [
        "\x1b[32m+ Prompt/research/a\x1b[0m", "\x1b[33m~ Prompt/research/b\x1b[0m",
        "\x1b[31m- Prompt/research/c\x1b[0m", "\x1b[35m-/+ Prompt/research/d\x1b[0m"]
    assert "\x1b" not in render(plan, "text")


def test_the_text_view_passes_verbose_and_drift_on() -> None:
    plan = Plan((), unmanaged=(U[0],), unverified_secrets=("Integration/a: config.api_key",))
    text = render(plan, "text", verbose=True, unmanaged_drift=True)
    assert text.splitlines()[0] == "Drift: 1 unmanaged resource (listed below); the declared resources match live state."
    assert "\n  Integration/a: config.api_key\n" in text
    assert "\n  Integration/a: config.api_key\n" not in render(plan, "text")


def test_a_text_plan_with_unmanaged_and_ignored_is_laid_out_in_blocks() -> None:
    plan = Plan(update(Change("description", "a", "b")).operations, unmanaged=(U[0],),
                ignored=(Ignored("Prompt/research/q", "description", "x", "y"),))
    assert render_text(plan, verbose=True) == (
        "~ Prompt/research/p\n"
        "    POST /v2/prompts/P/versions\n"
        '      description: "a" -> "b"\n'
        "\n"
        "Unmanaged: 1 not declared, inside the spaces and kinds the manifests name (--prune deletes them):\n"
        "  ? Prompt/research/a  (/v2/prompts/P-a)\n"
        "\n"
        "Ignored: 1 difference left as live (ignore_changes):\n"
        '  ~ Prompt/research/q: description: "x" (live) vs "y" (declared)\n'
        "\n"
        "Plan: 0 to create, 1 to update, 0 to delete; 1 unmanaged, 1 ignored.\n")
    assert "Ignored:" not in render_text(update(Change("description", "a", "b")), verbose=True)


def test_a_replacement_counts_as_a_create_and_a_delete_and_says_it_needs_consent() -> None:
    def op(action: str, name: str) -> Operation:
        return Operation(id=f"Prompt/research/{name}#x", action=action, kind="Prompt", name=name, method="POST",
                         path="/v2/prompts", address=f"Prompt/research/{name}", space="research")
    plan = Plan(operations=(op("create", "a"), op("replace", "b"), op("delete", "c")))
    assert render_text(plan).splitlines()[-2:] == [
        "1 to replace (delete, then create; needs --allow-replace).", "Plan: 2 to create, 0 to update, 2 to delete."]


def test_short_texts_on_several_lines_are_diffed_and_eighty_characters_fit_one_line() -> None:
    text = render_text(update(Change("description", "a\nb", "a\nc"), Change("template", None, "x\ny"),
                              Change("name", "n" * 80, "m" * 80)))
    assert "      description: (changed, see below)\n" in text
    assert "      template: (added, see below)\n        @@ -0,0 +1,2 @@\n        +x\n        +y\n" in text
    assert '      name: "' + "n" * 80 + '" -> "' + "m" * 80 + '"\n' in text


def test_a_value_of_exactly_one_line_length_stays_on_one_line() -> None:
    value = {"k": "v" * 151}  # {"k": "vvv…"} is 160 characters
    assert '      config.x = {"k": "' + "v" * 151 + '"}\n' in render_text(update(Change("config.x", None, value)))


def test_a_removed_text_on_several_lines_is_diffed_as_removed_lines_only() -> None:
    text = render_text(update(Change("template", "x\ny", None)))
    assert "      template: (removed, see below)\n        @@ -1,2 +0,0 @@\n        -x\n        -y\n\n" in text
