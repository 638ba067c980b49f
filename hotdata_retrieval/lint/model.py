"""A small query model over one parsed statement: sources, column lineage, rankings.

The rules ask the same questions again and again — what does ``FROM`` name here (a table, a
search function, a CTE, a subquery)? where does this column come from? which ``ORDER BY`` ranks
by a distance function? — so :class:`Analysis` answers them once per statement and caches the
answers.

Which relation a name in ``FROM``/``JOIN`` reads — a CTE (only those visible there: of every
enclosing ``WITH``, the nearest first; inside a CTE, those written before it unless the ``WITH``
is ``RECURSIVE``) or a base table of that name — is sqlglot's answer: the statement's scope tree
is built once (:func:`sqlglot.optimizer.scope.traverse_scope`) and each ``SELECT`` reads its
CTEs from its :class:`~sqlglot.optimizer.scope.Scope`'s ``cte_sources``: a dictionary read
per relation, where walking up to every enclosing ``WITH`` for each ``SELECT`` was quadratic in
the number of CTEs. (sqlglot's builder gives each scope its own copy of the CTEs visible there,
so building the tree still grows with scopes times CTEs, in dictionary copies: for the 2,050 CTEs
of a 1,024-branch fusion, about a second; ``docs/benchmarks.md``.)

Lineage follows columns through those sources by name: a qualified column to the source of
that name, an unqualified one to the only source that can hold it, a select-list item to the
expression it names. ``sqlglot.lineage`` does not fit here: it wants a qualified tree (it
qualifies a copy, with a schema the linter does not have, and sets the qualifier of a column
it guesses in place) and traces output columns only, while the rules ask about any column
reference — a sort key, a window's ``ORDER BY``, a join condition — and need the very nodes of
the tree they report on. The walk is best effort: a column it cannot place (an ambiguous
unqualified name over a join of base tables, a correlated reference) resolves to ``None`` and
no rule fires on it.

Engine facts used here (each from ``engine-contract.md``):

- The search table functions and their score columns: ``bm25_search`` → ``score`` (higher is
  better), ``vector_search`` → ``_distance`` (lower is nearer), both in rowid order (§1.1,
  §1.2); ``vector_search_vector`` → ``_distance`` (§1.5, datafusion-vector-search-ext
  ``src/udtf.rs``). Names come from the ``hotdata`` dialect profile and the plan's branches.
- The distance functions ``cosine_distance``, ``l2_distance``, ``negative_dot_product``
  (§1.4, ext ``src/udf.rs``), from the dialect profile.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from typing import TypeVar

import attrs
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import Scope, traverse_scope

from hotdata_retrieval.compile.hotdata import HOTDATA
from hotdata_retrieval.compile.nodes import VectorLiteral
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.indexes import IndexCatalog
from hotdata_retrieval.lint.parsing import Positions
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import Bm25Search, DistanceMetric, VectorSearch

DISTANCE_FUNCTIONS: Mapping[str, DistanceMetric] = HOTDATA.distance_metrics
"""Distance function name → the metric it computes (lower is always nearer)."""


@attrs.frozen(kw_only=True)
class SearchFunction:
    """A search table function: what it returns and how its results must be sorted.

    Attributes:
        name: the function's SQL name.
        score_column: the column it appends (``score`` or ``_distance``).
        descending: ranking order of that column (``True``: higher is better).
        min_arguments / max_arguments: its arity.
        vector_argument: the third argument is a query vector, not query text.
    """

    name: str
    score_column: str
    descending: bool
    min_arguments: int
    max_arguments: int
    vector_argument: bool = False

    @property
    def sort_sql(self) -> str:
        """``score DESC`` or ``_distance ASC``."""
        return f"{self.score_column} {'DESC' if self.descending else 'ASC'}"


def _search_functions() -> dict[str, SearchFunction]:
    bm25 = HOTDATA.require(HOTDATA.text_search_function, "bm25_search")
    semantic = HOTDATA.require(HOTDATA.semantic_search_function, "vector_search")
    return {
        bm25: SearchFunction(
            name=bm25,
            score_column=Bm25Search.raw_score_column,
            descending=Bm25Search.higher_is_better,
            min_arguments=3,
            max_arguments=4,
        ),
        semantic: SearchFunction(
            name=semantic,
            score_column=VectorSearch.raw_score_column,
            descending=VectorSearch.higher_is_better,
            min_arguments=4,
            max_arguments=4,
        ),
        # ext src/udtf.rs: exactly four arguments, rows in lookup order (engine contract §1.5)
        "vector_search_vector": SearchFunction(
            name="vector_search_vector",
            score_column="_distance",
            descending=False,
            min_arguments=4,
            max_arguments=4,
            vector_argument=True,
        ),
    }


SEARCH_FUNCTIONS: dict[str, SearchFunction] = _search_functions()
"""Search table functions by name."""

BM25_SEARCH = HOTDATA.text_search_function
VECTOR_SEARCH = HOTDATA.semantic_search_function


# -- small predicates ----------------------------------------------------------------------


def distance_metric(node: exp.Expr | None) -> DistanceMetric | None:
    """The metric of a distance function call, or ``None`` if ``node`` is not one."""
    if isinstance(node, exp.Anonymous):
        return DISTANCE_FUNCTIONS.get(node.name.lower())
    return None


def _numeric_literal(node: exp.Expr) -> bool:
    if isinstance(node, exp.Neg):
        node = node.this
    return isinstance(node, exp.Literal) and not node.is_string


def is_literal_vector(node: exp.Expr) -> bool:
    """Whether ``node`` is a literal query vector: ``ARRAY[...]`` or ``make_array(...)`` of
    numeric literals (or a cast of one). Engine contract §2.2 item 4."""
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    if isinstance(node, VectorLiteral):
        return True
    if isinstance(node, exp.Array) or (
        isinstance(node, exp.Anonymous) and node.name.lower() == "make_array"
    ):
        return bool(node.expressions) and all(map(_numeric_literal, node.expressions))
    return False


def limit_expression(select: exp.Query) -> exp.Expr | None:
    """The row count of ``LIMIT n`` / ``FETCH FIRST n ROWS``, or ``None``."""
    limit = select.args.get("limit")
    if isinstance(limit, exp.Limit):
        return limit.expression  # type: ignore[no-any-return]
    if isinstance(limit, exp.Fetch):
        count = limit.args.get("count")
        return count if count is not None else exp.Literal.number(1)
    return None


def offset_expression(select: exp.Query) -> exp.Expr | None:
    """The ``OFFSET`` row count, or ``None``."""
    offset = select.args.get("offset")
    return offset.expression if isinstance(offset, exp.Offset) else None


def int_literal(node: exp.Expr | None) -> int | None:
    """The value of an integer literal, or ``None``."""
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None


def string_literal(node: exp.Expr | None) -> str | None:
    """The value of a string literal, or ``None``."""
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    return None


def order_keys(node: exp.Expr) -> list[exp.Ordered]:
    """The ``ORDER BY`` keys of a query or a window (empty when it has none)."""
    order = node.args.get("order")
    if not isinstance(order, exp.Order):
        return []
    return [key for key in order.expressions if isinstance(key, exp.Ordered)]


def is_aggregate(select: exp.Select) -> bool:
    """Whether the select groups or aggregates its rows (their order then does not matter)."""
    if select.args.get("group") is not None:
        return True
    for item in select.expressions:
        for node in item.find_all(exp.AggFunc):
            if isinstance(node.parent, exp.Window):
                continue  # a window function keeps every row
            if node.find_ancestor(exp.Select) is select or node.find_ancestor(exp.Select) is None:
                return True
    return False


def has_ranking_window(select: exp.Select) -> bool:
    """Whether the select list computes an ordered window (``ROW_NUMBER() OVER (ORDER BY
    ...)``): the select then carries its rows' ranking for its reader."""
    return any(
        order_keys(window) for item in select.expressions for window in item.find_all(exp.Window)
    )


