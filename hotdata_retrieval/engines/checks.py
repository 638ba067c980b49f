"""Checks of a plan against the table it searches, shared by every engine.

Each engine knows its table's columns (and their types) in its own way; what a plan may ask of
them is the same everywhere, so the checks and their messages live here:

- :func:`check_columns`: every column the plan names (projection, key, filter, branches,
  facets, formula, highlight) is a column of the table (:class:`EngineError` otherwise,
  naming the first missing one and the table's columns), and each read for its value holds
  the kind it is read as (:func:`check_read_kinds`);
- :func:`check_filter_values`: every value the filter compares a column with can be compared
  with it (:class:`PlanError` on field ``filter`` otherwise, naming the column, its kind and the
  value). Engines disagree on a text column compared with a number — DataFusion casts every
  row's text to the number and fails on the first that is not one, PostgreSQL refuses the
  operator, SQLite compares the two kinds and matches nothing — so the plan is refused on each
  with one message, before it runs.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.engines._integer_literals import (
    coarse_timestamp_predicate,
    decimal_predicate,
    exact_date_predicate,
    exact_float_predicate,
    exact_integer_predicate,
    nanosecond_timestamp_predicate,
)
from hotdata_retrieval.engines._vector_norms import outside_positions
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.errors import PlanError, row_name
from hotdata_retrieval.plan.filters import (
    And,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    ValueRole,
    predicate_columns,
    value_types,
)
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import DistanceMetric, SearchPlan
from hotdata_retrieval.plan.steps import Highlight
from hotdata_retrieval.plan.values import (
    FLOAT32_MAX,
    ISO_FORMS,
    NUMBER_TEXT,
    cosine_norm_problem,
    float32_squared_norms,
    iso_text_problem,
    parse_iso_date,
    parse_iso_timestamp,
)

if TYPE_CHECKING:
    import pyarrow as pa


class ValueKind(enum.Enum):
    """What kind of value a column holds, as far as comparing it with a literal goes."""

    TEXT = "text"
    INTEGER = "integer"
    NUMBER = "number"
    """A number that is not an integer type: floating point or decimal."""
    BOOLEAN = "boolean"
    TEMPORAL = "date or timestamp"
    """A date, time or timestamp: compared with a date or a datetime, or with ISO 8601 text,
    which engines read as the column's type."""
    VECTOR = "vector"
    """A list of floating-point numbers: no literal compares with it (``IS NULL`` tests it)."""
    LIST = "list"
    """A list of other values: tested with ``contains_all``/``contains_any`` or ``IS
    NULL``."""
    OTHER = "other"
    """Bytes, intervals and anything else: left to the engine."""


def is_vector_type(kind: Any) -> bool:
    """Whether a column of Arrow type ``kind`` (``pyarrow.DataType``) is a vector column, on
    every engine: a list, large list or fixed-size list of floating-point numbers (16, 32 or
    64 bits). A list of integers or booleans is a plain array column (tested with
    ``contains_all``/``contains_any``), whatever its lengths."""
    import pyarrow as pa

    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ) and pa.types.is_floating(kind.value_type)


def check_vector_rows_type(kind: Any, column: str, table: Any) -> None:
    """Refuse rows written into vector column ``column`` of ``table`` whose Arrow type
    ``kind`` is not a list of numbers (integers or floating-point numbers; Arrow's null type,
    a column of NULLs only, passes): a list of booleans would be read as 0 and 1 on every
    engine, where a query vector of booleans is refused
    (:func:`~hotdata_retrieval.plan.values.check_query_vector`), and a table loaded with it
    holds an array column, not vectors.

    Raises:
        EngineError: naming the column, the table and the rows' type.
    """
    import pyarrow as pa

    if pa.types.is_null(kind):
        return
    listed = pa.types.is_list(kind) or pa.types.is_large_list(kind)
    if (listed or pa.types.is_fixed_size_list(kind)) and (
        pa.types.is_integer(kind.value_type)
        or pa.types.is_floating(kind.value_type)
        or pa.types.is_null(kind.value_type)
    ):
        return
    raise EngineError(
        f"vector column '{column}' of table '{table}' holds vectors of numbers; the rows "
        f"written hold {kind}"
    )


def arrow_schema_of_text(text: str | bytes) -> Any:
    """The Arrow schema (``pyarrow.Schema``) serialised as ``text``: the base64 of an Arrow
    IPC schema message, as pyarrow writes a table's schema into a Parquet file's metadata
    (``ARROW:schema``) and the SQL stores' catalogs keep a column's loaded type; ``None`` for
    text that is not one."""
    import base64
    import binascii

    import pyarrow as pa

    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (binascii.Error, ValueError, pa.ArrowException):
        return None


def arrow_value_kind(kind: Any) -> ValueKind:
    """The :class:`ValueKind` of an Arrow data type (``pyarrow.DataType``)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return ValueKind.TEXT
    if pa.types.is_string_view(kind):
        return ValueKind.TEXT
    if pa.types.is_integer(kind):
        return ValueKind.INTEGER
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return ValueKind.NUMBER
    if pa.types.is_boolean(kind):
        return ValueKind.BOOLEAN
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind) or pa.types.is_time(kind):
        return ValueKind.TEMPORAL
    if is_vector_type(kind):
        return ValueKind.VECTOR
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return ValueKind.LIST
    return ValueKind.OTHER


_DECLARED_OTHER = ("INTERVAL", "POINT")
_DECLARED_TEXT = ("CHAR", "TEXT", "CLOB", "STRING", "UTF8")  # Utf8: Arrow's, as Hotdata lists
_DECLARED_NUMBER = ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL")
_ARROW_LISTS = ("LIST(", "LARGELIST(", "FIXEDSIZELIST(", "LISTVIEW(", "LARGELISTVIEW(")
_ARROW_OTHER = ("STRUCT(", "MAP(", "UNION(", "RUNENDENCODED(")
_ARROW_FLOAT_ELEMENTS = re.compile(
    r"[A-Z]*LIST[A-Z]*\((?:\d+ X |FIELD \{[^{}]*?DATA_TYPE: )?FLOAT(?:16|32|64)\b"
)
"""An Arrow list type's name (upper-cased) whose elements are floating-point numbers, as
Arrow's Rust crate displays it: ``List(Float32)``, ``FixedSizeList(384 x Float32)``, or with
the element's field, ``List(Field { name: "item", data_type: Float32, ... })``."""


def declared_value_kind(declared: str | None) -> ValueKind:
    """The :class:`ValueKind` of a column's declared SQL type name (``information_schema``'s
    ``data_type``, SQLite's ``pragma_table_info`` ``type``, or an Arrow type's name as the
    Hotdata API lists a column: ``Int64``, ``Utf8``, ``Float64``). SQLite's affinity rules decide by
    the same substrings (https://www.sqlite.org/datatype3.html, section 3.1); an array type
    (``FLOAT[384]``, ``ARRAY``, Arrow's ``List(Int64)``) is neither text nor a number, an
    Arrow dictionary has its values' kind (``Dictionary(Int32, Utf8)`` is text) and an
    Arrow struct or map, whose name lists its fields' types, none of these."""
    name = (declared or "").upper()
    if name.endswith("]"):  # DuckDB's lists and arrays: FLOAT[384], VARCHAR[], STRUCT(...)[]
        if name.startswith(("FLOA", "DOUB", "REAL")):
            return ValueKind.VECTOR
        return ValueKind.LIST
    if name.startswith("DICTIONARY(") and "," in name:  # Arrow's Dictionary(Int32, Utf8)
        return declared_value_kind(name[len("DICTIONARY(") :].split(",", 1)[1].strip()[:-1])
    if name.startswith(_ARROW_LISTS):  # Arrow's List(Int64), FixedSizeList(384 x Float32)
        # a list of floating-point numbers is a vector, whatever its lengths (is_vector_type)
        return ValueKind.VECTOR if _ARROW_FLOAT_ELEMENTS.match(name) else ValueKind.LIST
    if name.startswith(_ARROW_OTHER):  # Struct(...), Map(...): fields, not one value
        return ValueKind.OTHER
    if name == "ARRAY":  # PostgreSQL's information_schema name of every array type
        return ValueKind.LIST
    if "ARRAY" in name or name.startswith("VECTOR"):
        return ValueKind.VECTOR
    if not name or name.startswith("_"):
        return ValueKind.OTHER
    if any(part in name for part in _DECLARED_OTHER):
        return ValueKind.OTHER
    if any(part in name for part in ("DATE", "TIME")):
        return ValueKind.TEMPORAL
    if name.startswith("BOOL"):
        return ValueKind.BOOLEAN
    if "INT" in name:
        return ValueKind.INTEGER
    if any(part in name for part in _DECLARED_TEXT):
        return ValueKind.TEXT
    if any(part in name for part in _DECLARED_NUMBER):
        return ValueKind.NUMBER
    return ValueKind.OTHER


RESERVED_COLUMNS = ("score", "_distance")
"""Columns a search computes (the BM25 score, a distance): a searchable table cannot have one,
or the statement's ``score`` would name the table's column (``SELECT base.*, ... AS score``)."""


def check_reserved_columns(columns: Iterable[str]) -> None:
    """Refuse a searchable table that has a column named like one a search computes.

    Raises:
        EngineError: naming the column.
    """
    present = set(columns)
    for reserved in RESERVED_COLUMNS:
        if reserved in present:
            raise EngineError(
                f"column {reserved!r} is reserved in a searchable table: text and vector "
                "searches add a column of that name to their results; rename it before loading"
            )


def rows_table(data: Any) -> Any:
    """``data``, the rows a load or an upsert writes, as an Arrow table: a
    ``pyarrow.Table`` as it is, a ``pyarrow.RecordBatch`` as a table of that one batch.
    Every engine's load and upsert read their rows through this one check, so none fails on
    other rows with Python's own ``AttributeError``.

    Raises:
        EngineError: ``data`` is neither (a list, a dict, a pandas DataFrame, a
            ``RecordBatchReader``), naming its type.
    """
    import pyarrow as pa

    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    raise EngineError(
        f"rows must be an Arrow table (pyarrow.Table or RecordBatch), not {type(data).__name__}"
    )


def table_load(create: Any) -> Any:
    """``create``, an upsert's table to make when it is missing: ``None`` or a
    :class:`~hotdata_retrieval.engines.local.TableLoad`. Every engine's ``upsert_rows`` reads
    it through this one check, so none fails on another value with Python's own
    ``AttributeError``.

    Raises:
        EngineError: any other value, naming its type.
    """
    if create is None:
        return None
    from hotdata_retrieval.engines.local._prepare import TableLoad

    if isinstance(create, TableLoad):
        return create
    raise EngineError(
        "create must be a TableLoad (the rows, key and indexes of the table to make), not "
        f"{type(create).__name__}"
    )


def column_names(schema: Any) -> list[str]:
    """The names of ``schema``'s columns as every engine stores them (lower-cased by
    :func:`~hotdata_retrieval.plan.names.normalize_identifier`), refusing two columns that
    would be stored under one name: the same name twice, or names that differ only in case
    or in Unicode form (``"cafe\u0301"`` and ``"caf\u00e9"``).
    Every engine's load and upsert read the rows' columns through this one check, so none
    fails on such rows with Arrow's own ``KeyError``.

    Args:
        schema: an Arrow schema (``data.schema`` of the rows).

    Returns:
        The stored names, in the schema's order.

    Raises:
        EngineError: naming the colliding columns as given.
        PlanError: a name that is no identifier (empty, a control character, a double quote).
    """
    given = [field.name for field in schema]
    names = [normalize_identifier(name, label="column") for name in given]
    seen: dict[str, str] = {}
    for original, name in zip(given, names, strict=True):
        if name not in seen:
            seen[name] = original
            continue
        earlier = seen[name]
        if earlier == original:
            raise EngineError(
                f"column {original!r} appears twice in the rows; each column needs its own name"
            )
        how = (
            "only in case"
            if earlier.lower() == original.lower()
            else "only in case or in how their accents are encoded (Unicode NFC)"
        )
        raise EngineError(
            f"columns {earlier!r} and {original!r} differ {how} and would be "
            f"stored as one column {name!r}; rename one of them"
        )
    return names


