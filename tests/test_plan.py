"""Plan construction: defaults, derived values, and every invalid input's typed error."""

from __future__ import annotations

import math
from typing import Any

import pytest

from hotdata_retrieval import (
    And,
    Bm25Search,
    Comparison,
    ComparisonOperator,
    DistanceMetric,
    InList,
    IsNull,
    NearestNeighborSearch,
    Not,
    Or,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TableName,
    TableUnion,
    VectorSearch,
)
from hotdata_retrieval.plan.search import DEFAULT_DEPTH, branch_names


def text(**overrides: Any) -> Bm25Search:
    return Bm25Search(**{"table": "docs", "column": "body", "query_text": "q", **overrides})


def nearest(**overrides: Any) -> NearestNeighborSearch:
    values = {"table": "docs", "column": "embedding", "query_vector": [0.5, 0.25], **overrides}
    return NearestNeighborSearch(**values)


def fusion(**overrides: Any) -> ReciprocalRankFusion:
    return ReciprocalRankFusion(**{"branches": [text(), nearest()], **overrides})


def raises(field: str, call: Any) -> PlanError:
    with pytest.raises(PlanError) as caught:
        call()
    assert caught.value.field == field, str(caught.value)
    return caught.value


# -- defaults and derived values -------------------------------------------------------------


def test_branch_table_names_are_completed_to_three_parts() -> None:
    assert text(table="sales.docs").table == TableName(
        catalog="default", schema="sales", name="docs"
    )


def test_the_default_depth_is_one_constant_for_every_page() -> None:
    assert DEFAULT_DEPTH == 200
    for limit, offset in [(3, 0), (10, 0), (10, 90), (50, 50), (100, 100)]:
        assert SearchPlan(source=fusion(), limit=limit, offset=offset).depth == DEFAULT_DEPTH


def test_a_page_past_the_default_depth_is_a_plan_error_that_says_what_to_do() -> None:
    error = raises("depth", lambda: SearchPlan(source=fusion(), limit=5, offset=200))
    assert "limit + offset = 205 reaches past the default depth 200" in str(error)
    assert "Pass depth >= 205" in str(error)
    assert SearchPlan(source=fusion(depth=205), limit=5, offset=200).depth == 205


@pytest.mark.parametrize("group_by", [None, "id"])
def test_a_page_past_64_bits_names_the_limit_not_a_depth_no_search_could_take(
    group_by: str | None,
) -> None:
    # limit + offset past a signed 64-bit integer: no depth holds it, so the advice is to
    # lower the page, not to pass a depth that would itself be refused.
    error = raises(
        "limit",
        lambda: SearchPlan(source=fusion(), limit=2**63 - 1, offset=1, group_by=group_by),
    )
    assert "does not fit in 64 bits (at most 9223372036854775807)" in str(error)
    assert "depth >=" not in str(error)


def test_explicit_depth_is_used() -> None:
    assert SearchPlan(source=fusion(depth=7), limit=5, offset=2).depth == 7


def test_single_branch_depth_is_the_page_end() -> None:
    assert SearchPlan(source=text(), limit=5, offset=3).depth == 8


def test_default_weights_are_one_per_branch() -> None:
    assert fusion().weights == (1, 1)


def test_default_projection_is_key_then_searched_text_column() -> None:
    assert SearchPlan(source=fusion()).projection == ("id", "body")
    assert SearchPlan(source=nearest()).projection == ("id",)
    assert SearchPlan(source=text(column="id")).projection == ("id",)


def test_result_columns() -> None:
    assert SearchPlan(source=text()).result_columns == ("score",)
    assert SearchPlan(source=nearest()).result_columns == ("_distance",)
    plan = SearchPlan(source=fusion(), include_branch_scores=True)
    assert plan.result_columns == (
        "score",
        "text_rank",
        "text_score",
        "nearest_rank",
        "nearest_distance",
    )


def test_branch_names_number_repeated_kinds_and_skip_taken_names() -> None:
    source = ReciprocalRankFusion(
        branches=[text(), text(column="title"), text(column="tags", name="text_2")]
    )
    assert branch_names(source) == ("text", "text_3", "text_2")


