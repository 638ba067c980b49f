"""The SQL tool's read-only guard and row counts, and the spec CLI on broken case files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.adapters.toolkit import SearchToolkit
from hotdata_retrieval.cli.spec import spec
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine


@pytest.fixture
def toolkit() -> Iterator[SearchToolkit]:
    with LocalEngine(embedder=HashingEmbedder(dimensions=8)) as engine:
        engine.load_table(
            "docs",
            pa.table({"id": list(range(30)), "body": [f"fox {i}" for i in range(30)]}),
            text_columns=["body"],
        )
        yield SearchToolkit(engine, table="docs", max_rows=20)


def _rows(result: Any) -> dict[str, Any]:
    return json.loads(result) if isinstance(result, str) else dict(result)


@pytest.mark.parametrize(
    "sql",
    [
        "WITH x AS (DELETE FROM default.public.docs RETURNING *) SELECT * FROM x",
        "WITH x AS (INSERT INTO default.public.docs VALUES (99, 'x')) SELECT 1",
    ],
)
def test_writes_hidden_in_a_cte_are_refused(toolkit: SearchToolkit, sql: str) -> None:
    with pytest.raises(Exception, match="read-only"):
        toolkit.execute_sql(sql)


def test_a_result_without_columns_returns_no_made_up_rows(toolkit: SearchToolkit) -> None:
    result = _rows(toolkit.execute_sql("SELECT FROM default.public.docs LIMIT 1"))
    assert len(result["rows"]) <= result["metadata"]["row_count"]


def test_spec_verify_reports_a_tampered_expectation_in_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(spec, ["export", str(tmp_path)]).exit_code == 0
    case = tmp_path / "basic.json"
    document = json.loads(case.read_text())
    document["expected"] = "zzz"
    case.write_text(json.dumps(document))
    result = runner.invoke(spec, ["verify", "--cases", str(tmp_path)])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert "expected" in result.output


def test_spec_export_to_an_unwritable_place_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = CliRunner().invoke(spec, ["export", str(blocker / "cases")])
    assert result.exit_code == 1
    assert "cannot write cases" in result.output
