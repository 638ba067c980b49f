"""A document table whose column is named as one a search adds to its results (``score``,
``_distance``) is refused when the store is built, naming the column, on every store and
engine: not at the first ``add``, after the caller has embedded its documents."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hotdata_retrieval.adapters.langchain import HotdataVectorStore as LangChainStore
from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore as LlamaIndexStore
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.checks import RESERVED_COLUMNS
from hotdata_retrieval.errors import PlanError
from tests.document_engines import fresh_table, open_document_engine


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


@pytest.fixture(params=["local", "sqlite", "duckdb"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    engine = open_document_engine(request.param, tmp_path, request)
    yield engine
    engine.close()


@pytest.mark.parametrize("reserved", RESERVED_COLUMNS)
@pytest.mark.parametrize("store", STORES)
def test_a_reserved_filter_column_is_refused_when_the_store_is_built(
    engine: Any, store: str, reserved: str
) -> None:
    table = fresh_table()
    with pytest.raises(
        PlanError, match=f"column {re.escape(repr(reserved))} is reserved"
    ) as caught:
        STORES[store](engine, table, filter_columns={reserved: "string"})
    assert caught.value.field == "filter_columns" and caught.value.value == reserved
    assert table not in engine.tables


@pytest.mark.parametrize("reserved", RESERVED_COLUMNS)
@pytest.mark.parametrize("label", ["id_column", "text_column", "metadata_column", "vector_column"])
def test_a_reserved_fixed_column_is_refused_when_the_store_is_built(
    engine: Any, label: str, reserved: str
) -> None:
    with pytest.raises(PlanError, match=f"{label}: column {re.escape(repr(reserved))}"):
        DocumentStore(engine, fresh_table(), **{label: reserved})


def test_a_column_named_otherwise_is_kept(engine: Any) -> None:
    store = DocumentStore(engine, fresh_table(), filter_columns={"scores": "string"})
    store.add(["a"], ["red fox"], [[1.0, 0.0]], [{"scores": "high"}])
    assert [document.metadata["scores"] for document in store.get(["a"])] == ["high"]
