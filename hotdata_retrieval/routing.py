"""Choose a search plan from a table's indexes: text, semantic, nearest or hybrid.

One router serves every engine: :func:`plan_search` reads a :class:`TableIndexes` and a
:class:`SearchRequest` and builds the :class:`~hotdata_retrieval.plan.search.SearchPlan`; an
engine's own ``plan_search(request)`` (or ``plan_search(table, query, **options)``, the keyword
form: :func:`search_request`) reads the table's indexes and calls it with the engine's
:class:`RoutingPolicy`.

A vector index with a ``source_column`` is *provider-backed*: the engine embeds query text
itself (``vector_search``). One without is *plain*: the caller embeds the query
(``embed_query``) and the plan searches the vector column directly. The rules:

- ``text``: BM25 over ``text_column`` (default: the first BM25 column).
- ``semantic``: ``vector_search`` over a provider-backed index; a caller-embedded
  nearest-neighbour search over a plain one. Provider-backed is preferred; ``vector_column`` or
  ``text_column`` (the index's source column) pick one.
- ``nearest``: a caller-embedded nearest-neighbour search on a vector column of either kind.
- ``hybrid``: BM25 fused by reciprocal rank fusion with a caller-embedded nearest-neighbour
  search of a vector column the policy lets share a plan with BM25: the one named by
  ``vector_column``, else the one made from the searched text column, else the only one. With
  several and no way to tell, the router refuses rather than guess.
- ``auto``: hybrid when the table has a BM25 index, a vector column hybrid can use and
  ``embed_query``; else text when it has a BM25 index; else semantic.
- the request's ``fusion`` (:class:`FusionChoice`) names hybrid's fusion method (``rrf``, the
  default, ``min_max`` or ``dbsf``: ``docs/fusion.md``) and its options (``weights``,
  ``rank_constant``, ``alpha``, ``depth``, ``min_score``), each refused by a method that does
  not take it. Given to a search that is not hybrid (``auto`` included, once it has chosen), a
  fusion is refused rather than ignored.

The one rule that differs between engines is the :class:`RoutingPolicy`: on the local engine
every vector column is provider-backed (engine-embedded at load time) and an ordinary column of
its table, so hybrid fuses BM25 with a caller-embedded search of that same column
(:data:`LOCAL_ROUTING`); on the Hotdata engine a provider-backed index cannot share its table
with a BM25 index (engine contract §1.2), so hybrid needs a plain index
(:data:`HOTDATA_ROUTING`).
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, cast

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.indexes import TableIndexes as TableIndexes
from hotdata_retrieval.indexes import VectorIndex as VectorIndex
from hotdata_retrieval.plan._cursor import read_cursor
from hotdata_retrieval.plan.filter_objects import filter_from_object
from hotdata_retrieval.plan.filters import Predicate, is_predicate
from hotdata_retrieval.plan.formula import ScoreFormula, formula_from_document
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    DEFAULT_FUSION_METHOD,
    Bm25Search,
    Branch,
    DistanceMetric,
    Fusion,
    NearestNeighborSearch,
    QuerySyntax,
    SearchPlan,
    VectorSearch,
    fusion_class,
    fusion_methods,
    fusion_options,
    make_fusion,
    read_facets,
)
from hotdata_retrieval.plan.steps import Highlight, PlanStep, Rerank, steps_from_options
from hotdata_retrieval.plan.values import (
    check_column_names,
    check_cosine_query,
    check_positive_int,
)

logger = logging.getLogger(__name__)


class SearchMode(str, enum.Enum):
    """How ``plan_search`` searches."""

    AUTO = "auto"
    TEXT = "text"
    SEMANTIC = "semantic"
    NEAREST = "nearest"
    HYBRID = "hybrid"


@attrs.frozen(kw_only=True)
class RoutingPolicy:
    """What an engine lets a plan combine, and how it speaks of its indexes.

    Attributes:
        fuse_provider_indexes: whether ``hybrid`` may fuse BM25 with a caller-embedded
            nearest-neighbour search of a provider-backed vector column. ``True`` on the local
            engine, whose embedded columns sit beside the BM25 index in the same table;
            ``False`` on the Hotdata engine, where a provider-backed index cannot share its
            table with a BM25 index (engine contract §1.2), so hybrid needs a plain index.
        pending_indexes: whether indexes build in the background and may not be ready yet
            (the Hotdata engine's ``status: pending``); messages then speak of *ready* indexes.
    """

    fuse_provider_indexes: bool = True
    pending_indexes: bool = False


LOCAL_ROUTING = RoutingPolicy(fuse_provider_indexes=True, pending_indexes=False)
"""The local engine's policy, and :func:`plan_search`'s default."""

HOTDATA_ROUTING = RoutingPolicy(fuse_provider_indexes=False, pending_indexes=True)
"""The Hotdata engine's policy: hybrid fuses BM25 with a plain vector index only."""


@attrs.frozen
class _Router:
    indexes: TableIndexes
    policy: RoutingPolicy
    query: str
    embed_query: Callable[[str], Sequence[float]] | None

    @property
    def ready(self) -> str:
        return "ready " if self.policy.pending_indexes else ""

    def fusable(self, vector: VectorIndex) -> bool:
        return self.policy.fuse_provider_indexes or not vector.provider_backed

    @property
    def fused_kind(self) -> str:
        return "vector" if self.policy.fuse_provider_indexes else "plain vector"

    def text_column(self, text_column: str | None) -> str:
        indexes = self.indexes
        if text_column is not None:
            if text_column not in indexes.bm25_columns:
                raise PlanError(
                    f"column '{text_column}' of '{indexes.table}' has no {self.ready}BM25 index; "
                    f"{'ready' if self.ready else 'indexed'}: "
                    f"{', '.join(indexes.bm25_columns) or 'none'}",
                    field="text_column",
                    value=text_column,
                )
            return text_column
        if not indexes.bm25_columns:
            raise PlanError(
                f"table '{indexes.table}' has no {self.ready}BM25 index", field="mode", value="text"
            )
        return indexes.bm25_columns[0]

    def named_vector(self, vector_column: str) -> VectorIndex:
        for vector in self.indexes.vectors:
            if vector.column == vector_column:
                return vector
        raise PlanError(
            f"column '{vector_column}' of '{self.indexes.table}' has no {self.ready}vector index",
            field="vector_column",
            value=vector_column,
        )

    def searched_vector(
        self, mode: SearchMode, vector_column: str | None, text_column: str | None
    ) -> VectorIndex:
        """The vector index a ``semantic`` or ``nearest`` search uses."""
        indexes = self.indexes
        if vector_column is not None:
            return self.named_vector(vector_column)
        if text_column is not None:
            for vector in indexes.vectors:
                if vector.source_column == text_column:
                    return vector
            # A plain index records no text column, so it may still be the one over it.
            if all(vector.provider_backed for vector in indexes.vectors):
                raise PlanError(
                    f"table '{indexes.table}' has no {self.ready}vector index over "
                    f"'{text_column}'; vector indexes: "
                    f"{', '.join(v.column for v in indexes.vectors) or 'none'}",
                    field="text_column",
                    value=text_column,
                )
        for vector in indexes.vectors:
            if vector.provider_backed:
                return vector
        if indexes.vectors:
            return indexes.vectors[0]
        raise PlanError(
            f"table '{indexes.table}' has no {self.ready}vector index",
            field="mode",
            value=mode.value,
        )

    def fused_vector(self, vector_column: str | None, text_column: str) -> VectorIndex:
        """The vector index ``hybrid`` fuses with BM25 over ``text_column``."""
        indexes = self.indexes
        if vector_column is not None:
            vector = self.named_vector(vector_column)
            if not self.fusable(vector):
                raise PlanError(
                    f"column '{vector_column}' of '{indexes.table}' has a provider-backed "
                    "vector index, which cannot be fused: it cannot share its table with a "
                    f"BM25 index; hybrid needs a {self.ready}plain vector index",
                    field="vector_column",
                    value=vector_column,
                )
            return vector
        candidates = [vector for vector in indexes.vectors if self.fusable(vector)]
        for vector in candidates:
            if vector.source_column == text_column:
                return vector
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            provider = [v.column for v in indexes.vectors if v.provider_backed]
            extra = (
                f" (its engine-embedded index on '{provider[0]}' cannot be fused: a "
                "provider-backed index cannot share its table with a BM25 index)"
                if provider
                else ""
            )
            raise PlanError(
                f"table '{indexes.table}' has no {self.ready}{self.fused_kind} index{extra}",
                field="mode",
                value="hybrid",
            )
        raise PlanError(
            f"table '{indexes.table}' has {len(candidates)} {self.fused_kind} indexes "
            f"({', '.join(v.column for v in candidates)}) and none is recorded as made from "
            f"'{text_column}'; name the one to fuse with vector_column=",
            field="vector_column",
            value=None,
        )

    def nearest(
        self, vector: VectorIndex, mode: SearchMode, text: str | None = None
    ) -> NearestNeighborSearch:
        if self.embed_query is None:
            kind = "engine-embedded" if vector.provider_backed else "plain"
            raise PlanError(
                f"{mode.value} search over the {kind} vector column '{vector.column}' of "
                f"'{self.indexes.table}' embeds the query on this side and needs an embedder "
                "made with the model that wrote the column (embed_query=, or the engine's "
                "embedder)",
                field="embedder",
                value=None,
            )
        return NearestNeighborSearch(
            table=self.indexes.table,
            column=vector.column,
            query_vector=self.embed_query(self.query if text is None else text),
            metric=vector.metric,
        )

    def fused_nearest(
        self, vector: VectorIndex, text: str | None = None
    ) -> NearestNeighborSearch | None:
        """The nearest branch of a hybrid search, or ``None`` when the query embeds to a zero
        vector under cosine distance (an embedder's usual answer when it fails): cosine
        distance to it is undefined and every row would tie, so the hybrid search is
        answered by its text branch alone, in BM25 order with BM25 scores, and a warning is
        logged. A nearest-only search with such a vector is refused
        (:func:`~hotdata_retrieval.plan.values.check_cosine_query`), and so is a fusion
        built by hand with one."""
        if self.embed_query is not None and vector.metric == DistanceMetric.COSINE:
            embedded = self.embed_query(self.query if text is None else text)
            query_vector = tuple(float(component) for component in embedded)
            try:
                check_cosine_query(query_vector)
            except PlanError:
                logger.warning(
                    "hybrid search over '%s' answered by its text branch alone: the query %r "
                    "embedded to a zero vector (an embedder's usual answer when it fails), and "
                    "cosine distance to it is undefined; check the embedder",
                    self.indexes.table,
                    self.query if text is None else text,
                )
                return None
            return NearestNeighborSearch(
                table=self.indexes.table,
                column=vector.column,
                query_vector=query_vector,
                metric=vector.metric,
            )
        return self.nearest(vector, SearchMode.HYBRID, text)

    def auto(self, vector_column: str | None, text_column: str | None) -> SearchMode:
        indexes = self.indexes
        fusable = indexes.key_column is not None  # a fusion joins its branches on the key
        if fusable and indexes.bm25_columns and indexes.vectors and self.embed_query is not None:
            if vector_column is not None:
                return SearchMode.HYBRID
            try:
                self.fused_vector(None, self.text_column(text_column))
            except PlanError:
                pass  # no vector column to fuse, or several and no way to tell: not hybrid
            else:
                return SearchMode.HYBRID
        if indexes.bm25_columns:
            return SearchMode.TEXT
        if indexes.vectors:
            return SearchMode.SEMANTIC
        raise PlanError(
            f"table '{indexes.table}' has no {self.ready}BM25 or vector index",
            field="mode",
            value="auto",
        )


def _identifier(value: str | None, label: str) -> str | None:
    return None if value is None else normalize_identifier(value, label=label)


def read_filter(value: Any) -> Predicate | None:
    """A filter as a caller may give one, as a predicate: a predicate, a filter object
    (``{"status": "open"}``: :func:`~hotdata_retrieval.plan.filter_objects.filter_from_object`),
    filter text (``"status = 'open'"``: :func:`~hotdata_retrieval.compile.parse_filter`), or
    ``None``.

    Raises:
        PlanError: a value of none of these kinds, or one that does not read (naming it).
    """
    if value is None or is_predicate(value):
        return cast("Predicate | None", value)
    if isinstance(value, Mapping):
        return filter_from_object(value)
    if isinstance(value, str):
        from hotdata_retrieval.compile.filter_text import parse_filter

        return parse_filter(value)
    raise PlanError(
        f"filter must be a predicate, a filter object or filter text, got {value!r}",
        field="filter",
        value=value,
    )


def _mode(value: Any) -> SearchMode:
    try:
        return SearchMode(value)
    except ValueError:
        known = ", ".join(member.value for member in SearchMode)
        raise PlanError(
            f"unknown mode {value!r}; expected one of {known}", field="mode", value=value
        ) from None


def _text_column(value: Any) -> str | None:
    return _identifier(value, "text_column")


def _vector_column(value: Any) -> str | None:
    return _identifier(value, "vector_column")


def _key_column(value: Any) -> str | None:
    return _identifier(value, "key_column")


def _request_query(value: Any) -> str:
    if not isinstance(value, str):
        raise PlanError(f"query must be text, got {value!r}", field="query", value=value)
    return value


MAX_QUERIES = 16
"""The most query texts one search fuses (``query`` and ``queries`` together): each adds a
branch per searched index (two for a hybrid search) to the one statement."""


def _queries(value: Any) -> tuple[tuple[str, float], ...]:
    """``queries`` as ``(text, weight)`` pairs: each item a text (weight 1) or a ``(text,
    weight)`` pair, the weight a finite number >= 0."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise PlanError(
            f"queries must be a list of query texts or (text, weight) pairs, got {value!r}",
            field="queries",
            value=value,
        )
    if len(value) > MAX_QUERIES - 1:
        raise PlanError(
            f"queries holds {len(value)} texts; a search fuses at most {MAX_QUERIES} query "
            f"texts, the query and {MAX_QUERIES - 1} more",
            field="queries",
            value=len(value),
        )
    pairs: list[tuple[str, float]] = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            pairs.append((item, 1.0))
            continue
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise PlanError(
                f"queries[{index}] must be a query text or a (text, weight) pair, got {item!r}",
                field="queries",
                value=item,
            )
        text, weight = item
        if not isinstance(text, str):
            raise PlanError(
                f"queries[{index}] holds no text: {text!r}", field="queries", value=text
            )
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise PlanError(
                f"queries[{index}] has weight {weight!r}; a query's weight is a finite number >= 0",
                field="queries",
                value=weight,
            )
        pairs.append((text, float(weight)))
    return tuple(pairs)


def _request_formula(value: Any) -> ScoreFormula | None:
    """A formula as given, or read from its JSON form (a list of terms)."""
    if value is None or isinstance(value, ScoreFormula):
        return value
    return formula_from_document(value)


def _query_syntax(value: Any) -> QuerySyntax:
    return QuerySyntax.parse(value)


def _request_limit(value: Any) -> int:
    return check_positive_int(value, label="limit")


def _request_offset(value: Any) -> int:
    return check_positive_int(value, label="offset", minimum=0)


def _group_by(value: Any) -> str | None:
    return _identifier(value, "group_by")


def _group_size(value: Any) -> int:
    return check_positive_int(value, label="group_size")


def _after(value: Any) -> str | None:
    if value is not None:
        read_cursor(value)
    return cast("str | None", value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise PlanError(
            f"include_branch_scores must be true or false, got {value!r}",
            field="include_branch_scores",
            value=value,
        )
    return value


def _explain_flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise PlanError(
            f"explain_scores must be true or false, got {value!r}",
            field="explain_scores",
            value=value,
        )
    return value


def _columns(value: Any) -> tuple[str, ...] | None:
    return check_column_names(value, label="columns")


def _method_name(value: Any) -> Any:
    if isinstance(value, str) and "-" in value and value.replace("-", "_") in fusion_methods():
        return value.replace("-", "_")
    return value


class FrozenOptions(Mapping[str, Any]):
    """A read-only, hashable mapping of fusion options (lists held as tuples)."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any]) -> None:
        self._items = {name: _frozen_value(value) for name, value in items.items()}

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._items.items(), key=lambda item: item[0])))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)


