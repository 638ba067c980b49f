"""The LanceDB engine: the same plans and the same ranking semantics, with no SQL.

LanceDB (the ``lancedb`` extra) has no SQL interface, only per-query ``where`` filters
(``shared/reference/local-engines.md`` §F), so this engine runs a plan branch by branch
through LanceDB's own searches and fuses on the client with the library's reference fusion
(:func:`hotdata_retrieval.fusion.reference_fusion`) — the semantics every SQL engine's
compiled statement reproduces:

- a **text** branch is LanceDB's native full-text search (``query_type="fts"``, BM25, its
  ``_score`` higher-is-better) of the column's terms column ``<column>__terms``, which
  ``load_table`` writes beside it: each row's terms by the library's analysis
  (:func:`hotdata_retrieval.analysis.indexed_text`: NFKC, case folding, tantivy's tokenizer,
  stop words and stemmer), indexed with LanceDB's own analysis off (whitespace tokenizer, no
  lower-casing, stemming, stop words, ASCII folding or token length limit): with LanceDB's
  default analysis (lancedb 0.40), ``istanbul`` does not find ``İstanbul`` and tokens longer
  than 40 characters are dropped (``FTS(max_token_length=40)``). The query is the text's
  terms by the same analysis, passed as a ``MatchQuery`` and so never parsed as syntax
  (typed quotes would otherwise make a phrase query). LanceDB finds the rows; their score is
  the documented BM25 (:func:`hotdata_retrieval.analysis.bm25_score`, tantivy's formula, as
  every SQL store computes it), computed on the client from each row's terms and the table's
  statistics (:meth:`LancedbEngine._scored_matches`): LanceDB's own ``_score`` is in float32
  and counts only rows holding a term as documents;
- a **nearest** branch is an exact scan (``bypass_vector_index``) by the plan's metric:
  ``cosine``, ``l2`` (LanceDB's ``l2`` is the squared Euclidean distance, as the Hotdata
  engine's) or ``dot``, whose LanceDB distance ``1 - a·b`` (Float32: a product below about
  6e-8 is lost) only picks the candidates, each then reported as ``-(a·b)`` computed from its
  vector, the Hotdata engine's ``negative_dot_product``. Where LanceDB's Float32 products of
  the query can overflow (the table's largest norm times the query's past half of Float32's
  largest number, :func:`_products_fit`; ``inf - inf`` is NaN there, a row LanceDB leaves
  out), the rows are read by a plain scan and ranked on the client by those products
  instead. A zero stored vector is no candidate under
  ``cosine`` here (LanceDB leaves it out); the Hotdata engine gives it 1.0;
- the plan's **filter** is translated — never pasted — into the ``where`` text LanceDB reads
  (DataFusion SQL, written by the Hotdata dialect's compiler from the predicate tree: quoted
  identifiers, escaped literals, an empty ``IN`` list as ``FALSE``), and applied *before*
  each branch's bound (``prefilter=True``), as in every compiled statement;
- each branch is cut to its depth (the page for a single branch) with rows tied on the raw
  score kept by key: the engine fetches past the cut until the row after it scores
  differently, then orders by score and key itself;
- a **fusion** ranks each branch's rows (competition ranks: tied rows share one) and fuses
  them with the reference fusion of the plan's method, ordered by fused score then key.

``SearchResult.sql`` holds the queries as JSON (what ran, for the record). ``sql(text)``
raises: LanceDB runs no SQL.

A load is atomic with its text indexes. LanceDB commits the rows and then each full-text index
as versions of the table, one after the other, and has no rename to build a table under
another name and swap it in (``rename_table`` "is not supported in LanceDB OSS", lancedb
0.40); so the rows' version names the text columns it must have indexes on, and the engine
reads a table at its latest *complete* version: every named column indexed. A load that stops
between its commits leaves the previous table searchable as it was (or, for a new table, no
table), and the next load writes over it (``tests/test_store_load_faults.py`` kills a load
before each of its commits). A change of a document table's rows (``upsert_rows``,
``delete_rows``) is written the same way, the table's new rows whole as one version and its
indexes after, so it is atomic with its text index too.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from hotdata_retrieval._words import counted
from hotdata_retrieval.analysis import (
    TERMS_SUFFIX,
    analyze_text,
    bm25_score,
    indexed_text,
    terms_column,
)
from hotdata_retrieval.compile.filter_text import filter_sql
from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError
from hotdata_retrieval.engines._repeated_keys import key_in, positive_zero
from hotdata_retrieval.engines._vector_norms import (
    OutsideNorms,
    check_cosine_search,
    dot_products_fit,
    largest_norm,
    outside_norms,
    recorded_norms,
)
from hotdata_retrieval.engines.base import RoutesByIndexes
from hotdata_retrieval.engines.checks import (
    arrow_column_facts,
    arrow_column_kinds,
    arrow_element_kinds,
    arrow_value_kind,
    check_columns,
    check_cosine_norms,
    check_filter_values,
    check_key_column,
    check_keys_kept,
    check_no_nul,
    check_no_null_type,
    check_reserved_columns,
    check_temporal_values_kept,
    check_values_held,
    check_written_vectors,
    checked_keys,
    column_names,
    missing_table_error,
    null_vectors_as_lists,
    rows_table,
    table_load,
    with_typed_values,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.results import (
    SearchResult,
    executed_plan,
    fill_page_scores,
    formula_page,
    result_from_candidates,
    search_result,
)
from hotdata_retrieval.engines.store import (
    arrow_type_of_text,
    arrow_type_text,
    as_loaded,
    vector_columns_of,
    with_terms_column,
)
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.fusion import fill_bounds, ordered_rows, rank_branch, reference_fusion
from hotdata_retrieval.indexes import TableIndexes, VectorIndex, reported_key
from hotdata_retrieval.plan.filters import Predicate
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    Bm25Search,
    Branch,
    BranchRanking,
    DistanceMetric,
    NearestNeighborSearch,
    SearchPlan,
    debug_columns,
)
from hotdata_retrieval.routing import LOCAL_ROUTING, RoutingPolicy

if TYPE_CHECKING:
    import pyarrow as pa

_KEY_METADATA = b"hdq.key_column"
_METRIC_METADATA = b"hdq.vector_metric"
_MODEL_METADATA = b"hdq.vector_model"
_TEXT_METADATA = b"hdq.text_columns"
"""The table's text columns, as a JSON list: the full-text indexes a version must have to be
read (:func:`_complete`)."""
_STATISTICS_METADATA = b"hdq.text_statistics"
"""Each text column's corpus statistics, as a JSON object: the column's name to ``[rows with
text, their terms in all]`` (NULL is no document), written with every version of the rows
(:meth:`LancedbEngine._write`), so the mean length of the documented BM25 is the table's."""
_NORMS_METADATA = b"hdq.vector_norms"
"""Each vector column's rows a cosine search cannot rank, as a JSON object of the column's
name to :meth:`~hotdata_retrieval.engines._vector_norms.OutsideNorms.to_text`, computed from
every row of each version :meth:`LancedbEngine._write` commits."""
_LARGEST_NORMS_METADATA = b"hdq.vector_largest_norms"
"""Each vector column's largest norm (float64, of the Float32 components; 0 with no vector),
as a JSON object of the column's name to it, computed from every row of each version
:meth:`LancedbEngine._write` commits: whether LanceDB's Float32 dot products of a query can
overflow (:func:`_products_fit`)."""
_TYPES_METADATA = b"hdq.loaded_types"
"""Each vector column's Arrow type as loaded, as a JSON object of the column's name to
:func:`~hotdata_retrieval.engines.store.arrow_type_text`: the engine stores vectors as the
fixed-size float32 lists LanceDB searches, and reads them back as the list type they were
loaded with (:func:`~hotdata_retrieval.engines.store.as_loaded`)."""
_NAME = "lancedb"


