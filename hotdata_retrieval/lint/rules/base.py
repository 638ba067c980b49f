"""A rule is data (code, name, severity, summary) plus one small check function.

A check function receives the statement's :class:`~hotdata_retrieval.lint.model.Analysis` and
a :class:`Report` callable; it calls ``report(node, message, suggestion, fix=...)`` once per
finding. ``fix``, when given, is a function that returns the text edits (:class:`Edit`) that
make the finding go away without changing what the query means. Edits are placed by the
statement's tokens (:class:`FixContext`) and spliced into the original text by offset, so
everything a fix does not touch — layout, line endings, comments, literals — stays byte for
byte as written; only the new text a fix inserts (a name, a literal, a sort key) is rendered.
"""

from __future__ import annotations

import bisect
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs
from sqlglot import exp
from sqlglot.tokenizer_core import Token

from hotdata_retrieval.lint.findings import Finding, Severity
from hotdata_retrieval.lint.model import Analysis
from hotdata_retrieval.lint.model import shorten as shorten

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@attrs.frozen
class Edit:
    """Replace ``sql[start:end]`` with ``text`` (``start == end``: insert ``text`` there)."""

    start: int
    end: int
    text: str

    def conflicts(self, other: Edit) -> bool:
        """Whether the two edits touch the same text, so that applying both is ambiguous: two
        overlapping ranges, an insertion strictly inside the other's range, or two insertions
        at one offset. Edits that only meet at a boundary do not conflict."""
        if self.start == self.end and other.start == other.end:
            return self.start == other.start
        if self.start == self.end:
            return other.start < self.start < other.end
        if other.start == other.end:
            return self.start < other.start < self.end
        return self.start < other.end and other.start < self.end


class FixContext:
    """The text a fix edits: the whole SQL text and the tokens of the statement being fixed.

    Token offsets (``start``, inclusive ``end``) point into :attr:`sql`, as do the ``meta``
    offsets of the statement tree's nodes.
    """

    def __init__(self, sql: str, tokens: Sequence[Token]) -> None:
        self.sql = sql
        self.tokens = tokens
        self._starts = [token.start for token in tokens]
        self._by_end = {token.end: index for index, token in enumerate(tokens)}

    @property
    def newline(self) -> str:
        """The statement's line ending (``\\r\\n``, ``\\r`` or ``\\n``): its first line
        break, else the text's first, else ``\\n``."""
        if self.tokens:
            inside = _LINE_BREAK.search(self.sql, self.tokens[0].start, self.tokens[-1].end)
            if inside is not None:
                return inside.group()
        anywhere = _LINE_BREAK.search(self.sql)
        return anywhere.group() if anywhere is not None else "\n"

    def index(self, offset: int) -> int | None:
        """The index of the token that starts at ``offset``, or ``None``."""
        position = bisect.bisect_left(self._starts, offset)
        if position < len(self._starts) and self._starts[position] == offset:
            return position
        return None

    def bounds(self, node: exp.Expr) -> tuple[int, int] | None:
        """The indexes of the first and the last token of ``node`` that carry a position
        (identifiers, literals, function names), or ``None`` when it has none or they are
        not tokens of this statement."""
        start: int | None = None
        end: int | None = None
        for child in node.walk():
            meta = child._meta  # read without creating an empty dict
            if not meta or "start" not in meta:
                continue
            child_end = meta.get("end", meta["start"])
            start = meta["start"] if start is None else min(start, meta["start"])
            end = child_end if end is None else max(end, child_end)
        if start is None or end is None:
            return None
        first = self.index(start)
        last = self._by_end.get(end)
        if first is None or last is None or last < first:
            return None
        return first, last

    def gap(self, index: int) -> str:
        """The text between token ``index`` and the next one (white space and comments;
        after the last token: up to the end of the text)."""
        start = self.tokens[index].end + 1
        end = self.tokens[index + 1].start if index + 1 < len(self.tokens) else len(self.sql)
        return self.sql[start:end]

    def delete(self, first: int, last: int, *, trailing_space: bool = False) -> list[Edit]:
        """Edits deleting tokens ``first``..``last`` and the white space between them; a
        comment between them is kept. With ``trailing_space``, the white space after the last
        token goes too (up to the next token or comment)."""
        edits: list[Edit] = []
        start = self.tokens[first].start
        for index in range(first, last):
            between = self.gap(index)
            if between and not between.isspace():  # a comment: keep it
                edits.append(Edit(start, self.tokens[index].end + 1, ""))
                start = self.tokens[index + 1].start
        end = self.tokens[last].end + 1
        if trailing_space:
            following = self.gap(last)
            end += len(following) - len(following.lstrip())
        edits.append(Edit(start, end, ""))
        return edits

    def line_end_after(self, offset: int) -> int | None:
        """The offset of the line break that ends the line at ``offset`` when only white
        space and comments follow ``offset`` on that line (the end of the text when it has no
        line break after them); ``None`` when code follows on the same line. A ``--`` comment
        runs to a line feed, as the engine reads it (a carriage return alone does not end
        it); one that runs to the end of the text gives ``None`` when the statement's line
        ending is a lone ``\\r``, since text after it would still be comment."""
        sql = self.sql
        position = offset
        while position < len(sql):
            character = sql[position]
            if character in "\r\n":
                return position
            if character.isspace():
                position += 1
            elif sql.startswith("--", position):
                # the engine ends a ``--`` comment only at a line feed (compile.hotdata)
                found = sql.find("\n", position)
                if found == -1:  # to the end of the text: a new line needs a line feed
                    return len(sql) if "\n" in self.newline else None
                return found - 1 if sql[found - 1] == "\r" else found
            elif sql.startswith("/*", position):
                close = sql.find("*/", position + 2)
                if close == -1:
                    return None
                position = close + 2
            else:
                return None
        return len(sql)

    def indentation(self, index: int) -> str:
        """The spaces and tabs that open the line token ``index`` is on."""
        offset = self.tokens[index].start
        line_start = max(self.sql.rfind("\n", 0, offset), self.sql.rfind("\r", 0, offset)) + 1
        line = self.sql[line_start:offset]
        return line[: len(line) - len(line.lstrip(" \t"))]


