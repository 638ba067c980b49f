"""The local database directory: tables as Parquet, their BM25 indexes and embeddings.

Layout::

    <database>/
      catalog.json                      which version of each table is current, and its indexes
      tables/<table>/<version>/data.parquet
      tables/<table>/<version>/bm25/<column>/          tantivy index, one per text column
      tables/<table>/embeddings/<column>.<model>.parquet   cache: text hash -> vector

A load writes a complete new version directory, then replaces ``catalog.json`` atomically
(``os.replace``): that rename is the commit. An interrupted load leaves the previous catalog,
and so the previous table, intact; stale version directories are removed on the next load.
Vectors are cached by the hash of their source text and the model's name, so reloading a table
re-embeds only rows whose text changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hotdata_retrieval.errors import HotdataRetrievalError

__all__ = [
    "CATALOG_FILE",
    "DatabaseError",
    "TableEntry",
    "VectorColumn",
    "read_catalog",
    "text_hashes",
    "write_catalog",
]

CATALOG_FILE = "catalog.json"
FORMAT_VERSION = 1


class DatabaseError(HotdataRetrievalError):
    """The local database directory is missing, unreadable or inconsistent."""


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
class TableEntry:
    """One table of the database, as recorded in ``catalog.json``."""

    name: str
    version: str
    rows: int
    key_column: str | None
    columns: tuple[str, ...]
    text_indexes: tuple[str, ...] = ()
    vector_columns: tuple[VectorColumn, ...] = ()

    def vector_for_source(self, source_column: str) -> VectorColumn | None:
        """The vector column embedding ``source_column``, if any."""
        for vector in self.vector_columns:
            if vector.source_column == source_column:
                return vector
        return None


def _entry_to_json(entry: TableEntry) -> dict[str, Any]:
    return attrs.asdict(entry, recurse=True)


def _entry_from_json(data: Mapping[str, Any]) -> TableEntry:
    vectors = tuple(VectorColumn(**vector) for vector in data.get("vector_columns", ()))
    return TableEntry(
        name=data["name"],
        version=data["version"],
        rows=int(data["rows"]),
        key_column=data.get("key_column"),
        columns=tuple(data["columns"]),
        text_indexes=tuple(data.get("text_indexes", ())),
        vector_columns=vectors,
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
        return {name: _entry_from_json(entry) for name, entry in data["tables"].items()}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DatabaseError(f"cannot read the database catalog {path}: {error}") from None


def write_catalog(root: Path, tables: Mapping[str, TableEntry]) -> None:
    """Replace ``root/catalog.json`` atomically."""
    root.mkdir(parents=True, exist_ok=True)
    document = {
        "format": FORMAT_VERSION,
        "tables": {name: _entry_to_json(entry) for name, entry in sorted(tables.items())},
    }
    temporary = root / f".{CATALOG_FILE}.{uuid.uuid4().hex}"
    temporary.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, root / CATALOG_FILE)


def new_version_directory(root: Path, table: str) -> tuple[str, Path]:
    """A fresh, empty version directory for ``table``."""
    version = uuid.uuid4().hex[:16]
    directory = root / "tables" / table / version
    directory.mkdir(parents=True)
    return version, directory


def version_directory(root: Path, entry: TableEntry) -> Path:
    """Where the current version of ``entry`` lives."""
    return root / "tables" / entry.name / entry.version


def remove_stale_versions(root: Path, tables: Mapping[str, TableEntry]) -> None:
    """Delete version directories the catalog no longer points to."""
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


def _cache_path(root: Path, table: str, column: str, model: str) -> Path:
    safe_model = "".join(c if c.isalnum() or c in "-_." else "_" for c in model)
    return root / "tables" / table / "embeddings" / f"{column}.{safe_model}.parquet"


def read_embedding_cache(
    root: Path, table: str, column: str, model: str, dimensions: int
) -> dict[str, np.ndarray]:
    """Cached vectors of ``table.column`` made by ``model``, by text hash."""
    path = _cache_path(root, table, column, model)
    if not path.exists():
        return {}
    cached = pq.read_table(path)
    hashes = cached.column("text_hash").to_pylist()
    vectors = np.asarray(
        cached.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False),
        dtype=np.float32,
    )
    if vectors.size != len(hashes) * dimensions:
        return {}
    matrix = vectors.reshape(len(hashes), dimensions)
    return dict(zip(hashes, matrix))


def write_embedding_cache(
    root: Path, table: str, column: str, model: str, hashes: Sequence[str], vectors: np.ndarray
) -> None:
    """Record the vectors of ``table.column`` by text hash (replacing the cache atomically)."""
    path = _cache_path(root, table, column, model)
    path.parent.mkdir(parents=True, exist_ok=True)
    keep = [i for i, value in enumerate(hashes) if value]
    unique: dict[str, int] = {}
    for i in keep:
        unique.setdefault(hashes[i], i)
    rows = list(unique.values())
    table_data = pa.table(
        {
            "text_hash": pa.array([hashes[i] for i in rows], type=pa.string()),
            "vector": pa.array(list(vectors[rows]), type=pa.list_(pa.float32())),
        }
    )
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    pq.write_table(table_data, temporary)
    os.replace(temporary, path)
