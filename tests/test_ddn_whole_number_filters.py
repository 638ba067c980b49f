"""The DDN function reads a whole number sent as ``1.0`` for an ``Int64`` equality argument as
the integer 1, as it reads ``top_k`` and as every tool reads ``k`` (JSON Schema's integer).

Before: ``tier: 1.0`` was refused (``argument 'tier' takes an Int64, got 1.0``) while
``top_k: 5.0`` was 5 on the same function, and the tools' filter ``{"tier": 1.0}`` matched
the rows of tier 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from starlette.testclient import TestClient

from hotdata_retrieval.adapters import SearchToolkit
from hotdata_retrieval.adapters.ddn import create_app
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as opened:
        rows = pa.table(
            {
                "id": list(range(9)),
                "body": [f"fox {i} sky" for i in range(9)],
                "tier": [i % 3 for i in range(9)],
            }
        )
        opened.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield opened


def _query(client: TestClient, tier: Any) -> Any:
    arguments = {"query": "fox", "top_k": 5.0, "tier": tier}
    body = {
        "collection": "search_documents",
        "arguments": {name: {"type": "literal", "value": v} for name, v in arguments.items()},
        "query": {"fields": {"__value": {"type": "column", "column": "__value"}}},
        "collection_relationships": {},
    }
    return client.post("/query", json=body)


def test_a_whole_number_is_an_int64_argument(engine: LocalEngine) -> None:
    client = TestClient(create_app(engine, table="docs", filter_columns=["tier"]))
    whole = _query(client, 1.0)
    assert whole.status_code == 200, whole.text
    hits = whole.json()[0]["rows"][0]["__value"]
    assert sorted(hit["id"] for hit in hits) == [1, 4, 7]
    assert whole.json() == _query(client, 1).json()
    tools = SearchToolkit(engine, table="docs").search_text("fox", k=5, filter={"tier": 1.0})
    assert sorted(row["id"] for row in tools["rows"]) == [1, 4, 7]


@pytest.mark.parametrize("tier", [1.5, "1", True])
def test_other_values_are_still_refused(engine: LocalEngine, tier: Any) -> None:
    client = TestClient(create_app(engine, table="docs", filter_columns=["tier"]))
    refused = _query(client, tier)
    assert refused.status_code == 400
    assert "argument 'tier' takes an Int64" in refused.json()["message"]
