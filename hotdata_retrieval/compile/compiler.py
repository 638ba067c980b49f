"""Plan → sqlglot expression tree.

One visitor turns a :class:`~hotdata_retrieval.plan.SearchPlan` into a single ``SELECT``.
Every dialect difference comes from the :class:`DialectProfile`; every caller-supplied value
comes from a *binder*, which either makes real literal nodes (:class:`LiteralBinder`) or
value slots for a reusable statement template (:class:`SlotBinder`).

The shapes, and why (engine contract §1-3, ``shared/reference/engine-contract.md``):

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
  with ``ROW_NUMBER() OVER (ORDER BY raw, key ASC)``, combined by ``FULL OUTER JOIN`` on the
  key (past :data:`JOIN_CHAIN_MAX_BRANCHES` branches, one ``LEFT JOIN`` per branch onto the
  ``UNION`` of their keys, so the statement stays linear in the branch count), joined back to
  the base table, ordered by fused score DESC then key ASC (§3).
- native fusion: for a dialect whose profile names a ``native_hybrid_search`` function, a
  fusion of one text branch and one vector branch is one call of it, ordered by score DESC then
  key ASC (``docs/spec/hybrid_search.md``); any other plan keeps the CTE form.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from sqlglot import exp

from hotdata_retrieval.compile.dialect import DialectProfile
from hotdata_retrieval.compile.nodes import ValueSlot, VectorLiteral
from hotdata_retrieval.errors import UnsupportedFeatureError
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    ComparisonOperator,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
)
from hotdata_retrieval.plan.names import TableName, is_bare_identifier
from hotdata_retrieval.plan.search import (
    Bm25Search,
    Branch,
    NearestNeighborSearch,
    SearchPlan,
    VectorSearch,
    debug_columns,
)

__all__ = [
    "HYBRID_DEBUG_COLUMNS",
    "JOIN_CHAIN_MAX_BRANCHES",
    "Binder",
    "LiteralBinder",
    "PlanCompiler",
    "SlotBinder",
    "RANK_COLUMN",
    "filter_text",
    "native_hybrid_misfit",
]

RANK_COLUMN = "branch_rank"
"""Column holding a branch's 1-based rank inside the fused statement's CTEs."""

FUSED = "fused"
BASE = "base"
FUSED_KEYS = "fused_keys"
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
    ``-29121896746011604``.
    """
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, float):
        magnitude = exp.Literal.number(repr(abs(value)))
        return exp.Neg(this=magnitude) if math.copysign(1.0, value) < 0 else magnitude
    return exp.convert(value)


class LiteralBinder:
    """Binds values as real literal nodes (the query vector as one :class:`VectorLiteral`)."""

    def __init__(self, profile: DialectProfile) -> None:
        self._profile = profile

    def text(self, node: object, field: str) -> exp.Expr:
        return exp.Literal.string(getattr(node, field))

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


def identifier(name: str) -> exp.Identifier:
    """An identifier node, quoted when ``name`` is not a bare identifier.

    Keywords are quoted by the dialect's generator (its ``RESERVED_KEYWORDS``).
    """
    return exp.Identifier(this=name, quoted=not is_bare_identifier(name))


def column(name: str, table: str | None = None) -> exp.Column:
    """A column node, optionally qualified by a table or CTE name."""
    return exp.Column(this=identifier(name), table=identifier(table) if table is not None else None)


def table_reference(table: TableName, alias: str | None = None) -> exp.Table:
    """The fully qualified ``catalog.schema.table`` reference (never shortened)."""
    return exp.Table(
        this=identifier(table.name),
        db=identifier(table.schema),
        catalog=identifier(table.catalog),
        alias=exp.TableAlias(this=identifier(alias)) if alias is not None else None,
    )


def _ordered(expression: exp.Expr, *, descending: bool) -> exp.Ordered:
    """``expr ASC`` or ``expr DESC``, with each direction's default NULL placement (NULLS
    LAST ascending, NULLS FIRST descending, as in PostgreSQL and DataFusion), so no NULLS
    clause is written. Scores and distances in these sorts are never NULL."""
    return exp.Ordered(this=expression, desc=descending, nulls_first=descending)


def _number(value: int | float) -> exp.Expr:
    return exp.Literal.number(repr(value))


