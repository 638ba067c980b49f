"""Bounds on SQL that someone else wrote: a time limit, a memory limit, no unbounded recursion.

An agent's SQL tool runs text the library did not write. :class:`SqlLimits` says how much one
such statement may cost; an engine that enforces them itself (the local engine's
:meth:`~hotdata_retrieval.engines.local.LocalEngine.stream_sql`) cancels the query when the
time runs out — the engine stops computing, the caller does not merely stop waiting — and
fails it when its memory pool is exhausted. Each overrun is a :class:`SqlLimitError` naming
the limit. The row and byte ceilings of a reply are applied while its batches are read
(:func:`hotdata_retrieval.adapters.bounded.read_bounded`).

This module needs neither engine's dependencies.
"""

from __future__ import annotations

from typing import Any

import attrs

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.errors import HotdataRetrievalError

__all__ = [
    "DEFAULT_MEMORY_BYTES",
    "DEFAULT_TIMEOUT_SECONDS",
    "InvalidLimitError",
    "SqlLimitError",
    "SqlLimits",
]

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Seconds one agent statement may run before it is cancelled."""

DEFAULT_MEMORY_BYTES = 1 << 30
"""Bytes of working memory (sorts, joins, aggregates) agent statements may hold at once: 1 GiB.
Past it the statement fails; nothing spills to disk."""


class InvalidLimitError(HotdataRetrievalError, ValueError):
    """A limit that is not a positive number (the message names it and the value)."""


def _positive_number(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidLimitError(f"{attribute.name} must be a positive number, got {value!r}")


def _positive_integer(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidLimitError(
            f"{attribute.name} must be a whole number of at least 1, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class SqlLimits:
    """What one SQL statement from an untrusted author may cost.

    Attributes:
        timeout_seconds: wall-clock seconds before the statement is cancelled (the engine
            stops computing, it does not just stop waiting). Default 30.
        memory_bytes: bytes of tracked working memory (DataFusion's memory pool: sorts,
            joins, aggregates, windows) all agent statements of one engine share. Default
            1 GiB. Nothing spills to disk.
        allow_recursive_queries: run ``WITH RECURSIVE``. Off by default: DataFusion bounds
            a recursive query by no depth, only the time limit stops one that never ends.

    Raises:
        InvalidLimitError: a limit that is not a positive number.
    """

    timeout_seconds: float = attrs.field(
        default=DEFAULT_TIMEOUT_SECONDS, validator=_positive_number
    )
    memory_bytes: int = attrs.field(default=DEFAULT_MEMORY_BYTES, validator=_positive_integer)
    allow_recursive_queries: bool = False

    def timeout_error(self, sql: str | None = None) -> SqlLimitError:
        """The error of a statement stopped at :attr:`timeout_seconds` (every engine's one
        message)."""
        return SqlLimitError(
            f"the query ran longer than the time limit of {self.timeout_seconds:g} seconds "
            "and was cancelled; make it cheaper (filter first, aggregate, LIMIT)",
            limit="timeout_seconds",
            value=self.timeout_seconds,
            sql=sql,
        )

    def memory_error(self, sql: str | None = None, *, detail: str = "") -> SqlLimitError:
        """The error of a statement stopped at :attr:`memory_bytes`; ``detail`` is the
        engine's own words, if any (on one line)."""
        message = (
            f"the query needed more than its memory limit of {self.memory_bytes:,} bytes "
            "and was stopped; make it cheaper (filter first, aggregate, fewer columns)"
        )
        if detail:
            message += f": {' '.join(detail.split())}"
        return SqlLimitError(message, limit="memory_bytes", value=self.memory_bytes, sql=sql)

    def recursion_error(self, sql: str | None = None) -> SqlLimitError:
        """The error of a recursive query when :attr:`allow_recursive_queries` is off."""
        return SqlLimitError(
            "recursive queries (WITH RECURSIVE) are not allowed here: nothing would bound "
            "their depth",
            limit="allow_recursive_queries",
            value=self.allow_recursive_queries,
            sql=sql,
        )


class SqlLimitError(EngineError):
    """A statement went past one of its :class:`SqlLimits`.

    Attributes:
        limit: which limit: ``timeout_seconds``, ``memory_bytes`` or ``recursion``.
        value: the limit's value.
    """

    def __init__(self, message: str, *, limit: str, value: Any, sql: str | None = None) -> None:
        super().__init__(message, sql=sql)
        self.limit = limit
        self.value = value
