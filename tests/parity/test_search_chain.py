"""The search chain on every engine: ``engine.table(t).search(q, mode=...).where(...)
.limit(n)`` builds the same plan a caller would write by hand, runs as that plan runs, and
refuses a bad mode, limit or filter at the step that gave it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.chain import Search, SearchTable
from hotdata_retrieval.engines.local import LocalEngine
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = ["disk full on host", "network error", "disk error again", "full moon", "disk quiet"]
RATINGS = [5, 3, 4, 1, 2]
VECTOR = [1.0, 0.5]


def _embed(text: str) -> list[float]:
    return VECTOR


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """Every engine with ``notes`` loaded; the local engine routes by the vector columns it
    embedded itself, so there ``body`` is embedded too (two dimensions, as ``embedding``)."""
    data = bodies_table(BODIES, rating=RATINGS)
    if request.param != "local":
        yield from loaded_engine(request, tmp_path_factory, "notes", data)
        return
    with LocalEngine(tmp_path_factory.mktemp("chain-local"), embedder=HashingEmbedder(2)) as local:
        local.load_table("notes", data, text_columns=["body"], embed_columns=["body"])
        yield local


def test_a_text_chain_is_the_plan_written_by_hand(engine: Any) -> None:
    chained = (
        engine.table("notes").search("disk", mode="text").where("rating >= 2").limit(2)
    ).select("id", "body", "rating")
    by_hand = SearchPlan(
        source=Bm25Search(table="notes", column="body", query_text="disk"),
        columns=["id", "body", "rating"],
        filter=Comparison(column="rating", operator=">=", value=2),
        limit=2,
    )
    assert chained.plan == attrs_evolved_table(by_hand, chained.plan)
    rows = chained.to_list()
    assert rows == engine.search(chained.plan).to_list()
    # every "disk" body rated 2 or more, best first, two of them
    assert len(rows) == 2
    assert {row["id"] for row in rows} <= {0, 2, 4}
    assert all(row["rating"] >= 2 for row in rows)


def attrs_evolved_table(plan: SearchPlan, like: SearchPlan) -> SearchPlan:
    """``plan`` searching the engine's full name of its table (the router completes it as
    the engine names it)."""
    import attrs

    branch = attrs.evolve(plan.branches[0], table=like.branches[0].table)
    return attrs.evolve(plan, source=branch)


def test_a_hybrid_chain_filters_inside_every_branch(engine: Any) -> None:
    search = engine.table("notes").search("disk", mode="hybrid", embed_query=_embed)
    assert isinstance(search.plan.source, ReciprocalRankFusion)
    filtered = search.where({"rating": {"$gte": 3}}).select("id", "rating").limit(5)
    frame = filtered.to_pandas()
    assert set(frame["id"]) == {
        index for index, rating in enumerate(RATINGS) if rating >= 3
    }  # the nearest branch ranks every row, so the fusion returns each one kept
    assert frame["score"].is_monotonic_decreasing
    assert filtered.to_arrow().to_pylist() == engine.search(filtered.plan).to_list()


def test_two_wheres_are_both_applied(engine: Any) -> None:
    search = (
        engine.table("notes")
        .search("disk", mode="nearest", embed_query=_embed)
        .where("rating >= 2")
        .where("rating <= 4")
        .select("id", "rating")
        .limit(5)
    )
    ratings = sorted(row["rating"] for row in search.to_list())
    assert ratings == sorted(rating for rating in RATINGS if 2 <= rating <= 4)


def test_each_step_leaves_the_earlier_search_alone(engine: Any) -> None:
    first = engine.table("notes").search("disk", mode="text")
    second = first.limit(1).offset(1).where("rating > 1")
    assert (first.plan.limit, first.plan.offset, first.plan.filter) == (10, 0, None)
    assert (second.plan.limit, second.plan.offset) == (1, 1)
    assert len(second.to_list()) == 1
    assert isinstance(first, Search) and isinstance(engine.table("notes"), SearchTable)


def test_explain_shows_the_plans_sql(engine: Any) -> None:
    search = engine.table("notes").search("disk", mode="text").where("rating >= 2").limit(3)
    shown = search.explain()
    profile = getattr(engine, "profile", None)
    if profile is None:  # LanceDB runs no SQL: the plan document
        assert '"query_text": "disk"' in shown and '"limit": 3' in shown
    else:
        assert shown == to_sql(search.plan, profile)
        assert search.explain(full_vectors=True) == shown


@pytest.mark.parametrize(
    ("step", "field", "named"),
    [
        (lambda table: table.search("disk", mode="fuzzy"), "mode", "'fuzzy'"),
        (lambda table: table.search("disk", mode="text").limit(0), "limit", "0"),
        (lambda table: table.search("disk", mode="text").limit("5"), "limit", "'5'"),
        (lambda table: table.search("disk", mode="text").offset(-1), "offset", "-1"),
        (lambda table: table.search("disk", mode="text").where("rating >>= 2"), None, ">>"),
        (lambda table: table.search("disk", mode="text").where(None), "filter", "None"),
        (lambda table: table.search("disk", mode="text").where(3), "filter", "3"),
        (lambda table: table.search("disk", mode="text").select(), "columns", "empty"),
    ],
    ids=["mode", "limit", "limit-text", "offset", "filter-text", "no-filter", "filter", "select"],
)
def test_a_bad_step_is_a_plan_error_naming_it(
    engine: Any, step: Any, field: str | None, named: str
) -> None:
    with pytest.raises(PlanError, match=named.replace("(", r"\(")) as raised:
        step(engine.table("notes"))
    if field is not None:
        assert raised.value.field == field


def test_a_nearest_chain_is_the_vector_plan(engine: Any) -> None:
    search = engine.table("notes").search("x", mode="nearest", embed_query=_embed)
    branch = search.plan.branches[0]
    assert isinstance(branch, NearestNeighborSearch)
    assert branch.query_vector == tuple(VECTOR)
    assert search.limit(3).run().keys == engine.search(search.limit(3).plan).keys
