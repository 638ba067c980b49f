"""A door's constructor given a setting of the wrong type (a text where a list is wanted,
text where a number is) raises the library's typed error naming the setting and the value,
never a raw pydantic, attribute or type error."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters.langchain import HotdataRetriever
from hotdata_retrieval.adapters.langchain import HotdataVectorStore as LangChainStore
from hotdata_retrieval.adapters.llamaindex import HotdataBM25Retriever, HotdataHybridRetriever
from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore as LlamaIndexStore
from hotdata_retrieval.adapters.mcp import create_server
from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.plan.names import TableName


class _Embeddings:
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


@pytest.fixture(scope="module")
def engine() -> Any:
    engine = LocalEngine()
    engine.load_table(
        "docs", pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]}), text_columns=["body"]
    )
    yield engine
    engine.close()


RETRIEVER_CASES = [
    ("columns", "body"),
    ("queries", "fox"),
    ("k", "3"),
    ("text_column", ["body"]),
    ("key_column", 1),
    ("explain_scores", 1),
    ("highlight", "yes"),
    ("candidates", "5"),
    ("top_n", "3"),
    ("diversity", "x"),
    ("input_limits", 5),
]


@pytest.mark.parametrize(("name", "value"), RETRIEVER_CASES)
def test_the_langchain_retriever_names_a_wrongly_typed_setting(
    engine: Any, name: str, value: Any
) -> None:
    with pytest.raises(
        HotdataRetrievalError, match=f"{name} must be .*got {re.escape(repr(value))}"
    ) as caught:
        HotdataRetriever(engine=engine, table="docs", **{name: value})
    assert caught.value.field == name and caught.value.value == value  # type: ignore[attr-defined]


def test_the_langchain_retriever_without_a_table_is_the_library_s_error(engine: Any) -> None:
    with pytest.raises(HotdataRetrievalError, match="give the table to search"):
        HotdataRetriever(engine=engine)


SETTINGS_CASES = [
    ("columns", 3),
    ("columns", [1, 2]),
    ("filter_columns", 3),
    ("text_column", ["body"]),
    ("vector_column", 2),
    ("key_column", 1),
    ("read_only", "no"),
    ("semantic", "no"),
    ("sql", 1),
    ("candidates", "5"),
    ("top_n", "3"),
    ("fragment_size", "3"),
    ("fragments", "2"),
    ("descriptions", "x"),
]


@pytest.mark.parametrize(("name", "value"), SETTINGS_CASES)
def test_the_shared_settings_name_a_wrongly_typed_setting(name: str, value: Any) -> None:
    with pytest.raises(HotdataRetrievalError, match=f"{name} must"):
        SearchSettings(table="docs", **{name: value})


def _stores(engine: Any) -> list[Callable[..., Any]]:
    return [
        lambda **options: DocumentStore(engine, "notes", **options),
        lambda **options: LangChainStore(engine, "notes", _Embeddings(), **options),  # type: ignore[arg-type]
        lambda **options: LlamaIndexStore(engine, "notes", **options),
    ]


@pytest.mark.parametrize(("name", "value"), [("filter_columns", ["author"]), ("vector_index", 3)])
@pytest.mark.parametrize("door", range(3))
def test_the_document_stores_name_a_wrongly_typed_setting(
    engine: Any, door: int, name: str, value: Any
) -> None:
    with pytest.raises(HotdataRetrievalError, match=f"{name} must .*{re.escape(repr(value))}"):
        _stores(engine)[door](**{name: value})


def test_the_document_store_names_wrong_input_limits(engine: Any) -> None:
    with pytest.raises(HotdataRetrievalError, match=r"input_limits must .*'x'"):
        DocumentStore(engine, "notes", input_limits="x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda store: HotdataBM25Retriever(3), "vector_store"),  # type: ignore[arg-type]
        (lambda store: HotdataBM25Retriever(store, filters="x"), "filters"),  # type: ignore[arg-type]
        (lambda store: HotdataHybridRetriever(store, alpha="x"), "alpha"),  # type: ignore[arg-type]
    ],
)
def test_the_llamaindex_retrievers_name_a_wrongly_typed_setting(
    engine: Any, make: Callable[[Any], Any], name: str
) -> None:
    with pytest.raises(HotdataRetrievalError, match=f"{name} must"):
        make(LlamaIndexStore(engine, "notes"))


@pytest.mark.parametrize(("name", "value"), [("name", 3), ("log_level", 3)])
def test_the_mcp_server_names_a_wrongly_typed_setting(engine: Any, name: str, value: Any) -> None:
    with pytest.raises(HotdataRetrievalError, match=f"{name} must .*{re.escape(repr(value))}"):
        create_server(engine, table="docs", **{name: value})


@pytest.mark.parametrize("table", ["docs", TableName.parse("docs")], ids=["text", "TableName"])
def test_the_retriever_and_the_settings_take_a_table_alike(engine: Any, table: Any) -> None:
    """A table named by text or as a :class:`TableName`: the settings take both, and so
    does the retriever, which searches the same rows either way."""
    settings = SearchSettings(table=table)
    retriever = HotdataRetriever(engine=engine, table=table, k=2)
    shared = HotdataRetriever(engine=engine, settings=settings, k=2)
    assert [document.id for document in retriever.invoke("fox")] == [
        document.id for document in shared.invoke("fox")
    ]
    for door in (lambda: SearchSettings(table=3), lambda: HotdataRetriever(engine=engine, table=3)):
        with pytest.raises(HotdataRetrievalError, match=r"table must be .*3"):
            door()
