"""The walk of one plan through the local engine's native search, module by module: a
profiler follows every call and return inside the library and records the module ("room")
the search is in after each. The native path builds no SQL (no frame of ``compile/`` or
sqlglot runs unless the caller reads ``SearchResult.sql``), and its back-and-forth between
rooms does not grow with the rows it returns: what it reads of the plan, it reads once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pyarrow as pa
import pytest

import hotdata_retrieval
from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine

ROOT = str(Path(hotdata_retrieval.__file__).parent) + "/"
ROWS = 60
TEXT = Bm25Search(table="docs", column="body", query_text="red fox")
NEAREST = NearestNeighborSearch(table="docs", column="emb", query_vector=[1.0, 2.0, 0.5])
FILTER = Comparison(column="year", operator=">=", value=2005)

SHAPES: dict[str, dict[str, Any]] = {
    "text": {"source": TEXT},
    "nearest, filtered": {"source": NEAREST, "filter": FILTER},
    "rrf": {"source": ReciprocalRankFusion(branches=[TEXT, NEAREST])},
    "rrf, filtered": {"source": ReciprocalRankFusion(branches=[TEXT, NEAREST]), "filter": FILTER},
    "min-max, branch scores": {
        "source": MinMaxFusion(branches=[TEXT, NEAREST]),
        "include_branch_scores": True,
    },
}


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    table = pa.table(
        {
            "id": list(range(ROWS)),
            "body": [f"fox {'red' if i % 3 else 'blue'} {i % 5}" for i in range(ROWS)],
            "year": [2000 + i for i in range(ROWS)],
            "emb": pa.array(
                [[1.0, float(i % 6), float(i % 4)] for i in range(ROWS)], pa.list_(pa.float32())
            ),
        }
    )
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as opened:
        opened.load_table("docs", table, key_column="id", text_columns=["body"])
        yield opened


def _room(frame: FrameType | None) -> str | None:
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    if "/sqlglot/" in filename:
        return "sqlglot"
    if not filename.startswith(ROOT):
        return None  # another library's frames leave the walk where it was
    return filename[len(ROOT) :].removesuffix(".py")


def walk(engine: LocalEngine, plan: SearchPlan) -> list[str]:
    """The rooms one warm search of ``plan`` passes through, consecutive repeats merged."""
    engine.search(plan)  # warm: caches filled, as for every search after the first
    rooms: list[str] = []

    def follow(frame: FrameType, event: str, _: Any) -> None:
        if event == "call":
            room = _room(frame)
        elif event == "return":
            room = _room(frame.f_back)
        else:
            return
        if room is not None and (not rooms or rooms[-1] != room):
            rooms.append(room)

    sys.setprofile(follow)
    try:
        result = engine.search(plan)
    finally:
        sys.setprofile(None)
    assert len(result.hits) == plan.limit  # the native path answered in full
    return rooms


def returns(rooms: list[str]) -> int:
    """How often the walk comes back to a room it has left."""
    return sum(1 for index, room in enumerate(rooms) if room in rooms[:index])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_native_search_builds_no_sql(engine: LocalEngine, shape: str) -> None:
    rooms = walk(engine, SearchPlan(limit=5, **SHAPES[shape]))
    assert "engines/local/native" in rooms
    assert [room for room in rooms if room == "sqlglot" or room.startswith("compile/")] == []


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_walk_does_not_grow_with_the_page(engine: LocalEngine, shape: str) -> None:
    # Measured on a fused, filtered plan: 192 returns to a room left for a page of 5 rows and
    # 282 for 20 (six per row: each row read the plan's branches and debug columns again),
    # 164 for either since.
    short = walk(engine, SearchPlan(limit=2, **SHAPES[shape]))
    long = walk(engine, SearchPlan(limit=20, **SHAPES[shape]))
    assert returns(long) == returns(short)
    assert len(long) == len(short)


def test_the_walk_counts_a_room_left_and_entered_again() -> None:
    assert returns(["a", "b", "a", "c", "b"]) == 2
    assert returns(["a", "b", "c"]) == 0
