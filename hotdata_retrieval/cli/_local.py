"""Shared pieces of the commands that use the local engine: the database option, embedders,
and turning library errors into one line on stderr (:mod:`hotdata_retrieval.cli._errors`)."""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

import click

from hotdata_retrieval.cli._errors import CommandError, in_option_terms
from hotdata_retrieval.cli._errors import one_line as one_line
from hotdata_retrieval.errors import HotdataRetrievalError

DEFAULT_DATABASE = ".hdq"
"""The local database directory, relative to the current directory."""

DATABASE_ENVIRONMENT_VARIABLE = "HDQ_DATABASE"

F = TypeVar("F", bound=Callable[..., Any])


def utf8_path(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Click callback: refuse a path whose name is not UTF-8 (its bytes reach Python as lone
    surrogates, which pyarrow, reading every file and database, cannot encode), naming it
    with its bytes escaped; other values (``None``, ``-``) pass.

    Raises:
        click.BadParameter: the path is not UTF-8 (exit 2).
    """
    if value is None:
        return value
    text = os.fspath(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        raise click.BadParameter(
            f"the path '{shown}' is not UTF-8 (pyarrow, which reads the files and the "
            "database, opens only UTF-8 paths); rename it",
            ctx=ctx,
            param=param,
        ) from None
    return value


def _database_option(description: str) -> Callable[[F], F]:
    return click.option(
        "--database",
        type=click.Path(path_type=Path),
        callback=utf8_path,
        default=DEFAULT_DATABASE,
        envvar=DATABASE_ENVIRONMENT_VARIABLE,
        show_default=True,
        show_envvar=True,
        help=description,
    )


database_option = _database_option(
    "The local database directory (with --engine: the store's file, directory or URL)."
)

table_database_option = _database_option(
    "The local database (with --engine: the store's file, directory or URL) whose table "
    "supplies the column options left out, as hdq search reads them; given, the plan is "
    "checked against the table."
)
"""``--database`` of ``hdq explain``: read when the options leave a column out, or when given
on the command line (to check the plan against the table)."""

local_database_option = _database_option("The local database directory.")
"""``--database`` of a command that runs on the local engine only (no ``--engine``)."""


def database_note(database: Path, *, created: bool) -> str:
    """The line ``hdq load`` and ``hdq demo`` end with: where the local database is (an
    absolute path: the default, ``.hdq``, is relative to the current directory) and how to
    remove it."""
    where = database.resolve()
    verb = "created" if created else "updated"
    return f"{verb} the local database {where}; to remove it: rm -r {shlex.quote(str(where))}"


def embedder_named(choice: str) -> Any:
    """The embedder for ``--embedder``: ``default`` (the offline model) or ``hashing``.

    Raises:
        EmbedderUnavailableError: the default model's packages are not installed.
    """
    from hotdata_retrieval.embed import HashingEmbedder, default_embedder

    if choice == "hashing":
        return HashingEmbedder()
    return default_embedder()


def embedder_for_model(model: str) -> Any:
    """The embedder that made vectors recorded under ``model``
    (:func:`hotdata_retrieval.embed.embedder_for_model`).

    Raises:
        HotdataRetrievalError: no installed embedder has that name.
    """
    from hotdata_retrieval.embed import embedder_for_model as installed

    return installed(model)


@overload
def reports_errors(command: F, /) -> F: ...


@overload
def reports_errors(*, options: Mapping[str, str]) -> Callable[[F], F]: ...


def reports_errors(
    command: F | None = None, /, *, options: Mapping[str, str] | None = None
) -> F | Callable[[F], F]:
    """Turn the library's errors into one line on stderr, ``hdq <command>: error: <message>``,
    and exit code 1 (never a traceback). ``options`` maps a
    :class:`~hotdata_retrieval.errors.PlanError`'s field to the command's option or argument,
    so the message names what the user typed (:func:`~hotdata_retrieval.cli._errors.
    in_option_terms`). Use it bare (``@reports_errors``) or with ``options``."""
    names: Mapping[str, str] = options or {}

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except CommandError:
                raise  # already in the format, with its own exit code
            except HotdataRetrievalError as error:
                raise CommandError(in_option_terms(error, names)) from None

        return wrapper  # type: ignore[return-value]

    return decorate if command is None else decorate(command)