def _frozen_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_frozen_value(item) for item in value)
    return value


def _frozen_options(value: Any) -> FrozenOptions:
    if isinstance(value, FrozenOptions):
        return value
    if not isinstance(value, Mapping):
        raise PlanError(
            f"fusion options must be an object of option names and values, got {value!r}",
            field="fusion",
            value=value,
        )
    return FrozenOptions(value)


@attrs.frozen(kw_only=True)
class FusionChoice:
    """How a hybrid search fuses: a registered fusion method and its options.

    Attributes:
        method: the method's name (``rrf``, the default, ``min_max``, ``dbsf``, or any
            registered with :func:`~hotdata_retrieval.plan.search.register_fusion`).
        options: the method's options by name (``weights``, ``rank_constant``, ``alpha``,
            ``depth``, ``min_score``: each method takes its own, ``docs/fusion.md``).

    Raises:
        PlanError: an unknown method, or an option the method does not take (naming those it
            does). Values are checked when the plan is built.

    The choice is immutable and hashable, as the request that holds it: ``options`` is a
    read-only mapping, and array values (weights) are held as tuples. A method may be spelled
    with hyphens (``min-max``, as the command line spells it).

    >>> dict(FusionChoice(method="dbsf", options={"alpha": 0.4}).options)
    {'alpha': 0.4}
    >>> FusionChoice(method="min-max").method
    'min_max'
    """

    method: str = attrs.field(default=DEFAULT_FUSION_METHOD, converter=_method_name)
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_options)

    def __attrs_post_init__(self) -> None:
        names = [field.name for field in fusion_options(fusion_class(self.method))]
        for name, value in self.options.items():
            if name not in names:
                raise PlanError(
                    f"{name} does not apply to the {self.method!r} fusion; its options: "
                    f"{', '.join(names)}",
                    field=name,
                    value=value,
                    mentions=tuple(names),
                )

    @classmethod
    def of(cls, value: Any) -> FusionChoice | None:
        """``value`` as a choice: a :class:`FusionChoice`, a method's name, or an object
        ``{"method": ..., <option>: ...}`` (a plan document's ``fusion``; ``None`` values
        take their defaults).

        Raises:
            PlanError: anything else, or as the constructor.
        """
        if value is None or isinstance(value, FusionChoice):
            return value
        if isinstance(value, str):
            return cls(method=value)
        if isinstance(value, Mapping):
            options = {k: v for k, v in value.items() if k != "method" and v is not None}
            method = value.get("method")
            return cls(method=DEFAULT_FUSION_METHOD if method is None else method, options=options)
        raise PlanError(
            f"fusion must be a method name or an object of its options, got {value!r}",
            field="fusion",
            value=value,
        )


