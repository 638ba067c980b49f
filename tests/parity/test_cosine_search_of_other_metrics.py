"""A table loaded for ``l2`` or ``dot`` takes rows whose Float32 squared norm is non-zero and
no normal Float32 number (those metrics rank them right), but a cosine search of it cannot
rank them: ``[1e-30, 1e-30]`` loaded for ``l2`` was at -inf from ``[1, 0]`` on SQLite and
LanceDB and at 0.0 on PostgreSQL, where NumPy's float64 cosine distance is 0.29. Every engine
records such rows with each table version and refuses a cosine search of a column holding
one (an ``EngineError`` naming the table, the column and the row's key), as a table loaded
for cosine refuses the rows themselves (``test_cosine_norm_bounds.py``); turbopuffer refuses
any cosine search of a namespace loaded for another metric. Which rows are such is read by
NumPy, apart from the library, and every search the engines answer is checked against
NumPy's float64 distances, after loads, upserts and deletes."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval import EngineError, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines._vector_norms import _json_key
from hotdata_retrieval.errors import UnsupportedOnDialectError
from tests.parity.engines import STORE_ENGINES, empty_engine

GOOD = [[1.0, 0.0], [0.6, 0.8], [1e-18, 3e-19], [2.0, -1.0]]
"""Rows every cosine search ranks: unit, small but normal once squared in Float32, and
larger."""

OUTSIDE = [[1e-30, 1e-30], [0.0, 1e-30], [1e20, 0.0], [3e19, -3e19], [2e-45, 0.0]]
"""Non-zero rows whose Float32 squared norm underflows or overflows."""

QUERY = [1.0, 0.25]
METRICS = ["l2", "dot"]


def _outside(rows: list[list[float]]) -> list[int]:
    """The 0-based positions of the non-zero rows whose squared norm, summed in float64 from
    their Float32 components, is no normal Float32 number (NumPy's bounds, apart from the
    library's)."""
    low, high = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)
    found = []
    for position, row in enumerate(rows):
        components = np.array(row, dtype=np.float32).astype(np.float64)
        squared = float(np.sum(components * components))
        if squared and not low <= squared <= high:
            found.append(position)
    return found


def _distances(metric: str, rows: list[list[float]]) -> np.ndarray:
    """Each row's distance to :data:`QUERY` in NumPy's float64 (cosine: one minus the
    cosine; l2: squared Euclidean; dot: the negative inner product)."""
    stored = np.array(rows, dtype=np.float32).astype(np.float64)
    query = np.array(QUERY)
    if metric == "l2":
        return np.asarray(((stored - query) ** 2).sum(axis=1))
    if metric == "dot":
        return np.asarray(-(stored @ query))
    return np.asarray(
        1.0 - (stored @ query) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(query))
    )


def _table(rows: dict[int, list[float]]) -> pa.Table:
    return pa.table(
        {
            "id": list(rows),
            "body": ["row"] * len(rows),
            "embedding": pa.array(list(rows.values()), pa.list_(pa.float32(), 2)),
        }
    )


def _search(engine: Any, table: str, metric: str, limit: int) -> Any:
    return engine.search(
        SearchPlan(
            source=NearestNeighborSearch(
                table=table, column="embedding", query_vector=QUERY, metric=metric
            ),
            limit=limit,
        )
    )


