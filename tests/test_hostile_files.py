"""Files ``hdq load`` refuses before they cost what they ask for, each with the line (or the
sizes) named: a Parquet file that decompresses past its ceiling, a line past its length, a row
past its columns, a CSV quote never closed, numbers that would not load as written. Each limit
has a case at its edge (loads) and one past it (refused).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdata_retrieval.engines.limits import DEFAULT_MAX_DECODED_BYTES
from hotdata_retrieval.engines.local import loading
from hotdata_retrieval.engines.local.loading import LoadError, read_source
from hotdata_retrieval.errors import DecodedSizeError, InvalidLimitError
from tests.parquet_bombs import write_bomb


def _rows(path: Path) -> list[dict[str, object]]:
    (table,) = read_source(path).tables.values()
    return table.to_pylist()


# -- Parquet ------------------------------------------------------------------------------


def _must_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any read of a Parquet file's values fail the test."""

    def must_not_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was read")

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", must_not_read)
    monkeypatch.setattr(pq.ParquetFile, "read", must_not_read)
    monkeypatch.setattr(pq, "read_table", must_not_read)


def _refusal(path: Path, limit: int) -> DecodedSizeError:
    with pytest.raises(DecodedSizeError) as caught:
        read_source(path, max_decoded_bytes=limit)
    error = caught.value
    assert error.limit == limit and error.size > limit and error.path == str(path)
    assert f"{error.size:,} bytes once decoded" in str(error)
    assert f"more than the {limit:,} a load may hold" in str(error)
    assert "--max-decoded-size" in str(error)  # how to raise it
    return error


def test_a_parquet_file_past_the_limit_is_refused_unread_and_one_at_its_bound_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "text.parquet"
    table = pa.table({"id": ["1"], "body": ["x" * 2_000_000]})
    pq.write_table(table, path, compression="zstd", use_dictionary=False)
    assert path.stat().st_size * 100 < table.nbytes  # compresses well
    with monkeypatch.context() as patched:
        _must_not_read(patched)
        error = _refusal(path, table.nbytes - 1)
    assert error.estimated
    assert table.nbytes <= error.size < table.nbytes + 100  # a bound, and a close one
    (loaded,) = read_source(path, max_decoded_bytes=error.size).tables.values()
    assert loaded.equals(table)


def _dictionary_bomb(path: Path, *, value_bytes: int, references: int) -> None:
    """A file whose one text value is referenced ``references`` times: small on disk and in
    its metadata, ``value_bytes * references`` once expanded."""
    body = pa.DictionaryArray.from_arrays(
        pa.array([0] * references, pa.int32()), pa.array(["x" * value_bytes])
    )
    ids = pa.array([str(n) for n in range(references)])
    pq.write_table(pa.table({"id": ids, "body": body}), path, compression="zstd")


def test_a_dictionary_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "dictionary.parquet"
    _dictionary_bomb(path, value_bytes=100_000, references=200)  # 20 MB expanded
    metadata = pq.ParquetFile(path).metadata
    stated = metadata.row_group(0).total_byte_size
    assert stated < 2_000_000 < 20_000_000  # the metadata does not tell
    error = _refusal(path, 10_000_000)
    assert not error.estimated and "counted while decoding" in str(error)
    (table,) = read_source(path, max_decoded_bytes=30_000_000).tables.values()
    rows = table.to_pylist()
    assert len(rows) == 200 and rows[0]["body"] == "x" * 100_000


@pytest.mark.parametrize(
    ("shape", "options"),
    [
        ("run of equal integers", {"rows": 1_000_000}),
        ("run of fixed-size values", {"rows": 2_000, "value_bytes": 4096}),
        ("list of equal integers", {"rows": 2, "values_per_row": 500_000}),
        ("list of fixed-size values", {"rows": 3, "values_per_row": 700, "value_bytes": 4096}),
    ],
)
def test_a_run_length_bomb_is_refused_from_its_page_headers_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str, options: dict[str, int]
) -> None:
    path = tmp_path / "bomb.parquet"
    decoded = write_bomb(path, **options)  # a few hundred bytes: one dictionary entry, one run
    assert path.stat().st_size < options.get("value_bytes", 0) + 300 and decoded >= 8_000_000
    stated = pq.ParquetFile(path).metadata.row_group(0).total_byte_size
    assert stated < 10_000  # what the metadata's sizes say is nothing like it
    with monkeypatch.context() as patched:
        _must_not_read(patched)
        error = _refusal(path, decoded - 1)
    assert error.estimated and decoded <= error.size < 1.1 * decoded + 100
    assert "bounded from its metadata and page headers before decoding" in str(error)
    (table,) = read_source(path, max_decoded_bytes=error.size).tables.values()
    assert table.nbytes <= error.size  # at its bound it loads, within it
    assert table.num_rows == options["rows"]


