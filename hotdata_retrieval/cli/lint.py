"""``hdq lint``: report the SQL shapes the Hotdata engine silently mis-handles, and fix the
safe ones.

It takes any number of PATHs: a file, a directory (its ``*.sql`` files, recursively, in sorted
order; hidden files and directories are left out) or ``-`` for standard input. Each file is
linted on its own, and every finding names its file. Standard output carries the findings
(``--format text``: one line each, ``FILE:LINE:COL: CODE [severity] message (fix: ...)``;
``--format json``: one JSON list of finding objects, each with its ``path``). With ``--fix``
each file is fixed on its own: text output carries the fixed SQL of the one input (more need
``--write``) and json ``[{"path", "sql", "applied", "findings"}, ...]``; the findings left
over go to standard error. A file that cannot be read or parsed is reported on standard error
and the others are still linted. Exit codes: :data:`EXIT_CLEAN`, :data:`EXIT_FINDINGS`,
:data:`EXIT_ERROR` (which wins over findings).

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
import tempfile
from collections.abc import Sequence
from typing import Any, NoReturn

import attrs
import click

from hotdata_retrieval._words import counted
from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._input import STDIN, is_stdin, read_input
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.lint import (
    RULES,
    CatalogError,
    Finding,
    FixResult,
    IndexCatalog,
    SqlParseError,
    fix,
    format_finding,
)
from hotdata_retrieval.lint import lint as lint_sql
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA

logger = logging.getLogger(__name__)

MAX_LINT_CHARACTERS = 16 * 1024 * 1024
"""The longest input ``hdq lint`` reads, in characters (16 MiB, about 250,000 one-line
statements): a longer file is refused before it is parsed, naming its length and this limit,
rather than linted for minutes (each statement costs about a millisecond)."""

EXIT_CLEAN = 0
"""No findings (with ``--fix``: none left after fixing)."""

EXIT_FINDINGS = 1
"""At least one finding in some file (with ``--fix``: at least one that could not be fixed)."""

EXIT_ERROR = 2
"""A usage error, an unreadable file, directory or catalog, or SQL that does not parse (the
parser's message with its line and column on standard error), in any of the inputs."""

_STDIN = STDIN
_BOM = "\ufeff"
_SQL_SUFFIX = ".sql"


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
    translation (``\r\n`` and a lone ``\r`` stay as they are); ``-`` is stdin.

    Raises:
        CommandError: it cannot be read, or is not UTF-8 (exit :data:`EXIT_ERROR`).
    """
    try:
        return read_input(source, "PATH")
    except click.BadParameter as error:
        _fail(error.message)
    except CommandError as error:  # not UTF-8: an input error here (exit 2), not a bad value
        _fail(error.format_message())


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
    """The catalog ``--catalog`` names (``-``: stdin), or ``None`` without one."""
    if path is None:
        return None
    try:
        return IndexCatalog.loads(read_input(path, "--catalog"), **defaults)
    except click.BadParameter as error:
        _fail(f"--catalog: {error.message}")
    except CommandError as error:  # not UTF-8 (the message names --catalog)
        _fail(error.format_message())
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
    extra = f" ({fixable} fixable with --fix)" if fixable else ""
    return f"{counted(count, 'finding')}{extra}"


@attrs.frozen(kw_only=True)
class _Options:
    """What ``hdq lint`` does with each file (its options, parsed)."""

    catalog: IndexCatalog | None
    ignore: tuple[str, ...]
    default_catalog: str
    default_schema: str
    apply_fixes: bool
    write: bool
    json: bool
    quiet: bool


@attrs.frozen(kw_only=True)
class _FileReport:
    """What linting one input found.

    Attributes:
        source: the file's path as given or found in a directory, or ``-`` for stdin.
        path: the name findings carry (``source``, or ``<stdin>``).
        findings: the findings (with ``--fix``: those left after fixing).
        fixed: with ``--fix``, what :func:`~hotdata_retrieval.lint.fix` did; else ``None``.
        wrote: whether ``--write`` replaced the file.
    """

    source: str
    path: str
    findings: tuple[Finding, ...]
    fixed: FixResult | None = None
    wrote: bool = False


def _check_usage(ctx: click.Context, paths: Sequence[str], params: dict[str, Any]) -> None:
    """Refuse the combinations of PATHs and options that cannot run (click's usage error)."""
    if not paths:
        raise click.UsageError("Missing argument 'PATH...'.", ctx=ctx)
    if paths.count(_STDIN) > 1:
        raise click.UsageError("'-' (stdin) can be given only once", ctx=ctx)
    if params["catalog_path"] is not None and is_stdin(params["catalog_path"]) and _STDIN in paths:
        raise click.UsageError(
            "--catalog and PATH are both '-': standard input can be read only once", ctx=ctx
        )
    if params["write"] and not params["apply_fixes"]:
        raise click.UsageError("--write only applies with --fix", ctx=ctx)
    if params["write"] and _STDIN in paths:
        raise click.UsageError("--write needs a FILE, not stdin", ctx=ctx)
    several = len(paths) > 1 or any(os.path.isdir(path) for path in paths)
    prints_sql = params["apply_fixes"] and not params["write"] and params["output_format"] == "text"
    if prints_sql and several:
        raise click.UsageError(
            "--fix without --write prints the fixed SQL of one FILE; for several files or a "
            "directory, add --write or --format json",
            ctx=ctx,
        )


def sql_files(directory: str) -> list[str]:
    """The ``*.sql`` files under ``directory``, recursively, sorted by their path components;
    hidden files and directories (``.git``, ``.venv``) are left out, and symbolic links to
    directories are not followed.

    Raises:
        CommandError: a directory under it cannot be listed, or it holds no ``*.sql`` file
            (exit :data:`EXIT_ERROR`).
    """
    found: list[str] = []

    def unreadable(error: OSError) -> NoReturn:
        where = error.filename if isinstance(error.filename, str) else directory
        _fail(f"cannot read directory {where!r}: {error.strerror or error}")

    for root, directories, files in os.walk(directory, onerror=unreadable):
        directories[:] = [name for name in directories if not name.startswith(".")]
        found.extend(
            os.path.normpath(os.path.join(root, name))
            for name in files
            if name.endswith(_SQL_SUFFIX) and not name.startswith(".")
        )
    if not found:
        _fail(f"directory {directory!r} holds no *{_SQL_SUFFIX} file")
    return sorted(found, key=lambda path: os.path.relpath(path, directory).split(os.sep))


def _expand_or_report(paths: Sequence[str]) -> list[str | None]:
    """Each PATH's inputs in order (a directory's ``*.sql`` files in its place), each file
    once; ``None`` in place of a directory that could not be expanded, once its error is on
    stderr."""
    inputs: list[str | None] = []
    seen: set[str] = set()
    for path in paths:
        try:
            sources = sql_files(path) if os.path.isdir(path) else [path]
        except CommandError as error:
            error.show()
            inputs.append(None)
            continue
        for source in sources:
            key = source if source == _STDIN else os.path.realpath(source)
            if key not in seen:
                seen.add(key)
                inputs.append(source)
    return inputs


def _lint_file(source: str, options: _Options) -> _FileReport:
    """Lint (with ``--fix``: fix, and with ``--write``: rewrite) one input.

    Raises:
        CommandError: the input cannot be read, is not UTF-8, is longer than
            :data:`MAX_LINT_CHARACTERS`, does not parse, or cannot be written (exit
            :data:`EXIT_ERROR`, the message naming the file).
    """
    sql = _read_source(source)
    bom = _BOM if sql.startswith(_BOM) else ""  # kept on write; not part of the SQL
    sql = sql[len(bom) :]
    path = _display(source)
    if len(sql) > MAX_LINT_CHARACTERS:
        _fail(
            f"{path}: {len(sql):,} characters; hdq lint reads at most {MAX_LINT_CHARACTERS:,} "
            "characters per file: split it into smaller files"
        )
    defaults = {
        "default_catalog": options.default_catalog,
        "default_schema": options.default_schema,
    }
    fixed: FixResult | None = None
    try:
        if options.apply_fixes:
            fixed = fix(sql, options.catalog, ignore=options.ignore, **defaults)
            findings = tuple(fixed.findings)
        else:
            findings = tuple(lint_sql(sql, options.catalog, ignore=options.ignore, **defaults))
    except SqlParseError as error:
        where = f"{error.line}:{error.column}:" if error.line is not None else ""
        _fail(f"{path}:{where} parse error: {error.description}")
    except RecursionError:
        _fail(f"{path}: the SQL is nested too deeply to lint")
    except Exception as error:  # a bug must not surface as a traceback on bad input
        logger.debug("the linter failed on %s", path, exc_info=True)
        _fail(f"{path}: internal error while linting ({type(error).__name__}: {error})")
    wrote = False
    if fixed is not None and options.write and fixed.changed:
        try:
            write_atomically(source, (bom + fixed.sql).encode("utf-8"))
        except OSError as error:
            _fail(f"cannot write {source!r}: {error.strerror or error}; the file is unchanged")
        wrote = True
    return _FileReport(source=source, path=path, findings=findings, fixed=fixed, wrote=wrote)


def _echo_text(report: _FileReport, options: _Options) -> None:
    """``--format text``: the report's findings (and fixed SQL), then its summary line."""
    if report.fixed is None:
        for finding in report.findings:
            click.echo(format_finding(finding, report.path))
        if not options.quiet and report.findings:
            click.echo(f"{report.path}: {_summary(report.findings)}", err=True)
        return
    if not options.write:
        click.echo(report.fixed.sql, nl=not report.fixed.sql.endswith("\n"))
    for finding in report.findings:
        click.echo(format_finding(finding, report.path), err=True)
    if not options.quiet:
        note = f"{report.path}: fixed {len(report.fixed.applied)}, {_summary(report.findings)} left"
        if report.wrote:
            note += f"; wrote {report.source}"
        click.echo(note, err=True)


def _json(reports: Sequence[_FileReport], *, fixed: bool) -> str:
    """``--format json``: one list of every file's findings, each with its ``path``; with
    ``--fix``, one ``{"path", "sql", "applied", "findings"}`` object per file."""

    def found(report: _FileReport, findings: Sequence[Finding]) -> list[dict[str, Any]]:
        return [{"path": report.path, **finding.to_dict()} for finding in findings]

    document: list[Any] = []
    for report in reports:
        if not fixed or report.fixed is None:
            document.extend(found(report, report.findings))
        else:
            document.append(
                {
                    "path": report.path,
                    "sql": report.fixed.sql,
                    "applied": found(report, report.fixed.applied),
                    "findings": found(report, report.findings),
                }
            )
    return json.dumps(document, indent=2, ensure_ascii=False)


@click.command("lint")
@click.argument("paths", metavar="PATH...", nargs=-1)
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
    help="text: FILE:LINE:COL: CODE [severity] message (fix: ...). json: a list of findings, "
    "each with its path.",
)
@click.option(
    "--fix",
    "apply_fixes",
    is_flag=True,
    help="Fix what is safe to fix, file by file, and print the fixed SQL (of one input; more "
    "need --write); remaining findings go to stderr.",
)
@click.option(
    "--write",
    is_flag=True,
    help="With --fix: write the fixed SQL back to each file instead of printing it.",
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

    Lints each PATH: a file, which may hold several statements; a directory,
    for its *.sql files (recursively, sorted; hidden ones left out); or '-'
    for stdin. Each finding names its file. The rules that depend on indexes
    read --catalog and/or --local-db.

    \b
    Exit codes: 0 clean; 1 findings; 2 usage error, unreadable
    input or catalog, or SQL that does not parse (in any file).
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
    paths: tuple[str, ...] = params["paths"]
    _check_usage(ctx, paths, params)
    options = _Options(
        catalog=catalog,
        ignore=params["ignore"],
        default_catalog=params["default_catalog"],
        default_schema=params["default_schema"],
        apply_fixes=params["apply_fixes"],
        write=params["write"],
        json=params["output_format"] == "json",
        quiet=params["quiet"],
    )
    reports: list[_FileReport] = []
    failed = False
    for source in _expand_or_report(paths):
        if source is None:
            failed = True
            continue
        try:
            report = _lint_file(source, options)
        except CommandError as error:
            error.show()
            failed = True
            continue
        if not options.json:
            _echo_text(report, options)
        reports.append(report)
    if options.json:
        click.echo(_json(reports, fixed=options.apply_fixes))
    if failed:
        ctx.exit(EXIT_ERROR)
    ctx.exit(EXIT_FINDINGS if any(report.findings for report in reports) else EXIT_CLEAN)


lint = lint_command
"""The ``hdq lint`` command (register it with ``main.add_command(lint)``)."""