NUL_CHARACTER = "\x00"
"""The character no engine loads: PostgreSQL's ``text`` cannot hold it (PostgreSQL
documentation §8.3, "the character with code zero (sometimes called NUL) cannot be
stored"), so every engine refuses it alike (:func:`check_no_nul`)."""


def check_no_nul(data: Any) -> None:
    """Refuse rows whose text holds the NUL character (U+0000) in any string column, on
    every engine alike: PostgreSQL cannot store it, and one plan must find the same rows on
    every store, so none stores it. ``data`` is an Arrow table; anything else is left to the
    caller's own type check, which names it.

    Raises:
        EngineError: naming the column and the first row (counted from 1) holding it.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(data, pa.Table):
        return
    for position, field in enumerate(data.schema):
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            continue
        found = pc.match_substring(data.column(position), NUL_CHARACTER)
        if not pc.any(found).as_py():
            continue
        row = pc.index(pc.fill_null(found, False), True).as_py()
        raise EngineError(
            f"column {field.name!r} holds the NUL character (U+0000) in {row_name(row)}: no "
            "engine "
            "stores it (PostgreSQL text cannot hold it); remove or replace it before loading"
        )


def _nested_types(kind: Any) -> Iterator[Any]:
    """``kind`` (a ``pyarrow.DataType``) and every type inside it, outermost first: a list's
    element, a struct's fields, a map's keys and items, a dictionary's values."""
    import pyarrow as pa

    yield kind
    if pa.types.is_dictionary(kind):
        yield from _nested_types(kind.value_type)
    elif pa.types.is_map(kind):
        yield from _nested_types(kind.key_type)
        yield from _nested_types(kind.item_type)
    elif pa.types.is_struct(kind):
        for position in range(kind.num_fields):
            yield from _nested_types(kind.field(position).type)
    elif hasattr(kind, "value_type"):  # lists of every kind
        yield from _nested_types(kind.value_type)


def untyped_column_problem(kind: Any) -> str | None:
    """Why no engine stores a column of Arrow type ``kind``, or ``None``: Arrow's ``null``
    type at any depth (``null``: every value NULL, as Arrow types a column built from
    ``None`` alone; ``list<null>``: every list empty or of NULLs, as it types a JSON field
    that is ``[]`` on every line), or a struct of no field at any depth (``struct<>``: a JSON
    field that is ``{}`` on every line). SQLite, DuckDB, PostgreSQL and turbopuffer have no
    column type for either, Parquet (the local engine's files) cannot write a struct of no
    field, and the local engine and LanceDB, which could hold the rest, refuse them too, so
    a table loads on every engine or on none."""
    import pyarrow as pa

    if pa.types.is_null(kind):
        return (
            "has Arrow type null (every value NULL, no type), which no engine stores; cast it "
            "to the type its values will have before loading (say "
            "data.set_column(..., pa.nulls(n, pa.string()))) or drop it"
        )
    for inner in _nested_types(kind):
        if pa.types.is_null(inner):
            return (
                f"has Arrow type {kind}, whose values hold Arrow's null type (every list "
                "empty or of NULLs: no element type), which no engine stores; cast it to the "
                "type its values will have before loading (say pa.list_(pa.string())) or "
                "drop it"
            )
        if pa.types.is_struct(inner) and inner.num_fields == 0:
            return (
                f"has Arrow type {kind}, a struct of no field (an object with no key), which "
                "no engine stores; drop it or give it a field"
            )
    return None


def filter_column_problem(kind: Any) -> str | None:
    """Why a :class:`~hotdata_retrieval.documents.DocumentStore` cannot filter on a column of
    Arrow type ``kind``, on any engine, or ``None``: a type no engine stores
    (:func:`untyped_column_problem`), or a struct or map, itself or as a list's element,
    whose values no filter compares (a filter names a column, not a field inside one:
    SQLite, DuckDB, PostgreSQL and turbopuffer hold no struct, and the local engine and
    LanceDB, which do, have no filter of one)."""
    import pyarrow as pa

    problem = untyped_column_problem(kind)
    if problem is not None:
        return problem
    element = kind.value_type if pa.types.is_list(kind) or pa.types.is_large_list(kind) else kind
    if pa.types.is_struct(element) or pa.types.is_map(element):
        return (
            f"has Arrow type {kind}, whose values are nested fields no filter compares (a "
            "filter names a column); declare each field you filter on as a filter column "
            "of its own"
        )
    return None


def check_no_null_type(data: Any) -> None:
    """Refuse, at load, a column no engine stores (:func:`untyped_column_problem`: Arrow's
    ``null`` type at any depth, ``null`` or ``list<null>``, or a struct of no field), on
    every engine alike, with one message. ``data`` is an Arrow table; anything else is left
    to the caller's own type check. An upsert into a loaded table takes a column of the
    ``null`` type as NULLs of the table's column type.

    Raises:
        EngineError: naming the first such column and its type.
    """
    import pyarrow as pa

    if not isinstance(data, pa.Table):
        return
    for field in data.schema:
        problem = untyped_column_problem(field.type)
        if problem is not None:
            raise EngineError(f"column {field.name!r} {problem}")


def check_no_nan(data: Any, engine: str) -> None:
    """Refuse a NaN in any floating-point column of ``data`` (an Arrow table; anything else
    is left to the caller's own type check), for a store that cannot hold it: SQLite stores
    a NaN REAL as NULL, and turbopuffer's JSON has no NaN, so a NaN loaded there became NULL
    and the same plan kept other rows than on the stores that hold it (a NaN sorts above
    every number in SQL: ``f > 1`` keeps it on the local engine, DuckDB, PostgreSQL and
    LanceDB).

    Raises:
        EngineError: naming the column and the first row (counted from 1) holding NaN.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(data, pa.Table):
        return
    for position, field in enumerate(data.schema):
        if not pa.types.is_floating(field.type):
            continue
        found = pc.fill_null(pc.is_nan(data.column(position)), False)
        if not pc.any(found).as_py():
            continue
        row = pc.index(found, True).as_py()
        raise EngineError(
            f"column {field.name!r} holds NaN in {row_name(row)}, which the {engine} store "
            "cannot hold (it would read NULL); load NULL or a number instead"
        )


KEY_ADVICE = "give each row a key of its own, not NULL"
"""What to do about a key column :func:`key_column_error` refuses."""


def key_column_error(keys: Any, key: str, *, loading: bool = False) -> EngineError:
    """The error for a key column whose values do not name one row each: ``key column
    '<key>' <why>; <what to do>``, the why from
    :func:`~hotdata_retrieval.engines._repeated_keys.key_problem` (how many NULLs, or the
    first value held twice and how often), so every engine names the same value. ``loading``:
    the table is being made, so naming another key column is a remedy too.

    >>> import pyarrow as pa
    >>> str(key_column_error(pa.array([1, 2, 1]), "id"))
    "key column 'id' is not unique: 1 appears 2 times; give each row a key of its own, not NULL"
    """
    from hotdata_retrieval.engines._repeated_keys import key_problem

    problem = key_problem(keys) or "holds NULL or a value twice"
    advice = f"{KEY_ADVICE}, or name another key column" if loading else KEY_ADVICE
    return EngineError(f"key column '{key}' {problem}; {advice}")


UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
"""Each Arrow time unit's name in a message."""


def check_key_column(
    keys: Any,
    key: str,
    *,
    loading: bool = False,
    timestamp_unit: str = "ns",
    store: str = "the store",
) -> None:
    """``keys`` name one row each (no NULL, no value twice, no NaN, a comparable type:
    :func:`~hotdata_retrieval.engines._repeated_keys.key_problem`), and the store keeps each
    as it is given: a timestamp key is a whole number of ``timestamp_unit``, the finest unit
    ``store`` (its name in the message, ``"the DuckDB engine"``) keeps a timestamp in (an
    Arrow time unit; the default, nanoseconds, is Arrow's finest, which the local engine and
    LanceDB keep). A store rounds a finer key to its unit, so keys apart by less would be one
    key there: DuckDB and PostgreSQL kept two rows under one key, and an upsert then added a
    row or replaced both. A ``date64`` key is a whole day on every engine, as Arrow's
    specification has it: the SQL stores keep one as SQL's ``DATE`` and the local engine as
    Parquet's date, so keys of one day would be one key there.

    Raises:
        EngineError: :func:`key_column_error`'s; a ``date64`` key that is not a whole day; a
            timestamp key finer than ``timestamp_unit``; naming the column, the first such
            key and its row.
    """
    from hotdata_retrieval.engines._repeated_keys import (
        finer_timestamp,
        key_problem,
        partial_day,
    )

    if key_problem(keys) is not None:
        raise key_column_error(keys, key, loading=loading)
    within = partial_day(keys)
    if within is not None:
        row, moment = within
        advice = "load such keys as timestamp[ms]"
        if loading:
            advice += " or name another key column"
        raise EngineError(
            f"key column '{key}' holds the date64 {moment!r} in {row_name(row)}, which is not "
            "a whole day (Arrow's date64 is one; the SQL stores and the local engine keep it "
            f"as its day, so keys of one day would be one key); {advice}"
        )
    finer = finer_timestamp(keys, timestamp_unit)
    if finer is None:
        return
    row, text = finer
    unit = UNIT_NAMES[timestamp_unit]
    advice = f"round the keys to {unit} (cast the column to timestamp[{timestamp_unit}])"
    if loading:
        advice += " or name another key column"
    raise EngineError(
        f"key column '{key}' holds {text!r} in {row_name(row)}, finer than {store} keeps a "
        f"timestamp ({unit}): keys apart by less would be one key there; {advice}"
    )


def check_temporal_values_kept(
    data: Any, *, timestamp_unit: str = "ns", store: str = "the store"
) -> None:
    """Every timestamp and ``date64`` value of ``data`` (an Arrow table: the rows a load or
    an upsert writes; anything else is left to the caller's own type check), in any column,
    key or not, a list's elements and a dictionary's values included, is one the store
    keeps as it is: a timestamp is a whole number of ``timestamp_unit`` (an Arrow time unit:
    the finest ``store``, named so in the message, keeps; nanoseconds, Arrow's finest, for
    the local engine, LanceDB and the Hotdata engine) and a ``date64`` a whole day (Arrow's
    specification has it so). A store changed any other value silently: DuckDB and
    PostgreSQL rounded a nanosecond timestamp to its microsecond, every engine kept a
    ``date64`` within a day as its day, and SQLite wrote the nanosecond text, after which
    each read of the table failed. A finer-typed column whose values are whole numbers of
    the store's unit loads and reads back equal. A key column is checked first by
    :func:`check_key_column`, whose message says what a rounded key would do.

    Raises:
        EngineError: naming the column, the first such value (every digit of its unit) and
            its row, and the store's unit; nothing is written.
    """
    import pyarrow as pa

    from hotdata_retrieval.engines._repeated_keys import finer_timestamp, partial_day

    if not isinstance(data, pa.Table):
        return
    for position, field in enumerate(data.schema):
        flat = _temporal_elements(data.column(position), timestamp_unit)
        if flat is None:
            continue
        values, rows = flat
        within = partial_day(values)
        if within is not None:
            element, moment = within
            raise EngineError(
                f"column {field.name!r} holds the date64 {moment!r} in "
                f"{row_name(rows(element))}, which is not a whole day (Arrow's date64 is one; "
                "every engine keeps it as its day, so the time of day would be lost); load "
                "such values as timestamp[ms]; nothing was written"
            )
        finer = finer_timestamp(values, timestamp_unit)
        if finer is None:
            continue
        element, text = finer
        unit = UNIT_NAMES[timestamp_unit]
        raise EngineError(
            f"column {field.name!r} holds {text!r} in {row_name(rows(element))}, finer than "
            f"{store} keeps a timestamp ({unit}): it would be stored as another value; round "
            f"the values to {unit} (cast the column to timestamp[{timestamp_unit}]); nothing "
            "was written"
        )


