"""The index catalog the lint rules read: which indexes exist, and which key columns are unique.

The classes live in :mod:`hotdata_retrieval.indexes`, beside the engines' view of a table's
indexes, so that engines and the router need not import the linter; this module re-exports
them under their old import path.
"""

from __future__ import annotations

from hotdata_retrieval.indexes import (
    CATALOG_JSON_SCHEMA,
    CATALOG_VERSION,
    IndexCatalog,
    IndexEntry,
    IndexKind,
    IndexStatus,
    TableIndexes,
    TableKeys,
    VectorIndex,
)

__all__ = [
    "CATALOG_JSON_SCHEMA",
    "CATALOG_VERSION",
    "IndexCatalog",
    "IndexEntry",
    "IndexKind",
    "IndexStatus",
    "TableKeys",
    "TableIndexes",
    "VectorIndex",
]
