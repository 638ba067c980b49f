"""Agent SQL on DuckDB, as the SQL worker runs it (:mod:`hotdata_retrieval.engines._worker`).

The worker opens a snapshot of the store's searchable tables read-only
(:class:`DuckdbAgentOpener`; DuckDB locks a database file to the one process that opened it for
writing, so the worker cannot open the store's own file) and runs each statement in a
:class:`DuckdbClosedSession`: DuckDB reads the statement twice before it runs, its parser for
what it calls (no function of :data:`REFUSED_FUNCTIONS`, every table function on
:data:`TABLE_FUNCTIONS`) and its binder for what it reads (the searchable tables and their
full-text indexes only).

This module is what the worker imports: it needs DuckDB, and none of the store engine's
loading code.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from hotdata_retrieval.engines._agent_sql import (
    BATCH_ROWS,
    ClosedSession,
    ClosedWorkerSession,
    RefusedStatementError,
    first_line,
)
from hotdata_retrieval.engines._worker import SessionOpener, WorkerSession
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.limits import SqlLimits

if TYPE_CHECKING:
    import pyarrow as pa

CLOSED_OPTIONS = (
    "enable_external_access",
    "autoload_known_extensions",
    "autoinstall_known_extensions",
    "allow_community_extensions",
)
"""DuckDB options the worker turns off once the fts extension is loaded (DuckDB documentation,
"Configuration" and "Securing DuckDB"): no file, URL or environment access (``read_csv``,
``read_text``, ``COPY``, ``ATTACH`` of a file, ``getenv``, installing or loading an
extension), no extension loaded behind a function's back. Then ``lock_configuration``: no
statement may change an option again."""

TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})
"""The table functions agent SQL may call: they compute rows and read nothing. Every other one
(the file readers, ``query``, ``duckdb_settings()``, ``duckdb_databases()`` and the other
catalog functions, which show paths and settings) is refused."""

CATALOG_FUNCTIONS = frozenset(
    {"duckdb_tables", "duckdb_views", "duckdb_columns", "duckdb_schemas", "duckdb_constraints"}
)
"""The table functions ``information_schema``'s views read (names, columns, constraints),
allowed in a statement's bound plan, never called by name: ``pg_settings`` and
``pg_database`` read ``duckdb_settings`` and ``duckdb_databases``, which show paths."""

REFUSED_FUNCTIONS = frozenset(
    {
        "current_setting",
        "getenv",
        "which_secret",
        "setseed",
        "json_serialize_sql",
        "json_serialize_plan",
        "json_deserialize_sql",
        "json_execute_serialized_sql",
        "levenshtein",
        "damerau_levenshtein",
        "editdist3",
        "jaro_similarity",
        "jaro_winkler_similarity",
        "printf",
        "format",
        "error",
    }
)
"""Scalar functions agent SQL may not call: they read the configuration or the environment
(``current_setting``, ``getenv``), change the session (``setseed``), plan or run SQL given as
text, whose plan shows settings and column statistics (``json_serialize_plan``), or cost the
square of their input's length in one call, which DuckDB does not interrupt (its interrupt
is checked between batches of rows: ``levenshtein`` of two 120,000-character texts ran 44 s
past a 2 s limit), or build a text as wide as their format string says, which the memory
limit does not see (``printf('%1000000000d', 1)`` built 1 GB past a 95 MiB limit; ``||``
and ``concat`` join texts), or raise an error of the statement's own text (``error``), which
would put stored text in the tool's error unquoted."""

BUILDERS = frozenset(
    {"repeat", "lpad", "rpad", "list_resize", "array_resize", "range", "generate_series"}
)
"""Scalar functions one call of which builds as much as its arguments say, which DuckDB's
memory limit does not see: it "only applies to the buffer manager" (DuckDB documentation,
"Limits"), not to the values a statement computes (``repeat('x', 1500000000)`` built 3 GB
past a 95 MiB limit, ``list_resize([1], 300000000)`` 16 GB). The worker's resident-set limit
stops them; agent SQL may call them only as :func:`_check_builder` allows, so the common case
is a one-line refusal naming the bound rather than a stopped worker."""