def _check_answers(engine: Any, table: str, metric: str, rows: dict[int, list[float]]) -> None:
    """A search of ``table`` by ``metric`` is refused where NumPy finds a row a cosine
    search cannot rank (naming its key) and otherwise ranks ``rows`` as NumPy's float64
    distances do."""
    keys = list(rows)
    vectors = list(rows.values())
    outside = {keys[position] for position in _outside(vectors)}
    if metric == "cosine" and engine.parity_name == "turbopuffer":
        with pytest.raises(UnsupportedOnDialectError, match="a namespace has one distance"):
            _search(engine, table, metric, len(rows))
        return
    if metric == "cosine" and outside:
        with pytest.raises(EngineError, match=r"^vector column 'embedding' of table ") as raised:
            _search(engine, table, metric, len(rows))
        message = str(raised.value)
        assert f"'default.public.{table}'" in message
        named = int(message.split(", at key ", 1)[1].split(":", 1)[0])
        assert named in outside
        return
    if (engine.parity_name, metric) == ("sqlite", "dot"):
        with pytest.raises(UnsupportedOnDialectError):  # sqlite-vec has no inner product
            _search(engine, table, metric, len(rows))
        return
    distances = _distances(metric, vectors)
    if metric != "cosine" and not np.all(np.abs(distances) <= np.finfo(np.float32).max):
        return  # a distance past Float32's, the distances' type: not this module's matter
    hits = _search(engine, table, metric, len(rows))
    expected = dict(zip(keys, distances, strict=True))
    assert sorted(hit.key for hit in hits) == sorted(keys)
    for hit in hits:
        assert hit.distance == pytest.approx(expected[hit.key], rel=1e-5, abs=1e-6)
    assert [hit.key for hit in hits] == sorted(keys, key=lambda key: (expected[key], key))


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _refused_by_turbopuffer(engine: Any, metric: str, rows: dict[int, list[float]]) -> bool:
    """Whether turbopuffer refuses ``rows`` written into a table loaded for ``metric``: an l2
    row whose squared norm (NumPy, float64 of the Float32 components) is above a eighth of
    Float32's largest number, from which an l2 distance could be an infinity its JSON answer
    cannot hold (``L2_SQUARED_NORM_LIMIT``)."""
    if engine.parity_name != "turbopuffer" or metric != "l2" or not rows:
        return False
    vectors = np.array(list(rows.values()), np.float32).astype(np.float64)
    return bool(np.any((vectors**2).sum(axis=1) > float(np.finfo(np.float32).max) / 8))


def _load(
    engine: Any, table: str, rows: dict[int, list[float]], metric: str, texts: bool = False
) -> bool:
    """Load ``rows`` as ``table`` for ``metric`` (``texts``: with a full-text index of
    ``body``, which DuckDB changes by a table swapped in); ``False`` where the engine
    computes no such metric (turbopuffer's dot), which it refuses at load, or refuses the
    rows (:func:`_refused_by_turbopuffer`)."""
    if metric not in engine.vector_metrics:
        with pytest.raises(UnsupportedOnDialectError):
            engine.load_table(table, _table(rows), vector_metric=metric)
        return False
    if _refused_by_turbopuffer(engine, metric, rows):
        with pytest.raises(EngineError, match="an l2 distance from it could be past"):
            engine.load_table(table, _table(rows), key_column="id", vector_metric=metric)
        return False
    engine.load_table(
        table,
        _table(rows),
        key_column="id",
        text_columns=["body"] if texts else [],
        vector_metric=metric,
    )
    return True


def test_the_reference_finds_the_rows() -> None:
    assert _outside(GOOD) == []
    assert _outside(OUTSIDE) == list(range(len(OUTSIDE)))


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("vector", OUTSIDE)
def test_a_cosine_search_of_such_a_row_is_refused_naming_its_key(
    engine: Any, metric: str, vector: list[float]
) -> None:
    rows = {key: row for key, row in enumerate([*GOOD[:2], vector, *GOOD[2:]])}
    if not _load(engine, "loaded", rows, metric):
        return
    _check_answers(engine, "loaded", "cosine", rows)
    _check_answers(engine, "loaded", metric, rows)  # its own metric ranks it


@pytest.mark.parametrize("metric", METRICS)
def test_a_table_without_such_rows_is_searched_by_cosine(engine: Any, metric: str) -> None:
    rows = dict(enumerate(GOOD))
    if not _load(engine, "normal", rows, metric):
        return
    _check_answers(engine, "normal", "cosine", rows)


