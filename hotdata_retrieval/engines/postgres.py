"""The PostgreSQL engine: plans compiled for the ``postgres`` dialect, run by PostgreSQL with
pgvector through psycopg 3 (the ``postgres`` extra).

``PostgresEngine(url)`` connects to any PostgreSQL server with pgvector (``CREATE EXTENSION
IF NOT EXISTS vector`` is run when the role may). :func:`throwaway_server` starts a private
server for tests and demos from the PostgreSQL 16 + pgvector 0.6.2 binaries of the
``pgserver`` wheel (its own launcher is not used: run as root it adds an operating-system user),
on 127.0.0.1 and a free port, in a temporary directory, and stops and removes it on exit.

``load_table`` writes the rows with one binary ``COPY`` (vectors as ``vector(n)``, sent in
pgvector's binary format), per text column a ``<column>__terms`` column of its analysed terms
(:mod:`hotdata_retrieval.analysis`) and its postings and statistics tables in the ``hdq_text``
schema, with a ``hdq__row`` column
numbering the rows (neither column listed among the table's columns), an optional HNSW index
per vector column
(``vector_index="hnsw"``, the operator class of ``vector_metric``, ``m`` and
``ef_construction`` from ``hnsw_settings``) and the catalog rows, in one transaction. The rows
are analysed and sent one batch at a time (:data:`~hotdata_retrieval.engines.store.
LOAD_BATCH_ROWS` rows); the statistics are counted as they go (:class:`TermCounts`), so the
memory a load holds beyond its Arrow table grows with the batch and the vocabulary, not with
the rows.
``sql(text)`` runs in a read-only transaction.

A search whose plan has a filter and a nearest branch runs with iterative index scans
(``hnsw.iterative_scan = strict_order``) where pgvector has them (0.8.0 and later), and with
index scans off otherwise: an HNSW index scan applies the filter after it has found
``hnsw.ef_search`` candidates, so a selective filter would leave the page short
(``shared/reference/bug-cases.md`` B18; pgvector README, "Filtering").

An HNSW index scan returns at most ``hnsw.ef_search`` rows (default 40; pgvector README,
"Query Options"), so a search with a nearest branch sets it, for its transaction, to the rows
each branch must rank (``limit + offset``, or the fusion's depth) when that is more; past
pgvector's largest ``ef_search`` (1000) the statement runs without index scans (exact).
Before, a top-60, a page at offset 50 or a fused branch of depth 100 stopped at 40 rows.

pgvector's ``<#>`` sums a dot product in Float32 (pgvector ``src/vector.c``,
``VectorInnerProduct``: ``float distance``, ``distance += ax[i] * bx[i]``), so a product whose
partial sums pass Float32's range is wrong: from ``[1e20, 1e20, 0]`` the row ``[-3e38, 3e38,
0]`` came back at NaN (``inf - inf``; its product is 0), and from ``[1, 1, 2]`` the row
``[3e38, 3e38, -3e38]`` came back first, at -inf (its product is 0). The catalog records each
vector column's largest norm (:attr:`~hotdata_retrieval.engines.store.StoreColumn.
largest_norm`), and a dot search whose query's norm times it is past half of Float32's
largest number (:func:`~hotdata_retrieval.engines._vector_norms.dot_products_fit`, LanceDB's
bound too) is refused (:meth:`PostgresEngine.check_plan`), naming the query vector; a table
loaded before the record existed has its column read for it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import shutil
import socket
import stat
import struct
import subprocess
import tempfile
import urllib.parse
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import sqlglot
from sqlglot import exp

from hotdata_retrieval.analysis import terms_column
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.compile.postgres import (
    OPERATOR_CLASSES,
    POSTGRES,
    ROW_COLUMN,
    TEXT_INDEX_SCHEMA,
    add_key_index,
    add_row_column,
    add_term_documents,
    allow_role_login,
    alter_role_setting,
    corpus_select,
    corpus_update,
    create_postings,
    create_role,
    delete_postings,
    drop_role,
    grant,
    hnsw_index_name,
    key_index_name,
    postings_keys,
    postings_of_rows,
    prune_terms,
    refuse_role_login,
    row_index_name,
    set_local,
    text_postings_row_index,
    text_postings_table,
    text_statistics_table,
)
from hotdata_retrieval.compile.statements import (
    CATALOG_TABLE,
    catalog_create,
    catalog_delete,
    catalog_insert,
    catalog_select,
    columns_query,
    create_table,
    delete_rows,
    drop_table,
    render,
    select_rows,
    table_node,
)
from hotdata_retrieval.engines._agent_sql import (
    BATCH_ROWS,
    ClosedSession,
    RefusedStatementError,
    first_line,
    rows_batch,
)
from hotdata_retrieval.engines._vector_norms import check_dot_search
from hotdata_retrieval.engines.checks import ColumnFacts, merged_kinds, record_batches, rows_table
from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.hnsw import (
    HnswSettings,
    HnswSettingsError,
    VectorIndexKind,
    require_vectors_to_index,
    unbuilt_vector_index,
)
from hotdata_retrieval.engines.limits import SqlLimits
from hotdata_retrieval.engines.results import SearchResult, executed_plan
from hotdata_retrieval.engines.store import (
    SqlStoreEngine,
    StoreColumn,
    StoreTable,
    analysed_terms,
    catalog_rows,
    check_terms_column,
    float32_columns,
    float64_columns,
    joined_terms,
    read_catalog,
    value_kinds,
    vector_columns_of,
)
from hotdata_retrieval.extras import require_extra
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import DistanceMetric, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.plan.steps import statement_rows

if TYPE_CHECKING:
    import pyarrow as pa

AGENT_ROLE = "hdq_agent"
"""The prefix of the role agent SQL runs as when the engine provisions it
(:class:`PostgresEngine`)."""

AGENT_ROLE_NAME = re.compile(f"{AGENT_ROLE}_([0-9a-f]{{12}})")
"""The names of the roles the engine makes for itself: :data:`AGENT_ROLE`, an underscore and
12 hex digits, which are also the key of the advisory lock its engine holds
(:func:`agent_role_lock`)."""

AGENT_LOGIN_SECONDS = 60
"""How long the password an agent session logs in with is valid, by the server's clock (the
role's ``VALID UNTIL``): the session opens at once, the role refuses logins again as soon as
it has, and a password a killed process left behind expires by then."""

_LOGIN_VALID_UNTIL = render(
    POSTGRES,
    sqlglot.parse_one(
        f"SELECT CAST(now() + INTERVAL '{AGENT_LOGIN_SECONDS} seconds' AS TEXT)", read="postgres"
    ),
)
"""The server's time :data:`AGENT_LOGIN_SECONDS` from now, as ``VALID UNTIL`` reads it."""

_LEFTOVER_ROLES = render(
    POSTGRES,
    sqlglot.parse_one(
        f"""
        SELECT r.rolname FROM pg_catalog.pg_roles AS r
        WHERE LEFT(r.rolname, {len(AGENT_ROLE) + 1}) = '{AGENT_ROLE}_'
          AND NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_stat_activity AS a WHERE a.usesysid = r.oid
          )
        """,
        read="postgres",
    ),
)
"""The roles named like the engine's own (:data:`AGENT_ROLE_NAME` is checked after) that no
session of the server runs as (``pg_stat_activity`` shows every session's role to every
role; PostgreSQL documentation, "The Cumulative Statistics System")."""

_ADVISORY_LOCKS = render(
    POSTGRES,
    sqlglot.parse_one(
        "SELECT l.classid, l.objid FROM pg_catalog.pg_locks AS l "
        "WHERE l.locktype = 'advisory' AND l.objsubid = 1",
        read="postgres",
    ),
)
"""The 64-bit advisory locks of every session of the server, in every database (``pg_locks``
shows them all; a ``bigint`` key is ``classid`` and ``objid``, ``objsubid`` 1: PostgreSQL
documentation, "pg_locks")."""


def agent_role_lock(role: str) -> int:
    """The advisory lock key of a role of the engine's own (:data:`AGENT_ROLE_NAME`): its 12
    hex digits as an integer, which PostgreSQL lists in ``pg_locks`` as ``classid`` (the high
    32 bits) and ``objid`` (the low 32).

    >>> agent_role_lock("hdq_agent_000100000002")
    4294967298
    """
    matched = AGENT_ROLE_NAME.fullmatch(role)
    if matched is None:
        raise ValueError(f"{role!r} is not a role name of the engine's own")
    return int(matched.group(1), 16)


_PRIVILEGED_ROLES = (
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_signal_backend",
    "pg_read_all_data",
    "pg_write_all_data",
    "pg_read_all_settings",
    "pg_read_all_stats",
    "pg_monitor",
    "pg_checkpoint",
)
"""Predefined roles that reach beyond a database's tables: files, programs, other sessions,
every table, the settings (PostgreSQL documentation, "Predefined Roles"). The agent SQL role
may be a member of none."""

