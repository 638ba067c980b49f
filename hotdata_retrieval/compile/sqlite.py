"""The SQLite dialect: BM25 in SQL for text search, sqlite-vec for nearest-neighbour search.

The target is SQLite with the FTS5 module and the sqlite-vec extension (``vec_f32``,
``vec_length``, ``vec_distance_cosine``, ``vec_distance_l2``; sqlite-vec 0.1.9). Python's
standard ``sqlite3`` often cannot load extensions (no ``enable_load_extension`` in the build
measured, ``shared/reference/local-engines.md`` §C), so the engine
(:mod:`hotdata_retrieval.engines.sqlite`) runs it through ``sqlean.py``, which bundles SQLite
3.50 with extension loading.

How each search is written, and why:

- **Text**: tantivy's BM25 computed in SQL (:func:`_text_search`), as the PostgreSQL and
  DuckDB dialects compute it — ``Σ idf · (k1 + 1) · tf / (tf + k1 · (1 - b + b · dl /
  avgdl))``, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, k1 1.2, b 0.75, a query term
  given twice counted twice — from statistics the engine writes beside each text column at
  load and keeps in step with every change: the column's postings
  (:func:`terms_table_name`: each term of each row with its frequency and the row's length,
  keyed by term, so ``df`` is the count of one key range) and its corpus row
  (:func:`corpus_table_name`: ``N`` and the total length). Each row's terms are the
  library's analysis (:func:`hotdata_retrieval.analysis.analyze_text`: NFKC, case folding,
  tantivy's tokenizer, stop words and stemmer); the query is the user text's terms by the
  same analysis as a JSON array read with ``json_each`` (:func:`query_terms`), so a version
  string, a dotted number, decomposed or full-width text match as on the local engine, and
  hyphens, apostrophes, quotes, parentheses and words such as ``NEAR`` or ``AND`` are data.
  A row's per-term contributions are summed in the query terms' order (``SUM(... ORDER BY
  position)``, an ordered aggregate: SQLite 3.44.0 and later, its release notes; the
  ``sqlean.py>=3.45`` the engine runs on bundles such a SQLite, while SQL rendered for an
  older one fails to parse there), so rows with the same statistics get bit-identical
  scores and their tie falls to the key.
  FTS5's own ``bm25()`` is not used for the score: its IDF is ``ln((N - df + 0.5) / (df +
  0.5))``, floored at 1e-6 (FTS5 documentation, §5.1.1; the source's ``fts5Bm25GetData``),
  another ranking. The engine still writes a contentless FTS5 table per text column
  (:func:`fts_table_name`, the rows' analysed terms under FTS5's ``ascii`` tokenizer): it
  marks the column as searchable and serves ``MATCH``, ``bm25()``, ``highlight()`` in agent
  SQL. The subquery is not bounded by ``k``: the branch's ``ORDER BY score DESC, key ASC
  LIMIT k`` cuts it, so rows tied at the cut are kept by key as on the local engine.
- **Nearest neighbour**: ``vec_distance_cosine`` / ``vec_distance_l2`` of the column against
  ``vec_f32('[...]')``. The query vector is written once as ``vec_f32`` of a constant, which
  SQLite evaluates once per statement; a bare JSON string would be parsed again for every row
  (measured 922 ms instead of 19 ms at 10k rows, local-engines §C). A row's vector may be a
  float32 BLOB (what the engine writes) or **JSON text** (a plain SQL table of vectors): a row
  whose JSON is malformed, holds a non-number or a value beyond float32's range, or has
  another dimension than the query — or a BLOB of the wrong length — gets no distance (NULL),
  so it is no candidate; :func:`vector_scan_select` counts such rows, and the engine reports
  them (``SearchResult.vector_scans``). A NULL vector is no candidate either, as on every
  engine.
- **Metrics**: the plan's ``l2`` is the *squared* Euclidean distance (the Hotdata engine's
  ``l2_distance``); sqlite-vec's ``vec_distance_l2`` is the Euclidean distance itself, so
  ``l2`` is written ``POWER(vec_distance_l2(...), 2)`` and reports the same numbers.
  ``cosine`` is ``vec_distance_cosine``, which has no value against a zero vector; a stored
  zero vector gets 1.0, as on the Hotdata engine. sqlite-vec has no dot product, so ``dot``
  is refused while compiling. sqlite-vec computes in float32 (the Hotdata engine returns
  float32 distances too).
- **Names**: SQLite has no catalogs; a table's schema ``public`` is SQLite's ``main``, any other
  schema an attached database of that name. Every identifier is quoted (a keyword-named
  column needs no list of SQLite's keywords). SQLite reads a double-quoted name that matches
  no column as a string (its "double-quoted string literal" compatibility), so the engine
  checks every column a plan names before running it.
- **Fusion**: ``FULL OUTER JOIN`` exists from SQLite 3.39.0 (:data:`SQLITE`); for older
  versions, :data:`SQLITE_BEFORE_FULL_JOIN` joins each branch with ``LEFT JOIN`` to the
  ``UNION`` of their keys (same rows and scores).
- Engine-embedded semantic search (``vector_search``) does not exist here and is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import sqlglot
from sqlglot import exp
from sqlglot.dialects.sqlite import SQLite

from hotdata_retrieval.analysis import BM25_B, BM25_K1, analyze_text
from hotdata_retrieval.compile.compiler import (
    LiteralBinder,
    column,
    identifier,
    searched_table,
    table_reference,
)
from hotdata_retrieval.compile.dialect import DialectProfile, register_dialect
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    Lowering,
    SearchNode,
    TemporalLiteral,
    TextSearch,
    UnsupportedOnDialectError,
    VectorDistance,
)
from hotdata_retrieval.compile.stores import StoreCompiler
from hotdata_retrieval.plan.filters import ContainsAll, ContainsAny, EndsWith, StartsWith
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import DistanceMetric, NearestNeighborSearch, SearchPlan
from hotdata_retrieval.plan.values import FLOAT32_MAX

FULL_OUTER_JOIN_VERSION = (3, 39, 0)
"""The first SQLite version with ``RIGHT`` and ``FULL OUTER JOIN`` (SQLite release notes,
3.39.0, 2022-06-25)."""

_DISTANCE_FUNCTIONS: Mapping[DistanceMetric, str] = {
    DistanceMetric.COSINE: "vec_distance_cosine",
    DistanceMetric.L2: "vec_distance_l2",
}
"""sqlite-vec's distance functions (sqlite-vec API reference, "Distance functions");
``vec_distance_l2`` is the Euclidean distance, squared by the lowering for the plan's ``l2``."""


