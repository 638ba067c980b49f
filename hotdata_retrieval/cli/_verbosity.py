"""``-q/--quiet`` and ``-v/--verbose`` on every ``hdq`` command.

- ``--quiet``: standard error carries errors only — no notes, summaries, warnings or progress
  bars. An error is still its one line (it is written after the command has stopped, to the
  real standard error).
- ``--verbose`` (``-v``; ``-vv`` for more): the library's log records on standard error,
  ``INFO`` and above with one ``-v`` (what a command did and how long it took), ``DEBUG`` with
  two (each decision: which path a search took, which model was loaded).

The group adds both options to each command when it loads it (:func:`add_verbosity_options`);
a command that already has a ``--quiet`` of its own (``hdq explain``, ``hdq lint``) keeps its
own (which silences its notes) and gains ``--verbose``. Standard output is never touched: it
carries only the command's artefact.

A command whose standard error is SQL comments (``hdq explain``: its output with both streams
redirected is a SQL script; :func:`logs_as_sql_comments`) has every log record written as
comment lines (``-- ...``): the library's warnings (else written bare by :mod:`logging`'s last
resort), any other library's, Python warnings, and with ``--verbose`` the records it shows.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import click

from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli.exit_codes import EXIT_USAGE

LOGGER_NAME = "hotdata_retrieval"
"""The logger whose records ``--verbose`` shows (the library's modules log under it)."""

_LOG_FORMAT = "%(name)s: %(levelname)s: %(message)s"


@contextlib.contextmanager
def _errors_only() -> Iterator[None]:
    """Standard error swallowed until the context closes (errors are shown after it)."""
    saved = sys.stderr
    sys.stderr = io.StringIO()
    try:
        yield
    finally:
        sys.stderr = saved


@contextlib.contextmanager
def _log_records(level: int, command: str) -> Iterator[None]:
    """The library's records at ``level`` and above on standard error, and a closing line
    with the command's wall time."""
    logger = logging.getLogger(LOGGER_NAME)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    handler.setLevel(level)
    saved_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(min(level, logger.getEffectiveLevel()))
    started = time.perf_counter()
    try:
        yield
    finally:
        logger.info("%s: finished in %.2f s", command, time.perf_counter() - started)
        logger.removeHandler(handler)
        logger.setLevel(saved_level)


class _SqlCommentFormatter(logging.Formatter):
    """Each line of a record (a traceback's too) as a SQL comment, ``-- `` before it."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(f"-- {line}".rstrip() for line in super().format(record).splitlines())


def _is_library_record(record: logging.LogRecord) -> bool:
    return record.name == LOGGER_NAME or record.name.startswith(f"{LOGGER_NAME}.")


def _warning_as_comment(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    for text in str(message).splitlines() or [""]:
        click.echo(f"-- {category.__name__}: {text}".rstrip(), err=True)


@contextlib.contextmanager
def _records_as_sql_comments(level: int | None, command: str) -> Iterator[None]:
    """Every record on standard error as SQL comment lines: the library's at ``level`` and
    above (``None``: warnings, as :mod:`logging` writes them unconfigured), any other
    logger's warnings, and Python warnings; with ``level``, a closing line with the command's
    wall time, as :func:`_log_records` writes."""
    root, library = logging.getLogger(), logging.getLogger(LOGGER_NAME)
    threshold = logging.WARNING if level is None else level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        _SqlCommentFormatter(_LOG_FORMAT if level is not None else "%(levelname)s: %(message)s")
    )
    handler.setLevel(threshold)
    handler.addFilter(
        lambda record: record.levelno >= logging.WARNING or _is_library_record(record)
    )
    saved_level = library.level
    library.setLevel(min(threshold, library.getEffectiveLevel()))
    root.addHandler(handler)  # one handler for every logger: logging's last resort never runs
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_as_comment
            yield
    finally:
        if level is not None:
            library.info("%s: finished in %.2f s", command, time.perf_counter() - started)
        root.removeHandler(handler)
        library.setLevel(saved_level)


_SQL_COMMENTS = "_hotdata_retrieval_sql_comments"


def logs_as_sql_comments(command: click.Command) -> click.Command:
    """Mark ``command`` as one whose standard error is SQL comments: its log records and
    warnings are written as ``-- `` lines (module doc), and its own ``--quiet`` (``hdq
    explain``'s: every note is a comment) leaves standard error to errors alone, as the
    ``--quiet`` of the other commands does. Returns it."""
    setattr(command, _SQL_COMMENTS, True)
    return command


_QUIET = "hotdata_retrieval.quiet"
_VERBOSE = "hotdata_retrieval.verbose"


def _quiet(ctx: click.Context, _parameter: click.Parameter, value: bool) -> None:
    ctx.meta[_QUIET] = value


def _verbose(ctx: click.Context, _parameter: click.Parameter, value: int) -> None:
    ctx.meta[_VERBOSE] = value


def _with_verbosity(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` run with standard error as ``--quiet`` and ``--verbose`` ask, and refused
    (a usage error) when standard output is closed. It runs once the arguments are parsed,
    so a usage error is never silenced; an error the command raises leaves the context
    (standard error restored) before it is shown."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        if sys.stdout is None:  # started with file descriptor 1 closed: output would be lost
            raise CommandError(
                "standard output is closed (>&-): the command writes its results there; "
                "redirect it to /dev/null to discard them",
                exit_code=EXIT_USAGE,
            )
        commented = getattr(ctx.command, _SQL_COMMENTS, False)
        with contextlib.ExitStack() as stack:
            if ctx.meta.get(_QUIET) or (commented and kwargs.get("quiet") is True):
                stack.enter_context(_errors_only())
            verbose = ctx.meta.get(_VERBOSE, 0)
            level = None if not verbose else logging.INFO if verbose == 1 else logging.DEBUG
            if commented:
                stack.enter_context(_records_as_sql_comments(level, ctx.command_path))
            elif level is not None:
                stack.enter_context(_log_records(level, ctx.command_path))
            return callback(*args, **kwargs)

    setattr(run, _WRAPPED, True)
    return run


_WRAPPED = "_hotdata_retrieval_verbosity"


def _has_option(command: click.Command, option: str) -> bool:
    return any(option in parameter.opts for parameter in command.params)


def add_verbosity_options(command: click.Command) -> click.Command:
    """Give ``command`` (and, for a group, each of its commands) ``-q/--quiet`` and
    ``-v/--verbose`` unless it has an option of that name already; returns it. Adding them
    twice adds nothing."""
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            add_verbosity_options(subcommand)
        return command
    if command.callback is None or getattr(command.callback, _WRAPPED, False):
        return command
    command.callback = _with_verbosity(command.callback)
    if not _has_option(command, "--quiet"):
        command.params.append(
            click.Option(
                ["-q", "--quiet"],
                is_flag=True,
                expose_value=False,
                callback=_quiet,
                help="Print errors only on stderr: no notes, warnings or progress.",
            )
        )
    if not _has_option(command, "--verbose"):
        command.params.append(
            click.Option(
                ["-v", "--verbose"],
                count=True,
                expose_value=False,
                callback=_verbose,
                help="Log what the command does on stderr (-vv: every step).",
            )
        )
    return command
