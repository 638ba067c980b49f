"""A message on standard error that is no terminal (a log, a pipe) is never wrapped at rich's
80 columns: a long path or statement stays on one line, as ``click.echo`` writes errors."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hotdata_retrieval._console import make_console
from hotdata_retrieval.cli import main


def test_a_long_message_on_a_redirected_stderr_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    message = "warning: " + " ".join(f"/a/long/path/segment{n}" for n in range(20))
    make_console(stderr=True).print(message, markup=False, highlight=False)
    assert stream.getvalue() == message + "\n"


def test_the_demo_s_note_on_stderr_keeps_its_long_path_on_one_line(tmp_path: Path) -> None:
    database = tmp_path / ("a_rather_long_directory_name_" * 4) / "db"
    found = CliRunner().invoke(
        main,
        [
            "demo",
            "--database",
            str(database),
            "--embedder",
            "hashing",
            "-k",
            "1",
            "--format",
            "json",
        ],
    )
    assert found.exit_code == 0, found.stderr
    (line,) = [line for line in found.stderr.splitlines() if line.startswith("Loading ")]
    assert f"into {database.resolve()}: a BM25 index on body" in line