def fts_table_name(table: str, column: str) -> str:
    """The FTS5 table that indexes ``column`` of ``table`` (in the table's schema): the one
    name the compiler reads and the engine writes.

    >>> fts_table_name("docs", "body")
    'docs__body__fts'
    """
    return f"{table}__{column}__fts"


def fts5_query(query_text: str) -> str:
    """User text as an FTS5 ``MATCH`` query of a column's FTS5 table (:func:`fts_table_name`,
    for agent SQL or a comparison with FTS5's own ``bm25()``) in which nothing is syntax: its
    terms by the library's analysis (:func:`hotdata_retrieval.analysis.analyze_text`, the
    local engine's), each a double-quoted FTS5 string, joined with ``OR`` (any term matches).
    A term holds only alphanumeric characters, so no quote needs escaping; text with no term
    at all (punctuation, stop words) is the empty string ``""``, which matches no row.

    >>> fts5_query("ERR-DIM-384 it's NEAR(a b)")
    '"err" OR "dim" OR "384" OR "s" OR "near" OR "a" OR "b"'
    >>> fts5_query("* - ^ the")
    '""'
    """
    return " OR ".join(f'"{term}"' for term in analyze_text(query_text)) or '""'


def sqlite_schema(table: TableName) -> str:
    """The SQLite schema of ``table``: ``main`` for the plan's default ``public``, else the
    attached database of the schema's name.

    >>> sqlite_schema(TableName.parse("docs"))
    'main'
    """
    return "main" if table.schema == "public" else table.schema


def _sqlite_table(table: exp.Table) -> exp.Table:
    """``catalog.schema.table`` as SQLite names it: ``<schema>.<table>`` (schema mapped)."""
    schema = table.db
    return exp.Table(
        this=identifier(table.name),
        db=identifier("main" if schema in ("", "public") else schema),
        alias=table.args.get("alias"),
    )


def terms_table_name(table: str, column: str) -> str:
    """The table of ``column``'s postings (in the table's schema): one row per (term, row
    holding it) with the term's ``frequency`` in the row and the row's ``length`` (its number
    of terms), keyed by ``(term, doc)`` (``WITHOUT ROWID``: the rows of a term are one range of
    the key), ``doc`` being the base table's rowid.

    >>> terms_table_name("docs", "body")
    'docs__body__fts_terms'
    """
    return f"{fts_table_name(table, column)}_terms"


def corpus_table_name(table: str, column: str) -> str:
    """The one-row table of ``column``'s corpus statistics (in the table's schema): the rows
    with text (``documents``, NULL is no document) and their terms in all
    (``total_length``), so the mean length is ``total_length / documents``.

    >>> corpus_table_name("docs", "body")
    'docs__body__fts_corpus'
    """
    return f"{fts_table_name(table, column)}_corpus"


def query_terms(query_text: str) -> str:
    """User text as the text search's query: its terms by the library's analysis
    (:func:`hotdata_retrieval.analysis.analyze_text`, repeats kept) as a JSON array, which the
    statement reads with ``json_each``, so no character of the user's text is syntax. Text
    with no term is ``[]``, which matches no row.

    >>> query_terms("ERR-DIM-384 it's (NEAR) disk disk")
    '["err", "dim", "384", "s", "near", "disk", "disk"]'
    >>> query_terms("* - ^ the")
    '[]'
    """
    return json.dumps(list(analyze_text(query_text)), ensure_ascii=False)


