"""Whether a key column holds one value twice, found by sorting rather than by hashing.

Arrow's ``count_distinct`` builds a hash table of every key: about 280 bytes a 64-bit
integer key and 370 a 36-character text key, at the peak of a load beside the table
(measured with pyarrow 26's default pool at 300,000 keys), and 0.17 s and 0.70 s for
300,000 shuffled integer and text keys. Sorting costs a copy of the column and, for text,
8 bytes a row of sort indices (0.012 s and 0.078 s for the same keys), and a column
already in ascending order, as most generated keys are, costs one comparison a row.

Equality is NumPy's for numbers, which is SQL's ``=`` and Python's ``==``: ``-0.0`` and
``0.0`` are one key and NaN equals nothing (callers refuse NaN keys before asking), and
Arrow's for text and bytes (byte for byte). A date, time, timestamp or duration is compared
as the integer Arrow holds it as (days, or counts of its unit): Python's own values cannot
tell keys apart by less than a microsecond (``datetime.time`` has no nanoseconds), and
two keys are one only when the store holds one value for both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def sortable(kind: pa.DataType) -> bool:
    """Whether :func:`repeated_key` reads keys of Arrow type ``kind`` (integers, floats,
    text, bytes, and dates, times, timestamps and durations by their integers)."""
    import pyarrow as pa

    return bool(
        _temporal(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def repeated_key(values: pa.Array | pa.ChunkedArray) -> tuple[Any, int] | None:
    """A value ``values`` holds more than once and how many rows hold it (the least such
    value), or ``None`` when every value is distinct.

    Args:
        values: keys without NULL, of a type :func:`sortable` accepts.

    Raises:
        TypeError: ``values`` is of a type :func:`sortable` does not accept.
    """
    import pyarrow as pa

    kind = values.type
    if not sortable(kind):
        raise TypeError(f"keys of type {kind} are not read by sorting")
    if len(values) < 2:
        return None
    if _temporal(kind):
        integers = pa.int32() if kind.bit_width == 32 else pa.int64()
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        repeated = _repeated_number(values.view(integers))
        if repeated is None:
            return None
        value, count = repeated
        return temporal_text(kind, value), count
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return _repeated_number(values)
    return _repeated_bytes(values)


def temporal_text(kind: pa.DataType, value: int) -> str:
    """A date, time, timestamp or duration of Arrow type ``kind`` held as the integer
    ``value``, written as Arrow writes it (``'1970-01-01 00:00:00.000000001'``, ``'00:00:01'``;
    every digit of its unit, which Python's own types would cut to microseconds); a duration
    or a value past the years Arrow writes as its integer and unit (``'1ns'``)."""
    import pyarrow as pa

    integers = pa.int32() if kind.bit_width == 32 else pa.int64()
    if not pa.types.is_duration(kind):
        text = pa.array([value], integers).view(kind).cast(pa.string())[0].as_py()
        if not text.startswith("<"):  # "<value out of range: ...>"
            return str(text)
    return f"{value}{getattr(kind, 'unit', '')}"


UNITS_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
"""How many of each Arrow time unit a second holds."""


def finer_timestamp(values: pa.Array | pa.ChunkedArray, unit: str) -> tuple[int, str] | None:
    """The first timestamp of ``values`` that is not a whole number of ``unit`` (an Arrow
    time unit: ``s``, ``ms``, ``us``, ``ns``), as its row (counted from 0) and its text
    (:func:`temporal_text`); ``None`` when every value is one, or ``values`` are no
    timestamps or of a unit no finer than ``unit``. NULLs are none."""
    import pyarrow as pa

    kind = values.type
    if not pa.types.is_timestamp(kind):
        return None
    step = UNITS_PER_SECOND[kind.unit] // UNITS_PER_SECOND[unit]
    if step <= 1:
        return None
    found = _first_not_multiple(values, step)
    return None if found is None else (found[0], temporal_text(kind, found[1]))


def _first_not_multiple(values: pa.Array | pa.ChunkedArray, step: int) -> tuple[int, int] | None:
    """The row (counted from 0) and integer of the first of ``values`` (a 64-bit temporal
    array, read as Arrow's integers) that is not a multiple of ``step``; NULLs are none."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    integers = pc.fill_null(values.view(pa.int64()), 0).to_numpy(zero_copy_only=False)
    found = np.flatnonzero(np.remainder(integers, step) != 0)
    if not found.size:
        return None
    row = int(found[0])
    return row, int(integers[row])


DAY_MILLISECONDS = 86_400_000
"""The milliseconds of a day: every ``date64`` value is a multiple of it (Arrow's
specification, ``Schema.fbs``: "evenly divisible by 86400000")."""


def partial_day(values: pa.Array | pa.ChunkedArray) -> tuple[int, str] | None:
    """The first ``date64`` value of ``values`` that is not a whole day (a time of day in
    milliseconds, which Arrow builds though its specification forbids it), as its row
    (counted from 0) and the moment it names (``'1970-01-01 00:00:00.001'``); ``None`` when
    every value is one, or ``values`` are no ``date64``. NULLs are none."""
    import pyarrow as pa

    if not pa.types.is_date64(values.type):
        return None
    found = _first_not_multiple(values, DAY_MILLISECONDS)
    return None if found is None else (found[0], temporal_text(pa.timestamp("ms"), found[1]))


def _temporal(kind: pa.DataType) -> bool:
    """Whether Arrow type ``kind`` is a date, time, timestamp or duration: one integer a
    value (days, milliseconds, or counts of its unit)."""
    import pyarrow as pa

    return bool(
        pa.types.is_date(kind)
        or pa.types.is_time(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_duration(kind)
    )


def _repeated_number(values: pa.Array | pa.ChunkedArray) -> tuple[Any, int] | None:
    import numpy as np

    numbers = values.to_numpy()
    if bool(np.all(numbers[1:] > numbers[:-1])):
        return None
    ordered = np.sort(numbers)
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return None
    value = ordered[int(np.argmax(same))]
    found = value.item()
    if isinstance(found, float):
        found += 0.0  # -0.0 is named as 0.0, the key SQL and Python take it for
    return found, int(np.count_nonzero(numbers == value))


def _repeated_bytes(values: pa.Array | pa.ChunkedArray) -> tuple[Any, int] | None:
    import pyarrow.compute as pc

    ordered = values.take(pc.sort_indices(values))
    same = pc.equal(ordered[1:], ordered[:-1])
    if not pc.any(same).as_py():
        return None
    value = ordered[pc.index(same, True).as_py()]
    return value.as_py(), int(pc.sum(pc.equal(values, value)).as_py())


def positive_zero(values: Any) -> Any:
    """Float ``values`` (an Arrow array or chunked array) with ``-0.0`` as ``0.0``, the one
    key and one filter value they are (:func:`key_problem`), so Arrow's, DataFusion's and
    LanceDB's hash lookups match them; other types unchanged. Arrow adds no half-precision
    floats: those are made zero-signed through Float32, which holds every Float16 value
    exactly."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_float16(values.type):
        return positive_zero(values.cast(pa.float32())).cast(pa.float16())
    if pa.types.is_floating(values.type):
        return pc.add(values, pa.scalar(0.0, values.type))  # -0.0 + 0.0 is 0.0
    return values


def key_in(values: Any, keys: Any) -> Any:
    """Which of ``values`` (a key column: an Arrow array or chunked array) is one of
    ``keys`` (an Arrow array), as keys compare (:func:`key_problem`), as a boolean array:
    ``-0.0`` is ``0.0``, a dictionary's keys are its values, and half-precision floats are
    compared through Float32 (Arrow's ``is_in`` has no kernel for them, and refused a
    dictionary set beside decoded values).

    >>> import pyarrow as pa
    >>> key_in(pa.array([-0.0, 1.0], pa.float16()), pa.array([0.0], pa.float16())).to_pylist()
    [True, False]
    """
    import pyarrow.compute as pc

    return pc.is_in(_comparable(values), value_set=_comparable(keys))


def _comparable(values: Any) -> Any:
    """Key ``values`` as :func:`key_in` compares them."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_float16(values.type):
        values = values.cast(pa.float32())
    return positive_zero(values)


def key_problem(values: pa.Array | pa.ChunkedArray) -> str | None:
    """Why ``values`` cannot be a key column, or ``None`` when every row has a distinct,
    comparable key.

    Keys are compared as SQL's ``=`` and Python's ``==`` compare them — the fusion joins and
    merges on them — so ``-0.0`` and ``0.0`` are one key (Arrow's hash would keep them apart),
    and NaN, which equals no key (not even itself), is none: a search would return its row
    once per branch.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from hotdata_retrieval._words import counted
    from hotdata_retrieval.errors import row_name

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not len(values):
        return None
    if values.null_count:
        return f"has {counted(values.null_count, 'NULL value')}"
    kind = values.type
    if pa.types.is_nested(kind) or (
        pa.types.is_dictionary(kind) and pa.types.is_nested(kind.value_type)
    ):
        return f"holds {kind} values; a key is a number, text, bytes or a date or time"
    if pa.types.is_dictionary(kind):
        values = values.dictionary_decode()  # Arrow counts no dictionary's distinct values
    if pa.types.is_floating(values.type):
        nan = pc.is_nan(values)
        if pc.any(nan).as_py():
            row = int(pc.index(nan, True).as_py())
            return f"holds NaN in {row_name(row)}; NaN equals no key, not even itself"
    if sortable(values.type):  # floats: -0.0 and 0.0 are one key (repeated_key)
        repeated = repeated_key(values)
        if repeated is None:
            return None
        value, count = repeated
        return f"is not unique: {value!r} appears {count} times"
    if pc.count_distinct(values).as_py() == len(values):
        return None
    counts = pc.value_counts(values)
    first = counts.filter(pc.greater(counts.field("counts"), 1))[0]
    return f"is not unique: {first['values'].as_py()!r} appears {first['counts'].as_py()} times"
