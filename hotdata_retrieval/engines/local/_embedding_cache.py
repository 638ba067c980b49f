"""The embedding caches: one per database and model, shared by every table, and one per user
and model, shared by every database and engine on the machine; written as a load embeds.

A text embedded once by a model is never embedded again by that model in the same database,
whatever table or column it comes from: loading the same texts under a new table name, adding
a column, reloading a table with a few changed rows all read the vectors they already have.

Layout::

    <database>/embeddings/<model>-<digest>/<segment>.parquet   text hash -> vector

``<model>`` is the model's name with unsafe characters replaced, ``<digest>`` the first 12 hex
digits of the BLAKE2b hash of the exact name (so ``a/b`` and ``a_b`` never share a
directory). Each segment holds ``text_hash`` (string, :func:`~hotdata_retrieval.engines.
local.database.text_hashes`) and ``vector`` (``fixed_size_list<float32>[dimensions]``), and
is written complete under a temporary name and renamed into place, so a reader sees a whole
segment or none. A load writes a segment every :data:`FLUSH_TEXTS` texts or
:data:`FLUSH_SECONDS` seconds of embedding, whichever comes first, and the rest when it
stops, by an error or an interrupt too: an interrupted load keeps every batch it embedded
(a process killed outright loses at most the last :data:`FLUSH_SECONDS`). Small segments are
merged into one once there are more than :data:`MERGE_SEGMENTS` of them.

It is only a cache: a segment that cannot be read is removed, one that holds vectors of
another length or non-finite values is skipped, each with a warning (their texts are embedded
again), and a segment that cannot be written costs only time on the next load. Writers need
no lock: segment names are unique, and a merge writes the merged segment before it removes
what it merged, so a text is always in some segment (two merges at once leave a duplicate,
which reads the same).
Removing ``<database>/embeddings`` is always safe.

The user's cache (:func:`machine_cache_root`: ``$HDQ_EMBEDDING_CACHE``, else
``$XDG_CACHE_HOME/hotdata-retrieval``, else ``~/.cache/hotdata-retrieval``; ``off`` turns it
off) has the same layout and rules. Every load — the local engine's and ``hdq load`` into any
store — reads it after the database's own cache and writes what it embeds to both, so a second
database or engine re-embeds nothing. It is bounded: past :func:`machine_cache_bytes` the
segments read least recently are removed (a segment a lookup hits is touched), so it never
holds more than the bound plus one load's segments. Removing it is always safe too.

Databases written before this cache kept one cache per table and column
(``tables/<table>/embeddings/<column>.<model>.parquet``); a load reads the one of its table and
column, copies its vectors into the shared cache, and removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hotdata_retrieval._words import counted
from hotdata_retrieval.embed.protocol import is_embeddable as is_embeddable
from hotdata_retrieval.engines.local import database

logger = logging.getLogger(__name__)

FLUSH_TEXTS = 4096
"""Texts embedded before a segment is written (about a minute of the default model on two
cores)."""

FLUSH_SECONDS = 10.0
"""Seconds of embedding before a segment is written, whatever the count."""

MERGE_SEGMENTS = 32
"""Segments smaller than :data:`MERGE_BYTES` a model's cache holds before they are merged."""

MERGE_BYTES = 16 * 1024 * 1024
"""Segments at least this large are left as they are (a merge reads what it merges into
memory: at most ``MERGE_SEGMENTS * MERGE_BYTES`` of Parquet)."""

ROW_GROUP_ROWS = 8192
"""Rows per Parquet row group of a segment: a lookup reads the vectors of the groups that hold
a hash it asks for, not the whole segment."""

_SUFFIX = ".parquet"


def _remove(path: Path) -> None:
    """Remove ``path`` if it can be (a cache file: one left behind costs only room)."""
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


MACHINE_CACHE_VARIABLE = "HDQ_EMBEDDING_CACHE"
"""The environment variable naming the user's embedding cache directory (``off``: none)."""

MACHINE_CACHE_BYTES_VARIABLE = "HDQ_EMBEDDING_CACHE_MAX_BYTES"
"""The environment variable bounding the user's embedding cache, in bytes."""

DEFAULT_MACHINE_CACHE_BYTES = 4 << 30
"""The user's embedding cache's default bound: 4 GiB, about 2.7 million vectors of 384
float32 components."""

_OFF = frozenset({"", "0", "off", "none", "false", "no"})


def machine_cache_root() -> Path | None:
    """The user's embedding cache directory, shared by every database and engine:
    ``$HDQ_EMBEDDING_CACHE`` when set (``off``, ``0``, ``none`` or empty: no such cache),
    else ``$XDG_CACHE_HOME/hotdata-retrieval`` (XDG Base Directory Specification), else
    ``~/.cache/hotdata-retrieval``."""
    named = os.environ.get(MACHINE_CACHE_VARIABLE)
    if named is not None:
        return None if named.strip().lower() in _OFF else Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hotdata-retrieval"