def _temporal_elements(column: Any, unit: str) -> tuple[Any, Callable[[int], int]] | None:
    """The timestamp or ``date64`` values of ``column`` (an Arrow chunked array or array)
    as one flat array, and the row (counted from 0) each position of it is in: the column
    itself, a dictionary's values by row, or a list's elements (at any depth); ``None`` for
    a column holding neither, or timestamps no finer than ``unit`` (an Arrow time unit),
    which every store keeps as they are."""
    import pyarrow as pa

    from hotdata_retrieval.engines._repeated_keys import UNITS_PER_SECOND

    inner = leaf_type(column.type)
    if not (pa.types.is_timestamp(inner) or pa.types.is_date64(inner)):
        return None  # read by its type alone: a vector or text column is not copied
    if pa.types.is_timestamp(inner) and UNITS_PER_SECOND[inner.unit] <= UNITS_PER_SECOND[unit]:
        return None
    return leaf_values(column)


def leaf_type(kind: Any) -> Any:
    """The Arrow type of the values a column of type ``kind`` holds at its leaves: a
    dictionary's values' type, a list's (large, fixed-size) elements' type, at any depth;
    ``kind`` itself for any other type."""
    import pyarrow as pa

    while pa.types.is_dictionary(kind) or _is_list_type(kind):
        kind = kind.value_type
    return kind


