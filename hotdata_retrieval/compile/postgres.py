"""The PostgreSQL + pgvector dialect.

The target is PostgreSQL (16) with the pgvector extension (0.6 and later): its ``vector``
type and distance operators, and PostgreSQL's own full-text search.

How each search is written, and why:

- **Text**: BM25 computed in SQL from postings, as an inverted index holds them. The engine
  writes, beside each text column, a ``<column>__terms`` column (:func:`terms_column`): the
  row's terms by the library's analysis (:func:`hotdata_retrieval.analysis.indexed_text`:
  NFKC, case folding, tantivy's tokenizer, stop words and stemmer), so PostgreSQL's own text
  analysis plays no part: its ``english`` configuration's parser would index ``v1.1.6``
  whole as a version while splitting the query, and would neither NFKC-normalize nor fold
  full-width text. From those terms it writes the column's postings table
  (:func:`text_postings_table`: one row per term of each row with the times the row holds it
  and the row's number of terms, keyed by ``(term, row)``; the row named by its number,
  :data:`ROW_COLUMN`) and its statistics table (:func:`text_statistics_table`: each term's
  rows, the rows and their mean number of terms). No ``tsvector`` is involved: one holds at
  most 1 MB of distinct lexemes and their positions (PostgreSQL documentation, §8.11.1 and
  Appendix K, "string is too long for tsvector"), which a long document of many distinct
  terms exceeds, while postings take any number of terms a row. The query is ``'t1 | t2 |
  ...'``: the user text's terms by the same analysis joined by `` | ``, so no character of
  the user's text is syntax and any term matches (an AND of the terms would empty the result
  for a word in no document, ``shared/reference/bug-cases.md`` B12). The statement reads
  each query term's postings by the key and scores each row holding one with tantivy's BM25
  — ``Σ idf · (k1 + 1) · tf / (tf + k1 · (1 - b + b · dl / avgdl))``, ``idf = ln(1 + (N -
  df + 0.5) / (df + 0.5))``, k1 1.2, b 0.75 — a query term given twice counted twice, as
  the local engine's disjunction of term queries does: ``tf`` and ``dl`` from the postings,
  ``df``, ``N`` and ``avgdl`` from the statistics table. A row's contributions are summed
  in the query terms' order (``SUM(... ORDER BY position)``, the terms numbered ``WITH
  ORDINALITY``): an aggregate's input order is otherwise unspecified (PostgreSQL
  documentation, "Aggregate Expressions"), so rows of the same statistics get
  bit-identical scores and their tie falls to the key. PostgreSQL's own ``ts_rank_cd`` is
  cover density, not BM25 (no inverse document frequency, no length saturation: 0.44 overlap
  of fused pages with the local engine's, measured).
- **Nearest neighbour**: pgvector's operators written ``OPERATOR(public.<=>)``, the one form a
  SQL parser cannot take for something else: sqlglot reads a bare ``a <=> b`` as MySQL's
  null-safe equality and writes it back as ``a IS NOT DISTINCT FROM b``, and cannot parse
  ``<#>`` at all (``shared/reference/local-engines.md`` §D). The branch is ordered by the
  operator expression itself, with no tie-break, so an HNSW index of the same operator
  class serves it (``ORDER BY <operator expression> LIMIT n``: the only shape pgvector's index
  scans take; a tie-break in that ORDER BY turns it into a full sort, local-engines §D). The
  metrics, named so they cannot be confused (and the cut, :meth:`PostgresCompiler.
  visit_nearest_neighbor_search`: ``FETCH FIRST k ROWS WITH TIES`` inside, which keeps the
  index, then ties broken by key outside):

  - ``cosine`` orders by ``<=>`` (cosine distance, ``vector_cosine_ops``) and reports it;
    pgvector gives NaN against a zero vector, reported as no distance (the row is no
    candidate), where the Hotdata engine gives 1.0;
  - ``l2`` is the **squared** Euclidean distance, as the Hotdata engine's ``l2_distance``:
    it orders by ``<->``, pgvector's *Euclidean* distance (:data:`EUCLIDEAN_OPERATOR`,
    ``vector_l2_ops``: the same order) and reports ``vector_l2_squared_distance``, so the
    numbers agree with every other engine;
  - ``dot`` orders by and reports ``<#>``, pgvector's *negative* inner product, as the
    Hotdata engine's ``negative_dot_product``.

  Filtered searches over an HNSW index: the engine turns on iterative index scans where
  pgvector has them (0.8.0 and later), and otherwise runs the filtered statement without
  index scans, so a selective filter never leaves a short page (B18).
- **Names**: ``<schema>.<table>``, the plan's ``public`` being PostgreSQL's ``public``; no
  catalog (a connection reaches one database). Every identifier is quoted; names are
  lower-case, as PostgreSQL folds them.
- Engine-embedded semantic search does not exist here and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from hotdata_retrieval.analysis import BM25_B, BM25_K1, analyze_text, terms_column
from hotdata_retrieval.compile.compiler import (
    BASE,
    BranchRequest,
    CompiledBranch,
    FusedBranch,
    FusedScore,
    column,
    identifier,
    ordered,
    searched_table,
    table_reference,
)
from hotdata_retrieval.compile.dialect import DialectProfile, register_dialect
from hotdata_retrieval.compile.nodes import (
    COMPILER_TRANSFORMS,
    Lowering,
    SearchNode,
    TextSearch,
    VectorDistance,
)
from hotdata_retrieval.compile.stores import StoreCompiler, store_table
from hotdata_retrieval.plan.filters import ContainsAll, ContainsAny, EndsWith
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    DistanceMetric,
    NearestNeighborSearch,
    ReciprocalRankFusion,
)

COSINE_OPERATOR = "public.<=>"
"""pgvector's cosine distance, ``1 - cos``."""

