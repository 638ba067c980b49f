"""A loaded column reads back (``read_table``) with the Arrow type it was loaded with and its
values, on every store, or the store refuses it at load naming the column and the type.

What changes on the way is only what docs/engines.md ("Column types through a store") says a
store does to it: turbopuffer has one attribute type per kind of value (64-bit integers and
floats, a UTC ``datetime``, a fixed-length ``f32`` vector), so it reads a column back as that
type; SQLite has no array type, so it refuses a list column. The types each case names are
the faults this test was written against: an array column of only empty lists or NULLs read
back as Arrow's ``null`` type (DuckDB, PostgreSQL, turbopuffer), a fixed-size vector column as
a variable list (the SQL stores), a list of integers taken for a vector column (the local
engine), an empty time-zone-aware timestamp column without its zone (turbopuffer). A
timestamp finer than turbopuffer's milliseconds is refused there naming the value
(``tests/parity/test_temporal_values_a_store_would_change.py``)."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from tests.parity.engines import STORE_ENGINES, empty_engine

ROWS = 3

UTC = datetime.timezone.utc
MOMENTS = [
    datetime.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    None,
    datetime.datetime(1999, 12, 31, tzinfo=UTC),
]

CASES: dict[str, pa.Array] = {
    "list<string>, all empty": pa.array([[], [], []], pa.list_(pa.string())),
    "list<string>, all NULL": pa.nulls(ROWS, pa.list_(pa.string())),
    "list<string>": pa.array([["a", None], [], None], pa.list_(pa.string())),
    "list<int64>, all empty": pa.array([[], [], []], pa.list_(pa.int64())),
    "list<int64>, all NULL": pa.nulls(ROWS, pa.list_(pa.int64())),
    "list<int64>, ragged": pa.array([[1], [2, 3], None], pa.list_(pa.int64())),
    "list<int64>, one length": pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int64())),
    "list<uint64>": pa.array([[1, 2], [3, 4], [5, 2**63 - 1]], pa.list_(pa.uint64())),
    "list<int32>": pa.array([[1, 2], [-3, 4], []], pa.list_(pa.int32())),
    "list<int8>, all empty": pa.array([[], [], []], pa.list_(pa.int8())),
    "list<bool>": pa.array([[True, False], [], None], pa.list_(pa.bool_())),
    "list<bool>, all NULL": pa.nulls(ROWS, pa.list_(pa.bool_())),
    "fixed_size_list<float, 3>": pa.array(
        [[0.5, 1.0, 2.0], None, [3.0, -1.0, 0.25]], pa.list_(pa.float32(), 3)
    ),
    "list<float>": pa.array([[0.5, 1.0, 2.0], None, [3.0, -1.0, 0.25]], pa.list_(pa.float32())),
    "int32": pa.array([1, None, -7], pa.int32()),
    "uint64": pa.array([1, None, 2**63 - 1], pa.uint64()),
    "float32": pa.array([0.5, None, 1.25], pa.float32()),
    "float16": pa.array(np.array([0.5, 0.0, -1.25], np.float16)),
    "timestamp[us, UTC], all NULL": pa.nulls(ROWS, pa.timestamp("us", tz="UTC")),
    "timestamp[us, UTC]": pa.array(MOMENTS, pa.timestamp("us", tz="UTC")),
    "timestamp[ms, Europe/Paris]": pa.array(MOMENTS, pa.timestamp("ms", tz="Europe/Paris")),
    "timestamp[s]": pa.array(
        [datetime.datetime(2026, 1, 2, 3, 4, 5), None, None], pa.timestamp("s")
    ),
    "date64": pa.array([datetime.date(2026, 1, 2), None, None], pa.date64()),
    "date32": pa.array([datetime.date(2026, 1, 2), None, datetime.date(1970, 1, 1)], pa.date32()),
}
"""The column ``x`` of each case's table, :data:`ROWS` rows."""


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _table(column: pa.Array) -> pa.Table:
    """Key ``id``, text ``body``, a fixed-size float32 ``embedding`` and the case's ``x``."""
    return pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": [f"disk report {row}" for row in range(ROWS)],
            "embedding": pa.array(
                [[1.0, float(row)] for row in range(ROWS)], pa.list_(pa.float32(), 2)
            ),
            "x": column,
        }
    )


