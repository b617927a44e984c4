"""Guardrails on a plan (README.md, "Guardrails"): ``kind: Policy`` documents whose rules match the
resources a plan touches and, with a CEL condition (cel-python), say ``deny``, ``require_approval``
or ``warn``.

- ``evaluate``: the verdicts on a plan, the approvals an apply needs, what ``watch`` holds back.

The Policy document is read where the tree is: ``reconciler.manifests.policies`` (its model, its
rules compiled and checked against the manifest models at load time, the tree's and ``--policy
PATH``'s) and ``reconciler.manifests.policy_fields`` (the manifest fields a policy may use). The
workflow attaches the verdicts to the plan (``Plan.policy``); the renderers show them
(``reconciler.plan.review``).
"""