def lancedb_filter(predicate: Predicate) -> str:
    """``predicate`` as the ``where`` text LanceDB reads: DataFusion SQL, written by the
    Hotdata dialect's compiler (identifiers quoted where needed, literals escaped, an empty
    ``IN`` list the constant it stands for: :func:`~hotdata_retrieval.compile.filter_text.
    filter_sql`). Its filter values are typed first (``with_typed_values``): LanceDB refuses
    to convert a literal to a column's type where SQL engines convert it (``year > '2018'``,
    ``id = 2.5`` on an integer column, ``i8 <= 300`` on an int8 one), and the library compares
    an integer column with a float exactly (``engines/_integer_literals.py``).

    >>> from hotdata_retrieval.plan.filters import Comparison, InList
    >>> lancedb_filter(Comparison(column="order", operator=">", value=1)
    ...                & InList(column="lang", values=[]))
    '"order" > 1 AND false'
    """
    return filter_sql(predicate)


@attrs.frozen
class _Ranked:
    """One branch's rows, best first (ties by key), cut to its bound."""

    keys: list[Any]
    raw: list[float]
    rows: dict[Any, dict[str, Any]]
    query: dict[str, Any]


OLD_VERSIONS_KEPT_SECONDS = 60.0
"""How long, in seconds, a LanceDB table's superseded versions stay on disk after a write by
default (:class:`LancedbEngine`'s ``old_versions_kept_seconds``)."""

MAX_OLD_VERSIONS_KEPT_SECONDS = 365 * 24 * 3600.0
"""The longest window :class:`LancedbEngine` takes (a year); ``None`` keeps every version.
LanceDB's own bound is far above it (a window past about 2.7 million years overflows its
duration type and makes every write fail)."""


