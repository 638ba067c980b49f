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
  ``ListIndexesResponse`` from the indexes registered with :meth:`FakeHotdataApi.add_index`.

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
        self._injected: list[tuple[int, bytes]] = []
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
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return 401, {"error": {"code": "UNAUTHORIZED", "message": "invalid API key"}}
        parts = [unquote(part) for part in path.strip("/").split("/")]
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
        raise _ApiError(404, "NOT_FOUND", f"no route for {method} {path}")

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
        values = [table.column(i).to_pylist() for i in range(table.num_columns)]
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
        try:
            status, payload = self.api.handle(method, split.path, query, headers, body)
        except _ApiError as error:
            payload = {"error": {"code": error.code, "message": error.message}}
            status = error.status
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
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
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")
