"""Per-dialect tables: everything that differs between SQL targets, as data plus overrides.

A dialect is three things, the way sqlglot and ibis split them:

- a sqlglot ``Dialect`` whose ``Generator`` renders the compiled tree: its ``TRANSFORMS`` hold
  :data:`~hotdata_retrieval.compile.nodes.COMPILER_TRANSFORMS`, and its ``SEARCH_NODES`` table
  lowers each search node the dialect can express to its own SQL (function names live there);
- a :class:`DialectProfile`: the dialect's name, that sqlglot dialect, the compiler class, the
  vector-literal form and the capability flags that change the statement's shape;
- optionally a compiler subclass (``DialectProfile.compiler``) overriding the ``visit_<node>``
  methods whose shape differs on that engine.

Adding a target is one small module that builds these and calls :func:`register_dialect`
(``docs/architecture.md``, "How to add a dialect"). A plan that needs something the dialect
cannot express raises :class:`~hotdata_retrieval.compile.nodes.UnsupportedOnDialectError`
("unsupported on <dialect>: <what>") while it is compiled, before any SQL is written.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.compile.nodes import (
    DistanceFunctions,
    SearchNode,
    SemanticDistance,
    SemanticSearch,
    TextSearch,
    UnsupportedOnDialectError,
    VectorDistance,
    search_lowerings,
    unsupported,
)
from hotdata_retrieval.errors import UnknownDialectError
from hotdata_retrieval.plan.search import DistanceMetric

if TYPE_CHECKING:
    from hotdata_retrieval.compile.compiler import PlanCompiler


def _function_name(profile: DialectProfile, node: type[SearchNode]) -> str | None:
    name = getattr(search_lowerings(profile.sqlglot_dialect).get(node), "name", None)
    return name if isinstance(name, str) else None


def _distance_functions(profile: DialectProfile) -> Mapping[DistanceMetric, str]:
    lowering = search_lowerings(profile.sqlglot_dialect).get(VectorDistance)
    return dict(lowering.functions) if isinstance(lowering, DistanceFunctions) else {}


@attrs.frozen(kw_only=True, eq=False)
class DialectProfile:
    """What one SQL target can express and how it spells it.

    Profiles compare (and hash) by identity: two profiles are the same dialect only if they
    are the same object, so a profile evolved from another (``attrs.evolve``) never shares the
    other's cached statements.

    Attributes:
        name: the dialect's name, as passed to ``to_sql(..., dialect=name)``.
        sqlglot_dialect: the sqlglot ``Dialect`` subclass that renders trees for it; its
            generator's ``SEARCH_NODES`` table says which search nodes it can express.
        compiler: the :class:`~hotdata_retrieval.compile.compiler.PlanCompiler` subclass that
            compiles plans for it (``None``: ``PlanCompiler`` itself).
        vector_literal_open: text that opens a vector literal (``ARRAY[``).
        vector_literal_close: text that closes it (``]``).
        vector_literal_separator: text between two components (``, ``).
        supports_full_outer_join: whether fusion may use ``FULL OUTER JOIN``; without it, a
            fusion joins each branch with ``LEFT JOIN`` to the ``UNION`` of their keys.
        full_text_query: turns a text branch's query text into the text the dialect's
            full-text search reads (SQLite's FTS5 query syntax, where user text must be
            quoted to stay data), or ``None`` to pass it as written.
        native_hybrid_search: the engine's native ``hybrid_search`` table function
            (``docs/spec/hybrid_search.md``), or ``None``. When set, a reciprocal rank fusion
            of one text branch and one vector branch compiles to one call of it instead of
            the CTE form.
        text_search_function: (derived from the generator) the function full-text search
            lowers to, or ``None``; read by tools that read the SQL, such as the linter.
        semantic_search_function: (derived) likewise for engine-embedded semantic search.
        semantic_distance_function: (derived) likewise for the scalar semantic distance
            (``vector_distance(<text column>, '<query>')``); without it, a filtered semantic
            branch falls back to the table function, which bounds before it filters.
        distance_functions: (derived) the scalar distance function per metric (lower is
            nearer).
        distance_metrics: (derived) the other way round: the metric each of those functions
            computes, by the function's lower-case name.
        guards_null_folds: whether the engine's optimizer folds a same-column contradiction
            or tautology (``x IN (1) AND x NOT IN (1)``) to FALSE or TRUE without regard to
            NULL, so the compiler writes such a group with a NULL guard that keeps its
            three-valued answer (:mod:`~hotdata_retrieval.compile._null_guards`: DataFusion
            55, and LanceDB 0.40 over DataFusion 54).
    """

    name: str
    sqlglot_dialect: Any
    compiler: type[PlanCompiler] | None = None
    vector_literal_open: str = "ARRAY["
    vector_literal_close: str = "]"
    vector_literal_separator: str = ", "
    supports_full_outer_join: bool = True
    native_hybrid_search: str | None = None
    full_text_query: Callable[[str], str] | None = None
    guards_null_folds: bool = False
    text_search_function: str | None = attrs.field(init=False)
    semantic_search_function: str | None = attrs.field(init=False)
    semantic_distance_function: str | None = attrs.field(init=False)
    distance_functions: Mapping[DistanceMetric, str] = attrs.field(init=False)
    distance_metrics: Mapping[str, DistanceMetric] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        functions = _distance_functions(self)
        derived = {
            "text_search_function": _function_name(self, TextSearch),
            "semantic_search_function": _function_name(self, SemanticSearch),
            "semantic_distance_function": _function_name(self, SemanticDistance),
            "distance_functions": functions,
            "distance_metrics": {name.lower(): metric for metric, name in functions.items()},
        }
        for field, value in derived.items():
            object.__setattr__(self, field, value)

    @property
    def generator(self) -> Any:
        """The sqlglot generator class that renders this dialect."""
        return self.sqlglot_dialect.generator_class

    def renders(self, node: type[SearchNode]) -> bool:
        """Whether the dialect's generator has a lowering for search nodes of class ``node``."""
        return node in search_lowerings(self.sqlglot_dialect)

    def check(self, node: SearchNode) -> SearchNode:
        """Return ``node`` if the dialect can express it.

        Raises:
            UnsupportedOnDialectError: it cannot ("unsupported on <name>: <what>").
        """
        reason = unsupported(self.sqlglot_dialect, node)
        if reason is not None:
            raise UnsupportedOnDialectError(reason, self.name)
        return node

    def distance_function(self, metric: DistanceMetric) -> str:
        """The function computing ``metric``.

        Raises:
            UnsupportedOnDialectError: the dialect has no function for it.
        """
        try:
            return self.distance_functions[metric]
        except KeyError:
            raise UnsupportedOnDialectError(f"the {metric.value} distance", self.name) from None

    def require(self, function: str | None, feature: str) -> str:
        """Return ``function``, or raise if the dialect lacks ``feature``.

        Raises:
            UnsupportedOnDialectError: ``function`` is ``None``.
        """
        if function is None:
            raise UnsupportedOnDialectError(feature, self.name)
        return function

    def full_text(self, query_text: str) -> str:
        """``query_text`` as the dialect's full-text search reads it (:attr:`full_text_query`).

        >>> from hotdata_retrieval.compile import get_dialect
        >>> get_dialect("hotdata").full_text("error E1234")
        'error E1234'
        """
        return query_text if self.full_text_query is None else self.full_text_query(query_text)

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

