"""PostgreSQL habits the engine rejects or silently mis-handles: HDQ040-HDQ043.

The engine is Apache DataFusion, which "follows PostgreSQL closely" but not everywhere
(engine contract §4, "Dialect").
"""

from __future__ import annotations

import re

from sqlglot import exp

from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import Analysis, string_literal
from hotdata_retrieval.lint.parsing import render
from hotdata_retrieval.lint.rules.base import Edit, Fix, FixContext, Report, Rule
from hotdata_retrieval.plan.names import is_bare_identifier

TEXT_SEARCH_FUNCTIONS = frozenset(
    {
        "to_tsvector",
        "to_tsquery",
        "plainto_tsquery",
        "phraseto_tsquery",
        "websearch_to_tsquery",
        "ts_rank",
        "ts_rank_cd",
        "ts_headline",
        "setweight",
    }
)
"""PostgreSQL's text-search functions (PostgreSQL manual §9.13). ``to_tsvector`` is observed
rejected and ``plainto_tsquery`` absent on the engine (engine contract §1.6); the rest belong
to the same family, which DataFusion does not implement."""

TEMPLATE_FUNCTIONS = frozenset({"to_char", "to_date", "to_timestamp"})

MISSING_DATE_FUNCTIONS: dict[str, str] = {
    "date_sub": "subtract an interval: d - INTERVAL '1 day'",
    "dateadd": "add an interval: d + INTERVAL '1 day'",
    "datediff": "subtract the two values and read the interval with date_part(...)",
}
"""Date functions the engine lacks, with the replacement. ``date_sub``: engine contract §4
("no ``date_sub``", hotdata-langchain ``docs/engine-contract.md``); ``dateadd`` and
``datediff``: the dbt adapter's notes (``shared/reference/consumers.md`` §2.6, "HotSQL has no
dateadd/datediff")."""


def postgres_text_search(analysis: Analysis, report: Report) -> None:
    """The engine has no PostgreSQL full-text search: ``to_tsvector(...)`` fails with
    ``Invalid function 'to_tsvector'. Did you mean 'to_char'?`` and there is no
    ``plainto_tsquery``. Ranked text search is ``bm25_search``. Engine contract §1.6, test
    vector 19; hotdata-langchain ``docs/engine-contract.md``."""
    for call in analysis.find(exp.Anonymous):
        name = call.name.lower()
        if name in TEXT_SEARCH_FUNCTIONS:
            report(
                call,
                f"{call.name}() is PostgreSQL full-text search, which the engine does not have "
                f"(Invalid function '{call.name}')",
                "rank with bm25_search('catalog.schema.table', 'column', 'query', k) ORDER BY "
                "score DESC LIMIT k",
            )


_TEMPLATE_CODES = [
    ("HH24", "%H"),
    ("HH12", "%I"),
    ("YYYY", "%Y"),
    ("MONTH", "%B"),
    ("Month", "%B"),
    ("month", "%B"),
    ("MON", "%b"),
    ("Mon", "%b"),
    ("mon", "%b"),
    ("DAY", "%A"),
    ("Day", "%A"),
    ("day", "%A"),
    ("YY", "%y"),
    ("MM", "%m"),
    ("DD", "%d"),
    ("HH", "%I"),
    ("MI", "%M"),
    ("SS", "%S"),
    ("MS", "%3f"),
    ("US", "%6f"),
    ("DY", "%a"),
    ("Dy", "%a"),
    ("dy", "%a"),
    ("AM", "%p"),
    ("PM", "%p"),
    ("TZ", "%Z"),
]
_TEMPLATE = re.compile("|".join(re.escape(code) for code, _ in _TEMPLATE_CODES))
_TEMPLATE_MAP = dict(_TEMPLATE_CODES)


def strftime_template(template: str) -> str:
    """Translate a PostgreSQL ``to_char`` template into a strftime (chrono) pattern.

    >>> strftime_template("YYYY-MM-DD HH24:MI:SS")
    '%Y-%m-%d %H:%M:%S'
    """
    return _TEMPLATE.sub(lambda match: _TEMPLATE_MAP[match.group(0)], template)


