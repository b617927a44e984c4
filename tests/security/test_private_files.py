"""The project's own file helpers, in process: the atomic private writer (``files.write_private``),
the refusals before it writes, names from the API made path components, and the tree a manifest's
files must stay inside (``manifests.confine``)."""

from __future__ import annotations

import locale
import os
from pathlib import Path

import pytest

from reconciler.errors import ConfigError
from reconciler.files import inside, open_private_file, refuse_symlink, safe_component, write_private
from reconciler.manifests.confine import allowing_outside_tree, outside_allowed, outside_tree, tree_roots


@pytest.mark.parametrize(("name", "component"), [
    ("ok-name_1.2", "ok-name_1.2"),
    ("a/b\\c", "a-b-c"),
    ("..", "unnamed"),
    ("", "unnamed"),
    ("---", "unnamed"),
    ("é", "unnamed"),
    (".hidden", "hidden"),
    ("../../etc/passwd", "-..-etc-passwd"),
    (".-.x", "-.x"),  # a dot left in front once the dashes go: kept behind one
    ("-a b-", "a-b"),
    ("x" * 130, "x" * 120),
    ("x" * 119 + "/y", "x" * 119),
    ("XMAX", "XMAX"),
])
def test_a_name_from_the_api_becomes_one_harmless_path_component(name: str, component: str) -> None:
    assert safe_component(name) == component


def test_a_private_file_is_written_whole_mode_0600_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    write_private(target, "line one\r\nline two é\n")
    assert target.read_bytes() == "line one\r\nline two é\n".encode()  # newlines as given
    assert target.stat().st_mode & 0o777 == 0o600
    target.chmod(0o644)
    write_private(target, "again\n")
    assert target.read_text() == "again\n" and target.stat().st_mode & 0o777 == 0o600
    write_private(target, "kept\n", mode=0o640)
    assert target.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["plan.json"]



def test_a_private_file_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """A CI container often runs under the C locale: its files (a plan, a pulled manifest) still
    hold their text as UTF-8, not refused or written in the locale's encoding."""
    target = tmp_path / "plan.json"
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # a file opened without an encoding would be ASCII now
    try:
        write_private(target, "\u00e9 \u2713")
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert target.read_bytes() == "\u00e9 \u2713".encode()


def test_a_link_a_directory_or_a_place_outside_the_root_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("untouched\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with pytest.raises(ConfigError, match=r"^--out .*link\.txt: is a symbolic link; refusing to write through it "
                                          r"\(remove the link, or give the real path\)$"):
        write_private(link, "x", what="--out")
    assert real.read_text() == "untouched\n"
    with pytest.raises(ConfigError, match=r"^pull: .*: is not a regular file; refusing to replace it$"):
        refuse_symlink(tmp_path, "pull:")
    refuse_symlink(tmp_path / "absent.txt", "pull:")  # a new file: nothing to refuse
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ConfigError, match=r"^export .*escape\.yaml: would be written outside .*out; refused$"):
        write_private(out / ".." / "escape.yaml", "x", what="export", root=out)
    assert not (tmp_path / "escape.yaml").exists()
    write_private(out / "in.yaml", "x", root=out)
    assert (out / "in.yaml").read_text() == "x"
    with pytest.raises(ConfigError, match=r"^writing .*missing.*: cannot write \(No such file or directory\)$"):
        write_private(tmp_path / "missing" / "f.txt", "x")


def test_a_write_that_fails_leaves_the_target_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "t.txt"
    target.write_text("before\n")
    with pytest.raises(ConfigError, match=r"^writing .*t\.txt: cannot write \("):
        write_private(target, "\ud800")  # a lone surrogate: the text cannot be encoded
    assert target.read_text() == "before\n" and os.listdir(tmp_path) == ["t.txt"]


def test_inside_follows_the_directory_and_needs_a_component_below_the_root(tmp_path: Path) -> None:
    root = tmp_path / "out"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outs").mkdir()
    assert inside(root / "sub" / "f", root) and inside(root / "f", root)
    assert not inside(tmp_path / "outs" / "f", root)  # a sibling whose name starts the same
    assert not inside(root, root) and not inside(tmp_path / "f", root)
    (root / "away").symlink_to(tmp_path / "outs")
    assert not inside(root / "away" / "f", root)
    spaced = tmp_path / "out "  # a name's trailing space is part of it
    spaced.mkdir()
    assert inside(spaced / "f", spaced) and not inside(tmp_path / "outs" / "f", spaced)