_BUILT_IN: dict[str, str] = {
    "hotdata": "hotdata_retrieval.compile.hotdata",
    "hotdata-native": "hotdata_retrieval.compile.hotdata",
    "sqlite": "hotdata_retrieval.compile.sqlite",
    "sqlite-before-3.39": "hotdata_retrieval.compile.sqlite",
    "duckdb": "hotdata_retrieval.compile.duckdb",
    "postgres": "hotdata_retrieval.compile.postgres",
}
"""The library's own dialects and the module that registers each: a module (and the sqlglot
dialect it builds on) is imported when its dialect is first asked for, so compiling for one
dialect never loads the others."""


def register_dialect(profile: DialectProfile) -> DialectProfile:
    """Make ``profile`` available by name (replacing any profile of that name); returns it."""
    _REGISTRY[profile.name] = profile
    return profile


def known_dialects() -> tuple[str, ...]:
    """Names of every registered dialect (the library's own included, imported or not),
    sorted."""
    return tuple(sorted(set(_REGISTRY) | set(_BUILT_IN)))


def get_dialect(dialect: str | DialectProfile) -> DialectProfile:
    """Look a dialect up by name (a profile is returned unchanged); one of the library's own is
    imported on first use.

    Raises:
        UnknownDialectError: no dialect of that name is registered.
    """
    if isinstance(dialect, DialectProfile):
        return dialect
    if isinstance(dialect, str) and dialect not in _REGISTRY and dialect in _BUILT_IN:
        importlib.import_module(_BUILT_IN[dialect])
    try:
        return _REGISTRY[dialect]
    except (KeyError, TypeError):
        raise UnknownDialectError(str(dialect), known_dialects()) from None
