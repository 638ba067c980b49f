"""An in-process stand-in for the part of turbopuffer's HTTP API that the ``turbopuffer``
client sends for :class:`~hotdata_retrieval.engines.turbopuffer.TurbopufferEngine`, executing
each query on a :class:`LocalEngine`.

So the real client runs end to end in tests, over real HTTP, with no network: the server
listens on ``127.0.0.1`` on an ephemeral port, in a daemon thread, and stops at
:meth:`FakeTurbopufferApi.stop` (or after ``lifetime_s``).

Served (paths and bodies as turbopuffer 3.1's ``resources/namespaces.py`` sends them):

- ``GET /v1/namespaces`` (``namespaces``): the namespaces whose name starts with ``prefix``,
  ``page_size`` per page (default 1,000) after ``cursor``;
- ``POST /v2/namespaces/{ns}`` (``write``): ``schema``, ``create_namespace``,
  ``upsert_columns`` (a document's attributes replaced whole, a missing one null) and
  ``deletes``, with ``rows_affected``, ``rows_upserted``, ``rows_deleted`` (the documents
  that existed) and, with ``return_affected_ids``, ``upserted_ids`` and ``deleted_ids``;
- ``DELETE /v2/namespaces/{ns}`` (``delete_all``), 404 for a missing namespace;
- ``GET /v1/namespaces/{ns}/schema`` (``schema``): each attribute's declared configuration;
- ``POST /v2/namespaces/{ns}/query`` (``query``, one query; ``multi_query``, with
  ``?stainless_overload=multiQuery``, several): each
  query's ``rank_by`` (``BM25``, ``ANN``, or an attribute and ``asc``/``desc``: "order by
  attribute", whose rows carry no ``$dist``), ``filters``, ``top_k`` and
  ``include_attributes``; rows carry ``id``, ``$dist`` and the attributes (vectors as
  floats).

Filters are read with turbopuffer's documented semantics, not SQL's: a missing (null)
attribute is a value like any other (``NotEq "en"`` matches it, ``Not`` of a comparison with
it is true). Each leaf is made two-valued before it is handed to the local engine. BM25 is the
local engine's (the library's analysis), ANN an exact scan under the namespace's metric. Every
request needs ``Authorization: Bearer <api key>``.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import struct
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import attrs
import pyarrow as pa

from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError
from hotdata_retrieval.plan.filters import (
    Comparison,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Predicate,
)
from hotdata_retrieval.plan.search import Bm25Search, NearestNeighborSearch, SearchPlan
from tests.hostile_http import HostileAnswer, serve_hostile

__all__ = ["FakeTurbopufferApi", "RecordedRequest"]

_MAX_BODY = 16 << 20
_METRICS = {"cosine_distance": "cosine", "euclidean_squared": "l2"}
_COMPARISONS = {"Eq": "=", "Lt": "<", "Lte": "<=", "Gt": ">", "Gte": ">="}


@attrs.frozen
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


class _ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.define
class _Namespace:
    table: str
    schema: dict[str, dict[str, Any]]
    rows: dict[Any, dict[str, Any]] = attrs.Factory(dict)


def _arrow_type(declared: str) -> pa.DataType:
    if declared.startswith("[]"):
        return pa.list_(_arrow_type(declared[2:]))
    if declared.startswith("["):
        return pa.list_(pa.float32(), int(declared[1 : declared.index("]")]))
    return {
        "string": pa.string(),
        "uuid": pa.string(),
        "int": pa.int64(),
        "uint": pa.uint64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "datetime": pa.timestamp("us", tz="UTC"),
    }[declared]


_DATETIME_TEXT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)
"""The text of a ``datetime`` value the fake takes: turbopuffer reads "an ISO 8601 formatted
string with a mandatory date and optional time and time zone" and converts it "to UTC (if
the time zone is specified)" (https://turbopuffer.com/docs/schema). The instant of a text
without a zone is not stated there, so the fake refuses one rather than guess it: a date and
a time, then ``Z`` or an offset (RFC 3339 ``date-time``)."""


def _datetime(value: Any) -> datetime.datetime:
    """The instant a ``datetime`` value names (:data:`_DATETIME_TEXT`), in UTC.

    Raises:
        _ApiError: any other value, with 400.
    """
    if not isinstance(value, str) or _DATETIME_TEXT.fullmatch(value) is None:
        raise _ApiError(
            400, f"invalid datetime {value!r}: an ISO 8601 date and time with a time zone"
        )
    fraction = re.search(r"\.([0-9]+)", value)
    if fraction is not None:  # Python reads at most six digits: microseconds
        value = value.replace(fraction.group(0), "." + fraction.group(1)[:6].ljust(6, "0"))
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(
            datetime.timezone.utc
        )
    except ValueError:
        raise _ApiError(400, f"invalid datetime {value!r}: no such date or time") from None


def _stored_datetime(value: Any) -> datetime.datetime:
    """A written ``datetime`` value (:func:`_datetime`) as the service keeps it: "a 64-bit
    integer representing milliseconds since the epoch" (https://turbopuffer.com/docs/schema),
    a finer fraction cut off."""
    moment = _datetime(value)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _operand(declared: str | None, operand: Any) -> Any:
    """A filter operand against an attribute of type ``declared``: a ``datetime`` one's text
    (an ``In`` list's, a ``[]datetime`` one's elements) read as :func:`_datetime` reads it,
    anything else as itself."""
    if declared not in ("datetime", "[]datetime") or operand is None:
        return operand
    if isinstance(operand, list):
        return [_datetime(value) for value in operand]
    return _datetime(operand)


def _datetime_out(value: Any) -> Any:
    """A value as the answer holds it: a datetime (a list's elements) as RFC 3339 text."""
    if isinstance(value, list):
        return [_datetime_out(element) for element in value]
    return value.isoformat() if isinstance(value, datetime.datetime) else value


def _vector(value: Any) -> Any:
    if isinstance(value, str):
        packed = base64.b64decode(value, validate=True)
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))
    return value


