"""``hdq lint`` on the command line: output formats, --fix, exit codes, bad input, and
several files and directories in one run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from hotdata_retrieval.cli import main
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
    assert {finding["path"] for finding in findings} == {str(bad_file)}
    assert set(findings[0]) == {
        "path",
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
    (payload,) = json.loads(run("-", "--fix", "--format", "json", stdin=sql).stdout)
    assert payload["path"] == "<stdin>"
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
    (payload,) = json.loads(result.stdout)
    assert payload["path"] == str(bad_file)
    assert payload["sql"] == bad_file.read_text()
    assert len(payload["applied"]) == 2 and payload["findings"] == []
    assert result.stderr == ""


# -- several files and directories ---------------------------------------------------------

#: A finding's location on each line of text output: ``PATH:LINE:COL: CODE``.
BAD_LOCATIONS = ["1:15: HDQ011", "2:10: HDQ043"]


def locations(text: str) -> list[str]:
    """``PATH:LINE:COL: CODE`` of each text-output line."""
    return [line.split(" [", 1)[0] for line in text.splitlines()]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``sql/``: bad and clean files at two depths, and what a directory walk leaves out."""
    root = tmp_path / "sql"
    (root / "reports" / "weekly").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "b.sql").write_text(BAD)
    (root / "a.sql").write_text(CLEAN)
    (root / "reports" / "weekly" / "z.sql").write_text(BAD)
    (root / "reports" / "c.sql").write_text(BAD)
    (root / "notes.txt").write_text(BAD)  # not *.sql
    (root / ".draft.sql").write_text(BAD)  # hidden file
    (root / ".hidden" / "d.sql").write_text(BAD)  # hidden directory
    return root


def test_several_files_each_finding_names_its_file(tmp_path: Path, bad_file: Path) -> None:
    clean = tmp_path / "clean.sql"
    clean.write_text(CLEAN)
    other = tmp_path / "other.sql"
    other.write_text(BAD)
    result = run(str(bad_file), str(clean), str(other))
    assert result.exit_code == EXIT_FINDINGS
    assert locations(result.stdout) == [
        *(f"{bad_file}:{where}" for where in BAD_LOCATIONS),
        *(f"{other}:{where}" for where in BAD_LOCATIONS),
    ]
    assert result.stderr.splitlines() == [
        f"{bad_file}: 2 findings (2 fixable with --fix)",
        f"{other}: 2 findings (2 fixable with --fix)",
    ]


def test_several_clean_files_exit_zero(tmp_path: Path) -> None:
    paths = []
    for name in ("one.sql", "two.sql"):
        (tmp_path / name).write_text(CLEAN)
        paths.append(str(tmp_path / name))
    result = run(*paths)
    assert (result.exit_code, result.stdout, result.stderr) == (EXIT_CLEAN, "", "")


def test_a_directory_is_its_sql_files_recursively_and_sorted(tree: Path) -> None:
    result = run(str(tree))
    assert result.exit_code == EXIT_FINDINGS
    files = [tree / "b.sql", tree / "reports" / "c.sql", tree / "reports" / "weekly" / "z.sql"]
    assert locations(result.stdout) == [
        f"{path}:{where}" for path in files for where in BAD_LOCATIONS
    ]


def test_a_directory_given_with_a_trailing_slash_names_the_same_files(tree: Path) -> None:
    assert run(f"{tree}/").stdout == run(str(tree)).stdout


def test_a_file_given_twice_is_linted_once(tree: Path) -> None:
    result = run(str(tree / "b.sql"), str(tree), str(tree / "b.sql"))
    assert locations(result.stdout).count(f"{tree / 'b.sql'}:1:15: HDQ011") == 1
    assert len(result.stdout.splitlines()) == 6


def test_stdin_among_files(bad_file: Path) -> None:
    result = run(str(bad_file), "-", stdin=BAD)
    assert result.exit_code == EXIT_FINDINGS
    assert locations(result.stdout) == [
        *(f"{bad_file}:{where}" for where in BAD_LOCATIONS),
        *(f"<stdin>:{where}" for where in BAD_LOCATIONS),
    ]


def test_json_is_one_list_with_the_path_of_each_finding(tree: Path) -> None:
    result = run(str(tree / "a.sql"), str(tree / "reports"), "--format", "json")
    assert result.exit_code == EXIT_FINDINGS
    findings = json.loads(result.stdout)
    assert [(finding["path"], finding["code"]) for finding in findings] == [
        (str(tree / "reports" / "c.sql"), "HDQ011"),
        (str(tree / "reports" / "c.sql"), "HDQ043"),
        (str(tree / "reports" / "weekly" / "z.sql"), "HDQ011"),
        (str(tree / "reports" / "weekly" / "z.sql"), "HDQ043"),
    ]


def test_fix_write_fixes_each_file_on_its_own(tree: Path) -> None:
    before = {path: path.read_text() for path in tree.rglob("*") if path.is_file()}
    result = run(str(tree), "--fix", "--write")
    assert result.exit_code == EXIT_CLEAN
    assert result.stdout == ""
    fixed = [tree / "b.sql", tree / "reports" / "c.sql", tree / "reports" / "weekly" / "z.sql"]
    assert result.stderr.splitlines() == [
        f"{tree / 'a.sql'}: fixed 0, 0 findings left",
        *(f"{path}: fixed 2, 0 findings left; wrote {path}" for path in fixed),
    ]
    for path, text in before.items():
        if path in fixed:
            assert "ORDER BY _distance ASC LIMIT 3" in path.read_text()
        else:
            assert path.read_text() == text, path
    assert run(str(tree)).exit_code == EXIT_CLEAN


