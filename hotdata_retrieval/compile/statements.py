"""The statements a SQL store's engine runs besides searches, built with sqlglot.

Engines never build SQL (``docs/architecture.md``): the tables and catalog rows a store's
``load_table`` writes, and the lookups its ``indexes`` reads, are written here, as sqlglot
trees rendered by the store's dialect, with every identifier quoted and every value a sqlglot
literal or a driver placeholder.

The catalog: a store keeps what a table *is* — its key column and its vector columns
(dimensions, metric, how vectors are stored) — in one table of its own,
:data:`CATALOG_TABLE`, with one row per (table, column, role).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from sqlglot import exp

from hotdata_retrieval.compile.dialect import DialectProfile
from hotdata_retrieval.plan.names import TableName

CATALOG_TABLE = "hdq_columns"
"""The catalog table's name, in the store's default schema."""

CATALOG_COLUMNS: tuple[tuple[str, str], ...] = (
    ("table_name", "TEXT"),
    ("column_name", "TEXT"),
    ("role", "TEXT"),
    ("dimensions", "INTEGER"),
    ("metric", "TEXT"),
    ("storage", "TEXT"),
    ("model", "TEXT"),
)
"""``(name, type)`` of the catalog's columns. ``role`` is ``key``, ``vector``, ``arrow_type``
(``storage``: the column's Arrow type as loaded) or ``vector_norms`` (``storage``: the rows of
a vector column a cosine search cannot rank, :mod:`hotdata_retrieval.engines._vector_norms`);
``storage`` of a ``vector`` row is how the column holds its vectors (a store-specific word:
``blob``, ``json``, ``vector``, ``array``); ``model`` names the embedder that made a vector
column's vectors, when the library embedded them."""


def quoted(name: str) -> exp.Identifier:
    """A quoted identifier: the name exactly, whatever words the store reserves."""
    return exp.Identifier(this=name, quoted=True)


def table_node(table: TableName | str, schema: str | None = None) -> exp.Table:
    """``"schema"."table"`` (``schema`` given, or the name's own), never with a catalog."""
    if isinstance(table, TableName):
        return exp.Table(this=quoted(table.name), db=quoted(schema or table.schema))
    return exp.Table(this=quoted(table), db=quoted(schema) if schema is not None else None)


def readable_table(profile: DialectProfile, table: TableName, schema: str) -> str:
    """``schema.table`` as a person writes it in the profile's SQL: quoted only where a name
    needs it.

    >>> from hotdata_retrieval.compile import HOTDATA
    >>> readable_table(HOTDATA, TableName.parse("my docs"), "main")
    'main."my docs"'
    """
    node = exp.Table(this=exp.to_identifier(table.name), db=exp.to_identifier(schema))
    return readable_sql(profile, node)


def columns_query(
    profile: DialectProfile, table: TableName, schema: str, hidden: Sequence[str] = ()
) -> str:
    """``SELECT column_name, data_type FROM information_schema.columns WHERE table_schema =
    '<schema>' AND table_name = '<table>' [AND column_name NOT IN (<hidden>)]``: the query
    that lists a table's columns, as the SQL standard's information schema has them, less
    the ``hidden`` ones (columns the engine writes for its own indexes)."""
    conditions: list[exp.Expr] = [
        exp.EQ(this=exp.column("table_schema"), expression=exp.Literal.string(schema)),
        exp.EQ(this=exp.column("table_name"), expression=exp.Literal.string(table.name)),
    ]
    if hidden:
        conditions.append(
            exp.Not(
                this=exp.In(
                    this=exp.column("column_name"),
                    expressions=[exp.Literal.string(name) for name in hidden],
                )
            )
        )
    tree = (
        exp.select("column_name", "data_type")
        .from_(
            exp.Table(this=exp.to_identifier("columns"), db=exp.to_identifier("information_schema"))
        )
        .where(exp.and_(*conditions))
    )
    return readable_sql(profile, tree)


def column_query(profile: DialectProfile, table: str, column: str) -> str:
    """``SELECT "<column>" FROM <table>``: every value of one column. ``table`` is the table
    as SQL in the profile's dialect names it (``main.docs``, ``"default".public.docs``); the
    column is quoted.

    >>> from hotdata_retrieval.compile import get_dialect
    >>> column_query(get_dialect("sqlite"), "main.docs", "id")
    'SELECT "id" FROM "main"."docs"'

    Raises:
        sqlglot.errors.ParseError: ``table`` is not a table's name in the dialect.
    """
    node = exp.to_table(table, dialect=profile.sqlglot_dialect)
    return render(profile, exp.select(quoted(column)).from_(node))