_TEXT_SEARCH = sqlglot.parse_one(
    """
    SELECT base.*, matched.score AS score
    FROM :table AS base
    JOIN (
      SELECT postings.doc AS doc, SUM(
        weights.idf * (:k1 + 1) * postings.frequency
        / (postings.frequency + :k1 * (1 - :b + :b * postings.length / weights.average_length))
        ORDER BY weights.position
      ) AS score
      FROM (
        SELECT counted.term AS term, counted.position AS position,
          LN(1 + (corpus.documents - counted.documents + 0.5) / (counted.documents + 0.5))
            AS idf,
          CAST(corpus.total_length AS REAL) / corpus.documents AS average_length
        FROM (
          SELECT query_term.value AS term, query_term.key AS position, COUNT(*) AS documents
          FROM JSON_EACH(:query) AS query_term
          JOIN :terms AS holders ON holders.term = query_term.value
          GROUP BY query_term.key, query_term.value
        ) AS counted
        CROSS JOIN :corpus AS corpus
      ) AS weights
      JOIN :terms AS postings ON postings.term = weights.term
      GROUP BY postings.doc
    ) AS matched ON matched.doc = base.rowid
    """,
    read="sqlite",
)
"""The text search subquery; its slots are filled with sqlglot nodes."""


def _text_search(node: TextSearch) -> exp.Expr:
    """``(SELECT base.*, <BM25> AS score FROM <schema>.<table> AS base JOIN (<each matching
    row's BM25>) ...)``: tantivy's BM25 (``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, k1
    1.2, b 0.75, a query term given twice counted twice) computed from the column's postings
    (:func:`terms_table_name`: ``df`` counted from a term's range, ``tf`` and the row's
    length read from it) and its corpus row (:func:`corpus_table_name`: ``N`` and the mean
    length). The contributions are summed in the query terms' order (their ``json_each``
    key), so the same statistics give the same float whatever order the rows are read in.
    FTS5's own ``bm25()`` takes ``ln((N - df + 0.5) / (df + 0.5))``, floored at 1e-6, as the
    IDF (FTS5 documentation, §5.1.1): another ranking."""
    table: exp.Table = node.this
    column_name = node.args["column"].name

    def beside(name: str) -> exp.Table:
        return _sqlite_table(exp.Table(this=identifier(name), db=identifier(table.db)))

    base = _sqlite_table(table)
    base.set("alias", None)
    filled = exp.replace_placeholders(
        _TEXT_SEARCH.copy(),
        table=base,
        terms=beside(terms_table_name(table.name, column_name)),
        corpus=beside(corpus_table_name(table.name, column_name)),
        query=node.args["query"],
        k1=exp.Literal.number(BM25_K1),
        b=exp.Literal.number(BM25_B),
    )
    for found in filled.find_all(exp.Table):
        if found.alias in ("base", "holders", "corpus", "postings"):
            found.set("alias", exp.TableAlias(this=identifier(found.alias)))
    return exp.Subquery(this=filled)


def _vector_valid(vector: exp.Expr, dimension: exp.Expr) -> exp.Expr:
    """Whether a row's ``vector`` has a distance to a query of ``dimension`` components (a
    number, or ``vec_length(<query>)``): a float32 BLOB of that length, or JSON text of an
    array of as many finite float32 numbers."""

    def call(name: str, *arguments: exp.Expr) -> exp.Expr:
        return exp.Anonymous(this=name, expressions=list(arguments))

    def text(value: str) -> exp.Expr:
        return exp.Literal.string(value)

    blob = exp.and_(
        exp.EQ(this=call("typeof", vector.copy()), expression=text("blob")),
        exp.EQ(
            this=call("length", vector.copy()),
            expression=exp.Mul(this=exp.Literal.number(4), expression=dimension.copy()),
        ),
    )
    element_type = exp.Column(this=identifier("type"), table=identifier("element"))
    element_value = exp.Column(this=identifier("value"), table=identifier("element"))
    bad_element = exp.Select(
        expressions=[exp.Literal.number(1)],
        from_=exp.From(
            this=exp.Table(
                this=call("json_each", vector.copy()),
                alias=exp.TableAlias(this=identifier("element")),
            )
        ),
        where=exp.Where(
            this=exp.Not(
                this=exp.Paren(
                    this=exp.and_(
                        exp.In(this=element_type, expressions=[text("integer"), text("real")]),
                        exp.LTE(
                            this=call("abs", element_value),
                            expression=exp.Literal.number(repr(FLOAT32_MAX)),
                        ),
                    )
                )
            )
        ),
    )
    json = exp.and_(
        exp.EQ(this=call("typeof", vector.copy()), expression=text("text")),
        call("json_valid", vector.copy()),
        exp.EQ(this=call("json_type", vector.copy()), expression=text("array")),
        exp.EQ(this=call("json_array_length", vector.copy()), expression=dimension.copy()),
        exp.Not(this=exp.Exists(this=bad_element)),
    )
    return exp.or_(exp.Paren(this=blob), exp.Paren(this=json))


