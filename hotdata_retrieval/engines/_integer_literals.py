"""An integer column compared with a floating-point literal, as the exact integer comparison.

Engines disagree on ``n = 9007199254740992.0`` (2.0**53) over a BIGINT column holding
2**53 + 1: DataFusion (the local engine, LanceDB, the Hotdata engine) and DuckDB compare in
float64, where 2**53 + 1 rounds to 2**53 and the row is kept; SQLite compares the integer
with the float's exact value, and keeps nothing; PostgreSQL reads the literal as
``numeric`` and agrees with SQLite. Near the 64-bit ends it is worse: 2.0**63 is above every
BIGINT, yet INT64_MAX in float64 *is* 2.0**63.

The library gives every engine one meaning, the mathematical one: the integer compared with
the float's exact value. It rewrites each such comparison, before any engine sees it, into
an equivalent one with an integer literal, which every engine compares exactly:

- ``n < 2.5`` is ``n <= 2``, ``n > 2.5`` is ``n >= 3``, ``n <= 2.0`` is ``n <= 2``;
- ``n = 2.5`` holds for no integer and ``n != 2.5`` for every one: they become a comparison
  that is FALSE (or TRUE) for every value of the column and still NULL for a NULL row
  (``n < -9223372036854775808``, ``n >= -9223372036854775808``; from 0 for an unsigned
  column), so ``NOT`` keeps SQL's three-valued logic;
- a literal beyond the column's range (``n < 1e19`` on a signed 64-bit column) likewise;
- ``BETWEEN`` and ``IN`` by the same rules (an ``IN`` value no integer equals is dropped, an
  ``IN`` list left empty is the FALSE comparison, NULL for a NULL row, not ``IN ()``).

An engine that refuses an integer literal its column's type cannot hold (LanceDB refuses
``i8 <= 300`` on an int8 column, "could not convert to literal of type", where every other
engine keeps every non-NULL row) has each integer literal outside the column's range
rewritten by the same rules (``fitted``): ``i8 <= 300`` is ``i8 >= -128``, ``u8 < -1`` is
``u8 < 0``, ``i8 IN (2, 300)`` is ``i8 IN (2)``; one inside it stays.

An unsigned 64-bit column holds integers past the largest plan literal (INT64_MAX): a
comparison whose exact form needs one (``u = 1e19``) is refused with a :class:`PlanError`
naming it, where the engine would have answered in float64.

The mirror image, an integer literal compared with a **float64 column**, is compared exactly
too (:func:`exact_float_predicate`): DataFusion, DuckDB and PostgreSQL cast the literal to
float64 (``f = 9007199254740993`` holds for a stored 2.0**53 there), SQLite compares the
float's exact value with the integer. An integer float64 holds exactly leaves the comparison
as it is; one it does not (2**53 + 1, INT64_MAX) lies strictly between two neighbouring
float64 values, the largest below it and the smallest above it, so:

- ``f < 2**53 + 1`` and ``f <= 2**53 + 1`` are ``f <= 2.0**53``; ``f > 2**53 + 1`` and
  ``f >= 2**53 + 1`` are ``f >= 2.0**53 + 2``;
- ``f = 2**53 + 1`` holds for no float and ``f != 2**53 + 1`` for every one:
  ``f < 0.0 AND f >= 0.0`` and ``f = 0.0 OR f != 0.0``, NULL for a NULL row. No single
  comparison with a finite literal (a plan holds no other) is FALSE for every float: a
  column may hold infinities and NaN, which DataFusion, DuckDB and PostgreSQL order above
  every number and IEEE 754 (NumPy) with none; both forms answer alike for NaN either way.
  (``f = 0.0 AND f != 0.0`` would not do: LanceDB folds it to FALSE, so its ``NOT`` keeps
  NULL rows);
- ``BETWEEN`` and ``IN`` by the same rules.

A **date column of a store that holds dates as text** (SQLite, which compares them as text)
compared with a timestamp is compared as every other engine compares it, the date read as
midnight UTC of its day (:func:`exact_date_predicate`): the timestamp in UTC (an aware one
converted, a naive one taken as UTC, as the engines run), then, as an integer against a float
above, at midnight its date, past midnight a bound between two days (``day < '2020-01-01
05:00'`` is ``day <= DATE '2020-01-01'``, ``day >= ...`` is ``day >= DATE '2020-01-02'``,
``=`` no day and ``!=`` every one: ``day < d AND day >= d`` and ``day = d OR day != d``, NULL
for a NULL row). Taken by its own date, ``day = '2020-01-01T00:00:00+01:00'`` kept the rows of
2020-01-01 there, where every other engine compares the instant 2019-12-31 23:00 UTC.
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, cast

from hotdata_retrieval.errors import PlanError
from hotdata_retrieval.plan.filters import (
    And,
    Between,
    Comparison,
    ComparisonOperator,
    InList,
    Or,
    Predicate,
)
from hotdata_retrieval.plan.values import INT64_MAX, INT64_MIN

UINT64_MAX = 2**64 - 1

_Inclusive = tuple[str, int] | bool
"""A comparison normalised over the integers: ``("<=", k)``, ``(">=", k)``, ``("=", k)``,
``("!=", k)``, or ``True``/``False`` for one that holds for every integer or for none."""


def _over_integers(operator: ComparisonOperator, value: Any) -> _Inclusive:
    """``n <operator> value`` for every integer ``n``, as a comparison with an integer
    (``floor`` and ``ceil`` of a finite float are exact)."""
    integral = isinstance(value, int) or value == math.floor(value)
    if operator is ComparisonOperator.EQUAL:
        return ("=", int(value)) if integral else False
    if operator is ComparisonOperator.NOT_EQUAL:
        return ("!=", int(value)) if integral else True
    if operator is ComparisonOperator.LESS:
        return ("<=", math.ceil(value) - 1)
    if operator is ComparisonOperator.LESS_OR_EQUAL:
        return ("<=", math.floor(value))
    if operator is ComparisonOperator.GREATER:
        return (">=", math.floor(value) + 1)
    return (">=", math.ceil(value))


def _within(found: _Inclusive, low: int, high: int) -> _Inclusive:
    """``found`` for an integer in ``[low, high]``: ``True`` or ``False`` where the column's
    range decides it."""
    if isinstance(found, bool):
        return found
    operator, bound = found
    if operator == "<=":
        return True if bound >= high else False if bound < low else found
    if operator == ">=":
        return True if bound <= low else False if bound > high else found
    inside = low <= bound <= high
    if operator == "=":
        return found if inside else False
    return found if inside else True


def _spelled(column: str, found: tuple[str, int], given: Any) -> Comparison:
    """The comparison with a literal in 64-bit signed range: ``n >= 2**63`` is spelled
    ``n > INT64_MAX``, ``n <= k`` as ``n < k + 1`` when that fits.

    Raises:
        PlanError: no spelling fits (an unsigned column past INT64_MAX).
    """
    operator, bound = found
    if INT64_MIN <= bound <= INT64_MAX:
        return Comparison(column=column, operator=operator, value=bound)
    if operator == ">=" and bound - 1 <= INT64_MAX:
        return Comparison(column=column, operator=">", value=bound - 1)
    raise PlanError(
        f"filter compares unsigned integer column '{column}' with {given!r}, whose exact "
        f"comparison ({column} {operator} {bound}) has no exact spelling with a 64-bit signed "
        f"integer (at most {INT64_MAX}), the widest literal every engine compares exactly; "
        "compare with a value at most that",
        field="filter",
        value=given,
    )


def _always(column: str, holds: bool, low: int) -> Comparison:
    """A comparison that holds for every value of the column (or for none), NULL for a
    NULL row, as the comparison it replaces."""
    return Comparison(column=column, operator=">=" if holds else "<", value=low)


def _range(unsigned: bool) -> tuple[int, int]:
    return (0, UINT64_MAX) if unsigned else (INT64_MIN, INT64_MAX)


def _is_float(value: Any) -> bool:
    """Whether ``value`` is a literal an integer column is compared with exactly by a
    rewrite: a float or a ``decimal.Decimal``."""
    return type(value) is float or type(value) is decimal.Decimal


def _number(value: Any) -> Any:
    """A bound as a number: a float, a decimal, an integer, or integer text (which the
    column's checks let through: ``'42'``); ``None`` for anything else."""
    if type(value) in (float, int, decimal.Decimal):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def exact_integer_predicate(
    node: Any,
    *,
    unsigned: bool = False,
    bounds: tuple[int, int] | None = None,
    fitted: bool = False,
) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on an integer
    column) with each floating-point literal replaced as the module docstring says, or
    ``node`` itself when it holds none (or is another node).

    Args:
        node: the leaf.
        unsigned: the column holds unsigned integers (0 to 2**64 - 1); else signed 64-bit
            ones (a narrower column's values lie in that range too).
        bounds: the least and greatest value the column's type holds, where known (a
            narrower column: every literal made then fits its type, which LanceDB demands),
            in place of the range ``unsigned`` gives.
        fitted: an integer literal outside that range is replaced too, as a float there
            would be (``i8 <= 300`` on an int8 column holds for every value: ``i8 >= -128``),
            for an engine that refuses a literal its column's type cannot hold (LanceDB:
            "could not convert to literal of type"); an integer inside it stays.

    Raises:
        PlanError: the exact comparison needs an integer past INT64_MAX (an unsigned
            column), naming the column and the value.

    >>> exact_integer_predicate(Comparison(column="n", operator="<", value=2.5)).value
    2
    >>> exact_integer_predicate(Comparison(column="n", operator="=", value=2.5)).operator.value
    '<'
    >>> exact_integer_predicate(Between(column="n", low=0.5, high=1e300))
    Comparison(column='n', operator=<ComparisonOperator.GREATER_OR_EQUAL: '>='>, value=1)
    >>> node = InList(column="i8", values=[2, 300])
    >>> exact_integer_predicate(node, bounds=(-128, 127), fitted=True).values
    (2,)
    """
    low, high = bounds if bounds is not None else _range(unsigned)

    def _rewritten(value: Any) -> bool:
        """Whether ``value`` is a literal to replace: a float, or with ``fitted`` an integer
        outside the column's range."""
        if _is_float(value):
            return True
        return fitted and type(value) is int and not low <= value <= high

    if isinstance(node, Comparison):
        if not _rewritten(node.value):
            return node
        found = _within(_over_integers(node.operator, cast(float, node.value)), low, high)
        if isinstance(found, bool):
            return _always(node.column, found, low)
        return _spelled(node.column, found, node.value)
    if isinstance(node, Between):
        start_value, end_value = _number(node.low), _number(node.high)
        if not (_rewritten(node.low) or _rewritten(node.high)):
            return node
        if start_value is None or end_value is None:
            return node  # a bound of another kind: the column's checks refuse it
        above = _within(_over_integers(ComparisonOperator.GREATER_OR_EQUAL, start_value), low, high)
        below = _within(_over_integers(ComparisonOperator.LESS_OR_EQUAL, end_value), low, high)
        if above is False or below is False:
            return _always(node.column, False, low)
        if above is True and below is True:
            return _always(node.column, True, low)
        if above is True:
            assert not isinstance(below, bool)
            return _spelled(node.column, below, node.high)
        assert not isinstance(above, bool)
        if below is True:
            return _spelled(node.column, above, node.low)
        assert not isinstance(below, bool)
        if above[1] > below[1]:
            return _always(node.column, False, low)
        # both ends within the column's range, the low one at most the high one: the high
        # one is spelled as it is or refused, and then so is the low one
        end = _spelled(node.column, below, node.high)
        return Between(column=node.column, low=above[1], high=end.value)
    if isinstance(node, InList):
        if not any(_rewritten(value) for value in node.values):
            return node
        kept: list[Any] = []
        for value in node.values:
            if not _rewritten(value):
                kept.append(value)
                continue
            found = _within(_over_integers(ComparisonOperator.EQUAL, cast(float, value)), low, high)
            if isinstance(found, bool):
                continue  # equal to no value of the column
            kept.append(_spelled(node.column, found, value).value)
        if not kept:  # NULL for a NULL row, as the list's test: not IN (), which is FALSE
            return _always(node.column, node.negated, low)
        return InList(column=node.column, values=kept, negated=node.negated)
    return node