class PlanCompiler:
    """Compiles plans for one dialect, binding values with one binder.

    Raises (from :meth:`compile`):
        UnsupportedFeatureError: the plan needs a function or join the dialect lacks.
    """

    def __init__(self, profile: DialectProfile, binder: Binder) -> None:
        self.profile = profile
        self.binder = binder

    # -- entry point -----------------------------------------------------------------------

    def compile(self, plan: SearchPlan) -> exp.Select:
        """Return the plan as one ``SELECT`` tree."""
        if plan.fusion is None:
            return self._single(plan, plan.branches[0])
        native = self.profile.native_hybrid_search
        if native is not None and native_hybrid_misfit(plan) is None:
            return self._native_hybrid(plan, native)
        return self._fusion(plan)

    # -- filters ---------------------------------------------------------------------------

    def predicate(self, predicate: Predicate) -> exp.Expr:
        """The boolean expression for a filter tree."""
        if isinstance(predicate, Comparison):
            node = _COMPARISONS[predicate.operator]
            return node(
                this=column(predicate.column),
                expression=self.binder.literal(predicate, "value"),
            )
        if isinstance(predicate, InList):
            if not predicate.values:
                return exp.true() if predicate.negated else exp.false()
            membership = exp.In(
                this=column(predicate.column),
                expressions=[
                    self.binder.literal(predicate, "values", index)
                    for index in range(len(predicate.values))
                ],
            )
            return exp.Not(this=membership) if predicate.negated else membership
        if isinstance(predicate, IsNull):
            return exp.Is(
                this=column(predicate.column),
                expression=exp.Null(),
                negate=predicate.negated or None,
            )
        if isinstance(predicate, (And, Or)):
            connective = exp.And if isinstance(predicate, And) else exp.Or
            operands = [
                compiled if isinstance(compiled, connective) else self._grouped(compiled)
                for compiled in map(self.predicate, predicate.operands)
            ]
            combined = operands[0]
            for operand in operands[1:]:
                combined = connective(this=combined, expression=operand)
            return combined
        if isinstance(predicate, Not):
            return exp.Not(this=self._grouped(self.predicate(predicate.operand)))
        raise TypeError(f"not a predicate: {predicate!r}")  # unreachable: plans are validated

    @staticmethod
    def _grouped(expression: exp.Expr) -> exp.Expr:
        """Parenthesise a nested AND/OR (a chain of the same connective needs none)."""
        if isinstance(expression, (exp.And, exp.Or)):
            return exp.Paren(this=expression)
        return expression

    def _where(self, plan: SearchPlan) -> exp.Where | None:
        if plan.filter is None:
            return None
        return exp.Where(this=self.predicate(plan.filter))

    # -- branch sources --------------------------------------------------------------------

    def _table_function(
        self, name: str, branch: Bm25Search | VectorSearch, k: int | None
    ) -> exp.Table:
        arguments = [
            exp.Literal.string(str(branch.table)),
            exp.Literal.string(branch.column),
            self.binder.text(branch, "query_text"),
        ]
        if k is not None:
            arguments.append(exp.Literal.number(k))
        return exp.Table(this=exp.Anonymous(this=name, expressions=arguments))

    def _scalar_semantic(self, plan: SearchPlan, branch: Branch) -> bool:
        """Whether ``branch`` is a filtered semantic branch compiled to the scalar
        ``vector_distance`` shape: ``vector_search`` applies its k before any WHERE (engine
        contract §1.2), so a selective filter would leave the branch with fewer rows than
        exist; the scalar distance is computed for the rows the WHERE keeps, then ordered
        and bounded (contract §1.3: the engine embeds the query with the index's model and
        ranks by its metric)."""
        return (
            isinstance(branch, VectorSearch)
            and plan.filter is not None
            and self.profile.semantic_distance_function is not None
        )

    def _source(self, branch: Branch, k: int, *, filtered: bool = False) -> exp.Table:
        if isinstance(branch, Bm25Search):
            function = self.profile.require(self.profile.text_search_function, "bm25_search")
            # bm25_search applies its k before any WHERE (engine contract §1.1): with a
            # filter, k would cut rows the filter keeps and return fewer than asked. Without
            # k the search runs to the engine's larger default bound, then the WHERE, then
            # ORDER BY score DESC LIMIT k — the same top-k the filter asks for.
            return self._table_function(function, branch, None if filtered else k)
        if isinstance(branch, VectorSearch):
            function = self.profile.require(self.profile.semantic_search_function, "vector_search")
            return self._table_function(function, branch, k)
        return table_reference(branch.table)

    def _distance(self, branch: NearestNeighborSearch) -> exp.Expr:
        return exp.Anonymous(
            this=self.profile.distance_function(branch.metric),
            expressions=[column(branch.column), self.binder.vector(branch, "query_vector")],
        )

    def _raw_score(self, branch: Branch, *, scalar: bool = False) -> exp.Expr:
        """The branch's raw-score select item: ``score``, ``_distance`` or
        ``fn(...) AS _distance`` (``scalar``: a semantic branch's ``vector_distance``)."""
        if isinstance(branch, NearestNeighborSearch):
            return exp.Alias(this=self._distance(branch), alias=identifier(branch.raw_score_column))
        if scalar and isinstance(branch, VectorSearch):
            function = self.profile.require(
                self.profile.semantic_distance_function, "vector_distance"
            )
            distance = exp.Anonymous(
                this=function,
                expressions=[column(branch.column), self.binder.text(branch, "query_text")],
            )
            return exp.Alias(this=distance, alias=identifier(branch.raw_score_column))
        return column(branch.raw_score_column)

    def computes_distance(self, plan: SearchPlan, branch: Branch) -> bool:
        """Whether the branch's distance is computed per row (a NULL vector gives NULL)."""
        return isinstance(branch, NearestNeighborSearch) or self._scalar_semantic(plan, branch)

    def _branch_select(
        self,
        plan: SearchPlan,
        branch: Branch,
        projection: list[exp.Expr],
        *,
        k: int,
        limit: int | None,
        offset: int,
        tie_break: str | None = None,
    ) -> exp.Select:
        """``SELECT <projection>, <raw> FROM <source> [WHERE] ORDER BY <raw> <dir>`` with
        ``LIMIT`` and ``OFFSET`` as needed.

        A semantic branch never gets a LIMIT: its k argument is the bound (engine contract
        §1.2, test vector 6). ``tie_break`` adds ``<key> ASC`` after the raw score for a
        table-function branch, whose rows are already bounded by k, so that pages of a single
        branch neither repeat nor skip tied rows; a nearest-neighbour branch never gets one
        (it would cost the index fast path, engine contract §2.3).
        """
        scalar = self._scalar_semantic(plan, branch)
        order = [_ordered(column(branch.raw_score_column), descending=branch.higher_is_better)]
        if tie_break is not None and not isinstance(branch, NearestNeighborSearch):
            order.append(_ordered(column(tie_break), descending=False))
        source = (
            table_reference(branch.table)
            if scalar
            else self._source(branch, k, filtered=plan.filter is not None)
        )
        select = exp.Select(
            expressions=[*projection, self._raw_score(branch, scalar=scalar)],
            from_=exp.From(this=source),
            where=self._where(plan),
            order=exp.Order(expressions=order),
        )
        if limit is not None and (scalar or not isinstance(branch, VectorSearch)):
            select.set("limit", exp.Limit(expression=exp.Literal.number(limit)))
        if offset:
            select.set("offset", exp.Offset(expression=exp.Literal.number(offset)))
        return select

    # -- single branch ---------------------------------------------------------------------

    def _single(self, plan: SearchPlan, branch: Branch) -> exp.Select:
        return self._branch_select(
            plan,
            branch,
            [column(name) for name in plan.projection],
            k=plan.limit + plan.offset,
            limit=plan.limit,
            offset=plan.offset,
            tie_break=plan.key_column,
        )

    # -- fusion ----------------------------------------------------------------------------

    def _fusion(self, plan: SearchPlan) -> exp.Select:
        fusion = plan.fusion
        assert fusion is not None
        if not self.profile.supports_full_outer_join:
            raise UnsupportedFeatureError("FULL OUTER JOIN (rank fusion)", self.profile.name)
        key = plan.key_column
        depth = plan.depth
        names = plan.branch_names
        ctes: list[exp.CTE] = []
        for name, branch in zip(names, fusion.branches):
            # A table-function branch's depth cut breaks score ties by key (free: its rows are
            # already bounded by k); a nearest branch keeps the fast-path shape (§2.3).
            hits = self._branch_select(
                plan, branch, [column(key)], k=depth, limit=depth, offset=0, tie_break=key
            )
            ctes.append(_cte(f"{name}_hits", hits))
            ranked = exp.Select(
                expressions=[
                    column(key),
                    column(branch.raw_score_column),
                    exp.Alias(
                        # Competition ranking: rows tied on the raw score share a rank, so a
                        # tie inside a branch leaves the order to the other branches.
                        this=exp.Window(
                            this=exp.Rank(),
                            order=exp.Order(
                                expressions=[
                                    _ordered(
                                        column(branch.raw_score_column),
                                        descending=branch.higher_is_better,
                                    )
                                ]
                            ),
                        ),
                        alias=identifier(RANK_COLUMN),
                    ),
                ],
                from_=exp.From(this=exp.Table(this=identifier(f"{name}_hits"))),
            )
            if self.computes_distance(plan, branch):
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
            ctes.append(_cte(f"{name}_ranked", ranked))
        if len(names) > JOIN_CHAIN_MAX_BRANCHES:
            ctes.append(_cte(FUSED_KEYS, self._fused_keys(plan)))
        ctes.append(_cte(FUSED, self._fused(plan)))

        projection: list[exp.Expr] = [column(name, BASE) for name in plan.projection]
        projection.extend(column(name, FUSED) for name in plan.result_columns)
        return exp.Select(
            expressions=projection,
            with_=exp.With(expressions=ctes),
            from_=exp.From(this=exp.Table(this=identifier(FUSED))),
            joins=[
                exp.Join(
                    this=table_reference(plan.table, alias=BASE),
                    on=exp.EQ(this=column(key, BASE), expression=column(key, FUSED)),
                )
            ],
            order=exp.Order(
                expressions=[
                    _ordered(column("score", FUSED), descending=True),
                    _ordered(column(key, FUSED), descending=False),
                ]
            ),
            limit=exp.Limit(expression=exp.Literal.number(plan.limit)),
            offset=exp.Offset(expression=exp.Literal.number(plan.offset)) if plan.offset else None,
        )

    def _fused_keys(self, plan: SearchPlan) -> exp.Query:
        """``SELECT key FROM a_ranked UNION SELECT key FROM b_ranked UNION ...``: every
        candidate key once (the keys CTE of a fusion past :data:`JOIN_CHAIN_MAX_BRANCHES`)."""
        key = plan.key_column
        selects = [
            exp.Select(
                expressions=[column(key)],
                from_=exp.From(this=exp.Table(this=identifier(f"{name}_ranked"))),
            )
            for name in plan.branch_names
        ]
        union: exp.Query = selects[0]
        for select in selects[1:]:
            union = exp.Union(this=union, expression=select, distinct=True)
        return union

    def _fused(self, plan: SearchPlan) -> exp.Select:
        """``SELECT <key>, Σ COALESCE(w / (k + rank), 0) AS score [, debug]`` over the ranked
        CTEs: FULL OUTER JOINed on the key (the key is the COALESCE of theirs) for up to
        :data:`JOIN_CHAIN_MAX_BRANCHES` branches, else each LEFT JOINed to the keys CTE."""
        fusion = plan.fusion
        assert fusion is not None
        key = plan.key_column
        ranked = [f"{name}_ranked" for name in plan.branch_names]
        keys = [column(key, name) for name in ranked]
        chained = len(ranked) <= JOIN_CHAIN_MAX_BRANCHES

        def coalesce(expressions: list[exp.Column]) -> exp.Expr:
            if len(expressions) == 1:
                return expressions[0]
            return exp.Coalesce(this=expressions[0], expressions=expressions[1:])

        score: exp.Expr | None = None
        for name, weight in zip(ranked, fusion.weights):
            term = exp.Coalesce(
                this=exp.Div(
                    this=_number(float(weight)),
                    expression=exp.Paren(
                        this=exp.Add(
                            this=_number(fusion.rank_constant),
                            expression=column(RANK_COLUMN, name),
                        )
                    ),
                    typed=True,
                ),
                expressions=[exp.Literal.number(0)],
            )
            score = term if score is None else exp.Add(this=score, expression=term)
        assert score is not None

        fused_key = coalesce(keys) if chained else column(key, FUSED_KEYS)
        items: list[exp.Expr] = [
            exp.Alias(this=fused_key, alias=identifier(key)),
            exp.Alias(this=score, alias=identifier("score")),
        ]
        if plan.include_branch_scores:
            for name, branch, cte in zip(plan.branch_names, fusion.branches, ranked):
                rank_name, raw_name = debug_columns(name, branch)
                items.append(exp.Alias(this=column(RANK_COLUMN, cte), alias=identifier(rank_name)))
                items.append(
                    exp.Alias(this=column(branch.raw_score_column, cte), alias=identifier(raw_name))
                )
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

    def _native_hybrid(self, plan: SearchPlan, function: str) -> exp.Select:
        """``SELECT <projection>, score [, debug] FROM hybrid_search(...) ORDER BY score DESC,
        key ASC``: the call returns the page itself, so no LIMIT or OFFSET follows it."""
        fusion = plan.fusion
        assert fusion is not None
        text_at = 0 if isinstance(plan.branches[0], Bm25Search) else 1
        text, vector = plan.branches[text_at], plan.branches[1 - text_at]
        key = plan.key_column
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
        options: list[tuple[str, exp.Expr]] = [
            ("depth", exp.Literal.number(plan.depth)),
            ("rank_constant", _number(fusion.rank_constant)),
            ("text_weight", _number(float(fusion.weights[text_at]))),
            ("vector_weight", _number(float(fusion.weights[1 - text_at]))),
        ]
        if isinstance(vector, NearestNeighborSearch):
            options.append(("metric", exp.Literal.string(vector.metric.value)))
        if plan.offset:
            options.append(("offset", exp.Literal.number(plan.offset)))
        options.append(("key", exp.Literal.string(key)))
        if plan.filter is not None:
            options.append(("filter", exp.Literal.string(filter_text(plan.filter, self.profile))))
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
                    _ordered(column("score"), descending=True),
                    _ordered(column(key), descending=False),
                ]
            ),
        )


