"""The command group ``main``: parses flags, calls the workflow, maps ``ReconcilerError`` to exit codes once."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from reconciler import __version__
from reconciler.cli.common import connect
from reconciler.cli.common import load as _load
from reconciler.cli.common import read_progress as _read_progress
from reconciler.cli.common import say as _say
from reconciler.cli.confine import confined
from reconciler.cli.environments import environments, heading
from reconciler.cli.flags import APPROVE, REHEARSE, SAVED, connection_flags, flags_given, plan_flags
from reconciler.cli.observe import observed, show_error
from reconciler.cli.promote import promote
from reconciler.cli.pull import pull
from reconciler.cli.watch import watch
from reconciler.errors import ReconcilerError
from reconciler.stopping import Stop


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReconcilerError as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(exc.exit_code)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """As click's, but a usage error (unknown option, bad value, missing PATH) exits 1, not
        click's 2: exit 2 means "changes" or "drift" here, and a typo in a CI job must not read as
        either."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.ClickException as exc:  # a usage error exits 1 (above), any other with its own code
            code = 1 if isinstance(exc, click.UsageError) else exc.exit_code
            show_error(exc, args, exit_code=code)
            sys.exit(code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="reconciler")
def main() -> None:
    """Declarative, stateless reconciler for the platform's management API.

    Exit codes: 0 ok; 1 error (a usage error, invalid manifests, a partial apply...); 2 changes
    or drift (plan --detailed-exitcode, drift).
    """


def _report_read(verbose: bool, live: Any) -> None:
    if verbose:
        _say(f"Live read: {live.requests} requests ({live.retries} retries).", "live_read", requests=live.requests,
             retries=live.retries)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--check-secrets", is_flag=True, help="Also check that every secret reference resolves.")
@plan_flags("policies", "variables", "var_files", build=SimpleNamespace,  # validate imports no planner
            policies={"help": "Check these Policy documents too (a file or a directory; repeatable)."})
@observed()
@confined
@environments
def validate(paths: tuple[str, ...], check_secrets: bool, options: Any, chosen: Any) -> None:
    """Load and check manifests; no network. Exit 0 valid, 1 invalid."""
    from reconciler.cli.validate import run_validate

    def checked(paths: Any, var_files: tuple[str, ...], policies: tuple[str, ...]) -> int:
        return run_validate(list(paths), check_secrets=check_secrets, out=click.echo,
                            err=lambda line: _say(line, "problem", message=line), var_assignments=options.variables,
                            var_files=var_files, policy_paths=policies)

    if chosen is None:
        sys.exit(checked(paths, options.var_files, options.policies))
    from reconciler.environments import load_all, targets

    chosen_targets = targets(chosen.project, chosen.names, None, var_files=options.var_files,
                             policies=options.policies, keys=False)
    codes = []
    for target in chosen_targets:
        click.echo(heading(target.name, "text"), nl=False)
        codes.append(checked(target.paths, target.var_files, target.policies))
    if not any(codes):  # valid one by one: then two of one account may not declare one space
        load_all(chosen.project, chosen_targets, lambda t: _load(t.paths, options.variables, t.var_files, t.policies))
    sys.exit(max(codes))


@main.command()
@click.option("--plan", "of_plan", is_flag=True, help="The JSON Schema of the JSON plan (--format json, PLANFILE).")
@click.option("--project", "of_project", is_flag=True, help="The JSON Schema of the project file, reconciler.yaml.")
@observed()
def schema(of_plan: bool, of_project: bool) -> None:
    """Print the JSON Schema of the manifest format (of the JSON plan with --plan, of the project
    file with --project)."""
    if of_plan and of_project:
        raise click.UsageError("--plan and --project: give one of them")
    if of_project:
        import json

        from reconciler.project import json_schema

        click.echo(json.dumps(json_schema(), indent=2))
        return
    if of_plan:
        import json

        from reconciler.plan.schema import plan_json_schema

        click.echo(json.dumps(plan_json_schema(), indent=2))
        return
    from reconciler.cli.validate import run_schema

    sys.exit(run_schema(click.echo))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--out", "out_file", type=click.Path(), help="Save the plan (JSON) for `apply PLANFILE` (with --env or "
              "--all: a directory, a plan file per environment, for `apply DIR`).")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 with no changes, 2 with changes.")
