"""The registry of resource kinds: one ``KindSpec`` per kind, the one place the facts about a kind
are written. Everything that used to list the kinds derives from it: the kind names
(``KINDS``), identity and address (``DesiredResource``), the live table and the read scope
(``LiveState``, ``ReadScope``, ``client.live``), the create, delete and prune orders (``plan``),
and the per-kind steps each layer registers in its own table, keyed by the kind's name (the
manifest model, the live type, the plan layer's ``KindSteps``; the re-read after apply and the
export of the kinds that need their own): ``tests/test_kinds.py`` fails when a registered kind
misses one of them. Pure data: no import from the rest of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypeVar


class _Kinded(Protocol):
    @property
    def kind(self) -> str: ...


_K = TypeVar("_K", bound=_Kinded)


class Recovery(Enum):
    """How apply learns whether an ambiguous POST creating one of a kind took effect
    (``reconciler.apply.recover``): its collection is listed and the object found by name, among
    those of its space (a spaced kind) or of its identity's first field (an integration's type)."""

    BY_NAME = "by name"  #: the listed object is what the create answers
    BY_NAME_THEN_READ = "by name, then read"  #: read by id too: the create answers with the latest version
    RESEND = "resend"  #: the POST is idempotent: it is simply sent again


@dataclass(frozen=True)
class KindSpec:
    """What the layers need to know of one resource kind.

    name: the manifest's ``kind``. spaced: it lives in a space (identity ``(space, name)``; listed per
    space); otherwise it is account-wide. identity: the document fields that, after the kind, make
    its identity (``("type", "name")`` for an integration). table: its ``LiveState`` attribute
    (keyed by ``(space_id, name)`` for a spaced kind; ``LiveState.table(kind)`` finds it by the kind's
    name), its ``ReadScope`` field when spaced, export's file name. collection: its API collection path.
    renamable: it takes ``aliases`` (the API can rename it). delete_rank: its place among deletes
    (lower first; deletes run after every create and update). secrets: its documents hold
    write-only secrets (``--rotate``, ``--since`` and the secret checks look at them; export writes
    them with a secrets file). refers: the dotted spec path whose value names an LLM integration
    (an evaluator's ``template_config.llm_config.integration``): ``--target`` and ``--exclude``
    follow it, and a name it gives must be an LLM integration. unstored: the top-level document
    fields the API does not store (a dataset's ``experiment_retention``: the reconciler acts on it):
    live state cannot say what they were, so a policy's ``before`` takes them from the tree at
    ``--since REF`` (``reconciler.manifests.history.unstored_at``). recover: how an ambiguous
    create (a POST to ``collection``) is found out (``Recovery``). compared: the fields of a live
    object of this kind a comparison reads (its ``reconciler.essence``), when they are top-level
    fields taken as they are; a kind whose essence is more (an integration's config) has a function
    of its own there. Export writes them for a kind without an export of its own (an account-wide
    kind's: its ``name`` and its identity's fields among them, as the API names them).
    """

    name: str
    spaced: bool
    identity: tuple[str, ...]
    table: str
    collection: str
    renamable: bool
    delete_rank: int
    secrets: bool = False
    refers: str | None = None
    unstored: tuple[str, ...] = ()
    recover: Recovery = Recovery.BY_NAME
    compared: tuple[str, ...] = ()

    @property
    def list_key(self) -> str:
        """The key of the list in the answer of ``GET collection`` (``/v2/prompts`` -> ``prompts``)."""
        return self.collection.rsplit("/", 1)[1].replace("-", "_")

    def among(self, items: Iterable[_K]) -> list[_K]:
        """The items of this kind (resources, operations, anything with a ``kind``), in their order."""
        return [x for x in items if x.kind == self.name]


# Registration order is the order of creates and updates: an evaluator after the integration it names.
INTEGRATION = KindSpec("Integration", spaced=False, identity=("type", "name"), table="integrations",
                       collection="/v2/integrations", renamable=True, delete_rank=5, secrets=True)
PROMPT = KindSpec("Prompt", spaced=True, identity=("space", "name"), table="prompts", collection="/v2/prompts",
                  renamable=False, delete_rank=3, recover=Recovery.BY_NAME_THEN_READ, compared=("name", "description"))
DATASET = KindSpec("Dataset", spaced=True, identity=("space", "name"), table="datasets", collection="/v2/datasets",
                   renamable=True, delete_rank=4, unstored=("experiment_retention",), compared=("name",))
EVALUATOR = KindSpec("Evaluator", spaced=True, identity=("space", "name"), table="evaluators",
                     collection="/v2/evaluators", renamable=True, delete_rank=2,
                     refers="template_config.llm_config.integration", recover=Recovery.BY_NAME_THEN_READ,
                     compared=("name", "description"))
RESTRICTION = KindSpec("ResourceRestriction", spaced=False, identity=("resource_type", "resource_id"),
                       table="restrictions", collection="/v2/resource-restrictions", renamable=False, delete_rank=1,
                       recover=Recovery.RESEND, compared=("resource_type", "resource_id"))

KIND_SPECS: Mapping[str, KindSpec] = {k.name: k for k in (INTEGRATION, PROMPT, DATASET, EVALUATOR, RESTRICTION)}

#: The resource kinds, in create order.
KINDS = tuple(KIND_SPECS)
SPACED_KINDS = tuple(k.name for k in KIND_SPECS.values() if k.spaced)
ACCOUNT_WIDE = tuple(k.name for k in KIND_SPECS.values() if not k.spaced)
SECRET_KINDS = tuple(k.name for k in KIND_SPECS.values() if k.secrets)
#: A dataset's experiments (deleted by retention) are operations of a kind of their own, never declared.
EXPERIMENT = "Experiment"
#: What ``--prune`` deletes, in order; deletes run in this order, a dataset's experiments first.
PRUNE_ORDER = tuple(sorted(KINDS, key=lambda k: KIND_SPECS[k].delete_rank))
DELETE_ORDER = (EXPERIMENT, *PRUNE_ORDER)
#: The document that says what a tree owns: a document kind, not a resource.
OWNERSHIP = "Ownership"
DOCUMENT_KINDS = (*KINDS, OWNERSHIP)
