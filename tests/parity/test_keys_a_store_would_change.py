"""Keys a store would round or confuse, on every engine and every door that writes rows.

A key names one row: keys Python tells apart stay apart on every store that loads them, and
an upsert of a key the table holds replaces its row. A store that would round or merge such
keys refuses them at load and upsert with an ``EngineError`` naming the key column and a
key it would change (DuckDB's and PostgreSQL's ``TIMESTAMP`` hold microseconds, SQLite's
timestamp text reads back as microseconds); a key of a type the store has no column or no
document id for is refused naming the type; keys the store holds exactly load. The faults
seen before: DuckDB and PostgreSQL kept two rows under one timestamp key a nanosecond apart
(an upsert then added a row, or replaced both), SQLite loaded them and its ``read_table``
failed, a ``time64`` key was refused as "NULL or a value twice", LanceDB's upsert of ``0.0``
added a row beside the key ``-0.0``, SQLite's upsert of a zoned timestamp key failed on its
own unique index, and turbopuffer's fake API failed on a timestamp document id (the service
takes integers, UUIDs and strings only). A timestamp key in another zone than its column's
(or none) names its instant, a zone-less one read as UTC, on every engine alike.

The reference is Python's own view of the keys: the integers Arrow holds a timestamp or a
time of day as (Python's ``datetime`` has no nanoseconds), floats by ``==`` (``-0.0`` is
``0.0``), text by its code points.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.documents import DocumentStore
from hotdata_retrieval.errors import EngineError, HotdataRetrievalError
from tests.document_engines import DOCUMENT_ENGINES, fresh_table, load_by_key, open_document_engine

NANOSECONDS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
"""How many nanoseconds each Arrow time unit holds."""

DAY = 86_400_000
"""A day in milliseconds, a ``date64``'s unit."""

BASE = 1_700_000_000 * 10**9
"""An instant in nanoseconds (2023-11-14 22:13:20 UTC)."""

EVERY_ENGINE = frozenset(DOCUMENT_ENGINES)
NANOSECOND_STORES = frozenset({"local", "lancedb", "hotdata"})
"""Engines that keep a timestamp's nanoseconds (Arrow and Parquet files)."""
TIMESTAMP_KEYS = EVERY_ENGINE - {"turbopuffer"}
"""Engines that key a table by a date or a timestamp: turbopuffer's document ids are unsigned
integers, UUIDs or strings (https://turbopuffer.com/docs/write)."""
TIME_COLUMNS = frozenset({"local", "lancedb", "hotdata"})
"""Engines with a column type for a time of day (the SQL stores map none, turbopuffer has
no such attribute)."""


@attrs.frozen
class Case:
    """Keys of one Arrow type: ``given`` (integers for a temporal type: Arrow's own values),
    the key an upsert names again (``upserted``, another spelling of one of them for floats),
    and the engines that must load them."""

    kind: pa.DataType
    given: list[Any]
    upserted: Any
    loads_on: frozenset[str]

    def keys(self) -> pa.Array:
        if pa.types.is_temporal(self.kind):
            integers = pa.int32() if self.kind.bit_width == 32 else pa.int64()
            return pa.array(self.given, integers).view(self.kind)
        return pa.array(self.given, self.kind)

    def upserted_keys(self) -> pa.Array:
        return attrs.evolve(self, given=[self.upserted]).keys()

    def texts(self) -> list[str]:
        """Each key as Arrow writes it, as a message naming a key may give it."""
        if pa.types.is_temporal(self.kind):
            return [str(text) for text in self.keys().cast(pa.string()).to_pylist()]
        return [repr(key) for key in self.given]


