"""The BLAS gate (engines/local/_blas.py): a product alone keeps BLAS's own thread count;
overlapping products run on one thread each, the count changed only while none runs; a run of
lone products restores it; and concurrent searches return what the same searches return one
at a time."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import NearestNeighborSearch, SearchPlan
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local._blas import ALONE_STREAK, BLAS_GATE, BlasGate


class FakeLimits:
    """Stands in for threadpoolctl: records each change and how many products ran then."""

    def __init__(self) -> None:
        self.gate: BlasGate | None = None
        self.events: list[tuple[str, int]] = []

    def limit(self) -> Any:
        assert self.gate is not None
        self.events.append(("one thread", self.gate.running))
        fake = self

        class Limiter:
            def restore_original_limits(self) -> None:
                assert fake.gate is not None
                fake.events.append(("restored", fake.gate.running))

        return Limiter()


@pytest.fixture
def gate() -> tuple[BlasGate, FakeLimits]:
    limits = FakeLimits()
    made = BlasGate(limit=limits.limit)
    limits.gate = made
    return made, limits


def _wait_until(condition: Any) -> None:
    """Wait (bounded, so a bug fails instead of hanging) until ``condition()`` holds."""
    for _ in range(10_000):
        if condition():
            return
        threading.Event().wait(0.001)
    raise AssertionError("the condition never held")


def _overlap(blas: BlasGate) -> None:
    """Two products from two threads, the second starting while the first runs."""
    inside, release = threading.Event(), threading.Event()

    def first() -> None:
        with blas.product():
            inside.set()
            release.wait()

    entered = threading.Event()

    def second() -> None:
        with blas.product():
            entered.set()

    one = threading.Thread(target=first)
    one.start()
    inside.wait()
    two = threading.Thread(target=second)
    two.start()
    _wait_until(lambda: blas.waiting == 1 or entered.is_set())
    release.set()
    one.join()
    two.join()


def test_lone_products_never_change_the_thread_count(gate: tuple[BlasGate, FakeLimits]) -> None:
    blas, limits = gate
    for _ in range(3 * ALONE_STREAK):
        with blas.product():
            pass
    assert limits.events == [] and not blas.one_thread


def test_an_overlapping_product_waits_then_both_kinds_run_on_one_thread(
    gate: tuple[BlasGate, FakeLimits],
) -> None:
    blas, limits = gate
    inside, release = threading.Event(), threading.Event()

    def first() -> None:
        with blas.product():
            inside.set()
            release.wait()

    order: list[str] = []

    def second() -> None:
        with blas.product():
            order.append("second ran")

    one = threading.Thread(target=first)
    one.start()
    inside.wait()
    two = threading.Thread(target=second)
    two.start()
    _wait_until(lambda: blas.waiting == 1)
    # the first still runs on every core: the count is not changed under it
    assert limits.events == [] and order == []
    release.set()
    one.join()
    two.join()
    assert order == ["second ran"]
    assert limits.events == [("one thread", 0)]  # set once, while no product ran
    assert blas.one_thread
    # with the limit in force, overlapping products no longer wait
    with blas.product(), blas.product():
        assert blas.running == 2 and blas.waiting == 0
    assert limits.events == [("one thread", 0)]


def test_a_run_of_lone_products_restores_the_count(gate: tuple[BlasGate, FakeLimits]) -> None:
    blas, limits = gate
    _overlap(blas)  # the limit is set, between the two products
    assert limits.events == [("one thread", 0)]
    for _ in range(ALONE_STREAK):
        with blas.product():
            pass
    assert blas.one_thread  # ALONE_STREAK lone products so far; the next one restores
    with blas.product():
        assert not blas.one_thread
    assert limits.events == [("one thread", 0), ("restored", 0)]
    blas.restore()  # nothing to restore
    assert limits.events == [("one thread", 0), ("restored", 0)]


def test_an_overlap_breaks_the_run_of_lone_products(gate: tuple[BlasGate, FakeLimits]) -> None:
    blas, limits = gate
    _overlap(blas)
    for _ in range(ALONE_STREAK - 1):
        with blas.product():
            pass
    _overlap(blas)  # the run starts again (two products at once, the limit in force)
    for _ in range(ALONE_STREAK):
        with blas.product():
            pass
    assert blas.one_thread and [event for event, _ in limits.events] == ["one thread"]
    blas.restore()
    assert not blas.one_thread and limits.events[-1] == ("restored", 0)


def test_a_gate_that_cannot_set_the_count_lets_products_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def missing() -> Any:
        raise ImportError("No module named 'threadpoolctl'")

    blas = BlasGate(limit=missing)
    _overlap(blas)  # the overlap tries to set the count, fails, and both products run
    assert not blas.one_thread and blas.running == 0 and blas.waiting == 0
    assert "cannot set the BLAS thread count (No module named 'threadpoolctl')" in caplog.text
    _overlap(blas)  # from then on nothing waits, and nothing is logged again
    assert caplog.text.count("cannot set the BLAS thread count") == 1


def test_concurrent_searches_return_what_sequential_searches_return(tmp_path: Path) -> None:
    """Eight threads search one engine at once, each product under the process's real gate:
    every result equals the same plan's result run alone, and NumPy's float64 top 10."""
    rng = np.random.default_rng(17)
    matrix = rng.standard_normal((3_000, 24)).astype(np.float32)
    queries = rng.standard_normal((16, 24)).astype(np.float32)
    table = pa.table(
        {"id": np.arange(3_000), "embedding": pa.array(matrix.tolist(), pa.list_(pa.float32()))}
    )
    unit = matrix.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("vectors", table, key_column="id")

        def plan(query: np.ndarray) -> SearchPlan:
            source = NearestNeighborSearch(
                table="vectors", column="embedding", query_vector=query.tolist()
            )
            return SearchPlan(source=source, columns=["id"], limit=10)

        alone = [engine.search(plan(query)).keys for query in queries]
        found: dict[int, list[Any]] = {}

        def caller(start: int) -> None:
            for index in range(start, len(queries), 8):
                found[index] = engine.search(plan(queries[index])).keys

        threads = [threading.Thread(target=caller, args=(start,)) for start in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    BLAS_GATE.restore()  # the rest of the process keeps BLAS's own thread count
    assert [found[index] for index in range(len(queries))] == alone
    for query, keys in zip(queries, alone):
        scores = unit @ (query.astype(np.float64) / np.linalg.norm(query.astype(np.float64)))
        assert keys == np.argsort(-scores, kind="stable")[:10].tolist()


def test_closing_an_engine_gives_blas_its_threads_back(
    gate: tuple[BlasGate, FakeLimits], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotdata_retrieval.engines.local import LocalEngine, _blas

    blas, limits = gate
    monkeypatch.setattr(_blas, "BLAS_GATE", blas)
    _overlap(blas)
    assert blas.one_thread
    LocalEngine().close()
    assert not blas.one_thread and limits.events == [("one thread", 0), ("restored", 0)]
