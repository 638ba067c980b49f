"""A small typed predicate tree for filtering search candidates.

Filters are applied inside every branch of a plan, in the same query as the branch's
``ORDER BY ... LIMIT``, never after fusion: wrapping a computed top-k in an outer filter
silently returns fewer rows (engine contract §3.3 item 11, hotdata-langchain
``docs/vectorstore-plan.md``).

An empty ``IN`` list matches no row and an empty ``NOT IN`` list matches every row (see
:class:`InList`).

Predicates compose with ``&``, ``|`` and ``~``; chaining one connective extends one node
rather than nesting a new one, so ``functools.reduce(operator.and_, predicates)`` gives one flat
:class:`And`:

>>> both = Comparison(column="lang", operator="=", value="en") & IsNull(column="deleted_at")
>>> [type(operand).__name__ for operand in both.operands]
['Comparison', 'IsNull']
>>> len((both & Comparison(column="year", operator=">", value=2020)).operands)
3

AND, OR and NOT nest at most :data:`MAX_FILTER_DEPTH` levels deep (``docs/plans.md``,
"Limits"); a deeper filter is refused with :class:`~hotdata_retrieval.errors.PlanError` when it
is built.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Generic, TypeVar, cast

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.values import LiteralValue, check_literal
from hotdata_retrieval.plan.visitor import NodeVisitor

__all__ = [
    "MAX_FILTER_DEPTH",
    "MAX_FILTER_TERMS",
    "MAX_IN_LIST_VALUES",
    "And",
    "Comparison",
    "ComparisonOperator",
    "InList",
    "IsNull",
    "Not",
    "Or",
    "Predicate",
    "PredicateVisitor",
    "filter_depth",
    "filter_terms",
    "is_predicate",
    "predicate_columns",
]

MAX_FILTER_TERMS = 1_024
"""The most comparisons, ``IN`` lists and ``IS NULL`` tests one filter may hold. A long flat
chain nests no deeper, but the engine's planner walks each ``AND``/``OR`` operand recursively:
DataFusion 55 overflows its stack on a chain of about 10,000 terms (the process dies) and plans
thousands slowly. For a long list of values use one ``IN`` list."""

MAX_IN_LIST_VALUES = 10_000
"""The most values one ``IN`` list may hold: DataFusion plans a 1,000,000-value list in about a
minute. To filter by more keys, load them into a table and join in SQL."""

MAX_FILTER_DEPTH = 16
"""The deepest a filter may nest AND, OR and NOT: the most such nodes on one path from the root
to a comparison (``a = 1`` is depth 0, ``a = 1 AND b = 2`` depth 1, ``NOT (a = 1 OR b = 2)``
depth 2). Chaining one connective does not nest: ``a AND b AND c`` is one AND node.

