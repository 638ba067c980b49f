"""Plan → sqlglot expression tree, by visitor dispatch.

:class:`PlanCompiler` turns a :class:`~hotdata_retrieval.plan.SearchPlan` into a single
``SELECT``. It has one ``visit_<name>`` method per plan node (:mod:`hotdata_retrieval.plan.
visitor`): one per branch kind, one per fusion method, one per filter node. A dialect whose
engine needs another shape subclasses it and overrides those methods, and names the subclass
in its :class:`~hotdata_retrieval.compile.dialect.DialectProfile` (``compiler``). What a
branch searches is emitted as a dialect-neutral search node
(:mod:`hotdata_retrieval.compile.nodes`) that each dialect's generator lowers to its own SQL;
a node the dialect cannot express is refused here, while compiling, with
:class:`~hotdata_retrieval.compile.nodes.UnsupportedOnDialectError`. Every caller-supplied
value comes from a *binder*, which either makes real literal nodes (:class:`LiteralBinder`) or
value slots for a reusable statement template (:class:`SlotBinder`).

The shapes, and why (engine contract §1-3, ``shared/reference/engine-contract.md``), as the
Hotdata dialect spells them:

- text: ``bm25_search(t, col, q, k) ... ORDER BY score DESC LIMIT k`` — the function returns
  rowid order, and k must be the 4th argument to bound the index scan (§1.1).
- semantic: ``vector_search(t, col, q, k) ... ORDER BY _distance ASC`` and no LIMIT without
  that sort (§1.2).
- filtered semantic: ``SELECT key, vector_distance(col, q) AS _distance FROM c.s.t WHERE ...
  ORDER BY _distance ASC LIMIT n`` — the filter applies before the bound, which
  ``vector_search``'s k would otherwise cut first (§1.2, §1.3).
- nearest neighbour: ``SELECT key, fn(col, ARRAY[...]) AS _distance FROM c.s.t [WHERE ...]
  ORDER BY _distance ASC LIMIT n`` — unaliased 3-part table, filter in the same WHERE, vector
  column never in the output, no tie-break in this ORDER BY: the index rewrite's preconditions
  (§2.2, §2.3).
- fusion: one statement; each branch's hits in a CTE of the shape above, ranked outside it
  with ``RANK() OVER (ORDER BY raw)`` (rows tied on the raw score share a rank), combined by
  ``FULL OUTER JOIN`` on the key (past :data:`JOIN_CHAIN_MAX_BRANCHES` branches, one ``LEFT
  JOIN`` per branch onto the ``UNION`` of their keys, so the statement stays linear in the
  branch count), joined back to the base table, ordered by fused score DESC then key ASC
  (§3). The hits and ranked CTEs are the same for every fusion method; the method's visitor
  gives the fused score (and may add window columns to the ranked CTEs).
- native fusion: for a dialect whose profile names a ``native_hybrid_search`` function, a
  fusion (reciprocal rank, min-max or distribution-based score) of one text branch and one
  vector branch is one call of it, ordered
  by score DESC then key ASC (``docs/spec/hybrid_search.md``); any other plan keeps the CTE
  form.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import attrs
from sqlglot import exp

from hotdata_retrieval.compile._null_guards import guarded_columns, spread
from hotdata_retrieval.compile.dialect import DialectProfile
from hotdata_retrieval.compile.nodes import (
    FLOAT_LITERAL,
    SearchNode,
    SemanticDistance,
    SemanticSearch,
    TemporalLiteral,
    TextSearch,
    UnsupportedOnDialectError,
    ValueSlot,
    VectorDistance,
    VectorLiteral,
)
from hotdata_retrieval.plan.filters import (
    And,
    Between,
    Comparison,
    ComparisonOperator,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    form_of,
)
from hotdata_retrieval.plan.formula import (
    FUSED_SCORE_COLUMN,
    ColumnValue,
    Decay,
    DecayFunction,
    ScoreFormula,
    term_columns,
)
from hotdata_retrieval.plan.formula import FusedScore as FormulaFusedScore
from hotdata_retrieval.plan.names import TableName, TableUnion, is_bare_identifier
from hotdata_retrieval.plan.search import (
    Bm25Search,
    Branch,
    BranchRanking,
    DistributionBasedScoreFusion,
    Fusion,
    MinMaxFusion,
    NearestNeighborSearch,
    NormalizedScoreFusion,
    ReciprocalRankFusion,
    SearchPlan,
    TieBreaker,
    VectorSearch,
    bound_columns,
    debug_columns,
)
from hotdata_retrieval.plan.values import decimal_digits
from hotdata_retrieval.plan.visitor import visit_name_of

RANK_COLUMN = "branch_rank"
"""Column holding a branch's 1-based rank inside the fused statement's CTEs."""

SIMILARITY_LOW = "similarity_low"
SIMILARITY_HIGH = "similarity_high"
"""Columns a score-normalized fusion adds to each ranked CTE: the ends of the range its
similarities are normalized over (min and max; mean ∓ 3 standard deviations)."""

FUSED = "fused"
BASE = "base"
EXACT_SCAN = "exact_scan"
"""The alias an exact nearest-neighbour branch gives its scanned table (the shape the
Hotdata engine's index rule declines)."""
UNION = "search_union"
"""The alias of a union branch's ``UNION ALL`` of its members."""
UNION_MEMBER = "union_member"
"""The alias prefix of a union branch's members (``union_member_1``, ...)."""
RESCORED = "rescored"
"""The CTE of a plan with a score formula: the fused rows with each term and the final
score (:meth:`PlanCompiler.rescored`)."""
FORMULA_SCORE = "formula_score"
"""The final score's column in the :data:`RESCORED` CTE."""
FUSED_KEYS = "fused_keys"
GROUP_CANDIDATES = "group_candidates"
"""The CTE of a grouped statement holding the ungrouped plan's first ``depth`` rows."""
GROUP_POSITIONS = "group_positions"
GROUP_MEMBERS = "group_members"
GROUP_RANKS = "group_ranks"
FACET_CANDIDATES = "facet_candidates"
"""The CTE of a faceted statement holding the plain plan's first ``depth`` rows."""
FACET_COUNTS = "facet_counts"
"""The CTE of a faceted statement numbering its candidates and counting each facet value."""
CURSOR_CANDIDATES = "cursor_candidates"
"""The CTE of a statement with a cursor, holding the plain plan's first ``depth`` rows."""
"""The CTE holding every candidate key once, in fusions of more than
:data:`JOIN_CHAIN_MAX_BRANCHES` branches (no branch's CTE can take this name: theirs end in
``_hits`` or ``_ranked``)."""

JOIN_CHAIN_MAX_BRANCHES = 4
"""Fusions of up to this many branches chain ``FULL OUTER JOIN``s; larger ones join a keys CTE.

Joining branch *i* onto the chain needs ``ON COALESCE(<keys of branches 1..i-1>) = <key i>``:
``n (n - 1) / 2`` key references for ``n`` branches, so the statement, and the time to build,
render, parse and lint it, grows with the square of the branch count (400 branches wrote 2.2
MB of SQL). Beyond four branches (six references, fewer than the ``2 n`` the keys form takes)
the fused CTE selects ``FROM fused_keys``, the ``UNION`` of every branch's keys, and joins each
ranked CTE to it with ``LEFT JOIN`` on the key: linear in the branch count, with the same rows
and the same scores (the terms are added in the same order)."""

HYBRID_DEBUG_COLUMNS = {
    "text": ("text_rank", "text_score"),
    "vector": ("vector_rank", "vector_distance"),
}
"""The rank and raw-score columns ``hybrid_search`` adds with ``'debug', TRUE``, per branch."""

_COMPARISONS: dict[ComparisonOperator, type[exp.Binary]] = {
    ComparisonOperator.EQUAL: exp.EQ,
    ComparisonOperator.NOT_EQUAL: exp.NEQ,
    ComparisonOperator.LESS: exp.LT,
    ComparisonOperator.LESS_OR_EQUAL: exp.LTE,
    ComparisonOperator.GREATER: exp.GT,
    ComparisonOperator.GREATER_OR_EQUAL: exp.GTE,
}


class Binder(Protocol):
    """Turns a caller-supplied value of the plan into an expression node."""

    def text(self, node: object, field: str) -> exp.Expr:
        """A string literal: ``getattr(node, field)``."""
        ...

    def vector(self, node: object, field: str) -> exp.Expr:
        """A vector literal: ``getattr(node, field)``."""
        ...

    def literal(self, node: object, field: str, index: int | None = None) -> exp.Expr:
        """A filter literal: ``getattr(node, field)`` (or its ``index``-th element)."""
        ...


def literal_node(value: Any) -> exp.Expr:
    """The sqlglot node for a filter literal or query text (strings are never numbers).

    A float is written with the shortest text that round-trips (``repr``), so it stays a
    float in SQL: ``exp.convert`` would write ``-2.9e16`` as the integer
    ``-29121896746011604``. A ``decimal.Decimal`` is written exactly, as a cast of its text
    to the narrowest ``DECIMAL(p, s)`` holding it (``CAST('1.59' AS DECIMAL(3, 2))``): a bare
    ``1.59`` is a float on DataFusion, which LanceDB compares with no decimal column, and which
    DataFusion reads against one as ``Decimal(30, 15)``, rounding past 15 digits.
    """
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, decimal.Decimal):
        precision, scale = decimal_digits(value)
        return exp.Cast(
            this=exp.Literal.string(format(value, "f")),
            to=exp.DataType(  # built, not parsed: a search parses no SQL
                this=exp.DataType.Type.DECIMAL,
                expressions=[
                    exp.DataTypeParam(this=exp.Literal.number(precision)),
                    exp.DataTypeParam(this=exp.Literal.number(scale)),
                ],
                nested=False,
            ),
        )
    if isinstance(value, float):
        magnitude = exp.Literal.number(repr(abs(value)))
        magnitude.meta[FLOAT_LITERAL] = True  # a float, whatever the dialect reads the text as
        return exp.Neg(this=magnitude) if math.copysign(1.0, value) < 0 else magnitude
    if isinstance(value, datetime.datetime):
        return TemporalLiteral(this=value.isoformat(sep=" "), kind="TIMESTAMP")
    if isinstance(value, datetime.date):
        return TemporalLiteral(this=value.isoformat(), kind="DATE")
    return exp.convert(value)


class LiteralBinder:
    """Binds values as real literal nodes (the query vector as one :class:`VectorLiteral`)."""

    def __init__(self, profile: DialectProfile) -> None:
        self._profile = profile

    def text(self, node: object, field: str) -> exp.Expr:
        value = getattr(node, field)
        if isinstance(node, Bm25Search) and field == "query_text":
            value = self._profile.full_text(node.search_text)
        return exp.Literal.string(value)

    def vector(self, node: object, field: str) -> exp.Expr:
        return VectorLiteral(this=self._profile.vector_literal(getattr(node, field)))

    def literal(self, node: object, field: str, index: int | None = None) -> exp.Expr:
        value = getattr(node, field)
        return literal_node(value if index is None else value[index])


