"""Guardrails on a plan (README.md, "Guardrails"): ``kind: Policy`` documents whose rules match the
resources a plan touches and, with a CEL condition (cel-python), say ``deny``, ``require_approval``
or ``warn``.

- ``rules``: the Policy document model, its rules compiled and checked against the manifest
  models at load time (``fields`` names the manifest fields a policy may use);
- ``evaluate``: the verdicts on a plan, the approvals an apply needs, what ``watch`` holds back.

The loader (``reconciler.manifests.loader``) hands the tree's Policy documents and those of
``--policy PATH`` here; the workflow attaches the verdicts to the plan (``Plan.policy``); the
renderers show them (``reconciler.plan.review``).
"""
