"""The HNSW path's cosine re-score from float64 row norms cached per table version: the
same bits as the exact kernel's, and never a previous version's norms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine, nearest
from hotdata_retrieval.engines.local.distance import float32_distances, float64_row_norms
from hotdata_retrieval.engines.local.nearest import hnsw_keys

VECTOR_TYPE = pa.list_(pa.float32())


def _vectors(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, 16)).astype(np.float32)
    # magnitudes far apart, so a norm from another version of a row is far off
    return vectors * rng.uniform(0.01, 100.0, (count, 1)).astype(np.float32)


def _table(vectors: np.ndarray) -> pa.Table:
    return pa.table({"id": range(len(vectors)), "emb": pa.array(vectors.tolist(), VECTOR_TYPE)})


def _reference(vectors: np.ndarray, query: np.ndarray, ids: list[int]) -> np.ndarray:
    """Cosine distances in float64 from the rows as loaded (an independent computation)."""
    rows = vectors[ids].astype(np.float64)
    wide = query.astype(np.float32).astype(np.float64)
    return 1.0 - rows @ wide / (np.linalg.norm(rows, axis=1) * np.linalg.norm(wide))


def _searched(engine: LocalEngine, query: np.ndarray) -> tuple[list[int], np.ndarray]:
    plan = SearchPlan(
        source=NearestNeighborSearch(table="v", column="emb", query_vector=query.tolist()),
        limit=10,
        columns=["id"],
    )
    hits = engine.search(plan).hits
    return [hit.key for hit in hits], np.array([hit.distance for hit in hits])


def test_the_cached_norms_are_the_exact_kernels_bits(tmp_path: Path) -> None:
    vectors = _vectors(300, seed=1)
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", _table(vectors), vector_index="hnsw")
        index = engine._loaded("v").vector_index("emb")
        norms = float64_row_norms(index.matrix)
        for seed in range(5):
            query = _vectors(1, seed=100 + seed)[0].astype(np.float64)
            keys = np.random.default_rng(seed).choice(300, 64, replace=False)
            fast, bounded = index._hnsw_rescored(
                "cosine_distance", query, query.astype(np.float32), keys
            )
            assert bounded
            exact = index.exact("cosine_distance", query, keys)
            assert fast.tobytes() == exact.tobytes()
        assert index._float64_norms is not None
        assert index._float64_norms.tobytes() == norms.tobytes()


def test_a_search_after_an_upsert_or_a_reload_reads_the_new_rows_norms(tmp_path: Path) -> None:
    vectors = _vectors(300, seed=2)
    query = _vectors(1, seed=7)[0]
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", _table(vectors), vector_index="hnsw")
        ids, distances = _searched(engine, query)
        np.testing.assert_allclose(distances, _reference(vectors, query, ids), rtol=1e-6)
        # the same directions at other magnitudes: the cosine distances stay, the norms do not
        changed = vectors.copy()
        changed[ids] *= np.float32(37.0)
        engine.upsert_rows("v", _table(changed).take(ids))
        ids_after, distances_after = _searched(engine, query)
        assert set(ids_after) == set(ids)
        np.testing.assert_allclose(
            distances_after, _reference(changed, query, ids_after), rtol=1e-6
        )
        reloaded = _vectors(300, seed=3)
        engine.load_table("v", _table(reloaded), vector_index="hnsw")
        ids_reloaded, distances_reloaded = _searched(engine, query)
        np.testing.assert_allclose(
            distances_reloaded, _reference(reloaded, query, ids_reloaded), rtol=1e-6
        )


def test_the_searchs_float32_distances_are_the_functions_rounding(tmp_path: Path) -> None:
    """``nearest_rounded``'s Float32 distances, on the HNSW path, the exact scan, with ties
    and with rows without a vector filling a short answer, are ``float32_distances`` of its
    float64 ones, bit for bit (-0.0 as 0.0)."""
    vectors = _vectors(300, seed=3)
    vectors[7] = vectors[5]  # a tie
    table = pa.table(
        {
            "id": range(302),
            "emb": pa.array([*vectors.tolist(), None, None], VECTOR_TYPE),
        }
    )
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", table, vector_index="hnsw")
        index = engine._loaded("v").vector_index("emb")
        for seed in range(4):
            query = vectors[5] if seed == 0 else _vectors(1, seed=200 + seed)[0]
            for kwargs in (
                {"approximate": True},
                {"approximate": False, "with_ties": True},
                {"approximate": False, "mask": np.arange(302) % 3 == 0},
            ):
                for k in (1, 10, 305):
                    rowids, distances, rounded = index.nearest_rounded(
                        "cosine_distance",
                        query.astype(np.float64),
                        k,
                        with_nulls=True,
                        **kwargs,  # type: ignore[arg-type]
                    )
                    assert rounded.dtype == np.float32
                    assert rounded.tobytes() == float32_distances(distances).tobytes()
                    plain = index.nearest(
                        "cosine_distance", query.astype(np.float64), k, with_nulls=True, **kwargs
                    )  # type: ignore[arg-type]
                    assert plain[0].tolist() == rowids.tolist()
                    assert plain[1].tobytes() == distances.tobytes()


def test_the_compiled_search_finds_the_wrappers_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hnsw_keys`` calls usearch's compiled ``search_many`` directly: the keys of
    ``Index.search``, in its order, for every count up to past the table's rows; the
    installed usearch's direct call is kept after the first search's comparison."""
    monkeypatch.setattr(nearest, "_COMPILED_SEARCH_AGREES", None)
    vectors = _vectors(200, seed=4)
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("v", _table(vectors), vector_index="hnsw")
        index = engine._loaded("v").vector_index("emb").hnsw
        assert index is not None
        for seed in range(5):
            query = _vectors(1, seed=300 + seed)[0]
            for count in (1, 10, 64, 250):
                expected = index.search(query, count, threads=1).keys
                found = hnsw_keys(index, query, count)
                assert found.tolist() == expected.tolist()
                assert len(found) == min(count, 200)
    assert nearest._COMPILED_SEARCH_AGREES is True


