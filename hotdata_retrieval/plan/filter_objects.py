"""Filters as JSON objects: the interchange form agents and adapters pass.

The shape LangChain, LlamaIndex, Chroma and retrieval-bridge pass metadata filters in, parsed
into the same predicate nodes as every other filter (:mod:`hotdata_retrieval.plan.filters`):

>>> filter_from_object({"status": "open", "rating": {"$gte": 4}})
And(operands=(Comparison(column='status', operator=<ComparisonOperator.EQUAL: '='>, \
value='open'), Comparison(column='rating', operator=<ComparisonOperator.GREATER_OR_EQUAL: \
'>='>, value=4)))

- ``{"column": value}`` is equality; several keys, and several operators on one column, are
  all required (AND);
- ``{"column": {"$op": value}}`` with ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``;
  ``$in`` and ``$nin`` (a list); ``$exists`` (``true``: not NULL; ``false``: NULL);
  ``$like`` (a prefix pattern ``'text%'``, as filter text reads it); ``$all``, ``$any`` (a
  list column holds every, or some, of a list) and ``$contains`` (it holds one value); and
  the ``object_operator`` of each operator of the operator table
  (:func:`~hotdata_retrieval.plan.filters.register_predicate`), its value the operator's
  value (``{"$starts_with": "text"}``) or, for several, the list of them
  (:func:`filter_object_operators` lists every operator);
- ``{"$and": [...]}``, ``{"$or": [...]}``, ``{"$not": {...}}`` combine objects.

Values are JSON's: text, numbers, booleans (a date or a timestamp is ISO 8601 text, which
engines read as the column's type; from Python, a ``date`` or ``datetime``). ``null`` is no
value: test for it with ``$exists``. An empty object is no filter (``None``). Every bad key,
operator or value is one :class:`~hotdata_retrieval.errors.PlanError` naming where it is
(``filter.$or[1].rating.$gte``) and what would be valid; the nesting and size limits are the
predicate tree's (``MAX_FILTER_DEPTH``, ``MAX_FILTER_TERMS``).
"""

from __future__ import annotations

import datetime
import decimal
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import (
    MAX_FILTER_DEPTH,
    And,
    Comparison,
    ContainsAll,
    ContainsAny,
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
    too_deep_message,
)
from hotdata_retrieval.plan.values import is_boolean, json_type_phrase

_COMPARISONS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_LISTS = ("$in", "$nin", "$all", "$any")
_OWN_OPERATORS = (*_COMPARISONS, *_LISTS, "$exists", "$like", "$contains")
"""The operators this module spells itself; every other one is a registered node's
``object_operator`` (:func:`~hotdata_retrieval.plan.filters.register_predicate`)."""

_CONNECTIVES = ("$and", "$or", "$not")

_SCALAR: dict[str, Any] = {"type": ["string", "number", "boolean"]}
_SCALARS: dict[str, Any] = {"type": "array", "items": _SCALAR}


def _table_operators() -> dict[str, PredicateForm]:
    """The registered leaves that have an ``object_operator``, by it."""
    return {
        form.object_operator: form
        for form in predicate_forms().values()
        if form.leaf and form.object_operator is not None
    }


def filter_object_operators() -> tuple[str, ...]:
    """The column operators of the object form, as messages list them: this module's own,
    then each registered node's, in table order."""
    return (*_OWN_OPERATORS, *_table_operators())


def _argument_schema(form: PredicateForm) -> dict[str, Any]:
    shape, count = argument_shape(form)
    if shape == "text":
        return {"type": "string"}
    if shape == "value":
        return dict(_SCALAR)
    if shape == "list":
        return dict(_SCALARS)
    return {**_SCALARS, "minItems": count, "maxItems": count}


def _spelling(operator: str, form: PredicateForm | None) -> str:
    if form is None or argument_shape(form)[0] != "values":
        return operator
    return f"{operator} ([{', '.join(name for name, _ in form.value_fields)}])"


