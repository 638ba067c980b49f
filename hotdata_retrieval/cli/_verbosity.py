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
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import click

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


_QUIET = "hotdata_retrieval.quiet"
_VERBOSE = "hotdata_retrieval.verbose"


def _quiet(ctx: click.Context, _parameter: click.Parameter, value: bool) -> None:
    ctx.meta[_QUIET] = value


def _verbose(ctx: click.Context, _parameter: click.Parameter, value: int) -> None:
    ctx.meta[_VERBOSE] = value


def _with_verbosity(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` run with standard error as ``--quiet`` and ``--verbose`` ask. It runs once
    the arguments are parsed, so a usage error is never silenced; an error the command raises
    leaves the context (standard error restored) before it is shown."""

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        with contextlib.ExitStack() as stack:
            if ctx.meta.get(_QUIET):
                stack.enter_context(_errors_only())
            verbose = ctx.meta.get(_VERBOSE, 0)
            if verbose:
                level = logging.INFO if verbose == 1 else logging.DEBUG
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
