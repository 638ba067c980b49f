"""Rankings that are combined or cut the wrong way: HDQ030, HDQ031."""

from __future__ import annotations

from sqlglot import exp

from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import (
    BM25_SEARCH,
    Analysis,
    DerivedSource,
    ExpressionOrigin,
    ScoreOrigin,
    Source,
    distance_metric,
    limit_expression,
    order_keys,
)
from hotdata_retrieval.lint.rules.base import Report, Rule

_SCORE = "score"
_DISTANCE = "distance"
_NONE: frozenset[str] = frozenset()
_COMBINING = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
)
_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank)


class _Scales:
    """Which raw scales (BM25 score, distance) an expression carries, through lineage."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self._memo: dict[int, frozenset[str]] = {}

    def of(self, select: exp.Select, node: exp.Expr, depth: int = 0) -> frozenset[str]:
        key = id(node)
        cached = self._memo.get(key)
        if cached is not None:
            return cached
        self._memo[key] = _NONE  # breaks cycles
        result = self._compute(select, node, depth)
        self._memo[key] = result
        return result

    def _compute(self, select: exp.Select, node: exp.Expr, depth: int) -> frozenset[str]:
        if depth > 64 or isinstance(node, (exp.Literal, exp.Subquery, exp.Select)):
            return _NONE
        if distance_metric(node) is not None:
            return frozenset({_DISTANCE})
        if isinstance(node, exp.Window) and isinstance(node.this, _RANKS):
            return _NONE  # a rank, not a raw scale: fusing ranks is right
        if isinstance(node, exp.If):
            return self.of(select, node.args["true"], depth + 1)  # the condition is no value
        if isinstance(node, exp.Div):
            numerator = self.of(select, node.this, depth + 1)
            if numerator and numerator == self.of(select, node.expression, depth + 1):
                # A ratio of one scale, such as min-max normalization (s - low) / (high -
                # low): dimensionless, so weighting and adding it to another is right.
                return _NONE
        if isinstance(node, exp.Column):
            origin = self.analysis.resolve(select, node)
            if isinstance(origin, ScoreOrigin):
                is_bm25 = origin.source.function.name == BM25_SEARCH
                return frozenset({_SCORE if is_bm25 else _DISTANCE})
            if isinstance(origin, ExpressionOrigin):
                return self.of(origin.select, origin.expression, depth + 1)
            return _NONE
        found: set[str] = set()
        for child in node.iter_expressions():
            found |= self.of(select, child, depth + 1)
        return frozenset(found)


def score_distance_mix(analysis: Analysis, report: Report) -> None:
    """A BM25 score (roughly 8-11 on real data, unbounded, higher is better) and a distance
    (cosine 0-2, lower is nearer) are on incomparable scales: adding, weighting or comparing
    them gives a meaningless order. Fuse their *ranks* (reciprocal rank fusion). Engine
    contract §1.1 (scores comparable only within one result set), §3.3 item 8;
    hotdata-langchain ``docs/engine-contract.md`` and ``search.py``."""
    scales = _Scales(analysis)
    for node in analysis.find(*_COMBINING):
        select = analysis.enclosing_select(node)
        if select is None:
            continue
        left = scales.of(select, node.this)
        right = scales.of(select, node.expression)
        if (_SCORE in left and _DISTANCE in right) or (_DISTANCE in left and _SCORE in right):
            report(
                node,
                f"{analysis.text(node)} combines a BM25 score with a distance: their scales "
                "are incomparable (and run in opposite directions)",
                "rank each result separately (ROW_NUMBER() OVER (ORDER BY ...)) and fuse the "
                "ranks, e.g. with reciprocal rank fusion",
            )


def _top_k(analysis: Analysis, source: Source) -> exp.Select | None:
    """The derived query if it is a ranked top-k: ORDER BY a score or distance, with LIMIT."""
    if not isinstance(source, DerivedSource):
        return None
    inner = source.select
    if inner is None or limit_expression(inner) is None:
        return None
    keys = order_keys(inner)
    if not keys:
        return None
    key = keys[0].this
    if analysis.distance_in(inner, key) is not None:
        return inner
    if isinstance(key, exp.Column) and isinstance(
        analysis.resolve(inner, key, pure_only=True), ScoreOrigin
    ):
        return inner
    return None


def _is_ranking(analysis: Analysis, select: exp.Select, column: exp.Column) -> bool:
    """The column is the top-k's own score or distance: a threshold on it after the top-k
    (``WHERE x._distance < 0.3``) is a deliberate cut, not a misplaced filter."""
    origin = analysis.resolve(select, column, aliases=False)
    if isinstance(origin, ScoreOrigin):
        return True
    return isinstance(origin, ExpressionOrigin) and (
        analysis.distance_in(origin.select, origin.expression) is not None
    )


def filter_after_top_k(analysis: Analysis, report: Report) -> None:
    """A WHERE applied outside a computed top-k (``SELECT ... FROM (... ORDER BY dist LIMIT
    k) WHERE cond``) filters the k rows already chosen: fewer than k come back, silently.
    The condition belongs in the same query's WHERE, ahead of ORDER BY/LIMIT. Engine
    contract §3.3 item 11; hotdata-langchain ``docs/vectorstore-plan.md``."""
    for select in analysis.selects:
        where = select.args.get("where")
        if not isinstance(where, exp.Where):
            continue
        reported: set[int] = set()
        for column in where.find_all(exp.Column):
            if isinstance(column.this, exp.Star) or analysis.enclosing_select(column) is not select:
                continue
            qualifier = column.table or None
            if qualifier is not None:
                source = analysis.source_named(select, qualifier)
            else:
                sources = analysis.sources(select)
                source = sources[0] if len(sources) == 1 else None
            if source is None or id(source) in reported or _is_ranking(analysis, select, column):
                continue
            inner = _top_k(analysis, source)
            if inner is None:
                continue
            reported.add(id(source))
            limit = analysis.text(limit_expression(inner) or inner)
            name = source.name or "the subquery"
            report(
                where.this,
                f"WHERE {analysis.text(where.this)} filters {name} after its ORDER BY ... "
                f"LIMIT {limit}: rows failing it are dropped from the top {limit}, so fewer "
                "come back",
                f"move the condition into {name}'s WHERE, ahead of its ORDER BY and LIMIT",
                severity=Severity.WARNING,
            )


RULES = [
    Rule(
        code="HDQ030",
        name="score-distance-mix",
        severity=Severity.ERROR,
        summary="arithmetic or comparison between a BM25 score and a distance",
        check=score_distance_mix,
    ),
    Rule(
        code="HDQ031",
        name="filter-after-top-k",
        severity=Severity.WARNING,
        summary="a WHERE applied outside a ranked top-k (fewer than k rows come back)",
        check=filter_after_top_k,
    ),
]
