"""Keys given to ``delete_rows`` and ``read_rows`` mean one thing on every engine
(:func:`~hotdata_retrieval.engines.checks.checked_keys`): a key of another kind than the key
column's — text for an integer column, a number for a text column, a boolean, a
non-integral number for an integer column, NULL, NaN — is refused with an ``EngineError``
naming the key, the column and its type, before anything is read or deleted; between numbers
a key is converted where that is exact (``2.0`` is the integer key ``2``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from hotdata_retrieval.errors import EngineError
from tests.parity.engines import STORE_ENGINES, open_engine

BODIES = ["disk full", "moon node", "node seven", "full moon"]


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_engine(request.param, tmp_path_factory.mktemp(f"keys-{request.param}"), request)
    yield opened
    opened.close()


def _load(engine: Any, name: str, keys: list[Any], kind: pa.DataType) -> None:
    data = pa.table({"id": pa.array(keys, kind), "body": BODIES[: len(keys)]})
    engine.load_table(name, data, key_column="id", text_columns=["body"])


def _keys(engine: Any, name: str) -> list[Any]:
    return sorted(engine.read_table(name, ["id"]).column("id").to_pylist())


REFUSED_FOR_INTEGERS = [
    (["1", 2.0, "3.0"], r"key '1' cannot be a value of key column 'id' \(\w+\): it is text"),
    ([2, 2.5], r"key 2\.5 cannot be a value of key column 'id' \(\w+\): it is not an integer"),
    ([True], r"key True cannot be a value of key column 'id' \(\w+\): it is a boolean"),
    ([1, None], r"key None cannot be a value of key column 'id' \(\w+\): a key is never NULL"),
    ([float("nan")], r"key nan cannot be a value of key column 'id' \(\w+\): NaN equals no key"),
    ("12", "keys must be a list of keys, not str"),
]


@pytest.mark.parametrize(("keys", "message"), REFUSED_FOR_INTEGERS)
def test_a_key_of_another_kind_is_refused_and_nothing_is_deleted(
    engine: Any, keys: Any, message: str
) -> None:
    _load(engine, "int_keys", [1, 2, 3, 4], pa.int64())
    with pytest.raises(EngineError, match=message):
        engine.delete_rows("int_keys", keys)
    assert _keys(engine, "int_keys") == [1, 2, 3, 4]
    with pytest.raises(EngineError, match=message):
        engine.read_rows("int_keys", keys)


def test_a_number_is_no_text_key(engine: Any) -> None:
    _load(engine, "text_keys", ["1", "2", "3"], pa.string())
    message = r"key 1 cannot be a value of key column 'id' \(\w+\): it is a number"
    with pytest.raises(EngineError, match=message):
        engine.delete_rows("text_keys", ["2", 1])
    with pytest.raises(EngineError, match=message):
        engine.read_rows("text_keys", [1])
    assert _keys(engine, "text_keys") == ["1", "2", "3"]


def test_an_integral_number_is_the_integer_key(engine: Any) -> None:
    _load(engine, "exact_keys", [1, 2, 3, 4], pa.int64())
    found = engine.read_rows("exact_keys", [2.0, 3, 3.0])
    assert sorted(found.column("id").to_pylist()) == [2, 3]
    assert engine.delete_rows("exact_keys", [2.0, 9]) == 1
    assert _keys(engine, "exact_keys") == [1, 3, 4]


@pytest.mark.parametrize(
    ("name", "kind", "keys", "given"),
    [
        ("upsert_text_keys", pa.string(), ["a", "b"], pa.array([1], pa.int64())),
        ("upsert_int_keys", pa.int64(), [1, 2], pa.array(["1"], pa.string())),
    ],
)
def test_upserted_rows_keyed_by_another_kind_are_refused_and_nothing_is_written(
    engine: Any, name: str, kind: pa.DataType, keys: list[Any], given: pa.Array
) -> None:
    _load(engine, name, keys, kind)
    # every engine refuses, naming the key column (the SQL stores were silent or raw)
    with pytest.raises(EngineError, match=r"column 'id'"):
        engine.upsert_rows(name, pa.table({"id": given, "body": ["zzz"]}))
    assert _keys(engine, name) == keys


def test_a_boolean_and_an_equal_number_are_two_keys_of_an_untyped_column() -> None:
    """Python's ``True == 1 == 1.0`` share one hash: keys of a column of no known kind keep
    a boolean apart from the number it equals (numbers equal as keys are still one key)."""
    from hotdata_retrieval.engines.checks import ValueKind, checked_keys

    assert checked_keys([1, True, 1.0, 2, 1], ValueKind.OTHER, "k", "untyped") == [1, True, 2]
    assert checked_keys([False, 0, True], ValueKind.OTHER, "k", "untyped") == [False, 0, True]
