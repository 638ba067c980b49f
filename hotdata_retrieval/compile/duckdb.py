"""The DuckDB dialect: BM25 over the ``fts`` index and ``FLOAT[n]`` array distances.

The target is DuckDB with its ``fts`` extension (its index tables) and its built-in array
distance functions (``array_cosine_distance``, ``array_distance``,
``array_negative_inner_product``; DuckDB 1.5 documentation, "Array Functions"). The engine
(:mod:`hotdata_retrieval.engines.duckdb`) loads the extension offline from the
``duckdb-extension-fts`` wheel, by file path: a plain ``LOAD fts`` looks in
``~/.duckdb/extensions`` and downloads when it is missing (``shared/reference/
local-engines.md`` §B). The extension wheels exist only for the DuckDB version they were
built with, so the ``duckdb`` extra pins ``duckdb`` and ``duckdb-extension-fts`` together.

How each search is written, and why:

- **Text**: tantivy's BM25 computed in SQL (:func:`_text_search`), as the PostgreSQL dialect
  computes it, from the tables of the column's FTS index: the engine indexes each text column
  in a table of its own in the ``hdq_text`` schema (:func:`text_index_table`): each row's
  rowid and its terms by the library's analysis
  (:func:`hotdata_retrieval.analysis.indexed_text`: NFKC, case folding, tantivy's tokenizer,
  stop words and stemmer), under an FTS index with DuckDB's own stemming, stop words, accent
  stripping and lower-casing turned off and whitespace as the only separator
  (:func:`create_fts_index`), so the index holds the local engine's terms (DuckDB's default
  analyser strips digits and dots: ``v1.1.6`` would be ``v``, a stop word). The query is the
  user text's terms by the same analysis, joined by spaces: no character of it is syntax.
  The extension's ``match_bm25`` is not used for the score: it counts a repeated query term
  once and takes a base-10 logarithm, with no ``1 +``, in the IDF (its scores were
  PostgreSQL's times 0.4343 where no term repeats); the statement reads the same index's
  ``dict``, ``terms``, ``docs`` and ``stats`` tables instead, and only the occurrences of
  the query's terms.
- **Nearest neighbour**: the array functions over a ``FLOAT[n]`` column, against the query
  vector written once as ``CAST(CAST([...] AS FLOAT[n]) AS DOUBLE[n])`` (rounded to
  Float32, as every engine reads it, then widened): DuckDB widens the row's ``FLOAT[n]``
  to bind the ``DOUBLE`` overload, so each distance is computed in float64 and cast to
  ``FLOAT``, as the local engine computes its Float32 distances (past Float32's range, an
  infinity, as on the other engines, where DuckDB's own cast fails). On ``FLOAT[n]`` arguments
  ``array_cosine_distance`` multiplies the two squared norms in float32, which overflows or
  underflows for a row and a query both far from unit length (1.0 for a row of norm 1.7e19
  against a query of norm 2; 0.0 or 2.0 against a query of norm 1e-18), where float64 holds
  the product of any two float32 squared norms (tests/parity/test_vector_norm_range.py); the
  widening cost nothing measurable (an exact scan of 50,000 rows of 384 dimensions, median
  of 9 interleaved runs on 2 shared cores at load average 1.7: 106 ms before, 89 ms
  widened, 2026-12-07). ``cosine`` is ``array_cosine_distance`` except against a zero
  vector, where DuckDB returns 2.0 and the Hotdata engine 1.0, so a zero stored vector (its
  squared norm 0 in float64, which no non-zero float32 vector's is) is given 1.0; ``l2`` is
  the *squared*
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

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB

from hotdata_retrieval.analysis import BM25_B, BM25_K1, indexed_text
from hotdata_retrieval.compile.dialect import DialectProfile, register_dialect
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    FLOAT_LITERAL,
    Lowering,
    SearchNode,
    TextSearch,
    VectorDistance,
)
from hotdata_retrieval.compile.stores import StoreCompiler, store_table
from hotdata_retrieval.plan.names import TableName, is_bare_identifier
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

    >>> fts_schema_name("hdq_text", "t4_main_4_docs_body")
    'fts_hdq_text_t4_main_4_docs_body'
    """
    return f"fts_{schema}_{table}"