class LancedbEngine(RoutesByIndexes):
    """LanceDB behind the engine contract (module docstring).

    Args:
        path: the database directory (created if missing).
        embedder: embeds query text for ``plan_search`` routes that need a vector.
        old_versions_kept_seconds: after each write (``load_table``, ``upsert_rows``,
            ``delete_rows``) the table's versions older than this many seconds are removed
            from disk (LanceDB's ``optimize(cleanup_older_than=...)``); every write is a new
            whole version, so without it each change of a document table keeps another copy
            of the table. The latest version is never removed, and the window keeps the
            versions a search or a write in another process may still be reading (LanceDB
            warns that a reader of a removed version fails). Default
            :data:`OLD_VERSIONS_KEPT_SECONDS` (60), at most
            :data:`MAX_OLD_VERSIONS_KEPT_SECONDS` (a year); 0 keeps only the latest, for one
            writer and no search running beside a write (a search in another thread of the
            same process may be reading a removed version); ``None`` keeps every version.

    Raises:
        MissingExtraError: the ``lancedb`` extra is not installed.
        EngineError: the directory cannot be opened.
        ValueError: ``old_versions_kept_seconds`` not a number of seconds from 0 to a year.
    """

    routing_policy: ClassVar[RoutingPolicy] = LOCAL_ROUTING
    engine_name: ClassVar[str] = _NAME
    agent_sql_refusal: ClassVar[str] = "LanceDB runs no SQL"
    """Why the agent tools offer no SQL tool on LanceDB (:meth:`sql` always fails)."""
    default_catalog: ClassVar[str] = "default"
    default_schema: ClassVar[str] = "public"
    timestamp_unit: ClassVar[str] = "ns"
    """The finest Arrow time unit LanceDB keeps a timestamp in: its files hold the Arrow type
    loaded, nanoseconds included, and its upserts match them
    (:func:`~hotdata_retrieval.engines.checks.check_key_column`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Any = None,
        old_versions_kept_seconds: float | None = OLD_VERSIONS_KEPT_SECONDS,
    ) -> None:
        require_extra("lancedb", needed_by="the LanceDB engine")
        import lancedb

        if old_versions_kept_seconds is not None and (
            isinstance(old_versions_kept_seconds, bool)
            or not isinstance(old_versions_kept_seconds, numbers.Real)
            or not 0 <= float(old_versions_kept_seconds) <= MAX_OLD_VERSIONS_KEPT_SECONDS
        ):
            raise ValueError(
                "old_versions_kept_seconds must be a number of seconds from 0 to "
                f"{MAX_OLD_VERSIONS_KEPT_SECONDS:,.0f} (a year), or None to keep every "
                f"version; got {old_versions_kept_seconds!r}"
            )
        if old_versions_kept_seconds is not None:
            old_versions_kept_seconds = float(old_versions_kept_seconds)
        self.path = Path(path)
        self.embedder = embedder
        self.old_versions_kept_seconds = old_versions_kept_seconds
        try:
            self._database = lancedb.connect(str(self.path))
        except Exception as error:
            raise EngineError(f"cannot open LanceDB database {str(self.path)!r}: {error}") from None

    def close(self) -> None:
        """Nothing to release (LanceDB opens files per query)."""

    def __enter__(self) -> LancedbEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- tables ----------------------------------------------------------------------------

    def table_name(self, name: str | TableName) -> TableName:
        """``name`` completed with the engine's catalog and schema."""
        if isinstance(name, TableName):
            return name
        return TableName.parse(
            name, default_catalog=self.default_catalog, default_schema=self.default_schema
        )

    def _table(self, name: str | TableName) -> Any:
        """``name`` opened at its latest complete version (:func:`_complete`): a load that
        stopped before its text indexes were built leaves a version no search reads, and the
        one before it serves; a table none of whose versions is complete is not found.

        Raises:
            EngineError: no such table, or none of its versions is complete.
        """
        table = self.table_name(name)
        if (table.catalog, table.schema) != (self.default_catalog, self.default_schema):
            raise EngineError(f"table '{table}' not found: LanceDB tables have one-part names")
        if table.name not in self._table_names():
            raise missing_table_error(table, self.tables, where=" in the LanceDB database")
        try:
            opened = self._database.open_table(table.name)
            if _complete(opened):
                return opened
            versions = sorted((entry["version"] for entry in opened.list_versions()), reverse=True)
            for version in versions:
                if version < opened.version:
                    opened.checkout(version)
                    if _complete(opened):
                        return opened
        except Exception as error:
            raise EngineError(f"lancedb: table '{table}' cannot be opened: {error}") from None
        raise EngineError(
            f"table '{table}' not found in the LanceDB database: its load stopped before its "
            "text indexes were built; load it again"
        )

    def _table_names(self) -> list[str]:
        names: list[str] = []
        token = None
        while True:
            page = self._database.list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    def indexes(self, table: str | TableName) -> TableIndexes:
        """The table's full-text indexed columns and its vector columns (plain: the caller
        embeds queries), and the key recorded when it was loaded.

        Raises:
            EngineError: no such table.
        """
        opened = self._table(table)
        schema = opened.schema
        metadata = schema.metadata or {}
        metric = metadata.get(_METRIC_METADATA, b"cosine").decode()
        text = tuple(
            column.removesuffix(TERMS_SUFFIX)
            for column in _text_indexed(opened)
            if column.endswith(TERMS_SUFFIX)
        )
        return TableIndexes(
            table=self.table_name(table),
            bm25_columns=text,
            vectors=tuple(
                VectorIndex(column=name, metric=metric) for name in _vector_fields(schema)
            ),
            key_column=reported_key(
                metadata[_KEY_METADATA].decode() if _KEY_METADATA in metadata else None,
                schema.names,
            ),
        )

    def embedder_for(self, table: str | TableName) -> Any:
        """The engine's embedder (given at construction), else the installed embedder of the
        model the load recorded for ``table``'s vectors (as ``hdq search`` reads it), else
        ``None``.

        Raises:
            EngineError: no such table (when no embedder was given).
        """
        if self.embedder is not None:
            return self.embedder
        return self._recorded_embedder(self.vector_model(table))

    def vector_model(self, table: str | TableName) -> str | None:
        """The name of the embedder that made ``table``'s vectors, if the library did."""
        metadata = self._table(table).schema.metadata or {}
        model = metadata.get(_MODEL_METADATA)
        return None if model is None else model.decode()

    def sql(self, text: str) -> pa.Table:
        """LanceDB runs no SQL.

        Raises:
            EngineError: always.
        """
        raise EngineError(
            "LanceDB has no SQL interface: search with plans (search(plan)); "
            "its filters are translated per query",
            sql=text,
        )

    def load_table(
        self,
        name: str,
        data: pa.Table,
        *,
        key_column: str | None = "id",
        text_columns: Sequence[str] = (),
        vector_metric: str = "cosine",
        vector_model: str | None = None,
    ) -> TableIndexes:
        """Store ``data`` as table ``name`` (replacing any previous one), each column of lists
        of floats as a fixed-size vector column, with LanceDB's full-text index on each of
        ``text_columns``; ``vector_model`` names the embedder that made the vectors, if the
        library embedded them.

        The rows are one new version of the table and each text index another (LanceDB
        commits each as a version); the rows' version names its text columns
        (``hdq.text_columns`` in the schema's metadata), and no search reads a version until
        all of them are indexed: until then, and for ever if the load stops (killed, or
        failing), searches read the previous complete version, or find no table if there is
        none (module docstring).

        Raises:
            EngineError: a missing or non-text column, a duplicated or NULL key, vectors of
                different lengths, LanceDB's own refusal.
        """
        import pyarrow as pa

        from hotdata_retrieval.engines.checks import loaded_vector_dimensions

        data = rows_table(data)
        table = self.table_name(name)
        if (table.catalog, table.schema) != (self.default_catalog, self.default_schema):
            raise EngineError(f"table '{table}': LanceDB tables have one-part names")
        columns = column_names(data.schema)
        for column in columns:
            if "." in column or "`" in column:
                raise EngineError(
                    f"column {column!r}: LanceDB reads a dot in a column name as a path into "
                    "a nested field and a backquote as quoting (lancedb 0.40), so a column's "
                    "name must hold neither; rename it"
                )
        data = data.rename_columns(columns)
        key = None if key_column is None else normalize_identifier(key_column, label="key column")
        if key is not None:
            if key not in columns:
                raise EngineError(f"key column '{key}' not found; columns: {', '.join(columns)}")
            keys = data.column(key)
            check_key_column(keys, key, loading=True, timestamp_unit=self.timestamp_unit)
            # -0.0 is the key 0.0: LanceDB's own lookups (an upsert's) tell their bits apart
            data = data.set_column(columns.index(key), key, positive_zero(keys))
        texts = [normalize_identifier(column, label="text column") for column in text_columns]
        for column in texts:
            if column not in columns or not pa.types.is_string(data.schema.field(column).type):
                raise EngineError(f"text column '{column}' is not a text column of the table")
            data, _ = with_terms_column(data, column, "LanceDB")
        if texts or vector_columns_of(data):
            check_reserved_columns(columns)
        check_no_null_type(data)
        check_no_nul(data)
        check_temporal_values_kept(
            data, timestamp_unit=self.timestamp_unit, store="the LanceDB engine"
        )
        metric = DistanceMetric.parse(vector_metric).value
        loaded = {
            column: arrow_type_text(data.schema.field(column).type)
            for column in vector_columns_of(data)
        }
        for column in vector_columns_of(data):
            size = loaded_vector_dimensions(data, column)
            check_cosine_norms(data, column, metric)
            vectors = pa.array(data.column(column).to_pylist(), pa.list_(pa.float32(), size))
            data = data.set_column(data.schema.get_field_index(column), column, vectors)
        metadata = {
            _METRIC_METADATA: metric.encode(),
            _TEXT_METADATA: json.dumps(texts).encode(),
            _TYPES_METADATA: json.dumps(loaded).encode(),
        }
        if key is not None:
            metadata[_KEY_METADATA] = key.encode()
        if vector_model:
            metadata[_MODEL_METADATA] = vector_model.encode()
        self._write(table.name, data.replace_schema_metadata(metadata), texts)
        return self.indexes(table)

    def _write(self, name: str, data: pa.Table, texts: Sequence[str]) -> None:
        """Commit ``data`` (its schema's metadata naming ``texts``) as the new version of table
        ``name``, then each text column's full-text index as a version after it: until the
        last is built, searches read the version before (module docstring)."""
        statistics = {column: _corpus_of(data.column(terms_column(column))) for column in texts}
        metadata = dict(data.schema.metadata or {})
        metadata[_STATISTICS_METADATA] = json.dumps(statistics).encode()
        key = metadata.get(_KEY_METADATA)
        metric = metadata.get(_METRIC_METADATA, b"cosine").decode()
        norms = {
            column: recorded_norms(data, column, key.decode() if key else None, metric).to_text()
            for column in _vector_fields(data.schema)
        }
        metadata[_NORMS_METADATA] = json.dumps(norms).encode()
        largest = {
            column: largest_norm(data.column(column)) for column in _vector_fields(data.schema)
        }
        metadata[_LARGEST_NORMS_METADATA] = json.dumps(largest).encode()
        data = data.replace_schema_metadata(metadata)
        try:
            # LanceDB (0.40) takes a NULL vector of a fixed-size list column of 10 or more
            # floats for one of the wrong length and refuses it ("variable length vectors");
            # "null" keeps it NULL. Every other bad vector (another length, NaN) was refused
            # before (vector_dimensions), so nothing else is changed.
            opened = self._database.create_table(
                name, data, mode="overwrite", on_bad_vectors="null"
            )
            for column in texts:
                opened.create_index(terms_column(column), config=_text_analysis(), replace=True)
        except Exception as error:
            raise EngineError(f"lancedb: {error}") from None
        if self.old_versions_kept_seconds is not None:
            import warnings

            try:
                with warnings.catch_warnings():
                    # a window of 0 is the caller's stated choice (constructor docstring)
                    warnings.simplefilter("ignore", UserWarning)
                    opened.optimize(
                        cleanup_older_than=timedelta(seconds=self.old_versions_kept_seconds)
                    )
            except Exception as error:
                raise EngineError(
                    f"lancedb: table '{name}' was written, but its older versions could not "
                    f"be removed: {error}"
                ) from None

    def _kept_rows(self, opened: Any, key: str, keys: Sequence[Any] | pa.Array) -> pa.Table:
        """The rows of ``opened`` (at the version searches read) whose key is not one of
        ``keys`` (Python values, or an Arrow array of the key column's type: an upsert's,
        whose nanoseconds Python's values would not hold), in their order, with the table's
        schema and its metadata."""
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            current = opened.to_arrow()
        except Exception as error:
            raise EngineError(f"lancedb: {error}") from None
        kind = current.schema.field(key).type
        given = keys if isinstance(keys, pa.Array) else pa.array(list(keys), kind)
        named = key_in(current.column(key), given)
        kept = current.filter(pc.invert(named))
        return pa.Table.from_arrays(kept.columns, schema=opened.schema)

    # -- rows read and changed by key -----------------------------------------------------

    @property
    def tables(self) -> dict[str, TableName]:
        """Every table of the database, by name."""
        return {name: self.table_name(name) for name in self._table_names()}

    def _user_columns(self, opened: Any, columns: Sequence[str] | None) -> list[str]:
        """``columns`` (default: every column but the terms columns ``load_table`` writes
        beside the text columns), checked."""
        names = list(opened.schema.names)
        indexed = {terms_column(column) for column in self.indexes(opened.name).bm25_columns}
        if columns is None:
            return [name for name in names if name not in indexed]
        unknown = [column for column in columns if column not in names or column in indexed]
        if unknown:
            raise EngineError(
                f"column '{unknown[0]}' not found in table '{opened.name}'; columns: "
                f"{', '.join(name for name in names if name not in indexed)}"
            )
        return list(columns)

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of ``table`` as an Arrow table (``columns`` of them, in that order;
        default every column but the terms columns).

        Raises:
            EngineError: no such table, or a column it does not have.
        """
        opened = self._table(table)
        wanted = self._user_columns(opened, columns)
        try:
            data = opened.to_arrow()
        except Exception as error:
            raise EngineError(f"lancedb: {error}") from None
        return _as_loaded(opened.schema, data.select(wanted))

    def _key_column(self, opened: Any) -> str:
        key = self.indexes(opened.name).key_column
        if key is None:
            raise EngineError(
                f"table '{opened.name}' has no key column recorded: load it with key_column= "
                "to change or read its rows by key"
            )
        return key

    def _checked_keys(self, opened: Any, keys: Any) -> list[Any]:
        """The distinct ``keys`` as values of the table's key column, by its Arrow type
        (:func:`~hotdata_retrieval.engines.checks.checked_keys`).

        Raises:
            EngineError: no key column recorded; a key of another kind than the column's,
                NULL or NaN.
        """
        key = self._key_column(opened)
        kind = opened.schema.field(key).type
        return checked_keys(keys, arrow_value_kind(kind), key, str(kind), kind)

    def _key_filter(self, opened: Any, keys: Sequence[Any]) -> str:
        """The ``where`` text keeping the rows of ``keys``."""
        from hotdata_retrieval.plan.filters import InList

        return lancedb_filter(InList(column=self._key_column(opened), values=list(keys)))

    def read_rows(
        self, table: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows of ``table`` keyed by ``keys`` (``columns`` of them, as
        :meth:`read_table`), in no set order; an unknown key is left out.

        Raises:
            EngineError: no such table, no key column recorded, a column it does not have.
        """
        opened = self._table(table)
        distinct = self._checked_keys(opened, keys)
        wanted = self._user_columns(opened, columns)
        if not distinct:
            return _as_loaded(opened.schema, opened.schema.empty_table().select(wanted))
        where = self._key_filter(opened, distinct)
        try:
            found: pa.Table = (
                opened.search().where(where).select(wanted).limit(len(distinct)).to_arrow()
            )
        except Exception as error:
            raise EngineError(f"lancedb: {error}") from None
        return _as_loaded(opened.schema, found.select(wanted))

    def upsert_rows(self, name: str, rows: pa.Table, *, create: Any = None) -> TableIndexes:
        """Write ``rows`` (Arrow: the key and any of the table's columns, a missing one NULL)
        into table ``name`` by key, replacing the rows whose key it holds, each text column's
        terms written beside it: the table's rows it keeps and ``rows`` are committed as one
        new version and each full-text index is built again after it, which searches wait
        for (module docstring), so a change stopped anywhere leaves the old rows or the new
        ones, each searched by its own index. A missing table is loaded from ``create`` (a
        :class:`~hotdata_retrieval.engines.local.TableLoad`).

        Raises:
            EngineError: no such table (and no ``create``) or no key column recorded; a
                column the table lacks, a NULL or repeated key, a vector of another length
                than the column's, LanceDB's own refusal; a ``create`` with embedded columns
                or a vector index (LanceDB's searches here are exact).
        """
        import pyarrow as pa

        rows = rows_table(rows)
        create = table_load(create)
        check_no_nul(rows)
        if self.table_name(name).name not in self._table_names():
            if create is None:
                raise EngineError(
                    f"table '{self.table_name(name)}' not found in the LanceDB database; load "
                    "it first (load_table) or pass create="
                )
            if tuple(create.embed_columns) or create.vector_index is not None:
                raise EngineError(
                    "the LanceDB engine embeds no column and builds no vector index here: give "
                    "the vectors, with vector_index=None (its searches are exact)"
                )
            return self.load_table(
                create.name,
                create.data,
                key_column=create.key_column,
                text_columns=tuple(create.text_columns),
                vector_metric=create.vector_metric,
            )
        opened = self._table(name)
        indexes = self.indexes(name)
        key = self._key_column(opened)
        columns = column_names(rows.schema)
        rows = rows.rename_columns(columns)
        allowed = self._user_columns(opened, None)
        unknown = [column for column in columns if column not in allowed]
        if unknown or len(set(columns)) != len(columns):
            raise EngineError(
                f"column '{(unknown or columns)[0]}' is not a column of table "
                f"'{indexes.table}' or is given twice; its columns: {', '.join(allowed)}"
            )
        if key not in columns:
            raise EngineError(f"the rows have no key column '{key}'")
        keys = rows.column(key)
        check_key_column(keys, key, timestamp_unit=self.timestamp_unit)
        check_keys_kept(keys, opened.schema.field(key).type, key, str(indexes.table))
        held = {field.name: field.type for field in opened.schema}
        check_values_held(rows, held, str(indexes.table))
        check_temporal_values_kept(
            rows, timestamp_unit=self.timestamp_unit, store="the LanceDB engine"
        )
        rows = rows.set_column(columns.index(key), key, positive_zero(keys))  # as at load
        if not rows.num_rows:
            return indexes
        for column in indexes.bm25_columns:
            if column in columns:
                rows, _ = with_terms_column(rows, column, "LanceDB")
        schema = opened.schema
        rows = null_vectors_as_lists(
            rows, [field.name for field in schema if getattr(field.type, "list_size", None)]
        )
        arrays = []
        for field in schema:
            if field.name in rows.column_names:
                values = rows.column(field.name)
                size = getattr(field.type, "list_size", None)
                if size is not None:
                    check_written_vectors(rows, field.name, size, indexes.table)
                    if indexes.vectors:
                        check_cosine_norms(rows, field.name, indexes.vectors[0].metric)
                try:
                    if pa.types.is_temporal(field.type) and pa.types.is_temporal(values.type):
                        # by Arrow: Python's datetime.time and datetime hold no nanoseconds
                        arrays.append(values.cast(field.type))
                    else:
                        arrays.append(pa.array(values.to_pylist(), field.type))
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as error:
                    raise EngineError(
                        f"column '{field.name}' of table '{indexes.table}' ({field.type}) "
                        f"cannot hold the rows' values: {error}"
                    ) from None
            else:
                arrays.append(pa.nulls(rows.num_rows, field.type))
        data = pa.Table.from_arrays(arrays, schema=schema)
        kept = self._kept_rows(opened, key, data.column(key).combine_chunks())
        self._write(opened.name, pa.concat_tables([kept, data]), indexes.bm25_columns)
        return indexes

    def delete_rows(self, name: str, keys: Sequence[Any]) -> int:
        """Remove table ``name``'s rows keyed by ``keys``: the rows it keeps committed as one
        new version, then each full-text index built again, as :meth:`upsert_rows`; returns
        how many there were (an unknown key is no error).

        Raises:
            EngineError: no such table or no key column recorded; a key of another kind than
                the key column's (:func:`~hotdata_retrieval.engines.checks.checked_keys`),
                before anything is deleted; LanceDB's own refusal.
        """
        opened = self._table(name)
        distinct = self._checked_keys(opened, keys)
        key = self._key_column(opened)
        if not distinct:
            return 0
        kept = self._kept_rows(opened, key, distinct)
        removed = opened.count_rows() - kept.num_rows
        if removed:
            self._write(opened.name, kept, self.indexes(name).bm25_columns)
        return int(removed)

    # -- searches --------------------------------------------------------------------------

    def _check_cosine_search(self, plan: SearchPlan, table: TableName, opened: Any) -> None:
        """Refuse a cosine search of a vector column of ``table`` that holds a row a cosine
        search cannot rank (:func:`~hotdata_retrieval.engines._vector_norms.
        check_cosine_search`), as the version's metadata records it; a version an earlier
        release wrote records none: its rows are read, unless it was loaded for cosine.

        Raises:
            EngineError: naming the table, the column and the row's key.
        """
        metadata = opened.schema.metadata or {}
        metric = metadata.get(_METRIC_METADATA, b"cosine").decode()
        recorded = metadata.get(_NORMS_METADATA)
        texts = json.loads(recorded) if recorded is not None else None

        def record(column: str) -> OutsideNorms | None:
            if texts is not None and column not in texts:
                return None
            if texts is not None:
                found = OutsideNorms.from_text(texts[column])
                if found.known:
                    return found
            elif metric == DistanceMetric.COSINE.value:
                return None
            key = self.indexes(table).key_column
            read = self.read_table(table, [column] if key is None else [key, column])
            return outside_norms(read, column, key)

        check_cosine_search(plan, table, record, metric)

    def _check(self, plan: SearchPlan, table: TableName, opened: Any) -> None:
        check_columns(plan, table, opened.schema.names, arrow_column_kinds(opened.schema))
        check_filter_values(
            plan.filter,
            arrow_column_kinds(opened.schema),
            arrow_element_kinds(opened.schema),
        )
        self._check_cosine_search(plan, table, opened)
        text_indexed = set(self.indexes(table).bm25_columns)
        for branch in plan.branches:
            if isinstance(branch, Bm25Search):
                if branch.column not in text_indexed:
                    raise EngineError(
                        f"column '{branch.column}' of table '{table}' has no full-text "
                        f"index on LanceDB; load the table with text_columns=['{branch.column}']"
                    )
            elif isinstance(branch, NearestNeighborSearch):
                size = getattr(opened.schema.field(branch.column).type, "list_size", None)
                if size is not None and size != len(branch.query_vector):
                    raise PlanError(
                        f"query vector has {counted(len(branch.query_vector), 'dimension')}; "
                        "column "
                        f"'{branch.column}' holds {size}",
                        field="query_vector",
                        value=len(branch.query_vector),
                    )
            else:
                raise UnsupportedOnDialectError("engine-embedded semantic search", _NAME)

    def _branch(
        self, opened: Any, plan: SearchPlan, branch: Branch, bound: int, columns: list[str]
    ) -> _Ranked:
        """The branch's best ``bound`` rows, ties kept by key (module docstring)."""
        where = None
        if plan.filter is not None:
            typed = with_typed_values(
                plan.filter,
                arrow_column_kinds(opened.schema),
                arrow_column_facts(opened.schema),
                fit_integers=True,
            )
            where = lancedb_filter(typed)
        key = plan.key_column
        if isinstance(branch, Bm25Search):
            # the library's terms, as a match query on the terms column: no character of the
            # user's text is query syntax (typed quotes would otherwise make a phrase query)
            text = indexed_text(branch.query_text)
            query: dict[str, Any] = {"fts": text, "fts_columns": branch.column}
            if not text:  # an empty branch: nothing to ask LanceDB
                return _Ranked(keys=[], raw=[], rows={}, query=query)
            raw_name, sign, shift = "_score", -1.0, 0.0
        else:
            assert isinstance(branch, NearestNeighborSearch)
            metric = branch.metric
            query = {
                "vector_column_name": branch.column,
                "distance_type": metric.value,
                "exact": True,
            }
            raw_name, sign, shift = "_distance", 1.0, 0.0
        if where is not None:
            query["where"] = where

        def fetch(
            count: int,
            *,
            filtered: bool = True,
            selected: Sequence[str] | None = None,
            arrow: bool = False,
        ) -> Any:
            from lancedb.query import FullTextOperator, MatchQuery

            if isinstance(branch, Bm25Search):
                # any term matches (OR), each exactly: no fuzziness, prefix or boost
                match = MatchQuery(
                    text,
                    terms_column(branch.column),
                    boost=1.0,
                    fuzziness=0,
                    max_expansions=50,
                    operator=FullTextOperator.OR,
                    prefix_length=0,
                    document_granularity=None,
                )
                search = opened.search(match, query_type="fts")
            else:
                search = (
                    opened.search(list(branch.query_vector), vector_column_name=branch.column)
                    .distance_type(branch.metric.value)
                    .bypass_vector_index()
                )
            if where is not None and filtered:
                search = search.where(where, prefilter=True)
            try:
                chosen = search.select([*(columns if selected is None else selected), raw_name])
                limited = chosen.limit(min(count, _MOST_ROWS_ASKED))
                if arrow:
                    return limited.to_arrow()
                rows: list[dict[str, Any]] = limited.to_list()
            except Exception as error:
                raise EngineError(f"lancedb: {error}", sql=json.dumps(query)) from None
            return rows

        if isinstance(branch, Bm25Search):
            rows = self._scored_matches(opened, branch, fetch, where is not None, columns)
        else:
            # under dot, LanceDB's 1 - a·b in Float32 loses every product below about 6e-8
            # to 1.0: the candidates (all tied at the cut included) are fetched with their
            # vectors and their products computed again (_negative_dot_products)
            dot = branch.metric is DistanceMetric.DOT
            wanted = [*columns, branch.column] if dot and branch.column not in columns else None
            if dot and not _products_fit(opened, branch):
                rows = _scanned_rows(opened, branch, where, wanted or columns)
            else:
                count = bound
                rows = fetch(count, selected=wanted)
                while len(rows) == count and rows[bound - 1][raw_name] == rows[-1][raw_name]:
                    count *= 2
                    rows = fetch(count, selected=wanted)
            if dot:
                _negative_dot_products(rows, branch, raw_name, drop=wanted is not None)
        # Rows of a table without a key are told apart by their place in LanceDB's answer.
        scored = [
            (position if key is None else row[key], float(row[raw_name]) + shift, row)
            for position, row in enumerate(rows)
        ]
        scored.sort(key=lambda item: (sign * item[1], item[0]))
        if plan.fusion is None and plan.tie_breakers:
            order = [(raw_name, sign < 0), *_tie_breaking(plan), (_PLACE, False)]
            places = ordered_rows(
                [{**item[2], _PLACE: place} for place, item in enumerate(scored)], ranking=order
            )
            scored = [scored[row[_PLACE]] for row in places]
        kept = scored[:bound]
        query["limit"] = bound
        return _Ranked(
            keys=[item[0] for item in kept],
            raw=[item[1] for item in kept],
            rows={item[0]: item[2] for item in kept},
            query=query,
        )

    def _scored_matches(
        self,
        opened: Any,
        branch: Bm25Search,
        fetch: Callable[..., Any],
        filtered: bool,
        columns: Sequence[str],
    ) -> list[dict[str, Any]]:
        """Every row matching a text branch's terms (and the plan's filter), its ``_score``
        the documented BM25 (:func:`~hotdata_retrieval.analysis.bm25_score`), not LanceDB's:
        LanceDB's is in float32 and counts only rows with at least one term as documents
        (measured with lancedb 0.40: an empty text or a text of stop words is no document
        there, while the formula counts every row with text). ``tf`` and the row's length
        come from its terms column, ``df`` from the rows of the whole table holding each
        query term (a second, unfiltered fetch when the plan has a filter), ``N`` and the
        mean length from the statistics the table's version records
        (:data:`_STATISTICS_METADATA`). Every match is fetched, so the cut is the formula's;
        the terms are counted by Arrow (counting them in Python took most of the time)."""
        terms_name = terms_column(branch.column)
        total = int(opened.count_rows())
        if not total:
            return []
        query = analyze_text(branch.query_text)
        found = fetch(total, selected=list(dict.fromkeys([*columns, terms_name])), arrow=True)
        distinct = sorted(set(query))
        counts, lengths = _term_counts(found.column(terms_name), distinct)
        if filtered:
            whole = fetch(total, filtered=False, selected=[terms_name], arrow=True)
            held = _term_counts(whole.column(terms_name), distinct)[0]
        else:
            held = counts
        frequencies = {term: int((held[term] > 0).sum()) for term in distinct}
        documents, length = _corpus_statistics(opened, branch.column)
        average = length / documents if documents else 1.0
        rows: list[dict[str, Any]] = found.drop_columns([terms_name]).to_pylist()
        for place, row in enumerate(rows):
            row_counts = {term: int(counts[term][place]) for term in distinct}
            row["_score"] = bm25_score(
                query, row_counts, int(lengths[place]), frequencies, documents, average
            )
        return rows

    def search(self, plan: SearchPlan) -> SearchResult:
        """Run ``plan`` branch by branch in LanceDB and fuse on the client (module docstring).

        Raises:
            EngineError: a missing table, column or full-text index, or LanceDB's own error.
            UnsupportedOnDialectError: an engine-embedded semantic branch, or a plan over
                several tables.
        """
        if plan.group_by is not None or plan.after is not None or plan.facets:
            # groups, cursor pages and facets are taken in the library from the ranked candidates
            return result_from_candidates(plan, self.search(plan.candidates()))
        table = plan.single_table
        if table is None:
            raise UnsupportedOnDialectError(
                "a search over several tables (a union, or fused branches over different "
                "tables): LanceDB runs each branch on one table",
                _NAME,
            )
        opened = self._table(table)
        self._check(plan, table, opened)
        executed = executed_plan(plan)
        results = set(executed.result_columns)
        breakers = [b.column for b in executed.tie_breakers if b.column not in results]
        formula_columns = () if executed.formula is None else executed.formula.columns
        # the vectors page_scores computes distances from come with every branch's rows
        columns = [
            name
            for name in dict.fromkeys(
                [
                    plan.key_column,
                    *executed.projection,
                    *breakers,
                    *executed.page_score_columns,
                    *formula_columns,
                ]
            )
            if name is not None
        ]
        fusion = plan.fusion
        if fusion is None:
            branch = plan.branches[0]
            ranked = self._branch(
                opened, executed, branch, executed.limit + executed.offset, columns
            )
            rows = [
                {
                    **{name: ranked.rows[key][name] for name in executed.projection},
                    branch.raw_score_column: raw,
                }
                for key, raw in zip(ranked.keys, ranked.raw)
            ][executed.offset :]
            statement = json.dumps({"queries": [ranked.query]})
            return search_result(plan, executed, rows, statement)
        branches = [
            self._branch(opened, executed, branch, plan.depth, columns)
            for branch in executed.branches
        ]
        lists, ranks, scores = [], [], []
        for branch, ranked in zip(fusion.branches, branches):
            keys, branch_ranks = rank_branch(
                zip(ranked.keys, ranked.raw),
                higher_is_better=branch.higher_is_better,
                row_numbers=fusion.ranking is BranchRanking.ROW_NUMBER,
            )
            lists.append(keys)
            ranks.append(branch_ranks)
            raw_by_key = dict(zip(ranked.keys, ranked.raw))
            scores.append([raw_by_key[key] for key in keys])
        # With tie-breakers the page is cut after they order the fused rows.
        broken = bool(plan.tie_breakers)
        rescored = executed.formula is not None  # min_score applies to the formula's score
        fused = reference_fusion(
            attrs.evolve(fusion, min_score=None) if rescored else fusion,
            lists,
            ranks=ranks,
            scores=scores,
            limit=None if broken or rescored else executed.limit,
            offset=0 if broken or rescored else executed.offset,
        )
        rows = []
        stored_rows = []
        for hit in fused:
            stored = next(ranked.rows[hit.key] for ranked in branches if hit.key in ranked.rows)
            row = {
                name: stored[name] for name in (*executed.projection, *breakers, *formula_columns)
            }
            row["score"] = hit.score
            for name, branch, ranked, rank in zip(
                plan.branch_names, fusion.branches, branches, hit.ranks
            ):
                rank_column, raw_column = debug_columns(name, branch)
                row[rank_column] = rank
                row[raw_column] = None if rank is None else ranked.raw[ranked.keys.index(hit.key)]
            rows.append(row)
            stored_rows.append(stored)
        # before the tie-breakers order the rows: they may read a completed distance
        fill_page_scores(executed, rows, stored_rows)
        fill_bounds(executed, rows, scores)
        if rescored:
            rows = formula_page(executed, rows)
        elif broken:
            key = plan.key_column
            assert key is not None  # a fusion's plan always has a key
            order = [("score", True), *_tie_breaking(executed), (key, False)]
            rows = ordered_rows(rows, ranking=order)[
                executed.offset : executed.offset + executed.limit
            ]
        statement = json.dumps(
            {"queries": [ranked.query for ranked in branches], "fusion": fusion.describe()}
        )
        return search_result(plan, executed, rows, statement)


