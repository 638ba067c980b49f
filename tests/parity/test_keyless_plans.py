"""A plan without a key column returns the columns it names; a nearest-neighbour plan with
neither a key nor columns names no row to return, and every engine says so, naming what to
pass, rather than failing on the columns it made up itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hotdata_retrieval import Bm25Search, NearestNeighborSearch, PlanError, SearchPlan
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, "keyless", bodies_table(["a b", "c d"]))


def test_a_keyless_nearest_plan_without_columns_is_refused_naming_what_to_pass(
    engine: Any,
) -> None:
    nearest = NearestNeighborSearch(table="keyless", column="embedding", query_vector=[1.0, 0.0])
    with pytest.raises(PlanError, match="no key_column and no columns") as raised:
        engine.search(SearchPlan(source=nearest, key_column=None))
    assert raised.value.field == "columns"
    found = engine.search(SearchPlan(source=nearest, key_column=None, columns=["body"]))
    assert [hit.columns["body"] for hit in found.hits] == ["a b", "c d"]


def test_a_keyless_text_plan_returns_its_text_column(engine: Any) -> None:
    text = Bm25Search(table="keyless", column="body", query_text="c")
    found = engine.search(SearchPlan(source=text, key_column=None))
    assert [hit.columns["body"] for hit in found.hits] == ["c d"]