def _vector_distance(node: VectorDistance) -> exp.Expr:
    """``CASE WHEN <valid> THEN <distance> END``: ``COALESCE(vec_distance_cosine(v, q), 1.0)``
    or ``POWER(vec_distance_l2(v, q), 2)``; a row without a valid vector gets NULL."""
    metric = node.metric
    vector, query = node.this, node.expression
    distance: exp.Expr = exp.Anonymous(
        this=_DISTANCE_FUNCTIONS[metric], expressions=[vector.copy(), query.copy()]
    )
    if metric is DistanceMetric.COSINE:
        distance = exp.Coalesce(this=distance, expressions=[exp.Literal.number("1.0")])
    else:
        distance = exp.Anonymous(this="POWER", expressions=[distance, exp.Literal.number(2)])
    dimension = exp.Anonymous(this="vec_length", expressions=[query.copy()])
    return exp.Case(ifs=[exp.If(this=_vector_valid(vector, dimension), true=distance)])


@attrs.frozen
class _SqliteVecDistance:
    """Lowers :class:`VectorDistance` for sqlite-vec (cosine and squared L2 only)."""

    functions: Mapping[DistanceMetric, str]

    def __call__(self, node: VectorDistance) -> exp.Expr:
        return _vector_distance(node)

    def missing(self, node: VectorDistance) -> str | None:
        """``dot``: sqlite-vec has no inner-product distance."""
        if node.metric in self.functions:
            return None
        return f"the {node.metric.value} distance (sqlite-vec has cosine and l2 only)"


def sample_deviation(window: exp.Window) -> exp.Expr:
    """``STDDEV_SAMP(x) OVER ()`` in functions SQLite has: the sample standard deviation of
    ``x`` over the rows of the enclosing ``SELECT`` (its ``FROM``, joins and ``WHERE``), by
    the corrected two-pass algorithm (Chan, Golub and LeVeque, "Algorithms for Computing the
    Sample Variance", The American Statistician 37(3), 1983) with ``d = x - m``::

        CASE
          WHEN MIN(x) OVER () < MAX(x) OVER ()
          THEN SQRT(MAX(SUM(d * d) OVER () - SUM(d) OVER () * SUM(d) OVER () / COUNT(x) OVER (),
                        0.0) / (COUNT(x) OVER () - 1))
          WHEN COUNT(x) OVER () > 1 THEN 0.0
        END

    where ``m = (SELECT AVG(x) FROM <the same rows>)`` is an uncorrelated scalar subquery,
    which SQLite evaluates once. SQLite has no ``STDDEV_SAMP`` (``sqlean.py``'s optional
    ``stats`` extension adds one, but the statement is for any SQLite); ``SQRT`` is one of its
    math functions (SQLite 3.35.0 and later, when built with them, as ``sqlean.py`` is).

    The squares are of deviations from the mean, so nothing cancels: ``SUM(x * x) - COUNT(x) *
    AVG(x) * AVG(x)`` keeps no digit once the mean is 1e8 times the spread. ``SUM(d)`` would
    be 0 but for the rounding of ``m``, and subtracting its square over ``n`` takes that
    rounding back out (the plain two-pass sum is off by ``n`` times its square: 2e-9 of the
    deviation of two values 1.86 apart near -1e12). The ``MAX`` keeps rounding from making the
    variance negative. Equal values (their ``MIN`` is their ``MAX``) have deviation exactly 0
    even where ``AVG`` rounds away from the value they share (three 0.1s average to
    0.10000000000000002 in SQLite); fewer than two non-NULL values have none (NULL), as
    ``STDDEV_SAMP``; NULLs are skipped, as every aggregate skips them.

    Raises:
        UnsupportedOnDialectError: ``window`` is not ``STDDEV_SAMP(x) OVER ()`` — a partition,
            an order, a frame or a named window — or is not in an ungrouped ``SELECT ...
            FROM``: SQLite could not evaluate it.
    """
    aggregate = window.this
    select = window.parent_select
    if (
        not isinstance(aggregate, exp.StddevSamp)
        or any(window.args.get(part) for part in ("partition_by", "order", "spec", "alias"))
        or not isinstance(select, exp.Select)
        or select.args.get("from_") is None
        or any(select.args.get(part) for part in ("group", "having"))
    ):
        raise UnsupportedOnDialectError(
            "a sample standard deviation (STDDEV_SAMP) other than over all the rows of an "
            "ungrouped SELECT",
            "sqlite",
        )
    argument: exp.Expr = aggregate.this
    where = select.args.get("where")
    mean = exp.Subquery(
        this=exp.Select(
            expressions=[exp.Avg(this=argument.copy())],
            from_=select.args["from_"].copy(),
            joins=[join.copy() for join in select.args.get("joins") or ()],
            where=None if where is None else where.copy(),
        )
    )

    def value() -> exp.Expr:
        return argument.copy()

    def deviation() -> exp.Expr:
        return exp.Paren(this=exp.Sub(this=value(), expression=mean.copy()))

    def count() -> exp.Expr:
        return exp.Window(this=exp.Count(this=value()))

    def deviations() -> exp.Expr:
        return exp.Window(this=exp.Sum(this=deviation()))

    def ratio(numerator: exp.Expr, denominator: exp.Expr) -> exp.Expr:
        return exp.Div(this=numerator, expression=exp.Paren(this=denominator), typed=True)

    squares = exp.Window(this=exp.Sum(this=exp.Mul(this=deviation(), expression=deviation())))
    centred = exp.Sub(
        this=squares, expression=ratio(exp.Mul(this=deviations(), expression=deviations()), count())
    )
    variance = ratio(
        exp.Greatest(this=centred, expressions=[exp.Literal.number("0.0")]),
        exp.Sub(this=count(), expression=exp.Literal.number(1)),
    )
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.LT(
                    this=exp.Window(this=exp.Min(this=value())),
                    expression=exp.Window(this=exp.Max(this=value())),
                ),
                true=exp.Sqrt(this=variance),
            ),
            exp.If(
                this=exp.GT(this=count(), expression=exp.Literal.number(1)),
                true=exp.Literal.number("0.0"),
            ),
        ]
    )


