"""The small pieces of SQL an integration that still writes some statements itself needs,
rendered by the compiler's own code (sqlglot and the dialect profiles), never by string
concatenation: literals, identifiers, table names, query vectors, the distance function of a
metric, the names of the columns a search computes, and the depth rule for fused candidates.

>>> quote_literal("it's")
"'it''s'"
>>> quote_column("Order")
'"order"'
>>> quote_table("default.public.docs")
'"default".public.docs'
>>> vector_literal([0.1, -2.0])
'ARRAY[0.1, -2.0]'
>>> distance_function("l2")
'l2_distance'
>>> fetch_depth(5), fetch_depth(10), fetch_depth(5, fetch_k=3)
(20, 40, 5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from hotdata_retrieval._words import counted
from hotdata_retrieval.compile.compiler import identifier, literal_node, table_reference
from hotdata_retrieval.compile.dialect import DialectProfile, get_dialect
from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError
from hotdata_retrieval.compile.stores import StoreCompiler, store_table
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import TableName, coerce_table_name

# An identifier as the engine stores it (lower-cased), from the module that defines it.
from hotdata_retrieval.plan.names import normalize_identifier as normalize_identifier
from hotdata_retrieval.plan.search import DEFAULT_RANK_CONSTANT, DistanceMetric
from hotdata_retrieval.plan.values import (
    check_literal,
    check_positive_int,
    check_query_text,
    check_query_vector,
)

SCORE_COLUMN = "score"
"""The column a BM25 branch, and a fusion, return their score as (higher is better)."""

DISTANCE_COLUMN = "_distance"
"""The column a vector branch returns its distance as (lower is nearer): the name the
engine's ``vector_search`` gives it (engine contract §1.2)."""

RRF_RANK_CONSTANT = DEFAULT_RANK_CONSTANT
"""Reciprocal rank fusion's rank constant k, 60 (Cormack, Clarke & Buettcher, SIGIR 2009)."""

FETCH_DEPTH_MULTIPLIER = 4
DEFAULT_FETCH_DEPTH = 20
"""The fused-candidate depth rule of hotdata-langchain's ``fetch_depth``: ``max(4k, 20)``
candidates per branch when no ``fetch_k`` is given (its ``FETCH_K_MULTIPLIER`` and
``DEFAULT_FETCH_K``)."""


def _profile(dialect: str | DialectProfile) -> DialectProfile:
    return dialect if isinstance(dialect, DialectProfile) else get_dialect(dialect)


def _render(tree: exp.Expr, dialect: str | DialectProfile) -> str:
    text: str = _profile(dialect).sqlglot_dialect().generate(tree, copy=False)
    return text


def quote_literal(value: Any, *, dialect: str | DialectProfile = "hotdata") -> str:
    """``value`` as a SQL literal of ``dialect``: text in single quotes (quotes doubled, a
    backslash literal, as the Hotdata engine reads it), a number, a boolean, a date or a
    timestamp (``CAST('...' AS DATE|TIMESTAMP)``; an aware datetime in UTC).

    Raises:
        PlanError: a value no plan may hold: a NUL byte, NaN or an infinity, another type.
    """
    return _render(literal_node(check_literal(value, label="literal")), dialect)


def quote_query_text(value: Any, *, dialect: str | DialectProfile = "hotdata") -> str:
    """Query text as a string literal, checked as a plan checks it (no NUL, not blank).

    Raises:
        PlanError: not a string, blank, or holding a NUL byte.
    """
    return _render(exp.Literal.string(check_query_text(value)), dialect)


def quote_column(name: Any, *, dialect: str | DialectProfile = "hotdata") -> str:
    """A column name (or any one identifier: a schema, an alias) as plans write it in
    ``dialect``: lower-cased, as the engine stores it (:func:`~hotdata_retrieval.plan.names.
    normalize_identifier`), and quoted when it is not a bare identifier or is a keyword of
    the dialect (``order``, ``all``), so ``x; DROP TABLE y`` is one quoted name.

    Not hotdata-langchain's ``quote_identifier``, which quotes a name verbatim, in its own
    case: :func:`hotdata_retrieval.builders.quote_identifier` keeps that contract.

    Raises:
        PlanError: not a string, empty, or holding a double quote or a control character.
    """
    return _render(identifier(normalize_identifier(name, label="identifier")), dialect)


