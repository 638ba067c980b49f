"""The local engine's fast path for nearest-neighbour queries: the shape the Hotdata engine's
index rule rewrites, answered natively.

The Hotdata engine's ``USearchRule`` (engine contract §2.2-2.3) recognizes one query shape and
replaces its scan with a vector-index lookup::

    SELECT <columns>, cosine_distance(<vector column>, ARRAY[...]) AS <alias>
    FROM <catalog>.<schema>.<table> [WHERE <filter>]
    ORDER BY <alias> ASC LIMIT n [OFFSET m]

The local engine does the same, before planning: each ``SELECT`` of that shape — alone, or as a
CTE of a fused statement — becomes a read of the engine's ``nearest_scan`` table function,
which answers it from the column's float32 matrix with one BLAS product, a partial sort and a
float64 re-score (:class:`~hotdata_retrieval.engines.local.nearest.VectorColumnIndex`), the
filter applied as a row mask before the bound. Rows come back ordered by distance, then rowid,
so equal distances are ordered the same way on every page. A shape that does not match exactly
(another ``ORDER BY``, no ``LIMIT``, a join, a filter outside the filter grammar, a projected
vector column) is left alone and runs as written, with the row-by-row distance functions; the
results are the same rows either way. A compiled branch the rewrite declines is given back
the key tie-break its ``ORDER BY`` left out for the index's sake (:func:`restore_tie_breaks`),
so its ties too come in key order.

The mask is built from a predicate tree, never from SQL text the library wrote: a statement
compiled from a plan carries its filter's predicate on its ``WHERE`` node
(:data:`~hotdata_retrieval.compile.compiler.COMPILED_FILTER`), and a statement a caller wrote
has its parsed ``WHERE`` read as filter text reads one
(:func:`~hotdata_retrieval.compile.filter_text.filter_from_expression`). The predicate is
stashed with the query vector and ``nearest_scan`` reads both by one key.

This is a rewrite of the engine's own plan, as an optimizer rule is: the statement a caller
sent (and ``SearchResult.sql``) is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pyarrow as pa
from sqlglot import exp

from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.compile.compiler import (
    COMPILED_FILTER,
    LEFT_OUT_TIE_BREAK,
    column,
    ordered,
)
from hotdata_retrieval.compile.filter_text import filter_from_expression
from hotdata_retrieval.compile.nodes import VectorLiteral
from hotdata_retrieval.engines.local.masks import reads_as_sql
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import TableName

NEAREST_SCAN = "nearest_scan"
"""The table function the rewritten shape reads (local engine only)."""

TIE_COLUMN = "__hdq_tie"
"""The column ``nearest_scan`` adds, the tie-break after the distance: each row's position in
the key's order (``LoadedTable.tie_order``: the compiled plan's key, else the table's; its rowid
without one), so equal distances are ordered by key as on every store."""

DISTANCE_COLUMN = "_distance"

DISTANCE_FUNCTIONS = frozenset(HOTDATA.distance_metrics)


def _literal_number(node: Any) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = int(node.this)
        except ValueError:
            return None
        return value if value >= 0 else None
    return None


def vector_values(node: exp.Expr) -> list[float]:
    """The numbers of a query-vector node from :func:`_vector_argument`.

    >>> vector_values(VectorLiteral(this="ARRAY[0.5, -1.0, 2e-05]"))
    [0.5, -1.0, 2e-05]
    """
    if isinstance(node, VectorLiteral):
        text = str(node.this)
        inner = text[text.index("[") + 1 : text.rindex("]")]
        return [float(part) for part in inner.split(",")]
    values = []
    for item in node.expressions:
        if isinstance(item, exp.Neg):
            values.append(-float(item.this.this))
        else:
            values.append(float(item.this))
    return values


def _vector_argument(node: exp.Expr) -> exp.Expr | None:
    """The query vector, when it is a literal: a compiled ``VectorLiteral`` or an ``ARRAY[...]``
    of number literals (possibly negated)."""
    if isinstance(node, VectorLiteral):
        return node
    if isinstance(node, exp.Array) and node.expressions:
        for item in node.expressions:
            inner = item.this if isinstance(item, exp.Neg) else item
            if not (isinstance(inner, exp.Literal) and not inner.is_string):
                return None
        return node
    return None


def _distance_call(node: exp.Expr) -> tuple[str, str, exp.Expr] | None:
    """``(function, vector column, query vector node)`` of a distance call, or ``None``."""
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in DISTANCE_FUNCTIONS:
        return None
    arguments = node.expressions
    if len(arguments) != 2 or not isinstance(arguments[0], exp.Column):
        return None
    if arguments[0].table:
        return None
    vector = _vector_argument(arguments[1])
    if vector is None:
        return None
    return node.name.lower(), arguments[0].name, vector


def where_filter(where: exp.Where) -> Predicate | None:
    """The predicate a ``WHERE`` keeps rows by: the one it was compiled from
    (:data:`~hotdata_retrieval.compile.compiler.COMPILED_FILTER`), or its condition read as
    filter text reads one (a statement a caller wrote); ``None`` when it is outside the
    filter grammar."""
    compiled = where.meta.get(COMPILED_FILTER)
    if compiled is not None:
        return cast(Predicate, compiled)
    try:
        return filter_from_expression(where.this)
    except HotdataRetrievalError:
        return None


Stash = Callable[[list[float], Predicate | None, str | None], str]
"""Puts a statement's scan aside — its query vector, its filter and the column its ties are
ordered by (``None``: the table's key) — and returns the key ``nearest_scan`` reads them by."""


def _match(
    select: exp.Select,
    resolve: Callable[[exp.Table], tuple[TableName, pa.Schema] | None],
    stash: Stash,
) -> exp.Select | None:
    """The rewritten select, or ``None`` when ``select`` is not exactly the fast-path shape."""
    for unsupported in ("joins", "group", "having", "distinct", "qualify", "windows", "with_"):
        if select.args.get(unsupported):
            return None
    source = select.args.get("from_")
    if source is None or not isinstance(source.this, exp.Table):
        return None
    table = source.this
    if not isinstance(table.this, exp.Identifier) or table.alias:
        return None
    resolved = resolve(table)
    if resolved is None:
        return None
    name, schema = resolved
    columns = frozenset(schema.names)
    if DISTANCE_COLUMN in columns or TIE_COLUMN in columns:
        return None
    distance: tuple[str, str, exp.Expr] | None = None
    alias = ""
    projected: list[exp.Expr] = []
    for item in select.expressions:
        if isinstance(item, exp.Column) and not item.table and item.name in columns:
            projected.append(item.copy())
            continue
        if isinstance(item, exp.Alias) and distance is None:
            call = _distance_call(item.this)
            if call is not None:
                distance, alias = call, item.alias
                projected.append(
                    exp.column(DISTANCE_COLUMN)
                    if alias == DISTANCE_COLUMN
                    else exp.Alias(this=exp.column(DISTANCE_COLUMN), alias=exp.to_identifier(alias))
                )
                continue
        return None
    if distance is None:
        return None
    function, vector_column, vector = distance
    if vector_column not in columns or any(
        isinstance(item, exp.Column) and item.name == vector_column for item in select.expressions
    ):
        return None  # a projected vector column declines the rewrite, as the index rule does
    order = select.args.get("order")
    if order is None or len(order.expressions) != 1:
        return None
    (ordered,) = order.expressions
    if ordered.args.get("desc") or not isinstance(ordered.this, exp.Column):
        return None
    if ordered.this.table or ordered.this.name != alias:
        return None
    limit = select.args.get("limit")
    count = _literal_number(limit.expression) if isinstance(limit, exp.Limit) else None
    offset_node = select.args.get("offset")
    offset = 0 if offset_node is None else _literal_number(offset_node.expression)
    if count is None or offset is None:
        return None
    predicate: Predicate | None = None
    where = select.args.get("where")
    if where is not None:
        predicate = where_filter(where)
        if predicate is None or not reads_as_sql(predicate, schema):
            return None  # the scan's row mask would keep other rows than the WHERE
    scan = exp.Anonymous(
        this=NEAREST_SCAN,
        expressions=[
            exp.Literal.string(str(name)),
            exp.Literal.string(vector_column),
            exp.Literal.string(function),
            # The vector is handed over by reference: DataFusion spends milliseconds parsing,
            # folding and converting a 384-number ARRAY literal.
            # So is the filter: the mask is built from the predicate, never from SQL text.
            # Ties by the key the compiled branch left out of its ORDER BY (the plan's, which
            # may be another unique column than the table's), else by the table's key.
            exp.Literal.string(
                stash(vector_values(vector), predicate, order.meta.get(LEFT_OUT_TIE_BREAK))
            ),
            exp.Literal.number(count + offset),
            exp.Null(),
        ],
    )
    rewritten = exp.Select(
        expressions=projected,
        from_=exp.From(this=exp.Table(this=scan)),
        order=exp.Order(
            expressions=[
                exp.Ordered(this=exp.column(alias), desc=False, nulls_first=False),
                exp.Ordered(this=exp.column(TIE_COLUMN), desc=False, nulls_first=False),
            ]
        ),
        limit=exp.Limit(expression=exp.Literal.number(count)),
    )
    if offset:
        rewritten.set("offset", exp.Offset(expression=exp.Literal.number(offset)))
    return rewritten


def rewrite_fast_paths(
    tree: exp.Expr,
    resolve: Callable[[exp.Table], tuple[TableName, pa.Schema] | None],
    stash: Stash,
) -> tuple[exp.Expr, int]:
    """Replace every ``SELECT`` of the nearest-neighbour fast-path shape in ``tree`` with a read
    of ``nearest_scan``.

    Args:
        tree: a parsed or compiled statement (it is modified in place).
        resolve: a table reference → its full name and its schema, or ``None`` when it is not
            a table of the engine.
        stash: keeps a query vector and the filter for the statement's run and returns the
            key ``nearest_scan`` receives instead of them.

    Returns:
        The tree and how many selects were rewritten.
    """
    rewritten = 0
    for select in list(tree.find_all(exp.Select)):
        replacement = _match(select, resolve, stash)
        if replacement is None:
            continue
        if select is tree:
            tree = replacement
        else:
            select.replace(replacement)
        rewritten += 1
    return tree, rewritten


def restore_tie_breaks(tree: exp.Expr) -> int:
    """Append the key to every ``ORDER BY`` in ``tree`` that a compiled branch left it out of
    (:data:`~hotdata_retrieval.compile.compiler.LEFT_OUT_TIE_BREAK`) and that still runs as
    written: a nearest-neighbour shape :func:`rewrite_fast_paths` declined (its filter is
    one the row mask would read otherwise, such as a decimal column, values of several types
    or an empty ``IN`` list), or a scalar semantic branch. Row by row, DataFusion orders
    equal distances as its sort happens to; with ``<key> ASC`` after the distance they come
    in key order, as on the fast path and on every store, so pages stay slices of one
    ranking. Call it after :func:`rewrite_fast_paths`, whose scans order ties themselves.

    Args:
        tree: a compiled statement (modified in place).

    Returns:
        How many ``ORDER BY`` clauses were given their key.
    """
    restored = 0
    for order in list(tree.find_all(exp.Order)):
        key = order.meta.pop(LEFT_OUT_TIE_BREAK, None)
        if key is None:
            continue
        order.append("expressions", ordered(column(key), descending=False))
        restored += 1
    return restored


def nearest_scan_calls(tree: exp.Expr) -> list[tuple[str, str, str, str, int, str | None]]:
    """The ``nearest_scan`` calls :func:`rewrite_fast_paths` wrote into ``tree``, as their
    literal arguments: (table, vector column, distance function, stash key, k, filter text or
    ``None``). Calls written by hand (a vector given as an array, an argument that is not a
    literal) are left out."""
    calls = []
    for call in tree.find_all(exp.Anonymous):
        if str(call.this).lower() != NEAREST_SCAN or len(call.expressions) != 6:
            continue
        reference, column, function, key, k, filter_node = call.expressions
        strings = (reference, column, function, key)
        if not all(isinstance(node, exp.Literal) and node.is_string for node in strings):
            continue
        if not (isinstance(k, exp.Literal) and k.is_int):
            continue
        if isinstance(filter_node, exp.Null):
            filter_text = None
        elif isinstance(filter_node, exp.Literal) and filter_node.is_string:
            filter_text = str(filter_node.this)
        else:
            continue
        calls.append(
            (
                str(reference.this),
                str(column.this),
                str(function.this),
                str(key.this),
                int(k.this),
                filter_text,
            )
        )
    return calls
