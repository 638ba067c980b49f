"""Keys and tie-breaks that fit the table, on every engine: a plan without a key column runs
on a table without ``id``; ``tie_breakers`` order the rows tied on the ranking, on every
shape and page; a fusion's ``ranking="row_number"`` numbers each branch's rows consecutively,
ties by key. Each engine is compared with an independent Python reference: distances from
NumPy, the order from :func:`~hotdata_retrieval.fusion.ordered_rows`, fusion from the
reference fusion over :func:`~hotdata_retrieval.fusion.rank_branch`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TieBreaker,
    to_sql,
)
from hotdata_retrieval.fusion import ordered_rows, rank_branch, reference_fusion
from tests.parity.engines import ENGINE_PATHS, open_engine

ROWS = 24
# Four distinct vectors: every distance is shared by six rows, so ties decide most places.
VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]
QUERY = [0.9, 0.3, 0.1]


def _columns() -> dict[str, list[Any]]:
    keys = list(range(1, ROWS + 1))
    return {
        "doc": [f"d{key:02d}" for key in keys],
        "body": [("disk full " * (1 + key % 3)).strip() for key in keys],
        "grade": [None if key % 7 == 0 else key % 3 for key in keys],
        "stamp": [(key * 5) % 11 for key in keys],
        "embedding": [VECTORS[key % len(VECTORS)] for key in keys],
    }


COLUMNS = _columns()


def _table() -> pa.Table:
    schema = pa.schema(
        [
            ("doc", pa.string()),
            ("body", pa.string()),
            ("grade", pa.int64()),
            ("stamp", pa.int64()),
            ("embedding", pa.list_(pa.float32(), 3)),
        ]
    )
    return pa.table(COLUMNS, schema=schema)


KEYED_PATHS = [name for name in ENGINE_PATHS if name != "turbopuffer"]
"""The engines that load a table without a key or keyed by any column: turbopuffer keys each
document by its ``id`` and ranks by one function per query, so tables without ``id`` and
tie-breakers are refused there (tests/test_turbopuffer_engine.py)."""


@pytest.fixture(scope="module", params=KEYED_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    opened = open_engine(name, tmp_path_factory.mktemp(f"keys-{name.replace(' ', '-')}"), request)
    # Two tables of the same rows: one without any key (and no `id` column), one keyed by doc.
    opened.load_table("keyless", _table(), key_column=None, text_columns=["body"])
    opened.load_table("keyed", _table(), key_column="doc", text_columns=["body"])
    yield name, opened
    opened.close()


def _rows(name: str, engine: Any, plan: SearchPlan) -> list[dict[str, Any]]:
    """The result rows: the compiled statement itself on DataFusion for "local statement",
    else ``engine.search``."""
    if name == "local statement":
        return list(engine.sql(to_sql(plan)).to_pylist())
    result = engine.search(plan)
    rows = []
    for hit in result.hits:
        row = dict(hit.columns)
        row[result.ranked_by] = hit.ranking_value
        rows.append(row)
    return rows


def _distances() -> dict[str, float]:
    """Cosine distance of each row's vector from the query, in float64 (the reference)."""
    query = np.asarray(QUERY)
    distances = {}
    for doc, vector in zip(COLUMNS["doc"], COLUMNS["embedding"]):
        row = np.asarray(vector)
        cosine = float(row @ query / (np.linalg.norm(row) * np.linalg.norm(query)))
        distances[doc] = 1.0 - cosine
    return distances


def _reference_nearest(tie_breakers: list[TieBreaker], key: str | None) -> list[str]:
    distances = _distances()
    rows = [
        {**{column: COLUMNS[column][index] for column in COLUMNS}, "_distance": distances[doc]}
        for index, doc in enumerate(COLUMNS["doc"])
    ]
    # Distances equal in exact arithmetic come out equal here: each row's vector is one of four.
    ranking = [("_distance", False), *((b.column, b.descending) for b in tie_breakers)]
    if key is not None:
        ranking.append((key, False))
    return [row["doc"] for row in ordered_rows(rows, ranking=ranking)]


def _nearest(table: str, **options: Any) -> SearchPlan:
    return SearchPlan(
        source=NearestNeighborSearch(table=table, column="embedding", query_vector=QUERY),
        **options,
    )


# -- a table without a key ------------------------------------------------------------------


