"""A filter as a tantivy query over the BM25 index's integer filter fields, so a filtered text
search is one query of the index: the text's terms and the filter as a required clause scored
0 (:meth:`~hotdata_retrieval.engines.local.bm25.Bm25Index.search`'s ``where``), with no row
mask evaluated and no prefix of the unfiltered order read and masked in Python.

The query keeps exactly the rows the row mask keeps
(:func:`~hotdata_retrieval.engines.local.masks.passing_rows`, SQL's three-valued logic): each
node is read as two queries, the rows where it is TRUE and the rows where it is FALSE, a row
whose value is NULL (a document without the field) in neither. ``NOT`` swaps them, ``AND`` is
TRUE where every operand is and FALSE where any is, ``OR`` the reverse. Only what reads the
same in tantivy as in SQL is translated: a comparison, ``BETWEEN``, ``IN`` list and ``IS NULL``
test of an integer column the index holds, with integer values (not booleans) within the
field's range (i64; u64 for a UInt64 column), whose comparisons are then exact on both sides.
Anything else (another column type, a float or string value, a text or list test) gives
``None`` and the search masks as before.

Equalities and ``IN`` lists read the field's postings. A ``BETWEEN`` of a few values reads
theirs too, and one inside a few of the column's coarse buckets (its values shifted right:
:func:`~hotdata_retrieval.engines.local.bm25.coarse_shift`) reads those buckets' postings
intersected with the exact range (:data:`FEW_TERMS`). A wider ``BETWEEN`` is the buckets
inside it whole, a range of the coarse field (indexed, not a fast field: tantivy reads its
terms' postings into one bit set), and the two buckets holding its ends intersected with
the exact range; measured in raw tantivy on the filtered benchmark's 100,000-row table (CPU
time, limit 21, ratios to the unfiltered search, load average 9), a scattered range keeping
5% cost 1.05x so against 1.53x as a range of the fast field, 10% 1.37x against 1.60x, 12.5%
1.54x against 1.68x. A one-sided comparison (``<``, ``<=``, ``>``, ``>=``) is read as the
``BETWEEN`` from its value to the end of the field's range (i64 or u64), so its coarse
buckets too: in raw tantivy on that table (a scattered column, new each call, medians of 400
per-round ratios to the unfiltered search), ``<`` keeping 0.5% cost 0.63x so against 1.40x
as a range of the fast field, 1% 0.69x against 1.35x, 3% 0.89x against 1.38x, 10% 1.30x
against 1.55x. A range of a column without a coarse field is a range of the fast field,
which tantivy scans beside the text's terms.

The same reading evaluates the filter in NumPy over any rows (:meth:`TextFilter.keeps`):
over the table's sample it estimates the filter's share, and over the hits of a prefix of
the unfiltered order it tests a filter too wide to be a clause of the query (:class:`~
hotdata_retrieval.engines.local.bm25.HitTest`); the queries and the rows' masks are built
only when used. A comparison, ``BETWEEN``, ``IN`` list or ``IS NULL`` test (and its ``NOT``)
counts the sampled rows it keeps by a binary search of the column's sorted sample
(:data:`Ordered`) where one is given, with no mask of the sample, and a FALSE side's mask is
built only under a ``NOT``, ``AND`` or ``OR`` that reads it: NumPy's fixed cost per operation
on a mask of 2,048 rows was most of a new filter's translation. Measured on the filtered
benchmark's table, the two translations interleaved in one process (medians of paired
ratios): a new 1% range 0.76x, a new 10% range 0.80x, an equality 0.88x, an ``AND`` of a
range and a comparison 0.77x (about 20 µs a translation after, 22 to 35 before).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, cast

import numpy as np
import pyarrow as pa
import tantivy

from hotdata_retrieval.engines.local.bm25 import Bm25Index, filter_field
from hotdata_retrieval.plan.filters import (
    And,
    Between,
    Comparison,
    ComparisonOperator,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
)
from hotdata_retrieval.plan.values import INT64_MAX, INT64_MIN

Sample = Callable[[str], tuple[np.ndarray, np.ndarray]]
"""An integer column → its values at the sampled rows and whether each is present (not
NULL)."""


Ordered = Callable[[str], np.ndarray]
"""An integer column → its present (not NULL) values at the sampled rows of :data:`Sample`,
sorted (of the sample's dtype)."""


Query = Callable[[], tantivy.Query]
"""A tantivy query, built when called: a filter tested on a search's hits alone
(:meth:`TextFilter.keeps`) builds none."""


class _Side(NamedTuple):
    """The rows where a node is TRUE (or FALSE): as a query, over the rows read (the sample,
    or a search's hits) as a mask built when called, whether the query scans a fast field
    (a range or presence test; an equality reads postings), and how many of the sampled
    rows they are, counted when called (``None``: not known without the mask)."""

    query: Query
    sampled: Callable[[], np.ndarray]
    scans: bool
    counted: Callable[[], int] | None = None


Pair = tuple[_Side, _Side] | None
"""(where a node is TRUE, where it is FALSE), or ``None``: not translated."""

_I64 = (INT64_MIN, INT64_MAX)
_U64 = (0, 2**64 - 1)

_OPPOSITE = {
    ComparisonOperator.EQUAL: ComparisonOperator.NOT_EQUAL,
    ComparisonOperator.NOT_EQUAL: ComparisonOperator.EQUAL,
    ComparisonOperator.LESS: ComparisonOperator.GREATER_OR_EQUAL,
    ComparisonOperator.GREATER_OR_EQUAL: ComparisonOperator.LESS,
    ComparisonOperator.GREATER: ComparisonOperator.LESS_OR_EQUAL,
    ComparisonOperator.LESS_OR_EQUAL: ComparisonOperator.GREATER,
}
"""Each comparison's FALSE for a non-NULL value: the other operator's TRUE."""

FEW_TERMS = 8
"""A ``BETWEEN`` of at most this many values is read as their terms' postings, and one whose
values fall in at most this many coarse buckets (:data:`~hotdata_retrieval.engines.local.
bm25.COARSE_BUCKETS_BITS`) as those buckets' postings intersected with the exact range: a
union of a few postings drives the intersection with the text's terms, where a fast field's
range is scanned beside them; a union of many costs more than the scan."""

_COMPARE = {
    ComparisonOperator.EQUAL: np.equal,
    ComparisonOperator.NOT_EQUAL: np.not_equal,
    ComparisonOperator.LESS: np.less,
    ComparisonOperator.LESS_OR_EQUAL: np.less_equal,
    ComparisonOperator.GREATER: np.greater,
    ComparisonOperator.GREATER_OR_EQUAL: np.greater_equal,
}


def _all_of(queries: list[Query]) -> Query:
    if len(queries) == 1:
        return queries[0]
    return lambda: tantivy.Query.boolean_query([(tantivy.Occur.Must, query()) for query in queries])


def _any_of(queries: list[Query]) -> Query:
    if len(queries) == 1:
        return queries[0]
    return lambda: tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, query()) for query in queries]
    )