def test_fix_json_has_one_object_per_file(tree: Path) -> None:
    result = run(str(tree / "a.sql"), str(tree / "b.sql"), "--fix", "--format", "json")
    assert result.exit_code == EXIT_CLEAN
    payload = json.loads(result.stdout)
    assert [item["path"] for item in payload] == [str(tree / "a.sql"), str(tree / "b.sql")]
    assert payload[0]["sql"] == CLEAN and payload[0]["applied"] == []
    assert [finding["code"] for finding in payload[1]["applied"]] == ["HDQ011", "HDQ043"]
    assert {finding["path"] for finding in payload[1]["applied"]} == {str(tree / "b.sql")}
    assert (tree / "b.sql").read_text() == BAD  # printed, not written


def test_fix_left_findings_name_their_file_on_stderr(tmp_path: Path) -> None:
    left = "SELECT * FROM c.s.t ORDER BY cosine_distance(emb, ARRAY[1.0, 2.0]) LIMIT 3;\n"
    first, second = tmp_path / "first.sql", tmp_path / "second.sql"
    first.write_text(CLEAN)
    second.write_text(left)
    result = run(str(first), str(second), "--fix", "--write")
    assert result.exit_code == EXIT_FINDINGS
    assert f"{second}:1:8: HDQ002 [warning]" in result.stderr
    assert str(first) + ":" not in result.stderr.replace(f"{first}: fixed 0", "")


def test_an_error_in_one_file_does_not_stop_the_others(tmp_path: Path, bad_file: Path) -> None:
    broken = tmp_path / "broken.sql"
    broken.write_text("SELECT FROM WHERE (")
    missing = tmp_path / "missing.sql"
    result = run(str(broken), str(missing), str(bad_file))
    assert result.exit_code == EXIT_ERROR  # an error wins over findings
    assert locations(result.stdout) == [f"{bad_file}:{where}" for where in BAD_LOCATIONS]
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"hdq lint: error: {broken}:1:13: parse error: Expected table name but got "
        + errors[0].split("Expected table name but got ", 1)[1],
        f"hdq lint: error: cannot read {str(missing)!r}: No such file or directory",
    ]
    assert "Traceback" not in result.output


def test_an_error_in_one_file_keeps_the_json_of_the_others(tmp_path: Path, bad_file: Path) -> None:
    broken = tmp_path / "broken.sql"
    broken.write_text("SELECT 'unterminated")
    result = run(str(bad_file), str(broken), "--format", "json")
    assert result.exit_code == EXIT_ERROR
    assert [finding["path"] for finding in json.loads(result.stdout)] == [str(bad_file)] * 2
    assert f"hdq lint: error: {broken}:1:" in result.stderr


def test_fix_write_leaves_a_file_that_does_not_parse(tmp_path: Path, bad_file: Path) -> None:
    broken = tmp_path / "broken.sql"
    broken.write_text("SELECT * FROM vector_search('t', 'v', 'q', 3) LIMIT 3; SELECT (")
    result = run(str(broken), str(bad_file), "--fix", "--write")
    assert result.exit_code == EXIT_ERROR
    assert broken.read_text().endswith("SELECT (")
    assert "ORDER BY _distance ASC LIMIT 3" in bad_file.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-", "-"], "'-' (stdin) can be given only once"),
        (["{file}", "-", "--fix", "--write"], "--write needs a FILE, not stdin"),
        (["{file}", "{file}", "--fix"], "--fix without --write prints the fixed SQL of one FILE"),
        (["{dir}", "--fix"], "--fix without --write prints the fixed SQL of one FILE"),
        (["{empty}"], "directory '{empty}' holds no *.sql file"),
        (["{dir}", "--write"], "--write only applies with --fix"),
    ],
)
def test_bad_combinations_of_paths_exit_two(
    tmp_path: Path, bad_file: Path, args: list[str], message: str
) -> None:
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "readme.txt").write_text("no SQL here")
    names = {"file": str(bad_file), "dir": str(tmp_path), "empty": str(empty)}
    arguments = ["lint", *(arg.format(**names) for arg in args)]
    result = CliRunner().invoke(main, arguments, input=CLEAN, catch_exceptions=False)
    assert result.exit_code == EXIT_ERROR
    assert result.stderr.startswith("hdq lint: error: ")
    assert message.format(**names) in result.stderr.splitlines()[0]
    assert result.stdout == ""
    assert bad_file.read_text() == BAD


def test_an_unreadable_directory_is_named(
    tmp_path: Path, bad_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    locked = root / "locked"
    locked.mkdir(parents=True)
    (root / "ok.sql").write_text(CLEAN)
    real_scandir = os.scandir

    def scandir(path: str) -> Any:  # as without read permission, even when run as root
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = run(str(root), str(bad_file))
    assert result.exit_code == EXIT_ERROR
    assert locations(result.stdout) == [f"{bad_file}:{where}" for where in BAD_LOCATIONS]
    assert result.stderr.splitlines() == [
        f"hdq lint: error: cannot read directory {str(locked)!r}: Permission denied",
        f"{bad_file}: 2 findings (2 fixable with --fix)",
    ]
