"""``reconciler watch``: the command line of ``reconciler.watch`` (added to the group by ``main``)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

import click

from reconciler.cli.confine import confined
from reconciler.cli.environments import environments
from reconciler.cli.flags import APPROVE, connection_flags, flags_given, plan_flags
from reconciler.cli.observe import LOG_FORMAT
from reconciler.errors import ConfigError

#: apply's flags that watch refuses: they would send the same secrets again on every cycle.
PER_APPLY = ("rotate_secrets", "rotate", "since")
HIDDEN: dict[str, Any] = {name: {"hidden": True} for name in PER_APPLY}  # kept for their message, not listed


class _Parsed(click.ParamType[Any]):
    """A value read by ``parse`` (one of ``reconciler.watch``'s parsers, below)."""

    def __init__(self, name: str, parse: Callable[[str], Any]) -> None:
        self.name, self.parse = name, parse

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return self.parse(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _duration(text: str) -> float:
    from reconciler.watch import parse_duration  # imported when a value comes: not for --help

    return parse_duration(text)


def _address(text: str) -> tuple[str, int]:
    from reconciler.watch import parse_address

    return parse_address(text)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--interval", type=_Parsed("DURATION", _duration), default="5m", show_default=True,
              help="Time between cycles (jittered by ±10%): 30s, 5m, 1h.")
@click.option("--apply", "do_apply", is_flag=True, help="Apply what each cycle finds (self-heal), under apply's "
              "guards.")
@click.option("--metrics-addr", type=_Parsed("HOST:PORT", _address), metavar="HOST:PORT",
              help="Serve /metrics, /healthz and /readyz there (e.g. 0.0.0.0:9108).")
@click.option("--git-pull", is_flag=True, help="Run git pull --ff-only in the PATHs' work trees before each cycle.")
@click.option("--notify", "notify_url", metavar="URL", envvar="RECONCILER_NOTIFY_URL",
              help="POST a JSON summary (Slack-compatible `text`) when drift appears and when it is healed "
                   "(or RECONCILER_NOTIFY_URL; the URL is never logged).")
@click.option("--max-backoff", type=_Parsed("DURATION", _duration), default="10m", show_default=True,
              help="The longest wait after failed cycles (exponential backoff from min(interval, 30s)).")
@click.option("--request-retries", type=click.IntRange(0, 20), default=None,
              help="Retries of one failing request inside a cycle (default: the client's 6); the loop then "
                   "retries the whole cycle with its own backoff.")
@click.option("--once", is_flag=True, help="Run one cycle and exit: 0 in sync (or healed), 2 drift left, 1 failed.")
@APPROVE
@plan_flags(**HIDDEN)
@connection_flags
@LOG_FORMAT
@confined
@environments
def watch(paths: tuple[str, ...], interval: float, do_apply: bool, metrics_addr: tuple[str, int] | None,
          git_pull: bool, notify_url: str | None, max_backoff: float, request_retries: int | None, once: bool, verbose: bool,
          quiet: bool, log_format: str, approvals: tuple[str, ...], options: Any, conn: Any, chosen: Any) -> None:
    """Reconcile continuously: every interval reload the manifests, plan, report (and with --apply,
    heal). SIGTERM/SIGINT: the calls in flight finish, then it reports and exits 0. With --env or
    --all: every environment chosen in one process, each on its own schedule, the metrics labelled
    `environment`."""
    del quiet  # taken, as by every connecting command, and without effect: a cycle's lines are watch's output
    from reconciler.telemetry import Telemetry
    from reconciler.watch import WatchConfig, Watcher, check_notify_url

    notify_url = check_notify_url(notify_url) if notify_url is not None else None  # before anything starts
    if "-" in paths:
        raise ConfigError("watch reads its manifests again every cycle: standard input (-) cannot be read twice")
    for flag in flags_given(options, PER_APPLY):
        raise ConfigError(f"{flag} would send the same secrets again on every cycle: use it with apply")
    config = WatchConfig(paths=paths, interval=interval, apply=do_apply, options=options, git_pull=git_pull,
                         metrics_addr=metrics_addr, notify_url=notify_url, max_backoff=max_backoff, once=once,
                         request_retries=request_retries, approvals=approvals)
    if chosen is not None:
        sys.exit(_watch_environments(chosen, config, conn, log_format, verbose))
    telemetry = Telemetry(log_format=log_format)
    watcher = Watcher(config, conn, telemetry, out=click.echo, verbose=verbose)
    sys.exit(watcher.run())


def _watch_environments(chosen: Any, config: Any, conn: Any, log_format: str, verbose: bool) -> int:
    """Every chosen environment in one process: each its paths, var files, policies, endpoint and key
    from reconciler.yaml (the command line's --var-file and --policy after its own), all loaded and
    checked before any request (an environment of one account declaring another's space refused)."""
    import threading
    from dataclasses import replace

    from reconciler.cli.common import load
    from reconciler.environments import load_all, targets
    from reconciler.telemetry import Telemetry
    from reconciler.watch import Watcher, Watchers

    options = config.options
    chosen_targets = targets(chosen.project, chosen.names, conn, var_files=options.var_files,
                             policies=options.policies)
    load_all(chosen.project, chosen_targets, lambda t: load(t.paths, options.variables, t.var_files, t.policies))
    stop = threading.Event()
    sections = _Sections()
    watchers = {}
    for t in chosen_targets:
        watchers[t.name] = Watcher(
            replace(config, paths=t.paths, options=replace(options, var_files=t.var_files, policies=t.policies)),
            t.conn, Telemetry(log_format=log_format, environment=t.name),
            out=functools.partial(sections.echo, t.name), verbose=verbose, stop=stop, pulls=False)
    return Watchers(watchers, stop, metrics_addr=config.metrics_addr, once=config.once).run()


class _Sections:
    """What the environments print (a plan, an apply's report), under the heading plan --all prints,
    written again whenever another environment printed last."""

    def __init__(self) -> None:
        self.last: str | None = None

    def echo(self, environment: str, text: str) -> None:
        if environment != self.last:
            click.echo(f"=== environment {environment}")
            self.last = environment
        click.echo(text)
