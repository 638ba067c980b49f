"""Agent SQL on DuckDB, as the SQL worker runs it (:mod:`hotdata_retrieval.engines._worker`).

The worker opens a snapshot of the store's searchable tables read-only
(:class:`DuckdbAgentOpener`; DuckDB locks a database file to the one process that opened it for
writing, so the worker cannot open the store's own file) and runs each statement in a
:class:`DuckdbClosedSession`: DuckDB reads the statement twice before it runs, its parser for
what it calls (every function on :data:`ALLOWED_FUNCTIONS`, every table function on
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

INDEX_FUNCTIONS = frozenset({"match_bm25", "tokenize"})
"""The macros of a full-text index's own schema (fts extension documentation) agent SQL may
call, in the schemas of the searchable tables' indexes only."""

_OPERATORS = (
    "+", "-", "*", "/", "//", "%", "**", "^", "@", "&", "|", "~", "<<", ">>", "!__postfix",
    "||", "^@", "~~", "!~~", "~~*", "!~~*", "~~~", "->>", "@>", "<@", "&&", "<->", "<=>",
)  # fmt: skip
"""Operators, as DuckDB's parser names them (``LIKE`` is ``~~``, ``GLOB`` ``~~~``,
``x ->> '$.a'`` ``->>``; ``5!`` is ``!__postfix``)."""

_NUMERIC = (
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bit_count",
    "cbrt", "ceil", "ceiling", "cos", "cosh", "cot", "degrees", "divide", "even", "exp",
    "factorial", "fdiv", "floor", "fmod", "gamma", "gcd", "greatest_common_divisor",
    "isfinite", "isinf", "isnan", "lcm", "least_common_multiple", "lgamma", "ln", "log",
    "log10", "log2", "mod", "multiply", "nextafter", "pi", "pow", "power", "radians",
    "random", "round", "round_even", "roundbankers", "sign", "signbit", "sin", "sinh", "sqrt",
    "subtract", "tan", "tanh", "trunc", "xor", "equi_width_bins",
)  # fmt: skip
"""DuckDB documentation, "Numeric Functions" and "Utility Functions" (``equi_width_bins``)."""

_TEXT = (
    "ascii", "bar", "base64", "bin", "bit_length", "char_length", "character_length", "chr",
    "concat", "concat_ws", "contains",
    "ends_with", "formatreadabledecimalsize", "formatreadablesize", "format_bytes",
    "from_base64", "from_binary", "from_hex", "greatest", "hamming", "hash", "hex", "instr",
    "jaccard", "lcase", "least", "left", "left_grapheme", "len", "length", "length_grapheme",
    "lower", "lpad", "ltrim", "md5", "md5_number", "md5_number_lower", "md5_number_upper",
    "mismatches", "nfc_normalize", "ord", "parse_dirname", "parse_dirpath", "parse_filename",
    "parse_formatted_bytes", "parse_path", "position", "prefix", "repeat", "replace",
    "reverse", "right", "right_grapheme", "rpad", "rtrim", "sha1", "sha256", "split",
    "split_part", "starts_with", "str_split", "string_split", "string_to_array",
    "strip_accents", "strlen", "strpos", "substr", "substring", "substring_grapheme",
    "suffix", "to_base", "to_base64", "to_binary", "to_hex", "translate", "trim", "ucase",
    "unbin", "unhex", "unicode", "upper", "url_decode", "url_encode", "decode", "encode",
    "octet_length", "stem",
)  # fmt: skip
"""DuckDB documentation, "Text Functions" and "Blob Functions" (``parse_path`` and its kin
split a text as a path; they read no file), and the fts extension's ``stem``."""

_PATTERNS = (
    "like_escape", "not_like_escape", "ilike_escape", "not_ilike_escape", "regexp_escape",
    "regexp_extract", "regexp_extract_all", "regexp_full_match", "regexp_matches",
    "regexp_replace", "regexp_split_to_array", "regexp_split_to_table", "string_split_regex",
    "str_split_regex",
)  # fmt: skip
"""DuckDB documentation, "Pattern Matching" and "Regular Expressions"."""

_TIME = (
    "age", "ago", "century", "current_date", "current_localtime", "current_localtimestamp",
    "date_add", "date_diff", "date_part", "date_sub", "date_trunc", "datediff", "datepart",
    "datesub", "datetrunc", "day", "dayname", "dayofmonth", "dayofweek", "dayofyear",
    "days_in_month", "decade", "epoch", "epoch_ms", "epoch_ns", "epoch_us", "era",
    "get_current_time", "get_current_timestamp", "hour", "isodow", "isoyear", "julian",
    "last_day", "make_date", "make_time", "make_timestamp", "make_timestamp_ms",
    "make_timestamp_ns", "make_timestamptz", "microsecond", "millennium", "millisecond",
    "minute", "month", "monthname", "nanosecond", "normalized_interval", "now", "quarter",
    "second", "strftime", "strptime", "time_bucket", "timezone", "timezone_hour",
    "timezone_minute", "to_centuries", "to_days", "to_decades", "to_hours",
    "to_microseconds", "to_millennia", "to_milliseconds", "to_minutes", "to_months",
    "to_quarters", "to_seconds", "to_timestamp", "to_weeks", "to_years", "today",
    "transaction_timestamp", "try_strptime", "week", "weekday", "weekofyear", "year",
    "yearweek",
)  # fmt: skip
"""DuckDB documentation, "Date Functions", "Timestamp Functions", "Time Functions",
"Interval Functions" and "Date Format Functions"."""