@REHEARSE
@plan_flags()
@connection_flags
@observed(metrics_file=True)
@confined
@environments
def plan(paths: tuple[str, ...], fmt: str, out_file: str | None, detailed_exitcode: bool, verbose: bool,
         quiet: bool, rehearse: bool, options: Any, conn: Any, chosen: Any) -> None:
    """Fetch live state and print the plan."""
    from reconciler.plan.render import render
    from reconciler.workflow import plan_against, prepare_options

    if chosen is not None:  # --out names a directory: a plan file per environment
        sys.exit(_plan_environments(chosen, options, conn, fmt=fmt, detailed_exitcode=detailed_exitcode,
                                    verbose=verbose, quiet=quiet, rehearse=rehearse, out_dir=out_file))
    manifests = _load(paths, options.variables, options.var_files, options.policies)
    options = prepare_options(manifests, options)
    if out_file and Path(out_file).is_dir():
        raise ReconcilerError(f"--out {out_file}: a directory; give a file (a directory of plan files is for "
                              "--env and --all)")
    if out_file and not Path(out_file).resolve().parent.is_dir():
        raise ReconcilerError(f"--out {out_file}: the directory {Path(out_file).parent} does not exist")
    if out_file:
        from reconciler.files import refuse_symlink

        refuse_symlink(Path(out_file), "--out")  # before any request
    with connect(conn, quiet=quiet, verbose=verbose) as client, \
            _read_progress(client, quiet):
        live, result = plan_against(manifests, client, options)
    _report_read(verbose, live)  # no secret is resolved: the plan shows and saves references only
    rehearsal = _rehearse(result, live, manifests, conn.parallelism) if rehearse else None
    if not (quiet and _nothing_to_say(result)) or (rehearsal is not None and not rehearsal.ok):
        text = render(result, fmt, colour=_colour(), verbose=verbose)
        click.echo(text if rehearsal is None else rehearsal.rendered(text, fmt), nl=False)
    if result.policy:
        from reconciler.policy.evaluate import check_not_denied

        check_not_denied(result)  # printed with its verdicts, then exit 1 (nothing saved)
    if out_file:  # atomically, 0600, never through a symlink (a plan holds prompts and examples)
        from reconciler.files import write_private
        from reconciler.saved import signed_files, with_sources

        text = with_sources(result, os.getcwd()).dumps()  # bound to its files' digests
        for suffix, signed in signed_files(text):  # with RECONCILER_PLAN_KEY: PLANFILE.sig
            write_private(Path(out_file + suffix), signed, what="--out")
        write_private(Path(out_file), text, what="--out")
        if not quiet:
            _say(f"Saved the plan to {out_file}; apply it with: reconciler apply {out_file}", "plan_saved",
                 path=out_file)
    if rehearsal is not None and not rehearsal.ok:
        raise rehearsal.error()
    sys.exit(2 if detailed_exitcode and not result.empty else 0)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--prune", is_flag=True, help="Count unmanaged resources (inside the ownership) as drift.")
@plan_flags("since", "targets", "excludes", "policies", "variables", "var_files",
            since={"help": "Count write-only fields whose declaration changed since this git revision as drift."})
@connection_flags
@observed(metrics_file=True)
@confined
@environments
def drift(paths: tuple[str, ...], fmt: str, prune: bool, verbose: bool, quiet: bool, options: Any,
          conn: Any, chosen: Any) -> None:
    """Read-only comparison for cron: exit 0 in sync, 2 drift, 1 error. Sends nothing but GET.
    Unmanaged resources are listed; with --prune they count as drift. With --env or --all: one line
    per environment."""
    from reconciler.plan.render import render
    from reconciler.workflow import plan_against, prepare_options

    if chosen is not None:
        sys.exit(_plan_environments(chosen, options, conn, fmt=fmt, verbose=verbose, quiet=quiet, drift=True,
                                    prune=prune))
    manifests = _load(paths, options.variables, options.var_files, options.policies)  # secrets: never read
    options = prepare_options(manifests, options)
    with connect(conn, quiet=quiet, verbose=verbose, read_only=True) as client, \
            _read_progress(client, quiet):
        live, result = plan_against(manifests, client, options)
    _report_read(verbose, live)
    drifted = not result.empty or bool(prune and result.unmanaged)
    if drifted or not (quiet and _nothing_to_say(result)):
        click.echo(render(result, fmt, colour=_colour(), verbose=verbose, unmanaged_drift=prune), nl=False)
    sys.exit(2 if drifted else 0)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation.")
