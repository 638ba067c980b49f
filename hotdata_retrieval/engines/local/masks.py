"""Filters evaluated over an Arrow table: the predicate tree as a row mask.

The local engine's native searches (``hybrid_search``, the nearest-neighbour fast path) apply a
plan's filter before their bound, as a boolean mask over rowids, with the meaning the compiled
SQL gives it: SQL's three-valued logic (a row passes only when the predicate is TRUE; a
comparison with NULL is unknown), ``col IN ()`` FALSE and ``col NOT IN ()`` TRUE.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hotdata_retrieval.plan.filters import (
    And,
    Comparison,
    ComparisonOperator,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
)

__all__ = ["predicate_mask"]

_COMPARE = {
    ComparisonOperator.EQUAL: pc.equal,
    ComparisonOperator.NOT_EQUAL: pc.not_equal,
    ComparisonOperator.LESS: pc.less,
    ComparisonOperator.LESS_OR_EQUAL: pc.less_equal,
    ComparisonOperator.GREATER: pc.greater,
    ComparisonOperator.GREATER_OR_EQUAL: pc.greater_equal,
}


def predicate_mask(predicate: Predicate, data: pa.Table) -> pa.Array:
    """The predicate over every row of ``data``, with SQL's three-valued logic: a boolean
    array, NULL where the predicate is unknown (a comparison with NULL).

    Raises:
        pyarrow.ArrowInvalid, pyarrow.ArrowNotImplementedError, pyarrow.ArrowTypeError: a
            comparison between types Arrow cannot compare.
    """
    rows = data.num_rows
    if isinstance(predicate, Comparison):
        return _COMPARE[predicate.operator](
            data.column(predicate.column), pa.scalar(predicate.value)
        )
    if isinstance(predicate, InList):
        if not predicate.values:  # the compiled form: FALSE, or TRUE for NOT IN ()
            return pa.array(np.full(rows, predicate.negated), type=pa.bool_())
        column = data.column(predicate.column)
        member: pa.Array = pc.equal(column, pa.scalar(predicate.values[0]))
        for value in predicate.values[1:]:
            member = pc.or_kleene(member, pc.equal(column, pa.scalar(value)))
        return pc.invert(member) if predicate.negated else member
    if isinstance(predicate, IsNull):
        column = data.column(predicate.column)
        return pc.is_valid(column) if predicate.negated else pc.is_null(column)
    if isinstance(predicate, (And, Or)):
        combine = pc.and_kleene if isinstance(predicate, And) else pc.or_kleene
        result = predicate_mask(predicate.operands[0], data)
        for operand in predicate.operands[1:]:
            result = combine(result, predicate_mask(operand, data))
        return result
    if isinstance(predicate, Not):
        return pc.invert(predicate_mask(predicate.operand, data))
    raise TypeError(f"not a predicate: {predicate!r}")  # unreachable: parsed filters are trees