def test_pages_holding_more_values_than_the_metadata_states_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "lies.parquet"
    write_bomb(path, rows=1, values_per_row=100_000, stated_values=16)
    _must_not_read(monkeypatch)
    with pytest.raises(
        LoadError, match="its pages hold 100,000 values where its metadata states 16"
    ):
        read_source(path)


def test_a_prefix_encoded_text_column_loads_and_its_bomb_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "delta.parquet"
    table = pa.table({"id": ["1", "2", "3"], "url": ["https://a/1", "https://a/12", None]})
    options = {"use_dictionary": False, "column_encoding": {"url": "DELTA_BYTE_ARRAY"}}
    pq.write_table(table, path, **options)
    (loaded,) = read_source(path).tables.values()
    assert loaded.equals(table)  # it did not load at all before: no dictionary for it
    bomb = pa.table({"url": ["x" * 100_000] * 200})  # each value its predecessor, again
    pq.write_table(bomb, path, compression="zstd", **options)
    assert path.stat().st_size < 5_000
    error = _refusal(path, 10_000_000)
    assert not error.estimated
    assert read_source(path, max_decoded_bytes=30_000_000).tables["delta"].num_rows == 200


@pytest.mark.parametrize(
    ("kind", "width"),
    [(pa.decimal128(9, 2), 16), (pa.int8(), 4), (pa.float16(), 2), (pa.uint16(), 4)],
)
def test_a_value_is_bounded_by_the_wider_of_its_stored_and_its_arrow_type(
    tmp_path: Path, kind: pa.DataType, width: int
) -> None:
    path = tmp_path / "typed.parquet"
    values = pa.array([0] * 10_000, pa.int8()).cast(kind)
    pq.write_table(pa.table({"v": values}), path)
    error = _refusal(path, 1)
    assert width * 10_000 <= error.size <= width * 10_000 + 10_000 / 4  # and 2 bits a value


def test_a_parquet_value_longer_than_a_line_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "long.parquet"
    pq.write_table(pa.table({"id": ["1", "2"], "body": ["x" * 1000, "y" * 1001]}), path)
    with pytest.raises(LoadError, match="column 'body' holds a value of 1,001 bytes"):
        read_source(path)
    pq.write_table(pa.table({"id": ["1"], "body": ["x" * 1000]}), path)
    assert _rows(path) == [{"id": "1", "body": "x" * 1000}]