@click.option("--fail-fast", is_flag=True, help="Stop starting new calls after the first failure.")
@APPROVE
@REHEARSE
@plan_flags()
@connection_flags
@observed(metrics_file=True)
@confined
@environments
def apply(paths: tuple[str, ...], auto_approve: bool, fail_fast: bool, approvals: tuple[str, ...], verbose: bool,
          quiet: bool, rehearse: bool, options: Any, conn: Any, chosen: Any) -> None:
    """Execute the plan (from manifests, or a saved PLANFILE), then confirm convergence. With --env or
    --all: each environment in the order its `after` draws, once those it comes after converged."""
    from reconciler.policy.evaluate import check_approvals_known
    from reconciler.workflow import is_plan_file, plan_against, prepare_options

    if chosen is not None:
        if not auto_approve and not sys.stdin.isatty():  # before any request
            raise ReconcilerError("standard input is not a terminal: refusing to apply without --auto-approve")
        sys.exit(_apply_environments(chosen, options, conn, auto_approve=auto_approve, fail_fast=fail_fast,
                                     approvals=approvals, verbose=verbose, quiet=quiet, rehearse=rehearse))
    if _is_plan_dir(paths):  # plan --all --out DIR: its plan files, in the order after draws
        sys.exit(_apply_plan_dir(Path(paths[0]), options, conn, approvals=approvals, fail_fast=fail_fast,
                                 verbose=verbose, quiet=quiet, rehearse=rehearse))
    if is_plan_file(paths):
        _apply_plan_file(paths[0], options, conn, approvals=approvals, fail_fast=fail_fast, verbose=verbose,
                         quiet=quiet, rehearse=rehearse)
        return
    manifests = _load(paths, options.variables, options.var_files, options.policies)  # refused before any request
    if not auto_approve and not sys.stdin.isatty():  # before any request or plan is shown
        raise ReconcilerError("standard input is not a terminal: refusing to apply without --auto-approve")
    # it writes, so its key may manage restrictions: they are always compared
    options = prepare_options(manifests, replace(options, restrictions="compare"))
    check_approvals_known(approvals, manifests.policies)
    with connect(conn, quiet=quiet, verbose=verbose) as client:
        with _read_progress(client, quiet):
            live, planned = plan_against(manifests, client, options)
        _report_read(verbose, live)
        _apply_planned(planned, live, client, manifests, approvals=approvals, ask=not auto_approve,
                       show=not (quiet and auto_approve), rehearse=rehearse, fail_fast=fail_fast,
                       parallelism=conn.parallelism, verbose=verbose, quiet=quiet)


def _apply_plan_file(path: str, options: Any, conn: Any, *, approvals: tuple[str, ...], fail_fast: bool,
                     verbose: bool, quiet: bool, rehearse: bool) -> None:
    """``apply PLANFILE``: the file checked whole before any request (a plan file may come from
    elsewhere: docs/security.md), planned again under every guard and policy (the file must be that
    plan, call for call), then applied without asking (it was reviewed when it was made)."""
    from reconciler.plan.planfile import read_plan_bytes
    from reconciler.policy.evaluate import check_approvals_known
    from reconciler.saved import bound_sources, check_signature, checked_against_live
    from reconciler.workflow import declared_secrets, read_plan_file

    raw = read_plan_bytes(path)
    check_signature(path, raw)  # with RECONCILER_PLAN_KEY: signed by plan --out, unaltered
    planned = read_plan_file(path, raw)
    _refuse_plan_options(options)
    if options.allow_replace:  # given to apply rather than to plan: as good
        planned = replace(planned, options=replace(planned.options, allow_replace=True))
    bound = bound_sources(planned, path)  # its files: inside this tree, as they were
    manifests = _load(bound.manifests, planned.options.variables, bound.var_files,
                      (*bound.policies, *options.policies))  # its policies checked before any request
    planned = declared_secrets(planned, manifests, path)
    with connect(conn, quiet=quiet, verbose=verbose) as client:
        planned, live = checked_against_live(planned, manifests, client, path)
        check_approvals_known(approvals, manifests.policies)
        _apply_planned(planned, live, client, manifests, approvals=approvals, ask=False, show=not quiet,
                       rehearse=rehearse, fail_fast=fail_fast, parallelism=conn.parallelism, verbose=verbose,
                       quiet=quiet)


