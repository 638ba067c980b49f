"""``-`` means standard input wherever an ``hdq`` command reads a query text or a file, through
one helper (:mod:`hotdata_retrieval.cli._input`): ``hdq search -``, ``hdq explain --query -``,
``--vector -``, ``--plan -``, ``--fusion-file -``, ``hdq lint -`` and ``--catalog -``, ``hdq tune
--queries -`` and ``--qrels -``. Standard input is read once: two arguments given ``-`` are a
usage error naming both. ``hdq load -`` says why it cannot read stdin.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli._errors import CommandError
from hotdata_retrieval.cli._input import (
    describe,
    is_stdin,
    read_input,
    text_argument,
)
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE
from hotdata_retrieval.tuning import (
    TuningError,
    load_qrels,
    load_queries,
    parse_qrels,
    parse_queries,
)


def hdq(*arguments: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(arguments), input=stdin, catch_exceptions=False)


def first_error(result: Result) -> str:
    """The ``hdq <command>: error: ...`` line, after checking there is no traceback."""
    assert "Traceback" not in result.output
    return result.stderr.splitlines()[0]


# -- the helper ----------------------------------------------------------------------------


def test_a_file_is_read_as_its_bytes_decoded(tmp_path: Path) -> None:
    path = tmp_path / "q.sql"
    path.write_bytes("\ufeffSELECT 1\r\n-- é\rSELECT 2\n".encode())
    assert read_input(str(path), "PATH") == "\ufeffSELECT 1\r\n-- é\rSELECT 2\n"
    assert read_input(path, "PATH") == read_input(str(path), "PATH")


def test_dash_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\r\nb\n")))
    assert read_input("-", "--plan") == "a\r\nb\n"


def test_a_text_argument_from_stdin_loses_its_trailing_line_breaks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"  two\nlines \r\n\n")))
    assert text_argument("-", "QUERY") == "  two\nlines "
    assert text_argument("plain text\n", "QUERY") == "plain text\n"  # not '-': as given


def test_is_stdin_and_describe() -> None:
    assert is_stdin("-") and is_stdin(Path("-"))
    assert not is_stdin("--") and not is_stdin("./-") and not is_stdin("")
    assert describe("QUERY", "-") == "QUERY from stdin"
    assert describe("--catalog", Path("a b.json")) == "--catalog 'a b.json'"


def test_an_unreadable_file_names_the_argument_and_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(click.BadParameter) as raised:
        read_input(missing, "--plan")
    assert raised.value.message == f"cannot read {str(missing)!r}: No such file or directory"
    assert raised.value.param_hint == "'--plan'"
    with pytest.raises(click.BadParameter, match="Is a directory"):
        read_input(tmp_path, "--plan")


def test_bytes_that_are_not_utf8_are_a_bad_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"q": "caf\xe9"}')
    with pytest.raises(CommandError, match=r"^--plan '.*latin1\.json' is not UTF-8 text"):
        read_input(path, "--plan")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff")))
    with pytest.raises(CommandError, match=r"^QUERY from stdin is not UTF-8 text"):
        text_argument("-", "QUERY")


def test_a_closed_standard_input_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", None)  # what Python gives a process started with fd 0 shut
    with pytest.raises(click.BadParameter) as raised:
        read_input("-", "--plan")
    assert raised.value.message == "cannot read stdin: standard input is closed"
    assert raised.value.param_hint == "'--plan'"


@pytest.mark.parametrize(
    "arguments",
    [["explain", "--plan", "-"], ["lint", "-"], ["search", "-", "--table", "t"]],
)
def test_a_command_given_a_closed_standard_input_says_so(
    arguments: list[str], tmp_path: Path
) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", *arguments],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        preexec_fn=lambda: os.close(0),  # the child closes its fd 0 before exec
    )  # fmt: skip
    assert "Traceback" not in process.stderr
    assert process.returncode == EXIT_USAGE
    assert "cannot read stdin: standard input is closed" in process.stderr.splitlines()[0]


def test_standard_input_is_read_once_per_command() -> None:
    @click.command()
    @click.argument("first")
    @click.argument("second")
    def both(first: str, second: str) -> None:
        click.echo(read_input(first, "FIRST") + read_input(second, "SECOND"))

    result = CliRunner().invoke(both, ["-", "-"], input="text")
    assert result.exit_code == EXIT_USAGE
    assert "FIRST and SECOND are both '-': standard input can be read only once" in result.stderr
    twice = CliRunner().invoke(both, ["-", "-"], input="text", standalone_mode=False)
    assert isinstance(twice.exception, click.UsageError)


# -- hdq search ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stdin")
    source = directory / "tickets.jsonl"
    rows = [
        {"id": "t1", "body": "The desktop app crashes on startup with error E4012."},
        {"id": "t2", "body": "I cannot sign in after the upgrade."},
        {"id": "t3", "body": "Files are not syncing between devices."},
    ]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = directory / "db"
    result = hdq("load", str(source), "--database", str(path), "--embedder", "hashing")
    assert result.exit_code == EXIT_OK, result.stderr
    return path


def search(database: Path, query: str, *more: str, stdin: str | bytes | None = None) -> Result:
    arguments = ["search", query, "--table", "tickets", "--database", str(database)]
    return hdq(*arguments, "--format", "json", *more, stdin=stdin)


@pytest.mark.parametrize("stdin", ["sign in upgrade", "sign in upgrade\n", "sign in upgrade\r\n"])
def test_search_dash_reads_the_query_from_stdin(database: Path, stdin: str) -> None:
    from_stdin = search(database, "-", stdin=stdin)
    assert from_stdin.exit_code == EXIT_OK, from_stdin.stderr
    assert from_stdin.stdout == search(database, "sign in upgrade").stdout
    assert json.loads(from_stdin.stdout)["hits"][0]["key"] == "t2"


def test_search_dash_is_not_the_text_dash(database: Path) -> None:
    """Before, ``hdq search -`` searched for the text "-"; now an empty stdin is an empty
    query, refused as one."""
    result = search(database, "-", stdin="")
    assert result.exit_code == EXIT_INVALID_PLAN
    assert first_error(result) == "hdq search: error: QUERY must not be empty, got ''"


def test_search_query_from_stdin_must_be_utf8(database: Path) -> None:
    result = search(database, "-", stdin=b"caf\xe9")
    assert result.exit_code == EXIT_INVALID_PLAN
    assert first_error(result) == (
        "hdq search: error: QUERY from stdin is not UTF-8 text: unexpected end of data"
    )


def test_search_query_and_fusion_file_cannot_both_read_stdin(database: Path) -> None:
    result = search(database, "-", "--fusion-file", "-", stdin='{"fusion": {}}')
    assert result.exit_code == EXIT_USAGE
    assert first_error(result) == (
        "hdq search: error: QUERY and --fusion-file are both '-': standard input can be read "
        "only once"
    )


def test_search_fusion_file_from_stdin(database: Path, tmp_path: Path) -> None:
    fragment = '{"fusion": {"method": "min_max", "alpha": 0.7}}'
    path = tmp_path / "fusion.json"
    path.write_text(fragment)
    from_stdin = search(database, "crash", "--fusion-file", "-", stdin=fragment)
    assert from_stdin.exit_code == EXIT_OK, from_stdin.stderr
    assert from_stdin.stdout == search(database, "crash", "--fusion-file", str(path)).stdout


# -- hdq explain ---------------------------------------------------------------------------

TEXT = ["explain", "--table", "docs", "--text-column", "body", "--quiet"]
NEAREST = ["explain", "--table", "docs", "--vector-column", "embedding", "--quiet"]
HYBRID = [*TEXT, "--vector-column", "embedding", "--query", "q", "--vector", "[1, 0]"]


def test_explain_query_dash_reads_stdin() -> None:
    from_stdin = hdq(*TEXT, "--query", "-", stdin="error E1234\n")
    assert from_stdin.exit_code == EXIT_OK, from_stdin.stderr
    assert from_stdin.stdout == hdq(*TEXT, "--query", "error E1234").stdout
    assert "'error E1234'" in from_stdin.stdout


@pytest.mark.parametrize("flag", ["-", "@-"])
def test_explain_vector_from_stdin(flag: str) -> None:
    from_stdin = hdq(*NEAREST, "--vector", flag, stdin="[0.5, -1, 2]\n")
    assert from_stdin.exit_code == EXIT_OK, from_stdin.stderr
    assert from_stdin.stdout == hdq(*NEAREST, "--vector", "[0.5, -1, 2]").stdout


def test_explain_vector_from_stdin_names_stdin_when_bad() -> None:
    result = hdq(*NEAREST, "--vector", "-", stdin="[1, ")
    assert result.exit_code == EXIT_INVALID_PLAN
    assert "--vector from stdin is not a JSON array of numbers" in first_error(result)


def test_explain_query_and_vector_cannot_both_read_stdin() -> None:
    args = [*TEXT, "--vector-column", "embedding", "--query", "-", "--vector", "-"]
    result = hdq(*args, stdin="[1, 0]")
    assert result.exit_code == EXIT_USAGE
    assert "--query and --vector are both '-'" in first_error(result)


def test_explain_fusion_file_from_stdin(tmp_path: Path) -> None:
    fragment = '{"fusion": {"method": "dbsf", "alpha": 0.25}}'
    path = tmp_path / "fusion.json"
    path.write_text(fragment)
    from_stdin = hdq(*HYBRID, "--fusion-file", "-", stdin=fragment)
    assert from_stdin.exit_code == EXIT_OK, from_stdin.stderr
    assert from_stdin.stdout == hdq(*HYBRID, "--fusion-file", str(path)).stdout
    bad = hdq(*HYBRID, "--fusion-file", "-", stdin="{")
    assert bad.exit_code == EXIT_INVALID_PLAN
    assert "--fusion-file from stdin is not valid JSON" in first_error(bad)


def test_explain_plan_file_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "plan.json"
    result = hdq("explain", "--plan", str(missing))
    assert result.exit_code == EXIT_USAGE
    assert first_error(result) == (
        f"hdq explain: error: Invalid value for '--plan': cannot read {str(missing)!r}: "
        "No such file or directory"
    )


# -- hdq lint ------------------------------------------------------------------------------

CATALOG = json.dumps(
    {"indexes": [{"table": "c.s.t", "column": "emb", "kind": "vector", "metric": "l2"}]}
)
MISMATCHED = "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3\n"


def test_lint_catalog_from_stdin(tmp_path: Path) -> None:
    query = tmp_path / "q.sql"
    query.write_text(MISMATCHED)
    result = hdq("lint", str(query), "--catalog", "-", stdin=CATALOG)
    assert result.exit_code == 1
    assert "HDQ003 [error] cosine_distance() does not match the l2 index" in result.stdout
    printed = hdq("lint", "--catalog", "-", "--print-catalog", stdin=CATALOG)
    assert json.loads(printed.stdout)["indexes"][0]["metric"] == "l2"


def test_lint_catalog_and_path_cannot_both_read_stdin() -> None:
    result = hdq("lint", "-", "--catalog", "-", stdin=CATALOG)
    assert result.exit_code == 2
    assert first_error(result) == (
        "hdq lint: error: --catalog and PATH are both '-': standard input can be read only once"
    )


def test_lint_unreadable_catalog_is_named(tmp_path: Path) -> None:
    result = hdq("lint", "-", "--catalog", str(tmp_path / "none.json"), stdin=MISMATCHED)
    assert result.exit_code == 2
    assert first_error(result) == (
        f"hdq lint: error: --catalog: cannot read {str(tmp_path / 'none.json')!r}: "
        "No such file or directory"
    )


def test_lint_stdin_that_is_not_utf8() -> None:
    result = hdq("lint", "-", stdin=b"SELECT '\xff'")
    assert result.exit_code == 2
    assert first_error(result) == (
        "hdq lint: error: PATH from stdin is not UTF-8 text: invalid start byte"
    )


# -- hdq tune and hdq load -----------------------------------------------------------------

QUERIES = '{"_id": "q1", "text": "crash"}\n{"_id": 2, "text": "sign in"}\n'
QRELS = "query-id\tcorpus-id\tscore\nq1\tt1\t1\n2\tt2\t2\n"


def test_parsing_text_reads_what_loading_the_file_reads(tmp_path: Path) -> None:
    (tmp_path / "queries.jsonl").write_text("\ufeff" + QUERIES)
    (tmp_path / "qrels.tsv").write_text("\ufeff" + QRELS)
    assert parse_queries("\ufeff" + QUERIES) == load_queries(tmp_path / "queries.jsonl")
    assert parse_queries(QUERIES) == {"q1": "crash", "2": "sign in"}
    assert parse_qrels("\ufeff" + QRELS) == load_qrels(tmp_path / "qrels.tsv")[0]
    assert parse_qrels(QRELS) == {"q1": {"t1": 1}, "2": {"t2": 2}}
    with pytest.raises(TuningError, match=r"^<stdin>:2: not JSON"):
        parse_queries('{"_id": "q1", "text": "a"}\n{', "<stdin>")


@pytest.mark.parametrize(
    ("stdin_flag", "other_flag", "other_text", "stdin"),
    [
        ("--queries", "--qrels", "query-id\tcorpus-id\tscore\nq9\tt1\t1\n", QUERIES),
        ("--qrels", "--queries", '{"_id": "q9", "text": "x"}\n', QRELS),
    ],
)
def test_tune_reads_queries_or_qrels_from_stdin(
    database: Path,
    tmp_path: Path,
    stdin_flag: str,
    other_flag: str,
    other_text: str,
    stdin: str,
) -> None:
    """Queries and judgments that share no query: the error says both were read, stdin's
    as ``<stdin>`` (the runs themselves are tests/test_tune.py's)."""
    other = tmp_path / "other"
    other.write_text(other_text)
    result = hdq(
        "tune", stdin_flag, "-", other_flag, str(other), "--database", str(database), stdin=stdin
    )
    assert result.exit_code == EXIT_INVALID_PLAN
    queries, qrels = ("<stdin>", str(other))
    if stdin_flag == "--qrels":
        queries, qrels = qrels, queries
    assert first_error(result) == (
        f"hdq tune: error: no query of {queries!r} is judged in {qrels!r}"
    )


def test_tune_queries_and_qrels_cannot_both_read_stdin(database: Path) -> None:
    result = hdq("tune", "--queries", "-", "--qrels", "-", "--database", str(database), stdin="")
    assert result.exit_code == EXIT_USAGE
    assert "--queries and --qrels are both '-'" in first_error(result)


def test_load_says_why_it_cannot_read_stdin(tmp_path: Path) -> None:
    result = hdq("load", "-", "--database", str(tmp_path / "db"), stdin='{"id": 1}\n')
    assert result.exit_code == EXIT_USAGE
    assert "'-' (stdin) cannot be loaded: the format comes from the file's suffix" in (
        first_error(result)
    )
    assert not (tmp_path / "db").exists()
