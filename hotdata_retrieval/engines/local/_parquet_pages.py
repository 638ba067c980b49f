"""The page headers of a Parquet column chunk, read without decoding a page.

A column chunk's metadata (``ColumnChunk.meta_data`` in the file's footer) states how many
values it holds, but the reader decodes what each page's own header says: a page whose header
holds 2**31 values in a chunk whose metadata says 16 is decoded whole (pyarrow 26 read 100,000
values from a chunk whose metadata said 16,384). Each header is a Thrift struct in the compact
protocol, read here field by field: the page's type, its sizes, and for a data or dictionary
page its number of values and its encoding (``PageHeader``, ``DataPageHeader``,
``DataPageHeaderV2``, ``DictionaryPageHeader`` in the Apache Parquet format's
``parquet.thrift``; the encoding of each field in the Apache Thrift compact protocol
specification, ``doc/specs/thrift-compact-protocol.md``).
"""

from __future__ import annotations

from typing import BinaryIO

import attrs

from hotdata_retrieval.errors import LoadError

DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
"""``PageType`` in ``parquet.thrift``."""

DELTA_BYTE_ARRAY = 7
"""``Encoding.DELTA_BYTE_ARRAY``: each value is a prefix of the previous value plus a suffix,
so one value may be as long as all the suffixes of its page before it."""

MAX_HEADER_BYTES = 16 << 20
"""The longest page header read: Apache Arrow's C++ reader refuses longer ones too
(``kDefaultMaxPageHeaderSize``, 16 MiB)."""

_MAX_NESTING = 32
"""The deepest a header's structs may nest (a ``PageHeader`` nests 3 deep)."""

_FIRST_READ = 4096


class _Truncated(LoadError):
    """The header runs past the bytes read so far (caught here: more is read)."""


# Compact protocol type codes (thrift-compact-protocol.md, "Field types").
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)


class _Reader:
    """The compact protocol over ``data`` from offset 0; :attr:`at` is the next byte."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise _Truncated
        value = self.data[self.at]
        self.at += 1
        return value

    def varint(self) -> int:
        value = shift = 0
        while True:
            byte = self.byte()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise ValueError("a varint longer than 64 bits")

    def integer(self) -> int:
        """A zigzag varint (i16, i32, i64)."""
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def skip_bytes(self, count: int) -> None:
        if count < 0:
            raise ValueError("a negative length")
        if self.at + count > len(self.data):
            raise _Truncated
        self.at += count

    def struct(self, depth: int = 0) -> dict[int, object]:
        """The struct's integer fields and nested structs by field id (others skipped)."""
        if depth > _MAX_NESTING:
            raise ValueError(f"structs nested more than {_MAX_NESTING} deep")
        fields: dict[int, object] = {}
        field_id = 0
        while True:
            header = self.byte()
            kind = header & 0x0F
            if kind == 0:
                return fields
            delta = header >> 4
            field_id = field_id + delta if delta else self.integer()
            if kind in (_I16, _I32, _I64):
                fields[field_id] = self.integer()
            elif kind == _STRUCT:
                fields[field_id] = self.struct(depth + 1)
            else:
                self.skip(kind, depth)

    def skip(self, kind: int, depth: int) -> None:
        if kind in (_TRUE, _FALSE):
            return  # a field's boolean is its type code
        if kind == _BYTE:
            self.skip_bytes(1)
        elif kind in (_I16, _I32, _I64):
            self.varint()
        elif kind == _DOUBLE:
            self.skip_bytes(8)
        elif kind == _BINARY:
            self.skip_bytes(self.varint())
        elif kind in (_LIST, _SET):
            header = self.byte()
            size = header >> 4
            if size == 15:
                size = self.varint()
            element = header & 0x0F
            for _ in range(size):
                if element in (_TRUE, _FALSE):
                    self.skip_bytes(1)  # in a list a boolean is a byte
                else:
                    self.skip(element, depth)
        elif kind == _MAP:
            size = self.varint()
            if size:
                types = self.byte()
                for _ in range(size):
                    for element in (types >> 4, types & 0x0F):
                        if element in (_TRUE, _FALSE):
                            self.skip_bytes(1)
                        else:
                            self.skip(element, depth)
        elif kind == _STRUCT:
            self.struct(depth + 1)
        else:
            raise ValueError(f"unknown field type {kind}")