def _float_neighbours(value: int) -> tuple[float, float] | None:
    """The largest float64 below ``value`` and the smallest above it, or ``None`` when
    float64 holds ``value`` itself (a plan's integer is 64-bit, in float64's range).

    >>> _float_neighbours(2**53 + 1)
    (9007199254740992.0, 9007199254740994.0)
    >>> _float_neighbours(2**53) is None
    True
    """
    nearest = float(value)
    if int(nearest) == value:
        return None
    if nearest < value:
        return nearest, math.nextafter(nearest, math.inf)
    return math.nextafter(nearest, -math.inf), nearest


def _decimal_float_neighbours(value: decimal.Decimal) -> tuple[float, float] | None:
    """The largest float64 below a decimal and the smallest above it, or ``None`` when
    float64 holds it exactly (a decimal literal has at most 38 digits, within float64's
    range).

    >>> _decimal_float_neighbours(decimal.Decimal("0.1"))
    (0.09999999999999999, 0.1)
    >>> _decimal_float_neighbours(decimal.Decimal("0.5")) is None
    True
    """
    nearest = float(value)
    exact = decimal.Decimal(nearest)
    if exact == value:
        return None
    if exact < value:
        return nearest, math.nextafter(nearest, math.inf)
    return math.nextafter(nearest, -math.inf), nearest


