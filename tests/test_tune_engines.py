"""``hdq tune --engine X`` on each store and on the Hotdata engine (the fake REST APIs of
``tests/hotdata_api.py`` and ``tests/turbopuffer_api.py``), on a tiny BEIR set: twenty tickets,
six judged queries, the hashing embedder.

Each engine's report is checked against what ``hdq search --engine X`` returns for every judged
query under each setting of the grid, measured here by ir-measures: the tuner's measures are
those of the engine's own fused results, not of the local engine's. The judged documents are
checked against the table's keys where the engine runs SQL (a judgment of a document the table
lacks is named), and a note says they were not where it runs none (LanceDB, turbopuffer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ir_measures
import pyarrow as pa
import pytest
from click.testing import CliRunner

pytest.importorskip("hotdata_framework")

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.tuning import load_qrels, load_queries
from tests.hotdata_api import FakeHotdataApi
from tests.test_tune import loaded_database, relevant_lines, topical_collection
from tests.turbopuffer_api import FakeTurbopufferApi

API_KEY = "secret-key-for-tune"
WORKSPACE = "ws_tune"
ENGINES = ["sqlite", "duckdb", "postgres", "lancedb", "turbopuffer", "hotdata"]
WITHOUT_SQL = {"lancedb", "turbopuffer"}
RECORDING_NO_MODEL = {"turbopuffer", "hotdata"}
"""Engines that do not record the model that made a table's vectors: ``--embedder`` names it."""
GHOST = "ghost-document"
"""A judged document no table holds: the engines that run SQL name it."""

GRID = ["--methods", "rrf,min-max", "--rank-constants", "60", "--vector-shares", "0.5"]
GRID += ["--alphas", "0.3"]
"""Two settings: the default (rrf, 60, weights 1,1) and min-max with alpha 0.3."""

FLAGS = {"rrf": ["--fusion", "rrf"], "min_max": ["--fusion", "min-max"]}