Why 16: a compiled filter is read back by recursive-descent code that spends Python stack per
level — sqlglot's parser (``sqlglot.parse_one``, the linter ``hotdata_retrieval.lint.lint``,
:func:`~hotdata_retrieval.compile.parse_filter`) about 21 frames per parenthesised AND/OR
group, sqlglot's generator about 6, the plan's own walks 2 to 4. Measured with sqlglot 30.30,
parsing alternating AND/OR groups fails at about 45 levels under Python's default limit of
1,000 frames; at 16 levels parsing the compiled statement takes about 350 frames, leaving
two-thirds of the stack to the caller, whatever it is. No real filter comes near: hand-written
and generated ones nest a few levels, and Elasticsearch 7 capped bool queries at 20 levels for
the same reason (``indices.query.bool.max_nested_depth``)."""


class ComparisonOperator(str, enum.Enum):
    """A binary comparison operator, valued by its SQL spelling."""

    EQUAL = "="
    NOT_EQUAL = "!="
    LESS = "<"
    LESS_OR_EQUAL = "<="
    GREATER = ">"
    GREATER_OR_EQUAL = ">="

    @classmethod
    def parse(cls, value: Any) -> ComparisonOperator:
        """Accept an operator or its spelling (``<>`` is accepted for ``!=``).

        Raises:
            PlanError: an unknown operator.
        """
        if isinstance(value, ComparisonOperator):
            return value
        if value == "<>":
            return cls.NOT_EQUAL
        if value == "==":
            return cls.EQUAL
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(member.value for member in cls)
            raise PlanError(
                f"unknown comparison operator {value!r}; expected one of {known}",
                field="operator",
                value=value,
            ) from None


class _Composable:
    """``&``, ``|`` and ``~`` for every predicate node.

    ``&`` of an :class:`And` (either side) extends its operands instead of nesting it, and
    ``|`` of an :class:`Or` likewise: the same filter, one level shallower.
    """

    def __and__(self, other: Predicate) -> And:
        return And(operands=(*_spread(self, And), *_spread(other, And)))

    def __or__(self, other: Predicate) -> Or:
        return Or(operands=(*_spread(self, Or), *_spread(other, Or)))

    def __invert__(self) -> Not:
        return Not(operand=self)


def _spread(value: Any, connective: type[And] | type[Or]) -> tuple[Any, ...]:
    """The operands of ``value`` if it is a ``connective`` node, else ``(value,)``."""
    if isinstance(value, connective):
        return value.operands
    return (value,)


def filter_depth(predicate: Predicate) -> int:
    """How deep ``predicate`` nests AND, OR and NOT (0 for a single comparison).

    See :data:`MAX_FILTER_DEPTH`. Constant time: each node records its depth when it is built.

    >>> a, b = Comparison(column="a", operator="=", value=1), IsNull(column="b")
    >>> filter_depth(a), filter_depth(a & b), filter_depth(~(a | b))
    (0, 1, 2)
    """
    if isinstance(predicate, (And, Or, Not)):
        return predicate._depth
    return 0


def filter_terms(predicate: Predicate) -> int:
    """How many comparisons, ``IN`` lists and ``IS NULL`` tests ``predicate`` holds (see
    :data:`MAX_FILTER_TERMS`). Constant time: each connective records its count when built.

    >>> a, b = Comparison(column="a", operator="=", value=1), IsNull(column="b")
    >>> filter_terms(a), filter_terms(a & b), filter_terms(~(a | b | a))
    (1, 2, 3)
    """
    if isinstance(predicate, (And, Or, Not)):
        return predicate._terms
    return 1


def too_deep_message(depth: int) -> str:
    """The message of the :class:`PlanError` for a filter ``depth`` levels deep."""
    return (
        f"filter is nested too deeply: AND/OR/NOT {depth} levels, at most {MAX_FILTER_DEPTH} "
        "(MAX_FILTER_DEPTH); a chain of one connective is one level (a AND b AND c)"
    )


def _nested(operands: tuple[Predicate, ...]) -> int:
    """The depth of a connective over ``operands``.

    Raises:
        PlanError: deeper than :data:`MAX_FILTER_DEPTH`.
    """
    depth = 1 + max(filter_depth(operand) for operand in operands)
    if depth > MAX_FILTER_DEPTH:
        raise PlanError(too_deep_message(depth), field="filter", value=depth)
    return depth


def _counted(operands: tuple[Predicate, ...]) -> int:
    """The number of terms of a connective over ``operands``.

    Raises:
        PlanError: more than :data:`MAX_FILTER_TERMS`.
    """
    terms = sum(filter_terms(operand) for operand in operands)
    if terms > MAX_FILTER_TERMS:
        raise PlanError(
            f"filter has {terms} terms, at most {MAX_FILTER_TERMS} (MAX_FILTER_TERMS); put a "
            "long list of values for one column into one IN list",
            field="filter",
            value=terms,
        )
    return terms


def _operator(value: Any) -> ComparisonOperator:
    return ComparisonOperator.parse(value)


def _filter_value(value: Any) -> LiteralValue:
    return check_literal(value, label="filter value")


def _filter_column(value: Any) -> str:
    return normalize_identifier(value, label="filter column")


@attrs.frozen(kw_only=True)
class Comparison(_Composable):
    """``column <operator> value``; NULL column values never match (SQL semantics)."""

    visit_name: ClassVar[str] = "comparison"

    column: str = attrs.field(converter=_filter_column)
    operator: ComparisonOperator = attrs.field(converter=_operator)
    value: LiteralValue = attrs.field(converter=_filter_value, metadata={"bound": True})


def _literal_tuple(values: Any) -> tuple[LiteralValue, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"IN list values must be a sequence, got {values!r}", field="values", value=values
        )
    checked = tuple(check_literal(value, label="IN list value") for value in values)
    if len(checked) > MAX_IN_LIST_VALUES:
        raise PlanError(
            f"IN list has {len(checked)} values, at most {MAX_IN_LIST_VALUES} "
            "(MAX_IN_LIST_VALUES); to filter by more, load them into a table and join in SQL",
            field="values",
            value=len(checked),
        )
    return checked


@attrs.frozen(kw_only=True)
class InList(_Composable):
    """``column IN (values)``, or ``NOT IN`` when ``negated``.

    An empty list has one meaning: ``IN ()`` matches no row and ``NOT IN ()`` matches every
    row, NULLs included (it is rendered as the constant ``TRUE``/``FALSE``, since ``IN ()`` is
    not valid SQL).
    """

    visit_name: ClassVar[str] = "in_list"

    column: str = attrs.field(converter=_filter_column)
    values: tuple[LiteralValue, ...] = attrs.field(
        converter=_literal_tuple, metadata={"bound_each": True}
    )
    negated: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


@attrs.frozen(kw_only=True)
class IsNull(_Composable):
    """``column IS NULL``, or ``IS NOT NULL`` when ``negated``."""

    visit_name: ClassVar[str] = "is_null"

    column: str = attrs.field(converter=_filter_column)
    negated: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def _operands(values: Any) -> tuple[Predicate, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"operands must be a sequence of predicates, got {values!r}",
            field="operands",
            value=values,
        )
    operands = tuple(values)
    if len(operands) < 2:
        raise PlanError(
            f"AND/OR needs at least two operands, got {len(operands)}",
            field="operands",
            value=values,
        )
    for operand in operands:
        check_predicate(operand)
    return operands


_DEPTH = attrs.field(init=False, eq=False, repr=False)
"""A connective's nesting depth (:func:`filter_depth`), set once it is built."""

