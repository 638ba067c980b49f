"""``hybrid_search``: the native fused search of ``docs/spec/hybrid_search.md``, for the local
engine.

The reference implementation of the spec. It shares no code with the compiled CTE form: it
parses its own arguments, runs the two branches itself — BM25 over every match of the tantivy
index, distances with the engine's distance kernels — applies the filter inside each branch
before ranking, ranks each branch by raw score then key, cuts each at the depth, and fuses the
two ranked key lists with the reference fusion (:func:`hotdata_retrieval.fusion.
reciprocal_rank_fusion`, or with ``'fusion'`` the min-max convex combination or
distribution-based score fusion of the same module).

Call form (DataFusion 55 table functions take no ``name => value`` arguments, so options are
name/value pairs after the six positional arguments)::

    hybrid_search('<catalog>.<schema>.<table>', '<text column>', '<vector column>',
                  '<query text>', ARRAY[...] | NULL, k
                  [, 'depth', n] [, 'fusion', 'rrf'|'min_max'|'dbsf'] [, 'rank_constant', c]
                  [, 'text_weight', w] [, 'vector_weight', w]
                  [, 'metric', 'cosine'|'l2'|'dot'] [, 'offset', m] [, 'key', '<key column>']
                  [, 'min_score', s] [, 'filter', '<filter text>'] [, 'debug', TRUE])
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import attrs
import numpy as np
import pyarrow as pa
from datafusion.catalog import Table
from sqlglot import exp

from hotdata_retrieval.compile import HOTDATA
from hotdata_retrieval.compile.compiler import COMPILED_FILTER, HYBRID_DEBUG_COLUMNS
from hotdata_retrieval.compile.filter_text import parse_filter
from hotdata_retrieval.engines.checks import is_vector_type
from hotdata_retrieval.engines.local._session import relation
from hotdata_retrieval.engines.local.distance import (
    COSINE_DISTANCE,
    DimensionMismatchError,
    float32_distances,
    float64_query,
)
from hotdata_retrieval.errors import HybridSearchError as HybridSearchError
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.fusion import (
    FusedHit,
    competition_ranks,
    distribution_based_score_fusion,
    min_max_fusion,
    reciprocal_rank_fusion,
)
from hotdata_retrieval.plan.filters import (
    Predicate,
    predicate_columns,
)
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    DEFAULT_RANK_CONSTANT,
    DistanceMetric,
)
from hotdata_retrieval.plan.values import (
    INT64_MAX,
    check_cosine_norm,
    check_cosine_query,
    check_query_vector,
)

if TYPE_CHECKING:
    from datafusion import Table

    from hotdata_retrieval.engines.local.tables import LoadedTable


class HybridHost(Protocol):
    """What ``hybrid_search`` needs of the engine that registers it (the local engine meets it):
    the default catalog and schema of two-part names, the embedder of text queries and the open
    tables. Kept as a protocol so this module does not import the engine."""

    catalog: str
    schema: str
    embedder: Any

    def _loaded(self, reference: str | TableName) -> LoadedTable:
        """The open table ``reference`` names (raises the engine's error when there is none)."""
        ...


HYBRID_SEARCH = "hybrid_search"
"""The table function's SQL name."""

SIGNATURE = (
    "hybrid_search('catalog.schema.table', 'text column', 'vector column', 'query text', "
    "ARRAY[...] or NULL, k [, 'option', value]...)"
)

OPTIONS = (
    "debug",
    "depth",
    "filter",
    "fusion",
    "key",
    "metric",
    "min_score",
    "offset",
    "rank_constant",
    "text_weight",
    "vector_weight",
)
"""Option names, in the order error messages list them."""

SCORE_COLUMN = "score"

FUSIONS = ("rrf", "min_max", "dbsf")
"""``'fusion'`` values: reciprocal rank fusion (the default), the min-max normalized convex
combination, distribution-based score fusion (``docs/fusion.md``)."""

METRIC_FUNCTIONS = HOTDATA.distance_functions
"""Each metric's distance function on the engine (engine contract §1.4), from the dialect."""


def _fail(message: str) -> NoReturn:
    raise HybridSearchError(f"{HYBRID_SEARCH}: {message}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        _fail(f"{what} must be a string literal, got {value!r}")
    return value


def _identifier(value: Any, what: str) -> str:
    text = _string(value, what)
    try:
        return normalize_identifier(text, label=what)
    except PlanError as error:
        _fail(str(error))


def _query_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        _fail(f"the query text must be a non-blank string literal, got {value!r}")
    if "\x00" in value:
        _fail("the query text must not contain a NUL byte")
    return str(value)


def _query_vector(value: Any) -> tuple[float, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(_is_number(x) for x in value):
        _fail(
            f"the query vector must be NULL or a non-empty ARRAY of finite numbers, got {value!r}"
        )
    try:
        return check_query_vector(value, label="the query vector")
    except PlanError as error:
        _fail(str(error))


def _positive_int(value: Any, what: str, *, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        adjective = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        _fail(f"{what} must be {adjective}, got {value!r}")
    return int(value)


def _weight(value: Any, what: str) -> float:
    if not _is_number(value) or not math.isfinite(value) or value < 0:
        _fail(f"{what} must be a finite number >= 0, got {value!r}")
    return float(value)


@attrs.frozen(kw_only=True)
class HybridSearchCall:
    """One call's arguments, checked.

    Attributes:
        table: the ``catalog.schema.table`` string, as written.
        text_column: the BM25-indexed text column.
        vector_column: the vector column; with no query vector, the source text column of a
            vector index (the engine embeds the query text).
        query_text: the text the BM25 branch (and an engine-side embedding) searches.
        query_vector: the caller's query vector, or ``None``.
        k: rows returned.
        depth: candidates per branch, or ``None`` for the default.
        offset: fused rows skipped before the ``k`` returned.
        fusion: ``rrf``, ``min_max`` or ``dbsf``.
        rank_constant: RRF's constant, > 0 (``rrf`` only).
        text_weight: the BM25 branch's weight, >= 0: the multiplier of its reciprocal rank
            term, or of its normalized score as given (the plan's convex weights for
            ``min_max`` are passed already divided by their sum).
        vector_weight: the vector branch's weight, >= 0, likewise.
        min_score: fused rows scoring below it are dropped before the page, or ``None``.
        metric: the distance metric, or ``None`` (cosine; the index's with no query vector).
        key: the unique key column.
        filter: the predicate every branch applies before ranking, or ``None``.
        debug: add each branch's rank and raw score.
    """

    table: str
    text_column: str
    vector_column: str
    query_text: str
    query_vector: tuple[float, ...] | None
    k: int
    depth: int | None = None
    offset: int = 0
    fusion: str = "rrf"
    rank_constant: float | int = DEFAULT_RANK_CONSTANT
    text_weight: float = 1.0
    vector_weight: float = 1.0
    min_score: float | None = None
    metric: DistanceMetric | None = None
    key: str = "id"
    filter: Predicate | None = None
    debug: bool = False

    @property
    def branch_depth(self) -> int:
        """Candidates each branch ranks: ``depth``, else :data:`DEFAULT_DEPTH` (200)."""
        return DEFAULT_DEPTH if self.depth is None else self.depth


def parse_call(
    values: Sequence[Any], *, compiled_filters: Mapping[str, Predicate] | None = None
) -> HybridSearchCall:
    """Check a call's literal argument values (SQL NULL is ``None``).

    Args:
        values: the call's argument values.
        compiled_filters: filter texts the library compiled, each with the predicate it was
            compiled from (:func:`compiled_filters`): such a ``filter`` is that predicate,
            never parsed; any other filter text (a call written by hand) is parsed.

    Raises:
        HybridSearchError: the message names the bad argument and what was expected.
    """
    if len(values) < 6:
        _fail(f"expected at least 6 arguments, got {len(values)}: {SIGNATURE}")
    table = _string(values[0], "the table")
    text_column = _identifier(values[1], "the text column")
    vector_column = _identifier(values[2], "the vector column")
    query_text = _query_text(values[3])
    query_vector = _query_vector(values[4])
    k = _positive_int(values[5], "k")
    rest = values[6:]
    if len(rest) % 2:
        _fail(f"option {rest[-1]!r} has no value; options are 'name', value pairs")
    options: dict[str, Any] = {}
    for name, value in zip(rest[0::2], rest[1::2]):
        if not isinstance(name, str) or name not in OPTIONS:
            _fail(f"unknown option {name!r}; options: {', '.join(OPTIONS)}")
        if name in options:
            _fail(f"option {name!r} is given twice")
        options[name] = value

    arguments: dict[str, Any] = {}
    if "offset" in options:
        arguments["offset"] = _positive_int(options["offset"], "offset", minimum=0)
    offset = arguments.get("offset", 0)
    if "depth" in options:
        arguments["depth"] = _positive_int(options["depth"], "depth")
    depth = arguments.get("depth", DEFAULT_DEPTH)
    if k + offset > INT64_MAX:
        _fail(
            f"k + offset = {k + offset} does not fit in 64 bits (at most {INT64_MAX}); lower "
            "k or the offset"
        )
    if depth < k + offset:
        given = "depth" if "depth" in options else "the default depth"
        _fail(
            f"k + offset = {k + offset} reaches past {given} {depth}: each branch ranks only "
            f"depth candidates; pass 'depth' >= {k + offset} and keep it for every page"
        )
    if "fusion" in options:
        method = options["fusion"]
        if method not in FUSIONS:
            _fail(f"fusion must be one of {', '.join(repr(f) for f in FUSIONS)}, got {method!r}")
        arguments["fusion"] = method
    if "rank_constant" in options and arguments.get("fusion", "rrf") != "rrf":
        _fail(f"rank_constant applies to 'rrf' only, not to fusion {arguments['fusion']!r}")
    if "min_score" in options:
        minimum = options["min_score"]
        if not _is_number(minimum) or not math.isfinite(minimum):
            _fail(f"min_score must be a finite number, got {minimum!r}")
        arguments["min_score"] = float(minimum)
    if "rank_constant" in options:
        constant = options["rank_constant"]
        if not _is_number(constant) or not math.isfinite(constant) or constant <= 0:
            _fail(f"rank_constant must be a finite number > 0, got {constant!r}")
        arguments["rank_constant"] = constant
    for name in ("text_weight", "vector_weight"):
        if name in options:
            arguments[name] = _weight(options[name], name)
    if arguments.get("text_weight", 1.0) == 0 and arguments.get("vector_weight", 1.0) == 0:
        _fail("text_weight and vector_weight are both 0; at least one must be > 0")
    if "metric" in options:
        try:
            arguments["metric"] = DistanceMetric.parse(_string(options["metric"], "metric"))
        except PlanError as error:
            _fail(str(error))
    if "key" in options:
        arguments["key"] = _identifier(options["key"], "key")
    if "filter" in options:
        written = _string(options["filter"], "filter")
        compiled = (compiled_filters or {}).get(written)
        try:
            arguments["filter"] = compiled if compiled is not None else parse_filter(written)
        except PlanError as error:
            _fail(f"filter: {error}")
    if "debug" in options:
        if not isinstance(options["debug"], bool):
            _fail(f"debug must be TRUE or FALSE, got {options['debug']!r}")
        arguments["debug"] = options["debug"]
    metric = arguments.get("metric") or DistanceMetric.COSINE
    if query_vector is not None and metric is DistanceMetric.COSINE:
        try:
            check_cosine_query(query_vector, label="the query vector")
            check_cosine_norm(query_vector, label="the query vector")
        except PlanError as error:
            _fail(str(error))
    return HybridSearchCall(
        table=table,
        text_column=text_column,
        vector_column=vector_column,
        query_text=query_text,
        query_vector=query_vector,
        k=k,
        **arguments,
    )


@attrs.frozen
class _Ranked:
    """One branch's ranked candidates: rowids, raw scores and keys, best first."""

    rowids: list[int]
    raw: list[float]
    keys: list[Any]
    ranks: list[int]


def _rank(
    rowids: np.ndarray,
    raw: np.ndarray,
    keys: pa.ChunkedArray,
    *,
    higher_is_better: bool,
    depth: int,
    key: str,
    branch: str,
) -> _Ranked:
    """Order candidates by raw score (best first), then key ascending; keep ``depth``; rank
    them by competition ranking (rows tied on the raw score share a rank).

    Raises:
        HybridSearchError: a candidate's key is NULL, NaN or repeated.
    """
    candidate_keys = keys.take(pa.array(rowids, type=pa.int64())).to_pylist()
    seen: set[Any] = set()
    for value in candidate_keys:
        if value is None:
            _fail(f"key column '{key}' is NULL in a candidate row of the {branch} branch")
        if value != value:  # NaN equals no key, not even itself: the fusion could not merge it
            _fail(f"key column '{key}' is NaN in a candidate row of the {branch} branch")
        if value in seen:
            _fail(
                f"key column '{key}' is not unique: {value!r} appears twice in the {branch} branch"
            )
        seen.add(value)
    scores = [float(value) for value in raw]
    sign = -1.0 if higher_is_better else 1.0
    order = sorted(range(len(scores)), key=lambda i: (sign * scores[i], candidate_keys[i]))[:depth]
    raw_kept = [scores[i] for i in order]
    return _Ranked(
        rowids=[int(rowids[i]) for i in order],
        raw=raw_kept,
        keys=[candidate_keys[i] for i in order],
        ranks=competition_ranks(raw_kept, higher_is_better=higher_is_better),
    )


def _fuse(call: HybridSearchCall, text: _Ranked, vector: _Ranked) -> list[FusedHit]:
    """The page of fused hits: the reference fusion the call names, over the two rankings."""
    lists = [text.keys, vector.keys]
    ranks = [text.ranks, vector.ranks]
    weights = [call.text_weight, call.vector_weight]
    if call.fusion == "rrf":
        return reciprocal_rank_fusion(
            lists,
            ranks=ranks,
            weights=weights,
            rank_constant=call.rank_constant,
            limit=call.k,
            offset=call.offset,
            min_score=call.min_score,
        )
    function = min_max_fusion if call.fusion == "min_max" else distribution_based_score_fusion
    return function(
        lists,
        [text.raw, vector.raw],
        higher_is_better=[True, False],
        weights=weights,
        ranks=ranks,
        limit=call.k,
        offset=call.offset,
        min_score=call.min_score,
    )


def compiled_filters(tree: exp.Expr) -> dict[str, Predicate]:
    """The filter of each ``hybrid_search`` call the compiler wrote into ``tree``: its text,
    with the predicate the literal carries
    (:data:`~hotdata_retrieval.compile.compiler.COMPILED_FILTER`). A call written by hand
    carries none, and is left out."""
    found: dict[str, Predicate] = {}
    for call in tree.find_all(exp.Anonymous):
        if str(call.this).lower() != HYBRID_SEARCH:
            continue
        for node in call.expressions:
            predicate = node.meta.get(COMPILED_FILTER) if isinstance(node, exp.Literal) else None
            if predicate is not None:
                found[str(node.this)] = predicate
    return found


class HybridSearch:
    """The ``hybrid_search`` table function over one engine's tables (a :class:`HybridHost`:
    the local engine).

    Register it with ``context.register_udtf(udtf(HybridSearch(engine), "hybrid_search"))``;
    :meth:`run` gives the same rows without SQL.
    """

    def __init__(self, engine: HybridHost) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        # Per filter text, its predicate and how many running statements hold it (the text
        # is the key: a predicate need not be hashable).
        self._compiled: dict[str, tuple[Predicate, int]] = {}

    def __call__(self, *arguments: Any) -> Table:
        values = []
        for argument in arguments:
            try:
                values.append(argument.python_value().as_py())
            except Exception:  # a column or expression, not a literal
                _fail(f"every argument must be a literal, got {argument}")
        with self._lock:
            known = {text: predicate for text, (predicate, _) in self._compiled.items()}
        return relation(self.run(parse_call(values, compiled_filters=known)))

    @contextlib.contextmanager
    def compiled(self, filters: Mapping[str, Predicate]) -> Iterator[None]:
        """While a statement compiled from a plan runs: its calls' filter texts (from
        :func:`compiled_filters`) are read as the predicates they were compiled from."""
        with self._lock:
            for text, predicate in filters.items():
                _, holders = self._compiled.get(text, (predicate, 0))
                self._compiled[text] = (predicate, holders + 1)
        try:
            yield
        finally:
            with self._lock:
                for text in filters:
                    predicate, holders = self._compiled[text]
                    if holders > 1:
                        self._compiled[text] = (predicate, holders - 1)
                    else:
                        del self._compiled[text]

    # -- the search --------------------------------------------------------------------------

    def run(self, call: HybridSearchCall) -> pa.Table:
        """The call's rows: the table's columns but the searched vector column, then ``score``
        (and with ``debug`` each branch's rank and raw score), best first, one page.

        Raises:
            HybridSearchError: a missing table, column or index, a bad filter, a query vector
                of the wrong length, or a NULL or repeated key among a branch's candidates.
            EngineError: no such table.
        """
        engine = self._engine
        try:
            name = TableName.parse(
                call.table, default_catalog=engine.catalog, default_schema=engine.schema
            )
        except PlanError as error:
            _fail(str(error))
        loaded = engine._loaded(name)
        data, entry = loaded.data, loaded.entry
        full_name = f"{engine.catalog}.{engine.schema}.{entry.name}"
        columns = set(data.column_names)
        if call.key not in columns:
            _fail(f"key column '{call.key}' not found in table '{full_name}'")
        if call.filter is not None:
            for column in sorted(predicate_columns(call.filter)):
                if column not in columns:
                    _fail(f"filter column '{column}' not found in table '{full_name}'")
        hidden = self._vector_column_of(call, loaded, full_name)
        if call.filter is not None and hidden in predicate_columns(call.filter):
            _fail(f"filter column '{hidden}' is the searched vector column")

        passes = np.ones(data.num_rows, dtype=bool)
        if call.filter is not None:
            try:
                passes = loaded.passing_rows(call.filter)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
                _fail(f"filter cannot be evaluated: {error}")
        depth = call.branch_depth
        keys = data.column(call.key)
        text = self._text_branch(call, loaded, full_name, passes)
        text_ranked = _rank(
            *text, keys, higher_is_better=True, depth=depth, key=call.key, branch="text"
        )
        vector = self._vector_branch(call, loaded, full_name, passes)
        vector_ranked = _rank(
            *vector, keys, higher_is_better=False, depth=depth, key=call.key, branch="vector"
        )
        hits = _fuse(call, text_ranked, vector_ranked)

        rowid_of = dict(zip(text_ranked.keys, text_ranked.rowids))
        rowid_of.update(zip(vector_ranked.keys, vector_ranked.rowids))
        output = data.drop_columns([hidden]) if hidden in columns else data
        added = [SCORE_COLUMN]
        if call.debug:
            added.extend([*HYBRID_DEBUG_COLUMNS["text"], *HYBRID_DEBUG_COLUMNS["vector"]])
        for column in added:
            if column in output.column_names:
                _fail(
                    f"table column '{column}' collides with the output column of the same "
                    f"name; hybrid_search cannot return both"
                )
        rows = output.take(pa.array([rowid_of[hit.key] for hit in hits], type=pa.int64()))
        rows = rows.append_column(
            pa.field(SCORE_COLUMN, pa.float64(), nullable=False),
            pa.array([hit.score for hit in hits], type=pa.float64()),
        )
        if call.debug:
            for ranked, at, (rank_name, raw_name) in (
                (text_ranked, 0, HYBRID_DEBUG_COLUMNS["text"]),
                (vector_ranked, 1, HYBRID_DEBUG_COLUMNS["vector"]),
            ):
                raw_of = dict(zip(ranked.keys, ranked.raw))
                ranks = [hit.ranks[at] for hit in hits]
                rows = rows.append_column(rank_name, pa.array(ranks, type=pa.uint64()))
                rows = rows.append_column(
                    raw_name,
                    pa.array([raw_of.get(hit.key) for hit in hits], type=pa.float32()),
                )
        return rows

    # -- branches ----------------------------------------------------------------------------

    def _text_branch(
        self, call: HybridSearchCall, loaded: LoadedTable, full_name: str, passes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every row the BM25 index matches and the filter passes: ``(rowids, scores)``.

        Scores are BM25 over the whole table (document frequencies and lengths of every row,
        not only the filtered ones), exactly as ``bm25_search`` scores them.
        """
        entry = loaded.entry
        column = call.text_column
        if column not in entry.text_indexes:
            raise HybridSearchError(f"No BM25 index found on column '{column}' for {full_name}")
        rowids, scores = loaded.bm25[column].search(call.query_text, entry.rows)
        keep = passes[rowids] if rowids.size else np.zeros(0, dtype=bool)
        return rowids[keep], scores[keep]

    def _vector_column_of(self, call: HybridSearchCall, loaded: LoadedTable, full_name: str) -> str:
        """The vector column the vector branch reads (never returned)."""
        entry = loaded.entry
        column = call.vector_column
        if call.query_vector is None:
            vector = entry.vector_for_source(column)
            if vector is None:
                raise HybridSearchError(
                    f"No vector index found on column '{column}' for {full_name}"
                )
            if call.metric is not None and call.metric.value != vector.metric:
                _fail(
                    f"the vector index on '{column}' ranks by {vector.metric}; "
                    f"metric '{call.metric.value}' does not match it"
                )
            return vector.name
        if column not in loaded.data.column_names:
            _fail(f"vector column '{column}' not found in table '{full_name}'")
        kind = loaded.data.schema.field(column).type
        if not is_vector_type(kind):
            _fail(f"column '{column}' holds {kind}, not a vector (a list of floats)")
        return column

    def _vector_branch(
        self, call: HybridSearchCall, loaded: LoadedTable, full_name: str, passes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every row with a vector that the filter passes: ``(rowids, distances)``.

        A caller's vector is compared with the engine's distance function on Float32 vectors
        (the SQL ``ARRAY[...]`` literal is coerced to the column's ``list<float32>``), so
        distances are bit-identical to the distance UDFs'. With no query vector, the query
        text is embedded by the column's model and ranked as ``vector_search`` ranks it.
        """
        if call.query_vector is None:
            return self._semantic_distances(call, loaded, passes)
        metric = call.metric or DistanceMetric.COSINE
        try:
            index = loaded.vector_index(call.vector_column)
        except DimensionMismatchError as error:
            _fail(str(error))
        if index.present.size and index.dimensions != len(call.query_vector):
            _fail(
                f"query vector length ({len(call.query_vector)}) must match column "
                f"dimensionality ({index.dimensions})"
            )
        # The depth nearest passing rows, with every row tied at the cut (ranked by key next).
        rowids, distances = index.nearest(
            METRIC_FUNCTIONS[metric],
            float64_query(call.query_vector),
            call.branch_depth,
            mask=passes,
            with_ties=True,
        )
        return rowids, float32_distances(distances)

    def _semantic_distances(
        self, call: HybridSearchCall, loaded: LoadedTable, passes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The depth passing rows nearest the embedded query text (with every row tied at the
        cut) and their distances, as ``vector_search`` ranks them; a row without a vector (a
        NULL text) is no candidate."""
        entry = loaded.entry
        vector = entry.vector_for_source(call.vector_column)
        assert vector is not None  # checked by _vector_column_of
        embedder = self._engine.embedder
        if embedder is None or str(embedder.name) != vector.model:
            _fail(
                f"column '{call.vector_column}' was embedded by '{vector.model}'; "
                "open the engine with that embedder"
            )
        query = np.asarray(embedder.embed_query(call.query_text), dtype=np.float64)
        rowids, distances = loaded.vector_index(vector.name).nearest(
            COSINE_DISTANCE, query, call.branch_depth, mask=passes, with_ties=True
        )
        return rowids, float32_distances(distances)
