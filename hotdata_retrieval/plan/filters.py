"""A small typed predicate tree for filtering search candidates.

Filters are applied inside every branch of a plan, in the same query as the branch's
``ORDER BY ... LIMIT``, never after fusion: wrapping a computed top-k in an outer filter
silently returns fewer rows (engine contract §3.3 item 11, hotdata-langchain
``docs/vectorstore-plan.md``).

An empty ``IN`` list matches no row and an empty ``NOT IN`` list matches every row (see
:class:`InList`).

Predicates compose with ``&``, ``|`` and ``~``:

>>> both = Comparison(column="lang", operator="=", value="en") & IsNull(column="deleted_at")
>>> [type(operand).__name__ for operand in both.operands]
['Comparison', 'IsNull']
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.values import LiteralValue, check_literal

__all__ = [
    "And",
    "Comparison",
    "ComparisonOperator",
    "InList",
    "IsNull",
    "Not",
    "Or",
    "Predicate",
    "is_predicate",
]


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
    """``&``, ``|`` and ``~`` for every predicate node."""

    def __and__(self, other: Predicate) -> And:
        return And(operands=(self, other))

    def __or__(self, other: Predicate) -> Or:
        return Or(operands=(self, other))

    def __invert__(self) -> Not:
        return Not(operand=self)


def _operator(value: Any) -> ComparisonOperator:
    return ComparisonOperator.parse(value)


def _filter_value(value: Any) -> LiteralValue:
    return check_literal(value, label="filter value")


def _filter_column(value: Any) -> str:
    return normalize_identifier(value, label="filter column")


@attrs.frozen(kw_only=True)
class Comparison(_Composable):
    """``column <operator> value``; NULL column values never match (SQL semantics)."""

    column: str = attrs.field(converter=_filter_column)
    operator: ComparisonOperator = attrs.field(converter=_operator)
    value: LiteralValue = attrs.field(converter=_filter_value, metadata={"bound": True})


def _literal_tuple(values: Any) -> tuple[LiteralValue, ...]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"IN list values must be a sequence, got {values!r}", field="values", value=values
        )
    return tuple(check_literal(value, label="IN list value") for value in values)


@attrs.frozen(kw_only=True)
class InList(_Composable):
    """``column IN (values)``, or ``NOT IN`` when ``negated``.

    An empty list has one meaning: ``IN ()`` matches no row and ``NOT IN ()`` matches every
    row, NULLs included (it is rendered as the constant ``TRUE``/``FALSE``, since ``IN ()`` is
    not valid SQL).
    """

    column: str = attrs.field(converter=_filter_column)
    values: tuple[LiteralValue, ...] = attrs.field(
        converter=_literal_tuple, metadata={"bound_each": True}
    )
    negated: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


@attrs.frozen(kw_only=True)
class IsNull(_Composable):
    """``column IS NULL``, or ``IS NOT NULL`` when ``negated``."""

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


@attrs.frozen(kw_only=True)
class And(_Composable):
    """All operands hold (two or more)."""

    operands: tuple[Predicate, ...] = attrs.field(converter=_operands)


@attrs.frozen(kw_only=True)
class Or(_Composable):
    """At least one operand holds (two or more)."""

    operands: tuple[Predicate, ...] = attrs.field(converter=_operands)


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
    """The operand does not hold."""

    operand: Predicate = attrs.field(converter=check_predicate)


Predicate = Comparison | InList | IsNull | And | Or | Not
"""Any filter node."""


def is_predicate(value: Any) -> bool:
    """Return whether ``value`` is a filter node."""
    return isinstance(value, (Comparison, InList, IsNull, And, Or, Not))


def predicate_columns(predicate: Predicate) -> set[str]:
    """Every column a predicate reads."""
    if isinstance(predicate, (And, Or)):
        return set().union(*(predicate_columns(operand) for operand in predicate.operands))
    if isinstance(predicate, Not):
        return predicate_columns(predicate.operand)
    return {predicate.column}