def _first_select(query: exp.Expr) -> exp.Select | None:
    while isinstance(query, (exp.SetOperation, exp.Subquery)):
        query = query.this if isinstance(query, exp.Subquery) else query.left
    return query if isinstance(query, exp.Select) else None


# -- sources -------------------------------------------------------------------------------


@attrs.frozen(eq=False, kw_only=True)
class TableSource:
    """A base table in FROM/JOIN.

    Attributes:
        node: the ``exp.Table``.
        alias: the alias if one is written, else ``None``.
        parts: the reference as written (1 to 3 parts, lower-cased).
        table: the reference completed from the defaults (``None`` if it cannot be).
    """

    node: exp.Table
    alias: str | None
    parts: tuple[str, ...]
    table: TableName | None

    @property
    def name(self) -> str:
        """The name columns qualify it by: the alias, else the table's own name."""
        return self.alias or self.parts[-1]


@attrs.frozen(eq=False, kw_only=True)
class SearchSource:
    """A search table function in FROM/JOIN (``bm25_search(...)``, ``vector_search(...)``).

    Attributes:
        node: the ``exp.Table`` holding the call.
        call: the call.
        function: what the function is.
        alias: its alias, if any.
        table: the table named by its first argument, completed (``None`` if not a literal
            or not a valid name).
        column: its second argument, if a string literal.
    """

    node: exp.Table
    call: exp.Anonymous
    function: SearchFunction
    alias: str | None
    table: TableName | None
    column: str | None

    @property
    def name(self) -> str:
        return self.alias or self.function.name


