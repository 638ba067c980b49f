"""SQL text out: the one public door, with statement templates reused across calls.

Building and rendering a fused sqlglot tree costs about a millisecond, more than formatting
a 1536-value query vector. Plans that differ only in their *values* (query text, query
vector, filter literals) share one statement shape, so the shape is compiled and rendered
once, with a :class:`~hotdata_retrieval.compile.nodes.ValueSlot` where each value goes, and
kept as a template. Each call then renders only its values — string and scalar literals
through the dialect's sqlglot generator, the vector through the dialect's vector-literal
form — and splices them into the template's fixed text. The fixed text and every value's
text both come from sqlglot, so a template fill is byte-identical to a fresh render.

Templates are keyed on the dialect's profile object itself (profiles compare by identity), so
two profiles never share a statement, even under one name.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from sqlglot import exp

from hotdata_retrieval.compile.compiler import (
    LiteralBinder,
    SlotBinder,
    compiler_for,
    literal_node,
    native_hybrid_misfit,
)
from hotdata_retrieval.compile.dialect import DialectProfile, get_dialect
from hotdata_retrieval.compile.nodes import SLOT_DELIMITER, VectorLiteral, lower_search_nodes
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import Bm25Search, SearchPlan
from hotdata_retrieval.plan.steps import statement_plan

_TEMPLATE_CACHE_SIZE = 512


class _Slot:
    """Marks where a bound value sits in a shape key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<slot>"


_SLOT = _Slot()
_VECTOR = "vector"
_TEXT = "text"
_LITERAL = "literal"
_FULL_TEXT = "full text"
"""A text branch's query text: written through the dialect's ``full_text_query``."""


@attrs.frozen
class _Shape:
    key: tuple[Any, ...]
    values: tuple[tuple[str, Any], ...]
    slots: dict[tuple[int, str, int | None], int] = attrs.field(eq=False, hash=False)


_EACH = "each"
_FIELDS: dict[type, tuple[tuple[str, str | None], ...] | None] = {TableName: None}
"""Per attrs class, its fields as :func:`_fields_of` describes them; ``None`` marks a class
whose instances are keyed as whole values (``TableName``: three strings, no bound value)."""


def _fields_of(cls: type) -> tuple[tuple[str, str | None], ...] | None:
    """``(name, mode)`` for each attrs field of ``cls`` (``None`` if not an attrs class).

    ``mode`` is ``None`` for a field that is part of the shape, else how its value binds:
    a vector, query text, a literal, or each element of a tuple as a literal. A field the
    node derives itself (``init=False``, e.g. a filter's recorded depth) is left out.
    """
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    fields: tuple[tuple[str, str | None], ...] | None = None
    if attrs.has(cls):
        described = []
        for field in attrs.fields(cls):
            if not field.init:
                continue
            mode: str | None = None
            if field.metadata.get("bound_each"):
                mode = _EACH
            elif field.metadata.get("bound"):
                mode = {"query_vector": _VECTOR, "query_text": _TEXT}.get(field.name, _LITERAL)
                if mode == _TEXT and issubclass(cls, Bm25Search):
                    mode = _FULL_TEXT
            described.append((field.name, mode))
        fields = tuple(described)
    _FIELDS[cls] = fields
    return fields


_SCALAR_TYPES = frozenset({bool, int, float, str, type(None)})
"""Field values keyed as themselves (with their type) in a shape."""


def plan_shape(plan: SearchPlan) -> _Shape:
    """Split a plan into its shape (hashable, values replaced by markers) and its values.

    Two plans with equal shapes compile to the same SQL up to their values. Scalars are keyed
    with their type so that, e.g., ``60`` and ``60.0`` (rendered differently) never share a
    template. A value reached twice through the same node object keeps one slot.
    """
    key: list[Any] = []
    values: list[tuple[str, Any]] = []
    slots: dict[tuple[int, str, int | None], int] = {}

    def bind(node: object, field: str, index: int | None, kind: str, value: Any) -> None:
        slot_key = (id(node), field, index)
        if slot_key in slots:
            key.append(("again", slots[slot_key]))
            return
        slots[slot_key] = len(values)
        values.append((kind, value))
        key.append(_SLOT)

    def walk(value: Any) -> None:
        cls = type(value)
        fields = _fields_of(cls)
        if fields is not None:
            key.append(cls)
            for name, mode in fields:
                item = getattr(value, name)
                if mode is None:
                    kind = type(item)
                    if kind in _SCALAR_TYPES:  # the common case, without the recursion
                        key.append((kind, item))
                    else:
                        walk(item)
                elif mode == _EACH:
                    key.append(len(item))
                    for index, element in enumerate(item):
                        bind(value, name, index, _LITERAL, element)
                else:
                    if mode == _FULL_TEXT:
                        item = value.search_text  # the text the engine is given
                    bind(value, name, None, mode, item)
        elif cls is tuple or cls is list:  # a list: an option of a node defined elsewhere
            key.append((cls, len(value)))
            for item in value:
                walk(item)
        else:
            key.append((cls, value))

    walk(plan)
    return _Shape(key=tuple(key), values=tuple(values), slots=slots)