TEXT_INDEX_SCHEMA = "hdq_text"
"""The schema holding each text column's analysed terms (:func:`text_index_table`), out of
the user's own schemas so that it is never listed as one of their tables."""


def text_index_table(schema: str, table: str, column: str) -> str:
    """The table (in :data:`TEXT_INDEX_SCHEMA`) holding the analysed terms of ``column`` of
    ``<schema>.<table>``, one row per non-NULL row: its ``base_rowid`` and the terms. The
    schema's and the table's names are each preceded by their length, so no two columns
    share a terms table (``a.b__c`` and ``a__b.c`` would otherwise both be ``a__b__c``).

    DuckDB's fts extension writes this name into the SQL it generates unquoted (``PRAGMA
    create_fts_index('main."my docs"', ...)`` fails with ``syntax error at or near "docs"``,
    measured with DuckDB 1.5.5), so when a name is not a bare identifier the terms table is
    named by a digest of the three names instead: a column named ``Body Text`` is indexed
    like any other.

    >>> text_index_table("main", "docs", "body")
    't4_main_4_docs_body'
    >>> text_index_table("main", "docs", "body text")
    'h_4ec29956958e4057b1c0eb3c'
    """
    name = f"t{len(schema)}_{schema}_{len(table)}_{table}_{column}"
    if is_bare_identifier(name):
        return name
    digest = hashlib.sha256("\0".join((schema, table, column)).encode()).hexdigest()
    return f"h_{digest[:24]}"


def terms_column(column: str) -> str:
    """The column of a terms table (:func:`text_index_table`) holding ``column``'s terms:
    its own name when bare (the fts extension writes it unquoted), else ``terms``."""
    return column if is_bare_identifier(column) else "terms"


def text_index_schema(schema: str, table: str, column: str) -> str:
    """The FTS schema of ``column``'s index, holding its ``match_bm25``.

    >>> text_index_schema("main", "docs", "body")
    'fts_hdq_text_t4_main_4_docs_body'
    """
    return fts_schema_name(TEXT_INDEX_SCHEMA, text_index_table(schema, table, column))


