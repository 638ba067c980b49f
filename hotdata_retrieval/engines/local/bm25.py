"""BM25 over one text column of one table, backed by tantivy.

The index stores each row's position (its rowid) and the column's text, analysed by the
library's one analysis (:mod:`hotdata_retrieval.analysis`: NFKC and case folding, then
tantivy's ``simple`` tokenizer, lower-casing, English stop words and the English stemmer).
Query text goes through the same analysis and becomes a disjunction of term queries, so user
text is never parsed as tantivy query syntax (``crash: "x`` is just words). tantivy scores
with BM25 (k1 = 1.2, b = 0.75), the library's documented formula
(:func:`hotdata_retrieval.analysis.bm25_score`) but for two things of tantivy's: it stores
each row's number of terms in one byte (:func:`stored_length`: exact to 40, then at most 1/8
below the length), and it computes in float32. So a local score is at least the exact
formula's and less than 9/8 of it, up to float32 rounding of the sum over the query's terms
(relative ``n · 2**-24`` at most for ``n`` terms; it shows on queries of thousands of words)
(each term's ``tf / (tf + k1 · (1 - b + b · dl /
avgdl))`` grows as ``dl`` shrinks, by less than ``dl`` over its stored value), within float32
rounding of the formula over the stored lengths, and the local ranking is that formula's
ranking, ties of float32 values broken by key (``tests/test_local_length_quantisation.py``;
``benchmarks/bench_store_parity.py`` measures it on SciFact).

The Hotdata engine's own analyzer is not public (engine contract §0); this one is documented
here so that local scores are reproducible.
"""

from __future__ import annotations

import gc
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import tantivy

from hotdata_retrieval.analysis import TEXT_ANALYSIS as TEXT_ANALYSIS  # the indexes' analysis
from hotdata_retrieval.analysis import normalize_text, text_analyzer

ANALYZER_NAME = "hdq_english"
_ROWID = "rowid"
_TEXT = "text"
_WRITER_HEAP_BYTES = 128 * 1024 * 1024

PUSHED_RUNS = 32
"""A filter whose kept rows form at most this many runs of consecutive rowids (a range of an
append-ordered column: a date range, a tenant loaded together) is handed to tantivy as ranges
of the ``rowid`` fast field (:meth:`Bm25Index._rowid_ranges`), so the index scores only kept
rows."""

PUSHED_SHARE = 8
"""... and keeps at most 1 row in this many. Measured on the engine benchmark's 100,000-row
table (limit 10, CPU time, ratios to the unfiltered search): a range keeping 1% cost 0.73x
handed over against 3.3x masked over the prefix, 10% 1.10x against 1.26x, 30% 1.52x against
1.14x (the ranges' fast-field reads outgrow the prefix)."""


FILTER_SHARE = 8
"""A filter the index holds the columns of (:func:`filter_field`) is evaluated inside tantivy's
query when it keeps at most 1 row in this many: a required clause scored 0 beside the text's
terms. Measured on the filtered benchmark's 100,000-row table (raw tantivy, CPU time, limit
21, ratios to the unfiltered search): a 1% range of a scattered column cost 0.90x, 10% 1.56x
(equality on a 1% or 10% value 0.57x and about 0.9x: its postings drive the intersection),
where the prefix of the index's own order cost 3.0x and 1.3x plus reading and masking its
hits in Python; at 50% and 90% the clause cost 3.2x (it defeats block-max WAND's pruning of
the text's disjunction) against 1.1x for the prefix. A wider filter is tested on the prefix's
hits alone (:class:`HitTest`), no mask over every row computed."""


TIE_MARGIN = 16
"""How far past the k-th hit the first search looks, at least (and at most k, at least a
quarter of k): rows tied on score at the k-th place are cut by key, so every one of them must
be among the hits, and ties are common (equal term counts in equal lengths). Measured on the
engine benchmark's 100,000-row table, 200 queries: the k-th hit's ties reach past it by at
most 15 rows at k = 10 (none in 90% of queries), 16 at k = 100, 176 at k = 1000 (median 10).
A search that falls short is searched again deeper (the loop below), so the margin changes
the cost, never the rows; at k = 1000 a first search of 1,251 hits instead of 2,001 (2k + 1)
saves about a third of the search."""


def filter_field(column: str) -> str:
    """The tantivy field that holds integer column ``column``'s values for filters: its name
    in UTF-8 hex behind a prefix, so every column name is a valid field name and no two
    collide.

    >>> filter_field("bucket")
    'column_6275636b6574'
    """
    return "column_" + column.encode("utf-8").hex()


