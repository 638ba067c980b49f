"""LangChain tools and a retriever over any engine. Needs ``langchain-core``.

- :func:`make_search_tools`: the agent's tool set for one table — a text search that fuses
  underneath when the table allows, a semantic search when the table can be searched by
  meaning, and a SQL tool that runs agent-written SQL and returns the linter's findings as
  warnings beside the rows. Each returns ``(JSON text, envelope)`` (``content_and_artifact``).
- :func:`make_text_search_tool`, :func:`make_semantic_search_tool`, :func:`make_sql_tool`:
  one tool each.
- :class:`HotdataRetriever`: a ``BaseRetriever`` whose Documents carry the fused score and
  each branch's rank in their metadata.
- :class:`HotdataVectorStore`: a ``VectorStore`` over a
  :class:`~hotdata_retrieval.documents.DocumentStore` (add, delete, get by ids, the
  similarity searches with filters, maximal marginal relevance, BM25 and hybrid search).

A failed call — a bad ``k``, a query the engine rejects — comes back to the agent as an error
message (``ToolException`` with ``handle_tool_error``; argument errors with
``handle_validation_error``); it never ends the agent's run.

>>> import pyarrow as pa
>>> from hotdata_retrieval.engines.local import LocalEngine
>>> engine = LocalEngine()
>>> _ = engine.load_table("docs", pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]}),
...                       text_columns=["body"])
>>> [tool.name for tool in make_search_tools(engine, table="docs")]
['hotdata_search_text', 'hotdata_execute_sql']
>>> tool = make_search_tools(engine, table="docs")[0]
>>> import json
>>> json.loads(tool.invoke({"query": "fox"}))["rows"]  # doctest: +ELLIPSIS
[{'id': 1, 'body': 'red fox', 'score': ...}]
>>> engine.close()
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langchain_core.vectorstores import VectorStore
    from pydantic import (
        BaseModel,
        ConfigDict,
        Field,
        PrivateAttr,
        ValidationError,
        create_model,
        field_validator,
        model_validator,
    )
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "the LangChain adapter needs langchain-core: pip install 'hotdata-retrieval[langchain]'"
    ) from error

from hotdata_retrieval._json import as_text
from hotdata_retrieval.adapters.envelope import (
    EXPLANATION_KEY,
    HIGHLIGHTS_KEY,
    added_keys,
    check_not_shadowed,
    jsonable,
    to_json,
)
from hotdata_retrieval.adapters.settings import SearchSettings, setting_error, with_depth
from hotdata_retrieval.adapters.toolkit import SearchToolkit, ToolError
from hotdata_retrieval.documents import (
    DocumentHit,
    DocumentStore,
    StoredDocument,
    as_list,
    check_texts,
)
from hotdata_retrieval.engines.base import Engine, query_embedder
from hotdata_retrieval.engines.limits import InputLimits
from hotdata_retrieval.engines.results import SearchHit
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.indexes import TableIndexes
from hotdata_retrieval.plan.filters import And
from hotdata_retrieval.plan.search import DEFAULT_DEPTH, SearchPlan, debug_columns
from hotdata_retrieval.plan.steps import MAX_STEP_CANDIDATES
from hotdata_retrieval.plan.values import check_column_names, check_positive_int
from hotdata_retrieval.routing import SearchMode, SearchRequest, plan_search, read_filter


def _validation_message(error: ValidationError | Any) -> str:
    if not isinstance(error, ValidationError):
        return f"Error: invalid arguments: {error}"
    problems = [
        f"{'.'.join(str(part) for part in item['loc']) or 'arguments'}: {item['msg']}"
        for item in error.errors()
    ]
    return "Error: invalid arguments: " + "; ".join(problems)


def _tool_error_message(error: ToolException) -> str:
    return f"Error: {error}"


_NO_EXTRA_ARGUMENTS = ConfigDict(extra="forbid", strict=True)
"""An argument the schema does not list is refused, never dropped: a model that invents a
``filter`` must not get unfiltered rows back as a success. Types are strict, as JSON's are:
``k`` of ``"3"`` or ``true`` is refused, not read as 3 or 1 (``5.0`` is 5: JSON Schema's
integer)."""


def _search_arguments(toolkit: SearchToolkit, name: str, route: Any) -> type[BaseModel]:
    """A search tool's arguments on ``route``: the options the toolkit offers there
    (:meth:`~hotdata_retrieval.adapters.toolkit.SearchToolkit.argument_fields`, one per row of
    :data:`~hotdata_retrieval.adapters.settings.SEARCH_OPTIONS`); the toolkit reads the
    values."""
    return create_model(name, __config__=_NO_EXTRA_ARGUMENTS, **toolkit.argument_fields(route))


def _tool(
    toolkit: SearchToolkit,
    *,
    name: str,
    description: str,
    arguments: type[BaseModel],
    call: Callable[..., dict[str, Any]],
) -> StructuredTool:
    def run(**kwargs: Any) -> tuple[str, dict[str, Any]]:
        try:
            document = call(**kwargs)
        except ToolError as error:
            raise ToolException(str(error)) from error
        return to_json(document), document

    return StructuredTool.from_function(
        func=run,
        name=name,
        description=description,
        args_schema=arguments,
        infer_schema=False,
        response_format="content_and_artifact",
        handle_tool_error=_tool_error_message,
        handle_validation_error=_validation_message,
        metadata={"table": str(toolkit.table), "max_rows": toolkit.max_rows},
    )


def _toolkit(
    engine: Any,
    toolkit: SearchToolkit | None,
    settings: SearchSettings | None,
    options: dict[str, Any],
) -> SearchToolkit:
    if toolkit is not None:
        return toolkit
    return SearchToolkit(engine, settings, **options)


def make_text_search_tool(
    engine: Any = None,
    settings: SearchSettings | None = None,
    *,
    toolkit: SearchToolkit | None = None,
    **options: Any,
) -> StructuredTool:
    """The tool that finds rows whose text is relevant; fused when the table allows.

    Args:
        engine: the engine (or pass ``toolkit``).
        settings: the :class:`~hotdata_retrieval.adapters.settings.SearchSettings`.
        toolkit: a :class:`~hotdata_retrieval.adapters.toolkit.SearchToolkit` to share.
        options: settings fields, in place of ``settings`` or over it (``table`` is
            required without ``settings``).

    Raises:
        ToolError: the table has nothing to search by, or a bad option.
    """
    kit = _toolkit(engine, toolkit, settings, options)
    return _tool(
        kit,
        name=kit.text_tool_name,
        description=kit.describe_text_search(),
        arguments=_search_arguments(kit, "SearchTextArguments", kit.text_route),
        call=kit.search_text,
    )


def make_semantic_search_tool(
    engine: Any = None,
    settings: SearchSettings | None = None,
    *,
    toolkit: SearchToolkit | None = None,
    **options: Any,
) -> StructuredTool:
    """The tool that finds rows closest in meaning to the query.

    Raises:
        ToolError: the table cannot be searched by meaning, or a bad option.
    """
    kit = _toolkit(engine, toolkit, settings, options)
    return _tool(
        kit,
        name=kit.semantic_tool_name,
        description=kit.describe_semantic_search(),
        arguments=_search_arguments(kit, "SearchSemanticArguments", kit.semantic_route),
        call=kit.search_semantic,
    )


def make_sql_tool(
    engine: Any = None,
    settings: SearchSettings | None = None,
    *,
    toolkit: SearchToolkit | None = None,
    **options: Any,
) -> StructuredTool:
    """The tool that runs agent-written SQL, with the linter's findings as warnings."""
    kit = _toolkit(engine, toolkit, settings, options)
    longest = kit.input_limits.max_sql_characters
    arguments = create_model(
        "ExecuteSqlArguments",
        __config__=_NO_EXTRA_ARGUMENTS,
        sql=(str, Field(description=kit.sql_help, min_length=1, max_length=longest)),
    )
    return _tool(
        kit,
        name=kit.sql_tool_name,
        description=kit.describe_sql(),
        arguments=arguments,
        call=kit.execute_sql,
    )