def _text_analysis() -> Any:
    """The full-text index configuration of a terms column: LanceDB's own analysis off
    (whitespace tokenizer, no lower-casing, stemming, stop words, ASCII folding or token
    length limit), since the column holds the library's terms (module docstring)."""
    from lancedb.index import FTS

    return FTS(
        base_tokenizer="whitespace",
        lower_case=False,
        stem=False,
        remove_stop_words=False,
        ascii_folding=False,
        max_token_length=None,
    )


def _term_counts(terms: Any, distinct: Sequence[str]) -> tuple[dict[str, Any], Any]:
    """Each row's count of each of the ``distinct`` terms (a NumPy array per term) and each
    row's number of terms, from a terms column (an Arrow array of each row's terms joined by
    spaces, NULL for a NULL text), computed by Arrow."""
    import numpy as np
    import pyarrow.compute as pc

    column = terms.combine_chunks() if hasattr(terms, "combine_chunks") else terms
    split = pc.utf8_split_whitespace(pc.fill_null(column, ""))
    empty = np.asarray(pc.equal(pc.utf8_length(pc.fill_null(column, "")), 0))
    lengths = np.where(empty, 0, np.asarray(pc.list_value_length(split)))
    flat = pc.list_flatten(split)
    parents = np.asarray(pc.list_parent_indices(split))
    counts = {
        term: np.bincount(parents[np.asarray(pc.equal(flat, term))], minlength=len(column))
        for term in distinct
    }
    return counts, lengths


