"""A document store's ``filter_columns`` of a type the engine cannot store are refused when
the store is built, not at its first ``add`` (after the caller has embedded the documents):
``list<string>`` on SQLite, ``duration[s]`` on the SQL stores and turbopuffer. The reference
is the engine's own load of a table holding such a column, made as a store's first add makes
it: the store refuses exactly the types that load refuses, on every engine a document table
runs on, and a type it accepts is written and read back by its first add."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, open_document_engine

VALUES: dict[str, Any] = {
    "string": "en",
    "int64": 7,
    "float16": 0.5,
    "bool": True,
    "timestamp[us]": datetime.datetime(2026, 1, 2, 3, 4, 5),
    "date32": datetime.date(2026, 1, 2),
    "duration[s]": datetime.timedelta(seconds=5),
    "list<string>": ["a", "b"],
    "list<int64>": [1, 2],
}
"""Each filter column type the test declares, and a value of it."""

IN_METADATA = {
    "timestamp[us]": "2026-01-02T03:04:05",
    "date32": "2026-01-02",
    "duration[s]": 5,
}
"""The metadata (JSON) spelling of the values that are no JSON value."""


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    yield opened
    opened.close()


@pytest.fixture(scope="module", params=[name for name in DOCUMENT_ENGINES if name != "hotdata"])
def typed_engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    """Every document engine that knows its columns' types: the Hotdata engine's tables
    send their filters to its DataFusion as written (docs/plans.md)."""
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    yield opened
    opened.close()


def _arrow_type(name: str) -> pa.DataType:
    if name.startswith("list<"):
        return pa.list_(pa.type_for_alias(name[5:-1]))
    return pa.type_for_alias(name)


@pytest.mark.parametrize("kind", list(VALUES))
def test_a_filter_column_the_engine_cannot_store_is_refused_when_the_store_is_built(
    engine: Any, kind: str
) -> None:
    from hotdata_retrieval.engines.local import TableLoad

    rows = pa.table(
        {
            "id": ["a"],
            "text": ["red fox"],
            "embedding": pa.array([[1.0, 0.0]], pa.list_(pa.float32(), 2)),
            "f": pa.array([VALUES[kind]], _arrow_type(kind)),
        }
    )
    loaded = fresh_table()
    try:
        engine.upsert_rows(
            loaded, rows, create=TableLoad(name=loaded, data=rows, key_column="id",
                                           text_columns=("text",))
        )  # fmt: skip
    except HotdataRetrievalError:
        engine_refuses = True
    else:
        engine_refuses = False
    table = fresh_table()
    if engine_refuses:
        with pytest.raises(PlanError, match=r"filter_columns: column 'f'") as caught:
            DocumentStore(engine, table, filter_columns={"f": kind})
        assert caught.value.field == "filter_columns"
        assert table not in engine.tables
        return
    store = DocumentStore(engine, table, filter_columns={"f": kind})
    store.add(["a"], ["red fox"], [[1.0, 0.0]], [{"f": IN_METADATA.get(kind, VALUES[kind])}])
    assert [document.id for document in store.get(["a"])] == ["a"]


@pytest.mark.parametrize("kind", ["timestamp[us]", "timestamp[us, tz=UTC]", "date32"])
def test_metadata_text_fills_a_date_or_timestamp_filter_column(
    typed_engine: Any, kind: str
) -> None:
    """JSON has no dates, so metadata spells them as ISO text: a timestamp with an offset is
    its UTC moment and a date its midnight. The reference is Python's own ``datetime``."""
    arrow_kind = (
        pa.timestamp("us", tz="UTC") if kind == "timestamp[us, tz=UTC]" else _arrow_type(kind)
    )
    spelled = {
        "a": "2026-01-02T05:04:05+02:00",
        "b": "2026-01-02T04:00:00",
        "c": "2026-01-03",
        "d": None,
    }
    if kind == "date32":
        spelled = {"a": "2026-01-01", "b": "2026-01-02", "c": "2026-01-03", "d": None}
    store = DocumentStore(typed_engine, fresh_table(), filter_columns={"f": arrow_kind})
    store.add(
        list(spelled),
        [f"red fox {key}" for key in spelled],
        [[1.0, float(position)] for position in range(len(spelled))],
        [{} if text is None else {"f": text} for text in spelled.values()],
    )

    def moment(text: str) -> datetime.datetime:
        value = datetime.datetime.fromisoformat(text)
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value

    bound = "2026-01-02T03:30:00" if kind != "date32" else "2026-01-02"
    expected = sorted(
        key for key, text in spelled.items() if text is not None and moment(text) < moment(bound)
    )
    found = store.ids_matching(f"f < {'DATE' if kind == 'date32' else 'TIMESTAMP'} '{bound}'")
    assert sorted(found) == expected


