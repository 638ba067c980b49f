"""Sources over several tables, on every engine path: a branch over a union of tables ranks
the members' rows together; a fusion fuses branches over different tables and unions on the
shared key, reads each hit's columns from its own table, and filters a side table through
the key. Each engine is compared with an independent Python reference: distances from NumPy
over the concatenated rows, the order from :func:`~hotdata_retrieval.fusion.ordered_rows`,
fusion from the reference fusion over :func:`~hotdata_retrieval.fusion.rank_branch`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pyarrow as pa
import pytest

from hotdata_retrieval import (
    Bm25Search,
    Comparison,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TableUnion,
    UnsupportedOnDialectError,
    to_sql,
)
from hotdata_retrieval.compile.turbopuffer import turbopuffer_request
from hotdata_retrieval.fusion import ordered_rows, rank_branch, reference_fusion
from tests.parity.engines import ENGINE_PATHS, open_engine

SQL_PATHS = [name for name in ENGINE_PATHS if name not in ("lancedb", "turbopuffer")]
"""The engines that search a union of tables (LanceDB and turbopuffer query one table or
namespace per request: test_lancedb_refuses_plans_over_several_tables,
test_turbopuffer_refuses_unions)."""
WORDS = ("disk", "full", "quota", "alert", "backup", "network")
QUERY = [0.3, 0.9, 0.2]
GRADE = Comparison(column="grade", operator="=", value=1)


def _rows(prefix: str, count: int, seed: int) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    return {
        "doc": [f"{prefix}{index:02d}" for index in range(count)],
        "body": [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(count)
        ],
        "grade": [index % 3 for index in range(count)],
        "embedding": [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(count)],
    }


NORTH = _rows("n", 18, 1)
SOUTH = _rows("s", 14, 2)
RECORDS = {column: NORTH[column] + SOUTH[column] for column in NORTH}
CUED = [doc for position, doc in enumerate(RECORDS["doc"]) if position % 4 != 2]
_CUE_RANDOM = random.Random(3)
CUES = {
    "doc": CUED,
    "cue_embedding": [[_CUE_RANDOM.uniform(-1, 1) for _ in range(3)] for _ in CUED],
}


def _table(columns: dict[str, list[Any]]) -> pa.Table:
    fields = [
        (name, pa.list_(pa.float32(), 3) if name.endswith("embedding") else None)
        for name in columns
    ]
    arrays = {
        name: pa.array(values, type=kind) if kind is not None else pa.array(values)
        for (name, kind), values in zip(fields, columns.values())
    }
    return pa.table(arrays)


def _loaded(name: str, directory: Path, request: pytest.FixtureRequest) -> Any:
    opened = open_engine(name, directory, request)
    opened.load_table("north", _table(NORTH), key_column="doc", text_columns=["body"])
    opened.load_table("south", _table(SOUTH), key_column="doc", text_columns=["body"])
    opened.load_table("cues", _table(CUES), key_column="doc")
    return opened


@pytest.fixture(scope="module", params=SQL_PATHS)
def engine(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Any]]:
    name = request.param
    opened = _loaded(name, tmp_path_factory.mktemp(f"union-{name.replace(' ', '-')}"), request)
    yield name, opened
    opened.close()


def _search(name: str, engine: Any, plan: SearchPlan) -> list[dict[str, Any]]:
    """Result rows: the compiled statement itself on DataFusion for "local statement", else
    ``engine.search``'s hits (columns, then the ranking value under its engine name)."""
    if name == "local statement":
        return list(engine.sql(to_sql(plan)).to_pylist())
    result = engine.search(plan)
    return [{**hit.columns, result.ranked_by: hit.ranking_value} for hit in result.hits]


def _cosine(vectors: list[list[float]]) -> list[float]:
    query = np.asarray(QUERY, dtype=np.float64)
    matrix = np.asarray(vectors, dtype=np.float32).astype(np.float64)
    return list(1.0 - matrix @ query / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)))