def _is_vector(kind: pa.DataType) -> bool:
    return (pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind)) and pa.types.is_floating(
        kind.value_type
    )


def _turbopuffer_type(kind: pa.DataType, column: pa.ChunkedArray) -> pa.DataType:
    """The type turbopuffer's attribute for ``kind`` reads back as (docs/engines.md)."""
    if _is_vector(kind):
        length = next(len(value) for value in column.to_pylist() if value is not None)
        return pa.list_(pa.float32(), length)
    if pa.types.is_list(kind):
        return pa.list_(_turbopuffer_type(kind.value_type, column))
    if pa.types.is_unsigned_integer(kind):
        return pa.uint64()
    if pa.types.is_integer(kind):
        return pa.int64()
    if pa.types.is_floating(kind):
        return pa.float64()
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return pa.timestamp("us", tz="UTC")
    return kind


def _expected(engine: Any, data: pa.Table) -> pa.Table:
    """``data`` as the store reads it back: itself, but on turbopuffer each column cast to
    its attribute's type (a naive timestamp or a date taken as UTC)."""
    if engine.parity_name != "turbopuffer":
        return data
    columns = []
    for field in data.schema:
        column = data.column(field.name)
        kind = _turbopuffer_type(field.type, column)
        if pa.types.is_date(field.type):
            column = column.cast(pa.timestamp("us")).cast(kind)
        columns.append(column.cast(kind))
    return pa.table(columns, names=data.column_names)


def _refusal(engine: Any, column: pa.Array) -> str | None:
    """The pattern of the refusal docs/engines.md says the store makes of ``column`` at
    load, or ``None``: SQLite holds no list but a vector (naming the type); turbopuffer
    keeps a timestamp in milliseconds (naming the first value finer than one, as pandas
    finds it)."""
    import pandas as pd

    kind = column.type
    if engine.parity_name == "sqlite" and pa.types.is_list(kind) and not _is_vector(kind):
        return rf"column 'x'.*{re.escape(str(kind))}"
    if engine.parity_name == "turbopuffer" and pa.types.is_timestamp(kind):
        for value in column.to_pylist():
            if value is not None and pd.Timestamp(value).value % 10**6:
                return rf"column 'x' holds '{re.escape(str(pd.Timestamp(value))[:26])}"
    return None


@pytest.mark.parametrize("case", list(CASES))
def test_a_column_reads_back_with_the_type_and_values_it_was_loaded_with(
    engine: Any, case: str
) -> None:
    data = _table(CASES[case])
    name = "column_types_" + re.sub(r"\W+", "_", case).strip("_").lower()
    refusal = _refusal(engine, CASES[case])
    if refusal is not None:
        with pytest.raises(EngineError, match=refusal):
            engine.load_table(name, data, key_column="id", text_columns=["body"])
        return
    engine.load_table(name, data, key_column="id", text_columns=["body"])
    read = engine.read_table(name, data.column_names).sort_by("id")
    expected = _expected(engine, data)
    assert read.schema == expected.schema
    assert read.to_pylist() == expected.to_pylist()
    # rows written by key into the table read back as its loaded rows do
    changed = pa.concat_tables([data.slice(1), data.slice(0, 1)])
    changed = changed.set_column(0, "id", pa.array([1, 2, ROWS], pa.int64()))
    engine.upsert_rows(name, changed)
    read = engine.read_table(name, data.column_names).sort_by("id")
    expected = _expected(engine, pa.concat_tables([data.slice(0, 1), changed]))
    assert read.schema == expected.schema
    assert read.to_pylist() == expected.to_pylist()


def test_a_column_of_the_null_type_is_refused_on_every_store(engine: Any) -> None:
    """A column of Arrow's ``null`` type (every value NULL, no type) is refused at load on
    every store with one message naming it: SQLite, DuckDB, PostgreSQL and turbopuffer have
    no type for it. Before, the local engine and LanceDB loaded it (LanceDB then failed a
    filter ``x = 1`` with its own error) where the others refused it, each in its own words.
    An upsert into a loaded table takes such a column as NULLs of the table's type, on every
    store alike."""
    data = _table(pa.nulls(ROWS, pa.null()))
    with pytest.raises(EngineError, match=r"^column 'x' has Arrow type null \(every value NULL"):
        engine.load_table("column_types_null", data, key_column="id", text_columns=["body"])
    with pytest.raises(EngineError, match="not found"):
        engine.read_table("column_types_null", ["id"])
    typed = _table(pa.array([1, None, 3], pa.int64()))
    engine.load_table("column_types_null", typed, key_column="id", text_columns=["body"])
    engine.upsert_rows("column_types_null", data.slice(0, 1))
    read = engine.read_table("column_types_null", ["id", "x"]).sort_by("id")
    assert read.column("x").to_pylist() == [None, None, 3]
    assert read.schema.field("x").type == _expected(engine, typed).schema.field("x").type


