"""Timestamp and ``date64`` values a store would change, in any column, on every engine and
every door that writes rows.

A store keeps a timestamp in its own unit: nanoseconds for the local engine, LanceDB and
the Hotdata engine (Arrow and Parquet files), microseconds for SQLite, DuckDB and
PostgreSQL (their ``TIMESTAMP``; SQLite's text reads back as microseconds), milliseconds
for turbopuffer (its ``datetime`` is "a 64-bit integer representing milliseconds since the
epoch", https://turbopuffer.com/docs/schema; its fake API keeps them so). A ``date64`` is a
whole day on every engine (Arrow's specification). A value the store would change is refused at
load and at upsert with an ``EngineError`` naming the column and the value, and nothing is
written; a value the store keeps, in a column typed finer than its unit, loads and reads
back equal.

Before: DuckDB and PostgreSQL rounded a nanosecond to its microsecond, SQLite loaded it and
each ``read_table`` then failed, turbopuffer cut a microsecond, and every engine kept a
``date64`` within a day as its day, all silently.

The reference is pandas: each value read back as the nanoseconds of its instant equals the
value written, and a value is kept exactly when those nanoseconds are a multiple of the
store's unit (:data:`STORE_UNITS`, from each store's documentation and read type).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.engines.checks import check_temporal_values_kept
from hotdata_retrieval.errors import EngineError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, load_by_key, open_document_engine

NANOSECONDS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
"""How many nanoseconds each Arrow time unit holds."""

DAY_NANOSECONDS = 86_400 * 10**9

STORE_UNITS = {
    "local": "ns",
    "lancedb": "ns",
    "hotdata": "ns",
    "sqlite": "us",
    "duckdb": "us",
    "postgres": "us",
    "turbopuffer": "ms",
}
"""The finest unit each store keeps a timestamp in (module docstring)."""

BASE = 1_700_000_000 * 10**9
"""An instant in nanoseconds (2023-11-14 22:13:20 UTC), a whole second."""


@attrs.frozen
class Case:
    """A non-key column of Arrow type ``kind`` holding ``given`` (Arrow's own integers of
    the type: counts of its unit, or a ``date64``'s milliseconds)."""

    kind: pa.DataType
    given: list[int]

    def values(self) -> pa.Array:
        return pa.array(self.given, pa.int64()).view(self.kind)

    def nanoseconds(self) -> list[int]:
        """The reference: pandas' nanoseconds of each value's instant."""
        import pandas as pd

        unit = "ms" if pa.types.is_date64(self.kind) else self.kind.unit
        return [int(pd.Timestamp(value, unit=unit).value) for value in self.given]

    def kept_by(self, engine: str) -> bool:
        step = NANOSECONDS[STORE_UNITS[engine]]
        if pa.types.is_date64(self.kind):
            step = DAY_NANOSECONDS
        return all(value % step == 0 for value in self.nanoseconds())

    def first_changed(self, engine: str) -> str:
        """The first value ``engine`` would change, as Arrow writes it (every digit)."""
        step = DAY_NANOSECONDS if pa.types.is_date64(self.kind) else 0
        step = step or NANOSECONDS[STORE_UNITS[engine]]
        position = next(i for i, value in enumerate(self.nanoseconds()) if value % step)
        text = self.values()[position : position + 1]
        if pa.types.is_date64(self.kind):
            text = text.view(pa.int64()).view(pa.timestamp("ms"))
        return str(text.cast(pa.string())[0].as_py())


CASES = {
    "timestamp[ns] a nanosecond past a second": Case(pa.timestamp("ns"), [BASE, BASE + 1]),
    "zoned timestamp[ns] a nanosecond past a second": Case(
        pa.timestamp("ns", "UTC"), [BASE, BASE + 1]
    ),
    "timestamp[ns] of whole microseconds": Case(pa.timestamp("ns"), [BASE, BASE + 1000]),
    "timestamp[ns] of whole milliseconds": Case(pa.timestamp("ns"), [BASE, BASE + 10**6]),
    "timestamp[us] a microsecond past a second": Case(
        pa.timestamp("us"), [BASE // 1000, BASE // 1000 + 1]
    ),
    "timestamp[us] of whole milliseconds": Case(
        pa.timestamp("us", "Europe/Paris"), [BASE // 1000, BASE // 1000 + 1000]
    ),
    "timestamp[s]": Case(pa.timestamp("s"), [BASE // 10**9, BASE // 10**9 + 1]),
    "date64 within a day": Case(pa.date64(), [BASE // 10**6 // 86_400_000 * 86_400_000, 1]),
    "date64 of whole days": Case(pa.date64(), [0, 86_400_000]),
}


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened.parity_name = request.param
    yield opened
    opened.close()


def _read_nanoseconds(column: pa.ChunkedArray) -> list[int | None]:
    """A temporal column an engine read back, by row, as the nanoseconds of each instant
    (pandas'): the Hotdata engine reads temporal values as the API's ISO text."""
    import pandas as pd

    values = column.to_pylist()
    return [None if value is None else int(pd.Timestamp(value).value) for value in values]


def _by_id(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


@pytest.mark.parametrize("case_name", sorted(CASES))
def test_a_value_the_store_would_change_is_refused_at_load(engine: Any, case_name: str) -> None:
    case = CASES[case_name]
    name = fresh_table("temporal_values")
    data = pa.table({"id": [1, 2], "body": ["a b", "c d"], "at": case.values()})
    if not case.kept_by(engine.parity_name):
        with pytest.raises(EngineError) as refused:
            load_by_key(engine, name, data)
        message = str(refused.value)
        assert "column 'at'" in message, message
        assert repr(case.first_changed(engine.parity_name)) in message, message
        assert name not in engine.tables
        return
    load_by_key(engine, name, data)
    read = engine.read_table(name, ["id", "at"]).sort_by("id")
    assert _read_nanoseconds(read.column("at")) == case.nanoseconds()


@pytest.mark.parametrize("offset", [1, 1000, 10**6], ids=["ns", "us", "ms"])
def test_a_value_the_store_would_change_is_refused_at_upsert(engine: Any, offset: int) -> None:
    """A ``timestamp[ns]`` column loaded with whole seconds (kept everywhere) takes an
    upsert of a value ``offset`` nanoseconds past a second where the store keeps it, and
    refuses it naming the column and the value where it does not, the rows unchanged."""
    name = fresh_table("temporal_upserts")
    loaded = Case(pa.timestamp("ns"), [BASE, BASE + 10**9])
    load_by_key(
        engine, name, pa.table({"id": [1, 2], "body": ["a b", "c d"], "at": loaded.values()})
    )
    before = _by_id(engine.read_table(name, ["id", "body", "at"]))
    written = Case(pa.timestamp("ns"), [BASE + offset])
    rows = pa.table({"id": [2], "body": ["e f"], "at": written.values()})
    if not written.kept_by(engine.parity_name):
        with pytest.raises(EngineError) as refused:
            engine.upsert_rows(name, rows)
        message = str(refused.value)
        assert "column 'at'" in message, message
        assert repr(written.first_changed(engine.parity_name)) in message, message
        assert _by_id(engine.read_table(name, ["id", "body", "at"])) == before
        return
    engine.upsert_rows(name, rows)
    read = engine.read_table(name, ["id", "at"]).sort_by("id")
    expected = [loaded.nanoseconds()[0], written.nanoseconds()[0]]
    assert _read_nanoseconds(read.column("at")) == expected


def test_a_list_element_the_store_would_change_is_refused(engine: Any) -> None:
    """A list of timestamps is checked element by element: one a nanosecond past a second,
    in the list of the second row, is refused naming it and that row where the store keeps
    no nanoseconds (DuckDB and PostgreSQL rounded it), and loads and reads back equal
    where it does."""
    import pandas as pd

    name = fresh_table("temporal_lists")
    elements = [[BASE], [BASE + 10**9, BASE + 1]]
    kind = pa.list_(pa.timestamp("ns"))
    values = pa.array(elements, pa.list_(pa.int64())).cast(kind)
    data = pa.table({"id": [1, 2], "body": ["a b", "c d"], "at": values})
    if STORE_UNITS[engine.parity_name] != "ns":
        changed = str(pa.array([BASE + 1], pa.int64()).view(pa.timestamp("ns"))[0])
        with pytest.raises(EngineError, match=rf"column 'at' holds '{changed}' in row 2\b"):
            load_by_key(engine, name, data)
        assert name not in engine.tables
        return
    load_by_key(engine, name, data)
    read = engine.read_table(name, ["id", "at"]).sort_by("id").column("at").to_pylist()
    assert [[int(pd.Timestamp(value).value) for value in row] for row in read] == elements


def test_a_document_store_refuses_a_metadata_moment_its_store_would_change(
    engine: Any,
) -> None:
    """``DocumentStore.add`` writes a timestamp filter column's metadata through the
    engine's upsert: a moment a microsecond past a second, the finest its ISO text names, is
    kept and reads back equal where the store keeps microseconds, and is refused naming the
    column and the value where it keeps milliseconds (turbopuffer cut it)."""
    if engine.parity_name == "hotdata":
        return  # its filter columns are text to the engine (docs/plans.md)
    table = fresh_table("temporal_documents")
    store = DocumentStore(engine, table, filter_columns={"at": "timestamp[us]"})
    written = Case(pa.timestamp("us"), [BASE // 1000 + 1])
    arguments = (["a"], ["text a"], [[1.0, 0.0]])
    metadatas = [{"at": "2023-11-14T22:13:20.000001"}]
    if not written.kept_by(engine.parity_name):
        with pytest.raises(EngineError, match=r"column 'at' holds '2023-11-14 22:13:20\.000001'"):
            store.add(*arguments, metadatas=metadatas)
        assert len(store) == 0
        return
    store.add(*arguments, metadatas=metadatas)
    read = _read_nanoseconds(engine.read_table(table, ["at"]).column("at"))
    assert read == written.nanoseconds()


def test_the_cases_cover_both_outcomes_on_each_engine() -> None:
    """The reference's premise: each engine keeps some case and refuses another."""
    for engine in STORE_UNITS:
        outcomes = {case.kept_by(engine) for case in CASES.values()}
        assert outcomes == {True, False}, engine


@settings(max_examples=200, deadline=None)
@given(
    unit=st.sampled_from(["s", "ms", "us", "ns"]),
    store_unit=st.sampled_from(["s", "ms", "us", "ns"]),
    rows=st.lists(
        st.lists(st.integers(-(2**62), 2**62) | st.none(), max_size=3), min_size=1, max_size=6
    ),
    shape=st.sampled_from(["plain", "list", "dictionary"]),
)
def test_the_check_refuses_exactly_the_values_finer_than_the_unit(
    unit: str, store_unit: str, rows: list[list[int | None]], shape: str
) -> None:
    """Over a plain, list and dictionary column, the check refuses exactly when NumPy finds
    a value that is no multiple of the store's unit in the column's, naming the first such
    value's row (counted from 1)."""
    kind = pa.timestamp(unit)
    step = max(NANOSECONDS[store_unit] // NANOSECONDS[unit], 1)
    if shape == "list":
        column = pa.array(rows, pa.list_(pa.int64())).cast(pa.list_(kind))
        per_row = rows
    else:
        flat = [row[0] if row else None for row in rows]
        column = pa.array(flat, pa.int64()).cast(kind)
        if shape == "dictionary":
            column = column.dictionary_encode()
        per_row = [[value] for value in flat]
    changed = [
        position
        for position, values in enumerate(per_row)
        if any(value is not None and np.remainder(value, step) for value in values)
    ]
    table = pa.table({"at": column})
    if not changed:
        check_temporal_values_kept(table, timestamp_unit=store_unit)
        return
    with pytest.raises(EngineError, match=rf"column 'at' holds .* in row {changed[0] + 1}\b"):
        check_temporal_values_kept(table, timestamp_unit=store_unit)