def readable_sql(profile: DialectProfile, tree: exp.Expr) -> str:
    """``tree`` as the profile's SQL with names quoted only where they must be: rendered by
    the sqlglot dialect the profile's own extends (which quotes every name)."""
    base = next(
        kind
        for kind in profile.sqlglot_dialect.__mro__
        if kind.__module__.startswith("sqlglot.dialects")
    )
    text: str = base().generate(tree, copy=False, identify=False)
    return text


def render(profile: DialectProfile, tree: exp.Expr) -> str:
    """``tree`` as the profile's SQL, on one line."""
    text: str = profile.sqlglot_dialect().generate(tree, copy=False)
    return text


def create_table(
    profile: DialectProfile,
    table: exp.Table,
    columns: Sequence[tuple[str, str]],
    *,
    unique: str | None = None,
) -> str:
    """``CREATE TABLE <table> ("c1" T1, ...)``; ``columns`` as ``(name, type text)``, the type
    read by the store's sqlglot dialect (``FLOAT[4]``, ``vector(4)``, ``BLOB``); a name
    the dialect does not know is declared as written (SQLite's ``FLOAT32``, which its
    affinity rules read as ``REAL`` and sqlglot would otherwise refuse). The column named
    ``unique`` is declared ``UNIQUE``: the store keeps an index of it, under a name of its
    own choosing that no table of the user's can take (SQLite's ``sqlite_autoindex_...``)."""
    dialect = profile.sqlglot_dialect

    def constraints(name: str) -> list[exp.ColumnConstraint]:
        if name != unique:
            return []
        return [exp.ColumnConstraint(kind=exp.UniqueColumnConstraint())]

    schema = exp.Schema(
        this=table,
        expressions=[
            exp.ColumnDef(
                this=quoted(name),
                kind=exp.DataType.build(kind, dialect=dialect, udt=True),
                constraints=constraints(name),
            )
            for name, kind in columns
        ],
    )
    return render(profile, exp.Create(kind="TABLE", this=schema))


def drop_table(profile: DialectProfile, table: exp.Table) -> str:
    """``DROP TABLE IF EXISTS <table>``."""
    return render(profile, exp.Drop(kind="TABLE", tables=[table], exists=True))


def insert_rows(
    profile: DialectProfile, table: exp.Table, columns: Sequence[str], placeholder: str | None
) -> str:
    """``INSERT INTO <table> ("c1", ...) VALUES (<p>, ...)`` with one driver placeholder per
    column: ``placeholder`` is its text (``%s`` for psycopg), ``None`` for the dialect's own
    (``?``)."""
    values = [exp.Placeholder() if placeholder is None else exp.var(placeholder) for _ in columns]
    tree = exp.Insert(
        this=exp.Schema(this=table, expressions=[quoted(name) for name in columns]),
        expression=exp.Values(expressions=[exp.Tuple(expressions=values)]),
    )
    return render(profile, tree)


