"""A saved plan read back (``apply PLANFILE``): untrusted input until checked.

A plan file often crosses a trust boundary: a pull-request job makes it, a job with the production
key applies it on merge. Whoever can edit the artifact in between must not be able to send the key
to another host, call outside the API, or make apply read a file or variable the manifests do not
name. So before any request:

- the file must be JSON with a ``format_version`` this reconciler reads (same major version);
- the file at most ``MAX_PLAN_BYTES``;
- every operation must be well formed: a known action and a write method, an API path under
  ``/v2`` relative to the configured endpoint (no URL, no ``..`` in any spelling, no ``//``;
  ``client.paths``), labelled with the kind and action its method and path do (``label_problem``),
  secrets only as JSON pointers at ``(sensitive)`` placeholders of its body, each ``env:NAME`` or
  ``file:PATH``;
- and (``declared_secrets``, once the manifests are loaded) every secret reference must be one the
  manifests declare at that resource and field. Apply then reads the manifests' own reference.

The rest (the files it was made from, its signature, and each call against the plan made again
from them) is ``reconciler.saved``'s; see docs/security.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from reconciler.client.paths import api_path_problem
from reconciler.errors import PlanError
from reconciler.kinds import DATASET, EVALUATOR, EXPERIMENT, INTEGRATION, PROMPT, RESTRICTION
from reconciler.model import ManifestSet, SecretRef
from reconciler.plan.context import secret_spec
from reconciler.plan.model import ACTIONS, FORMAT_VERSION, REF_RE, SENSITIVE, WRITE_METHODS, Operation, Plan

SUPPORTED_MAJOR = int(FORMAT_VERSION.split(".")[0])
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?\Z")  # semantic versioning (MAJOR.MINOR[.PATCH])
_POINTER = re.compile(r"(/[^/]+)+\Z")
_SPEC = re.compile(r"(env:[A-Za-z_][A-Za-z0-9_]*|file:.+)\Z", re.DOTALL)
_STRING_FIELDS = ("id", "action", "kind", "name", "method", "path")
#: The largest plan file read (a plan holds its examples: 20,000 of 10 KiB fit many times over).
MAX_PLAN_BYTES = 256 * 1024 * 1024


def read_plan_bytes(path: str) -> bytes:
    """The plan file's bytes, at most ``MAX_PLAN_BYTES`` (a larger file is refused unread)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise PlanError(f"{path}: cannot read the plan file ({exc.strerror or exc})") from None
    if len(data) > MAX_PLAN_BYTES:
        raise PlanError(f"{path}: refused: the plan file is over the {MAX_PLAN_BYTES:,}-byte limit of a plan file")
    return data


