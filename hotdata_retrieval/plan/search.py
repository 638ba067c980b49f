"""Search branches, fusions and the root :class:`SearchPlan`.

Nothing here knows SQL: the compiler (``hotdata_retrieval.compile``) turns these nodes into
sqlglot trees. Every node is frozen, keyword-only and validated at construction, so an
invalid plan cannot be built. Every node class has a stable ``visit_name``
(:mod:`hotdata_retrieval.plan.visitor`): each interpretation of a plan dispatches on it.

Fusions form a family: :class:`Fusion` holds what every method shares (the branches and the
depth); :class:`ReciprocalRankFusion` is its first member. A new method is one more
:class:`Fusion` subclass registered with :func:`register_fusion` (plan documents then read and
write it), one ``visit_<name>`` method on the compiler and one reference function
(:func:`hotdata_retrieval.fusion.register_reference_fusion`); ``docs/architecture.md``,
"How to add a fusion".
"""

from __future__ import annotations

import enum
import functools
import math
import operator
import re
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, NoReturn, TypeVar

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan._cursor import Cursor, ranking_fingerprint, read_cursor
from hotdata_retrieval.plan.filters import (
    Predicate,
    check_predicate,
    filter_shape,
    predicate_columns,
)
from hotdata_retrieval.plan.formula import FUSED_SCORE_COLUMN, ScoreFormula, term_columns
from hotdata_retrieval.plan.names import (
    TableName,
    TableSource,
    TableSourceInput,
    TableUnion,
    coerce_table_source,
    normalize_identifier,
)
from hotdata_retrieval.plan.steps import PlanStep, check_steps, coerce_steps
from hotdata_retrieval.plan.values import (
    INT64_MAX,
    check_cosine_norm,
    check_cosine_query,
    check_finite_number,
    check_flag,
    check_positive_int,
    check_query_text,
    check_query_vector,
)

DEFAULT_RANK_CONSTANT = 60
"""RRF's rank constant k, as in Cormack, Clarke & Buettcher (SIGIR 2009)."""

DEFAULT_DEPTH = 200
"""Candidates each branch of a fusion ranks when the plan sets no ``depth``: one constant, so
the fused ranking depends on the query and the depth only, never on the page asked for, and
pages are slices of one ranking. The anchors keep the window constant across pages likewise:
OpenSearch's ``pagination_depth`` (hybrid query, 2.19) and Elasticsearch's
``rank_window_size`` (RRF retriever). 200 by measurement (``docs/fusion.md``, "The defaults,
by measurement"): against 100 (Weaviate's ``QUERY_HYBRID_MAXIMUM_RESULTS``, Vespa's default
``rerank-count``) it raises recall@100 on SciFact and Cranfield as much as 400 does, nDCG@10
unchanged, for about a twentieth more time per search where 400 costs about a third more. A
page reaching past the depth is a :class:`PlanError`."""

MAX_FUSION_BRANCHES = 1024
"""The most branches one :class:`Fusion` may fuse.

Why 1,024: real fusions have two to a handful of branches (one per field or embedding), so
the cap only stops runaway input, such as a list of queries fused by mistake instead of
searched one by one. Each branch adds two CTEs, a join and a score term (about 460 bytes of
SQL), so at the cap the statement is about 470 KB and compiles in about half a second, linearly
in the branch count. The cap is not about the Python stack: the branch count adds no nesting
that a recursive walk follows (measured: sqlglot's parser needs 82 frames, its generator 51 and
the linter 140, at 100 branches as at 1,024); it bounds the size of what is built, sent and
planned."""

MAX_GROUP_SIZE = 100
"""The most rows a grouped plan keeps per group (``group_size``): Qdrant's groups API asks
for a handful of hits per group (its examples use 2 or 3); 100 bounds what an agent can ask
for, since a page holds up to ``limit * group_size`` rows."""

GROUP_COLUMNS = ("_rank_position", "_group_row", "_group_first", "_group_rank")
"""The columns a grouped statement computes between its candidates and its page (each
row's place in the ranking, its place in its group, its group's first place, its group's
rank); a grouped plan projects no column of these names."""

MAX_FACETS = 8
"""The most columns a plan counts facets of (``facets``): each adds two windows to the
statement; 8 bounds what an agent can ask for."""

FACET_VALUES = 20
"""The most values a facet reports (``SearchResult.facets``): the 20 most frequent among the
counted rows, ties by value; the rest are reported as cut (``SearchResult.facets_cut``).
Elasticsearch's terms aggregation returns 10 buckets by default, Typesense's facets 10;
20 keeps a page of an agent's answer short."""

FACET_COLUMNS = ("_rank_position", "_facet_count_", "_facet_row_")
"""The column names (and name prefixes, ``_facet_count_<i>``, ``_facet_row_<i>``) a
faceted statement computes; a faceted plan projects no column of these names."""

_BRANCH_NAME = re.compile(r"[a-z][a-z0-9_]*")
INTERNAL_COLUMNS = frozenset({"score", "_distance", "branch_rank"})
"""Column names the compiled SQL uses for its own values; never a key column."""
_RESERVED_BRANCH_NAMES = frozenset({"fused", "base"})


class DistanceMetric(str, enum.Enum):
    """How a nearest-neighbour branch measures distance; lower is always nearer.

    The engine's functions (engine contract §1.4, datafusion-vector-search-ext ``src/udf.rs``):
    ``cosine`` → ``cosine_distance`` (``1 - cos``; 1.0 against a zero vector), ``l2`` →
    ``l2_distance`` (the *squared* Euclidean distance), ``dot`` → ``negative_dot_product``
    (``-(a·b)``). The metric must match the vector index's, or the engine silently scans.
    """

    COSINE = "cosine"
    L2 = "l2"
    DOT = "dot"

    @classmethod
    def parse(cls, value: Any) -> DistanceMetric:
        """Accept a metric or its name; ``euclidean`` means ``l2``, ``ip`` and
        ``inner_product`` mean ``dot``. Case-insensitive.

        Raises:
            PlanError: an unknown metric name.
        """
        if isinstance(value, DistanceMetric):
            return value
        if isinstance(value, str):
            name = value.strip().lower()
            name = _METRIC_ALIASES.get(name, name)
            for member in cls:
                if member.value == name:
                    return member
        known = ", ".join([*(member.value for member in cls), *_METRIC_ALIASES])
        raise PlanError(
            f"unknown metric {value!r}; expected one of {known}", field="metric", value=value
        )

    def distance(self, vector: Sequence[float], query: Sequence[float]) -> float:
        """The metric's distance from ``vector`` to ``query``, in Python floats (float64),
        lower is nearer: ``cosine`` ``1 - a·b / (‖a‖ ‖b‖)`` (1.0 when either norm is 0),
        ``l2`` the squared Euclidean distance ``Σ (aᵢ - bᵢ)²``, ``dot`` ``-(a·b)``: the
        engine's functions (engine contract §1.4), as the library computes them where an
        engine does not (the spec's reference, a distance a store cannot compute itself).

        >>> DistanceMetric.L2.distance((1.0, 2.0), (0.0, 0.0))
        5.0
        >>> DistanceMetric.COSINE.distance((0.0, 0.0), (1.0, 0.0))
        1.0
        """
        dot = sum(a * b for a, b in zip(vector, query))
        if self is DistanceMetric.L2:
            return float(sum((a - b) ** 2 for a, b in zip(vector, query)))
        if self is DistanceMetric.DOT:
            return float(-dot)
        norms = math.sqrt(sum(a * a for a in vector)) * math.sqrt(sum(b * b for b in query))
        return 1.0 if norms == 0 else float(1.0 - dot / norms)


_METRIC_ALIASES = {"euclidean": "l2", "ip": "dot", "inner_product": "dot"}


def _metric(value: DistanceMetric | str) -> DistanceMetric:
    if value.__class__ is DistanceMetric:
        return value  # a member (the default) as it is, without the enum's lookup
    return DistanceMetric.parse(value)


class BranchRanking(str, enum.Enum):
    """How a fusion ranks the rows inside each branch.

    ``COMPETITION`` (default): rows tied on the raw score share a rank (SQL's ``RANK()``), so a
    tie inside a branch leaves the order to the other branches. ``ROW_NUMBER``: consecutive
    ranks in raw-score order, ties ranked by the key ascending (``ROW_NUMBER() OVER (ORDER BY
    <raw>, <key>)``) — what hotdata-langchain's ``hybrid_search_sql`` and hotmemory emit,
    there without the key, so their order of tied rows is the engine's and may differ between
    runs; with the key, it is the same on every run and engine, but a tie still gives one row
    a better rank than its equal.
    """

    COMPETITION = "competition"
    ROW_NUMBER = "row_number"


def _ranking(value: BranchRanking | str) -> BranchRanking:
    try:
        return BranchRanking(value)
    except (ValueError, TypeError):
        known = ", ".join(repr(member.value) for member in BranchRanking)
        raise PlanError(
            f"ranking must be one of {known}, got {value!r}", field="ranking", value=value
        ) from None


_RANKING_SCHEMA = {
    "enum": [*(member.value for member in BranchRanking), None],
    "default": BranchRanking.COMPETITION.value,
    "description": "How rows are ranked inside each branch: 'competition' (tied rows share a "
    "rank) or 'row_number' (consecutive ranks, ties by key).",
}


def _branch_name(value: str | None) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or _BRANCH_NAME.fullmatch(value) is None:
        raise PlanError(
            f"branch name must match [a-z][a-z0-9_]*, got {value!r}", field="name", value=value
        )
    if value in _RESERVED_BRANCH_NAMES:
        raise PlanError(
            f"branch name {value!r} is reserved; choose another", field="name", value=value
        )
    return value


class QuerySyntax(str, enum.Enum):
    """How a text branch's query text reaches the engine (:class:`Bm25Search`)."""

    TEXT = "text"
    TERMS = "terms"
    VERBATIM = "verbatim"

    @classmethod
    def parse(cls, value: Any) -> QuerySyntax:
        """``value`` (a member or its name) as a member.

        Raises:
            PlanError: any other value, naming the known ones.
        """
        try:
            return cls(value)
        except (ValueError, TypeError):
            known = ", ".join(repr(member.value) for member in cls)
            raise PlanError(
                f"query_syntax must be one of {known}, got {value!r}",
                field="query_syntax",
                value=value,
            ) from None


def _query_syntax(value: QuerySyntax | str) -> QuerySyntax:
    if value.__class__ is QuerySyntax:
        return value  # a member (the default) as it is, without the enum's lookup
    return QuerySyntax.parse(value)


@functools.lru_cache(maxsize=1024)
def _words(text: str) -> tuple[str, ...]:
    from hotdata_retrieval.analysis import text_words

    return text_words(text, fold_case=False)


_ASCII_ALPHANUMERIC = re.compile(r"[A-Za-z0-9]")


def _has_words(text: str) -> bool:
    """Whether ``text`` holds a word (``bool(_words(text))``), without splitting it when it
    is ASCII: NFKC leaves ASCII as it is, and the word tokenizer's words are the runs of
    alphanumeric characters, which in ASCII are ``[A-Za-z0-9]``."""
    if text.isascii():
        return _ASCII_ALPHANUMERIC.search(text) is not None
    return bool(_words(text))


def _any_query_text(value: str) -> str:
    """Query text that may be empty (the branch decides, :class:`Bm25Search`)."""
    return check_query_text(value, allow_blank=True)


def _result_name(value: str | None) -> str | None:
    if value is None:
        return None
    return normalize_identifier(value, label="result column name")


def _score_name(value: str | None) -> str | None:
    if value is None:
        return None
    return normalize_identifier(value, label="score column name")


def _key_column(value: str | None) -> str | None:
    if value is None:
        return None
    return normalize_identifier(value, label="key column")


def _tie_break_column(value: str) -> str:
    return normalize_identifier(value, label="tie-break column")


MAX_TIE_BREAKERS = 16
"""The most tie-break columns one plan may name (a bound on agent input; real plans name one
to three)."""