def _quoted(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


_TEXT_SEARCH = sqlglot.parse_one(
    """
    SELECT base.*, matched.score AS score
    FROM :table AS base
    JOIN (
      SELECT documents.name AS name, CAST(SUM(
        weights.idf * (:k1 + 1) * counts.frequency
        / (counts.frequency + :k1 * (1 - :b + :b * documents.len / corpus.avgdl))
        ORDER BY weights.position
      ) AS DOUBLE) AS score
      FROM (
        SELECT words.termid AS termid, query_terms.position AS position,
          LN(1 + (corpus.num_docs - words.df + 0.5) / (words.df + 0.5)) AS idf
        FROM UNNEST(STRING_SPLIT(:query, ' ')) WITH ORDINALITY AS query_terms(term, position)
        JOIN :dict AS words ON words.term = query_terms.term
        CROSS JOIN :stats AS corpus
      ) AS weights
      JOIN (
        SELECT occurrences.docid AS docid, occurrences.termid AS termid, COUNT(*) AS frequency
        FROM :terms AS occurrences
        WHERE occurrences.termid IN (
          SELECT words.termid FROM :dict AS words
          WHERE words.term IN (SELECT UNNEST(STRING_SPLIT(:query, ' ')))
        )
        GROUP BY occurrences.docid, occurrences.termid
      ) AS counts ON counts.termid = weights.termid
      JOIN :docs AS documents ON documents.docid = counts.docid
      CROSS JOIN :stats AS corpus
      GROUP BY documents.name
    ) AS matched ON matched.name = base.rowid
    """,
    read="duckdb",
)
"""The text search subquery; its slots are filled with sqlglot nodes."""


def _text_search(node: TextSearch) -> exp.Expr:
    """``(SELECT base.*, <BM25> AS score FROM <s>.<t> AS base JOIN (<each matching row's
    BM25>) ...)``: tantivy's BM25 (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, k1 1.2,
    b 0.75, a query term given twice counted twice), computed from the tables of the
    column's FTS index (:func:`text_index_schema`): ``dict`` (each term's ``df``),
    ``terms`` (each occurrence: ``tf``), ``docs`` (each row's length) and ``stats`` (``N``
    and the mean length). A row's contributions are summed in the query terms' order
    (``SUM(... ORDER BY position)``, the terms numbered ``WITH ORDINALITY``): DuckDB's
    parallel sum adds them in no fixed order, which gave rows of equal statistics scores a
    last digit apart, so their tie fell to float noise instead of the key. The extension's
    own ``match_bm25`` counts a repeated query term once and takes a base-10 logarithm with
    no ``1 +`` in the IDF."""
    table = store_table(node.this, "main")
    index = text_index_schema(table.db, table.name, node.args["column"].name)

    def index_table(name: str) -> exp.Table:
        return exp.Table(this=_quoted(name), db=_quoted(index))

    filled = exp.replace_placeholders(
        _TEXT_SEARCH.copy(),
        table=table,
        query=node.args["query"],
        dict=index_table("dict"),
        terms=index_table("terms"),
        docs=index_table("docs"),
        stats=index_table("stats"),
        k1=exp.Literal.number(BM25_K1),
        b=exp.Literal.number(BM25_B),
    )
    for found in filled.find_all(exp.Table):
        if found.alias == "base":
            found.set("alias", exp.TableAlias(this=_quoted("base")))
    return exp.Subquery(this=filled)


def _float(value: exp.Expr) -> exp.Expr:
    return exp.Cast(this=value, to=exp.DataType.build("FLOAT"))


def _unbounded_float(value: exp.Expr, vector: exp.Expr, metric: DistanceMetric) -> exp.Expr:
    """``value`` (a float64 l2 or dot distance of the row's ``vector``; a cosine distance
    lies within 0 and 2) rounded to ``FLOAT`` as IEEE 754 rounds it, a value past Float32's
    range to an infinity of its sign, as every other engine's Float32 distance is (an l2
    distance between rows of components near 1e20). DuckDB's cast refuses such a value
    ("Conversion Error"), and its ``TRY_CAST`` gives NULL, so the value is
    ``COALESCE(TRY_CAST(<value> AS FLOAT), <infinity>)``: for l2, whose distance is never
    negative, ``CASE WHEN <vector> IS NOT NULL THEN +inf END`` (a row without a vector keeps
    its NULL), at no cost measured; for dot, ``+inf * SIGN(<value>)``, which costs a dot
    search's exact scan about 1.15x (DuckDB evaluates it on every row: 50,000 rows of 384
    dimensions, one thread, 54 against 47 ms CPU, median of 9 alternated runs)."""
    infinity = exp.Cast(this=exp.Literal.string("inf"), to=exp.DataType.build("FLOAT"))
    if metric is DistanceMetric.L2:
        past: exp.Expr = exp.Case(
            ifs=[
                exp.If(
                    this=exp.Not(this=exp.Is(this=vector.copy(), expression=exp.Null())),
                    true=infinity,
                )
            ]
        )
    else:
        past = exp.Mul(
            this=infinity, expression=exp.Anonymous(this="SIGN", expressions=[value.copy()])
        )
    return exp.Coalesce(
        this=exp.TryCast(this=value, to=exp.DataType.build("FLOAT")), expressions=[past]
    )


def _vector_distance(node: VectorDistance) -> exp.Expr:
    """The distance in float64 (the query is ``DOUBLE[n]``, the row widened to bind), cast
    to ``FLOAT`` (module docstring)."""
    vector, query = node.this, node.expression
    metric = node.metric
    distance: exp.Expr = exp.Anonymous(
        this=_DISTANCE_FUNCTIONS[metric], expressions=[vector.copy(), query.copy()]
    )
    if metric is DistanceMetric.COSINE:
        # zero where the float32 squared norm is, and the float64 one (as a list: a FLOAT[n]
        # cast to DOUBLE[n] needs n) confirms it: a non-zero vector whose float32 squared
        # norm underflows is not taken for zero, and only such rows pay for the list
        as_list = exp.Cast(this=vector.copy(), to=exp.DataType.build("DOUBLE[]", dialect="duckdb"))
        zero = exp.and_(
            exp.EQ(
                this=exp.Anonymous(
                    this="array_inner_product", expressions=[vector.copy(), vector.copy()]
                ),
                expression=exp.Literal.number(0),
            ),
            exp.EQ(
                this=exp.Anonymous(this="list_dot_product", expressions=[as_list, as_list.copy()]),
                expression=exp.Literal.number(0),
            ),
        )
        return exp.Case(
            ifs=[exp.If(this=zero, true=exp.Literal.number("1.0"))], default=_float(distance)
        )
    if metric is DistanceMetric.L2:
        distance = exp.Anonymous(this="POWER", expressions=[distance, exp.Literal.number(2)])
    return _unbounded_float(distance, vector, metric)


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

        def literal_sql(self, expression: exp.Literal) -> str:
            """A literal; a float filter value (:data:`FLOAT_LITERAL`) with an exponent,
            which DuckDB reads as a ``DOUBLE``: without one it reads a ``DECIMAL`` and
            converts it to a double one unit in the last place off
            (``0.09999999999999999`` became 0.1, so ``f <= 0.09999999999999999`` kept 0.1)."""
            text = str(super().literal_sql(expression))
            if expression.meta.get(FLOAT_LITERAL) and "e" not in text.lower():
                return f"{text}e0"
            return text


class DuckdbCompiler(StoreCompiler):
    """Plans for DuckDB: ``<schema>.<table>`` names (``public`` is ``main``), exact nearest
    scans ordered by distance then key."""

    default_schema = "main"


@attrs.frozen(kw_only=True, eq=False)
class DuckdbProfile(DialectProfile):
    """The DuckDB profile: a query vector is ``CAST(CAST([...] AS FLOAT[n]) AS DOUBLE[n])``,
    its length in the type, as the array functions require (a list literal does not bind to
    ``FLOAT[n]``): rounded to Float32 as every engine reads a query vector, then widened so
    that the distance is computed in float64 (module docstring)."""

    def vector_literal(self, vector: tuple[float, ...]) -> str:
        """``CAST(CAST([0.1, -2.0] AS FLOAT[2]) AS DOUBLE[2])``.

        >>> DUCKDB.vector_literal((0.1, -2.0))
        'CAST(CAST([0.1, -2.0] AS FLOAT[2]) AS DOUBLE[2])'
        """
        values = ", ".join(map(repr, vector))
        return f"CAST(CAST([{values}] AS FLOAT[{len(vector)}]) AS DOUBLE[{len(vector)}])"


DUCKDB = register_dialect(
    DuckdbProfile(
        name="duckdb",
        sqlglot_dialect=DuckdbDialect,
        compiler=DuckdbCompiler,
        supports_full_outer_join=True,
        full_text_query=indexed_text,
    )
)
"""DuckDB with the fts extension."""


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


def _index_table(table: TableName, column: str) -> exp.Table:
    return exp.Table(
        this=_quoted(text_index_table(_schema(table), table.name, column)),
        db=_quoted(TEXT_INDEX_SCHEMA),
    )


FTS_OPTIONS: Mapping[str, str | int] = {
    "stemmer": "none",
    "stopwords": "none",
    "ignore": "\\s+",
    "strip_accents": 0,
    "lower": 0,
}
"""The fts extension's analyser turned off (fts extension documentation, ``PRAGMA
create_fts_index``): no stemmer, no stop words, no accent stripping or lower-casing, and
only whitespace replaced before the split on whitespace, so an index over analysed terms
holds exactly those terms."""


def create_text_index_table(table: TableName, column: str) -> list[str]:
    """``CREATE SCHEMA IF NOT EXISTS hdq_text`` and ``CREATE OR REPLACE TABLE
    hdq_text.<terms table> (base_rowid BIGINT, "<c>" VARCHAR)``: the statements that make
    the column's terms table, empty."""
    schema = exp.Create(kind="SCHEMA", exists=True, this=exp.Table(db=_quoted(TEXT_INDEX_SCHEMA)))
    created = exp.Create(
        kind="TABLE",
        replace=True,
        this=exp.Schema(
            this=_index_table(table, column),
            expressions=[
                exp.ColumnDef(this=_quoted("base_rowid"), kind=exp.DataType.build("BIGINT")),
                exp.ColumnDef(
                    this=_quoted(terms_column(column)), kind=exp.DataType.build("VARCHAR")
                ),
            ],
        ),
    )
    return [_render(schema), _render(created)]


def text_rows_select(table: TableName, column: str) -> str:
    """``SELECT rowid, "<c>" FROM <s>.<t> WHERE "<c>" IS NOT NULL``: the rows to index."""
    text = exp.column(_quoted(column))
    tree = exp.Select(
        expressions=[exp.column(_quoted("rowid")), text],
        from_=exp.From(this=exp.Table(this=_quoted(table.name), db=_quoted(_schema(table)))),
        where=exp.Where(this=exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null()))),
    )
    return _render(tree)