class SlotBinder:
    """Binds values as :class:`ValueSlot` nodes numbered by ``slots``.

    ``slots`` maps ``(id(node), field, index)`` to a slot number; see
    :func:`hotdata_retrieval.compile.render.plan_shape`.
    """

    def __init__(self, slots: dict[tuple[int, str, int | None], int]) -> None:
        self._slots = slots

    def text(self, node: object, field: str) -> exp.Expr:
        return ValueSlot(this=self._slots[(id(node), field, None)])

    def vector(self, node: object, field: str) -> exp.Expr:
        return ValueSlot(this=self._slots[(id(node), field, None)])

    def literal(self, node: object, field: str, index: int | None = None) -> exp.Expr:
        return ValueSlot(this=self._slots[(id(node), field, index)])


class _MemberBinder:
    """Binds a union member's copy of a branch as the branch itself (the caller's binder
    knows the plan's own nodes: :class:`SlotBinder` numbers slots by node)."""

    def __init__(self, binder: Binder, member: object, branch: object) -> None:
        self._binder = binder
        self._member = member
        self._branch = branch

    def _node(self, node: object) -> object:
        return self._branch if node is self._member else node

    def text(self, node: object, field: str) -> exp.Expr:
        return self._binder.text(self._node(node), field)

    def vector(self, node: object, field: str) -> exp.Expr:
        return self._binder.vector(self._node(node), field)

    def literal(self, node: object, field: str, index: int | None = None) -> exp.Expr:
        return self._binder.literal(self._node(node), field, index)


def identifier(name: str) -> exp.Identifier:
    """An identifier node, quoted when ``name`` is not a bare identifier.

    Keywords are quoted by the dialect's generator (its ``RESERVED_KEYWORDS``).
    """
    return exp.Identifier(this=name, quoted=not is_bare_identifier(name))


def column(name: str, table: str | None = None) -> exp.Column:
    """A column node, optionally qualified by a table or CTE name."""
    return exp.Column(this=identifier(name), table=identifier(table) if table is not None else None)


def searched_table(branch: Branch) -> TableName:
    """The one table a branch visitor compiles: a union branch is compiled member by member
    (:meth:`PlanCompiler.union_branch`), each member a copy of the branch over one table."""
    table = branch.table
    assert isinstance(table, TableName), "a union branch is compiled member by member"
    return table


def table_reference(table: TableName, alias: str | None = None) -> exp.Table:
    """The fully qualified ``catalog.schema.table`` reference (never shortened)."""
    return exp.Table(
        this=identifier(table.name),
        db=identifier(table.schema),
        catalog=identifier(table.catalog),
        alias=exp.TableAlias(this=identifier(alias)) if alias is not None else None,
    )


def ordered(expression: exp.Expr, *, descending: bool) -> exp.Ordered:
    """``expr ASC`` or ``expr DESC``, with each direction's default NULL placement (NULLS
    LAST ascending, NULLS FIRST descending, as in PostgreSQL and DataFusion), so no NULLS
    clause is written. Scores and distances in these sorts are never NULL."""
    return exp.Ordered(this=expression, desc=descending, nulls_first=descending)


def number(value: int | float) -> exp.Expr:
    """A numeric literal written as ``repr(value)`` (``1.0`` stays a float, ``60`` an int)."""
    return exp.Literal.number(repr(value))


@attrs.frozen(kw_only=True)
class BranchRequest:
    """What a branch visitor compiles: one branch's ``SELECT`` of the plan.

    Attributes:
        plan: the plan (its filter applies inside the branch).
        projection: the select items before the raw score (the key alone in a fusion).
        k: the rows the search must produce (the bound of a table-function search).
        limit: the ``LIMIT``, or ``None``.
        offset: the ``OFFSET`` (0: none).
        tie_break: a column that breaks raw-score ties (``<column> ASC``) where the shape
            allows one, or ``None``.
        tie_breakers: the plan's own tie-break columns, ordered after the raw score and
            before ``tie_break`` (a single-branch plan's; a fusion applies its own after the
            fused score).
        filter_through_key: the branch's ``filter_through_key``: its ``WHERE`` is ``key IN
            (SELECT key FROM <rows tables> WHERE <filter>)`` (:meth:`PlanCompiler.where`).
    """

    plan: SearchPlan
    projection: tuple[exp.Expr, ...]
    k: int
    limit: int | None
    offset: int = 0
    tie_break: str | None = None
    tie_breakers: tuple[TieBreaker, ...] = ()
    filter_through_key: bool = False

    @property
    def filtered(self) -> bool:
        """Whether the plan has a filter."""
        return self.plan.filter is not None

    @property
    def cut_after_the_search(self) -> bool:
        """Whether the rows must be cut after something the search function does not see:
        a filter, or tie-breakers (a table function's k keeps its own tied rows first)."""
        return self.filtered or bool(self.tie_breakers)


@attrs.frozen(kw_only=True)
class CompiledBranch:
    """A branch visitor's result.

    Attributes:
        select: ``SELECT <projection>, <raw score> FROM ... [WHERE] ORDER BY ... [LIMIT]``.
        nullable: whether the raw score is computed per row and so NULL where the row has no
            vector (a fusion's ranked CTE then drops those rows).
    """

    select: exp.Select
    nullable: bool = False


@attrs.frozen(kw_only=True)
class FusedBranch:
    """One branch as a fusion visitor sees it: its ranked CTE.

    Attributes:
        name: the branch's name.
        branch: the branch node.
        cte: the ranked CTE's name (``<name>_ranked``), which holds the key, the raw score,
            :data:`RANK_COLUMN` and any columns the fusion adds (:class:`FusedScore`).
    """

    name: str
    branch: Branch
    cte: str

    def column(self, name: str) -> exp.Column:
        """``<cte>.<name>``."""
        return column(name, self.cte)

    @property
    def rank(self) -> exp.Column:
        """The branch's 1-based competition rank, NULL where it missed the row."""
        return column(RANK_COLUMN, self.cte)

    @property
    def raw(self) -> exp.Column:
        """The branch's raw score (``score`` or ``_distance``), NULL where it missed the row."""
        return column(self.branch.raw_score_column, self.cte)


@attrs.frozen(kw_only=True)
class FusedScore:
    """A fusion visitor's result.

    Attributes:
        score: the fused score of a row of the fused CTE (higher is better), built from the
            branches' :class:`FusedBranch` columns; a branch that missed the row has NULLs.
        ranked_columns: per branch, extra select items for its ranked CTE, for methods that
            need window aggregates over the branch, such as ``MIN(score) OVER () AS
            score_min`` for a score-normalised fusion (empty: none).
    """

    score: exp.Expr
    ranked_columns: tuple[tuple[exp.Expr, ...], ...] = ()


COMPILED_FILTER = "compiled_filter"
"""The ``meta`` key of a compiled ``WHERE`` node holding the predicate it was compiled from, so
a rewrite of the compiled tree reads the filter's meaning from the plan, never back from its
SQL (the local engine's nearest-neighbour fast path)."""

LEFT_OUT_TIE_BREAK = "left_out_tie_break"
"""The ``meta`` key of a branch's ``ORDER BY`` node that orders by the raw score alone to keep
an index's shape (the nearest-neighbour fast path, engine contract §2.3; hotdata-cli's scalar
semantic shape): the key column the tie-break would have named. An engine that answers the
shape itself orders ties by key; one that runs such a branch row by row (the local engine,
when its fast path declines the filter) appends ``<key> ASC`` to that ``ORDER BY`` in its own
plan, so tied rows still come in key order and pages stay slices of one ranking
(docs/engines.md, Ties). The statement's text is unchanged."""


@attrs.frozen(kw_only=True)
class SqlSpelling:
    """How a filter operator is written in SQL when it is no function call: the compile
    layer's half of an operator-table row whose ``sql`` names it (the plan layer knows no
    sqlglot).

    Attributes:
        lower: the node as a sqlglot condition: ``lower(compiler, node)``, each value
            through ``compiler.binder.literal(node, field)``.
        text: how filter text's messages name it (``[NOT] BETWEEN``).
        syntax: the sqlglot node class filter text reads it from (``None``: filter text
            does not read it).
        parts: that sqlglot node's column and value expressions, in the row's value-field
            order: ``parts(expression) -> (column, [value, ...])``.
    """

    lower: Callable[[PlanCompiler, Any], exp.Expr]
    text: str
    syntax: type[exp.Expr] | None = None
    parts: Callable[[Any], tuple[exp.Expr, list[exp.Expr]]] | None = None


def _between(compiler: PlanCompiler, node: Between) -> exp.Expr:
    """``column BETWEEN low AND high``, both bounds bound (every store's SQL has it)."""
    return exp.Between(
        this=column(node.column),
        low=compiler.binder.literal(node, "low"),
        high=compiler.binder.literal(node, "high"),
    )


SQL_SPELLINGS: dict[str, SqlSpelling] = {
    "between": SqlSpelling(
        lower=_between,
        text="[NOT] BETWEEN",
        syntax=exp.Between,
        parts=lambda expression: (
            expression.this,
            [expression.args["low"], expression.args["high"]],
        ),
    ),
}
"""The SQL spellings that are no function call, by the name an operator-table row's ``sql``
gives: the compiler lowers the row's leaves with them, and filter text reads them back. A
row whose ``sql`` is not here is written as the function call ``<sql>(column, value,
...)``."""


