"""``reconciler export``: manifests from live state, for adopting existing resources.

Secrets cannot be read back, so each one that exists live is written as an ``{env: NAME}``
reference with a generated name, listed in ``secrets.env.example``. An AGENT's headers show only
that they exist, not their names, so they are left out (unmanaged) with a note in that file: a
made-up header name would replace the real one on the first ``--rotate-secrets``. Planning the exported tree
right after (with those variables set to anything) is empty: write-only secrets that exist live are
not re-sent unless ``--rotate-secrets``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from reconciler import fieldkinds, shown
from reconciler.client.http import ApiClient
from reconciler.client.live import read_live
from reconciler.errors import ConfigError
from reconciler.essence import user_fields
from reconciler.files import inside, safe_component, write_private
from reconciler.kinds import (
    ACCOUNT_WIDE,
    DATASET,
    EVALUATOR,
    INTEGRATION,
    KIND_SPECS,
    PROMPT,
    RESTRICTION,
    SPACED_KINDS,
    KindSpec,
)
from reconciler.model import LiveState, ReadScope
from reconciler.plan.prompts import VERSION_FIELDS
from reconciler.providers import AGENT_FIELDS, PROVIDERS, ConfigField

#: The prefix of every variable export names: never one the reconciler (``RECONCILER_*``), the
#: shell or the loader reads.
ENV_PREFIX = "SECRET_"
_CLEAN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


def _env_part(raw: str) -> str:
    """A name from the API as part of a variable name, one to one: a lower-case name of letters,
    digits and single hyphens upper-cased (``-`` as ``_``); any other name its letters and digits
    and a digest of the whole name, so two names never give one part."""
    if _CLEAN.match(raw):
        return raw.upper().replace("-", "_")
    stem = re.sub(r"[^A-Z0-9]+", "_", raw.upper()).strip("_")[:40]
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12].upper()
    return f"{stem}_{digest}" if stem else f"X{digest}"


def env_name(name: str, *fields: str, header: str | None = None) -> str:
    """The variable export names for the secret at ``fields`` (the provider table's names) of the
    integration ``name``, or at its header ``header``: ``SECRET_NAME__FIELD[__HEADER]``. Parts are
    joined by ``__``, which no part holds: distinct secrets never share a variable, and no live
    name makes one of the reconciler's own (``RECONCILER_API_KEY``) or any other unprefixed one."""
    parts = [_env_part(name), "_".join(f.upper() for f in fields)] + ([_env_part(header)] if header else [])
    return ENV_PREFIX + "__".join(parts)


def _secret(present: bool, name: str, *fields: str, header: str | None = None, env: list[str]) -> Any:
    if not present:
        return None
    var = env_name(name, *fields, header=header)
    env.append(var)
    return {"env": var}


def _headers(names: list[str], name: str, *fields: str, env: list[str]) -> dict[str, Any]:
    return {h: _secret(True, name, *fields, "header", header=h, env=env) for h in names}


@dataclass(frozen=True)
class _Secrets:
    """Export's names for the write-only values of one integration (``fieldkinds.Exporting``): a
    variable per secret and per header, ``prefix`` the field a member is in (the auth)."""

    name: str
    env: list[str]
    notes: list[str] | None
    prefix: tuple[str, ...] = ()

    def secret(self, present: bool, f: fieldkinds.Field) -> Any:
        return _secret(present, self.name, *self.prefix, f.name, env=self.env)

    def headers(self, names: list[str], f: fieldkinds.Field) -> dict[str, Any]:
        return _headers(names, self.name, *(self.prefix or (f.name,)), env=self.env)

    def unreadable(self, f: fieldkinds.Field) -> None:
        if self.notes is not None:  # names invisible: left unmanaged
            self.notes.append(f"# Integration/{shown.env_comment(self.name)} (AGENT) has headers live, but the API "
                              "shows only that they exist, not their names; they are left unmanaged. To manage "
                              "them, add config.headers: {NAME: {env: VAR}}.")

    def inside(self, f: fieldkinds.Field) -> _Secrets:
        return _Secrets(self.name, self.env, self.notes, (*self.prefix, f.name))


def integration_manifest(obj: Mapping[str, Any], env: list[str], notes: list[str] | None = None) -> dict[str, Any]:
    name = str(obj["name"])
    itype = str(obj["type"])
    doc: dict[str, Any] = {"kind": INTEGRATION.name, "name": name, "type": itype}
    if itype == "AGENT" and obj.get("description") is not None:
        doc["description"] = obj["description"]
    doc["scopings"] = [{"organization_id": s.get("organization_id"), "space_id": s.get("space_id")}
                       for s in obj.get("scopings") or []]
    live = obj.get("config") or {}
    config: dict[str, Any] = {}
    if itype == "AGENT":
        fields: Mapping[str, ConfigField] = AGENT_FIELDS
    else:
        provider = PROVIDERS.get(str(live.get("provider")))
        config["provider"] = live.get("provider")
        fields = provider.fields if provider else {}
    secrets = _Secrets(name, env, notes)
    for f in fields.values():
        value = f.behaviour.exported(f, live, secrets)
        if value is not fieldkinds.OMIT:
            config[f.name] = value
    doc["config"] = config
    return doc


class _BlockDumper(yaml.SafeDumper):
    """Multi-line text (a prompt message, a template) as a ``|`` block scalar, as a person writes it."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value.strip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def dump_documents(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=110)


def address_of(doc: Mapping[str, Any]) -> str:
    """``KIND/NAME``, or ``KIND/SPACE/NAME`` for the kinds that live in a space (as ``--target``)."""
    space = doc.get("space")
    return f"{doc['kind']}/{space}/{doc['name']}" if space else f"{doc['kind']}/{doc['name']}"


def check_out_dir(out: Path, force: bool) -> None:
    """Refuse to write into a directory that holds files, unless ``force``: an export over an
    existing tree would mix old and new manifests, and overwrite files of the same name."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(f"--out {out}: the directory is not empty; choose another, or pass --force to write "
                          "into it (files of the same name are replaced)")