def native_hybrid_misfit(plan: SearchPlan) -> str | None:
    """Why ``plan`` cannot be one ``hybrid_search`` call, or ``None`` when it can.

    The call fuses exactly one text (BM25) branch with one vector branch — nearest-neighbour,
    or engine-embedded semantic search of the same query text.

    >>> plan = SearchPlan(source=Bm25Search(table="t", column="body", query_text="q"))
    >>> native_hybrid_misfit(plan)
    'a single branch is not a fusion'
    """
    fusion = plan.fusion
    if fusion is None:
        return "a single branch is not a fusion"
    if len(fusion.branches) != 2:
        return f"hybrid_search fuses two branches, the plan has {len(fusion.branches)}"
    texts = [branch for branch in fusion.branches if isinstance(branch, Bm25Search)]
    vectors = [branch for branch in fusion.branches if not isinstance(branch, Bm25Search)]
    if len(texts) != 1:
        kinds = " + ".join(branch.kind for branch in fusion.branches)
        return f"hybrid_search fuses one text branch with one vector branch, not {kinds}"
    vector = vectors[0]
    if isinstance(vector, VectorSearch) and vector.query_text != texts[0].query_text:
        return "hybrid_search takes one query text, and the semantic branch's differs"
    return None


def filter_text(predicate: Predicate, profile: DialectProfile) -> str:
    """``predicate`` as filter text that ``parse_filter`` reads back to an equal tree; an
    empty list stays ``col IN ()`` (it matches no row; ``NOT IN ()`` matches every row).

    >>> from hotdata_retrieval.compile import get_dialect
    >>> from hotdata_retrieval.plan.filters import Comparison, InList
    >>> filter_text(Comparison(column="lang", operator="=", value="it's")
    ...             & InList(column="year", values=[]), get_dialect("hotdata"))
    "lang = 'it''s' AND year IN ()"
    """
    compiler = PlanCompiler(profile, LiteralBinder(profile))

    def tree(node: Predicate) -> exp.Expr:
        if isinstance(node, InList) and not node.values:
            empty = exp.In(this=column(node.column), expressions=[])
            return exp.Not(this=empty) if node.negated else empty
        if isinstance(node, (And, Or)):
            connective = exp.And if isinstance(node, And) else exp.Or
            operands = [
                part if isinstance(part, connective) else PlanCompiler._grouped(part)
                for part in map(tree, node.operands)
            ]
            combined = operands[0]
            for operand in operands[1:]:
                combined = connective(this=combined, expression=operand)
            return combined
        if isinstance(node, Not):
            return exp.Not(this=PlanCompiler._grouped(tree(node.operand)))
        return compiler.predicate(node)

    dialect = profile.sqlglot_dialect()
    return str(dialect.generate(tree(predicate), copy=False))


def _cte(name: str, select: exp.Query) -> exp.CTE:
    return exp.CTE(this=select, alias=exp.TableAlias(this=identifier(name)))
