"""How the local engine answers a search, and where it shortcuts SQL.

A plan is checked against its table, compiled, and answered natively when it can be (a BM25 or
nearest-neighbour branch, or a reciprocal rank or min-max fusion of such branches:
:mod:`~hotdata_retrieval.engines.local.native`), with the rows of its compiled statement; any
other plan's statement runs on DataFusion, its nearest-neighbour shapes rewritten to
``nearest_scan`` (:mod:`~hotdata_retrieval.engines.local.fastpath`), as raw SQL is.

A plan's search parses no SQL: the native path reads the plan, the rewrite reads the compiled
tree and takes each filter as the predicate it was compiled from, and so does a
``hybrid_search`` call the ``hotdata-native`` profile compiles (its filter option's text is
read as the predicate the literal carries: :func:`~hotdata_retrieval.engines.local.hybrid.
compiled_filters`). ``tests/test_local_search_parses_no_sql.py`` makes sqlglot's parser raise
during a search of every plan shape, on both profiles. Only raw SQL (:func:`optimized`) is
parsed, once: it is the caller's text.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import sqlglot
from sqlglot import exp

from hotdata_retrieval._words import counted
from hotdata_retrieval.compile import HOTDATA, compile_plan, to_sql
from hotdata_retrieval.engines.checks import (
    ValueKind,
    check_column_kinds,
    check_columns,
    is_vector_type,
    merged_column_facts,
    merged_kinds,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local.fastpath import (
    DISTANCE_FUNCTIONS,
    Stash,
    restore_tie_breaks,
    rewrite_fast_paths,
)
from hotdata_retrieval.engines.local.hybrid import compiled_filters
from hotdata_retrieval.engines.local.native import native_rows
from hotdata_retrieval.engines.results import (
    SearchResult,
    executed_plan,
    result_from_candidates,
    search_result,
)
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import NearestNeighborSearch, SearchPlan, VectorSearch

if TYPE_CHECKING:
    from hotdata_retrieval.compile import DialectProfile
    from hotdata_retrieval.engines.local._catalog import OpenTables
    from hotdata_retrieval.engines.local._functions import EngineFunctions
    from hotdata_retrieval.engines.local._session import Sessions
    from hotdata_retrieval.engines.local.tables import LoadedTable


class SearchHost(Protocol):
    """What a search reads of the engine (the local engine meets it): its dialect profile,
    default catalog and schema, open tables, functions and sessions."""

    profile: DialectProfile
    catalog: str
    schema: str
    _open: OpenTables
    _functions: EngineFunctions
    _sessions: Sessions

    def _loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names (raises the engine's error when there is none)."""
        ...


logger = logging.getLogger(__name__)

_GENERATOR_DIALECT = HOTDATA.sqlglot_dialect()
"""Renders the statements the fast-path rewrite changed (one instance; it holds no state)."""


def search(engine: SearchHost, plan: SearchPlan) -> SearchResult:
    """``plan``'s hits on ``engine`` (module docstring); ``SearchResult.sql`` is the compiled
    statement either way.

    Raises:
        EngineError: a missing table, column or index, or an engine failure.
        PlanError: a query vector of the wrong length for its column.
    """
    loaded = {table: engine._loaded(table) for table in plan.tables}
    kinds = check_plan(plan, loaded)
    facts = merged_column_facts(
        [one.data.schema for one in loaded.values()],
        [one.column_facts() for one in loaded.values()],
    )
    executed = executed_plan(
        plan,
        # one table's own kinds as they are (read, never changed, by executed_plan)
        next(iter(kinds.values())) if len(kinds) == 1 else merged_kinds(kinds.values()),
        # a literal finer than a coarse timestamp column is folded onto its grid: DataFusion
        # casts it to the column's unit, cutting it (ms = '….250001' kept the row at .250)
        facts,
    )
    single = executed.single_table
    if (
        executed.group_by is not None or executed.after is not None or executed.facets
    ) and single is not None:
        # the native path ranks the candidates; the library forms the groups, the page or
        # the facet counts
        candidates = executed.candidates()
        ranked = native_rows(candidates, loaded[single])
        if ranked is not None:
            logger.debug("grouped search of %s ranked by the native path", single)
            return result_from_candidates(
                plan,
                search_result(
                    candidates, candidates, ranked, lambda: to_sql(executed, engine.profile)
                ),
            )
    rows = None if single is None else native_rows(executed, loaded[single])
    if rows is not None:
        # The native path reads no SQL: the statement is rendered if the caller reads it.
        logger.debug(
            "search of %s answered by the native path: %s", single, counted(len(rows), "row")
        )
        return search_result(plan, executed, rows, lambda: to_sql(executed, engine.profile))
    statement = to_sql(executed, engine.profile)
    # The tree, where the statement holds a nearest-neighbour shape to rewrite, a vector
    # branch's left-out key tie-break to put back, a table search to unbound (a table keyed
    # otherwise than the plan) or a hybrid_search call whose filter is read from the
    # predicate it was compiled from.
    vector_branch = any(
        isinstance(branch, (NearestNeighborSearch, VectorSearch)) for branch in executed.branches
    )
    rekeyed = {
        table: one.entry.rows
        for table, one in loaded.items()
        if executed.key_column is not None and one.entry.key_column != executed.key_column
    }
    tree = (
        compile_plan(executed, engine.profile)
        if vector_branch or rekeyed or engine.profile.native_hybrid_search
        else None
    )
    filters = compiled_filters(tree) if tree is not None else {}
    with engine._functions.stashed_vectors() as stash, engine._functions.compiled(filters):
        optimized = rewritten(engine, tree, stash, rekeyed) if tree is not None else None
        rows = engine._sessions.run(optimized or statement, statement).to_pylist()
    logger.debug(
        "search answered by its statement%s: %d rows",
        " as the engine rewrote it" if optimized else "",
        len(rows),
    )
    return search_result(plan, executed, rows, statement)


