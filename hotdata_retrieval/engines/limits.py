"""Bounds on what someone else wrote: SQL (a time limit, a memory limit, no unbounded
recursion), the text of an agent's call, and a remote service's answer.

An agent's SQL tool runs text the library did not write. :class:`SqlLimits` says how much one
such statement may cost; an engine that enforces them itself (the local engine's
:meth:`~hotdata_retrieval.engines.local.LocalEngine.stream_sql`) cancels the query when the
time runs out — the engine stops computing, the caller does not merely stop waiting — and
fails it when its memory pool is exhausted. Each overrun is a :class:`SqlLimitError` naming
the limit. The row and byte ceilings of a reply are applied while its batches are read
(:func:`hotdata_retrieval.adapters.bounded.read_bounded`).

:class:`ResponseLimits` bounds each HTTP answer the remote engines read (Hotdata,
turbopuffer): its bytes as sent and once decompressed, counted while it streams in
(:mod:`hotdata_retrieval._http`). Each overrun is a :class:`ResponseLimitError`.

This module needs neither engine's dependencies.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import attrs

from hotdata_retrieval.errors import InputLimitError as InputLimitError
from hotdata_retrieval.errors import InvalidLimitError as InvalidLimitError
from hotdata_retrieval.errors import ResponseLimitError as ResponseLimitError
from hotdata_retrieval.errors import SqlLimitError as SqlLimitError

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Seconds one agent statement may run before it is cancelled."""

DEFAULT_MEMORY_BYTES = 1 << 30
"""Bytes of working memory (sorts, joins, aggregates) agent statements may hold at once: 1 GiB.
Past it the statement fails; nothing spills to disk."""


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


DEFAULT_MAX_DECODED_BYTES = 4 << 30
"""The most a file ``hdq load`` reads may hold once decoded, by default: 4 GiB (``read_source``'s
``max_decoded_bytes`` in :mod:`hotdata_retrieval.engines.local.loading`; ``hdq load
--max-decoded-size``, in MiB). Bounded before a value is decoded where the file tells — a
Parquet file's metadata and page headers, a CSV or JSON lines file's rows and fields, read
line by line — and counted batch by batch where it does not, so that a file past it is
refused having held about a batch, not the limit. Before, a 2,520-byte Parquet file of 540
million equal integers (4.3 GB decoded) made ``hdq load`` peak at 5.7 GB before it was
refused, an 873-byte one of two lists at 8.4 GB."""

DEFAULT_MAX_QUERY_CHARACTERS = 4096
"""Characters of one search query from an agent: far beyond a question or a pasted paragraph,
far below what costs the server seconds (a 10 MB query took 254 s and 2.1 GiB)."""

DEFAULT_MAX_QUERY_TERMS = 128
"""Words (runs of letters and digits) in one search query from an agent: each is a term the
full-text index looks up, and query time grows with them (160,000 words took 22 s)."""

DEFAULT_MAX_FILTER_CHARACTERS = 8192
"""Characters of one filter object from an agent, written as compact JSON: room for a few
hundred conditions; its nesting and its number of conditions are bounded besides, as every
filter's are (``MAX_FILTER_DEPTH``, ``MAX_FILTER_TERMS`` in
:mod:`hotdata_retrieval.plan.filters`)."""

DEFAULT_MAX_SQL_CHARACTERS = 65536
"""Characters of one SQL text from an agent. Reading and linting it happens in the server's
process before the statement runs: 64 Ki characters read and lint in about 0.3 s (a 1.5 MB
``IN`` list took two minutes)."""