def test_a_keyless_text_search_runs_on_a_table_without_id(engine: tuple[str, Any]) -> None:
    name, opened = engine
    plan = SearchPlan(
        source=Bm25Search(table="keyless", column="body", query_text="disk"),
        key_column=None,
        columns=["doc", "body"],
        limit=ROWS,
    )
    rows = _rows(name, opened, plan)
    assert sorted(row["doc"] for row in rows) == sorted(COLUMNS["doc"])
    scores = [row["score"] for row in rows]
    assert scores == sorted(scores, reverse=True)


def test_a_keyless_nearest_search_runs_on_a_table_without_id(engine: tuple[str, Any]) -> None:
    name, opened = engine
    plan = _nearest("keyless", key_column=None, columns=["doc", "stamp"], limit=ROWS)
    rows = _rows(name, opened, plan)
    distances = _distances()
    assert sorted(row["doc"] for row in rows) == sorted(COLUMNS["doc"])
    for row in rows:
        assert row["_distance"] == pytest.approx(distances[row["doc"]], abs=1e-6)
    got = [row["_distance"] for row in rows]
    assert got == sorted(got)


def test_a_keyless_plan_has_no_key_tie_break_and_a_fusion_needs_a_key() -> None:
    plan = SearchPlan(
        source=Bm25Search(table="keyless", column="body", query_text="disk"), key_column=None
    )
    assert plan.projection == ("body",)
    sql = to_sql(plan, pretty=False)
    assert sql.endswith("ORDER BY score DESC LIMIT 10")
    with pytest.raises(PlanError, match="a fusion joins its branches on the table's unique key"):
        SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="keyless", column="body", query_text="disk"),
                    NearestNeighborSearch(table="keyless", column="embedding", query_vector=QUERY),
                ]
            ),
            key_column=None,
        )


# -- tie-breakers on a single branch, over pages ---------------------------------------------

TIE_BREAKERS = st.lists(
    st.builds(
        TieBreaker, column=st.sampled_from(["grade", "stamp", "body"]), descending=st.booleans()
    ),
    max_size=3,
    unique_by=lambda breaker: breaker.column,
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(breakers=TIE_BREAKERS, page=st.integers(min_value=1, max_value=9), keyed=st.booleans())
def test_tie_breakers_order_every_page_of_a_nearest_search(
    engine: tuple[str, Any], breakers: list[TieBreaker], page: int, keyed: bool
) -> None:
    name, opened = engine
    table, key = ("keyed", "doc") if keyed else ("keyless", None)
    if not keyed:
        # Without a key the order of rows equal on every tie-breaker is the engine's: a unique
        # last tie-breaker makes the order total, so it can be compared with the reference.
        breakers = [*breakers, TieBreaker(column="doc")]
    expected = _reference_nearest(breakers, key)
    columns = ["doc", "grade", "stamp", "body"]
    pages = []
    for offset in range(0, ROWS, page):
        plan = _nearest(
            table,
            key_column=key,
            columns=columns,
            tie_breakers=breakers,
            limit=page,
            offset=offset,
        )
        pages.extend(row["doc"] for row in _rows(name, opened, plan))
    assert pages == expected


def test_the_reference_order_is_not_the_key_order() -> None:
    """The tie-breakers matter: they give another order than distance and key alone."""
    by_key = _reference_nearest([], "doc")
    by_stamp = _reference_nearest([TieBreaker(column="stamp", descending=True)], "doc")
    assert by_key != by_stamp
    assert sorted(by_key) == sorted(by_stamp)


def test_tie_breakers_order_a_text_search(engine: tuple[str, Any]) -> None:
    name, opened = engine
    breakers = [TieBreaker(column="grade", descending=True), TieBreaker(column="stamp")]
    plan = SearchPlan(
        source=Bm25Search(table="keyed", column="body", query_text="disk"),
        key_column="doc",
        columns=["doc", "grade", "stamp"],
        tie_breakers=breakers,
        limit=ROWS,
    )
    rows = _rows(name, opened, plan)
    ranking = [("score", True), ("grade", True), ("stamp", False), ("doc", False)]
    # The engine's own scores, ordered by the reference: its order must be that order.
    assert [row["doc"] for row in rows] == [
        row["doc"] for row in ordered_rows(rows, ranking=ranking)
    ]
    assert len({row["score"] for row in rows}) < len(rows)  # ties were there to break


# -- fusions: tie-breakers after the fused score, row-number ranking -------------------------


def _fusion(ranking: str, **options: Any) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="keyed", column="body", query_text="disk"),
                NearestNeighborSearch(table="keyed", column="embedding", query_vector=QUERY),
            ],
            depth=ROWS,
            ranking=ranking,
        ),
        key_column="doc",
        columns=["doc", "grade", "stamp"],
        limit=ROWS,
        **options,
    )


