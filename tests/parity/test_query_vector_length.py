"""A query vector of the wrong length is one :class:`PlanError` on every engine and every path.

The table's vectors are the caller's (loaded as data, not embedded by the library), six long;
each plan — a nearest-neighbour search alone, filtered, and inside every fusion — carries a
query vector of another length. Every engine refuses it before it searches, naming both
lengths, in one message: ``query vector has N dimensions; column 'embedding' holds 6``. On the
local engine that holds for each way a plan runs: the native path, DataFusion with the
fast-path rewrite, and the HNSW index.

The engine's SQL (``LocalEngine.sql``) is another matter: its distance functions reproduce the
Hotdata engine's own errors (``docs/engines.md``), pinned in ``tests/test_local_engine.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    DistributionBasedScoreFusion,
    MinMaxFusion,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.filters import Comparison
from tests.parity.corpus import DIMENSIONS, corpus_table
from tests.parity.engines import open_engine

PATHS = ["local", "local hnsw", "sqlite", "duckdb", "postgres", "lancedb"]
"""Every engine, and the local engine once more with an HNSW index of the vector column."""

LENGTHS = [3, DIMENSIONS + 2]
"""Shorter and longer than the column's vectors."""


@pytest.fixture(scope="module", params=PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    name = request.param
    directory = tmp_path_factory.mktemp(f"length-{name.replace(' ', '-')}")
    opened = open_engine(name.split()[0], directory, request)
    options = {"vector_index": "hnsw"} if name == "local hnsw" else {}
    opened.load_table("docs", corpus_table(), key_column="id", text_columns=["body"], **options)
    yield opened
    opened.close()


def _nearest(length: int, metric: str = "cosine") -> NearestNeighborSearch:
    return NearestNeighborSearch(
        table="docs",
        column="embedding",
        query_vector=[0.5] * length,
        metric=metric,
    )


def _right() -> NearestNeighborSearch:
    return NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.5] * DIMENSIONS)


def _text() -> Bm25Search:
    return Bm25Search(table="docs", column="body", query_text="error")


ENGLISH = Comparison(column="lang", operator="=", value="en")

PLANS: dict[str, Callable[[int], SearchPlan]] = {
    "nearest": lambda n: SearchPlan(source=_nearest(n), limit=5),
    "nearest l2, filtered": lambda n: SearchPlan(source=_nearest(n, "l2"), limit=5, filter=ENGLISH),
    "rrf": lambda n: SearchPlan(
        source=ReciprocalRankFusion(branches=[_text(), _nearest(n)]), limit=5
    ),
    "rrf, filtered, vector first": lambda n: SearchPlan(
        source=ReciprocalRankFusion(branches=[_nearest(n), _text()]), limit=5, filter=ENGLISH
    ),
    "min_max": lambda n: SearchPlan(source=MinMaxFusion(branches=[_text(), _nearest(n)]), limit=5),
    "dbsf": lambda n: SearchPlan(
        source=DistributionBasedScoreFusion(branches=[_text(), _nearest(n, "l2")]), limit=5
    ),
    "rrf, second vector branch wrong": lambda n: SearchPlan(
        source=ReciprocalRankFusion(branches=[_right(), _nearest(n)]), limit=5
    ),
}


def _message(length: int) -> str:
    return re.escape(f"query vector has {length} dimensions; column 'embedding' holds {DIMENSIONS}")


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("plan", PLANS, ids=str)
def test_a_wrong_length_is_one_plan_error(engine: Any, plan: str, length: int) -> None:
    with pytest.raises(PlanError, match=_message(length)) as raised:
        engine.search(PLANS[plan](length))
    assert raised.value.field == "query_vector"
    assert raised.value.value == length


def test_the_right_length_still_searches(engine: Any) -> None:
    for build in PLANS.values():
        assert engine.search(build(DIMENSIONS)).hits


@pytest.fixture()
def untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local engine's vector search kernels fail the test if anything reaches them."""
    from hotdata_retrieval.engines.local import _functions, nearest

    def reached(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a vector search ran")

    monkeypatch.setattr(nearest.VectorColumnIndex, "nearest", reached)
    monkeypatch.setattr(_functions, "distance_udf_arrays", reached)


@pytest.mark.parametrize("plan", PLANS, ids=str)
@pytest.mark.parametrize("index", [None, "hnsw"])
def test_the_local_engine_refuses_before_any_vector_work(
    tmp_path: Path, untouched: None, plan: str, index: str | None
) -> None:
    with LocalEngine(tmp_path / "db") as local:
        local.load_table(
            "docs", corpus_table(), key_column="id", text_columns=["body"], vector_index=index
        )
        with pytest.raises(PlanError, match=_message(3)):
            local.search(PLANS[plan](3))
        assert local._loaded("docs").vector_indexes == {}  # no search matrix was built


def test_a_document_store_refuses_a_wrong_length_as_the_engine_does() -> None:
    with LocalEngine() as local:
        store = DocumentStore(local, "notes")
        store.add(["a", "b"], ["red fox", "blue sky"], [[1.0, 0.0], [0.0, 1.0]])
        expected = re.escape("query vector has 3 dimensions; column 'embedding' holds 2")
        with pytest.raises(PlanError, match=expected):
            store.nearest([1.0, 0.0, 0.0])
        with pytest.raises(PlanError, match=expected):
            store.hybrid_search("fox", [1.0, 0.0, 0.0])
        assert [hit.document.id for hit in store.nearest([1.0, 0.0], k=1)] == ["a"]
