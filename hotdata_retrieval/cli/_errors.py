"""One way for every ``hdq`` command to report an error.

Every error a command reports — a bad value, an unreadable file, a usage error found by click
— starts with one line on standard error::

    hdq <command>: error: <message>

(``hdq spec verify: error: ...``, ``hdq: error: No such command 'serch'. Did you mean
'search'?``). A usage error
(exit 2) follows it with the command's usage line and where to find its help. The message
names the user's option or argument (``--query``, ``QUERY``), never a plan's internal field
(``query_text``): each command maps :attr:`PlanError.field
<hotdata_retrieval.errors.PlanError.field>` to its options in one table, applied by
:func:`in_option_terms`.

:class:`HdqGroup` (the ``hdq`` group and its subgroups) turns whatever click exception a
command raises into a :class:`CommandError`, whose ``show`` writes that format; commands raise
:class:`CommandError` themselves for their own errors.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Mapping, Sequence
from typing import IO, Any

import click

from hotdata_retrieval.cli.exit_codes import EXIT_INTERRUPTED, EXIT_INVALID_PLAN
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError

PROGRAM = "hdq"
"""The name every error line starts with, however the program was started (``hdq``,
``python -m hotdata_retrieval``)."""

_COMMAND_PATH = "hotdata_retrieval.cli.command_path"
"""``ctx.meta`` key (shared by a context and its children): the subcommand names resolved so
far, outermost first."""

_NO_ARGS_IS_HELP: tuple[type[BaseException], ...] = tuple(
    kind
    for kind in (getattr(click.exceptions, "NoArgsIsHelpError", None),)
    if isinstance(kind, type)
)
"""click (8.2 and later) raises this to print a group's help when it is given no arguments:
not an error to reformat."""

_QUOTED = re.compile(r"""('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
"""A quoted value in a message (``'...'`` or ``"..."``): left as written."""


_LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
"""A line break (any :meth:`str.splitlines` splits at) and the blanks around it."""


def one_line(message: str) -> str:
    """``message`` on one line: its line breaks (engine errors span lines) folded into
    spaces, and every run of blanks into one, except inside a quoted value, whose blanks
    are the value's (``got '   '`` stays as typed).

    >>> one_line("a  \\n  b, got '   '")
    "a b, got '   '"
    """
    parts = _QUOTED.split(message.strip())  # odd positions hold the quoted values
    return "".join(
        _LINE_BREAK.sub(" ", part) if position % 2 else re.sub(r"\s+", " ", part)
        for position, part in enumerate(parts)
    )


def command_name(ctx: click.Context | None) -> str:
    """``hdq`` followed by the subcommands of ``ctx``'s command path (``hdq spec verify``),
    whatever the program was called; ``hdq`` alone without a context."""
    names: list[str] = []
    while ctx is not None:
        name = ctx.info_name or ctx.command.name or ""
        if ctx.parent is not None or ctx.command.name != PROGRAM:  # the group itself: "hdq"
            names.append(name)
        ctx = ctx.parent
    return " ".join([PROGRAM, *reversed([name for name in names if name])])


COMMAND_LINE_ADVICE: dict[str, str] = {
    "allow_empty": "give a query with a word to search for (letters or digits)",
}
"""A library parameter a :class:`~hotdata_retrieval.errors.PlanError`'s advice names (say
``pass allow_empty=True``) → what to do instead at the command line, which has no option
for it."""


def in_option_terms(error: BaseException, options: Mapping[str, str]) -> str:
    """``error``'s message on one line, with a :class:`~hotdata_retrieval.errors.PlanError`'s
    field named as the command's option: each whole-word occurrence of ``error.field``
    outside quoted values becomes ``options[error.field]`` (``query_text must not be empty``
    → ``QUERY must not be empty``), and so does each of its :attr:`~hotdata_retrieval.errors.
    PlanError.mentions` (``its options: weights, min_score`` → ``its options: --weights,
    --min-score``). Advice that names a parameter ``options`` lacks (:attr:`~hotdata_retrieval.
    errors.PlanError.advice`) is replaced by the command line's (:data:`COMMAND_LINE_ADVICE`),
    or left out. Other errors, and fields ``options`` does not name, keep their message."""
    if not isinstance(error, PlanError):
        return one_line(str(error))
    message = one_line(error.worded_for(options, COMMAND_LINE_ADVICE))
    fields = sorted(
        {name for name in (error.field, *error.mentions) if name and name in options},
        key=len,
        reverse=True,  # a longer name first, so "rank_constant" is not read as "rank"
    )
    if not fields:
        return message
    word = re.compile(
        r"(?<![\w-])(" + "|".join(re.escape(field) for field in fields) + r")(?![\w-])"
    )
    parts = _QUOTED.split(message)  # odd positions hold the quoted values
    return "".join(
        part if position % 2 else word.sub(lambda match: options[match.group(1)], part)
        for position, part in enumerate(parts)
    )


def similar_names(typed: str, names: Sequence[str]) -> list[str]:
    """The names in ``names`` close to ``typed`` (a mistyped command), most alike first:
    :func:`difflib.get_close_matches`, at most 3, similarity ratio 0.75 or more (``serch``
    is 0.91 like ``search``, 0.67 like ``spec``; ``laod`` 0.75 like ``load``)."""
    return difflib.get_close_matches(typed, list(names), n=3, cutoff=0.75)


def did_you_mean(names: Sequence[str]) -> str:
    """The suggestion for a mistyped command or option, worded as click words its own:
    ``Did you mean 'search'?`` or ``Did you mean one of: 'a', 'b'?``."""
    if len(names) == 1:
        return f"Did you mean {names[0]!r}?"
    return f"Did you mean one of: {', '.join(repr(name) for name in names)}?"


def _long_options(ctx: click.Context) -> list[str]:
    """Every ``--name`` option of ``ctx``'s command, ``--help`` included."""
    return [
        name
        for param in ctx.command.get_params(ctx)
        for name in (*param.opts, *param.secondary_opts)
        if name.startswith("--")
    ]


class CommandError(HotdataRetrievalError, click.ClickException):
    """An error a command reports (a library error, and a ``click.ClickException``):
    ``hdq <command>: error: <message>`` on standard error, then ``details`` lines, and exit
    ``exit_code``.

    Args:
        message: one line (line breaks are folded).
        exit_code: the exit status (default 1, :data:`~hotdata_retrieval.cli.exit_codes.
            EXIT_INVALID_PLAN`).
        command: the command to name (default: the command running, from click's context).
        details: lines printed after the error line (a usage error's usage and help hint).
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int = EXIT_INVALID_PLAN,
        command: str | None = None,
        details: Sequence[str] = (),
    ) -> None:
        super().__init__(one_line(message))
        setattr(self, "exit_code", exit_code)  # noqa: B010  (a class variable in click's stubs)
        self.command = command or command_name(click.get_current_context(silent=True))
        self.details = tuple(details)

    def show(self, file: IO[Any] | None = None) -> None:
        """Write the error line and the details to ``file`` (default: standard error)."""
        click.echo(f"{self.command}: error: {self.format_message()}", file=file, err=True)
        for line in self.details:
            click.echo(line, file=file, err=True)

    @classmethod
    def from_click(cls, error: click.ClickException, ctx: click.Context) -> CommandError:
        """The :class:`CommandError` for an exception click raised (or a command raised as
        click's): a usage error names the command it was found in and adds its usage line
        and help hint; others name the command resolved last under ``ctx``."""
        if isinstance(error, click.UsageError):
            where = error.ctx or ctx
            if isinstance(error, click.NoSuchOption) and error.option_name.startswith("--"):
                # click lists every option within its (lower) similarity cut-off, in
                # alphabetical order; suggest as for a command: the closest first.
                close = similar_names(error.option_name, _long_options(where))
                error = click.UsageError(
                    f"No such option {error.option_name!r}."
                    + (f" {did_you_mean(close)}" if close else ""),
                    ctx=where,
                )
            details = []
            usage = where.get_usage()
            if usage:
                details.append(usage)
            if where.command.get_help_option(where) is not None:
                details.append(f"Try '{command_name(where)} --help' for help.")
            return cls(
                error.format_message(),
                exit_code=error.exit_code,
                command=command_name(where),
                details=details,
            )
        path: list[str] = ctx.meta.get(_COMMAND_PATH, [])
        return cls(
            error.format_message(),
            exit_code=error.exit_code,
            command=" ".join([command_name(ctx), *path]),
        )


_PASS_THROUGH: tuple[type[BaseException], ...] = (CommandError, *_NO_ARGS_IS_HELP)
"""Exceptions :class:`HdqGroup` lets through as they are: already in the format, or not
errors."""


class HdqGroup(click.Group):
    """A click group whose errors, and its subcommands', are reported as
    :class:`CommandError` (one format for every command; see the module doc)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _PASS_THROUGH:
            raise
        except click.ClickException as error:
            raise CommandError.from_click(error, error_context(error, parent)) from None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except click.UsageError as error:
            # click (8.4 and later) suggests among the commands it has loaded so far; the lazy
            # group loads a command when it runs, so the suggestion is made here from them all.
            typed = args[0] if args else ""
            if typed.startswith("-") or self.get_command(ctx, typed) is not None:
                raise
            message = f"No such command {typed!r}."
            close = similar_names(typed, self.list_commands(ctx))
            if close:
                message += f" {did_you_mean(close)}"
            raise click.UsageError(message, ctx=error.ctx or ctx) from None
        if command is not None and not isinstance(command, HdqGroup):
            ctx.meta[_COMMAND_PATH] = [command.name or name or ""]
        return name, command, rest

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _PASS_THROUGH:
            raise
        except click.ClickException as error:
            raise CommandError.from_click(error, ctx) from None
        except UnicodeEncodeError as error:
            if error.encoding.replace("-", "").replace("_", "").lower() == "utf8":
                raise  # not the output's encoding (a UTF-8 stream writes every character)
            # PYTHONIOENCODING=ascii, a C locale's ASCII: one line, not a traceback. The
            # output is not rewritten with replacements: SQL and JSON must stay exact.
            character = error.object[error.start : error.end][:1]
            raise CommandError(
                f"the output's encoding, {error.encoding}, cannot write "
                f"U+{ord(character):04X}: set PYTHONIOENCODING=utf-8, or use a UTF-8 locale",
                command=command_name(ctx)
                + "".join(f" {name}" for name in ctx.meta.get(_COMMAND_PATH, [])),
            ) from None
        except KeyboardInterrupt:
            # Ctrl-C: exit 130 (128 + SIGINT, as a shell reports it), not click's "Aborted!"
            # and exit 1, which hdq lint uses for findings.
            click.echo("interrupted", err=True)
            raise SystemExit(EXIT_INTERRUPTED) from None


class LazyHdqGroup(HdqGroup):
    """An :class:`HdqGroup` whose commands are imported when one is run or its help is asked
    for, not when the group is built: ``hdq --help`` lists them from ``summaries``.

    Args:
        lazy_commands: each command's name and where it lives, ``"module:attribute"``.
        summaries: the one line ``--help`` lists each command with.
    """

    def __init__(
        self,
        *args: Any,
        lazy_commands: Mapping[str, str],
        summaries: Mapping[str, str],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)
        self.summaries = dict(summaries)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in self.lazy_commands:
            return command
        module, _, attribute = self.lazy_commands[cmd_name].partition(":")
        loaded = getattr(importlib.import_module(module), attribute)
        if not isinstance(loaded, click.Command):
            raise TypeError(f"{self.lazy_commands[cmd_name]} is not a click command")
        from hotdata_retrieval.cli._verbosity import add_verbosity_options

        self.add_command(add_verbosity_options(loaded), cmd_name)
        return loaded

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.summaries:
                rows.append((name, self.summaries[name]))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def error_context(error: click.ClickException, parent: click.Context | None) -> click.Context:
    """The context an error was found in: its own (a usage error's), else ``parent``, else a
    bare one for the ``hdq`` group."""
    own = getattr(error, "ctx", None)
    if isinstance(own, click.Context):
        return own
    if parent is not None:
        return parent
    return click.Context(click.Group(PROGRAM))
