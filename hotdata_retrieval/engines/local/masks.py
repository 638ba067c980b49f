"""Filters evaluated over an Arrow table: the predicate tree as a row mask.

The local engine's native searches (``hybrid_search``, the nearest-neighbour fast path) apply a
plan's filter before their bound, as a boolean mask over rowids, with the meaning the compiled
SQL gives it: SQL's three-valued logic (a row passes only when the predicate is TRUE; a
comparison with NULL is unknown), ``col IN ()`` FALSE and ``col NOT IN ()`` TRUE, a string
value read as the column's type (a date, a number) as the SQL's type coercion reads it, and a
NaN in a floating-point column greater than every number, as DataFusion compares floats (and
PostgreSQL: NaN sorts above every non-NaN value), where Arrow's IEEE 754 kernels make every
ordering comparison with NaN false.
"""

from __future__ import annotations

import datetime
import functools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    ComparisonOperator,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    PredicateForm,
    PredicateVisitor,
    ValueRole,
    predicate_columns,
)

_COMPARE = {
    ComparisonOperator.EQUAL: pc.equal,
    ComparisonOperator.NOT_EQUAL: pc.not_equal,
    ComparisonOperator.LESS: pc.less,
    ComparisonOperator.LESS_OR_EQUAL: pc.less_equal,
    ComparisonOperator.GREATER: pc.greater,
    ComparisonOperator.GREATER_OR_EQUAL: pc.greater_equal,
}

_TOTAL_ORDER = {
    ComparisonOperator.EQUAL: np.equal,
    ComparisonOperator.NOT_EQUAL: np.not_equal,
    ComparisonOperator.LESS: np.less,
    ComparisonOperator.LESS_OR_EQUAL: np.less_equal,
    ComparisonOperator.GREATER: np.greater,
    ComparisonOperator.GREATER_OR_EQUAL: np.greater_equal,
}


def _total_order_keys(values: np.ndarray) -> np.ndarray:
    """Integers ordered as IEEE 754's totalOrder orders the floats: -NaN < -inf < ... < -0.0
    < 0.0 < ... < inf < NaN, a NaN equal to a NaN of its bits. Arrow's comparison kernels in
    Rust, which DataFusion runs, compare floats so (``f64::total_cmp``, arrow-ord ``cmp``)."""
    keys: np.ndarray
    if values.dtype == np.float64:
        bits = values.view(np.int64)
        keys = bits ^ ((bits >> np.int64(63)) & np.int64(np.iinfo(np.int64).max))
    else:
        bits = values.astype(np.float32).view(np.int32)
        keys = bits ^ ((bits >> np.int32(31)) & np.int32(np.iinfo(np.int32).max))
    return keys


def _float_comparison(
    operator: ComparisonOperator, column: pa.ChunkedArray, value: pa.Scalar
) -> pa.Array:
    """``column <operator> value`` for a float column, in total order (see
    :func:`_total_order_keys`), both in the wider of their types as DataFusion coerces them;
    NULL where the column is NULL."""
    wide = pa.types.is_float64(column.type) or pa.types.is_float64(value.type)
    dtype = np.float64 if wide else np.float32
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    array = pc.cast(array, pa.float64() if wide else pa.float32())
    values = np.asarray(array.fill_null(0).to_numpy(zero_copy_only=False), dtype=dtype)
    literal = np.asarray([value.as_py()], dtype=dtype)
    compared = _TOTAL_ORDER[operator](_total_order_keys(values), _total_order_keys(literal)[0])
    nulls = np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(compared, type=pa.bool_(), mask=nulls if nulls.any() else None)


def _is_text(data_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_string_view(data_type)
    )


def _reads_text(data_type: pa.DataType) -> bool:
    """Whether the SQL reads a string literal compared with a column of this type as a value
    of the type: numbers, dates, times and timestamps (DataFusion refuses ``flag = 'true'``
    on a Boolean column; so does the mask, having no kernel for it)."""
    return bool(
        pa.types.is_integer(data_type)
        or pa.types.is_floating(data_type)
        or pa.types.is_decimal(data_type)
        or pa.types.is_temporal(data_type)
    )


