"""The DuckDB dialect: the ``fts`` extension's BM25 and fixed-size ``FLOAT[n]`` array distances.

The target is DuckDB with its ``fts`` extension (``match_bm25``) and its built-in array
distance functions (``array_cosine_distance``, ``array_distance``,
``array_negative_inner_product``; DuckDB 1.5 documentation, "Array Functions"). The engine
(:mod:`hotdata_retrieval.engines.duckdb`) loads the extension offline from the
``duckdb-extension-fts`` wheel, by file path: a plain ``LOAD fts`` looks in
``~/.duckdb/extensions`` and downloads when it is missing (``shared/reference/
local-engines.md`` §B). The extension wheels exist only for the DuckDB version they were
built with, so the ``duckdb`` extra pins ``duckdb`` and ``duckdb-extension-fts`` together.

How each search is written, and why:

- **Text**: ``fts_<schema>_<table>.match_bm25(rowid, <query>, fields := '<column>')`` over
  the table, in a subquery that keeps the rows it scores (``match_bm25`` is NULL for a row
  that does not match). The engine builds one FTS index per table, over all its text
  columns, keyed by ``rowid`` (``PRAGMA create_fts_index``); ``fields`` picks the column.
  The query text is passed as written: ``match_bm25`` has no query syntax, it tokenizes the
  text itself with the index's stemmer and is disjunctive by default (``conjunctive := 0``).
  It scans every row (it is a SQL macro), about 1 s per query at 100k rows (local-engines
  §B).
- **Nearest neighbour**: the array functions over a ``FLOAT[n]`` column, against the query
  vector written once as ``CAST([...] AS FLOAT[n])``. ``cosine`` is
  ``array_cosine_distance`` except against a zero vector, where DuckDB returns 2.0 and the
  Hotdata engine 1.0, so a zero stored vector is given 1.0; ``l2`` is the *squared*
  Euclidean distance (the Hotdata engine's ``l2_distance``), ``POWER(array_distance(...),
  2)`` since ``array_distance`` is the Euclidean distance itself; ``dot`` is
  ``array_negative_inner_product`` (``-(a·b)``, as the Hotdata engine's
  ``negative_dot_product``). The scan is exact and ordered by distance then key: the vss
  extension's HNSW index is not used (an ``ORDER BY`` with a tie-break does not take it,
  local-engines §B).
- **Names**: ``<schema>.<table>`` in the current database, the plan's ``public`` schema being
  DuckDB's ``main``; every identifier is quoted.
- Engine-embedded semantic search does not exist here and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

from hotdata_retrieval.compile.dialect import DialectProfile, register_dialect
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    Lowering,
    SearchNode,
    TextSearch,
    VectorDistance,
)
from hotdata_retrieval.compile.stores import StoreCompiler, store_table
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import DistanceMetric
from hotdata_retrieval.plan.values import check_positive_int

_DISTANCE_FUNCTIONS: Mapping[DistanceMetric, str] = {
    DistanceMetric.COSINE: "array_cosine_distance",
    DistanceMetric.L2: "array_distance",
    DistanceMetric.DOT: "array_negative_inner_product",
}


def fts_schema_name(schema: str, table: str) -> str:
    """The schema DuckDB's ``PRAGMA create_fts_index`` creates for a table's index, holding
    ``match_bm25`` (fts extension documentation: ``fts_<schema>_<table>``).

    >>> fts_schema_name("main", "docs")
    'fts_main_docs'
    """
    return f"fts_{schema}_{table}"


def _quoted(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def _text_search(node: TextSearch) -> exp.Expr:
    """``(SELECT * FROM (SELECT base.*, fts_<s>_<t>.match_bm25(base.rowid, <query>, fields :=
    '<column>') AS score FROM <s>.<t> AS base) WHERE score IS NOT NULL)``."""
    table = store_table(node.this, "main")
    table.set("alias", exp.TableAlias(this=_quoted("base")))
    match = exp.Dot(
        this=_quoted(fts_schema_name(table.db, table.name)),
        expression=exp.Anonymous(
            this="match_bm25",
            expressions=[
                exp.Column(this=_quoted("rowid"), table=_quoted("base")),
                node.args["query"],
                exp.PropertyEQ(
                    this=exp.Identifier(this="fields", quoted=False),
                    expression=exp.Literal.string(node.args["column"].name),
                ),
            ],
        ),
    )
    scored = exp.Select(
        expressions=[
            exp.Column(this=exp.Star(), table=_quoted("base")),
            exp.Alias(this=match, alias=_quoted("score")),
        ],
        from_=exp.From(this=table),
    )
    matching = exp.Select(
        expressions=[exp.Star()],
        from_=exp.From(this=exp.Subquery(this=scored)),
        where=exp.Where(
            this=exp.Not(this=exp.Is(this=exp.column(_quoted("score")), expression=exp.Null()))
        ),
    )
    return exp.Subquery(this=matching)


def _vector_distance(node: VectorDistance) -> exp.Expr:
    vector, query = node.this, node.expression
    metric = node.metric
    distance: exp.Expr = exp.Anonymous(
        this=_DISTANCE_FUNCTIONS[metric], expressions=[vector.copy(), query.copy()]
    )
    if metric is DistanceMetric.COSINE:
        zero = exp.EQ(
            this=exp.Anonymous(
                this="array_inner_product", expressions=[vector.copy(), vector.copy()]
            ),
            expression=exp.Literal.number(0),
        )
        return exp.Case(ifs=[exp.If(this=zero, true=exp.Literal.number("1.0"))], default=distance)
    if metric is DistanceMetric.L2:
        return exp.Anonymous(this="POWER", expressions=[distance, exp.Literal.number(2)])
    return distance


class DuckdbDialect(DuckDB):
    """sqlglot's DuckDB, with function names kept as written and every identifier quoted."""

    NORMALIZE_FUNCTIONS = False

    class Generator(DuckDB.Generator):  # type: ignore[valid-type,misc]  # sqlglot nests classes
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **DuckDB.Generator.TRANSFORMS,
            **COMPILER_TRANSFORMS,
        }
        SEARCH_NODES: ClassVar[Mapping[type[SearchNode], Lowering]] = {
            TextSearch: _text_search,
            VectorDistance: _vector_distance,
        }

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["identify"] = True
            super().__init__(*args, **kwargs)


