"""A tie of distances in a nearest-neighbour branch is broken by the table's key, as every
store's ``ORDER BY <distance>, <key>`` breaks it: at a single search's bound, at a fusion's
depth, on the exact scan and on the HNSW index alike."""

from __future__ import annotations

import decimal
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Between,
    Bm25Search,
    Comparison,
    InList,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)
from hotdata_retrieval.compile import compile_plan
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine, _search
from hotdata_retrieval.engines.local.fastpath import NEAREST_SCAN
from hotdata_retrieval.engines.results import executed_plan
from hotdata_retrieval.engines.sqlite import SqliteEngine
from hotdata_retrieval.plan.names import TableUnion

KEYS = [9, 3, 7, 1, 5, 2, 8, 4, 6, 0]  # keys out of row order
DATA = pa.table(
    {
        "id": KEYS,
        "body": ["twin words"] * 9 + ["other"],
        "bucket": [key % 2 for key in KEYS],
        "embedding": pa.array([[1.0, 0.0]] * len(KEYS), pa.list_(pa.float32(), 2)),
    }
)
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])
FUSED = ReciprocalRankFusion(
    branches=[Bm25Search(table="docs", column="body", query_text="twin"), NEAREST], depth=3
)


def keys(engine: object, plan: SearchPlan) -> list[object]:
    return [hit.key for hit in engine.search(plan).hits]  # type: ignore[attr-defined]


