"""A table of documents on an engine: what a vector store keeps, written and searched by key.

:class:`DocumentStore` keeps one table of documents — a string key, the text (with a BM25
index), the metadata as JSON text, the document's vector, and the metadata keys a caller
filters on as typed columns of their own — and changes it by key on any engine of the
library (:data:`~hotdata_retrieval.engines.base.DOCUMENT_CAPABILITIES`: ``upsert_rows``,
``delete_rows``, ``read_table``, ``read_rows``, ``tables``; ``docs/engines.md``, "Document
tables"). It is what the LangChain and LlamaIndex vector stores translate to; the table is an
ordinary one, searched by plans like any other.

>>> from hotdata_retrieval.engines.local import LocalEngine
>>> engine = LocalEngine()
>>> store = DocumentStore(engine, "notes", filter_columns={"lang": "string"})
>>> store.add(["a", "b"], ["red fox", "blue sky"], [[1.0, 0.0], [0.0, 1.0]],
...           [{"lang": "en"}, {"lang": "fr"}])
['a', 'b']
>>> [(hit.document.id, hit.distance) for hit in store.nearest([1.0, 0.1], k=1)]
[('a', 0.004962...)]
>>> [hit.document.id for hit in store.text_search("sky", filter={"lang": "fr"})]
['b']
>>> store.delete(["a", "missing"]), [document.id for document in store.get(["a", "b"])]
(1, ['b'])
>>> engine.close()
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from hotdata_retrieval._json import MAX_JSON_NESTING
from hotdata_retrieval.engines.base import DOCUMENT_CAPABILITIES, missing_capabilities
from hotdata_retrieval.engines.checks import RESERVED_COLUMNS
from hotdata_retrieval.engines.hnsw import unbuilt_vector_index, vector_index_kind
from hotdata_retrieval.engines.limits import InputLimits
from hotdata_retrieval.engines.results import returned_vector
from hotdata_retrieval.errors import MissingCapabilityError, PlanError
from hotdata_retrieval.indexes import TableIndexes, VectorIndex
from hotdata_retrieval.plan.filters import Predicate, predicate_columns
from hotdata_retrieval.plan.names import TableName, fold_identifier
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    DistanceMetric,
    NearestNeighborSearch,
    SearchPlan,
)
from hotdata_retrieval.plan.steps import steps_from_options
from hotdata_retrieval.plan.values import (
    NUMBER_TEXT,
    check_cosine_norm,
    check_encodable,
    check_numbers,
    check_positive_int,
    check_query_text,
    iso_text_problem,
    parse_iso_date,
    parse_iso_timestamp,
    utc_moment,
)
from hotdata_retrieval.routing import (
    FusionChoice,
    SearchMode,
    SearchRequest,
    plan_search,
    read_filter,
)

MAX_DOCUMENTS_PER_CALL = 100_000
"""The most documents one ``add``, ``delete`` or ``get`` takes: every change rewrites the
table's version, so a caller with more sends batches."""


@attrs.frozen(kw_only=True)
class StoredDocument:
    """One document as the store holds it.

    Attributes:
        id: its key.
        text: its text (BM25-indexed).
        metadata: its metadata, as JSON gives it back (a ``dict``).
        vector: its vector, when the read asked for it; else ``None``.
    """

    id: str
    text: str
    metadata: Mapping[str, Any]
    vector: tuple[float, ...] | None = None


@attrs.frozen(kw_only=True)
class DocumentHit:
    """One search result: the document and how it ranked.

    Attributes:
        document: the document.
        score: a text or fused search's score (higher is better), else ``None``.
        distance: a nearest-neighbour search's distance under the store's metric (lower is
            nearer: ``1 - cos`` for cosine, the squared Euclidean distance for ``l2``,
            ``-(a·b)`` for ``dot``), else ``None``.
        explanation: with ``explain_scores``, what a fused score is made of
            (:meth:`~hotdata_retrieval.engines.results.SearchHit.explanation`), else ``None``.
    """

    document: StoredDocument
    score: float | None = None
    distance: float | None = None
    explanation: Mapping[str, Any] | None = None


def _type(name: str, value: Any) -> Any:
    import pyarrow as pa

    if isinstance(value, pa.DataType):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        inner = text[5:-1].strip() if text.startswith("list<") and text.endswith(">") else None
        try:
            return pa.type_for_alias(text) if inner is None else pa.list_(pa.type_for_alias(inner))
        except ValueError:
            pass
    raise PlanError(
        f"filter column {name!r}: {value!r} is not an Arrow type or a type's name such as "
        "'string', 'int64', 'float64', 'bool', 'timestamp[us]' or 'list<string>'",
        field="filter_columns",
        value=value,
    )


def _identifier(value: Any, label: str) -> str:
    from hotdata_retrieval.plan.names import normalize_identifier

    return normalize_identifier(value, label=label)


