"""Small files that decode to gigabytes, loaded by ``hdq load`` in a process of its own whose
peak memory is read at its exit (``VmHWM``, its own high-water mark: ``ru_maxrss`` keeps the
parent's across fork and exec): each is refused, naming its decoded size and the limit,
having held about nothing of it.

Before the loaders bounded what a file holds decoded, a 135-byte Parquet file of one integer
run 540 million times peaked at 5.6 GB before it was refused, a 200-byte one of two lists of
270 million at 11.4 GB, and a 1.8 MB JSON lines file of empty objects beside one of 1,000
keys would have loaded at about 9 GB (611 KB of them loaded at 3.0 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.parquet_bombs import write_bomb

_LOAD = """
import atexit, sys
def _peak():
    # VmHWM is this process's own high-water mark; ru_maxrss would keep the parent's, which
    # Linux carries across fork and exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print(f"peak_rss_kib={line.split()[1]}", file=sys.stderr)
atexit.register(_peak)
from hotdata_retrieval.cli import main
sys.argv = ["hdq", "load", *sys.argv[1:]]
main()
"""

_GIB = 1 << 30


def _load(source: Path, database: Path, *options: str) -> tuple[int, str, int]:
    """``hdq load SOURCE`` in a process of its own: ``(exit code, stderr, peak RSS bytes)``."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _LOAD,
            str(source),
            "--database",
            str(database),
            "--no-embed",
            *options,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stderr.splitlines()
    (peak,) = [int(line.split("=")[1]) for line in lines if line.startswith("peak_rss_kib=")]
    message = "\n".join(line for line in lines if not line.startswith("peak_rss_kib="))
    return done.returncode, message, peak * 1024


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak of ``hdq load`` on a file of two rows: the interpreter and its imports."""
    directory = tmp_path_factory.mktemp("baseline")
    source = directory / "tiny.jsonl"
    source.write_text('{"id": "1", "body": "a"}\n{"id": "2", "body": "b"}\n')
    code, message, peak = _load(source, directory / "db")
    assert code == 0, message
    return peak


def _assert_refused_holding_nothing(
    code: int, message: str, peak: int, baseline: int, *, decoded: int, limit: int
) -> None:
    assert code == 1, message
    assert "hdq load: error:" in message and "bytes once decoded" in message
    assert f"more than the {limit:,} a load may hold" in message
    assert "--max-decoded-size" in message
    assert peak < _GIB < decoded  # bounded, and far below what the file decodes to
    assert peak - baseline < 64 << 20  # about nothing of it was held


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("run-length", {"rows": 540_000_000}),  # one int64 dictionary entry, one run
        ("list", {"rows": 2, "values_per_row": 270_000_000}),  # two lists of one run each
    ],
)
def test_a_parquet_bomb_is_refused_before_it_is_decoded(
    tmp_path: Path, baseline: int, kind: str, options: dict[str, int]
) -> None:
    source = tmp_path / f"{kind}.parquet"
    decoded = write_bomb(source, **options)
    assert source.stat().st_size < 256 and decoded > 4 * _GIB
    code, message, peak = _load(source, tmp_path / "db")
    _assert_refused_holding_nothing(code, message, peak, baseline, decoded=decoded, limit=4 * _GIB)
    assert "bounded from its metadata and page headers before decoding" in message
    assert not (tmp_path / "db" / "catalog.json").exists()  # nothing written


def test_a_json_lines_bomb_is_refused_before_it_is_decoded(tmp_path: Path, baseline: int) -> None:
    source = tmp_path / "objects.jsonl"
    with source.open("w") as handle:
        handle.write(json.dumps({"id": 0, **{f"k{key}": 1 for key in range(999)}}) + "\n")
        handle.write("{}\n" * 600_000)  # each a row of 1,000 columns of 8 bytes
    decoded = 600_001 * 1000 * 8
    assert source.stat().st_size < 2_000_000
    code, message, peak = _load(source, tmp_path / "db")
    _assert_refused_holding_nothing(code, message, peak, baseline, decoded=decoded, limit=4 * _GIB)
    assert "600,001 rows of 1,000 columns" in message


def test_a_json_lines_list_bomb_is_refused_before_it_is_decoded(
    tmp_path: Path, baseline: int
) -> None:
    source = tmp_path / "lists.jsonl"
    wide = {"id": 0, "items": [{f"k{key}": 1 for key in range(999)}]}
    with source.open("w") as handle:
        handle.write(json.dumps(wide) + "\n")
        for row in range(1, 101):  # each element an object of 999 fields of 8 bytes
            handle.write(
                json.dumps({"id": row, "items": [{}] * 6000}, separators=(",", ":")) + "\n"
            )
    decoded = 100 * 6000 * 999 * 8
    assert source.stat().st_size < 2_000_000
    code, message, peak = _load(source, tmp_path / "db")
    _assert_refused_holding_nothing(code, message, peak, baseline, decoded=decoded, limit=4 * _GIB)


def test_a_csv_bomb_is_refused_before_it_is_decoded(tmp_path: Path, baseline: int) -> None:
    # A CSV field decodes to at most 8 bytes and a bit, so no small CSV file decodes past
    # 4 GiB: the limit is lowered to 16 MiB, and a file that decodes to 160 MB is refused.
    source = tmp_path / "empty.csv"
    columns = 1000
    with source.open("w") as handle:
        handle.write(",".join(f"c{column}" for column in range(columns)) + "\n")
        handle.write(",".join("1" for _ in range(columns)) + "\n")  # every column int64
        handle.write(("," * (columns - 1) + "\n") * 20_000)  # then only empty fields
    decoded = 20_001 * columns * 8
    assert source.stat().st_size < decoded // 7
    code, message, peak = _load(source, tmp_path / "db", "--max-decoded-size", "16")
    assert code == 1, message
    assert f"more than the {16 << 20:,} a load may hold" in message
    assert "20,001 rows of 1,000 columns" in message
    assert peak - baseline < decoded // 4  # the pre-pass holds a line, never the table


_READ = """
import atexit, sys
def _peak():
    # VmHWM is this process's own high-water mark; ru_maxrss would keep the parent's, which
    # Linux carries across fork and exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            print(f"peak_rss_kib={line.split()[1]}", file=sys.stderr)