def _inexact(value: Any) -> tuple[float, float] | None:
    """:func:`_float_neighbours` of an integer literal, :func:`_decimal_float_neighbours`
    of a decimal one, ``None`` for any other value."""
    if type(value) is int:
        return _float_neighbours(value)
    if type(value) is decimal.Decimal:
        return _decimal_float_neighbours(value)
    return None


def _as_float(value: Any) -> Any:
    """A decimal literal float64 holds exactly as that float; any other value as it is."""
    return float(value) if type(value) is decimal.Decimal else value


def _float_always(column: str, holds: bool, value: Any = 0.0) -> Predicate:
    """A predicate TRUE (or FALSE) for every float the column holds, infinities and NaN
    included, and NULL for a NULL row (module docstring); with ``value``, for every value of
    its type (a date)."""
    if holds:
        equal = Comparison(column=column, operator="=", value=value)
        return Or(operands=(equal, Comparison(column=column, operator="!=", value=value)))
    below = Comparison(column=column, operator="<", value=value)
    return And(operands=(below, Comparison(column=column, operator=">=", value=value)))


def exact_float_predicate(node: Any) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on a float64
    column) with each integer literal float64 does not hold replaced as the module docstring
    says, or ``node`` itself when it holds none (or is another node).

    >>> exact_float_predicate(Comparison(column="f", operator="<", value=2**53 + 1)).value
    9007199254740992.0
    >>> exact_float_predicate(Comparison(column="f", operator=">", value=2**63 - 1)).value
    9.223372036854776e+18
    >>> exact_float_predicate(Comparison(column="f", operator="=", value=2**53 + 1))
    ... # doctest: +ELLIPSIS
    And(operands=(Comparison(...'<'..., value=0.0), Comparison(...'>='..., value=0.0)))
    >>> node = Comparison(column="f", operator="=", value=2**53)
    >>> exact_float_predicate(node) is node
    True
    """
    if isinstance(node, Comparison):
        neighbours = _inexact(node.value)
        if neighbours is None:
            value = _as_float(node.value)
            if value is node.value:
                return node
            return Comparison(column=node.column, operator=node.operator, value=value)
        below, above = neighbours
        if node.operator is ComparisonOperator.EQUAL:
            return _float_always(node.column, False)
        if node.operator is ComparisonOperator.NOT_EQUAL:
            return _float_always(node.column, True)
        if node.operator in (ComparisonOperator.LESS, ComparisonOperator.LESS_OR_EQUAL):
            return Comparison(column=node.column, operator="<=", value=below)
        return Comparison(column=node.column, operator=">=", value=above)
    if isinstance(node, Between):
        start, end = _inexact(node.low), _inexact(node.high)
        low = _as_float(node.low) if start is None else start[1]
        high = _as_float(node.high) if end is None else end[0]
        if low is node.low and high is node.high:
            return node
        return Between(column=node.column, low=low, high=high)
    if isinstance(node, InList):
        if all(type(value) not in (int, decimal.Decimal) for value in node.values):
            return node
        kept = [_as_float(value) for value in node.values if _inexact(value) is None]
        if len(kept) == len(node.values) and all(new is old for new, old in zip(kept, node.values)):
            return node
        if not kept:  # NULL for a NULL row, as the list's test: not IN (), which is FALSE
            return _float_always(node.column, node.negated)
        return InList(column=node.column, values=kept, negated=node.negated)
    return node


def _day_and_past(value: Any) -> tuple[datetime.date, bool, datetime.date | None] | None:
    """A datetime literal as its UTC date, whether it is past midnight and the next day
    (``None`` after the last), ``None`` for any other value."""
    if not isinstance(value, datetime.datetime):
        return None
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    day = value.date()
    return day, value.time() != datetime.time(0), _next_day(day)


def _next_day(day: datetime.date) -> datetime.date | None:
    return None if day == datetime.date.max else day + datetime.timedelta(days=1)


_Split = tuple[Any, bool, Any]
"""A literal split on a column's grid of values: the grid value at or below it, whether the
literal is past that value (between two grid values), and the next grid value (``None``
when there is none)."""


def _ordered_after(low: Any, high: Any) -> bool:
    """Whether ``low`` is after ``high``, both dates, both datetimes or both numbers (a
    date and a datetime, or text, do not compare: ``False``)."""
    numbers = (int, decimal.Decimal)
    if type(low) in numbers and type(high) in numbers:
        return bool(low > high)
    if type(low) is type(high) and isinstance(low, datetime.date):
        return bool(low > high)
    return False


def _on_grid(node: Any, split: Any) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList`) over a column
    whose values lie on a grid (dates: every midnight; timestamps of seconds: every second),
    each literal ``split`` splits (:data:`_Split`, ``None`` to leave it) replaced by grid
    values, as the module docstring says for dates: on the grid, the grid value; between two,
    ``<`` and ``<=`` as ``<=`` the one below, ``>`` and ``>=`` as ``>=`` the one above, ``=``
    no value and ``!=`` every one (NULL for a NULL row), a ``BETWEEN`` bound moved inwards,
    an ``IN`` value dropped. ``node`` itself when nothing changes."""
    if isinstance(node, Comparison):
        found = split(node.value)
        if found is None:
            return node
        below, past, above = found
        if not past:
            return Comparison(column=node.column, operator=node.operator, value=below)
        if node.operator in (ComparisonOperator.EQUAL, ComparisonOperator.NOT_EQUAL):
            return _float_always(node.column, node.operator is ComparisonOperator.NOT_EQUAL, below)
        if node.operator in (ComparisonOperator.LESS, ComparisonOperator.LESS_OR_EQUAL):
            return Comparison(column=node.column, operator="<=", value=below)
        if above is None:
            return _float_always(node.column, False, below)
        return Comparison(column=node.column, operator=">=", value=above)
    if isinstance(node, Between):
        start, end = split(node.low), split(node.high)
        if start is None and end is None:
            return node
        low: Any = node.low
        if start is not None:
            low = start[2] if start[1] else start[0]
        high = node.high if end is None else end[0]
        if low is None:  # past the last grid value: none follows
            return _float_always(node.column, False, high)
        if _ordered_after(low, high):
            return _float_always(node.column, False, high)
        return Between(column=node.column, low=low, high=high)
    if isinstance(node, InList):
        found_all = [split(value) for value in node.values]
        if all(found is None for found in found_all):
            return node
        kept = [
            value if found is None else found[0]
            for value, found in zip(node.values, found_all)
            if found is None or not found[1]
        ]
        if not kept:  # NULL for a NULL row, as the list's test: not IN (), which is FALSE
            first = found_all[0]
            assert first is not None
            return _float_always(node.column, node.negated, first[0])
        return InList(column=node.column, values=kept, negated=node.negated)
    return node