def export_manifests(client: ApiClient, spaces: list[str], out: Path,
                     addresses: list[str] | None = None) -> list[str]:
    """Write the manifests (only those of ``addresses``, KIND/NAME or KIND/SPACE/NAME, when given);
    returns one line per file written."""
    wanted = set(addresses or ())
    by_space = bool(spaces) and not wanted  # --space: that space's tree, with its Ownership
    first = client.run(read_live(client, ReadScope()))  # the spaces, by name and id
    unknown = [s for s in spaces if first.space_id(s) is None]
    if unknown:
        raise ConfigError(f"--space: no such space: {', '.join(unknown)}")
    named = sorted({a.split("/")[1] for a in wanted if a.count("/") == 2})  # KIND/SPACE/NAME
    if spaces:
        chosen = spaces
    elif wanted and all(first.space_id(s) is not None for s in named):
        chosen = named  # the spaces the addresses name are enough to read
    else:  # every space (or an address names a space that does not exist: its closest resource is in any)
        chosen = [s.name for s in first.spaces]
    listing = client.run(read_live(client, ReadScope(spaces=frozenset(chosen))))
    names: dict[str, Any] = {  # the spaced kinds' ReadScope fields
        spec.table: frozenset((listing.space_name(sid), n) for sid, n in listing.table(spec.name))
        for spec in KIND_SPECS.values() if spec.spaced}
    live = client.run(read_live(client, ReadScope(spaces=frozenset(chosen), **names)))
    everything = _all_addresses(live, chosen)
    unknown = sorted(a for a in wanted if a not in everything)
    if unknown:
        import difflib


        hints = [f"{u} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(u, everything, n=1))
                 else u for u in unknown]
        raise ConfigError(f"export: no such live resource: {', '.join(hints)}")

    def chosen_doc(doc: Mapping[str, Any]) -> bool:
        return not wanted or address_of(doc) in wanted

    out.mkdir(parents=True, exist_ok=True)
    env: list[str] = []
    written: list[str] = []

    def save(rel: str, text: str) -> Path:
        """Every file goes through here: inside ``out`` whatever the names hold, 0600, atomic."""
        path = out / rel
        if not inside(path, out):  # before a folder is made through a link planted in --out
            raise ConfigError(f"export: {path} would be written outside {out} (through a symbolic link); refused")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, text, what="export:", root=out)
        return path

    def write(rel: str, docs: list[dict[str, Any]]) -> None:
        docs = [d for d in docs if chosen_doc(d)]
        if not docs:
            return
        path = save(rel, dump_documents(docs))
        written.append(f"wrote {path} ({shown.plural(len(docs), 'resource')})")

    notes: list[str] = []
    integrations = []
    used = _used_integrations(live, chosen) if by_space else None
    for _, obj in sorted(live.integrations.items()):
        if used is not None and obj.id not in used:
            continue  # --space: only the integrations its evaluators use, never another team's
        doc_env: list[str] = []
        doc_notes: list[str] = []
        doc = integration_manifest(obj.raw(), doc_env, doc_notes)
        if chosen_doc(doc):  # the secrets and notes of the integrations exported only
            integrations.append(doc)
            env.extend(doc_env)
            notes.extend(doc_notes)
    write("integrations.yaml", integrations)
    if by_space:  # what the exported tree owns: its spaces and the integrations written, by exact name
        write("ownership.yaml", [{"kind": "Ownership", "name": "-".join(chosen), "spaces": list(chosen),
                                  "integrations": sorted({glob.escape(str(d["name"])) for d in integrations})}])
    else:  # restrictions (projects, dashboards) are account-wide: a space's export leaves them to their owner
        for kind, documents in _account_wide().items():  # integrations above: the secrets, the notes, their use
            write(f"{KIND_SPECS[kind].table}.yaml", documents(live))
    space_dirs = Unique({*(f"{KIND_SPECS[k].table}.yaml" for k in ACCOUNT_WIDE), "ownership.yaml",
                         "secrets.env.example"})
    for space in chosen:
        sid = live.space_id(space)
        if sid is None:
            continue
        folder = space_dirs.name(safe_component(space))  # a space's name comes from the API
        for kind, exporter in _by_space().items():  # a file per kind, beside its data files
            files: dict[str, str] = {}
            docs = [d for d in exporter(live, sid, space, chosen_doc, files) if chosen_doc(d)]
            for rel, text in files.items():
                save(f"{folder}/{rel}", text)
            write(f"{folder}/{KIND_SPECS[kind].table}.yaml", docs)
    if env or notes:
        save("secrets.env.example", env_file(env, notes))
        written.append(f"wrote {out / 'secrets.env.example'} ({shown.plural(len(set(env)), 'variable')} to set)")
    return written


