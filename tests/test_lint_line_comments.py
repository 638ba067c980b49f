"""Lint, ``--fix`` and the local engine read a ``--`` comment as DataFusion does: it ends at a
line feed, never at a carriage return alone (issue 9).

DataFusion's SQL parser (``datafusion.sql_parser.dialect`` = ``generic``, its default) ends a
``--`` comment only at ``\\n``; sqlglot's PostgreSQL tokenizer also ends one at ``\\r``. With
``\\r``-only line endings the linter read the next lines as code while the engine read them
as comment, and ``--fix`` inserted an ``ORDER BY`` the engine never saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import datafusion
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from sqlglot import exp

from hotdata_retrieval.cli.lint import EXIT_FINDINGS
from hotdata_retrieval.cli.lint import lint as lint_command
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.lint import SqlParseError, fix, lint
from hotdata_retrieval.lint.parsing import hidden_by_line_comments, parse_statements
from tests.test_lint_fix_bytes import sql_files

SEARCH = "bm25_search('default.public.docs', 'body', 'apple', 8)"

# -- what DataFusion does (the reference every other test compares with) ------------------


def engine_columns(sql: str) -> list[str]:
    """The output columns DataFusion plans for ``sql`` (its default SQL dialect)."""
    return list(datafusion.SessionContext().sql(sql).schema().names)


def lint_columns(sql: str) -> list[str]:
    """The output columns of the one statement the linter parses in ``sql``."""
    (statement,) = parse_statements(sql)
    assert isinstance(statement.tree, exp.Query)
    return list(statement.tree.named_selects)


@pytest.mark.parametrize(
    ("separator", "columns"),
    [
        ("\n", ["a", "b"]),
        ("\r\n", ["a", "b"]),
        ("\r", ["a"]),
        ("\r\r\n", ["a", "b"]),
        ("\u2028", ["a"]),
        ("\x85", ["a"]),
        ("\x0c", ["a"]),
    ],
    ids=["lf", "crlf", "cr", "cr-crlf", "u2028", "nel", "form-feed"],
)
def test_datafusion_ends_a_line_comment_only_at_a_line_feed(
    separator: str, columns: list[str]
) -> None:
    sql = f"SELECT 1 AS a -- note{separator}, 2 AS b"
    assert engine_columns(sql) == columns
    assert lint_columns(sql) == columns


_SEPARATORS = st.sampled_from(
    [
        " ",
        "\r",
        "\n",
        "\r\n",
        " -- x\r",
        " -- x\n",
        " -- x\r\n",
        " -- x\r\r\n",
        " --\r",
        " /* x\r */ ",
        " /* -- x\r */ ",
        " -- x\u2028",
        " -- x\x85",
        " -- x\u2029",
    ]
)


@given(st.lists(_SEPARATORS, min_size=1, max_size=6))
def test_lint_reads_line_comments_as_the_engine_does(separators: list[str]) -> None:
    """Differential: the select list the linter parses is the one DataFusion plans, and
    HDQ050 fires exactly when the engine drops a column the lines as shown would have (each
    separator's comment ends at its line break as an editor shows it)."""
    sql = "SELECT 0 AS c0" + "".join(
        f"{separator}, {number} AS c{number}" for number, separator in enumerate(separators, 1)
    )
    engine = engine_columns(sql)
    assert lint_columns(sql) == engine
    every = [f"c{number}" for number in range(len(separators) + 1)]
    hidden = [finding for finding in lint(sql) if finding.code == "HDQ050"]
    assert bool(hidden) == (engine != every)


# -- the linter reports text the engine reads as comment ----------------------------------


def test_a_carriage_return_only_file_with_a_comment_is_one_comment() -> None:
    sql = f"-- top queries\rSELECT id, score\rFROM {SEARCH}\rORDER BY score DESC\rLIMIT 5;\r"
    findings = lint(sql)
    assert [(finding.code, finding.line, finding.column) for finding in findings] == [
        ("HDQ050", 2, 1)
    ]
    assert findings[0].message.startswith("`SELECT id, score FROM bm25_search(")
    assert "line feed" in findings[0].message


def test_code_after_a_comment_on_the_same_engine_line_is_reported_where_it_starts() -> None:
    sql = f"SELECT id, score FROM {SEARCH} -- top\rORDER BY score DESC\rLIMIT 5\n"
    findings = lint(sql)
    assert [(f.code, f.line, f.column) for f in findings] == [
        ("HDQ010", 1, 23),  # the engine sees no ORDER BY
        ("HDQ050", 2, 1),
    ]
    assert findings[1].start == sql.index("ORDER BY")
    assert findings[1].end == sql.index("\n")


def test_a_unicode_line_separator_is_named() -> None:
    findings = lint("SELECT 1 AS a -- note\u2028, 2 AS b")
    assert [(finding.code, finding.start) for finding in findings] == [("HDQ050", 22)]
    assert "U+2028 (line separator)" in findings[0].message


def test_comments_that_hide_nothing_are_quiet() -> None:
    for sql in (
        "SELECT 1 -- a\r",
        "SELECT 1 -- a\r\r\n",
        "SELECT 1 -- a\r-- b\r\n",
        "SELECT 1 /* a\rb */",
        "SELECT 1; -- a\r  \r\n",
        "SELECT 1\r-- a\r\n",
    ):
        assert [finding.code for finding in lint(sql)] == [], repr(sql)


def test_the_rule_can_be_ignored() -> None:
    assert lint("-- a\rSELECT 1", ignore=["HDQ050"]) == []


# -- --fix never edits what the engine reads as comment -----------------------------------


def test_fix_leaves_a_statement_with_hidden_code_alone() -> None:
    sql = f"SELECT id, score FROM {SEARCH} -- top\rLIMIT 5"
    result = fix(sql)
    assert result.sql == sql
    assert not result.applied
    assert {finding.code for finding in result.findings} >= {"HDQ050", "HDQ010"}


def test_fix_still_repairs_the_other_statements() -> None:
    hidden = f"SELECT id FROM {SEARCH} -- top\rLIMIT 5\n"
    plain = "SELECT id FROM bm25_search('docs', 'body', 'q', 5) LIMIT 5"
    result = fix(f"{hidden};\n{plain}")
    assert result.sql == (
        f"{hidden};\nSELECT id FROM bm25_search('default.public.docs', 'body', 'q', 5) "
        "ORDER BY score DESC LIMIT 5"
    )


def test_an_order_by_after_a_final_comment_goes_before_it() -> None:
    """A ``--`` comment that runs to the end of a ``\\r``-only text: a new line after it
    would still be inside it for the engine, so the ORDER BY goes before it."""
    sql = f"SELECT id, score\rFROM {SEARCH} -- why\r"
    result = fix(sql)
    assert result.sql == f"SELECT id, score\rFROM {SEARCH} ORDER BY score DESC -- why\r"


def test_fix_write_keeps_the_file_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "q.sql"
    original = f"-- ranked\rSELECT id\rFROM {SEARCH}\rLIMIT 5;\r".encode()
    path.write_bytes(original)
    result = CliRunner().invoke(lint_command, [str(path), "--fix", "--write"])
    assert result.exit_code == EXIT_FINDINGS
    assert path.read_bytes() == original
    assert f"{path}:2:1: HDQ050 [error]" in result.output


# -- the fixed text means to the engine what the linter thinks ------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    bodies = ["apple", "apple apple apple pie", "pear", "apple apple", "apple tart", "fig"]
    vectors = [[1.0, float(number)] for number in range(6)]
    with LocalEngine(tmp_path_factory.mktemp("db") / "db") as local:
        local.load_table(
            "docs",
            pa.table({"id": list(range(1, 7)), "body": bodies, "emb": vectors}),
            text_columns=["body"],
        )
        yield local


def test_the_fixed_order_by_is_one_the_engine_runs(engine: LocalEngine) -> None:
    sql = f"SELECT id, score\rFROM {SEARCH} -- why\r"
    fixed = fix(sql).sql
    scores = engine.sql(fixed).column("score").to_pylist()
    unsorted = engine.sql(sql).column("score").to_pylist()
    assert unsorted != sorted(unsorted, reverse=True)  # the data can tell the difference
    assert scores == sorted(unsorted, reverse=True)


def test_the_local_fast_path_reads_comments_as_datafusion(engine: LocalEngine) -> None:
    """The local engine parses a nearest-neighbour shape to answer it natively; a ``LIMIT``
    that DataFusion reads as comment is no limit there either."""
    sql = (
        'SELECT id FROM "default".public.docs '
        "ORDER BY cosine_distance(emb, ARRAY[1.0, 0.5]) -- nearest\rLIMIT 2\n"
    )
    rows = engine.sql(sql).column("id").to_pylist()
    assert len(rows) == 6


# -- property: random files whose comments may end at a lone \r or a line separator ----------


@given(sql_files(st.sampled_from(["\n", "\r\n", "\r", "\u2028"])))
def test_fix_never_edits_a_statement_the_engine_reads_differently(
    case: tuple[bytes, bytes],
) -> None:
    """``--fix`` edits no statement the engine reads differently from how its lines look,
    leaves the hidden text as it was, reports each stretch, and is idempotent; a file the
    engine cannot parse because of such a comment (the file as shown always parses) is an
    error that says so."""
    text = case[0].decode()
    try:
        result = fix(text)
    except SqlParseError as error:
        assert "see HDQ050" in str(error)
        return
    assert fix(result.sql).sql == result.sql
    before, after = parse_statements(text), parse_statements(result.sql)
    assert len(before) == len(after)
    hidden = hidden_by_line_comments(text)
    for old, new in zip(before, after, strict=True):
        if any(old.region_start <= stretch.start < old.region_end for stretch in hidden):
            old_text = text[old.region_start : old.region_end]
            assert result.sql[new.region_start : new.region_end] == old_text
    assert [result.sql[s.start : s.end] for s in hidden_by_line_comments(result.sql)] == [
        text[s.start : s.end] for s in hidden
    ]
    reported = [finding.start for finding in result.findings if finding.code == "HDQ050"]
    assert len(reported) == len(hidden)
