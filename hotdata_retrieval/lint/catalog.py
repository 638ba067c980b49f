"""The index catalog the lint rules read: which indexes exist, and which key columns are unique.

The classes live in :mod:`hotdata_retrieval.indexes`, beside the engines' view of a table's
indexes, so that engines and the router need not import the linter; this module re-exports
them under their old import path.
"""

from __future__ import annotations

from hotdata_retrieval.indexes import (
    CATALOG_JSON_SCHEMA as CATALOG_JSON_SCHEMA,
)
from hotdata_retrieval.indexes import (
    CATALOG_VERSION as CATALOG_VERSION,
)
from hotdata_retrieval.indexes import (
    IndexCatalog as IndexCatalog,
)
from hotdata_retrieval.indexes import (
    IndexEntry as IndexEntry,
)
from hotdata_retrieval.indexes import (
    IndexKind as IndexKind,
)
from hotdata_retrieval.indexes import (
    IndexStatus as IndexStatus,
)
from hotdata_retrieval.indexes import (
    TableIndexes as TableIndexes,
)
from hotdata_retrieval.indexes import (
    TableKeys as TableKeys,
)
from hotdata_retrieval.indexes import (
    VectorIndex as VectorIndex,
)
