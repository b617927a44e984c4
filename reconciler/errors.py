"""The one error tree of the reconciler.

Every error a user can meet is a ``ReconcilerError``; each carries the exit code the CLI
ends with and a message a user can act on. The CLI catches ``ReconcilerError`` once, at the
entry point. httpx exceptions never escape the client: they become ``TransportError``.

    ReconcilerError (exit 1)
    ├── ConfigError            bad flags or environment (no endpoint, no key, http:// to a remote host)
    ├── ManifestError          manifests that do not load or validate (carries every problem found)
    ├── SecretError            a secret reference that cannot be resolved (names the reference, never a value)
    ├── ApiError               anything that went wrong talking to the API
    │   ├── ProblemError       the API answered with a problem+json body (status, title, detail, request)
    │   ├── TransportError     connection failed, reset, or timed out (after retries)
    │   ├── AmbiguousWriteError a POST failed in a way that leaves its effect unknown and could not be resolved
    │   ├── PaginationError    a list repeated a cursor or broke its contract
    │   ├── ResponseError      an object in an answer lacks a field the reconciler reads, or has it of another type
    │   └── ReadOnlyError      a write was attempted through a read-only client
    ├── PlanError              a plan cannot be made or used (replacement not allowed, stale plan file)
    └── ApplyError             apply finished with failures or did not converge
"""

from __future__ import annotations


class ReconcilerError(Exception):
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(ReconcilerError):
    pass


class ManifestError(ReconcilerError):
    """Carries every problem of a load/validate run; ``problems`` are printable one-liners."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"{n} problem{'s' if n != 1 else ''} in the manifests:\n" + "\n".join(self.problems))


class SecretError(ReconcilerError):
    pass


class ApiError(ReconcilerError):
    def __init__(self, message: str, *, method: str = "", path: str = "") -> None:
        self.method = method
        self.path = path
        where = f"{method} {path}: " if method else ""
        super().__init__(where + message)


class ProblemError(ApiError):
    def __init__(
        self,
        *,
        status: int,
        title: str,
        detail: str | None,
        method: str,
        path: str,
        type: str | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        text = f"{status} {title}" + (f": {detail}" if detail else "")
        super().__init__(text, method=method, path=path)


class TransportError(ApiError):
    pass


class AmbiguousWriteError(ApiError):
    pass


class PaginationError(ApiError):
    pass


class ResponseError(ApiError):
    pass


class ReadOnlyError(ApiError):
    pass


class PlanError(ReconcilerError):
    pass


class ApplyError(ReconcilerError):
    pass