EUCLIDEAN_OPERATOR = "public.<->"
"""pgvector's **Euclidean** (true L2) distance, ``sqrt(Σ (aᵢ - bᵢ)²)``: the square root of
the plan's ``l2`` metric, which is the squared Euclidean distance."""

NEGATIVE_INNER_PRODUCT_OPERATOR = "public.<#>"
"""pgvector's negative inner product, ``-(a·b)``."""

_ORDER_OPERATORS: Mapping[DistanceMetric, str] = {
    DistanceMetric.COSINE: COSINE_OPERATOR,
    DistanceMetric.L2: EUCLIDEAN_OPERATOR,
    DistanceMetric.DOT: NEGATIVE_INNER_PRODUCT_OPERATOR,
}
"""The operator a nearest branch of each metric is ordered by (and an HNSW index serves)."""

OPERATOR_CLASSES: Mapping[DistanceMetric, str] = {
    DistanceMetric.COSINE: "vector_cosine_ops",
    DistanceMetric.L2: "vector_l2_ops",
    DistanceMetric.DOT: "vector_ip_ops",
}
"""The HNSW operator class serving each metric's operator (pgvector README, "HNSW")."""

SQUARED_EUCLIDEAN_FUNCTION = "vector_l2_squared_distance"
"""pgvector's squared Euclidean distance (defined by the extension since 0.1, for its index
support): what the plan's ``l2`` reports."""

ORDER_COLUMN = "_order"
"""The inner nearest query's ordering value (the operator's distance), for the outer cut."""


def hnsw_index_name(table: str, column: str) -> str:
    """The HNSW index of a vector column.

    >>> hnsw_index_name("docs", "embedding")
    'docs__embedding__hnsw'
    """
    return f"{table}__{column}__hnsw"


def tsquery_text(query_text: str) -> str:
    """User text as the text search's query, with no syntax in it: its terms by the library's
    analysis (:func:`hotdata_retrieval.analysis.analyze_text`; only alphanumeric characters)
    joined by `` | ``, which the statement splits back into an array of terms. Text with no
    term is the empty query, which matches nothing.

    >>> tsquery_text("ERR-DIM-384 it's (NEAR) & !x")
    'err | dim | 384 | s | near | x'
    """
    return " | ".join(analyze_text(query_text))