def machine_cache_bytes() -> int:
    """The bound of the user's embedding cache in bytes: ``$HDQ_EMBEDDING_CACHE_MAX_BYTES``
    when it is a whole number, else :data:`DEFAULT_MACHINE_CACHE_BYTES`."""
    value = os.environ.get(MACHINE_CACHE_BYTES_VARIABLE, "")
    return int(value) if value.strip().isdigit() else DEFAULT_MACHINE_CACHE_BYTES


def evict_least_recent(root: Path, max_bytes: int) -> None:
    """Remove the segments of every model's cache under ``root`` read or written least
    recently until they hold at most ``max_bytes`` (a segment removed under a reader is read
    as gone: its texts are embedded again)."""
    segments = []
    for path in (root / "embeddings").glob(f"*/*{_SUFFIX}"):
        with contextlib.suppress(OSError):
            status = path.stat()
            segments.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in segments)
    for _, size, path in sorted(segments):
        if total <= max_bytes:
            break
        _remove(path)
        total -= size


def cache_directory(root: Path, model: str) -> Path:
    """Where ``model``'s vectors are cached in the database at ``root``: at most 80 ASCII
    characters of its name and a digest of the whole name (a directory name fits every file
    system's 255-byte limit, whatever the model is called)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in model)
    safe = safe[:80]
    digest = hashlib.blake2b(model.encode("utf-8"), digest_size=6).hexdigest()
    return root / "embeddings" / f"{safe}-{digest}"


def legacy_cache_path(root: Path, table: str, column: str, model: str) -> Path:
    """The per-table cache databases kept before the shared one."""
    safe_model = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
    return root / "tables" / table / "embeddings" / f"{column}.{safe_model}.parquet"


class EmbeddingCache:
    """One model's cached vectors in one database (see the module docstring).

    Args:
        root: the database directory.
        model: the embedding model's name (``Embedder.name``).
        dimensions: its vectors' length; a segment of another length is skipped.
    """

    def __init__(self, root: Path, model: str, dimensions: int) -> None:
        self.root = root
        self.model = model
        self.dimensions = dimensions
        self.directory = cache_directory(root, model)

    def vectors(self, wanted: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors of the text hashes in ``wanted`` (float32 rows of
        ``dimensions``), by hash; hashes not cached are absent. From each segment only the
        hash column is read whole; vectors only from the row groups (:data:`ROW_GROUP_ROWS`
        rows each) that hold a hash asked for."""
        needed = pa.array(sorted(set(wanted)), type=pa.string())
        found: dict[str, np.ndarray] = {}
        if not len(needed) or not self.directory.is_dir():
            return found
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            found.update(self._read(path, needed))
        return found

    def _read(self, path: Path, needed: pa.Array) -> dict[str, np.ndarray]:
        """The rows of segment ``path`` whose hash is in ``needed``: none (and a warning) for a
        segment that is gone, unreadable (removed: segments are renamed in whole, so it is
        damaged) or not of the model's vectors."""
        try:
            segment = pq.ParquetFile(path)
            hashes = segment.read(columns=["text_hash"]).column(0)
            rows = np.asarray(pc.indices_nonzero(pc.is_in(hashes, value_set=needed)))
            if not rows.size:
                return {}
            sizes = [segment.metadata.row_group(g).num_rows for g in range(segment.num_row_groups)]
            starts = np.concatenate([[0], np.cumsum(sizes)])
            groups = np.unique(np.searchsorted(starts, rows, side="right") - 1)
            vectors = segment.read_row_groups(groups.tolist(), columns=["vector"]).column(0)
            read_starts = np.concatenate([[0], np.cumsum([sizes[g] for g in groups])])
            positions = read_starts[
                np.searchsorted(groups, np.searchsorted(starts, rows, "right") - 1)
            ]
            positions = positions + rows - starts[np.searchsorted(starts, rows, side="right") - 1]
            matrix = self._matrix(vectors.take(pa.array(positions, pa.int64())))
            keys = hashes.take(pa.array(rows, pa.int64())).to_pylist()
            with contextlib.suppress(OSError):
                os.utime(path)  # read now: the last a bounded cache evicts
        except FileNotFoundError:
            return {}  # merged into another segment since it was listed
        except Exception as error:  # any damage: the cache is only a cache
            logger.warning("removing the unreadable embedding cache segment %s: %s", path, error)
            _remove(path)
            return {}
        if matrix is None:
            logger.warning("skipping the embedding cache segment %s: not this model's", path)
            return {}
        return dict(zip(keys, matrix))

    def _matrix(self, vectors: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
        """``vectors`` (a list column) as a float32 ``(rows, dimensions)`` matrix, or ``None``
        unless every row is a list of exactly ``dimensions`` finite numbers (a flat count
        alone would let one row's values spill into the next's)."""
        if isinstance(vectors, pa.ChunkedArray):
            vectors = vectors.combine_chunks()
        kind = vectors.type
        if not (pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind)):
            return None
        if vectors.null_count or (
            len(vectors)
            and pc.any(pc.not_equal(pc.list_value_length(vectors), self.dimensions)).as_py()
        ):
            return None
        flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        if flat.size != len(vectors) * self.dimensions or not np.isfinite(flat).all():
            return None
        return flat.reshape(len(vectors), self.dimensions)

    def add(self, hashes: Sequence[str], vectors: np.ndarray) -> Path | None:
        """Write one segment of ``vectors`` (``(len(hashes), dimensions)``) by ``hashes`` and
        return its path; a write that fails is logged (``None``) and costs only time on a
        later load."""
        if not len(hashes):
            return None
        table = pa.table(
            {
                "text_hash": pa.array(list(hashes), type=pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)),
                    self.dimensions,
                ),
            }
        )
        return self._write(table)

    def _write(self, table: pa.Table) -> Path | None:
        name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"
        path = self.directory / f"{name}{_SUFFIX}"
        temporary = self.directory / f".{name}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, temporary, row_group_size=ROW_GROUP_ROWS)
            os.replace(temporary, path)
        except OSError as error:  # a full disk, a read-only directory: the load goes on
            _remove(temporary)
            logger.warning("cannot write the embedding cache %s: %s", self.directory, error)
            return None
        return path

    def merge_small_segments(self) -> None:
        """Merge the segments under :data:`MERGE_BYTES` into one once there are more than
        :data:`MERGE_SEGMENTS` (each text once), writing the merged segment before removing
        the merged ones. Nothing it cannot do stops the load that asked (a failure is
        logged)."""
        try:
            self._merge_small_segments()
        except OSError as error:
            logger.warning("cannot merge the embedding cache %s: %s", self.directory, error)

    def _merge_small_segments(self) -> None:
        if not self.directory.is_dir():
            return
        small = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_size < MERGE_BYTES:
                    small.append(path)
        if len(small) <= MERGE_SEGMENTS:
            return
        merged: dict[str, np.ndarray] = {}
        done = []
        for path in small:
            try:
                table = pq.read_table(path)
                matrix = self._matrix(table.column("vector"))
                hashes = table.column("text_hash").to_pylist()
            except FileNotFoundError:
                continue
            except Exception as error:
                logger.warning(
                    "removing the unreadable embedding cache segment %s: %s", path, error
                )
                done.append(path)  # nothing in it can be read: removed with the rest
                continue
            if matrix is not None:  # another model's vectors stay where they are
                merged.update(zip(hashes, matrix))
                done.append(path)
        if merged:
            hashes = list(merged)
            if self.add(hashes, np.stack([merged[value] for value in hashes])) is None:
                return  # keep the segments: their vectors are in no other
        for path in done:
            _remove(path)
        for stale in self.directory.glob(".*.tmp"):  # left by a process killed mid-write
            with contextlib.suppress(OSError):
                if time.time() - stale.stat().st_mtime > 3600:
                    stale.unlink()

    def adopt_legacy(self, table: str, column: str) -> None:
        """Copy the vectors of ``table.column``'s per-table cache (written before the shared
        cache) into this cache, then remove it; an unreadable one is removed too."""
        path = legacy_cache_path(self.root, table, column, self.model)
        if not path.is_file():
            return
        try:
            legacy = pq.read_table(path)
            hashes = legacy.column("text_hash").to_pylist()
            matrix = self._matrix(legacy.column("vector"))
        except Exception as error:  # any damage: the cache is only a cache
            logger.warning("discarding the unreadable embedding cache %s: %s", path, error)
            _remove(path)
            return
        if matrix is not None and self.add(hashes, matrix) is None:
            return  # kept where it is: the shared cache cannot be written
        _remove(path)

    def pending(self) -> PendingVectors:
        """A buffer of freshly embedded vectors that writes itself as segments (see
        :class:`PendingVectors`)."""
        return PendingVectors(self)