@attrs.frozen(kw_only=True)
class TieBreaker:
    """One tie-break column of a plan's final order, applied after the ranking.

    Attributes:
        column: a table column, or one of the plan's result columns (a fusion's
            ``<branch>_distance`` with ``include_branch_scores``, say).
        descending: order the column descending (default ascending). NULLs sort as the
            engine sorts them (last ascending on the Hotdata engine, DataFusion and
            PostgreSQL).

    >>> TieBreaker.parse("created_at desc")
    TieBreaker(column='created_at', descending=True)
    """

    column: str = attrs.field(converter=_tie_break_column)
    descending: bool = attrs.field(default=False, validator=check_flag)

    @classmethod
    def parse(cls, value: Any) -> TieBreaker:
        """A tie-breaker from a :class:`TieBreaker`, a column name (ascending), ``"<column>
        asc|desc"``, or a ``(column, "asc"|"desc")`` pair.

        Raises:
            PlanError: any other value, naming it.
        """
        if isinstance(value, TieBreaker):
            return value
        if isinstance(value, str):
            parts = value.split()
            if len(parts) == 2 and parts[1].lower() in ("asc", "desc"):
                return cls(column=parts[0], descending=parts[1].lower() == "desc")
            if len(parts) == 1:
                return cls(column=parts[0])
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            column, direction = value
            if isinstance(direction, str) and direction.lower() in ("asc", "desc"):
                return cls(column=column, descending=direction.lower() == "desc")
        raise PlanError(
            "a tie-breaker is a column name, '<column> asc|desc' or a (column, 'asc'|'desc') "
            f"pair, got {value!r}",
            field="tie_breakers",
            value=value,
        )


TieBreakerInput = TieBreaker | str | tuple[str, str]
"""A tie-breaker as a plan takes one: a :class:`TieBreaker`, a column name (ascending),
``"<column> asc|desc"``, or a ``(column, "asc"|"desc")`` pair."""


def _tie_breakers(values: Iterable[TieBreakerInput] | None) -> tuple[TieBreaker, ...]:
    if values is None or (values.__class__ is tuple and not values):
        return ()
    if isinstance(values, (str, bytes, TieBreaker)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"tie_breakers must be a sequence of tie-breakers, got {values!r}",
            field="tie_breakers",
            value=values,
        )
    items = list(values)
    if len(items) > MAX_TIE_BREAKERS:
        raise PlanError(
            f"tie_breakers holds {len(items)} columns; at most {MAX_TIE_BREAKERS}",
            field="tie_breakers",
            value=len(items),
        )
    for item in items:
        if isinstance(item, str) and item.strip().lower() in ("asc", "desc"):
            raise PlanError(
                f"tie-breaker {item!r} is a direction, not a column: write the pair inside a "
                "list, [('created_at', 'desc')], or 'created_at desc'",
                field="tie_breakers",
                value=item,
            )
    breakers = tuple(TieBreaker.parse(item) for item in items)
    seen: set[str] = set()
    for breaker in breakers:
        if breaker.column in seen:
            raise PlanError(
                f"tie-break column {breaker.column!r} is named twice",
                field="tie_breakers",
                value=breaker.column,
            )
        seen.add(breaker.column)
    return breakers


def _source_text_column(value: str) -> str:
    return normalize_identifier(value, label="source text column")


def _query_text(value: str) -> str:
    return check_query_text(value)


def _query_vector(value: Iterable[float]) -> tuple[float, ...]:
    return check_query_vector(value)


def _text_column(value: str) -> str:
    return normalize_identifier(value, label="text column")


def _vector_column(value: str) -> str:
    return normalize_identifier(value, label="vector column")


@attrs.frozen(kw_only=True)
class Bm25Search:
    """Full-text search: BM25 over a column that has a BM25 index.

    Compiles to the engine's ``bm25_search('<catalog>.<schema>.<table>', '<column>',
    '<query>', k)`` table function, always with ``k`` as the 4th argument and
    ``ORDER BY score DESC LIMIT k``: the function returns rows in rowid order, and the trailing
    LIMIT alone is not pushed into the index (engine contract §1.1).

    Its raw score is the engine's ``score`` column (Float32, higher is better).

    Attributes:
        table: the table (a string is parsed and completed to three parts), or a
            :class:`~hotdata_retrieval.plan.names.TableUnion` of tables (a list of names is
            one), each member searched with its own fully qualified name and the members'
            rows ranked together (their scores compared as they are: a BM25 score depends on
            its own table's statistics).
        column: the BM25-indexed text column.
        query_text: the user's query: passed verbatim (``query_syntax="text"``), or as its
            words, each quoted (``"terms"``). It must hold a word (a run of letters, digits or
            underscores) unless ``allow_empty``.
        query_syntax: ``"text"`` (default): the text as given, which the Hotdata engine's
            tantivy reads with its query syntax (``a:b``, ``"x``, ``-y``, ``AND`` mean
            something there); ``"terms"``: each word of the text quoted (``'"disk" "full"'``,
            as hotmemory writes it), so no character of it is query syntax and every word is
            one term, on every engine. A token such as ``v1.2.3`` becomes three words.
            ``"verbatim"``: the text exactly as written, even without a word, and never
            analysed to build the plan or its SQL (no check for a word, so ``allow_empty``
            changes nothing): what hotdata-langchain's SQL builders send. The Hotdata engine
            reads it with its query syntax, as ``"text"``; every other engine analyses the
            text itself, so there it ranks as ``"text"`` does, and a text without a word
            returns no rows.
        allow_empty: a query with no word (empty, white space, punctuation) is an empty
            branch — no rows, no error — where it would otherwise be refused: for a caller
            whose query text comes from elsewhere and may be empty. It is sent as ``''``,
            which every engine answers with no rows (measured on the local engine, SQLite,
            DuckDB and PostgreSQL).
        name: the branch's name in fused SQL and debug columns (default ``text``).
        result_name: the result column holding this branch's raw score or distance. A
            single-branch plan returns it as ``score`` (BM25) or ``_distance`` unless named
            (``dist``, ``distance``: the names integrations read); a fusion returns it only
            when named (or with ``include_branch_scores``, as ``<branch>_score`` /
            ``<branch>_distance``), beside the fused score, NULL where the branch missed the
            row.
        filter_through_key: in a fusion, apply the plan's filter to the rows this branch's
            keys name in the plan's ``rows_from`` tables, not to this branch's own table: ``key
            IN (SELECT key FROM <rows_from> WHERE <filter>)``. For a side table that lacks the
            filter's columns, such as hotmemory's cue table (an ``id`` and a vector per
            record): its candidates are then exactly the records the filter keeps.
    """

    visit_name: ClassVar[str] = "bm25_search"
    kind: ClassVar[str] = "text"
    raw_score_column: ClassVar[str] = "score"
    higher_is_better: ClassVar[bool] = True

    table: TableSource = attrs.field(converter=coerce_table_source)
    column: str = attrs.field(converter=_text_column)
    query_text: str = attrs.field(converter=_any_query_text, metadata={"bound": True})
    name: str | None = attrs.field(default=None, converter=_branch_name)
    result_name: str | None = attrs.field(default=None, converter=_result_name)
    query_syntax: QuerySyntax = attrs.field(default=QuerySyntax.TEXT, converter=_query_syntax)
    allow_empty: bool = attrs.field(default=False, validator=check_flag)
    filter_through_key: bool = attrs.field(default=False, validator=check_flag)

    def __attrs_post_init__(self) -> None:
        if self.allow_empty or self.query_syntax is QuerySyntax.VERBATIM:
            return
        if not _has_words(self.query_text):
            if not self.query_text.strip():
                raise PlanError(
                    f"query_text must not be empty, got {self.query_text!r}",
                    field="query_text",
                    value=self.query_text,
                )
            raise PlanError(
                f"query_text holds no word to search for, got {self.query_text!r}",
                field="query_text",
                value=self.query_text,
                mentions=("allow_empty",),
                advice="pass allow_empty=True for a branch that then returns no rows",
            )

    @property
    def words(self) -> tuple[str, ...]:
        """The query's words as the library's analysis splits them, before case folding, stop
        words and stemming (:func:`hotdata_retrieval.analysis.text_words`: NFKC, runs of
        alphanumeric characters), so a word is what every store's index can hold."""
        return _words(self.query_text)

    @property
    def search_text(self) -> str:
        """The text a SQL engine's full-text search is given: the query as written
        (``"text"``, ``"verbatim"``) or its words each in double quotes (``"terms"``);
        ``''`` for a query with no word (an empty branch) unless ``"verbatim"``."""
        if self.query_syntax is QuerySyntax.VERBATIM:
            return self.query_text
        if not _has_words(self.query_text):
            return ""
        if self.query_syntax is QuerySyntax.TERMS:
            return " ".join(f'"{word}"' for word in self.words)
        return self.query_text


@attrs.frozen(kw_only=True)
class VectorSearch:
    """Semantic search embedded by the engine, over a provider-backed vector index.

    Compiles to ``vector_search('<catalog>.<schema>.<table>', '<source column>', '<query>',
    k) ... ORDER BY _distance ASC`` with no trailing LIMIT: the function returns rows in rowid
    order and a LIMIT without the sort takes the lowest rowids (engine contract §1.2).

    Its raw score is the engine's ``_distance`` column (lower is nearer).

    Attributes:
        table: the table (a string is parsed and completed to three parts), or a
            :class:`~hotdata_retrieval.plan.names.TableUnion` of tables (a list of names is
            one), each member searched with its own fully qualified name and the members'
            rows ranked together (their scores compared as they are: a BM25 score depends on
            its own table's statistics).
        column: the *text* column the provider-backed index was built over.
        query_text: the text the engine embeds with the index's own provider.
        scalar: compile to the engine's scalar ``vector_distance(<column>, '<query>')`` in a
            plain ``SELECT ..., vector_distance(...) AS _distance FROM c.s.t ORDER BY
            _distance ASC LIMIT k`` (the shape hotdata-cli's ``search`` writes, and the SDK's
            ``source_column`` documentation describes; engine contract §1.3) instead of the
            ``vector_search`` table function. Ties on the distance come back in the engine's
            order, as in the nearest-neighbour fast-path shape. A filtered semantic branch
            takes the scalar form anyway (with a key tie-break): the table function would
            apply its k before the filter.
        name: the branch's name in fused SQL and debug columns (default ``semantic``).
        result_name: the result column of its distance (as :class:`Bm25Search`'s).
        filter_through_key: in a fusion, apply the plan's filter to the rows this branch's
            keys name in the plan's ``rows_from`` tables, not to this branch's own table: ``key
            IN (SELECT key FROM <rows_from> WHERE <filter>)``. For a side table that lacks the
            filter's columns, such as hotmemory's cue table (an ``id`` and a vector per
            record): its candidates are then exactly the records the filter keeps.
    """

    visit_name: ClassVar[str] = "vector_search"
    kind: ClassVar[str] = "semantic"
    raw_score_column: ClassVar[str] = "_distance"
    higher_is_better: ClassVar[bool] = False

    table: TableSource = attrs.field(converter=coerce_table_source)
    column: str = attrs.field(converter=_source_text_column)
    query_text: str = attrs.field(converter=_query_text, metadata={"bound": True})
    name: str | None = attrs.field(default=None, converter=_branch_name)
    result_name: str | None = attrs.field(default=None, converter=_result_name)
    scalar: bool = attrs.field(default=False, validator=check_flag)
    filter_through_key: bool = attrs.field(default=False, validator=check_flag)


@attrs.frozen(kw_only=True, eq=True)
class NearestNeighborSearch:
    """Nearest-neighbour search with a caller-supplied query vector.

    Compiles to the vector-index fast-path shape: ``SELECT <key>, <distance>(<column>,
    ARRAY[...]) AS _distance FROM <catalog>.<schema>.<table> [WHERE ...] ORDER BY _distance ASC
    LIMIT n`` over the unaliased base table, never projecting the vector column (engine
    contract §2.2-2.3). Without a vector index the same SQL is an exact scan.

    Attributes:
        table: the table (a string is parsed and completed to three parts), or a
            :class:`~hotdata_retrieval.plan.names.TableUnion` of tables (a list of names is
            one), each member searched with its own fully qualified name and the members'
            rows ranked together (their scores compared as they are: a BM25 score depends on
            its own table's statistics).
        column: the vector column (``list<float>``); never projected.
        query_vector: the query embedding; finite, non-empty, from the same model as the column.
        metric: ``cosine`` (default), ``l2`` or ``dot``; must match the index's metric.
        name: the branch's name in fused SQL and debug columns (default ``nearest``).
        result_name: the result column of its distance (as :class:`Bm25Search`'s).
        filter_through_key: in a fusion, apply the plan's filter to the rows this branch's
            keys name in the plan's ``rows_from`` tables, not to this branch's own table: ``key
            IN (SELECT key FROM <rows_from> WHERE <filter>)``. For a side table that lacks the
            filter's columns, such as hotmemory's cue table (an ``id`` and a vector per
            record): its candidates are then exactly the records the filter keeps.
        exact: compute every row's distance instead of asking a vector index: the branch
            compiles to a shape the Hotdata engine's index rule never rewrites (the scanned
            table given an alias, with no outer query: engine contract §2.3, "single alias
            on the scan, no outer wrap"; datafusion-vector-search-ext
            ``test_single_alias_on_scan_no_outer_wrap_declines_safely``), ordered by distance
            then key, so the answer is exact — rows loaded after an index was built included
            — on every engine, an HNSW index (local, PostgreSQL) never consulted. It costs a
            scan of the (filtered) table: for narrow filtered scopes, or a check of the
            index's recall. ``hdq lint`` says the shape is not the index's.
    """

    visit_name: ClassVar[str] = "nearest_neighbor_search"
    kind: ClassVar[str] = "nearest"
    raw_score_column: ClassVar[str] = "_distance"
    higher_is_better: ClassVar[bool] = False

    table: TableSource = attrs.field(converter=coerce_table_source)
    column: str = attrs.field(converter=_vector_column)
    query_vector: tuple[float, ...] = attrs.field(
        converter=_query_vector, metadata={"bound": True}, repr=False
    )
    metric: DistanceMetric = attrs.field(default=DistanceMetric.COSINE, converter=_metric)
    name: str | None = attrs.field(default=None, converter=_branch_name)
    result_name: str | None = attrs.field(default=None, converter=_result_name)
    exact: bool = attrs.field(default=False, validator=check_flag)
    filter_through_key: bool = attrs.field(default=False, validator=check_flag)

    def __attrs_post_init__(self) -> None:
        if self.metric is DistanceMetric.COSINE:
            check_cosine_query(self.query_vector)
            check_cosine_norm(self.query_vector)


