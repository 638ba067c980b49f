"""What the linter reports: one :class:`Finding` per offending expression."""

from __future__ import annotations

import enum
from typing import Any

import attrs


class Severity(str, enum.Enum):
    """How bad a finding is.

    - ``error``: the engine rejects the statement, or silently returns the wrong rows, the
      wrong order or the wrong number of rows.
    - ``warning``: the answer is right but computed the slow way (a full scan instead of the
      vector index, an unbounded BM25 search), or is fragile.
    """

    ERROR = "error"
    WARNING = "warning"


@attrs.frozen(kw_only=True)
class Finding:
    """One problem in the SQL text.

    Attributes:
        code: the rule's stable code, e.g. ``"HDQ004"``.
        severity: :class:`Severity`.
        message: one line naming the offending expression and what the engine does with it.
        line: 1-based line of the offending expression's first character.
        column: 1-based column of that character.
        start: 0-based offset of the expression in the SQL text.
        end: offset just past the expression (``sql[start:end]`` is its text, best effort).
        suggestion: how to fix it, in one line.
        fixable: whether ``fix`` (``hdq lint --fix``) can rewrite it safely.
    """

    code: str
    severity: Severity
    message: str
    line: int
    column: int
    start: int
    end: int
    suggestion: str
    fixable: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The finding as plain JSON values (``severity`` as its name)."""
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "line": self.line,
            "column": self.column,
            "start": self.start,
            "end": self.end,
            "suggestion": self.suggestion,
            "fixable": self.fixable,
        }


def format_finding(finding: Finding, path: str = "<sql>") -> str:
    """``path:line:col: CODE [severity] message (fix: suggestion)``.

    >>> f = Finding(code="HDQ004", severity=Severity.WARNING, message="no LIMIT", line=3,
    ...             column=10, start=40, end=49, suggestion="add LIMIT k")
    >>> format_finding(f, "q.sql")
    'q.sql:3:10: HDQ004 [warning] no LIMIT (fix: add LIMIT k)'
    """
    return (
        f"{path}:{finding.line}:{finding.column}: {finding.code} [{finding.severity.value}] "
        f"{finding.message} (fix: {finding.suggestion})"
    )