atexit.register(_peak)
from hotdata_retrieval.engines.local.loading import read_source
(table,) = read_source(sys.argv[1], max_decoded_bytes=int(sys.argv[2])).tables.values()
print(table.num_rows, table.nbytes)
"""


def test_a_file_under_the_limit_loads_holding_what_it_decodes_to(
    tmp_path: Path, baseline: int
) -> None:
    source = tmp_path / "runs.parquet"
    decoded = write_bomb(source, rows=32_000_000)  # 256 MB of int64, 135 bytes on disk
    limit = decoded + decoded // 16
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(source), str(limit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["32000000", str(decoded)]
    (peak,) = [
        int(line.split("=")[1]) * 1024
        for line in done.stderr.splitlines()
        if line.startswith("peak_rss_kib=")
    ]
    assert peak - baseline < decoded + (64 << 20)  # the table and about a batch
    code, message, _ = _load(source, tmp_path / "db", "--max-decoded-size", str(decoded >> 20))
    assert code == 1 and "bounded from its metadata and page headers" in message


def test_a_large_dictionary_read_in_many_batches_is_held_once_expanded(
    tmp_path: Path, baseline: int
) -> None:
    # Each batch of a dictionary-encoded column carries its own copy of the dictionary:
    # held as read, 33 batches of this file would hold 33 copies of its 10 MB dictionary.
    source = tmp_path / "dictionary.parquet"
    entries = pa.array([f"{entry:08d}" + "z" * 92 for entry in range(100_000)])
    column = pa.DictionaryArray.from_arrays(pa.array(np.zeros(2_000_000, np.int32)), entries)
    pq.write_table(
        pa.table({"body": column}),
        source,
        row_group_size=2_000_000,
        dictionary_pagesize_limit=64 << 20,
    )
    decoded = 2_000_000 * (100 + 4)  # every row the first entry: its bytes and an offset
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(source), str(4 * _GIB)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows, held = (int(value) for value in done.stdout.split())
    assert rows == 2_000_000 and decoded <= held < decoded + (1 << 20)
    (peak,) = [
        int(line.split("=")[1]) * 1024
        for line in done.stderr.splitlines()
        if line.startswith("peak_rss_kib=")
    ]
    # The table, a batch, its dictionary and the allocator's slack (313-318 MB above the
    # baseline measured on a loaded machine); holding every batch's copy reaches 572 MB.
    assert peak - baseline < decoded + (160 << 20)