class SqliteDialect(SQLite):
    """sqlglot's SQLite, with function names kept as written and every identifier quoted."""

    NORMALIZE_FUNCTIONS = False

    class Generator(SQLite.Generator):  # type: ignore[valid-type,misc]  # sqlglot nests classes
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **SQLite.Generator.TRANSFORMS,
            **COMPILER_TRANSFORMS,
            # Dates and timestamps are ISO text in SQLite: the literal is that text, as the
            # engine stores it (``date()`` and ``datetime()`` would drop fractional seconds).
            TemporalLiteral: lambda generator, node: generator.sql(
                exp.Literal.string(str(node.this))
            ),
        }
        SEARCH_NODES: ClassVar[Mapping[type[SearchNode], Lowering]] = {
            TextSearch: _text_search,
            VectorDistance: _SqliteVecDistance(_DISTANCE_FUNCTIONS),
        }
        """BM25 computed in SQL for text, sqlite-vec for distances; no engine-embedded semantic
        search."""

        TYPE_MAPPING: ClassVar[dict[Any, str]] = {
            **SQLite.Generator.TYPE_MAPPING,
            exp.DataType.Type.BOOLEAN: "BOOLEAN",
        }
        """A boolean column is declared ``BOOLEAN`` (stored as 0 and 1 with NUMERIC affinity,
        https://www.sqlite.org/datatype3.html section 3.1), not sqlglot's ``INTEGER``, so the
        table says which columns hold booleans (the filter checks read it)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["identify"] = True
            super().__init__(*args, **kwargs)

        def window_sql(self, expression: exp.Window) -> str:
            """A window as sqlglot's SQLite writes it, but ``STDDEV_SAMP(x) OVER ()`` (which
            SQLite lacks) as :func:`sample_deviation` computes it from window sums.

            Raises:
                UnsupportedOnDialectError: a ``STDDEV_SAMP`` window :func:`sample_deviation`
                    cannot write.
            """
            if isinstance(expression.this, exp.StddevSamp):
                return str(self.sql(sample_deviation(expression)))
            return str(super().window_sql(expression))


class SqliteCompiler(StoreCompiler):
    """Plans for SQLite: tables named ``<schema>.<table>`` (``public`` is ``main``), a
    nearest branch an exact scan ordered by distance then key (:class:`StoreCompiler`)."""

    default_schema = "main"

    def visit_starts_with(self, node: StartsWith) -> exp.Expr:
        """``substr(column, 1, length('prefix')) = 'prefix'``: SQLite has no
        ``starts_with``, and its ``LIKE`` ignores the case of ASCII letters (SQLite
        documentation, "The LIKE, GLOB, REGEXP, MATCH, and extract operators")."""
        prefix = self.binder.literal(node, "prefix")
        head = exp.Anonymous(
            this="substr",
            expressions=[
                column(node.column),
                exp.Literal.number(1),
                exp.Anonymous(this="length", expressions=[prefix.copy()]),
            ],
        )
        return exp.EQ(this=head, expression=prefix)

    def visit_ends_with(self, node: EndsWith) -> exp.Expr:
        """``substr(column, length(column) - length('suffix') + 1) = 'suffix'``: SQLite has
        no ``ends_with``, and its ``LIKE`` ignores the case of ASCII letters. The start is
        counted so that the empty suffix is the empty tail of every text (``substr(x, 0)``
        is all of ``x``), and a suffix longer than the text gives a shorter tail, never it."""
        suffix = self.binder.literal(node, "suffix")
        text = column(node.column)
        start = exp.Add(
            this=exp.Sub(
                this=exp.Anonymous(this="length", expressions=[text.copy()]),
                expression=exp.Anonymous(this="length", expressions=[suffix.copy()]),
            ),
            expression=exp.Literal.number(1),
        )
        tail = exp.Anonymous(this="substr", expressions=[text, start])
        return exp.EQ(this=tail, expression=suffix)

    def visit_contains_all(self, node: ContainsAll) -> exp.Expr:
        raise UnsupportedOnDialectError("a list column test (contains_all)", "sqlite")

    def visit_contains_any(self, node: ContainsAny) -> exp.Expr:
        raise UnsupportedOnDialectError("a list column test (contains_any)", "sqlite")


def vector_scan_select(plan: SearchPlan, branch: NearestNeighborSearch) -> exp.Select:
    """``SELECT COUNT(*) AS scanned, <rows with no vector> AS without_vector, <rows whose
    vector has no distance> AS skipped FROM <table> [WHERE <filter>]``: what a nearest
    branch of ``plan`` scanned and left out, for the engine to report.

    ``skipped`` counts malformed JSON, non-numbers, values beyond float32, another dimension
    than the query's, and BLOBs of the wrong length. The query's values are not in the
    statement, only its dimension, so every query of one dimension under one filter has the
    same statement (the engine keeps its counts while the database is unchanged).

    Raises:
        UnsupportedOnDialectError: as compiling the plan does.
    """
    compiler = SqliteCompiler(SQLITE, LiteralBinder(SQLITE))
    vector = column(branch.column, searched_table(branch).name)
    dimension = exp.Literal.number(len(branch.query_vector))
    present = exp.Not(this=exp.Is(this=vector.copy(), expression=exp.Null()))

    def count_when(condition: exp.Expr) -> exp.Expr:
        return exp.Sum(
            this=exp.Case(
                ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                default=exp.Literal.number(0),
            )
        )

    valid = _vector_valid(vector, dimension)
    tree = exp.Select(
        expressions=[
            exp.Alias(this=exp.Count(this=exp.Star()), alias=identifier("scanned")),
            exp.Alias(
                this=count_when(exp.Is(this=vector.copy(), expression=exp.Null())),
                alias=identifier("without_vector"),
            ),
            exp.Alias(
                this=count_when(exp.and_(present, exp.Not(this=exp.Paren(this=valid)))),
                alias=identifier("skipped"),
            ),
        ],
        from_=exp.From(this=_sqlite_table(table_reference(searched_table(branch)))),
        where=compiler.where(plan, through_key=branch.filter_through_key),
    )
    for table in list(tree.find_all(exp.Table)):  # the tables a through-key filter reads
        if table.args.get("catalog") is not None:
            table.replace(_sqlite_table(table))
    return tree


SQLITE = register_dialect(
    DialectProfile(
        name="sqlite",
        sqlglot_dialect=SqliteDialect,
        compiler=SqliteCompiler,
        vector_literal_open="vec_f32('[",
        vector_literal_close="]')",
        supports_full_outer_join=True,
        full_text_query=query_terms,
    )
)
"""SQLite 3.39 and later with FTS5 and sqlite-vec."""

SQLITE_BEFORE_FULL_JOIN = register_dialect(
    attrs.evolve(SQLITE, name="sqlite-before-3.39", supports_full_outer_join=False)
)
"""SQLite before 3.39.0: fusion without ``FULL OUTER JOIN``."""


def sqlite_profile(version: tuple[int, ...]) -> DialectProfile:
    """The profile for a SQLite library of ``version`` (``sqlite3.sqlite_version_info``).

    >>> sqlite_profile((3, 38, 5)).name
    'sqlite-before-3.39'
    >>> sqlite_profile((3, 50, 4)).name
    'sqlite'
    """
    return SQLITE if tuple(version) >= FULL_OUTER_JOIN_VERSION else SQLITE_BEFORE_FULL_JOIN


# -- the engine's other statements -------------------------------------------------------------

FTS5_TOKENIZER = "ascii"
"""The FTS5 tokenizer of the engine's indexes: ``ascii`` splits on ASCII characters that
are not letters or digits and keeps every other character in a token (FTS5 documentation,
§4.3.2), so it splits a row's :func:`~hotdata_retrieval.analysis.indexed_text` back into
exactly the library's terms and changes none of them (no stemming, no folding)."""


