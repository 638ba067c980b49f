"""Index metadata: what a table can be searched by, and the index catalog.

Two views of the same facts, kept apart from any one consumer:

- :class:`TableIndexes` (with its :class:`VectorIndex` entries) is what an engine reports for
  one table (``engine.indexes(table)``) and what the router
  (:func:`hotdata_retrieval.routing.plan_search`) reads: the ready BM25 columns, the vector
  columns and the key.
- :class:`IndexCatalog` (with its :class:`IndexEntry` and :class:`TableKeys` entries) holds
  every known index, pending ones included, and the unique keys, for any number of tables. The
  linter reads it beside the SQL, the Hotdata engine builds it from the control plane's index
  listing, and :meth:`IndexCatalog.from_table_indexes` builds it from what an engine reports.

Indexes are not visible in SQL on the Hotdata engine (no ``pg_indexes``, no
``information_schema.indexes``; engine contract §1.7, from hotdata-langchain
``docs/engine-contract.md``), so the lint rules that depend on them — a distance function that
does not match the index's metric, a search on a column with no index, a search on a
``pending`` index, a fusion join on a key that is not unique — read a catalog supplied beside
the SQL.

The catalog is a JSON document (schema: :data:`CATALOG_JSON_SCHEMA`, described in
``docs/lint.md``)::

    {
      "version": 1,
      "indexes": [
        {"table": "default.public.docs", "columns": ["body"], "kind": "bm25"},
        {"table": "default.public.docs", "columns": ["embedding"], "kind": "vector",
         "metric": "cosine"},
        {"table": "default.public.notes", "columns": ["body_embedding"], "kind": "vector",
         "metric": "cosine", "source_column": "body", "status": "pending"}
      ],
      "tables": [{"table": "default.public.docs", "unique_keys": [["id"]]}]
    }

The entries mirror the control plane's index listing (``IndexesApi.list_indexes``: ``index_name``,
``index_type``, ``columns``, ``metric``, ``source_column``, ``status``; engine contract §1.7):
a provider-backed vector index has a ``source_column`` (the text column it embeds) and its
``columns[0]`` is the generated vector column; a plain vector index has no ``source_column``.
:meth:`IndexCatalog.from_index_records` builds entries from those records directly.

These classes used to live in :mod:`hotdata_retrieval.lint.catalog` and
:mod:`hotdata_retrieval.routing`; both still export them. This module imports neither the
linter nor any engine: its one error, :class:`CatalogError`, lives here, and
:mod:`hotdata_retrieval.lint` exports it too.
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from hotdata_retrieval.errors import CatalogError as CatalogError
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import (
    DEFAULT_CATALOG,
    DEFAULT_SCHEMA,
    TableName,
    coerce_table_name,
    normalize_identifier,
)
from hotdata_retrieval.plan.search import DistanceMetric
from hotdata_retrieval.plan.values import json_type_phrase

# -- what one table can be searched by -----------------------------------------------------


@attrs.frozen(kw_only=True)
class VectorIndex:
    """A vector column, and the text column it embeds when the engine embeds queries itself.

    Attributes:
        column: the vector column.
        source_column: the text column of a provider-backed (engine-embedded) index:
            ``vector_search`` embeds the query on the engine. ``None`` for a plain index,
            whose queries the caller embeds.
        metric: the index's metric.
    """

    column: str
    source_column: str | None = None
    metric: str = "cosine"

    @property
    def provider_backed(self) -> bool:
        """Whether the engine embeds query text for this column (it has a source column)."""
        return bool(self.source_column)


@attrs.frozen(kw_only=True)
class TableIndexes:
    """What a table can be searched by: what an engine reports for it and the router reads.

    Attributes:
        table: the table, completed to ``catalog.schema.table``.
        bm25_columns: the text columns with a ready BM25 index, lower-cased.
        vectors: the ready vector indexes.
        key_column: the table's unique key: the one it was loaded with, else its ``id``
            column if it has one (checked for uniqueness when a search needs it), else
            ``None`` (a table without a key: single-branch searches only).
    """

    table: TableName
    bm25_columns: tuple[str, ...] = ()
    vectors: tuple[VectorIndex, ...] = ()
    key_column: str | None = "id"


# -- the index catalog ---------------------------------------------------------------------


def _catalog_error(message: str, *, field: str | None = None, value: Any = None) -> CatalogError:
    return CatalogError(message, field=field, value=value)


CATALOG_VERSION = 1
"""The ``version`` written by :meth:`IndexCatalog.to_dict` and the only one read."""


class IndexKind(str, enum.Enum):
    """An index's type, as the control plane names it (``"sorted" | "bm25" | "vector"``;
    engine contract §1.7, hotdata-framework ``IndexType``)."""

    BM25 = "bm25"
    VECTOR = "vector"
    SORTED = "sorted"


class IndexStatus(str, enum.Enum):
    """``ready`` or ``pending`` (the control plane's ``IndexStatus``; a search against a
    pending index fails: engine contract §1.7, hotdata-langchain ``indexes.py``)."""

    READY = "ready"
    PENDING = "pending"


def _identifiers(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise PlanError(f"columns must be a list of names, got {value!r}", field="columns")
    names = tuple(normalize_identifier(item, label="column") for item in value)
    if not names:
        raise PlanError("columns must name at least one column", field="columns", value=value)
    return names


def _kind(value: Any) -> IndexKind:
    try:
        return IndexKind(value)
    except ValueError:
        known = ", ".join(kind.value for kind in IndexKind)
        raise PlanError(f"kind must be one of {known}, got {value!r}", field="kind") from None


def _status(value: Any) -> IndexStatus:
    try:
        return IndexStatus(value)
    except ValueError:
        raise PlanError(
            f"status must be 'ready' or 'pending', got {value!r}", field="status"
        ) from None


def _optional_identifier(value: Any) -> str | None:
    return None if value is None else normalize_identifier(value, label="source_column")


def _optional_metric(value: Any) -> DistanceMetric | None:
    return None if value is None else DistanceMetric.parse(value)


def _optional_name(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value == "":
        raise PlanError(f"name must be a non-empty string, got {value!r}", field="name")
    return value


@attrs.frozen(kw_only=True)
class IndexEntry:
    """One index on one table.

    Attributes:
        table: the indexed table, completed to ``catalog.schema.table``.
        columns: the indexed columns, lower-cased. A BM25 index may cover several text
            columns; a vector index has exactly one (the vector column; for a provider-backed
            index, the generated one).
        kind: :class:`IndexKind`.
        metric: a vector index's metric (``cosine``, ``l2`` or ``dot``); ``None`` when unknown.
        source_column: for a provider-backed vector index, the text column it embeds (the
            column ``vector_search`` and ``vector_distance`` take); ``None`` for a plain one.
        status: :class:`IndexStatus`; only a ready index serves queries.
        name: the index's name, if known.

    Raises:
        PlanError: a malformed value; a vector index with more than one column; a metric or
            source column on an index that is not a vector index.
    """

    table: TableName = attrs.field(converter=coerce_table_name)
    columns: tuple[str, ...] = attrs.field(converter=_identifiers)
    kind: IndexKind = attrs.field(converter=_kind)
    metric: DistanceMetric | None = attrs.field(default=None, converter=_optional_metric)
    source_column: str | None = attrs.field(default=None, converter=_optional_identifier)
    status: IndexStatus = attrs.field(default=IndexStatus.READY, converter=_status)
    name: str | None = attrs.field(default=None, converter=_optional_name)

    def __attrs_post_init__(self) -> None:
        if self.kind is IndexKind.VECTOR:
            if len(self.columns) != 1:
                raise PlanError(
                    f"a vector index has exactly one column, got {list(self.columns)}",
                    field="columns",
                    value=self.columns,
                )
        elif self.metric is not None or self.source_column is not None:
            field = "metric" if self.metric is not None else "source_column"
            raise PlanError(
                f"{field} applies to vector indexes only, not to a {self.kind.value} index",
                field=field,
                value=getattr(self, field),
            )

    @property
    def provider_backed(self) -> bool:
        """Whether the engine embeds query text for this index (it has a source column)."""
        return self.source_column is not None

    @property
    def ready(self) -> bool:
        """Whether the index serves queries."""
        return self.status is IndexStatus.READY

    def to_dict(self) -> dict[str, Any]:
        """The entry as a catalog document's ``indexes`` item."""
        document: dict[str, Any] = {
            "table": str(self.table),
            "columns": list(self.columns),
            "kind": self.kind.value,
        }
        if self.metric is not None:
            document["metric"] = self.metric.value
        if self.source_column is not None:
            document["source_column"] = self.source_column
        document["status"] = self.status.value
        if self.name is not None:
            document["name"] = self.name
        return document


