"""The replica's defaults: a kind without a copy of its own (``client.replica.COPIES``) is copied as
read, and an emulator module that stores each object as its list answers it seeds with
``emulator.core.stored_as_listed``: a new kind's rehearsal needs no line in the replica or the seeding."""

from __future__ import annotations

from reconciler.client.replica import COPIES, account_of, copied_as_read
from reconciler.emulator.core import Store, stored_as_listed
from reconciler.kinds import KIND_SPECS, KINDS, RESTRICTION, KindSpec
from reconciler.model import LiveState, RestrictionObject, SpacedObject

NOTE = KindSpec("Note", spaced=True, identity=("space", "name"), table="notes", collection="/v2/notes",
                renamable=False, delete_rank=6, compared=("name", "body"))


def test_a_spaced_kind_without_a_copy_of_its_own_is_copied_as_read_with_its_space() -> None:
    table = {("S1", "a"): SpacedObject.read({"id": "N1", "name": "a", "body": "one", "extra": [1]}),
             ("S2", "b"): SpacedObject.read({"id": "N2", "name": "b", "space_id": "S2"})}
    assert copied_as_read(NOTE, table) == [{"id": "N1", "name": "a", "body": "one", "extra": [1], "space_id": "S1"},
                                           {"id": "N2", "name": "b", "space_id": "S2"}]


def test_an_account_wide_kind_without_a_copy_of_its_own_is_copied_as_read() -> None:
    assert RESTRICTION.name not in COPIES
    live = LiveState(restrictions={("PROJECT", "P1"): RestrictionObject.read(
        {"resource_type": "PROJECT", "resource_id": "P1", "created_at": "2026-01-01T00:00:00Z"})})
    assert account_of(live).account[RESTRICTION.table] == [
        {"resource_type": "PROJECT", "resource_id": "P1", "created_at": "2026-01-01T00:00:00Z"}]


def test_the_replica_holds_every_registered_kind_under_its_table() -> None:
    assert set(COPIES) <= set(KINDS)
    account = account_of(LiveState()).account
    assert set(account) == {"organizations", "spaces", *(spec.table for spec in KIND_SPECS.values())}


def test_a_kind_stored_as_listed_is_seeded_oldest_first_as_given_under_its_space() -> None:
    store = Store(None)
    newer = {"id": "N2", "name": "b", "space_id": "S1", "body": "two"}
    older = {"id": "N1", "name": "a", "space_id": "S1", "body": "one"}
    stored_as_listed("note", newest_first=True)(store, [newer, older], "2026-01-01T00:00:00Z")
    assert [doc for _, doc in store.scan("note", parent="S1")] == [older, newer]
    stored_as_listed("tag", newest_first=False)(store, [{"id": "T1", "name": "x"}, {"id": "T2", "name": "y"}], "")
    assert [doc["id"] for _, doc in store.scan("tag")] == ["T1", "T2"]  # account-wide: no parent
    store.close()
