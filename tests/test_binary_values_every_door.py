"""A binary column's values are shown in base64 (RFC 4648) by every door and by ``hdq
search`` (its JSON and its table), never as Python's ``b'...'``. The reference is Python's own
base64 encoding of the values loaded."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from hotdata_retrieval.adapters.langchain import HotdataRetriever
from hotdata_retrieval.adapters.langchain import make_search_tools as langchain_tools
from hotdata_retrieval.adapters.llamaindex import make_search_tools as llamaindex_tools
from tests.door_tables import hdq_search, rows_by_key

BLOBS = [b"\x00\xff\x10", b"hi there", b"\x80"]
ROWS = {"id": [1, 2, 3], "body": ["red fox", "red car", "red sky"], "blob": BLOBS}
EXPECTED = {key: base64.b64encode(blob).decode("ascii") for key, blob in zip(ROWS["id"], BLOBS)}


def _by_key(rows: list[dict[str, Any]]) -> dict[int, Any]:
    return rows_by_key(rows, "blob")


def test_the_tools_write_base64(door_engine: Any) -> None:
    engine = door_engine
    (search, sql) = langchain_tools(engine, table="docs", columns=["id", "body", "blob"])
    assert _by_key(json.loads(search.invoke({"query": "red"}))["rows"]) == EXPECTED
    text = sql.invoke({"sql": "SELECT id, blob FROM docs"})
    assert _by_key(json.loads(text)["rows"]) == EXPECTED
    (tool, _sql) = llamaindex_tools(engine, table="docs", columns=["id", "body", "blob"])
    assert _by_key(json.loads(tool.call(query="red").content)["rows"]) == EXPECTED


def test_the_langchain_retriever_s_content_is_base64(door_engine: Any) -> None:
    retriever = HotdataRetriever(
        engine=door_engine, table="docs", mode="text", content_column="blob", columns=["blob"]
    )
    documents = retriever.invoke("red")
    assert {int(document.id): document.page_content for document in documents} == EXPECTED


@pytest.mark.parametrize("output", ["json", "table"])
def test_hdq_search_shows_base64(door_database: Path, output: str) -> None:
    found = hdq_search(door_database, "id,blob", output)
    if output == "json":
        hits = json.loads(found.stdout)["hits"]
        assert {hit["key"]: hit["columns"]["blob"] for hit in hits} == EXPECTED
    else:
        assert "b'" not in found.stdout and 'b"' not in found.stdout
        for shown in EXPECTED.values():
            assert shown in found.stdout
