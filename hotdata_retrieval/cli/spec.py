"""``hdq spec``: the conformance kit of the ``hybrid_search`` spec (``docs/spec/hybrid_search.md``).

``hdq spec export DIR`` writes every case as JSON (fixture corpus with vectors, the plan, and
the expected keys, fused scores and per-branch ranks). ``hdq spec verify --engine local`` runs
every case on an engine as the compiled CTE statement and, where the engine has it, as one
native ``hybrid_search(...)`` call, and reports each difference. ``--engine`` takes every
registered engine (:mod:`hotdata_retrieval.engines.registry`): each case compiles for that
engine's own dialect, and LanceDB, which runs no SQL, runs each plan through its search. A
store's fixture tables go to ``--database`` (for SQLite, DuckDB and LanceDB a temporary one
by default, removed afterwards; PostgreSQL needs a URL).

Exit codes: 0 no case failed (a case the engine's dialect cannot express is reported as not
applicable); 1 a case failed, or the engine or the cases could not be opened (one line on
stderr); 2 a usage error.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from hotdata_retrieval._words import counted
from hotdata_retrieval.cli._errors import HdqGroup
from hotdata_retrieval.cli._local import reports_errors
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.engines.registry import engine_kind, engine_kinds

EXIT_NONCONFORMING = EXIT_INVALID_PLAN
"""``hdq spec verify``: at least one case failed (the same code as every other failure)."""


@click.group(name="spec", cls=HdqGroup)
def spec() -> None:
    """The hybrid_search spec's conformance cases: export them, verify an engine."""


@spec.command(name="export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@reports_errors
def export(directory: Path) -> None:
    """Write every conformance case to DIRECTORY as <case>.json, plus index.json.

    Standard output lists the case files written, one per line.
    """
    from hotdata_retrieval.spec import export_cases

    try:
        written = export_cases(directory)
    except OSError as error:
        raise click.ClickException(f"cannot write cases to {directory}: {error}") from None
    for path in written:
        click.echo(str(path))
    click.echo(f"wrote {counted(len(written), 'case')} and index.json to {directory}", err=True)


def _engine_help() -> str:
    named = ", ".join(kind.name for kind in engine_kinds())
    return (
        f"{named}, or package.module:factory (called with no arguments). Each case "
        "compiles for the engine's own dialect; an engine that runs no SQL (lancedb) runs "
        "each plan through its search."
    )


def _database_help() -> str:
    stores = "; ".join(
        f"{kind.name}: {kind.location}"
        + (f" (default ${kind.location_variable})" if kind.location_variable else "")
        for kind in engine_kinds()
        if not kind.embedded
    )
    return (
        "Where the fixture tables (spec_<case>) are loaded, replacing tables of those names: "
        f"{stores}. A file or directory defaults to a temporary one, removed afterwards; a "
        "server needs it. local: a database directory (default temporary)."
    )


@spec.command(name="verify")
@click.option("--engine", "engine_name", default="local", show_default=True, help=_engine_help())
@click.option("--database", default=None, metavar="LOCATION", help=_database_help())
@click.option(
    "--cases",
    "cases_directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A directory written by 'hdq spec export' (default: the built-in cases).",
)
@click.option("--case", "names", multiple=True, help="Run only this case (repeatable).")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one block per case and a summary. json: the whole report as one object.",
)
@reports_errors
def verify_command(
    engine_name: str,
    database: str | None,
    cases_directory: Path | None,
    names: tuple[str, ...],
    output_format: str,
) -> None:
    """Run every case on an engine in both forms and report each difference.

    The CTE form is the plan compiled for the engine's own dialect (hotdata for the local and
    Hotdata engines, sqlite, duckdb, postgres for those stores); on lancedb, which runs no SQL,
    the search form runs each plan through the engine's search instead. The native form is the
    same plan compiled to one hybrid_search(...) call, run only when the engine declares
    native_hybrid_search. Declared divergences of the CTE form are reported, not failed; a case
    the engine's dialect cannot express is reported as not applicable (N/A), not failed.
    """
    from hotdata_retrieval.spec import build_cases, load_cases, opened_engine, verify

    try:
        cases = build_cases() if cases_directory is None else load_cases(cases_directory)
    except RecursionError:
        raise click.ClickException("a case file is nested too deeply") from None
    if names:
        known = {case.name for case in cases}
        unknown = [name for name in names if name not in known]
        if unknown:
            raise click.UsageError(
                f"unknown case {unknown[0]!r}; cases: {', '.join(sorted(known))}"
            )
        cases = [case for case in cases if case.name in names]
    if database is None and engine_name in {kind.name for kind in engine_kinds()}:
        kind = engine_kind(engine_name)
        if not kind.embedded and not kind.location_is_path and not kind.location_variable:
            raise click.UsageError(f"--engine {engine_name} needs --database ({kind.location})")
    with opened_engine(engine_name, database) as engine:
        report = verify(engine, cases, engine_name=engine_name)
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(report.text())
    raise SystemExit(EXIT_OK if report.passed else EXIT_NONCONFORMING)
