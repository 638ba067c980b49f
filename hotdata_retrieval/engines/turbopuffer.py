"""The turbopuffer engine: the same plans and the same ranking semantics, on turbopuffer
namespaces through the official ``turbopuffer`` client (the ``turbopuffer`` extra).

turbopuffer has no SQL; a query ranks by one function (turbopuffer documentation, "Query
documents"), several queries go in one multi-query request ("Multi-queries"), and a hybrid
search is one query per branch fused by the caller ("Hybrid Search"). So this engine:

- **loads** a table as one namespace (``<prefix><table>``, the prefix given at construction):
  the namespace is deleted, then written with its schema declared — every column's type, the
  full-text attribute of each text column (``full_text_search``, filterable, so a filter may
  name it), and each vector column as ``[N]f32`` with an ANN index of the namespace's metric
  (``cosine_distance`` for ``cosine``, ``euclidean_squared`` for ``l2``; turbopuffer has no
  inner-product metric, so ``dot`` is refused) — and its rows upserted column-wise, at most
  :data:`WRITE_BATCH_ROWS` rows per request. Documents are keyed by turbopuffer's ``id``, so
  the key column must be ``id``;
- **searches** with one multi-query request whose body is the plan rendered by
  :func:`hotdata_retrieval.compile.turbopuffer.turbopuffer_request` (a query per branch, the
  plan's filter in each, ``top_k`` its depth), and fuses the answers on the client with the
  library's reference fusion (:func:`hotdata_retrieval.fusion.reference_fusion`), ordered by
  fused score then key, as every SQL engine's statement orders them. Each query asks for one
  row past its bound (``top_k`` + 1), which shows whether the cut splits rows of one score; if
  the last row asked for still ties with the row at the bound, the request is sent again with
  twice the ``top_k`` (up to turbopuffer's 1,200), so rows tied at the cut are kept by key, as
  the other stores keep them (a bound of 1,200 itself leaves no row past it to look at: a tie
  there is cut among the rows turbopuffer returned);
- **deletes** rows by key (:meth:`TurbopufferEngine.delete_rows`) or a whole namespace
  (:meth:`TurbopufferEngine.drop_table`).

The API key and region come from ``TURBOPUFFER_API_KEY`` and ``TURBOPUFFER_REGION`` unless
given (the region is part of the API host, ``https://<region>.turbopuffer.com``);
``TURBOPUFFER_BASE_URL`` or ``base_url`` names another host. Every request is bounded by a
total deadline (:func:`hotdata_retrieval._http.call_within`: a socket timeout restarts with
every byte), at which its connection is shut down, and every answer is read within
``response_limits`` (:mod:`hotdata_retrieval._http`: the client is given the library's
transport); at most :data:`MAX_ABANDONED_REQUESTS` requests given up at their deadline that
have not ended yet are tolerated at once. A namespace's schema is read once and kept until the
engine loads or drops it.

``SearchResult.sql`` holds the request body as JSON (what ran, for the record); ``sql(text)``
raises: turbopuffer runs no SQL. A column reads back (``read_table``) as the type of its
attribute, rows or none (:func:`_read_type`): turbopuffer has one type per kind of value, so
integers read as int64 (unsigned ones as uint64), floats as float64, dates and timestamps
(stored as ``datetime`` attributes, instants) as UTC timestamps in microseconds, vectors as
fixed-size lists of float32, lists of them likewise.
"""

from __future__ import annotations

import datetime
import functools
import json
import math
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import attrs

from hotdata_retrieval._deadline import Pending
from hotdata_retrieval._http import HttpCall, call_within
from hotdata_retrieval._words import counted
from hotdata_retrieval.compile.nodes import UnsupportedOnDialectError
from hotdata_retrieval.compile.turbopuffer import (
    MAX_TOP_K,
    TURBOPUFFER_METRICS,
    datetime_text,
    rows_request,
    turbopuffer_request,
)
from hotdata_retrieval.engines.base import RoutesByIndexes
from hotdata_retrieval.engines.checks import (
    ColumnFacts,
    ValueKind,
    check_columns,
    check_cosine_norms,
    check_filter_values,
    check_key_column,
    check_no_nan,
    check_no_nul,
    check_no_null_type,
    check_reserved_columns,
    check_temporal_values_kept,
    check_written_vectors,
    checked_keys,
    column_names,
    leaf_type,
    leaf_values,
    missing_table_error,
    null_vectors_as_lists,
    record_batches,
    rows_table,
    table_load,
    with_typed_values,
)
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import ResponseLimits
from hotdata_retrieval.engines.results import (
    SearchResult,
    executed_plan,
    fill_page_scores,
    formula_page,
    result_from_candidates,
    search_result,
)
from hotdata_retrieval.engines.store import (
    vector_columns_of,
)
from hotdata_retrieval.errors import HotdataRetrievalError, PlanError, row_name
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.fusion import fill_bounds, rank_branch, reference_fusion
from hotdata_retrieval.indexes import TableIndexes, VectorIndex
from hotdata_retrieval.plan.names import TableName, normalize_identifier
from hotdata_retrieval.plan.search import (
    Bm25Search,
    BranchRanking,
    DistanceMetric,
    NearestNeighborSearch,
    SearchPlan,
    debug_columns,
)
from hotdata_retrieval.plan.values import FLOAT32_MAX, float32_squared_norms
from hotdata_retrieval.routing import LOCAL_ROUTING, RoutingPolicy

if TYPE_CHECKING:
    import pyarrow as pa

_NAME = "turbopuffer"

DEFAULT_REQUEST_DEADLINE = 60.0
"""Seconds one request to turbopuffer may take in all, connecting and reading included."""

REQUEST_DEADLINE_VARIABLE = "TURBOPUFFER_REQUEST_DEADLINE"
"""The environment variable the deadline is read from when none is given."""

MAX_ABANDONED_REQUESTS = 4
"""How many requests given up at their deadline may still be running at once (the deadline
shuts down a request's connection, so its thread ends at once unless nothing on a socket holds
it); past that, a new request is refused until one of them ends."""

WRITE_BATCH_ROWS = 1000
"""The most rows one write request upserts."""

_KEY = "id"
_DISTANCE = "$dist"
_REDACTED = "<redacted API key>"
_METRIC_OF_NAMESPACE = {value: key for key, value in TURBOPUFFER_METRICS.items()}
_TEMPORAL = frozenset({"datetime", "[]datetime"})
"""The attribute types whose values (a list's elements) go and come as datetime text."""