def test_an_all_null_dictionary_column_loads(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    body = pa.DictionaryArray.from_arrays(
        pa.array([None, None], pa.int32()), pa.array([], pa.string())
    )
    pq.write_table(pa.table({"id": ["1", "2"], "body": body}), path)
    assert [row["body"] for row in _rows(path)] == [None, None]


def test_the_decoded_limit_is_four_gibibytes_and_must_be_a_whole_number() -> None:
    assert DEFAULT_MAX_DECODED_BYTES == 4 << 30
    for bad in (0, -1, 1.5, True, "4GiB"):
        with pytest.raises(InvalidLimitError, match="max_decoded_bytes"):
            read_source("anything.csv", max_decoded_bytes=bad)  # type: ignore[arg-type]


# -- lines and columns --------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_line_at_its_limit_loads_and_one_past_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setattr(loading, "MAX_LINE_BYTES", 200)
    path = tmp_path / f"docs{suffix}"

    def line(length: int) -> str:
        if suffix == ".jsonl":
            text = json.dumps({"id": "1", "body": ""})
            return text[:-2] + "x" * (length - len(text) - 1) + '"}\n'
        return "1," + "x" * (length - 3) + "\n"

    header = "" if suffix == ".jsonl" else "id,body\n"
    path.write_text(header + line(200))
    assert len(_rows(path)) == 1
    path.write_text(header + line(201))
    number = 1 if suffix == ".jsonl" else 2
    with pytest.raises(LoadError, match=f"{path}:{number}: the line is longer than 200 bytes"):
        read_source(path)


def test_a_json_object_of_too_many_keys_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.jsonl"
    at_limit = {"id": "1", **{f"c{i}": i for i in range(loading.MAX_COLUMNS - 1)}}
    path.write_text(json.dumps(at_limit) + "\n")
    assert len(_rows(path)) == 1
    path.write_text(json.dumps({**at_limit, "one_more": 1}) + "\n")
    with pytest.raises(LoadError, match=r"wide.jsonl:1: the object has 1,001 keys"):
        read_source(path)


def test_a_csv_row_of_too_many_fields_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    names = ["id", *(f"c{i}" for i in range(loading.MAX_COLUMNS - 1))]
    path.write_text(",".join(names) + "\n" + ",".join("1" for _ in names) + "\n")
    assert len(_rows(path)) == 1
    path.write_text(",".join([*names, "extra"]) + "\n" + ",".join("1" for _ in names) + ",1\n")
    with pytest.raises(LoadError, match=r"wide.csv:1: the row has 1,001 fields"):
        read_source(path)


# -- CSV quoting --------------------------------------------------------------------------


def test_a_quote_never_closed_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "open.csv"
    path.write_text('id,body\n1,fine\n2,"opens here\n3,and swallows\n4,the rest\n')
    with pytest.raises(LoadError, match=r"open.csv:3: a quote opened on this line is never"):
        read_source(path)


def test_a_quoted_field_across_lines_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "multi.csv"
    path.write_text('id,body\n1,"two\nlines, and ""quotes"""\n2,plain\n')
    assert _rows(path) == [
        {"id": "1", "body": 'two\nlines, and "quotes"'},
        {"id": "2", "body": "plain"},
    ]


def test_carriage_return_line_endings_load(tmp_path: Path) -> None:
    path = tmp_path / "mac.csv"
    path.write_bytes(b'id,body\r1,"a\rb"\r2,plain\r')
    assert _rows(path) == [{"id": "1", "body": "a\rb"}, {"id": "2", "body": "plain"}]


def test_a_quote_inside_a_field_is_text(tmp_path: Path) -> None:
    path = tmp_path / "inches.csv"
    path.write_text('id,body\n1,a 5" screen\n2,plain\n')
    assert [row["body"] for row in _rows(path)] == ['a 5" screen', "plain"]


def test_a_header_naming_one_column_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "twice.csv"
    path.write_text("id,body,Body\n1,a,b\n")
    with pytest.raises(LoadError, match=r"twice.csv: columns 'body' and 'Body' differ only"):
        read_source(path)


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("id,,body", r"empty.csv: column must not be empty"),
        ('id,"a""b",body', r"empty.csv: column must not contain a double quote, got 'a\"b'"),
        ("id,\u03a3,\u03c3", r"empty.csv: columns '\u03a3' and '\u03c3' differ only in case"),
    ],
)
def test_a_header_no_engine_could_store_is_refused_on_reading(
    tmp_path: Path, header: str, message: str
) -> None:
    path = tmp_path / "empty.csv"
    path.write_text(f"{header}\n1,a,b\n", encoding="utf-8")
    with pytest.raises(LoadError, match=message):
        read_source(path)


def test_a_stray_quote_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "stray.csv"
    path.write_text('id,body\n1,"closed" then more\n')
    with pytest.raises(LoadError, match=r"stray.csv:2: not CSV"):
        read_source(path)


# -- numbers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "NaN is not a JSON number"),
        ("Infinity", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e400", "the number 1e400 is too large for a float"),
        ("9" * 5000, r"the integer 9{24}… \(5000 digits\) does not fit a signed 64-bit integer"),
        ("9223372036854775808", r"the integer 9223372036854775808 \(19 digits\) does not fit"),
    ],
)
def test_a_json_number_that_would_not_load_as_written_is_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "numbers.jsonl"
    path.write_text('{"id": "1", "n": 1}\n' + f'{{"id": "2", "n": {value}}}\n')
    with pytest.raises(LoadError, match=f"numbers.jsonl:2: {message}"):
        read_source(path)


def test_json_numbers_at_the_edges_load(tmp_path: Path) -> None:
    path = tmp_path / "edges.jsonl"
    path.write_text(
        '{"id": "1", "n": 9223372036854775807, "f": 1.7976931348623157e308}\n'
        '{"id": "2", "n": -9223372036854775808, "f": -0.0}\n'
    )
    assert [row["n"] for row in _rows(path)] == [2**63 - 1, -(2**63)]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("inf", "'inf' is not a finite number"),
        ("-inf", "'-inf' is not a finite number"),
        ("9" * 5000, r"the integer 9{24}… \(5000 digits\) does not fit a signed 64-bit integer"),
        ("12345678901234567890", r"the integer 12345678901234567890 \(20 digits\) does not"),
    ],
)
def test_a_csv_number_that_would_not_load_as_written_is_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "numbers.csv"
    path.write_text(f"id,n\n1,1.5\n2,{value}\n")
    with pytest.raises(LoadError, match=f"numbers.csv:3: column 'n': {message}"):
        read_source(path)


