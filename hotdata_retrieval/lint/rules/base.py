"""A rule is data (code, name, severity, summary) plus one small check function.

A check function receives the statement's :class:`~hotdata_retrieval.lint.model.Analysis` and
a :class:`Report` callable; it calls ``report(node, message, suggestion, fix=...)`` once per
finding. ``fix``, when given, is a function that rewrites the statement tree in place so the
finding goes away without changing what the query means.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Protocol

import attrs
from sqlglot import exp

from hotdata_retrieval.lint.findings import Finding, Severity
from hotdata_retrieval.lint.model import Analysis, shorten

__all__ = ["Check", "Fix", "Issue", "Report", "Rule", "shorten"]

Fix = Callable[[], None]
"""Rewrites the statement tree in place."""


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
class Rule:
    """One lint rule.

    Attributes:
        code: stable code, ``HDQ`` and three digits.
        name: a short kebab-case name.
        severity: the severity of its findings (a finding may state another).
        summary: one line: what it finds.
        check: the check function; its docstring states the engine fact and its source.
        needs_catalog: it only fires when an index catalog is given.
        fixable: some of its findings can be fixed automatically.
    """

    code: str
    name: str
    severity: Severity
    summary: str
    check: Check = attrs.field(eq=False, repr=False)
    needs_catalog: bool = False
    fixable: bool = False

    @property
    def rationale(self) -> str:
        """The check function's docstring: the engine fact and where it comes from."""
        return inspect.getdoc(self.check) or ""


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