def _fusion_choice(value: Any) -> FusionChoice | None:
    return FusionChoice.of(value)


@attrs.frozen(kw_only=True)
class SearchRequest:
    """One search as a caller asks for it, before routing: what to look for, where, how many,
    with which filter and fusion. :func:`plan_search` (or an engine's ``plan_search``) turns
    it into a :class:`~hotdata_retrieval.plan.search.SearchPlan` from the table's indexes.

    Attributes:
        table: the table (1-3 part name, completed by the engine).
        query: the user's text.
        mode: ``auto`` (default), ``text``, ``semantic``, ``nearest`` or ``hybrid``.
        limit: top-k (default 10).
        offset: rows to skip (default 0).
        filter: applied inside every branch: a predicate, a filter object (``{"status":
            "open", "rating": {"$gte": 4}}``) or filter text (``"status = 'open'"``).
        columns: the columns to return (default: the key and the searched text column).
        text_column: the text column to search (for ``semantic`` and ``nearest``, the source
            column of the vector index to use).
        vector_column: the vector column to use.
        key_column: the table's unique key (default: what the engine knows of the table).
        include_branch_scores: return each branch's rank and raw score.
        explain_scores: a hybrid search's hits also say what their fused score is made of:
            per branch its normalized value and weighted contribution
            (:attr:`~hotdata_retrieval.plan.search.SearchPlan.explain_scores`; with the branch
            scores, which it implies). A single branch's score is its raw score already.
        queries: more query texts searched beside ``query`` and fused with it into one
            ranking, in one statement: each a text (weight 1) or a ``(text, weight)`` pair
            (a finite weight >= 0; ``query`` weighs 1); at most :data:`MAX_QUERIES` texts in
            all. Each text gets the branches the mode gives one query (a hybrid search: a
            BM25 and a nearest-neighbour branch), and a query's weight multiplies its
            branches' fusion weights. Several texts of a text, semantic or nearest search
            are fused too, by ``fusion`` (default RRF), whose ``weights`` the query weights
            then are.
        formula: a fused search's final score
            (:class:`~hotdata_retrieval.plan.formula.ScoreFormula`, or its JSON form, a list
            of terms): weights and decays over the fused score and numeric columns
            (:attr:`~hotdata_retrieval.plan.search.SearchPlan.formula`); a search that is not
            fused is refused.
        fusion: a hybrid search's fusion (:class:`FusionChoice`, a method's name, or
            ``{"method": ..., <option>: ...}``); refused for a search that is not hybrid.
        query_syntax: how a text branch reads the query (``"text"``, default, ``"terms"``:
            each word quoted, or ``"verbatim"``: as written, unchecked;
            :class:`~hotdata_retrieval.plan.search.Bm25Search`).
        allow_empty_query: a query with no word gives a text branch with no rows rather than
            an error (an agent's tool answers it so).
        group_by: a column grouping the rows (a chunk's parent document): the page then
            holds ``limit`` groups, each with its best ``group_size`` rows
            (:class:`~hotdata_retrieval.plan.search.SearchPlan`).
        group_size: rows kept per group (default 1; only with ``group_by``).
        diversity: maximal marginal relevance's lambda, 0 to 1, for a diversity step
            (:class:`~hotdata_retrieval.plan.steps.Diversity`: 1 ranks by similarity to the
            query alone, 0 by difference from the rows already chosen alone); ``None``: no
            diversity. Needs a nearest or hybrid search.
        candidates: rows the diversity step chooses among (default: 4 times ``limit +
            offset``, at most 1,000).
        after: a cursor token a result returned as ``next_after``: the page continues that
            result's ranking after its last row, without ``offset``.
        facets: table columns whose values are counted over the rows the ranking
            considered (:class:`~hotdata_retrieval.plan.search.SearchPlan`'s ``facets``),
            returned as the result's ``facets``.
        rerank: a reranker re-scoring the first ``top_n`` rows against ``query``
            (:class:`~hotdata_retrieval.plan.steps.Rerank`): a
            :class:`~hotdata_retrieval.embed.reranking.Reranker`, a registered reranker's
            name or an ONNX cross-encoder's directory; ``None``: none.
        top_n: rows the reranker scores (default: 4 times ``limit + offset``, at most
            1,000).
        highlight: ``True`` or a list of text columns: each hit carries the matched words'
            offsets and snippets (:class:`~hotdata_retrieval.plan.steps.Highlight`).
        fragment_size: characters per snippet (default 150, at most 2,000).
        fragments: snippets per hit and column (default 1, at most 20).

    Raises:
        PlanError: an unknown mode, a filter or fusion that does not read, a bad column name,
            a ``limit`` or ``offset`` that is no whole number in range (``True`` and ``"3"``
            are not), a query that is not text.
    """

    table: str | TableName
    query: str = attrs.field(converter=_request_query)
    mode: SearchMode = attrs.field(default=SearchMode.AUTO, converter=_mode)
    limit: int = attrs.field(default=10, converter=_request_limit)
    offset: int = attrs.field(default=0, converter=_request_offset)
    filter: Predicate | None = attrs.field(default=None, converter=read_filter)
    columns: tuple[str, ...] | None = attrs.field(default=None, converter=_columns)
    text_column: str | None = attrs.field(default=None, converter=_text_column)
    vector_column: str | None = attrs.field(default=None, converter=_vector_column)
    key_column: str | None = attrs.field(default=None, converter=_key_column)
    include_branch_scores: bool = attrs.field(default=False, converter=_flag)
    explain_scores: bool = attrs.field(default=False, converter=_explain_flag)
    queries: tuple[tuple[str, float], ...] = attrs.field(default=(), converter=_queries)
    formula: ScoreFormula | None = attrs.field(default=None, converter=_request_formula)
    fusion: FusionChoice | None = attrs.field(default=None, converter=_fusion_choice)
    query_syntax: QuerySyntax = attrs.field(default=QuerySyntax.TEXT, converter=_query_syntax)
    allow_empty_query: bool = attrs.field(default=False, converter=_flag)
    group_by: str | None = attrs.field(default=None, converter=_group_by)
    group_size: int = attrs.field(default=1, converter=_group_size)
    diversity: float | None = attrs.field(default=None)
    candidates: int | None = attrs.field(default=None)
    after: str | None = attrs.field(default=None, converter=_after)
    facets: tuple[str, ...] = attrs.field(default=(), converter=read_facets)
    rerank: Any = attrs.field(default=None)
    top_n: int | None = attrs.field(default=None)
    highlight: Any = attrs.field(default=None)
    fragment_size: int | None = attrs.field(default=None)
    fragments: int | None = attrs.field(default=None)

    def __attrs_post_init__(self) -> None:
        self.steps()  # refuses a bad value now, naming it

    def steps(self) -> tuple[PlanStep, ...]:
        """The plan steps the request asks for (:mod:`hotdata_retrieval.plan.steps`).

        Raises:
            PlanError: a diversity or candidate count out of range, candidates without the
                step that reads them.
        """
        return steps_from_options(
            diversity=self.diversity,
            candidates=self.candidates,
            rerank=self.rerank,
            top_n=self.top_n,
            query=self.query if self.rerank is not None or self.highlight else None,
            highlight=self.highlight,
            fragment_size=self.fragment_size,
            fragments=self.fragments,
            # every query's words are marked: a row found by another wording shows why
            highlight_query=" ".join([self.query, *(text for text, _ in self.queries)])
            if self.highlight and self.queries
            else None,
        )


