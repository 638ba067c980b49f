"""hotmemory's recall, built by hotmemory's own code, against one plan each.

hotmemory 0.1.0 (installed from the package index by the ``test`` extra) builds its search as
SQL strings, in one of four statements: its fused recall (BM25 over its memory table and its
episode table, a nearest-neighbour ranking over both, one over its cue table, fused by
reciprocal rank fusion with row-number ranks) or its vector scan, each with its vector
rankings exact (the default) or through the vector index (``vector_index=True``), over one
record table or both: eight forms. Here each string is built by hotmemory's own functions and
run on the local engine, over tables of hotmemory's own schemas; each is compared with one
:class:`~hotdata_retrieval.SearchPlan` over the same tables, whose filter is hotmemory's own
``WHERE`` text read by :func:`~hotdata_retrieval.compile.parse_filter`. The rows must be the
same, in the same order, with the same distances.

hotmemory reads ``float(row["distance"])`` of every row: the content distance, which its
statement computes for every hit. The tables hold more rows in scope than the content
branch's depth, and words rare enough that BM25 matches fewer rows than its depth, so a fused
page holds hits the content branch did not return: the plan's ``page_scores=["content"]``
gives those their content distance, which must never be NULL and must equal a NumPy
computation from the stored vectors.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hotmemory import hotdata
from hotmemory.filter import Filter, TimeRange

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    TableUnion,
    to_sql,
)
from hotdata_retrieval.compile import parse_filter
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.results import SearchResult

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DIMENSIONS = 8
WORDS = ("disk", "full", "server", "backup", "alert", "quota", "network", "restart", "log")
VOCABULARY = (*WORDS, *(f"filler{number}" for number in range(150)))
NAMESPACES = ("team", "team/ops", "other", "teammate")


def _unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0.0, 1.0) for _ in range(DIMENSIONS)]
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


def _records(prefix: str, count: int, kind: str, rng: random.Random) -> pa.Table:
    """``count`` rows of hotmemory's record schema: mixed namespaces, some superseded or
    forgotten, distinct creation times."""
    rows = []
    for index in range(count):
        created = NOW - timedelta(hours=index * 7 + (3 if prefix == "e" else 0))
        rows.append(
            {
                "id": f"{prefix}{index:03d}",
                "namespace": NAMESPACES[index % len(NAMESPACES)],
                "key": f"k{index}",
                "revision": 1,
                "kind": kind,
                "subject": "ops" if index % 3 else "billing",
                "content": " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(3, 9))),
                "cues": [],
                "payload": "{}",
                "tags": ["a", "b"] if index % 2 else ["a"],
                "sources": [],
                "actor": "agent",
                "created_at": created,
                "observed_at": created,
                "valid_from": None,
                "valid_until": None,
                "expired_at": None,
                "superseded_by": "x" if index % 11 == 5 else None,
                "forget_after": NOW - timedelta(days=1) if index % 13 == 7 else None,
                "forget_reason": None,
                "content_embedding": _unit(rng),
            }
        )
    return pa.Table.from_pylist(rows, schema=hotdata.RECORD_SCHEMA)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> LocalEngine:
    rng = random.Random(20261202)
    memory = _records("m", 500, "fact", rng)
    episode = _records("e", 300, "episode", rng)
    ids = [*memory.column("id").to_pylist(), *episode.column("id").to_pylist()]
    cued = [identifier for position, identifier in enumerate(ids) if position % 3 != 1]
    cues = pa.Table.from_pylist(
        [{"id": identifier, "cues_embedding": _unit(rng)} for identifier in cued],
        schema=hotdata.CUE_SCHEMA,
    )
    opened = LocalEngine(tmp_path_factory.mktemp("hotmemory"))
    opened.load_table(hotdata.MEMORY_TABLE, memory, text_columns=["content"])
    opened.load_table(hotdata.EPISODE_TABLE, episode, text_columns=["content"])
    opened.load_table(hotdata.CUE_TABLE, cues)
    return opened


def _where(prefixes: list[tuple[str, ...]], filter: Filter | None) -> str:
    """hotmemory's own ``WHERE`` text for a search (``HotdataStore._listed``, whose only
    state is the clock)."""
    return hotdata.HotdataStore._listed(SimpleNamespace(_clock=lambda: NOW), prefixes, filter)


def _query_vector(seed: int) -> list[float]:
    return _unit(random.Random(seed))


def _rows_of(table: pa.Table) -> list[tuple[str, float]]:
    return [(row["id"], row["distance"]) for row in table.to_pylist()]


def _assert_same(theirs: list[tuple[str, float]], ours: SearchResult) -> None:
    """Same keys in the same order, same distances: a single branch's hit carries its
    distance, a fusion's the content branch's as that branch's raw score."""
    assert [identifier for identifier, _ in theirs] == [hit.key for hit in ours.hits]
    for (_, distance), hit in zip(theirs, ours.hits):
        content = hit.branches.get("content")
        ours_distance = hit.distance if content is None else content.raw_score
        assert ours_distance == pytest.approx(distance, abs=1e-6)


