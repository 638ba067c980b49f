"""Reading a SQL result under a row and a byte ceiling, batch by batch.

An agent's SQL tool must never build a huge reply, nor a huge result only to cut it:
:func:`read_bounded` converts rows to Python values only while they fit the ceilings, then
only counts the rest, up to a counting limit, and closes the batch iterator — on an engine
that streams (the local engine's ``stream_sql``), closing it cancels the query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from hotdata_retrieval.adapters.envelope import jsonable
from hotdata_retrieval.errors import DuplicateColumnError

DEFAULT_MAX_BYTES = 256 * 1024
"""Bytes of rows, as the JSON text a model reads, one reply may carry: 256 KiB."""

DEFAULT_COUNT_LIMIT = 100_000
"""Rows counted in all (kept or not) before the count is reported as a lower bound."""


@attrs.frozen(kw_only=True)
class BoundedResult:
    """The part of a result that fits the ceilings.

    Attributes:
        columns: the result's column names, in order.
        rows: the rows kept, as plain Python values.
        row_count: rows the query produced (a lower bound when ``row_count_exact`` is false).
        row_count_exact: whether every row was counted.
        stopped_by: ``"max_rows"`` or ``"max_bytes"`` when a ceiling left rows out.
        oversized_row_bytes: when the very first row was over the byte ceiling, its size.
    """

    columns: tuple[str, ...]
    rows: list[dict[str, Any]]
    row_count: int
    row_count_exact: bool
    stopped_by: str | None = None
    oversized_row_bytes: int | None = None

    @property
    def truncated(self) -> bool:
        """Whether rows the query produced are missing from :attr:`rows`."""
        return self.row_count > len(self.rows)


def json_size(row: dict[str, Any]) -> int:
    """Bytes of ``row`` as the UTF-8 JSON text of a reply."""
    text = json.dumps(jsonable(row), ensure_ascii=False, allow_nan=False, default=str)
    return len(text.encode("utf-8", "surrogatepass"))


def read_bounded(
    batches: Iterable[Any],
    *,
    max_rows: int,
    max_bytes: int = DEFAULT_MAX_BYTES,
    count_limit: int = DEFAULT_COUNT_LIMIT,
    columns: Iterable[str] = (),
) -> BoundedResult:
    """Keep rows while they fit ``max_rows`` and ``max_bytes``, then only count, up to
    ``count_limit`` rows in all.

    A row whose Arrow size is more than eight times the remaining byte budget is never
    converted: JSON text is at least an eighth of the Arrow bytes (8-byte numbers, 4-byte
    string offsets), so it cannot fit.

    Args:
        batches: ``pyarrow.RecordBatch`` objects in result order; closed when reading stops.
        max_rows: rows to keep (at least 1).
        max_bytes: bytes of kept rows, as JSON text.
        count_limit: rows to count before the count becomes a lower bound.
        columns: the column names of a result that has no batches.

    Returns:
        The kept rows, the row count and why reading stopped.

    Raises:
        DuplicateColumnError: two columns of the result have one name (a row could hold
            only one of their values).
    """
    kept: list[dict[str, Any]] = []
    names = tuple(columns)
    used = 0
    seen = 0
    exact = True
    stopped_by: str | None = None
    oversized: int | None = None
    iterator: Iterator[Any] = iter(batches)
    try:
        for batch in iterator:
            names = names or tuple(batch.schema.names)
            repeated = next((name for name in names if names.count(name) > 1), None)
            if repeated is not None:
                raise DuplicateColumnError(repeated)
            if not batch.num_columns:
                continue  # a column-less result has no rows to show
            position = 0
            while stopped_by is None and position < batch.num_rows:
                if len(kept) >= max_rows:
                    stopped_by = "max_rows"
                    break
                one = batch.slice(position, 1)
                remaining = max_bytes - used
                row = None if one.nbytes > 8 * remaining + 64 else one.to_pylist()[0]
                size = int(one.nbytes) if row is None else json_size(row)
                if row is None or size > remaining:
                    stopped_by = "max_bytes"
                    if not kept:
                        oversized = size
                    break
                kept.append(row)
                used += size
                position += 1
            seen += batch.num_rows
            if stopped_by is not None and seen >= count_limit:
                exact = False
                break
    finally:
        close = getattr(iterator, "close", None)
        if callable(close):
            close()
    return BoundedResult(
        columns=names,
        rows=kept,
        row_count=seen,
        row_count_exact=exact,
        stopped_by=stopped_by,
        oversized_row_bytes=oversized,
    )