def filter_columns(data: pa.Table) -> list[str]:
    """The columns of ``data`` a BM25 index holds for filters: integer columns (8 to 64
    bits, signed or not), each indexed (equality and ``IN`` read its postings) and a fast
    field (ranges read its column)."""
    return [field.name for field in data.schema if pa.types.is_integer(field.type)]


COARSE_BUCKETS_BITS = 8
"""Each integer column is also indexed coarsely, its values shifted right so the column's span
falls in about 2**8 = 256 buckets (:func:`coarse_shift`): a range of the column covering a
few buckets is then the union of their postings (a superset, short and known in length, that
drives the intersection with the text's terms) intersected with the exact range of the fast
field. Measured on raw tantivy at 100,000 rows (CPU, limit 21, ratio to the unfiltered
search): a scattered range keeping 1% cost 0.42x so (4 buckets) against 0.92x as the fast
field's range alone; at 10% (40 buckets) the union cost more than the range (1.8x against
1.5x), hence :data:`~hotdata_retrieval.engines.local._text_filters.FEW_TERMS`."""


def coarse_shift(values: pa.ChunkedArray | pa.Array) -> int:
    """How far an integer column's values are shifted right in its coarse field: its span
    (largest minus smallest value) in about 2 ** :data:`COARSE_BUCKETS_BITS` buckets; 0 (no
    coarse field: its values are few enough) for a span below that or a column of NULLs.

    >>> coarse_shift(pa.array([0, 99_999])), coarse_shift(pa.array([3, 7, None]))
    (9, 0)
    """
    bounds = pc.min_max(values)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or high is None:
        return 0
    return max(0, (int(high) - int(low)).bit_length() - COARSE_BUCKETS_BITS)


def coarse_field(column: str, shift: int) -> str:
    """The field holding integer column ``column``'s values shifted right by ``shift`` (the
    shift is part of the name, so a search reads it from the index).

    >>> coarse_field("bucket", 9)
    'coarse9_6275636b6574'
    """
    return f"coarse{shift}_" + column.encode("utf-8").hex()


def _unsigned64(data_type: pa.DataType) -> bool:
    """Whether a column of ``data_type`` is held as a u64 field (UInt64, whose values
    exceed i64's); every other integer type fits an i64 field."""
    return bool(pa.types.is_uint64(data_type))


def stored_length(length: int) -> int:
    """A row's number of terms as tantivy stores it in one byte (its ``fieldnorm``): the
    largest value of its 256-entry table not above ``length``. Byte ``n`` below 24 is ``n``;
    byte ``24 + 8 · e + m`` (``m`` 0 to 7) is ``24 + m`` for ``e = 0`` and ``24 + (8 + m) ·
    2^(e - 1)`` above: exact to 40, then steps of 2, 4, 8, ..., so a length is less than 9/8
    of its stored value (tantivy, ``src/fieldnorm/code.rs``: ``FIELD_NORMS_TABLE``,
    ``fieldnorm_to_id``, and the test ``test_fieldnorm_byte`` deriving the table from this
    rule; "the exact same scheme as Lucene", ``src/fieldnorm/mod.rs``).

    Raises:
        ValueError: ``length`` is negative.

    >>> [stored_length(n) for n in (39, 40, 41, 42, 59, 60, 100, 1000)]
    [39, 40, 40, 42, 56, 60, 96, 984]
    """
    if length < 0:
        raise ValueError(f"a number of terms is not negative: {length}")
    best = 0
    for byte in range(256):
        exponent, mantissa = divmod(byte - 24, 8) if byte >= 24 else (0, byte - 24)
        value = 24 + (mantissa if exponent == 0 else (8 + mantissa) << (exponent - 1))
        if value > length:
            break
        best = value
    return best


def _schema(
    filters: pa.Schema | None = None, shifts: dict[str, int] | None = None
) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field(_ROWID, stored=True, fast=True, indexed=False)
    builder.add_text_field(_TEXT, stored=False, tokenizer_name=ANALYZER_NAME)
    for field in filters or ():
        shift = (shifts or {}).get(field.name, 0)
        if _unsigned64(field.type):
            builder.add_unsigned_field(filter_field(field.name), fast=True, indexed=True)
            if shift:
                builder.add_unsigned_field(coarse_field(field.name, shift), indexed=True)
        else:
            builder.add_integer_field(filter_field(field.name), fast=True, indexed=True)
            if shift:
                builder.add_integer_field(coarse_field(field.name, shift), indexed=True)
    return builder.build()


