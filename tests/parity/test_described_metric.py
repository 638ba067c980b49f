"""A vector column is described by the metric its table was loaded with (``vector_metric``),
on every engine, with or without a vector index: the local engine described a caller's column
without an HNSW index as ``cosine`` whatever its load said, where every store reported the
load's metric. What reads the description follows it: a routed nearest-neighbour search
ranks by that metric (its distances NumPy's float64 ones for it), and ``hdq explain``
plans a table's vector column with it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.errors import UnsupportedOnDialectError
from tests.parity.engines import STORE_ENGINES, empty_engine

ROWS = [[1.0, 0.0], [0.6, 0.9], [3.0, 4.0], [-2.0, 0.5]]
QUERY = [2.0, 1.0]


def _table(rows: list[list[float]], first_key: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": list(range(first_key, first_key + len(rows))),
            "body": ["row"] * len(rows),
            "embedding": pa.array(rows, pa.list_(pa.float32(), 2)),
        }
    )


def _reference(metric: str, rows: list[list[float]], query: list[float]) -> np.ndarray:
    """Each row's distance to ``query`` by ``metric``, in NumPy's float64 (cosine: one
    minus the cosine; l2: squared Euclidean; dot: the negative inner product)."""
    stored = np.array(rows, dtype=np.float32).astype(np.float64)
    vector = np.array(query, dtype=np.float64)
    if metric == "l2":
        return np.asarray(((stored - vector) ** 2).sum(axis=1))
    if metric == "dot":
        return np.asarray(-(stored @ vector))
    norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(vector)
    return np.asarray(1.0 - (stored @ vector) / norms)


@pytest.fixture(scope="module", params=STORE_ENGINES)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    yield from empty_engine(request, tmp_path_factory)


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_a_vector_column_is_described_by_its_loaded_metric(engine: Any, metric: str) -> None:
    table = f"described_{metric}"
    if metric not in engine.vector_metrics:  # turbopuffer's dot: refused at load
        with pytest.raises(UnsupportedOnDialectError):
            engine.load_table(table, _table(ROWS), vector_metric=metric)
        return
    engine.load_table(
        table, _table(ROWS), key_column="id", text_columns=["body"], vector_metric=metric
    )
    assert [vector.metric for vector in engine.indexes(table).vectors] == [metric]
    engine.upsert_rows(table, _table([[0.5, 0.5]], first_key=10))
    assert [vector.metric for vector in engine.indexes(table).vectors] == [metric]


@pytest.mark.parametrize("metric", ["l2", "dot"])
def test_a_routed_search_ranks_by_the_loaded_metric(engine: Any, metric: str) -> None:
    table = f"routed_{metric}"
    if metric not in engine.vector_metrics:  # turbopuffer's dot: refused at load
        with pytest.raises(UnsupportedOnDialectError):
            engine.load_table(table, _table(ROWS), vector_metric=metric)
        return
    engine.load_table(
        table, _table(ROWS), key_column="id", text_columns=["body"], vector_metric=metric
    )
    plan = engine.plan_search(
        table, "anything", mode="nearest", limit=len(ROWS), embed_query=lambda _: QUERY
    )
    assert plan.branches[0].metric.value == metric
    try:
        hits = engine.search(plan)
    except UnsupportedOnDialectError:
        assert (engine.parity_name, metric) == ("sqlite", "dot")  # sqlite-vec has no dot
        return
    expected = _reference(metric, ROWS, QUERY)
    assert [hit.key for hit in hits] == sorted(range(len(ROWS)), key=lambda k: (expected[k], k))
    for hit in hits:
        assert hit.distance == pytest.approx(expected[hit.key], rel=1e-6)


def test_hdq_explain_plans_the_loaded_metric(tmp_path: Path) -> None:
    from hotdata_retrieval.engines.local import LocalEngine

    database = tmp_path / "db"
    with LocalEngine(database) as engine:
        engine.load_table(
            "docs", _table(ROWS), key_column="id", text_columns=["body"], vector_metric="l2"
        )
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "anything",
            "--table",
            "docs",
            "--mode",
            "nearest",
            "--vector",
            json.dumps(QUERY),
            "--database",
            str(database),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == EXIT_OK, result.stderr
    explained = json.loads(result.stdout)
    assert "l2_distance(" in explained["sql"] and "cosine_distance(" not in explained["sql"]


def test_hdq_lint_reads_the_loaded_metric(tmp_path: Path) -> None:
    """``hdq lint --local-db`` checks a distance function against the metric the table's
    vector column was loaded with: ``cosine_distance`` over a column loaded for ``l2`` is
    the metric-mismatch finding, ``l2_distance`` none."""
    from hotdata_retrieval.cli.lint import lint
    from hotdata_retrieval.engines.local import LocalEngine

    database = tmp_path / "db"
    with LocalEngine(database) as engine:
        engine.load_table(
            "docs", _table(ROWS), key_column="id", text_columns=["body"], vector_metric="l2"
        )
    printed = CliRunner().invoke(lint, ["--local-db", str(database), "--print-catalog"])
    assert printed.exit_code == EXIT_OK, printed.stderr
    vectors = [
        index for index in json.loads(printed.stdout)["indexes"] if index["kind"] == "vector"
    ]
    assert [(index["columns"], index["metric"]) for index in vectors] == [(["embedding"], "l2")]
    findings = {}
    for function in ("l2_distance", "cosine_distance"):
        sql = (
            f"SELECT id, {function}(embedding, ARRAY[2.0, 1.0]) AS _distance "
            "FROM default.public.docs ORDER BY _distance LIMIT 3"
        )
        result = CliRunner().invoke(lint, ["-", "--local-db", str(database)], input=sql)
        findings[function] = "does not match the l2 index" in result.stdout
    assert findings == {"l2_distance": False, "cosine_distance": True}