_LISTS = (
    "array_append", "array_cat", "array_concat", "array_contains", "array_distinct",
    "array_extract", "array_grade_up", "array_has", "array_has_all", "array_has_any",
    "array_indexof", "array_intersect", "array_length", "array_pop_back", "array_pop_front",
    "array_position", "array_prepend", "array_push_back", "array_push_front", "array_resize",
    "array_reverse", "array_reverse_sort", "array_select", "array_slice", "array_sort",
    "array_to_string", "array_unique", "array_where", "array_zip", "flatten",
    "generate_series", "generate_subscripts", "grade_up", "list_any_value", "list_append",
    "list_approx_count_distinct", "list_avg", "list_bit_and", "list_bit_or", "list_bit_xor",
    "list_bool_and", "list_bool_or", "list_cat", "list_concat", "list_contains",
    "list_cosine_distance", "list_cosine_similarity", "list_count", "list_distance",
    "list_distinct", "list_dot_product", "list_element", "list_entropy", "list_extract",
    "list_first", "list_grade_up", "list_has", "list_has_all", "list_has_any",
    "list_histogram", "list_indexof", "list_inner_product", "list_intersect",
    "list_kurtosis", "list_kurtosis_pop", "list_last", "list_mad", "list_max",
    "list_median", "list_min", "list_mode", "list_negative_dot_product",
    "list_negative_inner_product", "list_pack", "list_position", "list_prepend",
    "list_product", "list_resize", "list_reverse", "list_reverse_sort", "list_select",
    "list_sem", "list_skewness", "list_slice", "list_sort", "list_stddev_pop",
    "list_stddev_samp", "list_string_agg", "list_sum", "list_unique", "list_value",
    "list_var_pop", "list_var_samp", "list_where", "list_zip", "range", "unnest",
    "unpivot_list",
    "array_value", "array_cosine_distance", "array_cosine_similarity", "array_cross_product",
    "array_distance", "array_dot_product", "array_inner_product",
    "array_negative_dot_product", "array_negative_inner_product",
)  # fmt: skip
"""DuckDB documentation, "List Functions" and "Array Functions": all but those that take a
lambda (``list_transform``, ``list_filter``, ``list_reduce`` and their other names) and those
that run an aggregate named by a text argument (``list_aggregate``, ``aggregate``), which no
reading of the statement could check."""

_NESTED = (
    "row", "struct_concat", "struct_contains", "struct_extract", "struct_extract_at",
    "struct_has", "struct_indexof", "struct_insert", "struct_keys", "struct_pack",
    "struct_position", "struct_update", "struct_values", "map", "map_concat", "map_contains",
    "map_contains_entry", "map_contains_value", "map_entries", "map_extract",
    "map_extract_value", "map_from_entries", "map_keys", "map_values", "cardinality",
    "element_at", "union_extract", "union_tag", "union_value",
)  # fmt: skip
"""DuckDB documentation, "Struct Functions", "Map Functions" and "Union Functions"."""

_JSON = (
    "json", "json_array", "json_array_length", "json_contains", "json_exists",
    "json_extract", "json_extract_path", "json_extract_path_text", "json_extract_string",
    "json_group_array", "json_group_object", "json_group_structure", "json_keys",
    "json_merge_patch", "json_object", "json_pretty", "json_quote", "json_structure",
    "json_transform", "json_transform_strict", "json_type", "json_valid", "json_value",
    "from_json", "from_json_strict", "to_json", "array_to_json", "row_to_json",
)  # fmt: skip
"""DuckDB documentation, "JSON Processing Functions" and "Creating JSON": all but the four
that plan, read or run SQL given as text (``json_serialize_sql``, ``json_deserialize_sql``,
``json_serialize_plan``, ``json_execute_serialized_sql``)."""

_UTILITY = (
    "nullif", "typeof", "pg_typeof", "uuid", "gen_random_uuid", "uuidv4", "uuidv7",
    "uuid_extract_timestamp", "uuid_extract_version", "enum_code", "enum_first", "enum_last",
    "enum_range", "enum_range_boundary", "bitstring", "get_bit", "set_bit", "bit_position",
)  # fmt: skip
"""DuckDB documentation, "Utility Functions", "Enum Functions" and "Bitstring Functions": the
ones that compute from their arguments alone."""