_FUSION_KEYWORDS = ("weights", "rank_constant", "alpha", "depth", "min_score")
"""Fusion options a caller may give beside the request's other fields (``weights=...``), as
the keyword form of ``plan_search`` takes them."""


def search_request(
    request: SearchRequest | str | TableName, query: str | None = None, /, **options: Any
) -> SearchRequest:
    """``request`` itself, or a :class:`SearchRequest` of ``table``, ``query`` and keyword
    ``options`` (its fields; the fusion's options may be given beside them, ``fusion=`` naming
    the method): the keyword form every ``plan_search`` accepts.

    >>> search_request("docs", "crash", mode="hybrid", fusion="dbsf", alpha=0.4).fusion
    FusionChoice(method='dbsf', options={'alpha': 0.4})

    Raises:
        PlanError: a request given with more arguments, a missing query, or as
            :class:`SearchRequest`.
        TypeError: an option that is no field of a request.
    """
    if isinstance(request, SearchRequest):
        if query is not None or options:
            raise PlanError("a SearchRequest carries every option; pass it alone", field="request")
        return request
    if query is None:
        raise PlanError("a search needs a query", field="query")
    given = {name: options.pop(name) for name in _FUSION_KEYWORDS if name in options}
    given = {name: value for name, value in given.items() if value is not None}
    fusion = options.pop("fusion", None)
    if given:
        choice = FusionChoice.of(fusion) or FusionChoice()
        fusion = FusionChoice(method=choice.method, options={**choice.options, **given})
    return SearchRequest(table=request, query=query, fusion=fusion, **options)


