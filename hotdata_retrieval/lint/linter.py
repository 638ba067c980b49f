"""Running the rules: :func:`lint` reports, :func:`fix` repairs what is safe to repair."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

import attrs

from hotdata_retrieval.indexes import IndexCatalog
from hotdata_retrieval.lint.errors import SqlParseError, UnknownRuleError
from hotdata_retrieval.lint.findings import Finding, format_finding
from hotdata_retrieval.lint.model import Analysis
from hotdata_retrieval.lint.parsing import (
    HiddenText,
    Positions,
    Statement,
    hidden_by_line_comments,
    iter_statements,
    parse_statements,
)
from hotdata_retrieval.lint.rules import RULES, RULES_BY_CODE, Issue, Rule
from hotdata_retrieval.lint.rules.base import Edit, FixContext, Reporter
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA

_MAX_FIX_PASSES = 4


def _rules(ignore: Collection[str]) -> list[Rule]:
    if isinstance(ignore, str):
        raise UnknownRuleError(
            [ignore], f"ignore takes a collection of rule codes, got the string {ignore!r}"
        )
    unknown = [
        code for code in ignore if not isinstance(code, str) or code.upper() not in RULES_BY_CODE
    ]
    if unknown:
        raise UnknownRuleError(unknown)
    ignored = {code.upper() for code in ignore}
    return [rule for rule in RULES if rule.code not in ignored]


def _analyses(
    sql: str,
    catalog: IndexCatalog | None,
    default_catalog: str,
    default_schema: str,
    statements: Sequence[Statement] | None = None,
) -> Iterator[tuple[Statement, Analysis]]:
    """Each statement with its analysis, one at a time: without ``statements``, each is
    parsed when the caller asks for it (:func:`iter_statements`), so linting a long file
    holds one statement's tree and analysis in memory, not every one's."""
    positions = Positions(sql)
    for statement in iter_statements(sql) if statements is None else statements:
        yield (
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


def _issues(analysis: Analysis, rules: Iterable[Rule]) -> list[Issue]:
    issues: list[Issue] = []
    for rule in rules:
        if rule.check is None or (rule.needs_catalog and analysis.catalog is None):
            continue
        rule.check(analysis, Reporter(rule, analysis, issues))
    unique: dict[Finding, Issue] = {}
    for issue in issues:
        unique.setdefault(issue.finding, issue)
    return sorted(unique.values(), key=lambda issue: (issue.finding.start, issue.finding.code))


def _text_findings(sql: str, rules: Iterable[Rule]) -> list[Finding]:
    """The findings of the rules that check the whole text (:attr:`Rule.text_check`)."""
    findings: list[Finding] = []
    positions: Positions | None = None
    for rule in rules:
        if rule.text_check is None:
            continue
        for found in rule.text_check(sql):
            positions = positions or Positions(sql)
            line, column = positions.line_column(found.start)
            findings.append(
                Finding(
                    code=rule.code,
                    severity=rule.severity,
                    message=found.message,
                    line=line,
                    column=column,
                    start=found.start,
                    end=found.end,
                    suggestion=found.suggestion,
                )
            )
    return findings


def _in_text_order(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda finding: (finding.start, finding.code))


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
        UnknownRuleError: ``ignore`` names a code that does not exist (or is one string, not
            a collection of codes).

    >>> sql = "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) LIMIT 3"
    >>> [finding.code for finding in lint(sql)]
    ['HDQ011']
    """
    rules = _rules(ignore)
    findings = _text_findings(sql, rules)
    for _, analysis in _analyses(sql, catalog, default_catalog, default_schema):
        findings.extend(issue.finding for issue in _issues(analysis, rules))
    return _in_text_order(findings)