def _branch_scores(name: str, engine: Any) -> list[list[tuple[str, float]]]:
    """Each branch's (key, raw score) over every row, from the engine alone."""
    text = SearchPlan(
        source=Bm25Search(table="keyed", column="body", query_text="disk"),
        key_column="doc",
        columns=["doc"],
        limit=ROWS,
    )
    text_rows = _rows(name, engine, text)
    nearest = _distances()
    return [[(row["doc"], row["score"]) for row in text_rows], list(nearest.items())]


@pytest.mark.parametrize("ranking", ["competition", "row_number"])
def test_a_fusion_ranks_and_breaks_ties_as_the_reference(
    engine: tuple[str, Any], ranking: str
) -> None:
    name, opened = engine
    breakers = [TieBreaker(column="stamp", descending=True)]
    plan = _fusion(ranking, tie_breakers=breakers)
    rows = _rows(name, opened, plan)
    text, nearest = _branch_scores(name, opened)
    lists, ranks, scores = [], [], []
    for candidates, higher in ((text, True), (nearest, False)):
        keys, branch_ranks = rank_branch(
            candidates, higher_is_better=higher, row_numbers=ranking == "row_number"
        )
        lists.append(keys)
        ranks.append(branch_ranks)
        raw = dict(candidates)
        scores.append([raw[key] for key in keys])
    fused = reference_fusion(plan.fusion, lists, ranks=ranks, scores=scores)  # type: ignore[arg-type]
    stamps = dict(zip(COLUMNS["doc"], COLUMNS["stamp"]))
    reference = ordered_rows(
        [{"doc": hit.key, "score": hit.score, "stamp": stamps[hit.key]} for hit in fused],
        ranking=[("score", True), ("stamp", True), ("doc", False)],
    )
    assert [row["doc"] for row in rows] == [row["doc"] for row in reference]
    assert [row["score"] for row in rows] == pytest.approx([row["score"] for row in reference])


def test_row_numbers_change_the_fused_scores() -> None:
    """With ties in both branches, row numbers and competition ranks fuse differently."""
    text = [(doc, float(len(body))) for doc, body in zip(COLUMNS["doc"], COLUMNS["body"])]
    nearest = list(_distances().items())
    results = {}
    for row_numbers in (False, True):
        lists, ranks = [], []
        for candidates, higher in ((text, True), (nearest, False)):
            keys, branch_ranks = rank_branch(
                candidates, higher_is_better=higher, row_numbers=row_numbers
            )
            lists.append(keys)
            ranks.append(branch_ranks)
        fused = reference_fusion(_fusion("competition").fusion, lists, ranks=ranks)  # type: ignore[arg-type]
        results[row_numbers] = [hit.score for hit in fused]
    assert results[False] != results[True]


# -- the plan's checks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (["embedding"], "tie-break column 'embedding' is a searched vector column"),
        (["id"], "tie-break column 'id' is the key column"),
        (["_distance"], "tie-break column '_distance' is the ranking itself"),
        (["a", "a desc"], "tie-break column 'a' is named twice"),
        (["a sideways"], "a tie-breaker is a column name"),
        ("a", "tie_breakers must be a sequence"),
        ([("a", "up")], "a tie-breaker is a column name"),
        ([f"c{n}" for n in range(17)], "tie_breakers holds 17 columns; at most 16"),
    ],
)
def test_bad_tie_breakers_are_refused_naming_the_value(value: Any, pattern: str) -> None:
    with pytest.raises(PlanError, match=pattern):
        _nearest("keyed", tie_breakers=value)


def test_a_bad_ranking_is_refused() -> None:
    with pytest.raises(PlanError, match="ranking must be one of 'competition', 'row_number'"):
        _fusion("dense")