def _corpus_of(terms: Any) -> list[int]:
    """``[rows with text, their terms in all]`` of a terms column (an Arrow array of each
    row's terms joined by spaces, NULL for a NULL text)."""
    joined = [row for row in terms.to_pylist() if row is not None]
    return [len(joined), sum(len(row.split()) for row in joined)]


def _corpus_statistics(opened: Any, column: str) -> tuple[int, int]:
    """The rows with text in text column ``column`` of ``opened`` and their terms in all:
    from the version's :data:`_STATISTICS_METADATA`, or, for a table written before the
    library recorded them, counted from the terms column."""
    recorded = (opened.schema.metadata or {}).get(_STATISTICS_METADATA)
    if recorded is not None and column in json.loads(recorded):
        documents, length = json.loads(recorded)[column]
        return int(documents), int(length)
    try:
        scanned = opened.to_arrow().column(terms_column(column))
    except Exception as error:
        raise EngineError(f"lancedb: {error}") from None
    documents, length = _corpus_of(scanned)
    return documents, length


_PLACE = "__place"
"""The column that carries a row's place in the branch's answer through a re-sort."""


def _tie_breaking(plan: SearchPlan) -> list[tuple[str, bool]]:
    return [(breaker.column, breaker.descending) for breaker in plan.tie_breakers]


