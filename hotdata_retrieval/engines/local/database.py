"""The local database directory: tables as Parquet, their BM25 indexes and embeddings.

Layout::

    <database>/
      catalog.json                      which version of each table is current, and its indexes
      tables/<table>/<version>/data.parquet
      tables/<table>/<version>/bm25/<column>/          tantivy index, one per text column
      embeddings/<model>-<digest>/<segment>.parquet   cache: text hash -> vector, every table

      staging/<id>/                     a version being written (never read)
      .writer.lock                      held by the one process writing at a time

Durability (``docs/engines.md``):

- **Writers take turns.** A load or drop holds the database's writer lock (``filelock``, an
  OS-level lock released when its process dies) from before it reads the catalog until after
  it commits; a second writer waits for it. Readers never wait.
- **A commit is a compare-and-swap.** Under the lock the catalog is read again, each table the
  write touches must still be at the version the write started from (else
  :class:`ConcurrentWriteError`), and only those tables change: a writer never writes back a
  catalog it read earlier, so concurrent loads of different tables both land.
- **The commit is one rename.** New versions are written complete under ``staging/``, every
  file and directory of them flushed to disk (``fsync``), moved into ``tables/`` (the
  directories that gained them flushed too), then ``catalog.json`` is replaced atomically
  (``os.replace``) and the database directory flushed: a crash or a power loss at any point
  leaves the previous catalog, and so every previous table, intact, or the new one with
  every file it names on disk. A multi-table load commits all its tables in that one rename.
- **Once the catalog is renamed, the write is committed.** An exception after the rename (an
  interrupt, ``SystemExit``, ``MemoryError``) propagates, but nothing undoes the write; before
  it, the moved versions are removed again and the previous tables stay.
- **Old versions go only after the commit**, and a reader that finds its version gone reads
  the catalog again (:class:`~hotdata_retrieval.engines.local.LocalEngine` does so before
  each query when ``catalog.json`` changed).

Vectors are cached by the hash of their source text and the model's name, once per database
(:mod:`~hotdata_retrieval.engines.local._embedding_cache`): a text any table's load embedded is
never embedded again by that model, and a load writes what it embeds as it goes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from hotdata_retrieval.engines.hnsw import HnswSettings
from hotdata_retrieval.errors import ConcurrentWriteError as ConcurrentWriteError
from hotdata_retrieval.errors import DatabaseError as DatabaseError

CATALOG_FILE = "catalog.json"
FORMAT_VERSION = 1
LOCK_FILE = ".writer.lock"
STAGING = "staging"
STALE_STAGING_SECONDS = 24 * 3600
"""A staging directory this old belongs to a load that died; the next commit removes it."""

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class VectorColumn:
    """A stored embedding column.

    Attributes:
        name: the vector column (``list<float32>``).
        source_column: the text column it embeds (what ``vector_search`` is called on).
        model: the embedder's name; queries must be embedded by the same model.
        dimensions: the vectors' length.
        metric: the metric ``vector_search`` ranks by (``cosine``).
    """

    name: str
    source_column: str
    model: str
    dimensions: int
    metric: str = "cosine"


@attrs.frozen(kw_only=True)
class AnnIndex:
    """An approximate nearest-neighbour (HNSW) index of one vector column, stored with the
    table version at ``tables/<table>/<version>/hnsw/<column>.usearch``.

    Attributes:
        column: the vector column.
        function: the distance function it serves (``cosine_distance``, ``l2_distance`` or
            ``negative_dot_product``); a query by another function scans exactly.
    """

    column: str
    function: str


@attrs.frozen(kw_only=True)
class TableEntry:
    """One table of the database, as recorded in ``catalog.json``.

    ``hnsw_settings`` are the settings its HNSW indexes were built with, which a row change
    rebuilds them with; ``None`` when it has none, or when the catalog was written before
    settings were recorded (the indexes were then built with the defaults).

    ``text_analysis`` is the :data:`~hotdata_retrieval.analysis.TEXT_ANALYSIS` its BM25
    indexes were built by; ``None`` without one, or when the catalog was written before it
    was recorded (by Lucene's English stop words).

    ``vector_metric`` is the metric its caller-given vector columns are searched by (the
    load's ``vector_metric``), which a row change checks the new rows against; ``None``
    without such a column, or when the catalog was written before it was recorded (then the
    metric of its HNSW index, else cosine).

    ``vector_norms`` records, for each caller-given vector column, its rows whose Float32
    squared norm is non-zero and no normal Float32 number, which a cosine search of the
    column is refused for (:class:`~hotdata_retrieval.engines._vector_norms.OutsideNorms`,
    as its JSON text), computed from every row of the version; ``None`` when the catalog
    was written before it was recorded (a cosine search then reads the column).
    """

    name: str
    version: str
    rows: int
    key_column: str | None
    columns: tuple[str, ...]
    text_indexes: tuple[str, ...] = ()
    vector_columns: tuple[VectorColumn, ...] = ()
    ann_indexes: tuple[AnnIndex, ...] = ()
    hnsw_settings: HnswSettings | None = None
    text_analysis: str | None = None
    vector_metric: str | None = None
    vector_norms: tuple[tuple[str, str], ...] | None = None

    @property
    def caller_metric(self) -> str:
        """The metric of the table's caller-given vector columns (the load's
        ``vector_metric``): :attr:`vector_metric`, else (a catalog written before it was
        recorded) the metric its HNSW index of such a column serves, else ``cosine``."""
        from hotdata_retrieval.compile import HOTDATA

        if self.vector_metric is not None:
            return self.vector_metric
        embedded = {vector.name for vector in self.vector_columns}
        for index in self.ann_indexes:
            if index.column not in embedded:
                for metric, function in HOTDATA.distance_functions.items():
                    if function == index.function:
                        return metric.value
        return "cosine"

    def ann_index(self, column: str) -> AnnIndex | None:
        """The HNSW index of ``column``, if it has one."""
        return next((index for index in self.ann_indexes if index.column == column), None)

    def vector_for_source(self, source_column: str) -> VectorColumn | None:
        """The vector column embedding ``source_column``, if any."""
        for vector in self.vector_columns:
            if vector.source_column == source_column:
                return vector
        return None


def _entry_to_json(entry: TableEntry) -> dict[str, Any]:
    document = attrs.asdict(entry, recurse=True)
    for optional in ("hnsw_settings", "text_analysis", "vector_metric", "vector_norms"):
        if document[optional] is None:
            del document[optional]  # as a catalog written before it was recorded
    if entry.vector_norms is not None:
        document["vector_norms"] = dict(entry.vector_norms)
    return document


def _entry_from_json(data: Mapping[str, Any]) -> TableEntry:
    vectors = tuple(VectorColumn(**vector) for vector in data.get("vector_columns", ()))
    settings = data.get("hnsw_settings")
    norms = data.get("vector_norms")
    return TableEntry(
        name=data["name"],
        version=data["version"],
        rows=int(data["rows"]),
        key_column=data.get("key_column"),
        columns=tuple(data["columns"]),
        text_indexes=tuple(data.get("text_indexes", ())),
        vector_columns=vectors,
        ann_indexes=tuple(AnnIndex(**index) for index in data.get("ann_indexes", ())),
        hnsw_settings=None if settings is None else HnswSettings.from_document(settings),
        text_analysis=data.get("text_analysis"),
        vector_metric=data.get("vector_metric"),
        vector_norms=None if norms is None else tuple((str(c), str(t)) for c, t in norms.items()),
    )


def read_catalog(root: Path) -> dict[str, TableEntry]:
    """The tables recorded in ``root/catalog.json`` (none if the file does not exist).

    Raises:
        DatabaseError: the file exists but cannot be read.
    """
    path = root / CATALOG_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
            raise ValueError("expected an object with a 'tables' object")
        version = data.get("format", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ValueError(
                f"format {version!r}; this version of hotdata-retrieval reads format "
                f"{FORMAT_VERSION}"
            )
        tables = {}
        for name, entry in data["tables"].items():
            if not isinstance(entry, dict):
                raise ValueError(f"table {name!r} is not an object")
            tables[name] = _entry_from_json(entry)
        return tables
    except (OSError, ValueError, KeyError, TypeError, AttributeError, OverflowError) as error:
        message = " ".join(str(error).split()) or type(error).__name__
        raise DatabaseError(f"cannot read the database catalog {path}: {message}") from None
    except RecursionError:
        raise DatabaseError(
            f"cannot read the database catalog {path}: it is nested too deeply"
        ) from None


def catalog_signature(root: Path | str) -> tuple[int, int, int] | None:
    """What identifies the current ``catalog.json`` (inode, size, modification time): it
    changes with every commit, since a commit replaces the file. ``None``: no catalog."""
    return file_signature(os.path.join(root, CATALOG_FILE))


def file_signature(path: str) -> tuple[int, int, int] | None:
    """:func:`catalog_signature` of the catalog file at ``path`` (``root/catalog.json``,
    joined once by a caller that asks often: every search asks)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)