def leaf_values(column: Any) -> tuple[Any, Callable[[int], int]]:
    """The values ``column`` (an Arrow chunked array or array) holds at its leaves as one
    flat array of :func:`leaf_type` (a dictionary decoded, a list's elements at any depth,
    NULL lists holding none), and the row (counted from 0) each position of it is in. A
    copy: read the column's type first (:func:`leaf_type`) to skip a column that needs no
    reading."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    parents: list[Any] = []
    while True:
        kind = values.type
        if pa.types.is_dictionary(kind):
            values = values.dictionary_decode()
        elif _is_list_type(kind):
            parents.append(pc.list_parent_indices(values).to_numpy(zero_copy_only=False))
            values = pc.list_flatten(values)
        else:
            break

    def row(element: int) -> int:
        for indices in reversed(parents):
            element = int(indices[element])
        return element

    return values, row


def _is_list_type(kind: Any) -> bool:
    """Whether Arrow type ``kind`` is a list, a large list or a fixed-size list."""
    import pyarrow as pa

    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def check_keys_kept(keys: Any, kind: Any, key: str, table: str) -> None:
    """An upsert's ``keys`` (an Arrow array or chunked array) are values the table's key
    column, of Arrow type ``kind``, holds as they are (:func:`key_change`, the check
    :func:`checked_keys` makes of the keys a read or a delete names): a key the column's
    type would round (the double ``0.1`` or the integer ``16777217`` into a ``float32``
    column, a timestamp finer than the column's unit) would be another key there, so the SQL
    stores deleted no row for it and then stored a second row under the rounded key (or
    replaced the other row), and the local engine and LanceDB replaced the rounded key's row
    with one the caller did not name; an integer outside a narrow integer column's range
    cannot be held at all (the SQL stores wrote it, and each read of the table then failed).

    Raises:
        EngineError: naming the column, its type, the first such key, its row and why.
    """
    import pyarrow as pa

    values = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    change = key_change(values, kind)
    if change is None:
        return
    row, reason = change
    raise EngineError(
        f"key column '{key}' ({kind}) of table '{table}' cannot hold the key "
        f"{_python_value(values[row])!r} in {row_name(row)}: {reason}; nothing was written"
    )


def check_values_held(rows: Any, kinds: Mapping[str, Any], table: str) -> None:
    """Every number, date and time of ``rows`` (an Arrow table written into table ``table``)
    is a value of its column's Arrow type (``kinds``, by column name: the types the table
    holds, as it was loaded), as Arrow's checked cast has it, and no finite number becomes
    infinite there (:func:`value_change`). The SQL stores declare narrow columns with wider
    SQL types, so they wrote ``300`` into an ``int8`` column or a microsecond into a
    ``timestamp[s]`` one, and each read of the table then failed; every engine wrote ``1e300``
    into a ``float32`` column as infinity (DuckDB refused it in its own words).

    Raises:
        EngineError: naming the column, its type, the first such value, its row and why.
    """
    import pyarrow as pa

    for name in rows.column_names:
        kind = kinds.get(name)
        if kind is None:
            continue
        column = rows.column(name)
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        change = value_change(values, kind)
        if change is None:
            continue
        row, reason = change
        raise EngineError(
            f"column '{name}' of table '{table}' holds {kind} values: the rows written hold "
            f"{_python_value(values[row])!r} in {row_name(row)}: {reason}; nothing was written"
        )


def value_change(values: Any, kind: Any) -> tuple[int, str] | None:
    """The first of ``values`` (an Arrow array written into a column) that a column of Arrow
    type ``kind`` cannot hold, and why; ``None`` when it holds each. An integer outside an
    integer column's range, a fraction for an integer column, an integer a floating-point
    column would round, a finite number it would make infinite, and a date or time finer
    than the column's unit (Arrow's checked cast refuses each but the infinite number, which
    it makes); a double a ``float32`` column rounds is its nearest value, as Arrow has it.
    Values of kinds Arrow does not convert between are left to the store's own check.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    given = values.type
    if pa.types.is_dictionary(given):
        values = values.dictionary_decode()
        given = values.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if given == kind:
        return None
    if pa.types.is_floating(kind) and pa.types.is_floating(given):
        if kind.bit_width >= given.bit_width:
            return None
        try:
            held = values.cast(kind, safe=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        overflow = pc.fill_null(pc.and_(pc.is_finite(values), pc.invert(pc.is_finite(held))), False)
        if not pc.any(overflow).as_py():
            return None
        row = int(pc.index(overflow, True).as_py())
        return row, f"the column would hold it as {held[row].as_py()!r}"
    return key_change(values, kind)


def _python_value(scalar: Any) -> Any:
    """An Arrow scalar as Python gives it, a timestamp's nanoseconds kept (pandas')."""
    try:
        return scalar.as_py()
    except ValueError:  # nanoseconds Python's datetime cannot hold
        return scalar.as_py(coerce_temporal_nanoseconds=True)


def integer_range(kind: Any) -> tuple[int, int]:
    """The integers Arrow integer type ``kind`` holds, as ``[low, high)``."""
    width = kind.bit_width
    if kind.id in _UNSIGNED_IDS():
        return 0, 2**width
    return -(2 ** (width - 1)), 2 ** (width - 1)


def _UNSIGNED_IDS() -> set[int]:
    import pyarrow as pa

    return {pa.uint8().id, pa.uint16().id, pa.uint32().id, pa.uint64().id}


def _outside_range(values: Any, kind: Any) -> tuple[int, str] | None:
    """The first row of ``values`` (an Arrow array of numbers) outside the range of integer
    type ``kind``, and the reason a message gives; ``None`` if there is none."""
    import pyarrow.compute as pc

    low, high = integer_range(kind)
    least, most = pc.min_max(values).values()
    if least.as_py() is None or (low <= least.as_py() and most.as_py() < high):
        return None
    for row, value in enumerate(values.to_pylist()):
        if value is not None and not low <= value < high:
            return row, f"it is outside the column's range [{low}, {high})"
    return None  # pragma: no cover - min_max found one


def key_change(values: Any, kind: Any) -> tuple[int, str] | None:
    """The first of ``values`` (an Arrow array of keys) that a key column of Arrow type
    ``kind`` would not hold as it is, and why (a reason a message ends with); ``None`` when
    the column holds each exactly, as Python's ``==`` and NumPy's value in ``kind`` agree.
    An integer outside an integer column's range cannot be held; a number or a date or time
    the column's type would round (``0.1`` or ``16777217`` in ``float32``, a timestamp finer
    than the column's unit, a datetime within a day in a ``date32`` column) would be another
    key. Keys of kinds Arrow does not convert between (text into a number column, say) are
    left to the caller's own check.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    given = values.type
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_dictionary(given):
        values = values.dictionary_decode()
        given = values.type
    if given == kind:
        return None
    numbers = pa.types.is_integer(given) or pa.types.is_floating(given)
    if pa.types.is_integer(kind) and numbers:
        outside = _outside_range(values, kind)
        if outside is not None:
            return outside
    elif not (
        (pa.types.is_floating(kind) and numbers)
        or (pa.types.is_temporal(kind) and pa.types.is_temporal(given))
    ):
        return None
    try:
        held = values.cast(kind, safe=False)
        back = held.cast(given, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    changed = pc.not_equal(back, values)
    if pa.types.is_floating(given):  # NaN is refused as a key elsewhere, never here
        changed = pc.and_(changed, pc.invert(pc.and_(pc.is_nan(back), pc.is_nan(values))))
    changed = pc.fill_null(changed, False)
    if not pc.any(changed).as_py():
        return None
    row = int(pc.index(changed, True).as_py())
    return row, (f"the column would hold it as {_python_value(held[row])!r}, another key")


def _as_column_dates(values: Any, kind: Any, keys: list[Any]) -> list[Any]:
    """``keys`` (checked, held exactly by Arrow type ``kind``; ``values`` their Arrow array)
    as the column's own kind of value where one is a date and the other a timestamp: a
    midnight ``datetime`` key of a ``date32`` column is its ``date``, a ``date`` key of a
    timestamp column its midnight, so every store binds the value it holds (SQLite compares
    its date text with the key's text, and found no row for the other spelling)."""
    import pyarrow as pa

    if values is None or not (pa.types.is_temporal(kind) and pa.types.is_temporal(values.type)):
        return keys
    if pa.types.is_time(kind) or pa.types.is_time(values.type):
        return keys
    if pa.types.is_date(kind) == pa.types.is_date(values.type):
        return keys
    try:
        return list(values.cast(kind).to_pylist())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
        return keys


def _key_array(keys: list[Any]) -> Any:
    """Checked Python ``keys`` as an Arrow array of the type Arrow gives them, a timestamp
    in nanoseconds (a pandas ``Timestamp``'s are kept); ``None`` when Arrow gives them no
    one type."""
    import pyarrow as pa

    try:
        values = pa.array(keys)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError):
        return None
    if pa.types.is_timestamp(values.type):
        try:
            return pa.array(keys, pa.timestamp("ns", values.type.tz))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            return values  # outside nanoseconds' years: microseconds are every digit
    return values


TABLES_LISTED = 20
"""The most table names :func:`missing_table_error` lists; past it, how many more there are."""


def missing_table_error(table: TableName, known: Iterable[str], *, where: str = "") -> EngineError:
    """The error for a table the engine does not hold: ``table '<table>' not found<where>;
    tables: a, b`` — the names the engine does hold (its default schema's, sorted; at most
    :data:`TABLES_LISTED`, then how many more), so a mistyped name is seen beside the right
    one, or ``it holds no tables`` when there are none. ``where`` is said after ``not found``
    (`` in the SQLite database``).

    >>> tikets = TableName(catalog="default", schema="public", name="tikets")
    >>> str(missing_table_error(tikets, ["tickets", "docs"]))
    "table 'default.public.tikets' not found; tables: docs, tickets"
    """
    names = sorted(known)
    if not names:
        return EngineError(f"table '{table}' not found{where}; it holds no tables")
    listed = ", ".join(names[:TABLES_LISTED])
    if len(names) > TABLES_LISTED:
        listed += f" (and {len(names) - TABLES_LISTED} more)"
    return EngineError(f"table '{table}' not found{where}; tables: {listed}")


def check_columns(
    plan: SearchPlan,
    table: TableName,
    columns: Iterable[str],
    kinds: Mapping[str, ValueKind] | None = None,
) -> None:
    """Every column ``plan`` reads from ``table`` (:meth:`SearchPlan.table_columns`) is one
    of its ``columns``, and no result column the plan names is one of them. With ``kinds``
    (the table's column kinds), each column read for its value holds the kind it is read as
    (:func:`check_read_kinds`).

    Two misses are a first plan's usual mistakes, so each names the argument that fixes it:
    the key column (``key_column``, ``id`` unless named) on a table without it, and a
    projected column on a side table a fusion reads its rows from only because a branch
    searches it (``rows_from``).

    Raises:
        EngineError: ``column '<name>' not found in table '<table>'; columns: ...``, naming the
            first missing column in alphabetical order.
        PlanError: a result column name the plan chose is a column of the table; the key
            column is missing (field ``key_column``); a fusion's implicit rows table lacks a
            column the rows carry (field ``rows_from``); as :func:`check_read_kinds`.
    """
    known = list(columns)
    _check_present(plan, table, known)
    if kinds is not None:
        check_read_kinds(plan, table, kinds)


def _check_present(plan: SearchPlan, table: TableName, known: list[str]) -> None:
    needed = plan.table_columns().get(table, frozenset())
    chosen = [branch.result_name for branch in plan.branches if branch.result_name]
    if plan.score_name not in (None, "score"):
        chosen.append(plan.score_name)
    for name in chosen:
        if name in known:
            raise PlanError(
                f"result column name {name!r} is a column of table '{table}'; the result "
                "would shadow it (or be shadowed in ORDER BY): choose another name",
                field="result_name",
                value=name,
            )
    missing = sorted(needed - set(known))
    if not missing:
        return
    listed = f"columns: {', '.join(known)}"
    for name in missing:
        error = missing_column_error(plan, name, table=table, detail=listed)
        if error is not None:
            raise error
    raise EngineError(f"column '{missing[0]}' not found in table '{table}'; {listed}")


_NUMERIC = (ValueKind.INTEGER, ValueKind.NUMBER, ValueKind.OTHER)
_TEXTUAL = (ValueKind.TEXT, ValueKind.OTHER)


def check_read_kinds(plan: SearchPlan, table: TableName, kinds: Mapping[str, ValueKind]) -> None:
    """Each column the plan reads from ``table``'s rows for its value holds the kind it is
    read as: a score ``formula``'s columns numbers (an integer or another number type:
    SQLite would read text as 0.0 and rank by the key, DataFusion and DuckDB fail on the
    cast), a ``highlight`` step's columns text (a number has no words to highlight).
    Columns missing from ``kinds`` or of kind :attr:`ValueKind.OTHER` are left alone. A
    cursor's key is of the key column's kind (text or a whole number): a forged token's
    other kind would fail the statement's comparison on one engine and select nothing on
    another.

    Raises:
        PlanError: on field ``formula`` or ``highlight``, naming the column, the table and
            the kind of value it holds; on field ``after``, a cursor key of the other kind.
    """
    _check_cursor_key_kind(plan, table, kinds)
    if table not in plan.row_source.members:
        return
    if plan.formula is not None:
        for column in plan.formula.columns:
            kind = kinds.get(column, ValueKind.OTHER)
            if kind not in _NUMERIC:
                raise PlanError(
                    f"formula column '{column}' of table '{table}' holds {kind.value} values, "
                    "not numbers; a score formula reads numeric (integer or floating-point) "
                    "columns",
                    field="formula",
                    value=column,
                )
    for step in plan.steps:
        if not isinstance(step, Highlight):
            continue
        for column in step.text_columns(plan):
            kind = kinds.get(column, ValueKind.OTHER)
            if kind not in _TEXTUAL:
                raise PlanError(
                    f"highlight column '{column}' of table '{table}' holds {kind.value} "
                    "values, not text; highlight a text column",
                    field="highlight",
                    value=column,
                )


def _check_cursor_key_kind(
    plan: SearchPlan, table: TableName, kinds: Mapping[str, ValueKind]
) -> None:
    cursor = plan.cursor
    if cursor is None or plan.key_column is None:
        return
    kind = kinds.get(plan.key_column, ValueKind.OTHER)
    given = ValueKind.TEXT if isinstance(cursor.key, str) else ValueKind.INTEGER
    if kind in (ValueKind.TEXT, ValueKind.INTEGER) and kind is not given:
        raise PlanError(
            "after is not a cursor token a result returned as next_after: its key "
            f"{cursor.key!r:.40} is {given.value}, the key column '{plan.key_column}' of "
            f"table '{table}' holds {kind.value} values",
            field="after",
            value=plan.after,
        )


def missing_column_error(
    plan: SearchPlan, column: str, *, table: TableName | None, detail: str
) -> PlanError | None:
    """The error naming the argument a first plan lacks when ``column`` is missing from a
    table it reads, or ``None`` when no argument would fix it:

    - the plan's key column (``key_column``, ``id`` unless named): pass ``key_column=None``
      (a single branch over a table without a unique key) or the table's unique column;
    - a column the rows carry (projection, tie-breakers), missing from a side table a fusion
      reads its rows from only because ``rows_from`` is unset (:func:`side_table_sources`):
      pass ``rows_from``.

    Args:
        plan: the plan.
        column: the missing column.
        table: the table it is missing from, or ``None`` when the engine's message does not
            say (the Hotdata engine's planner names the column alone).
        detail: appended to the message: the table's columns, or the engine's own words.
    """
    where = f"table '{table}'" if table is not None else "a table the plan searches"
    if column == plan.key_column:
        return PlanError(
            f"{where} has no column '{column}', the plan's key_column (default 'id'); "
            f"{_key_advice(plan)}; {detail}",
            field="key_column",
            value=column,
        )
    sources = side_table_sources(plan)
    if not sources or column not in _row_columns(plan):
        return None
    if table is None:
        side = None
        named = ", ".join(f"'{member}'" for member in sources)
        where = f"one of the tables this fusion reads its rows from ({named})"
    elif table in sources and column not in _branch_columns(plan, table):
        side = table
    else:
        return None
    if side is not None:
        advice = f"if {where} is a side table (say its vectors, keyed alike), "
    else:
        advice = "if one is a side table of another (say its vectors, keyed alike), "
    return PlanError(
        f"column '{column}' not found in {where}: without rows_from, a fusion reads each "
        f"hit's columns from every table its branches search; {advice}"
        f"{_rows_from_advice(sources, side)}; {detail}",
        field="rows_from",
        value=None,
    )


_FIELD_PART = r'"[^"]*"|[^\s."]+'
_NO_FIELD = re.compile(rf"No field named ((?:{_FIELD_PART})(?:\.(?:{_FIELD_PART}))*)")


def planner_missing_column(message: str) -> str | None:
    """The column a DataFusion planner error names as missing (``Schema error: No field
    named id.``, ``No field named base.body``: qualifier dropped, quotes removed), or
    ``None``: how the Hotdata engine, built on DataFusion, answers a statement that reads a
    column its table lacks.

    >>> planner_missing_column("Schema error: No field named id. Valid fields are t.doc.")
    'id'
    >>> planner_missing_column('Schema error: No field named base."Body".')
    'Body'
    """
    match = _NO_FIELD.search(message)
    if match is None:
        return None
    last: str = re.findall(_FIELD_PART, match.group(1))[-1]
    return last[1:-1] if last.startswith('"') else last


def planner_error_advice(plan: SearchPlan, message: str) -> PlanError | None:
    """The :func:`missing_column_error` for an engine's planner ``message`` that names a
    missing column (:func:`planner_missing_column`), the engine's words kept, or ``None``."""
    missing = planner_missing_column(message)
    if missing is None:
        return None
    return missing_column_error(plan, missing, table=None, detail=f"the engine: {message}")


def _row_columns(plan: SearchPlan) -> set[str]:
    results = set(plan.result_columns)
    return {
        *plan.projection,
        *(breaker.column for breaker in plan.tie_breakers if breaker.column not in results),
    }


def _key_advice(plan: SearchPlan) -> str:
    if plan.fusion is not None:
        return (
            "a fusion joins its branches on it: pass key_column='<the unique column its "
            "tables share>'"
        )
    return (
        "pass key_column=None for a table without a unique key (rows tied on the score then "
        "come back in the engine's order), or key_column='<its unique column>'"
    )


def _branch_columns(plan: SearchPlan, table: TableName) -> set[str]:
    """The columns the branches that search ``table`` read from it: each one's searched
    column and, unless it filters through the key, the filter's."""
    filtered = predicate_columns(plan.filter) if plan.filter is not None else set()
    columns: set[str] = set()
    for branch in plan.branches:
        if table in branch.table.members:
            columns.add(branch.column)
            if not branch.filter_through_key:
                columns |= filtered
    return columns


def side_table_sources(plan: SearchPlan) -> tuple[TableName, ...]:
    """The tables a fusion reads its rows from when it reads them from its branches' tables
    only because ``rows_from`` is unset and the branches search different tables: a text
    table fused with its side table of vectors, the usual first plan that needs
    ``rows_from``. Empty for any other plan."""
    if plan.fusion is None or plan.rows_from is not None:
        return ()
    if len({branch.table for branch in plan.branches}) < 2:
        return ()
    return plan.row_source.members


def _rows_from_advice(sources: tuple[TableName, ...], side: TableName | None) -> str:
    others = [str(member) for member in sources if member != side]
    if len(others) == 1:
        return f"pass rows_from='{others[0]}' (the table holding the rows)"
    named = ", ".join(f"'{name}'" for name in others)
    return f"pass rows_from naming the table that holds the rows (of {named})"


def check_side_table_key(plan: SearchPlan, key: Any) -> None:
    """A key that came back twice from a fusion over a table and its side table, read for
    rows from both because ``rows_from`` is unset (:func:`side_table_sources`).

    Raises:
        PlanError: on field ``rows_from``, naming the tables to choose from; nothing for any
            other plan (the key is then simply not unique).
    """
    sources = side_table_sources(plan)
    if not sources:
        return
    named = ", ".join(f"'{member}'" for member in sources)
    raise PlanError(
        f"key {key!r} of key column '{plan.key_column}' came back twice: the branches search "
        f"different tables ({named}) and, without rows_from, the fusion reads each hit's "
        "columns from all of them, so a key in both comes back from both; if one is a side "
        "table of the other (its vectors, keyed alike), pass rows_from='<the table holding "
        "the rows>'",
        field="rows_from",
        value=None,
    )


def merged_kinds(kinds: Iterable[Mapping[str, ValueKind]]) -> dict[str, ValueKind]:
    """Several tables' column kinds as one mapping, the first table's kind winning where two
    differ (only for kinds :func:`check_column_kinds` leaves alone): what a plan over a
    plan's :attr:`~hotdata_retrieval.plan.search.SearchPlan.tables`, in order, types its
    filter values by."""
    merged: dict[str, ValueKind] = {}
    for one in kinds:
        for column, kind in one.items():
            merged.setdefault(column, kind)
    return merged


def check_column_kinds(
    plan: SearchPlan, kinds: Mapping[TableName, Mapping[str, ValueKind]]
) -> None:
    """Each column the plan reads from several tables holds one kind of value in all of
    them: the key (fused branches are joined on it), and every column a union stacks or a
    filter compares (a filter value is typed once, for the whole statement; ``UNION ALL``
    of a text column and a number column is an error on PostgreSQL and a silent cast on
    other engines).

    Args:
        plan: the plan.
        kinds: per table the engine knows, each column's kind.

    Raises:
        PlanError: a column of two kinds, naming the column and both tables.
    """
    if len(plan.tables) < 2:
        return
    first: dict[str, tuple[TableName, ValueKind]] = {}
    for table, columns in plan.table_columns().items():
        known = kinds.get(table, {})
        for column in sorted(columns):
            kind = known.get(column)
            if kind is None or kind is ValueKind.OTHER:
                continue
            seen = first.setdefault(column, (table, kind))
            if seen[1] is kind:
                continue
            why = (
                "branches over several tables are joined on the key"
                if column == plan.key_column
                else "a union stacks it and a filter compares it as one type"
            )
            raise PlanError(
                f"column '{column}' holds {kind.value} values in table '{table}' but "
                f"{seen[1].value} values in table '{seen[0]}': {why}, so it must hold one "
                "kind of value in every table the plan reads",
                field="key_column" if column == plan.key_column else "columns",
                value=column,
            )


def arrow_column_kinds(schema: Any) -> dict[str, ValueKind]:
    """The kind of each column, from an Arrow schema (``pyarrow.Schema``), by name."""
    return {field.name: arrow_value_kind(field.type) for field in schema}


def arrow_float32_columns(schema: Any) -> frozenset[str]:
    """The columns of an Arrow schema holding 32-bit floating-point numbers, whose filter
    values are rounded to float32 (:func:`with_typed_values`)."""
    import pyarrow as pa

    return frozenset(field.name for field in schema if pa.types.is_float32(field.type))


def arrow_float64_columns(schema: Any) -> frozenset[str]:
    """The columns of an Arrow schema holding 64-bit floating-point numbers, compared exactly
    with an integer literal (:func:`with_typed_values`)."""
    import pyarrow as pa

    return frozenset(field.name for field in schema if pa.types.is_float64(field.type))


def arrow_unsigned_columns(schema: Any) -> frozenset[str]:
    """The columns of an Arrow schema holding unsigned integers, which range over 0 to
    2**64 - 1 where a float compared with them is made an integer comparison
    (:func:`with_typed_values`)."""
    import pyarrow as pa

    return frozenset(field.name for field in schema if pa.types.is_unsigned_integer(field.type))


def arrow_integer_ranges(schema: Any) -> dict[str, tuple[int, int]]:
    """Each integer column of an Arrow schema narrower than 64 bits, with the least and
    greatest value its type holds: a float compared with it is made an integer comparison
    whose literal fits the type (:func:`with_typed_values`), which LanceDB demands (it
    refuses ``n <= 300`` on an int8 column: "could not convert to literal of type").

    >>> import pyarrow as pa
    >>> arrow_integer_ranges(pa.schema([("a", pa.int8()), ("b", pa.uint16()), ("c", pa.int64())]))
    {'a': (-128, 127), 'b': (0, 65535)}
    """
    import pyarrow as pa

    ranges: dict[str, tuple[int, int]] = {}
    for field in schema:
        kind = field.type
        if pa.types.is_integer(kind) and kind.bit_width < 64:
            bits = kind.bit_width
            if pa.types.is_unsigned_integer(kind):
                ranges[field.name] = (0, 2**bits - 1)
            else:
                ranges[field.name] = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return ranges


@attrs.frozen
class ColumnFacts:
    """The facts about a table's columns that type a filter's values
    (:func:`with_typed_values`): read together once from an Arrow schema
    (:func:`arrow_column_facts`), or gathered by a store from what it recorded. A fact left
    at its default is one the engine does not need.

    Attributes:
        float32: the columns holding 32-bit floats (:func:`arrow_float32_columns`): each
            number compared with one is rounded to float32 first (:func:`float32_value`).
        unsigned: the integer columns holding unsigned values, 0 to 2**64 - 1
            (:func:`arrow_unsigned_columns`); other integer columns are signed 64-bit.
        float64: the columns holding 64-bit floats, not decimals
            (:func:`arrow_float64_columns`).
        integer_ranges: narrower integer columns' own ranges (:func:`arrow_integer_ranges`;
            the caller must not change it).
        timestamps: the timestamp columns, a date compared with one read as midnight UTC
            of that day; for a store holding timestamps as ISO text (SQLite), those columns.
        nanoseconds: the timestamp columns of nanoseconds, whose literals past the years
            they hold are folded.
        decimals: each decimal column with the digits it holds before the point (precision
            minus scale) and after it (scale): a number is compared with it exactly.
        coarse_timestamps: each timestamp column of seconds or milliseconds with the
            microseconds between two of its values (1,000,000 or 1,000): a literal between
            two is folded onto them for an engine that cuts it.
        text_dates: the date columns of a store that holds dates as ISO text (SQLite): each
            value is written in the column's own spelling.
        element_kinds: each list column's elements' kind (:func:`arrow_element_kinds`): text
            a list test looks for in a list of numbers is the number it reads as.
            :func:`arrow_column_facts` leaves it empty: the stores that need it give it.
    """

    float32: frozenset[str] = frozenset()
    unsigned: frozenset[str] = frozenset()
    float64: frozenset[str] = frozenset()
    integer_ranges: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)
    timestamps: frozenset[str] = frozenset()
    nanoseconds: frozenset[str] = frozenset()
    decimals: Mapping[str, tuple[int, int]] = attrs.field(factory=dict)
    coarse_timestamps: Mapping[str, int] = attrs.field(factory=dict)
    text_dates: frozenset[str] = frozenset()
    element_kinds: Mapping[str, ValueKind] = attrs.field(factory=dict)