def _keys(value: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise PlanError(
            f"unique_keys must be a list of column lists, got {value!r}", field="unique_keys"
        )
    keys: list[tuple[str, ...]] = []
    for key in value:
        keys.append((normalize_identifier(key),) if isinstance(key, str) else _identifiers(key))
    return tuple(keys)


@attrs.frozen(kw_only=True)
class TableKeys:
    """What the catalog knows about one table besides its indexes.

    Attributes:
        table: the table, completed to ``catalog.schema.table``.
        unique_keys: column sets whose values are unique in the table (each a tuple of
            lower-cased names). A fusion joins its branches on a key; a key that is not unique
            multiplies rows (engine contract §3.3 item 10).
    """

    table: TableName = attrs.field(converter=coerce_table_name)
    unique_keys: tuple[tuple[str, ...], ...] = attrs.field(default=(), converter=_keys)

    def to_dict(self) -> dict[str, Any]:
        """The entry as a catalog document's ``tables`` item."""
        return {"table": str(self.table), "unique_keys": [list(key) for key in self.unique_keys]}


def _entries(value: Iterable[IndexEntry]) -> tuple[IndexEntry, ...]:
    return tuple(value)


def _tables(value: Iterable[TableKeys]) -> tuple[TableKeys, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class IndexCatalog:
    """Every known index and unique key, looked up by fully qualified table name.

    >>> catalog = IndexCatalog(indexes=[
    ...     IndexEntry(table="docs", columns=["embedding"], kind="vector", metric="cosine"),
    ... ])
    >>> catalog.vector_index(TableName.parse("default.public.docs"), "embedding").metric.value
    'cosine'
    """

    indexes: tuple[IndexEntry, ...] = attrs.field(default=(), converter=_entries)
    tables: tuple[TableKeys, ...] = attrs.field(default=(), converter=_tables)
    _by_table: dict[TableName, list[IndexEntry]] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )
    _unique: dict[TableName, set[tuple[str, ...]]] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        for entry in self.indexes:
            self._by_table.setdefault(entry.table, []).append(entry)
        for table in self.tables:
            self._unique.setdefault(table.table, set()).update(table.unique_keys)

    # -- lookups ---------------------------------------------------------------------------

    def indexes_on(self, table: TableName) -> tuple[IndexEntry, ...]:
        """Every index on ``table``."""
        return tuple(self._by_table.get(table, ()))

    def bm25_index(self, table: TableName, column: str) -> IndexEntry | None:
        """The BM25 index covering ``column`` (a ready one first), or ``None``."""
        return self._best(
            entry
            for entry in self.indexes_on(table)
            if entry.kind is IndexKind.BM25 and column.lower() in entry.columns
        )

    def provider_index(self, table: TableName, source_column: str) -> IndexEntry | None:
        """The provider-backed vector index built over text column ``source_column``."""
        return self._best(
            entry
            for entry in self.indexes_on(table)
            if entry.kind is IndexKind.VECTOR and entry.source_column == source_column.lower()
        )

    def vector_index(self, table: TableName, vector_column: str) -> IndexEntry | None:
        """The vector index on vector column ``vector_column`` (plain or provider-backed)."""
        return self._best(
            entry
            for entry in self.indexes_on(table)
            if entry.kind is IndexKind.VECTOR and entry.columns[0] == vector_column.lower()
        )

    def unique_keys(self, table: TableName) -> frozenset[tuple[str, ...]]:
        """The unique keys declared for ``table``."""
        return frozenset(self._unique.get(table, ()))

    def is_unique(self, table: TableName, columns: Sequence[str]) -> bool:
        """Whether ``columns`` contain a declared unique key of ``table`` (so they are unique)."""
        wanted = {column.lower() for column in columns}
        return any(set(key) <= wanted for key in self._unique.get(table, ()))

    @staticmethod
    def _best(entries: Iterable[IndexEntry]) -> IndexEntry | None:
        found: IndexEntry | None = None
        for entry in entries:
            if entry.ready:
                return entry
            found = found or entry
        return found

    # -- building --------------------------------------------------------------------------

    @classmethod
    def from_index_records(
        cls,
        table: str | TableName,
        records: Iterable[Mapping[str, Any]],
        *,
        unique_keys: Iterable[Sequence[str]] = (),
    ) -> IndexCatalog:
        """Build a catalog for one table from the control plane's index records.

        Each record carries ``index_name``, ``index_type``, ``columns``, ``metric``,
        ``source_column`` and ``status`` (``IndexesApi.list_indexes``; engine contract §1.7).

        Raises:
            CatalogError: a record is malformed.
        """
        name = TableName.parse(table)
        entries = []
        for position, record in enumerate(records):
            document = {
                "table": str(name),
                "columns": record.get("columns"),
                "kind": record.get("index_type"),
                "metric": record.get("metric"),
                "source_column": record.get("source_column"),
                "status": record.get("status") or IndexStatus.READY.value,
                "name": record.get("index_name"),
            }
            entries.append(_index_entry(document, f"records[{position}]"))
        keys = [list(key) for key in unique_keys]
        tables = [TableKeys(table=name, unique_keys=keys)] if keys else []
        return cls(indexes=entries, tables=tables)

    @classmethod
    def from_table_indexes(
        cls, tables: Iterable[TableIndexes], *, keys_unique: bool = True
    ) -> IndexCatalog:
        """Build a catalog from what a local engine reports about its tables
        (``LocalEngine.indexes(table)``): one BM25 index over the BM25 columns, and for each
        vector column an engine-embedded (provider-backed) vector index over its text column.

        Args:
            tables: one :class:`TableIndexes` per table.
            keys_unique: declare each table's key column unique (the local engine checks a key
                column when a table is loaded with one).
        """
        indexes: list[IndexEntry] = []
        keys: list[TableKeys] = []
        for table in tables:
            if table.bm25_columns:
                indexes.append(
                    IndexEntry(table=table.table, columns=table.bm25_columns, kind=IndexKind.BM25)
                )
            for vector in table.vectors:
                indexes.append(
                    IndexEntry(
                        table=table.table,
                        columns=[vector.column],
                        kind=IndexKind.VECTOR,
                        metric=vector.metric,
                        source_column=vector.source_column,
                    )
                )
            if keys_unique and table.key_column:
                keys.append(TableKeys(table=table.table, unique_keys=[[table.key_column]]))
        return cls(indexes=indexes, tables=keys)

    def merged(self, other: IndexCatalog) -> IndexCatalog:
        """A catalog holding the entries of both."""
        return IndexCatalog(
            indexes=(*self.indexes, *other.indexes), tables=(*self.tables, *other.tables)
        )

    # -- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The catalog as a JSON document (see :data:`CATALOG_JSON_SCHEMA`)."""
        return {
            "version": CATALOG_VERSION,
            "indexes": [entry.to_dict() for entry in self.indexes],
            "tables": [table.to_dict() for table in self.tables],
        }

    def dumps(self) -> str:
        """The catalog as JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the catalog to ``path`` as JSON."""
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.dumps())

    @classmethod
    def from_dict(
        cls,
        document: Any,
        *,
        default_catalog: str = DEFAULT_CATALOG,
        default_schema: str = DEFAULT_SCHEMA,
    ) -> IndexCatalog:
        """Read a catalog document; 1- and 2-part table names are completed from the defaults.

        Raises:
            CatalogError: the document does not follow :data:`CATALOG_JSON_SCHEMA`; the error
                names the offending field (``indexes[2].kind``) and value.
        """
        if not isinstance(document, Mapping):
            raise _catalog_error(
                f"an index catalog is a JSON object, got {json_type_phrase(document)}",
                value=document,
            )
        _only(document, {"version", "indexes", "tables"}, "")
        version = document.get("version", CATALOG_VERSION)
        if version != CATALOG_VERSION or isinstance(version, bool):
            raise _catalog_error(
                f"unsupported catalog version {version!r}; this library reads version "
                f"{CATALOG_VERSION}",
                field="version",
                value=version,
            )
        defaults = {"default_catalog": default_catalog, "default_schema": default_schema}
        indexes = [
            _index_entry(item, f"indexes[{position}]", **defaults)
            for position, item in enumerate(_list(document, "indexes"))
        ]
        tables = [
            _table_keys(item, f"tables[{position}]", **defaults)
            for position, item in enumerate(_list(document, "tables"))
        ]
        return cls(indexes=indexes, tables=tables)

    @classmethod
    def loads(cls, text: str, **defaults: str) -> IndexCatalog:
        """Read a catalog from JSON text.

        Raises:
            CatalogError: the text is not JSON, is nested too deeply to read, or is not a
                valid catalog document.
        """
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise _catalog_error(f"the index catalog is not valid JSON: {error}") from None
        except RecursionError:
            raise _catalog_error("the index catalog is nested too deeply to read") from None
        return cls.from_dict(document, **defaults)

    @classmethod
    def load(cls, path: str | os.PathLike[str], **defaults: str) -> IndexCatalog:
        """Read a catalog from a JSON file.

        Raises:
            CatalogError: the file cannot be read, is not UTF-8 JSON, or is not a valid
                catalog document.
        """
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as error:
            raise _catalog_error(
                f"cannot read index catalog {os.fspath(path)!r}: {error.strerror or error}",
                value=os.fspath(path),
            ) from None
        except UnicodeDecodeError as error:
            raise _catalog_error(
                f"index catalog {os.fspath(path)!r} is not UTF-8 text: {error.reason}",
                value=os.fspath(path),
            ) from None
        return cls.loads(text, **defaults)