def _text_indexed(opened: Any) -> list[str]:
    """The columns of ``opened`` (a LanceDB table) under a full-text index."""
    # LanceDB lists a name that is not a bare identifier in backquotes (`the body`)
    return [
        column.removeprefix("`").removesuffix("`").replace("``", "`")
        for index in opened.list_indices()
        if str(index.index_type).upper() == "FTS"
        for column in index.columns
    ]


def _complete(opened: Any) -> bool:
    """Whether ``opened`` (a LanceDB table at one version) has a full-text index on the terms
    column of each text column its load named (:data:`_TEXT_METADATA`); a table the library
    did not write, or wrote before it named them, names none."""
    named = (opened.schema.metadata or {}).get(_TEXT_METADATA)
    if named is None:
        return True
    wanted = {terms_column(column) for column in json.loads(named)}
    return wanted <= set(_text_indexed(opened))


_MOST_ROWS_ASKED = 2**32 - 1
"""The most rows a LanceDB query is asked for: a limit of 2**32 or more fails in LanceDB
("out of range integral type conversion attempted", lancedb 0.40), while a search's page may
reach 2**63 - 1 rows; no table holds more rows than this, so the answer is the same."""


def _as_loaded(schema: Any, data: pa.Table) -> pa.Table:
    """``data`` (rows read from a table of schema ``schema``) with each vector column as the
    list type it was loaded with (:data:`_TYPES_METADATA`; a table written before it was
    kept: as stored)."""
    recorded = json.loads((schema.metadata or {}).get(_TYPES_METADATA, b"{}"))
    for name, text in recorded.items():
        kind = arrow_type_of_text(text)
        if name not in data.column_names or kind is None:
            continue
        column = as_loaded(data.column(name).combine_chunks(), kind, name)
        data = data.set_column(data.column_names.index(name), name, column)
    return data


