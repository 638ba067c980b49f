"""Engines run compiled SQL and return typed results; they never build SQL themselves.

The local engine (:mod:`hotdata_retrieval.engines.local`) needs the ``local`` extra and is
imported on demand.
"""

from hotdata_retrieval.engines.results import BranchScore, SearchHit, SearchResult

__all__ = ["BranchScore", "SearchHit", "SearchResult"]
