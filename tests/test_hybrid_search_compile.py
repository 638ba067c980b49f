"""The capability switch (spec R17): a dialect that declares ``native_hybrid_search`` gets one
``hybrid_search(...)`` call for a plan that fits it, and both forms return the same rows."""

from __future__ import annotations

import random
from typing import Any

import attrs
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
    get_dialect,
    parse_filter,
    to_sql,
)
from hotdata_retrieval.compile.compiler import filter_text, native_hybrid_misfit
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local.hybrid import HYBRID_SEARCH
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.spec.native import HOTDATA_NATIVE, HYBRID_SEARCH_FUNCTION, native_profile
from tests.plans import PLANS, TEXT
from tests.strategies import predicates
from tests.test_filter_text import canonical

NATIVE_PLANS = {
    "hybrid",
    "hybrid_weighted",
    "hybrid_offset",
    "hybrid_filtered",
    "hybrid_debug_columns",
}


def test_the_default_dialect_has_no_native_hybrid_search() -> None:
    assert get_dialect("hotdata").native_hybrid_search is None
    for plan in PLANS.values():
        assert "hybrid_search" not in to_sql(plan)


def test_engines_and_dialects_declare_the_capability() -> None:
    assert LocalEngine.native_hybrid_search == HYBRID_SEARCH == HYBRID_SEARCH_FUNCTION
    assert HOTDATA_NATIVE.native_hybrid_search == "hybrid_search"
    assert get_dialect("hotdata-native") is HOTDATA_NATIVE
    assert native_profile("fused").native_hybrid_search == "fused"
    assert native_profile("fused") is native_profile("fused")


@pytest.mark.parametrize("name", sorted(PLANS))
def test_the_native_dialect_switches_only_plans_that_fit(name: str) -> None:
    plan = PLANS[name]
    native = to_sql(plan, HOTDATA_NATIVE)
    if plan.group_by is not None or plan.after is not None:
        # the page is taken from the candidates' rows, which the native call gives if it fits
        fits = native_hybrid_misfit(plan.candidates()) is None
        assert ("FROM hybrid_search(" in native) == fits
        assert native.startswith("WITH")
        return
    if name in NATIVE_PLANS:
        assert native_hybrid_misfit(plan) is None
    if native_hybrid_misfit(plan) is None:
        assert "FROM hybrid_search(" in native
        assert "WITH" not in native
    else:
        assert native == to_sql(plan)


def test_the_native_statement() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                NearestNeighborSearch(
                    table="docs", column="embedding", query_vector=[0.5, -1.0], metric="l2"
                ),
                Bm25Search(table="docs", column="body", query_text="it's down"),
            ],
            weights=[2, 0.5],
            rank_constant=10,
        ),
        limit=3,
        offset=6,
        filter=Comparison(column="lang", operator="=", value="en"),
        include_branch_scores=True,
    )
    assert to_sql(plan, HOTDATA_NATIVE, pretty=False) == (
        "SELECT id, body, score, vector_rank AS nearest_rank, vector_distance AS "
        "nearest_distance, text_rank, text_score FROM hybrid_search('default.public.docs', "
        "'body', 'embedding', 'it''s down', ARRAY[0.5, -1.0], 3, 'depth', 200, 'rank_constant', "
        "10, 'text_weight', 0.5, 'vector_weight', 2.0, 'metric', 'l2', 'offset', 6, 'key', "
        "'id', 'filter', 'lang = ''en''', 'debug', true) ORDER BY score DESC, id ASC"
    )


SEMANTIC_SAME = VectorSearch(table="docs", column="body", query_text=TEXT.query_text)


@pytest.mark.parametrize(
    ("branches", "reason"),
    [
        ([TEXT, TEXT], "hybrid_search fuses one text branch with one vector branch, not text"),
        (
            [
                NearestNeighborSearch(table="docs", column="a", query_vector=[1.0]),
                NearestNeighborSearch(table="docs", column="b", query_vector=[1.0]),
            ],
            "not nearest + nearest",
        ),
        (
            [TEXT, VectorSearch(table="docs", column="body", query_text="other")],
            "takes one query text",
        ),
        (
            [
                TEXT,
                SEMANTIC_SAME,
                NearestNeighborSearch(table="docs", column="e", query_vector=[1.0]),
            ],
            "fuses two branches, the plan has 3",
        ),
    ],
)
def test_plans_that_do_not_fit_keep_the_cte_form(branches: list[Any], reason: str) -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=branches))
    misfit = native_hybrid_misfit(plan)
    assert misfit is not None and reason in misfit
    assert to_sql(plan, HOTDATA_NATIVE) == to_sql(plan)