@attrs.frozen
class _Template:
    """A rendered statement split at its slots: ``fixed[0] v0 fixed[1] v1 ... fixed[n]``."""

    fixed: tuple[str, ...]
    order: tuple[int, ...]

    @classmethod
    def from_text(cls, text: str) -> _Template:
        pieces = text.split(SLOT_DELIMITER)
        return cls(fixed=tuple(pieces[0::2]), order=tuple(int(piece) for piece in pieces[1::2]))

    def fill(self, rendered: list[str]) -> str:
        parts = [self.fixed[0]]
        for slot, fixed in zip(self.order, self.fixed[1:]):
            parts.append(rendered[slot])
            parts.append(fixed)
        return "".join(parts)


_templates: OrderedDict[tuple[Any, ...], _Template] = OrderedDict()
_templates_lock = threading.Lock()


_dialects: weakref.WeakKeyDictionary[DialectProfile, Any] = weakref.WeakKeyDictionary()


def _sqlglot_dialect(profile: DialectProfile) -> Any:
    """One sqlglot ``Dialect`` instance per profile (they hold no per-statement state)."""
    dialect = _dialects.get(profile)
    if dialect is None:
        dialect = _dialects[profile] = profile.sqlglot_dialect()
    return dialect


_local = threading.local()


def _value_generator(profile: DialectProfile) -> Any:
    """This thread's sqlglot generator for the profile's values (one-line, no pretty).

    A generator holds per-statement state, so each thread keeps its own; reusing one saves
    building a generator for every value of every call.
    """
    generators: weakref.WeakKeyDictionary[DialectProfile, Any] | None = getattr(
        _local, "generators", None
    )
    if generators is None:
        generators = _local.generators = weakref.WeakKeyDictionary()
    generator = generators.get(profile)
    if generator is None:
        generator = generators[profile] = _sqlglot_dialect(profile).generator()
    return generator


def _render_value(profile: DialectProfile, kind: str, value: Any) -> str:
    if kind == _VECTOR:
        return profile.vector_literal(value)
    if kind == _FULL_TEXT:
        node: exp.Expr = exp.Literal.string(profile.full_text(value))
    else:
        node = exp.Literal.string(value) if kind == _TEXT else literal_node(value)
    return _value_generator(profile).generate(node, copy=False)  # type: ignore[no-any-return]


def to_sql(
    plan: SearchPlan,
    dialect: str | DialectProfile = "hotdata",
    *,
    pretty: bool = True,
    quote_identifiers: bool = False,
) -> str:
    """Compile ``plan`` to SQL text for ``dialect``: ONE statement, one round trip.

    The same plan always gives byte-identical SQL. Plans that differ only in their values
    reuse a cached template, so repeated searches cost little more than formatting the query
    vector.

    Args:
        plan: the search to compile.
        dialect: a registered dialect name (default ``"hotdata"``) or profile.
        pretty: indent the statement over several lines (default) or keep it on one line.
        quote_identifiers: quote every identifier (``"default"."public"."docs"``), as tools
            that embed the statement in their own SQL write theirs (ibis); by default each
            is quoted only where it must be.

    Raises:
        UnknownDialectError: ``dialect`` is not registered.
        UnsupportedOnDialectError: (an ``UnsupportedFeatureError``) the plan needs something
            the dialect cannot express; raised while compiling, before any text is written.

    >>> from hotdata_retrieval.plan import Bm25Search, SearchPlan
    >>> plan = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="it's"),
    ...                   limit=5)
    >>> print(to_sql(plan))
    SELECT
      id,
      body,
      score
    FROM bm25_search('default.public.docs', 'body', 'it''s', 5)
    ORDER BY
      score DESC,
      id ASC
    LIMIT 5
    """
    return _render(plan, get_dialect(dialect), pretty, None, quote_identifiers)


DISPLAY_COMPONENTS = 3
"""The components :func:`to_display_sql` shows of each query vector."""


def abbreviate_vector(
    vector: Sequence[float], dialect: str | DialectProfile = "hotdata", *, components: int = 3
) -> str:
    """A short stand-in for a query vector, for people: its first ``components`` components
    (4 significant digits), its dimension, and the first 8 hex digits of the SHA-256 of its
    exact SQL literal (UTF-8), so two displays of the same vector can be told apart from two
    of different ones. It is *not* SQL (the ``…`` does not parse), so it cannot run by mistake.

    A vector of at most ``components`` components is returned whole, as :func:`to_sql`
    writes it.

    >>> abbreviate_vector([0.012345, -0.5, 0.33, 0.25, 1.0])
    'ARRAY[0.01235, -0.5, 0.33, … 5 values, sha256 9b243ee2]'

    Raises:
        UnknownDialectError: ``dialect`` is not registered.
    """
    profile = get_dialect(dialect)
    values = tuple(vector)
    exact = profile.vector_literal(values)
    if len(values) <= components:
        return exact
    digest = hashlib.sha256(exact.encode("utf-8")).hexdigest()[:8]
    shown = [format(value, ".4g") for value in values[:components]]
    return (
        profile.vector_literal_open
        + profile.vector_literal_separator.join(
            [*shown, f"… {len(values)} values, sha256 {digest}"]
        )
        + profile.vector_literal_close
    )


