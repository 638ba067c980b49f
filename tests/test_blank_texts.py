"""NULL, empty and whitespace-only texts get a NULL vector on every loader, and are never
sent to the embedder: the local engine's load and ``hdq load`` into a store."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder, is_embeddable
from hotdata_retrieval.engines.local import LocalEngine

TEXTS = ["disk full on node 3", "", "   ", None, "\u3000\n\t", "x"]
BLANK = [False, True, True, True, True, False]


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__(dimensions=16)
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return super().embed_documents(texts)


def test_is_embeddable_reads_unicode_whitespace_as_blank() -> None:
    assert [not is_embeddable(text) for text in TEXTS] == BLANK
    assert not is_embeddable(b"bytes")


def test_the_local_load_embeds_only_texts_with_content(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    data = pa.table({"id": list(range(len(TEXTS))), "body": TEXTS})
    with LocalEngine(tmp_path / "db", embedder=embedder) as engine:
        engine.load_table("tickets", data, text_columns=["body"], embed_columns=["body"])
        rows = engine.sql(
            "SELECT id, body_embedding IS NULL AS blank FROM tickets ORDER BY id"
        ).to_pylist()
    assert [row["blank"] for row in rows] == BLANK
    assert sorted(embedder.seen) == sorted(t for t, b in zip(TEXTS, BLANK) if not b)


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_hdq_load_into_a_store_gives_blank_texts_no_vector(engine: str, tmp_path: Path) -> None:
    source = tmp_path / "tickets.jsonl"
    source.write_text(
        "".join(json.dumps({"id": i, "body": text}) + "\n" for i, text in enumerate(TEXTS))
    )
    database = tmp_path / ("s.db" if engine == "sqlite" else "d.duckdb")
    loaded = CliRunner().invoke(
        main,
        [
            *["load", str(source), "--engine", engine, "--database", str(database)],
            *["--embedder", "hashing", "--format", "json"],
        ],
    )
    assert loaded.exit_code == 0, loaded.output
    query = "SELECT id, body_embedding IS NULL FROM tickets ORDER BY id"
    if engine == "sqlite":
        with sqlite3.connect(database) as connection:
            rows = connection.execute(query).fetchall()
    else:
        import duckdb

        with duckdb.connect(str(database), read_only=True) as connection:
            rows = connection.execute(query).fetchall()
    assert [bool(blank) for _, blank in rows] == BLANK