class DocumentStore:
    """A table of documents on ``engine``, created by the first :meth:`add`.

    The table's columns: ``id_column`` (string, the key), ``text_column`` (string, BM25
    index), ``metadata_column`` (the metadata as JSON text), ``vector_column`` (float32
    list, of the first vectors' length) and each of ``filter_columns``, filled from the
    metadata key of its name (NULL where a document lacks it or, for a list column, holds an
    empty list). Metadata keys are matched to filter columns as names are (case-insensitively,
    accents however encoded: :func:`~hotdata_retrieval.plan.names.fold_identifier`).

    Args:
        engine: an engine with :data:`~hotdata_retrieval.engines.base.DOCUMENT_CAPABILITIES`
            (``upsert_rows``, ``delete_rows``, ``read_table``, ``read_rows``, ``tables``,
            ``search``): every engine of the library.
        table: the table's bare name.
        filter_columns: the metadata keys searches filter on, with their Arrow types (a
            :class:`pyarrow.DataType` or its name: ``"string"``, ``"int64"``, ``"list<string>"``,
            ...).
        metric: the vectors' distance (``cosine``, default; ``l2``; ``dot``).
        vector_index: ``"hnsw"`` for an approximate index (default: exact search), on the
            engines that build one (local, PostgreSQL, Hotdata: their ``vector_indexes``;
            another refuses it here; turbopuffer indexes its vectors itself). A name that
            is no :class:`~hotdata_retrieval.engines.hnsw.VectorIndexKind` is refused here too.
        id_column, text_column, metadata_column, vector_column: the columns' names.
        input_limits: the longest query text a search takes (default
            :class:`~hotdata_retrieval.engines.limits.InputLimits`: 4,096 characters, 128
            words); a longer one is an ``InputLimitError``.

    Raises:
        MissingCapabilityError: the engine lacks a capability the store needs (each named,
            with why).
        PlanError: a bad name or type, a filter column named as another column, a column
            named as one a search adds to its results
            (:data:`~hotdata_retrieval.engines.checks.RESERVED_COLUMNS`: ``score``,
            ``_distance``), an unknown metric or one the engine does not compute (its
            ``vector_metrics``: turbopuffer has no ``dot``), a ``vector_index`` that is no
            index kind or one the engine does not build.
    """

    def __init__(
        self,
        engine: Any,
        table: str,
        *,
        filter_columns: Mapping[str, Any] | None = None,
        metric: str | DistanceMetric = DistanceMetric.COSINE,
        vector_index: str | None = None,
        id_column: str = "id",
        text_column: str = "text",
        metadata_column: str = "metadata",
        vector_column: str = "embedding",
        input_limits: InputLimits | None = None,
    ) -> None:
        missing = missing_capabilities(engine, DOCUMENT_CAPABILITIES)
        if missing:
            name = type(engine).__name__
            raise MissingCapabilityError(
                f"{name} cannot keep a document table: "
                + "; ".join(f"{capability}: {why}" for capability, why in missing.items())
                + " (every engine of the library has them: docs/engines.md)",
                engine=name,
                capabilities=list(missing),
                reasons=missing,
            )
        self.engine = engine
        self._exists = False
        if input_limits is not None and not isinstance(input_limits, InputLimits):
            raise PlanError(
                f"input_limits must be an InputLimits, got {input_limits!r}",
                field="input_limits",
                value=input_limits,
            )
        self.input_limits = input_limits or InputLimits()
        self.table = _identifier(table, "table")
        self.metric = DistanceMetric.parse(metric)
        self.vector_index = vector_index_kind(vector_index)
        computes = getattr(engine, "vector_metrics", None)  # an engine of the library says
        if computes is not None and self.metric.value not in computes:
            raise PlanError(
                f"metric {self.metric.value!r} is not one the "
                f"{getattr(engine, 'engine_name', type(engine).__name__)} engine computes (it "
                f"computes {', '.join(map(repr, computes))})",
                field="metric",
                value=metric,
            )
        builds = getattr(engine, "vector_indexes", None)
        if self.vector_index is not None and builds is not None and vector_index not in builds:
            raise PlanError(
                unbuilt_vector_index(
                    self.vector_index, getattr(engine, "engine_name", type(engine).__name__), builds
                ),
                field="vector_index",
                value=vector_index,
            )
        self.id_column = _identifier(id_column, "id_column")
        self.text_column = _identifier(text_column, "text_column")
        self.metadata_column = _identifier(metadata_column, "metadata_column")
        self.vector_column = _identifier(vector_column, "vector_column")
        fixed = [self.id_column, self.text_column, self.metadata_column, self.vector_column]
        if len(set(fixed)) != len(fixed):
            raise PlanError(f"the store's columns must differ, got {fixed}", field="columns")
        if filter_columns is not None and not isinstance(filter_columns, Mapping):
            raise PlanError(
                "filter_columns must map each column's name to its Arrow type "
                f"({{'author': 'string'}}), got {filter_columns!r}",
                field="filter_columns",
                value=filter_columns,
            )
        self.filter_columns: dict[str, Any] = {}
        for name, kind in (filter_columns or {}).items():
            column = _identifier(name, "filter column")
            if column in fixed or column in self.filter_columns:
                raise PlanError(
                    f"filter column {name!r} is named as another of the store's columns "
                    f"({', '.join([*fixed, *self.filter_columns])})",
                    field="filter_columns",
                    value=name,
                )
            self.filter_columns[column] = _type(name, kind)
        self._check_filter_types(engine)
        for label, column in (
            ("id_column", self.id_column),
            ("text_column", self.text_column),
            ("metadata_column", self.metadata_column),
            ("vector_column", self.vector_column),
            *(("filter_columns", column) for column in self.filter_columns),
        ):
            if column in RESERVED_COLUMNS:
                raise PlanError(
                    f"{label}: column {column!r} is reserved: text and vector searches add a "
                    f"column of that name to their results ({', '.join(RESERVED_COLUMNS)} are "
                    "reserved); name it otherwise",
                    field=label,
                    value=column,
                )

    def _check_filter_types(self, engine: Any) -> None:
        """Refuse, when the store is built, a filter column of a type the engine cannot
        store (SQLite holds no list, turbopuffer no duration), which its first :meth:`add`
        would otherwise refuse (``check_column_types``: every engine of the library has
        it); and, on every engine with one message, a type no filter can use: one no engine
        stores (``null``, ``list<null>``, a struct of no field) or a struct or map
        (:func:`~hotdata_retrieval.engines.checks.filter_column_problem`).

        Raises:
            PlanError: naming the column, its type and the engine.
        """
        if not self.filter_columns:
            return
        from hotdata_retrieval.engines.checks import filter_column_problem

        for column, kind in self.filter_columns.items():
            problem = filter_column_problem(kind)
            if problem is not None:
                raise PlanError(
                    f"filter_columns: column {column!r} {problem}",
                    field="filter_columns",
                    value=str(kind),
                )
        check = getattr(engine, "check_column_types", None)
        if check is None:
            return
        import pyarrow as pa

        from hotdata_retrieval.engines.errors import EngineError

        for column, kind in self.filter_columns.items():
            try:
                check(pa.schema([pa.field(column, kind)]))
            except EngineError as error:
                raise PlanError(
                    f"filter_columns: {error}",
                    field="filter_columns",
                    value=str(kind),
                ) from None

    # -- reading ---------------------------------------------------------------------------

    def exists(self) -> bool:
        """Whether the table has been created (by a first :meth:`add`); once seen, it is
        taken to stay (the engine's table listing is read until then)."""
        if not self._exists:
            self._exists = self.table in self.engine.tables
        return self._exists

    def __len__(self) -> int:
        """The number of documents."""
        if not self.exists():
            return 0
        return int(self.engine.read_table(self.table, [self.id_column]).num_rows)

    def get(self, ids: Sequence[str], *, include_vectors: bool = False) -> list[StoredDocument]:
        """The documents keyed by ``ids``, in that order; an unknown key is left out.

        Raises:
            PlanError: ``ids`` is not a list of strings, or longer than
                :data:`MAX_DOCUMENTS_PER_CALL`.
        """
        wanted = _ids(ids)
        if not wanted or not self.exists():
            return []
        columns = [self.id_column, self.text_column, self.metadata_column]
        if include_vectors:
            columns.append(self.vector_column)
        rows = self.engine.read_rows(self.table, list(dict.fromkeys(wanted)), columns)
        found = {row[self.id_column]: row for row in rows.to_pylist()}
        return [self._document(found[key]) for key in dict.fromkeys(wanted) if key in found]

    def _document(self, row: Mapping[str, Any]) -> StoredDocument:
        vector = returned_vector(row.get(self.vector_column))
        text = row.get(self.text_column)
        metadata = row.get(self.metadata_column)
        return StoredDocument(
            id=str(row[self.id_column]),
            text="" if text is None else str(text),
            metadata={} if metadata is None else json.loads(metadata),
            vector=None if vector is None else tuple(vector),
        )

    # -- searching -------------------------------------------------------------------------

    def _indexes(self) -> TableIndexes:
        return TableIndexes(
            table=self.engine.indexes(self.table).table,
            bm25_columns=(self.text_column,),
            vectors=(VectorIndex(column=self.vector_column, metric=self.metric.value),),
            key_column=self.id_column,
        )

    def _filter(self, value: Any) -> Predicate | None:
        predicate = read_filter(value)
        if predicate is None:
            return None
        allowed = {self.id_column, *self.filter_columns}
        unknown = sorted(predicate_columns(predicate) - allowed)
        if unknown:
            raise PlanError(
                f"filter reads {', '.join(repr(name) for name in unknown)}, which the store "
                f"does not keep as a column; it filters on {', '.join(sorted(allowed))} "
                "(declare a metadata key in filter_columns= to filter on it)",
                field="filter",
                value=unknown[0],
            )
        return predicate

    def ids_matching(self, filter: Any) -> list[str]:
        """The keys of the documents ``filter`` keeps (a predicate, a filter object or filter
        text over the key and the filter columns), in the table's order; the rows are read
        from the table (``read_table``) and the filter is evaluated on them as a ``WHERE``
        would, its values read as a search reads them
        (:func:`~hotdata_retrieval.engines.checks.arrow_typed_filter`: a timestamp text with
        or without an offset is the instant it names on every engine).

        Raises:
            PlanError: a filter that does not read, reads a column the store does not
                keep, or compares a column with a value of another type.
        """
        predicate = self._filter(filter)
        if predicate is None:
            raise PlanError("ids_matching needs a filter", field="filter")
        if not self.exists():
            return []
        import pyarrow as pa

        from hotdata_retrieval.engines.checks import arrow_typed_filter
        from hotdata_retrieval.engines.local.masks import passing_rows

        rows = self.engine.read_table(self.table, [self.id_column, *self.filter_columns])
        keys = rows.column(self.id_column).to_pylist()
        # typed as a search types it: a timestamp text is the instant it names, whatever
        # zone the column read back has (turbopuffer's are UTC, the local engine's as loaded)
        typed = arrow_typed_filter(predicate, rows.schema)
        try:
            passing = passing_rows(typed, rows)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as error:
            raise PlanError(
                f"filter compares a column with a value of another type: {error}",
                field="filter",
            ) from None
        return [key for key, kept in zip(keys, passing) if kept]

    def check_query(self, query: Any) -> str:
        """``query`` if a search takes it as its text: a string with no NUL byte and no lone
        surrogate, within :attr:`input_limits` (a blank one is allowed: a search by words
        then matches nothing). The vector stores check a query before they embed it, so a
        search by meaning refuses what a search by words refuses.

        Raises:
            PlanError: not a string, a NUL byte or a lone surrogate.
            InputLimitError: over :attr:`input_limits`.
        """
        if isinstance(query, str):
            self.input_limits.check_query(query)
        return check_query_text(query, label="query_text", allow_blank=True)

    def relevance(self, distance: float) -> float:
        """A distance under the store's metric as a similarity, higher is better: the cosine
        similarity ``1 - d`` for cosine, ``1 - sqrt(d) / sqrt(2)`` for the squared Euclidean
        distance ``d`` of ``l2`` (1 for the same vector, 0 for unit vectors at a right
        angle), the inner product ``-d`` for ``dot``."""
        if self.metric is DistanceMetric.L2:
            return 1.0 - math.sqrt(max(distance, 0.0)) / math.sqrt(2.0)
        if self.metric is DistanceMetric.DOT:
            return -distance
        return 1.0 - distance

    def _columns(self) -> tuple[str, ...]:
        return (self.id_column, self.text_column, self.metadata_column)

    def nearest(
        self,
        vector: Sequence[float],
        *,
        k: int = 4,
        filter: Any = None,
        include_vectors: bool = False,
        diversity: float | None = None,
        candidates: int | None = None,
    ) -> list[DocumentHit]:
        """The ``k`` documents nearest ``vector``, nearest first (ties by key), or with
        ``diversity`` the ``k`` maximal marginal relevance chooses among ``candidates``.

        Args:
            vector: the query vector (the documents' length).
            k: how many (top-k).
            filter: a predicate, a filter object (``{"lang": "en"}``) or filter text, over
                the key and the filter columns.
            include_vectors: also return each document's vector.
            diversity: maximal marginal relevance's lambda, 0 to 1 (the plan's
                :class:`~hotdata_retrieval.plan.steps.Diversity` step); ``None``: none.
            candidates: the nearest documents diversity chooses among (default: 4 times
                ``k``, at most 1,000).

        Raises:
            PlanError: a bad ``k``, vector or filter (a column the store does not keep), a
                vector of another length than the documents', under cosine a vector whose
                squared norm is outside
                :data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`, a diversity or
                candidate count out of range.
        """
        k = check_positive_int(k, label="k")
        predicate = self._filter(filter)
        _probe(vector, self.metric)
        if not self.exists():
            return []
        plan = SearchPlan(
            source=NearestNeighborSearch(
                table=self._indexes().table,
                column=self.vector_column,
                query_vector=vector,
                metric=self.metric,
            ),
            columns=self._columns(),
            limit=k,
            filter=predicate,
            key_column=self.id_column,
            include_vectors=include_vectors,
            steps=steps_from_options(diversity=diversity, candidates=candidates),
        )
        return self._hits(plan)

    def text_search(self, query: str, *, k: int = 4, filter: Any = None) -> list[DocumentHit]:
        """The ``k`` documents whose text best matches ``query`` by BM25, best first.

        Raises:
            PlanError: a bad ``k``, query or filter.
        """
        return self._routed(query, SearchMode.TEXT, k=k, filter=filter)

    def hybrid_search(
        self,
        query: str,
        vector: Sequence[float],
        *,
        k: int = 4,
        filter: Any = None,
        fusion: Any = None,
        explain_scores: bool = False,
    ) -> list[DocumentHit]:
        """The ``k`` best documents by BM25 on ``query`` fused with nearness to ``vector``
        (``vector`` is the query's embedding).

        Args:
            fusion: a method's name (``"rrf"``, default; ``"min_max"``; ``"dbsf"``), an object
                ``{"method": "min_max", "alpha": 0.7}`` or a
                :class:`~hotdata_retrieval.routing.FusionChoice` (``docs/fusion.md``).
            explain_scores: each hit also carries its ``explanation`` (each branch's rank,
                raw score, normalized value and contribution to the fused score).

        Raises:
            PlanError: a bad ``k``, query, vector, filter or fusion.
        """
        return self._routed(
            query,
            SearchMode.HYBRID,
            k=k,
            filter=filter,
            fusion=fusion,
            vector=vector,
            explain_scores=explain_scores,
        )

    def _routed(
        self,
        query: str,
        mode: SearchMode,
        *,
        k: int,
        filter: Any,
        fusion: Any = None,
        vector: Sequence[float] | None = None,
        explain_scores: bool = False,
    ) -> list[DocumentHit]:
        k = check_positive_int(k, label="k")
        self.check_query(query)
        if mode is SearchMode.HYBRID and k > DEFAULT_DEPTH:
            choice = FusionChoice.of(fusion) or FusionChoice()
            if "depth" not in choice.options:  # each branch must reach the page
                fusion = FusionChoice(method=choice.method, options={**choice.options, "depth": k})
        predicate = self._filter(filter)
        request = SearchRequest(
            table=self.table,
            query=query,
            mode=mode,
            limit=k,
            filter=predicate,
            columns=self._columns(),
            fusion=fusion,
            allow_empty_query=True,
            explain_scores=explain_scores,
        )
        if mode is SearchMode.HYBRID and vector is None:
            raise PlanError("a hybrid search needs the query's vector", field="vector")
        if vector is not None:
            _probe(vector, self.metric)
        if not self.exists():
            return []
        indexes = self._indexes()
        fixed = None if vector is None else list(vector)
        plan = plan_search(indexes, request, embed_query=None if fixed is None else lambda _: fixed)
        return self._hits(plan)

    def _hits(self, plan: SearchPlan) -> list[DocumentHit]:
        return [
            DocumentHit(
                document=self._document(hit.columns),
                score=hit.score,
                distance=hit.distance,
                explanation=hit.explanation() if hit.explained else None,
            )
            for hit in self.engine.search(plan)
        ]

    # -- writing ---------------------------------------------------------------------------

    def add(
        self,
        ids: Sequence[str] | None,
        texts: Sequence[str],
        vectors: Sequence[Sequence[float]],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[str]:
        """Write documents by key, in one commit: a key the table holds is replaced, the
        others added. Returns the keys (a new UUID4 string where ``ids`` is ``None`` or
        holds ``None``).

        Raises:
            PlanError: lists of different lengths, over :data:`MAX_DOCUMENTS_PER_CALL`, a
                key that is not a non-empty string of valid Unicode or is repeated, a text
                that is not text (or holds a lone surrogate),
                metadata that is not a mapping of JSON values or nests more than
                ``MAX_JSON_NESTING`` (64) levels, or a filter column's value its type cannot
                hold (each naming the document).
            PlanError: under cosine distance, a non-zero vector whose squared norm is
                outside :data:`~hotdata_retrieval.plan.values.COSINE_SQUARED_NORMS`, naming
                the document.
            EngineError: a vector the table cannot hold (another length, a value that is
                not finite); nothing was written.
        """
        texts = _sequence(texts, "texts")
        count = len(texts)
        given = [None] * count if ids is None else _sequence(ids, "ids")
        keys = _ids([str(uuid.uuid4()) if key is None else key for key in given])
        vectors = _sequence(vectors, "vectors")
        metadata_rows = [None] * count if metadatas is None else _sequence(metadatas, "metadatas")
        lengths = {
            "ids": len(keys),
            "texts": count,
            "vectors": len(vectors),
            "metadatas": len(metadata_rows),
        }
        if len(set(lengths.values())) != 1:
            raise PlanError(
                "ids, texts, vectors and metadatas must be as long as each other, got "
                + ", ".join(f"{name} {length}" for name, length in lengths.items()),
                field="texts",
            )
        if not count:
            return []
        repeated = [key for key in dict.fromkeys(keys) if keys.count(key) > 1]
        if repeated:
            raise PlanError(f"id {repeated[0]!r} is given twice", field="ids", value=repeated[0])
        rows = self._rows(keys, texts, vectors, metadata_rows)
        from hotdata_retrieval.engines.local import TableLoad

        create = TableLoad(  # the first add creates the table, under the engine's writer lock
            name=self.table,
            data=rows,
            key_column=self.id_column,
            text_columns=(self.text_column,),
            vector_index=self.vector_index,
            vector_metric=self.metric.value,
        )
        self.engine.upsert_rows(self.table, rows, create=create)
        return keys

    def _rows(
        self,
        keys: list[str],
        texts: list[Any],
        vectors: list[Any],
        metadatas: list[Any],
    ) -> Any:
        import pyarrow as pa

        metadata_texts: list[str] = []
        filter_values: dict[str, list[Any]] = {name: [] for name in self.filter_columns}
        for key, text, metadata in zip(keys, texts, metadatas):
            _check_text(text, f"document {key!r}: its text", key)
            metadata = {} if metadata is None else metadata
            if not isinstance(metadata, Mapping):
                raise PlanError(
                    f"document {key!r}: metadata must be a mapping, got {type(metadata).__name__}",
                    field="metadatas",
                    value=metadata,
                )
            metadata_texts.append(_metadata_json(key, metadata))
            check_encodable(
                metadata_texts[-1],
                label=f"document {key!r}: its metadata",
                field="metadatas",
                reported=key,
            )
            lowered: dict[str, Any] = {}
            for name, value in metadata.items():
                folded = fold_identifier(str(name))
                if folded in lowered and folded in self.filter_columns:
                    raise PlanError(
                        f"document {key!r}: metadata names filter column {folded!r} twice "
                        "(keys differing only in case or in how their accents are encoded)",
                        field="metadatas",
                        value=key,
                    )
                lowered[folded] = value
            for name in self.filter_columns:
                filter_values[name].append(lowered.get(name))
        columns: dict[str, Any] = {
            self.id_column: pa.array(keys, pa.string()),
            self.text_column: pa.array(texts, pa.string()),
            self.metadata_column: pa.array(metadata_texts, pa.string()),
            self.vector_column: _vector_array(keys, vectors, self.metric),
        }
        for name, kind in self.filter_columns.items():
            columns[name] = _filter_array(name, kind, keys, filter_values[name])
        return pa.table(columns)

    def delete(self, ids: Sequence[str]) -> int:
        """Remove the documents keyed by ``ids`` in one commit; returns how many there were
        (an unknown key is no error).

        Raises:
            PlanError: ``ids`` is not a list of strings, or too long.
        """
        keys = _ids(ids)
        if not keys or not self.exists():
            return 0
        return int(self.engine.delete_rows(self.table, keys))

    def clear(self) -> int:
        """Remove every document; returns how many there were."""
        if not self.exists():
            return 0
        keys = self.engine.read_table(self.table, [self.id_column]).column(0).to_pylist()
        removed = 0
        for start in range(0, len(keys), MAX_DOCUMENTS_PER_CALL):
            removed += self.delete(keys[start : start + MAX_DOCUMENTS_PER_CALL])
        return removed


def _probe(vector: Sequence[float], metric: DistanceMetric) -> NearestNeighborSearch:
    """A branch whose construction checks ``vector`` as a query vector (a table need not
    exist to refuse a bad one), and for cosine its norm
    (:func:`~hotdata_retrieval.plan.values.check_cosine_norm`)."""
    return NearestNeighborSearch(
        table=TableName(catalog="default", schema="public", name="unused"),
        column="vector",
        query_vector=vector,
        metric=metric,
    )


def as_list(value: Any, label: str) -> list[Any]:
    """``value`` as a list, refusing text (which would be read as its characters), a
    mapping, a non-iterable and more than :data:`MAX_DOCUMENTS_PER_CALL` items.

    Raises:
        PlanError: naming ``label``.
    """
    return _sequence(value, label)


def _sequence(value: Any, label: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise PlanError(
            f"{label} must be a list, got {type(value).__name__}", field=label, value=value
        )
    items = list(value)
    if len(items) > MAX_DOCUMENTS_PER_CALL:
        raise PlanError(
            f"{label} holds {len(items):,} items; one call takes at most "
            f"{MAX_DOCUMENTS_PER_CALL:,} (send batches)",
            field=label,
            value=len(items),
        )
    return items


def _ids(value: Any) -> list[str]:
    keys = _sequence(value, "ids")
    for key in keys:
        if not isinstance(key, str) or not key:
            raise PlanError(
                f"an id must be a non-empty string, got {key!r}", field="ids", value=key
            )
        check_encodable(key, label=f"id {key!r}", field="ids")
    return keys


def _check_text(text: Any, label: str, reported: Any) -> None:
    """Refuse a document's text that is not a string of valid Unicode (a lone surrogate such
    as ``"\\ud800"``), which no engine can store or compare, naming ``label``; the error's
    value is the text when it is not a string, else ``reported``."""
    if not isinstance(text, str):
        raise PlanError(
            f"{label} must be a string, got {type(text).__name__}", field="texts", value=text
        )
    check_encodable(text, label=label, field="texts", reported=reported)


def check_texts(texts: Sequence[Any]) -> None:
    """Refuse documents' texts an ``add`` would refuse, before anything embeds them: each
    must be a string of valid Unicode.

    Raises:
        PlanError: naming the first bad text by its position.
    """
    for position, text in enumerate(texts):
        _check_text(text, f"texts[{position}]", text)


def _metadata_nesting(metadata: Mapping[str, Any], bound: int) -> int:
    """How deep ``metadata``'s mappings and lists nest (the mapping itself is 1), counted
    without recursion and only up to ``bound + 1`` (so a value that holds itself ends)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(metadata, 1)]
    while pending:
        value, depth = pending.pop()
        deepest = max(deepest, depth)
        if depth > bound:
            break
        if isinstance(value, Mapping):
            pending.extend((item, depth + 1) for item in value.values() if _container(item))
        else:
            pending.extend((item, depth + 1) for item in value if _container(item))
    return deepest


def _container(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _metadata_json(key: str, metadata: Mapping[str, Any]) -> str:
    """``metadata`` as JSON text, at most ``MAX_JSON_NESTING`` levels deep: deeper metadata
    raised ``RecursionError`` from ``json.dumps`` past about 1,000 levels, and a little less
    was written and then raised it from ``json.loads`` in each read of the document made a
    few hundred frames down the stack.

    Raises:
        PlanError: naming the document.
    """
    if _metadata_nesting(metadata, MAX_JSON_NESTING) > MAX_JSON_NESTING:
        raise PlanError(
            f"document {key!r}: its metadata is nested more than {MAX_JSON_NESTING} objects "
            "and lists deep (MAX_JSON_NESTING); store flat values",
            field="metadatas",
            value=key,
        )
    try:
        return json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise PlanError(
            f"document {key!r}: its metadata must hold JSON values (text, numbers, booleans, "
            f"null, lists, objects with text keys): {error}",
            field="metadatas",
            value=key,
        ) from None


def _vector_array(keys: list[str], vectors: list[Any], metric: DistanceMetric) -> Any:
    import numpy as np
    import pyarrow as pa

    rows = []
    for key, vector in zip(keys, vectors):
        try:
            row = np.asarray(vector, dtype=np.float64)
        except (TypeError, ValueError):
            row = None
        if row is not None and row.ndim == 1 and row.size:
            check_numbers(vector, label=f"document {key!r}: its vector", field="vectors", value=key)
        if row is None or row.ndim != 1 or not row.size:
            raise PlanError(
                f"document {key!r}: its vector must be a non-empty list of numbers, got "
                f"{vector!r:.80}",
                field="vectors",
                value=key,
            )
        if not np.all(np.isfinite(row)) or np.any(np.abs(row) > np.finfo(np.float32).max):
            raise PlanError(
                f"document {key!r}: its vector holds a value that is not a finite float32",
                field="vectors",
                value=key,
            )
        if metric is DistanceMetric.COSINE:
            check_cosine_norm(
                row, label=f"document {key!r}: its vector", field="vectors", reported=key
            )
        rows.append(row.astype(np.float32))
    return pa.array(rows, pa.list_(pa.float32()))


def _moment(text: str, kind: Any) -> Any:
    """Metadata text for a date or timestamp filter column (JSON has no dates) as the value
    it names, in the ISO forms filters read (:data:`~hotdata_retrieval.plan.values.
    ISO_FORMS`): a date column takes a date; a timestamp column a timestamp or a date (its
    midnight), one with an offset as its UTC moment, and one without as UTC for a column
    with a time zone. Other text is returned as it is, for the column's check to refuse."""
    import datetime

    import pyarrow as pa

    date = parse_iso_date(text)
    if pa.types.is_date(kind):
        return text if date is None else date
    moment = parse_iso_timestamp(text)
    if moment is None and date is not None:
        moment = datetime.datetime(date.year, date.month, date.day)
    if moment is None:
        return text
    moment = utc_moment(moment, label="metadata")
    return moment if kind.tz is None else moment.replace(tzinfo=datetime.timezone.utc)


_UNIT_MICROSECONDS = {"s": 1_000_000, "ms": 1_000}
"""A timestamp unit coarser than Python's microseconds, and how many microseconds it holds."""


def _checked_moment(name: str, kind: Any, key: str, value: Any) -> Any:
    """A metadata value for a date or timestamp filter column, read by :func:`_moment`:
    ``None``, or ISO text naming a moment the column holds exactly.

    Raises:
        PlanError: a value that is no text (a number would be read in the column's unit,
            seconds or microseconds or days, silently), text in none of the ISO forms (a
            fraction of more than six digits named as past the microseconds a timestamp
            holds), or a moment finer than the column's unit (``'…00.5'`` in a column of
            seconds), naming the document.
    """
    import pyarrow as pa

    if value is None:
        return None
    if not isinstance(value, str):
        raise PlanError(
            f"document {key!r}: metadata {name!r} is {value!r}; a {kind} filter column takes "
            "ISO 8601 text (such as '2024-03-01' or '2024-03-01T05:00:00Z'), as JSON has no "
            "dates",
            field="metadatas",
            value=key,
        )
    moment = _moment(value, kind)
    if isinstance(moment, str):
        kind_word = "date" if pa.types.is_date(kind) else "timestamp"
        raise PlanError(
            f"document {key!r}: metadata {name!r} is {value!r}, which its filter column "
            f"({kind}) does not read: {iso_text_problem(value, kind_word)}",
            field="metadatas",
            value=key,
        )
    step = _UNIT_MICROSECONDS.get(getattr(kind, "unit", ""), 1)
    if hasattr(moment, "microsecond") and moment.microsecond % step:
        raise PlanError(
            f"document {key!r}: metadata {name!r} is {value!r}, finer than its filter column "
            f"({kind}) holds",
            field="metadatas",
            value=key,
        )
    return moment


def _checked_decimal(name: str, kind: Any, key: str, value: Any) -> Any:
    """A metadata value for a decimal filter column as the exact decimal it writes, by the
    rule filters follow (docs/plans.md, "Filter values and column types"): a float as the
    decimal its shortest text writes (``0.1`` is 0.1), an integer and number text
    (``"1.59"``, JSON having no exact decimal) as written; ``None`` stays.

    Raises:
        PlanError: a boolean or other text, or a number the column does not hold exactly
            (more digits after the point than its scale, ``0.105`` in ``decimal(10, 2)``,
            or past its range), naming the document.
    """
    import decimal

    if value is None:
        return None
    number: decimal.Decimal | None = None
    if isinstance(value, float):
        number = decimal.Decimal(repr(value))
    elif isinstance(value, (int, decimal.Decimal)) and not isinstance(value, bool):
        number = decimal.Decimal(value)
    elif isinstance(value, str) and NUMBER_TEXT.fullmatch(value):
        number = decimal.Decimal(value)  # the filter rule's number text: ASCII digits only
    if number is None or not number.is_finite():
        raise PlanError(
            f"document {key!r}: metadata {name!r} is {value!r}, not a number its filter "
            f"column ({kind}) holds",
            field="metadatas",
            value=key,
        )
    step = decimal.Decimal(1).scaleb(-kind.scale)
    context = decimal.Context(prec=200)  # within the range checked first: no rounding
    if (
        number.copy_abs() >= 10 ** (kind.precision - kind.scale)
        or number.quantize(step, context=context) != number
    ):
        raise PlanError(
            f"document {key!r}: metadata {name!r} is {value!r}, which its filter column "
            f"({kind}) does not hold exactly (at most {kind.precision - kind.scale} digits "
            f"before the point and {kind.scale} after it)",
            field="metadatas",
            value=key,
        )
    return number


def _filter_array(name: str, kind: Any, keys: list[str], values: list[Any]) -> Any:
    import pyarrow as pa

    problems = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)
    whole = pa.types.is_integer(kind)
    for key, value in zip(keys, values):
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanError(
                f"document {key!r}: metadata {name!r} is {value}, which a filter cannot match",
                field="metadatas",
                value=key,
            )
        if (
            whole
            and value is not None
            and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or (isinstance(value, float) and not value.is_integer())
            )
        ):
            raise PlanError(
                f"document {key!r}: metadata {name!r} is {value!r}, not a whole number its "
                f"filter column ({kind}) holds",
                field="metadatas",
                value=key,
            )
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        values = [_checked_moment(name, kind, key, value) for key, value in zip(keys, values)]
    if pa.types.is_decimal(kind):
        values = [_checked_decimal(name, kind, key, value) for key, value in zip(keys, values)]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        # an empty list is no value, as a missing key is: ``$exists: false`` finds both
        values = [
            None if isinstance(value, (list, tuple)) and not value else value for value in values
        ]
    try:
        return pa.array(values, kind)
    except problems:
        pass
    for key, value in zip(keys, values):  # name the first value its type cannot hold
        try:
            pa.array([value], kind)
        except problems:
            raise PlanError(
                f"document {key!r}: metadata {name!r} is {value!r}, which its filter column "
                f"({kind}) cannot hold",
                field="metadatas",
                value=key,
            ) from None
    raise PlanError(f"metadata {name!r}: its values do not fit {kind}", field="metadatas")
