"""What ``hdq demo`` and ``hdq load`` say they do: counts that agree (rows and the distinct
texts a bar counts), and where the database they write is and how to remove it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.demo import support_tickets
from hotdata_retrieval.engines.local._embedding_cache import embedding_label


def ticket_counts() -> tuple[int, int]:
    bodies = support_tickets().column("body").to_pylist()
    return len(bodies), len(set(bodies))


def test_the_demo_counts_rows_and_the_distinct_texts_its_bar_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message, however long its path
    rows, distinct = ticket_counts()
    assert distinct < rows  # the generator repeats a text: the counts differ
    result = CliRunner().invoke(
        main, ["demo", "--database", str(tmp_path / "db"), "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"Loading {rows} support tickets into ")
    assert f"embeddings of its {distinct} distinct texts" in first
    # off a terminal, a progress line per few seconds: the last one says the whole count
    bars = [line for line in result.stderr.splitlines() if "embedding tickets.body" in line]
    assert bars and all(
        f"embedding tickets.body ({distinct} texts of {rows} rows)" in bar for bar in bars
    )
    assert f"{distinct}/{distinct}" in bars[-1]


def test_the_demo_json_carries_the_counts(tmp_path: Path) -> None:
    rows, distinct = ticket_counts()
    result = CliRunner().invoke(
        main,
        ["demo", "--database", str(tmp_path / "db"), "--embedder", "hashing", "--format", "json"],
    )
    assert result.exit_code == EXIT_OK, result.stderr
    assert json.loads(result.stdout)["loaded"] == {
        "table": "tickets",
        "rows": rows,
        "distinct_texts": distinct,
    }


@pytest.mark.parametrize(
    ("hashes", "count", "label"),
    [
        (["a", "b", "c"], 3, "embedding t.body"),
        (["a", "a", "b"], 2, "embedding t.body (2 texts of 3 rows)"),
        (["a", None, "b"], 2, "embedding t.body (2 texts of 3 rows)"),
        (["a", "b", "c"], 1, "embedding t.body (1 new text of 3 rows)"),
        (["a", "a", "b", "c"], 2, "embedding t.body (2 new texts of 4 rows)"),
    ],
)
def test_the_bar_label_relates_its_count_to_the_rows(
    hashes: list[str | None], count: int, label: str
) -> None:
    assert embedding_label("t", "body", hashes, count) == label


REPOSITORY = Path(__file__).resolve().parent.parent


def note(database: Path, verb: str) -> str:
    where = database.resolve()
    return f"{verb} the local database {where}; to remove it: rm -r {shlex.quote(str(where))}"


def test_the_demo_says_where_its_database_is_and_how_to_remove_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    monkeypatch.setenv("COLUMNS", "300")
    for verb in ("created", "updated"):
        result = CliRunner().invoke(main, ["demo", "--embedder", "hashing", "-k", "1"])
        assert result.exit_code == EXIT_OK, result.stderr
        lines = result.stdout.splitlines()
        assert f" into {tmp_path / '.hdq'}: " in lines[0]  # the default, made absolute
        assert lines[-1] == note(tmp_path / ".hdq", verb)
    document = CliRunner().invoke(
        main, ["demo", "--embedder", "hashing", "-k", "1", "--format", "json"]
    )
    assert json.loads(document.stdout)["database"] == str(tmp_path / ".hdq")
    assert document.stderr.splitlines()[-1] == note(tmp_path / ".hdq", "updated")


def test_load_says_where_its_database_is_and_how_to_remove_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HDQ_DATABASE", raising=False)
    source = tmp_path / "notes.jsonl"
    source.write_text(json.dumps({"id": 1, "body": "red fox"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["load", "notes.jsonl", "--no-embed"])
    assert result.exit_code == EXIT_OK, result.stderr
    assert result.stderr.splitlines()[-1] == note(tmp_path / ".hdq", "created")
    spaced = tmp_path / "my data"
    result = CliRunner().invoke(
        main,
        ["load", "notes.jsonl", "--no-embed", "--database", "my data", "--format", "json"],
    )
    assert result.exit_code == EXIT_OK, result.stderr
    assert json.loads(result.stdout)["database"] == str(spaced)
    assert result.stderr.splitlines()[-1].endswith(f"rm -r '{spaced}'")  # quoted for a shell


def test_the_projects_gitignore_ignores_the_database() -> None:
    lines = (REPOSITORY / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".hdq/" in lines


def test_the_demo_does_not_replace_a_tickets_table_of_other_data(tmp_path: Path) -> None:
    database = tmp_path / "db"
    source = tmp_path / "mine.jsonl"
    source.write_text(json.dumps({"id": 1, "body": "my own ticket"}) + "\n")
    runner = CliRunner()
    loaded = runner.invoke(
        main, ["load", str(source), "--table", "tickets", "--database", str(database)]
    )
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    demo = ["demo", "--database", str(database), "--embedder", "hashing", "--format", "json"]
    refused = runner.invoke(main, demo)
    assert refused.exit_code != EXIT_OK
    assert refused.stderr.startswith(
        f"hdq demo: error: table 'tickets' in {database.resolve()} holds other data"
    )
    kept = runner.invoke(
        main,
        [
            "search",
            "ticket",
            "--table",
            "tickets",
            "--database",
            str(database),
            "--mode",
            "text",
            "--format",
            "json",
        ],
    )
    assert kept.exit_code == EXIT_OK, kept.stderr
    assert [hit["key"] for hit in json.loads(kept.stdout)["hits"]] == [1]
    assert runner.invoke(main, demo).exit_code != EXIT_OK  # still refused
    assert runner.invoke(main, [*demo, "--replace"]).exit_code == EXIT_OK
    assert runner.invoke(main, demo).exit_code == EXIT_OK  # its own table: runs again


def test_the_demo_does_not_drop_a_column_of_the_users_from_its_table(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tickets = support_tickets()
    source = tmp_path / "tickets.parquet"
    pq.write_table(tickets.append_column("my_notes", pa.array(["x"] * tickets.num_rows)), source)
    database = tmp_path / "db"
    runner = CliRunner()
    loaded = runner.invoke(
        main,
        [
            "load",
            str(source),
            "--table",
            "tickets",
            "--database",
            str(database),
            "--text-column",
            "body",
            "--no-embed",
        ],
    )
    assert loaded.exit_code == EXIT_OK, loaded.stderr
    refused = runner.invoke(main, ["demo", "--database", str(database), "--embedder", "hashing"])
    assert refused.exit_code != EXIT_OK
    assert "holds other data" in refused.stderr


@pytest.mark.parametrize("columns", [80, 100])
def test_every_demo_table_fits_the_terminal_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    """The hybrid tables carry two rank columns more than the others: at 80 columns their
    ranking header says only ``score``, rather than the table losing its right edge."""
    monkeypatch.setenv("COLUMNS", str(columns))
    result = CliRunner().invoke(
        main, ["demo", "--database", str(tmp_path / "db"), "--embedder", "hashing"]
    )
    assert result.exit_code == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert max(len(line) for line in lines) <= columns
    tops = [line for line in lines if line.startswith("┏")]
    assert tops and all(line.endswith("┓") for line in tops)
    headers = [line for line in lines if line.startswith("┃ #")]
    assert any("text rank" in line for line in headers)  # the hybrid tables are there


def test_the_demos_closing_hint_is_one_whole_command_that_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a terminal (a log), however narrow the width and long the path, the suggested
    command stands on a line of its own, unwrapped, quoted for a shell: copied, it runs."""
    monkeypatch.setenv("COLUMNS", "40")
    database = tmp_path / "a directory with spaces" / "and a rather long name for the demo"
    result = CliRunner().invoke(
        main, ["demo", "--database", str(database), "--embedder", "hashing", "-k", "1"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    lines = result.stdout.splitlines()
    hint = lines.index(next(line for line in lines if line.endswith("Try:")))
    command = shlex.split(lines[hint + 1])
    assert command[:2] == ["hdq", "search"]
    assert command[command.index("--database") + 1] == str(database)
    ran = CliRunner().invoke(main, command[1:])
    assert ran.exit_code == EXIT_OK, ran.stderr
    assert "sync" in ran.stdout.lower()  # the hits of the suggested query, and its SQL
