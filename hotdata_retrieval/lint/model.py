"""A small query model over one parsed statement: sources, column lineage, rankings.

The rules ask the same questions again and again — what does ``FROM`` name here (a table, a
search function, a CTE, a subquery)? where does this column come from? which ``ORDER BY`` ranks
by a distance function? — so :class:`Analysis` answers them once per statement and caches the
answers. Lineage follows columns through CTEs and subqueries by name; it is best effort: a
column it cannot place (an ambiguous unqualified name over a join of base tables, a correlated
reference) resolves to ``None`` and no rule fires on it.

Engine facts used here (each from ``engine-contract.md``):

- The search table functions and their score columns: ``bm25_search`` → ``score`` (higher is
  better), ``vector_search`` → ``_distance`` (lower is nearer), both in rowid order (§1.1,
  §1.2); ``vector_search_vector`` → ``_distance`` (§1.5, datafusion-vector-search-ext
  ``src/udtf.rs``). Names come from the ``hotdata`` dialect profile and the plan's branches.
- The distance functions ``cosine_distance``, ``l2_distance``, ``negative_dot_product``
  (§1.4, ext ``src/udf.rs``), from the dialect profile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TypeVar

import attrs
from sqlglot import exp

from hotdata_retrieval.compile.hotdata import HOTDATA
from hotdata_retrieval.compile.nodes import VectorLiteral
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.lint.catalog import IndexCatalog
from hotdata_retrieval.lint.parsing import Positions
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import Bm25Search, DistanceMetric, VectorSearch

__all__ = [
    "DISTANCE_FUNCTIONS",
    "SEARCH_FUNCTIONS",
    "Analysis",
    "ColumnOrigin",
    "DerivedSource",
    "DistanceRanking",
    "ExpressionOrigin",
    "Origin",
    "ScoreOrigin",
    "SearchFunction",
    "SearchSource",
    "Source",
    "TableSource",
    "distance_metric",
    "has_ranking_window",
    "int_literal",
    "is_literal_vector",
    "limit_expression",
    "offset_expression",
    "order_keys",
    "shorten",
    "string_literal",
]


DISTANCE_FUNCTIONS: dict[str, DistanceMetric] = {
    name: metric for metric, name in HOTDATA.distance_functions.items()
}
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
    """A CTE reference or a subquery in FROM/JOIN."""

    node: exp.Expr
    query: exp.Expr
    alias: str | None
    cte: bool

    @property
    def name(self) -> str:
        return self.alias or ""

    @property
    def select(self) -> exp.Select | None:
        """The query's (first) SELECT."""
        return _first_select(self.query)


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

