"""A write to the local database reads and writes only the tables it changes.

The database holds a table ``other`` (BM25 index, embedded vectors, HNSW index) whose every
file is then overwritten with bytes no reader accepts, and every call that reads a table file
(``pyarrow.parquet``, ``tantivy.Index.open``, usearch's ``Index.restore``) records the path it
was given. Each write path then runs (``load_table``, ``load_tables``, ``upsert_rows``,
``delete_rows``, ``drop_table``, ``hdq load``): it succeeds, no read touched ``other``'s
directory, and ``other``'s files are byte for byte as they were. A search of ``other`` at the
end reads it through the same recorders and finds it damaged: the recorders and the damage
can both fail the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tantivy
from click.testing import CliRunner
from usearch.index import Index

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import EngineError, LocalEngine, TableLoad

EMBEDDER = HashingEmbedder(dimensions=8)


def _rows(count: int, word: str, start: int = 0) -> pa.Table:
    keys = list(range(start, start + count))
    return pa.table({"id": keys, "body": [f"{word} fox {key}" for key in keys]})


def _files(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A database holding ``small`` and ``other``; ``other``'s files are all unreadable."""
    root = tmp_path / "db"
    with LocalEngine(root, embedder=EMBEDDER) as engine:
        engine.load_table("small", _rows(5, "small"), text_columns=["body"])
        engine.load_table(
            "other",
            _rows(50, "other"),
            text_columns=["body"],
            embed_columns=["body"],
            vector_index="hnsw",
        )
    for path in (root / "tables" / "other").rglob("*"):
        if path.is_file():
            path.write_bytes(b"not a table file " * 4)
    return root


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths every reader of a table file is given, in order."""
    seen: list[str] = []

    def recording(owner: Any, name: str, position: int = 0) -> None:
        real = getattr(owner, name)

        def read(*args: Any, **kwargs: Any) -> Any:
            seen.append(str(args[position]) if len(args) > position else "")
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, read)

    recording(pq, "read_table")
    recording(pq, "ParquetFile")
    recording(pq, "read_metadata")
    recording(pq, "read_schema")
    recording(tantivy.Index, "open")
    recording(Index, "restore")
    return seen


@pytest.fixture
def other(root: Path) -> Iterator[dict[str, bytes]]:
    """``other``'s files before the test; after it, they must be unchanged."""
    directory = root / "tables" / "other"
    before = _files(directory)
    yield before
    assert _files(directory) == before


def _untouched(reads: list[str], root: Path) -> None:
    directory = str(root / "tables" / "other")
    assert [path for path in reads if path.startswith(directory)] == []


def test_every_engine_write_touches_only_its_tables(
    root: Path, reads: list[str], other: dict[str, bytes]
) -> None:
    with LocalEngine(root, embedder=EMBEDDER) as engine:
        assert set(engine.tables) == {"small", "other"}
        engine.load_table("small", _rows(7, "again"), text_columns=["body"], embed_columns=["body"])
        engine.load_tables(
            [
                TableLoad(name="small", data=_rows(6, "both"), text_columns=["body"]),
                TableLoad(name="added", data=_rows(3, "added"), text_columns=["body"]),
            ]
        )
        engine.upsert_rows("small", _rows(2, "upserted", start=5))
        assert engine.delete_rows("small", [0, 1, 99]) == 2
        engine.upsert_rows(
            "created",
            _rows(2, "created"),
            create=TableLoad(name="created", data=_rows(0, ""), text_columns=["body"]),
        )
        engine.drop_table("added")
        assert set(engine.tables) == {"small", "other", "created"}
        found = engine.search(
            SearchPlan(source=Bm25Search(table="small", column="body", query_text="upserted"))
        )
        assert found.keys == [5, 6]
        _untouched(reads, root)

        # The control: reading ``other`` goes through the recorders and finds its damage.
        with pytest.raises(EngineError, match="cannot be read"):
            engine.search(
                SearchPlan(source=Bm25Search(table="other", column="body", query_text="fox"))
            )
        assert any(path.startswith(str(root / "tables" / "other")) for path in reads)
        assert set(engine.damaged_tables) == {"other"}


def test_a_statement_opens_only_the_tables_it_names(
    root: Path, reads: list[str], other: dict[str, bytes]
) -> None:
    with LocalEngine(root) as engine:
        rows = engine.sql("SELECT count(*) AS n FROM default.public.small").to_pylist()
        assert rows == [{"n": 5}]
        _untouched(reads, root)
        with pytest.raises(EngineError, match="cannot be read"):
            engine.sql("SELECT count(*) AS n FROM default.public.other")


@pytest.mark.parametrize("table", ["small", "fresh"])
def test_hdq_load_touches_only_its_table(
    root: Path, reads: list[str], other: dict[str, bytes], tmp_path: Path, table: str
) -> None:
    source = tmp_path / f"{table}.jsonl"
    source.write_text(
        "".join(json.dumps({"id": key, "body": f"loaded fox {key}"}) + "\n" for key in range(9))
    )
    result = CliRunner().invoke(
        main,
        ["load", str(source), "--database", str(root), "--embedder", "hashing", "--replace"],
    )
    assert result.exit_code == 0, result.stderr
    _untouched(reads, root)
    with LocalEngine(root) as engine:
        assert engine.tables[table].rows == 9
        assert set(engine.damaged_tables) == {"other"}


# -- tables opened on first use ---------------------------------------------------------------


def test_a_table_opened_late_follows_a_replacement(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        engine.load_table("docs", _rows(3, "first"), text_columns=["body"])
    with LocalEngine(root) as reader, LocalEngine(root) as writer:
        assert set(reader.tables) == {"docs"}  # the catalog read; no table opened
        writer.load_table("docs", _rows(4, "second"), text_columns=["body"])
        # The version the reader's catalog names is gone: it reads the catalog again.
        rows = reader.read_table("docs", ["body"]).column("body").to_pylist()
        assert rows == [f"second fox {key}" for key in range(4)]
        assert reader.damaged_tables == {}


def test_information_schema_names_every_table(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        for name in ("b", "a", "c"):
            engine.load_table(name, _rows(2, name), text_columns=["body"])
    with LocalEngine(root) as engine:
        rows = engine.sql(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "ORDER BY table_name"
        ).to_pylist()
        assert [row["table_name"] for row in rows] == ["a", "b", "c"]


def test_vector_distance_reads_vectors_of_a_table_not_open_yet(tmp_path: Path) -> None:
    import numpy as np

    root = tmp_path / "db"
    texts = [f"fox number {key}" for key in range(6)]
    data = pa.table({"id": list(range(6)), "body": texts})
    with LocalEngine(root, embedder=EMBEDDER) as engine:
        engine.load_table("embedded", data, embed_columns=["body"])
        engine.load_table("plain", data, text_columns=["body"])
    with LocalEngine(root, embedder=EMBEDDER) as engine:
        rows = engine.sql(
            "SELECT id, vector_distance(body, 'fox 3') AS d FROM default.public.plain ORDER BY id"
        ).to_pylist()
    documents = np.asarray(EMBEDDER.embed_documents(texts), dtype=np.float64)
    query = np.asarray(EMBEDDER.embed_query("fox 3"), dtype=np.float64)
    expected = 1 - documents @ query / (np.linalg.norm(documents, axis=1) * np.linalg.norm(query))
    assert [row["d"] for row in rows] == pytest.approx(expected.tolist(), abs=1e-6)
