"""The benchmark machinery at a tiny scale, so it does not rot: every scenario runs end to end
against a real emulator process, and the figures it reports are consistent with each other.
Structure and arithmetic only, never timings."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks import report
from benchmarks.account import AccountSpec, change_of, pages
from benchmarks.bounds import Bound, read_bound
from benchmarks.census import Census
from benchmarks.run import main
from reconciler.model import DesiredResource, ManifestSet

SCENARIOS = ["plan_in_sync", "plan_apply_5pct", "apply_from_empty", "plan_latency_20ms",
             "plan_apply_5pct_latency_20ms", "apply_from_empty_latency_20ms", "apply_5pct_rate_limit_50"]


@pytest.fixture(scope="module")
def run_output(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--scale", "0.005", "--examples", "5", "--no-doc",
                     "--workdir", str(tmp_path_factory.mktemp("bench"))]) == 0
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_the_run_prints_one_json_line_per_scenario_with_its_fields(run_output: list[dict[str, Any]]) -> None:
    assert [row["scenario"] for row in run_output] == SCENARIOS
    for row in run_output:
        assert {"scenario", "wall_s", "requests", "lower_bound", "ratio", "planner_cpu_s", "peak_rss_mb"} <= set(row)


def test_the_ratio_is_the_emulator_count_over_the_lower_bound(run_output: list[dict[str, Any]]) -> None:
    for row in run_output:
        sent = sum(row["requests"].values())
        assert row["ratio"] >= 1.0  # no run sends fewer requests than the lower bound allows
        assert abs(row["ratio"] * row["lower_bound"] - sent) <= row["lower_bound"] * 0.00005 + 1e-9


def test_a_plan_in_sync_only_reads_and_meets_the_bound(run_output: list[dict[str, Any]]) -> None:
    row = run_output[0]
    assert set(row["requests"]) == {"GET"}
    assert row["ratio"] == 1.0


def test_the_cpu_floor_of_a_plan_in_sync_sends_the_same_gets_and_parses_every_input(
        run_output: list[dict[str, Any]]) -> None:
    row = run_output[0]
    floor = row["floor"]
    assert floor["responses"] == floor["bare_requests"] == row["requests"]["GET"]  # the same reads
    assert floor["manifest_files"] >= 5 and floor["examples_files"] >= 1
    assert floor["parse_s"] == pytest.approx(floor["yaml_events_s"] + floor["examples_json_s"], abs=0.002)
    assert floor["cpu_floor_s"] == pytest.approx(floor["bare_cpu_s"] + floor["parse_s"], abs=0.002)
    assert "floor" not in run_output[1]


def test_every_latency_row_sets_its_wall_beside_the_largest_of_the_three_floors(
        run_output: list[dict[str, Any]]) -> None:
    rows = [r for r in run_output if r["scenario"].endswith("latency_20ms")]
    assert len(rows) == 3
    for row in rows:
        lf = row["latency_floor"]
        assert lf["floor_s"] == max(lf["cpu_floor_s"], lf["chain_s"], lf["spread_s"])
        assert lf["chain_s"] == pytest.approx(lf["chain"] * 0.02)
        assert lf["spread_s"] == pytest.approx(sum(row["requests"].values()) * 0.02 / 10, abs=0.002)
        assert lf["wall_over_floor"] == pytest.approx(row["wall_s"] / lf["floor_s"], abs=0.002)


def test_the_naive_baseline_runs_beside_every_scenario_but_the_rate_limited_one(
        run_output: list[dict[str, Any]]) -> None:
    assert all("naive" in row for row in run_output[:4])
    assert all("naive" not in row for row in run_output[4:])
    assert "rate_fraction" in run_output[6]


def test_the_lower_bound_of_a_read_counts_list_pages_and_per_resource_reads() -> None:
    census = Census(integrations=Counter({"LLM": 250, "AGENT": 3}), spaces={"s": "S1"}, organizations=1,
                    restrictions=0, prompts={("S1", "p"): "P1"}, prompt_versions=Counter({"P1": 101}),
                    datasets={("S1", "d"): "D1"}, examples=Counter({"D1": 1200}),
                    experiments={"D1": ["2020-01-01T00:00:00+00:00"] * 3}, evaluators={("S1", "e"): "E1"})
    manifests = ManifestSet((
        DesiredResource("Prompt", "p", {}, space="s"),
        DesiredResource("Dataset", "d", {"experiment_retention": {"keep_last": 1}}, space="s"),
        DesiredResource("Evaluator", "e", {}, space="s"),
    ))
    lists, per = read_bound(census, manifests)
    assert lists == 3 + 1 + 1 + 1 + 1 + 3  # LLM, AGENT, spaces, orgs, restrictions, three space lists
    assert per == 2 + 3 + 1 + 1  # versions, examples at 500, experiments, the evaluator GET
    assert Bound(lists, per, 4, 2).total == lists + per + 6


def test_the_change_touches_one_resource_in_twenty_of_each_kind() -> None:
    spec = AccountSpec.at(1.0)
    change = change_of(spec)
    assert len(change.llm) == 100 and len(change.agent) == 25
    assert len(change.prompt_descriptions) + len(change.prompt_versions) == 50
    assert pages(0) == 1 and pages(101) == 2


def test_the_document_keeps_the_other_scale_when_one_is_rewritten(tmp_path: Path) -> None:
    def result(scale: str) -> dict[str, Any]:
        row = {"scenario": "plan_in_sync", "wall_s": 1.0, "requests": {"GET": 10}, "lower_bound": 10, "ratio": 1.0,
               "planner_cpu_s": 0.05, "peak_rss_mb": 50.0, "phases": {},
               "bound": {"list_pages": 5, "per_resource_reads": 5, "writes": 0, "reread": 0, "total": 10}}
        return {"scale": scale, "factor": float(scale), "account": AccountSpec.at(0.1).as_json(), "change": 1,
                "cpus": 2, "date": "d", "rows": [row], "targets": report.targets([row])}

    doc = tmp_path / "performance.md"
    report.write_doc(doc, "0.1", result("0.1"))
    assert not (tmp_path / "performance.png").exists()  # one scale: nothing to plot yet
    report.write_doc(doc, "1.0", result("1.0"))
    text = doc.read_text()
    assert "## Scale 0.1" in text and "## Scale 1.0" in text and "## Growth" in text
    assert (tmp_path / "performance.png").exists()
    assert "How the lower bound is computed" in text


def test_the_growth_targets_and_the_plot_come_from_two_scales(tmp_path: Path) -> None:
    def result(factor: float, wall: float) -> dict[str, Any]:
        row = {"scenario": "plan_in_sync", "wall_s": wall, "requests": {"GET": int(100 * factor)}, "lower_bound": 10,
               "ratio": 1.0, "planner_cpu_s": 0.05, "cpu_s": 0.1, "peak_rss_mb": 50.0, "phases": {},
               "bound": {"list_pages": 5, "per_resource_reads": 5, "writes": 0, "reread": 0, "total": 10},
               "naive": {"wall_s": wall * 2, "requests": {"GET": int(100 * factor)}}, "naive_wall_over_ours": 2.0}
        return {"scale": str(factor), "factor": factor, "resources": int(5000 * factor),
                "account": AccountSpec.at(factor).as_json(), "change": 1, "cpus": 2, "date": "d", "rows": [row],
                "targets": report.targets([row])}

    results = {"0.1": result(0.1, 1.0), "1.0": result(1.0, 13.0)}
    assert report.growth(results) == [{"target": "plan_in_sync: wall(1.0) / wall(0.1) <= 12",
                                       "figure": "13.00 s / 1.00 s = 13.0", "met": False}]
    assert report.plot(results, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not report.plot({"0.1": results["0.1"]}, tmp_path / "q.png")


def test_big_dataset_runs_end_to_end_at_a_tiny_size(tmp_path: Path) -> None:
    from benchmarks import big

    result = big.run(60, tmp_path, log=lambda line: None)
    steps = {s["step"]: s for s in result["steps"]}
    assert set(steps) == {"create", "plan_in_sync", "change_1pct"}
    assert set(steps["plan_in_sync"]["requests"]) == {"GET"}
    assert steps["change_1pct"]["converged"] is True and steps["change_1pct"]["failed"] == 0
    assert all(s["ratio"] == round(sum(s["requests"].values()) / s["lower_bound"], 4) for s in steps.values())
    assert "big_dataset" in big.table(result)


def test_the_event_loop_bench_runs_end_to_end_at_a_tiny_size(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.async_bench import main

    assert main(["--scale", "0.005", "--runs", "1", "--before", ""]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(out["targets"]) == 10 and all(t["before"] == "-" for t in out["targets"])
    now = out["now"]
    assert now["read_cpu_s"] > 0 and now["rate_50"]["failed"] == 0 and now["rate_50_bucket_5"]["failed"] == 0
    assert out["before"] == {}


def test_the_event_loop_section_is_replaced_in_place(tmp_path: Path) -> None:
    from benchmarks.async_bench import write_doc

    doc = tmp_path / "performance.md"
    doc.write_text("# P\n\n<!-- async-bench 0.1 start -->\nold\n<!-- async-bench 0.1 end -->\n\n## After\n")
    write_doc(doc, "0.1", "new table")
    write_doc(doc, "0.3", "other")
    text = doc.read_text()
    assert "old" not in text and text.index("new table") < text.index("## After") < text.index("other")
