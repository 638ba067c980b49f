"""The compiler: plans become sqlglot trees, rendered per dialect.

:func:`to_sql` is the one door to SQL text. Dialects are data (:class:`DialectProfile`);
``hotdata`` — the Hotdata engine's DataFusion SQL — is the default.
"""

from hotdata_retrieval.compile import hotdata as _hotdata  # noqa: F401  (registers the dialect)
from hotdata_retrieval.compile.dialect import (
    DialectProfile,
    get_dialect,
    known_dialects,
    register_dialect,
)
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.compile.hotdata import HOTDATA, Hotdata
from hotdata_retrieval.compile.render import compile_plan, to_sql

__all__ = [
    "HOTDATA",
    "DialectProfile",
    "Hotdata",
    "compile_plan",
    "get_dialect",
    "known_dialects",
    "parse_filter",
    "register_dialect",
    "to_sql",
]