@pytest.mark.parametrize(
    ("alias", "metric"),
    [
        ("cosine", DistanceMetric.COSINE),
        ("COSINE", DistanceMetric.COSINE),
        ("l2", DistanceMetric.L2),
        ("euclidean", DistanceMetric.L2),
        ("dot", DistanceMetric.DOT),
        ("ip", DistanceMetric.DOT),
        ("inner_product", DistanceMetric.DOT),
        (DistanceMetric.L2, DistanceMetric.L2),
    ],
)
def test_metric_aliases(alias: Any, metric: DistanceMetric) -> None:
    assert nearest(metric=alias).metric is metric


def test_query_vector_accepts_any_sequence_of_numbers_and_keeps_full_precision() -> None:
    assert nearest(query_vector=(1, 2.5)).query_vector == (1.0, 2.5)
    assert nearest(query_vector=[0.1]).query_vector == (0.1,)


def test_numpy_vectors_are_accepted() -> None:
    numpy = pytest.importorskip("numpy")
    vector = numpy.array([0.1, 0.2], dtype=numpy.float32)
    assert nearest(query_vector=vector).query_vector == tuple(float(x) for x in vector)


def test_predicates_compose_with_operators() -> None:
    a = Comparison(column="a", operator="=", value=1)
    b = IsNull(column="b")
    assert (a & b) == And(operands=(a, b))
    assert (a | b) == Or(operands=(a, b))
    assert ~a == Not(operand=a)


def test_comparison_operator_spellings() -> None:
    assert Comparison(column="a", operator="<>", value=1).operator is ComparisonOperator.NOT_EQUAL
    assert Comparison(column="a", operator="==", value=1).operator is ComparisonOperator.EQUAL


def test_plans_are_frozen() -> None:
    plan = SearchPlan(source=text())
    with pytest.raises(AttributeError):
        plan.limit = 3  # type: ignore[misc]


# -- invalid inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ([], "must not be empty"),
        ([0.1, math.nan], "position 2 of 2 is nan"),
        ([math.inf], "position 1 of 1 is inf"),
        ([-math.inf, 1.0], "position 1 of 2 is -inf"),
        ("0.1,0.2", "sequence of numbers"),
        (None, "sequence of numbers"),
        ([0.1, "x"], "position 2 of 2 is 'x', a text"),
        ([[0.1]], "sequence of numbers"),
    ],
)
def test_bad_query_vectors(vector: Any, message: str) -> None:
    error = raises("query_vector", lambda: nearest(query_vector=vector))
    assert message in str(error)


@pytest.mark.parametrize("value", ["", "   ", "a\x00b", None, 5])
def test_bad_query_text(value: Any) -> None:
    raises("query_text", lambda: text(query_text=value))
    raises("query_text", lambda: VectorSearch(table="docs", column="body", query_text=value))


def test_query_text_keeps_quotes_and_comment_markers() -> None:
    tricky = 'it\'s -- ; DROP TABLE x; \\ "q" \n ünï'
    assert text(query_text=tricky).query_text == tricky


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "10", None])
def test_bad_limit(limit: Any) -> None:
    raises("limit", lambda: SearchPlan(source=text(), limit=limit))


@pytest.mark.parametrize("offset", [-1, 0.5, False])
def test_bad_offset(offset: Any) -> None:
    raises("offset", lambda: SearchPlan(source=text(), offset=offset))


def test_limit_beyond_64_bits() -> None:
    raises("limit", lambda: SearchPlan(source=text(), limit=2**63))


@pytest.mark.parametrize("metric", ["jaccard", "", None, 3, "hamming"])
def test_unknown_metric(metric: Any) -> None:
    error = raises("metric", lambda: nearest(metric=metric))
    assert "cosine" in str(error)


@pytest.mark.parametrize(
    ("weights", "field"),
    [
        ([1.0], "weights"),
        ([1.0, 1.0, 1.0], "weights"),
        ([1.0, -0.5], "weight"),
        ([1.0, math.nan], "weight"),
        ([math.inf, 1.0], "weight"),
        ([0, 0], "weights"),
        (["1", 1], "weight"),
        ([True, 1], "weight"),
        (1.0, "weights"),
    ],
)
def test_bad_weights(weights: Any, field: str) -> None:
    raises(field, lambda: fusion(weights=weights))


