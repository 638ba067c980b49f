"""Every ``hdq`` command reports an error the same way: ``hdq <command>: error: <message>`` on
the first line of standard error (a usage error then adds its usage line and help hint),
naming the user's options and arguments, never a plan's internal fields."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli._errors import in_option_terms
from hotdata_retrieval.cli.exit_codes import EXIT_INVALID_PLAN, EXIT_USAGE
from hotdata_retrieval.cli.lint import EXIT_ERROR
from hotdata_retrieval.errors import PlanError

INTERNAL_FIELDS = (
    "query_text",
    "query_vector",
    "text_column",
    "vector_column",
    "key_column",
    "rank_constant",
    "min_score",
    "embed_query",
)
"""Names of plan fields and library arguments that the command line spells otherwise."""


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("errors")
    source = directory / "notes.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": number, "body": body}) + "\n"
            for number, body in enumerate(["red fox", "blue fox", "green owl"], start=1)
        )
    )
    path = directory / "db"
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", str(path), "--embedder", "hashing"]
    )
    assert result.exit_code == 0, result.stderr
    return path


NEAREST = ["--table", "docs", "--vector-column", "embedding"]
SEARCH = ["--table", "notes"]

# (command path, arguments after it, exit code, a piece the message must hold)
CASES: list[tuple[str, list[str], int, str]] = [
    ("explain", ["--table", "docs", "--text-column", "body", "--query", " "], 1, "--query"),
    ("explain", [*NEAREST, "--vector", "[0.5, NaN]"], 1, "--vector must hold finite"),
    ("explain", [*NEAREST, "--vector", "[]"], 1, "--vector must not be empty"),
    ("explain", [*NEAREST, "--vector", "[1, 2]", "--key-column", ""], 1, "key column"),
    ("explain", ["--table", "docs", "--query", "q", "--text-column", "b", "--limit", "0"], 1,
     "--limit must be >= 1"),
    ("explain", ["--mode", "text", "--table", "docs"], 2, "--mode text needs --text-column"),
    ("explain", [*NEAREST, "--vector", "[1, 2]", "--text-column", "b", "--query", "q",
                 "--fusion", "dbsf", "--rank-constant", "3"], 1,
     "its options: --weights, --alpha, --depth, --min-score"),
    ("explain", ["--table", "docs", "--query", "q", "--text-column", "b", "--limit", "x"], 2,
     "'--limit'"),
    ("search", ["", *SEARCH], 1, "QUERY must not be empty"),
    ("search", ["fox", *SEARCH, "-k", "0"], 1, "--limit must be >= 1"),
    ("search", ["fox", *SEARCH, "--query", " "], 1, "--query must not be empty, got ' '"),
    ("search", ["fox", *SEARCH, "--query", "!!!"], 1, "--query holds no word to search for"),
    ("search", ["fox", *SEARCH, "--columns", "id,,body"], 2,
     "Invalid value for '--columns': 'id,,body' holds an empty column name"),
    ("explain", ["--table", "docs", "--query", "q", "--text-column", "b", "--columns", "id,"], 2,
     "Invalid value for '--columns': 'id,' holds an empty column name"),
    ("mcp", ["--table", "notes", "--columns", ","], 2,
     "Invalid value for '--columns': ',' holds an empty column name"),
    ("search", ["fox", *SEARCH, "--filter", "body LIKE '%a%'"], 1, "--filter"),
    ("search", ["fox", *SEARCH, "--filter", "body = 5"], 1,
     "--filter compares column 'body', which holds text values, with 5, a number"),
    ("search", ["fox", *SEARCH, "--mode", "hybrid", "--filter", "id > 'abc'"], 1,
     "--filter compares column 'id', which holds integer values, with 'abc'"),
    ("search", ["fox", *SEARCH, "--mode", "hybrid", "--rank-constant", "0"], 1,
     "--rank-constant must be > 0"),
    ("search", ["fox", *SEARCH, "--mode", "hybrid", "--weights", "1,nan"], 1,
     "--weights must be finite"),
    ("search", ["fox", *SEARCH, "--mode", "hybrid", "--weights=-1,1"], 1,
     "--weights must be >= 0"),
    ("search", ["fox", *SEARCH, "--mode", "hybrid", "--alpha", "0.5"], 1,
     "its options: --weights, --rank-constant, --depth, --min-score"),
    ("search", ["fox", *SEARCH, "--mode", "text", "--text-column", "nope"], 1, "'nope'"),
    ("search", ["fox", "--table", "nope"], 1, "'default.public.nope' not found"),
    ("search", ["fox", *SEARCH, "--mode", "fuzzy"], 2, "'--mode'"),
    ("load", ["missing.jsonl"], 2, "'SOURCE'"),
    ("load", ["{bad}"], 1, "bad.jsonl"),
    ("load", ["{directory}"], 1,
     "is not a BEIR directory (no corpus.jsonl); to load one file, name it"),
    ("load", ["{good}", "--table", "fresh", "--text-column", "nope"], 1,
     "--text-column 'nope' is not a column of"),
    ("load", ["{good}", "--table", "fresh", "--embed-column", "nope"], 1,
     "--embed-column 'nope' is not a column of"),
    ("demo", ["-k", "0"], 2, "'--limit'"),
    ("lint", ["missing.sql"], EXIT_ERROR, "cannot read 'missing.sql'"),
    ("lint", ["{unparsable}"], EXIT_ERROR, "parse error"),
    ("mcp", ["--table", "nope"], 1, "'default.public.nope' not found"),
    ("ddn serve", ["--table", "notes", "--top-k", "9", "--max-top-k", "5"], 2, "--top-k"),
    ("ddn metadata", ["--table", "notes", "--filter-column", "nope"], 1, "--filter-column"),
    ("spec export", ["{file}/cases"], 1, "cannot write cases"),
    ("spec verify", ["--cases", "{file}"], 2, "'--cases'"),
    ("tune", ["--queries", "{file}", "--qrels", "{file}", "--methods", "linear"], 2,
     "'linear' is not a fusion method"),
    ("tune", ["--queries", "{file}", "--qrels", "{file}", "--table", "notes"], 1, "not JSON"),
    ("tune", ["--queries", "{file}", "--qrels", "{file}", "--vector-shares", "0.5,1.5"], 2,
     "'--vector-shares': 1.5 is not a share between 0 and 1"),
    ("", ["serch"], 2, "No such command 'serch'"),
    ("", ["--bogus"], 2, "No such option"),
]  # fmt: skip


def _arguments(command: str, arguments: list[str], database: Path, tmp_path: Path) -> list[str]:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "body": "x"}\nnot json\n')
    unparsable = tmp_path / "q.sql"
    unparsable.write_text("SELECT FROM WHERE (")
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": 1, "title": "x", "body": "y"}\n')
    regular = tmp_path / "file"
    regular.write_text("x")
    directory = tmp_path / "exports"
    directory.mkdir(exist_ok=True)
    (directory / "notes.csv").write_text("id,body\n1,x\n")
    replaced = [
        item.replace("{bad}", str(bad))
        .replace("{unparsable}", str(unparsable))
        .replace("{good}", str(good))
        .replace("{file}", str(regular))
        .replace("{directory}", str(directory))
        for item in arguments
    ]
    needs_database = command in (
        "search",
        "load",
        "demo",
        "mcp",
        "tune",
        "ddn serve",
        "ddn metadata",
    )
    return [
        *command.split(),
        *replaced,
        *(["--database", str(database)] if needs_database else []),
    ]


@pytest.mark.parametrize(
    ("command", "arguments", "code", "piece"),
    CASES,
    ids=[f"{c or 'hdq'}:{'_'.join(a)[:30]}" for c, a, _, _ in CASES],
)
def test_every_error_has_one_prefix_and_names_the_users_option(
    database: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    arguments: list[str],
    code: int,
    piece: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    full = _arguments(command, arguments, database, tmp_path)
    result = CliRunner().invoke(main, full)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    first, *rest = result.stderr.splitlines()
    prefix = " ".join(["hdq", *command.split()]) + ": error: "
    assert first.startswith(prefix), result.stderr
    assert piece in first
    for field in INTERNAL_FIELDS:
        assert field not in first
    assert "Error:" not in result.stderr and "Traceback" not in result.stderr
    if code == EXIT_USAGE and command != "lint":
        assert rest[0].startswith("Usage: ")
        assert rest[-1] == f"Try '{prefix.removesuffix(': error: ')} --help' for help."
    elif command != "lint":
        assert rest == [], result.stderr


def _command_paths(group: click.Group, prefix: str = "") -> set[str]:
    """Every command under ``group``, each loaded (the commands are imported on use, so
    ``group.commands`` holds only those some earlier test ran)."""
    paths = set()
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            paths |= _command_paths(command, f"{path} ")
        else:
            paths.add(path)
    return paths


def test_the_cases_cover_every_command() -> None:
    assert _command_paths(main) <= {command for command, _, _, _ in CASES}


def test_the_prefix_names_hdq_however_it_was_started(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", "search", "x", "--table", "t",
         "--database", str(tmp_path / "none")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert process.returncode == EXIT_USAGE
    first = process.stderr.splitlines()[0]
    assert first == f"hdq search: error: no database at {tmp_path / 'none'}; create one with " + (
        "'hdq load' or 'hdq demo'"
    )


@pytest.mark.parametrize(
    ("message", "field", "expected"),
    [
        ("query_text must not be empty", "query_text", "QUERY must not be empty"),
        # a quoted value is the user's own text: left as written
        ("query_text 'query_text' is\nbad", "query_text", "QUERY 'query_text' is bad"),
        ('filter "a filter" is bad', "filter", '--filter "a filter" is bad'),
        ("the text_column_x and text_column", "text_column", "the text_column_x and --text"),
        ("limit must be >= 1", "offset", "limit must be >= 1"),  # another field: unchanged
    ],
)
def test_in_option_terms(message: str, field: str, expected: str) -> None:
    options = {"query_text": "QUERY", "filter": "--filter", "text_column": "--text"}
    assert in_option_terms(PlanError(message, field=field), options) == expected


def test_in_option_terms_leaves_other_errors_alone() -> None:
    assert in_option_terms(ValueError("query_text\nx"), {"query_text": "Q"}) == "query_text x"
    assert EXIT_INVALID_PLAN == 1


@pytest.mark.parametrize(
    ("typed", "prefix", "meant"),
    [
        (["serch", "x"], "hdq", "search"),
        (["explian"], "hdq", "explain"),
        (["laod", "notes.csv"], "hdq", "load"),
        (["lnit"], "hdq", "lint"),
        (["tun"], "hdq", "tune"),
        (["spec", "verfy"], "hdq spec", "verify"),
    ],
)
def test_a_mistyped_command_is_answered_with_the_command_meant(
    typed: list[str], prefix: str, meant: str
) -> None:
    result = CliRunner().invoke(main, typed)
    assert result.exit_code == EXIT_USAGE
    first = result.stderr.splitlines()[0]
    assert first == (
        f"{prefix}: error: No such command {typed[-1] if prefix != 'hdq' else typed[0]!r}. "
        f"Did you mean {meant!r}?"
    )


def test_a_command_like_none_gets_no_suggestion() -> None:
    result = CliRunner().invoke(main, ["zzz"])
    assert result.exit_code == EXIT_USAGE
    assert result.stderr.splitlines()[0] == "hdq: error: No such command 'zzz'."


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (["search", "x", "--table", "t", "--lim", "3"], "--limit"),
        (["explain", "--tabel", "t"], "--table"),
        (["load", "x.csv", "--text-colum", "body"], "--text-column"),
        (["--hlep"], "--help"),
    ],
)
def test_a_mistyped_option_is_answered_with_the_option_meant_first(
    typed: list[str], meant: str
) -> None:
    result = CliRunner().invoke(main, typed)
    assert result.exit_code == EXIT_USAGE
    first = result.stderr.splitlines()[0]
    command = "hdq" if typed[0].startswith("-") else f"hdq {typed[0]}"
    mistyped = next(word for word in typed if word.startswith("--") and word != "--table")
    assert first.startswith(f"{command}: error: No such option {mistyped!r}. Did you mean ")
    suggested = first.split("Did you mean ", 1)[1].removeprefix("one of: ")
    assert suggested.startswith(repr(meant))  # the closest first


@pytest.mark.parametrize("command", ["search", "explain"])
def test_a_query_without_a_word_says_what_to_do_at_the_command_line(
    command: str, database: Path
) -> None:
    """The library tells its caller to pass ``allow_empty=True``; no command has that
    option, so the command says what to do with its own arguments (docs/cli.md, "Errors":
    never a field inside the library)."""
    options = {
        "search": ["--table", "notes", "--database", str(database)],
        "explain": ["--table", "notes", "--text-column", "body"],
    }[command]
    result = CliRunner().invoke(main, [command, "🙂", *options])
    assert result.exit_code == EXIT_INVALID_PLAN
    assert result.stderr.splitlines()[0] == (
        f"hdq {command}: error: QUERY holds no word to search for, got '🙂'; give a query with "
        "a word to search for (letters or digits)"
    )
    assert "allow_empty" not in result.stderr


@pytest.mark.parametrize("blank", ["   ", "\t \t"])
def test_a_blank_query_is_echoed_as_given(blank: str, database: Path) -> None:
    result = CliRunner().invoke(main, ["search", blank, *SEARCH, "--database", str(database)])
    assert result.exit_code == EXIT_INVALID_PLAN
    assert result.stderr.splitlines()[0] == (
        f"hdq search: error: QUERY must not be empty, got {blank!r}"
    )


def test_advice_naming_a_parameter_the_command_lacks_is_left_out() -> None:
    error = PlanError(
        "x_column is bad", field="x_column", mentions=("knob",), advice="pass knob=True"
    )
    assert str(error) == "x_column is bad; pass knob=True"
    assert in_option_terms(error, {"x_column": "--x"}) == "--x is bad"
    # a command that has the option keeps the advice, in its terms
    both = {"x_column": "--x", "knob": "--knob"}
    assert in_option_terms(error, both) == "--x is bad; pass --knob=True"


@pytest.mark.parametrize(
    "arguments",
    [
        ["explain", "--table", "docs", "--text-column", "body", "--query", "x"],
        ["spec", "export", "cases"],
        ["lint", "query.sql"],
    ],
)
def test_a_closed_standard_output_is_an_error_not_output_lost(
    arguments: list[str], tmp_path: Path
) -> None:
    (tmp_path / "query.sql").write_text("SELECT 1\n")
    process = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", *arguments],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False,
        cwd=tmp_path, preexec_fn=lambda: os.close(1),  # the child closes its fd 1 before exec
    )  # fmt: skip
    assert "Traceback" not in process.stderr
    assert process.returncode == EXIT_USAGE
    command = " ".join(arguments[: 2 if arguments[0] == "spec" else 1])
    assert process.stderr.splitlines()[0] == (
        f"hdq {command}: error: standard output is closed (>&-): the command writes its "
        "results there; redirect it to /dev/null to discard them"
    )
    assert not (tmp_path / "cases").exists()


@pytest.mark.parametrize("what", ["source", "database"])
def test_a_path_that_is_not_utf8_is_named_in_one_line(what: str, tmp_path: Path) -> None:
    # A file name's bytes that are not UTF-8 reach Python as lone surrogates
    # (surrogateescape), which pyarrow cannot open; said in one line, not a traceback.
    good = tmp_path / "notes.jsonl"
    good.write_text('{"id": 1, "body": "red fox"}\n')
    odd = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9")
    if what == "source":
        Path(odd + ".jsonl").write_bytes(good.read_bytes())
        arguments = ["load", odd + ".jsonl", "--database", str(tmp_path / "db")]
        hint = "SOURCE"
    else:
        arguments = ["load", str(good), "--database", odd]
        hint = "--database"
    result = CliRunner().invoke(main, [*arguments, "--no-embed"])
    assert "Traceback" not in result.output
    assert result.exit_code == EXIT_USAGE
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"hdq load: error: Invalid value for '{hint}'")
    assert "caf\\xe9" in first and "is not UTF-8" in first


@pytest.mark.parametrize(
    ("arguments", "target"),
    [
        (["lint", "{sql}"], "hotdata_retrieval.cli.lint._lint_file"),
        (["explain", "--table", "docs", "--text-column", "b", "--query", "q"],
         "hotdata_retrieval.cli.explain.to_sql"),
    ],
)  # fmt: skip
def test_ctrl_c_exits_130_on_every_command(
    arguments: list[str], target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # hdq lint's exit 1 means findings: an interrupted run must not look like one.
    sql = tmp_path / "q.sql"
    sql.write_text("SELECT 1\n")

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(target, interrupted)
    result = CliRunner().invoke(main, [part.format(sql=sql) for part in arguments])
    assert result.exit_code == 130
    assert result.stderr == "interrupted\n"
    assert result.stdout == ""


def test_an_output_encoding_that_cannot_write_the_result_is_one_line(tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-m", "hotdata_retrieval", "explain", "--table", "docs",
         "--text-column", "body", "--query", "na\u00efve \u2713"],
        capture_output=True, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONIOENCODING": "latin-1"},
    )  # fmt: skip
    stderr = process.stderr.decode("ascii")
    assert "Traceback" not in stderr
    assert process.returncode == EXIT_INVALID_PLAN
    assert stderr.splitlines()[-1] == (
        "hdq explain: error: the output's encoding, latin-1, cannot write U+2713: set "
        "PYTHONIOENCODING=utf-8, or use a UTF-8 locale"
    )


def test_a_cursor_with_an_offset_names_both_options(database: Path) -> None:
    common = ["search", "fox", "--table", "notes", "--database", str(database), "-k", "1"]
    first = CliRunner().invoke(main, [*common, "--format", "json"])
    assert first.exit_code == 0, first.stderr
    after = json.loads(first.stdout)["next_after"]
    refused = CliRunner().invoke(main, [*common, "--after", after, "--offset", "1"])
    assert refused.exit_code == EXIT_INVALID_PLAN
    assert refused.stderr.splitlines()[0] == (
        "hdq search: error: a cursor continues past the last row of a page, where --offset "
        "would skip rows; pass --after or --offset, not both"
    )