class PendingVectors:
    """Vectors embedded by a load, written to the cache every :data:`FLUSH_TEXTS` texts or
    :data:`FLUSH_SECONDS` seconds, and the rest on leaving the ``with`` block, however it is
    left (an error or an interrupt too)."""

    def __init__(self, cache: EmbeddingCache) -> None:
        self._cache = cache
        self._hashes: list[str] = []
        self._vectors: list[np.ndarray] = []
        self._since = time.monotonic()

    def __enter__(self) -> PendingVectors:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.flush()
        self._cache.merge_small_segments()

    def add(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors`` (one row per hash) and write them when a threshold is reached."""
        self._hashes.extend(hashes)
        self._vectors.append(np.array(vectors, dtype=np.float32))
        if len(self._hashes) >= FLUSH_TEXTS or time.monotonic() - self._since >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write what is kept as one segment."""
        if self._hashes:
            self._cache.add(self._hashes, np.concatenate(self._vectors))
        self._hashes, self._vectors = [], []
        self._since = time.monotonic()


def embedding_label(table: str, column: str, hashes: Sequence[str | None], count: int) -> str:
    """The progress bar's label for embedding ``count`` texts of a column whose rows have
    ``hashes`` (``None`` for a null). The bar counts the distinct texts not embedded before,
    so when that is not the row count the label says both: ``embedding tickets.body (143 texts
    of 144 rows)``, or ``(12 new texts of 5183 rows)`` when the others were embedded before."""
    label = f"embedding {table}.{column}"
    if count == len(hashes):
        return label
    distinct = len({value for value in hashes if value})
    new = "new " if count < distinct else ""
    return f"{label} ({counted(count, new + 'text')} of {counted(len(hashes), 'row')})"


def embed_column(
    root: Path | None,
    embedder: Any,
    table: str,
    column: str,
    texts: Sequence[Any],
    progress: bool,
    batch_size: int,
) -> np.ndarray:
    """The column's vectors: those of texts the same model embedded before, read from the
    database's embedding cache (``root``; ``None`` for a store, which keeps none) and then the
    user's (:func:`machine_cache_root`); the rest embedded in batches and written to both as
    they come (module docstring). A NULL, empty or whitespace-only text gets a zero row here
    (its vector is NULL: :func:`~hotdata_retrieval.embed.is_embeddable`).

    Returns:
        A float32 array of shape ``(len(texts), embedder.dimensions)``.
    """
    from hotdata_retrieval.embed import embed_in_batches

    model = str(embedder.name)
    dimensions = int(embedder.dimensions)
    hashes = database.text_hashes([t if is_embeddable(t) else None for t in texts])
    caches = []
    if root is not None:
        own = EmbeddingCache(root, model, dimensions)
        own.adopt_legacy(table, column)
        caches.append(own)
    shared_root = machine_cache_root()
    if shared_root is not None and shared_root != root:
        caches.append(EmbeddingCache(shared_root, model, dimensions))
    wanted = {h for h in hashes if h}
    cached: dict[str, np.ndarray] = {}
    for cache in caches:
        found = cache.vectors(wanted - cached.keys())
        if cache is not caches[0] and found and root is not None:
            caches[0].add(list(found), np.stack(list(found.values())))  # the database's own
        cached.update(found)
    missing = sorted(wanted - cached.keys())
    first_text = {h: t for h, t in zip(hashes, texts) if h}
    if missing:
        with contextlib.ExitStack() as stack:
            pending = [stack.enter_context(cache.pending()) for cache in caches]

            def keep(start: int, vectors: np.ndarray) -> None:
                for each in pending:
                    each.add(missing[start : start + len(vectors)], vectors)

            fresh = embed_in_batches(
                embedder,
                [first_text[h] for h in missing],
                batch_size=batch_size,
                progress=progress,
                description=embedding_label(table, column, hashes, len(missing)),
                on_batch=keep,
            )
        cached.update(zip(missing, fresh))
        if shared_root is not None and shared_root != root:
            evict_least_recent(shared_root, machine_cache_bytes())
    matrix = np.zeros((len(texts), dimensions), dtype=np.float32)
    for row, value in enumerate(hashes):
        if value:
            matrix[row] = cached[value]
    return matrix


def embedded_vectors(texts: Sequence[Any], matrix: np.ndarray) -> pa.FixedSizeListArray:
    """The vector column of ``texts`` embedded as ``matrix`` (:func:`embed_column`'s, one
    row a text): float32 vectors of the embedder's length, NULL where a text is not
    embeddable (:func:`~hotdata_retrieval.embed.is_embeddable`). A fixed-size list, so the
    column's type keeps its length when no text is embeddable (every text empty or NULL):
    every engine's load reads the length from it
    (:func:`~hotdata_retrieval.engines.store.loaded_vector_dimensions`)."""
    missing = pa.array([not is_embeddable(text) for text in texts], type=pa.bool_())
    return pa.FixedSizeListArray.from_arrays(
        pa.array(matrix.reshape(-1), type=pa.float32()), matrix.shape[1], mask=missing
    )
