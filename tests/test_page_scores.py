"""``page_scores``: a fusion's hits carry a nearest branch's distance where that branch did not
return them. What a plan refuses, its JSON form, the one statement on every SQL dialect (the
branch's own query untouched, the distance computed in the final join), the local engine's
native answer (NumPy) against its statement and a NumPy reference, and how results and
``hdq explain`` report it. Every engine is compared in ``tests/parity/test_page_scores.py``;
hotmemory's recall in ``tests/test_hotmemory_downstream.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import sqlglot
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from sqlglot import exp

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    TableUnion,
    VectorSearch,
    to_sql,
)
from hotdata_retrieval.cli import main
from hotdata_retrieval.compile import get_dialect
from hotdata_retrieval.compile.compiler import native_hybrid_misfit
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.results import executed_plan, search_result
from hotdata_retrieval.plan.document import PLAN_JSON_SCHEMA, plan_from_document, plan_to_document
from hotdata_retrieval.plan.search import MAX_FUSION_BRANCHES

VECTOR = [0.6, -0.8, 0.1]
TEXT = Bm25Search(table="docs", column="body", query_text="disk full")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR)
DIALECTS = ("hotdata", "sqlite", "duckdb", "postgres")


def _fused(*branches: Any, **options: Any) -> SearchPlan:
    fusion = options.pop("fusion", {})
    return SearchPlan(
        source=ReciprocalRankFusion(branches=list(branches or (TEXT, NEAREST)), **fusion),
        **options,
    )


# -- what a plan refuses --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda: SearchPlan(source=NEAREST, page_scores=["nearest"]),
            "a single branch returns every hit itself",
        ),
        (
            lambda: _fused(include_branch_scores=True, page_scores=["near"]),
            "'near', which is no branch of the plan; its branches: 'text', 'nearest'",
        ),
        (
            lambda: _fused(include_branch_scores=True, page_scores=["text"]),
            "only a nearest-neighbour branch's score can be computed",
        ),
        (
            lambda: _fused(
                TEXT,
                VectorSearch(table="docs", column="body", query_text="q"),
                include_branch_scores=True,
                page_scores=["semantic"],
            ),
            "the semantic branch 'semantic'",
        ),
        (
            lambda: _fused(page_scores=["nearest"]),
            "give the branch a result_name, or set include_branch_scores",
        ),
        (
            lambda: _fused(
                TEXT,
                NearestNeighborSearch(
                    table="cues", column="cue", query_vector=VECTOR, result_name="distance"
                ),
                rows_from="docs",
                page_scores=["nearest"],
            ),
            r"searches 'default.public.cues', outside it",
        ),
        (
            lambda: _fused(include_branch_scores=True, page_scores="nearest"),
            "page_scores must be a sequence of branch names",
        ),
        (
            lambda: _fused(include_branch_scores=True, page_scores=["nearest", "nearest"]),
            "page_scores names branch 'nearest' twice",
        ),
        (
            lambda: _fused(include_branch_scores=True, page_scores=["Nearest"]),
            "branch names matching",
        ),
        (
            lambda: _fused(
                include_branch_scores=True, page_scores=["x"] * (MAX_FUSION_BRANCHES + 1)
            ),
            f"a fusion has at most {MAX_FUSION_BRANCHES}",
        ),
    ],
)
def test_a_page_score_the_plan_cannot_compute_or_return_is_refused(make: Any, pattern: str) -> None:
    with pytest.raises(PlanError, match=pattern) as caught:
        make()
    assert caught.value.field == "page_scores"


def test_the_plan_reads_the_vectors_from_every_rows_table() -> None:
    plan = _fused(
        TEXT,
        NearestNeighborSearch(
            table=TableUnion(["docs", "archive"]), column="embedding", query_vector=VECTOR
        ),
        include_branch_scores=True,
        page_scores=["nearest"],
    )
    assert plan.page_score_columns == ("embedding",)
    for table, columns in plan.table_columns().items():
        assert "embedding" in columns, table


# -- the JSON form --------------------------------------------------------------------------


def test_a_plan_document_carries_page_scores() -> None:
    plan = _fused(
        TEXT,
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, result_name="distance"
        ),
        page_scores=["nearest"],
        score_name=None,
        tie_breakers=["distance"],
    )
    document = plan_to_document(plan)
    assert document["page_scores"] == ["nearest"]
    Draft202012Validator(PLAN_JSON_SCHEMA).validate(document)
    assert plan_from_document(json.loads(json.dumps(document))) == plan
    assert plan_to_document(_fused())["page_scores"] == []


def test_a_page_scores_entry_that_is_not_a_name_is_refused_where_it_is() -> None:
    document = plan_to_document(_fused(include_branch_scores=True))
    document["page_scores"] = [3]
    with pytest.raises(PlanError, match=r"page_scores\[0\] must be a string"):
        plan_from_document(document)
    assert not Draft202012Validator(PLAN_JSON_SCHEMA).is_valid(document)


# -- one statement, the branch's query untouched --------------------------------------------


def _ctes(sql: str, dialect: str) -> dict[str, str]:
    reader = get_dialect(dialect).sqlglot_dialect
    (tree,) = sqlglot.parse(sql, read=reader)
    assert isinstance(tree, exp.Select)
    return {cte.alias: cte.this.sql(dialect=reader) for cte in tree.find_all(exp.CTE)}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_the_distance_is_computed_in_the_final_join_of_one_statement(
    dialect: str, metric: str
) -> None:
    nearest = NearestNeighborSearch(
        table="docs", column="embedding", query_vector=VECTOR, metric=metric
    )
    plain = _fused(TEXT, nearest, include_branch_scores=True)
    scored = _fused(TEXT, nearest, include_branch_scores=True, page_scores=["nearest"])
    before, after = to_sql(plain, dialect), to_sql(scored, dialect)
    # every CTE, the nearest branch's fast-path query included, is the same statement's
    assert _ctes(after, dialect) == _ctes(before, dialect)
    final = after[after.rindex("\nSELECT") :]
    assert "COALESCE(" in final
    assert ('"base"."embedding"' if dialect != "hotdata" else "base.embedding") in final


def test_the_native_hybrid_call_leaves_page_scores_to_the_statement() -> None:
    plan = _fused(include_branch_scores=True, page_scores=["nearest"])
    assert native_hybrid_misfit(plan) == (
        "hybrid_search computes no distance for a row its vector branch did not return"
    )
    assert "hybrid_search(" not in to_sql(plan, "hotdata-native")
    assert "hybrid_search(" in to_sql(_fused(include_branch_scores=True), "hotdata-native")


# -- the local engine: natively, and by its statement ---------------------------------------

ROWS = 40
GENERATOR = np.random.default_rng(45)
VECTORS = GENERATOR.standard_normal((ROWS, 3)).astype(np.float32)
WORDS = ["disk", "full", "quota", "alert", "log"]


@pytest.fixture(scope="module")
def engine() -> Iterator[LocalEngine]:
    embeddings: list[list[float] | None] = [row.tolist() for row in VECTORS]
    embeddings[7] = None
    with LocalEngine() as local:
        local.load_table(
            "docs",
            pa.table(
                {
                    "id": list(range(ROWS)),
                    "body": [" ".join(WORDS[: 1 + key % len(WORDS)]) for key in range(ROWS)],
                    "embedding": pa.array(embeddings, pa.list_(pa.float32())),
                }
            ),
            text_columns=["body"],
        )
        yield local


def _reference(metric: str) -> np.ndarray:
    """Each row's distance in float64 from its stored Float32 vector (the query read as
    Float32, as the engine reads it)."""
    rows = VECTORS.astype(np.float64)
    query = np.asarray(VECTOR, dtype=np.float32).astype(np.float64)
    if metric == "cosine":
        return np.asarray(
            1.0 - rows @ query / (np.linalg.norm(rows, axis=1) * np.linalg.norm(query))
        )
    if metric == "l2":
        return np.asarray(((rows - query) ** 2).sum(axis=1))
    return np.asarray(-(rows @ query))


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_the_native_answer_computes_what_the_statement_computes(
    engine: LocalEngine, metric: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    nearest = NearestNeighborSearch(
        table="docs", column="embedding", query_vector=VECTOR, metric=metric
    )
    plan = _fused(
        TEXT,
        nearest,
        fusion={"depth": 12},
        limit=12,
        include_branch_scores=True,
        page_scores=["nearest"],
    )
    executed = executed_plan(plan)
    statement = to_sql(executed)
    expected = search_result(plan, executed, engine.sql(statement).to_pylist(), statement)
    ran: list[str] = []
    run = engine._sessions.run
    monkeypatch.setattr(engine._sessions, "run", lambda *a: ran.append(a[0]) or run(*a))
    result = engine.search(plan)
    assert ran == []  # answered natively
    assert result.hits == expected.hits  # the same floats, the same computed flags
    reference = _reference(metric)
    computed = [hit for hit in result if hit.branches["nearest"].computed]
    assert computed
    for hit in result:
        nearest_score = hit.branches["nearest"]
        if hit.key == 7:  # no vector: no distance, returned or not
            assert nearest_score.raw_score is None and not nearest_score.computed
            continue
        assert nearest_score.raw_score == pytest.approx(reference[hit.key], rel=1e-6, abs=1e-6)


def test_the_results_report_the_computed_distance_as_the_raw_score(engine: LocalEngine) -> None:
    plan = _fused(fusion={"depth": 5}, limit=5, include_branch_scores=True, page_scores=["nearest"])
    result = engine.search(plan)
    rows = result.to_list()
    for hit, row in zip(result, rows):
        assert row["nearest_raw_score"] == hit.branches["nearest"].raw_score
        assert row["nearest_rank"] == hit.branches["nearest"].rank
    assert any(row["nearest_rank"] is None and row["nearest_raw_score"] for row in rows)


# -- hdq explain ----------------------------------------------------------------------------


def test_explain_names_the_branches_whose_distance_it_computes(tmp_path: Any) -> None:
    plan = _fused(
        TEXT,
        NearestNeighborSearch(
            table="docs", column="embedding", query_vector=VECTOR, result_name="distance"
        ),
        page_scores=["nearest"],
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_to_document(plan)))
    result = CliRunner().invoke(main, ["explain", "--plan", str(path)])
    assert result.exit_code == 0, result.output
    assert (
        "-- page scores: branch nearest's cosine distance is computed for every hit it did "
        "not return, from embedding in the final join"
    ) in result.stderr
    as_json = CliRunner().invoke(main, ["explain", "--plan", str(path), "--format", "json"])
    assert json.loads(as_json.stdout)["plan"]["page_scores"] == ["nearest"]
