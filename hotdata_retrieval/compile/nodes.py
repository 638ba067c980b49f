"""sqlglot nodes the compiler adds: search nodes, an opaque query-vector literal, a value slot.

**Search nodes** are the dialect-neutral form of what a branch searches. The compiler emits
them; each dialect's sqlglot generator renders them, sqlglot's way — a ``TRANSFORMS`` entry per
node class (:data:`COMPILER_TRANSFORMS`) — by *lowering* each to the dialect's own nodes through
the table on its generator class, ``SEARCH_NODES`` (search node class → :class:`Lowering`):

- :class:`TextSearch` — full-text (BM25) search of ``column`` in table ``this`` for ``query``,
  as a table of ``(rows..., score)``, bounded by ``k`` when given;
- :class:`SemanticSearch` — semantic search the engine embeds itself, as a table of
  ``(rows..., _distance)`` bounded by ``k``;
- :class:`SemanticDistance` — the scalar distance of a row's text column ``this`` to the
  engine-embedded ``query``;
- :class:`VectorDistance` — the scalar distance of a row's vector column ``this`` to the query
  vector ``expression``, by ``metric`` (data: ``"cosine"``, ``"l2"`` or ``"dot"``).

The Hotdata dialect lowers them to ``bm25_search(...)``, ``vector_search(...)``,
``vector_distance(...)`` and ``cosine_distance(...)``/``l2_distance(...)``/
``negative_dot_product(...)`` (:class:`TableFunction`, :class:`ScalarFunction`,
:class:`DistanceFunctions`). A generator with no lowering for a node cannot express it: the
compiler refuses such a plan with
:class:`~hotdata_retrieval.errors.UnsupportedFeatureError` before any SQL is written
(:func:`unsupported`).

A 384-value ``ARRAY[...]`` held as 384 sqlglot literal nodes costs 10-15 ms to parse and
3-5 ms to render with sqlglot 30.30 (``docs/benchmarks.md``), so the query vector is ONE node,
:class:`VectorLiteral`, whose text is produced once. A :class:`ValueSlot` stands for a value in
a cached statement template; the renderer fills it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import attrs
from sqlglot import exp

from hotdata_retrieval.errors import UnsupportedOnDialectError as UnsupportedOnDialectError
from hotdata_retrieval.plan.names import is_bare_identifier
from hotdata_retrieval.plan.search import DistanceMetric

SLOT_DELIMITER = "\x00"
"""Brackets a slot's number in a rendered template. Plans reject NUL in every text value and
identifier, so the delimiter can never come from the caller."""


class VectorLiteral(exp.Expression):
    """A query vector whose SQL text was rendered once, e.g. ``ARRAY[0.25, -1.5]``.

    ``this`` holds the finished text; generators emit it verbatim.
    """

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class ValueSlot(exp.Expression):
    """Stands for bound value number ``this`` in a statement template."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True}


class TemporalLiteral(exp.Expression):
    """A date or timestamp literal: ``this`` its ISO 8601 text (a timestamp with a space
    between date and time, no time zone), ``kind`` ``DATE`` or ``TIMESTAMP``. Written
    ``CAST('<text>' AS <kind>)`` (:func:`temporal_literal_sql`); a dialect without such types
    (SQLite, which stores them as ISO text) writes the text alone."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "kind": True}


FLOAT_LITERAL = "float_literal"
"""The ``meta`` key marking a number literal the compiler wrote for a float filter value
(:func:`~hotdata_retrieval.compile.compiler.literal_node`), for a dialect that reads such
text as another type: DuckDB reads ``0.09999999999999999`` as a ``DECIMAL(18, 17)``, whose
conversion to a double is 0.1, one unit in the last place off (its dialect writes the
exponent, ``0.09999999999999999e0``, a ``DOUBLE``)."""


def temporal_literal_sql(generator: Any, expression: TemporalLiteral) -> str:
    """Generator transform: ``CAST('<text>' AS DATE|TIMESTAMP)``, the typed literal."""
    cast = exp.Cast(
        this=exp.Literal.string(str(expression.this)),
        to=exp.DataType.build(exp.DataType.Type[str(expression.args["kind"])]),
    )
    return str(generator.sql(cast))


def vector_literal_sql(generator: Any, expression: VectorLiteral) -> str:
    """Generator transform: emit the vector's finished text."""
    return str(expression.this)


def value_slot_sql(generator: Any, expression: ValueSlot) -> str:
    """Generator transform: emit ``NUL <number> NUL`` for the renderer to split on."""
    return f"{SLOT_DELIMITER}{expression.this}{SLOT_DELIMITER}"


# -- search nodes ------------------------------------------------------------------------------


class SearchNode(exp.Expression):
    """A dialect-neutral search the compiler emits; each dialect lowers it to its own SQL.

    ``feature`` names it in :class:`UnsupportedOnDialectError` messages.
    """

    feature: ClassVar[str] = "a search"


class TextSearch(SearchNode):
    """Full-text (BM25) search as a table: ``this`` the table (:class:`sqlglot.exp.Table`,
    three parts), ``column`` the indexed text column (:class:`sqlglot.exp.Identifier`),
    ``query`` the query text, ``k`` (optional) the bound. Its rows carry ``score``, higher is
    better."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "column": True, "query": True, "k": False}
    feature: ClassVar[str] = "text search (BM25)"


class SemanticSearch(SearchNode):
    """Engine-embedded semantic search as a table: ``this`` the table, ``column`` the text
    column the provider-backed index was built over, ``query`` the text the engine embeds,
    ``k`` the bound. Its rows carry ``_distance``, lower is nearer."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "column": True, "query": True, "k": True}
    feature: ClassVar[str] = "engine-embedded semantic search"