Branch = Bm25Search | VectorSearch | NearestNeighborSearch
"""One ranked list of candidates."""

_BRANCH_TYPES = (Bm25Search, VectorSearch, NearestNeighborSearch)


def _check_branch(value: Any) -> Branch:
    if not isinstance(value, _BRANCH_TYPES):
        raise PlanError(
            "expected a search branch (Bm25Search, VectorSearch or NearestNeighborSearch), "
            f"got {value!r}",
            field="branch",
            value=value,
        )
    return value


def _branches(values: Iterable[Branch]) -> tuple[Branch, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"branches must be a sequence of search branches, got {values!r}",
            field="branches",
            value=values,
        )
    given = tuple(values)
    if len(given) > MAX_FUSION_BRANCHES:
        raise PlanError(
            f"fusion of {len(given)} branches; at most {MAX_FUSION_BRANCHES} are allowed "
            "(MAX_FUSION_BRANCHES)",
            field="branches",
            value=len(given),
        )
    branches = tuple(_check_branch(value) for value in given)
    if len(branches) < 2:
        raise PlanError(
            f"fusion needs at least two branches, got {len(branches)}",
            field="branches",
            value=values,
        )
    given_names = Counter(branch.name for branch in branches if branch.name is not None)
    duplicated = sorted(name for name, count in given_names.items() if count > 1)
    if duplicated:
        raise PlanError(
            f"branch names must be unique, {duplicated[0]!r} is used twice",
            field="name",
            value=duplicated[0],
        )
    return branches


def _finite_number(value: Any, label: str) -> float | int:
    number = check_finite_number(value, label=label)
    # -0.0 and 0.0 are equal (and share a statement template): keep one spelling.
    return number + 0 if number == 0 else number


def _weights(values: Iterable[float] | None) -> tuple[float | int, ...] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"weights must be a sequence of numbers, got {values!r}", field="weights", value=values
        )
    weights = tuple(_finite_number(value, "weight") for value in values)
    for weight in weights:
        if weight < 0:
            raise PlanError(f"weight must be >= 0, got {weight!r}", field="weight", value=weight)
    return weights


def _rank_constant(value: float) -> float | int:
    number = _finite_number(value, "rank_constant")
    if isinstance(number, float) and number.is_integer():
        number = int(number)  # 60.0 equals 60: one plan, one SQL text
    if number <= 0:
        raise PlanError(
            f"rank_constant must be > 0, got {value!r}", field="rank_constant", value=value
        )
    return number


def _optional_depth(value: int | None) -> int | None:
    if value is None:
        return None
    return check_positive_int(value, label="depth")


_DEPTH_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "integer", "minimum": 1, "maximum": INT64_MAX},
        {"type": "null"},
    ],
    "description": "Candidates each branch ranks, at least limit + offset; null: 100, the "
    "same for every page.",
}


def _optional_min_score(value: float | None) -> float | int | None:
    if value is None:
        return None
    return _finite_number(value, "min_score")


_MIN_SCORE_SCHEMA: dict[str, Any] = {
    "type": ["number", "null"],
    "description": "Drop fused rows scoring below it, after fusion and before the page; "
    "null: keep every row.",
}


@attrs.frozen(kw_only=True)
class Fusion:
    """What every fusion method shares: two or more branches over one table, and a depth.

    A fusion is abstract: each method is a subclass with a stable ``visit_name`` (the
    compiler's ``visit_<name>`` computes its fused score from the branches' ranked CTEs), a
    ``method`` name (its ``"method"`` in plan documents), its own options as further attrs
    fields (each with its JSON Schema in ``metadata["schema"]``, which plan documents use), and
    :func:`register_fusion`. The branches' hits and ranks are computed the same way for every
    method: within a branch, rows tied on the raw score share a rank (``RANK()``, unless
    ``ranking`` asks for row numbers), and the final
    order breaks fused-score ties by the key ascending.

    Attributes:
        branches: two or more branches (over one table, or over several tables and unions
            that share the plan's key column); names must be unique.
        depth: candidates each branch ranks, the same for every page (default
            :data:`DEFAULT_DEPTH`, 200). A page reaching past it (``limit + offset > depth``)
            is rejected by :class:`SearchPlan`.
        min_score: a finite number: fused rows scoring below it are dropped after fusion,
            before the page is cut (``WHERE fused.score >= min_score``), so pages are slices
            of the kept rows and may come back short. ``None`` (default) keeps every row.
            The scale is the method's: reciprocal rank fusion's ``Σ w / (k + rank)``, [0, 1]
            for the min-max convex combination.
        ranking: how rows are ranked inside each branch (:class:`BranchRanking`): competition
            ranks (default) or row numbers.

    Raises:
        PlanError: fewer than two or more than :data:`MAX_FUSION_BRANCHES` branches, a
            repeated branch name, a depth below 1, a ``min_score``
            that is not a finite number, or ``Fusion`` itself instantiated (pick a method).
    """

    visit_name: ClassVar[str] = "fusion"
    method: ClassVar[str] = ""

    branches: tuple[Branch, ...] = attrs.field(converter=_branches)
    depth: int | None = attrs.field(
        default=None, converter=_optional_depth, metadata={"schema": _DEPTH_SCHEMA}
    )
    min_score: float | int | None = attrs.field(
        default=None, converter=_optional_min_score, metadata={"schema": _MIN_SCORE_SCHEMA}
    )
    ranking: BranchRanking = attrs.field(
        default=BranchRanking.COMPETITION,
        converter=_ranking,
        metadata={"schema": _RANKING_SCHEMA},
    )

    def __attrs_post_init__(self) -> None:
        if not type(self).method:
            raise PlanError(
                f"{type(self).__name__} names no fusion method; use ReciprocalRankFusion or "
                f"another registered method ({', '.join(fusion_methods())})",
                field="fusion",
                value=type(self).__name__,
            )

    def describe(self) -> str:
        """One line saying how the branches are fused, for people (``hdq explain``)."""
        options = ", ".join(
            f"{field.name.replace('_', ' ')} {getattr(self, field.name)!r}"
            for field in fusion_options(type(self))
            if field.name not in ("depth", "min_score", "ranking")
        )
        return f"{self.method} fusion" + (f": {options}" if options else "")


@attrs.frozen(kw_only=True)
class ReciprocalRankFusion(Fusion):
    """Weighted reciprocal rank fusion of two or more branches over one table.

    Each candidate scores ``sum_i weights[i] / (rank_constant + rank_i)`` over the branches
    that returned it, with ranks 1-based (Cormack, Clarke & Buettcher, SIGIR 2009; the
    weighted form multiplies the reciprocal term, as Elasticsearch, OpenSearch and LangChain
    do). Within a branch, rows tied on their raw score share a rank (competition ranking,
    ``RANK()``), and the final order breaks fused-score ties by the key ascending, so results
    are deterministic. Its document method name is ``"rrf"``.

    Attributes:
        branches: two or more branches (over one table, or over several tables and unions
            that share the plan's key column); names must be unique.
        weights: one finite weight >= 0 per branch, at least one > 0 (default all 1).
        rank_constant: RRF's k, > 0 (default 60).
        depth: candidates each branch ranks, the same for every page (default
            :data:`DEFAULT_DEPTH`, 200). A page reaching past it (``limit + offset > depth``)
            is rejected by :class:`SearchPlan`.

    Raises:
        PlanError: as :class:`Fusion`, or a weight count that is not the branch count, a
            negative or non-finite weight, all weights 0, or a rank constant <= 0.
    """

    visit_name: ClassVar[str] = "reciprocal_rank_fusion"
    method: ClassVar[str] = "rrf"

    weights: tuple[float | int, ...] = attrs.field(
        default=None,
        converter=_weights,
        metadata={
            "schema": {
                "anyOf": [
                    {"type": "array", "items": {"type": "number", "minimum": 0}},
                    {"type": "null"},
                ],
                "description": "One weight per branch, at least one > 0; null: all 1.",
            }
        },
    )
    rank_constant: float | int = attrs.field(
        default=DEFAULT_RANK_CONSTANT,
        converter=_rank_constant,
        metadata={
            "schema": {
                "type": ["number", "null"],
                "exclusiveMinimum": 0,
                "default": DEFAULT_RANK_CONSTANT,
                "description": "RRF's k.",
            }
        },
    )

    def describe(self) -> str:
        """``reciprocal rank fusion: rank constant 60, weights 1, 1``."""
        weights = ", ".join(repr(weight) for weight in self.weights)
        return f"reciprocal rank fusion: rank constant {self.rank_constant!r}, weights {weights}"

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.weights is None:
            object.__setattr__(self, "weights", (1,) * len(self.branches))
            return
        if len(self.weights) != len(self.branches):
            raise PlanError(
                f"weights holds {counted(len(self.weights), 'value')} for "
                f"{counted(len(self.branches), 'branch', 'branches')}; "
                "give one weight per branch",
                field="weights",
                value=self.weights,
            )
        if not any(weight > 0 for weight in self.weights):
            raise PlanError(
                f"at least one weight must be > 0, got {self.weights!r}",
                field="weights",
                value=self.weights,
            )


def _alpha(value: float | None) -> float | int | None:
    if value is None:
        return None
    number = _finite_number(value, "alpha")
    if not 0 <= number <= 1:
        raise PlanError(f"alpha must be between 0 and 1, got {value!r}", field="alpha", value=value)
    return number


def is_vector_branch(branch: Branch) -> bool:
    """Whether ``branch`` ranks by a vector distance (semantic or nearest-neighbour search),
    the side ``alpha`` weighs in a score-normalized fusion."""
    return isinstance(branch, (VectorSearch, NearestNeighborSearch))


_SCORE_WEIGHTS_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "array", "items": {"type": "number", "minimum": 0}},
        {"type": "null"},
    ],
    "description": "One weight per branch, at least one > 0; null: equal weights (or alpha).",
}

_ALPHA_SCHEMA: dict[str, Any] = {
    "type": ["number", "null"],
    "minimum": 0,
    "maximum": 1,
    "description": "Two branches, one text and one vector: the vector branch's weight; the "
    "text branch weighs 1 - alpha. Not with weights.",
}


