"""One plan, every engine: the same semantics on the fixture corpus.

For each engine (``conftest.FACTORIES``):

- each vector branch's top-k equals a NumPy brute-force reference (exact engines), distances
  within float32 rounding, ties in key order;
- each text branch's order is that engine's own scores sorted (descending, ties by key), and a
  top-k is the head of a longer ranking;
- a fused result equals the reference fusion (:func:`hotdata_retrieval.fusion.reference_fusion`)
  of that engine's own branch results, for every built-in method (reciprocal rank, min-max,
  distribution-based), also with an empty branch, a filter that keeps no row, a branch of
  equal scores, a single candidate, and page by page;
- pages are slices of one ranking;
- filters mean the same: equality, membership (an empty list matches nothing), ranges, NULL
  tests, booleans, strings with quotes, keyword-named columns, against SQL's three-valued
  truth evaluated in Python;
- the hostile cases: ties, rows without a vector, an empty table, a filter leaving few rows.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    DistributionBasedScoreFusion,
    InList,
    IsNull,
    MinMaxFusion,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    UnsupportedFeatureError,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.fusion import FusedHit, rank_branch, reference_fusion
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.search import Branch, Fusion
from tests.parity.conftest import EXACT
from tests.parity.corpus import (
    ROWS,
    TIED,
    WITHOUT_VECTOR,
    passing,
    reference_distances,
    vector,
)

QUERY_VECTOR = [0.3, -1.2, 0.8, 0.05, -0.4, 1.1]
QUERY_TEXT = "error upgrade crash"
TOLERANCE = 1e-5
"""Relative and absolute tolerance on a distance: engines compute in float32 (sqlite-vec,
pgvector, DuckDB's FLOAT arrays) or float64."""

METRICS = {
    "local": ("cosine", "l2", "dot"),
    "sqlite": ("cosine", "l2"),
    "duckdb": ("cosine", "l2", "dot"),
    "postgres": ("cosine", "l2", "dot"),
    "lancedb": ("cosine", "l2", "dot"),
    "turbopuffer": ("cosine",),  # a namespace has one metric: the corpus is loaded with cosine
}
"""The metrics each engine's dialect expresses (the others are refused while compiling)."""


def expressed(engine: Any, fusion: Any) -> Any:
    """``fusion`` with each nearest branch under a metric the engine's table holds: an engine
    whose table has one metric (turbopuffer, loaded with cosine) runs the ``l2`` branches
    under cosine; its ``l2`` is checked on a table loaded with it
    (``tests/test_turbopuffer_engine.py``)."""
    import attrs

    metrics = METRICS[engine.parity_name]
    branches = [
        attrs.evolve(branch, metric=metrics[0])
        if isinstance(branch, NearestNeighborSearch) and branch.metric.value not in metrics
        else branch
        for branch in fusion.branches
    ]
    return attrs.evolve(fusion, branches=branches)


def text(query: str = QUERY_TEXT, table: str = "docs") -> Bm25Search:
    return Bm25Search(table=table, column="body", query_text=query)


def nearest(
    query: list[float] | None = None, metric: str = "cosine", table: str = "docs"
) -> NearestNeighborSearch:
    return NearestNeighborSearch(
        table=table, column="embedding", query_vector=query or QUERY_VECTOR, metric=metric
    )


def raw_scores(result: Any) -> list[tuple[Any, float]]:
    """``(key, raw score)`` of a single branch's hits."""
    return [(hit.key, next(iter(hit.branches.values())).raw_score) for hit in result]


def assert_nearest(result: Any, reference: dict[int, float], limit: int, offset: int = 0) -> None:
    """The hits are the reference's ranks ``offset+1 .. offset+limit`` (ties by key), their
    distances the reference's within :data:`TOLERANCE`."""
    expected = sorted(reference, key=lambda key: (reference[key], key))[offset : offset + limit]
    for hit in result:
        assert hit.distance == pytest.approx(reference[hit.key], rel=TOLERANCE, abs=TOLERANCE)
    assert len(result.keys) == len(expected)
    # keys may trade places only where their reference distances agree within tolerance
    for got, want in zip(result.keys, expected):
        assert got == want or reference[got] == pytest.approx(
            reference[want], rel=TOLERANCE, abs=TOLERANCE
        )
    distances = [hit.distance for hit in result]
    assert distances == sorted(distances)


# -- vector branches ----------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
@pytest.mark.parametrize("limit", [1, 10, 58])
def test_nearest_top_k_equals_brute_force(engine: Any, metric: str, limit: int) -> None:
    plan = SearchPlan(source=nearest(metric=metric), limit=limit)
    if metric not in METRICS[engine.parity_name]:
        with pytest.raises(UnsupportedFeatureError, match=f"the {metric} distance"):
            engine.search(plan)
        return
    result = engine.search(plan)
    assert_nearest(result, reference_distances(QUERY_VECTOR, metric), limit)


def test_tied_distances_come_in_key_order(engine: Any) -> None:
    tied = vector(TIED[0])
    assert tied is not None
    result = engine.search(SearchPlan(source=nearest(query=tied), limit=len(TIED)))
    assert result.keys == list(TIED)
    assert [hit.distance for hit in result] == pytest.approx([0.0] * len(TIED), abs=TOLERANCE)


def test_rows_without_a_vector_are_never_candidates(engine: Any) -> None:
    result = engine.search(SearchPlan(source=nearest(), limit=ROWS))
    assert not set(result.keys) & set(WITHOUT_VECTOR)
    assert len(result) == ROWS - len(WITHOUT_VECTOR)
    assert result.underfilled is not None


# -- text branches ------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [QUERY_TEXT, "vector", "login-timeout", "it's disk's"])
def test_text_order_is_the_engines_own_scores_sorted(engine: Any, query: str) -> None:
    result = engine.search(SearchPlan(source=text(query), limit=ROWS))
    pairs = raw_scores(result)
    assert pairs, "the query matches rows on every engine"
    assert pairs == sorted(pairs, key=lambda pair: (-pair[1], pair[0]))
    assert all(score > 0 for _, score in pairs)
    head = engine.search(SearchPlan(source=text(query), limit=5))
    assert raw_scores(head) == pairs[:5]


# -- fusion -------------------------------------------------------------------------------------


FUSED_TOLERANCE = 1e-12
"""Absolute and relative tolerance on a fused score, on every engine: an engine sums a
branch's scores for a mean and a deviation (distribution-based fusion) in an order of its
own. Every engine's raw scores are float64 on the wire (PostgreSQL's BM25 too)."""


def branch_ranking(
    engine: Any, branch: Branch, depth: int, plan_filter: Predicate | None
) -> tuple[list[Any], list[int], list[float]]:
    """The engine's own ranking of one branch, cut to ``depth``, as reference fusion reads it:
    keys best first, their competition ranks and their raw scores."""
    result = engine.search(SearchPlan(source=branch, limit=depth, filter=plan_filter))
    pairs = raw_scores(result)
    keys, ranks = rank_branch(pairs, higher_is_better=branch.higher_is_better)
    raw = dict(pairs)
    return keys, ranks, [float(raw[key]) for key in keys]


def engine_reference(engine: Any, plan: SearchPlan) -> list[FusedHit]:
    """The reference fusion of ``plan``'s fusion over the engine's own branch rankings (the
    plan's filter and depth), every fused candidate, best first."""
    fusion = plan.fusion
    assert fusion is not None
    lists, ranks, scores = [], [], []
    for branch in fusion.branches:
        keys, branch_ranks, raw = branch_ranking(engine, branch, plan.depth, plan.filter)
        lists.append(keys)
        ranks.append(branch_ranks)
        scores.append(raw)
    return reference_fusion(fusion, lists, ranks=ranks, scores=scores)


def assert_is_the_reference_page(
    engine: Any, result: Any, whole: list[FusedHit], plan: SearchPlan
) -> None:
    """The engine's page is the reference's ``offset .. offset + limit`` slice of ``whole``:
    as many hits, each with the reference's score of its key (to :data:`FUSED_TOLERANCE`)
    and its ranks, at each place the
    reference's key or one the reference scores the same there (within the tolerance: rows
    whose scores round differently may trade places)."""
    tolerance = FUSED_TOLERANCE
    page = whole[plan.offset : plan.offset + plan.limit]
    by_key = {hit.key: hit for hit in whole}
    assert len(result.keys) == len(page)
    assert len(set(result.keys)) == len(result.keys)
    for hit, want in zip(result, page):
        reference = by_key[hit.key]
        assert hit.score == pytest.approx(reference.score, rel=tolerance, abs=tolerance)
        assert hit.key == want.key or reference.score == pytest.approx(
            want.score, rel=2 * tolerance, abs=2 * tolerance
        )
        assert tuple(score.rank for score in hit.branches.values()) == reference.ranks


FUSIONS: dict[str, Any] = {
    "rrf": lambda: ReciprocalRankFusion(branches=[text(), nearest()]),
    "weighted": lambda: ReciprocalRankFusion(
        branches=[text(), nearest(metric="l2")], weights=[0.5, 2.0], rank_constant=10
    ),
    "shallow": lambda: ReciprocalRankFusion(branches=[text("vector"), nearest()], depth=16),
    "three": lambda: ReciprocalRankFusion(
        branches=[text(), text("memory disk"), nearest(query=[1.0] * 6)]
    ),
    "min_max": lambda: MinMaxFusion(branches=[text(), nearest()]),
    "min_max alpha": lambda: MinMaxFusion(branches=[text(), nearest(metric="l2")], alpha=0.7),
    "min_max three": lambda: MinMaxFusion(
        branches=[text(), text("memory disk"), nearest(query=[1.0] * 6)], depth=16
    ),
    "dbsf": lambda: DistributionBasedScoreFusion(branches=[text(), nearest()]),
    "dbsf weighted": lambda: DistributionBasedScoreFusion(
        branches=[text(), nearest(metric="l2")], weights=[0.5, 2.0]
    ),
    "dbsf three": lambda: DistributionBasedScoreFusion(
        branches=[text(), text("memory disk"), nearest(query=[1.0] * 6)], depth=16
    ),
}
"""Every built-in fusion method, over two and three branches, each metric the engines share."""


@pytest.mark.parametrize("name", sorted(FUSIONS))
@pytest.mark.parametrize(
    "plan_filter",
    [None, Comparison(column="lang", operator="=", value="en")],
    ids=["unfiltered", "filtered"],
)
def test_fusion_equals_the_reference_fusion_of_the_engines_branches(
    engine: Any, name: str, plan_filter: Predicate | None
) -> None:
    plan = SearchPlan(source=expressed(engine, FUSIONS[name]()), limit=15, filter=plan_filter)
    result = engine.search(plan)
    whole = engine_reference(engine, plan)
    assert len(whole) > 5
    assert_is_the_reference_page(engine, result, whole, plan)


SCORE_NORMALIZED: dict[str, type[Fusion]] = {
    "min_max": MinMaxFusion,
    "dbsf": DistributionBasedScoreFusion,
}

EDGE_CASES: dict[str, tuple[Any, Predicate | None]] = {
    "an empty branch": (lambda: [text("zebra"), nearest()], None),
    "a filter that keeps no row": (
        lambda: [text(), nearest()],
        Comparison(column="lang", operator="=", value="xx"),
    ),
    # TIED rows share one vector: each nearest branch below is all equal distances, three of
    # them (a mean of three equal values may round away from the value)
    "equal distances": (
        lambda: [text(), nearest(metric="l2")],
        InList(column="id", values=list(TIED[:3])),
    ),
    "equal distances, exact match": (
        lambda: [nearest(query=vector(TIED[0])), text()],
        InList(column="id", values=list(TIED)),
    ),
    "a single candidate": (
        lambda: [text(), nearest()],
        InList(column="id", values=[7]),
    ),
    "a single candidate in one branch": (
        lambda: [text("deploy"), nearest()],
        InList(column="id", values=[3, 20, 21]),
    ),
}
"""Branch lists and filters where a branch has no candidate, one, or only equal scores."""


@pytest.mark.parametrize("method", sorted(SCORE_NORMALIZED))
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_score_normalized_fusion_equals_the_reference_at_the_edges(
    engine: Any, method: str, case: str
) -> None:
    branches, plan_filter = EDGE_CASES[case]
    fusion = expressed(engine, SCORE_NORMALIZED[method](branches=branches()))
    whole = engine_reference(engine, SearchPlan(source=fusion, filter=plan_filter))
    for offset in (0, 2, 4):
        plan = SearchPlan(source=fusion, limit=2, offset=offset, filter=plan_filter)
        assert_is_the_reference_page(engine, engine.search(plan), whole, plan)
    everything = engine.search(SearchPlan(source=fusion, limit=60, filter=plan_filter))
    assert everything.keys == [hit.key for hit in whole]


@pytest.mark.parametrize("method", sorted(SCORE_NORMALIZED))
def test_branches_of_equal_scores_give_every_candidate_the_methods_value(
    engine: Any, method: str
) -> None:
    """Six rows alike and three others, one vector between all nine: both branches hold only
    equal scores, so each candidate gets the method's value for them (1 for min-max, 0.5 for
    distribution-based fusion) in each branch, weighted. SQLite averages these six BM25 scores
    (9.5135135135135e-07) to a double one unit in the last place away from them, so a
    deviation taken from that mean would not be 0."""
    body = ["crash error disk"] * 6 + ["billing memory"] * 3
    data = pa.table(
        {
            "id": list(range(1, 10)),
            "body": body,
            "embedding": pa.array([[1.0, 0.5, -0.25, 2.0, 0.0, 1.5]] * 9, pa.list_(pa.float32())),
        }
    )
    engine.load_table("equal_scores", data, key_column="id", text_columns=["body"])
    branches = [
        text("crash", table="equal_scores"),
        nearest(query=QUERY_VECTOR, metric="l2", table="equal_scores"),
    ]
    fusion = expressed(engine, SCORE_NORMALIZED[method](branches=branches))
    plan = SearchPlan(source=fusion, limit=9)
    text_weight, nearest_weight = fusion.branch_weights
    both = text_weight * fusion.equal_scores_value + nearest_weight * fusion.equal_scores_value
    alone = 0.0 + nearest_weight * fusion.equal_scores_value
    result = engine.search(plan)
    assert [(hit.key, hit.score) for hit in result] == [(key, both) for key in range(1, 7)] + [
        (key, alone) for key in range(7, 10)
    ]
    assert_is_the_reference_page(engine, result, engine_reference(engine, plan), plan)


def test_the_edge_cases_are_the_edges_they_name(engine: Any) -> None:
    """Each case's branches are as its name says on every engine: the reference fusion then
    gives what the methods define for them (no candidate, one, equal scores)."""

    def candidates(case: str) -> list[list[float]]:
        branches, plan_filter = EDGE_CASES[case]
        fusion = expressed(engine, ReciprocalRankFusion(branches=branches()))
        return [branch_ranking(engine, branch, 60, plan_filter)[2] for branch in fusion.branches]

    empty_text, nearest_scores = candidates("an empty branch")
    assert not empty_text and nearest_scores
    assert [len(raw) for raw in candidates("a filter that keeps no row")] == [0, 0]
    for case in ("equal distances", "equal distances, exact match"):
        distances = next(raw for raw in candidates(case) if len(set(raw)) == 1)
        assert len(distances) > 1
    assert [len(raw) for raw in candidates("a single candidate")] == [1, 1]
    assert [len(raw) for raw in candidates("a single candidate in one branch")] == [2, 1]


def test_a_filter_applies_inside_every_branch_never_after_fusion(engine: Any) -> None:
    """A filter that excludes each branch's best rows: the survivors are ranked 1, 2, ...
    among the filtered rows (bug-cases B17), not left with the ranks they had before."""
    unfiltered = engine.search(
        SearchPlan(source=ReciprocalRankFusion(branches=[text(), nearest()]))
    )
    excluded = unfiltered.keys[0]
    kept = ~InList(column="id", values=[excluded])
    filtered = engine.search(
        SearchPlan(source=ReciprocalRankFusion(branches=[text(), nearest()]), filter=kept)
    )
    assert excluded not in filtered.keys
    for name in filtered.hits[0].branches:
        ranks = sorted(
            hit.branches[name].rank for hit in filtered if hit.branches[name].rank is not None
        )
        assert ranks[0] == 1


# -- pages ----------------------------------------------------------------------------------------


PAGED = {
    "text": lambda: text(),
    "nearest": lambda: nearest(),
    "tied nearest": lambda: nearest(query=vector(TIED[0])),
    "fusion": lambda: ReciprocalRankFusion(branches=[text(), nearest()]),
    "min_max fusion": lambda: MinMaxFusion(branches=[text(), nearest()]),
    "dbsf fusion": lambda: DistributionBasedScoreFusion(branches=[text(), nearest()]),
}


@pytest.mark.parametrize("name", sorted(PAGED))
def test_pages_are_slices_of_one_ranking(engine: Any, name: str) -> None:
    source = PAGED[name]()
    whole = engine.search(SearchPlan(source=source, limit=12))
    pages: list[Any] = []
    for offset in (0, 3, 6, 9):
        pages.extend(engine.search(SearchPlan(source=source, limit=3, offset=offset)))
    assert [hit.key for hit in pages] == whole.keys


# -- filters ------------------------------------------------------------------------------------

FILTERS: dict[str, Predicate] = {
    "equality": Comparison(column="lang", operator="=", value="en"),
    "string with a quote": Comparison(column="lang", operator="=", value="it's"),
    "inequality": Comparison(column="lang", operator="!=", value="en"),
    "membership": InList(column="lang", values=["en", "fr"]),
    "empty membership": InList(column="lang", values=[]),
    "not in an empty list": ~InList(column="lang", values=[]),
    "not in": ~InList(column="year", values=[2016, 2017]),
    "range": Comparison(column="year", operator=">=", value=2018)
    & Comparison(column="year", operator="<", value=2022),
    "is null": IsNull(column="year"),
    "is not null": ~IsNull(column="lang"),
    "boolean true": Comparison(column="active", operator="=", value=True),
    "boolean false": Comparison(column="active", operator="=", value=False),
    "keyword column": Comparison(column="order", operator=">", value=5),
    "keyword column membership": InList(column="group", values=["g1", "g3"]),
    "negation with nulls": ~(
        Comparison(column="lang", operator="=", value="en")
        | Comparison(column="year", operator="<", value=2017)
    ),
    "few rows": InList(column="id", values=[3, 7, 20]),
    "integer column, fractional number": Comparison(column="order", operator=">", value=4.5),
    "integer column, integral float": Comparison(column="order", operator="=", value=3.0),
    "integer column, mixed membership": InList(column="order", values=[1, 2.5]),
}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_a_filter_keeps_exactly_the_rows_sql_says(engine: Any, name: str) -> None:
    predicate = FILTERS[name]
    expected = passing(predicate) - set(WITHOUT_VECTOR)
    result = engine.search(SearchPlan(source=nearest(), limit=ROWS, filter=predicate))
    assert set(result.keys) == expected
    matching = set(engine.search(SearchPlan(source=text(), limit=ROWS)).keys)
    filtered = engine.search(SearchPlan(source=text(), limit=ROWS, filter=predicate))
    assert set(filtered.keys) == matching & passing(predicate)


def test_keyword_named_columns_can_be_returned(engine: Any) -> None:
    plan = SearchPlan(source=text(), limit=3, columns=["id", "order", "group"])
    for hit in engine.search(plan):
        assert hit.columns["order"] == hit.key % 11
        assert hit.columns["group"] == f"g{hit.key % 4}"


def test_a_selective_filter_fills_the_page_with_every_row_it_keeps(engine: Any) -> None:
    """Filters apply before the bound: 2 of the 3 kept rows have a vector, and both come."""
    plan = SearchPlan(source=nearest(), limit=10, filter=FILTERS["few rows"])
    assert engine.search(plan).keys == sorted(
        [3, 7], key=lambda key: reference_distances(QUERY_VECTOR, "cosine")[key]
    )


# -- an empty table -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        lambda: text(table="empty"),
        lambda: nearest(table="empty"),
        lambda: ReciprocalRankFusion(branches=[text(table="empty"), nearest(table="empty")]),
        lambda: MinMaxFusion(branches=[text(table="empty"), nearest(table="empty")]),
        lambda: DistributionBasedScoreFusion(
            branches=[text(table="empty"), nearest(table="empty")]
        ),
    ],
    ids=["text", "nearest", "fusion", "min_max fusion", "dbsf fusion"],
)
def test_an_empty_table_gives_an_empty_page(engine: Any, source: Any) -> None:
    result = engine.search(SearchPlan(source=source(), limit=5))
    assert result.keys == []
    assert result.underfilled is not None