@pytest.mark.parametrize("rank_constant", [0, -1, -0.5, math.nan, math.inf, "60", None])
def test_bad_rank_constant(rank_constant: Any) -> None:
    raises("rank_constant", lambda: fusion(rank_constant=rank_constant))


@pytest.mark.parametrize("depth", [0, -3, 2.5])
def test_bad_depth(depth: Any) -> None:
    raises("depth", lambda: fusion(depth=depth))


def test_depth_below_the_page_end_is_rejected() -> None:
    error = raises("depth", lambda: SearchPlan(source=fusion(depth=10), limit=8, offset=3))
    assert "11" in str(error)


def test_fusion_needs_two_branches() -> None:
    raises("branches", lambda: ReciprocalRankFusion(branches=[text()]))
    raises("branches", lambda: ReciprocalRankFusion(branches=[]))


def test_fused_branches_over_different_tables_read_rows_from_all_of_them() -> None:
    plan = SearchPlan(source=fusion(branches=[text(), nearest(table="other")]))
    assert [str(table) for table in plan.tables] == ["default.public.docs", "default.public.other"]
    assert plan.row_source == TableUnion(["docs", "other"])
    assert plan.single_table is None
    named = SearchPlan(source=fusion(branches=[text(), nearest(table="other")]), rows_from="docs")
    assert named.row_source == TableName.parse("docs")


def test_fusion_rejects_non_branches() -> None:
    raises("branch", lambda: fusion(branches=[text(), "nearest"]))


def test_branch_names_must_be_unique_and_not_reserved() -> None:
    raises("name", lambda: fusion(branches=[text(name="a"), nearest(name="a")]))
    raises("name", lambda: text(name="fused"))
    raises("name", lambda: text(name="Bad Name"))
    raises("name", lambda: text(name="9lives"))


@pytest.mark.parametrize("column", ["", 'a"b', "a\x00", "new\nline", 7])
def test_bad_column_names(column: Any) -> None:
    with pytest.raises(PlanError):
        text(column=column)
    with pytest.raises(PlanError):
        SearchPlan(source=text(), columns=["id", column])


def test_vector_column_is_never_projected() -> None:
    error = raises("columns", lambda: SearchPlan(source=fusion(), columns=["id", "embedding"]))
    assert "fast path" in str(error)


@pytest.mark.parametrize("column", ["score", "_distance"])
def test_result_column_collisions_are_rejected(column: str) -> None:
    source = text() if column == "score" else nearest()
    raises("columns", lambda: SearchPlan(source=source, columns=["id", column]))


def test_debug_column_collisions_are_rejected() -> None:
    raises(
        "columns",
        lambda: SearchPlan(
            source=fusion(), columns=["id", "text_rank"], include_branch_scores=True
        ),
    )
    assert SearchPlan(source=fusion(), columns=["id", "text_rank"]).projection == (
        "id",
        "text_rank",
    )


def test_projection_rules() -> None:
    raises("columns", lambda: SearchPlan(source=text(), columns=[]))
    raises("columns", lambda: SearchPlan(source=text(), columns=["id", "ID"]))
    raises("columns", lambda: SearchPlan(source=text(), columns="id"))


@pytest.mark.parametrize("key", ["score", "_distance", "branch_rank"])
def test_key_column_cannot_be_a_computed_column(key: str) -> None:
    raises("key_column", lambda: SearchPlan(source=fusion(), key_column=key))


def test_filter_on_the_vector_column_is_rejected() -> None:
    raises("filter", lambda: SearchPlan(source=nearest(), filter=IsNull(column="embedding")))


