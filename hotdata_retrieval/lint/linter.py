"""Running the rules: :func:`lint` reports, :func:`fix` repairs what is safe to repair."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import attrs

from hotdata_retrieval.lint.catalog import IndexCatalog
from hotdata_retrieval.lint.findings import Finding, format_finding
from hotdata_retrieval.lint.model import Analysis
from hotdata_retrieval.lint.parsing import Positions, Statement, parse_statements, render
from hotdata_retrieval.lint.rules import RULES, RULES_BY_CODE, Issue, Rule
from hotdata_retrieval.lint.rules.base import Reporter
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA

__all__ = ["FixResult", "fix", "lint", "lint_notes"]

_MAX_FIX_PASSES = 4


def _rules(ignore: Collection[str]) -> list[Rule]:
    unknown = sorted(code for code in ignore if code.upper() not in RULES_BY_CODE)
    if unknown:
        raise ValueError(f"unknown rule code(s): {', '.join(unknown)}")
    ignored = {code.upper() for code in ignore}
    return [rule for rule in RULES if rule.code not in ignored]


def _analyses(
    sql: str,
    catalog: IndexCatalog | None,
    default_catalog: str,
    default_schema: str,
) -> list[tuple[Statement, Analysis]]:
    positions = Positions(sql)
    return [
        (
            statement,
            Analysis(
                statement.tree,
                sql,
                positions=positions,
                catalog=catalog,
                default_catalog=default_catalog,
                default_schema=default_schema,
                statement_start=statement.start,
                statement_end=statement.end,
            ),
        )
        for statement in parse_statements(sql)
    ]


def _issues(analysis: Analysis, rules: Iterable[Rule]) -> list[Issue]:
    issues: list[Issue] = []
    for rule in rules:
        if rule.needs_catalog and analysis.catalog is None:
            continue
        rule.check(analysis, Reporter(rule, analysis, issues))
    unique: dict[Finding, Issue] = {}
    for issue in issues:
        unique.setdefault(issue.finding, issue)
    return sorted(unique.values(), key=lambda issue: (issue.finding.start, issue.finding.code))


def lint(
    sql: str,
    catalog: IndexCatalog | None = None,
    *,
    default_catalog: str = DEFAULT_CATALOG,
    default_schema: str = DEFAULT_SCHEMA,
    ignore: Collection[str] = (),
) -> list[Finding]:
    """Every finding in ``sql`` (one or more statements), in text order.

    Args:
        sql: the SQL text, in the Hotdata dialect.
        catalog: the index catalog; rules that need one are skipped without it.
        default_catalog / default_schema: complete 1- and 2-part table names (for catalog
            look-ups and for the suggested fully qualified names).
        ignore: rule codes to skip.

    Raises:
        SqlParseError: the text does not parse; the error carries line and column.
        ValueError: ``ignore`` names a code that does not exist.

    >>> sql = "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) LIMIT 3"
    >>> [finding.code for finding in lint(sql)]
    ['HDQ011']
    """
    rules = _rules(ignore)
    findings: list[Finding] = []
    for _, analysis in _analyses(sql, catalog, default_catalog, default_schema):
        findings.extend(issue.finding for issue in _issues(analysis, rules))
    return findings


@attrs.frozen(kw_only=True)
class FixResult:
    """What :func:`fix` did.

    Attributes:
        sql: the repaired SQL text; statements that needed no repair keep their text.
        applied: the findings that were repaired (positions refer to the text they were
            found in).
        findings: the findings left in ``sql`` (none of them fixable).
    """

    sql: str
    applied: tuple[Finding, ...]
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was repaired."""
        return bool(self.applied)


def fix(
    sql: str,
    catalog: IndexCatalog | None = None,
    *,
    default_catalog: str = DEFAULT_CATALOG,
    default_schema: str = DEFAULT_SCHEMA,
    ignore: Collection[str] = (),
) -> FixResult:
    """Repair every fixable finding: qualify names from the defaults, add the missing ORDER
    BY, add the missing k, drop the vector column from the output, lower-case quoted
    identifiers.

    Only the statements that change are re-rendered (in the Hotdata dialect, pretty-printed
    if they spanned several lines); the rest of the text is kept as it was.

    Raises:
        SqlParseError: the text does not parse.
        ValueError: ``ignore`` names a code that does not exist.

    >>> print(fix("SELECT id FROM bm25_search('docs', 'body', 'q', 5) LIMIT 5").sql)
    SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) ORDER BY score DESC LIMIT 5
    """
    rules = _rules(ignore)
    text = sql
    applied: list[Finding] = []
    for _ in range(_MAX_FIX_PASSES):
        pieces: list[str] = []
        cursor = 0
        repaired: list[Finding] = []
        for statement, analysis in _analyses(text, catalog, default_catalog, default_schema):
            repairs = [issue for issue in _issues(analysis, rules) if issue.fix is not None]
            if not repairs:
                continue
            for issue in repairs:
                assert issue.fix is not None
                issue.fix()
                repaired.append(issue.finding)
            original = text[statement.start : statement.end]
            pieces.append(text[cursor : statement.region_start])
            pieces.append(render(statement.tree, pretty="\n" in original))
            cursor = statement.region_end
        if not repaired:
            break
        pieces.append(text[cursor:])
        text = "".join(pieces)
        applied.extend(repaired)
    remaining = lint(
        text,
        catalog,
        default_catalog=default_catalog,
        default_schema=default_schema,
        ignore=ignore,
    )
    return FixResult(sql=text, applied=tuple(applied), findings=tuple(remaining))


def lint_notes(sql: str, catalog: IndexCatalog | None = None) -> list[str]:
    """The findings for ``sql`` as SQL comment lines (for ``hdq explain``'s notes).

    >>> lint_notes("SELECT 1")
    []
    """
    return [f"-- {format_finding(finding, 'lint')}" for finding in lint(sql, catalog)]
