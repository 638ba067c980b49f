"""Score-normalized fusion: min-max convex combination and distribution-based score fusion.

The plan nodes' validation, the reference fusion against values worked out by hand, and the
compiled SQL executed by DataFusion (the local engine's SQL engine) against the reference:

- on random raw scores, ties included, fed to the compiled statement in place of the search
  functions (every window aggregate, CASE, join and the final order run as compiled);
- on the local engine itself, over a random corpus, where BM25 and the distance functions
  produce the raw scores, in both local forms: the CTE statement and the native
  ``hybrid_search`` call.

The optional minimum fused score (``min_score``, every method) is checked the same ways.

Min-max and reciprocal rank fusion are compared exactly: the SQL and the reference do the
same Float64 operations in the same order. Distribution-based score fusion sums for its mean
and standard deviation in an order the engine chooses, so its scores are compared to 1e-12
and its order wherever the reference's scores are more than that apart.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import datafusion
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    compile_plan,
    rank_branch,
    reference_fusion,
    to_sql,
)
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.fusion import (
    FusedHit,
    distribution_based_score_fusion,
    min_max_fusion,
)
from hotdata_retrieval.lint import lint
from hotdata_retrieval.plan.document import plan_from_document, plan_json_schema, plan_to_document
from hotdata_retrieval.plan.search import (
    DistributionBasedScoreFusion,
    Fusion,
    MinMaxFusion,
    fusion_methods,
)

TEXT = Bm25Search(table="docs", column="body", query_text="fox")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
SEMANTIC = VectorSearch(table="docs", column="body", query_text="fox")
TITLE = Bm25Search(table="docs", column="title", query_text="fox")

TOLERANCE = 1e-12


# -- plans ---------------------------------------------------------------------------------------


def test_the_methods_are_registered_for_plan_documents() -> None:
    assert fusion_methods()[:3] == ("rrf", "min_max", "dbsf")


@pytest.mark.parametrize("cls", [MinMaxFusion, DistributionBasedScoreFusion])
def test_alpha_weighs_the_vector_branch_against_the_text_branch(cls: type[Any]) -> None:
    assert cls(branches=[TEXT, NEAREST], alpha=0.25).branch_weights == (0.75, 0.25)
    assert cls(branches=[SEMANTIC, TEXT], alpha=0.25).branch_weights == (0.25, 0.75)
    assert cls(branches=[NEAREST, TEXT], alpha=1).branch_weights == (1.0, 0.0)


def test_min_max_weights_are_convex_and_dbsf_weights_are_multipliers() -> None:
    assert MinMaxFusion(branches=[TEXT, NEAREST]).branch_weights == (0.5, 0.5)
    assert MinMaxFusion(branches=[TEXT, NEAREST, TITLE], weights=[2, 1, 1]).branch_weights == (
        0.5,
        0.25,
        0.25,
    )
    assert DistributionBasedScoreFusion(branches=[TEXT, NEAREST]).branch_weights == (1.0, 1.0)
    assert DistributionBasedScoreFusion(
        branches=[TEXT, NEAREST], weights=[2, 0.5]
    ).branch_weights == (2.0, 0.5)


def test_min_max_weights_whose_sum_overflows_are_still_convex() -> None:
    # Each weight is finite, their sum is not: the convex weights are their ratios.
    assert MinMaxFusion(branches=[TEXT, NEAREST], weights=[1e308, 1e308]).branch_weights == (
        0.5,
        0.5,
    )
    assert MinMaxFusion(
        branches=[TEXT, NEAREST, TITLE], weights=[1.5e308, 1.5e308, 0.75e308]
    ).branch_weights == pytest.approx((0.4, 0.4, 0.2), rel=1e-15)


@pytest.mark.parametrize("cls", [MinMaxFusion, DistributionBasedScoreFusion])
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"alpha": 1.5}, r"^alpha must be between 0 and 1, got 1\.5$"),
        ({"alpha": -0.1}, r"^alpha must be between 0 and 1, got -0\.1$"),
        ({"alpha": float("nan")}, r"^alpha must be finite, got nan$"),
        ({"alpha": True}, r"^alpha must be a number, got True$"),
        ({"alpha": 0.5, "weights": [1, 1]}, r"^give alpha or weights, not both"),
        ({"weights": [1]}, r"^weights holds 1 value for 2 branches; give one weight per branch$"),
        ({"weights": [0, 0]}, r"^at least one weight must be > 0, got \(0, 0\)$"),
        ({"weights": [1, -1]}, r"^weight must be >= 0, got -1$"),
    ],
)
def test_bad_options_are_plan_errors(cls: type[Any], options: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        cls(branches=[TEXT, NEAREST], **options)


@pytest.mark.parametrize("branches", [[TEXT, TITLE], [NEAREST, SEMANTIC], [TEXT, TITLE, NEAREST]])
def test_alpha_needs_one_text_and_one_vector_branch(branches: list[Any]) -> None:
    with pytest.raises(PlanError, match=r"^alpha weighs one text branch against one vector"):
        MinMaxFusion(branches=branches, alpha=0.5)


@pytest.mark.parametrize(
    "fusion",
    [
        MinMaxFusion(branches=[TEXT, NEAREST]),
        MinMaxFusion(branches=[TEXT, NEAREST], alpha=0.7, depth=40),
        MinMaxFusion(branches=[TEXT, TITLE, NEAREST], weights=[1, 0.5, 2]),
        DistributionBasedScoreFusion(branches=[TEXT, NEAREST], alpha=0.3),
        DistributionBasedScoreFusion(branches=[TEXT, NEAREST], weights=[1, 3]),
    ],
)
def test_plan_documents_round_trip_and_validate(fusion: Fusion) -> None:
    plan = SearchPlan(source=fusion)
    document = plan_to_document(plan)
    assert document["fusion"]["method"] == type(fusion).method
    assert plan_from_document(document) == plan
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(plan_json_schema()).validate(document)


def test_a_plan_document_names_the_bad_option() -> None:
    document = plan_to_document(SearchPlan(source=MinMaxFusion(branches=[TEXT, NEAREST])))
    document["fusion"]["alpha"] = 2
    with pytest.raises(PlanError, match=r"^fusion: alpha must be between 0 and 1, got 2$"):
        plan_from_document(document)
    document["fusion"] = {"method": "dbsf", "rank_constant": 60}
    with pytest.raises(PlanError, match=r"unknown key 'rank_constant' in fusion"):
        plan_from_document(document)


def test_describe_names_the_method_and_each_branch_weight() -> None:
    assert MinMaxFusion(branches=[TEXT, NEAREST], alpha=0.75).describe() == (
        "min-max normalized convex combination: weights text 0.25, nearest 0.75"
    )
    assert DistributionBasedScoreFusion(branches=[TEXT, NEAREST]).describe() == (
        "distribution-based score fusion: weights text 1.0, nearest 1.0"
    )


# -- the reference, by hand ----------------------------------------------------------------------


def _scores(hits: Sequence[FusedHit]) -> dict[Any, float]:
    return {hit.key: hit.score for hit in hits}


def test_min_max_by_hand() -> None:
    # Text scores 4, 2, 1 normalize to 1, 1/3, 0; distances 0.2, 0.6 become similarities
    # -0.2, -0.6 and normalize to 1, 0. A row missing from a branch takes 0 from it.
    hits = min_max_fusion(
        [["a", "b", "c"], ["c", "d"]],
        [[4.0, 2.0, 1.0], [0.2, 0.6]],
        higher_is_better=[True, False],
        weights=[0.5, 0.5],
    )
    assert _scores(hits) == {"a": 0.5, "b": 0.5 * (1.0 / 3.0), "c": 0.5, "d": 0.0}
    assert [hit.key for hit in hits] == ["a", "c", "b", "d"]  # a and c tie: key order


def test_min_max_gives_one_to_every_row_of_a_branch_whose_scores_are_equal() -> None:
    hits = min_max_fusion(
        [["a", "b"], ["c"]],
        [[3.0, 3.0], [0.4]],
        higher_is_better=[True, False],
        weights=[0.25, 0.75],
    )
    assert _scores(hits) == {"a": 0.25, "b": 0.25, "c": 0.75}


def test_dbsf_by_hand() -> None:
    # Scores 1, 2, 3: mean 2, sample deviation 1, range [-1, 5]: (s + 1) / 6.
    hits = distribution_based_score_fusion(
        [["c", "b", "a"], ["a"]],
        [[3.0, 2.0, 1.0], [0.9]],
        higher_is_better=[True, False],
        weights=[1.0, 2.0],
    )
    scores = _scores(hits)
    assert scores["c"] == pytest.approx(4 / 6, abs=TOLERANCE)
    assert scores["b"] == pytest.approx(3 / 6, abs=TOLERANCE)
    assert scores["a"] == pytest.approx(2 / 6 + 2 * 0.5, abs=TOLERANCE)  # one row: 0.5


def test_dbsf_uses_the_sample_deviation_and_does_not_clamp() -> None:
    # Ten zeros and a one: mean 1/11, sample variance 1/11; 1 lies past mean + 3 sigma.
    keys = [f"k{i:02d}" for i in range(11)]
    raw = [1.0] + [0.0] * 10
    hits = distribution_based_score_fusion(
        [keys, []], [raw, []], higher_is_better=[True, False], weights=[1.0, 1.0]
    )
    mean, deviation = 1 / 11, math.sqrt(1 / 11)
    low, high = mean - 3 * deviation, mean + 3 * deviation
    scores = _scores(hits)
    assert scores["k00"] == pytest.approx((1 - low) / (high - low), abs=TOLERANCE)
    assert scores["k00"] > 1
    assert scores["k01"] == pytest.approx((0 - low) / (high - low), abs=TOLERANCE)
    population = statistics.pstdev(raw)
    assert (1 - (mean - 3 * population)) / (6 * population) != pytest.approx(scores["k00"])


def test_dbsf_gives_one_half_to_equal_scores() -> None:
    hits = distribution_based_score_fusion(
        [["a", "b"], ["c"]], [[2.5, 2.5], [0.1]], higher_is_better=[True, False], weights=[1, 1]
    )
    assert _scores(hits) == {"a": 0.5, "b": 0.5, "c": 0.5}


def test_the_reference_needs_raw_scores() -> None:
    with pytest.raises(PlanError, match=r"needs each ranked list's raw scores"):
        reference_fusion(MinMaxFusion(branches=[TEXT, NEAREST]), [["a"], ["b"]], ranks=None)


# -- compiled SQL on random raw scores -----------------------------------------------------------

RAW_COLUMN = {"text": "score", "semantic": "_distance", "nearest": "_distance"}
DISTANCE_FUNCTIONS = {"cosine_distance", "l2_distance", "negative_dot_product"}


def _branch(kind: str, name: str) -> Any:
    if kind == "text":
        return Bm25Search(table="docs", column="body", query_text="q", name=name)
    if kind == "semantic":
        return VectorSearch(table="docs", column="body", query_text="q", name=name)
    return NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0], name=name)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(min_value=1, max_value=20))
    ids = [key * 3 for key in draw(st.permutations(range(1, count + 1)))]
    kinds = draw(st.lists(st.sampled_from(["text", "semantic", "nearest"]), min_size=2, max_size=5))
    ties = draw(st.booleans())
    values = (
        st.sampled_from([0.25, 0.5, 2.0])
        if ties
        # -0.0 becomes 0.0: the engine's RANK() orders -0.0 before 0.0, while they are equal
        # scores (no search function returns -0.0).
        else st.floats(-50, 50, allow_nan=False, width=32).map(lambda x: x + 0.0)
    )
    limit = draw(st.integers(min_value=1, max_value=6))
    offset = draw(st.integers(min_value=0, max_value=4))
    # Every candidate fits in the depth: a tie at the depth cut is decided by key in the
    # branch's own ORDER BY, which the swapped-in source does not reproduce.
    depth = max(count, limit + offset)
    raw = []
    for _ in kinds:
        members = draw(st.lists(st.sampled_from(ids), unique=True))
        scores = draw(st.lists(values, min_size=len(members), max_size=len(members)))
        raw.append(dict(zip(members, (float(np.float32(score)) for score in scores))))
    method = draw(st.sampled_from(["rrf", "min_max", "dbsf"]))
    weights = draw(
        st.none()
        | st.lists(
            st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=len(kinds), max_size=len(kinds)
        ).filter(lambda ws: any(w > 0 for w in ws))
    )
    minimum = {"rrf": [0.01, 0.02], "min_max": [0.0, 0.25, 0.5], "dbsf": [0.5, 1.0]}[method]
    return {
        "ids": ids,
        "kinds": kinds,
        "raw": raw,
        "limit": limit,
        "offset": offset,
        "depth": depth,
        "method": method,
        "weights": weights,
        "debug": draw(st.booleans()),
        "min_score": draw(st.none() | st.sampled_from(minimum)),
    }


def _scenario_plan(scenario: dict[str, Any]) -> SearchPlan:
    branches = [_branch(kind, f"b{i}") for i, kind in enumerate(scenario["kinds"])]
    options: dict[str, Any] = {
        "weights": scenario["weights"],
        "depth": scenario["depth"],
        "min_score": scenario.get("min_score"),
    }
    cls = {
        "rrf": ReciprocalRankFusion,
        "min_max": MinMaxFusion,
        "dbsf": DistributionBasedScoreFusion,
    }[scenario["method"]]
    return SearchPlan(
        source=cls(branches=branches, **options),
        columns=["id"],
        limit=scenario["limit"],
        offset=scenario["offset"],
        include_branch_scores=scenario["debug"],
    )


def _swapped_sql(plan: SearchPlan) -> str:
    """The compiled tree with each search function swapped for a table of raw scores."""

    def branch_of(node: exp.Expr) -> str:
        cte = node.find_ancestor(exp.CTE)
        assert cte is not None
        return str(cte.alias).removesuffix("_hits")

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            return exp.Table(this=exp.to_identifier(f"src_{branch_of(node)}"))
        if isinstance(node, exp.Anonymous) and node.name in DISTANCE_FUNCTIONS:
            return exp.column("raw_distance")
        if isinstance(node, exp.Table) and node.name == "docs":
            if node.alias:
                return exp.Table(this=exp.to_identifier("docs"), alias=node.args["alias"])
            return exp.Table(this=exp.to_identifier(f"src_{branch_of(node)}"))
        return node

    return str(compile_plan(plan).transform(swap).sql(dialect="hotdata"))


def _run_swapped(scenario: dict[str, Any], plan: SearchPlan) -> list[dict[str, Any]]:
    context = datafusion.SessionContext()
    context.from_arrow(pa.table({"id": scenario["ids"]}), "docs")
    for name, kind, raw in zip(plan.branch_names, scenario["kinds"], scenario["raw"]):
        column = "raw_distance" if kind == "nearest" else RAW_COLUMN[kind]
        context.from_arrow(
            pa.table(
                {
                    "id": pa.array(list(raw), pa.int64()),
                    column: pa.array(list(raw.values()), pa.float32()),
                }
            ),
            f"src_{name}",
        )
    return list(context.sql(_swapped_sql(plan)).to_arrow_table().to_pylist())


def _scenario_reference(scenario: dict[str, Any], plan: SearchPlan) -> list[FusedHit]:
    lists, ranks, scores = [], [], []
    for kind, raw in zip(scenario["kinds"], scenario["raw"]):
        keys, branch_ranks = rank_branch(
            raw.items(), higher_is_better=kind == "text", depth=plan.depth
        )
        lists.append(keys)
        ranks.append(branch_ranks)
        scores.append([raw[key] for key in keys])
    fusion = plan.fusion
    assert fusion is not None
    return reference_fusion(fusion, lists, ranks=ranks, scores=scores)


def assert_matches_reference(
    rows: Sequence[dict[str, Any]],
    whole: Sequence[FusedHit],
    plan: SearchPlan,
    *,
    exact: bool,
) -> None:
    """The SQL page equals the reference's page: exactly (keys, scores, ranks), or, where
    the engine sums in its own order, each row's score to :data:`TOLERANCE` and the row at
    each position one the reference puts within that tolerance of the same place."""
    fusion = plan.fusion
    assert fusion is not None
    if fusion.min_score is not None and not exact:
        # Rows within the tolerance of the minimum may fall either side of it.
        assert all(row["score"] >= fusion.min_score for row in rows)
        if any(abs(hit.score - fusion.min_score) <= TOLERANCE for hit in whole):
            return
    page = list(whole[plan.offset : plan.offset + plan.limit])
    rank_columns = [f"{name}_rank" for name in plan.branch_names]
    if exact:
        assert [(row["id"], row["score"]) for row in rows] == [(hit.key, hit.score) for hit in page]
    else:
        assert len(rows) == len(page)
        by_key = {hit.key: hit for hit in whole}
        for row, hit in zip(rows, page):
            assert row["score"] == pytest.approx(by_key[row["id"]].score, rel=0, abs=TOLERANCE)
            assert by_key[row["id"]].score == pytest.approx(hit.score, rel=0, abs=2 * TOLERANCE)
        assert len({row["id"] for row in rows}) == len(rows)
    if plan.include_branch_scores:
        by_key = {hit.key: hit for hit in whole}
        assert [tuple(row[name] for name in rank_columns) for row in rows] == [
            by_key[row["id"]].ranks for row in rows
        ]


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_compiled_sql_equals_the_reference_on_random_scores(scenario: dict[str, Any]) -> None:
    plan = _scenario_plan(scenario)
    rows = _run_swapped(scenario, plan)
    whole = _scenario_reference(scenario, plan)
    assert_matches_reference(rows, whole, plan, exact=scenario["method"] != "dbsf")


def test_a_branch_of_equal_scores_and_a_branch_of_one_row_are_defined_in_sql() -> None:
    for method, expected in (("min_max", {3: 0.5, 6: 0.5, 9: 0.5}), ("dbsf", {3: 1.0, 6: 0.5})):
        scenario = {
            "ids": [3, 6, 9],
            "kinds": ["text", "nearest"],
            "raw": [{3: 2.0, 6: 2.0} if method == "dbsf" else {3: 2.0, 6: 2.0, 9: 2.0}, {3: 0.5}],
            "limit": 3,
            "offset": 0,
            "depth": 3,
            "method": method,
            "weights": None,
            "debug": False,
        }
        plan = _scenario_plan(scenario)
        rows = _run_swapped(scenario, plan)
        if method == "min_max":
            # Text: all equal, 1 each, weight 0.5; nearest: one row, 1, weight 0.5.
            expected = {3: 1.0, 6: 0.5, 9: 0.5}
        assert {row["id"]: row["score"] for row in rows} == expected


# -- the local engine, over a random corpus ------------------------------------------------------

WORDS = ("fox", "dog", "cat", "owl", "bee")


def _corpus(rng: random.Random, rows: int) -> pa.Table:
    """Short texts over five words (BM25 ties are common) and small integral 2-d vectors
    (distance ties are common); keys follow row order, so a tie at a depth cut falls the same
    way in the engine (rowid) and in the reference (key)."""
    return pa.table(
        {
            "id": list(range(rows)),
            "body": [" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(rows)],
            "title": [" ".join(rng.choices(WORDS, k=rng.randint(1, 2))) for _ in range(rows)],
            "category": [rng.choice("ab") for _ in range(rows)],
            "embedding": pa.array(
                [[float(rng.randint(-3, 3)), float(rng.randint(1, 3))] for _ in range(rows)],
                pa.list_(pa.float32()),
            ),
        }
    )


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        local.load_table("docs", _corpus(random.Random(7), 90), text_columns=["body", "title"])
        yield local


def engine_reference(engine: LocalEngine, plan: SearchPlan) -> list[FusedHit]:
    """The reference fusion of the plan's branches, each run alone on the engine, ranked
    and cut to the depth as the fused statement does: every fused candidate, best first."""
    fusion = plan.fusion
    assert fusion is not None
    lists, ranks, scores = [], [], []
    for branch in fusion.branches:
        alone = SearchPlan(source=branch, columns=["id"], limit=1000, filter=plan.filter)
        rows = engine.sql(to_sql(alone)).to_pylist()
        candidates = [
            (row["id"], row[branch.raw_score_column])
            for row in rows
            if row[branch.raw_score_column] is not None
        ]
        keys, branch_ranks = rank_branch(
            candidates, higher_is_better=branch.higher_is_better, depth=plan.depth
        )
        raw_of = dict(candidates)
        lists.append(keys)
        ranks.append(branch_ranks)
        scores.append([float(raw_of[key]) for key in keys])
    return reference_fusion(fusion, lists, ranks=ranks, scores=scores)


@st.composite
def engine_plans(draw: st.DrawFn, methods: Sequence[str] = ("min_max", "dbsf")) -> SearchPlan:
    text = Bm25Search(
        table="docs",
        column=draw(st.sampled_from(["body", "title"])),
        query_text=" ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))),
    )
    nearest = NearestNeighborSearch(
        table="docs",
        column="embedding",
        query_vector=[float(draw(st.integers(-2, 2))), 1.0],
        metric=draw(st.sampled_from(["cosine", "l2", "dot"])),
    )
    branches = draw(st.permutations([text, nearest]))
    method = draw(st.sampled_from(methods))
    depth = draw(st.sampled_from([90, 120]))  # every candidate: no tie at the depth cut
    limit = draw(st.integers(min_value=1, max_value=15))
    options: dict[str, Any] = {}
    choice = draw(st.sampled_from(["default", "alpha", "weights"]))
    if choice == "alpha":
        options["alpha"] = draw(st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0]))
    elif choice == "weights":
        options["weights"] = draw(
            st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=2, max_size=2).filter(any)
        )
    cls = MinMaxFusion if method == "min_max" else DistributionBasedScoreFusion
    options["min_score"] = draw(st.none() | st.sampled_from([0.2, 0.5, 0.9]))
    return SearchPlan(
        source=cls(branches=branches, depth=depth, **options),
        columns=["id"],
        limit=limit,
        offset=draw(st.integers(min_value=0, max_value=10)),
        filter=draw(st.none() | st.just(Comparison(column="category", operator="=", value="a"))),
        include_branch_scores=draw(st.booleans()),
    )


@settings(max_examples=60, deadline=None)
@given(plan=engine_plans())
def test_both_local_forms_equal_the_reference(engine: LocalEngine, plan: SearchPlan) -> None:
    whole = engine_reference(engine, plan)
    exact = isinstance(plan.fusion, MinMaxFusion)
    cte = to_sql(plan)
    native = to_sql(plan, "hotdata-native")
    assert "WITH" in cte and "hybrid_search(" not in cte
    assert "FROM hybrid_search(" in native and "WITH" not in native
    assert_matches_reference(engine.sql(cte).to_pylist(), whole, plan, exact=exact)
    assert_matches_reference(engine.sql(native).to_pylist(), whole, plan, exact=exact)


def test_search_returns_the_fused_scores(engine: LocalEngine) -> None:
    plan = SearchPlan(source=MinMaxFusion(branches=[TEXT, NEAREST], alpha=0.6, depth=90), limit=5)
    result = engine.search(plan)
    whole = engine_reference(engine, plan)
    assert [(hit.key, hit.score) for hit in result] == [(hit.key, hit.score) for hit in whole[:5]]


@pytest.mark.parametrize("cls", [MinMaxFusion, DistributionBasedScoreFusion])
@pytest.mark.parametrize("branches", [[TEXT, NEAREST], [TEXT, SEMANTIC, NEAREST, TITLE, TEXT]])
def test_the_linter_finds_nothing_to_fault(cls: type[Any], branches: list[Any]) -> None:
    branches = [attrs.evolve(branch, name=f"b{index}") for index, branch in enumerate(branches)]
    assert lint(to_sql(SearchPlan(source=cls(branches=branches)))) == []


# -- the minimum fused score ---------------------------------------------------------------------


@pytest.mark.parametrize("cls", [ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion])
def test_min_score_is_a_finite_number(cls: type[Any]) -> None:
    assert cls(branches=[TEXT, NEAREST], min_score=0.5).min_score == 0.5
    assert cls(branches=[TEXT, NEAREST], min_score=-0.0).min_score == 0
    for bad, message in (
        ("0.5", r"^min_score must be a number, got '0\.5'$"),
        (float("inf"), r"^min_score must be finite, got inf$"),
        (False, r"^min_score must be a number, got False$"),
    ):
        with pytest.raises(PlanError, match=message):
            cls(branches=[TEXT, NEAREST], min_score=bad)


def test_min_score_drops_rows_before_the_page_in_the_reference() -> None:
    hits = min_max_fusion(
        [["a", "b", "c", "d"], []],
        [[4.0, 3.0, 2.0, 0.0], []],
        higher_is_better=[True, False],
        weights=[1.0, 1.0],
        min_score=0.5,
        offset=1,
    )
    assert [(hit.key, hit.score) for hit in hits] == [("b", 0.75), ("c", 0.5)]


def test_min_score_is_a_where_after_fusion_on_both_forms(engine: LocalEngine) -> None:
    fusion = MinMaxFusion(branches=[TEXT, NEAREST], depth=90, min_score=0.6)
    plan = SearchPlan(source=fusion, limit=50, columns=["id"])
    assert "WHERE\n  fused.score >= 0.6\nORDER BY" in to_sql(plan)
    assert "'min_score',\n  0.6\n)" in to_sql(plan, "hotdata-native")
    whole = engine_reference(engine, plan)
    assert whole and all(hit.score >= 0.6 for hit in whole)
    assert len(whole) < len(
        engine_reference(engine, attrs.evolve(plan, source=attrs.evolve(fusion, min_score=None)))
    )
    for sql in (to_sql(plan), to_sql(plan, "hotdata-native")):
        assert_matches_reference(engine.sql(sql).to_pylist(), whole, plan, exact=True)
    result = engine.search(plan)
    assert result.underfilled == (
        f"{len(whole)} rows for a limit of 50: only {len(whole)} fused rows score at least "
        "the minimum 0.6"
    )


# -- the native call's own arguments -------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["fusion", "linear"], r"fusion must be one of 'rrf', 'min_max', 'dbsf', got 'linear'"),
        (["fusion", "dbsf", "rank_constant", 60], r"rank_constant applies to 'rrf' only"),
        (["min_score", "high"], r"min_score must be a finite number, got 'high'"),
        (["min_score", float("nan")], r"min_score must be a finite number, got nan"),
    ],
)
def test_the_native_call_checks_fusion_and_min_score(options: list[Any], message: str) -> None:
    from hotdata_retrieval.engines.local.hybrid import HybridSearchError, parse_call

    with pytest.raises(HybridSearchError, match=message):
        parse_call(["docs", "body", "embedding", "q", [1.0, 0.0], 3, *options])


def test_the_native_call_takes_the_plan_weights_as_multipliers() -> None:
    from hotdata_retrieval.engines.local.hybrid import parse_call

    plan = SearchPlan(source=MinMaxFusion(branches=[NEAREST, TEXT], weights=[3, 1]))
    sql = to_sql(plan, "hotdata-native")
    assert "'fusion',\n  'min_max',\n  'text_weight',\n  0.25,\n  'vector_weight',\n  0.75" in sql
    assert "rank_constant" not in sql
    call = parse_call(
        ["docs", "body", "embedding", "q", [1.0], 1, "fusion", "dbsf", "min_score", 2]
    )
    assert (call.fusion, call.min_score, call.text_weight) == ("dbsf", 2.0, 1.0)


# -- multi-field plans ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_vector_engine() -> Iterator[LocalEngine]:
    rng = random.Random(19)
    corpus = _corpus(rng, 60)
    second = pa.array(
        [[float(rng.randint(-2, 2)), float(rng.randint(1, 3)), 1.0] for _ in range(60)],
        pa.list_(pa.float32()),
    )
    with LocalEngine() as local:
        local.load_table(
            "docs", corpus.append_column("title_embedding", second), text_columns=["body", "title"]
        )
        yield local


@pytest.mark.parametrize("cls", [ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion])
def test_title_and_body_with_their_own_weights_plus_a_vector_branch(
    two_vector_engine: LocalEngine, cls: type[Any]
) -> None:
    branches = [
        Bm25Search(table="docs", column="title", query_text="fox owl", name="title"),
        Bm25Search(table="docs", column="body", query_text="fox owl", name="body"),
        NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 2.0]),
    ]
    plan = SearchPlan(
        source=cls(branches=branches, weights=[2, 1, 3], depth=60),
        columns=["id"],
        limit=20,
        include_branch_scores=True,
    )
    sql = to_sql(plan)
    assert "bm25_search('default.public.docs', 'title'" in sql
    assert "bm25_search('default.public.docs', 'body'" in sql
    rows = two_vector_engine.sql(sql).to_pylist()
    whole = engine_reference(two_vector_engine, plan)
    assert_matches_reference(rows, whole, plan, exact=cls is not DistributionBasedScoreFusion)
    assert {"title_rank", "body_rank", "nearest_rank"} <= set(rows[0])


@pytest.mark.parametrize("cls", [ReciprocalRankFusion, MinMaxFusion, DistributionBasedScoreFusion])
def test_two_vector_columns_each_with_its_own_query(
    two_vector_engine: LocalEngine, cls: type[Any]
) -> None:
    branches = [
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=[1.0, 2.0], name="body_vector"
        ),
        NearestNeighborSearch(
            table="docs",
            column="title_embedding",
            query_vector=[0.0, 1.0, 1.0],
            metric="l2",
            name="title_vector",
        ),
    ]
    plan = SearchPlan(source=cls(branches=branches, depth=60), columns=["id"], limit=15)
    rows = two_vector_engine.sql(to_sql(plan)).to_pylist()
    whole = engine_reference(two_vector_engine, plan)
    assert_matches_reference(rows, whole, plan, exact=cls is not DistributionBasedScoreFusion)
    assert "embedding" not in rows[0] and "title_embedding" not in rows[0]


# -- SQLite's sample deviation -------------------------------------------------------------------


def _sqlite_deviations(values: Sequence[float | None], keep: Sequence[bool]) -> list[Any]:
    """``SELECT STDDEV_SAMP(x) OVER () FROM t WHERE keep``, as the SQLite dialect writes it,
    run by the engine's SQLite (``sqlean.py``) over a table of ``values``."""
    import sqlean

    from hotdata_retrieval.compile.sqlite import SqliteDialect

    x = exp.column("x")
    select = exp.Select(
        expressions=[exp.Window(this=exp.StddevSamp(this=x))],
        from_=exp.From(this=exp.Table(this=exp.to_identifier("t"))),
        where=exp.Where(this=exp.column("keep")),
    )
    connection = sqlean.connect(":memory:")
    connection.execute("CREATE TABLE t (x REAL, keep INTEGER)")
    connection.executemany("INSERT INTO t VALUES (?, ?)", list(zip(values, keep)))
    statement = SqliteDialect().generate(select)
    assert "STDDEV" not in statement.upper()
    return [row[0] for row in connection.execute(statement).fetchall()]


