"""Validated values a plan carries: query text, query vectors, filter literals, counts."""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Set
from typing import Any

from hotdata_retrieval.errors import PlanError, position_name

LiteralValue = str | int | float | decimal.Decimal | bool | datetime.date | datetime.datetime
"""A filter literal: text, integer, finite float, finite ``decimal.Decimal`` (exact, of at most
:data:`DECIMAL_DIGITS` digits), boolean, date or timestamp (a ``datetime.datetime``, kept
without a time zone: one with a time zone is turned into UTC). ``NULL`` is tested with
``IsNull``."""

DECIMAL_DIGITS = 38
"""The most digits a decimal literal holds, before and after the point together: Arrow's
and DataFusion's ``Decimal128`` precision, the widest decimal every engine holding a decimal
column (the local engine, LanceDB) compares."""

INT64_MIN = -(2**63)
"""The smallest signed 64-bit integer: the least count, key or literal an engine holds."""
INT64_MAX = 2**63 - 1
"""The largest signed 64-bit integer: the most a count (``limit``, ``offset``, ``depth``) or
an integer literal can be on every engine."""


NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
"""Text that names a finite number, as a filter value compared with a number column and as
metadata for a decimal filter column: ASCII digits in decimal or exponent notation, nothing
around them (Python's ``Decimal`` and ``float`` also read white space, underscores and other
scripts' digits). Not ``'inf'`` or ``'nan'``: engines read them differently (LanceDB not at
all; SQLite and DuckDB take ``'-nan'`` for a NaN above every number, DataFusion for one
below)."""


FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite Float32 (IEEE 754 binary32)."""


def check_query_text(value: Any, *, label: str = "query_text", allow_blank: bool = False) -> str:
    """Return ``value`` if it is usable query text.

    The text is passed to the engine exactly as given (quotes, backslashes, ``--`` and ``;``
    are safe: the renderer escapes them). Only NUL bytes, which no SQL string literal may hold,
    and text with nothing but white space are rejected.

    Raises:
        PlanError: not a string, empty or only white space (unless ``allow_blank``), or
            holding a NUL byte.
    """
    if not isinstance(value, str):
        raise PlanError(f"{label} must be a string, got {value!r}", field=label, value=value)
    if "\x00" in value:
        raise PlanError(
            f"{label} must not contain a NUL byte, got {value!r}", field=label, value=value
        )
    if value.strip() == "" and not allow_blank:
        raise PlanError(f"{label} must not be empty, got {value!r}", field=label, value=value)
    check_encodable(value, label=label)
    return value


def check_query_vector(value: Any, *, label: str = "query_vector") -> tuple[float, ...]:
    """Return the query vector as a tuple of Python floats.

    Accepts any iterable of real numbers (a list, a tuple, a NumPy array, ...). Values are kept
    at full precision; the renderer writes each with the shortest text that round-trips.
    A boolean (Python's or NumPy's) or a text (``"1"``) is no number, though ``float`` reads
    one: a vector of them is a caller's mistake, refused rather than read as 1.0 and 0.0.

    Raises:
        PlanError: not a sequence of numbers (or holding a boolean or a text), empty,
            holding NaN or an infinity, or a number beyond Float32's range (the engines
            compute distances in Float32, where it would be an infinity and every distance
            NaN); the message names the first bad position (``position N of M``, from 1).
    """
    if type(value) not in (list, tuple) and (  # the common types skip the ABC checks
        isinstance(value, (str, bytes, Mapping, Set)) or value is None
    ):
        raise PlanError(
            f"{label} must be an ordered sequence of numbers, got {value!r}",
            field=label,
            value=value,
        )
    to_list = getattr(value, "tolist", None)
    items = to_list() if callable(to_list) else value
    if not isinstance(items, (list, tuple)):
        try:
            items = list(items)
        except TypeError:
            raise PlanError(
                f"{label} must be a sequence of numbers, got {value!r}", field=label, value=value
            ) from None
    if not set(map(type, items)) <= _PLAIN_NUMBERS:  # the common types skip the scan
        check_numbers(items, label=label, value=value)
    try:
        vector = tuple(map(float, items))
    except OverflowError:
        raise PlanError(
            f"{label} holds a number too large for a float", field=label, value=value
        ) from None
    except (TypeError, ValueError):
        raise PlanError(
            f"{label} must be a sequence of numbers, got {value!r}", field=label, value=value
        ) from None
    if not vector:
        raise PlanError(f"{label} must not be empty", field=label, value=value)
    # Fast path, one C call: a norm within Float32's range bounds every component, and a NaN
    # or an infinity makes the norm NaN or infinite. Only a vector that fails it is scanned.
    if not math.hypot(*vector) <= FLOAT32_MAX:
        _check_components(vector, label=label, value=value)
    return vector


_PLAIN_NUMBERS = frozenset({float, int})
"""The types of a query vector's components that need no further look."""


