"""The conformance cases of ``docs/spec/hybrid_search.md``: fixture corpora, plans, and the
expected results, computed without running any SQL.

Every corpus is built so that its rankings follow from the spec alone, on any engine:

- the text branch searches one term, and every non-NULL text has the same number of words, so
  any BM25 (any ``k1 > 0``, any ``b``) orders the matching rows by how often the term occurs;
  equal counts give bit-equal scores, which the spec breaks by key;
- vectors have small integral components (exact in Float32), so distances are computed here
  in plain Python; distinct distances differ by far more than Float32 rounding, and equal
  ones come from equal arithmetic;
- no tie straddles a branch's depth cut, so the cut is defined for both forms.

Expected rows come from the reference fusion (:func:`hotdata_retrieval.fusion.
reference_fusion`, of the plan's method) over those branch rankings. A score-normalized
method (min-max, distribution-based) also reads raw scores: the text branch's are its term
counts, which stand for any BM25 only where they take at most two distinct values (both
normalizations are unchanged by a positive affine map of a branch's scores, and any two
levels map onto any other two), so those cases keep to two. Where the compiled CTE form cannot
follow the spec (a table function applies its k before the filter; a NULL vector sorts last instead
of being excluded), the case also carries the CTE form's own expected rows, computed the same
way with the CTE form's rules, and says why they differ.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from hotdata_retrieval.compile import get_dialect, known_dialects, to_sql
from hotdata_retrieval.engines.results import group_key
from hotdata_retrieval.errors import CaseError as CaseError
from hotdata_retrieval.errors import UnsupportedFeatureError
from hotdata_retrieval.fusion import competition_ranks, reference_fusion
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document
from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    sql_compare,
)
from hotdata_retrieval.plan.search import (
    Bm25Search,
    DistanceMetric,
    DistributionBasedScoreFusion,
    MinMaxFusion,
    NearestNeighborSearch,
    NormalizedScoreFusion,
    ReciprocalRankFusion,
    SearchPlan,
)

CASE_FORMAT = "hdq-hybrid-search-case/1"
"""The ``format`` of a case document."""

QUERY_TERM = "zebra"
ABSENT_TERM = "quokka"
FILLER = ("river", "stone", "cloud", "maple", "harbor", "lantern")
BODY_WORDS = 6

COLUMN_TYPES = {"id": "int64", "body": "string", "category": "string", "embedding": "list<float32>"}

DIVERGENCES = {
    "filter_after_k": (
        "in a dialect with no scalar semantic distance, the CTE form's vector_search(..., "
        "depth) keeps the depth nearest rows of the whole table and its WHERE filters them "
        "afterwards, so a filtered semantic branch ranks fewer candidates than the spec's "
        "filter-then-rank (spec D1)"
    ),
}
"""Why the CTE form's rows differ from the spec's, by the name cases use."""


# -- fixture rows ----------------------------------------------------------------------------


@attrs.frozen
class Doc:
    """One fixture row: its key, how often the query term occurs (``None``: NULL text), its
    category and its vector (``None``: NULL)."""

    key: int | str
    tf: int | None
    category: str | None
    vector: tuple[float, ...] | None

    @property
    def body(self) -> str | None:
        if self.tf is None:
            return None
        return " ".join([QUERY_TERM] * self.tf + list(FILLER[: BODY_WORDS - self.tf]))

    def values(self) -> dict[str, Any]:
        return {
            "id": self.key,
            "body": self.body,
            "category": self.category,
            "embedding": None if self.vector is None else list(self.vector),
        }


def _docs(rows: Iterable[tuple[Any, int | None, str | None, Sequence[float] | None]]) -> list[Doc]:
    return [
        Doc(key, tf, category, None if vector is None else tuple(float(x) for x in vector))
        for key, tf, category, vector in rows
    ]


BASE = _docs(
    [
        (1, 2, "a", (3, 2)),
        (2, 0, "b", (4, 1)),
        (3, 3, "a", (1, 4)),
        (4, 1, "b", (1, 0)),
        (5, 0, "a", (0, 1)),
        (6, 1, "a", (1, 1)),
        (7, 2, "b", (-1, 1)),
        (8, 0, "b", (1, 2)),
    ]
)
"""Text ranks 3, 1, 7, 4, 6 (ties 1/7 and 4/6 by key); nearest to (1, 0) by cosine:
4, 2, 1, 6, 8, 3, 5, 7."""

ORIGIN = (1.0, 0.0)


# -- semantics, computed directly ------------------------------------------------------------


class _Truth(PredicateVisitor[bool | None]):
    """SQL's three-valued truth of a predicate for one row (``None`` is unknown)."""

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.row = row

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> bool | None:
        """A leaf by its row's truth for the column's value (unknown for NULL), or else as
        its expansion."""
        if form.truth is None:
            assert form.expand is not None  # reads_row
            return self.predicate(form.expand(node))
        value = self.row[node.column]
        return None if value is None else form.truth(node, value)

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return form.truth is not None or form.expand is not None

    def visit_in_list(self, node: InList) -> bool | None:
        if not node.values:
            return node.negated
        value = self.row[node.column]
        if value is None:
            return None
        member = any(sql_compare(value, "=", item) for item in node.values)
        return member != node.negated

    def visit_is_null(self, node: IsNull) -> bool | None:
        return (self.row[node.column] is None) != node.negated

    def visit_contains_all(self, node: ContainsAll) -> bool | None:
        if not node.values:
            return True
        value = self.row[node.column]
        return None if value is None else all(item in value for item in node.values)

    def visit_contains_any(self, node: ContainsAny) -> bool | None:
        if not node.values:
            return False
        value = self.row[node.column]
        return None if value is None else any(item in value for item in node.values)

    def _connective(self, operands: Sequence[Predicate], decisive: bool) -> bool | None:
        truths = [self.predicate(operand) for operand in operands]
        if decisive in truths:
            return decisive
        return None if None in truths else not decisive

    def visit_and(self, node: And) -> bool | None:
        return self._connective(node.operands, False)

    def visit_or(self, node: Or) -> bool | None:
        return self._connective(node.operands, True)

    def visit_not(self, node: Not) -> bool | None:
        truth = self.predicate(node.operand)
        return None if truth is None else not truth