FULL_TEXT_SEARCH = {
    "language": "english",
    "stemming": True,
    "remove_stopwords": True,
    "case_sensitive": False,
}
"""The full-text settings of every text attribute the engine writes: English stemming and
stop words, case-insensitive — the library's analysis (:mod:`hotdata_retrieval.analysis`) as
near as turbopuffer's settings come (turbopuffer documentation, "Full-Text Search Guide")."""


def _kind(declared: str) -> ValueKind:
    """The :class:`ValueKind` of a turbopuffer attribute type (``string``, ``[]int``, ...)."""
    if declared.startswith("[]"):
        return ValueKind.LIST
    if declared.startswith("["):
        return ValueKind.VECTOR
    return {
        "string": ValueKind.TEXT,
        "uuid": ValueKind.TEXT,
        "int": ValueKind.INTEGER,
        "uint": ValueKind.INTEGER,
        "float": ValueKind.NUMBER,
        "bool": ValueKind.BOOLEAN,
        "datetime": ValueKind.TEMPORAL,
    }.get(declared, ValueKind.OTHER)


_READ_TYPES = {
    "string": "string",
    "uuid": "string",
    "int": "int64",
    "uint": "uint64",
    "float": "double",
    "bool": "bool",
}
"""The Arrow type (a :func:`pyarrow.type_for_alias` name) a value of each turbopuffer
scalar attribute type but ``datetime`` reads as (:func:`_read_type`)."""


def _read_type(declared: str) -> pa.DataType | None:
    """The Arrow type every value of an attribute of turbopuffer type ``declared`` reads as,
    rows or none: ``[]T`` a list of ``T``'s, ``[n]f32`` a fixed-size list of ``n`` float32
    (a vector), ``datetime`` a UTC timestamp in microseconds (turbopuffer keeps an instant, not
    a zone), the other scalars by :data:`_READ_TYPES`; ``None`` for a type it has not."""
    import pyarrow as pa

    if declared.startswith("[]"):
        element = _read_type(declared[2:])
        return None if element is None else pa.list_(element)
    vector = re.fullmatch(r"\[(\d+)\]f32", declared)
    if vector is not None:
        return pa.list_(pa.float32(), int(vector.group(1)))
    if declared == "datetime":
        return pa.timestamp("us", tz="UTC")
    alias = _READ_TYPES.get(declared)
    return None if alias is None else pa.type_for_alias(alias)


def _attribute_type(name: str, kind: pa.DataType) -> str:
    """The turbopuffer type of an Arrow column.

    Raises:
        EngineError: a type turbopuffer has no attribute for.
    """
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "string"
    if pa.types.is_unsigned_integer(kind):
        return "uint"
    if pa.types.is_integer(kind):
        return "int"
    if pa.types.is_floating(kind):
        return "float"
    if pa.types.is_boolean(kind):
        return "bool"
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        return "datetime"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        element = _attribute_type(name, kind.value_type)
        if not element.startswith("["):
            return f"[]{element}"
    raise EngineError(f"column {name!r}: turbopuffer has no attribute of type {kind}")


MAX_DOCUMENT_ID = 2**64 - 1
"""The largest integer document id: turbopuffer's integer ids are unsigned 64-bit integers
(https://turbopuffer.com/docs/write, "Document IDs")."""