def _quoted_table(schema: str, name: str) -> exp.Table:
    return exp.Table(
        this=exp.Identifier(this=name, quoted=True), db=exp.Identifier(this=schema, quoted=True)
    )


def _render(tree: exp.Expr) -> str:
    text: str = SqliteDialect().generate(tree, copy=False)
    return text


def create_fts_index(table: TableName, column_name: str) -> str:
    """``CREATE VIRTUAL TABLE <schema>.<fts> USING fts5("<column>", content = '', tokenize =
    'ascii')``: a contentless FTS5 table (FTS5 documentation, §4.4.2) whose rows are the base
    table's rowids and their analysed terms, written by :func:`insert_fts_rows`."""
    options = [
        exp.Identifier(this=column_name, quoted=True),
        exp.EQ(this=exp.var("content"), expression=exp.Literal.string("")),
        exp.EQ(this=exp.var("tokenize"), expression=exp.Literal.string(FTS5_TOKENIZER)),
    ]
    tree = exp.Create(
        kind="TABLE",
        this=_quoted_table(sqlite_schema(table), fts_table_name(table.name, column_name)),
        properties=exp.Properties(
            expressions=[
                exp.VirtualProperty(),
                exp.ModuleProperty(this=exp.var("fts5"), expressions=options),
            ]
        ),
    )
    return _render(tree)