@attrs.frozen(kw_only=True)
class NormalizedScoreFusion(Fusion):
    """What the score-normalized fusion methods share: each branch's raw scores are turned
    into similarities, normalized over the branch's candidates to a common scale, weighted and
    added; a branch that missed a row adds 0.

    **Similarity.** Before any arithmetic a raw score becomes a similarity, higher is better:
    a BM25 score is its own similarity; a distance ``d`` (lower is nearer) becomes ``-d``, for
    every metric: ``cosine`` gives ``cos - 1`` (the cosine similarity less 1), ``dot`` the
    inner product ``a·b`` (the engine's ``negative_dot_product`` negated back), ``l2`` minus
    the squared Euclidean distance, and an engine-embedded semantic search minus its index's
    distance. Both normalizations below are unchanged by adding a constant to every score of a
    branch, so ``1 - d`` would normalize the same; negation is exact in floating point, so the
    conversion adds no rounding. Arithmetic is Float64 (raw scores are Float32, widened
    exactly).

    **Normalization** maps a branch's similarity ``s`` to ``(s - low) / (high - low)`` with the
    method's ``low`` and ``high`` computed over that branch's candidates (the rows its ranked
    list holds: at most ``depth``, after the filter, rows with an undefined distance left out).
    When ``high = low`` (every candidate scores the same, or there is one) the division is
    never made: every candidate of the branch gets the method's :attr:`equal_scores_value`.

    **Fusion.** ``score(d) = Σ_i weight_i · normalized_i(d)`` over the branches, added in
    branch order; a branch that did not return ``d`` adds 0, the worst score a min-max
    normalized branch gives. Rows tied on every branch's raw score tie on the fused score;
    fused ties are broken by the key ascending, as for every method.

    Attributes:
        weights: one finite weight >= 0 per branch, at least one > 0 (default: equal).
        alpha: for two branches, one BM25 and one vector branch: the vector branch's weight
            in [0, 1], the text branch's being ``1 - alpha`` (Bruch et al., ACM TOIS 2023,
            and Weaviate's ``alpha``: 1 is the vector branch alone). Not with ``weights``.

    Raises:
        PlanError: as :class:`Fusion`, or a weight count that is not the branch count, a
            negative or non-finite weight, all weights 0, an ``alpha`` outside [0, 1], given
            with ``weights``, or on branches that are not one text and one vector branch.
    """

    title: ClassVar[str] = ""
    """The method's name for people (``hdq explain``)."""
    equal_scores_value: ClassVar[float] = 1.0
    """The normalized score of every candidate of a branch whose ``high`` equals its ``low``."""

    weights: tuple[float | int, ...] | None = attrs.field(
        default=None, converter=_weights, metadata={"schema": _SCORE_WEIGHTS_SCHEMA}
    )
    alpha: float | int | None = attrs.field(
        default=None, converter=_alpha, metadata={"schema": _ALPHA_SCHEMA}
    )

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.alpha is not None:
            if self.weights is not None:
                raise PlanError(
                    "give alpha or weights, not both: alpha is shorthand for the weights "
                    "1 - alpha (text) and alpha (vector)",
                    field="alpha",
                    value=self.alpha,
                )
            kinds = sorted(is_vector_branch(branch) for branch in self.branches)
            if kinds != [False, True]:
                names = " + ".join(branch.kind for branch in self.branches)
                raise PlanError(
                    f"alpha weighs one text branch against one vector branch, not {names}; "
                    "give one weight per branch instead",
                    field="alpha",
                    value=self.alpha,
                )
        if self.weights is not None:
            if len(self.weights) != len(self.branches):
                raise PlanError(
                    f"weights holds {counted(len(self.weights), 'value')} for "
                    f"{counted(len(self.branches), 'branch', 'branches')}; "
                    "give one weight per branch",
                    field="weights",
                    value=self.weights,
                )
            if not any(weight > 0 for weight in self.weights):
                raise PlanError(
                    f"at least one weight must be > 0, got {self.weights!r}",
                    field="weights",
                    value=self.weights,
                )

    def alpha_weights(self) -> tuple[float, ...] | None:
        """``(1 - alpha, alpha)`` placed on the text and the vector branch, or ``None``."""
        if self.alpha is None:
            return None
        alpha = float(self.alpha)
        return tuple(alpha if is_vector_branch(branch) else 1.0 - alpha for branch in self.branches)

    @property
    def branch_weights(self) -> tuple[float, ...]:
        """The Float64 multiplier of each branch's normalized score, in branch order: what the
        SQL writes and the reference fusion multiplies by."""
        raise NotImplementedError

    def describe(self) -> str:
        """``min-max normalized convex combination: weights text 0.5, nearest 0.5``."""
        names = branch_names(self)
        weights = ", ".join(
            f"{name} {weight!r}" for name, weight in zip(names, self.branch_weights)
        )
        return f"{self.title}: weights {weights}"


@attrs.frozen(kw_only=True)
class MinMaxFusion(NormalizedScoreFusion):
    """Min-max normalized convex combination of two or more branches over one table.

    Each branch's similarities (:class:`NormalizedScoreFusion`: raw BM25 scores, negated
    distances) are scaled to [0, 1] over its candidates by min-max normalization, ``low`` the
    smallest and ``high`` the largest similarity: its best candidate scores 1, its worst 0. A
    branch whose candidates all score the same (one candidate included) gives each of them 1,
    as Weaviate's ``relativeScoreFusion`` does. The fused score is the convex combination
    ``Σ_i w_i · normalized_i(d)`` with ``w_i`` the weights divided by their sum (``alpha``:
    ``1 - alpha`` and ``alpha``; neither: ``1 / n`` each), so it lies in [0, 1]; a row a
    branch did not return takes that branch's worst normalized score, 0 (as OpenSearch's
    normalization processor does). Convex combination of normalized scores, and its ``alpha``,
    follow Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
    TOIS 2023. Its document method name is ``"min_max"``.

    Attributes:
        weights: one finite weight >= 0 per branch, at least one > 0; only their ratios
            matter (default: equal).
        alpha: the vector branch's weight in [0, 1] for one text and one vector branch.
        depth: candidates each branch ranks and normalizes over, the same for every page
            (default :data:`DEFAULT_DEPTH`).

    Raises:
        PlanError: as :class:`NormalizedScoreFusion`.
    """

    visit_name: ClassVar[str] = "min_max_fusion"
    method: ClassVar[str] = "min_max"
    title: ClassVar[str] = "min-max normalized convex combination"
    equal_scores_value: ClassVar[float] = 1.0

    @property
    def branch_weights(self) -> tuple[float, ...]:
        """The convex weights: ``alpha``'s pair, else the weights over their sum, else
        ``1 / n`` each; they sum to 1 up to rounding."""
        by_alpha = self.alpha_weights()
        if by_alpha is not None:
            return by_alpha
        if self.weights is None:
            return (1.0 / len(self.branches),) * len(self.branches)
        weights = [float(weight) for weight in self.weights]
        try:
            total = math.fsum(weights)
        except OverflowError:
            # Each weight is finite but their sum is not: scale them by a power of two first
            # (exact), so the ratios are those the unscaled sum would give.
            exponent = math.frexp(max(weights))[1]
            weights = [math.ldexp(weight, -exponent) for weight in weights]
            total = math.fsum(weights)
        return tuple(weight / total for weight in weights)


@attrs.frozen(kw_only=True)
class DistributionBasedScoreFusion(NormalizedScoreFusion):
    """Distribution-based score fusion (DBSF) of two or more branches over one table, as
    Qdrant defines it.

    Each branch's similarities (:class:`NormalizedScoreFusion`) are normalized with ``low =
    mean - 3 sd`` and ``high = mean + 3 sd`` over its candidates, where ``sd`` is the *sample*
    standard deviation (divisor ``n - 1``), so a candidate at the mean scores 0.5. Values are
    not clamped: a candidate more than 3 sd from the mean (possible from 11 candidates up)
    scores below 0 or above 1. A branch with one candidate, or whose candidates all score the
    same (sd = 0), gives each of them 0.5. The fused score is ``Σ_i w_i · normalized_i(d)``
    with the weights as given (default 1 each); a branch that missed the row adds 0. This is
    Qdrant's ``dbsf`` fusion (``lib/segment/src/common/score_fusion.rs``: Welford mean and
    sample variance, ``mean ± 3·std`` as the extremes, 0.5 for one point or equal extremes, no
    clamping, weights multiply and sum; https://qdrant.tech/documentation/search/hybrid-queries/
    ); Qdrant computes in Float32, here in Float64. Its document method name is ``"dbsf"``.

    Attributes:
        weights: one finite weight >= 0 per branch, at least one > 0 (default 1 each).
        alpha: for one text and one vector branch, weights ``1 - alpha`` and ``alpha``.
        depth: candidates each branch ranks and normalizes over (default
            :data:`DEFAULT_DEPTH`).

    Raises:
        PlanError: as :class:`NormalizedScoreFusion`.
    """

    visit_name: ClassVar[str] = "distribution_based_score_fusion"
    method: ClassVar[str] = "dbsf"
    title: ClassVar[str] = "distribution-based score fusion"
    equal_scores_value: ClassVar[float] = 0.5
    standard_deviations: ClassVar[float] = 3.0
    """The half-width of the normalization range, in standard deviations (Qdrant: 3)."""

    @property
    def branch_weights(self) -> tuple[float, ...]:
        """``alpha``'s pair, else the weights as given, else 1 each."""
        by_alpha = self.alpha_weights()
        if by_alpha is not None:
            return by_alpha
        if self.weights is None:
            return (1.0,) * len(self.branches)
        return tuple(float(weight) for weight in self.weights)


DEFAULT_FUSION_METHOD = ReciprocalRankFusion.method
"""The method of a plan document's fusion that names none: ``"rrf"``."""

_FUSIONS: dict[str, type[Fusion]] = {}
_METHOD_NAME = re.compile(r"[a-z][a-z0-9_]*")

F = TypeVar("F", bound=type[Fusion])


def register_fusion(cls: F) -> F:
    """Make a fusion method known to plan documents (and :func:`fusion_class`) by its
    ``method`` name; returns the class, so it decorates one. Registering the same class again
    is harmless.

    Raises:
        PlanError: ``cls`` is not a :class:`Fusion` subclass, its ``method`` or
            ``visit_name`` is not a lower-case name, one of its options has no
            ``metadata["schema"]``, or another class has the method name.
    """
    if not (isinstance(cls, type) and issubclass(cls, Fusion)) or cls is Fusion:
        raise PlanError(f"{cls!r} is not a Fusion subclass", field="fusion", value=cls)
    method = cls.__dict__.get("method")
    for label, name in (("method", method), ("visit_name", cls.__dict__.get("visit_name"))):
        if not isinstance(name, str) or _METHOD_NAME.fullmatch(name) is None:
            raise PlanError(
                f"{cls.__name__} must set its own {label}, a name matching [a-z][a-z0-9_]*; "
                f"got {name!r}",
                field=label,
                value=name,
            )
    assert isinstance(method, str)
    for field in fusion_options(cls):
        if not isinstance(field.metadata.get("schema"), dict):
            raise PlanError(
                f"{cls.__name__}.{field.name} has no JSON Schema (metadata['schema'])",
                field=field.name,
                value=cls,
            )
    known = _FUSIONS.get(method)
    if known is not None and known is not cls:
        raise PlanError(
            f"fusion method {method!r} is already {known.__name__}", field="method", value=method
        )
    _FUSIONS[method] = cls
    return cls


def unregister_fusion(cls: type[Fusion]) -> None:
    """Remove a method :func:`register_fusion` added (a test's own toy method); the
    built-in methods stay, and a class that is not the one registered under its method name
    removes nothing."""
    method = cls.__dict__.get("method")
    if method in _BUILT_IN_FUSIONS or _FUSIONS.get(method) is not cls:  # type: ignore[arg-type]
        return
    del _FUSIONS[method]  # type: ignore[arg-type]


def fusion_methods() -> tuple[str, ...]:
    """The registered fusion method names, in registration order (``"rrf"`` first)."""
    return tuple(_FUSIONS)


def fusion_class(method: str) -> type[Fusion]:
    """The fusion class registered under ``method``.

    Raises:
        PlanError: no method of that name is registered.
    """
    try:
        return _FUSIONS[method]
    except (KeyError, TypeError):
        known = ", ".join(repr(name) for name in _FUSIONS)
        raise PlanError(
            f"unknown fusion method {method!r}; known methods: {known}",
            field="method",
            value=method,
        ) from None


def fusion_options(cls: type[Fusion]) -> tuple[attrs.Attribute[Any], ...]:
    """A fusion class's options: its attrs init fields but ``branches``, the method's own
    first (in declaration order, a base method class's before its subclass's), then those
    every fusion shares (:class:`Fusion`'s: ``depth``, ``min_score``, ``ranking``).

    >>> [field.name for field in fusion_options(ReciprocalRankFusion)]
    ['weights', 'rank_constant', 'depth', 'min_score', 'ranking']
    >>> [field.name for field in fusion_options(MinMaxFusion)]
    ['weights', 'alpha', 'depth', 'min_score', 'ranking']
    """
    shared = {field.name for field in attrs.fields(Fusion)}
    fields = [field for field in attrs.fields(cls) if field.init and field.name != "branches"]
    return (
        *(field for field in fields if field.name not in shared),
        *(field for field in fields if field.name in shared),
    )


register_fusion(ReciprocalRankFusion)
register_fusion(MinMaxFusion)
register_fusion(DistributionBasedScoreFusion)

_BUILT_IN_FUSIONS = frozenset(_FUSIONS)
"""The methods the library registers itself, which :func:`unregister_fusion` keeps."""