FAULT_POINTS = (
    "staged_synced",
    "moved",
    "moves_synced",
    "catalog_written",
    "catalog_replaced",
    "catalog_synced",
    "published",
)
"""The steps of :func:`commit`, in order, at which :data:`fault_hook` is called."""

fault_hook: Callable[[str], None] | None = None
"""Called with each :data:`FAULT_POINTS` name as :func:`commit` reaches it (``None``: not
called). The durability tests raise, or kill the process, there."""


def _reach(point: str) -> None:
    if fault_hook is not None:
        fault_hook(point)


def _fsync_directory(directory: Path) -> None:
    """Flush ``directory``'s entries to disk.

    Raises:
        OSError: the flush failed (a failing disk: ``EIO``). A directory the platform cannot
            open is skipped: not every platform opens one.
    """
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_tree(directory: Path) -> None:
    """Flush every file under ``directory``, then every directory from the deepest up, to
    disk: after it a power loss cannot leave a name whose blocks were never written.

    Raises:
        OSError: a file cannot be opened or flushed (a full or failing disk).
    """
    for folder, _, files in os.walk(directory, topdown=False):
        for name in files:
            descriptor = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        _fsync_directory(Path(folder))


def _write_catalog(root: Path, tables: Mapping[str, TableEntry]) -> None:
    document = {
        "format": FORMAT_VERSION,
        "tables": {name: _entry_to_json(entry) for name, entry in sorted(tables.items())},
    }
    temporary = root / f".{CATALOG_FILE}.{uuid.uuid4().hex}"
    try:
        with temporary.open("w", encoding="utf-8") as handle:
            handle.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        _reach("catalog_written")
        os.replace(temporary, root / CATALOG_FILE)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise DatabaseError(
            f"cannot write the database catalog {root / CATALOG_FILE}: "
            f"{error.strerror or error}; the previous catalog is intact"
        ) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    _reach("catalog_replaced")
    try:
        _fsync_directory(root)
    except OSError as error:
        raise DatabaseError(
            f"the write is committed, but {root} could not be flushed to disk: "
            f"{error.strerror or error}; a power loss now may undo it"
        ) from None
    _reach("catalog_synced")