_PAST_MICROSECONDS = (
    r"its fraction of a second has {} digits, and a timestamp holds at most 6 \(microseconds\)"
)
"""What a refusal of a fraction of more than six digits says (the digits counted by hand)."""


@pytest.mark.parametrize(
    ("kind", "value", "words"),
    [
        (pa.timestamp("us"), 1704067200, "takes ISO 8601 text"),
        (pa.timestamp("s"), 1704067200.0, "takes ISO 8601 text"),
        (pa.date32(), 19723, "takes ISO 8601 text"),
        (pa.timestamp("s"), "2024-01-02T00:00:00.5", "finer than its filter column"),
        (pa.timestamp("ms"), "2024-01-02T00:00:00.0005", "finer than its filter column"),
        (pa.timestamp("us"), "2024-01-02T00:00:00.1234567", _PAST_MICROSECONDS.format(7)),
        (pa.timestamp("ns"), "2024-01-02T00:00:00.123456789Z", _PAST_MICROSECONDS.format(9)),
        (pa.timestamp("s"), "2024-01-02T00:00:00.0000000", _PAST_MICROSECONDS.format(7)),
    ],
)
def test_metadata_a_date_or_timestamp_column_would_change_is_refused(
    typed_engine: Any, kind: pa.DataType, value: Any, words: str
) -> None:
    """A number for a date or timestamp column would be read in the column's unit (seconds,
    microseconds or days: 1704067200 is 2024 in seconds and 1970 in microseconds), and a
    fraction finer than the column's unit would be cut: both are refused, naming the
    document, and nothing is written. A fraction of more than six digits is in no ISO form
    a filter reads (a timestamp holds microseconds): its refusal names that limit, on a
    column of nanoseconds too (before, it said only that the column could not hold it)."""
    table = fresh_table()
    store = DocumentStore(typed_engine, table, filter_columns={"f": kind})
    with pytest.raises(PlanError, match=words) as caught:
        store.add(["a"], ["red fox"], [[1.0, 0.0]], [{"f": value}])
    assert caught.value.field == "metadatas" and caught.value.value == "a"
    assert table not in typed_engine.tables


def test_metadata_as_fine_as_its_column_is_kept() -> None:
    """The fraction a column holds is kept to the microsecond (the reference: Python's
    datetime of the same text)."""
    from hotdata_retrieval.engines.local import LocalEngine

    with LocalEngine() as local:
        store = DocumentStore(local, "fine", filter_columns={"f": pa.timestamp("us")})
        store.add(["a"], ["red fox"], [[1.0, 0.0]], [{"f": "2024-01-02T00:00:00.123456"}])
        stored = local.read_table("fine", ["f"]).column("f").to_pylist()
    assert stored == [datetime.datetime(2024, 1, 2, 0, 0, 0, 123456)]


UNUSABLE: dict[str, pa.DataType] = {
    "null": pa.null(),
    "list<null>": pa.list_(pa.null()),
    "list<list<null>>": pa.list_(pa.list_(pa.null())),
    "struct<>": pa.struct([]),
    "struct<a: int64>": pa.struct([("a", pa.int64())]),
    "list<struct<a: string>>": pa.list_(pa.struct([("a", pa.string())])),
    "map<string, int64>": pa.map_(pa.string(), pa.int64()),
}
"""Filter column types no engine can filter on: no engine stores the first four (Arrow's null
type inside, a struct of no field), and a filter compares a column's values, never a field of
a struct or map (SQLite, DuckDB, PostgreSQL and turbopuffer hold none; the local engine and
LanceDB hold them but have no filter of one)."""


@pytest.mark.parametrize("kind", list(UNUSABLE))
def test_a_filter_column_no_filter_can_use_is_refused_alike_when_the_store_is_built(
    engine: Any, kind: str
) -> None:
    """Refused on every engine with one message, the engine's name in none of it (before,
    the local engine and LanceDB took ``null``, ``list<null>`` and structs, their first add
    then refused the null type with the load's error and Parquet's for ``struct<>``, or wrote
    a column no filter could use); nothing is created."""
    table = fresh_table()
    arrow_kind = UNUSABLE[kind]
    with pytest.raises(PlanError) as caught:
        DocumentStore(engine, table, filter_columns={"f": arrow_kind})
    message = str(caught.value)
    assert message.startswith(f"filter_columns: column 'f' has Arrow type {arrow_kind}")
    engines = ("sqlite", "duckdb", "postgres", "lancedb", "turbopuffer", "local engine")
    assert not any(word in message.lower() for word in engines)
    assert caught.value.field == "filter_columns"
    assert table not in engine.tables