def _passes(predicate: Predicate | None, row: Mapping[str, Any]) -> bool | None:
    """SQL's three-valued truth of ``predicate`` for ``row`` (``None`` is unknown)."""
    if predicate is None:
        return True
    return _Truth(row).predicate(predicate)


def distance(metric: DistanceMetric, vector: Sequence[float], query: Sequence[float]) -> float:
    """The spec's distance: the metric's own (:meth:`DistanceMetric.distance`): ``cosine``
    ``1 - a·b/(‖a‖‖b‖)`` (1.0 for a zero vector), ``l2`` squared Euclidean, ``dot``
    ``-(a·b)``; lower is nearer.

    >>> distance(DistanceMetric.L2, (1.0, 2.0), (0.0, 0.0))
    5.0
    """
    return metric.distance(vector, query)


def _check_cut(values: Sequence[Any], depth: int, where: str) -> None:
    if len(values) > depth and values[depth - 1] == values[depth]:
        raise CaseError(f"{where}: a tie straddles the depth cut at {depth}; the cut is undefined")


def _check_separated(distances: Sequence[float], where: str) -> None:
    for nearer, farther in itertools.pairwise(distances):
        if nearer != farther and farther - nearer <= 1e-6 * max(1.0, abs(farther)):
            raise CaseError(f"{where}: distances {nearer} and {farther} are too close for Float32")


def _text_ranking(
    docs: Sequence[Doc], branch: Bm25Search, plan: SearchPlan, *, cte: bool
) -> list[dict[str, Any]]:
    """Rows matching the term that pass the filter, by term frequency descending then key;
    cut at the depth. The CTE form does the same: with a filter it leaves out
    ``bm25_search``'s k, so the function's bound does not come before the WHERE (spec D1)."""
    term = branch.query_text.strip().lower()
    if term.split() != [term]:
        raise CaseError("fixture text branches search one term")
    matching = [doc for doc in docs if doc.body is not None and doc.body.split().count(term)]

    def tf(doc: Doc) -> int:
        assert doc.body is not None
        return doc.body.split().count(term)

    matching = [doc for doc in matching if _passes(plan.filter, doc.values())]
    ordered = sorted(matching, key=lambda doc: (-tf(doc), doc.key))
    _check_cut([tf(doc) for doc in ordered], plan.depth, "text branch")
    kept = ordered[: plan.depth]
    ranks = competition_ranks([float(tf(doc)) for doc in kept])
    return [
        {"key": doc.key, "rank": rank, "term_frequency": tf(doc)} for rank, doc in zip(ranks, kept)
    ]


