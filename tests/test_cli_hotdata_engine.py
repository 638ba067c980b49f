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
from hotdata_retrieval.cli.exit_codes import EXIT_USAGE
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.hotdata import HotdataEngine
from hotdata_retrieval.engines.local import LocalEngine
from tests.hotdata_api import FakeHotdataApi

API_KEY = "secret-key-for-the-cli"
BODIES = ["the app crashes on start", "billing page is slow", "crash when opening settings"]


EMBEDDER = HashingEmbedder()  # what --embedder hashing names


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeHotdataApi]:
    local = LocalEngine(tmp_path / "engine")
    rows = pa.table({"id": [1, 2, 3], "body": BODIES})
    local.load_table("tickets", rows, text_columns=["body"])
    vectors = pa.array(EMBEDDER.embed_documents(BODIES), pa.list_(pa.float32()))
    local.load_table("plain", rows.append_column("embedding", vectors), text_columns=["body"])
    with FakeHotdataApi(local, api_key=API_KEY, workspace_id="ws_cli") as api:
        api.index_engine_table("tickets")
        # BM25 and a plain vector index: the engine records no model, queries embed here
        api.index_engine_table("plain")
        api.add_index("plain", index_type="vector", columns=["embedding"], metric="cosine")
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
    assert result.exit_code == EXIT_USAGE  # a missing option, as the local engine's database
    assert "--engine hotdata needs --database or $HOTDATA_DATABASE" in result.stderr
    assert API_KEY not in result.output


def test_hybrid_search_on_the_hotdata_engine_embeds_with_the_named_model(
    fake: FakeHotdataApi,
) -> None:
    """The engine records no model for a plain vector index, so ``--embedder`` names it; the
    hits are the engine's own answer to the plan with that embedder."""
    arguments = ["search", "crash", "--table", "plain", "--engine", "hotdata", "--mode", "hybrid"]
    refused = CliRunner().invoke(main, arguments, env=_environment(fake))
    assert refused.exit_code == 1
    assert "which the hotdata engine does not record: name it with --embedder" in refused.stderr
    found = CliRunner().invoke(
        main, [*arguments, "--embedder", "hashing", "--format", "json"], env=_environment(fake)
    )
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    assert document["branches"] == ["text", "nearest"]
    with HotdataEngine.connect(
        fake.database_id,
        api_key=API_KEY,
        workspace_id="ws_cli",
        host=fake.url,
        embedder=EMBEDDER,
    ) as engine:
        expected = engine.search(engine.plan_search("plain", "crash", mode="hybrid"))
    assert len(document["hits"]) == len(BODIES)
    assert [(hit["key"], hit["score"]) for hit in document["hits"]] == [
        (hit.key, hit.score) for hit in expected
    ]
    assert API_KEY not in found.output + refused.output