class PlanCompiler(PredicateVisitor[exp.Expr]):
    """Compiles plans for one dialect, binding values with one binder.

    Dispatch is by the plan node's ``visit_name``: ``visit_bm25_search``,
    ``visit_vector_search`` and ``visit_nearest_neighbor_search`` compile one branch
    (:class:`BranchRequest` → :class:`CompiledBranch`); ``visit_reciprocal_rank_fusion``
    gives the fused score (:class:`FusedBranch` list → :class:`FusedScore`); a filter leaf
    compiles from its operator-table row (:meth:`read_row`), and the connectives, the ``IN``
    list, ``IS NULL`` and the list tests have methods of their own. A node with neither is
    unsupported on the dialect.

    Raises (from :meth:`compile`):
        UnsupportedOnDialectError: the plan needs a search, function, join or fusion method
            the dialect cannot express.
    """

    def __init__(
        self, profile: DialectProfile, binder: Binder, *, empty_lists_as_written: bool = False
    ) -> None:
        self.profile = profile
        self.binder = binder
        self.empty_lists_as_written = empty_lists_as_written
        """Write an empty ``IN`` list as ``col IN ()`` instead of its constant (filter text)."""
        self._negations = 0
        """How many NOTs enclose the filter node being compiled (its NULL guards' sense)."""

    def generic_visit(self, node: Any, *args: Any) -> Any:
        """A plan node this compiler has no ``visit_<name>`` method for: a filter leaf with
        an SQL spelling in its operator-table row is compiled from it (:meth:`read_row`).

        Raises:
            UnsupportedOnDialectError: any other node.
        """
        form = form_of(node)
        if form is not None and form.leaf and self.reads_row(form):
            return self.read_row(node, form, *args)
        name = visit_name_of(type(node)) or type(node).__name__
        method = getattr(type(node), "method", None)
        what = f"the fusion method {method!r}" if isinstance(method, str) and method else name
        raise UnsupportedOnDialectError(what, self.profile.name)

    def search(self, node: SearchNode) -> SearchNode:
        """Return ``node`` if the dialect can express it.

        Raises:
            UnsupportedOnDialectError: it cannot.
        """
        return self.profile.check(node)

    # -- entry point -----------------------------------------------------------------------

    def compile(self, plan: SearchPlan) -> exp.Select:
        """Return the plan as one ``SELECT`` tree (search nodes not yet lowered).

        Raises:
            UnsupportedOnDialectError: the plan needs something the dialect cannot express.
        """
        if plan.group_by is not None:
            return self.grouped(plan)
        if plan.after is not None:
            return self.after_cursor(plan)
        if plan.facets:
            return self.faceted(plan)
        fusion = plan.fusion
        if fusion is None:
            request = BranchRequest(
                plan=plan,
                projection=tuple(column(name) for name in plan.projection),
                k=plan.limit + plan.offset,
                limit=plan.limit,
                offset=plan.offset,
                tie_break=plan.key_column,
                tie_breakers=plan.tie_breakers,
            )
            branch = plan.branches[0]
            select = self.branch(branch, request).select
            if branch.result_name is not None and branch.result_name != branch.raw_score_column:
                named_result(select, branch.raw_score_column, branch.result_name)
            return select
        native = self.profile.native_hybrid_search
        if native is not None and native_hybrid_misfit(plan) is None:
            return self.native_hybrid(plan, native)
        return self.fused(plan, fusion)

    def faceted(self, plan: SearchPlan) -> exp.Select:
        """A faceted plan's statement: the plain plan's first ``depth`` rows
        (:meth:`SearchPlan.candidates`, compiled as any plan, its CTEs lifted to the top) in
        ``facet_candidates``, numbered and counted per facet column ``<c_i>`` by windows::

            facet_counts: SELECT *, ROW_NUMBER() OVER (ORDER BY <ranking>, <tie-breakers>,
                          <key>) AS _rank_position,
                          COUNT(*) OVER (PARTITION BY <c_i>) AS _facet_count_<i>,
                          ROW_NUMBER() OVER (PARTITION BY <c_i> ORDER BY <ranking>, ...)
                          AS _facet_row_<i> FROM facet_candidates
            SELECT <columns>, <c_i>, _rank_position, _facet_count_<i>, _facet_row_<i>
            FROM facet_counts
            WHERE _rank_position > <offset> AND _rank_position <= <offset + limit>
               OR _facet_row_<i> = 1 AND <c_i> IS NOT NULL
            ORDER BY _rank_position

        The page's rows, then one row per counted value of each facet (its best row, which
        carries the value's count): the result reads the page and the counts apart
        (:func:`~hotdata_retrieval.engines.results.search_result`). A nearest branch counts
        only rows with a distance (a row without a vector is no candidate).
        """
        key = plan.key_column
        candidates = plan.candidates()
        inner = self.compile(candidates)
        lifted = inner.args.get("with_")
        ctes: list[exp.CTE] = list(lifted.expressions) if lifted is not None else []
        inner.set("with_", None)
        ctes.append(_cte(FACET_CANDIDATES, inner))
        ranking = candidates.ranking_column if plan.fusion is None else candidates.score_name
        assert ranking is not None  # candidates() names a fusion's score
        higher = plan.fusion is not None or plan.branches[0].higher_is_better

        def order() -> exp.Order:
            terms = [ordered(column(ranking), descending=higher)]
            terms.extend(
                ordered(column(breaker.column), descending=breaker.descending)
                for breaker in plan.tie_breakers
            )
            if key is not None:
                terms.append(ordered(column(key), descending=False))
            return exp.Order(expressions=terms)

        position = "_rank_position"
        windows: list[exp.Expr] = [
            exp.Star(),
            exp.Alias(
                this=exp.Window(this=exp.RowNumber(), order=order()), alias=identifier(position)
            ),
        ]
        page: exp.Expr = exp.LTE(
            this=column(position), expression=exp.Literal.number(plan.offset + plan.limit)
        )
        if plan.offset:
            page = exp.And(
                this=exp.GT(this=column(position), expression=exp.Literal.number(plan.offset)),
                expression=page,
            )
        kept: exp.Expr = exp.Paren(this=page)
        outputs: list[str] = []
        for index, facet in enumerate(plan.facets, 1):
            count, first = f"_facet_count_{index}", f"_facet_row_{index}"
            windows.append(
                exp.Alias(
                    this=exp.Window(this=exp.Count(this=exp.Star()), partition_by=[column(facet)]),
                    alias=identifier(count),
                )
            )
            windows.append(
                exp.Alias(
                    this=exp.Window(
                        this=exp.RowNumber(), partition_by=[column(facet)], order=order()
                    ),
                    alias=identifier(first),
                )
            )
            outputs.extend((count, first))
            kept = exp.Or(
                this=kept,
                expression=exp.Paren(
                    this=exp.And(
                        this=exp.EQ(this=column(first), expression=exp.Literal.number(1)),
                        expression=exp.Is(this=column(facet), expression=exp.Null(), negate=True),
                    )
                ),
            )
        present = None
        if not higher:
            present = exp.Where(
                this=exp.Is(this=column(ranking), expression=exp.Null(), negate=True)
            )
        ctes.append(
            _cte(
                FACET_COUNTS,
                exp.Select(
                    expressions=windows,
                    from_=exp.From(this=exp.Table(this=identifier(FACET_CANDIDATES))),
                    where=present,
                ),
            )
        )
        names = dict.fromkeys(
            [*plan.projection, *plan.result_columns, *plan.facets, position, *outputs]
        )
        return exp.Select(
            expressions=[column(name) for name in names],
            with_=exp.With(expressions=ctes),
            from_=exp.From(this=exp.Table(this=identifier(FACET_COUNTS))),
            where=exp.Where(this=kept),
            order=exp.Order(expressions=[ordered(column(position), descending=False)]),
        )

    def grouped(self, plan: SearchPlan) -> exp.Select:
        """A grouped plan's statement: the ungrouped plan's first ``depth`` rows
        (:meth:`SearchPlan.candidates`, compiled as any plan, its CTEs lifted to the top) in
        ``group_candidates``, then three windows over them and the page::

            group_positions: SELECT *, ROW_NUMBER() OVER (ORDER BY <ranking>, <tie-breakers>,
                             <key>) AS _rank_position FROM group_candidates
                             WHERE <group> IS NOT NULL
            group_members:   SELECT *, ROW_NUMBER() OVER (PARTITION BY <group>
                             ORDER BY _rank_position) AS _group_row, MIN(_rank_position)
                             OVER (PARTITION BY <group>) AS _group_first FROM group_positions
            group_ranks:     SELECT *, DENSE_RANK() OVER (ORDER BY _group_first) AS
                             _group_rank FROM group_members WHERE _group_row <= <group_size>
            SELECT <columns> FROM group_ranks WHERE _group_rank > <offset>
            AND _group_rank <= <offset + limit> ORDER BY _group_rank, _group_row

        A group is ranked by its best row's place in the ranking, so by its best row's
        score, ties by that row's tie-breakers and key. The candidates' own shape (a
        nearest branch's fast path, a fusion's CTEs) is unchanged.
        """
        group = plan.group_by
        key = plan.key_column
        assert group is not None and key is not None  # SearchPlan: a grouped plan has a key
        candidates = plan.candidates()
        ctes = self.lifted_candidates(plan, GROUP_CANDIDATES)
        ranking = candidates.ranking_column if plan.fusion is None else candidates.score_name
        assert ranking is not None  # candidates() names a fusion's score
        higher = plan.fusion is not None or plan.branches[0].higher_is_better
        order = [ordered(column(ranking), descending=higher)]
        order.extend(
            ordered(column(breaker.column), descending=breaker.descending)
            for breaker in plan.tie_breakers
        )
        order.append(ordered(column(key), descending=False))
        present: exp.Expr = exp.Is(this=column(group), expression=exp.Null(), negate=True)
        if not higher:
            # a row without a vector has no distance: no candidate, in no group
            present = exp.And(
                this=present,
                expression=exp.Is(this=column(ranking), expression=exp.Null(), negate=True),
            )
        position = "_rank_position"
        ctes.append(
            _cte(
                GROUP_POSITIONS,
                exp.Select(
                    expressions=[
                        exp.Star(),
                        exp.Alias(
                            this=exp.Window(
                                this=exp.RowNumber(), order=exp.Order(expressions=order)
                            ),
                            alias=identifier(position),
                        ),
                    ],
                    from_=exp.From(this=exp.Table(this=identifier(GROUP_CANDIDATES))),
                    where=exp.Where(this=present),
                ),
            )
        )
        ctes.append(
            _cte(
                GROUP_MEMBERS,
                exp.Select(
                    expressions=[
                        exp.Star(),
                        exp.Alias(
                            this=exp.Window(
                                this=exp.RowNumber(),
                                partition_by=[column(group)],
                                order=exp.Order(
                                    expressions=[ordered(column(position), descending=False)]
                                ),
                            ),
                            alias=identifier("_group_row"),
                        ),
                        exp.Alias(
                            this=exp.Window(
                                this=exp.Min(this=column(position)), partition_by=[column(group)]
                            ),
                            alias=identifier("_group_first"),
                        ),
                    ],
                    from_=exp.From(this=exp.Table(this=identifier(GROUP_POSITIONS))),
                ),
            )
        )
        ctes.append(
            _cte(
                GROUP_RANKS,
                exp.Select(
                    expressions=[
                        exp.Star(),
                        exp.Alias(
                            this=exp.Window(
                                this=exp.DenseRank(),
                                order=exp.Order(
                                    expressions=[ordered(column("_group_first"), descending=False)]
                                ),
                            ),
                            alias=identifier("_group_rank"),
                        ),
                    ],
                    from_=exp.From(this=exp.Table(this=identifier(GROUP_MEMBERS))),
                    where=exp.Where(
                        this=exp.LTE(
                            this=column("_group_row"),
                            expression=exp.Literal.number(plan.group_size),
                        )
                    ),
                ),
            )
        )
        page: exp.Expr = exp.LTE(
            this=column("_group_rank"), expression=exp.Literal.number(plan.offset + plan.limit)
        )
        if plan.offset:
            page = exp.And(
                this=exp.GT(this=column("_group_rank"), expression=exp.Literal.number(plan.offset)),
                expression=page,
            )
        return exp.Select(
            expressions=[column(name) for name in (*plan.projection, *plan.result_columns)],
            with_=exp.With(expressions=ctes),
            from_=exp.From(this=exp.Table(this=identifier(GROUP_RANKS))),
            where=exp.Where(this=page),
            order=exp.Order(
                expressions=[
                    ordered(column("_group_rank"), descending=False),
                    ordered(column("_group_row"), descending=False),
                ]
            ),
        )

    def lifted_candidates(self, plan: SearchPlan, name: str) -> list[exp.CTE]:
        """The CTEs of ``plan.candidates()`` compiled (its own, lifted to the top), then the
        candidates' statement itself as CTE ``name``."""
        inner = self.compile(plan.candidates())
        lifted = inner.args.get("with_")
        ctes: list[exp.CTE] = list(lifted.expressions) if lifted is not None else []
        inner.set("with_", None)
        ctes.append(_cte(name, inner))
        return ctes

    def after_cursor(self, plan: SearchPlan) -> exp.Select:
        """A page continuing a ranking after a cursor's row, without ``OFFSET``: the plain
        plan's first ``depth`` rows (:meth:`SearchPlan.candidates`; for a single branch the
        rows served before the cursor and ``limit``) in ``cursor_candidates``, then::

            SELECT <columns> FROM cursor_candidates
            WHERE score < CAST('<value>' AS DOUBLE)
            OR (score = CAST('<value>' AS DOUBLE) AND id > <key>)
            ORDER BY score DESC, id ASC LIMIT <limit>

        (``_distance > <value>`` and ascending for a nearest branch's distance): the rows
        ranked after the cursor's row, whose value and key the token carries.
        """
        cursor = plan.cursor
        key = plan.key_column
        assert cursor is not None and key is not None  # SearchPlan: a cursor plan has a key
        candidates = plan.candidates()
        ranking = candidates.ranking_column if plan.fusion is None else candidates.score_name
        assert ranking is not None  # candidates() names a fusion's score
        higher = plan.fusion is not None or plan.branches[0].higher_is_better
        # Read from text: a decimal literal is a DECIMAL in DuckDB, whose conversion to a
        # double can miss the value by one unit in the last place; text reads exactly.
        value: exp.Expr = exp.Cast(
            this=exp.Literal.string(repr(cursor.value)), to=exp.DataType.build("DOUBLE")
        )
        beyond: exp.Expr = (
            exp.LT(this=column(ranking), expression=value)
            if higher
            else exp.GT(this=column(ranking), expression=value)
        )
        tied = exp.And(
            this=exp.EQ(this=column(ranking), expression=value.copy()),
            expression=exp.GT(this=column(key), expression=literal_node(cursor.key)),
        )
        return exp.Select(
            expressions=[column(name) for name in (*plan.projection, *plan.result_columns)],
            with_=exp.With(expressions=self.lifted_candidates(plan, CURSOR_CANDIDATES)),
            from_=exp.From(this=exp.Table(this=identifier(CURSOR_CANDIDATES))),
            where=exp.Where(this=exp.Or(this=beyond, expression=exp.Paren(this=tied))),
            order=exp.Order(
                expressions=[
                    ordered(column(ranking), descending=higher),
                    ordered(column(key), descending=False),
                ]
            ),
            limit=exp.Limit(expression=exp.Literal.number(plan.limit)),
        )

    def branch(self, branch: Branch, request: BranchRequest) -> CompiledBranch:
        """Compile one branch (dispatched on its ``visit_name``); a branch over a
        :class:`~hotdata_retrieval.plan.names.TableUnion` as :meth:`union_branch`."""
        if branch.filter_through_key:
            request = attrs.evolve(request, filter_through_key=True)
        if isinstance(branch.table, TableUnion):
            return self.union_branch(branch, branch.table, request)
        return cast(CompiledBranch, self.visit(branch, request))

    def union_branch(
        self, branch: Branch, union: TableUnion, request: BranchRequest
    ) -> CompiledBranch:
        """A branch over a union: ``SELECT <projection>, <raw> FROM (<member> UNION ALL
        ...) AS <union alias> ORDER BY <raw>, <tie-breakers>, <key> LIMIT n [OFFSET m]``.

        Each member is the branch compiled over that table alone, cut at the request's k and
        wrapped as ``SELECT * FROM (<member>) AS union_member_<i>`` (a member with its own
        ``ORDER BY ... LIMIT`` cannot stand in a ``UNION`` as written on every dialect): the
        shape each member's own index serves (``bm25_search`` per member; the nearest-neighbour
        fast path under a sort and limit, engine contract §2.3, "vector pathway inside a
        CTE"). The top k of the union is inside the members' top k, since the outer query
        orders by the members' own order. An exact member is the bare scan, no sort or limit
        at all, so no index rule has an anchor in it. Tie-break columns a member orders by
        are projected by each member so the outer query can order by them too.
        """
        projection = list(request.projection)
        names = {item.alias_or_name for item in projection}
        results = set(request.plan.result_columns)
        for breaker in request.tie_breakers:
            if breaker.column not in names and breaker.column not in results:
                projection.append(column(breaker.column))
                names.add(breaker.column)
        if request.tie_break is not None and request.tie_break not in names:
            projection.append(column(request.tie_break))
        exact = isinstance(branch, NearestNeighborSearch) and branch.exact
        member_request = attrs.evolve(
            request, projection=tuple(projection), limit=request.k, offset=0
        )
        members: list[exp.Select] = []
        nullable = False
        binder = self.binder
        for position, member in enumerate(union.members, start=1):
            copy = attrs.evolve(branch, table=member)
            self.binder = _MemberBinder(binder, copy, branch)
            try:
                compiled = cast(CompiledBranch, self.visit(copy, member_request))
            finally:
                self.binder = binder
            nullable = nullable or compiled.nullable
            select = compiled.select
            if exact:
                select.set("order", None)
                select.set("limit", None)
            else:
                select = exp.Select(
                    expressions=[exp.Star()],
                    from_=exp.From(
                        this=exp.Subquery(
                            this=select,
                            alias=exp.TableAlias(this=identifier(f"{UNION_MEMBER}_{position}")),
                        )
                    ),
                )
            members.append(select)
        combined = _union(members, distinct=False)
        outer = exp.Select(
            expressions=[*request.projection, column(branch.raw_score_column)],
            from_=exp.From(
                this=exp.Subquery(this=combined, alias=exp.TableAlias(this=identifier(UNION)))
            ),
            order=exp.Order(
                expressions=self.branch_order(
                    request, branch.raw_score_column, branch.higher_is_better, tie_break=True
                )
            ),
        )
        if request.limit is not None:
            outer.set("limit", exp.Limit(expression=exp.Literal.number(request.limit)))
        if request.offset:
            outer.set("offset", exp.Offset(expression=exp.Literal.number(request.offset)))
        return CompiledBranch(select=outer, nullable=nullable)

    # -- filters ---------------------------------------------------------------------------

    def visit_comparison(self, node: Comparison) -> exp.Expr:
        return _COMPARISONS[node.operator](
            this=column(node.column), expression=self.binder.literal(node, "value")
        )

    def visit_in_list(self, node: InList) -> exp.Expr:
        if not node.values:
            if self.empty_lists_as_written:
                empty = exp.In(this=column(node.column), expressions=[])
                return exp.Not(this=empty) if node.negated else empty
            return exp.true() if node.negated else exp.false()
        membership = exp.In(
            this=column(node.column),
            expressions=[
                self.binder.literal(node, "values", index) for index in range(len(node.values))
            ],
        )
        return exp.Not(this=membership) if node.negated else membership

    def visit_is_null(self, node: IsNull) -> exp.Expr:
        return exp.Is(this=column(node.column), expression=exp.Null(), negate=node.negated or None)

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> exp.Expr:
        """A filter leaf as its row spells it: :data:`SQL_SPELLINGS`' lowering of the row's
        ``sql``, or the function call ``<sql>(column, value, ...)`` (``starts_with(title,
        'a')``: DataFusion's, DuckDB's and PostgreSQL's function, which reads no character as
        a pattern), each value bound, a tuple of values as one array."""
        assert form.sql is not None  # reads_row
        spelling = SQL_SPELLINGS.get(form.sql)
        if spelling is not None:
            return spelling.lower(self, node)
        return exp.Anonymous(
            this=form.sql, expressions=[column(node.column), *self.bound_arguments(node, form)]
        )

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        """A row with an SQL spelling (never its expansion: a statement template binds the
        node's own values, which an expansion's new nodes do not hold)."""
        return form.sql is not None

    def bound_arguments(self, node: Any, form: PredicateForm) -> list[exp.Expr]:
        """``node``'s values in field order, each bound (a tuple of values as one array
        literal)."""
        arguments: list[exp.Expr] = []
        for field, each in form.value_fields:
            if each:
                count = len(getattr(node, field))
                items = [self.binder.literal(node, field, index) for index in range(count)]
                arguments.append(exp.Array(expressions=items))
            else:
                arguments.append(self.binder.literal(node, field))
        return arguments

    def visit_contains_all(self, node: ContainsAll) -> exp.Expr:
        """``array_has_all(column, ARRAY[...])`` (DataFusion and DuckDB); an empty list is
        ``TRUE``."""
        return self._list_test("array_has_all", node, empty=exp.true())

    def visit_contains_any(self, node: ContainsAny) -> exp.Expr:
        """``array_has_any(column, ARRAY[...])`` (DataFusion and DuckDB); an empty list is
        ``FALSE``."""
        return self._list_test("array_has_any", node, empty=exp.false())

    def _list_test(
        self, function: str, node: ContainsAll | ContainsAny, *, empty: exp.Expr
    ) -> exp.Expr:
        if not node.values:
            return empty
        return exp.Anonymous(
            this=function, expressions=[column(node.column), self.list_literal(node)]
        )

    def list_literal(self, node: ContainsAll | ContainsAny) -> exp.Expr:
        """The node's values as an array literal, each value bound."""
        return exp.Array(
            expressions=[
                self.binder.literal(node, "values", index) for index in range(len(node.values))
            ]
        )

    def visit_and(self, node: And) -> exp.Expr:
        return self._connective(exp.And, node.operands, And)

    def visit_or(self, node: Or) -> exp.Expr:
        return self._connective(exp.Or, node.operands, Or)

    def visit_not(self, node: Not) -> exp.Expr:
        self._negations += 1
        try:
            operand = self.predicate(node.operand)
        finally:
            self._negations -= 1
        return exp.Not(this=self._grouped(operand))

    def _connective(
        self,
        connective: type[exp.And] | type[exp.Or],
        operands: Sequence[Predicate],
        node: type[And] | type[Or],
    ) -> exp.Expr:
        negated = self._negations % 2 == 1
        # an OR once its NOTs are pushed down: guard the operands that share a column
        guarded = self.profile.guards_null_folds and (node is Or) != negated
        if guarded:
            operands = spread(node, tuple(operands))
        compiled = [self.predicate(operand) for operand in operands]
        if guarded:
            columns = guarded_columns(tuple(operands))
            compiled = [self._guarded(part, name, negated) for part, name in zip(compiled, columns)]
        parts = [part if isinstance(part, connective) else self._grouped(part) for part in compiled]
        combined = parts[0]
        for operand in parts[1:]:
            combined = connective(this=combined, expression=operand)
        return combined

    def _guarded(self, operand: exp.Expr, column_name: str | None, negated: bool) -> exp.Expr:
        """A compiled operand as it is (``column_name`` ``None``), or with the NULL guard of
        its sense (:mod:`._null_guards`): ``g AND (c IS NOT NULL OR NULL)``, or under an odd
        number of NOTs ``g OR (c IS NULL AND NULL)``."""
        if column_name is None:
            return operand
        is_null = exp.Is(this=column(column_name), expression=exp.Null())
        if negated:
            unknown = exp.Paren(this=exp.And(this=is_null, expression=exp.Null()))
            kept = operand if isinstance(operand, exp.Or) else self._grouped(operand)
            return exp.Or(this=kept, expression=unknown)
        present = exp.Paren(this=exp.Or(this=exp.Not(this=is_null), expression=exp.Null()))
        kept = operand if isinstance(operand, exp.And) else self._grouped(operand)
        return exp.And(this=kept, expression=present)

    @staticmethod
    def _grouped(expression: exp.Expr) -> exp.Expr:
        """Parenthesise a nested AND/OR (a chain of the same connective needs none)."""
        if isinstance(expression, (exp.And, exp.Or)):
            return exp.Paren(this=expression)
        return expression

    def filter_where(self, predicate: Predicate) -> exp.Where:
        """``WHERE <predicate>``, the node carrying the predicate in its ``meta`` under
        :data:`COMPILED_FILTER`."""
        where = exp.Where(this=self.predicate(predicate))
        where.meta[COMPILED_FILTER] = predicate
        return where

    def where(self, plan: SearchPlan, *, through_key: bool = False) -> exp.Where | None:
        """The plan's filter as a ``WHERE`` clause, or ``None``. ``through_key`` (a branch's
        ``filter_through_key``): ``WHERE key IN (SELECT key FROM <rows table> WHERE <filter>
        UNION ALL ...)`` over each of the plan's ``row_source`` tables, whose columns the
        filter reads."""
        if plan.filter is None:
            return None
        if not through_key:
            return self.filter_where(plan.filter)
        key = plan.key_column
        assert key is not None  # filter_through_key is refused without a fusion's key
        selects = [
            exp.Select(
                expressions=[column(key)],
                from_=exp.From(this=table_reference(member)),
                where=self.filter_where(plan.filter),
            )
            for member in plan.row_source.members
        ]
        keys = _union(selects, distinct=False)
        return exp.Where(this=exp.In(this=column(key), query=exp.Subquery(this=keys)))

    # -- branches --------------------------------------------------------------------------

    def branch_select(
        self,
        request: BranchRequest,
        *,
        raw: exp.Expr,
        source: exp.Expr,
        raw_column: str,
        higher_is_better: bool,
        tie_break: bool,
        bounded: bool,
    ) -> exp.Select:
        """``SELECT <projection>, <raw> FROM <source> [WHERE] ORDER BY <raw_column> <dir>
        [, <tie break> ASC] [LIMIT] [OFFSET]`` for one branch.

        Args:
            request: the branch's request.
            raw: the raw-score select item (a column, or ``<expr> AS <raw_column>``).
            source: the ``FROM`` item.
            raw_column: the raw score's column name.
            higher_is_better: sort the raw score descending.
            tie_break: add the request's tie-break column, if it has one. The request's
                ``tie_breakers`` come first and always (a shape that leaves out the key
                tie-break to keep the index fast path has lost it once they are there, so the
                key follows them then too). A key left out is named in the ``ORDER BY``'s
                ``meta`` (:data:`LEFT_OUT_TIE_BREAK`).
            bounded: add the request's ``LIMIT``, if it has one.
        """
        order = exp.Order(
            expressions=self.branch_order(
                request, raw_column, higher_is_better, tie_break=tie_break
            )
        )
        if not (tie_break or request.tie_breakers) and request.tie_break is not None:
            order.meta[LEFT_OUT_TIE_BREAK] = request.tie_break
        select = exp.Select(
            expressions=[*request.projection, raw],
            from_=exp.From(this=source),
            where=self.where(request.plan, through_key=request.filter_through_key),
            order=order,
        )
        if bounded and request.limit is not None:
            select.set("limit", exp.Limit(expression=exp.Literal.number(request.limit)))
        if request.offset:
            select.set("offset", exp.Offset(expression=exp.Literal.number(request.offset)))
        return select

    @staticmethod
    def branch_order(
        request: BranchRequest, raw_column: str, higher_is_better: bool, *, tie_break: bool
    ) -> list[exp.Ordered]:
        """A branch's ``ORDER BY`` items: the raw score, the request's tie-breakers, then its
        key tie-break (with ``tie_break``, or whenever there are tie-breakers: see
        :meth:`branch_select`)."""
        order = [ordered(column(raw_column), descending=higher_is_better)]
        order.extend(
            ordered(column(breaker.column), descending=breaker.descending)
            for breaker in request.tie_breakers
        )
        if (tie_break or request.tie_breakers) and request.tie_break is not None:
            order.append(ordered(column(request.tie_break), descending=False))
        return order

    def _table_search(
        self, node_type: type[TextSearch] | type[SemanticSearch], branch: Branch, k: int | None
    ) -> exp.Table:
        node = node_type(
            this=table_reference(searched_table(branch)),
            column=identifier(branch.column),
            query=self.binder.text(branch, "query_text"),
            k=exp.Literal.number(k) if k is not None else None,
        )
        return exp.Table(this=self.search(node))

    def visit_bm25_search(self, branch: Bm25Search, request: BranchRequest) -> CompiledBranch:
        """``SELECT ..., score FROM <text search> [WHERE] ORDER BY score DESC, key ASC LIMIT``.

        The text search applies its k before any WHERE (engine contract §1.1): with a filter,
        k would cut rows the filter keeps and return fewer than asked. Without k the search
        runs to the engine's larger default bound, then the WHERE, then ``ORDER BY score DESC
        LIMIT k`` — the same top-k the filter asks for. Tie-breakers likewise: the function's
        k would keep its own choice of the rows tied at the cut, before they order them.
        """
        bound = None if request.cut_after_the_search else request.k
        source = self._table_search(TextSearch, branch, bound)
        select = self.branch_select(
            request,
            raw=column(branch.raw_score_column),
            source=source,
            raw_column=branch.raw_score_column,
            higher_is_better=branch.higher_is_better,
            tie_break=True,
            bounded=True,
        )
        return CompiledBranch(select=select)

    def scalar_semantic(self, request: BranchRequest, branch: VectorSearch | None = None) -> bool:
        """Whether a semantic branch of ``request`` compiles to the scalar distance shape:
        when the branch asks for it (``scalar=True``; a dialect without the scalar then
        refuses it), or with a filter, when the dialect has a scalar semantic distance.

        The table function applies its k before any WHERE (engine contract §1.2), so a
        selective filter would leave the branch with fewer rows than exist; the scalar
        distance is computed for the rows the WHERE keeps, then ordered and bounded (contract
        §1.3: the engine embeds the query with the index's model and ranks by its metric).
        """
        if branch is not None and branch.scalar:
            return True
        return request.cut_after_the_search and self.profile.renders(SemanticDistance)

    def visit_vector_search(self, branch: VectorSearch, request: BranchRequest) -> CompiledBranch:
        """The semantic table function ``... ORDER BY _distance ASC, key ASC LIMIT k``: its k
        is the bound, and the LIMIT (after the sort: a LIMIT without it takes the lowest
        rowids, contract §1.2) keeps the order when a caller wraps the statement in an outer
        query — a sort without a limit in a subquery is one an optimizer may drop;
        filtered, the scalar shape ``SELECT ..., <semantic distance> AS _distance FROM c.s.t
        WHERE ... ORDER BY _distance ASC, key ASC LIMIT n`` (:meth:`scalar_semantic`)."""
        if self.scalar_semantic(request, branch):
            distance = self.search(
                SemanticDistance(
                    this=column(branch.column), query=self.binder.text(branch, "query_text")
                )
            )
            select = self.branch_select(
                request,
                raw=exp.Alias(this=distance, alias=identifier(branch.raw_score_column)),
                source=table_reference(searched_table(branch)),
                raw_column=branch.raw_score_column,
                higher_is_better=branch.higher_is_better,
                # the asked-for scalar is hotdata-cli's shape, ORDER BY distance alone
                tie_break=not branch.scalar,
                bounded=True,
            )
            return CompiledBranch(select=select, nullable=True)
        select = self.branch_select(
            request,
            raw=column(branch.raw_score_column),
            source=self._table_search(SemanticSearch, branch, request.k),
            raw_column=branch.raw_score_column,
            higher_is_better=branch.higher_is_better,
            tie_break=True,
            bounded=True,
        )
        return CompiledBranch(select=select)

    def visit_nearest_neighbor_search(
        self, branch: NearestNeighborSearch, request: BranchRequest
    ) -> CompiledBranch:
        """``SELECT ..., <distance>(col, <vector>) AS _distance FROM c.s.t [WHERE] ORDER BY
        _distance ASC LIMIT n``: the vector-index fast-path shape, with no tie-break in the
        ORDER BY (it would cost the index fast path, engine contract §2.3). An exact branch
        scans ``FROM c.s.t AS exact_scan`` and breaks ties by key: a single alias on the scan
        with no outer query is the shape the index rule declines (contract §2.3 and §6 #13),
        and with no index to keep, the tie-break costs nothing."""
        distance = self.search(
            VectorDistance(
                this=column(branch.column),
                expression=self.binder.vector(branch, "query_vector"),
                metric=branch.metric.value,
            )
        )
        select = self.branch_select(
            request,
            raw=exp.Alias(this=distance, alias=identifier(branch.raw_score_column)),
            source=table_reference(
                searched_table(branch), alias=EXACT_SCAN if branch.exact else None
            ),
            raw_column=branch.raw_score_column,
            higher_is_better=branch.higher_is_better,
            tie_break=branch.exact,
            bounded=True,
        )
        return CompiledBranch(select=select, nullable=True)

    # -- fusion ----------------------------------------------------------------------------

    def fused(self, plan: SearchPlan, fusion: Fusion) -> exp.Select:
        """The fused statement: per branch a hits CTE and a ranked CTE (the same for every
        fusion method), the fused CTE scored by the fusion's visitor, joined back to the
        table.

        Raises:
            UnsupportedOnDialectError: a branch or fusion method the dialect has no visitor
                for, or a search it cannot express.
        """
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        depth = plan.depth
        names = plan.branch_names
        fused_branches = tuple(
            FusedBranch(name=name, branch=branch, cte=f"{name}_ranked")
            for name, branch in zip(names, fusion.branches)
        )
        scored = cast(FusedScore, self.visit(fusion, fused_branches))
        extra = scored.ranked_columns or ((),) * len(fused_branches)
        ctes: list[exp.CTE] = []
        for fused_branch, ranked_columns in zip(fused_branches, extra):
            branch = fused_branch.branch
            # A table-function branch's depth cut breaks score ties by key (free: its rows are
            # already bounded by k); a nearest branch keeps the fast-path shape (§2.3).
            compiled = self.branch(
                branch,
                BranchRequest(
                    plan=plan,
                    projection=(column(key),),
                    k=depth,
                    limit=depth,
                    offset=0,
                    tie_break=key,
                ),
            )
            ctes.append(_cte(f"{fused_branch.name}_hits", compiled.select))
            ranked = exp.Select(
                expressions=[
                    column(key),
                    column(branch.raw_score_column),
                    exp.Alias(
                        this=self.branch_rank(fusion, branch, key),
                        alias=identifier(RANK_COLUMN),
                    ),
                    *ranked_columns,
                ],
                from_=exp.From(this=exp.Table(this=identifier(f"{fused_branch.name}_hits"))),
            )
            if compiled.nullable:
                # A row whose vector is NULL has no distance: it is no candidate. Dropped here,
                # outside the fast-path query, where the sort already put it last.
                ranked.set(
                    "where",
                    exp.Where(
                        this=exp.Is(
                            this=column(branch.raw_score_column), expression=exp.Null(), negate=True
                        )
                    ),
                )
            ctes.append(_cte(fused_branch.cte, ranked))
        if not self.chains_joins(len(names)):
            ctes.append(_cte(FUSED_KEYS, self._fused_keys(plan)))
        ctes.append(_cte(FUSED, self._fused(plan, fused_branches, scored.score)))

        completed = self.page_scores(plan)
        projection: list[exp.Expr] = [column(name, BASE) for name in plan.projection]
        formula = plan.formula
        final: exp.Expr = column("score", FUSED)
        source: exp.Expr = exp.Table(this=identifier(FUSED))
        if formula is not None:
            # The formula is computed once per candidate in its own CTE (the final join's
            # row is read there), and read back under the fused CTE's name.
            ctes.append(_cte(RESCORED, self.rescored(plan, formula)))
            final = column(FORMULA_SCORE, FUSED)
            source = exp.Table(
                this=identifier(RESCORED), alias=exp.TableAlias(this=identifier(FUSED))
            )
        if plan.score_name is not None:
            score = final.copy()
            projection.append(
                score
                if plan.score_name == "score" and formula is None
                else exp.Alias(this=score, alias=identifier(plan.score_name))
            )
        if plan.include_branch_scores:
            for name, branch in zip(names, fusion.branches):
                rank_name, raw_name = debug_columns(name, branch)
                projection.append(column(rank_name, FUSED))
                value = completed.get(name)
                projection.append(
                    column(raw_name, FUSED)
                    if value is None
                    else exp.Alias(this=value.copy(), alias=identifier(raw_name))
                )
        for _, bound_name in self.explained_bounds(plan, fused_branches):
            projection.append(column(bound_name, FUSED))
        if formula is not None:
            projection.append(
                exp.Alias(this=column("score", FUSED), alias=identifier(FUSED_SCORE_COLUMN))
            )
            projection.extend(column(name, FUSED) for name in term_columns(formula))
        for name, branch in zip(names, fusion.branches):
            if branch.result_name is not None:
                value = completed.get(name)
                raw = column(debug_columns(name, branch)[1], FUSED) if value is None else value
                projection.append(exp.Alias(this=raw.copy(), alias=identifier(branch.result_name)))
        return exp.Select(
            expressions=projection,
            with_=exp.With(expressions=ctes),
            from_=exp.From(this=source),
            joins=[
                exp.Join(
                    this=self.rows_reference(plan),
                    on=exp.EQ(this=column(key, BASE), expression=column(key, FUSED)),
                )
            ],
            # The minimum score (the formula's, if any) applies after fusion, before the page.
            where=None
            if fusion.min_score is None
            else exp.Where(
                this=exp.GTE(this=final.copy(), expression=literal_node(fusion.min_score))
            ),
            order=self.final_order(plan, key, completed, final),
            limit=exp.Limit(expression=exp.Literal.number(plan.limit)),
            offset=exp.Offset(expression=exp.Literal.number(plan.offset)) if plan.offset else None,
        )

    def explained_bounds(
        self, plan: SearchPlan, branches: Sequence[FusedBranch]
    ) -> list[tuple[exp.Column, str]]:
        """With the plan's ``explain_scores``, each branch's normalization bounds in its ranked
        CTE (:data:`SIMILARITY_LOW`, :data:`SIMILARITY_HIGH`) and the result column each is
        returned as (:func:`~hotdata_retrieval.plan.search.bound_columns`); empty without it,
        and for a rank-based fusion."""
        fusion = plan.fusion
        if fusion is None or not plan.explain_scores:
            return []
        return [
            (fused_branch.column(source), name)
            for fused_branch in branches
            for source, name in zip(
                (SIMILARITY_LOW, SIMILARITY_HIGH), bound_columns(fused_branch.name, fusion)
            )
        ]

    def page_scores(self, plan: SearchPlan) -> dict[str, exp.Expr]:
        """Per branch ``page_scores`` names, the value its raw-score column takes in the
        final ``SELECT``: ``COALESCE(fused.<branch>_distance, <distance of the joined row>)``
        — the branch's own distance where it returned the row, else the distance computed
        from the row's vector (:meth:`page_distance`), in the join to ``rows_from``, outside
        every branch's query, whose fast-path shape is unchanged."""
        values: dict[str, exp.Expr] = {}
        for name, branch in plan.page_scored_branches:
            values[name] = exp.Coalesce(
                this=column(debug_columns(name, branch)[1], FUSED),
                expressions=[self.page_distance(branch)],
            )
        return values

    def page_distance(self, branch: NearestNeighborSearch) -> exp.Expr:
        """The branch's distance for the row the final join reads, ``<distance>(base.<column>,
        <vector>)``: the same distance node its own query reports, over ``base``. A dialect
        whose branch reports another expression than the node (PostgreSQL) overrides it."""
        return self.search(
            VectorDistance(
                this=column(branch.column, BASE),
                expression=self.binder.vector(branch, "query_vector"),
                metric=branch.metric.value,
            )
        )

    def rows_reference(self, plan: SearchPlan) -> exp.Expr:
        """The final join's source, aliased ``base``: the plan's ``row_source`` table, or for
        a union ``(SELECT <key>, <columns read> FROM <member> UNION ALL ...) AS base``, each
        hit read from its own member."""
        source = plan.row_source
        if not isinstance(source, TableUnion):
            return table_reference(source, alias=BASE)
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        results = set(plan.result_columns)
        named = {branch.result_name for branch in plan.branches if branch.result_name}
        read = dict.fromkeys(
            [
                key,
                *plan.projection,
                *(
                    breaker.column
                    for breaker in plan.tie_breakers
                    if breaker.column not in results and breaker.column not in named
                ),
                *plan.page_score_columns,
                *(() if plan.formula is None else plan.formula.columns),
            ]
        )
        selects = [
            exp.Select(
                expressions=[column(name) for name in read],
                from_=exp.From(this=table_reference(member)),
            )
            for member in source.members
        ]
        rows = _union(selects, distinct=False)
        return exp.Subquery(this=rows, alias=exp.TableAlias(this=identifier(BASE)))

    def branch_rank(self, fusion: Fusion, branch: Branch, key: str) -> exp.Window:
        """The rank window of a branch's ranked CTE. Competition ranking (default): ``RANK()
        OVER (ORDER BY <raw>)``, rows tied on the raw score share a rank, so a tie inside a
        branch leaves the order to the other branches. Row numbers: ``ROW_NUMBER() OVER
        (ORDER BY <raw>, <key>)``, ties numbered by key (:class:`BranchRanking`)."""
        order = [ordered(column(branch.raw_score_column), descending=branch.higher_is_better)]
        if fusion.ranking is BranchRanking.ROW_NUMBER:
            order.append(ordered(column(key), descending=False))
            return exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=order))
        return exp.Window(this=exp.Rank(), order=exp.Order(expressions=order))

    def rescored(self, plan: SearchPlan, formula: ScoreFormula) -> exp.Select:
        """The CTE of a plan with a score formula: ``SELECT fused.*, <term 1> AS
        formula_term_1, ..., <term 1> + <term 2> + ... AS formula_score FROM fused JOIN
        <rows> AS base ON base.<key> = fused.<key>`` (:meth:`formula_terms`)."""
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        terms = self.formula_terms(formula)
        items: list[exp.Expr] = [exp.Column(this=exp.Star(), table=identifier(FUSED))]
        items.extend(
            exp.Alias(this=term, alias=identifier(name))
            for term, name in zip(terms, term_columns(formula))
        )
        items.append(exp.Alias(this=_sum(terms), alias=identifier(FORMULA_SCORE)))
        return exp.Select(
            expressions=items,
            from_=exp.From(this=exp.Table(this=identifier(FUSED))),
            joins=[
                exp.Join(
                    this=self.rows_reference(plan),
                    on=exp.EQ(this=column(key, BASE), expression=column(key, FUSED)),
                )
            ],
        )

    def formula_terms(self, formula: ScoreFormula) -> list[exp.Expr]:
        """Each term of a score formula over the final join's row, in term order: ``weight *
        factor * ...``, multiplied left to right as
        :func:`~hotdata_retrieval.plan.formula.formula_terms` computes them. A factor is the
        fused score (``fused.score``), a column (``COALESCE(CAST(base.<c> AS DOUBLE),
        missing)``) or a decay of one (:meth:`decay`)."""
        terms: list[exp.Expr] = []
        for term in formula.terms:
            value: exp.Expr = number(term.weight)
            for factor in term.factors:
                item: exp.Expr
                if isinstance(factor, FormulaFusedScore):
                    item = column("score", FUSED)
                elif isinstance(factor, ColumnValue):
                    item = exp.Coalesce(
                        this=_double(column(factor.column, BASE)),
                        expressions=[number(factor.missing)],
                    )
                else:
                    item = self.decay(factor)
                value = exp.Mul(this=value, expression=item)
            terms.append(value)
        return terms

    def decay(self, decay: Decay) -> exp.Expr:
        """``CASE WHEN base.<c> IS NULL THEN missing ELSE <decay of distance> END`` with
        ``distance = CASE WHEN ABS(x - origin) - offset < 0 THEN 0 ELSE ABS(x - origin) -
        offset END`` and the decay ``EXP(rate * distance)`` (exp), ``EXP(rate * (distance *
        distance))`` (gauss) or ``CASE WHEN 1 - rate * distance > 0 THEN 1 - rate * distance
        ELSE 0 END`` (linear), ``rate`` computed by the plan
        (:attr:`~hotdata_retrieval.plan.formula.Decay.rate`)."""
        value = column(decay.column, BASE)

        def apart() -> exp.Expr:
            return exp.Sub(
                this=exp.Abs(
                    this=exp.Sub(this=_double(value.copy()), expression=number(decay.origin))
                ),
                expression=number(decay.offset),
            )

        distance = exp.Paren(
            this=exp.Case(
                ifs=[
                    exp.If(
                        this=exp.LT(this=apart(), expression=exp.Literal.number(0)),
                        true=number(0.0),
                    )
                ],
                default=apart(),
            )
        )
        shaped: exp.Expr
        if decay.function is DecayFunction.LINEAR:

            def linear() -> exp.Expr:
                return exp.Sub(
                    this=number(1.0),
                    expression=exp.Mul(this=number(decay.rate), expression=distance.copy()),
                )

            shaped = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.GT(this=linear(), expression=exp.Literal.number(0)),
                        true=linear(),
                    )
                ],
                default=number(0.0),
            )
        elif decay.function is DecayFunction.EXP:
            shaped = exp.Exp(this=exp.Mul(this=number(decay.rate), expression=distance))
        else:
            squared = exp.Paren(this=exp.Mul(this=distance, expression=distance.copy()))
            shaped = exp.Exp(this=exp.Mul(this=number(decay.rate), expression=squared))
        return exp.Paren(
            this=exp.Case(
                ifs=[
                    exp.If(
                        this=exp.Is(this=value.copy(), expression=exp.Null()),
                        true=number(decay.missing),
                    )
                ],
                default=shaped,
            )
        )

    def final_order(
        self,
        plan: SearchPlan,
        key: str,
        completed: dict[str, exp.Expr] | None = None,
        final: exp.Expr | None = None,
    ) -> exp.Order:
        """A fused statement's ``ORDER BY``: the fused score descending, the plan's
        tie-breakers (a result column from the fused CTE — a branch's ``result_name`` read
        as its raw column there — else the table's; a branch's raw score that
        ``page_scores`` completes, as ``completed`` gives it), the key."""
        ranking = column("score", FUSED) if final is None else final.copy()
        expressions = [ordered(ranking, descending=True)]
        results = set(plan.result_columns)
        raw_columns = {
            debug_columns(name, branch)[1]: name
            for name, branch in zip(plan.branch_names, plan.branches)
        }
        named = {
            branch.result_name: debug_columns(name, branch)[1]
            for name, branch in zip(plan.branch_names, plan.branches)
            if branch.result_name is not None
        }
        for breaker in plan.tie_breakers:
            target = named.get(breaker.column, breaker.column)
            value = (completed or {}).get(raw_columns.get(target, ""))
            if value is not None:
                item: exp.Expr = value.copy()
            elif breaker.column in named:
                item = column(named[breaker.column], FUSED)
            else:
                item = column(breaker.column, FUSED if breaker.column in results else BASE)
            expressions.append(ordered(item, descending=breaker.descending))
        expressions.append(ordered(column(key, FUSED), descending=False))
        return exp.Order(expressions=expressions)

    def chains_joins(self, branches: int) -> bool:
        """Whether a fusion of ``branches`` branches chains ``FULL OUTER JOIN``s (up to
        :data:`JOIN_CHAIN_MAX_BRANCHES`, on a dialect that has the join) rather than joining
        each ranked CTE with ``LEFT JOIN`` to the ``UNION`` of their keys (the same rows and
        scores, and the only form on a dialect without ``FULL OUTER JOIN``)."""
        return self.profile.supports_full_outer_join and branches <= JOIN_CHAIN_MAX_BRANCHES

    def visit_reciprocal_rank_fusion(
        self, fusion: ReciprocalRankFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        """``Σ COALESCE(w / (k + rank), 0)`` over the branches, added in branch order."""
        score: exp.Expr | None = None
        for fused_branch, weight in zip(branches, fusion.weights):
            term = exp.Coalesce(
                this=exp.Div(
                    this=number(float(weight)),
                    expression=exp.Paren(
                        this=exp.Add(
                            this=number(fusion.rank_constant), expression=fused_branch.rank
                        )
                    ),
                    typed=True,
                ),
                expressions=[exp.Literal.number(0)],
            )
            score = term if score is None else exp.Add(this=score, expression=term)
        assert score is not None
        return FusedScore(score=score)

    def visit_min_max_fusion(
        self, fusion: MinMaxFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        """``Σ COALESCE(w * CASE WHEN high = low THEN 1.0 ELSE (s - low) / (high - low) END,
        0)`` with ``low = MIN(s) OVER ()`` and ``high = MAX(s) OVER ()`` in each ranked CTE,
        ``s`` the similarity (:class:`~hotdata_retrieval.plan.search.NormalizedScoreFusion`)."""
        return self.normalized_score(
            fusion,
            branches,
            lambda similarity: (
                exp.Window(this=exp.Min(this=similarity())),
                exp.Window(this=exp.Max(this=similarity())),
            ),
        )

    def visit_distribution_based_score_fusion(
        self, fusion: DistributionBasedScoreFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        """As :meth:`visit_min_max_fusion` with ``low, high = AVG(s) OVER () ∓ 3 *
        COALESCE(CASE WHEN MIN(s) OVER () < MAX(s) OVER () THEN STDDEV_SAMP(s) OVER () END,
        0)`` and 0.5 where they are equal.

        One candidate, or equal scores, have a deviation of exactly 0, whatever the engine's
        variance algorithm rounds to: PostgreSQL's ``STDDEV_SAMP`` of six equal float8 scores
        (0.40982590936363217) is 3.6e-17, and their ``AVG`` one unit in the last place below
        them, which normalized each of them to 0.75 instead of 0.5.
        """

        def bounds(similarity: Callable[[], exp.Expr]) -> tuple[exp.Expr, exp.Expr]:
            def spread() -> exp.Expr:
                deviation = exp.Case(
                    ifs=[
                        exp.If(
                            this=exp.LT(
                                this=exp.Window(this=exp.Min(this=similarity())),
                                expression=exp.Window(this=exp.Max(this=similarity())),
                            ),
                            true=exp.Window(this=exp.StddevSamp(this=similarity())),
                        )
                    ]
                )
                return exp.Mul(
                    this=number(fusion.standard_deviations),
                    expression=exp.Coalesce(this=deviation, expressions=[exp.Literal.number(0)]),
                )

            def mean() -> exp.Expr:
                return exp.Window(this=exp.Avg(this=similarity()))

            return (
                exp.Sub(this=mean(), expression=spread()),
                exp.Add(this=mean(), expression=spread()),
            )

        return self.normalized_score(fusion, branches, bounds)

    def normalized_score(
        self,
        fusion: NormalizedScoreFusion,
        branches: Sequence[FusedBranch],
        bounds: Callable[[Callable[[], exp.Expr]], tuple[exp.Expr, exp.Expr]],
    ) -> FusedScore:
        """The fused score of a score-normalized method: per branch, ``bounds(similarity)``
        gives the window aggregates added to its ranked CTE as :data:`SIMILARITY_LOW` and
        :data:`SIMILARITY_HIGH`; each row's term is ``w * CASE WHEN high = low THEN <equal
        scores value> ELSE (s - low) / (high - low) END``, 0 where the branch missed the row,
        added in branch order.

        ``similarity`` builds a fresh ``CAST(raw AS DOUBLE)`` (a BM25 score) or
        ``-CAST(raw AS DOUBLE)`` (a distance) over the ranked CTE's unqualified raw column.
        """
        ranked_columns: list[tuple[exp.Expr, ...]] = []
        score: exp.Expr | None = None
        for fused_branch, weight in zip(branches, fusion.branch_weights):
            branch = fused_branch.branch

            def similarity(
                raw: exp.Expr | None = None,
                raw_column: str = branch.raw_score_column,
                higher_is_better: bool = branch.higher_is_better,
            ) -> exp.Expr:
                widened = exp.Cast(
                    this=raw if raw is not None else column(raw_column),
                    to=exp.DataType.build(exp.DataType.Type.DOUBLE),
                )
                return widened if higher_is_better else exp.Neg(this=widened)

            low, high = bounds(similarity)
            ranked_columns.append(
                (
                    exp.Alias(this=low, alias=identifier(SIMILARITY_LOW)),
                    exp.Alias(this=high, alias=identifier(SIMILARITY_HIGH)),
                )
            )
            low_column = fused_branch.column(SIMILARITY_LOW)
            high_column = fused_branch.column(SIMILARITY_HIGH)
            normalized = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.EQ(this=high_column, expression=low_column.copy()),
                        true=number(fusion.equal_scores_value),
                    )
                ],
                default=exp.Div(
                    this=exp.Paren(
                        this=exp.Sub(this=similarity(fused_branch.raw), expression=low_column)
                    ),
                    expression=exp.Paren(
                        this=exp.Sub(this=high_column.copy(), expression=low_column.copy())
                    ),
                    typed=True,
                ),
            )
            term = exp.Coalesce(
                this=exp.Mul(this=number(weight), expression=normalized),
                expressions=[exp.Literal.number(0)],
            )
            score = term if score is None else exp.Add(this=score, expression=term)
        assert score is not None
        return FusedScore(score=score, ranked_columns=tuple(ranked_columns))

    def _fused_keys(self, plan: SearchPlan) -> exp.Query:
        """``SELECT key FROM a_ranked UNION SELECT key FROM b_ranked UNION ...``: every
        candidate key once (the keys CTE of a fusion past :data:`JOIN_CHAIN_MAX_BRANCHES`)."""
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        selects = [
            exp.Select(
                expressions=[column(key)],
                from_=exp.From(this=exp.Table(this=identifier(f"{name}_ranked"))),
            )
            for name in plan.branch_names
        ]
        return _union(selects, distinct=True)

    def _fused(
        self, plan: SearchPlan, branches: Sequence[FusedBranch], score: exp.Expr
    ) -> exp.Select:
        """``SELECT <key>, <score> AS score [, debug]`` over the ranked CTEs: FULL OUTER
        JOINed on the key (the key is the COALESCE of theirs) for up to
        :data:`JOIN_CHAIN_MAX_BRANCHES` branches, else each LEFT JOINed to the keys CTE."""
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        ranked = [fused_branch.cte for fused_branch in branches]
        keys = [column(key, name) for name in ranked]
        chained = self.chains_joins(len(ranked))

        def coalesce(expressions: list[exp.Column]) -> exp.Expr:
            if len(expressions) == 1:
                return expressions[0]
            return exp.Coalesce(this=expressions[0], expressions=expressions[1:])

        fused_key = coalesce(keys) if chained else column(key, FUSED_KEYS)
        items: list[exp.Expr] = [
            exp.Alias(this=fused_key, alias=identifier(key)),
            exp.Alias(this=score, alias=identifier("score")),
        ]
        for fused_branch in branches:
            rank_name, raw_name = debug_columns(fused_branch.name, fused_branch.branch)
            if plan.include_branch_scores:
                items.append(exp.Alias(this=fused_branch.rank, alias=identifier(rank_name)))
            if plan.include_branch_scores or fused_branch.branch.result_name is not None:
                items.append(exp.Alias(this=fused_branch.raw, alias=identifier(raw_name)))
        for bound, bound_name in self.explained_bounds(plan, branches):
            items.append(exp.Alias(this=bound, alias=identifier(bound_name)))
        if not chained:
            return exp.Select(
                expressions=items,
                from_=exp.From(this=exp.Table(this=identifier(FUSED_KEYS))),
                joins=[
                    exp.Join(
                        this=exp.Table(this=identifier(cte)),
                        side="LEFT",
                        on=exp.EQ(this=column(key, cte), expression=column(key, FUSED_KEYS)),
                    )
                    for cte in ranked
                ],
            )
        joins = [
            exp.Join(
                this=exp.Table(this=identifier(cte)),
                side="FULL",
                kind="OUTER",
                on=exp.EQ(this=coalesce(keys[:position]), expression=keys[position]),
            )
            for position, cte in enumerate(ranked[1:], start=1)
        ]
        return exp.Select(
            expressions=items,
            from_=exp.From(this=exp.Table(this=identifier(ranked[0]))),
            joins=joins,
        )

    # -- native fusion ---------------------------------------------------------------------

    def native_hybrid(self, plan: SearchPlan, function: str) -> exp.Select:
        """``SELECT <projection>, score [, debug] FROM hybrid_search(...) ORDER BY score DESC,
        key ASC``: the call returns the page itself, so no LIMIT or OFFSET follows it.
        Only for plans :func:`native_hybrid_misfit` accepts."""
        fusion = plan.fusion
        assert isinstance(fusion, (ReciprocalRankFusion, NormalizedScoreFusion))
        text_at = 0 if isinstance(plan.branches[0], Bm25Search) else 1
        text, vector = plan.branches[text_at], plan.branches[1 - text_at]
        key = plan.key_column
        assert key is not None  # a fusion's plan always has a key (SearchPlan)
        arguments: list[exp.Expr] = [
            exp.Literal.string(str(plan.table)),
            exp.Literal.string(text.column),
            exp.Literal.string(vector.column),
            self.binder.text(text, "query_text"),
            self.binder.vector(vector, "query_vector")
            if isinstance(vector, NearestNeighborSearch)
            else exp.Null(),
            exp.Literal.number(plan.limit),
        ]
        options: list[tuple[str, exp.Expr]] = [("depth", exp.Literal.number(plan.depth))]
        if isinstance(fusion, ReciprocalRankFusion):
            options.append(("rank_constant", number(fusion.rank_constant)))
            weights = tuple(float(weight) for weight in fusion.weights)
        else:
            # The call multiplies each normalized score by its weight as given: the plan's
            # own multipliers (convex for min-max) are written.
            options.append(("fusion", exp.Literal.string(fusion.method)))
            weights = fusion.branch_weights
        options.append(("text_weight", number(weights[text_at])))
        options.append(("vector_weight", number(weights[1 - text_at])))
        if isinstance(vector, NearestNeighborSearch):
            options.append(("metric", exp.Literal.string(vector.metric.value)))
        if plan.offset:
            options.append(("offset", exp.Literal.number(plan.offset)))
        options.append(("key", exp.Literal.string(key)))
        if fusion.min_score is not None:
            options.append(("min_score", literal_node(fusion.min_score)))
        if plan.filter is not None:
            # The text a call written by hand would hold; the literal carries the predicate it
            # was compiled from, so an engine answering the call reads it, never the text.
            written = exp.Literal.string(filter_text(plan.filter, self.profile))
            written.meta[COMPILED_FILTER] = plan.filter
            options.append(("filter", written))
        if plan.include_branch_scores:
            options.append(("debug", exp.true()))
        for name, value in options:
            arguments.extend([exp.Literal.string(name), value])

        projection: list[exp.Expr] = [column(name) for name in plan.projection]
        projection.append(column("score"))
        if plan.include_branch_scores:
            for name, branch in zip(plan.branch_names, plan.branches):
                side = "text" if branch is text else "vector"
                for native, wanted in zip(HYBRID_DEBUG_COLUMNS[side], debug_columns(name, branch)):
                    item = column(native)
                    projection.append(
                        item if native == wanted else exp.Alias(this=item, alias=identifier(wanted))
                    )
        return exp.Select(
            expressions=projection,
            from_=exp.From(
                this=exp.Table(this=exp.Anonymous(this=function, expressions=arguments))
            ),
            order=exp.Order(
                expressions=[
                    ordered(column("score"), descending=True),
                    ordered(column(key), descending=False),
                ]
            ),
        )