def make_search_tools(
    engine: Any, settings: SearchSettings | None = None, /, **options: Any
) -> list[BaseTool]:
    """The agent's tools for one table: text search, semantic search, SQL.

    The text search is offered when the table has a searchable text column, and fuses word
    matching with meaning when the table has both and an embedder is at hand (routing
    ``auto``). The semantic search is offered when the table can be searched by meaning, the
    text search does not already answer by meaning alone and ``semantic`` is set. The SQL tool
    is offered unless ``sql=False`` or the engine refuses SQL written by a model
    (``agent_sql_refusal``: LanceDB, the Hotdata engine), when the search tools' descriptions
    say why there is none.

    Args:
        engine: an engine (the contract: ``search``, ``sql``, ``indexes``, ``plan_search``;
            :class:`~hotdata_retrieval.adapters.toolkit.SearchEngine` says what is optional).
        settings: what the tools offer
            (:class:`~hotdata_retrieval.adapters.settings.SearchSettings`: ``table``, ``k``,
            ``max_rows``, ``columns``, ``text_column``, ``key_column``, ``fusion``,
            ``embedder``, ``name_prefix``, ``semantic``, ``sql``, ``read_only``,
            ``sql_limits``, ``max_bytes``, ``input_limits``, ``descriptions``...).
        options: settings fields, in place of ``settings`` or over it
            (``make_search_tools(engine, table="docs", k=5)``).

    Raises:
        ToolError: a bad setting (``k``, ``max_rows``, ``max_bytes``, limits...).
        TypeError: an option that is no setting.
        HotdataRetrievalError: the engine does not know the table, or an option does not fit.
    """
    kit = SearchToolkit(engine, settings, **options)
    semantic, sql = kit.settings.semantic, kit.settings.sql
    tools: list[BaseTool] = []
    if kit.text_route is not None:
        tools.append(make_text_search_tool(toolkit=kit))
    if semantic and kit.offers_semantic_search:
        tools.append(make_semantic_search_tool(toolkit=kit))
    if sql and kit.offers_sql:
        tools.append(make_sql_tool(toolkit=kit))
    return tools


