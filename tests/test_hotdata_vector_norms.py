"""A table the Hotdata engine makes for cosine refuses rows a cosine search cannot rank, as a
table loaded for cosine does on every engine (``tests/parity/test_cosine_norm_bounds.py``):
a non-zero vector whose Float32 squared norm is no normal Float32 number is an
``EngineError`` naming the column, and no table is declared. A table made for ``l2`` or
``dot`` takes such rows, as on every engine. The reference is the local engine's
``load_table`` of the same rows, and NumPy's view of which rows are such.

Before: the Hotdata engine made the cosine table with such rows, whose cosine distances its
engine computes from Float32 squared norms (``[1e-30, 1e-30]`` at 1.0).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hotdata_retrieval import EngineError
from hotdata_retrieval.engines.local import LocalEngine, TableLoad
from tests.document_engines import fresh_table, open_document_engine
from tests.parity.test_cosine_search_of_other_metrics import GOOD, OUTSIDE, _outside, _table


@pytest.fixture(scope="module")
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened = open_document_engine("hotdata", tmp_path_factory.mktemp("hotdata"), request)
    yield opened
    opened.close()


def _local_refuses(directory: Path, rows: dict[int, list[float]], metric: str) -> bool:
    with LocalEngine(directory) as local:
        try:
            local.load_table("reference", _table(rows), key_column="id", vector_metric=metric)
        except EngineError:
            return True
    return False


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
@pytest.mark.parametrize("vector", [*OUTSIDE, GOOD[2]])
def test_a_table_is_made_with_such_rows_as_the_local_engine_loads_them(
    engine: Any, tmp_path: Path, metric: str, vector: list[float]
) -> None:
    rows = {key: row for key, row in enumerate([*GOOD[:2], vector])}
    refused = _local_refuses(tmp_path, rows, metric)
    assert refused == (metric == "cosine" and bool(_outside(list(rows.values()))))
    name = fresh_table("norms")
    data = _table(rows)
    made = TableLoad(name=name, data=data, key_column="id", vector_metric=metric)
    if not refused:
        engine.upsert_rows(name, data, create=made)
        assert sorted(engine.read_table(name, ["id"]).column("id").to_pylist()) == [0, 1, 2]
        return
    with pytest.raises(EngineError, match=r"'embedding'") as raised:
        engine.upsert_rows(name, data, create=made)
    assert "squared norm" in str(raised.value)
    assert name not in engine.tables