def _text_branch(
    table: TableName, column: str, request: SearchRequest, text: str | None = None
) -> Bm25Search:
    return Bm25Search(
        table=table,
        column=column,
        query_text=request.query if text is None else text,
        query_syntax=request.query_syntax,
        allow_empty=request.allow_empty_query,
    )


def _query_weighted(
    choice: FusionChoice, mode: SearchMode, automatic: bool
) -> tuple[dict[str, Any], tuple[float, ...]]:
    """The fusion options of a search of several query texts, less the weights, and the
    weights each query's weight multiplies: for a hybrid search the fusion's own pair for
    its text and its vector branch (``weights``, or ``alpha``'s ``1 - alpha`` and ``alpha``;
    1 and 1 by default), for one kind of branch 1.

    Raises:
        PlanError: ``weights`` or ``alpha`` for a search of one kind of branch (the query
            weights are its weights), or a hybrid pair that is not two weights.
    """
    options = dict(choice.options)
    alpha = options.pop("alpha", None)
    given = options.pop("weights", None)
    if mode is not SearchMode.HYBRID:
        for name, value in (("weights", given), ("alpha", alpha)):
            if value is not None:
                raise PlanError(
                    f"{name} weighs the branches of a hybrid search; a {mode.value} search of "
                    "several queries weighs each query by its own weight in queries"
                    + (" (mode auto chose it from the table's indexes)" if automatic else ""),
                    field=name,
                    value=value,
                )
        return options, (1.0,)
    if given is not None:
        pair = tuple(float(weight) for weight in given)
        if len(pair) != 2:
            raise PlanError(
                "a hybrid search of several queries takes two weights, the text and the "
                f"vector branch's, given to every query's pair; got {len(pair)}",
                field="weights",
                value=given,
            )
        return options, pair
    if alpha is not None:
        return options, (1.0 - float(alpha), float(alpha))
    return options, (1.0, 1.0)


