"""``hdq search --weights/--rank-constant/--depth``: the fusion options of ``hdq explain``,
defined once, parsed and refused the same way, and applied to the search that runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.cli.explain import explain
from hotdata_retrieval.cli.search import search
from hotdata_retrieval.plan.search import DEFAULT_DEPTH

BODIES = [
    "the desktop app crashes on start with error E4012",
    "sign in fails after the upgrade",
    "files stop syncing between devices",
    "charged twice for one month",
    "the app crashes when opening settings",
    "sync stopped after the upgrade",
]


def invoke(*arguments: str) -> Result:
    return CliRunner().invoke(main, list(arguments))


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = tmp_path_factory.mktemp("fusion")
    source = directory / "tickets.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"t{number}", "body": body}) + "\n"
            for number, body in enumerate(BODIES, start=1)
        ),
        encoding="utf-8",
    )
    path = str(directory / "db")
    result = invoke("load", str(source), "--database", path, "--embedder", "hashing")
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def search_json(database: str, *options: str) -> dict[str, object]:
    result = invoke(
        "search", "app crashes", "--table", "tickets", "--database", database,
        "--format", "json", *options,
    )  # fmt: skip
    assert result.exit_code == EXIT_OK, result.stderr
    document: dict[str, object] = json.loads(result.stdout)
    return document


def _option(command: click.Command, name: str) -> click.Option:
    for param in command.params:
        if param.name == name and isinstance(param, click.Option):
            return param
    raise AssertionError(f"{command.name} has no option {name}")


@pytest.mark.parametrize("name", ["weights", "rank_constant", "depth"])
def test_search_and_explain_share_one_definition_of_each_fusion_option(name: str) -> None:
    ours, theirs = _option(search, name), _option(explain, name)
    assert ours.opts == theirs.opts
    assert ours.help == theirs.help
    assert ours.metavar == theirs.metavar
    assert ours.callback is theirs.callback
    assert type(ours.type) is type(theirs.type)


def test_weights_and_rank_constant_set_the_fused_score(database: str) -> None:
    document = search_json(
        database, "--mode", "hybrid", "--weights", "2,0.5", "--rank-constant", "10", "-k", "6"
    )
    hits = document["hits"]
    assert isinstance(hits, list) and hits
    weights = {"text": 2, "nearest": 0.5}
    for hit in hits:
        # Weighted RRF from the ranks the search itself reports: Σ wᵢ / (k + rankᵢ).
        expected = sum(
            weights[name] / (10 + branch["rank"])
            for name, branch in hit["branches"].items()
            if branch["rank"] is not None
        )
        assert hit["score"] == pytest.approx(expected)


def test_a_zero_weight_leaves_the_other_branchs_order(database: str) -> None:
    text = search_json(database, "--mode", "text", "-k", "3")
    fused = search_json(database, "--mode", "hybrid", "--weights", "1,0", "-k", "3")
    text_keys = [hit["key"] for hit in text["hits"]]  # type: ignore[attr-defined]
    fused_keys = [hit["key"] for hit in fused["hits"]]  # type: ignore[attr-defined]
    # Rows only the zero-weighted branch found score 0 and follow BM25's matches.
    assert text_keys and fused_keys[: len(text_keys)] == text_keys


def test_depth_lets_a_page_reach_past_the_default(database: str) -> None:
    past = DEFAULT_DEPTH + 50
    result = invoke(
        "search", "app", "--table", "tickets", "--database", database, "--mode", "hybrid",
        "-k", str(past),
    )  # fmt: skip
    assert result.exit_code == EXIT_INVALID_PLAN
    assert f"Pass --depth >= {past}" in result.stderr
    document = search_json(database, "--mode", "hybrid", "-k", str(past), "--depth", str(past))
    assert len(document["hits"]) == len(BODIES)  # type: ignore[arg-type]
    explained = search_json(database, "--mode", "hybrid", "--depth", str(past), "--explain")
    assert f"LIMIT {past}" in str(explained["sql"])


def test_fusion_options_outside_hybrid_search_are_refused(database: str) -> None:
    for mode in ("text", "semantic", "auto"):
        result = invoke(
            "search", "app", "--table", "tickets", "--database", database, "--mode", mode,
            "--rank-constant", "5", *(["--text-column", "body"] if mode == "auto" else []),
        )  # fmt: skip
        if mode == "auto":  # auto is hybrid on this table: the option applies
            assert result.exit_code == EXIT_OK, result.stderr
            continue
        assert result.exit_code == EXIT_INVALID_PLAN
        assert "only to hybrid search" in result.stderr
        assert f"this search is {mode}" in result.stderr


def _message(result: Result) -> str:
    """The error line, without its prefix."""
    lines = [line for line in result.stderr.splitlines() if re.search(r"[Ee]rror: ", line)]
    assert len(lines) == 1, result.stderr
    return re.split(r"[Ee]rror: ", lines[0], maxsplit=1)[1]


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (["--weights", "1,x"], EXIT_USAGE),
        (["--rank-constant", "k"], EXIT_USAGE),
        (["--depth", "1.5"], EXIT_USAGE),
        (["--weights", "1,2,3"], EXIT_INVALID_PLAN),
        (["--weights", "0,0"], EXIT_INVALID_PLAN),
        (["--weights", "1,-1"], EXIT_INVALID_PLAN),
        (["--weights", "1,inf"], EXIT_INVALID_PLAN),
        (["--rank-constant", "0"], EXIT_INVALID_PLAN),
        (["--depth", "0"], EXIT_INVALID_PLAN),
        (["--depth", "5"], EXIT_INVALID_PLAN),
    ],
)
def test_search_refuses_what_explain_refuses_with_the_same_message(
    database: str, options: list[str], code: int
) -> None:
    explained = invoke(
        "explain", "--table", "tickets", "--text-column", "body", "--vector-column",
        "body_embedding", "--query", "app", "--vector", "[0.1, 0.2]", *options,
    )  # fmt: skip
    searched = invoke(
        "search", "app", "--table", "tickets", "--database", database, "--mode", "hybrid",
        *options,
    )  # fmt: skip
    assert explained.exit_code == searched.exit_code == code
    assert _message(searched) == _message(explained)


@pytest.mark.parametrize("option", [["--alpha", "0.5"], ["--fusion", "dbsf"]])
def test_an_option_of_another_method_outside_hybrid_search_names_hybrid_search(
    database: str, option: list[str]
) -> None:
    result = invoke(
        "search", "app", "--table", "tickets", "--database", database, "--mode", "text", *option
    )
    assert result.exit_code == EXIT_INVALID_PLAN
    assert _message(result).startswith(f"{option[0]} applies only to hybrid search")


def test_a_deeply_nested_fusion_file_is_one_line(database: str, tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"fusion": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    result = invoke(
        "search", "app", "--table", "tickets", "--database", database, "--mode", "hybrid",
        "--fusion-file", str(path),
    )  # fmt: skip
    assert result.exit_code == EXIT_INVALID_PLAN
    assert "nested too deeply" in _message(result)
    assert "Traceback" not in result.output + result.stderr


DEEP = "[" * 50_000 + "]" * 50_000


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["search", "app", "--mode", "text", "--formula", DEEP], "--formula is nested too deeply"),
        (["explain", "--mode", "nearest", "--vector-column", "body", "--vector", DEEP],
         "--vector is nested too deeply"),
        (["explain", "--mode", "nearest", "--vector-column", "body", "--vector", "@deep.json"],
         "--vector file 'deep.json' is nested too deeply"),
    ],
)  # fmt: skip
def test_every_json_option_refuses_deep_nesting_in_one_line(
    database: str, options: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text(DEEP, encoding="utf-8")
    command, *rest = options
    where = ["--database", database] if command == "search" else []
    result = invoke(command, *rest, "--table", "tickets", *where)
    assert result.exit_code == EXIT_INVALID_PLAN, result.stderr
    assert _message(result).startswith(message)


def test_a_deeply_nested_lint_catalog_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(DEEP, encoding="utf-8")
    (tmp_path / "q.sql").write_text("SELECT 1", encoding="utf-8")
    result = invoke("lint", str(tmp_path / "q.sql"), "--catalog", str(tmp_path / "deep.json"))
    assert result.exit_code != EXIT_OK and not isinstance(result.exception, RecursionError)
    assert "the index catalog is nested too deeply to read" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