def test_tie_breakers_forfeit_the_native_path_but_keep_the_rows(tmp_path: Path) -> None:
    """The local engine answers a plain nearest search natively and one with tie-breakers by
    its statement; both give the reference's rows."""
    from hotdata_retrieval.engines.local import LocalEngine

    with LocalEngine(tmp_path / "db") as local:
        local.load_table("keyed", _table(), key_column="doc", text_columns=["body"])
        plain = local.search(_nearest("keyed", key_column="doc", limit=ROWS))
        broken = local.search(
            _nearest("keyed", key_column="doc", limit=ROWS, tie_breakers=["stamp desc"])
        )
    assert list(plain.keys) == _reference_nearest([], "doc")
    assert list(broken.keys) == _reference_nearest(
        [TieBreaker(column="stamp", descending=True)], "doc"
    )


def test_an_exact_nearest_branch_gives_the_reference_rows(engine: tuple[str, Any]) -> None:
    name, opened = engine
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="keyed", column="embedding", query_vector=QUERY, exact=True
        ),
        key_column="doc",
        columns=["doc"],
        tie_breakers=["stamp desc"],
        limit=ROWS,
    )
    rows = _rows(name, opened, plan)
    expected = _reference_nearest([TieBreaker(column="stamp", descending=True)], "doc")
    assert [row["doc"] for row in rows] == expected


@pytest.mark.parametrize("result_name", ["dist", "distance"])
def test_a_renamed_distance_keeps_rows_and_order_on_every_engine(
    engine: tuple[str, Any], result_name: str
) -> None:
    name, opened = engine
    plan = SearchPlan(
        source=NearestNeighborSearch(
            table="keyed", column="embedding", query_vector=QUERY, result_name=result_name
        ),
        key_column="doc",
        columns=["doc"],
        limit=ROWS,
    )
    expected = _reference_nearest([], "doc")
    if name == "lancedb":  # no SQL: the hits carry the distance by meaning
        assert list(opened.search(plan).keys) == expected
        return
    profile = getattr(opened, "profile", None)
    rows = opened.sql(to_sql(plan, profile) if profile is not None else to_sql(plan))
    listed = rows.to_pylist()
    assert rows.column_names == ["doc", result_name]
    assert [row["doc"] for row in listed] == expected
    distances = _distances()
    for row in listed:
        assert row[result_name] == pytest.approx(distances[row["doc"]], abs=1e-5)


def test_tie_breakers_choose_the_rows_a_table_function_cuts(engine: tuple[str, Any]) -> None:
    """Every row scores the same: the tie-breaker, not the search function's own cut at k,
    decides which rows are the top two."""
    name, opened = engine
    plan = SearchPlan(
        source=Bm25Search(table="keyed", column="body", query_text="disk"),
        key_column="doc",
        columns=["doc", "stamp"],
        tie_breakers=["stamp desc"],
        limit=3,
    )
    rows = _rows(name, opened, plan)
    full = SearchPlan(
        source=Bm25Search(table="keyed", column="body", query_text="disk"),
        key_column="doc",
        columns=["doc", "stamp"],
        limit=ROWS,
    )
    everything = _rows(name, opened, full)
    expected = ordered_rows(everything, ranking=[("score", True), ("stamp", True), ("doc", False)])[
        :3
    ]
    assert [row["doc"] for row in rows] == [row["doc"] for row in expected]


def test_returned_vectors_are_lists_of_floats_on_every_engine(engine: tuple[str, Any]) -> None:
    name, opened = engine
    if name == "local statement":  # SQL's own value: the store's form is its business
        return
    plan = SearchPlan(
        source=NearestNeighborSearch(table="keyed", column="embedding", query_vector=QUERY),
        key_column="doc",
        include_vectors=True,
        limit=5,
    )
    by_doc = dict(zip(COLUMNS["doc"], COLUMNS["embedding"]))
    for hit in opened.search(plan).hits:
        vector = hit.columns["embedding"]
        assert isinstance(vector, list) and all(isinstance(x, float) for x in vector)
        assert vector == pytest.approx(by_doc[hit.key])


def test_a_table_without_a_key_routes_to_single_branches(engine: tuple[str, Any]) -> None:
    _, opened = engine
    assert opened.indexes("keyless").key_column is None
    assert opened.indexes("keyed").key_column == "doc"
    plan = opened.plan_search("keyless", "disk", mode="text", limit=ROWS)
    assert plan.key_column is None
    assert len(opened.search(plan).hits) == ROWS