def _check_ids(keys: Any) -> None:
    """Refuse a key column (an Arrow array or chunked array) whose values are no document
    ids: turbopuffer's ids are unsigned 64-bit integers, UUIDs or strings
    (https://turbopuffer.com/docs/write, "Document IDs"), so a timestamp, float or boolean
    key would be refused by the service, or changed into another value, and an integer key
    below 0 (or past :data:`MAX_DOCUMENT_ID`) names no document; each is refused before
    anything is written.

    Raises:
        EngineError: naming the type and what to load instead, or the first integer key out
            of the ids' range, its row and the range.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = keys.type
    value_type = kind.value_type if pa.types.is_dictionary(kind) else kind
    if pa.types.is_string(value_type) or pa.types.is_large_string(value_type):
        return
    if not pa.types.is_integer(value_type):
        raise EngineError(
            f"key column {_KEY!r} holds {kind} values; turbopuffer keys a document by an "
            "integer or a string (its document ids are unsigned 64-bit integers, UUIDs or "
            "strings): load the keys as text or integers"
        )
    if pa.types.is_dictionary(kind):
        keys = keys.cast(value_type)
    if pa.types.is_unsigned_integer(value_type):
        return  # every value is an id: uint64 holds 0 to 2**64 - 1
    outside = pc.fill_null(pc.less(keys, 0), False)
    if not pc.any(outside).as_py():
        return
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    row = int(pc.index(outside, True).as_py())
    raise EngineError(
        f"key column {_KEY!r} holds {keys[row].as_py()!r} in {row_name(row)}; integer keys "
        f"cannot be document ids outside 0 to {MAX_DOCUMENT_ID} (turbopuffer's integer ids "
        "are unsigned 64-bit integers): load non-negative keys, or the keys as text"
    )


L2_SQUARED_NORM_LIMIT = FLOAT32_MAX / 8
"""The largest squared norm (in float64, of the Float32 components) a row or a query vector
of a namespace searched by ``euclidean_squared`` may have, about 4.3e37 (a norm of about
6.5e18). The other engines rank a row whose l2 distance is past Float32 at an infinite
distance (``tests/parity/test_distance_past_float32.py``), but turbopuffer answers in JSON,
which holds no infinity (RFC 8259, section 6: "Numeric values that cannot be represented in
the grammar below (such as Infinity and NaN) are not permitted"), and what the service sends
for such a distance is not documented (its distance is defined as ``sum((x - y)^2)``,
https://turbopuffer.com/docs/query); the client reads its answers with a strict JSON parser,
which refused the fake's ``Infinity``. So no such distance is let arise: with both squared
norms at most this, the squared distance is at most ``(|x| + |q|)² <= 4 · FLOAT32_MAX / 8``,
half of Float32's largest number, which leaves room for Float32's rounding of the sum."""


def _check_l2_norms(data: Any, column: str) -> None:
    """Refuse the rows of ``data`` (a ``pyarrow.Table``, vectors already checked: one length,
    finite, within Float32's range) whose vector in ``column`` has a squared norm above
    :data:`L2_SQUARED_NORM_LIMIT` (the namespace is searched by ``euclidean_squared``).

    Raises:
        EngineError: naming the first such row (from 1), the column and its squared norm.
    """
    import numpy as np
    import pyarrow.compute as pc

    start = 0
    for batch in record_batches(data.select([column])):
        vectors = batch.column(0)
        valid = np.flatnonzero(np.asarray(vectors.is_valid().to_numpy(zero_copy_only=False)))
        if valid.size:
            components = pc.list_flatten(vectors.take(valid)).to_numpy(zero_copy_only=False)
            squared = float32_squared_norms(components.reshape(valid.size, -1))
            over = np.flatnonzero(squared > L2_SQUARED_NORM_LIMIT)
            if over.size:
                raise EngineError(
                    f"{row_name(start + int(valid[over[0]]))} of vector column '{column}' has "
                    f"the squared norm {float(squared[over[0]]):.6g}, above "
                    f"{L2_SQUARED_NORM_LIMIT:.6g}: an l2 distance from it could be past "
                    "Float32's range, an infinity turbopuffer's JSON answer cannot hold "
                    "(the table is searched by l2 distance); scale the vectors down"
                )
        start += batch.num_rows


def _check_l2_query(branch: NearestNeighborSearch) -> None:
    """Refuse an l2 query vector whose squared norm is above :data:`L2_SQUARED_NORM_LIMIT`.

    Raises:
        PlanError: naming the squared norm, ``field="query_vector"``.
    """
    squared = float(float32_squared_norms([branch.query_vector])[0])
    if squared > L2_SQUARED_NORM_LIMIT:
        raise PlanError(
            f"query vector has the squared norm {squared:.6g}, above "
            f"{L2_SQUARED_NORM_LIMIT:.6g}: an l2 distance from it could be past Float32's "
            "range, an infinity turbopuffer's JSON answer cannot hold; scale it down",
            field="query_vector",
            value=squared,
        )


@attrs.frozen
class _Schema:
    """A namespace's attributes: each one's type, the full-text ones, the vectors' metric."""

    types: Mapping[str, str]
    text: tuple[str, ...]
    metric: str | None

    @classmethod
    def read(cls, answer: Mapping[str, Any]) -> _Schema:
        types, text, metric = {}, [], None
        for name, config in answer.items():
            config = config if isinstance(config, Mapping) else _plain(config)
            types[name] = str(config.get("type"))
            if config.get("full_text_search"):
                text.append(name)
            ann = config.get("ann")
            if isinstance(ann, Mapping) and ann.get("distance_metric"):
                metric = str(ann["distance_metric"])
        return cls(types=types, text=tuple(text), metric=metric)

    def vectors(self) -> list[str]:
        return [
            name for name, declared in self.types.items() if _kind(declared) is ValueKind.VECTOR
        ]


def _plain(value: Any) -> Any:
    """A client response model as plain data."""
    dump = getattr(value, "model_dump", None)
    return dump(by_alias=True, exclude_unset=True) if dump is not None else value


class _Requests:
    """Requests within a total deadline and the response limits, failures told without the
    API key."""

    def __init__(self, deadline: float, secret: str, limits: ResponseLimits) -> None:
        self.deadline = deadline
        self.limits = limits
        self._secret = secret
        self._abandoned: list[Pending] = []
        self._lock = threading.Lock()

    def run(self, function: Callable[[], Any], *, what: str, missing_ok: bool = False) -> Any:
        """``function()`` within the deadline; ``None`` for a 404 when ``missing_ok``.

        Raises:
            EngineError: turbopuffer refused the request (its message), gave no answer within
                the deadline, or :data:`MAX_ABANDONED_REQUESTS` requests are still unanswered.
            ResponseLimitError: an answer larger than :attr:`limits` allows.
        """
        with self._lock:
            self._abandoned = [pending for pending in self._abandoned if not pending.done()]
            if len(self._abandoned) >= MAX_ABANDONED_REQUESTS:
                raise EngineError(
                    f"{len(self._abandoned)} earlier requests to turbopuffer are still "
                    f"unanswered past their deadline of {self.deadline:g} seconds; no new "
                    "request is sent until one of them ends"
                )
        call = HttpCall(self.limits, answer=f"turbopuffer's answer to {what}")
        ended, pending = call_within(
            function, self.deadline, call=call, name="hdq-turbopuffer-request"
        )
        if not ended:
            with self._lock:
                self._abandoned.append(pending)
            raise EngineError(
                f"turbopuffer gave no complete answer to {what} within {self.deadline:g} "
                "seconds (request_deadline); the request was abandoned"
            )
        try:
            return pending.result()
        except Exception as error:
            own = _own_error(error)
            if own is not None:  # a limit, or an answer the library cannot read
                raise own from None
            status = getattr(error, "status_code", None)
            if missing_ok and status == 404:
                return None
            body = getattr(error, "body", None)
            message = body.get("error") if isinstance(body, Mapping) else None
            text = str(message or error)
            if self._secret:
                text = text.replace(self._secret, _REDACTED)
            where = f" (HTTP {status})" if status is not None else ""
            raise EngineError(f"turbopuffer refused {what}{where}: {text}") from None


def _own_error(error: BaseException) -> HotdataRetrievalError | None:
    """The library's own error along ``error``'s causes: the client wraps what the transport
    raises in its ``APIConnectionError``."""
    node: BaseException | None = error
    while node is not None:
        if isinstance(node, HotdataRetrievalError):
            return node
        node = node.__cause__
    return None


def _deadline_from_environment() -> float:
    text = os.environ.get(REQUEST_DEADLINE_VARIABLE, "").strip()
    return (
        DEFAULT_REQUEST_DEADLINE if not text else _check_deadline(text, REQUEST_DEADLINE_VARIABLE)
    )


def _check_deadline(value: Any, name: str) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        raise EngineError(f"{name} must be a positive number of seconds, got {value!r}")
    return seconds


class TurbopufferEngine(RoutesByIndexes):
    """turbopuffer behind the engine contract (module docstring).

    Args:
        prefix: put before each table's name to make its namespace's (``"tickets-"``: table
            ``docs`` is namespace ``tickets-docs``); empty by default.
        embedder: embeds query text for ``plan_search`` routes that need a vector.
        api_key: default ``TURBOPUFFER_API_KEY``.
        region: default ``TURBOPUFFER_REGION``; the API host is
            ``https://<region>.turbopuffer.com`` unless ``base_url`` is given.
        base_url: another API host (default ``TURBOPUFFER_BASE_URL``); no region then.
        request_deadline: seconds each request may take in all (default
            ``TURBOPUFFER_REQUEST_DEADLINE``, else :data:`DEFAULT_REQUEST_DEADLINE`); past it
            the call fails and the request's connection is shut down.
        response_limits: what one answer may cost
            (:class:`~hotdata_retrieval.engines.limits.ResponseLimits`: 256 MiB as sent and
            decompressed, by default); past it the call is a
            :class:`~hotdata_retrieval.errors.ResponseLimitError` and the connection is closed.

    Raises:
        MissingExtraError: the ``turbopuffer`` extra is not installed.
        EngineError: no API key, no region and no base URL, a deadline that is not a
            positive number, or ``response_limits`` that are not a ``ResponseLimits``.
    """

    routing_policy: ClassVar[RoutingPolicy] = LOCAL_ROUTING
    engine_name: ClassVar[str] = _NAME
    timestamp_unit: ClassVar[str] = "ms"
    """The finest Arrow time unit a ``datetime`` attribute keeps: turbopuffer stores one as
    "a 64-bit integer representing milliseconds since the epoch"
    (https://turbopuffer.com/docs/schema), so a finer timestamp is refused at load and upsert
    (:func:`~hotdata_retrieval.engines.checks.check_temporal_values_kept`) rather than cut;
    it reads back as a UTC ``timestamp[us]`` (:func:`_read_type`)."""
    vector_metrics: ClassVar[tuple[str, ...]] = tuple(
        metric.value for metric in TURBOPUFFER_METRICS
    )
    agent_sql_refusal: ClassVar[str] = "turbopuffer runs no SQL"
    """Why the agent tools offer no SQL tool on turbopuffer (:meth:`sql` always fails)."""
    default_catalog: ClassVar[str] = "default"
    default_schema: ClassVar[str] = "public"

    def check_column_types(self, schema: pa.Schema) -> None:
        """Refuse a column of ``schema`` turbopuffer has no attribute type for, as a load
        would (:func:`_attribute_type`)."""
        for field in schema:
            _attribute_type(field.name, field.type)

    def __init__(
        self,
        prefix: str = "",
        *,
        embedder: Any = None,
        api_key: str | None = None,
        region: str | None = None,
        base_url: str | None = None,
        request_deadline: float | None = None,
        response_limits: ResponseLimits | None = None,
    ) -> None:
        require_extra("turbopuffer", needed_by="the turbopuffer engine")
        import turbopuffer

        from hotdata_retrieval._http.transport import BoundedTransport

        self.prefix = prefix
        self.embedder = embedder
        deadline = (
            _deadline_from_environment()
            if request_deadline is None
            else _check_deadline(request_deadline, "request_deadline")
        )
        key = api_key if api_key is not None else os.environ.get("TURBOPUFFER_API_KEY")
        if not key:
            raise EngineError(
                "the turbopuffer engine needs an API key: set TURBOPUFFER_API_KEY "
                "(or pass api_key=)"
            )
        host = base_url if base_url is not None else os.environ.get("TURBOPUFFER_BASE_URL")
        host = host or "https://{region}.turbopuffer.com"
        region = region if region is not None else os.environ.get("TURBOPUFFER_REGION")
        if "{region}" in host:
            if not region:
                raise EngineError(
                    "the turbopuffer engine needs a region (the API host is "
                    "https://<region>.turbopuffer.com): set TURBOPUFFER_REGION (or pass region=)"
                )
        elif region:
            raise EngineError(
                f"a region ({region!r}) and an API host without one ({host!r}) are both set; "
                "the client takes the region only into a host holding '{region}': unset "
                "TURBOPUFFER_REGION or TURBOPUFFER_BASE_URL"
            )
        limits = ResponseLimits() if response_limits is None else response_limits
        if not isinstance(limits, ResponseLimits):
            raise EngineError(
                f"response_limits must be a ResponseLimits, got {type(limits).__name__}"
            )
        from turbopuffer.resources.namespaces import NamespacesResource

        self.base_url = host.replace("{region}", region or "")
        """The API host requests go to."""
        self._requests = _Requests(deadline, key, limits)
        self._client = turbopuffer.Turbopuffer(
            api_key=key,
            region=region or None,
            base_url=host,
            timeout=deadline,
            max_retries=2,
            telemetry=False,
            http_client=turbopuffer.DefaultHttpxClient(transport=BoundedTransport(limits)),
        )
        # one resource for every namespace: client.namespace(name) copies the client per call
        self._namespaces = NamespacesResource(self._client)
        self._schemas: dict[str, _Schema] = {}

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()

    def __enter__(self) -> TurbopufferEngine:
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

    def namespace(self, table: str | TableName) -> str:
        """The namespace holding ``table``: the prefix and the table's name.

        Raises:
            EngineError: a table name of more than one part.
        """
        name = self.table_name(table)
        if (name.catalog, name.schema) != (self.default_catalog, self.default_schema):
            raise EngineError(f"table '{name}': turbopuffer tables have one-part names")
        return f"{self.prefix}{name.name}"

    def _schema(self, table: str | TableName) -> _Schema:
        schema = self._found_schema(table)
        if schema is None:
            raise missing_table_error(
                self.table_name(table),
                self.tables,
                where=f" (no namespace {self.namespace(table)!r})",
            )
        return schema

    def _found_schema(self, table: str | TableName) -> _Schema | None:
        """The namespace's schema, or ``None`` when there is no such namespace."""
        namespace = self.namespace(table)
        known = self._schemas.get(namespace)
        if known is not None:
            return known
        answer = self._requests.run(
            lambda: self._namespaces.schema(namespace=namespace),
            what=f"reading namespace {namespace!r}'s schema",
            missing_ok=True,
        )
        if answer is None:
            return None
        schema = _Schema.read(_plain(answer))
        self._schemas[namespace] = schema
        return schema

    def indexes(self, table: str | TableName) -> TableIndexes:
        """The namespace's full-text attributes and vector attributes (plain: the caller
        embeds queries), keyed by ``id``.

        Raises:
            EngineError: no such namespace.
        """
        schema = self._schema(table)
        metric = _METRIC_OF_NAMESPACE.get(schema.metric or "", DistanceMetric.COSINE).value
        return TableIndexes(
            table=self.table_name(table),
            bm25_columns=schema.text,
            vectors=tuple(VectorIndex(column=name, metric=metric) for name in schema.vectors()),
            key_column=_KEY,
        )

    def embedder_for(self, table: str | TableName) -> Any:
        """The engine's embedder (given at construction), or ``None``."""
        return self.embedder

    def sql(self, text: str) -> pa.Table:
        """turbopuffer runs no SQL.

        Raises:
            EngineError: always.
        """
        raise EngineError(
            "turbopuffer has no SQL interface: search with plans (search(plan)); "
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
        """Store ``data`` as the namespace of table ``name``, replacing any previous one
        (module docstring); ``vector_model`` is not kept (a namespace has no place for it).

        Raises:
            EngineError: a key column other than ``id``, a duplicated or NULL key, a key of
                a type no document id has (a timestamp, a float, a boolean), a negative
                integer key (:func:`_check_ids`), a vector of an l2 table whose squared
                norm is above :data:`L2_SQUARED_NORM_LIMIT`, a missing
                or non-text text column, vectors of different lengths or none, a column type
                turbopuffer has no attribute for, or turbopuffer's own refusal.
            UnsupportedOnDialectError: the ``dot`` metric.
        """
        import pyarrow as pa

        from hotdata_retrieval.engines.checks import loaded_vector_dimensions

        data = rows_table(data)
        namespace = self.namespace(name)
        columns = column_names(data.schema)
        data = data.rename_columns(columns)
        key = None if key_column is None else normalize_identifier(key_column, label="key column")
        if key != _KEY:
            raise EngineError(
                f"key column {key!r}: turbopuffer keys every document by its 'id' attribute; "
                "load the table with key_column='id'"
            )
        if key not in columns:
            raise EngineError(f"key column '{key}' not found; columns: {', '.join(columns)}")
        keys = data.column(key)
        check_key_column(keys, key, loading=True)
        _check_ids(keys)
        texts = [normalize_identifier(column, label="text column") for column in text_columns]
        for column in texts:
            if column not in columns or not pa.types.is_string(data.schema.field(column).type):
                raise EngineError(f"text column '{column}' is not a text column of the table")
        vectors = vector_columns_of(data)
        if texts or vectors:
            check_reserved_columns(columns)
        check_no_null_type(data)
        check_no_nul(data)
        check_no_nan(data, "turbopuffer")  # its JSON has no NaN
        check_temporal_values_kept(
            data, timestamp_unit=self.timestamp_unit, store="the turbopuffer engine"
        )
        _check_datetime_years(data)
        metric = DistanceMetric.parse(vector_metric)
        metric_name = TURBOPUFFER_METRICS.get(metric)
        if metric_name is None:
            raise UnsupportedOnDialectError(
                f"the {metric.value} distance (turbopuffer has cosine_distance and "
                "euclidean_squared)",
                _NAME,
            )
        schema: dict[str, Any] = {}
        for field in data.schema:
            if field.name in vectors:
                size = loaded_vector_dimensions(data, field.name)
                check_cosine_norms(data, field.name, metric)
                if metric is DistanceMetric.L2:
                    _check_l2_norms(data, field.name)
                schema[field.name] = {
                    "type": f"[{size}]f32",
                    "ann": {"distance_metric": metric_name},
                }
            elif field.name in texts:
                schema[field.name] = {
                    "type": "string",
                    "full_text_search": dict(FULL_TEXT_SEARCH),
                    "filterable": True,
                }
            else:
                schema[field.name] = {"type": _attribute_type(field.name, field.type)}
        self._schemas.pop(namespace, None)
        self._requests.run(
            lambda: self._namespaces.delete_all(namespace=namespace),
            what=f"deleting namespace {namespace!r}",
            missing_ok=True,
        )
        names = data.schema.names
        temporal = [n for n in names if schema[n]["type"] in _TEMPORAL]
        for start in range(0, max(data.num_rows, 1), WRITE_BATCH_ROWS):
            batch = data.slice(start, WRITE_BATCH_ROWS)
            upsert = {column: _written_values(batch.column(column)) for column in names}
            for column in temporal:
                upsert[column] = [_iso(value) for value in upsert[column]]
            first = start == 0
            write: dict[str, Any] = {"upsert_columns": upsert}
            if first:
                write.update(schema=schema, create_namespace=True)
            self._requests.run(
                functools.partial(self._namespaces.write, namespace=namespace, **write),
                what=f"writing namespace {namespace!r}",
            )
        return self.indexes(name)

    def delete_rows(self, name: str, keys: Sequence[Any]) -> int:
        """Remove the documents of table ``name`` keyed by ``keys`` (an unknown key is no
        error), :data:`WRITE_BATCH_ROWS` per request; returns how many there were (the
        deleted ids each write reports, ``return_affected_ids``).

        Raises:
            EngineError: no such table; a key of another kind than the ids'
                (:func:`~hotdata_retrieval.engines.checks.checked_keys`), before anything is
                deleted; turbopuffer's refusal.
        """
        namespace = self.namespace(name)
        wanted = self._checked_keys(self._schema(name), keys)
        removed = 0
        for start in range(0, len(wanted), WRITE_BATCH_ROWS):
            batch = wanted[start : start + WRITE_BATCH_ROWS]
            answer = self._requests.run(
                functools.partial(
                    self._namespaces.write,
                    namespace=namespace,
                    deletes=batch,
                    return_affected_ids=True,
                ),
                what=f"deleting from namespace {namespace!r}",
            )
            removed += len(_plain(answer).get("deleted_ids") or ())
        return removed

    @property
    def tables(self) -> dict[str, TableName]:
        """The tables of the engine's namespaces (those whose name starts with its prefix),
        by name.

        Raises:
            EngineError: turbopuffer refused the listing.
        """
        listed = self._requests.run(
            lambda: [
                summary.id
                for summary in self._client.namespaces(prefix=self.prefix)
                if summary.id.startswith(self.prefix)
            ],
            what="the namespace listing",
        )
        names = [namespace[len(self.prefix) :] for namespace in listed]
        return {name: self.table_name(name) for name in names if name}

    def _read(self, table: str | TableName, columns: Sequence[str] | None, **options: Any) -> Any:
        """Documents of ``table`` in key order, one query per :data:`MAX_TOP_K`
        (:func:`~hotdata_retrieval.compile.turbopuffer.rows_request`), as an Arrow table."""
        import pyarrow as pa

        namespace = self.namespace(table)
        schema = self._schema(table)
        wanted = list(schema.types) if columns is None else list(columns)
        unknown = [column for column in wanted if column not in schema.types]
        if unknown:
            raise EngineError(
                f"column '{unknown[0]}' not found in table '{self.table_name(table)}'; "
                f"columns: {', '.join(schema.types)}"
            )
        keys = options.pop("keys", None)
        batches = (
            [None]
            if keys is None
            else [keys[i : i + MAX_TOP_K] for i in range(0, len(keys), MAX_TOP_K)]
        )
        rows: list[dict[str, Any]] = []
        for batch in batches:
            after = None
            while True:
                body = rows_request(
                    _KEY,
                    [name for name in wanted if name != _KEY],
                    keys=batch,
                    after=after,
                )
                answer = self._requests.run(
                    functools.partial(self._namespaces.query, namespace=namespace, **body),
                    what=f"reading namespace {namespace!r}",
                )
                page = [dict(row) for row in _plain(answer).get("rows") or []]
                rows.extend(page)
                if len(page) < body["top_k"]:
                    break
                after = page[-1][_KEY]
        temporal = {n for n, declared in schema.types.items() if declared in _TEMPORAL}
        columns_out = {}
        for name in wanted:
            values = [row.get(name) for row in rows]
            if name in temporal:
                values = [_from_iso(value) for value in values]
            # typed by the attribute, not by the values: a column of NULLs or empty lists
            # has none to type it, and Arrow types Python integers past 2**63 - 1 as int64
            columns_out[name] = pa.array(values, _read_type(schema.types.get(name, "")))
        return pa.table(columns_out)

    def read_table(self, table: str | TableName, columns: Sequence[str] | None = None) -> Any:
        """Every document of ``table`` as an Arrow table (``columns`` of them, in that order;
        default every attribute), in key order: one query per :data:`MAX_TOP_K` documents.

        Raises:
            EngineError: no such table, a column it does not have, turbopuffer's refusal.
        """
        return self._read(table, columns)

    def read_rows(
        self, table: str | TableName, keys: Sequence[Any], columns: Sequence[str] | None = None
    ) -> Any:
        """The documents of ``table`` keyed by ``keys`` (``columns`` of them, as
        :meth:`read_table`), in key order; an unknown key is left out.

        Raises:
            EngineError: no such table, a column it does not have, turbopuffer's refusal.
        """
        return self._read(table, columns, keys=self._checked_keys(self._schema(table), keys))

    @staticmethod
    def _checked_keys(schema: _Schema, keys: Any) -> list[Any]:
        """The distinct ``keys`` as values of the namespace's ``id``, by its turbopuffer type
        (:func:`~hotdata_retrieval.engines.checks.checked_keys`), less the negative integers
        of an ``int`` id, which name no document.

        Raises:
            EngineError: a key of another kind than the ids', NULL or NaN.
        """
        declared = schema.types.get(_KEY, "")
        checked = checked_keys(keys, _kind(declared), _KEY, declared)
        if declared != "int":
            return checked
        # a negative integer names no document (no load or upsert writes one: _check_ids),
        # and the service refuses it as an id: it is an unknown key, left out
        return [key for key in checked if key >= 0]

    def upsert_rows(self, name: str, rows: pa.Table, *, create: Any = None) -> TableIndexes:
        """Write ``rows`` (Arrow: ``id`` and any of the namespace's attributes, a missing one
        null: turbopuffer's upsert replaces the whole document) into table ``name`` by key,
        :data:`WRITE_BATCH_ROWS` per request (each request is one commit; a larger write is
        several). A missing namespace is loaded from ``create`` (a
        :class:`~hotdata_retrieval.engines.local.TableLoad`). turbopuffer keeps its
        full-text and vector indexes itself.

        Raises:
            EngineError: no such table (and no ``create``); an attribute the namespace lacks,
                no ``id``, a NULL or repeated key, a key no document id can be
                (:func:`_check_ids`), a vector of an l2 table whose squared norm is above
                :data:`L2_SQUARED_NORM_LIMIT`, a vector of another length than the
                attribute's, turbopuffer's own refusal.
        """
        rows = rows_table(rows)
        create = table_load(create)
        check_no_nul(rows)
        check_no_nan(rows, "turbopuffer")
        namespace = self.namespace(name)
        schema = self._found_schema(name)
        if schema is None:
            if create is None:
                raise EngineError(
                    f"table '{self.table_name(name)}' not found (no namespace {namespace!r}); "
                    "load it first (load_table) or pass create="
                )
            if tuple(create.embed_columns) or create.vector_index is not None:
                raise EngineError(
                    "the turbopuffer engine embeds no column and takes no vector_index: give "
                    "the vectors (turbopuffer builds its own ANN index)"
                )
            return self.load_table(
                create.name,
                create.data,
                key_column=create.key_column,
                text_columns=tuple(create.text_columns),
                vector_metric=create.vector_metric,
            )
        columns = column_names(rows.schema)
        rows = rows.rename_columns(columns)
        unknown = [column for column in columns if column not in schema.types]
        if unknown or len(set(columns)) != len(columns):
            raise EngineError(
                f"column '{(unknown or columns)[0]}' is not an attribute of table "
                f"'{self.table_name(name)}' or is given twice; its attributes: "
                f"{', '.join(schema.types)}"
            )
        if _KEY not in columns:
            raise EngineError(f"the rows have no key column '{_KEY}'")
        keys = rows.column(_KEY)
        check_key_column(keys, _KEY)
        _check_ids(keys)
        check_temporal_values_kept(
            rows, timestamp_unit=self.timestamp_unit, store="the turbopuffer engine"
        )
        _check_datetime_years(rows)
        self._checked_keys(schema, keys.to_pylist())  # a key of another kind: refused
        rows = null_vectors_as_lists(rows, schema.vectors())
        for column in schema.vectors():
            declared = schema.types[column]
            size = int(declared[1 : declared.index("]")])
            if column in columns:
                check_written_vectors(rows, column, size, self.table_name(name))
                searched_by = _METRIC_OF_NAMESPACE.get(schema.metric or "")
                if searched_by is not None:
                    check_cosine_norms(rows, column, searched_by)
                if searched_by is DistanceMetric.L2:
                    _check_l2_norms(rows, column)
        temporal = [n for n in columns if schema.types[n] in _TEMPORAL]
        for start in range(0, rows.num_rows, WRITE_BATCH_ROWS):
            batch = rows.slice(start, WRITE_BATCH_ROWS)
            upsert = {column: _written_values(batch.column(column)) for column in columns}
            for column in temporal:
                upsert[column] = [_iso(value) for value in upsert[column]]
            self._requests.run(
                functools.partial(
                    self._namespaces.write,
                    namespace=namespace,
                    upsert_columns=cast("Any", upsert),
                ),
                what=f"writing namespace {namespace!r}",
            )
        return self.indexes(name)

    def drop_table(self, name: str) -> None:
        """Delete table ``name``'s namespace, documents and schema (no error if missing).

        Raises:
            EngineError: turbopuffer's refusal.
        """
        namespace = self.namespace(name)
        self._schemas.pop(namespace, None)
        self._requests.run(
            lambda: self._namespaces.delete_all(namespace=namespace),
            what=f"deleting namespace {namespace!r}",
            missing_ok=True,
        )

    # -- searches --------------------------------------------------------------------------

    def _check(self, plan: SearchPlan, table: TableName, schema: _Schema) -> None:
        kinds = {name: _kind(declared) for name, declared in schema.types.items()}
        check_columns(plan, table, list(schema.types), kinds)
        elements = {
            name: _kind(declared[2:])
            for name, declared in schema.types.items()
            if declared.startswith("[]")
        }
        check_filter_values(plan.filter, kinds, elements)
        for branch in plan.branches:
            if isinstance(branch, Bm25Search):
                if branch.column not in schema.text:
                    raise EngineError(
                        f"column '{branch.column}' of table '{table}' has no full-text index "
                        f"on turbopuffer; load the table with text_columns=['{branch.column}']"
                    )
            elif isinstance(branch, NearestNeighborSearch):
                declared = schema.types[branch.column]
                size = declared[1 : declared.index("]")] if declared.startswith("[") else ""
                if size.isdigit() and int(size) != len(branch.query_vector):
                    raise PlanError(
                        f"query vector has {counted(len(branch.query_vector), 'dimension')}; "
                        "column "
                        f"'{branch.column}' holds {size}",
                        field="query_vector",
                        value=len(branch.query_vector),
                    )
                wanted = TURBOPUFFER_METRICS.get(branch.metric)
                if wanted is not None and schema.metric is not None and wanted != schema.metric:
                    raise UnsupportedOnDialectError(
                        f"the {branch.metric.value} distance on table '{table}', loaded with "
                        f"{schema.metric} (a namespace has one distance metric)",
                        _NAME,
                    )
                if branch.metric is DistanceMetric.L2:
                    _check_l2_query(branch)

    def _ask(self, namespace: str, body: dict[str, Any]) -> list[list[dict[str, Any]]]:
        """The rows of each query of ``body``, as plain dictionaries."""
        answer = self._requests.run(
            lambda: self._namespaces.multi_query(namespace=namespace, queries=body["queries"]),
            what=f"a search of namespace {namespace!r}",
        )
        results = _plain(answer).get("results", [])
        return [[dict(row) for row in result.get("rows") or []] for result in results]

    def search(self, plan: SearchPlan) -> SearchResult:
        """Run ``plan`` as one multi-query request and fuse on the client (module docstring).

        Raises:
            EngineError: a missing table, column or full-text index, a metric other than the
                namespace's, or turbopuffer's own error.
            PlanError: an l2 query vector whose squared norm is above
                :data:`L2_SQUARED_NORM_LIMIT`.
            UnsupportedOnDialectError: what turbopuffer cannot express
                (:func:`~hotdata_retrieval.compile.turbopuffer.turbopuffer_request`).
        """
        if plan.group_by is not None or plan.after is not None or plan.facets:
            # groups, cursor pages and facets are taken in the library from the ranked candidates
            return result_from_candidates(plan, self.search(plan.candidates()))
        table = plan.single_table
        if table is None:
            raise UnsupportedOnDialectError(
                "a search over several tables (a request queries one namespace)", _NAME
            )
        schema = self._schema(table)
        self._check(plan, table, schema)
        kinds = {name: _kind(declared) for name, declared in schema.types.items()}
        unsigned = frozenset(name for name, declared in schema.types.items() if declared == "uint")
        # turbopuffer's one floating-point attribute type is 64-bit
        floats = frozenset(name for name, declared in schema.types.items() if declared == "float")
        # a datetime attribute keeps milliseconds, and how the service compares a finer
        # literal with one is not documented: the literal is folded onto its milliseconds
        # (the exactly equivalent comparison), so none is sent
        moments = {name: 1000 for name, declared in schema.types.items() if declared == "datetime"}
        facts = ColumnFacts(unsigned=unsigned, float64=floats, coarse_timestamps=moments)
        executed = executed_plan(plan, kinds, facts)
        if executed.filter is not None:
            executed = attrs.evolve(
                executed, filter=with_typed_values(executed.filter, kinds, facts)
            )
        # a text branch with no word matches nothing, as on every store: it is no query
        wordless = [isinstance(b, Bm25Search) and not b.words for b in executed.branches]
        body = turbopuffer_request(_with_words(executed, wordless))
        body = dict(body, queries=[q for q, skip in zip(body["queries"], wordless) if not skip])
        namespace = self.namespace(table)
        temporal = frozenset(n for n, declared in schema.types.items() if declared in _TEMPORAL)
        # one row past each bound shows whether the cut splits rows of one score; while the
        # last row asked for ties with the row at the bound, ask for twice as many
        bounds = [query["top_k"] for query in body["queries"]]
        queries = [
            dict(query, top_k=min(bound + 1, MAX_TOP_K))
            for query, bound in zip(body["queries"], bounds)
        ]
        asked = dict(body, queries=queries)
        answers: list[list[dict[str, Any]]] = []
        while queries:
            answers = self._ask(namespace, asked)
            again = False
            for query, bound, rows in zip(queries, bounds, answers):
                count = query["top_k"]
                if (
                    len(rows) == count > bound
                    and count < MAX_TOP_K
                    and rows[bound - 1][_DISTANCE] == rows[-1][_DISTANCE]
                ):
                    query["top_k"] = min(2 * count, MAX_TOP_K)
                    again = True
            if not again:
                break
        answered = iter(zip(answers, bounds))
        ranked = []
        for branch, skip in zip(executed.branches, wordless):
            rows, bound = ([], 0) if skip else next(answered)
            ranked.append(_ranked(rows, bound, branch, temporal))
        fusion = plan.fusion
        if fusion is None:
            branch = plan.branches[0]
            keys, raw, stored = ranked[0]
            rows = [
                {
                    **{name: stored[key].get(name) for name in executed.projection},
                    branch.raw_score_column: score,
                }
                for key, score in zip(keys, raw)
            ][executed.offset :]
            return search_result(plan, executed, rows, json.dumps(body))
        lists, ranks, scores = [], [], []
        for branch, (keys, raw, _) in zip(fusion.branches, ranked):
            branch_keys, branch_ranks = rank_branch(
                zip(keys, raw),
                higher_is_better=branch.higher_is_better,
                row_numbers=fusion.ranking is BranchRanking.ROW_NUMBER,
            )
            raw_by_key = dict(zip(keys, raw))
            lists.append(branch_keys)
            ranks.append(branch_ranks)
            scores.append([raw_by_key[key] for key in branch_keys])
        rescored = executed.formula is not None  # min_score applies to the formula's score
        fused = reference_fusion(
            attrs.evolve(fusion, min_score=None) if rescored else fusion,
            lists,
            ranks=ranks,
            scores=scores,
            limit=None if rescored else executed.limit,
            offset=0 if rescored else executed.offset,
        )
        formula_columns = () if executed.formula is None else executed.formula.columns
        rows = []
        stored_rows = []
        for hit in fused:
            stored = next(found[2][hit.key] for found in ranked if hit.key in found[2])
            row: dict[str, Any] = {
                name: stored.get(name) for name in (*executed.projection, *formula_columns)
            }
            row["score"] = hit.score
            for name, branch, (keys, raw, _), rank in zip(
                plan.branch_names, fusion.branches, ranked, hit.ranks
            ):
                rank_column, raw_column = debug_columns(name, branch)
                row[rank_column] = rank
                row[raw_column] = None if rank is None else raw[keys.index(hit.key)]
            rows.append(row)
            stored_rows.append(stored)
        fill_page_scores(executed, rows, stored_rows)
        fill_bounds(executed, rows, scores)
        if rescored:
            rows = formula_page(executed, rows)
        statement = json.dumps({**body, "fusion": fusion.describe()})
        return search_result(plan, executed, rows, statement)


def _with_words(plan: SearchPlan, wordless: list[bool]) -> SearchPlan:
    """``plan`` with each wordless text branch given a word, so that it renders (its query is
    then left out of the request)."""
    if not any(wordless):
        return plan
    branches = [
        attrs.evolve(cast(Bm25Search, branch), query_text="wordless") if skip else branch
        for branch, skip in zip(plan.branches, wordless)
    ]
    if plan.fusion is None:
        return attrs.evolve(plan, source=branches[0])
    return attrs.evolve(plan, source=attrs.evolve(plan.fusion, branches=branches))


def _ranked(
    rows: list[dict[str, Any]], bound: int, branch: Any, temporal: frozenset[str]
) -> tuple[list[Any], list[float], dict[Any, dict[str, Any]]]:
    """One query's rows, best first with ties by key, cut to ``bound``: keys, raw scores
    (``$dist``: a BM25 score, higher is better, or a distance) and rows by key."""
    sign = -1.0 if isinstance(branch, Bm25Search) else 1.0
    scored = sorted(
        ((row[_KEY], float(row[_DISTANCE]), row) for row in rows),
        key=lambda item: (sign * item[1], item[0]),
    )[:bound]
    stored = {}
    for key, _, row in scored:
        for column in temporal & row.keys():
            row[column] = _from_iso(row[column])
        stored[key] = row
    return [item[0] for item in scored], [item[1] for item in scored], stored


_DAYS_FROM_YEAR_1 = 719_162
"""The days from 0001-01-01 to 1970-01-01, the epoch of Arrow's dates and timestamps."""
_SECONDS_PAST_9999 = 253_402_300_800
"""The seconds from 1970-01-01 to 10000-01-01: the first instant past the years a
``datetime`` (and the RFC 3339 text written from one) holds."""


def _check_datetime_years(data: Any) -> None:
    """Refuse a date or timestamp of ``data`` (a ``pyarrow.Table``: rows a load or an upsert
    writes; a list's elements and a dictionary's values included) whose instant in UTC is
    outside the years 1 to 9999: a ``datetime`` attribute is written as RFC 3339 text
    (:func:`~hotdata_retrieval.compile.turbopuffer.datetime_text`), whose year has four
    digits, and Python's ``datetime`` holds no other (pyarrow raised OverflowError).

    Raises:
        EngineError: naming the column, the first such value as Arrow writes it, and its row;
            nothing is written.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from hotdata_retrieval.engines._repeated_keys import UNITS_PER_SECOND, temporal_text

    for position, field in enumerate(data.schema):
        kind = leaf_type(field.type)
        if pa.types.is_timestamp(kind):
            per_second = UNITS_PER_SECOND[kind.unit]
            low, high = -_DAYS_FROM_YEAR_1 * 86_400 * per_second, _SECONDS_PAST_9999 * per_second
        elif pa.types.is_date32(kind):
            low, high = -_DAYS_FROM_YEAR_1, _SECONDS_PAST_9999 // 86_400
        elif pa.types.is_date64(kind):
            low, high = -_DAYS_FROM_YEAR_1 * 86_400_000, _SECONDS_PAST_9999 * 1000
        else:
            continue  # read by its type alone: a vector or text column is not copied
        values, row_of = leaf_values(data.column(position))
        integers = pa.int32() if pa.types.is_date32(kind) else pa.int64()
        counts = pc.fill_null(values.view(integers), 0).to_numpy(zero_copy_only=False)
        outside = np.flatnonzero((counts < low) | (counts >= high))
        if not outside.size:
            continue
        element = int(outside[0])
        row = row_of(element)
        raise EngineError(
            f"column {field.name!r} holds {temporal_text(kind, int(counts[element]))!r} in "
            f"{row_name(row)}, outside the years 1 to 9999 in UTC: a turbopuffer datetime is "
            "written as RFC 3339 text, whose year has four digits; nothing was written"
        )


def _written_values(values: Any) -> list[Any]:
    """A column of a batch (an Arrow array or chunked array) as the Python values a write
    sends, a zoned timestamp (a list's elements too) read in UTC: the instant is the same,
    and its wall time in its own zone may be past the years a ``datetime`` holds
    (``9999-12-31 23:00 UTC`` is in the year 10000 at ``Pacific/Kiritimati``)."""
    import pyarrow as pa

    kind = values.type
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        values = values.cast(pa.timestamp(kind.unit, "UTC"))
    elif (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and (
        pa.types.is_timestamp(kind.value_type) and kind.value_type.tz is not None
    ):
        utc = pa.timestamp(kind.value_type.unit, "UTC")
        values = values.cast(pa.large_list(utc) if pa.types.is_large_list(kind) else pa.list_(utc))
    listed: list[Any] = values.to_pylist()
    return listed


def _iso(value: Any) -> Any:
    """A date or timestamp (a list's elements) as the RFC 3339 text in UTC a turbopuffer
    ``datetime`` takes (:func:`~hotdata_retrieval.compile.turbopuffer.datetime_text`);
    anything else as itself."""
    if isinstance(value, list):
        return [_iso(element) for element in value]
    if isinstance(value, datetime.date):
        return datetime_text(value)
    return value


def _from_iso(value: Any) -> Any:
    """A ``datetime`` attribute's text (a list's elements) as the datetime it names."""
    if isinstance(value, list):
        return [_from_iso(element) for element in value]
    if isinstance(value, str):
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value