class _Answer:
    def __init__(self, keys: np.ndarray) -> None:
        self.keys = keys


class _Compiled:
    """A compiled index whose ``search_many`` answers in another order than its wrapper."""

    def search_many(self, queries: np.ndarray, count: int, exact: bool, threads: int) -> tuple:
        keys = np.arange(count, dtype=np.uint64)[::-1].reshape(1, count)
        return keys, None, np.array([count]), None


class _Index:
    _compiled = _Compiled()

    def search(self, query: np.ndarray, count: int, threads: int) -> _Answer:
        return _Answer(np.arange(count, dtype=np.uint64))


class _Refusing(_Index):
    class _compiled:
        @staticmethod
        def search_many(*arguments: object) -> tuple:
            raise TypeError("search_many() takes other arguments")


@pytest.mark.parametrize("index", [_Index(), _Refusing()])
def test_a_compiled_search_answering_otherwise_is_not_used(
    index: _Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another usearch whose ``search_many`` orders, names or answers otherwise: the first
    search's comparison (or its error) turns the direct call off, and every answer is the
    wrapper's."""
    monkeypatch.setattr(nearest, "_COMPILED_SEARCH_AGREES", None)
    query = np.zeros(4, dtype=np.float32)
    for _ in range(3):
        assert hnsw_keys(index, query, 5).tolist() == [0, 1, 2, 3, 4]
    assert nearest._COMPILED_SEARCH_AGREES is False


def test_a_short_first_answer_does_not_settle_the_direct_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer of one key agrees in any order: the direct call is settled only by an
    answer long enough to show its order, and a later long one that differs turns it off."""
    monkeypatch.setattr(nearest, "_COMPILED_SEARCH_AGREES", None)
    index = _Index()
    query = np.zeros(4, dtype=np.float32)
    assert hnsw_keys(index, query, 1).tolist() == [0]
    assert nearest._COMPILED_SEARCH_AGREES is None
    assert hnsw_keys(index, query, 9).tolist() == list(range(9))
    assert nearest._COMPILED_SEARCH_AGREES is False