def optimized(engine: SearchHost, text: str, stash: Stash) -> str:
    """``text`` with its nearest-neighbour fast-path shapes answered natively; unchanged when
    it has none or does not parse."""
    lowered = text.lower()
    if not any(function in lowered for function in DISTANCE_FUNCTIONS):
        return text
    try:
        tree = sqlglot.parse_one(text, read=HOTDATA.sqlglot_dialect)
    except sqlglot.errors.SqlglotError:
        return text
    return rewritten(engine, tree, stash) or text


def rewritten(
    engine: SearchHost, tree: Any, stash: Stash, rekeyed: Mapping[TableName, int] | None = None
) -> str | None:
    """The tree rendered with its fast-path shapes rewritten (and their scans started), the
    key tie-breaks the declined ones left out put back (:func:`restore_tie_breaks`) and the
    table searches of the ``rekeyed`` tables unbounded (:func:`unbound_table_searches`), or
    ``None`` if it has none of these."""
    tree, count = rewrite_fast_paths(tree, lambda table: _fast_path_table(engine, table), stash)
    restored = restore_tie_breaks(tree)
    unbounded = unbound_table_searches(engine, tree, rekeyed) if rekeyed else 0
    if not count and not restored and not unbounded:
        return None
    if count:
        engine._functions.prefetch_scans(tree)
    # The tree is ours (parsed or compiled for this call): render it without sqlglot's
    # defensive deep copy, which costs more than the rest of the rewrite.
    return str(_GENERATOR_DIALECT.generate(tree, copy=False))


_TABLE_SEARCHES = frozenset(
    {HOTDATA.text_search_function, HOTDATA.semantic_search_function} - {None}
)
"""The table functions whose k cuts a tie at the k-th place by the table's key."""


def unbound_table_searches(engine: SearchHost, tree: Any, rekeyed: Mapping[TableName, int]) -> int:
    """Lift the k of each ``bm25_search`` and ``vector_search`` call in ``tree`` over a table
    of ``rekeyed`` (the tables whose key is not the plan's, with their row counts), and
    return how many were lifted.

    Such a function cuts a tie at its k-th place by the table's key, where the statement's
    ``ORDER BY <score>, <key> LIMIT`` then orders by the plan's: it would keep other tied rows
    than the plan's lowest keys, and pages of one search would repeat and skip rows.
    ``bm25_search`` without k returns every match; ``vector_search`` is given every row, so
    the statement's own ``ORDER BY ... LIMIT`` makes the cut.
    """
    lifted = 0
    for call in list(tree.find_all(exp.Anonymous)):
        name = str(call.this).lower()
        if name not in _TABLE_SEARCHES or len(call.expressions) != 4:
            continue
        reference = call.expressions[0]
        if not (isinstance(reference, exp.Literal) and reference.is_string):
            continue
        try:
            table = TableName.parse(
                str(reference.this), default_catalog=engine.catalog, default_schema=engine.schema
            )
        except PlanError:
            continue
        rows = rekeyed.get(table)
        if rows is None:
            continue
        if name == HOTDATA.text_search_function:
            call.set("expressions", call.expressions[:3])
        else:
            call.expressions[3].replace(exp.Literal.number(max(1, rows)))
        lifted += 1
    return lifted


def _fast_path_table(engine: SearchHost, table: Any) -> tuple[TableName, pa.Schema] | None:
    """The engine's table a statement's table node names, with its schema, or ``None``."""
    parts = [part for part in (table.catalog, table.db, table.name) if part]
    try:
        name = TableName.parse(
            ".".join('"' + part.replace('"', '""') + '"' for part in parts),
            default_catalog=engine.catalog,
            default_schema=engine.schema,
        )
    except PlanError:
        return None
    if (name.catalog, name.schema) != (engine.catalog, engine.schema):
        return None
    loaded = engine._open.find(name.name)
    if loaded is None:
        return None
    return name, loaded.data.schema


