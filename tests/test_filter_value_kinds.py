"""A filter value its column cannot be compared with is refused before the plan runs, with one
message on every engine (``engines/checks.py``); what is accepted is what DataFusion, the
local engine, compares without error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval import Comparison, InList, IsNull, Not, Or, PlanError
from hotdata_retrieval.engines.checks import (
    ColumnFacts,
    ValueKind,
    _TypedValues,
    arrow_value_kind,
    check_filter_values,
    declared_value_kind,
    is_vector_type,
    with_typed_values,
)
from hotdata_retrieval.engines.local import EngineError, LocalEngine
from hotdata_retrieval.engines.local.masks import predicate_mask

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3], pa.int64()),
        "small": pa.array([1, 2, 3], pa.int8()),
        "ratio": pa.array([0.5, 1.5, None], pa.float64()),
        "price": pa.array([1, 2, 3], pa.decimal128(10, 2)),
        "name": ["a", "5", None],
        "flag": [True, False, None],
        "day": pa.array([0, 1, 2], pa.date32()),
        "vector": pa.array([[1.0], [2.0], None], pa.list_(pa.float32())),
    }
)
KINDS = {field.name: arrow_value_kind(field.type) for field in TABLE.schema}

ACCEPTED = [
    ("id", 2),
    ("id", 2.5),
    ("id", "2"),
    ("id", "-2"),
    ("small", "3"),
    ("ratio", 1),
    ("ratio", "1.5"),
    ("ratio", "1e0"),
    ("ratio", ".5"),
    ("price", 2),
    ("name", "5"),
    ("name", ""),
    ("flag", True),
]
REFUSED = [
    ("id", "abc", "integer", "'abc', which is not an integer"),
    ("id", "2.5", "integer", "'2.5', which is not an integer"),
    ("id", "1e3", "integer", "'1e3', which is not an integer"),
    ("id", " 2", "integer", "' 2', which is not an integer"),
    ("id", "+2", "integer", "'+2', which is not an integer"),
    ("id", "9223372036854775808", "integer", "'9223372036854775808', which is not an integer"),
    ("id", True, "integer", "TRUE, a boolean"),
    ("ratio", "inf", "number", "'inf', which is not a finite number"),
    ("ratio", "-nan", "number", "'-nan', which is not a finite number"),
    ("ratio", "1e400", "number", "'1e400', which is not a finite number"),
    ("ratio", "half", "number", "'half', which is not a finite number"),
    ("name", 5, "text", "5, a number; quote it to compare text"),
    ("name", 1.5, "text", "1.5, a number; quote it to compare text"),
    ("name", False, "text", "FALSE, a boolean; quote it to compare text"),
    ("flag", "true", "boolean", "'true', text; compare it with TRUE or FALSE"),
    ("flag", 1, "boolean", "1, a number; compare it with TRUE or FALSE"),
    ("vector", 1, "vector", "1; a vector column can only be tested with IS NULL"),
    ("vector", "x", "vector", "'x'; a vector column can only be tested with IS NULL"),
]


def test_arrow_types_have_the_kinds_they_compare_as() -> None:
    assert KINDS == {
        "id": ValueKind.INTEGER,
        "small": ValueKind.INTEGER,
        "ratio": ValueKind.NUMBER,
        "price": ValueKind.NUMBER,
        "name": ValueKind.TEXT,
        "flag": ValueKind.BOOLEAN,
        "day": ValueKind.TEMPORAL,
        "vector": ValueKind.VECTOR,
    }
    assert arrow_value_kind(pa.large_string()) is ValueKind.TEXT
    assert arrow_value_kind(pa.dictionary(pa.int32(), pa.string())) is ValueKind.TEXT
    assert arrow_value_kind(pa.list_(pa.float32(), 4)) is ValueKind.VECTOR
    assert arrow_value_kind(pa.list_(pa.string())) is ValueKind.LIST
    assert arrow_value_kind(pa.timestamp("us", tz="UTC")) is ValueKind.TEMPORAL


LIST_TYPES = [
    (pa.list_(pa.float32()), True),
    (pa.list_(pa.float64(), 3), True),
    (pa.large_list(pa.float16()), True),
    (pa.list_(pa.uint64()), False),
    (pa.list_(pa.int64(), 2), False),
    (pa.large_list(pa.int8()), False),
    (pa.list_(pa.bool_()), False),
    (pa.list_(pa.string()), False),
]
"""List types and whether each is a vector type: lists of floats only."""


@pytest.mark.parametrize(("kind", "vector"), LIST_TYPES, ids=[str(k) for k, _ in LIST_TYPES])
def test_only_a_list_of_floats_is_a_vector_column_on_the_local_engine(
    kind: pa.DataType, vector: bool
) -> None:
    assert is_vector_type(kind) is vector
    assert arrow_value_kind(kind) is (ValueKind.VECTOR if vector else ValueKind.LIST)
    size = kind.list_size if pa.types.is_fixed_size_list(kind) else 2
    if vector:
        values: list[Any] = [[1.0] * size, None, [0.5] * size]
    elif pa.types.is_fixed_size_list(kind):
        values = [[1] * size, None, [0] * size]
    else:  # of different lengths and empty: a vector column would be refused
        element = {"bool": True, "string": "a"}.get(str(kind.value_type), 1)
        values = [[element], None, []]
    data = pa.table({"id": [1, 2, 3], "x": pa.array(values, kind)})
    with LocalEngine() as engine:
        engine.load_table("t", data, key_column="id")
        found = [index.column for index in engine.indexes("t").vectors]
        assert found == (["x"] if vector else [])
        assert engine.read_table("t").column("x").type == kind


@pytest.mark.parametrize(
    ("declared", "kind"),
    [
        ("INTEGER", ValueKind.INTEGER),
        ("BIGINT", ValueKind.INTEGER),
        ("smallint", ValueKind.INTEGER),
        ("HUGEINT", ValueKind.INTEGER),
        ("double precision", ValueKind.NUMBER),
        ("REAL", ValueKind.NUMBER),
        ("DECIMAL(18,3)", ValueKind.NUMBER),
        ("numeric", ValueKind.NUMBER),
        ("FLOAT", ValueKind.NUMBER),
        ("TEXT", ValueKind.TEXT),
        ("character varying", ValueKind.TEXT),
        ("VARCHAR", ValueKind.TEXT),
        ("BOOLEAN", ValueKind.BOOLEAN),
        ("boolean", ValueKind.BOOLEAN),
        ("FLOAT[384]", ValueKind.VECTOR),
        ("VARCHAR[]", ValueKind.LIST),
        ("BIGINT[]", ValueKind.LIST),
        ("ARRAY", ValueKind.LIST),
        ("vector(384)", ValueKind.VECTOR),
        ("USER-DEFINED", ValueKind.OTHER),
        ("INTERVAL", ValueKind.OTHER),
        ("point", ValueKind.OTHER),
        ("timestamp with time zone", ValueKind.TEMPORAL),
        ("TIMESTAMP", ValueKind.TEMPORAL),
        ("DATE", ValueKind.TEMPORAL),
        ("BLOB", ValueKind.OTHER),
        # Arrow's names, as the Hotdata API lists a column
        ("Int64", ValueKind.INTEGER),
        ("Utf8", ValueKind.TEXT),
        ("LargeUtf8", ValueKind.TEXT),
        ("Float32", ValueKind.NUMBER),
        ("Decimal128(20, 0)", ValueKind.NUMBER),
        ("Timestamp(Nanosecond, None)", ValueKind.TEMPORAL),
        ("Dictionary(Int32, Utf8)", ValueKind.TEXT),
        ("Dictionary(UInt16, Int64)", ValueKind.INTEGER),
        ("List(Int64)", ValueKind.LIST),
        # a list of floating-point numbers is a vector whatever its lengths, as on every
        # engine (is_vector_type, DuckDB's DOUBLE[]); one of structs holding floats is not
        ('List(Field { name: "item", data_type: Float32, nullable: true })', ValueKind.VECTOR),
        ("List(Float64)", ValueKind.VECTOR),
        ("LargeList(Float16)", ValueKind.VECTOR),
        ("FixedSizeList(384 x Float32)", ValueKind.VECTOR),
        (
            'FixedSizeList(Field { name: "item", data_type: Float32, nullable: true }, 3)',
            ValueKind.VECTOR,
        ),
        ("FixedSizeList(4 x Int32)", ValueKind.LIST),
        ('List(Struct("a": Float64))', ValueKind.LIST),
        ('FixedSizeList(2 x Struct("a": Float32))', ValueKind.LIST),
        (
            'List(Field { name: "item", data_type: Struct([Field { name: "f", '
            "data_type: Float32 }]) })",
            ValueKind.LIST,
        ),
        ("List(Utf8)", ValueKind.LIST),
        ('Struct("a": Int64, "b": Utf8)', ValueKind.OTHER),
        ('Map(Field { name: "entries", data_type: Struct(...) }, false)', ValueKind.OTHER),
        # DuckDB's nested types
        ("STRUCT(a INTEGER)", ValueKind.OTHER),
        ("STRUCT(a INTEGER)[]", ValueKind.LIST),
        ("STRUCT(a DOUBLE)[]", ValueKind.LIST),
        ("DOUBLE[]", ValueKind.VECTOR),
        ("MAP(VARCHAR, INTEGER)", ValueKind.OTHER),
        ("", ValueKind.OTHER),
        (None, ValueKind.OTHER),
    ],
)
def test_declared_types_have_the_kinds_they_compare_as(declared: Any, kind: ValueKind) -> None:
    assert declared_value_kind(declared) is kind


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    with LocalEngine() as local:
        local.load_table("t", TABLE)
        yield local


@pytest.mark.parametrize(("column", "value"), ACCEPTED)
def test_an_accepted_value_is_one_datafusion_compares(
    engine: LocalEngine, column: str, value: Any
) -> None:
    predicate = Comparison(column=column, operator="=", value=value)
    check_filter_values(predicate, KINDS)
    literal = f"'{value}'" if isinstance(value, str) else str(value).upper()
    engine.sql(f"SELECT count(*) AS n FROM t WHERE {column} = {literal}")  # no error


@pytest.mark.parametrize(("column", "value", "kind", "message"), REFUSED)
def test_a_refused_value_names_the_column_its_kind_and_the_value(
    column: str, value: Any, kind: str, message: str
) -> None:
    predicate = Or(
        operands=[IsNull(column="id"), Not(operand=InList(column=column, values=[value]))]
    )
    with pytest.raises(PlanError) as caught:
        check_filter_values(predicate, KINDS)
    assert caught.value.field == "filter"
    assert caught.value.value == value
    assert str(caught.value) == (
        f"filter compares column '{column}', which holds {kind} values, with {message}"
    )


NON_FINITE = {"inf", "-nan", "1e400"}
"""Refused though the local engine reads them: other engines read them otherwise (LanceDB not
at all, SQLite and DuckDB ``'-nan'`` as a NaN above every number)."""


@pytest.mark.parametrize(
    ("column", "value"), [(c, v) for c, v, _, _ in REFUSED if v not in NON_FINITE]
)
def test_the_refused_values_fail_on_the_local_engine_too(
    engine: LocalEngine, column: str, value: Any
) -> None:
    """The check is no stricter than the local engine: DataFusion's SQL, or the Arrow row mask
    its native searches filter with, fails on each refused value (Arrow reads no ``+`` and no
    spaces around an integer; DataFusion does)."""
    literal = f"'{value}'" if isinstance(value, str) else str(value).upper()
    try:
        engine.sql(f"SELECT count(*) AS n FROM t WHERE {column} = {literal}")
    except EngineError:
        return
    with pytest.raises((pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, TypeError)):
        predicate_mask(Comparison(column=column, operator="=", value=value), TABLE)


def test_other_columns_and_unknown_columns_are_left_to_the_engine() -> None:
    check_filter_values(Comparison(column="raw", operator=">", value="x"), {"raw": ValueKind.OTHER})
    check_filter_values(Comparison(column="missing", operator=">", value="x"), KINDS)
    check_filter_values(None, KINDS)


def test_a_date_column_takes_iso_text_dates_and_datetimes_only() -> None:
    import datetime

    for value in ("2024-03-01", "2024-03-01 10:00:00", datetime.date(2024, 3, 1)):
        check_filter_values(Comparison(column="day", operator=">", value=value), KINDS)
    for value in ("yesterday", 20240301, True):
        with pytest.raises(PlanError, match="not an ISO 8601 date or timestamp"):
            check_filter_values(Comparison(column="day", operator=">", value=value), KINDS)
    with pytest.raises(PlanError, match="compares only with such a column"):
        check_filter_values(
            Comparison(column="name", operator=">", value=datetime.date(2024, 3, 1)), KINDS
        )


_KINDS = {
    "n": ValueKind.INTEGER,
    "x": ValueKind.NUMBER,
    "d": ValueKind.TEMPORAL,
    "t": ValueKind.TEXT,
}


@pytest.mark.parametrize(
    "predicate",
    [
        Comparison(column="t", operator="=", value="2"),
        Comparison(column="n", operator="=", value="2"),
        Comparison(column="n", operator="=", value=2),
        Comparison(column="x", operator=">", value="0.5"),
        Comparison(column="d", operator=">", value="2024-03-01"),
        Comparison(column="missing", operator="=", value="2"),
        InList(column="n", values=("1", 2)),
        Or(operands=(IsNull(column="d"), Comparison(column="t", operator="=", value="a"))),
        Not(operand=Comparison(column="d", operator="<", value="2024-03-01T05:00:00")),
    ],
)
@pytest.mark.parametrize("numbers", [True, False])
@pytest.mark.parametrize(
    "columns",
    [
        ColumnFacts(),
        ColumnFacts(float32=frozenset({"x"})),
        ColumnFacts(text_dates=frozenset({"t"})),
    ],
)
def test_typed_values_skip_a_filter_they_cannot_change(
    predicate: Any, numbers: bool, columns: ColumnFacts
) -> None:
    """A filter none of whose columns can have a value retyped is returned itself without
    a visit; any other is what the visit of every node gives."""
    kinds = {
        column: kind
        for column, kind in _KINDS.items()
        if numbers or kind not in (ValueKind.INTEGER, ValueKind.NUMBER)
    }
    expected = _TypedValues(kinds, columns).visit(predicate)
    found = with_typed_values(predicate, _KINDS, columns, numbers=numbers)
    assert found == expected and repr(found) == repr(expected)
    assert (found is predicate) is (expected is predicate)
