"""The planner: desired (manifests) + live (API) -> a Plan value. ``make_plan`` is the entry point."""

from reconciler.plan.model import Change, Operation, Plan, PlanOptions

__all__ = ["Change", "Operation", "Plan", "PlanOptions"]
