"""Score formulas: what a formula refuses, its JSON form, the decay functions' defining
points, and the statement each dialect writes. Every engine runs formulas against a Python
reference in ``tests/parity/test_score_formulas.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval import (
    Bm25Search,
    NearestNeighborSearch,
    PlanError,
    ReciprocalRankFusion,
    SearchPlan,
    to_sql,
)
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.compile.compiler import native_hybrid_misfit
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.document import plan_from_document, plan_to_document
from hotdata_retrieval.plan.formula import (
    ColumnValue,
    Decay,
    FormulaTerm,
    FusedScore,
    ScoreFormula,
    formula_from_document,
    formula_score,
    formula_terms,
    formula_to_document,
)
from hotdata_retrieval.plan.search import MinMaxFusion
from hotdata_retrieval.routing import SearchRequest

TEXT = Bm25Search(table="docs", column="body", query_text="disk full")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.6, -0.8])
DIALECTS = ("hotdata", "sqlite", "duckdb", "postgres")
FORMULA = ScoreFormula(
    terms=[
        FormulaTerm(
            factors=[FusedScore(), Decay(function="gauss", column="age", origin=0, scale=7)]
        ),
        FormulaTerm(weight=0.1, factors=[ColumnValue(column="rating", missing=2.5)]),
    ]
)


@pytest.mark.parametrize(
    ("function", "scale"),
    [
        ("exp", 1e-320),
        ("linear", 1e-320),
        ("gauss", 1e-320),
        ("exp", 5e-324),
        ("gauss", 1e-170),  # finite reciprocal, but its square underflows to 0
    ],
)
def test_a_decay_refuses_a_scale_whose_rate_is_not_finite(function: str, scale: float) -> None:
    """A scale so small that the rate the statement multiplies each distance by is not a
    finite number is refused, naming the scale, before any SQL holds ``infinity``."""
    with pytest.raises(PlanError, match=f"scale {scale!r} is too small") as caught:
        Decay(function=function, column="x", origin=0, scale=scale)
    assert caught.value.field == "formula"
    assert caught.value.value == scale


def test_a_decay_with_a_tiny_finite_rate_compiles_to_finite_sql() -> None:
    """A small scale whose rate is finite is accepted and writes numbers, never
    ``infinity``, into every dialect."""
    for function in ("exp", "gauss", "linear"):
        decay = Decay(function=function, column="age", origin=0, scale=1e-150)
        assert math.isfinite(decay.rate)
        formula = ScoreFormula(terms=[FormulaTerm(factors=[FusedScore(), decay])])
        plan = SearchPlan(
            source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), formula=formula, limit=3
        )
        for dialect in DIALECTS:
            assert "inf" not in to_sql(plan, dialect=dialect).lower()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Decay(function="cubic", column="x", origin=0, scale=1), "one of 'exp'"),
        (lambda: Decay(function="exp", column="x", origin=0, scale=0), "scale must be > 0"),
        (lambda: Decay(function="exp", column="x", origin=0, scale=1, decay=1), "strictly"),
        (lambda: Decay(function="exp", column="x", origin=0, scale=1, offset=-1), "offset"),
        (lambda: Decay(function="exp", column="x", origin=math.inf, scale=1), "finite"),
        (lambda: FormulaTerm(factors=[]), "1 to 8 factors"),
        (lambda: FormulaTerm(factors=["score"]), "a formula factor is"),
        (lambda: ScoreFormula(terms=[]), "1 to 16 terms"),
        (lambda: formula_from_document([{"factors": [{"cubic": {}}]}]), "one of 'exp'"),
        (lambda: formula_from_document([{"factors": [{"exp": {"column": "x"}}]}]), "needs"),
        (lambda: formula_from_document({"terms": []}), "an array of terms"),
    ],
)
def test_a_formula_refuses_what_it_cannot_compute(make: object, message: str) -> None:
    with pytest.raises(PlanError, match=message) as caught:
        make()  # type: ignore[operator]
    assert caught.value.field == "formula"


@pytest.mark.parametrize("function", ["exp", "gauss", "linear"])
def test_each_decay_keeps_its_defining_points(function: str) -> None:
    """1 within ``offset`` of the origin, exactly ``decay`` at ``offset + scale`` (both
    sides), less beyond (Elasticsearch's definition of ``scale`` and ``decay``)."""
    decay = Decay(function=function, column="x", origin=10, scale=4, offset=1, decay=0.3)
    assert decay.value(10.5) == 1.0 and decay.value(9) == 1.0
    assert decay.value(15) == pytest.approx(0.3, rel=1e-12)
    assert decay.value(5) == pytest.approx(0.3, rel=1e-12)
    assert decay.value(17) < 0.3
    assert decay.value(None) == 0.0


def test_the_json_form_round_trips() -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), formula=FORMULA)
    document = plan_to_document(plan)
    assert document["formula"] == [
        {
            "weight": 1.0,
            "factors": [
                "score",
                {"gauss": {"column": "age", "origin": 0.0, "scale": 7.0, "offset": 0.0,
                           "decay": 0.5, "missing": 0.0}},
            ],
        },
        {"weight": 0.1, "factors": [{"column": "rating", "missing": 2.5}]},
    ]  # fmt: skip
    assert plan_from_document(document) == plan
    assert formula_from_document(formula_to_document(FORMULA)) == FORMULA


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_orders_by_the_formula_in_one_statement(dialect: str) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], min_score=0.01), formula=FORMULA
    )
    sql = to_sql(plan, dialect, pretty=False).replace('"', "")
    assert "rescored AS (SELECT fused.*" in sql
    assert "EXP(" in sql.upper()
    assert "WHERE fused.formula_score >= 0.01" in sql
    assert "ORDER BY fused.formula_score DESC" in sql
    assert "fused.score AS fused_score" in sql
    assert "FROM rescored AS fused JOIN" in sql