@pytest.mark.parametrize("column", ["x", "embedding"])
def test_an_upsert_takes_a_null_typed_column_as_nulls_on_every_store(
    engine: Any, column: str
) -> None:
    """An upsert's column of Arrow's ``null`` type (``pa.array([None])``) is NULLs of the
    table's type on every store, a vector column's too: the row reads back with NULL there
    and its other given values, as a Python model of the change says."""
    data = _table(pa.array([1, None, -7], pa.int32()))
    name = f"null_upsert_{column}"
    engine.load_table(name, data, key_column="id", text_columns=["body"])
    given = {"id": pa.array([1], pa.int64()), "body": ["changed"], column: pa.nulls(1)}
    engine.upsert_rows(name, pa.table(given))
    read = engine.read_table(name, ["id", "body", column]).sort_by("id").to_pylist()
    expected = [
        {"id": key, "body": body, column: value}
        for key, body, value in zip(
            data.column("id").to_pylist(), data.column("body").to_pylist(),
            data.column(column).to_pylist(),
        )
    ]  # fmt: skip
    expected[1] = {"id": 1, "body": "changed", column: None}
    assert read == expected


_BAD_VECTOR_ROWS = {
    "booleans": pa.array([[True, False]], pa.list_(pa.bool_())),
    "past Float32": pa.array([[1e39, 1.0]], pa.list_(pa.float64())),
    "infinity": pa.array([[float("inf"), 1.0]], pa.list_(pa.float64())),
    "NaN": pa.array([[float("nan"), 1.0]], pa.list_(pa.float64())),
    "three components": pa.array([[1.0, 2.0, 3.0]], pa.list_(pa.float64())),
}
"""An upserted ``embedding`` no store may write: the message names what is wrong (Python's
own reading: ``bool`` is not a number, ``abs(1e39)`` exceeds Float32's largest finite
value)."""


@pytest.mark.parametrize("case", list(_BAD_VECTOR_ROWS))
def test_an_upsert_of_a_vector_no_store_can_hold_changes_nothing_on_every_store(
    engine: Any, case: str
) -> None:
    """A list of booleans, a component past Float32's range, infinite or NaN, or a vector of
    another length written into a vector column is refused in one wording on every store
    (before, a list of booleans was written as 0 and 1 everywhere, LanceDB wrote 1e39 as an
    infinity, and the local engine had words of its own), and the table reads back as it
    was."""
    name = f"bad_vector_{case.replace(' ', '_')}"
    data = _table(pa.array([1, 2, 3], pa.int32()))
    engine.load_table(name, data, key_column="id", text_columns=["body"])
    before = engine.read_table(name, ["id", "body", "embedding"]).sort_by("id").to_pylist()
    given = pa.table({"id": pa.array([1], pa.int64()), "embedding": _BAD_VECTOR_ROWS[case]})
    with pytest.raises(EngineError) as raised:
        engine.upsert_rows(name, given)
    value = given.column("embedding")[0].as_py()
    message = str(raised.value)  # one wording on every store
    if isinstance(value[0], bool):
        assert "holds vectors of numbers; the rows written hold list<" in message
    elif len(value) != data.column("embedding").type.list_size:
        assert f"holds vectors of 2 dimensions; row 1 of the rows has {len(value)}" in message
    elif not all(map(math.isfinite, value)):
        assert "row 1 of vector column 'embedding' is not a vector of finite numbers" in message
    else:
        assert abs(value[0]) > np.finfo(np.float32).max
        assert "beyond Float32's range" in message
    assert "'embedding'" in str(raised.value)
    after = engine.read_table(name, ["id", "body", "embedding"]).sort_by("id").to_pylist()
    assert after == before