# -- retriever ------------------------------------------------------------------------------


class HotdataRetriever(BaseRetriever):
    """Documents whose text is relevant to the query, best first, from one table.

    Each Document's ``page_content`` is the searched text column (or ``content_column``),
    its ``id`` the row's key, and its ``metadata`` the key, the other columns (the searched
    one when it is not the content, and ``columns``), the ranking
    column under the engine's own name (``score``: the fused or relevance score, higher is
    better; ``_distance`` for a semantic search, lower is nearer), and each branch's rank and
    raw score (``text_rank``, ``text_score``, ``nearest_rank``, ``nearest_distance``, ...).

    Args:
        engine: an engine (the contract: ``search``, ``indexes``, ``plan_search``).
        settings: a :class:`~hotdata_retrieval.adapters.settings.SearchSettings` shared with
            the other doors: the fields below that are not given are read from it (``table``,
            ``k`` from its default ``k``, ``columns``, ``text_column``, ``vector_column``,
            ``key_column``, ``fusion``, ``embedder``, ``input_limits``, ``diversity``,
            ``candidates``, ``explain_scores``), and its ``filter``
            holds beside this retriever's own.
        table: the table to search, as text or a
            :class:`~hotdata_retrieval.plan.names.TableName` (required without ``settings``).
        k: Documents returned (also accepted by ``invoke(query, k=...)``).
        mode: ``auto`` (default: fused when the table allows), ``text``, ``semantic``,
            ``nearest`` or ``hybrid``.
        text_column: the text column to search.
        content_column: the column that becomes ``page_content`` (default: the searched one).
        columns: more columns to carry in ``metadata``: a list of names, read by the
            settings' rule (:func:`~hotdata_retrieval.plan.values.check_column_names`).
        vector_column: the vector column a search by meaning uses (default: the route's).
        key_column: the table's unique key (default: what the engine reports).
        filter: applied before ranking: a predicate, a filter object such as ``{"lang":
            "en", "rating": {"$gte": 4}}`` (:func:`~hotdata_retrieval.plan.filter_objects.
            filter_from_object`), or filter text such as ``"lang = 'en'"``.
        fusion: how a hybrid search fuses: a method's name (``"rrf"``, ``"min_max"``,
            ``"dbsf"``), ``{"method": "dbsf", "alpha": 0.4}`` or a
            :class:`~hotdata_retrieval.routing.FusionChoice` (default: reciprocal rank fusion).
        embedder: embeds queries on this side (default: the engine's embedder for the table,
            as its ``plan_search`` picks it).
        input_limits: the longest query a call may carry, checked before anything reads it
            (default :class:`~hotdata_retrieval.engines.limits.InputLimits`: 4,096
            characters, 128 words).
        diversity: maximal marginal relevance's lambda (0 to 1) choosing the Documents among
            ``candidates`` (a nearest or hybrid search; :class:`~hotdata_retrieval.plan.
            steps.Diversity`); ``None``: the plain ranking.
        candidates: rows diversity chooses among (default 4 times ``k``, at most 1,000).
        explain_scores: each Document of a fused search also carries ``explanation`` in its
            metadata: what its score is made of, each branch's rank, raw score, normalized
            value and contribution (:meth:`~hotdata_retrieval.engines.results.SearchHit.
            explanation`); default: the settings', else ``False``.
        highlight: each Document also carries ``highlights`` in its metadata, the matched
            words' offsets and snippets (default: the settings', else ``False``).
        reranker: re-scores the first ``top_n`` rows against the query (a
            :class:`~hotdata_retrieval.embed.reranking.Reranker`; default: the settings',
            else none); ``top_n``: how many (default 4 times ``k``, at most 1,000).
        queries: other wordings of the query, searched with it and fused into one ranking
            in one statement (:class:`~hotdata_retrieval.routing.SearchRequest`).

    Raises:
        InputLimitError: a query over ``input_limits`` (from ``invoke``).
        PlanError: a setting of the wrong type (``columns="x"``: a list is wanted), naming
            it and its value; a ``k`` that is no whole number of at least 1 (``"3"`` and
            ``True`` are not), a bad filter or fusion.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, strict=True)

    engine: Any
    settings: SearchSettings | None = None
    table: str | None = None
    k: int = Field(default=4, ge=1, strict=True)
    mode: str = SearchMode.AUTO.value
    text_column: str | None = None
    content_column: str | None = None
    columns: list[str] | None = None
    vector_column: str | None = None
    key_column: str | None = None
    filter: Any = None
    fusion: Any = None
    embedder: Any = None
    input_limits: InputLimits = Field(default_factory=InputLimits)
    diversity: float | None = None
    candidates: int | None = None
    explain_scores: bool = Field(default=False, strict=True)
    queries: list[str] | None = None
    highlight: bool = Field(default=False, strict=True)
    reranker: Any = None
    top_n: int | None = None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise setting_error(error, data, door="HotdataRetriever") from None

    @field_validator("table", mode="before")
    @classmethod
    def _read_table(cls, value: Any) -> str | None:
        """``table`` by the settings' rule (a name of 1-3 parts, as text or a
        :class:`~hotdata_retrieval.plan.names.TableName`), kept as its text."""
        return None if value is None else str(SearchSettings(table=value).table)

    @field_validator("columns", mode="before")
    @classmethod
    def _read_columns(cls, value: Any) -> list[str] | None:
        """``columns`` by the settings' one rule (a list of names, never one text)."""
        names = check_column_names(value, label="columns")
        return None if names is None else list(names)

    @model_validator(mode="after")
    def _read_settings(self) -> HotdataRetriever:
        """Fill the fields not given from :attr:`settings`; refuse a retriever with no
        table."""
        settings = self.settings
        if settings is None:
            if self.table is None:
                raise PlanError("give the table to search, or settings holding it", field="table")
            return self
        given = self.model_fields_set
        inherited = {
            "table": str(settings.table),
            "k": settings.default_k,
            "columns": None if settings.columns is None else list(settings.columns),
            "text_column": settings.text_column,
            "vector_column": settings.vector_column,
            "key_column": settings.key_column,
            "fusion": settings.fusion,
            "embedder": settings.embedder,
            "input_limits": settings.input_limits,
            "diversity": settings.diversity,
            "candidates": settings.candidates,
            "explain_scores": settings.explain_scores,
            "highlight": settings.highlight,
            "reranker": settings.reranker,
            "top_n": settings.top_n,
        }
        for name, value in inherited.items():
            if name not in given:
                setattr(self, name, value)
        if settings.filter is not None:
            own = read_filter(self.filter)
            self.filter = settings.filter if own is None else And(operands=(settings.filter, own))
        return self

    _indexes: TableIndexes | None = PrivateAttr(default=None)

    def _table_indexes(self) -> TableIndexes:
        if self._indexes is None:
            indexes = self.engine.indexes(self.table)
            if self.key_column is not None:
                indexes = attrs.evolve(indexes, key_column=self.key_column)
            self._indexes = indexes
        return self._indexes

    def _searched_column(self, indexes: TableIndexes) -> str:
        if self.text_column is not None:
            return self.text_column
        if indexes.bm25_columns:
            return indexes.bm25_columns[0]
        for vector in indexes.vectors:
            if vector.source_column is not None:
                return vector.source_column
        if indexes.key_column is None:
            raise ToolError(
                f"table {indexes.table} has no text to search: give text_column (it has no "
                "BM25 index, no engine-embedded vectors and no key)"
            )
        return indexes.key_column

    def _content_column(self, indexes: TableIndexes) -> str:
        if self.content_column is not None:
            return self.content_column
        return self._searched_column(indexes)

    def plan(self, query: str, k: int | None = None) -> SearchPlan:
        """The plan one call runs (useful to see its SQL with ``to_sql``): routed by the
        engine's ``plan_search`` (the engine contract), embedding with ``embedder`` when one is
        given here; for an engine without ``plan_search``, by
        :func:`~hotdata_retrieval.routing.plan_search`.

        Raises:
            InputLimitError: ``query`` is over :attr:`input_limits`.
        """
        if isinstance(query, str):
            self.input_limits.check_query(query)
        indexes = self._table_indexes()
        content = self._content_column(indexes)
        searched = self._searched_column(indexes)
        columns = [
            name
            for name in dict.fromkeys(
                [indexes.key_column, content, searched, *(self.columns or ())]
            )
            if name is not None
        ]
        request = SearchRequest(
            table=indexes.table,
            query=query,
            mode=self.mode,
            limit=self.k if k is None else k,
            filter=self.filter,
            columns=columns,
            text_column=self.text_column,
            vector_column=None if self.mode == SearchMode.TEXT.value else self.vector_column,
            key_column=indexes.key_column,
            fusion=self.fusion,
            allow_empty_query=True,  # a query with no word retrieves nothing by words
            diversity=self.diversity,
            candidates=self.candidates,
            explain_scores=self.explain_scores,
            queries=self.queries,
            highlight=self.highlight or None,
            rerank=self.reranker,
            top_n=self.top_n,
        )
        limit = request.limit
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > DEFAULT_DEPTH:
            # as the tools and the stores do: a fusion that names no depth ranks k
            # candidates per branch, rather than refusing a k past the default depth
            deeper = with_depth(request.fusion, limit)
            if deeper is not request.fusion:
                routed = self._route(indexes, attrs.evolve(request, limit=DEFAULT_DEPTH))
                if routed.fusion is not None:
                    request = attrs.evolve(request, fusion=deeper)
        return self._route(indexes, request)

    def _route(self, indexes: TableIndexes, request: SearchRequest) -> SearchPlan:
        if isinstance(self.engine, Engine):
            return self.engine.plan_search(request, embed_query=query_embedder(self.embedder))
        embedder = self.embedder
        if embedder is None and callable(getattr(self.engine, "embedder_for", None)):
            embedder = self.engine.embedder_for(indexes.table)
        return plan_search(indexes, request, embed_query=query_embedder(embedder))

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        plan = self.plan(query, k)
        content = self._content_column(self._table_indexes())
        keys = [plan.result_columns[0], *added_keys(plan)]
        for name, branch in zip(plan.branch_names, plan.branches):
            keys.extend(debug_columns(name, branch))
        metadata = [column for column in plan.projection if column != content]
        check_not_shadowed(metadata, keys, where="this retriever adds to each Document's metadata")
        result = self.engine.search(plan)
        return [self._document(plan, content, hit) for hit in result]

    @staticmethod
    def _document(plan: SearchPlan, content: str, hit: SearchHit) -> Document:
        metadata: dict[str, Any] = {
            column: value for column, value in hit.columns.items() if column != content
        }
        metadata[plan.result_columns[0]] = hit.ranking_value
        for name, branch in zip(plan.branch_names, plan.branches):
            rank_column, raw_column = debug_columns(name, branch)
            metadata[rank_column] = hit.branches[name].rank
            metadata[raw_column] = hit.branches[name].raw_score
        if hit.explained:
            metadata[EXPLANATION_KEY] = hit.explanation()
        if hit.highlights:
            metadata[HIGHLIGHTS_KEY] = dict(hit.highlights)
        text = hit.columns.get(content)
        return Document(
            id=None if hit.key is None else str(hit.key),
            page_content=as_text(text),  # a binary column in base64, as every door shows it
            metadata=jsonable(metadata),
        )


