"""The plan layer's steps of each registered kind (``reconciler.kinds``), keyed by the kind's name:
each kind's ``KindSteps``, defined in its own plan module. The planner runs their ``plan`` in the
registry's order, a saved plan's pins hold their ``pin``, and pull and ``ignore_changes`` read their
``compare`` through ``resource_diff``."""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, PROMPT, RESTRICTION
from reconciler.model import DesiredResource, LiveState
from reconciler.plan import datasets, evaluators, integrations, prompts, restrictions
from reconciler.plan.liveview import ResourceDiff
from reconciler.plan.steps import KindSteps

STEPS: Mapping[str, KindSteps] = {
    INTEGRATION.name: integrations.STEPS, PROMPT.name: prompts.STEPS, DATASET.name: datasets.STEPS,
    EVALUATOR.name: evaluators.STEPS, RESTRICTION.name: restrictions.STEPS,
}


def resource_diff(r: DesiredResource, live: LiveState) -> ResourceDiff:
    """How live differs from the declared resource ``r`` (``plan.liveview``), by its kind's comparison."""
    out = ResourceDiff(r)
    STEPS[r.kind].compare(r, live, out)
    return out