_TERMS = attrs.field(init=False, eq=False, repr=False)
"""A connective's number of terms (:func:`filter_terms`), set once it is built."""


@attrs.frozen(kw_only=True)
class And(_Composable):
    """All operands hold (two or more).

    Raises:
        PlanError: an operand is not a predicate, fewer than two operands, or the result nests
            deeper than :data:`MAX_FILTER_DEPTH`.
    """

    visit_name: ClassVar[str] = "and"

    operands: tuple[Predicate, ...] = attrs.field(converter=_operands)
    _depth: int = _DEPTH
    _terms: int = _TERMS

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_depth", _nested(self.operands))
        object.__setattr__(self, "_terms", _counted(self.operands))


@attrs.frozen(kw_only=True)
class Or(_Composable):
    """At least one operand holds (two or more).

    Raises:
        PlanError: as :class:`And`.
    """

    visit_name: ClassVar[str] = "or"

    operands: tuple[Predicate, ...] = attrs.field(converter=_operands)
    _depth: int = _DEPTH
    _terms: int = _TERMS

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_depth", _nested(self.operands))
        object.__setattr__(self, "_terms", _counted(self.operands))


def check_predicate(value: Any) -> Predicate:
    """Return ``value`` if it is a predicate node.

    Raises:
        PlanError: anything else.
    """
    if not is_predicate(value):
        raise PlanError(f"expected a filter predicate, got {value!r}", field="filter", value=value)
    return value  # type: ignore[no-any-return]


@attrs.frozen(kw_only=True)
class Not(_Composable):
    """The operand does not hold.

    Raises:
        PlanError: the operand is not a predicate, or the result nests deeper than
            :data:`MAX_FILTER_DEPTH`.
    """

    visit_name: ClassVar[str] = "not"

    operand: Predicate = attrs.field(converter=check_predicate)
    _depth: int = _DEPTH
    _terms: int = _TERMS

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_depth", _nested((self.operand,)))
        object.__setattr__(self, "_terms", _counted((self.operand,)))