def exact_date_predicate(node: Any) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on a date
    column) with each datetime literal replaced by dates as the module docstring says, or
    ``node`` itself when it holds none (or is another node).

    >>> moment = datetime.datetime(2020, 1, 1, 5)
    >>> exact_date_predicate(Comparison(column="day", operator="<", value=moment)).value
    datetime.date(2020, 1, 1)
    >>> exact_date_predicate(Comparison(column="day", operator=">", value=moment)).value
    datetime.date(2020, 1, 2)
    >>> offset = datetime.timezone(datetime.timedelta(hours=1))
    >>> midnight = datetime.datetime(2020, 1, 2, tzinfo=offset)
    >>> exact_date_predicate(Comparison(column="day", operator="=", value=midnight))
    ... # doctest: +ELLIPSIS
    And(operands=(Comparison(...'<'..., value=datetime.date(2020, 1, 1)), Comparison(...)))
    >>> exact_date_predicate(InList(column="day", values=[moment, datetime.date(2021, 6, 1)]))
    ... # doctest: +ELLIPSIS
    InList(column='day', values=(datetime.date(2021, 6, 1),), negated=False)
    """
    return _on_grid(node, _day_and_past)


def _coarse_split(step: int) -> Any:
    """:data:`_Split` of a datetime literal (naive, UTC) on the grid of a timestamp column
    of ``step`` microseconds (1,000,000 for seconds, 1,000 for milliseconds)."""

    def split(value: Any) -> _Split | None:
        if not isinstance(value, datetime.datetime):
            return None
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        past = value.microsecond % step
        if not past:
            return value, False, value
        below = value - datetime.timedelta(microseconds=past)
        try:
            above: datetime.datetime | None = below + datetime.timedelta(microseconds=step)
        except OverflowError:
            above = None
        return below, True, above

    return split


def coarse_timestamp_predicate(node: Any, step: int) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on a timestamp
    column of seconds or milliseconds, ``step`` microseconds apart) with each datetime
    literal between two of the column's values replaced by the exactly equivalent comparison
    with values on its grid, as a datetime against a date column is
    (:func:`exact_date_predicate`): ``ts < '…23:00:00.000001'`` on a column of milliseconds
    is ``ts <= '…23:00:00'``, ``ts = '…23:00:00.000001'`` holds for no value. LanceDB cuts
    such a literal to the column's unit (``ts >= '…23:00:00.000001'`` kept the row at
    23:00:00), DataFusion (the local engine's statement, the Hotdata engine) casts it to the
    column's unit, cutting it likewise, and turbopuffer does not document how it compares one
    with the milliseconds it keeps. ``node`` itself when nothing changes.

    >>> moment = datetime.datetime(2020, 1, 1, 5, 0, 0, 1)
    >>> coarse_timestamp_predicate(Comparison(column="ts", operator=">=", value=moment), 1000)
    ... # doctest: +ELLIPSIS
    Comparison(..., value=datetime.datetime(2020, 1, 1, 5, 0, 0, 1000))
    """
    return _on_grid(node, _coarse_split(step))