def _apply_planned(planned: Any, live: Any, client: Any, manifests: Any, *, approvals: tuple[str, ...], ask: bool,
                   show: bool, rehearse: bool, fail_fast: bool, parallelism: int, verbose: bool, quiet: bool) -> None:
    """The plan shown, rehearsed (``--rehearse``), checked (replacements, policies, secrets), confirmed
    (``ask``), applied and its convergence checked: what ``apply`` does once it has a plan."""
    from reconciler.plan.render import render_text
    from reconciler.policy.evaluate import check_allowed
    from reconciler.workflow import check_plan_secrets, check_replacements, not_converged

    if show and not (quiet and _nothing_to_say(planned)):
        click.echo(render_text(planned, colour=_colour(), verbose=verbose), nl=False)
    if planned.empty:  # a verdict on a field no call sends (experiment retention) holds all the same
        check_allowed(planned, approvals)
        return
    if rehearse:  # before any write: a failed rehearsal writes nothing
        rehearsal = _rehearse(planned, live, manifests, parallelism)
        if not (quiet and rehearsal.ok):
            click.echo("\n".join(rehearsal.lines()))
        if not rehearsal.ok:
            raise rehearsal.error(applying=True)
    check_replacements(planned)
    check_allowed(planned, approvals)  # deny, or an approval missing: before any write
    check_plan_secrets(planned, manifests)
    if ask and not click.confirm("Apply these changes?", default=False):
        raise ReconcilerError("apply cancelled")
    again = _apply_and_confirm(planned, client, manifests, live, parallelism, fail_fast, quiet)
    assert again is not None  # a plan file's manifests are always here (bound to it): planned again
    if not again.empty:
        raise not_converged(again)
    if not quiet and planned.options.targets:  # a targeted plan is partial: say only what was checked
        click.echo("Apply complete: the targeted resources match the manifests (--target: the others were "
                   "not planned; run plan to see them).")
    elif not quiet:
        click.echo("Apply complete: live state matches the manifests.")


def _loaded_environments(chosen: Any, options: Any, conn: Any, **prepared: Any) -> tuple[list[Any], dict[str, Any],
                                                                                   dict[str, Any]]:
    """The chosen environments (``environments.targets``), their manifests and their plan options,
    every problem found before any request."""
    from reconciler.environments import load_all, targets
    from reconciler.workflow import prepare_options

    chosen_targets = targets(chosen.project, chosen.names, conn, var_files=options.var_files,
                             policies=options.policies)
    loaded = load_all(chosen.project, chosen_targets,
                      lambda t: _load(t.paths, options.variables, t.var_files, t.policies))
    per_env = {t.name: prepare_options(loaded[t.name], replace(options, var_files=t.var_files, policies=t.policies,
                                                               **prepared))
               for t in chosen_targets}
    return chosen_targets, loaded, per_env


