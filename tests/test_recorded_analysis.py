"""The local engine records the text analysis a table's BM25 indexes were built by
(``analysis.TEXT_ANALYSIS``) and warns on opening a table indexed by another one, such as a
table an earlier release indexed with Lucene's English stop words."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.analysis import TEXT_ANALYSIS
from hotdata_retrieval.engines.local import LocalEngine

DATA = pa.table({"id": [1, 2], "body": ["what the fox saw", "a quiet dog"]})
PLAN = SearchPlan(source=Bm25Search(table="docs", column="body", query_text="fox"))


def _catalog(root: Path) -> dict:
    return json.loads((root / "catalog.json").read_text())


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


def test_a_load_records_the_analysis_and_opens_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        entry = engine.load_table("docs", DATA, text_columns=["body"])
        assert entry.text_analysis == TEXT_ANALYSIS
        engine.load_table("plain", DATA)
    catalog = _catalog(root)
    assert catalog["tables"]["docs"]["text_analysis"] == TEXT_ANALYSIS
    assert "text_analysis" not in catalog["tables"]["plain"]  # no BM25 index, nothing to record
    with caplog.at_level(logging.WARNING), LocalEngine(root) as engine:
        assert engine.search(PLAN).keys == [1]
    assert _warnings(caplog) == []


def test_a_table_indexed_by_another_analysis_warns_until_it_is_loaded_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        engine.load_table("docs", DATA, text_columns=["body"])
    # as a catalog an earlier release wrote: no analysis recorded
    catalog = _catalog(root)
    del catalog["tables"]["docs"]["text_analysis"]
    (root / "catalog.json").write_text(json.dumps(catalog))
    with caplog.at_level(logging.WARNING), LocalEngine(root) as engine:
        assert engine.tables["docs"].text_analysis is None
        assert engine.search(PLAN).keys == [1]  # still searchable
        (warning,) = _warnings(caplog)
        assert "'docs'" in warning and "Lucene's English stop words" in warning
        assert "load it again" in warning
        caplog.clear()
        engine.load_table("docs", DATA, text_columns=["body"])
        assert engine.search(PLAN).keys == [1]
    assert _warnings(caplog) == []
    assert _catalog(root)["tables"]["docs"]["text_analysis"] == TEXT_ANALYSIS