def _quoted(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


TEXT_INDEX_SCHEMA = "hdq_text"
"""The schema holding each text column's term statistics (:func:`text_statistics_table`)."""


def text_statistics_table(schema: str, table: str, column: str) -> str:
    """The table (in :data:`TEXT_INDEX_SCHEMA`) of a text column's BM25 statistics: one row
    per term (``term``, ``documents``: the rows holding it) and one row with the term ``''``
    (never a term) holding the rows with text (``documents``) and their mean number of terms
    (``average_length``). The schema's and the table's names are each preceded by their
    length, so no two columns share one.

    >>> text_statistics_table("public", "docs", "body")
    't6_public_4_docs_body'
    """
    return f"t{len(schema)}_{schema}_{len(table)}_{table}_{column}"


def text_postings_table(schema: str, table: str, column: str) -> str:
    """The table (in :data:`TEXT_INDEX_SCHEMA`) of a text column's postings: one row per
    term of each row (``term``; ``row``: the row's :data:`ROW_COLUMN`; ``frequency``: the
    times the row holds the term; ``length``: the row's number of terms), keyed by
    ``(term, row)`` and indexed by ``row``. Named as :func:`text_statistics_table`, with
    ``p`` for ``t``.

    >>> text_postings_table("public", "docs", "body")
    'p6_public_4_docs_body'
    """
    return f"p{len(schema)}_{schema}_{len(table)}_{table}_{column}"


def text_postings_row_index(schema: str, table: str, column: str) -> str:
    """The index of a text column's postings (:func:`text_postings_table`) on ``row``, by
    which a change of rows deletes their postings. Named as the postings table, with ``r``
    for ``p``, so it is no longer than the side tables' names and fits wherever they do.

    >>> text_postings_row_index("public", "docs", "body")
    'r6_public_4_docs_body'
    """
    return "r" + text_postings_table(schema, table, column)[1:]


ROW_COLUMN = "hdq__row"
"""The column the engine adds to a table with a text index: each row's number (an identity
column, ``GENERATED ALWAYS``), which its postings (:func:`text_postings_table`) name the row
by; not listed among the table's columns. A row's number never changes (a ``ctid`` moves
with ``VACUUM FULL`` or an update)."""


def row_index_name(table: str) -> str:
    """The unique index on a table's :data:`ROW_COLUMN`, by which a text search joins its
    matches back to their rows.

    >>> row_index_name("docs")
    'docs__hdq__row'
    """
    return f"{table}__{ROW_COLUMN}"


_TEXT_SEARCH = sqlglot.parse_one(
    """
    SELECT base.*, matched.score AS score
    FROM :table AS base
    JOIN (
      SELECT postings.row AS row, CAST(SUM(
        weights.idf * (:k1 + 1) * postings.frequency
        / (postings.frequency + :k1 * (1 - :b + :b * postings.length / weights.average_length))
        ORDER BY weights.position
      ) AS DOUBLE PRECISION) AS score
      FROM (
        SELECT query_terms.term, query_terms.position,
          LN(1 + (corpus.documents - term.documents + 0.5) / (term.documents + 0.5)) AS idf,
          corpus.average_length
        FROM UNNEST(STRING_TO_ARRAY(:query, ' | ')) WITH ORDINALITY AS query_terms(term, position)
        JOIN :statistics AS term ON term.term = query_terms.term
        CROSS JOIN :statistics AS corpus
        WHERE corpus.term = ''
        OFFSET 0
      ) AS weights
      JOIN :postings AS postings ON postings.term = weights.term
      GROUP BY postings.row
    ) AS matched ON matched.row = :row
    """,
    read="postgres",
)
"""The text search subquery; its slots are filled with sqlglot nodes. ``OFFSET 0`` keeps the
query's weights a subquery of their own, computed once (PostgreSQL does not pull up a
subquery with ``OFFSET``: "Query Planning", planner README), not once per posting."""


def _text_search(node: TextSearch) -> exp.Expr:
    """``(SELECT base.*, matched.score AS score FROM <s>.<t> AS base JOIN (<each matching
    row's BM25>) AS matched ON matched.row = base.hdq__row)``: the query's terms' postings
    (:func:`text_postings_table`, read by its ``(term, row)`` key) give each matching row's
    ``tf`` and length, and the column's statistics table the ``df``, ``N`` and mean length;
    each row is scored with tantivy's BM25 (module docstring), its contributions summed in
    the query terms' order."""
    column_name = node.args["column"].name
    table = store_table(node.this, "public")

    def beside(name: str) -> exp.Table:
        return exp.Table(this=_quoted(name), db=_quoted(TEXT_INDEX_SCHEMA))

    filled = exp.replace_placeholders(
        _TEXT_SEARCH.copy(),
        row=exp.Column(this=_quoted(ROW_COLUMN), table=_quoted("base")),
        query=node.args["query"],
        table=table,
        statistics=beside(text_statistics_table(table.db, table.name, column_name)),
        postings=beside(text_postings_table(table.db, table.name, column_name)),
        k1=exp.Literal.number(BM25_K1),
        b=exp.Literal.number(BM25_B),
    )
    for found in filled.find_all(exp.Table):
        if found.alias in ("base", "term", "corpus", "postings"):
            found.set("alias", exp.TableAlias(this=_quoted(found.alias)))
    return exp.Subquery(this=filled, alias=exp.TableAlias(this=_quoted("matches")))


def _order_distance(node: VectorDistance) -> exp.Expr:
    """``<column> OPERATOR(public.<op>) <vector>``: the expression a nearest branch orders by."""
    return exp.Operator(
        this=node.this.copy(),
        operator=_ORDER_OPERATORS[node.metric],
        expression=node.expression.copy(),
    )


def reported_distance(metric: DistanceMetric, order: exp.Expr, node: VectorDistance) -> exp.Expr:
    """What a nearest branch reports as ``_distance`` for ``metric`` (module docstring): the
    cosine operator with NaN (a zero vector) as NULL, the squared Euclidean distance, or the
    negative inner product."""
    if metric is DistanceMetric.COSINE:
        nan = exp.Cast(this=exp.Literal.string("NaN"), to=exp.DataType.build("DOUBLE PRECISION"))
        return exp.Nullif(this=order, expression=nan)
    if metric is DistanceMetric.L2:
        return exp.Anonymous(
            this=SQUARED_EUCLIDEAN_FUNCTION,
            expressions=[node.this.copy(), node.expression.copy()],
        )
    return order


class PostgresDialect(Postgres):
    """sqlglot's PostgreSQL, with function names kept as written and every identifier
    quoted."""

    NORMALIZE_FUNCTIONS = False

    class Generator(Postgres.Generator):  # type: ignore[valid-type,misc]  # sqlglot nests classes
        TRANSFORMS: ClassVar[dict[Any, Any]] = {
            **Postgres.Generator.TRANSFORMS,
            **COMPILER_TRANSFORMS,
        }
        SEARCH_NODES: ClassVar[Mapping[type[SearchNode], Lowering]] = {
            TextSearch: _text_search,
            VectorDistance: _order_distance,
        }
        """Full-text search and pgvector's ordering operators (the compiler reports the
        distances from them, :func:`reported_distance`)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["identify"] = True
            super().__init__(*args, **kwargs)


class PostgresCompiler(StoreCompiler):
    """Plans for PostgreSQL + pgvector: ``<schema>.<table>`` names, nearest branches around
    the index fast-path shape (ordered by the operator alone), distances reported per
    metric."""

    default_schema = "public"

    def visit_ends_with(self, node: EndsWith) -> exp.Expr:
        """``right(column, length('suffix')) = 'suffix'``: PostgreSQL has ``starts_with``
        but no ``ends_with`` (PostgreSQL documentation, "String Functions and Operators");
        ``right`` and ``length`` count characters, and ``right(x, 0)`` is the empty text, so
        the empty suffix matches every text."""
        suffix = self.binder.literal(node, "suffix")
        tail = exp.Anonymous(
            this="right",
            expressions=[
                column(node.column),
                exp.Anonymous(this="length", expressions=[suffix.copy()]),
            ],
        )
        return exp.EQ(this=tail, expression=suffix)

    def visit_contains_all(self, node: ContainsAll) -> exp.Expr:
        """``CASE WHEN col IS NULL THEN NULL ELSE NOT EXISTS (SELECT 1 FROM unnest(ARRAY[...])
        AS v(x) WHERE NOT ((x = ANY(col)) IS TRUE)) END``: every value is an element (a NULL
        element of the list is no value's match). PostgreSQL's
        ``@>`` needs both arrays of one type, which a literal cannot promise; ``= ANY``
        compares as ``=`` does."""
        if not node.values:
            return exp.true()
        return self._elements(node, every=True)

    def visit_contains_any(self, node: ContainsAny) -> exp.Expr:
        """As :meth:`visit_contains_all`, with ``EXISTS (... WHERE x = ANY(col))``."""
        if not node.values:
            return exp.false()
        return self._elements(node, every=False)

    def _elements(self, node: ContainsAll | ContainsAny, *, every: bool) -> exp.Expr:
        element = exp.column("x")
        member = exp.EQ(this=element, expression=exp.Any(this=exp.Paren(this=column(node.column))))
        values = exp.Table(
            this=exp.Unnest(expressions=[self.list_literal(node)]),
            alias=exp.TableAlias(this=identifier("v"), columns=[identifier("x")]),
        )
        # A list holding NULL makes ``x = ANY(col)`` NULL where x is not an element: "not
        # found" is therefore ``IS NOT TRUE``, never ``NOT``, which would keep the NULL out.
        missing = exp.Not(
            this=exp.Paren(this=exp.Is(this=exp.Paren(this=member), expression=exp.true()))
        )
        found = exp.Exists(
            this=exp.select(exp.Literal.number(1)).from_(values).where(missing if every else member)
        )
        test = exp.Not(this=found) if every else found
        return exp.Case(
            ifs=[
                exp.If(
                    this=exp.Is(this=column(node.column), expression=exp.Null()), true=exp.Null()
                )
            ],
            default=test,
        )

    def visit_reciprocal_rank_fusion(
        self, fusion: ReciprocalRankFusion, branches: Sequence[FusedBranch]
    ) -> FusedScore:
        """As for every dialect, each weight cast to ``DOUBLE PRECISION``: PostgreSQL reads
        ``1.0`` as ``numeric``, and ``numeric / bigint`` is a ``numeric`` quotient, rounded
        unlike the float64 sums of the other engines and of the reference fusion."""
        scored = super().visit_reciprocal_rank_fusion(fusion, branches)
        for division in list(scored.score.find_all(exp.Div)):
            weight = division.this
            if isinstance(weight, exp.Literal):
                weight.replace(
                    exp.Cast(this=weight.copy(), to=exp.DataType.build("DOUBLE PRECISION"))
                )
        return scored

    def visit_nearest_neighbor_search(
        self, branch: NearestNeighborSearch, request: BranchRequest
    ) -> CompiledBranch:
        """``SELECT <projection>, _distance FROM (SELECT <projection>, <reported distance> AS
        _distance, <operator expression> AS _order FROM <s>.<t> [WHERE] ORDER BY <column>
        OPERATOR(public.<op>) <vector> FETCH FIRST <k> ROWS WITH TIES) AS nearest ORDER BY
        _order ASC[, <tie-breakers>], key ASC LIMIT n [OFFSET m]`` (a tie-break column the
        projection lacks is carried through the inner query).

        The inner query is the index fast path: ordered by the operator alone, so an HNSW
        index of its class serves it; ``WITH TIES`` keeps every row tied with the k-th, so the
        outer query can break ties by key and cut exactly: pages are slices of one ranking
        and a fusion's depth cut keeps tied rows by key, as on every other engine.
        """
        node = VectorDistance(
            this=column(branch.column, searched_table(branch).name),
            expression=self.binder.vector(branch, "query_vector"),
            metric=branch.metric.value,
        )
        order = self.search(node.copy())
        if branch.exact:
            return self.exact_nearest(branch, request, order, node)
        names = [item.alias_or_name for item in request.projection]
        tie_break = [] if request.tie_break is None else [request.tie_break]
        breakers = [(breaker.column, breaker.descending) for breaker in request.tie_breakers]
        ordering = [*breakers, *((name, False) for name in tie_break)]
        # The outer ORDER BY reads its tie-break columns from the inner query.
        carried = [column(name) for name, _ in ordering if name not in names]
        inner = exp.Select(
            expressions=[
                *request.projection,
                *carried,
                exp.Alias(
                    this=reported_distance(branch.metric, order.copy(), node),
                    alias=identifier(branch.raw_score_column),
                ),
                exp.Alias(this=order.copy(), alias=identifier(ORDER_COLUMN)),
            ],
            from_=exp.From(this=table_reference(searched_table(branch))),
            where=self.where(request.plan, through_key=request.filter_through_key),
            order=exp.Order(expressions=[ordered(order, descending=False)]),
            limit=exp.Fetch(
                direction="FIRST",
                count=exp.Literal.number(request.k),
                limit_options=exp.LimitOptions(rows=True, with_ties=True),
            ),
        )
        select = exp.Select(
            expressions=[*(column(name) for name in names), column(branch.raw_score_column)],
            from_=exp.From(
                this=exp.Subquery(this=inner, alias=exp.TableAlias(this=identifier("nearest")))
            ),
            order=exp.Order(
                expressions=[
                    ordered(column(ORDER_COLUMN), descending=False),
                    *(ordered(column(name), descending=down) for name, down in ordering),
                ]
            ),
        )
        if request.limit is not None:
            select.set("limit", exp.Limit(expression=exp.Literal.number(request.limit)))
        if request.offset:
            select.set("offset", exp.Offset(expression=exp.Literal.number(request.offset)))
        return CompiledBranch(select=select, nullable=True)

    def page_distance(self, branch: NearestNeighborSearch) -> exp.Expr:
        """The distance a nearest branch reports (:func:`reported_distance`), for the row
        the final join reads (``base``)."""
        node = VectorDistance(
            this=column(branch.column, BASE),
            expression=self.binder.vector(branch, "query_vector"),
            metric=branch.metric.value,
        )
        return reported_distance(branch.metric, self.search(node.copy()), node)

    def exact_nearest(
        self,
        branch: NearestNeighborSearch,
        request: BranchRequest,
        order: exp.Expr,
        node: VectorDistance,
    ) -> CompiledBranch:
        """An exact branch: ``SELECT ..., <reported distance> AS _distance FROM <s>.<t>
        [WHERE] ORDER BY _distance ASC NULLS LAST, key ASC LIMIT n``. No index scan serves it:
        pgvector's take ``ORDER BY <operator expression> LIMIT`` alone (a tie-break turns the
        plan into a full sort, ``shared/reference/local-engines.md`` §D), and the reported
        distance is no operator expression (the inner product's is written ``(<#>) + 0`` so
        that it is not one either, should the plan have no key)."""
        reported = reported_distance(branch.metric, order.copy(), node)
        if branch.metric is DistanceMetric.DOT:
            reported = exp.Add(this=exp.Paren(this=reported), expression=exp.Literal.number(0))
        select = self.branch_select(
            request,
            raw=exp.Alias(this=reported, alias=identifier(branch.raw_score_column)),
            source=table_reference(searched_table(branch)),
            raw_column=branch.raw_score_column,
            higher_is_better=False,
            tie_break=True,
            bounded=True,
        )
        return CompiledBranch(select=select, nullable=True)


POSTGRES = register_dialect(
    DialectProfile(
        name="postgres",
        sqlglot_dialect=PostgresDialect,
        compiler=PostgresCompiler,
        vector_literal_open="CAST('[",
        vector_literal_close=']\' AS "public"."vector")',
        supports_full_outer_join=True,
        full_text_query=tsquery_text,
    )
)
"""PostgreSQL 16 with pgvector."""


def schema_of(table: TableName) -> str:
    """PostgreSQL's schema of ``table`` (the plan's ``public`` is ``public``)."""
    return table.schema


def _render_postgres(tree: exp.Expr) -> str:
    text: str = POSTGRES.sqlglot_dialect().generate(tree, copy=False)
    return text


def grant(privilege: str, kind: str, securable: Sequence[str], role: str) -> str:
    """``GRANT <privilege> ON <kind> <securable> TO <role>``, every name quoted.

    >>> grant("SELECT", "TABLE", ["public", "docs"], "hdq_agent")
    'GRANT SELECT ON TABLE "public"."docs" TO "hdq_agent"'
    """
    *db, name = securable
    tree = exp.Grant(
        privileges=[exp.GrantPrivilege(this=exp.var(privilege))],
        kind=kind,
        securable=exp.Table(this=_quoted(name), db=_quoted(db[0]) if db else None),
        principals=[exp.GrantPrincipal(this=_quoted(role), kind=False)],
        grant_option=False,
    )
    return _render_postgres(tree)


AGENT_ROLE_ATTRIBUTES = "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT"
"""What the agent SQL role may do: nothing a role attribute grants, and log in only while
:func:`allow_role_login` lets it (PostgreSQL documentation, "CREATE ROLE")."""


def create_role(role: str) -> str:
    """``CREATE ROLE "<role>" NOLOGIN``: the role, made before :func:`allow_role_login` lets it
    log in."""
    return _render_postgres(
        exp.Command(this="CREATE", expression=f" ROLE {_render_postgres(_quoted(role))} NOLOGIN")
    )


def allow_role_login(role: str, password: str, valid_until: str) -> str:
    """``ALTER ROLE "<role>" WITH LOGIN <AGENT_ROLE_ATTRIBUTES> PASSWORD '<password>' VALID
    UNTIL '<valid until>'``: the role may log in, with ``password`` until the timestamp
    ``valid_until``. The statement holds a secret: it must never be shown."""
    name = _render_postgres(_quoted(role))
    secret = _render_postgres(exp.Literal.string(password))
    until = _render_postgres(exp.Literal.string(valid_until))
    return _render_postgres(
        exp.Command(
            this="ALTER",
            expression=(
                f" ROLE {name} WITH LOGIN {AGENT_ROLE_ATTRIBUTES} PASSWORD {secret} "
                f"VALID UNTIL {until}"
            ),
        )
    )


def refuse_role_login(role: str) -> str:
    """``ALTER ROLE "<role>" WITH NOLOGIN PASSWORD NULL``: no new session may log in as the
    role (those open go on: PostgreSQL checks ``LOGIN`` when a session authenticates).

    >>> refuse_role_login("hdq_agent_0123456789ab")
    'ALTER ROLE "hdq_agent_0123456789ab" WITH NOLOGIN PASSWORD NULL'
    """
    name = _render_postgres(_quoted(role))
    return _render_postgres(
        exp.Command(this="ALTER", expression=f" ROLE {name} WITH NOLOGIN PASSWORD NULL")
    )


def drop_role(role: str) -> list[str]:
    """``DROP OWNED BY "<role>"`` (its privileges in the current database) and ``DROP ROLE
    "<role>"``, in that order.

    >>> drop_role("hdq_agent_0123456789ab")
    ['DROP OWNED BY "hdq_agent_0123456789ab"', 'DROP ROLE "hdq_agent_0123456789ab"']
    """
    name = _render_postgres(_quoted(role))
    return [
        _render_postgres(exp.Command(this="DROP", expression=f" {what} {name}"))
        for what in ("OWNED BY", "ROLE")
    ]


def alter_role_setting(role: str, setting: str, value: str) -> str:
    """``ALTER ROLE "<role>" SET <setting> = '<value>'``: the role's default for a setting."""
    name = _render_postgres(_quoted(role))
    literal = _render_postgres(exp.Literal.string(value))
    return _render_postgres(
        exp.Command(this="ALTER", expression=f" ROLE {name} SET {setting} = {literal}")
    )


