"""Search table functions used in ways that lose the ranking or the row count: HDQ010-HDQ015.

``bm25_search`` and ``vector_search`` are relations whose rows come back in *rowid order*,
with the ranking column (``score``, ``_distance``) unsorted; only ``ORDER BY score DESC`` /
``ORDER BY _distance ASC`` ranks them (engine contract §1.1, §1.2, §3.3 items 1-4).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokenizer_core import TokenType

from hotdata_retrieval.compile.compiler import column as column_node
from hotdata_retrieval.lint.findings import Severity
from hotdata_retrieval.lint.model import (
    BM25_SEARCH,
    Analysis,
    ScoreOrigin,
    SearchSource,
    int_literal,
    is_literal_vector,
    limit_expression,
    offset_expression,
    order_keys,
    string_literal,
)
from hotdata_retrieval.lint.parsing import render
from hotdata_retrieval.lint.rules.base import Edit, Fix, FixContext, Report, Rule


def _bound_by_trailing_limit(analysis: Analysis, select: exp.Select, source: SearchSource) -> bool:
    """``bm25_search(t, col, q) LIMIT n``: without a 4th argument, a bare trailing LIMIT over
    the function alone is pushed down and becomes the search's bound (§1.1), so the rows are
    the best n — only their order is lost."""
    return (
        source.function.name == BM25_SEARCH
        and len(source.call.expressions) == 3
        and analysis.sources(select) == [source]
        and select.args.get("where") is None
        and offset_expression(select) is None
    )


def _unsorted_reads(analysis: Analysis) -> list[tuple[exp.Select, SearchSource, bool]]:
    """``(select, search, truncated)`` for every select that carries a search's rows in
    rowid order, nothing sorting them: to the statement's result (``truncated`` false), or
    cut by LIMIT/OFFSET (``truncated`` true; a bare LIMIT that becomes the search's own bound
    loses only the order, so it counts as the first kind)."""
    outputs = analysis.output_selects()
    found: list[tuple[exp.Select, SearchSource, bool]] = []
    for select in analysis.selects:
        if (
            order_keys(select)
            or analysis.is_aggregate(select)
            or analysis.has_ranking_window(select)
        ):
            continue
        cut = limit_expression(select) is not None or offset_expression(select) is not None
        output = any(select is candidate for candidate in outputs)
        if not cut and not output:
            continue
        for source in analysis.feeding_searches(select):
            truncated = cut and not _bound_by_trailing_limit(analysis, select, source)
            if truncated or output:
                found.append((select, source, truncated))
    return found


def _add_order(analysis: Analysis, select: exp.Select, source: SearchSource) -> Fix | None:
    """``ORDER BY score DESC`` / ``_distance ASC`` is safe to add when the select reads the
    search function alone, directly, without DISTINCT, is not an arm of a UNION, and nothing
    else is named like its ranking column in the select list."""
    sources = analysis.sources(select)
    if len(sources) != 1 or sources[0] is not source or select.args.get("distinct"):
        return None
    if isinstance(select.parent, exp.SetOperation):
        return None  # an ORDER BY written after a UNION arm would sort the whole UNION
    score = source.function.score_column
    for item in select.expressions:
        if isinstance(item, exp.Alias) and item.alias.lower() == score:
            return None
    descending = source.function.descending

    def apply(context: FixContext) -> list[Edit] | None:
        key = exp.Ordered(
            this=column_node(score, source.alias),
            desc=descending,
            nulls_first=descending,
        )
        return _insert_order(context, select, source, render(exp.Order(expressions=[key])))

    return apply


_CUT_KEYWORDS = (TokenType.LIMIT, TokenType.OFFSET, TokenType.FETCH)
_SELECT_ENDS = (TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT, TokenType.SEMICOLON)


def _cut_keywords(context: FixContext, select: exp.Select) -> list[int] | None:
    """The token indexes of ``select``'s ``LIMIT``/``OFFSET``/``FETCH`` keywords (empty when
    it has none), or ``None`` when one cannot be placed."""
    found: list[int] = []
    for count in (limit_expression(select), offset_expression(select)):
        if count is None:
            continue
        bounds = context.bounds(count)
        if bounds is None:
            return None
        keyword = next(
            (
                index  # LIMIT n, OFFSET n, FETCH FIRST n
                for index in range(bounds[0] - 1, max(bounds[0] - 3, -1), -1)
                if context.tokens[index].token_type in _CUT_KEYWORDS
            ),
            None,
        )
        if keyword is None:
            return None
        found.append(keyword)
    return found


def _select_tail(context: FixContext, call: exp.Expr) -> tuple[int, int] | None:
    """The token indexes of the ``FROM`` before ``call`` and of the last token of the select
    it belongs to (scanning on from the call to the bracket that closes the select, a set
    operation or the end), or ``None`` when ``call`` does not directly follow ``FROM``."""
    bounds = context.bounds(call)
    tokens = context.tokens
    if bounds is None or bounds[0] == 0 or tokens[bounds[0] - 1].token_type != TokenType.FROM:
        return None
    depth = 0
    last = bounds[0]
    for index in range(bounds[0], len(tokens)):
        kind = tokens[index].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
            if depth < 0:
                break
        elif depth == 0 and kind in _SELECT_ENDS:
            break
        last = index
    return bounds[0] - 1, last


def _insert_order(
    context: FixContext, select: exp.Select, source: SearchSource, clause: str
) -> list[Edit] | None:
    """Place the ``ORDER BY``: just before the ``LIMIT``/``OFFSET``, laid out like it (on a
    line of its own when the ``LIMIT`` is); without one, at the end of the select — on a line
    of its own, indented like the ``FROM``, when the statement spans several lines and only
    comments follow on that line, else after a space."""
    tokens = context.tokens
    keywords = _cut_keywords(context, select)
    if keywords is None:
        return None
    if keywords:
        keyword = min(keywords)
        at = tokens[keyword].start
        before = context.gap(keyword - 1) if keyword > 0 else ""
        separator = before[len(before.rstrip()) :] or " "
        return [Edit(at, at, clause + separator)]
    tail = _select_tail(context, source.call)
    if tail is None:
        return None
    from_keyword, last = tail
    end = tokens[last].end + 1
    if any(character in "\r\n" for character in context.sql[tokens[0].start : end]):
        line_end = context.line_end_after(end)
        if line_end is not None:
            following = context.sql[line_end : line_end + 2]
            newline = "\r\n" if following == "\r\n" else following[:1] or context.newline
            indent = context.indentation(from_keyword)
            return [Edit(line_end, line_end, newline + indent + clause)]
    return [Edit(end, end, " " + clause)]


def unsorted_results(analysis: Analysis, report: Report) -> None:
    """``bm25_search`` and ``vector_search`` return rows in rowid order with the score or
    distance unsorted — a result that looks ranked and is not. Observed scores without ORDER
    BY: 8.788, 8.092, 8.034, 8.254, 8.496. Engine contract §1.1, §1.2, §3.3 items 1 and 3,
    test vector 1; hotdata-langchain ``docs/engine-contract.md`` and
    ``test_bm25_search_sql_orders_by_score_descending``."""
    for select, source, truncated in _unsorted_reads(analysis):
        if truncated:
            continue
        function = source.function
        report(
            source.call,
            f"{analysis.text(source.call)} returns rows in rowid order, and nothing sorts "
            f"them by {function.score_column}: the result looks ranked but is not",
            f"add ORDER BY {function.sort_sql}",
            fix=_add_order(analysis, select, source),
            severity=Severity.ERROR,
        )


def truncated_unsorted(analysis: Analysis, report: Report) -> None:
    """A LIMIT (or OFFSET) over unsorted search results keeps the lowest rowids, not the best
    hits: ``SELECT * FROM vector_search(..., 20) LIMIT 3`` returned the three lowest ids.
    Engine contract §1.2, §3.3 item 2, test vector 6; hotdata-langchain
    ``test_vector_search_sql_bounds_with_the_argument_not_a_trailing_limit``."""
    for select, source, truncated in _unsorted_reads(analysis):
        if not truncated:
            continue
        function = source.function
        report(
            source.call,
            f"{analysis.text(source.call)} is cut by LIMIT/OFFSET without ORDER BY "
            f"{function.sort_sql}: it keeps the lowest rowids, not the best hits",
            f"add ORDER BY {function.sort_sql} before the LIMIT",
            fix=_add_order(analysis, select, source),
        )


def bm25_without_k(analysis: Analysis, report: Report) -> None:
    """BM25 is top-k in tantivy, so its bound must be known before planning. ``ORDER BY score
    DESC LIMIT n`` is not pushed into the search (the sort blocks limit pushdown): without
    the 4th argument tantivy searches the engine's much larger default bound. The rows are
    the same, the work is not. Engine contract §1.1, §3.3 item 4, test vector 4;
    hotdata-langchain ``bm25_search_sql`` ("k is emitted twice, and both are
    load-bearing"). A query that filters the results in the same SELECT is left alone: the
    function applies k before the WHERE, so a k would drop rows the filter keeps."""
    seen: set[int] = set()
    for select in analysis.selects:
        keys = order_keys(select)
        limit = limit_expression(select)
        if not keys or limit is None or not isinstance(keys[0].this, exp.Column):
            continue
        if select.args.get("where") is not None:
            continue
        origin = analysis.resolve(select, keys[0].this, pure_only=True)
        if not isinstance(origin, ScoreOrigin):
            continue
        source = origin.source
        if source.function.name != BM25_SEARCH or len(source.call.expressions) != 3:
            continue
        if id(source.call) in seen:
            continue
        seen.add(id(source.call))
        k = _bound(select)
        report(
            source.call,
            f"{analysis.text(source.call)} has no k (4th argument) while the query sorts by "
            "score with a LIMIT: the LIMIT is not pushed down, so the search runs to the "
            "engine's default bound",
            f"pass k = {k} as the 4th argument" if k is not None else "pass k as the 4th argument",
            fix=_add_k(analysis, select, source, k) if keys[0].args.get("desc") else None,
        )


def _bound(select: exp.Select) -> int | None:
    limit = int_literal(limit_expression(select))
    offset_node = offset_expression(select)
    offset = 0 if offset_node is None else int_literal(offset_node)
    if limit is None or offset is None:
        return None
    return limit + offset


def _add_k(
    analysis: Analysis, select: exp.Select, source: SearchSource, k: int | None
) -> Fix | None:
    """Adding k = LIMIT + OFFSET is exact only when the select ranks by score descending,
    reads the function alone and filters nothing: a WHERE over a k-bounded search can leave
    fewer rows than the LIMIT."""
    if k is None or k < 1:
        return None
    if analysis.sources(select) != [source] or select.args.get("where") is not None:
        return None

    arguments = source.call.expressions

    def apply(context: FixContext) -> list[Edit] | None:
        bounds = context.bounds(arguments[-1])
        if bounds is None:
            return None
        end = context.tokens[bounds[1]].end + 1
        return [Edit(end, end, f", {k}")]

    return apply


def k_below_limit(analysis: Analysis, report: Report) -> None:
    """The 4th argument k is the real bound of the search: with ``k`` smaller than the LIMIT
    (plus OFFSET) of the query that reads it, at most k rows come back — silently fewer than
    asked. Engine contract §1.1 ("k (4th arg) is the real bound") and §1.2 ("k (4th arg) is
    the only bound")."""
    for select, source in analysis.search_sources():
        arguments = source.call.expressions
        if len(arguments) < 4:
            continue
        k = int_literal(arguments[3])
        wanted = _bound(select)
        if k is None or wanted is None or k >= wanted:
            continue
        report(
            arguments[3],
            f"k = {k} in {source.function.name}() returns at most {k} rows, but the query "
            f"asks for {wanted} (LIMIT + OFFSET)",
            f"pass k = {wanted}",
        )


def _table_parts(text: str) -> int:
    """How many dot-separated parts a table string has (dots inside double quotes do not
    separate). Its validity is :class:`~hotdata_retrieval.plan.names.TableName`'s concern."""
    parts = 1
    quoted = False
    for character in text:
        if character == '"':
            quoted = not quoted
        elif character == "." and not quoted:
            parts += 1
    return parts


def unqualified_search_table(analysis: Analysis, report: Report) -> None:
    """Clients always pass the full ``'catalog.schema.table'`` string to the search
    functions; whether the engine accepts a 2-part string there is not documented (the CLI
    completes its own input to three parts before emitting SQL; hotdata-langchain rejects
    anything else), and ``vector_search_vector`` rejects it (``Expected
    'connection.schema.table'``). Engine contract §1.1 (table-reference resolution), §1.5;
    hotdata-cli ``src/commands/search.rs``."""
    for _, source in analysis.search_sources():
        arguments = source.call.expressions
        text = string_literal(arguments[0]) if arguments else None
        if text is None:
            continue
        if source.table is None or _table_parts(text) == 3:
            continue
        completed = str(source.table)
        literal = arguments[0]

        def apply(
            context: FixContext, literal: exp.Expr = literal, completed: str = completed
        ) -> list[Edit] | None:
            bounds = context.bounds(literal)
            if bounds is None or bounds[0] != bounds[1]:
                return None
            token = context.tokens[bounds[0]]
            return [Edit(token.start, token.end + 1, render(exp.Literal.string(completed)))]

        report(
            literal,
            f"the table {analysis.text(literal)} in {source.function.name}() is not "
            "'catalog.schema.table'",
            f"write '{completed}'",
            fix=apply,
        )


def malformed_search_call(analysis: Analysis, report: Report) -> None:
    """The search functions take literals only: ``bm25_search('<c>.<s>.<t>', '<column>',
    '<query>' [, k])`` with string literals and an integer k; ``vector_search`` needs all
    four; ``vector_search_vector(..., ARRAY[...], k)`` exactly four with a literal vector.
    Anything else is rejected at planning. Engine contract §1.1, §1.2, §1.5;
    datafusion-vector-search-ext ``src/udtf.rs`` (``Expected string literal``, ``Expected
    integer literal``)."""
    for _, source in analysis.search_sources():
        function = source.function
        arguments = source.call.expressions
        name = function.name
        if not function.min_arguments <= len(arguments) <= function.max_arguments:
            expected = (
                f"{function.min_arguments}"
                if function.min_arguments == function.max_arguments
                else f"{function.min_arguments} or {function.max_arguments}"
            )
            report(
                source.call,
                f"{name}() takes {expected} arguments, got {len(arguments)}",
                f"write {name}('catalog.schema.table', 'column', "
                f"{'ARRAY[...]' if function.vector_argument else chr(39) + 'query' + chr(39)}, k)",
            )
            continue
        labels = ["table", "column", "query vector" if function.vector_argument else "query text"]
        for position, label in enumerate(labels):
            argument = arguments[position]
            if position == 2 and function.vector_argument:
                ok = is_literal_vector(argument)
            else:
                ok = string_literal(argument) is not None
            if not ok:
                report(
                    argument,
                    f"the {label} argument {analysis.text(argument)} of {name}() is not a "
                    "literal; the engine takes literals only",
                    f"write the {label} as a literal",
                )
        text = string_literal(arguments[0])
        if text is not None and source.table is None:
            report(
                arguments[0],
                f"{analysis.text(arguments[0])} in {name}() is not a table name",
                "write 'catalog.schema.table'",
            )
        if len(arguments) > 3:
            k = int_literal(arguments[3])
            if k is None or k < 1:
                report(
                    arguments[3],
                    f"k {analysis.text(arguments[3])} of {name}() is not a positive integer "
                    "literal",
                    "pass k as a positive integer literal",
                )


RULES = [
    Rule(
        code="HDQ010",
        name="unsorted-search-results",
        severity=Severity.ERROR,
        summary="bm25_search/vector_search results returned without ORDER BY score DESC / "
        "_distance ASC (rowid order)",
        check=unsorted_results,
        fixable=True,
    ),
    Rule(
        code="HDQ011",
        name="truncated-unsorted-search",
        severity=Severity.ERROR,
        summary="bm25_search/vector_search results cut by LIMIT/OFFSET without the sort",
        check=truncated_unsorted,
        fixable=True,
    ),
    Rule(
        code="HDQ012",
        name="bm25-without-k",
        severity=Severity.WARNING,
        summary="bm25_search without its 4th argument while the query sorts by score and limits",
        check=bm25_without_k,
        fixable=True,
    ),
    Rule(
        code="HDQ013",
        name="k-below-limit",
        severity=Severity.ERROR,
        summary="a search's k smaller than the LIMIT + OFFSET that reads it",
        check=k_below_limit,
    ),
    Rule(
        code="HDQ014",
        name="unqualified-search-table",
        severity=Severity.WARNING,
        summary="a search function's table string that is not 'catalog.schema.table'",
        check=unqualified_search_table,
        fixable=True,
    ),
    Rule(
        code="HDQ015",
        name="malformed-search-call",
        severity=Severity.ERROR,
        summary="a search function called with the wrong number of arguments or non-literals",
        check=malformed_search_call,
    ),
]