NANOSECOND_BELOW = datetime.datetime(1677, 9, 21, 0, 12, 43, 145224)
"""A microsecond before the earliest instant a nanosecond timestamp holds (-2**63 ns from
1970, 1677-09-21 00:12:43.145224192 UTC): every value of such a column is after it."""
NANOSECOND_ABOVE = datetime.datetime(2262, 4, 11, 23, 47, 16, 854776)
"""A microsecond after the latest instant a nanosecond timestamp holds (2**63 - 1 ns from
1970, 2262-04-11 23:47:16.854775807 UTC): every value of such a column is before it."""
_IN_NANOSECONDS = datetime.datetime(2000, 1, 1)
"""An instant a nanosecond timestamp holds, the literal of the always-TRUE and always-FALSE
forms."""


def _past_nanoseconds(value: Any) -> int:
    """-1 for a date or datetime (naive, UTC) before every instant of a nanosecond
    timestamp column, 1 for one after them all, 0 otherwise (or another value)."""
    if not isinstance(value, datetime.date):
        return 0
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return -1 if value <= NANOSECOND_BELOW else 1 if value >= NANOSECOND_ABOVE else 0


_HOLDS_BELOW = frozenset({">", ">=", "!="})
"""The operators that hold for every value when the literal is before them all."""
_HOLDS_ABOVE = frozenset({"<", "<=", "!="})