def test_a_private_database_file_is_made_0600_and_never_opened_through_a_link(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    open_private_file(str(db), "the emulator's database")
    assert db.exists() and db.stat().st_mode & 0o777 == 0o600
    db.chmod(0o644)
    open_private_file(str(db), "the emulator's database")
    assert db.stat().st_mode & 0o777 == 0o600
    link = tmp_path / "link.db"
    link.symlink_to(db)
    with pytest.raises(ConfigError, match=r"^the emulator's database .*link\.db is a symbolic link; refusing to open "
                                          r"it \(give the real path\)$"):
        open_private_file(str(link), "the emulator's database")
    with pytest.raises(ConfigError, match=r"^cannot open the emulator's database .*nowhere.* \(No such file or "
                                          r"directory\)$"):
        open_private_file(str(tmp_path / "nowhere" / "x.db"), "the emulator's database")


def test_the_tree_is_each_directory_given_each_files_directory_and_the_working_directory_for_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "m.yaml").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    real = os.path.realpath(tmp_path)
    assert tree_roots(["a", "b/m.yaml", "link", "-", "a"]) == (f"{real}/a", f"{real}/b", real)
    assert tree_roots([]) == ()
    (tmp_path / "-").mkdir()
    assert tree_roots(["-"]) == (real,)  # standard input, even beside a directory named "-"


def test_a_path_outside_every_root_is_refused_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILER_ALLOW_OUTSIDE_TREE", raising=False)
    root = tmp_path / "tree"
    (root / "d").mkdir(parents=True)
    (tmp_path / "tree2").mkdir()
    (root / "out").symlink_to(tmp_path / "tree2")
    roots = (os.path.realpath(root),)
    assert outside_tree(str(root / "d" / "f.jsonl"), roots) is None
    assert outside_tree(str(root), roots) is None
    assert outside_tree(str(root / "d" / "f"), None) is None  # no tree to keep to (a plan file's own paths)
    assert outside_tree(str(tmp_path / "tree2" / "f"), roots) == (
        f"is outside the manifests' tree ({roots[0]}); keep the file inside it, or allow it with "
        "--allow-outside-tree (or RECONCILER_ALLOW_OUTSIDE_TREE=1)")
    assert outside_tree(str(root / "out" / "f"), (*roots, "/nowhere")) == (
        f"is outside the manifests' tree ({roots[0]}, /nowhere) (through a symbolic link); keep the file inside "
        "it, or allow it with --allow-outside-tree (or RECONCILER_ALLOW_OUTSIDE_TREE=1)")
    with allowing_outside_tree(True):
        assert outside_allowed() and outside_tree(str(tmp_path / "tree2" / "f"), roots) is None
    assert not outside_allowed()
    for value, allowed in (("1", True), (" TRUE ", True), ("yes", True), ("0", False), ("", False), ("no", False)):
        monkeypatch.setenv("RECONCILER_ALLOW_OUTSIDE_TREE", value)
        assert outside_allowed() is allowed, value


def test_a_root_whose_name_ends_in_a_space_does_not_hold_its_namesake_without_the_space(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILER_ALLOW_OUTSIDE_TREE", raising=False)
    (tmp_path / "tree ").mkdir()
    (tmp_path / "tree").mkdir()
    roots = tree_roots([str(tmp_path / "tree ")])
    assert outside_tree(str(tmp_path / "tree " / "f"), roots) is None
    assert outside_tree(str(tmp_path / "tree" / "f"), roots) is not None


def test_a_private_database_file_is_never_open_to_others_and_a_link_planted_late_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    created: list[int] = []
    chmod = os.fchmod

    def seen(fd: int, mode: int) -> None:
        created.append(os.fstat(fd).st_mode & 0o777)  # the mode it was created with, before the chmod
        chmod(fd, mode)

    monkeypatch.setattr(os, "fchmod", seen)
    open_private_file(str(tmp_path / "new.db"), "the emulator's database")
    assert created == [0o600]
    monkeypatch.undo()
    target = tmp_path / "elsewhere.db"
    target.write_text("")
    target.chmod(0o644)
    (tmp_path / "late.db").symlink_to(target)
    monkeypatch.setattr(os.path, "islink", lambda _: False)  # the link appears after the check
    with pytest.raises(ConfigError, match=r"^cannot open the emulator's database .*late\.db \("):
        open_private_file(str(tmp_path / "late.db"), "the emulator's database")
    assert target.stat().st_mode & 0o777 == 0o644


def test_the_temporary_is_a_hidden_file_beside_the_target_renamed_over_it(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    renamed: list[tuple[str, str]] = []
    replace = os.replace

    def seen(src: str, dst: object) -> None:
        renamed.append((src, str(dst)))
        replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", seen)
    write_private(tmp_path / "plan.json", "{}")
    ((src, dst),) = renamed
    assert dst == str(tmp_path / "plan.json") and os.path.dirname(src) == str(tmp_path)  # one file system: atomic
    name = os.path.basename(src)
    assert name.startswith(".plan.json.") and name.endswith(".tmp") and len(name) > len(".plan.json..tmp")
