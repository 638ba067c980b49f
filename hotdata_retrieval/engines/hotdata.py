"""The Hotdata engine: compiled plans run on a Hotdata workspace through hotdata-framework.

:class:`HotdataEngine` meets the engine contract (:class:`~hotdata_retrieval.engines.base.
Engine`: ``search(plan) -> SearchResult``, ``sql(text) -> pyarrow.Table``, ``indexes(table)
-> TableIndexes``, ``plan_search(table, query, ...) -> SearchPlan``) and has ``embedder_for``
and ``index_catalog`` besides, over hotdata-framework's ``HotdataClient``. Needs the
``hotdata`` extra; the module imports without it, and constructing an engine then says what
to install.

What it does that a hand-written client call does not (engine contract §5, §5.1, §8):

- **One statement per search.** A plan compiles to one SQL statement (a fusion included),
  sent in one ``POST /v1/query``.
- **The database is resolved once**, when the engine is made, and the resolved
  ``ManagedDatabase`` is handed to every ``execute_sql`` call. Given a name or id string,
  ``execute_sql`` re-resolves it on every call — an extra ``GET /v1/databases/{id}`` per query
  (hotdata-framework 0.14.1 ``execute_sql`` docstring; contract §5.1).
- **The engine's own message.** hotdata-framework raises ``RuntimeError(e.reason)`` — the bare
  HTTP reason, ``"Bad Request"`` — and keeps the response body on ``__cause__.body``
  (contract §5, §8). :class:`HotdataApiError` carries the message from that body
  (``{"error": {"code", "message"}}``, the SDK's ``ApiErrorResponse``).
- **Managed tables changed by key.** ``tables``, ``read_table``, ``read_rows``,
  ``upsert_rows`` and ``delete_rows`` (a document table's capabilities) write the
  database's managed tables through the framework's loads (``upsert``, ``delete``) and read
  them with SQL (:mod:`~hotdata_retrieval.engines._managed_tables`).
- **Indexes from the control plane.** Indexes are not visible in SQL (contract §1.7); they
  are read with ``IndexesApi.list_indexes(connection_id, schema, table)`` using the database's
  ``default_connection_id``. A ``pending`` index is never offered (a search against one fails).

Routing (:meth:`HotdataEngine.plan_search`): the library's one router,
:func:`hotdata_retrieval.routing.plan_search`, under :data:`~hotdata_retrieval.routing.
HOTDATA_ROUTING`: text → BM25; semantic → the engine-embedded ``vector_search`` over a
provider-backed index, or a caller-embedded nearest-neighbour search over a plain index (needs
an embedder); hybrid → BM25 fused with a *plain* vector index, caller-embedded, because a
provider-backed index cannot share its table with any other index (contract §1.2,
hotdata-langchain CHANGELOG 0.10.0).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import attrs

from hotdata_retrieval._deadline import Pending
from hotdata_retrieval._http import HttpCall, call_within
from hotdata_retrieval._words import counted
from hotdata_retrieval.compile import DialectProfile, to_sql
from hotdata_retrieval.engines._managed_tables import (
    BUILT_VECTOR_INDEXES,
    ManagedTableRows,
    listed_arrow_type,
)
from hotdata_retrieval.engines.base import RoutesByIndexes, hotdata_profile
from hotdata_retrieval.engines.checks import (
    check_filter_values,
    declared_value_kind,
    merged_column_facts,
    merged_kinds,
    missing_table_error,
    planner_error_advice,
)
from hotdata_retrieval.engines.errors import EngineError as EngineError
from hotdata_retrieval.engines.limits import ResponseLimits
from hotdata_retrieval.engines.results import SearchResult, executed_plan, search_result
from hotdata_retrieval.errors import HotdataApiError as HotdataApiError
from hotdata_retrieval.errors import HotdataConfigError as HotdataConfigError
from hotdata_retrieval.errors import PlanError, row_name
from hotdata_retrieval.indexes import (
    IndexCatalog,
    IndexEntry,
    IndexKind,
    TableIndexes,
    VectorIndex,
)
from hotdata_retrieval.plan.names import DEFAULT_CATALOG, DEFAULT_SCHEMA, TableName
from hotdata_retrieval.plan.search import SearchPlan
from hotdata_retrieval.routing import (
    HOTDATA_ROUTING,
    RoutingPolicy,
    plan_search,
    search_request,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from hotdata_framework import HotdataClient, ManagedDatabase, QueryResult

DEFAULT_VECTOR_METRIC = "l2"
"""The metric of a vector index whose listing names none: the server picks ``l2`` when a
vector index is created without one (engine contract §1.7, hotdata-framework ``create_index``
docstring)."""

_INSTALL_HINT = (
    "the Hotdata engine needs the hotdata extra: pip install 'hotdata-retrieval[hotdata]'"
)
_MAX_DATABASE_PAGES = 100
_MAX_MESSAGE = 2000
_QUOTED_MIXED_CASE = re.compile(r'"[^"]*[A-Z][^"]*"')


DEFAULT_REQUEST_DEADLINE = 120.0
"""Seconds one request to the Hotdata API may take in all, connecting and reading included."""

REQUEST_DEADLINE_VARIABLE = "HOTDATA_REQUEST_DEADLINE"
"""The environment variable :meth:`HotdataEngine.from_env` reads the deadline from."""

_REDACTED = "<redacted API key>"

MAX_ABANDONED_REQUESTS = 4
"""How many requests given up at their deadline may still be running at once; past that, a
new request is refused until one of them ends. The deadline shuts down a request's
connection, so its thread ends at once; what no socket's shutdown reaches (a slow name
lookup) cannot pile up threads without bound."""


class _Requests:
    """Requests to the API within a total deadline and the response limits, and failures
    told without the API key.

    A socket timeout restarts with every byte that arrives (a server sending one byte every
    half second held a call with ``request_timeout=2`` for 38 s), so the deadline is kept
    from outside the request (:func:`~hotdata_retrieval._http.call_within`): at the deadline
    the call fails and the connections of its requests are shut down, so their thread stops
    reading and ends. Each answer is read within ``limits``
    (:mod:`hotdata_retrieval._http`). A server or proxy that echoes the request puts the key
    in its error: every message shown is cleared of it, and an error holding it is raised
    without its cause. At most :data:`MAX_ABANDONED_REQUESTS` abandoned requests that have not
    ended yet are tolerated at once.
    """

    def __init__(
        self, deadline: float, secrets: Sequence[str], limits: ResponseLimits | None = None
    ) -> None:
        self.deadline = _check_deadline(deadline, "request_deadline")
        self.limits = _check_limits(limits)
        self._secrets = tuple(secret for secret in secrets if secret)
        self._abandoned: list[Pending] = []
        self._lock = threading.Lock()

    def run(self, function: Callable[[], Any], *, what: str, sql: str | None = None) -> Any:
        """``function()`` (one request) within the deadline; its own failures propagate.

        Raises:
            HotdataApiError: no complete answer within the deadline, or
                :data:`MAX_ABANDONED_REQUESTS` earlier requests are still unanswered.
            ResponseLimitError: an answer larger than :attr:`limits` allows.
        """
        with self._lock:
            self._abandoned = [pending for pending in self._abandoned if not pending.done()]
            if len(self._abandoned) >= MAX_ABANDONED_REQUESTS:
                raise HotdataApiError(
                    f"{len(self._abandoned)} earlier requests to the Hotdata API are still "
                    f"unanswered past their deadline of {self.deadline:g} seconds; no new "
                    "request is sent until one of them ends",
                    sql=sql,
                )
        call = HttpCall(self.limits, answer=f"the Hotdata API's answer to {what}")
        ended, pending = call_within(function, self.deadline, call=call, name="hdq-hotdata-request")
        if not ended:
            with self._lock:
                self._abandoned.append(pending)
            raise HotdataApiError(
                f"the Hotdata API gave no complete answer to {what} within {self.deadline:g} "
                "seconds (request_deadline); the request was abandoned",
                sql=sql,
            )
        return pending.result()

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced."""
        for secret in self._secrets:
            text = text.replace(secret, _REDACTED)
        return text

    def leaks(self, error: BaseException) -> bool:
        """Whether the key appears anywhere along ``error``'s chain (messages, bodies)."""
        node: BaseException | None = error
        while node is not None:
            texts = [str(node), str(getattr(node, "body", "") or "")]
            if any(secret in text for secret in self._secrets for text in texts):
                return True
            node = node.__cause__ or node.__context__
        return False

    def failure(self, error: BaseException, *, sql: str | None = None) -> HotdataApiError:
        """The :class:`HotdataApiError` telling ``error``, the key removed."""
        made = _api_error(error, sql=sql, redact=self.redact)
        message = self.redact(str(made))
        if message == str(made):
            return made
        return HotdataApiError(message, sql=sql, status=made.status, code=made.code)

    def raise_failure(self, error: BaseException, *, sql: str | None = None) -> NoReturn:
        """Raise :meth:`failure` of ``error``; without its cause when that holds the key."""
        failure = self.failure(error, sql=sql)
        if self.leaks(error):
            raise failure from None
        raise failure from error


