"""``hdq explain``: print the one SQL statement a search compiles to.

The plan is built from options (``--mode``, ``--table``, the query as ``QUERY`` or ``--query``,
``--vector``, ...) or read from a JSON plan document (``--plan``). When the options leave out a
column the mode needs (``--text-column``, ``--vector-column``, ``--vector``) but give a query,
the plan is made from the table's indexes in ``--database`` exactly as ``hdq search`` makes it
(:func:`hotdata_retrieval.cli.search.plan_table_search`). Standard output carries only the
requested artefact: the SQL, or with ``--format json`` one JSON object. Notes go to standard
error, as SQL comments, and so do log records and warnings
(:func:`~hotdata_retrieval.cli._verbosity.logs_as_sql_comments`). Exit codes:
:mod:`hotdata_retrieval.cli.exit_codes`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click
from click.core import ParameterSource

from hotdata_retrieval._words import counted
from hotdata_retrieval.cli._engines import ENGINE_DIALECTS, ENGINE_NAMES, query_embedder_option
from hotdata_retrieval.cli._errors import CommandError, in_option_terms
from hotdata_retrieval.cli._input import describe, is_stdin, read_input, text_argument
from hotdata_retrieval.cli._local import table_database_option
from hotdata_retrieval.cli._options import (
    FUSION_FLAGS,
    FUSION_OPTION_NAMES,
    VECTORS_ABBREVIATED_NOTE,
    full_vectors_option,
    fusion_options,
    fusion_settings,
    parse_names,
)
from hotdata_retrieval.cli._verbosity import logs_as_sql_comments
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.compile import get_dialect, to_sql
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.compile.render import to_display_sql
from hotdata_retrieval.errors import (
    HotdataRetrievalError,
    PlanError,
    UnknownDialectError,
    position_name,
)
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.lint import format_finding
from hotdata_retrieval.lint import lint as lint_sql
from hotdata_retrieval.plan.document import (
    PLAN_JSON_SCHEMA,
    plan_from_document,
    plan_to_document,
)
from hotdata_retrieval.plan.filters import And, Predicate
from hotdata_retrieval.plan.formula import describe_formula
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import (
    FACET_VALUES,
    Bm25Search,
    Branch,
    DistanceMetric,
    Fusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    bound_columns,
    make_fusion,
)
from hotdata_retrieval.plan.steps import describe_steps
from hotdata_retrieval.plan.values import json_type

MODES = ("text", "semantic", "nearest", "hybrid")
"""``--mode`` values: BM25, engine-embedded semantic, nearest-neighbour, and BM25 + nearest
fused (reciprocal rank fusion unless --fusion names another method)."""

_BRANCH_OPTIONS = ("text_column", "query", "vector_column", "vector", "metric")
_FUSION_OPTIONS = (*FUSION_OPTION_NAMES, "include_branch_scores")
_BUILDING_OPTIONS = (
    "table",
    "mode",
    *_BRANCH_OPTIONS,
    "filters",
    "columns",
    "key_column",
    "limit",
    "offset",
    *_FUSION_OPTIONS,
)
"""Options that build a plan; none may be combined with ``--plan``."""

_NEEDS: dict[str, tuple[str, ...]] = {
    "text": ("text_column", "query"),
    "semantic": ("text_column", "query"),
    "nearest": ("vector_column", "vector"),
    "hybrid": ("text_column", "query", "vector_column", "vector"),
}
_USES: dict[str, frozenset[str]] = {
    "text": frozenset(_NEEDS["text"]),
    "semantic": frozenset(_NEEDS["semantic"]),
    "nearest": frozenset((*_NEEDS["nearest"], "metric")),
    "hybrid": frozenset((*_NEEDS["hybrid"], "metric", *_FUSION_OPTIONS)),
}


OPTION_NAMES: dict[str, str] = {
    "query_text": "--query",
    "query_vector": "--vector",
    "text_column": "--text-column",
    "vector_column": "--vector-column",
    "key_column": "--key-column",
    "columns": "--columns",
    "filter": "--filter",
    "limit": "--limit",
    "offset": "--offset",
    "metric": "--metric",
    **FUSION_FLAGS,
    "catalog": "--catalog",
    "schema": "--schema",
    "mode": "--mode",
}
"""A plan field (:attr:`PlanError.field <hotdata_retrieval.errors.PlanError.field>`) → the
option that sets it, for messages about a plan built from options. A plan document's errors
keep the field names: they are the document's own keys."""


