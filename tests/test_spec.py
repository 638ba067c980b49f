"""The conformance kit of ``docs/spec/hybrid_search.md``: the cases' expectations, their JSON
form, ``verify`` on the local engine, ``hdq spec``, and the spec's own references."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from hotdata_retrieval import (
    DistributionBasedScoreFusion,
    MinMaxFusion,
    ReciprocalRankFusion,
    competition_ranks,
    distribution_based_score_fusion,
    min_max_fusion,
    reciprocal_rank_fusion,
)
from hotdata_retrieval.cli.spec import spec
from hotdata_retrieval.compile import known_dialects, to_sql
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import UnsupportedFeatureError
from hotdata_retrieval.plan.document import plan_from_document
from hotdata_retrieval.spec import (
    CASE_FORMAT,
    Case,
    CaseError,
    EngineUnavailableError,
    build_cases,
    export_cases,
    load_cases,
    open_engine,
    verify,
)
from hotdata_retrieval.spec.cases import (
    BASE,
    DIVERGENCES,
    Doc,
    expected_result,
    library_dialects,
)
from hotdata_retrieval.spec.verify import corpus_table, verify_case

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "docs" / "spec" / "hybrid_search.md"

CASES = build_cases()
BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="module")
def local_report() -> Iterator[Any]:
    with LocalEngine() as local:
        yield verify(local, CASES, engine_name="local")


# -- the cases --------------------------------------------------------------------------------


def test_cases_cover_what_the_spec_promises() -> None:
    names = set(BY_NAME)
    for topic in (
        "ties_within_branches",
        "fused_ties",
        "one_sided_hits",
        "empty_text_branch",
        "both_branches_empty",
        "weights",
        "zero_weight",
        "offset_page_2",
        "filter_inside_branches",
        "filter_before_depth",
        "k_larger_than_table",
        "min_max",
        "dbsf",
        "dbsf_one_text_row",
        "min_score",
    ):
        assert topic in names
    assert len(names) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_expected_rows_are_the_reference_fusion_of_the_branch_rankings(case: Case) -> None:
    fusion = case.plan.fusion
    assert fusion is not None
    for expected in filter(None, (case.expected, case.cte_expected)):
        branches = expected["branches"]
        assert list(branches) == list(case.plan.branch_names)
        for ranking in branches.values():
            raw = [entry.get("distance", -entry.get("term_frequency", 0)) for entry in ranking]
            assert [entry["rank"] for entry in ranking] == competition_ranks(
                raw, higher_is_better=False
            )
            assert len(ranking) <= case.plan.depth
        lists = [[entry["key"] for entry in ranking] for ranking in branches.values()]
        ranks = [[entry["rank"] for entry in ranking] for ranking in branches.values()]
        if isinstance(fusion, ReciprocalRankFusion):
            grouped = case.plan.group_by is not None
            hits = reciprocal_rank_fusion(
                lists,
                ranks=ranks,
                weights=[float(w) for w in fusion.weights],
                rank_constant=fusion.rank_constant,
                limit=None if grouped else case.plan.limit,
                offset=0 if grouped else case.plan.offset,
            )
            if grouped:  # the best two of each category, two categories
                category = {row["id"]: row["category"] for row in case.rows}
                kept: dict[Any, list[Any]] = {}
                for hit in hits:
                    value = category[hit.key]
                    if value is not None and len(kept.setdefault(value, [])) < 2:
                        kept[value].append(hit)
                hits = [hit for group in list(kept.values())[:2] for hit in group]
        else:
            assert isinstance(fusion, (MinMaxFusion, DistributionBasedScoreFusion))
            function = (
                min_max_fusion if fusion.method == "min_max" else (distribution_based_score_fusion)
            )
            hits = function(
                lists,
                [
                    [float(entry.get("term_frequency", entry.get("distance"))) for entry in ranking]
                    for ranking in branches.values()
                ],
                higher_is_better=[
                    "term_frequency" in ranking[0] if ranking else True
                    for ranking in branches.values()
                ],
                weights=fusion.branch_weights,
                ranks=ranks,
                limit=case.plan.limit,
                offset=case.plan.offset,
                min_score=fusion.min_score,
            )
        assert [row["key"] for row in expected["rows"]] == [hit.key for hit in hits]
        assert [row["score"] for row in expected["rows"]] == [hit.score for hit in hits]
        assert [tuple(row["ranks"].values()) for row in expected["rows"]] == [
            hit.ranks for hit in hits
        ]


def test_text_rankings_follow_term_frequency_and_key() -> None:
    ranking = BY_NAME["basic"].expected["branches"]["text"]
    assert [(entry["key"], entry["term_frequency"]) for entry in ranking] == [
        (3, 3),
        (1, 2),
        (7, 2),
        (4, 1),
        (6, 1),
    ]


def test_fixtures_that_would_leave_a_cut_undefined_are_refused() -> None:
    from hotdata_retrieval.spec.cases import _case, _plan

    tied = [Doc(1, 1, "a", (1, 0)), Doc(2, 1, "a", (0, 1)), Doc(3, 0, "a", (1, 1))]
    with pytest.raises(CaseError, match="a tie straddles the depth cut at 1"):
        _case("tied", "", [], tied, _plan("tied", limit=1, depth=1))
    close = [Doc(1, 0, "a", (1, 0)), Doc(2, 0, "a", (1, 1e-4))]
    with pytest.raises(CaseError, match="too close for Float32"):
        _case("close", "", [], close, _plan("close"))


def test_only_the_declared_cases_diverge_in_the_cte_form() -> None:
    declared = {case.name: case.cte_divergences for case in CASES if case.cte_divergences}
    assert declared == {}
    for case in CASES:
        if case.cte_divergences:
            assert case.cte_expected is not None
            assert case.cte_expected["rows"] != case.expected["rows"]
        else:
            assert (
                expected_result(
                    [Doc(r["id"], _tf(r["body"]), r["category"], _vec(r)) for r in case.rows],
                    case.plan,
                    cte=True,
                )["rows"]
                == case.expected["rows"]
            )


def _tf(body: str | None) -> int | None:
    return None if body is None else body.split().count("zebra")


def _vec(row: Mapping[str, Any]) -> tuple[float, ...] | None:
    vector = row["embedding"]
    return None if vector is None else tuple(vector)


# -- JSON ------------------------------------------------------------------------------------


def test_export_writes_one_json_file_per_case_and_an_index(tmp_path: Path) -> None:
    written = export_cases(tmp_path / "cases")
    assert [path.name for path in written] == [f"{case.name}.json" for case in CASES]
    index = json.loads((tmp_path / "cases" / "index.json").read_text())
    assert index["format"] == CASE_FORMAT
    assert index["cases"] == [path.name for path in written]
    document = json.loads(written[0].read_text())
    assert set(document) == {
        "format",
        "name",
        "description",
        "rules",
        "corpus",
        "plan",
        "sql",
        "expected",
        "cte_form",
    }
    assert document["corpus"]["rows"][0]["embedding"] == [3.0, 2.0]
    assert document["cte_form"] == {"agrees": True}
    filtered = json.loads((tmp_path / "cases" / "filter_before_depth.json").read_text())
    assert filtered["cte_form"] == {"agrees": True}  # D1 closed for bm25_search
    assert "filter_after_k" in DIVERGENCES  # still named, for a filtered vector_search


def test_each_case_carries_its_statement_on_every_dialect(tmp_path: Path) -> None:
    """The golden SQL a port that cannot import the library compares bytes with: each
    dialect's statement of the case's plan as read back from the file, or the refusal."""
    written = export_cases(tmp_path)
    for path in written:
        document = json.loads(path.read_text())
        plan = plan_from_document(document["plan"])
        assert set(document["sql"]) == set(library_dialects())
        for dialect, statement in document["sql"].items():
            try:
                expected: Any = to_sql(plan, dialect)
            except UnsupportedFeatureError as error:
                expected = {"refused": str(error)}
            assert statement == expected, (path.name, dialect)
    assert (
        set(library_dialects())
        == {
            name
            for name in known_dialects()
            if name != "toy"  # a test's own dialect, elsewhere
        }
        or "toy" not in known_dialects()
    )
    refused = [
        statement
        for path in written
        for statement in json.loads(path.read_text())["sql"].values()
        if isinstance(statement, dict)
    ]
    assert refused  # the native call declines some cases (a tie-breaker, a third branch)


def test_cases_round_trip_through_json(tmp_path: Path) -> None:
    export_cases(tmp_path)
    loaded = load_cases(tmp_path)
    assert [case.to_document() for case in loaded] == [
        json.loads(json.dumps(case.to_document())) for case in CASES
    ]
    assert loaded[0].plan == CASES[0].plan


def test_unreadable_cases_are_a_case_error(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="cannot read the cases"):
        load_cases(tmp_path)
    with pytest.raises(CaseError, match="not a hdq-hybrid-search-case/1 case document"):
        Case.from_document({"format": "other"})


# -- verify ----------------------------------------------------------------------------------


def test_verify_passes_every_case_on_the_local_engine(local_report: Any) -> None:
    assert local_report.passed, local_report.text()
    assert local_report.native_function == "hybrid_search"
    for case in local_report.cases:
        assert case.cte.status == "pass"
        assert case.native.status == "pass"
        if BY_NAME[case.name].cte_divergences:
            assert case.form_differences and case.declared
        else:
            assert case.forms_agree, case.name


def test_the_report_names_every_difference(local_report: Any) -> None:
    text = local_report.text()
    assert text.splitlines()[-1] == (
        f"{len(CASES)} cases: {len(CASES)} passed, 0 failed; "
        f"forms agree row for row on {len(CASES)}, differ as declared on 0"
    )
    assert "declared:" not in text
    document = local_report.to_dict()
    assert json.loads(json.dumps(document)) == document


def test_verify_reports_a_wrong_expectation() -> None:
    case = BY_NAME["basic"]
    rows = [dict(row) for row in case.expected["rows"]]
    rows[0] = {**rows[0], "score": rows[0]["score"] + 1e-9}
    rows[1] = {**rows[1], "key": 99}
    tampered = attrs.evolve(case, expected={**case.expected, "rows": rows})
    with LocalEngine() as local:
        report = verify_case(local, tampered)
    assert not report.passed
    assert report.cte.status == report.native.status == "fail"
    assert any("row 1 (key 4): score" in line for line in report.native.differences)
    assert "row 2: key 1, expected 99" in report.cte.differences
    assert report.form_differences == ()  # both forms are wrong the same way


class CteOnly:
    """An engine without a native hybrid_search, delegating to a local engine."""

    def __init__(self, local: LocalEngine) -> None:
        self.local = local

    def load_table(self, *args: Any, **kwargs: Any) -> Any:
        return self.local.load_table(*args, **kwargs)

    def sql(self, text: str) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.local.sql(text).to_pylist()
        return rows


def test_an_engine_without_the_function_runs_the_cte_form_only() -> None:
    with LocalEngine() as local:
        report = verify(CteOnly(local), [BY_NAME["basic"], BY_NAME["null_vectors"]])
    assert report.passed
    assert report.native_function is None
    assert [case.native.status for case in report.cases] == ["not available"] * 2
    assert "native: not available (the engine declares no native_hybrid_search)" in report.text()


class Broken(CteOnly):
    native_hybrid_search = "hybrid_search"

    def sql(self, text: str) -> list[dict[str, Any]]:
        if "hybrid_search(" in text:
            raise RuntimeError("boom")
        return super().sql(text)


def test_an_engine_failure_is_reported_not_raised() -> None:
    with LocalEngine() as local:
        report = verify(Broken(local), [BY_NAME["basic"]])
    (case,) = report.cases
    assert not case.passed
    assert case.native.differences == ("the engine failed: boom",)
    assert case.form_differences == ()


def test_a_fixture_that_cannot_be_loaded_fails_its_case() -> None:
    class NoLoad(CteOnly):
        def load_table(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("read-only")

    with LocalEngine() as local:
        report = verify(NoLoad(local), [BY_NAME["basic"]])
    assert report.cases[0].error == "cannot load the fixture table spec_basic: read-only"
    assert not report.passed


def test_engines_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    local = open_engine("local")
    assert isinstance(local, LocalEngine)
    local.close()
    factory = open_engine("hotdata_retrieval.engines.local:LocalEngine")
    assert isinstance(factory, LocalEngine)
    factory.close()
    monkeypatch.delenv("HOTDATA_DATABASE", raising=False)
    with pytest.raises(EngineUnavailableError, match="engine 'hotdata' is not available"):
        open_engine("hotdata")
    with pytest.raises(EngineUnavailableError, match="engine 'duckdb' needs a database"):
        open_engine("duckdb")
    with pytest.raises(EngineUnavailableError, match="unknown engine 'nope'; use local, sqlite"):
        open_engine("nope")
    with pytest.raises(EngineUnavailableError, match="engine 'nope:x' is not available"):
        open_engine("nope:x")


# -- hdq spec ----------------------------------------------------------------------------------


def test_hdq_spec_export_then_verify(tmp_path: Path) -> None:
    runner = CliRunner()
    exported = runner.invoke(spec, ["export", str(tmp_path / "kit")])
    assert exported.exit_code == 0, exported.stderr
    assert exported.stdout.splitlines()[0].endswith("basic.json")
    assert f"wrote {len(CASES)} cases" in exported.stderr
    verified = runner.invoke(
        spec, ["verify", "--engine", "local", "--cases", str(tmp_path / "kit")]
    )
    assert verified.exit_code == 0, verified.stdout
    assert f"{len(CASES)} passed, 0 failed" in verified.stdout


def test_hdq_spec_verify_json_and_case_selection() -> None:
    result = CliRunner().invoke(
        spec, ["verify", "--case", "basic", "--case", "filter_before_depth", "--format", "json"]
    )
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert [case["name"] for case in report["cases"]] == ["basic", "filter_before_depth"]
    assert report["cases"][1].get("declared_divergences", []) == []


def test_hdq_spec_verify_failures_and_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    unknown = runner.invoke(spec, ["verify", "--case", "nope"])
    assert unknown.exit_code == 2
    assert "unknown case 'nope'" in unknown.stderr
    monkeypatch.delenv("HOTDATA_DATABASE", raising=False)
    hotdata = runner.invoke(spec, ["verify", "--engine", "hotdata"])
    assert hotdata.exit_code == 1
    assert hotdata.stderr.startswith("hdq spec verify: error: engine 'hotdata' is not available")
    broken = runner.invoke(spec, ["verify", "--engine", "tests.test_spec:_broken_engine"])
    assert broken.exit_code == 1
    assert "FAIL  basic" in broken.stdout


def _broken_engine() -> Broken:
    return Broken(LocalEngine())


# -- verify on every store --------------------------------------------------------------------


STORES = ["sqlite", "duckdb", "postgres", "lancedb"]

NOT_APPLICABLE_ON = {"sqlite": {"metric_dot": "unsupported on sqlite: the dot distance"}}
"""Cases a store's dialect cannot express, and the reason its report gives."""