def test_a_semantic_branch_of_the_same_text_passes_a_null_vector() -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[SEMANTIC_SAME, TEXT]))
    sql = to_sql(plan, HOTDATA_NATIVE, pretty=False)
    assert "'body', 'body', 'error E1234 after upgrade', NULL, 10" in sql
    assert "'metric'" not in sql


def test_filters_never_share_a_cached_statement() -> None:
    def plan(value: str) -> SearchPlan:
        return attrs.evolve(
            PLANS["hybrid"], filter=Comparison(column="lang", operator="=", value=value)
        )

    english, german = to_sql(plan("en"), HOTDATA_NATIVE), to_sql(plan("de"), HOTDATA_NATIVE)
    assert "lang = ''en''" in english and "lang = ''de''" in german
    assert to_sql(plan("en"), HOTDATA_NATIVE) == english


@given(predicates)
def test_filter_text_reads_back(predicate: Predicate) -> None:
    assert parse_filter(filter_text(predicate, HOTDATA_NATIVE)) == canonical(predicate)


def test_an_empty_list_keeps_its_meaning_in_filter_text() -> None:
    predicate = InList(column="tag", values=[]) | ~InList(column="lang", values=[])
    assert filter_text(predicate, HOTDATA_NATIVE) == "tag IN () OR NOT lang IN ()"


# -- both forms, same rows --------------------------------------------------------------------

WORDS = ["zebra", "fox", "crash", "login", "billing", "sync", "disk"]


def _rows_of_both_forms(local: LocalEngine, plan: SearchPlan) -> tuple[list[Any], list[Any]]:
    cte = local.sql(to_sql(plan)).to_pylist()
    native_sql = to_sql(plan, HOTDATA_NATIVE)
    assert "hybrid_search(" in native_sql
    return cte, local.sql(native_sql).to_pylist()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    corpus=st.lists(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        min_size=1,
        max_size=20,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2).map(" ".join),
    limit=st.integers(1, 8),
    offset=st.integers(0, 4),
    filtered=st.booleans(),
    weights=st.sampled_from([None, [1.0, 2.0], [0.0, 1.0], [3, 0]]),
    rank_constant=st.sampled_from([60, 1, 0.5]),
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    vector_first=st.booleans(),
    explicit_depth=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_both_forms_return_the_same_rows(
    corpus: list[str],
    query: str,
    limit: int,
    offset: int,
    filtered: bool,
    weights: Any,
    rank_constant: float,
    metric: str,
    vector_first: bool,
    explicit_depth: bool,
    seed: int,
) -> None:
    # Outside the declared divergences: every row has a vector, and each branch's depth covers
    # every row (a depth cut can then neither split a tie nor meet a filter).
    rng = random.Random(seed)
    table = pa.table(
        {
            "id": list(range(1, len(corpus) + 1)),
            "body": corpus,
            "category": [rng.choice("ab") for _ in corpus],
            "embedding": pa.array(
                [[rng.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(3)] for _ in corpus],
                type=pa.list_(pa.float32()),
            ),
        }
    )
    branches: list[Any] = [
        Bm25Search(table="docs", column="body", query_text=query),
        NearestNeighborSearch(
            table="docs",
            column="embedding",
            query_vector=[rng.uniform(-1, 1) for _ in range(3)],
            metric=metric,
        ),
    ]
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=branches[::-1] if vector_first else branches,
            weights=weights,
            rank_constant=rank_constant,
            depth=max(len(corpus), limit + offset) if explicit_depth else None,
        ),
        columns=["id", "category"],
        limit=limit,
        offset=offset,
        filter=Comparison(column="category", operator="=", value="a") if filtered else None,
        include_branch_scores=True,
    )
    with LocalEngine() as local:
        local.load_table("docs", table, text_columns=["body"])
        cte, native = _rows_of_both_forms(local, plan)
    assert native == cte


def test_both_forms_agree_for_engine_side_embedding() -> None:
    bodies = [" ".join(random.Random(i).choices(WORDS, k=4)) for i in range(15)]
    table = pa.table({"id": list(range(1, 16)), "body": bodies})
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="crash login"),
                VectorSearch(table="docs", column="body", query_text="crash login"),
            ],
            depth=20,
        ),
        limit=6,
        offset=2,
        include_branch_scores=True,
    )
    with LocalEngine(embedder=HashingEmbedder(dimensions=16)) as local:
        local.load_table("docs", table, text_columns=["body"], embed_columns=["body"])
        cte, native = _rows_of_both_forms(local, plan)
        assert local.search(plan).keys == [row["id"] for row in cte]
    assert native == cte
    assert len(native) == 6