def _vector_fields(schema: Any) -> list[str]:
    import pyarrow as pa

    return [
        field.name
        for field in schema
        if pa.types.is_fixed_size_list(field.type) and pa.types.is_floating(field.type.value_type)
    ]


def _products_fit(opened: Any, branch: NearestNeighborSearch) -> bool:
    """Whether LanceDB's dot products of ``branch``'s query with every row of ``opened``
    stay within Float32, so its ``1 - a·b`` orders the rows as their products do: the
    table's largest norm (:data:`_LARGEST_NORMS_METADATA`) and the query's, by
    :func:`~hotdata_retrieval.engines._vector_norms.dot_products_fit`. Past that, LanceDB's
    Float32 products overflow: ``[-3e38, 3e38]`` from ``[1e20, 1e20]`` was ``inf - inf``,
    NaN, and LanceDB left the row out, where every other engine ranks it at its float64
    product, 0. ``False`` too for a version that records no largest norm (an earlier release
    wrote it)."""
    recorded = json.loads((opened.schema.metadata or {}).get(_LARGEST_NORMS_METADATA, b"{}"))
    largest = recorded.get(branch.column)
    if not isinstance(largest, (int, float)):
        return False
    return dot_products_fit(float(largest), branch.query_vector)


def _scanned_rows(
    opened: Any, branch: NearestNeighborSearch, where: str | None, columns: Sequence[str]
) -> list[dict[str, Any]]:
    """Every row of ``opened`` with a vector in ``branch``'s column that passes ``where``,
    with ``columns`` (the vector column among them), read by a plain scan, not LanceDB's
    vector search: a dot search whose Float32 products can overflow (:func:`_products_fit`)
    is ranked on the client, each row at its float64 product
    (:func:`_negative_dot_products`).

    Raises:
        EngineError: LanceDB's own error.
    """
    total = int(opened.count_rows())
    if not total:
        return []
    try:
        search = opened.search()
        if where is not None:
            search = search.where(where)
        rows: list[dict[str, Any]] = search.select(list(columns)).limit(total).to_list()
    except Exception as error:
        raise EngineError(f"lancedb: {error}") from None
    return [row for row in rows if row[branch.column] is not None]


