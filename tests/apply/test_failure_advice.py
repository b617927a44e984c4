"""After a failed apply, the advice fits the failure: a refused call (a 4xx) says what to change
and where (field, ``file:line``), and a re-run is advised only for failures a re-run can fix."""

from __future__ import annotations

from reconciler.apply.executor import ApplyReport, Outcome
from reconciler.plan.model import Change, Operation


def op(name: str, *changes: Change) -> Operation:
    return Operation(id=f"Integration/{name}#update", action="update", kind="Integration", name=name,
                     method="PATCH", path="/v2/integrations/I1", changes=changes, address=f"Integration/{name}")


BASE_URL = Change("config.base_url", None, "https://x.example", "llm.yaml:9")
FLAG = Change("config.is_function_calling_enabled", True, False, "llm.yaml:10")


def test_a_refused_call_names_the_field_and_line_to_change_and_never_says_re_run_to_converge() -> None:
    report = ApplyReport([Outcome(op("a", FLAG, BASE_URL), "failed", "422 Unprocessable: base_url is not allowed",
                                  http_status=422)])
    text = report.failure_summary()
    assert "Integration/a: 422 Unprocessable: base_url is not allowed -> change config.base_url at llm.yaml:9" in text
    assert "is_function_calling_enabled" not in text  # the refusal named one field: that one
    assert "re-run to converge" not in text and "Fix them and re-run." in text


def test_a_refusal_that_names_no_field_lists_every_change_of_the_call() -> None:
    text = ApplyReport([Outcome(op("a", FLAG, BASE_URL), "failed", "422 Unprocessable", http_status=422)]
                       ).failure_summary()
    assert "-> change config.is_function_calling_enabled at llm.yaml:10, config.base_url at llm.yaml:9" in text


def test_a_forbidden_write_asks_for_another_key() -> None:
    text = ApplyReport([Outcome(op("a", FLAG), "failed", "403 Forbidden", http_status=403)]).failure_summary()
    assert "use a key that may write" in text and "re-run to converge" not in text


def test_transient_failures_alone_advise_a_re_run() -> None:
    for status in (None, 500, 503, 409, 429, 408):
        report = ApplyReport([Outcome(op("a", FLAG), "failed", "boom", http_status=status)])
        assert report.failure_summary().endswith("the failures may be transient: re-run to converge")


def test_a_mix_says_what_to_fix_and_that_the_rest_may_pass_on_a_re_run() -> None:
    report = ApplyReport([Outcome(op("a", FLAG), "failed", "422 x", http_status=422),
                          Outcome(op("b", FLAG), "failed", "503 y", http_status=503)])
    text = report.failure_summary()
    assert "Integration/a: 422 x" in text and "Integration/b" not in text
    assert "The other failures may be transient: re-run after fixing these to converge." in text
