"""An open table reads the rows of a page (``LoadedTable.rows_at``, ``values_at``) as
``pyarrow.Table.to_pylist`` gives them, whether a column is read through its NumPy copy (integers
and floats without NULL) or taken from the Arrow rows (everything else), across chunks."""

from __future__ import annotations

import datetime
import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval.engines.local.tables import LoadedTable

ROWS = 40

_TYPES = {
    "int8": pa.int8(),
    "int64": pa.int64(),
    "uint64": pa.uint64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
}


def _values(kind: pa.DataType, seed: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    if pa.types.is_floating(kind):
        values = rng.standard_normal(ROWS).astype(kind.to_pandas_dtype()).tolist()
        values[:4] = [0.0, -0.0, math.inf, math.nan]
        return values
    info = np.iinfo(kind.to_pandas_dtype())
    return rng.integers(
        info.min, info.max, ROWS, dtype=kind.to_pandas_dtype(), endpoint=True
    ).tolist()


def _table(seed: int) -> pa.Table:
    columns: dict[str, Any] = {
        name: pa.array(_values(kind, seed), kind) for name, kind in _TYPES.items()
    }
    nullable = _values(pa.int64(), seed + 1)
    nullable[3] = None
    columns["nullable"] = pa.array(nullable, pa.int64())
    columns["flag"] = pa.array([i % 3 == 0 for i in range(ROWS)], pa.bool_())
    columns["text"] = pa.array([f"row {i}" if i % 5 else None for i in range(ROWS)])
    columns["when"] = pa.array(
        [datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i) for i in range(ROWS)],
        pa.timestamp("us"),
    )
    columns["half"] = pa.array(np.arange(ROWS, dtype=np.float16))
    table = pa.table(columns)
    # two chunks a column: the NumPy copy must join them in rowid order
    return pa.concat_tables([table.slice(0, ROWS // 3), table.slice(ROWS // 3)])


def _loaded(table: pa.Table) -> LoadedTable:
    return LoadedTable(entry=None, data=table, bm25={})  # type: ignore[arg-type]


def _exact(rows: list[dict[str, Any]]) -> list[dict[str, tuple[type, str]]]:
    """Each value as its type and ``repr``: a NaN equals a NaN, ``-0.0`` differs from ``0.0``
    and ``1`` from ``1.0``."""
    return [{name: (type(value), repr(value)) for name, value in row.items()} for row in rows]


@given(
    seed=st.integers(0, 2**16),
    rowids=st.lists(st.integers(0, ROWS - 1), max_size=12),
    columns=st.lists(
        st.sampled_from([*_TYPES, "nullable", "flag", "text", "when", "half"]),
        unique=True,
        min_size=1,
        max_size=6,
    ),
)
def test_a_page_reads_as_arrow_gives_it(seed: int, rowids: list[int], columns: list[str]) -> None:
    table = _table(seed)
    loaded = _loaded(table)
    page = np.array(rowids, dtype=np.int64)
    expected = table.select(columns).take(pa.array(rowids, pa.int64())).to_pylist()
    for _ in range(2):  # the NumPy copy is made on first use, then read
        assert _exact(loaded.rows_at(columns, page)) == _exact(expected)
    for column in columns:
        found = [{column: value} for value in loaded.values_at(column, page)]
        assert _exact(found) == _exact([{column: row[column]} for row in expected])


def test_only_columns_of_numbers_without_null_get_a_numpy_copy() -> None:
    loaded = _loaded(_table(0))
    page = np.array([0, 39, 13], dtype=np.int64)
    loaded.rows_at(loaded.data.column_names, page)
    copied = {name for name, numbers in loaded._numbers.items() if numbers is not None}
    assert copied == set(_TYPES)
    assert not any(
        numbers.flags.writeable for numbers in loaded._numbers.values() if numbers is not None
    )