_REFUSED_FUNCTIONS = frozenset(
    {
        "set_config",
        "pg_terminate_backend",
        "pg_cancel_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_log_backend_memory_contexts",
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "ts_stat",
        "ts_rewrite",
        "setseed",
        "pg_logical_emit_message",
    }
)
"""Functions any role may call that agent SQL may not: a setting changed for the session, a
signal to another session of the agent's role (or its own), the seed of ``random()``, and the
functions that run a query given as text, which no reading of the statement could check
(``query_to_xml``, ``ts_stat``, ``ts_rewrite``; PostgreSQL documentation, "System
Administration Functions", "Mapping Tables to XML" and "Text Search Functions"), and
``pg_logical_emit_message``, which writes to the write-ahead log from a read-only
transaction."""

_STATEMENT_WORDS = {
    "VariableSet": "SET",
    "VariableShow": "SHOW",
    "Transaction": "a transaction statement",
    "CreateTableAs": "CREATE TABLE AS",
    "CreateExtension": "CREATE EXTENSION",
    "Do": "DO",
    "Explain": "EXPLAIN",
    "Call": "CALL",
    "Lock": "LOCK",
}
"""How a refusal names a statement whose parse-tree class (``pglast``'s ``<Kind>Stmt``) is not
its first keyword."""

_REFUSED_PREFIXES = ("pg_advisory", "pg_try_advisory", "dblink")
"""Function families refused by name: advisory locks, which a session can hold past its
statement, and ``dblink``, which connects elsewhere."""

_EXTRA_HINT = "pip install 'hotdata-retrieval[postgres]'"
ITERATIVE_SCAN_VERSION = (0, 8, 0)
"""The first pgvector with iterative index scans (pgvector CHANGELOG, 0.8.0)."""

HNSW_DEFAULT_EF_SEARCH = 40
"""pgvector's default ``hnsw.ef_search``: the most rows an HNSW index scan returns (pgvector
README, "Query Options")."""

HNSW_MAX_EF_SEARCH = 1000
"""The largest ``hnsw.ef_search`` pgvector accepts (its ``hnsw.ef_search`` GUC, 1 to 1000)."""

_HNSW_INDEX = sqlglot.parse_one(
    "CREATE INDEX :name ON :table USING hnsw (:column :operator_class) "
    "WITH (m = :m, ef_construction = :ef_construction)",
    read="postgres",
)


def _pgvector_settings(settings: Any, vector_index: str | None) -> HnswSettings:
    """``settings`` checked for pgvector's HNSW index (``PostgresEngine.load_table`` says
    which it takes); ``None`` is the defaults.

    Raises:
        HnswSettingsError: naming the setting pgvector cannot take.
    """
    if settings is None:
        return HnswSettings()
    if not isinstance(settings, HnswSettings):
        raise HnswSettingsError(
            f"hnsw_settings must be HnswSettings, got {settings!r}",
            setting="hnsw_settings",
            value=settings,
        )
    if vector_index is None:
        raise HnswSettingsError(
            "hnsw_settings are for an HNSW index: pass vector_index='hnsw' too",
            setting="hnsw_settings",
            value=settings,
        )
    if settings.expansion_search != HnswSettings().expansion_search:
        raise HnswSettingsError(
            f"expansion_search {settings.expansion_search} cannot be kept on PostgreSQL: a "
            "search sets hnsw.ef_search to the rows it ranks; leave it at its default",
            setting="expansion_search",
            value=settings.expansion_search,
        )
    if settings.storage not in (None, "float32"):
        raise HnswSettingsError(
            f"storage {settings.storage!r} is not available on PostgreSQL: pgvector's vector "
            "type stores float32",
            setting="storage",
            value=settings.storage,
        )
    if settings.expansion_add < 2 * settings.connectivity:
        raise HnswSettingsError(
            f"expansion_add {settings.expansion_add} is pgvector's ef_construction, which must "
            f"be at least twice m (connectivity {settings.connectivity}): at least "
            f"{2 * settings.connectivity}",
            setting="expansion_add",
            value=settings.expansion_add,
        )
    return settings


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


_COLUMN_TYPES: dict[str, str] = {
    "boolean": "BOOLEAN",
    "integer": "BIGINT",
    "float32": "REAL",
    "floating": "DOUBLE PRECISION",
    "string": "TEXT",
    "binary": "BYTEA",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
    "list": "{}[]",
}
"""The store's column type per kind of Arrow type (:func:`store_column_type`)."""


SESSION_TIME_ZONE = "SET TIME ZONE 'UTC'"
"""Set on the engine's connection: a filter's timestamps are UTC instants (a time-zone-aware
``datetime`` is turned into UTC without a zone), and PostgreSQL reads a timestamp without a
zone compared with a ``timestamptz`` column in the session's ``TimeZone`` (PostgreSQL
documentation, "Date/Time Types", 8.5.1.3: conversions "assume that the timestamp without
time zone value should be taken or given as timezone local time"); in UTC, the instant is
the one the filter names whatever the server's default zone."""


class TermCounts:
    """A text column's BM25 statistics gathered row by row: the rows counted, their terms in
    all, and per term the rows holding it. A load adds each batch's rows as it writes them
    (:meth:`add`), so no row's terms are kept after its batch."""

    def __init__(self) -> None:
        self.frequencies: Counter[str] = Counter()
        self.rows = 0
        self.total = 0

    def add(self, terms: Sequence[str]) -> None:
        """Count one row of analysed ``terms``."""
        self.rows += 1
        self.total += len(terms)
        self.frequencies.update(set(terms))

    def statistics(self) -> list[tuple[str, int, float | None]]:
        """``(term, rows holding it, None)`` per term (most rows first, then by term), then
        ``('', rows, mean terms per row)`` for the corpus (the mean 0 for no row)."""
        ordered = sorted(self.frequencies.items(), key=lambda item: (-item[1], item[0]))
        return [(term, count, None) for term, count in ordered] + [
            ("", self.rows, self.total / self.rows if self.rows else 0.0)
        ]


def term_statistics(documents: Iterable[Sequence[str]]) -> list[tuple[str, int, float | None]]:
    """A text column's BM25 statistics from each row's analysed terms: ``(term, rows holding
    it, None)`` per term, then ``('', rows, mean terms per row)`` for the corpus (the mean 0
    for no row), as :func:`~hotdata_retrieval.compile.postgres.text_statistics_table` holds
    them (:class:`TermCounts`).

    >>> term_statistics([("disk", "full", "disk"), ("disk",), ()])
    [('disk', 2, None), ('full', 1, None), ('', 3, 1.3333333333333333)]
    """
    counts = TermCounts()
    for terms in documents:
        counts.add(terms)
    return counts.statistics()


IDENTIFIER_BYTES = 63
"""PostgreSQL's longest identifier, in bytes (``NAMEDATALEN - 1``; PostgreSQL documentation,
§4.1.1): a longer one is truncated, so two long names could become one."""


def _check_name_lengths(
    table: TableName,
    columns: Sequence[str],
    text_columns: Sequence[str],
    vectors: Sequence[StoreColumn],
    key_column: str | None = None,
) -> None:
    """Refuse, before anything is written, a table whose name, columns or the engine's names
    for its indexes and terms exceed :data:`IDENTIFIER_BYTES`.

    Raises:
        EngineError: naming the first such name and what it is for.
    """
    names = [(table.name, "the table"), *((column, "a column") for column in columns)]
    for column in text_columns:
        names.append((terms_column(column), f"the terms of text column '{column}'"))
        names.append(
            (
                text_statistics_table(table.schema, table.name, column),
                f"the statistics of text column '{column}'",
            )
        )
        postings = text_postings_table(table.schema, table.name, column)
        names.append((postings, f"the postings of text column '{column}'"))
        names.append(
            (
                text_postings_row_index(table.schema, table.name, column),
                f"the postings index of text column '{column}'",
            )
        )
    if text_columns:
        names.append((row_index_name(table.name), "the index of the rows' numbers"))
    if key_column is not None:
        names.append((key_index_name(table.name), f"the index of key column '{key_column}'"))
    names.extend(
        (hnsw_index_name(table.name, vector.name), f"the index of vector column '{vector.name}'")
        for vector in vectors
    )
    for name, role in names:
        if len(name.encode()) > IDENTIFIER_BYTES:
            raise EngineError(
                f"postgres: the name {name!r} ({role}) is longer than PostgreSQL's "
                f"{IDENTIFIER_BYTES} bytes, which would truncate it; use a shorter table or "
                "column name"
            )


def _statistics_table(table: TableName, column: str) -> exp.Table:
    return exp.Table(
        this=_quoted(text_statistics_table(table.schema, table.name, column)),
        db=_quoted(TEXT_INDEX_SCHEMA),
    )


def _postings_table(table: TableName, column: str) -> exp.Table:
    return exp.Table(
        this=_quoted(text_postings_table(table.schema, table.name, column)),
        db=_quoted(TEXT_INDEX_SCHEMA),
    )


