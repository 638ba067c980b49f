"""The key check by sorting (``engines/_repeated_keys.py``) against a count in Python.

The reference counts keys as Python's ``==`` and ``hash`` group them (``-0.0`` is ``0.0``,
each NaN distinct), over ``to_pylist``: the least value held more than once and its count.
Dates, times, timestamps and durations are counted over the integers Arrow holds them as
(Python's ``datetime.time`` and ``datetime`` have no nanoseconds, so ``to_pylist`` would
take two keys a nanosecond apart for one).
"""

from __future__ import annotations

import collections
import itertools
import math
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pytest
from hypothesis import given

from hotdata_retrieval.engines._repeated_keys import (
    key_problem,
    repeated_key,
    sortable,
    temporal_text,
)


def reference(values: list[Any]) -> tuple[Any, int] | None:
    counts: collections.Counter[Any] = collections.Counter(
        value for value in values if not (isinstance(value, float) and math.isnan(value))
    )
    repeated = sorted(value for value, count in counts.items() if count > 1)
    if not repeated:
        return None
    return repeated[0], counts[repeated[0]]


def chunked(values: list[Any], kind: pa.DataType, cuts: list[int]) -> pa.ChunkedArray:
    bounds = sorted({0, len(values), *(cut % (len(values) + 1) for cut in cuts)})
    return pa.chunked_array(
        [pa.array(values[low:high], kind) for low, high in itertools.pairwise(bounds)], kind
    )


KINDS = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint64": (pa.uint64(), st.integers(0, 2**64 - 1)),
    "int8": (pa.int8(), st.integers(-128, 127)),
    "float64": (pa.float64(), st.floats(allow_nan=True, width=64)),
    "float32": (pa.float32(), st.floats(allow_nan=True, width=32)),
    "string": (pa.string(), st.text(max_size=6)),
    "large_string": (pa.large_string(), st.text(max_size=6)),
    "binary": (pa.binary(), st.binary(max_size=4)),
}


@pytest.mark.parametrize("name", sorted(KINDS))
@given(data=st.data())
def test_the_repeated_key_is_the_references(name: str, data: st.DataObject) -> None:
    kind, values_of = KINDS[name]
    small = st.sampled_from(data.draw(st.lists(values_of, min_size=1, max_size=6)))
    values = data.draw(st.lists(st.one_of(small, values_of), max_size=40))
    if data.draw(st.booleans()):
        values.sort(key=lambda value: (isinstance(value, float) and math.isnan(value), value))
    cuts = data.draw(st.lists(st.integers(0, 40), max_size=3))
    expected = reference(pa.array(values, kind).to_pylist())
    for form in (pa.array(values, kind), chunked(values, kind, cuts)):
        found = repeated_key(form)
        assert found == expected
        if found is not None and found[0] == 0.0 and isinstance(found[0], float):
            assert math.copysign(1.0, found[0]) == 1.0  # -0.0 is named as 0.0
        nan = any(isinstance(value, float) and math.isnan(value) for value in values)
        assert (key_problem(form) is None) is (expected is None and not nan)  # NaN: no key


INTEGERS_64 = st.integers(-(2**63) + 1, 2**63 - 1)
TEMPORAL_KINDS = {
    "time64[ns]": (pa.time64("ns"), st.integers(0, 86_400 * 10**9 - 1)),
    "time64[us]": (pa.time64("us"), st.integers(0, 86_400 * 10**6 - 1)),
    "time32[s]": (pa.time32("s"), st.integers(0, 86_399)),
    "timestamp[ns]": (pa.timestamp("ns"), INTEGERS_64),
    "timestamp[ns, UTC]": (pa.timestamp("ns", "UTC"), INTEGERS_64),
    "timestamp[s]": (pa.timestamp("s"), st.integers(-(10**10), 10**11)),
    "date32": (pa.date32(), st.integers(-(10**6), 10**6)),
    "duration[ns]": (pa.duration("ns"), INTEGERS_64),
}


@pytest.mark.parametrize("name", sorted(TEMPORAL_KINDS))
@given(data=st.data())
def test_a_repeated_temporal_key_is_found_by_its_integers(name: str, data: st.DataObject) -> None:
    kind, values_of = TEMPORAL_KINDS[name]
    integers = pa.int32() if kind.bit_width == 32 else pa.int64()
    # keys a unit apart: the values Python's own types would take for one
    small = st.sampled_from(data.draw(st.lists(values_of, min_size=1, max_size=3))).flatmap(
        lambda value: st.sampled_from([value, value + 1])
    )
    values = data.draw(st.lists(st.one_of(small, values_of), max_size=40))
    values = [value for value in values if value in range(-(2**63) + 1, 2**63)]
    counted = reference(values)
    array = pa.array(values, integers).view(kind)
    found = repeated_key(array)
    if counted is None:
        assert found is None
        assert key_problem(array) is None
    else:
        assert found == (temporal_text(kind, counted[0]), counted[1])
        assert key_problem(array) is not None


def test_a_shuffled_million_keys_with_one_repeat_is_found() -> None:
    import numpy as np

    keys = np.random.default_rng(3).permutation(1_000_000).astype(np.int64)
    assert repeated_key(pa.array(keys)) is None
    keys[123_456] = keys[654_321]
    assert repeated_key(pa.array(keys)) == (int(keys[654_321]), 2)


@pytest.mark.parametrize(
    ("kind", "value", "text"),
    [
        (pa.time64("ns"), 1, "00:00:00.000000001"),
        (pa.timestamp("ns", "UTC"), 1, "1970-01-01 00:00:00.000000001Z"),
        (pa.date32(), 1, "1970-01-02"),
        (pa.duration("ns"), 1, "1ns"),
        (pa.timestamp("s"), 10**15, "1000000000000000s"),
    ],
)
def test_a_temporal_key_is_named_with_every_digit_of_its_unit(
    kind: pa.DataType, value: int, text: str
) -> None:
    assert temporal_text(kind, value) == text


def test_a_type_it_cannot_sort_is_refused_by_name() -> None:
    assert not sortable(pa.bool_())
    with pytest.raises(TypeError, match="bool"):
        repeated_key(pa.array([True, False]))