@attrs.frozen(eq=False, kw_only=True)
class DerivedSource:
    """A CTE reference or a subquery in FROM/JOIN.

    Attributes:
        node: the ``exp.Table`` naming the CTE, or the ``exp.Subquery``.
        query: the query it reads (the CTE's, or the subquery's).
        alias: the name columns qualify it by (a CTE's own name when it has no alias).
        cte: it names a CTE.
        scope: sqlglot's scope of ``query`` (``None`` when the statement has no scope tree).
        select: the query's SELECT, or the first SELECT of a set operation (``None`` if it
            has none).
    """

    node: exp.Expr
    query: exp.Expr
    alias: str | None
    cte: bool
    scope: Scope | None = None
    select: exp.Select | None = None

    @property
    def name(self) -> str:
        return self.alias or ""


@attrs.frozen(eq=False, kw_only=True)
class OtherSource:
    """Anything else in FROM (``UNNEST``, ``VALUES``, another table function)."""

    node: exp.Expr
    alias: str | None

    @property
    def name(self) -> str:
        return self.alias or ""


Source = TableSource | SearchSource | DerivedSource | OtherSource


# -- lineage -------------------------------------------------------------------------------


@attrs.frozen(eq=False, kw_only=True)
class ColumnOrigin:
    """A column read from a base table or from a search function's table columns."""

    source: TableSource | SearchSource
    column: str
    path: tuple[exp.Select, ...]

    @property
    def table(self) -> TableName | None:
        return self.source.table


@attrs.frozen(eq=False, kw_only=True)
class ScoreOrigin:
    """The ranking column of a search function (``score`` or ``_distance``)."""

    source: SearchSource
    path: tuple[exp.Select, ...]


@attrs.frozen(eq=False, kw_only=True)
class ExpressionOrigin:
    """A computed select item (``fn(...) AS name``)."""

    expression: exp.Expr
    select: exp.Select
    path: tuple[exp.Select, ...]


Origin = ColumnOrigin | ScoreOrigin | ExpressionOrigin

