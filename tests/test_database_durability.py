"""The database directory survives concurrent writers, damaged files and hostile inputs.

Concurrency tests run real processes against one directory: writers take turns under the
writer lock, commits merge into the catalog as it is at commit time, and an engine opened
before another process's commit follows it.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hotdata_retrieval import Bm25Search, SearchPlan
from hotdata_retrieval.cli import main
from hotdata_retrieval.embed import HashingEmbedder
from hotdata_retrieval.engines.local import (
    ConcurrentWriteError,
    DatabaseError,
    EngineError,
    LocalEngine,
    TableLoad,
)
from hotdata_retrieval.engines.local import _storage as storage_module
from hotdata_retrieval.engines.local import database as database_module
from hotdata_retrieval.engines.local._embedding_cache import cache_directory

LOADER = textwrap.dedent(
    """
    import sys
    import pyarrow as pa
    from hotdata_retrieval.engines.local import LocalEngine

    root, table, tag, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data = pa.table({"id": list(range(rows)), "body": [f"{tag} fox {i}" for i in range(rows)]})
    with LocalEngine(root) as engine:
        engine.load_table(table, data, text_columns=["body"])
    """
)


def _start_loader(root: Path, table: str, tag: str, rows: int = 200) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", LOADER, str(root), table, tag, str(rows)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr.decode()


def _search(engine: LocalEngine, table: str, text: str) -> list[object]:
    plan = SearchPlan(source=Bm25Search(table=table, column="body", query_text=text), limit=3)
    return engine.search(plan).keys


def _table(rows: int = 20, word: str = "fox") -> pa.Table:
    return pa.table({"id": list(range(rows)), "body": [f"{word} {i}" for i in range(rows)]})


def test_concurrent_loads_of_one_table_leave_a_consistent_database(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        engine.load_table("other", _table(), text_columns=["body"])
    for round_number in range(4):
        tags = [f"r{round_number}w{worker}" for worker in range(3)]
        _wait([_start_loader(root, "docs", tag) for tag in tags])
        with LocalEngine(root) as engine:
            assert set(engine.tables) == {"docs", "other"}
            assert engine.damaged_tables == {}
            bodies = engine.sql("SELECT body FROM default.public.docs").column("body")
            assert len({body.as_py().split()[0] for body in bodies}) == 1  # one loader's rows
            assert bodies[0].as_py().split()[0] in tags
            assert _search(engine, "docs", "fox") != []
            assert _search(engine, "other", "fox") != []
        versions = {p.name for p in (root / "tables" / "docs").iterdir() if p.name != "embeddings"}
        catalog = json.loads((root / "catalog.json").read_text())
        assert versions == {catalog["tables"]["docs"]["version"]}
        assert not any((root / "staging").iterdir())


def test_concurrent_loads_of_different_tables_keep_both(tmp_path: Path) -> None:
    root = tmp_path / "db"
    for round_number in range(3):
        names = [f"t{round_number}_{worker}" for worker in range(3)]
        _wait([_start_loader(root, name, name) for name in names])
        with LocalEngine(root) as engine:
            assert set(names) <= set(engine.tables)
            for name in names:
                assert _search(engine, name, "fox") != []


def test_an_open_engine_follows_another_process_reload(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        engine.load_table("docs", _table(word="fox"), text_columns=["body"])
        assert _search(engine, "docs", "fox") == [0, 1, 2]
        for tag in ("first", "second"):
            _wait([_start_loader(root, "docs", tag, rows=5)])
            # The old version directory is gone; the engine reads the new catalog.
            assert _search(engine, "docs", tag) == [0, 1, 2]
            sql = "SELECT count(*) AS n FROM default.public.docs"
            assert engine.sql(sql).column("n")[0].as_py() == 5
        _wait([_start_loader(root, "added", "added", rows=4)])
        assert "added" in engine.tables
        assert _search(engine, "added", "added") == [0, 1, 2]


def test_a_multi_table_load_commits_all_or_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("a", _table(word="old"), text_columns=["body"])
        calls: list[Path] = []
        real_build = storage_module.build_bm25_index

        def failing_build(directory: Path, texts: object, filters: object = None) -> None:
            calls.append(directory)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
            real_build(directory, texts, filters)  # type: ignore[arg-type]

        monkeypatch.setattr(storage_module, "build_bm25_index", failing_build)
        loads = [
            TableLoad(name="a", data=_table(word="new"), text_columns=["body"]),
            TableLoad(name="b", data=_table(word="new"), text_columns=["body"]),
        ]
        with pytest.raises(DatabaseError, match="No space left on device"):
            engine.load_tables(loads)
        assert set(engine.tables) == {"a"}
        assert _search(engine, "a", "old") == [0, 1, 2]
        assert not any((engine.root / "staging").iterdir())


def test_a_full_disk_during_a_load_is_one_line_and_keeps_the_previous_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("docs", _table(word="old"), text_columns=["body"])
        before = (engine.root / "catalog.json").read_bytes()

        def full_disk(*args: object, **kwargs: object) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(storage_module.pq, "write_table", full_disk)
        with pytest.raises(DatabaseError) as caught:
            engine.load_table("docs", _table(word="new"), text_columns=["body"])
        assert "\n" not in str(caught.value)
        assert "No space left on device" in str(caught.value)
        assert "previous version is intact" in str(caught.value)
        assert (engine.root / "catalog.json").read_bytes() == before
        assert _search(engine, "docs", "old") == [0, 1, 2]


def test_a_commit_refuses_a_table_another_writer_changed(tmp_path: Path) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        entry = engine.load_table("docs", _table(), text_columns=["body"])
        with pytest.raises(ConcurrentWriteError) as caught:
            database_module.commit(engine.root, {"docs": "0000000000000000"}, {})
        assert (caught.value.expected, caught.value.found) == ("0000000000000000", entry.version)
        with pytest.raises(ConcurrentWriteError):
            database_module.commit(engine.root, {"docs": None}, {})


@pytest.mark.parametrize("damage", ["truncated", "missing", "garbage_index"])
def test_a_damaged_table_reports_its_file_and_the_others_serve(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        broken = engine.load_table("broken", _table(), text_columns=["body"])
        engine.load_table("fine", _table(), text_columns=["body"])
    directory = root / "tables" / "broken" / broken.version
    if damage == "truncated":
        data = (directory / "data.parquet").read_bytes()
        (directory / "data.parquet").write_bytes(data[: len(data) // 2])
    elif damage == "missing":
        (directory / "data.parquet").unlink()
    else:
        for path in (directory / "bm25" / "body").iterdir():
            path.write_bytes(b"not an index")
    with LocalEngine(root) as engine:
        assert _search(engine, "fine", "fox") == [0, 1, 2]
        assert set(engine.damaged_tables) == {"broken"}
        with pytest.raises(EngineError) as caught:
            _search(engine, "broken", "fox")
        message = str(caught.value)
        assert "\n" not in message
        assert str(directory) in message
        assert "load it again" in message
        with pytest.raises(EngineError, match="cannot be read"):
            engine.sql("SELECT * FROM default.public.broken")
        engine.load_table("broken", _table(word="anew"), text_columns=["body"])
        assert engine.damaged_tables == {}
        assert _search(engine, "broken", "anew") == [0, 1, 2]


def test_cli_search_on_a_damaged_table_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        entry = engine.load_table("docs", _table(), text_columns=["body"])
    (root / "tables" / "docs" / entry.version / "data.parquet").write_bytes(b"PAR1 broken")
    result = CliRunner().invoke(
        main, ["search", "fox", "--table", "docs", "--mode", "text", "--database", str(root)]
    )
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert "data.parquet" in result.stderr


def test_a_corrupt_embedding_cache_is_discarded_and_rebuilt(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dimensions=8)
    with LocalEngine(tmp_path / "db", embedder=embedder) as engine:
        engine.load_table("docs", _table(), embed_columns=["body"])
        directory = cache_directory(engine.root, embedder.name)
        (damaged,) = directory.iterdir()
        damaged.write_bytes(b"PAR1 not parquet at all")
        entry = engine.load_table("docs", _table(), embed_columns=["body"])
        assert entry.vector_columns[0].dimensions == 8
        (rebuilt,) = directory.iterdir()
        assert rebuilt != damaged
        assert pq.read_table(rebuilt).num_rows == 20
        vectors = engine.sql("SELECT body_embedding FROM default.public.docs ORDER BY id")
        first = vectors.column(0)[0].as_py()
        assert first == pytest.approx(list(embedder.embed_documents(["fox 0"])[0]))


# -- hostile files ------------------------------------------------------------------------------


def _load(path: Path, database: Path, *extra: str) -> object:
    return CliRunner().invoke(
        main,
        ["load", str(path), "--database", str(database), "--embedder", "hashing", *extra],
    )


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("docs.jsonl", b'{"id": "1", "body": "ok"}\n{"id": "2", "body": "caf\xe9"}\n', ":2:"),
        ("docs.csv", b"id,body\n1,ok\n2,caf\xe9 au lait\n", ":3:"),
    ],
)
def test_invalid_utf8_in_a_file_names_the_line_and_byte(
    tmp_path: Path, name: str, content: bytes, where: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = _load(path, tmp_path / "db")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    stderr = result.stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1
    assert f"{path}{where}" in stderr
    assert "0xe9" in stderr
    assert not (tmp_path / "db" / "catalog.json").exists()


@pytest.mark.parametrize("file", ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"])
def test_invalid_utf8_in_a_beir_directory_names_the_file(tmp_path: Path, file: str) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_bytes(b'{"_id": "d1", "title": "t", "text": "fox"}\n')
    (beir / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "fox"}\n')
    (beir / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    path = beir / file
    path.write_bytes(path.read_bytes() + b"\xff\xfe\n")
    result = _load(beir, tmp_path / "db")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert str(path) in result.stderr  # type: ignore[attr-defined]
    assert "not UTF-8" in result.stderr  # type: ignore[attr-defined]


def test_csv_keys_are_kept_as_written(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_text("id,body\n001,red fox\n1e3,blue fox\n10,green fox\n")
    result = _load(path, tmp_path / "db")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    with LocalEngine(tmp_path / "db") as engine:
        keys = engine.sql("SELECT id FROM default.public.docs ORDER BY body").column("id")
        assert keys.to_pylist() == ["1e3", "10", "001"]


def test_a_named_csv_key_column_is_kept_as_written(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_text("Code,body\n007,red fox\n7,blue fox\n")
    result = _load(path, tmp_path / "db", "--key-column", "code")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    with LocalEngine(tmp_path / "db") as engine:
        keys = engine.sql("SELECT code FROM default.public.docs ORDER BY body").column("code")
        assert keys.to_pylist() == ["7", "007"]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_row_over_a_megabyte_loads(tmp_path: Path, suffix: str) -> None:
    long_text = "fox " * 600_000  # 2.4 MB in one row
    path = tmp_path / f"docs{suffix}"
    if suffix == ".jsonl":
        rows = [{"id": "1", "body": "short"}, {"id": "2", "body": long_text}]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        path.write_text(f"id,body\n1,short\n2,{long_text}\n")
    result = _load(path, tmp_path / "db", "--no-embed")
    assert result.exit_code == 0, result.stderr  # type: ignore[attr-defined]
    with LocalEngine(tmp_path / "db") as engine:
        lengths = engine.sql(
            "SELECT id, length(body) AS n FROM default.public.docs ORDER BY id"
        ).to_pylist()
        assert lengths == [{"id": "1", "n": 5}, {"id": "2", "n": len(long_text)}]


def test_a_truncated_index_segment_marks_only_its_table_damaged(tmp_path: Path) -> None:
    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        broken = engine.load_table("broken", _table(), text_columns=["body"])
        engine.load_table("fine", _table(), text_columns=["body"])
    index = root / "tables" / "broken" / broken.version / "bm25" / "body"
    for segment_file in index.iterdir():
        if segment_file.suffix in (".term", ".idx", ".pos", ".fast", ".fieldnorm", ".store"):
            segment_file.write_bytes(segment_file.read_bytes()[:5])  # tantivy panics on these
    with LocalEngine(root) as engine:
        assert set(engine.damaged_tables) == {"broken"}
        assert _search(engine, "fine", "fox") == [0, 1, 2]
        engine.load_table("broken", _table(word="anew"), text_columns=["body"])
        assert _search(engine, "broken", "anew") == [0, 1, 2]


@pytest.mark.parametrize(
    "catalog",
    [
        '{"format": 1, "tables": null}',
        '{"format": 1, "tables": []}',
        '{"format": 1, "tables": {"docs": "text"}}',
        '{"format": 99, "tables": {}}',
        '{"format": 1, "tables": {"docs": {"name": "docs", "version": "v", "rows": 1e400, '
        '"key_column": "id", "columns": ["id"]}}}',
        "[" * 200_000 + "]" * 200_000,
        "not json",
    ],
)
def test_a_damaged_catalog_is_one_line_naming_it(tmp_path: Path, catalog: str) -> None:
    root = tmp_path / "db"
    root.mkdir()
    (root / "catalog.json").write_text(catalog)
    with pytest.raises(DatabaseError) as caught:
        LocalEngine(root)
    assert "\n" not in str(caught.value)
    assert str(root / "catalog.json") in str(caught.value)
    result = CliRunner().invoke(main, ["search", "fox", "--table", "docs", "--database", str(root)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "catalog.json" in result.stderr


def test_no_inodes_left_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalEngine(tmp_path / "db") as engine:
        real_mkdir = Path.mkdir

        def no_inodes(self: Path, *args: object, **kwargs: object) -> None:
            if "staging" in self.parts:
                raise OSError(errno.ENOSPC, "No space left on device")
            real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Path, "mkdir", no_inodes)
        with pytest.raises(DatabaseError, match="No space left on device; nothing was written"):
            engine.load_table("docs", _table(), text_columns=["body"])


def test_a_read_only_index_directory_is_searched_from_a_private_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tantivy

    root = tmp_path / "db"
    with LocalEngine(root) as engine:
        engine.load_table("docs", _table(), text_columns=["body"])
    real_open = tantivy.Index.open
    opened: list[str] = []

    def locked(path: str) -> object:
        opened.append(path)
        if path.startswith(str(root)):
            raise ValueError("Failed to acquire Lockfile: Read-only file system")
        return real_open(path)

    monkeypatch.setattr(tantivy.Index, "open", locked)
    with LocalEngine(root) as engine:
        assert engine.damaged_tables == {}
        assert _search(engine, "docs", "fox") == [0, 1, 2]
        assert _search(engine, "docs", "absent") == []  # an empty result writes nothing here
    assert not opened[-1].startswith(str(root))
    assert not (root / ".scratch").exists()


def test_a_csv_with_a_byte_order_mark_keeps_its_keys(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_bytes(b"\xef\xbb\xbfid,body\r\n001,red fox\r\n1e3,blue fox\r\n")
    assert _load(path, tmp_path / "db", "--no-embed").exit_code == 0  # type: ignore[attr-defined]
    with LocalEngine(tmp_path / "db") as engine:
        keys = engine.sql("SELECT id FROM default.public.docs ORDER BY body").column("id")
        assert keys.to_pylist() == ["1e3", "001"]


def _beir_directory(tmp_path: Path, qrels: bytes) -> Path:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "t", "text": "fox"}\n{"_id": "d2", "title": "t", "text": "den"}\n'
    )
    (beir / "qrels" / "test.tsv").write_bytes(qrels)
    return beir


def test_qrels_with_crlf_and_no_header_keep_every_judgment(tmp_path: Path) -> None:
    beir = _beir_directory(tmp_path, b"q1\td1\t1\r\nq1\td2\t2\r\n")
    assert _load(beir, tmp_path / "db", "--no-embed").exit_code == 0  # type: ignore[attr-defined]
    with LocalEngine(tmp_path / "db") as engine:
        rows = engine.sql("SELECT corpus_id, score FROM qrels ORDER BY corpus_id").to_pylist()
    assert rows == [{"corpus_id": "d1", "score": 1}, {"corpus_id": "d2", "score": 2}]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("qrels", b"q1\td1\tinf\n", "relevance 'inf' is not a whole number"),
        ("qrels", b"q1\td1\t1e999\n", "relevance '1e999' is not a whole number"),
        ("corpus", b'{"_id": null, "text": "x"}\n', "document 1 has no '_id' (got None)"),
        ("corpus", b'{"_id": "d", "text": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "nested"),
    ],
)
def test_hostile_beir_values_are_one_line(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    beir = _beir_directory(tmp_path, b"q1\td1\t1\n")
    target = beir / ("qrels/test.tsv" if name == "qrels" else "corpus.jsonl")
    target.write_bytes(content)
    result = _load(beir, tmp_path / "db", "--no-embed")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert result.stderr.count("\n") == 1  # type: ignore[attr-defined]
    assert message in result.stderr  # type: ignore[attr-defined]


def test_a_deeply_nested_jsonl_line_is_refused_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "1", "body": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = _load(path, tmp_path / "db", "--no-embed")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    assert f"{path}:1: JSON nested more than 64 levels" in result.stderr  # type: ignore[attr-defined]


def test_a_jsonl_key_that_is_not_an_exact_integer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": 99999999999999999999, "body": "fox"}\n{"id": 2, "body": "den"}\n')
    result = _load(path, tmp_path / "db", "--no-embed")
    assert result.exit_code == 1  # type: ignore[attr-defined]
    message = f"{path}:1: the integer 99999999999999999999 (20 digits) does not fit a signed"
    assert message in result.stderr  # type: ignore[attr-defined]
    assert "write it as a string" in result.stderr  # type: ignore[attr-defined]