def _plan_environments(chosen: Any, options: Any, conn: Any, *, fmt: str, verbose: bool, quiet: bool,
                       detailed_exitcode: bool = False, rehearse: bool = False, drift: bool = False,
                       prune: bool = False, out_dir: str | None = None) -> int:
    """``plan`` (``drift``) over environments: planned concurrently (``environments.plan_all``), then
    one section each and the table environment x action (drift: one line each). The exit code is the
    command's over all of them: 1 when one failed, else 2 for changes (drift, --detailed-exitcode)."""
    import json

    from reconciler.cli.environments import check_plan_dir, table, write_plans
    from reconciler.environments import counts, plan_all
    from reconciler.plan.render import render, summary_line
    from reconciler.policy.evaluate import check_not_denied

    chosen_targets, loaded, per_env = _loaded_environments(chosen, options, conn)
    if out_dir:
        check_plan_dir(Path(out_dir))  # before any request
    results = plan_all(chosen_targets, loaded, per_env,
                       lambda c, runner: connect(c, quiet=quiet, verbose=verbose, read_only=drift, runner=runner))
    failed = False
    changed = False
    sections: dict[str, Any] = {}
    said: set[str] = set()  # the environments -q shows: changes, drift and errors
    lines: dict[str, str] = {}  # drift's one line each
    for name, result in results.items():
        if result.plan is None:
            failed = True
            sections[name] = {"error": str(result.error)}
            lines[name] = f"{name}: error: {result.error}"
            said.add(name)
            continue
        speaks = not (quiet and _nothing_to_say(result.plan))
        text = render(result.plan, fmt, colour=_colour(), verbose=verbose, unmanaged_drift=prune)
        if rehearse:
            rehearsal = _rehearse(result.plan, result.live, loaded[name], conn.parallelism)
            text = rehearsal.rendered(text, fmt)
            failed = failed or not rehearsal.ok
            speaks = speaks or not rehearsal.ok
        try:
            if result.plan.policy:
                check_not_denied(result.plan)
        except ReconcilerError as exc:
            failed = speaks = True
            text += f"Error: {exc}\n"
        drifted = not result.plan.empty or bool(prune and result.plan.unmanaged)
        changed = changed or drifted
        if speaks or drifted:
            said.add(name)
        lines[name] = f"{name}: " + (f"drift: {summary_line(result.plan)}" if drifted else "in sync")
        sections[name] = json.loads(text) if fmt == "json" else text
    rows = [counts(r) for r in results.values()]
    if not said:  # -q, and every environment in sync with nothing to say
        pass
    elif fmt == "json":
        click.echo(json.dumps({"environments": sections, "table": rows}, indent=2, ensure_ascii=False))
    elif drift and fmt == "text":
        click.echo("\n".join(line for name, line in lines.items() if name in said))
    else:
        if fmt == "markdown":
            click.echo(f"### reconciler {'drift' if drift else 'plan'}: {len(results)} environments\n")
            click.echo(table(rows, fmt))
        for name, section in sections.items():
            if name not in said:
                continue
            click.echo(heading(name, fmt), nl=False)
            click.echo(section if isinstance(section, str) else _failed_section(section["error"], fmt), nl=False)
            click.echo()
        if fmt == "text":
            click.echo("Environments:")
            click.echo(table(rows, fmt), nl=False)
    if failed:
        return 1
    if out_dir:  # only when every environment planned: apply DIR applies them all, in order
        write_plans(Path(out_dir), chosen, {name: r.plan for name, r in results.items()})
        if not quiet:
            _say(f"Saved a plan per environment to {out_dir}; apply them with: reconciler apply {out_dir}",
                 "plan_saved", path=out_dir)
    return 2 if changed and (drift or detailed_exitcode) else 0


def _failed_section(error: str, fmt: str) -> str:
    """An environment that has no plan, in its section: in Markdown as prose whose markup is inert
    (an error may quote the API)."""
    if fmt == "markdown":
        from reconciler.shown import md_text

        return f"**Error:** {md_text(error)}\n"
    return f"Error: {error}\n"


def _apply_environments(chosen: Any, options: Any, conn: Any, *, auto_approve: bool, fail_fast: bool,
                        approvals: tuple[str, ...], verbose: bool, quiet: bool, rehearse: bool) -> int:
    """``apply`` over environments (``_in_order``), each planned and applied as ``apply PATH...`` does."""
    from reconciler.policy.evaluate import check_approvals_known
    from reconciler.workflow import plan_against

    chosen_targets, loaded, per_env = _loaded_environments(chosen, options, conn, restrictions="compare")
    check_approvals_known(approvals, tuple(p for m in loaded.values() for p in m.policies))

    def apply_one(target: Any) -> None:
        with connect(target.conn, quiet=quiet, verbose=verbose) as client:
            with _read_progress(client, quiet):
                live, planned = plan_against(loaded[target.name], client, per_env[target.name])
            _apply_planned(planned, live, client, loaded[target.name], approvals=approvals, ask=not auto_approve,
                           show=not (quiet and auto_approve), rehearse=rehearse, fail_fast=fail_fast,
                           parallelism=conn.parallelism, verbose=verbose, quiet=quiet)

    return _in_order(chosen, chosen_targets, apply_one)


def _is_plan_dir(paths: tuple[str, ...]) -> bool:
    from reconciler.cli.environments import PLAN_INDEX

    return len(paths) == 1 and (Path(paths[0]) / PLAN_INDEX).is_file()