def nanosecond_timestamp_predicate(node: Any) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on a timestamp
    column of nanoseconds) with each date or datetime literal outside the years such a column
    holds (:data:`NANOSECOND_BELOW`, :data:`NANOSECOND_ABOVE`) replaced by what it means:
    ``ts > '1500-01-01'`` holds for every value, ``ts < '1500-01-01'`` for none, both still
    NULL for a NULL row (the forms of the module docstring), ``BETWEEN`` loses a bound past
    them, ``IN`` the values past them. DataFusion (the local engine, LanceDB) casts such a
    literal to nanoseconds to compare it with the column and fails on the overflow (LanceDB
    wrapped it around and answered wrongly). ``node`` itself when nothing changes.

    >>> node = Comparison(column="ts", operator=">", value=datetime.date(1500, 1, 1))
    >>> nanosecond_timestamp_predicate(node)  # doctest: +ELLIPSIS
    Or(operands=(Comparison(...'='...), Comparison(...'!='...)))
    >>> node = Comparison(column="ts", operator=">", value=datetime.date(2000, 1, 1))
    >>> nanosecond_timestamp_predicate(node) is node
    True
    """
    if isinstance(node, Comparison):
        side = _past_nanoseconds(node.value)
        if side == 0:
            return node
        holds = node.operator.value in (_HOLDS_BELOW if side < 0 else _HOLDS_ABOVE)
        return _float_always(node.column, holds, _IN_NANOSECONDS)
    if isinstance(node, Between):
        low, high = _past_nanoseconds(node.low), _past_nanoseconds(node.high)
        if low == 0 and high == 0:
            return node
        if low > 0 or high < 0:  # a range after every value, or before them all
            return _float_always(node.column, False, _IN_NANOSECONDS)
        if low < 0 and high > 0:
            return _float_always(node.column, True, _IN_NANOSECONDS)
        if low < 0:
            return Comparison(column=node.column, operator="<=", value=node.high)
        return Comparison(column=node.column, operator=">=", value=node.low)
    if isinstance(node, InList):
        kept = [value for value in node.values if _past_nanoseconds(value) == 0]
        if len(kept) == len(node.values):
            return node
        if not kept:  # NULL for a NULL row, as the list's test: not IN (), which is FALSE
            return _float_always(node.column, node.negated, _IN_NANOSECONDS)
        return InList(column=node.column, values=kept, negated=node.negated)
    return node


def _exact_decimal(value: Any) -> decimal.Decimal | None:
    """A number as the exact decimal it means against a decimal column (docs/plans.md,
    "Filter values and column types"): a float as the decimal its shortest text writes
    (``0.1`` is 0.1, not the binary fraction 0.1000000000000000055…), an integer, a
    ``decimal.Decimal`` and number text (checked:
    :func:`~hotdata_retrieval.engines.checks.check_filter_values`) as the number they write;
    ``None`` for any other value.

    >>> _exact_decimal(0.1), _exact_decimal("1e3"), _exact_decimal(True)
    (Decimal('0.1'), Decimal('1E+3'), None)
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return decimal.Decimal(repr(value)) if math.isfinite(value) else None
    if isinstance(value, (int, decimal.Decimal)):
        return decimal.Decimal(value)
    if isinstance(value, str):
        try:
            number = decimal.Decimal(value)
        except decimal.InvalidOperation:
            return None
        return number if number.is_finite() else None
    return None