def test_a_hexadecimal_integer_in_a_csv_keeps_its_text(tmp_path: Path) -> None:
    path = tmp_path / "hex.csv"
    path.write_text("id,n,m\n1,0x10,7\n2,12,8\n")
    rows = _rows(path)
    assert [row["n"] for row in rows] == ["0x10", "12"]  # pyarrow alone reads 16
    assert [row["m"] for row in rows] == [7, 8]


@pytest.mark.parametrize("word", ["NA", "N/A", "NaN", "nan", "#N/A", "None"])
def test_only_empty_and_null_read_as_null_in_a_csv(tmp_path: Path, word: str) -> None:
    path = tmp_path / "nulls.csv"
    path.write_text(f"id,country\n1,{word}\n2,\n3,NULL\n4,US\n")
    assert [row["country"] for row in _rows(path)] == [word, None, None, "US"]


def test_a_quoted_long_integer_in_a_csv_is_text(tmp_path: Path) -> None:
    path = tmp_path / "text.csv"
    path.write_text('id,n\n1,"12345678901234567890"\n2,x\n')
    assert [row["n"] for row in _rows(path)] == ["12345678901234567890", "x"]


# -- what the metadata and the objects do not tell -----------------------------------------


@pytest.mark.parametrize("shape", ["binary", "list", "struct"])
def test_a_dictionary_bomb_at_any_depth_is_refused_before_it_expands(
    tmp_path: Path, shape: str
) -> None:
    rows = 200
    indices = pa.array([0] * rows, pa.int32())
    value = "x" * 100_000
    if shape == "binary":
        column = pa.DictionaryArray.from_arrays(indices, pa.array([value.encode()]))
    elif shape == "list":
        offsets = pa.array(list(range(rows + 1)), pa.int32())
        column = pa.ListArray.from_arrays(
            offsets, pa.DictionaryArray.from_arrays(indices, pa.array([value]))
        )
    else:
        column = pa.StructArray.from_arrays(
            [pa.DictionaryArray.from_arrays(indices, pa.array([value]))], names=["text"]
        )
    path = tmp_path / f"{shape}.parquet"
    table = pa.table({"id": [str(n) for n in range(rows)], "payload": column})
    pq.write_table(table, path, compression="zstd", store_schema=False)  # no Arrow types kept
    error = _refusal(path, 10_000_000)  # 20 MB once expanded
    assert not error.estimated
    (loaded,) = read_source(path, max_decoded_bytes=30_000_000).tables.values()
    first = loaded.column("payload")[0].as_py()
    assert first in (value.encode(), [value], {"text": value})  # read back as it was written


def test_json_lines_are_held_to_the_columns_of_a_table(tmp_path: Path) -> None:
    path = tmp_path / "wide.jsonl"
    half = loading.MAX_COLUMNS // 2
    lines = [{"id": line, **{f"k{line}_{j}": 1 for j in range(half)}} for line in range(3)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(LoadError, match=r"wide.jsonl:2: the file's objects hold 1,0\d\d distinct"):
        read_source(path)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines[:1]))
    assert len(_rows(path)) == 1


def test_json_lines_are_held_to_a_number_of_nested_fields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loading, "MAX_FIELDS", 50)
    path = tmp_path / "nested.jsonl"
    nested = {f"a{i}": {f"b{j}": 1 for j in range(7)} for i in range(7)}  # 7 + 49 fields
    path.write_text(json.dumps({"id": 1, "m": nested}) + "\n")
    with pytest.raises(LoadError, match="more than 50 distinct fields, nested ones included"):
        read_source(path)
    monkeypatch.setattr(loading, "MAX_FIELDS", 60)
    assert _rows(path)[0]["m"]["a6"]["b6"] == 1


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_an_integer_a_float_would_round_is_refused_in_a_column_of_fractions(
    tmp_path: Path, suffix: str
) -> None:
    path = tmp_path / f"rounded{suffix}"
    if suffix == ".jsonl":
        path.write_text('{"id": 1, "n": 1.5}\n{"id": 2, "n": 9007199254740993}\n')
    else:
        path.write_text("id,n\n1,1.5\n2,9007199254740993\n")
    with pytest.raises(LoadError, match=r":3?2?: .*9007199254740993 is in a (field|column) of"):
        read_source(path)
    exact = 2**53 + 2  # a float holds this one exactly
    path.write_text(
        f'{{"id": 1, "n": 1.5}}\n{{"id": 2, "n": {exact}}}\n'
        if suffix == ".jsonl"
        else f"id,n\n1,1.5\n2,{exact}\n"
    )
    assert [row["n"] for row in _rows(path)] == [1.5, float(exact)]


