"""``reconciler promote FROM TO``: the command line of ``reconciler.promote`` (added to the group by cli.py)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from reconciler.cli.confine import confined
from reconciler.cli.environments import choose
from reconciler.cli.observe import observed


@click.command()
@click.argument("source", metavar="FROM")
@click.argument("target", metavar="TO")
@click.option("--target", "globs", multiple=True, metavar="GLOB",
              help="Promote only these resources (address globs, KIND/NAME or KIND/SPACE/NAME; repeatable).")
@click.option("--write", "write", is_flag=True, help="Write the edits into TO's files (default: print them as a diff).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--project", "project_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="The project file (default: reconciler.yaml here or in a directory above).")
@observed()
@confined
def promote(source: str, target: str, globs: tuple[str, ...], write: bool, fmt: str, project_file: str | None) -> None:
    """Make TO's desired state of the chosen resources equal FROM's, by edits of TO's own files only
    (its overlay; never a file another environment loads). What an environment sets on purpose is
    kept, and listed: a value from a variable (a var file, the environment), and one TO's overlay sets
    over the shared base. No request is made. Exit 0 nothing to promote, 2 edits (shown or written) or
    a value not promoted, 1 error."""
    from reconciler.promote import Promoter, check_pair

    chosen = choose(project_file, (), True)
    source, target = check_pair(chosen.project, source, target)
    result = Promoter(chosen.project, source, target, globs).run()
    if write:
        result.write()
    if fmt == "json":
        click.echo(json.dumps(result.to_json(write and bool(result.files)), indent=2, ensure_ascii=False))
        sys.exit(result.exit_code())
    click.echo(result.diff(), nl=False)
    for label, items in (("Promoted", result.changes), ("Kept", result.kept), ("Not promoted", result.not_promoted)):
        for item in items:
            click.echo(f"{label}: {item}", err=label != "Promoted")
    click.echo(_summary(result, write))
    sys.exit(result.exit_code())


def _summary(result: Any, write: bool) -> str:
    n, files = len(result.changes), len(result.files)
    head = f"Promote {result.source} -> {result.target}: "
    if not n:
        return head + "nothing to promote" + (f"; {len(result.kept)} kept." if result.kept else ".")
    done = "written to" if write else "as edits of"
    tail = "" if write else " (--write writes them)"
    return (head + f"{n} change{'s' if n != 1 else ''} {done} {files} file{'s' if files != 1 else ''}"
            + f"; {len(result.kept)} kept{tail}.")