NO_COLUMN_FACTS = ColumnFacts()
"""No fact about any column: a filter's values typed by the columns' kinds alone."""


def arrow_column_facts(schema: Any) -> ColumnFacts:
    """The :class:`ColumnFacts` of an Arrow schema.

    >>> import pyarrow as pa
    >>> arrow_column_facts(pa.schema([("a", pa.uint8()), ("f", pa.float32())]))
    ColumnFacts(float32=frozenset({'f'}), unsigned=frozenset({'a'}), float64=frozenset(), \
integer_ranges={'a': (0, 255)}, timestamps=frozenset(), nanoseconds=frozenset(), decimals={}, \
coarse_timestamps={}, text_dates=frozenset(), element_kinds={})
    """
    import pyarrow as pa

    timestamps = [field for field in schema if pa.types.is_timestamp(field.type)]
    return ColumnFacts(
        float32=arrow_float32_columns(schema),
        unsigned=arrow_unsigned_columns(schema),
        float64=arrow_float64_columns(schema),
        integer_ranges=arrow_integer_ranges(schema),
        timestamps=frozenset(field.name for field in timestamps),
        nanoseconds=frozenset(field.name for field in timestamps if field.type.unit == "ns"),
        decimals={
            field.name: (field.type.precision - field.type.scale, field.type.scale)
            for field in schema
            if pa.types.is_decimal(field.type)
        },
        coarse_timestamps={
            field.name: _UNIT_STEPS[field.type.unit]
            for field in timestamps
            if field.type.unit in _UNIT_STEPS
        },
    )


_UNIT_STEPS = {"s": 1_000_000, "ms": 1_000}
"""The microseconds between two values of a timestamp column of seconds or milliseconds."""


def arrow_typed_filter(predicate: Predicate, schema: Any) -> Predicate:
    """``predicate`` checked and typed for a table of Arrow ``schema`` as a search of it
    types its filter (:func:`check_filter_values`, then :func:`with_typed_values` with the
    schema's :func:`arrow_column_facts`, text compared with a number column left as text):
    ISO 8601 text compared with a date or timestamp column is the date or UTC instant it
    names, whatever zone the column has (``'2024-01-01T00:00:00+02:00'`` is 2023-12-31 22:00
    UTC; text without a zone is UTC), and a number is compared exactly. A filter evaluated
    over rows read from a table (the row mask,
    :func:`~hotdata_retrieval.engines.local.masks.passing_rows`) then keeps the rows the
    engine's search keeps.

    Raises:
        PlanError: a value its column cannot be compared with, naming both.
    """
    kinds = {field.name: arrow_value_kind(field.type) for field in schema}
    check_filter_values(predicate, kinds, arrow_element_kinds(schema))
    facts = attrs.evolve(arrow_column_facts(schema), coarse_timestamps={})
    return with_typed_values(predicate, kinds, facts, numbers=False)


def merged_column_facts(
    schemas: Sequence[Any], each: Sequence[ColumnFacts] | None = None
) -> ColumnFacts:
    """The :class:`ColumnFacts` of a plan over several tables of Arrow ``schemas`` (in
    order; ``each``: their facts, when known already): each set of columns the union of the
    tables' sets, each integer column's range across its types in all the tables
    (:func:`merged_integer_ranges`) and each decimal column's widest digits before and after
    the point across them (a number is folded only where it is past the column's values in
    every table, and onto the finest grid, which holds every table's values). One table's
    facts are its own; several tables' keep a coarse timestamp column only where it is one
    of the same unit in every table (a literal folded onto that grid is exact in each; a
    column of seconds in one table and microseconds in another is left out), and leave out
    text-held dates.

    >>> import pyarrow as pa
    >>> merged_column_facts([pa.schema([("p", pa.decimal128(5, 2))]),
    ...                      pa.schema([("p", pa.decimal128(4, 3))])]).decimals
    {'p': (3, 3)}
    """
    facts = list(each) if each is not None else [arrow_column_facts(one) for one in schemas]
    if len(facts) == 1:
        return facts[0]
    decimals: dict[str, tuple[int, int]] = {}
    for one in facts:
        for column, (whole, scale) in one.decimals.items():
            known = decimals.get(column, (whole, scale))
            decimals[column] = (max(whole, known[0]), max(scale, known[1]))
    return ColumnFacts(
        float32=frozenset().union(*(one.float32 for one in facts)),
        unsigned=frozenset().union(*(one.unsigned for one in facts)),
        float64=frozenset().union(*(one.float64 for one in facts)),
        integer_ranges=merged_integer_ranges(schemas),
        timestamps=frozenset().union(*(one.timestamps for one in facts)),
        nanoseconds=frozenset().union(*(one.nanoseconds for one in facts)),
        decimals=decimals,
        coarse_timestamps={
            column: step
            for column, step in facts[0].coarse_timestamps.items()
            if all(one.coarse_timestamps.get(column) == step for one in facts[1:])
        },
    )


