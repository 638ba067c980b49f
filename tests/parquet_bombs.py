"""Parquet files written byte by byte, as a hostile writer would: a few hundred bytes on disk
that decode to gigabytes, made in microseconds (pyarrow's writer would encode every value).

Each file is ``PAR1``, a dictionary page of one value, one data page whose values are one run
of index 0 (the RLE/bit-packed hybrid encoding, bit width 0), the footer (``FileMetaData``)
and ``PAR1`` again; the structs are Thrift's compact protocol. The layouts follow the Apache
Parquet format's ``parquet.thrift`` and ``Encodings.md``, and the Apache Thrift compact
protocol specification.
"""

from __future__ import annotations

import struct
from pathlib import Path

# parquet.thrift's enums
_INT64, _FIXED_LEN_BYTE_ARRAY = 2, 7
_REQUIRED, _OPTIONAL, _REPEATED = 0, 1, 2
_PLAIN, _RLE, _RLE_DICTIONARY = 0, 3, 8
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_LIST = 3  # ConvertedType.LIST

# compact protocol types
_I32, _I64, _BINARY, _LIST_TYPE, _STRUCT = 5, 6, 8, 9, 12


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _zigzag(value: int) -> bytes:
    return _varint((value << 1) ^ (value >> 63))


Field = tuple[int, int, object]
"""A struct field: ``(id, compact type, value)``; a list's value is ``(element type,
[values])``, a struct's a list of fields."""


def _struct(fields: list[Field]) -> bytes:
    out = bytearray()
    last = 0
    for field_id, kind, value in fields:
        delta = field_id - last
        out += (
            bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(field_id)
        )
        last = field_id
        out += _value(kind, value)
    return bytes(out + b"\x00")


def _value(kind: int, value: object) -> bytes:
    if kind in (_I32, _I64):
        assert isinstance(value, int)
        return _zigzag(value)
    if kind == _BINARY:
        data = value.encode() if isinstance(value, str) else value
        assert isinstance(data, bytes)
        return _varint(len(data)) + data
    if kind == _STRUCT:
        assert isinstance(value, list)
        return _struct(value)
    assert kind == _LIST_TYPE and isinstance(value, tuple)
    element, items = value
    header = (
        bytes([(len(items) << 4) | element])
        if len(items) < 15
        else (bytes([0xF0 | element]) + _varint(len(items)))
    )
    return header + b"".join(_value(element, item) for item in items)


def _page(kind: int, body: bytes, values: int) -> bytes:
    header: list[Field] = [
        (1, _I32, kind),
        (2, _I32, len(body)),
        (3, _I32, len(body)),
    ]
    if kind == _DICTIONARY_PAGE:
        header.append((7, _STRUCT, [(1, _I32, values), (2, _I32, _PLAIN)]))
    else:
        page = [(1, _I32, values), (2, _I32, _RLE_DICTIONARY), (3, _I32, _RLE), (4, _I32, _RLE)]
        header.append((5, _STRUCT, page))
    return _struct(header) + body


def _run(count: int, value: int, bit_width: int) -> bytes:
    """One RLE run of ``count`` times ``value`` (the hybrid encoding's run header, then the
    value in ``ceil(bit_width / 8)`` bytes)."""
    return _varint(count << 1) + value.to_bytes((bit_width + 7) // 8, "little")


def _levels(runs: list[tuple[int, int]], bit_width: int) -> bytes:
    """Levels of a version 1 data page: their byte length, then their runs."""
    data = b"".join(_run(count, value, bit_width) for count, value in runs)
    return struct.pack("<I", len(data)) + data


def write_bomb(
    path: Path,
    *,
    rows: int,
    values_per_row: int = 0,
    value_bytes: int = 0,
    stated_values: int | None = None,
) -> int:
    """Write a Parquet file of one column whose every value is one dictionary entry.

    Args:
        path: where.
        rows: the rows.
        values_per_row: 0 for a column of ``int64`` (or of ``value_bytes``-byte fixed-size
            binary) values; otherwise the column is a list, each row holding this many.
        value_bytes: 0 for ``int64`` values, else the width of a fixed-size binary value.
        stated_values: what the column chunk's metadata states its values are (default:
            what its data page holds, as an honest writer states).

    Returns:
        The bytes the column decodes to (its values; offsets and validity not counted).
    """
    values = rows * (values_per_row or 1)
    physical = _FIXED_LEN_BYTE_ARRAY if value_bytes else _INT64
    width = value_bytes or 8
    entry = bytes(width)
    leaf: list[Field] = [(1, _I32, physical)]
    if value_bytes:
        leaf.append((2, _I32, value_bytes))
    if values_per_row:
        schema = [
            [(4, _BINARY, "schema"), (5, _I32, 1)],
            [(3, _I32, _OPTIONAL), (4, _BINARY, "v"), (5, _I32, 1), (6, _I32, _LIST)],
            [(3, _I32, _REPEATED), (4, _BINARY, "list"), (5, _I32, 1)],
            [*leaf, (3, _I32, _REQUIRED), (4, _BINARY, "element")],
        ]
        path_in_schema = ["v", "list", "element"]
        # repetition levels: 0 starts a row, 1 continues it; definition level 2: present
        repetition = [(1, 0), (values_per_row - 1, 1)] * rows if values_per_row > 1 else [(rows, 0)]
        levels = _levels(repetition, 1) + _levels([(values, 2)], 2)
    else:
        schema = [
            [(4, _BINARY, "schema"), (5, _I32, 1)],
            [*leaf, (3, _I32, _REQUIRED), (4, _BINARY, "v")],
        ]
        path_in_schema = ["v"]
        levels = b""
    dictionary = _page(_DICTIONARY_PAGE, entry, 1)
    data = _page(
        _DATA_PAGE,
        levels + bytes([0]) + _run(values, 0, 0),  # bit width 0: every index is entry 0
        values,
    )
    dictionary_offset = 4
    data_offset = dictionary_offset + len(dictionary)
    chunk_bytes = len(dictionary) + len(data)
    column_metadata: list[Field] = [
        (1, _I32, physical),
        (2, _LIST_TYPE, (_I32, [_PLAIN, _RLE, _RLE_DICTIONARY])),
        (3, _LIST_TYPE, (_BINARY, path_in_schema)),
        (4, _I32, 0),  # UNCOMPRESSED
        (5, _I64, values if stated_values is None else stated_values),
        (6, _I64, chunk_bytes),
        (7, _I64, chunk_bytes),
        (9, _I64, data_offset),
        (11, _I64, dictionary_offset),
    ]
    row_group: list[Field] = [
        (1, _LIST_TYPE, (_STRUCT, [[(2, _I64, dictionary_offset), (3, _STRUCT, column_metadata)]])),
        (2, _I64, chunk_bytes),
        (3, _I64, rows),
    ]
    footer = _struct(
        [
            (1, _I32, 1),
            (2, _LIST_TYPE, (_STRUCT, schema)),
            (3, _I64, rows),
            (4, _LIST_TYPE, (_STRUCT, [row_group])),
        ]
    )
    path.write_bytes(
        b"PAR1" + dictionary + data + footer + struct.pack("<I", len(footer)) + b"PAR1"
    )
    return values * width
