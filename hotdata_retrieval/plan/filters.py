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
(:func:`register_predicate`: its ``visit_name``, its document key and how a document becomes
the node); everything else the library does with a filter is an interpretation, a
:class:`PredicateVisitor` with one ``visit_<name>`` method per registered node: SQL, the plan
document, the columns read, value checks, SQL's three-valued truth, the local engine's row
mask, turbopuffer's filter array. An interpretation that lacks a node's method raises
:class:`~hotdata_retrieval.plan.visitor.UnvisitableNodeError` naming the operator and the
interpretation, never a silent default; ``tests/test_operator_table.py`` enumerates every
interpretation against every registered node. ``docs/architecture.md``, "How to add a filter
operator", walks through adding one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

import attrs

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.names import normalize_identifier
from hotdata_retrieval.plan.values import LiteralValue, check_flag, check_literal
from hotdata_retrieval.plan.visitor import NodeVisitor, UnvisitableNodeError

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


@attrs.frozen(kw_only=True)
class PredicateForm:
    """One registered predicate node: the operator table's row (:func:`register_predicate`).

    Attributes:
        node: the node class (its ``visit_name`` names the ``visit_<name>`` method every
            interpretation has for it).
        markers: the keys that mark the node in a plan document's filter object, one of which
            it holds (``"op"`` for a comparison, ``"in"`` or ``"not_in"`` for a list,
            ``"starts_with"`` for a prefix match); the connectives' are ``and``, ``or`` and
            ``not``.
        extra_keys: other keys its object may hold beside ``"column"`` and its marker
            (a comparison's ``"value"``).
        from_document: the node from its object's fields (``None`` for the connectives,
            which the decoder reads itself).
        document_schema: the JSON Schema of its object, one alternative per marker (``None``
            for the connectives).
    """

    node: type
    markers: tuple[str, ...]
    extra_keys: tuple[str, ...] = ()
    from_document: Callable[[DocumentFields, str], Any] | None = None
    document_schema: tuple[Mapping[str, Any], ...] = ()

    @property
    def name(self) -> str:
        """The node's ``visit_name``."""
        return str(getattr(self.node, "visit_name", ""))


_FORMS: dict[str, PredicateForm] = {}


def register_predicate(
    node: type,
    *,
    markers: tuple[str, ...],
    extra_keys: tuple[str, ...] = (),
    from_document: Callable[[DocumentFields, str], Any] | None = None,
    document_schema: tuple[Mapping[str, Any], ...] = (),
) -> type:
    """Add a predicate node to the operator table (the module docstring says what that
    entails): from then on it is a filter node everywhere, and every interpretation must have
    its ``visit_<name>`` method (an interpretation without one raises, naming both).
    ``from_document(fields, marker)`` builds the node from its document object; the node's
    own constructor checks it.

    Returns:
        ``node``.

    Raises:
        PlanError: ``node`` has no ``visit_name``, or its name or a marker is taken by
            another node.
    """
    name = getattr(node, "visit_name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise PlanError(f"a predicate node needs a visit_name, got {name!r}", field="node")
    for form in _FORMS.values():
        if form.node is not node and (form.name == name or set(form.markers) & set(markers)):
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
        from_document=from_document,
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


Predicate = Comparison | InList | IsNull | StartsWith | ContainsAll | ContainsAny | And | Or | Not
"""Any of the library's filter nodes (a node registered from outside is a filter node too:
:func:`is_predicate`)."""


def is_predicate(value: Any) -> bool:
    """Return whether ``value`` is a filter node: an instance of a node class in the operator
    table (:func:`register_predicate`)."""
    return any(type(value) is form.node for form in _FORMS.values())


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

    def generic_visit(self, node: Any, *args: Any) -> Any:
        """Called for a node this interpretation has no method for.

        Raises:
            UnvisitableNodeError: naming the operator and the interpretation.
        """
        raise UnvisitableNodeError(type(self).__name__, node)


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

    def visit_starts_with(self, node: StartsWith) -> None:
        self.columns.add(node.column)

    def visit_contains_all(self, node: ContainsAll) -> None:
        self.columns.add(node.column)

    def visit_contains_any(self, node: ContainsAny) -> None:
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


# -- the operator table --------------------------------------------------------------------

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


register_predicate(
    Comparison,
    markers=("op",),
    extra_keys=("value",),
    from_document=lambda fields, _: Comparison(
        column=fields.column, operator=fields.string("op"), value=fields.literal("value")
    ),
    document_schema=(
        _leaf_schema(
            "column <op> value",
            op={"enum": ["=", "==", "!=", "<>", "<", "<=", ">", ">="]},
            value=_VALUE,
        ),
    ),
)
register_predicate(
    InList,
    markers=("in", "not_in"),
    from_document=lambda fields, marker: InList(
        column=fields.column, values=fields.literals(marker), negated=marker == "not_in"
    ),
    document_schema=(
        _leaf_schema("column IN (values); an empty list matches no row.", **{"in": _VALUES}),
        _leaf_schema("column NOT IN (values); an empty list matches every row.", not_in=_VALUES),
    ),
)
register_predicate(
    IsNull,
    markers=("is_null",),
    from_document=lambda fields, _: IsNull(
        column=fields.column, negated=not fields.boolean("is_null")
    ),
    document_schema=(
        _leaf_schema("column IS NULL (true) or IS NOT NULL (false).", is_null={"type": "boolean"}),
    ),
)
register_predicate(
    StartsWith,
    markers=("starts_with",),
    from_document=lambda fields, _: StartsWith(
        column=fields.column, prefix=fields.string("starts_with")
    ),
    document_schema=(
        _leaf_schema(
            "column starts with the text, character for character (no pattern).",
            starts_with={"type": "string"},
        ),
    ),
)
register_predicate(
    ContainsAll,
    markers=("contains_all",),
    from_document=lambda fields, _: ContainsAll(
        column=fields.column, values=fields.literals("contains_all")
    ),
    document_schema=(
        _leaf_schema(
            "the list column holds every value; an empty list matches every row.",
            contains_all=_VALUES,
        ),
    ),
)
register_predicate(
    ContainsAny,
    markers=("contains_any",),
    from_document=lambda fields, _: ContainsAny(
        column=fields.column, values=fields.literals("contains_any")
    ),
    document_schema=(
        _leaf_schema(
            "the list column holds at least one value; an empty list matches no row.",
            contains_any=_VALUES,
        ),
    ),
)
register_predicate(And, markers=("and",))
register_predicate(Or, markers=("or",))
register_predicate(Not, markers=("not",))