class DuckdbCompiler(StoreCompiler):
    """Plans for DuckDB: ``<schema>.<table>`` names (``public`` is ``main``), exact nearest
    scans ordered by distance then key."""

    default_schema = "main"


@attrs.frozen(kw_only=True, eq=False)
class DuckdbProfile(DialectProfile):
    """The DuckDB profile: a query vector is ``CAST([...] AS FLOAT[n])``, its length in the
    type, as the array functions require (a list literal does not bind to ``FLOAT[n]``)."""

    def vector_literal(self, vector: tuple[float, ...]) -> str:
        """``CAST([0.1, -2.0] AS FLOAT[2])``.

        >>> DUCKDB.vector_literal((0.1, -2.0))
        'CAST([0.1, -2.0] AS FLOAT[2])'
        """
        return f"CAST([{', '.join(map(repr, vector))}] AS FLOAT[{len(vector)}])"


DUCKDB = register_dialect(
    DuckdbProfile(
        name="duckdb",
        sqlglot_dialect=DuckdbDialect,
        compiler=DuckdbCompiler,
        supports_full_outer_join=True,
    )
)
"""DuckDB with the fts extension."""


def fts_schema_of(table: TableName) -> str:
    """The FTS index schema of ``table`` (``public`` is ``main``).

    >>> fts_schema_of(TableName.parse("docs"))
    'fts_main_docs'
    """
    return fts_schema_name("main" if table.schema == "public" else table.schema, table.name)


# -- the engine's other statements -------------------------------------------------------------


def _render(tree: exp.Expr) -> str:
    text: str = DuckdbDialect().generate(tree, copy=False)
    return text


def _schema(table: TableName) -> str:
    return "main" if table.schema == "public" else table.schema


def load_extension(path: str) -> str:
    """``LOAD '<path>'``: an extension from a file, never from the network."""
    return _render(exp.Command(this="LOAD", expression=" " + _render(exp.Literal.string(path))))


def set_threads(threads: int) -> str:
    """``SET threads = <n>``.

    Raises:
        PlanError: ``threads`` is not a positive integer.
    """
    return set_option("threads", check_positive_int(threads, label="threads"))


def set_option(name: str, value: bool | int | str) -> str:
    """``SET <name> = <value>``: one of DuckDB's configuration options (DuckDB
    documentation, "Configuration"), its value a literal.

    >>> set_option("enable_external_access", False)
    'SET enable_external_access = FALSE'
    """
    literal: exp.Expr
    if isinstance(value, bool):
        literal = exp.Boolean(this=value)
    elif isinstance(value, int):
        literal = exp.Literal.number(value)
    else:
        literal = exp.Literal.string(value)
    return _render(
        exp.Set(expressions=[exp.SetItem(this=exp.EQ(this=exp.var(name), expression=literal))])
    )


