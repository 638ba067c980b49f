"""The compat builders refuse a wrong type with a ``PlanError`` naming it, never SQL built from
a misread value nor Python's own ``TypeError``.

Before: ``columns="id"`` (text where a list of names goes) was read as its characters and
every builder wrote ``SELECT i, d, ...``; a ``vector`` of ``None`` or a generator raised
``TypeError: object of type ... has no len()``; an unhashable ``metric`` raised
``TypeError: unhashable type``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hotdata_retrieval import builders
from hotdata_retrieval.errors import PlanError

TABLE = "default.public.docs"

BUILDERS: dict[str, Callable[..., str]] = {
    "bm25": lambda **extra: builders.bm25_search_sql(
        table=TABLE, column="body", query="fox", **extra
    ),
    "vector_search": lambda **extra: builders.vector_search_sql(
        table=TABLE, column="body", query="fox", **extra
    ),
    "vector_distance": lambda **extra: builders.vector_distance_sql(
        table=TABLE, column="emb", **{"vector": [1.0, 0.0], "columns": ["id"], **extra}
    ),
    "hybrid": lambda **extra: builders.hybrid_search_sql(
        table=TABLE,
        column="body",
        vector_column="emb",
        query="fox",
        **{"vector": [1.0, 0.0], **extra},
    ),
}


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("columns", ["id", b"id", {"id": 1}, 5])
def test_columns_must_be_a_list(name: str, columns: Any) -> None:
    with pytest.raises(PlanError, match="columns must be a list of column names") as refused:
        BUILDERS[name](columns=columns)
    assert refused.value.field == "columns"
    listed = BUILDERS[name](columns=("id", "title"))  # any other sequence of names is one
    assert "SELECT id, title" in listed or "base.id, base.title" in listed


@pytest.mark.parametrize("name", ["vector_distance", "hybrid"])
@pytest.mark.parametrize("vector", [None, "ab", 3.0, {1.0, 2.0}])
def test_a_vector_that_is_no_sequence_of_numbers_is_refused(name: str, vector: Any) -> None:
    with pytest.raises(PlanError, match="query_vector must be") as refused:
        BUILDERS[name](vector=vector)
    assert refused.value.field == "query_vector"


@pytest.mark.parametrize("name", ["vector_distance", "hybrid"])
def test_a_generator_is_read_as_the_list_it_yields(name: str) -> None:
    assert BUILDERS[name](vector=(value for value in [1.0, 0.0])) == BUILDERS[name](
        vector=[1.0, 0.0]
    )


@pytest.mark.parametrize("name", ["vector_distance", "hybrid"])
@pytest.mark.parametrize("metric", [["cosine"], None, 1])
def test_a_metric_that_is_no_name_is_refused(name: str, metric: Any) -> None:
    with pytest.raises(PlanError, match="metric must be one of cosine, dot, l2"):
        BUILDERS[name](metric=metric)