_LOG = logging.getLogger(__name__)
_Node = TypeVar("_Node", bound=exp.Expr)
_MAX_DEPTH = 48
_DIALECT_NAME = "hotdata"
_CAST_BEFORE = re.compile(r"\bCAST\s*\(\s*\Z", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


@attrs.frozen(eq=False, kw_only=True)
class _Projection:
    """A select list, indexed once for lineage (a fused statement's final SELECT can list two
    thousand columns, and every column read through it is looked up by name).

    Attributes:
        aliases: alias (lower case) → the expression it names, the first of each name.
        outputs: output name (lower case) → its expression (an alias's, unwrapped), the first
            of each name; stars left out.
        star: the first ``*`` or ``t.*``, if any.
        window: some item computes a window function.
        ranking_window: some item computes an ordered window (``ROW_NUMBER() OVER (ORDER BY
            ...)``).
        aggregate: some item aggregates the select's rows (an aggregate function of this
            select, not a window's).
    """

    aliases: dict[str, exp.Expr]
    outputs: dict[str, exp.Expr]
    star: exp.Expr | None
    window: bool
    ranking_window: bool
    aggregate: bool


def _projection(select: exp.Select) -> _Projection:
    """Index ``select``'s list, walking each item once."""
    aliases: dict[str, exp.Expr] = {}
    outputs: dict[str, exp.Expr] = {}
    star: exp.Expr | None = None
    window = ranking_window = aggregate = False
    for item in select.expressions:
        if isinstance(item, exp.Star) or (
            isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        ):
            star = star or item
            continue
        if isinstance(item, exp.Alias):
            aliases.setdefault(item.alias.lower(), item.this)
        outputs.setdefault(
            item.alias_or_name.lower(), item.this if isinstance(item, exp.Alias) else item
        )
        for node in _breadth_first(item):
            if isinstance(node, exp.Window):
                window = True
                ranking_window = ranking_window or bool(order_keys(node))
            elif (
                not aggregate
                and isinstance(node, exp.AggFunc)
                and not isinstance(node.parent, exp.Window)  # a window keeps every row
            ):
                owner = node.find_ancestor(exp.Select)
                aggregate = owner is select or owner is None
    return _Projection(
        aliases=aliases,
        outputs=outputs,
        star=star,
        window=window,
        ranking_window=ranking_window,
        aggregate=aggregate,
    )


@attrs.frozen(eq=False, kw_only=True)
class DistanceRanking:
    """A query ranked by a distance function: the shape the vector-index rewrite matches.

    Attributes:
        anchor: the select holding the ``ORDER BY`` (and, if any, the ``LIMIT``).
        ordered: the sort key that ranks by the distance (the first one that does).
        call: the distance function call.
        metric: the metric the call computes.
        scan: the select in which the call is computed (``anchor`` itself, or the select
            inside a wrapping subquery).
        over_expression: the sort key is an expression over the distance, not the distance.
    """

    anchor: exp.Select
    ordered: exp.Ordered
    call: exp.Anonymous
    metric: DistanceMetric
    scan: exp.Select
    over_expression: bool

    @property
    def outer_wrap(self) -> bool:
        """The distance is computed inside a subquery the sort sits outside of."""
        return self.anchor is not self.scan


class Analysis:
    """Everything the rules need to know about one statement.

    Attributes:
        tree: the statement.
        sql: the whole SQL text the statement came from.
        positions: line/column lookup for ``sql``.
        catalog: the index catalog, if one was given.
        default_catalog / default_schema: complete 1- and 2-part table names.
        statement_start: offset of the statement in ``sql`` (the fallback position).
    """

    def __init__(
        self,
        tree: exp.Expr,
        sql: str,
        *,
        positions: Positions | None = None,
        catalog: IndexCatalog | None = None,
        default_catalog: str = DEFAULT_CATALOG,
        default_schema: str = DEFAULT_SCHEMA,
        statement_start: int = 0,
        statement_end: int | None = None,
    ) -> None:
        self.tree = tree
        self.sql = sql
        self.positions = positions or Positions(sql)
        self.catalog = catalog
        self.default_catalog = default_catalog
        self.default_schema = default_schema
        self.statement_start = statement_start
        self.statement_end = len(sql) if statement_end is None else statement_end
        self.nodes: list[exp.Expr] = _breadth_first(tree)
        self._found: dict[tuple[type, ...], list[exp.Expr]] = {}
        self.selects: list[exp.Select] = self.find(exp.Select)
        self._sources: dict[int, list[Source]] = {}
        self._feeding: dict[int, list[SearchSource]] = {}
        self._enclosing: dict[int, exp.Select | None] = {}
        self._rankings: list[DistanceRanking] | None = None
        self._scopes: dict[int, Scope] | None = None
        self._cte_names: frozenset[str] | None = None
        self._named: dict[int, dict[str, Source]] = {}
        self._first: dict[int, exp.Select | None] = {}
        self._outputs: dict[int, frozenset[str] | None] = {}
        self._projections: dict[int, _Projection] = {}
        self._resolved: dict[tuple[int, int, bool, bool], Origin | None] = {}

    def find(self, *types: type[_Node]) -> list[_Node]:
        """Every node of the statement that is an instance of one of ``types`` (breadth
        first), from one walk of the tree made up front."""
        found = self._found.get(types)
        if found is None:
            found = [node for node in self.nodes if isinstance(node, types)]
            self._found[types] = found
        return found  # type: ignore[return-value]

    def is_aggregate(self, select: exp.Select) -> bool:
        """:func:`is_aggregate`, from the select list indexed once."""
        return select.args.get("group") is not None or self._projection(select).aggregate

    def _projection(self, select: exp.Select) -> _Projection:
        key = id(select)
        cached = self._projections.get(key)
        if cached is None:
            cached = self._projections[key] = _projection(select)
        return cached

    def has_ranking_window(self, select: exp.Select) -> bool:
        """:func:`has_ranking_window`, from the select list indexed once."""
        return self._projection(select).ranking_window

    def is_pure_projection(self, select: exp.Select) -> bool:
        """A select that only projects and filters (no sort, limit, grouping or window)."""
        if order_keys(select) or select.args.get("limit") or select.args.get("offset"):
            return False
        if select.args.get("distinct") is not None or self.is_aggregate(select):
            return False
        return not self._projection(select).window

    # -- names -----------------------------------------------------------------------------

    def table_name(self, parts: tuple[str, ...] | str) -> TableName | None:
        """Complete a reference from the defaults (``None`` if it is not a valid name)."""
        try:
            if isinstance(parts, str):
                return TableName.parse(
                    parts,
                    default_catalog=self.default_catalog,
                    default_schema=self.default_schema,
                )
            padded = (self.default_catalog, self.default_schema)[: 3 - len(parts)] + parts
            if len(padded) != 3:
                return None
            return TableName(catalog=padded[0], schema=padded[1], name=padded[2])
        except PlanError:
            return None

    # -- sources ---------------------------------------------------------------------------

    def scope(self, query: exp.Expr) -> Scope | None:
        """sqlglot's scope of a query of the statement (a ``SELECT``, a set operation, a CTE's
        or a subquery's query): the scope tree is built once, by
        :func:`~sqlglot.optimizer.scope.traverse_scope`, on first use. ``None`` for a query
        outside every scope (the statement is not one sqlglot can traverse)."""
        if self._scopes is None:
            self._scopes = {id(scope.expression): scope for scope in _scopes(self.tree)}
        return self._scopes.get(id(query))

    def sources(self, select: exp.Select) -> list[Source]:
        """The relations ``select`` reads, in FROM/JOIN order."""
        key = id(select)
        cached = self._sources.get(key)
        if cached is None:
            relations: list[exp.Expr] = []
            from_ = select.args.get("from_")
            if isinstance(from_, exp.From):
                relations.append(from_.this)
            for join in select.args.get("joins") or ():
                relations.append(join.this)
            scope = self.scope(select) if relations else None
            cached = [self._source(relation, scope) for relation in relations]
            self._sources[key] = cached
        return cached

    def _cte(self, scope: Scope | None, name: str) -> Scope | None:
        """The scope of the CTE a one-part table name read in ``scope`` names, or ``None`` for
        a base table.

        The CTEs visible there are the scope's ``cte_sources``: of every enclosing ``WITH``,
        an inner one's over the outer ones; inside a CTE, those written before it (and itself,
        when a ``RECURSIVE`` one is a UNION). Two gaps of sqlglot's are filled here:

        - Inside a ``RECURSIVE`` ``WITH`` a CTE may read any CTE of the list, one written
          after it too (PostgreSQL's ``SELECT``: "WITH queries need not be ordered"): a name
          not visible otherwise is looked up among every CTE of each enclosing recursive
          ``WITH``, the nearest first (its scope's ``cte_sources`` once built).
        - sqlglot compares names exactly as written; the engine folds unquoted names to lower
          case, so a name that matches no CTE exactly is compared without case (and only when
          some CTE of the statement has that name, so a base table costs a set look-up).
        """
        if scope is None:
            return None
        if self._cte_names is None:
            self._cte_names = frozenset(cte.alias.lower() for cte in self.find(exp.CTE))
        if name not in scope.cte_sources and name.lower() not in self._cte_names:
            return None
        found = _named(scope.cte_sources, name)
        current: Scope | None = scope
        while found is None and current is not None:
            owner = current.parent
            if current.is_cte and owner is not None:
                with_ = owner.expression.args.get("with_")
                if isinstance(with_, exp.With) and with_.args.get("recursive"):
                    found = _named(owner.cte_sources, name)
            current = owner
        return found

    def _source(self, node: exp.Expr, scope: Scope | None) -> Source:
        alias = (node.alias or None) if isinstance(node, (exp.Table, exp.Subquery)) else None
        if isinstance(node, exp.Subquery):
            return DerivedSource(
                node=node,
                query=node.this,
                alias=alias,
                cte=False,
                scope=self.scope(node.unnest()),
                select=self.first_select(node.this),
            )
        if isinstance(node, exp.Table):
            inner = node.this
            if isinstance(inner, exp.Anonymous):
                function = SEARCH_FUNCTIONS.get(inner.name.lower())
                if function is None:
                    return OtherSource(node=node, alias=alias)
                arguments = inner.expressions
                table_text = string_literal(arguments[0]) if arguments else None
                column = string_literal(arguments[1]) if len(arguments) > 1 else None
                return SearchSource(
                    node=node,
                    call=inner,
                    function=function,
                    alias=alias,
                    table=self.table_name(table_text) if table_text is not None else None,
                    column=column.lower() if column is not None else None,
                )
            if isinstance(inner, exp.Identifier):
                parts = tuple(
                    part.name.lower()
                    for part in (node.args.get("catalog"), node.args.get("db"), inner)
                    if isinstance(part, exp.Identifier)
                )
                cte = self._cte(scope, inner.name) if len(parts) == 1 else None
                if cte is not None:
                    return DerivedSource(
                        node=node,
                        query=cte.expression,
                        alias=alias or parts[0],
                        cte=True,
                        scope=cte,
                        select=self.first_select(cte.expression),
                    )
                return TableSource(
                    node=node, alias=alias, parts=parts, table=self.table_name(parts)
                )
        return OtherSource(node=node, alias=alias)

    def first_select(self, query: exp.Expr) -> exp.Select | None:
        """The query's SELECT, or the first SELECT of a set operation (remembered: a UNION of
        a thousand arms is walked once)."""
        key = id(query)
        if key not in self._first:
            self._first[key] = _first_select(query)
        return self._first[key]

    def source_named(self, select: exp.Select, qualifier: str) -> Source | None:
        """The source a column qualifier (``t0`` in ``t0.id``) refers to (the first of that
        name, without case)."""
        key = id(select)
        named = self._named.get(key)
        if named is None:
            named = {}
            for source in self.sources(select):
                named.setdefault(source.name.lower(), source)
            self._named[key] = named
        return named.get(qualifier.lower())

    def output_names(self, query: exp.Expr) -> frozenset[str] | None:
        """The column names a derived query outputs (``None`` if a star hides some)."""
        key = id(query)
        if key in self._outputs:
            return self._outputs[key]
        select = self.first_select(query)
        names: frozenset[str] | None = None
        if select is not None:
            projection = self._projection(select)
            if projection.star is None:
                names = frozenset(projection.outputs)
        self._outputs[key] = names
        return names

    def _unqualified_source(self, select: exp.Select, name: str) -> Source | None:
        sources = self.sources(select)
        if len(sources) == 1:
            return sources[0]
        candidates: list[Source] = []
        for source in sources:
            if isinstance(source, SearchSource):
                if source.function.score_column == name:
                    candidates.append(source)
            elif isinstance(source, DerivedSource):
                names = self.output_names(source.query)
                if names is not None and name in names:
                    candidates.append(source)
        return candidates[0] if len(candidates) == 1 else None

    # -- lineage ---------------------------------------------------------------------------

    def resolve(
        self,
        select: exp.Select,
        column: exp.Column,
        *,
        aliases: bool = True,
        pure_only: bool = False,
    ) -> Origin | None:
        """Where ``column`` (read in ``select``) comes from.

        Args:
            aliases: an unqualified name may name a select-list alias of ``select`` (as in
                ``ORDER BY``).
            pure_only: cross only subqueries/CTEs that neither sort, limit, group nor rank.
        """
        if isinstance(column.this, exp.Star):
            return None
        key = (id(select), id(column), aliases, pure_only)
        if key not in self._resolved:  # several rules ask after the same columns
            qualifier = column.table or None
            self._resolved[key] = self._resolve(
                select, column.name.lower(), qualifier, aliases, pure_only, (), 0
            )
        return self._resolved[key]

    def _resolve(
        self,
        select: exp.Select,
        name: str,
        qualifier: str | None,
        aliases: bool,
        pure_only: bool,
        path: tuple[exp.Select, ...],
        depth: int,
    ) -> Origin | None:
        if depth > _MAX_DEPTH:
            return None
        path = (*path, select)
        if qualifier is None and aliases:
            aliased = self._projection(select).aliases.get(name)
            if aliased is not None:
                return self._origin(select, aliased, pure_only, path, depth)
        source = (
            self.source_named(select, qualifier)
            if qualifier is not None
            else self._unqualified_source(select, name)
        )
        if source is None:
            return None
        return self._through(source, name, pure_only, path, depth)

    def _origin(
        self,
        select: exp.Select,
        expression: exp.Expr,
        pure_only: bool,
        path: tuple[exp.Select, ...],
        depth: int,
    ) -> Origin | None:
        if isinstance(expression, exp.Column) and not isinstance(expression.this, exp.Star):
            return self._resolve(
                select,
                expression.name.lower(),
                expression.table or None,
                False,
                pure_only,
                path[:-1],
                depth + 1,
            )
        return ExpressionOrigin(expression=expression, select=select, path=path)

    def _through(
        self,
        source: Source,
        name: str,
        pure_only: bool,
        path: tuple[exp.Select, ...],
        depth: int,
    ) -> Origin | None:
        if isinstance(source, TableSource):
            return ColumnOrigin(source=source, column=name, path=path)
        if isinstance(source, SearchSource):
            if name == source.function.score_column:
                return ScoreOrigin(source=source, path=path)
            return ColumnOrigin(source=source, column=name, path=path)
        if isinstance(source, DerivedSource):
            inner = source.select
            if inner is None or (pure_only and not self.is_pure_projection(inner)):
                return None
            projection = self._projection(inner)
            expression = projection.outputs.get(name)
            if expression is not None:
                return self._origin(inner, expression, pure_only, (*path, inner), depth + 1)
            star = projection.star
            if star is not None:
                qualifier = star.table if isinstance(star, exp.Column) and star.table else None
                return self._resolve(inner, name, qualifier, False, pure_only, path, depth + 1)
        return None

    # -- derived facts ---------------------------------------------------------------------

    def enclosing_select(self, node: exp.Expr) -> exp.Select | None:
        """The innermost select containing ``node``.

        Remembered for every node on the way up, so asking for each node of a long
        expression costs linear, not quadratic, time."""
        path: list[int] = []
        current = node.parent
        found: exp.Select | None = None
        while current is not None:
            key = id(current)
            if key in self._enclosing:
                found = self._enclosing[key]
                break
            if isinstance(current, exp.Select):
                found = current
                break
            path.append(key)
            current = current.parent
        for key in path:
            self._enclosing[key] = found
        return found

    def feeding_searches(self, select: exp.Select) -> list[SearchSource]:
        """Search functions whose rows reach ``select`` in rowid order: read directly, or
        through subqueries/CTEs that neither sort, rank nor aggregate."""
        key = id(select)
        cached = self._feeding.get(key)
        if cached is None:
            self._feeding[key] = []  # guards against a recursive CTE
            found: list[SearchSource] = []
            for source in self.sources(select):
                if isinstance(source, SearchSource):
                    found.append(source)
                elif isinstance(source, DerivedSource):
                    inner = source.select
                    if (
                        inner is not None
                        and not order_keys(inner)
                        and not self.is_aggregate(inner)
                        and not self.has_ranking_window(inner)
                    ):
                        found.extend(self.feeding_searches(inner))
            self._feeding[key] = cached = found
        return cached

    def output_selects(self) -> list[exp.Select]:
        """The selects whose rows are the statement's result, in their own order: the
        statement itself, or the arms of an unordered UNION (none for INSERT, CREATE ...)."""
        found: list[exp.Select] = []
        pending: list[exp.Expr] = [self.tree]
        while pending:
            node = pending.pop()
            if isinstance(node, exp.Select):
                found.append(node)
            elif isinstance(node, exp.SetOperation) and not order_keys(node):
                pending.extend((node.right, node.left))
            elif isinstance(node, exp.Subquery):
                pending.append(node.this)
        return found

    def search_sources(self) -> Iterator[tuple[exp.Select, SearchSource]]:
        """Every search function call read in FROM/JOIN, with the select reading it."""
        for select in self.selects:
            for source in self.sources(select):
                if isinstance(source, SearchSource):
                    yield select, source

    def distance_in(
        self, select: exp.Select, expression: exp.Expr
    ) -> tuple[exp.Anonymous, DistanceMetric, exp.Select, bool] | None:
        """The distance call an expression (a sort key) ranks by: ``(call, metric, select
        computing it, whether the key wraps it in a further expression)``."""
        metric = distance_metric(expression)
        if metric is not None:
            assert isinstance(expression, exp.Anonymous)
            return expression, metric, select, False
        if isinstance(expression, exp.Column):
            origin = self.resolve(select, expression, pure_only=True)
            if isinstance(origin, ExpressionOrigin):
                found = self.distance_in(origin.select, origin.expression)
                if found is not None:
                    return found
            return None
        for node in expression.walk():
            if node is expression or isinstance(node, exp.Subquery):
                continue
            if isinstance(node, (exp.Anonymous, exp.Column)):
                found = self.distance_in(select, node)
                if found is not None:
                    call, metric, scan, _ = found
                    return call, metric, scan, True
        return None

    def rankings(self) -> list[DistanceRanking]:
        """Every select whose ``ORDER BY`` ranks by a distance function (its first sort key
        that involves one decides: engine contract §2.2 item 3). A distance in a sort key
        after a first key that involves none only breaks that key's ties (a fused
        statement's ``ORDER BY fused.score DESC, <distance> ASC``): the select is ranked by
        its first key, not by a distance."""
        if self._rankings is None:
            found: list[DistanceRanking] = []
            if not any(distance_metric(node) for node in self.find(exp.Anonymous)):
                self._rankings = found  # no distance call: no sort key can rank by one
                return found
            for select in self.selects:
                for position, ordered in enumerate(order_keys(select)):
                    hit = self.distance_in(select, ordered.this)
                    if hit is None:
                        if position == 0:
                            break
                        continue
                    call, metric, scan, over_expression = hit
                    found.append(
                        DistanceRanking(
                            anchor=select,
                            ordered=ordered,
                            call=call,
                            metric=metric,
                            scan=scan,
                            over_expression=over_expression,
                        )
                    )
                    break
            self._rankings = found
        return self._rankings

    def scan_table(self, ranking: DistanceRanking) -> TableSource | None:
        """The one base table a distance ranking scans (``None`` for a join, a CTE, ...)."""
        sources = self.sources(ranking.scan)
        if len(sources) == 1 and isinstance(sources[0], TableSource):
            return sources[0]
        return None

    def columns_named(self, name: str) -> Iterator[exp.Column]:
        """Every column reference in the statement with this (lower-cased) name."""
        for column in self.find(exp.Column):
            if not isinstance(column.this, exp.Star) and column.name.lower() == name:
                yield column

    # -- positions -------------------------------------------------------------------------

    def text(self, node: exp.Expr, limit: int = 60) -> str:
        """The expression in SQL (one line, shortened), for naming it in a message."""
        if isinstance(node, exp.Ordered):
            node = node.this
        return shorten(node.sql(dialect=_DIALECT_NAME), limit)

    def span(self, node: exp.Expr) -> tuple[int, int]:
        """Best-effort ``(start, end)`` offsets of ``node`` in the SQL text.

        Parsed nodes carry the offsets of their tokens (identifiers, literals, function
        names); the span runs from the first to the last of those in the subtree, widened to
        close the brackets it opens and to take in a subquery's parentheses or a parameter's
        sigil.
        """
        start: int | None = None
        end: int | None = None
        for child in node.walk():
            meta = child._meta  # read without creating an empty dict
            if not meta or "start" not in meta:
                continue
            child_start, child_end = meta["start"], meta.get("end", meta["start"])
            start = child_start if start is None else min(start, child_start)
            end = child_end if end is None else max(end, child_end)
        if start is None or end is None:
            return self.statement_start, self.statement_end
        end += 1
        text = self.sql
        if isinstance(node, (exp.Subquery, exp.Select)):
            opening = text.rfind("(", self.statement_start, start)
            if opening != -1:
                start = opening
        elif isinstance(node, (exp.Parameter, exp.Placeholder)) and start > 0:
            if text[start - 1] in "$:@?":
                start -= 1
        elif isinstance(node, exp.Cast):
            keyword = _CAST_BEFORE.search(text, self.statement_start, start)
            if keyword is not None:
                start = keyword.start()
        elif isinstance(node, exp.Func) and "(" not in text[start:end]:
            position = end
            while position < len(text) and text[position].isspace():
                position += 1
            if position < len(text) and text[position] == "(":
                end = position + 1
        return start, self._close_brackets(start, end)

    def _close_brackets(self, start: int, end: int) -> int:
        """Extend ``end`` over the closing brackets that ``sql[start:end]`` leaves open."""
        text = self.sql
        written = _QUOTED.sub("", text[start:end])
        missing = written.count("(") - written.count(")") + written.count("[") - written.count("]")
        position = end
        while missing > 0 and position < len(text):
            character = text[position]
            if character in ")]":
                missing -= 1
                end = position + 1
            elif character in "([":
                missing += 1
            elif character == "'":
                closing = text.find("'", position + 1)
                if closing == -1:
                    break
                position = closing
            position += 1
        return end


def _breadth_first(tree: exp.Expr) -> list[exp.Expr]:
    """Every node of ``tree`` in the order of ``tree.walk()`` (breadth first), read from the
    nodes' arguments directly: no generator per node."""
    nodes = [tree]
    position = 0
    while position < len(nodes):
        for value in nodes[position].args.values():
            if isinstance(value, exp.Expr):
                nodes.append(value)
            elif isinstance(value, list):
                nodes.extend(item for item in value if isinstance(item, exp.Expr))
        position += 1
    return nodes


def _named(ctes: Mapping[str, exp.Table | Scope], name: str) -> Scope | None:
    """The CTE scope of that name in ``cte_sources``: as written, else without case (the last
    match: the nearest ``WITH``'s, whose CTEs come after the outer ones)."""
    found = ctes.get(name)
    if found is None:
        lowered = name.lower()
        for written, scope in ctes.items():
            if written.lower() == lowered:
                found = scope
    return found if isinstance(found, Scope) else None


def _scopes(tree: exp.Expr) -> list[Scope]:
    """Every scope of the statement (none for one sqlglot cannot traverse: a command, or a
    tree its scope builder refuses)."""
    try:
        return traverse_scope(tree)
    except SqlglotError as error:
        _LOG.debug("no scope tree for %s: %s", type(tree).__name__, error)
        return []


def shorten(text: str, limit: int = 60) -> str:
    """One line of at most ``limit`` characters, for naming an expression in a message."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