Predicate = Comparison | InList | IsNull | And | Or | Not
"""Any filter node."""


def is_predicate(value: Any) -> bool:
    """Return whether ``value`` is a filter node."""
    return isinstance(value, (Comparison, InList, IsNull, And, Or, Not))


R = TypeVar("R")


class PredicateVisitor(NodeVisitor, Generic[R]):
    """One interpretation of the filter tree: a ``visit_<name>`` method per predicate node.

    Subclasses implement all six methods (each returns the interpretation of its node, ``R``)
    and call :meth:`predicate` on operands; the connectives recurse at most
    :data:`MAX_FILTER_DEPTH` levels. The library's interpretations: SQL (the compiler's
    :class:`~hotdata_retrieval.compile.compiler.PlanCompiler`), filter text (``filter_text``),
    the JSON document (``plan.document``), the columns read (:func:`predicate_columns`),
    SQL's three-valued truth for one Python row (``spec.cases``) and the local engine's row
    mask over pyarrow compute kernels (``engines.local.masks.ArrowMask``).

    >>> class Text(PredicateVisitor[str]):
    ...     def visit_comparison(self, node):
    ...         return f"{node.column} {node.operator.value} {node.value!r}"
    ...     def visit_in_list(self, node):
    ...         return f"{node.column} {'NOT IN' if node.negated else 'IN'} {list(node.values)}"
    ...     def visit_is_null(self, node):
    ...         return f"{node.column} IS {'NOT ' if node.negated else ''}NULL"
    ...     def visit_and(self, node):
    ...         return "(" + " AND ".join(map(self.predicate, node.operands)) + ")"
    ...     def visit_or(self, node):
    ...         return "(" + " OR ".join(map(self.predicate, node.operands)) + ")"
    ...     def visit_not(self, node):
    ...         return f"NOT {self.predicate(node.operand)}"
    >>> Text().predicate(~IsNull(column="a") & Comparison(column="b", operator=">", value=1))
    '(NOT a IS NULL AND b > 1)'
    """

    def predicate(self, node: Predicate) -> R:
        """The interpretation of ``node`` (dispatched on its ``visit_name``).

        Raises:
            UnvisitableNodeError: ``node`` is not a predicate this visitor knows.
        """
        return cast(R, self.visit(node))

    def visit_comparison(self, node: Comparison) -> R:
        """``column <operator> value``."""
        raise NotImplementedError

    def visit_in_list(self, node: InList) -> R:
        """``column [NOT] IN (values)``; ``values`` may be empty."""
        raise NotImplementedError

    def visit_is_null(self, node: IsNull) -> R:
        """``column IS [NOT] NULL``."""
        raise NotImplementedError

    def visit_and(self, node: And) -> R:
        """Every operand holds."""
        raise NotImplementedError

    def visit_or(self, node: Or) -> R:
        """At least one operand holds."""
        raise NotImplementedError

    def visit_not(self, node: Not) -> R:
        """The operand does not hold."""
        raise NotImplementedError


class _Columns(PredicateVisitor[None]):
    """Collects the columns a predicate reads into ``columns``."""

    def __init__(self) -> None:
        self.columns: set[str] = set()

    def visit_comparison(self, node: Comparison) -> None:
        self.columns.add(node.column)

    def visit_in_list(self, node: InList) -> None:
        self.columns.add(node.column)

    def visit_is_null(self, node: IsNull) -> None:
        self.columns.add(node.column)

    def visit_and(self, node: And) -> None:
        for operand in node.operands:
            self.predicate(operand)

    def visit_or(self, node: Or) -> None:
        for operand in node.operands:
            self.predicate(operand)

    def visit_not(self, node: Not) -> None:
        self.predicate(node.operand)


def predicate_columns(predicate: Predicate) -> set[str]:
    """Every column a predicate reads.

    >>> sorted(predicate_columns(~IsNull(column="b") | InList(column="a", values=[])))
    ['a', 'b']
    """
    visitor = _Columns()
    visitor.predicate(predicate)
    return visitor.columns