def _stored_vectors(engine: LocalEngine) -> dict[str, np.ndarray]:
    """Each record's content vector as stored (Float32), by id."""
    return {
        row["id"]: np.asarray(row["content_embedding"], dtype=np.float32)
        for table in hotdata.RECORD_TABLES
        for row in engine.read_table(table).select(["id", "content_embedding"]).to_pylist()
    }


def _cosine_distance(vector: np.ndarray, query: list[float]) -> float:
    """``1 - a·q / (‖a‖ ‖q‖)`` in float64, the query as the engine reads it (Float32)."""
    stored = vector.astype(np.float64)
    wanted = np.asarray(query, dtype=np.float32).astype(np.float64)
    return float(1.0 - stored @ wanted / (np.linalg.norm(stored) * np.linalg.norm(wanted)))


def _fused_plan(
    tables: tuple[str, ...],
    where: str,
    vector: list[float],
    query: str,
    k: int,
    *,
    exact: bool = True,
) -> SearchPlan:
    """hotmemory's fused recall as one plan: BM25 per record table (terms), the content
    vector over the records' union, the cue vector through the records' keys, all filtered
    and exact (or, with ``exact=False``, in the vector index's shape, as hotmemory's
    ``vector_index=True`` writes them), RRF with row-number ranks at hotmemory's depth, its
    tie-breakers, and the content distance returned instead of the fused score, computed for
    the hits the content branch did not return (``page_scores``)."""
    records: str | TableUnion = tables[0] if len(tables) == 1 else TableUnion(tables)
    branches = [
        Bm25Search(
            table=table,
            column="content",
            query_text=query,
            query_syntax="terms",
            allow_empty=True,
            name=f"text_{table}",
        )
        for table in tables
    ]
    branches.append(
        NearestNeighborSearch(
            table=records,
            column="content_embedding",
            query_vector=vector,
            exact=exact,
            name="content",
            result_name="distance",
        )
    )
    branches.append(
        NearestNeighborSearch(
            table=hotdata.CUE_TABLE,
            column="cues_embedding",
            query_vector=vector,
            exact=exact,
            name="cue",
            filter_through_key=True,
        )
    )
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=branches,
            rank_constant=hotdata.RRF_CONSTANT,
            depth=hotdata._depth(k),
            ranking="row_number",
        ),
        filter=parse_filter(where),
        rows_from=records,
        columns=["id", "content"],
        score_name=None,
        tie_breakers=["distance asc", "created_at desc"],
        limit=k,
        page_scores=["content"],
    )


SEARCHES = [
    ("disk full", [("team",)], None, 10),
    ("server backup alert", [("team",), ("other",)], None, 5),
    ("quota", [()], Filter(kind="fact"), 10),
    ("network restart log", [("team", "ops")], Filter(tags=("a", "b")), 10),
    (
        "disk",
        [()],
        Filter(subject="ops", created_at=TimeRange(start=NOW - timedelta(days=8))),
        20,
    ),
    ("!!", [("team",)], None, 10),
]


def _inputs(
    query: str, prefixes: list[tuple[str, ...]], filter: Filter | None, k: int
) -> tuple[str, tuple[str, ...], list[float]]:
    """A search's ``WHERE`` text and record tables, by hotmemory's own code, and a query
    vector."""
    return _where(prefixes, filter), hotdata._tables(filter), _query_vector(len(query) + k)


