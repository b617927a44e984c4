"""Where the API is and which key to use: the connection flags (README.md, "Configuration"), resolved
in one place so every command connects the same way.

Precedence of the endpoint (first that is set wins)::

    --emulator FILE > --base-url URL > --host HOST > --region REGION > RECONCILER_BASE_URL

(a flag on the command line beats the environment, as everywhere).

With none of them set, resolution fails and says how to configure one: nothing ever falls back
to the emulator (or to the global host) silently.

Rules on a base URL:
- ``https://`` always; ``http://`` only to a loopback host (127.0.0.0/8, ::1, ``localhost``).
- No credentials, query or fragment in it (a key belongs in RECONCILER_API_KEY, never in a URL).
- A trailing ``/v2`` is stripped: the base URL is the service root and every request path
  starts with ``/v2``; keeping it would make every request go to ``/v2/v2/...``. The forgiving
  choice is safe because the meaning is unambiguous.

The API key comes only from ``--api-key-file`` or ``RECONCILER_API_KEY`` (a file wins when both
are given, being the more explicit choice). Its value is never printed, not even in errors.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from reconciler.errors import ConfigError

#: Requests in flight at once unless ``--parallelism`` says otherwise: Terraform's default. A plan's
#: wall time is about its reads' latency divided by this; a 429 pauses every thread of the client.
DEFAULT_PARALLELISM = 10

#: The service's global host (docs/api.md, "Addressing").
GLOBAL_HOST = "api.llmops.example"
#: The regional host form; ``{region}`` is one of REGIONS.
REGIONAL_HOST_TEMPLATE = "api.{region}.llmops.example"
#: Allowed regions; the first is the default the spec names.
REGIONS = ("eu-west-1a", "ca-central-1a")

BASE_URL_ENV = "RECONCILER_BASE_URL"
API_KEY_ENV = "RECONCILER_API_KEY"

HOW_TO_CONFIGURE = (
    "no API endpoint is configured: pass --base-url URL (or set RECONCILER_BASE_URL), "
    f"--region {{{','.join(REGIONS)}}}, --host HOST, or --emulator FILE for the in-process emulator"
)


@dataclass(frozen=True)
class Endpoint:
    """Exactly one of the two is set: a service root URL, or the SQLite file of an in-process emulator."""

    base_url: str | None
    emulator_db: str | None

    @property
    def is_emulator(self) -> bool:
        return self.emulator_db is not None

    def describe(self) -> str:
        """For ``-v`` output: where requests go (a base URL carries no secret: see the rules above)."""
        return f"in-process emulator ({self.emulator_db})" if self.emulator_db is not None else str(self.base_url)


def regional_base_url(region: str) -> str:
    if region not in REGIONS:
        raise ConfigError(f"unknown region {region!r}: expected one of {', '.join(REGIONS)}")
    return f"https://{REGIONAL_HOST_TEMPLATE.format(region=region)}"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and the name ``localhost`` (the only hosts plain http may reach)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normalise_base_url(raw: str, *, origin: str = "--base-url") -> str:
    """Check a service root URL against the rules of this module and return it without a
    trailing slash or ``/v2``. ``origin`` names where it came from, for the error message."""
    url = raw.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        raise ConfigError(f"{origin}: not a valid URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ConfigError(f"{origin}: expected an http(s) URL with a host, such as https://{GLOBAL_HOST}")
    if parts.username is not None or parts.password is not None:
        # Never echo the URL: its user-info may hold a secret.
        raise ConfigError(f"{origin}: credentials in the URL are refused; put the key in {API_KEY_ENV}")
    if parts.query or parts.fragment:
        raise ConfigError(f"{origin}: the base URL must not carry a query or fragment")
    if parts.scheme == "http" and not is_loopback(host):
        raise ConfigError(f"{origin}: plain http:// is refused except to a loopback address; use https://")
    path = parts.path.rstrip("/")
    if path.endswith("/v2"):
        path = path[: -len("/v2")]
    return f"{parts.scheme}://{parts.netloc}{path}"


def resolve_endpoint(
    *,
    base_url: str | None,
    region: str | None,
    host: str | None,
    emulator: str | None,
    env: Mapping[str, str] = os.environ,
) -> Endpoint:
    """The endpoint the flags and environment name (precedence in the module docstring)."""
    if emulator:
        return Endpoint(base_url=None, emulator_db=emulator)
    if base_url:
        return Endpoint(base_url=normalise_base_url(base_url), emulator_db=None)
    if host:
        if "://" in host or "/" in host:
            raise ConfigError("--host takes a host name (and optional :port), not a URL; use --base-url for a URL")
        return Endpoint(base_url=normalise_base_url(f"https://{host}", origin="--host"), emulator_db=None)
    if region:
        return Endpoint(base_url=regional_base_url(region), emulator_db=None)
    from_env = env.get(BASE_URL_ENV, "").strip()
    if from_env:
        return Endpoint(base_url=normalise_base_url(from_env, origin=BASE_URL_ENV), emulator_db=None)
    raise ConfigError(HOW_TO_CONFIGURE)


def read_api_key(
    api_key_file: str | None,
    env: Mapping[str, str] = os.environ,
    *,
    endpoint: Endpoint | None = None,
) -> str:
    """The API key from ``--api-key-file`` (stripped) or RECONCILER_API_KEY.

    For an emulator endpoint with no key configured, the emulator's admin key is used (the
    emulator is local and its keys are not secrets); a key in the environment it does not know is
    refused with that advice rather than answered 401. A missing, empty or malformed key is a
    ConfigError that names where the key was looked for and never shows a value.
    """
    if api_key_file:
        try:
            key = Path(api_key_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable as UTF-8"
            raise ConfigError(f"--api-key-file {api_key_file}: cannot read the key ({reason})") from None
        if not key:
            raise ConfigError(f"--api-key-file {api_key_file}: the file is empty")
        return _checked(key, f"--api-key-file {api_key_file}")
    key = env.get(API_KEY_ENV, "").strip()
    if endpoint is not None and endpoint.is_emulator:
        from reconciler.emulator import server_stack

        with server_stack("--emulator"):
            from reconciler.emulator.core import EmulatorSettings

        known = EmulatorSettings()
        if not key:
            return known.admin_key
        if key not in (known.admin_key, known.reader_key):  # a real key exported in the shell, most likely
            raise ConfigError(f"{API_KEY_ENV} holds a key the embedded emulator (--emulator) does not know: it "
                              f"takes {known.admin_key} (admin) and {known.reader_key} (read-only); unset "
                              f"{API_KEY_ENV} to use {known.admin_key}")
    if key:
        return _checked(key, API_KEY_ENV)
    raise ConfigError(f"no API key: set {API_KEY_ENV} or pass --api-key-file FILE")


def _checked(key: str, origin: str) -> str:
    """A key must fit in one header value; say so without showing it."""
    if not (key.isascii() and key.isprintable()):
        raise ConfigError(f"{origin}: the API key must be printable ASCII on one line")
    return key