def make_fusion(method: str, branches: Sequence[Branch], /, **options: Any) -> Fusion:
    """The fusion registered as ``method`` over ``branches``, with ``options`` (an option
    given as ``None`` takes its default). ``method`` and ``branches`` are positional only, so
    an option named ``branches`` or ``method`` (say from a plan fragment file) is refused as
    an option the method does not take.

    >>> text = Bm25Search(table="t", column="body", query_text="q")
    >>> near = NearestNeighborSearch(table="t", column="e", query_vector=[1.0, 0.0])
    >>> make_fusion("min_max", [text, near], alpha=0.25, rank_constant=None).branch_weights
    (0.75, 0.25)

    Raises:
        PlanError: an unknown method, an option the method does not take (naming the ones
            it does), or a value the method's class refuses.
    """
    cls = fusion_class(method)
    names = [field.name for field in fusion_options(cls)]
    given = {name: value for name, value in options.items() if value is not None}
    for name, value in given.items():
        if name not in names:
            raise PlanError(
                f"{name} does not apply to the {method!r} fusion; its options: {', '.join(names)}",
                field=name,
                value=value,
                mentions=tuple(names),
            )
    return cls(branches=branches, **given)


Source = Bm25Search | VectorSearch | NearestNeighborSearch | Fusion
"""What a plan searches: one branch, or a fusion of several."""


def _optional_source(value: TableSourceInput | None) -> TableSource | None:
    return None if value is None else coerce_table_source(value)


def _source(value: Source) -> Source:
    if isinstance(value, Fusion):
        return value
    return _check_branch(value)


def _optional_predicate(value: Predicate | None) -> Predicate | None:
    if value is None:
        return None
    return check_predicate(value)


def _columns(values: Iterable[str] | None) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"columns must be a sequence of column names, got {values!r}",
            field="columns",
            value=values,
        )
    columns = tuple(normalize_identifier(value, label="column") for value in values)
    if not columns:
        raise PlanError("columns must not be empty", field="columns", value=values)
    if len(set(columns)) < len(columns):
        duplicated = min(name for name, count in Counter(columns).items() if count > 1)
        raise PlanError(
            f"column {duplicated!r} is projected twice", field="columns", value=duplicated
        )
    return columns


def _limit(value: int) -> int:
    return check_positive_int(value, label="limit")


def _offset(value: int) -> int:
    return check_positive_int(value, label="offset", minimum=0)


def _group_column(value: str | None) -> str | None:
    if value is None:
        return None
    return normalize_identifier(value, label="group_by column")


def _group_size(value: int) -> int:
    size = check_positive_int(value, label="group_size")
    if size > MAX_GROUP_SIZE:
        raise PlanError(
            f"group_size {size} is more than {MAX_GROUP_SIZE} rows per group",
            field="group_size",
            value=size,
        )
    return size


def read_facets(values: Iterable[str] | None) -> tuple[str, ...]:
    """The facet columns ``values`` names (``SearchPlan.facets``): identifiers, lower-cased,
    each once, in order; ``None`` is none.

    Raises:
        PlanError: not a list of names, a name that is no identifier, more than
            :data:`MAX_FACETS` columns.
    """
    if values is None or (values.__class__ is tuple and not values):
        return ()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"facets must be a list of column names, got {values!r}",
            field="facets",
            value=repr(values),
        )
    names = tuple(
        dict.fromkeys(normalize_identifier(value, label="facet column") for value in values)
    )
    if len(names) > MAX_FACETS:
        raise PlanError(
            f"{len(names)} facet columns is more than {MAX_FACETS}",
            field="facets",
            value=len(names),
        )
    return names


def _formula(value: Any) -> ScoreFormula | None:
    if value is None or isinstance(value, ScoreFormula):
        return value
    raise PlanError(
        f"formula must be a ScoreFormula, got {value!r}", field="formula", value=repr(value)
    )


def _after(value: str | None) -> str | None:
    if value is None:
        return None
    read_cursor(value)
    return value


def _page_scores(values: Iterable[str] | None) -> tuple[str, ...]:
    if values is None or (values.__class__ is tuple and not values):
        return ()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"page_scores must be a sequence of branch names, got {values!r}",
            field="page_scores",
            value=values,
        )
    names = list(values)
    if not names:
        return ()  # the default: nothing to check
    if len(names) > MAX_FUSION_BRANCHES:
        raise PlanError(
            f"page_scores names {len(names)} branches; a fusion has at most {MAX_FUSION_BRANCHES}",
            field="page_scores",
            value=len(names),
        )
    for name in names:
        if not isinstance(name, str) or _BRANCH_NAME.fullmatch(name) is None:
            raise PlanError(
                f"page_scores holds branch names matching [a-z][a-z0-9_]*, got {name!r}",
                field="page_scores",
                value=name,
            )
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise PlanError(
            f"page_scores names branch {repeated[0]!r} twice",
            field="page_scores",
            value=repeated[0],
        )
    return tuple(names)


def branch_names(source: Source) -> tuple[str, ...]:
    """The name of each branch: its own, else its kind, numbered when a kind repeats.

    >>> fusion = ReciprocalRankFusion(branches=[
    ...     Bm25Search(table="t", column="title", query_text="q"),
    ...     Bm25Search(table="t", column="body", query_text="q")])
    >>> branch_names(fusion)
    ('text', 'text_2')
    """
    branches = source.branches if isinstance(source, Fusion) else (source,)
    taken = {branch.name for branch in branches if branch.name is not None}
    names: list[str] = []
    counts: dict[str, int] = {}
    for branch in branches:
        if branch.name is not None:
            names.append(branch.name)
            continue
        counts[branch.kind] = counts.get(branch.kind, 0) + 1
        candidate = (
            branch.kind if counts[branch.kind] == 1 else f"{branch.kind}_{counts[branch.kind]}"
        )
        while candidate in taken:
            counts[branch.kind] += 1
            candidate = f"{branch.kind}_{counts[branch.kind]}"
        taken.add(candidate)
        names.append(candidate)
    return tuple(names)


def debug_columns(name: str, branch: Branch) -> tuple[str, str]:
    """The rank and raw-score result columns of one fused branch.

    >>> debug_columns("text", Bm25Search(table="t", column="body", query_text="q"))
    ('text_rank', 'text_score')
    """
    return (f"{name}_rank", f"{name}_{branch.raw_score_column.lstrip('_')}")


def bound_columns(name: str, fusion: Fusion) -> tuple[str, ...]:
    """The result columns of one fused branch's normalization bounds that a plan with
    ``explain_scores`` returns: ``<name>_similarity_low`` and ``<name>_similarity_high`` for a
    score-normalized fusion (:class:`NormalizedScoreFusion`, the ``low`` and ``high`` its
    similarities are normalized over), none for a rank-based one.

    >>> fusion = MinMaxFusion(branches=[
    ...     Bm25Search(table="t", column="title", query_text="q"),
    ...     Bm25Search(table="t", column="body", query_text="q")])
    >>> bound_columns("text", fusion)
    ('text_similarity_low', 'text_similarity_high')
    """
    if isinstance(fusion, NormalizedScoreFusion):
        return (f"{name}_similarity_low", f"{name}_similarity_high")
    return ()