def _writer_threads() -> int:
    """Indexing threads: one per core, at most 8, so each keeps 16 MiB or more of the
    writer's 128 MiB heap (tantivy's ``Index::writer_with_num_threads`` needs 15 MB a
    thread). Scores do not depend on it: BM25's statistics are the searcher's, across
    segments."""
    return max(1, min(8, os.cpu_count() or 1))


def build_bm25_index(
    directory: Path, texts: Iterable[str | None], filters: pa.Table | None = None
) -> None:
    """Write a fresh index of ``texts`` (row ``i`` is rowid ``i``; ``None`` rows are skipped),
    with the values of ``filters``' columns (integer columns, one row per text; see
    :func:`filter_columns`) for filters evaluated in the index, a NULL as no value."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    shifts = (
        {}
        if filters is None
        else {name: coarse_shift(filters.column(name)) for name in filters.column_names}
    )
    index = tantivy.Index(
        _schema(None if filters is None else filters.schema, shifts), path=str(directory)
    )
    index.register_tokenizer(ANALYZER_NAME, text_analyzer())
    writer = index.writer(heap_size=_WRITER_HEAP_BYTES, num_threads=_writer_threads())
    columns = (
        []
        if filters is None
        else [
            (
                filter_field(field.name),
                coarse_field(field.name, shifts[field.name]) if shifts[field.name] else None,
                shifts[field.name],
                filters.column(field.name).to_pylist(),
                _unsigned64(field.type),
            )
            for field in filters.schema
        ]
    )
    for rowid, text in enumerate(texts):
        if text is None:
            continue
        document = tantivy.Document()
        document.add_unsigned(_ROWID, rowid)
        document.add_text(_TEXT, normalize_text(text))
        for name, coarse, shift, values, unsigned in columns:
            value = values[rowid]
            if value is None:
                continue
            add = document.add_unsigned if unsigned else document.add_integer
            add(name, value)
            if coarse is not None:
                add(coarse, value >> shift)
        writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()


class _CollectorPaused:
    """Python's cyclic garbage collector off for the block (and back on after it, if it was
    on).

    tantivy hands each hit over as a ``(score, DocAddress)`` tuple: a filtered prefix of
    13,500 hits allocates some 27,000 tracked objects, which set off a collection every 700
    allocations (CPython's default first-generation threshold), each walking the young
    objects and, every so often, every object the process holds. None of them can form a
    cycle, so the collections find nothing: measured on 100,000 rows (a 1% filter, a
    fusion's depth 100), the search took 17.4 ms with the collector on and 7.5 ms with it
    off, in a process holding about 90,000 objects; the more objects an application holds,
    the larger the difference.

    A class, not a generator-based context manager: entering and leaving one of those cost
    a few microseconds, which a search of ten hits notices."""

    __slots__ = ("_enabled",)

    def __enter__(self) -> None:
        self._enabled = gc.isenabled()
        if self._enabled:
            gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._enabled:
            gc.enable()


class HitTest(NamedTuple):
    """A filter tested on a search's hits alone (:meth:`Bm25Index.search`'s ``test``): the
    prefix of the index's order a filter keeping many rows is read from is short, so testing
    those few hundred rows costs less than a mask over every row, and less than the filter
    as a required clause of tantivy's query, which defeats block-max WAND's pruning of the
    text's disjunction, when the filter keeps more than 1 row in :data:`FILTER_SHARE`.
    Measured through the engine on the filtered benchmark's 100,000-row table (CPU time,
    limit 10, ratios to the unfiltered search), a scattered range new in every call: 1.40x
    tested at 15% against 1.96x masked, 1.31x against 1.95x at 25%, 1.25x against 1.86x at
    50%; an ``IN`` list repeated (its mask remembered) 1.30x against 1.25x at 25%. At 10% and
    below the required clause cost less (a scattered range 1.42x against 1.46x tested at 10%,
    1.32x against 1.60x at 5%): the prefix there is 250 hits or more."""

    keeps: Callable[[np.ndarray], np.ndarray]
    """Rowids (int64) → whether the filter keeps each (a boolean array of their length)."""
    share: float
    """The estimated share of the rows the filter keeps (from a sample): it sizes the
    prefix, never decides which rows are kept."""


class Bm25Index:
    """A read-only BM25 index opened from ``directory``.

    tantivy takes a lock file in the index directory when it opens an index, which a read-only
    directory (a read-only mount, another user's database) refuses; the index is then opened
    from a private temporary copy, removed when this object is.
    """

    def __init__(self, directory: Path) -> None:
        try:
            self._index = tantivy.Index.open(str(directory))
        except ValueError as error:
            if "Lockfile" not in str(error):
                raise
            copy = Path(tempfile.mkdtemp(prefix="hdq-bm25-")) / "index"
            shutil.copytree(directory, copy)
            weakref.finalize(self, shutil.rmtree, copy.parent, True)
            self._index = tantivy.Index.open(str(copy))
        self._index.register_tokenizer(ANALYZER_NAME, text_analyzer())
        self._analyzer = text_analyzer()
        self._schema = self._index.schema
        self._searcher = self._index.searcher()
        self._fields: dict[str, bool] = {}
        self._coarse: dict[str, tuple[str, int] | None] = {}

    @property
    def schema(self) -> tantivy.Schema:
        """The index's tantivy schema (for queries built outside it)."""
        return self._schema

    def coarse(self, column: str) -> tuple[str, int] | None:
        """Integer column ``column``'s coarse field and its shift (:func:`coarse_shift`), or
        ``None`` when the index has none for it (found once per column)."""
        if column not in self._coarse:
            found = None
            for shift in range(1, 65):
                try:
                    tantivy.Query.term_query(self._schema, coarse_field(column, shift), 0)
                except ValueError:
                    continue
                found = (coarse_field(column, shift), shift)
                break
            self._coarse[column] = found
        return self._coarse[column]

    def holds(self, column: str) -> bool:
        """Whether the index holds integer column ``column``'s values for filters (an index
        written before it held them, or of a column that is no integer, does not)."""
        known = self._fields.get(column)
        if known is None:
            try:
                tantivy.Query.exists_query(filter_field(column))
                tantivy.Query.term_query(self._schema, filter_field(column), 0)
                known = True
            except ValueError:
                known = False
            self._fields[column] = known
        return known

    def terms(self, text: str) -> list[str]:
        """The analysed terms of ``text`` (empty for only punctuation or stop words)."""
        return list(self._analyzer.analyze(normalize_text(text)))

    def search(
        self,
        text: str,
        k: int,
        *,
        tie_order: np.ndarray | None = None,
        mask: np.ndarray | None = None,
        where: tantivy.Query | None = None,
        spread: bool = False,
        ranked: bool = False,
        test: HitTest | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top ``k`` rows for ``text`` among the rows ``mask`` keeps: ``(rowids, scores)``
        in rowid order, int64 and float32 arrays.

        Rowid order, not score order, as the engine returns them (engine contract §1.1):
        the caller must sort; with ``ranked``, in the order they were chosen by instead
        (score descending, then ``tie_order``), for a caller that would sort them so. A text
        with no terms matches nothing. ``k`` is capped at the number of rows, and rows tied
        on score at the k-th place are cut by ``tie_order``
        (rowid → position, lowest kept first; default the rowid), so the same search always
        returns the same rows and the k kept are the first k of (score descending, position).

        ``mask`` (a boolean array over rowids, default every row) is applied to a prefix of
        the index's own order (score descending): tantivy is asked for ``fetch`` hits, and
        every row scoring above the last of them is known, so once at least ``k`` kept rows
        score above it they hold the answer. ``fetch`` starts where the kept rows among it
        are expected to exceed ``k`` by three standard deviations (``k`` over the share of
        rows the mask keeps, plus a margin) and grows fourfold until that holds or the index
        is exhausted; a selective filter so costs a prefix of a few thousand hits, not every
        match. A mask keeping at most 1 row in :data:`PUSHED_SHARE` in at most
        :data:`PUSHED_RUNS` runs of consecutive rowids is instead part of tantivy's query
        (ranges of the ``rowid`` fast field, scored 0 so every score is the text's alone).

        ``where`` (a query over the index's filter fields, matching the rows a filter keeps:
        :func:`~hotdata_retrieval.engines.local._text_filters.filter_query`) is likewise a
        required clause scored 0, in place of ``mask``; with ``spread`` it is required of
        each term instead of their disjunction (a filter read from postings then drives each
        term's intersection: on the filtered benchmark's table a 1% equality filter cost
        0.47x the unfiltered search spread, 0.73x beside the disjunction; a range of a fast
        field, 1.25x against 1.15x). Each hit's score is the sum of its terms' scores in the
        same order either way.

        ``test`` (a filter tested on the hits alone, :class:`HitTest`) is read as ``mask``
        is, on the prefix's hits only, its share of the rows estimated: no mask over every
        row is computed. ``where`` takes precedence over ``test``, and ``test`` over
        ``mask``.
        """
        terms = self.terms(text)
        documents = self._searcher.num_docs
        limit = min(k, documents)
        if where is not None:
            mask, test = None, None
        if test is not None:
            mask = None
        if mask is not None:
            kept_rows = int(np.count_nonzero(mask))
            limit = min(limit, kept_rows)
        if not terms or limit <= 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        terms_clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, _TEXT, term))
            for term in terms
        ]
        query = tantivy.Query.boolean_query(terms_clauses)
        if mask is not None and kept_rows * PUSHED_SHARE <= mask.size:
            where = self._rowid_ranges(mask)
        if where is not None:
            # the kept rows are the query's: every hit is kept, scored by its text alone
            # (plus 0.0, which changes no float)
            required = tantivy.Query.const_score_query(where, 0.0)
            if spread:
                query = tantivy.Query.boolean_query(
                    [
                        (
                            tantivy.Occur.Should,
                            tantivy.Query.boolean_query(
                                [(tantivy.Occur.Must, clause), (tantivy.Occur.Must, required)]
                            ),
                        )
                        for _, clause in terms_clauses
                    ]
                )
            else:
                query = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, query), (tantivy.Occur.Must, required)]
                )
            mask = None
        fetch = limit + 1 + min(limit, max(TIE_MARGIN, limit // 4))
        share = None
        if mask is not None:
            share = kept_rows / max(1, mask.size)
        elif test is not None:
            share = test.share
        if share is not None:
            # Under a filter independent of the score, the kept rows among the first n hits
            # are about binomial (mean n·share, deviation about its square root): n for a
            # mean three deviations above k rarely needs a second search.
            wanted = limit + 3 * math.sqrt(limit) + 5
            fetch = max(fetch, math.ceil(wanted / max(share, 1 / max(1, documents))) + 1)
        while True:
            fetch = min(fetch, documents)
            with _CollectorPaused():
                hits = self._searcher.search(query, limit=fetch, count=False).hits
                # Unzipped in C (zip(*...)), not hit by hit in Python.
                found_scores, addresses = zip(*hits) if hits else ((), ())
                scores = np.array(found_scores, dtype=np.float32)
                rowids = self._rowids(list(addresses))
                found = len(hits)
                del hits, found_scores, addresses
            kept = None
            if mask is not None:
                kept = mask[rowids]
            elif test is not None:
                kept = test.keeps(rowids)
            if found < fetch or fetch >= documents:
                break  # every match is here
            # Every row scoring above the last hit is here; the last hit's ties may not be.
            known = scores > scores[-1]
            if kept is not None:
                known &= kept
            if int(np.count_nonzero(known)) >= limit:
                kept = known
                break
            fetch *= 4
        if kept is not None:
            rowids, scores = rowids[kept], scores[kept]
        ties = rowids if tie_order is None else tie_order[rowids]
        chosen = np.lexsort((ties, -scores.astype(np.float64)))[:limit]
        rowids, scores = rowids[chosen], scores[chosen]
        if ranked:
            return rowids, scores
        order = np.argsort(rowids, kind="stable")
        return rowids[order], scores[order]

    def _rowid_ranges(self, mask: np.ndarray) -> tantivy.Query | None:
        """The rows ``mask`` keeps as a query of ``rowid`` ranges, ``None`` when they form
        more than :data:`PUSHED_RUNS` runs of consecutive rowids.

        The runs are counted before they are located: a scattered filter's mask has
        thousands of edges, and listing them (``flatnonzero`` of the mask's differences) cost
        0.6 ms at 100,000 rows, a third of a filtered search, where counting them costs a
        twentieth of that."""
        if mask.size and (
            int(np.count_nonzero(mask[1:] != mask[:-1])) + int(mask[0]) + int(mask[-1])
            > 2 * PUSHED_RUNS
        ):
            return None
        edges = np.flatnonzero(np.diff(mask.view(np.int8), prepend=0, append=0))
        ranges = [
            tantivy.Query.range_query(
                self._schema, _ROWID, tantivy.FieldType.Unsigned, int(start), int(stop) - 1
            )
            for start, stop in zip(edges[0::2], edges[1::2])
        ]
        if len(ranges) == 1:
            return ranges[0]
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, query) for query in ranges])

    def _rowids(self, addresses: list[tantivy.DocAddress]) -> np.ndarray:
        """The rowids of the documents at ``addresses``, read from the fast field in one
        batch (a stored document per hit only for a segment that lacks the fast field)."""
        values = self._searcher.fast_field_values(_ROWID, addresses) if addresses else []
        if None in values:
            values = [
                int(self._searcher.doc(address)[_ROWID][0]) if value is None else value
                for value, address in zip(values, addresses)
            ]
        return np.array(values, dtype=np.int64)
