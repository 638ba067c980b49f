"""Rows tied on a nearest branch's distance come in key order on every store, under each
filter the local engine's row mask cannot stand for (so it runs that statement row by row):
a single search's pages tile one ranking and a fusion's depth cut keeps the lowest keys, as a
NumPy ranking (distance, then key) has them (docs/engines.md, Ties)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Between,
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.plan.filters import Predicate
from tests.parity.engines import STORE_ENGINES, loaded_engine

KEYS = [int(key) for key in np.random.default_rng(3).permutation(48)]
"""Keys out of row order, so a store's own order of ties (its row order) is not key order."""
VECTORS = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
"""Three directions, a third of the rows each: every distance is tied with 15 others."""
QUERY = [1.0, 0.2]
DATA = pa.table(
    {
        "id": KEYS,
        "body": ["red fox"] * len(KEYS),
        "num": [float(key % 5) for key in KEYS],
        "embedding": pa.array([VECTORS[key % 3] for key in KEYS], pa.list_(pa.float32(), 2)),
    }
)
FILTERS: dict[str, tuple[Predicate, Callable[[float], bool]]] = {
    "between-of-mixed-types": (Between(column="num", low=0, high=3.5), lambda num: num <= 3.5),
    "empty-in-list": (InList(column="num", values=[], negated=True), lambda num: True),
    "in-list-of-mixed-types": (
        InList(column="num", values=[0, 1.0, 2, 4.0]),
        lambda num: num in (0, 1, 2, 4),
    ),
    "a-filter-the-mask-reads": (
        Comparison(column="num", operator="<=", value=3.5),
        lambda num: num <= 3.5,
    ),
}
"""Each filter, and the rows (by ``num``) it keeps."""
NEAREST = NearestNeighborSearch(table="tied", column="embedding", query_vector=QUERY)


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "tied", DATA)


def _reference(name: str) -> list[int]:
    """The kept keys by cosine distance (NumPy, float64), then key."""
    keep = FILTERS[name][1]
    query = np.array(QUERY)
    distance = {
        key: round(1.0 - float(np.dot(VECTORS[key % 3], query)) / float(np.linalg.norm(query)), 9)
        for key in KEYS
        if keep(float(key % 5))
    }
    return sorted(distance, key=lambda key: (distance[key], key))


@pytest.mark.parametrize("name", FILTERS)
def test_pages_of_a_tied_filtered_search_tile_the_reference_ranking(engine: Any, name: str) -> None:
    predicate = FILTERS[name][0]
    whole = engine.search(SearchPlan(source=NEAREST, filter=predicate, limit=30)).keys
    pages = [
        key
        for offset in range(0, 30, 5)
        for key in engine.search(
            SearchPlan(source=NEAREST, filter=predicate, limit=5, offset=offset)
        ).keys
    ]
    assert whole == pages == _reference(name)[:30]


@pytest.mark.parametrize("name", FILTERS)
def test_a_tied_filtered_fusion_depth_keeps_the_lowest_keys(engine: Any, name: str) -> None:
    """A text branch matching no row leaves the fused ranking the nearest branch's depth cut
    (rows tied on distance share a rank, so their fused scores tie and fall to the key)."""
    fused = ReciprocalRankFusion(
        branches=[Bm25Search(table="tied", column="body", query_text="absent"), NEAREST],
        depth=12,
    )
    plan = SearchPlan(source=fused, filter=FILTERS[name][0], limit=12)
    assert engine.search(plan).keys == _reference(name)[:12]