def _glob_class(pattern: str, index: int) -> tuple[str, int]:
    """The regular expression of the class ``[...]`` opening at ``pattern[index]``, and the
    index after it: ``!`` or ``^`` first negates it, a ``]`` first (after it) is a member,
    ``a-z`` is a range."""
    position = index + 1
    negated = position < len(pattern) and pattern[position] in "!^"
    if negated:
        position += 1
    members: list[str] = []
    first = True
    while position < len(pattern) and (first or pattern[position] != "]"):
        first = False
        if (
            position + 2 < len(pattern)
            and pattern[position + 1] == "-"
            and pattern[position + 2] != "]"
        ):
            members.append(f"{re.escape(pattern[position])}-{re.escape(pattern[position + 2])}")
            position += 3
        else:
            members.append(re.escape(pattern[position]))
            position += 1
    if position >= len(pattern):
        raise _ApiError(400, f"unclosed character class in glob {pattern!r}")
    return f"[{'^' if negated else ''}{''.join(members)}]", position + 1


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as Unix shells and Rust's ``globset`` read it, which turbopuffer's ``Glob``
    filter documents ("Unix-style glob"): ``*`` any text, ``?`` one character, ``[...]`` a
    class, ``{a,b}`` alternatives, ``\\`` an escape; anything else itself."""
    parts: list[str] = []
    depth = 0
    index = 0
    while index < len(pattern):
        character = pattern[index]
        if character == "*":
            parts.append(".*")
        elif character == "?":
            parts.append(".")
        elif character == "[":
            piece, index = _glob_class(pattern, index)
            parts.append(piece)
            continue
        elif character == "{":
            depth += 1
            parts.append("(?:")
        elif character == "}" and depth:
            depth -= 1
            parts.append(")")
        elif character == "," and depth:
            parts.append("|")
        elif character == "\\" and index + 1 < len(pattern):
            index += 1
            parts.append(re.escape(pattern[index]))
        else:
            parts.append(re.escape(character))
        index += 1
    if depth:
        raise _ApiError(400, f"unclosed alternation in glob {pattern!r}")
    return re.compile("".join(parts), re.DOTALL)


def _glob(column: str, pattern: Any, rows: Mapping[Any, Mapping[str, Any]]) -> InList:
    """The documents whose ``column`` is text the glob matches (a null or any other value
    never does), as an ``IN`` list of their ids."""
    if not isinstance(pattern, str):
        raise _ApiError(400, f"a glob is a string, not {pattern!r}")
    compiled = _glob_regex(pattern)
    return InList(
        column="id",
        values=[
            key
            for key, row in rows.items()
            if isinstance(row.get(column), str) and compiled.fullmatch(row[column])
        ],
    )


def _predicate(
    node: Any, rows: Mapping[Any, Mapping[str, Any]], schema: Mapping[str, Mapping[str, Any]]
) -> Predicate:
    """A turbopuffer filter as a predicate TRUE exactly where turbopuffer keeps a document
    of ``rows`` (two-valued: null compared like a value; a glob read over the rows
    themselves)."""
    if not isinstance(node, list) or not node:
        raise _ApiError(400, f"invalid filter {node!r}")
    if node[0] in ("And", "Or"):
        parts = [_predicate(part, rows, schema) for part in node[1]]
        if not parts:
            raise _ApiError(400, f"empty {node[0]} filter")
        combined = parts[0]
        for part in parts[1:]:
            combined = (combined & part) if node[0] == "And" else (combined | part)
        return combined
    if node[0] == "Not":
        return ~_predicate(node[1], rows, schema)
    column, operator, operand = node
    if operator not in ("Glob", "NotGlob"):
        operand = _operand(schema.get(column, {}).get("type"), operand)
    present = IsNull(column=column, negated=True)
    missing = IsNull(column=column)
    if operator in ("Eq", "NotEq") and operand is None:
        return missing if operator == "Eq" else present
    if operator in _COMPARISONS:
        return Comparison(column=column, operator=_COMPARISONS[operator], value=operand) & present
    if operator == "NotEq":
        return Comparison(column=column, operator="!=", value=operand) | missing
    if operator == "In":
        return (
            InList(column=column, values=operand) & present
            if operand
            else InList(column=column, values=[])
        )
    if operator == "NotIn":
        return InList(column=column, values=operand, negated=True) | missing
    if operator == "Glob":
        return _glob(column, operand, rows)
    if operator == "NotGlob":
        return InList(column="id", values=_glob(column, operand, rows).values, negated=True)
    if operator == "Contains":
        return ContainsAll(column=column, values=[operand]) & present
    if operator == "NotContains":
        return ~ContainsAll(column=column, values=[operand]) | missing
    if operator == "ContainsAny":
        return ContainsAny(column=column, values=operand) & present
    if operator == "NotContainsAny":
        return ~ContainsAny(column=column, values=operand) | missing
    raise _ApiError(400, f"the fake has no filter operator {operator!r}")


def _check_document_id(key: Any) -> None:
    """Refuse what is no document id: "Document IDs are unsigned 64-bit integers, 128-bit
    UUIDs, or strings" (https://turbopuffer.com/docs/write), so an integer below 0 or past
    2**64 - 1, a float or a boolean is refused as the service refuses it."""
    if isinstance(key, str):
        return
    if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key <= 2**64 - 1:
        raise _ApiError(
            400, f"invalid document id {key!r}: ids are unsigned 64-bit integers, UUIDs or strings"
        )


class FakeTurbopufferApi:
    """The fake API; namespaces live as tables of a :class:`LocalEngine` in ``directory``.

    Args:
        directory: where the local engine keeps the namespaces' tables.
        api_key: the only bearer token accepted.
        lifetime_s: the server shuts itself down after this long, whatever happens.
    """

    def __init__(
        self, directory: Path, *, api_key: str = "tpuf-test-key", lifetime_s: float = 300.0
    ):
        self.engine = LocalEngine(directory)
        self.api_key = api_key
        self.lifetime_s = lifetime_s
        self.requests: list[RecordedRequest] = []
        self.stall = threading.Event()
        """While set, every request waits until :attr:`released` is set before it is
        answered."""
        self.released = threading.Event()
        self._namespaces: dict[str, _Namespace] = {}
        self._hostile: list[HostileAnswer] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeTurbopufferApi:
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

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        self.released.set()
        server, self._server = self._server, None
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self.engine.close()

    def __enter__(self) -> FakeTurbopufferApi:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake turbopuffer API is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def bodies(self, method: str, path_suffix: str) -> list[Any]:
        """The bodies of the requests of ``method`` whose path ends with ``path_suffix``."""
        return [
            r.body for r in self.requests if r.method == method and r.path.endswith(path_suffix)
        ]

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

    # -- handling ----------------------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: Any,
        query: dict[str, list[str]] | None = None,
    ) -> tuple[int, Any]:
        if headers.get("authorization") != f"Bearer {self.api_key}":
            raise _ApiError(401, "invalid API key")
        parts = [unquote(part) for part in path.strip("/").split("/")]
        if parts == ["v1", "namespaces"] and method == "GET":
            with self._lock:
                return 200, self._listing(query)
        if len(parts) < 3 or parts[1] != "namespaces":
            raise _ApiError(404, f"no route {method} {path}")
        version, name, rest = parts[0], parts[2], parts[3:]
        with self._lock:
            if version == "v2" and not rest and method == "POST":
                return 200, self._write(name, body)
            if version == "v2" and not rest and method == "DELETE":
                self._existing(name)
                del self._namespaces[name]
                return 200, {"status": "OK"}
            if version == "v1" and rest == ["schema"] and method == "GET":
                return 200, self._existing(name).schema
            if version == "v2" and rest == ["query"] and method == "POST":
                if "queries" not in body:  # one query (``query``), not a multi-query
                    answer = self._multi_query(self._existing(name), {"queries": [body]})
                    return 200, {**answer.pop("results")[0], **answer}
                return 200, self._multi_query(self._existing(name), body)
        raise _ApiError(404, f"no route {method} {path}")

    def _listing(self, query: dict[str, list[str]] | None) -> dict[str, Any]:
        query = query or {}
        prefix = (query.get("prefix") or [""])[0]
        size = int((query.get("page_size") or ["1000"])[0])
        cursor = (query.get("cursor") or [""])[0]
        names = sorted(n for n in self._namespaces if n.startswith(prefix) and n > cursor)
        page = names[:size]
        more = len(names) > size
        return {"namespaces": [{"id": n} for n in page], "next_cursor": page[-1] if more else None}

    def _existing(self, name: str) -> _Namespace:
        found = self._namespaces.get(name)
        if found is None:
            raise _ApiError(404, f"namespace {name!r} was not found")
        return found

    def _write(self, name: str, body: dict[str, Any]) -> dict[str, Any]:
        namespace = self._namespaces.get(name)
        if namespace is None:
            if not body.get("create_namespace") and not body.get("upsert_columns"):
                raise _ApiError(404, f"namespace {name!r} was not found")
            schema = dict(body.get("schema") or {})
            if "id" not in schema:
                raise _ApiError(400, "creating a namespace needs the id type in its schema")
            namespace = _Namespace(table=f"ns{len(self.requests)}", schema=schema)
            self._namespaces[name] = namespace
        elif body.get("schema"):
            namespace.schema.update(body["schema"])
        columns = body.get("upsert_columns") or {}
        for key in [*(columns.get("id") or []), *(body.get("deletes") or [])]:
            _check_document_id(key)
        upserted: list[Any] = []
        if columns:
            lengths = {len(values) for values in columns.values()}
            if len(lengths) != 1 or "id" not in columns:
                raise _ApiError(400, "upsert_columns: every column of one length, with id")
            unknown = sorted(set(columns) - set(namespace.schema))
            if unknown and not body.get("schema"):
                raise _ApiError(400, f"unknown attributes {unknown}")
            for index in range(lengths.pop()):
                row = {column: values[index] for column, values in columns.items()}
                namespace.rows[row["id"]] = row
                upserted.append(row["id"])
        deleted = [key for key in body.get("deletes") or [] if namespace.rows.pop(key, None)]
        self._reload(namespace)
        answer: dict[str, Any] = {
            "status": "OK",
            "message": "written",
            "rows_affected": len(upserted) + len(deleted),
            "rows_upserted": len(upserted),
            "rows_deleted": len(deleted),
            "billing": {"billable_logical_bytes_written": 0},
        }
        if body.get("return_affected_ids"):
            if upserted:
                answer["upserted_ids"] = upserted
            if deleted:
                answer["deleted_ids"] = deleted
        return answer

    def _reload(self, namespace: _Namespace) -> None:
        fields = [pa.field(n, _arrow_type(c["type"])) for n, c in namespace.schema.items()]
        schema = pa.schema(fields)
        rows = list(namespace.rows.values())
        arrays = []
        for field in schema:
            values = [row.get(field.name) for row in rows]
            if pa.types.is_fixed_size_list(field.type):
                # the client sends a vector as base64 little-endian float32 (lib/vector.py)
                values = [_vector(value) for value in values]
            if pa.types.is_timestamp(field.type):
                values = [None if v is None else _stored_datetime(v) for v in values]
            elif pa.types.is_list(field.type) and pa.types.is_timestamp(field.type.value_type):
                values = [
                    None if v is None else [None if t is None else _stored_datetime(t) for t in v]
                    for v in values
                ]
            arrays.append(pa.array(values, field.type))
        table = pa.Table.from_arrays(arrays, schema=schema)
        text = [n for n, c in namespace.schema.items() if c.get("full_text_search")]
        metric = next(
            (
                _METRICS[c["ann"]["distance_metric"]]
                for c in namespace.schema.values()
                if isinstance(c.get("ann"), dict)
            ),
            "cosine",
        )
        self.engine.load_table(
            namespace.table, table, key_column="id", text_columns=text, vector_metric=metric
        )

    def _multi_query(self, namespace: _Namespace, body: dict[str, Any]) -> dict[str, Any]:
        results = [{"rows": self._query(namespace, query)} for query in body["queries"]]
        return {
            "results": results,
            "billing": {"billable_logical_bytes_queried": 0, "billable_logical_bytes_returned": 0},
            "performance": {
                "approx_namespace_size": len(namespace.rows),
                "cache_hit_ratio": 1.0,
                "cache_temperature": "hot",
                "exhaustive_search_count": 0,
                "query_execution_ms": 0,
                "server_total_ms": 0,
            },
        }

    def _ordered(self, namespace: _Namespace, query: dict[str, Any]) -> list[dict[str, Any]]:
        """A query ordered by an attribute: the documents its filters keep, by the
        attribute's value (``asc`` or ``desc``), ``top_k`` of them, with no ``$dist``."""
        from hotdata_retrieval.engines.local.masks import passing_rows

        attribute, direction = query["rank_by"]
        if attribute not in namespace.schema or direction not in ("asc", "desc"):
            raise _ApiError(400, f"invalid rank_by {query['rank_by']!r}")
        include = list(query.get("include_attributes") or [])
        unknown = [name for name in include if name not in namespace.schema]
        if unknown:
            raise _ApiError(400, f"unknown attributes {unknown}")
        if not isinstance(query.get("top_k"), int) or not 1 <= query["top_k"] <= 1200:
            raise _ApiError(400, f"top_k must be from 1 to 1200, got {query.get('top_k')!r}")
        table = self.engine.read_table(namespace.table)
        keep = [True] * table.num_rows
        if query.get("filters") is not None:
            keep = list(
                passing_rows(_predicate(query["filters"], namespace.rows, namespace.schema), table)
            )
        keys = [key for key, kept in zip(table.column("id").to_pylist(), keep) if kept]
        documents = [namespace.rows[key] for key in keys]
        documents.sort(
            key=lambda row: (row.get(attribute) is None, row.get(attribute)),
            reverse=direction == "desc",
        )
        vectors = {
            name for name, config in namespace.schema.items() if config["type"].startswith("[")
        }
        rows = []
        for document in documents[: query["top_k"]]:
            out = {"id": document["id"]}
            for name in include:
                value = document.get(name)
                out[name] = _vector(value) if name in vectors and value is not None else value
            rows.append(out)
        return rows

    def _query(self, namespace: _Namespace, query: dict[str, Any]) -> list[dict[str, Any]]:
        if len(query.get("rank_by") or ()) == 2:
            return self._ordered(namespace, query)
        attribute, function, operand = query["rank_by"]
        if function == "BM25":
            if not namespace.schema.get(attribute, {}).get("full_text_search"):
                raise _ApiError(400, f"attribute {attribute!r} has no full-text index")
            branch: Any = Bm25Search(table=namespace.table, column=attribute, query_text=operand)
        elif function == "ANN":
            config = namespace.schema.get(attribute, {})
            if not isinstance(config.get("ann"), dict):
                raise _ApiError(400, f"attribute {attribute!r} has no ANN index")
            branch = NearestNeighborSearch(
                table=namespace.table,
                column=attribute,
                query_vector=operand,
                metric=_METRICS[config["ann"]["distance_metric"]],
                exact=True,
            )
        else:
            raise _ApiError(400, f"the fake ranks by BM25 or ANN, not {function!r}")
        include = list(query.get("include_attributes") or [])
        unknown = [name for name in include if name not in namespace.schema]
        if unknown:
            raise _ApiError(400, f"unknown attributes {unknown}")
        if not isinstance(query.get("top_k"), int) or not 1 <= query["top_k"] <= 1200:
            raise _ApiError(400, f"top_k must be from 1 to 1200, got {query.get('top_k')!r}")
        # turbopuffer returns the ranked vector attribute too when it is asked for
        ranked_vector = branch.column if function == "ANN" and branch.column in include else None
        plan = SearchPlan(
            source=branch,
            filter=None
            if query.get("filters") is None
            else _predicate(query["filters"], namespace.rows, namespace.schema),
            limit=query["top_k"],
            columns=["id", *(name for name in include if name != ranked_vector)],
            key_column="id",
            include_vectors=ranked_vector is not None,
        )
        try:
            result = self.engine.search(plan)
        except HotdataRetrievalError as error:
            raise _ApiError(400, str(error)) from None
        rows = []
        for hit in result.hits:
            dist = hit.score if hit.score is not None else hit.distance
            out = {"id": hit.key, "$dist": dist}
            for name in include:
                value = hit.columns.get(name)
                out[name] = _datetime_out(value)
            rows.append(out)
        return rows


