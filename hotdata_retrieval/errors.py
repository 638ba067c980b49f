"""The typed errors every part of the library raises.

All of them derive from :class:`HotdataRetrievalError`, so one ``except`` clause catches
everything the library raises on purpose. Each error carries the offending value as an
attribute as well as in its message, and its message says what would have been valid.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DuplicateColumnError",
    "HotdataRetrievalError",
    "PlanError",
    "TableNameError",
    "UnknownDialectError",
    "UnknownEngineError",
    "UnsupportedFeatureError",
]


class HotdataRetrievalError(Exception):
    """Base class of every error raised by ``hotdata_retrieval``."""


class PlanError(HotdataRetrievalError, ValueError):
    """A retrieval plan (or one of its parts) would be invalid.

    Raised at construction time, so an invalid plan never exists.

    Attributes:
        field: the name of the offending field, e.g. ``"limit"`` or ``"query_vector"``.
        value: the offending value, exactly as the caller passed it.
        mentions: other field names the message names as words (say the options a fusion
            method does take), so a command line can spell them as its options, as it does
            ``field``.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: Any = None,
        mentions: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        self.mentions = mentions


class TableNameError(PlanError):
    """A table reference cannot be parsed or completed into ``catalog.schema.table``."""


class UnknownDialectError(HotdataRetrievalError, ValueError):
    """The requested SQL dialect is not one this library can compile to.

    Attributes:
        dialect: the name that was asked for.
        known: the names that are available.
    """

    def __init__(self, dialect: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown dialect {dialect!r}; known dialects: {', '.join(known)}")
        self.dialect = dialect
        self.known = known


class UnsupportedFeatureError(HotdataRetrievalError, NotImplementedError):
    """A plan uses a feature that the target dialect cannot express.

    Attributes:
        feature: what the plan asked for, e.g. ``"bm25_search"``.
        dialect: the dialect that cannot express it.
    """

    def __init__(self, feature: str, dialect: str) -> None:
        super().__init__(f"dialect {dialect!r} does not support {feature}")
        self.feature = feature
        self.dialect = dialect


class DuplicateColumnError(HotdataRetrievalError, ValueError):
    """A result names two of its columns alike: read as rows (a mapping of column names to
    values) one of the two values would be lost.

    Attributes:
        column: the repeated name.
    """

    def __init__(self, column: str) -> None:
        super().__init__(
            f"the result has more than one column named {column!r}; give each column a name "
            "of its own (SELECT a.id AS a_id, b.id AS b_id ...)"
        )
        self.column = column


class UnknownEngineError(HotdataRetrievalError, ValueError):
    """No engine of that name is registered
    (:func:`~hotdata_retrieval.engines.registry.engine_kind`).

    Attributes:
        name: the name asked for.
        known: the registered names.
    """

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown engine {name!r}; known engines: {', '.join(known)}")
        self.name = name
        self.known = known