def set_local(setting: str, value: str) -> str:
    """``SELECT set_config('<setting>', '<value>', TRUE)``: ``SET LOCAL`` with its value a
    literal (PostgreSQL documentation, "Configuration Settings Functions").

    >>> set_local("statement_timeout", "1000")
    "SELECT set_config('statement_timeout', '1000', TRUE)"
    """
    call = exp.Anonymous(
        this="set_config",
        expressions=[exp.Literal.string(setting), exp.Literal.string(value), exp.true()],
    )
    return _render_postgres(exp.select(call))


def statistics_table(table: TableName, column: str) -> exp.Table:
    """The statistics table of text column ``column`` of ``table``
    (:func:`text_statistics_table`, in :data:`TEXT_INDEX_SCHEMA`)."""
    return exp.Table(
        this=_quoted(text_statistics_table(table.schema, table.name, column)),
        db=_quoted(TEXT_INDEX_SCHEMA),
    )


def add_term_documents(table: TableName, column: str) -> str:
    """``INSERT INTO <statistics> ("term", "documents") VALUES (%s, %s) ON CONFLICT ("term")
    DO UPDATE SET "documents" = <statistics>."documents" + "excluded"."documents"``: a change
    of the rows holding a term (negative for rows removed), one term per execution
    (PostgreSQL documentation, "INSERT", ``ON CONFLICT``)."""
    target = statistics_table(table, column)
    name = target.name
    tree = exp.Insert(
        this=exp.Schema(this=target, expressions=[_quoted("term"), _quoted("documents")]),
        expression=exp.Values(expressions=[exp.Tuple(expressions=[exp.var("%s"), exp.var("%s")])]),
        conflict=exp.OnConflict(
            conflict_keys=[_quoted("term")],
            action=exp.var("DO UPDATE"),
            expressions=[
                exp.EQ(
                    this=exp.column(_quoted("documents")),
                    expression=exp.Add(
                        this=exp.Column(this=_quoted("documents"), table=_quoted(name)),
                        expression=exp.Column(this=_quoted("documents"), table=_quoted("excluded")),
                    ),
                )
            ],
        ),
    )
    return _render_postgres(tree)


