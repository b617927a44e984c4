"""``docs/performance.md`` is rebuilt from the bench-data comments by every bench that records its
figures; the sections written by hand (the policy bench, pull at scale 1.0...) survive the rebuild."""

from __future__ import annotations

from pathlib import Path

from benchmarks import report
from benchmarks.startup import table

STARTUP = {"kind": "startup", "date": "2026-11-25", "runs": 3, "cpus": 2, "load": [0.5, 0.6],
           "rows": [{"command": "import click", "median_s": 0.1, "best_s": 0.09, "ratio": 1.0, "cpu_s": 0.08,
                     "cpu_ratio": 1.0, "target": None},
                    {"command": "reconciler validate manifests", "median_s": 0.4, "best_s": 0.39, "ratio": 4.0,
                     "cpu_s": 0.36, "cpu_ratio": 4.5, "target": 5.0}],
           "importtime": {"reconciler --version": [{"module": "click", "self_us": 5000, "cumulative_us": 9000}]}}
HAND = ("## Policy evaluation (measured 2026-11-25)\n\nTen rules on the plan of the 5% change.\n\n"
        "| figure | value |\n|---|---:|\n| policy / plan | 9.2% |\n\n"
        "## pull against plan (measured 2026-11-25)\n\nAt scale 1.0: pull / plan 1.08x.")


def test_a_rebuild_keeps_the_hand_written_sections_and_replaces_its_own(tmp_path: Path) -> None:
    page = tmp_path / "performance.md"
    report.write_doc(page, "startup", {**STARTUP, "date": "2026-11-01"})
    first = page.read_text(encoding="utf-8")
    head, tail = first.split("## How the lower bound is computed", 1)
    page.write_text(f"{head}{HAND}\n\n## How the lower bound is computed{tail}", encoding="utf-8")

    report.write_doc(page, "startup", STARTUP)
    report.write_doc(page, "startup", STARTUP)  # twice: nothing doubles
    text = page.read_text(encoding="utf-8")
    assert text.count("## Policy evaluation") == 1 and "| policy / plan | 9.2% |" in text
    assert text.count("## pull against plan") == 1 and "pull / plan 1.08x." in text
    assert text.count("## Start-up") == 1 and "(measured 2026-11-25)" in text
    assert "2026-11-01" not in text
    assert text.index("## Start-up") < text.index("## Policy evaluation") < text.index("## How the lower bound")
    assert text.count("<!-- bench-data startup:") == 1


def test_the_startup_table_shows_wall_and_cpu_ratios_and_the_load() -> None:
    shown = table(STARTUP)
    assert "load average of 0.5 before and 0.6 after" in shown
    assert "| reconciler validate manifests | 0.400 | 0.390 | 4.00x | 0.360 | 4.50x | <= 5.0x | yes |" in shown


def test_the_models_table_holds_the_kind_registrys_figures_against_the_commit_before_it() -> None:
    result = {"kind": "models", "runs": 3, "now": {"scale": "large", "resources": 3900, "validate_s": 0.8,
                                                    "validate_cpu_s": 0.8, "plan_cpu_s": 0.4},
              "before": {"validate_s": 0.9, "validate_cpu_s": 0.9, "plan_cpu_s": 0.3, "commit": "61db855"},
              "house": {"plan_cpu_s": 0.38, "commit": "4f0eca7"},
              "product_lines": {"now": {"code": 12241, "wc": 1}, "4f0eca7": {"code": 12297, "wc": 1}}}
    rows = report.models_table(result).splitlines()
    assert "| make_plan CPU s (in sync) | 0.3 | 0.4 | now <= before | NO |" in rows
    assert "| make_plan CPU s (in sync), before = 4f0eca7 (the kind registry) | 0.38 | 0.4 | now <= before | NO |" in rows
    assert ("| product lines outside the emulator (non-blank, non-comment), before = 4f0eca7 (the kind registry) | 12,297 | "
            "12,241 | now <= before | yes |") in rows