def _langchain_document(document: StoredDocument) -> Document:
    return Document(id=document.id, page_content=document.text, metadata=dict(document.metadata))


class HotdataVectorStore(VectorStore):
    """A LangChain ``VectorStore`` kept in one table of an engine (a
    :class:`~hotdata_retrieval.documents.DocumentStore`: key, text with a BM25 index,
    metadata as JSON, vector, and the metadata keys searches filter on as typed columns).

    Every method translates to the document store; the async methods are LangChain's
    defaults (the sync method in an executor). Distances are the store's metric's (cosine
    by default: ``1 - cos``); relevance scores are
    :meth:`~hotdata_retrieval.documents.DocumentStore.relevance`'s.

    Args:
        engine: an engine that keeps document tables (every engine of the library:
            ``engines.DOCUMENT_CAPABILITIES``).
        table: the table's bare name (created by the first add).
        embedding: embeds the texts and the queries.
        filter_columns: the metadata keys searches filter on, with their Arrow types
            (``{"source": "string", "year": "int64"}``); a filter on another key is a
            ``PlanError`` naming it.
        metric: ``cosine`` (default), ``l2`` or ``dot``.
        vector_index: ``"hnsw"`` for an approximate index (default: exact search), on the
            engines that build one (local, PostgreSQL, Hotdata; another refuses it when the
            store is built, as it does a name that is no index kind; turbopuffer indexes its
            vectors itself).

    Filters (``filter=`` on every search) are filter objects (``{"source": "a", "year":
    {"$gte": 2020}}``), filter text (``"year >= 2020"``) or predicates.

    Raises:
        MissingCapabilityError: the engine lacks a capability a document table needs (each
            named, with why).
        PlanError: a bad name, type, metric, ``k``, filter or fusion (from the methods).
    """

    def __init__(
        self,
        engine: Any,
        table: str,
        embedding: Embeddings,
        *,
        filter_columns: dict[str, Any] | None = None,
        metric: str = "cosine",
        vector_index: str | None = None,
    ) -> None:
        self.store = DocumentStore(
            engine,
            table,
            filter_columns=filter_columns,
            metric=metric,
            vector_index=vector_index,
        )
        self.embedding = embedding

    @property
    def embeddings(self) -> Embeddings:
        """The embeddings model the store embeds with."""
        return self.embedding

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed ``texts`` and write them by id in one commit (an id the store holds is
        replaced); returns the ids (a new UUID4 for each id not given)."""
        texts = as_list(texts, "texts")
        check_texts(texts)  # before the embedder reads them
        vectors = self.embedding.embed_documents(texts) if texts else []
        return self.store.add(ids, texts, vectors, metadatas)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Remove the documents with ``ids`` (every document when ``ids`` is ``None``);
        an unknown id is no error. Returns ``True``."""
        if ids is None:
            self.store.clear()
        else:
            self.store.delete(ids)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with ``ids``, in that order; unknown ids are left out."""
        return [_langchain_document(document) for document in self.store.get(ids)]

    def similarity_search(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest the query's embedding, nearest first."""
        return [document for document, _ in self.similarity_search_with_score(query, k, filter)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest documents with their distances (lower is nearer).

        Raises:
            PlanError: a query a search by words would refuse (a NUL byte, a lone
                surrogate), before it is embedded.
            InputLimitError: a query over the store's ``input_limits``.
        """
        vector = self.embedding.embed_query(self.store.check_query(query))
        return self._with_distances(self.store.nearest(vector, k=k, filter=filter))

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest ``embedding``, nearest first."""
        hits = self.store.nearest(embedding, k=k, filter=filter)
        return [document for document, _ in self._with_distances(hits)]

    def similarity_search_by_vector_with_score(
        self, embedding: list[float], k: int = 4, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents nearest ``embedding`` with their distances."""
        return self._with_distances(self.store.nearest(embedding, k=k, filter=filter))

    @staticmethod
    def _with_distances(hits: list[DocumentHit]) -> list[tuple[Document, float]]:
        return [(_langchain_document(hit.document), float(hit.distance or 0.0)) for hit in hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return self.store.relevance

    def text_search(self, query: str, k: int = 4, filter: Any = None) -> list[Document]:
        """The ``k`` documents whose text best matches ``query`` by BM25, best first."""
        return [
            _langchain_document(hit.document)
            for hit in self.store.text_search(query, k=k, filter=filter)
        ]

    def hybrid_search(
        self, query: str, k: int = 4, filter: Any = None, fusion: Any = None
    ) -> list[Document]:
        """The ``k`` best documents by BM25 fused with nearness to the query's embedding
        (``fusion``: ``"rrf"``, default; ``"min_max"``; ``"dbsf"``; or ``{"method": ...,
        <option>: ...}``, ``docs/fusion.md``)."""
        vector = self.embedding.embed_query(self.store.check_query(query))
        hits = self.store.hybrid_search(query, vector, k=k, filter=filter, fusion=fusion)
        return [_langchain_document(hit.document) for hit in hits]

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents chosen among the ``fetch_k`` nearest for relevance and diversity
        (maximal marginal relevance, ``lambda_mult`` 1 for relevance only, 0 for diversity
        only): the plan's diversity step (:class:`~hotdata_retrieval.plan.steps.Diversity`),
        on every engine, over at most 1,000 candidates."""
        vector = self.embedding.embed_query(self.store.check_query(query))
        return self.max_marginal_relevance_search_by_vector(
            vector, k, fetch_k, lambda_mult, filter=filter
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """As :meth:`max_marginal_relevance_search`, from a query vector.

        Raises:
            PlanError: a ``k`` or ``fetch_k`` that is no whole number of at least 1, or
                over 1,000 (naming it); a ``lambda_mult`` that is no number in [0, 1].
        """
        k = check_positive_int(k, label="k")
        fetch_k = check_positive_int(fetch_k, label="fetch_k")
        if (
            isinstance(lambda_mult, bool)
            or not isinstance(lambda_mult, (int, float))
            or not 0.0 <= lambda_mult <= 1.0
        ):
            raise PlanError(
                f"lambda_mult must be a number between 0 and 1, got {lambda_mult!r}",
                field="lambda_mult",
                value=lambda_mult,
            )
        candidates = max(fetch_k, k)
        if candidates > MAX_STEP_CANDIDATES:  # worded in this method's own parameters
            name, value = ("fetch_k", fetch_k) if fetch_k >= k else ("k", k)
            raise PlanError(
                f"{name} must be at most {MAX_STEP_CANDIDATES}, got {value}: maximal marginal "
                f"relevance chooses among at most {MAX_STEP_CANDIDATES} nearest documents",
                field=name,
                value=value,
            )
        hits = self.store.nearest(
            embedding, k=k, filter=filter, diversity=lambda_mult, candidates=candidates
        )
        return [_langchain_document(hit.document) for hit in hits]

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        engine: Any = None,
        table: str = "documents",
        **kwargs: Any,
    ) -> HotdataVectorStore:
        """A store on ``engine`` (default: a new in-memory local engine) in ``table``,
        holding ``texts``; ``kwargs`` are the constructor's."""
        if engine is None:
            from hotdata_retrieval.engines.local import LocalEngine

            engine = LocalEngine()
        store = cls(engine, table, embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store
