"""The tables a local engine holds open, following the database's catalog.

Several engines, in several processes, may open one database directory at once. An open engine
sees another process's commit at its next query: it reads ``catalog.json`` again when it
changed and forgets the tables whose version changed or that were dropped.

A table is opened when it is first used (searched, read, named by a statement), at the version
the catalog names then, and held open until its version changes: opening an engine, or
writing one table, reads no other table's files. Opening a table of gigabytes reads its rows
into memory (``tables.open_table``), so a small load into a database that holds one costs what
it costs into an empty database. A table whose files cannot be opened is recorded as damaged,
with the reason, until its version changes; the others serve.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from hotdata_retrieval.engines._repeated_keys import key_in, positive_zero
from hotdata_retrieval.engines.checks import (
    arrow_value_kind,
    checked_keys,
    missing_table_error,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local import database
from hotdata_retrieval.engines.local.database import DatabaseError, TableEntry
from hotdata_retrieval.engines.local.tables import LoadedTable, open_table
from hotdata_retrieval.indexes import TableIndexes, VectorIndex, reported_key
from hotdata_retrieval.plan.names import TableName, normalize_identifier

_REFRESH_ATTEMPTS = 5
"""Times a reader reads the catalog again when a version it was about to open is replaced."""


class OpenTables:
    """The tables of one database directory held open (module docstring).

    Args:
        root: the database directory.
        catalog: the catalog three-part names use.
        schema: the schema.
        installed: told of each table opened (or opened again at a new version).
        forgotten: told of each table dropped or damaged, by name.

    Raises:
        DatabaseError: ``root`` is not a directory and cannot be made one.
        PlanError: ``catalog`` or ``schema`` is no identifier.
    """

    def __init__(
        self,
        root: Path,
        *,
        catalog: str,
        schema: str,
        installed: Callable[[LoadedTable], None],
        forgotten: Callable[[str], None],
    ) -> None:
        if root.exists() and not root.is_dir():
            raise DatabaseError(f"database path {root} exists and is not a directory")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatabaseError(
                f"cannot create the database directory {root}: {error.strerror or error}"
            ) from None
        self.root = root
        self._catalog_file = os.path.join(root, database.CATALOG_FILE)
        self.catalog = normalize_identifier(catalog, label="catalog")
        self.schema = normalize_identifier(schema, label="schema")
        self._installed = installed
        self._forgotten = forgotten
        self.lock = threading.RLock()
        self.tables: dict[str, LoadedTable] = {}
        self.entries: dict[str, TableEntry] = {}
        self._damaged: dict[str, tuple[str, str]] = {}
        self._signature: tuple[int, int, int] | None = None

    @property
    def damaged(self) -> dict[str, str]:
        """The tables found damaged when they were opened, with the reason (the tables not
        opened yet are not in it: :meth:`open_all` opens them)."""
        with self.lock:
            return {name: message for name, (_, message) in self._damaged.items()}

    def table_name(self, name: str) -> TableName:
        """``name`` completed with this database's catalog and schema."""
        return TableName.parse(name, default_catalog=self.catalog, default_schema=self.schema)

    def refresh(self, *, again: bool = False) -> None:
        """Follow ``catalog.json`` when another writer (or process) committed since it was
        last read (``again``: read it whatever its signature, after this process's own
        commit): forget the open tables whose version changed or that were dropped. No
        table's files are read here.

        Raises:
            DatabaseError: the catalog itself cannot be read.
        """
        with self.lock:
            signature = database.file_signature(self._catalog_file)
            if signature == self._signature and not again:
                return
            # Read after the signature: the entries are at least as new as it, so a version
            # directory missing while the signature still matches is missing for good.
            entries = database.read_catalog(self.root)
            for name, loaded in list(self.tables.items()):
                entry = entries.get(name)
                if entry is None or entry.version != loaded.entry.version:
                    self._forget(name)
            for name, (version, _) in list(self._damaged.items()):
                entry = entries.get(name)
                if entry is None or entry.version != version:
                    del self._damaged[name]  # dropped or replaced: open the new one when used
            self.entries = entries
            self._signature = signature

    def find(self, name: str) -> LoadedTable | None:
        """The open table ``name`` (a bare name), opened now at the version the catalog names
        if it is not open yet; ``None`` when the catalog has no such table or it is damaged
        (:attr:`damaged` then says why).

        Raises:
            DatabaseError: the catalog cannot be read, or it changed
                :data:`_REFRESH_ATTEMPTS` times while the table was being opened.
        """
        with self.lock:
            for _ in range(_REFRESH_ATTEMPTS):
                loaded = self.tables.get(name)
                if loaded is not None:
                    return loaded
                entry = self.entries.get(name)
                if entry is None or name in self._damaged:
                    return None
                try:
                    loaded = open_table(self.root, entry)
                except FileNotFoundError:
                    if database.file_signature(self._catalog_file) != self._signature:
                        self.refresh()  # replaced meanwhile: follow the newer catalog
                        continue
                    self._damage(entry, f"its version directory {entry.version} is missing")
                    return None
                except DatabaseError as error:
                    self._damage(entry, str(error))
                    return None
                self.install(loaded)
                return loaded
            raise DatabaseError(
                f"the database {self.root} changed {_REFRESH_ATTEMPTS} times while table "
                f"{name!r} was being opened; try again"
            )

    def open_all(self) -> list[LoadedTable]:
        """Every table of the catalog, opened (the damaged ones recorded, not returned): what
        a question about every table (:attr:`damaged`, ``information_schema``) reads.

        Raises:
            DatabaseError: as :meth:`find`.
        """
        with self.lock:
            found = [self.find(name) for name in sorted(self.entries)]
        return [loaded for loaded in found if loaded is not None]

    def find_damage(self) -> dict[str, str]:
        """The damaged tables, with the reason: the catalog followed and every table not open
        yet opened to find out.

        Raises:
            DatabaseError: as :meth:`find`.
        """
        with self.lock:
            self.refresh()
            self.open_all()
            return self.damaged

    def embedded_by(self, model: str, *, opened: bool) -> list[LoadedTable]:
        """The tables with a vector column ``model`` embedded: those open already
        (``opened``), or every one, opened now (a damaged one left out).

        Raises:
            DatabaseError: as :meth:`find`.
        """

        def embedded(entry: TableEntry) -> bool:
            return any(vector.model == model for vector in entry.vector_columns)

        with self.lock:
            if opened:
                return [loaded for loaded in self.tables.values() if embedded(loaded.entry)]
            names = [name for name, entry in sorted(self.entries.items()) if embedded(entry)]
            found = [self.find(name) for name in names]
        return [loaded for loaded in found if loaded is not None]

    def _damage(self, entry: TableEntry, message: str) -> None:
        self._forget(entry.name)
        self._damaged[entry.name] = (entry.version, message)

    def install(self, loaded: LoadedTable) -> None:
        """Hold ``loaded`` open (a version this process has just committed, or read)."""
        with self.lock:
            self._installed(loaded)
            self.tables[loaded.entry.name] = loaded
            self._damaged.pop(loaded.entry.name, None)

    def _forget(self, name: str) -> None:
        self.tables.pop(name, None)
        self._forgotten(name)

    def indexes(self, reference: str | TableName) -> TableIndexes:
        """What the table ``reference`` names can be searched by: its BM25 columns and its
        vector columns.

        Raises:
            EngineError: no such table, or it is damaged.
        """
        loaded = self.loaded(reference)
        entry = loaded.entry
        embedded = tuple(
            VectorIndex(column=v.name, source_column=v.source_column, metric=v.metric)
            for v in entry.vector_columns
        )
        return TableIndexes(
            table=TableName(catalog=self.catalog, schema=self.schema, name=entry.name),
            bm25_columns=entry.text_indexes,
            vectors=embedded + _given_vectors(loaded, {v.column for v in embedded}),
            key_column=reported_key(entry.key_column, entry.columns),
        )

    def vector_models(self, reference: str | TableName) -> tuple[str, ...]:
        """The names of the embedders that made the vectors of the table ``reference`` names,
        sorted (empty when none was embedded at load), the catalog followed first.

        Raises:
            EngineError: no such table, or it is damaged.
        """
        self.refresh()
        entry = self.loaded(reference).entry
        return tuple(sorted({vector.model for vector in entry.vector_columns if vector.model}))

    def read(self, reference: str | TableName, columns: Sequence[str] | None) -> pa.Table:
        """The rows of the table ``reference`` names (``columns`` of them, in that order).

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        data = self.loaded(reference).data
        if columns is None:
            return data
        missing = [column for column in columns if column not in data.column_names]
        if missing:
            raise EngineError(
                f"column '{missing[0]}' not found in table '{reference}'; "
                f"columns: {', '.join(data.column_names)}"
            )
        return data.select(list(columns))

    def read_rows(
        self, reference: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None
    ) -> pa.Table:
        """The rows of the table ``reference`` names keyed by ``keys`` (``columns`` of them),
        in table order; an unknown key is left out.

        Raises:
            EngineError: no such table, no key column, a column it does not have, a key its
                key column cannot hold.
        """

        loaded = self.loaded(reference)
        key = loaded.entry.key_column
        if key is None:
            raise EngineError(
                f"table '{reference}' has no key column: its rows cannot be read by key"
            )
        data = loaded.data
        selected = self.read(reference, columns) if columns is not None else data
        wanted = key_array(keys, data.schema.field(key).type, key)
        return selected.filter(key_in(data.column(key), wanted))

    def loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names, opened now if it is not open yet
        (:meth:`find`).

        Raises:
            EngineError: no such table in this catalog and schema, or it is damaged.
            DatabaseError: as :meth:`find`.
        """
        name = self.table_name(reference) if isinstance(reference, str) else reference
        if (name.catalog, name.schema) == (self.catalog, self.schema):
            loaded = self.find(name.name)
            if loaded is not None:
                return loaded
            damage = self._damaged.get(name.name)
            if damage is not None:
                raise EngineError(
                    f"table '{name}' cannot be read: {damage[1]}; load it again to repair it"
                )
        raise missing_table_error(name, self.entries)


