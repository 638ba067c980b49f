"""``hdq lint``: find the SQL shapes that silently lose an index, the ranking or the row count.

The Hotdata engine's fallbacks are silent: a correct-looking answer, computed by full scan or
in rowid order, with no warning. The linter parses SQL in the Hotdata dialect and turns each
such shape into a :class:`Finding` with a stable code (``HDQ001`` ...), a position, a severity
and a suggested fix; :func:`fix` repairs the ones that are safe to repair. Rules that depend on
which indexes exist read an :class:`IndexCatalog`. The rules, their codes and their sources
are listed in ``docs/lint.md`` and in :data:`RULES`.

>>> findings = lint("SELECT id, embedding, cosine_distance(embedding, ARRAY[0.1, 0.2]) AS d "
...                 "FROM docs ORDER BY d LIMIT 5")
>>> [(f.code, f.line, f.column) for f in findings]
[('HDQ002', 1, 12), ('HDQ001', 1, 77)]
"""

from hotdata_retrieval.lint.catalog import (
    CATALOG_JSON_SCHEMA,
    IndexCatalog,
    IndexEntry,
    IndexKind,
    IndexStatus,
    TableKeys,
)
from hotdata_retrieval.lint.errors import CatalogError, SqlParseError, UnknownRuleError
from hotdata_retrieval.lint.findings import Finding, Severity, format_finding
from hotdata_retrieval.lint.linter import FixResult, fix, lint, lint_notes
from hotdata_retrieval.lint.rules import RULES, RULES_BY_CODE, Rule

__all__ = [
    "lint",
    "fix",
    "lint_notes",
    "Finding",
    "FixResult",
    "Severity",
    "format_finding",
    "Rule",
    "RULES",
    "RULES_BY_CODE",
    "IndexCatalog",
    "IndexEntry",
    "IndexKind",
    "IndexStatus",
    "TableKeys",
    "CATALOG_JSON_SCHEMA",
    "SqlParseError",
    "CatalogError",
    "UnknownRuleError",
]