def test_a_number_written_with_a_leading_zero_keeps_its_text(tmp_path: Path) -> None:
    path = tmp_path / "codes.csv"
    path.write_text("id,zip,code,n\n1,02134,007,5\n2,10001,8,6\n3,0,0.5,7\n")
    rows = _rows(path)
    assert [row["zip"] for row in rows] == ["02134", "10001", "0"]
    assert [row["code"] for row in rows] == ["007", "8", "0.5"]
    assert [row["n"] for row in rows] == [5, 6, 7]


# -- a load never holds more than its limit ------------------------------------------------

_COLUMN_TYPES = [
    pa.int8(),
    pa.int64(),
    pa.float64(),
    pa.bool_(),
    pa.string(),
    pa.binary(),
    pa.list_(pa.int64()),
    pa.list_(pa.list_(pa.string())),
    pa.struct([("a", pa.int32()), ("b", pa.string())]),
    pa.dictionary(pa.int32(), pa.string()),
]


def _values(kind: pa.DataType) -> st.SearchStrategy[object]:
    text = st.text(max_size=40)
    if pa.types.is_integer(kind):
        return st.integers(-100, 100)
    if pa.types.is_floating(kind):
        return st.floats(allow_nan=False)
    if pa.types.is_boolean(kind):
        return st.booleans()
    if pa.types.is_binary(kind):
        return st.binary(max_size=40)
    if pa.types.is_list(kind):
        return st.lists(st.none() | _values(kind.value_type), max_size=6)
    if pa.types.is_struct(kind):
        return st.fixed_dictionaries({"a": st.integers(-5, 5), "b": text})
    return st.sampled_from(["", "x" * 300, "short"]) | text  # repeated: dictionaries pay


@st.composite
def _tables(draw: st.DrawFn) -> pa.Table:
    kinds = draw(st.lists(st.sampled_from(_COLUMN_TYPES), min_size=1, max_size=4))
    rows = draw(st.integers(0, 60))
    columns = {}
    for position, kind in enumerate(kinds):
        values = draw(st.lists(st.none() | _values(kind), min_size=rows, max_size=rows))
        if pa.types.is_dictionary(kind):
            columns[f"c{position}"] = pa.array(values, pa.string()).dictionary_encode()
        else:
            columns[f"c{position}"] = pa.array(values, kind)
    return pa.table(columns)


@settings(max_examples=80, deadline=None)
@given(
    table=_tables(),
    dictionary=st.booleans(),
    delta=st.booleans(),
    compression=st.sampled_from(["none", "zstd", "snappy"]),
    page_version=st.sampled_from(["1.0", "2.0"]),
    group_rows=st.integers(1, 64),
)
def test_a_parquet_load_never_holds_more_than_its_limit(
    table: pa.Table,
    dictionary: bool,
    delta: bool,
    compression: str,
    page_version: str,
    group_rows: int,
) -> None:
    texts = [
        field.name
        for field in table.schema
        if pa.types.is_string(field.type) or pa.types.is_binary(field.type)
    ]
    encoding = {name: "DELTA_BYTE_ARRAY" for name in texts} if delta and not dictionary else None
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "t.parquet"
        pq.write_table(
            table,
            path,
            use_dictionary=dictionary,
            column_encoding=encoding,
            compression=compression,
            data_page_version=page_version,
            row_group_size=group_rows,
        )
        (loaded,) = read_source(path).tables.values()
        expected = table.cast(
            pa.schema(
                [
                    field.with_type(pa.string()) if pa.types.is_dictionary(field.type) else field
                    for field in table.schema
                ]
            )
        )
        assert loaded.equals(expected)  # read back as written
        if loaded.nbytes > 1:  # a limit is at least 1 byte (one int8 value is 1 byte)
            with pytest.raises(DecodedSizeError):
                read_source(path, max_decoded_bytes=loaded.nbytes - 1)