def _past_decimals(value: Any, bound: int) -> int:
    """-1 for a number (or number text) at or below ``-bound``, 1 for one at or above
    ``bound`` (past every value of a decimal column whose magnitudes are below ``bound``), 0
    otherwise (or another value)."""
    number = _exact_decimal(value)
    if number is None:
        return 0
    return -1 if number <= -bound else 1 if number >= bound else 0


def _written(number: decimal.Decimal) -> int | decimal.Decimal:
    """A decimal on a column's grid as the literal written for it: a whole number as the
    integer (which LanceDB takes for a decimal column), any other as the decimal, which the
    compiler writes as an exact ``DECIMAL`` cast."""
    whole = number.to_integral_value()
    return int(whole) if whole == number else number


def _decimal_split(scale: int) -> Any:
    """:data:`_Split` of a number on the grid of a decimal column of ``scale`` digits after
    the point (``10 ** -scale`` apart)."""
    step = decimal.Decimal(1).scaleb(-scale)
    context = decimal.Context(prec=200)  # a plan's numbers are far narrower: no rounding

    def split(value: Any) -> _Split | None:
        number = _exact_decimal(value)
        if number is None:
            return None
        below = number.quantize(step, rounding=decimal.ROUND_FLOOR, context=context)
        if below == number:
            written = _written(below)
            return written, False, written
        return _written(below), True, _written(context.add(below, step))

    return split


