"""Query vectors in the SQL that ``hdq explain`` and ``hdq search --explain`` show: shortened on
a terminal (and said to be so), exact into a file, a pipe or JSON, and ``--full-vectors``
(``--short-vectors``) to choose."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import given

from hotdata_retrieval.cli import main
from hotdata_retrieval.cli.exit_codes import EXIT_OK
from hotdata_retrieval.cli.explain import explain
from hotdata_retrieval.cli.search import search
from hotdata_retrieval.compile import to_sql
from hotdata_retrieval.compile.render import abbreviate_vector, to_display_sql
from hotdata_retrieval.plan.filters import Comparison
from hotdata_retrieval.plan.search import (
    Bm25Search,
    NearestNeighborSearch,
    ReciprocalRankFusion,
    SearchPlan,
)
from tests.strategies import plans

NOTE = "-- query vectors shortened"
VECTOR = [round(random.Random(7).uniform(-1, 1), 6) + i / 1000 for i in range(384)]
NEAREST = SearchPlan(
    source=NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR)
)


def exact_literal(vector: list[float]) -> str:
    return "ARRAY[" + ", ".join(repr(float(value)) for value in vector) + "]"


def test_an_abbreviation_shows_the_head_the_dimension_and_a_hash_of_the_exact_literal() -> None:
    text = abbreviate_vector(VECTOR)
    digest = hashlib.sha256(exact_literal(VECTOR).encode()).hexdigest()[:8]
    head = ", ".join(f"{value:.4g}" for value in VECTOR[:3])
    assert text == f"ARRAY[{head}, … 384 values, sha256 {digest}]"
    assert abbreviate_vector(VECTOR, components=5).count(",") == 6
    other = [*VECTOR[:-1], VECTOR[-1] + 1e-9]
    assert abbreviate_vector(other) != text  # same head, different vector: the hash differs
    assert abbreviate_vector([0.5, 0.25]) == "ARRAY[0.5, 0.25]"  # short vectors stay whole


@given(plans())
def test_display_sql_is_to_sql_but_for_the_vectors(plan: SearchPlan) -> None:
    shown = to_display_sql(plan, components=1)
    for branch in plan.branches:
        if isinstance(branch, NearestNeighborSearch):
            vector = list(branch.query_vector)
            shown = shown.replace(abbreviate_vector(vector, components=1), exact_literal(vector))
    assert shown == to_sql(plan)


def test_the_native_hybrid_call_is_shortened_too() -> None:
    plan = SearchPlan(
        source=ReciprocalRankFusion(
            branches=[
                Bm25Search(table="docs", column="body", query_text="error"),
                NearestNeighborSearch(table="docs", column="embedding", query_vector=VECTOR),
            ]
        ),
        filter=Comparison(column="lang", operator="=", value="en"),
    )
    shown = to_display_sql(plan, "hotdata-native")
    assert "hybrid_search(" in shown
    assert abbreviate_vector(VECTOR, "hotdata-native") in shown
    assert shown.replace(abbreviate_vector(VECTOR), exact_literal(VECTOR)) == to_sql(
        plan, "hotdata-native"
    )


def test_explain_and_search_share_the_option() -> None:
    def option(command: object) -> tuple[object, ...]:
        (param,) = [p for p in command.params if p.name == "full_vectors"]  # type: ignore[attr-defined]
        return (tuple(param.opts), tuple(param.secondary_opts), param.help, param.default)

    assert option(explain) == option(search)


def explain_cli(*options: str) -> Result:
    vector = json.dumps(VECTOR)
    arguments = ["explain", "--table", "docs", "--vector-column", "embedding", "--vector", vector]
    return CliRunner().invoke(main, [*arguments, "-q", *options])


def test_explain_into_a_pipe_prints_the_exact_statement() -> None:
    result = explain_cli()
    assert result.exit_code == EXIT_OK
    assert result.stdout == to_sql(NEAREST) + "\n"


def test_explain_short_vectors_says_the_sql_is_not_runnable() -> None:
    result = explain_cli("--short-vectors")
    assert result.exit_code == EXIT_OK
    note, *sql = result.stdout.splitlines()
    assert note.startswith(NOTE) and "not runnable" in note and "--full-vectors" in note
    assert "\n".join(sql) == to_display_sql(NEAREST)


def test_explain_json_is_always_exact() -> None:
    result = explain_cli("--short-vectors", "--format", "json")
    assert json.loads(result.stdout)["sql"] == to_sql(NEAREST)


def run_in_terminal(*arguments: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run ``python -m hotdata_retrieval ARGUMENTS`` with standard output on a terminal (a
    pseudo-terminal); return the exit code and what it printed there."""
    controller, terminal = pty.openpty()
    environment = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    process = subprocess.Popen(
        [sys.executable, "-m", "hotdata_retrieval", *arguments],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=environment,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 1 << 16)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    return process.wait(), b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_explain_on_a_terminal_shortens_and_full_vectors_does_not() -> None:
    vector = json.dumps(VECTOR)
    arguments = ("explain", "--table", "docs", "--vector-column", "embedding", "--vector", vector)
    code, shown = run_in_terminal(*arguments, "-q")
    assert code == EXIT_OK
    assert shown == f"{shown.splitlines()[0]}\n{to_display_sql(NEAREST)}\n"
    assert shown.startswith(NOTE)
    assert len(shown.splitlines()) < 12
    code, shown = run_in_terminal(*arguments, "-q", "--full-vectors")
    assert code == EXIT_OK
    assert shown == to_sql(NEAREST) + "\n"


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("vectors")
    source = directory / "notes.jsonl"
    bodies = ["red fox jumps", "blue fox sleeps", "green owl flies"]
    source.write_text(
        "".join(json.dumps({"id": i, "body": b}) + "\n" for i, b in enumerate(bodies, 1))
    )
    path = directory / "db"
    result = CliRunner().invoke(
        main, ["load", str(source), "--database", str(path), "--embedder", "hashing"]
    )
    assert result.exit_code == EXIT_OK, result.stderr
    return path


SEARCH = ("search", "fox", "--table", "notes", "--mode", "hybrid", "--explain")


def test_search_explain_into_a_pipe_is_the_exact_statement(database: Path) -> None:
    result = CliRunner().invoke(main, [*SEARCH, "--database", str(database)])
    assert result.exit_code == EXIT_OK
    document = CliRunner().invoke(
        main, [*SEARCH, "--database", str(database), "--format", "json", "--short-vectors"]
    )
    sql = json.loads(document.stdout)["sql"]
    assert "… " not in sql and sql.count("ARRAY[") == 1
    assert result.stdout.startswith(f"{sql};\n")


def test_search_explain_on_a_terminal_shortens(database: Path) -> None:
    code, shown = run_in_terminal(*SEARCH, "--database", str(database))
    assert code == EXIT_OK
    assert NOTE in shown
    assert ", … 256 values, sha256 " in shown
    code, shown = run_in_terminal(*SEARCH, "--database", str(database), "--full-vectors")
    assert code == EXIT_OK
    assert NOTE not in shown and "… " not in shown.split("text rank")[0]