def check_search(engine: SearchHost, plan: SearchPlan) -> None:
    """Refuse ``plan`` as :func:`search` refuses it before it runs, without running it
    (``LocalEngine.check_plan``): :func:`check_plan` on its tables.

    Raises:
        EngineError: a missing table or column (naming the table's columns), a column that
            holds no vectors searched for nearest neighbours, a key column that is not unique.
        PlanError: a query vector of another length than its column's, a filter value its
            column's type cannot be compared with.
    """
    engine._open.refresh()
    check_plan(plan, {table: engine._loaded(table) for table in plan.tables})


def check_plan(
    plan: SearchPlan, loaded: dict[TableName, LoadedTable]
) -> dict[TableName, dict[str, ValueKind]]:
    """Refuse a plan its tables cannot answer: a missing column, a column of two kinds across
    the tables, a filter value of the wrong type, a key column that is not unique, a
    nearest-neighbour search of a column that holds no vectors or of another length; return
    each table's column kinds (in :attr:`SearchPlan.tables` order).

    Args:
        plan: the caller's plan.
        loaded: the open table of each of :attr:`SearchPlan.tables`, in its order (looked up
            once by the search, which reads them again).

    Raises:
        EngineError: naming the column and the table.
        PlanError: a query vector of the wrong length.
    """
    kinds = {table: one.column_kinds() for table, one in loaded.items()}
    # A plan of a shape that passed against this one table passes again (the checks read
    # no query, and an open table never changes), but for its query vectors' lengths. Of
    # a plan whose shape without its filter's values passed, only the filter's values are
    # checked (no other check reads them): a filter never seen before checks no more.
    shape = plan.checked_shape if len(loaded) == 1 else None
    unvalued = None if shape is None or plan.filter is None else plan.shape_without_values
    if shape is not None:
        ((table, one),) = loaded.items()
        if one.checked(shape):
            # the shape's columns are vectors of this table (checked when it passed)
            _check_vectors(plan, table, one, kinds_checked=True)
            return kinds
        if unvalued is not None and one.checked((_WITHOUT_VALUES, unvalued)):
            assert plan.filter is not None
            if table in plan.filtered_tables():
                one.check_filter(plan.filter)
            _check_vectors(plan, table, one)
            one.passed(shape)
            return kinds
    filtered = set(plan.filtered_tables())
    check_column_kinds(plan, kinds)
    for table, one in loaded.items():
        _check_table(plan, table, one, table in filtered, kinds[table])
        _check_vectors(plan, table, one)
    if shape is not None:
        one.passed(shape)
        if unvalued is not None:
            one.passed((_WITHOUT_VALUES, unvalued))
    return kinds


_WITHOUT_VALUES = "without values"
"""Tags a plan's :attr:`~hotdata_retrieval.plan.search.SearchPlan.shape_without_values` among
the shapes a table remembers, apart from full shapes."""


def _check_table(
    plan: SearchPlan,
    table: TableName,
    loaded: LoadedTable,
    filtered: bool,
    kinds: dict[str, ValueKind],
) -> None:
    """:func:`check_plan` for one of the plan's tables (``filtered``: the filter reads it;
    ``kinds``: its column kinds)."""
    entry = loaded.entry
    check_columns(plan, table, entry.columns, kinds)
    if filtered and plan.filter is not None:
        loaded.check_filter(plan.filter)
    if (
        plan.key_column is not None
        and plan.key_column != entry.key_column
        and not loaded.is_unique(plan.key_column)
    ):
        checked = (
            f"the table's key is '{entry.key_column}'"
            if entry.key_column
            else "the table was loaded without a key"
        )
        raise EngineError(
            f"key column '{plan.key_column}' is not unique in table '{table}' "
            f"({checked}): a search merges and returns rows by key, so a repeated key "
            f"would return a row more than once; search with key_column="
            f"'{entry.key_column or 'a unique column'}'"
        )


def _check_vectors(
    plan: SearchPlan, table: TableName, loaded: LoadedTable, *, kinds_checked: bool = False
) -> None:
    """Each nearest-neighbour branch searching ``table`` searches a vector column, with a
    query vector of its length (``kinds_checked``: the columns are known to hold vectors, a
    plan of this shape having passed against this table: only the lengths are checked)."""
    for branch in plan.branches:
        if isinstance(branch, NearestNeighborSearch) and table in branch.table.members:
            kind = None if kinds_checked else loaded.data.schema.field(branch.column).type
            if kind is not None and not is_vector_type(kind):
                raise EngineError(
                    f"column '{branch.column}' of table '{table}' holds {kind}, not "
                    "vectors (lists of floating-point numbers): a nearest-neighbour search needs a "
                    "vector column"
                )
            loaded.check_cosine_search(plan, table)
            # The column's own length, whoever made its vectors (the engine's embedder or the
            # caller): every path below (native, fast path, HNSW, DataFusion) would otherwise
            # fail in a distance kernel, each with its own message.
            dimensions = loaded.vector_dimensions(branch.column)
            if dimensions and dimensions != len(branch.query_vector):
                raise PlanError(
                    f"query vector has {counted(len(branch.query_vector), 'dimension')}; column "
                    f"'{branch.column}' holds {dimensions}",
                    field="query_vector",
                    value=len(branch.query_vector),
                )