def _check_limits(limits: Any) -> ResponseLimits:
    if limits is None:
        return ResponseLimits()
    if not isinstance(limits, ResponseLimits):
        raise HotdataConfigError(
            f"response_limits must be a ResponseLimits, got {type(limits).__name__}"
        )
    return limits


def _check_deadline(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise HotdataConfigError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _deadline_from_environment() -> float:
    """:data:`REQUEST_DEADLINE_VARIABLE` as seconds, else :data:`DEFAULT_REQUEST_DEADLINE`.

    Raises:
        HotdataConfigError: it is set but not a positive number.
    """
    text = os.environ.get(REQUEST_DEADLINE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_REQUEST_DEADLINE
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        raise HotdataConfigError(
            f"{REQUEST_DEADLINE_VARIABLE} must be a positive number of seconds, got {text!r}"
        )
    return _check_deadline(value, REQUEST_DEADLINE_VARIABLE)


# -- errors --------------------------------------------------------------------------------


def _api_exception(error: BaseException) -> Any:
    """The SDK ``ApiException`` behind ``error`` (itself, or along its cause chain)."""
    from hotdata.exceptions import ApiException

    node: BaseException | None = error
    seen: set[int] = set()
    while node is not None and id(node) not in seen:
        if isinstance(node, ApiException):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return None


def _body_text(body: Any) -> str:
    if isinstance(body, (bytes, bytearray)):
        return bytes(body).decode("utf-8", errors="replace")
    return "" if body is None else str(body)


def _message_and_code(body: str) -> tuple[str | None, str | None]:
    """``(message, code)`` from an API error body: ``{"error": {"code", "message"}}``
    (``ApiErrorResponse``), ``{"error": "<code>"}`` (the workspaces API's ``Error``), or
    ``{"message": ...}``."""
    try:
        document = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(document, Mapping):
        return None, None
    error = document.get("error")
    if isinstance(error, Mapping):
        message, code = error.get("message"), error.get("code")
        return (
            message if isinstance(message, str) and message else None,
            code if isinstance(code, str) else None,
        )
    message = document.get("message")
    if isinstance(message, str) and message:
        return message, error if isinstance(error, str) else None
    if isinstance(error, str) and error:
        return None, error
    return None, None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def engine_error_message(
    error: BaseException,
    *,
    sql: str | None = None,
    redact: Callable[[str], str] | None = None,
) -> str:
    """The readable message behind an error raised by hotdata-framework or the SDK.

    hotdata-framework raises ``RuntimeError("Bad Request")`` for a rejected query and keeps
    the SDK's ``ApiException`` — whose ``body`` holds the engine's message — as its cause.
    This returns that message; failing that, the body's text; failing that, the status, with
    a hint when ``sql`` quotes a mixed-case identifier (the engine answers that with an
    empty-body 400: engine contract §4). ``redact`` is applied to each text before it is
    clipped and its whitespace joined, so a secret it removes is never cut in two first.
    """
    clean = redact or (lambda text: text)
    api_error = _api_exception(error)
    if api_error is None:
        return _clip(clean(str(error))) or type(error).__name__
    body = clean(_body_text(getattr(api_error, "body", None)))
    message, code = _message_and_code(body)
    if message:
        return _clip(message)
    status = getattr(api_error, "status", None)
    reason = getattr(api_error, "reason", None) or "error"
    if body.strip():
        return _clip(f"HTTP {status} {reason}: {code or body}")
    text = f"the Hotdata API answered HTTP {status} ({reason}) with no message"
    if sql is not None and _QUOTED_MIXED_CASE.search(sql):
        text += (
            "; the engine stores identifiers in lower case and rejects a quoted mixed-case "
            "identifier this way: write it unquoted or in lower case"
        )
    return text


def _api_error(
    error: BaseException, *, sql: str | None = None, redact: Callable[[str], str] | None = None
) -> HotdataApiError:
    api_error = _api_exception(error)
    status = None if api_error is None else getattr(api_error, "status", None)
    code = None
    if api_error is not None:
        body = _body_text(getattr(api_error, "body", None))
        _, code = _message_and_code(redact(body) if redact else body)
    return HotdataApiError(
        engine_error_message(error, sql=sql, redact=redact),
        sql=sql,
        status=int(status) if status is not None else None,
        code=code,
    )


def _client_failures() -> tuple[type[BaseException], ...]:
    """What the client raises for a failed request: the framework's ``RuntimeError``
    (``HotdataError`` included), the SDK's ``OpenApiException``, urllib3's ``HTTPError``
    (connection refused, too many retries), timeouts, socket errors, and pydantic's
    ``ValidationError`` (a ``ValueError``) for a response that does not parse."""
    from hotdata.exceptions import OpenApiException
    from urllib3.exceptions import HTTPError

    return (RuntimeError, OpenApiException, HTTPError, TimeoutError, OSError, ValueError)


# -- results -------------------------------------------------------------------------------


def _column(values: list[Any]) -> pa.Array:
    import pyarrow as pa

    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # JSON values of mixed kinds (a column of numbers and text): keep them as text.
        return pa.array([_as_text(value) for value in values], type=pa.string())


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def result_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """A ``QueryResult``'s columns and rows (JSON values) as an Arrow table.

    Types are inferred from the values — the API's response carries none — so a column of
    whole numbers is ``int64``, one mixing whole and fractional numbers is ``double``, and a
    vector is ``list<double>``. A column mixing numbers with text is returned as text.
    """
    import pyarrow as pa

    names = list(columns)
    width = len(names)
    for position, row in enumerate(rows):
        if len(row) != width:
            raise EngineError(
                f"{row_name(position)} of the API's answer has {counted(len(row), 'value')} for "
                f"{counted(width, 'column')}"
            )
    arrays = [_column([row[index] for row in rows]) for index in range(width)]
    return pa.Table.from_arrays(arrays, names=names)


# -- routing -------------------------------------------------------------------------------


def route_search(indexes: TableIndexes, query: str, **options: Any) -> SearchPlan:
    """:func:`hotdata_retrieval.routing.plan_search` under the Hotdata engine's policy
    (:data:`~hotdata_retrieval.routing.HOTDATA_ROUTING`: hybrid fuses BM25 with a plain vector
    index only), the request built from keywords (:func:`~hotdata_retrieval.routing.
    search_request`; ``embed_query`` beside them). Kept so that code written against earlier
    releases runs unchanged; new code calls :meth:`HotdataEngine.plan_search`.

    Raises:
        PlanError: as :func:`~hotdata_retrieval.routing.plan_search`.
    """
    embed_query = options.pop("embed_query", None)
    request = search_request(indexes.table, query, **options)
    return plan_search(indexes, request, embed_query=embed_query, policy=HOTDATA_ROUTING)


# -- index metadata ------------------------------------------------------------------------


def _index_records(listing: Any) -> list[dict[str, Any]]:
    """Control-plane index records as plain dicts, leaving out index types this library
    does not know (so a new kind of index does not break reading the others)."""
    known = {kind.value for kind in IndexKind}
    records = []
    for info in listing.indexes:
        kind = str(getattr(info.index_type, "value", info.index_type)).lower()
        if kind not in known:
            continue
        records.append(
            {
                "index_name": info.index_name,
                "index_type": kind,
                "columns": list(info.columns),
                "metric": info.metric,
                "source_column": info.source_column,
                "status": str(getattr(info.status, "value", info.status)),
            }
        )
    return records


def table_indexes(
    catalog: IndexCatalog, table: TableName, *, key_column: str = "id"
) -> TableIndexes:
    """What ``table`` can be searched by, from its index catalog: ready indexes only.

    BM25 columns are every column of a ready BM25 index. A vector index becomes a
    :class:`~hotdata_retrieval.indexes.VectorIndex` on its (first) column with its metric
    (``l2`` when the listing names none, the server's default) and, for a provider-backed
    index, its source text column; a plain index has no source column (``None``).
    """
    ready = [entry for entry in catalog.indexes_on(table) if entry.ready]
    bm25 = tuple(
        dict.fromkeys(
            column for entry in ready if entry.kind is IndexKind.BM25 for column in entry.columns
        )
    )
    vectors = tuple(_vector_index(entry) for entry in ready if entry.kind is IndexKind.VECTOR)
    return TableIndexes(table=table, bm25_columns=bm25, vectors=vectors, key_column=key_column)


def _vector_index(entry: IndexEntry) -> VectorIndex:
    metric = entry.metric.value if entry.metric is not None else DEFAULT_VECTOR_METRIC
    # A plain index has no source column (``None``); a provider-backed one names its text.
    return VectorIndex(
        column=entry.columns[0],
        source_column=entry.source_column,
        metric=metric,
    )


def _describe_pending(entries: Iterable[IndexEntry]) -> str:
    return ", ".join(
        f"{entry.kind.value} on {', '.join(entry.columns)}"
        + (f" (over {entry.source_column})" if entry.source_column else "")
        for entry in entries
    )


# -- the engine ----------------------------------------------------------------------------


@attrs.frozen
class _ResolvedDatabase:
    database: ManagedDatabase
    catalog: str
    connections: Mapping[str, str]


def _require_framework() -> None:
    try:
        import hotdata_framework  # noqa: F401
    except ImportError:
        raise HotdataConfigError(_INSTALL_HINT) from None


class HotdataEngine(RoutesByIndexes, ManagedTableRows):
    """Search a Hotdata database with compiled plans, or run raw SQL on it.

    Args:
        client: a ``hotdata_framework.HotdataClient``. The engine does not close a client it
            was given.
        database: a resolved ``ManagedDatabase`` (used as is), or a database id or name,
            resolved here once. A name must be unique in the workspace.
        embedder: embeds query text for plain (caller-embedded) vector indexes; it must be
            the model that wrote the vectors. Not needed for BM25 or provider-backed indexes.
        profile: the dialect profile :meth:`search` compiles plans with (default
            ``hotdata``); one made from it with another compiler carries a fusion defined
            outside the library (:func:`~hotdata_retrieval.engines.base.hotdata_profile`).
        request_deadline: seconds one request may take in all, connecting and reading
            included (default 120); past it the call is a :class:`HotdataApiError` and the
            request's connection is shut down. Messages never show the client's API key.
        response_limits: what one answer of the API may cost
            (:class:`~hotdata_retrieval.engines.limits.ResponseLimits`: 256 MiB as sent and
            decompressed, by default); past it the call is a
            :class:`~hotdata_retrieval.errors.ResponseLimitError` and the connection is closed.
            The engine reads every answer of ``client`` within them: it puts its own pool
            manager in front of the client's (:mod:`hotdata_retrieval._http`).

    Raises:
        HotdataConfigError: no such database, or several with that name, or a bad
            ``request_deadline`` or ``response_limits``.
        HotdataApiError: the API refused to read the database.
        EngineError: ``profile`` writes another dialect's SQL.

    ::

        from hotdata_retrieval.engines.hotdata import HotdataEngine

        with HotdataEngine.from_env(database="support") as engine:
            plan = engine.plan_search("tickets", "login fails after upgrade", limit=5)
            for hit in engine.search(plan):
                print(hit.key, hit.score)
    """

    def __init__(
        self,
        client: HotdataClient,
        database: str | ManagedDatabase,
        *,
        embedder: Any = None,
        profile: str | DialectProfile = "hotdata",
        request_deadline: float = DEFAULT_REQUEST_DEADLINE,
        response_limits: ResponseLimits | None = None,
    ) -> None:
        _require_framework()
        from hotdata_retrieval._http.pool_manager import bound_pool_manager

        self.profile = hotdata_profile(profile, "the Hotdata engine")
        self._client = client
        self._owns_client = False
        self.embedder = embedder
        self._requests = _Requests(
            request_deadline, [str(getattr(client, "_api_key", "") or "")], response_limits
        )
        bound_pool_manager(client.api, self._requests.limits)
        resolved = _resolve_database(client, database, self._requests)
        self._database = resolved.database
        self.catalog = resolved.catalog
        self.schema = DEFAULT_SCHEMA
        self._connections = dict(resolved.connections)

    # -- construction --------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        database: str | ManagedDatabase,
        *,
        api_key: str,
        workspace_id: str,
        host: str | None = None,
        request_timeout: float | tuple[float, float] | None = None,
        request_deadline: float = DEFAULT_REQUEST_DEADLINE,
        response_limits: ResponseLimits | None = None,
        embedder: Any = None,
    ) -> HotdataEngine:
        """An engine over a new client for ``workspace_id`` at ``host`` (default: the
        ``HOTDATA_API_URL`` environment variable, else ``https://api.hotdata.dev``).

        ``request_timeout`` is the client's socket timeout (seconds, or ``(connect, read)``;
        default: the deadline); ``request_deadline`` bounds each request in all (default
        120 s); ``response_limits`` each answer (default 256 MiB as sent and decompressed).
        The engine owns the client and closes it in :meth:`close`.
        """
        _require_framework()
        from hotdata_framework import HotdataClient

        if not api_key:
            raise HotdataConfigError("api_key must be a non-empty string")
        if not workspace_id:
            raise HotdataConfigError("workspace_id must be a non-empty string")
        deadline = _check_deadline(request_deadline, "request_deadline")
        client = HotdataClient(
            api_key,
            workspace_id,
            host=host,
            request_timeout=deadline if request_timeout is None else request_timeout,
        )
        return cls._owning(client, database, embedder, deadline, response_limits)

    @classmethod
    def from_env(
        cls,
        database: str | ManagedDatabase,
        *,
        embedder: Any = None,
        response_limits: ResponseLimits | None = None,
    ) -> HotdataEngine:
        """An engine configured from the environment, as ``HotdataClient.from_env()`` reads it:
        ``HOTDATA_API_KEY`` (required), ``HOTDATA_API_URL`` (default
        ``https://api.hotdata.dev``) and ``HOTDATA_WORKSPACE`` — if that is unset, the first
        active workspace the key can see is used, else the first one (engine contract §5;
        hotdata-framework 0.14.1, ``env.resolve_workspace_selection``) — and
        ``HOTDATA_REQUEST_DEADLINE``, the seconds one request may take in all (default 120),
        also the client's socket timeout. The workspace listing is read within the deadline
        and ``response_limits``, as every later request is.

        The engine owns the client and closes it in :meth:`close`.

        Raises:
            HotdataConfigError: ``HOTDATA_API_KEY`` is unset, the key sees no workspace, the
                database does not exist, or ``HOTDATA_REQUEST_DEADLINE`` is not a positive
                number.
            HotdataApiError: the API refused a request, or gave no answer within the deadline.
        """
        _require_framework()
        from hotdata_framework import HotdataClient
        from hotdata_framework.env import default_api_key, default_host, explicit_workspace_id

        deadline = _deadline_from_environment()
        api_key = default_api_key()
        if not api_key:
            raise HotdataConfigError(
                "HOTDATA_API_KEY must be set (configure with HOTDATA_API_KEY, "
                "HOTDATA_API_URL and HOTDATA_WORKSPACE)"
            )
        host = default_host()
        requests = _Requests(deadline, [api_key], response_limits)
        workspace = explicit_workspace_id() or _listed_workspace(api_key, host, requests)
        client = HotdataClient(api_key, workspace, host=host, request_timeout=deadline)
        return cls._owning(client, database, embedder, deadline, response_limits)

    @classmethod
    def _owning(
        cls,
        client: HotdataClient,
        database: str | ManagedDatabase,
        embedder: Any,
        deadline: float,
        response_limits: ResponseLimits | None,
    ) -> HotdataEngine:
        try:
            engine = cls(
                client,
                database,
                embedder=embedder,
                request_deadline=deadline,
                response_limits=response_limits,
            )
        except BaseException:
            client.close()
            raise
        engine._owns_client = True
        return engine

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def client(self) -> HotdataClient:
        """The hotdata-framework client."""
        return self._client

    @property
    def database(self) -> ManagedDatabase:
        """The resolved database every statement is scoped to."""
        return self._database

    @property
    def workspace_id(self) -> str:
        """The workspace the client talks to."""
        return self._client.workspace_id

    def close(self) -> None:
        """Close the client if this engine made it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> HotdataEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- tables and indexes --------------------------------------------------------------

    def table_name(self, name: str | TableName) -> TableName:
        """``name`` completed with the database's catalog and the ``public`` schema."""
        return TableName.parse(name, default_catalog=self.catalog, default_schema=self.schema)

    def _connection_for(self, table: TableName) -> str:
        connection = self._connections.get(table.catalog)
        if connection is None:
            known = ", ".join(sorted(self._connections))
            raise HotdataConfigError(
                f"catalog '{table.catalog}' of '{table}' is not one this database answers to; "
                f"known: {known}"
            )
        return connection

    def index_catalog(self, table: str | TableName) -> IndexCatalog:
        """Every index on ``table`` as the control plane lists it, pending ones included.

        One ``GET /v1/connections/{connection_id}/tables/{schema}/{table}/indexes``.

        Raises:
            HotdataApiError: the API refused the listing; no such table (status 404), named
                beside the tables of the database's schema
                (:func:`~hotdata_retrieval.engines.checks.missing_table_error`).
            HotdataConfigError: the table's catalog is not one the database answers to.
        """
        from hotdata.api.indexes_api import IndexesApi

        name = self.table_name(table)
        connection = self._connection_for(name)
        try:
            try:
                listing = self._requests.run(
                    lambda: IndexesApi(self._client.api).list_indexes(
                        connection, name.schema, name.name
                    ),
                    what=f"the index listing of {name}",
                )
            except _client_failures() as error:
                self._requests.raise_failure(error)
        except HotdataApiError as failure:
            if failure.status != 404 or (name.catalog, name.schema) != (self.catalog, self.schema):
                raise
            held = self.tables
            if name.name in held:
                raise
            missing = missing_table_error(name, held, where=" in the database")
            raise HotdataApiError(str(missing), status=404, code=failure.code) from None
        return IndexCatalog.from_index_records(name, _index_records(listing))

    def indexes(self, table: str | TableName, *, key_column: str = "id") -> TableIndexes:
        """What ``table`` can be searched by: its ready BM25 columns and vector indexes
        (a plain one with ``source_column=None``). Pending indexes are never offered.

        Args:
            table: the table, completed with the database's catalog and ``public``.
            key_column: the table's unique key (the control plane does not list keys).

        Raises:
            HotdataApiError: the API refused the listing (no such table, for one).
        """
        name = self.table_name(table)
        return table_indexes(self.index_catalog(name), name, key_column=key_column)

    def embedder_for(self, table: str | TableName) -> Any:
        """The embedder a search of ``table`` needs on this side: :attr:`embedder` when the
        table has a ready plain vector index, else ``None`` (BM25 and provider-backed indexes
        embed nothing here). The engine cannot check which model wrote a plain column."""
        indexes = self.indexes(table)
        if any(not vector.provider_backed for vector in indexes.vectors):
            return self.embedder
        return None

    agent_sql_refusal: ClassVar[str] = (
        "the Hotdata query API does not promise to refuse statements that write"
    )
    """Why the agent tools offer no SQL tool on this engine. ``POST /v1/query`` runs whatever
    statement it is sent under the API key's rights: the SDK says that only a query in a
    translated dialect (``duckdb``, ``postgres``, ``snowflake``) must be read-only, not one in
    the engine's own ``hotsql``, which hotdata-framework sends (hotdata 0.12.0,
    ``models/query_request.py``, field ``dialect``; engine contract §5), and no read-only
    session or transaction is offered. A parser's check in this process is not a guard
    (``docs/adapters.md``, "Security model"), so SQL written by a model is not run here."""

    vector_indexes: ClassVar[tuple[str, ...]] = BUILT_VECTOR_INDEXES
    """A plain vector index of each vector column of a table this engine writes, with
    ``vector_index="hnsw"`` (:mod:`~hotdata_retrieval.engines._managed_tables`)."""

    routing_policy: ClassVar[RoutingPolicy] = HOTDATA_ROUTING
    """How :meth:`plan_search` routes: hybrid fuses BM25 with a plain vector index only."""

    def _route_indexes(self, table: str | TableName) -> TableIndexes:
        """The ready indexes of ``table``, from one listing request (the control plane lists
        no keys: the key is ``id`` unless the request names one)."""
        name = self.table_name(table)
        return table_indexes(self.index_catalog(name), name, key_column="id")

    def _query_embedder(self, table: TableName) -> Any:
        """:attr:`embedder`: queries of a plain index are embedded here."""
        return self.embedder

    def _routing_failed(self, error: PlanError, table: TableName) -> PlanError:
        """``error``, naming the indexes still building that would have served."""
        pending = [
            entry for entry in self.index_catalog(table).indexes_on(table) if not entry.ready
        ]
        if not pending:
            return error
        return PlanError(
            f"{error}; still building, so not offered: {_describe_pending(pending)}",
            field=error.field,
            value=error.value,
        )

    # -- queries -------------------------------------------------------------------------

    def _execute(self, text: str) -> QueryResult:
        try:
            result: QueryResult = self._requests.run(
                lambda: self._client.execute_sql(text, database=self._database),
                what="the query",
                sql=text,
            )
        except _client_failures() as error:
            self._requests.raise_failure(error, sql=text)
        return result

    def sql(self, text: str) -> pa.Table:
        """Run one SQL statement in the database and return its rows as an Arrow table.

        Column types are inferred from the JSON values (the API sends none).

        Raises:
            HotdataApiError: the engine's own message (planning or execution), or the API's.
        """
        result = self._execute(text)
        return result_table(result.columns, result.rows)

    def _executed_plan(self, plan: SearchPlan) -> SearchPlan:
        """:func:`~hotdata_retrieval.engines.results.executed_plan` of ``plan``, its filter
        checked and typed against its tables' columns as the control plane lists them
        (:meth:`_listed_columns`, one request per table, made only for a plan with a
        filter), as every engine that knows its columns types a filter (the local engine's
        facts, :func:`~hotdata_retrieval.engines.checks.merged_column_facts`): ISO text is
        the instant it names whatever zone the column has, a number is compared exactly
        with an integer, float or decimal column. A table the listing does not hold, or
        lists without its columns, leaves the filter as written (the engine answers).

        Raises:
            PlanError: a value its column cannot be compared with
                (:func:`~hotdata_retrieval.engines.checks.check_filter_values`).
            HotdataApiError: the API refused a listing.
        """
        import pyarrow as pa

        if plan.filter is None:
            return executed_plan(plan)
        listed: list[dict[str, str]] = []
        for table in plan.tables:
            try:
                columns = self._listed_columns(self.table_name(table))
            except (EngineError, HotdataConfigError):  # no such table: the engine's answer
                return executed_plan(plan)
            if columns is None:
                return executed_plan(plan)
            listed.append(columns)
        each = [
            {name: declared_value_kind(declared) for name, declared in columns.items()}
            for columns in listed
        ]
        kinds = each[0] if len(each) == 1 else merged_kinds(each)
        schemas = [
            pa.schema(
                [
                    (name, kind)
                    for name, declared in columns.items()
                    if (kind := listed_arrow_type(declared)) is not None
                ]
            )
            for columns in listed
        ]
        check_filter_values(plan.filter, kinds)
        # a literal finer than a coarse timestamp column is folded onto its grid: DataFusion
        # casts it to the column's unit, cutting it (ms = '….250001' kept the row at .250)
        return executed_plan(plan, kinds, merged_column_facts(schemas))

    def search(self, plan: SearchPlan) -> SearchResult:
        """Compile ``plan`` to one statement, run it, and return typed hits, best first.

        The statement projects the key and, for a fusion, each branch's rank and raw score
        (as the local engine's ``search`` does); each hit keeps only the plan's columns.

        Raises:
            HotdataApiError: the engine's own message — a missing table, column or index.
            PlanError: the engine found no key column (pass ``key_column``), or a fusion's
                side table lacks the rows' columns (pass ``rows_from``): its message, with
                the argument (:func:`~hotdata_retrieval.engines.checks.planner_error_advice`).
        """
        executed = self._executed_plan(plan)
        statement = to_sql(executed, self.profile)
        try:
            result = self._execute(statement)
        except HotdataApiError as error:
            advice = planner_error_advice(plan, str(error))
            if advice is not None:
                raise advice from error
            raise
        missing = [
            name
            for name in (*executed.projection, *executed.result_columns)
            if name not in result.columns
        ]
        if missing:
            raise EngineError(
                f"the engine's answer lacks column '{missing[0]}'; it returned "
                f"{', '.join(result.columns) or 'no columns'}",
                sql=statement,
            )
        rows = [dict(zip(result.columns, row)) for row in result.rows]
        return search_result(plan, executed, rows, statement)


def _listed_workspace(api_key: str, host: str, requests: _Requests) -> str:
    """The workspace ``HotdataClient.from_env`` picks when none is named: the first active one
    the key can see, else the first (hotdata-framework 0.14.1,
    ``env.resolve_workspace_selection``), listed by a client of the engine's bounds.

    Raises:
        HotdataConfigError: the key sees no workspace.
        HotdataApiError: the API refused the listing, or gave no answer within the deadline.
    """
    from hotdata import ApiClient, Configuration
    from hotdata.api.workspaces_api import WorkspacesApi
    from hotdata_framework.client import apply_default_request_timeout

    from hotdata_retrieval._http.pool_manager import bound_pool_manager

    api = ApiClient(Configuration(host=host, api_key=api_key, workspace_id=None))
    try:
        apply_default_request_timeout(api, requests.deadline)
        bound_pool_manager(api, requests.limits)
        listing = requests.run(
            lambda: WorkspacesApi(api).list_workspaces(), what="the workspace listing"
        )
    except _client_failures() as error:
        requests.raise_failure(error)
    finally:
        api.close()
    workspaces = list(listing.workspaces or ())
    if not workspaces:
        raise HotdataConfigError(
            "the API key sees no Hotdata workspace (configure with HOTDATA_API_KEY, "
            "HOTDATA_API_URL and HOTDATA_WORKSPACE)"
        )
    active = [workspace for workspace in workspaces if workspace.active]
    return str((active or workspaces)[0].public_id)


def _resolve_database(
    client: HotdataClient, database: str | ManagedDatabase, requests: _Requests
) -> _ResolvedDatabase:
    """Resolve ``database`` once: an id with one ``GET /v1/databases/{id}``; a name (when the
    id lookup answers 404) through the paged listing, which must hold exactly one database of
    that name, then one GET. A ``ManagedDatabase`` costs no request."""
    from hotdata.api.databases_api import DatabasesApi
    from hotdata_framework import ManagedDatabase

    if isinstance(database, ManagedDatabase):
        return _ResolvedDatabase(
            database=database,
            catalog=DEFAULT_CATALOG,
            connections={DEFAULT_CATALOG: database.default_connection_id},
        )
    if not isinstance(database, str) or not database.strip():
        raise HotdataConfigError(
            f"database must be a ManagedDatabase or a non-empty id or name, got {database!r}"
        )
    api = DatabasesApi(client.api)
    failures = _client_failures()
    what = f"the lookup of database {database!r}"
    try:
        detail = requests.run(lambda: api.get_database(database), what=what)
    except failures as error:
        api_error = _api_exception(error)
        if api_error is None or getattr(api_error, "status", None) != 404:
            requests.raise_failure(error)
        detail = None
    if detail is None:
        matches: list[str] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_DATABASE_PAGES):
                page = requests.run(
                    functools.partial(
                        api.list_databases, search=database, cursor=cursor, limit=100
                    ),
                    what=what,
                )
                matches.extend(item.id for item in page.databases if item.name == database)
                if not page.has_more or not page.next_cursor:
                    break
                cursor = page.next_cursor
        except failures as error:
            requests.raise_failure(error)
        if not matches:
            raise HotdataConfigError(f"no database with id or name {database!r}")
        if len(matches) > 1:
            raise HotdataConfigError(
                f"{len(matches)} databases are named {database!r} ({', '.join(matches)}); "
                "database names are not unique, pass the id"
            )
        try:
            detail = requests.run(lambda: api.get_database(matches[0]), what=what)
        except failures as error:
            requests.raise_failure(error)
    catalog = (detail.default_catalog or DEFAULT_CATALOG).lower()
    connections = {catalog: str(detail.default_connection_id)}
    for attachment in detail.attachments or ():
        if attachment.alias:
            connections.setdefault(attachment.alias.lower(), str(attachment.connection_id))
    return _ResolvedDatabase(
        database=ManagedDatabase(
            id=str(detail.id),
            description=detail.name,
            default_connection_id=str(detail.default_connection_id),
        ),
        catalog=catalog,
        connections=connections,
    )