def prune_terms(table: TableName, column: str) -> str:
    """``DELETE FROM <statistics> WHERE "documents" <= 0 AND "term" <> ''``: the terms no row
    holds any more (the corpus row, term ``''``, stays)."""
    tree = exp.Delete(
        this=statistics_table(table, column),
        where=exp.Where(
            this=exp.and_(
                exp.LTE(this=exp.column(_quoted("documents")), expression=exp.Literal.number(0)),
                exp.NEQ(this=exp.column(_quoted("term")), expression=exp.Literal.string("")),
            )
        ),
    )
    return _render_postgres(tree)


def corpus_select(table: TableName, column: str) -> str:
    """``SELECT "documents", "average_length" FROM <statistics> WHERE "term" = ''``: the
    rows with text and their mean number of terms."""
    tree = exp.Select(
        expressions=[exp.column(_quoted("documents")), exp.column(_quoted("average_length"))],
        from_=exp.From(this=statistics_table(table, column)),
        where=exp.Where(
            this=exp.EQ(this=exp.column(_quoted("term")), expression=exp.Literal.string(""))
        ),
    )
    return _render_postgres(tree)


def corpus_update(table: TableName, column: str) -> str:
    """``UPDATE <statistics> SET "documents" = %s, "average_length" = %s WHERE "term" =
    ''``."""
    tree = exp.Update(
        this=statistics_table(table, column),
        expressions=[
            exp.EQ(this=exp.column(_quoted("documents")), expression=exp.var("%s")),
            exp.EQ(this=exp.column(_quoted("average_length")), expression=exp.var("%s")),
        ],
        where=exp.Where(
            this=exp.EQ(this=exp.column(_quoted("term")), expression=exp.Literal.string(""))
        ),
    )
    return _render_postgres(tree)