_AGGREGATES = (
    "any_value", "approx_count_distinct", "approx_quantile", "approx_top_k", "arbitrary",
    "arg_max", "arg_max_null", "arg_max_nulls_last", "arg_min", "arg_min_null",
    "arg_min_nulls_last", "argmax", "argmin", "array_agg", "avg", "bit_and", "bit_or",
    "bit_xor", "bitstring_agg", "bool_and", "bool_or", "corr", "count", "count_if",
    "count_star", "countif", "covar_pop", "covar_samp", "entropy", "favg", "first", "fsum",
    "geomean", "geometric_mean", "group_concat", "histogram", "histogram_exact", "kahan_sum",
    "kurtosis", "kurtosis_pop", "last", "list", "listagg", "mad", "max", "max_by", "mean",
    "median", "min", "min_by", "mode", "product", "quantile", "quantile_cont",
    "quantile_disc", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2",
    "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "reservoir_quantile", "sem",
    "skewness", "stddev", "stddev_pop", "stddev_samp", "string_agg", "sum", "sumkahan",
    "var_pop", "var_samp", "variance", "wavg", "weighted_avg",
    "cume_dist", "dense_rank", "fill", "first_value", "lag", "last_value", "lead",
    "nth_value", "ntile", "percent_rank", "rank", "rank_dense", "row_number",
)  # fmt: skip
"""DuckDB documentation, "Aggregate Functions" and "Window Functions"."""

ALLOWED_FUNCTIONS = frozenset(
    _OPERATORS + _NUMERIC + _TEXT + _PATTERNS + _TIME + _LISTS + _NESTED + _JSON + _UTILITY
    + _AGGREGATES
)  # fmt: skip
"""The scalar, aggregate and window functions agent SQL may call on DuckDB, lower-cased: an
allow-list, so a function a later DuckDB adds is refused until it is listed here.

Drawn from DuckDB 1.5.5's ``duckdb_functions()`` (its ``scalar``, ``aggregate`` and ``macro``
functions) by the DuckDB documentation's function pages each group names, keeping the
functions that compute a value from their arguments and the rows alone. Left out:

- what reads the configuration, the session, the catalog or the machine: ``current_setting``,
  ``getenv``, ``which_secret``, ``getvariable``, ``version``, ``current_database`` and the
  other ``current_*`` functions, the PostgreSQL compatibility macros (``has_*_privilege``,
  ``pg_get_viewdef``, ``inet_server_addr``, ...), ``nextval`` and ``currval``;
- what changes the session or the machine: ``setseed``, ``write_log``;
- what plans, reads or runs SQL given as text, or calls a function named by text:
  ``json_serialize_sql``, ``json_serialize_plan``, ``json_execute_serialized_sql``,
  ``list_aggregate``;
- what waits or fails on purpose: ``sleep_ms``, ``pg_sleep``, ``error`` (which would put stored
  text in the tool's error unquoted);
- the functions whose one call costs the product of their arguments' lengths, which DuckDB does
  not interrupt (``levenshtein``, ``damerau_levenshtein``, ``editdist3``, ``jaro_similarity``,
  ``jaro_winkler_similarity``: two 120,000-character texts ran 44 s past a 2 s limit), and those
  that build a text as wide as their format string says (``printf``, ``format``): the worker's
  limits would stop them, but such a call only ever ends at a limit;
- lambdas (:class:`DuckdbClosedSession` refuses them: each runs once per list element);
- DuckDB's internals (``__internal_*``, ``icu_collate_*``, ``stats``, ``vector_type``,
  ``finalize``, ``sum_no_overflow``), the type utilities and the geometry and variant
  functions.

Whatever an allowed function computes is bounded by the worker process (time, resident set, a
crash ends only the worker), not by this list."""

_SCHEMAS = ("", "main", "pg_catalog")
"""The schemas a call of a built-in function may name (``main.lower(x)``)."""

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
    :data:`TABLE_FUNCTIONS`, no function but :data:`ALLOWED_FUNCTIONS` (and a searchable
    index's :data:`INDEX_FUNCTIONS`), :data:`BUILDERS` only within their bounds, no lambda, and
    no recursive query unless ``SqlLimits.allow_recursive_queries``; its binder
    (``json_serialize_plan``, unoptimised, whose output the agent never sees) resolves every
    table the statement reads, through common table expressions and subqueries, and each must
    be a searchable table, one of their full-text index tables, or a table function of
    ``information_schema``."""

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
        elif node.get("class") in ("FUNCTION", "WINDOW") and "function_name" in node:
            self._check_function(node, text)

    def _check_function(self, node: dict[str, Any], text: str) -> None:
        """Refuse a call of a function that is not on the allow-list (a searchable index's
        :data:`INDEX_FUNCTIONS` aside), and a :data:`BUILDERS` call beyond its bounds."""
        name = str(node.get("function_name", "")).lower()
        catalog = str(node.get("catalog") or "").lower()
        schema = str(node.get("schema") or "")
        index = schema in self._index_schemas and catalog in ("", self._database)
        built_in = catalog in ("", "system", self._database) and schema.lower() in _SCHEMAS
        if index and name in INDEX_FUNCTIONS:
            return
        if not index and built_in and name in ALLOWED_FUNCTIONS:
            if name in BUILDERS:
                _check_builder(name, node.get("children") or [], text)
            return
        shown = ".".join(part for part in (catalog, schema, name) if part)
        raise RefusedStatementError(f"the function {shown}() is not allowed here", sql=text)

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
