"""A saved plan depends on the id and the managed fields of each live object: fields the service adds
or bumps on its own never make it stale; a managed change or a re-created object does."""

from __future__ import annotations

from reconciler.plan.pins import pin_fingerprint
from tests.plan.helpers import live_llm, state

KEY = ["Integration", "LLM", "a"]


def fingerprint_of(**changes: object) -> str:
    obj = live_llm("a", id="I1", is_function_calling_enabled=True, has_api_key=True)
    for k, v in changes.items():
        if k == "config":
            obj["config"].update(v)  # type: ignore[call-overload]
        else:
            obj[k] = v
    return pin_fingerprint(KEY, state(obj))


def test_unknown_and_server_set_fields_do_not_move_a_pin() -> None:
    assert fingerprint_of(usage_count=41, updated_at="2026-12-01T00:00:00Z") == fingerprint_of()


def test_a_managed_change_or_a_new_id_moves_a_pin() -> None:
    assert fingerprint_of(config={"is_function_calling_enabled": False}) != fingerprint_of()
    assert fingerprint_of(id="I2") != fingerprint_of()
    assert pin_fingerprint(KEY, state()) != fingerprint_of()  # deleted