@attrs.frozen(kw_only=True)
class InputLimits:
    """How much text one call from an agent may carry, checked before anything reads it.

    Attributes:
        max_query_characters: characters of a search query (default 4,096).
        max_query_terms: words of a search query (default 128).
        max_sql_characters: characters of a SQL text (default 65,536).
        max_filter_characters: characters of a filter object as compact JSON (default 8,192).

    Raises:
        InvalidLimitError: a limit that is not a whole number of at least 1.
    """

    max_query_characters: int = attrs.field(
        default=DEFAULT_MAX_QUERY_CHARACTERS, validator=_positive_integer
    )
    max_query_terms: int = attrs.field(default=DEFAULT_MAX_QUERY_TERMS, validator=_positive_integer)
    max_sql_characters: int = attrs.field(
        default=DEFAULT_MAX_SQL_CHARACTERS, validator=_positive_integer
    )
    max_filter_characters: int = attrs.field(
        default=DEFAULT_MAX_FILTER_CHARACTERS, validator=_positive_integer
    )

    def check_query(self, query: str) -> None:
        """Refuse a search query over :attr:`max_query_characters` or
        :attr:`max_query_terms` (words: runs of letters and digits), before anything reads it.

        Raises:
            InputLimitError: naming the limit.
        """
        if len(query) > self.max_query_characters:
            raise InputLimitError(
                f"query has {len(query):,} characters; this tool takes at most "
                f"{self.max_query_characters:,} (max_query_characters): search for the few "
                "words that matter",
                limit="max_query_characters",
            )
        words = itertools.islice(_WORD.finditer(query), self.max_query_terms + 1)
        if sum(1 for _ in words) > self.max_query_terms:
            raise InputLimitError(
                f"query has more than {self.max_query_terms:,} words, the most this tool "
                "takes (max_query_terms): search for the few words that matter",
                limit="max_query_terms",
            )

    def check_filter(self, value: Any) -> None:
        """Refuse a filter object longer than :attr:`max_filter_characters` as compact JSON,
        before it is read.

        Raises:
            InputLimitError: naming the limit.
        """
        try:
            text = json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return  # not JSON: the filter's own reading refuses it, naming where
        if len(text) > self.max_filter_characters:
            raise InputLimitError(
                f"filter has {len(text):,} characters as JSON; this tool takes at most "
                f"{self.max_filter_characters:,} (max_filter_characters): filter on fewer "
                "values, or count and group in SQL",
                limit="max_filter_characters",
            )


DEFAULT_MAX_RESPONSE_BYTES = 256 << 20
"""Bytes of one HTTP answer's body as the server sends it (before decompression): 256 MiB,
past a large search's answer (1,200 rows each holding a 1,536-dimension vector, written as JSON,
are about 41 MB)."""

DEFAULT_MAX_DECOMPRESSED_BYTES = 256 << 20
"""Bytes of one HTTP answer's body once decompressed: 256 MiB. A gzip stream expands up to
about 1,000 times (zlib's technical details, "Maximum compression factor": 1032:1), so a body
within :data:`DEFAULT_MAX_RESPONSE_BYTES` could otherwise expand to hundreds of GB."""


@attrs.frozen(kw_only=True)
class ResponseLimits:
    """What one HTTP answer from a remote engine's service may cost, counted while its body
    streams in: past either limit the request is stopped, its connection closed, and the call
    fails with a :class:`ResponseLimitError` naming the limit.

    Attributes:
        max_response_bytes: bytes of the body as sent, before decompression (default
            256 MiB).
        max_decompressed_bytes: bytes of the body once decompressed (default 256 MiB). Bodies
            are decompressed by the library (``gzip`` and ``deflate``), never by the client.

    Raises:
        InvalidLimitError: a limit that is not a whole number of at least 1.
    """

    max_response_bytes: int = attrs.field(
        default=DEFAULT_MAX_RESPONSE_BYTES, validator=_positive_integer
    )
    max_decompressed_bytes: int = attrs.field(
        default=DEFAULT_MAX_DECOMPRESSED_BYTES, validator=_positive_integer
    )

    def size_error(self, limit: str, *, answer: str) -> ResponseLimitError:
        """The error of an answer stopped at ``limit`` (``max_response_bytes`` or
        ``max_decompressed_bytes``); ``answer`` says whose answer to what (``"the Hotdata
        API's answer to the query"``)."""
        value: int = getattr(self, limit)
        kind = "as sent" if limit == "max_response_bytes" else "once decompressed"
        return ResponseLimitError(
            f"{answer} is larger than {value:,} bytes {kind} ({limit}); it was stopped and "
            "its connection closed: ask for less (fewer rows or columns), or raise the limit",
            limit=limit,
            value=value,
        )


_WORD = re.compile(r"\w+")
"""A word of a search query, as :attr:`InputLimits.max_query_terms` counts them."""