def insert_text_rows(table: TableName, column: str, source: str) -> str:
    """``INSERT INTO hdq_text.<terms table> SELECT * FROM "<source>"`` (a registered Arrow
    table of rowids and analysed terms)."""
    tree = exp.Insert(
        this=_index_table(table, column),
        expression=exp.Select(
            expressions=[exp.Star()], from_=exp.From(this=exp.Table(this=_quoted(source)))
        ),
    )
    return _render(tree)


def create_fts_index(table: TableName, column: str) -> str:
    """``PRAGMA create_fts_index('hdq_text.<terms table>', 'base_rowid', '<c>', stemmer =
    'none', ..., overwrite = 1)``: the BM25 index of a column's terms table, keyed by the
    base table's rowid, with DuckDB's analyser turned off (:data:`FTS_OPTIONS`)."""
    options = {**FTS_OPTIONS, "overwrite": 1}
    arguments: list[exp.Expr] = [
        exp.Literal.string(
            f"{TEXT_INDEX_SCHEMA}.{text_index_table(_schema(table), table.name, column)}"
        ),
        exp.Literal.string("base_rowid"),
        exp.Literal.string(terms_column(column)),
        *(
            exp.EQ(
                this=exp.var(name),
                expression=exp.Literal.string(value)
                if isinstance(value, str)
                else exp.Literal.number(value),
            )
            for name, value in options.items()
        ),
    ]
    return _render(exp.Pragma(this=exp.Anonymous(this="create_fts_index", expressions=arguments)))


