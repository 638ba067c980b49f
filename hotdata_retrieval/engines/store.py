"""What every SQL store's engine shares: the engine contract over a DB-API connection.

A *store* is a database the library does not embed — SQLite, PostgreSQL, DuckDB — reached
through its Python driver. :class:`SqlStoreEngine` implements the engine contract
(:class:`~hotdata_retrieval.engines.base.Engine`) once for all of them:

- ``search(plan)`` checks the plan against the table (every column it names exists, the
  text branches' columns have a full-text index, a query vector has the column's dimensions),
  compiles it for the store's dialect with :func:`~hotdata_retrieval.compile.to_sql`, runs it
  and builds the result with :func:`~hotdata_retrieval.engines.results.search_result`, as
  every engine does;
- ``sql(text)`` runs one statement and returns an Arrow table;
- ``indexes(table)`` reads the store's full-text indexes and the library's catalog table
  (:data:`~hotdata_retrieval.compile.statements.CATALOG_TABLE`: key and vector columns);
- ``plan_search`` routes with :func:`hotdata_retrieval.routing.plan_search`;
- ``load_table(name, data, ...)`` writes an Arrow table, its full-text indexes and its
  catalog rows.

A subclass gives the driver calls and the store's facts (types, index statements); the SQL
comes from the compile layer (the store's dialect module and
:mod:`hotdata_retrieval.compile.statements`).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.analysis import analyze_text, terms_column
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.compile.dialect import DialectProfile
from hotdata_retrieval.compile.statements import (
    CATALOG_TABLE,
    catalog_delete,
    catalog_insert,
    columns_query,
    readable_table,
    select_rows,
    table_node,
)
from hotdata_retrieval.engines._agent_sql import ClosedSession, ClosedSql, WorkerSql
from hotdata_retrieval.engines._vector_norms import (
    OutsideNorms,
    check_cosine_search,
    largest_norm,
    outside_keys,
    outside_norms,
    recorded_norms,
)
from hotdata_retrieval.engines.base import RoutesByIndexes
from hotdata_retrieval.engines.checks import (
    ColumnFacts,
    ValueKind,
    arrow_element_kinds,
    arrow_schema_of_text,
    check_column_kinds,
    check_columns,
    check_cosine_norms,
    check_filter_values,
    check_key_column,
    check_keys_kept,
    check_no_nan,
    check_no_nul,
    check_no_null_type,
    check_reserved_columns,
    check_temporal_values_kept,
    check_values_held,
    check_written_vectors,
    checked_keys,
    column_names,
    declared_value_kind,
    is_vector_type,
    loaded_vector_dimensions,
    merged_kinds,
    missing_table_error,
    null_vectors_as_lists,
    record_batches,
    rows_table,
    table_load,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hnsw import unbuilt_vector_index
from hotdata_retrieval.engines.limits import SqlLimits
from hotdata_retrieval.engines.results import (
    SearchResult,
    executed_plan,
    returned_vector,
    search_result,
)
from hotdata_retrieval.errors import OutdatedIndexError, PlanError, row_name
from hotdata_retrieval.indexes import TableIndexes, VectorIndex, reported_key
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    Bm25Search,
    DistanceMetric,
    NearestNeighborSearch,
    SearchPlan,
)
from hotdata_retrieval.plan.values import INT64_MAX
from hotdata_retrieval.routing import LOCAL_ROUTING, RoutingPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator

    import pyarrow as pa


def store_column_type(kind: pa.DataType, names: Mapping[str, str], engine: str, column: str) -> str:
    """The column type a SQL store declares for Arrow type ``kind``.

    Args:
        kind: the Arrow type of a loaded column.
        names: the store's type name per kind of Arrow type, keyed ``boolean``, ``integer``,
            ``float32``, ``floating`` (other floats), ``string``,
            ``binary``, ``timestamp`` and ``date``, and ``list`` (a format with ``{}`` for
            the element's type, ``"{}[]"``); a kind the store cannot hold is left out.
        engine: the engine's name, for the message (``"the SQLite engine"``).
        column: the column's name, for the message.

    Raises:
        EngineError: ``kind`` is of no kind the store holds (naming the column and the
            type).
    """
    import pyarrow as pa

    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and "list" in names:
        try:
            element = store_column_type(kind.value_type, names, engine, column)
        except EngineError:
            raise EngineError(
                f"column '{column}': {engine} cannot store a column of type {kind}"
            ) from None
        return names["list"].format(element)
    kinds = {
        "boolean": pa.types.is_boolean(kind),
        "integer": pa.types.is_integer(kind),
        "float32": pa.types.is_float32(kind),
        "floating": pa.types.is_floating(kind),
        "string": pa.types.is_string(kind) or pa.types.is_large_string(kind),
        "binary": pa.types.is_binary(kind) or pa.types.is_large_binary(kind),
        "timestamp": pa.types.is_timestamp(kind),
        "date": pa.types.is_date(kind),
    }
    for name, matches in kinds.items():
        if matches and name in names:
            return names[name]
    raise EngineError(f"column '{column}': {engine} cannot store a column of type {kind}")


@attrs.frozen(kw_only=True)
class StoreColumn:
    """A vector column as the catalog records it.

    Attributes:
        name: the column.
        dimensions: the vectors' length.
        metric: the metric searches of it use by default (and its index serves).
        storage: how the store holds the vectors (store-specific: ``blob``, ``json``, ...).
        model: the embedder that made the vectors (its ``name``), or empty.
        outside_norms: its rows a cosine search cannot rank, as the catalog records them
            (role :data:`NORMS_ROLE`); ``None`` for a table an earlier release loaded.
        largest_norm: at least the largest norm of its vectors (float64, of their Float32
            components: :func:`~hotdata_retrieval.engines._vector_norms.largest_norm`), as
            the catalog records it (role :data:`LARGEST_NORM_ROLE`): exact at load, raised
            by each upsert to the rows it writes, left by a delete; ``None`` for a table an
            earlier release loaded. A store summing dot products in Float32 (pgvector)
            refuses a query vector whose products with the column can overflow.
    """

    name: str
    dimensions: int
    metric: str = "cosine"
    storage: str = ""
    model: str = ""
    outside_norms: OutsideNorms | None = None
    largest_norm: float | None = None

    def norms_record(self) -> OutsideNorms | None:
        """The record a cosine search of the column reads and a change of its rows evolves:
        :attr:`outside_norms`; for a table an earlier release loaded, none when it was
        loaded for cosine (its rows were refused at load), else one that does not know."""
        if self.outside_norms is not None:
            return self.outside_norms
        return None if self.metric == DistanceMetric.COSINE.value else OutsideNorms(complete=False)


@attrs.frozen(kw_only=True)
class StoreTable:
    """What a store knows of one table.

    Attributes:
        name: the table, completed to ``catalog.schema.table``.
        columns: every column, lower-cased, in table order.
        key_column: the key the catalog records, or ``None``.
        text_indexes: columns with a full-text index.
        vectors: the catalog's vector columns.
        column_types: each column's declared type, as the store names it (parallel to
            ``columns``; empty when the store did not say).
        outdated_text_indexes: columns whose full-text index an earlier release wrote in a
            layout this one neither searches nor keeps (not in ``text_indexes``): their
            table's rows are not changed by key until it is loaded again
            (:class:`~hotdata_retrieval.errors.OutdatedIndexError`).
        loaded_types: ``(column, Arrow type)`` of each column as it was loaded, from the
            catalog (:func:`catalog_rows`); empty for a table loaded before the catalog kept
            them. :meth:`SqlStoreEngine.read_table` reads each column back as its type
            (:func:`as_loaded`).
    """

    name: TableName
    columns: tuple[str, ...]
    key_column: str | None
    text_indexes: tuple[str, ...]
    vectors: tuple[StoreColumn, ...]
    column_types: tuple[str, ...] = ()
    outdated_text_indexes: tuple[str, ...] = ()
    loaded_types: tuple[tuple[str, pa.DataType], ...] = ()


TYPE_ROLE = "arrow_type"
"""The catalog role of a row recording a column's Arrow type as loaded (its ``storage``
holds :func:`arrow_type_text`): what the store's own column type cannot say (an array of
empty lists' element type, a fixed-size vector, a 32-bit integer, a timestamp's zone)."""


NORMS_ROLE = "vector_norms"
"""The catalog role of a row recording a vector column's rows a cosine search cannot rank
(its ``storage`` holds :meth:`~hotdata_retrieval.engines._vector_norms.OutsideNorms.
to_text`), written with the table and changed with its rows in the same transaction."""


LARGEST_NORM_ROLE = "vector_largest_norm"
"""The catalog role of a row recording a vector column's largest norm
(:attr:`StoreColumn.largest_norm`, its ``storage`` the number's ``repr``), written with the
table and raised with its rows in the same transaction, as :data:`NORMS_ROLE`'s."""

NORMS_ROLES = (NORMS_ROLE, LARGEST_NORM_ROLE)
"""The roles of the catalog rows :func:`norms_rows` writes, changed with a table's rows."""


def norms_rows(table: str, vectors: Sequence[StoreColumn]) -> list[tuple[Any, ...]]:
    """The catalog rows (roles :data:`NORMS_ROLES`) of ``vectors``' records (a column without
    one has none)."""
    return [
        *(
            (table, v.name, NORMS_ROLE, None, None, v.outside_norms.to_text(), None)
            for v in vectors
            if v.outside_norms is not None
        ),
        *(
            (table, v.name, LARGEST_NORM_ROLE, None, None, repr(v.largest_norm), None)
            for v in vectors
            if v.largest_norm is not None
        ),
    ]


def arrow_type_text(kind: pa.DataType) -> str:
    """Arrow type ``kind`` as text the catalog keeps: the base64 of the Arrow IPC
    serialisation of a one-field schema of it (exact, whatever the type).

    >>> import pyarrow as pa
    >>> arrow_type_of_text(arrow_type_text(pa.list_(pa.float32(), 3)))
    FixedSizeListType(fixed_size_list<item: float>[3])
    """
    import base64

    import pyarrow as pa

    return base64.b64encode(pa.schema([pa.field("c", kind)]).serialize().to_pybytes()).decode()


def arrow_type_of_text(text: str) -> pa.DataType | None:
    """The Arrow type :func:`arrow_type_text` wrote as ``text``; ``None`` for text it did
    not write."""
    schema = arrow_schema_of_text(text)
    return schema.field(0).type if schema is not None and len(schema) == 1 else None


def catalog_rows(
    table: str,
    key_column: str | None,
    vectors: Sequence[StoreColumn],
    storage: str,
    loaded: pa.Schema | None = None,
) -> list[tuple[Any, ...]]:
    """The catalog rows of a table (:data:`~hotdata_retrieval.compile.statements.
    CATALOG_COLUMNS` order): its key, then each vector column (``storage`` where the
    column's own is empty), then each column of schema ``loaded`` with its Arrow type
    (role :data:`TYPE_ROLE`)."""
    rows: list[tuple[Any, ...]] = []
    if key_column is not None:
        rows.append((table, key_column, "key", None, None, None, None))
    rows.extend(
        (table, v.name, "vector", v.dimensions, v.metric, v.storage or storage, v.model or None)
        for v in vectors
    )
    rows.extend(
        (table, field.name, TYPE_ROLE, None, None, arrow_type_text(field.type), None)
        for field in loaded or ()
    )
    rows.extend(norms_rows(table, vectors))
    return rows


def read_catalog(
    rows: Iterable[Sequence[Any]],
) -> tuple[str | None, tuple[StoreColumn, ...], tuple[tuple[str, pa.DataType], ...]]:
    """The key column, the vector columns (with their records of roles :data:`NORMS_ROLES`)
    and the columns' loaded Arrow types recorded in catalog ``rows`` (a type or a norm the
    text of which is unreadable is left out)."""
    key: str | None = None
    vectors: list[StoreColumn] = []
    types: list[tuple[str, pa.DataType]] = []
    norms: dict[str, OutsideNorms] = {}
    largest: dict[str, float] = {}
    for _, column, role, dimensions, metric, storage, model in rows:
        if role == NORMS_ROLE:
            norms[column] = OutsideNorms.from_text(storage)
        elif role == LARGEST_NORM_ROLE:
            with contextlib.suppress(TypeError, ValueError):
                largest[column] = float(storage)
        elif role == TYPE_ROLE:
            kind = arrow_type_of_text(storage or "")
            if kind is not None:
                types.append((column, kind))
        elif role == "key":
            key = column
        elif role == "vector":
            vectors.append(
                StoreColumn(
                    name=column,
                    dimensions=int(dimensions or 0),
                    metric=metric or "cosine",
                    storage=storage or "",
                    model=model or "",
                )
            )
    vectors = [
        attrs.evolve(v, outside_norms=norms.get(v.name), largest_norm=largest.get(v.name))
        for v in vectors
    ]
    return key, tuple(vectors), tuple(types)


def check_rowid_column(columns: Sequence[str], text_columns: Sequence[str], engine: str) -> None:
    """Refuse a column named ``rowid`` beside a text column on a store whose full-text index
    is keyed by the row's ``rowid`` (SQLite, DuckDB): the column would shadow it, and text
    search would join the wrong rows.

    Raises:
        EngineError: naming the column and the rule.
    """
    if text_columns and any(column.lower() == "rowid" for column in columns):
        raise EngineError(
            f"column 'rowid': {engine} keys its full-text index by the row's rowid, which a "
            "column of that name would hide; rename the column"
        )


def check_terms_column(columns: Sequence[str], column: str, engine: str) -> str:
    """The name of text column ``column``'s terms column
    (:func:`~hotdata_retrieval.analysis.terms_column`), refused when ``columns`` (a table's
    column names) already hold it.

    Raises:
        EngineError: ``columns`` already has a column of that name.
    """
    terms = terms_column(column)
    if terms in columns:
        raise EngineError(
            f"column '{terms}' holds the analysed terms of text column '{column}' on "
            f"{engine}; rename it"
        )
    return terms


def analysed_terms(texts: pa.Array | pa.ChunkedArray) -> list[tuple[str, ...] | None]:
    """Each text's analysed terms (:func:`~hotdata_retrieval.analysis.analyze_text`; ``None``
    for a NULL text), read :data:`LOAD_BATCH_ROWS` texts at a time."""
    import pyarrow as pa

    table = pa.table({"text": texts})
    return [
        None if text is None else analyze_text(text)
        for batch in record_batches(table)
        for text in batch.column(0).to_pylist()
    ]


def joined_terms(analysed: Sequence[tuple[str, ...] | None]) -> pa.Array:
    """A terms column's values: each row's terms joined by spaces, NULL for a NULL text."""
    import pyarrow as pa

    return pa.array([None if row is None else " ".join(row) for row in analysed], pa.string())


def with_terms_column(
    data: pa.Table, column: str, engine: str
) -> tuple[pa.Table, list[tuple[str, ...] | None]]:
    """``data`` with text column ``column``'s terms column appended
    (:func:`~hotdata_retrieval.analysis.terms_column`: each row's terms joined by spaces,
    NULL for a NULL text), and each row's terms.

    Raises:
        EngineError: ``data`` already has a column of that name.
    """
    terms = check_terms_column(data.column_names, column, engine)
    analysed = analysed_terms(data.column(column))
    return data.append_column(terms, joined_terms(analysed)), analysed


def vector_columns_of(data: pa.Table) -> tuple[str, ...]:
    """The columns of ``data`` that hold vectors
    (:func:`~hotdata_retrieval.engines.checks.is_vector_type`: lists of floating-point
    numbers)."""
    return tuple(field.name for field in data.schema if is_vector_type(field.type))


def typed_nulls(array: pa.Array, alias: str | None) -> pa.Array:
    """``array`` (a column a store's driver read, typed by Arrow from its values), or, when
    no value typed it (no rows, or only NULLs: Arrow's ``null`` type), as many NULLs of type
    ``alias`` (a :func:`pyarrow.type_for_alias` name: the type a value of the column reads
    as); ``array`` itself when ``alias`` is ``None``."""
    import pyarrow as pa

    if alias is None or not pa.types.is_null(array.type):
        return array
    return pa.nulls(len(array), pa.type_for_alias(alias))


def as_loaded(array: pa.Array, loaded: pa.DataType | None, column: str) -> pa.Array:
    """``array`` (a column a store read, typed by its driver) as type ``loaded``, the type
    the column was loaded with (``None``: ``array`` as it is). A vector column reads as its
    loaded list type (fixed-size or not) of float32, the floats every store holds vectors as;
    a timestamp a store holds as UTC text (SQLite) is parsed as UTC first.

    Raises:
        EngineError: the values cannot be that type (naming the column and both types).
    """
    import pyarrow as pa

    if loaded is None:
        return array
    if is_vector_type(loaded):
        loaded = (
            pa.list_(pa.float32(), loaded.list_size)
            if pa.types.is_fixed_size_list(loaded)
            else pa.large_list(pa.float32())
            if pa.types.is_large_list(loaded)
            else pa.list_(pa.float32())
        )
    if array.type == loaded:
        return array
    try:
        if pa.types.is_timestamp(loaded) and pa.types.is_string(array.type):
            array = array.cast(pa.timestamp("us"))
        return array.cast(loaded)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
        raise EngineError(
            f"column '{column}' holds values of type {array.type}, which do not read as "
            f"{loaded}, the type it was loaded with: {error}"
        ) from None


def value_kinds(described: StoreTable) -> dict[str, ValueKind]:
    """Each column's kind of value, from its declared type (vector columns: vectors)."""
    kinds = {
        column: declared_value_kind(declared)
        for column, declared in zip(described.columns, described.column_types)
    }
    kinds.update((vector.name, ValueKind.VECTOR) for vector in described.vectors)
    return kinds


def element_kinds(described: StoreTable) -> dict[str, ValueKind]:
    """Each list column's elements' kind: from the Arrow type the catalog recorded at load
    (:func:`~hotdata_retrieval.engines.checks.arrow_element_kinds`), else from a declared
    array type (DuckDB's ``BIGINT[]``); a column of neither is left out (not checked)."""
    import pyarrow as pa

    loaded = dict(described.loaded_types)
    kinds: dict[str, ValueKind] = {}
    for column, declared in zip(described.columns, described.column_types):
        kind = loaded.get(column)
        if kind is not None:
            kinds.update(arrow_element_kinds(pa.schema([(column, kind)])))
        elif declared.endswith("[]"):
            kinds[column] = declared_value_kind(declared[:-2])
    return kinds


def float32_columns(described: StoreTable, float32_type: str | None) -> frozenset[str]:
    """The columns of ``described`` declared with the store's 32-bit float type
    ``float32_type`` (compared without regard to case: PostgreSQL reports ``real``); none
    when the store has no such type (``None``)."""
    if float32_type is None:
        return frozenset()
    return frozenset(
        column
        for column, declared in zip(described.columns, described.column_types)
        if declared.upper() == float32_type.upper()
    )


def float64_columns(described: StoreTable, float32_type: str | None) -> frozenset[str]:
    """The columns of ``described`` declared with a 64-bit floating-point type: a float type
    (``DOUBLE``, ``DOUBLE PRECISION``, SQLite's ``REAL``, which holds every float in 64 bits)
    other than the store's 32-bit one ``float32_type``; never a decimal (``NUMERIC``,
    ``DECIMAL``), which the stores compare with an integer exactly."""
    return frozenset(
        column
        for column, declared in zip(described.columns, described.column_types)
        if declared_value_kind(declared) is ValueKind.NUMBER
        and any(name in declared.upper() for name in ("DOUB", "FLOA", "REAL"))
        and (float32_type is None or declared.upper() != float32_type.upper())
    )


def _dates_as_loaded(rows: Any, kinds: Mapping[str, Any]) -> Any:
    """``rows`` (checked: :func:`~hotdata_retrieval.engines.checks.check_values_held`) with
    each column of dates written into a timestamp column, or of timestamps into a date
    column, cast to its column's loaded type, as the local engine and LanceDB cast them:
    SQLite wrote a midnight timestamp into a date column as timestamp text (each read then
    failed) and kept a date key beside its midnight's, and PostgreSQL's writer failed on
    the other kind."""
    import pyarrow as pa

    for position, name in enumerate(rows.column_names):
        kind = kinds.get(name)
        given = rows.schema.field(position).type
        if kind is None or not (pa.types.is_temporal(kind) and pa.types.is_temporal(given)):
            continue
        if pa.types.is_time(kind) or pa.types.is_time(given):
            continue
        if pa.types.is_date(kind) != pa.types.is_date(given):
            rows = rows.set_column(position, name, rows.column(position).cast(kind))
    return rows


class SqlStoreEngine(RoutesByIndexes, abc.ABC):
    """The engine contract over a SQL store (module docstring). Subclasses implement the
    driver calls (:meth:`_query`, :meth:`_execute`, :meth:`_insert`) and the store's facts."""

    routing_policy: ClassVar[RoutingPolicy] = LOCAL_ROUTING
    """Vector columns are plain (the caller embeds queries) and share the table with the
    full-text index, so hybrid fuses BM25 with a caller-embedded search of them."""

    engine_name: ClassVar[str] = "store"
    """The engine's name in messages (``sqlite``, ``postgres``, ``duckdb``)."""

    column_types: ClassVar[Mapping[str, str]] = {}
    """The store's column type per kind of Arrow type (:func:`store_column_type`'s
    ``names``)."""

    store_label: ClassVar[str] = "the store"
    """The engine as messages name it (``"the SQLite engine"``)."""

    float32_type: ClassVar[str | None] = None
    """The type the store declares a float32 column with (``None``: it has none): a number
    compared with a column of this type is rounded to float32 first
    (:func:`~hotdata_retrieval.engines.checks.float32_value`)."""

    read_types: ClassVar[Mapping[str, str]] = {}
    """The Arrow type (a :func:`pyarrow.type_for_alias` name) the store's driver reads each
    declared column type as (keyed by the type :meth:`describe` reports, in upper case), for
    a column no value types: every column of a table without rows, a column of NULLs. A
    declared type left out (an array) reads as its values make it."""

    default_catalog: ClassVar[str] = "default"
    default_schema: ClassVar[str] = "public"
    store_schema: ClassVar[str] = "main"
    """The store's own name for the plan's ``public`` schema."""

    def __init__(self, profile: DialectProfile, *, embedder: Any = None) -> None:
        self.profile = profile
        self.embedder = embedder
        self.generation = 0
        """How many times a table was (re)loaded through this engine: what an agent SQL
        snapshot was made at (:meth:`_agent_sql_runner`)."""
        self._agent_sql = self._agent_sql_runner()

    def store_column_type(self, field: pa.Field) -> str:
        """The column type the store declares for ``field`` (:func:`store_column_type` with
        :attr:`column_types`).

        Raises:
            EngineError: a type the store cannot hold, naming the column and the type.
        """
        return store_column_type(field.type, self.column_types, self.store_label, field.name)

    def check_column_types(self, schema: pa.Schema) -> None:
        """Refuse a column of ``schema`` the store cannot hold, as its load would
        (:meth:`~hotdata_retrieval.engines.base.RoutesByIndexes.check_column_types`)."""
        for field in schema:
            self.store_column_type(field)

    # -- the driver ------------------------------------------------------------------------

    @abc.abstractmethod
    def _query(
        self, statement: str, parameters: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run a statement that returns rows, with its placeholders' ``parameters``:
        ``(column names, rows)``.

        Raises:
            EngineError: the store's own message.
        """

    @abc.abstractmethod
    def _execute(self, statement: str) -> None:
        """Run a statement that returns no rows, in the current transaction.

        Raises:
            EngineError: the store's own message.
        """

    @abc.abstractmethod
    def _read_only_query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run a caller's statement with writes refused: ``(column names, rows)``.

        Raises:
            EngineError: the store's own message, or a write refused.
        """

    @abc.abstractmethod
    def _describe(self, table: TableName) -> StoreTable | None:
        """What the store knows of ``table``, or ``None`` when it has no such table."""

    @abc.abstractmethod
    def _table_names(self) -> list[str]:
        """The names of the tables in the engine's default schema."""

    def _agent_sql_runner(self) -> ClosedSql | WorkerSql:
        """How this store runs agent SQL (:mod:`~hotdata_retrieval.engines._agent_sql`):
        by default in a closed session of this process, :meth:`_open_closed_session` (a store
        that computes in a server of its own: PostgreSQL); a store that computes in this
        process runs it in a worker process instead (:class:`~hotdata_retrieval.engines.
        _agent_sql.WorkerSql`)."""
        return ClosedSql(self.engine_name, self._open_closed_session)

    def _open_closed_session(self, limits: SqlLimits) -> ClosedSession:
        """A new session for agent SQL in this process, closed off by the store's own
        mechanism (:class:`~hotdata_retrieval.engines._agent_sql.ClosedSql`)."""
        raise NotImplementedError(f"{type(self).__name__} runs agent SQL in a worker process")

    @abc.abstractmethod
    def _write_table(
        self,
        table: TableName,
        data: pa.Table,
        *,
        key_column: str | None,
        text_columns: Sequence[str],
        vectors: Sequence[StoreColumn],
    ) -> None:
        """Replace ``table`` with ``data`` in one transaction: its rows, its full-text
        indexes on ``text_columns``, its vector indexes, its catalog rows."""

    @abc.abstractmethod
    def _replace_rows(
        self, described: StoreTable, rows: pa.Table, norms: Sequence[Sequence[Any]] | None
    ) -> None:
        """Replace, in one transaction, the rows of ``described`` whose key ``rows`` holds
        with ``rows`` and add the others (checked: the table's columns, unique keys),
        keeping the full-text indexes in step and writing ``norms``
        (:meth:`_norms_statements`)."""

    @abc.abstractmethod
    def _remove_rows(
        self, described: StoreTable, keys: Sequence[Any], norms: Sequence[Sequence[Any]] | None
    ) -> int:
        """Remove, in one transaction, the rows of ``described`` keyed by ``keys`` (distinct),
        keeping the full-text indexes in step and writing ``norms``
        (:meth:`_norms_statements`); how many there were."""

    def close(self) -> None:
        """Release the connections (the agent SQL session's or worker's too)."""
        self._agent_sql.close()

    def __enter__(self) -> SqlStoreEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the contract ----------------------------------------------------------------------

    def table_name(self, name: str | TableName) -> TableName:
        """``name`` completed with this engine's catalog and schema."""
        if isinstance(name, TableName):
            return name
        return TableName.parse(
            name, default_catalog=self.default_catalog, default_schema=self.default_schema
        )

    def describe(self, table: str | TableName) -> StoreTable:
        """What the store knows of ``table``.

        Raises:
            EngineError: no such table.
        """
        name = self.table_name(table)
        described = self._describe(name)
        if described is None:
            raise missing_table_error(
                name, self.tables, where=f" in the {self.engine_name} database"
            )
        return described

    def indexes(self, table: str | TableName) -> TableIndexes:
        """What ``table`` can be searched by: its full-text indexed columns and the catalog's
        vector columns (plain: the caller embeds queries).

        Raises:
            EngineError: no such table.
        """
        described = self.describe(table)
        return TableIndexes(
            table=described.name,
            bm25_columns=described.text_indexes,
            vectors=tuple(
                VectorIndex(column=vector.name, metric=vector.metric)
                for vector in described.vectors
            ),
            key_column=reported_key(described.key_column, described.columns),
        )

    def embedder_for(self, table: str | TableName) -> Any:
        """The engine's embedder (given at construction), else the installed embedder of the
        model the load recorded for ``table``'s vectors (as ``hdq search`` reads it), else
        ``None``.

        Raises:
            EngineError: no such table (when no embedder was given).
        """
        if self.embedder is not None:
            return self.embedder
        return self._recorded_embedder(self.vector_model(table))

    def vector_model(self, table: str | TableName) -> str | None:
        """The name of the embedder that made ``table``'s vectors, if the library did.

        Raises:
            EngineError: no such table.
        """
        models = sorted({vector.model for vector in self.describe(table).vectors if vector.model})
        return models[0] if models else None

    def check_plan(self, plan: SearchPlan) -> dict[TableName, StoreTable]:
        """Check ``plan`` against each of its tables before it runs, and return their
        descriptions (in :attr:`SearchPlan.tables` order).

        Raises:
            EngineError: no such table, a column the plan names that the table lacks, a text
                branch over a column with no full-text index.
            PlanError: a query vector whose length differs from the column's vectors, a filter
                value its column's declared type cannot be compared with
                (:func:`~hotdata_retrieval.engines.checks.check_filter_values`), a key column
                of different kinds in two tables.
        """
        described = {table: self.describe(table) for table in plan.tables}
        check_column_kinds(plan, {table: value_kinds(one) for table, one in described.items()})
        filtered = set(plan.filtered_tables())
        for table, one in described.items():
            check_columns(plan, table, one.columns, value_kinds(one))
            self._check_cosine_search(plan, one)
            if table in filtered:
                check_filter_values(plan.filter, value_kinds(one), element_kinds(one))
            for branch in plan.branches:
                if table not in branch.table.members:
                    continue
                if isinstance(branch, Bm25Search) and branch.column not in one.text_indexes:
                    raise EngineError(
                        f"column '{branch.column}' of table '{table}' has no full-text index "
                        f"on {self.engine_name}; load the table with text_columns="
                        f"['{branch.column}']"
                    )
                if isinstance(branch, NearestNeighborSearch):
                    vector = next((v for v in one.vectors if v.name == branch.column), None)
                    if (
                        vector is not None
                        and vector.dimensions
                        and vector.dimensions != len(branch.query_vector)
                    ):
                        raise PlanError(
                            f"query vector has "
                            f"{counted(len(branch.query_vector), 'dimension')}; column "
                            f"'{branch.column}' holds {vector.dimensions}",
                            field="query_vector",
                            value=len(branch.query_vector),
                        )
        return described

    def _check_cosine_search(self, plan: SearchPlan, described: StoreTable) -> None:
        """Refuse a cosine search of a vector column of ``described`` that holds a row a
        cosine search cannot rank (:func:`~hotdata_retrieval.engines._vector_norms.
        check_cosine_search`): as the catalog records it, or, where the record does not
        know, as the column's rows read now say.

        Raises:
            EngineError: naming the table, the column and the row's key.
        """
        vectors = {vector.name: vector for vector in described.vectors}

        def record(column: str) -> OutsideNorms | None:
            vector = vectors.get(column)
            found = None if vector is None else vector.norms_record()
            if found is None or found.known:
                return found
            key = described.key_column
            read = self.read_table(described.name, [column] if key is None else [key, column])
            return outside_norms(read, column, key)

        metrics = sorted({vector.metric for vector in described.vectors})
        check_cosine_search(plan, described.name, record, " or ".join(metrics))

    def _largest_norm(self, described: StoreTable, column: str) -> float | None:
        """The largest norm of vector column ``column`` of ``described``
        (:attr:`StoreColumn.largest_norm`): as the catalog records it, or, for a table an
        earlier release loaded, as the column's rows read now give it; ``None`` for no
        vector column of that name."""
        vector = next((v for v in described.vectors if v.name == column), None)
        if vector is None:
            return None
        if vector.largest_norm is not None:
            return vector.largest_norm
        return largest_norm(self.read_table(described.name, [column]).column(column))

    def search(self, plan: SearchPlan) -> SearchResult:
        """Check ``plan`` against its table, compile it for the store's dialect, run it, and
        return typed hits, best first (:func:`~hotdata_retrieval.engines.results.
        search_result`).

        Raises:
            EngineError: a missing table, column or full-text index, or a store failure.
            UnsupportedOnDialectError: the plan needs what the dialect cannot express.
        """
        described = self.check_plan(plan)
        dates: set[str] = set()
        timestamps: set[str] = set()
        floats: set[str] = set()
        doubles: set[str] = set()
        for one in described.values():
            one_dates, one_timestamps = self.text_temporal_columns(one)
            dates |= one_dates
            timestamps |= one_timestamps
            floats |= float32_columns(one, self.float32_type)
            doubles |= float64_columns(one, self.float32_type)
        executed = executed_plan(
            plan,
            merged_kinds(value_kinds(one) for one in described.values()),
            ColumnFacts(
                float32=frozenset(floats),
                float64=frozenset(doubles),
                timestamps=frozenset(timestamps),
                text_dates=frozenset(dates),
                element_kinds=merged_kinds(element_kinds(one) for one in described.values()),
            ),
        )
        statement = to_sql(executed, self.profile)
        names, rows = self._query(statement)
        vectors = {vector.name for one in described.values() for vector in one.vectors}
        # each vector as a list of floats, as every engine's, converted once: the hits
        # convert the searched ones include_vectors returns (hits_from_rows), this the others
        converted = executed.vector_columns if executed.include_vectors else frozenset()
        returned = [dict(zip(names, row)) for row in rows]
        for name in vectors.intersection(names) - converted:
            for row in returned:
                row[name] = returned_vector(row[name])
        result = search_result(plan, executed, returned, statement)
        return self._finish(plan, result)

    def text_temporal_columns(self, described: StoreTable) -> tuple[frozenset[str], frozenset[str]]:
        """The date and the timestamp columns the store holds as ISO text and compares as
        text (default: none; SQLite's)."""
        return frozenset(), frozenset()

    def _finish(self, plan: SearchPlan, result: SearchResult) -> SearchResult:
        """Add what the store reports beside the hits (default: nothing)."""
        return result

    def sql_name(self, table: str | TableName) -> str:
        """``table`` as SQL run on this store (:meth:`stream_sql`) writes it:
        ``<schema>.<table>``, with the store's schema for the plan's ``public``."""
        name = self.table_name(table)
        schema = self.store_schema if name.schema == self.default_schema else name.schema
        return readable_table(self.profile, name, schema)

    def columns_sql(self, table: str | TableName) -> str:
        """A query that lists ``table``'s columns and types on this store."""
        name = self.table_name(table)
        schema = self.store_schema if name.schema == self.default_schema else name.schema
        return columns_query(self.profile, name, schema)

    def searchable_tables(self) -> tuple[TableName, ...]:
        """The tables of the engine's default schema a search can read: those with a
        full-text index, a vector column or a key the catalog records. The library's own
        tables (its catalog, full-text index tables) are none of them. Agent SQL
        (:meth:`stream_sql`) reads these tables and no others."""
        found = []
        for name in self._table_names():
            described = self._describe(self.table_name(name))
            if described is not None and (
                described.text_indexes or described.vectors or described.key_column
            ):
                found.append(described.name)
        return tuple(found)

    def stream_sql(self, text: str, *, limits: SqlLimits | None = None) -> Iterator[pa.RecordBatch]:
        """Run one read-only query from an untrusted author (an agent) under ``limits`` and
        yield its rows batch by batch.

        The query runs in a session of its own that the store closes off from the machine:
        no file, setting, extension, write or table beyond :meth:`searchable_tables` is
        reachable, whatever the text says (each store's mechanism and its source are in
        ``docs/adapters.md``, "Security model"). On a store that computes in this process
        (SQLite, DuckDB) the session runs in a worker process
        (:mod:`~hotdata_retrieval.engines._worker`): killed when the time limit passes or its
        resident set grows past the memory limit, a crash ending only the worker, the next
        call starting a fresh one on its own clock. On PostgreSQL the server stops the
        statement at its time limit. A session the statement breaks (a connection it kills)
        is opened again for the next call.

        Args:
            text: one query.
            limits: the bounds (default :class:`~hotdata_retrieval.engines.limits.SqlLimits`).

        Yields:
            ``pyarrow.RecordBatch`` objects, in result order.

        Raises:
            SqlLimitError: the time or memory limit was passed; ``limit`` names which.
            EngineError: the store refused the statement or failed, or the statement stopped
                the worker process (a crash); one line.
        """
        limits = SqlLimits() if limits is None else limits
        yield from self._agent_sql.stream(text, limits)

    def sql(self, text: str) -> pa.Table:
        """Run one statement, writes refused, and return its rows as an Arrow table.

        For SQL from an untrusted author use :meth:`stream_sql`, which also keeps the
        statement from the machine's files and settings and bounds its time and memory.

        Raises:
            EngineError: the store's own message.
        """
        import pyarrow as pa

        names, rows = self._read_only_query(text)
        columns = list(zip(*rows)) if rows else [()] * len(names)
        try:
            return pa.table({name: list(values) for name, values in zip(names, columns)})
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            raise EngineError(f"the result cannot be read as a table: {error}", sql=text) from None

    def load_table(
        self,
        name: str,
        data: pa.Table,
        *,
        key_column: str | None = "id",
        text_columns: Sequence[str] = (),
        vector_metric: str = "cosine",
        vector_storage: str | None = None,
        vector_model: str | None = None,
    ) -> StoreTable:
        """Store ``data`` as table ``name`` (replacing any previous table of that name), with a
        full-text index on each of ``text_columns`` and every column of lists of floats as a
        vector column.

        Args:
            name: the table (1-3 part name).
            data: the rows, as an Arrow table.
            key_column: the unique key column (checked), or ``None``.
            text_columns: string columns to index for full-text search.
            vector_metric: the metric the vector columns are searched (and indexed) by.
            vector_storage: how vectors are held, where the store offers a choice (SQLite:
                ``blob``, the default, or ``json``); ``None`` for the store's default.
            vector_model: the name of the embedder that made the vectors, recorded so that
                searches embed queries with the same model (``None``: the caller's vectors).

        Raises:
            EngineError: a missing or non-text column, a duplicated or NULL key, vectors of
                different lengths; the store's own message if it refuses the data.
        """
        import pyarrow as pa

        data = rows_table(data)
        table = self.table_name(name)
        self.check_own_name(table)
        columns = column_names(data.schema)
        if columns != list(data.column_names):
            data = data.rename_columns(columns)
        key = None if key_column is None else normalize_identifier(key_column, label="key column")
        if key is not None:
            if key not in columns:
                raise EngineError(f"key column '{key}' not found; columns: {', '.join(columns)}")
            keys = data.column(key)
            check_key_column(
                keys,
                key,
                loading=True,
                timestamp_unit=self.timestamp_unit,
                store=self.store_label,
            )
        texts = [normalize_identifier(column, label="text column") for column in text_columns]
        for column in texts:
            if column not in columns:
                raise EngineError(
                    f"text column '{column}' not found; columns: {', '.join(columns)}"
                )
            if not (
                pa.types.is_string(data.schema.field(column).type)
                or pa.types.is_large_string(data.schema.field(column).type)
            ):
                raise EngineError(
                    f"text column '{column}' holds {data.schema.field(column).type}, not text"
                )
        if texts or vector_columns_of(data):
            check_reserved_columns(columns)
        check_no_null_type(data)
        check_no_nul(data)
        self.check_integer_range(data)
        if not self.holds_nan:
            check_no_nan(data, self.engine_name)
        check_temporal_values_kept(data, timestamp_unit=self.timestamp_unit, store=self.store_label)
        metric = DistanceMetric.parse(vector_metric).value
        vectors = [
            StoreColumn(
                name=column,
                dimensions=loaded_vector_dimensions(data, column),
                metric=metric,
                storage=vector_storage or "",
                model=vector_model or "",
            )
            for column in vector_columns_of(data)
        ]
        for vector in vectors:
            check_cosine_norms(data, vector.name, metric)
        vectors = [
            attrs.evolve(
                vector,
                outside_norms=recorded_norms(data, vector.name, key, metric),
                largest_norm=largest_norm(data.column(vector.name)),
            )
            for vector in vectors
        ]
        try:
            self._write_table(table, data, key_column=key, text_columns=texts, vectors=vectors)
        finally:
            self.generation += 1
        return self.describe(table)

    # -- document tables: rows read and changed by key ------------------------------------

    KEYS_PER_STATEMENT: ClassVar[int] = 500
    """The most keys one statement names (one placeholder each): SQLite takes 32,766
    parameters and PostgreSQL 65,535 per statement, so a long list is sent in parts."""

    def store_table(self, table: TableName) -> Any:
        """``table`` as the store names it (a sqlglot table: ``"<schema>"."<table>"``, the
        store's schema for the plan's ``public``)."""
        schema = self.store_schema if table.schema == self.default_schema else table.schema
        return table_node(table, schema)

    @property
    def tables(self) -> dict[str, StoreTable]:
        """The searchable tables of the engine's default schema (:meth:`searchable_tables`),
        by bare name: the library's own tables are none of them."""
        found = {}
        for name in self._table_names():
            described = self._describe(self.table_name(name))
            if described is not None and (
                described.text_indexes or described.vectors or described.key_column
            ):
                found[described.name.name] = described
        return found

    def _rows_table(
        self, described: StoreTable, names: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> pa.Table:
        """Rows read from ``described`` as an Arrow table: each vector as a list of float32
        (:func:`~hotdata_retrieval.engines.results.returned_vector`, whatever the store
        returns), the other values as the driver gives them; then each column as the type it
        was loaded with (:func:`as_loaded`; a table without recorded types: a column no
        value types as :attr:`read_types` says)."""
        import pyarrow as pa

        vectors = {vector.name for vector in described.vectors}
        declared = dict(zip(described.columns, described.column_types, strict=True))
        loaded = dict(described.loaded_types)
        columns = list(zip(*rows)) if rows else [()] * len(names)
        arrays = {}
        for name, values in zip(names, columns):
            if name in vectors:
                array = pa.array(
                    [returned_vector(value) for value in values], pa.list_(pa.float32())
                )
            else:
                try:
                    array = pa.array(list(values))
                except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                    raise EngineError(
                        f"column '{name}' of table '{described.name}' cannot be read: {error}"
                    ) from None
                if name not in loaded:  # a table loaded before the catalog kept types
                    array = typed_nulls(array, self.read_types.get(declared[name].upper()))
            arrays[name] = as_loaded(array, loaded.get(name), name)
        return pa.table(arrays)

    def _read_columns(self, described: StoreTable, columns: Sequence[str] | None) -> list[str]:
        wanted = list(described.columns if columns is None else columns)
        unknown = [column for column in wanted if column not in described.columns]
        if unknown:
            raise EngineError(
                f"column '{unknown[0]}' not found in table '{described.name}'; columns: "
                f"{', '.join(described.columns)}"
            )
        return wanted

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of ``table`` as an Arrow table (``columns`` of them, in that order;
        default every column), in the store's order.

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        described = self.describe(table)
        wanted = self._read_columns(described, columns)
        statement = select_rows(self.profile, self.store_table(described.name), wanted)
        names, rows = self._query(statement)
        return self._rows_table(described, names, rows)

    def read_rows(
        self, table: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows of ``table`` keyed by ``keys`` (``columns`` of them, as
        :meth:`read_table`), in no set order; an unknown key is left out. One statement per
        :data:`KEYS_PER_STATEMENT` keys.

        Raises:
            EngineError: no such table, no key column recorded, a column it does not have, a
                key of another kind than the key column's
                (:func:`~hotdata_retrieval.engines.checks.checked_keys`).
        """
        described = self.describe(table)
        key = self._key_of(described)
        keys = self._stored_keys(described, self._checked_keys(described, keys))
        wanted = self._read_columns(described, columns)
        parts = []
        names: list[str] = wanted
        for start in range(0, len(keys), self.KEYS_PER_STATEMENT):
            chunk = keys[start : start + self.KEYS_PER_STATEMENT]
            statement = select_rows(
                self.profile,
                self.store_table(described.name),
                wanted,
                key_column=key,
                key_count=len(chunk),
                placeholder=self.placeholder,
            )
            names, rows = self._query(statement, chunk)
            parts.extend(rows)
        return self._rows_table(described, names, parts)

    placeholder: ClassVar[str | None] = None
    """The driver's placeholder text (``%s`` for psycopg), ``None`` for the dialect's own
    ``?``."""

    def _checked_keys(self, described: StoreTable, keys: Any) -> list[Any]:
        """The distinct ``keys`` as values of the table's key column, by its declared type
        (:func:`~hotdata_retrieval.engines.checks.checked_keys`; a store that declared no
        type takes them as given).

        Raises:
            EngineError: a key of another kind than the column's, NULL or NaN.
        """
        key = self._key_of(described)
        declared = dict(zip(described.columns, described.column_types)).get(key, "")
        held = self._held_key_type(described, key)
        return checked_keys(keys, declared_value_kind(declared), key, declared, held)

    def _held_key_type(self, described: StoreTable, key: str) -> Any:
        """The Arrow type whose values ``described``'s key column ``key`` holds exactly: the
        type it was loaded with (the catalog's), a timestamp no finer than
        :attr:`timestamp_unit`; ``None`` for a table loaded without one."""
        import pyarrow as pa

        loaded = dict(described.loaded_types).get(key)
        if loaded is None or not pa.types.is_timestamp(loaded):
            return loaded
        units = ["s", "ms", "us", "ns"]
        if units.index(loaded.unit) > units.index(self.timestamp_unit):
            return pa.timestamp(self.timestamp_unit, loaded.tz)
        return loaded

    def _stored_keys(self, described: StoreTable, keys: list[Any]) -> list[Any]:
        """``keys`` (checked: :meth:`_checked_keys`, or an upsert's rows' keys) as the
        statements that find their rows bind them: as the store holds the key column's
        values (default: as they are; SQLite's dates and timestamps as their ISO text)."""
        return keys

    def _key_of(self, described: StoreTable) -> str:
        if described.key_column is None:
            raise EngineError(
                f"table '{described.name}' has no key column recorded: load it with "
                "key_column= to change or read its rows by key"
            )
        return described.key_column

    def upsert_rows(self, name: str, rows: pa.Table, *, create: Any = None) -> StoreTable:
        """Write ``rows`` (Arrow: the key and any of the table's columns, a missing one NULL)
        into table ``name`` by key in one transaction, replacing the rows whose key it holds;
        the full-text indexes follow. A missing table is loaded from ``create``
        (a :class:`~hotdata_retrieval.engines.local.TableLoad`: its rows, key, text columns,
        metric and vector index). Returns the table's description.

        Raises:
            EngineError: no such table (and no ``create``) or no key column recorded; a
                column the table lacks, a NULL or repeated key, vectors of another length
                than the table's; the store's own refusal (a value its column cannot hold:
                nothing was written); a ``create`` this store cannot make (an embedded
                column, a vector index it has not).
            OutdatedIndexError: the table's full-text index is in an earlier release's
                layout: load it again first.
        """
        rows = rows_table(rows)
        create = table_load(create)
        check_no_nul(rows)
        self.check_integer_range(rows)
        if not self.holds_nan:
            check_no_nan(rows, self.engine_name)
        table = self.table_name(name)
        if self._describe(table) is None:
            if create is None:
                raise EngineError(
                    f"table '{table}' not found in the {self.engine_name} database; load it "
                    "first (load_table) or pass create="
                )
            self._create(create)
            return self.describe(table)
        described = self._changeable(table)
        key = self._key_of(described)
        rows = self._checked_rows(described, rows, key)
        if rows.num_rows:
            written = rows.column(key).to_pylist()
            norms = self._changed_norms(
                described,
                lambda record, column: record.after_change(
                    written, outside_keys(rows, column, key)
                ),
                rows,
            )
            try:
                self._replace_rows(described, rows, norms)
            finally:
                self.generation += 1  # what agent SQL reads is made again
        return described

    def _changeable(self, table: str | TableName) -> StoreTable:
        """The description of ``table``, whose rows a change by key may write.

        Raises:
            EngineError: no such table.
            OutdatedIndexError: a full-text index in an earlier release's layout, which the
                change would leave out of date, naming the table and its columns.
        """
        described = self.describe(table)
        if described.outdated_text_indexes:
            raise OutdatedIndexError(str(described.name), described.outdated_text_indexes)
        return described

    def _create(self, create: Any) -> None:
        """Load the table a first :meth:`upsert_rows` makes, with ``create``'s options."""
        if tuple(getattr(create, "embed_columns", ()) or ()):
            raise EngineError(
                f"the {self.engine_name} engine embeds no column: give the vectors "
                "(embed_columns= is the local engine's)"
            )
        vector_index = getattr(create, "vector_index", None)
        if vector_index is not None and vector_index not in self.vector_indexes:
            raise EngineError(
                unbuilt_vector_index(vector_index, self.engine_name, self.vector_indexes)
            )
        options: dict[str, Any] = {}
        if vector_index is not None:
            options["vector_index"] = vector_index
        self.load_table(
            create.name,
            create.data,
            key_column=create.key_column,
            text_columns=tuple(create.text_columns),
            vector_metric=create.vector_metric,
            **options,
        )

    def _checked_rows(self, described: StoreTable, rows: pa.Table, key: str) -> pa.Table:
        """``rows`` with its columns' names normalized, checked against ``described``."""
        columns = column_names(rows.schema)
        if columns != list(rows.column_names):
            rows = rows.rename_columns(columns)
        unknown = [column for column in columns if column not in described.columns]
        if unknown:
            raise EngineError(
                f"column '{unknown[0]}' is not a column of table '{described.name}'; its "
                f"columns: {', '.join(described.columns)}"
            )
        if len(set(columns)) != len(columns):
            raise EngineError(f"the rows name a column twice: {', '.join(columns)}")
        if key not in columns:
            raise EngineError(f"the rows have no key column '{key}'")
        keys = rows.column(key)
        check_key_column(keys, key, timestamp_unit=self.timestamp_unit, store=self.store_label)
        loaded = dict(described.loaded_types).get(key)
        if loaded is not None:
            check_keys_kept(keys, loaded, key, str(described.name))
        check_values_held(rows, dict(described.loaded_types), str(described.name))
        check_temporal_values_kept(rows, timestamp_unit=self.timestamp_unit, store=self.store_label)
        rows = _dates_as_loaded(rows, dict(described.loaded_types))
        self._checked_keys(described, keys.to_pylist())  # a key of another kind: refused
        rows = null_vectors_as_lists(rows, [vector.name for vector in described.vectors])
        for vector in described.vectors:
            if vector.name in columns and vector.dimensions:
                check_written_vectors(rows, vector.name, vector.dimensions, described.name)
                check_cosine_norms(rows, vector.name, vector.metric)
        return rows

    def delete_rows(self, name: str, keys: Sequence[Any]) -> int:
        """Remove table ``name``'s rows keyed by ``keys`` in one transaction (the full-text
        indexes follow); returns how many there were (an unknown key is no error).

        Raises:
            EngineError: no such table or no key column recorded; a key of another kind than
                the key column's (:func:`~hotdata_retrieval.engines.checks.checked_keys`),
                before anything is deleted; the store's own refusal.
            OutdatedIndexError: the table's full-text index is in an earlier release's
                layout: load it again first.
        """
        described = self._changeable(name)
        distinct = self._checked_keys(described, keys)
        if not distinct:
            return 0
        norms = self._changed_norms(
            described, lambda record, _: record.after_change((), (), removed=distinct)
        )
        try:
            return self._remove_rows(described, self._stored_keys(described, distinct), norms)
        finally:
            self.generation += 1  # what agent SQL reads is made again

    def _changed_norms(
        self,
        described: StoreTable,
        change: Callable[[OutsideNorms, str], OutsideNorms],
        written: pa.Table | None = None,
    ) -> list[tuple[Any, ...]] | None:
        """The catalog rows (roles :data:`NORMS_ROLES`) of ``described``'s vector columns
        once a change of its rows is made, each record evolved by ``change`` (given the
        record and the column) and each largest norm raised to the largest of the rows
        ``written`` (none: rows removed, which leave it an upper bound); ``None`` when no
        record changes (the rows are left as they are). A column loaded for cosine keeps its
        record of outside norms (none, from an earlier release; else an empty one): its rows
        are refused at load and upsert."""
        vectors = []
        changed = False
        for vector in described.vectors:
            record = vector.norms_record()
            if record is not None and vector.metric != DistanceMetric.COSINE.value:
                evolved = change(record, vector.name)
                changed = changed or evolved != vector.outside_norms
                vector = attrs.evolve(vector, outside_norms=evolved)
            if (
                vector.largest_norm is not None
                and written is not None
                and vector.name in written.column_names
            ):
                raised = max(vector.largest_norm, largest_norm(written.column(vector.name)))
                changed = changed or raised != vector.largest_norm
                vector = attrs.evolve(vector, largest_norm=raised)
            vectors.append(vector)
        return norms_rows(described.name.name, vectors) if changed else None

    def _norms_statements(
        self, table: TableName, schema: str, norms: Sequence[Sequence[Any]] | None
    ) -> list[str]:
        """The statements that write ``norms`` (:meth:`_changed_norms`) as ``table``'s
        catalog rows of roles :data:`NORMS_ROLES`, in catalog schema ``schema``: none for
        ``None``. A store runs them in the transaction that changes the rows."""
        if norms is None:
            return []
        statements = [
            catalog_delete(self.profile, schema, table.name, role) for role in NORMS_ROLES
        ]
        if norms:
            statements.append(catalog_insert(self.profile, schema, norms))
        return statements

    def _key_chunks(self, keys: Sequence[Any]) -> Iterator[list[Any]]:
        """``keys`` in parts of at most :data:`KEYS_PER_STATEMENT`."""
        for start in range(0, len(keys), self.KEYS_PER_STATEMENT):
            yield list(keys[start : start + self.KEYS_PER_STATEMENT])

    names_fold_case: ClassVar[bool] = False
    """Whether the engine's names ignore case (SQLite's do; PostgreSQL's quoted names do not)."""

    def _index_name_sharers(
        self, table: TableName, columns: Sequence[str]
    ) -> Iterator[tuple[str, StoreTable, str]]:
        """Each of ``columns`` of ``table`` whose ``<table>__<column>`` is also ``<other
        table>__<other column>``, a column of another table of the same schema (table ``x``
        with column ``y__z``, table ``x__y`` with column ``z``): ``(column, the other table
        described, its column)``. An engine naming a column's index or side tables
        ``<table>__<column>__...`` gives the two the same names; what to refuse is the
        engine's (which columns have such names)."""

        def fold(name: str) -> str:
            return name.lower() if self.names_fold_case else name

        for column in columns:
            joined = f"{table.name}__{column}"
            for place in range(1, len(joined) - 2):
                if joined[place : place + 2] != "__":
                    continue
                other_name, other_column = joined[:place], joined[place + 2 :]
                if fold(other_name) == fold(table.name):
                    continue
                other = self._describe(attrs.evolve(table, name=other_name))
                if other is None:
                    continue
                for found in other.columns:
                    if fold(found) == fold(other_column):
                        yield column, other, found

    holds_nan: ClassVar[bool] = True
    """Whether a float column holds NaN (SQLite's reads it back as NULL, so its loads refuse
    it: :func:`~hotdata_retrieval.engines.checks.check_no_nan`)."""

    timestamp_unit: ClassVar[str] = "us"
    """The finest Arrow time unit the store keeps a timestamp in: a timestamp key finer than
    it is refused at load and upsert
    (:func:`~hotdata_retrieval.engines.checks.check_key_column`), as the store would round
    it and take keys apart by less for one."""

    own_schemas: ClassVar[frozenset[str]] = frozenset()
    """Schemas the engine writes its own tables into (none of the user's tables)."""
    own_suffixes: ClassVar[tuple[str, ...]] = ()
    """Endings of the names of the engine's own tables beside the user's."""

    def check_integer_range(self, data: Any) -> None:
        """Refuse an unsigned 64-bit integer above the largest signed one, which the store's
        ``BIGINT``/``INTEGER`` columns cannot hold (``data`` an Arrow table; anything else
        is left to the caller's own type check), before anything is written, with one
        message on every SQL store (their drivers' own errors differed).

        Raises:
            EngineError: naming the column, the first row holding such a value and the value.
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        if not isinstance(data, pa.Table):
            return
        for position, field in enumerate(data.schema):
            if not pa.types.is_uint64(field.type):
                continue
            column = data.column(position)
            past = pc.fill_null(pc.greater(column, pa.scalar(INT64_MAX, pa.uint64())), False)
            if not pc.any(past).as_py():
                continue
            row = pc.index(past, True).as_py()
            raise EngineError(
                f"column {field.name!r} holds {column[row].as_py()} in {row_name(row)}, past the "
                f"largest integer the {self.engine_name} store holds ({INT64_MAX}); store "
                "such values as text"
            )

    def check_own_name(self, table: TableName) -> None:
        """Refuse to load a table under a name the engine keeps for its own tables: its
        catalog (:data:`~hotdata_retrieval.compile.statements.CATALOG_TABLE`), a schema of
        :attr:`own_schemas`, a name ending in one of :attr:`own_suffixes`.

        Raises:
            EngineError: naming the table and the rule.
        """
        if table.name == CATALOG_TABLE:
            reason = "is the engine's catalog of keys and vector columns"
        elif table.schema in self.own_schemas:
            reason = f"is in schema '{table.schema}', where the engine keeps its text indexes"
        elif table.name.endswith(self.own_suffixes) and self.own_suffixes:
            reason = f"ends like the engine's own tables ({', '.join(self.own_suffixes)})"
        else:
            return
        raise EngineError(f"table '{table}' {reason}; choose another name")

    @staticmethod
    def rows_of(
        data: pa.Table, convert: Mapping[str, Callable[[pa.Array], list[Any]]]
    ) -> Iterator[tuple[Any, ...]]:
        """``data``'s rows as tuples. A column in ``convert`` is made into Python values by its
        function, given the batch's Arrow column and returning one value a row (NULL as
        ``None``); the others by Arrow's ``to_pylist``. A timestamp with a time zone is
        given in UTC: the stores hold UTC instants in a timestamp without a zone, and
        PostgreSQL drops the offset of a value written to one ("Date/Time Types", §8.5.1.3:
        a zone in a literal for ``timestamp without time zone`` is silently ignored), so a
        zone other than UTC would shift it. Lazy: made :data:`LOAD_BATCH_ROWS` rows at a time
        (:func:`record_batches`), so only one batch's rows are Python values at once."""
        import pyarrow as pa

        for batch in record_batches(data):
            columns = []
            for name in batch.schema.names:
                column = batch.column(name)
                if pa.types.is_timestamp(column.type) and column.type.tz is not None:
                    column = column.cast(pa.timestamp(column.type.unit, "UTC"))
                function = convert.get(name)
                columns.append(column.to_pylist() if function is None else function(column))
            yield from zip(*columns)
