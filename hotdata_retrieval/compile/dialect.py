"""Per-dialect tables: everything that differs between SQL targets, as data.

A dialect is one :class:`DialectProfile` (function names, literal forms, capability flags)
plus the sqlglot dialect that renders it. Adding a target is one small module that builds a
profile and calls :func:`register_dialect`. A plan that needs a capability the profile lacks
raises :class:`~hotdata_retrieval.errors.UnsupportedFeatureError` naming the dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from hotdata_retrieval.errors import UnknownDialectError, UnsupportedFeatureError
from hotdata_retrieval.plan.search import DistanceMetric

__all__ = ["DialectProfile", "get_dialect", "known_dialects", "register_dialect"]


@attrs.frozen(kw_only=True)
class DialectProfile:
    """What one SQL target can express and how it spells it.

    Attributes:
        name: the dialect's name, as passed to ``to_sql(..., dialect=name)``.
        sqlglot_dialect: the sqlglot ``Dialect`` subclass that renders trees for it.
        distance_functions: the scalar distance function per metric (lower is nearer).
        text_search_function: the BM25 table function, or ``None`` if there is none.
        semantic_search_function: the engine-embedded semantic table function, or ``None``.
        semantic_distance_function: the engine-embedded semantic *scalar* distance
            (``vector_distance(<text column>, '<query>')``), or ``None``. A filtered semantic
            branch uses it, so the filter applies before the bound.
        vector_literal_open: text that opens a vector literal (``ARRAY[``).
        vector_literal_close: text that closes it (``]``).
        vector_literal_separator: text between two components (``, ``).
        supports_full_outer_join: whether fusion may use ``FULL OUTER JOIN``.
        native_hybrid_search: the engine's native ``hybrid_search`` table function
            (``docs/spec/hybrid_search.md``), or ``None``. When set, a fusion of one text
            branch and one vector branch compiles to one call of it instead of the CTE form.
    """

    name: str
    sqlglot_dialect: Any = attrs.field(eq=False)
    distance_functions: Mapping[DistanceMetric, str] = attrs.field(eq=False)
    text_search_function: str | None = None
    semantic_search_function: str | None = None
    semantic_distance_function: str | None = None
    vector_literal_open: str = "ARRAY["
    vector_literal_close: str = "]"
    vector_literal_separator: str = ", "
    supports_full_outer_join: bool = True
    native_hybrid_search: str | None = None

    def distance_function(self, metric: DistanceMetric) -> str:
        """The function computing ``metric``.

        Raises:
            UnsupportedFeatureError: the dialect has no function for it.
        """
        try:
            return self.distance_functions[metric]
        except KeyError:
            raise UnsupportedFeatureError(f"the {metric.value} distance", self.name) from None

    def require(self, function: str | None, feature: str) -> str:
        """Return ``function``, or raise if the dialect lacks ``feature``.

        Raises:
            UnsupportedFeatureError: ``function`` is ``None``.
        """
        if function is None:
            raise UnsupportedFeatureError(feature, self.name)
        return function

    def vector_literal(self, vector: tuple[float, ...]) -> str:
        """Render a query vector once, each component with the shortest text that
        round-trips to the same double (Python's ``repr``).

        >>> from hotdata_retrieval.compile import get_dialect
        >>> get_dialect("hotdata").vector_literal((0.1, -2.0, 1e-05))
        'ARRAY[0.1, -2.0, 1e-05]'
        """
        return (
            self.vector_literal_open
            + self.vector_literal_separator.join(map(repr, vector))
            + self.vector_literal_close
        )


_REGISTRY: dict[str, DialectProfile] = {}


def register_dialect(profile: DialectProfile) -> DialectProfile:
    """Make ``profile`` available by name; returns it."""
    _REGISTRY[profile.name] = profile
    return profile


def known_dialects() -> tuple[str, ...]:
    """Names of every registered dialect, sorted."""
    return tuple(sorted(_REGISTRY))


def get_dialect(dialect: str | DialectProfile) -> DialectProfile:
    """Look a dialect up by name (a profile is returned unchanged).

    Raises:
        UnknownDialectError: no dialect of that name is registered.
    """
    if isinstance(dialect, DialectProfile):
        return dialect
    try:
        return _REGISTRY[dialect]
    except (KeyError, TypeError):
        raise UnknownDialectError(str(dialect), known_dialects()) from None
