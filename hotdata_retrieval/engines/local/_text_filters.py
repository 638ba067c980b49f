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
1.54x against 1.68x. Other ranges (one-sided comparisons, a column without a coarse field)
are a range of the fast field, which tantivy scans beside the text's terms.

The same reading evaluates the filter in NumPy over any rows (:meth:`TextFilter.keeps`):
over the table's sample it estimates the filter's share, and over the hits of a prefix of
the unfiltered order it tests a filter too wide to be a clause of the query (:class:`~
hotdata_retrieval.engines.local.bm25.HitTest`); the queries are built only when used.
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

Sample = Callable[[str], tuple[np.ndarray, np.ndarray]]
"""An integer column → its values at the sampled rows and whether each is present (not
NULL)."""


Query = Callable[[], tantivy.Query]
"""A tantivy query, built when called: a filter tested on a search's hits alone
(:meth:`TextFilter.keeps`) builds none."""


class _Side(NamedTuple):
    """The rows where a node is TRUE (or FALSE): as a query, over the rows read (the sample,
    or a search's hits), and whether the query scans a fast field (a range or presence test;
    an equality reads postings)."""

    query: Query
    sampled: np.ndarray
    scans: bool


Pair = tuple[_Side, _Side] | None
"""(where a node is TRUE, where it is FALSE), or ``None``: not translated."""

_I64 = (-(2**63), 2**63 - 1)
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
    *,
    inclusive: bool = True,
) -> Query:
    """A range of field ``name``'s fast field (``None``: unbounded, which tantivy-py wants
    inclusive), its bounds inclusive or not."""
    return lambda: tantivy.Query.range_query(
        schema,
        name,
        kind,
        low,
        high,
        include_lower=inclusive or low is None,
        include_upper=inclusive or high is None,
    )


def _all_documents() -> tantivy.Query:
    return tantivy.Query.all_query()


def _no_document() -> tantivy.Query:
    return tantivy.Query.empty_query()


class _TantivyFilter(PredicateVisitor[Pair]):
    """The predicate tree as :data:`Pair` queries over ``index``'s filter fields, for a table
    of ``schema``, evaluated too on the rows ``sample`` reads."""

    def __init__(self, index: Bm25Index, schema: pa.Schema, sample: Sample) -> None:
        self.index = index
        self.schema = schema
        self.sample = sample

    def _field(self, column: str) -> tuple[str, tantivy.FieldType, tuple[int, int]] | None:
        """The field holding ``column``, its tantivy type and its range of values."""
        if column not in self.schema.names:
            return None
        kind = self.schema.field(column).type
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
        sampled = present & _COMPARE[operator](values, value)
        schema = self.index.schema
        if operator is ComparisonOperator.EQUAL:
            return _Side(_terms(schema, name, [value]), sampled, False)
        if operator is ComparisonOperator.NOT_EQUAL:
            return _Side(_but_not(_exists(name), _terms(schema, name, [value])), sampled, True)
        inclusive = operator in (
            ComparisonOperator.GREATER_OR_EQUAL,
            ComparisonOperator.LESS_OR_EQUAL,
        )
        if operator in (ComparisonOperator.GREATER, ComparisonOperator.GREATER_OR_EQUAL):
            query = _range(schema, name, kind, value, None, inclusive=inclusive)
        else:
            query = _range(schema, name, kind, None, value, inclusive=inclusive)
        return _Side(query, sampled, True)

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
        inside = (values >= low) & (values <= high)
        schema = self.index.schema
        coarse = self.index.coarse(node.column)
        scans = False
        if low > high:
            true: Query = _no_document
        elif high - low < FEW_TERMS:  # a few values: their postings
            true = _terms(schema, name, range(low, high + 1))
        elif coarse is not None and (high >> coarse[1]) - (low >> coarse[1]) < FEW_TERMS:
            # the postings of the few coarse buckets holding the range, then the range exactly
            buckets = range(low >> coarse[1], (high >> coarse[1]) + 1)
            true = _all_of(
                [_terms(schema, coarse[0], buckets), _range(schema, name, kind, low, high)]
            )
        elif coarse is not None:
            # the buckets inside the range whole, read as a range of the coarse field (an
            # indexed field, not a fast one: tantivy unions its terms' postings into one bit
            # set), and the two buckets holding its ends intersected with the exact range
            first, last = low >> coarse[1], high >> coarse[1]
            inner = _range(schema, coarse[0], kind, first + 1, last - 1)
            ends = _all_of(
                [_terms(schema, coarse[0], [first, last]), _range(schema, name, kind, low, high)]
            )
            true, scans = _any_of([inner, ends]), True
        else:
            true, scans = _range(schema, name, kind, low, high), True
        false = _but_not(_exists(name), true)
        return _Side(true, present & inside, scans), _Side(false, present & ~inside, True)

    def visit_in_list(self, node: InList) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        name, _, bounds = found
        values, present = self.sample(node.column)
        if not node.values:  # IN () is FALSE for every row, NULLs too; NOT IN () TRUE
            none = _Side(_no_document, np.zeros(values.size, dtype=bool), False)
            every = _Side(_all_documents, np.ones(values.size, dtype=bool), False)
            return (every, none) if node.negated else (none, every)
        if not all(self._integer(value, bounds) for value in node.values):
            return None
        listed = sorted(cast(set[int], set(node.values)))
        member = _terms(self.index.schema, name, listed)
        inside = _member(values, np.array(listed, dtype=values.dtype))
        kept = _Side(member, present & inside, False)
        other = _Side(_but_not(_exists(name), member), present & ~inside, True)
        return (other, kept) if node.negated else (kept, other)

    def visit_is_null(self, node: IsNull) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        _, sampled = self.sample(node.column)
        exists = _exists(found[0])
        present = _Side(exists, sampled, True)
        absent = _Side(_but_not(_all_documents, exists), ~sampled, True)
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


def _every(sides: list[_Side]) -> _Side:
    """The rows in every one of ``sides``."""
    return _Side(
        _all_of([side.query for side in sides]),
        np.logical_and.reduce([side.sampled for side in sides]),
        any(side.scans for side in sides),
    )


def _some(sides: list[_Side]) -> _Side:
    """The rows in any of ``sides``."""
    return _Side(
        _any_of([side.query for side in sides]),
        np.logical_or.reduce([side.sampled for side in sides]),
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
        return pair[0].sampled


def filter_query(
    predicate: Predicate, index: Bm25Index, schema: pa.Schema, sample: Sample
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
    """

    def translate(rows: Sample) -> Pair:
        return _TantivyFilter(index, schema, rows).predicate(predicate)

    pair = translate(sample)
    if pair is None:
        return None
    true = pair[0]
    share = float(np.count_nonzero(true.sampled)) / max(1, true.sampled.size)
    return TextFilter(translate, true, share)