@pytest.mark.parametrize("texts", [False, True], ids=["no-text-index", "text-index"])
@pytest.mark.parametrize("metric", METRICS)
def test_upserts_and_deletes_keep_the_refusal_in_step(
    engine: Any, metric: str, texts: bool
) -> None:
    rows = dict(enumerate(GOOD))
    if not _load(engine, "changed", rows, metric, texts):
        return
    steps: list[tuple[str, Any]] = [
        ("upsert", {10: OUTSIDE[0], 11: [0.5, 0.5]}),  # a row added
        ("upsert", {10: [0.3, 0.1]}),  # replaced by a normal one
        ("upsert", {1: OUTSIDE[2]}),  # a normal row replaced by one
        ("delete", [1]),  # deleted
        ("upsert", {12: OUTSIDE[1], 13: OUTSIDE[4]}),
        ("delete", [12]),  # one of two deleted
        ("upsert", {13: [0.0, 2.0]}),
    ]
    for action, change in steps:
        if action == "upsert" and _refused_by_turbopuffer(engine, metric, change):
            with pytest.raises(EngineError, match="an l2 distance from it could be past"):
                engine.upsert_rows("changed", _table(change))
        elif action == "upsert":
            engine.upsert_rows("changed", _table(change))
            rows.update(change)
        else:
            engine.delete_rows("changed", change)
            for key in change:
                rows.pop(key)
        _check_answers(engine, "changed", "cosine", rows)
        _check_answers(engine, "changed", metric, rows)


def test_more_such_rows_than_a_record_names(engine: Any) -> None:
    """Past the rows a record names (16), the record knows there are more; once every row it
    named is changed, the rows are read again: the refusal holds while one is left."""
    many = {100 + number: [1e-30 * (number + 1), 0.0] for number in range(40)}
    rows = {**dict(enumerate(GOOD)), **many}
    if not _load(engine, "many", rows, "l2"):
        return
    for start in range(0, 40, 8):  # replaced eight at a time, in key order
        replaced = {100 + number: [1.0, float(number)] for number in range(start, start + 8)}
        engine.upsert_rows("many", _table(replaced))
        rows.update(replaced)
        _check_answers(engine, "many", "cosine", rows)
    assert _outside(list(rows.values())) == []


def test_a_table_without_a_key_names_the_row(engine: Any) -> None:
    rows = [*GOOD, OUTSIDE[0]]
    if engine.parity_name == "turbopuffer":
        return  # a namespace needs a key (test_turbopuffer_engine.py)
    engine.load_table(
        "keyless",
        pa.table({"embedding": pa.array(rows, pa.list_(pa.float32(), 2))}),
        key_column=None,
        vector_metric="l2",
    )
    with pytest.raises(EngineError, match=f", at row {_outside(rows)[0] + 1}: "):
        engine.search(
            SearchPlan(
                source=NearestNeighborSearch(
                    table="keyless", column="embedding", query_vector=QUERY, metric="cosine"
                ),
                limit=3,
                key_column=None,
            )
        )


def _forget_records(engine: Any, table: str) -> Any:
    """``engine`` as an earlier release left ``table``, loaded with no record of its rows:
    the local engine's catalog entry without ``vector_norms`` (opened again, so nothing
    is cached), a SQL store's catalog without its ``vector_norms`` rows; ``None`` for
    LanceDB and turbopuffer, whose test of this is elsewhere or moot (LanceDB writes its
    record into every version's schema, turbopuffer refuses every such search)."""
    if engine.parity_name == "local":
        from hotdata_retrieval.engines.local import LocalEngine

        path = engine.root / "catalog.json"
        catalog = json.loads(path.read_text(encoding="utf-8"))
        del catalog["tables"][table]["vector_norms"]
        path.write_text(json.dumps(catalog), encoding="utf-8")
        return LocalEngine(engine.root)
    if engine.parity_name in ("sqlite", "duckdb", "postgres"):
        name = engine.table_name(table)
        schema = "public" if engine.parity_name == "postgres" else "main"
        for statement in engine._norms_statements(name, schema, []):
            engine._execute(statement)
        assert all(vector.outside_norms is None for vector in engine.describe(table).vectors)
        return engine
    return None


