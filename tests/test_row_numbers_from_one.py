"""Messages name a row as people count rows, from 1 (``errors.row_name``): the row that is a
JSONL file's line N is "row N" in ``hdq load``'s error, as the file's own messages say
``path:N``, and the first row of a table is "row 1" in an engine's refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.errors import HotdataRetrievalError


@pytest.mark.parametrize("bad_line", [1, 3])
def test_hdq_load_names_the_row_of_a_bad_vector_by_its_line(tmp_path: Path, bad_line: int) -> None:
    rows = [{"id": f"d{n}", "body": "red fox", "v": [1.0, 2.0]} for n in range(1, 5)]
    rows[bad_line - 1]["v"] = [1.0, 1e39]  # beyond Float32's range
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    found = CliRunner().invoke(
        main, ["load", str(source), "--database", str(tmp_path / "db"), "--embedder", "hashing"]
    )
    assert found.exit_code != 0
    assert f"row {bad_line} (id = 'd{bad_line}')" in found.stderr


def test_the_first_row_of_a_table_is_row_1() -> None:
    with LocalEngine() as engine:
        data = pa.table({"id": ["a", "b"], "body": ["x\x00", "y"]})
        with pytest.raises(HotdataRetrievalError, match=r"NUL character \(U\+0000\) in row 1:"):
            engine.load_table("docs", data, text_columns=["body"])