def _apply_plan_dir(directory: Path, options: Any, conn: Any, *, approvals: tuple[str, ...], fail_fast: bool,
                    verbose: bool, quiet: bool, rehearse: bool) -> int:
    """``apply DIR`` (``plan --all --out DIR``): each environment's plan file applied as ``apply
    PLANFILE`` does, against the environment's endpoint, in the order ``after`` draws (``_in_order``)."""
    from reconciler.cli.environments import planned_environments
    from reconciler.environments import targets

    chosen = planned_environments(directory)
    chosen_targets = targets(chosen.project, chosen.names, conn)  # every key variable set: before any request
    files = {t.name: directory / f"{t.name}.json" for t in chosen_targets}
    for name, file in files.items():
        if not file.is_file():
            raise ReconcilerError(f"{directory}: no plan file for the environment {name} ({file.name})")
    return _in_order(chosen, chosen_targets, lambda target: _apply_plan_file(
        str(files[target.name]), options, target.conn, approvals=approvals, fail_fast=fail_fast, verbose=verbose,
        quiet=quiet, rehearse=rehearse))


def _in_order(chosen: Any, chosen_targets: list[Any], apply_one: Any) -> int:
    """Apply each environment (``apply_one``) in the order ``after`` draws: an environment starts once
    every environment of the run it comes after converged; a failure stops the environments after it
    and the independent ones go on; Ctrl-C or SIGTERM stops the run. Then one line per environment;
    exit 0 only when every one converged."""
    envs = chosen.project.model.environments
    outcome: dict[str, str] = {}
    converged: set[str] = set()
    for target in chosen_targets:
        waiting = [a for a in envs[target.name].after if a in chosen.names and a not in converged]
        if waiting:
            outcome[target.name] = f"not started: it comes after {', '.join(waiting)}, which did not converge"
            continue
        click.echo(heading(target.name, "text"), nl=False)
        try:
            apply_one(target)
        except _Interrupted as exc:
            click.echo(f"Error: {exc}", err=True)
            outcome[target.name] = "interrupted"
            break
        except ReconcilerError as exc:
            click.echo(f"Error: {exc}", err=True)
            outcome[target.name] = "failed: " + str(exc).splitlines()[0]
            continue
        converged.add(target.name)
        outcome[target.name] = "converged"
    click.echo("Environments:")
    for target in chosen_targets:
        click.echo(f"  {target.name}: {outcome.get(target.name, 'not started: the run was interrupted')}")
    return 0 if len(converged) == len(chosen_targets) else 1


class _Interrupted(ReconcilerError):
    """Ctrl-C or SIGTERM stopped an apply: nothing more starts (``apply --all``: no other environment)."""


def _rehearse(planned: Any, live: Any, manifests: Any, parallelism: int) -> Any:
    from reconciler.rehearse import rehearse

    return rehearse(planned, live, manifests, parallelism=parallelism)


def _nothing_to_say(plan: Any) -> bool:
    """In sync, with nothing unmanaged and no warning: what --quiet leaves unsaid."""
    return bool(plan.empty and not plan.unmanaged and not plan.warnings)


def _colour() -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def _refuse_plan_options(options: Any) -> None:
    """A saved plan was made with its options; one given again to ``apply PLANFILE`` would be
    silently ignored, so it is refused (``--allow-replace`` only consents, and is taken)."""
    given = flags_given(options, SAVED)
    if given:
        raise ReconcilerError(f"{', '.join(given)}: options of plan, not of apply PLANFILE (the plan file was made "
                              "with its own); make the plan again with them")


def _apply_and_confirm(planned: Any, client: Any, manifests: Any, live: Any, parallelism: int, fail_fast: bool,
                       quiet: bool) -> Any:
    """``workflow.apply_and_confirm`` with rich progress on a terminal, else one line per call as it
    ends (CI logs; nothing with --quiet); then the report. Returns the plan made again (or None)."""
    from reconciler.workflow import apply_and_confirm

    progress: Any = None
    if sys.stdout.isatty() and not quiet:
        from rich.progress import Progress

        progress = Progress(transient=True)
        task = progress.add_task("Applying", total=len(planned.operations))

    def done(o: Any) -> None:
        if progress is not None:
            progress.advance(task)
        elif not quiet:
            click.echo(f"{o.status:8} {o.describe()}" + (f": {o.detail}" if o.detail else ""))

    def reported(report: Any) -> None:
        if progress is not None:
            progress.stop()
        if not (quiet and report.ok):
            for line in report.lines(list_applied=progress is not None):  # else listed as they ended
                click.echo(line)
        if report.interrupted:
            raise _Interrupted(f"apply interrupted: {len(report.of('applied'))} calls applied, "
                                  f"{len(report.of('skipped'))} not started (listed above); re-run to converge")
        if not report.ok:
            raise ReconcilerError(report.failure_summary())

    # SIGTERM (a CI job cancelled, ``kill``) does what Ctrl-C does: the calls in flight finish, then the report
    with progress if progress is not None else contextlib.nullcontext(), Stop().install(signal.SIGTERM) as stop:
        return apply_and_confirm(planned, client, manifests, live, parallelism=parallelism, fail_fast=fail_fast,
                                 on_done=done, on_report=reported, stop=stop.event.is_set)[1]


