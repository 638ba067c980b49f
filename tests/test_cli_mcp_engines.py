"""``hdq mcp --engine`` over each store and over the Hotdata engine (the fake REST API of
``tests/hotdata_api.py``), through the SDK's client over stdio: the search tool returns the
``--columns`` chosen and honours a model's filter, and a write through the SQL tool is refused
with the row count unchanged (the Hotdata engine offers no SQL tool, and says why)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from hotdata_retrieval.cli import main
from hotdata_retrieval.engines.registry import engine_kind

pytestmark = pytest.mark.anyio

ROWS = [
    {"id": 1, "body": "the upgrade failed with error E1234", "lang": "en"},
    {"id": 2, "body": "error after the upgrade of the app", "lang": "fr"},
    {"id": 3, "body": "billing page is slow", "lang": "fr"},
    {"id": 4, "body": "error on the billing page after the upgrade", "lang": "en"},
]
COMMAND = "from hotdata_retrieval.cli.mcp import mcp; mcp()"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _loaded(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    source = tmp_path / "tickets.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    if engine == "postgres":
        database = request.getfixturevalue("postgres_url")
    else:
        database = str(tmp_path / f"store-{engine}")
    loaded = CliRunner().invoke(
        main,
        [
            "load",
            str(source),
            "--engine",
            engine,
            "--database",
            database,
            "--embedder",
            "hashing",
            "--replace",
            "--text-column",
            "body",
        ],
    )
    assert loaded.exit_code == 0, loaded.output
    return database


def _hotdata_server(api: Any, api_key: str, *options: str) -> StdioServerParameters:
    """``hdq mcp --engine hotdata --table tickets`` (and ``options``) over the fake API ``api``,
    configured from the environment."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", COMMAND, "--engine", "hotdata", "--table", "tickets", *options],
        env={
            "HOTDATA_API_KEY": api_key,
            "HOTDATA_API_URL": api.url,
            "HOTDATA_WORKSPACE": "ws_mcp",
            "HOTDATA_DATABASE": api.database_id,
        },
    )


def _document(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    return dict(result.structured_content)


@pytest.mark.parametrize("engine", ["sqlite", "duckdb", "postgres", "lancedb"])
async def test_hdq_mcp_serves_each_store_with_its_columns_and_filters(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = _loaded(engine, tmp_path, request)
    parameters = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            COMMAND,
            "--engine",
            engine,
            "--database",
            database,
            "--table",
            "tickets",
            "--columns",
            "id,lang",
        ],
    )
    async with Client(parameters) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        found = _document(
            await client.call_tool(
                "hotdata_search_text",
                {"query": "error upgrade", "k": 10, "filter": {"lang": "en"}},
            )
        )
        if "hotdata_execute_sql" in names:
            before = _document(
                await client.call_tool(
                    "hotdata_execute_sql", {"sql": "SELECT count(*) AS n FROM tickets"}
                )
            )
            refused = await client.call_tool(
                "hotdata_execute_sql", {"sql": "DELETE FROM tickets WHERE id = 1"}
            )
            after = _document(
                await client.call_tool(
                    "hotdata_execute_sql", {"sql": "SELECT count(*) AS n FROM tickets"}
                )
            )
            assert refused.is_error is True
            assert before["rows"] == after["rows"] == [{"n": len(ROWS)}]
    kind = engine_kind(engine)
    assert ("hotdata_execute_sql" in names) == (kind.dialect is not None)
    # the model hdq load recorded embeds queries: the text search fuses with the vectors
    assert "hotdata_search_semantic" in names
    # reciprocal rank fusion (rank constant 60) of both branches, not a BM25 score
    assert all(1 / 61 < row["score"] <= 2 / 61 for row in found["rows"])
    assert {row["id"] for row in found["rows"]} == {1, 4}
    for row in found["rows"]:
        assert row["lang"] == "en"
        assert "body" not in row


