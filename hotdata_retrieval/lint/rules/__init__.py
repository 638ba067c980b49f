"""Every lint rule, by code.

One module per rule family:

- :mod:`.fast_path` — shapes that lose the vector index (HDQ001-HDQ009).
- :mod:`.search_calls` — search functions that lose the ranking or the row count
  (HDQ010-HDQ015).
- :mod:`.catalog_checks` — rules that need the index catalog (HDQ003, HDQ020-HDQ024).
- :mod:`.ranking` — scores and distances combined, filters after a top-k (HDQ030-HDQ031).
- :mod:`.postgres` — PostgreSQL habits the engine rejects (HDQ040-HDQ043).
- :mod:`.comments` — text the engine reads differently from how it looks (HDQ050).
"""

from __future__ import annotations

from hotdata_retrieval.lint.rules import (
    catalog_checks,
    comments,
    fast_path,
    postgres,
    ranking,
    search_calls,
)
from hotdata_retrieval.lint.rules.base import Issue, Report, Rule

__all__ = ["RULES", "RULES_BY_CODE", "Issue", "Report", "Rule"]

RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            *fast_path.RULES,
            *search_calls.RULES,
            *catalog_checks.RULES,
            *ranking.RULES,
            *postgres.RULES,
            *comments.RULES,
        ),
        key=lambda rule: rule.code,
    )
)
"""Every rule, in code order."""

RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
"""Every rule by its code."""

assert len(RULES_BY_CODE) == len(RULES), "two rules share a code"