_Node = TypeVar("_Node", bound=exp.Expr)
_MAX_DEPTH = 48
_DIALECT_NAME = "hotdata"
_CAST_BEFORE = re.compile(r"\bCAST\s*\(\s*\Z", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


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
        self.nodes: list[exp.Expr] = list(tree.walk())
        self._found: dict[tuple[type, ...], list[exp.Expr]] = {}
        self.selects: list[exp.Select] = self.find(exp.Select)
        self._aggregate: dict[int, bool] = {}
        self._sources: dict[int, list[Source]] = {}
        self._feeding: dict[int, list[SearchSource]] = {}
        self._enclosing: dict[int, exp.Select | None] = {}
        self._rankings: list[DistanceRanking] | None = None

    def find(self, *types: type[_Node]) -> list[_Node]:
        """Every node of the statement that is an instance of one of ``types`` (breadth
        first), from one walk of the tree made up front."""
        found = self._found.get(types)
        if found is None:
            found = [node for node in self.nodes if isinstance(node, types)]
            self._found[types] = found
        return found  # type: ignore[return-value]

    def is_aggregate(self, select: exp.Select) -> bool:
        """:func:`is_aggregate`, cached."""
        key = id(select)
        cached = self._aggregate.get(key)
        if cached is None:
            cached = self._aggregate[key] = is_aggregate(select)
        return cached

    def is_pure_projection(self, select: exp.Select) -> bool:
        """A select that only projects and filters (no sort, limit, grouping or window)."""
        if order_keys(select) or select.args.get("limit") or select.args.get("offset"):
            return False
        if select.args.get("distinct") is not None or self.is_aggregate(select):
            return False
        return not any(item.find(exp.Window) for item in select.expressions)

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

    def _visible_ctes(self, node: exp.Expr) -> dict[str, exp.Expr]:
        """CTE name → query for the CTEs ``node`` can read: those of every enclosing WITH,
        the nearest first; inside a CTE, only the CTEs written before it (unless the WITH is
        RECURSIVE), so ``WITH docs AS (SELECT * FROM docs)`` reads the table."""
        visible: dict[str, exp.Expr] = {}
        within: exp.CTE | None = None
        current: exp.Expr | None = node
        while current is not None:
            if isinstance(current, exp.CTE):
                within = current
            with_ = current.args.get("with_")
            if isinstance(with_, exp.With):
                for cte in with_.expressions:
                    if cte is within and not with_.args.get("recursive"):
                        break
                    if isinstance(cte, exp.CTE) and cte.alias:
                        visible.setdefault(cte.alias.lower(), cte.this)
                within = None
            current = current.parent
        return visible

    # -- sources ---------------------------------------------------------------------------

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
            ctes = self._visible_ctes(select) if relations else {}
            cached = [self._source(relation, ctes) for relation in relations]
            self._sources[key] = cached
        return cached

    def _source(self, node: exp.Expr, ctes: dict[str, exp.Expr]) -> Source:
        alias = (node.alias or None) if isinstance(node, (exp.Table, exp.Subquery)) else None
        if isinstance(node, exp.Subquery):
            return DerivedSource(node=node, query=node.this, alias=alias, cte=False)
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
                if len(parts) == 1 and parts[0] in ctes:
                    return DerivedSource(
                        node=node, query=ctes[parts[0]], alias=alias or parts[0], cte=True
                    )
                return TableSource(
                    node=node, alias=alias, parts=parts, table=self.table_name(parts)
                )
        return OtherSource(node=node, alias=alias)

    def source_named(self, select: exp.Select, qualifier: str) -> Source | None:
        """The source a column qualifier (``t0`` in ``t0.id``) refers to."""
        qualifier = qualifier.lower()
        for source in self.sources(select):
            if source.name.lower() == qualifier:
                return source
        return None

    def output_names(self, query: exp.Expr) -> set[str] | None:
        """The column names a derived query outputs (``None`` if a star hides some)."""
        select = _first_select(query)
        if select is None:
            return None
        names: set[str] = set()
        for item in select.expressions:
            if isinstance(item, exp.Star) or (
                isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
            ):
                return None
            names.add(item.alias_or_name.lower())
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
        qualifier = column.table or None
        return self._resolve(select, column.name.lower(), qualifier, aliases, pure_only, (), 0)

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
            for item in select.expressions:
                if isinstance(item, exp.Alias) and item.alias.lower() == name:
                    return self._origin(select, item.this, pure_only, path, depth)
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
            star: exp.Expr | None = None
            for item in inner.expressions:
                if isinstance(item, exp.Star) or (
                    isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
                ):
                    star = star or item
                    continue
                if item.alias_or_name.lower() == name:
                    expression = item.this if isinstance(item, exp.Alias) else item
                    return self._origin(inner, expression, pure_only, (*path, inner), depth + 1)
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
                        and not has_ranking_window(inner)
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
        that involves one decides: engine contract §2.2 item 3)."""
        if self._rankings is None:
            found: list[DistanceRanking] = []
            for select in self.selects:
                for ordered in order_keys(select):
                    hit = self.distance_in(select, ordered.this)
                    if hit is None:
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


def shorten(text: str, limit: int = 60) -> str:
    """One line of at most ``limit`` characters, for naming an expression in a message."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
