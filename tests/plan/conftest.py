"""Under mutmut (``make mutation`` sets ``MUTANT_UNDER_TEST`` in each run), the property tests of the
planner run fewer examples: each mutant runs every test that reaches the function it changes, and
for a function of the planner the property tests were nine tenths of that time. The score is then a
lower bound (a mutant only the later examples would kill counts as surviving); ``make test`` keeps
the full counts."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

MUTATION_EXAMPLES = 10


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not os.environ.get("MUTANT_UNDER_TEST"):
        return
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, "_hypothesis_internal_use_settings", None)
        if isinstance(current, settings) and current.max_examples > MUTATION_EXAMPLES:
            test._hypothesis_internal_use_settings = settings(current, max_examples=MUTATION_EXAMPLES)  # type: ignore[union-attr]