def postings_table(table: TableName, column: str) -> exp.Table:
    """The postings table of text column ``column`` of ``table``
    (:func:`text_postings_table`, in :data:`TEXT_INDEX_SCHEMA`)."""
    return exp.Table(
        this=_quoted(text_postings_table(table.schema, table.name, column)),
        db=_quoted(TEXT_INDEX_SCHEMA),
    )


_ADD_ROW_COLUMN = sqlglot.parse_one(
    "ALTER TABLE :table ADD COLUMN :row BIGINT GENERATED ALWAYS AS IDENTITY", read="postgres"
)
_ROW_INDEX = sqlglot.parse_one("CREATE UNIQUE INDEX :name ON :table (:row)", read="postgres")


def add_row_column(table: TableName) -> list[str]:
    """``ALTER TABLE <table> ADD COLUMN "hdq__row" BIGINT GENERATED ALWAYS AS IDENTITY`` and
    the unique index on it (:data:`ROW_COLUMN`, :func:`row_index_name`): run on the empty
    table, before its rows are written, so each row is numbered as it is written."""
    target = exp.Table(this=_quoted(table.name), db=_quoted(table.schema))
    row = exp.column(_quoted(ROW_COLUMN))
    return [
        _render_postgres(exp.replace_placeholders(_ADD_ROW_COLUMN.copy(), table=target, row=row)),
        _render_postgres(
            exp.replace_placeholders(
                _ROW_INDEX.copy(),
                name=_quoted(row_index_name(table.name)),
                table=target.copy(),
                row=row.copy(),
            )
        ),
    ]