@pytest.mark.parametrize("metric", METRICS)
def test_a_table_an_earlier_release_loaded_is_read_again(engine: Any, metric: str) -> None:
    rows = {key: row for key, row in enumerate([*GOOD, OUTSIDE[0]])}
    if not _load(engine, "earlier", rows, metric):
        return
    opened = _forget_records(engine, "earlier")
    if opened is None:
        return
    opened.parity_name = engine.parity_name
    try:
        _check_answers(opened, "earlier", "cosine", rows)
        replaced = {len(GOOD): [0.5, 0.5]}
        opened.upsert_rows("earlier", _table(replaced))
        rows.update(replaced)
        _check_answers(opened, "earlier", "cosine", rows)
        _check_answers(opened, "earlier", metric, rows)
    finally:
        if opened is not engine:
            opened.close()


UTC = dt.timezone.utc
PLUS_TWO = dt.timezone(dt.timedelta(hours=2))
ZONED = pa.array(
    [dt.datetime(2020, 1, 1, tzinfo=UTC), dt.datetime(2020, 1, 2, tzinfo=UTC)],
    pa.timestamp("us", "UTC"),
)
NAIVE = pa.array([dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 2)], pa.timestamp("us"))

OTHER_SPELLINGS: dict[str, tuple[pa.Array, Any]] = {
    "zoned-in-another-offset": (ZONED, dt.datetime(2020, 1, 2, 2, tzinfo=PLUS_TWO)),
    "zoned-of-another-zone": (
        ZONED.cast(pa.timestamp("us", "Europe/Paris")),
        dt.datetime(2020, 1, 1, 19, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    ),
    "zoned-given-naive": (ZONED, dt.datetime(2020, 1, 2)),
    "naive-given-zoned": (NAIVE, dt.datetime(2020, 1, 2, 2, tzinfo=PLUS_TWO)),
    "nanoseconds-given-zoned": (
        ZONED.cast(pa.timestamp("ns", "UTC")),
        dt.datetime(2020, 1, 2, 2, tzinfo=PLUS_TWO),
    ),
    "negative-zero": (pa.array([1.5, -0.0], pa.float64()), 0.0),
    "zero-given-negative": (pa.array([1.5, 0.0], pa.float64()), -0.0),
    "float16": (pa.array(np.array([1.5, 0.25], dtype=np.float16)), 0.25),
    "float-given-integer": (pa.array([1.5, 2.0], pa.float64()), 2),
    "decimal-given-float": (
        pa.array([Decimal("1.50"), Decimal("2.00")], pa.decimal128(5, 2)),
        Decimal("2"),
    ),
    "dictionary": (pa.array(["a", "b"]).dictionary_encode(), "b"),
}
"""Key columns whose second row is the one a cosine search cannot rank, and that row's key
as a change names it, spelled otherwise than the loaded value (another offset or zone, naive
for zoned and zoned for naive, -0.0 for 0.0, a float for a float16 value, an integer for an
integral float, another decimal scale, text for a dictionary's value): every engine finds
the row by it, as its keys compare by value."""


def _keyed_table(keys: pa.Array, vectors: list[list[float]]) -> pa.Table:
    return pa.table(
        {
            "id": keys,
            "body": ["row"] * len(keys),
            "embedding": pa.array(vectors, pa.list_(pa.float32(), 2)),
        }
    )


def _written_key(keys: pa.Array, spelled: Any) -> pa.Array:
    """``spelled`` as a one-row key column of ``keys``' type (float16 through NumPy, which
    pyarrow takes from no Python float)."""
    if pa.types.is_float16(keys.type):
        return pa.array(np.array([spelled], dtype=np.float16))
    if pa.types.is_dictionary(keys.type):
        return pa.array([spelled]).dictionary_encode()
    return pa.array([spelled], keys.type)


@pytest.mark.parametrize("spelling", list(OTHER_SPELLINGS))
@pytest.mark.parametrize("change", ["delete", "upsert"])
def test_a_change_naming_a_key_spelled_otherwise_changes_the_record(
    engine: Any, spelling: str, change: str
) -> None:
    """A row a cosine search cannot rank, deleted, or replaced by a normal row, through its
    key spelled otherwise than loaded, leaves the record too: the cosine search then ranks
    the rows left as NumPy's float64 distances do, where a record matching keys by their
    text had refused it naming a row no longer there."""
    if engine.parity_name == "turbopuffer":
        return  # refuses every cosine search of a namespace of another metric
    keys, spelled = OTHER_SPELLINGS[spelling]
    table = f"{change[0]}_{spelling.replace('-', '_')}"
    vectors = [[1.0, 0.0], OUTSIDE[0]]
    data = _keyed_table(keys, vectors)
    unstored = pa.types.is_dictionary(keys.type) or pa.types.is_decimal(keys.type)
    if unstored and engine.parity_name in ("sqlite", "duckdb", "postgres"):
        with pytest.raises(EngineError, match="cannot store a column of type "):
            engine.load_table(table, data, key_column="id", vector_metric="l2")
        return
    engine.load_table(table, data, key_column="id", text_columns=["body"], vector_metric="l2")
    with pytest.raises(EngineError, match=", at key "):
        _search(engine, table, "cosine", 5)
    if change == "delete":
        assert engine.delete_rows(table, [spelled]) == 1
        remaining = [[1.0, 0.0]]
    else:
        engine.upsert_rows(table, _keyed_table(_written_key(keys, spelled), [[0.0, 3.0]]))
        assert engine.read_table(table).num_rows == 2
        remaining = [[1.0, 0.0], [0.0, 3.0]]
    assert _outside(remaining) == []
    hits = _search(engine, table, "cosine", 5)
    expected = sorted(_distances("cosine", remaining))
    assert [hit.distance for hit in hits] == pytest.approx(expected, rel=1e-5, abs=1e-6)


_OFFSETS = st.builds(
    dt.timezone, st.timedeltas(min_value=-dt.timedelta(hours=23), max_value=dt.timedelta(hours=23))
)


@given(
    instant=st.datetimes(min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 1, 1)),
    first=_OFFSETS,
    second=_OFFSETS,
)
def test_a_record_keeps_one_key_for_every_spelling_of_an_instant(
    instant: dt.datetime, first: dt.tzinfo, second: dt.tzinfo
) -> None:
    """Two spellings Python's ``==`` finds one instant (each engine's comparison of keys:
    the deletes above) are one key of a record, and so is the naive UTC wall time."""
    zoned = instant.replace(tzinfo=UTC)
    spellings = [zoned.astimezone(first), zoned.astimezone(second), instant]
    assert spellings[0] == spellings[1] == zoned
    assert len({_json_key(spelling) for spelling in spellings}) == 1  # as the record compares


@given(number=st.integers(min_value=-(2**53), max_value=2**53), scale=st.integers(0, 6))
def test_a_record_keeps_one_key_for_every_spelling_of_a_number(number: int, scale: int) -> None:
    spellings = [
        number,
        float(number),
        np.float64(number),
        Decimal(number).quantize(Decimal(1).scaleb(-scale)),
    ]
    if number == 0:
        spellings += [-0.0, np.float64(-0.0)]
    if abs(number) <= 2048:  # float16 holds these integers exactly
        spellings.append(np.float16(number))
    assert all(spelling == number for spelling in spellings)
    assert len({_json_key(spelling) for spelling in spellings}) == 1  # as the record compares
