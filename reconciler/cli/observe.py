"""``--log-format`` on every command and ``--metrics-file`` on plan, apply and drift: ``@observed()``
(``@observed(metrics_file=True)``), applied where each command is defined, adds the options and runs
the command observed. The run gets a ``Telemetry`` (kept on its click context,
``common.observer()``; the command passes it to ``workflow.connect``, and the workflow steps
report to the client's), ends with a ``command`` event (outcome, exit code, duration), and writes its
metrics file, whatever the ending. ``watch`` keeps its own telemetry: it takes ``@LOG_FORMAT`` alone.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reconciler.cli.common import TELEMETRY, NotRun
from reconciler.errors import ManifestError, ReconcilerError
from reconciler.telemetry import LOG_FORMATS, Telemetry

LAST_SUCCESS = "reconciler_last_successful_cycle_timestamp_seconds"

#: ``--log-format``, given to the callback as ``log_format`` (``watch``'s; ``observed`` takes it for the others).
LOG_FORMAT = click.option("--log-format", type=click.Choice(LOG_FORMATS), default="text", show_default=True,
                          envvar="RECONCILER_LOG_FORMAT",
                          help="json: one event a line on stderr (cycle, resource, action, outcome, timing).")
METRICS_FILE = click.option("--metrics-file", type=click.Path(dir_okay=False), metavar="FILE",
                            help="Write this run's metrics to FILE (Prometheus text format, atomically) for "
                                 "node_exporter's textfile collector.")


def observed(*, metrics_file: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--log-format`` (and with ``metrics_file``, ``--metrics-file``) on the command, which runs
    with a ``Telemetry`` of its own; the callback receives neither option."""
    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def run(*args: Any, log_format: str, metrics_file: str | None = None, **kwargs: Any) -> Any:
            return _run_observed(functools.partial(f, *args, **kwargs), log_format, metrics_file)

        if metrics_file:
            run = METRICS_FILE(run)
        return LOG_FORMAT(run)

    return decorate


def json_log_requested(args: list[str]) -> bool:
    """--log-format json among raw arguments (before, or instead of, their parsing), else
    RECONCILER_LOG_FORMAT=json."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--log-format" and i + 1 < len(args):
            return args[i + 1] == "json"
        if arg.startswith("--log-format="):
            return arg.split("=", 1)[1] == "json"
    return os.environ.get("RECONCILER_LOG_FORMAT") == "json"


def show_error(exc: click.ClickException, args: Any, *, exit_code: int) -> None:
    """A usage error (unknown option, bad value) as click shows it, or one ``error`` event under
    --log-format json: read from the raw arguments, since the error may be in parsing them."""
    if not json_log_requested(sys.argv[1:] if args is None else list(args)):
        exc.show()
        return
    ctx = getattr(exc, "ctx", None)
    Telemetry(log_format="json", metrics=False).event(
        "error", command=ctx.command_path if ctx is not None else "reconciler", outcome="usage_error",
        message=exc.format_message(), error_type=type(exc).__name__, exit_code=exit_code)


def _run_observed(callback: Callable[[], Any], log_format: str, metrics_file: str | None) -> Any:
    name = click.get_current_context().info_name or "reconciler"
    if metrics_file and not Path(metrics_file).resolve().parent.is_dir():
        raise ReconcilerError(f"--metrics-file {metrics_file}: the directory {Path(metrics_file).parent} "
                              "does not exist")
    telemetry = Telemetry(log_format=log_format, metrics=bool(metrics_file))  # figures only when written
    meta = click.get_current_context().meta
    previous, meta[TELEMETRY] = meta.get(TELEMETRY), telemetry
    started = time.monotonic()
    code: int = 0
    bad_manifests = usage_error = False
    try:
        return callback()
    except NotRun:  # refused before the run, as click refuses a bad option: no run to report
        usage_error = True
        raise
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        bad_manifests = name == "validate" and code == 1
        raise
    except ReconcilerError as exc:
        code, error, bad_manifests = exc.exit_code, str(exc), isinstance(exc, ManifestError)
        if log_format == "json":  # the error as an event, not as a second, unstructured line
            telemetry.event("error", command=name, outcome="error", message=error, error_type=type(exc).__name__)
            sys.exit(code)
        raise
    except BaseException:
        code = 1
        raise
    finally:
        meta[TELEMETRY] = previous
        if not usage_error:
            _ended(telemetry, name, code, bad_manifests, time.monotonic() - started, metrics_file)


def _ended(telemetry: Telemetry, name: str, code: int, bad_manifests: bool, duration: float,
           metrics_file: str | None) -> None:
    """The run's end: its outcome counted, its ``command`` event, its metrics file."""
    success = code in (0, 2)  # 2: changes (plan --detailed-exitcode) or drift: the run worked
    outcome = "ok" if success else "manifest_error" if bad_manifests else "error"
    if outcome == "manifest_error":
        telemetry.manifest_failed()
    telemetry.cycle_done(outcome, duration, success=success)
    telemetry.event("command", command=name, outcome=outcome, exit_code=code, duration_s=round(duration, 3))
    if metrics_file:
        _write_metrics(telemetry, metrics_file, success)


def _write_metrics(telemetry: Telemetry, path: str, success: bool) -> None:
    """Write the run's metrics; a failed run carries the last success time of the file it replaces
    forward (so ``time() - reconciler_last_successful_cycle_timestamp_seconds`` keeps counting from
    the last run that worked)."""
    if not success:
        previous = _previous_success(path)
        if previous is not None:
            telemetry.last_success.set(previous)
    try:
        telemetry.write_textfile(path)
    except OSError as exc:
        click.echo(f"Error: --metrics-file {path}: cannot write the metrics ({exc.strerror or exc})", err=True)


def _previous_success(path: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = Path(path).read_text(encoding="utf-8")
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == LAST_SUCCESS and sample.value > 0:
                    return float(sample.value)
    except (OSError, ValueError):
        return None
    return None
