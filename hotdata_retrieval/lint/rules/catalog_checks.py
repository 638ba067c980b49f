"""Rules that need the index catalog: HDQ003, HDQ020-HDQ025.

Indexes are invisible in SQL (engine contract §1.7), so these rules read the catalog given
beside the SQL (:mod:`hotdata_retrieval.lint.catalog`) and stay silent without one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp

from hotdata_retrieval.compile.hotdata import HOTDATA
from hotdata_retrieval.indexes import IndexCatalog
from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import (
    BM25_SEARCH,
    VECTOR_SEARCH,
    Analysis,
    ColumnOrigin,
    DerivedSource,
    Source,
)
from hotdata_retrieval.lint.rules.base import Report, Rule
from hotdata_retrieval.plan.names import TableName


def _vector_rankings(
    analysis: Analysis,
) -> list[tuple[exp.Anonymous, TableName, str, object]]:
    """``(call, table, vector column, ranking)`` for each distance ranking over one table."""
    found: list[tuple[exp.Anonymous, TableName, str, object]] = []
    for ranking in analysis.rankings():
        table = analysis.scan_table(ranking)
        arguments = ranking.call.expressions
        if table is None or table.table is None or not arguments:
            continue
        if not isinstance(arguments[0], exp.Column):
            continue
        found.append((ranking.call, table.table, arguments[0].name.lower(), ranking))
    return found


def metric_mismatch(analysis: Analysis, report: Report) -> None:
    """The distance function must match the index's metric — ``l2_distance`` ↔ ``l2``,
    ``cosine_distance`` ↔ ``cosine``, ``negative_dot_product`` ↔ ``dot`` — or the rewrite is
    declined: a full scan, ranked by a metric the index was not built for. Engine contract
    §2.2 item 6, §2.3, §3.3 item 7, test vector 9; datafusion-vector-search-ext ``rule.rs``
    and its six ``*_no_rewrite`` metric tests."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for ranking in analysis.rankings():
        table = analysis.scan_table(ranking)
        arguments = ranking.call.expressions
        if table is None or table.table is None or not arguments:
            continue
        if not isinstance(arguments[0], exp.Column):
            continue
        index = catalog.vector_index(table.table, arguments[0].name)
        if index is None or index.metric is None or index.metric is ranking.metric:
            continue
        expected = HOTDATA.distance_function(index.metric)
        report(
            ranking.call,
            f"{ranking.call.name}() does not match the {index.metric.value} index on "
            f"{table.table}.{arguments[0].name.lower()}: the index is not used, and the "
            "ranking is not the one the index serves",
            f"use {expected}()",
        )


def _missing(catalog: IndexCatalog, table: TableName) -> str:
    return "no index" if not catalog.indexes_on(table) else "no such index"


def search_without_index(analysis: Analysis, report: Report) -> None:
    """``bm25_search`` needs a BM25 index on the column — there is no brute-force fallback:
    ``No BM25 index found on column '<col>' for <conn>.<schema>.<table>``. Engine contract
    §1.1, test vector 3; hotdata-langchain ``docs/engine-contract.md``."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for _, source in analysis.search_sources():
        if source.function.name != BM25_SEARCH or source.table is None or not source.column:
            continue
        if catalog.bm25_index(source.table, source.column) is None:
            report(
                source.call,
                f"the catalog lists no BM25 index on {source.table}.{source.column}: "
                f"{source.function.name}() fails (No BM25 index found on column "
                f"'{source.column}')",
                f"create a bm25 index on {source.column}, or search an indexed column",
            )


def semantic_without_index(analysis: Analysis, report: Report) -> None:
    """``vector_search`` takes the *text* column a provider-backed vector index was built over
    (its ``source_column``) and embeds the query with the index's provider; a plain vector
    index, or none, cannot serve it. ``vector_search_vector`` needs a loaded vector index on
    the vector column (``no loaded vector index for '<key>'``). Engine contract §1.2, §1.5,
    §1.7; hotdata-langchain 0.10.0 changelog, ``indexes.py``."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for _, source in analysis.search_sources():
        if source.table is None or not source.column:
            continue
        name = source.function.name
        if name == VECTOR_SEARCH:
            if catalog.provider_index(source.table, source.column) is not None:
                continue
            plain = catalog.vector_index(source.table, source.column)
            detail = (
                f"{source.column} is the vector column of a plain index; {name}() takes the "
                "text column a provider-backed index embeds"
                if plain is not None
                else f"the catalog lists no provider-backed vector index over "
                f"{source.table}.{source.column}"
            )
            report(
                source.call,
                f"{detail}: {name}() cannot run",
                "create a provider-backed vector index over the text column, or rank by a "
                "distance function over the vector column",
            )
        elif (
            source.function.vector_argument
            and catalog.vector_index(source.table, source.column) is None
        ):
            report(
                source.call,
                f"the catalog lists no vector index on {source.table}.{source.column}: "
                f"{name}() fails with 'no loaded vector index'",
                f"create a vector index on {source.column}",
            )