def run(*arguments: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(arguments), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twenty tickets over five topics; six queries (two words of a topic each), every ticket
    of the query's topic judged relevant, and one judgment of a document no table holds."""
    directory = tmp_path_factory.mktemp("tune-engines") / "beir"
    documents, queries = topical_collection(
        directory, documents=20, queries=6, filler=3, seed=11, query_id="q{}"
    )
    lines = [
        "query-id\tcorpus-id\tscore",
        f"q0\t{GHOST}\t1",
        *relevant_lines(queries, documents),
    ]
    (directory / "qrels" / "train.tsv").write_text("\n".join(lines) + "\n")
    return directory


@pytest.fixture(scope="module")
def local_database(dataset: Path) -> Path:
    return loaded_database(dataset, "local")


@pytest.fixture(scope="module")
def hotdata_api(local_database: Path, dataset: Path) -> Iterator[FakeHotdataApi]:
    """The corpus behind the fake Hotdata API: BM25 on ``body`` and a plain vector index of
    the hashing embedder's vectors, whose model the engine does not record."""
    with LocalEngine(local_database) as loaded:
        rows = loaded.read_table("corpus", ["id", "body"])
    embedder = HashingEmbedder()
    vectors = embedder.embed_documents(rows.column("body").to_pylist())
    rows = rows.append_column("embedding", pa.array(vectors, pa.list_(pa.float32())))
    with LocalEngine(dataset.parent / "behind-the-api") as behind:
        behind.load_table("corpus", rows, text_columns=["body"])
        with FakeHotdataApi(behind, api_key=API_KEY, workspace_id=WORKSPACE) as api:
            api.index_engine_table("corpus")
            api.add_index("corpus", index_type="vector", columns=["embedding"], metric="cosine")
            yield api


def _hotdata_environment(api: FakeHotdataApi) -> dict[str, str]:
    return {
        "HOTDATA_API_KEY": API_KEY,
        "HOTDATA_API_URL": api.url,
        "HOTDATA_WORKSPACE": WORKSPACE,
        "HOTDATA_DATABASE": api.database_id,
    }


@pytest.fixture(scope="module")
def turbopuffer_api(dataset: Path) -> Iterator[FakeTurbopufferApi]:
    with FakeTurbopufferApi(dataset.parent / "turbopuffer") as api:
        yield api


@pytest.fixture(scope="module", params=ENGINES)
def door(
    request: pytest.FixtureRequest, dataset: Path
) -> tuple[str, list[str], dict[str, str] | None]:
    """An engine with the corpus loaded: its name, the options that reach it, and the
    environment it is configured from."""
    engine = request.param
    if engine == "hotdata":
        api = request.getfixturevalue("hotdata_api")
        return engine, ["--engine", engine, "--embedder", "hashing"], _hotdata_environment(api)
    env = None
    if engine == "postgres":
        database = request.getfixturevalue("postgres_url")
    elif engine == "turbopuffer":
        api = request.getfixturevalue("turbopuffer_api")
        env = {"TURBOPUFFER_API_KEY": api.api_key, "TURBOPUFFER_BASE_URL": api.url}
        database = "tune-"
    else:
        database = str(dataset.parent / f"store-{engine}")
    options = ["--engine", engine, "--database", database]
    source = [str(dataset)]
    if engine == "turbopuffer":
        # turbopuffer keys every document by 'id', and a BEIR directory's qrels table has no
        # key: the corpus alone, as the BEIR load makes it (body: the text, the title empty)
        corpus = dataset.parent / "corpus.jsonl"
        records = [json.loads(line) for line in (dataset / "corpus.jsonl").read_text().splitlines()]
        corpus.write_text(
            "".join(json.dumps({"id": r["_id"], "body": r["text"]}) + "\n" for r in records)
        )
        source = [str(corpus), "--table", "corpus"]
    code, _, err = run("load", *source, *options, "--embedder", "hashing", "--replace", env=env)
    assert code == EXIT_OK, err
    if engine in RECORDING_NO_MODEL:
        options += ["--embedder", "hashing"]
    return engine, options, env


@pytest.fixture(scope="module")
def tuned(
    door: tuple[str, list[str], dict[str, str] | None], dataset: Path
) -> tuple[dict[str, Any], Path]:
    engine, options, env = door
    output = dataset.parent / f"fusion-{engine}.json"
    code, out, err = run(
        "tune",
        "--queries",
        str(dataset),
        "--qrels",
        str(dataset),
        *options,
        *GRID,
        "--folds",
        "2",
        "--resamples",
        "50",
        "--output",
        str(output),
        "--format",
        "json",
        env=env,
    )
    assert code == EXIT_OK, err
    return json.loads(out), output


def _searched(
    options: list[str], env: dict[str, str] | None, query: str, fusion: list[str]
) -> dict[str, float]:
    """``hdq search``'s hybrid hits for ``query`` under ``fusion``: key → a score falling with
    the position, as ir-measures reads a run."""
    code, out, err = run(
        "search",
        query,
        "--table",
        "corpus",
        *options,
        "--mode",
        "hybrid",
        *fusion,
        "-k",
        "100",
        "--format",
        "json",
        env=env,
    )
    assert code == EXIT_OK, err
    hits = json.loads(out)["hits"]
    return {hit["key"]: float(1000 - position) for position, hit in enumerate(hits)}


def _setting_flags(setting: dict[str, Any]) -> list[str]:
    flags = list(FLAGS[setting["method"]])
    if "rank_constant" in setting:
        flags += ["--rank-constant", str(setting["rank_constant"])]
    if "weights" in setting:
        flags += ["--weights", ",".join(str(weight) for weight in setting["weights"])]
    if "alpha" in setting:
        flags += ["--alpha", str(setting["alpha"])]
    return [*flags, "--depth", "100"]


def test_tune_measures_what_hdq_search_returns_on_the_engine(
    door: tuple[str, list[str], dict[str, str] | None],
    dataset: Path,
    tuned: tuple[dict[str, Any], Path],
) -> None:
    engine, options, env = door
    report, _ = tuned
    assert report["engine"] == engine
    assert report["queries"] == 6
    qrels, _ = load_qrels(dataset)
    queries = load_queries(dataset)
    judgments = [
        ir_measures.Qrel(query_id, document, grade)
        for query_id, documents in qrels.items()
        for document, grade in documents.items()
    ]
    measures = [ir_measures.nDCG @ 10, ir_measures.R @ 100]
    settings = report["settings"]
    assert [item["fusion"]["method"] for item in settings] == ["rrf", "min_max"]
    for item in settings:
        run_ = {
            query_id: _searched(options, env, queries[query_id], _setting_flags(item["fusion"]))
            for query_id in qrels
        }
        assert all(run_.values())  # every query found something
        measured = ir_measures.calc_aggregate(measures, judgments, run_)
        assert item["nDCG@10"]["mean"] == pytest.approx(measured[measures[0]], abs=1e-9)
        assert item["R@100"]["mean"] == pytest.approx(measured[measures[1]], abs=1e-9)


def test_the_fragment_is_written_and_searches_on_the_engine(
    door: tuple[str, list[str], dict[str, str] | None], tuned: tuple[dict[str, Any], Path]
) -> None:
    engine, options, env = door
    report, output = tuned
    fragment = json.loads(output.read_text())
    assert fragment["fusion"] == report["chosen"]
    assert fragment["tuning"]["engine"] == engine
    assert fragment["tuning"]["table"] == "default.public.corpus"
    code, out, err = run(
        "search",
        "printer paper",
        "--table",
        "corpus",
        *options,
        "--fusion-file",
        str(output),
        "--format",
        "json",
        env=env,
    )
    assert code == EXIT_OK, err
    assert json.loads(out)["branches"] == ["text", "nearest"]


def test_judged_documents_are_checked_where_the_engine_runs_sql(
    door: tuple[str, list[str], dict[str, str] | None], tuned: tuple[dict[str, Any], Path]
) -> None:
    engine, _, _ = door
    report, _ = tuned
    if engine in WITHOUT_SQL:  # the keys are not read, and the note says so
        assert report["judgments_of_unknown_documents"] is None
        assert report["notes"] == [
            f"the judged documents were not checked against the table's keys (the {engine} "
            "engine runs no SQL to read them with): a relevant document the table lacks "
            "would count against every setting unnoticed"
        ]
    else:
        assert report["judgments_of_unknown_documents"] == [{"query": "q0", "document": GHOST}]
        assert report["notes"] == [
            f"1 judgment names a document the table lacks (first: {GHOST!r} for query 'q0'); "
            "1 of them relevant, which no setting can find"
        ]


def test_the_hotdata_engine_needs_the_model_named(
    hotdata_api: FakeHotdataApi, dataset: Path
) -> None:
    """A plain vector index records no model: without ``--embedder`` the query cannot be
    embedded, and the error says what to give."""
    code, _, err = run(
        "tune",
        "--queries",
        str(dataset),
        "--qrels",
        str(dataset),
        "--engine",
        "hotdata",
        "--output",
        str(dataset.parent / "unused.json"),
        env=_hotdata_environment(hotdata_api),
    )
    assert code == EXIT_INVALID_PLAN
    assert (
        "hybrid search embeds each query here, with the model that made the vectors of table "
        "'default.public.corpus', which the hotdata engine does not record: name it with "
        "--embedder" in " ".join(err.split())
    )
    assert API_KEY not in err