_ENV_LINE = re.compile(r"[A-Z][A-Z0-9_]*=\Z")


def env_file(env: list[str], notes: list[str]) -> str:
    """``secrets.env.example``: a comment, one ``NAME=`` line a variable, the notes as comment
    lines. A file people ``source``: every line is checked to be one of those (a name from the
    API reaches it only through ``env_name`` or ``shown.env_comment``)."""
    lines = ["# Secrets cannot be exported; set these before running plan on the exported manifests.",
             *(f"{v}=" for v in sorted(set(env))), *notes]
    bad = [i for i, line in enumerate(lines) if not (_ENV_LINE.match(line) or (line.startswith("# ")
                                                                                 and shown.text(line) == line))]
    if bad:  # never: the names are made above
        raise ConfigError(f"secrets.env.example: line {bad[0] + 1} would not be a variable or a comment; refused")
    return "".join(f"{line}\n" for line in lines)


class Unique:
    """Names that stay distinct once made safe: two spaces (or datasets) whose names differ only in
    the characters ``safe_component`` replaces, or only in case (a case-insensitive file system),
    get ``-2``, ``-3``... rather than one file for both."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken = {t.lower() for t in taken or ()}

    def name(self, stem: str, suffix: str = "") -> str:
        candidate, n = stem + suffix, 1
        while candidate.lower() in self.taken:
            n += 1
            candidate = f"{stem}-{n}{suffix}"
        self.taken.add(candidate.lower())
        return candidate


def _used_integrations(live: LiveState, spaces: list[str]) -> set[str]:
    """Ids of the integrations the evaluators of ``spaces`` use (their latest version's)."""
    ids = {sid for s in spaces if (sid := live.space_id(s)) is not None}
    return {e.latest.integration_id for (sid, _), e in live.evaluators.items()
            if sid in ids and e.latest is not None and e.latest.integration_id}


def _all_addresses(live: LiveState, spaces: list[str]) -> list[str]:
    found = [f"{INTEGRATION.name}/{name}" for (_, name) in live.integrations]
    found += [address_of(doc) for documents in _account_wide().values() for doc in documents(live)]
    for spec in KIND_SPECS.values():
        if spec.spaced:
            found += [f"{spec.name}/{live.space_name(sid)}/{name}" for (sid, name) in live.table(spec.name)
                      if live.space_name(sid) in spaces]
    return sorted(found)


def restriction_manifests(live: LiveState) -> list[dict[str, Any]]:
    """The PROJECT and DASHBOARD restrictions (a PROMPT restriction is its prompt's ``restricted``)."""
    return [{"kind": RESTRICTION.name, "name": f"{t.lower()}-{rid}", "resource_type": t, "resource_id": rid}
            for (t, rid) in sorted(live.restrictions) if t in ("PROJECT", "DASHBOARD")]


def _datasets(live: LiveState, sid: str, space: str, chosen: Callable[[Mapping[str, Any]], bool],
              files: dict[str, str]) -> list[dict[str, Any]]:
    """The datasets of a space, each with its examples in a JSONL file of ``files`` (path -> text)."""
    docs = []
    data_files = Unique()
    for (dsid, name), d in sorted(live.datasets.items()):
        doc: dict[str, Any] = {"kind": DATASET.name, "space": space, "name": name}
        if dsid != sid or not chosen(doc):
            continue
        doc["examples_file"] = rel = f"data/{data_files.name(safe_component(name), '.jsonl')}"
        files[rel] = "".join(json.dumps(user_fields(e), ensure_ascii=False, sort_keys=True) + "\n"
                             for e in d.examples or [])
        docs.append(doc)
    return docs


def _prompts(live: LiveState, sid: str, space: str, *_: Any) -> list[dict[str, Any]]:
    docs = []
    for (psid, name), p in sorted(live.prompts.items()):
        if psid != sid:
            continue
        doc: dict[str, Any] = {"kind": PROMPT.name, "space": space, "name": name}
        if p.prompt.description is not None:
            doc["description"] = p.prompt.description
        if live.restrictions:  # none visible: a read-only key sees none, so restricted is left unmanaged
            doc["restricted"] = ("PROMPT", p.id) in live.restrictions
        if p.latest:
            version: dict[str, Any] = {"commit_message": p.latest.commit_message or "exported"}
            version.update({f: value for f in VERSION_FIELDS if (value := getattr(p.latest, f)) is not None})
            if p.latest.label_names():
                version["labels"] = p.latest.label_names()
            doc["version"] = version
        docs.append(doc)
    return docs


def _evaluators(live: LiveState, sid: str, space: str, *_: Any) -> list[dict[str, Any]]:
    by_id = {o.id: name for (t, name), o in live.integrations.items() if t == "LLM"}
    docs = []
    for (esid, name), e in sorted(live.evaluators.items()):
        if esid != sid or not e.latest:
            continue
        tc = e.latest.template_config.raw() if e.latest.template_config is not None else {}
        if e.latest.integration_id in by_id:  # named as a manifest names it
            llm = dict(tc["llm_config"])
            llm["integration"] = by_id[llm.pop("ai_integration_id")]
            tc["llm_config"] = llm
        doc: dict[str, Any] = {"kind": EVALUATOR.name, "space": space, "name": name}
        if e.evaluator.description is not None:
            doc["description"] = e.evaluator.description
        doc["commit_message"] = e.latest.commit_message or "exported"
        doc["template_config"] = tc
        docs.append(doc)
    return docs


#: A space's export of one kind: (live, space id, space name, chosen, data files) -> its documents.
SpacedExport = Callable[[LiveState, str, str, Callable[[Mapping[str, Any]], bool], dict[str, str]],
                        list[dict[str, Any]]]


def compared_documents(spec: KindSpec, objects: Mapping[tuple[str, str], Any], sid: str,
                       space: str) -> list[dict[str, Any]]:
    """The export of a spaced kind without one of its own: each live object (an ``ApiObject``) of
    the space ``sid`` as a document of its ``compared`` fields (``KindSpec.compared``: top-level
    fields, as a manifest writes them); a field the API left out, or null, is left out."""
    docs = []
    for (osid, name), obj in sorted(objects.items()):
        if osid == sid:
            fields = obj.raw()
            written = {f: fields[f] for f in spec.compared if f != "name" and fields.get(f) is not None}
            docs.append({"kind": spec.name, "space": space, "name": name, **written})
    return docs


def account_documents(spec: KindSpec, objects: Mapping[tuple[str, str], Any]) -> list[dict[str, Any]]:
    """The export of an account-wide kind without one of its own: each live object (an ``ApiObject``)
    as a document of its name and its ``compared`` fields (``KindSpec.compared``, its identity's
    among them), sorted by identity; a field the API left out, or null, is left out."""
    docs = []
    for _, obj in sorted(objects.items()):
        fields = obj.raw()
        written = {f: fields[f] for f in spec.compared if f != "name" and fields.get(f) is not None}
        docs.append({"kind": spec.name, "name": fields["name"], **written})
    return docs


def _account_wide() -> dict[str, Callable[[LiveState], list[dict[str, Any]]]]:
    """What an account's export writes, one file per account-wide kind without secrets (the
    integrations are written on their own): those of ``ACCOUNT_EXPORTS``, then the others'
    (``account_documents``)."""
    return {**ACCOUNT_EXPORTS, **{k: partial(_as_account_documents, KIND_SPECS[k]) for k in ACCOUNT_WIDE
                                  if k not in ACCOUNT_EXPORTS and not KIND_SPECS[k].secrets}}


def _as_account_documents(spec: KindSpec, live: LiveState) -> list[dict[str, Any]]:
    return account_documents(spec, live.table(spec.name))


def _as_compared(kind: str) -> SpacedExport:
    return lambda live, sid, space, *_: compared_documents(KIND_SPECS[kind], live.table(kind), sid, space)


def _by_space() -> dict[str, SpacedExport]:
    """What a space's export writes, one file per spaced kind: those of ``SPACED_EXPORTS`` in its
    order, then the others' (``compared_documents``)."""
    return {**SPACED_EXPORTS, **{k: _as_compared(k) for k in SPACED_KINDS if k not in SPACED_EXPORTS}}


#: What a space's export writes of the kinds with an export of their own, one file per kind in this
#: order (``prompts.yaml``...).
SPACED_EXPORTS: Mapping[str, SpacedExport] = {
    "Prompt": _prompts, "Evaluator": _evaluators, "Dataset": _datasets}
#: What an account's export writes of the account-wide kinds with an export of their own, one file per
#: kind (``restrictions.yaml``).
ACCOUNT_EXPORTS: Mapping[str, Callable[[LiveState], list[dict[str, Any]]]] = {
    "ResourceRestriction": restriction_manifests}
#: The kinds with an export of their own (``reconciler.kinds``): the account-wide ones, then the spaced
#: (any other kind is exported by its compared fields: ``account_documents``, ``compared_documents``).
EXPORTS: Mapping[str, Callable[..., Any]] = {"Integration": integration_manifest, **ACCOUNT_EXPORTS, **SPACED_EXPORTS}