def redacted_url(url: str) -> str:
    """``url`` (a libpq URL or ``key=value`` connection string) with its password replaced
    by ``***``, for messages and reports: a password is never echoed.

    >>> redacted_url("postgresql://hdq:secret@127.0.0.1:5432/docs")
    'postgresql://hdq:***@127.0.0.1:5432/docs'
    >>> redacted_url("host=127.0.0.1 password=secret dbname=docs")
    'host=127.0.0.1 password=*** dbname=docs'
    """
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme in ("postgres", "postgresql") and parsed.password is not None:
        user = "" if parsed.username is None else urllib.parse.quote(parsed.username)
        host = parsed.netloc.rpartition("@")[2]
        return urllib.parse.urlunsplit(parsed._replace(netloc=f"{user}:***@{host}"))
    return re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


class PostgresEngine(SqlStoreEngine):
    """PostgreSQL + pgvector behind the engine contract (module docstring).

    Args:
        url: a libpq connection string or URL (``postgresql://user@host:port/database``).
        embedder: embeds query text for ``plan_search`` routes that need a vector.
        agent_url: the connection agent SQL (:meth:`stream_sql`) uses: a role of your own
            with ``SELECT`` on the tables an agent may read and nothing more. ``None`` (the
            default): the engine provisions one, ``agent_role``, when ``url``'s role may
            create roles (:class:`_PostgresClosedSession`).
        agent_role: the name of the role the engine provisions. Default: one of its own,
            ``hdq_agent_<12 hex digits>``, removed again by :meth:`close`, so that the agent
            sessions of two engines are different roles and cannot signal each other's
            backends; a name you give is kept after ``close``. Either way the role can log
            in only while the engine opens its session (:class:`_PostgresClosedSession`).

    Raises:
        EngineError: the ``postgres`` extra is missing, the server cannot be reached, or it
            has no pgvector.
    """

    engine_name = "postgres"
    column_types = _COLUMN_TYPES
    store_label = "the PostgreSQL engine"
    timestamp_unit = "us"
    """PostgreSQL's ``timestamp`` has a resolution of one microsecond (PostgreSQL
    documentation, "Date/Time Types", table 8.9); a nanosecond key is rounded."""
    float32_type = _COLUMN_TYPES["float32"]
    read_types: ClassVar[Mapping[str, str]] = {
        "BIGINT": "int64",
        "TEXT": "string",
        "DOUBLE PRECISION": "double",
        "REAL": "double",
        "BOOLEAN": "bool",
        "TIMESTAMP WITHOUT TIME ZONE": "timestamp[us]",
        "DATE": "date32",
        "BYTEA": "binary",
    }
    """PostgreSQL's types as psycopg returns them (``describe`` reports
    ``information_schema``'s lower-case names); for a column no value types
    (:attr:`SqlStoreEngine.read_types`)."""
    own_schemas = frozenset({TEXT_INDEX_SCHEMA})
    store_schema = "public"

    def __init__(
        self,
        url: str,
        *,
        embedder: Any = None,
        agent_url: str | None = None,
        agent_role: str | None = None,
    ) -> None:
        require_extra("postgres", needed_by="the PostgreSQL engine")
        import psycopg

        self.url = url
        self.agent_url = agent_url
        self._owns_agent_role = agent_role is None
        self.agent_role = (
            f"{AGENT_ROLE}_{secrets.token_hex(6)}" if agent_role is None else agent_role
        )
        """The role agent SQL logs in as when the engine provisions it."""
        self._agent_provisioned = False
        try:
            self._connection = psycopg.connect(url, autocommit=True)
        except psycopg.Error as error:
            shown = redacted_url(url)
            message = str(error).replace(url, shown)
            raise EngineError(f"cannot connect to PostgreSQL at {shown!r}: {message}") from None
        super().__init__(POSTGRES, embedder=embedder)
        self._execute(SESSION_TIME_ZONE)
        with contextlib.suppress(EngineError):
            self._execute("CREATE EXTENSION IF NOT EXISTS vector")
        rows = self._query("SELECT extversion FROM pg_extension WHERE extname = 'vector'")[1]
        if not rows:
            raise EngineError(
                f"the PostgreSQL server at {redacted_url(url)!r} has no pgvector extension "
                "(and this role cannot create it)"
            )
        self.pgvector_version: tuple[int, ...] = _version(rows[0][0])
        """The server's pgvector version, e.g. ``(0, 6, 2)``."""

    def close(self) -> None:
        """Close the connections, and remove the agent SQL role this engine made."""
        super().close()
        with contextlib.suppress(Exception):
            self._drop_agent_role()
        self._connection.close()

    def _table_names(self) -> list[str]:
        tree = (
            exp.select(exp.column(_quoted("tablename")))
            .from_(exp.Table(this=_quoted("pg_tables"), db=_quoted("pg_catalog")))
            .where(
                exp.EQ(
                    this=exp.column(_quoted("schemaname")),
                    expression=exp.Literal.string(self.default_schema),
                )
            )
            .order_by(exp.column(_quoted("tablename")))
        )
        return [row[0] for row in self._query(render(POSTGRES, tree))[1]]

    # -- agent SQL ---------------------------------------------------------------------------

    def _execute_secret(self, statement: str) -> None:
        """Run a statement that holds a secret: a failure never shows it."""
        import psycopg

        try:
            self._connection.execute(statement)
        except psycopg.Error as error:
            raise EngineError(f"postgres: {first_line(str(error))}") from None

    def _provision_agent(self, limits: SqlLimits) -> None:
        """Make :attr:`agent_role` (or set it up again), unable to log in, with the defaults of
        ``limits`` and ``SELECT`` on the searchable tables; first, for a role of the engine's
        own, claim its name (:meth:`_claim_agent_role`) and sweep the roles engines that
        ended without :meth:`close` left (:meth:`_sweep_agent_roles`).

        Raises:
            EngineError: this connection's role cannot create or alter roles.
        """
        role = self.agent_role
        try:
            if self._owns_agent_role and not self._agent_claimed:
                self._claim_agent_role()
                role = self.agent_role
                self._sweep_agent_roles()
            if not self._role_exists(role):
                self._execute_secret(create_role(role))
            self._execute_secret(refuse_role_login(role))
        except EngineError as error:
            raise EngineError(
                f"agent SQL on PostgreSQL runs as a role that may only read the searchable "
                f"tables, and this connection's role cannot make one ({error}): create such a "
                "role and pass its connection as agent_url="
            ) from None
        milliseconds = str(int(limits.timeout_seconds * 1000))
        defaults = [
            ("default_transaction_read_only", "on"),
            ("statement_timeout", milliseconds),
            ("idle_in_transaction_session_timeout", milliseconds),
            # A superuser-only setting: the role cannot raise it (PostgreSQL documentation,
            # "Resource Consumption"); where this role may not set it, work_mem alone holds.
            ("temp_file_limit", str(max(1, limits.memory_bytes // 1024))),
            # A statement whose client is gone stops within a second rather than at its time
            # limit (PostgreSQL 14 and later; "Connections and Authentication").
            ("client_connection_check_interval", "1000"),
        ]
        for setting, value in defaults:
            with contextlib.suppress(EngineError):
                self._execute_secret(alter_role_setting(role, setting, value))
        self._agent_provisioned = True
        self._grant_searchable()

    @contextlib.contextmanager
    def _agent_login(self) -> Iterator[str]:
        """Let the provisioned agent role log in, with a fresh password valid for
        :data:`AGENT_LOGIN_SECONDS` by the server's clock, and yield the connection string
        that logs in as it; on leaving, whatever happened, refuse its logins again
        (``NOLOGIN``, no password): the connection opened meanwhile goes on, and nothing is
        left to log in with."""
        from psycopg.conninfo import make_conninfo

        role = self.agent_role
        password = secrets.token_urlsafe(32)
        until = str(self._query(_LOGIN_VALID_UNTIL)[1][0][0])
        try:
            self._execute_secret(allow_role_login(role, password, until))
            yield make_conninfo(self.url, user=role, password=password)
        finally:
            self._execute_secret(refuse_role_login(role))

    _agent_claimed = False

    def _claim_agent_role(self) -> None:
        """Hold, on the engine's own connection for as long as it lives, the session-level
        advisory lock of :attr:`agent_role`'s name (:func:`agent_role_lock`), drawing another
        name while the lock of the drawn one is held: a role of that form whose lock nobody
        holds belongs to an engine that is gone, and :meth:`_sweep_agent_roles` removes it.
        The server releases the lock when the connection ends, however its client ended."""
        while True:
            claimed = exp.Anonymous(
                this="pg_try_advisory_lock",
                expressions=[exp.Literal.number(agent_role_lock(self.agent_role))],
            )
            if self._query(render(POSTGRES, exp.select(claimed)))[1][0][0]:
                self._agent_claimed = True
                return
            self.agent_role = f"{AGENT_ROLE}_{secrets.token_hex(6)}"

    def _sweep_agent_roles(self) -> None:
        """Remove the roles of the engine's own form (:data:`AGENT_ROLE_NAME`) that no session
        runs as and whose advisory lock no session holds: left by an engine whose process
        ended without :meth:`close` (killed, or its machine lost). Each is first refused its
        logins, then its privileges in this database and the role are dropped; a role that
        still holds privileges in another database stays, unable to log in, until an engine
        there sweeps it. What this role may not do to a role is skipped."""
        leftovers = self._query(_LEFTOVER_ROLES)[1]
        held = {
            (int(classid) << 32) | int(objid) for classid, objid in self._query(_ADVISORY_LOCKS)[1]
        }
        for (role,) in leftovers:
            if not AGENT_ROLE_NAME.fullmatch(role) or agent_role_lock(role) in held:
                continue
            with contextlib.suppress(EngineError):
                self._execute(refuse_role_login(role))
                for statement in drop_role(role):
                    self._execute(statement)

    def _role_exists(self, role: str) -> bool:
        tree = (
            exp.select(exp.Literal.number(1))
            .from_(exp.Table(this=_quoted("pg_roles"), db=_quoted("pg_catalog")))
            .where(exp.EQ(this=exp.column(_quoted("rolname")), expression=exp.Literal.string(role)))
        )
        return bool(self._query(render(POSTGRES, tree))[1])

    def _grant_searchable(self) -> frozenset[str]:
        """Give the provisioned agent role ``SELECT`` on every searchable table it cannot read
        yet (and ``USAGE`` on their schemas), and return the searchable tables' names. Grants
        go with a table that is replaced, so this runs before every agent statement; it
        changes the catalog only where a privilege is missing."""
        tables = self.searchable_tables()
        if not self._agent_provisioned:
            return frozenset(table.name for table in tables)
        role = self.agent_role
        for schema in sorted({table.schema for table in tables}):
            if not self._has_privilege("has_schema_privilege", role, schema, "USAGE"):
                self._execute(grant("USAGE", "SCHEMA", [schema], role))
        for table in tables:
            name = f"{_quoted_name(table.schema)}.{_quoted_name(table.name)}"
            if not self._has_privilege("has_table_privilege", role, name, "SELECT"):
                self._execute(grant("SELECT", "TABLE", [table.schema, table.name], role))
        return frozenset(table.name for table in tables)

    def _has_privilege(self, function: str, role: str, target: str, privilege: str) -> bool:
        call = exp.Anonymous(
            this=function,
            expressions=[
                exp.Literal.string(role),
                exp.Literal.string(target),
                exp.Literal.string(privilege),
            ],
        )
        return bool(self._query(render(POSTGRES, exp.select(call)))[1][0][0])

    def _drop_agent_role(self) -> None:
        """Remove the role this engine made for agent SQL (its privileges first)."""
        if not (self._agent_provisioned and self._owns_agent_role):
            return
        with contextlib.suppress(EngineError):
            for statement in drop_role(self.agent_role):
                self._execute(statement)
        self._agent_provisioned = False

    def _open_closed_session(self, limits: SqlLimits) -> ClosedSession:
        import psycopg

        login: contextlib.AbstractContextManager[str]
        if self.agent_url is not None:
            login = contextlib.nullcontext(self.agent_url)
        else:
            self._provision_agent(limits)
            login = self._agent_login()
        connection = None
        try:
            with login as conninfo:
                connection = psycopg.connect(conninfo, autocommit=True, connect_timeout=30)
        except psycopg.Error as error:
            raise EngineError(
                f"cannot connect as the agent SQL role: {first_line(str(error))}"
            ) from None
        except BaseException:  # the role's logins could not be refused again
            if connection is not None:
                connection.close()
            raise
        try:
            _check_least_privilege(connection, self._query("SELECT current_user")[1][0][0])
        except BaseException:
            connection.close()
            raise
        return _PostgresClosedSession(connection, self._grant_searchable, limits.memory_bytes)

    # -- the driver ------------------------------------------------------------------------

    def _query(
        self, statement: str, parameters: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        import psycopg

        try:
            cursor = self._connection.execute(statement, parameters or None)
            rows = cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as error:
            raise EngineError(f"postgres: {error}".strip(), sql=statement) from None
        names = [column.name for column in cursor.description or ()]
        return names, rows

    def _execute(self, statement: str) -> None:
        import psycopg

        try:
            self._connection.execute(statement)
        except psycopg.Error as error:
            raise EngineError(f"postgres: {error}".strip(), sql=statement) from None

    def _read_only_query(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        import pglast

        # one statement only: a second could end the read-only transaction (COMMIT) and write
        try:
            count = len(pglast.split(statement))
        except pglast.parser.ParseError as error:
            raise EngineError(f"postgres: {first_line(str(error))}", sql=statement) from None
        if count != 1:
            raise RefusedStatementError(
                f"send one query at a time, got {count} statements", sql=statement
            )
        self._execute("BEGIN READ ONLY")
        try:
            return self._query(statement)
        finally:
            self._execute("ROLLBACK")

    def _describe(self, table: TableName) -> StoreTable | None:
        if table.catalog != self.default_catalog:
            raise EngineError(
                f"table '{table}': a PostgreSQL connection reaches one database (tables are "
                "<schema>.<table>)"
            )
        listed = self._query(
            render(
                POSTGRES,
                exp.select(exp.column(_quoted("column_name")), exp.column(_quoted("data_type")))
                .from_(exp.Table(this=_quoted("columns"), db=_quoted("information_schema")))
                .where(
                    exp.and_(
                        exp.EQ(
                            this=exp.column(_quoted("table_schema")),
                            expression=exp.Literal.string(table.schema),
                        ),
                        exp.EQ(
                            this=exp.column(_quoted("table_name")),
                            expression=exp.Literal.string(table.name),
                        ),
                    )
                )
                .order_by(exp.column(_quoted("ordinal_position"))),
            )
        )[1]
        if not listed:
            return None
        names = {row[0] for row in listed}
        # a column is searchable with its analysed terms, the rows' numbers and its postings
        # (a table loaded by a release that wrote no postings asks to be loaded again)
        text_indexes = tuple(
            row[0]
            for row in listed
            if terms_column(row[0]) in names
            and ROW_COLUMN in names
            and self._query(
                _indexes_select(
                    TEXT_INDEX_SCHEMA,
                    text_postings_table(table.schema, table.name, row[0]),
                    tables=True,
                )
            )[1]
        )
        # terms without postings: an earlier release's index, neither searched nor kept
        outdated = tuple(
            row[0] for row in listed if terms_column(row[0]) in names and row[0] not in text_indexes
        )
        # a text column's terms and the rows' numbers are the engine's, not the user's
        hidden = {terms_column(column) for column in text_indexes}
        if text_indexes:
            hidden.add(ROW_COLUMN)
        listed = [row for row in listed if row[0] not in hidden]
        columns = tuple(row[0] for row in listed)
        key: str | None = None
        vectors: tuple[StoreColumn, ...] = ()
        loaded: tuple[tuple[str, pa.DataType], ...] = ()
        if self._query(_indexes_select(table.schema, CATALOG_TABLE, tables=True))[1]:
            key, vectors, loaded = read_catalog(
                self._query(catalog_select(self.profile, table.schema, table.name))[1]
            )
        return StoreTable(
            name=table,
            columns=columns,
            column_types=tuple(row[1] for row in listed),
            key_column=key,
            text_indexes=text_indexes,
            vectors=vectors,
            outdated_text_indexes=outdated,
            loaded_types=loaded,
        )

    def _write_statistics(
        self, statistics: exp.Table, rows: list[tuple[str, int, float | None]]
    ) -> None:
        """Create a text column's statistics table (:func:`term_statistics` rows) in
        :data:`TEXT_INDEX_SCHEMA` and fill it with ``COPY``."""
        self._execute(
            render(
                POSTGRES,
                exp.Create(
                    kind="SCHEMA", exists=True, this=exp.Table(this=_quoted(TEXT_INDEX_SCHEMA))
                ),
            )
        )
        self._execute(
            render(
                POSTGRES,
                exp.Create(
                    kind="TABLE",
                    this=exp.Schema(
                        this=statistics.copy(),
                        expressions=[
                            exp.ColumnDef(
                                this=_quoted(name),
                                kind=exp.DataType.build(kind, dialect="postgres"),
                                constraints=[
                                    exp.ColumnConstraint(kind=exp.PrimaryKeyColumnConstraint())
                                ]
                                if name == "term"
                                else [],
                            )
                            for name, kind in (
                                ("term", "TEXT"),
                                ("documents", "BIGINT"),
                                ("average_length", "DOUBLE PRECISION"),
                            )
                        ],
                    ),
                ),
            )
        )
        copy = render(
            POSTGRES,
            exp.Copy(
                this=exp.Schema(
                    this=statistics.copy(),
                    expressions=[_quoted(n) for n in ("term", "documents", "average_length")],
                ),
                kind=True,
                files=[exp.var("STDIN")],
            ),
        )
        with self._connection.cursor().copy(copy) as writer:
            for row in rows:
                writer.write_row(row)

    def _copy_batches(
        self,
        target: exp.Table,
        columns: Sequence[str],
        batches: Iterable[pa.RecordBatch],
        dimensions: Mapping[str, int],
    ) -> None:
        """Write ``batches`` (record batches of ``columns``, in that order) into ``target`` by
        one binary ``COPY`` (:func:`_copy_rows`), one batch's rows at a time; the vector
        columns of ``dimensions`` (name: dimensions) in pgvector's binary format
        (:func:`_pgvector_binary`). A binary ``COPY`` applies no cast, so each value is sent
        as the type of its column, read from the server (the table's columns' type oids)."""
        with self._connection.cursor() as cursor:
            cursor.execute(
                render(
                    POSTGRES,
                    exp.select(*(exp.column(_quoted(name)) for name in columns))
                    .from_(target.copy())
                    .limit(0),
                )
            )
            oids = [column.type_code for column in cursor.description or ()]
            for oid in {oid for name, oid in zip(columns, oids) if name in dimensions}:
                cursor.adapters.register_dumper(None, _pgvector_dumper(oid))
            with cursor.copy(_copy_rows(target.copy(), columns)) as writer:
                writer.set_types(oids)
                for batch in batches:
                    values = [
                        _pgvector_binary(batch.column(name), dimensions[name])
                        if name in dimensions
                        else _python_values(batch.column(name))
                        for name in columns
                    ]
                    for row in zip(*values):
                        writer.write_row(row)

    def columns_sql(self, table: str | TableName) -> str:
        """A query that lists ``table``'s columns and types, less the ``<column>__terms``
        columns its text indexes cover and the rows' numbers (``hdq__row``)."""
        name = self.table_name(table)
        described = self._describe(name)
        hidden = [terms_column(c) for c in described.text_indexes] if described else []
        if hidden:
            hidden.append(ROW_COLUMN)
        return columns_query(self.profile, name, name.schema, hidden)

    def load_table(
        self,
        name: str,
        data: pa.Table,
        *,
        key_column: str | None = "id",
        text_columns: Sequence[str] = (),
        vector_metric: str = "cosine",
        vector_storage: str | None = None,
        vector_model: str | None = None,
        vector_index: str | None = None,
        hnsw_settings: HnswSettings | None = None,
    ) -> StoreTable:
        """As :meth:`SqlStoreEngine.load_table`, with ``vector_index="hnsw"`` to build an HNSW
        index per vector column, of ``vector_metric``'s operator class.

        ``hnsw_settings`` (needs ``vector_index="hnsw"``; default
        :class:`~hotdata_retrieval.engines.hnsw.HnswSettings`, whose connectivity 16 and build
        expansion 64 are pgvector's own defaults) give the index's ``m`` (``connectivity``)
        and ``ef_construction`` (``expansion_add``), which pgvector needs to be at least twice
        ``m``. Its ``expansion_search`` must stay the default: a search here sets
        ``hnsw.ef_search`` to the rows it ranks (module docstring). Its ``storage`` may be
        ``None`` or ``float32``: the ``vector`` type stores float32.

        Raises:
            EngineError: as there, or an unknown ``vector_index``.
            HnswSettingsError: ``hnsw_settings`` without an HNSW index, not
                :class:`~hotdata_retrieval.engines.hnsw.HnswSettings`, or a setting pgvector
                cannot take (naming it).
        """
        if vector_index is not None and vector_index not in self.vector_indexes:
            raise EngineError(unbuilt_vector_index(vector_index, "postgres", self.vector_indexes))
        self._hnsw_settings = _pgvector_settings(hnsw_settings, vector_index)
        data = rows_table(data)
        if vector_index is not None:
            require_vectors_to_index(name, vector_columns_of(data))
        self._vector_index = vector_index
        try:
            return super().load_table(
                name,
                data,
                key_column=key_column,
                text_columns=text_columns,
                vector_metric=vector_metric,
                vector_storage=vector_storage,
                vector_model=vector_model,
            )
        finally:
            self._vector_index = None
            self._hnsw_settings = HnswSettings()

    _vector_index: str | None = None
    _hnsw_settings: HnswSettings = HnswSettings()

    def _check_index_names(
        self, table: TableName, text_columns: Sequence[str], vectors: Sequence[StoreColumn]
    ) -> None:
        """Refuse, before anything is written, a load whose names would be another's:

        - an HNSW index named ``<table>__<column>__hnsw`` (:func:`~hotdata_retrieval.compile.
          postgres.hnsw_index_name`) that another table's vector column already has (table
          ``x`` with column ``y__z``, table ``x__y`` with column ``z``);
        - two text columns ``c`` and ``c_pkey``: the statistics and postings tables of the
          second (:func:`~hotdata_retrieval.compile.postgres.text_postings_table`) are named
          as the first's primary keys (PostgreSQL's generated name ``<table>_pkey``; which
          load fails depends on the columns' order, measured: "relation ... already
          exists"). The side tables' names are otherwise the schema's and the table's names
          each after their length, which no two tables share.

        Raises:
            EngineError: naming both tables (or the table) and columns and the shared name.
        """
        for column in text_columns:
            for suffix in ("_pkey",):
                if f"{column}{suffix}" in text_columns:
                    raise EngineError(
                        f"text columns '{column}' and '{column}{suffix}' of table "
                        f"'{table.name}' would share the name "
                        f"'{text_postings_table(table.schema, table.name, column)}{suffix}' in "
                        f"schema {TEXT_INDEX_SCHEMA} (PostgreSQL names a text column's postings "
                        f"table <schema>_<table>_<column> and its primary key "
                        f"<postings>_pkey); rename one of the columns"
                    )
        if self._vector_index != "hnsw":
            return
        sharers = self._index_name_sharers(table, [vector.name for vector in vectors])
        for column, other, other_column in sharers:
            name = hnsw_index_name(table.name, column)
            built = self._query(_indexes_select(table.schema, other.name.name))[1]
            if name in {row[0] for row in built}:
                raise EngineError(
                    f"column '{column}' of table '{table.name}' and column '{other_column}' of "
                    f"table '{other.name.name}' would share the HNSW index '{name}' "
                    "(PostgreSQL names it <table>__<column>__hnsw); rename one of the tables "
                    "or columns"
                )

    def _write_table(
        self,
        table: TableName,
        data: pa.Table,
        *,
        key_column: str | None,
        text_columns: Sequence[str],
        vectors: Sequence[StoreColumn],
    ) -> None:
        import psycopg

        _check_name_lengths(table, data.column_names, text_columns, vectors, key_column)
        self._check_index_names(table, text_columns, vectors)
        if text_columns and ROW_COLUMN in data.column_names:
            raise EngineError(
                f"column '{ROW_COLUMN}' holds each row's number beside a text index on "
                "PostgreSQL; rename it"
            )
        import pyarrow as pa

        loaded = data.schema
        for column_name in text_columns:
            terms = check_terms_column(loaded.names, column_name, "PostgreSQL")
            loaded = loaded.append(pa.field(terms, pa.string()))
        counts = {column_name: TermCounts() for column_name in text_columns}
        dimensions = {vector.name: vector.dimensions for vector in vectors}
        columns = [
            (
                field.name,
                f"vector({dimensions[field.name]})"
                if field.name in dimensions
                else self.store_column_type(field),
            )
            for field in loaded
        ]
        target = table_node(table, table.schema)
        previous = self._describe(table)
        # every column of the table it replaces, so a column indexed by an earlier release
        # (no postings) loses its statistics table too
        previous_texts = previous.columns if previous is not None else ()
        try:
            with self._connection.transaction():
                self._execute(drop_table(self.profile, target.copy()))
                self._execute(create_table(self.profile, target.copy(), columns))
                if text_columns:
                    for statement in add_row_column(table):
                        self._execute(statement)
                self._copy_batches(
                    target, loaded.names, _with_terms(data, text_columns, counts), dimensions
                )
                if key_column is not None:
                    self._execute(add_key_index(table, key_column))
                for column_name in {*previous_texts, *text_columns}:
                    self._execute(drop_table(self.profile, _statistics_table(table, column_name)))
                    self._execute(drop_table(self.profile, _postings_table(table, column_name)))
                for column_name, counted in counts.items():
                    self._write_statistics(
                        _statistics_table(table, column_name), counted.statistics()
                    )
                    self._execute(create_postings(table, column_name))
                    self._execute(postings_of_rows(table, column_name))
                    for statement in postings_keys(table, column_name):
                        self._execute(statement)
                if self._vector_index == "hnsw":
                    for vector in vectors:
                        operator_class = OPERATOR_CLASSES[DistanceMetric.parse(vector.metric)]
                        self._execute(
                            render(
                                POSTGRES,
                                exp.replace_placeholders(
                                    _HNSW_INDEX.copy(),
                                    name=_quoted(hnsw_index_name(table.name, vector.name)),
                                    table=target.copy(),
                                    column=exp.column(_quoted(vector.name)),
                                    operator_class=exp.var(operator_class),
                                    m=exp.Literal.number(self._hnsw_settings.connectivity),
                                    ef_construction=exp.Literal.number(
                                        self._hnsw_settings.expansion_add
                                    ),
                                ),
                            )
                        )
                self._execute(catalog_create(self.profile, table.schema))
                self._execute(catalog_delete(self.profile, table.schema, table.name))
                rows = catalog_rows(table.name, key_column, vectors, "vector", loaded)
                if rows:
                    self._execute(catalog_insert(self.profile, table.schema, rows))
                measured = [target, *(_postings_table(table, c) for c in text_columns)]
                for name in measured:
                    self._execute(
                        render(
                            POSTGRES,
                            exp.Command(
                                this="ANALYZE", expression=" " + render(POSTGRES, name.copy())
                            ),
                        )
                    )
        except psycopg.Error as error:
            raise EngineError(f"postgres: {error}".strip()) from None
        if self._agent_provisioned:
            self._grant_searchable()

    # -- rows changed by key --------------------------------------------------------------

    placeholder = "%s"
    vector_indexes = (VectorIndexKind.HNSW.value,)

    def _replace_rows(
        self, described: StoreTable, rows: pa.Table, norms: Sequence[Sequence[Any]] | None
    ) -> None:
        """In one transaction: delete the rows of the keys ``rows`` holds (and their
        postings), ``COPY`` in ``rows`` with each text column's terms, write the new rows'
        postings, change each text column's statistics table by the terms removed and
        added (the HNSW index is the server's to keep), and write ``norms`` to the
        catalog."""
        import psycopg

        key = self._key_of(described)
        keys = rows.column(key).to_pylist()
        texts = [column for column in described.text_indexes if column in rows.column_names]
        names = [
            *rows.column_names,
            *(check_terms_column(rows.column_names, column, "PostgreSQL") for column in texts),
        ]
        added = {column: TermCounts() for column in described.text_indexes}
        dimensions = {
            vector.name: vector.dimensions
            for vector in described.vectors
            if vector.name in rows.column_names
        }
        try:
            with self._connection.transaction():
                _, removed = self._delete_keyed(described, keys)
                self._copy_batches(
                    self.store_table(described.name),
                    names,
                    _with_terms(rows, texts, added),
                    dimensions,
                )
                for column in described.text_indexes:
                    for chunk in self._key_chunks(keys):
                        statement = postings_of_rows(
                            described.name, column, key_column=key, key_count=len(chunk)
                        )
                        self._connection.execute(statement, chunk)
                    self._change_statistics(described.name, column, added[column], removed[column])
                for statement in self._norms_statements(
                    described.name, described.name.schema, norms
                ):
                    self._execute(statement)
        except psycopg.Error as error:
            raise EngineError(f"postgres: {error}".strip()) from None

    def _remove_rows(
        self, described: StoreTable, keys: Sequence[Any], norms: Sequence[Sequence[Any]] | None
    ) -> int:
        """Delete the rows of ``keys``, take their terms out of each text column's
        statistics and write ``norms`` to the catalog, in one transaction."""
        import psycopg

        try:
            with self._connection.transaction():
                count, removed = self._delete_keyed(described, keys)
                for column in described.text_indexes:
                    self._change_statistics(described.name, column, TermCounts(), removed[column])
                for statement in self._norms_statements(
                    described.name, described.name.schema, norms
                ):
                    self._execute(statement)
        except psycopg.Error as error:
            raise EngineError(f"postgres: {error}".strip()) from None
        return count

    def _delete_keyed(
        self, described: StoreTable, keys: Sequence[Any]
    ) -> tuple[int, dict[str, TermCounts]]:
        """Delete the rows of ``keys`` and their postings in the open transaction: how many
        there were, and the terms each text column of theirs held, counted."""
        key = self._key_of(described)
        texts = list(described.text_indexes)
        removed = {column: TermCounts() for column in texts}
        target = self.store_table(described.name)
        count = 0
        for chunk in self._key_chunks(keys):
            if texts:
                statement = select_rows(
                    self.profile,
                    target.copy(),
                    [terms_column(column) for column in texts],
                    key_column=key,
                    key_count=len(chunk),
                    placeholder=self.placeholder,
                )
                for row in self._query(statement, chunk)[1]:
                    for column, terms in zip(texts, row):
                        if terms is not None:
                            removed[column].add(str(terms).split())
                for column in texts:
                    statement = delete_postings(
                        described.name, column, key_column=key, key_count=len(chunk)
                    )
                    self._connection.execute(statement, chunk)
            statement = delete_rows(self.profile, target.copy(), key, len(chunk), self.placeholder)
            count += int(self._connection.execute(statement, chunk).rowcount)
        return count, removed

    def _change_statistics(
        self,
        table: TableName,
        column: str,
        added: TermCounts,
        removed: TermCounts,
    ) -> None:
        """Change text column ``column``'s statistics table by the rows' terms ``added`` and
        ``removed`` (counted): each term's row count, then the corpus row's count
        and mean terms per row. The corpus's total of terms is read back exactly as the
        integer nearest ``count * mean`` (a double holds it to far better than one half), so
        repeated changes add no rounding error; the statistics equal a fresh load's."""
        change = Counter(added.frequencies)
        change.subtract(removed.frequencies)
        deltas = [(term, count) for term, count in sorted(change.items()) if count]
        with self._connection.cursor() as cursor:
            if deltas:
                cursor.executemany(add_term_documents(table, column), deltas)
                cursor.execute(prune_terms(table, column))
            cursor.execute(corpus_select(table, column))
            found = cursor.fetchone()
            rows, average = (0, 0.0) if found is None else (int(found[0]), float(found[1] or 0))
            total = round(rows * average)
            rows += added.rows - removed.rows
            total += added.total - removed.total
            cursor.execute(corpus_update(table, column), (rows, total / rows if rows > 0 else 0.0))

    # -- searches --------------------------------------------------------------------------

    def check_plan(self, plan: SearchPlan) -> dict[TableName, StoreTable]:
        """As :meth:`SqlStoreEngine.check_plan`, and refuse a dot search whose products
        pgvector's ``<#>`` can overflow (module docstring): the column's largest norm
        (:attr:`~hotdata_retrieval.engines.store.StoreColumn.largest_norm`) times the query's
        past :data:`~hotdata_retrieval.engines._vector_norms.DOT_PRODUCTS_BOUND`.

        Raises:
            PlanError: such a query vector, naming it, the column and the bound; and as
                :meth:`SqlStoreEngine.check_plan`.
        """
        described = super().check_plan(plan)
        for table, one in described.items():
            check_dot_search(
                plan,
                table,
                functools.partial(self._largest_norm, one),
                "pgvector's <#> sums the products in Float32 (pgvector src/vector.c, "
                "VectorInnerProduct: float distance += ax[i] * bx[i])",
            )
        return described

    def search(self, plan: SearchPlan) -> SearchResult:
        """As :meth:`SqlStoreEngine.search`; a plan with a filter and a nearest branch runs
        with iterative index scans, or without index scans before pgvector 0.8.0 (module
        docstring)."""
        if not any(isinstance(branch, NearestNeighborSearch) for branch in plan.branches):
            return super().search(plan)
        settings = []
        candidates = plan.depth if plan.fusion is not None else statement_rows(plan)
        if candidates > HNSW_MAX_EF_SEARCH:
            settings.append("SET LOCAL enable_indexscan = off")
        elif candidates > HNSW_DEFAULT_EF_SEARCH:
            settings.append(set_local("hnsw.ef_search", str(candidates)))
        if plan.filter is not None:
            settings.append(
                "SET LOCAL hnsw.iterative_scan = strict_order"
                if self.pgvector_version >= ITERATIVE_SCAN_VERSION
                else "SET LOCAL enable_indexscan = off"
            )
        if not settings:
            return super().search(plan)
        self._execute("BEGIN")
        try:
            for setting in settings:
                self._execute(setting)
            return super().search(plan)
        finally:
            self._execute("ROLLBACK")

    def explain(self, plan: SearchPlan) -> str:
        """PostgreSQL's ``EXPLAIN`` of the statement ``search(plan)`` runs (without its
        filter-time settings): which indexes it reads.

        Raises:
            EngineError: the server's message.
        """
        described = self.check_plan(plan).values()
        statement = to_sql(
            executed_plan(
                plan,
                merged_kinds(value_kinds(one) for one in described),
                ColumnFacts(
                    float32=frozenset().union(
                        *(float32_columns(one, self.float32_type) for one in described)
                    ),
                    float64=frozenset().union(
                        *(float64_columns(one, self.float32_type) for one in described)
                    ),
                ),
            ),
            self.profile,
        )
        _, rows = self._query(
            render(POSTGRES, exp.Command(this="EXPLAIN", expression=" " + statement))
        )
        return "\n".join(row[0] for row in rows)


def _with_terms(
    data: pa.Table, text_columns: Sequence[str], counts: Mapping[str, TermCounts]
) -> Iterator[pa.RecordBatch]:
    """``data``'s record batches (:func:`~hotdata_retrieval.engines.checks.record_batches`),
    each with every text column's terms column appended in ``text_columns`` order, its rows'
    terms added to the column's ``counts`` as the batch is made: only one batch's terms are
    Python values at once."""
    for batch in record_batches(data):
        for column in text_columns:
            analysed = analysed_terms(batch.column(column))
            counted = counts[column]
            for terms in analysed:
                if terms is not None:
                    counted.add(terms)
            batch = batch.append_column(terms_column(column), joined_terms(analysed))
        yield batch


def _pgvector_binary(vectors: pa.Array, dimensions: int) -> list[bytes | None]:
    """Each vector of ``vectors`` (a list column of floats, each non-NULL vector of
    ``dimensions`` numbers) in pgvector's binary format, ``None`` for a NULL: the dimensions
    and a zero as big-endian 16-bit integers, then each number as a big-endian float32
    (pgvector's ``vector_recv``/``vector_send``, ``src/vector.c``). A float64 number is
    rounded to the nearest float32 (NumPy's cast, ties to even); the text input this
    replaced (``strtof`` of the number's shortest decimal) agreed but on a float64 halfway
    between two float32 numbers, which it could round away from even."""
    import numpy as np

    values = vectors.flatten().to_numpy(zero_copy_only=False)
    with np.errstate(over="ignore"):  # past float32's range: inf, which pgvector refuses
        block = values.astype(">f4").reshape(-1, dimensions)
    header = struct.pack(">HH", dimensions, 0)
    rows = iter(block)
    valid = vectors.is_valid().to_pylist()
    return [header + next(rows).tobytes() if one else None for one in valid]


def _pgvector_dumper(oid: int) -> type:
    """A psycopg binary dumper to pgvector's ``vector`` type (its ``oid`` in this database:
    an extension's type has none fixed) of the bytes :func:`_pgvector_binary` made, passed
    as they are; registered on a ``COPY``'s cursor only."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class _PgvectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return bytes(obj)

    _PgvectorDumper.oid = oid
    return _PgvectorDumper


def _python_values(column: pa.Array) -> list[Any]:
    """``column``'s values as Python objects for a binary ``COPY``; a timestamp with a time
    zone as its UTC time without a zone, what the column holds (:class:`SqlStoreEngine`'s
    ``rows_of``: the stores hold UTC instants in a timestamp without a zone)."""
    import pyarrow as pa

    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        column = column.cast(pa.timestamp(column.type.unit))
    values: list[Any] = column.to_pylist()
    return values


def _copy_rows(target: exp.Table, columns: Sequence[str]) -> str:
    """``COPY <target> ("c1", ...) FROM STDIN WITH (FORMAT BINARY)``."""
    return render(
        POSTGRES,
        exp.Copy(
            this=exp.Schema(this=target, expressions=[_quoted(name) for name in columns]),
            kind=True,
            files=[exp.var("STDIN")],
            params=[exp.CopyParameter(this=exp.var("FORMAT"), expression=exp.var("BINARY"))],
        ),
    )


def _quoted(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def _quoted_name(name: str) -> str:
    """``name`` as a quoted identifier, for a function that reads a name from text
    (``has_table_privilege``)."""
    return render(POSTGRES, _quoted(name))


_IDLE = 0
"""psycopg's ``TransactionStatus.IDLE``: the session is in no transaction."""


def _indexes_select(schema: str, table: str, *, tables: bool = False) -> str:
    """The index names of ``schema.table`` (from ``pg_indexes``), or with ``tables`` one row
    when the table exists (from ``pg_tables``)."""
    source = "pg_tables" if tables else "pg_indexes"
    selected = "tablename" if tables else "indexname"
    tree = (
        exp.select(exp.column(_quoted(selected)))
        .from_(exp.Table(this=_quoted(source), db=_quoted("pg_catalog")))
        .where(
            exp.and_(
                exp.EQ(
                    this=exp.column(_quoted("schemaname")), expression=exp.Literal.string(schema)
                ),
                exp.EQ(this=exp.column(_quoted("tablename")), expression=exp.Literal.string(table)),
            )
        )
    )
    return render(POSTGRES, tree)


_PRIVILEGED_CALLABLES = sqlglot.parse_one(
    """
    SELECT DISTINCT called.name
    FROM (
        SELECT p.proname AS name, p.oid AS function FROM pg_catalog.pg_proc AS p
        UNION ALL
        SELECT o.oprname, o.oprcode FROM pg_catalog.pg_operator AS o
    ) AS called
    JOIN pg_catalog.pg_proc AS p ON p.oid = called.function
    JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
    WHERE (p.prosecdef OR NOT l.lanpltrusted)
      AND p.pronamespace <> CAST('pg_catalog' AS REGNAMESPACE)
      AND NOT EXISTS (
        SELECT 1 FROM pg_catalog.pg_depend AS d
        WHERE d.classid = CAST('pg_catalog.pg_proc' AS REGCLASS)
          AND d.objid = p.oid AND d.deptype = 'e'
      )
    """,
    read="postgres",
)
"""The names of the functions and operators a database defined itself whose code may do what
the caller's role may not: ``SECURITY DEFINER`` functions, which run with their owner's
privileges, and functions in an untrusted language (C, ``plpython3u``), which reach the
server's files; PostgreSQL's own (``pg_catalog``) and extensions' members
(``pg_depend.deptype = 'e'``) aside (PostgreSQL documentation, "CREATE FUNCTION" and
"pg_language")."""


def _privileged_select(names: Sequence[str]) -> str:
    """Which of ``names`` (of functions or operators) :data:`_PRIVILEGED_CALLABLES` holds."""
    query = _PRIVILEGED_CALLABLES.copy()
    assert isinstance(query, exp.Select)
    tree = query.where(
        exp.In(
            this=exp.column("name", table="called"),
            expressions=[exp.Literal.string(name) for name in names],
        )
    )
    return render(POSTGRES, tree)


def _let_others_traverse(directory: Path) -> None:
    """Give every ancestor of ``directory`` the search bit for others, so the unprivileged
    server user reaches the binaries (a virtual environment made in a ``mktemp -d`` directory
    sits under a directory only its owner may enter); pgserver's own launcher does the same."""
    for ancestor in [directory, *directory.parents]:
        mode = ancestor.stat().st_mode
        if not mode & stat.S_IXOTH:
            ancestor.chmod(mode | stat.S_IXOTH)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def throwaway_server(*, user: str | None = None) -> Iterator[str]:
    """Start a private PostgreSQL 16 + pgvector server from the ``pgserver`` wheel's binaries
    on 127.0.0.1, yield its URL (``postgresql://postgres@127.0.0.1:<port>/postgres``), and
    stop it and delete its files on exit.

    PostgreSQL refuses to run as root; run as root, the server runs as ``user`` (default: the
    ``postgres`` operating-system user if there is one, else ``nobody``), and the directories
    above the binaries are made traversable for it. Settings for a throwaway: ``fsync`` off,
    trust authentication on loopback only.

    Raises:
        EngineError: ``pgserver`` is not installed, or the server does not start (the message
            holds its log).
    """
    try:
        from pgserver._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise EngineError(f"a throwaway PostgreSQL server needs pgserver: {_EXTRA_HINT}") from None
    run_as: dict[str, Any] = {}
    root = Path(tempfile.mkdtemp(prefix="hdq-postgres-"))
    if os.geteuid() == 0:
        import pwd

        name = user
        if name is None:
            try:
                pwd.getpwnam("postgres")
                name = "postgres"
            except KeyError:
                name = "nobody"
        account = pwd.getpwnam(name)
        os.chown(root, account.pw_uid, account.pw_gid)
        run_as = {"user": account.pw_uid, "group": account.pw_gid}
        _let_others_traverse(POSTGRES_BIN_PATH.parent)
    data = root / "data"
    log = root / "log"
    port = _free_port()

    def run(program: str, *arguments: str) -> None:
        try:
            subprocess.run(
                [str(POSTGRES_BIN_PATH / program), *arguments],
                check=True,
                capture_output=True,
                text=True,
                cwd=root,
                timeout=120,
                **run_as,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            detail = getattr(error, "stderr", "") or ""
            if log.exists():
                detail += log.read_text(errors="replace")[-2000:]
            raise EngineError(f"PostgreSQL {program} failed: {detail.strip()}") from None

    try:
        run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run("pg_ctl", "-D", str(data), "-w", "-l", str(log), "-o", options, "start")
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            run("pg_ctl", "-D", str(data), "-w", "-m", "fast", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_least_privilege(connection: Any, engine_role: str) -> None:
    """Refuse an agent SQL connection whose role can do more than read tables: a superuser,
    a role that creates roles or databases, replicates or bypasses row security, a member of
    a predefined role of :data:`_PRIVILEGED_ROLES`, or of the engine's own role.

    Raises:
        EngineError: naming what the role may do.
    """
    attributes = ("rolsuper", "rolcreaterole", "rolcreatedb", "rolreplication", "rolbypassrls")
    roles = exp.Table(this=_quoted("pg_roles"), db=_quoted("pg_catalog"))
    own = exp.select(*(exp.column(_quoted(name)) for name in attributes)).from_(roles.copy())
    own = own.where(exp.EQ(this=exp.column(_quoted("rolname")), expression=exp.CurrentUser()))
    granted = exp.column(_quoted("oid"))
    members = (
        exp.select(exp.column(_quoted("rolname")))
        .from_(roles.copy())
        .where(
            exp.and_(
                exp.In(
                    this=exp.column(_quoted("rolname")),
                    expressions=[
                        exp.Literal.string(name) for name in (*_PRIVILEGED_ROLES, engine_role)
                    ],
                ),
                exp.Anonymous(
                    this="pg_has_role",
                    expressions=[exp.CurrentUser(), granted, exp.Literal.string("MEMBER")],
                ),
            )
        )
    )
    with connection.cursor() as cursor:
        flags = cursor.execute(render(POSTGRES, own)).fetchone()
        memberships = [row[0] for row in cursor.execute(render(POSTGRES, members)).fetchall()]
    problems = [name for name, value in zip(attributes, flags or ()) if value]
    problems += [f"member of {name}" for name in memberships]
    if problems:
        raise EngineError(
            "the agent SQL role may do more than read tables ("
            + ", ".join(problems)
            + "): give agent_url= a role with SELECT on the searchable tables only"
        )


class _PostgresClosedSession(ClosedSession):
    """Agent SQL on PostgreSQL: a connection that logs in as a role of its own
    (:data:`AGENT_ROLE`, or ``agent_url``'s), which is no superuser, creates nothing, is a
    member of no predefined role that reaches files, programs, settings or other sessions, and
    holds ``SELECT`` on the searchable tables only — so ``pg_read_file``, ``pg_ls_dir``,
    ``lo_export``, ``COPY ... PROGRAM`` and other tables are refused by the server's own
    privilege checks. Each statement runs in a ``READ ONLY`` transaction that begins with
    ``statement_timeout``, ``idle_in_transaction_session_timeout`` and ``work_mem`` set for it
    and is rolled back after it, so whatever the statement sets (``set_config``) dies with it;
    the statement is declared as a cursor, which PostgreSQL accepts for one query only
    (``DECLARE``; "cannot insert multiple commands into a prepared statement"), and its rows
    are fetched as they are read. A statement that kills its own connection
    (``pg_terminate_backend(pg_backend_pid())``) fails, and the next opens a new one.

    The role the engine provisions cannot outlive its engine as a way in, even when the
    engine's process is killed and cleans up nothing. It is ``NOLOGIN`` but for the moment its
    connection opens: the engine sets ``LOGIN``, a fresh password and ``VALID UNTIL`` a minute
    ahead, connects, and sets ``NOLOGIN`` and no password again, and PostgreSQL checks
    ``LOGIN`` only when a session authenticates (documentation, "Role Attributes"), so the
    open session goes on and a killed engine leaves a role nobody can log in as. Its name is
    claimed by an advisory lock the engine's own connection holds, which the server releases
    when that connection ends; the next engine to provision a role removes every role of the
    engine's form that no session runs as and whose lock nobody holds, which also covers a
    process killed within the moment of its login. Why not ``NOLOGIN`` roles used through
    ``SET ROLE`` on the engine's own connection: the session's user would stay the engine's
    role, and any function of the caller's rights the database holds that calls
    ``set_config('role', ...)`` would take the agent back to it."""

    def __init__(
        self, connection: Any, tables: Callable[[], frozenset[str]], memory_bytes: int
    ) -> None:
        self._connection = connection
        self._scope = tables
        self._tables: frozenset[str] = frozenset()
        self._memory_bytes = memory_bytes
        self._cursors = 0

    def fits(self, limits: SqlLimits) -> bool:
        """The role's ``temp_file_limit`` was set for the memory limit it opened with."""
        return limits.memory_bytes == self._memory_bytes

    def batches(self, text: str, limits: SqlLimits) -> Generator[pa.RecordBatch, None, None]:
        connection = self._connection
        milliseconds = str(max(1, int(limits.timeout_seconds * 1000)))
        settings = (
            ("statement_timeout", milliseconds),
            ("idle_in_transaction_session_timeout", milliseconds),
            ("work_mem", f"{max(64, limits.memory_bytes // 8 // 1024)}kB"),
        )
        if connection.info.transaction_status != _IDLE:  # a cancel that came too late
            connection.execute("ROLLBACK")
        self._check(text, limits)
        self._tables = self._scope()
        connection.execute("BEGIN READ ONLY")
        cursor = None
        try:
            for setting, value in settings:
                connection.execute(set_local(setting, value))
            self._cursors += 1
            cursor = connection.cursor(name=f"hdq_agent_sql_{self._cursors}")
            cursor.execute(text)
            names = [column.name for column in cursor.description or ()]
            rows = cursor.fetchmany(BATCH_ROWS)
            yield rows_batch(names, rows)
            while rows:
                rows = cursor.fetchmany(BATCH_ROWS)
                if rows:
                    yield rows_batch(names, rows)
        finally:
            if not self.broken:
                with contextlib.suppress(Exception):
                    if cursor is not None:
                        cursor.close()
                with contextlib.suppress(Exception):
                    connection.execute("ROLLBACK")
                with contextlib.suppress(Exception):  # a lock taken for the session outlives it
                    connection.execute("SELECT pg_advisory_unlock_all()")

    def cancel(self) -> None:
        cancel = getattr(self._connection, "cancel_safe", None)
        if callable(cancel):
            cancel(timeout=5.0)
        else:
            self._connection.cancel()

    def refusal_of(self, error: BaseException, text: str) -> str | None:
        """The server's privilege refusals, with the tables the role may read; and what the
        cursor declaration turns into a syntax error at the statement's first word: a
        statement other than a query."""
        message = first_line(str(error))
        if getattr(error, "sqlstate", None) == "42501":  # insufficient_privilege
            if message.startswith("permission denied for table") and self._tables:
                message += f" (the tables it may read: {', '.join(sorted(self._tables))})"
            return message
        return None

    def _check(self, text: str, limits: SqlLimits) -> None:
        """Read ``text`` with PostgreSQL's own parser (``pglast``, which is libpg_query: the
        server's grammar built as a library): one query, no recursion unless allowed, no call
        of :data:`_REFUSED_FUNCTIONS`, and no function or operator of a name the database
        defines with code that may do what the agent's role may not
        (:data:`_PRIVILEGED_CALLABLES`, read for each statement).

        Raises:
            RefusedStatementError: naming what is refused.
            EngineError: the text does not parse.
        """
        import pglast
        from pglast import ast
        from pglast.visitors import Visitor

        try:
            statements = pglast.parse_sql(text)
        except pglast.parser.ParseError as error:
            raise EngineError(f"postgres: {first_line(str(error))}", sql=text) from None
        if len(statements) != 1:
            raise RefusedStatementError(
                f"send one query at a time, got {len(statements)} statements", sql=text
            )
        statement = statements[0].stmt
        if not isinstance(statement, ast.SelectStmt) or statement.intoClause is not None:
            kind = type(statement).__name__.removesuffix("Stmt")
            kind = _STATEMENT_WORDS.get(kind, kind.upper())
            if isinstance(statement, ast.SelectStmt):
                kind = "SELECT ... INTO"
            raise RefusedStatementError(
                f"{kind} is not allowed here: only read-only queries (SELECT) run", sql=text
            )
        refused: list[str] = []
        recursive: list[bool] = []
        called: dict[str, set[str]] = {"function": set(), "operator": set()}

        class _Calls(Visitor):
            def visit_FuncCall(self, ancestors: Any, node: Any) -> None:
                name = str(node.funcname[-1].sval).lower()
                called["function"].add(str(node.funcname[-1].sval))
                if name in _REFUSED_FUNCTIONS or name.startswith(_REFUSED_PREFIXES):
                    refused.append(name)

            def visit_A_Expr(self, ancestors: Any, node: Any) -> None:
                for part in node.name or ():
                    if isinstance(part, ast.String):
                        called["operator"].add(str(part.sval))

            def visit_WithClause(self, ancestors: Any, node: Any) -> None:
                recursive.append(bool(node.recursive))

        _Calls()(statements)
        if any(recursive) and not limits.allow_recursive_queries:
            raise limits.recursion_error(text)
        if refused:
            raise RefusedStatementError(
                f"the function {refused[0]}() is not allowed here", sql=text
            )
        names = called["function"] | called["operator"]
        if names:
            with self._connection.cursor() as cursor:
                found = {row[0] for row in cursor.execute(_privileged_select(sorted(names)))}
            for kind in ("function", "operator"):
                for name in sorted(called[kind] & found):
                    shown = f"{name}()" if kind == "function" else name
                    raise RefusedStatementError(
                        f"the {kind} {shown} is not allowed here: the database defines one of "
                        "that name that runs with its owner's privileges (SECURITY DEFINER) or "
                        "in an untrusted language",
                        sql=text,
                    )

    def limit_of(self, error: BaseException) -> str | None:
        state = getattr(error, "sqlstate", None)
        if state in ("53200", "53400"):  # out_of_memory, configuration_limit_exceeded
            return "memory_bytes"
        if state == "57014" and "statement timeout" in str(error):
            return "timeout_seconds"
        return None

    @property
    def broken(self) -> bool:
        return bool(self._connection.closed or self._connection.broken)

    def close(self) -> None:
        self._connection.close()