@attrs.frozen(kw_only=True)
class SearchPlan:
    """A whole search: one branch or a fusion, its filter, projection and page.

    Attributes:
        source: a single branch, or a :class:`Fusion` of several (such as
            :class:`ReciprocalRankFusion`).
        columns: table columns to return, in order. Default: the key column (if any), then
            the searched text column (first text or semantic branch), if any. A vector column
            searched by a nearest-neighbour branch is never projected (it would forfeit the
            index fast path and flood the output); a name equal to a result column
            (``score``, ``_distance``, the debug columns) is rejected rather than silently
            shadowed.
        limit: rows returned (top-k), >= 1. Default 10.
        offset: rows skipped before them, >= 0. Default 0.
        filter: a predicate applied inside every branch, in the same query as the branch's
            ``ORDER BY ... LIMIT`` (never after fusion). A nearest-neighbour branch filters
            before its top-k; ``bm25_search`` and ``vector_search`` apply their k first (the
            engine bounds them inside the function), so a selective filter can leave such a
            branch with fewer rows than asked for.
        key_column: the unique key that fused branches are joined and tie-broken on
            (default ``id``). It must be unique in the table: a duplicated key multiplies rows.
            ``None``: the table has no key; a single branch then has no key tie-break (rows
            tied on the raw score and every tie-breaker come back in the engine's order), and
            a fusion, which joins its branches on the key, is refused.
        tie_breakers: columns that order rows tied on the ranking, after it and before the
            key (:class:`TieBreaker`: ``"created_at desc"``, ``("created_at", "desc")``);
            table columns or result columns. On a single nearest-neighbour branch they
            forfeit the vector-index fast path (the index orders by distance alone, engine
            contract §2.2), as the key tie-break would.
        include_branch_scores: for a fusion, also return each branch's rank and raw score
            (``<branch>_rank``, ``<branch>_score`` or ``<branch>_distance``); NULL where the
            branch did not return the row (its distance computed there for a branch named
            in ``page_scores``). A single branch already returns its raw score.
        score_name: the fused score's result column (default ``score``); ``None``: a fusion
            does not return it (rows are still ordered by it), say to return one branch's
            distance instead (that branch's ``result_name``). A single branch names its
            column with its own ``result_name``.
        include_vectors: also return the searched vector column of each nearest-neighbour
            branch (after ``columns``), for client-side reranking such as maximal marginal
            relevance. A single nearest-neighbour branch that returns its vector column
            forfeits the vector-index fast path (engine contract §2.2, precondition 7, and
            runtimedb #508; ``hdq lint`` HDQ002); a fusion reads the vectors from its final
            join to the table and keeps it.
        rows_from: for a fusion, the table or :class:`~hotdata_retrieval.plan.names.
            TableUnion` the final join reads each hit's columns from (the key joins it; a
            union reads each hit from its own member). Default: every table the branches
            search, as a union when there are several. Name it when a branch searches a side
            table that lacks the projected columns (hotmemory's cue table). A single branch
            reads its rows from its own table.
        page_scores: for a fusion, the names of nearest-neighbour branches whose distance
            every hit carries: a hit the branch did not return gets the branch's distance
            computed for the hit's row (the branch's distance function over the row's vector,
            read by the final join to ``rows_from``), where it would otherwise be NULL; the
            branch's rank stays NULL there. The branch's ``<branch>_distance`` (with
            ``include_branch_scores``), its ``result_name`` and a tie-breaker on either read
            the completed value. It is NULL only for a row without a vector. The branch must
            search tables of ``rows_from`` (their rows hold its vectors), and the plan must
            return its value. A BM25 or semantic branch cannot be named: no SQL expression
            over a row gives its score for a row it did not return on every engine. The
            vector-index fast path of the branch's own query is kept: the distances are
            computed in the final join, never in the branch's query.
        explain_scores: for a fusion, also return what each hit's fused score is made of, so
            each branch's normalized value and weighted contribution can be given per hit
            (:class:`~hotdata_retrieval.engines.results.BranchScore`): the branch scores
            (``include_branch_scores``, which it needs and defaults to) and, for a
            score-normalized fusion, each branch's normalization bounds
            (:func:`bound_columns`). A single branch's score is its raw score already.
        formula: for a fusion, the final score
            (:class:`~hotdata_retrieval.plan.formula.ScoreFormula`): a sum of weighted terms
            over the fused score, numeric columns and decays of them. The rows are ordered by
            it, ``min_score`` applies to it and pages are slices of its ranking; the statement
            also returns the fused score (``fused_score``) and each term
            (``formula_term_<i>``).
        steps: what runs on the statement's rows after it (:mod:`hotdata_retrieval.plan.
            steps`: :class:`~hotdata_retrieval.plan.steps.Diversity`), in their stated
            order, each kind at most once. With steps, ``limit`` and ``offset`` cut the page
            from the last step's rows, and the statement fetches the candidates the steps
            need (:func:`~hotdata_retrieval.plan.steps.statement_rows`).
        facets: table columns whose values are counted over the rows the ranking
            considered, returned with the page (``SearchResult.facets``, at most
            :data:`FACET_VALUES` values each, by count, ties by value): a fusion's first
            ``depth`` fused rows, a single branch's first :attr:`depth` rows (at least
            :data:`DEFAULT_DEPTH`), in both cases only rows the filter passes. NULL values
            are not counted. The same statement returns the page and the counts (a window
            ``COUNT(*) OVER (PARTITION BY <column>)`` over the candidates,
            ``docs/sql-shapes.md``, "Facets").
        PlanError: on any invalid part, naming the bad value: a field's own converter
            refuses it, or a rule over several fields does (:func:`plan_checks` lists the
            rules, each a named :class:`PlanCheck`, in the order they run).
    """

    source: Source = attrs.field(converter=_source)
    columns: tuple[str, ...] | None = attrs.field(default=None, converter=_columns)
    limit: int = attrs.field(default=10, converter=_limit)
    offset: int = attrs.field(default=0, converter=_offset)
    filter: Predicate | None = attrs.field(default=None, converter=_optional_predicate)
    key_column: str | None = attrs.field(default="id", converter=_key_column)
    explain_scores: bool = attrs.field(default=False, validator=check_flag)
    include_branch_scores: bool = attrs.field(
        default=attrs.Factory(lambda plan: plan.explain_scores, takes_self=True),
        validator=check_flag,
    )
    tie_breakers: tuple[TieBreaker, ...] = attrs.field(default=(), converter=_tie_breakers)
    score_name: str | None = attrs.field(default="score", converter=_score_name)
    include_vectors: bool = attrs.field(default=False, validator=check_flag)
    rows_from: TableSource | None = attrs.field(default=None, converter=_optional_source)
    page_scores: tuple[str, ...] = attrs.field(default=(), converter=_page_scores)
    steps: tuple[PlanStep, ...] = attrs.field(default=(), converter=coerce_steps)
    group_by: str | None = attrs.field(default=None, converter=_group_column)
    group_size: int = attrs.field(default=1, converter=_group_size)
    formula: ScoreFormula | None = attrs.field(default=None, converter=_formula)
    after: str | None = attrs.field(default=None, converter=_after)
    facets: tuple[str, ...] = attrs.field(default=(), converter=read_facets)

    def __attrs_post_init__(self) -> None:
        _run_plan_checks(self)

    @functools.cached_property
    def checked_shape(self) -> tuple[Any, ...] | None:
        """What the plan's checks read: every field of the plan, its fusion and branches
        except a branch's query (text or vector), with their classes, and the filter with the
        type of each of its values (``1``, ``1.0`` and ``True`` are equal in Python, not to a
        column's check); ``None`` for a plan
        with a cursor (``after``) or ``steps``, whose checks read the query, or with an
        unhashable field. Plans of one shape pass or fail the same checks, this module's
        and an engine's check against a table's columns (not a query vector's length).
        (Computed once per plan.)"""
        shape = self.shape_without_values
        if shape is None or self.filter is None:
            return shape
        return (*shape, self.filter)

    @functools.cached_property
    def shape_without_values(self) -> tuple[Any, ...] | None:
        """:attr:`checked_shape` without the filter's values: the filter's
        :func:`~hotdata_retrieval.plan.filters.filter_shape` (its columns, operators and the
        types of its values) in place of the filter. No check of this module reads a
        filter's values, so plans of one such shape pass or fail them alike, whatever values
        their filters compare (an engine's check of the values against a column's type is
        run for each filter). ``None`` where :attr:`checked_shape` is, or for a filter node
        registered from outside. (Computed once per plan.)"""
        if self.after is not None or self.steps:
            return None
        return _shape_key(self)

    @property
    def branches(self) -> tuple[Branch, ...]:
        """The plan's branches, in order (one for a single-branch plan)."""
        if isinstance(self.source, Fusion):
            return self.source.branches
        return (self.source,)

    @property
    def fusion(self) -> Fusion | None:
        """The fusion node (any :class:`Fusion` method), or ``None`` for a single-branch
        plan."""
        return self.source if isinstance(self.source, Fusion) else None

    def candidates(self) -> SearchPlan:
        """The plain plan whose ranked rows a grouped plan forms its groups from, or a plan
        with a cursor (``after``) takes its page from: the same search, its first
        :attr:`depth` rows, projecting the key, the group column and each tie-break column
        read from the table (the groups are ordered by them). ``self`` for a plan with
        neither."""
        if self.group_by is None and self.after is None and not self.facets:
            return self
        results = set(self.result_columns)
        named = {branch.result_name for branch in self.branches if branch.result_name}
        columns = dict.fromkeys(
            [
                *self.projection,
                *(
                    breaker.column
                    for breaker in self.tie_breakers
                    if breaker.column not in results and breaker.column not in named
                ),
                *([] if self.key_column is None else [self.key_column]),
                *self.facets,
            ]
        )
        vectors = self.vector_columns if self.include_vectors else frozenset()
        return attrs.evolve(
            self,
            columns=[name for name in columns if name not in vectors],
            limit=self.depth,
            offset=0,
            group_by=None,
            group_size=1,
            after=None,
            facets=(),
            # the rows are ordered by the fused score, returned or not
            score_name=self.score_name or "score",
        )

    @property
    def cursor(self) -> Cursor | None:
        """The decoded ``after`` token (:class:`~hotdata_retrieval.plan._cursor.Cursor`), or
        ``None``."""
        return None if self.after is None else read_cursor(self.after)

    @property
    def table(self) -> TableSource:
        """The table the plan reads its rows from: a single branch's table, else
        :attr:`row_source`."""
        if self.fusion is None:
            return self.branches[0].table
        return self.row_source

    @property
    def row_source(self) -> TableSource:
        """Where the rows' columns are read: ``rows_from``, else every table the branches
        search (in branch order; a :class:`~hotdata_retrieval.plan.names.TableUnion` when
        there are several), else the single branch's table."""
        if self.rows_from is not None:
            return self.rows_from
        sources = {branch.table: None for branch in self.branches}
        if len(sources) == 1:
            return next(iter(sources))
        members = dict.fromkeys(member for source in sources for member in source.members)
        return TableUnion(tuple(members))

    @functools.cached_property
    def tables(self) -> tuple[TableName, ...]:
        """Every table the plan reads, once each, in order: the branches' tables (union
        members in order), then those of ``rows_from``. (Computed once per plan: a search
        reads it several times, and a plan never changes.)"""
        members = dict.fromkeys(
            member for branch in self.branches for member in branch.table.members
        )
        members.update(dict.fromkeys(self.row_source.members))
        return tuple(members)

    @property
    def single_table(self) -> TableName | None:
        """The one table the plan reads, or ``None`` when it reads several (a union, a
        fusion over several tables)."""
        tables = self.tables
        return tables[0] if len(tables) == 1 else None

    def filtered_tables(self) -> tuple[TableName, ...]:
        """The tables the plan's filter is evaluated on (none without a filter): each
        branch's tables, except a branch's that filters through the key, whose filter reads
        the ``row_source`` tables instead."""
        if self.filter is None:
            return ()
        tables = {
            member: None
            for branch in self.branches
            if not branch.filter_through_key
            for member in branch.table.members
        }
        if any(branch.filter_through_key for branch in self.branches):
            tables.update(dict.fromkeys(self.row_source.members))
        return tuple(tables)

    def table_columns(self) -> Mapping[TableName, frozenset[str]]:
        """The columns the plan reads from each of its :attr:`tables`: what an engine checks
        each table has. Every table gives the key; a branch's table its searched column, and
        the filter's columns unless the branch filters through the key; the rows tables the
        projection, the tie-break columns that are not result columns and, when a branch
        filters through the key, the filter's columns, the ``facets`` columns, the columns
        a score ``formula`` reads and those its steps read (highlighted columns). (Computed
        once per plan; read-only.)"""
        return self._table_columns

    @functools.cached_property
    def _table_columns(self) -> Mapping[TableName, frozenset[str]]:
        filtered = predicate_columns(self.filter) if self.filter is not None else set()
        key = {self.key_column} if self.key_column is not None else set()
        needed: dict[TableName, set[str]] = {table: set(key) for table in self.tables}
        through_key = False
        for branch in self.branches:
            through_key = through_key or branch.filter_through_key
            for member in branch.table.members:
                needed[member].add(branch.column)
                if not branch.filter_through_key:
                    needed[member] |= filtered
        results = set(self.result_columns)
        row_columns = {
            *self.projection,
            *(breaker.column for breaker in self.tie_breakers if breaker.column not in results),
            *self.page_score_columns,
            *self.facets,
            *(() if self.formula is None else self.formula.columns),
            *(column for step in self.steps for column in step.read_columns(self)),
        }
        if through_key:
            row_columns |= filtered
        for member in self.row_source.members:
            needed[member] |= row_columns
        return types.MappingProxyType(
            {table: frozenset(columns) for table, columns in needed.items()}
        )

    @property
    def branch_names(self) -> tuple[str, ...]:
        """Each branch's name, as used in CTE and debug-column names."""
        return branch_names(self.source)

    @property
    def depth(self) -> int:
        """Candidates each branch of a fusion ranks (its ``depth``, else
        :data:`DEFAULT_DEPTH`); ``limit + offset`` for a single branch, and for a grouped
        single branch the rows its groups are formed over: :data:`DEFAULT_DEPTH`, widened to
        ``(limit + offset) * group_size`` when that is more (the page then depends on how
        deep it reaches, as an ungrouped single branch's does); for a single branch with a
        cursor, the rows served before it and ``limit``; for a single branch with
        ``facets``, the rows they count: :data:`DEFAULT_DEPTH`, widened to ``limit + offset``
        when that is more."""
        fusion = self.fusion
        if fusion is None:
            if self.facets:
                return max(DEFAULT_DEPTH, self.limit + self.offset)
            if self.group_by is not None:
                return max(DEFAULT_DEPTH, (self.limit + self.offset) * self.group_size)
            cursor = self.cursor
            if cursor is not None:
                return cursor.served + self.limit
            return self.limit + self.offset
        return DEFAULT_DEPTH if fusion.depth is None else fusion.depth

    @property
    def page_scored_branches(self) -> tuple[tuple[str, NearestNeighborSearch], ...]:
        """``(name, branch)`` of each branch ``page_scores`` names, in branch order."""
        if not self.page_scores:
            return ()
        named = set(self.page_scores)
        return tuple(
            (name, branch)
            for name, branch in zip(self.branch_names, self.branches)
            if name in named and isinstance(branch, NearestNeighborSearch)
        )

    @property
    def page_score_columns(self) -> tuple[str, ...]:
        """The vector columns the final join reads from ``rows_from`` to compute the
        ``page_scores`` distances, once each, in branch order."""
        return tuple(dict.fromkeys(branch.column for _, branch in self.page_scored_branches))

    @property
    def vector_columns(self) -> frozenset[str]:
        """Vector columns searched by nearest-neighbour branches."""
        return frozenset(
            branch.column for branch in self.branches if isinstance(branch, NearestNeighborSearch)
        )

    @functools.cached_property
    def projection(self) -> tuple[str, ...]:
        """The table columns returned: ``columns``, or the default described above, then
        with ``include_vectors`` the searched vector columns. (Computed once per plan.)"""
        if self.columns is not None:
            chosen = list(self.columns)
        else:
            text_columns = [
                branch.column
                for branch in self.branches
                if isinstance(branch, (Bm25Search, VectorSearch))
            ]
            chosen = [] if self.key_column is None else [self.key_column]
            if text_columns and text_columns[0] != self.key_column:
                chosen.append(text_columns[0])
        if self.group_by is not None and self.group_by not in chosen:
            chosen.append(self.group_by)
        if self.include_vectors:
            chosen.extend(
                column
                for column in sorted(self.vector_columns, key=self._vector_order)
                if column not in chosen
            )
        return tuple(chosen)

    def _vector_order(self, column: str) -> int:
        return next(
            index
            for index, branch in enumerate(self.branches)
            if isinstance(branch, NearestNeighborSearch) and branch.column == column
        )

    @property
    def ranking_column(self) -> str:
        """The result column the rows are ordered by: a single branch's raw score or
        distance (its ``result_name``, else ``score`` / ``_distance``), a fusion's score
        (``score`` inside the statement, whatever ``score_name`` returns it as)."""
        if self.fusion is None:
            branch = self.branches[0]
            return branch.result_name or branch.raw_score_column
        return "score"

    @property
    def result_columns(self) -> tuple[str, ...]:
        """Columns the search appends after the projection, in output order.

        A single branch appends its raw score (``score`` or ``_distance``, or its
        ``result_name``); a fusion appends its ``score_name`` (the fused score, higher is
        better; none when ``None``), then, with ``include_branch_scores``, ``<branch>_rank``
        and ``<branch>_score``/``<branch>_distance`` for each branch, then with
        ``explain_scores`` each branch's :func:`bound_columns`, then each named branch's
        ``result_name``.
        """
        if self.fusion is None:
            return (self.ranking_column,)
        columns = [] if self.score_name is None else [self.score_name]
        if self.include_branch_scores:
            for name, branch in zip(self.branch_names, self.branches):
                columns.extend(debug_columns(name, branch))
        if self.explain_scores:
            for name in self.branch_names:
                columns.extend(bound_columns(name, self.fusion))
        if self.formula is not None:
            columns.append(FUSED_SCORE_COLUMN)
            columns.extend(term_columns(self.formula))
        columns.extend(branch.result_name for branch in self.branches if branch.result_name)
        return tuple(columns)


