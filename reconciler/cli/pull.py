"""``reconciler pull``: the command line of ``reconciler.pull`` (added to the group by ``main``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from reconciler.cli.common import connect, load, read_progress
from reconciler.cli.confine import confined
from reconciler.cli.environments import environments
from reconciler.cli.flags import connection_flags, plan_flags
from reconciler.cli.observe import observed


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--write", "write", is_flag=True, help="Write the edits into the files (default: print them as a diff).")
@click.option("--since", metavar="REF", help="Three-way: a field changed in the tree since this git revision and "
              "live to another value is a conflict (not written; exit 1).")
@click.option("--unmanaged-to", "unmanaged_to", type=click.Path(file_okay=False), metavar="DIR",
              help="Also write the unmanaged resources inside the ownership as new manifests in DIR (export's layout).")
@click.option("--remove-absent", "remove_absent", is_flag=True,
              help="Remove the documents of declared resources absent live (default: listed, since apply creates "
              "them; with --since, those REF declared are removed).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@plan_flags("variables", "var_files")
@connection_flags
@observed()
@confined
@environments
def pull(paths: tuple[str, ...], write: bool, since: str | None, unmanaged_to: str | None, remove_absent: bool,
         fmt: str, verbose: bool, quiet: bool, options: Any, conn: Any, chosen: Any) -> None:
    """Turn live edits of declared resources into edits of the manifests, so the next plan is empty.
    Reads live state with GET only. Exit 0 nothing to pull, 2 differences (shown or written), 1 error
    or a conflict. With --env NAME: that environment of reconciler.yaml, and every other environment
    there keeps its desired state (a file they share is not edited for this one)."""
    import os

    from reconciler.client.live import read_live
    from reconciler.errors import ConfigError
    from reconciler.export import export_manifests
    from reconciler.kinds import RESTRICTION
    from reconciler.manifests.loader import manifest_files
    from reconciler.plan.planner import make_plan
    from reconciler.pull.engine import Puller, Tree, sibling_environments
    from reconciler.pull.since import resources_at

    variables, var_files = options.variables, options.var_files
    others: list[Tree] | None = None
    if chosen is not None:  # one environment; the others of the project file are the trees it protects
        from reconciler.environments import targets

        if len(chosen.names) != 1:
            raise ConfigError(f"pull writes one environment's files: give one --env (not {len(chosen.names)})")
        every = targets(chosen.project, chosen.project.names, conn, var_files=var_files, keys=False)
        target = next(t for t in every if t.name == chosen.names[0])
        targets(chosen.project, [target.name], conn)  # its key variable set: before any request
        paths, var_files, conn = target.paths, target.var_files, target.conn
        others = [Tree(t.paths, tuple(variables), t.var_files, t.name) for t in every if t is not target]
    manifests = load(paths, variables, var_files)
    base = resources_at(since, paths, variables, var_files) if since else None  # before any request
    if unmanaged_to:
        out = Path(unmanaged_to)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--unmanaged-to {out}: exists and is not a directory")
        if out.is_dir() and any(out.iterdir()):
            raise ConfigError(f"--unmanaged-to {out}: the directory is not empty; give an empty or new directory "
                              "(pull never overwrites files there)")
    var_real = {os.path.realpath(v) for v in var_files}
    files = [f for f in manifest_files(paths, []) if f != "-" and os.path.realpath(f) not in var_real]
    exported: list[str] = []
    with connect(conn, quiet=quiet, verbose=verbose, read_only=True) as client, \
            read_progress(client, quiet):
        live = client.run(read_live(client, manifests.read_scope(), manifests))
        if unmanaged_to:
            removed = {r.address for r in base.values()} if base is not None else set()  # the tree deleted them
            unmanaged = [u.address for u in make_plan(manifests, live).unmanaged
                         if u.kind != RESTRICTION.name and u.address not in removed]
            if unmanaged:
                exported = export_manifests(client, [], Path(unmanaged_to), unmanaged)
    tree = Tree(tuple(paths), tuple(variables), tuple(var_files))
    if others is None:  # without a project file: the overlay folders beside this one
        others = sibling_environments(tree) if "-" not in paths else []
    result = Puller(manifests, live, files, base, tree=tree if "-" not in paths else None, others=others,
                    remove_absent=remove_absent).run()
    written = bool(write and result.files and not result.errors)
    if written:
        result.write()
    if fmt == "json":
        click.echo(json.dumps(result.to_json(written, exported), indent=2, ensure_ascii=False, default=str))
        sys.exit(_exit(result.exit_code(), exported))
    if write and not result.errors:
        for e in result.edits:
            click.echo(f"{e.file}:{e.line}: {e.address}: {e.path or '(document)'}: {e.action}")
        if result.files:
            click.echo(f"Pulled {len(result.edits)} edit{'s' if len(result.edits) != 1 else ''} into "
                       f"{len(result.files)} file{'s' if len(result.files) != 1 else ''}.")
    else:
        click.echo(result.diff(), nl=False)
    for line in exported:
        click.echo(line)
    for label, items in (("Warning", result.warnings), ("Not written", result.not_written),
                         ("Conflict", result.conflicts), ("Error", result.errors)):
        for item in items:
            click.echo(f"{label}: {item}", err=True)
    sys.exit(_exit(result.exit_code(), exported))


def _exit(code: int, exported: list[str]) -> int:
    """Exit 2 whenever files were written (unmanaged resources included), unless an error says 1."""
    return 2 if code == 0 and exported else code
