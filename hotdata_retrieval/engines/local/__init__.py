"""The embedded local engine (DataFusion + tantivy + NumPy). Needs the ``local`` extra."""

from hotdata_retrieval.engines.local.database import (
    ConcurrentWriteError,
    DatabaseError,
    TableEntry,
    VectorColumn,
)
from hotdata_retrieval.engines.local.engine import (
    EngineError,
    LocalEngine,
    TableLoad,
)

__all__ = [
    "ConcurrentWriteError",
    "DatabaseError",
    "EngineError",
    "LocalEngine",
    "TableEntry",
    "TableLoad",
    "VectorColumn",
]