def _reference_records(filtered: bool) -> list[dict[str, Any]]:
    rows = [
        {column: RECORDS[column][index] for column in RECORDS}
        for index in range(len(RECORDS["doc"]))
    ]
    for row, distance in zip(rows, _cosine(RECORDS["embedding"])):
        row["_distance"] = distance
    return [row for row in rows if not filtered or row["grade"] == 1]


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("filtered", [False, True])
def test_a_nearest_branch_over_a_union_ranks_every_members_rows(
    engine: tuple[str, Any], exact: bool, filtered: bool
) -> None:
    name, opened = engine
    expected = ordered_rows(
        _reference_records(filtered),
        ranking=[("_distance", False), ("grade", True), ("doc", False)],
    )
    for offset in (0, 4):
        plan = SearchPlan(
            source=NearestNeighborSearch(
                table=["north", "south"], column="embedding", query_vector=QUERY, exact=exact
            ),
            key_column="doc",
            columns=["doc", "grade"],
            filter=GRADE if filtered else None,
            tie_breakers=["grade desc"],
            limit=5,
            offset=offset,
        )
        rows = _search(name, opened, plan)
        page = expected[offset : offset + 5]
        assert [row["doc"] for row in rows] == [row["doc"] for row in page]
        for row, reference in zip(rows, page):
            assert row["_distance"] == pytest.approx(reference["_distance"], abs=1e-5)


def test_a_text_branch_over_a_union_ranks_the_members_together(engine: tuple[str, Any]) -> None:
    """One BM25 search per member, ranked together by score: the union's rows are the
    members' own rows, merged by score then key."""
    name, opened = engine

    def text(table: str | list[str]) -> SearchPlan:
        return SearchPlan(
            source=Bm25Search(table=table, column="body", query_text="disk quota"),
            key_column="doc",
            columns=["doc"],
            limit=12,
        )

    members = [*_search(name, opened, text("north")), *_search(name, opened, text("south"))]
    expected = ordered_rows(members, ranking=[("score", True), ("doc", False)])[:12]
    rows = _search(name, opened, text(["north", "south"]))
    assert [row["doc"] for row in rows] == [row["doc"] for row in expected]
    assert [row["score"] for row in rows] == pytest.approx([row["score"] for row in expected])


def _fused_plan(limit: int = 10) -> SearchPlan:
    return SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="north", column="body", query_text="disk", name="north_text"),
                NearestNeighborSearch(
                    table=["north", "south"],
                    column="embedding",
                    query_vector=QUERY,
                    exact=True,
                    name="records",
                ),
                NearestNeighborSearch(
                    table="cues",
                    column="cue_embedding",
                    query_vector=QUERY,
                    exact=True,
                    name="cue",
                    filter_through_key=True,
                ),
            ],
            ranking="row_number",
            depth=20,
        ),
        key_column="doc",
        columns=["doc", "body"],
        filter=GRADE,
        rows_from=["north", "south"],
        limit=limit,
    )


def test_a_fusion_over_three_tables_matches_the_reference(engine: tuple[str, Any]) -> None:
    name, opened = engine
    plan = _fused_plan()
    text = _search(
        name,
        opened,
        SearchPlan(
            source=Bm25Search(table="north", column="body", query_text="disk"),
            key_column="doc",
            columns=["doc"],
            filter=GRADE,
            limit=20,
        ),
    )
    records = _reference_records(filtered=True)
    kept = {row["doc"] for row in records}
    cue_distances = _cosine(CUES["cue_embedding"])
    cues = [(doc, distance) for doc, distance in zip(CUES["doc"], cue_distances) if doc in kept]
    branches = [
        rank_branch(
            [(row["doc"], row["score"]) for row in text],
            higher_is_better=True,
            depth=20,
            row_numbers=True,
        ),
        rank_branch(
            [(row["doc"], row["_distance"]) for row in records],
            higher_is_better=False,
            depth=20,
            row_numbers=True,
        ),
        rank_branch(cues, higher_is_better=False, depth=20, row_numbers=True),
    ]
    assert plan.fusion is not None
    expected = reference_fusion(
        plan.fusion,
        [keys for keys, _ in branches],
        ranks=[ranks for _, ranks in branches],
        limit=10,
    )
    rows = _search(name, opened, plan)
    assert [row["doc"] for row in rows] == [hit.key for hit in expected]
    assert [row["score"] for row in rows] == pytest.approx([hit.score for hit in expected])
    bodies = dict(zip(RECORDS["doc"], RECORDS["body"]))
    assert all(row["body"] == bodies[row["doc"]] for row in rows)  # read from its own table