def create_terms_tables(table: TableName, column_name: str) -> list[str]:
    """``CREATE TABLE <schema>.<terms> ("term" TEXT, "doc" INTEGER, "frequency" INTEGER,
    "length" INTEGER, PRIMARY KEY ("term", "doc")) WITHOUT ROWID``, ``CREATE TABLE
    <schema>.<corpus> ("documents" INTEGER, "total_length" INTEGER)`` and its one row ``(0,
    0)``: the column's BM25 statistics (:func:`terms_table_name`,
    :func:`corpus_table_name`), empty.

    >>> create_terms_tables(TableName.parse("docs"), "body")[2]
    'INSERT INTO "main"."docs__body__fts_corpus" ("documents", "total_length") VALUES (0, 0)'
    """
    schema = sqlite_schema(table)

    def declared(name: str, kind: str) -> exp.ColumnDef:
        return exp.ColumnDef(
            this=exp.Identifier(this=name, quoted=True), kind=exp.DataType.build(kind)
        )

    terms = exp.Create(
        kind="TABLE",
        this=exp.Schema(
            this=_quoted_table(schema, terms_table_name(table.name, column_name)),
            expressions=[
                declared("term", "TEXT"),
                declared("doc", "INTEGER"),
                declared("frequency", "INTEGER"),
                declared("length", "INTEGER"),
                exp.PrimaryKey(
                    expressions=[
                        exp.Identifier(this="term", quoted=True),
                        exp.Identifier(this="doc", quoted=True),
                    ]
                ),
            ],
        ),
        properties=exp.Properties(expressions=[exp.WithoutRowidProperty()]),
    )
    corpus = _quoted_table(schema, corpus_table_name(table.name, column_name))
    created = exp.Create(
        kind="TABLE",
        this=exp.Schema(
            this=corpus.copy(),
            expressions=[declared("documents", "INTEGER"), declared("total_length", "INTEGER")],
        ),
    )
    first = exp.Insert(
        this=exp.Schema(
            this=corpus,
            expressions=[
                exp.Identifier(this="documents", quoted=True),
                exp.Identifier(this="total_length", quoted=True),
            ],
        ),
        expression=exp.Values(
            expressions=[exp.Tuple(expressions=[exp.Literal.number(0), exp.Literal.number(0)])]
        ),
    )
    return [_render(terms), _render(created), _render(first)]


def terms_tables(table: TableName, column_name: str) -> list[exp.Table]:
    """The column's postings and corpus tables (:func:`terms_table_name`,
    :func:`corpus_table_name`), as sqlglot tables."""
    schema = sqlite_schema(table)
    return [
        _quoted_table(schema, terms_table_name(table.name, column_name)),
        _quoted_table(schema, corpus_table_name(table.name, column_name)),
    ]


def insert_postings(table: TableName, column_name: str) -> str:
    """``INSERT INTO <schema>.<terms> ("term", "doc", "frequency", "length") VALUES (?, ?, ?,
    ?)``: one term of one row."""
    tree = exp.Insert(
        this=exp.Schema(
            this=terms_tables(table, column_name)[0],
            expressions=[
                exp.Identifier(this=name, quoted=True)
                for name in ("term", "doc", "frequency", "length")
            ],
        ),
        expression=exp.Values(
            expressions=[exp.Tuple(expressions=[exp.Placeholder() for _ in range(4)])]
        ),
    )
    return _render(tree)


def delete_postings(table: TableName, column_name: str) -> str:
    """``DELETE FROM <schema>.<terms> WHERE "term" = ? AND "doc" = ?``: one term of one row."""
    tree = exp.Delete(
        this=terms_tables(table, column_name)[0],
        where=exp.Where(
            this=exp.and_(
                exp.EQ(
                    this=exp.column(exp.Identifier(this="term", quoted=True)),
                    expression=exp.Placeholder(),
                ),
                exp.EQ(
                    this=exp.column(exp.Identifier(this="doc", quoted=True)),
                    expression=exp.Placeholder(),
                ),
            )
        ),
    )
    return _render(tree)


