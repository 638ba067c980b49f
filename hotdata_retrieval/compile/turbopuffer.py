"""turbopuffer: a plan rendered as the body of one multi-query request (no SQL, no network).

turbopuffer's query endpoint (``POST /v2/namespaces/<namespace>/query``, turbopuffer
documentation, "Query documents") ranks by one function per query — ``["<attribute>", "BM25",
"<text>"]`` or ``["<vector attribute>", "ANN", [...]]`` — and takes several queries in one
request (``{"queries": [...]}``, "Multi-queries"); a hybrid search is one query per branch
fused **on the client**, with reciprocal rank fusion as the documentation suggests ("Hybrid
Search"). :func:`turbopuffer_request` writes that body; the caller sends it and fuses the
answers with :func:`hotdata_retrieval.fusion.reference_fusion` of the plan's fusion — the
semantics every SQL engine's statement reproduces.

What the body keeps from the plan, and what turbopuffer cannot express:

- each branch is one query with ``top_k`` = the plan's depth (a fusion) or ``limit + offset``
  (a single branch; the caller skips ``offset`` rows). turbopuffer returns at most 1,200
  rows per query; a larger bound is refused;
- the plan's filter goes into **every** query (applied before its ``top_k``, never after
  fusion), translated to turbopuffer's filter arrays with SQL's meaning of NULL: turbopuffer
  compares a missing (null) attribute like any value (``NotEq "en"`` matches it), so a
  negation, ``!=`` and ``NOT IN`` also require the attribute to be non-null (``NotEq null``),
  as SQL's three-valued logic leaves such rows out; an empty ``IN`` list matches nothing
  (``["id", "In", []]``) and ``NOT IN ()`` matches every row (no filter);
- the distance metric is a property of the namespace, set when it is written:
  ``cosine_distance`` for the plan's ``cosine`` and ``euclidean_squared`` for its ``l2`` (both
  as the Hotdata engine defines them); turbopuffer has no inner-product metric, so ``dot`` is
  refused, and so is engine-embedded semantic search.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    ComparisonOperator,
    ContainsAll,
    ContainsAny,
    EndsWith,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    StartsWith,
)
from hotdata_retrieval.plan.search import (
    Bm25Search,
    DistanceMetric,
    NearestNeighborSearch,
    QuerySyntax,
    SearchPlan,
)

NAME = "turbopuffer"
MAX_TOP_K = 1200
"""The most rows one turbopuffer query returns (turbopuffer documentation, ``top_k``)."""

TURBOPUFFER_METRICS = {
    DistanceMetric.COSINE: "cosine_distance",
    DistanceMetric.L2: "euclidean_squared",
}
"""The namespace distance metric each plan metric needs (``1 - cos``; ``Σ (xᵢ - yᵢ)²``)."""

_OPERATORS = {
    ComparisonOperator.EQUAL: "Eq",
    ComparisonOperator.NOT_EQUAL: "NotEq",
    ComparisonOperator.LESS: "Lt",
    ComparisonOperator.LESS_OR_EQUAL: "Lte",
    ComparisonOperator.GREATER: "Gt",
    ComparisonOperator.GREATER_OR_EQUAL: "Gte",
}
_NEGATED = {
    ComparisonOperator.EQUAL: ComparisonOperator.NOT_EQUAL,
    ComparisonOperator.NOT_EQUAL: ComparisonOperator.EQUAL,
    ComparisonOperator.LESS: ComparisonOperator.GREATER_OR_EQUAL,
    ComparisonOperator.LESS_OR_EQUAL: ComparisonOperator.GREATER,
    ComparisonOperator.GREATER: ComparisonOperator.LESS_OR_EQUAL,
    ComparisonOperator.GREATER_OR_EQUAL: ComparisonOperator.LESS,
}
_NOTHING: list[Any] = ["id", "In", []]
"""A filter no document passes."""


def _present(column: str) -> list[Any]:
    return [column, "NotEq", None]


def _all(parts: list[list[Any] | None]) -> list[Any] | None:
    """The conjunction of ``parts`` (``None`` is TRUE, :data:`_NOTHING` is FALSE)."""
    kept: list[list[Any]] = []
    for part in parts:
        if part == _NOTHING:
            return _NOTHING
        if part is not None:
            kept.extend(part[1] if part[0] == "And" else [part])
    if not kept:
        return None
    return kept[0] if len(kept) == 1 else ["And", kept]


def _any(parts: list[list[Any] | None]) -> list[Any] | None:
    """The disjunction of ``parts``."""
    if any(part is None for part in parts):
        return None
    kept: list[list[Any]] = []
    for part in parts:
        if part is not None and part != _NOTHING:
            kept.extend(part[1] if part[0] == "Or" else [part])
    if not kept:
        return _NOTHING
    return kept[0] if len(kept) == 1 else ["Or", kept]


def datetime_text(value: datetime.date) -> str:
    """A date or a timestamp as the text a turbopuffer ``datetime`` attribute takes, written
    and compared: RFC 3339 ``date-time`` in UTC with an explicit ``Z``
    (``2026-01-02T03:04:05Z``, ``2026-01-02T03:04:05.123456Z``). turbopuffer reads "an ISO
    8601 formatted string with a mandatory date and optional time and time zone" and converts
    it "to UTC (if the time zone is specified)" (https://turbopuffer.com/docs/schema,
    ``datetime``); the instant of a text without a zone is not stated there, so a zone is
    always written. A timestamp without a zone is taken as UTC, as every engine takes it
    (:func:`~hotdata_retrieval.plan.values.utc_moment`), one with a zone as its instant, a
    date as its midnight in UTC (as every engine takes a date key's midnight).

    Raises:
        PlanError: a zoned timestamp outside the years 1 to 9999 once in UTC.

    >>> datetime_text(datetime.date(2026, 1, 2))
    '2026-01-02T00:00:00Z'
    >>> zone = datetime.timezone(datetime.timedelta(hours=2))
    >>> datetime_text(datetime.datetime(2026, 1, 2, 1, 30, 0, 500, tzinfo=zone))
    '2026-01-01T23:30:00.000500Z'
    """
    from hotdata_retrieval.plan.values import utc_moment

    if not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time())
    moment = utc_moment(value)
    spec = "microseconds" if moment.microsecond else "seconds"
    return f"{moment.isoformat(timespec=spec)}Z"


def _value(value: Any) -> Any:
    """A filter value as turbopuffer reads it: a date or a timestamp as RFC 3339 text in UTC
    (:func:`datetime_text`), a decimal as the float it is (turbopuffer holds no
    decimal attribute; the engine compares a decimal with a float attribute exactly before
    the request is made: ``exact_float_predicate``), anything else as itself."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, datetime.date):
        return datetime_text(value)
    return value


_GLOB_CHARACTERS = "*?[]{}"
"""Characters a glob reads as pattern: wildcards, classes and (in Rust's ``globset``, whose
``escape`` brackets the same way) alternations."""


def _glob_text(text: str, what: str) -> str:
    """``text`` as glob data: each glob character written as a one-character class
    (``[*]``).

    Raises:
        UnsupportedOnDialectError: a backslash in the text: whether turbopuffer's glob
            reads it as an escape (as ``globset`` does by default on Unix) or as data is not
            documented, so no spelling of it is known to match it as data.
    """
    if "\\" in text:
        raise UnsupportedOnDialectError(f"a {what} holding a backslash (in a glob)", NAME)
    return "".join(f"[{c}]" if c in _GLOB_CHARACTERS else c for c in text)


def _glob_prefix(prefix: str) -> str:
    """``prefix`` as a glob matching the values that start with it (:func:`_glob_text`)."""
    return _glob_text(prefix, "prefix") + "*"


def _glob_suffix(suffix: str) -> str:
    """``suffix`` as a glob matching the values that end with it (:func:`_glob_text`)."""
    return "*" + _glob_text(suffix, "suffix")


class _Translation(PredicateVisitor[Any]):
    """A predicate (negated when the second argument says so) as a turbopuffer filter with
    SQL's NULL semantics: the rows where it is TRUE. ``None`` stands for TRUE."""

    def visit_comparison(self, node: Comparison, negated: bool) -> list[Any] | None:
        operator = _NEGATED[node.operator] if negated else node.operator
        leaf = [node.column, _OPERATORS[operator], _value(node.value)]
        return leaf if operator is ComparisonOperator.EQUAL else _all([leaf, _present(node.column)])

    def visit_in_list(self, node: InList, negated: bool) -> list[Any] | None:
        excluded = node.negated != negated
        if not node.values:
            return None if excluded else _NOTHING
        values = [_value(value) for value in node.values]
        if excluded:
            return _all([[node.column, "NotIn", values], _present(node.column)])
        return [node.column, "In", values]

    def visit_is_null(self, node: IsNull, negated: bool) -> list[Any] | None:
        missing = node.negated == negated
        return [node.column, "Eq", None] if missing else _present(node.column)

    def visit_starts_with(self, node: StartsWith, negated: bool) -> list[Any] | None:
        if negated:
            leaf = [node.column, "NotGlob", _glob_prefix(node.prefix)]
            return _all([leaf, _present(node.column)])
        return [node.column, "Glob", _glob_prefix(node.prefix)]

    def visit_ends_with(self, node: EndsWith, negated: bool) -> list[Any] | None:
        if negated:
            leaf = [node.column, "NotGlob", _glob_suffix(node.suffix)]
            return _all([leaf, _present(node.column)])
        return [node.column, "Glob", _glob_suffix(node.suffix)]

    def visit_contains_all(self, node: ContainsAll, negated: bool) -> list[Any] | None:
        if not node.values:
            return _NOTHING if negated else None
        if negated:
            parts = [[node.column, "NotContains", _value(value)] for value in node.values]
            return _all([_any(list(parts)), _present(node.column)])
        return _all([[node.column, "Contains", _value(value)] for value in node.values])

    def visit_contains_any(self, node: ContainsAny, negated: bool) -> list[Any] | None:
        if not node.values:
            return None if negated else _NOTHING
        values = [_value(value) for value in node.values]
        if negated:
            return _all([[node.column, "NotContainsAny", values], _present(node.column)])
        return [node.column, "ContainsAny", values]

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> list[Any] | None:
        """A leaf without a turbopuffer spelling of its own, as its expansion."""
        assert form.expand is not None  # reads_row
        return self._translate(form.expand(node), *args)

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return form.expand is not None

    def visit_not(self, node: Not, negated: bool) -> list[Any] | None:
        return self._translate(node.operand, not negated)

    def visit_and(self, node: And, negated: bool) -> list[Any] | None:
        parts = [self._translate(operand, negated) for operand in node.operands]
        return _any(parts) if negated else _all(parts)

    def visit_or(self, node: Or, negated: bool) -> list[Any] | None:
        parts = [self._translate(operand, negated) for operand in node.operands]
        return _all(parts) if negated else _any(parts)

    def _translate(self, node: Predicate, negated: bool) -> list[Any] | None:
        translated: list[Any] | None = self.visit(node, negated)
        return translated


def turbopuffer_filter(predicate: Predicate) -> list[Any] | None:
    """``predicate`` as turbopuffer's filter array, TRUE exactly where SQL says TRUE (module
    docstring); ``None`` when every row passes.

    >>> from hotdata_retrieval.plan.filters import Comparison, InList
    >>> turbopuffer_filter(~Comparison(column="lang", operator="=", value="en"))
    ['And', [['lang', 'NotEq', 'en'], ['lang', 'NotEq', None]]]
    >>> turbopuffer_filter(InList(column="tag", values=[]))
    ['id', 'In', []]
    """
    return _Translation()._translate(predicate, False)


def turbopuffer_request(plan: SearchPlan, *, vector_attribute: str | None = None) -> dict[str, Any]:
    """The body of one turbopuffer multi-query request for ``plan``: one query per branch, in
    branch order, each with the plan's filter, ``top_k`` and the projected attributes (and
    the vector attributes of the branches ``page_scores`` names, whose distances the caller
    computes for the hits those branches did not return).

    Args:
        plan: the search; a fusion's branches are fused by the caller with the reference
            fusion of ``plan.fusion``.
        vector_attribute: the namespace's vector attribute, if not the branch's column name
            (turbopuffer calls it ``vector``).

    Returns:
        ``{"queries": [...], "distance_metric": ...}``: the queries, and the namespace metric
        they assume (``None`` without a nearest branch), which the caller checks against the
        namespace's.

    Raises:
        UnsupportedOnDialectError: tie-breakers, several tables, the ``dot`` metric, an
            exact nearest branch, a text branch with no word, nearest branches of two metrics,
            engine-embedded semantic search, or a ``top_k`` above :data:`MAX_TOP_K`.
    """
    if plan.tie_breakers:
        raise UnsupportedOnDialectError(
            "tie-breakers (a query ranks by one function; the client fuses by key)", NAME
        )
    if plan.single_table is None:
        raise UnsupportedOnDialectError(
            "a search over several tables (a request queries one namespace)", NAME
        )
    top_k = plan.depth if plan.fusion is not None else plan.limit + plan.offset
    if top_k > MAX_TOP_K:
        raise UnsupportedOnDialectError(
            f"top_k {top_k} (a query returns at most {MAX_TOP_K} rows)", NAME
        )
    where = None if plan.filter is None else turbopuffer_filter(plan.filter)
    # the vectors page_scores computes distances from, on the client, come with every row
    attributes = [
        name
        for name in dict.fromkeys(
            [
                *plan.projection,
                *plan.page_score_columns,
                *(() if plan.formula is None else plan.formula.columns),
            ]
        )
        if name != "id"
    ]
    metrics = set()
    queries = []
    for branch in plan.branches:
        if isinstance(branch, Bm25Search):
            if not branch.words:
                raise UnsupportedOnDialectError("a text branch with no word to search for", NAME)
            text = branch.query_text
            if branch.query_syntax is QuerySyntax.TERMS:
                text = " ".join(branch.words)  # BM25 ranks by the words; no syntax to escape
            rank_by: list[Any] = [branch.column, "BM25", text]
        elif isinstance(branch, NearestNeighborSearch):
            if branch.exact:
                raise UnsupportedOnDialectError(
                    "an exact nearest-neighbour scan (a query ranks by ANN)", NAME
                )
            metric = TURBOPUFFER_METRICS.get(branch.metric)
            if metric is None:
                raise UnsupportedOnDialectError(
                    f"the {branch.metric.value} distance (turbopuffer has cosine_distance and "
                    "euclidean_squared)",
                    NAME,
                )
            metrics.add(metric)
            rank_by = [vector_attribute or branch.column, "ANN", list(branch.query_vector)]
        else:
            raise UnsupportedOnDialectError("engine-embedded semantic search", NAME)
        query: dict[str, Any] = {"rank_by": rank_by, "top_k": top_k}
        if where is not None:
            query["filters"] = where
        query["include_attributes"] = attributes
        queries.append(query)
    if len(metrics) > 1:
        raise UnsupportedOnDialectError(
            "nearest branches of two metrics (a namespace has one distance metric)", NAME
        )
    return {"queries": queries, "distance_metric": metrics.pop() if metrics else None}


def rows_request(
    key: str,
    columns: list[str],
    *,
    keys: list[Any] | None = None,
    after: Any = None,
    limit: int = MAX_TOP_K,
) -> dict[str, Any]:
    """The body of one query that reads documents in key order, no ranking function: the
    first ``limit`` (at most :data:`MAX_TOP_K`) ordered by ``key`` ascending (``rank_by``
    an attribute and a direction, turbopuffer documentation, "Query documents"), those of
    ``keys`` (an ``In`` filter) or those past ``after`` (a ``Gt`` filter: the next page),
    with ``columns`` (vectors as floats).

    >>> rows_request("id", ["text"], keys=["a", "b"], limit=2)
    {'rank_by': ['id', 'asc'], 'top_k': 2, 'include_attributes': ['text'], 'vector_encoding': 'float', 'filters': ['id', 'In', ['a', 'b']]}
    """  # noqa: E501
    body: dict[str, Any] = {
        "rank_by": [key, "asc"],
        "top_k": min(limit, MAX_TOP_K),
        "include_attributes": list(columns),
        "vector_encoding": "float",
    }
    conditions = []
    if keys is not None:
        conditions.append([key, "In", list(keys)])
    if after is not None:
        conditions.append([key, "Gt", after])
    if conditions:
        body["filters"] = conditions[0] if len(conditions) == 1 else ["And", conditions]
    return body