def test_hybrid_search_has_no_formula() -> None:
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[TEXT, NEAREST]), formula=FORMULA)
    assert (
        native_hybrid_misfit(plan) == "hybrid_search orders by its fused score, not a score formula"
    )
    assert "hybrid_search(" not in to_sql(plan, "hotdata-native")


@settings(max_examples=200, deadline=None)
@given(
    fused=st.floats(min_value=0, max_value=1),
    age=st.one_of(st.none(), st.floats(min_value=-1e3, max_value=1e3)),
    rating=st.one_of(st.none(), st.integers(min_value=0, max_value=5)),
)
def test_the_terms_add_up_to_the_final_score(
    fused: float, age: float | None, rating: int | None
) -> None:
    terms = formula_terms(FORMULA, fused, {"age": age, "rating": rating})
    decay = 0.0 if age is None else math.exp(math.log(0.5) * (age / 7) ** 2)
    assert terms[0] == pytest.approx(fused * decay, rel=1e-12, abs=1e-300)
    assert terms[1] == pytest.approx(0.1 * (2.5 if rating is None else rating))
    assert formula_score(terms) == terms[0] + terms[1]


# -- the request, the chain and hdq search -----------------------------------------------------

BODIES = [
    ("the desktop app crashes on start with error E4012", 3),
    ("sign in fails after the upgrade", 40),
    ("files stop syncing between devices", 1),
    ("the app crashes when opening settings", 90),
    ("sync stopped after the upgrade", 2),
    ("app crashes after the upgrade", None),
]
RECENT = [{"factors": ["score", {"exp": {"column": "age", "origin": 0, "scale": 10}}]}]


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("formulas")
    source = directory / "tickets.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"t{number}", "body": body, "age": age}) + "\n"
            for number, (body, age) in enumerate(BODIES, start=1)
        ),
        encoding="utf-8",
    )
    path = directory / "db"
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", str(path), "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def _recent_reference(result: Any) -> list[Any]:
    """The plain page's fused scores times ``0.5 ** (age / 10)`` (0 without an age), best
    first, ties by key."""
    ages = {f"t{number}": age for number, (_, age) in enumerate(BODIES, start=1)}
    scored = [
        (hit.score * (0.0 if ages[hit.key] is None else 0.5 ** (ages[hit.key] / 10)), hit.key)
        for hit in result
    ]
    return [key for _, key in sorted(scored, key=lambda item: (-item[0], item[1]))]


def test_the_request_the_chain_and_hdq_search_take_a_formula(database: Path) -> None:
    with LocalEngine(database) as engine:
        engine.embedder = HashingEmbedder()
        table = engine.table("tickets")
        plain = table.search("app crashes upgrade", mode="hybrid").limit(6).run()
        chained = table.search("app crashes upgrade", mode="hybrid", formula=RECENT).limit(6).run()
        request = SearchRequest(
            table="tickets", query="app crashes upgrade", mode="hybrid", limit=6,
            formula=RECENT,
        )  # fmt: skip
        routed = engine.search(engine.plan_search(request))
        with pytest.raises(PlanError, match="formula rescores a fusion's rows"):
            table.search("crashes", mode="text", formula=RECENT)
    assert len(plain) == 6  # every candidate: the reference rescores them all
    assert chained.keys == _recent_reference(plain)
    assert routed == chained
    result = CliRunner().invoke(
        main,
        ["search", "app crashes upgrade", "--table", "tickets", "--database", str(database),
         "--mode", "hybrid", "-k", "6", "--formula", json.dumps(RECENT), "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document = json.loads(result.stdout)
    assert [hit["key"] for hit in document["hits"]] == chained.keys
    for hit in document["hits"]:
        assert math.isclose(sum(hit["terms"]), hit["score"], rel_tol=0.0, abs_tol=1e-9)
    bad = CliRunner().invoke(
        main,
        ["search", "app", "--table", "tickets", "--database", str(database), "--mode",
         "hybrid", "--formula", "[{"],
    )  # fmt: skip
    assert bad.exit_code == EXIT_INVALID_PLAN
    assert "--formula must be JSON" in bad.stderr


def test_hdq_explain_notes_the_formula_and_the_explained_scores(tmp_path: Path) -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(branches=[TEXT, NEAREST], min_score=0.01),
        formula=FORMULA,
        explain_scores=True,
    )
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan_to_document(plan)), encoding="utf-8")
    result = CliRunner().invoke(main, ["explain", "--plan", str(path)])
    assert result.exit_code == EXIT_OK, result.stderr
    assert (
        "-- score formula: 1.0 * score * gauss_decay(age, origin 0.0, scale 7.0, offset 0.0, "
        "decay 0.5) + 0.1 * rating"
    ) in result.output
    assert "-- the formula's score orders the rows, min_score and the page" in result.output
    assert "-- explained scores: each branch's rank and raw score are returned" in result.output
    document = plan_to_document(attrs.evolve(plan, source=MinMaxFusion(branches=[TEXT, NEAREST])))
    path.write_text(json.dumps(document), encoding="utf-8")
    normalized = CliRunner().invoke(main, ["explain", "--plan", str(path)])
    assert "rank, raw score and normalization bounds are returned" in normalized.output
