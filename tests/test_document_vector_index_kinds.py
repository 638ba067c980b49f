"""A document table's ``vector_index`` is refused when the store is built, not at its first
``add`` (after the caller has embedded the documents): a name that is no vector index kind
(``"ivf"``), naming it and listing the kinds of the registry
(:class:`~hotdata_retrieval.engines.hnsw.VectorIndexKind`), and a kind the engine does not build
(``"hnsw"`` on SQLite), naming the engine and the kinds it builds. Through
:class:`~hotdata_retrieval.documents.DocumentStore` and both vector stores, on every engine a
document table runs on."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hotdata_retrieval.adapters.langchain import HotdataVectorStore as LangChainStore
from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore as LlamaIndexStore
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.hnsw import VectorIndexKind
from hotdata_retrieval.errors import EngineError, HotdataRetrievalError, PlanError
from hotdata_retrieval.plan.search import DistanceMetric
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine


class _Embeddings:
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


STORES: dict[str, Callable[..., Any]] = {
    "documents": lambda engine, table, **options: DocumentStore(engine, table, **options),
    "langchain": lambda engine, table, **options: LangChainStore(
        engine,
        table,
        _Embeddings(),  # type: ignore[arg-type]
        **options,
    ),
    "llamaindex": lambda engine, table, **options: LlamaIndexStore(engine, table, **options),
}

BUILDS_HNSW = {"local", "postgres", "hotdata"}
"""The engines that build an HNSW index (docs/engines.md): the others search exactly
(LanceDB here, SQLite and DuckDB), or index on their own (turbopuffer)."""


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened.document_engine_name = request.param
    yield opened
    opened.close()


def test_the_registry_names_the_kinds_the_engines_build() -> None:
    assert [kind.value for kind in VectorIndexKind] == ["hnsw"]


@pytest.mark.parametrize("kind", ["ivf", "HNSW ", ""])
@pytest.mark.parametrize("store", STORES)
def test_an_unknown_kind_is_refused_when_the_store_is_built(
    engine: Any, store: str, kind: str
) -> None:
    table = fresh_table()
    with pytest.raises(PlanError, match=re.escape(repr(kind))) as caught:
        STORES[store](engine, table, vector_index=kind)
    listed = ", ".join(repr(known.value) for known in VectorIndexKind)
    assert listed in str(caught.value)
    assert caught.value.field == "vector_index" and caught.value.value == kind
    assert table not in engine.tables


@pytest.mark.parametrize("store", STORES)
def test_a_kind_the_engine_does_not_build_is_refused_when_the_store_is_built(
    engine: Any, store: str
) -> None:
    table = fresh_table()
    if engine.document_engine_name in BUILDS_HNSW:
        built = STORES[store](engine, table, vector_index="hnsw")
        assert table not in engine.tables  # nothing is made before the first add
        del built
        return
    with pytest.raises(PlanError, match=r"vector_index 'hnsw' is not one the .* engine builds"):
        STORES[store](engine, table, vector_index="hnsw")
    assert table not in engine.tables


def test_the_first_add_would_have_refused_what_the_store_now_refuses(engine: Any) -> None:
    """The reference: the engine's own refusal at the first add, with no store between."""
    import pyarrow as pa

    from hotdata_retrieval.engines.local import TableLoad

    table = fresh_table()
    rows = pa.table(
        {
            "id": ["a"],
            "text": ["red fox"],
            "embedding": pa.array([[1.0, 0.0]], pa.list_(pa.float32(), 2)),
        }
    )
    create = TableLoad(
        name=table, data=rows, key_column="id", text_columns=("text",), vector_index="ivf"
    )
    with pytest.raises((EngineError, PlanError)):
        engine.upsert_rows(table, rows, create=create)


@pytest.mark.parametrize("metric", [metric.value for metric in DistanceMetric])
@pytest.mark.parametrize("store", STORES)
def test_a_metric_the_engine_cannot_compute_is_refused_when_the_store_is_built(
    engine: Any, store: str, metric: str
) -> None:
    """As a kind of index: ``metric="dot"`` on turbopuffer, which has no dot distance, was
    refused only at the first add. The reference is the engine's own load of a table of
    that metric, made as a store's first add makes it: the store refuses exactly the
    metrics that load refuses."""
    import pyarrow as pa

    from hotdata_retrieval.engines.local import TableLoad

    rows = pa.table(
        {
            "id": ["a"],
            "text": ["red fox"],
            "embedding": pa.array([[1.0, 0.0]], pa.list_(pa.float32(), 2)),
        }
    )
    loaded = fresh_table()
    create = TableLoad(
        name=loaded, data=rows, key_column="id", text_columns=("text",), vector_metric=metric
    )
    try:
        engine.upsert_rows(loaded, rows, create=create)
    except HotdataRetrievalError:
        engine_refuses = True
    else:
        engine_refuses = False
    table = fresh_table()
    if not engine_refuses:
        STORES[store](engine, table, metric=metric)
        return
    with pytest.raises(PlanError, match=f"metric {metric!r} is not one the .* engine") as caught:
        STORES[store](engine, table, metric=metric)
    assert caught.value.field == "metric"
    assert table not in engine.tables