class InvalidPlanError(CommandError):
    """The plan is invalid or cannot be compiled: exit 1, one line on stderr,
    ``hdq explain: error: <message>``.

    A :class:`~hotdata_retrieval.errors.HotdataRetrievalError` like every error of the
    library, and a :class:`~hotdata_retrieval.cli._errors.CommandError` (a
    ``click.ClickException``) so that click prints it and exits with
    :data:`~hotdata_retrieval.cli.exit_codes.EXIT_INVALID_PLAN`.
    """


def _check_dialect(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return get_dialect(value).name
    except UnknownDialectError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


def _print_schema(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(json.dumps(PLAN_JSON_SCHEMA, indent=2, ensure_ascii=False))
    ctx.exit(EXIT_OK)


def _flag(ctx: click.Context, name: str) -> str:
    for param in ctx.command.params:
        if param.name == name and param.opts:
            return next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
    return name


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)


def _read_vector(text: str) -> list[int | float]:
    """``--vector``: a JSON array, ``@path`` to a file holding one, or ``-`` (or ``@-``) for
    stdin."""
    source = "--vector"
    if is_stdin(text) or text.startswith("@"):
        path = text.removeprefix("@")
        # "--vector from stdin", "--vector file 'v.json'": --vector itself may hold the JSON
        source = describe("--vector", path) if is_stdin(path) else f"--vector file {path!r}"
        text = read_input(path, "--vector")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlanError(
            f"{source} is not a JSON array of numbers: {error}", field="query_vector", value=text
        ) from None
    except RecursionError:
        raise PlanError(
            f"{source} is nested too deeply to read", field="query_vector", value=text[:80]
        ) from None
    if not isinstance(value, list):
        raise PlanError(
            f"{source} must be a JSON array of numbers, got a JSON {json_type(value)}",
            field="query_vector",
            value=value,
        )
    for position, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise PlanError(
                f"{source} must hold numbers; {position_name(position, len(value))} is {item!r}",
                field="query_vector",
                value=item,
            )
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise PlanError(f"duplicate key {key!r} in the plan document", field=key, value=value)
        result[key] = value
    return result


def _read_document(path: str) -> Mapping[str, Any]:
    """The JSON plan document ``--plan`` names (``-``: stdin)."""
    name = describe("--plan", path)
    text = read_input(path, "--plan")
    try:
        document = json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        raise PlanError(f"{name} is not valid JSON: {error}", field="plan") from None
    return document  # type: ignore[no-any-return]


def _mode(ctx: click.Context, params: Mapping[str, Any]) -> str:
    """The mode asked for, or inferred: both a query and --vector → hybrid, one → that one.

    Raises:
        click.UsageError: neither a mode, a query nor a vector.
    """
    mode: str | None = params["mode"]
    if mode is None:
        has_query, has_vector = params["query"] is not None, params["vector"] is not None
        if has_query and has_vector:
            mode = "hybrid"
        elif has_query:
            mode = "text"
        elif has_vector:
            mode = "nearest"
        else:
            raise click.UsageError(
                "give a query, QUERY or --query (text search), --vector (nearest-neighbour "
                "search) or both (hybrid), or --mode, or a plan document with --plan",
                ctx=ctx,
            )
    return mode


def _check_applies(ctx: click.Context, mode: str, params: Mapping[str, Any]) -> None:
    """Refuse an option ``mode`` does not use, rather than ignore it.

    Raises:
        click.UsageError: the first such option given.
    """
    for name in (*_BRANCH_OPTIONS, *_FUSION_OPTIONS):
        if name not in _USES[mode] and _given(ctx, name):
            raise click.UsageError(f"{_flag(ctx, name)} does not apply to --mode {mode}", ctx=ctx)


_READ_FROM_TABLE = ("text_column", "vector_column", "vector")
"""The options a mode needs that ``hdq explain`` reads from the table when they are left out
and a query is given."""


def _missing(ctx: click.Context, mode: str, params: Mapping[str, Any]) -> str | None:
    """The first option ``mode`` needs that is not given, or ``None``.

    Raises:
        click.UsageError: the query is missing, or another option the table cannot supply.
    """
    missing = [name for name in _NEEDS[mode] if params[name] is None]
    if not missing:
        return None
    if params["query"] is None or not set(missing) <= set(_READ_FROM_TABLE):
        raise click.UsageError(f"--mode {mode} needs {_flag(ctx, missing[0])}", ctx=ctx)
    return missing[0]


def _plan_from_table(
    ctx: click.Context, mode: str, missing: str, params: Mapping[str, Any]
) -> tuple[SearchPlan, str]:
    """The plan ``hdq search`` would run for these options (the columns left out read from
    the table's indexes in ``--database``), and a note saying where it came from.

    Raises:
        click.UsageError: no database to read the table from; an option the table decides.
        HotdataRetrievalError: as :func:`~hotdata_retrieval.cli.search.plan_table_search`.
    """
    from hotdata_retrieval.cli._engines import open_engine

    for name in ("metric", "catalog", "schema_name"):
        if _given(ctx, name):
            raise click.UsageError(
                f"{_flag(ctx, name)} does not apply when the table's columns are read from "
                f"--database (for the {_flag(ctx, missing)} left out): the table decides it",
                ctx=ctx,
            )
    engine_name: str = params["engine_name"] or "local"
    database = params["database"]
    try:
        if engine_name == "local" and not (database / "catalog.json").exists():
            # said before the local extra is asked for: the core install explains too
            raise click.UsageError("no database")
        engine = open_engine(engine_name, database)
    except click.UsageError:
        raise click.UsageError(
            f"--mode {mode} needs {_flag(ctx, missing)}, or a database holding table "
            f"{params['table']!r} to read it from (as hdq search does): there is no database at "
            f"{database}",
            ctx=ctx,
        ) from None
    vector = None if params["vector"] is None else _read_vector(params["vector"])
    with engine:
        if vector is not None:
            # Checked before the plan is made: a zero vector under cosine distance is left
            # out of a hybrid plan (the router answers by its text branch alone).
            indexes = engine.indexes(params["table"])
            given = params["vector_column"]
            columns = [given] if given else [index.column for index in indexes.vectors]
            _check_vector_fits(engine, indexes, columns, vector)
        _, plan = _table_plan(engine, engine_name, vector, params)
        _check_against_table(engine, plan)
    where = database if engine_name == "local" else f"the {engine_name} store {database}"
    note = f"planned from the indexes of table {plan.table} in {where}, as hdq search plans it"
    return plan, note


def _table_plan(
    engine: Any, engine_name: str, vector: list[int | float] | None, params: Mapping[str, Any]
) -> tuple[Any, SearchPlan]:
    """:func:`~hotdata_retrieval.cli.search.plan_table_search` for the options of ``hdq
    explain``; the table's indexes and the plan."""
    from hotdata_retrieval.cli.search import plan_table_search

    request = {
        name: params[name]
        for name in ("limit", "offset", "text_column", "vector_column", "key_column")
        if params[name] is not None
    }
    if params["columns"] is not None:
        request["columns"] = list(params["columns"])
    return plan_table_search(
        engine,
        engine_name,
        params["table"],
        params["query"],
        mode=params["mode"] or ("auto" if vector is None else "hybrid"),
        embedder_choice=params["embedder_choice"],
        fusion_params={name: params[name] for name in FUSION_OPTION_NAMES},
        embed_query=None if vector is None else (lambda _text: vector),
        filter=_filter(params["filters"]),
        include_branch_scores=params["include_branch_scores"],
        **request,
    )


def _check_against_table(engine: Any, plan: SearchPlan) -> None:
    """Refuse ``plan`` as ``hdq search`` would on ``engine`` before running it: the engine's
    own checks (its ``check_plan``, an optional capability: the local engine and the SQL
    stores; an engine without it is not asked).

    Raises:
        EngineError: a missing table or column, naming the table's columns.
        PlanError: a query vector of another length than its column's.
    """
    check_plan = getattr(engine, "check_plan", None)
    if callable(check_plan):
        check_plan(plan)


def _check_vector_fits(
    engine: Any, indexes: Any, columns: Sequence[str], vector: list[int | float]
) -> None:
    """Refuse ``vector`` when it fits none of ``columns`` (the vector columns it may be
    meant for), checked as a nearest-neighbour search of each would be.

    Raises:
        PlanError: it fits none: the first column's error (the lengths).
        EngineError: a column is missing.
    """
    first: PlanError | None = None
    for column in columns:
        probe = NearestNeighborSearch(
            table=indexes.table, column=column, query_vector=vector, metric=DistanceMetric.L2
        )
        try:
            _check_against_table(engine, SearchPlan(source=probe, key_column=indexes.key_column))
        except PlanError as error:
            first = first or error
        else:
            return
    if first is not None:
        raise first


def _check_on_database(params: Mapping[str, Any], plan: SearchPlan) -> None:
    """Check a plan built from options against its table in the ``--database`` given (as
    ``hdq search`` checks its plan before running it): a column the table lacks, a
    ``--vector`` of another length than its column's.

    Raises:
        click.UsageError: no database there.
        HotdataRetrievalError: as :func:`_check_against_table`; no such table.
    """
    from hotdata_retrieval.cli._engines import open_engine

    with open_engine(params["engine_name"] or "local", params["database"]) as engine:
        _check_against_table(engine, plan)


def _filter(texts: Sequence[str]) -> Predicate | None:
    predicates = [parse_filter(text) for text in texts]
    if not predicates:
        return None
    if len(predicates) == 1:
        return predicates[0]
    return And(operands=predicates)


def _build_plan(mode: str, params: Mapping[str, Any]) -> SearchPlan:
    table = TableName.parse(
        params["table"],
        default_catalog=params["catalog"],
        default_schema=params["schema_name"],
    )
    branches: list[Branch] = []
    if mode in ("text", "hybrid"):
        branches.append(
            Bm25Search(table=table, column=params["text_column"], query_text=params["query"])
        )
    if mode == "semantic":
        branches.append(
            VectorSearch(table=table, column=params["text_column"], query_text=params["query"])
        )
    if mode in ("nearest", "hybrid"):
        metric = params["metric"]
        branches.append(
            NearestNeighborSearch(
                table=table,
                column=params["vector_column"],
                query_vector=_read_vector(params["vector"]),
                metric=DistanceMetric.COSINE if metric is None else metric,
            )
        )
    source: Branch | Fusion = branches[0]
    if len(branches) > 1:
        method, settings = fusion_settings(params)
        source = make_fusion(method, branches, **settings)
    options: dict[str, Any] = {
        name: params[name]
        for name in ("columns", "limit", "offset", "key_column")
        if params[name] is not None
    }
    if params["include_branch_scores"]:
        options["include_branch_scores"] = True
    return SearchPlan(source=source, filter=_filter(params["filters"]), **options)


def _describe(branch: Branch) -> str:
    if isinstance(branch, Bm25Search):
        return f"BM25 full-text search over {branch.column}"
    if isinstance(branch, VectorSearch):
        return f"semantic search over {branch.column} (the engine embeds the query)"
    return (
        f"{branch.metric.value} nearest-neighbour search over {branch.column} "
        f"({counted(len(branch.query_vector), 'dimension')})"
    )


def _prelude(dialect: str) -> list[str]:
    """The statements a plain session of ``dialect`` runs before the library's SQL (none but
    DuckDB's ``LOAD`` of the fts extension's file)."""
    if dialect != "duckdb":
        return []
    try:
        require_extra("duckdb", needed_by="--prelude on the duckdb dialect")
        from hotdata_retrieval.engines.duckdb import session_prelude

        return session_prelude()
    except HotdataRetrievalError as error:
        raise CommandError(str(error)) from None


def _notes(plan: SearchPlan, dialect: str) -> list[str]:
    lines = [f"-- table {plan.table}, dialect {dialect}"]
    for name, branch in zip(plan.branch_names, plan.branches):
        lines.append(f"-- branch {name}: {_describe(branch)}")
    fusion = plan.fusion
    if fusion is None and plan.group_by is not None:
        lines.append(f"-- fetches {plan.depth} candidate rows for the groups")
    elif fusion is None and plan.after is not None:
        lines.append(f"-- fetches {plan.depth} candidate rows for the page after the cursor")
    elif fusion is None and plan.facets:
        lines.append(f"-- fetches {plan.depth} candidate rows for the page and the facets")
    elif fusion is None and not plan.steps:
        lines.append(f"-- fetches limit + offset = {counted(plan.depth, 'row')}")
    elif fusion is None:
        pass
    elif isinstance(fusion, ReciprocalRankFusion):
        weights = ", ".join(repr(weight) for weight in fusion.weights)
        lines.append(
            f"-- reciprocal rank fusion: rank constant {fusion.rank_constant!r}, "
            f"weights {weights}; {plan.depth} candidates per branch"
        )
    else:
        lines.append(f"-- {fusion.describe()}; {plan.depth} candidates per branch")
    if plan.formula is not None:
        lines.append(f"-- score formula: {describe_formula(plan.formula)}")
        lines.append(
            "-- the formula's score orders the rows, min_score and the page; the fused score "
            "and each term are returned beside it"
        )
    if fusion is not None and fusion.min_score is not None:
        lines.append(f"-- rows scoring below {fusion.min_score!r} are dropped before the page")
    if fusion is not None and plan.explain_scores:
        returned = (
            "rank, raw score and normalization bounds"
            if bound_columns("x", fusion)
            else "rank and raw score"
        )
        lines.append(
            f"-- explained scores: each branch's {returned} are returned, so each hit's "
            "branch contributions add up to its fused score"
        )
    for name, branch in plan.page_scored_branches:
        lines.append(
            f"-- page scores: branch {name}'s {branch.metric.value} distance is computed for "
            f"every hit it did not return, from {branch.column} in the final join"
        )
    lines.extend(f"-- {line}" for line in describe_steps(plan))
    cursor = plan.cursor
    if cursor is not None:
        ranking = plan.ranking_column if plan.fusion is None else "score"
        lines.append(
            f"-- continues after a cursor: rows ranked after {ranking} {cursor.value!r}, key "
            f"{cursor.key!r} ({counted(cursor.served, 'row')} served before it)"
        )
    if plan.group_by is not None:
        rows = "its best row" if plan.group_size == 1 else f"its best {plan.group_size} rows"
        lines.append(
            f"-- groups by {plan.group_by}: {plan.limit} groups from group {plan.offset + 1}, "
            f"each with {rows}, ranked by their best row; rows whose {plan.group_by} is NULL "
            "are left out"
        )
    if plan.facets:
        rows = (
            f"the first {plan.depth} fused rows"
            if fusion is not None
            else f"the first {plan.depth} ranked rows"
        )
        lines.append(
            f"-- counts the values of {', '.join(plan.facets)} among {rows} (passing the "
            f"filter): the {FACET_VALUES} most frequent each, NULL not counted"
        )
    return lines


@logs_as_sql_comments
@click.command("explain")
@click.argument("query_argument", metavar="[QUERY]", required=False)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    metavar="FILE",
    help="Read a JSON plan document from FILE ('-' for stdin) instead of building the plan "
    "from the options below. See --print-schema.",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    help="text: BM25 over --text-column. semantic: vector_search over --text-column (the "
    "engine embeds --query). nearest: nearest neighbours of --vector in --vector-column. "
    "hybrid: text and nearest fused (--fusion: reciprocal rank fusion by default). Default: "
    "hybrid with both "
    "--query and --vector, else text with --query, nearest with --vector.",
)
@click.option(
    "--table",
    metavar="NAME",
    help="Table to search: 'table', 'schema.table' or 'catalog.schema.table'.",
)
@click.option("--text-column", metavar="COLUMN", help="Text column (text, semantic, hybrid).")
@click.option(
    "--vector-column", metavar="COLUMN", help="Vector column (nearest, hybrid); never projected."
)
@click.option(
    "--query",
    metavar="TEXT",
    help="The query text, as QUERY: passed to the engine verbatim ('-': read it from stdin).",
)
@click.option(
    "--vector",
    metavar="JSON|@FILE",
    help="Query vector: a JSON array of numbers, '@path' to a file holding one, or '-' (also "
    "'@-') for stdin.",
)
@click.option(
    "--metric",
    metavar="NAME",
    help="Distance of the nearest-neighbour branch: cosine (default), l2 or dot; also "
    "euclidean (= l2), ip and inner_product (= dot). Must match the vector index.",
)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    metavar="SQL",
    help="A SQL condition applied inside every branch, e.g. \"lang = 'en' AND year >= 2020\". "
    "Repeat to AND several.",
)
@click.option(
    "--columns",
    metavar="COL,COL,...",
    callback=parse_names,
    help="Table columns to return, comma-separated. Default: the key column, then the text column.",
)
@click.option("--key-column", metavar="COLUMN", help="The table's unique key.  [default: id]")
@click.option("--limit", type=int, help="Rows returned (top-k).  [default: 10]")
@click.option("--offset", type=int, help="Rows skipped before them.  [default: 0]")
@fusion_options
@click.option(
    "--include-branch-scores",
    is_flag=True,
    help="Hybrid: also return each branch's rank and raw score.",
)
@click.option(
    "--catalog",
    default=DEFAULT_CATALOG,
    show_default=True,
    help="Catalog that completes 1- and 2-part table names.",
)
@click.option(
    "--schema",
    "schema_name",
    default=DEFAULT_SCHEMA,
    show_default=True,
    help="Schema that completes 1-part table names.",
)
@click.option(
    "--dialect",
    default="hotdata",
    show_default=True,
    callback=_check_dialect,
    help="SQL dialect to compile to.",
)
@click.option(
    "--engine",
    "engine_name",
    type=click.Choice(ENGINE_NAMES),
    help="Compile for this engine's dialect: local is hotdata; sqlite, postgres and duckdb "
    "their own (LanceDB runs no SQL).",
)
@table_database_option
@query_embedder_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["sql", "json"]),
    default="sql",
    show_default=True,
    help="sql: the statement alone. json: {sql, plan, dialect, depth, result_columns, "
    "findings} (and prelude, with --prelude).",
)
@full_vectors_option
@click.option(
    "--prelude",
    is_flag=True,
    help="Print first the statements a plain session of the dialect needs (DuckDB: LOAD of "
    "the fts extension's file), each ending in ';', so the output runs as a script.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print no notes on stderr.")