def test_source_must_be_a_branch_or_fusion() -> None:
    raises("branch", lambda: SearchPlan(source="docs"))


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Comparison(column="a", operator="~", value=1), "operator"),
        (lambda: Comparison(column="a", operator="=", value=None), "filter value"),
        (lambda: Comparison(column="a", operator="=", value=math.nan), "filter value"),
        (lambda: Comparison(column="a", operator="=", value="x\x00"), "filter value"),
        (lambda: Comparison(column="a", operator="=", value=[1]), "filter value"),
        (lambda: Comparison(column="a", operator="=", value=2**64), "filter value"),
        (lambda: InList(column="a", values="abc"), "values"),
        (lambda: InList(column="a", values=[1, None]), "IN list value"),
        (lambda: And(operands=[IsNull(column="a")]), "operands"),
        (lambda: Or(operands=[IsNull(column="a"), "b = 1"]), "filter"),
        (lambda: Not(operand="a"), "filter"),
        (lambda: SearchPlan(source=text(), filter="a = 1"), "filter"),
    ],
)
def test_bad_filters(build: Any, field: str) -> None:
    raises(field, build)


def test_errors_carry_the_bad_value() -> None:
    error = raises("limit", lambda: SearchPlan(source=text(), limit=-4))
    assert error.value == -4
    assert "-4" in str(error)


# -- numbers reach the SQL only as plain Python numbers --------------------------------------


class SneakyInt(int):
    def __repr__(self) -> str:
        return "1; DROP TABLE docs --"

    __str__ = __repr__


class SneakyFloat(float):
    def __repr__(self) -> str:
        return "1.0; DROP TABLE docs --"

    __str__ = __repr__


def test_number_subclasses_become_plain_numbers() -> None:
    from hotdata_retrieval import to_sql

    plan = SearchPlan(
        source=fusion(rank_constant=SneakyFloat(60.5), weights=[SneakyInt(1), SneakyFloat(2.5)]),
        filter=Comparison(column="n", operator="=", value=SneakyInt(3)),
        limit=SneakyInt(5),
    )
    sql = to_sql(plan)
    assert "DROP" not in sql
    assert type(plan.limit) is int
    assert type(plan.source.rank_constant) is float  # type: ignore[union-attr]


def test_numpy_numbers_become_plain_numbers() -> None:
    numpy = pytest.importorskip("numpy")
    from hotdata_retrieval import to_sql

    comparison = Comparison(column="price", operator="<", value=numpy.float64(9.5))
    assert type(comparison.value) is float
    assert type(Comparison(column="n", operator="=", value=numpy.int64(3)).value) is int
    assert Comparison(column="b", operator="=", value=numpy.bool_(True)).value is True
    source = fusion(rank_constant=numpy.float64(60.0), weights=[numpy.float32(1), 1])
    assert source.rank_constant == 60 and type(source.rank_constant) is int
    sql = to_sql(SearchPlan(source=source, filter=comparison))
    assert "np." not in sql and "price < 9.5" in sql


def test_equal_spellings_give_one_sql_text() -> None:
    from hotdata_retrieval import to_sql

    first = to_sql(SearchPlan(source=fusion(rank_constant=60.0, weights=[0.0, 1])))
    second = to_sql(SearchPlan(source=fusion(rank_constant=60, weights=[-0.0, 1])))
    assert first == second
    assert "-0.0" not in second


def test_depth_must_fit_in_64_bits() -> None:
    raises("depth", lambda: SearchPlan(source=fusion(), limit=2**62))
    raises("limit", lambda: SearchPlan(source=text(), limit=2**63 - 1, offset=5))


@pytest.mark.parametrize("vector", [{1.0, 2.0}, {"a": 1.0}, frozenset([1.0])])
def test_unordered_vectors_are_rejected(vector: Any) -> None:
    raises("query_vector", lambda: nearest(query_vector=vector))


def test_a_huge_integer_in_a_vector_is_a_plan_error() -> None:
    error = raises("query_vector", lambda: nearest(query_vector=[10**400]))
    assert "too large" in str(error)


@pytest.mark.parametrize("word", ["interval", "struct", "exists", "trim", "order", "default"])
def test_words_the_engine_reserves_are_quoted(word: str) -> None:
    from hotdata_retrieval import to_sql

    sql = to_sql(SearchPlan(source=text(), columns=["id", word]), pretty=False)
    assert f'"{word}"' in sql


