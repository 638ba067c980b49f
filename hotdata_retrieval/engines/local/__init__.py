"""The embedded local engine (DataFusion + tantivy + NumPy). Needs the ``local`` extra."""

from hotdata_retrieval.engines.local.database import DatabaseError, TableEntry, VectorColumn
from hotdata_retrieval.engines.local.engine import DEFAULT_BM25_BOUND, EngineError, LocalEngine

__all__ = [
    "DEFAULT_BM25_BOUND",
    "DatabaseError",
    "EngineError",
    "LocalEngine",
    "TableEntry",
    "VectorColumn",
]