class ReadsOpenTables:
    """The local engine's reads of its open tables: from memory, no query runs."""

    _open: OpenTables

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows of ``table``'s current version as an Arrow table (``columns`` of them, in
        that order; default every column). Read from memory once the table is open: no query
        runs.

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        return self._open.read(table, columns)

    def read_rows(
        self, table: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows of ``table``'s current version keyed by ``keys`` (``columns`` of them, as
        :meth:`read_table`), in table order; an unknown key is left out. From memory.

        Raises:
            EngineError: no such table, no key column, a column it does not have, a key its
                key column cannot hold.
        """
        return self._open.read_rows(table, keys, columns)


def _given_vectors(loaded: LoadedTable, embedded: set[str]) -> tuple[VectorIndex, ...]:
    """The vector columns the caller loaded (lists of floating-point numbers the engine did
    not embed), as every store reports its vector columns: each searched by the metric it was
    loaded for (:attr:`~hotdata_retrieval.engines.local.database.TableEntry.caller_metric`;
    an HNSW index serves that metric), with no source
    column (the caller embeds queries)."""
    from hotdata_retrieval.engines.checks import is_vector_type

    metric = loaded.entry.caller_metric
    return tuple(
        VectorIndex(column=field.name, metric=metric)
        for field in loaded.data.schema
        if is_vector_type(field.type) and field.name not in embedded
    )


def key_array(keys: Sequence[Any], kind: pa.DataType, column: str) -> pa.Array:
    """``keys`` (distinct) as an array of the key column's type, by the rule of every engine
    (:func:`~hotdata_retrieval.engines.checks.checked_keys`).

    Raises:
        EngineError: a key of another kind than the column's, NULL or NaN, or one the
            column's type cannot hold (naming it).
    """
    checked = checked_keys(keys, arrow_value_kind(kind), column, str(kind), kind)
    try:
        values = pa.array(checked, type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        bad = next((value for value in checked if not _holds(value, kind)), None)
        raise EngineError(
            f"key {bad!r} cannot be a value of key column '{column}' ({kind})"
        ) from None
    return positive_zero(values)


def _holds(value: Any, kind: pa.DataType) -> bool:
    try:
        pa.array([value], type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    return True
