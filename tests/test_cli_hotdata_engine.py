"""``hdq search --engine hotdata`` against the fake Hotdata REST API (``tests/hotdata_api.py``),
configured from the environment as hotdata-framework's ``from_env`` reads it; the API key is
never printed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

pytest.importorskip("hotdata_framework")

from hotdata_retrieval.cli import main
from hotdata_retrieval.engines.local import LocalEngine
from tests.hotdata_api import FakeHotdataApi

API_KEY = "secret-key-for-the-cli"
BODIES = ["the app crashes on start", "billing page is slow", "crash when opening settings"]


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeHotdataApi]:
    local = LocalEngine(tmp_path / "engine")
    rows = pa.table({"id": [1, 2, 3], "body": BODIES})
    local.load_table("tickets", rows, text_columns=["body"])
    with FakeHotdataApi(local, api_key=API_KEY, workspace_id="ws_cli") as api:
        api.index_engine_table("tickets")
        yield api
    local.close()


def _environment(fake: FakeHotdataApi) -> dict[str, str]:
    return {
        "HOTDATA_API_KEY": API_KEY,
        "HOTDATA_API_URL": fake.url,
        "HOTDATA_WORKSPACE": "ws_cli",
        "HOTDATA_DATABASE": fake.database_id,
    }


def test_hdq_search_reaches_the_hotdata_engine_from_the_environment(
    fake: FakeHotdataApi,
) -> None:
    result = CliRunner().invoke(
        main,
        ["search", "crash", "--table", "tickets", "--engine", "hotdata", "--format", "json"],
        env=_environment(fake),
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert sorted(hit["key"] for hit in document["hits"]) == [1, 3]
    assert "bm25_search('default.public.tickets'" in fake.queries[-1]
    assert API_KEY not in result.output


def test_a_missing_database_names_the_variable(fake: FakeHotdataApi) -> None:
    environment = {**_environment(fake), "HOTDATA_DATABASE": ""}
    result = CliRunner().invoke(
        main, ["search", "crash", "--table", "tickets", "--engine", "hotdata"], env=environment
    )
    assert result.exit_code == 1
    assert "--engine hotdata needs --database or $HOTDATA_DATABASE" in result.stderr
    assert API_KEY not in result.output
