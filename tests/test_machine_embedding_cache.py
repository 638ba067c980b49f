"""The user's embedding cache: a text one database or engine embedded is not embedded again by
another (the local engine's load and ``hdq load`` into a store), it can be turned off, and it
stays within its bound by removing the segments read least recently."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local._embedding_cache import (
    EmbeddingCache,
    evict_least_recent,
    machine_cache_root,
)

TEXTS = [f"ticket {i}: the disk is full on node {i % 7}" for i in range(40)]


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(dimensions=16)
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen.extend(texts)
        return super().embed_documents(texts)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "user-cache"
    monkeypatch.setenv("HDQ_EMBEDDING_CACHE", str(directory))
    return directory


def _load(directory: Path, embedder: CountingEmbedder, texts: list[str] = TEXTS) -> pa.Table:
    data = pa.table({"id": list(range(len(texts))), "body": texts})
    with LocalEngine(directory, embedder=embedder) as engine:
        engine.load_table("docs", data, text_columns=["body"], embed_columns=["body"])
        return engine.sql("SELECT id, body_embedding FROM docs ORDER BY id")


def test_a_second_database_embeds_nothing_and_gets_the_same_vectors(
    cache: Path, tmp_path: Path
) -> None:
    first, second = CountingEmbedder(), CountingEmbedder()
    vectors = _load(tmp_path / "one", first)
    assert sorted(first.seen) == sorted(TEXTS)
    assert _load(tmp_path / "two", second) == vectors
    assert second.seen == []
    assert (cache / "embeddings").is_dir()


def test_a_store_load_after_a_local_load_embeds_nothing(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _load(tmp_path / "local", CountingEmbedder())  # HashingEmbedder(16)'s vectors, cached
    seen: list[str] = []
    original = HashingEmbedder.embed_documents

    def counted(self: HashingEmbedder, texts: Sequence[str]) -> list[list[float]]:
        seen.extend(texts)
        return original(self, texts)

    monkeypatch.setattr(HashingEmbedder, "embed_documents", counted)
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": i, "body": t}) + "\n" for i, t in enumerate(TEXTS)))
    for attempt in ("first", "second"):
        database = tmp_path / f"{attempt}.db"
        loaded = CliRunner().invoke(
            main,
            [
                "load",
                str(source),
                "--engine",
                "sqlite",
                "--database",
                str(database),
                "--embedder",
                "hashing",
            ],
        )
        assert loaded.exit_code == 0, loaded.output
    # hdq load's hashing embedder has 256 dimensions, not 16: a model of its own, embedded
    # once for the first store and never again for the second
    assert sorted(seen) == sorted(TEXTS)


def test_off_means_no_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("off", "0", ""):
        monkeypatch.setenv("HDQ_EMBEDDING_CACHE", value)
        assert machine_cache_root() is None
    monkeypatch.delenv("HDQ_EMBEDDING_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert machine_cache_root() == tmp_path / "xdg" / "hotdata-retrieval"
    monkeypatch.setenv("HDQ_EMBEDDING_CACHE", "off")
    first, second = CountingEmbedder(), CountingEmbedder()
    _load(tmp_path / "one", first)
    _load(tmp_path / "two", second)
    assert sorted(second.seen) == sorted(TEXTS)
    assert not (tmp_path / "xdg").exists()


def test_the_cache_keeps_to_its_bound_removing_the_least_recently_read(tmp_path: Path) -> None:
    import numpy as np

    cache = EmbeddingCache(tmp_path, "model", 8)
    paths = []
    for number in range(6):
        path = cache.add([f"h{number}-{i}" for i in range(50)], np.ones((50, 8), np.float32))
        assert path is not None
        os.utime(path, (1000 + number, 1000 + number))
        paths.append(path)
    assert cache.vectors(["h0-1"])  # read now: the most recent
    size = paths[0].stat().st_size
    evict_least_recent(tmp_path, 3 * size)
    kept = sorted(p.name for p in cache.directory.glob("*.parquet"))
    assert kept == sorted(p.name for p in [paths[0], paths[4], paths[5]])