def check_numbers(items: Any, *, label: str, field: str | None = None, value: Any = None) -> None:
    """Refuse the first of ``items`` (a sequence, or a NumPy array of one dimension) that is
    a boolean (Python's or NumPy's) or a text (``str``, ``bytes``, NumPy's text types),
    which ``float`` and NumPy would read as a number although no vector means one.

    Args:
        items: the vector's components.
        label: what the message calls the vector (``"query_vector"``).
        field: the error's ``field``; ``label`` if not given.
        value: the error's ``value`` (the vector, or a document's key).

    Raises:
        PlanError: naming the component's position (``position N of M``) and its value.
    """
    position = _first_non_number(items)
    if position is not None:
        item = items[position]
        plain = item.tolist() if hasattr(item, "tolist") else item  # NumPy's as Python's
        kind = "a boolean" if is_boolean(item) else "a text"
        raise PlanError(
            f"{label} must hold numbers; {position_name(position, len(items))} is "
            f"{plain!r}, {kind}",
            field=label if field is None else field,
            value=value,
        )


def _first_non_number(items: Any) -> int | None:
    """The 0-based position of the first of ``items`` (a sequence, or a NumPy array of
    one dimension) that is a boolean (Python's or NumPy's) or a text (``str``, ``bytes``,
    NumPy's text types), which ``float`` and NumPy would read as a number although no
    vector means one; ``None`` when there is none.

    """
    kind = getattr(getattr(items, "dtype", None), "kind", None)
    if kind is not None and kind in "fiu":
        return None  # a NumPy array of numbers: no item to look at
    for position, item in enumerate(items):
        if is_boolean(item) or isinstance(item, (str, bytes)):
            return position
    return None


def _check_components(vector: tuple[float, ...], *, label: str, value: Any) -> None:
    """Find the first component that is not finite or beyond Float32's range.

    Raises:
        PlanError: naming its position.
    """
    for position, component in enumerate(vector):
        if not math.isfinite(component):
            raise PlanError(
                f"{label} must hold finite numbers; {position_name(position, len(vector))} "
                f"is {component!r}",
                field=label,
                value=value,
            )
    for position, component in enumerate(vector):
        if abs(component) > FLOAT32_MAX:
            raise PlanError(
                f"{label} must fit in Float32 (magnitude at most {FLOAT32_MAX:.6g}); "
                f"{position_name(position, len(vector))} is {component!r}",
                field=label,
                value=value,
            )


FLOAT32_ZERO_BOUND = 2.0**-150
"""Half the smallest positive Float32 (a subnormal, 2**-149): a number of at most this
magnitude is zero once converted to Float32 (round half to even)."""