def test_the_suite_covers_only_exact_engines_for_brute_force(engine: Any) -> None:
    """The brute-force comparison above is exact; an engine with an approximate index would
    be compared by recall instead."""
    assert engine.parity_name in EXACT


# -- filter values of the wrong kind ------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "column", "kind"),
    [
        (Comparison(column="lang", operator="=", value=5), "lang", "text"),
        (InList(column="group", values=["g1", 2]), "group", "text"),
        (Comparison(column="year", operator=">", value="recent"), "year", "integer"),
        (Comparison(column="year", operator=">", value="2015.5"), "year", "integer"),
        (Comparison(column="year", operator=">", value=" 2015"), "year", "integer"),
        (Comparison(column="year", operator="=", value=True), "year", "integer"),
        (Comparison(column="active", operator="=", value=1), "active", "boolean"),
        (Comparison(column="active", operator="=", value="true"), "active", "boolean"),
    ],
)
@pytest.mark.parametrize("shape", ["text", "nearest", "fusion"])
def test_a_filter_value_its_column_cannot_hold_is_refused_alike(
    engine: Any, predicate: Predicate, column: str, kind: str, shape: str
) -> None:
    """Engines disagree on such a comparison (DataFusion fails on the first row it cannot
    convert, PostgreSQL refuses the operator, SQLite matches nothing), so each refuses the plan
    with one message before it runs."""
    source: Any = {
        "text": text(),
        "nearest": nearest(),
        "fusion": ReciprocalRankFusion(branches=[text(), nearest()]),
    }[shape]
    with pytest.raises(PlanError) as caught:
        engine.search(SearchPlan(source=source, filter=predicate, limit=5))
    assert caught.value.field == "filter"
    assert f"column '{column}', which holds {kind} values" in str(caught.value)