@pytest.mark.parametrize("store", STORES)
def test_hdq_spec_verify_passes_on_each_store(store: str, request: pytest.FixtureRequest) -> None:
    database = (
        ["--database", request.getfixturevalue("postgres_url")] if store == "postgres" else []
    )
    result = CliRunner().invoke(spec, ["verify", "--engine", store, *database, "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["passed"] is True
    assert report["dialect"] == (None if store == "lancedb" else store)
    assert [case["name"] for case in report["cases"]] == [case.name for case in CASES]
    refused = NOT_APPLICABLE_ON.get(store, {})
    for case in report["cases"]:
        form = case["cte"]
        assert form["form"] == ("search" if store == "lancedb" else "cte")
        if case["name"] in refused:
            assert case["status"] == form["status"] == "not applicable"
            assert form["note"].startswith(refused[case["name"]])
        else:
            assert case["status"] == "pass", (case["name"], form["differences"])
            assert form["rows"] == len(BY_NAME[case["name"]].expected["rows"])
        assert case["native"]["status"] == "not available"


def test_the_text_report_names_a_case_the_store_cannot_express() -> None:
    result = CliRunner().invoke(
        spec, ["verify", "--engine", "sqlite", "--case", "basic", "--case", "metric_dot"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "hybrid_search conformance: engine sqlite, dialect sqlite, native function none "
        "(only the CTE form runs)"
    )
    assert lines[1].startswith("PASS  basic ")
    assert lines[2].startswith(
        "N/A   metric_dot  cte: not applicable (unsupported on sqlite: the dot distance"
    )
    assert lines[-1].startswith("2 cases: 1 passed, 0 failed, 1 not applicable on this engine;")


def test_lancedb_runs_each_plan_through_its_search() -> None:
    result = CliRunner().invoke(spec, ["verify", "--engine", "lancedb", "--case", "basic"])
    assert result.exit_code == 0, result.output
    assert "no SQL (each plan runs through search)" in result.stdout
    assert "search: 5 rows ok" in result.stdout


def test_a_store_on_a_server_needs_a_database() -> None:
    result = CliRunner().invoke(spec, ["verify", "--engine", "postgres"])
    assert result.exit_code == 2
    assert "--engine postgres needs --database (a postgresql:// URL)" in result.stderr


def test_a_store_opened_by_factory_compiles_for_its_own_dialect() -> None:
    result = CliRunner().invoke(
        spec,
        [
            "verify",
            "--engine",
            "hotdata_retrieval.engines.duckdb:DuckdbEngine",
            "--case",
            "basic",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["dialect"] == "duckdb"
    assert report["cases"][0]["status"] == "pass"


def test_the_dialect_comes_from_the_engine_registry(tmp_path: Path) -> None:
    from hotdata_retrieval.engines.duckdb import DuckdbEngine
    from hotdata_retrieval.engines.lancedb import LancedbEngine
    from hotdata_retrieval.engines.registry import engine_kind
    from hotdata_retrieval.engines.sqlite import SqliteEngine
    from hotdata_retrieval.spec import engine_dialect

    with LocalEngine() as local:
        assert engine_dialect(local) == engine_kind("local").dialect == "hotdata"
        assert engine_dialect(CteOnly(local)) == "hotdata"  # no registered kind
    with SqliteEngine() as sqlite, DuckdbEngine(tmp_path / "d.duckdb") as duckdb:
        assert engine_dialect(sqlite) == "sqlite"
        assert engine_dialect(duckdb) == "duckdb"
    lance = LancedbEngine(tmp_path / "lance")
    assert engine_dialect(lance) is None
    lance.close()


def test_a_temporary_store_is_removed_afterwards() -> None:
    from hotdata_retrieval.spec import opened_engine

    with opened_engine("sqlite") as engine:
        location = Path(engine.database)
        assert location.parent.name.startswith("hdq-spec-")
        verify(engine, [BY_NAME["basic"]])
        assert location.exists()
    assert not location.parent.exists()


class Rounding(CteOnly):
    """A local engine whose statement's distances come back off by ``error``, and its fused
    scores by ``score_error`` (relative)."""

    def __init__(self, local: LocalEngine, error: float, score_error: float) -> None:
        super().__init__(local)
        self.error = error
        self.score_error = score_error

    def sql(self, text: str) -> list[dict[str, Any]]:
        rows = super().sql(text)
        for row in rows:
            if row.get("nearest_distance") is not None:
                row["nearest_distance"] += self.error
            row["score"] *= 1 + self.score_error
        return rows


@pytest.mark.parametrize(
    ("case", "error", "score_error", "passes"),
    [
        ("min_max", 3e-8, 1e-8, True),  # rounded distances: scores held to 1e-6
        ("min_max", 0.0, 1e-8, False),  # exact distances: scores held to 1e-12
        ("min_max", 3e-8, 5e-6, False),  # beyond even the distance tolerance
        ("basic", 3e-8, 1e-8, False),  # reciprocal rank scores never depend on distances
        ("basic", 5e-8, 0.0, True),  # a Float32 cosine's absolute error at 0.03
        ("basic", 2e-6, 0.0, False),
    ],
)
def test_fused_scores_follow_the_engines_distances_only_where_they_depend_on_them(
    case: str, error: float, score_error: float, passes: bool
) -> None:
    with LocalEngine() as local:
        report = verify_case(Rounding(local, error, score_error), BY_NAME[case])
    assert report.passed is passes, report.cte.differences
    if passes and score_error:
        assert report.cte.note is not None
        assert report.cte.note.startswith("scores within 1e-06, the engine's distances being")


def test_the_search_form_agrees_with_the_statement_on_the_local_engine() -> None:
    with LocalEngine() as local:
        report = verify(local, [BY_NAME["basic"], BY_NAME["dbsf"]], dialect=None)
    assert report.passed, report.text()
    assert [case.cte.form for case in report.cases] == ["search", "search"]


# -- the spec document -------------------------------------------------------------------------

REFERENCE = re.compile(r"`(tests/test_[a-z_]+\.py)::(test_[a-z0-9_]+)`")


def test_every_rule_of_the_spec_points_to_tests_that_exist() -> None:
    text = SPEC.read_text(encoding="utf-8")
    sections = re.split(r"^#### ", text, flags=re.MULTILINE)[1:]
    rules = {section.split(" ", 1)[0].rstrip("."): section for section in sections}
    expected = {f"R{n}" for n in range(1, 22)} | {f"D{n}" for n in range(1, 6)}
    assert expected <= set(rules)
    for rule, body in rules.items():
        references = REFERENCE.findall(body)
        assert references, f"{rule} cites no test"
        for path, name in references:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^def {name}\(", source, flags=re.MULTILINE), f"{path}::{name}"


def test_the_spec_lists_every_case_and_the_cases_cite_its_rules() -> None:
    text = SPEC.read_text(encoding="utf-8")
    headings = set(re.findall(r"^#### ([RD]\d+)\.", text, flags=re.MULTILINE))
    for case in CASES:
        assert f"`{case.name}`" in text, case.name
        assert set(case.rules) <= headings, case.name


def test_a_grouped_case_keeps_each_groups_best_rows() -> None:
    """The grouped case's expected rows are its ungrouped ranking on the local engine, the
    best two rows of each category kept in Python, two categories."""
    (case,) = [case for case in CASES if case.plan.group_by is not None]
    with LocalEngine() as engine:
        engine.load_table(case.table, corpus_table(case), text_columns=["body"])
        ranked = engine.search(
            attrs.evolve(case.plan, group_by=None, group_size=1, limit=case.plan.depth)
        )
    kept: dict[Any, list[Any]] = {}
    for hit in ranked:
        category = hit.columns["category"]
        if category is not None and len(kept.setdefault(category, [])) < 2:
            kept[category].append(hit.key)
    wanted = [key for keys in list(kept.values())[: case.plan.limit] for key in keys]
    assert [row["key"] for row in case.expected["rows"]] == wanted
    assert len(wanted) == 3 and any(hit.columns["category"] is None for hit in ranked)


def test_base_fixture_is_the_one_the_spec_describes() -> None:
    assert [(doc.key, doc.tf, doc.category, doc.vector) for doc in BASE][:2] == [
        (1, 2, "a", (3.0, 2.0)),
        (2, 0, "b", (4.0, 1.0)),
    ]
