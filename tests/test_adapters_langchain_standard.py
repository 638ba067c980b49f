"""LangChain's standard test suites (langchain-tests) on the local engine: ToolsUnitTests and
ToolsIntegrationTests for the tools, RetrieversIntegrationTests for the retriever."""

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
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

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


class TestRetrieverIntegration(_OnTheLocalEngine, RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[HotdataRetriever]:
        return HotdataRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"engine": self.engine, "table": "docs"}

    @property
    def retriever_query_example(self) -> str:
        return "the app crashes on start"