@pytest.mark.parametrize(
    ("predicate", "meaning"),
    [
        (
            Comparison(column="year", operator=">", value="2018"),
            Comparison(column="year", operator=">", value=2018),
        ),
        (
            Comparison(column="year", operator=">", value="-2018"),
            Comparison(column="year", operator=">", value=-2018),
        ),
        (
            InList(column="year", values=["2016", 2018]),
            InList(column="year", values=[2016, 2018]),
        ),
    ],
)
def test_text_that_reads_as_the_columns_number_filters_as_the_number(
    engine: Any, predicate: Any, meaning: Any
) -> None:
    expected = passing(meaning) - set(WITHOUT_VECTOR)
    result = engine.search(SearchPlan(source=nearest(), filter=predicate, limit=ROWS))
    assert set(result.keys) == expected


@pytest.mark.parametrize("reserved", ["score", "_distance"])
def test_a_searchable_table_with_a_column_named_like_a_computed_one_is_refused(
    engine: Any, reserved: str
) -> None:
    """Else ``score`` in the statement names the table's column (``SELECT base.*, ... AS
    score``) and a search ranks by the user's values on some engines."""
    data = pa.table({"id": [1, 2], "body": ["crash now", "fine"], reserved: [4.0, 1.0]})
    with pytest.raises(EngineError, match=f"column '{reserved}' is reserved in a searchable"):
        engine.load_table("reserved_names", data, key_column="id", text_columns=["body"])


def test_a_vector_column_compared_with_a_value_is_refused_alike(engine: Any) -> None:
    with pytest.raises(PlanError) as caught:
        engine.search(
            SearchPlan(
                source=text(),
                filter=Comparison(column="embedding", operator="=", value=1),
                limit=5,
            )
        )
    assert caught.value.field == "filter"
    assert str(caught.value) == (
        "filter compares column 'embedding', which holds vector values, with 1; a vector "
        "column can only be tested with IS NULL"
    )


def test_a_vector_table_with_a_column_named_like_a_computed_one_is_refused(engine: Any) -> None:
    data = pa.table(
        {
            "id": [1, 2],
            "score": [0.9, 0.1],
            "vec": pa.array([[1.0, 0.0], [0.0, 1.0]], pa.list_(pa.float32())),
        }
    )
    with pytest.raises(EngineError, match="column 'score' is reserved in a searchable"):
        engine.load_table("reserved_vectors", data, key_column="id", text_columns=[])