@pytest.mark.parametrize("name", [path for path in SQL_PATHS if path != "local statement"])
def test_key_columns_of_different_kinds_are_refused(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    opened = open_engine(name, tmp_path, request)
    try:
        opened.load_table("north", _table(NORTH), key_column="doc", text_columns=["body"])
        numbered = {**SOUTH, "doc": list(range(len(SOUTH["doc"])))}
        opened.load_table("numbered", _table(numbered), key_column="doc", text_columns=["body"])
        plan = SearchPlan(
            source=NearestNeighborSearch(
                table=["north", "numbered"], column="embedding", query_vector=QUERY
            ),
            key_column="doc",
        )
        with pytest.raises(PlanError, match="column 'doc' holds integer values in table"):
            opened.search(plan)
    finally:
        opened.close()


def test_lancedb_refuses_plans_over_several_tables(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    opened = _loaded("lancedb", tmp_path, request)
    try:
        with pytest.raises(UnsupportedOnDialectError, match="several tables"):
            opened.search(_fused_plan())
        with pytest.raises(UnsupportedOnDialectError, match="several tables"):
            opened.search(
                SearchPlan(
                    source=NearestNeighborSearch(
                        table=["north", "south"], column="embedding", query_vector=QUERY
                    ),
                    key_column="doc",
                )
            )
    finally:
        opened.close()


def test_turbopuffer_refuses_unions() -> None:
    with pytest.raises(UnsupportedOnDialectError, match="several tables"):
        turbopuffer_request(_fused_plan())


def test_plans_over_several_tables_are_checked_when_built() -> None:
    with pytest.raises(PlanError, match="at least two tables"):
        TableUnion(["north"])
    with pytest.raises(PlanError, match="appears twice"):
        TableUnion(["north", "default.public.north"])
    with pytest.raises(PlanError, match="rows_from names where a fusion"):
        SearchPlan(
            source=Bm25Search(table="north", column="body", query_text="q"), rows_from="south"
        )
    with pytest.raises(PlanError, match="which it searches itself"):
        SearchPlan(
            source=ReciprocalRankFusion(
                branches=[
                    Bm25Search(table="north", column="body", query_text="q"),
                    Bm25Search(
                        table="north", column="body", query_text="q", filter_through_key=True
                    ),
                ]
            )
        )


@pytest.mark.parametrize("name", [path for path in SQL_PATHS if path != "local statement"])
@pytest.mark.parametrize("order", [("north", "texted"), ("texted", "north")])
def test_a_column_of_two_kinds_across_tables_is_refused_in_either_order(
    name: str, order: tuple[str, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A filter value is typed once for the statement, and a union stacks its columns: a
    column that is a number in one member and text in another is refused, naming both,
    whichever member comes first."""
    opened = open_engine(name, tmp_path, request)
    try:
        opened.load_table("north", _table(NORTH), key_column="doc", text_columns=["body"])
        texted = {**SOUTH, "grade": [str(grade) for grade in SOUTH["grade"]]}
        opened.load_table("texted", _table(texted), key_column="doc", text_columns=["body"])
        for plan in (
            SearchPlan(
                source=NearestNeighborSearch(
                    table=list(order), column="embedding", query_vector=QUERY
                ),
                key_column="doc",
                filter=GRADE,
            ),
            SearchPlan(
                source=Bm25Search(table=list(order), column="body", query_text="disk"),
                key_column="doc",
                columns=["doc", "grade"],
            ),
        ):
            with pytest.raises(PlanError, match=r"column 'grade' holds .* values in table .* but"):
                opened.search(plan)
    finally:
        opened.close()


def test_a_key_in_two_members_is_named_as_repeated_across_tables(tmp_path: Path) -> None:
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.errors import EngineError

    with LocalEngine(tmp_path) as opened:
        opened.load_table("north", _table(NORTH), key_column="doc", text_columns=["body"])
        opened.load_table("copy", _table(NORTH), key_column="doc", text_columns=["body"])
        plan = SearchPlan(
            source=NearestNeighborSearch(
                table=["north", "copy"], column="embedding", query_vector=QUERY
            ),
            key_column="doc",
        )
        with pytest.raises(EngineError, match="not unique across the tables the plan reads"):
            opened.search(plan)


def test_include_vectors_needs_every_nearest_branch_in_rows_from() -> None:
    with pytest.raises(PlanError, match="include_vectors reads each nearest branch's vectors"):
        attrs.evolve(_fused_plan(), include_vectors=True)


def test_a_bad_rows_from_in_a_document_names_where() -> None:
    from hotdata_retrieval.plan.document import plan_from_document, plan_to_document

    document = plan_to_document(_fused_plan())
    with pytest.raises(PlanError, match=r"^rows_from: a table union needs at least two tables"):
        plan_from_document({**document, "rows_from": ["north"]})
    with pytest.raises(PlanError, match=r"^rows_from: table 'default.public.north' appears twice"):
        plan_from_document({**document, "rows_from": ["north", "NORTH"]})