def _coerced(column: pa.ChunkedArray, value: Any) -> tuple[pa.ChunkedArray, pa.Scalar]:
    """The column and the filter value as the SQL compares them: DataFusion's type coercion
    reads a string literal as the column's type (``day > '2024-03-01'`` on a date column,
    ``n = '5'`` on an integer one) and a string column as the numeric literal's type (``s =
    5``), where Arrow's kernels have no comparison of a string with a date or a number.

    Numbers of two types compare as DataFusion compares them, never failing on a value: an
    integer and a float as the float's type (an integer beyond its precision rounded, where
    Arrow's implicit cast refuses it), integers of either sign exactly (as Decimal128(20, 0),
    which holds every Int64 and UInt64; Arrow would cast a UInt64 above Int64's range to Int64
    and fail).

    Raises:
        pyarrow.ArrowInvalid: the string does not read as that type (the SQL fails too).
    """
    scalar = pa.scalar(value)
    if _is_text(scalar.type) and _reads_text(column.type):
        return column, scalar.cast(column.type)
    if pa.types.is_temporal(scalar.type) and pa.types.is_temporal(column.type):
        return _temporal_pair(column, scalar)
    if _is_text(column.type) and (
        pa.types.is_integer(scalar.type) or pa.types.is_floating(scalar.type)
    ):
        return pc.cast(column, scalar.type), scalar
    integers = (pa.types.is_integer(column.type), pa.types.is_integer(scalar.type))
    floats = (pa.types.is_floating(column.type), pa.types.is_floating(scalar.type))
    if floats[0] and integers[1]:  # the integer literal as the column's float type
        return column, pa.scalar(float(scalar.as_py())).cast(column.type, safe=False)
    if integers[0] and floats[1]:
        return pc.cast(column, scalar.type, safe=False), scalar
    if all(integers) and (
        pa.types.is_unsigned_integer(column.type) != pa.types.is_unsigned_integer(scalar.type)
    ):
        exact = pa.decimal128(20, 0)
        return pc.cast(column, exact), scalar.cast(exact)
    return column, scalar


def _temporal_pair(column: Any, scalar: pa.Scalar) -> tuple[Any, pa.Scalar]:
    """A date or timestamp column and literal in one type, as DataFusion coerces them: a
    date with a timestamp as timestamps (the date at midnight); a literal without a time
    zone, which the plan holds in UTC, in the column's zone. A column of seconds or
    milliseconds is compared in microseconds, the literal's unit, so a literal between two
    of its values is compared exactly (Arrow refuses to cast it to the coarser unit)."""
    if pa.types.is_timestamp(column.type):
        if pa.types.is_date(scalar.type):
            scalar = pa.scalar(datetime.datetime.combine(scalar.as_py(), datetime.time()))
        if column.type.unit in ("s", "ms"):
            column = pc.cast(column, pa.timestamp("us", column.type.tz))
        return column, scalar.cast(column.type)
    if pa.types.is_date(column.type) and pa.types.is_timestamp(scalar.type):
        return pc.cast(column, pa.timestamp("us")), scalar.cast(pa.timestamp("us"))
    return column, scalar.cast(column.type)


def _compare(operator: ComparisonOperator, column: pa.ChunkedArray, value: pa.Scalar) -> pa.Array:
    """``column <operator> value`` after :func:`_coerced`: floats in total order
    (:func:`_float_comparison`), anything else by Arrow's kernel."""
    if pa.types.is_floating(column.type) and pa.types.is_floating(value.type):
        return _float_comparison(operator, column, value)
    compared: pa.Array = _COMPARE[operator](column, value)
    return compared


