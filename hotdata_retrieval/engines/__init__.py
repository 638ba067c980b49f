"""Engines run compiled SQL and return typed results; they never build SQL themselves.

Every engine meets one contract, :class:`~hotdata_retrieval.engines.base.Engine`:
``search(plan)``, ``sql(text)``, ``indexes(table)`` and ``plan_search(table, query, ...)``
(``docs/engines.md``). The local engine (:mod:`hotdata_retrieval.engines.local`) needs the
``local`` extra and the Hotdata engine (:mod:`hotdata_retrieval.engines.hotdata`) the
``hotdata`` extra; both are imported on demand.
"""

from hotdata_retrieval.engines.base import OPTIONAL_CAPABILITIES, Engine
from hotdata_retrieval.engines.results import BranchScore, SearchHit, SearchResult

__all__ = ["Engine", "OPTIONAL_CAPABILITIES", "BranchScore", "SearchHit", "SearchResult"]
