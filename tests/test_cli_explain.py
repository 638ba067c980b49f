"""``hdq explain``: SQL (or JSON) alone on stdout, notes on stderr, named exit codes."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
import sqlglot
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from sqlglot import exp

from hotdata_retrieval.cli import EXIT_INVALID_PLAN, EXIT_OK, EXIT_USAGE, main
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.plan.document import PLAN_JSON_SCHEMA, plan_from_document, plan_to_document
from hotdata_retrieval.plan.filters import And, Comparison, InList, IsNull
from hotdata_retrieval.plan.names import TableName
from hotdata_retrieval.plan.search import (
    DEFAULT_DEPTH,
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
    VectorSearch,
)
from tests.strategies import plans

DOCS = Path(__file__).resolve().parent.parent / "docs"

VECTOR = "[0.12, -0.5, 0.33]"
TEXT = ["--table", "docs", "--text-column", "body", "--query", "error E1234"]
NEAREST = ["--table", "docs", "--vector-column", "embedding", "--vector", VECTOR]
HYBRID = [
    "--table", "docs", "--text-column", "body", "--vector-column", "embedding",
    "--query", "error E1234", "--vector", VECTOR,
]  # fmt: skip

BM25 = Bm25Search(table="docs", column="body", query_text="error E1234")
KNN = NearestNeighborSearch(table="docs", column="embedding", query_vector=[0.12, -0.5, 0.33])


@pytest.fixture(autouse=True)
def no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No database where ``hdq explain`` would look for one (``.hdq`` of the current directory,
    ``$HDQ_DATABASE``): a column left out is an error here, unless a test loads a table."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)


def hdq(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, ["explain", *args], input=input)


def ok(*args: str, input: str | None = None) -> Result:
    result = hdq(*args, input=input)
    assert result.exit_code == EXIT_OK, (result.stdout, result.stderr, result.exception)
    return result


def invalid(*args: str, input: str | None = None) -> str:
    """Run a command that must fail with exit 1; return its one-line message."""
    result = hdq(*args, input=input)
    assert result.exit_code == EXIT_INVALID_PLAN, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("hdq explain: error: ")
    assert "Traceback" not in result.stderr
    return lines[0].removeprefix("hdq explain: error: ")


def usage(*args: str, input: str | None = None) -> str:
    """Run a command that must fail with a usage error (exit 2); return stderr."""
    result = hdq(*args, input=input)
    assert result.exit_code == EXIT_USAGE, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Usage:" in result.stderr
    return result.stderr


def test_exit_codes_are_named() -> None:
    assert (EXIT_OK, EXIT_INVALID_PLAN, EXIT_USAGE) == (0, 1, 2)


def test_explain_is_a_command_of_hdq() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "explain" in result.stdout


# -- each mode ----------------------------------------------------------------------------


def test_text_mode() -> None:
    result = ok("--mode", "text", *TEXT, "--limit", "5")
    assert result.stdout == to_sql(SearchPlan(source=BM25, limit=5)) + "\n"


def test_semantic_mode() -> None:
    result = ok("--mode", "semantic", *TEXT)
    expected = SearchPlan(
        source=VectorSearch(table="docs", column="body", query_text="error E1234")
    )
    assert result.stdout == to_sql(expected) + "\n"
    assert "vector_search('default.public.docs', 'body', 'error E1234', 10)" in result.stdout


def test_nearest_mode() -> None:
    result = ok("--mode", "nearest", *NEAREST, "--metric", "l2", "--limit", "3")
    knn = NearestNeighborSearch(
        table="docs", column="embedding", query_vector=[0.12, -0.5, 0.33], metric="l2"
    )
    assert result.stdout == to_sql(SearchPlan(source=knn, limit=3)) + "\n"
    assert "l2_distance(embedding, ARRAY[0.12, -0.5, 0.33])" in result.stdout


def test_hybrid_mode() -> None:
    result = ok("--mode", "hybrid", *HYBRID, "--limit", "5")
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[BM25, KNN]), limit=5)
    assert result.stdout == to_sql(plan) + "\n"


def test_hybrid_sql_is_one_select_over_the_qualified_table() -> None:
    sql = ok(*HYBRID, "--limit", "5").stdout
    statements = sqlglot.parse(sql, read="postgres")
    assert len(statements) == 1
    tree = sqlglot.parse_one(sql, read="postgres")
    assert isinstance(tree, exp.Select)
    assert '"default".public.docs' in sql or "default.public.docs" in sql
    tables = [
        (table.catalog, table.db, table.name)
        for table in tree.find_all(exp.Table)
        if table.name == "docs"
    ]
    assert ("default", "public", "docs") in tables
    bm25 = [
        node
        for node in tree.find_all(exp.Anonymous, exp.Func)
        if node.sql_name().lower() == "bm25_search" or node.name.lower() == "bm25_search"
    ]
    assert len(bm25) == 1
    arguments = bm25[0].expressions
    assert len(arguments) == 4
    assert [argument.sql() for argument in arguments] == [
        "'default.public.docs'",
        "'body'",
        "'error E1234'",
        str(DEFAULT_DEPTH),
    ]


@pytest.mark.parametrize(
    ("args", "kinds"),
    [
        (TEXT, ["text"]),
        (NEAREST, ["nearest"]),
        (HYBRID, ["text", "nearest"]),
    ],
)
def test_the_mode_is_inferred_from_query_and_vector(args: list[str], kinds: list[str]) -> None:
    data = json.loads(ok(*args, "--format", "json").stdout)
    assert [branch["kind"] for branch in data["plan"]["branches"]] == kinds


def test_every_fusion_option() -> None:
    result = ok(
        *HYBRID, "--weights", "2,0.5", "--rank-constant", "10", "--depth", "50",
        "--include-branch-scores", "--columns", "id, title", "--key-column", "doc_id",
        "--limit", "7", "--offset", "3", "--metric", "ip",
    )  # fmt: skip
    knn = NearestNeighborSearch(
        table="docs", column="embedding", query_vector=[0.12, -0.5, 0.33], metric="dot"
    )
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[BM25, knn], weights=[2, 0.5], rank_constant=10, depth=50
        ),
        include_branch_scores=True,
        columns=["id", "title"],
        key_column="doc_id",
        limit=7,
        offset=3,
    )
    assert result.stdout == to_sql(plan) + "\n"


def test_filters_are_parsed_and_anded() -> None:
    result = ok(
        *TEXT, "--filter", "lang = 'en' AND (year >= 2020 OR tag IN ('a', 'b'))",
        "--filter", "deleted_at IS NULL",
    )  # fmt: skip
    expected = SearchPlan(
        source=BM25,
        filter=And(
            operands=[
                Comparison(column="lang", operator="=", value="en")
                & (
                    Comparison(column="year", operator=">=", value=2020)
                    | InList(column="tag", values=["a", "b"])
                ),
                IsNull(column="deleted_at"),
            ]
        ),
    )
    assert result.stdout == to_sql(expected) + "\n"


def test_one_filter_is_not_wrapped() -> None:
    data = json.loads(ok(*TEXT, "--filter", "lang = 'en'", "--format", "json").stdout)
    assert data["plan"]["filter"] == {"column": "lang", "op": "=", "value": "en"}


@pytest.mark.parametrize(
    ("args", "table"),
    [
        (["--table", "docs", "--catalog", "lake", "--schema", "raw"], ("lake", "raw", "docs")),
        (["--table", "sales.docs", "--catalog", "lake"], ("lake", "sales", "docs")),
        (["--table", "a.b.docs", "--catalog", "lake", "--schema", "raw"], ("a", "b", "docs")),
        (["--table", "Docs"], ("default", "public", "docs")),
    ],
)
def test_catalog_and_schema_complete_table_names(
    args: list[str], table: tuple[str, str, str]
) -> None:
    data = json.loads(ok(*args, "--text-column", "body", "--query", "q", "--format", "json").stdout)
    assert plan_from_document(data["plan"]).table == TableName(
        catalog=table[0], schema=table[1], name=table[2]
    )


def test_dialect_option() -> None:
    assert ok(*TEXT, "--dialect", "hotdata").stdout == ok(*TEXT).stdout


# -- output formats and streams -----------------------------------------------------------


def test_json_format() -> None:
    sql = ok(*HYBRID, "--limit", "5").stdout
    data = json.loads(ok(*HYBRID, "--limit", "5", "--format", "json").stdout)
    assert set(data) == {"sql", "plan", "dialect", "depth", "result_columns", "findings"}
    assert data["findings"] == []
    assert data["sql"] + "\n" == sql
    assert data["dialect"] == "hotdata"
    assert data["depth"] == DEFAULT_DEPTH == 200
    assert data["result_columns"] == ["score"]
    plan = SearchPlan(source=ReciprocalRankFusion(branches=[BM25, KNN]), limit=5)
    assert plan_from_document(data["plan"]) == plan
    assert data["plan"] == plan_to_document(plan)


def test_json_result_columns_of_one_branch() -> None:
    data = json.loads(ok(*NEAREST, "--format", "json").stdout)
    assert (data["depth"], data["result_columns"]) == (10, ["_distance"])


def test_notes_go_to_stderr_only() -> None:
    result = ok(*HYBRID, "--limit", "5")
    assert "--" not in result.stdout.split("\n")[0]
    notes = result.stderr.splitlines()
    assert notes and all(line.startswith("-- ") for line in notes)
    assert "-- branch text: BM25 full-text search over body" in notes
    assert (
        "-- branch nearest: cosine nearest-neighbour search over embedding (3 dimensions)" in notes
    )
    assert any(f"{DEFAULT_DEPTH} candidates per branch" in line for line in notes)
    assert any("default.public.docs" in line for line in notes)


def test_quiet_prints_no_notes() -> None:
    result = ok(*HYBRID, "--quiet")
    assert result.stderr == ""
    assert result.stdout.startswith("WITH ")


# -- plan documents -----------------------------------------------------------------------

DOCUMENT = {
    "table": "docs",
    "branches": [
        {"kind": "text", "column": "body", "query_text": "error E1234"},
        {"kind": "nearest", "column": "embedding", "query_vector": [0.12, -0.5, 0.33]},
    ],
    "limit": 5,
}


def test_plan_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(DOCUMENT), encoding="utf-8")
    assert ok("--plan", str(path)).stdout == ok(*HYBRID, "--limit", "5").stdout


def test_plan_from_stdin() -> None:
    result = ok("--plan", "-", input=json.dumps(DOCUMENT))
    assert result.stdout == ok(*HYBRID, "--limit", "5").stdout


def test_plan_with_catalog_and_schema() -> None:
    data = json.loads(
        ok("--plan", "-", "--catalog", "lake", "--schema", "raw", "--format", "json",
           input=json.dumps(DOCUMENT)).stdout
    )  # fmt: skip
    assert data["plan"]["table"] == "lake.raw.docs"


def test_json_output_is_a_plan_input() -> None:
    data = json.loads(ok(*HYBRID, "--weights", "1,2", "--format", "json").stdout)
    again = ok("--plan", "-", input=json.dumps(data["plan"]))
    assert again.stdout == data["sql"] + "\n"


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(plans())
def test_any_plan_document_explains_to_its_sql(plan: SearchPlan) -> None:
    result = hdq("--plan", "-", "--quiet", input=json.dumps(plan_to_document(plan)))
    assert result.exit_code == EXIT_OK, result.stderr
    # the bytes: the runner's text reads "\r\n" in a query text as a newline
    assert result.stdout_bytes.decode() == to_sql(plan) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"^--plan from stdin is not valid JSON: Expecting property name"),
        ("[]", r"^the plan document must be an object, got array$"),
        ('{"table": "docs", "branches": [], "table": "x"}', r"^duplicate key 'table'"),
        (json.dumps({**DOCUMENT, "limt": 5}), r"^unknown key 'limt' in the plan document"),
        (json.dumps({**DOCUMENT, "limit": 0}), r"^limit must be >= 1, got 0$"),
        (
            json.dumps({**DOCUMENT, "filter": {"column": "a", "op": "~", "value": 1}}),
            r"^filter: unknown comparison operator '~'",
        ),
    ],
)
def test_invalid_plan_documents(text: str, message: str) -> None:
    assert re.search(message, invalid("--plan", "-", input=text))


def test_plan_document_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(b'{"table": "\xff"}')
    assert invalid("--plan", str(path)).startswith(f"--plan {str(path)!r} is not UTF-8 text")


# -- the schema ---------------------------------------------------------------------------


def test_print_schema() -> None:
    result = ok("--print-schema")
    assert json.loads(result.stdout) == PLAN_JSON_SCHEMA
    assert result.stderr == ""


def test_print_schema_wins_over_other_options() -> None:
    assert json.loads(ok("--print-schema", "--mode", "text").stdout) == PLAN_JSON_SCHEMA


# -- vectors ------------------------------------------------------------------------------


def test_vector_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "vector.json"
    path.write_text(VECTOR, encoding="utf-8")
    args = ["--table", "docs", "--vector-column", "embedding", "--vector", f"@{path}"]
    assert ok(*args).stdout == ok(*NEAREST).stdout


def test_vector_from_stdin() -> None:
    args = ["--table", "docs", "--vector-column", "embedding", "--vector", "@-"]
    assert ok(*args, input=VECTOR).stdout == ok(*NEAREST).stdout


def test_vector_keeps_full_precision() -> None:
    value = 0.1 + 0.2
    args = ["--table", "docs", "--vector-column", "e", "--vector", json.dumps([value, 1e-300])]
    assert f"ARRAY[{value!r}, 1e-300]" in ok(*args).stdout


# -- exit 1: invalid plans ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*TEXT, "--limit", "0"], r"^--limit must be >= 1, got 0$"),
        ([*TEXT, "--offset", "-1"], r"^--offset must be >= 0, got -1$"),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", "[0.5, NaN]"],
            r"^--vector must hold finite numbers; position 2 of 2 is nan$",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", "[1, Infinity]"],
            r"^--vector must hold finite numbers; position 2 of 2 is inf$",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", "[]"],
            r"^--vector must not be empty$",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", "[1, 2"],
            r"^--vector is not a JSON array of numbers: Expecting",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", '{"a": 1}'],
            r"^--vector must be a JSON array of numbers, got a JSON object$",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", '[1, "2"]'],
            r"^--vector must hold numbers; position 2 of 2 is '2'$",
        ),
        (
            ["--table", "docs", "--vector-column", "e", "--vector", "[true, false]"],
            r"^--vector must hold numbers; position 1 of 2 is True$",
        ),
        ([*NEAREST, "--metric", "hamming"], r"^unknown --metric 'hamming'; expected one of cosine"),
        (
            ["--table", "a.b.c.d", "--text-column", "body", "--query", "q"],
            r"^table name 'a\.b\.c\.d' has 4 parts",
        ),
        (["--table", "a..b", "--text-column", "body", "--query", "q"], r"has an empty part"),
        ([*TEXT, "--catalog", 'x"y'], r"catalog must not contain a double quote"),
        ([*TEXT, "--filter", "title LIKE '%a%'"], r"^unsupported --filter \"title LIKE '%a%'\""),
        ([*TEXT, "--filter", "a = b"], r"a column may only be compared with a literal"),
        ([*TEXT, "--filter", "lang = "], r"^cannot parse --filter 'lang = '"),
        ([*TEXT, "--filter", "a = 1; DROP TABLE docs"], r"must be one expression, got 2"),
        ([*TEXT, "--filter", "a = 'x\nb' AND"], r"^cannot parse --filter"),
        ([*HYBRID, "--weights", "1,2,3"], r"^--weights holds 3 values for 2 branches"),
        ([*HYBRID, "--weights", "1"], r"^--weights holds 1 value for 2 branches;"),
        ([*HYBRID, "--weights", "1,-1"], r"^--weights must be >= 0, got -1$"),
        ([*HYBRID, "--weights", "0,0"], r"^at least one weight must be > 0"),
        ([*HYBRID, "--weights", "1,nan"], r"^--weights must be finite, got nan$"),
        ([*HYBRID, "--rank-constant", "0"], r"^--rank-constant must be > 0, got 0$"),
        ([*HYBRID, "--depth", "5"], r"^limit \+ offset = 10 reaches past --depth 5"),
        ([*HYBRID, "--depth", "0"], r"^--depth must be >= 1, got 0$"),
        ([*TEXT, "--columns", "id,id"], r"^column 'id' is projected twice$"),
        ([*TEXT, "--columns", "id,score"], r"^column 'score' collides with the result column"),
        ([*HYBRID, "--columns", "id,embedding"], r"^column 'embedding' is the searched vector"),
        ([*HYBRID, "--filter", "embedding IS NULL"], r"^--filter column 'embedding' is a searched"),
        ([*TEXT, "--key-column", ""], r"^key column must not be empty$"),
        (["--table", "docs", "--text-column", "body", "--query", "  "], r"must not be empty"),
        (["--table", "docs", "--text-column", 'a"b', "--query", "q"], r"double quote"),
    ],
)
def test_invalid_plans_exit_1_with_one_line(args: list[str], message: str) -> None:
    line = invalid(*args)
    assert re.search(message, line), line


def test_invalid_vector_file(tmp_path: Path) -> None:
    path = tmp_path / "vector.json"
    path.write_text("[]", encoding="utf-8")
    line = invalid("--table", "docs", "--vector-column", "e", "--vector", f"@{path}")
    assert line == "--vector must not be empty"
    path.write_text("nope", encoding="utf-8")
    line = invalid("--table", "docs", "--vector-column", "e", "--vector", f"@{path}")
    assert line.startswith(f"--vector file {str(path)!r} is not a JSON array of numbers")


# -- exit 2: usage errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--mode", "text", "--table", "docs", "--text-column", "body"],
            "--mode text needs --query",
        ),
        (["--mode", "text", "--table", "docs", "--query", "q"], "--mode text needs --text-column"),
        (["--mode", "semantic", "--table", "docs", "--query", "q"], "needs --text-column"),
        (["--mode", "nearest", "--table", "docs", "--vector", "[1]"], "needs --vector-column"),
        (["--mode", "nearest", "--table", "docs", "--vector-column", "e"], "needs --vector"),
        (["--mode", "hybrid", *TEXT], "--mode hybrid needs --vector-column"),
        (["--mode", "bm25", *TEXT], "Invalid value for '--mode'"),
        (["--table", "docs"], "give a query, QUERY or --query (text search), --vector"),
        (["--text-column", "body", "--query", "q"], "--table is required"),
        ([], "--table is required"),
        (["--mode", "text", *TEXT, "--vector", "[1]"], "--vector does not apply to --mode text"),
        ([*TEXT, "--metric", "l2"], "--metric does not apply to --mode text"),
        ([*TEXT, "--weights", "1"], "--weights does not apply to --mode text"),
        ([*NEAREST, "--rank-constant", "1"], "--rank-constant does not apply to --mode nearest"),
        ([*NEAREST, "--depth", "30"], "--depth does not apply to --mode nearest"),
        ([*TEXT, "--include-branch-scores"], "--include-branch-scores does not apply"),
        (["--mode", "semantic", *TEXT, "--vector-column", "e"], "--vector-column does not apply"),
        (["--plan", "-", "--table", "docs"], "--plan cannot be combined with --table"),
        (["--plan", "-", "--limit", "5"], "--plan cannot be combined with --limit"),
        (["--plan", "-", "--mode", "text", "--query", "q"], "with --mode, --query"),
        (["--plan", "/no/such/plan.json"], "Invalid value for '--plan'"),
        ([*TEXT, "--limit", "ten"], "Invalid value for '--limit'"),
        ([*TEXT, "--limit", "1.5"], "Invalid value for '--limit'"),
        ([*HYBRID, "--weights", "1,x"], "'1,x' is not a comma-separated list of numbers"),
        ([*HYBRID, "--weights", ""], "is not a comma-separated list of numbers"),
        ([*HYBRID, "--rank-constant", "k"], "'k' is not a number"),
        ([*TEXT, "--dialect", "oracle"], "unknown dialect 'oracle'; known dialects: duckdb, hot"),
        ([*TEXT, "--format", "yaml"], "Invalid value for '--format'"),
        (["--table", "docs", "--vector-column", "e", "--vector", "@/no/such/file"], "cannot read"),
        ([*TEXT, "--no-such-option"], "No such option"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    stderr = usage(*args, input="{}")
    assert message in stderr, stderr


# -- the real process ---------------------------------------------------------------------


def run_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", "explain", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_python_dash_m_prints_the_same_sql() -> None:
    process = run_module(*HYBRID, "--limit", "5")
    assert process.returncode == EXIT_OK, process.stderr
    assert process.stdout == ok(*HYBRID, "--limit", "5").stdout


def test_python_dash_m_invalid_plan_prints_one_line_and_no_traceback() -> None:
    process = run_module(*NEAREST, "--limit", "0")
    assert process.returncode == EXIT_INVALID_PLAN
    assert process.stdout == ""
    assert process.stderr == "hdq explain: error: --limit must be >= 1, got 0\n"


def test_python_dash_m_usage_error() -> None:
    process = run_module("--mode", "nope")
    assert process.returncode == EXIT_USAGE
    assert process.stdout == ""


# -- docs/cli.md --------------------------------------------------------------------------


def doc_examples() -> list[tuple[list[str], str]]:
    """Each ``$ hdq explain ...`` example in docs/cli.md, with the output shown under it."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    examples = []
    for block in re.findall(r"```console\n(.*?)```", text, re.DOTALL):
        command, _, output = block.partition("\n")
        if not command.startswith("$ hdq explain "):
            continue  # another command's example, run by tests/test_docs_examples.py
        examples.append((shlex.split(command.removeprefix("$ hdq explain ")), output))
    return examples


