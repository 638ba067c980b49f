"""An in-process stand-in for the part of the Hotdata REST API that hotdata-framework's
``HotdataClient`` uses, executing SQL on a :class:`LocalEngine`.

So the real client and SDK code runs end to end in tests, over real HTTP, with no network:
the server listens on ``127.0.0.1`` on an ephemeral port, in a daemon thread, and stops at
:meth:`FakeHotdataApi.stop` (or after ``lifetime_s``, whichever comes first).

Served (paths and payloads as the generated ``hotdata`` SDK sends and parses them):

- ``GET /v1/workspaces`` → ``ListWorkspacesResponse`` (``HotdataClient.from_env`` without
  ``HOTDATA_WORKSPACE``);
- ``GET /v1/databases`` (``search``, ``limit``, ``cursor``) → ``ListDatabasesResponse``;
- ``GET /v1/databases/{id}`` → ``DatabaseDetailResponse``;
- ``POST /v1/query`` (``X-Database-Id``) → ``QueryResponse``, or 400 with an
  ``ApiErrorResponse`` body ``{"error": {"code", "message"}}`` carrying the engine's message;
- ``GET /v1/connections/{connection_id}/tables/{schema}/{table}/indexes`` →
  ``ListIndexesResponse`` from the indexes registered with :meth:`FakeHotdataApi.add_index`;
- managed tables, as hotdata-framework writes them (``add_managed_table``,
  ``load_managed_table``, ``create_index``, ``list_managed_tables``):

  - ``POST /v1/databases/{id}/schemas/{schema}/tables`` (``AddManagedTableRequest``) →
    201 ``ManagedTableResponse``: a table declared, with its key, not yet loaded; 409 when
    the table exists;
  - ``POST /v1/uploads`` (``CreateUploadRequest``) → 201 ``UploadSessionResponse`` of mode
    ``single``, whose ``url`` is this server's ``PUT /storage/{upload_id}`` (a presigned URL:
    no bearer token); ``POST /v1/uploads/{id}/finalize`` (the ``X-Upload-Finalize-Token``
    header) → ``FinalizeUploadResponse``;
  - ``POST /v1/connections/{connection_id}/schemas/{schema}/tables/{table}/loads``
    (``LoadManagedTableRequest`` with an ``upload_id`` of parquet) → 200
    ``LoadManagedTableResponse`` (the load done inline; ``row_count`` the rows after it).
    ``replace`` and ``append`` as the SDK describes them; ``upsert``, ``update`` and
    ``delete`` by the request's ``key`` or else the one the table was declared with (400
    without either): an upsert replaces the rows of its keys and adds the others and must
    carry every column of the table (400 ``upload is missing column '<name>'``, as the live
    API answers: hotdata-langchain's vector store plan) and no other (400, the fake's own
    message), a delete takes the key column alone
    and ignores unknown keys, an update changes existing rows only. An upload is loaded once
    (409 after). The fake handles one key column;
  - ``POST /v1/connections/{connection_id}/tables/{schema}/{table}/indexes``
    (``CreateIndexRequest``) → 201 ``IndexInfoResponse``, built inline and listed ``ready``:
    a ``bm25`` index makes the local table's column searchable by ``bm25_search``; a
    ``vector`` index (a plain one: no embedding provider) is listed with its metric;
  - ``GET /v1/information_schema`` (``connection_id``, ``schema``, ``table``, ``limit``,
    ``cursor``, ``include_columns``) → ``InformationSchemaResponse``: the engine's tables and
    the declared ones; with ``include_columns=true`` a loaded table's columns, each
    ``data_type`` an Arrow type's name as Arrow's Rust crate displays it (``Int64``,
    ``Utf8``: the form the API's ``ColumnProfileInfo.data_type`` documents).

  Each load and index build keeps the local table's BM25 indexes on the columns a ``bm25``
  index was built on (the server keeps a table's indexes over its rows; the live API's
  timing of that is not modelled: here it is done when the request returns).

Every request needs ``Authorization: Bearer <api key>``, and every one but the workspace
listing ``X-Workspace-Id``. Error codes (``NOT_FOUND``, ``BAD_REQUEST``, ...) and the messages
the fake writes itself are its own; only the engine's messages come from the LocalEngine.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import attrs
import pyarrow as pa

from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError
from tests.hostile_http import HostileAnswer, serve_hostile

__all__ = ["FakeHotdataApi", "RecordedRequest"]

_MAX_BODY = 4 << 20
_TIMESTAMP = "2026-01-01T00:00:00Z"


@attrs.frozen
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@attrs.define
class _Database:
    id: str
    name: str | None
    connection_id: str
    attachments: list[dict[str, Any]] = attrs.Factory(list)


class _ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _json_default(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _json_values(column: pa.ChunkedArray) -> list[Any]:
    """``column``'s values for a JSON answer: a time of day as Arrow writes it, every digit
    of its unit (Python's ``datetime.time`` has no nanoseconds, so ``to_pylist`` would give
    two keys a nanosecond apart one text); others as ``to_pylist`` gives them."""
    if pa.types.is_time(column.type):
        return column.cast(pa.string()).to_pylist()
    return column.to_pylist()


class FakeHotdataApi:
    """The fake API over ``engine``; the engine's tables are the primary database's
    ``default.public`` tables.

    Args:
        engine: executes every query (its catalog and schema must be ``default.public``).
        api_key: the only bearer token accepted.
        workspace_id: the workspace listed (active) and required in ``X-Workspace-Id``.
        database_id, database_name, connection_id: the primary database.
        lifetime_s: the server shuts itself down after this long, whatever happens.
    """

    def __init__(
        self,
        engine: LocalEngine,
        *,
        api_key: str = "test-key",
        workspace_id: str = "ws_test",
        database_id: str = "db_support",
        database_name: str = "support",
        connection_id: str = "conn_support",
        lifetime_s: float = 300.0,
    ) -> None:
        self.engine = engine
        self.api_key = api_key
        self.workspace_id = workspace_id
        self.database_id = database_id
        self.connection_id = connection_id
        self.lifetime_s = lifetime_s
        self.requests: list[RecordedRequest] = []
        self._databases: dict[str, _Database] = {
            database_id: _Database(database_id, database_name, connection_id)
        }
        self._indexes: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        self._declared: dict[str, list[str]] = {}
        """The managed tables declared (``add_managed_table``) and their keys, by name."""
        self._uploads: dict[str, dict[str, Any]] = {}
        self._injected: list[tuple[int, bytes]] = []
        self._refusals: list[tuple[int, dict[str, str]]] = []
        self._hostile: list[HostileAnswer] = []
        self.compress_answers: str | None = None
        """``gzip`` or ``deflate``: answers are sent so compressed when the request accepts
        that encoding."""
        self.compressed = 0
        """How many answers were sent compressed."""
        self._lock = threading.Lock()
        self._engine_lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeHotdataApi:
        fake = self

        class Handler(_Handler):
            api = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    @property
    def running(self) -> bool:
        """Whether the server is serving."""
        return self._server is not None

    def stop(self) -> None:
        """Stop serving (idempotent; the lifetime timer calls it too)."""
        with self._stop_lock:
            server, self._server = self._server, None
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeHotdataApi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake Hotdata API is not running")
        port = self._server.server_address[1]
        return f"http://127.0.0.1:{port}"

    # -- configuration -----------------------------------------------------------------------

    def add_database(self, database_id: str, name: str | None, connection_id: str) -> None:
        """Another database (it serves no tables; for name-resolution tests)."""
        with self._lock:
            self._databases[database_id] = _Database(database_id, name, connection_id)

    def attach(self, alias: str | None, connection_id: str) -> None:
        """Attach a catalog (serving no tables) to the primary database under ``alias``."""
        with self._lock:
            self._databases[self.database_id].attachments.append(
                {"alias": alias, "connection_id": connection_id}
            )

    def add_index(
        self,
        table: str,
        *,
        index_type: str,
        columns: list[str],
        metric: str | None = None,
        source_column: str | None = None,
        status: str = "ready",
        name: str | None = None,
        schema: str = "public",
    ) -> None:
        """List an index on the primary database's ``schema.table``.

        A provider-backed vector index (one with ``source_column``) cannot share its table
        with any other index, as on the real engine (engine contract §1.2).
        """
        key = (self.connection_id, schema, table)
        record = {
            "columns": columns,
            "created_at": _TIMESTAMP,
            "index_name": name or f"{table}_{'_'.join(columns)}_{index_type}",
            "index_type": index_type,
            "metric": metric,
            "source_column": source_column,
            "status": status,
            "updated_at": _TIMESTAMP,
        }
        with self._lock:
            existing = self._indexes.setdefault(key, [])
            if existing and (source_column or any(r["source_column"] for r in existing)):
                raise ValueError(
                    "a provider-backed vector index cannot coexist with any other index on "
                    f"its table ({schema}.{table})"
                )
            existing.append(record)

    def index_engine_table(self, table: str) -> None:
        """List the indexes ``engine`` built for ``table``: BM25 for each text index, and a
        provider-backed cosine vector index for each embedded column."""
        entry = self.engine.tables[table]
        for column in entry.text_indexes:
            self.add_index(table, index_type="bm25", columns=[column])
        for vector in entry.vector_columns:
            self.add_index(
                table,
                index_type="vector",
                columns=[vector.name],
                metric=vector.metric,
                source_column=vector.source_column,
            )

    def respond_once(self, status: int, body: bytes | str | dict[str, Any]) -> None:
        """Answer the next ``POST /v1/query`` with ``status`` and ``body`` instead of running
        it."""
        raw = (
            json.dumps(body).encode()
            if isinstance(body, dict)
            else (body.encode() if isinstance(body, str) else body)
        )
        with self._lock:
            self._injected.append((status, raw))

    def refuse_next(self, count: int, status: int, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``count`` requests, whatever they are, with ``status`` (429 or 503,
        say) and ``headers`` (``Retry-After``), an error body, instead of running them."""
        with self._lock:
            self._refusals.extend([(status, dict(headers or {}))] * count)

    def _next_refusal(self) -> tuple[int, dict[str, str]] | None:
        with self._lock:
            return self._refusals.pop(0) if self._refusals else None

    def answer_hostile_once(self, kind: str) -> HostileAnswer:
        """Answer the next request, whatever it is, with a hostile answer of ``kind``
        (``tests/hostile_http.py``) instead of running it; returns it, to see what became of
        it."""
        answer = HostileAnswer(kind)
        with self._lock:
            self._hostile.append(answer)
        return answer

    def _next_hostile(self) -> HostileAnswer | None:
        with self._lock:
            return self._hostile.pop(0) if self._hostile else None

    # -- inspection --------------------------------------------------------------------------

    def count(self, method: str, path: str, *, prefix: bool = False) -> int:
        """How many ``method`` requests went to ``path`` (or to paths starting with it)."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if r.method == method and (r.path.startswith(path) if prefix else r.path == path)
            )

    @property
    def queries(self) -> list[str]:
        """The SQL text of every ``POST /v1/query``, in order."""
        with self._lock:
            return [r.body["sql"] for r in self.requests if r.path == "/v1/query"]

    @contextmanager
    def counting(self) -> Iterator[dict[str, int]]:
        """Count requests by ``"METHOD /path"`` while the block runs."""
        with self._lock:
            start = len(self.requests)
        counts: dict[str, int] = {}
        try:
            yield counts
        finally:
            with self._lock:
                for request in self.requests[start:]:
                    label = f"{request.method} {request.path}"
                    counts[label] = counts.get(label, 0) + 1

    # -- request handling --------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def handle(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int, Any]:
        parts = [unquote(part) for part in path.strip("/").split("/")]
        if method == "PUT" and len(parts) == 2 and parts[0] == "storage":
            return self._store_upload(parts[1], body)  # a presigned URL: no bearer token
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"error": {"code": "UNAUTHORIZED", "message": "invalid API key"}}
        if method == "GET" and parts == ["v1", "workspaces"]:
            return 200, {
                "ok": True,
                "workspaces": [
                    {
                        "public_id": "ws_other",
                        "name": "other",
                        "active": False,
                        "favorite": False,
                        "provision_status": "ready",
                    },
                    {
                        "public_id": self.workspace_id,
                        "name": "test",
                        "active": True,
                        "favorite": False,
                        "provision_status": "ready",
                    },
                ],
            }
        if headers.get("x-workspace-id") != self.workspace_id:
            return 403, {"error": {"code": "FORBIDDEN", "message": "unknown workspace"}}
        if method == "GET" and parts == ["v1", "databases"]:
            return 200, self._list_databases(query)
        if method == "GET" and len(parts) == 3 and parts[:2] == ["v1", "databases"]:
            return 200, self._database_detail(parts[2])
        if method == "POST" and parts == ["v1", "query"]:
            return self._query(headers, body)
        if (
            method == "GET"
            and len(parts) == 7
            and parts[:2] == ["v1", "connections"]
            and parts[3] == "tables"
            and parts[6] == "indexes"
        ):
            return 200, self._list_indexes(parts[2], parts[4], parts[5])
        if (
            method == "POST"
            and len(parts) == 7
            and parts[:2] == ["v1", "connections"]
            and parts[3] == "tables"
            and parts[6] == "indexes"
        ):
            return 201, self._create_index(parts[2], parts[4], parts[5], body)
        if (
            method == "POST"
            and len(parts) == 6
            and parts[:2] == ["v1", "databases"]
            and parts[3] == "schemas"
            and parts[5] == "tables"
        ):
            return 201, self._declare_table(parts[2], parts[4], body)
        if method == "POST" and parts == ["v1", "uploads"]:
            return 201, self._open_upload(body)
        if (
            method == "POST"
            and len(parts) == 4
            and parts[:2] == ["v1", "uploads"]
            and parts[3] == "finalize"
        ):
            return 200, self._finalize_upload(parts[2], headers)
        if (
            method == "POST"
            and len(parts) == 8
            and parts[:2] == ["v1", "connections"]
            and parts[3] == "schemas"
            and parts[5] == "tables"
            and parts[7] == "loads"
        ):
            return 200, self._load(parts[2], parts[4], parts[6], body)
        if method == "GET" and parts == ["v1", "information_schema"]:
            return 200, self._information_schema(query)
        raise _ApiError(404, "NOT_FOUND", f"no route for {method} {path}")

    # -- managed tables ----------------------------------------------------------------------

    def _check_place(self, connection_id: str, schema: str) -> None:
        if connection_id != self.connection_id or schema != self.engine.schema:
            raise _ApiError(
                404, "NOT_FOUND", f"schema '{schema}' of connection '{connection_id}' not found"
            )

    def _bm25_columns(self, table: str) -> list[str]:
        with self._lock:
            records = self._indexes.get((self.connection_id, self.engine.schema, table), [])
            return [r["columns"][0] for r in records if r["index_type"] == "bm25"]

    def _store(self, table: str, data: pa.Table) -> None:
        """``data`` as the local table ``table``: keyed by its declared key, its BM25
        indexes on the columns a ``bm25`` index was built on. The server keeps vectors of
        any norm, where the local engine refuses at load, under cosine, one whose squared
        norm no Float32 holds: the local table is loaded for ``l2``, which takes them (the
        statements the fake runs name their distance function)."""
        key = (self._declared.get(table) or [None])[0]
        if key is None and table in self.engine.tables:
            key = self.engine.tables[table].key_column
        self.engine.load_table(
            table,
            data,
            key_column=key,
            text_columns=self._bm25_columns(table),
            vector_metric="l2",
        )

    def _declare_table(self, database_id: str, schema: str, body: Any) -> dict[str, Any]:
        self._database(database_id)
        self._check_place(self.connection_id, schema)
        name = (body or {}).get("name")
        if not isinstance(name, str) or not name:
            raise _ApiError(400, "BAD_REQUEST", "a table needs a name")
        with self._engine_lock:
            if name in self._declared or name in self.engine.tables:
                raise _ApiError(409, "CONFLICT", f"table '{schema}.{name}' already exists")
            self._declared[name] = list((body or {}).get("key") or [])
        return {"connection_id": self.connection_id, "schema": schema, "table": name}

    def _open_upload(self, body: Any) -> dict[str, Any]:
        with self._lock:
            upload_id = f"upl_{len(self._uploads) + 1}"
            token = f"fin_{upload_id}"
            self._uploads[upload_id] = {"token": token, "data": None, "status": "pending"}
        return {
            "finalize_token": token,
            "headers": {},
            "mode": "single",
            "upload_id": upload_id,
            "url": f"{self.url}/storage/{upload_id}",
        }

    def _store_upload(self, upload_id: str, body: Any) -> tuple[int, Any]:
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None or upload["status"] != "pending":
                return 404, b""
            upload["data"] = body if isinstance(body, bytes) else b""
        return 200, b""

    def _finalize_upload(self, upload_id: str, headers: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None:
                raise _ApiError(404, "NOT_FOUND", f"upload '{upload_id}' not found")
            if headers.get("x-upload-finalize-token") != upload["token"]:
                raise _ApiError(400, "BAD_REQUEST", "invalid finalize token")
            if upload["data"] is None:
                raise _ApiError(400, "BAD_REQUEST", "nothing was uploaded")
            upload["status"] = "finalized"
            size = len(upload["data"])
        return {
            "content_type": "application/octet-stream",
            "created_at": _TIMESTAMP,
            "size_bytes": size,
            "status": "finalized",
            "upload_id": upload_id,
        }

    def _claim(self, upload_id: Any) -> pa.Table:
        import pyarrow.parquet as pq

        with self._lock:
            upload = self._uploads.get(upload_id) if isinstance(upload_id, str) else None
            if upload is None or upload["status"] == "pending":
                raise _ApiError(404, "NOT_FOUND", f"upload '{upload_id}' not found")
            if upload["status"] == "loaded":
                raise _ApiError(409, "CONFLICT", f"upload '{upload_id}' was already loaded")
            upload["status"] = "loaded"
            data = upload["data"]
        try:
            return pq.read_table(pa.BufferReader(data))
        except (pa.ArrowInvalid, OSError) as error:
            raise _ApiError(400, "BAD_REQUEST", f"the upload is no parquet file: {error}") from None

    def _load(self, connection_id: str, schema: str, table: str, body: Any) -> dict[str, Any]:
        self._check_place(connection_id, schema)
        body = body or {}
        mode = body.get("mode")
        if mode not in ("replace", "append", "delete", "update", "upsert"):
            raise _ApiError(400, "BAD_REQUEST", f"unknown load mode {mode!r}")
        with self._engine_lock:
            exists = table in self.engine.tables
            if not exists and table not in self._declared:
                raise _ApiError(404, "NOT_FOUND", f"table '{schema}.{table}' not found")
            data = self._claim(body.get("upload_id"))
            key = list(body.get("key") or self._declared.get(table) or [])
            if mode in ("delete", "update", "upsert"):
                if not key:
                    raise _ApiError(
                        400, "BAD_REQUEST", f"a {mode} load needs a key: the table has none"
                    )
                if len(key) != 1:
                    raise _ApiError(400, "BAD_REQUEST", "the fake handles one key column")
                if key[0] not in data.column_names:
                    raise _ApiError(400, "BAD_REQUEST", f"upload is missing column '{key[0]}'")
            try:
                self._apply(table, exists, mode, key, data)
            except HotdataRetrievalError as error:
                raise _ApiError(400, "BAD_REQUEST", str(error)) from None
            rows = self.engine.read_table(table) if table in self.engine.tables else data
        return {
            "arrow_schema_json": json.dumps([f.name for f in rows.schema]),
            "connection_id": self.connection_id,
            "row_count": rows.num_rows,
            "schema_name": schema,
            "table_name": table,
        }

    def _apply(self, table: str, exists: bool, mode: str, key: list[str], data: pa.Table) -> None:
        if mode == "replace" or (not exists and mode in ("append", "upsert")):
            self._store(table, data)
            return
        if not exists:  # delete or update of a table never loaded: nothing to change
            return
        current = self.engine.read_table(table)
        if mode == "append":
            self._store(table, pa.concat_tables([current, data.select(current.column_names)]))
            return
        if self.engine.tables[table].key_column != key[0]:
            # the local table is keyed otherwise: key it by the load's key
            self.engine.load_table(
                table,
                current,
                key_column=key[0],
                text_columns=self._bm25_columns(table),
                vector_metric="l2",
            )
        keys = data.column(key[0]).to_pylist()
        if mode == "delete":
            self.engine.delete_rows(table, keys)
            return
        missing = [name for name in current.column_names if name not in data.column_names]
        if missing:
            raise _ApiError(400, "BAD_REQUEST", f"upload is missing column '{missing[0]}'")
        extra = [name for name in data.column_names if name not in current.column_names]
        if extra:  # the fake's own message: the live API's answer is not recorded
            raise _ApiError(
                400, "BAD_REQUEST", f"upload has column '{extra[0]}', which the table lacks"
            )
        if mode == "update":
            held = set(current.column(key[0]).to_pylist())
            data = data.filter(pa.array([k in held for k in keys]))
        self.engine.upsert_rows(table, data.select(current.column_names))

    def _create_index(
        self, connection_id: str, schema: str, table: str, body: Any
    ) -> dict[str, Any]:
        self._check_place(connection_id, schema)
        body = body or {}
        columns = list(body.get("columns") or [])
        kind = body.get("index_type") or "sorted"
        with self._engine_lock:
            if table not in self.engine.tables:
                raise _ApiError(404, "NOT_FOUND", f"table '{schema}.{table}' not found")
            current = self.engine.read_table(table)
            unknown = [c for c in columns if c not in current.column_names]
            if not columns or unknown:
                raise _ApiError(400, "BAD_REQUEST", f"unknown columns {unknown or columns}")
            if body.get("embedding_provider_id"):
                raise _ApiError(400, "BAD_REQUEST", "the fake builds no provider-backed index")
            if kind == "bm25" and not pa.types.is_string(current.schema.field(columns[0]).type):
                raise _ApiError(400, "BAD_REQUEST", f"column '{columns[0]}' is not text")
            name = body.get("index_name") or f"{table}_{'_'.join(columns)}_{kind}"
            metric = body.get("metric") or ("l2" if kind == "vector" else None)
            self.add_index(
                table, index_type=kind, columns=columns, metric=metric, name=name, schema=schema
            )
            if kind == "bm25":
                self._store(table, current)
        return {
            "columns": columns,
            "created_at": _TIMESTAMP,
            "index_name": name,
            "index_type": kind,
            "metric": metric,
            "source_column": None,
            "status": "ready",
            "updated_at": _TIMESTAMP,
        }

    def _information_schema(self, query: dict[str, list[str]]) -> dict[str, Any]:
        def one(name: str) -> str | None:
            return (query.get(name) or [None])[0]

        connection_id, schema, table = one("connection_id"), one("schema"), one("table")
        limit = int(one("limit") or 100)
        start = int(one("cursor") or 0)
        with_columns = one("include_columns") == "true"
        with self._engine_lock:
            names = sorted(set(self.engine.tables) | set(self._declared))
            loaded = set(self.engine.tables)
            schemas = {
                name: self.engine.read_table(name).schema
                for name in loaded
                if with_columns and (table is None or name == table)
            }
        if connection_id not in (None, self.connection_id) or schema not in (
            None,
            self.engine.schema,
        ):
            names = []
        if table is not None:
            names = [name for name in names if name == table]
        page = names[start : start + limit]
        more = start + limit < len(names)
        return {
            "count": len(page),
            "has_more": more,
            "limit": limit,
            "next_cursor": str(start + limit) if more else None,
            "tables": [
                {
                    "connection": "default",
                    "last_sync": _TIMESTAMP if name in loaded else None,
                    "partition_by": [],
                    "schema": self.engine.schema,
                    "sorted_by": [],
                    "synced": name in loaded,
                    "table": name,
                    **(
                        {
                            "columns": [
                                {
                                    "name": field.name,
                                    "data_type": _arrow_type_name(field.type),
                                    "nullable": field.nullable,
                                }
                                for field in schemas[name]
                            ]
                        }
                        if name in schemas
                        else {}
                    ),
                }
                for name in page
            ],
        }

    def _database(self, database_id: str) -> _Database:
        with self._lock:
            database = self._databases.get(database_id)
        if database is None:
            raise _ApiError(404, "NOT_FOUND", f"database '{database_id}' not found")
        return database

    def _list_databases(self, query: dict[str, list[str]]) -> dict[str, Any]:
        search = (query.get("search") or [""])[0].lower()
        limit = int((query.get("limit") or ["50"])[0])
        start = int((query.get("cursor") or ["0"])[0])
        with self._lock:
            matching = [d for d in self._databases.values() if search in (d.name or "").lower()]
        page = matching[start : start + limit]
        more = start + limit < len(matching)
        return {
            "count": len(page),
            "databases": [
                {"default_catalog": "default", "default_schema": "main", "id": d.id, "name": d.name}
                for d in page
            ],
            "has_more": more,
            "limit": limit,
            "next_cursor": str(start + limit) if more else None,
        }

    def _database_detail(self, database_id: str) -> dict[str, Any]:
        database = self._database(database_id)
        return {
            "attachments": list(database.attachments),
            "default_catalog": "default",
            "default_connection_id": database.connection_id,
            "default_schema": "main",
            "id": database.id,
            "name": database.name,
        }

    def _list_indexes(self, connection_id: str, schema: str, table: str) -> dict[str, Any]:
        if (
            connection_id != self.connection_id
            or schema != self.engine.schema
            or table not in self.engine.tables
        ):
            raise _ApiError(404, "NOT_FOUND", f"table '{schema}.{table}' not found")
        with self._lock:
            records = list(self._indexes.get((connection_id, schema, table), []))
        return {"indexes": records}

    def _query(self, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        with self._lock:
            injected = self._injected.pop(0) if self._injected else None
        if injected is not None:
            return injected
        database_id = headers.get("x-database-id") or (body or {}).get("database_id")
        if not database_id:
            raise _ApiError(
                400,
                "BAD_REQUEST",
                "a database is required: set the X-Database-Id header or the database_id "
                "body field",
            )
        self._database(database_id)
        if not isinstance(body, dict) or not isinstance(body.get("sql"), str):
            raise _ApiError(400, "BAD_REQUEST", "the body must carry 'sql'")
        started = time.perf_counter()
        with self._engine_lock:
            try:
                table = self.engine.sql(body["sql"])
            except HotdataRetrievalError as error:
                raise _ApiError(400, "BAD_REQUEST", str(error)) from None
        columns = list(table.column_names)
        values = [_json_values(table.column(i)) for i in range(table.num_columns)]
        rows = [list(row) for row in zip(*values)] if values else []
        count = len(rows)
        with self._lock:
            run = len(self.requests)
        return 200, {
            "columns": columns,
            "execution_time_ms": int((time.perf_counter() - started) * 1000),
            "nullable": [True] * len(columns),
            "preview_row_count": count,
            "query_run_id": f"qrun_{run}",
            "result_id": f"rslt_{run}",
            "row_count": count,
            "rows": rows,
            "total_row_count": count,
            "truncated": False,
            "warning": None,
        }


class _Handler(BaseHTTPRequestHandler):
    api: FakeHotdataApi
    timeout = 10  # seconds a connection may sit idle

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        headers = {key.lower(): value for key, value in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        body: Any = None
        if length > _MAX_BODY:
            self._send(413, {"error": {"code": "PAYLOAD_TOO_LARGE", "message": "body too large"}})
            return
        if length:
            raw = self.rfile.read(length)
            if method == "PUT":  # a file's bytes, to storage
                body = raw
            else:
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", errors="replace")
        query = parse_qs(split.query)
        self.api._record(RecordedRequest(method, split.path, query, headers, body))
        hostile = self.api._next_hostile()
        if hostile is not None:
            serve_hostile(self, hostile)
            return
        refusal = self.api._next_refusal()
        if refusal is not None:
            status, extra = refusal
            message = {"error": {"code": "UNAVAILABLE", "message": "try again later"}}
            self._send(status, message, extra)
            return
        try:
            status, payload = self.api.handle(method, split.path, query, headers, body)
        except _ApiError as error:
            payload = {"error": {"code": error.code, "message": error.message}}
            status = error.status
        self._send(status, payload)

    def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = (
            payload
            if isinstance(payload, bytes)
            else json.dumps(payload, default=_json_default).encode()
        )
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        coding = self.api.compress_answers
        if data and coding and coding in self.headers.get("Accept-Encoding", ""):
            data = gzip.compress(data) if coding == "gzip" else zlib.compress(data)
            self.send_header("Content-Encoding", coding)
            self.api.compressed += 1
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PUT(self) -> None:
        self._serve("PUT")


_ARROW_TYPE_NAMES = {
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
    pa.float32(): "Float32",
    pa.float64(): "Float64",
    pa.bool_(): "Boolean",
    pa.string(): "Utf8",
    pa.large_string(): "LargeUtf8",
    pa.date32(): "Date32",
}


_RUST_UNITS = {"s": "Second", "ms": "Millisecond", "us": "Microsecond", "ns": "Nanosecond"}


def _arrow_type_name(kind: pa.DataType) -> str:
    """``kind``'s name as Arrow's Rust crate displays it (the service is DataFusion; the
    SDK's ``ColumnProfileInfo.data_type`` gives ``Timestamp(Microsecond, Some("UTC"))`` as
    an example); a type not listed keeps pyarrow's name."""
    if pa.types.is_timestamp(kind):
        zone = "None" if kind.tz is None else f'Some("{kind.tz}")'
        return f"Timestamp({_RUST_UNITS[kind.unit]}, {zone})"
    if pa.types.is_time(kind):
        return f"Time{kind.bit_width}({_RUST_UNITS[kind.unit]})"
    if pa.types.is_date64(kind):
        return "Date64"
    if pa.types.is_decimal(kind):
        return f"Decimal{kind.bit_width}({kind.precision}, {kind.scale})"
    if kind == pa.float16():
        return "Float16"
    if pa.types.is_fixed_size_list(kind):
        return f"FixedSizeList({kind.list_size} x {_arrow_type_name(kind.value_type)})"
    if pa.types.is_large_list(kind):
        return f"LargeList({_arrow_type_name(kind.value_type)})"
    if pa.types.is_list(kind):
        return f"List({_arrow_type_name(kind.value_type)})"
    return _ARROW_TYPE_NAMES.get(kind, str(kind))
