"""Engines run compiled SQL and return typed results; they never build SQL themselves.

Every engine meets one contract, :class:`~hotdata_retrieval.engines.base.Engine`:
``search(plan)``, ``sql(text)``, ``indexes(table)`` and ``plan_search(table, query, ...)``
(``docs/engines.md``). The local engine (:mod:`hotdata_retrieval.engines.local`) needs the
``local`` extra and the Hotdata engine (:mod:`hotdata_retrieval.engines.hotdata`) the
``hotdata`` extra; both are imported on demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hotdata_retrieval._lazy import lazy_exports

if TYPE_CHECKING:
    from hotdata_retrieval.engines.base import (
        DOCUMENT_CAPABILITIES,
        OPTIONAL_CAPABILITIES,
        DocumentEngine,
        Engine,
    )
    from hotdata_retrieval.engines.hnsw import HnswSettings
    from hotdata_retrieval.engines.results import BranchScore, SearchHit, SearchResult

_EXPORTED_FROM = {
    "hotdata_retrieval.engines.base": (
        "DOCUMENT_CAPABILITIES",
        "OPTIONAL_CAPABILITIES",
        "DocumentEngine",
        "Engine",
    ),
    "hotdata_retrieval.engines.hnsw": ("HnswSettings",),
    "hotdata_retrieval.engines.results": ("BranchScore", "SearchHit", "SearchResult"),
}
"""Imported on first use, so the engine registry (``hdq``'s ``--engine``) loads no engine."""

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTED_FROM)

__all__ = [
    "DOCUMENT_CAPABILITIES",
    "DocumentEngine",
    "Engine",
    "OPTIONAL_CAPABILITIES",
    "BranchScore",
    "HnswSettings",
    "SearchHit",
    "SearchResult",
]
