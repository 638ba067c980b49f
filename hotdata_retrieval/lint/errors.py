"""Errors raised by the linter: SQL that does not parse, index catalogs that do not load
(:class:`CatalogError`, defined beside the catalog in :mod:`hotdata_retrieval.indexes`), and
rule codes that do not exist.

All derive from :class:`~hotdata_retrieval.errors.HotdataRetrievalError`, carry the offending
value as attributes, and say what went wrong in their message.
"""

from __future__ import annotations

from hotdata_retrieval.errors import SqlParseError as SqlParseError
from hotdata_retrieval.errors import UnknownRuleError as UnknownRuleError
from hotdata_retrieval.indexes import CatalogError as CatalogError
