"""What the plan layer does for one resource kind (``KindSteps``). Each kind's plan module defines
its ``STEPS`` beside its planner; ``plan.registry`` keys them by the kind's name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.model import DesiredResource, LiveState
from reconciler.plan.context import KindPlan, PlanInput
from reconciler.plan.liveview import ResourceDiff


@dataclass(frozen=True)
class KindSteps:
    """plan: the kind's planner, given its declared resources (in manifest order) and the frozen
    input. pin: what a saved plan holds of one live object of the kind (its id and the fields a
    manifest manages: ``plan.pins``), so the plan is refused when they moved. compare: how live
    differs from one declared resource, as ``plan`` compares them, written into ``out``
    (``plan.liveview``: pull and ``ignore_changes`` read it); a spaced kind finds its live object
    with ``liveview.found_in_space``."""

    plan: Callable[[list[DesiredResource], PlanInput], KindPlan]
    pin: Callable[[Any, LiveState], list[Any]]
    compare: Callable[[DesiredResource, LiveState, ResourceDiff], None]
