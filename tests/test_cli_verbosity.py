"""``-q/--quiet`` and ``-v/--verbose`` on every ``hdq`` command."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import click
import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import COMMANDS, main

EXPLAIN = ["explain", "--table", "docs", "--text-column", "body", "--query", "error E1234"]


def leaf_commands() -> Iterator[tuple[str, click.Command]]:
    context = click.Context(main)
    for name in COMMANDS:
        command = main.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            for sub_name, subcommand in command.commands.items():
                yield f"{name} {sub_name}", subcommand
        else:
            yield name, command


@pytest.mark.parametrize("option", ["--quiet", "--verbose"])
def test_every_command_takes_the_option(option: str) -> None:
    missing = [
        name
        for name, command in leaf_commands()
        if not any(option in parameter.opts for parameter in command.params)
    ]
    assert missing == []


def test_no_command_has_one_option_twice() -> None:
    for name, command in leaf_commands():
        options = [option for parameter in command.params for option in parameter.opts]
        assert len(options) == len(set(options)), name


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_quiet_silences_notes_and_keeps_the_artefact(tmp_path: Path) -> None:
    code, stdout, stderr = run("spec", "export", str(tmp_path / "a"))
    assert code == 0 and "wrote" in stderr
    code, quiet_stdout, quiet_stderr = run("spec", "export", "-q", str(tmp_path / "b"))
    assert code == 0
    assert quiet_stderr == ""
    assert quiet_stdout.replace(f"{tmp_path}/b/", f"{tmp_path}/a/") == stdout
    assert (tmp_path / "b" / "index.json").exists()


def test_quiet_keeps_an_error_raised_by_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-database"
    code, _, stderr = run("search", "-q", "x", "--table", "docs", "--database", str(missing))
    assert code != 0
    assert stderr.startswith("hdq search: error: ")


def test_quiet_keeps_a_usage_error(tmp_path: Path) -> None:
    code, _, stderr = run("load", "-q", str(tmp_path / "absent.csv"), "--table", "t")
    assert code == 2
    assert stderr.startswith("hdq load: error: ")
    assert "absent.csv" in stderr


def test_verbose_logs_the_run_and_restores_the_logger() -> None:
    logger = logging.getLogger("hotdata_retrieval")
    handlers, level = list(logger.handlers), logger.level
    code, stdout, stderr = run(*EXPLAIN, "-v")
    assert code == 0
    assert "bm25_search(" in stdout
    assert "hotdata_retrieval: INFO: hdq explain: finished in " in stderr
    assert logger.handlers == handlers and logger.level == level
    code, _, quiet_stderr = run(*EXPLAIN)
    assert "INFO" not in quiet_stderr


def test_two_verbose_flags_show_debug_records(tmp_path: Path) -> None:
    from hotdata_retrieval.engines.local import LocalEngine

    database = tmp_path / "db"
    engine = LocalEngine(database)
    engine.load_table(
        "docs", pa.table({"id": [1, 2], "body": ["a crash", "a login"]}), text_columns=["body"]
    )
    engine.close()
    search = ["search", "crash", "--table", "docs", "--database", str(database)]
    code, stdout, stderr = run(*search, "-vv")
    assert code == 0 and "crash" in stdout
    assert "DEBUG: search of default.public.docs answered by the native path: 1 row" in stderr
    code, _, stderr = run(*search, "-v")
    assert code == 0
    assert "DEBUG" not in stderr and "INFO: hdq search: finished in" in stderr