def _but_not(kept: Query, dropped: Query) -> Query:
    return lambda: tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, kept()), (tantivy.Occur.MustNot, dropped())]
    )


def _terms(schema: tantivy.Schema, name: str, values: Iterable[int]) -> Query:
    """The documents holding any of ``values`` in field ``name``: their postings."""

    def term(value: int) -> Query:
        return lambda: tantivy.Query.term_query(schema, name, value)

    return _any_of([term(value) for value in values])


def _exists(name: str) -> Query:
    return lambda: tantivy.Query.exists_query(name)


def _range(
    schema: tantivy.Schema,
    name: str,
    kind: tantivy.FieldType,
    low: int | None,
    high: int | None,
) -> Query:
    """The inclusive range ``low`` to ``high`` of field ``name``'s fast field (``None``:
    unbounded)."""
    return lambda: tantivy.Query.range_query(
        schema, name, kind, low, high, include_lower=True, include_upper=True
    )


def _all_documents() -> tantivy.Query:
    return tantivy.Query.all_query()


def _no_document() -> tantivy.Query:
    return tantivy.Query.empty_query()


class _TantivyFilter(PredicateVisitor[Pair]):
    """The predicate tree as :data:`Pair` queries over ``index``'s filter fields, for a table
    of ``schema``, evaluated too on the rows ``sample`` reads."""

    def __init__(
        self, index: Bm25Index, schema: pa.Schema, sample: Sample, ordered: Ordered | None = None
    ) -> None:
        self.index = index
        self.schema = schema
        self.sample = sample
        self.ordered = ordered

    def _field(self, column: str) -> tuple[str, tantivy.FieldType, tuple[int, int]] | None:
        """The field holding ``column``, its tantivy type and its range of values."""
        position = self.schema.get_field_index(column)  # -1: no such column (or two)
        if position < 0:
            return None
        kind = self.schema.field(position).type
        if not pa.types.is_integer(kind) or not self.index.holds(column):
            return None
        if pa.types.is_uint64(kind):
            return filter_field(column), tantivy.FieldType.Unsigned, _U64
        return filter_field(column), tantivy.FieldType.Integer, _I64

    @staticmethod
    def _integer(value: Any, bounds: tuple[int, int]) -> bool:
        return type(value) is int and bounds[0] <= value <= bounds[1]

    def _true(self, column: str, operator: ComparisonOperator, value: Any) -> _Side | None:
        """The rows where ``column <operator> value`` is TRUE (never a NULL row)."""
        found = self._field(column)
        if found is None:
            return None
        name, kind, bounds = found
        if not self._integer(value, bounds):
            return None
        values, present = self.sample(column)
        compare = _COMPARE[operator]

        def sampled() -> np.ndarray:
            kept: np.ndarray = present & compare(values, value)
            return kept

        count = None if self.ordered is None else _counted(self.ordered(column), operator, value)
        schema = self.index.schema
        if operator is ComparisonOperator.EQUAL:
            return _Side(_terms(schema, name, [value]), sampled, False, count)
        if operator is ComparisonOperator.NOT_EQUAL:
            return _Side(
                _but_not(_exists(name), _terms(schema, name, [value])), sampled, True, count
            )
        # a one-sided range as the values from it to the field's end, read as BETWEEN is
        if operator is ComparisonOperator.GREATER_OR_EQUAL:
            low, high = value, bounds[1]
        elif operator is ComparisonOperator.GREATER:
            low, high = value + 1, bounds[1]
        elif operator is ComparisonOperator.LESS_OR_EQUAL:
            low, high = bounds[0], value
        else:
            low, high = bounds[0], value - 1
        query, scans = self._span(column, name, kind, low, high)
        return _Side(query, sampled, scans, count)

    def _span(
        self, column: str, name: str, kind: tantivy.FieldType, low: int, high: int
    ) -> tuple[Query, bool]:
        """The documents whose value of ``column`` (field ``name`` of type ``kind``) lies in
        ``[low, high]`` (none if ``low > high``), and whether the query scans a fast field."""
        schema = self.index.schema
        coarse = self.index.coarse(column)
        if low > high:
            return _no_document, False
        if high - low < FEW_TERMS:  # a few values: their postings
            return _terms(schema, name, range(low, high + 1)), False
        if coarse is not None and (high >> coarse[1]) - (low >> coarse[1]) < FEW_TERMS:
            # the postings of the few coarse buckets holding the range, then the range exactly
            buckets = range(low >> coarse[1], (high >> coarse[1]) + 1)
            return _all_of(
                [_terms(schema, coarse[0], buckets), _range(schema, name, kind, low, high)]
            ), False
        if coarse is not None:
            # the buckets inside the range whole, read as a range of the coarse field (an
            # indexed field, not a fast one: tantivy unions its terms' postings into one bit
            # set), and the two buckets holding its ends intersected with the exact range
            first, last = low >> coarse[1], high >> coarse[1]
            inner = _range(schema, coarse[0], kind, first + 1, last - 1)
            ends = _all_of(
                [_terms(schema, coarse[0], [first, last]), _range(schema, name, kind, low, high)]
            )
            return _any_of([inner, ends]), True
        return _range(schema, name, kind, low, high), True

    def visit_comparison(self, node: Comparison) -> Pair:
        true = self._true(node.column, node.operator, node.value)
        false = self._true(node.column, _OPPOSITE[node.operator], node.value)
        return None if true is None or false is None else (true, false)

    def visit_between(self, node: Between) -> Pair:
        """One range of the fast field (two half-open ranges intersected read about every
        row twice); FALSE below ``low`` or above ``high``."""
        found = self._field(node.column)
        if found is None:
            return None
        name, kind, bounds = found
        if not (self._integer(node.low, bounds) and self._integer(node.high, bounds)):
            return None
        low, high = cast(int, node.low), cast(int, node.high)
        values, present = self.sample(node.column)

        def inside() -> np.ndarray:
            found: np.ndarray = (values >= low) & (values <= high)
            return found

        true, scans = self._span(node.column, name, kind, low, high)
        false = _but_not(_exists(name), true)
        kept = outside = None
        if self.ordered is not None:
            ordered = self.ordered(node.column)
            kept = _between(ordered, low, high)
            outside = _rest(ordered.size, kept)
        return (
            _Side(true, lambda: present & inside(), scans, kept),
            _Side(false, lambda: present & ~inside(), True, outside),
        )

    def visit_in_list(self, node: InList) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        name, _, bounds = found
        values, present = self.sample(node.column)
        size = values.size
        if not node.values:  # IN () is FALSE for every row, NULLs too; NOT IN () TRUE
            none = _Side(_no_document, lambda: np.zeros(size, dtype=bool), False, lambda: 0)
            every = _Side(_all_documents, lambda: np.ones(size, dtype=bool), False, lambda: size)
            return (every, none) if node.negated else (none, every)
        if not all(self._integer(value, bounds) for value in node.values):
            return None
        listed = sorted(cast(set[int], set(node.values)))
        member = _terms(self.index.schema, name, listed)
        members = np.array(listed, dtype=values.dtype)

        def inside() -> np.ndarray:
            return _member(values, members)

        counted = outside = None
        if self.ordered is not None:
            ordered = self.ordered(node.column)
            counted = _listed(ordered, members)
            outside = _rest(ordered.size, counted)
        kept = _Side(member, lambda: present & inside(), False, counted)
        other = _Side(_but_not(_exists(name), member), lambda: present & ~inside(), True, outside)
        return (other, kept) if node.negated else (kept, other)

    def visit_is_null(self, node: IsNull) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        values, sampled = self.sample(node.column)
        exists = _exists(found[0])
        known = missing = None
        if self.ordered is not None:
            ordered = self.ordered(node.column)
            known = _rest(ordered.size, lambda: 0)
            missing = _rest(values.size, known)
        present = _Side(exists, lambda: sampled, True, known)
        absent = _Side(_but_not(_all_documents, exists), lambda: ~sampled, True, missing)
        return (present, absent) if node.negated else (absent, present)

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> Pair:
        """A leaf defined by its expansion (``BETWEEN`` as two comparisons) as that; any
        other leaf (a text or list test) is not translated."""
        if form.expand is None:
            return None
        return self.predicate(form.expand(node))

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

    def visit_and(self, node: And) -> Pair:
        pairs = [self.predicate(operand) for operand in node.operands]
        known = [pair for pair in pairs if pair is not None]
        if len(known) < len(pairs):
            return None
        return _every([pair[0] for pair in known]), _some([pair[1] for pair in known])

    def visit_or(self, node: Or) -> Pair:
        pairs = [self.predicate(operand) for operand in node.operands]
        known = [pair for pair in pairs if pair is not None]
        if len(known) < len(pairs):
            return None
        return _some([pair[0] for pair in known]), _every([pair[1] for pair in known])

    def visit_not(self, node: Not) -> Pair:
        pair = self.predicate(node.operand)
        return None if pair is None else (pair[1], pair[0])


