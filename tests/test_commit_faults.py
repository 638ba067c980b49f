"""A commit interrupted at any step loses nothing: the previous table or the new one is always
complete, and the next commit keeps it.

Faults are injected through ``database.fault_hook`` at each step of ``commit``
(``database.FAULT_POINTS``), not by timing: every exception kind an interrupted process sees
(``KeyboardInterrupt``, ``SystemExit``, ``MemoryError``, a full disk), and ``kill -9`` of a
loading process. A trace of ``fsync`` and ``os.replace`` shows every file of the new version
flushed to disk before the catalog's rename.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from hotdata_retrieval.engines.local import DatabaseError, LocalEngine
from hotdata_retrieval.engines.local import database as database_module

OLD = [f"old fox {i}" for i in range(20)]
NEW = [f"new fox {i}" for i in range(30)]
AFTER = ["last fox"]

# Once the catalog is renamed the new version is the table; before, the old one still is.
COMMITTED_FROM = database_module.FAULT_POINTS.index("catalog_replaced")


def _data(bodies: list[str]) -> pa.Table:
    return pa.table({"id": list(range(len(bodies))), "body": bodies})


def _bodies(root: Path) -> list[str]:
    """The table as a fresh engine reads it: every row, through its BM25 index too."""
    with LocalEngine(root) as engine:
        rows = engine.sql("SELECT body FROM default.public.docs ORDER BY id").to_pylist()
        found = engine.sql(
            "SELECT count(*) AS n FROM bm25_search('default.public.docs', 'body', 'fox')"
        ).to_pylist()
    bodies = [row["body"] for row in rows]
    assert found == [{"n": len(bodies)}], "the index and the rows disagree"
    return bodies


@pytest.fixture
def root(tmp_path: Path) -> Path:
    with LocalEngine(tmp_path / "db") as engine:
        engine.load_table("docs", _data(OLD), text_columns=["body"])
    return tmp_path / "db"


@pytest.fixture
def hook() -> Iterator[None]:
    yield
    database_module.fault_hook = None


def _fail_at(point: str, error: BaseException) -> None:
    def fail(reached: str) -> None:
        if reached == point:
            raise error

    database_module.fault_hook = fail


ERRORS = {
    "KeyboardInterrupt": KeyboardInterrupt(),
    "SystemExit": SystemExit(1),
    "MemoryError": MemoryError(),
    "ENOSPC": OSError(errno.ENOSPC, "No space left on device"),
}


@pytest.mark.parametrize("point", database_module.FAULT_POINTS)
@pytest.mark.parametrize("kind", list(ERRORS))
def test_an_exception_at_any_step_keeps_the_old_or_the_new_table(
    root: Path, hook: None, point: str, kind: str
) -> None:
    _fail_at(point, ERRORS[kind])
    with (
        LocalEngine(root) as engine,
        pytest.raises((type(ERRORS[kind]), DatabaseError)),
    ):
        engine.load_table("docs", _data(NEW), text_columns=["body"])
    database_module.fault_hook = None
    committed = database_module.FAULT_POINTS.index(point) >= COMMITTED_FROM
    assert _bodies(root) == (NEW if committed else OLD)
    # The next commit removes only what the catalog no longer names.
    with LocalEngine(root) as engine:
        engine.load_table("other", _data(AFTER), text_columns=["body"])
    assert _bodies(root) == (NEW if committed else OLD)
    versions = sorted(path.name for path in (root / "tables" / "docs").iterdir())
    assert versions == [database_module.read_catalog(root)["docs"].version]


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import pyarrow as pa
    from hotdata_retrieval.engines.local import LocalEngine
    from hotdata_retrieval.engines.local import database

    root, point = sys.argv[1], sys.argv[2]

    def kill(reached):
        if reached == point:
            os.kill(os.getpid(), signal.SIGKILL)

    database.fault_hook = kill
    bodies = [f"new fox {i}" for i in range(30)]
    with LocalEngine(root) as engine:
        engine.load_table(
            "docs", pa.table({"id": list(range(30)), "body": bodies}), text_columns=["body"]
        )
    """
)


@pytest.mark.parametrize("point", database_module.FAULT_POINTS)
def test_a_load_killed_at_any_step_keeps_the_old_or_the_new_table(root: Path, point: str) -> None:
    process = subprocess.run(
        [sys.executable, "-c", KILLER, str(root), point], capture_output=True, timeout=300
    )
    assert process.returncode == -signal.SIGKILL, process.stderr.decode()
    committed = database_module.FAULT_POINTS.index(point) >= COMMITTED_FROM
    assert _bodies(root) == (NEW if committed else OLD)
    with LocalEngine(root) as engine:
        engine.load_table("other", _data(AFTER), text_columns=["body"])
    assert _bodies(root) == (NEW if committed else OLD)


def test_every_file_of_a_version_is_flushed_before_the_catalog_is_renamed(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        events.append(("replace", str(target)))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with LocalEngine(root) as engine:
        engine.load_table("docs", _data(NEW), text_columns=["body"])
    monkeypatch.undo()
    version = database_module.read_catalog(root)["docs"].version
    directory = root / "tables" / "docs" / version
    renamed = events.index(("replace", str(root / "catalog.json")))
    flushed = {path for kind, path in events[:renamed] if kind == "fsync"}
    staged = {path for kind, path in events[:renamed] if kind == "fsync" and "/staging/" in path}
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert files, "the version holds files"
    assert any(path.name == "data.parquet" for path in files)
    for path in files:
        relative = path.relative_to(directory)
        assert any(flushed_path.endswith(str(relative)) for flushed_path in staged), relative
    # The directories that gained the version, flushed after it moved and before the rename.
    for parent in (directory.parent, root / "tables"):
        assert str(parent) in flushed, parent
    assert str(root) in {path for kind, path in events[renamed:] if kind == "fsync"}


# -- the operating system's own failures, as it reports them -------------------------------


def test_a_move_the_disk_refuses_is_a_database_error_and_keeps_the_old_table(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_replace = os.replace

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        if "/tables/" in str(target):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    with LocalEngine(root) as engine, pytest.raises(DatabaseError, match="cannot move the new"):
        engine.load_table("docs", _data(NEW), text_columns=["body"])
    monkeypatch.undo()
    assert _bodies(root) == OLD


@pytest.mark.parametrize("committed", [False, True])
def test_a_directory_flush_that_fails_is_told(
    root: Path, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    real_fsync = os.fsync
    catalog_renamed = False
    real_replace = os.replace

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        nonlocal catalog_renamed
        real_replace(source, target)
        catalog_renamed = catalog_renamed or str(target).endswith("catalog.json")

    def fsync(descriptor: int) -> None:
        path = os.readlink(f"/proc/self/fd/{descriptor}")
        published = os.path.isdir(path) and "/staging/" not in path
        if published and catalog_renamed == committed:
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    told = "the write is committed, but" if committed else "cannot move the new version"
    with LocalEngine(root) as engine, pytest.raises(DatabaseError, match=told):
        engine.load_table("docs", _data(NEW), text_columns=["body"])
    monkeypatch.undo()
    assert _bodies(root) == (NEW if committed else OLD)