def compiler_for(
    profile: DialectProfile, binder: Binder, *, empty_lists_as_written: bool = False
) -> PlanCompiler:
    """A compiler of the profile's class (``profile.compiler``, else :class:`PlanCompiler`)."""
    cls = profile.compiler or PlanCompiler
    return cls(profile, binder, empty_lists_as_written=empty_lists_as_written)


def native_hybrid_misfit(plan: SearchPlan) -> str | None:
    """Why ``plan`` cannot be one ``hybrid_search`` call, or ``None`` when it can.

    The call is a reciprocal rank fusion, min-max convex combination or distribution-based
    score fusion of exactly one text (BM25) branch with one vector branch — nearest-neighbour,
    or engine-embedded semantic search of the same query text.

    >>> plan = SearchPlan(source=Bm25Search(table="t", column="body", query_text="q"))
    >>> native_hybrid_misfit(plan)
    'a single branch is not a fusion'
    """
    fusion = plan.fusion
    if fusion is None:
        return "a single branch is not a fusion"
    if not isinstance(fusion, (ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion)):
        return (
            "hybrid_search fuses by reciprocal rank fusion, min-max or distribution-based "
            f"score fusion, not {fusion.method!r}"
        )
    if len(fusion.branches) != 2:
        return f"hybrid_search fuses two branches, the plan has {len(fusion.branches)}"
    if fusion.ranking is not BranchRanking.COMPETITION:
        return "hybrid_search ranks each branch by competition ranking, not row numbers"
    if plan.tie_breakers:
        return "hybrid_search breaks fused-score ties by the key alone, not by tie_breakers"
    if any(isinstance(branch, NearestNeighborSearch) and branch.exact for branch in plan.branches):
        return "hybrid_search asks the vector index; an exact branch scans"
    if plan.score_name != "score" or any(branch.result_name for branch in plan.branches):
        return "hybrid_search returns its columns under its own names"
    if plan.include_vectors:
        return "hybrid_search returns no vector column"
    if plan.page_scores:
        return "hybrid_search computes no distance for a row its vector branch did not return"
    if plan.formula is not None:
        return "hybrid_search orders by its fused score, not a score formula"
    if plan.explain_scores and isinstance(fusion, NormalizedScoreFusion):
        return "hybrid_search returns no branch's normalization bounds (explain_scores)"
    if plan.single_table is None:
        return "hybrid_search searches one table, the plan several"
    if any(branch.filter_through_key for branch in plan.branches):
        return "hybrid_search filters its table, not through another table's keys"
    if any(isinstance(branch, VectorSearch) and branch.scalar for branch in plan.branches):
        return "hybrid_search ranks by the table function, not the scalar vector_distance"
    texts = [branch for branch in fusion.branches if isinstance(branch, Bm25Search)]
    vectors = [branch for branch in fusion.branches if not isinstance(branch, Bm25Search)]
    if len(texts) != 1:
        kinds = " + ".join(branch.kind for branch in fusion.branches)
        return f"hybrid_search fuses one text branch with one vector branch, not {kinds}"
    if not texts[0].words:
        return "hybrid_search takes a query with words; this text branch is empty"
    vector = vectors[0]
    if isinstance(vector, VectorSearch) and vector.query_text != texts[0].query_text:
        return "hybrid_search takes one query text, and the semantic branch's differs"
    return None


