"""A vector column a hit carries comes back as the list of floats that was loaded, on every
engine and in every plan shape: named among a text plan's ``columns`` (SQLite handed back
sqlite-vec's float32 blob, DuckDB a tuple and PostgreSQL pgvector's text, ``'[1,2]'``), or
the searched column of a nearest or hybrid plan with ``include_vectors``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

BODIES = ["disk full", "disk slow", "login page", "disk error again"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "projected_vectors", bodies_table(BODIES))


def _plan(shape: str) -> SearchPlan:
    """A text plan naming the vector column among its columns; a nearest and a hybrid plan
    returning the searched vector column (``include_vectors``: a plan may not name it)."""
    text = Bm25Search(table="projected_vectors", column="body", query_text="disk")
    nearest = NearestNeighborSearch(
        table="projected_vectors", column="embedding", query_vector=[1.0, 0.5]
    )
    if shape == "text":
        return SearchPlan(source=text, columns=["id", "embedding"], limit=4)
    if shape == "nearest":
        return SearchPlan(source=nearest, columns=["id"], include_vectors=True, limit=4)
    return SearchPlan(
        source=ReciprocalRankFusion(branches=[text, nearest]),
        columns=["id"],
        include_vectors=True,
        limit=4,
    )


@pytest.mark.parametrize("shape", ["text", "nearest", "hybrid"])
def test_a_projected_vector_is_the_loaded_list_of_floats(engine: Any, shape: str) -> None:
    hits = list(engine.search(_plan(shape)))
    assert hits
    for hit in hits:
        vector = hit.columns["embedding"]
        assert type(vector) is list and all(type(x) is float for x in vector)
        assert vector == [1.0, float(hit.key)]
