"""The Hotdata engine's tables changed and read by key: managed tables, through hotdata-framework.

A managed table is written by loads (``HotdataClient.load_managed_table``: a parquet file
uploaded, then loaded in a mode): ``upsert`` replaces the rows whose key an upload holds and
adds the others, ``delete`` removes the rows whose key it holds (an upload of the key column
alone), both keyed by the key the table was declared with (``add_managed_table(...,
key=[...])``); an upsert must carry every column of the table (the API answers ``upload is
missing column '<name>'``; hotdata-langchain's vector store plan, "Live verification"). A
table is made by declaring it with its key, loading its first rows (``replace``) and building
a BM25 index on each text column (``create_index(..., index_type="bm25")``, which waits for
the build); ``vector_index="hnsw"`` builds a plain vector index of the store's metric on each
vector column too (without one, nearest-neighbour search is an exact scan, always correct:
engine contract §1.4). The server keeps the indexes; each load is one request, so a change is
one commit.

Rows are read with SQL (``POST /v1/query``), in pages of :data:`READ_PAGE_ROWS` ordered by
the key (the framework's result is a bounded preview of a large one), and by key with ``IN``
lists of :data:`KEYS_PER_STATEMENT` literals. The control plane lists no keys: a table's key
is the one it was made with here, else ``id`` (``key_column=`` names another).
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotdata_retrieval.compile.compiler import table_reference
from hotdata_retrieval.compile.statements import CastText, select_keyed_rows, select_page
from hotdata_retrieval.engines.checks import (
    ValueKind,
    check_cosine_norms,
    check_key_column,
    check_no_null_type,
    check_temporal_values_kept,
    checked_keys,
    column_names,
    declared_value_kind,
    missing_table_error,
    rows_table,
    table_load,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hnsw import VectorIndexKind, unbuilt_vector_index
from hotdata_retrieval.errors import HotdataApiError
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import DistanceMetric

BUILT_VECTOR_INDEXES: tuple[str, ...] = (VectorIndexKind.HNSW.value,)
"""The vector indexes a managed table is built with: a plain vector index of the table's
metric (the Hotdata engine's ``vector_indexes``)."""

if TYPE_CHECKING:
    import pyarrow as pa
    from hotdata_framework import HotdataClient, ManagedDatabase, QueryResult

    from hotdata_retrieval.compile import DialectProfile

READ_PAGE_ROWS = 1000
"""Rows one statement of :meth:`ManagedTableRows.read_table` reads."""

KEYS_PER_STATEMENT = 500
"""Keys one statement of :meth:`ManagedTableRows.read_rows` names."""

DEFAULT_KEY = "id"
"""A table's key when it was not made by this engine (the control plane lists no keys)."""

TIMESTAMP_UNIT = "ns"
"""The finest Arrow time unit a managed table keeps a timestamp key in: its rows are loaded
from a Parquet upload, which pyarrow writes in format 2.6, holding a timestamp's nanoseconds
(``check_key_column``)."""


_SCALAR_TYPES = (
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Float16",
    "Float32",
    "Float64",
    "Boolean",
    "Utf8",
    "LargeUtf8",
    "Date32",
    "Date64",
)
_TIME_UNITS = {"Second": "s", "Millisecond": "ms", "Microsecond": "us", "Nanosecond": "ns"}
_UNIT = "(Second|Millisecond|Microsecond|Nanosecond)"
_TIMESTAMP_NAME = re.compile(rf'Timestamp\({_UNIT}, (?:None|Some\("([^"]*)"\))\)')
_TIME_NAME = re.compile(rf"Time(32|64)\({_UNIT}\)")
_DECIMAL_NAME = re.compile(r"Decimal(128|256)\(([0-9]+), (-?[0-9]+)\)")
_OFFSET = re.compile(r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$", re.IGNORECASE)
_OFFSET_SECONDS = re.compile(r"([+-])([0-9]{2}):([0-9]{2}):([0-9]{2})$")
"""An offset of seconds, as Python's ``isoformat`` writes a local mean time's."""


def listed_arrow_type(declared: str | None) -> Any:
    """The Arrow type (``pyarrow.DataType``) a column's type name names, as the Hotdata API
    lists it: Arrow's Rust crate's display of the type (``Int32``, ``Utf8``,
    ``Timestamp(Microsecond, Some("UTC"))``, ``Date32``, ``Time64(Nanosecond)``,
    ``Decimal128(10, 2)``: the API's ``ColumnProfileInfo.data_type``, hotdata 0.12.0);
    ``None`` for a type not read here (lists, structs, binary).

    >>> listed_arrow_type('Timestamp(Nanosecond, Some("UTC"))')
    TimestampType(timestamp[ns, tz=UTC])
    >>> listed_arrow_type("Decimal128(10, 2)")
    Decimal128Type(decimal128(10, 2))
    >>> listed_arrow_type("List(Float32)") is None
    True
    """
    import pyarrow as pa

    name = (declared or "").strip()
    if name in _SCALAR_TYPES:
        scalar = {"Boolean": "bool_", "Utf8": "string", "LargeUtf8": "large_string"}
        return getattr(pa, scalar.get(name, name.lower()))()
    timestamp = _TIMESTAMP_NAME.fullmatch(name)
    if timestamp is not None:
        return pa.timestamp(_TIME_UNITS[timestamp.group(1)], timestamp.group(2))
    time = _TIME_NAME.fullmatch(name)
    if time is not None:
        kind = pa.time32 if time.group(1) == "32" else pa.time64
        try:
            return kind(_TIME_UNITS[time.group(2)])
        except ValueError:  # a unit that width does not hold
            return None
    decimal = _DECIMAL_NAME.fullmatch(name)
    if decimal is not None:
        kind = pa.decimal128 if decimal.group(1) == "128" else pa.decimal256
        try:
            return kind(int(decimal.group(2)), int(decimal.group(3)))
        except ValueError:
            return None
    return None


_LIST_NAME = re.compile(
    r"(Large)?List\((?:Field \{ name: \"[^\"]*\", data_type: )?(.*?)(?:, nullable: .*\})?\)"
)
"""A list's type name as the API lists it, ``List(Timestamp(Microsecond, None))`` or with the
element's field, ``List(Field { name: "item", data_type: Date32, nullable: true, ... })``."""


def listed_temporal_list(declared: str | None) -> Any:
    """The Arrow list type (``pyarrow.DataType``) a list column's type name names when its
    elements are dates, times or timestamps (:func:`listed_arrow_type` reads the element);
    ``None`` for any other type, whose answer is typed by its values.

    >>> listed_temporal_list("List(Timestamp(Millisecond, None))")
    ListType(list<item: timestamp[ms]>)
    >>> listed_temporal_list("List(Int64)") is None
    True
    """
    import pyarrow as pa

    match = _LIST_NAME.fullmatch((declared or "").strip())
    if match is None:
        return None
    element = listed_arrow_type(match.group(2))
    if element is None or not pa.types.is_temporal(element):
        return None
    return pa.large_list(element) if match.group(1) else pa.list_(element)


def _typed_list_column(values: list[Any], kind: Any, column: str, declared: str) -> Any:
    """A list column of the API's answer (each value a JSON list or ``None``) as an array of
    the list type ``kind`` (:func:`listed_temporal_list`), its elements read as
    :func:`typed_column` reads a column; ``None`` where a value is not a list or an element is
    not the JSON kind its type is sent as."""
    import pyarrow as pa

    if not all(value is None or isinstance(value, list) for value in values):
        return None
    offsets = [0]
    for value in values:
        offsets.append(offsets[-1] + len(value or ()))
    flat = [element for value in values for element in value or ()]
    elements = typed_column(flat, kind.value_type, column, declared)
    if elements is None:
        return None
    mask = pa.array([value is None for value in values])
    make = pa.LargeListArray if pa.types.is_large_list(kind) else pa.ListArray
    return make.from_arrays(
        pa.array(offsets, pa.int64() if make is pa.LargeListArray else pa.int32()),
        elements,
        mask=mask,
    )


def _key_type(declared: str | None) -> Any:
    """The Arrow type a key of a column of type name ``declared`` is checked against
    (:func:`~hotdata_retrieval.engines.checks.checked_keys`): a number's or a date's, time's
    or timestamp's; ``None`` for any other type."""
    import pyarrow as pa

    kind = listed_arrow_type(declared)
    if kind is None or not (
        pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_temporal(kind)
    ):
        return None
    return kind


def key_literals(keys: Sequence[Any], declared: str | None) -> list[Any]:
    """Checked ``keys`` of a key column of type name ``declared`` as the values a statement
    compares the column with: a date, time or timestamp as its text cast to the column's own
    type (:class:`~hotdata_retrieval.compile.statements.CastText`, every digit kept, a zoned
    column's instants in UTC); other keys as they are.

    >>> import datetime
    >>> key_literals([datetime.date(2020, 1, 2)], "Date32")
    [CastText(text='2020-01-02', type_name='Date32')]
    """
    import pyarrow as pa

    kind = listed_arrow_type(declared)
    if not keys or kind is None or not pa.types.is_temporal(kind):
        return list(keys)
    values = pa.array(list(keys))
    if pa.types.is_timestamp(values.type):  # a pandas Timestamp's nanoseconds kept
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            values = pa.array(list(keys), pa.timestamp("ns", values.type.tz))
    values = values.cast(kind, safe=False)  # checked: the column holds each exactly
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        values = values.cast(pa.timestamp(kind.unit, "UTC"))
    elif pa.types.is_date(kind):
        values = values.cast(pa.date32())
    texts = values.cast(pa.string()).to_pylist()
    return [CastText(str(text), str(declared)) for text in texts]


def _parsed_timestamps(texts: list[Any], kind: Any) -> Any:
    """ISO 8601 ``texts`` as an array of timestamp type ``kind``; a text without an offset
    is a time in UTC, as everywhere in the library. An offset of seconds (``-04:56:02``,
    a zone's local mean time before its standard time, as Python writes it), which Arrow
    does not read, is applied here."""
    import pyarrow as pa
    import pyarrow.compute as pc

    spelled: list[str | None] = []
    offsets: list[int] = []
    for text in texts:
        seconds = None if text is None else _OFFSET_SECONDS.search(text[10:])
        if seconds is not None:
            sign = -1 if seconds.group(1) == "-" else 1
            hours, minutes, rest = (int(seconds.group(part)) for part in (2, 3, 4))
            offsets.append(sign * (hours * 3600 + minutes * 60 + rest))
            spelled.append(f"{text[: 10 + seconds.start()]}Z")
            continue
        offsets.append(0)
        spelled.append(
            None if text is None else (text if _OFFSET.search(text[10:]) else f"{text}Z")
        )
    array = pa.array(spelled, pa.string())
    try:
        instants = array.cast(pa.timestamp("ns", "UTC"))  # every digit of a nanosecond
    except pa.ArrowInvalid:
        instants = array.cast(pa.timestamp("us", "UTC"))  # years nanoseconds do not hold
    if any(offsets):
        unit = instants.type.unit
        shifts = pa.array(offsets, pa.int64()).cast(pa.duration("s")).cast(pa.duration(unit))
        instants = pc.subtract_checked(instants, shifts)
    return instants.cast(pa.timestamp(kind.unit, "UTC")).cast(kind)


def _parsed_times(texts: list[Any], kind: Any) -> Any:
    """``HH:MM:SS[.fraction]`` ``texts`` as an array of time type ``kind``."""
    import pyarrow as pa

    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[kind.unit]
    counts: list[int | None] = []
    for text in texts:
        if text is None:
            counts.append(None)
            continue
        hours, minutes, seconds = text.split(":")
        whole, _, fraction = seconds.partition(".")
        digits = len(str(per_second)) - 1
        if fraction.rstrip("0")[digits:]:
            raise ValueError(f"{text!r} is finer than the column's unit")
        counts.append(
            (int(hours) * 3600 + int(minutes) * 60 + int(whole)) * per_second
            + int((fraction[:digits] or "0").ljust(digits, "0") or "0")
        )
    integers = pa.int32() if kind.bit_width == 32 else pa.int64()
    return pa.array(counts, integers).view(kind)


def typed_column(values: list[Any], kind: Any, column: str, declared: str) -> Any:
    """A column of the API's answer (its JSON ``values``) as an array of its listed Arrow
    type ``kind`` (:func:`listed_arrow_type`): a timestamp, date or time read from its ISO
    text, a decimal from its text or number, exactly; ``None`` where the values are not of
    the JSON kind that type is sent as (the column is then read by its values).

    Raises:
        EngineError: a value of that kind that does not read as a value of the type.
    """
    import decimal

    import pyarrow as pa

    present = [value for value in values if value is not None]
    temporal = pa.types.is_temporal(kind)
    if temporal and not all(isinstance(value, str) for value in present):
        return None
    try:
        if pa.types.is_timestamp(kind):
            return _parsed_timestamps(values, kind)
        if pa.types.is_date(kind):
            return pa.array(values, pa.string()).cast(pa.date32()).cast(kind)
        if pa.types.is_time(kind):
            return _parsed_times(values, kind)
        if pa.types.is_decimal(kind):
            if any(isinstance(value, bool) for value in present):
                return None
            return pa.array(
                [None if value is None else decimal.Decimal(str(value)) for value in values],
                kind,
            )
        return pa.array(values, kind)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        ValueError,
        TypeError,
        OverflowError,
        decimal.InvalidOperation,
    ) as error:
        if not temporal and not pa.types.is_decimal(kind):
            return None  # read by its values, as a statement's answer is
        raise EngineError(
            f"column '{column}' ({declared}) of the API's answer holds a value that is not "
            f"one of its type: {error}"
        ) from None


class ManagedTableRows:
    """``tables``, ``read_table``, ``read_rows``, ``upsert_rows`` and ``delete_rows`` of the
    Hotdata engine (module docstring)."""

    profile: DialectProfile
    catalog: str
    schema: str
    _client: HotdataClient
    _database: ManagedDatabase
    _requests: Any

    def table_name(self, name: str | TableName) -> TableName:
        raise NotImplementedError

    def _execute(self, text: str) -> QueryResult:
        raise NotImplementedError

    @property
    def _keys(self) -> dict[TableName, str]:
        keys: dict[TableName, str] | None = getattr(self, "_table_keys", None)
        if keys is None:
            keys = {}
            self._table_keys = keys
        return keys

    def _key(self, table: TableName, key_column: str | None) -> str:
        if key_column is not None:
            return normalize_identifier(key_column, label="key column")
        return self._keys.get(table, DEFAULT_KEY)

    def _listed_columns(self, table: TableName) -> dict[str, str] | None:
        """Each column of ``table`` with its type's name, as the control plane lists it (one
        ``GET /v1/information_schema`` with ``include_columns``: an Arrow type's name, such
        as ``Int64``, ``Utf8`` or ``Timestamp(Microsecond, Some("UTC"))``); ``None`` when
        the table is listed without its columns.

        Raises:
            EngineError: no such table, named beside the tables of the database's schema.
            HotdataApiError: the API refused the listing.
        """
        from hotdata.api.information_schema_api import InformationSchemaApi

        connection = self._connection_for(table)
        listing = self._call(
            lambda: InformationSchemaApi(self._client.api).information_schema(
                connection_id=connection,
                var_schema=table.schema,
                table=table.name,
                include_columns=True,
            ),
            f"the column listing of {table}",
        )
        listed = [
            info
            for info in listing.tables
            if (info.var_schema, info.table) == (table.schema, table.name)
        ]
        if not listed:
            raise missing_table_error(table, self.tables, where=" in the database")
        if listed[0].columns is None:
            return None
        return {column.name: column.data_type for column in listed[0].columns}

    def _connection_for(self, table: TableName) -> str:
        raise NotImplementedError

    def _checked_keys(
        self, table: TableName, key: str, keys: Any
    ) -> tuple[list[Any], dict[str, str]]:
        """The distinct ``keys`` as values of ``table``'s key column ``key``, the one rule of
        every engine (:func:`~hotdata_retrieval.engines.checks.checked_keys`), its type as the
        control plane lists the table's columns (:meth:`_listed_columns`), and those columns'
        types (empty when they are not listed). A column listed without a type takes keys of
        any kind.

        Raises:
            EngineError: ``keys`` is no list; no such table; no column ``key``; a key the
                column cannot hold. Nothing was read or changed.
        """
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__len__"):
            return checked_keys(keys, ValueKind.OTHER, key, ""), {}  # refuses them
        types = self._listed_columns(table)
        if types is not None and key not in types:
            raise EngineError(
                f"table '{table}' has no key column '{key}' (a table not made by this engine "
                "is keyed by 'id' unless key_column= names its key); columns: "
                f"{', '.join(types)}"
            )
        types = types or {}
        declared = types.get(key)
        held = _key_type(declared)
        checked = checked_keys(
            keys, declared_value_kind(declared), key, declared or "untyped", held
        )
        return checked, types

    def _managed(self, table: str | TableName) -> TableName:
        name = self.table_name(table)
        if name.catalog != self.catalog:
            raise EngineError(
                f"table '{name}' is in catalog '{name.catalog}', attached to the database: "
                f"only the database's own tables (catalog '{self.catalog}') are managed and "
                "can be written"
            )
        return name

    def _call(self, function: Callable[[], Any], what: str) -> Any:
        """One framework call within the request deadline; a failure is a HotdataApiError."""
        from hotdata_retrieval.engines.hotdata import _client_failures

        try:
            return self._requests.run(function, what=what)
        except _client_failures() as error:
            self._requests.raise_failure(error)

    @property
    def tables(self) -> dict[str, TableName]:
        """The tables of the database's ``public`` schema, by name (the framework's
        ``list_managed_tables``: one information-schema listing, paged).

        Raises:
            HotdataApiError: the API refused the listing.
        """
        listed = self._call(
            lambda: self._client.list_managed_tables(self._database, schema=self.schema),
            "the table listing",
        )
        found = {table.table: self.table_name(table.table) for table in listed}
        self._known.update(found.values())
        return found

    @property
    def _known(self) -> set[TableName]:
        """The tables seen to exist (listed or made here): a write to one of them does not
        list the tables again."""
        known: set[TableName] | None = getattr(self, "_known_tables", None)
        if known is None:
            known = set()
            self._known_tables = known
        return known

    def _rows(self, result: QueryResult) -> list[dict[str, Any]]:
        return [dict(zip(result.columns, row)) for row in result.rows]

    def _arrow(
        self,
        columns: Sequence[str],
        rows: list[dict[str, Any]],
        types: Mapping[str, str] | None = None,
    ) -> pa.Table:
        """``rows`` (the API's JSON values) as an Arrow table of ``columns``, each column of
        a listed type (``types``, by name: :meth:`_listed_columns`) of that type
        (:func:`typed_column`), the others typed by their values."""
        import pyarrow as pa

        from hotdata_retrieval.engines.hotdata import result_table

        table = result_table(list(columns), [[row.get(c) for c in columns] for row in rows])
        for position, name in enumerate(table.column_names):
            declared = (types or {}).get(name)
            kind = listed_arrow_type(declared) or listed_temporal_list(declared)
            if kind is None or table.schema.field(position).type == kind:
                continue
            values = [row.get(name) for row in rows]
            if pa.types.is_list(kind) or pa.types.is_large_list(kind):
                typed = _typed_list_column(values, kind, name, str(declared))
            else:
                typed = typed_column(values, kind, name, str(declared))
            if typed is not None:
                table = table.set_column(position, name, typed)
        return table

    def read_table(
        self,
        table: str | TableName,
        columns: Sequence[str] | None = None,
        *,
        key_column: str | None = None,
    ) -> pa.Table:
        """Every row of ``table`` (``columns`` of them; default every column) in key order,
        :data:`READ_PAGE_ROWS` per statement, each column of the type the control plane
        lists it with (:meth:`_listed_columns`: a timestamp is a timestamp of its unit and
        zone, a decimal a decimal), a type not read here (a list) typed by its values.

        Args:
            key_column: the key the pages are ordered by (default: the one the table was
                made with here, else ``id``).

        Raises:
            EngineError: no such table, named beside the tables of the database's schema
                (:func:`~hotdata_retrieval.engines.checks.missing_table_error`).
            HotdataApiError: the engine's message (no such column).
        """
        name = self.table_name(table)
        key = self._key(name, key_column)
        types = self._listed_columns(name) or {}
        wanted = None if columns is None else list(dict.fromkeys([key, *columns]))
        rows: list[dict[str, Any]] = []
        after = None
        names: list[str] = [] if columns is None else list(columns)
        while True:
            statement = select_page(
                self.profile, table_reference(name), wanted, key, after=after, limit=READ_PAGE_ROWS
            )
            try:
                result = self._execute(statement)
            except HotdataApiError:
                held = self.tables if after is None and name.schema == self.schema else None
                if held is not None and name.name not in held:  # named, not the planner's
                    raise missing_table_error(name, held, where=" in the database") from None
                raise
            if not names:
                names = list(result.columns)
            page = self._rows(result)
            rows.extend(page)
            if len(page) < READ_PAGE_ROWS:
                break
            after = self._page_key(page[-1][key], key, types)
        return self._arrow(names, rows, types)

    def _page_key(self, value: Any, key: str, types: Mapping[str, str]) -> Any:
        """The last key of a page (a JSON value) as the next page's statement compares the
        key column with: a date, time or timestamp as a value of the column's type."""
        declared = types.get(key)
        kind = listed_arrow_type(declared)
        if value is None or kind is None:
            return value
        import pyarrow as pa

        if not pa.types.is_temporal(kind):
            return value
        typed = typed_column([value], kind, key, str(declared))
        if typed is None:
            return value
        return key_literals(typed.to_pylist(), declared)[0]

    def read_rows(
        self,
        table: str | TableName,
        keys: Sequence[Any],
        columns: Sequence[str] | None = None,
        *,
        key_column: str | None = None,
    ) -> pa.Table:
        """The rows of ``table`` keyed by ``keys`` (``columns`` of them), in no set order; an
        unknown key is left out. One statement per :data:`KEYS_PER_STATEMENT` keys. A date,
        time or timestamp key is compared as a value of the key column's own type, and the
        columns are of their listed types (:meth:`read_table`).

        Raises:
            EngineError: no such table, or a key of another kind than the key column's, or
                one its type would change
                (:func:`~hotdata_retrieval.engines.checks.checked_keys`), before anything is
                read.
            HotdataApiError: the engine's message (a column it does not have).
        """
        name = self.table_name(table)
        key = self._key(name, key_column)
        distinct, types = self._checked_keys(name, key, keys)
        return self._read_keyed(name, key, distinct, columns, types)

    def _read_keyed(
        self,
        name: TableName,
        key: str,
        distinct: list[Any],
        columns: Sequence[str] | None,
        types: Mapping[str, str],
    ) -> pa.Table:
        """The rows of ``name`` keyed by the checked keys ``distinct``, ``name``'s columns of
        the types ``types`` lists."""
        names = list(columns) if columns is not None else []
        wanted = None if columns is None else list(dict.fromkeys([key, *names]))
        literals = key_literals(distinct, types.get(key))
        rows: list[dict[str, Any]] = []
        for start in range(0, len(literals), KEYS_PER_STATEMENT):
            chunk = literals[start : start + KEYS_PER_STATEMENT]
            statement = select_keyed_rows(self.profile, table_reference(name), wanted, key, chunk)
            result = self._execute(statement)
            if not names:
                names = list(result.columns)
            rows.extend(self._rows(result))
        return self._arrow(names or [key], rows, types)

    def _load(self, table: TableName, data: pa.Table, *, mode: str, key: str | None) -> Any:
        """One load of ``data`` into managed table ``table`` (written to a parquet file in
        a temporary directory, uploaded and loaded by the framework)."""
        with tempfile.TemporaryDirectory(prefix="hdq-load-") as directory:
            path = Path(directory) / f"{table.name}.parquet"
            _parquet_file(data, table, path)
            return self._call(
                lambda: self._client.load_managed_table(
                    self._database,
                    table.name,
                    schema=table.schema,
                    file=str(path),
                    mode=mode,  # type: ignore[arg-type]
                    key=None if key is None else [key],
                ),
                f"the {mode} load of {table}",
            )

    def upsert_rows(
        self,
        name: str,
        rows: pa.Table,
        *,
        create: Any = None,
        key_column: str | None = None,
    ) -> TableName:
        """Write ``rows`` into managed table ``name`` by key in one load (``upsert``): the
        rows whose key the table holds are replaced, the others added; every column of the
        table must be there (the API's rule). A missing table is made from ``create`` (a
        :class:`~hotdata_retrieval.engines.local.TableLoad`: declared with its key, loaded,
        a BM25 index built on each text column, and with ``vector_index="hnsw"`` a vector
        index of its metric on each vector column). Returns the table's name.

        Raises:
            EngineError: no such table and no ``create``; a table of an attached catalog; no
                key column in the rows, a NULL or repeated key; a ``create`` with embedded
                columns or an unknown vector index.
            HotdataApiError: the API refused a request (a missing column, a value the
                column cannot hold: nothing was loaded).
        """
        rows = rows_table(rows)
        create = table_load(create)
        table = self._managed(name)
        key = self._key(table, key_column)
        if table not in self._known and table.name not in self.tables:
            if create is None:
                raise EngineError(
                    f"table '{table}' not found in the database; pass create= to make it"
                )
            self._create(table, create)
            return table
        columns = column_names(rows.schema)
        rows = rows.rename_columns(columns)
        _check_keys(rows, key)
        _check_vectors(rows)
        if rows.num_rows:
            self._load(table, rows, mode="upsert", key=key)
        return table

    def _create(self, table: TableName, create: Any) -> None:
        """Declare ``table`` with ``create``'s key, load its rows and build its indexes."""
        import pyarrow as pa

        from hotdata_retrieval.engines.store import vector_columns_of

        if tuple(create.embed_columns):
            raise EngineError(
                "the Hotdata engine embeds no column here: give the vectors (a provider-backed "
                "index embeds on the server, but cannot share its table with a BM25 index)"
            )
        if create.vector_index is not None and create.vector_index not in BUILT_VECTOR_INDEXES:
            raise EngineError(
                unbuilt_vector_index(create.vector_index, "Hotdata", BUILT_VECTOR_INDEXES)
            )
        if create.key_column is None:
            raise EngineError("a managed table written by key needs a key_column")
        key = normalize_identifier(create.key_column, label="key column")
        data = rows_table(create.data)
        columns = column_names(data.schema)
        data = data.rename_columns(columns)
        _check_keys(data, key, loading=True)  # before the table is declared: none is left
        check_no_null_type(data)  # a column no engine stores, refused as on every engine
        _check_vectors(data, loading=True)
        for column in vector_columns_of(data):  # float32 lists, as a vector index reads them
            position = data.schema.get_field_index(column)
            values = data.column(column).cast(pa.list_(pa.float32()))
            data = data.set_column(position, column, values)
        for column in vector_columns_of(data):  # before the table is declared: none is left
            check_cosine_norms(data, column, create.vector_metric)
        _parquet_file(data.schema.empty_table(), table, io.BytesIO())  # none left, as above
        self._call(
            lambda: self._client.add_managed_table(
                self._database, table.name, schema=table.schema, key=[key]
            ),
            f"the declaration of {table}",
        )
        self._keys[table] = key
        self._known.add(table)
        self._load(table, data, mode="replace", key=None)
        builds: list[tuple[str, dict[str, Any]]] = [
            (normalize_identifier(column, label="text column"), {"index_type": "bm25"})
            for column in create.text_columns
        ]
        if create.vector_index == VectorIndexKind.HNSW.value:
            metric = DistanceMetric.parse(create.vector_metric).value
            builds.extend(
                (column, {"index_type": "vector", "metric": metric})
                for column in vector_columns_of(data)
            )
        for column, options in builds:
            self._call(
                functools.partial(
                    self._client.create_index,
                    self._database,
                    table.name,
                    schema=table.schema,
                    columns=[column],
                    **options,
                ),
                f"the {options['index_type']} index of {table}.{column}",
            )

    def delete_rows(self, name: str, keys: Sequence[Any], *, key_column: str | None = None) -> int:
        """Remove managed table ``name``'s rows keyed by ``keys`` in one load (``delete``, an
        upload of the key column alone); returns how many there were (read first: the load
        reports the rows left). An unknown key is no error.

        Raises:
            EngineError: a table of an attached catalog, no such table, or a key of another
                kind than the key column's
                (:func:`~hotdata_retrieval.engines.checks.checked_keys`), before anything is
                deleted.
            HotdataApiError: the API refused a request.
        """
        import pyarrow as pa

        table = self._managed(name)
        key = self._key(table, key_column)
        distinct, types = self._checked_keys(table, key, keys)
        if not distinct:
            return 0
        found = self._read_keyed(table, key, distinct, [key], types).column(key)
        if not len(found):
            return 0
        self._load(table, pa.table({key: found}), mode="delete", key=key)
        return len(found)


def _parquet_file(data: Any, table: TableName, where: Any) -> None:
    """Write ``data`` as the Parquet file a load uploads, to ``where`` (a path or a binary
    file).

    Raises:
        EngineError: a column of a type Parquet has no form of (a decimal of negative scale),
            naming the table; nothing was sent.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.write_table(data, where)
    except (pa.ArrowException, OSError) as error:
        raise EngineError(
            f"cannot write the rows for {table} as the Parquet file a load uploads: {error}; "
            "nothing was sent"
        ) from None


def _check_vectors(rows: Any, *, loading: bool = False) -> None:
    """Refuse ``rows`` (a ``pyarrow.Table``) with a vector column (a list of floating-point
    numbers) that holds an empty vector, vectors of different lengths, or a component NaN,
    infinite or beyond Float32's range, before anything is sent: the rows are sent as
    Float32 vectors, where a larger value is an infinity. ``loading``: the rows make the
    table, and a vector column of no vector whose type gives no length is refused too, as on
    every engine (:func:`~hotdata_retrieval.engines.checks.loaded_vector_dimensions`).

    Raises:
        EngineError: naming the column and the row
            (:func:`~hotdata_retrieval.engines.checks.vector_dimensions`).
    """
    from hotdata_retrieval.engines.checks import loaded_vector_dimensions, vector_dimensions
    from hotdata_retrieval.engines.store import (
        vector_columns_of,
    )

    for column in vector_columns_of(rows):
        (loaded_vector_dimensions if loading else vector_dimensions)(rows, column)


def _check_keys(rows: Any, key: str, *, loading: bool = False) -> None:
    """Refuse ``rows`` (a ``pyarrow.Table`` of normalized column names) without the key
    column ``key``, with keys that name no single row, or with a timestamp or ``date64``
    value the table would not keep as it is, before anything is sent (``loading``: the
    table is being made).

    Raises:
        EngineError: naming the missing column, or the key and what to do
            (:func:`~hotdata_retrieval.engines.checks.check_key_column`), or the column and
            the value (:func:`~hotdata_retrieval.engines.checks.check_temporal_values_kept`).
    """
    if key not in rows.column_names:
        raise EngineError(
            f"the rows have no key column '{key}' (a table not made by this engine is "
            "keyed by 'id' unless key_column= names its key)"
        )
    check_key_column(
        rows.column(key),
        key,
        loading=loading,
        timestamp_unit=TIMESTAMP_UNIT,
        store="the Hotdata engine",
    )
    check_temporal_values_kept(rows, timestamp_unit=TIMESTAMP_UNIT, store="the Hotdata engine")