_KEY_INDEX = sqlglot.parse_one("CREATE INDEX :name ON :table USING HASH (:key)", read="postgres")


def key_index_name(table: str) -> str:
    """The index on a table's key column, by which a fused search's last join, an upsert and
    a delete find a row by its key.

    >>> key_index_name("docs")
    'docs__hdq__key'
    """
    return f"{table}__hdq__key"


def add_key_index(table: TableName, key_column: str) -> str:
    """``CREATE INDEX "<table>__hdq__key" ON <table> USING HASH ("<key>")``
    (:func:`key_index_name`): without it PostgreSQL hashes the whole table for every fused
    search's join back to its rows. A hash index, not a btree: it holds a key of any length
    (a btree entry past about 2,700 bytes fails the load: PostgreSQL documentation, "B-Tree
    Indexes", and "Hash Indexes" for equality lookups), and it is not ``UNIQUE``, which the
    library's own key check already is. Run after the rows are written, so it is built in
    one pass."""
    target = exp.Table(this=_quoted(table.name), db=_quoted(table.schema))
    return _render_postgres(
        exp.replace_placeholders(
            _KEY_INDEX.copy(),
            name=_quoted(key_index_name(table.name)),
            table=target,
            key=exp.column(_quoted(key_column)),
        )
    )


