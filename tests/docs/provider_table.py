"""The provider table of docs/manifests.md, rendered from ``reconciler.providers`` (the test compares
the document with it; run ``python -m tests.docs.provider_table`` to print it after changing a provider)."""

from __future__ import annotations

from reconciler.providers import AUTH_MODES, PROVIDERS, ConfigField, FieldKind

BEGIN = "<!-- provider table: generated from reconciler/providers.py by tests/docs/provider_table.py -->"
END = "<!-- end of provider table -->"


def _field(f: ConfigField) -> str:
    notes = []
    if f.required_on_create:
        notes.append("required to create")
    if f.kind is FieldKind.SECRET:
        notes.append("secret")
    elif f.kind is FieldKind.HEADERS:
        notes.append("secret values")
    if f.nullable:
        notes.append("nullable")
    if f.https:
        notes.append("https")
    if f.default not in (None, ()) or (f.default == () and f.kind is FieldKind.STRING_LIST):
        notes.append(f"default {list(f.default) if isinstance(f.default, tuple) else str(f.default).lower()}")
    if f.read_as:
        notes.append(f"reads back as `{f.read_as}`")
    return f"`{f.name}`" + (f" ({', '.join(notes)})" if notes else "")


def render() -> str:
    lines = [BEGIN, "", "| provider | what it is | `config` fields besides `provider` |", "|---|---|---|"]
    for p in PROVIDERS.values():
        extra = "; needs a model source" if p.needs_model_source else ""
        lines.append(f"| `{p.name}` | {p.kind} | {', '.join(_field(f) for f in p.fields.values())}{extra} |")
    lines += ["", "CLOUD_D `auth` (replaced whole when written), by `auth_type`:", "",
              "| `auth_type` | fields |", "|---|---|"]
    for m in AUTH_MODES.values():
        lines.append(f"| `{m.auth_type}` | {', '.join(_field(f) for f in m.fields.values())} |")
    lines += ["", END]
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