def merged_integer_ranges(schemas: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """Each integer column of several tables' Arrow schemas with the least and greatest
    value any of its types holds (a 64-bit column's too: signed, -2**63 to 2**63 - 1;
    unsigned, 0 to 2**64 - 1), for a plan over those tables: one filter compares the column
    in every table, so a float is made an integer comparison that is exact in each
    (:func:`with_typed_values`). A column signed in one table and unsigned in another ranges
    over both, never over the unsigned range alone (which would make ``n != 2.5`` drop a
    negative row).

    >>> import pyarrow as pa
    >>> merged_integer_ranges([pa.schema([("a", pa.int8()), ("b", pa.int64())]),
    ...                        pa.schema([("a", pa.uint8()), ("b", pa.uint64())])])
    {'a': (-128, 255), 'b': (-9223372036854775808, 18446744073709551615)}
    """
    import pyarrow as pa

    merged: dict[str, tuple[int, int]] = {}
    for schema in schemas:
        narrow = arrow_integer_ranges(schema)
        for field in schema:
            if not pa.types.is_integer(field.type):
                continue
            if field.name in narrow:
                low, high = narrow[field.name]
            elif pa.types.is_unsigned_integer(field.type):
                low, high = 0, 2**64 - 1
            else:
                low, high = -(2**63), 2**63 - 1
            known = merged.get(field.name)
            merged[field.name] = (
                (low, high) if known is None else (min(known[0], low), max(known[1], high))
            )
    return merged


def float32_value(value: Any) -> Any:
    """A filter value compared with a float32 column, rounded to float32 first: a number
    (or number text) becomes the float64 that equals its nearest float32, which every engine
    compares exactly, whether it widens the column to float64 or narrows the value to
    float32 (``f = 2.1`` holds for the float32 2.1, as NumPy's ``np.float32(2.1)`` and
    LanceDB's cast of the literal have it). A value beyond float32's range, a boolean and any
    other value stay as they are (beyond the range, no float32 equals it and the order is
    the same).

    >>> float32_value(2.1)
    2.0999999046325684
    >>> float32_value("0.1"), float32_value(3), float32_value(1e39)
    (0.10000000149011612, 3.0, 1e+39)
    """
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, float, str, decimal.Decimal)):
        return value
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return value
    if not math.isfinite(number):
        return value
    with np.errstate(over="ignore"):
        rounded = float(np.float32(number))
    return rounded if math.isfinite(rounded) else value


def arrow_element_kinds(schema: Any) -> dict[str, ValueKind]:
    """The kind of each list column's elements, from an Arrow schema (``pyarrow.Schema``):
    what :func:`check_filter_values` checks ``contains_all`` / ``contains_any`` values
    against."""
    import pyarrow as pa

    kinds = {}
    for field in schema:
        kind = field.type
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            kinds[field.name] = arrow_value_kind(kind.value_type)
    return kinds


def check_filter_values(
    predicate: Predicate | None,
    kinds: Mapping[str, ValueKind],
    element_kinds: Mapping[str, ValueKind] | None = None,
) -> None:
    """Every value ``predicate`` compares a column with can be compared with it, as every
    engine compares it: a text column only with text; a number column with a number, or with
    text that reads as one of the column's type, without surrounding spaces (``'42'`` for an
    integer column; ``'1.5'``, ``'1e3'`` for a floating-point or decimal one: engines convert
    the text, and DataFusion fails on ``'1.5'`` for an integer column); a boolean column only
    with ``True`` or ``False`` (DataFusion compares no text with a boolean). Columns missing
    from ``kinds`` and of kind :attr:`ValueKind.OTHER` are not checked. With
    ``element_kinds`` (:func:`arrow_element_kinds`), the values a list test looks for are
    checked against the list's elements by the same rules.

    Raises:
        PlanError: on field ``filter``, naming the column, the kind of value it holds and the
            value.
    """
    if predicate is not None:
        _FilterValues(kinds, element_kinds or {}).visit(predicate)


_INTEGER_TEXT = re.compile(r"-?[0-9]{1,19}", re.ASCII)
"""An integer as DataFusion and Arrow both read it into a 64-bit column (Arrow refuses a
leading ``+``)."""


def _iso_temporal(text: str) -> datetime.date | datetime.datetime | None:
    """ISO 8601 text in one of :data:`~hotdata_retrieval.plan.values.ISO_FORMS` as the date
    or timestamp it names, or ``None``."""
    stripped = text.strip()
    return parse_iso_date(stripped) or parse_iso_timestamp(stripped)


def _value_problem(kind: ValueKind, value: Any) -> str | None:
    if kind is ValueKind.VECTOR:
        return f"{_spelled(value)}; a vector column can only be tested with IS NULL"
    if kind is ValueKind.LIST:
        return (
            f"{_spelled(value)}; a list column is tested with contains_all, contains_any or IS NULL"
        )
    if isinstance(value, datetime.date):
        if kind in (ValueKind.TEMPORAL, ValueKind.OTHER):
            return None
        return f"{_spelled(value)}; a date or timestamp compares only with such a column"
    if kind is ValueKind.TEMPORAL:
        if isinstance(value, str) and _iso_temporal(value) is not None:
            return None
        if isinstance(value, str):
            problem = iso_text_problem(value, "date or timestamp")
            return f"{_spelled(value)}, which is {problem}; pass a date or a datetime"
        return (
            f"{_spelled(value)}, which is not an ISO 8601 date or timestamp "
            f"({ISO_FORMS}); pass a date or a datetime"
        )
    if kind is ValueKind.TEXT and not isinstance(value, str):
        described = "a boolean" if isinstance(value, bool) else "a number"
        return f"{_spelled(value)}, {described}; quote it to compare text"
    if kind in (ValueKind.INTEGER, ValueKind.NUMBER):
        if isinstance(value, bool):
            return f"{_spelled(value)}, a boolean"
        if isinstance(value, str):
            integer = kind is ValueKind.INTEGER
            if (
                not (_INTEGER_TEXT if integer else NUMBER_TEXT).fullmatch(value)
                or (integer and not -(2**63) <= int(value) < 2**63)
                or (not integer and not math.isfinite(float(value)))
            ):
                return f"{value!r}, which is not {'an integer' if integer else 'a finite number'}"
    if kind is ValueKind.BOOLEAN and not isinstance(value, bool):
        described = "text" if isinstance(value, str) else "a number"
        return f"{value!r}, {described}; compare it with TRUE or FALSE"
    return None


class _FilterValues(PredicateVisitor[None]):
    def __init__(
        self, kinds: Mapping[str, ValueKind], element_kinds: Mapping[str, ValueKind]
    ) -> None:
        self.kinds = kinds
        self.element_kinds = element_kinds

    def _check(self, column: str, values: Iterable[Any], *, elements: bool = False) -> None:
        """Each of ``values`` against the column's kind (or, with ``elements``, its list's
        element kind): a PlanError naming the first that cannot be compared."""
        kinds = self.element_kinds if elements else self.kinds
        kind = kinds.get(column, ValueKind.OTHER)
        for value in values:
            problem = _value_problem(kind, value)
            if problem is not None:
                head = (
                    f"filter looks in column '{column}', a list of {kind.value} values, for"
                    if elements
                    else f"filter compares column '{column}', which holds {kind.value} values, with"
                )
                raise PlanError(f"{head} {problem}", field="filter", value=value)

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> None:
        """A leaf's values against its column, as its row's role says: compared values
        against the column's kind, a text test's column must hold text, a list test's values
        against the list's elements."""
        values = form.values_of(node)
        if form.role is ValueRole.COMPARED:
            self._check(node.column, values)
        elif form.role is ValueRole.TEXT:
            kind = self.kinds.get(node.column, ValueKind.OTHER)
            if kind not in (ValueKind.TEXT, ValueKind.OTHER):
                shown = ", ".join(repr(value) for value in values)
                raise PlanError(
                    f"filter tests column '{node.column}', which holds {kind.value} values, "
                    f"with {form.name}({shown}); {form.name} needs a text column",
                    field="filter",
                    value=values[0] if len(values) == 1 else list(values),
                )
        elif form.role is ValueRole.ELEMENT:
            self._list(node.column, values)

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

    def _list(self, column: str, values: tuple[Any, ...]) -> None:
        kind = self.kinds.get(column, ValueKind.OTHER)
        if kind not in (ValueKind.LIST, ValueKind.OTHER):
            raise PlanError(
                f"filter tests the elements of column '{column}', which holds {kind.value} "
                "values; contains_all and contains_any need a list column",
                field="filter",
                value=list(values),
            )
        self._check(column, values, elements=True)

    def visit_and(self, node: And) -> None:
        for operand in node.operands:
            self.visit(operand)

    def visit_or(self, node: Or) -> None:
        for operand in node.operands:
            self.visit(operand)

    def visit_not(self, node: Not) -> None:
        self.visit(node.operand)


_RETYPED = frozenset({ValueKind.INTEGER, ValueKind.NUMBER, ValueKind.TEMPORAL})
"""The column kinds :func:`with_typed_values` may retype a value for (a text read as a
number or as a date or time); with ``numbers=False``, :data:`_RETYPED_TEMPORAL`."""
_RETYPED_TEMPORAL = frozenset({ValueKind.TEMPORAL})