def check_cosine_query(vector: tuple[float, ...], *, label: str = "query_vector") -> None:
    """Refuse a zero query vector for cosine distance: ``1 - a·b / (‖a‖ ‖b‖)`` is undefined
    for it, and the engine's function then returns 1.0 for every row (engine contract §1.4),
    an arbitrary order. The distance functions compute on Float32 vectors, so a vector whose
    every component rounds to zero there (``[1e-46, 0.0]``) is a zero vector too.

    Raises:
        PlanError: every component is zero, or zero once converted to Float32.
    """
    if not any(vector):
        raise PlanError(
            f"{label} is all zeros, and cosine distance to a zero vector is undefined; use a "
            "non-zero vector or another metric",
            field=label,
            value=vector,
        )
    if all(abs(component) <= FLOAT32_ZERO_BOUND for component in vector):
        raise PlanError(
            f"{label} is all zeros once converted to Float32 (every component is at most "
            f"{FLOAT32_ZERO_BOUND:.6g} in magnitude), and cosine distance to a zero vector is "
            "undefined; use a non-zero vector or another metric",
            field=label,
            value=vector,
        )


COSINE_SQUARED_NORMS = (2.0**-126, (2.0 - 2.0**-23) * 2.0**127)
"""The squared norms (as float64 sums of the Float32 components' squares) a non-zero vector
searched or stored under cosine distance may have: Float32's smallest normal number and its
largest, norms from about 1.1e-19 to 1.8e19. SQLite (sqlite-vec), PostgreSQL (pgvector) and
LanceDB compute a cosine distance from Float32 squared norms, which past these bounds
underflow to 0 or overflow: a row ``[1e-30, 1e-30]`` was at distance -inf from ``[1, 0]`` on
SQLite and LanceDB and 0.0 on PostgreSQL, where it is 0.29, while the local engine and DuckDB
(float64) gave 0.29; a row ``[0, 1e-30]`` was left out on PostgreSQL and LanceDB. Every
engine therefore refuses such a vector, as a query (:func:`check_cosine_norm`) and as a row
of a table searched by cosine (``tests/parity/test_cosine_norm_bounds.py``)."""


def float32_squared_norms(rows: Any) -> Any:
    """Each row's squared norm as the stores' cosine distance sees it: the sum, in float64,
    of the squares of its components once converted to Float32 (a component below about
    1.4e-45 is zero there).

    Args:
        rows: a 2-D array-like of numbers (rows by components), within Float32's range.

    Returns:
        A 1-D NumPy float64 array, one squared norm per row.
    """
    import numpy as np

    values = np.asarray(rows, dtype=np.float32).astype(np.float64)
    return np.einsum("ij,ij->i", values, values)


def cosine_norm_problem(squared: float) -> str | None:
    """What is wrong with a vector of squared norm ``squared``
    (:func:`float32_squared_norms`) under cosine distance, as the end of a sentence naming
    it; ``None`` when it is zero or within :data:`COSINE_SQUARED_NORMS`."""
    low, high = COSINE_SQUARED_NORMS
    if not squared or low <= squared <= high:
        return None
    return (
        f"has squared norm {squared:.6g}, which Float32 cannot hold as a normal number (from "
        f"{low:.6g} to {high:.6g}), so the stores' cosine distances to it are wrong; cosine "
        "distance does not depend on a vector's length: scale it (divide by its norm)"
    )


def check_cosine_norm(
    vector: Any, *, label: str = "query_vector", field: str | None = None, reported: Any = None
) -> None:
    """Refuse a non-zero vector whose Float32 squared norm is outside
    :data:`COSINE_SQUARED_NORMS`, where the stores' cosine distances are wrong.

    Args:
        vector: the vector's components (finite numbers within Float32's range).
        label: what the message calls it.
        field: the error's ``field``; ``label`` if not given.
        reported: the error's ``value``; the vector if not given.

    Raises:
        PlanError: naming ``label``.
    """
    import array
    import operator

    # In Python, not NumPy: a plan is built in the core install, which has no NumPy. The
    # squares of Float32 values are exact in float64; only the sum's last bit may differ
    # from :func:`float32_squared_norms`'s.
    components = array.array("f", vector)
    problem = cosine_norm_problem(sum(map(operator.mul, components, components)))
    if problem is not None:
        raise PlanError(
            f"{label} {problem}",
            field=label if field is None else field,
            value=vector if reported is None else reported,
        )