def filter_object_schema() -> dict[str, Any]:
    """JSON Schema of the object form with every operator registered now, for a tool's
    arguments (operands of ``$and``, ``$or`` and ``$not`` are objects of the same form).
    :data:`FILTER_OBJECT_SCHEMA` is the schema of the built-in operators."""
    table = _table_operators()
    listed = ", ".join(
        [*_COMPARISONS, "$in", "$nin", "$exists"]
        + [_spelling(operator, form) for operator, form in table.items()]
        + ["$like ('text%')", "$all", "$any", "$contains"]
    )
    return {
        "type": "object",
        "description": (
            'Rows to keep, as a JSON object: {"column": value} for equality, '
            f'{{"column": {{"$gte": 4}}}} with {listed}; {{"$and": [...]}}, '
            '{"$or": [...]}, {"$not": {...}}. Several keys must all hold. Dates are ISO 8601 '
            "text."
        ),
        "additionalProperties": {
            "anyOf": [
                _SCALAR,
                {
                    "type": "object",
                    "properties": {
                        **{operator: _SCALAR for operator in _COMPARISONS},
                        **{operator: _SCALARS for operator in _LISTS},
                        "$exists": {"type": "boolean"},
                        "$like": {"type": "string"},
                        "$contains": _SCALAR,
                        **{operator: _argument_schema(form) for operator, form in table.items()},
                    },
                    "additionalProperties": False,
                    "minProperties": 1,
                },
            ]
        },
        "properties": {
            "$and": {"type": "array", "items": {"type": "object"}, "minItems": 1},
            "$or": {"type": "array", "items": {"type": "object"}, "minItems": 1},
            "$not": {"type": "object"},
        },
    }


FILTER_OBJECT_OPERATORS = filter_object_operators()
"""The column operators of the built-in object form, in the order messages list them."""

FILTER_OBJECT_SCHEMA: dict[str, Any] = filter_object_schema()
"""JSON Schema of the built-in object form, for a tool's arguments (operands of ``$and``,
``$or`` and ``$not`` are objects of the same form)."""


def _fail(message: str, where: str, value: Any) -> PlanError:
    return PlanError(f"{where}: {message}", field="filter", value=value)


def _scalar(value: Any, where: str) -> Any:
    if value is None:
        raise _fail('null is no value; test for NULL with {"$exists": false}', where, value)
    if isinstance(value, (str, numbers.Real, decimal.Decimal, datetime.date)) or is_boolean(value):
        return value  # NumPy's numbers and booleans too: the filter's nodes read them
    raise _fail(
        f"expected text, a number or a boolean, got {json_type_phrase(value)}",
        where,
        value,
    )