def template_without_directive(analysis: Analysis, report: Report) -> None:
    """DataFusion's date formatting and parsing functions take strftime (chrono) patterns
    such as ``'%Y-%m-%d'``; a PostgreSQL template such as ``'YYYY-MM-DD'`` has no ``%``
    directive, so ``to_char(d, 'YYYY-MM-DD')`` silently returns the template text itself and
    ``to_date``/``to_timestamp`` cannot parse with it. Engine contract §4 ("DataFusion date
    functions: strftime patterns; ``to_char(d,'YYYY-MM-DD')`` silently returns the literal
    pattern"); DataFusion ``to_char`` documentation (chrono patterns)."""
    for call in analysis.find(exp.Anonymous):
        name = call.name.lower()
        if name not in TEMPLATE_FUNCTIONS:
            continue
        for argument in call.expressions[1:]:
            template = string_literal(argument)
            if template is None or "%" in template:
                continue
            effect = (
                "returns the template text itself" if name == "to_char" else "cannot parse with it"
            )
            translated = strftime_template(template)
            suggestion = (
                f"use a strftime pattern: '{translated}'"
                if "%" in translated
                else "use a strftime pattern such as '%Y-%m-%d'"
            )
            report(
                argument,
                f"{call.name}() template {analysis.text(argument)} has no % directive: the "
                f"engine takes strftime patterns, so it {effect}",
                suggestion,
            )


def missing_date_function(analysis: Analysis, report: Report) -> None:
    """The engine has no ``date_sub`` (nor ``dateadd``/``datediff``): date arithmetic is
    written with intervals. Engine contract §4 (hotdata-langchain ``docs/engine-contract.md``);
    ``shared/reference/consumers.md`` §2.6 (dbt adapter)."""
    for call in analysis.find(exp.Anonymous):
        name = call.name.lower()
        if name in MISSING_DATE_FUNCTIONS:
            report(
                call,
                f"{call.name}() does not exist on the engine",
                MISSING_DATE_FUNCTIONS[name],
            )


def _defined_names(analysis: Analysis) -> set[str]:
    """Names the statement itself defines (aliases, CTE names), exactly as written."""
    names: set[str] = set()
    for node in analysis.find(exp.Alias, exp.TableAlias):
        alias = node.args.get("alias") if isinstance(node, exp.Alias) else node.this
        if isinstance(alias, exp.Identifier):
            names.add(alias.name)
        if isinstance(node, exp.TableAlias):
            names.update(
                column.name for column in node.columns if isinstance(column, exp.Identifier)
            )
    return names


def _lowercase(identifier: exp.Identifier) -> Fix:
    """Replace the quoted name with its lower-case form (unquoted when it can be)."""
    lowered = identifier.name.lower()

    def apply(context: FixContext) -> list[Edit] | None:
        bounds = context.bounds(identifier)
        if bounds is None or bounds[0] != bounds[1]:
            return None
        token = context.tokens[bounds[0]]
        text = render(exp.Identifier(this=lowered, quoted=not is_bare_identifier(lowered)))
        return [Edit(token.start, token.end + 1, text)]

    return apply


def quoted_mixed_case(analysis: Analysis, report: Report) -> None:
    """The engine stores every identifier in lower case (a source column ``driverId`` is
    exposed as ``driverid``), and quoting the mixed-case form to preserve it fails: ``SELECT
    r."driverId"`` → 400 Bad Request with an empty body, while ``r.driverId`` (lower-cased
    when unquoted) works. Engine contract §4, test vector 21, §8; hotdata-langchain
    ``docs/engine-contract.md``."""
    defined = _defined_names(analysis)
    for identifier in analysis.find(exp.Identifier):
        name = identifier.name
        if not identifier.quoted or name == name.lower() or name in defined:
            continue
        if not isinstance(identifier.parent, (exp.Column, exp.Table)):
            continue
        lowered = name.lower()
        written = lowered if is_bare_identifier(lowered) else f'"{lowered}"'
        report(
            identifier,
            f'quoted identifier "{name}" keeps its capitals, but the engine stores '
            f"{lowered}: the query fails (400 Bad Request)",
            f"write {written}",
            fix=_lowercase(identifier),
        )


RULES = [
    Rule(
        code="HDQ040",
        name="postgres-text-search",
        severity=Severity.ERROR,
        summary="PostgreSQL full-text functions (to_tsvector, plainto_tsquery, ...)",
        check=postgres_text_search,
    ),
    Rule(
        code="HDQ041",
        name="template-without-directive",
        severity=Severity.ERROR,
        summary="to_char/to_date/to_timestamp with a template that has no % directive",
        check=template_without_directive,
    ),
    Rule(
        code="HDQ042",
        name="missing-date-function",
        severity=Severity.ERROR,
        summary="date_sub (and dateadd, datediff), which the engine does not have",
        check=missing_date_function,
    ),
    Rule(
        code="HDQ043",
        name="quoted-mixed-case",
        severity=Severity.ERROR,
        summary="a quoted identifier with capitals (the engine stores lower case)",
        check=quoted_mixed_case,
        fixable=True,
    ),
]