def _check_text_alone_takes(request: SearchRequest, branches: Sequence[Branch]) -> None:
    """Refuse the options a hybrid search answered by its text branch alone cannot honour.

    A query that embeds to a zero vector leaves a hybrid search its text branches
    (:meth:`_Router.fused_nearest`). Diversity compares candidates with the query vector; a
    score formula rescores a fusion, and the fusion's options (``weights``, ``min_score``,
    ``depth``...) say how branches are fused: with no nearest branch left, or one branch in
    all, none of them applies, and dropping one would change the answer asked for (a
    ``min_score`` on fused scores kept on BM25 scores, ``weights`` that mute the text branch
    answered by it alone).

    Raises:
        PlanError: naming the option and the zero query vector as the reason.
    """
    nearest = any(isinstance(branch, NearestNeighborSearch) for branch in branches)
    alone = len(branches) == 1
    fusion_options = request.fusion.options if request.fusion is not None and alone else {}
    lost: list[tuple[str, Any, str]] = [
        *(
            [("diversity", request.diversity, "compares the candidates with the query vector")]
            if request.diversity is not None and not nearest
            else []
        ),
        *(
            [("formula", request.formula, "rescores a fusion of branches")]
            if request.formula is not None and alone
            else []
        ),
        *(
            (name, value, "says how branches are fused, and one is left")
            for name, value in fusion_options.items()
        ),
    ]
    if not lost:
        return
    name, value, needs = lost[0]
    raise PlanError(
        f"{name} cannot apply: the query {request.query!r} embedded to a zero vector (an "
        "embedder's usual answer when it fails; cosine distance to it is undefined), so this "
        f"hybrid search is answered by its text branch alone, and {name} {needs}; check the "
        f"embedder, or search without {name}",
        field=name,
        value=value,
    )