def check_positive_int(value: Any, *, label: str, minimum: int = 1) -> int:
    """Return ``value`` if it is an integer (not a bool) of at least ``minimum``.

    Raises:
        PlanError: not an integer, or below ``minimum``.
    """
    if type(value) is not int and (  # a plain int skips the ABC check
        isinstance(value, bool) or not isinstance(value, numbers.Integral)
    ):
        raise PlanError(f"{label} must be an integer, got {value!r}", field=label, value=value)
    number = int(value)  # a plain int: an int subclass's own repr never reaches the SQL
    if number < minimum:
        raise PlanError(f"{label} must be >= {minimum}, got {value!r}", field=label, value=value)
    if number > INT64_MAX:
        raise PlanError(
            f"{label} must be from {minimum} to {INT64_MAX} (a signed 64-bit integer, the "
            f"widest every engine holds), got {value!r}",
            field=label,
            value=value,
        )
    return number


def check_column_names(value: Any, *, label: str = "columns") -> tuple[str, ...] | None:
    """The one rule for a value naming columns (a request's, a door's setting's and a
    builder's ``columns``, DDN's ``filter_columns``): ``None``, or a list of column names
    (any iterable of text but text, bytes or a mapping), as a tuple. A single text is
    refused: it may be one name or several (``"id,body"``), and read as a list it would be
    its characters (``"id"`` as ``i``, ``d``).

    >>> check_column_names(["id", "body"])
    ('id', 'body')

    Raises:
        PlanError: ``value`` is no list of names, or holds one that is not text; its
            ``field`` is ``label`` and its ``value`` the value as given.
    """
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise PlanError(
            f"{label} must be a list of column names, got {value!r}", field=label, value=value
        )
    names = tuple(value)
    for name in names:
        if not isinstance(name, str):
            raise PlanError(
                f"{label} must hold column names (text), got {name!r}", field=label, value=value
            )
    return names


