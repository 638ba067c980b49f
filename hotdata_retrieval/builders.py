"""Drop-in SQL builders for integrations that call functions returning SQL text.

hotdata-langchain (``hotdata_langchain.search``) builds its searches with four functions —
``bm25_search_sql``, ``vector_search_sql``, ``vector_distance_sql`` and ``hybrid_search_sql``
— and its VectorStore with one more query; this module has the same names, the same
keyword-only signatures and defaults, and raises ``ValueError`` (:class:`~hotdata_retrieval.
errors.PlanError`) with the words their callers match (``k must be >= 1``, ``null bytes``,
``bare SQL identifier``, ``catalog.schema.table``, ``metric must be one of``). Every string is
a plan compiled by :func:`~hotdata_retrieval.to_sql`, never a format string, so it has the
library's shapes: where they differ from the hand-built ones (a sort before the semantic
table function's rows are cut, competition ranks inside a fused branch unless
``ranking="row_number"``, the key breaking fused-score ties, a table's parts quoted only
where they must be) the library's are kept; ``docs/integrations.md`` lists each difference
and the consumer test that pins the old bytes. A table may be written with its parts
double-quoted (``"default"."public"."vectors"``, as hotdata-langchain's VectorStore writes
it); the query text is sent as written and never analysed (``query_syntax="verbatim"``), so
building a statement loads no text analysis.

Its SQL helpers keep hotdata-langchain's contract (``hotdata_langchain._sql``) exactly, so an
integration can import them in place of its own: :func:`validate_identifier` returns a bare
identifier unchanged and refuses anything else; :func:`quote_identifier` double-quotes a name
verbatim, case kept; :func:`quote_literal` and :func:`vector_literal` write its bytes. The
library's own lower-casing helpers have other names (:func:`hotdata_retrieval.sql.
quote_column`, :func:`hotdata_retrieval.sql.normalize_identifier`).

Each builder also takes keyword options the hand-built ones lack, off by default: ``where=``
(a mapping of column to value, each an equality, or any filter
:class:`~hotdata_retrieval.plan.filters.Predicate`), ``distance_alias=`` (the distance
column's name, say ``dist``), for :func:`vector_distance_sql` ``include_vectors=`` (the
searched vectors, for maximal marginal relevance), and for :func:`hybrid_search_sql`
``ranking=``.

>>> bm25_search_sql(table="default.public.listings", column="description", query="cozy")
"SELECT description, score FROM bm25_search('default.public.listings', 'description', \
'cozy', 5) ORDER BY score DESC LIMIT 5"
>>> validate_identifier("x; DROP TABLE y", label="column")
Traceback (most recent call last):
    ...
hotdata_retrieval.errors.PlanError: column must be a bare SQL identifier, got 'x; DROP TABLE y'
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Mapping, Sequence, Sized
from typing import Any

from sqlglot import exp

from hotdata_retrieval.compile.dialect import get_dialect
from hotdata_retrieval.compile.render import to_sql
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import Comparison, Predicate, is_predicate
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    Bm25Search,
    BranchRanking,
    DistanceMetric,
    NearestNeighborSearch,
    QuerySyntax,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)
from hotdata_retrieval.plan.values import check_column_names, check_encodable, check_query_vector
from hotdata_retrieval.sql import (
    DEFAULT_FETCH_DEPTH,
    FETCH_DEPTH_MULTIPLIER,
    RRF_RANK_CONSTANT,
    distance_function,
    fetch_depth,
)

# The constants the integrations import beside the builders, from the one module that
# defines them (re-exported under their own names).
from hotdata_retrieval.sql import DISTANCE_COLUMN as DISTANCE_COLUMN
from hotdata_retrieval.sql import SCORE_COLUMN as SCORE_COLUMN

DEFAULT_SEARCH_LIMIT = 5
"""Rows a builder returns when the caller names no ``k`` (hotdata-langchain's default)."""

RRF_K = int(RRF_RANK_CONSTANT)
"""Reciprocal rank fusion's rank constant, 60 (Cormack, Clarke and Büttcher, SIGIR 2009)."""

DEFAULT_FETCH_K = DEFAULT_FETCH_DEPTH
"""The smallest candidate depth of a fused branch (:func:`~hotdata_retrieval.sql.
fetch_depth`)."""

FETCH_K_MULTIPLIER = FETCH_DEPTH_MULTIPLIER
"""How many times ``k`` a fused branch ranks when the caller names no ``fetch_k``."""

DEFAULT_KEY_COLUMN = "id"
"""The key a fused search joins its branches on by default."""

DISTANCE_FUNCTIONS: dict[str, str] = {
    metric.value: distance_function(metric) for metric in DistanceMetric
}
"""The engine's scalar distance function of each metric (engine contract §1.4)."""


_HOTDATA = get_dialect("hotdata")

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A bare SQL identifier as hotdata-langchain's ``_sql.IDENTIFIER_RE`` defines it: ASCII
letters, digits and underscores, not starting with a digit, either case."""

_TABLE_PART = rf'(?:{_BARE_NAME.pattern}|"{_BARE_NAME.pattern}")'
_TABLE_REFERENCE = re.compile(rf"{_TABLE_PART}\.{_TABLE_PART}\.{_TABLE_PART}")
"""``catalog.schema.table``, each part a bare identifier, double-quoted or not."""


def _fail(message: str, field: str, value: Any) -> PlanError:
    return PlanError(message, field=field, value=value)


def validate_identifier(value: str, *, label: str) -> str:
    """``value`` unchanged if it is a bare SQL identifier (``[A-Za-z_][A-Za-z0-9_]*``, either
    case), hotdata-langchain's ``validate_identifier``: safe to write into SQL as it is.

    Args:
        value: the name.
        label: how the message names it (``"column"``, ``"table"``).

    Raises:
        PlanError: (a ``ValueError``) ``<label> must be a bare SQL identifier, got <value>``
            for anything else: a space, a quote, a semicolon, a leading digit, an empty
            string, a non-string.
    """
    if not isinstance(value, str) or _BARE_NAME.fullmatch(value) is None:
        raise _fail(f"{label} must be a bare SQL identifier, got {value!r}", label, value)
    return value


def quote_identifier(value: str) -> str:
    """``value`` as a double-quoted SQL identifier, verbatim (its case kept),
    hotdata-langchain's ``quote_identifier``: for a name read back from the engine
    (``information_schema``) exactly as stored, such as a column named ``all`` or ``list
    price``. A mixed-case name quoted so does not match the engine's lower-case one (engine
    contract §4).

    Raises:
        PlanError: (a ``ValueError``) ``a quoted identifier may not contain a double quote or
            a null byte, got <value>``: a double quote or NUL byte, the two characters that
            could end the quoted name early; an empty name or a lone surrogate, which no
            quoted identifier can hold; a non-string.
    """
    if not isinstance(value, str):
        raise _fail(f"a quoted identifier must be a string, got {value!r}", "identifier", value)
    if '"' in value or "\x00" in value:
        raise _fail(
            f"a quoted identifier may not contain a double quote or a null byte, got {value!r}",
            "identifier",
            value,
        )
    if not value:
        raise _fail("a quoted identifier must not be empty", "identifier", value)
    check_encodable(value, label="identifier")
    return _render(exp.to_identifier(value, quoted=True))


def quote_literal(value: str) -> str:
    """``value`` as a single-quoted SQL string literal, each ``'`` doubled and every other
    character as written, hotdata-langchain's ``quote_literal``.

    Raises:
        PlanError: (a ``ValueError``) ``SQL string literals may not contain null bytes``; a
            lone surrogate (not sendable as UTF-8); a non-string.
    """
    if not isinstance(value, str):
        raise _fail(f"quote_literal takes a string, got {value!r}", "literal", value)
    if "\x00" in value:
        raise _fail("SQL string literals may not contain null bytes", "literal", value)
    check_encodable(value, label="literal")
    return _render(exp.Literal.string(value))


def vector_literal(values: Sequence[float]) -> str:
    """``values`` as ``ARRAY[...]`` of floats, each with the shortest text that reads back as
    the same double (``repr``), hotdata-langchain's ``vector_literal``: ``[1, 0.5]`` is
    ``ARRAY[1.0, 0.5]``.

    Raises:
        PlanError: (a ``ValueError``) ``a vector literal needs at least one value``; a
            non-number, NaN, an infinity or a number beyond Float32's range, which the
            hand-built literal writes as ``nan``/``inf`` text the engine cannot read.
    """
    if isinstance(values, Sequence) and len(values) == 0:
        raise _fail("a vector literal needs at least one value", "vector", [])
    return _HOTDATA.vector_literal(check_query_vector(values, label="vector"))


def _render(tree: exp.Expr) -> str:
    text: str = _HOTDATA.sqlglot_dialect().generate(tree, copy=False)
    return text


def _bare(name: Any, label: str) -> str:
    """``name`` if it is a bare SQL identifier (the callers' rule), lower-cased as the
    engine stores it."""
    if not isinstance(name, str) or _BARE_NAME.fullmatch(name) is None:
        raise _fail(f"{label} must be a bare SQL identifier, got {name!r}", label, name)
    return name.lower()


def _table(table: Any) -> TableName:
    """A ``catalog.schema.table`` reference of three bare identifiers, each double-quoted or
    not (the callers' rule: a 1- or 2-part name misses an index registered under the full
    name, engine contract §2.4; hotdata-langchain's VectorStore quotes every part), lower-
    cased as the engine stores it (:meth:`TableName.parse`)."""
    if not isinstance(table, str) or _TABLE_REFERENCE.fullmatch(table) is None:
        raise _fail(
            "table must be a fully qualified 'catalog.schema.table' reference of bare "
            f"identifiers, each double-quoted or not, got {table!r}",
            "table",
            table,
        )
    return TableName.parse(table)


def _k(k: Any, label: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise _fail(f"{label} must be >= 1, got {k!r}", label, k)
    return k


def _query(query: Any) -> Any:
    if isinstance(query, str) and "\x00" in query:
        raise _fail("search text may not contain null bytes", "query_text", query)
    return query


def _vector(vector: Sequence[float]) -> Sequence[float]:
    if isinstance(vector, Sized) and not isinstance(vector, (str, bytes)) and len(vector) == 0:
        raise _fail("query vector must not be empty", "query_vector", [])
    return check_query_vector(vector, label="query_vector")  # None, text, a generator, ...


def _columns(columns: Any) -> list[str] | None:
    """``columns`` as a list, by the one rule for names of columns
    (:func:`~hotdata_retrieval.plan.values.check_column_names`): text is refused (its
    characters would be read as names: ``"id"`` became ``SELECT i, d``)."""
    names = check_column_names(columns, label="columns")
    return None if names is None else list(names)


def _metric(metric: Any) -> str:
    if not isinstance(metric, str) or metric not in DISTANCE_FUNCTIONS:
        known = ", ".join(sorted(DISTANCE_FUNCTIONS))
        raise _fail(f"metric must be one of {known}, got {metric!r}", "metric", metric)
    return str(metric)


def _where(where: Mapping[str, Any] | Predicate | None) -> Predicate | None:
    """A filter: a predicate as given, or a mapping's equalities joined by AND."""
    if where is None or is_predicate(where):
        return where  # type: ignore[return-value]
    if not isinstance(where, Mapping):
        raise _fail(
            f"where must be a mapping of column to value or a filter predicate, got {where!r}",
            "where",
            where,
        )
    if not where:
        return None
    equalities = [
        Comparison(column=_bare(column, "filter column"), operator="=", value=value)
        for column, value in where.items()
    ]
    return functools.reduce(operator.and_, equalities)


def _projection(
    selected: Sequence[str], *, computed: str, dropped: Sequence[str] = ()
) -> list[str]:
    """The columns as given, each a bare identifier, without the computed column (it comes
    last, once) and ``dropped``."""
    names = [_bare(name, "column") for name in selected]
    return [name for name in names if name != computed and name not in dropped]


def _distance_alias(alias: str | None) -> str | None:
    if alias is None or alias == DISTANCE_COLUMN:
        return None
    return _bare(alias, "distance_alias")


def _single_branch_sql(
    source: Bm25Search | VectorSearch | NearestNeighborSearch,
    projection: Sequence[str],
    limit: int,
    where: Mapping[str, Any] | Predicate | None,
    *,
    include_vectors: bool = False,
) -> str:
    """One branch's statement: the caller's projection, no key (the hand-built statements
    break no ties), the page, the filter."""
    plan = SearchPlan(
        source=source,
        columns=list(projection) or None,
        key_column=None,
        limit=limit,
        filter=_where(where),
        include_vectors=include_vectors,
    )
    return to_sql(plan, pretty=False)


def bm25_search_sql(
    *,
    table: str,
    column: str,
    query: str,
    k: int = DEFAULT_SEARCH_LIMIT,
    columns: Sequence[str] | None = None,
    where: Mapping[str, Any] | Predicate | None = None,
) -> str:
    """``SELECT <columns>, score FROM bm25_search('<table>', '<column>', '<query>', k)
    ORDER BY score DESC LIMIT k``: a BM25 top-k over an indexed text column, ``k`` as the
    search's bound and the page (engine contract §1.1). With ``where`` the function runs
    without its bound, then the filter, then the sort and limit (a bound applied before a
    filter returns fewer rows than exist).

    Args:
        table: ``catalog.schema.table``, three bare identifiers, each double-quoted or not
            (``"default"."public"."vectors"``).
        column: the BM25-indexed text column.
        query: the search text, sent as written and never analysed
            (``query_syntax="verbatim"``): the engine's query syntax applies, and a text
            without a word is the engine's to answer.
        k: rows returned, >= 1.
        columns: columns returned before ``score`` (default: ``column``); ``score`` is
            dropped from them and returned once, last.
        where: equalities (``{"lang": "en"}``) or a filter predicate.

    Raises:
        PlanError: (a ``ValueError``) a name that is not a bare identifier, a table that is
            not ``catalog.schema.table``, ``k`` below 1, a NUL byte in the query, empty
            ``columns``.
    """
    name = _table(table)
    searched = _bare(column, "column")
    limit = _k(k)
    columns = _columns(columns)
    projection = _projection(columns if columns is not None else [searched], computed=SCORE_COLUMN)
    if not projection and columns is not None and not list(columns):
        raise _fail("columns must not be empty", "columns", [])
    branch = Bm25Search(
        table=name, column=searched, query_text=_query(query), query_syntax=QuerySyntax.VERBATIM
    )
    return _single_branch_sql(branch, projection, limit, where)


def vector_search_sql(
    *,
    table: str,
    column: str,
    query: str,
    k: int = DEFAULT_SEARCH_LIMIT,
    columns: Sequence[str] | None = None,
    where: Mapping[str, Any] | Predicate | None = None,
    distance_alias: str | None = None,
) -> str:
    """``SELECT <columns>, _distance FROM vector_search('<table>', '<column>', '<query>', k)
    ORDER BY _distance ASC LIMIT k``: a semantic top-k the engine embeds with the index's
    provider (``column`` is the index's source text column). The trailing ``LIMIT``, after
    the sort, keeps the order when a caller wraps the statement (engine contract §1.2). With
    ``where``, the scalar ``vector_distance(<column>, '<query>')`` over the filtered rows
    (the table function would cut its k before the filter).

    Args:
        table, column, query, k, where: as :func:`bm25_search_sql`.
        columns: columns returned before the distance (default: ``column``).
        distance_alias: the distance column's name (default ``_distance``).

    Raises:
        PlanError: as :func:`bm25_search_sql`; no column to return.
    """
    name = _table(table)
    searched = _bare(column, "column")
    limit = _k(k)
    columns = _columns(columns)
    projection = _projection(
        columns if columns is not None else [searched], computed=DISTANCE_COLUMN
    )
    if not projection:
        raise _fail(
            "columns must name at least one column to return", "columns", list(columns or [])
        )
    branch = VectorSearch(
        table=name,
        column=searched,
        query_text=_query(query),
        result_name=_distance_alias(distance_alias),
    )
    return _single_branch_sql(branch, projection, limit, where)


def vector_distance_sql(
    *,
    table: str,
    column: str,
    vector: Sequence[float],
    k: int = DEFAULT_SEARCH_LIMIT,
    columns: Sequence[str] | None = None,
    metric: str = "cosine",
    where: Mapping[str, Any] | Predicate | None = None,
    distance_alias: str | None = None,
    include_vectors: bool = False,
) -> str:
    """``SELECT <columns>, <distance>(<column>, ARRAY[...]) AS _distance FROM
    <catalog>.<schema>.<table> [WHERE] ORDER BY _distance ASC LIMIT k``: the vector-index
    fast-path shape over a column of vectors (engine contract §2.3), never projecting the
    vector column unless ``include_vectors``.

    Args:
        table, k, where: as :func:`bm25_search_sql`.
        column: the vector column.
        vector: the query embedding, from the column's model.
        columns: columns returned before the distance (the vector column is left out).
        metric: ``cosine``, ``l2`` or ``dot``; it must be the index's.
        distance_alias: the distance column's name (default ``_distance``; hotdata-
            langchain's VectorStore reads ``dist``).
        include_vectors: also return the vector column (after ``columns``), for maximal
            marginal relevance; the statement then forfeits the index fast path.

    Raises:
        PlanError: as :func:`bm25_search_sql`; an empty vector, an unknown metric, no
            column to return.
    """
    name = _table(table)
    searched = _bare(column, "column")
    limit = _k(k)
    chosen = _metric(metric)
    columns = _columns(columns)
    projection = _projection(
        columns if columns is not None else [], computed=DISTANCE_COLUMN, dropped=[searched]
    )
    if not projection:
        raise _fail(
            "columns must name at least one column to return; the vector column "
            f"{searched!r} is never returned in its place, since it floods the result and "
            "forfeits the index",
            "columns",
            list(columns or []),
        )
    branch = NearestNeighborSearch(
        table=name,
        column=searched,
        query_vector=_vector(vector),
        metric=chosen,
        result_name=_distance_alias(distance_alias),
    )
    return _single_branch_sql(branch, projection, limit, where, include_vectors=include_vectors)


def hybrid_search_sql(
    *,
    table: str,
    column: str,
    vector_column: str,
    query: str,
    vector: Sequence[float],
    key_column: str = DEFAULT_KEY_COLUMN,
    k: int = DEFAULT_SEARCH_LIMIT,
    fetch_k: int | None = None,
    columns: Sequence[str] | None = None,
    metric: str = "cosine",
    rrf_k: int = RRF_K,
    where: Mapping[str, Any] | Predicate | None = None,
    ranking: str = BranchRanking.COMPETITION.value,
) -> str:
    """Reciprocal rank fusion of a BM25 search of ``column`` and a nearest-neighbour search
    of ``vector_column``, one statement: each branch ranks :func:`fetch_depth` candidates
    (``max(4k, 20)``, or ``max(fetch_k, k)``), a row scores ``Σ 1 / (rrf_k + rank)``, ties
    broken by ``key_column``; the nearest branch keeps the vector-index fast-path shape.

    Rows tied on a branch's raw score share a rank by default (``RANK()``, the library's
    ranking: a tie inside a branch leaves the order to the other branch).
    ``ranking="row_number"`` ranks them consecutively, as hotdata-langchain's statement did
    (``ROW_NUMBER()``), ties ordered by ``key_column`` where its order was the engine's: the
    top k on tied scores is then one its statement could return, the same on every run.

    Args:
        table, column, query, k, where: as :func:`bm25_search_sql`.
        vector_column, vector, metric: as :func:`vector_distance_sql`'s column, vector and
            metric.
        key_column: the table's unique key the branches are joined on.
        fetch_k: candidates per branch (at least ``k``).
        columns: columns returned before the fused ``score`` (default: the key and
            ``column``); the vector column and ``score`` are left out.
        rrf_k: the rank constant, >= 1.
        ranking: ``"competition"`` (default) or ``"row_number"``, how each branch ranks
            its rows (:class:`~hotdata_retrieval.plan.search.BranchRanking`).

    Raises:
        PlanError: as :func:`vector_distance_sql`; ``rrf_k`` below 1; another ``ranking``.
    """
    name = _table(table)
    text_column = _bare(column, "column")
    vectors = _bare(vector_column, "vector_column")
    key = _bare(key_column, "key_column")
    limit = _k(k)
    constant = _k(rrf_k, "rrf_k")
    chosen = _metric(metric)
    columns = _columns(columns)
    projection = _projection(
        columns if columns is not None else [key, text_column],
        computed=SCORE_COLUMN,
        dropped=[vectors],
    )
    if not projection:
        raise _fail(
            "columns must name at least one column to return; a fused search never returns "
            f"{vectors!r}, since a projected vector column floods the result",
            "columns",
            list(columns or []),
        )
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(
                    table=name,
                    column=text_column,
                    query_text=_query(query),
                    query_syntax=QuerySyntax.VERBATIM,
                ),
                NearestNeighborSearch(
                    table=name, column=vectors, query_vector=_vector(vector), metric=chosen
                ),
            ],
            rank_constant=constant,
            depth=fetch_depth(limit, fetch_k),
            ranking=ranking,
        ),
        columns=projection,
        key_column=key,
        limit=limit,
        filter=_where(where),
    )
    return to_sql(plan, pretty=False)
