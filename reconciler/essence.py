"""What of a live object a comparison looks at: the fields a manifest can manage (``essence``), and
a dataset example's own fields (``user_fields``, ``same_example``). The reader (``client.live``),
the planner, pull's live view, the pins of a saved plan and the convergence check compare by these
rules, so they sit below all of them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from reconciler.kinds import KIND_SPECS
from reconciler.model import LiveIntegration
from reconciler.providers import AGENT_FIELDS, AUTH_MODES, PROVIDERS

#: What the service adds to each example: the user's fields are all the others.
SERVER_FIELDS = frozenset({"id", "created_at", "updated_at"})


def user_fields(example: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in example.items() if k not in SERVER_FIELDS}


def same_example(live: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """Whether the live example's user fields (all but ``SERVER_FIELDS``) equal ``want``, without
    building a dict: run for every example of a dataset."""
    return (len(live) - ("id" in live) - ("created_at" in live) - ("updated_at" in live) == len(want)
            and want.items() <= live.items())


_PROMPT_VERSION_FIELDS = ("provider", "model", "messages", "input_variable_format", "invocation_params",
                          "provider_params")
_TEMPLATE_CONFIG_FIELDS = ("name", "template", "include_explanations", "use_function_calling_if_available",
                           "classification_choices", "direction", "data_granularity", "llm_config")
_LLM_CONFIG_FIELDS = ("ai_integration_id", "model_name", "invocation_parameters", "provider_parameters")

def essence(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a live object a manifest can manage, in the API's read names; server-set and
    unknown fields are dropped (a field the service adds later never shows up as drift). A field
    absent live stays absent (never invented). Per kind:

    - Integration: name, type, description (AGENT only), scopings (each ``{organization_id,
      space_id}``, sorted: they are a set), config (LLM: ``provider`` plus the read names of the
      provider's fields from ``providers.PROVIDERS``, CLOUD_D ``auth`` reduced to its mode's fields;
      an unknown provider's config is kept whole; AGENT: endpoint, has_headers, input_schema,
      request_presets as Preset essences).
    - Preset: name, description, config.
    - Prompt: name, description. PromptVersion: provider, model, messages, input_variable_format,
      invocation_params, provider_params (commit_message and labels are not compared here).
    - Dataset: name. DatasetExample: the user's fields (all but id, created_at, updated_at).
    - Evaluator: name, description. EvaluatorVersion: template_config (its known fields, and
      llm_config's known fields).
    - ResourceRestriction: resource_type, resource_id.
    """
    found = _ESSENCES.get(kind)
    if found is None:
        raise ValueError(f"essence: unknown kind {kind!r} (one of {', '.join(ESSENCE_KINDS)})")
    return found(obj)


def _evaluator_version(obj: Mapping[str, Any]) -> dict[str, Any]:
    config = obj.get("template_config")
    return {"template_config": _template_config(config)} if isinstance(config, Mapping) else {}


def _pick(obj: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {n: obj[n] for n in names if n in obj}


def _integration(obj: Mapping[str, Any]) -> dict[str, Any]:
    return _integration_rest(_pick(obj, ("name", "type")), obj.get("type"), "description" in obj,
                             obj.get("description"), obj.get("scopings"), obj.get("config"))


def integration_essence(obj: LiveIntegration) -> dict[str, Any]:
    """``essence("Integration", ...)`` of a typed integration, from its attributes (a plan pins
    every integration: no copy of the object is made for it)."""
    return _integration_rest({"name": obj.name, "type": obj.type}, obj.type, "description" in obj.model_fields_set,
                             obj.description, obj.scopings, obj.config)


def _integration_rest(out: dict[str, Any], itype: Any, has_description: bool, description: Any, scopings: Any,
                      config: Any) -> dict[str, Any]:
    if itype == "AGENT" and has_description:
        out["description"] = description
    if isinstance(scopings, list):
        pairs = [{"organization_id": s.get("organization_id"), "space_id": s.get("space_id")}
                 for s in scopings if isinstance(s, Mapping)]
        out["scopings"] = sorted(pairs, key=lambda s: (s["organization_id"] or "", s["space_id"] or ""))
    if isinstance(config, Mapping):
        out["config"] = _agent_config(config) if itype == "AGENT" else _llm_config(config)
    return out


def _llm_config(config: Mapping[str, Any]) -> dict[str, Any]:
    provider = PROVIDERS.get(str(config.get("provider")))
    if provider is None:
        return dict(config)
    out = _pick(config, ["provider", *(f.read_name for f in provider.fields.values())])
    auth = out.get("auth")
    if isinstance(auth, Mapping):
        mode = AUTH_MODES.get(str(auth.get("auth_type")))
        out["auth"] = dict(auth) if mode is None else _pick(
            auth, ["auth_type", *(f.read_name for f in mode.fields.values())])
    return out


def _agent_config(config: Mapping[str, Any]) -> dict[str, Any]:
    out = _pick(config, [f.read_name for f in AGENT_FIELDS.values()])
    presets = out.get("request_presets")
    if isinstance(presets, list):
        out["request_presets"] = [essence("Preset", p) for p in presets if isinstance(p, Mapping)]
    return out


def _template_config(config: Mapping[str, Any]) -> dict[str, Any]:
    out = _pick(config, _TEMPLATE_CONFIG_FIELDS)
    if isinstance(out.get("llm_config"), Mapping):
        out["llm_config"] = _pick(out["llm_config"], _LLM_CONFIG_FIELDS)
    return out


#: The essence of each registered kind (``reconciler.kinds``: its ``compared`` fields, or a function of
#: its own) and of the parts compared apart.
_ESSENCES: Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    **{spec.name: partial(_pick, names=spec.compared) for spec in KIND_SPECS.values() if spec.compared},
    "Integration": _integration,
    "Preset": lambda obj: _pick(obj, ("name", "description", "config")),
    "PromptVersion": lambda obj: _pick(obj, _PROMPT_VERSION_FIELDS),
    "DatasetExample": user_fields,
    "EvaluatorVersion": _evaluator_version,
}
ESSENCE_KINDS = tuple(_ESSENCES)