def read_plan_file(path: str, raw: bytes | None = None) -> Plan:
    """The plan in ``path`` (its bytes ``raw`` when already read), or a ``PlanError`` saying what is
    wrong with the file."""
    try:
        text = (read_plan_bytes(path) if raw is None else raw).decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError(f"{path}: not a plan file (not UTF-8 text)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        ends = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")  # runs to the end
        cut = " (the file ends early: truncated?)" if ends else ""
        raise PlanError(f"{path}:{exc.lineno}:{exc.colno}: not a valid plan file: invalid JSON ({exc.msg}){cut}; "
                        "make the plan again") from None
    except RecursionError:
        raise PlanError(f"{path}: not a valid plan file: JSON nested too deeply") from None
    except ValueError as exc:  # an integer of more digits than int() converts (sys.get_int_max_str_digits)
        raise PlanError(f"{path}: not a valid plan file: {str(exc).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise PlanError(f"{path}: not a plan file: expected a JSON object with format_version and operations")
    _check_version(path, data.get("format_version"))
    problems = structure_problems(data)
    if problems:
        raise _refused(path, problems)
    try:
        plan = Plan.from_json(data)
    except ValidationError as exc:
        raise _refused(path, [f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors()]) from None
    except TypeError as exc:  # a read scope's pair that is not a pair
        raise PlanError(f"{path}: not a valid plan file ({type(exc).__name__}: {exc})") from None
    problems = operation_problems(plan)
    if problems:
        raise _refused(path, problems)
    return plan


def _refused(path: str, problems: list[str]) -> PlanError:
    shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
    return PlanError(f"{path}: refused before any request: not a plan file as reconciler makes it (was it edited?):\n"
                     + "\n".join(f"  {p}" for p in shown))


def _where(loc: tuple[int | str, ...]) -> str:
    """A pydantic error's location as the problems above name one: ``operations[0].changes``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")


def _check_version(path: str, version: Any) -> None:
    m = _VERSION.match(version) if isinstance(version, str) else None
    if m is None:
        raise PlanError(f"{path}: not a plan file: format_version {json.dumps(version)[:40]} is not a version (MAJOR.MINOR.PATCH)")
    if int(m.group(1)) != SUPPORTED_MAJOR:
        newer = int(m.group(1)) > SUPPORTED_MAJOR
        raise PlanError(f"{path}: the plan file's format_version {version} is "
                        + ("newer than" if newer else "older than") + f" this reconciler reads ({SUPPORTED_MAJOR}.x): "
                        + ("apply it with the reconciler that made it, or " if newer else "") + "make the plan again")


def _is_list_of(value: Any, kind: type) -> bool:
    return isinstance(value, list) and all(isinstance(v, kind) for v in value)


def structure_problems(data: Mapping[str, Any]) -> list[str]:
    """The JSON shapes ``Plan.from_json`` relies on (so a malformed file is an error, never a traceback)."""
    problems: list[str] = []
    for key, kind in (("operations", list), ("options", dict), ("scope", dict), ("fingerprints", dict),
                      ("pins", dict), ("sources", dict), ("manifests", list), ("unmanaged", list), ("unverified_secrets", list),
                      ("warnings", list)):
        if key in data and not isinstance(data[key], kind):
            problems.append(f"{key}: expected a JSON {'array' if kind is list else 'object'}")
    if problems:
        return problems
    for key in ("manifests", "unverified_secrets", "warnings"):
        if not _is_list_of(data.get(key, []), str):
            problems.append(f"{key}: expected an array of strings")
    if "workdir" in data and not isinstance(data["workdir"], str):
        problems.append("workdir: expected a string")
    if not all(isinstance(v, str) for v in data.get("sources", {}).values()):
        problems.append("sources: expected an object of paths to digests")
    for i, u in enumerate(data.get("unmanaged", [])):
        if not (isinstance(u, dict) and all(isinstance(u.get(k), str) for k in ("address", "kind", "name", "path"))):
            problems.append(f"unmanaged[{i}]: expected an object with address, kind, name and path")
    if not all(_is_list_of(v, str) and len(v) == 3 for v in data.get("pins", {}).values()):
        problems.append("pins: expected arrays of three strings (KIND and the object's key)")
    options = data.get("options", {})
    for key in ("targets", "rotate", "resend", "variables", "var_files"):
        if not _is_list_of(options.get(key, []), str):
            problems.append(f"options.{key}: expected an array of strings")
    for i, op in enumerate(data.get("operations", [])):
        where = f"operations[{i}]"
        if not isinstance(op, dict):
            problems.append(f"{where}: expected an object")
            continue
        for key in _STRING_FIELDS:
            if not isinstance(op.get(key), str):
                problems.append(f"{where}.{key}: expected a string")
        if not isinstance(op.get("address", ""), str) or not isinstance(op.get("space", ""), str | None):
            problems.append(f"{where}: address and space must be strings")
        if not _is_list_of(op.get("depends_on", []), str):
            problems.append(f"{where}.depends_on: expected an array of operation ids")
        changes = op.get("changes", [])
        if not (isinstance(changes, list) and all(isinstance(c, dict) and isinstance(c.get("path"), str)
                                                  for c in changes)):
            problems.append(f"{where}.changes: expected an array of objects with a path")
        secrets = op.get("secrets", {})
        if not (isinstance(secrets, dict) and all(isinstance(v, str) for v in secrets.values())):
            problems.append(f"{where}.secrets: expected an object of JSON pointers to references")
    return problems


def _at_pointer(body: Any, pointer: str) -> tuple[bool, Any]:
    for raw in pointer.lstrip("/").split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(body, dict) and part in body:
            body = body[part]
        elif isinstance(body, list) and part.isdigit() and int(part) < len(body):
            body = body[int(part)]
        else:
            return False, None
    return True, body


#: What each call a reconciler plans does, by method and path (``ID`` one path segment): the kinds
#: and actions an operation with that method and path may be labelled with. An operation whose
#: label disagrees (a ``DELETE /v2/integrations/ID`` labelled a prompt update) is refused: the
#: label is what ``protect``, the integration guard, the policies and the printed plan go by.
_I, _P, _D, _E, _R = INTEGRATION, PROMPT, DATASET, EVALUATOR, RESTRICTION
_CALLS: tuple[tuple[str, str, frozenset[str], frozenset[str]], ...] = tuple(
    (method, path, frozenset(kinds), frozenset(actions.split())) for method, path, kinds, actions in (
        ("POST", _I.collection, [_I.name], "create replace"),
        ("PATCH", f"{_I.collection}/ID", [_I.name], "update"),
        ("DELETE", f"{_I.collection}/ID", [_I.name], "delete replace"),
        ("POST", _P.collection, [_P.name], "create"),
        ("PATCH", f"{_P.collection}/ID", [_P.name], "update"),
        ("DELETE", f"{_P.collection}/ID", [_P.name], "delete"),
        ("POST", f"{_P.collection}/ID/versions", [_P.name], "update"),
        ("PUT", "/v2/prompt-versions/ID/labels", [_P.name], "create update"),
        ("POST", _R.collection, [_P.name, _R.name], "create update"),  # a Prompt's `restricted` too
        ("DELETE", f"{_R.collection}/ID", [_P.name, _R.name], "update delete"),
        ("POST", _D.collection, [_D.name], "create"),
        ("PATCH", f"{_D.collection}/ID", [_D.name], "update"),
        ("DELETE", f"{_D.collection}/ID", [_D.name], "delete"),
        ("POST", f"{_D.collection}/ID/examples", [_D.name], "update"),
        ("PATCH", f"{_D.collection}/ID/examples", [_D.name], "update"),
        ("DELETE", f"{_D.collection}/ID/examples", [_D.name], "update"),
        ("DELETE", "/v2/experiments/ID", [EXPERIMENT], "delete"),  # a dataset's retention
        ("POST", _E.collection, [_E.name], "create"),
        ("PATCH", f"{_E.collection}/ID", [_E.name], "update"),
        ("DELETE", f"{_E.collection}/ID", [_E.name], "delete"),
        ("POST", f"{_E.collection}/ID/versions", [_E.name], "update"),
    ))


def call_of(method: str, path: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The kinds and actions the call ``method path`` may be labelled with (None: no call a
    reconciler plans). A ``${OP:path}`` reference stands for one segment."""
    shape = "/".join("ID" if i == 3 else part for i, part in enumerate(REF_RE.sub("ref", path).split("/")))
    return next(((kinds, actions) for m, p, kinds, actions in _CALLS if m == method and p == shape), None)


def _a(kind: str) -> str:
    return ("an " if kind[0] in "AEIOU" else "a ") + kind


def label_problem(op: Operation) -> str | None:
    """Why the operation's ``kind``, ``action`` and ``address`` are not what its method and path do."""
    call = call_of(op.method, op.path)
    if call is None:
        return f"{op.method} {op.path} is no call a reconciler plans"
    kinds, actions = call
    owner = op.address.partition("/")[0]  # an experiment is its dataset's
    if op.kind not in kinds or op.action not in actions or owner != (DATASET.name if op.kind == EXPERIMENT else op.kind):
        return (f"labelled {op.action} {op.kind} ({op.address}), but {op.method} {op.path} is "
                f"the {' or '.join(sorted(actions))} of {' or '.join(_a(k) for k in sorted(kinds))}")
    return None


def operation_problems(plan: Plan) -> list[str]:
    """Operations a reconciler never plans: another method, a path off the API, a secret that is
    not at a placeholder of the body or not a reference."""
    problems: list[str] = []
    ids = [op.id for op in plan]
    if len(set(ids)) != len(ids):
        problems.append("two operations have the same id")
    known = set(ids)
    for op in plan:
        where = f"operation {op.id!r}"
        if op.action not in ACTIONS:
            problems.append(f"{where}: unknown action {op.action!r}")
        if op.method not in WRITE_METHODS:
            problems.append(f"{where}: method {op.method!r} is not one apply sends ({', '.join(sorted(WRITE_METHODS))})")
        path_problem = api_path_problem(REF_RE.sub("ref", op.path), query=False)
        if path_problem is not None:
            problems.append(f"{where}: path {op.path!r} {path_problem}")
        elif op.action in ACTIONS and op.method in WRITE_METHODS and (label := label_problem(op)) is not None:
            problems.append(f"{where}: {label}")
        unknown = [d for d in op.depends_on if d not in known]
        if unknown:
            problems.append(f"{where}: depends on unknown operations {', '.join(map(repr, unknown))}")
        for pointer, spec in sorted(op.secrets.items()):
            if not _POINTER.match(pointer) or _at_pointer(op.body, pointer) != (True, SENSITIVE):
                problems.append(f"{where}: secret at {pointer!r} is not a (sensitive) placeholder of its body")
            if not _SPEC.match(spec):
                problems.append(f"{where}: secret at {pointer!r}: {spec!r} is not env:NAME or file:PATH")
    return problems


def _declared(manifests: ManifestSet, address: str, pointer: str) -> SecretRef | None:
    resource = next((r for r in manifests if r.address == address), None)
    if resource is None:
        return None
    found, value = _at_pointer(resource.spec, pointer)
    return value if found and isinstance(value, SecretRef) else None


def declared_secrets(plan: Plan, manifests: ManifestSet | None, path: str) -> Plan:
    """The plan with each secret reference replaced by the one the manifests declare at the same
    resource and field; a reference they do not declare (another variable, another file, a field
    that holds no secret) refuses the plan. Without the manifests, a plan that sends a secret is
    refused: nothing else can vouch for its references."""
    sent = [(op, pointer, spec) for op in plan for pointer, spec in sorted(op.secrets.items())]
    if not sent:
        return plan
    if manifests is None:
        raise PlanError(f"{path}: refused before any request: the plan sends secrets "
                        f"({', '.join(sorted({spec for _, _, spec in sent}))}) and its manifests ("
                        + ", ".join(plan.manifests) + ") are not found here: a plan file's secret references are "
                        "used only when the manifests declare them. Run apply where the manifests are (the "
                        "repository's checkout), or plan and apply from the manifests.")
    problems = []
    fixed: dict[str, dict[str, str]] = {}
    for op, pointer, spec in sent:
        declared = _declared(manifests, op.address, pointer)
        source = spec.partition(":")[0]
        if declared is None or declared.source != source or (source == "env" and secret_spec(declared) != spec):
            problems.append(f"{op.address}: {pointer.lstrip('/').replace('/', '.')}: {spec} is not declared there "
                            "by the manifests")
        else:
            fixed.setdefault(op.id, {})[pointer] = secret_spec(declared)
    if problems:
        raise PlanError(f"{path}: refused before any request: secret references the manifests do not declare "
                        "(the plan file was edited, or the manifests changed since: make the plan again):\n"
                        + "\n".join(f"  {p}" for p in problems))
    ops = tuple(replace(op, secrets=fixed[op.id]) if op.id in fixed else op for op in plan)
    return replace(plan, operations=ops)