def with_typed_values(
    predicate: Predicate,
    kinds: Mapping[str, ValueKind],
    facts: ColumnFacts = NO_COLUMN_FACTS,
    *,
    numbers: bool = True,
    fit_integers: bool = False,
) -> Predicate:
    """``predicate`` with each text value compared with a number column replaced by the
    number it reads as (an ``int`` for an integer column, a ``float`` for another), and each
    ISO 8601 text compared with a date or timestamp column by the date or datetime it names,
    for an engine that does not convert text as SQL engines do (LanceDB refuses ``year >
    '2018'``). Other text stays text. Check the values first (:func:`check_filter_values`).

    ``facts.text_dates`` and ``facts.timestamps`` name the columns of a store that holds dates
    and timestamps as ISO text (SQLite), which compares them as text: each value is then
    written in its column's own spelling, so the text comparison is the comparison SQL
    engines make (they read a date as midnight UTC of that day) — a date for a timestamp
    column becomes midnight of that day, a datetime for a date column the exactly equivalent
    comparison with dates (:func:`~hotdata_retrieval.engines._integer_literals.
    exact_date_predicate`: the datetime in UTC; ``day < '2020-01-01 05:00'`` is ``day <=
    DATE '2020-01-01'``, ``day = '2020-01-01 05:00'`` holds for no day).

    ``numbers=False`` leaves text compared with a number column as text, for a SQL engine,
    which reads it as the column's own type (``'0.1'`` against a ``REAL`` column is the
    32-bit 0.1, where a Python float would be the 64-bit one and match nothing).

    ``facts.float32`` name the columns holding 32-bit floats: each number (or number text)
    compared with one is rounded to float32 first (:func:`float32_value`), so every engine
    gives a comparison with such a column one meaning, the column's own precision, whether
    it compares in float32 or in float64.

    A float compared with an integer column (whatever ``numbers`` says) is replaced by the
    exactly equivalent comparison with an integer
    (:func:`~hotdata_retrieval.engines._integer_literals.exact_integer_predicate`), so every
    engine compares the integer with the float's exact value: DataFusion and DuckDB would
    compare in float64, where 2**53 + 1 equals 2.0**53. ``facts.unsigned`` name the
    integer columns holding unsigned values (0 to 2**64 - 1); the others are read as signed
    64-bit. ``facts.integer_ranges`` give narrower integer columns their type's own range
    (:func:`arrow_integer_ranges`), so each literal made fits the type. ``fit_integers``
    makes an integer literal outside its column's range (``i8 <= 300`` on an int8 column,
    ``u < -1`` on an unsigned one) the comparison it is over that range, as a float there
    would be, for an engine that refuses such a literal (LanceDB).

    ``facts.float64`` name the columns holding 64-bit floats (not decimals, which compare
    exactly on every engine): an integer compared with one that float64 does not hold
    (2**53 + 1) is replaced likewise
    (:func:`~hotdata_retrieval.engines._integer_literals.exact_float_predicate`), where
    DataFusion, DuckDB and PostgreSQL would round it to float64; one float64 holds stays.

    ``facts.nanoseconds`` name the timestamp columns of nanoseconds (an engine on
    DataFusion, whose Arrow columns may be one): a date or datetime outside the years they
    hold (1677-09-21 to 2262-04-11) is replaced by what it means there
    (:func:`~hotdata_retrieval.engines._integer_literals.nanosecond_timestamp_predicate`:
    ``ts > '1500-01-01'`` holds for every value, NULL for a NULL row), where DataFusion fails
    to cast it to nanoseconds. ``facts.timestamps`` make a date compared with a timestamp
    column midnight UTC of that day (as every engine reads it), for a store holding them as
    text and for DataFusion, which casts a date to nanoseconds to compare it with a
    timestamp of any unit.

    ``facts.decimals`` give each decimal column the digits it holds before the point
    (precision minus scale) and after it (scale): each number compared with one is compared
    exactly, a float as the decimal its shortest text writes (``price >= 0.1`` keeps 0.10), a
    ``decimal.Decimal`` and number text as written
    (:func:`~hotdata_retrieval.engines._integer_literals.decimal_predicate`): one past the
    column's range (``price < 1e30`` on a ``decimal(10, 2)`` column) is TRUE or FALSE for
    every value and NULL for a NULL row, one between two of its values (``price < 1.505``)
    the equivalent comparison with them (``price <= 1.50``), any other written on the
    column's grid as an integer or an exact decimal.

    A ``decimal.Decimal`` compared with another number column is compared exactly too: with
    an integer column as a float is, with a float64 one as an integer float64 does not hold
    is (the float itself when float64 holds it), with a float32 one rounded to float32.

    ``facts.coarse_timestamps`` give each timestamp column of seconds or milliseconds the
    microseconds between two of its values (:attr:`ColumnFacts.coarse_timestamps`), for an
    engine that cuts a finer literal to the column's unit (LanceDB): a datetime between two
    values is replaced by the exactly equivalent comparison with values on the column's grid
    (:func:`~hotdata_retrieval.engines._integer_literals.coarse_timestamp_predicate`).

    ``facts.element_kinds`` (:func:`arrow_element_kinds`) give each list column's elements' kind:
    text a list test looks for in a list of numbers (``contains_any(numbers, ['2020'])``) is
    replaced by the number it reads as, whatever ``numbers`` says, as no SQL engine reads text
    in an array literal as the column's elements (DuckDB: "Cannot deduce template type",
    PostgreSQL: "operator does not exist: text = bigint").

    Raises:
        PlanError: a float compared with an unsigned column whose exact comparison needs an
            integer past INT64_MAX.
    """
    retyped = _RETYPED if numbers else _RETYPED_TEMPORAL
    element_kinds = facts.element_kinds
    numbered = frozenset(
        column
        for column, kind in element_kinds.items()
        if kind in (ValueKind.INTEGER, ValueKind.NUMBER)
    )
    columns = predicate_columns(predicate)
    held = value_types(predicate)
    types = held or (float, int)
    if (
        decimal.Decimal not in types
        and columns.isdisjoint(facts.float32)
        and columns.isdisjoint(facts.text_dates)
        and columns.isdisjoint(facts.timestamps)
        and columns.isdisjoint(facts.nanoseconds)
        and columns.isdisjoint(facts.decimals)
        and columns.isdisjoint(facts.coarse_timestamps)
        and not any(kinds.get(column) in retyped for column in columns)
        and not (
            any(kinds.get(column) is ValueKind.INTEGER for column in columns) and float in types
        )
        and not (int in types and not columns.isdisjoint(facts.float64))
        and not (
            fit_integers
            and int in types
            and any(kinds.get(column) is ValueKind.INTEGER for column in columns)
        )
        and not ((held is None or str in held) and not columns.isdisjoint(numbered))
    ):
        return predicate  # no value of it can change: the visit below would return it itself
    integers = frozenset(column for column in columns if kinds.get(column) is ValueKind.INTEGER)
    if not numbers:
        kinds = {
            column: kind
            for column, kind in kinds.items()
            if kind not in (ValueKind.INTEGER, ValueKind.NUMBER)
        }
    visitor = _TypedValues(
        kinds,
        attrs.evolve(facts, element_kinds={column: element_kinds[column] for column in numbered}),
        integer_columns=integers,
        fit_integers=fit_integers,
    )
    rewritten: Predicate = visitor.visit(predicate)
    return rewritten


def _in_spelling(value: Any, *, timestamp: bool) -> Any:
    """A date compared with a timestamp column of a store holding them as text, as midnight
    of that day (a datetime for a date column: :func:`exact_date_predicate`)."""
    if timestamp and type(value) is datetime.date:
        return datetime.datetime(value.year, value.month, value.day)
    return value


def _as_number(kind: ValueKind, value: Any) -> Any:
    if isinstance(value, str) and kind is ValueKind.TEMPORAL:
        temporal = _iso_temporal(value)
        return value if temporal is None else temporal
    if not isinstance(value, str) or kind not in (ValueKind.INTEGER, ValueKind.NUMBER):
        return value
    try:
        number = int(value) if kind is ValueKind.INTEGER else float(value)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


class _TypedValues(PredicateVisitor[Predicate]):
    def __init__(
        self,
        kinds: Mapping[str, ValueKind],
        facts: ColumnFacts,
        *,
        integer_columns: frozenset[str] = frozenset(),
        fit_integers: bool = False,
    ) -> None:
        self.kinds = kinds
        self.coarse_timestamp_columns = facts.coarse_timestamps
        self.nanosecond_columns = facts.nanoseconds
        self.decimal_columns = facts.decimals
        self.element_kinds = facts.element_kinds
        self.date_columns = facts.text_dates
        self.timestamp_columns = facts.timestamps
        self.float32_columns = facts.float32
        self.integer_columns = integer_columns
        self.unsigned_columns = facts.unsigned
        self.float64_columns = facts.float64
        self.integer_ranges = facts.integer_ranges
        self.fit_integers = fit_integers

    def _typed(self, column: str, value: Any) -> Any:
        if column in self.decimal_columns:
            return value  # read exactly, text too (decimal_predicate), never as a float
        if column in self.float32_columns:
            return float32_value(value)
        typed = _as_number(self.kinds.get(column, ValueKind.OTHER), value)
        return _in_spelling(typed, timestamp=column in self.timestamp_columns)

    # A node whose values all stay as they are is returned itself, not rebuilt: each rebuild
    # validates the node again, and the plan around it is rebuilt only when a node changed.

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> Predicate:
        """A leaf whose values are compared with its column (its row's role), each value
        typed, and on an integer column compared with integers only
        (:func:`~hotdata_retrieval.engines._integer_literals.exact_integer_predicate`), on a
        float64 column with floats only (``exact_float_predicate``); any other leaf as it
        is."""
        if form.role is ValueRole.ELEMENT and node.column in self.element_kinds:
            kind = self.element_kinds[node.column]
            return self._typed_values(node, form, lambda _, value: _as_number(kind, value))
        if form.role is not ValueRole.COMPARED:
            return node  # type: ignore[no-any-return]
        typed_node = self._typed_values(node, form)
        if node.column in self.date_columns:
            return exact_date_predicate(typed_node)  # type: ignore[no-any-return]
        if node.column in self.nanosecond_columns:
            return nanosecond_timestamp_predicate(typed_node)  # type: ignore[no-any-return]
        if node.column in self.coarse_timestamp_columns:
            return coarse_timestamp_predicate(  # type: ignore[no-any-return]
                typed_node, self.coarse_timestamp_columns[node.column]
            )
        if node.column in self.decimal_columns:
            whole_digits, scale = self.decimal_columns[node.column]
            return decimal_predicate(typed_node, whole_digits, scale)  # type: ignore[no-any-return]
        if node.column in self.float64_columns:
            return exact_float_predicate(typed_node)  # type: ignore[no-any-return]
        if node.column not in self.integer_columns:
            return typed_node
        return exact_integer_predicate(  # type: ignore[no-any-return]
            typed_node,
            unsigned=node.column in self.unsigned_columns,
            bounds=self.integer_ranges.get(node.column),
            fitted=self.fit_integers,
        )

    def _typed_values(
        self,
        node: Any,
        form: PredicateForm,
        typed_value: Callable[[str, Any], Any] | None = None,
    ) -> Predicate:
        """``node`` with each value typed by ``typed_value`` (column, value) (default: as a
        value compared with the column)."""
        typing = typed_value or self._typed
        changes: dict[str, Any] = {}
        for field, each in form.value_fields:
            value = getattr(node, field)
            if each:
                typed = [typing(node.column, item) for item in value]
                if any(new is not old for new, old in zip(typed, value)):
                    changes[field] = typed
            else:
                one = typing(node.column, value)
                if one is not value:
                    changes[field] = one
        return attrs.evolve(node, **changes) if changes else node  # type: ignore[no-any-return]

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

    def visit_and(self, node: And) -> Predicate:
        operands = [self.visit(operand) for operand in node.operands]
        if all(new is old for new, old in zip(operands, node.operands)):
            return node
        return attrs.evolve(node, operands=operands)

    def visit_or(self, node: Or) -> Predicate:
        operands = [self.visit(operand) for operand in node.operands]
        if all(new is old for new, old in zip(operands, node.operands)):
            return node
        return attrs.evolve(node, operands=operands)

    def visit_not(self, node: Not) -> Predicate:
        operand = self.visit(node.operand)
        return node if operand is node.operand else attrs.evolve(node, operand=operand)