class SemanticDistance(SearchNode):
    """The distance of a row's text column ``this`` (:class:`sqlglot.exp.Column`) to the query
    text ``query``, embedded by the engine with the column's index model and ranked by its
    metric; lower is nearer."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "query": True}
    feature: ClassVar[str] = "engine-embedded semantic distance"


class VectorDistance(SearchNode):
    """The distance of a row's vector column ``this`` (:class:`sqlglot.exp.Column`) to the query
    vector ``expression`` by ``metric`` (the metric's name, data: ``"cosine"``, ``"l2"``,
    ``"dot"``); lower is nearer."""

    arg_types: ClassVar[dict[str, Any]] = {"this": True, "expression": True, "metric": True}
    feature: ClassVar[str] = "nearest-neighbour search (vector distance)"

    @property
    def metric(self) -> DistanceMetric:
        """The metric, as a :class:`DistanceMetric`."""
        return DistanceMetric(self.args["metric"])


class Lowering(Protocol):
    """Turns one search node into the dialect's own sqlglot nodes (moving its children)."""

    def __call__(self, node: Any) -> exp.Expr:
        """The dialect's form of ``node``."""
        ...


def _table_text(table: exp.Table) -> str:
    """``catalog.schema.table`` as the engine's table functions read it (a part that is not
    a bare identifier double-quoted), the same text as ``str(TableName)``."""
    parts = [part for part in (table.catalog, table.db, table.name) if part]
    return ".".join(part if is_bare_identifier(part) else f'"{part}"' for part in parts)


@attrs.frozen
class TableFunction:
    """Lowers :class:`TextSearch` or :class:`SemanticSearch` to the table function ``name``:
    ``name('<catalog>.<schema>.<table>', '<column>', <query>[, k])``."""

    name: str

    def __call__(self, node: TextSearch | SemanticSearch) -> exp.Expr:
        arguments: list[exp.Expr] = [
            exp.Literal.string(_table_text(node.this)),
            exp.Literal.string(node.args["column"].name),
            node.args["query"],
        ]
        k = node.args.get("k")
        if k is not None:
            arguments.append(k)
        return exp.Anonymous(this=self.name, expressions=arguments)


@attrs.frozen
class ScalarFunction:
    """Lowers :class:`SemanticDistance` to ``name(<column>, <query>)``."""

    name: str

    def __call__(self, node: SemanticDistance) -> exp.Expr:
        return exp.Anonymous(this=self.name, expressions=[node.this, node.args["query"]])


@attrs.frozen
class DistanceFunctions:
    """Lowers :class:`VectorDistance` to the function of its metric:
    ``functions[metric](<column>, <vector>)``. A metric without a function is unsupported."""

    functions: Mapping[DistanceMetric, str]

    def __call__(self, node: VectorDistance) -> exp.Expr:
        return exp.Anonymous(
            this=self.functions[node.metric], expressions=[node.this, node.expression]
        )

    def missing(self, node: VectorDistance) -> str | None:
        """What this dialect lacks for ``node``: its metric's function, or nothing."""
        return None if node.metric in self.functions else f"the {node.metric.value} distance"


def search_lowerings(generator: Any) -> Mapping[type[SearchNode], Lowering]:
    """The ``SEARCH_NODES`` table of a sqlglot generator class (or instance, or a dialect's),
    empty when it has none."""
    generator = getattr(generator, "generator_class", generator)
    table = getattr(generator, "SEARCH_NODES", None)
    return table if isinstance(table, Mapping) else {}


def unsupported(generator: Any, node: SearchNode) -> str | None:
    """What ``generator`` cannot express of ``node`` (``None`` when it can): the node's
    feature when its ``SEARCH_NODES`` has no lowering for the node's class, or what the
    lowering says is missing (``missing(node)``, e.g. a distance metric)."""
    lowering = search_lowerings(generator).get(type(node))
    if lowering is None:
        return node.feature
    missing: Callable[[SearchNode], str | None] | None = getattr(lowering, "missing", None)
    return None if missing is None else missing(node)


def lower(generator: Any, node: SearchNode) -> exp.Expr:
    """``node`` in ``generator``'s own nodes.

    Raises:
        UnsupportedOnDialectError: the generator cannot express it.
    """
    reason = unsupported(generator, node)
    if reason is not None:
        dialect = getattr(getattr(generator, "dialect", None), "__class__", type(generator))
        raise UnsupportedOnDialectError(reason, dialect.__name__.lower())
    return search_lowerings(generator)[type(node)](node)


def search_node_sql(generator: Any, expression: SearchNode) -> str:
    """Generator transform: render a search node as the generator's lowering of it."""
    return str(generator.sql(lower(generator, expression)))


def lower_search_nodes(tree: exp.Expr, generator: Any) -> exp.Expr:
    """Replace every search node in ``tree`` (in place) with ``generator``'s lowering of it,
    so the tree holds only the dialect's own sqlglot nodes; returns the tree.

    Raises:
        UnsupportedOnDialectError: the generator cannot express one of them.
    """
    for node in list(tree.find_all(SearchNode)):
        lowered = lower(generator, node)
        if node is tree:
            return lowered
        node.replace(lowered)
    return tree


COMPILER_TRANSFORMS: dict[type[exp.Expr], Callable[..., str]] = {
    TemporalLiteral: temporal_literal_sql,
    VectorLiteral: vector_literal_sql,
    ValueSlot: value_slot_sql,
    TextSearch: search_node_sql,
    SemanticSearch: search_node_sql,
    SemanticDistance: search_node_sql,
    VectorDistance: search_node_sql,
}
"""The generator ``TRANSFORMS`` every dialect the compiler targets needs: the vector literal,
the template slot, and each search node rendered through the generator's ``SEARCH_NODES``."""
