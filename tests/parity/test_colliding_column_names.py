"""Rows with two columns every engine would store under one name — the same name twice, or
names that differ only in case (every engine lower-cases column names) — are refused on every
store with one message naming them, at load and at upsert, before anything is written; the
table loaded before is left as it was. Arrow alone answers such rows with a ``KeyError``
("Field ... exists 2 times in schema"), which reached the caller from every store's load."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.checks import column_names, rows_table
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.routing import SearchRequest
from tests.parity.engines import STORE_ENGINES, bodies_table, loaded_engine

TABLE = "colliding_names"
BODIES = ["disk full", "login slow", "disk fine"]

COLLISIONS = [
    (["id", "body", "body"], r"column 'body' appears twice in the rows"),
    (["id", "id", "body"], r"column 'id' appears twice in the rows"),
    (
        ["id", "body", "Body"],
        r"columns 'body' and 'Body' differ only in case and would be stored as one column 'body'",
    ),
    (
        ["ID", "id", "body"],
        r"columns 'ID' and 'id' differ only in case and would be stored as one column 'id'",
    ),
]


def _rows(names: list[str], keys: list[int]) -> pa.Table:
    """Three columns named ``names``: integer keys, then two string columns."""
    texts = [f"new {key}" for key in keys]
    if names[1].lower() == "id":
        return pa.table([pa.array(keys), pa.array(keys), pa.array(texts)], names=names)
    return pa.table([pa.array(keys), pa.array(texts), pa.array(texts)], names=names)


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from loaded_engine(request, tmp_path_factory, TABLE, bodies_table(BODIES))


def _disk_keys(engine: Any) -> set[int]:
    request = SearchRequest(table=TABLE, query="disk", mode="text")
    return set(engine.search(engine.plan_search(request)).keys)


@pytest.mark.parametrize(("names", "message"), COLLISIONS)
def test_colliding_columns_are_refused_at_load_alike(
    engine: Any, names: list[str], message: str
) -> None:
    with pytest.raises(EngineError, match=message):
        engine.load_table(TABLE, _rows(names, [0, 1]), key_column="id", text_columns=["body"])
    assert _disk_keys(engine) == {0, 2}


@pytest.mark.parametrize(("names", "message"), COLLISIONS)
def test_colliding_columns_are_refused_at_upsert_alike(
    engine: Any, names: list[str], message: str
) -> None:
    with pytest.raises(EngineError, match=message):
        engine.upsert_rows(TABLE, _rows(names, [1, 9]))
    assert _disk_keys(engine) == {0, 2}


def test_distinct_names_are_lower_cased_in_order() -> None:
    schema = pa.schema([("ID", pa.int64()), ("Body Text", pa.string()), ("x", pa.float64())])
    assert column_names(schema) == ["id", "body text", "x"]


@pytest.mark.parametrize(
    "rows",
    [[{"id": 1, "body": "disk"}], {"id": [1], "body": ["disk"]}],
    ids=["list", "dict"],
)
def test_rows_that_are_no_arrow_table_are_refused_alike(engine: Any, rows: Any) -> None:
    message = (
        rf"rows must be an Arrow table \(pyarrow.Table or RecordBatch\), not {type(rows).__name__}"
    )
    with pytest.raises(EngineError, match=message):
        engine.load_table(TABLE, rows, key_column="id", text_columns=["body"])
    with pytest.raises(EngineError, match=message):
        engine.upsert_rows(TABLE, rows)
    assert _disk_keys(engine) == {0, 2}


def test_a_record_batch_is_written_as_its_table() -> None:
    batch = pa.record_batch([pa.array([5]), pa.array(["disk again"])], names=["id", "body"])
    assert rows_table(batch).equals(pa.Table.from_batches([batch]))


def test_a_record_batch_upserts_as_its_table(engine: Any) -> None:
    batch = pa.record_batch([pa.array([7]), pa.array(["disk again"])], names=["id", "body"])
    engine.upsert_rows(TABLE, batch)
    assert _disk_keys(engine) == {0, 2, 7}
    engine.delete_rows(TABLE, [7])
    assert _disk_keys(engine) == {0, 2}