def _negative_dot_products(
    rows: list[dict[str, Any]], branch: NearestNeighborSearch, raw_name: str, *, drop: bool
) -> None:
    """Set each row's ``raw_name`` to ``-(a·b)`` of its vector and the query, in float64
    and then Float32 (the Hotdata engine's ``negative_dot_product`` and every other store's
    result type), in place of LanceDB's ``1 - a·b`` in Float32: that answered 0 for a
    product of -1e-30 (and 1e-30), where every other engine answers -1e-30, and tied rows
    whose products differ. LanceDB orders by its own value, which rounding keeps in the
    products' order, so the rows it returns (all tied at the cut fetched) hold the best
    ones. ``drop``: the vector was fetched only for this and leaves the rows.

    >>> rows = [{"v": [1e-30, 0.0], "_distance": 1.0}]
    >>> branch = NearestNeighborSearch(
    ...     table="t", column="v", query_vector=[-1.0, 0.0], metric="dot")
    >>> _negative_dot_products(rows, branch, "_distance", drop=True); rows
    [{'_distance': 1.0000000031710769e-30}]
    """
    import numpy as np

    if not rows:
        return
    matrix = np.array([row[branch.column] for row in rows], dtype=np.float64)
    # the query read as Float32, as every store reads it, and the sum taken as the local
    # engine's kernel takes it (einsum, not BLAS: a fused multiply-add left 1.8e42 of
    # -3e38·1e20 + 3e38·1e20, where the exact sum of those Float32 products is 0)
    query = np.array(branch.query_vector, dtype=np.float32).astype(np.float64)
    with np.errstate(over="ignore"):
        exact = -np.einsum("ij,ij->i", matrix, np.broadcast_to(query, matrix.shape))
        products = exact.astype(np.float32) + np.float32(0.0)
    for row, product in zip(rows, products.tolist()):
        row[raw_name] = product
        if drop:
            del row[branch.column]
