"""Filters written as SQL text, parsed into the typed predicate tree.

:func:`parse_filter` reads a boolean SQL expression with sqlglot's parser (in the ``hotdata``
dialect) and translates it, node by node, into
:class:`~hotdata_retrieval.plan.filters.Predicate` nodes. Nothing is passed through as text:
the result compiles like any hand-built filter, with every value a bound literal.

The grammar is deliberately small, the same as the predicate tree's:

- ``column = | != | <> | < | <= | > | >= literal`` (or ``literal <op> column``, flipped);
- ``column [NOT] IN (literal, ...)``;
- ``column IS [NOT] NULL``;
- ``column [NOT] LIKE 'text%'`` whose pattern is a prefix (every ``%`` and ``_`` before the
  last ``%`` escaped, with ``\\`` or the ``ESCAPE`` character): a prefix match;
- each operator of the operator table (:func:`~hotdata_retrieval.plan.filters.
  register_predicate`) in its SQL spelling: a function call such as ``starts_with(column,
  'text')`` or ``array_has_all(column, ['a', 'b'])`` (a list written ``[...]``,
  ``ARRAY[...]`` or ``make_array(...)``), or the syntax its compile-layer spelling reads
  (:data:`~hotdata_retrieval.compile.compiler.SQL_SPELLINGS`); a message of refusal lists
  them all;
- ``AND``, ``OR``, ``NOT`` and parentheses, with SQL's precedence (NOT, then AND, then OR).

Columns are bare names (double quotes allowed; stored lower-cased). Literals are
single-quoted strings, integers, decimals (``1.5``, ``1e-3``: a float, or, when no float's
shortest text names the number written, ``1.5000000000000000000001``, the exact
``decimal.Decimal``), negative numbers, ``TRUE``, ``FALSE``, ``CAST('1.59' AS DECIMAL(3, 2))``
(a ``decimal.Decimal``, as the compiler writes one), ``DATE '2024-03-01'`` and ``TIMESTAMP
'2024-03-01 10:00:00'`` (or ``CAST('...' AS DATE)``, ``CAST('...' AS TIMESTAMP)``, or
``arrow_cast('...', 'Timestamp(Microsecond, Some("UTC"))')``, as the ``hotdata`` dialect
writes a timestamp; ``Timestamp(Nanosecond, Some("UTC"))``, as it wrote one before, too).
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from typing import Any, NoReturn

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from hotdata_retrieval.compile.compiler import SQL_SPELLINGS
from hotdata_retrieval.compile.hotdata import UTC_TIMESTAMP_TYPE
from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Comparison,
    ComparisonOperator,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    StartsWith,
    argument_shape,
    like_prefix,
    predicate_forms,
)
from hotdata_retrieval.plan.values import (
    LiteralValue,
    iso_text_problem,
    parse_iso_date,
    parse_iso_timestamp,
)

_READ_DIALECT = "hotdata"


def _supported() -> str:
    """What filter text allows, for messages: its own grammar, then each registered leaf's
    SQL spelling."""
    spelled = []
    for form in predicate_forms().values():
        if form.leaf and form.sql is not None:
            spelling = SQL_SPELLINGS.get(form.sql)
            spelled.append(f"{form.sql}()" if spelling is None else spelling.text)
    return (
        ", ".join(
            ["=, !=, <>, <, <=, >, >=, [NOT] IN, IS [NOT] NULL, [NOT] LIKE 'prefix%'", *spelled]
        )
        + ", AND, OR, NOT and parentheses"
    )


_COMPARISONS: dict[type[exp.Expr], ComparisonOperator] = {
    exp.EQ: ComparisonOperator.EQUAL,
    exp.NEQ: ComparisonOperator.NOT_EQUAL,
    exp.LT: ComparisonOperator.LESS,
    exp.LTE: ComparisonOperator.LESS_OR_EQUAL,
    exp.GT: ComparisonOperator.GREATER,
    exp.GTE: ComparisonOperator.GREATER_OR_EQUAL,
}

_FLIPPED: dict[ComparisonOperator, ComparisonOperator] = {
    ComparisonOperator.EQUAL: ComparisonOperator.EQUAL,
    ComparisonOperator.NOT_EQUAL: ComparisonOperator.NOT_EQUAL,
    ComparisonOperator.LESS: ComparisonOperator.GREATER,
    ComparisonOperator.LESS_OR_EQUAL: ComparisonOperator.GREATER_OR_EQUAL,
    ComparisonOperator.GREATER: ComparisonOperator.LESS,
    ComparisonOperator.GREATER_OR_EQUAL: ComparisonOperator.LESS_OR_EQUAL,
}
"""``literal <op> column`` means ``column <flipped op> literal``."""

_DESCRIPTIONS: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.Like, "LIKE"),
    (exp.ILike, "ILIKE"),
    (exp.SimilarTo, "SIMILAR TO"),
    (exp.RegexpLike, "a regular expression match"),
    (exp.Select, "a query"),
    (exp.Subquery, "a subquery"),
    (exp.Exists, "EXISTS"),
    (exp.Placeholder, "a placeholder"),
    (exp.Parameter, "a parameter"),
    (exp.Cast, "a cast"),
    (exp.Case, "CASE"),
    (exp.Alias, "an alias"),
    (exp.Star, "*"),
    (exp.Array, "an array"),
    (exp.ByteString, "an escape string (E'...')"),
    (exp.HexString, "a hexadecimal literal"),
    (exp.BitString, "a bit-string literal"),
    (exp.RawString, "a dollar-quoted string"),
    (exp.Neg, "arithmetic"),
    (exp.Add, "arithmetic"),
    (exp.Sub, "arithmetic"),
    (exp.Mul, "arithmetic"),
    (exp.Div, "arithmetic"),
    (exp.Mod, "arithmetic"),
    (exp.Binary, "this operator"),
)

_HINTS: dict[type[exp.Expr], str] = {
    exp.Placeholder: "write the value itself",
    exp.Parameter: "write the value itself",
    exp.ByteString: "write a plain 'quoted' string",
    exp.RawString: "write a plain 'quoted' string",
}

_CLASS_NAME = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")
_INTEGER = re.compile(r"[0-9]+")


def _piece(node: exp.Expr) -> str:
    """The SQL text of one part of the filter, on one line."""
    return node.sql(dialect=_READ_DIALECT)


def _describe(node: exp.Expr) -> str:
    for node_type, description in _DESCRIPTIONS:
        if isinstance(node, node_type):
            return description
    if isinstance(node, exp.Anonymous):
        return f"the function {node.name}()"
    if isinstance(node, exp.Func):
        return f"the function {node.sql_name()}()"
    return f"the expression {node.key.upper()}"


def _unsupported(node: exp.Expr, reason: str | None = None) -> NoReturn:
    piece = _piece(node)
    if reason is None:
        reason = f"{_describe(node)} is not supported"
        hint = _HINTS.get(type(node))
        if hint is not None:
            reason = f"{reason}; {hint}"
    raise PlanError(
        f"unsupported filter {piece!r}: {reason}; filters allow {_supported()}",
        field="filter",
        value=piece,
    )


def _unparenthesized(node: exp.Expr) -> exp.Expr:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _column_name(node: exp.Expr) -> str | None:
    """The bare column name ``node`` references, or ``None`` if it is not a column."""
    node = _unparenthesized(node)
    if not isinstance(node, exp.Column):
        return None
    if node.table or isinstance(node.this, exp.Star):
        _unsupported(node, "columns must be bare names, without a table or schema")
    return str(node.name)


def _literal(node: exp.Expr, context: exp.Expr) -> LiteralValue:
    """The Python value of a literal node: str, int, float or bool.

    Raises:
        PlanError: ``node`` is not a plain literal (NULL included: use IS NULL).
    """
    node = _unparenthesized(node)
    negative = False
    if isinstance(node, exp.Neg):
        negative = True
        node = _unparenthesized(node.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        text = str(node.this)
        number: int | float | decimal.Decimal
        try:
            number = int(text) if _INTEGER.fullmatch(text) else _fraction(text)
        except (ValueError, decimal.InvalidOperation):
            _unsupported(node, "this number cannot be read")
        if not negative:
            return number
        # copy_negate: a decimal's unary minus rounds to the context's 28 digits
        return number.copy_negate() if isinstance(number, decimal.Decimal) else -number
    if negative:
        _unsupported(context, "only a number can be negative")
    if isinstance(node, exp.Literal):
        return str(node.this)
    if (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.this in _TEMPORAL_TYPES
    ):
        return _temporal(node)
    if (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.this.is_string
        and node.to.this is exp.DataType.Type.DECIMAL
    ):
        try:
            return decimal.Decimal(str(node.this.this))
        except decimal.InvalidOperation:
            _unsupported(node, "this decimal cannot be read")
    if _is_utc_timestamp(node):
        return _timestamp(node, str(node.expressions[0].this))
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        _unsupported(context, "NULL is not a value here; test for it with IS NULL or IS NOT NULL")
    if isinstance(node, exp.Column):
        _unsupported(context, "a column may only be compared with a literal, not a column")
    _unsupported(node, f"{_describe(node)} is not a literal")


def _fraction(text: str) -> float | decimal.Decimal:
    """A number with a fraction or an exponent as the float whose shortest text names the
    same number (``0.1``, ``1e-3``), or, when no float's does
    (``1.5000000000000000000001``), as the exact ``decimal.Decimal`` it writes: a float
    would silently be another number (docs/plans.md, "Filter values and column types").

    Raises:
        ValueError, decimal.InvalidOperation: not a number.
    """
    number = float(text)
    if not math.isfinite(number) or decimal.Decimal(repr(number)) != decimal.Decimal(text):
        return decimal.Decimal(text)
    return number


_TEMPORAL_TYPES = (exp.DataType.Type.DATE, exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME)


def _temporal(node: exp.Cast) -> LiteralValue:
    """``DATE '...'`` or ``TIMESTAMP '...'`` (a cast of a string) as a date or a datetime."""
    kind = node.to.this
    text = str(node.this.this)
    if kind != exp.DataType.Type.DATE:
        return _timestamp(node, text)
    day = parse_iso_date(text)
    if day is None:
        _unsupported(node, f"{text!r} is {iso_text_problem(text, 'date')}")
    return day


_NANOSECOND_UTC_TIMESTAMP_TYPE = 'Timestamp(Nanosecond, Some("UTC"))'
"""The Arrow type the ``hotdata`` dialect cast a timestamp literal to before it wrote
microseconds (:data:`~hotdata_retrieval.compile.hotdata.UTC_TIMESTAMP_TYPE`): text written
then still reads."""


def _is_utc_timestamp(node: exp.Expr) -> bool:
    """Whether ``node`` is ``arrow_cast('<text>', '<UTC_TIMESTAMP_TYPE>')``."""
    return (
        isinstance(node, exp.Anonymous)
        and str(node.this).lower() == "arrow_cast"
        and len(node.expressions) == 2
        and all(isinstance(part, exp.Literal) and part.is_string for part in node.expressions)
        and str(node.expressions[1].this) in (UTC_TIMESTAMP_TYPE, _NANOSECOND_UTC_TIMESTAMP_TYPE)
    )


def _timestamp(node: exp.Expr, text: str) -> datetime.datetime:
    """ISO 8601 ``text`` (of the cast ``node``) as the datetime it names."""
    moment = parse_iso_timestamp(text)
    if moment is None:
        _unsupported(node, f"{text!r} is {iso_text_problem(text, 'timestamp')}")
    return moment


def _prefix_of(pattern: str, escape: str | None, node: exp.Expr) -> str:
    """The prefix a ``LIKE`` pattern matches (:func:`~hotdata_retrieval.plan.filters.
    like_prefix`; ``\\`` escapes without an ``ESCAPE`` clause).

    Raises:
        PlanError: a pattern that is not a prefix.
    """
    prefix = like_prefix(pattern, "\\" if escape is None else escape)
    if prefix is None:
        _unsupported(
            node,
            "a LIKE pattern must be a prefix ('text%', with % and _ in the text escaped); "
            "use starts_with(column, 'text')",
        )
    return prefix


def _starts_with(node: exp.Expr, *, negated: bool = False) -> Predicate:
    escape: str | None = None
    if isinstance(node, exp.Escape):
        escape = str(_literal(node.expression, node))
        if len(escape) != 1:
            _unsupported(node, "the ESCAPE character must be one character")
        node = node.this
    negated = negated != bool(node.args.get("negate"))
    column = _column_name(node.this)
    if column is None:
        _unsupported(node, "the left side of LIKE must be a column")
    pattern = _literal(node.expression, node)
    if not isinstance(pattern, str):
        _unsupported(node, "a LIKE pattern is a quoted string")
    match = StartsWith(column=column, prefix=_prefix_of(pattern, escape, node))
    return Not(operand=match) if negated else match


_FUNCTION_ALIASES: dict[type[exp.Expr], str] = {exp.ArrayOverlaps: "array_has_any"}
"""sqlglot nodes read as a spelling none of their own names is (``a && ARRAY[...]``)."""


def _function_names(node: exp.Expr) -> set[str]:
    """The names a function call ``node`` may be spelled with, lower case."""
    if isinstance(node, exp.Anonymous):
        return {str(node.this).lower()}
    names = (
        {name.lower() for name in type(node).sql_names()} if isinstance(node, exp.Func) else set()
    )
    alias = _FUNCTION_ALIASES.get(type(node))
    return names | {alias} if alias else names


def _spelled_leaf(node: exp.Expr) -> tuple[PredicateForm, str, exp.Expr, list[exp.Expr]] | None:
    """The registered leaf whose SQL spelling ``node`` is, with how messages name it, its
    column expression and its value expressions; ``None`` if it is none."""
    names: set[str] | None = None
    for form in predicate_forms().values():
        if not form.leaf or form.sql is None:
            continue
        spelling = SQL_SPELLINGS.get(form.sql)
        if spelling is not None:
            if spelling.syntax is not None and isinstance(node, spelling.syntax):
                assert spelling.parts is not None
                column, values = spelling.parts(node)
                return form, spelling.text, column, values
            continue
        if names is None:
            names = _function_names(node)
        if form.sql in names:
            arguments = (
                list(node.expressions)
                if isinstance(node, exp.Anonymous)
                else list(node.iter_expressions())
            )
            if not arguments:
                _unsupported(node, f"{form.sql}() takes a column and a value")
            return form, f"{form.sql}()", arguments[0], arguments[1:]
    return None


def _leaf(node: exp.Expr) -> Predicate | None:
    """``node`` as the registered leaf it spells (``starts_with(column, 'text')``,
    ``array_has_all(column, [...])``...), or ``None``."""
    spelled = _spelled_leaf(node)
    if spelled is None:
        return None
    form, name, column_node, value_nodes = spelled
    shape, count = argument_shape(form)
    if len(value_nodes) != count:
        _unsupported(node, f"{name} takes a column and {count} value{'s' if count > 1 else ''}")
    column = _column_name(column_node)
    if column is None:
        _unsupported(node, f"the first argument of {name} must be a column")
    arguments: list[Any]
    if shape == "list":
        arguments = [_list_values(value_nodes[0], node)]
    else:
        arguments = [_literal(value, node) for value in value_nodes]
    if shape == "text" and not isinstance(arguments[0], str):
        _unsupported(node, f"{name} takes a quoted text")
    built: Predicate = form.from_arguments(column, arguments)
    return built


def _list_values(node: exp.Expr, context: exp.Expr) -> list[LiteralValue]:
    node = _unparenthesized(node)
    if isinstance(node, exp.Array):
        return [_literal(item, context) for item in node.expressions]
    if isinstance(node, exp.Anonymous) and str(node.this).lower() == "make_array":
        return [_literal(item, context) for item in node.expressions]
    _unsupported(context, "the list is written [...], ARRAY[...] or make_array(...)")


def _is_literal(node: exp.Expr) -> bool:
    node = _unparenthesized(node)
    if isinstance(node, exp.Neg):
        node = _unparenthesized(node.this)
    return isinstance(node, (exp.Literal, exp.Boolean, exp.Null))


def _comparison(node: exp.Expr, operator: ComparisonOperator) -> Comparison:
    left, right = node.this, node.expression
    column = _column_name(left)
    if column is not None:
        return Comparison(column=column, operator=operator, value=_literal(right, node))
    column = _column_name(right)
    if column is not None:
        return Comparison(column=column, operator=_FLIPPED[operator], value=_literal(left, node))
    for side in (left, right):
        if not _is_literal(side):
            _unsupported(_unparenthesized(side))
    _unsupported(node, "one side of a comparison must be a column and the other a literal")


def _in_list(node: exp.In, *, negated: bool) -> InList:
    column = _column_name(node.this)
    if column is None:
        _unsupported(node, "the left side of IN must be a column")
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        _unsupported(node, "IN takes a list of literals, not a query")
    if node.args.get("field") is not None:
        _unsupported(node)
    values = [_literal(item, node) for item in node.expressions]
    return InList(column=column, values=values, negated=negated)


def _is_null(node: exp.Is) -> IsNull:
    if not isinstance(node.expression, exp.Null):
        _unsupported(node, "IS only tests for NULL; compare with = TRUE or = FALSE instead")
    column = _column_name(node.this)
    if column is None:
        _unsupported(node, "the left side of IS NULL must be a column")
    return IsNull(column=column, negated=bool(node.args.get("negate")))


def _operands(node: exp.Connector, connective: type[exp.Connector]) -> list[exp.Expr]:
    """The operands of a chain ``a AND b AND c``; a parenthesised group stays one operand.

    sqlglot parses a chain of ``n`` operands into ``n - 1`` nested binary nodes, so they are
    collected with an explicit stack: a 10,000-term chain is no deeper than a 2-term one.
    """
    operands: list[exp.Expr] = []
    pending: list[exp.Expr] = [node]
    while pending:
        side = pending.pop()
        if type(side) is connective:
            pending.append(side.expression)
            pending.append(side.this)
        else:
            operands.append(side)
    return operands


def _guard_column(node: exp.Expr, connective: type[exp.Connector]) -> str | None:
    """The column of a NULL guard the compiler writes (``compile/_null_guards.py``) as an
    operand of a ``connective`` chain — ``(c IS NOT NULL OR NULL)`` in an AND chain, ``(c IS
    NULL AND NULL)`` in an OR chain — else ``None``."""
    node = _unparenthesized(node)
    inner = exp.Or if connective is exp.And else exp.And
    if type(node) is not inner or not isinstance(node.expression, exp.Null):
        return None
    test = node.this
    negated = isinstance(test, exp.Not)
    if negated:
        test = test.this
    if not isinstance(test, exp.Is) or not isinstance(test.expression, exp.Null):
        return None
    if negated == bool(test.args.get("negate")):  # IS NULL
        return None if connective is exp.And else _column_name(test.this)
    return _column_name(test.this) if connective is exp.And else None


def _chain(node: exp.And | exp.Or) -> Predicate:
    """An AND or OR chain; a compiled NULL guard among its operands is read as nothing, for
    it leaves the rest as it is (``compile/_null_guards.py``), which the rest must show by
    being NULL wherever the guarded column is."""
    connective = type(node)
    kind = And if connective is exp.And else Or
    operands: list[exp.Expr] = []
    guards: list[tuple[str, exp.Expr]] = []
    for operand in _operands(node, connective):
        column = _guard_column(operand, connective)
        if column is None:
            operands.append(operand)
        else:
            guards.append((column, operand))
    if not guards:
        return kind(operands=[_translate(operand) for operand in operands])
    from hotdata_retrieval.compile._null_guards import strict_column

    if not operands:
        _unsupported(node, "a constant is not a condition; compare a column with it")
    translated = [_translate(operand) for operand in operands]
    guarded = translated[0] if len(translated) == 1 else kind(operands=translated)
    for column, guard in guards:
        if strict_column(guarded) != column:
            _unsupported(
                guard, f"a NULL guard must go with a test that is NULL wherever {column} is"
            )
    return guarded


def _translate(node: exp.Expr) -> Predicate:
    if isinstance(node, exp.Paren):
        return _translate(node.this)
    if isinstance(node, (exp.And, exp.Or)):
        return _chain(node)
    if isinstance(node, exp.Not):
        operand = node.this
        if isinstance(operand, exp.In):
            # ``a NOT IN (...)`` parses as NOT over IN; ``NOT (a IN (...))`` keeps the group.
            return _in_list(operand, negated=True)
        if isinstance(operand, (exp.Like, exp.Escape)):
            return _starts_with(operand, negated=True)
        return Not(operand=_translate(operand))
    if isinstance(node, (exp.Like, exp.Escape)):
        return _starts_with(node)
    leaf = _leaf(node)
    if leaf is not None:
        return leaf
    operator = _COMPARISONS.get(type(node))
    if operator is not None:
        return _comparison(node, operator)
    if isinstance(node, exp.In):
        return _in_list(node, negated=False)
    if isinstance(node, exp.Is):
        return _is_null(node)
    if isinstance(node, exp.Column):
        _unsupported(node, "a bare column is not a condition; compare it, e.g. = TRUE")
    if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
        _unsupported(node, "a constant is not a condition; compare a column with it")
    _unsupported(node)


_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE})
_BEFORE_PREFIX_NOT = frozenset({None, *_OPEN, TokenType.AND, TokenType.OR, TokenType.NOT})

MAX_TEXT_NESTING = MAX_FILTER_DEPTH + 4
"""How deep filter text may nest brackets and prefix ``NOT`` operators before it is parsed.

