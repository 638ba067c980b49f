"""The tables a local engine holds open, following the database's catalog.

Several engines, in several processes, may open one database directory at once. An open engine
sees another process's commit at its next query: it reads ``catalog.json`` again when it
changed, opens the tables whose version changed and forgets the dropped ones. A table whose
files cannot be opened is recorded as damaged, with the reason; the others serve.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

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
        self.catalog = normalize_identifier(catalog, label="catalog")
        self.schema = normalize_identifier(schema, label="schema")
        self._installed = installed
        self._forgotten = forgotten
        self.lock = threading.RLock()
        self.tables: dict[str, LoadedTable] = {}
        self.damaged: dict[str, str] = {}
        self.entries: dict[str, TableEntry] = {}
        self._signature: tuple[int, int, int] | None = None

    def table_name(self, name: str) -> TableName:
        """``name`` completed with this database's catalog and schema."""
        return TableName.parse(name, default_catalog=self.catalog, default_schema=self.schema)

    def refresh(self, *, again: bool = False) -> None:
        """Follow ``catalog.json`` when another writer (or process) committed since it was
        last read (``again``: read it whatever its signature, after this process's own
        commit).

        Raises:
            DatabaseError: the catalog itself cannot be read.
        """
        with self.lock:
            if again:
                self._signature = None
            for _ in range(_REFRESH_ATTEMPTS):
                signature = database.catalog_signature(self.root)
                if signature == self._signature:
                    return
                entries = database.read_catalog(self.root)
                if self._open(entries, signature):
                    self._signature = signature
                    return
            raise DatabaseError(
                f"the database {self.root} changed {_REFRESH_ATTEMPTS} times while it was "
                "being opened; try again"
            )

    def _open(self, entries: dict[str, TableEntry], signature: tuple[int, int, int] | None) -> bool:
        """Hold ``entries`` (read from the catalog at ``signature``) open; ``False`` when a
        version vanished because a newer commit replaced it."""
        for name in [name for name in self.tables if name not in entries]:
            self._forget(name)
        for name in [name for name in self.damaged if name not in entries]:
            del self.damaged[name]
        for name, entry in entries.items():
            current = self.tables.get(name)
            if current is not None and current.entry.version == entry.version:
                continue
            try:
                loaded = open_table(self.root, entry)
            except FileNotFoundError:
                if database.catalog_signature(self.root) != signature:
                    return False  # replaced meanwhile: read the newer catalog
                self._damage(name, f"its version directory {entry.version} is missing")
                continue
            except DatabaseError as error:
                self._damage(name, str(error))
                continue
            self.install(loaded)
        self.entries = dict(entries)
        return True

    def _damage(self, name: str, message: str) -> None:
        self._forget(name)
        self.damaged[name] = message

    def install(self, loaded: LoadedTable) -> None:
        """Hold ``loaded`` open (a version this process has just committed, or read)."""
        with self.lock:
            self._installed(loaded)
            self.tables[loaded.entry.name] = loaded
            self.damaged.pop(loaded.entry.name, None)

    def _forget(self, name: str) -> None:
        self.tables.pop(name, None)
        self._forgotten(name)

    def indexes(self, reference: str | TableName) -> TableIndexes:
        """What the table ``reference`` names can be searched by: its BM25 columns and its
        vector columns.

        Raises:
            EngineError: no such table, or it is damaged.
        """
        entry = self.loaded(reference).entry
        return TableIndexes(
            table=TableName(catalog=self.catalog, schema=self.schema, name=entry.name),
            bm25_columns=entry.text_indexes,
            vectors=tuple(
                VectorIndex(column=v.name, source_column=v.source_column, metric=v.metric)
                for v in entry.vector_columns
            ),
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
        import pyarrow.compute as pc

        loaded = self.loaded(reference)
        key = loaded.entry.key_column
        if key is None:
            raise EngineError(
                f"table '{reference}' has no key column: its rows cannot be read by key"
            )
        data = loaded.data
        selected = self.read(reference, columns) if columns is not None else data
        try:
            wanted = pa.array(list(keys), data.schema.field(key).type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
            raise EngineError(f"a key of table '{reference}' cannot be read: {error}") from None
        return selected.filter(pc.is_in(data.column(key), value_set=wanted))

    def loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names.

        Raises:
            EngineError: no such table in this catalog and schema, or it is damaged.
        """
        name = self.table_name(reference) if isinstance(reference, str) else reference
        if (name.catalog, name.schema) == (self.catalog, self.schema):
            loaded = self.tables.get(name.name)
            if loaded is not None:
                return loaded
            if name.name in self.damaged:
                raise EngineError(
                    f"table '{name}' cannot be read: {self.damaged[name.name]}; load it again "
                    "to repair it"
                )
        raise EngineError(f"table '{name}' not found")


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
