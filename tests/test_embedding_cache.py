"""One embedding cache per database: a text embedded once is never embedded again by the
same model, whatever table or column loads it; a load writes what it embeds as it goes, so an
interrupted load keeps every batch it finished; the cache stays a cache (damage is skipped,
small segments are merged, the per-table caches of older databases are adopted)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import LocalEngine
from hotdata_retrieval.engines.local import _embedding_cache as embedding_cache
from hotdata_retrieval.engines.local._embedding_cache import cache_directory, legacy_cache_path
from hotdata_retrieval.engines.local.database import text_hashes

DIMENSIONS = 8


class CountingEmbedder(HashingEmbedder):
    """Counts the texts it embeds; raises ``KeyboardInterrupt`` once it has embedded
    ``interrupt_after`` texts (as Ctrl-C during a long load)."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        super().__init__(dimensions=DIMENSIONS)
        self.embedded: list[str] = []
        self.interrupt_after = interrupt_after

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.interrupt_after is not None and len(self.embedded) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.embedded.extend(texts)
        return super().embed_documents(texts)


def _table(texts: list[str]) -> pa.Table:
    return pa.table({"id": list(range(len(texts))), "body": texts})


def _texts(count: int, word: str = "fox") -> list[str]:
    return [f"{word} number {i}" for i in range(count)]


def _segments(root: Path) -> list[Path]:
    return sorted(
        cache_directory(root, HashingEmbedder(dimensions=DIMENSIONS).name).glob("*.parquet")
    )


def _cached_hashes(root: Path) -> set[str]:
    return {
        value
        for path in _segments(root)
        for value in pq.read_table(path).column("text_hash").to_pylist()
    }


def test_the_same_texts_under_another_table_or_column_are_not_embedded_again(
    tmp_path: Path,
) -> None:
    embedder = CountingEmbedder()
    texts = _texts(30)
    with LocalEngine(tmp_path / "db", embedder=embedder) as engine:
        engine.load_table("first", _table(texts), embed_columns=["body"])
        assert sorted(embedder.embedded) == sorted(texts)
        embedder.embedded.clear()
        engine.load_table("second", _table([*texts[:20], "a new text"]), embed_columns=["body"])
        other = _table(texts).rename_columns(["id", "summary"])
        engine.load_table("third", other, embed_columns=["summary"])
        assert embedder.embedded == ["a new text"]
        first = engine.sql("SELECT body_embedding FROM first ORDER BY id").column(0).to_pylist()
        second = engine.sql("SELECT body_embedding FROM second ORDER BY id").column(0).to_pylist()
        assert second[:20] == first[:20]
        assert first[0] == pytest.approx(
            HashingEmbedder(dimensions=DIMENSIONS).embed_documents([texts[0]])[0]
        )


def test_an_interrupted_load_keeps_every_batch_it_embedded(tmp_path: Path) -> None:
    texts = _texts(50)
    interrupted = CountingEmbedder(interrupt_after=30)
    with LocalEngine(tmp_path / "db", embedder=interrupted) as engine:
        with pytest.raises(KeyboardInterrupt):
            engine.load_table("docs", _table(texts), embed_columns=["body"], batch_size=10)
        assert "docs" not in engine.tables  # the load itself did not commit
    assert len(interrupted.embedded) == 30
    assert _cached_hashes(tmp_path / "db") == set(text_hashes(interrupted.embedded))
    resumed = CountingEmbedder()
    with LocalEngine(tmp_path / "db", embedder=resumed) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"], batch_size=10)
    assert sorted(resumed.embedded) == sorted(set(texts) - set(interrupted.embedded))


def test_segments_are_written_as_the_load_goes_and_merged_when_many(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding_cache, "FLUSH_TEXTS", 5)
    monkeypatch.setattr(embedding_cache, "MERGE_SEGMENTS", 1_000)
    texts = _texts(40)
    with LocalEngine(tmp_path / "db", embedder=CountingEmbedder()) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"], batch_size=5)
    assert len(_segments(tmp_path / "db")) == 8
    monkeypatch.setattr(embedding_cache, "MERGE_SEGMENTS", 4)
    with LocalEngine(tmp_path / "db", embedder=CountingEmbedder()) as engine:
        engine.load_table("more", _table(_texts(5, "owl")), embed_columns=["body"])
    segments = _segments(tmp_path / "db")
    assert len(segments) == 1
    assert _cached_hashes(tmp_path / "db") == set(text_hashes(texts + _texts(5, "owl")))
    assert pq.read_table(segments[0]).num_rows == 45  # each text once