MAX_BUILT = 1_000_000
"""The most one call of :data:`BUILDERS` with literal arguments may build: a million
characters (``repeat``'s text times its count) or list elements (``range``)."""

MAX_PADDED = 10_000
"""The largest length ``lpad``, ``rpad``, ``list_resize`` and ``array_resize`` may be given
when they pad a row's value: each of a batch's 2,048 rows builds that many characters or
elements."""


@attrs.frozen(kw_only=True)
class DuckdbAgentOpener(SessionOpener):
    """What the SQL worker opens for a DuckDB store: its snapshot, read-only.

    Attributes:
        snapshot: the snapshot's database file (:meth:`~hotdata_retrieval.engines.duckdb.
            DuckdbEngine` writes it).
        extension: the fts extension's file, loaded before the options are closed.
        tables: the searchable tables (schema ``main``) agent SQL may read.
        index_schemas: the schemas of their full-text indexes, read by ``match_bm25``.
        memory_bytes: DuckDB's ``memory_limit`` and ``max_temp_directory_size`` in the worker.
        threads: DuckDB's thread count (``None``: DuckDB's default).
        temporary_directory: where DuckDB may spill, at most ``memory_bytes`` (emptied when a
            worker opens it).
    """

    snapshot: str
    extension: str
    tables: frozenset[str]
    index_schemas: frozenset[str]
    memory_bytes: int
    threads: int | None
    temporary_directory: str

    def open(self) -> WorkerSession:
        import duckdb

        from hotdata_retrieval.compile.duckdb import load_extension, set_option, set_threads

        # What a stopped worker spilled is its own: removed, so kills never add up on disk.
        shutil.rmtree(self.temporary_directory, ignore_errors=True)
        connection = duckdb.connect(self.snapshot, read_only=True)
        connection.execute(load_extension(self.extension))
        connection.execute(set_option("TimeZone", "UTC"))  # as the store's own connection
        if self.threads is not None:
            connection.execute(set_threads(self.threads))
        connection.execute(set_option("memory_limit", f"{int(self.memory_bytes)}B"))
        connection.execute(set_option("temp_directory", self.temporary_directory))
        # What spills to disk is held to the same size (PostgreSQL's temp_file_limit).
        connection.execute(set_option("max_temp_directory_size", f"{int(self.memory_bytes)}B"))
        for option in CLOSED_OPTIONS:
            connection.execute(set_option(option, False))
        connection.execute(set_option("lock_configuration", True))
        database = str(connection.execute("SELECT current_database()").fetchall()[0][0])
        session = DuckdbClosedSession(
            connection,
            tables=self.tables,
            index_schemas=self.index_schemas,
            database=database,
        )
        return ClosedWorkerSession("duckdb", session)

    def describe(self) -> str:
        return "the DuckDB store's snapshot"