class _Handler(BaseHTTPRequestHandler):
    api: FakeTurbopufferApi
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self, method: str) -> None:
        split = urlsplit(self.path)
        headers = {key.lower(): value for key, value in self.headers.items()}
        length = int(headers.get("content-length") or 0)
        if length > _MAX_BODY:
            self._send(413, {"status": "error", "error": "body too large"})
            return
        body: Any = None
        if length:
            body = json.loads(self.rfile.read(length))
        self.api.requests.append(
            RecordedRequest(method, split.path, parse_qs(split.query), headers, body)
        )
        hostile = self.api._next_hostile()
        if hostile is not None:
            serve_hostile(self, hostile)
            return
        if self.api.stall.is_set():
            self.api.released.wait(self.api.lifetime_s)
        try:
            status, payload = self.api.handle(
                method, split.path, headers, body, parse_qs(split.query)
            )
        except _ApiError as error:
            status, payload = error.status, {"status": "error", "error": error.message}
        self._send(status, payload)

    def _send(self, status: int, payload: Any) -> None:
        try:  # JSON holds no infinity or NaN (RFC 8259, section 6): a service cannot send one
            data = json.dumps(payload, allow_nan=False).encode()
        except ValueError:
            status = 500
            payload = {"status": "error", "error": "the answer holds a number JSON cannot hold"}
            data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline passed)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")


def fake_backed_engine(directory: Path, **options: Any) -> Any:
    """A :class:`~hotdata_retrieval.engines.turbopuffer.TurbopufferEngine` on a fake of its
    own, started in ``directory``; closing the engine stops the fake."""
    from hotdata_retrieval.engines.turbopuffer import TurbopufferEngine

    fake = FakeTurbopufferApi(directory).start()

    class _FakeBacked(TurbopufferEngine):
        def close(self) -> None:
            super().close()
            fake.stop()

    engine = _FakeBacked(api_key=fake.api_key, base_url=fake.url, **options)
    engine.fake = fake
    return engine