# -- CSV, JSON lines and BEIR: bounded line by line, before decoding -----------------------


def _must_not_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_decode(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was decoded")

    monkeypatch.setattr(loading.pa_json, "read_json", must_not_decode)
    monkeypatch.setattr(loading.pa_csv, "read_csv", must_not_decode)
    monkeypatch.setattr(loading.pa_csv, "open_csv", must_not_decode)


@pytest.mark.parametrize("shape", ["rows", "list elements"])
def test_a_json_lines_file_of_empty_objects_is_refused_before_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    path = tmp_path / "objects.jsonl"
    wide = {f"k{key}": 1 for key in range(100)}
    if shape == "rows":
        path.write_text(json.dumps(wide) + "\n" + "{}\n" * 3000)
    else:
        path.write_text(
            json.dumps({"items": [wide]}) + "\n" + '{"items":[' + "{}," * 2999 + "{}]}\n"
        )
    (loaded,) = read_source(path).tables.values()
    assert loaded.nbytes > 100 * path.stat().st_size  # each {} a row or element of 100 fields
    with monkeypatch.context() as patched:
        _must_not_decode(patched)
        error = _refusal(path, loaded.nbytes - 1)
    assert error.estimated and loaded.nbytes <= error.size < 1.1 * loaded.nbytes + 50_000
    read_source(path, max_decoded_bytes=error.size)  # at its bound it loads


def test_a_csv_file_of_empty_fields_is_refused_before_it_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "empty.csv"
    names = [f"c{column}" for column in range(100)]
    path.write_text(
        ",".join(names) + "\n" + ",".join("1" for _ in names) + "\n" + ("," * 99 + "\n") * 3000
    )
    (loaded,) = read_source(path).tables.values()
    assert loaded.nbytes > 7 * path.stat().st_size  # an empty int64 field is 8 bytes
    with monkeypatch.context() as patched:
        _must_not_decode(patched)
        error = _refusal(path, loaded.nbytes - 1)
    assert error.estimated and "3,001 rows of 100 columns" in str(error)
    assert loaded.nbytes <= error.size < 1.2 * loaded.nbytes
    read_source(path, max_decoded_bytes=error.size)


def test_a_beir_directory_is_counted_as_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": str(n), "text": "x" * 1000}) + "\n" for n in range(100_000))
    )
    error = _refusal(tmp_path, 50_000_000)  # 200 MB: text and body
    assert not error.estimated and "counted while reading" in str(error)
    assert "corpus.jsonl, document" in str(error)
    tables = read_source(tmp_path, max_decoded_bytes=300_000_000).tables
    assert tables["corpus"].num_rows == 100_000
    assert tables["corpus"].column("body")[-1].as_py() == "x" * 1000


def test_csv_number_checks_find_the_first_line_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "numbers.csv"
    rows = 150_000  # past the reader's 1 MiB block: read again in several batches
    path.write_text("id,n\n" + "".join(f"{row},1.5\n" for row in range(rows)) + "9,inf\n")
    with pytest.raises(LoadError, match=f"numbers.csv:{rows + 2}: column 'n': 'inf' is not"):
        read_source(path)
    path.write_text("id,n\n" + "".join(f"{row},1.5\n" for row in range(rows)) + "9,007\n1,inf\n")
    (table,) = read_source(path).tables.values()  # a code before the infinity: text
    assert table.column("n")[rows].as_py() == "007" and table.column("n")[0].as_py() == "1.5"


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "id": st.integers(0, 10**6),
                "n": st.none() | st.integers(-(2**40), 2**40) | st.floats(-1e9, 1e9),
                "t": st.none() | st.text(alphabet="abc xyz", max_size=30),
                "b": st.none() | st.booleans(),
            }
        ),
        min_size=1,
        max_size=40,
    ),
    suffix=st.sampled_from([".jsonl", ".csv"]),
)
def test_a_text_file_load_never_holds_more_than_its_limit(
    rows: list[dict[str, object]], suffix: str
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"t{suffix}"
        if suffix == ".jsonl":
            path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        else:
            lines = [
                ",".join("" if row[key] is None else str(row[key]) for key in row) for row in rows
            ]
            path.write_text("id,n,t,b\n" + "".join(line + "\n" for line in lines))
        (loaded,) = read_source(path).tables.values()
        assert loaded.num_rows == len(rows)
        with pytest.raises(DecodedSizeError):
            read_source(path, max_decoded_bytes=loaded.nbytes - 1)