class ArrowMask(PredicateVisitor[pa.Array]):
    """The predicate tree as pyarrow compute kernels over one table: each node's method
    returns a boolean array of ``data.num_rows`` values, NULL where the predicate is unknown.

    Args:
        data: the table whose rows the predicate is evaluated on.
    """

    def __init__(self, data: pa.Table) -> None:
        self.data = data

    def visit_comparison(self, node: Comparison) -> pa.Array:
        return _compare(node.operator, *_coerced(self.data.column(node.column), node.value))

    def visit_in_list(self, node: InList) -> pa.Array:
        if not node.values:  # the compiled form: FALSE, or TRUE for NOT IN ()
            return pa.array(np.full(self.data.num_rows, node.negated), type=pa.bool_())
        original = self.data.column(node.column)
        member: pa.Array | None = None
        for value in node.values:
            equal = _compare(ComparisonOperator.EQUAL, *_coerced(original, value))
            member = equal if member is None else pc.or_kleene(member, equal)
        assert member is not None
        return pc.invert(member) if node.negated else member

    def visit_is_null(self, node: IsNull) -> pa.Array:
        column = self.data.column(node.column)
        return pc.is_valid(column) if node.negated else pc.is_null(column)

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> pa.Array:
        """A leaf by its row's pyarrow compute function, ``function(column, value, ...)``
        (a text test on a text column only: DataFusion has no ``starts_with`` of another
        type), or else as its expansion (``BETWEEN`` as two comparisons)."""
        if form.arrow is None:
            assert form.expand is not None  # reads_row
            return self.predicate(form.expand(node))
        column = self.data.column(node.column)
        if form.role is ValueRole.TEXT and not _is_text(column.type):
            raise pa.ArrowInvalid(f"{form.name} needs a text column, got {column.type}")
        function = getattr(pc, form.arrow)
        result: pa.Array = function(column, *form.arguments_of(node))
        return result

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return form.arrow is not None or form.expand is not None

    def visit_contains_all(self, node: ContainsAll) -> pa.Array:
        return self._elements(node.column, node.values, every=True)

    def visit_contains_any(self, node: ContainsAny) -> pa.Array:
        return self._elements(node.column, node.values, every=False)

    def _elements(self, name: str, values: tuple[Any, ...], *, every: bool) -> pa.Array:
        """Whether each row's list holds every (or any) of ``values``: NULL for a NULL list;
        an empty ``values`` is TRUE (every) or FALSE (any) for every row, as compiled."""
        rows = self.data.num_rows
        if not values:
            return pa.array(np.full(rows, every), type=pa.bool_())
        lists = self.data.column(name).combine_chunks()
        kind = lists.type
        if not (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and not (
            pa.types.is_fixed_size_list(kind)
        ):
            raise pa.ArrowInvalid(f"a list test needs a list column, got {kind}")
        elements = pc.list_flatten(lists)
        parents = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False))
        holds = np.full(rows, every)
        for value in values:
            equal = _compare(ComparisonOperator.EQUAL, *_coerced(elements, value))
            hit = true_rows(equal)
            found = np.zeros(rows, dtype=bool)
            found[parents[hit]] = True
            holds = holds & found if every else holds | found
        nulls = np.asarray(lists.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        return pa.array(holds, type=pa.bool_(), mask=nulls if nulls.any() else None)

    def visit_and(self, node: And) -> pa.Array:
        return functools.reduce(pc.and_kleene, map(self.predicate, node.operands))

    def visit_or(self, node: Or) -> pa.Array:
        return functools.reduce(pc.or_kleene, map(self.predicate, node.operands))

    def visit_not(self, node: Not) -> pa.Array:
        return pc.invert(self.predicate(node.operand))


def predicate_mask(predicate: Predicate, data: pa.Table) -> pa.Array:
    """The predicate over every row of ``data``, with SQL's three-valued logic: a boolean
    array, NULL where the predicate is unknown (a comparison with NULL).

    Raises:
        pyarrow.ArrowInvalid, pyarrow.ArrowNotImplementedError, pyarrow.ArrowTypeError: a
            comparison between types Arrow cannot compare.
    """
    return ArrowMask(data).predicate(predicate)


def true_rows(truth: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Where a boolean Arrow array is TRUE (FALSE and NULL are not), as a NumPy bool array.

    The bitmap is unpacked with ``numpy.unpackbits`` (Arrow's boolean layout is a bitmap,
    least significant bit first: Arrow columnar format, "Fixed-size primitive layout"), about
    a tenth of what ``to_numpy`` spends converting a boolean array element by element."""
    array = truth.combine_chunks() if isinstance(truth, pa.ChunkedArray) else truth
    if array.null_count:
        array = pc.fill_null(array, False)
    if not len(array):
        return np.zeros(0, dtype=bool)
    bits = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    unpacked = np.unpackbits(bits, bitorder="little", count=array.offset + len(array))
    return unpacked[array.offset :].view(bool)


def passing_rows(predicate: Predicate, data: pa.Table) -> np.ndarray:
    """The rows of ``data`` the predicate is TRUE for (neither FALSE nor unknown), as a
    boolean NumPy array: what a ``WHERE`` keeps.

    Raises:
        as :func:`predicate_mask`.
    """
    return true_rows(predicate_mask(predicate, data))


def reads_as_sql(predicate: Predicate, schema: pa.Schema) -> bool:
    """Whether the row mask (:func:`passing_rows`) keeps exactly the rows a ``WHERE`` of
    ``predicate`` keeps over a table of ``schema`` (:class:`_MaskedAsSql`): what the native
    search and the fast-path rewrite check before they put the mask in the ``WHERE``'s place."""
    for column in predicate_columns(predicate):
        if column in schema.names and pa.types.is_decimal(schema.field(column).type):
            return False
    return bool(_MaskedAsSql().predicate(predicate))


class _MaskedAsSql(PredicateVisitor[bool]):
    """Per node, whether the row mask (:class:`ArrowMask`) reads it as the statement does.
    Not for: a decimal column (DataFusion casts a
    float literal to the decimal type, the mask the column to float; checked for the whole
    filter), an ``IN`` list of values of several types (DataFusion compares the column with
    the list's common type, the mask with each value's), and an empty ``IN`` list (it compiles
    to a constant, which the fast-path rewrite does not take; an empty list test likewise).
    Such a statement runs row by row, its nearest branch's ties ordered by the key the engine
    puts back (:func:`~hotdata_retrieval.engines.local.fastpath.restore_tie_breaks`).
    Every node has its answer: one this class does not know is an error, never a yes."""

    def read_row(self, node: Any, form: PredicateForm, *args: Any) -> bool:
        """Yes for a leaf whose values are of one type (DataFusion compares a column with
        values of several types in their common type, the mask with each value's)."""
        return len({type(value) for value in form.values_of(node)}) <= 1

    @classmethod
    def reads_row(cls, form: PredicateForm) -> bool:
        return True

    def visit_in_list(self, node: InList) -> bool:
        kinds = {(type(value) is bool, isinstance(value, str)) for value in node.values}
        floats = {isinstance(value, float) for value in node.values}
        return bool(node.values) and len(kinds) == 1 and len(floats) == 1

    def visit_contains_all(self, node: ContainsAll) -> bool:
        return bool(node.values) and len({type(value) for value in node.values}) == 1

    def visit_contains_any(self, node: ContainsAny) -> bool:
        return bool(node.values) and len({type(value) for value in node.values}) == 1

    def visit_and(self, node: And) -> bool:
        return all(self.predicate(operand) for operand in node.operands)

    def visit_or(self, node: Or) -> bool:
        return all(self.predicate(operand) for operand in node.operands)

    def visit_not(self, node: Not) -> bool:
        return bool(self.predicate(node.operand))