def _vector_ranking(
    docs: Sequence[Doc], branch: NearestNeighborSearch, plan: SearchPlan, *, cte: bool
) -> list[dict[str, Any]]:
    """Filtered rows with a vector, by distance then key; cut at the depth. The CTE form
    ranks the same rows: it drops NULL distances before ranking (spec D2, closed)."""
    passing = [doc for doc in docs if _passes(plan.filter, doc.values())]
    measured = [
        (distance(branch.metric, doc.vector, branch.query_vector), doc)
        for doc in passing
        if doc.vector is not None
    ]
    measured.sort(key=lambda item: (item[0], item[1].key))
    _check_separated([value for value, _ in measured], "vector branch")
    _check_cut([value for value, _ in measured], plan.depth, "vector branch")
    kept = measured[: plan.depth]
    ranks = competition_ranks([value for value, _ in kept], higher_is_better=False)
    return [
        {"key": doc.key, "rank": rank, "distance": value} for rank, (value, doc) in zip(ranks, kept)
    ]


def expected_result(docs: Sequence[Doc], plan: SearchPlan, *, cte: bool = False) -> dict[str, Any]:
    """Each branch's ranking and the fused page, by the spec (or by the CTE form's rules)."""
    fusion = plan.fusion
    if fusion is None:
        raise CaseError("a conformance case fuses two branches")
    branches: dict[str, list[dict[str, Any]]] = {}
    for name, branch in zip(plan.branch_names, plan.branches):
        if isinstance(branch, Bm25Search):
            branches[name] = _text_ranking(docs, branch, plan, cte=cte)
        elif isinstance(branch, NearestNeighborSearch):
            branches[name] = _vector_ranking(docs, branch, plan, cte=cte)
        else:
            raise CaseError("fixture vector branches carry their query vector")
    scores = None
    if isinstance(fusion, NormalizedScoreFusion):
        scores = [
            [
                float(entry["term_frequency"] if "term_frequency" in entry else entry["distance"])
                for entry in ranking
            ]
            for ranking in branches.values()
        ]
        for name, ranking in branches.items():
            levels = {entry["term_frequency"] for entry in ranking if "term_frequency" in entry}
            if len(levels) > 2:
                raise CaseError(
                    f"text branch {name} has {len(levels)} distinct term counts: its normalized "
                    "BM25 scores would depend on the engine's BM25"
                )
    grouped = plan.group_by is not None
    hits = reference_fusion(
        fusion,
        [[entry["key"] for entry in ranking] for ranking in branches.values()],
        ranks=[[entry["rank"] for entry in ranking] for ranking in branches.values()],
        scores=scores,
        limit=plan.depth if grouped else plan.limit,
        offset=0 if grouped else plan.offset,
    )
    by_key = {doc.key: doc for doc in docs}
    if plan.group_by is not None:
        # the best group_size rows of each group, groups in the order of their best row
        members: dict[Any, list[Any]] = {}
        for hit in hits:
            value = by_key[hit.key].values()[plan.group_by]
            if value is None:
                continue
            kept = members.setdefault(group_key(value), [])  # every NaN one group
            if len(kept) < plan.group_size:
                kept.append(hit)
        page = list(members.values())[plan.offset : plan.offset + plan.limit]
        hits = [hit for kept in page for hit in kept]
    distances = {
        name: {entry["key"]: entry["distance"] for entry in ranking}
        for name, ranking in branches.items()
        if ranking and "distance" in ranking[0]
    }
    rows = []
    for hit in hits:
        row: dict[str, Any] = {
            "key": hit.key,
            "score": hit.score,
            "ranks": dict(zip(branches, hit.ranks)),
            "columns": {name: by_key[hit.key].values()[name] for name in plan.projection},
        }
        row["distances"] = {name: values.get(hit.key) for name, values in distances.items()}
        rows.append(row)
    return {"branches": branches, "rows": rows}


