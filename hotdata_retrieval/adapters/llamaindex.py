"""A LlamaIndex vector store over any engine of the library (a document table). Needs
``llama-index-core`` (``pip install 'hotdata-retrieval[llamaindex]'``).

:class:`HotdataVectorStore` is a ``BasePydanticVectorStore`` kept in a
:class:`~hotdata_retrieval.documents.DocumentStore`: each node's text (BM25-indexed), its
embedding, its metadata with the node itself as LlamaIndex serialises it
(``node_to_metadata_dict``), and ``ref_doc_id`` plus the metadata keys a caller filters on as
typed columns. Query modes: ``default`` (nearest neighbours of the query embedding),
``text_search`` and ``sparse`` (BM25 on the query text), ``hybrid`` (the two fused: by
reciprocal rank fusion, or, when the query gives ``alpha``, by a min-max fusion whose vector
branch weighs ``alpha``, LlamaIndex's meaning: 1 is the vector search alone) and ``mmr``
(maximal marginal relevance over the nearest vectors the search returns).

:func:`make_search_tools` gives an agent's tools over any table as ``FunctionTool`` objects,
built from a :class:`~hotdata_retrieval.adapters.settings.SearchSettings` as the LangChain
tools and the MCP server are.

:class:`HotdataHybridRetriever` and :class:`HotdataBM25Retriever` are LlamaIndex retrievers
over such a store that need no index: each question is one statement (BM25 fused with the
nearest neighbours of the question's embedding, or BM25 alone), in place of a client-side
fusion of two retrievers (``QueryFusionRetriever``).

>>> from llama_index.core.schema import TextNode
>>> from llama_index.core.vector_stores.types import VectorStoreQuery
>>> from hotdata_retrieval.engines.local import LocalEngine
>>> store = HotdataVectorStore(LocalEngine(), "nodes")
>>> store.add([TextNode(id_="a", text="red fox", embedding=[1.0, 0.0]),
...            TextNode(id_="b", text="blue sky", embedding=[0.0, 1.0])])
['a', 'b']
>>> result = store.query(VectorStoreQuery(query_embedding=[0.9, 0.1], similarity_top_k=1))
>>> result.ids, [node.get_content() for node in result.nodes]
(['a'], ['red fox'])
>>> store.client.close()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
    from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle
    from llama_index.core.settings import Settings
    from llama_index.core.tools import FunctionTool
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
        VectorStoreQueryResult,
    )
    from llama_index.core.vector_stores.utils import (
        metadata_dict_to_node,
        node_to_metadata_dict,
    )
    from pydantic import PrivateAttr
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the LlamaIndex adapter needs llama-index-core: pip install 'hotdata-retrieval[llamaindex]'"
    ) from error

from hotdata_retrieval.adapters.envelope import EXPLANATION_KEY
from hotdata_retrieval.adapters.settings import SearchSettings
from hotdata_retrieval.documents import DocumentHit, DocumentStore, StoredDocument, as_list
from hotdata_retrieval.errors import PlanError, ToolError
from hotdata_retrieval.plan.values import check_positive_int

REF_DOC_ID = "ref_doc_id"
"""The filter column every node's source document id is kept in (``delete`` reads it)."""

_OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
    FilterOperator.ANY: "$any",
    FilterOperator.ALL: "$all",
    FilterOperator.CONTAINS: "$contains",
}
"""LlamaIndex's filter operators as the filter object's (``filter_objects``); ``is_empty``
is ``$exists: false``. The text-match operators (substrings) have no form in the filter
language and are refused."""

_MATCHES_MISSING = (FilterOperator.NE, FilterOperator.NIN)
"""Operators LlamaIndex's reference store (``build_metadata_filter_fn``) lets a node without
the key pass: ``!=`` and ``nin`` hold for a missing value."""

_TEXT_MODES = (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)