@click.option(
    "--print-schema",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_print_schema,
    help="Print the JSON Schema of plan documents and exit.",
)
@click.pass_context
def explain(ctx: click.Context, /, **params: Any) -> None:
    """Print the SQL statement a search compiles to, without running it.

    \b
    Exit codes: 0 ok; 1 invalid plan (one line on stderr names the bad
    value); 2 usage error.
    """
    plan_file: str | None = params["plan_file"]
    query_argument: str | None = params.pop("query_argument")
    query_name = "--query"
    if query_argument is not None:
        if params["query"] is not None:
            raise click.UsageError(
                "the query is given twice, as QUERY and as --query: give it once", ctx=ctx
            )
        params["query"], query_name = query_argument, "QUERY"
    if plan_file is not None:
        given = [_flag(ctx, name) for name in _BUILDING_OPTIONS if _given(ctx, name)]
        given += ["QUERY"] if query_argument is not None else []
        if given:
            raise click.UsageError(
                f"--plan cannot be combined with {', '.join(given)}: the plan document holds "
                "the whole search",
                ctx=ctx,
            )
    elif params["table"] is None:
        raise click.UsageError("--table is required (or give a plan document with --plan)", ctx=ctx)
    mode = None if plan_file is not None else _mode(ctx, params)
    missing = None if mode is None else _missing(ctx, mode, params)
    if mode is not None and (missing is None or _given(ctx, "mode")):
        # A mode inferred from a query alone, read from the table, is hdq search's auto: the
        # router then refuses an option the mode it chooses does not use.
        _check_applies(ctx, mode, params)
    dialect: str = params["dialect"]
    engine_name: str | None = params["engine_name"]
    if engine_name is not None:
        target = ENGINE_DIALECTS[engine_name]
        if target is None:
            raise click.UsageError(
                f"--engine {engine_name} runs no SQL: its searches run through its own API",
                ctx=ctx,
            )
        if _given(ctx, "dialect") and dialect != target:
            raise click.UsageError(
                f"--engine {engine_name} compiles for the {target} dialect, not --dialect "
                f"{dialect}",
                ctx=ctx,
            )
        dialect = target

    read_from: str | None = None
    try:
        if plan_file is not None:
            plan = plan_from_document(
                _read_document(plan_file),
                default_catalog=params["catalog"],
                default_schema=params["schema_name"],
            )
        else:
            assert mode is not None
            if params["query"] is not None:
                params["query"] = text_argument(params["query"], query_name)
            if missing is not None:
                plan, read_from = _plan_from_table(ctx, mode, missing, params)
            else:
                plan = _build_plan(mode, params)
                if ctx.get_parameter_source("database") is ParameterSource.COMMANDLINE:
                    _check_on_database(params, plan)
        sql = to_sql(plan, dialect, pretty=True)
        findings = lint_sql(sql) if dialect == "hotdata" else []
    except click.UsageError:
        raise
    except HotdataRetrievalError as error:
        names = {} if plan_file is not None else {**OPTION_NAMES, "query_text": query_name}
        raise InvalidPlanError(in_option_terms(error, names)) from None
    except RecursionError:
        raise InvalidPlanError("the plan is nested too deeply") from None

    prelude = _prelude(dialect) if params["prelude"] else []
    if not params["quiet"]:
        if read_from is not None:
            click.secho(f"-- {read_from}", err=True, dim=True)
        for line in _notes(plan, dialect):
            click.secho(line, err=True, dim=True)
        if dialect == "duckdb" and not params["prelude"]:
            click.secho(
                "-- a plain duckdb session needs the fts extension loaded first: --prelude "
                "prints the LOAD statement",
                err=True,
                dim=True,
            )
        for finding in findings:
            click.secho(f"-- {format_finding(finding, 'lint')}", err=True)
    if params["output_format"] == "json":
        payload = {
            "sql": sql,
            "plan": plan_to_document(plan),
            "dialect": dialect,
            "depth": plan.depth,
            "result_columns": list(plan.result_columns),
            "findings": [finding.to_dict() for finding in findings],
        }
        if params["prelude"]:
            payload["prelude"] = prelude
        if plan.steps:
            payload["steps"] = describe_steps(plan)
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        full: bool | None = params["full_vectors"]
        shown = sql
        if full is False or (full is None and sys.stdout.isatty()):
            shown = to_display_sql(plan, dialect, pretty=True)
        if shown != sql:
            click.echo(VECTORS_ABBREVIATED_NOTE)
        if params["prelude"]:
            for statement in prelude:
                click.echo(f"{statement};")
            shown += ";"
        click.echo(shown)