def _only(document: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in document:
        if key not in allowed:
            field = f"{where}.{key}" if where else str(key)
            raise _catalog_error(
                f"unknown field {field!r} in the index catalog; allowed: "
                f"{', '.join(sorted(allowed))}",
                field=field,
                value=document[key],
            )


def _list(document: Mapping[str, Any], key: str) -> list[Any]:
    value = document.get(key, [])
    if not isinstance(value, list):
        raise _catalog_error(
            f"{key} must be an array, got {json_type_phrase(value)}", field=key, value=value
        )
    return value


_INDEX_FIELDS = {"table", "columns", "column", "kind", "metric", "source_column", "status", "name"}
_TABLE_FIELDS = {"table", "unique_keys"}


def _index_entry(item: Any, where: str, **defaults: str) -> IndexEntry:
    if not isinstance(item, Mapping):
        raise _catalog_error(
            f"{where} must be an object, got {json_type_phrase(item)}", field=where, value=item
        )
    _only(item, _INDEX_FIELDS, where)
    fields = dict(item)
    if "column" in fields:
        if "columns" in fields:
            raise _catalog_error(
                f"{where}: give 'columns' or 'column', not both", field=f"{where}.column"
            )
        fields["columns"] = [fields.pop("column")]
    for required in ("table", "columns", "kind"):
        if fields.get(required) is None:
            raise _catalog_error(f"{where}.{required} is required", field=f"{where}.{required}")
    table = fields.pop("table")
    for key in ("kind", "status"):
        if key in fields and not isinstance(fields[key], str):
            raise _catalog_error(
                f"{where}.{key} must be a string, got {json_type_phrase(fields[key])}",
                field=f"{where}.{key}",
                value=fields[key],
            )
    if fields.get("kind") not in {kind.value for kind in IndexKind}:
        raise _catalog_error(
            f"{where}.kind must be one of bm25, vector, sorted; got {fields.get('kind')!r}",
            field=f"{where}.kind",
            value=fields.get("kind"),
        )
    if "status" in fields and fields["status"] not in {status.value for status in IndexStatus}:
        raise _catalog_error(
            f"{where}.status must be 'ready' or 'pending', got {fields['status']!r}",
            field=f"{where}.status",
            value=fields["status"],
        )
    try:
        return IndexEntry(table=_table_name(table, where, **defaults), **fields)
    except PlanError as error:
        field = f"{where}.{error.field}" if error.field else where
        raise _catalog_error(f"{field}: {error}", field=field, value=error.value) from None


def _table_keys(item: Any, where: str, **defaults: str) -> TableKeys:
    if not isinstance(item, Mapping):
        raise _catalog_error(
            f"{where} must be an object, got {json_type_phrase(item)}", field=where, value=item
        )
    _only(item, _TABLE_FIELDS, where)
    if item.get("table") is None:
        raise _catalog_error(f"{where}.table is required", field=f"{where}.table")
    try:
        return TableKeys(
            table=_table_name(item["table"], where, **defaults),
            unique_keys=item.get("unique_keys", []),
        )
    except PlanError as error:
        field = f"{where}.{error.field}" if error.field else where
        raise _catalog_error(f"{field}: {error}", field=field, value=error.value) from None


def _table_name(value: Any, where: str, **defaults: str) -> TableName:
    try:
        return TableName.parse(value, **defaults)
    except PlanError as error:
        raise _catalog_error(
            f"{where}.table: {error}", field=f"{where}.table", value=value
        ) from None


_IDENTIFIER_SCHEMA = {"type": "string", "minLength": 1}

CATALOG_JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "hotdata-retrieval index catalog",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "version": {"const": CATALOG_VERSION},
        "indexes": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["table", "kind"],
                "properties": {
                    "table": {
                        "type": "string",
                        "description": "'catalog.schema.table'; 1- and 2-part names are "
                        "completed from 'default' and 'public'",
                    },
                    "columns": {"type": "array", "items": _IDENTIFIER_SCHEMA, "minItems": 1},
                    "column": {**_IDENTIFIER_SCHEMA, "description": "shorthand for one column"},
                    "kind": {"enum": [kind.value for kind in IndexKind]},
                    "metric": {
                        "enum": [metric.value for metric in DistanceMetric],
                        "description": "vector indexes only",
                    },
                    "source_column": {
                        **_IDENTIFIER_SCHEMA,
                        "description": "provider-backed vector indexes: the embedded text column",
                    },
                    "status": {"enum": [status.value for status in IndexStatus]},
                    "name": _IDENTIFIER_SCHEMA,
                },
                "oneOf": [{"required": ["columns"]}, {"required": ["column"]}],
            },
        },
        "tables": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["table"],
                "properties": {
                    "table": {"type": "string"},
                    "unique_keys": {
                        "type": "array",
                        "items": {
                            "oneOf": [
                                _IDENTIFIER_SCHEMA,
                                {"type": "array", "items": _IDENTIFIER_SCHEMA, "minItems": 1},
                            ]
                        },
                    },
                },
            },
        },
    },
}
"""JSON Schema (draft 2020-12) of an index catalog document."""


def reported_key(loaded_key: str | None, columns: Iterable[str]) -> str | None:
    """The key an engine reports for a table (:attr:`TableIndexes.key_column`): the one it
    was loaded with, else ``id`` if the table has such a column, else ``None``.

    >>> reported_key(None, ["doc", "body"]) is None, reported_key(None, ["id"])
    (True, 'id')
    """
    if loaded_key is not None:
        return loaded_key
    return "id" if "id" in columns else None
