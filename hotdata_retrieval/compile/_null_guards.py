"""NULL guards for engines whose optimizer folds a same-column contradiction or tautology
without regard to NULL.

**The engine fact.** DataFusion's expression simplifier merges the ``IN`` lists of one column
joined by AND or OR — ``x IN (1, 2) AND x IN (3)`` to ``x IN ()``, ``x IN (1) AND x NOT IN
(1)`` likewise, ``x NOT IN (1) OR x NOT IN (2)`` to ``x NOT IN ()`` — after reading
``x = 1 OR x = 2`` as ``x IN (1, 2)`` and ``x = 1`` as ``x IN (1)``, and then reads an empty
list as the constant FALSE (TRUE for ``NOT IN``) whatever ``x`` holds. For a NULL ``x`` SQL's
answer is NULL: under ``NOT`` (``NOT (x IN (1) AND x NOT IN (1))``), or in the tautology
itself, a NULL row is kept that SQL leaves out. Measured with the ``datafusion`` 55.0.0 wheel
(the local engine's statements, and the Hotdata engine's SQL, which its fake API runs there)
and with LanceDB 0.40.0, whose ``where`` text Lance 13.0.0 plans with DataFusion 54.1.0 (the
crates its wheel links); LanceDB 0.40.0 also folds ``f = 0.0 AND f <> 0.0`` on a float
column to FALSE (``NOT (f = 1.5 AND f <> 1.5)`` it answers right). Upstream:
apache/datafusion pull request 24258, "preserve null semantics in expression simplification".
``tests/parity/test_random_filters.py`` finds each of these forms from random filter trees.

**The guard.** An operand ``g`` of an AND or OR is *strict* in column ``c`` when it reads only
``c`` and every leaf of it is NULL when ``c`` is (a comparison, ``BETWEEN``, a non-empty
``IN`` list, a prefix or suffix, a non-empty list test — not ``IS NULL`` nor an empty list,
which are constants or TRUE for NULL), joined by AND, OR and NOT: then ``g`` is NULL wherever
``c`` is. When two or more operands of one connective are strict in one column, an optimizer
may fold them together, wrongly only for the rows where that column is NULL. The connectives
that matter are those that are an OR once their NOTs are pushed down to the leaves: an OR
under an even number of NOTs, where a fold's spurious TRUE keeps a row, and an AND under an
odd number, where a spurious FALSE does. Each such operand is written with a guard:

- under an even number of NOTs, ``(g AND (c IS NOT NULL OR NULL))``;
- under an odd number, ``(g OR (c IS NULL AND NULL))``.

Both are exactly ``g`` under three-valued logic — for a non-NULL ``c`` the guard is TRUE
(FALSE) and leaves ``g`` as it is; for a NULL ``c`` it is NULL, and so is ``g`` — so an
engine that folds nothing answers as before. The guarded operands are no longer ``IN`` lists
or comparisons of one column, so nothing merges them; an optimizer that takes the guard out
as a common factor (``(g1 OR g2) AND (c IS NOT NULL OR NULL)``) and then folds ``g1 OR g2``
still gets NULL for a NULL ``c`` (``TRUE AND NULL``, ``FALSE OR NULL``). A fold of the other
sort changes no kept row: Kleene's AND and OR are monotone and regular, so in a context with
an even number of NOTs a NULL read as FALSE keeps the same rows (a TRUE result with an
operand unknown is TRUE whatever it is), and with an odd number a NULL read as TRUE does.
DataFusion pushes a NOT through AND and OR before it merges lists; the guard moves with it and
keeps its sense (``NOT (g OR (c IS NULL AND NULL))`` is ``NOT g AND (c IS NOT NULL OR
NULL)``). The operands keep their order, and filter text reads a guarded operand back as the
operand (``compile/filter_text.py``).

Only the engines whose dialect profile says so (``DialectProfile.guards_null_folds``: the
DataFusion dialect, which LanceDB's filter text is written in) get the guard; DuckDB,
PostgreSQL, SQLite, the local engine's masks and turbopuffer answer these forms right.
"""

from __future__ import annotations

from typing import Any

from hotdata_retrieval.plan.filters import (
    And,
    ContainsAll,
    ContainsAny,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    form_of,
)


def strict_column(predicate: Predicate) -> str | None:
    """The one column ``predicate`` reads if every leaf of it is NULL when that column is
    (so the whole is), else ``None``.

    >>> from hotdata_retrieval.plan.filters import Comparison
    >>> a1 = Comparison(column="a", operator="=", value=1)
    >>> strict_column(~(a1 & InList(column="a", values=[2])))
    'a'
    >>> strict_column(a1 | IsNull(column="a")), strict_column(a1 | InList(column="a", values=[]))
    (None, None)
    >>> strict_column(a1 & Comparison(column="b", operator="=", value=1)) is None
    True
    """
    if isinstance(predicate, Not):
        return strict_column(predicate.operand)
    if isinstance(predicate, (And, Or)):
        columns = {strict_column(operand) for operand in predicate.operands}
        return columns.pop() if len(columns) == 1 else None
    if isinstance(predicate, IsNull):
        return None
    if isinstance(predicate, (InList, ContainsAll, ContainsAny)):
        return predicate.column if predicate.values else None
    form = form_of(predicate)
    if form is None or not form.leaf:
        return None
    column = getattr(predicate, "column", None)
    strict = form.truth is not None  # its row: "a NULL column value is unknown"
    if not strict and form.expand is not None:
        strict = strict_column(form.expand(predicate)) == column
    return column if strict and isinstance(column, str) else None


def guarded_columns(operands: tuple[Predicate, ...]) -> list[str | None]:
    """For each of ``operands``, the column its guard tests: the column it is strict in
    (:func:`strict_column`) when another operand is strict in it too, else ``None``.

    >>> from hotdata_retrieval.plan.filters import Comparison
    >>> a, b = (Comparison(column=name, operator="=", value=1) for name in "ab")
    >>> guarded_columns((a, b, ~a, IsNull(column="a")))
    ['a', None, 'a', None]
    """
    columns = [strict_column(operand) for operand in operands]
    return [column if columns.count(column) > 1 else None for column in columns]


def spread(connective: type[And] | type[Or], operands: tuple[Predicate, ...]) -> tuple[Any, ...]:
    """``operands`` with every operand of the same ``connective`` replaced by its own operands,
    at any depth: the chain the SQL is written as (``a AND (b AND c)`` is ``a AND b AND c``)."""
    flat: list[Predicate] = []
    for operand in operands:
        if isinstance(operand, connective):
            flat.extend(spread(connective, operand.operands))
        else:
            flat.append(operand)
    return tuple(flat)
