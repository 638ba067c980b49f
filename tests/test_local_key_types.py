"""Local engine loads of key columns whose Arrow type the key check once failed on with
Arrow's own error: half-precision floats and dictionary-encoded numbers. A key is compared
as Python's ``==`` compares it (the reference): a repeat is refused naming it, distinct keys
load; and a stored half-precision ``-0.0`` is found by an ``IN`` list as by ``=``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval.engines.errors import EngineError
from hotdata_retrieval.engines.local.engine import LocalEngine

KEYS = {
    "float16": pa.array(np.array([1.5, -0.0, 2.0], np.float16)),
    "float16 zeros": pa.array(np.array([1.5, -0.0, 0.0], np.float16)),
    "float16 repeat": pa.array(np.array([2.0, 1.5, 2.0], np.float16)),
    "dictionary of integers": pa.array([7, 3, 9]).dictionary_encode(),
    "dictionary repeat": pa.array([7, 3, 7]).dictionary_encode(),
    "dictionary of floats": pa.array([0.0, -0.0, 1.0]).dictionary_encode(),
}


def repeated(values: list[object]) -> object | None:
    seen: list[object] = []
    for value in values:
        if value in seen:
            return value + 0.0 if isinstance(value, float) else value  # -0.0 named 0.0
        seen.append(value)
    return None


@pytest.mark.parametrize("name", sorted(KEYS))
def test_a_key_loads_exactly_when_python_finds_no_repeat(tmp_path: Path, name: str) -> None:
    keys = KEYS[name]
    data = pa.table({"id": keys, "body": ["a b", "b c", "c d"]})
    engine = LocalEngine(tmp_path)
    twice = repeated(keys.to_pylist())
    if twice is None:
        engine.load_table("t", data, text_columns=["body"])
        stored = engine.sql("SELECT id FROM t").column("id").to_pylist()
        assert sorted(stored) == sorted(keys.to_pylist())
    else:
        with pytest.raises(EngineError, match=f"is not unique: {twice!r} "):
            engine.load_table("t", data, text_columns=["body"])


def test_a_half_precision_negative_zero_is_found_by_an_in_list(tmp_path: Path) -> None:
    values = np.array([1.5, -0.0, 2.0], np.float16)
    engine = LocalEngine(tmp_path)
    engine.load_table("t", pa.table({"id": [1, 2, 3], "h": values}))
    expected = sorted(i for i, v in zip([1, 2, 3], values.tolist()) if v in (0.0, 7.0, 8.0, 9.0))
    for where in ("h = 0.0", "h IN (0.0, 7.0, 8.0, 9.0)"):
        found = engine.sql(f"SELECT id FROM t WHERE {where}").column("id").to_pylist()
        assert sorted(found) == expected, where