def schema_tables_select(schema: str) -> str:
    """``SELECT "table_name" FROM information_schema.tables WHERE "table_schema" = '<s>' AND
    "table_type" = 'BASE TABLE'``: the tables of one schema."""
    tree = exp.Select(
        expressions=[exp.column(_quoted("table_name"))],
        from_=exp.From(this=exp.Table(this=_quoted("tables"), db=_quoted("information_schema"))),
        where=exp.Where(
            this=exp.and_(
                exp.EQ(
                    this=exp.column(_quoted("table_schema")), expression=exp.Literal.string(schema)
                ),
                exp.EQ(
                    this=exp.column(_quoted("table_type")),
                    expression=exp.Literal.string("BASE TABLE"),
                ),
            )
        ),
        order=exp.Order(expressions=[exp.Ordered(this=exp.column(_quoted("table_name")))]),
    )
    return _render(tree)


def create_fts_index(table: TableName, columns: Sequence[str]) -> str:
    """``PRAGMA create_fts_index('<schema>.<table>', 'rowid', '<column>', ..., overwrite =
    1)``: one BM25 index over the table's text columns, keyed by ``rowid`` (fts extension
    documentation; English Porter stemmer and stop words, its defaults)."""
    arguments: list[exp.Expr] = [
        exp.Literal.string(f"{_schema(table)}.{table.name}"),
        exp.Literal.string("rowid"),
        *(exp.Literal.string(name) for name in columns),
        exp.EQ(this=exp.var("overwrite"), expression=exp.Literal.number(1)),
    ]
    return _render(exp.Pragma(this=exp.Anonymous(this="create_fts_index", expressions=arguments)))


def table_columns_select(table: TableName) -> str:
    """The table's columns (name, declared type) in order, from ``information_schema.columns``."""
    tree = exp.Select(
        expressions=[exp.column(_quoted("column_name")), exp.column(_quoted("data_type"))],
        from_=exp.From(this=exp.Table(this=_quoted("columns"), db=_quoted("information_schema"))),
        where=exp.Where(
            this=exp.and_(
                exp.EQ(
                    this=exp.column(_quoted("table_schema")),
                    expression=exp.Literal.string(_schema(table)),
                ),
                exp.EQ(
                    this=exp.column(_quoted("table_name")),
                    expression=exp.Literal.string(table.name),
                ),
            )
        ),
        order=exp.Order(expressions=[exp.Ordered(this=exp.column(_quoted("ordinal_position")))]),
    )
    return _render(tree)


def fts_index_select(table: TableName) -> str:
    """``SELECT 1 FROM duckdb_tables() WHERE schema_name = 'fts_<s>_<t>' AND table_name =
    'fields'``: a row when the table has an FTS index (:func:`fields_select` then lists its
    columns)."""
    schema = fts_schema_of(table)
    listed = exp.Select(
        expressions=[exp.Literal.number(1)],
        from_=exp.From(this=exp.Table(this=exp.Anonymous(this="duckdb_tables", expressions=[]))),
        where=exp.Where(
            this=exp.and_(
                exp.EQ(
                    this=exp.column(_quoted("schema_name")), expression=exp.Literal.string(schema)
                ),
                exp.EQ(
                    this=exp.column(_quoted("table_name")), expression=exp.Literal.string("fields")
                ),
            )
        ),
    )
    return _render(listed)


def fields_select(table: TableName) -> str:
    """``SELECT "field" FROM "fts_<s>_<t>"."fields"``: the columns of the table's FTS index."""
    tree = exp.Select(
        expressions=[exp.column(_quoted("field"))],
        from_=exp.From(this=exp.Table(this=_quoted("fields"), db=_quoted(fts_schema_of(table)))),
    )
    return _render(tree)


def insert_from(table: TableName, source: str) -> str:
    """``INSERT INTO <schema>.<table> SELECT * FROM "<source>"`` (a registered Arrow table)."""
    tree = exp.Insert(
        this=exp.Table(this=_quoted(table.name), db=_quoted(_schema(table))),
        expression=exp.Select(
            expressions=[exp.Star()], from_=exp.From(this=exp.Table(this=_quoted(source)))
        ),
    )
    return _render(tree)
