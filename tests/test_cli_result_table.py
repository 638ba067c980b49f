"""The hits table of ``hdq search``: it fits the terminal, numbers rows across pages, shows the
key once; and ``hdq load``'s hint for ``--key-column``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.load import likely_keys
from hotdata_retrieval.cli.search import _NARROWEST_TEXT, _fitted
from hotdata_retrieval.engines.local import LocalEngine

LONG = "the printer on the third floor jams whenever a long report is sent late at night " * 3


@pytest.fixture(scope="module")
def reviews(tmp_path_factory: pytest.TempPathFactory) -> Path:
    database = tmp_path_factory.mktemp("reviews") / "db"
    bodies = [f"printer jam number {index}: {LONG}" for index in range(12)]
    data = pa.table(
        {
            "review_id": [f"r-{index:03d}" for index in range(12)],
            "body": bodies,
            "summary": [f"jam report {index} " + "with details " * 8 for index in range(12)],
        }
    )
    with LocalEngine(database) as engine:
        engine.load_table("reviews", data, key_column="review_id", text_columns=["body"])
    return database


def search(database: Path, *args: str, columns: int = 80) -> list[str]:
    result = CliRunner().invoke(
        main,
        ["search", "printer jam", "--table", "reviews", "--database", str(database), *args],
        env={"COLUMNS": str(columns)},
    )
    assert result.exit_code == 0, result.stderr
    return result.stdout.splitlines()


def body_rows(lines: list[str]) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines if "│" in line]


@pytest.mark.parametrize("columns", [60, 80, 132])
def test_the_table_fits_the_width_one_line_per_hit(reviews: Path, columns: int) -> None:
    lines = search(reviews, "-k", "5", columns=columns)
    assert max(len(line) for line in lines) <= columns
    rows = body_rows(lines)
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5"]
    assert all(row[-1].endswith("…") for row in rows)  # cut, not wrapped


def test_a_wide_terminal_shows_more_of_each_text(reviews: Path) -> None:
    narrow = body_rows(search(reviews, "-k", "3", columns=80))
    wide = body_rows(search(reviews, "-k", "3", columns=200))
    assert all(len(w[-1]) > len(n[-1]) for w, n in zip(wide, narrow))


def test_row_numbers_continue_across_offset(reviews: Path) -> None:
    first = body_rows(search(reviews, "-k", "3"))
    second = body_rows(search(reviews, "-k", "3", "--offset", "3"))
    assert [row[0] for row in second] == ["4", "5", "6"]
    assert {row[1] for row in first}.isdisjoint(row[1] for row in second)


def test_the_key_is_shown_once_under_its_name(reviews: Path) -> None:
    lines = search(reviews, "-k", "2", columns=200)
    header = next(line for line in lines if "┃" in line)
    names = [cell.strip() for cell in header.split("┃")[1:-1]]
    assert names.count("review_id") == 1
    assert "key" not in names
    assert body_rows(lines)[0][1].startswith("r-")


@given(
    natural=st.lists(st.integers(min_value=1, max_value=300), min_size=1, max_size=8),
    budget=st.integers(min_value=0, max_value=1000),
)
def test_fitted_widths_share_the_budget(natural: list[int], budget: int) -> None:
    widths = _fitted(natural, budget)
    assert len(widths) == len(natural)
    assert all(width <= max(wanted, _NARROWEST_TEXT) for width, wanted in zip(widths, natural))
    assert all(width >= min(wanted, _NARROWEST_TEXT) for width, wanted in zip(widths, natural))
    if sum(natural) <= budget:
        assert widths == natural
    elif budget >= _NARROWEST_TEXT * len(natural) + sum(natural):
        assert sum(widths) <= budget


def test_load_names_a_likely_key_when_it_adds_an_id(tmp_path: Path) -> None:
    source = tmp_path / "reviews.csv"
    source.write_text("review_id,body\nr1,good\nr2,bad\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["load", str(source), "--no-embed", "--database", str(tmp_path / "db")]
    )
    assert result.exit_code == 0, result.stderr
    assert "--key-column review_id keys the rows by it" in result.stderr


def test_likely_keys_are_distinct_and_named_or_integer() -> None:
    data = pa.table(
        {
            "body": ["a", "b", "c"],
            "rating": [5, 5, 3],
            "row": [7, 8, 9],
            "sku_key": ["x", "y", "z"],
            "user_id": ["u", "u", "v"],
        }
    )
    assert likely_keys(data) == ["sku_key", "row"]
    assert likely_keys(data.slice(0, 1)) == []


def test_a_long_key_is_cut_and_leaves_room_for_the_text(tmp_path: Path) -> None:
    database = tmp_path / "long"
    keys = ["k" * 60 + str(index) for index in range(3)]
    with LocalEngine(database) as engine:
        engine.load_table(
            "reviews",
            pa.table({"id": keys, "body": [f"printer jam {LONG}"] * 3}),
            text_columns=["body"],
        )
    lines = search(database, "-k", "3", columns=80)
    assert max(len(line) for line in lines) <= 80
    rows = body_rows(lines)
    assert [row[0] for row in rows] == ["1", "2", "3"]
    assert all(row[1].startswith("kkkk") and row[1].endswith("…") for row in rows)
    assert all(len(row[-1]) >= 10 and row[-1].startswith("printer jam") for row in rows)


@pytest.mark.parametrize("columns", [10, 20, 30, 40])
def test_a_narrow_terminal_keeps_the_numbers_whole(reviews: Path, columns: int) -> None:
    rows = body_rows(search(reviews, "-k", "2", columns=columns))
    assert [row[0] for row in rows] == ["1", "2"]
    assert all(row[1].startswith("r-0") for row in rows)
    assert all(float(row[2]) > 0 for row in rows)
