"""The embedded local engine (DataFusion + tantivy + NumPy). Needs the ``local`` extra:
importing this package without it raises
:class:`~hotdata_retrieval.extras.MissingExtraError` naming the install command."""

from hotdata_retrieval.extras import require_extra

require_extra("local", needed_by="the local engine (hotdata_retrieval.engines.local)")

# The engine's modules import the extra's packages at module level: checked first, above.
from hotdata_retrieval.engines.errors import EngineError  # noqa: E402
from hotdata_retrieval.engines.hnsw import HnswSettings  # noqa: E402
from hotdata_retrieval.engines.local.database import (  # noqa: E402
    ConcurrentWriteError,
    DatabaseError,
    TableEntry,
    VectorColumn,
)
from hotdata_retrieval.engines.local.engine import LocalEngine, TableLoad  # noqa: E402

__all__ = [
    "ConcurrentWriteError",
    "DatabaseError",
    "EngineError",
    "HnswSettings",
    "LocalEngine",
    "TableEntry",
    "TableLoad",
    "VectorColumn",
]