def _leaf(item: MetadataFilter, negated: bool, text_keys: frozenset[str]) -> dict[str, Any]:
    key = item.key
    if item.operator == FilterOperator.IS_EMPTY:  # no value, an empty list (stored NULL), ""
        missing: dict[str, Any] = {key: {"$exists": False}}
        return {"$or": [missing, {key: ""}]} if key.lower() in text_keys else missing
    operator = _OPERATORS.get(item.operator)
    if operator is None:
        supported = ", ".join([*(op.value for op in _OPERATORS), FilterOperator.IS_EMPTY.value])
        raise PlanError(
            f"filter operator {item.operator.value!r} (on {key!r}) has no form in the filter "
            f"language; these do: {supported}",
            field="filters",
            value=item.operator.value,
        )
    condition = {key: {operator: item.value}}
    if item.operator in _MATCHES_MISSING:
        return {"$or": [condition, {key: {"$exists": False}}]}
    if negated:  # under NOT a missing value must be a plain no, not SQL's unknown
        return {"$and": [{key: {"$exists": True}}, condition]}
    return condition


def filter_object(
    filters: MetadataFilters | None,
    text_keys: Sequence[str] = (),
    negated: bool = False,
) -> dict[str, Any] | None:
    """LlamaIndex ``MetadataFilters`` as a filter object (``filter_objects``), with the
    meaning of LlamaIndex's reference store (``build_metadata_filter_fn``): ``and``, ``or``,
    ``not`` (none of the filters holds), nested filters, a node without the key passing
    ``!=`` and ``nin`` only, and ``is_empty`` holding for no value, an empty list and, on the
    string columns ``text_keys``, an empty string.

    Raises:
        PlanError: an operator the filter language has no form for (``text_match``,
            ``text_match_insensitive``), naming it and those it has.
    """
    if filters is None or not filters.filters:
        return None
    negated = negated or filters.condition == FilterCondition.NOT
    texts = frozenset(key.lower() for key in text_keys)
    parts = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            nested = filter_object(item, tuple(texts), negated)
            if nested is not None:
                parts.append(nested)
        else:
            parts.append(_leaf(item, negated, texts))
    if filters.condition == FilterCondition.OR:
        return {"$or": parts}
    if filters.condition == FilterCondition.NOT:
        return {"$not": {"$or": parts}}
    return {"$and": parts}


class HotdataVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store in one table of ``engine`` (module docstring).

    Args:
        engine: an engine that keeps document tables (every engine of the library:
            ``engines.DOCUMENT_CAPABILITIES``).
        table: the table's bare name (created by the first add).
        filter_columns: the metadata keys queries filter on, with their Arrow types
            (``{"author": "string", "year": "int64"}``); ``ref_doc_id`` is always one. A
            filter on another key is a ``PlanError`` naming it.
        metric: ``cosine`` (default), ``l2`` or ``dot``; similarities are
            :meth:`~hotdata_retrieval.documents.DocumentStore.relevance`'s (cosine: the
            cosine similarity).
        vector_index: ``"hnsw"`` for an approximate index (default: exact search), on the
            engines that build one (local, PostgreSQL, Hotdata; another refuses it when the
            store is built, as it does a name that is no index kind; turbopuffer indexes its
            vectors itself).

    Raises:
        MissingCapabilityError: the engine lacks a capability a document table needs (each
            named, with why).
        PlanError: a bad name, type or metric; from ``query``, a mode it does not serve
            (naming it), a filter it cannot express, a bad top-k.
    """

    stores_text: bool = True
    flat_metadata: bool = False

    _store: DocumentStore = PrivateAttr()

    def __init__(
        self,
        engine: Any,
        table: str,
        *,
        filter_columns: dict[str, Any] | None = None,
        metric: str = "cosine",
        vector_index: str | None = None,
    ) -> None:
        super().__init__(stores_text=True)
        # the store refuses filter_columns that are not a mapping, naming them
        columns = (
            {REF_DOC_ID: "string", **(filter_columns or {})}
            if filter_columns is None or isinstance(filter_columns, Mapping)
            else filter_columns
        )
        self._store = DocumentStore(
            engine, table, filter_columns=columns, metric=metric, vector_index=vector_index
        )

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for the class."""
        return "HotdataVectorStore"

    @property
    def client(self) -> Any:
        """The engine."""
        return self._store.engine

    @property
    def store(self) -> DocumentStore:
        """The document table the nodes are kept in."""
        return self._store

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Write ``nodes`` (each with its embedding) by node id in one commit; returns the
        ids.

        Raises:
            PlanError: a node without an embedding, or metadata the store cannot keep.
        """
        texts, vectors, metadatas = [], [], []
        for node in nodes:
            if node.embedding is None:
                raise PlanError(
                    f"node {node.node_id!r} has no embedding: embed nodes before adding them "
                    "(an index's embed model does)",
                    field="nodes",
                    value=node.node_id,
                )
            texts.append(node.get_content(metadata_mode=MetadataMode.NONE))
            vectors.append(node.embedding)
            metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
            metadata[REF_DOC_ID] = node.ref_doc_id  # NULL, not LlamaIndex's "None", when absent
            metadatas.append(metadata)
        return self._store.add([node.node_id for node in nodes], texts, vectors, metadatas)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node of source document ``ref_doc_id`` (none is no error)."""
        self._store.delete(self._store.ids_matching({REF_DOC_ID: ref_doc_id}))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Remove the nodes with ``node_ids`` that ``filters`` keeps (either may be left
        out; with neither, nothing is removed)."""
        self._store.delete(self._ids(node_ids, filters))

    def clear(self) -> None:
        """Remove every node."""
        self._store.clear()

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes with ``node_ids`` that ``filters`` keeps, embeddings included."""
        documents = self._store.get(self._ids(node_ids, filters), include_vectors=True)
        return [self._node(document) for document in documents]

    def _filter_object(self, filters: MetadataFilters | None) -> dict[str, Any] | None:
        import pyarrow as pa

        text_keys = [
            name
            for name, kind in self._store.filter_columns.items()
            if pa.types.is_string(kind) or pa.types.is_large_string(kind)
        ]
        return filter_object(filters, text_keys)

    def _ids(self, node_ids: list[str] | None, filters: MetadataFilters | None) -> list[str]:
        condition = self._filter_object(filters)
        if condition is None:
            return [] if node_ids is None else as_list(node_ids, "node_ids")
        if node_ids is not None:
            wanted = as_list(node_ids, "node_ids")
            condition = {"$and": [condition, {self._store.id_column: {"$in": wanted}}]}
        return self._store.ids_matching(condition)

    @staticmethod
    def _node(document: StoredDocument) -> BaseNode:
        metadata = dict(document.metadata)
        metadata.pop(REF_DOC_ID, None)
        node = metadata_dict_to_node(metadata, text=document.text)
        if document.vector is not None:
            node.embedding = list(document.vector)
        return node

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Answer ``query`` in its mode (module docstring), restricted to its ``node_ids``
        and ``doc_ids`` and its ``filters``. An empty (or absent) ``node_ids`` or ``doc_ids``
        is no restriction, as in LlamaIndex's own stores: ``VectorStoreIndex`` passes
        ``node_ids=[]`` for a store that keeps the text.

        Raises:
            PlanError: a mode this store does not serve, a mode's missing input (a query
                embedding, a query text), a filter it cannot express.
        """
        condition = self._condition(query)
        k = query.similarity_top_k
        mode = query.mode
        if mode == VectorStoreQueryMode.DEFAULT:
            hits = self._store.nearest(self._embedding(query), k=k, filter=condition)
        elif mode in _TEXT_MODES:
            hits = self._store.text_search(self._text(query), k=k, filter=condition)
        elif mode == VectorStoreQueryMode.HYBRID:
            fusion = None if query.alpha is None else {"method": "min_max", "alpha": query.alpha}
            explain = kwargs.get("explain_scores", False)
            if not isinstance(explain, bool):
                raise PlanError(
                    f"explain_scores must be true or false, got {explain!r}",
                    field="explain_scores",
                    value=explain,
                )
            hits = self._store.hybrid_search(
                self._text(query),
                self._embedding(query),
                k=k
                if query.hybrid_top_k is None
                else check_positive_int(query.hybrid_top_k, label="hybrid_top_k"),
                filter=condition,
                fusion=fusion,
                explain_scores=explain,
            )
        elif mode == VectorStoreQueryMode.MMR:
            return self._mmr(query, condition, kwargs)
        else:
            served = ", ".join(
                m.value
                for m in (
                    VectorStoreQueryMode.DEFAULT,
                    *_TEXT_MODES,
                    VectorStoreQueryMode.HYBRID,
                    VectorStoreQueryMode.MMR,
                )
            )
            raise PlanError(
                f"query mode {mode.value!r} is not served by this store; it serves {served}",
                field="mode",
                value=mode.value,
            )
        return self._result(hits)

    def _condition(self, query: VectorStoreQuery) -> dict[str, Any] | None:
        # An empty node_ids or doc_ids restricts nothing: a VectorStoreIndex over a store
        # that keeps the text passes node_ids=[] (its index struct lists no node), and
        # LlamaIndex's own stores read the lists so (`if query.node_ids:`).
        parts = [part for part in (self._filter_object(query.filters),) if part is not None]
        if query.node_ids:
            parts.append({self._store.id_column: {"$in": list(query.node_ids)}})
        if query.doc_ids:
            parts.append({REF_DOC_ID: {"$in": list(query.doc_ids)}})
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"$and": parts}

    @staticmethod
    def _embedding(query: VectorStoreQuery) -> list[float]:
        if query.query_embedding is None:
            raise PlanError(
                f"query mode {query.mode.value!r} needs query_embedding", field="query_embedding"
            )
        return list(query.query_embedding)

    @staticmethod
    def _text(query: VectorStoreQuery) -> str:
        if query.query_str is None:
            raise PlanError(f"query mode {query.mode.value!r} needs query_str", field="query_str")
        return query.query_str

    def _result(self, hits: list[DocumentHit]) -> VectorStoreQueryResult:
        similarities = [
            self._store.relevance(hit.distance) if hit.distance is not None else hit.score
            for hit in hits
        ]
        nodes = []
        for hit in hits:
            node = self._node(hit.document)
            if hit.explanation is not None:
                if EXPLANATION_KEY in node.metadata:
                    raise PlanError(
                        f"node {hit.document.id!r} has metadata {EXPLANATION_KEY!r} of its "
                        "own, which explain_scores would replace; query without "
                        "explain_scores, or keep that metadata under another key",
                        field="explain_scores",
                        value=hit.document.id,
                    )
                node.metadata[EXPLANATION_KEY] = dict(hit.explanation)
            nodes.append(node)
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[float(value or 0.0) for value in similarities],
            ids=[hit.document.id for hit in hits],
        )

    def _mmr(
        self, query: VectorStoreQuery, condition: dict[str, Any] | None, options: dict[str, Any]
    ) -> VectorStoreQueryResult:
        """Maximal marginal relevance among ``mmr_prefetch_k`` (default 4 times top-k) nearest
        vectors, with the query's ``mmr_threshold`` or the call's (LlamaIndex's
        ``get_top_k_mmr_embeddings``)."""
        embedding = self._embedding(query)
        k = check_positive_int(query.similarity_top_k, label="k")
        prefetch = options.get("mmr_prefetch_k")
        fetch = 4 * k if prefetch is None else check_positive_int(prefetch, label="mmr_prefetch_k")
        threshold = query.mmr_threshold
        if threshold is None:  # as VectorIndexRetriever passes it (vector_store_kwargs)
            threshold = options.get("mmr_threshold")
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not 0.0 <= threshold <= 1.0  # NaN fails too
        ):
            raise PlanError(
                f"mmr_threshold must be a number between 0 and 1, got {threshold!r}",
                field="mmr_threshold",
                value=threshold,
            )
        hits = self._store.nearest(
            embedding, k=max(fetch, k), filter=condition, include_vectors=True
        )
        if not hits:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        vectors = [list(hit.document.vector or ()) for hit in hits]
        similarities, indexes = get_top_k_mmr_embeddings(
            embedding,
            vectors,
            similarity_top_k=k,
            embedding_ids=list(range(len(hits))),
            mmr_threshold=threshold,
        )
        chosen = [hits[index] for index in indexes]
        return VectorStoreQueryResult(
            nodes=[self._node(hit.document) for hit in chosen],
            similarities=[float(value) for value in similarities],
            ids=[hit.document.id for hit in chosen],
        )


class _StoreRetriever(BaseRetriever):
    """A retriever that asks ``vector_store`` one query per question, in ``mode``."""

    _mode = VectorStoreQueryMode.DEFAULT

    def __init__(
        self,
        vector_store: HotdataVectorStore,
        *,
        similarity_top_k: int = 4,
        filters: MetadataFilters | None = None,
        doc_ids: Sequence[str] | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        if not isinstance(vector_store, HotdataVectorStore):
            raise PlanError(
                f"vector_store must be a HotdataVectorStore, got {vector_store!r}",
                field="vector_store",
                value=vector_store,
            )
        if filters is not None and not isinstance(filters, MetadataFilters):
            raise PlanError(
                f"filters must be LlamaIndex MetadataFilters, got {filters!r}",
                field="filters",
                value=filters,
            )
        self._vector_store = vector_store
        self._similarity_top_k = check_positive_int(similarity_top_k, label="similarity_top_k")
        self._filters = filters
        self._doc_ids = None if doc_ids is None else as_list(doc_ids, "doc_ids")

    def _query(self, bundle: QueryBundle, embedding: list[float] | None) -> VectorStoreQuery:
        return VectorStoreQuery(
            query_str=bundle.query_str,
            query_embedding=embedding,
            similarity_top_k=self._similarity_top_k,
            mode=self._mode,
            filters=self._filters,
            doc_ids=self._doc_ids,
        )

    @staticmethod
    def _scored(result: VectorStoreQueryResult) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=node, score=score)
            for node, score in zip(result.nodes or [], result.similarities or [])
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._scored(self._vector_store.query(self._query(query_bundle, None)))


class HotdataBM25Retriever(_StoreRetriever):
    """The ``similarity_top_k`` nodes of ``vector_store`` whose text best matches the
    question by BM25, best first, each scored with its BM25 score (the engine's scale).

    Args:
        vector_store: the store the nodes are kept in.
        similarity_top_k: how many nodes (top-k).
        filters: LlamaIndex ``MetadataFilters`` over the store's filter columns.
        doc_ids: only the nodes of these source documents (empty: no restriction).

    Raises:
        PlanError: a bad top-k; from ``retrieve``, a filter the store cannot express.
    """

    _mode = VectorStoreQueryMode.TEXT_SEARCH


class HotdataHybridRetriever(_StoreRetriever):
    """The ``similarity_top_k`` nodes of ``vector_store`` best by BM25 on the question fused
    with nearness to its embedding, in one statement, best first, each scored with its fused
    score: reciprocal rank fusion (rank constant 60), or, with ``alpha``, a min-max fusion
    whose vector branch weighs ``alpha`` (LlamaIndex's meaning: 1 is the vector search
    alone; ``docs/fusion.md``).

    Args:
        vector_store: the store the nodes are kept in.
        embed_model: embeds the question (the model that embedded the nodes; default
            LlamaIndex's ``Settings.embed_model``). A question given with its embedding
            (``QueryBundle.embedding``) is not embedded again.
        similarity_top_k: how many nodes (top-k).
        alpha: the vector branch's weight in [0, 1] (default: reciprocal rank fusion).
        filters: LlamaIndex ``MetadataFilters`` over the store's filter columns, applied
            inside both branches.
        doc_ids: only the nodes of these source documents (empty: no restriction).

    Raises:
        PlanError: a bad top-k; from ``retrieve``, a bad ``alpha``, a filter the store
            cannot express, an embedding of another length than the nodes'.
    """

    _mode = VectorStoreQueryMode.HYBRID

    def __init__(
        self,
        vector_store: HotdataVectorStore,
        *,
        embed_model: BaseEmbedding | None = None,
        similarity_top_k: int = 4,
        alpha: float | None = None,
        filters: MetadataFilters | None = None,
        doc_ids: Sequence[str] | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(
            vector_store,
            similarity_top_k=similarity_top_k,
            filters=filters,
            doc_ids=doc_ids,
            callback_manager=callback_manager,
        )
        if alpha is not None and (isinstance(alpha, bool) or not isinstance(alpha, (int, float))):
            raise PlanError(
                f"alpha must be a number from 0 to 1, got {alpha!r}", field="alpha", value=alpha
            )
        self._embed_model = embed_model
        self._alpha = alpha

    def _model(self) -> BaseEmbedding:
        return self._embed_model if self._embed_model is not None else Settings.embed_model

    def _query(self, bundle: QueryBundle, embedding: list[float] | None) -> VectorStoreQuery:
        query = super()._query(bundle, embedding)
        query.alpha = self._alpha
        return query

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = query_bundle.embedding
        self._vector_store.store.check_query(query_bundle.query_str)  # before it is embedded
        if embedding is None:
            embedding = self._model().get_agg_embedding_from_queries(query_bundle.embedding_strs)
        return self._scored(self._vector_store.query(self._query(query_bundle, embedding)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = query_bundle.embedding
        self._vector_store.store.check_query(query_bundle.query_str)  # before it is embedded
        if embedding is None:
            embedding = await self._model().aget_agg_embedding_from_queries(
                query_bundle.embedding_strs
            )
        query = self._query(query_bundle, embedding)
        return self._scored(await self._vector_store.aquery(query))


# -- agent tools -------------------------------------------------------------------------------


def _function_tool(name: str, description: str, arguments: Any, call: Any) -> FunctionTool:
    """A ``FunctionTool`` whose function checks the call's arguments against ``arguments``
    (strict JSON types, no argument it does not list) and returns the envelope as JSON text.

    A refused call raises :class:`~hotdata_retrieval.errors.ToolError` with a one-line
    message: LlamaIndex's agents give an exception raised by a tool back to the model as the
    tool's output, marked as an error.
    """
    from pydantic import ValidationError

    from hotdata_retrieval.adapters.envelope import to_json

    def run(**kwargs: Any) -> str:
        try:
            checked = arguments.model_validate(kwargs)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}"
                for item in error.errors()
            )
            raise ToolError(f"invalid arguments: {problems}") from None
        return to_json(call(**{field: getattr(checked, field) for field in arguments.model_fields}))

    return FunctionTool.from_defaults(
        fn=run, name=name, description=description, fn_schema=arguments
    )


def make_search_tools(
    engine: Any, settings: SearchSettings | None = None, /, **options: Any
) -> list[FunctionTool]:
    """The agent's tools for one table as LlamaIndex ``FunctionTool`` objects: the same
    tools, names, descriptions, argument schemas and result envelopes as the LangChain tools
    and the MCP server, built from the same
    :class:`~hotdata_retrieval.adapters.settings.SearchSettings` through
    :class:`~hotdata_retrieval.adapters.toolkit.SearchToolkit` (text search, semantic search
    when it adds something and ``semantic`` is set, SQL unless ``sql=False`` or the engine
    refuses agent SQL). Each returns the envelope as JSON text.

    Args:
        engine: an engine (the contract: ``search``, ``sql``, ``indexes``, ``plan_search``).
        settings: the :class:`~hotdata_retrieval.adapters.settings.SearchSettings`.
        options: settings fields, in place of ``settings`` or over it
            (``make_search_tools(engine, table="docs", k=5)``).

    Raises:
        ToolError: a bad setting.
        TypeError: an option that is no setting.
        HotdataRetrievalError: the engine does not know the table.
    """
    from pydantic import ConfigDict, Field, create_model

    from hotdata_retrieval.adapters.toolkit import SearchToolkit

    kit = SearchToolkit(engine, settings, **options)
    strict = ConfigDict(extra="forbid", strict=True)
    tools: list[FunctionTool] = []
    searches: list[tuple[str, Any, Callable[[], str], Callable[..., dict[str, Any]]]] = [
        (kit.text_tool_name, kit.text_route, kit.describe_text_search, kit.search_text)
    ]
    if kit.settings.semantic and kit.offers_semantic_search:
        searches.append(
            (
                kit.semantic_tool_name,
                kit.semantic_route,
                kit.describe_semantic_search,
                kit.search_semantic,
            )
        )
    for name, route, describe, call in searches:
        if route is None:
            continue
        model = create_model(f"{name}_arguments", __config__=strict, **kit.argument_fields(route))
        tools.append(_function_tool(name, describe(), model, call))
    if kit.settings.sql and kit.offers_sql:
        longest = kit.input_limits.max_sql_characters
        model = create_model(
            f"{kit.sql_tool_name}_arguments",
            __config__=strict,
            sql=(str, Field(description=kit.sql_help, min_length=1, max_length=longest)),
        )
        tools.append(_function_tool(kit.sql_tool_name, kit.describe_sql(), model, kit.execute_sql))
    return tools