def test_key_column_cannot_collide_with_a_debug_column() -> None:
    raises(
        "key_column",
        lambda: SearchPlan(source=fusion(), key_column="text_rank", include_branch_scores=True),
    )


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: text(query_text="a\ud800b"), "query_text"),
        (lambda: Comparison(column="lang", operator="=", value="\udfff"), "filter value"),
        (lambda: text(column="bo\ud800dy"), "text column"),
        (lambda: TableName.parse("docs\ud800"), "table"),
    ],
)
def test_lone_surrogates_are_rejected(build: Any, field: str) -> None:
    error = raises(field, build)
    assert "lone surrogate" in str(error)


def test_a_filter_with_too_many_terms_is_refused() -> None:
    from hotdata_retrieval.compile import parse_filter
    from hotdata_retrieval.plan.filters import (
        MAX_FILTER_TERMS,
        MAX_IN_LIST_VALUES,
        InList,
        Or,
        filter_terms,
    )

    at_limit = Or(
        operands=[Comparison(column="id", operator="=", value=i) for i in range(MAX_FILTER_TERMS)]
    )
    assert filter_terms(at_limit) == MAX_FILTER_TERMS
    error = raises(
        "filter",
        lambda: Or(
            operands=[
                Comparison(column="id", operator="=", value=i) for i in range(MAX_FILTER_TERMS + 1)
            ]
        ),
    )
    assert error.value == MAX_FILTER_TERMS + 1
    with pytest.raises(PlanError, match="MAX_FILTER_TERMS"):
        at_limit | Comparison(column="id", operator="=", value=-1)
    with pytest.raises(PlanError, match="MAX_FILTER_TERMS"):
        parse_filter(" OR ".join(f"id = {i}" for i in range(20_000)))
    assert len(InList(column="id", values=range(MAX_IN_LIST_VALUES)).values) == MAX_IN_LIST_VALUES
    error = raises("values", lambda: InList(column="id", values=range(MAX_IN_LIST_VALUES + 1)))
    assert error.value == MAX_IN_LIST_VALUES + 1


def test_a_filter_at_the_term_limit_runs_on_the_engine() -> None:
    import pyarrow as pa

    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.plan.filters import MAX_FILTER_TERMS, Or

    wide = Or(
        operands=[
            Comparison(column="id" if i % 2 else "n", operator="=", value=i)
            for i in range(MAX_FILTER_TERMS)
        ]
    )
    with LocalEngine() as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2, 3], "n": [0, 5, 7], "body": ["fox", "fox", "fox"]}),
            text_columns=["body"],
        )
        plan = SearchPlan(
            source=Bm25Search(table="docs", column="body", query_text="fox"), filter=wide
        )
        assert sorted(engine.search(plan).keys) == [1, 3]


def test_whether_a_query_holds_a_word_is_what_its_words_say() -> None:
    import random

    from hotdata_retrieval.analysis import text_words
    from hotdata_retrieval.plan.search import _has_words

    rng = random.Random(5)
    texts = [chr(code) for code in range(128)]
    texts += ["".join(rng.choices([chr(code) for code in range(128)], k=4)) for _ in range(3000)]
    texts += ["".join(rng.choices(" _-.,;:!?'\"()[]", k=6)) for _ in range(300)]
    texts += ["é", "ＣＡＦÉ", "\u0301", "--\u00b2--", "\u3000", "x\u200b", "\u2460", "_\u00aa_"]
    for text in texts:
        assert _has_words(text) is bool(text_words(text, fold_case=False)), repr(text)


@pytest.mark.parametrize(("field", "minimum"), [("limit", 1), ("offset", 0)])
def test_a_count_past_int64_names_the_range_from_its_minimum(field: str, minimum: int) -> None:
    """A count too large for any engine names its whole range, from the count's own minimum
    (not a signed integer's, which would list negative counts as allowed)."""
    source = NearestNeighborSearch(table="t", column="v", query_vector=[1.0, 0.0])
    with pytest.raises(PlanError) as raised:
        SearchPlan(source=source, **{field: 2**63})
    assert f"{field} must be from {minimum} to {2**63 - 1}" in str(raised.value)