def drop_text_index(table: TableName, column: str) -> list[str]:
    """``DROP SCHEMA IF EXISTS "fts_hdq_text_<terms table>" CASCADE`` and ``DROP TABLE IF
    EXISTS hdq_text.<terms table>``: a column's index and terms table gone."""
    index = text_index_schema(_schema(table), table.name, column)
    return [
        _render(
            exp.Drop(
                kind="SCHEMA", exists=True, cascade=True, tables=[exp.Table(this=_quoted(index))]
            )
        ),
        _render(exp.Drop(kind="TABLE", exists=True, tables=[_index_table(table, column)])),
    ]


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


def text_indexes_select(table: TableName, columns: Sequence[str]) -> str:
    """``SELECT "schema_name" FROM duckdb_tables() WHERE "table_name" = 'stats' AND
    "schema_name" IN (...)``: the FTS schemas (:func:`text_index_schema`) of those of
    ``columns`` that have a built index."""
    schemas = [text_index_schema(_schema(table), table.name, column) for column in columns]
    listed = exp.Select(
        expressions=[exp.column(_quoted("schema_name"))],
        from_=exp.From(this=exp.Table(this=exp.Anonymous(this="duckdb_tables", expressions=[]))),
        where=exp.Where(
            this=exp.and_(
                exp.EQ(
                    this=exp.column(_quoted("table_name")), expression=exp.Literal.string("stats")
                ),
                exp.In(
                    this=exp.column(_quoted("schema_name")),
                    expressions=[exp.Literal.string(schema) for schema in schemas],
                ),
            )
        ),
    )
    return _render(listed)