def pending_index(analysis: Analysis, report: Report) -> None:
    """An index whose status is ``pending`` is not built yet: a search against it fails, and
    a distance ranking over its column scans. Engine contract §1.7 (``IndexStatus``:
    ``ready`` / ``pending``; "A search against a pending index fails");
    hotdata-langchain ``indexes.py`` (only ready indexes are offered)."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for _, source in analysis.search_sources():
        if source.table is None or not source.column:
            continue
        name = source.function.name
        if name == BM25_SEARCH:
            index = catalog.bm25_index(source.table, source.column)
        elif name == VECTOR_SEARCH:
            index = catalog.provider_index(source.table, source.column)
        else:
            index = catalog.vector_index(source.table, source.column)
        if index is not None and not index.ready:
            report(
                source.call,
                f"the {index.kind.value} index on {source.table}.{source.column} is pending: "
                f"{name}() fails until it is ready",
                "wait for the index to be ready, or search another route",
            )
    for call, table, column, _ in _vector_rankings(analysis):
        index = catalog.vector_index(table, column)
        if index is not None and not index.ready:
            report(
                call,
                f"the vector index on {table}.{column} is pending: {call.name}() scans every "
                "row until it is ready",
                "wait for the index to be ready",
                severity=Severity.WARNING,
            )


def distance_without_index(analysis: Analysis, report: Report) -> None:
    """The distance functions work with no index at all — by full brute-force scan, always
    correct, at full-scan speed. A ranking over a column the catalog lists no vector index for
    is that scan. Engine contract §1.4 ("They work with no index at all"); hotdata-framework
    ``create_index`` docstring."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for call, table, column, _ in _vector_rankings(analysis):
        if catalog.vector_index(table, column) is None:
            report(
                call,
                f"the catalog lists no vector index on {table}.{column}: {call.name}() "
                "scores every row",
                f"create a vector index on {column} (metric matching {call.name})",
            )


def _gathered_branches(analysis: Analysis, select: exp.Select) -> frozenset[int]:
    """When ``select`` reads its FROM from a UNION of SELECTs — the gathered candidate keys of
    a fusion (``fused_keys``) — the queries (by ``id``) of the CTEs and subqueries that UNION's
    arms read; empty otherwise."""
    sources = analysis.sources(select)
    if not isinstance(select.args.get("from_"), exp.From) or not sources:
        return frozenset()
    first = sources[0]
    query = first.query.unnest() if isinstance(first, DerivedSource) else None
    if not isinstance(query, exp.Union):
        return frozenset()
    read: set[int] = set()
    pending: list[exp.Expr] = [query]
    while pending:  # a UNION of a thousand arms nests a thousand deep: no recursion
        node = pending.pop()
        if isinstance(node, exp.Union):
            pending.extend((node.expression, node.this))
        elif isinstance(node, exp.Subquery):
            pending.append(node.this)
        elif isinstance(node, exp.Select):
            read.update(
                id(source.query)
                for source in analysis.sources(node)
                if isinstance(source, DerivedSource)
            )
    return frozenset(read)


def _fusion_conditions(analysis: Analysis) -> Iterator[tuple[exp.Select, exp.Expr]]:
    """The ON conditions that join a fusion's branches, with the select holding them.

    Two to four branches chain ``FULL OUTER JOIN``s, every one of which counts; five or
    more gather every candidate key once (a ``fused_keys`` CTE: a UNION of each branch's
    keys) and ``LEFT JOIN`` each branch to it (``docs/sql-shapes.md``, Fusion): a ``LEFT
    JOIN`` counts when the select reads its FROM from such a UNION and the joined relation is
    one that UNION's arms read — a branch, not some other table."""
    for select in analysis.selects:
        joins = select.args.get("joins") or []
        gathered: frozenset[int] | None = None
        by_node: dict[int, Source] | None = None
        for join in joins:
            condition = join.args.get("on")
            if not isinstance(condition, exp.Expr):
                continue
            side = str(join.side or "").upper()
            if side == "FULL":
                yield select, condition
            elif side == "LEFT":
                if gathered is None or by_node is None:
                    gathered = _gathered_branches(analysis, select)
                    by_node = {id(source.node): source for source in analysis.sources(select)}
                source = by_node.get(id(join.this))
                if isinstance(source, DerivedSource) and id(source.query) in gathered:
                    yield select, condition