def check_encodable(
    value: str, *, label: str, field: str | None = None, reported: Any = None
) -> None:
    """Reject text that cannot be sent as UTF-8 (a lone surrogate such as ``"\\ud800"``).

    Args:
        value: the text.
        label: what the message calls it (``"query"``, ``"document 'a': its text"``).
        field: the error's ``field``; ``label`` if not given.
        reported: the error's ``value`` (a document's key, say); the text if not given.

    Raises:
        PlanError: the text holds a lone surrogate, naming its position.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise PlanError(
            f"{label} is not valid Unicode: a lone surrogate at position {error.start}",
            field=label if field is None else field,
            value=value if reported is None else reported,
        ) from None


def _numpy() -> Any:
    """NumPy if it is already imported (its ``bool_`` is not a ``bool``), else ``None``."""
    import sys

    return sys.modules.get("numpy")


def is_boolean(value: Any) -> bool:
    """Whether ``value`` is a boolean: Python's ``bool`` or NumPy's ``bool_`` (which is
    neither a ``bool`` nor a number).

    >>> is_boolean(True), is_boolean(1)
    (True, False)
    """
    return isinstance(value, (bool, getattr(_numpy(), "bool_", bool)))


def check_finite_number(value: Any, *, label: str) -> float | int:
    """Return ``value`` as a plain, finite ``int`` or ``float``.

    Raises:
        PlanError: a boolean, a non-number, NaN or an infinity.
    """
    if type(value) is int:  # the common case, without the ABC checks
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PlanError(f"{label} must be a number, got {value!r}", field=label, value=value)
    if isinstance(value, numbers.Integral):
        return int(value)
    number = float(value)
    if not math.isfinite(number):
        raise PlanError(f"{label} must be finite, got {value!r}", field=label, value=value)
    return number


def check_literal(value: Any, *, label: str = "value") -> LiteralValue:
    """Return ``value`` if it can be a filter literal.

    A float ``-0.0`` is returned as ``0.0``: SQL's ``=`` takes them for one value, but an
    ``IN`` list of four values or more is a hash lookup in DataFusion, where their bits
    differ (the local engine stores ``0.0`` for ``-0.0`` too).

    A ``datetime.datetime`` with a time zone is returned in UTC without one (engines compare
    timestamps without a zone); a ``date`` stays a date.

    A ``decimal.Decimal`` is kept exact (``-0`` as ``0``): compared with a decimal column it
    is the number it writes, on every engine (docs/plans.md, "Filter values and column
    types").

    Raises:
        PlanError: ``None`` (use ``IsNull``), a NaN or infinite float or decimal, a decimal
            of more than :data:`DECIMAL_DIGITS` digits, an integer outside 64 bits, a string
            with a NUL byte, a datetime outside the years 1 to 9999 once in UTC, or any
            other type, or a datetime of nanoseconds (a pandas ``Timestamp``) that is not a
            whole microsecond.
    """
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:  # the common case, at once
        return value
    if is_boolean(value):
        return bool(value)
    if isinstance(value, numbers.Integral):
        number = int(value)  # plain int: a subclass's own repr never reaches the SQL
        if not INT64_MIN <= number <= INT64_MAX:
            raise _outside_int64(label, value)
        return number
    if isinstance(value, decimal.Decimal):
        return _checked_decimal(value, label)
    if isinstance(value, numbers.Real):
        real = float(value)
        if not math.isfinite(real):
            raise PlanError(f"{label} must be finite, got {value!r}", field=label, value=value)
        return real + 0.0  # -0.0 + 0.0 is 0.0
    if isinstance(value, str):
        if "\x00" in value:
            raise PlanError(
                f"{label} must not contain a NUL byte, got {value!r}", field=label, value=value
            )
        check_encodable(value, label=label)
        return str(value)
    if isinstance(value, datetime.datetime):
        # a datetime subclass of nanoseconds (pandas' Timestamp): every engine compared it
        # at its microsecond, silently, so a finer one is refused as finer text is
        nanoseconds = getattr(value, "nanosecond", 0)
        if nanoseconds:
            raise PlanError(
                f"{label} {value!r} is {nanoseconds} nanoseconds past a microsecond, and a "
                "timestamp value holds at most microseconds: round it to microseconds "
                "(pandas: Timestamp.floor('us'))",
                field=label,
                value=value,
            )
        return utc_moment(value, label=label).replace(tzinfo=None)
    if isinstance(value, datetime.date):
        return datetime.date(value.year, value.month, value.day)
    if value is None:
        raise PlanError(
            f"{label} must not be None; test for NULL with IsNull", field=label, value=value
        )
    raise PlanError(
        f"{label} must be a string, integer, float, decimal, boolean, date or datetime, got "
        f"{value!r}",
        field=label,
        value=value,
    )


MAX_FRACTION_DIGITS = 6
"""The most digits a timestamp's fraction of a second has in the ISO forms (:data:`ISO_FORMS`):
microseconds, what Python's ``datetime`` holds and every engine's timestamp keeps (PostgreSQL's
and DuckDB's timestamps are microseconds)."""


def decimal_digits(value: decimal.Decimal) -> tuple[int, int]:
    """The precision and scale of the narrowest SQL ``DECIMAL(p, s)`` holding ``value`` (a
    finite decimal) exactly: its digits before the point and after it together, and after it.

    >>> decimal_digits(decimal.Decimal("1.50")), decimal_digits(decimal.Decimal("-0.001"))
    ((3, 2), (3, 3))
    >>> decimal_digits(decimal.Decimal("1E+3"))
    (4, 0)
    """
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # a finite decimal
    scale = max(0, -exponent)
    whole = max(0, len(digits) + exponent)
    return max(1, whole + scale), scale


def _checked_decimal(value: decimal.Decimal, label: str) -> decimal.Decimal:
    if not value.is_finite():
        raise PlanError(f"{label} must be finite, got {value!r}", field=label, value=value)
    precision, _ = decimal_digits(value)
    if precision > DECIMAL_DIGITS:
        raise PlanError(
            f"{label} must have at most {DECIMAL_DIGITS} digits written out in full (a "
            f"Decimal128, the widest decimal the engines compare), got {value!r}, which has "
            f"{precision} written out",
            field=label,
            value=value,
        )
    plain = decimal.Decimal(value)  # a plain Decimal: a subclass's own text never reaches SQL
    return abs(plain) if plain.is_zero() else plain


_ISO_DATE = r"([0-9]{4})(-?)([0-9]{2})\2([0-9]{2})"
_ISO_DATE_TEXT = re.compile(_ISO_DATE, re.ASCII)
_ISO_TIMESTAMP_TEXT = re.compile(
    _ISO_DATE
    + r"(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,"
    + str(MAX_FRACTION_DIGITS)
    + r"}))?)?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))?)?",
    re.ASCII,
)
ISO_FORMS = (
    "a date YYYY-MM-DD or YYYYMMDD; a timestamp such a date, alone or then T or a space, "
    f"HH:MM, HH:MM:SS or HH:MM:SS.f (1 to {MAX_FRACTION_DIGITS} fraction digits: "
    "microseconds), then optionally Z or an offset +HH:MM or -HH:MM"
)
"""The ISO 8601 forms a filter's date or timestamp text may take, the same on every Python
version (``datetime.fromisoformat`` reads more from Python 3.11 on, ``2020-W01-1``,
``2020-01-01T05``, seven fraction digits, and ``20200101`` only from 3.11 on)."""


_LONG_FRACTION_TEXT = re.compile(
    _ISO_DATE
    + r"[T ][0-9]{2}:[0-9]{2}:[0-9]{2}\.(?P<fraction>[0-9]{"
    + str(MAX_FRACTION_DIGITS + 1)
    + r",})(?:Z|[+-][0-9]{2}:[0-9]{2})?",
    re.ASCII,
)
"""A timestamp of the ISO forms but for a fraction of a second longer than
:data:`MAX_FRACTION_DIGITS` digits (nanoseconds, as other systems write)."""


def iso_text_problem(text: str, kind: str) -> str:
    """What ``text`` is not, for a refusal's message that names it first (``'…' is …``):
    ``not an ISO 8601 <kind>`` (``kind``: ``"date"``, ``"timestamp"`` or ``"date or
    timestamp"``) and the forms (:data:`ISO_FORMS`), and for a timestamp whose fraction of a
    second has more than :data:`MAX_FRACTION_DIGITS` digits, that limit (microseconds) by
    name.

    >>> iso_text_problem("2024-03-01T05:00:00.1234567", "timestamp").split(",")[0]
    'not an ISO 8601 timestamp; its fraction of a second has 7 digits'
    """
    problem = f"not an ISO 8601 {kind}"
    long = _LONG_FRACTION_TEXT.fullmatch(text.strip())
    if long is not None and kind != "date":
        digits = len(long.group("fraction"))
        problem += (
            f"; its fraction of a second has {digits} digits, and a timestamp holds at most "
            f"{MAX_FRACTION_DIGITS} (microseconds): round it to {MAX_FRACTION_DIGITS} digits"
        )
    return f"{problem} ({ISO_FORMS})"


def parse_iso_date(text: str) -> datetime.date | None:
    """ISO 8601 date text, ``YYYY-MM-DD`` or ``YYYYMMDD`` (:data:`ISO_FORMS`), as the date
    it names; ``None`` for any other text, or a day no calendar has (``2021-02-29``).

    >>> parse_iso_date("2024-03-01"), parse_iso_date("20240301"), parse_iso_date("2024-0301")
    (datetime.date(2024, 3, 1), datetime.date(2024, 3, 1), None)
    """
    match = _ISO_DATE_TEXT.fullmatch(text)
    if match is None:
        return None
    year, _, month, day = match.groups()
    try:
        return datetime.date(int(year), int(month), int(day))
    except ValueError:
        return None


def parse_iso_timestamp(text: str) -> datetime.datetime | None:
    """ISO 8601 timestamp text in one of :data:`ISO_FORMS` as the datetime it names (with a
    fixed-offset time zone for ``Z`` or an offset); ``None`` for any other text, or a
    moment no calendar or clock has (``2024-03-01T24:00``, an offset of 24 hours or more).
    The forms do not depend on the Python version, unlike ``datetime.fromisoformat``.

    >>> parse_iso_timestamp("2024-03-01T05:00Z")
    datetime.datetime(2024, 3, 1, 5, 0, tzinfo=datetime.timezone.utc)
    >>> parse_iso_timestamp("2024-03-01T05"), parse_iso_timestamp("20240301T050000")
    (None, None)
    """
    match = _ISO_TIMESTAMP_TEXT.fullmatch(text)
    if match is None:
        return None
    year, _, month, day, hour, minute, second, fraction, utc, sign, zone_hours, zone_minutes = (
        match.groups()
    )
    zone: datetime.tzinfo | None = None
    if utc is not None:
        zone = datetime.timezone.utc
    elif sign is not None:
        offset = datetime.timedelta(hours=int(zone_hours), minutes=int(zone_minutes))
        if offset >= datetime.timedelta(hours=24) or int(zone_minutes) >= 60:
            return None
        zone = datetime.timezone(-offset if sign == "-" else offset)
    try:
        return datetime.datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
            tzinfo=zone,
        )
    except ValueError:
        return None


def utc_moment(value: datetime.datetime, *, label: str = "value") -> datetime.datetime:
    """A datetime as the UTC moment it names, without a time zone (one without a zone is
    taken as UTC already and returned as it is).

    Raises:
        PlanError: the moment is outside the years 1 to 9999 once in UTC
            (``datetime(1, 1, 1, tzinfo=+05:00)`` is in the year 0), naming the value.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        return value
    try:
        moment = value.astimezone(datetime.timezone.utc)
    except OverflowError:
        raise PlanError(
            f"{label} {value.isoformat()!r} is outside the years 1 to 9999 once in UTC",
            field=label,
            value=value,
        ) from None
    return moment.replace(tzinfo=None)


def check_flag(instance: Any, attribute: Any, value: Any) -> None:
    """An attrs validator: ``value`` must be ``True`` or ``False`` (not ``1``, not
    ``"yes"``).

    Raises:
        PlanError: naming the field and the value.
    """
    if not isinstance(value, bool):
        raise PlanError(
            f"{attribute.name} must be true or false, got {value!r}",
            field=attribute.name,
            value=value,
        )


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages: ``null``, ``boolean``,
    ``number``, ``string``, ``object``, ``array``; another Python type by its name.

    >>> json_type(True), json_type([1]), json_type({"a": 1})
    ('boolean', 'array', 'object')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def json_type_phrase(value: Any) -> str:
    """:func:`json_type` with its article: ``a boolean``, ``an object``, ``null``.

    >>> json_type_phrase({}), json_type_phrase(None), json_type_phrase("x")
    ('an object', 'null', 'a string')
    """
    name = json_type(value)
    if name == "null":
        return name
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _outside_int64(label: str, value: Any) -> PlanError:
    """The error for an integer no engine's SQL integer holds: a signed 64-bit integer is
    the widest every engine compares exactly (SQLite's INTEGER, PostgreSQL's ``bigint``), so
    a plan holds no wider one, also for an unsigned 64-bit column."""
    return PlanError(
        f"{label} must fit in a signed 64-bit integer ({INT64_MIN} to {INT64_MAX}), got {value!r}",
        field=label,
        value=value,
    )
