"""A column no engine stores is refused at load on every store with one message naming it and
its type, and nothing is written: Arrow's ``null`` type inside a list or a struct
(``list<null>``, as Arrow types a JSON field that is ``[]`` on every line) and a struct of no
field (``struct<>``, a field that is ``{}`` on every line). Before, the local engine and
LanceDB loaded ``list<null>`` where the SQL stores and turbopuffer refused it, each in its
own words, and the local engine failed on ``struct<>`` with Parquet's error ("Cannot write
struct type ... with no child field") where LanceDB loaded it. The reference is Arrow's own
type: the test walks it for a null type or a struct of no field, independently of the
library's check."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from tests.parity.engines import STORE_ENGINES, empty_engine

ROWS = 2

COLUMNS: dict[str, pa.Array] = {
    "list<null>": pa.array([[], [None]], pa.list_(pa.null())),
    "list<null>, all NULL": pa.nulls(ROWS, pa.list_(pa.null())),
    "list<list<null>>": pa.array([[[]], []], pa.list_(pa.list_(pa.null()))),
    "struct<>": pa.array([{}, {}], pa.struct([])),
    "struct<a: null>": pa.array([{"a": None}, None], pa.struct([("a", pa.null())])),
    "list<struct<>>": pa.array([[{}], []], pa.list_(pa.struct([]))),
}
"""Column ``x`` of each case's table: types no engine stores."""


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


def _untyped(kind: pa.DataType) -> str:
    """What Arrow's type holds that no engine stores, found by walking it (the test's own
    reading): ``null`` inside it, or a struct of no field."""
    pending = [kind]
    while pending:
        inner = pending.pop()
        if pa.types.is_null(inner):
            return "null"
        if pa.types.is_struct(inner):
            if inner.num_fields == 0:
                return "struct of no field"
            pending.extend(inner.field(i).type for i in range(inner.num_fields))
        elif pa.types.is_list(inner):
            pending.append(inner.value_type)
    raise AssertionError(f"{kind} holds no untyped part")


_WORDS = {"null": "null type", "struct of no field": "a struct of no field"}
"""What the one message says of each untyped part."""


@pytest.mark.parametrize("case", list(COLUMNS))
def test_a_column_no_engine_stores_is_refused_alike_and_nothing_is_written(
    engine: Any, case: str
) -> None:
    column = COLUMNS[case]
    data = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "body": [f"disk report {row}" for row in range(ROWS)],
            "embedding": pa.array(
                [[1.0, float(row)] for row in range(ROWS)], pa.list_(pa.float32(), 2)
            ),
            "x": column,
        }
    )
    name = "untyped_" + re.sub(r"\W+", "_", case).strip("_")
    with pytest.raises(EngineError) as raised:
        engine.load_table(name, data, key_column="id", text_columns=["body"])
    message = str(raised.value)
    assert message.startswith(f"column 'x' has Arrow type {column.type}, ")
    assert _WORDS[_untyped(column.type)] in message
    assert "which no engine stores" in message
    assert name not in engine.tables
