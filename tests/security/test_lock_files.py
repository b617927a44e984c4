"""The supply chain: every dependency installed by ``make install``, ``make demo`` and the image comes
from a lock file that pins its exact version and the sha256 of each of its files, pip and setuptools
included, and is installed with ``--require-hashes`` (docs/security.md, "Dependencies"). Offline: the
lock files, pyproject.toml, ``make -n`` and the Dockerfile are read, nothing is installed."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ("requirements-pip.lock", "requirements.lock", "requirements-dev.lock", "requirements-uv.lock")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SHA256 = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    marker: str
    hashes: tuple[str, ...]
    line: str


def entries(lock: str) -> list[str]:
    """The requirement lines of a lock file, each with its continuation lines joined."""
    joined = re.sub(r"\\\n", " ", (ROOT / lock).read_text())
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def pins(lock: str) -> dict[tuple[str, str], Pin]:
    """A lock file's pins by name and marker: a universal resolution may pin two versions of one
    package, each for its own Pythons or platforms."""
    found: dict[tuple[str, str], Pin] = {}
    for line in entries(lock):
        words = line.split()
        hashes = tuple(w for w in words if w.startswith("--hash="))
        requirement = Requirement(" ".join(w for w in words if not w.startswith("--hash=")))
        (specifier,) = requirement.specifier
        pin = Pin(canonicalize_name(requirement.name), specifier.version, str(requirement.marker or ""), hashes, line)
        found[pin.name, pin.marker] = pin
    return found


@pytest.mark.parametrize("lock", LOCKS)
def test_every_line_of_a_lock_file_pins_one_version_with_sha256_hashes(lock: str) -> None:
    lines = entries(lock)
    assert lines
    for line in lines:
        requirement = Requirement(" ".join(w for w in line.split() if not w.startswith("--hash=")))
        assert [s.operator for s in requirement.specifier] == ["=="], line
        assert not requirement.url and not requirement.extras, line
        hashes = [w for w in line.split() if w.startswith("--hash=")]
        assert hashes and all(SHA256.fullmatch(h) for h in hashes), line


def test_pip_and_the_build_backend_are_pinned_and_the_build_backend_fits_pyproject() -> None:
    installers = {name: pin for (name, _), pin in pins("requirements-pip.lock").items()}
    assert set(installers) == {"pip", "setuptools"}
    (backend,) = (Requirement(r) for r in PYPROJECT["build-system"]["requires"])
    assert canonicalize_name(backend.name) == "setuptools"
    assert backend.specifier.contains(installers["setuptools"].version)
    for lock in ("requirements.lock", "requirements-dev.lock"):  # one version of pip wherever it appears
        for (name, _), pin in pins(lock).items():
            if name in installers:
                assert (pin.version, pin.hashes) == (installers[name].version, installers[name].hashes), lock


def test_the_runtime_lock_takes_the_dev_locks_versions_and_hashes() -> None:
    dev = pins("requirements-dev.lock")
    for key, pin in pins("requirements.lock").items():
        assert key in dev, pin.line
        assert (pin.version, pin.hashes) == (dev[key].version, dev[key].hashes), pin.line


def declared(extra: str) -> list[Requirement]:
    """pyproject.toml's dependencies and one extra's, the extra's reference to reconciler's own extras
    expanded."""
    out = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    todo, seen = [extra], set()
    while todo:
        name = todo.pop()
        seen.add(name)
        for text in PYPROJECT["project"]["optional-dependencies"][name]:
            requirement = Requirement(text)
            if requirement.name == PYPROJECT["project"]["name"]:
                todo.extend(e for e in requirement.extras if e not in seen)
            else:
                out.append(requirement)
    return out


@pytest.mark.parametrize(("lock", "extra"), [("requirements.lock", "emulator"), ("requirements-dev.lock", "dev")])
def test_a_lock_holds_every_dependency_of_its_extra_within_its_range(lock: str, extra: str) -> None:
    locked = pins(lock).values()
    for requirement in declared(extra):
        found = [pin for pin in locked if pin.name == canonicalize_name(requirement.name)]
        assert found, f"{requirement} is missing from {lock}: run make lock"
        for pin in found:
            assert SpecifierSet(str(requirement.specifier)).contains(pin.version, prereleases=True), (requirement, pin)
        if requirement.marker is None and len(found) == 1:  # needed everywhere: locked for every platform
            assert not found[0].marker, (requirement, found[0].marker)


def pip_installs(commands: str) -> list[list[str]]:
    """The arguments after `pip install` of each such command in a shell script."""
    found = []
    for command in re.split(r"&&|\n", commands):
        words = shlex.split(command)
        for i in range(len(words) - 1):
            if words[i].endswith("pip") and words[i + 1] == "install":
                found.append(words[i + 2:])
    return found


def assert_hash_checked(installs: list[list[str]], lock: str) -> None:
    """pip and setuptools first from their lock, then the dependencies from `lock`, each with
    --require-hashes; the package itself only with --no-deps, so nothing unpinned comes in."""
    assert installs, "no pip install found"
    assert [a[a.index("-r") + 1] for a in installs if "-r" in a] == ["requirements-pip.lock", lock]
    for args in installs:
        assert "--upgrade" not in args and "-U" not in args and "-c" not in args, args
        assert "--require-hashes" in args or "--no-deps" in args, args
        if "--no-deps" in args:
            assert "-r" not in args and args[-1] == "." and "--no-build-isolation" in args, args


@pytest.mark.parametrize(("target", "lock"), [("install", "requirements-dev.lock"),
                                              ("install-runtime", "requirements.lock")])
def test_make_installs_from_the_lock_files_with_require_hashes(target: str, lock: str, tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("no make on PATH")
    dry = subprocess.run(["make", "-n", "-C", str(ROOT), target, f"VENV={tmp_path / 'venv'}"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert_hash_checked(pip_installs(dry.stdout.replace(" -m pip ", " pip ")), lock)


def test_the_image_installs_from_requirements_lock_with_require_hashes() -> None:
    dockerfile = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    runs = "\n".join(line.removeprefix("RUN ") for line in dockerfile.splitlines() if line.startswith("RUN "))
    assert_hash_checked(pip_installs(runs), "requirements.lock")
    assert "pip wheel" not in runs  # a wheel built here would have no hash in the lock
