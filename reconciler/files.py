"""Files the reconciler writes that hold what others should not read (a plan holds prompts and
examples; an export the whole account's configuration; the emulator's database its secrets), and
paths built from names the API returned.

- ``write_private``: written whole or not at all (a temporary file in the same directory, then
  renamed over the target), mode 0600, and never through a symbolic link: a link at the target is
  refused, so a link planted where the plan goes cannot make the write land elsewhere.
- ``safe_component``: a name from the API made one harmless path component (no ``/``, ``\\``,
  ``..``, NUL, leading dot or absolute path), so an export never writes outside ``--out``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from reconciler.errors import ConfigError

PRIVATE_MODE = 0o600
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: Longest component written (file systems allow 255 bytes; a suffix may be added).
MAX_COMPONENT = 120


def safe_component(name: str) -> str:
    """``name`` as one path component: runs of other characters than letters, digits, ``_``, ``.``
    and ``-`` become ``-``; no leading dot (no ``.``, ``..`` or hidden file); never empty."""
    text = _UNSAFE.sub("-", name).lstrip(".")[:MAX_COMPONENT].strip("-") or "unnamed"
    return text if not text.startswith(".") else "-" + text


def refuse_symlink(path: Path, what: str) -> None:
    """Refuse a target that is a symbolic link, or that exists and is not a regular file (a device,
    a FIFO: renaming over it would replace it)."""
    if path.is_symlink():
        raise ConfigError(f"{what} {path}: is a symbolic link; refusing to write through it (remove the link, "
                          "or give the real path)")
    if path.exists() and not path.is_file():
        raise ConfigError(f"{what} {path}: is not a regular file; refusing to replace it")


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (its directory resolved, symlinks followed) is under ``root``."""
    real_root = os.path.realpath(root)
    real = os.path.join(os.path.realpath(path.parent), path.name)
    return real.startswith(real_root.rstrip(os.sep) + os.sep)


def write_private(path: Path, text: str, *, what: str = "writing", root: Path | None = None,
                  mode: int = PRIVATE_MODE) -> None:
    """Write ``text`` to ``path`` atomically, mode 0600 (or ``mode``: ``pull`` keeps a manifest's own),
    never through a symlink; with ``root``, the file must end up inside it. Raises ``ConfigError``
    (``what`` names the option) on refusal or failure."""
    refuse_symlink(path, what)
    if root is not None and not inside(path, root):
        raise ConfigError(f"{what} {path}: would be written outside {root}; refused")
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
        if mode != PRIVATE_MODE:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # replaces a link planted meanwhile, never follows it
    except (OSError, UnicodeError) as exc:  # UnicodeError: a lone surrogate (JSON's "\ud800") cannot be encoded
        if tmp is not None:  # made: removed, not left beside the target
            Path(tmp).unlink(missing_ok=True)
        raise ConfigError(f"{what} {path}: cannot write ({getattr(exc, 'strerror', None) or exc})") from None


def open_private_file(path: str, what: str) -> None:
    """Create ``path`` mode 0600 (or make an existing one 0600) without following a symlink: the
    emulator's SQLite file, which holds the integrations' secrets. SQLite gives its journal files
    the database's mode."""
    if os.path.islink(path):
        raise ConfigError(f"{what} {path} is a symbolic link; refusing to open it (give the real path)")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), PRIVATE_MODE)
    except OSError as exc:
        raise ConfigError(f"cannot open {what} {path} ({exc.strerror or exc})") from None
    try:
        os.fchmod(fd, PRIVATE_MODE)
    finally:
        os.close(fd)