Fix = Callable[[FixContext], Sequence[Edit] | None]
"""Returns the edits that repair one finding, or ``None`` when they cannot be placed (the
finding is then left as it is)."""


class Report(Protocol):
    """What a check function calls to report one finding."""

    def __call__(
        self,
        node: exp.Expr,
        message: str,
        suggestion: str,
        *,
        fix: Fix | None = None,
        severity: Severity | None = None,
    ) -> None: ...


Check = Callable[[Analysis, Report], None]


@attrs.frozen(kw_only=True)
class TextFinding:
    """What a text check found: ``sql[start:end]``, a message and a suggestion."""

    start: int
    end: int
    message: str
    suggestion: str


TextCheck = Callable[[str], Sequence[TextFinding]]
"""A check of the whole SQL text rather than of one parsed statement (for text no statement
owns, such as a file the engine reads as one comment)."""


@attrs.frozen(kw_only=True)
class Rule:
    """One lint rule.

    Attributes:
        code: stable code, ``HDQ`` and three digits.
        name: a short kebab-case name.
        severity: the severity of its findings (a finding may state another).
        summary: one line: what it finds.
        check: the check function, run on each statement; its docstring states the engine
            fact and its source.
        text_check: instead of ``check``, a function run once on the whole text.
        needs_catalog: it only fires when an index catalog is given.
        fixable: some of its findings can be fixed automatically.
    """

    code: str
    name: str
    severity: Severity
    summary: str
    check: Check | None = attrs.field(default=None, eq=False, repr=False)
    text_check: TextCheck | None = attrs.field(default=None, eq=False, repr=False)
    needs_catalog: bool = False
    fixable: bool = False

    def __attrs_post_init__(self) -> None:
        if (self.check is None) == (self.text_check is None):
            raise ValueError(f"rule {self.code} needs exactly one of check and text_check")

    @property
    def rationale(self) -> str:
        """The check function's docstring: the engine fact and where it comes from."""
        return inspect.getdoc(self.check or self.text_check) or ""


@attrs.frozen(kw_only=True)
class Issue:
    """A finding and, when the rule can repair it, the repair."""

    finding: Finding
    fix: Fix | None = attrs.field(default=None, eq=False)


class Reporter:
    """Collects one rule's findings on one statement."""

    def __init__(self, rule: Rule, analysis: Analysis, issues: list[Issue]) -> None:
        self.rule = rule
        self.analysis = analysis
        self.issues = issues

    def __call__(
        self,
        node: exp.Expr,
        message: str,
        suggestion: str,
        *,
        fix: Fix | None = None,
        severity: Severity | None = None,
    ) -> None:
        start, end = self.analysis.span(node)
        line, column = self.analysis.positions.line_column(start)
        finding = Finding(
            code=self.rule.code,
            severity=severity or self.rule.severity,
            message=message,
            line=line,
            column=column,
            start=start,
            end=end,
            suggestion=suggestion,
            fixable=fix is not None,
        )
        self.issues.append(Issue(finding=finding, fix=fix))
