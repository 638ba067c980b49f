"""LangChain's standard test suites (langchain-tests): ToolsUnitTests and
ToolsIntegrationTests for the tools on the local engine, RetrieversIntegrationTests for the
retriever on every engine a document table runs on (the local engine, SQLite, DuckDB,
PostgreSQL, LanceDB, turbopuffer and Hotdata over their fake APIs).

The retriever's table holds the same rows on each engine: the bodies with a BM25 index and
their vectors, which the engine lists as a vector index; searched with the embedder at hand,
a search fuses BM25 with the nearest vectors (routing ``auto``) and returns ``k`` documents.
A search by BM25 alone returns the documents that hold a word of the query, on every engine
the same ones, the local engine's included: the standard suite's example query is held by two
documents, so its ``k=3`` is not reached that way on any engine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from langchain_core.tools import BaseTool
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    ToolsIntegrationTests,
)
from langchain_tests.unit_tests import ToolsUnitTests

from hotdata_retrieval.adapters.langchain import (
    HotdataRetriever,
    make_semantic_search_tool,
    make_sql_tool,
    make_text_search_tool,
)
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from tests.document_engines import DOCUMENT_ENGINES, open_document_engine

pytestmark = pytest.mark.anyio

BODIES = [
    "the app crashes on start",
    "charged twice for one order",
    "password reset mail never arrives",
    "sync fails with error E1234",
    "refund for a cancelled plan",
    "crash when opening the settings",
]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    rows = pa.table({"id": list(range(1, len(BODIES) + 1)), "body": BODIES})
    with LocalEngine(embedder=HashingEmbedder(dimensions=64)) as local:
        local.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield local


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _OnTheLocalEngine:
    @pytest.fixture(autouse=True)
    def _local_engine(self, engine: LocalEngine) -> None:
        self.engine = engine


class TestTextSearchToolUnit(_OnTheLocalEngine, ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return make_text_search_tool(self.engine, table="docs")

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": "the app crashes", "k": 3}


class TestSemanticSearchToolUnit(_OnTheLocalEngine, ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return make_semantic_search_tool(self.engine, table="docs")

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": "program quits unexpectedly"}


class TestSqlToolUnit(_OnTheLocalEngine, ToolsUnitTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return make_sql_tool(self.engine, table="docs")

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"sql": "SELECT COUNT(*) AS n FROM default.public.docs"}


class TestTextSearchToolIntegration(_OnTheLocalEngine, ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return make_text_search_tool(self.engine, table="docs")

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": "the app crashes", "k": 3}


class TestSqlToolIntegration(_OnTheLocalEngine, ToolsIntegrationTests):
    @property
    def tool_constructor(self) -> BaseTool:
        return make_sql_tool(self.engine, table="docs")

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"sql": "SELECT COUNT(*) AS n FROM default.public.docs"}


EMBEDDER = HashingEmbedder(dimensions=64)


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def document_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """An engine of each kind with ``tickets``: ids ``"1"`` to ``"6"``, the bodies
    (BM25-indexed) and their vectors, kept as a document table. The local engine lists the
    vector columns it embedded, so there it embeds the bodies at load; on Hotdata the table
    has a plain vector index, since its routing reads the control plane's index listing."""
    name = request.param
    directory = tmp_path_factory.mktemp(f"retriever-{name}")
    keys = [str(i) for i in range(1, len(BODIES) + 1)]
    if name == "local":
        opened: Any = LocalEngine(directory / "local", embedder=EMBEDDER)
        rows = pa.table({"id": keys, "text": BODIES})
        opened.load_table("tickets", rows, text_columns=["text"], embed_columns=["text"])
    else:
        opened = open_document_engine(name, directory, request)
        store = DocumentStore(opened, "tickets", vector_index="hnsw" if name == "hotdata" else None)
        store.add(keys, BODIES, EMBEDDER.embed_documents(BODIES))
    yield opened
    opened.close()


class TestRetrieverIntegration(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _document_engine(self, document_engine: Any) -> None:
        self.engine = document_engine

    @property
    def retriever_constructor(self) -> type[HotdataRetriever]:
        return HotdataRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine, "table": "tickets", "embedder": EMBEDDER}

    @property
    def retriever_query_example(self) -> str:
        return "the app crashes on start"


def test_the_retriever_fuses_on_every_engine_and_bm25_alone_returns_the_documents_holding_a_word(
    document_engine: Any,
) -> None:
    fused = HotdataRetriever(engine=document_engine, table="tickets", embedder=EMBEDDER, k=3)
    assert len(fused.invoke("the app crashes on start")) == 3
    assert len(fused.plan("crash").branches) == 2  # BM25 fused with the nearest vectors
    words = HotdataRetriever(engine=document_engine, table="tickets", mode="text", k=3)
    found = words.invoke("the app crashes on start")
    # "app", "crash" and "start" (stemmed, stop words out): two bodies hold one of them
    assert sorted(document.id for document in found) == ["1", "6"]
    assert found[0].id == "1"  # it holds all three