@settings(max_examples=200, deadline=None)
@given(
    offset=st.sampled_from([0.0, 0.3, -7.5, 1e6, 1e9, -1e12]),
    spread=st.lists(
        # Float32 values, as raw scores are: Float32 distances (no magnitude but 0 below
        # 1.4e-45) and BM25 scores (FTS5's bm25 floors idf at 1e-6), so no square underflows
        # float64 (1.5e-208 did: its square is 0, the deviation too).
        st.none() | st.floats(-2, 2, allow_nan=False, width=32) | st.sampled_from([0.1, 0.1, 0.1]),
        max_size=12,
    ),
    keep=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_sqlite_writes_the_sample_deviation_from_window_sums(
    offset: float, spread: list[float | None], keep: list[bool]
) -> None:
    """SQLite has no ``STDDEV_SAMP``; its form equals :func:`statistics.stdev` (exact) over
    the rows the ``WHERE`` keeps, NULLs skipped: to 1e-12 where the mean is up to 1e12
    times the spread (``SUM(x * x) - n * mean²`` keeps no digit there), exactly 0 for equal
    values (three 0.1s average to 0.10000000000000002), NULL for fewer than two."""
    values = [None if value is None else offset + value for value in spread]
    kept = [value for value, chosen in zip(values, keep) if chosen]
    deviations = _sqlite_deviations(values, keep[: len(values)])
    assert len(deviations) == len(kept)
    numbers = [value for value in kept if value is not None]
    if len(numbers) < 2:
        assert all(deviation is None for deviation in deviations)
        return
    expected = statistics.stdev(numbers)
    assert len(set(deviations)) == 1
    if expected == 0:
        assert deviations[0] == 0
    else:
        assert deviations[0] == pytest.approx(expected, rel=TOLERANCE, abs=0)


def test_sqlite_deviation_of_three_equal_scores_is_zero() -> None:
    assert _sqlite_deviations([0.1, 0.1, 0.1, None], [True] * 4) == [0.0] * 4
    assert _sqlite_deviations([0.1, 5.0], [True, False]) == [None]


@pytest.mark.parametrize(
    "window",
    [
        exp.Window(this=exp.StddevSamp(this=exp.column("x")), partition_by=[exp.column("g")]),
        exp.Window(
            this=exp.StddevSamp(this=exp.column("x")),
            order=exp.Order(expressions=[exp.Ordered(this=exp.column("x"))]),
        ),
    ],
    ids=["partitioned", "ordered"],
)
def test_sqlite_refuses_a_deviation_it_cannot_write(window: exp.Window) -> None:
    from hotdata_retrieval.compile.sqlite import SqliteDialect
    from hotdata_retrieval.errors import UnsupportedOnDialectError

    select = exp.Select(
        expressions=[window], from_=exp.From(this=exp.Table(this=exp.to_identifier("t")))
    )
    with pytest.raises(UnsupportedOnDialectError, match=r"^unsupported on sqlite: a sample"):
        SqliteDialect().generate(select)
