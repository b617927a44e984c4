"""From a parsed YAML document to a ``DesiredResource``, and the checks that span documents
(identities unique across all files, evaluator references to integrations)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import MISSING, ValidationError

from reconciler.kinds import DATASET, EVALUATOR, INTEGRATION, KIND_SPECS, OWNERSHIP, RESTRICTION
from reconciler.manifests.examples import dataset_examples
from reconciler.manifests.fields import a_kind_of
from reconciler.manifests.messages import Ctx, report
from reconciler.manifests.models import DOCUMENT, DOCUMENT_KINDS, ManifestDocument, spec_of
from reconciler.manifests.yamlload import Mark, Problem, YamlDocument
from reconciler.model import SPACED_KINDS, DesiredResource, ManifestSet, Ownership, Source

_HEAD = ("kind", "name", "space")
_LIFECYCLE = ("aliases", "protect", "ignore_changes")  # kept as DesiredResource fields, never sent
_INTEGRATION_REF = str(EVALUATOR.refers)


class _Sources(Mapping[str, Source]):
    """``DesiredResource.sources`` built on demand from the parser's marks: a Source object per value
    of a 5,000-resource tree would cost more than the parsing itself."""

    __slots__ = ("_file", "_marks", "_extra", "_examples")

    def __init__(self, file: str, marks: Mapping[str, Mark], extra: Mapping[str, Source],
                 examples: tuple[str, list[int]] | None = None) -> None:
        self._file = file
        self._marks = marks
        self._extra = extra
        self._examples = examples  # (examples file, line of each example)

    def _example(self, path: object) -> Source | None:
        if self._examples is None or not isinstance(path, str) or not path.startswith("examples."):
            return None
        index = path[len("examples."):]
        lines = self._examples[1]
        if not index.isdigit() or int(index) >= len(lines):
            return None
        return Source(self._examples[0], lines[int(index)], 1)

    def __getitem__(self, path: str) -> Source:
        extra = self._extra.get(path) or self._example(path)
        if extra is not None:
            return extra
        m = self._marks[path]
        return Source(self._file, m[0], m[1])

    def __contains__(self, path: object) -> bool:
        return path in self._extra or path in self._marks or self._example(path) is not None

    def __iter__(self) -> Iterator[str]:
        yield from self._marks
        yield from (k for k in self._extra if k not in self._marks)
        if self._examples is not None:
            yield from (f"examples.{n}" for n in range(len(self._examples[1])))

    def __len__(self) -> int:
        examples = len(self._examples[1]) if self._examples is not None else 0
        return len(self._marks) + sum(1 for k in self._extra if k not in self._marks) + examples

    def __repr__(self) -> str:
        return f"<sources of {self._file}: {len(self)} paths>"


LABEL_PART_MAX = 60


def _short(text: str) -> str:
    """A name as problem lines show it: a huge value is cut, with its length, never echoed whole."""
    return text if len(text) <= LABEL_PART_MAX else f"{text[:LABEL_PART_MAX]}...({len(text):,} characters)"


def document_label(value: Mapping[str, Any]) -> str | None:
    kind, name, space = (value.get(k) for k in _HEAD)
    if kind not in DOCUMENT_KINDS or not isinstance(name, str):  # an unknown kind may be anything: never shown
        return None
    if kind in SPACED_KINDS and isinstance(space, str):
        return f"{_short(kind)}/{_short(space)}/{_short(name)}"
    return f"{_short(kind)}/{_short(name)}"


def validate_document(doc: YamlDocument, problems: list[Problem], base_dir: str,
                      roots: tuple[str, ...] | None = None) -> DesiredResource | None:
    """Check one document; problems are appended. The resource is returned whenever its kind and name
    are usable (even with other problems), so cross-document checks still see it."""
    value = doc.value
    if not isinstance(value, dict):
        problems.append(Problem(doc.file, doc.line, doc.column, doc.label(),
                                f"a manifest document must be a mapping with kind and name, got {a_kind_of(value)}"))
        return None
    ctx = Ctx(doc.file, doc.marks, problems, base_dir, lambda: document_label(value) or doc.label(), doc.refused,
              roots)
    ctx.extra_sources.update(doc.extra_sources)
    model: Any = None
    try:
        model = DOCUMENT.validate_python(value, context={"resolve_path": ctx.resolve_path,
                                                              "outside_tree": ctx.outside_tree})
    except ValidationError as exc:
        report(exc, ManifestDocument, ctx)
    if model is not None:
        kind, name, space = model.kind, model.name, getattr(model, "space", None)
    else:
        kind, name, space = value.get("kind"), value.get("name"), value.get("space")
        if kind not in DOCUMENT_KINDS or not isinstance(name, str):
            return None
    # the spec the planner reads: only what was written (MISSING fields are not dumped), secrets as
    # SecretRef; after a problem, the document as written (only cross-document checks look at it)
    spec = spec_of(model) if model is not None else dict(value)
    for k in (*_HEAD, *(_LIFECYCLE if kind in KIND_SPECS else ())):  # an Ownership's protect is its globs
        spec.pop(k, None)
    if kind == DATASET.name:
        dataset_examples(spec, (), ctx)
        if model is not None:
            model = model.model_copy(update={"examples": spec["examples"], "examples_file": MISSING}) \
                if "examples" in spec else model
    # after a problem, only the checks across documents read the resource (kind, name, space, aliases):
    # its protect and ignore_changes are the model's alone
    aliases = value.get("aliases") if model is None else getattr(model, "aliases", MISSING)
    ignored = getattr(model, "ignore_changes", MISSING)
    return DesiredResource(
        kind=kind,
        name=name,
        space=space if isinstance(space, str) else None,
        spec=spec,
        sources=_Sources(doc.file, doc.marks, ctx.extra_sources, ctx.example_lines),
        aliases=tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list) else (),
        protect=getattr(model, "protect", MISSING) is True,
        doc=model,
        ignore_changes=tuple(p for p in ignored if isinstance(p, str)) if isinstance(ignored, list)
        and kind in KIND_SPECS else (),
    )


def _where(r: DesiredResource, path: str = "") -> Source:
    return r.source(path) or Source("?", 1, 1)


def cross_document_problems(resources: list[DesiredResource]) -> list[Problem]:
    """Identities unique across all files (one problem naming both places); evaluator references
    to an integration declared as AGENT."""
    problems: list[Problem] = []
    first: dict[tuple[str, ...], DesiredResource] = {}
    for r in resources:
        other = first.setdefault(r.identity, r)
        if other is not r:
            here, there = _where(r), _where(other)
            problems.append(Problem(here.file, here.line, here.column, r.address,
                                    f"identity ({', '.join(r.identity[1:])}) is declared twice: "
                                    f"here and at {there.file}:{there.line}:{there.column}"))
    by_name: dict[str, DesiredResource] = {}
    for r in INTEGRATION.among(resources):
        other = by_name.setdefault(r.name, r)
        if other is not r and other.spec.get("type") != r.spec.get("type"):
            here, there = _where(r), _where(other)
            problems.append(Problem(here.file, here.line, here.column, r.address,
                                    f"an integration named '{r.name}' is also declared as {other.spec.get('type')} at "
                                    f"{there.file}:{there.line}:{there.column}; the API allows one name per type, "
                                    "but plans address integrations by name: rename one"))
    problems.extend(_alias_problems(resources))
    integrations = {(r.spec.get("type"), r.name) for r in INTEGRATION.among(resources)}
    for r in resources:
        name = r.integration_ref
        if name is not None and ("LLM", name) not in integrations and ("AGENT", name) in integrations:
            at = _where(r, _INTEGRATION_REF)
            problems.append(Problem(at.file, at.line, at.column, _INTEGRATION_REF,
                                    f"'{name}' is an AGENT integration; an evaluator needs an LLM integration"))
    return problems


def _alias_problems(resources: list[DesiredResource]) -> list[Problem]:
    """An alias may not be a name declared in the same namespace (that resource exists), nor
    claimed by two documents (which one would the live resource become?)."""
    problems: list[Problem] = []
    declared = {r.identity: r for r in resources}
    claimed: dict[tuple[str, ...], tuple[DesiredResource, int]] = {}
    for r in resources:
        for i, alias in enumerate(r.aliases):
            key = (*r.identity[:-1], alias)
            at = _where(r, f"aliases.{i}")
            if key in declared:
                there = _where(declared[key])
                problems.append(Problem(at.file, at.line, at.column, f"aliases[{i}]",
                                        f"'{alias}' is declared as a resource of its own ({there.file}:{there.line}); "
                                        "an alias names a former name, one no document declares"))
            other, j = claimed.setdefault(key, (r, i))
            if other is not r:
                there = _where(other, f"aliases.{j}")
                problems.append(Problem(at.file, at.line, at.column, f"aliases[{i}]",
                                        f"'{alias}' is an alias of {other.address} too (its aliases[{j}] at "
                                        f"{there.file}:{there.line}); a former name can become one resource only"))
    return problems


def ownership_of(resources: list[DesiredResource], problems: list[Problem]) -> Ownership | None:
    """The tree's Ownership document (at most one; a second is a problem naming the first), and
    a problem for every declared resource outside it: a tree owns what it declares."""
    documents = [r for r in resources if r.kind == OWNERSHIP]
    for extra in documents[1:]:
        here, there = _where(extra), _where(documents[0])
        problems.append(Problem(here.file, here.line, here.column, extra.address,
                                f"a second Ownership document (the first is at {there.file}:{there.line}:"
                                f"{there.column}); a tree declares what it owns once"))
    if not documents:
        return None
    doc = documents[0]

    def strings(key: str) -> tuple[str, ...]:
        value = doc.spec.get(key)
        return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()

    owner = Ownership(name=doc.name, spaces=strings("spaces"), integrations=strings("integrations"),
                      resource_restrictions=strings("resource_restrictions"), protect=strings("protect"),
                      sources=doc.sources, ignore_changes=_ignore_rules(doc.spec.get("ignore_changes")))
    at = _where(doc)
    for r in resources:
        why = _outside(owner, r)
        if why is not None:
            here = _where(r)
            problems.append(Problem(here.file, here.line, here.column, r.address,
                                    f"{why}, outside the ownership '{owner.name}' ({at.file}:{at.line}); "
                                    "a tree owns what it declares: add it to the Ownership document"))
        for i, alias in enumerate(r.aliases):  # an alias is a declared name: a rename may not cross the ownership
            if r.kind == INTEGRATION.name and not owner.owns_integration(alias):
                here = _where(r, f"aliases.{i}")
                problems.append(Problem(here.file, here.line, here.column, f"aliases[{i}]",
                                        f"alias '{alias}' matches no glob of 'integrations', outside the ownership "
                                        f"'{owner.name}' ({at.file}:{at.line}); renaming it would take over "
                                        "another tree's integration: add it to the Ownership document or "
                                        "remove the alias"))
    return owner


def _ignore_rules(value: Any) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    if not isinstance(value, list):
        return ()
    return tuple((tuple(x for x in rule.get("match") or () if isinstance(x, str)),
                  tuple(x for x in rule.get("fields") or () if isinstance(x, str)))
                 for rule in value if isinstance(rule, dict))


def _outside(owner: Ownership, r: DesiredResource) -> str | None:
    if r.kind == INTEGRATION.name and not owner.owns_integration(r.name):
        return f"integration '{r.name}' matches no glob of 'integrations'"
    if r.kind == RESTRICTION.name:
        rtype, rid = str(r.spec.get("resource_type")), str(r.spec.get("resource_id"))
        if not owner.owns_restriction(rtype, rid):
            return f"restriction {rtype}/{rid} matches no glob of 'resource_restrictions'"
    if r.kind in SPACED_KINDS and r.space not in owner.spaces:
        return (f"space '{r.space}' is not one of the owned 'spaces' (write a space the same way, by name or by id, "
                "in both places)")
    return None


def live_lookups(ms: ManifestSet) -> list[tuple[DesiredResource, str]]:
    """Evaluators whose ``llm_config.integration`` names an LLM integration that the manifests do not
    declare: the planner looks the name up in live state (an unknown name fails at plan time)."""
    declared = {r.name for r in ms.of_kind("Integration") if r.spec.get("type") == "LLM"}
    return [(r, name) for r in ms.resources if (name := r.integration_ref) is not None and name not in declared]
