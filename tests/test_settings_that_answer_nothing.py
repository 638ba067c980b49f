"""Settings under which no search could ever be answered are refused when they are built, at
every door that takes them, with a ``ToolError`` naming the fields.

Before: ``group_by`` beside ``highlight``, ``diversity`` or a ``reranker`` (each applies to
every search, and a grouped search's rows are groups, which no step reads), or a
``max_rows`` past a signed 64-bit integer (every fused search's depth), built tools whose
every call failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.adapters import SearchSettings, SearchToolkit
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import ToolError


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as opened:
        rows = pa.table(
            {
                "id": list(range(9)),
                "body": [f"fox number {i} sky" for i in range(9)],
                "doc": [i // 3 for i in range(9)],
            }
        )
        opened.load_table("docs", rows, text_columns=["body"], embed_columns=["body"])
        yield opened


class _Reranker:
    """A reranker that keeps the order (its scores fall with the position)."""

    name = "keep"

    def score(self, pairs: list[tuple[str, str]]) -> list[float]:
        return [-float(position) for position in range(len(pairs))]


STEPS: list[tuple[str, dict[str, Any]]] = [
    ("highlight", {"highlight": True}),
    ("diversity", {"diversity": 0.5}),
    ("reranker", {"reranker": _Reranker()}),
]


@pytest.mark.parametrize(("named", "options"), STEPS)
def test_grouping_and_a_step_on_every_search_are_refused_together(
    engine: LocalEngine, named: str, options: dict[str, Any]
) -> None:
    with pytest.raises(ToolError, match=f"group_by groups every search, and {named}"):
        SearchSettings(table="docs", group_by="doc", **options)
    grouped = SearchToolkit(engine, SearchSettings(table="docs", group_by="doc"))
    assert len(grouped.search_text("fox sky", k=2)["rows"]) == 2  # each alone answers
    stepped = SearchToolkit(engine, SearchSettings(table="docs", **options))
    assert len(stepped.search_text("fox sky", k=2)["rows"]) == 2


@pytest.mark.parametrize("door", ["tools", "mcp", "ddn"])
def test_each_door_refuses_them_as_it_builds(engine: LocalEngine, door: str) -> None:
    if door == "tools":
        from hotdata_retrieval.adapters.langchain import make_search_tools as build
    elif door == "mcp":
        from hotdata_retrieval.adapters.mcp import create_server as build
    else:
        from hotdata_retrieval.adapters.ddn import create_app as build
    with pytest.raises(ToolError, match="group_by groups every search"):
        build(engine, table="docs", group_by="doc", highlight=True)
    with pytest.raises(ToolError, match="max_rows must be at most"):
        build(engine, table="docs", max_rows=2**63)


def test_the_largest_64_bit_ceiling_is_taken(engine: LocalEngine) -> None:
    toolkit = SearchToolkit(engine, SearchSettings(table="docs", max_rows=2**63 - 1, k=3))
    assert len(toolkit.search_text("fox sky")["rows"]) == 3