@contextlib.contextmanager
def writer_lock(root: Path, *, timeout: float | None = None) -> Iterator[None]:
    """Hold the database's writer lock: one writer at a time, across processes.

    The lock is an OS file lock (``filelock``) on ``<root>/.writer.lock``; the OS releases it
    when the holding process dies, so a killed load never blocks the database.

    Args:
        timeout: seconds to wait for another writer (``None``: wait as long as it takes).

    Raises:
        DatabaseError: the lock was not free within ``timeout``.
    """
    from filelock import FileLock, Timeout

    lock = FileLock(str(root / LOCK_FILE), timeout=-1 if timeout is None else timeout)
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise DatabaseError(
            f"another process is writing to the database {root}; try again when it finishes"
        ) from None
    except OSError as error:
        raise DatabaseError(
            f"cannot write to the database {root}: {error.strerror or error}"
        ) from None
    try:
        yield
    finally:
        lock.release()


def new_staging_directory(root: Path) -> Path:
    """A fresh, empty directory under ``staging/`` to write a table version into.

    Raises:
        DatabaseError: it cannot be created (no space or inodes left, a read-only disk).
    """
    directory = root / STAGING / uuid.uuid4().hex
    try:
        directory.mkdir(parents=True)
    except OSError as error:
        raise DatabaseError(
            f"cannot create {directory}: {error.strerror or error}; nothing was written"
        ) from None
    return directory


