"""Read a Parquet file within a limit on what it holds once decoded.

Bounded before a value is decoded, per row group and column chunk, from the file's metadata
and its page headers (:mod:`._parquet_pages`, which also refuses pages that hold more values
than the metadata states):

- a fixed-width column (numbers, timestamps, decimals, fixed-size binary, booleans) decodes
  to its values times the widest a value decodes to, whatever its encoding: a run-length or
  dictionary-encoded column of 540 million equal integers is 2,520 bytes on disk and 4.3 GB
  decoded;
- a text or binary column stored plainly decodes to at most its uncompressed pages plus an
  offset per value; dictionary-encoded, it is read as its dictionary and its indices, and
  what they expand to is counted batch by batch before anything expands (a 1 MB string
  referenced a thousand times is a few kilobytes of indices);
- a value in a list adds, per level of list, an offset: every value a page holds counts, so a
  list column whose few rows hold hundreds of millions of elements is bounded by them;
- a page decompresses to the size its header states, one page at a time.

A ``DELTA_BYTE_ARRAY`` page is the one encoding whose values the headers do not bound (each
value repeats a prefix of the previous one, up to its page's size): such a column is read in
batches of as many rows as that many page-sized values fit a batch, and counted.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hotdata_retrieval.engines.local._parquet_pages import read_chunk_pages
from hotdata_retrieval.errors import LoadError

BATCH_BYTES = 64 << 20
"""The most one batch of a Parquet file should hold decoded: rows per batch are chosen from
the metadata's bound so that a batch holds about this."""

_MAX_BATCH_ROWS = 1 << 16

_PHYSICAL_WIDTHS = {
    "BOOLEAN": 1 / 8,
    "INT32": 4,
    "INT64": 8,
    "INT96": 12,
    "FLOAT": 4,
    "DOUBLE": 8,
}
"""Bytes one value of each fixed-width physical type takes (``FIXED_LEN_BYTE_ARRAY``: its
length)."""

_WIDEST_VALUE = 32
"""Bytes of the widest fixed-width Arrow type a Parquet value decodes to (``decimal256``), used
where the file's Arrow schema does not say."""

_OFFSET_BYTES = 8
"""Bytes of one offset of a list, text or binary value (``large_`` types: 8)."""


Refuse = Callable[[int, bool, str], LoadError]
"""Makes the error of a file past the limit: ``(bytes, estimated, detail)``."""