@attrs.frozen(kw_only=True)
class FixResult:
    """What :func:`fix` did.

    Attributes:
        sql: the repaired SQL text: the input with each fix's edits spliced in; every other
            character (line endings, comments, literals, a byte order mark) is unchanged.
        applied: the findings that were repaired (positions refer to the text they were
            found in).
        findings: the findings left in ``sql``.
    """

    sql: str
    applied: tuple[Finding, ...]
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was repaired."""
        return bool(self.applied)


_Repair = tuple[Finding, Sequence[Edit]]


def _splice(sql: str, edits: Iterable[Edit]) -> str:
    """``sql`` with non-conflicting ``edits`` applied, each at its offsets in ``sql``."""
    pieces: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda edit: (edit.start, edit.end)):
        pieces.append(sql[cursor : edit.start])
        pieces.append(edit.text)
        cursor = edit.end
    pieces.append(sql[cursor:])
    return "".join(pieces)


def _compatible(repairs: Iterable[_Repair]) -> list[_Repair]:
    """The repairs (in order) whose edits conflict with no earlier one's: a repair whose
    edits touch text another repair edits waits for the next pass."""
    kept: list[_Repair] = []
    taken: list[Edit] = []
    for finding, edits in repairs:
        if any(edit.conflicts(other) for edit in edits for other in taken) or any(
            first.conflicts(second)
            for index, first in enumerate(edits)
            for second in edits[index + 1 :]
        ):
            continue
        kept.append((finding, edits))
        taken.extend(edits)
    return kept


def _reparsed(sql: str, count: int) -> list[Statement] | None:
    """The statements of ``sql`` when it parses as ``count`` of them, else ``None``."""
    try:
        statements = parse_statements(sql)
    except SqlParseError:
        return None
    return statements if len(statements) == count else None


def _apply(
    text: str, repairs: list[_Repair], count: int
) -> tuple[str, list[Statement], list[_Repair]] | None:
    """Splice ``repairs`` into ``text``. A repair must leave ``count`` statements that parse;
    should the repairs together not, each is tried alone and only those that pass are kept.
    ``None`` when none can be applied."""
    edited = _splice(text, (edit for _, edits in repairs for edit in edits))
    statements = _reparsed(edited, count)
    if statements is not None:
        return edited, statements, repairs
    if len(repairs) == 1:
        return None
    sound = [repair for repair in repairs if _reparsed(_splice(text, repair[1]), count) is not None]
    if not sound:
        return None
    return _apply(text, sound if len(sound) < len(repairs) else sound[:1], count)


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

    A statement part of whose text the engine reads as a ``--`` comment (HDQ050) is not
    repaired: what it runs is not what the text shows.

    Each repair is a few text edits placed by the statement's token offsets and spliced into
    the text: only the repaired statements' text changes, and within them only the names,
    arguments and clauses a repair touches. Everything else — other statements, the text
    between statements, comments, line endings, string literals, a leading byte order mark
    — is returned byte for byte as given. New text follows the statement's line endings.

    Raises:
        SqlParseError: the text does not parse.
        UnknownRuleError: ``ignore`` names a code that does not exist (or is one string, not
            a collection of codes).

    >>> print(fix("SELECT id FROM bm25_search('docs', 'body', 'q', 5) LIMIT 5").sql)
    SELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) ORDER BY score DESC LIMIT 5
    """
    rules = _rules(ignore)
    text = sql
    statements = parse_statements(text)
    applied: list[Finding] = []
    remaining: list[Finding] | None = None
    hidden = hidden_by_line_comments(text)
    for _ in range(_MAX_FIX_PASSES):
        found = _text_findings(text, rules)
        repairs: list[_Repair] = []
        for statement, analysis in _analyses(
            text, catalog, default_catalog, default_schema, statements
        ):
            context = FixContext(text, statement.tokens)
            fixable = not _hides_code(statement, hidden)
            planned: list[_Repair] = []
            for issue in _issues(analysis, rules):
                found.append(issue.finding)
                edits = issue.fix(context) if fixable and issue.fix is not None else None
                if edits:
                    planned.append((issue.finding, tuple(edits)))
            repairs.extend(_compatible(planned))
        outcome = _apply(text, repairs, len(statements)) if repairs else None
        if outcome is None:
            remaining = found
            break
        text, statements, done = outcome
        hidden = hidden_by_line_comments(text)
        applied.extend(finding for finding, _ in done)
    if remaining is None:  # the passes ran out: what is left in the text as it now is
        remaining = _text_findings(text, rules) + [
            issue.finding
            for _, analysis in _analyses(text, catalog, default_catalog, default_schema, statements)
            for issue in _issues(analysis, rules)
        ]
    return FixResult(sql=text, applied=tuple(applied), findings=tuple(_in_text_order(remaining)))


def _hides_code(statement: Statement, hidden: Sequence[HiddenText]) -> bool:
    """Whether the engine reads part of what the statement's text shows as a ``--`` comment
    (:func:`~hotdata_retrieval.lint.parsing.hidden_by_line_comments`): a fix would edit a
    statement other than the one the engine runs."""
    return any(statement.region_start <= text.start < statement.region_end for text in hidden)


def lint_notes(sql: str, catalog: IndexCatalog | None = None) -> list[str]:
    """The findings for ``sql`` as SQL comment lines (for ``hdq explain``'s notes).

    >>> lint_notes("SELECT 1")
    []
    """
    return [f"-- {format_finding(finding, 'lint')}" for finding in lint(sql, catalog)]
