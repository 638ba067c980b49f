"""``hdq lint``: report the SQL shapes the Hotdata engine silently mis-handles, and fix the
safe ones.

Standard output carries the findings (``--format text``: one line each,
``FILE:LINE:COL: CODE [severity] message (fix: ...)``; ``--format json``: a JSON list of finding
objects). With ``--fix`` it carries the fixed SQL instead (text) or ``{"sql", "applied",
"findings"}`` (json), and the findings left over go to standard error. Exit codes:
:data:`EXIT_CLEAN`, :data:`EXIT_FINDINGS`, :data:`EXIT_ERROR`.

``--fix --write`` changes only the fixed statements' text: the file is read as bytes (no
newline translation), a UTF-8 byte order mark is kept, and the result is written to a
temporary file in the same directory, flushed to disk and renamed over the original
(:func:`write_atomically`), so a failed write leaves the original as it was.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import sys
import tempfile
from typing import Any, NoReturn

import click

from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.lint import (
    RULES,
    CatalogError,
    Finding,
    IndexCatalog,
    SqlParseError,
    fix,
    format_finding,
)
from hotdata_retrieval.lint import lint as lint_sql
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA

logger = logging.getLogger(__name__)

EXIT_CLEAN = 0
"""No findings (with ``--fix``: none left after fixing)."""

EXIT_FINDINGS = 1
"""At least one finding (with ``--fix``: at least one that could not be fixed)."""

EXIT_ERROR = 2
"""A usage error, an unreadable file or catalog, or SQL that does not parse (the parser's
message with its line and column on standard error)."""

_STDIN = "-"
_BOM = "\ufeff"


def _parse_codes(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return ()
    codes = tuple(code.strip().upper() for code in value.split(",") if code.strip())
    known = {rule.code for rule in RULES}
    unknown = [code for code in codes if code not in known]
    if unknown:
        raise click.BadParameter(
            f"unknown rule code(s) {', '.join(unknown)}; see --list-rules", ctx=ctx, param=param
        )
    return codes


def _list_rules(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for rule in RULES:
        notes = []
        if rule.needs_catalog:
            notes.append("needs --catalog")
        if rule.fixable:
            notes.append("--fix")
        suffix = f"  [{', '.join(notes)}]" if notes else ""
        click.echo(f"{rule.code}  {rule.severity.value:<7}  {rule.name}: {rule.summary}{suffix}")
    ctx.exit(EXIT_CLEAN)


def _fail(message: str) -> NoReturn:
    """Stop with ``hdq lint: error: <message>`` on stderr and :data:`EXIT_ERROR`."""
    raise CommandError(message, exit_code=EXIT_ERROR)


def _read_source(source: str) -> str:
    """The text of ``source`` exactly as stored: decoded from UTF-8 with no newline
    translation (``\\r\\n`` and a lone ``\\r`` stay as they are)."""
    try:
        if source == _STDIN:
            data = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as handle:
                data = handle.read()
        return data.decode("utf-8")
    except OSError as error:
        _fail(f"cannot read {source!r}: {error.strerror or error}")
    except UnicodeDecodeError as error:
        _fail(f"{_display(source)} is not UTF-8 text: {error.reason}")


def write_atomically(path: str, data: bytes) -> None:
    """Replace the file at ``path`` with ``data`` atomically: write a temporary file in the
    same directory, flush and ``fsync`` it, give it the original's permission bits, then
    ``os.replace`` it over the original (the target of a symbolic link, when ``path`` is
    one). On failure the temporary file is removed and the original is untouched.

    Raises:
        OSError: the file cannot be read, written, synced or replaced (``ENOSPC`` on a full
            disk, ``EACCES`` ...).
    """
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    mode = stat.S_IMODE(os.stat(target).st_mode)
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable, where supported
        directory_descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_descriptor)
        finally:
            os.close(directory_descriptor)


def _display(source: str) -> str:
    return "<stdin>" if source == _STDIN else source


def _load_catalog(path: str | None, **defaults: str) -> IndexCatalog | None:
    if path is None:
        return None
    try:
        return IndexCatalog.load(path, **defaults)
    except CatalogError as error:
        _fail(f"--catalog: {error}")


def _local_catalog(path: str) -> IndexCatalog:
    """The index catalog of a local database (``hdq load``): its BM25 and vector indexes and
    the key columns it checked unique on load."""
    if not os.path.isfile(os.path.join(path, "catalog.json")):
        _fail(f"--local-db: no local database at {path!r}")
    try:
        require_extra("local", needed_by="--local-db")
        from hotdata_retrieval.engines.local import LocalEngine

        with LocalEngine(path) as engine:
            tables = [engine.indexes(name) for name in sorted(engine.tables)]
            keyed = {name for name, entry in engine.tables.items() if entry.key_column}
    except HotdataRetrievalError as error:
        _fail(f"--local-db: {error}")
    catalog = IndexCatalog.from_table_indexes(tables, keys_unique=False)
    keys = IndexCatalog.from_table_indexes(
        [table for table in tables if table.table.name in keyed], keys_unique=True
    )
    return catalog.merged(IndexCatalog(tables=keys.tables))


def _summary(findings: list[Finding] | tuple[Finding, ...]) -> str:
    count = len(findings)
    fixable = sum(finding.fixable for finding in findings)
    noun = "finding" if count == 1 else "findings"
    extra = f" ({fixable} fixable with --fix)" if fixable else ""
    return f"{count} {noun}{extra}"


@click.command("lint")
@click.argument("source", metavar="FILE|-", required=False)
@click.option(
    "--catalog",
    "catalog_path",
    metavar="INDEXES.json",
    help="Index catalog (JSON; see docs/lint.md). Enables the rules that depend on which "
    "indexes exist, their metrics, their status and the tables' unique keys.",
)
@click.option(
    "--local-db",
    "local_db",
    metavar="DIR",
    help="Also read the index catalog of a local database (as made by 'hdq load').",
)
@click.option(
    "--print-catalog",
    is_flag=True,
    help="Print the index catalog built from --catalog and --local-db as JSON and exit.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: FILE:LINE:COL: CODE [severity] message (fix: ...). json: a list of findings.",
)
@click.option(
    "--fix",
    "apply_fixes",
    is_flag=True,
    help="Fix what is safe to fix and print the fixed SQL; remaining findings go to stderr.",
)
@click.option(
    "--write",
    is_flag=True,
    help="With --fix: write the fixed SQL back to FILE instead of printing it.",
)
@click.option(
    "--ignore",
    metavar="CODE,CODE,...",
    callback=_parse_codes,
    help="Rule codes to skip, comma-separated.",
)
@click.option(
    "--default-catalog",
    default=DEFAULT_CATALOG,
    show_default=True,
    help="Catalog that completes 1- and 2-part table names.",
)
@click.option(
    "--default-schema",
    default=DEFAULT_SCHEMA,
    show_default=True,
    help="Schema that completes 1-part table names.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no summary line on stderr.")
@click.option(
    "--list-rules",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_list_rules,
    help="List the rules and exit.",
)
@click.pass_context
def lint_command(ctx: click.Context, /, **params: Any) -> None:
    """Find the SQL shapes that silently lose an index, the ranking or the row count.

    Reads FILE ('-' for stdin), which may hold several statements. The rules
    that depend on indexes read --catalog and/or --local-db.

    \b
    Exit codes: 0 clean; 1 findings; 2 usage error, unreadable
    input or catalog, or SQL that does not parse.
    """
    defaults = {
        "default_catalog": params["default_catalog"],
        "default_schema": params["default_schema"],
    }
    catalog = _load_catalog(params["catalog_path"], **defaults)
    if params["local_db"] is not None:
        local = _local_catalog(params["local_db"])
        catalog = local if catalog is None else catalog.merged(local)
    if params["print_catalog"]:
        click.echo((catalog or IndexCatalog()).dumps(), nl=False)
        ctx.exit(EXIT_CLEAN)
    source: str | None = params["source"]
    if source is None:
        raise click.UsageError("Missing argument 'FILE|-'.", ctx=ctx)
    if params["write"] and not params["apply_fixes"]:
        raise click.UsageError("--write only applies with --fix", ctx=ctx)
    if params["write"] and source == _STDIN:
        raise click.UsageError("--write needs a FILE, not stdin", ctx=ctx)
    sql = _read_source(source)
    bom = _BOM if sql.startswith(_BOM) else ""  # kept on write; not part of the SQL
    sql = sql[len(bom) :]
    path = _display(source)
    try:
        if params["apply_fixes"]:
            result = fix(sql, catalog, ignore=params["ignore"], **defaults)
            findings = list(result.findings)
        else:
            findings = lint_sql(sql, catalog, ignore=params["ignore"], **defaults)
    except SqlParseError as error:
        where = f"{error.line}:{error.column}:" if error.line is not None else ""
        _fail(f"{path}:{where} parse error: {error.description}")
    except RecursionError:
        _fail(f"{path}: the SQL is nested too deeply to lint")
    except Exception as error:  # a bug must not surface as a traceback on bad input
        logger.debug("the linter failed on %s", path, exc_info=True)
        _fail(f"{path}: internal error while linting ({type(error).__name__}: {error})")

    if params["apply_fixes"]:
        if params["write"] and result.changed:
            try:
                write_atomically(source, (bom + result.sql).encode("utf-8"))
            except OSError as error:
                _fail(f"cannot write {source!r}: {error.strerror or error}; the file is unchanged")
        if params["output_format"] == "json":
            payload = {
                "sql": result.sql,
                "applied": [finding.to_dict() for finding in result.applied],
                "findings": [finding.to_dict() for finding in findings],
            }
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        elif not params["write"]:
            click.echo(result.sql, nl=not result.sql.endswith("\n"))
        if params["output_format"] == "text":
            for finding in findings:
                click.echo(format_finding(finding, path), err=True)
        if not params["quiet"]:
            fixed = len(result.applied)
            note = f"{path}: fixed {fixed}, {_summary(findings)} left"
            if params["write"] and result.changed:
                note += f"; wrote {os.fspath(source)}"
            click.echo(note, err=True)
    elif params["output_format"] == "json":
        payload_list = [finding.to_dict() for finding in findings]
        click.echo(json.dumps(payload_list, indent=2, ensure_ascii=False))
    else:
        for finding in findings:
            click.echo(format_finding(finding, path))
        if not params["quiet"] and findings:
            click.echo(f"{path}: {_summary(findings)}", err=True)
    ctx.exit(EXIT_FINDINGS if findings else EXIT_CLEAN)


lint = lint_command
"""The ``hdq lint`` command (register it with ``main.add_command(lint)``)."""