def change_corpus(table: TableName, column_name: str) -> str:
    """``UPDATE <schema>.<corpus> SET "documents" = "documents" + ?, "total_length" =
    "total_length" + ?``: rows with text and their terms added (or, negative, removed);
    integers, so the totals equal a fresh load's."""
    sets = [
        exp.EQ(
            this=exp.column(exp.Identifier(this=name, quoted=True)),
            expression=exp.Add(
                this=exp.column(exp.Identifier(this=name, quoted=True)),
                expression=exp.Placeholder(),
            ),
        )
        for name in ("documents", "total_length")
    ]
    return _render(exp.Update(this=terms_tables(table, column_name)[1], expressions=sets))


def text_rows_select(table: TableName, column_name: str) -> str:
    """``SELECT rowid, "<column>" FROM <schema>.<table> WHERE "<column>" IS NOT NULL``: the
    rows a full-text index of the column holds."""
    text = exp.Column(this=exp.Identifier(this=column_name, quoted=True))
    tree = exp.Select(
        expressions=[exp.Column(this=exp.Identifier(this="rowid")), text],
        from_=exp.From(this=_quoted_table(sqlite_schema(table), table.name)),
        where=exp.Where(this=exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null()))),
    )
    return _render(tree)


def insert_fts_rows(table: TableName, column_name: str) -> str:
    """``INSERT INTO <schema>.<fts>(rowid, "<column>") VALUES (?, ?)``: one row of a
    contentless FTS5 table, its rowid the base row's and its text the row's analysed terms."""
    tree = exp.Insert(
        this=exp.Schema(
            this=_quoted_table(sqlite_schema(table), fts_table_name(table.name, column_name)),
            expressions=[
                exp.Identifier(this="rowid"),
                exp.Identifier(this=column_name, quoted=True),
            ],
        ),
        expression=exp.Values(
            expressions=[exp.Tuple(expressions=[exp.Placeholder(), exp.Placeholder()])]
        ),
    )
    return _render(tree)


def delete_fts_rows(table: TableName, column_name: str) -> str:
    """``INSERT INTO <schema>.<fts>("<fts>", rowid, "<column>") VALUES ('delete', ?, ?)``: the
    ``delete`` command of a contentless FTS5 table, which takes the row's rowid and the very
    terms it was indexed with (FTS5 documentation, §4.4.2 and "The 'delete' Command")."""
    fts = fts_table_name(table.name, column_name)
    tree = exp.Insert(
        this=exp.Schema(
            this=_quoted_table(sqlite_schema(table), fts),
            expressions=[
                exp.Identifier(this=fts, quoted=True),
                exp.Identifier(this="rowid"),
                exp.Identifier(this=column_name, quoted=True),
            ],
        ),
        expression=exp.Values(
            expressions=[
                exp.Tuple(
                    expressions=[
                        exp.Literal.string("delete"),
                        exp.Placeholder(),
                        exp.Placeholder(),
                    ]
                )
            ]
        ),
    )
    return _render(tree)


def table_columns_select(table: TableName) -> str:
    """``SELECT "name", "type" FROM pragma_table_info('<table>', '<schema>') ORDER BY "cid"``:
    each column's name and declared type."""
    tree = exp.Select(
        expressions=[
            exp.column(exp.Identifier(this="name", quoted=True)),
            exp.column(exp.Identifier(this="type", quoted=True)),
        ],
        from_=exp.From(
            this=exp.Table(
                this=exp.Anonymous(
                    this="pragma_table_info",
                    expressions=[
                        exp.Literal.string(table.name),
                        exp.Literal.string(sqlite_schema(table)),
                    ],
                )
            )
        ),
        order=exp.Order(
            expressions=[exp.Ordered(this=exp.column(exp.Identifier(this="cid", quoted=True)))]
        ),
    )
    return _render(tree)


def schema_tables_select(schema: str) -> str:
    """``SELECT "name" FROM "<schema>"."sqlite_master" WHERE "type" = 'table'``."""
    tree = exp.Select(
        expressions=[exp.column(exp.Identifier(this="name", quoted=True))],
        from_=exp.From(this=_quoted_table(schema, "sqlite_master")),
        where=exp.Where(
            this=exp.EQ(
                this=exp.column(exp.Identifier(this="type", quoted=True)),
                expression=exp.Literal.string("table"),
            )
        ),
    )
    return _render(tree)


def vector_scan_sql(plan: SearchPlan, branch: NearestNeighborSearch) -> str:
    """:func:`vector_scan_select` as SQL text."""
    return _render(vector_scan_select(plan, branch))
