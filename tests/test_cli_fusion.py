"""The fusion options ``hdq explain`` and ``hdq search`` share: ``--fusion``, ``--alpha``,
``--min-score`` and ``--fusion-file`` beside ``--weights``, ``--rank-constant`` and
``--depth``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval import (
    Bm25Search,
    DistributionBasedScoreFusion,
    MinMaxFusion,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    plan_to_document,
    to_sql,
)
from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.plan.search import make_fusion

HYBRID = [
    "explain",
    "--table",
    "docs",
    "--query",
    "app crash",
    "--vector",
    "[1, 0]",
    "--text-column",
    "body",
    "--vector-column",
    "embedding",
    "-q",
]
TEXT = Bm25Search(table="docs", column="body", query_text="app crash")
NEAREST = NearestNeighborSearch(table="docs", column="embedding", query_vector=[1.0, 0.0])


def run(*arguments: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(arguments), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("flags", "fusion"),
    [
        ([], ReciprocalRankFusion(branches=[TEXT, NEAREST])),
        (
            ["--fusion", "rrf", "--min-score", "0.02"],
            ReciprocalRankFusion(branches=[TEXT, NEAREST], min_score=0.02),
        ),
        (
            ["--fusion", "min-max", "--alpha", "0.7"],
            MinMaxFusion(branches=[TEXT, NEAREST], alpha=0.7),
        ),
        (
            ["--fusion", "min_max", "--weights", "2,1", "--depth", "40"],
            MinMaxFusion(branches=[TEXT, NEAREST], weights=[2, 1], depth=40),
        ),
        (
            ["--fusion", "DBSF", "--min-score", "1.5"],
            DistributionBasedScoreFusion(branches=[TEXT, NEAREST], min_score=1.5),
        ),
    ],
)
def test_explain_builds_the_fusion_the_flags_name(flags: list[str], fusion: object) -> None:
    code, out, err = run(*HYBRID, *flags)
    assert code == EXIT_OK, err
    assert out.rstrip("\n") == to_sql(SearchPlan(source=fusion), pretty=True)  # type: ignore[arg-type]


def test_a_fusion_file_is_a_plan_fragment(tmp_path: Path) -> None:
    path = tmp_path / "fusion.json"
    path.write_text(
        json.dumps(
            {
                "fusion": {"method": "dbsf", "weights": [1, 3], "min_score": 0.5},
                "tuning": {"chosen_by": "ndcg_cut_10"},
            }
        )
    )
    code, out, err = run(*HYBRID, "--fusion-file", str(path), "--format", "json")
    assert code == EXIT_OK, err
    expected = SearchPlan(
        source=DistributionBasedScoreFusion(branches=[TEXT, NEAREST], weights=[1, 3], min_score=0.5)
    )
    assert json.loads(out)["plan"] == plan_to_document(expected)


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (
            ["--fusion", "dbsf", "--rank-constant", "5"],
            EXIT_INVALID_PLAN,
            "--rank-constant does not apply to the 'dbsf' fusion",
        ),
        (["--fusion", "rrf", "--alpha", "0.5"], EXIT_INVALID_PLAN, "--alpha does not apply"),
        (
            ["--fusion", "min-max", "--alpha", "2"],
            EXIT_INVALID_PLAN,
            "--alpha must be between 0 and 1, got 2",
        ),
        (["--fusion", "linear"], EXIT_USAGE, "'linear' is not a fusion method"),
        (["--min-score", "high"], EXIT_USAGE, "'high' is not a number"),
    ],
)
def test_explain_refuses_bad_fusion_flags(flags: list[str], code: int, message: str) -> None:
    exit_code, _, err = run(*HYBRID, *flags)
    assert exit_code == code
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not valid JSON"),
        ('{"method": "min_max"}', 'must hold a JSON object with a "fusion" object'),
        ('{"fusion": {"method": "min_max"}, "extra": 1}', "unknown key 'extra'"),
        ('{"fusion": {"method": "linear"}}', "the fusion's method must be one of 'rrf'"),
        ('{"fusion": {"method": "min_max", "k": 60}}', "k does not apply to the 'min_max'"),
        ('{"fusion": {"method": "min_max", "alpha": "x"}}', "alpha must be a number"),
        (
            '{"fusion": {"method": "min_max", "branches": []}}',
            "branches does not apply to the 'min_max' fusion",
        ),
    ],
)
def test_a_bad_fusion_file_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "fusion.json"
    path.write_text(content)
    code, _, err = run(*HYBRID, "--fusion-file", str(path))
    assert code == EXIT_INVALID_PLAN
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_a_fusion_file_is_the_whole_fusion(tmp_path: Path) -> None:
    path = tmp_path / "fusion.json"
    path.write_text('{"fusion": {"method": "min_max"}}')
    code, _, err = run(*HYBRID, "--fusion-file", str(path), "--alpha", "0.5")
    assert code == EXIT_USAGE
    assert "--fusion-file cannot be combined with --alpha" in err
    code, _, err = run(*HYBRID, "--fusion-file", str(tmp_path / "missing.json"))
    assert code == EXIT_USAGE
    assert "cannot read" in err


def test_fusion_flags_apply_to_hybrid_only() -> None:
    code, _, err = run(
        "explain", "--table", "docs", "--query", "q", "--text-column", "body", "--alpha", "0.5"
    )
    assert code == EXIT_USAGE
    assert "--alpha does not apply to --mode text" in err


# -- hdq search ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("fusion_cli")
    beir = directory / "beir"
    (beir / "qrels").mkdir(parents=True)
    documents = [
        ("d1", "Crash on start", "The desktop app crashes on startup with error E4012."),
        ("d2", "Login", "I cannot sign in after the app upgrade."),
        ("d3", "Sync", "Files are not syncing between devices; the app crashes."),
        ("d4", "Billing", "I was charged twice this month."),
    ]
    (beir / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in documents)
    )
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "app crash"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    code, _, err = run(
        "load", str(beir), "--database", str(directory / "db"), "--embedder", "hashing"
    )
    assert code == EXIT_OK, err
    return directory / "db"


def _search(database: Path, *flags: str) -> tuple[int, dict[str, object] | None, str]:
    code, out, err = run(
        "search",
        "app crash",
        "--table",
        "corpus",
        "--database",
        str(database),
        "--format",
        "json",
        *flags,
    )
    return code, (json.loads(out) if code == EXIT_OK else None), err


@pytest.mark.parametrize(
    ("flags", "method", "options"),
    [
        (["--fusion", "min-max", "--alpha", "0.3"], "min_max", {"alpha": 0.3}),
        (["--fusion", "dbsf", "--weights", "1,2"], "dbsf", {"weights": (1, 2)}),
        (["--min-score", "0.016"], "rrf", {"min_score": 0.016}),
    ],
)
def test_search_runs_the_fusion_the_flags_name(
    database: Path, flags: list[str], method: str, options: dict[str, object]
) -> None:
    code, document, err = _search(database, *flags)
    assert code == EXIT_OK, err
    assert document is not None
    with LocalEngine(database) as engine:
        from hotdata_retrieval.embed import HashingEmbedder

        engine.embedder = HashingEmbedder()
        routed = engine.plan_search("corpus", "app crash", mode="hybrid")
        plan = SearchPlan(
            source=make_fusion(method, routed.branches, **options),
            columns=routed.columns,
            key_column=routed.key_column,
        )
        expected = engine.search(plan)
    assert [(hit["key"], hit["score"]) for hit in document["hits"]] == [  # type: ignore[index]
        (hit.key, hit.score) for hit in expected
    ]


def test_search_refuses_a_fusion_for_a_single_branch(database: Path) -> None:
    code, _, err = _search(database, "--mode", "text", "--fusion", "dbsf")
    assert code == EXIT_INVALID_PLAN
    assert "--fusion applies only to hybrid search" in err
    code, _, err = _search(database, "--fusion", "min-max", "--rank-constant", "3")
    assert code == EXIT_INVALID_PLAN
    assert "--rank-constant does not apply to the 'min_max' fusion" in err
