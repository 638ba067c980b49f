"""The one result shape every tool returns: ``{"metadata": {...}, "rows": [...]}``.

``rows`` are the engine's rows as plain JSON values, under the engine's own column names
(``score`` for a relevance or fused score, ``_distance`` for a distance). ``metadata`` always
holds:

- ``tool``: the tool that answered;
- ``row_count``: how many rows the query produced;
- ``returned``: how many of them are in ``rows``;
- ``truncated``: whether the tool's row ceiling left rows out (a clamped ``k``, or a SQL
  result longer than the ceiling);
- ``warnings``: a list of ``{"code", "severity", "message", ...}`` objects; the linter's
  findings keep all their fields (``suggestion``, ``line``, ``column``, ...).

Search tools add ``table``, ``k``, ``ranked_by`` (the ranking column) and ``order``
(``descending`` or ``ascending``); a clamped call adds ``k_requested``.

>>> document = envelope(
...     [{"id": 1, "score": 0.5}], tool="search", row_count=1,
...     warnings=[ToolWarning(code="k_clamped", message="k=90 was reduced to 50")],
... )
>>> document["metadata"]["warnings"][0]["code"]
'k_clamped'
>>> import datetime
>>> print(to_json(envelope([{"when": datetime.date(2024, 1, 2)}], tool="sql"))[-33:])
"rows": [{"when": "2024-01-02"}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from hotdata_retrieval._json import jsonable as jsonable  # re-exported: the envelope's values


@attrs.frozen(kw_only=True)
class ToolWarning:
    """One entry of ``metadata.warnings`` that is not a lint finding.

    Attributes:
        code: a stable, lower-case code, e.g. ``k_clamped`` or ``rows_truncated``.
        message: one or two sentences written for the model that reads the result.
        severity: ``warning`` (default) or ``error``.
    """

    code: str
    message: str
    severity: str = "warning"

    def to_dict(self) -> dict[str, Any]:
        """The warning as plain JSON values."""
        return {"code": self.code, "severity": self.severity, "message": self.message}


def envelope(
    rows: Sequence[Mapping[str, Any]],
    *,
    tool: str,
    row_count: int | None = None,
    truncated: bool = False,
    warnings: Iterable[Any] = (),
    **metadata: Any,
) -> dict[str, Any]:
    """Build a result document.

    Args:
        rows: the rows to return, already cut to the tool's ceiling.
        tool: the answering tool's name.
        row_count: rows the query produced (default ``len(rows)``).
        truncated: whether the ceiling left rows out.
        warnings: :class:`ToolWarning` objects, lint findings, or dictionaries.
        metadata: more metadata fields, after the standard ones.
    """
    header: dict[str, Any] = {
        "tool": tool,
        "row_count": len(rows) if row_count is None else row_count,
        "returned": len(rows),
        "truncated": truncated,
        "warnings": [jsonable(warning) for warning in warnings],
    }
    header.update(jsonable(metadata))
    return {"metadata": header, "rows": [jsonable(dict(row)) for row in rows]}


EXPLANATION_KEY = "explanation"
"""The key of a row (a tool's row, a Document's or a node's metadata) holding what a fused
score is made of (:meth:`~hotdata_retrieval.engines.results.SearchHit.explanation`)."""

HIGHLIGHTS_KEY = "highlights"
"""The key of a row holding its highlights
(:attr:`~hotdata_retrieval.engines.results.SearchHit.highlights`)."""


def added_keys(plan: Any) -> tuple[str, ...]:
    """The keys a door adds to each row of ``plan``'s hits beside the row's columns:
    :data:`EXPLANATION_KEY` when its hits explain their scores (``explain_scores``, or a
    score formula's terms) and :data:`HIGHLIGHTS_KEY` when a highlight step runs.

    >>> from hotdata_retrieval.plan import SearchPlan, Bm25Search, TableName
    >>> added_keys(SearchPlan(source=Bm25Search(table=TableName.parse("t"), column="body",
    ...     query_text="fox"), limit=3))
    ()
    """
    from hotdata_retrieval.plan.steps import Highlight

    keys = []
    if plan.fusion is not None and (plan.explain_scores or plan.formula is not None):
        keys.append(EXPLANATION_KEY)
    if any(isinstance(step, Highlight) for step in plan.steps):
        keys.append(HIGHLIGHTS_KEY)
    return tuple(keys)


def check_not_shadowed(columns: Iterable[str], added: Iterable[str], *, where: str) -> None:
    """Refuse a row column named as a key the door adds to the same row, whose value would
    silently replace the column's.

    Args:
        columns: the columns each row carries.
        added: the keys the door writes beside them (:func:`added_keys` and its own).
        where: who adds the keys where, for the message (``"this tool adds to each
            row"``).

    Raises:
        PlanError: naming the first such column.
    """
    from hotdata_retrieval.errors import PlanError

    taken = set(added)
    for column in columns:
        if column in taken:
            raise PlanError(
                f"column {column!r} has the name of a key {where}, whose value would "
                "replace the column's; leave the column out, or search without the option "
                "that adds the key",
                field="columns",
                value=column,
            )


def to_json(document: Mapping[str, Any]) -> str:
    """A result document as JSON text (the text a model reads); never ``NaN``."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, default=str)