CASES = {
    "timestamp[ns] a nanosecond apart": Case(
        pa.timestamp("ns"), [BASE, BASE + 1, BASE + 1000], BASE + 1, NANOSECOND_STORES
    ),
    "zoned timestamp[ns] a nanosecond apart": Case(
        pa.timestamp("ns", "UTC"), [BASE, BASE + 1, BASE + 1000], BASE + 1, NANOSECOND_STORES
    ),
    "timestamp[ns] of whole microseconds": Case(
        pa.timestamp("ns"), [BASE, BASE + 1000, BASE + 2000], BASE + 1000, TIMESTAMP_KEYS
    ),
    "zoned timestamp[us]": Case(
        pa.timestamp("us", "UTC"),
        [BASE // 1000, BASE // 1000 + 1, BASE // 1000 + 2],
        BASE // 1000 + 1,
        TIMESTAMP_KEYS,
    ),
    "timestamp[s]": Case(pa.timestamp("s"), [1, 2, 3], 2, TIMESTAMP_KEYS),
    "time64[ns] a nanosecond apart": Case(pa.time64("ns"), [1, 2, 10**9], 2, TIME_COLUMNS),
    "time64[us]": Case(pa.time64("us"), [1, 2, 10**6], 2, TIME_COLUMNS),
    "date64 of whole days": Case(pa.date64(), [0, DAY, 2 * DAY], DAY, TIMESTAMP_KEYS),
    "date64 within one day": Case(pa.date64(), [0, 1, DAY], 1, frozenset()),
    "float -0.0 and 0.0": Case(pa.float64(), [-0.0, 1.0, 2.5], 0.0, EVERY_ENGINE - {"turbopuffer"}),
    "float16 -0.0 and 0.0": Case(
        pa.float16(), [-0.0, 1.0, 2.5], 0.0, EVERY_ENGINE - {"turbopuffer"}
    ),
    "dictionary text": Case(
        pa.dictionary(pa.int32(), pa.string()),
        ["a", "a ", "b"],
        "a ",
        frozenset({"local", "lancedb", "turbopuffer", "hotdata"}),
    ),
    "text by code points": Case(
        pa.string(), ["a", "a ", "A", "\u00e9", "e\u0301"], "a ", EVERY_ENGINE
    ),
}


@pytest.fixture(scope="module", params=DOCUMENT_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine(request.param, tmp_path_factory.mktemp(request.param), request)
    opened.parity_name = request.param
    yield opened
    opened.close()


def _reference(case: Case, values: list[Any]) -> list[Any]:
    """``values`` as Python tells keys apart (module docstring), sorted."""
    if pa.types.is_floating(case.kind):
        return sorted(value + 0.0 for value in values)  # -0.0 is the key 0.0
    return sorted(values)


def _read_keys(case: Case, column: pa.ChunkedArray) -> list[Any]:
    """A key column an engine read back, as :func:`_reference` writes keys: a temporal key
    as the integer of ``case.kind`` it holds (every engine reads it back as a date, time or
    timestamp, the Hotdata engine too: of the type its column is listed with)."""
    kind = case.kind
    if not pa.types.is_temporal(kind):
        return _reference(case, column.to_pylist())
    assert pa.types.is_temporal(column.type), column.type
    integers = pa.int32() if kind.bit_width == 32 else pa.int64()
    return sorted(column.cast(kind).combine_chunks().view(integers).to_pylist())


@pytest.mark.parametrize("case_name", sorted(CASES))
def test_keys_stay_apart_or_are_refused_by_name(engine: Any, case_name: str) -> None:
    case = CASES[case_name]
    name = fresh_table("keys")
    data = pa.table({"id": case.keys(), "body": [f"row {i}" for i in range(len(case.given))]})
    loads = engine.parity_name in case.loads_on
    try:
        load_by_key(engine, name, data)
    except EngineError as error:
        message = str(error)
        assert not loads, message
        assert "'id'" in message, message
        named = [str(case.kind), *case.texts()]
        assert any(text in message for text in named), message
        assert name not in engine.tables
        return
    assert loads, f"{engine.parity_name} loaded keys it cannot hold: {case_name}"
    expected = _reference(case, data.column("id").to_pylist())
    if pa.types.is_temporal(case.kind):
        expected = sorted(case.given)
    assert _read_keys(case, engine.read_table(name, ["id"]).column("id")) == expected
    engine.upsert_rows(name, pa.table({"id": case.upserted_keys(), "body": ["replaced"]}))
    read = engine.read_table(name, ["id", "body"])
    assert _read_keys(case, read.column("id")) == expected  # replaced, not added
    assert read.column("body").to_pylist().count("replaced") == 1
    if not pa.types.is_temporal(case.kind):  # the Hotdata engine reads no temporal keys
        assert engine.delete_rows(name, [case.upserted]) == 1
        assert (
            len(_read_keys(case, engine.read_table(name, ["id"]).column("id"))) == len(expected) - 1
        )


def test_an_upsert_of_keys_the_store_would_round_is_refused(engine: Any) -> None:
    """A table loaded with keys the store holds refuses an upsert whose keys it would round,
    naming the key, and its rows are unchanged."""
    case = CASES["timestamp[ns] of whole microseconds"]
    if engine.parity_name not in case.loads_on:
        return  # the load itself is refused (test_keys_stay_apart_or_are_refused_by_name)
    name = fresh_table("upsert_keys")
    data = pa.table({"id": case.keys(), "body": ["a", "b", "c"]})
    load_by_key(engine, name, data)
    finer = attrs.evolve(case, given=[BASE + 1, BASE + 1000])
    rows = pa.table({"id": finer.keys(), "body": ["x", "y"]})
    if engine.parity_name in NANOSECOND_STORES:
        engine.upsert_rows(name, rows)
        expected = sorted({*case.given, BASE + 1})
    else:
        with pytest.raises(EngineError, match=r"key column 'id' holds '2023-11-14 22:13:20\.0+1'"):
            engine.upsert_rows(name, rows)
        expected = sorted(case.given)
    assert _read_keys(case, engine.read_table(name, ["id"]).column("id")) == expected


def test_an_upsert_key_the_key_column_would_round_is_refused(engine: Any) -> None:
    """A float32 key column holds ``0.1`` as the nearest float32, another key than the
    double ``0.1`` (Python's ``==``): an upsert keyed by the double is refused naming it, and
    the rows are unchanged (the SQL stores kept a second row under the float32 key, the
    local engine and LanceDB replaced that key's row); a double the column holds exactly is
    the column's key and replaces its row."""
    import numpy as np

    if engine.parity_name == "turbopuffer":
        return  # no float document ids: refused at load (the float cases above)
    name = fresh_table("float32_keys")
    keys = pa.array([0.1, 0.5], pa.float32())
    load_by_key(engine, name, pa.table({"id": keys, "body": ["a", "b"]}))
    assert float(np.float32(0.1)) != 0.1  # the reference: two keys to Python
    rows = pa.table({"id": pa.array([0.1]), "body": ["replaced"]})
    with pytest.raises(HotdataRetrievalError, match=r"'id'.*0\.1\b"):
        engine.upsert_rows(name, rows)
    engine.upsert_rows(name, pa.table({"id": pa.array([0.5]), "body": ["replaced"]}))
    read = sorted(engine.read_table(name, ["id", "body"]).to_pylist(), key=lambda row: row["id"])
    assert read == [
        {"id": float(np.float32(0.1)), "body": "a"},
        {"id": 0.5, "body": "replaced"},
    ]


def test_nan_is_no_key_on_any_engine(engine: Any) -> None:
    """NaN equals no key, not even itself: refused at load on every engine (DuckDB,
    PostgreSQL and LanceDB loaded it)."""
    data = pa.table({"id": pa.array([float("nan"), 1.0]), "body": ["a", "b"]})
    with pytest.raises(EngineError, match=r"'id'.*(NaN|double)"):
        load_by_key(engine, fresh_table("nan_keys"), data)


def test_a_document_store_keeps_text_ids_apart(engine: Any) -> None:
    """``DocumentStore.add`` writes by key: ids differing in a trailing space, in case or in
    how an accent is encoded are other documents, and adding one again replaces it."""
    ids = ["a", "a ", "A", "\u00e9", "e\u0301"]
    store = DocumentStore(
        engine,
        fresh_table("document_keys"),
        vector_index="hnsw" if engine.parity_name == "hotdata" else None,
    )
    vectors = [[1.0, float(position)] for position in range(len(ids))]
    store.add(ids, [f"text {position}" for position in range(len(ids))], vectors)
    store.add(["a "], ["replaced"], [[1.0, 9.0]])
    found = {document.id: document.text for document in store.get(ids)}
    assert sorted(found) == sorted(set(ids))
    assert found["a "] == "replaced"
    assert len(store) == len(set(ids))


LOADED_BY_HDQ = ["local", "sqlite", "duckdb", "lancedb"]


@pytest.mark.parametrize("engine_name", LOADED_BY_HDQ)
def test_hdq_load_refuses_keys_its_store_would_round(engine_name: str, tmp_path: Path) -> None:
    """``hdq load`` of a Parquet file keyed by timestamps a nanosecond apart: loaded with
    every key on a store that keeps nanoseconds, refused with the key named (exit status
    not 0, nothing loaded) on one that would round them."""
    case = CASES["timestamp[ns] a nanosecond apart"]
    source = tmp_path / "events.parquet"
    pq.write_table(pa.table({"id": case.keys(), "body": ["a b", "c d", "e f"]}), source)
    database = tmp_path / ("store" if engine_name == "local" else f"store.{engine_name}")
    arguments = ["load", str(source), "--engine", engine_name, "--database", str(database)]
    result = CliRunner().invoke(main, [*arguments, "--key-column", "id", "--no-embed", "-q"])
    if engine_name in NANOSECOND_STORES:
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code != 0
    assert "key column 'id' holds '2023-11-14 22:13:20.000000001'" in result.stderr


def test_the_cases_cover_each_kind() -> None:
    """Every temporal case's keys are distinct as Arrow holds them (the reference's premise),
    and two of them fall within one microsecond where the case says so."""
    for name, case in CASES.items():
        assert len(set(case.given)) == len(case.given), name
    apart = [case for name, case in CASES.items() if name.endswith("a nanosecond apart")]
    assert apart
    for case in apart:
        pairs = itertools.combinations(case.given, 2)
        assert any(abs(a - b) < 1000 for a, b in pairs)


@attrs.frozen
class Probe:
    """A key column of Arrow type ``kind`` loaded with ``loaded`` (Python values), and a key
    ``probe`` a read, a delete or an upsert names, which the column may not hold as it is."""

    kind: pa.DataType
    loaded: list[Any]
    probe: Any

    def held(self, kind: pa.DataType) -> bool:
        """The reference: NumPy's view of whether a column of Arrow type ``kind`` holds
        ``probe`` exactly (its value in the type equals it), or for an integer type, within
        its range; a timestamp's or a date's, pandas' nanoseconds of it."""
        import numpy as np

        if pa.types.is_integer(kind):
            limits = np.iinfo(kind.to_pandas_dtype())
            return bool(limits.min <= self.probe <= limits.max)
        if pa.types.is_floating(kind):  # NumPy's value, back as a Python float
            return float(kind.to_pandas_dtype()(self.probe)) == self.probe
        import pandas as pd

        nanoseconds = pd.Timestamp(self.probe).value  # every digit of the instant
        unit = 86_400 * 10**9 if pa.types.is_date(kind) else NANOSECONDS[kind.unit]
        return nanoseconds % unit == 0


def _probes() -> dict[str, Probe]:
    import datetime

    import pandas as pd

    moment = datetime.datetime(2020, 1, 2, 3, 4, 5, 6)
    second = moment.replace(microsecond=0)
    return {
        "float32 probed by the double 0.1": Probe(pa.float32(), [0.5, 0.1], 0.1),
        "float32 probed past 2**24": Probe(pa.float32(), [0.5, 16777216.0], 16777217),
        "timestamp[us] probed a nanosecond later": Probe(
            pa.timestamp("us"),
            [moment, moment.replace(year=2021)],
            pd.Timestamp(moment) + pd.Timedelta(1, "ns"),
        ),
        "timestamp[s] probed a microsecond later": Probe(
            pa.timestamp("s"), [second, second.replace(year=2021)], second.replace(microsecond=1)
        ),
        "date32 probed at noon": Probe(
            pa.date32(),
            [datetime.date(2020, 1, 2), datetime.date(2021, 1, 2)],
            datetime.datetime(2020, 1, 2, 12),
        ),
        "date32 probed at its midnight": Probe(
            pa.date32(),
            [datetime.date(2020, 1, 2), datetime.date(2021, 1, 2)],
            datetime.datetime(2020, 1, 2),
        ),
        "timestamp[s] probed by a date": Probe(
            pa.timestamp("s"), [second, second.replace(hour=0, minute=0, second=0)], second.date()
        ),
        "int32 probed past its range": Probe(pa.int32(), [2, 3], 2**32 + 2),
        "int32 probed within its range": Probe(pa.int32(), [2, 3], 3),
        "float32 probed by a double it holds": Probe(pa.float32(), [0.5, 0.1], 0.5),
    }


PROBES = _probes()


def _probed_table(engine: Any, probe: Probe) -> tuple[str, pa.Table] | None:
    """A fresh table keyed by ``probe.loaded``, loaded on ``engine`` and read back; ``None``
    where the engine keys no table by such keys (refused at load: the cases above)."""
    name = fresh_table("probed")
    data = pa.table({"id": pa.array(probe.loaded, probe.kind), "body": ["a b", "c d"]})
    if engine.parity_name == "turbopuffer" and not pa.types.is_integer(probe.kind):
        return None  # no such document ids
    load_by_key(engine, name, data)
    return name, engine.read_table(name, ["id", "body"])


def _held_type(engine: Any, kind: pa.DataType) -> pa.DataType:
    """The Arrow type a column loaded as ``kind`` holds its values as on ``engine``: that
    type, but on turbopuffer a 64-bit integer (its document ids are unsigned 64-bit integers
    and its integer attributes 64-bit ones: https://turbopuffer.com/docs/write)."""
    if engine.parity_name == "turbopuffer" and pa.types.is_integer(kind):
        return pa.int64()
    return kind


def _same_key(held: Any, probe: Any) -> bool:
    """The reference's equality: Python's ``==``, and for dates and timestamps pandas' one
    instant (a ``date`` is its midnight: Python's ``==`` calls a date and a datetime unequal
    whatever their values)."""
    import datetime

    import pandas as pd

    if isinstance(held, datetime.date) and isinstance(probe, datetime.date):
        return bool(pd.Timestamp(held) == pd.Timestamp(probe))
    return bool(held == probe)


def _sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: str(row["id"]))


@pytest.mark.parametrize("probe_name", sorted(PROBES))
def test_a_key_the_column_would_change_is_refused_by_read_and_delete(
    engine: Any, probe_name: str
) -> None:
    """``read_rows`` and ``delete_rows`` of a key the key column's type holds find its row;
    of one the type would change (round, cut, or not hold) they are refused, naming the key
    column, on every engine, and no row is deleted (local and LanceDB deleted the rounded
    key's row, SQLite found nothing, DuckDB either; LanceDB's read and delete disagreed, and
    an int32 key out of range reached Arrow's and Lance's own errors)."""
    probe = PROBES[probe_name]
    made = _probed_table(engine, probe)
    if made is None:
        return
    name, before = made
    if probe.held(_held_type(engine, probe.kind)):  # found where Python's == finds it
        present = sum(_same_key(row["id"], probe.probe) for row in before.to_pylist())
        assert engine.read_rows(name, [probe.probe], ["id"]).num_rows == present
        assert engine.delete_rows(name, [probe.probe]) == present
        assert engine.read_table(name, ["id"]).num_rows == before.num_rows - present
        return
    with pytest.raises(EngineError, match=r"key column 'id'.*nothing was read or changed"):
        engine.read_rows(name, [probe.probe], ["id"])
    with pytest.raises(EngineError, match=r"key column 'id'.*nothing was read or changed"):
        engine.delete_rows(name, [probe.probe])
    assert _sorted_rows(engine.read_table(name, ["id", "body"])) == _sorted_rows(before)


@pytest.mark.parametrize("probe_name", sorted(PROBES))
def test_an_upsert_key_the_column_would_change_is_refused(engine: Any, probe_name: str) -> None:
    """``upsert_rows`` keyed by a key the key column's type holds replaces its row; keyed by
    one the type would change it is refused naming the key column, and the rows are as
    they were (SQLite kept two rows under one float32 key and an int32 key out of range
    that no read could then read back, DuckDB replaced the other row)."""
    probe = PROBES[probe_name]
    made = _probed_table(engine, probe)
    if made is None:
        return
    name, before = made
    keys = pa.array([probe.probe])
    if pa.types.is_timestamp(keys.type):  # Arrow's own inference keeps microseconds
        keys = pa.array([probe.probe], pa.timestamp("ns"))
    rows = pa.table({"id": keys, "body": ["replaced"]})
    if probe.held(_held_type(engine, probe.kind)):  # replaces the row Python's == finds
        present = sum(_same_key(row["id"], probe.probe) for row in before.to_pylist())
        engine.upsert_rows(name, rows)
        read = engine.read_table(name, ["id", "body"])
        assert read.num_rows == before.num_rows + 1 - present
        assert read.column("body").to_pylist().count("replaced") == 1
        return
    with pytest.raises(HotdataRetrievalError, match=r"'id'"):  # Hotdata: the service's
        engine.upsert_rows(name, rows)
    assert _sorted_rows(engine.read_table(name, ["id", "body"])) == _sorted_rows(before)


def test_an_upsert_value_its_column_cannot_hold_is_refused(engine: Any) -> None:
    """An ``int8`` column holds no ``300`` (NumPy's range of the type the engine holds the
    column as is the reference): the upsert is refused naming the column and the value on
    every engine whose column is ``int8``, and the table reads as before (the SQL stores
    wrote it, and each read of the table then failed); turbopuffer's integer attributes are
    64-bit and hold it."""
    import numpy as np

    value = 300
    name = fresh_table("int8_values")
    data = pa.table({"id": [1, 2], "body": ["a b", "c d"], "level": pa.array([1, 2], pa.int8())})
    load_by_key(engine, name, data)
    before = engine.read_table(name, ["id", "level"])
    limits = np.iinfo(_held_type(engine, pa.int8()).to_pandas_dtype())
    rows = pa.table({"id": [2], "body": ["e f"], "level": pa.array([value], pa.int64())})
    if limits.min <= value <= limits.max:  # turbopuffer keeps integers as 64-bit ones
        engine.upsert_rows(name, rows)
        assert sorted(engine.read_table(name, ["level"]).column("level").to_pylist()) == [1, 300]
        return
    with pytest.raises(HotdataRetrievalError, match=r"level.*300|300.*level"):
        engine.upsert_rows(name, rows)
    assert _sorted_rows(engine.read_table(name, ["id", "level"])) == _sorted_rows(before)


VALUE_CASES = {
    "float32 written 1e300": (pa.float32(), [0.5, 1.5], pa.array([1e300])),
    "timestamp[s] written a microsecond past a second": (
        pa.timestamp("s"),
        [BASE // 10**9, BASE // 10**9 + 1],
        pa.array([BASE // 1000 + 1], pa.int64()).view(pa.timestamp("us")),
    ),
}
"""A non-key column's Arrow type, the values loaded (integers of a temporal type: Arrow's
own values) and a value an upsert writes into it."""


def _value_held(kind: pa.DataType, written: pa.Array) -> bool:
    """The reference: a ``float32`` column holds a finite double as a finite float32 (NumPy's
    value of it), a temporal column a value that is a whole number of its unit (pandas'
    nanoseconds of it)."""
    import numpy as np

    if pa.types.is_floating(kind):
        with np.errstate(over="ignore"):
            return bool(np.isfinite(kind.to_pandas_dtype()(written[0].as_py())))
    nanoseconds = written.cast(pa.timestamp("ns")).view(pa.int64())[0].as_py()
    return nanoseconds % NANOSECONDS[kind.unit] == 0


@pytest.mark.parametrize("case_name", sorted(VALUE_CASES))
def test_an_upsert_value_its_non_key_column_cannot_hold_is_refused(
    engine: Any, case_name: str
) -> None:
    """A value its column cannot hold (a double past Float32's largest finite value, a
    timestamp finer than the column's unit) is refused naming the column on every engine
    with such a column, and the table reads as before: local, SQLite, PostgreSQL and LanceDB
    wrote ``1e300`` into a ``float32`` column as infinity (DuckDB refused it in its own
    words), and the SQL stores wrote the microsecond, after which each read failed."""
    kind, loaded, written = VALUE_CASES[case_name]
    if engine.parity_name == "turbopuffer":
        return  # 64-bit numbers and no timestamp[s] attribute: nothing narrower to hold
    name = fresh_table("held_values")
    values = pa.array(loaded, pa.int64()).view(kind) if pa.types.is_temporal(kind) else loaded
    data = pa.table({"id": [1, 2], "body": ["a b", "c d"], "level": pa.array(values, kind)})
    load_by_key(engine, name, data)
    before = engine.read_table(name, ["id", "level"])
    rows = pa.table({"id": [2], "body": ["e f"], "level": written})
    assert not _value_held(kind, written)
    with pytest.raises(HotdataRetrievalError, match=r"'level'"):
        engine.upsert_rows(name, rows)
    assert _sorted_rows(engine.read_table(name, ["id", "level"])) == _sorted_rows(before)


def _zone_probes() -> dict[str, tuple[pa.DataType, Any]]:
    """A key column's Arrow type and a key naming one of its instants in another spelling
    (another offset or zone, naive for a zoned column, aware for a naive one, pandas'), or,
    for the ``wall clock`` probes, the loaded value's wall-clock time in another offset: an
    instant the table does not hold."""
    import datetime

    import pandas as pd

    utc = datetime.timezone.utc
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    moment = datetime.datetime(2020, 1, 2, 3, 4, 5)
    aware = moment.replace(tzinfo=utc)
    return {
        "UTC column, naive key": (pa.timestamp("us", "UTC"), moment),
        "UTC column, key at +02:00": (pa.timestamp("us", "UTC"), aware.astimezone(plus_two)),
        "Paris column, naive key": (pa.timestamp("ms", "Europe/Paris"), moment),
        "Paris column, key at -05:00": (
            pa.timestamp("ms", "Europe/Paris"),
            aware.astimezone(datetime.timezone(datetime.timedelta(hours=-5))),
        ),
        "nanosecond UTC column, pandas key at +02:00": (
            pa.timestamp("ns", "UTC"),
            pd.Timestamp(aware).tz_convert("+02:00"),
        ),
        "naive column, key at +02:00": (pa.timestamp("us"), aware.astimezone(plus_two)),
        "naive column, UTC key": (pa.timestamp("s"), aware),
        "naive column, wall clock at +02:00": (pa.timestamp("us"), moment.replace(tzinfo=plus_two)),
        "UTC column, wall clock at +02:00": (
            pa.timestamp("us", "UTC"),
            moment.replace(tzinfo=plus_two),
        ),
    }


ZONE_PROBES = _zone_probes()


def _instant_nanoseconds(value: Any) -> int:
    """The reference: pandas' nanoseconds of the instant ``value`` names, one without a zone
    taken as UTC (as filters take a timestamp literal: docs/plans.md)."""
    import pandas as pd

    moment = pd.Timestamp(value)
    if moment.tzinfo is None:
        moment = moment.tz_localize("UTC")
    return int(moment.value)


@pytest.mark.parametrize("probe_name", sorted(ZONE_PROBES))
def test_a_key_in_another_zone_names_its_instant(engine: Any, probe_name: str) -> None:
    """A timestamp key names an instant on every engine, in reads, deletes and upserts
    alike, whatever zone the key column or the key holds: an aware key is its instant, and
    a key or a column without a zone is read as UTC, as a filter's timestamp literal is. A
    key naming another instant (the loaded wall-clock time in another offset) finds no row,
    deletes none and is added by an upsert. The reference is pandas' instants."""
    import datetime

    if engine.parity_name in ("turbopuffer", "hotdata"):
        return  # no timestamp keys (turbopuffer's ids), or temporal values read as text
    kind, probe = ZONE_PROBES[probe_name]
    loaded = [
        datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
        datetime.datetime(2021, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    ]
    keys = pa.array(loaded, pa.timestamp("us", "UTC")).cast(kind)  # naive: the UTC clock
    present = sum(
        _instant_nanoseconds(key) == _instant_nanoseconds(probe) for key in keys.to_pylist()
    )
    instants = sorted(_instant_nanoseconds(key) for key in keys.to_pylist())

    def fresh() -> str:
        name = fresh_table("zoned_keys")
        load_by_key(engine, name, pa.table({"id": keys, "body": ["a b", "c d"]}))
        return name

    def read_instants(name: str) -> list[int]:
        column = engine.read_table(name, ["id"]).column("id")
        return sorted(_instant_nanoseconds(value) for value in column.to_pylist())

    name = fresh()
    assert engine.read_rows(name, [probe], ["id"]).num_rows == present
    assert engine.delete_rows(name, [probe]) == present
    assert engine.read_table(name, ["id"]).num_rows == len(loaded) - present
    name = fresh()
    given = pa.array([probe])  # Arrow's type of it: its own zone, or none
    engine.upsert_rows(name, pa.table({"id": given, "body": ["replaced"]}))
    expected = sorted({*instants, _instant_nanoseconds(probe)})
    assert read_instants(name) == expected
    bodies = engine.read_table(name, ["body"]).column("body").to_pylist()
    assert bodies.count("replaced") == 1
    assert len(bodies) == len(expected)