FORMS = [pytest.param(False, id="exact"), pytest.param(True, id="indexed")]
"""hotmemory's ``vector_index``: its vector rankings scan (the default), or take the shape the
vector index serves."""


@pytest.mark.parametrize("indexed", FORMS)
@pytest.mark.parametrize(("query", "prefixes", "filter", "k"), SEARCHES)
def test_fused_recall_is_one_plan(
    engine: LocalEngine,
    query: str,
    prefixes: list[tuple[str, ...]],
    filter: Filter | None,
    k: int,
    indexed: bool,
) -> None:
    where, tables, vector = _inputs(query, prefixes, filter, k)
    theirs = engine.sql(
        hotdata._fused_query(
            tables, where, hotdata._vector(vector), hotdata._bm25_text(query), k, indexed
        )
    )
    assert theirs.num_rows > 0
    plan = _fused_plan(tables, where, vector, query, k, exact=not indexed)
    _assert_same(_rows_of(theirs), engine.search(plan))
    # hotmemory runs the statement and reads every row's distance as a float
    rows = engine.sql(to_sql(plan)).to_pylist()
    assert [row["id"] for row in rows] == theirs.column("id").to_pylist()
    stored = _stored_vectors(engine)
    for row in rows:
        assert row["distance"] is not None
        assert float(row["distance"]) == pytest.approx(
            _cosine_distance(stored[row["id"]], vector), abs=1e-6
        )


@pytest.mark.parametrize("indexed", FORMS)
def test_the_fused_pages_hold_hits_the_content_branch_did_not_return(
    engine: LocalEngine, indexed: bool
) -> None:
    """The case ``page_scores`` exists for: such hits carry the content distance computed
    for their row, flagged as computed, with no content rank."""
    stored = _stored_vectors(engine)
    computed = 0
    for query, prefixes, filter, k in SEARCHES:
        where, tables, vector = _inputs(query, prefixes, filter, k)
        result = engine.search(_fused_plan(tables, where, vector, query, k, exact=not indexed))
        for hit in result.hits:
            content = hit.branches["content"]
            assert content.raw_score is not None
            assert content.computed == (content.rank is None)
            assert content.raw_score == pytest.approx(
                _cosine_distance(stored[hit.key], vector), abs=1e-6
            )
            computed += content.computed
    assert computed >= 3


@pytest.mark.parametrize("indexed", FORMS)
@pytest.mark.parametrize(("query", "prefixes", "filter", "k"), SEARCHES)
def test_vector_recall_is_one_plan(
    engine: LocalEngine,
    query: str,
    prefixes: list[tuple[str, ...]],
    filter: Filter | None,
    k: int,
    indexed: bool,
) -> None:
    where, tables, vector = _inputs(query, prefixes, filter, k)
    theirs = engine.sql(hotdata._vector_query(tables, where, hotdata._vector(vector), k, indexed))
    assert theirs.num_rows > 0
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table=tables[0] if len(tables) == 1 else TableUnion(tables),
            column="content_embedding",
            query_vector=vector,
            exact=not indexed,
            result_name="distance",
        ),
        filter=parse_filter(where),
        columns=["id", "content"],
        tie_breakers=["created_at desc"],
        limit=k,
    )
    _assert_same(_rows_of(theirs), engine.search(plan))


def test_a_narrow_scope_returns_its_top_k(engine: LocalEngine) -> None:
    """hotmemory's ``test_search_in_a_narrow_scope_returns_its_top_k``: the vector branches
    filter first, so every record of a narrow scope is a candidate (here ``team/ops``, a
    quarter of the rows, less those superseded or forgotten), and a page of that size
    returns every one of them."""
    kept = sum(
        1
        for table in hotdata.RECORD_TABLES
        for row in engine.read_table(table).to_pylist()
        if row["namespace"] == "team/ops"
        and row["superseded_by"] is None
        and (row["forget_after"] is None or row["forget_after"] > NOW)
    )
    records = sum(engine.read_table(table).num_rows for table in hotdata.RECORD_TABLES)
    assert 0 < kept < records // 4
    where = _where([("team", "ops")], None)
    plan = _fused_plan(hotdata.RECORD_TABLES, where, _query_vector(7), "zzz", kept)
    assert len(engine.search(plan).hits) == kept