class DuckdbClosedSession(ClosedSession):
    """Agent SQL on DuckDB, in the worker: a read-only connection to the store's snapshot, with
    :data:`CLOSED_OPTIONS` off, ``memory_limit`` set and its configuration locked. Before it
    runs, DuckDB reads the statement twice: its parser (``extract_statements``,
    ``json_serialize_sql``) checks that it is one ``SELECT`` that calls no table function but
    :data:`TABLE_FUNCTIONS`, none of :data:`REFUSED_FUNCTIONS`, :data:`BUILDERS` only within
    their bounds, no lambda, and no recursive query unless
    ``SqlLimits.allow_recursive_queries``; its binder (``json_serialize_plan``, unoptimised,
    whose output the agent never sees) resolves every table the statement reads, through common
    table expressions and subqueries, and each must be a searchable table, one of their
    full-text index tables, or a table function of ``information_schema``."""

    def __init__(
        self,
        connection: Any,
        *,
        tables: frozenset[str],
        index_schemas: frozenset[str],
        database: str,
    ) -> None:
        self._connection = connection
        self._tables = tables
        self._index_schemas = index_schemas
        self._database = database.lower()

    def _serialized(self, function: str, query: str, text: str) -> Any:
        serialized = self._connection.execute(f"SELECT {function}(?)", [query]).fetchone()[0]
        tree = json.loads(serialized)
        if tree.get("error"):
            message = str(tree.get("error_message", "cannot read the statement"))
            if "Cannot plan statement of type" in message:
                message = f"this kind of query cannot be checked, so it does not run ({message})"
            raise EngineError(f"duckdb: {first_line(message)}", sql=text)
        return tree

    def _check(self, text: str, limits: SqlLimits) -> str:
        """The one statement of ``text`` as DuckDB reads it, checked (class docstring)."""
        import duckdb

        try:
            statements = self._connection.extract_statements(text)
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {first_line(str(error))}", sql=text) from None
        if len(statements) != 1:
            raise RefusedStatementError(
                f"send one query at a time, got {len(statements)} statements", sql=text
            )
        statement = statements[0]
        if statement.type != duckdb.StatementType.SELECT:
            kind = statement.type.name.replace("_", " ")
            raise RefusedStatementError(
                f"{kind} is not allowed here: only read-only queries (SELECT) run", sql=text
            )
        query = str(statement.query)
        nodes = list(_nodes(self._serialized("json_serialize_sql", query, text)))
        # A table function's call is checked as a table function, not as a scalar one.
        table_calls = {
            id(node.get("function")) for node in nodes if node.get("type") == "TABLE_FUNCTION"
        }
        for node in nodes:
            if id(node) not in table_calls:
                self._check_node(node, limits, text)
        try:
            plan = self._serialized("json_serialize_plan", query, text)
        except duckdb.Error as error:
            raise EngineError(f"duckdb: {first_line(str(error))}", sql=text) from None
        for node in _nodes(plan):
            if node.get("type") == "LOGICAL_GET":
                self._check_read(node, text)
        return query

    def _check_node(self, node: dict[str, Any], limits: SqlLimits, text: str) -> None:
        kind = node.get("type")
        if kind == "RECURSIVE_CTE_NODE" and not limits.allow_recursive_queries:
            raise limits.recursion_error(text)
        if node.get("class") == "LAMBDA":
            raise RefusedStatementError(
                "lambda functions (x -> ..., list comprehensions) are not allowed here: each "
                "runs once per list element, building what the memory limit does not see",
                sql=text,
            )
        if kind == "TABLE_FUNCTION":
            name = str(node.get("function", {}).get("function_name", "")).lower()
            if name not in TABLE_FUNCTIONS:
                raise RefusedStatementError(
                    f"the table function {name}() is not allowed here", sql=text
                )
        elif node.get("class") == "FUNCTION":
            self._check_function(node, text)

    def _check_function(self, node: dict[str, Any], text: str) -> None:
        """Refuse a call of :data:`REFUSED_FUNCTIONS`, and a :data:`BUILDERS` call beyond its
        bounds."""
        name = str(node.get("function_name", "")).lower()
        if name in REFUSED_FUNCTIONS:
            raise RefusedStatementError(f"the function {name}() is not allowed here", sql=text)
        if name in BUILDERS:
            _check_builder(name, node.get("children") or [], text)

    def _check_read(self, node: dict[str, Any], text: str) -> None:
        name = str(node.get("name", ""))
        if name in TABLE_FUNCTIONS or name in CATALOG_FUNCTIONS:
            return
        data = node.get("function_data") or {}
        catalog = str(data.get("catalog", "")).lower()
        schema = str(data.get("schema", ""))
        table = str(data.get("table", ""))
        if name == "seq_scan" and catalog == self._database:
            if schema == "main" and table in self._tables:
                return
            if schema in self._index_schemas:
                return  # a full-text index's own tables, read by match_bm25
        shown = ".".join(part for part in (schema, table) if part) or f"{name}()"
        tables = self._tables
        listed = f" (the tables it may read: {', '.join(sorted(tables))})" if tables else ""
        raise RefusedStatementError(f"reading '{shown}' is not allowed here{listed}", sql=text)

    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        import pyarrow as pa

        query = self._check(text, limits)
        connection = self._connection
        connection.execute("BEGIN TRANSACTION")
        try:
            result = connection.execute(query)
            reader = (
                result.to_arrow_reader(BATCH_ROWS)
                if hasattr(result, "to_arrow_reader")
                else result.fetch_record_batch(BATCH_ROWS)
            )
            count = 0
            for batch in reader:
                count += 1
                yield batch
            if not count:
                yield pa.RecordBatch.from_pylist([], schema=reader.schema)
        finally:
            with contextlib.suppress(Exception):  # an interrupted statement ended it
                connection.execute("ROLLBACK")

    def cancel(self) -> None:
        self._connection.interrupt()

    def limit_of(self, error: BaseException) -> str | None:
        import duckdb

        return "memory_bytes" if isinstance(error, duckdb.OutOfMemoryException) else None

    def close(self) -> None:
        self._connection.close()


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    """Every object of a serialized statement or plan, depth first."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            yield node
            pending.extend(node.values())


def _literal(argument: Any) -> tuple[bool, Any]:
    """``(True, value)`` when a serialized argument is a literal, else ``(False, None)``."""
    if isinstance(argument, dict) and argument.get("class") == "CONSTANT":
        return True, (argument.get("value") or {}).get("value")
    return False, None


def _integer(value: Any) -> int | None:
    """``value`` when it is an integer (not a boolean), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _built(name: str, values: list[Any]) -> int | None:
    """What a call of ``name`` on the literal ``values`` builds, in characters or elements
    (``None`` when the arguments are not what the function takes)."""
    if name == "repeat" and len(values) == 2:
        count = _integer(values[1])
        unit = len(values[0]) if isinstance(values[0], (str, bytes, list)) else 1
        return None if count is None else unit * max(0, count)
    bounds = [_integer(value) for value in values]
    if not 1 <= len(bounds) <= 3 or any(bound is None for bound in bounds):
        return None
    numbers = [bound for bound in bounds if bound is not None]
    start, stop, step = [0, *numbers, 1] if len(numbers) == 1 else [*numbers, 1][:3]
    span, stride = abs(stop - start), max(1, abs(step))
    if name == "generate_series":  # its stop is included
        return span // stride + 1
    return -(-span // stride)


def _check_builder(name: str, arguments: list[Any], text: str) -> None:
    """Refuse a :data:`BUILDERS` call that could build more than its bound.

    ``repeat``, ``range`` and ``generate_series`` take literal arguments only (DuckDB computes
    a call of literals once per statement, not once per row) that build at most
    :data:`MAX_BUILT` characters or elements; ``lpad``, ``rpad``, ``list_resize`` and
    ``array_resize`` take a literal length of at most :data:`MAX_PADDED` and a literal fill.

    Raises:
        RefusedStatementError: naming the function and its bound.
    """
    literals = [_literal(argument) for argument in arguments]
    if name in ("lpad", "rpad", "list_resize", "array_resize"):
        length = _integer(literals[1][1]) if len(literals) > 1 else None
        fill_is_literal = all(known for known, _ in literals[2:])
        if length is None or abs(length) > MAX_PADDED or not fill_is_literal:
            raise RefusedStatementError(
                f"{name}() is allowed here only with a literal length of at most "
                f"{MAX_PADDED:,} and a literal fill: each row builds that much, beyond what "
                "the memory limit sees",
                sql=text,
            )
        return
    built = None
    if literals and all(known for known, _ in literals):
        built = _built(name, [value for _, value in literals])
    if built is None or built > MAX_BUILT:
        raise RefusedStatementError(
            f"{name}() is allowed here only with literal arguments that build at most "
            f"{MAX_BUILT:,} characters or elements: one call builds that much at once, "
            "beyond what the memory limit sees",
            sql=text,
        )