sqlglot's parser is recursive descent: about 21 Python frames per parenthesised group and 10
per ``NOT``, so text nested a few hundred deep would exhaust Python's stack inside the parser.
A filter within :data:`~hotdata_retrieval.plan.filters.MAX_FILTER_DEPTH` nests no deeper than
its depth when written with the fewest parentheses (as the compiler writes it); four spare
levels allow redundant ones, such as a tool wrapping the whole filter in a pair or two. At
this bound the parser needs about 430 frames."""


def _nesting(tokens: list[Token]) -> int:
    """How deep ``tokens`` nest: open brackets, plus the prefix ``NOT`` operators in force.

    A prefix ``NOT`` binds tighter than ``AND`` and ``OR``, so it is in force until the next
    ``AND``/``OR`` of its bracket level, or until that bracket closes; ``a NOT IN`` and
    ``IS NOT NULL`` are not prefixes. One pass over the tokens.
    """
    negations = [0]  # prefix NOTs in force at each open bracket level
    in_force = 0
    deepest = 0
    previous: TokenType | None = None
    for token in tokens:
        kind = token.token_type
        if kind in _OPEN:
            negations.append(0)
        elif kind in _CLOSE:
            if len(negations) > 1:
                in_force -= negations.pop()
        elif kind in (TokenType.AND, TokenType.OR):
            in_force -= negations[-1]
            negations[-1] = 0
        elif kind is TokenType.NOT and previous in _BEFORE_PREFIX_NOT:
            negations[-1] += 1
            in_force += 1
        deepest = max(deepest, len(negations) - 1 + in_force)
        previous = kind
    return deepest


def _parse_error(text: str, error: SqlglotError) -> NoReturn:
    detail: Any = None
    if isinstance(error, ParseError) and error.errors:
        first = error.errors[0]
        detail = f"{first.get('description')} (line {first.get('line')}, column {first.get('col')})"
    if not detail:
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
    detail = _CLASS_NAME.sub(r"\1", str(detail))
    raise PlanError(f"cannot parse filter {text!r}: {detail}", field="filter", value=text)


def filter_from_expression(condition: exp.Expr) -> Predicate:
    """A parsed SQL condition (say the ``WHERE`` of a statement a caller sent) as a typed
    predicate, read as :func:`parse_filter` reads text: no text is rendered or parsed again.

    Raises:
        PlanError: anything outside the grammar (module docstring), or nested too deeply.
    """
    try:
        return _translate(condition)
    except RecursionError:
        raise PlanError(
            "the filter is nested too deeply", field="filter", value=_piece(condition)
        ) from None


def parse_filter(text: str) -> Predicate:
    """Parse one SQL boolean expression into a typed filter predicate.

    ``AND``/``OR`` chains become one :class:`And`/:class:`Or` with every operand; a
    parenthesised group stays a nested node. ``a NOT IN (...)`` is
    ``InList(negated=True)`` and ``a IS NOT NULL`` is ``IsNull(negated=True)``; any other
    ``NOT`` is a :class:`Not`.

    Args:
        text: e.g. ``"lang = 'en' AND (year >= 2020 OR tag IN ('a', 'b'))"``.

    Returns:
        The predicate tree (:class:`Comparison`, :class:`InList`, :class:`IsNull`,
        :class:`And`, :class:`Or` or :class:`Not`).

    Raises:
        PlanError: the text does not parse, holds more or fewer than one expression, or uses
            anything outside the grammar above (functions, subqueries, LIKE, BETWEEN,
            arithmetic, casts, two columns compared, NULL compared with ``=``, ...). The
            one-line message quotes the unsupported part of the text.

    >>> parse_filter("lang = 'en' AND (year >= 2020 OR tag IN ('a', 'b'))")
    ... # doctest: +NORMALIZE_WHITESPACE
    And(operands=(Comparison(column='lang', operator=<ComparisonOperator.EQUAL: '='>,
    value='en'), Or(operands=(Comparison(column='year',
    operator=<ComparisonOperator.GREATER_OR_EQUAL: '>='>, value=2020), InList(column='tag',
    values=('a', 'b'), negated=False)))))
    >>> parse_filter("2020 < year")
    Comparison(column='year', operator=<ComparisonOperator.GREATER: '>'>, value=2020)
    """
    if not isinstance(text, str):
        raise PlanError(f"filter must be a string, got {text!r}", field="filter", value=text)
    if "\x00" in text:
        raise PlanError(
            f"filter must not contain a NUL byte, got {text!r}", field="filter", value=text
        )
    if text.strip() == "":
        raise PlanError(f"filter must not be empty, got {text!r}", field="filter", value=text)
    dialect = Dialect.get_or_raise(_READ_DIALECT)
    try:
        tokens = dialect.tokenize(text)
        nesting = _nesting(tokens)
        if nesting > MAX_TEXT_NESTING:
            raise PlanError(
                f"cannot parse filter {text!r}: it nests parentheses and NOTs {nesting} deep, "
                f"at most {MAX_TEXT_NESTING} (the filter is nested too deeply: AND/OR/NOT "
                f"may nest {MAX_FILTER_DEPTH} levels)",
                field="filter",
                value=text,
            )
        statements = [
            statement for statement in dialect.parser().parse(tokens, text) if statement is not None
        ]
    except SqlglotError as error:
        _parse_error(text, error)
    except RecursionError:
        # Only text outside the grammar gets here (e.g. thousands of unary minus signs or
        # nested CASEs, which _nesting does not count): the parser ran out of stack.
        raise PlanError(
            f"cannot parse filter {text!r}: it is nested too deeply", field="filter", value=text
        ) from None
    if len(statements) != 1:
        raise PlanError(
            f"filter {text!r} must be one expression, got {len(statements)} statements",
            field="filter",
            value=text,
        )
    return _translate(statements[0])


def filter_sql(predicate: Predicate) -> str:
    """``predicate`` as Hotdata-dialect SQL text (a ``WHERE`` condition), for a reader of
    filter text (LanceDB): identifiers quoted where needed, literals escaped, an empty ``IN``
    list the constant it stands for, and the smallest 64-bit integer written
    ``(-9223372036854775807 - 1)``: LanceDB reads ``-9223372036854775808`` as the negation
    of a number too large for a 64-bit integer, a float, which it refuses to compare with an
    integer column.

    >>> from hotdata_retrieval.plan.filters import Comparison
    >>> filter_sql(Comparison(column="n", operator=">", value=-(2**63)))
    'n > (-9223372036854775807 - 1)'
    """
    from hotdata_retrieval.compile import get_dialect
    from hotdata_retrieval.compile.compiler import LiteralBinder, compiler_for

    profile = get_dialect("hotdata")
    compiler = compiler_for(profile, LiteralBinder(profile))
    tree = compiler.predicate(predicate)
    tree = tree.transform(_int64_min, copy=False)
    text: str = profile.sqlglot_dialect().generate(tree, copy=False)
    return text


_INT64_MIN_MAGNITUDE = str(2**63)


def _int64_min(node: Any) -> Any:
    """``-9223372036854775808`` as ``(-9223372036854775807 - 1)``, every other node as it
    is."""
    if not (
        isinstance(node, exp.Neg)
        and isinstance(node.this, exp.Literal)
        and not node.this.is_string
        and node.this.this == _INT64_MIN_MAGNITUDE
    ):
        return node
    largest = exp.Neg(this=exp.Literal.number(2**63 - 1))
    return exp.Paren(this=exp.Sub(this=largest, expression=exp.Literal.number(1)))