def semantic_search_mode(embeds_here: bool) -> SearchMode:
    """The mode a door (``hdq search --mode semantic``, the tools' semantic search) plans a
    search by meaning with, so that every door builds the one plan for it and a cursor
    from one continues in another (its fingerprint is the plan's): ``nearest`` when the
    door embeds the query itself (``embeds_here``: it holds the embedder of the model that
    wrote the column, or was given the query's vector), ``semantic`` otherwise, which lets
    the engine embed where it can (a column it embedded)."""
    return SearchMode.NEAREST if embeds_here else SearchMode.SEMANTIC


def plan_branches(source: Branch | Fusion) -> tuple[Branch, ...]:
    """The branches of a plan's source: a fusion's, or the one branch."""
    return source.branches if isinstance(source, Fusion) else (source,)


def plan_search(
    indexes: TableIndexes,
    request: SearchRequest,
    *,
    embed_query: Callable[[str], Sequence[float]] | None = None,
    policy: RoutingPolicy = LOCAL_ROUTING,
) -> SearchPlan:
    """Build the plan that answers ``request`` on a table with ``indexes`` (rules: module
    doc).

    Args:
        indexes: the table's BM25 and vector indexes, as its engine reports them.
        request: the search (:class:`SearchRequest`); its ``table`` and ``key_column`` are
            the engine's business, the plan searches ``indexes.table`` by ``indexes``' key.
        embed_query: turns the query into a vector; needed by ``nearest``, ``hybrid`` and a
            ``semantic`` search over a plain index.
        policy: the engine's :class:`RoutingPolicy` (default :data:`LOCAL_ROUTING`).

    Raises:
        PlanError: no index for the mode (or, for hybrid, none the policy can fuse, or
            several and no way to tell which); a mode that needs ``embed_query`` without it;
            a fusion for a search that is not hybrid, or an option value its method refuses.
    """
    chosen = request.mode
    query = request.query
    text_column, vector_column = request.text_column, request.vector_column
    router = _Router(indexes, policy, query, embed_query)
    automatic = chosen is SearchMode.AUTO
    if automatic:
        chosen = router.auto(vector_column, text_column)
    fusion = request.fusion
    several = bool(request.queries)
    if fusion is not None and chosen is not SearchMode.HYBRID and not several:
        name, value = next(iter(fusion.options.items()), ("fusion", fusion.method))
        raise PlanError(
            f"{name} applies only to hybrid search, which fuses BM25 with nearest-neighbour "
            f"search, or to several queries; this search is {chosen.value}"
            + (" (chosen by mode auto from the table's indexes)" if automatic else ""),
            field=name,
            value=value,
        )
    texts = ((query, 1.0), *request.queries)
    branches: list[Branch] = []
    sides: list[tuple[float, int]] = []  # per branch: its query's weight, text 0 or vector 1
    if chosen is SearchMode.TEXT:
        column = router.text_column(text_column)
        branches = [_text_branch(indexes.table, column, request, text) for text, _ in texts]
    elif chosen is SearchMode.SEMANTIC:
        vector = router.searched_vector(chosen, vector_column, text_column)
        source_column = vector.source_column
        if source_column:
            branches = [
                VectorSearch(table=indexes.table, column=source_column, query_text=text)
                for text, _ in texts
            ]
        else:
            branches = [router.nearest(vector, chosen, text) for text, _ in texts]
    elif chosen is SearchMode.NEAREST:
        vector = router.searched_vector(chosen, vector_column, text_column)
        branches = [router.nearest(vector, chosen, text) for text, _ in texts]
    if chosen is not SearchMode.HYBRID:
        sides = [(weight, 0) for _, weight in texts]
    else:
        column = router.text_column(text_column)
        vector = router.fused_vector(vector_column, column)
        for text, weight in texts:
            branches.append(_text_branch(indexes.table, column, request, text))
            sides.append((weight, 0))
            nearest = router.fused_nearest(vector, text)
            if nearest is not None:
                branches.append(nearest)
                sides.append((weight, 1))
        _check_text_alone_takes(request, branches)
    source: Branch | Fusion
    choice = fusion or FusionChoice()
    if len(branches) == 1:
        source = branches[0]
    elif not several:
        source = make_fusion(choice.method, branches, **choice.options)
    else:
        options, pair = _query_weighted(choice, chosen, automatic)
        options["weights"] = [weight * pair[side] for weight, side in sides]
        source = make_fusion(choice.method, branches, **options)
    columns = request.columns
    default_columns = None
    if columns is None:
        searched = text_column or (
            indexes.bm25_columns[0]
            if indexes.bm25_columns
            else (indexes.vectors[0].source_column if indexes.vectors else None)
        )
        default_columns = tuple(
            dict.fromkeys(c for c in (indexes.key_column, searched) if c is not None)
        )
    steps = request.steps()
    if not any(isinstance(branch, (Bm25Search, VectorSearch)) for branch in plan_branches(source)):
        # a search by vector alone: a reranker pairs the query with the table's text column,
        # and highlight marks the query's words in it
        read = text_column or (indexes.bm25_columns[0] if indexes.bm25_columns else None)
        read = read or next((v.source_column for v in indexes.vectors if v.source_column), None)
        if read is not None:
            steps = tuple(
                attrs.evolve(step, column=read)
                if isinstance(step, Rerank) and step.column is None
                else attrs.evolve(step, columns=(read,))
                if isinstance(step, Highlight) and step.columns is None
                else step
                for step in steps
            )
    return SearchPlan(
        source=source,
        columns=columns if columns is not None else default_columns,
        limit=request.limit,
        offset=request.offset,
        filter=request.filter,
        key_column=indexes.key_column,
        include_branch_scores=request.include_branch_scores or request.explain_scores,
        explain_scores=request.explain_scores,
        formula=request.formula,
        group_by=request.group_by,
        group_size=request.group_size,
        after=request.after,
        facets=request.facets,
        steps=steps,
    )