def to_display_sql(
    plan: SearchPlan,
    dialect: str | DialectProfile = "hotdata",
    *,
    pretty: bool = True,
    components: int = DISPLAY_COMPONENTS,
) -> str:
    """:func:`to_sql`'s text with each query vector shortened by :func:`abbreviate_vector`,
    for a terminal: everything else is byte-identical to :func:`to_sql` (the same template,
    filled with a different vector text). Not runnable SQL when a vector was shortened; use
    :func:`to_sql` for anything that runs, is stored or is compared.

    Raises:
        UnknownDialectError: ``dialect`` is not registered.
        UnsupportedOnDialectError: as :func:`to_sql`.
    """
    profile = get_dialect(dialect)
    return _render(
        plan,
        profile,
        pretty,
        lambda vector: abbreviate_vector(vector, profile, components=components),
    )


def _render(
    plan: SearchPlan,
    profile: DialectProfile,
    pretty: bool,
    vector_text: Callable[[tuple[float, ...]], str] | None,
    identify: bool = False,
) -> str:
    """:func:`to_sql`, with each query vector written by ``vector_text`` when given (and
    every identifier quoted with ``identify``). A plan with steps compiles to its statement,
    which fetches the steps' candidates (:func:`~hotdata_retrieval.plan.steps.
    statement_plan`)."""
    plan = statement_plan(plan)
    if (
        plan.filter is not None
        and profile.native_hybrid_search is not None
        and native_hybrid_misfit(plan) is None
    ):
        # The native call carries its filter as one text argument, values inside: no template.
        tree = compiler_for(profile, LiteralBinder(profile)).compile(plan)
        if vector_text is not None:
            shortened = {
                profile.vector_literal(vector): vector_text(vector)
                for vector in (getattr(branch, "query_vector", None) for branch in plan.branches)
                if vector is not None
            }
            for node in tree.find_all(VectorLiteral):
                node.set("this", shortened.get(node.this, node.this))
        text: str = _sqlglot_dialect(profile).generate(
            tree, copy=False, pretty=pretty, identify=identify
        )
        return text
    shape = plan_shape(plan)
    # Whether a plan is one native hybrid_search call can depend on its values (the semantic
    # query equal to the text query, a text with words): the answer is part of the key.
    native = profile.native_hybrid_search is not None and native_hybrid_misfit(plan) is None
    cache_key = (profile, pretty, identify, native, shape.key)
    cacheable = True
    with _templates_lock:
        try:
            template = _templates.get(cache_key)
        except TypeError:  # an option of a node defined elsewhere holds a value with no hash
            template, cacheable = None, False
        if template is not None:
            _templates.move_to_end(cache_key)
    if template is None:
        tree = compiler_for(profile, SlotBinder(shape.slots)).compile(plan)
        text = _sqlglot_dialect(profile).generate(
            tree, copy=False, pretty=pretty, identify=identify
        )
        template = _Template.from_text(text)
        if cacheable:
            with _templates_lock:
                _templates[cache_key] = template
                while len(_templates) > _TEMPLATE_CACHE_SIZE:
                    _templates.popitem(last=False)
    return template.fill(
        [
            vector_text(value)
            if vector_text is not None and kind == _VECTOR
            else _render_value(profile, kind, value)
            for kind, value in shape.values
        ]
    )


def compile_plan(plan: SearchPlan, dialect: str | DialectProfile = "hotdata") -> exp.Select:
    """Compile ``plan`` to a sqlglot ``SELECT`` tree with its values as literal nodes.

    The tree is in the dialect's own nodes: each search node the compiler emitted is lowered
    as the dialect's generator spells it (``bm25_search(...)``, ``cosine_distance(...)`` for
    Hotdata), so tools that rewrite or transpile the tree see plain sqlglot. The query vector
    is one opaque node. Use :func:`to_sql` for text: it is the one door that guarantees
    byte-identical output.

    Raises:
        UnknownDialectError: ``dialect`` is not registered.
        UnsupportedOnDialectError: (an ``UnsupportedFeatureError``) the plan needs something
            the dialect cannot express.
    """
    profile = get_dialect(dialect)
    tree = compiler_for(profile, LiteralBinder(profile)).compile(statement_plan(plan))
    lowered = lower_search_nodes(tree, profile.generator)
    assert isinstance(lowered, exp.Select)
    return lowered