def filter_text(predicate: Predicate, profile: DialectProfile) -> str:
    """``predicate`` as filter text that ``parse_filter`` reads back to an equal tree; an
    empty list stays ``col IN ()`` (it matches no row; ``NOT IN ()`` matches every row).

    It is the dialect compiler's own filter SQL, values inline, with empty lists as written.

    >>> from hotdata_retrieval.compile import get_dialect
    >>> from hotdata_retrieval.plan.filters import Comparison, InList
    >>> filter_text(Comparison(column="lang", operator="=", value="it's")
    ...             & InList(column="year", values=[]), get_dialect("hotdata"))
    "lang = 'it''s' AND year IN ()"
    """
    compiler = compiler_for(profile, LiteralBinder(profile), empty_lists_as_written=True)
    dialect = profile.sqlglot_dialect()
    return str(dialect.generate(compiler.predicate(predicate), copy=False))


def named_result(select: exp.Select, raw: str, name: str) -> None:
    """Return a single branch's raw score column ``raw`` as ``name``, in place: its select
    item aliased, and the ``ORDER BY`` that reads it by name reading the alias (so the
    statement still ends in ``ORDER BY ... LIMIT``, and stays ordered when wrapped)."""
    for item in select.expressions:
        if item.alias_or_name == raw:
            value = item.this if isinstance(item, exp.Alias) else item
            item.replace(exp.Alias(this=value.copy(), alias=identifier(name)))
            break
    order = select.args.get("order")
    if order is None:
        return
    for key in order.expressions:
        target = key.this
        if isinstance(target, exp.Column) and not target.table and target.name == raw:
            target.replace(column(name))


def _union(selects: Sequence[exp.Query], *, distinct: bool) -> exp.Query:
    """``<first> UNION [ALL] <second> UNION [ALL] ...``, left-deep, in order (a single
    select: itself)."""
    combined = selects[0]
    for select in selects[1:]:
        combined = exp.Union(this=combined, expression=select, distinct=distinct)
    return combined


def _double(value: exp.Expr) -> exp.Expr:
    """``CAST(value AS DOUBLE)``."""
    return exp.Cast(this=value, to=exp.DataType.build(exp.DataType.Type.DOUBLE))


def _sum(terms: Sequence[exp.Expr]) -> exp.Expr:
    """``t1 + t2 + ...``, added left to right (each term a fresh copy)."""
    total = terms[0].copy()
    for term in terms[1:]:
        total = exp.Add(this=total, expression=term.copy())
    return total


def _cte(name: str, select: exp.Query) -> exp.CTE:
    return exp.CTE(this=select, alias=exp.TableAlias(this=identifier(name)))