def rename_table(table: TableName, new_name: str) -> str:
    """``ALTER TABLE <schema>.<table> RENAME TO "<new name>"``: the table under another name in
    its schema, its rows (and their rowids) unchanged.

    >>> rename_table(TableName.parse("docs__hdq_loading"), "docs")
    'ALTER TABLE "main"."docs__hdq_loading" RENAME TO "docs"'
    """
    tree = exp.Alter(
        this=exp.Table(this=_quoted(table.name), db=_quoted(_schema(table))),
        kind="TABLE",
        actions=[exp.AlterRename(this=exp.Table(this=_quoted(new_name)))],
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


def _keyed_in(key_column: str, source: str) -> exp.In:
    keys = exp.Select(
        expressions=[exp.column(_quoted(key_column))],
        from_=exp.From(this=exp.Table(this=_quoted(source))),
    )
    return exp.In(this=exp.column(_quoted(key_column)), query=exp.Subquery(this=keys))


def copy_kept_rows(table: TableName, new_name: str, key_column: str, source: str) -> str:
    """``CREATE TABLE <schema>."<new name>" AS SELECT * FROM <schema>.<table> WHERE NOT "<key>"
    IN (SELECT "<key>" FROM "<source>")``: a new table, of the same column types, holding the
    rows of ``table`` whose key the registered table ``source`` does not hold, in their order.

    >>> copy_kept_rows(TableName.parse("docs"), "docs__hdq_loading", "id", "changes")
    'CREATE TABLE "main"."docs__hdq_loading" AS SELECT * FROM "main"."docs" WHERE NOT "id" IN \
(SELECT "id" FROM "changes")'
    """
    kept = exp.Select(
        expressions=[exp.Star()],
        from_=exp.From(this=exp.Table(this=_quoted(table.name), db=_quoted(_schema(table)))),
        where=exp.Where(this=exp.Not(this=_keyed_in(key_column, source))),
    )
    tree = exp.Create(
        this=exp.Table(this=_quoted(new_name), db=_quoted(_schema(table))),
        kind="TABLE",
        expression=kept,
    )
    return _render(tree)


def keyed_count(table: TableName, key_column: str, source: str) -> str:
    """``SELECT count(*) FROM <schema>.<table> WHERE "<key>" IN (SELECT "<key>" FROM
    "<source>")``: how many rows of ``table`` the registered table ``source`` names by key.

    >>> keyed_count(TableName.parse("docs"), "id", "changes")
    'SELECT COUNT(*) FROM "main"."docs" WHERE "id" IN (SELECT "id" FROM "changes")'
    """
    tree = exp.Select(
        expressions=[exp.Count(this=exp.Star())],
        from_=exp.From(this=exp.Table(this=_quoted(table.name), db=_quoted(_schema(table)))),
        where=exp.Where(this=_keyed_in(key_column, source)),
    )
    return _render(tree)


# -- the agent SQL snapshot (engines.duckdb: DuckdbEngine._agent_snapshot) -----------------------


def attach_database(path: str, alias: str) -> str:
    """``ATTACH '<path>' AS "<alias>"``: a database file (created if missing) beside the
    current one."""
    return _render(exp.Attach(this=exp.alias_(exp.Literal.string(path), _quoted(alias))))


def detach_database(alias: str) -> str:
    """``DETACH "<alias>"``."""
    return _render(exp.Detach(this=_quoted(alias)))


def copy_database_schema(source: str, target: str) -> str:
    """``COPY FROM DATABASE "<source>" TO "<target>" (SCHEMA)``: every schema, table (empty),
    view, macro and sequence of ``source`` made again in ``target`` (DuckDB documentation,
    "COPY FROM DATABASE ... TO")."""
    words = f" FROM DATABASE {_render(_quoted(source))} TO {_render(_quoted(target))} (SCHEMA)"
    return _render(exp.Command(this="COPY", expression=words))


def _catalog_table(catalog: str, schema: str, table: str) -> exp.Table:
    return exp.Table(this=_quoted(table), db=_quoted(schema), catalog=_quoted(catalog))


def copy_rows(table: tuple[str, str], source: str, target: str) -> str:
    """``INSERT INTO "<target>"."<s>"."<t>" SELECT * FROM "<source>"."<s>"."<t>"``: one table's
    rows, in the order they are stored (DuckDB keeps it: ``preserve_insertion_order``, on by
    default, DuckDB documentation "Configuration"), so a table whose rowids have no gap has the
    same rowids in the copy."""
    schema, name = table
    tree = exp.Insert(
        this=_catalog_table(target, schema, name),
        expression=exp.Select(
            expressions=[exp.Star()],
            from_=exp.From(this=_catalog_table(source, schema, name)),
        ),
    )
    return _render(tree)


def rowid_span_select(catalog: str, table: str) -> str:
    """``SELECT count(*), max(rowid) FROM "<catalog>".main."<table>"``: whether a table's rowids
    run from 0 without a gap (``max + 1 == count``), as a copy's do."""
    tree = exp.Select(
        expressions=[
            exp.Count(this=exp.Star()),
            exp.Max(this=exp.column(_quoted("rowid"))),
        ],
        from_=exp.From(this=_catalog_table(catalog, "main", table)),
    )
    return _render(tree)


def catalog_objects_select(catalog: str, function: str, name_column: str) -> str:
    """``SELECT schema_name, <name_column> FROM <function>() WHERE database_name = '<catalog>'
    AND NOT internal``: the views (``duckdb_views``, ``view_name``), macros
    (``duckdb_functions``, ``function_name``) or tables (``duckdb_tables``, ``table_name``) of
    one attached database, each with its schema."""
    where: exp.Expr = exp.EQ(
        this=exp.column(_quoted("database_name")), expression=exp.Literal.string(catalog)
    )
    where = exp.and_(where, exp.Not(this=exp.column(_quoted("internal"))))
    if function == "duckdb_functions":
        where = exp.and_(
            where,
            exp.In(
                this=exp.column(_quoted("function_type")),
                expressions=[exp.Literal.string("macro"), exp.Literal.string("table_macro")],
            ),
        )
    tree = exp.Select(
        expressions=[exp.column(_quoted("schema_name")), exp.column(_quoted(name_column))],
        distinct=exp.Distinct(),
        from_=exp.From(this=exp.Table(this=exp.Anonymous(this=function, expressions=[]))),
        where=exp.Where(this=where),
    )
    if function == "duckdb_functions":
        tree = tree.select(exp.column(_quoted("function_type")))
    return _render(tree)


def drop_view(catalog: str, schema: str, view: str) -> str:
    """``DROP VIEW "<catalog>"."<schema>"."<view>"``."""
    return _render(exp.Drop(kind="VIEW", tables=[_catalog_table(catalog, schema, view)]))


def drop_macro(catalog: str, schema: str, macro: str, *, table_macro: bool) -> str:
    """``DROP MACRO [TABLE] "<catalog>"."<schema>"."<macro>"`` (a table macro is dropped as
    one: DuckDB documentation, "DROP Statement")."""
    name = _render(_catalog_table(catalog, schema, macro))
    words = f" MACRO {'TABLE ' if table_macro else ''}{name}"
    return _render(exp.Command(this="DROP", expression=words))