def commit(
    root: Path,
    expected: Mapping[str, str | None],
    written: Mapping[str, tuple[TableEntry, Path]],
    dropped: Sequence[str] = (),
) -> dict[str, TableEntry]:
    """Publish a write: move each staged version into place and replace the catalog once.

    Call it holding :func:`writer_lock`. The catalog is read again here; every table in
    ``expected`` must still be at the version given (``None``: absent), and only the tables in
    ``written`` and ``dropped`` change — the rest of the catalog is whatever it holds now.

    Args:
        expected: table → the version the write started from.
        written: table → (its new entry, the staging directory holding that version).
        dropped: tables to remove.

    Returns:
        The catalog as committed.

    Raises:
        ConcurrentWriteError: a table moved on since the write started.
        DatabaseError: the catalog or a version cannot be written.
    """
    current = read_catalog(root)
    for table, version in expected.items():
        found = current[table].version if table in current else None
        if found != version:
            raise ConcurrentWriteError(table, version, found)
    entries = {name: entry for name, entry in current.items() if name not in dropped}
    moved: list[Path] = []
    try:
        try:
            for _, staged in written.values():
                sync_tree(staged)
        except OSError as error:
            raise DatabaseError(
                f"cannot write the new version to disk: {error.strerror or error}; nothing "
                "was committed, the previous version is intact"
            ) from None
        _reach("staged_synced")
        try:
            for table, (entry, staged) in written.items():
                target = version_directory(root, entry)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staged, target)
                moved.append(target)
                entries[table] = entry
                _reach("moved")
            for directory in {*(target.parent for target in moved), root / "tables", root}:
                _fsync_directory(directory)
        except OSError as error:
            raise DatabaseError(
                f"cannot move the new version into place: {error.strerror or error}; "
                "nothing was committed, the previous version is intact"
            ) from None
        _reach("moves_synced")
        _write_catalog(root, entries)
    except BaseException:
        if not _names_any(root, written):
            for directory in moved:
                shutil.rmtree(directory, ignore_errors=True)
        raise
    _reach("published")
    remove_stale_versions(root, entries)
    return entries


def _names_any(root: Path, written: Mapping[str, tuple[TableEntry, Path]]) -> bool:
    """Whether the catalog on disk names any of the versions being written: then the commit
    happened, and nothing of it may be removed. A catalog that cannot be read counts as
    naming them (a directory left over is harmless; one removed under the catalog is not)."""
    try:
        current = read_catalog(root)
    except BaseException:
        return True
    return any(
        table in current and current[table].version == entry.version
        for table, (entry, _) in written.items()
    )


def ann_index_path(directory: Path, column: str) -> Path:
    """Where a version directory keeps the HNSW index of ``column``."""
    return directory / "hnsw" / f"{column}.usearch"


def version_directory(root: Path, entry: TableEntry) -> Path:
    """Where the current version of ``entry`` lives."""
    return root / "tables" / entry.name / entry.version


def remove_stale_versions(root: Path, tables: Mapping[str, TableEntry]) -> None:
    """Delete version directories the catalog no longer points to, and staging directories
    of loads that died (older than :data:`STALE_STAGING_SECONDS`). Call it holding
    :func:`writer_lock`: a version being written lives under ``staging/``, never here."""
    staging = root / STAGING
    if staging.exists():
        for child in staging.iterdir():
            with contextlib.suppress(OSError):
                if time.time() - child.stat().st_mtime > STALE_STAGING_SECONDS:
                    shutil.rmtree(child, ignore_errors=True)
    base = root / "tables"
    if not base.exists():
        return
    for table_directory in base.iterdir():
        if not table_directory.is_dir():
            continue
        current = tables.get(table_directory.name)
        for child in table_directory.iterdir():
            if child.name == "embeddings":
                continue
            if current is None or child.name != current.version:
                shutil.rmtree(child, ignore_errors=True)
        if current is None:
            shutil.rmtree(table_directory, ignore_errors=True)


def text_hashes(texts: Sequence[str | None]) -> list[str]:
    """A stable hash of each text (``""`` for a missing one)."""
    return [
        "" if text is None else hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
        for text in texts
    ]
