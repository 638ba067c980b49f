"""Shapes that silently lose the vector index: HDQ001, HDQ002, HDQ004-HDQ009.

The engine reaches a vector index only through an optimizer rule (``USearchRule`` in
datafusion-vector-search-ext ``src/rule.rs``) that rewrites one narrow query shape: ``ORDER BY
<distance function>(<column>, <literal vector>) ASC LIMIT k`` over one fully qualified table,
with the vector column absent from the output. Every precondition that fails makes the engine
fall back to an exact full scan — the same rows, far slower, with no warning (engine contract
§2.2-2.4 and the shape table of §2.3).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from hotdata_retrieval.compile.compiler import identifier
from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import (
    DISTANCE_FUNCTIONS,
    Analysis,
    ColumnOrigin,
    DerivedSource,
    DistanceRanking,
    ExpressionOrigin,
    TableSource,
    is_literal_vector,
    limit_expression,
    order_keys,
)
from hotdata_retrieval.lint.parsing import render
from hotdata_retrieval.lint.rules.base import Edit, Fix, FixContext, Report, Rule
from hotdata_retrieval.plan.names import TableName


def _function(ranking: DistanceRanking) -> str:
    return ranking.call.name


def unqualified_table(analysis: Analysis, report: Report) -> None:
    """The vector-index lookup key is built from the table reference *as written*:
    ``catalog::schema::table::column`` for ``c.s.t``, but ``schema::table::column`` for a 2-part
    and ``table::column`` for a bare reference, while the engine registers its indexes under
    the 3-part key (``default::public::<table>::<col>``). A 2-part or bare reference therefore
    misses the index and the query scans. Engine contract §2.4 and §2.3 ("Two-part
    ``schema.table`` or bare ``table``": no rewrite); datafusion-vector-search-ext
    ``src/rule.rs`` ``table_ref_to_str``, issue #32."""
    for ranking in analysis.rankings():
        table = analysis.scan_table(ranking)
        if table is None or len(table.parts) == 3:
            continue
        completed = table.table
        written = analysis.text(table.node.this if table.alias else table.node)
        report(
            table.node,
            f"table {written} is not catalog.schema.table in a query ranked by "
            f"{_function(ranking)}(); the index lookup key is built from the name as written, "
            "so the index is missed and every row is scanned",
            f"write {completed}" if completed else "write the table as catalog.schema.table",
            fix=_qualify(table.node, completed) if completed is not None else None,
        )


def _qualify(node: exp.Table, name: TableName) -> Fix:
    """Insert the missing catalog (and schema) before the name as written."""
    written = node.args.get("db") or node.this
    missing = [name.catalog] if node.args.get("db") else [name.catalog, name.schema]

    def apply(context: FixContext) -> list[Edit] | None:
        bounds = context.bounds(written)
        if bounds is None:
            return None
        start = context.tokens[bounds[0]].start
        return [Edit(start, start, "".join(f"{render(identifier(part))}." for part in missing))]

    return apply


def _is_star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (
        isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
    )


def _star_excludes(item: exp.Expr, column: str) -> bool:
    star = item.this if isinstance(item, exp.Column) else item
    excluded = star.args.get("except_") or star.args.get("except") or []
    return any(isinstance(node, exp.Column) and node.name.lower() == column for node in excluded)


def _leaks(
    analysis: Analysis,
    select: exp.Select,
    table: TableSource,
    column: str,
    depth: int = 0,
) -> list[tuple[exp.Expr, bool]]:
    """Items of ``select``'s output that carry ``table.column``: ``(item, is_star)``."""
    if depth > 16:
        return []
    found: list[tuple[exp.Expr, bool]] = []
    for item in select.expressions:
        if _is_star(item):
            if _star_excludes(item, column):
                continue
            qualifier = item.table if isinstance(item, exp.Column) and item.table else None
            targets = (
                [analysis.source_named(select, qualifier)]
                if qualifier is not None
                else analysis.sources(select)
            )
            for source in targets:
                if source is table or (
                    isinstance(source, DerivedSource)
                    and source.select is not None
                    and _leaks(analysis, source.select, table, column, depth + 1)
                ):
                    found.append((item, True))
            continue
        expression = item.this if isinstance(item, exp.Alias) else item
        if not isinstance(expression, exp.Column):
            continue
        origin = analysis.resolve(select, expression, aliases=False)
        if isinstance(origin, ColumnOrigin) and origin.source is table and origin.column == column:
            found.append((item, False))
    return found


def _drop_item(analysis: Analysis, select: exp.Select, item: exp.Expr) -> Fix | None:
    """Removing a projection item is safe when something else remains and nothing else reads
    the name (the distance function's own argument aside)."""
    if len(select.expressions) < 2:
        return None
    name = item.alias_or_name.lower()
    for column in analysis.columns_named(name):
        if column is item or column.find_ancestor(exp.Alias) is item:
            continue
        parent = column.parent
        if (
            isinstance(parent, exp.Anonymous)
            and parent.name.lower() in DISTANCE_FUNCTIONS
            and parent.expressions
            and parent.expressions[0] is column
        ):
            continue
        return None

    def apply(context: FixContext) -> list[Edit] | None:
        bounds = context.bounds(item)
        if bounds is None:
            return None
        first, last = bounds
        tokens = context.tokens
        if last + 1 < len(tokens) and tokens[last + 1].token_type == TokenType.COMMA:
            return context.delete(first, last + 1, trailing_space=True)  # "emb, "
        if first > 0 and tokens[first - 1].token_type == TokenType.COMMA:
            return context.delete(first - 1, last)  # ", emb" (the last item)
        return None

    return apply


def vector_column_in_output(analysis: Analysis, report: Report) -> None:
    """The rewritten plan reads rows back by key from a lookup provider that does not store
    the vector column, so when the query's output includes the indexed vector column —
    ``SELECT *`` or ``SELECT id, embedding`` — the rule declines and the query scans (it also
    floods the result with vectors). Engine contract §2.2 item 7 and §2.3 ("``SELECT *``" and
    "Projecting the vector column explicitly": no rewrite); datafusion-vector-search-ext
    ``src/rule.rs``, runtimedb issue #508; §3.3 item 6."""
    for ranking in analysis.rankings():
        table = analysis.scan_table(ranking)
        arguments = ranking.call.expressions
        if table is None or not arguments or not isinstance(arguments[0], exp.Column):
            continue
        column = arguments[0].name.lower()
        for item, is_star in _leaks(analysis, ranking.anchor, table, column):
            if is_star:
                report(
                    item,
                    f"{analysis.text(item)} returns the vector column {column} from a query "
                    f"ranked by {_function(ranking)}(); the index cannot produce it, so every "
                    "row is scanned",
                    f"list the columns you need, or write * EXCLUDE ({column})",
                )
            else:
                report(
                    item,
                    f"the vector column {analysis.text(item)} is in the output of a query "
                    f"ranked by {_function(ranking)}(); the index cannot produce it, so every "
                    "row is scanned",
                    f"drop {column} from the SELECT list",
                    fix=_drop_item(analysis, ranking.anchor, item),
                )


def distance_without_limit(analysis: Analysis, report: Report) -> None:
    """The index rewrite anchors on a sort with a fetch: without ``LIMIT`` there is no top-k,
    the rule does not fire and the whole table is sorted by distance. Engine contract §2.2
    item 1, §2.3 ("No ``LIMIT``": no rewrite), test vector 11; §3.3 item 5;
    datafusion-vector-search-ext ``test_no_limit_no_rewrite``."""
    for ranking in analysis.rankings():
        if limit_expression(ranking.anchor) is None:
            report(
                ranking.ordered,
                f"ORDER BY {analysis.text(ranking.ordered)} ranks by {_function(ranking)}() "
                "without a LIMIT: no top-k, so no index; every row is scored and sorted",
                "add LIMIT k after the ORDER BY",
            )


def distance_descending(analysis: Analysis, report: Report) -> None:
    """The first distance sort key must be ascending (lower is nearer for every distance
    function); ``DESC`` — farthest first — is never rewritten. Engine contract §2.2 item 3,
    §2.3 ("``ORDER BY dist DESC``": no rewrite), test vector 10; datafusion-vector-search-ext
    ``test_desc_sort_no_rewrite``."""
    for ranking in analysis.rankings():
        if ranking.ordered.args.get("desc") and not ranking.over_expression:
            report(
                ranking.ordered,
                f"ORDER BY {analysis.text(ranking.ordered)} sorts {_function(ranking)}() "
                "descending (farthest first): the index is not used and every row is scanned",
                "sort ascending (lower distance is nearer); for similarity order use ASC on "
                "the distance itself",
            )


def distance_over_expression(analysis: Analysis, report: Report) -> None:
    """The rewrite needs the sort key to be the distance function itself (inline or through a
    SELECT alias), and the function's first argument to be a plain column reference: a cast
    or any other expression on the column, or an expression over the distance (``1 -
    cosine_distance(...)``), is not matched and the query scans. Engine contract §2.2 items
    3-4; datafusion-vector-search-ext ``src/rule.rs``."""
    for ranking in analysis.rankings():
        if ranking.over_expression:
            report(
                ranking.ordered,
                f"ORDER BY {analysis.text(ranking.ordered)} sorts by an expression over "
                f"{_function(ranking)}(), not the distance itself: the index is not used",
                f"ORDER BY the {_function(ranking)}(...) value itself, ascending",
            )
        arguments = ranking.call.expressions
        if arguments and not isinstance(arguments[0], exp.Column):
            report(
                arguments[0],
                f"{_function(ranking)}() takes {analysis.text(arguments[0])}, not a bare "
                "column: the index on the column is not used",
                "pass the vector column itself as the first argument",
            )


def non_literal_vector(analysis: Analysis, report: Report) -> None:
    """The query vector must be a literal (``ARRAY[...]`` or ``make_array(...)`` of numeric
    literals); a column, a subquery result or a parameter is a runtime value and is never
    rewritten. Engine contract §2.2 item 4, §2.5 ("Runtime (not literal) query vectors are
    never rewritten"); datafusion-vector-search-ext README and ``rule.rs``
    ``extract_f64_vec_from_expr``."""
    for ranking in analysis.rankings():
        arguments = ranking.call.expressions
        if len(arguments) < 2:
            report(
                ranking.call,
                f"{_function(ranking)}() needs the vector column and a query vector",
                f"write {_function(ranking)}(column, ARRAY[...])",
                severity=Severity.ERROR,
            )
        elif not is_literal_vector(arguments[1]):
            report(
                arguments[1],
                f"the query vector {analysis.text(arguments[1])} of {_function(ranking)}() is "
                "not a literal: the index is not used",
                "inline the vector as ARRAY[...] of numbers",
            )


def aliased_scan_without_wrap(analysis: Analysis, report: Report) -> None:
    """A single alias on the scanned table (``FROM c.s.t AS t0``) with the sort in the same
    query is declined: the rewritten plan's mixed-qualifier schema cannot be reproduced. The
    same query wrapped once more (``SELECT * FROM (SELECT ..., dist AS _distance FROM c.s.t
    AS t0) AS t1 ORDER BY t1._distance LIMIT k``) is rewritten. Engine contract §2.3 ("Single
    alias on the scan, no outer wrap": no); datafusion-vector-search-ext
    ``tests/subquery_alias.rs``, ``test_single_alias_on_scan_no_outer_wrap_declines_safely``."""
    for ranking in analysis.rankings():
        table = analysis.scan_table(ranking)
        if table is None or table.alias is None or ranking.outer_wrap:
            continue
        report(
            table.node,
            f"{analysis.text(table.node)} gives the scanned table an alias in the query that "
            f"ranks by {_function(ranking)}(): the index is not used",
            "drop the alias, or compute the distance in a subquery and ORDER BY ... LIMIT "
            "outside it",
        )


_RANKING_FUNCTIONS = (exp.RowNumber, exp.Rank, exp.DenseRank)


def _rank_is_filtered(analysis: Analysis, window: exp.Window) -> bool:
    clause = window.find_ancestor(exp.Where, exp.Qualify, exp.Having, exp.Select)
    if isinstance(clause, (exp.Where, exp.Qualify, exp.Having)):
        return True
    alias = window.parent
    if not isinstance(alias, exp.Alias):
        return False
    name = alias.alias.lower()
    for condition in analysis.find(exp.Where, exp.Qualify):
        for column in condition.find_all(exp.Column):
            if isinstance(column.this, exp.Star) or column.name.lower() != name:
                continue
            select = analysis.enclosing_select(column)
            if select is None:
                continue
            origin = analysis.resolve(select, column)
            if isinstance(origin, ExpressionOrigin) and origin.expression is window:
                return True
    return False


def ranked_every_row(analysis: Analysis, report: Report) -> None:
    """Ranking every row with ``ROW_NUMBER() OVER (ORDER BY dist)`` and keeping the ranks up to
    k afterwards has no ``ORDER BY ... LIMIT`` for the rule to anchor on: the engine scores
    and ranks the whole table. The top-k must be taken first (``ORDER BY dist LIMIT depth``
    in a CTE) and ranked outside. Engine contract §2.3 (last rows) and §3.3 item 13;
    hotdata-langchain ``hybrid_search_sql`` docstring."""
    for window in analysis.find(exp.Window):
        if not isinstance(window.this, _RANKING_FUNCTIONS):
            continue
        keys = order_keys(window)
        select = analysis.enclosing_select(window)
        if not keys or select is None:
            continue
        hit = analysis.distance_in(select, keys[0].this)
        if hit is None:
            continue
        call, _, scan, _ = hit
        if limit_expression(scan) is not None or not _rank_is_filtered(analysis, window):
            continue
        report(
            window,
            f"{analysis.text(window)} ranks every row by {call.name}() and the rank is "
            "filtered afterwards: no ORDER BY ... LIMIT, so no index; every row is scored",
            f"take the top k first (SELECT key, {call.name}(...) AS _distance FROM ... ORDER BY "
            "_distance LIMIT k in a CTE), then rank those rows",
        )


RULES = [
    Rule(
        code="HDQ001",
        name="unqualified-table",
        severity=Severity.WARNING,
        summary="a table that is not catalog.schema.table in a query ranked by a distance",
        check=unqualified_table,
        fixable=True,
    ),
    Rule(
        code="HDQ002",
        name="vector-column-in-output",
        severity=Severity.WARNING,
        summary="the indexed vector column, or SELECT *, in the output of a distance-ranked query",
        check=vector_column_in_output,
        fixable=True,
    ),
    Rule(
        code="HDQ004",
        name="distance-without-limit",
        severity=Severity.WARNING,
        summary="ORDER BY a distance without LIMIT",
        check=distance_without_limit,
    ),
    Rule(
        code="HDQ005",
        name="distance-descending",
        severity=Severity.WARNING,
        summary="ORDER BY a distance DESC",
        check=distance_descending,
    ),
    Rule(
        code="HDQ006",
        name="distance-over-expression",
        severity=Severity.WARNING,
        summary="a distance over an expression rather than a bare column, or a sort key "
        "over the distance",
        check=distance_over_expression,
    ),
    Rule(
        code="HDQ007",
        name="non-literal-query-vector",
        severity=Severity.WARNING,
        summary="a query vector that is not a literal",
        check=non_literal_vector,
    ),
    Rule(
        code="HDQ008",
        name="aliased-scan-without-wrap",
        severity=Severity.WARNING,
        summary="a single alias on the scanned table without the outer subquery wrap",
        check=aliased_scan_without_wrap,
    ),
    Rule(
        code="HDQ009",
        name="rank-every-row",
        severity=Severity.WARNING,
        summary="ROW_NUMBER() over every row by distance, the rank filtered afterwards",
        check=ranked_every_row,
    ),
]