def quote_table(name: str | TableName, *, dialect: str | DialectProfile = "hotdata") -> str:
    """A table name completed to ``catalog.schema.table`` (from ``default`` and ``public``)
    and written as the compiler writes it for ``dialect``: fully qualified on the Hotdata
    engine, each part quoted as needed (its index rule keys on the reference as written,
    engine contract §2.4); ``<schema>.<table>`` on a store, ``public`` its default schema.

    Raises:
        TableNameError: not a valid 1-3 part name.
        UnsupportedOnDialectError: a catalog other than ``default`` on a store.
    """
    profile = _profile(dialect)
    table = coerce_table_name(name)
    reference = table_reference(table)
    compiler = profile.compiler
    if compiler is not None and issubclass(compiler, StoreCompiler):
        if table.catalog != "default":
            raise UnsupportedOnDialectError(
                f"the catalog {table.catalog!r} (tables are <schema>.<table> here)", profile.name
            )
        reference = store_table(reference, compiler.default_schema)
    return _render(reference, profile)


def vector_literal(
    values: Sequence[float],
    *,
    dimensions: int | None = None,
    dialect: str | DialectProfile = "hotdata",
) -> str:
    """A query vector as ``dialect`` writes it (``ARRAY[0.1, -2.0]`` on the Hotdata engine),
    each number with the shortest text that reads back as the same double.

    Raises:
        PlanError: empty, a non-number, NaN, an infinity or a number beyond Float32's range;
            a length other than ``dimensions`` when given.
    """
    vector = check_query_vector(values)
    if dimensions is not None and len(vector) != check_positive_int(dimensions, label="dimensions"):
        raise PlanError(
            f"query vector has {counted(len(vector), 'dimension')}; expected {dimensions}",
            field="query_vector",
            value=len(vector),
        )
    return _profile(dialect).vector_literal(vector)


def distance_function(
    metric: str | DistanceMetric, *, dialect: str | DialectProfile = "hotdata"
) -> str:
    """The scalar distance function of ``metric`` on ``dialect`` (lower is nearer): on the
    Hotdata engine ``cosine_distance``, ``l2_distance`` (squared Euclidean) and
    ``negative_dot_product`` (engine contract §1.4). Aliases: ``euclidean`` for ``l2``,
    ``ip`` and ``inner_product`` for ``dot``.

    Raises:
        PlanError: an unknown metric.
        UnsupportedOnDialectError: a dialect that writes this metric another way than one
            function (PostgreSQL's operators).
    """
    parsed = DistanceMetric.parse(metric)
    profile = _profile(dialect)
    function = profile.distance_functions.get(parsed)
    if function is None:
        raise UnsupportedOnDialectError(f"a distance function for {parsed.value}", profile.name)
    return function


def fetch_depth(k: int, fetch_k: int | None = None) -> int:
    """Candidates each branch of a fused search ranks for ``k`` results: ``max(fetch_k, k)``
    when ``fetch_k`` is given, else ``max(4k, 20)`` — hotdata-langchain's rule (its
    ``fetch_depth``; engine contract §6 #22: 20 for k=5, 40 for k=10, 5 for fetch_k=3 and
    k=5). Pass it as a fusion's ``depth``.

    Raises:
        PlanError: ``k`` or ``fetch_k`` below 1.
    """
    k = check_positive_int(k, label="k")
    if fetch_k is not None:
        return max(check_positive_int(fetch_k, label="fetch_k"), k)
    return max(FETCH_DEPTH_MULTIPLIER * k, DEFAULT_FETCH_DEPTH)