async def test_hdq_mcp_serves_the_hotdata_engine_from_the_environment(tmp_path: Path) -> None:
    pytest.importorskip("hotdata_framework")
    import pyarrow as pa

    from hotdata_retrieval.engines.hotdata import HotdataEngine
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    api_key = "secret-key-for-mcp"
    rows = pa.table({name: [row[name] for row in ROWS] for name in ("id", "body", "lang")})
    with LocalEngine(tmp_path / "behind-the-api") as local:
        local.load_table("tickets", rows, text_columns=["body"])
        with FakeHotdataApi(local, api_key=api_key, workspace_id="ws_mcp") as api:
            api.index_engine_table("tickets")
            parameters = _hotdata_server(api, api_key)
            async with Client(parameters) as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                everything = _document(
                    await client.call_tool("hotdata_search_text", {"query": "upgrade", "k": 10})
                )
                narrowed = _document(
                    await client.call_tool(
                        "hotdata_search_text",
                        {"query": "upgrade", "k": 10, "filter": {"lang": "fr"}},
                    )
                )
            served = [query for query in api.queries if "bm25_search" in query]
    assert list(tools) == ["hotdata_search_text"]
    assert HotdataEngine.agent_sql_refusal in tools["hotdata_search_text"].description
    # every row whose body holds the word, and of those the French ones
    assert {row["id"] for row in everything["rows"]} == {
        row["id"] for row in ROWS if "upgrade" in row["body"].split()
    }
    assert {row["id"] for row in narrowed["rows"]} == {
        row["id"] for row in ROWS if "upgrade" in row["body"].split() and row["lang"] == "fr"
    }
    assert {row["id"] for row in narrowed["rows"]} < {row["id"] for row in everything["rows"]}
    assert len(served) == 2  # both searches ran on the engine, through the API


@pytest.mark.parametrize("embedder", [None, "hashing"])
async def test_hdq_mcp_embeds_queries_with_the_model_embedder_names(
    embedder: str | None, tmp_path: Path
) -> None:
    """The Hotdata engine records no model for a plain vector index: without ``--embedder``
    the server offers BM25 alone; with it, the semantic tool too and a text search that fuses
    both branches (each hit's reciprocal rank fusion score, rank constant 60)."""
    pytest.importorskip("hotdata_framework")
    import pyarrow as pa

    from hotdata_retrieval.embed import HashingEmbedder
    from hotdata_retrieval.engines.local import LocalEngine
    from tests.hotdata_api import FakeHotdataApi

    api_key = "secret-key-for-mcp"
    bodies = [row["body"] for row in ROWS]
    vectors = pa.array(HashingEmbedder().embed_documents(bodies), pa.list_(pa.float32()))
    rows = pa.table({"id": [row["id"] for row in ROWS], "body": bodies, "embedding": vectors})
    with LocalEngine(tmp_path / "behind-the-api") as local:
        local.load_table("tickets", rows, text_columns=["body"])
        with FakeHotdataApi(local, api_key=api_key, workspace_id="ws_mcp") as api:
            api.index_engine_table("tickets")
            api.add_index("tickets", index_type="vector", columns=["embedding"], metric="cosine")
            chosen = [] if embedder is None else ["--embedder", embedder]
            parameters = _hotdata_server(api, api_key, *chosen)
            async with Client(parameters) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                found = _document(
                    await client.call_tool("hotdata_search_text", {"query": "upgrade", "k": 10})
                )
    scores = [row["score"] for row in found["rows"]]
    if embedder is None:
        assert names == ["hotdata_search_text"]
        assert all(score > 2 / 61 for score in scores)  # BM25 scores, not fused
    else:
        assert names == ["hotdata_search_text", "hotdata_search_semantic"]
        assert len(scores) == len(ROWS)  # the vector branch ranks every row
        assert all(1 / 64 <= score <= 2 / 61 for score in scores)


def test_hdq_mcp_refuses_an_embedder_that_contradicts_the_recorded_model(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = _loaded("sqlite", tmp_path, request)
    refused = CliRunner().invoke(
        main,
        [
            *("mcp", "--engine", "sqlite", "--database", database, "--table", "tickets"),
            *("--embedder", "default"),
        ],
    )
    assert refused.exit_code != 0
    assert "--embedder default embeds with" in refused.stderr
    assert "leave --embedder out" in refused.stderr