def fusion_key_not_unique(analysis: Analysis, report: Report) -> None:
    """A fusion joins its branches on a key — each to the next with ``FULL OUTER JOIN``, or,
    from five branches on, each with ``LEFT JOIN`` to the UNION of every branch's keys; a key
    that is not unique multiplies rows through the join and surfaces as *more than k rows*,
    not as an error. Uniqueness cannot be checked from SQL, so the catalog must declare it.
    Engine contract §3.3 item 10; hotdata-langchain ``hybrid_search_sql`` docstring;
    ``docs/sql-shapes.md`` (Fusion: five or more branches)."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for select, condition in _fusion_conditions(analysis):
        keys: dict[tuple[TableName, str], None] = {}
        for equality in condition.find_all(exp.EQ):
            for column in equality.find_all(exp.Column):
                origin = analysis.resolve(select, column, aliases=False)
                if isinstance(origin, ColumnOrigin) and origin.table is not None:
                    keys[(origin.table, origin.column)] = None
        for table, key in keys:
            if catalog.is_unique(table, [key]):
                continue
            report(
                condition,
                f"the fusion joins on {key}, which the catalog does not declare unique "
                f"for {table}: duplicate keys multiply rows, and more than k rows come back",
                f"join on a unique key, or declare {key} in the catalog's unique_keys for {table}",
            )


_TEXT_MATCHES: dict[type[exp.Expr], str] = {
    exp.Like: "LIKE",
    exp.ILike: "ILIKE",
    exp.RegexpLike: "a regular expression match",
    exp.RegexpILike: "a regular expression match",
    exp.SimilarTo: "SIMILAR TO",
}
"""The SQL that matches text by pattern, and how a finding names it."""

_PATTERN_SYNTAX = re.compile(r"[%_\\^$.*+?()\[\]{}|]+")


def _pattern_words(pattern: exp.Expr) -> str | None:
    """The words of a literal pattern (``'%disk full%'`` → ``disk full``), or ``None``."""
    if not isinstance(pattern, exp.Literal) or not pattern.is_string:
        return None
    words = " ".join(_PATTERN_SYNTAX.sub(" ", pattern.this).split())
    return words or None


def text_match_on_indexed_column(analysis: Analysis, report: Report) -> None:
    """``LIKE``, ``ILIKE``, ``~``/``~*`` (``regexp_like``) or ``SIMILAR TO`` on a column that
    has a BM25 index: a pattern match reads every row and ranks nothing, where the column's
    index finds the rows that hold the words, ranked by BM25. A negated match (``NOT ILIKE``)
    is an exclusion the search cannot express and is not reported.

    The finding exists because agents do this: measured across 24 runs on one model, an
    agent that had been told which column was searchable still wrote ``ILIKE`` against that
    very column; what changed its choice was a worked search call naming the column
    (the design notes' "SQL vs. search" finding, and engine contract's last section)."""
    catalog = analysis.catalog
    if catalog is None:
        return
    for node in analysis.find(*_TEXT_MATCHES):
        column = node.this
        while isinstance(column, (exp.Lower, exp.Upper)):  # lower(body) LIKE '%disk%'
            column = column.this
        if (
            not isinstance(column, exp.Column)
            or node.args.get("negate")
            or isinstance(node.parent, exp.Not)
        ):
            continue
        select = analysis.enclosing_select(node)
        if select is None:
            continue
        origin = analysis.resolve(select, column, aliases=False)
        if not isinstance(origin, ColumnOrigin) or origin.table is None:
            continue
        if catalog.bm25_index(origin.table, origin.column) is None:
            continue
        words = _pattern_words(node.expression) or "<words>"
        search = exp.Anonymous(
            this="bm25_search",
            expressions=[
                exp.Literal.string(str(origin.table)),
                exp.Literal.string(origin.column),
                exp.Literal.string(words),
                exp.var("k"),
            ],
        )
        report(
            node,
            f"{_TEXT_MATCHES[type(node)]} on {origin.table}.{origin.column}, which has a BM25 "
            "index: the pattern is matched against every row and nothing is ranked",
            f"search the index: SELECT ... FROM {search.sql(dialect=HOTDATA.sqlglot_dialect)} "
            "ORDER BY score DESC LIMIT k",
        )


RULES = [
    Rule(
        code="HDQ003",
        name="metric-mismatch",
        severity=Severity.ERROR,
        summary="a distance function that does not match the vector index's metric",
        check=metric_mismatch,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ020",
        name="bm25-without-index",
        severity=Severity.ERROR,
        summary="bm25_search on a column with no BM25 index",
        check=search_without_index,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ021",
        name="vector-search-without-index",
        severity=Severity.ERROR,
        summary="vector_search on a column with no provider-backed vector index",
        check=semantic_without_index,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ022",
        name="pending-index",
        severity=Severity.ERROR,
        summary="a search or ranking served by a pending index",
        check=pending_index,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ023",
        name="distance-without-index",
        severity=Severity.WARNING,
        summary="a distance ranking over a column with no vector index",
        check=distance_without_index,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ024",
        name="fusion-key-not-unique",
        severity=Severity.ERROR,
        summary="a fusion join (FULL OUTER, or LEFT to the gathered keys) on a key the "
        "catalog does not declare unique",
        check=fusion_key_not_unique,
        needs_catalog=True,
    ),
    Rule(
        code="HDQ025",
        name="pattern-match-on-bm25-column",
        severity=Severity.WARNING,
        summary="LIKE, ILIKE, a regular expression or SIMILAR TO on a column with a BM25 "
        "index, which the index would search and rank",
        check=text_match_on_indexed_column,
        needs_catalog=True,
    ),
]