@attrs.frozen
class PlanCheck:
    """One rule a :class:`SearchPlan` must keep, with the message that refuses a plan
    breaking it.

    Attributes:
        name: the rule's stable name, e.g. ``"fusion_needs_key"``.
        rule: what the rule demands, in one sentence (the check function's docstring).
        check: called with the plan once every field is converted; returns ``None`` or
            raises :class:`~hotdata_retrieval.errors.PlanError` naming the bad value.
    """

    name: str
    rule: str
    check: Callable[[SearchPlan], None] = attrs.field(repr=False)


_PLAN_CHECKS: list[PlanCheck] = []


def _plan_check(function: Callable[[SearchPlan], None]) -> Callable[[SearchPlan], None]:
    """Add ``function`` to the checks :class:`SearchPlan` runs, after those defined before
    it; its name (less ``_check_``) names the rule and its docstring states it."""
    rule = " ".join((function.__doc__ or "").split())
    _PLAN_CHECKS.append(
        PlanCheck(name=function.__name__.removeprefix("_check_"), rule=rule, check=function)
    )
    return function


MAX_CHECKED_SHAPES = 512
"""The most plan shapes :func:`_run_plan_checks` remembers as passing every check (it
starts over when full)."""


class _CheckedShapes:
    """The shapes (:func:`_shape_key`) of plans that passed every check of one list of
    checks: a plan of a remembered shape passes them too, so they are not run again. Tied
    to the list it was filled for (a check registered, or the list replaced, empties it).
    Bounded by :data:`MAX_CHECKED_SHAPES`."""

    __slots__ = ("checks", "count", "shapes")

    def __init__(self) -> None:
        self.checks: list[PlanCheck] | None = None
        self.count = 0
        self.shapes: set[tuple[Any, ...]] = set()

    def current(self, checks: list[PlanCheck]) -> set[tuple[Any, ...]]:
        """The shapes remembered for ``checks`` (emptied first if they were for others)."""
        if self.checks is not checks or self.count != len(checks):
            self.checks, self.count = checks, len(checks)
            self.shapes.clear()
        return self.shapes


_CHECKED = _CheckedShapes()
_SHAPE_GETTERS: dict[type, Callable[[Any], Any]] = {}


def _shape_getter(cls: type) -> Callable[[Any], Any]:
    """Reads the fields of an attrs node of class ``cls`` that are not values bound into
    the statement (``metadata["bound"]``: a query's text or vector) nor a fusion's
    branches (nor a plan's filter, whose shape :func:`_shape_key` adds), as a tuple."""
    getter = _SHAPE_GETTERS.get(cls)
    if getter is None:
        names = [
            field.name
            for field in attrs.fields(cls)
            if field.init
            and field.name not in ("branches", "source")
            and not (cls is SearchPlan and field.name == "filter")  # its shape is added
            and not field.metadata.get("bound")
            and not field.metadata.get("bound_each")
        ]
        if len(names) > 1:  # attrgetter of several names gives a tuple, in C
            getter = operator.attrgetter(*names)
        else:
            getter = lambda node: tuple(getattr(node, name) for name in names)  # noqa: E731
        _SHAPE_GETTERS[cls] = getter
    return getter


def _shape_key(plan: SearchPlan) -> tuple[Any, ...] | None:
    """:attr:`SearchPlan.shape_without_values` of a plan without a cursor or steps."""
    source = plan.source
    getters = _SHAPE_GETTERS
    if isinstance(source, Fusion):
        branches = tuple(
            [
                (type(branch), (getters.get(type(branch)) or _shape_getter(type(branch)))(branch))
                for branch in source.branches
            ]
        )
    else:
        branches = ()  # the source is the one branch
    key: tuple[Any, ...] = (
        type(source),
        (getters.get(type(source)) or _shape_getter(type(source)))(source),
        branches,
        (getters.get(SearchPlan) or _shape_getter(SearchPlan))(plan),
    )
    if plan.filter is not None:
        # the filter without its values, their types kept (1 == 1.0 == True in Python)
        shape = filter_shape(plan.filter)
        if shape is None:
            return None
        key += (shape,)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _run_plan_checks(plan: SearchPlan) -> None:
    """Run every check of :func:`plan_checks` on ``plan``, unless a plan of the same shape
    without values (:attr:`SearchPlan.shape_without_values`) passed them all already.

    No check reads a branch's query except the cursor's (its fingerprint hashes the query)
    and the steps' (a step checks the query it reads), and none reads a filter's values
    (only its columns), so a plan with a cursor or steps is always checked in full; any
    other plan passes exactly when a plan of its shape did, whatever its filter's values
    (a search under a filter it has not seen before checks nothing again). A
    plan that fails is never remembered, so an invalid plan is refused every time. Building
    a plan this way costs about a third less (the 29 checks ran in about 11 µs of the 27 µs
    of a single-branch plan, hot, where the key costs about 2 µs)."""
    checks = _PLAN_CHECKS
    key = plan.shape_without_values
    if key is None:
        for check in checks:
            check.check(plan)
        return
    shapes = _CHECKED.current(checks)
    if key in shapes:
        return
    for check in checks:
        check.check(plan)
    if len(shapes) >= MAX_CHECKED_SHAPES:
        shapes.clear()
    shapes.add(key)


def plan_checks() -> tuple[PlanCheck, ...]:
    """The rules every :class:`SearchPlan` is checked against, in the order they run (the
    first one a plan breaks refuses it)."""
    return tuple(_PLAN_CHECKS)


@_plan_check
def _check_single_branch_rows_from(plan: SearchPlan) -> None:
    """A single branch reads its rows from its own table: ``rows_from``, if given, names
    that table."""
    if plan.fusion is not None or plan.rows_from is None:
        return
    branch = plan.branches[0]
    if set(plan.rows_from.members) != set(branch.table.members):
        raise PlanError(
            "rows_from names where a fusion's final join reads its hits; a single "
            f"branch reads its rows from its own table ('{branch.table}')",
            field="rows_from",
            value=str(plan.rows_from),
        )


@_plan_check
def _check_single_branch_filter_through_key(plan: SearchPlan) -> None:
    """A single branch applies the filter to its own table, never through a key."""
    if plan.fusion is None and plan.branches[0].filter_through_key:
        raise PlanError(
            "filter_through_key filters a fused branch through the keys of the "
            "plan's rows_from tables; a single branch applies the filter to its own "
            "table",
            field="filter_through_key",
            value=True,
        )


@_plan_check
def _check_vectors_within_rows(plan: SearchPlan) -> None:
    """With ``include_vectors``, every nearest-neighbour branch of a fusion searches tables
    of ``rows_from``, whose rows hold the vectors returned."""
    if plan.fusion is None or not plan.include_vectors:
        return
    rows = set(plan.row_source.members)
    for name, branch in zip(plan.branch_names, plan.branches):
        if isinstance(branch, NearestNeighborSearch) and not set(branch.table.members) <= rows:
            raise PlanError(
                f"include_vectors reads each nearest branch's vectors from rows_from "
                f"('{plan.row_source}'); branch {name!r} searches '{branch.table}', "
                "outside it",
                field="include_vectors",
                value=name,
            )


@_plan_check
def _check_filter_through_side_table(plan: SearchPlan) -> None:
    """A fused branch filters through the key only when it searches a side table, outside
    ``rows_from``."""
    if plan.fusion is None:
        return
    rows = set(plan.row_source.members)
    for name, branch in zip(plan.branch_names, plan.branches):
        if branch.filter_through_key and rows & set(branch.table.members):
            raise PlanError(
                f"branch {name!r} filters through the key of '{plan.row_source}', which "
                f"it searches itself ('{branch.table}'): filter_through_key is for a side "
                "table the filter's columns are not in; drop it",
                field="filter_through_key",
                value=name,
            )


@_plan_check
def _check_page_scores_need_fusion(plan: SearchPlan) -> None:
    """``page_scores`` is for a fusion; a single branch returns every hit's raw score."""
    if plan.page_scores and plan.fusion is None:
        raise PlanError(
            "page_scores names fused branches whose distance every hit carries; a single "
            "branch returns every hit itself, with its raw score",
            field="page_scores",
            value=list(plan.page_scores),
        )


@_plan_check
def _check_page_scores_name_branches(plan: SearchPlan) -> None:
    """Each name in ``page_scores`` is a branch of the plan."""
    if not plan.page_scores:
        return
    known = plan.branch_names
    for name in plan.page_scores:
        if name not in known:
            listed = ", ".join(repr(branch) for branch in known)
            raise PlanError(
                f"page_scores names {name!r}, which is no branch of the plan; its "
                f"branches: {listed}",
                field="page_scores",
                value=name,
            )


@_plan_check
def _check_page_scores_nearest_only(plan: SearchPlan) -> None:
    """Each branch ``page_scores`` names is a nearest-neighbour branch: no SQL expression
    over a row gives a BM25 or semantic score for a row the branch did not return."""
    if not plan.page_scores:
        return
    by_name = dict(zip(plan.branch_names, plan.branches))
    for name in plan.page_scores:
        branch = by_name.get(name)
        if branch is not None and not isinstance(branch, NearestNeighborSearch):
            raise PlanError(
                f"page_scores names the {branch.kind} branch {name!r}; only a "
                "nearest-neighbour branch's score can be computed for a row it did not "
                "return (its distance, from the row's vector). A BM25 score needs the "
                "index's term statistics and a semantic distance the engine's embedding "
                "of the query, which no SQL expression over the row gives on every "
                "engine: such a branch reports the rows it did not return as not "
                "returned (rank and raw score NULL)",
                field="page_scores",
                value=name,
            )


@_plan_check
def _check_page_scores_within_rows(plan: SearchPlan) -> None:
    """Each branch ``page_scores`` names searches tables of ``rows_from``, whose rows hold
    its vectors."""
    if not plan.page_scores:
        return
    by_name = dict(zip(plan.branch_names, plan.branches))
    rows = set(plan.row_source.members)
    for name in plan.page_scores:
        branch = by_name.get(name)
        if branch is not None and not set(branch.table.members) <= rows:
            raise PlanError(
                f"page_scores computes branch {name!r}'s distance from the vectors of "
                f"rows_from ('{plan.row_source}'); the branch searches '{branch.table}', "
                "outside it, whose vectors the hits' rows do not hold",
                field="page_scores",
                value=name,
            )


@_plan_check
def _check_page_scores_returned(plan: SearchPlan) -> None:
    """The plan returns the value of each branch ``page_scores`` names: its
    ``result_name``, or its debug columns with ``include_branch_scores``."""
    if not plan.page_scores:
        return
    by_name = dict(zip(plan.branch_names, plan.branches))
    for name in plan.page_scores:
        branch = by_name.get(name)
        if branch is not None and branch.result_name is None and not plan.include_branch_scores:
            raise PlanError(
                f"page_scores computes branch {name!r}'s distance for every hit, but the "
                "plan returns none of that branch's values: give the branch a "
                "result_name, or set include_branch_scores",
                field="page_scores",
                value=name,
            )


@_plan_check
def _check_explained_scores_read_branch_scores(plan: SearchPlan) -> None:
    """A fusion that explains its scores returns each branch's rank and raw score:
    ``include_branch_scores`` is not turned off beside ``explain_scores``."""
    if plan.fusion is not None and plan.explain_scores and not plan.include_branch_scores:
        raise PlanError(
            "explain_scores reads each branch's rank and raw score; leave "
            "include_branch_scores at its default (true with explain_scores)",
            field="include_branch_scores",
            value=False,
        )


@_plan_check
def _check_formula_needs_fusion(plan: SearchPlan) -> None:
    """A score formula rescores a fusion's rows; a single branch has none."""
    if plan.formula is not None and plan.fusion is None:
        raise PlanError(
            "formula rescores a fusion's rows; a single branch is ordered by its own score or "
            "distance (fuse it with another branch)",
            field="formula",
            value="formula",
        )


@_plan_check
def _check_formula_columns_not_vectors(plan: SearchPlan) -> None:
    """A score formula reads numeric columns, never a searched vector column."""
    if plan.formula is None:
        return
    for column in plan.formula.columns:
        if column in plan.vector_columns:
            raise PlanError(
                f"formula column {column!r} is a searched vector column; a formula reads "
                "numeric columns",
                field="formula",
                value=column,
            )


