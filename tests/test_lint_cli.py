"""``hdq lint`` on the command line: output formats, --fix, exit codes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli.lint import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, lint
from hotdata_retrieval.lint import RULES

BAD = (
    "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) LIMIT 3;\n"
    'SELECT r."driverId" FROM f1.public.results AS r\n'
)
CLEAN = (
    "SELECT id, score FROM bm25_search('default.public.docs', 'body', 'q', 5)\n"
    "ORDER BY score DESC LIMIT 5\n"
)


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(lint, list(args), input=stdin, catch_exceptions=False)


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "queries.sql"
    path.write_text(BAD)
    return path


def test_text_output_and_exit_code(bad_file: Path) -> None:
    result = run(str(bad_file))
    assert result.exit_code == EXIT_FINDINGS
    lines = result.stdout.splitlines()
    assert lines == [
        f"{bad_file}:1:15: HDQ011 [error] vector_search('default.public.docs', 'body', 'q', 20) "
        "is cut by LIMIT/OFFSET without ORDER BY _distance ASC: it keeps the lowest rowids, not "
        "the best hits (fix: add ORDER BY _distance ASC before the LIMIT)",
        f'{bad_file}:2:10: HDQ043 [error] quoted identifier "driverId" keeps its capitals, but '
        "the engine stores driverid: the query fails (400 Bad Request) (fix: write driverid)",
    ]
    assert "2 findings (2 fixable with --fix)" in result.stderr


def test_json_output(bad_file: Path) -> None:
    result = run(str(bad_file), "--format", "json")
    assert result.exit_code == EXIT_FINDINGS
    findings = json.loads(result.stdout)
    assert [finding["code"] for finding in findings] == ["HDQ011", "HDQ043"]
    assert set(findings[0]) == {
        "code",
        "severity",
        "message",
        "line",
        "column",
        "start",
        "end",
        "suggestion",
        "fixable",
    }
    assert BAD[findings[1]["start"] : findings[1]["end"]] == '"driverId"'


def test_clean_input_exits_zero_from_stdin() -> None:
    result = run("-", stdin=CLEAN)
    assert result.exit_code == EXIT_CLEAN
    assert result.stdout == "" and result.stderr == ""
    result = run("-", "--format", "json", stdin=CLEAN)
    assert result.exit_code == EXIT_CLEAN and json.loads(result.stdout) == []


def test_fix_prints_the_fixed_sql_and_leaves_the_file(bad_file: Path) -> None:
    result = run(str(bad_file), "--fix")
    assert result.exit_code == EXIT_CLEAN
    assert result.stdout == (
        "SELECT * FROM vector_search('default.public.docs', 'body', 'q', 20) "
        "ORDER BY _distance ASC LIMIT 3;\n"
        "SELECT r.driverid FROM f1.public.results AS r\n"
    )
    assert "fixed 2, 0 findings left" in result.stderr
    assert bad_file.read_text() == BAD


def test_fix_write_rewrites_the_file(bad_file: Path) -> None:
    result = run(str(bad_file), "--fix", "--write")
    assert result.exit_code == EXIT_CLEAN
    assert result.stdout == ""
    assert "ORDER BY _distance ASC LIMIT 3" in bad_file.read_text()
    assert run(str(bad_file)).exit_code == EXIT_CLEAN


def test_fix_reports_what_is_left() -> None:
    sql = (
        "SELECT * FROM c.s.t ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3;\n"
        "SELECT id FROM bm25_search('docs', 'body', 'q', 5);\n"
    )
    result = run("-", "--fix", stdin=sql)
    assert result.exit_code == EXIT_FINDINGS
    assert "bm25_search('default.public.docs', 'body', 'q', 5) ORDER BY score DESC" in (
        result.stdout
    )
    assert "<stdin>:1:8: HDQ002 [warning]" in result.stderr
    payload = json.loads(run("-", "--fix", "--format", "json", stdin=sql).stdout)
    assert [finding["code"] for finding in payload["applied"]] == ["HDQ010", "HDQ014"]
    assert [finding["code"] for finding in payload["findings"]] == ["HDQ002"]
    assert payload["sql"].startswith("SELECT * FROM c.s.t")


def test_catalog_option(tmp_path: Path) -> None:
    catalog = tmp_path / "indexes.json"
    catalog.write_text(
        json.dumps(
            {"indexes": [{"table": "c.s.t", "column": "emb", "kind": "vector", "metric": "l2"}]}
        )
    )
    sql = "SELECT id FROM c.s.t ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3"
    assert run("-", stdin=sql).exit_code == EXIT_CLEAN
    result = run("-", "--catalog", str(catalog), stdin=sql)
    assert result.exit_code == EXIT_FINDINGS
    assert "HDQ003 [error] cosine_distance() does not match the l2 index" in result.stdout


def test_ignore_and_defaults() -> None:
    sql = "SELECT id FROM t ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3"
    assert run("-", "--ignore", "HDQ001", stdin=sql).exit_code == EXIT_CLEAN
    result = run("-", "--default-catalog", "f1", "--default-schema", "main", stdin=sql)
    assert "(fix: write f1.main.t)" in result.stdout


def test_list_rules() -> None:
    result = run("--list-rules")
    assert result.exit_code == EXIT_CLEAN
    assert [line.split()[0] for line in result.stdout.splitlines()] == [r.code for r in RULES]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["-"], "SELECT FROM WHERE (", "<stdin>:1:13: parse error: Expected table name but got"),
        (["-"], "SELECT 1;\nSELECT id FROM docs WHERE (x = 1", "<stdin>:2:"),
        (["-"], "SELECT 'unterminated", "<stdin>:1:"),
        (["-"], b"SELECT '\xff'", "not UTF-8"),
        (["/no/such/file.sql"], None, "cannot read '/no/such/file.sql'"),
        (["-", "--catalog", "/no/such/indexes.json"], "SELECT 1", "--catalog: cannot read"),
        (["-", "--ignore", "HDQ999"], "SELECT 1", "unknown rule code(s) HDQ999"),
        (["-", "--write"], "SELECT 1", "--write only applies with --fix"),
        (["-", "--fix", "--write"], "SELECT 1", "--write needs a FILE"),
        (["-", "--format", "xml"], "SELECT 1", "Invalid value for '--format'"),
        ([], None, "Missing argument"),
    ],
)
def test_bad_input_exits_two_without_a_traceback(
    args: list[str], stdin: str | bytes | None, message: str
) -> None:
    result = run(*args, stdin=stdin)
    assert result.exit_code == EXIT_ERROR
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_a_bad_catalog_document_names_the_field(tmp_path: Path) -> None:
    catalog = tmp_path / "indexes.json"
    catalog.write_text('{"indexes": [{"table": "docs", "columns": ["b"], "kind": "hnsw"}]}')
    result = run("-", "--catalog", str(catalog), stdin="SELECT 1")
    assert result.exit_code == EXIT_ERROR
    assert "indexes[0].kind" in result.stderr


def test_deep_nesting_is_an_error_not_a_traceback() -> None:
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    result = run("-", stdin=sql)
    assert result.exit_code in (EXIT_CLEAN, EXIT_ERROR)
    assert "Traceback" not in result.output


def test_local_database_catalog(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    from hotdata_retrieval.embed import HashingEmbedder
    from hotdata_retrieval.engines.local import LocalEngine

    database = tmp_path / "db"
    with LocalEngine(database, embedder=HashingEmbedder()) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": [1, 2], "body": ["red fox", "blue sky"]}),
            text_columns=["body"],
            embed_columns=["body"],
        )
    printed = run("--local-db", str(database), "--print-catalog")
    assert printed.exit_code == EXIT_CLEAN
    catalog = json.loads(printed.stdout)
    assert {(index["kind"], tuple(index["columns"])) for index in catalog["indexes"]} == {
        ("bm25", ("body",)),
        ("vector", ("body_embedding",)),
    }
    assert catalog["tables"] == [{"table": "default.public.docs", "unique_keys": [["id"]]}]
    sql = (
        "SELECT id FROM bm25_search('default.public.docs', 'title', 'q', 5) "
        "ORDER BY score DESC LIMIT 5"
    )
    result = run("-", "--local-db", str(database), stdin=sql)
    assert result.exit_code == EXIT_FINDINGS and "HDQ020" in result.stdout
    missing = run("-", "--local-db", str(tmp_path / "nothing"), stdin=sql)
    assert missing.exit_code == EXIT_ERROR and "no local database" in missing.stderr


def test_fix_write_with_json_writes_and_reports(bad_file: Path) -> None:
    result = run(str(bad_file), "--fix", "--write", "--format", "json", "-q")
    assert result.exit_code == EXIT_CLEAN
    payload = json.loads(result.stdout)
    assert payload["sql"] == bad_file.read_text()
    assert len(payload["applied"]) == 2 and payload["findings"] == []
    assert result.stderr == ""