@pytest.fixture(scope="module", params=[None, "hnsw"])
def engines(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    root = tmp_path_factory.mktemp("ties")
    local = LocalEngine(root / "local")
    local.load_table("docs", DATA, text_columns=["body"], vector_index=request.param)
    sqlite = SqliteEngine(root / "store.db")
    sqlite.load_table("docs", DATA, key_column="id", text_columns=["body"])
    return local, sqlite


@pytest.mark.parametrize(
    "plan",
    [
        SearchPlan(source=NEAREST, limit=3),
        SearchPlan(source=NEAREST, limit=3, offset=2),
        SearchPlan(
            source=NEAREST, limit=3, filter=Comparison(column="bucket", operator="=", value=1)
        ),
        SearchPlan(source=FUSED, limit=2),
        SearchPlan(
            source=FUSED, limit=3, filter=Comparison(column="bucket", operator="=", value=0)
        ),
    ],
    ids=["nearest", "nearest-page-2", "nearest-filtered", "fused-depth", "fused-filtered"],
)
def test_ties_are_cut_by_the_key_as_on_a_store(engines: tuple, plan: SearchPlan) -> None:
    local, sqlite = engines
    assert keys(local, plan) == keys(sqlite, plan)


def test_a_tied_nearest_search_returns_the_lowest_keys_in_key_order(engines: tuple) -> None:
    local, _ = engines
    assert keys(local, SearchPlan(source=NEAREST, limit=4)) == [0, 1, 2, 3]


def test_the_depth_cut_keeps_the_nearest_rows_of_lowest_key(engines: tuple) -> None:
    local, _ = engines
    hits = local.search(SearchPlan(source=FUSED, limit=3)).hits
    assert [hit.key for hit in hits] == [1, 2, 0]  # 0: the nearest branch's third, by key
    nearest_ranked = sorted(hit.key for hit in hits if hit.branches["nearest"].rank is not None)
    assert nearest_ranked == [0, 1, 2]


def test_pages_of_a_tied_search_tile_one_ranking(engines: tuple, tmp_path: Path) -> None:
    local, _ = engines
    whole = keys(local, SearchPlan(source=NEAREST, limit=9))
    pages = [
        keys(local, SearchPlan(source=NEAREST, limit=3, offset=offset)) for offset in (0, 3, 6)
    ]
    assert [key for page in pages for key in page] == whole == sorted(KEYS)[:9]


# -- a filter the fast path declines ------------------------------------------------------
#
# The fast path (and the native search) put a row mask in the WHERE's place only where the mask
# keeps exactly the rows the WHERE keeps (``masks.reads_as_sql``); other filters leave the
# compiled statement to run row by row. Its nearest branch orders by the distance alone (the
# index's shape), so the engine must put the key back for ties to come in key order.

TIED_ROWS = 48
TIED_KEYS = [int(key) for key in np.random.default_rng(3).permutation(TIED_ROWS)]
"""Keys out of row order, so rowid order (a sort's own order of ties) is not key order."""
VECTORS = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
"""Three directions: a third of the rows each, every distance tied with 15 others."""
TEXTS = ["red fox", "red fox den", "grey owl"]
TIED = pa.table(
    {
        "id": TIED_KEYS,
        "body": [TEXTS[key % 3] for key in TIED_KEYS],
        "price": pa.array([decimal.Decimal(key % 7) for key in TIED_KEYS], pa.decimal128(10, 2)),
        "num": [float(key % 5) for key in TIED_KEYS],
        "embedding": pa.array([VECTORS[key % 3] for key in TIED_KEYS], pa.list_(pa.float32(), 2)),
    }
)
QUERY = [1.0, 0.2]

TRIGGERS = {
    "decimal-column": (Comparison(column="price", operator=">=", value=1), lambda row: row[2] >= 1),
    "between-of-mixed-types": (Between(column="num", low=0, high=3.5), lambda row: row[3] <= 3.5),
    "empty-in-list": (InList(column="num", values=[], negated=True), lambda row: True),
    "in-list-of-mixed-types": (
        InList(column="num", values=[0, 1.0, 2, 4.0]),
        lambda row: row[3] in (0, 1, 2, 4),
    ),
}
"""Each filter the row mask would read otherwise than the WHERE (``masks._MaskedAsSql``), and
the rows it keeps, by (key, body, price, num)."""


def _cosine_order(vectors: dict[int, np.ndarray], query: np.ndarray, kept: list[int]) -> list[int]:
    """The reference ranking: ``kept`` by cosine distance (NumPy, float64), then key."""
    distance = {
        key: 1.0
        - float(vectors[key] @ query) / float(np.linalg.norm(vectors[key]) * np.linalg.norm(query))
        for key in kept
    }
    return sorted(kept, key=lambda key: (round(distance[key], 9), key))


def _kept(trigger: str) -> list[int]:
    keep = TRIGGERS[trigger][1]
    rows = zip(
        TIED_KEYS,
        TIED.column("body").to_pylist(),
        TIED.column("price").to_pylist(),
        TIED.column("num").to_pylist(),
    )
    return [row[0] for row in rows if keep(row)]


def _nearest_reference(trigger: str, keys_offset: int = 0) -> list[int]:
    vectors = {key + keys_offset: np.array(VECTORS[key % 3]) for key in TIED_KEYS}
    return _cosine_order(vectors, np.array(QUERY), [key + keys_offset for key in _kept(trigger)])


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    embedder = HashingEmbedder(dimensions=16)
    with LocalEngine(tmp_path_factory.mktemp("tied") / "local", embedder=embedder) as engine:
        engine.load_table(
            "tied", TIED, key_column="id", text_columns=["body"], embed_columns=["body"]
        )
        engine.load_table(
            "tied_more",
            TIED.set_column(0, "id", pa.array([key + 100 for key in TIED_KEYS])),
            key_column="id",
            text_columns=["body"],
        )
        yield engine


def _nearest(exact: bool = False, table: object = "tied") -> NearestNeighborSearch:
    return NearestNeighborSearch(table=table, column="embedding", query_vector=QUERY, exact=exact)


def _whole_and_pages(engine: LocalEngine, filter: object, source: object, rows: int) -> tuple:
    whole = engine.search(SearchPlan(source=source, filter=filter, limit=rows)).keys
    pages = [
        key
        for offset in range(0, rows, 5)
        for key in engine.search(
            SearchPlan(source=source, filter=filter, limit=5, offset=offset)
        ).keys
    ]
    return whole, pages


def _runs_row_by_row(engine: LocalEngine, plan: SearchPlan) -> str:
    """The statement the engine runs for ``plan``, asserting the fast path declined it."""
    with engine._functions.stashed_vectors() as stash:
        statement = _search.rewritten(engine, compile_plan(executed_plan(plan)), stash)
    assert statement is not None and NEAREST_SCAN not in statement
    # the statement reported is the one compiled: the index's shape, the key left out
    assert "_distance ASC LIMIT" in " ".join(engine.search(plan).sql.split())
    return statement


@pytest.mark.parametrize("trigger", TRIGGERS)
@pytest.mark.parametrize("exact", [False, True], ids=["indexed-shape", "exact"])
def test_a_declined_filter_orders_tied_distances_by_key(
    tied: LocalEngine, trigger: str, exact: bool
) -> None:
    predicate = TRIGGERS[trigger][0]
    reference = _nearest_reference(trigger)
    rows = min(len(reference), 30)
    if not exact:
        _runs_row_by_row(tied, SearchPlan(source=_nearest(), filter=predicate, limit=5))
    whole, pages = _whole_and_pages(tied, predicate, _nearest(exact), rows)
    assert whole == pages == reference[:rows]


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_a_declined_filter_over_a_union_keeps_each_members_lowest_keys(
    tied: LocalEngine, trigger: str
) -> None:
    predicate = TRIGGERS[trigger][0]
    union = _nearest(table=TableUnion(["tied", "tied_more"]))
    reference = _cosine_order(
        {
            **{key: np.array(VECTORS[key % 3]) for key in TIED_KEYS},
            **{key + 100: np.array(VECTORS[key % 3]) for key in TIED_KEYS},
        },
        np.array(QUERY),
        [*_kept(trigger), *(key + 100 for key in _kept(trigger))],
    )
    whole, pages = _whole_and_pages(tied, predicate, union, 30)
    assert whole == pages == reference[:30]


@pytest.mark.parametrize("trigger", TRIGGERS)
def test_a_declined_filter_cuts_a_fusions_depth_by_key(tied: LocalEngine, trigger: str) -> None:
    """A text branch matching no row leaves the fused ranking the nearest branch's own: its
    depth cut, ties by key (rows tied on distance share a rank, so their fused scores tie and
    the final order is by key too)."""
    depth = 12
    fused = ReciprocalRankFusion(
        branches=[Bm25Search(table="tied", column="body", query_text="absent"), _nearest()],
        depth=depth,
    )
    plan = SearchPlan(source=fused, filter=TRIGGERS[trigger][0], limit=depth)
    _runs_row_by_row(tied, plan)
    assert tied.search(plan).keys == _nearest_reference(trigger)[:depth]


@pytest.mark.parametrize("trigger", [None, *TRIGGERS])
def test_the_scalar_semantic_shape_orders_tied_distances_by_key(
    tied: LocalEngine, trigger: str | None
) -> None:
    """hotdata-cli's ``vector_distance`` shape orders by the distance alone; equal texts have
    equal vectors, and their tie comes in key order, filtered or not."""
    embedder = HashingEmbedder(dimensions=16)
    query = "red fox"
    vectors = {
        key: np.array(embedder.embed_query(text))
        for key, text in zip(TIED_KEYS, TIED.column("body").to_pylist())
    }
    kept = TIED_KEYS if trigger is None else _kept(trigger)
    reference = _cosine_order(vectors, np.array(embedder.embed_query(query)), kept)
    semantic = VectorSearch(table="tied", column="body", query_text=query, scalar=True)
    predicate = None if trigger is None else TRIGGERS[trigger][0]
    whole, pages = _whole_and_pages(tied, predicate, semantic, 30)
    assert whole == pages == reference[:30]


def test_a_filter_the_mask_reads_keeps_the_fast_path_and_its_shape(tied: LocalEngine) -> None:
    """The key put back is for the row-by-row scan only: a filter the mask reads is still
    rewritten to ``nearest_scan``, and the statement reported is the index's shape."""
    plan = SearchPlan(
        source=_nearest(), filter=Comparison(column="num", operator="<=", value=3.5), limit=5
    )
    with tied._functions.stashed_vectors() as stash:
        statement = _search.rewritten(tied, compile_plan(executed_plan(plan)), stash)
    assert statement is not None and NEAREST_SCAN in statement
    assert " ".join(tied.search(plan).sql.split()).endswith("ORDER BY _distance ASC LIMIT 5")


# -- a plan keyed by another column than the table's key ----------------------------------

OTHER_KEYS = {key: (37 * key) % TIED_ROWS for key in TIED_KEYS}
"""A second unique column, ordered otherwise than ``id``."""


@pytest.fixture(scope="module")
def rekeyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    data = TIED.append_column("other", pa.array([OTHER_KEYS[key] for key in TIED_KEYS]))
    embedder = HashingEmbedder(dimensions=16)
    with LocalEngine(tmp_path_factory.mktemp("rekeyed") / "local", embedder=embedder) as engine:
        engine.load_table(
            "tied", data, key_column="id", text_columns=["body"], embed_columns=["body"]
        )
        yield engine


@pytest.mark.parametrize(
    "trigger", [None, "a-filter-the-mask-reads", *TRIGGERS], ids=lambda name: str(name)
)
@pytest.mark.parametrize("fused", [False, True], ids=["single", "fused"])
def test_ties_follow_the_plans_key_when_it_is_not_the_tables(
    rekeyed: LocalEngine, trigger: str | None, fused: bool
) -> None:
    """The native search and the fast path order ties by the table's key unless the plan
    keys its rows by another unique column: then by that column, as the statement says."""
    readable = (Comparison(column="num", operator="<=", value=3.5), lambda row: row[3] <= 3.5)
    predicate, keep = (
        (None, lambda row: True)
        if trigger is None
        else readable
        if trigger == "a-filter-the-mask-reads"
        else TRIGGERS[trigger]
    )
    rows = zip(
        TIED_KEYS,
        TIED.column("body").to_pylist(),
        TIED.column("price").to_pylist(),
        TIED.column("num").to_pylist(),
    )
    kept = [OTHER_KEYS[row[0]] for row in rows if keep(row)]
    by_other = {OTHER_KEYS[key]: np.array(VECTORS[key % 3]) for key in TIED_KEYS}
    reference = _cosine_order(by_other, np.array(QUERY), kept)
    if fused:
        source: object = ReciprocalRankFusion(
            branches=[Bm25Search(table="tied", column="body", query_text="absent"), _nearest()],
            depth=12,
        )
        plan = SearchPlan(source=source, filter=predicate, limit=12, key_column="other")
        if trigger in (None, "a-filter-the-mask-reads"):  # the statement's fast path
            with rekeyed._functions.stashed_vectors() as stash:
                statement = _search.rewritten(rekeyed, compile_plan(executed_plan(plan)), stash)
            assert statement is not None and NEAREST_SCAN in statement
        assert rekeyed.search(plan).keys == reference[:12]
        return
    whole = rekeyed.search(
        SearchPlan(source=_nearest(), filter=predicate, limit=30, key_column="other")
    ).keys
    pages = [
        key
        for offset in range(0, 30, 5)
        for key in rekeyed.search(
            SearchPlan(
                source=_nearest(), filter=predicate, limit=5, offset=offset, key_column="other"
            )
        ).keys
    ]
    assert whole == pages == reference[:30]


@pytest.mark.parametrize("trigger", [None, *TRIGGERS], ids=lambda name: str(name))
@pytest.mark.parametrize("branch", ["text", "semantic"])
def test_a_table_search_cuts_its_ties_by_the_plans_key(
    rekeyed: LocalEngine, trigger: str | None, branch: str
) -> None:
    """``bm25_search`` and ``vector_search`` cut a tie at their k by the table's key; keyed by
    another column, the plan's pages still tile the ranking by score, then that column."""
    kept = set(TIED_KEYS if trigger is None else _kept(trigger))
    if branch == "text":
        source: object = Bm25Search(table="tied", column="body", query_text="fox")
        # one term in each matching text: the shorter text scores higher (BM25's length
        # normalisation); equal texts score equally
        rank = {TEXTS[0]: 0, TEXTS[1]: 1}
        matching = [key for key in TIED_KEYS if key in kept and TEXTS[key % 3] in rank]
        reference = sorted(
            (OTHER_KEYS[key] for key in matching),
            key=lambda other: (rank[TEXTS[_BY_OTHER[other] % 3]], other),
        )
    else:
        embedder = HashingEmbedder(dimensions=16)
        source = VectorSearch(table="tied", column="body", query_text="red fox")
        vectors = {
            OTHER_KEYS[key]: np.array(embedder.embed_query(TEXTS[key % 3])) for key in TIED_KEYS
        }
        query = np.array(embedder.embed_query("red fox"))
        reference = _cosine_order(vectors, query, [OTHER_KEYS[key] for key in kept])
    predicate = None if trigger is None else TRIGGERS[trigger][0]
    pages = [
        key
        for offset in range(0, 20, 5)
        for key in rekeyed.search(
            SearchPlan(source=source, filter=predicate, limit=5, offset=offset, key_column="other")
        ).keys
    ]
    assert pages == reference[:20]


_BY_OTHER = {other: key for key, other in OTHER_KEYS.items()}