# -- cases -----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Case:
    """One conformance case.

    Attributes:
        name: the case's name (also its file name and table suffix).
        description: what it checks.
        rules: the spec rules it exercises (``R3``, ``D1``, ...).
        key_type: ``int64`` or ``string``.
        rows: the fixture rows, as column → value mappings.
        plan: the search.
        expected: the spec's branch rankings and fused rows.
        cte_divergences: names from :data:`DIVERGENCES` when the CTE form's rows differ.
        cte_expected: the CTE form's own expected result when it differs, else ``None``.
    """

    name: str
    description: str
    rules: tuple[str, ...]
    key_type: str
    rows: tuple[Mapping[str, Any], ...]
    plan: SearchPlan
    expected: Mapping[str, Any]
    cte_divergences: tuple[str, ...] = ()
    cte_expected: Mapping[str, Any] | None = None

    @property
    def table(self) -> str:
        table = self.plan.single_table
        assert table is not None  # a spec case searches one table
        return table.name

    @property
    def column_types(self) -> dict[str, str]:
        return {**COLUMN_TYPES, "id": self.key_type}

    def to_document(self) -> dict[str, Any]:
        """The case as JSON data (what ``hdq spec export`` writes)."""
        cte_form: dict[str, Any] = {"agrees": not self.cte_divergences}
        if self.cte_divergences:
            cte_form["divergences"] = [
                {"name": name, "reason": DIVERGENCES[name]} for name in self.cte_divergences
            ]
            cte_form["expected"] = self.cte_expected
        return {
            "format": CASE_FORMAT,
            "name": self.name,
            "description": self.description,
            "rules": list(self.rules),
            "corpus": {
                "table": self.table,
                "key_column": self.plan.key_column,
                "text_columns": ["body"],
                "column_types": self.column_types,
                "rows": [dict(row) for row in self.rows],
            },
            "plan": plan_to_document(self.plan),
            "sql": golden_sql(self.plan),
            "expected": self.expected,
            "cte_form": cte_form,
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Case:
        """Read a case written by :meth:`to_document`.

        Raises:
            CaseError: not a case document of this format.
        """
        if not isinstance(document, Mapping) or document.get("format") != CASE_FORMAT:
            raise CaseError(f"not a {CASE_FORMAT} case document")
        try:
            corpus = document["corpus"]
            cte_form = document["cte_form"]
            divergences = tuple(item["name"] for item in cte_form.get("divergences", ()))
            return cls(
                name=str(document["name"]),
                description=str(document["description"]),
                rules=tuple(document["rules"]),
                key_type=str(corpus["column_types"]["id"]),
                rows=tuple(corpus["rows"]),
                plan=plan_from_document(document["plan"]),
                expected=_expected(document["expected"], "expected"),
                cte_divergences=divergences,
                cte_expected=(
                    None
                    if cte_form.get("expected") is None
                    else _expected(cte_form["expected"], "cte_form.expected")
                ),
            )
        except (KeyError, TypeError) as error:
            raise CaseError(f"case document is missing {error}") from None


def library_dialects() -> tuple[str, ...]:
    """The registered dialects this library defines (``known_dialects`` less those a caller
    registered): the dialects of the spec's golden statements, the same in every process."""
    return tuple(
        name
        for name in known_dialects()
        if get_dialect(name).sqlglot_dialect.__module__.startswith("hotdata_retrieval.")
    )


def golden_sql(plan: SearchPlan) -> dict[str, Any]:
    """The statement ``plan`` compiles to on each of the library's dialects
    (:func:`library_dialects`): ``{dialect: "<SQL>"}``, or ``{dialect: {"refused":
    "<reason>"}}`` where the dialect cannot express the plan. What a port that cannot import
    this library (hotdata-cli, in Rust) compares its own bytes with.
    """
    statements: dict[str, Any] = {}
    for dialect in library_dialects():
        try:
            statements[dialect] = to_sql(plan, dialect)
        except UnsupportedFeatureError as error:
            statements[dialect] = {"refused": str(error)}
    return statements


def _expected(value: Any, label: str) -> dict[str, Any]:
    """Check the shape of an expected result: ``{"rows": [{"key", "score", "ranks"}...]}``.

    Raises:
        CaseError: anything else.
    """
    rows = value.get("rows") if isinstance(value, Mapping) else None
    if not isinstance(rows, list) or not all(
        isinstance(row, Mapping)
        and {"key", "score", "ranks"} <= set(row)
        and isinstance(row["ranks"], Mapping)
        for row in rows
    ):
        raise CaseError(
            f"{label} must be an object whose 'rows' list holds objects with key, score and ranks"
        )
    return dict(value)


def _plan(
    name: str,
    *,
    query: str = QUERY_TERM,
    vector: Sequence[float] = ORIGIN,
    metric: str = "cosine",
    limit: int = 5,
    offset: int = 0,
    depth: int | None = None,
    weights: Sequence[float] | None = None,
    rank_constant: float = 60,
    filter: Predicate | None = None,
    vector_first: bool = False,
    method: type[ReciprocalRankFusion | NormalizedScoreFusion] = ReciprocalRankFusion,
    alpha: float | None = None,
    min_score: float | None = None,
    group_by: str | None = None,
    group_size: int = 1,
) -> SearchPlan:
    table = f"spec_{name}"
    text = Bm25Search(table=table, column="body", query_text=query)
    nearest = NearestNeighborSearch(
        table=table, column="embedding", query_vector=vector, metric=metric
    )
    options: dict[str, Any] = {"weights": weights, "depth": depth, "min_score": min_score}
    if method is ReciprocalRankFusion:
        options["rank_constant"] = rank_constant
    else:
        options["alpha"] = alpha
    return SearchPlan(
        source=method(branches=[nearest, text] if vector_first else [text, nearest], **options),
        columns=["id", "category"],
        limit=limit,
        offset=offset,
        filter=filter,
        include_branch_scores=True,
        group_by=group_by,
        group_size=group_size,
    )


def _case(
    name: str, description: str, rules: Sequence[str], docs: Sequence[Doc], plan: SearchPlan
) -> Case:
    expected = expected_result(docs, plan)
    cte_expected = expected_result(docs, plan, cte=True)
    divergences: list[str] = []
    if cte_expected["rows"] != expected["rows"]:
        for branch_name, branch in zip(plan.branch_names, plan.branches):
            if cte_expected["branches"][branch_name] != expected["branches"][branch_name]:
                text = isinstance(branch, Bm25Search)
                if not text:
                    raise CaseError(f"{name}: the CTE form's vector branch differs from the spec")
                divergences.append("filter_after_k")
    key_types = {type(doc.key) for doc in docs}
    return Case(
        name=name,
        description=description,
        rules=tuple(rules),
        key_type="string" if key_types == {str} else "int64",
        rows=tuple(doc.values() for doc in docs),
        plan=plan,
        expected=expected,
        cte_divergences=tuple(divergences),
        cte_expected=cte_expected if divergences else None,
    )


def _category(value: str) -> Comparison:
    return Comparison(column="category", operator="=", value=value)


def build_cases() -> list[Case]:
    """Every conformance case, in a fixed order.

    Raises:
        CaseError: a fixture would leave a ranking undefined (a bug in this module).
    """
    truncating = _docs(
        [
            (1, 5, "b", (4, 1)),
            (2, 4, "b", (3, 2)),
            (3, 3, "a", (1, 1)),
            (4, 2, "b", (1, 2)),
            (5, 1, "a", (1, 4)),
            (6, 1, "b", (0, 1)),
            (7, 1, "a", (-1, 1)),
            (8, 0, "a", (1, 0)),
        ]
    )
    with_null_vectors = [
        *BASE,
        *_docs([(9, 2, "a", None), (10, 0, "b", None), (11, 1, "a", None)]),
    ]
    ties = _docs(
        [
            (12, 1, "a", (1, 1)),
            (10, 1, "b", (1, 1)),
            (11, 1, "a", (1, 1)),
            (13, 0, "b", (1, 0)),
        ]
    )
    symmetric = _docs(
        [(31, 3, "a", (4, 1)), (30, 2, "b", (1, 0)), (32, 1, "a", (1, 1)), (33, 0, "b", (0, 1))]
    )
    string_keys = _docs(
        [
            ("doc-b", 1, "a", (1, 1)),
            ("doc-a", 1, "a", (1, 1)),
            ("doc-c", 2, "b", (1, 0)),
            ("Doc-d", 1, "b", (1, 1)),
        ]
    )
    null_text = _docs(
        [
            (1, None, "a", (1, 0)),
            (2, 1, None, (1, 1)),
            (3, 2, "b", (4, 1)),
            (4, 1, "a", (1, 2)),
            (5, 3, "a", (3, 2)),
        ]
    )
    two_levels = _docs(
        [
            (1, 2, "a", (3, 2)),
            (2, 1, "b", (4, 1)),
            (3, 2, "a", (1, 4)),
            (4, 1, "b", (1, 0)),
            (5, 0, "a", (0, 1)),
            (6, 1, "a", (1, 1)),
            (7, 0, "b", (-1, 1)),
        ]
    )
    """Term counts 2 and 1 only, so any BM25 normalizes them alike; by squared L2 from (1, 0)
    (integers, exact in Float32, so the normalized scores are exact too): 4, 6, 5, 7, 1, 2,
    3."""
    one_text_row = _docs(
        [(1, 0, "a", (3, 2)), (2, 1, "b", (4, 1)), (3, 0, "a", (1, 4)), (4, 0, "b", (1, 0))]
    )
    specs: list[tuple[str, str, Sequence[str], Sequence[Doc], SearchPlan]] = [
        (
            "basic",
            "Both branches, default options: 1-based ranks, rank constant 60, equal weights.",
            ["R3", "R4", "R6"],
            BASE,
            _plan("basic"),
        ),
        (
            "ties_within_branches",
            "Equal term counts and equal vectors: each branch ranks its ties by key ascending.",
            ["R4"],
            ties,
            _plan("ties_within_branches"),
        ),
        (
            "fused_ties",
            "Ranks (1, 2) and (2, 1) give equal fused scores: key ascending decides.",
            ["R3", "R6"],
            symmetric,
            _plan("fused_ties"),
        ),
        (
            "string_keys",
            "String keys: ties are broken by the key's byte order ('Doc-d' < 'doc-a').",
            ["R4", "R6"],
            string_keys,
            _plan("string_keys", limit=10),
        ),
        (
            "one_sided_hits",
            "Depth 3: rows found by one branch score that branch's term alone, with NULL "
            "rank in the other.",
            ["R5", "R7"],
            BASE,
            _plan("one_sided_hits", limit=3, depth=3),
        ),
        (
            "depth_cuts_candidates",
            "An explicit depth: rows beyond it in a branch are not that branch's candidates.",
            ["R7"],
            BASE,
            _plan("depth_cuts_candidates", limit=3, depth=5),
        ),
        (
            "empty_text_branch",
            "No row contains the query term: the vector branch alone decides.",
            ["R9"],
            BASE,
            _plan("empty_text_branch", query=ABSENT_TERM),
        ),
        (
            "both_branches_empty",
            "The filter keeps no row: zero rows, not an error.",
            ["R8", "R9"],
            BASE,
            _plan("both_branches_empty", filter=_category("z")),
        ),
        (
            "empty_table",
            "An empty table: zero rows, not an error.",
            ["R9", "R13"],
            [],
            _plan("empty_table"),
        ),
        (
            "null_text_and_category",
            "A NULL text is never a text candidate; NOT (NULL = 'b') is unknown, so a NULL "
            "category fails the filter (three-valued logic).",
            ["R8", "R10"],
            null_text,
            _plan("null_text_and_category", filter=Not(operand=_category("b"))),
        ),
        (
            "weights",
            "Weights multiply each branch's term: text 3.0, vector 0.5.",
            ["R3", "R12"],
            BASE,
            _plan("weights", weights=[3.0, 0.5], limit=8),
        ),
        (
            "zero_weight",
            "A zero weight: the branch's rows still appear (score 0 when only it found them) "
            "and its ranks are still reported.",
            ["R12"],
            BASE,
            _plan("zero_weight", weights=[1.0, 0.0], limit=8),
        ),
        (
            "rank_constant_1",
            "Rank constant 1.",
            ["R3"],
            BASE,
            _plan("rank_constant_1", rank_constant=1),
        ),
        (
            "rank_constant_fractional",
            "A fractional rank constant, 0.5.",
            ["R3"],
            BASE,
            _plan("rank_constant_fractional", rank_constant=0.5, limit=8),
        ),
        *[
            (
                f"offset_page_{page}",
                f"Page {page} of three with a fixed depth of 9: pages tile the fused list.",
                ["R7"],
                BASE,
                _plan(f"offset_page_{page}", limit=3, offset=3 * (page - 1), depth=9),
            )
            for page in (1, 2, 3)
        ],
        (
            "k_larger_than_table",
            "k = 50 on 8 rows: every candidate once, no padding.",
            ["R13"],
            BASE,
            _plan("k_larger_than_table", limit=50),
        ),
        (
            "filter_inside_branches",
            "A filter applied inside both branches before ranking (all matches fit the depth, "
            "so both forms agree).",
            ["R8"],
            BASE,
            _plan(
                "filter_inside_branches",
                filter=And(
                    operands=[
                        InList(column="category", values=["a"]),
                        Not(operand=Comparison(column="id", operator="=", value=3)),
                    ]
                ),
            ),
        ),
        (
            "filter_before_depth",
            "The filter comes before the depth cut: the text branch ranks the depth best "
            "matching rows that pass it, in both forms.",
            ["R8", "D1"],
            truncating,
            _plan("filter_before_depth", limit=2, depth=3, filter=_category("a")),
        ),
        (
            "grouped_by_category",
            "Rows grouped by category, two per group: each group's best two fused rows, "
            "groups in the order of their best row, a row without a category in no group.",
            ["R22"],
            null_text,
            _plan("grouped_by_category", limit=2, group_by="category", group_size=2),
        ),
        (
            "null_vectors",
            "Rows without a vector are not vector candidates, in either form.",
            ["R10", "D2"],
            with_null_vectors,
            _plan("null_vectors", limit=10),
        ),
        (
            "metric_l2",
            "Squared Euclidean distance.",
            ["R14"],
            BASE,
            _plan("metric_l2", metric="l2", vector=(1.0, 0.0), limit=8),
        ),
        (
            "metric_dot",
            "Negative dot product, with ties broken by key.",
            ["R4", "R14"],
            BASE,
            _plan("metric_dot", metric="dot", vector=(1.0, 0.0), limit=8),
        ),
        (
            "vector_branch_first",
            "The vector branch listed first, with weights (2.0, 1.0) in that order.",
            ["R3", "R17"],
            BASE,
            _plan("vector_branch_first", vector_first=True, weights=[2.0, 1.0], limit=8),
        ),
        (
            "min_max",
            "Min-max convex combination, equal weights: each branch scaled to [0, 1], a row a "
            "branch missed takes 0 from it.",
            ["R20"],
            two_levels,
            _plan("min_max", method=MinMaxFusion, metric="l2", limit=7),
        ),
        (
            "min_max_alpha",
            "Min-max with alpha 0.75: the vector branch weighs 0.75, the text branch 0.25; the "
            "vector branch listed first.",
            ["R20"],
            two_levels,
            _plan(
                "min_max_alpha",
                method=MinMaxFusion,
                metric="l2",
                alpha=0.75,
                vector_first=True,
                limit=7,
            ),
        ),
        (
            "dbsf",
            "Distribution-based score fusion: mean +- 3 sample standard deviations per branch.",
            ["R20"],
            two_levels,
            _plan("dbsf", method=DistributionBasedScoreFusion, metric="l2", limit=7),
        ),
        (
            "dbsf_one_text_row",
            "Distribution-based score fusion where the text branch finds one row: it scores "
            "0.5 there.",
            ["R20"],
            one_text_row,
            _plan("dbsf_one_text_row", method=DistributionBasedScoreFusion, metric="l2", limit=4),
        ),
        (
            "min_score",
            "Min-max with a minimum fused score of 0.5: lower rows are dropped before the "
            "page, which comes back short.",
            ["R19", "R21"],
            two_levels,
            _plan("min_score", method=MinMaxFusion, metric="l2", min_score=0.5, limit=7),
        ),
    ]
    cases = [_case(*spec) for spec in specs]
    for case in cases:
        for row in case.rows:
            vector = row["embedding"]
            if vector is not None and any(_float32(x) != x for x in vector):
                raise CaseError(f"{case.name}: vector {vector} is not exact in Float32")
    return cases


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])