def _spelled(value: Any) -> str:
    """A filter value as the filter text spells it (``TRUE``, not Python's ``True``)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return repr(value)


def checked_keys(
    keys: Any, kind: ValueKind, column: str, column_type: str, arrow_type: Any = None
) -> list[Any]:
    """The distinct ``keys`` a row change or read names (first occurrence first), each as a
    value of key column ``column`` (its :class:`ValueKind` ``kind``; ``column_type`` as the
    store names it), checked before anything is read or changed, the one rule of every
    engine.

    A key compares with the key column as ``==`` compares it (as keys compare everywhere,
    :func:`~hotdata_retrieval.engines._repeated_keys.key_problem`), so between numbers a key is
    converted where that is exact: ``2.0`` is the integer key ``2``, ``2`` the floating-point
    key ``2.0``. Nothing else is converted: text is no number (``'3.0'`` would be ``3`` under
    SQLite's affinity and refused by PostgreSQL's cast, so it has no one meaning), a number
    is no text, a boolean no number, and text no date. A column of another kind (bytes, say)
    takes its keys as given. Given the key column's Arrow type ``arrow_type`` (the type the
    table was loaded with), a key that type would change is refused (:func:`key_change`,
    the check an upsert's keys get): an integer outside a narrow integer column's range, a
    number or a date or time the column would round to another key, which a store would
    otherwise find (and delete) in the rounded key's place, or not find.

    Raises:
        EngineError: ``keys`` is text or not a list; a key that is NULL or NaN, text that
            is not Unicode (a lone surrogate), of another kind than the column's, a
            non-integral or out-of-range number for an integer column, one ``arrow_type``
            would change; naming the key, the column and its type. Nothing was read or
            changed.
    """
    if isinstance(keys, (str, bytes)) or not hasattr(keys, "__len__"):
        raise EngineError(f"keys must be a list of keys, not {type(keys).__name__}")
    converted = [_key_value(key, kind, column, column_type) for key in keys]
    if arrow_type is not None and converted:
        values = _key_array(converted)
        change = None if values is None else key_change(values, arrow_type)
        if change is not None:
            row, reason = change
            raise EngineError(
                f"key {list(keys)[row]!r} cannot be a value of key column '{column}' "
                f"({column_type}): {reason}; nothing was read or changed"
            )
        converted = _as_column_dates(values, arrow_type, converted)
    # Python's True == 1 == 1.0 (one hash): a boolean and a number are other keys of a column
    # of no known kind, where neither was converted
    distinct: dict[tuple[bool, Any], Any] = {}
    for key in converted:
        distinct.setdefault((isinstance(key, (bool, _numpy_bool())), key), key)
    return list(distinct.values())


_KEY_KINDS_TO_SPELL = {
    ValueKind.TEXT: "text",
    ValueKind.INTEGER: "an integer",
    ValueKind.NUMBER: "a number",
    ValueKind.BOOLEAN: "a boolean",
    ValueKind.TEMPORAL: "a date or timestamp",
}


def _key_value(key: Any, kind: ValueKind, column: str, column_type: str) -> Any:
    """``key`` as a value of the key column (:func:`checked_keys`)."""
    import decimal
    import numbers

    def refused(reason: str) -> EngineError:
        return EngineError(
            f"key {key!r} cannot be a value of key column '{column}' ({column_type}): {reason}"
            "; nothing was read or changed"
        )

    if key is None:
        raise refused("a key is never NULL")
    if isinstance(key, str):
        try:
            key.encode("utf-8")
        except UnicodeEncodeError as error:
            raise refused(
                f"it is not Unicode text (a lone surrogate at position {error.start})"
            ) from None
    number = isinstance(key, (numbers.Real, decimal.Decimal)) and not isinstance(
        key, (bool, _numpy_bool())
    )
    if number and key != key:
        raise refused("NaN equals no key, not even itself")
    if kind is ValueKind.INTEGER and number:
        integral = isinstance(key, numbers.Integral) or (
            math.isfinite(key) and float(key).is_integer() and key == int(key)
        )
        if not integral:
            raise refused("it is not an integer")
        low, high = (0, 2**64) if column_type.lower().startswith("u") else (-(2**63), 2**63)
        if not low <= int(key) < high:
            raise refused(f"it is outside the column's range [{low}, {high})")
        return int(key)
    if kind is ValueKind.NUMBER and isinstance(key, decimal.Decimal):
        if not key.is_finite():
            raise refused("a key is a finite number")
        return key
    if kind is ValueKind.NUMBER and number:
        exact = float(key)
        if not math.isfinite(exact) or exact != key:
            raise refused("it has no exact floating-point value")
        return exact + 0.0  # -0.0 is the key 0.0
    if kind is ValueKind.TEXT and isinstance(key, str):
        return str(key)
    if kind is ValueKind.BOOLEAN and isinstance(key, (bool, _numpy_bool())):
        return bool(key)
    if kind is ValueKind.TEMPORAL and isinstance(key, (datetime.date, datetime.time)):
        return key
    if kind not in _KEY_KINDS_TO_SPELL:
        return key
    given = (
        "text"
        if isinstance(key, str)
        else "a boolean"
        if isinstance(key, (bool, _numpy_bool()))
        else "a number"
        if number
        else f"a {type(key).__name__}"
    )
    raise refused(f"it is {given}; pass keys of the column's type, {_KEY_KINDS_TO_SPELL[kind]}")


def _numpy_bool() -> type:
    """NumPy's boolean scalar type (``numpy.bool_``), no number though NumPy registers it as
    none; ``bool`` when NumPy is absent."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - NumPy comes with pyarrow
        return bool
    return numpy.bool_


def null_vectors_as_lists(rows: Any, columns: Iterable[str]) -> Any:
    """``rows`` (a ``pyarrow.Table`` written into a loaded table) with each of the vector
    ``columns`` it holds as Arrow's ``null`` type (every value NULL, no type: what
    ``pa.array([None])`` is) made a column of NULL float32 lists, so the vector checks and
    the store's conversion read it as rows without a vector, as a missing column is read.
    (A load refuses the null type: :func:`check_no_null_type`; an upsert takes it as NULLs
    of the table's type, on every engine.)"""
    import pyarrow as pa

    for column in columns:
        if column in rows.column_names:
            position = rows.schema.get_field_index(column)
            if pa.types.is_null(rows.schema.field(position).type):
                rows = rows.set_column(
                    position, column, pa.nulls(rows.num_rows, pa.list_(pa.float32()))
                )
    return rows


def check_cosine_norms(data: Any, column: str, metric: Any) -> None:
    """Refuse a table's rows (``pyarrow.Table``) for a vector column ``column`` searched by
    ``metric`` (a :class:`~hotdata_retrieval.plan.search.DistanceMetric` or its name; only
    cosine is checked) when a non-NULL row's Float32 squared norm is non-zero and outside
    :data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`: SQLite, PostgreSQL and
    LanceDB compute that distance from Float32 squared norms and answered each their own
    wrong distance, where the local engine and DuckDB compute in float64; every engine
    refuses, so all agree. Run after the column's vectors are checked (non-empty, finite,
    within Float32's range, one length).

    Raises:
        EngineError: naming the first such row (from 1), the column and the squared norm.
    """
    if DistanceMetric.parse(metric) is not DistanceMetric.COSINE:
        return
    positions = outside_positions(data.column(column))
    if len(positions):
        place = int(positions[0])
        squared = float32_squared_norms([data.column(column)[place].as_py()])
        problem = cosine_norm_problem(float(squared[0]))
        raise EngineError(
            f"{row_name(place)} of vector column '{column}' {problem} (the table is searched "
            "by cosine distance)"
        )


LOAD_BATCH_ROWS = 2_000
"""The most rows a store's load or upsert turns into Python values at once: the rows are
written (``executemany``, ``COPY``) and their vectors checked one Arrow record batch of at
most this many rows at a time, so the memory a load holds beyond its Arrow table grows with
this, not with the table. Chosen by ``benchmarks/bench_store_load.py --batch-rows`` (SQLite,
100,000 rows of 384-d float32 vectors; docs/benchmarks.md, "Peak memory of a store load"):
the load held 49, 67, 116, 197 and 890 MiB over its table at 500, 2,000, 5,000, 10,000 and
50,000 rows a batch, and its time (7 to 16 s on a busy machine) did not tell the sizes apart
beyond 500 (16 s)."""


def record_batches(data: pa.Table) -> Iterator[pa.RecordBatch]:
    """``data`` as record batches of at most :data:`LOAD_BATCH_ROWS` rows, in row order
    (views of its buffers: nothing is copied)."""
    yield from data.to_batches(max_chunksize=LOAD_BATCH_ROWS)


def vector_dimensions(data: pa.Table, column: str) -> int:
    """The one length of the non-NULL vectors of ``column`` (with none, the list size of a
    fixed-size list column, else 0). Read :data:`LOAD_BATCH_ROWS` rows at a time, by Arrow
    compute functions (no row becomes a Python list unless its batch holds a bad vector).

    Raises:
        EngineError: vectors of different lengths, an empty vector, or a component that is
            not finite or lies beyond Float32's range.
    """
    import pyarrow.compute as pc

    first: tuple[int, int] | None = None  # (row, length) of the first non-NULL vector
    start = 0
    for batch in record_batches(data.select([column])):
        vectors = batch.column(0)
        sizes = pc.list_value_length(vectors)
        if not _vectors_sound(vectors, sizes):
            _raise_bad_vector(vectors, column, start)
        if first is None and sizes.null_count < len(sizes):
            row = pc.index(pc.is_valid(sizes), True).as_py()
            first = (start + row, sizes[row].as_py())
        if first is not None:
            row = _first_other_length(sizes, first[1])
            if row is not None:
                raise EngineError(
                    f"vector column '{column}': {row_name(start + row)} has "
                    f"{counted(sizes[row].as_py(), 'dimension')}, {row_name(first[0])} has "
                    f"{first[1]}; a column's vectors share one length"
                )
        start += batch.num_rows
    if first is not None:
        return first[1]
    kind = data.schema.field(column).type
    return int(kind.list_size) if hasattr(kind, "list_size") else 0


def loaded_vector_dimensions(data: pa.Table, column: str) -> int:
    """The length of vector column ``column`` of a table being loaded
    (:func:`vector_dimensions`), which every engine declares the column with (DuckDB's
    ``FLOAT[n]``, pgvector's ``vector(n)``, LanceDB's fixed-size list, turbopuffer's
    ``[n]f32``, the local engine's and SQLite's recorded length), so a column that holds no
    vector and whose type gives no length (a variable list of NULLs only) is refused on
    every engine alike. A fixed-size list column (``pa.list_(pa.float32(), n)``) of NULLs
    loads: its type gives ``n`` (``hdq load`` writes embeddings so, an all-empty text column
    embedding to NULLs).

    Raises:
        EngineError: naming the column, as :func:`vector_dimensions` does, or saying its
            length is unknown.
    """
    size = vector_dimensions(data, column)
    if size == 0:
        raise EngineError(
            f"vector column '{column}' holds no vector, so its length is unknown; load at "
            "least one row with a vector, or type the column as a fixed-size list "
            "(pa.list_(pa.float32(), n))"
        )
    return size


def check_written_vectors(rows: pa.Table, column: str, dimensions: int, table: Any) -> None:
    """Refuse rows written into ``table`` whose vector column ``column`` is not a column of
    numbers' lists (:func:`~hotdata_retrieval.engines.checks.check_vector_rows_type`), holds
    a vector of another length than the table's ``dimensions`` (NULLs pass), or a vector
    :func:`vector_dimensions` refuses (empty, a component NaN, infinite or beyond Float32's
    range, where it would be stored as an infinity); by Arrow compute functions, naming the
    first such row of ``rows``.

    Raises:
        EngineError: naming the column, and the rows' type, or the table's length, the row
            and its length, or the row and its values.
    """
    import pyarrow.compute as pc

    check_vector_rows_type(rows.schema.field(column).type, column, table)
    sizes = pc.list_value_length(rows.column(column))
    row = _first_other_length(sizes, dimensions)
    if row is not None:
        raise EngineError(
            f"vector column '{column}' of table '{table}' holds vectors of "
            f"{counted(dimensions, 'dimension')}; {row_name(row)} of the rows has "
            f"{sizes[row].as_py()}"
        )
    vector_dimensions(rows, column)


def _first_other_length(sizes: Any, length: int) -> int | None:
    """The position of the first of ``sizes`` (vector lengths, NULL for a NULL row) that is
    not ``length``, or ``None``."""
    import pyarrow.compute as pc

    other = pc.fill_null(pc.not_equal(sizes, length), False)
    return pc.index(other, True).as_py() if pc.any(other).as_py() else None


def _vectors_sound(vectors: Any, sizes: Any) -> bool:
    """Whether every non-NULL vector of ``vectors`` (a list array; ``sizes`` its lengths) is
    non-empty with every component a finite number within Float32's range (every store
    holds its vectors as Float32, where a larger Float64 value is an infinity); ``False``
    too when Arrow cannot tell (a float type its ``is_finite`` does not take), so the caller
    looks row by row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pc.any(pc.equal(sizes, 0)).as_py():
        return False
    components = vectors.flatten()  # the non-NULL rows' components only
    if components.null_count:
        return False
    try:
        finite = pc.all(pc.is_finite(components)).as_py()
    except pa.ArrowNotImplementedError:
        return False
    if finite is False:
        return False
    if not pa.types.is_float64(components.type) or not len(components):
        return True  # Float16 and Float32 values are within Float32's range
    return bool(pc.max(pc.abs(components)).as_py() <= FLOAT32_MAX)


def _raise_bad_vector(vectors: Any, column: str, start: int) -> None:
    """Raise for the first row of ``vectors`` (a batch whose first row is row ``start`` of
    the table) that is not a vector of finite numbers within Float32's range; nothing when
    each row is one.

    Raises:
        EngineError: naming the row and its first components.
    """
    for position, value in enumerate(vectors.to_pylist(), start):
        if value is None:
            continue
        if not value or any(x is None or not math.isfinite(x) for x in value):
            raise EngineError(
                f"{row_name(position)} of vector column '{column}' is not a vector of finite "
                f"numbers: {value[:8]!r}"
            )
        if any(abs(x) > FLOAT32_MAX for x in value):
            raise EngineError(
                f"{row_name(position)} of vector column '{column}' holds a value beyond Float32's "
                f"range (magnitude at most {FLOAT32_MAX:.6g}); vectors are stored as Float32, "
                f"where it would be an infinity: {value[:8]!r}"
            )
