"""Reading what a command is given as text or as a file, where ``-`` means standard input.

Every ``hdq`` argument that takes a query text (``hdq search QUERY``, ``hdq explain --query``)
or names a file to read (``hdq lint PATH``, ``--catalog``, ``--plan``, ``--vector @FILE``,
``--fusion-file``, ``hdq tune --queries`` and ``--qrels``) reads it through :func:`read_input`
or :func:`text_argument`, so ``-`` means standard input in all of them, a file is read the same
way (its bytes decoded as UTF-8, with no newline translation), and a file that cannot be read
is reported the same way, naming the argument and the file.

Standard input can be read once: a second argument given ``-`` in the same command is a usage
error naming both (``hdq search - --fusion-file -``), rather than an empty read. ``hdq load``
refuses ``-`` with the reason (the format of what it loads comes from the file's suffix).
"""

from __future__ import annotations

import errno
import os
import sys

import click

from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN

STDIN = "-"
"""The value that means standard input."""

_READER = "hotdata_retrieval.cli.stdin_reader"
"""``ctx.meta`` key (shared by a context and its children): the argument that read stdin."""


def is_stdin(value: str | os.PathLike[str]) -> bool:
    """Whether ``value`` (a path or text argument) is ``-``, standard input."""
    return os.fspath(value) == STDIN


def describe(name: str, value: str | os.PathLike[str]) -> str:
    """How messages name what ``name`` read: ``--plan from stdin`` or ``--plan 'plan.json'``.

    >>> describe("--plan", "-"), describe("--plan", "plan.json")
    ('--plan from stdin', "--plan 'plan.json'")
    """
    return f"{name} from stdin" if is_stdin(value) else f"{name} {os.fspath(value)!r}"


def _claim_stdin(name: str) -> None:
    """Record that ``name`` reads standard input, once per command line.

    Raises:
        click.UsageError: another argument of this command already read it.
    """
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return
    first = ctx.meta.get(_READER)
    if first is None:
        ctx.meta[_READER] = name
        return
    both = f"{name} is '-' twice" if first == name else f"{first} and {name} are both '-'"
    raise click.UsageError(f"{both}: standard input can be read only once", ctx=ctx)


def read_input(value: str | os.PathLike[str], name: str) -> str:
    """The text of the file ``value``, or of standard input when it is ``-``: its bytes
    decoded as UTF-8, with no newline translation (``\\r\\n`` and a lone ``\\r`` stay), and a
    byte order mark kept (the caller decides what it means).

    Args:
        value: a path, or ``-``.
        name: the argument as the user typed it (``--plan``, ``PATH``), for messages.

    Raises:
        click.BadParameter: the file (or standard input, also when it is closed) cannot be
            read (a usage error, exit 2), naming ``name`` and the file.
        click.UsageError: standard input was already read by another argument.
        CommandError: the bytes are not UTF-8 (a bad value, exit 1), naming ``name`` and the
            file: ``--plan 'plan.json' is not UTF-8 text: invalid start byte``.
    """
    try:
        if is_stdin(value):
            _claim_stdin(name)
            if sys.stdin is None:  # started with file descriptor 0 closed (``<&-``)
                raise OSError(errno.EBADF, "standard input is closed")
            data = sys.stdin.buffer.read()
        else:
            with open(value, "rb") as handle:
                data = handle.read()
    except OSError as error:
        where = "stdin" if is_stdin(value) else repr(os.fspath(value))
        raise click.BadParameter(
            f"cannot read {where}: {error.strerror or error}", param_hint=f"'{name}'"
        ) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CommandError(
            f"{describe(name, value)} is not UTF-8 text: {error.reason}",
            exit_code=EXIT_INVALID_PLAN,
        ) from None


def text_argument(value: str, name: str) -> str:
    """A text argument (a query): ``value`` itself, or for ``-`` the text of standard input
    without its trailing line breaks (as a shell's ``$(...)`` strips them, so ``echo q |``
    gives ``q``).

    Raises:
        click.UsageError: standard input was already read by another argument.
        click.BadParameter: standard input cannot be read.
        CommandError: standard input is not UTF-8.
    """
    if not is_stdin(value):
        return value
    return read_input(value, name).rstrip("\r\n")
