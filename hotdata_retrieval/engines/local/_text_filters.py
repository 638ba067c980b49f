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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

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

Pair = tuple[tantivy.Query, tantivy.Query, np.ndarray, np.ndarray] | None
"""(the rows where a node is TRUE, the rows where it is FALSE) as queries, then the same of
the sampled rows as boolean arrays; ``None``: not translated."""

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

_COMPARE = {
    ComparisonOperator.EQUAL: np.equal,
    ComparisonOperator.NOT_EQUAL: np.not_equal,
    ComparisonOperator.LESS: np.less,
    ComparisonOperator.LESS_OR_EQUAL: np.less_equal,
    ComparisonOperator.GREATER: np.greater,
    ComparisonOperator.GREATER_OR_EQUAL: np.greater_equal,
}


def _all_of(queries: list[tantivy.Query]) -> tantivy.Query:
    if len(queries) == 1:
        return queries[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, query) for query in queries])


def _any_of(queries: list[tantivy.Query]) -> tantivy.Query:
    if len(queries) == 1:
        return queries[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, query) for query in queries])


def _but_not(kept: tantivy.Query, dropped: tantivy.Query) -> tantivy.Query:
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, kept), (tantivy.Occur.MustNot, dropped)]
    )


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

    def _true(
        self, column: str, operator: ComparisonOperator, value: Any
    ) -> tuple[tantivy.Query, np.ndarray] | None:
        """The rows where ``column <operator> value`` is TRUE (never a NULL row), as a query
        and over the sample."""
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
            return tantivy.Query.term_query(schema, name, value), sampled
        if operator is ComparisonOperator.NOT_EQUAL:
            query = _but_not(
                tantivy.Query.exists_query(name), tantivy.Query.term_query(schema, name, value)
            )
            return query, sampled
        lower = operator in (ComparisonOperator.GREATER, ComparisonOperator.GREATER_OR_EQUAL)
        inclusive = operator in (
            ComparisonOperator.GREATER_OR_EQUAL,
            ComparisonOperator.LESS_OR_EQUAL,
        )
        if lower:
            query = tantivy.Query.range_query(
                schema, name, kind, value, None, include_lower=inclusive
            )
        else:
            query = tantivy.Query.range_query(
                schema, name, kind, None, value, include_upper=inclusive
            )
        return query, sampled

    def visit_comparison(self, node: Comparison) -> Pair:
        true = self._true(node.column, node.operator, node.value)
        false = self._true(node.column, _OPPOSITE[node.operator], node.value)
        if true is None or false is None:
            return None
        return true[0], false[0], true[1], false[1]

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
        if low > high:
            true = tantivy.Query.empty_query()
        else:
            true = tantivy.Query.range_query(schema, name, kind, low, high)
        false = _but_not(tantivy.Query.exists_query(name), true)
        return true, false, present & inside, present & ~inside

    def visit_in_list(self, node: InList) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        name, _, bounds = found
        values, present = self.sample(node.column)
        if not node.values:  # IN () is FALSE for every row, NULLs too; NOT IN () TRUE
            none, every = tantivy.Query.empty_query(), tantivy.Query.all_query()
            no, yes = np.zeros(values.size, dtype=bool), np.ones(values.size, dtype=bool)
            return (every, none, yes, no) if node.negated else (none, every, no, yes)
        if not all(self._integer(value, bounds) for value in node.values):
            return None
        schema = self.index.schema
        listed = sorted(set(node.values))
        member = _any_of([tantivy.Query.term_query(schema, name, value) for value in listed])
        other = _but_not(tantivy.Query.exists_query(name), member)
        inside = np.isin(values, np.array(listed, dtype=values.dtype))
        sampled_member, sampled_other = present & inside, present & ~inside
        if node.negated:
            return other, member, sampled_other, sampled_member
        return member, other, sampled_member, sampled_other

    def visit_is_null(self, node: IsNull) -> Pair:
        found = self._field(node.column)
        if found is None:
            return None
        _, present_sampled = self.sample(node.column)
        present = tantivy.Query.exists_query(found[0])
        absent = _but_not(tantivy.Query.all_query(), present)
        if node.negated:
            return present, absent, present_sampled, ~present_sampled
        return absent, present, ~present_sampled, present_sampled

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
        return (
            _all_of([pair[0] for pair in known]),
            _any_of([pair[1] for pair in known]),
            np.logical_and.reduce([pair[2] for pair in known]),
            np.logical_or.reduce([pair[3] for pair in known]),
        )

    def visit_or(self, node: Or) -> Pair:
        pairs = [self.predicate(operand) for operand in node.operands]
        known = [pair for pair in pairs if pair is not None]
        if len(known) < len(pairs):
            return None
        return (
            _any_of([pair[0] for pair in known]),
            _all_of([pair[1] for pair in known]),
            np.logical_or.reduce([pair[2] for pair in known]),
            np.logical_and.reduce([pair[3] for pair in known]),
        )

    def visit_not(self, node: Not) -> Pair:
        pair = self.predicate(node.operand)
        return None if pair is None else (pair[1], pair[0], pair[3], pair[2])


def filter_query(
    predicate: Predicate, index: Bm25Index, schema: pa.Schema, sample: Sample
) -> tuple[tantivy.Query, float] | None:
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
    pair = _TantivyFilter(index, schema, sample).predicate(predicate)
    if pair is None:
        return None
    kept = pair[2]
    return pair[0], float(np.count_nonzero(kept)) / max(1, kept.size)
