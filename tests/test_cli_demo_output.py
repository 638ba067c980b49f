"""What ``hdq demo`` says it does: counts that agree (rows and the distinct texts its bar
counts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.demo import support_tickets
from hotdata_retrieval.engines.local.engine import _embedding_label


def ticket_counts() -> tuple[int, int]:
    bodies = support_tickets().column("body").to_pylist()
    return len(bodies), len(set(bodies))


def test_the_demo_counts_rows_and_the_distinct_texts_its_bar_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line per message
    rows, distinct = ticket_counts()
    assert distinct < rows  # the generator repeats a text: the counts differ
    result = CliRunner().invoke(
        main, ["demo", "--database", str(tmp_path / "db"), "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"Loading {rows} support tickets into ")
    assert f"embeddings of its {distinct} distinct texts" in first
    bar = next(line for line in result.stderr.splitlines() if "embedding tickets.body" in line)
    assert f"embedding tickets.body ({distinct} texts of {rows} rows)" in bar
    assert f"{distinct}/{distinct}" in bar


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
    assert _embedding_label("t", "body", hashes, count) == label
