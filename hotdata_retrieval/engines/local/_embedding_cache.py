"""The database's embedding cache: one per database and model, shared by every table, written
as a load embeds.

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

Databases written before this cache kept one cache per table and column
(``tables/<table>/embeddings/<column>.<model>.parquet``); a load reads the one of its table and
column, copies its vectors into the shared cache, and removes it.
"""

from __future__ import annotations

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

_SUFFIX = ".parquet"


def cache_directory(root: Path, model: str) -> Path:
    """Where ``model``'s vectors are cached in the database at ``root``."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)[:80]
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
        ``dimensions``), by hash; hashes not cached are absent. Reads only the rows asked for
        from each segment."""
        needed = pa.array(sorted(set(wanted)), type=pa.string())
        found: dict[str, np.ndarray] = {}
        if not len(needed) or not self.directory.is_dir():
            return found
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            segment = self._read(path, needed)
            if segment is not None:
                found.update(segment)
        return found

    def _read(self, path: Path, needed: pa.Array) -> dict[str, np.ndarray] | None:
        """The rows of segment ``path`` whose hash is in ``needed``; ``None`` (and a warning)
        for a segment that is gone, unreadable or does not fit the model."""
        try:
            table = pq.read_table(path)
            hashes = table.column("text_hash")
            rows = pc.indices_nonzero(pc.is_in(hashes, value_set=needed))
            hashes = hashes.take(rows).to_pylist()
            vectors = table.column("vector").take(rows).combine_chunks()
            flat = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        except FileNotFoundError:
            return None  # merged into another segment since it was listed
        except Exception as error:  # any damage: the cache is only a cache
            logger.warning("removing the unreadable embedding cache segment %s: %s", path, error)
            path.unlink(missing_ok=True)  # whole segments are renamed in: this one is damaged
            return None
        if flat.size != len(hashes) * self.dimensions or not np.isfinite(flat).all():
            logger.warning("skipping the embedding cache segment %s: it does not fit", path)
            return None
        return dict(zip(hashes, flat.reshape(len(hashes), self.dimensions)))

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
            pq.write_table(table, temporary)
            os.replace(temporary, path)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            logger.warning("cannot write the embedding cache %s: %s", self.directory, error)
            return None
        return path

    def merge_small_segments(self) -> None:
        """Merge the segments under :data:`MERGE_BYTES` into one once there are more than
        :data:`MERGE_SEGMENTS` (each text once), writing the merged segment before removing
        the merged ones."""
        if not self.directory.is_dir():
            return
        small = []
        for path in sorted(self.directory.glob(f"*{_SUFFIX}")):
            try:
                if path.stat().st_size < MERGE_BYTES:
                    small.append(path)
            except FileNotFoundError:
                continue
        if len(small) <= MERGE_SEGMENTS:
            return
        merged: dict[str, np.ndarray] = {}
        readable = []
        for path in small:
            try:
                table = pq.read_table(path)
            except FileNotFoundError:
                continue
            except Exception as error:
                logger.warning(
                    "removing the unreadable embedding cache segment %s: %s", path, error
                )
                readable.append(path)  # nothing in it can be read: removed with the rest
                continue
            flat = np.asarray(
                table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                dtype=np.float32,
            )
            hashes = table.column("text_hash").to_pylist()
            if flat.size == len(hashes) * self.dimensions:
                merged.update(zip(hashes, flat.reshape(len(hashes), self.dimensions)))
            readable.append(path)
        if merged:
            hashes = list(merged)
            if self.add(hashes, np.stack([merged[value] for value in hashes])) is None:
                return  # keep the segments: their vectors are in no other
        for path in readable:
            path.unlink(missing_ok=True)
        for stale in self.directory.glob(".*.tmp"):  # left by a process killed mid-write
            try:
                if time.time() - stale.stat().st_mtime > 3600:
                    stale.unlink(missing_ok=True)
            except FileNotFoundError:
                continue

    def adopt_legacy(self, table: str, column: str) -> None:
        """Copy the vectors of ``table.column``'s per-table cache (written before the shared
        cache) into this cache, then remove it; an unreadable one is removed too."""
        path = legacy_cache_path(self.root, table, column, self.model)
        if not path.is_file():
            return
        try:
            legacy = pq.read_table(path)
            hashes = legacy.column("text_hash").to_pylist()
            flat = np.asarray(
                legacy.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
                dtype=np.float32,
            )
        except Exception as error:  # any damage: the cache is only a cache
            logger.warning("discarding the unreadable embedding cache %s: %s", path, error)
            path.unlink(missing_ok=True)
            return
        if flat.size == len(hashes) * self.dimensions and np.isfinite(flat).all():
            self.add(hashes, flat.reshape(len(hashes), self.dimensions))
        path.unlink(missing_ok=True)

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
    texts = "text" if count == 1 else "texts"
    rows = "row" if len(hashes) == 1 else "rows"
    return f"{label} ({count} {new}{texts} of {len(hashes)} {rows})"


def embed_column(
    root: Path,
    embedder: Any,
    table: str,
    column: str,
    texts: list[Any],
    progress: bool,
    batch_size: int,
) -> np.ndarray:
    """The column's vectors: those of texts the same model embedded before, in any table of
    the database, read from its embedding cache; the rest embedded in batches and written to
    the cache as they come (:mod:`~hotdata_retrieval.engines.local._embedding_cache`)."""
    from hotdata_retrieval.embed import embed_in_batches

    model = str(embedder.name)
    dimensions = int(embedder.dimensions)
    hashes = database.text_hashes([t if isinstance(t, str) else None for t in texts])
    cache = EmbeddingCache(root, model, dimensions)
    cache.adopt_legacy(table, column)
    cached = cache.vectors(h for h in hashes if h)
    missing = sorted({h for h in hashes if h and h not in cached})
    first_text = {h: t for h, t in zip(hashes, texts) if h}
    if missing:
        with cache.pending() as pending:
            fresh = embed_in_batches(
                embedder,
                [first_text[h] for h in missing],
                batch_size=batch_size,
                progress=progress,
                description=embedding_label(table, column, hashes, len(missing)),
                on_batch=lambda start, vectors: pending.add(
                    missing[start : start + len(vectors)], vectors
                ),
            )
        cached.update(zip(missing, fresh))
    matrix = np.zeros((len(texts), dimensions), dtype=np.float32)
    for row, value in enumerate(hashes):
        if value:
            matrix[row] = cached[value]
    return matrix
