"""A door never writes a key of its own over a value of the row it returns.

The tools' rows carry the projected columns and add the ranking column, ``explanation`` and
``highlights``; the LangChain retriever's Document metadata adds each branch's rank and raw
score (``text_rank``, ``nearest_distance``, ...) too; the LlamaIndex store adds
``explanation`` to a node's metadata; the DDN function's hits have fixed fields beside the
filter columns. A table column (or a node's metadata key) of such a name used to come back
holding the door's value in place of its own, with nothing said. Each door now refuses it
with a typed error naming the column, before anything runs, and a table whose column is
not projected is searched as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import PlanError, ToolError

EMBEDDER = HashingEmbedder(dimensions=16)
BODIES = ["red fox", "blue fox", "green sky", "grey fox den"]
OWN = {
    "explanation": ["e0", "e1", "e2", "e3"],
    "highlights": ["h0", "h1", "h2", "h3"],
    "text_rank": [100, 101, 102, 103],
    "nearest_distance": [7.5, 7.5, 7.5, 7.5],
}


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=EMBEDDER) as opened:
        columns = {"id": list(range(len(BODIES))), "body": BODIES, **OWN}
        opened.load_table("docs", pa.table(columns), text_columns=["body"], embed_columns=["body"])
        yield opened


@pytest.mark.parametrize(
    ("column", "options"),
    [("explanation", {"explain_scores": True}), ("highlights", {"highlight": True})],
)
def test_a_tool_refuses_a_column_its_row_key_would_replace(
    engine: LocalEngine, column: str, options: dict[str, Any]
) -> None:
    toolkit = SearchToolkit(engine, table="docs", columns=["id", "body", column])
    with pytest.raises(ToolError, match=f"column '{column}' has the name of a key"):
        toolkit.search_text("fox", k=2, **options)
    rows = toolkit.search_text("fox", k=2)["rows"]  # without the option: its own values
    assert [row[column] for row in rows] == [OWN[column][row["id"]] for row in rows]
    plain = SearchToolkit(engine, table="docs").search_text("fox", k=2, **options)["rows"]
    assert all(isinstance(row[column], dict) for row in plain)  # not projected: the door's


@pytest.mark.anyio
async def test_the_mcp_server_refuses_it_as_a_tool_error(engine: LocalEngine) -> None:
    from mcp import Client

    from hotdata_retrieval.adapters.mcp import create_server

    server = create_server(engine, table="docs", columns=["id", "body", "explanation"])
    async with Client(server) as client:
        result = await client.call_tool(
            "hotdata_search_text", {"query": "fox", "explain_scores": True}
        )
        assert result.is_error is True
        assert "column 'explanation' has the name of a key" in result.content[0].text
        answered = await client.call_tool("hotdata_search_text", {"query": "fox"})
        rows = json.loads(answered.content[0].text)["rows"]
        assert [row["explanation"] for row in rows] == [
            OWN["explanation"][row["id"]] for row in rows
        ]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    ("column", "options"),
    [
        ("text_rank", {}),
        ("nearest_distance", {}),
        ("explanation", {"explain_scores": True}),
        ("highlights", {"highlight": True}),
    ],
)
def test_the_retriever_refuses_a_column_its_metadata_key_would_replace(
    engine: LocalEngine, column: str, options: dict[str, Any]
) -> None:
    from hotdata_retrieval.adapters.langchain import HotdataRetriever

    retriever = HotdataRetriever(engine=engine, table="docs", columns=[column], k=2, **options)
    with pytest.raises(PlanError, match=f"column '{column}' has the name of a key") as refused:
        retriever.invoke("fox")
    assert refused.value.field == "columns"
    documents = HotdataRetriever(engine=engine, table="docs", k=2, **options).invoke("fox")
    assert documents and all(column in document.metadata for document in documents)


def test_the_retriever_keeps_a_column_no_key_of_its_own_names(engine: LocalEngine) -> None:
    from hotdata_retrieval.adapters.langchain import HotdataRetriever

    documents = HotdataRetriever(engine=engine, table="docs", columns=["explanation"], k=2).invoke(
        "fox"
    )
    assert [document.metadata["explanation"] for document in documents] == [
        OWN["explanation"][int(document.id)] for document in documents
    ]
    assert all(document.metadata["text_rank"] is not None for document in documents)


def test_the_llamaindex_store_refuses_to_replace_a_nodes_explanation() -> None:
    from llama_index.core.schema import TextNode
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

    from hotdata_retrieval.adapters.llamaindex import HotdataVectorStore

    with LocalEngine() as local:
        store = HotdataVectorStore(local, "nodes")
        store.add(
            [
                TextNode(id_="a", text="red fox", embedding=[1.0, 0.0], metadata={}),
                TextNode(
                    id_="b",
                    text="blue fox",
                    embedding=[0.0, 1.0],
                    metadata={"explanation": "the node's own"},
                ),
            ]
        )
        query = VectorStoreQuery(
            query_str="fox",
            query_embedding=[1.0, 0.2],
            mode=VectorStoreQueryMode.HYBRID,
            similarity_top_k=2,
        )
        with pytest.raises(PlanError, match="node 'b' has metadata 'explanation'"):
            store.query(query, explain_scores=True)
        kept = {node.node_id: node.metadata for node in store.query(query).nodes}
        assert kept["b"]["explanation"] == "the node's own"


@pytest.mark.parametrize("column", ["explanation", "highlights"])
def test_ddn_refuses_a_filter_column_named_as_a_hit_field(engine: LocalEngine, column: str) -> None:
    from hotdata_retrieval.adapters.ddn import create_app

    with pytest.raises(ToolError, match=f"filter column '{column}' has the name of"):
        create_app(engine, table="docs", filter_columns=[column])
