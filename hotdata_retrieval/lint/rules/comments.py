"""Text the engine reads differently from how it looks (HDQ050)."""

from __future__ import annotations

from collections.abc import Sequence

from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import shorten
from hotdata_retrieval.lint.parsing import hidden_by_line_comments
from hotdata_retrieval.lint.rules.base import Rule, TextFinding


def code_in_line_comment(sql: str) -> Sequence[TextFinding]:
    """A ``--`` comment runs to the next line feed (``\\n``) on the engine: a carriage
    return alone (``\\r``, the line ending of some old editors and files) does not end it,
    nor does a Unicode line separator (U+0085, U+2028, U+2029) an editor may show as one,
    so every line after it up to a line feed — code that looks like the next lines — is part
    of the comment and never runs. Not in the engine contract: DataFusion's SQL parser in its
    default ``generic`` dialect (``datafusion.sql_parser.dialect``) reads ``SELECT 1 AS a --
    c\\r, 2 AS b`` as one column (observed with datafusion 55; tested in
    ``tests/test_lint_line_comments.py``). The Hotdata engine embeds DataFusion; which
    dialect it configures is not public.

    The finding starts at the first hidden token. ``--fix`` changes no statement that has
    one: what the engine runs is not what the text shows."""
    return [
        TextFinding(
            start=hidden.start,
            end=hidden.end,
            message=(
                f"`{shorten(sql[hidden.start : hidden.end])}` is part of the `--` comment "
                f"before it: that comment's line ends with {_LINE_BREAKS[hidden.line_break]}, "
                "and the engine ends a `--` comment only at a line feed (\\n), so this never "
                "runs"
            ),
            suggestion="end the comment's line with \\n or \\r\\n, or write it as /* ... */",
        )
        for hidden in hidden_by_line_comments(sql)
    ]


_LINE_BREAKS = {
    "\r": "a carriage return alone (\\r)",
    "\x85": "U+0085 (next line)",
    "\u2028": "U+2028 (line separator)",
    "\u2029": "U+2029 (paragraph separator)",
}


RULES = (
    Rule(
        code="HDQ050",
        name="code-in-line-comment",
        severity=Severity.ERROR,
        summary=(
            "text after a `--` comment ended by a lone \\r or a Unicode line separator: "
            "the engine reads it as comment"
        ),
        text_check=code_in_line_comment,
    ),
)