def decimal_predicate(node: Any, whole_digits: int, scale: int = 0) -> Any:
    """``node`` (a :class:`Comparison`, :class:`Between` or :class:`InList` on a decimal
    column holding ``whole_digits`` digits before the point and ``scale`` after it:
    ``decimal(p, s)`` holds ``p - s`` and ``s``) compared exactly, the one rule every engine
    follows: each number is the exact decimal it writes (:func:`_exact_decimal`: a float by
    its shortest text, so ``price >= 0.1`` keeps 0.10; a ``decimal.Decimal`` and number text
    exactly, so ``price = Decimal('1.5000000000000000000001')`` keeps no 1.50).

    - A number past the column's range (a magnitude of at least ``10 ** whole_digits``) is
      replaced by what it means there, as a float past an integer column's range is (module
      docstring): ``price < 1e30`` holds for every value, ``price = 1e30`` for none, NULL for
      a NULL row. DataFusion (the local engine) casts such a literal to a decimal and fails
      on the overflow; LanceDB refuses it.
    - A number with more digits after the point than the column holds lies between two of
      its values and is replaced as a datetime between two days of a date column is
      (:func:`exact_date_predicate`): ``price < 1.505`` is ``price <= 1.50``, ``price >
      1.505`` is ``price >= 1.51``, ``price = 1.505`` holds for no value.
    - Every other number is written on the column's grid: a whole number as the integer, any
      other as a ``decimal.Decimal``, which the compiler writes as an exact ``DECIMAL`` cast
      (``CAST('1.59' AS DECIMAL(3, 2))``). DataFusion read a float against a decimal column
      as ``Decimal(30, 15)`` and number text as ``Decimal(38, 10)``, rounding past them;
      LanceDB refused a float and text ("could not convert to literal of type").

    ``node`` itself when nothing changes.

    >>> node = Comparison(column="price", operator="<", value=1e30)
    >>> decimal_predicate(node, 8, 2)  # doctest: +ELLIPSIS
    Or(operands=(Comparison(...'='...), Comparison(...'!='...)))
    >>> decimal_predicate(Comparison(column="price", operator="<", value=2.0), 8, 2).value
    2
    >>> decimal_predicate(Comparison(column="price", operator=">=", value=0.1), 8, 2).value
    Decimal('0.10')
    >>> decimal_predicate(Comparison(column="price", operator="<", value=1.505), 8, 2)
    ... # doctest: +ELLIPSIS
    Comparison(...'<='..., value=Decimal('1.50'))
    """
    bound = 10**whole_digits
    on_grid = _on_grid(_inside_decimals(node, bound), _decimal_split(scale))
    # a value moved onto the grid may reach the range's end (99999999.995 up to 10**8)
    return _inside_decimals(on_grid, bound)


def _inside_decimals(node: Any, bound: int) -> Any:
    """``node`` with each number past a decimal column's range (a magnitude of at least
    ``bound``) replaced by what it means there (:func:`decimal_predicate`)."""
    if isinstance(node, Comparison):
        side = _past_decimals(node.value, bound)
        if side == 0:
            return node
        holds = node.operator.value in (_HOLDS_BELOW if side < 0 else _HOLDS_ABOVE)
        return _float_always(node.column, holds, 0)
    if isinstance(node, Between):
        low, high = _past_decimals(node.low, bound), _past_decimals(node.high, bound)
        if low > 0 or high < 0:
            return _float_always(node.column, False, 0)
        if low < 0 and high > 0:
            return _float_always(node.column, True, 0)
        if low < 0:
            return Comparison(column=node.column, operator="<=", value=node.high)
        if high > 0:
            return Comparison(column=node.column, operator=">=", value=node.low)
        return node
    if isinstance(node, InList):
        kept = [value for value in node.values if _past_decimals(value, bound) == 0]
        if len(kept) == len(node.values):
            return node
        if not kept:  # NULL for a NULL row, as the list's test: not IN (), which is FALSE
            return _float_always(node.column, node.negated, 0)
        return InList(column=node.column, values=kept, negated=node.negated)
    return node