def _member(values: np.ndarray, listed: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is one of ``listed`` (sorted, not empty, of their dtype): a
    binary search, which costs a few microseconds on a few hundred hits where ``np.isin``
    costs 25 to 55 (measured, NumPy 2.4).

    >>> _member(np.array([3, 9, 4, 0]), np.array([0, 4, 7])).tolist()
    [False, False, True, True]
    """
    positions = np.searchsorted(listed, values)
    np.minimum(positions, listed.size - 1, out=positions)
    found: np.ndarray = listed[positions] == values
    return found


def _counted(ordered: np.ndarray, operator: ComparisonOperator, value: int) -> Callable[[], int]:
    """How many of the sorted values ``ordered`` compare with ``value`` as ``operator`` says
    (two binary searches at most).

    >>> ordered = np.array([1, 3, 3, 7])
    >>> [_counted(ordered, ComparisonOperator(op), 3)() for op in ("=", "!=", "<", "<=", ">", ">=")]
    [2, 2, 1, 3, 1, 3]
    """

    def count() -> int:
        if operator in (ComparisonOperator.EQUAL, ComparisonOperator.NOT_EQUAL):
            equal = int(np.searchsorted(ordered, value, side="right")) - int(
                np.searchsorted(ordered, value, side="left")
            )
            return equal if operator is ComparisonOperator.EQUAL else ordered.size - equal
        # the values below value (LESS, GREATER_OR_EQUAL) or through it (the other two)
        if operator in _LEFT:
            below = int(np.searchsorted(ordered, value, side="left"))
        else:
            below = int(np.searchsorted(ordered, value, side="right"))
        return below if operator in _BELOW else ordered.size - below

    return count


_LEFT = (ComparisonOperator.LESS, ComparisonOperator.GREATER_OR_EQUAL)
"""The comparisons whose count splits the sorted values before ``value``'s first equal."""
_BELOW = (ComparisonOperator.LESS, ComparisonOperator.LESS_OR_EQUAL)
"""The comparisons that keep the values before the split (the others, those after it)."""


def _between(ordered: np.ndarray, low: int, high: int) -> Callable[[], int]:
    """How many of the sorted values ``ordered`` lie in ``[low, high]`` (none if ``low >
    high``).

    >>> _between(np.array([1, 3, 3, 7]), 2, 7)(), _between(np.array([1, 3]), 3, 1)()
    (3, 0)
    """

    def count() -> int:
        if low > high:
            return 0
        return int(np.searchsorted(ordered, high, side="right")) - int(
            np.searchsorted(ordered, low, side="left")
        )

    return count


def _listed(ordered: np.ndarray, members: np.ndarray) -> Callable[[], int]:
    """How many of the sorted values ``ordered`` are one of ``members`` (sorted, distinct).

    >>> _listed(np.array([1, 3, 3, 7]), np.array([3, 4, 7]))()
    3
    """

    def count() -> int:
        through = np.searchsorted(ordered, members, side="right")
        return int((through - np.searchsorted(ordered, members, side="left")).sum())

    return count


def _rest(size: int, count: Callable[[], int]) -> Callable[[], int]:
    """``size`` minus what ``count`` counts."""
    return lambda: size - count()


def _every(sides: list[_Side]) -> _Side:
    """The rows in every one of ``sides``."""
    return _Side(
        _all_of([side.query for side in sides]),
        lambda: np.logical_and.reduce([side.sampled() for side in sides]),
        any(side.scans for side in sides),
    )


def _some(sides: list[_Side]) -> _Side:
    """The rows in any of ``sides``."""
    return _Side(
        _any_of([side.query for side in sides]),
        lambda: np.logical_or.reduce([side.sampled() for side in sides]),
        any(side.scans for side in sides),
    )


class TextFilter:
    """A filter as a query of a BM25 index (:func:`filter_query`), and as a test of any rows
    (:meth:`keeps`).

    Attributes:
        share: the share of the sampled rows it keeps.
        postings: whether the query reads postings alone (equalities, ``IN`` lists): then
            each of the text's terms is intersected with it, which lets its postings drive
            every intersection (:meth:`~hotdata_retrieval.engines.local.bm25.Bm25Index.
            search`'s ``spread``); a range or presence test scans a fast field and is
            intersected with the terms' disjunction.
    """

    __slots__ = ("_build", "_query", "_translate", "postings", "share")

    def __init__(self, translate: Callable[[Sample], Pair], true: _Side, share: float) -> None:
        self._translate = translate
        self._build = true.query
        self._query: tantivy.Query | None = None
        self.share = share
        self.postings = not true.scans

    @property
    def query(self) -> tantivy.Query:
        """The documents whose rows the filter keeps (built on first use)."""
        if self._query is None:
            self._query = self._build()
        return self._query

    def keeps(self, rows: Sample) -> np.ndarray:
        """Whether the filter keeps (is TRUE for) each of the rows ``rows`` reads (an integer
        column → its values at those rows and whether each is present), as the row mask
        would (:func:`~hotdata_retrieval.engines.local.masks.passing_rows`); no query is
        built."""
        pair = self._translate(rows)
        assert pair is not None  # translated over the sample, so over any rows
        return pair[0].sampled()


def filter_query(
    predicate: Predicate,
    index: Bm25Index,
    schema: pa.Schema,
    sample: Sample,
    ordered: Ordered | None = None,
) -> TextFilter | None:
    """The documents of ``index`` whose rows ``predicate`` keeps (is TRUE for), as a tantivy
    query, with the share of the sampled rows it keeps; ``None`` when the filter is not one
    the index can evaluate (module docstring).

    Args:
        predicate: the plan's filter.
        index: the BM25 index of a column of the table.
        schema: the table's Arrow schema (the columns' types).
        sample: the sampled rows' values of an integer column
            (:meth:`~hotdata_retrieval.engines.local.tables.LoadedTable.sampled`).
        ordered: the sampled rows' present values of an integer column, sorted
            (:meth:`~hotdata_retrieval.engines.local.tables.LoadedTable.sampled_order`): a
            leaf then counts the rows it keeps by binary search, no mask built (the same
            count).
    """

    def translate(rows: Sample, ordered: Ordered | None = None) -> Pair:
        return _TantivyFilter(index, schema, rows, ordered).predicate(predicate)

    pair = translate(sample, ordered)
    if pair is None:
        return None
    true = pair[0]
    if true.counted is None:
        sampled = true.sampled()
        return TextFilter(translate, true, int(np.count_nonzero(sampled)) / max(1, sampled.size))
    size = sample(_a_column(predicate))[0].size  # every column's sample has this many rows
    return TextFilter(translate, true, true.counted() / max(1, size))


def _a_column(predicate: Predicate) -> str:
    """A column ``predicate`` reads (its first leaf's, for the connectives translated)."""
    while isinstance(predicate, (And, Or, Not)):
        predicate = predicate.operand if isinstance(predicate, Not) else predicate.operands[0]
    return cast(str, cast(Any, predicate).column)
