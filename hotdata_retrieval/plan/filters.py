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

**The operator table.** Every predicate node class is registered here once
(:func:`register_predicate`): one row saying what the node is to every interpretation — its
column and value fields (the fields marked ``bound``), what its values are to the column
(:class:`ValueRole`), its SQL spelling (a function name, or a key of the compile layer's
table of spellings), its pyarrow compute function, its truth for one Python row, or its
meaning in other nodes (``expand``), and its plan-document, filter-object and filter-text
forms. An interpretation of the filter tree is a :class:`PredicateVisitor`: SQL, the plan
document, the columns read, value checks, SQL's three-valued truth, the local engine's row
mask, turbopuffer's filter array. Each reads a leaf's row in one generic method
(:meth:`PredicateVisitor.read_row`); explicit ``visit_<name>`` methods remain for the
connectives, for nodes with semantics of their own (``InList``'s empty lists and NULLs,
``ContainsAll``'s empty list) and where a store spells a node its own way. An
interpretation that can read neither raises
:class:`~hotdata_retrieval.plan.visitor.UnvisitableNodeError` naming the operator and the
interpretation, never a silent default; ``tests/test_operator_table.py`` enumerates every
interpretation against every registered node. ``docs/architecture.md``, "How to add a filter
operator", walks through adding one.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.values import LiteralValue, check_flag, check_literal
from hotdata_retrieval.plan.visitor import NodeVisitor

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
        return Not(operand=cast("Predicate", self))


def _spread(value: Any, connective: type[And] | type[Or]) -> tuple[Any, ...]:
    """The operands of ``value`` if it is a ``connective`` node, else ``(value,)``."""
    if isinstance(value, connective):
        return value.operands
    return (value,)


class ValueRole(enum.Enum):
    """What a leaf's values are to its column, which says how each interpretation checks,
    types and writes them (:func:`register_predicate`'s ``role``)."""

    COMPARED = "compared"
    """Compared with the column's values (``=``, ``IN``, ``BETWEEN``): checked against the
    column's kind and, where a store needs it, read as the column's type."""
    TEXT = "text"
    """Text matched against a text column (a prefix, a suffix): the column must hold text."""
    ELEMENT = "element"
    """Looked for among the elements of a list column."""


class DocumentFields(Protocol):
    """The fields of one predicate object of a plan document, read with typed errors that
    name where in the document a bad value is (``filter.and[1].in[0]``). The plan-document
    decoder gives one to each registered node's ``from_document``."""

    column: str
    """The object's ``"column"``, checked as an identifier."""

    def string(self, key: str) -> str:
        """``key``'s value, which must be a string."""

    def boolean(self, key: str) -> bool:
        """``key``'s value, which must be ``true`` or ``false``."""

    def literal(self, key: str) -> Any:
        """``key``'s value, a filter literal (not null)."""

    def literals(self, key: str) -> list[Any]:
        """``key``'s value, an array of filter literals."""


def _value_fields(node: type) -> tuple[tuple[str, bool], ...]:
    """The node's value fields, in declaration order, each with whether it holds a tuple of
    values (``bound_each``) rather than one (``bound``)."""
    if not attrs.has(node):
        return ()
    return tuple(
        (field.name, bool(field.metadata.get("bound_each")))
        for field in attrs.fields(node)
        if field.metadata.get("bound") or field.metadata.get("bound_each")
    )


@attrs.frozen(kw_only=True)
class PredicateForm:
    """One registered predicate node: the operator table's row (:func:`register_predicate`
    states each field).

    Attributes:
        node: the node class (its ``visit_name`` names the row and the ``visit_<name>``
            method an interpretation may have for it).
        markers: the keys that mark the node in a plan document's filter object.
        extra_keys: other keys its object may hold beside ``"column"`` and its marker.
        leaf: ``False`` for the connectives (``and``, ``or``, ``not``).
        description: one line saying what it keeps, for schemas and messages.
        role: what its values are to its column (``None``: it has none).
        sql: its SQL spelling: a function name, written ``name(column, value, ...)``, unless
            the compile layer's table of spellings has the name (``between``).
        arrow: the ``pyarrow.compute`` function that evaluates it over a column, called
            ``function(column, value, ...)``.
        truth: for one non-NULL column value, whether the node holds:
            ``truth(node, value)``.
        expand: the node's meaning as other nodes, read by an interpretation that has no
            spelling of its own for it (``BETWEEN`` is ``>= AND <=``).
        object_operator: its ``$``-operator in filter objects (``"$ends_with"``).
        from_document, to_document: the node from its document object's fields, and the
            object's keys beside ``"column"`` from the node (``None``: derived from the
            marker and the value fields).
        document_schema: the JSON Schema of its object, one alternative per marker (empty:
            derived).
    """

    node: type
    markers: tuple[str, ...]
    extra_keys: tuple[str, ...] = ()
    leaf: bool = True
    description: str = ""
    role: ValueRole | None = None
    sql: str | None = None
    arrow: str | None = None
    truth: Callable[[Any, Any], bool] | None = None
    expand: Callable[[Any], Any] | None = None
    object_operator: str | None = None
    from_document: Callable[[DocumentFields, str], Any] | None = None
    to_document: Callable[[Any], dict[str, Any]] | None = None
    document_schema: tuple[Mapping[str, Any], ...] = ()

    @property
    def name(self) -> str:
        """The node's ``visit_name``."""
        return str(getattr(self.node, "visit_name", ""))

    @property
    def value_fields(self) -> tuple[tuple[str, bool], ...]:
        """The node's value fields (those marked ``bound`` or ``bound_each``), each with
        whether it holds a tuple of values."""
        return _value_fields(self.node)

    def values_of(self, node: Any) -> tuple[Any, ...]:
        """Every value ``node`` holds, in field order, tuples spread."""
        values: list[Any] = []
        for field, each in self.value_fields:
            value = getattr(node, field)
            values.extend(value if each else (value,))
        return tuple(values)

    def arguments_of(self, node: Any) -> tuple[Any, ...]:
        """``node``'s value fields in order, as written after its column in its function
        spelling and in its document and filter-object values (a tuple field as one list)."""
        return tuple(getattr(node, field) for field, _ in self.value_fields)

    def from_arguments(self, column: str, arguments: Sequence[Any]) -> Any:
        """The node on ``column`` with :meth:`arguments_of` ``arguments`` (the node's own
        constructor checks them)."""
        fields = self.value_fields
        if len(arguments) != len(fields):
            raise PlanError(
                f"{self.name} takes a column and {len(fields)} value"
                f"{'' if len(fields) == 1 else 's'}, got {len(arguments)}",
                field=self.name,
                value=list(arguments),
            )
        return self.node(
            column=column, **{name: value for (name, _), value in zip(fields, arguments)}
        )


_FORMS: dict[str, PredicateForm] = {}


def register_predicate(
    node: type,
    *,
    markers: tuple[str, ...],
    extra_keys: tuple[str, ...] = (),
    leaf: bool = True,
    description: str = "",
    role: ValueRole | None = None,
    sql: str | None = None,
    arrow: str | None = None,
    truth: Callable[[Any, Any], bool] | None = None,
    expand: Callable[[Any], Any] | None = None,
    object_operator: str | None = None,
    from_document: Callable[[DocumentFields, str], Any] | None = None,
    to_document: Callable[[Any], dict[str, Any]] | None = None,
    document_schema: tuple[Mapping[str, Any], ...] = (),
) -> type:
    """Add a predicate node to the operator table (the module docstring says what that
    entails): from then on it is a filter node everywhere. A leaf (a node with a ``column``
    and value fields marked ``metadata={"bound": True}``, or ``{"bound_each": True}`` for a
    tuple of values) is then read by every generic interpretation from this row; an
    interpretation that needs a datum the row lacks (an SQL spelling, a row truth...) and has
    no ``visit_<name>`` method for it raises, naming both.

    Args:
        node: the node class, with a ``visit_name``.
        markers: the keys that mark it in a plan document's filter object (a leaf's first
            marker holds its value, or its values as a list).
        extra_keys: other keys of its document object (a comparison's ``"value"``).
        leaf: ``False`` for a connective.
        description: what it keeps, one line (schemas, tool descriptions).
        role: what its values are to the column (:class:`ValueRole`).
        sql: its SQL spelling: a function name, or a key of the compile layer's spellings.
        arrow: the ``pyarrow.compute`` function that evaluates it.
        truth: ``truth(node, value)``: whether it holds for one non-NULL column value (a NULL
            column value is unknown).
        expand: its meaning as other predicate nodes, for interpretations without a spelling.
        object_operator: its ``$``-key in filter objects.
        from_document, to_document: its document object's reading and writing (derived from
            the first marker and the value fields when ``None``).
        document_schema: its document object's JSON Schema alternatives (derived when empty).

    Returns:
        ``node``.

    Raises:
        PlanError: ``node`` has no ``visit_name``, or its name, a marker or its object
            operator is taken by another node.
    """
    name = getattr(node, "visit_name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise PlanError(f"a predicate node needs a visit_name, got {name!r}", field="node")
    for form in _FORMS.values():
        if form.node is node:
            continue
        if (
            form.name == name
            or set(form.markers) & set(markers)
            or (object_operator is not None and form.object_operator == object_operator)
        ):
            raise PlanError(
                f"predicate {name!r} (document keys {', '.join(markers)}) clashes with "
                f"{form.node.__name__}",
                field="node",
                value=name,
            )
    _FORMS[name] = PredicateForm(
        node=node,
        markers=tuple(markers),
        extra_keys=tuple(extra_keys),
        leaf=leaf,
        description=description,
        role=role,
        sql=sql,
        arrow=arrow,
        truth=truth,
        expand=expand,
        object_operator=object_operator,
        from_document=from_document,
        to_document=to_document,
        document_schema=tuple(document_schema),
    )
    return node


def unregister_predicate(node: type) -> None:
    """Remove a node :func:`register_predicate` added (for a test's own toy operator)."""
    _FORMS.pop(str(getattr(node, "visit_name", "")), None)


def predicate_forms() -> Mapping[str, PredicateForm]:
    """The operator table: every registered predicate node, by ``visit_name``, in the order
    they were registered."""
    return dict(_FORMS)


def form_of(node: Any) -> PredicateForm | None:
    """The operator table's row of ``node``'s class, or ``None`` if it is no predicate."""
    form = _FORMS.get(str(getattr(type(node), "visit_name", "")))
    return form if form is not None and type(node) is form.node else None


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


def _operator(value: ComparisonOperator | str) -> ComparisonOperator:
    return ComparisonOperator.parse(value)


def _filter_value(value: LiteralValue) -> LiteralValue:
    return check_literal(value, label="filter value")


def _filter_column(value: str) -> str:
    return normalize_identifier(value, label="filter column")


@attrs.frozen(kw_only=True)
class Comparison(_Composable):
    """``column <operator> value``; NULL column values never match (SQL semantics)."""

    visit_name: ClassVar[str] = "comparison"

    column: str = attrs.field(converter=_filter_column)
    operator: ComparisonOperator = attrs.field(converter=_operator)
    value: LiteralValue = attrs.field(converter=_filter_value, metadata={"bound": True})


@attrs.frozen(kw_only=True)
class Between(_Composable):
    """``column BETWEEN low AND high``: ``low <= column AND column <= high``, both ends
    included, as SQL defines it. A NULL column value is unknown, so neither ``BETWEEN`` nor
    ``NOT BETWEEN`` keeps it; a ``low`` above ``high`` keeps no row. Its values are compared
    with the column as a comparison's are (checked against its kind, read as its type)."""

    visit_name: ClassVar[str] = "between"

    column: str = attrs.field(converter=_filter_column)
    low: LiteralValue = attrs.field(converter=_filter_value, metadata={"bound": True})
    high: LiteralValue = attrs.field(converter=_filter_value, metadata={"bound": True})


def _literal_tuple(
    values: Iterable[LiteralValue], *, label: str = "IN list value"
) -> tuple[LiteralValue, ...]:
    what = label.removesuffix(" value")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise PlanError(
            f"{what} values must be a sequence, got {values!r}", field="values", value=values
        )
    checked = tuple(check_literal(value, label=label) for value in values)
    if len(checked) > MAX_IN_LIST_VALUES:
        raise PlanError(
            f"{what} has {len(checked)} values, at most {MAX_IN_LIST_VALUES} "
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
    negated: bool = attrs.field(default=False, validator=check_flag)


@attrs.frozen(kw_only=True)
class IsNull(_Composable):
    """``column IS NULL``, or ``IS NOT NULL`` when ``negated``."""

    visit_name: ClassVar[str] = "is_null"

    column: str = attrs.field(converter=_filter_column)
    negated: bool = attrs.field(default=False, validator=check_flag)


def _prefix_text(value: str) -> str:
    checked = check_literal(value, label="prefix")
    if not isinstance(checked, str):
        raise PlanError(f"prefix must be text, got {value!r}", field="prefix", value=value)
    return checked


@attrs.frozen(kw_only=True)
class StartsWith(_Composable):
    """``column`` starts with ``prefix``: text compared character by character, case
    included, every character of the prefix data (``%``, ``_`` and ``\\`` are no pattern).
    A NULL value never matches; the empty prefix matches every other one."""

    visit_name: ClassVar[str] = "starts_with"

    column: str = attrs.field(converter=_filter_column)
    prefix: str = attrs.field(converter=_prefix_text, metadata={"bound": True})


def _suffix_text(value: str) -> str:
    checked = check_literal(value, label="suffix")
    if not isinstance(checked, str):
        raise PlanError(f"suffix must be text, got {value!r}", field="suffix", value=value)
    return checked


@attrs.frozen(kw_only=True)
class EndsWith(_Composable):
    """``column`` ends with ``suffix``: text compared character by character, case
    included, every character of the suffix data (``%``, ``_``, ``*``, ``?``, ``[`` and
    ``\\`` are no pattern). A NULL value never matches; the empty suffix matches every other
    one."""

    visit_name: ClassVar[str] = "ends_with"

    column: str = attrs.field(converter=_filter_column)
    suffix: str = attrs.field(converter=_suffix_text, metadata={"bound": True})


def like_prefix(pattern: str, escape: str = "\\") -> str | None:
    r"""The prefix a ``LIKE`` pattern matches when it is one — ``<text>%`` with every ``%``
    and ``_`` of the text written after ``escape`` — else ``None``: what filter text and
    filter objects read a prefix pattern as (:class:`StartsWith`).

    >>> like_prefix("100\\%%"), like_prefix("a_b%"), like_prefix("ab")
    ('100%', None, None)
    """
    prefix: list[str] = []
    index = 0
    while index < len(pattern):
        character = pattern[index]
        if character == escape and index + 1 < len(pattern):
            prefix.append(pattern[index + 1])
            index += 2
            continue
        if character == "%" and index == len(pattern) - 1:
            return "".join(prefix)
        if character in "%_":
            return None
        prefix.append(character)
        index += 1
    return None


def _element_tuple(values: Iterable[LiteralValue]) -> tuple[LiteralValue, ...]:
    return _literal_tuple(values, label="list value")


@attrs.frozen(kw_only=True)
class ContainsAll(_Composable):
    """The list in ``column`` holds every one of ``values``. An empty ``values`` holds for
    every row (NULLs included, as ``NOT IN ()`` does); a NULL list otherwise never matches."""

    visit_name: ClassVar[str] = "contains_all"

    column: str = attrs.field(converter=_filter_column)
    values: tuple[LiteralValue, ...] = attrs.field(
        converter=_element_tuple, metadata={"bound_each": True}
    )


@attrs.frozen(kw_only=True)
class ContainsAny(_Composable):
    """The list in ``column`` holds at least one of ``values``. An empty ``values`` holds for
    no row (as ``IN ()``); a NULL list never matches."""

    visit_name: ClassVar[str] = "contains_any"

    column: str = attrs.field(converter=_filter_column)
    values: tuple[LiteralValue, ...] = attrs.field(
        converter=_element_tuple, metadata={"bound_each": True}
    )


def _operands(values: Iterable[Predicate]) -> tuple[Predicate, ...]:
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


def _operand(value: Predicate) -> Predicate:
    return check_predicate(value)


@attrs.frozen(kw_only=True)
class Not(_Composable):
    """The operand does not hold.

    Raises:
        PlanError: the operand is not a predicate, or the result nests deeper than
            :data:`MAX_FILTER_DEPTH`.
    """

    visit_name: ClassVar[str] = "not"

    operand: Predicate = attrs.field(converter=_operand)
    _depth: int = _DEPTH
    _terms: int = _TERMS

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_depth", _nested((self.operand,)))
        object.__setattr__(self, "_terms", _counted((self.operand,)))


Predicate = (
    Comparison
    | Between
    | InList
    | IsNull
    | StartsWith
    | EndsWith
    | ContainsAll
    | ContainsAny
    | And
    | Or
    | Not
)
"""Any of the library's filter nodes (a node registered from outside is a filter node too:
:func:`is_predicate`)."""


def is_predicate(value: Any) -> bool:
    """Return whether ``value`` is a filter node: an instance of a node class in the operator
    table (:func:`register_predicate`)."""
    return any(type(value) is form.node for form in _FORMS.values())


R = TypeVar("R")


class PredicateVisitor(NodeVisitor, Generic[R]):
    """One interpretation of the filter tree: a ``visit_<name>`` method per predicate node.

    A subclass reads a leaf from its operator-table row in :meth:`read_row` (and says which
    rows it can read in :meth:`reads_row`), and has a ``visit_<name>`` method for each
    connective and for each node it interprets otherwise; each returns the interpretation of
    its node, ``R``, and calls :meth:`predicate` on operands (the connectives recurse at most
    :data:`MAX_FILTER_DEPTH` levels). The library's interpretations: SQL (the compiler's
    :class:`~hotdata_retrieval.compile.compiler.PlanCompiler`, and its store subclasses), the
    JSON document (``plan.document``), the columns read (:func:`predicate_columns`), the
    checks and typing of values against column kinds (``engines.checks``), SQL's
    three-valued truth for one Python row (``spec.cases``), the local engine's row mask over
    pyarrow compute kernels and whether it reads a filter as SQL does
    (``engines.local.masks``) and turbopuffer's filter array (``compile.turbopuffer``).

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

    def generic_visit(self, node: Any, *args: Any) -> Any:
        """Called for a node this interpretation has no ``visit_<name>`` method for: a
        registered leaf goes to :meth:`read_row` with its row.

        Raises:
            UnvisitableNodeError: naming the operator and the interpretation, for a node that
                is no registered leaf or whose row this interpretation cannot read.
        """
        form = form_of(node)
        if form is None or not form.leaf or not self.reads_row(form):
            raise self.unvisitable(node)
        return self.read_row(node, form, *args)

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> R:
        """The interpretation of a leaf from its operator-table row ``form`` (an
        interpretation that reads rows overrides it, and :meth:`reads_row`).

        Raises:
            UnvisitableNodeError: this interpretation reads no rows.
        """
        raise self.unvisitable(node)

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        """Whether :meth:`read_row` interprets a leaf of row ``form`` (it holds what this
        interpretation needs). No by default."""
        return False

    @classmethod
    def interprets(cls, form: PredicateForm) -> bool:
        """Whether this interpretation has an answer for the nodes of row ``form``: its own
        ``visit_<name>`` method, or its reading of the row."""
        return cls.visits(form.node) or (form.leaf and cls.reads_row(form))


class _Columns(PredicateVisitor[None]):
    """Collects the columns a predicate reads into ``columns``."""

    def __init__(self) -> None:
        self.columns: set[str] = set()

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> None:
        self.columns.add(node.column)

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

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


def value_types(predicate: Predicate) -> tuple[type, ...] | None:
    """The type of every value ``predicate`` holds, leaves in order; ``None`` for a
    connective registered from outside (whose operands this does not know).

    A cache keyed by predicates (which compare by value) needs them: ``1``, ``1.0`` and
    ``True`` are equal in Python, and hash alike, but a check against an integer or a
    boolean column accepts one and refuses another.

    >>> value_types(Comparison(column="a", operator="=", value=1)
    ...             | ~InList(column="b", values=[True, 2.0]))
    (<class 'int'>, <class 'bool'>, <class 'float'>)
    """
    found: list[type] = []
    pending: list[Any] = [predicate]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is And or kind is Or:
            pending.extend(reversed(node.operands))
            continue
        if kind is Not:
            pending.append(node.operand)
            continue
        fields = _LEAF_VALUE_FIELDS.get(kind)
        if fields is None:
            form = form_of(node)
            if form is None or not form.leaf:
                return None
            fields = _LEAF_VALUE_FIELDS[kind] = form.value_fields
        for name, each in fields:
            value = getattr(node, name)
            if each:
                found.extend(map(type, value))
            else:
                found.append(type(value))
    return tuple(found)


_LEAF_VALUE_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
"""Each leaf class's value fields (:attr:`PredicateForm.value_fields`), read once for
:func:`value_types`."""


def filter_shape(predicate: Predicate) -> tuple[Any, ...] | None:
    """``predicate`` without its values: each node's class and every field but its values
    (columns, operators, flags), each value replaced by its type, connectives nested as
    written; ``None`` for a node registered from outside whose fields this does not know.

    Two filters of one shape read the same columns in the same way and differ only in their
    values (of the same types): a check that reads no value passes or fails both (a plan's
    own checks, :func:`~hotdata_retrieval.plan.search._run_plan_checks`).

    >>> filter_shape(Comparison(column="a", operator="=", value=1)) == filter_shape(
    ...     Comparison(column="a", operator="=", value=2))
    True
    >>> filter_shape(Comparison(column="a", operator="=", value=1)) == filter_shape(
    ...     Comparison(column="a", operator="=", value=True))
    False
    """
    kind = type(predicate)
    if kind is And or kind is Or:
        operands = []
        for operand in predicate.operands:  # type: ignore[union-attr]
            shape = filter_shape(operand)
            if shape is None:
                return None
            operands.append(shape)
        return (kind, tuple(operands))
    if kind is Not:
        shape = filter_shape(predicate.operand)  # type: ignore[union-attr]
        return None if shape is None else (kind, shape)
    fields = _SHAPE_FIELDS.get(kind)
    if fields is None:
        form = form_of(predicate)
        if form is None or not form.leaf or not attrs.has(kind):
            return None
        valued = dict(form.value_fields)
        fields = _SHAPE_FIELDS[kind] = tuple(
            (field.name, valued.get(field.name)) for field in attrs.fields(kind)
        )
    found: list[Any] = [kind]
    for name, each in fields:
        value = getattr(predicate, name)
        if each is None:
            found.append(value)
        elif each:
            found.append(tuple(map(type, value)))
        else:
            found.append(type(value))
    return tuple(found)


_SHAPE_FIELDS: dict[type, tuple[tuple[str, bool | None], ...]] = {}
"""Each leaf class's fields for :func:`filter_shape`, each with ``None`` (not a value),
``False`` (a value) or ``True`` (a tuple of values), read once."""


# -- the operator table --------------------------------------------------------------------


def sql_pair(left: Any, right: Any) -> tuple[Any, Any]:
    """Two non-NULL values as SQL compares them: a date with a timestamp as timestamps, the
    date at midnight (Python refuses to compare a ``date`` with a ``datetime``).

    >>> sql_pair(datetime.date(2024, 3, 1), datetime.datetime(2024, 3, 1, 5))[0]
    datetime.datetime(2024, 3, 1, 0, 0)
    """
    moments = (isinstance(left, datetime.datetime), isinstance(right, datetime.datetime))
    if moments == (True, False) and isinstance(right, datetime.date):
        return left, datetime.datetime.combine(right, datetime.time())
    if moments == (False, True) and isinstance(left, datetime.date):
        return datetime.datetime.combine(left, datetime.time()), right
    return left, right


_COMPARE: dict[ComparisonOperator, Callable[[Any, Any], bool]] = {
    ComparisonOperator.EQUAL: lambda a, b: a == b,
    ComparisonOperator.NOT_EQUAL: lambda a, b: a != b,
    ComparisonOperator.LESS: lambda a, b: a < b,
    ComparisonOperator.LESS_OR_EQUAL: lambda a, b: a <= b,
    ComparisonOperator.GREATER: lambda a, b: a > b,
    ComparisonOperator.GREATER_OR_EQUAL: lambda a, b: a >= b,
}


def sql_compare(left: Any, operator: ComparisonOperator | str, right: Any) -> bool:
    """``left <operator> right`` for two non-NULL values, as SQL compares them
    (:func:`sql_pair`).

    >>> sql_compare(3, "<=", 3), sql_compare("b", ">", "a")
    (True, True)
    """
    return bool(_COMPARE[ComparisonOperator.parse(operator)](*sql_pair(left, right)))


_COLUMN = {"$ref": "#/$defs/identifier"}
_VALUE = {"$ref": "#/$defs/literal"}
_VALUES = {"type": "array", "items": {"$ref": "#/$defs/literal"}}


def _leaf_schema(description: str, **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": {"column": _COLUMN, **properties},
        "required": ["column", *properties],
        "additionalProperties": False,
    }


def argument_shape(form: PredicateForm) -> tuple[str, int]:
    """How a leaf's values are written after its column in a document or filter object:
    ``("text", 1)`` (one text), ``("value", 1)`` (one literal), ``("list", 1)`` (one list
    of literals) or ``("values", n)`` (a list of exactly ``n`` literals)."""
    fields = form.value_fields
    if len(fields) == 1:
        if fields[0][1]:
            return "list", 1
        return ("text" if form.role is ValueRole.TEXT else "value"), 1
    return "values", len(fields)


def _marker_schema(form: PredicateForm) -> dict[str, Any]:
    shape, count = argument_shape(form)
    if shape == "text":
        return {"type": "string"}
    if shape == "value":
        return dict(_VALUE)
    if shape == "list":
        return dict(_VALUES)
    return {**_VALUES, "minItems": count, "maxItems": count}


def document_alternatives(form: PredicateForm) -> tuple[Mapping[str, Any], ...]:
    """The JSON Schema alternatives of a leaf's plan-document object: the row's own, or
    ``{"column": ..., <marker>: <its values>}``."""
    if form.document_schema or not form.leaf:
        return form.document_schema
    return (_leaf_schema(form.description, **{form.markers[0]: _marker_schema(form)}),)


def leaf_from_document(form: PredicateForm, fields: DocumentFields, marker: str) -> Any:
    """A leaf from its document object: the row's ``from_document``, or its first marker's
    value read as :func:`argument_shape` says."""
    if form.from_document is not None:
        return form.from_document(fields, marker)
    shape, _ = argument_shape(form)
    if shape == "text":
        return form.from_arguments(fields.column, [fields.string(marker)])
    if shape == "value":
        return form.from_arguments(fields.column, [fields.literal(marker)])
    if shape == "list":
        return form.from_arguments(fields.column, [fields.literals(marker)])
    return form.from_arguments(fields.column, fields.literals(marker))


def leaf_document(form: PredicateForm, node: Any) -> dict[str, Any]:
    """A leaf's document keys beside ``"column"`` (plan values, which the document encoder
    writes as JSON): the row's ``to_document``, or its first marker with its values."""
    if form.to_document is not None:
        return form.to_document(node)
    arguments = form.arguments_of(node)
    shape, _ = argument_shape(form)
    value = list(arguments) if shape == "values" else arguments[0]
    return {form.markers[0]: list(value) if shape == "list" else value}


register_predicate(
    Comparison,
    markers=("op",),
    extra_keys=("value",),
    description="column <op> value",
    role=ValueRole.COMPARED,
    truth=lambda node, value: sql_compare(value, node.operator, node.value),
    from_document=lambda fields, _: Comparison(
        column=fields.column, operator=fields.string("op"), value=fields.literal("value")
    ),
    to_document=lambda node: {"op": node.operator.value, "value": node.value},
    document_schema=(
        _leaf_schema(
            "column <op> value",
            op={"enum": ["=", "==", "!=", "<>", "<", "<=", ">", ">="]},
            value=_VALUE,
        ),
    ),
)
register_predicate(
    Between,
    markers=("between",),
    description="column BETWEEN low AND high: low <= column <= high, both ends included.",
    role=ValueRole.COMPARED,
    sql="between",
    truth=lambda node, value: (
        sql_compare(value, ">=", node.low) and sql_compare(value, "<=", node.high)
    ),
    expand=lambda node: And(
        operands=(
            Comparison(column=node.column, operator=">=", value=node.low),
            Comparison(column=node.column, operator="<=", value=node.high),
        )
    ),
    object_operator="$between",
)
register_predicate(
    InList,
    markers=("in", "not_in"),
    description="column IN (values), or NOT IN",
    role=ValueRole.COMPARED,
    from_document=lambda fields, marker: InList(
        column=fields.column, values=fields.literals(marker), negated=marker == "not_in"
    ),
    to_document=lambda node: {"not_in" if node.negated else "in": list(node.values)},
    document_schema=(
        _leaf_schema("column IN (values); an empty list matches no row.", **{"in": _VALUES}),
        _leaf_schema("column NOT IN (values); an empty list matches every row.", not_in=_VALUES),
    ),
)
register_predicate(
    IsNull,
    markers=("is_null",),
    description="column IS NULL (true) or IS NOT NULL (false).",
    from_document=lambda fields, _: IsNull(
        column=fields.column, negated=not fields.boolean("is_null")
    ),
    to_document=lambda node: {"is_null": not node.negated},
    document_schema=(
        _leaf_schema("column IS NULL (true) or IS NOT NULL (false).", is_null={"type": "boolean"}),
    ),
)
register_predicate(
    StartsWith,
    markers=("starts_with",),
    description="column starts with the text, character for character (no pattern).",
    role=ValueRole.TEXT,
    sql="starts_with",
    arrow="starts_with",
    truth=lambda node, value: str(value).startswith(node.prefix),
    object_operator="$starts_with",
)
register_predicate(
    EndsWith,
    markers=("ends_with",),
    description="column ends with the text, character for character (no pattern).",
    role=ValueRole.TEXT,
    sql="ends_with",
    arrow="ends_with",
    truth=lambda node, value: str(value).endswith(node.suffix),
    object_operator="$ends_with",
)
register_predicate(
    ContainsAll,
    markers=("contains_all",),
    description="the list column holds every value; an empty list matches every row.",
    role=ValueRole.ELEMENT,
    sql="array_has_all",
)
register_predicate(
    ContainsAny,
    markers=("contains_any",),
    description="the list column holds at least one value; an empty list matches no row.",
    role=ValueRole.ELEMENT,
    sql="array_has_any",
)
register_predicate(And, markers=("and",), leaf=False, description="every operand holds")
register_predicate(Or, markers=("or",), leaf=False, description="at least one operand holds")
register_predicate(Not, markers=("not",), leaf=False, description="the operand does not hold")
