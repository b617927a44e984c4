"""The emulator's shared machinery: settings, the document store, ids and clocks, problem
responses, request-body parsing, authorization and cursor pagination. Resource modules
(``integrations``, ``prompts``, ...) each expose ``routes(emu) -> list[Route]`` built on this.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

DEFAULT_ERRORS_URL = "https://docs.platform.example/api/errors"
#: The spaces a new emulator has (in its one organization, ``default-org``).
DEFAULT_SPACES = ("default", "research")

PROBLEM_TITLES: Mapping[int, tuple[str, str]] = {
    400: ("Invalid request parameters", "invalid-request"),
    401: ("Authentication required", "authentication-required"),
    403: ("Access forbidden", "access-forbidden"),
    404: ("Resource not found", "resource-not-found"),
    409: ("Resource conflict", "resource-conflict"),
    422: ("Unprocessable Entity", "unprocessable-entity"),
    429: ("Rate limit exceeded", "rate-limit-exceeded"),
}
#: Titles of the other statuses the emulator answers; they have no problem type in the spec.
OTHER_TITLES: Mapping[int, str] = {405: "Method not allowed", 500: "Internal server error",
                                   503: "Service unavailable"}


@dataclass
class EmulatorSettings:
    host: str = "127.0.0.1"
    port: int = 8787
    db: str | None = None  # SQLite file; None keeps state in memory
    admin_key: str = "admin-key"
    reader_key: str = "reader-key"
    space_keys: dict[str, str] = field(default_factory=dict)  # key -> space name it manages
    errors_url: str = DEFAULT_ERRORS_URL
    rate_limit: float | None = None  # requests per second per key (token bucket)
    rate_burst: float | None = None  # the bucket's size in requests (None: a second's worth, at least 1)
    faults: str | None = None  # e.g. "seed=7,error_rate=0.05,reset_rate=0.02,latency_ms=20"
    spaces: tuple[str, ...] = ()  # more spaces to create (in the first organization) when missing
    allowed_hosts: tuple[str, ...] = ()  # Host names served over the socket besides loopback ones (--allowed-host)


class Problem(Exception):
    """Raised anywhere in a handler; rendered as application/problem+json by the app."""

    def __init__(self, status: int, detail: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail or "")
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})


def problem_response(exc: Problem, errors_url: str) -> Response:
    title, slug = PROBLEM_TITLES.get(exc.status, (OTHER_TITLES.get(exc.status, "Error"), None))
    body: dict[str, Any] = {"title": title, "status": exc.status}
    if slug is not None:  # ``type`` is optional: only the problem types of docs/api.md, "Errors" have one
        body["type"] = f"{errors_url}#{slug}"
    if exc.detail:
        body["detail"] = exc.detail
    return Response(
        json.dumps(body), status_code=exc.status, media_type="application/problem+json", headers=exc.headers
    )


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Store:
    """A JSON document store on SQLite. Documents are dicts with an ``id``; each has a kind, an
    optional parent id and a monotonically increasing ``seq`` used for ordering and cursors. A
    document's ``name`` (when it has one) is indexed, so uniqueness checks do not scan a kind.

    One lock serialises access (starlette runs sync handlers in a thread pool). ``transaction()``
    groups several operations atomically.
    """

    def __init__(self, path: str | None) -> None:
        if path and path != ":memory:":  # it holds the integrations' secrets: 0600, never through a link
            from reconciler.files import open_private_file

            open_private_file(path, "the emulator's SQLite file")
        self._db = sqlite3.connect(path or ":memory:", check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        self._depth = 0
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL" if path else "PRAGMA journal_mode=MEMORY")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS docs (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL,"
                " id TEXT NOT NULL, parent TEXT, data TEXT NOT NULL, name TEXT)"
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(docs)")}
            if "name" not in columns:  # a file written before names were indexed
                self._db.execute("ALTER TABLE docs ADD COLUMN name TEXT")
                self._db.execute("UPDATE docs SET name = json_extract(data, '$.name')")
            self._db.execute("CREATE UNIQUE INDEX IF NOT EXISTS docs_id ON docs(kind, id)")
            self._db.execute("CREATE INDEX IF NOT EXISTS docs_parent ON docs(kind, parent, seq)")
            self._db.execute("CREATE INDEX IF NOT EXISTS docs_name ON docs(kind, name)")
            self._db.execute("CREATE TABLE IF NOT EXISTS counters (kind TEXT PRIMARY KEY, n INTEGER NOT NULL)")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._db.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if outer:
                    self._db.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._db.execute("COMMIT")

    def _next_numbers(self, kind: str, count: int) -> range:
        """The next ``count`` numbers of ``kind``'s counter, taken in one update."""
        with self._lock:
            self._db.execute(
                "INSERT INTO counters(kind, n) VALUES (?, ?) ON CONFLICT(kind) DO UPDATE SET n = n + ?",
                (kind, count, count),
            )
            row = self._db.execute("SELECT n FROM counters WHERE kind = ?", (kind,)).fetchone()
            return range(int(row[0]) - count + 1, int(row[0]) + 1)

    def new_ids(self, kind: str, count: int) -> list[str]:
        """``count`` opaque base64 ids that decode to ``Kind:number:suffix``, like the service's (a
        dataset's examples take theirs in one update of the counter, not one each)."""
        return [base64.b64encode(f"{kind}:{n}:{hashlib.sha1(f'{kind}:{n}'.encode()).hexdigest()[:6]}".encode()).decode()
                for n in self._next_numbers(kind, count)]

    def new_id(self, kind: str) -> str:
        return self.new_ids(kind, 1)[0]

    def insert(self, kind: str, doc: dict[str, Any], parent: str | None = None) -> dict[str, Any]:
        with self._lock:
            self._db.execute(
                "INSERT INTO docs(kind, id, parent, data, name) VALUES (?, ?, ?, ?, ?)",
                (kind, doc["id"], parent, _stored(doc), _name_of(doc)),
            )
        return doc

    def insert_many(self, kind: str, docs: list[dict[str, Any]], parent: str | None = None) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT INTO docs(kind, id, parent, data, name) VALUES (?, ?, ?, ?, ?)",
                [(kind, d["id"], parent, _stored(d), _name_of(d)) for d in docs],
            )

    def get(self, kind: str, id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT data FROM docs WHERE kind = ? AND id = ?", (kind, id)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def put(self, kind: str, doc: dict[str, Any]) -> dict[str, Any]:
        """Replace a stored document (same kind and id); keeps its seq and parent."""
        with self._lock:
            self._db.execute("UPDATE docs SET data = ?, name = ? WHERE kind = ? AND id = ?",
                             (_stored(doc), _name_of(doc), kind, doc["id"]))
        return doc

    def delete(self, kind: str, id: str) -> bool:
        with self._lock:
            cur = self._db.execute("DELETE FROM docs WHERE kind = ? AND id = ?", (kind, id))
        return cur.rowcount > 0

    def delete_children(self, kind: str, parent: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM docs WHERE kind = ? AND parent = ?", (kind, parent))

    def scan(
        self,
        kind: str,
        *,
        parent: str | None = None,
        after: int | None = None,
        newest_first: bool = False,
        where: Callable[[dict[str, Any]], bool] | None = None,
        limit: int | None = None,
        name: str | None = None,
    ) -> list[tuple[int, dict[str, Any]]]:
        """Documents of a kind as (seq, doc), oldest first (or newest first), strictly after the
        ``after`` seq in that order, of that ``parent`` and exact ``name`` (indexed), filtered by
        ``where`` (applied in Python), at most ``limit``."""
        sql = "SELECT seq, data FROM docs WHERE kind = ?"
        args: list[Any] = [kind]
        if parent is not None:
            sql += " AND parent = ?"
            args.append(parent)
        if name is not None:
            sql += " AND name = ?"
            args.append(name)
        if after is not None:
            sql += " AND seq < ?" if newest_first else " AND seq > ?"
            args.append(after)
        sql += " ORDER BY seq DESC" if newest_first else " ORDER BY seq"
        out: list[tuple[int, dict[str, Any]]] = []
        with self._lock:
            for seq, data in self._db.execute(sql, args):
                doc = json.loads(data)
                if where is None or where(doc):
                    out.append((int(seq), doc))
                    if limit is not None and len(out) >= limit:
                        break
        return out

    def scan_json(self, kind: str, *, parent: str, member: str, after: int | None = None,
                  limit: int) -> list[tuple[int, str]]:
        """Like ``scan`` (oldest first, by parent), but each document's ``member`` as JSON text, cut
        from the stored text undecoded: for lists that answer stored objects as they are (a page of
        500 examples: SQLite's ``json_extract`` re-wrote each one, 2.5-2.8 ms a page against 2.2-2.4)."""
        sql = "SELECT seq, data FROM docs WHERE kind = ? AND parent = ?"
        args: list[Any] = [kind, parent]
        if after is not None:
            sql += " AND seq > ?"
            args.append(after)
        sql += " ORDER BY seq LIMIT ?"
        args.append(limit)
        with self._lock:
            return [(int(seq), _member_text(str(data), member)) for seq, data in self._db.execute(sql, args)]

    def count(self, kind: str, parent: str | None = None) -> int:
        sql, args = "SELECT COUNT(*) FROM docs WHERE kind = ?", [kind]
        if parent is not None:
            sql += " AND parent = ?"
            args.append(parent)
        with self._lock:
            return int(self._db.execute(sql, args).fetchone()[0])

    def ids(self) -> list[str]:
        """The id of every stored document (for seeding: ``seeding.seed``)."""
        with self._lock:
            return [str(row[0]) for row in self._db.execute("SELECT id FROM docs")]

    def clear(self) -> None:
        """Forget every document and id counter (for seeding: ``seeding.seed``)."""
        with self._lock:
            self._db.execute("DELETE FROM docs")
            self._db.execute("DELETE FROM counters")

    def reserve(self, kind: str, number: int) -> None:
        """Make ``new_id(kind)`` answer numbers above ``number`` (ids seeded from elsewhere)."""
        with self._lock:
            self._db.execute("INSERT INTO counters(kind, n) VALUES (?, ?) ON CONFLICT(kind) DO UPDATE SET n = "
                             "max(n, excluded.n)", (kind, number))

    def close(self) -> None:
        with self._lock:
            self._db.close()


#: How a kind's emulator module stores a replica's objects of that kind (``seeding.seed``): ``(store,
#: items, stamp)``, the items as the kind's list answers them (plain API objects, in its order),
#: ``stamp`` the seeding time, for a timestamp the items lack.
Seed = Callable[[Store, Sequence[Mapping[str, Any]], str], None]


def stored_as_listed(store_kind: str, *, newest_first: bool) -> Seed:
    """The seeding of a kind whose emulator stores each object as its list answers it: each item
    stored as given in ``store_kind``, under its ``space_id`` when it has one, the oldest first (a
    list is in insertion order: ``newest_first`` says which end of the items is the oldest)."""
    def seed(store: Store, items: Sequence[Mapping[str, Any]], stamp: str) -> None:
        for item in reversed(items) if newest_first else items:
            store.insert(store_kind, dict(item), parent=item.get("space_id"))
    return seed


def _stored(doc: Mapping[str, Any]) -> str:
    """A document as stored: compact JSON (older stores hold ``json.dumps``'s spaced form)."""
    return json.dumps(doc, separators=(",", ":"))


def _member_text(text: str, member: str) -> str:
    """The JSON text of ``member`` in a stored ``{"id": ..., member: ...}`` document, cut out of it.
    Outside strings a quote follows a comma only where JSON puts a key, and inside them every quote
    is escaped; the id (first, never holding a quote) is followed by ``member``: the first
    ``,"member":`` (``, "member": `` in the spaced form) is its key. Any other shape is decoded."""
    if text.startswith('{"id":'):
        for marker in (f',"{member}":', f', "{member}": '):
            at = text.find(marker)
            if at != -1:
                return text[at + len(marker):-1]
    return json.dumps(json.loads(text)[member], separators=(",", ":"))


def _name_of(doc: Mapping[str, Any]) -> str | None:
    name = doc.get("name")
    return name if isinstance(name, str) else None


# ---------------------------------------------------------------- request helpers


def _not_json_number(literal: str) -> float:
    """``NaN``, ``Infinity``: Python's json reads them, JSON has no such numbers."""
    raise ValueError(f"{literal} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):  # 1e400: a JSON number, but no double holds it
        raise ValueError(f"the number {literal[:40]} is out of range")
    return value


async def read_json_object(request: Request) -> dict[str, Any]:
    """The request body as a JSON object; anything else is 400 invalid-request."""
    raw = await request.body()
    if not raw:
        raise Problem(400, "a JSON request body is required")
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type and media_type != "application/json" and not (
            media_type.startswith("application/") and media_type.endswith("+json")):
        # a body declared as something else (a form, text) is refused; an undeclared one is read as JSON
        raise Problem(400, f"the request body must be sent as Content-Type: application/json, not {media_type}")
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_not_json_number, parse_float=_finite_float)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Problem(400, f"malformed JSON body: {exc}") from None
    except RecursionError:
        raise Problem(400, "the JSON body is nested too deeply") from None
    try:  # a lone surrogate (\ud800) decodes, but can be neither stored nor sent back
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise Problem(400, "the JSON body holds a lone surrogate (not a Unicode character)") from None
    except RecursionError:
        raise Problem(400, "the JSON body is nested too deeply") from None
    if not isinstance(value, dict):
        raise Problem(400, "the request body must be a JSON object")
    return value


def check_keys(obj: Mapping[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    """Unknown properties are 400 invalid-request (no additional properties anywhere)."""
    extra = sorted(set(obj) - set(allowed))
    if extra:
        raise Problem(400, f"unknown propert{'ies' if len(extra) > 1 else 'y'} in {where}: {', '.join(extra)}")


_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
}


def check_type(value: Any, expected: str, where: str, *, nullable: bool = False) -> None:
    """Wrong JSON types are 400 invalid-request."""
    if value is None and nullable:
        return
    ok = isinstance(value, _JSON_TYPES[expected])
    if expected in ("integer", "number") and isinstance(value, bool):
        ok = False
    if not ok:
        raise Problem(400, f"{where} must be {'a ' if expected != 'array' else 'an '}{expected}"
                      + (" or null" if nullable else ""))


def json_response(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def no_content() -> Response:
    return Response(status_code=204)


# ---------------------------------------------------------------- pagination


def _query_fingerprint(params: Mapping[str, str], scope: str, ignore: tuple[str, ...] = ("cursor", "limit")) -> str:
    """What a cursor is valid for: the list (``scope``: its kind and parent, e.g. the versions of one
    prompt, the examples of one dataset version) and its query filters (a page size may change)."""
    items = sorted((k, v) for k, v in params.items() if k not in ignore)
    return hashlib.sha1(json.dumps([scope, items]).encode()).hexdigest()[:12]


def parse_limit(params: Mapping[str, str], maximum: int = 100, default: int = 50) -> int:
    raw = params.get("limit")
    if raw is None:
        return default
    if not (raw.isascii() and raw.isdigit()):  # int() would take "+5", " 5", "1_0" and other scripts' digits
        raise Problem(400, f"limit must be an integer between 1 and {maximum}")
    limit = int(raw)
    if not 1 <= limit <= maximum:
        raise Problem(400, f"limit must be between 1 and {maximum}")
    return limit


def encode_cursor(params: Mapping[str, str], seq: int, scope: str) -> str:
    raw = json.dumps({"q": _query_fingerprint(params, scope), "s": seq}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(params: Mapping[str, str], scope: str) -> int | None:
    """The seq a cursor points after; a cursor that is malformed or came from another list or query
    is 400."""
    raw = params.get("cursor")
    if raw is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
        seq = int(data["s"])
        fingerprint = data["q"]
    except Exception:
        raise Problem(400, "cursor is not valid") from None
    if fingerprint != _query_fingerprint(params, scope):
        raise Problem(400, "cursor does not belong to this query")
    return seq


def page(
    store: Store,
    kind: str,
    params: Mapping[str, str],
    *,
    plural: str,
    parent: str | None = None,
    where: Callable[[dict[str, Any]], bool] | None = None,
    newest_first: bool = False,
    maximum: int = 100,
    default: int = 50,
    visible: Callable[[dict[str, Any]], bool] | None = None,
    render: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One page of a list: ``{plural: [...], "pagination": {"has_more", "next_cursor"?}}``.

    ``where`` filters before the page is cut (query filters); ``visible`` filters after the page
    is read (authorization), so a page may come back short or empty with ``has_more`` true.
    """
    limit = parse_limit(params, maximum, default)
    scope = f"{kind}/{parent or ''}"
    after = decode_cursor(params, scope)
    rows = store.scan(kind, parent=parent, after=after, newest_first=newest_first, where=where, limit=limit + 1)
    has_more = len(rows) > limit
    rows = rows[:limit]
    items = [doc for _, doc in rows if visible is None or visible(doc)]
    pagination: dict[str, Any] = {"has_more": has_more}
    if has_more:
        pagination["next_cursor"] = encode_cursor(params, rows[-1][0], scope)
    return {plural: [render(d) if render else d for d in items], "pagination": pagination}


def page_json(
    store: Store, kind: str, params: Mapping[str, str], *, plural: str, parent: str, member: str,
    maximum: int = 100, default: int = 50,
) -> Response:
    """``page`` for a list that answers stored objects unchanged and unfiltered (dataset examples):
    the body is spliced from the stored JSON text, so a page of 500 is never decoded and re-encoded."""
    limit = parse_limit(params, maximum, default)
    scope = f"{kind}/{parent}"
    rows = store.scan_json(kind, parent=parent, member=member, after=decode_cursor(params, scope),
                           limit=limit + 1)
    has_more = len(rows) > limit
    rows = rows[:limit]
    pagination: dict[str, Any] = {"has_more": has_more}
    if has_more:
        pagination["next_cursor"] = encode_cursor(params, rows[-1][0], scope)
    body = '{"' + plural + '": [' + ",".join(text for _, text in rows) + '], "pagination": ' + json.dumps(pagination) + "}"
    return Response(body, media_type="application/json")


def query_filters(emu: Emulator, params: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bool]:
    """The service's ``name`` and ``space_name`` list filters (case-insensitive substrings of the
    item's name and of its space's name) as one predicate; a filter not given matches everything."""
    name = params.get("name")
    space_name = params.get("space_name")
    if space_name is None:
        return lambda doc: name_matches(doc, name)
    wanted = space_name.lower()
    ids = {doc["id"] for _, doc in emu.store.scan("space") if wanted in str(doc.get("name", "")).lower()}
    return lambda doc: name_matches(doc, name) and doc.get("space_id") in ids


def name_matches(doc: Mapping[str, Any], needle: str | None) -> bool:
    """The service's ``name`` filter: a case-insensitive substring match."""
    return needle is None or needle.lower() in str(doc.get("name", "")).lower()


# ---------------------------------------------------------------- authorization


@dataclass(frozen=True)
class Principal:
    key: str
    role: str  # "admin", "reader" or "space"
    space: str | None = None  # for role "space": the space name it manages

    @property
    def can_write(self) -> bool:
        return self.role == "admin"


def authenticate(request: Request, settings: EmulatorSettings) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Problem(401, "a bearer API key is required")
    if token == settings.admin_key:
        return Principal(token, "admin")
    if token == settings.reader_key:
        return Principal(token, "reader")
    if token in settings.space_keys:
        return Principal(token, "space", settings.space_keys[token])
    raise Problem(401, "the API key is not valid")


def require_write(principal: Principal) -> None:
    if not principal.can_write:
        raise Problem(403, "this API key may not write")


# ---------------------------------------------------------------- the emulator's state


class Emulator:
    """Settings plus store. A fresh store is seeded with one organization and the spaces
    ``default`` and ``research``. Store kinds used by the resource modules: "organization",
    "space", "integration", "prompt", "prompt_version" (parent prompt id), "dataset",
    "dataset_version" (parent dataset id), "example" (parent dataset version id), "evaluator",
    "evaluator_version" (parent evaluator id), "experiment", "restriction"."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self.store = Store(settings.db)
        self._seed()

    def _seed(self) -> None:
        with self.store.transaction():
            if not self.store.count("organization"):
                org = {"id": self.store.new_id("Organization"), "name": "default-org", "created_at": now()}
                self.store.insert("organization", org)
                for name in DEFAULT_SPACES:
                    self.create_space(name, org["id"])
            if self.settings.spaces:
                org_id = self.store.scan("organization", limit=1)[0][1]["id"]
                existing = {doc.get("name") for _, doc in self.store.scan("space")}
                for name in self.settings.spaces:
                    if name not in existing:
                        self.create_space(name, org_id)
                        existing.add(name)

    def create_space(self, name: str, organization_id: str, description: str | None = None) -> dict[str, Any]:
        space = {
            "id": self.store.new_id("Space"),
            "name": name,
            "organization_id": organization_id,
            "description": description,
            "created_at": now(),
        }
        return self.store.insert("space", space)

    def space_by_id(self, space_id: str) -> dict[str, Any] | None:
        return self.store.get("space", space_id)

    def principal(self, request: Request) -> Principal:
        """The caller; the app has already authenticated it (401 before any handler runs)."""
        cached = request.scope.get("state", {}).get("principal")
        return cached if isinstance(cached, Principal) else authenticate(request, self.settings)

    def user_id(self, principal: Principal) -> str:
        """The stable user id behind an API key (for ``created_by_user_id``): admin is user 1,
        the reader user 2, space keys follow in key order. Derived, so it survives restarts."""
        keys = [self.settings.admin_key, self.settings.reader_key, *sorted(self.settings.space_keys)]
        n = keys.index(principal.key) + 1 if principal.key in keys else len(keys) + 1
        suffix = hashlib.sha1(f"User:{n}".encode()).hexdigest()[:6]
        return base64.b64encode(f"User:{n}:{suffix}".encode()).decode()

    def problem(self, exc: Problem) -> Response:
        return problem_response(exc, self.settings.errors_url)
