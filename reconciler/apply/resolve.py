"""Turning a planned operation into the exact request: references to earlier responses, the apply's
timestamp, and secrets read again from their references (never from the plan)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from reconciler.errors import ApplyError
from reconciler.plan.context import parse_secret_spec
from reconciler.plan.model import APPLY_TIME, REF_RE, Operation


def lookup(value: Any, dotted: str) -> Any:
    for part in dotted.split(".") if dotted else []:
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


def substitute(value: Any, responses: Mapping[str, Any], apply_time: str) -> Any:
    """``value`` with every reference replaced: ``${OP_ID:PATH}`` by that field of the answer of
    ``OP_ID``, one of ``responses`` (the operation's own prerequisites: text of that shape naming
    any other operation, a manifest's or a live value's, is sent as it is), and a value that is
    ``${apply_time}`` whole by the apply's time. Copy on write: a container holding no reference is
    returned as it is (a dataset's million examples are not copied to be sent), one that holds one
    is copied; the planned body itself is never changed."""
    if isinstance(value, str):
        if value == APPLY_TIME:
            return apply_time
        return _substitute_text(value, responses) if "${" in value else value
    if isinstance(value, dict | list):
        return _substitute_in(value, responses, apply_time)
    return value


def _substitute_text(value: str, responses: Mapping[str, Any], *, segment: bool = False) -> str:
    """``value`` with its references to ``responses`` replaced; with ``segment`` (a path) each value
    is escaped as one path segment: an id the API returned never adds a ``/`` or a ``..`` to a path."""

    def one(m: Any) -> str:
        op_id, path = m.group(1), m.group(2)
        if op_id not in responses:  # not this call's prerequisite: text, not a reference
            return str(m.group(0))
        found = lookup(responses[op_id], path or "")
        if found is None:
            raise ApplyError(f"reference {m.group(0)}: the response of {op_id} has no {path}")
        return quote(str(found), safe="") if segment else str(found)

    return REF_RE.sub(one, value)


def _substitute_in(container: dict[Any, Any] | list[Any], responses: Mapping[str, Any], apply_time: str) -> Any:
    if not _holds_ref(container):  # the common case, checked without copying or a call per leaf
        return container
    items = container.items() if isinstance(container, dict) else enumerate(container)
    changed: Any = None
    for k, v in items:
        new = substitute(v, responses, apply_time)
        if new is not v:
            if changed is None:
                changed = dict(container) if isinstance(container, dict) else list(container)
            changed[k] = new
    return container if changed is None else changed


def _holds_ref(container: dict[Any, Any] | list[Any]) -> bool:
    """Whether a string under ``container`` holds ``${``. Run on every body an apply sends (a
    dataset's examples too), so the common leaves are checked in the loop, not by a call each."""
    for v in container.values() if isinstance(container, dict) else container:
        t = type(v)
        if t is str:
            if "${" in v:
                return True
        elif t is dict or t is list:
            if _holds_ref(v):
                return True
        elif isinstance(v, str):
            if "${" in v:
                return True
        elif isinstance(v, dict | list) and _holds_ref(v):
            return True
    return False


def _with_pointer(doc: Any, pointer: str, value: Any) -> Any:
    """A copy of ``doc`` with ``value`` at ``pointer``: the containers on the way are copied, so
    ``doc`` (which may be the planned body) is not changed."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    root = list(doc) if isinstance(doc, list) else dict(doc)
    target = root
    for part in parts[:-1]:
        key: Any = int(part) if isinstance(target, list) else part
        child = target[key]
        child = list(child) if isinstance(child, list) else dict(child)
        target[key] = child
        target = child
    last = parts[-1]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return root


def request_for(op: Operation, responses: Mapping[str, Any], apply_time: str,
                hide: Callable[..., None] | None = None) -> tuple[str, Any]:
    """(path, body) ready to send. Secret values exist only in the returned body, and are handed
    to ``hide`` (the client's redaction) before anything is sent."""
    answers = {d: responses[d] for d in op.depends_on if d in responses}  # what its references may name
    path = _substitute_text(op.path, answers, segment=True) if "${" in op.path else op.path
    body = substitute(op.body, answers, apply_time)
    values = []
    for pointer, spec in sorted(op.secrets.items()):
        value = parse_secret_spec(spec).resolve()
        values.append(value)
        body = _with_pointer(body, pointer, value)
    if hide is not None:
        hide(*values)
    return str(path), body