def read_parquet(path: Path, *, limit: int, max_value_bytes: int, refuse: Refuse) -> pa.Table:
    """``path`` read within ``limit`` bytes decoded (see the module doc).

    Args:
        path: the file.
        limit: the most the table may hold decoded, in bytes.
        max_value_bytes: the longest one text or binary value may be.
        refuse: makes the error of a file past ``limit``.

    Raises:
        DecodedSizeError: (from ``refuse``) the bound found before decoding, or the count
            while decoding, is past ``limit``.
        LoadError: a value longer than ``max_value_bytes``, or page headers that cannot be
            read or that contradict the metadata.
        pyarrow.ArrowInvalid: the file is not Parquet.
    """
    file = pq.ParquetFile(path)
    metadata = file.metadata
    columns = [file.schema.column(index) for index in range(metadata.num_columns)]
    leaves, owners = _leaf_types(file.schema_arrow)
    if len(leaves) != len(columns):
        leaves, owners = [None] * len(columns), [None] * len(columns)
    delta_columns: set[str] = set()
    delta_fields: set[int | None] = set()
    leaf_bounds = [0] * len(columns)
    bounds: list[tuple[int, int]] = []  # per row group: (decoded bound, rows per batch)
    largest: tuple[int, str] = (0, "")
    total = decompressed = 0
    with path.open("rb") as handle:
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            rows = max(0, row_group.num_rows)
            group_bound = 0
            per_row = 0.0
            for index, column in enumerate(columns):
                chunk = row_group.column(index)
                start = chunk.data_page_offset
                if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                    start = min(start, chunk.dictionary_page_offset)
                where = f"{path}: column '{column.path}' of row group {group}"
                pages = read_chunk_pages(
                    handle,
                    start=start,
                    length=max(0, chunk.total_compressed_size),
                    declared_values=max(0, chunk.num_values),
                    where=where,
                )
                slots = max(pages.values, rows)
                levels = _levels_bound(column, rows, slots)
                width = _value_width(column, leaves[index])
                if width is None:  # text or binary: its bytes, and an offset per value
                    bound = pages.uncompressed_bytes + slots * _OFFSET_BYTES + levels
                else:
                    bound = int(slots * width) + levels
                if pages.delta_byte_array:
                    delta_columns.add(column.path)
                    delta_fields.add(owners[index])
                    values_per_row = -(-slots // max(rows, 1))
                    per_row = max(per_row, pages.largest_page * values_per_row)
                decompressed += pages.uncompressed_bytes
                group_bound += bound
                leaf_bounds[index] += bound
                largest = max(largest, (bound, column.path))
            total += group_bound
            per_row = max(per_row, group_bound / max(rows, 1))
            batch_rows = int(min(_MAX_BATCH_ROWS, max(1, BATCH_BYTES // max(per_row, 1))))
            bounds.append((group_bound, batch_rows))
    on_disk = path.stat().st_size
    if total > limit:
        raise refuse(
            total,
            True,
            f"bounded from its metadata and page headers before decoding; column "
            f"'{largest[1]}' alone up to {largest[0]:,}; {on_disk:,} bytes on disk",
        )
    if decompressed > limit:
        raise refuse(
            decompressed,
            True,
            f"its pages decompress to that, as their headers state; {on_disk:,} bytes on disk",
        )
    encoded = [
        column.path
        for column, leaf in zip(columns, leaves)
        if column.physical_type == "BYTE_ARRAY"
        and _is_text_or_binary(leaf)
        and column.path not in delta_columns
    ]
    reopened = pq.ParquetFile(path, read_dictionary=encoded)
    sizes = functools.partial(
        _counted_batches,
        reopened,
        bounds,
        path=path,
        limit=limit,
        max_value_bytes=max_value_bytes,
        refuse=refuse,
        on_disk=on_disk,
    )
    if delta_fields:
        # What prefix-encoded text expands to is counted first, its batches let go, so that
        # a file past the limit is refused having held one batch.
        if None in delta_fields:
            selected = None
            unbounded = 0
        else:
            owned = sorted(owner for owner in delta_fields if owner is not None)
            selected = [file.schema_arrow.field(owner).name for owner in owned]
            unbounded = sum(
                bound for bound, owner in zip(leaf_bounds, owners) if owner in delta_fields
            )
        for _ in sizes(columns=selected, start=total - unbounded):
            pass
    # Each batch expands as soon as it is counted: a batch's dictionary is its own copy, and
    # holding them all (not what they expand to) would not be bounded by the count.
    batches = [_decoded_batch(batch) for batch in sizes(columns=None, start=0)]
    if not batches:
        return file.schema_arrow.empty_table()
    return pa.Table.from_batches(batches)


def _decoded_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with every dictionary, at any depth, expanded."""
    decoded = pa.schema([field.with_type(_decoded(field.type)) for field in batch.schema])
    return batch if decoded.equals(batch.schema) else batch.cast(decoded)


def _counted_batches(
    file: pq.ParquetFile,
    bounds: list[tuple[int, int]],
    *,
    columns: list[str] | None,
    start: int,
    path: Path,
    limit: int,
    max_value_bytes: int,
    refuse: Refuse,
    on_disk: int,
) -> Iterator[pa.RecordBatch]:
    """The batches of ``file``'s ``columns`` (``None``: all), row group by row group in the
    rows per batch ``bounds`` chose, each counted as it would be decoded — dictionaries as
    what they expand to — on top of ``start`` bytes before it is yielded.

    Raises:
        DecodedSizeError: (from ``refuse``) the count passes ``limit``.
        LoadError: a value longer than ``max_value_bytes``.
    """
    counted = start
    for group, (_, batch_rows) in enumerate(bounds):
        for batch in file.iter_batches(batch_size=batch_rows, row_groups=[group], columns=columns):
            for name, column_data in zip(batch.schema.names, batch.columns):
                size, longest = _expanded_size(column_data)
                if longest > max_value_bytes:
                    raise LoadError(
                        f"{path}: column '{name}' holds a value of {longest:,} bytes; one "
                        f"value holds at most {max_value_bytes:,} (split the document)"
                    )
                counted += size
            if counted > limit:
                raise refuse(
                    counted,
                    False,
                    f"counted while decoding, by row group {group}: its dictionary-encoded "
                    f"or prefix-encoded values expand; {on_disk:,} bytes on disk",
                )
            yield batch


def _levels_bound(column: pq.ColumnSchema, rows: int, slots: int) -> int:
    """Bytes the lists and validity bitmaps above one leaf column's values hold at most, for
    ``rows`` rows and ``slots`` values (levels, as its pages count them): a bit per value
    and level of definition, and an offset per list, where the outermost list has one per
    row and a list nested in another at most one per value."""
    depth = int(column.max_repetition_level)
    offsets = (rows + 1) + (depth - 1) * (slots + 1) if depth else 0
    bits = slots * (int(column.max_definition_level) + 1)
    return _OFFSET_BYTES * offsets + -(-bits // 8)


def _leaf_types(schema: pa.Schema) -> tuple[list[pa.DataType | None], list[int | None]]:
    """The Arrow types of ``schema``'s leaves, in the order of the Parquet file's leaf
    columns (depth first: a list's values, a struct's fields, a map's keys then items), and
    the position of the top-level field each belongs to."""
    leaves: list[pa.DataType | None] = []
    owners: list[int | None] = []

    def visit(kind: pa.DataType, owner: int) -> None:
        if pa.types.is_dictionary(kind):
            visit(kind.value_type, owner)
        elif pa.types.is_map(kind):
            visit(kind.key_type, owner)
            visit(kind.item_type, owner)
        elif (
            pa.types.is_list(kind)
            or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind)
            or getattr(pa.types, "is_list_view", lambda _: False)(kind)
            or getattr(pa.types, "is_large_list_view", lambda _: False)(kind)
        ):
            visit(kind.value_type, owner)
        elif pa.types.is_struct(kind):
            for position in range(kind.num_fields):
                visit(kind.field(position).type, owner)
        elif isinstance(kind, pa.ExtensionType):
            visit(kind.storage_type, owner)
        else:
            leaves.append(kind)
            owners.append(owner)

    for position, field in enumerate(schema):
        visit(field.type, position)
    return leaves, owners


def _value_width(column: pq.ColumnSchema, leaf: pa.DataType | None) -> float | None:
    """Bytes one value of ``column`` decodes to at most (``None``: text or binary, whose
    values vary): the wider of its physical type and the Arrow type it is read as."""
    if leaf is not None and _is_text_or_binary(leaf):
        return None
    arrow_width: float | None = None
    if leaf is not None:
        try:
            arrow_width = leaf.bit_width / 8
        except ValueError:
            arrow_width = None
    physical = column.physical_type
    if physical == "BYTE_ARRAY":
        return arrow_width  # decimal stored as bytes: 16 or 32 a value
    if physical == "FIXED_LEN_BYTE_ARRAY":
        stored: float = column.length
    else:
        stored = _PHYSICAL_WIDTHS.get(physical, _WIDEST_VALUE)
    return max(stored, _WIDEST_VALUE if arrow_width is None else arrow_width)


def _is_text_or_binary(kind: pa.DataType | None) -> bool:
    if kind is None:
        return True  # unknown: a byte array counted as text is bounded by its bytes
    return (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or getattr(pa.types, "is_string_view", lambda _: False)(kind)
        or getattr(pa.types, "is_binary_view", lambda _: False)(kind)
    )


def _decoded(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every dictionary type, at any depth, replaced by its value type."""
    if pa.types.is_dictionary(kind):
        return _decoded(kind.value_type)
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_decoded(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_decoded(kind.value_type)))
    if pa.types.is_fixed_size_list(kind):
        field = kind.value_field.with_type(_decoded(kind.value_type))
        return pa.list_(field, kind.list_size)
    if pa.types.is_struct(kind):
        return pa.struct(
            [kind.field(i).with_type(_decoded(kind.field(i).type)) for i in range(kind.num_fields)]
        )
    if pa.types.is_map(kind):
        return pa.map_(
            kind.key_field.with_type(_decoded(kind.key_type)),
            kind.item_field.with_type(_decoded(kind.item_type)),
        )
    return kind


def _expanded_size(column: pa.Array) -> tuple[int, int]:
    """``(bytes, longest value's bytes)`` of ``column`` once every dictionary in it is
    expanded, at any depth (the longest value counts text and binary values; 0 for none)."""
    kind = column.type
    if pa.types.is_dictionary(kind):
        lengths = pc.fill_null(pc.binary_length(column.dictionary), 0)
        named = pc.take(lengths, pc.drop_null(column.indices))
        total = int(pc.sum(named).as_py() or 0) + _OFFSET_BYTES * len(column)
        return total, int(pc.max(named).as_py() or 0) if len(named) else 0
    if (
        pa.types.is_list(kind)
        or pa.types.is_large_list(kind)
        or pa.types.is_fixed_size_list(kind)
        or pa.types.is_map(kind)
    ):
        size, longest = _expanded_size(column.flatten())
        return size + 8 * (len(column) + 1), longest
    if pa.types.is_struct(kind):
        sizes = [_expanded_size(child) for child in column.flatten()]
        return sum(size for size, _ in sizes), max((longest for _, longest in sizes), default=0)
    if _is_text_or_binary(kind):
        lengths = pc.fill_null(pc.binary_length(column), 0)
        return int(column.nbytes), int(pc.max(lengths).as_py() or 0) if len(column) else 0
    return int(column.nbytes), 0