def test_a_damaged_segment_is_skipped_and_its_texts_embedded_again(tmp_path: Path) -> None:
    texts = _texts(10)
    with LocalEngine(tmp_path / "db", embedder=CountingEmbedder()) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"])
    (segment,) = _segments(tmp_path / "db")
    segment.write_bytes(b"PAR1 not parquet at all")
    embedder = CountingEmbedder()
    with LocalEngine(tmp_path / "db", embedder=embedder) as engine:
        engine.load_table("again", _table(texts), embed_columns=["body"])
        vectors = engine.sql("SELECT body_embedding FROM again ORDER BY id").column(0).to_pylist()
    assert sorted(embedder.embedded) == sorted(texts)
    assert vectors[3] == pytest.approx(
        HashingEmbedder(dimensions=DIMENSIONS).embed_documents([texts[3]])[0]
    )


def test_vectors_of_another_length_are_never_read(tmp_path: Path) -> None:
    root = tmp_path / "db"
    texts = _texts(6)
    name = HashingEmbedder(dimensions=DIMENSIONS).name
    wrong = embedding_cache.EmbeddingCache(root, name, DIMENSIONS + 1)
    wrong.add(text_hashes(texts), np.ones((6, DIMENSIONS + 1), dtype=np.float32))
    embedder = CountingEmbedder()
    with LocalEngine(root, embedder=embedder) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"])
    assert sorted(embedder.embedded) == sorted(texts)


def test_an_older_databases_per_table_cache_is_adopted(tmp_path: Path) -> None:
    root = tmp_path / "db"
    texts = _texts(12)
    reference = HashingEmbedder(dimensions=DIMENSIONS)
    legacy = legacy_cache_path(root, "docs", "body", reference.name)
    legacy.parent.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "text_hash": text_hashes(texts),
                "vector": pa.array(reference.embed_documents(texts), pa.list_(pa.float32())),
            }
        ),
        legacy,
    )
    embedder = CountingEmbedder()
    with LocalEngine(root, embedder=embedder) as engine:
        engine.load_table("docs", _table([*texts, "new"]), embed_columns=["body"])
        engine.load_table("copy", _table(texts), embed_columns=["body"])
    assert embedder.embedded == ["new"]
    assert not legacy.exists()
    assert _cached_hashes(root) == set(text_hashes([*texts, "new"]))


def test_a_cache_that_cannot_be_written_costs_only_time(tmp_path: Path) -> None:
    root = tmp_path / "db"
    root.mkdir()
    (root / "embeddings").write_text("a file where the cache's directory would be")
    texts = _texts(5)
    with LocalEngine(root, embedder=CountingEmbedder()) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"])
        vectors = engine.sql("SELECT body_embedding FROM docs ORDER BY id").column(0).to_pylist()
    reference = HashingEmbedder(dimensions=DIMENSIONS).embed_documents(texts)
    assert vectors == [pytest.approx(vector) for vector in reference]


def test_a_model_name_of_any_length_and_script_has_a_cache(tmp_path: Path) -> None:
    name = "\U00020000" * 70 + "/../model"
    directory = cache_directory(tmp_path, name)
    assert directory.parent == tmp_path / "embeddings"
    assert len(directory.name.encode("utf-8")) <= 255
    cache = embedding_cache.EmbeddingCache(tmp_path, name, 2)
    assert cache.add(["h"], np.ones((1, 2), dtype=np.float32)) is not None
    assert cache.vectors(["h"])["h"].tolist() == [1.0, 1.0]
    assert cache_directory(tmp_path, name + "x") != directory


def test_a_lookup_reads_the_right_rows_across_row_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding_cache, "ROW_GROUP_ROWS", 3)
    cache = embedding_cache.EmbeddingCache(tmp_path, "model", 2)
    hashes = [f"h{i}" for i in range(10)]
    vectors = np.arange(20, dtype=np.float32).reshape(10, 2)
    (path,) = [cache.add(hashes, vectors)]
    assert path is not None and pq.ParquetFile(path).num_row_groups == 4
    wanted = ["h9", "h0", "h4", "h5", "missing"]
    found = cache.vectors(wanted)
    assert sorted(found) == ["h0", "h4", "h5", "h9"]
    for value in found:
        assert found[value].tolist() == vectors[int(value[1:])].tolist()


def test_a_segment_whose_rows_are_not_the_models_vectors_is_never_read(tmp_path: Path) -> None:
    root = tmp_path / "db"
    texts = _texts(2)
    directory = cache_directory(root, HashingEmbedder(dimensions=DIMENSIONS).name)
    directory.mkdir(parents=True)
    # 16 floats for two texts, but as rows of 5 and 11: read flat, they would spill.
    pq.write_table(
        pa.table(
            {
                "text_hash": text_hashes(texts),
                "vector": pa.array([[1.0] * 5, [2.0] * 11], pa.list_(pa.float32())),
            }
        ),
        directory / "0-foreign.parquet",
    )
    embedder = CountingEmbedder()
    with LocalEngine(root, embedder=embedder) as engine:
        engine.load_table("docs", _table(texts), embed_columns=["body"])
    assert sorted(embedder.embedded) == sorted(texts)
