"""A document table under cosine distance takes only vectors whose squared norm is zero or a
normal Float32 number (norms from about 1.1e-19 to 1.8e19), as documents and as queries.

The stores compute cosine distance in Float32 from the squared norms: past that range the
norm underflows to 0 or overflows to infinity, and the distance came out wrong per store: a
row ``[1e-30, 1e-30]`` was at distance -inf from ``[1, 0]`` on SQLite and LanceDB (so it
ranked first), 0.0 on PostgreSQL, 0.29 (right) on the local engine; a query ``[1e-30,
1e-30]`` left only two of eight rows on PostgreSQL and LanceDB. Within the range every store
ranks as NumPy's float64 cosine does (``tests/parity/test_vector_norm_range.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.errors import PlanError
from tests.document_engines import fresh_table, open_document_engine

ENGINES = ["local", "sqlite", "duckdb", "postgres", "lancedb"]

OUTSIDE = [[1e-30, 1e-30], [0.0, 1e-25], [1e20, 0.0], [3e19, -3e19], [2e-45, 0.0]]
"""Non-zero vectors whose float32 squared norm underflows or overflows."""


@pytest.fixture(scope="module", params=ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    yield opened
    opened.close()


def _filled(engine: Any, metric: str = "cosine") -> DocumentStore:
    store = DocumentStore(engine, fresh_table("norms"), metric=metric)
    store.add(
        ["a", "b", "zero"], ["disk full", "network down", "empty"], [[1, 0], [0.6, 0.8], [0, 0]]
    )
    return store


@pytest.mark.parametrize("vector", OUTSIDE)
def test_a_document_vector_past_the_range_is_refused_and_nothing_written(
    engine: Any, vector: list[float]
) -> None:
    store = _filled(engine)
    with pytest.raises(PlanError, match="squared norm") as raised:
        store.add(["c", "d"], ["c text", "d text"], [[0.5, 0.5], vector])
    assert raised.value.field == "vectors"
    assert raised.value.value == "d"
    assert sorted(document.id for document in store.get(["a", "b", "zero", "c", "d"])) == [
        "a",
        "b",
        "zero",
    ]


@pytest.mark.parametrize("vector", OUTSIDE)
def test_a_query_vector_past_the_range_is_refused(engine: Any, vector: list[float]) -> None:
    store = _filled(engine)
    with pytest.raises(PlanError, match="squared norm"):
        store.nearest(vector, k=3)
    with pytest.raises(PlanError, match="squared norm"):
        store.hybrid_search("disk", vector, k=3)


def test_other_metrics_take_the_same_vectors(engine: Any) -> None:
    store = _filled(engine, metric="l2")
    store.add(["c"], ["c text"], [[1e-30, 1e-30]])
    assert [hit.document.id for hit in store.nearest([1e-30, 1e-30], k=1)] in (["c"], ["zero"])


_components = st.one_of(
    st.floats(min_value=-1e18, max_value=1e18, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-19, -3e-19, 1e18, 4e18]),
)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.lists(st.lists(_components, min_size=2, max_size=2), min_size=1, max_size=8),
    query=st.lists(_components, min_size=2, max_size=2),
)
def test_accepted_vectors_rank_as_float64_cosine_on_the_local_engine_and_sqlite(
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
    rows: list[list[float]],
    query: list[float],
) -> None:
    """Whatever the store accepts ranks as NumPy's float64 cosine of the Float32 values
    (a zero row at 1.0), on the local engine and on SQLite (whose sqlite-vec computes in
    Float32)."""
    stored = np.array(rows, dtype=np.float32).astype(np.float64)
    probe = np.array(query, dtype=np.float32).astype(np.float64)
    for name in ("local", "sqlite"):
        engine = open_document_engine(name, tmp_path_factory.mktemp(name), request)
        try:
            store = DocumentStore(engine, fresh_table("drawn"))
            keys = [f"k{i}" for i in range(len(rows))]
            try:
                store.add(keys, ["x"] * len(rows), rows)
                hits = store.nearest(query, k=len(rows))
            except PlanError as error:
                assert "squared norm" in str(error) or "all zeros" in str(error)
                continue
            norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(probe)
            with np.errstate(invalid="ignore", divide="ignore"):
                expected = np.where(norms == 0, 1.0, 1.0 - (stored @ probe) / norms)
            found = {hit.document.id: hit.distance for hit in hits}
            assert sorted(found) == sorted(keys)
            for position, key in enumerate(keys):
                assert found[key] == pytest.approx(expected[position], abs=1e-5)
        finally:
            engine.close()
