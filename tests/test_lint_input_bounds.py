"""``hdq lint`` of a long file: statements are parsed one at a time as the rules ask for them
(one tree in memory, not the file's), and a file longer than ``MAX_LINT_CHARACTERS`` is
refused before it is parsed, naming its length and the limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import lint as lint_cli
from hotdata_retrieval.cli import main
from hotdata_retrieval.lint import SqlParseError
from hotdata_retrieval.lint.parsing import iter_statements, parse_statements


def test_statements_are_parsed_one_at_a_time() -> None:
    sql = "SELECT 1;\nSELECT 2;\nSELECT FROM WHERE;\n"
    statements = iter_statements(sql)
    first = next(statements)  # the broken third statement is not parsed yet
    assert sql[first.start : first.end] == "SELECT 1"
    assert sql[next(statements).start :].startswith("SELECT 2")
    with pytest.raises(SqlParseError):
        next(statements)
    with pytest.raises(SqlParseError):
        parse_statements(sql)


def test_a_file_over_the_limit_is_refused_naming_its_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lint_cli, "MAX_LINT_CHARACTERS", 100)
    short, long = tmp_path / "short.sql", tmp_path / "long.sql"
    short.write_text("SELECT id FROM docs;\n" * 4, encoding="utf-8")  # 84 characters
    long.write_text("SELECT id FROM docs;\n" * 5, encoding="utf-8")  # 105 characters
    assert CliRunner().invoke(main, ["lint", str(short)]).exit_code == lint_cli.EXIT_CLEAN
    refused = CliRunner().invoke(main, ["lint", str(long)])
    assert refused.exit_code == lint_cli.EXIT_ERROR
    assert "105 characters; hdq lint reads at most 100 characters per file" in refused.stderr