def catalog_create(profile: DialectProfile, schema: str | None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` the catalog table."""
    dialect = profile.sqlglot_dialect
    tree = exp.Create(
        kind="TABLE",
        exists=True,
        this=exp.Schema(
            this=table_node(CATALOG_TABLE, schema),
            expressions=[
                exp.ColumnDef(this=quoted(name), kind=exp.DataType.build(kind, dialect=dialect))
                for name, kind in CATALOG_COLUMNS
            ],
        ),
    )
    return render(profile, tree)


def catalog_delete(
    profile: DialectProfile, schema: str | None, table: str, role: str | None = None
) -> str:
    """``DELETE FROM <catalog> WHERE table_name = '<table>'`` (``AND role = '<role>'`` with
    ``role``: only the table's rows of that role)."""
    condition: exp.Expr = exp.EQ(
        this=exp.column(quoted("table_name")), expression=exp.Literal.string(table)
    )
    if role is not None:
        condition = exp.and_(
            condition,
            exp.EQ(this=exp.column(quoted("role")), expression=exp.Literal.string(role)),
        )
    tree = exp.Delete(this=table_node(CATALOG_TABLE, schema), where=exp.Where(this=condition))
    return render(profile, tree)


def catalog_insert(
    profile: DialectProfile, schema: str | None, rows: Sequence[Sequence[Any]]
) -> str:
    """``INSERT INTO <catalog> VALUES (...), ...`` of ``rows`` (one value per catalog column,
    as literals)."""

    def literal(value: Any) -> exp.Expr:
        if value is None:
            return exp.Null()
        if isinstance(value, str):
            return exp.Literal.string(value)
        return exp.Literal.number(int(value))

    tree = exp.Insert(
        this=exp.Schema(
            this=table_node(CATALOG_TABLE, schema),
            expressions=[quoted(name) for name, _ in CATALOG_COLUMNS],
        ),
        expression=exp.Values(
            expressions=[exp.Tuple(expressions=[literal(value) for value in row]) for row in rows]
        ),
    )
    return render(profile, tree)


def catalog_select(profile: DialectProfile, schema: str | None, table: str) -> str:
    """``SELECT <catalog columns> FROM <catalog> WHERE table_name = '<table>' ORDER BY
    role, column_name``."""
    tree = exp.Select(
        expressions=[exp.column(quoted(name)) for name, _ in CATALOG_COLUMNS],
        from_=exp.From(this=table_node(CATALOG_TABLE, schema)),
        where=exp.Where(
            this=exp.EQ(this=exp.column(quoted("table_name")), expression=exp.Literal.string(table))
        ),
        order=exp.Order(
            expressions=[
                exp.Ordered(this=exp.column(quoted(name)), nulls_first=False)
                for name in ("role", "column_name")
            ]
        ),
    )
    return render(profile, tree)


# -- rows changed and read by key (document tables) -------------------------------------------


def _placeholders(count: int, placeholder: str | None) -> list[exp.Expr]:
    return [
        exp.Placeholder() if placeholder is None else exp.var(placeholder) for _ in range(count)
    ]


def _keyed(key_column: str, count: int, placeholder: str | None) -> exp.Where:
    return exp.Where(
        this=exp.In(
            this=exp.column(quoted(key_column)), expressions=_placeholders(count, placeholder)
        )
    )


def select_rows(
    profile: DialectProfile,
    table: exp.Table,
    columns: Sequence[str],
    *,
    key_column: str | None = None,
    key_count: int = 0,
    placeholder: str | None = None,
) -> str:
    """``SELECT "c1", ... FROM <table>``, and with ``key_column`` ``WHERE "<key>" IN (<p>,
    ...)`` with ``key_count`` driver placeholders (``placeholder`` their text, ``%s`` for
    psycopg; ``None`` for the dialect's own ``?``): every row, or the rows of some keys.

    >>> from hotdata_retrieval.compile import get_dialect
    >>> select_rows(get_dialect("sqlite"), table_node("docs", "main"), ["id", "text"],
    ...             key_column="id", key_count=2)
    'SELECT "id", "text" FROM "main"."docs" WHERE "id" IN (?, ?)'
    """
    tree = exp.Select(
        expressions=[exp.column(quoted(name)) for name in columns],
        from_=exp.From(this=table),
        where=None if key_column is None else _keyed(key_column, key_count, placeholder),
    )
    return render(profile, tree)


def delete_rows(
    profile: DialectProfile,
    table: exp.Table,
    key_column: str,
    key_count: int,
    placeholder: str | None = None,
) -> str:
    """``DELETE FROM <table> WHERE "<key>" IN (<p>, ...)`` with ``key_count`` driver
    placeholders (as :func:`select_rows`).

    >>> from hotdata_retrieval.compile import get_dialect
    >>> delete_rows(get_dialect("postgres"), table_node("docs", "public"), "id", 2, "%s")
    'DELETE FROM "public"."docs" WHERE "id" IN (%s, %s)'
    """
    tree = exp.Delete(this=table, where=_keyed(key_column, key_count, placeholder))
    return render(profile, tree)


def delete_rows_from(
    profile: DialectProfile, table: exp.Table, key_column: str, source: str
) -> str:
    """``DELETE FROM <table> WHERE "<key>" IN (SELECT "<key>" FROM "<source>")``: the rows
    whose key a registered table of rows (DuckDB's ``register``) holds.

    >>> from hotdata_retrieval.compile import get_dialect
    >>> delete_rows_from(get_dialect("duckdb"), table_node("docs", "main"), "id", "changes")
    'DELETE FROM "main"."docs" WHERE "id" IN (SELECT "id" FROM "changes")'
    """
    keys = exp.Select(
        expressions=[exp.column(quoted(key_column))],
        from_=exp.From(this=exp.Table(this=quoted(source))),
    )
    tree = exp.Delete(
        this=table,
        where=exp.Where(
            this=exp.In(this=exp.column(quoted(key_column)), query=exp.Subquery(this=keys))
        ),
    )
    return render(profile, tree)


def insert_rows_from(
    profile: DialectProfile, table: exp.Table, columns: Sequence[str], source: str
) -> str:
    """``INSERT INTO <table> ("c1", ...) SELECT "c1", ... FROM "<source>"``: the named columns
    of a registered table of rows (DuckDB's ``register``), the table's others NULL.

    >>> from hotdata_retrieval.compile import get_dialect
    >>> insert_rows_from(get_dialect("duckdb"), table_node("docs", "main"), ["id"], "changes")
    'INSERT INTO "main"."docs" ("id") SELECT "id" FROM "changes"'
    """
    tree = exp.Insert(
        this=exp.Schema(this=table, expressions=[quoted(name) for name in columns]),
        expression=exp.Select(
            expressions=[exp.column(quoted(name)) for name in columns],
            from_=exp.From(this=exp.Table(this=quoted(source))),
        ),
    )
    return render(profile, tree)


@attrs.frozen
class CastText:
    """A value written as ``text`` and cast to the engine's type ``type_name``, named as the
    engine names it: a date, time or timestamp key compared with its column as a value of
    the column's own type, every digit kept (a timestamp of nanoseconds too), which
    :func:`value_literal` writes as DataFusion's ``arrow_cast('<text>', '<type_name>')``
    (the Hotdata API lists a column's type in that form: ``Timestamp(Nanosecond, None)``,
    ``Date32``).

    >>> from hotdata_retrieval.compile import HOTDATA
    >>> HOTDATA.sqlglot_dialect().generate(value_literal(CastText("2020-01-02", "Date32")))
    "arrow_cast('2020-01-02', 'Date32')"
    """

    text: str
    type_name: str


def value_literal(value: Any) -> exp.Expr:
    """``value`` (text, a whole or real number, a boolean, or a :class:`CastText`) as a
    sqlglot literal, for an engine that takes no driver placeholders (the Hotdata API).

    Raises:
        PlanError: a value of another kind, or a number that is not finite.
    """
    import math

    from hotdata_retrieval.errors import PlanError

    if isinstance(value, CastText):
        return exp.Anonymous(
            this="arrow_cast",
            expressions=[exp.Literal.string(value.text), exp.Literal.string(value.type_name)],
        )
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return exp.Literal.number(repr(value))
    raise PlanError(
        f"a key must be text, a number, a boolean or a typed value, got {value!r}",
        field="keys",
        value=value,
    )


def _projection(columns: Sequence[str] | None) -> list[exp.Expr]:
    if columns is None:
        return [exp.Star()]
    return [exp.column(quoted(name)) for name in columns]


def select_keyed_rows(
    profile: DialectProfile,
    table: exp.Table,
    columns: Sequence[str] | None,
    key_column: str,
    keys: Sequence[Any],
) -> str:
    """``SELECT "c1", ... FROM <table> WHERE "<key>" IN (<literal>, ...)``: the rows of
    ``keys``, written as literals (:func:`value_literal`); ``columns`` ``None`` for ``*``.

    >>> from hotdata_retrieval.compile import HOTDATA
    >>> select_keyed_rows(HOTDATA, table_node("docs", "public"), ["id"], "id", ["a", "it's"])
    'SELECT "id" FROM "public"."docs" WHERE "id" IN (\\'a\\', \\'it\\'\\'s\\')'

    Raises:
        PlanError: a key that is no text, number or boolean.
    """
    tree = exp.Select(
        expressions=_projection(columns),
        from_=exp.From(this=table),
        where=exp.Where(
            this=exp.In(
                this=exp.column(quoted(key_column)),
                expressions=[value_literal(key) for key in keys],
            )
        ),
    )
    return render(profile, tree)


def select_page(
    profile: DialectProfile,
    table: exp.Table,
    columns: Sequence[str] | None,
    key_column: str,
    *,
    after: Any = None,
    limit: int,
) -> str:
    """``SELECT "c1", ... FROM <table> [WHERE "<key>" > <after>] ORDER BY "<key>" LIMIT <n>``:
    one page of rows in key order, the next page starting after the last key of this one
    (keyset pagination); ``columns`` ``None`` for ``*``.

    >>> from hotdata_retrieval.compile import HOTDATA
    >>> select_page(HOTDATA, table_node("docs", "public"), ["id"], "id", after="b", limit=2)
    'SELECT "id" FROM "public"."docs" WHERE "id" > \\'b\\' ORDER BY "id" LIMIT 2'

    Raises:
        PlanError: an ``after`` that is no text, number or boolean.
    """
    key = exp.column(quoted(key_column))
    tree = exp.Select(
        expressions=_projection(columns),
        from_=exp.From(this=table),
        where=None
        if after is None
        else exp.Where(this=exp.GT(this=key.copy(), expression=value_literal(after))),
        order=exp.Order(expressions=[exp.Ordered(this=key.copy(), nulls_first=False)]),
        limit=exp.Limit(expression=exp.Literal.number(int(limit))),
    )
    return render(profile, tree)