def _scalars(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise _fail(f"expected a list, got {json_type_phrase(value)}", where, value)
    return [_scalar(item, f"{where}[{index}]") for index, item in enumerate(value)]


def _like_prefix(pattern: Any, where: str) -> str:
    if not isinstance(pattern, str):
        raise _fail(f"expected a pattern 'text%', got {json_type_phrase(pattern)}", where, pattern)
    prefix = like_prefix(pattern)
    if prefix is None:
        raise _fail(
            f"{pattern!r} is not a prefix pattern: only 'text%' is supported (escape % and _ "
            'in the text with \\); or use {"$starts_with": "text"}',
            where,
            pattern,
        )
    return prefix


def _comparison(operator: str) -> Callable[[str, Any, str], Predicate]:
    def build(column: str, value: Any, where: str) -> Predicate:
        return Comparison(column=column, operator=operator, value=_scalar(value, where))

    return build


_COLUMN_OPERATORS: dict[str, Callable[[str, Any, str], Predicate]] = {
    **{name: _comparison(operator) for name, operator in _COMPARISONS.items()},
    "$in": lambda column, value, where: InList(column=column, values=_scalars(value, where)),
    "$nin": lambda column, value, where: InList(
        column=column, values=_scalars(value, where), negated=True
    ),
    "$all": lambda column, value, where: ContainsAll(column=column, values=_scalars(value, where)),
    "$any": lambda column, value, where: ContainsAny(column=column, values=_scalars(value, where)),
    "$contains": lambda column, value, where: ContainsAny(
        column=column, values=[_scalar(value, where)]
    ),
    "$like": lambda column, value, where: StartsWith(
        column=column, prefix=_like_prefix(value, where)
    ),
    "$exists": lambda column, value, where: IsNull(column=column, negated=_boolean(value, where)),
}


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(f"expected text, got {json_type_phrase(value)}", where, value)
    return value


def _boolean(value: Any, where: str) -> bool:
    if not is_boolean(value):
        raise _fail(f"expected true or false, got {json_type_phrase(value)}", where, value)
    return bool(value)


def _table_test(form: PredicateForm) -> Callable[[str, Any, str], Predicate]:
    """A registered leaf from its ``object_operator``'s value, read as
    :func:`~hotdata_retrieval.plan.filters.argument_shape` says."""

    def build(column: str, value: Any, where: str) -> Predicate:
        shape, count = argument_shape(form)
        arguments: list[Any]
        if shape == "text":
            arguments = [_text(value, where)]
        elif shape == "value":
            arguments = [_scalar(value, where)]
        elif shape == "list":
            arguments = [_scalars(value, where)]
        else:
            arguments = _scalars(value, where)
            if len(arguments) != count:
                names = ", ".join(name for name, _ in form.value_fields)
                raise _fail(
                    f"expected a list of {count} values [{names}], got {len(arguments)}",
                    where,
                    value,
                )
        node: Predicate = form.from_arguments(column, arguments)
        return node

    return build


def _column_tests(column: str, value: Any, where: str) -> list[Predicate]:
    if not isinstance(value, Mapping):
        return [Comparison(column=column, operator="=", value=_scalar(value, where))]
    if not value:
        raise _fail("an operator object needs at least one operator", where, value)
    tests = []
    for operator, argument in value.items():
        build = _COLUMN_OPERATORS.get(operator) if isinstance(operator, str) else None
        if build is None and isinstance(operator, str) and operator in _table_operators():
            build = _table_test(_table_operators()[operator])
        if build is None:
            known = ", ".join(filter_object_operators())
            raise _fail(
                f"unknown operator {operator!r}; the operators are {known}", where, operator
            )
        try:
            tests.append(build(column, argument, f"{where}.{operator}"))
        except PlanError as error:
            message = str(error)
            if message.startswith(f"{where}.{operator}"):
                raise
            raise _fail(message, f"{where}.{operator}", argument) from None
    return tests


def _predicate(value: Any, where: str, depth: int) -> Predicate | None:
    if not isinstance(value, Mapping):
        raise _fail(f"expected an object, got {json_type_phrase(value)}", where, value)
    if depth > MAX_FILTER_DEPTH:
        raise _fail(too_deep_message(depth), where, depth)
    parts: list[Predicate] = []
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise _fail(f"a key must be a column name or $and, $or, $not, got {key!r}", where, key)
        at = f"{where}.{key}"
        if key in ("$and", "$or"):
            if not isinstance(item, (list, tuple)) or not item:
                raise _fail(
                    f"expected a non-empty list of objects, got {json_type_phrase(item)}", at, item
                )
            operands = []
            for index, operand in enumerate(item):
                part = _predicate(operand, f"{at}[{index}]", depth + 1)
                if part is None and key == "$or":
                    # An empty object matches every row, so the whole $or would: there is
                    # no such filter to build, and dropping it would narrow the match.
                    raise _fail(
                        "an empty object in $or matches every row, so the $or always holds; "
                        "leave the $or out",
                        f"{at}[{index}]",
                        operand,
                    )
                if part is not None:
                    operands.append(part)
            if operands:
                connective = And if key == "$and" else Or
                parts.append(operands[0] if len(operands) == 1 else connective(operands=operands))
        elif key == "$not":
            operand = _predicate(item, at, depth + 1)
            if operand is None:
                raise _fail("$not of an empty object negates nothing", at, item)
            parts.append(Not(operand=operand))
        elif key.startswith("$"):
            known = ", ".join(_CONNECTIVES)
            raise _fail(
                f"unknown key {key!r}: a key is a column, or one of {known}; column operators "
                f'go inside a column\'s object ({{"column": {{"{key}": ...}}}})',
                where,
                key,
            )
        else:
            parts.extend(_column_tests(key, item, at))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(operands=parts)


def filter_from_object(
    value: Mapping[str, Any] | None, *, where: str = "filter"
) -> Predicate | None:
    """The predicate a filter object describes (module docstring), or ``None`` for an empty
    object or ``None``.

    Args:
        value: the object (a mapping, as ``json.loads`` gives one).
        where: how messages name the object (``filter``).

    Raises:
        PlanError: a key, operator or value the form does not allow, naming where it is and
            what would be valid; a filter past the predicate tree's limits.

    >>> filter_from_object({"tags": {"$all": ["a"]}, "$or": [{"n": 1}, {"n": {"$exists": False}}]})
    And(operands=(ContainsAll(column='tags', values=('a',)), Or(operands=(Comparison(\
column='n', operator=<ComparisonOperator.EQUAL: '='>, value=1), IsNull(column='n', \
negated=False)))))
    """
    if value is None:
        return None
    try:
        return _predicate(value, where, 0)
    except PlanError as error:
        if str(error).startswith(where):
            raise
        raise PlanError(f"{where}: {error}", field="filter", value=error.value) from None