@_plan_check
def _check_score_name_needs_fusion(plan: SearchPlan) -> None:
    """``score_name`` names a fusion's score; a single branch keeps the default."""
    if plan.fusion is None and plan.score_name != "score":
        raise PlanError(
            "score_name names a fusion's score; a single branch returns its raw score or "
            "distance, named by the branch's result_name",
            field="score_name",
            value=plan.score_name,
        )


@_plan_check
def _check_result_columns_unique(plan: SearchPlan) -> None:
    """Each result column (scores, distances, debug columns) has its own name."""
    results = plan.result_columns
    repeated = sorted({name for name in results if results.count(name) > 1})
    if repeated:
        raise PlanError(
            f"result column {repeated[0]!r} is named twice; give each score and distance "
            "its own name",
            field="result_name",
            value=repeated[0],
        )


@_plan_check
def _check_fusion_needs_key(plan: SearchPlan) -> None:
    """A fusion joins its branches on the table's unique key, so it needs ``key_column``."""
    if plan.fusion is not None and plan.key_column is None:
        raise PlanError(
            "a fusion joins its branches on the table's unique key; pass key_column (the "
            "table has none: search one branch at a time)",
            field="key_column",
            value=None,
        )


@_plan_check
def _check_page_within_depth(plan: SearchPlan) -> None:
    """A fused page ends within the depth: ``limit + offset <= depth``."""
    fusion = plan.fusion
    page_end = plan.limit + plan.offset
    if fusion is not None and plan.group_by is not None:
        needed = page_end * plan.group_size
        if needed > INT64_MAX:
            _refuse_depth_past_64_bits(plan, needed)
        if plan.depth < needed:
            given = "depth" if fusion.depth is not None else "the default depth"
            raise PlanError(
                f"(limit + offset) * group_size = {needed} reaches past {given} "
                f"{plan.depth}: the groups are formed over depth candidates per branch, "
                f"which cannot fill {page_end} groups of {plan.group_size}. Pass depth >= "
                f"{needed} and keep it the same for every page, so pages stay slices of "
                "one ranking",
                field="depth",
                value=fusion.depth if fusion.depth is not None else plan.depth,
            )
    elif fusion is not None and plan.depth < page_end:
        if page_end > INT64_MAX:
            _refuse_depth_past_64_bits(plan, page_end)
        given = "depth" if fusion.depth is not None else "the default depth"
        raise PlanError(
            f"limit + offset = {page_end} reaches past {given} {plan.depth}: the fused "
            "ranking holds only depth candidates per branch. Pass depth >= "
            f"{page_end} and keep it the same for every page, so pages stay slices of one "
            "ranking",
            field="depth",
            value=fusion.depth if fusion.depth is not None else plan.depth,
        )


@_plan_check
def _check_depth_fits_64_bits(plan: SearchPlan) -> None:
    """The candidates per branch fit in a signed 64-bit integer."""
    if plan.depth > INT64_MAX:
        _refuse_depth_past_64_bits(plan, plan.depth)


def _refuse_depth_past_64_bits(plan: SearchPlan, needed: int) -> NoReturn:
    """Refuse a page that needs ``needed`` candidates per branch, past a signed 64-bit
    integer: no depth could hold it, so the error names ``limit``, not ``depth``."""
    raise PlanError(
        f"limit {plan.limit} and offset {plan.offset} need {needed} candidates per branch, "
        f"which does not fit in 64 bits (at most {INT64_MAX}); lower the limit or the offset",
        field="limit",
        value=plan.limit,
    )


@_plan_check
def _check_key_column_not_computed(plan: SearchPlan) -> None:
    """The key column is no column the search computes itself."""
    key = plan.key_column
    if key is not None and (key in INTERNAL_COLUMNS or key in plan.result_columns):
        raise PlanError(
            f"key column {key!r} collides with a column the search computes; "
            "use the table's unique key",
            field="key_column",
            value=key,
        )


@_plan_check
def _check_projection_not_result(plan: SearchPlan) -> None:
    """No projected column is named as a result column, which would shadow it."""
    reserved = set(plan.result_columns)
    for column in plan.projection:
        if column in reserved:
            raise PlanError(
                f"column {column!r} collides with the result column of the same name; "
                "it would be shadowed, so it cannot be projected",
                field="columns",
                value=column,
            )


@_plan_check
def _check_projection_not_vectors(plan: SearchPlan) -> None:
    """Without ``include_vectors``, no projected column is a searched vector column."""
    if plan.include_vectors:
        return
    vector_columns = plan.vector_columns
    for column in plan.projection:
        if column in vector_columns:
            raise PlanError(
                f"column {column!r} is the searched vector column and is never projected "
                "(it forfeits the vector-index fast path and floods the output)",
                field="columns",
                value=column,
            )


@_plan_check
def _check_filter_not_on_vectors(plan: SearchPlan) -> None:
    """The filter reads no searched vector column."""
    if plan.filter is None:
        return
    for column in sorted(predicate_columns(plan.filter) & plan.vector_columns):
        raise PlanError(
            f"filter column {column!r} is a searched vector column",
            field="filter",
            value=column,
        )


@_plan_check
def _check_tie_breakers_not_vectors(plan: SearchPlan) -> None:
    """No tie-breaker is a searched vector column."""
    if not plan.tie_breakers:
        return
    vector_columns = plan.vector_columns
    for breaker in plan.tie_breakers:
        if breaker.column in vector_columns:
            raise PlanError(
                f"tie-break column {breaker.column!r} is a searched vector column",
                field="tie_breakers",
                value=breaker.column,
            )


@_plan_check
def _check_tie_breakers_not_key(plan: SearchPlan) -> None:
    """No tie-breaker is the key column, which breaks the last ties already."""
    for breaker in plan.tie_breakers:
        if breaker.column == plan.key_column:
            raise PlanError(
                f"tie-break column {breaker.column!r} is the key column, which breaks the "
                "last ties already",
                field="tie_breakers",
                value=breaker.column,
            )


@_plan_check
def _check_tie_breakers_computed(plan: SearchPlan) -> None:
    """A fusion's tie-breaker is a branch's debug column only when the plan computes it
    (``include_branch_scores``, or the branch's ``result_name``)."""
    if plan.fusion is None or plan.include_branch_scores:
        return
    debug = {
        column
        for name, branch in zip(plan.branch_names, plan.branches)
        for column in debug_columns(name, branch)
    }
    uncomputed = debug - {branch.result_name for branch in plan.branches if branch.result_name}
    for breaker in plan.tie_breakers:
        if breaker.column in uncomputed:
            raise PlanError(
                f"tie-break column {breaker.column!r} is a branch's debug column, computed "
                "only with include_branch_scores; set it, or give the branch a result_name "
                "and break ties by that",
                field="tie_breakers",
                value=breaker.column,
            )


@_plan_check
def _check_tie_breakers_not_ranking(plan: SearchPlan) -> None:
    """No tie-breaker is the ranking itself."""
    if not plan.tie_breakers:
        return
    ranking = plan.ranking_column if plan.fusion is None else plan.score_name
    for breaker in plan.tie_breakers:
        if breaker.column == ranking:
            raise PlanError(
                f"tie-break column {breaker.column!r} is the ranking itself",
                field="tie_breakers",
                value=breaker.column,
            )


@_plan_check
def _check_groups(plan: SearchPlan) -> None:
    """``group_size`` comes with ``group_by``; a grouped plan has a key, groups by a table
    column (no searched vector column, no result column), projects none of the columns its
    statement computes, and runs no steps."""
    group = plan.group_by
    if group is None:
        if plan.group_size != 1:
            raise PlanError(
                "group_size is the rows kept per group; pass group_by too",
                field="group_size",
                value=plan.group_size,
            )
        return
    if plan.key_column is None:
        raise PlanError(
            "a grouped plan ranks rows tied on the score by the table's unique key; pass "
            "key_column",
            field="key_column",
            value=None,
        )
    if group in plan.vector_columns:
        raise PlanError(
            f"group_by column {group!r} is a searched vector column",
            field="group_by",
            value=group,
        )
    if group in plan.result_columns or group in INTERNAL_COLUMNS:
        raise PlanError(
            f"group_by column {group!r} is a column the search computes; group by a table column",
            field="group_by",
            value=group,
        )
    for name in (*plan.projection, plan.key_column):
        if name in GROUP_COLUMNS:
            raise PlanError(
                f"column {name!r} is a column a grouped statement computes; it cannot be "
                "read by a grouped plan",
                field="columns",
                value=name,
            )
    if plan.steps:
        raise PlanError(
            "steps run on a statement's rows, a grouped statement's rows are groups; group "
            "the rows or run steps, not both",
            field="group_by",
            value=group,
        )


@_plan_check
def _check_facets(plan: SearchPlan) -> None:
    """A faceted plan counts table columns (no searched vector column, no result column),
    projects none of the columns its statement computes, and is neither grouped nor
    continued by a cursor nor followed by steps (their rows are not the ranking's)."""
    if not plan.facets:
        return
    for facet in plan.facets:
        if facet in plan.vector_columns:
            raise PlanError(
                f"facets column {facet!r} is a searched vector column",
                field="facets",
                value=facet,
            )
        if facet in plan.result_columns or facet in INTERNAL_COLUMNS:
            raise PlanError(
                f"facets column {facet!r} is a column the search computes; count a table column",
                field="facets",
                value=facet,
            )
    for name in (*plan.projection, *plan.facets, plan.key_column):
        if name is not None and (name == FACET_COLUMNS[0] or name.startswith(FACET_COLUMNS[1:])):
            raise PlanError(
                f"column {name!r} is a column a faceted statement computes; it cannot be "
                "read by a faceted plan",
                field="columns",
                value=name,
            )
    other = (
        ("group_by", plan.group_by, "a grouped plan")
        if plan.group_by is not None
        else ("after", plan.after, "a cursor page")
        if plan.after is not None
        else ("steps", plan.steps[0].kind, "a plan with steps")
        if plan.steps
        else None
    )
    if other is not None:
        field, value, what = other
        advice = (
            "the first page's result holds the counts (the candidates are the same on every "
            "page): ask for the next page without facets"
            if field == "after"
            else "pass facets on a plan without it"
        )
        raise PlanError(
            f"facets count the rows of a plain ranking; {what} cannot count them, {advice}",
            field=field,
            value=value,
        )


@_plan_check
def _check_cursor(plan: SearchPlan) -> None:
    """A cursor (``after``) continues the ranking of the plan that returned it: the plan
    has a key, no ``offset``, no tie-breakers, no groups and no steps, and ranks as that
    plan did."""
    cursor = plan.cursor
    if cursor is None:
        return
    if plan.key_column is None:
        raise PlanError("a cursor continues after a row's key; pass key_column", field="key_column")
    if plan.offset:
        raise PlanError(
            "a cursor continues past the last row of a page, where offset would skip rows",
            field="offset",
            value=plan.offset,
            mentions=("offset", "after"),
            advice="pass after or offset, not both",
        )
    unpaged: tuple[str, Any, str] | None = None
    if plan.tie_breakers:
        unpaged = (
            "tie_breakers",
            plan.tie_breakers[0].column,
            "a cursor continues a ranking ordered by its score and key, not by tie-breakers",
        )
    elif plan.group_by is not None:
        unpaged = "group_by", plan.group_by, "a cursor cannot continue a grouped ranking"
    elif plan.steps:
        unpaged = (
            "after",
            plan.after,
            f"a cursor cannot continue a ranking reordered or marked by steps "
            f"({', '.join(step.kind for step in plan.steps)})",
        )
    if unpaged is not None:
        field, value, reason = unpaged
        raise PlanError(
            reason, field=field, value=value, mentions=("offset",), advice=CURSORLESS_ADVICE
        )
    if cursor.fingerprint != ranking_fingerprint(plan):
        raise PlanError(
            "the cursor was returned by another search: its query, filter, fusion or key "
            "changed since, so it would not continue the same ranking; start again without "
            "after",
            field="after",
            value=plan.after,
        )


CURSORLESS_ADVICE = "page it with offset"
"""What a caller of the library does with a ranking no cursor continues (tie-breakers,
groups, steps): it pages with ``offset`` (a door without ``offset`` gives its own advice,
:meth:`~hotdata_retrieval.errors.PlanError.worded_for`)."""


@_plan_check
def _check_steps(plan: SearchPlan) -> None:
    """The steps can run: each step's own rule holds, each leaves the rows the next step or
    the page needs, and they read at most ``MAX_STEP_CANDIDATES`` candidates, within a
    fusion's depth (:func:`~hotdata_retrieval.plan.steps.check_steps`)."""
    check_steps(plan)