@attrs.frozen(kw_only=True)
class ChunkPages:
    """What the page headers of one column chunk say.

    Attributes:
        values: the data pages' values, summed (levels: a null and an empty list count one).
        uncompressed_bytes: every page's uncompressed size, summed (the dictionary page's too).
        largest_page: the largest uncompressed size of one page, in bytes.
        dictionary_bytes: the dictionary page's uncompressed size (0: none).
        delta_byte_array: whether a data page is ``DELTA_BYTE_ARRAY``-encoded.
    """

    values: int
    uncompressed_bytes: int
    largest_page: int
    dictionary_bytes: int
    delta_byte_array: bool


def read_chunk_pages(
    handle: BinaryIO, *, start: int, length: int, declared_values: int, where: str
) -> ChunkPages:
    """Read the page headers of the column chunk at ``start`` (``length`` bytes, headers
    included, as its metadata says), as Apache Arrow's C++ reader reads them: page after page
    until the data pages hold the ``declared_values`` the metadata states.

    Args:
        handle: the file, opened for binary reading.
        start: the chunk's first byte (its dictionary page's, if it has one).
        length: the chunk's bytes (``total_compressed_size``).
        declared_values: the values its metadata states (``num_values``).
        where: the chunk as a message names it (``column 'x' of row group 2``).

    Raises:
        LoadError: a header that cannot be read, a negative size, a chunk that runs past its
            bytes, or data pages holding more values than the metadata states (the reader
            would decode them all), naming the chunk.
    """
    values = uncompressed = largest = dictionary = 0
    delta = False
    at, end = start, start + length
    while values < declared_values:
        if at >= end:
            raise LoadError(
                f"{where}: its pages end at byte {at:,} holding {values:,} values, fewer than "
                f"the {declared_values:,} its metadata states"
            )
        header, header_length = _page_header(handle, at, where)
        kind = header.get(1)
        page_bytes, stored_bytes = header.get(2), header.get(3)
        if not isinstance(page_bytes, int) or not isinstance(stored_bytes, int):
            raise LoadError(f"{where}: the page header at byte {at:,} states no sizes")
        if page_bytes < 0 or stored_bytes < 0:
            raise LoadError(f"{where}: the page header at byte {at:,} states a negative size")
        uncompressed += page_bytes
        largest = max(largest, page_bytes)
        if kind in (DATA_PAGE, DATA_PAGE_V2):
            body = header.get(5 if kind == DATA_PAGE else 8)
            count = body.get(1) if isinstance(body, dict) else None
            encoding = body.get(2 if kind == DATA_PAGE else 4) if isinstance(body, dict) else None
            if not isinstance(count, int) or count < 0:
                raise LoadError(f"{where}: the data page at byte {at:,} states no number of values")
            values += count
            delta = delta or encoding == DELTA_BYTE_ARRAY
        elif kind == DICTIONARY_PAGE:
            dictionary += page_bytes
        at += header_length + stored_bytes
    if values > declared_values:
        raise LoadError(
            f"{where}: its pages hold {values:,} values where its metadata states "
            f"{declared_values:,}; the file is damaged or made to mislead"
        )
    return ChunkPages(
        values=values,
        uncompressed_bytes=uncompressed,
        largest_page=largest,
        dictionary_bytes=dictionary,
        delta_byte_array=delta,
    )


def _page_header(handle: BinaryIO, at: int, where: str) -> tuple[dict[int, object], int]:
    """The page header at byte ``at`` and its length in bytes."""
    size = _FIRST_READ
    while True:
        handle.seek(at)
        data = handle.read(size)
        reader = _Reader(data)
        try:
            return reader.struct(), reader.at
        except _Truncated:
            if len(data) < size:
                raise LoadError(f"{where}: the page header at byte {at:,} is cut off") from None
            if size >= MAX_HEADER_BYTES:
                raise LoadError(
                    f"{where}: the page header at byte {at:,} is longer than "
                    f"{MAX_HEADER_BYTES:,} bytes"
                ) from None
            size *= 4
        except ValueError as error:
            raise LoadError(f"{where}: the page header at byte {at:,}: {error}") from None