_CREATE_POSTINGS = sqlglot.parse_one(
    "CREATE TABLE :postings (term TEXT NOT NULL, row BIGINT NOT NULL, "
    "frequency INT NOT NULL, length INT NOT NULL)",
    read="postgres",
)
_POSTINGS_KEYS = (
    sqlglot.parse_one("ALTER TABLE :postings ADD PRIMARY KEY (term, row)", read="postgres"),
    sqlglot.parse_one("CREATE INDEX :name ON :postings (row)", read="postgres"),
)
_POSTINGS_OF_ROWS = sqlglot.parse_one(
    """
    INSERT INTO :postings (term, row, frequency, length)
    SELECT counted.term, base.:row_name, counted.frequency, counted.length
    FROM :table AS base
    CROSS JOIN LATERAL (
      SELECT words.term, COUNT(*) AS frequency, CAST(SUM(COUNT(*)) OVER () AS INT) AS length
      FROM UNNEST(STRING_TO_ARRAY(:terms, ' ')) AS words(term)
      GROUP BY words.term
    ) AS counted
    """,
    read="postgres",
)
"""Each row's postings: its terms split once, counted per term; the row's length is the sum
of its terms' counts (a window over the row's groups), so a row of many distinct terms is
never split again per term."""
_DELETE_POSTINGS = sqlglot.parse_one(
    "DELETE FROM :postings WHERE row IN (SELECT base.:row_name FROM :table AS base)",
    read="postgres",
)


def _keys_of(key_column: str | None, key_count: int) -> exp.Expr | None:
    """``base."<key>" IN (%s, ...)``, or no condition without a key column."""
    if key_column is None:
        return None
    return exp.In(
        this=exp.Column(this=_quoted(key_column), table=_quoted("base")),
        expressions=[exp.var("%s") for _ in range(key_count)],
    )


def _table_of(table: TableName) -> exp.Table:
    return exp.Table(this=_quoted(table.name), db=_quoted(table.schema))


def create_postings(table: TableName, column: str) -> str:
    """``CREATE TABLE <postings> ("term" TEXT, "row" BIGINT, "frequency" INT, "length" INT)``,
    every column ``NOT NULL`` (:func:`text_postings_table`); its keys come after its rows
    (:func:`postings_keys`)."""
    return _render_postgres(
        exp.replace_placeholders(_CREATE_POSTINGS.copy(), postings=postings_table(table, column))
    )


def postings_keys(table: TableName, column: str) -> list[str]:
    """The postings table's primary key ``("term", "row")``, which a text search reads a
    query term's postings by, and its index on ``"row"``, which a change of rows deletes
    their postings by."""
    name = _quoted(text_postings_row_index(table.schema, table.name, column))
    return [
        _render_postgres(
            exp.replace_placeholders(
                statement.copy(), postings=postings_table(table, column), name=name
            )
        )
        for statement in _POSTINGS_KEYS
    ]


def postings_of_rows(
    table: TableName, column: str, *, key_column: str | None = None, key_count: int = 0
) -> str:
    """``INSERT INTO <postings> SELECT <term>, <row>, <times the row holds it>, <the row's
    terms> FROM <table> AS base ...``: the postings of every row of ``table`` (a load), or
    with ``key_column`` of the rows whose key is one of ``key_count`` ``%s`` parameters (the
    rows just written by a change). A row's terms are its ``<column>__terms`` split at
    spaces; a NULL text has none."""
    terms = exp.Column(this=_quoted(terms_column(column)), table=_quoted("base"))
    tree = exp.replace_placeholders(
        _POSTINGS_OF_ROWS.copy(),
        postings=postings_table(table, column),
        table=_table_of(table),
        row_name=_quoted(ROW_COLUMN),
        terms=terms,
    )
    keys = _keys_of(key_column, key_count)
    if keys is not None:
        select = tree.expression
        assert isinstance(select, exp.Select)
        select.where(keys, copy=False)
    return _render_postgres(tree)


def delete_postings(table: TableName, column: str, *, key_column: str, key_count: int) -> str:
    """``DELETE FROM <postings> WHERE "row" IN (SELECT base."hdq__row" FROM <table> AS base
    WHERE base."<key>" IN (%s, ...))``: the postings of the rows of ``key_count`` keys, run
    before the rows are deleted."""
    tree = exp.replace_placeholders(
        _DELETE_POSTINGS.copy(),
        postings=postings_table(table, column),
        table=_table_of(table),
        row_name=_quoted(ROW_COLUMN),
    )
    subquery = tree.find(exp.Select)
    assert subquery is not None
    subquery.where(_keys_of(key_column, key_count), copy=False)
    return _render_postgres(tree)