def test_docs_have_examples() -> None:
    assert len(doc_examples()) >= 4


@pytest.mark.parametrize(("args", "output"), doc_examples())
def test_docs_examples_are_current(args: list[str], output: str) -> None:
    result = hdq(*args)
    shown = result.stdout + (
        f"{result.stderr}[exit {result.exit_code}]\n" if result.exit_code else ""
    )
    assert shown == output, (
        "docs/cli.md is out of date: run the example and paste its output\n" + shown
    )


def test_docs_notes_are_current() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    shown = text.split("For the hybrid\nexample below they read:", 1)[1]
    block = re.search(r"```text\n(.*?)```", shown, re.DOTALL)
    assert block is not None
    args, _ = next(
        example
        for example in doc_examples()
        if "--vector-column" in example[0] and "--query" in example[0]
    )
    assert hdq(*args).stderr == block.group(1)


def test_help_lists_every_option_documented() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    command = main.get_command(click.Context(main), "explain")
    assert isinstance(command, click.Command)
    for param in command.params:
        for option in param.opts:
            if option.startswith("--") and option != "--help":
                assert f"`{option}" in text, f"docs/cli.md does not document {option}"


def test_compiled_sql_has_no_lint_findings_in_the_notes() -> None:
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "--mode",
            "hybrid",
            "--table",
            "docs",
            "--text-column",
            "body",
            "--vector-column",
            "embedding",
            "--query",
            "q",
            "--vector",
            "[1, 2]",
        ],
    )
    assert result.exit_code == 0
    assert "HDQ" not in result.stderr