@main.command()
@click.argument("addresses", nargs=-1, metavar="[KIND/NAME]...")
@click.option("--space", "spaces", multiple=True, help="Export this space's prompts, datasets and evaluators.")
@click.option("--out", "out_dir", default="exported", show_default=True, type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Write into --out even when it is not empty.")
@connection_flags
@observed()
def export(addresses: tuple[str, ...], spaces: tuple[str, ...], out_dir: str, force: bool, verbose: bool,
           quiet: bool, conn: Any) -> None:
    """Write manifests from live state (adoption of existing resources): everything, the spaces
    of --space, or the resources named (KIND/NAME, or KIND/SPACE/NAME for a prompt, dataset or
    evaluator)."""
    from reconciler.export import check_out_dir, export_manifests

    check_out_dir(Path(out_dir), force)  # before any request
    with connect(conn, quiet=quiet, verbose=verbose, read_only=True) as client, \
            _read_progress(client, quiet):
        written = export_manifests(client, list(spaces), Path(out_dir), list(addresses))
    if not quiet:
        for line in written:
            click.echo(line)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535))
@click.option("--db", type=click.Path(dir_okay=False), help="SQLite file; state survives restarts.")
@click.option("--admin-key", default="admin-key", show_default=True)
@click.option("--reader-key", default="reader-key", show_default=True)
@click.option("--space-key", multiple=True, metavar="KEY=SPACE", help="A key that manages one space's restrictions.")
@click.option("--rate-limit", type=float, metavar="RPS", help="Token bucket per key.")
@click.option("--rate-burst", type=float, metavar="N",
              help="With --rate-limit: the bucket holds N requests (default: a second's worth).")
@click.option("--faults", metavar="SPEC", help="e.g. seed=7,error_rate=0.05,reset_rate=0.02,latency_ms=20")
@click.option("--errors-url", default=None, help="Base of the problem type URIs.")
@click.option("--space", "spaces", multiple=True, metavar="NAME",
              help="Create this space too, when missing (repeatable; default and research always exist).")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="Also answer requests whose Host is NAME (repeatable; loopback names and addresses always are).")
@observed()
def emulator(
    host: str, port: int, db: str | None, admin_key: str, reader_key: str, space_key: tuple[str, ...],
    rate_limit: float | None, rate_burst: float | None, faults: str | None, errors_url: str | None,
    spaces: tuple[str, ...], allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the API emulator over HTTP."""
    from reconciler.emulator import server_stack

    with server_stack("reconciler emulator"):
        from reconciler.emulator.core import DEFAULT_ERRORS_URL, EmulatorSettings
        from reconciler.emulator.server import serve

    space_keys: dict[str, str] = {}
    for item in space_key:
        key, sep, space = item.partition("=")
        if not sep or not key or not space:
            raise click.BadParameter(f"expected KEY=SPACE, got {item!r}", param_hint="--space-key")
        space_keys[key] = space
    serve(EmulatorSettings(
        host=host, port=port, db=db, admin_key=admin_key, reader_key=reader_key, space_keys=space_keys,
        rate_limit=rate_limit, rate_burst=rate_burst, faults=faults, errors_url=errors_url or DEFAULT_ERRORS_URL, spaces=spaces,
        allowed_hosts=allowed_hosts,
    ))


# The commands of their own modules: `promote`, `pull` and `watch` (reconciler/cli/promote.py, pull.py, watch.py).
main.add_command(promote)
main.add_command(pull)
main.add_command(watch)
