"""Errors raised by the linter: SQL that does not parse, index catalogs that do not load
(:class:`CatalogError`, defined beside the catalog in :mod:`hotdata_retrieval.indexes`), and
rule codes that do not exist.

All derive from :class:`~hotdata_retrieval.errors.HotdataRetrievalError`, carry the offending
value as attributes, and say what went wrong in their message.
"""

from __future__ import annotations

from typing import Any

from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.indexes import CatalogError

__all__ = ["CatalogError", "SqlParseError", "UnknownRuleError"]


class SqlParseError(HotdataRetrievalError, ValueError):
    """The SQL text cannot be parsed in the Hotdata dialect.

    Attributes:
        description: the parser's message, without position or context.
        line: 1-based line of the offending token (``None`` when the parser gave none).
        column: 1-based column of the offending token's first character.
        start: 0-based offset of the offending token in the SQL text, when known.
    """

    def __init__(
        self,
        description: str,
        *,
        line: int | None = None,
        column: int | None = None,
        start: int | None = None,
    ) -> None:
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"{where}{description}")
        self.description = description
        self.line = line
        self.column = column
        self.start = start


class UnknownRuleError(HotdataRetrievalError, ValueError):
    """A rule code passed to the linter (``ignore=``) names no rule.

    Attributes:
        codes: the codes that name no rule, as passed.
    """

    def __init__(self, codes: list[Any], message: str | None = None) -> None:
        listed = ", ".join(code if isinstance(code, str) else repr(code) for code in codes)
        super().__init__(message or f"unknown rule code(s): {listed}; see hdq lint --list-rules")
        self.codes = codes
